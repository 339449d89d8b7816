"""The quadrature rules of the Gaussian expectations: Gauss-Hermite, trapezoid or graded Gauss-Legendre panels by the scale of the integrand (:func:`_fill_rule`)."""

from __future__ import annotations

import math

import numba
import numpy as np

from ..activations import (
    ELU,
    GELU,
    SELU,
    SOFTPLUS,
    SWISH,
)

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
def _trapezoid_grid(scale):
    """``(h, k)``: the trapezoid rule's nodes ``z_i = i h``, ``|i| <= k``, cover ``|z| <= TRAPEZOID_ZMAX``
    at the step ``h`` of :func:`_trapezoid_step`."""
    h = _trapezoid_step(scale)
    return h, int(TRAPEZOID_ZMAX / h) + 1


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
        h, k = _trapezoid_grid(scale)
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
