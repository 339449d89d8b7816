"""Compiled scalar closed forms of the extended activations (private; see :mod:`meanfield.closed_forms`).

Shared by :mod:`meanfield.gaussian` (called before any quadrature) and documented in
:mod:`meanfield.closed_forms`. Each returns NaN where no closed form is implemented.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ._closed_elu import elu_pair, elu_single, elu_variance_derivative
from ._registry import ABS, COS, ELU, EXP, GELU, RBF, RELU_POWER, SELU, SIGN, SIN

__all__ = ["pair_closed", "single_closed", "variance_derivative_closed"]

_INV_2PI = 1.0 / (2.0 * math.pi)


@numba.njit(cache=True)
def _cos_quarter(m):
    """cos(m pi / 2) for an integer m, exactly."""
    r = m % 4
    if r == 0:
        return 1.0
    if r == 2:
        return -1.0
    return 0.0


@numba.njit(cache=True)
def _arccos_j(m, c):
    """J_m(theta) of Cho & Saul, theta = arccos(c), m = 0..4 (generated symbolically from their eq. 3)."""
    c = min(1.0, max(-1.0, c))
    phi = math.pi - math.acos(c)
    s = math.sqrt(max(0.0, 1.0 - c * c))
    if m == 0:
        return phi
    if m == 1:
        return s + phi * c
    if m == 2:
        return 3.0 * s * c + phi * (1.0 + 2.0 * c * c)
    if m == 3:
        return s * (4.0 + 11.0 * c * c) + phi * (6.0 * c**3 + 9.0 * c)
    if m == 4:
        c2 = c * c
        return s * c * (55.0 + 50.0 * c2) + phi * (24.0 * c2 * c2 + 72.0 * c2 + 9.0)
    return math.nan


@numba.njit(cache=True)
def _falling(n, d):
    """n! / (n - d)!"""
    out = 1.0
    for i in range(d):
        out *= n - i
    return out


@numba.njit(cache=True)
def _abs_moment(p):
    """E|z|^p for z ~ N(0, 1), p >= 0 an integer: (p - 1)!! for even p, sqrt(2/pi) (p - 1)!! for odd p."""
    out = 1.0
    k = p - 1
    while k > 1:
        out *= k
        k -= 2
    return out if p % 2 == 0 else out * math.sqrt(2.0 / math.pi)


@numba.njit(cache=True)
def _gelu_pair(d1, d2, q1, q2, c):
    """E gelu^(d1)(u1) gelu^(d2)(u2) for (d1, d2) in {(0, 0), (1, 1)}, scaled (no overflow to q ~ 1e300)."""
    s1 = math.sqrt(q1)
    s2 = math.sqrt(q2)
    b1 = 1.0 / (1.0 + q1)
    b2 = 1.0 / (1.0 + q2)
    a1 = q1 * b1
    a2 = q2 * b2
    ra = math.sqrt(a1 * a2)
    rho = c * ra  # k / sqrt(A)
    w2 = (1.0 - c * c) * a1 * a2 + (b1 + b2 - b1 * b2)  # 1 - rho^2 without cancellation
    w = math.sqrt(w2)
    theta = math.atan2(rho, w)
    if d1 == 0:
        # F / (s1 s2) = c / 4 + [c^2 s1 s2 / (A^{3/2} w) + ra w + c theta] / (2 pi)
        t = (s1 * b1 * math.sqrt(b1)) * (s2 * b2 * math.sqrt(b2))  # s1 s2 / A^{3/2}
        return s1 * s2 * (0.25 * c + _INV_2PI * (c * c * t / w + ra * w + c * theta))
    # dF/dk = 1/4 + theta / (2 pi) + rho [w^2 (3 b1 b2 + a1 b2 + a2 b1) + rho^2 b1 b2] / (2 pi w^3)
    if w == 0.0:
        return 0.25 + _INV_2PI * theta  # q1 = q2 = 0
    # rho [w^2 (...) + rho^2 b1 b2] / w^3, divided term by term: w^3 underflows at q ~ 1e300, |c| = 1
    tail = (3.0 * b1 * b2 + a1 * b2 + a2 * b1) / w + rho * rho * ((b1 / w2) * b2) / w
    return 0.25 + _INV_2PI * (theta + rho * tail)


_GL24_X, _GL24_W = np.polynomial.legendre.leggauss(24)


@numba.njit(cache=True)
def _relu_power_mixed(m1, m2, s1, s2, c):
    """E relu(u1)^m1 relu(u2)^m2 for integers m1, m2 >= 0 (any c).

    Polar coordinates: u1 = s1 r cos t, u2 = s2 r cos(t - theta), theta = arccos c; the radial
    integral is 2^{(m1 + m2)/2} Gamma((m1 + m2)/2 + 1), the angular one a trigonometric polynomial
    over the arc where both cosines are positive, t in (theta - pi/2, pi/2), integrated by
    24-point Gauss-Legendre (exact to rounding: an entire integrand of degree <= 8 on an arc <= pi).
    """
    theta = math.acos(min(1.0, max(-1.0, c)))
    lo = theta - 0.5 * math.pi
    hi = 0.5 * math.pi
    if hi <= lo:
        return 0.0
    mid = 0.5 * (lo + hi)
    half = 0.5 * (hi - lo)
    acc = 0.0
    for i in range(24):
        t = mid + half * _GL24_X[i]
        acc += _GL24_W[i] * max(0.0, math.cos(t)) ** m1 * max(0.0, math.cos(t - theta)) ** m2
    p = m1 + m2
    radial = 2.0 ** (0.5 * p) * math.gamma(0.5 * p + 1.0)
    return s1**m1 * s2**m2 * radial * _INV_2PI * half * acc


@numba.njit(cache=True)
def _rbf_pair(g, d1, d2, q1, q2, c):
    """E of P_d1(u1) P_d2(u2) exp(-g (u1^2 + u2^2)) (see the module table), scaled."""
    if (d1 + d2) % 2 == 1:
        return 0.0  # even phi: odd total order integrates to 0
    one_m_c2 = max(0.0, 1.0 - c * c)
    b1 = 1.0 / (1.0 + 2.0 * g * q1)
    b2 = 1.0 / (1.0 + 2.0 * g * q2)
    t1 = 2.0 * g * q1 * b1
    t2 = 2.0 * g * q2 * b2
    w2 = one_m_c2 * t1 * t2 + (b1 + b2 - b1 * b2)  # det(I + 2 g Sigma) b1 b2
    z = math.sqrt(b1 * b2 / w2)  # det(I + 2 g Sigma)^{-1/2}
    # tilde Sigma = (Sigma + 2 g det(Sigma) I) / det(I + 2 g Sigma)
    s11 = q1 * b1 * (b2 + t2 * one_m_c2) / w2
    s22 = q2 * b2 * (b1 + t1 * one_m_c2) / w2
    s12 = c * math.sqrt(q1) * math.sqrt(q2) * b1 * b2 / w2
    if d1 == 0 and d2 == 0:
        return z
    if d1 == 1 and d2 == 1:
        return z * 4.0 * g * g * s12
    if d1 == 0 or d2 == 0:
        s = s22 if d1 == 0 else s11
        return z * (4.0 * g * g * s - 2.0 * g)
    g2 = g * g
    return z * (16.0 * g2 * g2 * (s11 * s22 + 2.0 * s12 * s12) - 8.0 * g2 * g * (s11 + s22) + 4.0 * g2)


@numba.njit(cache=True)
def pair_closed(code, a, d1, d2, q1, q2, c):
    """E phi^(d1)(u1) phi^(d2)(u2) of the extended built-ins in closed form, or NaN."""
    c = min(1.0, max(-1.0, c))
    s1 = math.sqrt(q1)
    s2 = math.sqrt(q2)
    s12 = s1 * s2
    if code == SIN or code == COS:
        shift = 0 if code == SIN else 1
        m1 = d1 + shift
        m2 = d2 + shift
        # q1 + q2 -+ 2k = (s1 - s2)^2 + 2 s1 s2 (1 -+ c): exponents <= 0, no cancellation
        e_minus = math.exp(-0.5 * ((s1 - s2) ** 2 + 2.0 * s12 * (1.0 - c)))
        e_plus = math.exp(-0.5 * ((s1 - s2) ** 2 + 2.0 * s12 * (1.0 + c)))
        return 0.5 * (e_minus * _cos_quarter(m1 - m2) - e_plus * _cos_quarter(m1 + m2))
    if code == ABS:
        if d1 == 2 or d2 == 2:
            return math.nan
        if d1 != d2:
            return 0.0
        asin_c = math.asin(c)
        if d1 == 0:
            return 2.0 * s12 / math.pi * (math.sqrt(max(0.0, 1.0 - c * c)) + c * asin_c)
        return 2.0 / math.pi * asin_c
    if code == SIGN:
        if d1 == 0 and d2 == 0:
            return 2.0 / math.pi * math.asin(c)
        if d1 == 1 and d2 == 1:  # sign' = 2 delta: 4 p(0, 0)
            den = math.pi * s12 * math.sqrt(max(0.0, 1.0 - c * c))
            return 2.0 / den if den > 0.0 else math.inf
        if d1 + d2 == 1:
            return 0.0  # E sign(u1) delta(u2) = 0 by symmetry
        return math.nan
    if code == EXP:
        return math.exp(0.5 * (q1 + q2) + c * s12)
    if code == RBF:
        return _rbf_pair(a, d1, d2, q1, q2, c)
    if code == RELU_POWER:
        n = int(a)
        if d1 != d2:
            return _falling(n, d1) * _falling(n, d2) * _relu_power_mixed(n - d1, n - d2, s1, s2, c)
        m = n - d1
        return _falling(n, d1) ** 2 * _INV_2PI * s12**m * _arccos_j(m, c)
    if code == GELU:
        if d1 == d2 and d1 <= 1:
            return _gelu_pair(d1, d2, q1, q2, c)
        if d1 > d2:  # symmetric after swapping (q1, d1) <-> (q2, d2)
            return _gelu_mixed(d2, d1, q2, q1, c)
        return _gelu_mixed(d1, d2, q1, q2, c)
    if code == ELU or code == SELU:
        return elu_pair(code, a, d1, d2, q1, q2, c)
    return math.nan


_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


@numba.njit(cache=True)
def _gelu_mixed(d1, d2, q1, q2, c):
    """E gelu^(d1)(u1) gelu^(d2)(u2) for (d1, d2) in {(0, 1), (0, 2), (1, 2), (2, 2)}, scaled.

    gelu = x Phi(x), gelu' = Phi(x) + x phi(x), gelu'' = phi(x) (2 - x^2). Each factor phi(u_i) is
    a Gaussian tilt (it multiplies the density by a Gaussian, giving a centred normal with
    covariance (Sigma^{-1} + e_i e_i^T)^{-1} and a normalising factor), Phi(u) = P(xi < u) with an
    independent xi ~ N(0, 1), and the remaining polynomial moments follow from Stein's lemma
    (derivations in :mod:`meanfield.closed_forms`).
    """
    s1 = math.sqrt(q1)
    b1 = 1.0 / (1.0 + q1)
    b2 = 1.0 / (1.0 + q2)
    a1 = q1 * b1
    a2 = q2 * b2
    if d1 == 0 and d2 == 1:
        # E[X 1{W1 > 0} 1{W2 > 0}] + E[X Phi(X) Y phi(Y)], W_i = u_i - xi_i
        return _INV_SQRT_2PI * (0.5 * s1 * math.sqrt(a1) + 0.5 * c * s1 * math.sqrt(a2) * (1.0 + b2))
    if d1 == 1 and d2 == 2:
        # tilt by phi(u2): E'[Phi(X') (2 - Y'^2)] = 1 - Var(Y') / 2, independent of c
        return _INV_SQRT_2PI * math.sqrt(b2) * (1.0 - 0.5 * a2)
    if d1 == 0 and d2 == 2:
        # tilt by phi(u2): X' ~ N(0, vx), Cov(X', Y') = e, Var Y' = a2; then Stein's lemma in X'
        vx = q1 * (1.0 - c * c * a2)
        e2 = c * c * q1 * a2 * b2  # e^2, e = k / (1 + q2)
        r = 1.0 / (1.0 + vx)
        bracket = 2.0 * vx - vx * (a2 - e2 * r) - 2.0 * e2
        return _INV_2PI * math.sqrt(b2) * math.sqrt(r) * bracket
    if d1 == 2 and d2 == 2:
        # tilt by phi(u1) phi(u2): Sigma' = Sigma (I + Sigma)^{-1}, det(I + Sigma) = w2 / (b1 b2)
        w2 = (1.0 - c * c) * a1 * a2 + (b1 + b2 - b1 * b2)
        t = c * c * a1 * a2
        v1 = (a1 - t) / w2
        v2 = (a2 - t) / w2
        e = c * math.sqrt(a1 * a2 * b1 * b2) / w2
        return _INV_2PI * math.sqrt(b1 * b2 / w2) * (4.0 - 2.0 * v1 - 2.0 * v2 + v1 * v2 + 2.0 * e * e)
    return math.nan


@numba.njit(cache=True)
def single_closed(code, a, d1, d2, q):
    """E phi^(d1)(u) phi^(d2)(u), u ~ N(0, q), in closed form, or NaN."""
    if code == RELU_POWER:
        n = int(a)
        p = 2 * n - d1 - d2
        return _falling(n, d1) * _falling(n, d2) * 0.5 * q ** (0.5 * p) * _abs_moment(p)
    if code == SIGN:
        if d1 == 0 and d2 == 0:
            return 1.0
        if d1 + d2 == 1:
            return 0.0
        return math.inf if d1 == 1 and d2 == 1 else math.nan
    if code == ABS:
        if d1 == 0 and d2 == 0:
            return q
        if d1 == 1 and d2 == 1:
            return 1.0
    if code == ELU or code == SELU:
        return elu_single(code, a, d1, d2, q)
    return pair_closed(code, a, d1, d2, q, q, 1.0)


@numba.njit(cache=True)
def variance_derivative_closed(code, a, q):
    """d/dq E phi(sqrt(q) z)^2 in closed form, or NaN."""
    if code == SIN:
        return math.exp(-2.0 * q)  # E sin^2 = (1 - e^{-2q}) / 2
    if code == COS:
        return -math.exp(-2.0 * q)
    if code == ABS:
        return 1.0
    if code == SIGN:
        return 0.0
    if code == EXP:
        return 2.0 * math.exp(2.0 * q)
    if code == RBF:  # E e^{-2 g u^2} = (1 + 4 g q)^{-1/2}
        return -2.0 * a * (1.0 + 4.0 * a * q) ** -1.5
    if code == RELU_POWER:  # E relu^{2n} = q^n (2n - 1)!! / 2
        n = int(a)
        return 0.5 * n * q ** (n - 1) * _abs_moment(2 * n)
    if code == ELU or code == SELU:
        return elu_variance_derivative(code, a, q)
    if code == GELU:
        # d/dq [q/4 + (q / 2pi) asin(q / (1 + q)) + q^2 / (pi (1 + q) sqrt(1 + 2q))]
        r = math.sqrt(1.0 + 2.0 * q)
        asin_r = math.atan2(q, r)  # asin(q / (1 + q)): sqrt((1 + q)^2 - q^2) = sqrt(1 + 2q)
        base = q / ((1.0 + q) * r)
        return 0.25 + _INV_2PI * (asin_r + base) + (2.0 * base - base * q / (1.0 + q) - base * q / (r * r)) / math.pi
    return math.nan
