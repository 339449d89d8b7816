r"""Gaussian expectations of activations: closed forms first, bounded-cost quadrature otherwise.

The quantities every mean-field map is built from:

.. math::

    E_1^{(d_1, d_2)}(q) = \mathbb{E}_{u \sim N(0, q)}\, \phi^{(d_1)}(u)\, \phi^{(d_2)}(u),

    E_2^{(d_1, d_2)}(q_1, q_2, c) = \mathbb{E}\, \phi^{(d_1)}(u_1)\, \phi^{(d_2)}(u_2), \quad
    (u_1, u_2) \sim N\!\left(0, \begin{pmatrix} q_1 & c\sqrt{q_1 q_2} \\ c\sqrt{q_1 q_2} & q_2 \end{pmatrix}\right),

with derivative orders :math:`d_i \in \{0, 1, 2\}`, and
:math:`\partial_q \mathbb{E}\,\phi(\sqrt{q} z)^2 = \mathbb{E}[u \phi(u) \phi'(u)] / q` (Stein's lemma;
it needs only first derivatives, so it is exact for kinked activations too).

Closed forms (never quadrature): ``linear``; ``relu`` and ``leaky_relu`` through the arc-cosine
kernel of Cho & Saul (2009); ``erf`` through the arcsine kernel of Williams (1997); ``hard_tanh``
(derivative orders <= 1) as moments of a clipped Gaussian: single-variable moments in terms of
erf, and the bivariate ones through the rectangle probability ``P(|u1| < 1, |u2| < 1)`` (Plackett's
identity at the four corners) and its integral over c (Price's theorem), both smooth
one-dimensional integrals over theta = arcsin(t) (:func:`_hard_tanh_pair`); the issue-17 built-ins
(sin, cos, abs, sign, exp, rbf, relu_power, gelu at every order, elu and selu) as documented in
:mod:`meanfield.closed_forms`. Everything else uses
quadrature in Numba kernels, :math:`u_1 = \sqrt{q_1} z_1`,
:math:`u_2 = \sqrt{q_2}(c z_1 + \sqrt{1 - c^2} z_2)`, with one of three rules per dimension chosen
by the scale of the integrand in z (:func:`_fill_rule`):

* Gauss-Hermite of degree :data:`DEFAULT_DEGREE` (= 100) while every scale is at most
  ``GH_MAX_SCALE`` (0.5);
* a trapezoid rule whose step resolves unit-width features in u (spectrally convergent for
  analytic integrands) up to ``TRAPEZOID_MAX_SCALE`` (3): beyond GH_MAX_SCALE, tanh(sqrt(q) z)
  and its relatives vary on the scale 1/sqrt(q) in z and Gauss-Hermite (whose node spacing near 0
  is fixed by the degree) converges slowly;
* Gauss-Legendre panels graded geometrically towards the point where u = 0 beyond, whose node
  count grows only logarithmically with q: every built-in is integrated at any q up to the float64
  range with at most ~400 nodes per dimension (~2-10 ms for a bivariate expectation at q = 1e4 to
  1e300), so nothing hangs at large variances.

User-defined activations (:meth:`meanfield.activations.Activation.from_functions`) are integrated
on the nodes of the same rule builder, evaluated with NumPy.

Accuracy: largest absolute error of E_2 (d = (0, 0)) against an independent fine trapezoid rule
(``benchmarks/gaussian_accuracy.py`` regenerates the table; ``tests/theory/test_gaussian.py`` and
``tests/theory/test_dense_edge_cases.py`` pin it against scipy's adaptive quadrature, up to q = 1e6, and against
the asymptotic forms at q = 1e300) over a grid of q1, q2 in [0.01, q_max] and
c in {-0.9, -0.3, 0.5, 0.95}:

activation   q_max = 1    q_max = 10    q_max = 100
tanh         4e-16        7e-14         4e-13
sigmoid      1e-16        4e-14         2e-13
softplus     3e-16        5e-13         2e-11
swish        6e-17        4e-13         2e-11
gelu         6e-17        4e-13         2e-11
hard_tanh    8e-6 (*)     8e-7 (*)      8e-6 (*)

(*) hard_tanh is a closed form now: the row measures the reference's own O(h^2) error at the
kinks; against scipy's adaptive quadrature and the bivariate normal CDF it agrees to ~1e-15
(``tests/theory/test_dense_edge_cases.py``). The softplus/swish/gelu entries at q_max = 100 are rounding of
moments of size ~q.

References
----------
Poole et al. (2016), "Exponential expressivity in deep neural networks through transient chaos".
Cho & Saul (2009), "Kernel methods for deep learning". Williams (1997), "Computing with infinite
networks".
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import TYPE_CHECKING

import numba
import numpy as np
from numba.core import types
from numba.extending import overload
from numpy.typing import ArrayLike
from scipy.special import roots_hermitenorm

from ._checks import check_correlation, check_int, check_nonnegative
from ._closed import pair_closed, single_closed, variance_derivative_closed
from .activations import (
    ELU,
    ERF,
    GELU,
    HARD_TANH,
    LEAKY_RELU,
    LINEAR,
    RELU,
    SELU,
    SIGMOID,
    SIN,
    SOFTPLUS,
    SWISH,
    TANH,
    Activation,
    call_user,
    evaluate,
    evaluate_call,
    get_activation,
)

if TYPE_CHECKING:  # annotations only
    from .activations import Activation

__all__ = [
    "DEFAULT_DEGREE",
    "expectation",
    "hermite_rule",
    "kernel_rule",
    "pair_expectation",
    "variance_derivative",
]

#: Default number of Gauss-Hermite nodes per dimension.
DEFAULT_DEGREE = 100

_INV_2PI = 1.0 / (2.0 * math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


@lru_cache(maxsize=32)
def _rule(degree: int):
    z, w = roots_hermitenorm(degree)
    w = w / w.sum()
    z.setflags(write=False)
    w.setflags(write=False)
    return z, w


#: Nodes whose normalised weight is below this are dropped from the rule the kernels use: at the
#: default degree 100 this keeps 64 of 100 nodes, and the dropped mass (< 1e-25, times z^2 < 2e-23)
#: is far below rounding, while the 2-D tensor rule becomes 2.4 times cheaper.
PRUNE_WEIGHT = 1e-25


@lru_cache(maxsize=32)
def _kernel_rule(degree: int):
    z, w = _rule(degree)
    keep = w >= PRUNE_WEIGHT
    zk, wk = np.ascontiguousarray(z[keep]), np.ascontiguousarray(w[keep])
    zk.setflags(write=False)
    wk.setflags(write=False)
    return zk, wk


def kernel_rule(degree: int = DEFAULT_DEGREE) -> tuple[np.ndarray, np.ndarray]:
    """The pruned rule the kernels integrate with: :func:`hermite_rule` less nodes of weight < PRUNE_WEIGHT."""
    degree = check_int(degree, "degree", 1, 2000)
    return _kernel_rule(degree)


def hermite_rule(degree: int = DEFAULT_DEGREE) -> tuple[np.ndarray, np.ndarray]:
    """Probabilists' Gauss-Hermite nodes and weights (weights sum to 1), cached per degree.

    ``sum(w * f(z))`` approximates ``E f(Z)`` for ``Z ~ N(0, 1)``, exactly for polynomials of
    degree ``< 2 * degree``.
    """
    degree = check_int(degree, "degree", 1, 2000)
    return _rule(degree)


# ----------------------------------------------------------------------------------------------
# Closed forms. Each returns NaN when no closed form exists for (code, d1, d2); the kernels then
# fall back to quadrature.


@numba.njit(cache=True)
def run_time_orders(code):
    """The derivative orders 0, 1, 2 as run-time integers (``code`` is any run-time int).

    Numba specialises a compiled function on every distinct literal argument: calls with the
    constants 0 and 1 compiled ``pair_value`` and everything below it twice, ``evaluate`` three
    times (``benchmarks/bench_cold_start.py``). Kernels pass these instead of literals.
    """
    zero = code - code
    return zero, zero + 1, zero + 2


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
def _closed_pair(code, a, d1, d2, q1, q2, c):
    """E phi^(d1)(u1) phi^(d2)(u2) in closed form, or NaN."""
    if code >= SIN or code == GELU:  # issue-17 closed forms (meanfield.closed_forms)
        return pair_closed(code, a, d1, d2, q1, q2, c)
    return _core_closed_pair(code, a, d1, d2, q1, q2, c)


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
def _closed_single(code, a, d1, d2, q):
    """E phi^(d1)(u) phi^(d2)(u), u ~ N(0, q), in closed form, or NaN."""
    if code >= SIN or code == GELU:
        return single_closed(code, a, d1, d2, q)
    return _core_closed_single(code, a, d1, d2, q)


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
def _closed_variance_derivative(code, a, q):
    """d/dq E phi(sqrt(q) z)^2 in closed form, or NaN."""
    if code >= SIN or code == GELU:
        return variance_derivative_closed(code, a, q)
    return _core_closed_variance_derivative(code, a, q)


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


# ----------------------------------------------------------------------------------------------
# Quadrature rules. One builder, _fill_rule, serves the compiled kernels of the built-ins and the
# NumPy path of user-defined activations, so both integrate with the same nodes.


#: Step, in units of the activation's argument u, of the trapezoid rule used when a variance
#: exceeds 1 (see :func:`pair_value`): for phi analytic in the strip |Im u| < pi/2 (tanh; sigmoid,
#: softplus, swish: pi; erf, gelu: entire) the error is ~ exp(-2 pi (pi/2) / TRAPEZOID_STEP) = 7e-18.
TRAPEZOID_STEP = 0.25
#: Half-width of the trapezoid and graded rules in standard units: P(|z| > 9) = 2e-19.
TRAPEZOID_ZMAX = 9.0
_INV_SQRT_2PI_K = 1.0 / math.sqrt(2.0 * math.pi)
#: Largest scale sqrt(q) of an integrand in z handled by Gauss-Hermite; above it, the trapezoid
#: rule (measured: Gauss-Hermite 100 reaches 6e-12 for E tanh^2 at q = 1 but 5e-17 at q = 0.3).
GH_MAX_SCALE = 0.5
#: Largest scale handled by the trapezoid rule (its node count grows like 72 sqrt(q)); above it,
#: graded Gauss-Legendre panels, whose node count grows only like 20 log2(sqrt(q)).
TRAPEZOID_MAX_SCALE = 3.0
#: Gauss-Legendre nodes per panel of the graded rule.
GRADED_PANEL_NODES = 10
#: |u| beyond which every built-in differs from its asymptote (a constant, u or a step) by less
#: than 45 e^{-45} = 1.3e-18 (swish, the slowest): past it the graded rule of a built-in jumps
#: straight to unit panels, since there the integrand is a polynomial times the Gaussian, so the
#: rule has ~400 nodes at any q. User activations (whose tails are unknown) are refined
#: geometrically all the way to unit width: ~20 log2(sqrt(q)) + 180 nodes (at most ~10^4).
BUILTIN_TAIL_U = 45.0
_GL_X, _GL_W = np.polynomial.legendre.leggauss(GRADED_PANEL_NODES)
_TRAPEZOID_MAX_NODES = 2 * (int(TRAPEZOID_ZMAX * TRAPEZOID_MAX_SCALE / TRAPEZOID_STEP) + 2) + 1


@numba.njit(cache=True)
def _trapezoid_step(scale):
    """Step in z resolving features of unit width in u = scale * z (at most TRAPEZOID_STEP)."""
    return TRAPEZOID_STEP / max(scale, 1.0)


@numba.njit(cache=True)
def _octaves(hw):
    """Number of doublings from hw up to 1 (hw > 0)."""
    if hw >= 1.0:
        return 0
    return math.ceil(-math.log2(hw)) + 1


@numba.njit(cache=True)
def _rule_capacity(scale, hw_extra, nz):
    """An upper bound on the node count of :func:`_fill_rule` (for buffer sizes)."""
    panels = 2 * (int(TRAPEZOID_ZMAX) + 4)
    if scale > 0.0:
        panels += 2 * (_octaves(0.5 / scale) + 2)
    if hw_extra > 0.0:
        panels += 2 * (_octaves(hw_extra) + 2)
    return max(nz, _TRAPEZOID_MAX_NODES, GRADED_PANEL_NODES * panels)


@numba.njit(cache=True)
def _side_breaks(hw1, tail1, hw2, tail2, limit, out):
    """Sorted panel breakpoints (distances from the feature point) on one side, up to ``limit``.

    Each feature (half-width hw, tail) contributes hw, 2 hw, 4 hw, ... below min(tail, 1) (tail
    <= 0: below 1) and that bound itself; then 1, 2, 3, ... and ``limit``.
    """
    n = 0
    out[n] = 0.0
    n += 1
    for f in range(2):
        hw = hw1 if f == 0 else hw2
        tail = tail1 if f == 0 else tail2
        if hw <= 0.0:
            continue
        top = 1.0 if tail <= 0.0 else min(tail, 1.0)
        d = hw
        while d < top and d < limit:
            out[n] = d
            n += 1
            d *= 2.0
        if top < limit:
            out[n] = top
            n += 1
    d = 1.0
    while d < limit:
        out[n] = d
        n += 1
        d += 1.0
    out[n] = limit
    n += 1
    for i in range(1, n):  # insertion sort: a few dozen entries (np.sort costs seconds of compilation)
        x = out[i]
        j = i - 1
        while j >= 0 and out[j] > x:
            out[j + 1] = out[j]
            j -= 1
        out[j + 1] = x
    return n


@numba.njit(cache=True)
def _graded_side(zc, hw1, tail1, hw2, tail2, sign, limit, breaks, zo, wo, n):
    """Gauss-Legendre panels between consecutive breakpoints from zc towards zc + sign * limit."""
    if limit <= 0.0:
        return n
    nb = _side_breaks(hw1, tail1, hw2, tail2, limit, breaks)
    for b in range(nb - 1):
        lo = breaks[b]
        hi = breaks[b + 1]
        if hi <= lo:
            continue
        mid = zc + sign * 0.5 * (lo + hi)
        half = 0.5 * (hi - lo)
        for i in range(GRADED_PANEL_NODES):
            zi = mid + half * _GL_X[i]
            zo[n] = zi
            wo[n] = half * _GL_W[i] * _INV_SQRT_2PI_K * math.exp(-0.5 * zi * zi)
            n += 1
    return n


@numba.njit(cache=True)
def _fill_rule(scale, mu, allow_gh, tail, hw_extra, tail_extra, z, w, zo, wo):
    """Nodes and weights (zo, wo)[:n] with sum wo f(mu + scale zo) ~ E f(mu + scale Z); returns n.

    zo, wo must hold :func:`rule_capacity` entries. f is assumed to vary on the unit scale near
    u = 0 and smoothly elsewhere (every built-in: the singularities of the analytic ones lie on the
    imaginary axis, the kinks at 0 or +-1). Three rules, by the scale of f(mu + scale z) in z:

    * ``scale <= GH_MAX_SCALE`` (and ``allow_gh``): the Gauss-Hermite rule (z, w);
    * ``scale <= TRAPEZOID_MAX_SCALE``: the trapezoid rule of step 0.25 / max(scale, 1) on |z| <= 9
      (spectrally accurate: the Gaussian makes the integrand vanish at the ends);
    * beyond: Gauss-Legendre panels (10 nodes) on |z| <= 9 graded geometrically (ratio 2) towards
      the point z_c = -mu / scale where u = 0, from half-width 0.5 / scale up to 1, then of width 1.
      Every panel sees the nearest singularity (distance >= pi / (2 scale) from z_c) at least at
      its own width away, so each is accurate to ~1e-16. With ``tail > 0`` (built-ins: the distance
      in z beyond which the integrand is a polynomial times the Gaussian to 1e-17, e.g.
      BUILTIN_TAIL_U / scale) the refinement stops at ``tail``. A second feature at z_c of
      half-width ``hw_extra`` (> 0) and its own ``tail_extra`` adds its own graded breakpoints
      (the smoothed factor of the outer integrand of :func:`pair_value`).
    """
    if allow_gh and scale <= GH_MAX_SCALE:
        for i in range(z.size):
            zo[i] = z[i]
            wo[i] = w[i]
        return z.size
    if scale <= TRAPEZOID_MAX_SCALE:
        h = _trapezoid_step(scale)
        k = int(TRAPEZOID_ZMAX / h) + 1
        for j in range(-k, k + 1):
            zj = j * h
            zo[j + k] = zj
            wo[j + k] = h * _INV_SQRT_2PI_K * math.exp(-0.5 * zj * zj)
        return 2 * k + 1
    zc = min(TRAPEZOID_ZMAX, max(-TRAPEZOID_ZMAX, -mu / scale))
    hw = 0.5 / scale
    breaks = np.empty(
        2 * (_octaves(hw) + _octaves(hw_extra) if hw_extra > 0.0 else _octaves(hw)) + 2 * int(TRAPEZOID_ZMAX) + 20
    )
    n = _graded_side(
        zc, hw, tail, hw_extra, tail_extra, 1.0, TRAPEZOID_ZMAX - zc, breaks, zo, wo, breaks.size - breaks.size
    )
    return _graded_side(zc, hw, tail, hw_extra, tail_extra, -1.0, TRAPEZOID_ZMAX + zc, breaks, zo, wo, n)


@numba.njit(cache=True)
def _rule_nodes(scale, mu, allow_gh, tail, hw_extra, tail_extra, z, w):
    """Copies of the nodes and weights of :func:`_fill_rule` (for the NumPy path of user activations)."""
    cap = _rule_capacity(scale, hw_extra, z.size)
    zo = np.empty(cap)
    wo = np.empty(cap)
    n = _fill_rule(scale, mu, allow_gh, tail, hw_extra, tail_extra, z, w, zo, wo)
    return zo[:n].copy(), wo[:n].copy()


@numba.njit(cache=True)
def _inner_rules(scale, means, tail, z, w):
    """Rules for E f(m + scale Z), one per mean m: (counts, nodes, weights), nodes concatenated."""
    cap = _rule_capacity(scale, 0.0, z.size)
    zo = np.empty(cap)
    wo = np.empty(cap)
    counts = np.empty(means.size, dtype=np.int64)
    total = 0
    for i in range(means.size):
        counts[i] = _fill_rule(scale, means[i], z.size >= 0, tail, 0.0, 0.0, z, w, zo, wo)
        total += counts[i]
    nodes = np.empty(total)
    weights = np.empty(total)
    pos = 0
    for i in range(means.size):
        n = _fill_rule(scale, means[i], z.size >= 0, tail, 0.0, 0.0, z, w, zo, wo)
        for k in range(n):  # element loop: see _propagate_kernel in dense.py
            nodes[pos + k] = zo[k]
            weights[pos + k] = wo[k]
        pos += n
    return counts, nodes, weights


@numba.njit(cache=True)
def _outer_features(s1, sc, ss, builtin):
    """(half-width, tail) in z1 of the factor E f2(sc z1 + ss Z2) of the outer integrand, and the
    tail of f1(s1 z1): ``(hw_extra, tail_extra, tail1)`` (tails 0 = refine to unit width)."""
    tail1 = BUILTIN_TAIL_U / s1 if (builtin and s1 > 0.0) else 0.0
    hw_extra = 0.0
    tail_extra = 0.0
    if sc != 0.0:
        hw_extra = 0.5 * max(1.0, ss) / abs(sc)
        if builtin:
            tail_extra = (BUILTIN_TAIL_U + TRAPEZOID_ZMAX * ss) / abs(sc)
    return hw_extra, tail_extra, tail1


@numba.njit(inline="always")
def _value_scale(code, d, s):
    """1 / max(1, s) where phi^(d) grows linearly (d = 0 of the ReLU-like activations), else 1.

    The graded rule evaluates phi at |u| up to 9 sqrt(q); dividing the growing factors by their
    scale keeps the products finite for q up to the float64 range.
    """
    if d == 0 and (code == SOFTPLUS or code == SWISH or code == GELU or code == ELU or code == SELU):
        return 1.0 / max(1.0, s)
    return 1.0


# ----------------------------------------------------------------------------------------------
# Quadrature kernels (built-in activations).


@numba.njit(cache=True)
def _pair_graded(code, a, d1, d2, s1, s2, sc, ss, outer_scale, z, w):
    """E_2 when a scale exceeds TRAPEZOID_MAX_SCALE: the outer rule on z1 graded at 0 (for f1 and
    for the smoothed factor E f2(sc z1 + ss Z2)), inner rules on z2 graded at the z2 where u2 = 0
    (rebuilt per outer node when the inner scale is large)."""
    hw_extra, tail_extra, tail1 = _outer_features(s1, sc, ss, True)
    zo = np.empty(_rule_capacity(outer_scale, hw_extra, z.size))
    wo = np.empty(zo.size)
    zi = np.empty(_rule_capacity(ss, 0.0, z.size))
    wi = np.empty(zi.size)
    n1 = _fill_rule(outer_scale, 0.0, z.size >= 0, tail1, hw_extra, tail_extra, z, w, zo, wo)
    tail2 = BUILTIN_TAIL_U / ss if ss > 0.0 else 0.0
    fixed_inner = ss <= TRAPEZOID_MAX_SCALE
    n2 = 0
    if fixed_inner and ss > 0.0:
        n2 = _fill_rule(ss, 0.0, z.size >= 0, tail2, 0.0, 0.0, z, w, zi, wi)
    k1 = _value_scale(code, d1, s1)
    k2 = _value_scale(code, d2, s2)
    acc = 0.0
    for i in range(n1):
        f1 = evaluate_call(code, a, d1, s1 * zo[i]) * k1
        if f1 == 0.0:
            continue
        base = sc * zo[i]
        if ss == 0.0:
            inner = evaluate_call(code, a, d2, base) * k2
        else:
            if not fixed_inner:
                n2 = _fill_rule(ss, base, z.size >= 0, tail2, 0.0, 0.0, z, w, zi, wi)
            inner = 0.0
            for j in range(n2):
                inner += wi[j] * evaluate_call(code, a, d2, base + ss * zi[j])
            inner *= k2
        acc += wo[i] * f1 * inner
    return acc / k1 / k2


@numba.njit(cache=True)
def pair_value(code, a, d1, d2, q1, q2, c, z, w):
    """E_2 for one (q1, q2, c): closed form if any, else quadrature.

    Gauss-Hermite on the rule (z, w) when every scale of the integrand in z is <= GH_MAX_SCALE;
    a trapezoid rule whose step resolves the activation's unit-width features while every scale
    is <= TRAPEZOID_MAX_SCALE (Gauss-Hermite's node spacing near 0 is fixed by the degree and
    misses them once sqrt(q) >> 1); graded Gauss-Legendre panels beyond (:func:`_fill_rule`).
    """
    v = _closed_pair(code, a, d1, d2, q1, q2, c)
    if not math.isnan(v):
        return v
    return pair_quadrature(code, a, d1, d2, q1, q2, c, z, w)


#: The closed forms alone, NaN where there is none (for kernels that select them by activation
#: family, so that the quadrature path is not compiled where it is never used).
closed_pair_value = _closed_pair
closed_single_value = _closed_single
closed_variance_derivative_value = _closed_variance_derivative
#: (theta, sin theta) of theta = arccos(c), c clipped to [-1, 1] (the arc-cosine kernels).
acos_terms = _acos_terms

#: Values of the closed-form flag ``cf`` of the family-split kernels (:func:`family_rule`). Only the
#: *type* matters: it selects, at compile time, which closed forms a kernel compiles.
#: An int: every built-in's (the code-dispatched tree of :func:`_closed_pair`).
CLOSED_ALL = 0
#: A float: those of linear, relu, leaky_relu, erf, hard_tanh only (``_core_closed_*``).
CLOSED_CORE = 0.0
#: A bool: those of gelu and the issue-17 built-ins only (:mod:`meanfield._closed`: sin, cos, abs,
#: sign, exp, rbf, relu_power, elu, selu).
CLOSED_EXTENDED = True
#: The built-ins of :data:`CLOSED_CORE`.
CORE_CLOSED = (LINEAR, RELU, LEAKY_RELU, ERF, HARD_TANH)


def closed_pair_by(cf, code, a, d1, d2, q1, q2, c):
    """:func:`closed_pair_value`, compiling only the closed forms of ``cf``'s family (Numba only)."""
    raise NotImplementedError("closed_pair_by is called from compiled kernels only")


