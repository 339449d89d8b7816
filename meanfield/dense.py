r"""Mean-field theory of deep fully-connected networks.

Network convention: :math:`h^{l+1} = W^{l+1}\phi(h^l) + b^{l+1}`, :math:`W_{ij} \sim N(0, \sigma_w^2/N_l)`,
:math:`b_i \sim N(0, \sigma_b^2)`; ``sigma_w2`` and ``sigma_b2`` are the *squared* scales. For
D inputs the pre-activation covariance :math:`\Sigma^l \in \mathbb{R}^{D\times D}` evolves, in the
infinite-width limit, by the C-map (Poole et al. 2016, eqs. 3-5; seed 003, eqs. 2.5-2.6)

.. math:: \Sigma^{l+1}_{ab} = \sigma_w^2\, \mathbb{E}_{h \sim N(0, \Sigma^l)}\,\phi(h_a)\phi(h_b) + \sigma_b^2 .

Code name ↔ symbol: ``q`` = :math:`q^l = \Sigma^l_{aa}` (pre-activation variance), ``c`` =
:math:`c^l_{ab} = \Sigma^l_{ab}/\sqrt{q_a q_b}`, ``q_star``/``c_star`` = :math:`q^*, c^*`,
``chi_1`` = :math:`\chi_1 = \sigma_w^2 \mathbb{E}\,\phi'(\sqrt{q^*}z)^2`, ``chi_c`` =
:math:`\chi_{c^*} = \sigma_w^2 \mathbb{E}\,\phi'(u_1)\phi'(u_2)` at :math:`(q^*, c^*)`, ``chi_q`` =
:math:`\chi_{q^*} = \sigma_w^2\,\partial_q \mathbb{E}\phi(\sqrt q z)^2|_{q^*}` (seed 003, eq. 2.7),
``xi_q``/``xi_c`` = :math:`\xi = -1/\log\chi` (Schoenholz et al. 2017, eqs. 6-9).

Fixed points are solved by safeguarded Newton iterations inside Numba kernels: q* on a bracket
found by doubling, c* by Newton from c = 0, which converges monotonically because the c-map is a
power series in c with non-negative coefficients (Mehler expansion), hence convex on [0, 1]
with :math:`c^* \in [0, 1]`.

References
----------
Poole, Lahiri, Raghu, Sohl-Dickstein, Ganguli (2016), "Exponential expressivity in deep neural
networks through transient chaos". Schoenholz, Gilmer, Ganguli, Sohl-Dickstein (2017), "Deep
information propagation". Xiao et al. (2018), seed 003, Sec. 2.1 and App. B.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numba
import numpy as np

from ._checks import as_float_array, check_correlation, check_covariance, check_int, check_nonnegative
from .activations import LEAKY_RELU, LINEAR, RELU, get_activation
from .gaussian import (
    DEFAULT_DEGREE,
    expectation,
    kernel_rule,
    pair_expectation,
    pair_value,
    single_value,
    variance_derivative_value,
)

__all__ = [
    "FixedPoint",
    "LogPropagation",
    "PhaseDiagram",
    "backward_variance",
    "cmap",
    "covariance_map",
    "critical_sigma_w2",
    "derivative_covariance_map",
    "fixed_point",
    "input_covariance",
    "phase_diagram",
    "propagate",
    "propagate_log",
    "qmap",
]

#: |chi_1 - 1| below which a point is called critical.
CRITICAL_ATOL = 1e-9
#: Relative tolerance of the fixed-point solvers (the map is satisfied to ~1e-15 relative).
SOLVER_RTOL = 4e-16
#: q above which the q* search declares divergence (q* = inf).
Q_INFINITY = 1e300
_HOMOGENEOUS = (LINEAR, RELU, LEAKY_RELU)


def _act(activation):
    act = get_activation(activation)
    return act


def _require_builtin(act, what):
    if not act.is_builtin:
        raise ValueError(
            f"{what} runs in compiled kernels and needs a built-in activation; "
            f"{act.name!r} is user-defined (use covariance_map / qmap / cmap, which accept it)"
        )


# ----------------------------------------------------------------------------------------------
# Maps.


def input_covariance(x, sigma_w2, sigma_b2) -> np.ndarray:
    r"""First-layer pre-activation covariance :math:`\Sigma^1 = \sigma_w^2 x x^T / n_0 + \sigma_b^2`.

    Parameters
    ----------
    x : array_like, shape (D, n0)
        D inputs of dimension n0.
    sigma_w2, sigma_b2 : float
        Weight and bias variances (>= 0).
    """
    x = as_float_array(x, "x")
    if x.ndim != 2 or x.shape[1] < 1:
        raise ValueError(f"x must have shape (D, n0) with n0 >= 1, got {x.shape}")
    sigma_w2 = check_nonnegative(sigma_w2, "sigma_w2")
    sigma_b2 = check_nonnegative(sigma_b2, "sigma_b2")
    return sigma_w2 * (x @ x.T) / x.shape[1] + sigma_b2


def qmap(q, activation, sigma_w2, sigma_b2, degree=DEFAULT_DEGREE):
    r"""The length map :math:`q^{l+1} = \sigma_w^2\,\mathbb{E}\,\phi(\sqrt{q^l} z)^2 + \sigma_b^2` (Poole et al. 2016, eq. 3).

    Parameters
    ----------
    q : float or array_like
        Pre-activation variances (>= 0).
    activation : str or Activation
    sigma_w2, sigma_b2 : float
        Variances (>= 0).

    Examples
    --------
    >>> qmap(1.0, "relu", 2.0, 0.0)
    1.0
    """
    sigma_w2 = check_nonnegative(sigma_w2, "sigma_w2")
    sigma_b2 = check_nonnegative(sigma_b2, "sigma_b2")
    return sigma_w2 * expectation(activation, q, (0, 0), degree) + sigma_b2


def cmap(c, activation, sigma_w2, sigma_b2, q=None, degree=DEFAULT_DEGREE):
    r"""The correlation map of two inputs of equal variance ``q`` (Poole et al. 2016, eq. 5).

    .. math:: c^{l+1} = \frac{\sigma_w^2\,\mathbb{E}\,\phi(u_1)\phi(u_2) + \sigma_b^2}{\sigma_w^2\,\mathbb{E}\,\phi(u)^2 + \sigma_b^2},
        \quad \mathrm{Var}\,u_i = q,\ \mathrm{corr}(u_1, u_2) = c^l .

    Parameters
    ----------
    c : float or array_like
        Correlations in [-1, 1].
    q : float, optional
        The common variance; ``None`` means the fixed point q* (where the map is the one iterated
        by deep networks).
    """
    act = _act(activation)
    sigma_w2 = check_nonnegative(sigma_w2, "sigma_w2")
    sigma_b2 = check_nonnegative(sigma_b2, "sigma_b2")
    c = check_correlation(c, "c")
    if q is None:
        q = fixed_point(act, sigma_w2, sigma_b2, degree=degree).q_star
        if not math.isfinite(q):
            if act.code not in _HOMOGENEOUS:
                raise ValueError("q* is infinite for these parameters; pass q explicitly")
            q = 1.0  # positively homogeneous: the correlation map does not depend on q (limit q -> inf)
            sigma_b2 = 0.0
    q = check_nonnegative(q, "q")
    num = sigma_w2 * pair_expectation(act, q, q, c, (0, 0), degree) + sigma_b2
    den = sigma_w2 * expectation(act, q, (0, 0), degree) + sigma_b2
    if den == 0.0:
        return np.ones_like(num) if np.ndim(num) else 1.0
    return num / den


@numba.njit(cache=True)
def _correlation(cov_ab, sa, sb):
    den = sa * sb
    if den == 0.0:
        return 0.0
    r = cov_ab / den
    return min(1.0, max(-1.0, r))


@numba.njit(cache=True)
def _cov_map_kernel(code, a, d, sw, sb, cov, z, w, out):
    """out[k] = sw * E phi^(d)(h_a) phi^(d)(h_b) (+ sb if d == 0) for a stack of covariances."""
    n_mat, dim = cov.shape[0], cov.shape[1]
    for m in range(n_mat):
        for i in range(dim):
            qi = max(cov[m, i, i], 0.0)
            out[m, i, i] = sw * single_value(code, a, d, d, qi, z, w) + (sb if d == 0 else 0.0)
            si = math.sqrt(qi)
            for j in range(i + 1, dim):
                qj = max(cov[m, j, j], 0.0)
                cij = _correlation(cov[m, i, j], si, math.sqrt(qj))
                v = sw * pair_value(code, a, d, d, qi, qj, cij, z, w) + (sb if d == 0 else 0.0)
                out[m, i, j] = v
                out[m, j, i] = v


def _map_stack(cov, act, d, sigma_w2, sigma_b2, degree):
    shape = cov.shape
    stack = np.ascontiguousarray(cov.reshape((-1,) + shape[-2:]))
    z, w = kernel_rule(degree)
    if act.is_builtin:
        out = np.empty_like(stack)
        _cov_map_kernel(act.code, act.param, d, sigma_w2, sigma_b2, stack, z, w, out)
    else:
        q = np.maximum(np.diagonal(stack, axis1=-2, axis2=-1), 0.0)
        s = np.sqrt(q)
        den = s[:, :, None] * s[:, None, :]
        c = np.where(den > 0, stack / np.where(den > 0, den, 1.0), 0.0).clip(-1.0, 1.0)
        qa = np.broadcast_to(q[:, :, None], stack.shape)
        qb = np.broadcast_to(q[:, None, :], stack.shape)
        out = sigma_w2 * pair_expectation(act, qa, qb, c, (d, d), degree) + (sigma_b2 if d == 0 else 0.0)
    if not np.all(np.isfinite(out)):
        raise FloatingPointError("covariance map overflowed (use propagate_log for deep expanding networks)")
    return out.reshape(shape)


def covariance_map(cov, activation, sigma_w2, sigma_b2, degree=DEFAULT_DEGREE) -> np.ndarray:
    r"""The C-map :math:`\Sigma \mapsto \sigma_w^2\,\mathbb{E}_{h\sim N(0,\Sigma)}\phi(h)\phi(h)^T + \sigma_b^2` (seed 003, eq. 2.5).

    Parameters
    ----------
    cov : array_like, shape (..., D, D)
        Symmetric positive semi-definite covariance(s) of D pre-activations.
    activation : str or Activation
    sigma_w2, sigma_b2 : float
        Variances (>= 0).
    degree : int
        Gauss-Hermite degree for activations without closed forms.

    Returns
    -------
    ndarray, shape (..., D, D)
        Positive semi-definite (it is a Gram matrix of phi(h) plus a constant).
    """
    act = _act(activation)
    cov = check_covariance(cov, "cov")
    sigma_w2 = check_nonnegative(sigma_w2, "sigma_w2")
    sigma_b2 = check_nonnegative(sigma_b2, "sigma_b2")
    return _map_stack(cov, act, 0, sigma_w2, sigma_b2, degree)


def derivative_covariance_map(cov, activation, sigma_w2, degree=DEFAULT_DEGREE) -> np.ndarray:
    r""":math:`\sigma_w^2\,\mathbb{E}_{h\sim N(0,\Sigma)}\phi'(h_a)\phi'(h_b)`: the factor of the backward (gradient) covariance map.

    Under the gradient-independence assumption (seed 003, supplement A.1), back-propagated
    signals obey :math:`\tilde\Sigma^l_{ab} = [\sigma_w^2 \mathbb{E}\phi'(h_a)\phi'(h_b)]\,\tilde\Sigma^{l+1}_{ab}` elementwise.
    """
    act = _act(activation)
    cov = check_covariance(cov, "cov")
    sigma_w2 = check_nonnegative(sigma_w2, "sigma_w2")
    return _map_stack(cov, act, 1, sigma_w2, 0.0, degree)


# ----------------------------------------------------------------------------------------------
# Propagation through depth, in a scaled representation that cannot overflow.


@dataclass(frozen=True)
class LogPropagation:
    """Covariances through depth as ``cov[l] = exp(log_scale[l]) * normalized[l]``.

    Attributes
    ----------
    log_scale : ndarray, shape (depth + 1,)
        Natural log of the largest variance at each layer (0 for non-homogeneous activations,
        whose covariances are stored unscaled).
    normalized : ndarray, shape (depth + 1, D, D)
        Covariance divided by ``exp(log_scale)``.
    """

    log_scale: np.ndarray
    normalized: np.ndarray

    @property
    def log_q(self) -> np.ndarray:
        """log of each input's variance, shape (depth + 1, D) (-inf where it is exactly 0)."""
        with np.errstate(divide="ignore"):
            return self.log_scale[:, None] + np.log(np.diagonal(self.normalized, axis1=1, axis2=2))

    @property
    def correlation(self) -> np.ndarray:
        """Correlation matrices, shape (depth + 1, D, D) (0 where a variance is 0)."""
        q = np.diagonal(self.normalized, axis1=1, axis2=2)
        s = np.sqrt(q)
        den = s[:, :, None] * s[:, None, :]
        return np.where(den > 0, self.normalized / np.where(den > 0, den, 1.0), 0.0).clip(-1.0, 1.0)

    def replace(self, **changes) -> "LogPropagation":
        return replace(self, **changes)


