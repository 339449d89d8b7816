"""The ReLU correlation map and the mean inner product (Burkholz & Dubatovka 2019, Thm. 5, eqs. 9-10)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ._common import TINY, check_pair, correlation, width_arg

__all__ = ["mean_inner_product", "orthant_probability", "relu_correlation"]


def orthant_probability(rho: ArrayLike) -> float | np.ndarray:
    r"""``g(rho) = P(h1 > 0, h2 > 0) = 1/2 - arccos(rho) / (2 pi)`` (Burkholz & Dubatovka 2019, Thm. 5).

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
        The probability(ies), in ``[0, 1/2]``.

    Raises
    ------
    ValueError
        ``|rho| > 1`` or non-finite input.
    TypeError
        Bools, complex numbers or strings.

    Examples
    --------
    >>> float(orthant_probability(0.0)), float(orthant_probability(1.0))
    (0.25, 0.5)
    """
    rho = correlation(rho, "rho")
    return 0.5 - np.arccos(rho) / (2 * np.pi)


def relu_correlation(rho: ArrayLike) -> float | np.ndarray:
    r"""Correlation of ``relu(h1), relu(h2)`` for pre-activations with correlation ``rho`` (Thm. 5).

    .. math:: \mathrm{Cor}(x_1, x_2) = \frac{\sqrt{1-\rho^2} - 1 + 2\pi\rho\, g(\rho)}{\pi - 1}.

    It is increasing, maps 1 to 1, 0 to 0 and -1 to ``-1/(pi-1)``; it is ``<= rho`` on ``[0, 1]``
    but ``> rho`` on ``[-1, 0)`` (the paper's "always smaller than rho" holds for ``rho >= 0``).
    It equals ``(K(rho) - 1/(2 pi)) / ((pi - 1)/(2 pi))`` with ``K`` the arc-cosine kernel of
    unit-variance inputs (:func:`meanfield.gaussian.pair_expectation` for ``"relu"``).

    Parameters
    ----------
    rho : float or array_like
        As in :func:`orthant_probability`.

    Returns
    -------
    float or ndarray
        The post-activation correlation(s), in ``[-1/(pi-1), 1]``.

    Raises
    ------
    ValueError, TypeError
        As :func:`orthant_probability`.

    Examples
    --------
    >>> [round(float(c), 6) for c in relu_correlation(np.array([-1.0, 0.0, 0.5, 1.0]))]  # -1 / (pi - 1) at -1
    [-0.466942, 0.0, 0.426422, 1.0]
    """
    rho = correlation(rho, "rho")
    g = orthant_probability(rho)
    return (np.sqrt(np.maximum(1 - rho * rho, 0.0)) - 1 + 2 * np.pi * rho * g) / (np.pi - 1)


def mean_inner_product(width: int, v11: float, v22: float, v12: ArrayLike) -> float | np.ndarray:
    r"""``E(<x1, x2> | previous layer)`` for a ReLU layer (Burkholz & Dubatovka 2019, Thm. 5, eq. 9).

    .. math:: N\sqrt{v_{11}v_{22}}\,\Big(g(\rho)\rho + \frac{\sqrt{1-\rho^2}}{2\pi}\Big)

    equal to ``N`` times the arc-cosine kernel ``E relu(h1) relu(h2)``. The paper's eq. 10,
    ``~ N sqrt(v11 v22) (rho + 1) / 4``, is the straight line through the exact values at
    ``rho = -1`` (0) and ``rho = 1`` (1/2); at ``rho = 0`` it gives 1/4 instead of 1/(2 pi).

    Parameters
    ----------
    width : int
        ``1 <= N <= MAX_WIDTH``.
    v11, v22 : float
        Pre-activation variances (> 0), Prop. 2 (:func:`preactivation_covariance`).
    v12 : float or array_like
        Pre-activation covariance, ``v12^2 <= v11 v22``.

    Returns
    -------
    float or ndarray
        Finite: exactly 0 at ``rho = -1``, a normal float64 number elsewhere.

    Raises
    ------
    ValueError
        Non-positive variances, ``v12^2 > v11 v22``, ``width`` out of range or not an integer (a
        bool, a string or a non-integral float), or a value beyond the float64 range
        (``N sqrt(v11 v22)`` near 1e308 or 1e-308).
    TypeError
        Bools, complex numbers or strings where real numbers are expected; a complex ``width``.

    Examples
    --------
    >>> mean_inner_product(10, 1.0, 1.0, 1.0)       # N E relu(h)^2 = N / 2
    5.0
    """
    n = width_arg(width)
    v11, v22, v12, rho, scale = check_pair(v11, v22, v12)
    g = 0.5 - np.arccos(rho) / (2 * np.pi)
    factor = g * rho + np.sqrt(1 - rho * rho) / (2 * np.pi)  # in [0, 1/2], 0 only at rho = -1
    with np.errstate(over="ignore", under="ignore"):
        out = n * scale * factor
    if np.any(~np.isfinite(out) | ((factor > 0) & (np.abs(out) < TINY))):
        raise ValueError("width * sqrt(v11 v22) puts E<x1, x2> beyond the float64 range; rescale v11, v22, v12")
    return float(out) if np.ndim(out) == 0 else out