def closed_single_by(cf, code, a, d1, d2, q):
    """:func:`closed_single_value`, compiling only the closed forms of ``cf``'s family (Numba only)."""
    raise NotImplementedError("closed_single_by is called from compiled kernels only")


def closed_variance_derivative_by(cf, code, a, q):
    """:func:`closed_variance_derivative_value` for ``cf``'s family (Numba only)."""
    raise NotImplementedError("closed_variance_derivative_by is called from compiled kernels only")


# The family is chosen by the type of cf while the caller is typed: the other families' closed
# forms are never typed or compiled (the tree of every built-in's closed forms is ~30 % of the
# compile time of a closed-form kernel). Same functions, so the same bits.
@overload(closed_pair_by)
def _closed_pair_by(cf, code, a, d1, d2, q1, q2, c):
    if isinstance(cf, types.Boolean):
        return lambda cf, code, a, d1, d2, q1, q2, c: pair_closed(code, a, d1, d2, q1, q2, c)
    if isinstance(cf, types.Float):
        return lambda cf, code, a, d1, d2, q1, q2, c: _core_closed_pair(code, a, d1, d2, q1, q2, c)
    return lambda cf, code, a, d1, d2, q1, q2, c: _closed_pair(code, a, d1, d2, q1, q2, c)


@overload(closed_single_by)
def _closed_single_by(cf, code, a, d1, d2, q):
    if isinstance(cf, types.Boolean):
        return lambda cf, code, a, d1, d2, q: single_closed(code, a, d1, d2, q)
    if isinstance(cf, types.Float):
        return lambda cf, code, a, d1, d2, q: _core_closed_single(code, a, d1, d2, q)
    return lambda cf, code, a, d1, d2, q: _closed_single(code, a, d1, d2, q)


