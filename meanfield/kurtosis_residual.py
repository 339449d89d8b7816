r"""Kurtosis recursion for residual networks (Grzejdziak 2023, Sec. 6 conjecture.

Grzejdziak 2023 (Discussion) conjectures that "addition of skip connections cannot stop the growth of
kurtosis, because kurtosis explodes even for the networks with no activation function". This
module gives the moment recursion of the residual layer

.. math:: y^{(l+1)} = y^{(l)} + W^{(l+1)} \phi_a(y^{(l)}), \qquad
    \mathrm{Var}\,W_{ij} = \frac{2}{w (a^2 + 1)},\ \mathrm{Kurt}\,W_{ij} = \kappa_w,

(constant width ``w``), on the raw moments ``s2 = E y_i^2``, ``m4 = E y_i^4``,
``m22 = E y_i^2 y_j^2`` (i != j), and the plain layer ``y' = W phi_a(y)`` on the same state, whose
kurtosis ``m4 / s2^2`` reproduces Prop. 4.3 (a check of the derivation).

Derivation. With ``u_i = sum_k W_ik phi_k``, rows of ``W`` independent and symmetric, ``v = Var W``:

* ``E u_i^2 = v w (1 + a^2) / 2 s2``; ``E u_i^4 = kappa_w v^2 w E phi^4 + 3 v^2 w (w - 1) E phi_k^2 phi_l^2``;
  ``E u_i^2 u_j^2 = v^2 [w E phi^4 + w (w - 1) E phi_k^2 phi_l^2]``;
* residual: ``m4' = m4 + 6 E y_i^2 u_i^2 + E u_i^4`` and
  ``m22' = m22 + 2 E y_i^2 u_j^2 + E u_i^2 u_j^2`` (terms odd in a row of ``W`` vanish, and
  ``E[y_i u_i y_j u_j] = 0``), with ``E y_i^2 u_j^2 = v [E y_i^2 phi_i^2 + (w - 1) E y_i^2 phi_k^2]``.

Closing the recursion needs ``E phi_a(y)^4 = (1 + a^4) / 2 m4``,
``E phi_a(y_k)^2 phi_a(y_l)^2 = ((1 + a^2) / 2)^2 m22`` and ``E y_i^2 phi_a(y_k)^2 = (1 + a^2) / 2 E y_i^2 y_k^2``:
the invariance of the law under flipping the sign of one coordinate (Grzejdziak's Lemma 4.2). It holds
for plain layers (each row of ``W`` is symmetric) but **not** for residual ones once ``a != 1``:
``y_i + u_i`` does not change sign with row ``i`` of ``W``. The residual recursion is therefore
exact for ``a = 1`` (linear, the case the conjecture invokes; every ``phi`` moment is a ``y``
moment) and a closure otherwise; ``validation.kurtosis`` measures both against simulations.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._checks import check_int, check_scalar
from ._results import Result

__all__ = ["ResidualMoments", "residual_moments"]


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
    r"""Moments of residual (or plain) leaky-ReLU layers with He weights, by the module's recursion.

    Parameters
    ----------
    width : int
        ``2 <= w <= 10^9`` (constant width = fan-in).
    depth : int
        ``0 <= depth <= 10^5``.
    slope : float
        Negative slope ``a`` (finite); ``a = 1`` is linear (the residual recursion is then exact).
    weight_kurtosis : float
        ``kappa_w`` in ``[1, 1e6]`` (Gaussian 3).
    s2, m4, m22 : float
        Input moments (``s2 > 0``, ``m4 >= s2^2``, ``|m22| <= m4``, finite), of an input whose law is
        invariant under flipping the sign of one coordinate (e.g. iid Gaussian: 1, 3, 1).
    residual : bool
        True: ``y + W phi(y)``; False: ``W phi(y)`` (Prop. 4.3).

    Returns
    -------
    ResidualMoments

    Raises
    ------
    ValueError
        Arguments out of range, or moments leaving float64 (the residual variance doubles per
        layer: ``depth`` up to ~1000).
    TypeError
        Bools, complex numbers, strings.

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
    kw = check_scalar(weight_kurtosis, "weight_kurtosis")
    if not 1.0 <= kw <= 1e6:
        raise ValueError(f"weight_kurtosis must be in [1, 1e6], got {kw!r}")
    s2 = check_scalar(s2, "s2")
    m4 = check_scalar(m4, "m4")
    m22 = check_scalar(m22, "m22")
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
    return ResidualMoments(s2=out[0], m4=out[1], m22=out[2], kappa=out[1] / out[0] ** 2)
