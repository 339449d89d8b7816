r"""Gaussian expectations of activations: closed forms first, Gauss-Hermite quadrature otherwise.

The quantities every mean-field map is built from:

.. math::

    E_1^{(d_1, d_2)}(q) = \mathbb{E}_{u \sim N(0, q)}\, \phi^{(d_1)}(u)\, \phi^{(d_2)}(u),

    E_2^{(d_1, d_2)}(q_1, q_2, c) = \mathbb{E}\, \phi^{(d_1)}(u_1)\, \phi^{(d_2)}(u_2), \quad
    (u_1, u_2) \sim N\!\left(0, \begin{pmatrix} q_1 & c\sqrt{q_1 q_2} \\ c\sqrt{q_1 q_2} & q_2 \end{pmatrix}\right),

with derivative orders :math:`d_i \in \{0, 1, 2\}`, and
:math:`\partial_q \mathbb{E}\,\phi(\sqrt{q} z)^2 = \mathbb{E}[u \phi(u) \phi'(u)] / q` (Stein's lemma;
it needs only first derivatives, so it is exact for kinked activations too).

Closed forms (never quadrature): ``linear``; ``relu`` and ``leaky_relu`` through the arc-cosine
kernel of Cho & Saul (2009); ``erf`` through the arcsine kernel of Williams (1997). Everything
else uses probabilists' Gauss-Hermite rules (built once per degree and cached) in Numba kernels:
:math:`u_1 = \sqrt{q_1} z_1`, :math:`u_2 = \sqrt{q_2}(c z_1 + \sqrt{1 - c^2} z_2)` on the tensor rule.

Accuracy of the default rules: largest absolute error of E_2 against an independent fine trapezoid
rule (``benchmarks/gaussian_accuracy.py`` regenerates the table; ``tests/test_gaussian.py`` pins
it against scipy's adaptive quadrature) over a grid of q1, q2 in [0.01, q_max] and
c in {-0.9, -0.3, 0.5, 0.95}:

===========  ===========  ============  =============
activation   q_max = 1    q_max = 10    q_max = 100
===========  ===========  ============  =============
tanh         4e-16        7e-14         4e-13
sigmoid      2e-16        4e-14         2e-13
softplus     3e-16        5e-13         2e-11
swish        6e-17        4e-13         2e-11
gelu         6e-17        5e-13         2e-11
hard_tanh    2e-3         6e-4          2e-3
===========  ===========  ============  =============

Gauss-Hermite of degree :data:`DEFAULT_DEGREE` (= 100) is used while every scale of the integrand
in z is at most ``GH_MAX_SCALE``; beyond, tanh(sqrt(q) z) and its relatives vary on the scale
1/sqrt(q) in z, their complex singularities approach the real axis and Gauss-Hermite (whose node
spacing near 0 is fixed by the degree) converges slowly, so a trapezoid rule with a step resolving
unit-width features in u takes over (spectrally convergent for analytic integrands). Quadrature is
*not recommended* for kinked activations without a closed form (``hard_tanh``): the error decays
only like the first power of the step.

References
----------
Poole et al. (2016), "Exponential expressivity in deep neural networks through transient chaos".
Cho & Saul (2009), "Kernel methods for deep learning". Williams (1997), "Computing with infinite
networks".
"""

from __future__ import annotations

import math
from functools import lru_cache

import numba
import numpy as np
from scipy.special import roots_hermitenorm

from ._checks import check_correlation, check_int, check_nonnegative
from .activations import ERF, HARD_TANH, LEAKY_RELU, LINEAR, RELU, TANH, Activation, evaluate, get_activation

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


def kernel_rule(degree: int = DEFAULT_DEGREE):
    """The pruned rule the kernels integrate with: :func:`hermite_rule` less nodes of weight < PRUNE_WEIGHT."""
    degree = check_int(degree, "degree", 1, 2000)
    return _kernel_rule(degree)


def hermite_rule(degree: int = DEFAULT_DEGREE):
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
def _acos_terms(c):
    c = min(1.0, max(-1.0, c))
    theta = math.acos(c)
    return theta, math.sqrt(max(0.0, 1.0 - c * c))


@numba.njit(cache=True)
def _closed_pair(code, a, d1, d2, q1, q2, c):
    """E phi^(d1)(u1) phi^(d2)(u2) in closed form, or NaN."""
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
    return math.nan


