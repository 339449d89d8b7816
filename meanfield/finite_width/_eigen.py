"""Eigenfunctions ``y^m`` of the ReLU operator ``T_l`` and their eigenvalues (Burkholz & Dubatovka 2019, Prop. 4 eq. 8, Sec. 2.3)."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import optimize, special, stats

from .._results import Result
from ._common import LOG2, exp_or_raise, fan_in_arg, log_binomial_half, positive, real_array, unscaled, width_arg

__all__ = [
    "RELU_EIGEN_M_MAX",
    "RELU_EIGEN_M_MIN",
    "CriticalExponents",
    "critical_exponents",
    "quasi_stationary_exponent",
    "relu_eigenvalue",
    "relu_eigenvalue_printed",
    "relu_log_eigenvalue",
]

#: The eigenfunction ``y^m`` has a finite eigenvalue only for ``m < RELU_EIGEN_M_MAX`` (= -1/2).
RELU_EIGEN_M_MAX = -0.5
#: Most negative exponent accepted: ``log lambda_m ~ |m| log |m|`` stays inside float64.
RELU_EIGEN_M_MIN = -1e300


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


#: Widths above which the sum over k is restricted to the terms that matter (bounded time and memory
#: up to MAX_WIDTH); at and below it every term is summed.
_WINDOW_FROM = 4096
#: Terms smaller than the largest by more than e^_WINDOW_DROP are left out (n e^-80 < 1e-27 relative).
_WINDOW_DROP = 80.0
#: Coarse points locating the largest term, and leading terms always kept.
_WINDOW_PROBES = 4096
_WINDOW_HEAD = 64


@functools.lru_cache(maxsize=16)
def _log_binomial_norm(n: int) -> float:
    """``logsumexp`` of ``binom.logpmf(k, n, 1/2)`` over the k that matter (renormalises the pmf)."""
    half, sd = 0.5 * n, 0.5 * math.sqrt(n)
    k = np.arange(max(0, math.floor(half - 40 * sd)), min(n, math.ceil(half + 40 * sd)) + 1, dtype=np.float64)
    return float(special.logsumexp(stats.binom.logpmf(k, n, 0.5)))


def _log_gamma_sum_windowed(m: float, n: int) -> float:
    """:func:`_log_gamma_sum` for one ``m`` at a large width: the terms ``log w_k + log Gamma ratio`` are
    concave in k (both parts are), so only a window around the largest one (located on a coarse
    grid) and the first terms are summed."""
    norm = _log_binomial_norm(n)
    s = -m - 1.0

    def terms(k):
        return stats.binom.logpmf(k, n, 0.5) - norm + _log_gamma_ratio(k / 2, s)

    kc = np.unique(np.concatenate([np.arange(1, _WINDOW_HEAD + 1), np.round(np.linspace(1, n, _WINDOW_PROBES))]))
    tc = terms(kc)
    j = int(np.argmax(tc))
    low = tc[j] - _WINDOW_DROP
    left, right = j, j
    while left > 0 and tc[left] >= low:
        left -= 1
    while right < kc.size - 1 and tc[right] >= low:
        right += 1
    kw = np.arange(kc[left], kc[right] + 1, dtype=np.float64)
    head = np.arange(1, min(_WINDOW_HEAD, kc[left] - 1) + 1, dtype=np.float64)
    return float(special.logsumexp(terms(np.concatenate([head, kw]))))


def _log_gamma_sum(m, n):
    """``log sum_{k=1}^n C(n,k) 0.5^n Gamma(k/2 - m - 1) / Gamma(k/2)`` for each ``m`` (array)."""
    if n > _WINDOW_FROM:
        m = np.atleast_1d(np.asarray(m, dtype=np.float64))
        return np.array([_log_gamma_sum_windowed(float(v), n) for v in m.reshape(-1)]).reshape(m.shape)
    k, logw = log_binomial_half(n)
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
    m = real_array(m, "m")
    if np.any(m >= RELU_EIGEN_M_MAX) or np.any(m < RELU_EIGEN_M_MIN):
        raise ValueError(
            f"m must lie in [-1e300, -1/2) (y^m is an eigenfunction with finite eigenvalue only below -1/2; "
            f"the k = 1 term needs Gamma(1/2 - m - 1) finite), got {m}"
        )
    return m


def _unscaled_positive(sigma_w2, n, fan_in) -> float:
    """Burkholz & Dubatovka's ``sigma_w^2 = sigma_w2 / fan_in`` for the eigenvalue functions (``sigma_w2 > 0``)."""
    return unscaled(positive(sigma_w2, "sigma_w2"), fan_in_arg(fan_in, n))


