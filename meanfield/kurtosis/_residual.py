r"""The moment recursion of residual leaky-ReLU layers (Grzejdziak 2023, Discussion; private).

The derivation is in the notes of :mod:`meanfield.kurtosis`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._checks import check_int, check_scalar
from .._results import Result

#: Largest ``|slope|``: ``a^4`` (in ``E phi_a(y)^4``) stays a finite float.
MAX_SLOPE = 1e50
#: Allowed ``s2``: the kurtosis ``m4 / s2^2`` needs ``s2^2`` to be a normal float.
S2_RANGE = (1e-150, 1e150)


@dataclass(frozen=True)
class ResidualMoments(Result):
    """Raw moments per layer (index 0 = input).

    Attributes
    ----------
    s2, m4, m22 : ndarray, shape (depth + 1,)
        ``E y_i^2``, ``E y_i^4``, ``E y_i^2 y_j^2`` (i != j).
    kappa : ndarray, shape (depth + 1,)
        ``m4 / s2^2``, the kurtosis of one coordinate.
    """

    s2: np.ndarray
    m4: np.ndarray
    m22: np.ndarray
    kappa: np.ndarray


def residual_moments(
    width: int,
    depth: int,
    slope: float = 0.0,
    weight_kurtosis: float = 3.0,
    s2: float = 1.0,
    m4: float = 3.0,
    m22: float = 1.0,
    *,
    residual: bool = True,
) -> ResidualMoments:
    r"""Moments of residual (or plain) leaky-ReLU layers with He weights (Grzejdziak 2023, Discussion).

    The recursion and its derivation are in the notes of :mod:`meanfield.kurtosis`.

    Parameters
    ----------
    width : int
        ``2 <= w <= 10^9`` (constant width = fan-in).
    depth : int
        ``0 <= depth <= 10^5``.
    slope : float
        Negative slope ``a``, ``|a| <= 1e50`` (``a^4`` stays a float); ``a = 1`` is linear (the
        residual recursion is then exact).
    weight_kurtosis : float
        ``kappa_w`` in ``[1, 1e6]`` (Gaussian 3).
    s2, m4, m22 : float
        Input moments (``1e-150 <= s2 <= 1e150``, so that ``s2^2`` is a normal float; ``m4 >= s2^2``,
        ``|m22| <= m4``, finite), of an input whose law is
        invariant under flipping the sign of one coordinate (e.g. iid Gaussian: 1, 3, 1).
    residual : bool
        True: ``y + W phi(y)``; False: ``W phi(y)`` (Prop. 4.3).

    Returns
    -------
    ResidualMoments

    Raises
    ------
    ValueError
        Arguments out of range; ``width`` or ``depth`` not an integer (a bool, a string or a
        non-integral float); or moments leaving float64. The residual variance doubles per layer,
        so ``m4 >= s2^2`` grows at least as ``4^depth``: with unit input moments the moments
        leave float64 before depth 512 (measured: from depth 332 at width 2 to 500 at width 100
        with the defaults, 72 at width 100 with ``weight_kurtosis = 1e6``).
    TypeError
        Bools, complex numbers or strings where real numbers are expected; a complex ``width``
        or ``depth``; ``residual`` not a bool.

    Notes
    -----
    Grzejdziak 2023, Sec. 6 (residual conjecture) and Prop. 4.3 (plain case); the derivation and the
    closure it needs are in the module docstring.

    Examples
    --------
    >>> r = residual_moments(4, 3, slope=1.0)
    >>> r.s2.tolist()          # a linear He residual layer doubles the variance
    [1.0, 2.0, 4.0, 8.0]
    """
    w = check_int(width, "width", 2, 10**9)
    depth = check_int(depth, "depth", 0, 10**5)
    a = check_scalar(slope, "slope")
    if not abs(a) <= MAX_SLOPE:
        raise ValueError(f"slope must lie in [-1e50, 1e50], got {a!r}")
    kw = check_scalar(weight_kurtosis, "weight_kurtosis")
    if not 1.0 <= kw <= 1e6:
        raise ValueError(f"weight_kurtosis must be in [1, 1e6], got {kw!r}")
    s2 = check_scalar(s2, "s2")
    m4 = check_scalar(m4, "m4")
    m22 = check_scalar(m22, "m22")
    if not S2_RANGE[0] <= s2 <= S2_RANGE[1]:
        raise ValueError(f"s2 must lie in [1e-150, 1e150] (s2^2 a normal float), got {s2!r}")
    if not s2 > 0 or m4 < s2 * s2 * (1 - 1e-12) or abs(m22) > m4:
        raise ValueError(f"input moments must satisfy s2 > 0, m4 >= s2^2, |m22| <= m4; got {s2}, {m4}, {m22}")
    if not isinstance(residual, bool):
        raise TypeError(f"residual must be a bool, got {residual!r}")
    h2 = 0.5 * (1.0 + a * a)  # E phi^2 / E y^2 (and E y_i^2 phi_k^2 / E y_i^2 y_k^2)
    h4 = 0.5 * (1.0 + a**4)  # E phi^4 / E y^4
    v = 2.0 / (w * (1.0 + a * a))
    out = np.empty((3, depth + 1))
    out[:, 0] = s2, m4, m22
    for l in range(depth):
        s, q4, q22 = out[:, l]
        ephi4 = h4 * q4
        ephi22 = h2 * h2 * q22
        eu2 = v * w * h2 * s
        eu4 = kw * v * v * w * ephi4 + 3.0 * v * v * w * (w - 1) * ephi22
        eu22 = v * v * (w * ephi4 + w * (w - 1) * ephi22)
        if residual:
            ey2u2 = v * (h2 * q4 + (w - 1) * h2 * q22)
            new = (s + eu2, q4 + 6.0 * ey2u2 + eu4, q22 + 2.0 * ey2u2 + eu22)
        else:
            new = (eu2, eu4, eu22)
        if not all(math.isfinite(x) for x in new):
            raise ValueError(f"moments leave float64 at layer {l + 1}: use a smaller depth")
        out[:, l + 1] = new
    with np.errstate(over="ignore"):  # an overflow is refused just below
        kappa = out[1] / out[0] ** 2
    if not np.all(np.isfinite(kappa)):
        raise ValueError(f"the kurtosis m4 / s2^2 leaves float64 (m4 = {m4!r} is too large for s2 = {s2!r})")
    return ResidualMoments(s2=out[0], m4=out[1], m22=out[2], kappa=kappa)
