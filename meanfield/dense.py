r"""Mean-field theory of deep fully-connected networks.

Network convention: :math:`h^{l+1} = W^{l+1}\phi(h^l) + b^{l+1}`, :math:`W_{ij} \sim N(0, \sigma_w^2/N_l)`,
:math:`b_i \sim N(0, \sigma_b^2)`; ``sigma_w2`` and ``sigma_b2`` are the *squared* scales. For
D inputs the pre-activation covariance :math:`\Sigma^l \in \mathbb{R}^{D\times D}` evolves, in the
infinite-width limit, by the C-map (Poole et al. 2016, eqs. 3-5; Xiao et al. 2018, eqs. 2.5-2.6)

.. math:: \Sigma^{l+1}_{ab} = \sigma_w^2\, \mathbb{E}_{h \sim N(0, \Sigma^l)}\,\phi(h_a)\phi(h_b) + \sigma_b^2 .

Code name ↔ symbol: ``q`` = :math:`q^l = \Sigma^l_{aa}` (pre-activation variance), ``c`` =
:math:`c^l_{ab} = \Sigma^l_{ab}/\sqrt{q_a q_b}`, ``q_star``/``c_star`` = :math:`q^*, c^*`,
``chi_1`` = :math:`\chi_1 = \sigma_w^2 \mathbb{E}\,\phi'(\sqrt{q^*}z)^2`, ``chi_c`` =
:math:`\chi_{c^*} = \sigma_w^2 \mathbb{E}\,\phi'(u_1)\phi'(u_2)` at :math:`(q^*, c^*)` (the slope of
the c-map at c*), ``chi_q`` = :math:`\chi_{q^*} = \sigma_w^2\,\partial_q \mathbb{E}\phi(\sqrt q z)^2|_{q^*}`
(Xiao et al. 2018, eq. 2.7), ``xi_q``/``xi_c`` = :math:`\xi = -1/\log\chi` (Schoenholz et al. 2017, eqs. 6-9).

q*. The stable fixed point reached from small input variances: the smallest root of
:math:`g(q) = \mathrm{qmap}(q) - q` at which g changes sign from + to - (q = 0 itself when
:math:`\phi(0) = 0`, :math:`\sigma_b^2 = 0` and the slope :math:`\sigma_w^2\phi'(0)^2 < 1`). It is
found by scanning q geometrically (factor 2) from the lower bound qmap(0) with a check for a
dip of g between scan points, then safeguarded Newton. Divergence is decided by the
asymptotic slope of the q-map, :math:`\mathrm{qmap}(q)/q \to \sigma_w^2 m_\infty` with
:math:`m_\infty = \lim E\phi(\sqrt q z)^2/q = (a^2 + b^2)/2`, a and b the slopes of the
asymptote below (1/2 for relu, softplus, swish, gelu and elu, which differ from relu by a term
decaying at infinity; 0 for bounded activations): when
:math:`\sigma_w^2 m_\infty > 1` and g is still positive and increasing at q = Q_ASYMPTOTIC, q* is
infinite. Every loop has an iteration cap.

The edges. q* = inf (activations growing linearly, in the chaotic phase): the chi's are those
of the asymptote :math:`\phi(x) \sim a x` (x > 0), :math:`b x` (x < 0) of
:func:`meanfield.activations.asymptote` (:math:`\chi_1 = \chi_{c^*} = \sigma_w^2 (a^2 + b^2)/2`:
:math:`\sigma_w^2/2` for relu, softplus, swish, gelu and elu, :math:`\sigma_w^2\lambda^2/2`
for selu, :math:`\sigma_w^2` for abs; :math:`\chi_{q^*} = \sigma_w^2 m_\infty`), c* = 1, and
the c-map is the q-independent normalised map of the asymptote. q* = 0 (:math:`\sigma_b^2 = 0`, :math:`\phi(0) = 0`, ordered):
the c-map is the q -> 0 limit: q-independent (the normalised kernel map) for positively
homogeneous activations, whose fixed point c* = 1 has slope 1 (correlations converge to 1 only
polynomially), and the identity :math:`c \mapsto c` for smooth activations
(:math:`\phi(u) \approx \phi'(0) u`), whose correlations freeze at an input-dependent value
(``FixedPoint.c_frozen``). In both cases ``chi_c`` reports the c-map's slope, 1, and
``xi_c = inf``; ``chi_1 = chi_q = sigma_w2 phi'(0)^2``.

c* is solved by Newton from c = 0 on the deflated residual, which converges monotonically
because the c-map is a power series in c with non-negative coefficients (Mehler expansion),
hence convex on [0, 1] with :math:`c^* \in [0, 1]`.

References
----------
Poole, Lahiri, Raghu, Sohl-Dickstein, Ganguli (2016), "Exponential expressivity in deep neural
networks through transient chaos". Schoenholz, Gilmer, Ganguli, Sohl-Dickstein (2017), "Deep
information propagation". Xiao et al. (2018), Xiao et al. 2018, Sec. 2.1 and App. B.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numba
import numpy as np
from numpy.typing import ArrayLike

from ._checks import (
    as_real_array,
    check_bool,
    check_correlation,
    check_covariance,
    check_int,
    check_nonnegative,
    check_nonnegative_scalar,
    check_scalar,
)
from ._fastpath import fast_start, finish, trajectory_ok
from ._logscale import (
    CLOSED_C_MAP,
    HOMOGENEOUS,
    LOG_DBL_MAX,
    LOG_DBL_MIN,
    MAX_DEPTH,
    MAX_PROPAGATION_SIZE,  # noqa: F401  (re-exported: a documented constant of dense)
    Q_ASYMPTOTE_ABOVE,
    Q_LINEAR_BELOW,
    QUADRATURE_C_MAP,
    RELU_LIKE,
    check_depth,
    check_quadrature_work,
    finite_result,
    full_rule,
    kernel_rule_for,
    map_stack,
    normalised_start,
    propagate_kernel,
    refuse_unbounded,
    unscale,
)
from ._tanh_fused import tanh_pair_moments, tanh_variance_moments
from .activations import (
    COS,
    GELU,
    LEAKY_RELU,
    LINEAR,
    RELU,
    SIN,
    SOFTPLUS,
    SWISH,
    TANH,
    asymptote_activation,
    asymptotic_derivative_moment,
    asymptotic_slope,
    bound_squared,
    call_user,
    evaluate_call,
    get_activation,
    origin_activation,
    origin_slopes,
)
from .gaussian import (
    DEFAULT_DEGREE,
    closed_flag,
    closed_pair_by,
    closed_single_by,
    closed_variance_derivative_by,
    excess_value,
    expectation,
    kernel_rule,
    pair_expectation,
    pair_quadrature,
    run_time_orders,
    single_quadrature,
    variance_derivative_quadrature,
)

if TYPE_CHECKING:  # annotations only
    from .activations import Activation

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
#: q from which the asymptotic slope of the q-map decides divergence (q* = inf): the ReLU-like
#: activations differ from their asymptote's second moment by O(q^{-1/2}) relative there.
Q_ASYMPTOTIC = 1e6
#: Largest q the q* scan visits by doubling; a q-map still above the diagonal there has q* = inf
#: when its asymptotic slope is >= 1, q* in [Q_SCAN_MAX, sigma_w2 + sigma_b2] for bounded
#: activations, and q* beyond the float64 range otherwise (a ValueError).
Q_SCAN_MAX = 1e307
#: Kept for compatibility: q above which q* counts as infinite.
Q_INFINITY = 1e300
#: Probe of the sign of g just above q = 0 when the slope there is exactly 1 (power-law regime).
_Q_PROBE = 1e-3
#: First scan point when q = 0 is an unstable fixed point.
_Q_START_UNSTABLE = 1e-6
_HOMOGENEOUS = HOMOGENEOUS  # the name phase_diagram uses


def _act(activation):
    return get_activation(activation)


def _require_builtin(act, what):
    if not act.is_builtin:
        raise ValueError(
            f"{what} runs in compiled kernels and needs a built-in activation; "
            f"{act.name!r} is user-defined (use covariance_map / qmap / cmap, which accept it)"
        )


def _variances(sigma_w2, sigma_b2):
    return check_nonnegative_scalar(sigma_w2, "sigma_w2"), check_nonnegative_scalar(sigma_b2, "sigma_b2")


# ----------------------------------------------------------------------------------------------
# Maps.


def input_covariance(x: ArrayLike, sigma_w2: float, sigma_b2: float) -> np.ndarray:
    r"""First-layer pre-activation covariance :math:`\Sigma^1 = \sigma_w^2 x x^T / n_0 + \sigma_b^2`.

    Parameters
    ----------
    x : array_like, shape (D, n0)
        D inputs of dimension n0 (D, n0 >= 1).
    sigma_w2, sigma_b2 : float
        Weight and bias variances (>= 0).

    Returns
    -------
    ndarray, shape (D, D)

    Raises
    ------
    ValueError
        Wrong shape, negative or non-finite values, or a covariance beyond the float64 range
        (rescale ``x``; the maps of homogeneous activations are scale-covariant).
    TypeError
        Complex, boolean or non-numeric arguments, arrays for the variances.
    """
    x = as_real_array(x, "x")
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(f"x must have shape (D, n0) with D, n0 >= 1, got {x.shape}")
    sigma_w2, sigma_b2 = _variances(sigma_w2, sigma_b2)
    top = float(np.max(np.abs(x)))
    if sigma_w2 == 0.0 or top == 0.0:
        return np.full((x.shape[0], x.shape[0]), sigma_b2)
    e = math.frexp(top)[1]  # x / 2^e is exact, and sigma_w2 4^e is exact unless it overflows
    xs = np.ldexp(x, -e)
    gram = (xs @ xs.T) / x.shape[1]
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.ldexp(sigma_w2, 2 * e) * gram + sigma_b2 if 2 * e < 2000 else np.full(gram.shape, np.inf)
    if not np.all(np.isfinite(out)):
        raise ValueError(
            "input_covariance exceeds the float64 range: rescale x (sigma_w2 |x|^2 / n0 must stay below ~1e308)"
        )
    diag = np.diagonal(gram)
    with np.errstate(divide="ignore"):
        log_var = math.log(sigma_w2) + 2 * e * math.log(2.0) + np.log(diag)
    if sigma_b2 == 0.0 and np.any((diag > 0) & (log_var < LOG_DBL_MIN)):
        raise ValueError(
            "input_covariance falls below the smallest normal float64 (underflow): rescale x (the maps of "
            "homogeneous activations are scale-covariant) or pass sigma_b2 > 0"
        )
    return out


def qmap(
    q: float | ArrayLike, activation: str | Activation, sigma_w2: float, sigma_b2: float, degree: int = DEFAULT_DEGREE
) -> float | np.ndarray:
    r"""The length map :math:`q^{l+1} = \sigma_w^2\,\mathbb{E}\,\phi(\sqrt{q^l} z)^2 + \sigma_b^2` (Poole et al. 2016, eq. 3).

    Parameters
    ----------
    q : float or array_like
        Pre-activation variances (>= 0, finite).
    activation : str or Activation
    sigma_w2, sigma_b2 : float
        Variances (>= 0), scalars.
    degree : int
        Gauss-Hermite degree for activations without closed forms.

    Returns
    -------
    float or ndarray shaped like ``q``.

    Raises
    ------
    ValueError
        Negative or non-finite arguments; a result beyond the float64 range.
    TypeError
        Complex or boolean arguments; arrays for ``sigma_w2``/``sigma_b2``.

    Examples
    --------
    >>> qmap(1.0, "relu", 2.0, 0.0)
    1.0
    """
    sigma_w2, sigma_b2 = _variances(sigma_w2, sigma_b2)
    with np.errstate(over="ignore"):
        out = sigma_w2 * expectation(activation, q, (0, 0), degree) + sigma_b2
    return finite_result(out, "qmap")


def _limit_cmap(act, c, sigma_w2, where):
    """The c-map in the limit q -> 0 (``where == 0``) or q -> inf (``where == inf``) with sigma_b2 = 0."""
    if sigma_w2 == 0.0:
        return np.ones_like(c) if np.ndim(c) else 1.0
    if act.is_builtin and (act.code in HOMOGENEOUS or (where > 0 and act.code in RELU_LIKE)):
        # q-independent normalised kernel map of the activation (or of its asymptote relu)
        base = act if act.code in HOMOGENEOUS else get_activation("relu")
        return pair_expectation(base, 1.0, 1.0, c) / expectation(base, 1.0)
    if act.is_builtin and where > 0:
        # the normalised kernel map of the piecewise-linear asymptote (activations.asymptote)
        base = asymptote_activation(act)[1]
        return pair_expectation(base, 1.0, 1.0, c) / expectation(base, 1.0)
    if where == 0 and act.is_builtin:
        a0, b0 = origin_slopes(act.code, act.param)
        if a0 != b0:  # kinked at 0 (abs, elu, selu): the normalised map of phi's piecewise-linear germ
            base = origin_activation(act)[1]
            return pair_expectation(base, 1.0, 1.0, c) / expectation(base, 1.0)
        return c  # phi(u) ~ phi'(0) u: the linear map, correlations freeze
    raise ValueError(
        f"the c-map of the user-defined activation {act.name!r} at q = {where} is 0/0 "
        "(phi(0) = 0, sigma_b2 = 0) and its limit is not determined: pass q > 0"
    )


def cmap(
    c: float | ArrayLike,
    activation: str | Activation,
    sigma_w2: float,
    sigma_b2: float,
    q: float | ArrayLike | None = None,
    degree: int = DEFAULT_DEGREE,
) -> float | np.ndarray:
    r"""The correlation map of two inputs of equal variance ``q`` (Poole et al. 2016, eq. 5).

    .. math:: c^{l+1} = \frac{\sigma_w^2\,\mathbb{E}\,\phi(u_1)\phi(u_2) + \sigma_b^2}{\sigma_w^2\,\mathbb{E}\,\phi(u)^2 + \sigma_b^2},
        \quad \mathrm{Var}\,u_i = q,\ \mathrm{corr}(u_1, u_2) = c^l .

    Parameters
    ----------
    c : float or array_like
        Correlations in [-1, 1].
    activation : str or Activation
    sigma_w2, sigma_b2 : float
        Variances (>= 0), scalars.
    q : float, optional
        The common variance (>= 0, finite); ``None`` means the fixed point q* (where the map is
        the one iterated by deep networks; a built-in activation is then required).
    degree : int
        Gauss-Hermite degree for activations without closed forms.

    Returns
    -------
    float or ndarray shaped like ``c``

    Raises
    ------
    ValueError
        Bad arguments; a user-defined activation at q = 0 with a 0/0 map; q = None with a
        user-defined activation.
    TypeError
        Complex or boolean arguments; arrays for the scalars.

    Notes
    -----
    Where the ratio is 0/0 (q = 0 with :math:`\phi(0) = 0` and :math:`\sigma_b^2 = 0`, e.g. at
    q* = 0 in the ordered phase without bias) the map is its limit q -> 0: the q-independent
    normalised kernel map for positively homogeneous activations (relu: the arc-cosine map), the
    identity for smooth built-ins (:math:`\phi(u) \approx \phi'(0)u`). At q* = inf (relu-like
    activations in the chaotic phase) it is the limit q -> inf, the normalised map of the
    activation's asymptote (relu). At exactly q = 0 with a non-zero denominator every input maps
    to the same pre-activation and the map is 1.

    Examples
    --------
    >>> round(float(cmap(0.5, "relu", 2.0, 0.0)), 4)     # q-independent: the arc-cosine map
    0.609
    """
    act = _act(activation)
    sigma_w2, sigma_b2 = _variances(sigma_w2, sigma_b2)
    c = check_correlation(c, "c", strict=True)
    if q is None:
        q = fixed_point(act, sigma_w2, sigma_b2, degree=degree).q_star
        if math.isinf(q):
            return _limit_cmap(act, c, sigma_w2, math.inf)
    else:
        q = check_nonnegative_scalar(q, "q")
    if q == 0.0:
        if act.is_builtin:
            phi0 = float(evaluate_call(act.code, act.param, 0, 0.0))
        else:
            phi0 = float(call_user(act.phi, np.zeros(1), "phi", act.name)[0])
        if sigma_w2 * phi0 * phi0 + sigma_b2 > 0:
            return np.ones_like(c) if np.ndim(c) else 1.0
        return _limit_cmap(act, c, sigma_w2, 0.0)
    with np.errstate(over="ignore", invalid="ignore"):
        num = sigma_w2 * pair_expectation(act, q, q, c, (0, 0), degree) + sigma_b2
        den = sigma_w2 * expectation(act, q, (0, 0), degree) + sigma_b2
        out = num / den
    if den == 0.0:  # sigma_w2 = sigma_b2 = 0: every pre-activation is 0 (the convention of q = 0)
        return np.ones_like(num) if np.ndim(num) else 1.0
    if not np.all(np.isfinite(out)):
        raise ValueError("cmap: the map's moments exceed the float64 range at these parameters")
    return np.clip(out, -1.0, 1.0) if np.ndim(out) else float(min(1.0, max(-1.0, out)))


def covariance_map(
    cov: ArrayLike, activation: str | Activation, sigma_w2: float, sigma_b2: float, degree: int = DEFAULT_DEGREE
) -> np.ndarray:
    r"""The C-map :math:`\Sigma \mapsto \sigma_w^2\,\mathbb{E}_{h\sim N(0,\Sigma)}\phi(h)\phi(h)^T + \sigma_b^2` (Xiao et al. 2018, eq. 2.5).

    Parameters
    ----------
    cov : array_like, shape (..., D, D)
        Symmetric positive semi-definite covariance(s) of D pre-activations.
    activation : str or Activation
    sigma_w2, sigma_b2 : float
        Variances (>= 0), scalars.
    degree : int
        Gauss-Hermite degree for activations without closed forms.

    Returns
    -------
    ndarray, shape (..., D, D)
        Positive semi-definite (it is a Gram matrix of phi(h) plus a constant).

    Raises
    ------
    ValueError
        ``cov`` not a finite symmetric PSD matrix; negative or non-finite variances; a
        user-defined activation returning NaN/inf; a result beyond the float64 range.
    TypeError
        Complex or boolean arguments; arrays for the variances.
    """
    act = _act(activation)
    cov = check_covariance(cov, "cov", strict=True)
    sigma_w2, sigma_b2 = _variances(sigma_w2, sigma_b2)
    return map_stack(cov, act, 0, sigma_w2, sigma_b2, degree)


def derivative_covariance_map(
    cov: ArrayLike, activation: str | Activation, sigma_w2: float, degree: int = DEFAULT_DEGREE
) -> np.ndarray:
    r""":math:`\sigma_w^2\,\mathbb{E}_{h\sim N(0,\Sigma)}\phi'(h_a)\phi'(h_b)`: the factor of the backward (gradient) covariance map.

    Under the gradient-independence assumption (Xiao et al. 2018, supplement A.1), back-propagated
    signals obey :math:`\tilde\Sigma^l_{ab} = [\sigma_w^2 \mathbb{E}\phi'(h_a)\phi'(h_b)]\,\tilde\Sigma^{l+1}_{ab}` elementwise.

    Parameters
    ----------
    cov : array_like, shape (..., D, D)
        Forward covariance(s), symmetric PSD.
    activation : str or Activation
    sigma_w2 : float
        Weight variance (>= 0), scalar.
    degree : int
        Gauss-Hermite degree for activations without closed forms.

    Returns
    -------
    ndarray, shape (..., D, D)

    Raises
    ------
    ValueError, TypeError
        As :func:`covariance_map`.
    """
    act = _act(activation)
    cov = check_covariance(cov, "cov", strict=True)
    sigma_w2 = check_nonnegative_scalar(sigma_w2, "sigma_w2")
    return map_stack(cov, act, 1, sigma_w2, 0.0, degree)


# ----------------------------------------------------------------------------------------------
# Propagation through depth on a log scale: cov[l] = exp(log_scale[l]) * normalized[l].


@dataclass(frozen=True)
class LogPropagation:
    """Covariances through depth as ``cov[l] = exp(log_scale[l]) * normalized[l]``.

    Attributes
    ----------
    log_scale : ndarray, shape (depth + 1,)
        Natural log of the largest variance at each layer (0 where every variance is 0).
    normalized : ndarray, shape (depth + 1, D, D)
        Covariance divided by ``exp(log_scale)`` (largest diagonal entry 1, or all 0).
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

    def replace(self, **changes) -> LogPropagation:
        return replace(self, **changes)