@overload(closed_variance_derivative_by)
def _closed_variance_derivative_by(cf, code, a, q):
    if isinstance(cf, types.Boolean):
        return lambda cf, code, a, q: variance_derivative_closed(code, a, q)
    if isinstance(cf, types.Float):
        return lambda cf, code, a, q: _core_closed_variance_derivative(code, a, q)
    return lambda cf, code, a, q: _closed_variance_derivative(code, a, q)


@numba.njit(inline="always")
def pair_quadrature(code, a, d1, d2, q1, q2, c, z, w):
    """:func:`pair_value` without the closed forms (inlined: one compiled copy per caller, and a
    kernel that needs only quadrature does not compile the closed forms)."""
    s1 = math.sqrt(q1)
    s2 = math.sqrt(q2)
    c = min(1.0, max(-1.0, c))
    sc = s2 * c
    ss = s2 * math.sqrt(max(0.0, 1.0 - c * c))
    odd = code == TANH or code == HARD_TANH or code == ERF
    if odd and (d1 + d2) % 2 == 1:
        return 0.0  # phi odd: the integrand has parity (-1)^(d1 + d2) under z -> -z
    outer_scale = max(s1, abs(sc))
    if outer_scale > TRAPEZOID_MAX_SCALE or ss > TRAPEZOID_MAX_SCALE:
        return _pair_graded(code, a, d1, d2, s1, s2, sc, ss, outer_scale, z, w)
    if outer_scale <= GH_MAX_SCALE and ss <= GH_MAX_SCALE:
        n = z.size
        acc = 0.0
        if ss == 0.0:  # degenerate: u2 = (sqrt(q2) c / sqrt(q1)) u1
            for i in range(n):
                acc += w[i] * evaluate(code, a, d1, s1 * z[i]) * evaluate(code, a, d2, sc * z[i])
            return acc
        start = n // 2 if odd else 0  # odd phi: even integrand; nodes sorted and symmetric
        for i in range(start, n):
            f1 = evaluate(code, a, d1, s1 * z[i])
            if f1 == 0.0:
                continue
            inner = 0.0
            base = sc * z[i]
            for j in range(n):
                inner += w[j] * evaluate(code, a, d2, base + ss * z[j])
            weight = w[i]
            if odd and not (n % 2 == 1 and i == start):
                weight *= 2.0  # mirror node; the middle node z = 0 of an odd rule counts once
            acc += weight * f1 * inner
        return acc
    h1 = _trapezoid_step(outer_scale)
    h2 = _trapezoid_step(ss)
    k1 = int(TRAPEZOID_ZMAX / h1) + 1
    k2 = int(TRAPEZOID_ZMAX / h2) + 1
    # inner nodes and weights once per call (the Gaussian weight costs as much as phi)
    u2 = np.empty(2 * k2 + 1)
    w2 = np.empty(2 * k2 + 1)
    for j in range(-k2, k2 + 1):
        zj = j * h2
        u2[j + k2] = ss * zj
        w2[j + k2] = h2 * _INV_SQRT_2PI_K * math.exp(-0.5 * zj * zj)
    acc = 0.0
    lo = 0 if odd else -k1
    for i in range(lo, k1 + 1):
        zi = i * h1
        wi = h1 * _INV_SQRT_2PI_K * math.exp(-0.5 * zi * zi)
        if odd and i > 0:
            wi *= 2.0
        f1 = evaluate(code, a, d1, s1 * zi)
        if f1 == 0.0:
            continue
        base = sc * zi
        inner = 0.0
        if ss == 0.0:
            inner = evaluate(code, a, d2, base)
        else:
            for j in range(2 * k2 + 1):
                inner += w2[j] * evaluate(code, a, d2, base + u2[j])
        acc += wi * f1 * inner
    return acc


