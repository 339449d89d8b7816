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
:func:`expected_squared_norm`     Cor. 3, eqs. 5-6 (:func:`log_expected_squared_norm` at any depth)
:func:`preactivation_covariance`  Prop. 2, eq. 4
:func:`orthant_probability`       ``g(rho)`` of Thm. 5
:func:`relu_correlation`          ``Cor(x1, x2)`` of Thm. 5
:func:`mean_inner_product`        eq. 9 (eq. 10 is its linear interpolation, see Notes there)
:func:`relu_product_density`      the K0 part of ``f_prod`` in Thm. 5
:func:`inner_product_law`         ``f_prod^{*N}``, the law of ``<x1, x2>`` given the previous layer
:func:`cosine_similarity_samples` the Fig. 2 simulation (iid bivariate normal components, ReLU, cosine)
================================  ======================================================================

Numerical range. Widths run up to ``MAX_WIDTH`` (10^7). Quantities that leave float64 at depth
10^4 or width 10^5 are carried on a log scale (:func:`log_expected_squared_norm`,
:func:`relu_log_eigenvalue`, ``TransitionKernel.log_atom`` / ``log_density``,
``relu_product_density(..., log=True)``); their linear versions raise ``ValueError`` naming the
log-scale one instead of returning 0 or inf (densities are correctly rounded, 0 only below
5e-324). Grid masses are probabilities with absolute accuracy ~1e-15; those below the smallest
normal float64 are 0. Bools, complex numbers and strings where numbers are expected raise
``TypeError``; absurd sizes (more than 2^29 numbers) raise ``ValueError``.

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
    check_bool,
    check_covariance,
    check_int,
    check_rng,
    check_scalar,
)
from .activations import RELU, get_activation

__all__ = [
    "MAX_WIDTH",
    "RELU_EIGEN_M_MAX",
    "RELU_EIGEN_M_MIN",
    "CriticalExponents",
    "DiscreteOperator",
    "Layer",
    "TransitionKernel",
    "cosine_similarity_samples",
    "critical_exponents",
    "discretize_operator",
    "expected_squared_norm",
    "grid_masses",
    "inner_product_law",
    "kernel_masses",
    "log_expected_squared_norm",
    "mean_inner_product",
    "orthant_probability",
    "preactivation_covariance",
    "propagate_distribution",
    "quasi_stationary_exponent",
    "relu_correlation",
    "relu_eigenvalue",
    "relu_eigenvalue_printed",
    "relu_kernel",
    "relu_log_eigenvalue",
    "relu_product_density",
]

#: The eigenfunction ``y^m`` has a finite eigenvalue only for ``m < RELU_EIGEN_M_MAX`` (= -1/2).
RELU_EIGEN_M_MAX = -0.5
#: Largest width ``N`` accepted: the binomial weights ``C(N, k) 0.5^N`` of Prop. 4 (``N + 1``
#: numbers) are held in memory; 10^7 takes about a second.
MAX_WIDTH = 10**7
_LOG2 = math.log(2.0)
#: Binomial terms with log-weight below the largest minus this are dropped (weight < 1e-30 each);
#: the dropped weight is returned to the last cell so that columns still sum to one.
_LOG_PRUNE = 69.0
_TINY = float(np.finfo(np.float64).tiny)
_LOG_TINY = math.log(_TINY)
_LOG_MAX = math.log(float(np.finfo(np.float64).max))
#: Largest number of float64 entries a function here allocates for one result or work array
#: (2^29 = 4 GiB); larger requests raise ``ValueError`` instead of ``MemoryError``.
_MAX_ELEMENTS = 2**29
#: Largest ``n_quantiles`` of the FFT path.
_MAX_QUANTILES = 2**24


# --------------------------------------------------------------------------------------------------
# argument helpers
# --------------------------------------------------------------------------------------------------


def _int(n, name, minimum, maximum=None) -> int:
    """An integer in range; complex input is a ``TypeError`` (never a dropped imaginary part)."""
    if isinstance(n, (complex, np.complexfloating)):
        raise TypeError(f"{name} must be an integer, got the complex {n!r}")
    return check_int(n, name, minimum, maximum)


def _width(width, name="width") -> int:
    return _int(width, name, 1, MAX_WIDTH)


def _nonneg(x, name) -> float:
    """A finite real scalar ``>= 0`` (bools, complex, strings and arrays rejected)."""
    v = check_scalar(x, name)
    if v < 0:
        raise ValueError(f"{name} must be >= 0 (a variance), got {v!r}")
    return v


def _pos(x, name) -> float:
    v = check_scalar(x, name)
    if v <= 0:
        raise ValueError(f"{name} must be > 0, got {v!r}")
    return v


def _real_array(x, name) -> np.ndarray:
    """A finite float64 array of real numbers; bools, complex numbers, strings and objects raise ``TypeError``."""
    if x is None or isinstance(x, (str, bytes)) or np.iscomplexobj(x):
        raise TypeError(f"{name} must be a real number or array of real numbers, got {type(x).__name__}")
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a (rectangular) array of real numbers") from exc
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    return as_float_array(arr, name)


def _nonneg_array(x, name) -> np.ndarray:
    arr = _real_array(x, name)
    if np.any(arr < 0):
        raise ValueError(f"{name} must be >= 0, got values down to {float(arr.min())!r}")
    return arr


def _correlation(rho, name="rho"):
    arr = _real_array(rho, name)
    if np.any(np.abs(arr) > 1.0):
        raise ValueError(f"{name} must lie in [-1, 1], got {rho!r}")
    return float(arr) if arr.ndim == 0 else arr


def _check_size(n_elements: int, what: str):
    if n_elements > _MAX_ELEMENTS:
        raise ValueError(f"{what} would need {n_elements} float64 numbers (more than 2**29 = 4 GiB); reduce it")