def _fast_propagate_log(cov0, activation, sigma_w2, sigma_b2, depth, degree):
    """``(LogPropagation, validated cov0)`` on the fast path (``meanfield._fastpath``), or None where
    the general path :func:`_propagate_log` must decide: it certifies the arguments in one compiled
    call and runs the same kernel, so the result is the same where it answers."""
    refuse_unbounded(cov0, activation, depth, degree)
    start = fast_start(cov0, activation, sigma_w2, sigma_b2, depth, degree)
    if start is None:
        return None
    act, sym, k0, log0, (z, w, cf), sw, sb = start
    k_out = np.empty((depth + 1,) + k0.shape)
    logs = np.empty(depth + 1)
    propagate_kernel(act.code, act.param, sw, sb, k0, log0, depth, z, w, cf, k_out, logs)
    if not trajectory_ok(logs, k_out, math.inf):  # the general path retries with quadrature or raises
        return None
    return LogPropagation(log_scale=logs, normalized=k_out), sym


def _propagate_log(cov0, activation, sigma_w2, sigma_b2, depth, degree):
    """propagate_log and the validated cov0."""
    fast = _fast_propagate_log(cov0, activation, sigma_w2, sigma_b2, depth, degree)
    if fast is not None:
        return fast
    return _general_propagate_log(cov0, activation, sigma_w2, sigma_b2, depth, degree)