@numba.njit(cache=True)
def single_value(code, a, d1, d2, q, z, w):
    """E_1 for one q (Gauss-Hermite, trapezoid or graded rule by sqrt(q), as in :func:`pair_value`)."""
    v = _closed_single(code, a, d1, d2, q)
    if not math.isnan(v):
        return v
    return single_quadrature(code, a, d1, d2, q, z, w)


@numba.njit(inline="always")
def single_quadrature(code, a, d1, d2, q, z, w):
    """:func:`single_value` without the closed forms (inlined, as :func:`pair_quadrature`)."""
    s = math.sqrt(q)
    acc = 0.0
    if s <= GH_MAX_SCALE:
        for i in range(z.size):
            u = s * z[i]
            acc += w[i] * evaluate(code, a, d1, u) * evaluate(code, a, d2, u)
        return acc
    if s <= TRAPEZOID_MAX_SCALE:
        h = _trapezoid_step(s)
        k = int(TRAPEZOID_ZMAX / h) + 1
        for i in range(-k, k + 1):
            zi = i * h
            u = s * zi
            acc += h * _INV_SQRT_2PI_K * math.exp(-0.5 * zi * zi) * evaluate(code, a, d1, u) * evaluate(code, a, d2, u)
        return acc
    zo = np.empty(_rule_capacity(s, 0.0, z.size))
    wo = np.empty(zo.size)
    n = _fill_rule(s, 0.0, z.size < 0, BUILTIN_TAIL_U / s, 0.0, 0.0, z, w, zo, wo)
    k1 = _value_scale(code, d1, s)
    k2 = _value_scale(code, d2, s)
    for i in range(n):
        u = s * zo[i]
        acc += wo[i] * (evaluate_call(code, a, d1, u) * k1) * (evaluate_call(code, a, d2, u) * k2)
    return acc / k1 / k2


