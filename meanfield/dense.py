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


@numba.njit(inline="always")
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