def _general_propagate_log(cov0, activation, sigma_w2, sigma_b2, depth, degree):
    """:func:`_propagate_log` for any arguments: every check, in the documented order."""
    act = _act(activation)
    _require_builtin(act, "propagate")
    cov0 = check_covariance(cov0, "cov0", strict=True)
    if cov0.ndim != 2 or cov0.shape[0] < 1:
        raise ValueError(f"cov0 must be a single (D, D) matrix with D >= 1, got shape {cov0.shape}")
    sigma_w2, sigma_b2 = _variances(sigma_w2, sigma_b2)
    depth = check_depth(depth, cov0.shape[0])
    k0, log0 = normalised_start(cov0)
    z, w, cf = kernel_rule_for(act, degree)
    check_quadrature_work(act.code, act.name, depth, cov0.shape[0], int(degree))
    k_out = np.empty((depth + 1,) + k0.shape)
    logs = np.empty(depth + 1)
    propagate_kernel(act.code, act.param, sigma_w2, sigma_b2, k0, log0, depth, z, w, cf, k_out, logs)
    finite = np.isfinite(logs).all() and np.isfinite(k_out).all()
    if not finite and z is None:  # a closed form failed where pair_value would try quadrature
        propagate_kernel(act.code, act.param, sigma_w2, sigma_b2, k0, log0, depth, *full_rule(degree), k_out, logs)
        finite = np.isfinite(logs).all() and np.isfinite(k_out).all()
    if not finite:
        raise ValueError(
            f"propagation of activation {act.name} leaves even the log-scale representation at these parameters"
        )
    return LogPropagation(log_scale=logs, normalized=k_out), cov0