def _log_eigenvalue(m: np.ndarray, n: int, sw: float):
    """``log lambda_m`` for validated ``m``, width ``n`` and Burkholz & Dubatovka's (unscaled) ``sw > 0``."""
    mm = np.asarray(m, float)
    out = -(mm + 1) * (LOG2 + math.log(sw)) + _log_gamma_sum(mm, n).reshape(mm.shape)
    return float(out) if out.ndim == 0 else out


def relu_log_eigenvalue(
    m: ArrayLike, width: int, sigma_w2: float = 2.0, *, fan_in: int | None = None
) -> float | np.ndarray:
    """Natural log of :func:`relu_eigenvalue` (Burkholz & Dubatovka 2019, Prop. 4, eq. 8 as derived), finite for every width.

    Evaluated as ``-(m+1) log(2 s) + logsumexp_k [log(C(N,k) 0.5^N) + log Gamma(k/2-m-1) -
    log Gamma(k/2)]``, ``s = sigma_w2 / fan_in``, with Stirling differences for large Gamma
    arguments, so widths up to 10^7 and very negative ``m`` neither overflow nor lose precision.

    Parameters
    ----------
    m : float or array_like
        Exponent(s), ``-1e300 <= m < -1/2``.
    width : int
        ``1 <= N <= MAX_WIDTH``.
    sigma_w2 : float
        ``> 0``, the weight variance times fan-in (``W_ij ~ N(0, sigma_w2 / fan_in)``); default He, 2.
    fan_in : int, optional
        ``1 <= fan_in <= MAX_WIDTH``; default ``width`` (square layers).

    Returns
    -------
    float or ndarray
        ``log lambda_m``, finite.

    Raises
    ------
    ValueError
        ``m`` outside ``[-1e300, -1/2)``, ``width`` or ``fan_in`` out of range or not an integer
        (a bool, a string or a non-integral float), ``sigma_w2 <= 0`` or non-finite input.
    TypeError
        Bools, complex numbers or strings where real numbers are expected (``m``, ``sigma_w2``);
        a complex ``width`` or ``fan_in``.

    Examples
    --------
    >>> round(relu_log_eigenvalue(-1e4, 10), 1)   # lambda_m itself is beyond float64 here
    72964.7
    """
    n = width_arg(width)
    m = _check_m(m)
    return _log_eigenvalue(m, n, _unscaled_positive(sigma_w2, n, fan_in))


def relu_eigenvalue(
    m: ArrayLike, width: int, sigma_w2: float = 2.0, *, fan_in: int | None = None
) -> float | np.ndarray:
    r"""Eigenvalue of the eigenfunction ``y^m`` of the ReLU operator ``T_l`` with ``sigma_b = 0``.

    Derived from the kernel of Prop. 4 (Burkholz & Dubatovka 2019, eq. 8 corrected), with Burkholz & Dubatovka's per-weight
    variance ``sigma_w^2 = sigma_w2 / fan_in``:

    .. math::
        T_l[y^m](z) = \lambda_m z^m,\qquad
        \lambda_m = 0.5^{N+m+1}\,\sigma_w^{-2(m+1)} \sum_{k=1}^{N}\binom{N}{k}
        \frac{\Gamma(k/2-m-1)}{\Gamma(k/2)},

    because ``int_0^inf y^m (sigma_w^2 y)^-1 p_k(z / (sigma_w^2 y)) dy = z^m sigma_w^{-2(m+1)}
    E[(chi^2_k)^{-m-1}]`` and ``E[(chi^2_k)^s] = 2^s Gamma(k/2 + s) / Gamma(k/2)`` for
    ``s > -k/2``. The printed eq. 8 has ``0.5^(N-m-1)`` (:func:`relu_eigenvalue_printed`).
    ``lambda_{-1} = 1 - 0.5^N`` for every ``sigma_w2``; with He (``sigma_w2 = 2``, square
    layers), ``lambda_{-2} = 1``.

    Parameters
    ----------
    m, width, sigma_w2, fan_in
        As in :func:`relu_log_eigenvalue` (``-1e300 <= m < -1/2``, ``1 <= width <= MAX_WIDTH``,
        ``sigma_w2 > 0`` the weight variance times fan-in, default He 2; ``fan_in`` default ``width``).

    Returns
    -------
    float or ndarray
        Finite and normal.

    Raises
    ------
    ValueError
        As :func:`relu_log_eigenvalue`, or an eigenvalue beyond the float64 range (very negative
        ``m``, extreme ``sigma_w2``): use :func:`relu_log_eigenvalue` there.
    TypeError
        As :func:`relu_log_eigenvalue`.

    Examples
    --------
    >>> round(relu_eigenvalue(-1.0, 10, 3.7), 12)      # 1 - 0.5**10, any sigma_w2
    0.9990234375
    >>> round(relu_eigenvalue(-2.0, 100), 12)          # He preserves y^-2
    1.0
    """
    return exp_or_raise(relu_log_eigenvalue(m, width, sigma_w2, fan_in=fan_in), "lambda_m", "relu_log_eigenvalue")