@numba.njit(cache=True)
def _closed_single(code, a, d1, d2, q):
    """E phi^(d1)(u) phi^(d2)(u), u ~ N(0, q), in closed form, or NaN."""
    if code == ERF:
        if d1 + d2 == 0:
            return (2.0 / math.pi) * math.asin(2.0 * q / (1.0 + 2.0 * q))
        if d1 == 1 and d2 == 1:
            return (4.0 / math.pi) / math.sqrt(1.0 + 4.0 * q)
        if d1 + d2 == 1:
            return 0.0
        return math.nan
    return _closed_pair(code, a, d1, d2, q, q, 1.0)


@numba.njit(cache=True)
def _closed_variance_derivative(code, a, q):
    """d/dq E phi(sqrt(q) z)^2 in closed form, or NaN."""
    if code == LINEAR:
        return 1.0
    if code == RELU:
        return 0.5
    if code == LEAKY_RELU:
        return 0.5 * (1.0 + a * a)
    if code == ERF:
        return 4.0 / (math.pi * (1.0 + 2.0 * q) * math.sqrt(1.0 + 4.0 * q))
    return math.nan


# ----------------------------------------------------------------------------------------------
# Quadrature kernels (built-in activations).


#: Step, in units of the activation's argument u, of the trapezoid rule used when a variance
#: exceeds 1 (see :func:`pair_value`): for phi analytic in the strip |Im u| < pi/2 (tanh; sigmoid,
#: softplus, swish: pi; erf, gelu: entire) the error is ~ exp(-2 pi (pi/2) / TRAPEZOID_STEP) = 7e-18.
TRAPEZOID_STEP = 0.25
#: Half-width of the trapezoid rule in standard units: P(|z| > 9) = 2e-19.
TRAPEZOID_ZMAX = 9.0
_INV_SQRT_2PI_K = 1.0 / math.sqrt(2.0 * math.pi)
#: Largest scale sqrt(q) of an integrand in z handled by Gauss-Hermite; above it, the trapezoid
#: rule (measured: Gauss-Hermite 100 reaches 6e-12 for E tanh^2 at q = 1 but 5e-17 at q = 0.3).
GH_MAX_SCALE = 0.5


@numba.njit(cache=True)
def _trapezoid_step(scale):
    """Step in z resolving features of unit width in u = scale * z (at most TRAPEZOID_STEP)."""
    return TRAPEZOID_STEP / max(scale, 1.0)


@numba.njit(cache=True)
def pair_value(code, a, d1, d2, q1, q2, c, z, w):
    """E_2 for one (q1, q2, c): closed form if any, else quadrature.

    Gauss-Hermite on the rule (z, w) when every scale of the integrand in z is <= GH_MAX_SCALE; otherwise a
    trapezoid rule whose step resolves the activation's unit-width features (Gauss-Hermite's node
    spacing near 0 is fixed by the degree and misses them once sqrt(q) >> 1).
    """
    v = _closed_pair(code, a, d1, d2, q1, q2, c)
    if not math.isnan(v):
        return v
    s1 = math.sqrt(q1)
    s2 = math.sqrt(q2)
    c = min(1.0, max(-1.0, c))
    sc = s2 * c
    ss = s2 * math.sqrt(max(0.0, 1.0 - c * c))
    odd = code == TANH or code == HARD_TANH
    if odd and (d1 + d2) % 2 == 1:
        return 0.0  # phi odd: the integrand has parity (-1)^(d1 + d2) under z -> -z
    outer_scale = max(s1, abs(sc))
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
    """E_1 for one q (Gauss-Hermite for sqrt(q) <= GH_MAX_SCALE, else the trapezoid rule of pair_value)."""
    v = _closed_single(code, a, d1, d2, q)
    if not math.isnan(v):
        return v
    s = math.sqrt(q)
    acc = 0.0
    if s <= GH_MAX_SCALE:
        for i in range(z.size):
            u = s * z[i]
            acc += w[i] * evaluate(code, a, d1, u) * evaluate(code, a, d2, u)
        return acc
    h = _trapezoid_step(s)
    k = int(TRAPEZOID_ZMAX / h) + 1
    for i in range(-k, k + 1):
        zi = i * h
        u = s * zi
        acc += h * _INV_SQRT_2PI_K * math.exp(-0.5 * zi * zi) * evaluate(code, a, d1, u) * evaluate(code, a, d2, u)
    return acc


