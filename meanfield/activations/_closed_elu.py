r"""Compiled Gaussian moments of elu and selu (private; documented in :mod:`meanfield.closed_forms`).

Every derivative of :math:`\phi(x) = \lambda x` (x > 0), :math:`\lambda\alpha(e^x - 1)` (x <= 0) is
piecewise of the form :math:`p_0 + p_1 x` on x > 0 and :math:`e_0 e^x + c_0` on x <= 0 (the value
at 0 follows :func:`meanfield.activations.evaluate`: the left piece). Hence

* single-variable moments are exact in exp / erfc form: with :math:`u \sim N(0, q)`,
  :math:`M(a) = \mathbb{E}\,e^{a u} 1\{u < 0\} = e^{a^2 q / 2}\Phi(-a\sqrt q) = \tfrac12\,\mathrm{erfcx}(a\sqrt{q/2})`;
* the bivariate moment is one smooth integral: conditionally on :math:`u_1 = \sqrt{q_1} z`,
  :math:`u_2 \sim N(\mu, \sigma^2)` with :math:`\mu = c\sqrt{q_2} z`, :math:`\sigma^2 = q_2 (1 - c^2)`,
  and :math:`G(\mu, \sigma) = \mathbb{E}[\phi^{(d_2)}(u_2) \mid u_1]` is closed
  (:math:`\mathbb{E}\,Y 1\{Y > 0\} = \mu\Phi(t) + \sigma\varphi(t)`,
  :math:`\mathbb{E}\,e^Y 1\{Y < 0\} = \tfrac12\,\mathrm{erfcx}((t + \sigma)/\sqrt2)\,e^{-t^2/2}`,
  :math:`t = \mu / \sigma`); the outer integral over z is split at z = 0, where both kinks lie, so
  each half-line carries an entire integrand, integrated by Gauss-Legendre on panels graded
  geometrically from z = 0 (the narrowest feature, of width :math:`\min(1, 1/\sqrt{q_1},
  \sqrt{1 - c^2}/|c|, 1/(|c|\sqrt{q_2}))`, sets the first panel) -- the device of ``hard_tanh``.
  Equivalent to the bivariate-normal-CDF (Owen's T) form, a sum of terms
  :math:`e^{A}\Phi_2(h, k; \rho)`, but free of its overflow / underflow (and of the cancellation
  of :math:`\Phi_2` in the tails) at large variances.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ._registry import SELU, SELU_ALPHA, SELU_LAMBDA

__all__ = ["elu_pair", "elu_single", "elu_variance_derivative"]

_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_INV_SQRT_PI = 1.0 / math.sqrt(math.pi)
#: Gauss-Legendre nodes per panel (an entire integrand on a panel no wider than its features).
_PANEL_NODES = 20
_GLE_X, _GLE_W = np.polynomial.legendre.leggauss(_PANEL_NODES)
#: Half-width of the outer integral in z: P(|z| > 9) = 2e-19.
_ZMAX = 9.0
#: Narrowest first panel (features narrower than this contribute below 1e-30 relative).
_MIN_PANEL = 1e-30
#: Below this scale (sigma and |mu| of the smoothed Gaussian) the negative part of elu(Y) is taken
#: without the cancellation of E[e^Y; Y < 0] against P(Y < 0), whose rounding is eps / sigma
#: relative (1e-13 at the threshold; it would reach 1e-3 at q ~ 1e-28).
_SMALL_SCALE = 1e-3
#: Below this variance the single-variable exp/erfc form loses ~1e-16 / sqrt(q) to cancellation
#: (E (e^u - 1)^2 1{u < 0} ~ q / 2 from terms of size 1/2): the graded integral is used instead.
SINGLE_FORM_MIN_Q = 1e-3


@numba.njit(cache=True)
def _erfcx(x):
    """exp(x^2) erfc(x) for x >= 0 (relative error ~ 1e-16 x^2 below 26, asymptotic series above)."""
    if x < 26.0:
        return math.exp(x * x) * math.erfc(x)
    r = 1.0 / (2.0 * x * x)
    # 1 - r + 3 r^2 - 15 r^3 + 105 r^4 - 945 r^5: next term 10395 r^6 < 2e-20 at x = 26
    s = 1.0 - r * (1.0 - r * (3.0 - r * (15.0 - r * (105.0 - 945.0 * r))))
    return s * _INV_SQRT_PI / x


@numba.njit(cache=True)
def _constants(code, a):
    """(lambda, alpha) of elu(alpha = a) or selu."""
    if code == SELU:
        return SELU_LAMBDA, SELU_ALPHA
    return 1.0, a


@numba.njit(cache=True)
def _pieces(lam, alpha, d):
    """(p0, p1, e0, c0): phi^(d) = p0 + p1 x on x > 0, e0 e^x + c0 on x <= 0."""
    la = lam * alpha
    if d == 0:
        return 0.0, lam, la, -la
    if d == 1:
        return lam, 0.0, la, 0.0
    return 0.0, 0.0, la, 0.0


@numba.njit(cache=True)
def _piece_value(p0, p1, e0, c0, x):
    if x > 0.0:
        return p0 + p1 * x
    if e0 == -c0:
        return e0 * math.expm1(x)
    return e0 * math.exp(x) + c0


@numba.njit(cache=True)
def _smoothed(p0, p1, e0, c0, mu, sigma):
    """E[g(Y)], Y ~ N(mu, sigma^2), g the piecewise function (p0, p1, e0, c0)."""
    if sigma == 0.0:
        return _piece_value(p0, p1, e0, c0, mu)
    t = mu / sigma
    up = 0.5 * math.erfc(-t * _SQRT_HALF)  # Phi(t)
    down = 0.5 * math.erfc(t * _SQRT_HALF)  # Phi(-t)
    pdf = _INV_SQRT_2PI * math.exp(-0.5 * t * t)
    pos = p0 * up + p1 * (mu * up + sigma * pdf)
    x = t + sigma
    if e0 == -c0 and sigma < _SMALL_SCALE and abs(mu) < _SMALL_SCALE:
        # e0 (E[e^Y; Y < 0] - P(Y < 0)) = e0 (expm1(m) Phi(-t - sigma) - int_t^(t + sigma) pdf), with
        # m = mu + sigma^2 / 2: the difference of two nearly equal probabilities, O(sigma) of O(1)
        # numbers, taken without cancellation (the integral by Gauss-Legendre on the short interval)
        inner = 0.0
        for i in range(_PANEL_NODES):
            v = t + 0.5 * sigma * (1.0 + _GLE_X[i])
            inner += _GLE_W[i] * math.exp(-0.5 * v * v)
        inner *= 0.5 * sigma * _INV_SQRT_2PI
        tail = 0.5 * math.erfc(x * _SQRT_HALF)
        return pos + e0 * (math.expm1(mu + 0.5 * sigma * sigma) * tail - inner)
    if x >= 0.0:
        expo = 0.5 * _erfcx(x * _SQRT_HALF) * math.exp(-0.5 * t * t)
    else:  # mu < -sigma^2: exponent mu + sigma^2 / 2 < 0
        expo = math.exp(mu + 0.5 * sigma * sigma) * 0.5 * math.erfc(x * _SQRT_HALF)
    return pos + e0 * expo + c0 * down


@numba.njit(cache=True)
def elu_pair(code, a, d1, d2, q1, q2, c):
    """E phi^(d1)(u1) phi^(d2)(u2) of elu / selu; NaN for order 2 where phi'' has a Dirac part."""
    lam, alpha = _constants(code, a)
    if (d1 == 2 or d2 == 2) and alpha != 1.0:
        return math.nan  # phi'' = lambda (1 - alpha) delta + ...: not a pointwise moment
    c = min(1.0, max(-1.0, c))
    f0, f1, fe, fc = _pieces(lam, alpha, d1)
    g0, g1, ge, gc = _pieces(lam, alpha, d2)
    s1 = math.sqrt(q1)
    s2 = math.sqrt(q2)
    sigma = s2 * math.sqrt(max(0.0, (1.0 - c) * (1.0 + c)))
    if s1 == 0.0:
        return _piece_value(f0, f1, fe, fc, 0.0) * _smoothed(g0, g1, ge, gc, 0.0, s2)
    beta = c * s2  # mu = beta z
    width = 1.0
    if s1 > 1.0:
        width = 1.0 / s1
    if abs(beta) > 0.0:
        width = min(width, 1.0 / abs(beta))
        if sigma > 0.0:
            width = min(width, sigma / abs(beta))
    width = max(width, _MIN_PANEL)
    # scale the growing factors by 1 / max(1, s): products stay finite for q up to the float64 range
    k1 = 1.0 / max(1.0, s1)
    k2 = 1.0 / max(1.0, s2)
    acc = 0.0
    for side in range(2):
        sign = 1.0 if side == 0 else -1.0
        lo = 0.0
        hi = width
        while lo < _ZMAX:
            hi = min(hi, _ZMAX)
            mid = 0.5 * (lo + hi)
            half = 0.5 * (hi - lo)
            panel = 0.0
            for i in range(_PANEL_NODES):
                z = sign * (mid + half * _GLE_X[i])
                fv = _piece_value(f0, f1, fe, fc, s1 * z) * k1
                if fv == 0.0:
                    continue
                gv = _smoothed(g0, g1, ge, gc, beta * z, sigma) * k2
                panel += _GLE_W[i] * fv * gv * math.exp(-0.5 * z * z)
            acc += half * panel
            lo = hi
            hi = 2.0 * hi
    return _INV_SQRT_2PI * acc / k1 / k2


@numba.njit(cache=True)
def elu_single(code, a, d1, d2, q):
    """E phi^(d1)(u) phi^(d2)(u), u ~ N(0, q), of elu / selu in exp / erfcx form."""
    lam, alpha = _constants(code, a)
    if (d1 == 2 or d2 == 2) and alpha != 1.0:
        return math.nan
    if q < SINGLE_FORM_MIN_Q:
        return elu_pair(code, a, d1, d2, q, q, 1.0)
    f0, f1, fe, fc = _pieces(lam, alpha, d1)
    g0, g1, ge, gc = _pieces(lam, alpha, d2)
    s = math.sqrt(q)
    m1 = 0.5 * _erfcx(s * _SQRT_HALF)  # E e^u 1{u < 0}
    m2 = 0.5 * _erfcx(2.0 * s * _SQRT_HALF)  # E e^{2u} 1{u < 0}
    pos = 0.5 * f0 * g0 + (f0 * g1 + f1 * g0) * s * _INV_SQRT_2PI + 0.5 * f1 * g1 * q
    neg = fe * ge * m2 + (fe * gc + ge * fc) * m1 + 0.5 * fc * gc
    return pos + neg


@numba.njit(cache=True)
def elu_variance_derivative(code, a, q):
    """d/dq E phi(sqrt(q) z)^2 = lambda^2 [1/2 + alpha^2 (2 M(2) - M(1))] of elu / selu."""
    lam, alpha = _constants(code, a)
    s = math.sqrt(q)
    m1 = 0.5 * _erfcx(s * _SQRT_HALF)
    m2 = 0.5 * _erfcx(2.0 * s * _SQRT_HALF)
    return lam * lam * (0.5 + alpha * alpha * (2.0 * m2 - m1))
