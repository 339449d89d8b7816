r"""Gaussian moments in closed form of the core built-ins: linear, relu, leaky_relu, erf, hard_tanh.

``relu`` and ``leaky_relu`` through the arc-cosine kernel of Cho & Saul (2009); ``erf`` through
the arcsine kernel of Williams (1997); ``hard_tanh`` (derivative orders <= 1) as moments of a
clipped Gaussian: single-variable moments in terms of erf, and the bivariate ones through the
rectangle probability ``P(|u1| < 1, |u2| < 1)`` (Plackett's identity at the four corners) and its
integral over c (Price's theorem), both smooth one-dimensional integrals over theta = arcsin(t)
(:func:`_hard_tanh_pair`). Each function returns NaN when no closed form exists for
``(code, d1, d2)``; the kernels of :mod:`meanfield.gaussian` then fall back to quadrature.

References
----------
Cho & Saul (2009), "Kernel methods for deep learning". Williams (1997), "Computing with infinite
networks".
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ._registry import ERF, HARD_TANH, LEAKY_RELU, LINEAR, RELU

_INV_2PI = 1.0 / (2.0 * math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


@numba.njit(cache=True)
def _acos_terms(c):
    c = min(1.0, max(-1.0, c))
    theta = math.acos(c)
    return theta, math.sqrt(max(0.0, 1.0 - c * c))


_GL16_X, _GL16_W = np.polynomial.legendre.leggauss(16)


_SQRT_HALF = math.sqrt(0.5)


#: Smallest distance to theta = pi/2 resolved by the graded panels of the hard_tanh theta integral
#: (the rest of the interval contributes less than this, the integrand being bounded by 1).
_THETA_MIN_GAP = 1e-17


@numba.njit(cache=True)
def _clipped_second_moment(a):
    """E[z^2 1{|z| < a}] for z ~ N(0, 1), without the cancellation of erf(a/sqrt2) - 2 a pdf(a) at small a."""
    if a <= 0.0:
        return 0.0
    if a > 40.0:
        return 1.0
    if a < 1.0:  # alternating series of int_{-a}^{a} z^2 pdf(z) dz, terms < 1e-20 after 25
        term = a * a * a
        acc = 0.0
        for k in range(30):
            acc += term / (2 * k + 3)
            term *= -0.5 * a * a / (k + 1)
        return 2.0 * _INV_SQRT_2PI * acc
    return math.erf(a * _SQRT_HALF) - 2.0 * a * _INV_SQRT_2PI * math.exp(-0.5 * a * a)


@numba.njit(cache=True)
def _rectangle_theta_integral(a1, a2, absc, weighted):
    r"""(1/pi) int_0^{asin|c|} w(theta) D(theta) d theta for the bivariate-normal rectangle probability.

    With :math:`t = \sin\theta`, :math:`2[\varphi_2(a_1, a_2; t) - \varphi_2(a_1, a_2; -t)]\,dt =
    D(\theta)\,d\theta/\pi`, :math:`D = e^{-(a_1 - a_2)^2 / (2\cos^2\theta) - a_1 a_2 / (1 + \sin\theta)}
    (1 - e^{-2 a_1 a_2 \sin\theta / \cos^2\theta})`, a smooth integrand (no 1/sqrt(1 - t^2)
    singularity, no cancellation). ``w = |c| - sin(theta)`` when ``weighted`` else 1. Gauss-Legendre
    (16 nodes) on panels graded geometrically towards theta = pi/2, where D varies on the scale
    |a1 - a2| and min(a1, a2)^2.
    """
    big_t = math.asin(min(1.0, absc))
    if big_t <= 0.0 or a1 * a2 > 1500.0:  # D <= exp(-a1 a2 / 2) < 1e-325
        return 0.0
    half_pi = 0.5 * math.pi
    acc = 0.0
    lo = 0.0
    gap = half_pi
    for _ in range(80):
        gap *= 0.5
        hi = half_pi - gap
        if hi >= big_t or gap < _THETA_MIN_GAP:
            hi = big_t
        mid = 0.5 * (hi + lo)
        half = 0.5 * (hi - lo)
        panel = 0.0
        for i in range(16):
            th = mid + half * _GL16_X[i]
            s = math.sin(th)
            cs = math.cos(th)
            c2 = cs * cs
            if c2 <= 0.0:
                continue
            d = a1 - a2
            big = math.exp(-d * d / (2.0 * c2) - a1 * a2 / (1.0 + s))
            val = big * -math.expm1(-2.0 * a1 * a2 * s / c2)
            if weighted:
                val *= absc - s
            panel += _GL16_W[i] * val
        acc += half * panel
        lo = hi
        if hi >= big_t:
            break
    return acc / math.pi


@numba.njit(cache=True)
def _hard_tanh_pair(d1, d2, s1, s2, c):
    r"""E phi^(d1)(u1) phi^(d2)(u2) of phi = clip(u, -1, 1), d1, d2 in {0, 1}, in closed form.

    phi'phi' is the rectangle probability ``P(|u1| < 1, |u2| < 1)``
    :math:`= P_0 + \int_0^c \partial_t P\,dt` with :math:`P_0 = \mathrm{erf}(a_1/\sqrt2)\,\mathrm{erf}(a_2/\sqrt2)`,
    :math:`a_i = 1/\sqrt{q_i}`, and :math:`\partial_t P = 2[\varphi_2(a_1, a_2; t) - \varphi_2(a_1, a_2; -t)]`
    (Plackett's identity at the four corners). Price's theorem,
    :math:`\partial_c E\phi(u_1)\phi(u_2) = \sqrt{q_1 q_2}\,E\phi'(u_1)\phi'(u_2)`, with
    :math:`E\phi(u_1)\phi(u_2) = 0` at c = 0 (phi odd), gives
    :math:`E\phi\phi = \sqrt{q_1 q_2}\,[c P_0 + \int_0^c (c - t)\,\partial_t P\,dt]`.
    """
    if d1 + d2 == 1:
        return 0.0  # odd integrand
    if s1 == 0.0 or s2 == 0.0:
        if d1 == 0:
            return 0.0  # phi(0) = 0
        s = max(s1, s2)
        return 1.0 if s == 0.0 else math.erf(_SQRT_HALF / s)  # phi'(0) = 1
    a1 = 1.0 / s1
    a2 = 1.0 / s2
    p0 = math.erf(a1 * _SQRT_HALF) * math.erf(a2 * _SQRT_HALF)
    absc = abs(c)
    if d1 == 1:
        return min(1.0, p0 + _rectangle_theta_integral(a1, a2, absc, d1 != 1))
    sign = 1.0 if c >= 0.0 else -1.0
    return s1 * s2 * (c * p0 + sign * _rectangle_theta_integral(a1, a2, absc, d1 == 0))


@numba.njit(cache=True)
def _core_closed_pair(code, a, d1, d2, q1, q2, c):
    """:func:`_closed_pair` of the core closed-form built-ins (linear, relu, leaky_relu, erf, hard_tanh)."""
    if d1 > d2:  # symmetric in the two slots after swapping (q1, d1) <-> (q2, d2)
        d1, d2 = d2, d1
        q1, q2 = q2, q1
    s12 = math.sqrt(q1) * math.sqrt(q2)  # not sqrt(q1 * q2): the product overflows for q ~ 1e155
    if code == LINEAR:
        if d1 == 0 and d2 == 0:
            return c * s12
        if d1 == 1 and d2 == 1:
            return 1.0
        return 0.0  # E[u] = 0, phi'' = 0
    if code == RELU or code == LEAKY_RELU:
        if code == RELU:
            a = 0.0
        if d2 == 2:
            return math.nan
        theta, sine = _acos_terms(c)
        if d1 == 0 and d2 == 0:  # (1 - a)^2 K(c) + a c sqrt(q1 q2), K the arc-cosine kernel
            k = s12 * _INV_2PI * (sine + (math.pi - theta) * c)
            return (1.0 - a) ** 2 * k + a * c * s12
        if d1 == 1 and d2 == 1:  # P(same sign) weighting
            return ((1.0 + a * a) * (math.pi - theta) + 2.0 * a * theta) * _INV_2PI
        # d1 = 0, d2 = 1: E[phi(u1) phi'(u2)] = sqrt(q1) (1 - a^2) (1 + c) / (2 sqrt(2 pi))
        return math.sqrt(q1) * (1.0 - a * a) * (1.0 + c) * 0.5 * _INV_SQRT_2PI
    if code == ERF:
        if d1 == 0 and d2 == 0:
            r = 2.0 * c * math.sqrt(q1 / (1.0 + 2.0 * q1)) * math.sqrt(q2 / (1.0 + 2.0 * q2))
            return (2.0 / math.pi) * math.asin(min(1.0, max(-1.0, r)))
        if d1 == 1 and d2 == 1:
            # (1 + 2 q1)(1 + 2 q2) - 4 c^2 q1 q2, expanded: no cancellation near c = 1, no inf - inf
            one_m_c2 = max(0.0, 1.0 - c * c)
            cross = 4.0 * s12 * s12 * one_m_c2 if one_m_c2 > 0.0 else 0.0
            det = 1.0 + 2.0 * q1 + 2.0 * q2 + cross
            return (4.0 / math.pi) / math.sqrt(det)
        if d1 == 0 and d2 == 1:
            return 0.0  # odd integrand
        return math.nan
    if code == HARD_TANH and d2 <= 1:  # clip(u, -b, b) = b clip(u / b, -1, 1), b = a
        k = a ** (2 - d1 - d2)
        return k * _hard_tanh_pair(d1, d2, math.sqrt(q1) / a, math.sqrt(q2) / a, min(1.0, max(-1.0, c)))
    return math.nan


@numba.njit(cache=True)
def _core_closed_single(code, a, d1, d2, q):
    """:func:`_closed_single` of the core closed-form built-ins."""
    if code == ERF:
        if d1 + d2 == 0:
            return (2.0 / math.pi) * math.asin(2.0 * q / (1.0 + 2.0 * q))
        if d1 == 1 and d2 == 1:
            return (4.0 / math.pi) / math.sqrt(1.0 + 4.0 * q)
        if d1 + d2 == 1:
            return 0.0
        return math.nan
    if code == HARD_TANH and d1 <= 1 and d2 <= 1:  # clip(u, -b, b) = b clip(u / b, -1, 1), b = a
        if d1 + d2 == 1:
            return 0.0
        if q == 0.0:
            return 0.0 if d1 == 0 else 1.0
        s = math.sqrt(q)
        t = a / s
        if d1 == 1:  # P(|u| < b)
            return math.erf(t * _SQRT_HALF)
        # E min(u^2, b^2) = q E[z^2 1{|z| < t}] + b^2 P(|z| >= t)
        return q * _clipped_second_moment(t) + a * a * math.erfc(t * _SQRT_HALF)
    return _core_closed_pair(code, a, d1, d2, q, q, 1.0)


@numba.njit(cache=True)
def _core_closed_variance_derivative(code, a, q):
    """:func:`_closed_variance_derivative` of the core closed-form built-ins."""
    if code == LINEAR:
        return 1.0
    if code == RELU:
        return 0.5
    if code == LEAKY_RELU:
        return 0.5 * (1.0 + a * a)
    if code == ERF:
        return 4.0 / (math.pi * (1.0 + 2.0 * q) * math.sqrt(1.0 + 4.0 * q))
    if code == HARD_TANH:  # E[z^2 1{|z| < 1/sqrt q}]: the boundary terms of d/dq cancel
        return 1.0 if q == 0.0 else _clipped_second_moment(a / math.sqrt(q))
    return math.nan