def propagate_log(
    cov0: ArrayLike,
    activation: str | Activation,
    sigma_w2: float,
    sigma_b2: float,
    depth: int,
    degree: int = DEFAULT_DEGREE,
) -> LogPropagation:
    r"""Iterate the C-map ``depth`` times without overflow or underflow of the scale.

    The covariance is carried as a log-scale and a normalised matrix. For positively homogeneous
    activations (``linear``, ``relu``, ``leaky_relu``) the map satisfies
    :math:`C(s\Sigma) = s\,C(\Sigma)` up to the bias, so ReLU networks at ``sigma_w2 = 100`` and
    depth 10^4 (variance ~ 50^{10^4}) are represented exactly. For the others the map is
    evaluated directly at moderate scales, by its linearisation
    :math:`\phi(u) \approx \phi(0) + \phi'(0)u + \phi''(0)u^2/2` below ``Q_LINEAR_BELOW`` (e.g.
    tanh without bias in the ordered phase, whose variance decays like chi_1^l), and by the map of
    its asymptote above ``Q_ASYMPTOTE_ABOVE`` (relu for softplus, swish, gelu in the chaotic phase),
    each with relative error below 1e-30.

    Parameters
    ----------
    cov0 : array_like, shape (D, D)
        Input-layer pre-activation covariance (index 0), symmetric PSD, D >= 1.
    activation : str or Activation
        A built-in activation.
    sigma_w2, sigma_b2 : float
        Variances (>= 0), scalars.
    depth : int
        Number of layers (0 <= depth <= MAX_DEPTH, and (depth + 1) D^2 <= MAX_PROPAGATION_SIZE;
        for the quadrature-only activations tanh, sigmoid, softplus and swish also an estimated
        run time below a few seconds, e.g. depth <= 29,000 for D = 2 at the default degree).
    degree : int
        Gauss-Hermite degree for activations without closed forms.

    Returns
    -------
    LogPropagation

    Raises
    ------
    ValueError
        Bad arguments; a user-defined activation; a scale beyond even the log representation
        (sigma_w2 or sigma_b2 near the float64 maximum).
    TypeError
        Complex or boolean arguments; arrays for the variances.
    """
    return _propagate_log(cov0, activation, sigma_w2, sigma_b2, depth, degree)[0]


def propagate(
    cov0: ArrayLike,
    activation: str | Activation,
    sigma_w2: float,
    sigma_b2: float,
    depth: int,
    degree: int = DEFAULT_DEGREE,
) -> np.ndarray:
    r"""Covariances of D inputs through ``depth`` layers: :math:`\Sigma^{l+1} = C(\Sigma^l)`.

    Parameters
    ----------
    cov0 : array_like, shape (D, D)
        Pre-activation covariance at index 0 (e.g. :func:`input_covariance`), D >= 1.
    activation : str or Activation
        A built-in activation (the loop over layers runs in a compiled kernel).
    sigma_w2, sigma_b2 : float
        Variances (>= 0), scalars.
    depth : int
        Number of layers (>= 0; see :func:`propagate_log` for the upper limits).
    degree : int
        Gauss-Hermite degree for activations without closed forms.

    Returns
    -------
    ndarray, shape (depth + 1, D, D)
        Index 0 is ``cov0``.

    Raises
    ------
    ValueError
        Bad arguments, or a variance leaves the normal float64 range (overflow in expanding
        networks, underflow in contracting networks without bias, e.g. ReLU at
        ``sigma_w2 = 1.5``, depth 10^4): :func:`propagate_log` represents those exactly.
    TypeError
        Complex or boolean arguments; arrays for the variances.

    Notes
    -----
    Xiao et al. 2018, eq. 2.5 iterated (the C-map of Poole et al. 2016, eqs. 3-5). With a writeable
    C-contiguous float64 ``cov0``, float or int variances and a built-in activation, the argument
    checks run in one compiled call (a Cholesky certificate of positive semi-definiteness; the same
    accept/reject decisions and messages as the general checks, which decide whatever it cannot
    certify) and the call costs ~6 us more than its kernel (docs/performance.md).

    For many inputs (data sets of hundreds to thousands), :func:`meanfield.kernels.dense_kernels`
    computes the last layer's (or chosen layers') covariances between two sets of inputs on all
    cores in bounded memory, much faster; it agrees with this function to float64 rounding.

    Examples
    --------
    >>> import numpy as np
    >>> traj = propagate(np.eye(2), "erf", 1.5, 0.05, depth=50)
    >>> traj.shape
    (51, 2, 2)
    """
    fast = _fast_propagate_log(cov0, activation, sigma_w2, sigma_b2, depth, degree)
    if fast is None:
        res, cov0 = _general_propagate_log(cov0, activation, sigma_w2, sigma_b2, depth, degree)
    else:
        res, cov0 = fast
        out = finish(res.log_scale, res.normalized, cov0)  # unscale's products in one compiled call
        if out is not None:
            return out
    out = unscale(res, "propagate")  # raises where a variance over- or underflows
    out[0] = cov0  # exactly the input, not exp(log m) * (cov0 / m)
    return out


# ----------------------------------------------------------------------------------------------
# Fixed points, chi's and depth scales.


#: Activations whose fixed-point quantities (E phi^2, E phi'^2, the c-map and its slope,
#: d/dq E phi^2) all have closed forms: their fixed-point kernels are compiled without the
#: quadrature (gelu is not here: its q-map residual is the quadrature of :func:`excess_value`).
_FP_CLOSED = tuple(code for code in CLOSED_C_MAP if code != GELU)


def _fp_rule(act, degree):
    """``(z, w, cf, ex)`` of the fixed-point kernels, the family split of :func:`kernel_rule_for`.

    Closed-form families ``(None, None, 0)`` (the quadrature is not compiled), the quadrature
    ones ``(z, w, None)`` (the closed forms are not compiled), gelu both; ``ex`` is 0 for the
    ReLU-like activations, whose q-map residual is :func:`excess_value`, None for the others
    (not compiled). The numbers are the
    same as with both branches (the closed forms of the first family are never NaN where the
    solvers evaluate them, and those of the second always are); the first call of
    :func:`fixed_point` compiles about half as much (benchmarks/bench_cold_start.py).
    """
    z, w = kernel_rule(degree)
    ex = 0 if act.code in (SOFTPLUS, SWISH, GELU) else None
    if act.code in _FP_CLOSED:
        return None, None, closed_flag(act), ex  # only the family's closed forms (gaussian.family_rule)
    if act.code in QUADRATURE_C_MAP:
        return z, w, None, ex
    return z, w, closed_flag(act), ex


def _fp_full_rule(act, degree):
    """:func:`_fp_rule` with both families (closed forms with the quadrature fallback)."""
    z, w, cf = full_rule(degree)
    return z, w, cf, 0 if act.code in (SOFTPLUS, SWISH, GELU) else None


@numba.njit(cache=True)
def _e1(code, a, d1, d2, q, z, w, cf):
    """:func:`meanfield.gaussian.single_value` with the branches chosen by type (see :func:`_fp_rule`)."""
    v = math.nan
    if cf is not None:
        v = closed_single_by(cf, code, a, d1, d2, q)
    if z is not None:
        if math.isnan(v):
            v = single_quadrature(code, a, d1, d2, q, z, w)
    return v


@numba.njit(cache=True)
def _e2(code, a, d1, d2, q1, q2, c, z, w, cf):
    """:func:`meanfield.gaussian.pair_value` with the branches chosen by type (see :func:`_fp_rule`)."""
    v = math.nan
    if cf is not None:
        v = closed_pair_by(cf, code, a, d1, d2, q1, q2, c)
    if z is not None:
        if math.isnan(v):
            v = pair_quadrature(code, a, d1, d2, q1, q2, c, z, w)
    return v


@numba.njit(cache=True)
def _dq(code, a, q, z, w, cf):
    """:func:`meanfield.gaussian.variance_derivative_value` with the branches chosen by type."""
    v = math.nan
    if cf is not None:
        v = closed_variance_derivative_by(cf, code, a, q)
    if z is not None:
        if math.isnan(v):
            v = variance_derivative_quadrature(code, a, q, z, w)
    return v