@numba.njit(cache=True)
def _propagate_kernel(code, a, homogeneous, sw, sb, k0, log0, depth, z, w, k_out, logs_out):
    """Iterate the C-map on (log-scale, normalised covariance); see propagate_log."""
    dim = k0.shape[0]
    k_out[0] = k0
    logs_out[0] = log0
    tmp = np.empty((dim, dim))
    log_sb = math.log(sb) if sb > 0.0 else -math.inf
    for layer in range(1, depth + 1):
        prev = k_out[layer - 1]
        if homogeneous and sb > 0.0:  # bias relative to the current scale; underflow to 0 is the right limit
            bias = math.exp(min(log_sb - logs_out[layer - 1], 700.0))
        else:
            bias = sb if not homogeneous else 0.0
        for i in range(dim):
            qi = max(prev[i, i], 0.0)
            tmp[i, i] = sw * single_value(code, a, 0, 0, qi, z, w) + bias
            si = math.sqrt(qi)
            for j in range(i + 1, dim):
                qj = max(prev[j, j], 0.0)
                cij = _correlation(prev[i, j], si, math.sqrt(qj))
                v = sw * pair_value(code, a, 0, 0, qi, qj, cij, z, w) + bias
                tmp[i, j] = v
                tmp[j, i] = v
        logs_out[layer] = logs_out[layer - 1] if homogeneous else 0.0
        if homogeneous:
            m = 0.0
            for i in range(dim):
                m = max(m, tmp[i, i])
            if m > 0.0:
                for i in range(dim):
                    for j in range(dim):
                        tmp[i, j] /= m
                logs_out[layer] += math.log(m)
        k_out[layer] = tmp


