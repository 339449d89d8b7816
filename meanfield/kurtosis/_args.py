"""Argument checks, ranges and the coefficients of A^(l) shared by the kurtosis recursion (Grzejdziak 2023; private)."""

from __future__ import annotations

import math

import numpy as np

from .._checks import check_int, check_scalar

#: Kurtosis of the named weight laws (``E w^4 / (E w^2)^2``).
_NAMED_KURTOSIS = {"gaussian": 3.0, "normal": 3.0, "uniform": 1.8, "rademacher": 1.0, "bernoulli": 1.0, "laplace": 6.0}

#: Largest width accepted: widths enter the coefficients as floats, exact up to 2^53.
MAX_WIDTH = 2**53
#: Allowed ``sigma_x2``: ``A^(l)`` holds ``sigma_x^4`` and ``1 / sigma_x^4``, both normal floats (with
#: room for the ``1 / w`` factors) only in this range. Nothing but the unit of ``c`` depends on
#: ``sigma_x2`` (the recursion is run on ``c / sigma_x^4``), so rescale the signal to get into it.
SIGMA_X2_RANGE = (1e-100, 1e100)
#: Largest weight kurtosis accepted: keeps every entry of ``A^(l)`` (and products of two of them with
#: the rescaled state of :func:`propagate`) inside the float64 range.
MAX_WEIGHT_KURTOSIS = 1e100
#: The scaled recursions renormalise their state once it exceeds this (products stay < 1e250).
_RESCALE = 1e100
#: ``log`` of the largest float64.
_LOG_MAX = math.log(np.finfo(np.float64).max)


# --------------------------------------------------------------------------------------------
# argument checks
# --------------------------------------------------------------------------------------------


def _int(n, name, minimum, maximum=None) -> int:
    """An integer in range; complex input is a ``TypeError`` (never a dropped imaginary part)."""
    if isinstance(n, (complex, np.complexfloating)):
        raise TypeError(f"{name} must be an integer, got the complex {n!r}")
    return check_int(n, name, minimum, maximum)


def _check_slope(slope) -> float:
    return check_scalar(slope, "slope")


def _slope_ratio(slope: float) -> float:
    """``r = 2 (a^4 + 1) / (a^2 + 1)^2`` in [1, 2], without overflow for any finite ``a``."""
    a = abs(slope)
    if a > 1.0:
        u2 = (1.0 / a) ** 2  # r(a) = r(1 / a)
        return 2.0 * (u2 * u2 + 1.0) / (u2 + 1.0) ** 2
    a2 = a * a
    return 2.0 * (a2 * a2 + 1.0) / (a2 + 1.0) ** 2


def _check_kw(weight_kurtosis) -> float:
    kw = check_scalar(weight_kurtosis, "weight_kurtosis")
    if not 1.0 <= kw <= MAX_WEIGHT_KURTOSIS:
        raise ValueError(
            f"weight_kurtosis must lie in [1, {MAX_WEIGHT_KURTOSIS:g}] (every law has kurtosis >= 1; the upper "
            f"bound keeps A^(l) in float64), got {kw!r}"
        )
    return kw


def _check_sigma_x2(sigma_x2) -> float:
    s = check_scalar(sigma_x2, "sigma_x2")
    lo, hi = SIGMA_X2_RANGE
    if not lo <= s <= hi:
        raise ValueError(
            f"sigma_x2 must lie in [{lo:g}, {hi:g}] (sigma_x^4 and 1 / sigma_x^4 must be normal float64 numbers; "
            f"kappa does not depend on the scale: rescale the signal), got {s!r}"
        )
    return s


def _check_widths(widths, name="widths", minimum=1) -> np.ndarray:
    """A non-empty 1-d sequence of integers in ``[minimum, MAX_WIDTH]`` (bools, complex, strings rejected)."""
    if widths is None or isinstance(widths, (str, bytes, bool, np.bool_)):
        raise TypeError(f"{name} must be a sequence of integers, got {widths!r}")
    if isinstance(widths, (list, tuple)) and any(
        isinstance(w, (bool, np.bool_, complex, np.complexfloating)) for w in widths
    ):
        raise TypeError(f"{name} must hold integers, not bools or complex numbers, got {widths!r}")
    try:
        arr = np.atleast_1d(np.asarray(widths))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a flat sequence of integers") from exc
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-d sequence of integers >= {minimum}, got shape {arr.shape}")
    kind = arr.dtype.kind
    if kind == "b" or kind == "c" or kind not in "iufO":
        raise TypeError(f"{name} must hold integers, got dtype {arr.dtype}")
    if kind == "O":
        return np.array([_int(w, name, minimum, MAX_WIDTH) for w in arr.tolist()], dtype=np.int64)
    if kind == "f" and not (np.all(np.isfinite(arr)) and np.all(arr == np.round(arr))):
        raise ValueError(f"{name} must hold integers, got {widths!r}")
    if arr.min() < minimum or arr.max() > MAX_WIDTH:
        raise ValueError(f"{name} must lie in [{minimum}, 2**53], got values in [{arr.min()}, {arr.max()}]")
    return arr.astype(np.int64)


def _coefficients(width: int, r: float, kw: float):
    """(alpha, beta, gamma, delta) of a single A^(l) (Lemma 4.4 form of Prop. 4.3), ``r`` from :func:`_slope_ratio`."""
    w = float(width)
    g = r / w
    return kw * g, 3.0 * (w - 1.0) / w, g, (w - 1.0) / w