@numba.njit(cache=True)
def variance_derivative_value(code, a, q, z, w):
    """d/dq E phi(sqrt(q) z)^2 = E[z phi(u) phi'(u)] / sqrt(q); at q = 0 the limit phi'(0)^2 + phi(0) phi''(0)."""
    v = _closed_variance_derivative(code, a, q)
    if not math.isnan(v):
        return v
    if q == 0.0:
        return evaluate(code, a, 1, 0.0) ** 2 + evaluate(code, a, 0, 0.0) * evaluate(code, a, 2, 0.0)
    s = math.sqrt(q)
    acc = 0.0
    if s <= GH_MAX_SCALE:
        for i in range(z.size):
            u = s * z[i]
            acc += w[i] * z[i] * evaluate(code, a, 0, u) * evaluate(code, a, 1, u)
        return acc / s
    h = _trapezoid_step(s)
    k = int(TRAPEZOID_ZMAX / h) + 1
    for i in range(-k, k + 1):
        zi = i * h
        u = s * zi
        acc += h * _INV_SQRT_2PI_K * math.exp(-0.5 * zi * zi) * zi * evaluate(code, a, 0, u) * evaluate(code, a, 1, u)
    return acc / s


@numba.njit(cache=True)
def _pair_kernel(code, a, d1, d2, q1, q2, c, z, w, out):
    for k in range(out.size):
        out[k] = pair_value(code, a, d1, d2, q1[k], q2[k], c[k], z, w)


@numba.njit(cache=True)
def _single_kernel(code, a, d1, d2, q, z, w, out):
    for k in range(out.size):
        out[k] = single_value(code, a, d1, d2, q[k], z, w)


@numba.njit(cache=True)
def _variance_derivative_kernel(code, a, q, z, w, out):
    for k in range(out.size):
        out[k] = variance_derivative_value(code, a, q[k], z, w)


# ----------------------------------------------------------------------------------------------
# Public wrappers.


def _check_derivatives(act: Activation, derivatives):
    try:
        d1, d2 = (int(d) for d in derivatives)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"derivatives must be a pair of orders in {{0, 1, 2}}, got {derivatives!r}") from exc
    if d1 not in (0, 1, 2) or d2 not in (0, 1, 2):
        raise ValueError(f"derivatives must be a pair of orders in {{0, 1, 2}}, got {derivatives!r}")
    if 2 in (d1, d2) and not act.smooth and act.code not in (LINEAR,):
        raise ValueError(
            f"phi'' of {act.name} has a Dirac part: expectations with derivative order 2 are not "
            "defined pointwise (use variance_derivative for chi_q)"
        )
    return d1, d2


def _finish(out, shape, what):
    if not np.all(np.isfinite(out)):
        raise FloatingPointError(f"{what} is not finite for some inputs (overflow in the activation?)")
    return out.reshape(shape) if shape else float(out[0])


def expectation(activation, q, derivatives=(0, 0), degree: int = DEFAULT_DEGREE):
    r"""Single-variable Gaussian expectation :math:`\mathbb{E}\,\phi^{(d_1)}(u)\phi^{(d_2)}(u)`, :math:`u \sim N(0, q)`.

    Parameters
    ----------
    activation : str or Activation
    q : float or array_like
        Variances (>= 0).
    derivatives : (int, int)
        Derivative orders (d1, d2) in {0, 1, 2}; ``(0, 0)`` is the second moment.
    degree : int
        Gauss-Hermite degree when no closed form exists.

    Returns
    -------
    float or ndarray shaped like ``q``.

    Examples
    --------
    >>> round(expectation("relu", 2.0), 12)   # E relu(u)^2 = q / 2
    1.0
    """
    act = get_activation(activation)
    d1, d2 = _check_derivatives(act, derivatives)
    q = check_nonnegative(q, "q")
    qa = np.atleast_1d(np.asarray(q, dtype=np.float64))
    shape = np.shape(q)
    flat = np.ascontiguousarray(qa.reshape(-1))
    z, w = kernel_rule(degree)
    if act.is_builtin:
        out = np.empty_like(flat)
        _single_kernel(act.code, act.param, d1, d2, flat, z, w, out)
    else:
        u = np.sqrt(flat)[:, None] * z[None, :]
        out = (act.derivative(d1)(u) * act.derivative(d2)(u)) @ w
    return _finish(out, shape, "expectation")