def _check_depth(depth):
    return check_int(depth, "depth", 0)


def propagate_log(cov0, activation, sigma_w2, sigma_b2, depth, degree=DEFAULT_DEGREE) -> LogPropagation:
    r"""Iterate the C-map ``depth`` times without overflow or underflow of the scale.

    For positively homogeneous activations (``linear``, ``relu``, ``leaky_relu``) the map satisfies
    :math:`C(s\Sigma) = s\,C(\Sigma)` up to the bias, so the covariance is carried as a log-scale
    and a normalised matrix: ReLU networks at ``sigma_w2 = 100`` and depth 10^4 (variance
    ~ 50^{10^4}) are represented exactly. Other activations are iterated unscaled (log_scale 0).

    Parameters
    ----------
    cov0 : array_like, shape (D, D)
        Input-layer pre-activation covariance (index 0).
    activation : str or Activation
        A built-in activation.
    sigma_w2, sigma_b2 : float
        Variances (>= 0).
    depth : int
        Number of layers (>= 0).

    Returns
    -------
    LogPropagation
    """
    act = _act(activation)
    _require_builtin(act, "propagate")
    cov0 = check_covariance(cov0, "cov0")
    if cov0.ndim != 2:
        raise ValueError(f"cov0 must be a single (D, D) matrix, got shape {cov0.shape}")
    sigma_w2 = check_nonnegative(sigma_w2, "sigma_w2")
    sigma_b2 = check_nonnegative(sigma_b2, "sigma_b2")
    depth = _check_depth(depth)
    homogeneous = act.code in _HOMOGENEOUS
    k0 = np.ascontiguousarray(cov0)
    log0 = 0.0
    if homogeneous:
        m = float(np.max(np.diagonal(k0)))
        if m > 0:
            k0, log0 = k0 / m, math.log(m)
    z, w = kernel_rule(degree)
    k_out = np.empty((depth + 1,) + k0.shape)
    logs = np.empty(depth + 1)
    _propagate_kernel(act.code, act.param, homogeneous, sigma_w2, sigma_b2, k0, log0, depth, z, w, k_out, logs)
    if not (np.all(np.isfinite(k_out)) and np.all(np.isfinite(logs))):
        raise FloatingPointError(f"propagation of {act.name} overflowed at these parameters")
    return LogPropagation(log_scale=logs, normalized=k_out)