def relu_eigenvalue_printed(
    m: ArrayLike, width: int, sigma_w2: float = 2.0, *, fan_in: int | None = None
) -> float | np.ndarray:
    """Eq. 8 of Burkholz & Dubatovka 2019 exactly as printed (prefactor ``0.5^(N-m-1)``), kept for Fig. 1b.

    Equals ``relu_eigenvalue(m, width, sigma_w2) * 4^(m+1)``. It does **not** equal the
    eigenvalue obtained by quadrature of the defining integral (tests pin this); the paper's
    critical-exponent relation and Fig. 1b follow this variant.

    Parameters
    ----------
    m, width, sigma_w2, fan_in
        As in :func:`relu_eigenvalue`.

    Returns
    -------
    float or ndarray
        ``relu_eigenvalue(m, ...) * 4^(m+1)``, finite and normal.

    Raises
    ------
    ValueError
        As :func:`relu_eigenvalue` (beyond float64: use ``relu_log_eigenvalue(m, ...) + 2 (m + 1) log 2``).
    TypeError
        As :func:`relu_log_eigenvalue`.

    Examples
    --------
    >>> round(relu_eigenvalue_printed(-2.0, 100), 12)   # He: 1/4 where the derived eigenvalue is 1
    0.25
    """
    m = _check_m(m)
    log = np.asarray(relu_log_eigenvalue(m, width, sigma_w2, fan_in=fan_in)) + 2 * (np.asarray(m) + 1) * LOG2
    return exp_or_raise(log, "the printed lambda_m", "relu_log_eigenvalue(m, ...) + 2 (m + 1) log 2")