def _check_method(method):
    if not isinstance(method, str) or method not in ("auto", "closed", "fft"):
        raise ValueError(f"method must be 'auto', 'closed' or 'fft', got {method!r}")
    return method


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
        Correctly rounded: ``0.5^N`` is 0.0 in float64 beyond ``N = 1074`` (use ``log_atom``).
    density : ndarray
        The continuous part at ``z > 0`` (0 at ``z <= 0``); correctly rounded, i.e. 0.0 where the
        density is below ``5e-324`` (far tails, large ``N``): use ``log_density`` there.
    log_atom : ndarray
        ``log atom`` (``-N log 2``, or 0), finite.
    log_density : ndarray
        ``log density``: finite wherever the density is positive, ``-inf`` exactly where it is
        0 (``z <= 0``, or ``sigma_y^2 = 0``).
    """

    atom: np.ndarray
    density: np.ndarray
    log_atom: np.ndarray
    log_density: np.ndarray

    def replace(self, **changes) -> "TransitionKernel":
        return replace(self, **changes)


def relu_kernel(y, z, width, sigma_w2, sigma_b2=0.0) -> TransitionKernel:
    r"""ReLU transition kernel ``k(y, z)`` of the squared signal norm (seed 001, Prop. 4, eq. 7).

    .. math::
        k(y, z) = 0.5^N\Big(\delta_0(z) + \sum_{k=1}^N \binom{N}{k}\frac{1}{\sigma_y^2}
        p_{\chi^2_k}\big(z / \sigma_y^2\big)\Big), \qquad \sigma_y^2 = \sigma_w^2 y + \sigma_b^2.

    Derivation: given ``|x|^2 = y`` the ``N`` pre-activations are iid ``N(0, sigma_y^2)``; a
    Binomial(N, 1/2) number ``k`` of them is positive and ``z = sigma_y^2 chi^2_k``.
    Evaluated in log space (log-sum-exp over ``k``): the log fields are accurate for every width
    up to ``MAX_WIDTH``; the linear fields are their correctly rounded exponentials.

    Parameters
    ----------
    y, z : array_like
        Previous and next squared norms (>= 0); broadcast together.
    width : int
        ``1 <= N <= MAX_WIDTH`` (10^7), the number of neurons of the layer.
    sigma_w2, sigma_b2 : float
        Weight and bias variances (>= 0), unscaled by the width (He: ``sigma_w2 = 2 / N``).

    Returns
    -------
    TransitionKernel
        ``atom``, ``density`` and their logarithms, shaped like ``y`` and ``z`` broadcast.

    Raises
    ------
    ValueError
        Negative or non-finite input, ``width`` out of range, ``y`` and ``z`` that do not
        broadcast, or ``sigma_w2 * y + sigma_b2`` beyond float64.
    TypeError
        Bools, complex numbers or strings where numbers are expected.
    """
    n = _width(width)
    y = _nonneg_array(y, "y")
    z = _nonneg_array(z, "z")
    sw = _nonneg(sigma_w2, "sigma_w2")
    sb = _nonneg(sigma_b2, "sigma_b2")
    try:
        yb, zb = np.broadcast_arrays(y, z)
    except ValueError as exc:
        raise ValueError(f"y and z must broadcast together, got shapes {y.shape} and {z.shape}") from exc
    with np.errstate(over="ignore"):
        s = sw * yb + sb
    if not np.all(np.isfinite(s)):
        raise ValueError("sigma_w2 * y + sigma_b2 (the pre-activation variance) must be finite; it overflows float64 here")
    k, logw = _binomial_log_weights(n)
    pos = (s > 0) & (zb > 0)
    log_dens = np.full(yb.shape, -np.inf)
    if np.any(pos):
        ls = np.log(s[pos])
        lx = np.log(zb[pos]) - ls
        with np.errstate(over="ignore"):
            x = np.exp(lx)
        out = np.empty(lx.size)
        chunk = max(1, 2**22 // k.size)
        const = logw - (k / 2) * _LOG2 - special.gammaln(k / 2)
        for i in range(0, lx.size, chunk):
            sl = slice(i, i + chunk)
            # log chi^2_k density at x, summed over k in log space
            logp = const[None, :] + (k[None, :] / 2 - 1) * lx[sl, None] - x[sl, None] / 2
            out[sl] = special.logsumexp(logp, axis=1)
        log_dens[pos] = out - ls
    log_atom = np.where(s > 0, -n * _LOG2, 0.0)
    atom = np.where(s > 0, 0.5**n, 1.0)  # exact (0.0 beyond N = 1074: see log_atom)
    with np.errstate(under="ignore"):
        return TransitionKernel(atom=atom, density=np.exp(log_dens), log_atom=log_atom, log_density=log_dens)


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


#: Most negative exponent accepted: ``log lambda_m ~ |m| log |m|`` stays inside float64.
RELU_EIGEN_M_MIN = -1e300


def _check_m(m):
    m = _real_array(m, "m")
    if np.any(m >= RELU_EIGEN_M_MAX) or np.any(m < RELU_EIGEN_M_MIN):
        raise ValueError(
            f"m must lie in [-1e300, -1/2) (y^m is an eigenfunction with finite eigenvalue only below -1/2; "
            f"the k = 1 term needs Gamma(1/2 - m - 1) finite), got {m}"
        )
    return m


def relu_log_eigenvalue(m, width, sigma_w2):
    """Natural log of :func:`relu_eigenvalue` (seed 001, Prop. 4, eq. 8 as derived), finite for every width.

    Evaluated as ``-(m+1) log(2 sigma_w2) + logsumexp_k [log(C(N,k) 0.5^N) + log Gamma(k/2-m-1) -
    log Gamma(k/2)]`` with Stirling differences for large Gamma arguments, so widths up to 10^7
    and very negative ``m`` neither overflow nor lose precision.

    Parameters
    ----------
    m : float or array_like
        Exponent(s), ``-1e300 <= m < -1/2``.
    width : int
        ``1 <= N <= MAX_WIDTH``.
    sigma_w2 : float
        ``> 0``, unscaled by the width.

    Returns
    -------
    float or ndarray
        ``log lambda_m``, finite.

    Raises
    ------
    ValueError
        ``m`` outside ``[-1e300, -1/2)``, ``width`` out of range, ``sigma_w2 <= 0`` or non-finite input.
    TypeError
        Bools, complex numbers or strings where numbers are expected.
    """
    n = _width(width)
    m = _check_m(m)
    sw = _pos(sigma_w2, "sigma_w2")
    mm = np.asarray(m, float)
    out = -(mm + 1) * (_LOG2 + math.log(sw)) + _log_gamma_sum(mm, n).reshape(mm.shape)
    return float(out) if out.ndim == 0 else out


def _exp_or_raise(log_values, name, alternative):
    """``exp`` of a finite log, or ``ValueError`` naming ``alternative`` when it leaves the normal float64 range."""
    lv = np.asarray(log_values, dtype=np.float64)
    if lv.size and (np.max(lv) > _LOG_MAX or np.min(lv) < _LOG_TINY):
        raise ValueError(
            f"{name} is beyond the float64 range here (log values in [{float(np.min(lv)):.6g}, {float(np.max(lv)):.6g}], "
            f"representable: [{_LOG_TINY:.2f}, {_LOG_MAX:.2f}]); use {alternative}"
        )
    out = np.exp(lv)
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
        Exponent(s), ``-1e300 <= m < -1/2``.
    width : int
        ``1 <= N <= MAX_WIDTH``.
    sigma_w2 : float
        ``> 0``, unscaled by the width.

    Returns
    -------
    float or ndarray
        Finite and normal.

    Raises
    ------
    ValueError
        As :func:`relu_log_eigenvalue`, or an eigenvalue beyond the float64 range (very negative
        ``m``, extreme ``sigma_w2``): use :func:`relu_log_eigenvalue` there.

    Examples
    --------
    >>> round(relu_eigenvalue(-1.0, 10, 0.37), 12)      # 1 - 0.5**10, any sigma_w2
    0.9990234375
    >>> round(relu_eigenvalue(-2.0, 100, 2 / 100), 12)  # He preserves y^-2
    1.0
    """
    return _exp_or_raise(relu_log_eigenvalue(m, width, sigma_w2), "lambda_m", "relu_log_eigenvalue")