@numba.njit(cache=True)
def _g(code, a, sw, sb, q, z, w, cf, ex):
    """q-map residual g(q) = qmap(q) - q and its slope g'(q).

    For the ReLU-like activations, g = (sw / 2 - 1) q + sb + sw (E phi^2 - q / 2) with the last
    term integrated as one localised integrand: at large q, sw E phi^2 - q cancels to a few ulps
    of q, which would swamp sb (and decide q* by rounding when sw / 2 = 1).
    """
    o0, o1, _o2 = run_time_orders(code)  # run-time 0, 1, 2: literal arguments compile extra specialisations
    if ex is not None:  # softplus, swish and gelu (see _fp_rule)
        if code == SOFTPLUS or code == SWISH or code == GELU:
            val = (0.5 * sw - 1.0) * q + sb + sw * excess_value(code, a, o0, q, z, w)
            slope = (0.5 * sw - 1.0) + sw * excess_value(code, a, o1, q, z, w)
            return val, slope
    if z is not None:  # quadrature families only (pruned at compile time for the closed-form ones)
        if code == TANH:  # both integrals in one pass, bit-identical (meanfield._tanh_fused)
            e, d = tanh_variance_moments(q, z, w)
            if not math.isnan(e):
                return sw * e + sb - q, sw * d - 1.0
    val = sw * _e1(code, a, o0, o0, q, z, w, cf) + sb - q
    slope = sw * _dq(code, a, q, z, w, cf) - 1.0
    return val, slope


@numba.njit(cache=True)
def _newton_q(code, a, sw, sb, lo, hi, z, w, cf, ex):
    """The root of g in [lo, hi] with g(lo) > 0 >= g(hi): safeguarded Newton from hi (200 steps at most)."""
    x = hi
    for _ in range(200):
        val, slope = _g(code, a, sw, sb, x, z, w, cf, ex)
        if val > 0.0:
            lo = x
        else:
            hi = x
        nx = x - val / slope if slope < 0.0 else 0.5 * (lo + hi)
        if not (lo < nx < hi):
            nx = 0.5 * (lo + hi)
        if abs(nx - x) <= SOLVER_RTOL * max(abs(x), 1e-300) or hi - lo <= SOLVER_RTOL * hi:
            return nx
        x = nx
    return x


@numba.njit(inline="always")  # one call site: one compiled tree less
def _solve_q(code, a, sw, sb, z, w, cf, ex):
    """The stable fixed point q* reached from small variances; inf when q grows without bound;
    NaN when q* exceeds the float64 range. See the module notes."""
    o0, _o1, _o2 = run_time_orders(code)  # run-time 0, 1, 2: literal arguments compile extra specialisations
    if sw == 0.0:
        return sb
    m = sw * asymptotic_slope(code, a)
    if code == LINEAR or code == RELU or code == LEAKY_RELU:  # q-map = m q + sb exactly
        if m < 1.0:
            q = sb / (1.0 - m)
            return q if math.isfinite(q) else math.nan
        if m > 1.0 or sb > 0.0:
            return math.inf
        return 0.0  # m = 1, sb = 0: every q is fixed; 0 is reported
    g0 = sw * _e1(code, a, o0, o0, 0.0, z, w, cf) + sb
    if g0 <= 0.0:  # q = 0 is a fixed point (phi(0) = 0, sb = 0)
        s0 = sw * _dq(code, a, 0.0, z, w, cf) - 1.0
        if s0 < 0.0:
            return 0.0
        if s0 == 0.0 and _g(code, a, sw, sb, _Q_PROBE, z, w, cf, ex)[0] <= 0.0:
            return 0.0  # marginal: q decays like a power law
        lo = 0.0
        q = _Q_START_UNSTABLE
    else:  # qmap(q) >= qmap(0) = g0 for every built-in, so no root lies below g0
        lo = 0.0
        q = g0
    if m == 0.0 and math.isfinite(sw + sb):
        # bounded (tanh, erf, sigmoid, hard_tanh): phi^2 <= B (bound_squared), so g(sw B + sb) <= 0, and the q-map is
        # concave (a single crossing on (0, inf)): safeguarded Newton from the right converges to it
        return _newton_q(code, a, sw, sb, lo, max(sw * bound_squared(code, a) + sb, q), z, w, cf, ex)
    slo = 0.0
    for _ in range(4096):
        gq, sq = _g(code, a, sw, sb, q, z, w, cf, ex)
        if gq <= 0.0:
            return _newton_q(code, a, sw, sb, lo, q, z, w, cf, ex)
        if slo < 0.0 and sq > 0.0 and lo > 0.0:
            # g has a minimum between two positive scan points: find it (bisection on g') and look
            a_lo, a_hi = lo, q
            for _ in range(100):
                mid = 0.5 * (a_lo + a_hi)
                if _g(code, a, sw, sb, mid, z, w, cf, ex)[1] < 0.0:
                    a_lo = mid
                else:
                    a_hi = mid
                if a_hi - a_lo <= 1e-12 * a_hi:
                    break
            gm = _g(code, a, sw, sb, a_lo, z, w, cf, ex)[0]
            if gm <= 0.0:
                return _newton_q(code, a, sw, sb, lo, a_lo, z, w, cf, ex)
        if q >= Q_ASYMPTOTIC and m > 1.0 and sq > 0.0:
            return math.inf
        if q >= Q_SCAN_MAX:
            if m >= 1.0:
                return math.inf
            if m == 0.0:  # bounded: phi^2 <= 1, so qmap(q) <= sw + sb and g(sw + sb) <= 0
                hi = sw * bound_squared(code, a) + sb
                if math.isfinite(hi) and hi > q and _g(code, a, sw, sb, hi, z, w, cf, ex)[0] <= 0.0:
                    return _newton_q(code, a, sw, sb, q, hi, z, w, cf, ex)
            return math.nan
        lo = q
        slo = sq
        q = max(q, min(2.0 * q, Q_SCAN_MAX))
    return math.nan


@numba.njit(inline="always")  # one call site: one compiled tree less
def _solve_c(code, a, sw, sb, q, chi1, z, w, cf, c0=0.0):
    """The stable fixed point c* of the c-map at q (1 in the ordered phase).

    The residual h(c) = (sw E phi(u1) phi(u2) + sb) / q - c is convex on [0, 1] with roots c* and
    1 (c = 1 is fixed because q = q*). Near the edge of chaos the two roots merge and Newton on h
    converges only linearly (hundreds of iterations), so the known root is divided out: the
    deflated residual H(c) = h(c) / (1 - c), with H(1) = 1 - chi_1, has c* as a simple root.
    Safeguarded Newton on H over the bracket [lo, hi], H(lo) >= 0 > H(hi), started at ``c0`` (a
    neighbouring grid point's c* in :func:`phase_diagram`; any c0 in [0, 1) is safe); at most
    200 steps.

    Returns ``(c*, chi_c)``: Newton's last slope integral is ``chi_c`` at an iterate within 1e-15 of
    c*, which saves the 2-D integral of a separate evaluation (NaN where it is not available).
    """
    o0, o1, _o2 = run_time_orders(code)  # run-time 0, 1, 2: literal arguments compile extra specialisations
    if chi1 <= 1.0 + 1e-12 or q == 0.0:
        return 1.0, chi1  # at c* = 1 the two arguments coincide: chi_c = chi_1
    lo = 0.0
    hi = 1.0
    c = c0 if 0.0 <= c0 < 1.0 else 0.0
    nc = c
    for _ in range(200):
        m0 = math.nan
        m1 = math.nan
        if code == TANH:  # both integrals of the step in one pass, no tanh per node
            m0, m1 = tanh_pair_moments(q, c, z, w)
        if math.isnan(m0):  # other activations, or a rule tanh_pair_moments leaves to pair_quadrature
            m0 = _e2(code, a, o0, o0, q, q, c, z, w, cf)
            m1 = _e2(code, a, o1, o1, q, q, c, z, w, cf)
        h = (sw * m0 + sb) / q - c
        if h == 0.0:
            return c, math.nan
        dh = sw * m1 - 1.0
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
def _fixed_point_values(code, a, homogeneous, sw, sb, z, w, cf, ex, out, c0=0.0):
    """out = (q*, c*, chi_1, chi_c, chi_q, frozen); NaN everywhere when q* overflows."""
    _o0, o1, _o2 = run_time_orders(code)  # run-time 0, 1, 2: literal arguments compile extra specialisations
    q = _solve_q(code, a, sw, sb, z, w, cf, ex)
    if math.isnan(q):
        for i in range(6):
            out[i] = math.nan
        return
    frozen = 0.0
    if math.isinf(q):
        # q -> inf: the chi's of the asymptote (relu for the ReLU-like; the activation itself if
        # homogeneous), whose correlation map has the fixed point c* = 1
        if homogeneous:
            chi1 = sw * _e1(code, a, o1, o1, 1.0, z, w, cf)
            chiq = sw * _dq(code, a, 1.0, z, w, cf)
        elif math.isinf(asymptotic_slope(code, a)):
            chi1 = math.inf  # superlinear (exp, relu_power): E phi'(u)^2 grows without bound
            chiq = math.inf
        else:  # phi ~ a x (x > 0), b x (x < 0): E phi'^2 -> (a^2 + b^2) / 2 (activations.asymptote)
            chi1 = sw * asymptotic_derivative_moment(code, a)
            chiq = sw * asymptotic_slope(code, a)
        c = 1.0
        chic = chi1
    elif q == 0.0:
        # q -> 0 with sb = 0 and phi(0) = 0: the c-map is q-independent (homogeneous) or the
        # identity (smooth): its slope at c* = 1 is 1, so correlations converge polynomially or freeze
        a0, b0 = origin_slopes(code, a)
        if a0 != b0 and not homogeneous:  # kink at 0 (abs, elu, selu): E phi'(u)^2 -> (a0^2 + b0^2) / 2
            chi1 = sw * (0.5 * (a0 * a0 + b0 * b0))
        else:
            chi1 = sw * _e1(code, a, o1, o1, 0.0 if not homogeneous else 1.0, z, w, cf)
        chiq = sw * _dq(code, a, 0.0 if not homogeneous else 1.0, z, w, cf)
        c = 1.0
        chic = 1.0 if sw > 0.0 else 0.0
        if sw > 0.0 and a0 == b0:  # smooth at 0: the limiting c-map is the identity
            frozen = 1.0
    else:
        chi1 = sw * _e1(code, a, o1, o1, q, z, w, cf)
        c, chic = _solve_c(code, a, sw, sb, q, chi1, z, w, cf, c0)
        if math.isnan(chic):
            chic = sw * _e2(code, a, o1, o1, q, q, c, z, w, cf)
        chiq = sw * _dq(code, a, q, z, w, cf)
    if sw == 0.0:  # W = 0: the Jacobian is exactly 0 (also for sign, whose E phi'^2 is infinite)
        chi1 = 0.0
        chic = 0.0
        chiq = 0.0
    out[0] = q
    out[1] = c
    out[2] = chi1
    out[3] = chic
    out[4] = chiq
    out[5] = frozen