@dataclass(frozen=True)
class CriticalExponents(Result):
    """Exponents ``m`` with eigenvalue 1 (Burkholz & Dubatovka 2019, Sec. 2.3).

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


#: Bracket expansion steps of :func:`_convex_bracket` (2^60: far beyond any root in float range).
_MAX_EXPANSIONS = 60
#: Range of ``sigma_w2 * width / fan_in`` (Burkholz & Dubatovka's ``sigma_w^2 N``; ``sigma_w2`` itself for
#: square layers) in which :func:`critical_exponents` and :func:`quasi_stationary_exponent`
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
            raise FloatingPointError(
                "log lambda_m stays <= 0 up to the float next to -1/2: no upper bracket in float range"
            )
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


def _unresolvable(n, sigma_w2, fan_in, exc) -> str:
    return (
        f"sigma_w2={sigma_w2!r} (width {n}, fan_in {fan_in}) puts a root of lambda_m = target beyond float64 resolution "
        f"({exc}); supported: sigma_w2 * width / fan_in in [{_SW_RANGE[0]:g}, {_SW_RANGE[1]:g}] (He is 2); "
        "use relu_log_eigenvalue directly"
    )


def critical_exponents(width: int, sigma_w2: float = 2.0, *, fan_in: int | None = None) -> CriticalExponents:
    """The exponents ``m`` at which the eigenvalue of ``y^m`` equals 1 (Burkholz & Dubatovka 2019, Sec. 2.3, eq. 8).

    Parameters
    ----------
    width, sigma_w2, fan_in
        As in :func:`relu_log_eigenvalue`.

    Returns
    -------
    CriticalExponents

    Raises
    ------
    ValueError
        ``width`` or ``fan_in`` outside ``[1, MAX_WIDTH]`` or not an integer (a bool, a string or
        a non-integral float), ``sigma_w2 <= 0`` or non-finite, or a root that float64 cannot
        resolve (beyond ``m = -3 * 2^60``, or closer to -1/2 than float resolution). Every
        ``1e-12 <= sigma_w2 * width / fan_in <= 2`` (He: 2) is resolved at every width; beyond 2,
        square layers were measured to resolve up to ``sigma_w2 = 1e20`` for ``N <= 25`` and up
        to 1e6 for ``N <= 50`` (``critical_exponents(50, 1e10)`` raises).
    TypeError
        A bool, complex number or string as ``sigma_w2``; a complex ``width`` or ``fan_in``.

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
    n = width_arg(width)
    fi = fan_in_arg(fan_in, n)
    sw = _unscaled_positive(sigma_w2, n, fi)

    def logf(m):
        return float(_log_eigenvalue(np.float64(m), n, sw))

    def logp(m):
        return logf(m) + 2 * (m + 1) * LOG2

    try:
        lo, up = _roots(logf)
        plo, pup = _roots(logp)
    except FloatingPointError as exc:
        raise ValueError(_unresolvable(n, sigma_w2, fi, exc)) from exc
    return CriticalExponents(lo, up, plo, pup, -3.2559793 - 1.6207083 * n)


def quasi_stationary_exponent(width: int, sigma_w2: float = 2.0, *, fan_in: int | None = None) -> float:
    """The exponent ``m != -1`` with ``lambda_m = 1 - 0.5^N``: the shape ``y^m`` of the law conditioned on survival.

    Every column of the (``sigma_b = 0``) operator sends exactly ``0.5^N`` of the mass of ``z > 0``
    to the absorbing atom, so the law restricted to ``z > 0`` has the Perron eigenvalue
    ``1 - 0.5^N`` of the discretised operator; its eigenvector has density ``~ y^m`` with ``m``
    the root of ``lambda_m = 1 - 0.5^N`` other than ``m = -1`` (which holds for every
    ``sigma_w2``). This makes precise the paper's remark that discretised eigenvectors
    "attain shapes ~ y^m" (Burkholz & Dubatovka 2019, after Prop. 4, eq. 8). He (``sigma_w2 = 2``): ``m`` just above -2.

    Parameters
    ----------
    width : int
        ``1 <= N <= MAX_WIDTH``.
    sigma_w2 : float
        ``> 0``, the weight variance times fan-in; default He, 2.
    fan_in : int, optional
        ``1 <= fan_in <= MAX_WIDTH``; default ``width`` (square layers).

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
        A bool, complex number or string as ``sigma_w2``; a complex ``width`` or ``fan_in``.

    Examples
    --------
    >>> m = quasi_stationary_exponent(10)      # He: just above -2
    >>> round(m, 4), round(relu_eigenvalue(m, 10), 12) == round(1 - 0.5**10, 12)
    (-1.9959, True)
    """
    n = width_arg(width)
    fi = fan_in_arg(fan_in, n)
    sw = _unscaled_positive(sigma_w2, n, fi)
    target = math.log1p(-(0.5**n))

    def f(m):
        return float(_log_eigenvalue(np.float64(m), n, sw)) - target

    try:
        lo, m_min, hi = _convex_bracket(f)
    except FloatingPointError as exc:
        raise ValueError(_unresolvable(n, sigma_w2, fi, exc)) from exc
    if not f(m_min) < 0 or abs(m_min + 1.0) < 1e-9:
        return -1.0  # double root at m = -1 (to float precision)
    tol = dict(xtol=1e-13, rtol=4 * np.finfo(float).eps)
    return optimize.brentq(f, lo, m_min, **tol) if m_min < -1.0 else optimize.brentq(f, m_min, hi, **tol)