def relu_eigenvalue_printed(m, width, sigma_w2):
    """Eq. 8 of seed 001 exactly as printed (prefactor ``0.5^(N-m-1)``), kept for Fig. 1b.

    Equals ``relu_eigenvalue(m, width, sigma_w2) * 4^(m+1)``. It does **not** equal the
    eigenvalue obtained by quadrature of the defining integral (tests pin this); the paper's
    critical-exponent relation and Fig. 1b follow this variant.

    Parameters
    ----------
    m : float or array_like
        Exponent(s), ``-1e300 <= m < -1/2``.
    width : int
        ``1 <= N <= MAX_WIDTH``.
    sigma_w2 : float
        ``> 0``, unscaled by the width.

    Returns
    -------
    float or ndarray
        Finite and normal.

    Raises
    ------
    ValueError
        As :func:`relu_eigenvalue` (beyond float64: use ``relu_log_eigenvalue(m, ...) + 2 (m + 1) log 2``).
    """
    m = _check_m(m)
    log = np.asarray(relu_log_eigenvalue(m, width, sigma_w2)) + 2 * (np.asarray(m) + 1) * _LOG2
    return _exp_or_raise(log, "the printed lambda_m", "relu_log_eigenvalue(m, ...) + 2 (m + 1) log 2")


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
#: ``sigma_w2 * N`` range in which :func:`critical_exponents` and :func:`quasi_stationary_exponent`
#: resolve their roots for every width (measured for N = 1 .. 10^5). Below it the lower root lies
#: beyond ``-3 * 2^60``; above it (N >~ 60) the upper root lies within ``~N 0.5^N`` of -1/2.
_SW_RANGE = (1e-12, 2.0)


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
        if hi >= RELU_EIGEN_M_MAX:  # gap below the float resolution at -1/2
            raise FloatingPointError("log lambda_m stays <= 0 up to the float next to -1/2: no upper bracket in float range")
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
        ``1 <= N <= MAX_WIDTH``.
    sigma_w2 : float, optional
        ``> 0``, unscaled by the width; default He, ``2 / N``.

    Returns
    -------
    CriticalExponents

    Raises
    ------
    ValueError
        ``width`` outside ``[1, MAX_WIDTH]``, ``sigma_w2 <= 0`` or non-finite, or a root that
        float64 cannot resolve (beyond ``m = -3 * 2^60``, or closer to -1/2 than float
        resolution). Every ``1e-12 <= sigma_w2 * N <= 2`` (He: 2) is resolved at every width; for
        ``N <= 50`` up to ``sigma_w2 * N = 1e20``.
    TypeError
        A bool, complex number or string where a number is expected.

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
    sw = 2.0 / n if sigma_w2 is None else _pos(sigma_w2, "sigma_w2")

    def logf(m):
        return float(relu_log_eigenvalue(m, n, sw))

    def logp(m):
        return logf(m) + 2 * (m + 1) * _LOG2

    try:
        lo, up = _roots(logf)
        plo, pup = _roots(logp)
    except FloatingPointError as exc:
        raise ValueError(_unresolvable(n, sw, exc)) from exc
    return CriticalExponents(lo, up, plo, pup, -3.2559793 - 1.6207083 * n)