@numba.njit(cache=True)
def variance_derivative_value(code, a, q, z, w):
    """d/dq E phi(sqrt(q) z)^2 = E[z phi(u) phi'(u)] / sqrt(q); at q = 0 the limit phi'(0)^2 + phi(0) phi''(0)."""
    v = _closed_variance_derivative(code, a, q)
    if not math.isnan(v):
        return v
    return variance_derivative_quadrature(code, a, q, z, w)


@numba.njit(inline="always")
def variance_derivative_quadrature(code, a, q, z, w):
    """:func:`variance_derivative_value` without the closed forms (inlined, as :func:`pair_quadrature`)."""
    o0, o1, o2 = run_time_orders(code)  # run-time 0, 1, 2: literal arguments compile extra specialisations
    if q == 0.0:
        return evaluate_call(code, a, o1, 0.0) ** 2 + evaluate_call(code, a, o0, 0.0) * evaluate_call(code, a, o2, 0.0)
    s = math.sqrt(q)
    acc = 0.0
    if s <= GH_MAX_SCALE:
        for i in range(z.size):
            u = s * z[i]
            acc += w[i] * z[i] * evaluate(code, a, o0, u) * evaluate(code, a, o1, u)
        return acc / s
    if s <= TRAPEZOID_MAX_SCALE:
        h = _trapezoid_step(s)
        k = int(TRAPEZOID_ZMAX / h) + 1
        for i in range(-k, k + 1):
            zi = i * h
            u = s * zi
            acc += (
                h
                * _INV_SQRT_2PI_K
                * math.exp(-0.5 * zi * zi)
                * zi
                * evaluate(code, a, o0, u)
                * evaluate(code, a, o1, u)
            )
        return acc / s
    zo = np.empty(_rule_capacity(s, 0.0, z.size))
    wo = np.empty(zo.size)
    n = _fill_rule(s, 0.0, z.size < 0, BUILTIN_TAIL_U / s, 0.0, 0.0, z, w, zo, wo)
    k0 = _value_scale(code, 0, s)
    for i in range(n):
        u = s * zo[i]
        acc += wo[i] * zo[i] * (evaluate_call(code, a, o0, u) * k0) * evaluate_call(code, a, o1, u)
    return acc / s / k0


@numba.njit(cache=True)
def _excess_integrand(code, a, which, s, zi):
    """phi(u)^2 - relu(u)^2 (which 0) or z (phi phi' - relu relu')(u) / s (which 1), u = s z."""
    o0, o1, _o2 = run_time_orders(code)  # run-time 0, 1, 2: literal arguments compile extra specialisations
    u = s * zi
    r = u if u > 0.0 else 0.0
    if which == 0:
        p = evaluate_call(code, a, o0, u)
        return (p - r) * (p + r)
    h = 1.0 if u > 0.0 else 0.0
    return zi * (evaluate_call(code, a, o0, u) * evaluate_call(code, a, o1, u) - r * h) / s


@numba.njit(cache=True)
def excess_value(code, a, which, q, z, w):
    r"""The ReLU-like activations' departure from ReLU: :math:`E[\phi(u)^2] - q/2` (``which`` 0) or
    :math:`\partial_q E\phi(\sqrt q z)^2 - 1/2` (``which`` 1), integrated as one localised
    integrand, so there is no cancellation between two numbers of size q (the q* solver needs
    these at q ~ 1e14, where q/2 - E phi^2 ~ 1e-7 while E phi^2 itself carries an error ~ 0.1).
    Rules by sqrt(q) as in :func:`single_value`."""
    o0, o1, o2 = run_time_orders(code)  # run-time 0, 1, 2: literal arguments compile extra specialisations
    s = math.sqrt(q)
    if s == 0.0:
        if which == 0:
            return evaluate_call(code, a, o0, 0.0) ** 2
        return (
            evaluate_call(code, a, o1, 0.0) ** 2
            + evaluate_call(code, a, o0, 0.0) * evaluate_call(code, a, o2, 0.0)
            - 0.5
        )
    acc = 0.0
    if s <= GH_MAX_SCALE:
        for i in range(z.size):
            acc += w[i] * _excess_integrand(code, a, which, s, z[i])
        return acc
    if s <= TRAPEZOID_MAX_SCALE:
        h = _trapezoid_step(s)
        k = int(TRAPEZOID_ZMAX / h) + 1
        for i in range(-k, k + 1):
            zi = i * h
            acc += h * _INV_SQRT_2PI_K * math.exp(-0.5 * zi * zi) * _excess_integrand(code, a, which, s, zi)
        return acc
    zo = np.empty(_rule_capacity(s, 0.0, z.size))
    wo = np.empty(zo.size)
    n = _fill_rule(s, 0.0, z.size < 0, BUILTIN_TAIL_U / s, 0.0, 0.0, z, w, zo, wo)
    for i in range(n):
        acc += wo[i] * _excess_integrand(code, a, which, s, zo[i])
    return acc


#: Built-ins with no closed form at any derivative order or argument: :func:`_closed_pair`,
#: :func:`_closed_single` and :func:`_closed_variance_derivative` are NaN for them everywhere, so
#: their kernels compile the quadrature alone. Every other built-in has closed forms (NaN only at
#: some derivative orders: erf's ``(0, 2)``, ...), so its kernels compile the closed forms alone
#: and the NaN entries are redone by quadrature (:func:`family_rule`, :func:`run_by_family`).
QUADRATURE_ONLY = (TANH, SIGMOID, SOFTPLUS, SWISH)


