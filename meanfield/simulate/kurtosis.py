"""Batched simulators for Grzejdziak 2023 (Grzejdziak et al. 2023): per-layer moments, non-zero outputs,
and the empirical output variance of many random networks on a data set (Fig. 1).

Every simulator runs a chunk of networks at once as stacked matrix products
(``xp.matmul`` on arrays of shape ``(networks, fan_out, fan_in)``): there is no Python loop over
networks, only over layers and chunks. NumPy by default; ``backend=`` runs :func:`layer_moments`,
:func:`nonzero_fraction` and :func:`empirical_variances` on CuPy, PyTorch or ``array_api_strict``
(:mod:`meanfield.backend`). On the NumPy backend the Fig. 1 simulator uses a fused Numba kernel
instead (same weights, agreement to 1e-12 tested); MetaInit (:func:`metainit_weights`) optimises on
the host with NumPy and hands its weights to the backend. The residual and convolutional moment
simulators of Sec. 6 are in :mod:`meanfield.simulate.kurtosis_residual`. Weights are drawn by
:func:`meanfield.init.dense_weights` and
:func:`meanfield.init.gsm` (the library's one sampler and looks-linear construction), the leaky
ReLU is :func:`meanfield.activations.get_activation` ``("leaky_relu", slope=a)`` evaluated on the
backend (:func:`~meanfield.simulate.activation_fn`).

Randomness: every simulator takes ``rng`` (None, an int, a SeedSequence or a NumPy Generator, the
rule of :mod:`meanfield.backend`); an int ``n`` draws the numbers of ``numpy.random.default_rng(n)``.
On CuPy the device Generator is seeded from a child spawned off the NumPy one.

Conventions (Grzejdziak 2023): ``y^(0) = x``, ``y^(l) = W^(l) phi_a(y^(l-1))``, i.i.d. weights with
``Var W = 2 / (fan_in (a^2 + 1))``. The Fig. 1 networks (:func:`empirical_variances`) apply their
first layer to the standardised data directly (``y^(1) = W^(1) x``, the extra input matrix of
Prop. 3.3) and ReLU layers after it. MetaInit networks (:func:`metainit_weights`) are built as
Grzejdziak's code builds them: He-normal start, a read-out layer, :func:`meanfield.init.metainit`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from meanfield import Result, parallel
from meanfield.activations import get_activation
from meanfield.backend import Backend, astype, concat, get_backend, spawn_sequences, to_numpy
from meanfield.checks import as_float_array, check_bool, check_int, check_rng, check_scalar
from meanfield.data import load_digits
from meanfield.init import WEIGHT_LAWS, dense_weights, gsm, he_sigma_w2, metainit, zero_weights

from ._common import LOG_MAX, LOG_TINY, activation_fn, check_elements, check_work, progress

__all__ = [
    "FIG1_CHUNK",
    "FIG1_DEPTH",
    "FIG1_FRACTION",
    "FIG1_INITS",
    "FIG1_METAINIT_BATCH",
    "FIG1_METAINIT_CHUNK",
    "FIG1_METAINIT_NETWORKS",
    "FIG1_STREAM",
    "FIG1_THRESHOLD",
    "INPUT_KINDS",
    "INPUT_MOMENTS",
    "KAPPA_MAX",
    "METAINIT_CHUNK",
    "RENORM_EVERY",
    "LayerMoments",
    "empirical_variances",
    "fig1_variances",
    "layer_moments",
    "metainit_weights",
    "nonzero_fraction",
]

#: Initialisers of the Fig. 1 experiment.
FIG1_INITS = ("he", "glorot", "orthogonal", "gsm", "zero", "zero_star", "metainit")
#: Classes of the MetaInit read-out (CIFAR-10 in Grzejdziak 2023, the digits here: 10 each).
FIG1_CLASSES = 10
#: Networks meta-initialised in one vectorised :func:`meanfield.init.metainit` call (memory ~5 MB
#: per network at depth 100; the per-network cost is flat beyond ~30).
METAINIT_CHUNK = 32


def _inputs(kind, shape, rng, xp):
    """He random input vectors (sign-flip invariant, unit variance) and their (kappa0, c0)."""
    if kind == "gaussian":  # kappa0 = 3, c0 = 0
        return rng.standard_normal(shape)
    if kind == "rademacher":  # kappa0 = 1, c0 = 0
        return 2.0 * astype(xp, rng.integers(0, 2, size=shape), xp.float64) - 1.0
    if kind == "mixture":  # x = sqrt(E) g, E ~ Exp(1) shared by the vector: kappa0 = 6, c0 = 1
        e = rng.exponential(1.0, size=shape[:-1] + (1,))
        return xp.sqrt(e) * rng.standard_normal(shape)
    raise ValueError(f"input must be gaussian, rademacher or mixture, got {kind!r}")


#: Input kinds of :func:`layer_moments` (and ``"shared_sign"`` for :func:`nonzero_fraction`).
INPUT_KINDS = ("gaussian", "rademacher", "mixture")


def _check_widths(widths):
    if isinstance(widths, (str, bytes)) or not hasattr(widths, "__len__") or len(widths) == 0:
        raise ValueError(f"widths must be a non-empty sequence of ints >= 1, got {widths!r}")
    return [check_int(w, "widths", 1) for w in widths]


def _check_signal(y, layer, xp, what):
    """ReLU signals must stay where their squares (fourth powers) are normal float64 numbers."""
    m = to_numpy(xp.max(xp.abs(y), axis=1))
    live = m > 0
    if not np.all(np.isfinite(m)) or np.any(m[live] > _Y_MAX) or np.any(m[live] < _Y_MIN):
        raise ValueError(
            f"{what}: a network's signal left [{_Y_MIN:g}, {_Y_MAX:g}] at layer {layer} (max |y| from "
            f"{m[live].min() if live.any() else 0.0:.3g} to {m.max():.3g}), where its fourth power would "
            "under- or overflow float64; use fewer layers (widths) or a slope farther from 0"
        )


#: Range of max |y| per network in which ``y^4`` sums are computed without under/overflow.
_Y_MAX = 1e70
_Y_MIN = 1e-70


#: (kappa0, c0) of the input kinds of :func:`layer_moments` (unit variance).
INPUT_MOMENTS = {"gaussian": (3.0, 0.0), "rademacher": (1.0, 0.0), "mixture": (6.0, 1.0)}


@dataclass(frozen=True)
class LayerMoments(Result):
    """Per-network moments of ``y^(l)``, shape ``(n_networks, d + 1)``.

    ``m4[k, l]`` is the mean of ``(y_i^(l))^4`` over units of network ``k`` (one input each);
    ``m22[k, l]`` the mean of ``(y_i^(l) y_j^(l))^2`` over ordered pairs ``i != j`` (NaN when the
    layer has one unit). Networks are independent, so means over ``k`` have ordinary standard errors.
    """

    m4: np.ndarray
    m22: np.ndarray


def layer_moments(
    widths: list[int] | tuple[int, ...],
    slope: float = 0.0,
    law: str = "gaussian",
    n_networks: int = 10_000,
    input_kind: str = "gaussian",
    *,
    backend: str | Backend = "numpy",
    rng: Any = None,
    chunk: int | None = None,
) -> LayerMoments:
    """Simulate ``n_networks`` networks with widths ``widths`` (``widths[l]`` = width of ``y^(l)``; the
    output has width ``widths[-1]``) on one independent He input each; return :class:`LayerMoments`
    of every layer (depth ``len(widths) - 1``).

    Parameters
    ----------
    widths : sequence of int
        Widths >= 1 of ``y^(0) .. y^(d)``.
    slope : float
        Leaky-ReLU negative slope ``a`` (finite); weights have ``Var W = 2 / (fan_in (1 + a^2))``.
    law : {"gaussian", "uniform", "rademacher", "orthogonal"}
    n_networks : int
        >= 1.
    input_kind : {"gaussian", "rademacher", "mixture"}
    backend : str or Backend
    rng : None, int, SeedSequence or numpy.random.Generator
        One stream for all chunks (:mod:`meanfield.backend`).
    chunk : int, optional
        Networks per batch (>= 1).

    Raises
    ------
    ValueError
        Arguments out of range; a signal whose fourth power would leave float64 (deep narrow nets).

    Notes
    -----
    Grzejdziak 2023, Prop. 4.3 (the moments whose recursion the kurtosis matrices A^(l) describe).

    Examples
    --------
    >>> m = layer_moments([4, 4, 4], slope=0.1, n_networks=3, rng=0)
    >>> m.m4.shape, bool(np.all(m.m4 > 0))
    ((3, 3), True)
    """
    b = get_backend(backend)
    xp = b.xp
    widths = _check_widths(widths)
    slope = check_scalar(slope, "slope")
    if abs(slope) > 1e100:
        raise ValueError(f"slope must satisfy |slope| <= 1e100, got {slope}")
    if not isinstance(law, str) or law not in WEIGHT_LAWS:
        raise ValueError(f"law must be one of {WEIGHT_LAWS}, got {law!r}")
    if not isinstance(input_kind, str) or input_kind not in INPUT_KINDS:
        raise ValueError(f"input_kind must be one of {INPUT_KINDS}, got {input_kind!r}")
    n_networks = check_int(n_networks, "n_networks", 1)
    rng = b.rng(rng)
    sw2 = he_sigma_w2(slope)
    depth = len(widths) - 1
    if chunk is None:
        chunk = max(1, min(n_networks, 4_000_000 // max(w * w for w in widths)))
    chunk = check_int(chunk, "chunk", 1)
    check_elements(min(chunk, n_networks) * max(w * w for w in widths), "one chunk's weights")
    check_elements(n_networks * (depth + 1), "the moments")
    check_work(n_networks * sum(a * b for a, b in zip(widths, widths[1:])), "layer_moments")
    # ReLU for slope 0 (exactly: maximum(y, 0), no negative zeros), else leaky ReLU
    phi = activation_fn(get_activation("leaky_relu", slope=slope) if slope else get_activation("relu"), b)[0]
    m4 = np.empty((n_networks, depth + 1))
    m22 = np.empty((n_networks, depth + 1))
    for start in range(0, n_networks, chunk):
        bsz = min(chunk, n_networks - start)
        y = _inputs(input_kind, (bsz, widths[0]), rng, xp)
        for l in range(depth + 1):
            y2 = y * y
            w = widths[l]
            s2 = xp.sum(y2, axis=1)
            s4 = xp.sum(y2 * y2, axis=1)
            m4[start : start + bsz, l] = to_numpy(s4 / w)
            m22[start : start + bsz, l] = to_numpy((s2 * s2 - s4) / (w * (w - 1))) if w > 1 else np.nan
            if l < depth:
                wts = dense_weights(widths[l + 1], w, sw2, law, rng, batch_shape=bsz, backend=b)
                y = xp.matmul(wts, phi(y)[..., None])[..., 0]
                _check_signal(y, l + 1, xp, "layer_moments")
    return LayerMoments(m4, m22)


def nonzero_fraction(
    widths: list[int] | tuple[int, ...],
    law: str = "gaussian",
    n_networks: int = 100_000,
    input_kind: str = "gaussian",
    *,
    output_width: int | None = None,
    backend: str | Backend = "numpy",
    rng: Any = None,
) -> np.ndarray:
    """Fraction of ReLU networks (one input each) whose ``y^(l)`` is not the zero vector, ``l = 0..d``.

    ``widths`` is read exactly as by :func:`meanfield.kurtosis.nonzero_probability`: ``widths[l]``
    is the width of ``y^(l)``, the input to the ReLU of layer ``l + 1``, for ``l = 0 .. d - 1``
    (``widths[0]`` is the input width), and the depth is ``d = len(widths)``; so
    ``nonzero_fraction(w, ...)`` estimates ``nonzero_probability(w)`` entry by entry. The output
    ``y^(d)`` has ``output_width`` entries (default ``widths[-1]``; its width does not change the
    law: ``y^(d) = 0`` exactly when ``relu(y^(d-1)) = 0``). ``law`` may also be ``"gsm"``
    (looks-linear Gaussian, even widths), which violates the assumptions of Prop. B.2.
    ``input_kind="shared_sign"`` draws ``x = s |g|`` with one random sign ``s`` for all entries.
    Each network's signal is rescaled to ``max |y| = 1`` after every layer (exact: ReLU networks
    without biases are positively homogeneous), so no depth underflows a live network to zero.
    ``rng`` follows the rule of :mod:`meanfield.backend`.

    Returns
    -------
    ndarray, shape (len(widths) + 1,)
        The fraction at each layer ``l = 0 .. d``.

    Raises
    ------
    ValueError
        Arguments out of range (``"gsm"`` needs even widths).

    Notes
    -----
    Grzejdziak 2023, Props. B.1-B.2.
    """
    b = get_backend(backend)
    xp = b.xp
    widths = _check_widths(widths)
    if output_width is None:
        output_width = widths[-1]
    widths = widths + [check_int(output_width, "output_width", 1)]
    laws = WEIGHT_LAWS + ("gsm",)
    if not isinstance(law, str) or law not in laws:
        raise ValueError(f"law must be one of {laws}, got {law!r}")
    if law == "gsm" and any(w % 2 for w in widths):
        raise ValueError(f"law='gsm' needs even widths, got {widths}")
    kinds = INPUT_KINDS + ("shared_sign",)
    if not isinstance(input_kind, str) or input_kind not in kinds:
        raise ValueError(f"input_kind must be one of {kinds}, got {input_kind!r}")
    n_networks = check_int(n_networks, "n_networks", 1)
    rng = b.rng(rng)
    depth = len(widths) - 1
    chunk = max(1, min(n_networks, 2_000_000 // max(w * w for w in widths)))
    check_elements(chunk * max(w * w for w in widths), "one chunk's weights")
    check_elements(n_networks, "n_networks (one network at a time)")
    check_work(n_networks * sum(a * b for a, b in zip(widths, widths[1:])), "nonzero_fraction")
    count = np.zeros(depth + 1)
    for start in range(0, n_networks, chunk):
        bsz = min(chunk, n_networks - start)
        if input_kind == "shared_sign":
            s = 2.0 * astype(xp, rng.integers(0, 2, size=(bsz, 1)), xp.float64) - 1.0
            y = s * xp.abs(rng.standard_normal((bsz, widths[0])))
        else:
            y = _inputs(input_kind, (bsz, widths[0]), rng, xp)
        for l in range(depth + 1):
            count[l] += float(to_numpy(xp.sum(astype(xp, xp.any(y != 0, axis=1), xp.float64))))
            if l < depth:
                n_out, n_in = widths[l + 1], widths[l]
                if law == "gsm":  # Var W0 = 2 / n_in
                    wts = gsm(n_out, n_in, 2.0, rng, batch_shape=bsz, backend=b)
                else:
                    wts = dense_weights(n_out, n_in, 2.0, law, rng, batch_shape=bsz, backend=b)
                y = xp.matmul(wts, xp.maximum(y, 0.0)[..., None])[..., 0]
                m = xp.max(xp.abs(y), axis=1, keepdims=True)
                y = y / xp.where(m > 0, m, 1.0)  # exact rescaling: relu(s y) = s relu(y)
    return count / n_networks


def _fig1_weights(init, l, n_out, n_in, bsz, rng, b):
    """Weights of layer ``l`` (1-based) of the Fig. 1 networks, shape (bsz, n_out, n_in) (or (1, ...)).

    Returns ``None`` for an identity layer (skipped: exact and free).
    """
    xp = b.xp
    first = l == 1
    if init == "he":
        return dense_weights(
            n_out, n_in, 1.0 if first else he_sigma_w2(0.0), "gaussian", rng, batch_shape=bsz, backend=b
        )
    if init == "glorot":
        return dense_weights(n_out, n_in, 2.0 * n_in / (n_in + n_out), "gaussian", rng, batch_shape=bsz, backend=b)
    if init == "orthogonal":
        return dense_weights(n_out, n_in, 1.0 if first else 2.0, "orthogonal", rng, batch_shape=bsz, backend=b)
    if init == "gsm":
        if first:  # [W0; -W0] x = [h, -h]: the looks-linear form from the raw input (rows only, not the 2 x 2 block)
            w0 = dense_weights(n_out // 2, n_in, 1.0, "gaussian", rng, batch_shape=bsz, backend=b)
            return concat(xp, [w0, -w0], axis=1)
        return gsm(n_out, n_in, 2.0, rng, batch_shape=bsz, backend=b)  # Var W0 = 2 / n_in
    if init == "zero_star" and first:
        return dense_weights(n_out, n_in, 1.0, "gaussian", rng, batch_shape=bsz, backend=b)
    if init in ("zero", "zero_star"):  # ZerO's identity (None) or its deterministic rectangular matrix
        return None if n_out == n_in else b.asarray(zero_weights(n_out, n_in))[None, ...]
    raise ValueError(f"init must be one of {FIG1_INITS}, got {init!r}")


def _streams_or_rng(rng):
    """A sequence of rngs as distinct NumPy Generators (one stream per network), else one Generator."""
    if not isinstance(rng, (list, tuple)):
        return check_rng(rng)
    gens = [check_rng(r) for r in rng]
    if len({id(g) for g in gens}) != len(gens):
        raise ValueError("rng must not repeat a Generator (each network needs its own stream)")
    return gens


def metainit_weights(
    n_networks: int, depth: int, width: int, w0: int, rng: Any = None, steps: int = 500
) -> list[np.ndarray]:
    """MetaInit weights of ``n_networks`` Fig. 1 networks, shape (n_networks, n_out, n_in) per layer.

    As in Grzejdziak's code (its ``metainit_cifar10_from_he_normal``): He-normal start
    (``Var W = 2 / fan_in`` in every layer, the first included), a ``width -> FIG1_CLASSES``
    read-out, zero biases counted in the gradient quotient, and the MetaInit defaults of
    Dauphin & Schoenholz (500 steps, lr 0.1, momentum 0.9, batch 32, cross-entropy on random
    labels). Returns the ``depth`` matrices of ``y^(1) .. y^(depth)`` (the read-out is dropped).

    ``rng``: None, an int, a SeedSequence or a NumPy Generator (used for the start and by MetaInit),
    or a sequence of ``n_networks`` of them (distinct Generators): network ``k`` then draws its
    start and its MetaInit batches from ``rng[k]`` alone, so it gets exactly the weights of
    ``metainit_weights(1, ..., rng[k])`` while all networks are optimised in one vectorised run
    (:func:`meanfield.init.metainit` with one stream per network: less CPU per network than one
    at a time; ``benchmarks/bench_fig1_slice.py`` measures the ratio on your machine).
    """
    n_networks = check_int(n_networks, "n_networks", 1)
    streams = isinstance(rng, (list, tuple))
    if streams and len(rng) != n_networks:
        raise ValueError(f"rng must be one rng or a sequence of n_networks = {n_networks}, got {len(rng)}")
    rng = _streams_or_rng(rng)
    depth = check_int(depth, "depth", 1)
    width = check_int(width, "width", 1)
    w0 = check_int(w0, "w0", 1)
    steps = check_int(steps, "steps", 0)
    check_elements(n_networks * (depth * width * max(width, w0) + FIG1_CLASSES * width), "the MetaInit weights")
    check_work(
        n_networks * (steps + 1) * 32 * (depth * width * max(width, w0) + FIG1_CLASSES * width),
        "MetaInit (n_networks x (steps + 1) x the network; steps = metainit_steps)",
    )
    shapes = [(width, w0)] + [(width, width)] * (depth - 1) + [(FIG1_CLASSES, width)]
    if streams:  # network k's start from its own stream, in the order of a run on its own
        per = [[dense_weights(s[0], s[1], 2.0, "gaussian", g, batch_shape=1) for s in shapes] for g in rng]
        ws = [np.concatenate([p[k] for p in per]) for k in range(len(shapes))]
    else:
        ws = [dense_weights(s[0], s[1], 2.0, "gaussian", rng, batch_shape=n_networks) for s in shapes]
    return metainit(ws, 0.0, steps=steps, biases=True, eval_batches=0, rng=rng).weights[:-1]


def _chunk_weights(init, depth, width, w0, bsz, rng, host, b, metainit_steps):
    """Weights of layers ``1 .. depth`` of a chunk of Fig. 1 networks (see :func:`_fig1_weights`);
    ``rng`` is the backend Generator, ``host`` the NumPy one it was spawned from (MetaInit runs on
    the host; on the NumPy backend both are the same Generator)."""
    if init == "metainit":
        return [b.asarray(w) for w in metainit_weights(bsz, depth, width, w0, host, metainit_steps)]
    return [_fig1_weights(init, l, width, w0 if l == 1 else width, bsz, rng, b) for l in range(1, depth + 1)]


def _streams(host, start, bsz):
    """The host randomness of networks ``start .. start + bsz``: the shared Generator, or their own streams."""
    return host[start : start + bsz] if isinstance(host, list) else host


def _pooled_variance(xp, y):
    """Sample variance (ddof = 1) of each row of ``y`` (shape (b, N)): one pass (sum and sum of
    squares), redone in two float64 passes for rows whose mean is so large that cancellation could
    cost more than ~1e-8 (float64) or ~1e-4 (float32) relative accuracy."""
    count = y.shape[1]
    s1 = xp.sum(y, axis=1)
    s2 = xp.einsum("bi,bi->b", y, y) if hasattr(xp, "einsum") else xp.sum(y * y, axis=1)
    ss = s2 - s1 * s1 / count
    limit = 1e8 if y.dtype == xp.float64 else 1e3
    risky = s1 * s1 / count > limit * xp.maximum(ss, 1e-30)
    if bool(xp.any(risky)):  # rare: a two-pass sum over every row, kept where it matters
        yr = astype(xp, y, xp.float64)
        d = yr - xp.mean(yr, axis=1, keepdims=True)
        ss = xp.where(risky, astype(xp, xp.sum(d * d, axis=1), ss.dtype), ss)
    return xp.maximum(ss, 0.0) / (count - 1)


#: Smallest sum of squares the Numba engine trusts (below: subnormal, precision lost).
_S2_MIN = np.finfo(np.float64).tiny * 2.0**53

#: The Fig. 1 simulator rescales every network's signal to unit mean square this often (layers).
RENORM_EVERY = 8


def empirical_variances(
    x: ArrayLike,
    init: str,
    depth: int = 100,
    width: int = 10,
    n_networks: int = 1000,
    *,
    backend: str | Backend = "numpy",
    rng: Any = None,
    chunk: int | None = None,
    desc: str | None = None,
    dtype: str = "float32",
    engine: str | None = None,
    metainit_steps: int = 500,
    protocol: str = "pooled",
) -> np.ndarray:
    """Empirical variance of the outputs of ``n_networks`` random ReLU networks on the data ``x``.

    Parameters
    ----------
    x : ndarray, shape (n, w0)
        The inputs (standardised data).
    init : str
        One of :data:`FIG1_INITS`.
    depth, width : int
        Number of layers and their (constant) width; the first layer maps ``w0 -> width``.
    dtype : {"float32", "float64"}
        Arithmetic of the forward pass of the ``"blas"`` engine; the default ``"numba"`` engine
        (and ``"numba_generic"``) computes in float64 whatever ``dtype`` says. On ``"blas"``,
        ``float32`` (default) is the faster arithmetic, with a relative error of a variance
        ~1e-6, and no underflow: ReLU networks without biases are positively homogeneous, so each
        network's signal is rescaled to unit mean square every :data:`RENORM_EVERY` layers and the
        scale kept as a float64 logarithm (Glorot's 2^-depth decay is exact at any depth).

    engine : {"numba", "numba_generic", "blas"}, optional
        ``"numba"`` (default on the NumPy backend): a fused Numba kernel in float64 (``dtype`` ignored; fine to depth ~1000,
        beyond which Glorot's 2^-depth decay would underflow), with a width-specialised inner
        block at width 10 (the Fig. 1 width, 2.3-2.7x faster); ``"numba_generic"``:
        the same fused kernel with the width a runtime value at every width (the generic
        width kernel, kept as a reference; same sums to float64 rounding); ``"blas"`` (default on CuPy):
        stacked ``xp.matmul`` per layer in ``dtype`` with renormalisation. All draw the same
        weights for the same ``rng``.
    metainit_steps : int
        MetaInit steps (``init="metainit"``; the paper's 500 by default, fewer in tests). MetaInit
        runs on the CPU in chunks of :data:`METAINIT_CHUNK` networks optimised together (less CPU
        per network than one at a time: ``benchmarks/bench_fig1_slice.py`` measures both), then
        the forward pass runs on ``backend``.

    rng : None, int, SeedSequence or numpy.random.Generator, or (MetaInit) a sequence of them
        The rule of :mod:`meanfield.backend` (one stream for all chunks; on CuPy the device
        Generator is spawned off it and MetaInit draws from it on the host). With
        ``init="metainit"``, a sequence of ``n_networks`` (distinct Generators) gives network ``k``
        its own stream: its variances are exactly those of ``n_networks=1, rng=rng[k]`` (same
        weights bit for bit, :func:`metainit_weights`), whatever the chunks, while each chunk's
        networks are meta-initialised in one vectorised run (how :func:`fig1_variances`
        batches its per-network MetaInit streams).
    protocol : {"pooled", "unit"}
        ``"pooled"`` (default): the variance of all ``width * n`` entries of ``y^(l)``;
        ``"unit"``: the variance over the data set of the single unit ``y^(l)_0``, the statistic of
        the authors' published code for Grzejdziak's Fig. 1. ``"unit"`` runs on the
        ``"blas"`` engine.

    Returns
    -------
    ndarray, shape (n_networks, depth + 1)
        ``[k, l]``: sample variance (ddof = 1) of all ``width * n`` entries of ``y^(l)`` of network
        ``k`` over the data set, pooled over units (``protocol="unit"``: of unit 0's ``n`` values);
        column 0 is the input's (pooled over the input features in both protocols). ZerO is deterministic:
        one network is simulated and repeated.
    """
    x = as_float_array(x, "x")
    if x.ndim != 2 or x.shape[0] < 2 or x.shape[1] < 1:
        raise ValueError(f"x must have shape (n, w0) with n >= 2 inputs and w0 >= 1, got {x.shape}")
    if not isinstance(init, str) or init not in FIG1_INITS:
        raise ValueError(f"init must be one of {FIG1_INITS}, got {init!r}")
    depth = check_int(depth, "depth", 1)
    width = check_int(width, "width", 2 if init == "gsm" else 1)
    if init == "gsm" and width % 2:
        raise ValueError(f"init='gsm' needs an even width, got {width}")
    n_networks = check_int(n_networks, "n_networks", 1)
    metainit_steps = check_int(metainit_steps, "metainit_steps", 0)
    if chunk is not None:
        chunk = check_int(chunk, "chunk", 1)
    if desc is not None and not isinstance(desc, str):
        raise TypeError(f"desc must be a string or None, got {type(desc).__name__}")
    n_inputs = x.shape[0]
    check_elements(n_networks * (depth + 1), "the variances (n_networks x (depth + 1))")
    check_elements(width * max(width, x.shape[1]) * depth, "one network's weights")
    check_elements(width * max(n_inputs, x.shape[1]), "one network's signal")
    check_work(n_networks * depth * width * max(width, x.shape[1]) * n_inputs, "empirical_variances")
    if dtype not in ("float32", "float64"):
        raise ValueError(f"dtype must be 'float32' or 'float64', got {dtype!r}")
    b = get_backend(backend)
    if isinstance(rng, (list, tuple)) and (init != "metainit" or len(rng) != n_networks):  # MetaInit only
        raise ValueError(
            "rng may be a sequence (one per network) only with init='metainit' and "
            f"n_networks = {n_networks} entries, got {len(rng)} for init={init!r}"
        )
    host = _streams_or_rng(rng)
    if protocol not in ("pooled", "unit"):
        raise ValueError(f"protocol must be 'pooled' or 'unit', got {protocol!r}")
    if engine is None:
        engine = "numba" if b.name == "numpy" and protocol == "pooled" else "blas"
    if engine in ("numba", "numba_generic") and protocol == "unit":
        raise ValueError("protocol='unit' needs engine='blas' (the Numba kernel pools all units)")
    if engine in ("numba", "numba_generic"):
        return _empirical_variances_numba(
            x, init, depth, width, n_networks, host, chunk, desc, metainit_steps, engine == "numba_generic"
        )
    if engine != "blas":
        raise ValueError(f"engine must be 'numba', 'numba_generic' or 'blas', got {engine!r}")
    xp = b.xp
    rng = None if isinstance(host, list) else b.rng(host)  # a stream list: MetaInit draws on the host only
    ft = getattr(xp, dtype)
    deterministic = init == "zero"
    n_sim = 1 if deterministic else n_networks
    xt = b.asarray(np.ascontiguousarray(np.asarray(x, dtype=np.float64).T))  # (w0, n)
    w0, n = xt.shape
    xt_f = astype(xp, xt, ft)
    if chunk is None:
        chunk = max(1, min(n_sim, 3_000_000 // (width * n), METAINIT_CHUNK if init == "metainit" else n_sim))
    out = np.empty((n_sim, depth + 1))
    out[:, 0] = float(np.var(np.asarray(x, dtype=np.float64), ddof=1))  # the data's own variance (host input)
    starts = range(0, n_sim, chunk)
    count = width * n
    for start in progress(starts, desc=desc or f"fig1 {init}", total=len(starts)):
        bsz = min(chunk, n_sim - start)
        y = None
        log_scale = np.zeros(bsz)  # y_true = exp(log_scale) * y
        mats = _chunk_weights(init, depth, width, w0, bsz, rng, _streams(host, start, bsz), b, metainit_steps)
        for l in range(1, depth + 1):
            wts = mats[l - 1]
            if l == 1:  # broadcasts a deterministic (1, width, w0) matrix
                y = xp.broadcast_to(xp.matmul(astype(xp, wts, ft), xt_f), (bsz, width, n))
            else:
                v = xp.maximum(y, 0.0)
                y = v if wts is None else xp.matmul(astype(xp, wts, ft), v)  # None: an identity layer
            if protocol == "unit":
                var = to_numpy(_pooled_variance(xp, astype(xp, y[:, 0, :], xp.float64))).astype(np.float64)
            else:
                var = to_numpy(_pooled_variance(xp, xp.reshape(y, (bsz, count)))).astype(np.float64)
            out[start : start + bsz, l] = _scaled_variance(var, log_scale, l)
            if l % RENORM_EVERY == 0 and l < depth:
                flat = xp.reshape(y, (bsz, count))
                ms = to_numpy(xp.sum(flat * flat, axis=1)).astype(np.float64) / count
                scale = np.where(ms > 0, np.sqrt(ms), 1.0)
                y = y * b.asarray(1.0 / scale, dtype=ft)[:, None, None]
                log_scale += np.log(scale)
    if deterministic:
        out = np.repeat(out, n_networks, axis=0)
    return out


def _scaled_variance(var, log_scale, layer):
    """``var * exp(2 log_scale)``, or a ValueError when a non-zero variance leaves float64."""
    with np.errstate(over="ignore", under="ignore", divide="ignore"):
        out = var * np.exp(2.0 * log_scale)
        lg = np.log(np.where(var > 0, var, 1.0)) + 2.0 * log_scale
    bad = (var > 0) & ((lg > LOG_MAX) | (lg < LOG_TINY))
    if np.any(bad) or not np.all(np.isfinite(out)):
        raise ValueError(
            f"the empirical variance of a network at layer {layer} is exp({lg[bad].min() if bad.any() else np.inf:.4g}), "
            "beyond the float64 range; use fewer layers"
        )
    return out


def _empirical_variances_numba(x, init, depth, width, n_networks, rng, chunk, desc, metainit_steps, generic=False):
    """The NumPy-backend path of :func:`empirical_variances` through the fused Numba kernel."""
    from ._kernels import fused_relu_sums

    b = get_backend("numpy")
    deterministic = init == "zero"
    n_sim = 1 if deterministic else n_networks
    xt = np.ascontiguousarray(np.asarray(x, dtype=np.float64).T)
    w0, n = xt.shape
    if chunk is None:
        chunk = max(1, min(n_sim, 1_000_000 // (width * n) + 1, METAINIT_CHUNK if init == "metainit" else 200))
    out = np.empty((n_sim, depth + 1))
    out[:, 0] = xt.var(ddof=1)
    count = width * n
    identity = init in ("zero", "zero_star") and depth > 1
    starts = range(0, n_sim, chunk)
    for start in progress(starts, desc=desc or f"fig1 {init}", total=len(starts)):
        bsz = min(chunk, n_sim - start)
        mats = _chunk_weights(init, depth, width, w0, bsz, rng, _streams(rng, start, bsz), b, metainit_steps)
        # the first layer as one 2-D GEMM: a stacked (networks, width, w0) @ (w0, n) np.matmul runs
        # NumPy's own loop, not BLAS (27x slower, 61 % of the paper-size Fig. 1,
        # benchmarks/bench_fig1_slice.py); same products up to rounding (~1e-16 relative)
        w1 = mats[0]
        y1 = (w1.reshape(-1, w0) @ xt).reshape(w1.shape[0], width, n)
        y1 = np.ascontiguousarray(np.broadcast_to(y1, (bsz, width, n)))
        if identity:
            hidden = np.empty((bsz, depth - 1, 0, 0))
        else:
            hidden = np.empty((bsz, depth - 1, width, width))
            for l in range(2, depth + 1):
                hidden[:, l - 2] = mats[l - 1]
        s1, s2 = fused_relu_sums(y1, hidden, identity, generic)
        lost = ((s2 == 0) & (s1 != 0)) | ((s2 > 0) & (s2 < _S2_MIN)) | ~np.isfinite(s2)
        if np.any(lost):
            layer = int(np.argmax(lost.any(axis=0))) + 1
            raise ValueError(
                f"the Numba engine's float64 sums under- or overflow at layer {layer} (no renormalisation): "
                "use engine='blas', which rescales every RENORM_EVERY layers"
            )
        ss = np.maximum(s2 - s1 * s1 / count, 0.0)
        out[start : start + bsz, 1:] = ss / (count - 1)
    if deterministic:
        out = np.repeat(out, n_networks, axis=0)
    return out


# --- Grzejdziak 2023, Fig. 1: the empirical variance of many networks on the digits ------------------------

#: Largest predicted kurtosis whose Monte-Carlo estimate is compared or drawn: beyond it the
#: fourth moments are heavy-tailed and their sample standard error is not trustworthy.
KAPPA_MAX = 30.0
#: Fig. 1 claim: the fraction of networks with empirical variance below FIG1_THRESHOLD at FIG1_DEPTH
#: is at least FIG1_FRACTION.
FIG1_THRESHOLD = 1e-3
FIG1_DEPTH = 80
FIG1_FRACTION = 0.9
#: MetaInit networks in Fig. 1 (default, ``--full``): ~6 s of CPU each alone, ~1.5 s in a batch of
#: :data:`FIG1_METAINIT_BATCH` (500 signSGD steps), so the default run stays within ~20 s of its
#: cost without MetaInit.
FIG1_METAINIT_NETWORKS = (4, 200)

#: The part of a comparison's integer ``seed`` that feeds the Fig. 1 networks: :func:`run` passes
#: ``rng=substream(seed, FIG1_STREAM)`` to :func:`fig1_variances` (the figure does the same, so that
#: its default size repeats the table's numbers).
FIG1_STREAM = 4


def fig1_variances(
    full: bool = False,
    backend: str = "numpy",
    rng: int | np.random.SeedSequence | np.random.Generator | None = None,
    n_networks: int | None = None,
    n_inputs: int | None = None,
    depth: int = 100,
    n_metainit: int | None = None,
    metainit_steps: int = 500,
) -> dict[str, np.ndarray]:
    """Empirical variances of the Fig. 1 experiment: ``{init: (networks, depth + 1) array}``.

    Width 10, ReLU; 1,000 networks on the first 256 standardised digits by default, 10,000 networks
    on all 1,797 with ``full``; MetaInit: :data:`FIG1_METAINIT_NETWORKS` networks
    (``n_networks`` / ``n_inputs`` / ``n_metainit`` / ``metainit_steps`` override, e.g. for tests).

    Parameters
    ----------
    full : bool
        Paper-size run.
    backend : str
        One of :data:`meanfield.backend.BACKENDS`.
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator
        Randomness (the library's rule: an int ``n`` is ``numpy.random.default_rng(n)``); the
        initialisers in ``FIG1_INITS`` get the children spawned off it, in that order, and chunk
        ``j`` of an initialiser's networks (:data:`FIG1_CHUNK` networks, MetaInit
        :data:`FIG1_METAINIT_CHUNK`) the ``j``-th child of its initialiser's child. The chunks run
        on :func:`meanfield.parallel.current` (``with meanfield.parallel.using(...)``); the result
        does not depend on where. MetaInit networks, one stream each, are meta-initialised
        :data:`FIG1_METAINIT_BATCH` at a time in one vectorised run (same numbers as one by one).
    n_networks, n_inputs, depth, n_metainit, metainit_steps : int
        Sizes (see above); ``n_inputs`` between 2 and the 1,797 digits.

    Raises
    ------
    TypeError, ValueError
        A ``full`` that is not a bool; sizes that are not integers in range (named).

    Returns
    -------
    dict of str to ndarray
        Per initialiser, the empirical variance of the output after layers ``0 .. depth`` for each network.
    """
    full = check_bool(full, "full")
    # at most parallel.MAX_CHUNKS chunks of FIG1_CHUNK / FIG1_METAINIT_CHUNK networks
    n_networks, n_metainit = (
        None if n is None else check_int(n, name, 1, parallel.MAX_CHUNKS * chunk)
        for n, name, chunk in (
            (n_networks, "n_networks", FIG1_CHUNK),
            (n_metainit, "n_metainit", FIG1_METAINIT_CHUNK),
        )
    )
    children = spawn_sequences(get_backend("numpy").rng(rng), len(FIG1_INITS))
    n_net = n_networks or (10_000 if full else 1_000)
    n_mi = n_metainit or FIG1_METAINIT_NETWORKS[full]
    data = load_digits(standardized=True).x
    if n_inputs is not None:
        n_inputs = check_int(n_inputs, "n_inputs", 2, data.shape[0])
    x = data[: n_inputs or (data.shape[0] if full else 256)]
    # chunks of networks, each drawn from the stream spawned off its initialiser's child by chunk
    # index (meanfield.parallel): the same numbers serially, on processes or on a Dask cluster
    tasks, owners = [], []
    for k, init in enumerate(FIG1_INITS):
        ranges = parallel.chunk_ranges(
            n_mi if init == "metainit" else n_net, FIG1_METAINIT_CHUNK if init == "metainit" else FIG1_CHUNK
        )
        streams = parallel.chunk_streams(children[k], len(ranges))
        if init == "metainit":  # one stream per network (FIG1_METAINIT_CHUNK = 1), optimised in batches
            for j in range(0, len(streams), FIG1_METAINIT_BATCH):
                group = list(streams[j : j + FIG1_METAINIT_BATCH])
                tasks.append((x, init, depth, 10, len(group), backend, group, metainit_steps))
                owners.append(init)
            continue
        for (a, b), stream in zip(ranges, streams):
            tasks.append((x, init, depth, 10, b - a, backend, stream, metainit_steps))
            owners.append(init)
    parts = parallel.map_chunks(_fig1_chunk, tasks)
    return {init: np.concatenate([p for p, o in zip(parts, owners) if o == init]) for init in FIG1_INITS}


#: Networks per task of :func:`fig1_variances` (a property of the experiment, not of the workers:
#: the numbers depend on it). 250 networks x 256 inputs x depth 100: ~1 s of CPU per task.
FIG1_CHUNK = 250

#: MetaInit networks per random stream: each network has its own (the numbers depend on it).
FIG1_METAINIT_CHUNK = 1

#: MetaInit networks per task, optimised together in one vectorised run, each from its own stream
#: (:func:`meanfield.simulate.empirical_variances` with a sequence ``rng``): the same
#: numbers as one task per network, bit for bit, at ~1/4 of the CPU time (the
#: per-network cost of a stacked MetaInit step is flat from ~32 networks on).
FIG1_METAINIT_BATCH = 32


def _fig1_chunk(x, init, depth, width, n_networks, backend, rng, metainit_steps):
    """One task of :func:`fig1_variances` (module level: pickled by reference to workers). Float64 on
    every backend: the ZerO rows' tolerance ``ZERO_RTOL`` is float64 rounding (the ``blas`` engine's
    float32 default gave 1e-7 and 4e-6 under --backend torch: float32 rescaling every
    ``RENORM_EVERY`` layers), and NumPy's Numba engine is float64 anyway."""
    return empirical_variances(
        x,
        init,
        depth,
        width,
        n_networks,
        backend=backend,
        rng=rng,
        metainit_steps=metainit_steps,
        desc=None,
        dtype="float64",
    )
