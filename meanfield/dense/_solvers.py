"""Compiled solvers of the fixed points q*, c* and their chi's (the kernels of :func:`meanfield.dense.fixed_point`)."""

from __future__ import annotations

import math

import numba
import numpy as np

from .._logscale import (
    CLOSED_C_MAP,
    QUADRATURE_C_MAP,
    full_rule,
)
from .._tanh_fused import tanh_pair_moments, tanh_variance_moments
from ..activations import (
    GELU,
    LEAKY_RELU,
    LINEAR,
    RELU,
    SOFTPLUS,
    SWISH,
    TANH,
    asymptotic_derivative_moment,
    asymptotic_slope,
    bound_squared,
    origin_slopes,
)
from ..gaussian import (
    closed_flag,
    excess_value,
    first_tier,
    graded_status,
    kernel_rule,
    pair_by_family,
    run_time_orders,
    single_by_family,
    variance_derivative_by_family,
)
from ._common import _Q_PROBE, _Q_START_UNSTABLE, Q_ASYMPTOTIC, Q_SCAN_MAX, SOLVER_RTOL

# ----------------------------------------------------------------------------------------------
# Fixed points, chi's and depth scales.


#: Activations whose fixed-point quantities (E phi^2, E phi'^2, the c-map and its slope,
#: d/dq E phi^2) all have closed forms: their fixed-point kernels are compiled without the
#: quadrature (gelu is not here: its q-map residual is the quadrature of :func:`excess_value`).
_FP_CLOSED = tuple(code for code in CLOSED_C_MAP if code != GELU)


def _fp_rule(act, degree):
    """``(z, w, cf, ex)`` of the fixed-point kernels, the family split of :func:`kernel_rule_for`.

    Closed-form families ``(None, None, 0)`` (the quadrature is not compiled), the quadrature
    ones ``(z, w, None)`` (the closed forms are not compiled), gelu both; ``ex`` is 0 for the
    ReLU-like activations, whose q-map residual is :func:`excess_value`, None for the others
    (not compiled). The numbers are the
    same as with both branches (the closed forms of the first family are never NaN where the
    solvers evaluate them, and those of the second always are); the first call of
    :func:`fixed_point` compiles about half as much (benchmarks/bench_cold_start.py).
    """
    z, w = kernel_rule(degree)
    ex = 0 if act.code in (SOFTPLUS, SWISH, GELU) else None
    if act.code in _FP_CLOSED:
        return None, None, closed_flag(act), ex  # only the family's closed forms (gaussian.family_rule)
    if act.code in QUADRATURE_C_MAP:
        return z, w, first_tier(), ex  # the graded rule compiled on first need (gaussian.first_tier)
    return z, w, closed_flag(act), ex


def _fp_full_rule(act, degree):
    """:func:`_fp_rule` with both families (closed forms with the quadrature fallback)."""
    z, w, cf = full_rule(degree)
    return z, w, cf, 0 if act.code in (SOFTPLUS, SWISH, GELU) else None


# E_1, E_2 and d/dq E_1 of one family: the kernels of meanfield.gaussian (one compiled copy in a
# process that also calls the Gaussian expectations or the covariance maps).
_e1 = single_by_family
_e2 = pair_by_family
_dq = variance_derivative_by_family


@numba.njit(cache=True)
def _g(code, a, sw, sb, q, z, w, cf, ex):
    """q-map residual g(q) = qmap(q) - q and its slope g'(q).

    For the ReLU-like activations, g = (sw / 2 - 1) q + sb + sw (E phi^2 - q / 2) with the last
    term integrated as one localised integrand: at large q, sw E phi^2 - q cancels to a few ulps
    of q, which would swamp sb (and decide q* by rounding when sw / 2 = 1).
    """
    o0, o1, _o2 = run_time_orders(code)  # run-time 0, 1, 2: literal arguments compile extra specialisations
    if ex is not None:  # softplus, swish and gelu (see _fp_rule)
        if code == SOFTPLUS or code == SWISH or code == GELU:
            st = graded_status(cf)
            val = (0.5 * sw - 1.0) * q + sb + sw * excess_value(code, a, o0, q, z, w, st)
            slope = (0.5 * sw - 1.0) + sw * excess_value(code, a, o1, q, z, w, st)
            return val, slope
    if z is not None:  # quadrature families only (pruned at compile time for the closed-form ones)
        if code == TANH:  # both integrals in one pass, bit-identical (meanfield._tanh_fused)
            e, d = tanh_variance_moments(q, z, w)
            if not math.isnan(e):
                return sw * e + sb - q, sw * d - 1.0
    val = sw * _e1(code, a, o0, o0, q, z, w, cf) + sb - q
    slope = sw * _dq(code, a, q, z, w, cf) - 1.0
    return val, slope


