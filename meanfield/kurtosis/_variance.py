"""The law of the empirical variance of a layer's outputs (Grzejdziak 2023, Sec. 5) and the probability of a non-zero
output (Prop. B.2; private).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import special, stats

from .._checks import check_bool, check_scalar
from .._results import Result
from ..init._args import real_array as _real_array
from ._args import _LOG_MAX, _check_widths, _int

# --------------------------------------------------------------------------------------------
# Sec. 5: empirical variance
# --------------------------------------------------------------------------------------------


#: Smallest normal float64; probabilities and quantiles below it are reported on the log scale.
_TINY = float(np.finfo(np.float64).tiny)
_LOG_TINY = math.log(_TINY)


def _stirling_tail(a):
    """``lgamma(a + 1) - [(a + 1/2) log a - a + log(2 pi) / 2]`` for ``a >= 30`` (error < 3e-14)."""
    r = 1.0 / a
    r2 = r * r
    return r * (1 / 12 - r2 * (1 / 360 - r2 / 1260))


def _log_gamma_lower(a: float, log_x: np.ndarray) -> np.ndarray:
    """``log P(a, x)`` (regularised lower incomplete gamma) at ``x = exp(log_x)``, finite where ``P`` underflows.

    Where ``P >= 1e-290`` it is ``log(gammainc)``. Below, ``x < a`` and the series
    ``P = x^a e^-x / Gamma(a + 1) * M(1, a + 1, x)`` (Kummer's function, DLMF 8.5.1) is used, its
    prefactor written as ``-a (t - 1 - log t) - log(2 pi a) / 2 - tail(a)`` with ``t = x / a`` for
    ``a >= 30`` (Stirling; no cancellation of large terms). ``x`` itself may underflow there.
    """
    shape = np.shape(log_x)
    log_x = np.atleast_1d(np.asarray(log_x, dtype=np.float64))
    with np.errstate(divide="ignore", under="ignore", over="ignore"):
        x = np.exp(log_x)
        p = special.gammainc(a, x)
        out = np.log(p)
    low = p < 1e-290
    if np.any(low):
        lx = log_x[low]
        with np.errstate(under="ignore"):
            xl = np.exp(lx)
        if a >= 30.0:
            lt = lx - math.log(a)
            y = np.exp(lt) - 1.0
            phi = np.where(y > -0.5, y - np.log1p(np.maximum(y, -0.5)), y - lt)  # t - 1 - log t >= 0
            lead = -a * phi - 0.5 * math.log(2 * math.pi * a) - _stirling_tail(a)
        else:
            lead = a * lx - xl - special.gammaln(a + 1.0)
        out[low] = lead + np.log(special.hyp1f1(1.0, a + 1.0, xl))
    return out.reshape(shape)


@dataclass(frozen=True)
class EmpiricalVarianceDistribution(Result):
    """The law of the sample variance ``S_n^2`` of ``n`` i.i.d. draws of kurtosis ``kappa`` (Sec. 5).

    Attributes
    ----------
    kappa : float
        Kurtosis of the sampled variable.
    n : int
        Sample size.
    sigma2 : float
        Its variance (the mean of ``S_n^2``).
    var_s2 : float
        Exact ``Var S_n^2 = (kappa - (n - 3) / (n - 1)) sigma^4 / n`` (O'Neill 2014).
    df : float
        ``DF_n = 2 sigma^4 / Var S_n^2 = 2 n / (kappa - (n - 3)/(n - 1))``.
    shape, scale : float
        Gamma approximation ``S_n^2 ~ Gamma(k = DF_n / 2, theta = sigma^2 / k)`` (mean ``sigma^2``,
        variance ``Var S_n^2``).
    dist : scipy frozen distribution
        ``scipy.stats.gamma(shape, scale=scale)`` (its ``cdf`` and ``ppf`` underflow to 0 in the
        far lower tail; the methods below do not).
    """

    kappa: float
    n: int
    sigma2: float
    var_s2: float
    df: float
    shape: float
    scale: float
    dist: Any

    def _p(self, p, name, open_left):
        p = _real_array(p, name)
        lo_ok = (p > 0) if open_left else (p >= 0)
        if not np.all(lo_ok & (p < 1)):
            raise ValueError(f"{name} must lie in {'(0' if open_left else '[0'}, 1) (the 1-quantile is +inf), got {p}")
        return p

    def log_quantile(self, p: ArrayLike) -> float | np.ndarray:
        """``log`` of the ``p``-quantile of the Gamma approximation, ``p`` in (0, 1); finite.

        Below the smallest normal float the quantile solves ``P(k, x) = p`` with
        ``P(k, x) = x^k / Gamma(k + 1) (1 + O(x))``, i.e. ``log x = (log p + lgamma(k + 1)) / k``.
        """
        p = self._p(p, "p", True)
        k = self.shape
        with np.errstate(divide="ignore", under="ignore"):
            q = special.gammaincinv(k, p)
            out = np.log(q)
        tiny = q < _TINY
        if np.any(tiny):
            out = np.where(tiny, (np.log(p) + special.gammaln(k + 1.0)) / k, out)
        out = out + math.log(self.scale)
        return float(out) if out.ndim == 0 else out

    def quantile(self, p: ArrayLike) -> float | np.ndarray:
        """Quantiles of the Gamma approximation, ``p`` in [0, 1).

        Raises ``ValueError`` where a quantile is below the smallest normal float64 (``p > 0``) or
        beyond the largest: use :meth:`log_quantile` there.
        """
        p = self._p(p, "p", False)
        with np.errstate(under="ignore", over="ignore"):
            q = special.gammaincinv(self.shape, p) * self.scale
        bad = ~np.isfinite(q) | ((q < _TINY) & (p > 0))
        if np.any(bad):
            raise ValueError(
                "p gives quantiles beyond the float64 range (they underflow to 0 or overflow); use log_quantile"
            )
        return float(q) if q.ndim == 0 else q

    def log_prob_below(self, v: ArrayLike) -> float | np.ndarray:
        """``log P(S_n^2 < v)`` under the Gamma approximation, ``v > 0``; finite (accurate in the far lower tail)."""
        v = _real_array(v, "v")
        if not np.all(v > 0):
            raise ValueError(f"v must be > 0 (P(S_n^2 < v) = 0 for v <= 0), got {v}")
        out = _log_gamma_lower(self.shape, np.log(v) - math.log(self.scale))
        return float(out) if out.ndim == 0 else out

    def prob_below(self, v: ArrayLike) -> float | np.ndarray:
        """``P(S_n^2 < v)`` under the Gamma approximation (0 for ``v <= 0``).

        Raises ``ValueError`` where the probability is positive but below the smallest normal
        float64 (it would underflow to 0): use :meth:`log_prob_below` there.
        """
        v = _real_array(v, "v")
        with np.errstate(under="ignore"):
            out = special.gammainc(self.shape, np.maximum(v, 0.0) / self.scale)
        if np.any((out < _TINY) & (v > 0)):
            raise ValueError(
                "v gives probabilities below the float64 range (they would underflow to 0); use log_prob_below"
            )
        return float(out) if out.ndim == 0 else out


def empirical_variance_distribution(kappa: float, n: int, sigma2: float = 1.0) -> EmpiricalVarianceDistribution:
    """Variance of ``S_n^2`` and its Gamma approximation, Sec. 5 of Grzejdziak 2023.

    Parameters
    ----------
    kappa : float
        Kurtosis ``>= 1`` of the sampled variable.
    n : int
        Sample size, ``2 <= n <= 2**53``.
    sigma2 : float
        Its variance ``> 0``.

    Returns
    -------
    EmpiricalVarianceDistribution
        ``var_s2``, ``df``, the Gamma ``shape`` / ``scale`` (all finite and normal) and the frozen
        ``scipy.stats.gamma``; quantiles and probabilities through its methods (with log-scale
        versions for the far tails).

    Raises
    ------
    ValueError
        ``kappa < 1``, ``n`` outside ``[2, 2**53]`` or not an integer (a bool, a string or a
        non-integral float), ``sigma2 <= 0``, a non-finite argument, or a combination whose
        ``var_s2``, ``df``, ``shape`` or ``scale`` falls outside the normal float64 range
        (``Var S_n^2`` scales as ``sigma2^2``: rescale ``sigma2``).
    TypeError
        Bools, complex numbers or strings where real numbers are expected; a complex ``n``.

    Notes
    -----
    Exact for the variance (i.i.d. samples); the Gamma law is the paper's moment-matched
    approximation. As ``kappa -> inf`` the shape ``k -> 0``: the law concentrates at 0 (the
    "vanishing empirical variance"). In a network the ``n`` outputs of one network share weights and
    are not i.i.d.; the paper applies the formula heuristically.

    Examples
    --------
    Gaussian samples (``kappa = 3``): ``S_n^2 ~ chi^2_{n-1} / (n - 1)`` exactly, so ``DF_n = n - 1``:

    >>> ev = empirical_variance_distribution(3.0, 10)
    >>> round(ev.var_s2, 12), round(ev.df, 12), round(ev.shape, 12)
    (0.222222222222, 9.0, 4.5)
    """
    kappa = check_scalar(kappa, "kappa")
    if kappa < 1.0:
        raise ValueError(f"kappa must be >= 1 (a kurtosis), got {kappa!r}")
    n = _int(n, "n", 2, 2**53)
    sigma2 = check_scalar(sigma2, "sigma2")
    if sigma2 <= 0:
        raise ValueError(f"sigma2 must be > 0 (a variance), got {sigma2!r}")
    excess = (kappa - 1.0) + 2.0 / (n - 1.0)  # = kappa - (n - 3) / (n - 1) > 0, without cancellation
    log_excess, log_n, log_s2 = math.log(excess), math.log(n), math.log(sigma2)
    logs = {
        "var_s2": log_excess + 2.0 * log_s2 - log_n,
        "df": math.log(2.0) + log_n - log_excess,
        "shape": log_n - log_excess,
        "scale": log_s2 - log_n + log_excess,
    }
    bad = [k for k, v in logs.items() if not _LOG_TINY <= v <= _LOG_MAX]
    if bad:
        raise ValueError(
            f"kappa={kappa!r}, n={n} and sigma2={sigma2!r} put {', '.join(bad)} outside the normal float64 range "
            f"(log values {', '.join(f'{logs[k]:.4g}' for k in bad)}); rescale sigma2 (Var S_n^2 scales as sigma2^2)"
        )
    var_s2 = math.exp(logs["var_s2"])
    df = 2.0 * n / excess
    shape = df / 2.0
    scale = sigma2 / shape
    return EmpiricalVarianceDistribution(kappa, n, sigma2, var_s2, df, shape, scale, stats.gamma(shape, scale=scale))


# --------------------------------------------------------------------------------------------
# Prop. B.2: probability of a non-zero output
# --------------------------------------------------------------------------------------------


def nonzero_probability(widths: Sequence[int] | ArrayLike, log: bool = False) -> np.ndarray:
    """``P(y^(d) != 0)`` for a ReLU network (Prop. B.2): ``prod_{l=0}^{d-1} (1 - 2^{-w_l})``.

    Parameters
    ----------
    widths : sequence of int
        ``1 <= widths[l] <= 2**53`` is the width of ``y^(l)`` (the input to the ReLU of layer
        ``l + 1``); the depth is ``len(widths)``. Width 1 everywhere gives ``2^-d`` (Prop. B.1).
    log : bool
        Return ``log P`` (finite at any depth) instead of ``P``.

    Returns
    -------
    ndarray, shape (d + 1,)
        The probability (or its log) after ``0 .. d`` layers (index 0 is 1, resp. 0).

    Raises
    ------
    ValueError
        Empty or non-integer ``widths``, a width outside ``[1, 2**53]``, or (``log=False``) a
        probability below the smallest normal float64 (e.g. width 1 beyond depth 1022): use
        ``log=True`` there.
    TypeError
        ``log`` not a bool; bools, complex numbers or strings in ``widths``.

    Notes
    -----
    Assumptions (the paper's "symmetric and uncorrelated" does not suffice): conditionally on any
    fixed non-zero ``v = relu(y^(l-1))`` the signs of ``W^(l) v`` are independent fair coins and
    ``W^(l) v != 0`` almost surely. This holds for i.i.d. symmetric weights with independent rows
    when ``W v = 0`` has probability 0 (continuous laws: Gaussian, uniform), and for Haar-orthogonal
    ``W`` (``W v`` is uniform on a sphere); the input must have independent symmetric signs and no
    zero entries. It fails for looks-linear/GSM weights (exactly half of ``W v`` is positive, so
    only the input layer can zero the signal), for inputs with dependent signs (one shared sign:
    ``1/2 prod_{l>=1}``), and for Rademacher weights at width >= 2: two rows with equal signs give
    equal entries, and a later row ``(+1, -1)`` then maps them to exactly 0 (measured: 0.042 instead
    of 0.100 at width 2, depth 8, 100,000 networks). Width 1 is exact for every symmetric law (Prop. B.1).
    Computed as ``exp(cumsum(log1p(-2^-w)))``.

    References
    ----------
    Grzejdziak 2023, supplement B: Prop. B.1 (width 1) and Prop. B.2 (any widths).

    Examples
    --------
    >>> nonzero_probability([1, 1, 1])       # Prop. B.1: 2^-d at width 1
    array([1.   , 0.5  , 0.25 , 0.125])
    >>> nonzero_probability([2, 3])
    array([1.     , 0.75   , 0.65625])
    """
    widths = _check_widths(widths)
    log = check_bool(log, "log")
    with np.errstate(under="ignore"):
        logs = np.concatenate([[0.0], np.cumsum(np.log1p(-np.exp2(-widths.astype(np.float64))))])
    if log:
        return logs
    if logs[-1] < _LOG_TINY:
        first = int(np.argmax(logs < _LOG_TINY))
        raise ValueError(
            f"widths give P(y != 0) below the float64 range from depth {first} on (log P = {logs[-1]:.6g}); use log=True"
        )
    return np.exp(logs)
