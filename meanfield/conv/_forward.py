"""The forward C-map of periodic CNNs and its propagation over depth (Xiao et al. 2018, eq. 2.5; private)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numba
import numpy as np
from numpy.typing import ArrayLike

from .. import dense
from .._checks import check_covariance, check_nonnegative_scalar
from .._fastpath import (
    PROBABILITY_ATOL,
    fast_start,
    float64_trajectory,
    plain_matrix,
    plain_vector,
    probability_vector_fast,
    trajectory_ok,
)
from .._logscale import (
    LOG_DBL_MAX,
    LOG_DBL_MIN,
    MAX_DEPTH,
    MAX_PROPAGATION_SIZE,
    check_depth,
    check_quadrature_work,
    full_rule,
    kernel_rule_for,
    map_stack,
    normalised_start,
    refuse_unbounded,
    scaled_step,
)
from ..activations import get_activation
from ..gaussian import DEFAULT_DEGREE, kernel_rule, needs_full_tree
from ._averaging import MAX_POSITIONS, _apply_plan, _average, _average_plan, _check_v, _plan_arrays, _resolve_shape

if TYPE_CHECKING:  # annotations only
    from ..activations import Activation

# ----------------------------------------------------------------------------------------------
# Forward maps.


def covariance_map(
    cov: ArrayLike,
    activation: str | Activation,
    sigma_w2: float,
    sigma_b2: float,
    v: ArrayLike,
    shape: int | tuple[int, ...] | None = None,
    degree: int = DEFAULT_DEGREE,
) -> np.ndarray:
    r"""One CNN layer in the many-channel limit: :math:`\Sigma \mapsto \mathcal{A}_v\star\mathcal{C}(\Sigma)` (eqs. 2.3-2.5, 2.13).

    Parameters
    ----------
    cov : array_like, shape (..., P, P)
        Spatial covariance(s) of a channel's pre-activations (symmetric PSD).
    activation : str or Activation
    sigma_w2, sigma_b2 : float
        Weight and bias variances (>= 0), squared scales.
    v : array_like
        Variance vector, shape (2k+1,) or (2k1+1, 2k2+1), non-negative, summing to 1.
    shape : int or (int, int), optional
        Spatial shape (see :func:`average`).
    degree : int
        Gauss-Hermite degree for activations without closed forms.

    Returns
    -------
    ndarray, shape (..., P, P)

    Notes
    -----
    Since ``sum(v) = 1``, :math:`\mathcal{A}_v\star(\sigma_w^2 K + \sigma_b^2) = \sigma_w^2 \mathcal{A}_v\star K + \sigma_b^2`.
    With uniform ``v`` and a covariance that is constant along cyclic diagonals the averaging is
    the identity and the map equals :func:`meanfield.dense.covariance_map`.

    Examples
    --------
    >>> import numpy as np
    >>> out = covariance_map(np.eye(4), "relu", 2.0, 0.0, [0.25, 0.5, 0.25])
    >>> bool(np.allclose(np.diag(out), 1.0))
    True
    """
    v = _check_v(v)
    cov = check_covariance(cov, "cov", strict=True)
    shape = _resolve_shape(v, shape, cov.shape[-1])
    mapped = dense.covariance_map(cov, activation, sigma_w2, sigma_b2, degree)
    return _average(mapped, v, shape, +1)


def propagate_log(
    cov0: ArrayLike,
    activation: str | Activation,
    sigma_w2: float,
    sigma_b2: float,
    v: ArrayLike,
    depth: int,
    shape: int | tuple[int, ...] | None = None,
    degree: int = DEFAULT_DEGREE,
) -> dense.LogPropagation:
    r"""Iterate :math:`\Sigma^{l+1} = \mathcal{A}_v\star\mathcal{C}(\Sigma^l)` without overflow.

    For positively homogeneous activations (linear, relu, leaky_relu) the covariance is carried as
    ``exp(log_scale) * normalized`` (the bias enters relative to the current scale, as in
    :func:`meanfield.dense.propagate_log`), so depth 10^4 at any sigma_w2 is representable
    (Xiao et al. 2018, eq. 2.13).

    Parameters
    ----------
    cov0, activation, sigma_w2, sigma_b2, v, depth, shape
        As in :func:`propagate` (``cov0`` symmetric PSD, of shape (P, P)).
    degree : int
        Gauss-Hermite degree for activations without closed forms.

    Returns
    -------
    meanfield.dense.LogPropagation
        ``normalized`` has shape (depth + 1, P, P).
    """
    return _propagate_log(cov0, activation, sigma_w2, sigma_b2, v, depth, shape, degree)[0]


@numba.njit(cache=True)
def _propagate_kernel(code, a, sw, sb, depth, z, w, cf, index, weight, out, logs):
    """The built-in-activation loop of :func:`propagate_log`: ``out[l] = A_v * C(out[l - 1])`` on the
    log scale (:func:`meanfield._logscale.scaled_step`, then the gather plan of
    :func:`_average_plan` as (offsets, P^2) ``index`` and ``weight``, summed in the plan's order:
    the same floating-point operations as :func:`_apply_plan`). Returns 0, or the first layer
    whose log scale is not finite (the caller raises)."""
    p = out.shape[1]
    tmp = np.empty((p, p))
    work = np.empty((p, p))
    mapped = np.empty((p, p))
    acc = np.empty(p * p)
    flat = mapped.ravel()  # a view: the gather reads flat[i], not mapped[i // p, i % p] (two integer divisions)
    for layer in range(1, depth + 1):
        lm = scaled_step(code, a, sw, sb, out[layer - 1], logs[layer - 1], z, w, cf, tmp, mapped, work)
        if not math.isfinite(lm):
            return layer
        for e in range(p * p):
            acc[e] = 0.0
        for b in range(index.shape[0]):
            wb = weight[b]
            for e in range(p * p):
                acc[e] += wb * flat[index[b, e]]
        m = acc[0]
        for i in range(1, p):
            m = max(m, acc[i * p + i])
        if m > 0.0:
            for i in range(p):
                for j in range(p):
                    out[layer, i, j] = acc[i * p + j] / m
            logs[layer] = lm + math.log(m)
        else:
            for i in range(p):
                for j in range(p):
                    out[layer, i, j] = acc[i * p + j]
            logs[layer] = lm + 0.0
    return 0


def _fast_propagate_log(cov0, activation, sigma_w2, sigma_b2, v, depth, shape, degree):
    """``(LogPropagation, validated cov0)`` on the fast path (``meanfield._fastpath``: a 1-D float64
    ``v`` certified as a probability vector, ``shape`` None, the dense arguments certified), or None
    where :func:`_general_propagate_log` must decide; the same kernel, so the same numbers."""
    if shape is not None or not plain_vector(v) or not probability_vector_fast(v, PROBABILITY_ATOL):
        return None
    if not plain_matrix(cov0) or type(depth) is not int or not 0 <= depth <= MAX_DEPTH:
        return None
    p = cov0.shape[0]
    if not 1 <= p <= MAX_POSITIONS or (depth + 1) * p * p > MAX_PROPAGATION_SIZE:
        return None
    refuse_unbounded(cov0, activation, depth, degree)
    out = np.empty((depth + 1, p, p))
    start = fast_start(cov0, activation, sigma_w2, sigma_b2, depth, degree, k0=out[0])
    if start is None:
        return None
    act, sym, _k0, log0, (z, w, cf), sw, sb = start
    logs = np.empty(depth + 1)
    logs[0] = log0
    index, weight = _plan_arrays(v, (p,), +1)
    bad = _propagate_kernel(act.code, act.param, sw, sb, depth, z, w, cf, index, weight, out, logs)
    if bad or needs_full_tree(cf):
        return None  # the general path retries with quadrature (or every rule) or raises
    if not trajectory_ok(logs, out, math.inf):
        return None
    return dense.LogPropagation(log_scale=logs, normalized=out), sym


def _propagate_log(cov0, activation, sigma_w2, sigma_b2, v, depth, shape, degree):
    """:func:`propagate_log` and the validated ``cov0`` (validated once per call)."""
    refuse_unbounded(cov0, activation, depth, degree)
    fast = _fast_propagate_log(cov0, activation, sigma_w2, sigma_b2, v, depth, shape, degree)
    if fast is not None:
        return fast
    return _general_propagate_log(cov0, activation, sigma_w2, sigma_b2, v, depth, shape, degree)


def _general_propagate_log(cov0, activation, sigma_w2, sigma_b2, v, depth, shape, degree):
    """:func:`_propagate_log` for any arguments: every check, in the documented order."""
    act = get_activation(activation)
    v = _check_v(v)
    cov0 = check_covariance(cov0, "cov0", strict=True)
    if cov0.ndim != 2 or cov0.shape[0] < 1:
        raise ValueError(f"cov0 must be a single (P, P) matrix with P >= 1, got shape {cov0.shape}")
    shape = _resolve_shape(v, shape, cov0.shape[-1])
    sigma_w2 = check_nonnegative_scalar(sigma_w2, "sigma_w2")
    sigma_b2 = check_nonnegative_scalar(sigma_b2, "sigma_b2")
    depth = check_depth(depth, cov0.shape[0])
    kernel_rule(degree)  # validates degree on every path
    if act.is_builtin:
        check_quadrature_work(act.code, act.name, depth, cov0.shape[0], int(degree))
    out = np.empty((depth + 1,) + cov0.shape)
    logs = np.zeros(depth + 1)
    out[0], logs[0] = normalised_start(cov0)
    if act.is_builtin:  # the dense step on the log scale (exact at every scale), then A_v, compiled
        index, weight = _plan_arrays(v, shape, +1)
        z, w, cf = kernel_rule_for(act, degree)
        bad = _propagate_kernel(act.code, act.param, sigma_w2, sigma_b2, depth, z, w, cf, index, weight, out, logs)
        if needs_full_tree(cf):  # the first tier reached the graded rule: every rule
            bad = _propagate_kernel(
                act.code, act.param, sigma_w2, sigma_b2, depth, z, w, None, index, weight, out, logs
            )
        if z is None and (bad or not np.isfinite(out).all()):  # closed form failed: with quadrature fallback
            bad = _propagate_kernel(
                act.code, act.param, sigma_w2, sigma_b2, depth, *full_rule(degree), index, weight, out, logs
            )
        if bad:
            raise ValueError(
                f"propagation of activation {act.name} leaves even the log-scale representation at layer {bad}"
            )
        return dense.LogPropagation(log_scale=logs, normalized=out), cov0
    plan = _average_plan(v, shape, +1)
    for layer in range(1, depth + 1):  # user-defined: evaluated directly, the scale must stay in float64
        k, lk = out[layer - 1], logs[layer - 1]
        if np.max(np.diagonal(k)) > 0 and not LOG_DBL_MIN <= lk <= LOG_DBL_MAX:
            raise ValueError(
                f"propagation of the user-defined activation {act.name!r} leaves the float64 range at "
                f"layer {layer} (log q = {lk:.6g}); built-in activations are propagated on a log scale"
            )
        cov = math.exp(lk) * k
        mapped = map_stack(cov, act, 0, sigma_w2, sigma_b2, degree)
        m = float(np.max(np.diagonal(mapped)))
        lm = math.log(m) if m > 0 else 0.0
        mapped = mapped / m if m > 0 else mapped
        if not math.isfinite(lm):
            raise ValueError(
                f"propagation of activation {act.name} leaves even the log-scale representation at layer {layer}"
            )
        k = _apply_plan(mapped, plan)  # A_v (linear: commutes with the scale)
        m = float(np.max(np.diagonal(k)))
        out[layer] = k / m if m > 0 else k
        logs[layer] = lm + (math.log(m) if m > 0 else 0.0)
    return dense.LogPropagation(log_scale=logs, normalized=out), cov0


def propagate(
    cov0: ArrayLike,
    activation: str | Activation,
    sigma_w2: float,
    sigma_b2: float,
    v: ArrayLike,
    depth: int,
    shape: int | tuple[int, ...] | None = None,
    degree: int = DEFAULT_DEGREE,
) -> np.ndarray:
    r"""Spatial covariances through ``depth`` CNN layers (eq. 2.13), index 0 being ``cov0``.

    Parameters
    ----------
    cov0 : array_like, shape (P, P)
        Pre-activation spatial covariance at layer 0.
    activation : str or Activation
    sigma_w2, sigma_b2 : float
        Variances (>= 0).
    v : array_like
        Variance vector (see :func:`covariance_map`).
    depth : int
        Number of layers (>= 0, ``(depth + 1) P^2 <= 2**28`` floats,
        :data:`meanfield.dense.MAX_PROPAGATION_SIZE`; for tanh, sigmoid, softplus and swish also an
        estimated run time of a few seconds, e.g. depth <= 1167 at P = 8 positions and the default
        degree).
    shape : int or (int, int), optional
        Spatial shape.

    Returns
    -------
    ndarray, shape (depth + 1, P, P)

    Raises
    ------
    ValueError
        Bad arguments, or variances leaving the normal float64 range (overflow in expanding
        networks, underflow in contracting ones without bias): use :func:`propagate_log`, which
        represents them exactly.
    TypeError
        Complex or boolean arguments; arrays for the variances.

    Notes
    -----
    With a writeable C-contiguous float64 ``cov0``, a 1-D float64 ``v``, ``shape=None``, float or
    int variances and a built-in activation, the argument checks run in compiled code with the
    same decisions and messages as the general checks (see :func:`meanfield.dense.propagate`;
    ``benchmarks/bench_overhead.py``).
    """
    args = (cov0, activation, sigma_w2, sigma_b2, v, depth, shape, degree)
    return float64_trajectory(_fast_propagate_log(*args), "conv.propagate", _general_propagate_log, *args)