@numba.njit(cache=True)
def _newton_q(code, a, sw, sb, lo, hi, z, w, cf, ex):
    """The root of g in [lo, hi] with g(lo) > 0 >= g(hi): safeguarded Newton from hi (200 steps at most)."""
    x = hi
    for _ in range(200):
        val, slope = _g(code, a, sw, sb, x, z, w, cf, ex)
        if val > 0.0:
            lo = x
        else:
            hi = x
        nx = x - val / slope if slope < 0.0 else 0.5 * (lo + hi)
        if not (lo < nx < hi):
            nx = 0.5 * (lo + hi)
        if abs(nx - x) <= SOLVER_RTOL * max(abs(x), 1e-300) or hi - lo <= SOLVER_RTOL * hi:
            return nx
        x = nx
    return x


@numba.njit(inline="always")  # one copy in each of _fixed_point_values and _q_chi1_values
def _solve_q(code, a, sw, sb, z, w, cf, ex):
    """The stable fixed point q* reached from small variances; inf when q grows without bound;
    NaN when q* exceeds the float64 range. See the module notes."""
    o0, _o1, _o2 = run_time_orders(code)  # run-time 0, 1, 2: literal arguments compile extra specialisations
    if sw == 0.0:
        return sb
    m = sw * asymptotic_slope(code, a)
    if code == LINEAR or code == RELU or code == LEAKY_RELU:  # q-map = m q + sb exactly
        if m < 1.0:
            q = sb / (1.0 - m)
            return q if math.isfinite(q) else math.nan
        if m > 1.0 or sb > 0.0:
            return math.inf
        return 0.0  # m = 1, sb = 0: every q is fixed; 0 is reported
    g0 = sw * _e1(code, a, o0, o0, 0.0, z, w, cf) + sb
    if g0 <= 0.0:  # q = 0 is a fixed point (phi(0) = 0, sb = 0)
        s0 = sw * _dq(code, a, 0.0, z, w, cf) - 1.0
        if s0 < 0.0:
            return 0.0
        if s0 == 0.0 and _g(code, a, sw, sb, _Q_PROBE, z, w, cf, ex)[0] <= 0.0:
            return 0.0  # marginal: q decays like a power law
        lo = 0.0
        q = _Q_START_UNSTABLE
    else:  # qmap(q) >= qmap(0) = g0 for every built-in, so no root lies below g0
        lo = 0.0
        q = g0
    if m == 0.0 and math.isfinite(sw + sb):
        # bounded (tanh, erf, sigmoid, hard_tanh): phi^2 <= B (bound_squared), so g(sw B + sb) <= 0, and the q-map is
        # concave (a single crossing on (0, inf)): safeguarded Newton from the right converges to it
        # q* <= sw B + sb is finite: an infinite root is the top of the float64 range reached in
        # the solver's arithmetic (sigma_b2 ~ 1e308), reported as an overflow (NaN), never as inf
        q = _newton_q(code, a, sw, sb, lo, max(sw * bound_squared(code, a) + sb, q), z, w, cf, ex)
        return q if math.isfinite(q) else math.nan
    slo = 0.0
    for _ in range(4096):
        gq, sq = _g(code, a, sw, sb, q, z, w, cf, ex)
        if gq <= 0.0:
            return _newton_q(code, a, sw, sb, lo, q, z, w, cf, ex)
        if slo < 0.0 and sq > 0.0 and lo > 0.0:
            # g has a minimum between two positive scan points: find it (bisection on g') and look
            a_lo, a_hi = lo, q
            for _ in range(100):
                mid = 0.5 * (a_lo + a_hi)
                if _g(code, a, sw, sb, mid, z, w, cf, ex)[1] < 0.0:
                    a_lo = mid
                else:
                    a_hi = mid
                if a_hi - a_lo <= 1e-12 * a_hi:
                    break
            gm = _g(code, a, sw, sb, a_lo, z, w, cf, ex)[0]
            if gm <= 0.0:
                return _newton_q(code, a, sw, sb, lo, a_lo, z, w, cf, ex)
        if q >= Q_ASYMPTOTIC and m > 1.0 and sq > 0.0:
            return math.inf
        if q >= Q_SCAN_MAX:
            if m >= 1.0:
                return math.inf
            if m == 0.0:  # bounded: phi^2 <= 1, so qmap(q) <= sw + sb and g(sw + sb) <= 0
                hi = sw * bound_squared(code, a) + sb
                if math.isfinite(hi) and hi > q and _g(code, a, sw, sb, hi, z, w, cf, ex)[0] <= 0.0:
                    return _newton_q(code, a, sw, sb, q, hi, z, w, cf, ex)
            return math.nan
        lo = q
        slo = sq
        q = max(q, min(2.0 * q, Q_SCAN_MAX))
    return math.nan