def propagate(cov0, activation, sigma_w2, sigma_b2, depth, degree=DEFAULT_DEGREE) -> np.ndarray:
    r"""Covariances of D inputs through ``depth`` layers: :math:`\Sigma^{l+1} = C(\Sigma^l)`.

    Parameters
    ----------
    cov0 : array_like, shape (D, D)
        Pre-activation covariance at index 0 (e.g. :func:`input_covariance`).
    activation : str or Activation
        A built-in activation (the loop over layers runs in a compiled kernel).
    sigma_w2, sigma_b2 : float
        Variances (>= 0).
    depth : int
        Number of layers (>= 0).

    Returns
    -------
    ndarray, shape (depth + 1, D, D)
        Index 0 is ``cov0``.

    Raises
    ------
    OverflowError
        The covariances exceed the float64 range (expanding ReLU networks at large depth): use
        :func:`propagate_log`, which represents them exactly.

    Examples
    --------
    >>> import numpy as np
    >>> traj = propagate(np.eye(2), "erf", 1.5, 0.05, depth=50)
    >>> traj.shape
    (51, 2, 2)
    """
    res = propagate_log(cov0, activation, sigma_w2, sigma_b2, depth, degree)
    if np.max(res.log_scale) > 709.0:
        raise OverflowError(
            "covariances exceed the float64 range at this depth; use propagate_log, which keeps "
            "them as log-scale x normalised matrix"
        )
    return np.exp(res.log_scale)[:, None, None] * res.normalized


