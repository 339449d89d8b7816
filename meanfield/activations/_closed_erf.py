r"""Gaussian moments of the scaled and shifted erf through the bivariate normal CDF (documented in :mod:`meanfield.closed_forms`)."""

from __future__ import annotations

import math

import numpy as np
from scipy.special import erf, ndtr, owens_t

from .._checks import check_pair, check_scalar

__all__ = ["QUAD_RTOL", "erf_pair_expectation"]

#: Relative agreement required between every closed form and scipy's adaptive quadrature
#: (``scipy.integrate.quad``/``dblquad`` at epsrel 1e-12): the quadrature's own error estimate is
#: below 1e-11 at the tested points, the closed forms are exact up to rounding (~1e-15).
QUAD_RTOL = 1e-9

# ----------------------------------------------------------------------------------------------
# erf(a x + b): a two-parameter family, as a NumPy function.


def _phi2(h, k, rho):
    """Bivariate standard normal CDF P(X <= h, Y <= k), corr rho, via Owen's T (h, k both 0 or of one sign)."""
    h, k, rho = np.broadcast_arrays(np.asarray(h, float), np.asarray(k, float), np.asarray(rho, float))
    out = np.empty(h.shape)
    zero = (h == 0.0) & (k == 0.0)
    out[zero] = 0.25 + np.arcsin(rho[zero]) / (2.0 * np.pi)
    one = ~zero & (rho >= 1.0)
    out[one] = ndtr(np.minimum(h[one], k[one]))
    mone = ~zero & (rho <= -1.0)
    out[mone] = np.maximum(0.0, ndtr(h[mone]) + ndtr(k[mone]) - 1.0)
    gen = ~(zero | one | mone)
    hg, kg, rg = h[gen], k[gen], rho[gen]
    sq = np.sqrt((1.0 - rg) * (1.0 + rg))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = owens_t(hg, (kg - rg * hg) / (hg * sq)) + owens_t(kg, (hg - rg * kg) / (kg * sq))
    beta = np.where(hg * kg > 0.0, 0.0, 0.5)
    out[gen] = 0.5 * (ndtr(hg) + ndtr(kg)) - t - beta
    return out


def erf_pair_expectation(q1, q2, c, scale=1.0, shift=0.0, derivatives=(0, 0)):
    r"""Closed-form :math:`\mathbb{E}\,\phi^{(d_1)}(u_1)\phi^{(d_2)}(u_2)` of :math:`\phi(x) = \mathrm{erf}(a x + b)`.

    Parameters
    ----------
    q1, q2 : float or array_like
        Variances (>= 0, finite); broadcast with ``c``.
    c : float or array_like
        Correlations in [-1, 1].
    scale, shift : float
        ``a`` (any finite real) and ``b`` (finite) of :math:`\mathrm{erf}(a x + b)`.
    derivatives : (int, int)
        Orders (d1, d2) in {0, 1}.

    Returns
    -------
    float or ndarray of the broadcast shape.

    Raises
    ------
    ValueError
        Negative or non-finite variances, ``|c| > 1``, non-finite ``scale``/``shift``, orders
        outside {0, 1}, shapes that do not broadcast.
    TypeError
        Complex or boolean arguments.

    Notes
    -----
    With :math:`\mathrm{erf}(y) = 2\Phi(\sqrt2 y) - 1` and :math:`\mathbb{E}\,\Phi(\sqrt2(a u + b)) =
    \Phi(m)`, :math:`m_i = \sqrt2 b / \sqrt{1 + 2a^2 q_i}`:
    :math:`E_{00} = 4\Phi_2(m_1, m_2; \rho) - 2\Phi(m_1) - 2\Phi(m_2) + 1`,
    :math:`\rho = 2a^2 k / \sqrt{(1 + 2a^2 q_1)(1 + 2a^2 q_2)}` (:math:`\Phi_2` through Owen's T;
    b = 0 gives Williams' arcsine kernel :math:`\tfrac2\pi\arcsin\rho`).
    :math:`E_{11} = \tfrac{4a^2}{\pi}\det M^{-1/2}\exp(-b^2\,\mathbf 1^\top M^{-1}\mathbf 1)`,
    :math:`M = I + 2a^2\Sigma` (a Gaussian integral).
    :math:`E_{01}`: the factor :math:`e^{-(a u_2 + b)^2}` tilts :math:`u_2` to
    :math:`N(-2abq_2/(1 + 2a^2q_2),\ q_2/(1 + 2a^2q_2))`, then
    :math:`\mathbb{E}\,\mathrm{erf}(a u_1 + b) = \mathrm{erf}((a\mu_1 + b)/\sqrt{1 + 2a^2 v_1})` under
    the tilted law of :math:`u_1`.

    Examples
    --------
    >>> import numpy as np
    >>> v = erf_pair_expectation(1.0, 1.0, 0.5)            # the arcsine kernel at b = 0
    >>> bool(np.isclose(v, 2 / np.pi * np.arcsin(2 * 0.5 / 3)))
    True
    """
    f1, f2, fc = check_pair(q1, q2, c)
    a = check_scalar(scale, "scale")
    b = check_scalar(shift, "shift")
    if isinstance(derivatives, (str, bytes)) or not hasattr(derivatives, "__len__") or len(derivatives) != 2:
        raise TypeError(f"derivatives must be a pair (d1, d2) of orders in {{0, 1}}, got {derivatives!r}")
    for d in derivatives:
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)):
            raise TypeError(f"derivatives must be integer orders in {{0, 1}}, got {d!r}")
        if d not in (0, 1):
            raise ValueError(f"derivatives must be orders in {{0, 1}}, got {d!r}")
    d1, d2 = (int(d) for d in derivatives)
    shape = f1.shape
    if d1 > d2:
        f1, f2, d1, d2 = f2, f1, d2, d1
    a2 = a * a
    with np.errstate(over="ignore", invalid="ignore"):
        k = fc * np.sqrt(f1) * np.sqrt(f2)
        p1 = 1.0 + 2.0 * a2 * f1
        p2 = 1.0 + 2.0 * a2 * f2
        if d1 == 0 and d2 == 0:
            m1 = math.sqrt(2.0) * b / np.sqrt(p1)
            m2 = math.sqrt(2.0) * b / np.sqrt(p2)
            rho = np.clip(2.0 * a2 * k / (np.sqrt(p1) * np.sqrt(p2)), -1.0, 1.0)
            out = 4.0 * _phi2(m1, m2, rho) - 2.0 * ndtr(m1) - 2.0 * ndtr(m2) + 1.0
        elif d1 == 1 and d2 == 1:
            det = p1 * p2 - 4.0 * a2 * a2 * k * k
            quad = (p1 + p2 - 4.0 * a2 * k) / det
            out = 4.0 * a2 / math.pi / np.sqrt(det) * np.exp(-b * b * quad)
        else:  # d1 = 0, d2 = 1
            mu2 = -2.0 * a * b * f2 / p2
            ratio = np.divide(k, f2, out=np.zeros_like(k), where=f2 > 0)
            mu1 = ratio * mu2
            v1 = np.maximum(0.0, f1 - 2.0 * a2 * k * k / p2)
            out = (
                2.0
                * a
                / math.sqrt(math.pi)
                / np.sqrt(p2)
                * np.exp(-b * b / p2)
                * erf((a * mu1 + b) / np.sqrt(1.0 + 2.0 * a2 * v1))
            )
    if not np.all(np.isfinite(out)):
        raise ValueError("erf_pair_expectation: the result exceeds the float64 range at these arguments")
    return out.reshape(shape) if shape else float(out)