@numba.njit(inline="always")  # one call site: one compiled tree less
def _solve_c(code, a, sw, sb, q, chi1, z, w, cf, c0=0.0):
    """The stable fixed point c* of the c-map at q (1 in the ordered phase).

    The residual h(c) = (sw E phi(u1) phi(u2) + sb) / q - c is convex on [0, 1] with roots c* and
    1 (c = 1 is fixed because q = q*). Near the edge of chaos the two roots merge and Newton on h
    converges only linearly (hundreds of iterations), so the known root is divided out: the
    deflated residual H(c) = h(c) / (1 - c), with H(1) = 1 - chi_1, has c* as a simple root.
    Safeguarded Newton on H over the bracket [lo, hi], H(lo) >= 0 > H(hi), started at ``c0`` (a
    neighbouring grid point's c* in :func:`phase_diagram`; any c0 in [0, 1) is safe); at most
    200 steps.

    Returns ``(c*, chi_c)``: Newton's last slope integral is ``chi_c`` at an iterate within 1e-15 of
    c*, which saves the 2-D integral of a separate evaluation (NaN where it is not available).
    """
    o0, o1, _o2 = run_time_orders(code)  # run-time 0, 1, 2: literal arguments compile extra specialisations
    if chi1 <= 1.0 + 1e-12 or q == 0.0:
        return 1.0, chi1  # at c* = 1 the two arguments coincide: chi_c = chi_1
    lo = 0.0
    hi = 1.0
    c = c0 if 0.0 <= c0 < 1.0 else 0.0
    nc = c
    for _ in range(200):
        m0 = math.nan
        m1 = math.nan
        if code == TANH:  # both integrals of the step in one pass, no tanh per node
            m0, m1 = tanh_pair_moments(q, c, z, w)
        if math.isnan(m0):  # other activations, or a rule tanh_pair_moments leaves to pair_quadrature
            m0 = _e2(code, a, o0, o0, q, q, c, z, w, cf)
            m1 = _e2(code, a, o1, o1, q, q, c, z, w, cf)
        h = (sw * m0 + sb) / q - c
        if h == 0.0:
            return c, math.nan
        dh = sw * m1 - 1.0
        one_minus = 1.0 - c
        big_h = h / one_minus
        if big_h > 0.0:
            lo = c
        else:
            hi = c
        slope = (dh * one_minus + h) / (one_minus * one_minus)
        if slope < 0.0:
            nc = c - big_h / slope
            if abs(nc - c) <= 1e-15:  # converged; checked before the bracket test, which c itself may fail
                return nc, dh + 1.0
        if slope >= 0.0 or not (lo < nc < hi):
            nc = 0.5 * (lo + hi)
        if hi - lo <= 1e-15:
            return nc, dh + 1.0
        c = nc
    return c, math.nan


@numba.njit(cache=True)
def _edge_values(code, a, homogeneous, sw, q, z, w, cf):
    """``(chi_1, chi_q, c*, chi_c, frozen)`` at the edges q* = inf and q* = 0 (the module notes)."""
    _o0, o1, _o2 = run_time_orders(code)  # run-time 0, 1, 2: literal arguments compile extra specialisations
    frozen = 0.0
    if math.isinf(q):
        # q -> inf: the chi's of the asymptote (relu for the ReLU-like; the activation itself if
        # homogeneous), whose correlation map has the fixed point c* = 1
        if homogeneous:
            chi1 = sw * _e1(code, a, o1, o1, 1.0, z, w, cf)
            chiq = sw * _dq(code, a, 1.0, z, w, cf)
        elif math.isinf(asymptotic_slope(code, a)):
            chi1 = math.inf  # superlinear (exp, relu_power): E phi'(u)^2 grows without bound
            chiq = math.inf
        else:  # phi ~ a x (x > 0), b x (x < 0): E phi'^2 -> (a^2 + b^2) / 2 (activations.asymptote)
            chi1 = sw * asymptotic_derivative_moment(code, a)
            chiq = sw * asymptotic_slope(code, a)
        return chi1, chiq, 1.0, chi1, frozen
    # q -> 0 with sb = 0 and phi(0) = 0: the c-map is q-independent (homogeneous) or the
    # identity (smooth): its slope at c* = 1 is 1, so correlations converge polynomially or freeze
    a0, b0 = origin_slopes(code, a)
    if a0 != b0 and not homogeneous:  # kink at 0 (abs, elu, selu): E phi'(u)^2 -> (a0^2 + b0^2) / 2
        chi1 = sw * (0.5 * (a0 * a0 + b0 * b0))
    else:
        chi1 = sw * _e1(code, a, o1, o1, 0.0 if not homogeneous else 1.0, z, w, cf)
    chiq = sw * _dq(code, a, 0.0 if not homogeneous else 1.0, z, w, cf)
    chic = 1.0 if sw > 0.0 else 0.0
    if sw > 0.0 and a0 == b0:  # smooth at 0: the limiting c-map is the identity
        frozen = 1.0
    return chi1, chiq, 1.0, chic, frozen