def _unresolvable(n, sw, exc) -> str:
    return (
        f"sigma_w2={sw!r} (width {n}) puts a root of lambda_m = target beyond float64 resolution ({exc}); "
        f"supported: sigma_w2 * N in [{_SW_RANGE[0]:g}, {_SW_RANGE[1]:g}] (He is 2); use relu_log_eigenvalue directly"
    )


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
        ``1 <= N <= MAX_WIDTH``.
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
        As :func:`critical_exponents`.
    TypeError
        A bool, complex number or string where a number is expected.
    """
    n = _width(width)
    sw = 2.0 / n if sigma_w2 is None else _pos(sigma_w2, "sigma_w2")
    target = math.log1p(-(0.5**n))

    def f(m):
        return float(relu_log_eigenvalue(m, n, sw)) - target

    try:
        lo, m_min, hi = _convex_bracket(f)
    except FloatingPointError as exc:
        raise ValueError(_unresolvable(n, sw, exc)) from exc
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
    g = _real_array(grid, "grid")
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
    with np.errstate(over="ignore"):
        # chi^2_k <= t  <=>  Gamma(k/2) <= t/2; beyond 1e300 every P(k/2, x) is 1 (no inf - inf below)
        x = np.minimum(grid[None, :] / np.where(pos, s, 1.0)[:, None] / 2.0, 1e300)
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
    masses[np.abs(masses) < _TINY] = 0.0  # below the absolute accuracy (~1e-16): no subnormals
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


def _phi_squared(act, h):
    """``phi(h)^2`` as finite float64 values, or a ``ValueError`` naming the activation."""
    try:
        with np.errstate(all="ignore"):
            v = np.asarray(act.phi(h))
            if np.iscomplexobj(v) or v.shape != h.shape:
                raise TypeError(f"phi returned {v.dtype} of shape {v.shape} for {h.shape} inputs")
            u = v.astype(np.float64) ** 2
    except Exception as exc:  # a user-defined phi may raise anything
        raise ValueError(f"activation {act.name!r}: phi must map real arrays to real arrays of the same shape ({exc})") from exc
    if not np.all(np.isfinite(u)):
        raise ValueError(
            f"activation {act.name!r} gives non-finite phi(h)^2 for h ~ N(0, sigma_w2 y + sigma_b2) (NaN or overflow); "
            "the FFT path needs phi finite on the whole real line"
        )
    return u


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
            u = np.full(n_quantiles, _phi_squared(act, np.zeros(1))[0])
        else:
            u = _phi_squared(act, math.sqrt(s) * zq)
        is_zero = u == 0.0
        a = is_zero.mean()
        with np.errstate(over="ignore"):
            t = np.minimum(u[~is_zero] / dz, size + 1.0)  # beyond the lattice: all lumped, no int overflow
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
    masses[masses < _TINY] = 0.0  # below the absolute accuracy: no subnormals
    return masses, tails


def _check_variance_range(y, sw, sb):
    """``sigma_w2 * y + sigma_b2`` must be finite for every source."""
    with np.errstate(over="ignore"):
        top = sw * (float(np.max(y)) if np.size(y) else 0.0) + sb
    if not math.isfinite(top):
        raise ValueError("sigma_w2 * y + sigma_b2 (the pre-activation variance) must be finite; it overflows float64 here")


def _is_equidistant(g):
    steps = np.diff(g)
    return bool(np.allclose(steps, steps[0], rtol=1e-9, atol=0.0))


def kernel_masses(y, grid, width, sigma_w2, sigma_b2=0.0, activation="relu", method="auto", n_quantiles: int = 4096):
    """Law of the next squared norm given ``|x|^2 = y``, as masses on the states of ``grid`` (seed 001, Prop. 1, Prop. 4).

    ReLU: closed form (Prop. 4; exact cell masses from chi-square CDFs). Any other built-in
    activation, or ``method="fft"``: the ``N``-fold convolution of the law of ``phi(h)^2``,
    ``h ~ N(0, sigma_w2 y + sigma_b2)``, by truncated FFT powers on the equidistant grid (Prop. 1).

    Parameters
    ----------
    y : float or array_like
        Previous squared norm(s) (>= 0); flattened.
    grid : array_like
        Cell edges starting at 0, strictly increasing (equidistant on the FFT path).
    width : int
        ``1 <= N <= MAX_WIDTH``.
    sigma_w2, sigma_b2 : float
        Unscaled weight and bias variances (>= 0).
    activation : str or Activation
        Built-in activation name (``"relu"`` has the closed form) or an ``Activation`` whose
        ``phi`` is finite on the real line (FFT path).
    method : {"auto", "closed", "fft"}
        ``"fft"`` forces the general path (e.g. to cross-check it against the closed form).
    n_quantiles : int
        Equiprobable Gaussian quantiles representing ``phi(h)^2`` on the FFT path,
        ``16 <= n_quantiles <= 2**24`` (validated on every path); the FFT path's error is
        O(grid step) + O(N / n_quantiles).

    Returns
    -------
    ndarray, shape (len(y), len(grid))
        Row ``i``: mass of the atom at 0, then of each cell; rows sum to 1 (mass beyond the grid
        lumped into the last cell). Masses are probabilities accurate to ~1e-15 absolutely;
        those below the smallest normal float64 (e.g. the atom ``0.5^N`` for ``N > 1021``) are 0.

    Raises
    ------
    ValueError
        Bad grid, width, variances, ``method``, ``n_quantiles``; an activation whose ``phi(h)^2``
        is not finite; a result larger than 2^29 numbers; ``sigma_w2 * y + sigma_b2`` overflowing.
    TypeError
        Bools, complex numbers or strings where numbers are expected.
    """
    g = _check_grid(grid)
    n = _width(width)
    y = np.ravel(_nonneg_array(y, "y"))
    sw = _nonneg(sigma_w2, "sigma_w2")
    sb = _nonneg(sigma_b2, "sigma_b2")
    act = get_activation(activation)
    method = _check_method(method)
    n_quantiles = _int(n_quantiles, "n_quantiles", 16, _MAX_QUANTILES)
    _check_size(y.size * g.size, "len(y) * len(grid)")
    _check_variance_range(y, sw, sb)
    if act.code == RELU and method != "fft":
        return _relu_cell_masses(y, g, n, sw, sb)[0]
    if method == "closed":
        raise ValueError("method='closed' exists for activation 'relu' only")
    if not _is_equidistant(g):
        raise ValueError(f"grid must be equidistant for the FFT path (activation {act.name!r})")
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
        ``1 <= N <= MAX_WIDTH``.
    sigma_w2, sigma_b2 : float
        Unscaled weight and bias variances (>= 0).
    activation : str or Activation
        ``"relu"`` uses the closed-form kernel (chi-square CDFs, exact cell masses). Any other
        activation uses the ``N``-fold FFT convolution of the law of ``phi(h)^2`` (accuracy
        O(grid step)); its ``phi`` must be finite on the real line.
    nodes_per_cell : int
        Gauss-Legendre nodes per source cell, 1 to 64.
    n_quantiles : int
        Gaussian quantiles representing ``phi(h)^2`` on the FFT path, ``16 <= n_quantiles <= 2**24``
        (validated on every path).
    method : {"auto", "closed", "fft"}
        ``"auto"``: closed form for ReLU, FFT otherwise; ``"fft"`` forces the general path (used
        to cross-check it against the closed form).

    Returns
    -------
    DiscreteOperator
        Column-stochastic ``matrix`` (every column sums to 1, the atom's column included). Entries
        are probabilities accurate to ~1e-15 absolutely; those below the smallest normal float64
        (e.g. the atom ``0.5^N`` for ``N > 1021``) are 0.

    Raises
    ------
    ValueError
        Bad grid (not starting at 0, not increasing, not equidistant on the FFT path), width out
        of range, negative variances, bad ``nodes_per_cell``, ``n_quantiles`` or ``method``, an
        activation with non-finite ``phi(h)^2``, ``(len(grid) * nodes_per_cell + 1) * len(grid)``
        above 2^29.
    TypeError
        Bools, complex numbers or strings where numbers are expected.
    """
    g = _check_grid(grid)
    n = _width(width)
    sw = _nonneg(sigma_w2, "sigma_w2")
    sb = _nonneg(sigma_b2, "sigma_b2")
    q = _int(nodes_per_cell, "nodes_per_cell", 1, 64)
    n_quantiles = _int(n_quantiles, "n_quantiles", 16, _MAX_QUANTILES)
    method = _check_method(method)
    act = get_activation(activation)
    if method == "closed" and act.code != RELU:
        raise ValueError("method='closed' exists for activation 'relu' only")
    _check_size(((g.size - 1) * q + 1) * g.size, "(len(grid) * nodes_per_cell + 1) * len(grid)")
    _check_variance_range(g[-1:], sw, sb)
    y, wts = _source_nodes(g, q)
    src = np.concatenate([[0.0], y.reshape(-1)])
    if act.code == RELU and method != "fft":
        masses, tail = _relu_cell_masses(src, g, n, sw, sb)
    else:
        if not _is_equidistant(g):
            raise ValueError(f"grid must be equidistant for activation {act.name!r} (FFT convolution)")
        masses, tail = _fft_cell_masses(src, g, n, sw, sb, act, n_quantiles)
    G = g.size
    mat = np.empty((G, G))
    mat[:, 0] = masses[0]
    cellm = masses[1:].reshape(G - 1, q, G)
    mat[:, 1:] = np.einsum("cq,cqg->gc", wts, cellm)
    tails = np.concatenate([[tail[0]], (tail[1:].reshape(G - 1, q) * wts).sum(1)])
    mat /= mat.sum(axis=0, keepdims=True)  # exact to rounding already; removes the last ulp
    mat[mat < _TINY] = 0.0
    return DiscreteOperator(grid=g, matrix=mat, tail=tails, layer=Layer(n, sw, sb), activation=act.name)