@numba.njit(cache=True, nogil=True)
def _phase_rows(code, a, homogeneous, sw_grid, sb_grid, z, w, cf, ex, out):
    """A block of rows of the phase diagram (releases the GIL: :func:`_phase_kernel` runs blocks on threads)."""
    # along a row, c* is warm-started from the previous column's (Newton then needs ~3 pair
    # integrals instead of ~15 from c = 0)
    for i in range(sw_grid.size):
        c_prev = 0.0
        for j in range(sb_grid.size):
            _fixed_point_values(code, a, homogeneous, sw_grid[i], sb_grid[j], z, w, cf, ex, out[i, j], c_prev)
            c_prev = out[i, j, 1] if math.isfinite(out[i, j, 1]) else 0.0


#: Blocks of rows per thread of :func:`_phase_kernel` (load balance: rows differ in cost).
PHASE_BLOCKS_PER_THREAD = 4


def _phase_kernel(code, a, homogeneous, sw_grid, sb_grid, z, w, cf, ex, out):
    """Rows of the phase diagram in parallel: blocks of rows of the serial, GIL-free kernel
     :func:`_phase_rows` on ``numba.get_num_threads()`` Python threads.

     Not a ``parallel=True`` parfor: compiling the parfor cost ~2 s of a cold ``phase_diagram``
    , while the block kernel compiles as a plain loop around :func:`_fixed_point_values`
     (which ``fixed_point`` has compiled already in most processes). Each row is computed as before
     (c* warm-started along sigma_b2 only), so the result is the same bit for bit.
    """
    threads = min(numba.get_num_threads(), sw_grid.size)
    if threads <= 1:
        _phase_rows(code, a, homogeneous, sw_grid, sb_grid, z, w, cf, ex, out)
        return
    from concurrent.futures import ThreadPoolExecutor

    edges = np.linspace(0, sw_grid.size, min(sw_grid.size, PHASE_BLOCKS_PER_THREAD * threads) + 1).astype(int)

    def block(k):
        lo, hi = edges[k], edges[k + 1]
        _phase_rows(code, a, homogeneous, sw_grid[lo:hi], sb_grid, z, w, cf, ex, out[lo:hi])

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(block, range(edges.size - 1)))


def _depth_scale(chi):
    chi = np.abs(np.asarray(chi, dtype=np.float64))  # chi < 0 (cos, rbf q-maps): oscillating decay at rate |chi|
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
    """The stable fixed point of the dense mean-field maps and its stability (Xiao et al. 2018, eq. 2.7).

    Attributes
    ----------
    q_star : float
        Fixed-point variance reached from small input variances: finite and >= 0, or ``inf`` when
        q grows without bound (relu with sigma_w2 > 2; softplus, swish, gelu when
        sigma_w2 / 2 > 1 and no finite fixed point lies below; relu at sigma_w2 = 2 with bias).
    c_star : float
        Fixed-point correlation (1 in the ordered phase and wherever q* is 0 or inf).
    chi_1 : float
        sigma_w2 E phi'(sqrt(q*) z)^2: slope of the c-map at c = 1, mean squared singular value
        of the layer Jacobian, per-layer factor of gradient variance. At q* = inf: the value of
        the asymptote, sigma_w2 (a^2 + b^2) / 2 for phi(x) ~ a x (x > 0), b x (x < 0)
        (sigma_w2 / 2 for the ReLU-like, sigma_w2 lambda^2 / 2 for selu, sigma_w2 for abs); at
        q* = 0: sigma_w2 phi'(0)^2; 0 when sigma_w2 = 0 (the Jacobian is 0, also for sign).
        ``inf`` for sign with sigma_w2 > 0 (phi' is a Dirac delta) and at q* = inf for activations growing faster
        than linearly (exp, relu_power with n > 1), as chi_c and chi_q there.
    chi_c : float
        Slope of the c-map at c*: sigma_w2 E phi'(u1) phi'(u2) at (q*, c*) when 0 < q* < inf; at
        q* = inf, chi_1 (the asymptote's value); at q* = 0, the slope of the limiting c-map, 1
        (0 when sigma_w2 = 0).
    chi_q : float
        Slope of the q-map at q* (at q* = inf: sigma_w2 times the asymptotic slope m_inf).
    xi_q, xi_c : float
        Depth scales -1/log|chi_q|, -1/log|chi_c| (chi_q < 0 for non-monotone q-maps: cos, rbf); ``inf`` where the chi is >= 1 or within
        CRITICAL_ATOL of 1 (no exponential convergence: power law at criticality, frozen or
        polynomially converging correlations at q* = 0, growth at q* = inf); 0 where the chi is 0.
    phase : str
        'ordered' (chi_1 < 1), 'chaotic' (chi_1 > 1) or 'critical' (``|chi_1 - 1| <= 1e-9``).
    c_frozen : bool
        True where q* = 0 and the c-map is the identity (smooth phi with phi(0) = 0, no bias, the
        ordered phase; linear): correlations then stop at an input-dependent value instead of
        converging to c_star.

    Notes
    -----
    ``inf`` values are meaningful, not errors: q* = inf with chi_1 > 1 is the chaotic phase of
    ReLU-like activations, where the variance grows exponentially (rate chi_q).
    """

    q_star: float
    c_star: float
    chi_1: float
    chi_c: float
    chi_q: float
    xi_q: float
    xi_c: float
    phase: str
    c_frozen: bool = False

    def replace(self, **changes) -> FixedPoint:
        return replace(self, **changes)


def _fixed_point_error(act, sw, sb):
    return ValueError(
        f"the fixed point q* of {act.name} at sigma_w2 = {sw!r}, sigma_b2 = {sb!r} exceeds the float64 range"
    )


