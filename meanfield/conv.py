r"""Mean-field theory of deep periodic convolutional networks (Xiao et al. 2018).

Network convention (Xiao et al. 2018, eq. 2.1 and Sec. 2.1.6): periodic boundaries, c channels,

.. math:: h^{l+1}_j(\alpha) = \sum_{i}\sum_{\beta\in ker} \phi(h^l_i(\alpha+\beta))\,\omega^{l+1}_{ij}(\beta) + b^{l+1}_j,
    \qquad \omega_{ij}(\beta) \sim N(0, \sigma_w^2 v_\beta / c),\ b_j \sim N(0, \sigma_b^2),

with a *variance vector* ``v`` (non-negative, summing to 1): uniform ``v`` is the standard network,
one-hot ``v`` the delta initialisation. In the many-channel limit each channel is an independent
Gaussian field with spatial covariance :math:`\Sigma^l` (P x P over the P flattened positions),
and (eqs. 2.3-2.5, 2.13; supplement Corollary A.2)

.. math:: \Sigma^{l+1} = \mathcal{A}_v \star \mathcal{C}(\Sigma^l), \qquad
    [\mathcal{A}_v\star\Sigma]_{\alpha,\alpha'} = \sum_\beta v_\beta\,\Sigma_{\alpha+\beta,\alpha'+\beta},

where :math:`\mathcal{C}` is the dense C-map :func:`meanfield.dense.covariance_map` applied to every
pair of positions. Signals are 1-D (spatial size ``n``, ``v`` of length ``2k+1``, index ``j`` <->
offset ``beta = j - k``) or 2-D (shape ``(n1, n2)``, ``v`` of shape ``(2k1+1, 2k2+1)``, positions
flattened row-major, ``a = a1 * n2 + a2``).

Code name <-> symbol: ``cov`` = :math:`\Sigma`, ``average`` = :math:`\mathcal{A}_v\star`,
``lambda_`` = :math:`\lambda` (eigenvalues of :math:`\mathcal{A}_v\star`, eq. 2.11),
``chi_c``/``chi_q``/``chi_1`` as in :mod:`meanfield.dense` (eq. 2.7), ``kappa`` =
:math:`\kappa` (eq. S13), ``cov_grad`` = :math:`\tilde\Sigma` (backward covariance, eq. 2.15).

Fourier modes. :math:`\mathcal{A}_v\star` maps each cyclic diagonal
:math:`e_d(\alpha) = \Sigma_{\alpha,\alpha+d}` to itself by a circular cross-correlation with ``v``,
so the Fourier mode ``m`` of every cyclic diagonal is an eigenvector with eigenvalue
:math:`\lambda_m = \sum_\beta v_\beta e^{2\pi i m\beta/n}` (the conjugate DFT of ``v`` placed on the
ring; the paper's :math:`\lambda_{\alpha,\alpha'} = \lambda_{(\alpha+\alpha') \bmod n}`, "n copies
of the 1-D DFT of v"). :func:`cyclic_diagonal_modes` returns these Fourier amplitudes.

References
----------
Xiao, Bahri, Sohl-Dickstein, Schoenholz, Pennington (2018), "Dynamical isometry and a mean field
theory of CNNs: how to train 10,000-layer vanilla convolutional neural networks", Sec. 2.1-2.2,
supplement A-B, F.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numba
import numpy as np
from numpy.typing import ArrayLike

from . import dense
from ._checks import (
    as_real_array,
    check_correlation,
    check_covariance,
    check_int,
    check_nonnegative_scalar,
    check_probability_vector,
    check_scalar,
)
from ._fastpath import (
    PROBABILITY_ATOL,
    fast_start,
    finish,
    plain_matrix,
    plain_vector,
    probability_vector_fast,
    trajectory_ok,
)
from ._logscale import (
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
    unscale,
)
from ._results import Result
from .activations import get_activation
from .gaussian import DEFAULT_DEGREE, kernel_rule, pair_expectation

if TYPE_CHECKING:  # annotations only
    from .activations import Activation

__all__ = [
    "BackwardPropagation",
    "CMapEigenbasis",
    "ConvDepthScales",
    "LinearizedDecay",
    "average",
    "average_transpose",
    "averaging_singular_values",
    "backward_covariance_map",
    "cmap_jacobian",
    "cmap_jacobian_eigenbasis",
    "covariance_map",
    "cyclic_diagonal_modes",
    "depth_scales",
    "fig_s4_setup",
    "fig_s4_theory",
    "fixed_point_covariance",
    "fourier_eigenvalues",
    "gradient_variance_decay",
    "gs_family",
    "linearized_decay",
    "multi_input_covariance",
    "multi_input_covariance_map",
    "multi_input_propagate",
    "propagate",
    "propagate_log",
    "spatial_shape",
]

#: |chi * |lambda| - 1| below which a Fourier mode is called critical (infinite depth scale).
CRITICAL_ATOL = dense.CRITICAL_ATOL
#: Relative step of the central difference giving kappa (eq. S13) for activations with kinks,
#: whose phi'' has Dirac parts; the error is O(step^2) ~ 1e-10 relative for the arc-cosine family.
KAPPA_STEP = 1e-5
#: Most spatial positions P a shape may have (a 1024 x 1024 image): beyond it the Fourier
#: eigenvalues alone would take gigabytes, so sizes are refused at once with a ValueError.
MAX_POSITIONS = 2**20
#: Most positions of a P x P covariance the library allocates itself (:func:`fixed_point_covariance`):
#: 16,384^2 float64 entries are 2 GiB.
MAX_COVARIANCE_POSITIONS = 2**14
#: Most variance vectors :func:`gs_family` returns.
MAX_GS_COUNT = 10**5
#: Most layers :func:`multi_input_propagate` accepts (a Python-level step of a few ms per layer).
MAX_MULTI_INPUT_DEPTH = 2_000


# ----------------------------------------------------------------------------------------------
# Shapes, variance vectors and the averaging operator.


def spatial_shape(shape: int | tuple[int, ...] | None) -> tuple:
    """Normalise a ``shape`` argument: an int ``n`` (1-D) or a pair ``(n1, n2)`` (2-D), each >= 1.

    Xiao et al. 2018 treats 1-D signals (Sec. 2.1) and 2-D images (Sec. 3, Fig. 4) on periodic lattices.

    Parameters
    ----------
    shape : int or sequence of int
        ``n`` or ``(n,)`` (1-D) or ``(n1, n2)`` (2-D).

    Returns
    -------
    tuple of int
        ``(n,)`` or ``(n1, n2)``.

    Raises
    ------
    TypeError
        A complex size.
    ValueError
        A size < 1, a non-integer size, more than two dimensions, or more than
        :data:`MAX_POSITIONS` positions.
    """
    return _spatial_shape(shape, "shape")


def _spatial_shape(shape, name: str) -> tuple:
    """:func:`spatial_shape` with the argument's name in the messages."""
    if isinstance(shape, (tuple, list, np.ndarray)):
        dims = tuple(check_int(s, name, 1, MAX_POSITIONS) for s in shape)
        if len(dims) not in (1, 2):
            raise ValueError(f"{name} must be an int n (1-D) or a pair (n1, n2) (2-D), got {shape!r}")
    else:
        dims = (check_int(shape, name, 1, MAX_POSITIONS),)
    if math.prod(dims) > MAX_POSITIONS:
        raise ValueError(f"{name} {dims} has {math.prod(dims)} positions, more than MAX_POSITIONS = {MAX_POSITIONS}")
    return dims