def grid_masses(samples, grid) -> np.ndarray:
    """Masses of the empirical law of ``samples`` (squared norms) on the states of ``grid``.

    The state layout of :class:`DiscreteOperator` (seed 001, Sec. 2.2: the law of ``|x^(0)|^2``
    that :func:`propagate_distribution` takes as ``p0``). Exact zeros go to the atom (state 0);
    values beyond the last edge go to the last cell.

    Parameters
    ----------
    samples : array_like
        Squared norms (>= 0), at least one; flattened.
    grid : array_like
        Cell edges, starting at 0, strictly increasing.

    Returns
    -------
    ndarray, shape (len(grid),)
        Masses summing to 1.

    Raises
    ------
    ValueError
        Empty or negative ``samples``, a bad grid, non-finite input.
    TypeError
        Bools, complex numbers or strings where numbers are expected.
    """
    g = _check_grid(grid)
    x = np.ravel(_nonneg_array(samples, "samples"))
    if x.size == 0:
        raise ValueError("samples must hold at least one squared norm (an empty sample has no law)")
    idx = np.searchsorted(g, x, side="left")  # x in (g[j-1], g[j]] -> j ; x == 0 -> 0
    idx = np.minimum(idx, g.size - 1)
    out = np.bincount(idx, minlength=g.size).astype(np.float64)
    return out / x.size


def _check_layers(layers) -> list:
    """``layers`` as a list of validated :class:`Layer` (entries: Layer or (width, sigma_w2[, sigma_b2]))."""
    if isinstance(layers, (str, bytes, np.ndarray)) or not isinstance(layers, (list, tuple)):
        raise TypeError(f"layers must be a list of Layer or (width, sigma_w2[, sigma_b2]) tuples, got {type(layers).__name__}")
    out = []
    for i, layer in enumerate(layers):
        if isinstance(layer, Layer):
            fields = (layer.width, layer.sigma_w2, layer.sigma_b2)
        elif isinstance(layer, (list, tuple)) and len(layer) in (2, 3):
            fields = tuple(layer) + (0.0,) * (3 - len(layer))
        else:
            raise TypeError(f"layers[{i}] must be a Layer or a (width, sigma_w2[, sigma_b2]) tuple, got {layer!r}")
        out.append(
            Layer(
                _width(fields[0], f"layers[{i}] width"),
                _nonneg(fields[1], f"layers[{i}] sigma_w2"),
                _nonneg(fields[2], f"layers[{i}] sigma_b2"),
            )
        )
    return out


_OPERATOR_OPTIONS = ("nodes_per_cell", "n_quantiles", "method")


def propagate_distribution(p0, grid, layers: Sequence, activation="relu", **kwargs) -> np.ndarray:
    """Propagate a squared-norm law through layers: ``p_l = T_l p_{l-1}`` (seed 001, Prop. 1, Fig. 1a).

    Parameters
    ----------
    p0 : array_like, shape (G,)
        Masses on the states of ``grid`` (see :class:`DiscreteOperator`, :func:`grid_masses`),
        non-negative, summing to 1 (to 1e-8).
    grid : array_like
        Cell edges, starting at 0.
    layers : list of Layer or (width, sigma_w2[, sigma_b2]) tuples
        One entry per layer, each with its own width and variances (validated as in
        :func:`discretize_operator`); operators are built once per distinct layer.
    activation : str or Activation
    **kwargs
        ``nodes_per_cell``, ``n_quantiles``, ``method`` of :func:`discretize_operator` (validated
        even when ``layers`` is empty).

    Returns
    -------
    ndarray, shape (L + 1, G)
        Row ``l`` is the law after ``l`` layers (row 0 is ``p0``).

    Raises
    ------
    ValueError
        A bad ``p0``, grid or layer, as :func:`discretize_operator`, or a result above 2^29 numbers.
    TypeError
        Unknown keyword arguments; bools, complex numbers or strings where numbers are expected.
    """
    g = _check_grid(grid)
    p = _real_array(p0, "p0")
    if p.shape != g.shape or np.any(p < 0) or abs(p.sum() - 1.0) > 1e-8:
        raise ValueError(f"p0 must be non-negative masses summing to 1 with shape {g.shape}")
    lays = _check_layers(layers)
    unknown = sorted(set(kwargs) - set(_OPERATOR_OPTIONS))
    if unknown:
        raise TypeError(f"propagate_distribution got unexpected keyword arguments {unknown} (allowed: {_OPERATOR_OPTIONS})")
    opts = dict(kwargs)
    if "nodes_per_cell" in opts:
        opts["nodes_per_cell"] = _int(opts["nodes_per_cell"], "nodes_per_cell", 1, 64)
    if "n_quantiles" in opts:
        opts["n_quantiles"] = _int(opts["n_quantiles"], "n_quantiles", 16, _MAX_QUANTILES)
    if "method" in opts:
        _check_method(opts["method"])
    act = get_activation(activation)
    _check_size((len(lays) + 1) * g.size, "(len(layers) + 1) * len(grid)")
    out = np.empty((len(lays) + 1, g.size))
    out[0] = p
    cache: dict = {}
    for l, lay in enumerate(lays):
        key = (lay.width, lay.sigma_w2, lay.sigma_b2)
        if key not in cache:
            cache[key] = discretize_operator(g, lay.width, lay.sigma_w2, lay.sigma_b2, act, **opts).matrix
        out[l + 1] = cache[key] @ out[l]
    return out