def family_rule(act: Activation, degree: int) -> tuple:
    """``(z, w, cf)`` of the first pass of a family-split kernel (for the cold start).

    A family-split kernel takes the quadrature rule ``z, w`` and a flag ``cf``, each either an
    array / int or ``None``, and evaluates ``v = closed form if cf is not None`` then ``quadrature
    if z is not None and v is NaN`` -- the operations of :func:`pair_value` / :func:`single_value`
    / :func:`variance_derivative_value`. Numba prunes, at compile time, the branch of an argument
    typed ``None``, so the kernel compiles one family only:

    * ``QUADRATURE_ONLY`` built-ins: ``(z, w, None)`` -- no closed forms compiled (they would all
      be NaN);
    * every other built-in: ``(None, None, closed_flag(act))`` -- no quadrature compiled, and only
      the closed forms of the activation's family (:data:`CLOSED_CORE`: linear, relu, leaky_relu,
      erf, hard_tanh; :data:`CLOSED_EXTENDED`: gelu and the issue-17 built-ins); an entry whose closed
      form is NaN (no closed form at that order or argument) must be redone with
      ``(z, w, None)``, which is what :func:`pair_value` would have returned there
      (:func:`run_by_family` does both passes).

    The numbers are therefore those of the kernels with both families, bit for bit
    (``benchmarks/cold_start_hashes.py``).
    """
    z, w = kernel_rule(degree)
    if act.code in QUADRATURE_ONLY:
        return z, w, None
    return None, None, closed_flag(act)


def closed_flag(act: Activation):
    """The ``cf`` of a closed-form built-in: :data:`CLOSED_CORE` or :data:`CLOSED_EXTENDED` by family."""
    return CLOSED_CORE if act.code in CORE_CLOSED else CLOSED_EXTENDED


def run_by_family(kernel, act: Activation, degree: int, args: tuple, out: np.ndarray) -> np.ndarray:
    """Fill ``out`` (1-D) with ``kernel(code, param, *args, z, w, cf, out)`` split by family.

    ``args`` are scalars and 1-D arrays of ``out``'s length (the per-entry inputs). The first pass
    uses :func:`family_rule`; for a closed-form family the entries left NaN are recomputed by a
    quadrature-only pass on those entries alone (the fallback of :func:`pair_value`).
    """
    z, w, cf = family_rule(act, degree)
    kernel(act.code, act.param, *args, z, w, cf, out)
    if z is None:
        redo = np.flatnonzero(np.isnan(out))
        if redo.size:
            zq, wq = kernel_rule(degree)
            sub = tuple(np.ascontiguousarray(x[redo]) if isinstance(x, np.ndarray) else x for x in args)
            part = np.empty(redo.size)
            kernel(act.code, act.param, *sub, zq, wq, None, part)
            out[redo] = part
    return out


# The kernels of the public wrappers, family-split (see family_rule): a kernel that compiles the
# closed forms and the quadrature costs ~2x the compile time of either.


@numba.njit(cache=True)
def _pair_kernel(code, a, d1, d2, q1, q2, c, z, w, cf, out):
    for k in range(out.size):
        v = math.nan
        if cf is not None:
            v = closed_pair_by(cf, code, a, d1, d2, q1[k], q2[k], c[k])
        if z is not None:
            if math.isnan(v):
                v = pair_quadrature(code, a, d1, d2, q1[k], q2[k], c[k], z, w)
        out[k] = v


@numba.njit(cache=True)
def _single_kernel(code, a, d1, d2, q, z, w, cf, out):
    for k in range(out.size):
        v = math.nan
        if cf is not None:
            v = closed_single_by(cf, code, a, d1, d2, q[k])
        if z is not None:
            if math.isnan(v):
                v = single_quadrature(code, a, d1, d2, q[k], z, w)
        out[k] = v


@numba.njit(cache=True)
def _variance_derivative_kernel(code, a, q, z, w, cf, out):
    for k in range(out.size):
        v = math.nan
        if cf is not None:
            v = closed_variance_derivative_by(cf, code, a, q[k])
        if z is not None:
            if math.isnan(v):
                v = variance_derivative_quadrature(code, a, q[k], z, w)
        out[k] = v


# ----------------------------------------------------------------------------------------------
# Public wrappers.


def _check_order(d):
    if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)):
        raise TypeError(f"derivatives must be a pair of integer orders in {{0, 1, 2}}, got an element {d!r}")
    d = int(d)
    if d not in (0, 1, 2):
        raise ValueError(f"derivatives must be a pair of orders in {{0, 1, 2}}, got an element {d}")
    return d


def _check_derivatives(act: Activation, derivatives):
    if isinstance(derivatives, (str, bytes)) or not hasattr(derivatives, "__len__") or len(derivatives) != 2:
        raise TypeError(f"derivatives must be a pair (d1, d2) of orders in {{0, 1, 2}}, got {derivatives!r}")
    d1, d2 = (_check_order(d) for d in derivatives)
    if 2 in (d1, d2) and not act.smooth and act.code not in (LINEAR,):
        raise ValueError(
            f"phi'' of {act.name} has a Dirac part: expectations with derivative order 2 are not "
            "defined pointwise (use variance_derivative for chi_q)"
        )
    return d1, d2


def _finish(out, shape, what, act):
    if not np.all(np.isfinite(out)):
        raise ValueError(
            f"{what} of activation {act.name!r} is not finite for some inputs: the result exceeds the float64 "
            "range at these variances"
        )
    return out.reshape(shape) if shape else float(out[0])


def _user_values(act, order, u):
    return call_user(act.derivative(order), u, ("phi", "dphi", "d2phi")[order], act.name)


def expectation(
    activation: str | Activation,
    q: float | ArrayLike,
    derivatives: tuple[int, int] = (0, 0),
    degree: int = DEFAULT_DEGREE,
) -> float | np.ndarray:
    r"""Single-variable Gaussian expectation :math:`\mathbb{E}\,\phi^{(d_1)}(u)\phi^{(d_2)}(u)`, :math:`u \sim N(0, q)`.

    Parameters
    ----------
    activation : str or Activation
    q : float or array_like
        Variances (>= 0, finite).
    derivatives : (int, int)
        Derivative orders (d1, d2) in {0, 1, 2}; ``(0, 0)`` is the second moment.
    degree : int
        Gauss-Hermite degree when no closed form exists (1 to 2000).

    Returns
    -------
    float or ndarray shaped like ``q``.

    Raises
    ------
    ValueError
        ``q`` negative or not finite; an order outside {0, 1, 2}; order 2 of a kinked activation;
        a user-defined activation returning NaN/inf; a result beyond the float64 range.
    TypeError
        Complex ``q``; non-integer orders.

    Notes
    -----
    Closed forms for linear, relu, leaky_relu, erf and hard_tanh (clipped Gaussian:
    :math:`E\min(u^2, 1) = q\,E[z^2 1\{|z| < 1/\sqrt q\}] + P(|z| \ge 1/\sqrt q)`,
    :math:`E\phi'^2 = \mathrm{erf}(1/\sqrt{2q})`); the rules of :func:`pair_value` otherwise.

    Examples
    --------
    >>> round(expectation("relu", 2.0), 12)   # E relu(u)^2 = q / 2
    1.0
    """
    act = get_activation(activation)
    d1, d2 = _check_derivatives(act, derivatives)
    q = check_nonnegative(q, "q", strict=True)
    qa = np.atleast_1d(np.asarray(q, dtype=np.float64))
    shape = np.shape(q)
    flat = np.ascontiguousarray(qa.reshape(-1))
    z, w = kernel_rule(degree)
    if act.is_builtin:
        out = run_by_family(_single_kernel, act, degree, (d1, d2, flat), np.empty_like(flat))
    elif act.breakpoints:
        out = _piecewise_single(act, d1, d2, flat, check_int(degree, "degree", minimum=1, maximum=2000))
    else:
        out = np.empty_like(flat)
        for k, qk in enumerate(flat):
            s = math.sqrt(qk)
            zo, wo = _rule_nodes(s, 0.0, True, 0.0, 0.0, 0.0, z, w)
            u = s * zo
            with np.errstate(over="ignore", invalid="ignore"):
                out[k] = wo @ (_user_values(act, d1, u) * _user_values(act, d2, u))
    return _finish(out, shape, "expectation", act)


