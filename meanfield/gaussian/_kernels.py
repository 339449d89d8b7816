"""Compiled quadrature kernels of the built-in activations (closed forms first, from :mod:`meanfield.activations`)."""

from __future__ import annotations

import math

import numba
import numpy as np
from numba.core import types
from numba.extending import overload

from ..activations import (
    ERF,
    HARD_TANH,
    TANH,
    evaluate,
    evaluate_call,
)
from ..activations._closed import (
    _closed_pair,
    _closed_single,
    _closed_variance_derivative,
    closed_pair_by,
    closed_single_by,
    closed_variance_derivative_by,
)
from ._rules import (
    _INV_SQRT_2PI_K,
    BUILTIN_TAIL_U,
    GH_MAX_SCALE,
    TRAPEZOID_MAX_SCALE,
    _fill_rule,
    _outer_features,
    _rule_capacity,
    _trapezoid_grid,
    _value_scale,
)


@numba.njit(cache=True)
def run_time_orders(code):
    """The derivative orders 0, 1, 2 as run-time integers (``code`` is any run-time int).

    Numba specialises a compiled function on every distinct literal argument: calls with the
    constants 0 and 1 compiled ``pair_value`` and everything below it twice, ``evaluate`` three
    times (``benchmarks/bench_cold_start.py``). Kernels pass these instead of literals.
    """
    zero = code - code
    return zero, zero + 1, zero + 2


def graded_status(cf):
    """The status array of a first-tier ``cf`` (:func:`meanfield.activations._quadrature.first_tier`), else None (Numba only)."""
    raise NotImplementedError("graded_status is called from compiled kernels only")


# The first tier of the quadrature (cf an int64 array) compiles no graded rule: each graded
# function below is an overload that, when its ``st`` is an array, compiles to "st[0] = 1, NaN",
# and when ``st`` is None to the rule (Numba's dead-branch pruning removes a branch only for an
# argument typed None, so an ``st is not None`` test would still compile the rule). The caller
# redoes a call that set st[0] with ``cf`` None.
@overload(graded_status, inline="always")
def _graded_status(cf):
    if isinstance(cf, types.Array):
        return lambda cf: cf
    return lambda cf: None


# ----------------------------------------------------------------------------------------------
# Quadrature kernels (built-in activations).


def _pair_graded(st, code, a, d1, d2, s1, s2, sc, ss, outer_scale, z, w):
    """E_2 beyond TRAPEZOID_MAX_SCALE (:func:`_pair_graded_rule`); NaN and ``st[0] = 1`` where ``st`` is an array (Numba only)."""
    raise NotImplementedError("_pair_graded is called from compiled kernels only")


def _pair_graded_rule(st, code, a, d1, d2, s1, s2, sc, ss, outer_scale, z, w):
    """E_2 when a scale exceeds TRAPEZOID_MAX_SCALE: the outer rule on z1 graded at 0 (for f1 and
    for the smoothed factor E f2(sc z1 + ss Z2)), inner rules on z2 graded at the z2 where u2 = 0
    (rebuilt per outer node when the inner scale is large). ``st`` is None (compiled for
    :func:`_pair_graded` only)."""
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
    return pair_quadrature(code, a, d1, d2, q1, q2, c, z, w, None)


@numba.njit(inline="always")
def pair_quadrature(code, a, d1, d2, q1, q2, c, z, w, st):
    """:func:`pair_value` without the closed forms (inlined: one compiled copy per caller, and a
    kernel that needs only quadrature does not compile the closed forms); ``st`` as
    :func:`_pair_graded`'s."""
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
        return _pair_graded(st, code, a, d1, d2, s1, s2, sc, ss, outer_scale, z, w)
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
    h1, k1 = _trapezoid_grid(outer_scale)
    h2, k2 = _trapezoid_grid(ss)
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
    return single_quadrature(code, a, d1, d2, q, z, w, None)