def _check_v(v, ndim=None) -> np.ndarray:
    v = check_probability_vector(as_real_array(v, "v"), "v")
    if v.ndim not in (1, 2):
        raise ValueError(f"v must be 1-D (length 2k+1) or 2-D (shape (2k1+1, 2k2+1)), got ndim {v.ndim}")
    if any(s % 2 == 0 for s in v.shape):
        raise ValueError(f"v must have odd sizes 2k+1 (index j <-> offset j - k), got shape {v.shape}")
    if ndim is not None and v.ndim != ndim:
        raise ValueError(f"v has {v.ndim} spatial dimension(s) but the signal shape has {ndim}")
    return v


def _resolve_shape(v, shape, size):
    """Spatial shape from ``shape`` or, if None, from the number of positions ``size``."""
    if shape is None:
        if v.ndim == 1:
            shape = (size,)
        else:
            n = math.isqrt(size)
            if n * n != size:
                raise ValueError(f"pass shape=(n1, n2): {size} positions are not a square image")
            shape = (n, n)
    shape = spatial_shape(shape)
    if len(shape) != v.ndim:
        raise ValueError(f"shape {shape} has {len(shape)} dimension(s) but v has {v.ndim}")
    if size is not None and int(np.prod(shape)) != size:
        raise ValueError(f"shape {shape} has {int(np.prod(shape))} positions but the covariance has {size}")
    return shape