# --------------------------------------------------------------------------------------------------
# expected squared norm (Cor. 3)
# --------------------------------------------------------------------------------------------------


def log_expected_squared_norm(y0, layers: Sequence) -> np.ndarray:
    r"""``log E |x^(l)|^2`` for ReLU layers given ``|x^(0)|^2 = y0`` (seed 001, Cor. 3, eqs. 5-6), at any depth.

    The recursion of eq. 5, ``E_l = (sigma_w,l^2 E_{l-1} + sigma_b,l^2) N_l / 2``, run on the log
    scale: ``log E_l = log(N_l / 2) + logaddexp(log sigma_w,l^2 + log E_{l-1}, log sigma_b,l^2)``.
    Depth 10^4 below or above criticality (``E`` from ``1e-3010`` to ``1e+3010``) is represented.

    Parameters
    ----------
    y0 : float or array_like
        Squared norm(s) of the input (>= 0).
    layers : list of Layer or (width, sigma_w2[, sigma_b2]) tuples
        One entry per ReLU layer, unscaled variances (>= 0), widths ``1 <= N <= MAX_WIDTH``.

    Returns
    -------
    ndarray, shape (L + 1,) + shape of ``y0``
        Row 0 is ``log y0``. ``-inf`` exactly where the expectation is 0 (``y0 = 0`` and no bias
        so far, or a layer with ``sigma_w2 = sigma_b2 = 0``); finite everywhere else.

    Raises
    ------
    ValueError
        Negative or non-finite ``y0`` or variances, a width out of range, a result above 2^29
        numbers.
    TypeError
        ``layers`` not a list of layers; bools, complex numbers or strings where numbers are expected.
    """
    y = _nonneg_array(y0, "y0")
    lays = _check_layers(layers)
    _check_size((len(lays) + 1) * max(y.size, 1), "(len(layers) + 1) * y0.size")
    with np.errstate(divide="ignore"):
        cur = np.log(y)
    out = np.empty((len(lays) + 1,) + y.shape)
    out[0] = cur
    for l, lay in enumerate(lays):
        lsw = math.log(lay.sigma_w2) if lay.sigma_w2 > 0 else -math.inf
        lsb = math.log(lay.sigma_b2) if lay.sigma_b2 > 0 else -math.inf
        cur = np.logaddexp(lsw + cur, lsb) + math.log(lay.width / 2.0)
        out[l + 1] = cur
    return out


