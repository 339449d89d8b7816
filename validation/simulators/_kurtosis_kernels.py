"""Numba kernel of the Fig. 1 forward pass (seed 002): fused ReLU layers + running variance sums.

The hidden layers of the Fig. 1 networks are 10 x 10: as BLAS calls they are memory-bound (each
``W @ relu(y)`` reads and writes the whole ``(width, n)`` signal for 100 multiply-adds per column).
This kernel keeps a block of :data:`BLOCK` inputs of one network in local memory through all layers
and accumulates the per-layer sums ``sum y`` and ``sum y^2`` in float64, so the signal never goes
back to main memory. Networks run in parallel (``prange``); randomness stays outside (weights are
drawn by the caller). Compiled on first use and cached (``cache=True``).
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["BLOCK", "fused_relu_sums"]

#: Inputs processed together (the vectorised inner loop).
BLOCK = 32


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
                t1 = 0.0
                t2 = 0.0
                for k in range(kk):
                    t1 += a1[k]
                    t2 += a2[k]
                s1[b, l] += t1
                s2[b, l] += t2


def fused_relu_sums(y1: np.ndarray, weights: np.ndarray, identity: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Per-layer sums of ``y^(l)`` and ``y^(l)^2`` of ReLU networks from their first-layer outputs.

    Parameters
    ----------
    y1 : ndarray, shape (networks, width, n), float64
        First-layer outputs ``y^(1)``.
    weights : ndarray, shape (networks, depth - 1, width, width), float64
        Hidden weights ``W^(2) .. W^(depth)`` (ignored when ``identity``).
    identity : bool
        Every hidden layer is the identity (ZerO / ZerO*).

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
    _fused(y1, weights, bool(identity), s1, s2)
    return s1, s2