# ----------------------------------------------------------------------------------------------
# Fixed points, chi's and depth scales.


@numba.njit(cache=True)
def _g(code, a, sw, sb, q, z, w):
    """q-map residual g(q) = qmap(q) - q and its slope g'(q)."""
    val = sw * single_value(code, a, 0, 0, q, z, w) + sb - q
    slope = sw * variance_derivative_value(code, a, q, z, w) - 1.0
    return val, slope


@numba.njit(cache=True)
def _solve_q(code, a, sw, sb, z, w):
    """The stable fixed point q* of the q-map, or inf when q grows without bound."""
    g0, s0 = _g(code, a, sw, sb, 0.0, z, w)
    if g0 <= 0.0:
        if s0 <= 0.0:  # 0 is a stable fixed point (phi(0) = 0, sigma_b = 0, slope <= 1)
            return 0.0
        lo = 1e-12
        if _g(code, a, sw, sb, lo, z, w)[0] <= 0.0:
            return 0.0
    else:
        lo = 0.0
    hi = 1.0
    while _g(code, a, sw, sb, hi, z, w)[0] > 0.0:
        lo = hi
        hi *= 4.0
        if hi > 1e300:
            return math.inf
    x = hi
    for _ in range(200):
        val, slope = _g(code, a, sw, sb, x, z, w)
        if val > 0.0:
            lo = x
        else:
            hi = x
        step_ok = slope < 0.0
        nx = x - val / slope if slope != 0.0 else 0.5 * (lo + hi)
        if not step_ok or not (lo < nx < hi):
            nx = 0.5 * (lo + hi)
        if abs(nx - x) <= 4e-16 * max(abs(x), 1e-300) or hi - lo <= 4e-16 * hi:
            return nx
        x = nx
    return x


@numba.njit(cache=True)
def _solve_c(code, a, sw, sb, q, chi1, z, w, c0=0.0):
    """The stable fixed point c* of the c-map at q (1 in the ordered phase).

    The residual h(c) = (sw E phi(u1) phi(u2) + sb) / q - c is convex on [0, 1] with roots c* and
    1 (c = 1 is fixed because q = q*). Near the edge of chaos the two roots merge and Newton on h
    converges only linearly (hundreds of iterations), so the known root is divided out: the
    deflated residual H(c) = h(c) / (1 - c), with H(1) = 1 - chi_1, has c* as a simple root.
    Safeguarded Newton on H over the bracket [lo, hi], H(lo) >= 0 > H(hi), started at ``c0`` (a
    neighbouring grid point's c* in :func:`phase_diagram`; any c0 in [0, 1) is safe).

    Returns ``(c*, chi_c)``: Newton's last slope integral is ``chi_c`` at an iterate within 1e-15 of
    c*, which saves the 2-D integral of a separate evaluation (NaN where it is not available).
    """
    if chi1 <= 1.0 + 1e-12 or q == 0.0:
        return 1.0, chi1  # at c* = 1 the two arguments coincide: chi_c = chi_1
    lo = 0.0
    hi = 1.0
    c = c0 if 0.0 <= c0 < 1.0 else 0.0
    for _ in range(200):
        h = (sw * pair_value(code, a, 0, 0, q, q, c, z, w) + sb) / q - c
        if h == 0.0:
            return c, math.nan
        dh = sw * pair_value(code, a, 1, 1, q, q, c, z, w) - 1.0
        one_minus = 1.0 - c
        big_h = h / one_minus
        if big_h > 0.0:
            lo = c
        else:
            hi = c
        slope = (dh * one_minus + h) / (one_minus * one_minus)
        if slope < 0.0:
            nc = c - big_h / slope
            if abs(nc - c) <= 1e-15:  # converged; checked before the bracket test, which c itself may fail
                return nc, dh + 1.0
        if slope >= 0.0 or not (lo < nc < hi):
            nc = 0.5 * (lo + hi)
        if hi - lo <= 1e-15:
            return nc, dh + 1.0
        c = nc
    return c, math.nan