def fixed_point(
    activation: str | Activation, sigma_w2: float, sigma_b2: float, degree: int = DEFAULT_DEGREE
) -> FixedPoint:
    """The stable fixed point (q*, c*), the chi's and depth scales of a deep dense network.

    Parameters
    ----------
    activation : str or Activation
        A built-in activation.
    sigma_w2, sigma_b2 : float
        Variances (>= 0, finite), scalars.
    degree : int
        Gauss-Hermite degree for activations without closed forms.

    Returns
    -------
    FixedPoint
        ``q_star``, ``xi_q``, ``xi_c`` may be ``inf`` (see :class:`FixedPoint`); nothing is NaN.

    Raises
    ------
    ValueError
        Negative or non-finite variances; a user-defined activation; q* beyond the float64 range
        (e.g. sigma_b2 ~ 1e308).
    TypeError
        Complex, boolean or array arguments.

    Notes
    -----
    Xiao et al. 2018, eq. 2.7; the q* = 0 and q* = inf edges as in the module notes. Time is bounded:
    every loop has an iteration cap (a few ms per point; ~10 ms at variances ~1e300).

    Examples
    --------
    >>> fp = fixed_point("relu", 2.0, 0.0)
    >>> fp.phase, fp.chi_1
    ('critical', 1.0)
    """
    act = _act(activation)
    _require_builtin(act, "fixed_point")
    sigma_w2, sigma_b2 = _variances(sigma_w2, sigma_b2)
    z, w, cf, ex = _fp_rule(act, degree)
    out = np.empty(6)
    # the serial kernel: a one-point call to the parallel grid kernel pays a thread-pool launch;
    # c0 passed explicitly (as by _phase_kernel): an omitted default is another type signature,
    # which compiled the kernel a second time
    _fixed_point_values(act.code, act.param, act.code in HOMOGENEOUS, sigma_w2, sigma_b2, z, w, cf, ex, out, 0.0)
    if z is None and np.isnan(out).any():  # belt and braces: closed forms with the quadrature fallback
        z, w, cf, ex = _fp_full_rule(act, degree)
        _fixed_point_values(act.code, act.param, act.code in HOMOGENEOUS, sigma_w2, sigma_b2, z, w, cf, ex, out, 0.0)
    if np.isnan(out[0]):
        raise _fixed_point_error(act, sigma_w2, sigma_b2)
    q, c, chi1, chic, chiq, frozen = (float(v) for v in out)
    return FixedPoint(
        q_star=q,
        c_star=c,
        chi_1=chi1,
        chi_c=chic,
        chi_q=chiq,
        xi_q=_depth_scale(chiq),
        xi_c=_depth_scale(chic),
        phase=_phase(chi1),
        c_frozen=bool(frozen),
    )


@dataclass(frozen=True)
class PhaseDiagram:
    """Fixed-point quantities on a (sigma_w2, sigma_b2) grid; arrays of shape (len(sigma_w2), len(sigma_b2)).

    Attributes
    ----------
    sigma_w2, sigma_b2 : ndarray
        The 1-D grids.
    q_star, c_star, chi_1, chi_c, xi_c : ndarray
        As in :class:`FixedPoint` (``q_star`` and ``xi_c`` may be ``inf``).
    c_frozen : ndarray of bool or None
        As in :class:`FixedPoint`.
    """

    sigma_w2: np.ndarray
    sigma_b2: np.ndarray
    q_star: np.ndarray
    c_star: np.ndarray
    chi_1: np.ndarray
    chi_c: np.ndarray
    xi_c: np.ndarray
    c_frozen: np.ndarray | None = None

    def replace(self, **changes) -> PhaseDiagram:
        return replace(self, **changes)


def _grid(x, name):
    arr = as_real_array(x, name)
    arr = np.atleast_1d(arr)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D grid, got shape {np.shape(x)}")
    if np.any(arr < 0):
        raise ValueError(f"{name} must be >= 0 (variances)")
    return np.ascontiguousarray(arr, dtype=np.float64)


#: Rows of the sigma_w2 grid per task when :func:`phase_diagram` runs on an executor of
#: :mod:`meanfield.parallel` other than the serial one (a task of 8 rows x 100 columns is ~0.1-0.3 s
#: of CPU for tanh: well above the executors' few-ms overhead per task).
PHASE_ROWS_PER_TASK = 8


def _distributed() -> bool:
    """True inside ``meanfield.parallel.using(...)`` with an executor other than the serial one."""
    from . import parallel

    return not isinstance(parallel.current(), parallel.SerialExecutor)


def _phase_diagram_rows(sw, sb, activation, degree):
    """:func:`phase_diagram` by blocks of rows on the current executor (:func:`meanfield.parallel.sweep`).

    Each row is computed exactly as in-process (the kernel warm-starts c* along sigma_b2 only, never
    across rows), so the result is bit for bit the in-process one.
    """
    from . import parallel

    return parallel.sweep(
        phase_diagram,
        "sigma_w2",
        sw,
        rows_per_chunk=PHASE_ROWS_PER_TASK,
        keep=("sigma_b2",),
        activation=activation,
        sigma_b2=sb,
        degree=degree,
    )


def phase_diagram(
    activation: str | Activation, sigma_w2: float, sigma_b2: float, degree: int = DEFAULT_DEGREE
) -> PhaseDiagram:
    """The order-to-chaos phase diagram (Poole et al. 2016 Fig. 2; Xiao et al. 2018 Fig. S1), vectorised.

    Parameters
    ----------
    activation : str or Activation
        A built-in activation.
    sigma_w2, sigma_b2 : array_like, 1-D
        Non-empty grids of variances (>= 0, finite).
    degree : int
        Gauss-Hermite degree for activations without closed forms.

    Returns
    -------
    PhaseDiagram
        The critical line is the level set ``chi_1 == 1``; ``q_star`` and ``xi_c`` may be
        ``inf`` (chaotic ReLU-like points, see :class:`FixedPoint`).

    Raises
    ------
    ValueError
        Empty, multi-dimensional, negative or non-finite grids; q* beyond the float64 range at
        a grid point; a user-defined activation.
    TypeError
        Complex or boolean grids.

    Notes
    -----
    In-process blocks of rows run on ``numba.get_num_threads()`` threads (a GIL-free compiled
    kernel; ``NUMBA_NUM_THREADS`` sets the count). Inside ``with meanfield.parallel.using(...)``
    (local processes, a Dask cluster; the CLI's ``--workers`` / ``--scheduler``) blocks of
    ``PHASE_ROWS_PER_TASK`` (8) rows of the ``sigma_w2`` grid are the tasks; the result is the
    same bit for bit.
    """
    act = _act(activation)
    _require_builtin(act, "phase_diagram")
    sw = _grid(sigma_w2, "sigma_w2")
    sb = _grid(sigma_b2, "sigma_b2")
    z, w, cf, ex = _fp_rule(act, degree)
    if sw.size > PHASE_ROWS_PER_TASK and _distributed():
        return _phase_diagram_rows(sw, sb, activation, degree)
    out = np.empty((sw.size, sb.size, 6))
    _phase_kernel(act.code, act.param, act.code in _HOMOGENEOUS, sw, sb, z, w, cf, ex, out)
    if z is None and np.isnan(out).any():  # belt and braces, as in fixed_point
        z, w, cf, ex = _fp_full_rule(act, degree)
        _phase_kernel(act.code, act.param, act.code in _HOMOGENEOUS, sw, sb, z, w, cf, ex, out)
    bad = np.isnan(out[..., 0])
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise _fixed_point_error(act, float(sw[i]), float(sb[j]))
    return PhaseDiagram(
        sigma_w2=sw,
        sigma_b2=sb,
        q_star=out[..., 0],
        c_star=out[..., 1],
        chi_1=out[..., 2],
        chi_c=out[..., 3],
        xi_c=_depth_scale(out[..., 3]),
        c_frozen=out[..., 5] > 0,
    )