def expected_squared_norm(y0, layers: Sequence) -> np.ndarray:
    r"""``E |x^(l)|^2`` for ReLU layers given ``|x^(0)|^2 = y0`` (seed 001, Cor. 3, eqs. 5-6).

    Eq. 5: ``E(|x^(l)|^2 | |x^(l-1)|^2 = y) = (sigma_w,l^2 y + sigma_b,l^2) N_l / 2``, iterated
    (eq. 6 is the unrolled form), per-layer widths and variances, biases included.

    Parameters
    ----------
    y0 : float or array_like
        Squared norm(s) of the input (>= 0).
    layers : list of Layer or (width, sigma_w2[, sigma_b2]) tuples
        One entry per ReLU layer, unscaled variances (>= 0), widths ``1 <= N <= MAX_WIDTH``.

    Returns
    -------
    ndarray, shape (L + 1,) + shape of ``y0``
        Row 0 is ``y0``. Finite, and either exactly 0 (see :func:`log_expected_squared_norm`) or
        a normal float64 number.

    Raises
    ------
    ValueError
        Negative or non-finite ``y0`` or variances, a width out of range, or an expectation
        beyond the float64 range (deep networks off criticality: e.g. depth 10^4 at
        ``sigma_w2 N / 2 = 0.5`` gives ``1e-3010``); use :func:`log_expected_squared_norm` there.
    TypeError
        ``layers`` not a list of layers; bools, complex numbers or strings where numbers are expected.
    """
    logs = log_expected_squared_norm(y0, layers)
    finite = np.isfinite(logs)
    if np.any(finite[1:] & ((logs[1:] > _LOG_MAX) | (logs[1:] < _LOG_TINY))):  # row 0 is the input itself
        bad = logs[1:][finite[1:]]
        raise ValueError(
            f"the expected squared norm leaves the float64 range (log values from {float(bad.min()):.6g} to "
            f"{float(bad.max()):.6g}); use log_expected_squared_norm"
        )
    y = np.asarray(_nonneg_array(y0, "y0"), float)
    out = [y]
    for lay in _check_layers(layers):
        out.append((lay.sigma_w2 * out[-1] + lay.sigma_b2) * lay.width / 2.0)  # direct: exact to rounding
    return np.where(finite, np.array(out), 0.0)


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
        Finite.

    Raises
    ------
    ValueError
        ``gram`` not a symmetric PSD matrix, a negative or non-finite variance, or entries of
        ``V`` beyond float64.
    TypeError
        Bools, complex numbers or strings where numbers are expected.
    """
    gram = _real_array(gram, "gram")
    if gram.ndim != 2 or gram.shape[0] != gram.shape[1]:
        raise ValueError(f"gram must be a square matrix, got shape {gram.shape}")
    gram = check_covariance(gram, "gram")
    sw = _nonneg(sigma_w2, "sigma_w2")
    sb = _nonneg(sigma_b2, "sigma_b2")
    with np.errstate(over="ignore"):
        v = sw * gram + sb
    if not np.all(np.isfinite(v)):
        raise ValueError("sigma_w2 * gram + sigma_b2 overflows float64 (entries beyond 1.8e308); rescale gram")
    return v


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
    TypeError
        Bools, complex numbers or strings.
    """
    rho = _correlation(rho, "rho")
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
    TypeError
        Bools, complex numbers or strings.
    """
    rho = _correlation(rho, "rho")
    g = orthant_probability(rho)
    return (np.sqrt(np.maximum(1 - rho * rho, 0.0)) - 1 + 2 * np.pi * rho * g) / (np.pi - 1)


def _check_pair(v11, v22, v12):
    """``v11, v22 > 0`` (scalars), ``v12`` (array), ``rho = v12 / sqrt(v11 v22)`` and ``sqrt(v11 v22)`` without overflow."""
    v11 = _pos(v11, "v11")
    v22 = _pos(v22, "v22")
    v12 = _real_array(v12, "v12")
    scale = math.sqrt(v11) * math.sqrt(v22)
    with np.errstate(over="ignore"):
        rho = v12 / scale
    if np.any(np.abs(rho) > 1 + 1e-12):
        raise ValueError("v12 must satisfy v12^2 <= v11 v22 (a covariance)")
    return v11, v22, v12, np.clip(rho, -1.0, 1.0), scale


def mean_inner_product(width, v11, v22, v12):
    r"""``E(<x1, x2> | previous layer)`` for a ReLU layer (seed 001, Thm. 5, eq. 9).

    .. math:: N\sqrt{v_{11}v_{22}}\,\Big(g(\rho)\rho + \frac{\sqrt{1-\rho^2}}{2\pi}\Big)

    equal to ``N`` times the arc-cosine kernel ``E relu(h1) relu(h2)``. The paper's eq. 10,
    ``~ N sqrt(v11 v22) (rho + 1) / 4``, is the straight line through the exact values at
    ``rho = -1`` (0) and ``rho = 1`` (1/2); at ``rho = 0`` it gives 1/4 instead of 1/(2 pi).

    Parameters
    ----------
    width : int
        ``1 <= N <= MAX_WIDTH``.
    v11, v22 : float
        Pre-activation variances (> 0), Prop. 2.
    v12 : float or array_like
        Pre-activation covariance, ``v12^2 <= v11 v22``.

    Returns
    -------
    float or ndarray
        Finite: exactly 0 at ``rho = -1``, a normal float64 number elsewhere.

    Raises
    ------
    ValueError
        Non-positive variances, ``v12^2 > v11 v22``, width out of range, or a value beyond the
        float64 range (``N sqrt(v11 v22)`` near 1e308 or 1e-308).
    TypeError
        Bools, complex numbers or strings where numbers are expected.
    """
    n = _width(width)
    v11, v22, v12, rho, scale = _check_pair(v11, v22, v12)
    g = 0.5 - np.arccos(rho) / (2 * np.pi)
    factor = g * rho + np.sqrt(1 - rho * rho) / (2 * np.pi)  # in [0, 1/2], 0 only at rho = -1
    with np.errstate(over="ignore", under="ignore"):
        out = n * scale * factor
    if np.any(~np.isfinite(out) | ((factor > 0) & (np.abs(out) < _TINY))):
        raise ValueError("width * sqrt(v11 v22) puts E<x1, x2> beyond the float64 range; rescale v11, v22, v12")
    return float(out) if np.ndim(out) == 0 else out


def relu_product_density(t, v11, v22, v12, log=False):
    r"""Density of ``relu(h1) relu(h2)`` at ``t > 0`` (the continuous part of ``f_prod``, Thm. 5).

    .. math::
        f(t) = \frac{1}{2\pi\sqrt{\det V}} \exp\Big(\frac{v_{12} t}{\det V}\Big)
        K_0\Big(\frac{\sqrt{v_{11}v_{22}}\, t}{\det V}\Big),

    the positive-quadrant half of the density of the product of two correlated normals; it
    integrates to ``g(rho)``, and ``f_prod = (1 - g(rho)) delta_0 + f``. Needs ``det V > 0``.
    Evaluated as ``log f = -log(2 pi s sqrt(1 - rho^2)) + log K0e(x) - (1 - rho) x`` with
    ``s = sqrt(v11 v22)``, ``x = t / (s (1 - rho^2))`` (exponentially scaled ``k0e``; ``det V``
    never formed, so no overflow or underflow of ``v11 v22``).

    Parameters
    ----------
    t : float or array_like
        Points ``> 0``.
    v11, v22, v12 : float
        The pre-activation covariance of Prop. 2, ``v12^2 < v11 v22``.
    log : bool
        Return ``log f(t)`` (finite) instead of ``f(t)``.

    Returns
    -------
    float or ndarray
        ``f(t)``, correctly rounded: 0.0 in the far tail where ``f < 5e-324`` (use ``log=True``
        there), or ``log f(t)``.

    Raises
    ------
    ValueError
        ``t <= 0``, non-positive variances, ``v12^2 >= v11 v22``, ``t / (sqrt(v11 v22) (1 - rho^2))``
        beyond float64, or (``log=False``) a density beyond float64 (use ``log=True``).
    TypeError
        ``log`` not a bool; bools, complex numbers or strings where numbers are expected.
    """
    t = _real_array(t, "t")
    if np.any(t <= 0):
        raise ValueError(f"t must be > 0, got values down to {float(t.min()) if t.size else None!r}")
    v11, v22, v12, rho, scale = _check_pair(v11, v22, v12)
    log = check_bool(log, "log")
    one_m_r2 = (1.0 - rho) * (1.0 + rho)
    if np.any(one_m_r2 <= 0):
        raise ValueError("v12 must satisfy v12^2 < v11 v22 (|rho| < 1): the law of relu(h1) relu(h2) has a density only then")
    with np.errstate(over="ignore"):
        x = t / (scale * one_m_r2)
    if not np.all(np.isfinite(x)):
        raise ValueError("t / (sqrt(v11 v22) (1 - rho^2)) overflows float64; rescale t, v11, v22, v12")
    with np.errstate(divide="ignore"):
        out = -math.log(2 * math.pi) - math.log(scale) - 0.5 * np.log(one_m_r2) + np.log(special.k0e(x)) - (1.0 - rho) * x
    if not log:
        if np.any(out > _LOG_MAX):
            raise ValueError("the density exceeds float64 here (sqrt(v11 v22) (1 - rho^2) is tiny); use log=True")
        with np.errstate(under="ignore"):
            out = np.exp(out)
    return float(out) if np.ndim(out) == 0 else out


def inner_product_law(grid, width, v11, v22, v12) -> np.ndarray:
    """Law of ``<x1, x2> = sum_i relu(h1_i) relu(h2_i)`` given the previous layer: ``f_prod^{*N}`` (seed 001, Thm. 5).

    Parameters
    ----------
    grid : array_like
        Equidistant cell edges starting at 0 (state 0 = atom at 0, state j = cell j).
    width : int
        ``1 <= N <= MAX_WIDTH``.
    v11, v22, v12 : float
        The pre-activation covariance of Prop. 2 (``|rho| < 1``).

    Returns
    -------
    ndarray, shape (G,)
        Masses (summing to 1; mass beyond the grid lumped into the last cell), accurate to
        O(grid step); masses below the smallest normal float64 are 0.

    Raises
    ------
    ValueError
        A bad or non-equidistant grid, width out of range, variances as in
        :func:`relu_product_density`, or more than 2^27 grid points.
    TypeError
        Bools, complex numbers or strings where numbers are expected.

    Notes
    -----
    Cell masses of the K0 density are integrated (adaptive quadrature in the first cell, where
    K0 has its log singularity, Gauss-Legendre elsewhere), spread onto the lattice ``j dz`` at
    their cell means, and convolved ``N`` times by truncated FFT powers. Accuracy O(grid step).
    """
    from scipy import integrate

    g = _check_grid(grid)
    if not _is_equidistant(g):
        raise ValueError("grid must be equidistant (FFT convolution)")
    n = _width(width)
    v11, v22, v12, rho, _ = _check_pair(v11, v22, v12)
    if not abs(float(rho)) < 1.0:
        raise ValueError("v12 must satisfy v12^2 < v11 v22 (|rho| < 1): the law of relu(h1) relu(h2) has a density only then")
    _check_size(4 * g.size, "4 * len(grid) (FFT work arrays)")
    dz = float(g[1] - g[0])
    G = g.size
    log_dz = math.log(dz)

    def cell_density(u):  # dz * f(dz * u): the density of t / dz, bounded by the masses (no overflow)
        with np.errstate(under="ignore"):
            return np.exp(relu_product_density(dz * np.asarray(u), v11, v22, v12, log=True) + log_dz)

    # masses and first moments (in units of dz) of the continuous part on [j dz, (j+1) dz], j = 0..G-1
    x, w = np.polynomial.legendre.leggauss(12)
    ua = np.arange(G)[:, None] + 0.5 * (x[None, :] + 1)  # t / dz
    mass = np.empty(G)
    mom = np.empty(G)
    mass[0] = integrate.quad(cell_density, 0, 1, limit=200)[0]
    mom[0] = integrate.quad(lambda u: u * cell_density(u), 0, 1, limit=200)[0]
    fa = cell_density(ua[1:])
    mass[1:] = (fa * w).sum(1) / 2
    mom[1:] = (fa * ua[1:] * w).sum(1) / 2
    c = np.zeros(G + 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(mass > 0, mom / np.where(mass > 0, mass, 1.0), 0.0)
    t = np.minimum(t, G + 1.0)
    lo = np.floor(t).astype(np.int64)
    frac = t - lo
    np.add.at(c, np.minimum(lo, G), (1 - frac) * mass)
    np.add.at(c, np.minimum(lo + 1, G), frac * mass)
    c = c[:G]
    atom_single = 1.0 - float(orthant_probability(float(rho)))
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
    out = cells / cells.sum()
    out[out < _TINY] = 0.0
    return out


#: Largest number of (pairs of) normals :func:`cosine_similarity_samples` draws, ``n_samples * width``
#: (2^36: about ten minutes on one core).
_MAX_DRAWS = 2**36


def cosine_similarity_samples(width, rho, n_samples=1_000_000, sigma_w2=1.0, rng=None, chunk=None, dtype=np.float64) -> np.ndarray:
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
        ``1 <= N <= MAX_WIDTH``.
    rho : float
        ``<x1, x2>`` of the unit previous-layer signals (the pre-activation correlation), in [-1, 1].
    n_samples : int
        Repeats, ``1 <= n_samples <= 2**29`` with ``n_samples * width <= 2**36``; 10^6 take seconds.
    sigma_w2 : float
        ``> 0``; it does not affect the cosine (kept for the paper's parametrisation).
    rng : None, int or numpy.random.Generator
        Randomness (``meanfield._checks.check_rng``): an int ``n`` gives the stream of
        ``numpy.random.default_rng(n)``.
    chunk : int, optional
        Repeats drawn per block, ``chunk * width <= 2**26`` (memory ``2 * chunk * width``
        numbers); default ``min(20000, 2**24 // width)``. The samples depend on it (the stream is
        consumed block by block).
    dtype : {numpy.float64, numpy.float32}
        Precision of the drawn normals.

    Returns
    -------
    ndarray, shape (n_samples,)
        Cosine similarities in [0, 1].

    Raises
    ------
    ValueError
        Arguments out of range.
    TypeError
        Bools, complex numbers, strings or a bad ``rng`` / ``dtype``.
    """
    n = _width(width)
    rho = float(_correlation(check_scalar(rho, "rho"), "rho"))
    _pos(sigma_w2, "sigma_w2")
    total = _int(n_samples, "n_samples", 1, _MAX_ELEMENTS)
    if total * n > _MAX_DRAWS:
        raise ValueError(f"n_samples * width must be <= 2**36 (draws of normal pairs), got {total} * {n}")
    chunk = min(20_000, max(1, 2**24 // n)) if chunk is None else _int(chunk, "chunk", 1)
    if chunk * n > 2**26:
        raise ValueError(f"chunk * width must be <= 2**26 (memory of one block), got {chunk} * {n}")
    rng = check_rng(rng)
    try:
        dtype = np.dtype(dtype)
    except TypeError as exc:
        raise TypeError(f"dtype must be numpy.float32 or numpy.float64, got {dtype!r}") from exc
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