@numba.njit(cache=True)
def _fixed_point_values(code, a, homogeneous, sw, sb, z, w, out, c0=0.0):
    q = _solve_q(code, a, sw, sb, z, w)
    qe = q
    if math.isinf(q):
        qe = 1.0 if homogeneous else 1e12  # homogeneous: chi's do not depend on q; else large-q limit
    chi1 = sw * single_value(code, a, 1, 1, qe, z, w)
    if math.isinf(q) and homogeneous:
        c, chic = 1.0, chi1
    else:
        c, chic = _solve_c(code, a, sw, sb, qe, chi1, z, w, c0)
    if math.isnan(chic):
        chic = sw * pair_value(code, a, 1, 1, qe, qe, c, z, w)
    chiq = sw * variance_derivative_value(code, a, qe, z, w)
    out[0] = q
    out[1] = c
    out[2] = chi1
    out[3] = chic
    out[4] = chiq


@numba.njit(cache=True, parallel=True)
def _phase_kernel(code, a, homogeneous, sw_grid, sb_grid, z, w, out):
    # rows in parallel; along a row, c* is warm-started from the previous column's (Newton then
    # needs ~3 pair integrals instead of ~15 from c = 0)
    for i in numba.prange(sw_grid.size):
        c_prev = 0.0
        for j in range(sb_grid.size):
            _fixed_point_values(code, a, homogeneous, sw_grid[i], sb_grid[j], z, w, out[i, j], c_prev)
            c_prev = out[i, j, 1]


def _depth_scale(chi):
    chi = np.asarray(chi, dtype=np.float64)
    with np.errstate(divide="ignore"):
        xi = np.where(chi < 1.0, -1.0 / np.log(np.where(chi < 1.0, chi, 0.5)), np.inf)
    xi = np.where(np.abs(chi - 1.0) <= CRITICAL_ATOL, np.inf, xi)
    return xi if xi.ndim else float(xi)


def _phase(chi_1):
    if abs(chi_1 - 1.0) <= CRITICAL_ATOL:
        return "critical"
    return "ordered" if chi_1 < 1.0 else "chaotic"


@dataclass(frozen=True)
class FixedPoint:
    """The stable fixed point of the dense mean-field maps and its stability (seed 003, eq. 2.7).

    Attributes
    ----------
    q_star : float
        Fixed-point variance (inf when q grows without bound, e.g. ReLU with sigma_w2 > 2).
    c_star : float
        Fixed-point correlation (1 in the ordered phase).
    chi_1 : float
        sigma_w2 E phi'(sqrt(q*) z)^2: slope of the c-map at c = 1, mean squared singular value
        of the layer Jacobian, per-layer factor of gradient variance.
    chi_c : float
        sigma_w2 E phi'(u1) phi'(u2) at (q*, c*): slope of the c-map at c*.
    chi_q : float
        Slope of the q-map at q*.
    xi_q, xi_c : float
        Depth scales -1/log(chi_q), -1/log(chi_c); inf where the chi is >= 1 (no exponential
        convergence; at criticality the approach is power-law).
    phase : str
        'ordered' (chi_1 < 1), 'chaotic' (chi_1 > 1) or 'critical' (|chi_1 - 1| <= 1e-9).

    Notes
    -----
    For positively homogeneous activations with q* = inf the chi's are q-independent and are
    evaluated exactly; for other activations with q* = inf they are evaluated at q = 1e12.
    """

    q_star: float
    c_star: float
    chi_1: float
    chi_c: float
    chi_q: float
    xi_q: float
    xi_c: float
    phase: str

    def replace(self, **changes) -> "FixedPoint":
        return replace(self, **changes)


