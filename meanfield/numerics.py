"""Numerical helpers shared across the library and its validation and figures (public).

:func:`richardson` is the one Richardson extrapolation of the project: the finite-width
eigenvalue rows (grid step), figures that extrapolate in a grid, and Monte-Carlo numbers
extrapolated in the width (``2 m_2N - m_N``) all use it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ._checks import as_float_array, check_scalar, is_complex
from ._results import Result

__all__ = ["RichardsonEstimate", "richardson"]


@dataclass(frozen=True)
class RichardsonEstimate(Result):
    """A Richardson extrapolate and its uncertainties (see :func:`richardson`).

    Attributes
    ----------
    value : float or ndarray
        ``(r^p fine - coarse) / (r^p - 1)``: the extrapolated limit (step -> 0).
    error : float or ndarray
        ``|fine - coarse| / (r^p - 1)``: the estimated discretisation error of ``fine``. When the
        leading term ``C h^p`` dominates, it bounds the error of ``value`` (which is
        ``O(h^{p+1})`` or better) -- the usual deterministic tolerance.
    stderr : float or ndarray
        Standard error of ``value`` when ``fine`` and ``coarse`` are independent Monte-Carlo
        estimates: ``sqrt(r^{2p} se_fine^2 + se_coarse^2) / (r^p - 1)``; 0 for exact inputs.
    """

    value: float | np.ndarray
    error: float | np.ndarray
    stderr: float | np.ndarray


def richardson(
    coarse: ArrayLike,
    fine: ArrayLike,
    *,
    order: float,
    ratio: float = 2.0,
    coarse_stderr: ArrayLike = 0.0,
    fine_stderr: ArrayLike = 0.0,
) -> RichardsonEstimate:
    r"""Richardson extrapolation of two estimates with error ``C h^p`` at steps ``h`` and ``h / r``.

    .. math::
        A \approx \frac{r^p A(h/r) - A(h)}{r^p - 1}, \qquad
        |A(h/r) - A| \approx \frac{|A(h/r) - A(h)|}{r^p - 1}.

    Examples: a grid refined by 2 with an O(h^2) error (``order=2``: ``(4 fine - coarse) / 3``);
    Monte-Carlo means at widths N and 2N with an O(1/N) bias (``order=1``: ``2 m_2N - m_N``, standard
    error ``sqrt(4 se_2N^2 + se_N^2)``).

    Parameters
    ----------
    coarse, fine : float or array_like
        The estimates at step ``h`` and ``h / ratio`` (finite; broadcast together).
    order : float
        ``p > 0``, the order of the leading error term.
    ratio : float
        ``r > 1``, the refinement factor of the step.
    coarse_stderr, fine_stderr : float or array_like
        Standard errors (``>= 0``) of independent Monte-Carlo estimates; 0 for deterministic ones.

    Returns
    -------
    RichardsonEstimate
        ``value``, ``error`` (estimated error of ``fine``) and ``stderr``: floats for scalar input,
        arrays otherwise.

    Raises
    ------
    ValueError
        Non-finite input, ``order <= 0``, ``ratio <= 1``, negative standard errors, shapes that do
        not broadcast, or ``ratio ** order`` so close to 1 (or so large) that the result leaves float64.
    TypeError
        Bools, complex numbers or strings where numbers are expected.

    Examples
    --------
    >>> est = richardson(1.25, 1.0625, order=2)     # A(h) = 1 + h^2 at h = 1/2 and 1/4
    >>> est.value, est.error
    (1.0, 0.0625)
    >>> richardson(0.9, 0.95, order=1, coarse_stderr=0.01, fine_stderr=0.01).stderr  # doctest: +ELLIPSIS
    0.0223606...
    """
    p = check_scalar(order, "order")
    if p <= 0:
        raise ValueError(f"order must be > 0 (the order of the leading error term), got {p!r}")
    r = check_scalar(ratio, "ratio")
    if r <= 1:
        raise ValueError(f"ratio must be > 1 (the refinement factor of the step), got {r!r}")
    try:
        rp = r**p
    except OverflowError:
        rp = math.inf
    denom = rp - 1.0
    if not (math.isfinite(rp) and denom > 0 and math.isfinite(rp / denom)):
        raise ValueError(
            f"ratio ** order = {rp!r} must be finite and > 1 by a representable margin; choose smaller or larger steps"
        )
    arrays = []
    for x, name in ((coarse, "coarse"), (fine, "fine"), (coarse_stderr, "coarse_stderr"), (fine_stderr, "fine_stderr")):
        if isinstance(x, (bool, np.bool_, str, bytes)) or is_complex(x):
            raise TypeError(f"{name} must be a real number or array of real numbers, got {type(x).__name__}")
        arrays.append(as_float_array(x, name))
    c, f, sc, sf = arrays
    if np.any(sc < 0) or np.any(sf < 0):
        raise ValueError("coarse_stderr and fine_stderr must be >= 0 (standard errors)")
    try:
        c, f, sc, sf = np.broadcast_arrays(c, f, sc, sf)
    except ValueError as exc:
        raise ValueError(
            f"coarse, fine and the standard errors must broadcast together, got shapes {c.shape} and {f.shape}"
        ) from exc
    with np.errstate(over="ignore", invalid="ignore"):
        value = (rp * f - c) / denom  # (4 fine - coarse) / 3, 2 fine - coarse, ... exactly as written by hand
        error = np.abs(f - c) / denom
        stderr = np.hypot(rp * sf, sc) / denom
    if not (np.all(np.isfinite(value)) and np.all(np.isfinite(error)) and np.all(np.isfinite(stderr))):
        raise ValueError(
            "the extrapolate overflows float64 (coarse and fine differ by more than the float range allows)"
        )

    def out(a: np.ndarray) -> float | np.ndarray:
        return float(a) if a.ndim == 0 else a

    return RichardsonEstimate(out(value), out(error), out(stderr))