@numba.njit(cache=True)
def _fixed_point_values(code, a, homogeneous, sw, sb, z, w, cf, ex, out, c0=0.0):
    """out = (q*, c*, chi_1, chi_c, chi_q, frozen); NaN everywhere when q* overflows."""
    _o0, o1, _o2 = run_time_orders(code)  # run-time 0, 1, 2: literal arguments compile extra specialisations
    q = _solve_q(code, a, sw, sb, z, w, cf, ex)
    if math.isnan(q):
        for i in range(6):
            out[i] = math.nan
        return
    frozen = 0.0
    if math.isinf(q) or q == 0.0:
        chi1, chiq, c, chic, frozen = _edge_values(code, a, homogeneous, sw, q, z, w, cf)
    else:
        chi1 = sw * _e1(code, a, o1, o1, q, z, w, cf)
        c, chic = _solve_c(code, a, sw, sb, q, chi1, z, w, cf, c0)
        if math.isnan(chic):
            chic = sw * _e2(code, a, o1, o1, q, q, c, z, w, cf)
        chiq = sw * _dq(code, a, q, z, w, cf)
    if sw == 0.0:  # W = 0: the Jacobian is exactly 0 (also for sign, whose E phi'^2 is infinite)
        chi1 = 0.0
        chic = 0.0
        chiq = 0.0
    out[0] = q
    out[1] = c
    out[2] = chi1
    out[3] = chic
    out[4] = chiq
    out[5] = frozen


@numba.njit(cache=True)
def _q_chi1_values(code, a, homogeneous, sw, sb, z, w, cf, ex, out):
    """out = (q*, chi_1) as :func:`_fixed_point_values` computes them, without the c-map: a caller that
    needs no more (the edge of chaos, the Jacobian spectra) compiles none of the pair integrals."""
    _o0, o1, _o2 = run_time_orders(code)  # run-time 0, 1, 2: literal arguments compile extra specialisations
    q = _solve_q(code, a, sw, sb, z, w, cf, ex)
    if math.isnan(q):
        out[0] = math.nan
        out[1] = math.nan
        return
    if math.isinf(q) or q == 0.0:
        chi1 = _edge_values(code, a, homogeneous, sw, q, z, w, cf)[0]
    else:
        chi1 = sw * _e1(code, a, o1, o1, q, z, w, cf)
    out[0] = q
    out[1] = 0.0 if sw == 0.0 else chi1


@numba.njit(cache=True, nogil=True)
def _phase_rows(code, a, homogeneous, sw_grid, sb_grid, z, w, cf, ex, out):
    """A block of rows of the phase diagram (releases the GIL: :func:`_phase_kernel` runs blocks on threads)."""
    # along a row, c* is warm-started from the previous column's (Newton then needs ~3 pair
    # integrals instead of ~15 from c = 0)
    for i in range(sw_grid.size):
        c_prev = 0.0
        for j in range(sb_grid.size):
            _fixed_point_values(code, a, homogeneous, sw_grid[i], sb_grid[j], z, w, cf, ex, out[i, j], c_prev)
            c_prev = out[i, j, 1] if math.isfinite(out[i, j, 1]) else 0.0


#: Blocks of rows per thread of :func:`_phase_kernel` (load balance: rows differ in cost).
PHASE_BLOCKS_PER_THREAD = 4


def _phase_kernel(code, a, homogeneous, sw_grid, sb_grid, z, w, cf, ex, out):
    """Rows of the phase diagram in parallel: blocks of rows of the serial, GIL-free kernel
     :func:`_phase_rows` on ``numba.get_num_threads()`` Python threads.

     Not a ``parallel=True`` parfor: compiling the parfor cost ~2 s of a cold ``phase_diagram``
    , while the block kernel compiles as a plain loop around :func:`_fixed_point_values`
     (which ``fixed_point`` has compiled already in most processes). Each row is computed as before
     (c* warm-started along sigma_b2 only), so the result is the same bit for bit.
    """
    threads = min(numba.get_num_threads(), sw_grid.size)
    if threads <= 1:
        _phase_rows(code, a, homogeneous, sw_grid, sb_grid, z, w, cf, ex, out)
        return
    from concurrent.futures import ThreadPoolExecutor

    edges = np.linspace(0, sw_grid.size, min(sw_grid.size, PHASE_BLOCKS_PER_THREAD * threads) + 1).astype(int)

    def block(k):
        lo, hi = edges[k], edges[k + 1]
        _phase_rows(code, a, homogeneous, sw_grid[lo:hi], sb_grid, z, w, cf, ex, out[lo:hi])

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(block, range(edges.size - 1)))