def fixed_point(activation, sigma_w2, sigma_b2, degree=DEFAULT_DEGREE) -> FixedPoint:
    """The stable fixed point (q*, c*), the chi's and depth scales of a deep dense network.

    Parameters
    ----------
    activation : str or Activation
        A built-in activation.
    sigma_w2, sigma_b2 : float
        Variances (>= 0).
    degree : int
        Gauss-Hermite degree for activations without closed forms.

    Returns
    -------
    FixedPoint

    Examples
    --------
    >>> fp = fixed_point("relu", 2.0, 0.0)
    >>> fp.phase, fp.chi_1
    ('critical', 1.0)
    """
    act = _act(activation)
    _require_builtin(act, "fixed_point")
    sigma_w2 = check_nonnegative(sigma_w2, "sigma_w2")
    sigma_b2 = check_nonnegative(sigma_b2, "sigma_b2")
    z, w = kernel_rule(degree)
    out = np.empty(5)
    # the serial kernel: a one-point call to the parallel grid kernel pays a thread-pool launch
    _fixed_point_values(act.code, act.param, act.code in _HOMOGENEOUS, sigma_w2, sigma_b2, z, w, out)
    q, c, chi1, chic, chiq = (float(v) for v in out)
    return FixedPoint(
        q_star=q,
        c_star=c,
        chi_1=chi1,
        chi_c=chic,
        chi_q=chiq,
        xi_q=_depth_scale(chiq),
        xi_c=_depth_scale(chic),
        phase=_phase(chi1),
    )


@dataclass(frozen=True)
class PhaseDiagram:
    """Fixed-point quantities on a (sigma_w2, sigma_b2) grid; arrays of shape (len(sigma_w2), len(sigma_b2)).

    Attributes
    ----------
    sigma_w2, sigma_b2 : ndarray
        The 1-D grids.
    q_star, c_star, chi_1, chi_c, xi_c : ndarray
        As in :class:`FixedPoint`.
    """

    sigma_w2: np.ndarray
    sigma_b2: np.ndarray
    q_star: np.ndarray
    c_star: np.ndarray
    chi_1: np.ndarray
    chi_c: np.ndarray
    xi_c: np.ndarray

    def replace(self, **changes) -> "PhaseDiagram":
        return replace(self, **changes)


def phase_diagram(activation, sigma_w2, sigma_b2, degree=DEFAULT_DEGREE) -> PhaseDiagram:
    """The order-to-chaos phase diagram (Poole et al. 2016 Fig. 2; seed 003 Fig. S1), vectorised.

    Parameters
    ----------
    activation : str or Activation
        A built-in activation.
    sigma_w2, sigma_b2 : array_like, 1-D
        Grids of variances (>= 0).

    Returns
    -------
    PhaseDiagram
        The critical line is the level set ``chi_1 == 1``.
    """
    act = _act(activation)
    _require_builtin(act, "phase_diagram")
    sw = np.atleast_1d(check_nonnegative(sigma_w2, "sigma_w2")).astype(np.float64)
    sb = np.atleast_1d(check_nonnegative(sigma_b2, "sigma_b2")).astype(np.float64)
    if sw.ndim != 1 or sb.ndim != 1:
        raise ValueError("sigma_w2 and sigma_b2 must be 1-D grids")
    z, w = kernel_rule(degree)
    out = np.empty((sw.size, sb.size, 5))
    _phase_kernel(act.code, act.param, act.code in _HOMOGENEOUS, sw, sb, z, w, out)
    return PhaseDiagram(
        sigma_w2=sw,
        sigma_b2=sb,
        q_star=out[..., 0],
        c_star=out[..., 1],
        chi_1=out[..., 2],
        chi_c=out[..., 3],
        xi_c=_depth_scale(out[..., 3]),
    )