def pair_expectation(
    activation: str | Activation,
    q1: float | ArrayLike,
    q2: float | ArrayLike,
    c: float | ArrayLike,
    derivatives: tuple[int, int] = (0, 0),
    degree: int = DEFAULT_DEGREE,
) -> float | np.ndarray:
    r"""Bivariate Gaussian expectation :math:`\mathbb{E}\,\phi^{(d_1)}(u_1)\phi^{(d_2)}(u_2)`.

    :math:`(u_1, u_2) \sim N(0, [[q_1, c\sqrt{q_1 q_2}], [c\sqrt{q_1 q_2}, q_2]])`. With
    ``derivatives=(0, 0)`` this is the integrand of the C-map (Poole et al. 2016, eq. 5; Xiao et al. 2018,
    eq. 2.5); with ``(1, 1)`` it gives chi_c (Xiao et al. 2018, eq. 2.7).

    Parameters
    ----------
    activation : str or Activation
    q1, q2 : float or array_like
        Variances (>= 0, finite); broadcast together with ``c``.
    c : float or array_like
        Correlations in [-1, 1].
    derivatives : (int, int)
        Derivative orders in {0, 1, 2}.
    degree : int
        Gauss-Hermite degree per dimension when no closed form exists (1 to 2000).

    Returns
    -------
    float or ndarray of the broadcast shape.

    Raises
    ------
    ValueError
        Negative or non-finite variances, ``|c| > 1``, bad orders, a user-defined activation
        returning NaN/inf, a result beyond the float64 range, shapes that do not broadcast.
    TypeError
        Complex arguments; non-integer orders.

    Notes
    -----
    hard_tanh has a closed form (:func:`_hard_tanh_pair`): the rectangle probability
    ``P(|u1| < 1, |u2| < 1)`` and, by Price's theorem, its integral over c, both as smooth
    one-dimensional integrals over theta = arcsin(t).

    Examples
    --------
    >>> import numpy as np
    >>> v = pair_expectation("relu", 1.0, 1.0, 0.0)       # arc-cosine kernel at c = 0: 1 / (2 pi)
    >>> bool(np.isclose(v, 1 / (2 * np.pi)))
    True
    """
    act = get_activation(activation)
    d1, d2 = _check_derivatives(act, derivatives)
    q1 = check_nonnegative(q1, "q1", strict=True)
    q2 = check_nonnegative(q2, "q2", strict=True)
    c = check_correlation(c, "c", strict=True)
    try:
        b1, b2, bc = np.broadcast_arrays(np.asarray(q1, float), np.asarray(q2, float), np.asarray(c, float))
    except ValueError as exc:
        raise ValueError(
            f"q1, q2 and c must broadcast together, got shapes {np.shape(q1)}, {np.shape(q2)}, {np.shape(c)}"
        ) from exc
    shape = b1.shape
    f1, f2, fc = (np.ascontiguousarray(x.reshape(-1)) for x in (b1, b2, bc))
    z, w = kernel_rule(degree)
    if act.is_builtin:
        out = run_by_family(_pair_kernel, act, degree, (d1, d2, f1, f2, fc), np.empty_like(f1))
    elif act.breakpoints:
        out = _piecewise_pair(act, d1, d2, f1, f2, fc, check_int(degree, "degree", minimum=1, maximum=2000))
    else:
        with np.errstate(over="ignore", invalid="ignore"):
            out = _custom_pair(act, d1, d2, f1, f2, fc, z, w)
    return _finish(out, shape, "pair_expectation", act)


#: Offset at which the one-sided derivatives of a user activation at a kink are evaluated.
_ONE_SIDED = 1e-300
#: Largest number of nodes the NumPy path of a user activation evaluates in one call.
_USER_CHUNK = 1 << 20