def critical_sigma_w2(
    activation: str | Activation,
    sigma_b2: float,
    degree: int = DEFAULT_DEGREE,
    bracket: tuple[float, float] = (1e-06, 100.0),
) -> float | np.ndarray:
    """The edge of chaos: the sigma_w2 at which chi_1 = 1, for each sigma_b2.

    Solved with Brent's method (at most 100 iterations) on chi_1(sigma_w2) - 1 (chi_1 increases
    with sigma_w2).

    Parameters
    ----------
    activation : str or Activation
        A built-in activation.
    sigma_b2 : float or array_like
        Bias variances (>= 0, finite).
    degree : int
        Gauss-Hermite degree for activations without closed forms.
    bracket : (float, float)
        Search interval ``0 <= lo < hi`` (finite) for sigma_w2.

    Returns
    -------
    float or ndarray like ``sigma_b2``; never NaN.

    Raises
    ------
    ValueError
        No crossing in ``bracket``; bad arguments.
    TypeError
        Complex or boolean arguments; a ``bracket`` that is not a pair of numbers.

    Notes
    -----
    Where q* jumps from a finite value (or 0) to infinity as sigma_w2 grows, chi_1 jumps across 1
    and the returned point is the jump (within 1e-14): gelu and swish at sigma_b2 = 0 are ordered
    with q* = 0 and chi_1 = sigma_w2 / 4 up to sigma_w2 = 4, and chaotic with q* = inf and
    chi_1 = sigma_w2 / 2 beyond, so 4 is returned.

    Examples
    --------
    >>> round(critical_sigma_w2("relu", 0.0), 12)
    2.0
    """
    from scipy.optimize import brentq

    act = _act(activation)
    _require_builtin(act, "critical_sigma_w2")
    sb = check_nonnegative(sigma_b2, "sigma_b2", strict=True)
    if isinstance(bracket, (str, bytes)) or not hasattr(bracket, "__len__") or len(bracket) != 2:
        raise TypeError(f"bracket must be a pair (lo, hi), got {bracket!r}")
    lo = check_scalar(bracket[0], "bracket[0]")
    hi = check_scalar(bracket[1], "bracket[1]")
    if not 0 <= lo < hi:
        raise ValueError(f"bracket must satisfy 0 <= lo < hi, got {tuple(bracket)}")

    def f(sw, b):
        return fixed_point(act, sw, b, degree).chi_1 - 1.0

    def solve(b):
        flo, fhi = f(lo, b), f(hi, b)
        if flo == 0.0:
            return lo
        if fhi == 0.0:
            return hi
        if flo * fhi > 0:
            raise ValueError(f"chi_1 = 1 is not crossed for sigma_w2 in {tuple(bracket)} at sigma_b2 = {b}")
        return brentq(f, lo, hi, args=(b,), xtol=1e-14, rtol=1e-15, maxiter=200)

    if np.ndim(sb) == 0:
        return solve(float(sb))
    if np.size(sb) == 0:
        return np.empty(np.shape(sb))
    return np.vectorize(solve, otypes=[float])(sb)


# ----------------------------------------------------------------------------------------------
# Backward (gradient) variance.


def _log_chi1_along(act, sigma_w2, log_q, degree):
    """log(sigma_w2 E phi'(sqrt(q) z)^2) for q = exp(log_q) anywhere in the log range."""
    if sigma_w2 == 0.0:
        return np.full(log_q.shape, -np.inf)
    log_sw = math.log(sigma_w2)
    if act.code in HOMOGENEOUS:
        return np.full(log_q.shape, log_sw + math.log(expectation(act, 1.0, (1, 1), degree)))
    out = np.empty(log_q.shape)
    tiny = log_q < math.log(Q_LINEAR_BELOW)
    big_relu = (log_q > math.log(Q_ASYMPTOTE_ABOVE)) & (act.code in RELU_LIKE)
    big_bounded = (log_q > math.log(1e300)) & (act.code not in RELU_LIKE) & (act.code < SIN)
    big_other = (log_q > math.log(1e300)) & (act.code >= SIN)
    if big_other.any() and act.code not in (SIN, COS):
        raise ValueError(
            f"the gradient variance of {act.name} is implemented for q <= 1e300, got log q up to {float(log_q.max()):.6g}"
        )
    mid = ~(tiny | big_relu | big_bounded | big_other)
    d0 = float(evaluate_call(act.code, act.param, 1, 0.0))
    with np.errstate(divide="ignore"):
        out[tiny] = log_sw + math.log(d0 * d0) if d0 != 0 else -np.inf
        out[big_relu] = log_sw + math.log(0.5)
        out[big_other] = log_sw + math.log(0.5)  # sin, cos: E cos(u)^2, E sin(u)^2 -> 1/2
        if big_bounded.any():  # E phi'(u)^2 ~ (int phi'^2) / sqrt(2 pi q): relative error O(1/q)
            out[big_bounded] = (
                log_sw
                + math.log(expectation(act, 1e300, (1, 1), degree))
                - 0.5 * (log_q[big_bounded] - math.log(1e300))
            )
        if mid.any():
            out[mid] = log_sw + np.log(expectation(act, np.exp(log_q[mid]), (1, 1), degree))
    return out


def backward_variance(
    q0: float,
    activation: str | Activation,
    sigma_w2: float,
    sigma_b2: float,
    depth: int,
    log: bool = False,
    degree: int = DEFAULT_DEGREE,
) -> np.ndarray:
    r"""Mean-field ratio of gradient variance at layer l to that at the last layer L = ``depth``.

    With :math:`\delta^l = \partial E / \partial h^l` and the gradient-independence assumption,
    :math:`\mathbb{E}(\delta^l)^2 = \sigma_w^2\,\mathbb{E}\,\phi'(h^l)^2\;\mathbb{E}(\delta^{l+1})^2`
    (Schoenholz et al. 2017, eq. 14; Xiao et al. 2018 eq. 2.16), so

    .. math:: \frac{\tilde q^l}{\tilde q^L} = \prod_{k=l}^{L-1} \sigma_w^2\,\mathbb{E}\,\phi'(\sqrt{q^k}z)^2
        \;\to\; \chi_1^{L-l} \text{ at the fixed point.}

    Parameters
    ----------
    q0 : float
        Pre-activation variance of layer 1 (>= 0, finite); ``q^{l+1} = qmap(q^l)`` (carried on a
        log scale: any depth). The state comes first, as in :func:`qmap` and :func:`propagate`.
    activation : str or Activation
        A built-in activation.
    sigma_w2, sigma_b2 : float
        Variances (>= 0), scalars.
    depth : int
        L, the number of layers (1 <= L <= MAX_DEPTH + 1).
    log : bool
        Return the natural log of the ratio (never overflows or underflows).
    degree : int
        Gauss-Hermite degree for activations without closed forms.

    Returns
    -------
    ndarray, shape (depth,)
        Entry l - 1 is the ratio for layer l = 1..L (the last entry is 1, or 0 with ``log``). With
        ``log=True`` an entry is ``-inf`` exactly where the ratio is exactly 0 (sigma_w2 = 0).

    Raises
    ------
    ValueError
        Bad arguments; with ``log=False``, a ratio beyond the float64 range (overflow, or a
        non-zero ratio below the smallest normal float): pass ``log=True``.
    TypeError
        Complex, boolean or array variances; ``log`` not a bool.
    """
    act = _act(activation)
    log = check_bool(log, "log")
    depth = check_int(depth, "depth", 1, MAX_DEPTH + 1)
    q0 = check_nonnegative_scalar(q0, "q0")
    sigma_w2, sigma_b2 = _variances(sigma_w2, sigma_b2)
    traj = propagate_log(np.array([[q0]]), act, sigma_w2, sigma_b2, depth - 1, degree)
    logs = _log_chi1_along(act, sigma_w2, traj.log_q[:, 0], degree)
    # suffix sums: log ratio at l = sum_{k=l}^{L-1} log chi(q^k)
    log_ratio = np.concatenate([np.cumsum(logs[:-1][::-1])[::-1], [0.0]])
    if log:
        return log_ratio
    finite = np.isfinite(log_ratio)
    if np.any(log_ratio[finite] > LOG_DBL_MAX) or np.any(log_ratio[finite] < LOG_DBL_MIN):
        raise ValueError(
            "the gradient-variance ratio leaves the normal float64 range at this depth (overflow or "
            "underflow): pass log=True"
        )
    with np.errstate(under="ignore"):
        return np.exp(log_ratio)