def pair_expectation(activation, q1, q2, c, derivatives=(0, 0), degree: int = DEFAULT_DEGREE):
    r"""Bivariate Gaussian expectation :math:`\mathbb{E}\,\phi^{(d_1)}(u_1)\phi^{(d_2)}(u_2)`.

    :math:`(u_1, u_2) \sim N(0, [[q_1, c\sqrt{q_1 q_2}], [c\sqrt{q_1 q_2}, q_2]])`. With
    ``derivatives=(0, 0)`` this is the integrand of the C-map (Poole et al. 2016, eq. 5; seed 003,
    eq. 2.5); with ``(1, 1)`` it gives chi_c (seed 003, eq. 2.7).

    Parameters
    ----------
    activation : str or Activation
    q1, q2 : float or array_like
        Variances (>= 0); broadcast together with ``c``.
    c : float or array_like
        Correlations in [-1, 1].
    derivatives : (int, int)
        Derivative orders in {0, 1, 2}.
    degree : int
        Gauss-Hermite degree per dimension when no closed form exists.

    Returns
    -------
    float or ndarray of the broadcast shape.

    Examples
    --------
    >>> import numpy as np
    >>> v = pair_expectation("relu", 1.0, 1.0, 0.0)       # arc-cosine kernel at c = 0: 1 / (2 pi)
    >>> bool(np.isclose(v, 1 / (2 * np.pi)))
    True
    """
    act = get_activation(activation)
    d1, d2 = _check_derivatives(act, derivatives)
    q1 = check_nonnegative(q1, "q1")
    q2 = check_nonnegative(q2, "q2")
    c = check_correlation(c, "c")
    b1, b2, bc = np.broadcast_arrays(np.asarray(q1, float), np.asarray(q2, float), np.asarray(c, float))
    shape = b1.shape
    f1, f2, fc = (np.ascontiguousarray(x.reshape(-1)) for x in (b1, b2, bc))
    z, w = kernel_rule(degree)
    if act.is_builtin:
        out = np.empty_like(f1)
        _pair_kernel(act.code, act.param, d1, d2, f1, f2, fc, z, w, out)
    else:
        out = _custom_pair(act, d1, d2, f1, f2, fc, z, w)
    return _finish(out, shape, "pair_expectation")


def _custom_pair(act, d1, d2, q1, q2, c, z, w):
    """Uncached NumPy tensor-rule path for user-defined activations (chunked over inputs)."""
    g1, g2 = act.derivative(d1), act.derivative(d2)
    out = np.empty_like(q1)
    zi, zj = z[:, None], z[None, :]
    ww = w[:, None] * w[None, :]
    for k in range(q1.size):
        s1, s2, ck = math.sqrt(q1[k]), math.sqrt(q2[k]), min(1.0, max(-1.0, c[k]))
        u1 = s1 * zi
        u2 = s2 * (ck * zi + math.sqrt(max(0.0, 1.0 - ck * ck)) * zj)
        out[k] = np.sum(ww * g1(u1) * g2(u2))
    return out


def variance_derivative(activation, q, degree: int = DEFAULT_DEGREE):
    r"""The slope of the single-input variance integrand, :math:`\partial_q \mathbb{E}\,\phi(\sqrt{q} z)^2`.

    Computed as :math:`\mathbb{E}[z \phi(\sqrt q z)\phi'(\sqrt q z)] / \sqrt q`, which equals
    :math:`\mathbb{E}[\phi'(u)^2 + \phi(u)\phi''(u)]` (Stein's lemma; the printed form of chi_q
    in seed 003, eq. 2.7) but needs no second derivative, so it is also right for kinked
    activations. ``sigma_w2 * variance_derivative(act, q*)`` is chi_q*.

    Parameters
    ----------
    activation : str or Activation
    q : float or array_like
        Variances (>= 0).
    degree : int
        Gauss-Hermite degree when no closed form exists.
    """
    act = get_activation(activation)
    q = check_nonnegative(q, "q")
    shape = np.shape(q)
    flat = np.ascontiguousarray(np.atleast_1d(np.asarray(q, dtype=np.float64)).reshape(-1))
    z, w = kernel_rule(degree)
    if act.is_builtin:
        out = np.empty_like(flat)
        _variance_derivative_kernel(act.code, act.param, flat, z, w, out)
    else:
        out = np.empty_like(flat)
        for k, qk in enumerate(flat):
            if qk == 0.0:
                d2 = act.d2phi(0.0) if act.d2phi is not None else 0.0
                out[k] = float(act.dphi(0.0)) ** 2 + float(act.phi(0.0)) * float(d2)
            else:
                s = math.sqrt(qk)
                out[k] = np.sum(w * z * act.phi(s * z) * act.dphi(s * z)) / s
    return _finish(out, shape, "variance_derivative")


