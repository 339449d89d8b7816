"""Width extrapolation of the comparison tables' Monte-Carlo statistics (one rule for every module).

Finite networks are biased by O(1/N) in their width N (the channel count ``c`` of a CNN), so the
tables simulate widths N and 2N and compare the theory with the Richardson estimate ``2 m_2N - m_N``
(:func:`meanfield.numerics.richardson`, order 1 in 1/N; standard error
``sqrt(4 se_2N^2 + se_N^2)``), allowing :func:`EXTRAPOLATION_BIAS` for the O(1/N^2) remainder.
"""

from __future__ import annotations

from typing import Any

from meanfield.compare import mean_and_stderr
from meanfield.numerics import richardson

__all__ = ["EXTRAPOLATION_BIAS", "extrapolate_moments", "extrapolate_samples"]


def EXTRAPOLATION_BIAS(scale: float, width: int) -> float:
    """Bound on the O(1/N^2) remainder after width extrapolation: the quantity's scale over N^2.

    Parameters
    ----------
    scale : float
        The size of the compared quantity (its absolute value is used).
    width : int
        The smaller of the two widths (or channel counts) ``N``.

    Returns
    -------
    float
        ``|scale| / N^2``.
    """
    return abs(scale) / width**2


def extrapolate_samples(coarse: Any, fine: Any) -> tuple[Any, Any]:
    """``2 m_2N - m_N`` and its standard error, from per-network samples at widths N and 2N.

    Parameters
    ----------
    coarse, fine : array_like
        Per-network statistics at widths N and 2N, networks along axis 0.

    Returns
    -------
    value, stderr : float or ndarray
        The extrapolated means and their standard errors (the shape of one network's statistic).
    """
    (m1, s1), (m2, s2) = mean_and_stderr(coarse), mean_and_stderr(fine)
    est = richardson(m1, m2, order=1, coarse_stderr=s1, fine_stderr=s2)
    return est.value, est.stderr


def extrapolate_moments(coarse: Any, fine: Any, i: int) -> tuple[Any, Any]:
    """``2 m_2N - m_N`` of statistic ``i`` and its standard error, from ensemble moments at widths N and 2N.

    Parameters
    ----------
    coarse, fine : meanfield.parallel.Moments
        The moments of :func:`meanfield.validation.ensembles.ensemble_moments` at widths N and 2N.
    i : int
        The index of the statistic.

    Returns
    -------
    value, stderr : float
        The extrapolated mean and its standard error.
    """
    est = richardson(coarse.mean[i], fine.mean[i], order=1, coarse_stderr=coarse.stderr[i], fine_stderr=fine.stderr[i])
    return est.value, est.stderr
