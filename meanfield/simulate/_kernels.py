"""Numba kernel of the Fig. 1 forward pass (Grzejdziak 2023): fused ReLU layers + running variance sums.

The hidden layers of the Fig. 1 networks are 10 x 10: as BLAS calls they are memory-bound (each
``W @ relu(y)`` reads and writes the whole ``(width, n)`` signal for 100 multiply-adds per column).
This kernel keeps a block of :data:`BLOCK` inputs of one network in local memory through all layers
and accumulates the per-layer sums ``sum y`` and ``sum y^2`` in float64, so the signal never goes
back to main memory. Networks run in parallel (``prange``); randomness stays outside (weights are
drawn by the caller). Compiled on first use and cached (``cache=True``).

Two kernels:

* :func:`_fused_w10`, the Fig. 1 width (:data:`FAST_WIDTH` = 10, hidden layers only): the width is
  a compile-time constant, so the loop over the 10 inputs of a unit is unrolled, the row of 10
  weights is held in registers, and the loop over the :data:`FAST_BLOCK` data points (contiguous)
  is the vectorised one: 10 vector loads, 10 multiply-adds and one store per unit and SIMD lane
  group, instead of a load and a store of the output per multiply-add. The ReLU is applied when
  the output is stored (once per entry), the moment sums are taken on the fly. Measured 22.8
  against 8.9 GFLOP per CPU second (2.6x; 51 % of the float64 matmul's rate in the same run; the
  whole paper-size slice 2.1x: ``benchmarks/bench_fig1_slice.py``); the same
  kernel with the width a runtime value (or a ``numba.literally`` argument) does not unroll and
  runs at 0.5x of the generic kernel.
* :func:`_fused`, any width and the identity (ZerO) layers: the generic kernel, also
  selectable as ``engine="numba_generic"`` of ``empirical_variances`` (the reference the
  benchmark compares against).

``fastmath={"contract"}`` on :func:`_fused_w10` only lets LLVM fuse ``a * b + c`` into one FMA
instruction (one rounding instead of two): each multiply-add changes by at most half an ulp, no
reassociation, no assumption about NaN / inf. The sums over data points are also grouped by
blocks of :data:`FAST_BLOCK` instead of :data:`BLOCK`. Both change the recorded sums only at
float64 rounding (measured <= 1e-15 relative; ``tests/theory/test_kurtosis.py`` pins 1e-12 against the
generic kernel and the NumPy engine).
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["BLOCK", "FAST_BLOCK", "FAST_WIDTH", "fused_relu_sums"]

#: Inputs processed together (the vectorised inner loop).
BLOCK = 32
#: The width with a specialised kernel (the Fig. 1 networks of Grzejdziak 2023).
FAST_WIDTH = 10
#: Inputs processed together by the width-10 kernel (two (10, 128) float64 buffers: 20 KB, in L1).
FAST_BLOCK = 128


@numba.njit(cache=True)
def _add_lane_sums(a1, a2, kk, s1, s2, b, l):  # pragma: no cover - compiled
    """Add the per-lane partial sums ``a1[:kk]``, ``a2[:kk]`` (summed in lane order) to ``s1[b, l]``, ``s2[b, l]``."""
    t1 = 0.0
    t2 = 0.0
    for k in range(kk):
        t1 += a1[k]
        t2 += a2[k]
    s1[b, l] += t1
    s2[b, l] += t2


@numba.njit(cache=True, parallel=True)
def _fused(y1, weights, identity, s1, s2):  # pragma: no cover - compiled
    n_net, width, n = y1.shape
    depth = s1.shape[1]
    for b in numba.prange(n_net):
        cur = np.empty((width, BLOCK))
        nxt = np.empty((width, BLOCK))
        a1 = np.empty(BLOCK)  # per-lane partial sums: the k loops vectorise, no serial reduction
        a2 = np.empty(BLOCK)
        for k0 in range(0, n, BLOCK):
            kk = min(BLOCK, n - k0)
            for i in range(width):
                for k in range(kk):
                    cur[i, k] = y1[b, i, k0 + k]
            for l in range(depth):
                if l > 0:
                    for i in range(width):
                        for k in range(kk):
                            cur[i, k] = max(cur[i, k], 0.0)
                    if not identity:
                        for i in range(width):
                            for k in range(kk):
                                nxt[i, k] = 0.0
                            for j in range(width):
                                wij = weights[b, l - 1, i, j]
                                for k in range(kk):
                                    nxt[i, k] += wij * cur[j, k]
                        cur, nxt = nxt, cur
                for k in range(kk):
                    a1[k] = 0.0
                    a2[k] = 0.0
                for i in range(width):
                    for k in range(kk):
                        v = cur[i, k]
                        a1[k] += v
                        a2[k] += v * v
                _add_lane_sums(a1, a2, kk, s1, s2, b, l)


# fastmath: "contract" only (FMA), see the module notes; the tests pin the result to 1e-12
@numba.njit(cache=True, parallel=True, fastmath={"contract"})
def _fused_w10(y1, weights, s1, s2):  # pragma: no cover - compiled
    n_net, _width, n = y1.shape
    depth = s1.shape[1]
    for b in numba.prange(n_net):
        cur = np.empty((FAST_WIDTH, FAST_BLOCK))  # relu(y^(l)) of a block of data points
        nxt = np.empty((FAST_WIDTH, FAST_BLOCK))
        a1 = np.empty(FAST_BLOCK)  # per-lane partial sums over the units
        a2 = np.empty(FAST_BLOCK)
        for k0 in range(0, n, FAST_BLOCK):
            kk = min(FAST_BLOCK, n - k0)
            for k in range(kk):
                a1[k] = 0.0
                a2[k] = 0.0
            for i in range(FAST_WIDTH):
                for k in range(kk):
                    v = y1[b, i, k0 + k]
                    a1[k] += v
                    a2[k] += v * v
                    cur[i, k] = max(v, 0.0)
            _add_lane_sums(a1, a2, kk, s1, s2, b, 0)
            for l in range(1, depth):
                for k in range(kk):
                    a1[k] = 0.0
                    a2[k] = 0.0
                for i in range(FAST_WIDTH):
                    w = weights[b, l - 1, i]
                    for k in range(kk):  # vectorised over data points
                        s = 0.0
                        for j in range(FAST_WIDTH):  # unrolled: FAST_WIDTH is a compile-time constant
                            s += w[j] * cur[j, k]
                        a1[k] += s
                        a2[k] += s * s
                        nxt[i, k] = max(s, 0.0)
                cur, nxt = nxt, cur
                _add_lane_sums(a1, a2, kk, s1, s2, b, l)


def fused_relu_sums(
    y1: np.ndarray, weights: np.ndarray, identity: bool = False, generic: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Per-layer sums of ``y^(l)`` and ``y^(l)^2`` of ReLU networks from their first-layer outputs.

    Parameters
    ----------
    y1 : ndarray, shape (networks, width, n), float64
        First-layer outputs ``y^(1)``.
    weights : ndarray, shape (networks, depth - 1, width, width), float64
        Hidden weights ``W^(2) .. W^(depth)`` (ignored when ``identity``).
    identity : bool
        Every hidden layer is the identity (ZerO / ZerO*): layers 3 .. depth repeat the sums of
        layer 2 (exactly: ``relu`` is idempotent), which the kernel computes once.
    generic : bool
        Run the generic kernel through every layer (the generic path, the benchmark's
        reference), whatever the width.

    Returns
    -------
    (s1, s2) : ndarrays, shape (networks, depth)
        ``sum`` and ``sum of squares`` of the entries of ``y^(1) .. y^(depth)``.
    """
    y1 = np.ascontiguousarray(y1, dtype=np.float64)
    weights = np.ascontiguousarray(weights, dtype=np.float64)
    depth = weights.shape[1] + 1
    s1 = np.zeros((y1.shape[0], depth))
    s2 = np.zeros((y1.shape[0], depth))
    if not identity and not generic and y1.shape[1] == FAST_WIDTH:
        _fused_w10(y1, weights, s1, s2)
    elif identity and not generic and depth > 2:
        # identity layers: y^(l) = relu(y^(l-1)) = relu(y^(1)) for every l >= 2 (relu is idempotent),
        # so the kernel's sums of layer 2 are, operation for operation, those of every later layer
        t1 = np.zeros((y1.shape[0], 2))
        t2 = np.zeros((y1.shape[0], 2))
        _fused(y1, np.ascontiguousarray(weights[:, :1]), True, t1, t2)
        s1[:] = t1[:, 1:2]
        s2[:] = t2[:, 1:2]
        s1[:, 0] = t1[:, 0]
        s2[:, 0] = t2[:, 0]
    else:
        _fused(y1, weights, bool(identity), s1, s2)
    return s1, s2