@numba.njit(inline="always")
def single_quadrature(code, a, d1, d2, q, z, w, st):
    """:func:`single_value` without the closed forms (inlined, as :func:`pair_quadrature`; ``st`` as its)."""
    s = math.sqrt(q)
    acc = 0.0
    if s <= GH_MAX_SCALE:
        for i in range(z.size):
            u = s * z[i]
            acc += w[i] * evaluate(code, a, d1, u) * evaluate(code, a, d2, u)
        return acc
    if s <= TRAPEZOID_MAX_SCALE:
        h, k = _trapezoid_grid(s)
        for i in range(-k, k + 1):
            zi = i * h
            u = s * zi
            acc += h * _INV_SQRT_2PI_K * math.exp(-0.5 * zi * zi) * evaluate(code, a, d1, u) * evaluate(code, a, d2, u)
        return acc
    return _single_graded(st, code, a, d1, d2, s, z, w)


def _single_graded_rule(st, code, a, d1, d2, s, z, w):
    """E_1 at sqrt(q) = s > TRAPEZOID_MAX_SCALE: graded Gauss-Legendre panels (``st`` is None: compiled for :func:`_single_graded` only)."""
    acc = 0.0
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
    return variance_derivative_quadrature(code, a, q, z, w, None)


@numba.njit(inline="always")
def variance_derivative_quadrature(code, a, q, z, w, st):
    """:func:`variance_derivative_value` without the closed forms (inlined, as :func:`pair_quadrature`; ``st`` as its)."""
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
        h, k = _trapezoid_grid(s)
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
    return _variance_derivative_graded(st, code, a, s, z, w)


def _variance_derivative_graded_rule(st, code, a, s, z, w):
    """:func:`variance_derivative_value` at sqrt(q) = s > TRAPEZOID_MAX_SCALE (``st`` is None: for :func:`_variance_derivative_graded` only)."""
    o0, o1, _o2 = run_time_orders(code)  # run-time 0, 1, 2: literal arguments compile extra specialisations
    acc = 0.0
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
def excess_value(code, a, which, q, z, w, st):
    r"""The ReLU-like activations' departure from ReLU: :math:`E[\phi(u)^2] - q/2` (``which`` 0) or
    :math:`\partial_q E\phi(\sqrt q z)^2 - 1/2` (``which`` 1), integrated as one localised
    integrand, so there is no cancellation between two numbers of size q (the q* solver needs
    these at q ~ 1e14, where q/2 - E phi^2 ~ 1e-7 while E phi^2 itself carries an error ~ 0.1).
    Rules by sqrt(q) as in :func:`single_value`; ``st`` as :func:`_pair_graded`'s."""
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
        h, k = _trapezoid_grid(s)
        for i in range(-k, k + 1):
            zi = i * h
            acc += h * _INV_SQRT_2PI_K * math.exp(-0.5 * zi * zi) * _excess_integrand(code, a, which, s, zi)
        return acc
    return _excess_graded(st, code, a, which, s, z, w)


def _excess_graded_rule(st, code, a, which, s, z, w):
    """:func:`excess_value` at sqrt(q) = s > TRAPEZOID_MAX_SCALE (``st`` is None: for :func:`_excess_graded` only)."""
    acc = 0.0
    zo = np.empty(_rule_capacity(s, 0.0, z.size))
    wo = np.empty(zo.size)
    n = _fill_rule(s, 0.0, z.size < 0, BUILTIN_TAIL_U / s, 0.0, 0.0, z, w, zo, wo)
    for i in range(n):
        acc += wo[i] * _excess_integrand(code, a, which, s, zo[i])
    return acc


# The graded rule of each kernel, by the type of ``st`` (graded_status): an array (the first tier)
# compiles "st[0] = 1, NaN" and none of the rule; None compiles the rule, once (an inlined
# overload is compiled on its own and again inside every caller: it cost more than it saved).
def _single_graded(st, code, a, d1, d2, s, z, w):
    raise NotImplementedError("called from compiled kernels only")


def _variance_derivative_graded(st, code, a, s, z, w):
    raise NotImplementedError("called from compiled kernels only")