def _offsets(v):
    """(offset tuple beta, weight v_beta) for the non-zero entries of v (beta = j - k per axis)."""
    for index in zip(*np.nonzero(v)):
        yield tuple(int(j) - s // 2 for j, s in zip(index, v.shape)), float(v[index])


def _average(cov, v, shape, sign):
    d = len(shape)
    lead = cov.shape[:-2]
    x = cov.reshape(lead + shape + shape)
    axes_a = tuple(range(len(lead), len(lead) + d))
    axes_b = tuple(range(len(lead) + d, len(lead) + 2 * d))
    out = np.zeros_like(x)
    for beta, weight in _offsets(v):
        shift = tuple(-sign * b for b in beta) * 2  # rolled[a, a'] = x[a + s beta, a' + s beta]
        out += weight * np.roll(x, shift, axis=axes_a + axes_b)
    return out.reshape(cov.shape)


def _average_plan(v, shape, sign):
    """``[(flat gather index, weight)]`` with ``_average(cov, v, shape, sign).ravel() ==
    sum weight * cov.ravel()[index]`` for one (P, P) matrix (the same rolls, built once per
    propagation: a gather per offset costs ~1 us where ``np.roll`` costs ~30 us, the per-layer
    overhead of :func:`propagate_log`)."""
    p = int(np.prod(shape))
    idx = np.arange(p * p).reshape(shape + shape)
    d = len(shape)
    axes = tuple(range(2 * d))
    plan = []
    for beta, weight in _offsets(v):
        shift = tuple(-sign * b for b in beta) * 2
        plan.append((np.roll(idx, shift, axis=axes).ravel(), weight))
    return plan


@functools.lru_cache(maxsize=64)
def _cached_plan_arrays(v_bytes, v_shape, shape, sign):
    v = np.frombuffer(v_bytes, dtype=np.float64).reshape(v_shape)
    plan = _average_plan(v, shape, sign)
    index = np.array([idx for idx, _ in plan], dtype=np.int64)
    weight = np.array([wt for _, wt in plan], dtype=np.float64)
    index.setflags(write=False)
    weight.setflags(write=False)
    return index, weight


def _plan_arrays(v, shape, sign):
    """:func:`_average_plan` as read-only arrays ``index`` (offsets, P^2) and ``weight`` (offsets,),
    cached by (v, shape, sign): building the plan (one ``np.roll`` per offset) was half the fixed
    cost of a small :func:`propagate`."""
    v = np.ascontiguousarray(v, dtype=np.float64)
    return _cached_plan_arrays(v.tobytes(), v.shape, tuple(int(n) for n in shape), int(sign))


def _apply_plan(cov, plan):
    """:func:`_average` of one (P, P) matrix through a plan of :func:`_average_plan` (same sums, same order)."""
    flat = cov.ravel()
    out = np.zeros_like(flat)
    for index, weight in plan:
        out += weight * flat[index]
    return out.reshape(cov.shape)


def average(cov: ArrayLike, v: ArrayLike, shape: int | tuple[int, ...] | None = None) -> np.ndarray:
    r"""The averaging operator :math:`[\mathcal{A}_v\star\Sigma]_{\alpha,\alpha'} = \sum_\beta v_\beta \Sigma_{\alpha+\beta,\alpha'+\beta}` (eqs. 2.4, S7).

    Parameters
    ----------
    cov : array_like, shape (..., P, P)
        Matrices over the P flattened positions (any real matrices, not only covariances).
    v : array_like
        Variance vector: shape (2k+1,) or (2k1+1, 2k2+1), non-negative, summing to 1.
    shape : int or (int, int), optional
        Spatial shape; default ``P`` (1-D) or the square ``(sqrt P, sqrt P)`` (2-D ``v``).

    Returns
    -------
    ndarray, shape (..., P, P)
        Preserves symmetry, positive semi-definiteness and the trace (a convex combination of
        simultaneous cyclic shifts of rows and columns).
    """
    v = _check_v(v)
    cov = as_real_array(cov, "cov")
    if cov.ndim < 2 or cov.shape[-1] != cov.shape[-2]:
        raise ValueError(f"cov must have shape (..., P, P), got {cov.shape}")
    shape = _resolve_shape(v, shape, cov.shape[-1])
    return _average(cov, v, shape, +1)


def average_transpose(cov: ArrayLike, v: ArrayLike, shape: int | tuple[int, ...] | None = None) -> np.ndarray:
    r"""The adjoint :math:`[\mathcal{A}_v^T\star\Sigma]_{\alpha,\alpha'} = \sum_\beta v_\beta \Sigma_{\alpha-\beta,\alpha'-\beta}` (backward pass, Xiao et al. 2018 eq. 2.15).

    Parameters
    ----------
    cov : array_like, shape (..., P, P)
        Matrices over the P flattened positions.
    v : array_like
        Variance vector, shape (2k+1,) or (2k1+1, 2k2+1), non-negative, summing to 1.
    shape : int or (int, int), optional
        Spatial shape (see :func:`average`).

    Returns
    -------
    ndarray, shape (..., P, P)
        The transpose of :func:`average` with respect to the Frobenius inner product.
    """
    v = _check_v(v)
    cov = as_real_array(cov, "cov")
    if cov.ndim < 2 or cov.shape[-1] != cov.shape[-2]:
        raise ValueError(f"cov must have shape (..., P, P), got {cov.shape}")
    shape = _resolve_shape(v, shape, cov.shape[-1])
    return _average(cov, v, shape, -1)


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
    cov0 : array_like, shape (P, P)
        Layer-0 pre-activation spatial covariance (symmetric PSD).
    activation : str or Activation
    sigma_w2, sigma_b2 : float
        Variances (>= 0).
    v : array_like
        Variance vector (see :func:`covariance_map`).
    depth : int
        Number of layers (>= 0, ``(depth + 1) P^2 <= MAX_PROPAGATION_SIZE``; for tanh, sigmoid,
        softplus and swish also an estimated run time of a few seconds, e.g. depth <= 1167 at
        P = 8 positions and the default degree).
    shape : int or (int, int), optional
        Spatial shape.
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
    if _propagate_kernel(act.code, act.param, sw, sb, depth, z, w, cf, index, weight, out, logs):
        return None  # the general path retries with quadrature or raises
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
        Number of layers (>= 0, ``(depth + 1) P^2 <= MAX_PROPAGATION_SIZE``; for tanh, sigmoid,
        softplus and swish also an estimated run time of a few seconds, e.g. depth <= 1167 at
        P = 8 positions and the default degree).
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
    docs/performance.md).
    """
    fast = _fast_propagate_log(cov0, activation, sigma_w2, sigma_b2, v, depth, shape, degree)
    if fast is None:
        res, cov0 = _general_propagate_log(cov0, activation, sigma_w2, sigma_b2, v, depth, shape, degree)
    else:
        res, cov0 = fast
        out = finish(res.log_scale, res.normalized, cov0)  # unscale's products in one compiled call
        if out is not None:
            return out
    out = unscale(res, "conv.propagate")  # raises where a variance over- or underflows
    out[0] = cov0
    return out


# ----------------------------------------------------------------------------------------------
# Fourier structure.


def _ring(v, shape):
    """v placed on the periodic lattice: u[beta mod n] += v_beta."""
    u = np.zeros(shape)
    for beta, weight in _offsets(v):
        u[tuple(b % n for b, n in zip(beta, shape))] += weight
    return u


def fourier_eigenvalues(v: ArrayLike, shape: int | tuple[int, ...] | None) -> np.ndarray:
    r"""Eigenvalues :math:`\lambda_m = \sum_\beta v_\beta e^{2\pi i\, m\cdot\beta/n}` of :math:`\mathcal{A}_v\star`, one per Fourier mode.

    Mode ``m`` (an index in ``range(n)``, or a pair in 2-D) of every cyclic diagonal of a
    covariance is an eigenvector of :math:`\mathcal{A}_v\star` (see the module notes); the paper's
    :math:`\lambda_{\alpha,\alpha'} = \mathcal{F}(A_v)^*_{\alpha,\alpha'}` (eq. 2.11) are these values,
    each repeated n times.

    Parameters
    ----------
    v : array_like
        Variance vector, shape (2k+1,) or (2k1+1, 2k2+1).
    shape : int or (int, int)
        Spatial shape; offsets wrap around when the kernel is wider than the signal.

    Returns
    -------
    ndarray of complex, shape ``shape``
        ``conj(fftn(v on the ring))``; real when ``v`` is symmetric; ``lambda[0] = 1`` and
        ``|lambda| <= 1`` because ``v`` is a probability vector.
    """
    v = _check_v(v)
    shape = spatial_shape(shape)
    if len(shape) != v.ndim:
        raise ValueError(f"shape {shape} has {len(shape)} dimension(s) but v has {v.ndim}")
    return np.conj(np.fft.fftn(_ring(v, shape)))


def averaging_singular_values(v: ArrayLike, shape: int | tuple[int, ...] | None) -> np.ndarray:
    r"""Singular values of :math:`\mathcal{A}_v\star` in descending order (Xiao et al. 2018, Fig. 4b).

    :math:`\mathcal{A}_v\star` is a normal operator (a convex combination of commuting cyclic
    shifts), so its singular values are :math:`|\lambda_m|`; on P x P matrices each of the P values
    appears P times ("64 singular values, each with 64 copies" for 8 x 8 images).

    Parameters
    ----------
    v : array_like
        Variance vector, shape (2k+1,) or (2k1+1, 2k2+1).
    shape : int or (int, int)
        Spatial shape.

    Returns
    -------
    ndarray, shape (P,)
        ``|lambda_m|`` sorted in descending order, one per Fourier mode.
    """
    return np.sort(np.abs(fourier_eigenvalues(v, shape)).ravel())[::-1]


def gs_family(kernel_shape: tuple[int, ...] = (3, 3), count: int = 5) -> list[np.ndarray]:
    """The variance vectors GS0 ... GS{count-1} between the delta (GS0) and the uniform vector (last).

    ``GS_i = (1 - t_i) * delta + t_i * uniform`` with ``t_i = i / (count - 1)``. Xiao et al. 2018 (Sec. 3.3,
    Fig. 4) says only that GS1-GS3 "interpolate" between GS0 and GS4; linear interpolation is this
    library's choice.

    Parameters
    ----------
    kernel_shape : int or (int, int)
        Odd kernel size(s) ``2k+1``.
    count : int
        Number of vectors (``2 <= count <= MAX_GS_COUNT``).

    Returns
    -------
    list of ndarray, each of shape ``kernel_shape``
        Variance vectors (non-negative, summing to 1), GS0 first.
    """
    ks = _spatial_shape(kernel_shape, "kernel_shape")
    if any(s % 2 == 0 for s in ks):
        raise ValueError(f"kernel_shape must be odd (2k+1), got {ks}")
    count = check_int(count, "count", 2, MAX_GS_COUNT)
    delta = np.zeros(ks)
    delta[tuple(s // 2 for s in ks)] = 1.0
    uniform = np.full(ks, 1.0 / np.prod(ks))
    return [(1 - t) * delta + t * uniform for t in np.linspace(0.0, 1.0, count)]


def cyclic_diagonal_modes(cov: ArrayLike, shape: int | tuple[int, ...] | None = None) -> np.ndarray:
    r"""Fourier amplitudes of the cyclic diagonals :math:`e_d(\alpha) = \Sigma_{\alpha,\alpha+d}`.

    Parameters
    ----------
    cov : array_like, shape (..., P, P)
    shape : int or (int, int), optional
        Spatial shape (default: 1-D of size P).

    Returns
    -------
    ndarray of complex, shape ``(..., *shape, *shape)``
        ``out[..., d, m] = sum_a Sigma[a, a + d] exp(-2 pi i m a / n)`` (indices are pairs in 2-D).
        Under the linearised dynamics (eq. 2.11) each entry is multiplied by
        ``chi * lambda_m`` per layer.
    """
    cov = as_real_array(cov, "cov")
    if cov.ndim < 2 or cov.shape[-1] != cov.shape[-2]:
        raise ValueError(f"cov must have shape (..., P, P), got {cov.shape}")
    shape = spatial_shape(cov.shape[-1] if shape is None else shape)
    if int(np.prod(shape)) != cov.shape[-1]:
        raise ValueError(f"shape {shape} does not match {cov.shape[-1]} positions")
    lead = cov.shape[:-2]
    grids = np.meshgrid(*(np.arange(n) for n in shape), indexing="ij")
    a = np.ravel_multi_index(grids, shape)  # positions a, laid out on shape
    diags = np.empty(lead + shape + shape)
    for d in np.ndindex(*shape):
        b = np.ravel_multi_index(tuple((g + dd) % n for g, dd, n in zip(grids, d, shape)), shape)
        diags[(Ellipsis,) + d + (slice(None),) * len(shape)] = cov[..., a, b]
    axes = tuple(range(diags.ndim - len(shape), diags.ndim))
    return np.fft.fftn(diags, axes=axes)


# ----------------------------------------------------------------------------------------------
# Depth scales and linearised dynamics.


def _xi(x):
    # |chi| as in dense (chi_q < 0 for non-monotone q-maps such as cos, rbf)
    x = np.abs(np.asarray(x, dtype=np.float64))
    with np.errstate(divide="ignore"):
        xi = np.where(x < 1.0, -1.0 / np.log(np.where(x < 1.0, x, 0.5)), np.inf)
    return np.where(np.abs(x - 1.0) <= CRITICAL_ATOL, np.inf, xi)


@dataclass(frozen=True)
class ConvDepthScales:
    """Per-Fourier-mode depth scales of a deep CNN (Xiao et al. 2018, eqs. 2.11-2.12).

    Attributes
    ----------
    lambda_ : ndarray of complex, shape ``shape``
        Eigenvalues of :math:`\\mathcal{A}_v\\star` per Fourier mode (:func:`fourier_eigenvalues`).
    xi_c : ndarray, shape ``shape``
        Off-diagonal depth scales ``-1 / log(chi_c |lambda|)``; inf where ``chi_c |lambda| >= 1``
        (no exponential convergence), 0 where ``lambda = 0``.
    xi_q : ndarray, shape ``shape``
        Diagonal depth scales ``-1 / log(|chi_q| |lambda|)``, same conventions (``chi_q < 0`` for
        non-monotone q-maps: cos, rbf, as in :class:`meanfield.dense.FixedPoint`).
    fixed_point : meanfield.dense.FixedPoint
        q*, c*, chi_1, chi_c, chi_q of the dense network (identical for the CNN, Sec. 2.1.4).
    """

    lambda_: np.ndarray
    xi_c: np.ndarray
    xi_q: np.ndarray
    fixed_point: dense.FixedPoint

    def replace(self, **changes) -> ConvDepthScales:
        return replace(self, **changes)


def depth_scales(
    activation: str | Activation,
    sigma_w2: float,
    sigma_b2: float,
    v: ArrayLike,
    shape: int | tuple[int, ...] | None,
    degree: int = DEFAULT_DEGREE,
) -> ConvDepthScales:
    r"""Depth scales :math:`\xi_m = -1/\log(\chi_{c^*}|\lambda_m|)` of every Fourier mode (eqs. 2.9-2.12).

    The paper writes :math:`-1/\log(\chi_{c^*}\lambda)`; for a non-symmetric ``v`` the eigenvalue is
    complex (or negative for some symmetric ``v``) and the amplitude of the mode decays by
    :math:`|\chi\lambda|` per layer, so the modulus is used. The diagonal modes use
    :math:`\chi_{q^*}` in place of :math:`\chi_{c^*}`.

    Parameters
    ----------
    activation : str or Activation
    sigma_w2, sigma_b2 : float
        Weight and bias variances (>= 0).
    v : array_like
        Variance vector, shape (2k+1,) or (2k1+1, 2k2+1).
    shape : int or (int, int)
        Spatial shape.
    degree : int
        Gauss-Hermite degree for activations without closed forms.

    Returns
    -------
    ConvDepthScales
        ``xi_c``, ``xi_q`` of shape ``shape``; ``inf`` where ``chi |lambda| >= 1`` or within
        :data:`CRITICAL_ATOL` of 1 (no exponential convergence of that mode: e.g. every mode of a
        one-hot ``v`` at criticality, every mode with ``chi |lambda| > 1`` in the chaotic phase,
        where q* may be ``inf`` too, as for relu at ``sigma_w2 > 2``); 0 where ``lambda = 0`` or
        the chi is 0. These infinities are values, not errors; the chi's are those of
        :func:`meanfield.dense.fixed_point` (at q* = 0 ``chi_c`` is the c-map's slope 1, so the
        off-diagonal modes decay by the spatial averaging alone, ``|lambda_m|`` per layer).

    Raises
    ------
    ValueError
        Bad ``v`` or ``shape``; negative or non-finite variances; q* beyond the float64 range.
    TypeError
        Complex or boolean arguments; arrays for the variances.

    Examples
    --------
    >>> ds = depth_scales("relu", 2.0, 0.0, [0.0, 1.0, 0.0], 8)
    >>> bool(np.all(np.isinf(ds.xi_c)))
    True
    """
    lam = fourier_eigenvalues(v, shape)
    fp = dense.fixed_point(activation, sigma_w2, sigma_b2, degree)
    mod = np.abs(lam)
    with np.errstate(invalid="ignore"):  # chi = inf (exp at q* = inf): a mode with lambda = 0 still has xi = 0
        xi_c, xi_q = (_xi(np.where(mod == 0.0, 0.0, chi * mod)) for chi in (fp.chi_c, fp.chi_q))
    return ConvDepthScales(lambda_=lam, xi_c=xi_c, xi_q=xi_q, fixed_point=fp)


def _kappa(act, sigma_w2, q, c, degree):
    """kappa = sigma_w2 / 2 * E phi''(h1) phi(h2) at (q*, c*) (eq. S13) = sigma_w2 d/dq1 E phi(h1)phi(h2)."""
    if act.smooth:
        return 0.5 * sigma_w2 * float(pair_expectation(act, q, q, c, (2, 0), degree))
    # kinked: differentiate E phi(u1) phi(u2) in Var u1 at fixed Cov(u1, u2) = c q (central difference)
    h = KAPPA_STEP * max(q, 1e-300)
    vals = []
    for s in (+1.0, -1.0):
        q1 = q + s * h
        vals.append(float(pair_expectation(act, q1, q, min(1.0, c * q / math.sqrt(q1 * q)), (0, 0), degree)))
    return sigma_w2 * (vals[0] - vals[1]) / (2 * h)


@dataclass(frozen=True)
class LinearizedDecay:
    """A perturbation of the CNN fixed point propagated by the linearised map (eqs. 2.9-2.11).

    Attributes
    ----------
    eps : ndarray, shape (depth + 1, P, P)
        :math:`\\epsilon^l`, index 0 being the input perturbation.
    modes : ndarray of complex, shape ``(depth + 1, *shape, *shape)``
        :func:`cyclic_diagonal_modes` of ``eps``: ``modes[l, d, m]`` is the Fourier amplitude ``m``
        of cyclic diagonal ``d`` (Fig. S4 plots ``abs(modes[:, 1, :])``).
    lambda_ : ndarray of complex, shape ``shape``
    chi_c, chi_q, kappa : float
        The Jacobian of the C-map at :math:`\\Sigma^*` (Lemma B.2).
    q_star, c_star : float
    """

    eps: np.ndarray
    modes: np.ndarray
    lambda_: np.ndarray
    chi_c: float
    chi_q: float
    kappa: float
    q_star: float
    c_star: float

    def replace(self, **changes) -> LinearizedDecay:
        return replace(self, **changes)


def fixed_point_covariance(q_star: float, c_star: float, size: int) -> np.ndarray:
    """The spatially uniform fixed point :math:`\\Sigma^* = q^*(\\delta_{\\alpha\\alpha'} + (1 - \\delta_{\\alpha\\alpha'}) c^*)` (Xiao et al. 2018, eq. 2.6).

    Parameters
    ----------
    q_star : float
        Fixed-point variance ``q*`` (>= 0, finite), e.g. :attr:`meanfield.dense.FixedPoint.q_star`.
    c_star : float
        Fixed-point correlation ``c*`` in [-1, 1].
    size : int
        Number of positions P (``1 <= P <= MAX_COVARIANCE_POSITIONS``).

    Returns
    -------
    ndarray, shape (size, size)

    Raises
    ------
    ValueError
        ``q_star`` negative or not finite, ``|c_star| > 1``, ``size`` out of range.
    """
    q_star = check_nonnegative_scalar(q_star, "q_star")
    c_star = check_correlation(check_scalar(c_star, "c_star"), "c_star")
    size = check_int(size, "size", 1, MAX_COVARIANCE_POSITIONS)
    return q_star * (c_star + (1.0 - c_star) * np.eye(size))


def linearized_decay(
    eps0: ArrayLike,
    activation: str | Activation,
    sigma_w2: float,
    sigma_b2: float,
    v: ArrayLike,
    depth: int,
    shape: int | tuple[int, ...] | None = None,
    degree: int = DEFAULT_DEGREE,
) -> LinearizedDecay:
    r"""Perturbation :math:`\epsilon^l = \Sigma^* - \Sigma^l` predicted layer by layer by the linearised map (eq. 2.9).

    .. math:: \epsilon^{l+1} = \mathcal{A}_v\star J(\epsilon^l), \quad
        J(\epsilon)_{\alpha\alpha} = \chi_{q^*}\epsilon_{\alpha\alpha}, \quad
        J(\epsilon)_{\alpha\alpha'} = \chi_{c^*}\epsilon_{\alpha\alpha'} + \kappa(\epsilon_{\alpha\alpha} + \epsilon_{\alpha'\alpha'})

    (Lemma B.2 of the supplement, the Jacobian of the C-map at the fixed point). In Fourier space
    the off-diagonal modes obey eq. 2.11: ``modes[l, d, m] = (chi_c lambda_m)^l modes[0, d, m]``
    for ``d != 0`` when ``eps0`` has a zero diagonal (the Fig. S4 set-up).

    Parameters
    ----------
    eps0 : array_like, shape (P, P)
        Symmetric perturbation at layer 0.
    activation, sigma_w2, sigma_b2, v, shape, degree
        As in :func:`covariance_map`; the fixed point must be finite (q* < inf).
    depth : int
        Layers (>= 0).

    Returns
    -------
    LinearizedDecay
        ``chi_c`` is the off-diagonal factor used: the fixed point's chi_c, or chi_1 at q* = 0
        (where :math:`C(\Sigma) \approx \sigma_w^2\phi'(0)^2\Sigma`).

    Raises
    ------
    ValueError
        Bad arguments; q* infinite; q* = 0 with relu or leaky relu (not differentiable at 0).
    TypeError
        Complex or boolean arguments.
    """
    act = get_activation(activation)
    v = _check_v(v)
    eps0 = as_real_array(eps0, "eps0")
    if eps0.ndim != 2 or eps0.shape[0] != eps0.shape[1]:
        raise ValueError(f"eps0 must be a (P, P) matrix, got shape {eps0.shape}")
    if not np.allclose(eps0, eps0.T, rtol=1e-12, atol=1e-14):
        raise ValueError("eps0 must be symmetric")
    shape = _resolve_shape(v, shape, eps0.shape[0])
    depth = check_depth(depth, eps0.shape[0])
    fp = dense.fixed_point(act, sigma_w2, sigma_b2, degree)
    if not math.isfinite(fp.q_star):
        raise ValueError(
            "the fixed point q* is infinite at these parameters (activation, sigma_w2, sigma_b2): no linearisation exists"
        )
    if fp.q_star > 0:
        kappa = _kappa(act, sigma_w2, fp.q_star, fp.c_star, degree)
        chi_c = fp.chi_c
    else:
        # Sigma* = 0: C(Sigma) = sigma_w2 phi'(0)^2 Sigma + O(Sigma^2) for smooth phi with phi(0) = 0,
        # so every entry of a perturbation scales by chi_1 (the c-map slope 1 is a statement about
        # ratios). relu and leaky relu are homogeneous, not differentiable at 0.
        if act.is_builtin and act.code in (dense.RELU, dense.LEAKY_RELU) and act.param != 1.0:
            raise ValueError(
                f"q* = 0: the C-map of the positively homogeneous {act.name} is not differentiable at "
                "Sigma* = 0, so no linearisation exists (add a bias, sigma_b2 > 0)"
            )
        kappa = 0.0
        chi_c = fp.chi_1
    eps = np.empty((depth + 1,) + eps0.shape)
    eps[0] = eps0
    for layer in range(1, depth + 1):
        e = eps[layer - 1]
        diag = np.diag(e)
        j = chi_c * e + kappa * (diag[:, None] + diag[None, :])
        np.fill_diagonal(j, fp.chi_q * diag)
        eps[layer] = _average(j, v, shape, +1)
    return LinearizedDecay(
        eps=eps,
        modes=cyclic_diagonal_modes(eps, shape),
        lambda_=fourier_eigenvalues(v, shape),
        chi_c=chi_c,
        chi_q=fp.chi_q,
        kappa=kappa,
        q_star=fp.q_star,
        c_star=fp.c_star,
    )


# ----------------------------------------------------------------------------------------------
# Backward pass.


def backward_covariance_map(
    cov_grad: ArrayLike,
    cov: ArrayLike,
    activation: str | Activation,
    sigma_w2: float,
    v: ArrayLike,
    shape: int | tuple[int, ...] | None = None,
    degree: int = DEFAULT_DEGREE,
) -> np.ndarray:
    r"""Back-propagate the gradient covariance one layer (Xiao et al. 2018, eq. 2.15 and supplement A.1).

    .. math:: \tilde\Sigma^l_{\alpha\alpha'} = \Big[\sum_\beta v_\beta\,\tilde\Sigma^{l+1}_{\alpha-\beta,\alpha'-\beta}\Big]
        \cdot \sigma_w^2\,\mathbb{E}_{h\sim N(0,\Sigma^l)}\,\phi'(h_\alpha)\phi'(h_{\alpha'})

    with :math:`\delta^l_j(\alpha) = \partial E/\partial h^l_j(\alpha)`, under the
    gradient-independence assumption (backward weights independent of forward ones).

    Parameters
    ----------
    cov_grad : array_like, shape (P, P)
        :math:`\tilde\Sigma^{l+1}` (symmetric PSD).
    cov : array_like, shape (P, P)
        Forward pre-activation covariance :math:`\Sigma^l` of the layer the gradient arrives at.
    activation, sigma_w2, v, shape, degree
        As in :func:`covariance_map`.

    Returns
    -------
    ndarray, shape (P, P)
    """
    v = _check_v(v)
    cov_grad = check_covariance(cov_grad, "cov_grad", strict=True)
    cov = check_covariance(cov, "cov", strict=True)
    if cov_grad.shape != cov.shape:
        raise ValueError(f"cov_grad {cov_grad.shape} and cov {cov.shape} must have the same shape")
    shape = _resolve_shape(v, shape, cov.shape[-1])
    factor = dense.derivative_covariance_map(cov, activation, sigma_w2, degree)
    return _average(cov_grad, v, shape, -1) * factor


@dataclass(frozen=True)
class BackwardPropagation:
    r"""Forward covariances and back-propagated gradient statistics of a deep CNN.

    Attributes
    ----------
    cov : ndarray, shape (depth + 1, P, P)
        Forward pre-activation covariances :math:`\Sigma^l` (:func:`propagate`).
    cov_grad : ndarray, shape (depth + 1, P, P)
        :math:`\tilde\Sigma^l`, with ``cov_grad[depth]`` the given output-gradient covariance.
    grad_variance : ndarray, shape (depth + 1,)
        Mean gradient variance per position, ``trace(cov_grad[l]) / P``.
    weight_grad_sq : ndarray, shape (depth,)
        Entry ``l - 1`` (layer l = 1..depth, mapping l - 1 -> l) is
        :math:`\mathbb{E}\|\partial E/\partial\omega^l\|^2 / (c_{in} c_{out}) = \sum_\beta\sum_{\alpha\alpha'}
        \tilde\Sigma^l_{\alpha\alpha'}\,K^{l-1}_{\alpha+\beta,\alpha'+\beta}`, with
        :math:`K = \mathbb{E}\,\phi(h)\phi(h)^T` the post-activation covariance and the sum over all
        kernel offsets (Fig. S2's weight-gradient norm, per channel pair).
    """

    cov: np.ndarray
    cov_grad: np.ndarray
    grad_variance: np.ndarray
    weight_grad_sq: np.ndarray

    def replace(self, **changes) -> BackwardPropagation:
        return replace(self, **changes)


def gradient_variance_decay(
    cov0: ArrayLike,
    activation: str | Activation,
    sigma_w2: float,
    sigma_b2: float,
    v: ArrayLike,
    depth: int,
    cov_grad_out: ArrayLike | None = None,
    shape: int | tuple[int, ...] | None = None,
    degree: int = DEFAULT_DEGREE,
) -> BackwardPropagation:
    r"""Gradient statistics of a depth-``depth`` CNN by :func:`backward_covariance_map` (eq. 2.15-2.16).

    At the fixed point the diagonal obeys :math:`\tilde\Sigma^l_{\alpha\alpha} \approx \chi_1\sum_\beta v_\beta
    \tilde\Sigma^{l+1}_{\alpha-\beta,\alpha-\beta}`, so the gradient variance decays or grows like
    :math:`\chi_1^{L-l}` (eq. 2.16); this function iterates the exact map instead, including the
    transient before the fixed point is reached.

    Parameters
    ----------
    cov0 : array_like, shape (P, P)
        Layer-0 pre-activation covariance.
    activation, sigma_w2, sigma_b2, v, shape, degree
        As in :func:`covariance_map`.
    depth : int
        L, the number of layers (>= 1).
    cov_grad_out : array_like, shape (P, P), optional
        :math:`\tilde\Sigma^L`; default the identity (an output gradient with i.i.d. unit entries).

    Returns
    -------
    BackwardPropagation

    Raises
    ------
    ValueError
        Bad arguments; forward variances or gradient statistics beyond the float64 range
        (:func:`propagate` raises for the forward pass; use fewer layers or :func:`propagate_log`).
    TypeError
        Complex or boolean arguments; arrays for the variances.
    """
    act = get_activation(activation)
    v = _check_v(v)
    depth = check_int(depth, "depth", 1)
    cov = propagate(cov0, act, sigma_w2, sigma_b2, v, depth, shape, degree)
    p = cov.shape[-1]
    shape = _resolve_shape(v, shape, p)
    g = np.eye(p) if cov_grad_out is None else check_covariance(cov_grad_out, "cov_grad_out", strict=True)
    if g.shape != (p, p):
        raise ValueError(f"cov_grad_out must have shape {(p, p)}, got {g.shape}")
    factors = dense.derivative_covariance_map(cov, act, sigma_w2, degree)
    post = map_stack(cov, act, 0, 1.0, 0.0, degree)  # K^l = E phi phi^T
    grads = np.empty_like(cov)
    grads[depth] = g
    with np.errstate(over="ignore", invalid="ignore"):
        for layer in range(depth - 1, -1, -1):
            grads[layer] = _average(grads[layer + 1], v, shape, -1) * factors[layer]
    ones = np.ones_like(v)  # weight gradients sum over every kernel offset, unweighted
    k_sum = _average(post[:-1], ones / ones.size, shape, +1) * ones.size
    weight = np.einsum("lab,lab->l", grads[1:], k_sum)
    if not (np.all(np.isfinite(grads)) and np.all(np.isfinite(weight))):
        raise ValueError(
            "gradient_variance_decay: the back-propagated gradient covariance exceeds the float64 range "
            "(chi_1^depth overflows); reduce depth or sigma_w2"
        )
    return BackwardPropagation(
        cov=cov, cov_grad=grads, grad_variance=np.trace(grads, axis1=1, axis2=2) / p, weight_grad_sq=weight
    )


# ----------------------------------------------------------------------------------------------
# Several inputs at once (Xiao et al. 2018, footnote 3) and the eigenbases of the C-map's Jacobian
# (eq. 2.8, supplement Lemma B.2 / Theorem B.1).


def _multi_shape(cov, name):
    if cov.ndim < 4 or cov.shape[-4] != cov.shape[-2] or cov.shape[-3] != cov.shape[-1]:
        raise ValueError(f"{name} must have shape (..., D, P, D, P), got {cov.shape}")
    return cov.shape[-4], cov.shape[-3]


def multi_input_covariance_map(
    cov: ArrayLike,
    activation: str | Activation,
    sigma_w2: float,
    sigma_b2: float,
    v: ArrayLike,
    shape: int | tuple[int, ...] | None = None,
    degree: int = DEFAULT_DEGREE,
) -> np.ndarray:
    r"""One CNN layer for D inputs at once: the covariance over inputs x positions (Xiao et al. 2018, footnote 3).

    .. math:: \Sigma^{l+1}_{(a,\alpha),(b,\alpha')} = \sum_\beta v_\beta\,
        \mathcal{C}(\Sigma^l)_{(a,\alpha+\beta),(b,\alpha'+\beta)},

    the dense C-map on every pair of (input, position) and the averaging operator applied to every
    input pair's block (the same kernels act on all inputs, so the shift is common).

    Parameters
    ----------
    cov : array_like, shape (..., D, P, D, P)
        Joint covariance of a channel's pre-activations over D inputs and P positions (the
        ``(D P) x (D P)`` matrix, reshaped; symmetric PSD).
    activation : str or Activation
    sigma_w2, sigma_b2 : float
        Variances (>= 0).
    v : array_like
        Variance vector (see :func:`average`).
    shape : int or (int, int), optional
        Spatial shape (see :func:`average`).
    degree : int

    Returns
    -------
    ndarray, shape (..., D, P, D, P)
        The diagonal blocks ``out[..., a, :, a, :]`` equal :func:`covariance_map` of ``cov[..., a, :, a, :]``.

    Raises
    ------
    ValueError
        A shape other than (..., D, P, D, P), a matrix that is not symmetric PSD, bad variances or ``v``.
    TypeError
        Complex, boolean or non-numeric arguments.

    Notes
    -----
    Xiao et al. 2018, eqs. 2.3-2.5 with footnote 3. D = 1 reduces to :func:`covariance_map`.
    """
    v = _check_v(v)
    cov = as_real_array(cov, "cov")
    d, p = _multi_shape(cov, "cov")
    lead = cov.shape[:-4]
    flat = check_covariance(cov.reshape(lead + (d * p, d * p)), "cov", strict=True)
    shape = _resolve_shape(v, shape, p)
    mapped = dense.covariance_map(flat, activation, sigma_w2, sigma_b2, degree).reshape(lead + (d, p, d, p))
    blocks = np.swapaxes(mapped, -3, -2)  # (..., D, D, P, P)
    return np.swapaxes(_average(blocks, v, shape, +1), -3, -2)


def multi_input_propagate(
    cov0: ArrayLike,
    activation: str | Activation,
    sigma_w2: float,
    sigma_b2: float,
    v: ArrayLike,
    depth: int,
    shape: int | tuple[int, ...] | None = None,
    degree: int = DEFAULT_DEGREE,
) -> np.ndarray:
    r"""Iterate :func:`multi_input_covariance_map` ``depth`` times.

    Parameters
    ----------
    cov0 : array_like, shape (D, P, D, P)
    activation, sigma_w2, sigma_b2, v, shape, degree
        As :func:`multi_input_covariance_map`.
    depth : int
        Layers (0 to :data:`MAX_MULTI_INPUT_DEPTH`; each is a Python-level step of a few
        milliseconds; for tanh, sigmoid, softplus and swish also an estimated run time of a few
        seconds for the ``D P`` (input, position) pairs).

    Returns
    -------
    ndarray, shape (depth + 1, D, P, D, P)
        ``out[0] = cov0``.

    Raises
    ------
    ValueError, TypeError
        As :func:`multi_input_covariance_map`; ``depth`` out of range.
    """
    cov = as_real_array(cov0, "cov0")
    d, p = _multi_shape(cov, "cov0")
    if cov.ndim != 4:
        raise ValueError(f"cov0 must have shape (D, P, D, P), got {cov.shape}")
    check_covariance(cov.reshape(d * p, d * p), "cov0")
    depth = check_int(depth, "depth", 0, MAX_MULTI_INPUT_DEPTH)
    refuse_unbounded(cov.reshape(d * p, d * p), activation, depth, degree)
    out = np.empty((depth + 1, d, p, d, p))
    out[0] = cov
    for layer in range(depth):
        out[layer + 1] = cov = multi_input_covariance_map(cov, activation, sigma_w2, sigma_b2, v, shape, degree)
    return out


def multi_input_covariance(
    x: ArrayLike, sigma_w2: float, sigma_b2: float, v: ArrayLike, shape: int | tuple[int, ...] | None = None
) -> np.ndarray:
    r"""First-layer covariance over inputs x positions of a periodic CNN on D inputs.

    .. math:: \Sigma^1_{(a,\alpha),(b,\alpha')} = \frac{\sigma_w^2}{c_0}\sum_\beta v_\beta\,
        x_a(\alpha+\beta)\cdot x_b(\alpha'+\beta) + \sigma_b^2.

    Parameters
    ----------
    x : array_like, shape (D, P, c0)
        D inputs with P (flattened, row-major) positions and c0 channels.
    sigma_w2, sigma_b2 : float
        Variances (>= 0).
    v, shape
        As :func:`average`.

    Returns
    -------
    ndarray, shape (D, P, D, P)

    Raises
    ------
    ValueError, TypeError
        A wrong shape, non-finite values, bad variances or ``v``.
    """
    v = _check_v(v)
    x = as_real_array(x, "x")
    if x.ndim != 3 or min(x.shape) < 1:
        raise ValueError(f"x must have shape (D, P, c0) with every size >= 1, got {x.shape}")
    sigma_w2 = check_nonnegative_scalar(sigma_w2, "sigma_w2")
    sigma_b2 = check_nonnegative_scalar(sigma_b2, "sigma_b2")
    _, p, c0 = x.shape
    shape = _resolve_shape(v, shape, p)
    gram = np.einsum("aic,bjc->abij", x, x) / c0  # (D, D, P, P)
    out = sigma_w2 * _average(gram, v, shape, +1) + sigma_b2
    if not np.all(np.isfinite(out)):
        raise ValueError("the input covariance exceeds the float64 range (rescale x)")
    return np.swapaxes(out, 1, 2)


@dataclass(frozen=True)
class CMapEigenbasis(Result):
    r"""Eigenbases of the Jacobian J of the C-map at the fixed point :math:`\Sigma^*` (Lemma B.2, Thm. B.1).

    Attributes
    ----------
    diagonal : ndarray, shape (P, P, P)
        :math:`\tilde V_\alpha = V_{\alpha\alpha} + \frac{\kappa}{\chi_{q^*}-\chi_{c^*}}\sum_{\alpha'\ne\alpha}V_{\alpha\alpha'}`,
        eigenvalue :math:`\chi_{q^*}` (the basis of :math:`V_d`, eq. 2.8).
    off_diagonal : ndarray, shape (P (P - 1) / 2, P, P)
        :math:`V_{\alpha\alpha'}` (ones at (alpha, alpha') and (alpha', alpha)), alpha < alpha',
        eigenvalue :math:`\chi_{c^*}` (the basis of :math:`V_{o.d.}`).
    fourier : ndarray, shape (P, P, P), complex
        :math:`U_m = \sum_\alpha e^{2\pi i m\alpha/P}\tilde V_\alpha` (1-D positions): the basis of
        :math:`V_d` that also diagonalises the averaging operator (Thm. B.1's proof).
    chi_q, chi_c, kappa : float
        Eigenvalues and the coupling kappa of eq. S13.
    q_star, c_star : float
        The fixed point.
    """

    diagonal: np.ndarray
    off_diagonal: np.ndarray
    fourier: np.ndarray
    chi_q: float
    chi_c: float
    kappa: float
    q_star: float
    c_star: float


def cmap_jacobian(
    u: ArrayLike, activation: str | Activation, sigma_w2: float, sigma_b2: float, degree: int = DEFAULT_DEGREE
) -> np.ndarray:
    r"""The Jacobian of the C-map at the fixed point applied to symmetric matrices (Lemma B.2).

    .. math:: J(U)_{\alpha\alpha} = \chi_{q^*}U_{\alpha\alpha},\qquad
        J(U)_{\alpha\alpha'} = \chi_{c^*}U_{\alpha\alpha'} + \kappa\,(U_{\alpha\alpha} + U_{\alpha'\alpha'}).

    Parameters
    ----------
    u : array_like, shape (..., P, P)
        Symmetric matrices (a perturbation of :math:`\Sigma^*`).
    activation : str or Activation
        A built-in activation.
    sigma_w2, sigma_b2 : float
    degree : int

    Returns
    -------
    ndarray, shape (..., P, P)

    Raises
    ------
    ValueError
        ``u`` not square and symmetric, q* infinite, bad variances.
    TypeError
        Complex, boolean or non-numeric arguments.

    Notes
    -----
    Xiao et al. 2018, supplement B, eqs. S11-S13 (kappa by :func:`depth_scales`' rule).
    """
    u = as_real_array(u, "u")
    if u.ndim < 2 or u.shape[-1] != u.shape[-2]:
        raise ValueError(f"u must have shape (..., P, P), got {u.shape}")
    if u.size == 0:
        raise ValueError(f"u must be non-empty (P >= 1), got shape {u.shape}")
    if not np.allclose(u, np.swapaxes(u, -1, -2), rtol=1e-12, atol=1e-12 * max(float(np.max(np.abs(u))), 1e-300)):
        raise ValueError("u must be symmetric")
    chi_q, chi_c, kappa, _, _ = _jacobian_constants(activation, sigma_w2, sigma_b2, degree)
    diag = np.diagonal(u, axis1=-2, axis2=-1)
    out = chi_c * u + kappa * (diag[..., :, None] + diag[..., None, :])
    p = u.shape[-1]
    idx = np.arange(p)
    out[..., idx, idx] = chi_q * diag
    return out


def _jacobian_constants(activation, sigma_w2, sigma_b2, degree):
    act = get_activation(activation)
    fp = dense.fixed_point(act, sigma_w2, sigma_b2, degree)
    if not math.isfinite(fp.q_star):
        raise ValueError(
            "q* is infinite at these activation, sigma_w2, sigma_b2: the C-map has no finite fixed point to linearise"
        )
    kappa = _kappa(act, check_nonnegative_scalar(sigma_w2, "sigma_w2"), fp.q_star, fp.c_star, degree)
    return fp.chi_q, fp.chi_c, kappa, fp.q_star, fp.c_star


def cmap_jacobian_eigenbasis(
    activation: str | Activation, sigma_w2: float, sigma_b2: float, size: int, degree: int = DEFAULT_DEGREE
) -> CMapEigenbasis:
    r"""The eigenbases :math:`B_d` and :math:`B_{o.d.}` of eq. 2.8 in the form of Lemma B.2 / Thm. B.1.

    Parameters
    ----------
    activation : str or Activation
        A built-in activation.
    sigma_w2, sigma_b2 : float
        Variances (>= 0).
    size : int
        Number of positions P (1 to 256).
    degree : int

    Returns
    -------
    CMapEigenbasis

    Raises
    ------
    ValueError
        q* infinite; chi_q = chi_c with kappa != 0 (J is then not diagonalisable on V_d this way);
        bad arguments.
    TypeError
        Complex, boolean or non-numeric arguments.

    Notes
    -----
    Xiao et al. 2018, eq. 2.8 and supplement B (proof of Thm. B.1). The printed eq. 2.8 writes the diagonal
    basis as :math:`\gamma\delta_{\alpha\bar\alpha}\delta_{\alpha\bar\alpha'} + \delta_{\bar\alpha\alpha} + \delta_{\bar\alpha'\alpha}`
    with an unspecified gamma; the supplement's :math:`\tilde V_\alpha` is the same space up to
    normalisation: :math:`\tilde V_\alpha` divided by its off-diagonal coefficient
    :math:`\kappa/(\chi_{q^*}-\chi_{c^*})` is eq. 2.8's form with
    :math:`\gamma = (\chi_{q^*}-\chi_{c^*})/\kappa - 2` (the diagonal entry of eq. 2.8's matrix is
    gamma + 2).
    """
    size = check_int(size, "size", 1, 256)
    sigma_w2 = check_nonnegative_scalar(sigma_w2, "sigma_w2")
    chi_q, chi_c, kappa, q, c = _jacobian_constants(activation, sigma_w2, sigma_b2, degree)
    if abs(chi_q - chi_c) <= 1e-12 * max(abs(chi_q), 1e-300):
        if kappa != 0.0:
            raise ValueError(
                "chi_q = chi_c with kappa != 0 at these activation, sigma_w2, sigma_b2: the diagonal eigenbasis "
                "of Thm. B.1 does not exist"
            )
        coef = 0.0
    else:
        coef = kappa / (chi_q - chi_c)
    p = size
    eye = np.eye(p)
    diag = np.empty((p, p, p))
    for a in range(p):
        m = coef * (eye[a][:, None] + eye[a][None, :])
        m[a, a] = 1.0
        diag[a] = m
    iu = np.triu_indices(p, 1)
    off = np.zeros((iu[0].size, p, p))
    off[np.arange(iu[0].size), iu[0], iu[1]] = 1.0
    off[np.arange(iu[0].size), iu[1], iu[0]] = 1.0
    phase = np.exp(2j * np.pi * np.outer(np.arange(p), np.arange(p)) / p)  # (m, alpha)
    fourier = np.einsum("ma,aij->mij", phase, diag)
    return CMapEigenbasis(
        diagonal=diag,
        off_diagonal=off,
        fourier=fourier,
        chi_q=float(chi_q),
        chi_c=float(chi_c),
        kappa=float(kappa),
        q_star=float(q),
        c_star=float(c),
    )


# ----------------------------------------------------------------------------------------------
# The perturbation experiment of Xiao et al. 2018, App. F (Fig. S4).


def fig_s4_setup() -> dict:
    """The Fig. S4 experiment of Xiao et al. 2018 (App. F): parameters, Sigma^*, eps^0.

    A perturbation ``eps^0`` of the fixed-point covariance ``Sigma^*`` of erf CNNs whose Fourier
    modes decay with depth as the linearised map (eq. 2.12) predicts.

    Returns
    -------
    dict
        ``activation`` (``"erf"``), ``sigma_w2`` (= 1.5^2), ``sigma_b2`` (= 0.5^2), ``v``
        (``[0.025, 0.95, 0.025]``), ``n`` (10 positions), ``fixed_point`` (the dense fixed point),
        ``sigma_star`` (eq. 2.6) and ``eps0``: zero except the first cyclic diagonal
        ``eps0[a, a + 1] = eps0[a + 1, a] = d[a]``, whose DFT is
        ``-1/6 [1, r, r^3, r^5, r^4, r^2, r^4, r^5, r^3, r]`` with ``r = 2/3``.

    References
    ----------
    Xiao, Bahri, Sohl-Dickstein, Schoenholz, Pennington (2018), App. F and Fig. S4.
    """
    act, sw, sb, n = "erf", 1.5**2, 0.5**2, 10
    v = np.array([0.025, 0.95, 0.025])
    fp = dense.fixed_point(act, sw, sb)
    r = 2.0 / 3.0
    spectrum = -np.array([1, r, r**3, r**5, r**4, r**2, r**4, r**5, r**3, r]) / 6.0
    d = np.fft.ifft(spectrum).real  # the spectrum is real and symmetric: d is real
    eps0 = np.zeros((n, n))
    idx = np.arange(n)
    eps0[idx, (idx + 1) % n] = d
    eps0[(idx + 1) % n, idx] = d
    star = fixed_point_covariance(fp.q_star, fp.c_star, n)
    return {
        "activation": act,
        "sigma_w2": sw,
        "sigma_b2": sb,
        "v": v,
        "n": n,
        "sigma_star": star,
        "eps0": eps0,
        "fixed_point": fp,
    }


def fig_s4_theory(depth: int) -> tuple[np.ndarray, np.ndarray]:
    """(exact map, linearised map) Fourier amplitudes of the first cyclic diagonal, each (depth + 1, n).

    Parameters
    ----------
    depth : int
        Layers (>= 0) of the experiment of :func:`fig_s4_setup`.

    Returns
    -------
    exact, linearised : ndarray of complex, shape (depth + 1, n)
        The modes of ``Sigma^* - propagate(Sigma^* - eps^0)`` (:func:`propagate`) and of the
        linearised decay of ``eps^0`` (:func:`linearized_decay`, eq. 2.12 of Xiao et al. 2018).
    """
    s = fig_s4_setup()
    args = (s["activation"], s["sigma_w2"], s["sigma_b2"], s["v"], depth)
    exact = s["sigma_star"][None] - propagate(s["sigma_star"] - s["eps0"], *args)
    lin = linearized_decay(s["eps0"], *args)
    return cyclic_diagonal_modes(exact)[:, 1, :], lin.modes[:, 1, :]