def _custom_pair(act, d1, d2, q1, q2, c, z, w):
    """NumPy path for user-defined activations, on the nodes the kernels use (see :func:`pair_value`)."""
    out = np.empty_like(q1)
    for k in range(q1.size):
        s1, s2, ck = math.sqrt(q1[k]), math.sqrt(q2[k]), min(1.0, max(-1.0, c[k]))
        sc = s2 * ck
        ss = s2 * math.sqrt(max(0.0, 1.0 - ck * ck))
        outer = max(s1, abs(sc))
        graded = outer > TRAPEZOID_MAX_SCALE or ss > TRAPEZOID_MAX_SCALE
        allow_gh = graded or (outer <= GH_MAX_SCALE and ss <= GH_MAX_SCALE)
        hw_extra, tail_extra, tail1 = _outer_features(s1, sc, ss, False)
        z1, w1 = _rule_nodes(outer, 0.0, allow_gh, tail1, hw_extra, tail_extra, z, w)
        f1 = _user_values(act, d1, s1 * z1)
        base = sc * z1
        if ss == 0.0:
            inner = _user_values(act, d2, base)
        elif not graded or ss <= TRAPEZOID_MAX_SCALE:
            z2, w2 = _rule_nodes(ss, 0.0, allow_gh, 0.0, 0.0, 0.0, z, w)
            inner = _user_values(act, d2, base[:, None] + ss * z2[None, :]) @ w2
        else:  # inner rules graded at the z2 where u2 = 0, one per outer node (chunked: memory)
            inner = np.empty(base.size)
            per_node = _rule_capacity(ss, 0.0, z.size)
            step = max(1, _USER_CHUNK // per_node)
            for lo in range(0, base.size, step):
                chunk = base[lo : lo + step]
                counts, z2, w2 = _inner_rules(ss, chunk, 0.0, z, w)
                vals = _user_values(act, d2, np.repeat(chunk, counts) + ss * z2) * w2
                inner[lo : lo + step] = np.add.reduceat(vals, np.concatenate(([0], np.cumsum(counts)[:-1])))
        out[k] = np.dot(w1, f1 * inner)
    return out


# ----------------------------------------------------------------------------------------------
# User activations with kinks or jumps (Activation.breakpoints): piecewise Gauss-Legendre rules.


def piecewise_panel_nodes(degree: int) -> int:
    """Gauss-Legendre nodes per panel of the piecewise rule of a kinked user activation at ``degree``.

    ``degree // 5`` clipped to [4, 200] (20 at the default degree 100): a larger degree refines
    every panel, so the result converges as ``degree`` grows.
    """
    return max(4, min(200, degree // 5))


@lru_cache(maxsize=64)
def _legendre(n):
    return np.polynomial.legendre.leggauss(n)


def _graded_offsets(hw):
    """0, +-hw 2^k below 1 (hw < 1): offsets of panel edges graded towards a feature."""
    d = [0.0]
    while hw < 1.0:
        d += [-hw, hw]
        hw *= 2.0
    return d


def _piecewise_rules(scale, mus, features, n):
    """Nodes z and weights w, shape (len(mus), P), with w[i] @ f(mus[i] + scale z[i]) ~ E f(mus[i] + scale Z).

    ``features`` lists ``(u, hw_u)``: points u where f has a kink or jump, or varies on the width
    hw_u in u. Panel edges: the integers on |z| <= TRAPEZOID_ZMAX, each feature's point (an edge:
    f is integrated piecewise between kinks) and edges graded geometrically (ratio 2) towards it
    from the half-width hw_u / scale up to 1; ``n`` Gauss-Legendre nodes per panel (edges beyond
    the range collapse into empty panels). Between the edges f is assumed smooth, so each panel
    converges spectrally in ``n``.
    """
    mus = np.atleast_1d(np.asarray(mus, dtype=np.float64))
    lim = TRAPEZOID_ZMAX
    if scale == 0.0:
        return np.zeros((mus.size, 1)), np.ones((mus.size, 1))
    cols = [np.broadcast_to(np.arange(-lim, lim + 1.0), (mus.size, 2 * int(lim) + 1))]
    for u, hw_u in features:
        off = np.asarray(_graded_offsets(max(hw_u / scale, 1e-12)))
        zc = (u - mus) / scale
        cols.append(zc[:, None] + off[None, :])
    e = np.sort(np.clip(np.concatenate(cols, axis=1), -lim, lim), axis=1)
    x, wl = _legendre(n)
    mid = 0.5 * (e[:, 1:] + e[:, :-1])
    half = 0.5 * (e[:, 1:] - e[:, :-1])
    z = (mid[:, :, None] + half[:, :, None] * x).reshape(mus.size, -1)
    w = (half[:, :, None] * wl).reshape(mus.size, -1) * _INV_SQRT_2PI * np.exp(-0.5 * z * z)
    return z, w


def _kink_features(act):
    """(u, half-width) of the features of a kinked user activation for :func:`_piecewise_rules`:
    u = 0 and its breakpoints, each with the unit-width structure the rules of the built-ins assume."""
    return [(0.0, 0.5)] + [(float(b), 0.5) for b in act.breakpoints if b != 0.0]


def _piecewise_single(act, d1, d2, q, degree, weight_z=False):
    n = piecewise_panel_nodes(degree)
    out = np.empty_like(q)
    for k, qk in enumerate(q):
        s = math.sqrt(qk)
        z, w = _piecewise_rules(s, 0.0, _kink_features(act), n)
        z, w = z[0], w[0]
        u = s * z
        with np.errstate(over="ignore", invalid="ignore"):
            vals = _user_values(act, d1, u) * _user_values(act, d2, u)
            out[k] = (w * z) @ vals / s if weight_z else w @ vals
    return out


def _piecewise_pair(act, d1, d2, q1, q2, c, degree):
    """E phi^(d1)(u1) phi^(d2)(u2) of a kinked user activation: the outer rule on z1 cut at the
    breakpoints of phi^(d1)(s1 z1) and graded at those of the smoothed factor E phi^(d2)(sc z1 + ss Z2)
    (width ss), inner rules on z2 cut at the breakpoints of phi^(d2), one per outer node."""
    n = piecewise_panel_nodes(degree)
    out = np.empty_like(q1)
    feats = _kink_features(act)
    for k in range(q1.size):
        s1, s2, ck = math.sqrt(q1[k]), math.sqrt(q2[k]), min(1.0, max(-1.0, c[k]))
        sc = s2 * ck
        ss = s2 * math.sqrt(max(0.0, (1.0 - ck) * (1.0 + ck)))
        outer = s1 if s1 > 0.0 else 1.0
        ofeats = list(feats) if s1 > 0.0 else []
        if sc != 0.0:  # the factor's features, at sc z1 = u, i.e. at outer * u / sc in units of outer z1
            rel = outer / sc
            # smoothed by the inner Gaussian, a kink of the factor has the width ss (for ss = 0 it is
            # an edge, next to the activation's own structure of unit width)
            ofeats += [(u * rel, (0.5 * ss if ss > 0.0 else hw) * abs(rel)) for u, hw in feats]
        z1, w1 = _piecewise_rules(outer, 0.0, ofeats, n)
        z1, w1 = z1[0], w1[0]
        with np.errstate(over="ignore", invalid="ignore"):
            f1 = _user_values(act, d1, s1 * z1)
            base = sc * z1
            if ss == 0.0:
                inner = _user_values(act, d2, base)
            else:
                z2, w2 = _piecewise_rules(ss, base, feats, n)
                used = w2 != 0.0  # nodes of collapsed panels (edges beyond |z| = 9) are not evaluated
                vals = np.zeros_like(z2)
                vals[used] = _user_values(act, d2, (base[:, None] + ss * z2)[used])
                inner = np.sum(w2 * vals, axis=1)
            out[k] = np.dot(w1, f1 * inner)
    return out


def variance_derivative(
    activation: str | Activation, q: float | ArrayLike, degree: int = DEFAULT_DEGREE
) -> float | np.ndarray:
    r"""The slope of the single-input variance integrand, :math:`\partial_q \mathbb{E}\,\phi(\sqrt{q} z)^2`.

    Computed as :math:`\mathbb{E}[z \phi(\sqrt q z)\phi'(\sqrt q z)] / \sqrt q`, which equals
    :math:`\mathbb{E}[\phi'(u)^2 + \phi(u)\phi''(u)]` (Stein's lemma; the printed form of chi_q
    in Xiao et al. 2018, eq. 2.7) but needs no second derivative, so it is also right for kinked
    activations. ``sigma_w2 * variance_derivative(act, q*)`` is chi_q*.

    Parameters
    ----------
    activation : str or Activation
    q : float or array_like
        Variances (>= 0, finite).
    degree : int
        Gauss-Hermite degree when no closed form exists (1 to 2000).

    Returns
    -------
    float or ndarray shaped like ``q``; at q = 0 the limit :math:`\phi'(0)^2 + \phi(0)\phi''(0)`.

    Raises
    ------
    ValueError
        ``q`` negative or not finite; a user-defined activation returning NaN/inf, or without
        ``d2phi`` at q = 0 when phi(0) != 0.
    TypeError
        Complex ``q``.
    """
    act = get_activation(activation)
    q = check_nonnegative(q, "q", strict=True)
    shape = np.shape(q)
    flat = np.ascontiguousarray(np.atleast_1d(np.asarray(q, dtype=np.float64)).reshape(-1))
    z, w = kernel_rule(degree)
    out = np.empty_like(flat)
    if act.is_builtin:
        run_by_family(_variance_derivative_kernel, act, degree, (flat,), out)
    else:
        for k, qk in enumerate(flat):
            if qk == 0.0:
                zero = np.zeros(1)
                phi0 = float(_user_values(act, 0, zero)[0])
                d1 = float(_user_values(act, 1, zero)[0])
                if phi0 == 0.0:
                    out[k] = d1 * d1
                elif act.d2phi is None:
                    raise ValueError(
                        f"variance_derivative at q = 0 of {act.name!r} needs phi''(0) (phi(0) != 0): "
                        "pass d2phi to Activation.from_functions"
                    )
                else:
                    out[k] = d1 * d1 + phi0 * float(_user_values(act, 2, zero)[0])
                if phi0 == 0.0 and 0.0 in act.breakpoints:  # kink at 0: the limit of both one-sided slopes
                    side = np.array([-_ONE_SIDED, _ONE_SIDED])
                    out[k] = float(np.mean(_user_values(act, 1, side) ** 2))
            elif act.breakpoints:
                out[k] = _piecewise_single(act, 0, 1, np.array([qk]), check_int(degree, "degree", 1, 2000), True)[0]
            else:
                s = math.sqrt(qk)
                zo, wo = _rule_nodes(s, 0.0, True, 0.0, 0.0, 0.0, z, w)
                with np.errstate(over="ignore", invalid="ignore"):
                    out[k] = np.sum(wo * zo * _user_values(act, 0, s * zo) * _user_values(act, 1, s * zo)) / s
    return _finish(out, shape, "variance_derivative", act)