def _excess_graded(st, code, a, which, s, z, w):
    raise NotImplementedError("called from compiled kernels only")


@overload(_pair_graded)
def _pair_graded_by_tier(st, code, a, d1, d2, s1, s2, sc, ss, outer_scale, z, w):
    if isinstance(st, types.Array):

        def flag(st, code, a, d1, d2, s1, s2, sc, ss, outer_scale, z, w):
            st[0] = 1
            return math.nan

        return flag
    return _pair_graded_rule


@overload(_single_graded)
def _single_graded_by_tier(st, code, a, d1, d2, s, z, w):
    if isinstance(st, types.Array):

        def flag(st, code, a, d1, d2, s, z, w):
            st[0] = 1
            return math.nan

        return flag
    return _single_graded_rule


@overload(_variance_derivative_graded)
def _variance_derivative_graded_by_tier(st, code, a, s, z, w):
    if isinstance(st, types.Array):

        def flag(st, code, a, s, z, w):
            st[0] = 1
            return math.nan

        return flag
    return _variance_derivative_graded_rule


@overload(_excess_graded)
def _excess_graded_by_tier(st, code, a, which, s, z, w):
    if isinstance(st, types.Array):

        def flag(st, code, a, which, s, z, w):
            st[0] = 1
            return math.nan

        return flag
    return _excess_graded_rule


# The scalar kernels of one family (see family_rule): the closed forms where ``cf`` is given, the
# quadrature where ``z`` is given and the closed form is NaN (Numba prunes a branch whose argument
# is typed None). Compiled once and called by the public wrappers' array kernels and by the
# fixed-point solvers, so a process that chains them (cmap, critical_sigma_w2) compiles each
# quadrature tree once instead of once per kernel it is inlined into. A kernel that compiles
# the closed forms and the quadrature costs ~2x the compile time of either.


@numba.njit(cache=True)
def pair_by_family(code, a, d1, d2, q1, q2, c, z, w, cf):
    """:func:`pair_value` with the branches chosen by the types of ``z`` and ``cf`` (:func:`family_rule`)."""
    v = math.nan
    if cf is not None:
        v = closed_pair_by(cf, code, a, d1, d2, q1, q2, c)
    if z is not None:
        if math.isnan(v):
            v = pair_quadrature(code, a, d1, d2, q1, q2, c, z, w, graded_status(cf))
    return v


@numba.njit(cache=True)
def single_by_family(code, a, d1, d2, q, z, w, cf):
    """:func:`single_value` with the branches chosen by the types of ``z`` and ``cf`` (:func:`family_rule`)."""
    v = math.nan
    if cf is not None:
        v = closed_single_by(cf, code, a, d1, d2, q)
    if z is not None:
        if math.isnan(v):
            v = single_quadrature(code, a, d1, d2, q, z, w, graded_status(cf))
    return v


@numba.njit(cache=True)
def variance_derivative_by_family(code, a, q, z, w, cf):
    """:func:`variance_derivative_value` with the branches chosen by the types of ``z`` and ``cf``."""
    v = math.nan
    if cf is not None:
        v = closed_variance_derivative_by(cf, code, a, q)
    if z is not None:
        if math.isnan(v):
            v = variance_derivative_quadrature(code, a, q, z, w, graded_status(cf))
    return v


@numba.njit(cache=True)
def _pair_kernel(code, a, d1, d2, q1, q2, c, z, w, cf, out):
    for k in range(out.size):
        out[k] = pair_by_family(code, a, d1, d2, q1[k], q2[k], c[k], z, w, cf)


@numba.njit(cache=True)
def _single_kernel(code, a, d1, d2, q, z, w, cf, out):
    for k in range(out.size):
        out[k] = single_by_family(code, a, d1, d2, q[k], z, w, cf)


@numba.njit(cache=True)
def _variance_derivative_kernel(code, a, q, z, w, cf, out):
    for k in range(out.size):
        out[k] = variance_derivative_by_family(code, a, q[k], z, w, cf)