def critical_sigma_w2(activation, sigma_b2, degree=DEFAULT_DEGREE, bracket=(1e-6, 100.0)):
    """The edge of chaos: the sigma_w2 at which chi_1 = 1, for each sigma_b2.

    Solved with Brent's method on chi_1(sigma_w2) - 1 (chi_1 increases with sigma_w2).

    Parameters
    ----------
    activation : str or Activation
    sigma_b2 : float or array_like
        Bias variances (>= 0).
    bracket : (float, float)
        Search interval for sigma_w2. Above sigma_w2 ~ 100 the fixed-point variance of bounded
        activations exceeds ~100 and Gauss-Hermite quadrature at the default degree no longer
        resolves phi' (see :mod:`meanfield.gaussian`); widen the bracket only with a higher degree.

    Returns
    -------
    float or ndarray like ``sigma_b2``; NaN never: raises ValueError when no crossing lies in ``bracket``.

    Examples
    --------
    >>> round(critical_sigma_w2("relu", 0.0), 12)
    2.0
    """
    from scipy.optimize import brentq

    act = _act(activation)
    _require_builtin(act, "critical_sigma_w2")
    sb = check_nonnegative(sigma_b2, "sigma_b2")
    lo, hi = (float(b) for b in bracket)
    if not 0 <= lo < hi:
        raise ValueError(f"bracket must satisfy 0 <= lo < hi, got {bracket}")

    def f(sw, b):
        return fixed_point(act, sw, b, degree).chi_1 - 1.0

    def solve(b):
        flo, fhi = f(lo, b), f(hi, b)
        if flo * fhi > 0:
            raise ValueError(f"chi_1 = 1 is not crossed for sigma_w2 in {bracket} at sigma_b2 = {b}")
        return brentq(f, lo, hi, args=(b,), xtol=1e-14, rtol=1e-15)

    if np.ndim(sb) == 0:
        return solve(float(sb))
    return np.vectorize(solve)(sb)


# ----------------------------------------------------------------------------------------------
# Backward (gradient) variance.


def backward_variance(activation, sigma_w2, sigma_b2, depth, q0, log=False, degree=DEFAULT_DEGREE):
    r"""Mean-field ratio of gradient variance at layer l to that at the last layer L = ``depth``.

    With :math:`\delta^l = \partial E / \partial h^l` and the gradient-independence assumption,
    :math:`\mathbb{E}(\delta^l)^2 = \sigma_w^2\,\mathbb{E}\,\phi'(h^l)^2\;\mathbb{E}(\delta^{l+1})^2`
    (Schoenholz et al. 2017, eq. 14; seed 003 eq. 2.16), so

    .. math:: \frac{\tilde q^l}{\tilde q^L} = \prod_{k=l}^{L-1} \sigma_w^2\,\mathbb{E}\,\phi'(\sqrt{q^k}z)^2
        \;\to\; \chi_1^{L-l} \text{ at the fixed point.}

    Parameters
    ----------
    activation : str or Activation
    sigma_w2, sigma_b2 : float
        Variances (>= 0).
    depth : int
        L, the number of layers (>= 1).
    q0 : float
        Pre-activation variance of layer 1 (>= 0); ``q^{l+1} = qmap(q^l)``.
    log : bool
        Return the natural log of the ratio (never overflows).

    Returns
    -------
    ndarray, shape (depth,)
        Entry l - 1 is the ratio for layer l = 1..L (the last entry is 1, or 0 with ``log``).
    """
    act = _act(activation)
    depth = check_int(depth, "depth", 1)
    q0 = check_nonnegative(q0, "q0")
    sigma_w2 = check_nonnegative(sigma_w2, "sigma_w2")
    sigma_b2 = check_nonnegative(sigma_b2, "sigma_b2")
    traj = propagate_log(np.array([[q0]]), act, sigma_w2, sigma_b2, depth - 1, degree)
    log_q = traj.log_q[:, 0]
    with np.errstate(over="ignore"):
        q = np.exp(log_q)
    if act.code in _HOMOGENEOUS:
        per_layer = sigma_w2 * expectation(act, np.ones_like(q), (1, 1), degree)
    else:
        per_layer = sigma_w2 * expectation(act, q, (1, 1), degree)
    with np.errstate(divide="ignore"):
        logs = np.log(per_layer)
    # suffix sums: log ratio at l = sum_{k=l}^{L-1} log chi(q^k)
    log_ratio = np.concatenate([np.cumsum(logs[:-1][::-1])[::-1], [0.0]])
    if log:
        return log_ratio
    with np.errstate(over="ignore"):
        ratio = np.exp(log_ratio)
    if not np.all(np.isfinite(ratio)):
        raise OverflowError("gradient-variance ratio exceeds the float64 range: pass log=True")
    return ratio
