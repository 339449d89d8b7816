r"""Exact finite-width signal propagation in Gaussian ReLU ensembles (Burkholz & Dubatovka 2019, seed 001).

Given the previous layer's signal ``x`` with ``|x|^2 = y``, every pre-activation of a layer with
Gaussian weights and biases is exactly ``h_i ~ N(0, sigma_y^2)``, ``sigma_y^2 = sigma_w2 * y + sigma_b2``,
independently over the ``N`` neurons. The squared norm of the next signal, ``z = |phi(h)|^2``, is
therefore the ``N``-fold convolution of the law of ``phi(h_i)^2``; its density ``k(y, z)`` is the
kernel of the linear operator ``T_l`` that maps the law of ``|x^(l-1)|^2`` to that of ``|x^(l)|^2``
(seed 001, Prop. 1, eq. 1).

Parametrisation (the paper's, kept here): weight variances are **not** scaled by the width,
``W_ij ~ N(0, sigma_w2)``; He initialisation is ``sigma_w2 = 2 / N``. (Elsewhere in the library,
``sigma_w2`` is multiplied by ``1 / fan_in``.)

Code name                         paper symbol / statement
================================  ======================================================================
:func:`relu_kernel`               ``k_l(y, z)`` of Prop. 4, eq. 7 (atom ``0.5^N`` at ``z = 0`` + chi-square mixture)
:func:`kernel_masses`             ``k_l(y, .)`` on a grid, any activation (``p_{phi(h)^2}^{*N}`` by FFT, Prop. 1)
:func:`relu_eigenvalue`           ``lambda_{l,m}`` of Prop. 4, eq. 8, **derived** prefactor ``0.5^(N+m+1)``
:func:`relu_eigenvalue_printed`   eq. 8 as printed (prefactor ``0.5^(N-m-1)``); the curve of Fig. 1b
:func:`critical_exponents`        the ``m`` with ``lambda_m = 1`` (paper: ``m_crit ~ -3.256 - 1.621 N``)
:func:`quasi_stationary_exponent` the ``m`` of the discretised operator's positive eigenvector ``~ y^m``
:func:`discretize_operator`       ``T_l`` on a grid (Sec. 2.2: "approximated numerically ... FFT")
:func:`propagate_distribution`    ``p_L = prod_l T_l p_0`` (Fig. 1a)
:func:`expected_squared_norm`     Cor. 3, eqs. 5-6
:func:`preactivation_covariance`  Prop. 2, eq. 4
:func:`orthant_probability`       ``g(rho)`` of Thm. 5
:func:`relu_correlation`          ``Cor(x1, x2)`` of Thm. 5
:func:`mean_inner_product`        eq. 9 (eq. 10 is its linear interpolation, see Notes there)
:func:`relu_product_density`      the K0 part of ``f_prod`` in Thm. 5
:func:`inner_product_law`         ``f_prod^{*N}``, the law of ``<x1, x2>`` given the previous layer
:func:`cosine_similarity_samples` the Fig. 2 simulation (iid bivariate normal components, ReLU, cosine)
================================  ======================================================================

Where the printed paper and the derivation differ (each verified numerically by the tests):

* Prop. 1 prints ``h_y ~ N(0, sigma_w^2 y^2 + sigma_b^2)``; with ``y = |x|^2`` the variance is
  ``sigma_w^2 y + sigma_b^2`` (as in the paper's eq. 2), which is what is implemented.

* eq. 8: the eigenvalue of ``y^m`` is
  ``0.5^(N+m+1) sigma_w^-(2m+2) sum_{k=1}^N C(N,k) Gamma(k/2-m-1) / Gamma(k/2)``, valid for
  ``m < -1/2`` (the ``k = 1`` moment ``E chi_1^{2(-m-1)}`` exists only there); the printed
  prefactor ``0.5^(N-m-1)`` differs by the factor ``4^(m+1)``.
* With He ``sigma_w2 = 2/N`` the derived eigenvalue equals 1 exactly at ``m = -2`` (mean
  preservation, Cor. 3) and at one ``m_+`` in ``(-1, -1/2)`` (``m_+ -> -1`` as ``N`` grows); it is
  below 1 only on ``(-2, m_+)``. The paper's relation ``m_crit ~ -3.2559793 - 1.6207083 N`` is
  close to the lower root of the *printed* formula (see :func:`critical_exponents`).
* Thm. 5: ``Cor(x1, x2) <= rho`` holds on ``[0, 1]`` only; for ``rho < 0`` the correlation after
  ReLU is larger than ``rho`` (``Cor(-1) = -1 / (pi - 1)``).

References
----------
R. Burkholz and A. Dubatovka, "Initialization of ReLUs for Dynamical Isometry", NeurIPS 2019.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np
from scipy import optimize, special

from ._checks import (
    as_float_array,
    check_correlation,
    check_covariance,
    check_int,
    check_nonnegative,
    check_positive,
    check_rng,
)
from .activations import get_activation

__all__ = [
    "DiscreteOperator",
    "Layer",
    "RELU_EIGEN_M_MAX",
    "TransitionKernel",
    "CriticalExponents",
    "cosine_similarity_samples",
    "critical_exponents",
    "discretize_operator",
    "expected_squared_norm",
    "grid_masses",
    "inner_product_law",
    "kernel_masses",
    "mean_inner_product",
    "orthant_probability",
    "preactivation_covariance",
    "propagate_distribution",
    "quasi_stationary_exponent",
    "relu_correlation",
    "relu_eigenvalue",
    "relu_eigenvalue_printed",
    "relu_log_eigenvalue",
    "relu_kernel",
    "relu_product_density",
]

#: The eigenfunction ``y^m`` has a finite eigenvalue only for ``m < RELU_EIGEN_M_MAX`` (= -1/2).
RELU_EIGEN_M_MAX = -0.5
_LOG2 = math.log(2.0)
#: Binomial terms with log-weight below the largest minus this are dropped (weight < 1e-30 each);
#: the dropped weight is returned to the last cell so that columns still sum to one.
_LOG_PRUNE = 69.0


# --------------------------------------------------------------------------------------------------
# argument helpers
# --------------------------------------------------------------------------------------------------


def _width(width, name="width") -> int:
    return check_int(width, name, 1)


def _binomial_log_weights(n: int) -> tuple[np.ndarray, np.ndarray]:
    """``k = 1..n`` and ``log(C(n, k) 0.5^n)``, pruned to the terms that matter."""
    k, logw = _log_binomial_half(n)
    keep = logw > logw.max() - _LOG_PRUNE
    return k[keep], logw[keep]


# --------------------------------------------------------------------------------------------------
# the transition kernel (Prop. 1, Prop. 4 eq. 7)
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TransitionKernel:
    """``k(y, z) = atom * delta_0(z) + density(z)`` for ``z >= 0`` (seed 001, Prop. 4, eq. 7).

    Attributes
    ----------
    atom : ndarray
        ``P(z = 0 | y)``: ``0.5^N`` when ``sigma_y^2 > 0`` (every neuron inactive), 1 otherwise.
    density : ndarray
        The continuous part at ``z > 0`` (0 at ``z <= 0``).
    """

    atom: np.ndarray
    density: np.ndarray

    def replace(self, **changes) -> "TransitionKernel":
        return replace(self, **changes)


def relu_kernel(y, z, width, sigma_w2, sigma_b2=0.0) -> TransitionKernel:
    r"""ReLU transition kernel ``k(y, z)`` of the squared signal norm (seed 001, Prop. 4, eq. 7).

    .. math::
        k(y, z) = 0.5^N\Big(\delta_0(z) + \sum_{k=1}^N \binom{N}{k}\frac{1}{\sigma_y^2}
        p_{\chi^2_k}\big(z / \sigma_y^2\big)\Big), \qquad \sigma_y^2 = \sigma_w^2 y + \sigma_b^2.

    Derivation: given ``|x|^2 = y`` the ``N`` pre-activations are iid ``N(0, sigma_y^2)``; a
    Binomial(N, 1/2) number ``k`` of them is positive and ``z = sigma_y^2 chi^2_k``.
    Evaluated in log space (log-sum-exp over ``k``), so it neither overflows nor underflows for
    widths up to 10^5.

    Parameters
    ----------
    y, z : array_like
        Previous and next squared norms (>= 0); broadcast together.
    width : int
        ``N >= 1``, the number of neurons of the layer.
    sigma_w2, sigma_b2 : float
        Weight and bias variances, unscaled by the width (He: ``sigma_w2 = 2 / N``).

    Returns
    -------
    TransitionKernel
    """
    n = _width(width)
    y = check_nonnegative(y, "y")
    z = check_nonnegative(z, "z")
    sw = check_nonnegative(sigma_w2, "sigma_w2")
    sb = check_nonnegative(sigma_b2, "sigma_b2")
    yb, zb = np.broadcast_arrays(np.asarray(y, float), np.asarray(z, float))
    s = sw * yb + sb
    k, logw = _binomial_log_weights(n)
    pos = (s > 0) & (zb > 0)
    dens = np.zeros(yb.shape)
    if np.any(pos):
        x = zb[pos] / s[pos]
        # log chi^2_k density at x, summed over k in log space
        lx = np.log(x)
        logp = (
            logw[None, :]
            + (k[None, :] / 2 - 1) * lx[:, None]
            - x[:, None] / 2
            - (k[None, :] / 2) * _LOG2
            - special.gammaln(k[None, :] / 2)
        )
        dens[pos] = np.exp(special.logsumexp(logp, axis=1) - np.log(s[pos]))
    atom = np.where(s > 0, 0.5**n, 1.0)
    return TransitionKernel(atom=atom, density=dens)


# --------------------------------------------------------------------------------------------------
# eigenvalues (Prop. 4, eq. 8)
# --------------------------------------------------------------------------------------------------


def _stirling_tail(x):
    """``lgamma(x) - [(x - 1/2) log x - x + log(2 pi) / 2]`` for ``x >= 30`` (error < 3e-14)."""
    r = 1.0 / x
    r2 = r * r
    return r * (1 / 12 - r2 * (1 / 360 - r2 / 1260))


def _log_gamma_ratio(a, s):
    """``log Gamma(a + s) - log Gamma(a)`` without the cancellation of two large ``gammaln``."""
    a, s = np.broadcast_arrays(np.asarray(a, float), np.asarray(s, float))
    b = a + s
    big = (a >= 30) & (b >= 30)
    out = np.empty(a.shape)
    small = ~big
    out[small] = special.gammaln(b[small]) - special.gammaln(a[small])
    ab, sb, bb = a[big], s[big], b[big]
    out[big] = (ab - 0.5) * np.log1p(sb / ab) + sb * np.log(bb) - sb + _stirling_tail(bb) - _stirling_tail(ab)
    return out


def _log_binomial_half(n):
    """``k = 1..n`` and ``log(C(n, k) 0.5^n)`` (accurate for n up to 10^5 and beyond)."""
    from scipy import stats

    k = np.arange(0, n + 1, dtype=np.float64)
    logw = stats.binom.logpmf(k, n, 0.5)
    # logpmf is accurate to ~1e-10 at n = 1e5; the weights sum to 1 exactly, so renormalise
    logw = logw - special.logsumexp(logw)
    return k[1:], logw[1:]


def _log_gamma_sum(m, n):
    """``log sum_{k=1}^n C(n,k) 0.5^n Gamma(k/2 - m - 1) / Gamma(k/2)`` for each ``m`` (array)."""
    k, logw = _log_binomial_half(n)
    m = np.atleast_1d(m)
    out = np.empty(m.shape)
    chunk = max(1, 2_000_000 // n)
    flat = m.reshape(-1)
    res = out.reshape(-1)
    for i in range(0, flat.size, chunk):
        mm = flat[i : i + chunk, None]
        t = logw[None, :] + _log_gamma_ratio(k[None, :] / 2, -mm - 1)
        res[i : i + chunk] = special.logsumexp(t, axis=1)
    return out


def _check_m(m):
    m = as_float_array(m, "m")
    if np.any(m >= RELU_EIGEN_M_MAX):
        raise ValueError(
            f"m must be < -1/2 (y^m is an eigenfunction with finite eigenvalue only there; "
            f"the k = 1 term needs Gamma(1/2 - m - 1) finite), got {m}"
        )
    return m


def relu_log_eigenvalue(m, width, sigma_w2):
    """Natural log of :func:`relu_eigenvalue` (seed 001, Prop. 4, eq. 8 as derived), finite for every width.

    Evaluated as ``-(m+1) log(2 sigma_w2) + logsumexp_k [log(C(N,k) 0.5^N) + log Gamma(k/2-m-1) -
    log Gamma(k/2)]`` with Stirling differences for large Gamma arguments, so widths up to 10^5
    and very negative ``m`` neither overflow nor lose precision.

    Parameters
    ----------
    m : float or array_like
        Exponent(s), ``m < -1/2``.
    width : int
        ``N >= 1``.
    sigma_w2 : float
        ``> 0``, unscaled by the width.

    Returns
    -------
    float or ndarray
        ``log lambda_m``.

    Raises
    ------
    ValueError
        ``m >= -1/2``, ``width < 1``, ``sigma_w2 <= 0`` or non-finite input.
    """
    n = _width(width)
    m = _check_m(m)
    sw = check_positive(sigma_w2, "sigma_w2")
    mm = np.asarray(m, float)
    out = -(mm + 1) * (_LOG2 + math.log(sw)) + _log_gamma_sum(mm, n).reshape(mm.shape)
    return float(out) if out.ndim == 0 else out


def relu_eigenvalue(m, width, sigma_w2):
    r"""Eigenvalue of the eigenfunction ``y^m`` of the ReLU operator ``T_l`` with ``sigma_b = 0``.

    Derived from the kernel of Prop. 4 (seed 001, eq. 8 corrected):

    .. math::
        T_l[y^m](z) = \lambda_m z^m,\qquad
        \lambda_m = 0.5^{N+m+1}\,\sigma_w^{-2(m+1)} \sum_{k=1}^{N}\binom{N}{k}
        \frac{\Gamma(k/2-m-1)}{\Gamma(k/2)},

    because ``int_0^inf y^m (sigma_w^2 y)^-1 p_k(z / (sigma_w^2 y)) dy = z^m sigma_w^{-2(m+1)}
    E[(chi^2_k)^{-m-1}]`` and ``E[(chi^2_k)^s] = 2^s Gamma(k/2 + s) / Gamma(k/2)`` for
    ``s > -k/2``. The printed eq. 8 has ``0.5^(N-m-1)`` (:func:`relu_eigenvalue_printed`).
    ``lambda_{-1} = 1 - 0.5^N`` for every ``sigma_w2``; with He ``sigma_w2 = 2/N``,
    ``lambda_{-2} = 1``.

    Parameters
    ----------
    m : float or array_like
        Exponent(s), ``m < -1/2``.
    width : int
        ``N >= 1``.
    sigma_w2 : float
        ``> 0``, unscaled by the width.

    Returns
    -------
    float or ndarray
        ``inf`` where the value exceeds the float range (very negative ``m``), never NaN.

    Raises
    ------
    ValueError
        ``m >= -1/2``, ``width < 1`` or ``sigma_w2 <= 0``.

    Examples
    --------
    >>> round(relu_eigenvalue(-1.0, 10, 0.37), 12)      # 1 - 0.5**10, any sigma_w2
    0.9990234375
    >>> round(relu_eigenvalue(-2.0, 100, 2 / 100), 12)  # He preserves y^-2
    1.0
    """
    with np.errstate(over="ignore"):
        out = np.exp(relu_log_eigenvalue(m, width, sigma_w2))
    return float(out) if np.ndim(out) == 0 else out


def relu_eigenvalue_printed(m, width, sigma_w2):
    """Eq. 8 of seed 001 exactly as printed (prefactor ``0.5^(N-m-1)``), kept for Fig. 1b.

    Equals ``relu_eigenvalue(m, width, sigma_w2) * 4^(m+1)``. It does **not** equal the
    eigenvalue obtained by quadrature of the defining integral (tests pin this); the paper's
    critical-exponent relation and Fig. 1b follow this variant.

    Parameters
    ----------
    m : float or array_like
        Exponent(s), ``m < -1/2``.
    width : int
        ``N >= 1``.
    sigma_w2 : float
        ``> 0``, unscaled by the width.

    Returns
    -------
    float or ndarray
        ``inf`` beyond the float range, never NaN.

    Raises
    ------
    ValueError
        As :func:`relu_eigenvalue`.
    """
    m = _check_m(m)
    with np.errstate(over="ignore"):
        out = np.exp(relu_log_eigenvalue(m, width, sigma_w2) + 2 * (np.asarray(m) + 1) * _LOG2)
    return float(out) if np.ndim(out) == 0 else out


@dataclass(frozen=True)
class CriticalExponents:
    """Exponents ``m`` with eigenvalue 1 (seed 001, Sec. 2.3).

    Attributes
    ----------
    lower, upper : float
        Roots of ``lambda_m = 1`` of the derived eigenvalue, ``lower < upper < -1/2``; the
        derived eigenvalue is below 1 exactly on ``(lower, upper)``. Both always exist (see
        :func:`critical_exponents`).
    printed_lower, printed_upper : float
        The same for :func:`relu_eigenvalue_printed`.
    paper_relation : float
        The paper's stated fit ``-3.2559793 - 1.6207083 N`` (He initialisation).
    """

    lower: float
    upper: float
    printed_lower: float
    printed_upper: float
    paper_relation: float

    def replace(self, **changes) -> "CriticalExponents":
        return replace(self, **changes)


#: Bracket expansion steps of :func:`_convex_bracket` (2^60: far beyond any root in float range).
_MAX_EXPANSIONS = 60


def _convex_bracket(f):
    """``(lo, m_min, hi)`` for a convex ``f`` on ``(-inf, -1/2)`` tending to +inf at both ends.

    ``lo < m_min < hi < -1/2`` with ``f(lo) > 0``, ``f(hi) > 0`` and ``m_min`` the minimiser, so
    every root of ``f`` lies in ``(lo, m_min]`` or ``[m_min, hi)``. ``log lambda_m`` is convex in
    ``m`` (a positive mixture of moments ``E X^s``, each log-convex by Hoelder) and tends to
    infinity as ``m -> -inf`` (Gamma growth) and as ``m -> -1/2`` (the ``k = 1`` moment).

    Raises
    ------
    FloatingPointError
        No bracket in float range (a root closer to -1/2 than float resolution, or beyond 2^60).
    """
    lo = -3.0  # start points avoid -2 and -1, which are roots (to rounding) in common cases
    for _ in range(_MAX_EXPANSIONS):
        if f(lo) > 0:
            break
        lo = 2.0 * lo
    else:
        raise FloatingPointError("log lambda_m stays <= 0 down to m = -2^60: no lower bracket in float range")
    gap = 0.25
    for _ in range(_MAX_EXPANSIONS):
        hi = RELU_EIGEN_M_MAX - gap
        if f(hi) > 0:
            break
        gap *= 0.5
    else:
        raise FloatingPointError("log lambda_m stays <= 0 up to m = -1/2 - 2^-60: no upper bracket in float range")
    res = optimize.minimize_scalar(f, bounds=(lo, hi), method="bounded", options={"xatol": 1e-10})
    return lo, float(res.x), hi


def _roots(f):
    """Both roots of the convex ``f`` (see :func:`_convex_bracket`), Brent to 1e-13."""
    lo, m_min, hi = _convex_bracket(f)
    if not f(m_min) < 0:
        raise FloatingPointError(
            "lambda_m >= 1 for every m to float precision at these parameters (the interval where "
            "lambda_m < 1 is narrower than the float resolution); use relu_log_eigenvalue directly"
        )
    lower = optimize.brentq(f, lo, m_min, xtol=1e-13, rtol=4 * np.finfo(float).eps)
    upper = optimize.brentq(f, m_min, hi, xtol=1e-13, rtol=4 * np.finfo(float).eps)
    return lower, upper


def critical_exponents(width, sigma_w2=None) -> CriticalExponents:
    """The exponents ``m`` at which the eigenvalue of ``y^m`` equals 1 (seed 001, Sec. 2.3, eq. 8).

    Parameters
    ----------
    width : int
        ``N >= 1``.
    sigma_w2 : float, optional
        ``> 0``, unscaled by the width; default He, ``2 / N``.

    Returns
    -------
    CriticalExponents

    Raises
    ------
    ValueError
        ``width < 1`` or ``sigma_w2 <= 0``.
    FloatingPointError
        The roots are not separable in float precision (never for the tested ``N <= 3000``).

    Notes
    -----
    ``log lambda_m`` is convex in ``m`` (a mixture of moments ``E X^s``) and tends to infinity as
    ``m -> -inf`` and ``m -> -1/2``, and ``lambda_{-1} = 1 - 0.5^N < 1`` for both the derived and
    the printed formula, so each has exactly two roots. They are bracketed around the minimiser
    (bracket expansion, no fixed scan range) and refined by Brent's method. For He the derived
    roots are ``m = -2`` (exactly, since ``E[z | y] = y``) and ``m_+`` just above ``-1``. The paper
    states ``m_crit ~ -3.2559793 - 1.6207083 N`` with a window ``m_crit < m <= -1``; that is not
    reproduced by the derived eigenvalue. The printed formula's lower root is -18.55, -34.73,
    -164.22 at N = 10, 20, 100 (paper relation: -19.46, -35.67, -165.33), i.e. the paper's slope.
    For N >~ 50, ``1 - 0.5^N`` rounds to 1 and ``upper`` is -1 to rounding.

    Examples
    --------
    >>> ce = critical_exponents(10)
    >>> round(ce.lower, 6), round(ce.upper, 6), round(ce.printed_lower, 2)
    (-2.0, -0.996836, -18.55)
    """
    n = _width(width)
    sw = 2.0 / n if sigma_w2 is None else check_positive(sigma_w2, "sigma_w2")

    def logf(m):
        return float(relu_log_eigenvalue(m, n, sw))

    def logp(m):
        return logf(m) + 2 * (m + 1) * _LOG2

    lo, up = _roots(logf)
    plo, pup = _roots(logp)
    return CriticalExponents(lo, up, plo, pup, -3.2559793 - 1.6207083 * n)


def quasi_stationary_exponent(width, sigma_w2=None) -> float:
    """The exponent ``m != -1`` with ``lambda_m = 1 - 0.5^N``: the shape ``y^m`` of the law conditioned on survival.

    Every column of the (``sigma_b = 0``) operator sends exactly ``0.5^N`` of the mass of ``z > 0``
    to the absorbing atom, so the law restricted to ``z > 0`` has the Perron eigenvalue
    ``1 - 0.5^N`` of the discretised operator; its eigenvector has density ``~ y^m`` with ``m``
    the root of ``lambda_m = 1 - 0.5^N`` other than ``m = -1`` (which holds for every
    ``sigma_w2``). This makes precise the paper's remark that discretised eigenvectors
    "attain shapes ~ y^m" (seed 001, after Prop. 4, eq. 8). He (``2 / N``): ``m`` just above -2.

    Parameters
    ----------
    width : int
        ``N >= 1``.
    sigma_w2 : float, optional
        ``> 0``, unscaled by the width; default He, ``2 / N``.

    Returns
    -------
    float
        The second root. It lies below -1 when ``sigma_w2`` is small enough (He included); for
        larger ``sigma_w2`` it lies in ``(-1, -1/2)``, where ``y^m`` is not integrable at infinity
        and a grid eigenvector is shaped by the grid's truncation instead (the root is still
        returned). ``-1.0`` when the two roots coincide to float precision.

    Raises
    ------
    ValueError
        ``width < 1`` or ``sigma_w2 <= 0``.
    """
    n = _width(width)
    sw = 2.0 / n if sigma_w2 is None else check_positive(sigma_w2, "sigma_w2")
    target = math.log1p(-(0.5**n))

    def f(m):
        return float(relu_log_eigenvalue(m, n, sw)) - target

    lo, m_min, hi = _convex_bracket(f)
    if not f(m_min) < 0 or abs(m_min + 1.0) < 1e-9:
        return -1.0  # double root at m = -1 (to float precision)
    tol = dict(xtol=1e-13, rtol=4 * np.finfo(float).eps)
    return optimize.brentq(f, lo, m_min, **tol) if m_min < -1.0 else optimize.brentq(f, m_min, hi, **tol)


# --------------------------------------------------------------------------------------------------
# discretised operator (Prop. 1 on a grid)
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Layer:
    """One layer's parameters in the paper's parametrisation (``W_ij ~ N(0, sigma_w2)``)."""

    width: int
    sigma_w2: float
    sigma_b2: float = 0.0


def _check_grid(grid) -> np.ndarray:
    g = as_float_array(grid, "grid")
    if g.ndim != 1 or g.size < 2:
        raise ValueError(f"grid must be a 1-d array of at least 2 cell edges, got shape {g.shape}")
    if g[0] != 0.0:
        raise ValueError(f"grid must start at 0 (the first cell edge), got {g[0]}")
    if np.any(np.diff(g) <= 0):
        raise ValueError("grid must be strictly increasing")
    return g


@dataclass(frozen=True)
class DiscreteOperator:
    """``T_l`` as a column-stochastic matrix on the states {atom at 0} + cells (seed 001, Sec. 2.2).

    State 0 is the atom ``z = 0``; state ``j >= 1`` the cell ``(grid[j-1], grid[j]]``. A law is a
    vector of masses ``p`` (sum 1); the next layer's is ``matrix @ p``.

    Attributes
    ----------
    grid : ndarray
        Cell edges, ``grid[0] = 0``.
    matrix : ndarray, shape (G, G)
        ``matrix[i, j] = P(next state i | state j)``; every column sums to 1 (mass beyond the last
        edge is put into the last cell, see ``tail``).
    tail : ndarray, shape (G,)
        Mass per column that fell beyond ``grid[-1]`` and was lumped into the last cell.
    layer : Layer
    activation : str
    """

    grid: np.ndarray
    matrix: np.ndarray
    tail: np.ndarray
    layer: Layer
    activation: str

    @property
    def centers(self) -> np.ndarray:
        """Representative points of the states: 0 for the atom, cell midpoints otherwise."""
        return np.concatenate([[0.0], 0.5 * (self.grid[1:] + self.grid[:-1])])

    def eig(self):
        """Eigenvalues (sorted by decreasing modulus) and eigenvectors (columns) of ``matrix``."""
        w, v = np.linalg.eig(self.matrix)
        order = np.argsort(-np.abs(w))
        return w[order], v[:, order]

    def replace(self, **changes) -> "DiscreteOperator":
        return replace(self, **changes)


def _source_nodes(grid, nodes_per_cell):
    """Gauss-Legendre nodes in every cell and their weights (summing to 1 per cell)."""
    x, w = np.polynomial.legendre.leggauss(nodes_per_cell)
    a, b = grid[:-1], grid[1:]
    y = 0.5 * (a + b)[:, None] + 0.5 * (b - a)[:, None] * x[None, :]
    return y, np.broadcast_to(0.5 * w, y.shape)


def _gamma_mixture_cdf(x, k, w):
    """``sum_k w_k P(k/2, x)`` (regularised lower incomplete gamma) for consecutive ``k``.

    Upward recurrence ``Q(a + 1, x) = Q(a, x) + x^a e^-x / Gamma(a + 1)`` on each parity chain
    (adds positive terms: stable), two ``gammaincc`` calls per chain instead of one per ``k``.
    """
    out = np.zeros(x.shape)
    with np.errstate(divide="ignore"):
        lx = np.log(x)
    for parity in (0, 1):
        sel = (k.astype(np.int64) % 2) == parity
        if not np.any(sel):
            continue
        ks, ws = k[sel], w[sel]
        a = ks[0] / 2
        q = special.gammaincc(a, x)
        for j, (kk, ww) in enumerate(zip(ks, ws)):
            if j:
                a_prev = ks[j - 1] / 2
                q = q + np.exp(a_prev * lx - x - special.gammaln(a_prev + 1))
                q = np.minimum(q, 1.0)
            out += ww * (1.0 - q)
    return out


def _relu_cell_masses(y, grid, n, sw, sb):
    """``P(z in cell j | y)`` for each source ``y`` (1-d) and the tail mass beyond the grid."""
    s = sw * y + sb
    k, logw = _binomial_log_weights(n)
    w = np.exp(logw)
    pos = s > 0
    x = grid[None, :] / np.where(pos, s, 1.0)[:, None] / 2.0  # chi^2_k <= t  <=>  Gamma(k/2) <= t/2
    cdf = _gamma_mixture_cdf(x, k, w)
    cont = np.diff(cdf, axis=1)  # mass in (grid[j-1], grid[j]] from the continuous part
    total_cont = 1.0 - 0.5**n  # exact, including pruned terms
    tail = np.maximum(total_cont - cdf[:, -1], 0.0)  # >= 0 up to rounding
    masses = np.zeros((y.size, grid.size))
    masses[:, 0] = 0.5**n
    masses[:, 1:] = cont
    masses[:, -1] += tail
    masses[~pos] = 0.0
    masses[~pos, 0] = 1.0
    tail = np.where(pos, tail, 0.0)
    return masses, tail


def _truncated_power(p, n):
    """First ``len(p)`` entries of the ``n``-fold self-convolution of the non-negative vector ``p``."""
    size = p.size
    nfft = 1 << int(math.ceil(math.log2(2 * size)))

    def mul(a, b):
        out = np.fft.irfft(np.fft.rfft(a, nfft) * np.fft.rfft(b, nfft), nfft)[:size]
        return np.maximum(out, 0.0)

    result = np.zeros(size)
    result[0] = 1.0
    base = p.copy()
    while n:
        if n & 1:
            result = mul(result, base)
        n >>= 1
        if n:
            base = mul(base, base)
    return result


def _fft_cell_masses(y, grid, n, sw, sb, act, n_quantiles):
    """Cell masses of ``sum_i phi(h_i)^2`` by FFT convolution on the equidistant grid (any activation).

    The law of ``u = phi(h)^2`` is represented by ``n_quantiles`` equiprobable Gaussian quantiles;
    exact zeros form an atom ``a``, the rest is spread onto the lattice ``j * dz`` linearly (mean
    preserving). ``(a + C)^N`` is formed by truncated FFT powers; lattice point ``j * dz`` is split
    half/half between cells ``j`` and ``j + 1`` (the cell edges it sits on).
    """
    dz = grid[1] - grid[0]
    size = grid.size  # lattice points 0..G-1
    probs = (np.arange(n_quantiles) + 0.5) / n_quantiles
    zq = special.ndtri(probs)
    masses = np.zeros((y.size, grid.size))
    tails = np.zeros(y.size)
    for i, yi in enumerate(y):
        s = sw * yi + sb
        if s <= 0:
            u = np.full(n_quantiles, float(act.phi(np.array([0.0]))[0]) ** 2)
        else:
            u = np.asarray(act.phi(math.sqrt(s) * zq), float) ** 2
        is_zero = u == 0.0
        a = is_zero.mean()
        t = u[~is_zero] / dz
        lo = np.floor(t).astype(np.int64)
        frac = t - lo
        c = np.zeros(size + 1)
        np.add.at(c, np.minimum(lo, size), (1 - frac) / n_quantiles)
        np.add.at(c, np.minimum(lo + 1, size), frac / n_quantiles)
        c = c[:size]  # mass beyond the lattice never comes back: truncation is exact below
        p = c.copy()
        p[0] += a
        law = _truncated_power(p, n)
        atom = a**n
        law[0] = max(law[0] - atom, 0.0)
        cells = np.zeros(grid.size)
        cells[0] = atom
        cells[1:] += 0.5 * law[: size - 1]
        cells[1:] += 0.5 * law[1:size]
        cells[1] += 0.5 * law[0]  # lattice 0 (positive but tiny sums): all into the first cell
        tail = max(1.0 - cells.sum(), 0.0)
        cells[-1] += tail
        masses[i] = cells / cells.sum()
        tails[i] = tail
    return masses, tails


def kernel_masses(y, grid, width, sigma_w2, sigma_b2=0.0, activation="relu", method="auto", n_quantiles: int = 4096):
    """Law of the next squared norm given ``|x|^2 = y``, as masses on the states of ``grid``.

    ReLU: closed form (Prop. 4; exact cell masses from chi-square CDFs). Any other built-in
    activation, or ``method="fft"``: the ``N``-fold convolution of the law of ``phi(h)^2``,
    ``h ~ N(0, sigma_w2 y + sigma_b2)``, by truncated FFT powers on the equidistant grid (Prop. 1).

    Parameters
    ----------
    y : float or array_like
        Previous squared norm(s) (>= 0).
    grid : array_like
        Cell edges starting at 0 (equidistant on the FFT path).
    width : int
        ``N >= 1``.
    sigma_w2, sigma_b2 : float
        Unscaled weight and bias variances (>= 0).
    activation : str
        Built-in activation name; ``"relu"`` has the closed form.
    method : {"auto", "closed", "fft"}
        ``"fft"`` forces the general path (e.g. to cross-check it against the closed form).
    n_quantiles : int
        Equiprobable Gaussian quantiles representing ``phi(h)^2`` on the FFT path (>= 16); the
        FFT path's error is O(grid step) + O(N / n_quantiles).

    Returns
    -------
    ndarray, shape (len(y), len(grid))
        Row ``i``: mass of the atom at 0, then of each cell; rows sum to 1 (mass beyond the grid
        lumped into the last cell).
    """
    g = _check_grid(grid)
    n = _width(width)
    y = np.atleast_1d(check_nonnegative(y, "y")).astype(float)
    sw = check_nonnegative(sigma_w2, "sigma_w2")
    sb = check_nonnegative(sigma_b2, "sigma_b2")
    act = get_activation(activation)
    if method not in ("auto", "closed", "fft"):
        raise ValueError(f"method must be 'auto', 'closed' or 'fft', got {method!r}")
    if act.name == "relu" and method != "fft":
        return _relu_cell_masses(y, g, n, sw, sb)[0]
    if method == "closed":
        raise ValueError("method='closed' exists for activation 'relu' only")
    steps = np.diff(g)
    if not np.allclose(steps, steps[0], rtol=1e-9, atol=0.0):
        raise ValueError(f"grid must be equidistant for the FFT path (activation {act.name!r})")
    check_int(n_quantiles, "n_quantiles", 16)
    return _fft_cell_masses(y, g, n, sw, sb, act, n_quantiles)[0]


def discretize_operator(
    grid,
    width,
    sigma_w2,
    sigma_b2=0.0,
    activation="relu",
    nodes_per_cell: int = 3,
    n_quantiles: int = 4096,
    method: str = "auto",
) -> DiscreteOperator:
    """A mass-conserving matrix for ``T_l`` on a grid, the atom at 0 included (seed 001, Prop. 1).

    Column ``j`` is the law of the next squared norm given that the current one is distributed
    uniformly on cell ``j`` (Gauss-Legendre average over ``nodes_per_cell`` source points), or is
    exactly 0 (column 0).

    Parameters
    ----------
    grid : array_like
        Strictly increasing cell edges starting at 0 (any spacing for ReLU; equidistant for other
        activations).
    width : int
        ``N >= 1``.
    sigma_w2, sigma_b2 : float
        Unscaled weight and bias variances.
    activation : str
        ``"relu"`` uses the closed-form kernel (chi-square CDFs, exact cell masses). Any other
        built-in activation uses the ``N``-fold FFT convolution of the law of ``phi(h)^2``
        (accuracy O(grid step)).
    nodes_per_cell : int
        Gauss-Legendre nodes per source cell.
    n_quantiles : int
        Gaussian quantiles representing ``phi(h)^2`` on the FFT path.
    method : {"auto", "closed", "fft"}
        ``"auto"``: closed form for ReLU, FFT otherwise; ``"fft"`` forces the general path (used
        to cross-check it against the closed form).

    Raises
    ------
    ValueError
        Bad grid (not starting at 0, not increasing, not equidistant on the FFT path), width < 1,
        negative variances.

    Returns
    -------
    DiscreteOperator
        Column-stochastic ``matrix`` (every column sums to 1, the atom's column included).
    """
    g = _check_grid(grid)
    n = _width(width)
    sw = check_nonnegative(sigma_w2, "sigma_w2")
    sb = check_nonnegative(sigma_b2, "sigma_b2")
    q = check_int(nodes_per_cell, "nodes_per_cell", 1, 64)
    act = get_activation(activation)
    y, wts = _source_nodes(g, q)
    src = np.concatenate([[0.0], y.reshape(-1)])
    if method not in ("auto", "closed", "fft"):
        raise ValueError(f"method must be 'auto', 'closed' or 'fft', got {method!r}")
    if method == "closed" and act.name != "relu":
        raise ValueError("method='closed' exists for activation 'relu' only")
    if act.name == "relu" and method != "fft":
        masses, tail = _relu_cell_masses(src, g, n, sw, sb)
    else:
        steps = np.diff(g)
        if not np.allclose(steps, steps[0], rtol=1e-9, atol=0.0):
            raise ValueError(f"grid must be equidistant for activation {act.name!r} (FFT convolution)")
        check_int(n_quantiles, "n_quantiles", 16)
        masses, tail = _fft_cell_masses(src, g, n, sw, sb, act, n_quantiles)
    G = g.size
    mat = np.empty((G, G))
    mat[:, 0] = masses[0]
    cellm = masses[1:].reshape(G - 1, q, G)
    mat[:, 1:] = np.einsum("cq,cqg->gc", wts, cellm)
    tails = np.concatenate([[tail[0]], (tail[1:].reshape(G - 1, q) * wts).sum(1)])
    mat /= mat.sum(axis=0, keepdims=True)  # exact to rounding already; removes the last ulp
    return DiscreteOperator(grid=g, matrix=mat, tail=tails, layer=Layer(n, sw, sb), activation=act.name)


def grid_masses(samples, grid) -> np.ndarray:
    """Masses of the empirical law of ``samples`` (squared norms) on the states of ``grid``.

    The state layout of :class:`DiscreteOperator` (seed 001, Sec. 2.2: the law of ``|x^(0)|^2``
    that :func:`propagate_distribution` takes as ``p0``). Exact zeros go to the atom (state 0);
    values beyond the last edge go to the last cell.

    Parameters
    ----------
    samples : array_like
        Squared norms (>= 0).
    grid : array_like
        Cell edges, starting at 0, strictly increasing.

    Returns
    -------
    ndarray, shape (len(grid),)
        Masses summing to 1.
    """
    g = _check_grid(grid)
    x = check_nonnegative(np.atleast_1d(samples), "samples")
    idx = np.searchsorted(g, x, side="left")  # x in (g[j-1], g[j]] -> j ; x == 0 -> 0
    idx = np.minimum(idx, g.size - 1)
    out = np.bincount(idx, minlength=g.size).astype(np.float64)
    return out / x.size


def propagate_distribution(p0, grid, layers: Sequence, activation="relu", **kwargs) -> np.ndarray:
    """Propagate a squared-norm law through layers: ``p_l = T_l p_{l-1}`` (seed 001, Prop. 1, Fig. 1a).

    Parameters
    ----------
    p0 : array_like, shape (G,)
        Masses on the states of ``grid`` (see :class:`DiscreteOperator`, :func:`grid_masses`).
    grid : array_like
        Cell edges, starting at 0.
    layers : sequence of Layer or (width, sigma_w2[, sigma_b2]) tuples
        One entry per layer, each with its own width and variances.
    activation : str
    **kwargs
        Passed to :func:`discretize_operator`.

    Returns
    -------
    ndarray, shape (L + 1, G)
        Row ``l`` is the law after ``l`` layers (row 0 is ``p0``).
    """
    g = _check_grid(grid)
    p = as_float_array(p0, "p0")
    if p.shape != g.shape or np.any(p < 0) or abs(p.sum() - 1.0) > 1e-8:
        raise ValueError(f"p0 must be non-negative masses summing to 1 with shape {g.shape}")
    out = [p]
    cache: dict = {}
    for layer in layers:
        lay = layer if isinstance(layer, Layer) else Layer(*layer)
        key = (lay.width, lay.sigma_w2, lay.sigma_b2)
        if key not in cache:
            cache[key] = discretize_operator(g, lay.width, lay.sigma_w2, lay.sigma_b2, activation, **kwargs).matrix
        out.append(cache[key] @ out[-1])
    return np.array(out)


# --------------------------------------------------------------------------------------------------
# expected squared norm (Cor. 3)
# --------------------------------------------------------------------------------------------------


def expected_squared_norm(y0, layers: Sequence) -> np.ndarray:
    r"""``E |x^(l)|^2`` for ReLU layers given ``|x^(0)|^2 = y0`` (seed 001, Cor. 3, eqs. 5-6).

    Eq. 5: ``E(|x^(l)|^2 | |x^(l-1)|^2 = y) = (sigma_w,l^2 y + sigma_b,l^2) N_l / 2``, iterated
    (eq. 6 is the unrolled form), per-layer widths and variances, biases included.

    Parameters
    ----------
    y0 : float or array_like
        Squared norm(s) of the input (>= 0).
    layers : sequence of Layer or (width, sigma_w2[, sigma_b2]) tuples
        One entry per ReLU layer, unscaled variances.

    Returns
    -------
    ndarray, shape (L + 1,) (or (L + 1,) + shape of ``y0``)
        Row 0 is ``y0``.

    Raises
    ------
    ValueError
        Negative ``y0`` or variances, width < 1.
    """
    y = np.asarray(check_nonnegative(y0, "y0"), float)
    out = [y]
    for layer in layers:
        lay = layer if isinstance(layer, Layer) else Layer(*layer)
        n = _width(lay.width, "layer width")
        sw = check_nonnegative(lay.sigma_w2, "sigma_w2")
        sb = check_nonnegative(lay.sigma_b2, "sigma_b2")
        out.append((sw * out[-1] + sb) * n / 2.0)
    return np.array(out)


# --------------------------------------------------------------------------------------------------
# two inputs: Prop. 2 and Thm. 5
# --------------------------------------------------------------------------------------------------


def preactivation_covariance(gram, sigma_w2, sigma_b2=0.0) -> np.ndarray:
    r"""``V_ij = sigma_w2 <x_i, x_j> + sigma_b2`` given the previous layer (seed 001, Prop. 2, eq. 4).

    Conditionally on the previous signals, one neuron's pre-activations for D inputs are jointly
    ``N(0, V)``, independently over neurons: :math:`h_i = \sum_k W_{k} x_{i,k} + b` with
    ``W_k ~ N(0, sigma_w2)`` and ``b ~ N(0, sigma_b2)`` gives
    :math:`\mathrm{Cov}(h_i, h_j) = \sigma_w^2 \langle x_i, x_j\rangle + \sigma_b^2`.

    Parameters
    ----------
    gram : array_like, shape (D, D)
        Gram matrix ``<x_i, x_j>`` of the previous layer's signals (symmetric PSD).
    sigma_w2, sigma_b2 : float
        Weight and bias variances (>= 0), unscaled by the width.

    Returns
    -------
    ndarray, shape (D, D)

    Raises
    ------
    ValueError
        ``gram`` not a symmetric PSD matrix, or a negative variance.
    """
    gram = as_float_array(gram, "gram")
    if gram.ndim != 2 or gram.shape[0] != gram.shape[1]:
        raise ValueError(f"gram must be a square matrix, got shape {gram.shape}")
    gram = check_covariance(gram, "gram")
    sw = check_nonnegative(sigma_w2, "sigma_w2")
    sb = check_nonnegative(sigma_b2, "sigma_b2")
    return sw * gram + sb


def orthant_probability(rho):
    r"""``g(rho) = P(h1 > 0, h2 > 0) = 1/2 - arccos(rho) / (2 pi)`` (seed 001, Thm. 5).

    The paper defines ``g(rho) = (2 pi)^{-1/2} int_0^inf Phi(u rho / sqrt(1 - rho^2)) e^{-u^2/2} du``,
    which is the orthant probability of a standard bivariate normal with correlation ``rho``;
    ``g(1) = 1/2``, ``g(-1) = 0``.

    Parameters
    ----------
    rho : float or array_like
        Pre-activation correlation(s) in [-1, 1].

    Returns
    -------
    float or ndarray

    Raises
    ------
    ValueError
        ``|rho| > 1`` or non-finite input.
    """
    rho = check_correlation(rho, "rho")
    return 0.5 - np.arccos(rho) / (2 * np.pi)


def relu_correlation(rho):
    r"""Correlation of ``relu(h1), relu(h2)`` for pre-activations with correlation ``rho`` (Thm. 5).

    .. math:: \mathrm{Cor}(x_1, x_2) = \frac{\sqrt{1-\rho^2} - 1 + 2\pi\rho\, g(\rho)}{\pi - 1}.

    It is increasing, maps 1 to 1, 0 to 0 and -1 to ``-1/(pi-1)``; it is ``<= rho`` on ``[0, 1]``
    but ``> rho`` on ``[-1, 0)`` (the paper's "always smaller than rho" holds for ``rho >= 0``).
    It equals ``(K(rho) - 1/(2 pi)) / ((pi - 1)/(2 pi))`` with ``K`` the arc-cosine kernel of
    unit-variance inputs (:func:`meanfield.gaussian.pair_expectation` for ``"relu"``).

    Parameters
    ----------
    rho : float or array_like
        Pre-activation correlation(s) in [-1, 1].

    Returns
    -------
    float or ndarray

    Raises
    ------
    ValueError
        ``|rho| > 1`` or non-finite input.
    """
    rho = check_correlation(rho, "rho")
    g = orthant_probability(rho)
    return (np.sqrt(np.maximum(1 - rho * rho, 0.0)) - 1 + 2 * np.pi * rho * g) / (np.pi - 1)


def _check_pair(v11, v22, v12):
    v11 = check_positive(v11, "v11")
    v22 = check_positive(v22, "v22")
    v12 = as_float_array(v12, "v12")
    if np.any(v12 * v12 > v11 * v22 * (1 + 1e-12)):
        raise ValueError("v12 must satisfy v12^2 <= v11 v22 (a covariance)")
    rho = np.clip(v12 / np.sqrt(v11 * v22), -1.0, 1.0)
    return v11, v22, v12, rho


def mean_inner_product(width, v11, v22, v12):
    r"""``E(<x1, x2> | previous layer)`` for a ReLU layer (seed 001, Thm. 5, eq. 9).

    .. math:: N\sqrt{v_{11}v_{22}}\,\Big(g(\rho)\rho + \frac{\sqrt{1-\rho^2}}{2\pi}\Big)

    equal to ``N`` times the arc-cosine kernel ``E relu(h1) relu(h2)``. The paper's eq. 10,
    ``~ N sqrt(v11 v22) (rho + 1) / 4``, is the straight line through the exact values at
    ``rho = -1`` (0) and ``rho = 1`` (1/2); at ``rho = 0`` it gives 1/4 instead of 1/(2 pi).

    Parameters
    ----------
    width : int
        ``N >= 1``.
    v11, v22 : float
        Pre-activation variances (> 0), Prop. 2.
    v12 : float or array_like
        Pre-activation covariance, ``v12^2 <= v11 v22``.

    Returns
    -------
    float or ndarray

    Raises
    ------
    ValueError
        Non-positive variances, ``v12^2 > v11 v22``, width < 1.
    """
    n = _width(width)
    v11, v22, v12, rho = _check_pair(v11, v22, v12)
    g = 0.5 - np.arccos(rho) / (2 * np.pi)
    return n * np.sqrt(v11 * v22) * (g * rho + np.sqrt(1 - rho * rho) / (2 * np.pi))


def relu_product_density(t, v11, v22, v12):
    r"""Density of ``relu(h1) relu(h2)`` at ``t > 0`` (the continuous part of ``f_prod``, Thm. 5).

    .. math::
        f(t) = \frac{1}{2\pi\sqrt{\det V}} \exp\Big(\frac{v_{12} t}{\det V}\Big)
        K_0\Big(\frac{\sqrt{v_{11}v_{22}}\, t}{\det V}\Big),

    the positive-quadrant half of the density of the product of two correlated normals; it
    integrates to ``g(rho)``, and ``f_prod = (1 - g(rho)) delta_0 + f``. Needs ``det V > 0``.

    Parameters
    ----------
    t : float or array_like
        Points ``> 0``.
    v11, v22, v12 : float
        The pre-activation covariance of Prop. 2, ``v12^2 < v11 v22``.

    Returns
    -------
    float or ndarray
        Evaluated with the exponentially scaled ``k0e`` (no overflow for large ``t``).

    Raises
    ------
    ValueError
        ``t <= 0``, non-positive variances or ``v12^2 >= v11 v22``.
    """
    t = check_positive(t, "t")
    v11, v22, v12, rho = _check_pair(v11, v22, v12)
    det = v11 * v22 - v12 * v12
    if np.any(det <= 0):
        raise ValueError("v12 must satisfy v12^2 < v11 v22 (|rho| < 1): the law of relu(h1) relu(h2) has a density only then")
    a = np.sqrt(v11 * v22) * np.asarray(t) / det
    # exp(v12 t / det) K0(a) = K0e(a) exp(v12 t / det - a): stable for large t
    return special.k0e(a) * np.exp((v12 * np.asarray(t) - np.sqrt(v11 * v22) * np.asarray(t)) / det) / (
        2 * np.pi * np.sqrt(det)
    )


def inner_product_law(grid, width, v11, v22, v12) -> np.ndarray:
    """Law of ``<x1, x2> = sum_i relu(h1_i) relu(h2_i)`` given the previous layer: ``f_prod^{*N}``.

    Parameters
    ----------
    grid : array_like
        Equidistant cell edges starting at 0 (state 0 = atom at 0, state j = cell j).
    width : int
    v11, v22, v12 : float
        The pre-activation covariance of Prop. 2 (``|rho| < 1``).

    Returns
    -------
    ndarray, shape (G,)
        Masses (summing to 1; mass beyond the grid lumped into the last cell).

    Notes
    -----
    Cell masses of the K0 density are integrated (adaptive quadrature in the first cell, where
    K0 has its log singularity, Gauss-Legendre elsewhere), spread onto the lattice ``j dz`` at
    their cell means, and convolved ``N`` times by truncated FFT powers. Accuracy O(grid step).
    """
    from scipy import integrate

    g = _check_grid(grid)
    steps = np.diff(g)
    if not np.allclose(steps, steps[0], rtol=1e-9, atol=0.0):
        raise ValueError("grid must be equidistant (FFT convolution)")
    n = _width(width)
    v11, v22, v12, rho = _check_pair(v11, v22, v12)
    dz = steps[0]
    G = g.size
    f = lambda t: relu_product_density(t, v11, v22, v12)  # noqa: E731
    # masses and first moments of the continuous part on [j dz, (j+1) dz], j = 0..G-1
    x, w = np.polynomial.legendre.leggauss(12)
    a = g[:, None] + 0.5 * dz * (x[None, :] + 1)
    mass = np.empty(G)
    mom = np.empty(G)
    mass[0] = integrate.quad(f, 0, dz, limit=200)[0]
    mom[0] = integrate.quad(lambda t: t * f(t), 0, dz, limit=200)[0]
    ta = a[1:]
    fa = f(ta)
    mass[1:] = (fa * w).sum(1) * dz / 2
    mom[1:] = (fa * ta * w).sum(1) * dz / 2
    c = np.zeros(G + 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(mass > 0, mom / np.where(mass > 0, mass, 1.0), 0.0)
    t = mean / dz
    lo = np.floor(t).astype(np.int64)
    frac = t - lo
    np.add.at(c, np.minimum(lo, G), (1 - frac) * mass)
    np.add.at(c, np.minimum(lo + 1, G), frac * mass)
    c = c[:G]
    atom_single = 1.0 - float(orthant_probability(rho))
    p = c.copy()
    p[0] += atom_single
    law = _truncated_power(p, n)
    atom = atom_single**n
    law[0] = max(law[0] - atom, 0.0)
    cells = np.zeros(G)
    cells[0] = atom
    cells[1:] += 0.5 * law[: G - 1]
    cells[1:] += 0.5 * law[1:G]
    cells[1] += 0.5 * law[0]
    cells[-1] += max(1.0 - cells.sum(), 0.0)
    return cells / cells.sum()


def cosine_similarity_samples(
    width, rho, n_samples=1_000_000, sigma_w2=1.0, rng=None, seed=None, chunk: int = 20_000, dtype=np.float64
) -> np.ndarray:
    """Samples of the cosine similarity of two ReLU layers given the previous layer (seed 001, Fig. 2).

    ``width`` components are drawn iid from the bivariate normal of Prop. 2 with correlation
    ``rho`` (``|x1| = |x2| = 1``, ``sigma_b = 0``: the scale drops out of the cosine), passed
    through ReLU, and the cosine ``<x1, x2> / (|x1| |x2|)`` is formed; repeated ``n_samples``
    times in chunks. A pair with a zero vector (probability ``< 2 * 0.5^N``) gives cosine 0.
    Random normals dominate the cost; ``dtype=np.float32`` draws them in single precision (about
    1.8x faster, cosines accurate to ~1e-6, ample for histograms).

    Parameters
    ----------
    width : int
        ``N >= 1``.
    rho : float
        ``<x1, x2>`` of the unit previous-layer signals (the pre-activation correlation), in [-1, 1].
    n_samples : int
        Repeats (>= 1); 10^6 take seconds.
    sigma_w2 : float
        ``> 0``; it does not affect the cosine (kept for the paper's parametrisation).
    rng, seed
        Random Generator or seed.
    chunk : int
        Repeats drawn per block (memory ``2 * chunk * width`` numbers).
    dtype : {numpy.float64, numpy.float32}
        Precision of the drawn normals.

    Returns
    -------
    ndarray, shape (n_samples,)
        Cosine similarities in [0, 1].
    """
    n = _width(width)
    rho = float(check_correlation(rho, "rho"))
    check_positive(sigma_w2, "sigma_w2")
    total = check_int(n_samples, "n_samples", 1)
    chunk = check_int(chunk, "chunk", 1)
    rng = check_rng(rng, seed)
    dtype = np.dtype(dtype)
    if dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"dtype must be float32 or float64, got {dtype}")
    out = np.empty(total)
    s = math.sqrt(max(1 - rho * rho, 0.0))
    for i in range(0, total, chunk):
        m = min(chunk, total - i)
        a = rng.standard_normal((m, n), dtype=dtype)
        b = rng.standard_normal((m, n), dtype=dtype)
        b *= s
        b += rho * a
        np.maximum(a, 0, out=a)
        np.maximum(b, 0, out=b)
        num = np.einsum("ij,ij->i", a, b).astype(np.float64)
        den = np.sqrt(np.einsum("ij,ij->i", a, a).astype(np.float64) * np.einsum("ij,ij->i", b, b))
        out[i : i + m] = np.divide(num, den, out=np.zeros(m), where=den > 0)
    return out
