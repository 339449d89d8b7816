r"""The log-scale C-map machinery shared by :mod:`meanfield.dense` and :mod:`meanfield.conv` (private).

A covariance through depth is carried as ``Sigma^l = exp(L^l) k^l`` (``k^l`` normalised so that its
largest diagonal entry is 1): :func:`scaled_step` is one C-map step on that representation (Xiao et al. 2018,
eq. 2.5; Poole et al. 2016, eqs. 3-5), :func:`propagate_kernel` the loop of a dense network,
:func:`map_stack` the C-map (or its derivative form) on a stack of covariances, :func:`unscale`
the way back to float64 covariances. ``meanfield.dense`` re-exports the public constants
(``Q_LINEAR_BELOW``, ``Q_ASYMPTOTE_ABOVE``, ``MAX_DEPTH``, ``MAX_PROPAGATION_SIZE``); the names
here are private to the package (this module is not part of the API).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ._checks import check_int
from .activations import (
    ABS,
    COS,
    ELU,
    ERF,
    EXP,
    GELU,
    HARD_TANH,
    LEAKY_RELU,
    LINEAR,
    RBF,
    RELU,
    RELU_POWER,
    SELU,
    SIGMOID,
    SIGN,
    SIN,
    SOFTPLUS,
    SWISH,
    TANH,
    evaluate_call,
    origin_slopes,
)
from .gaussian import (
    acos_terms,
    family_rule,
    kernel_rule,
    needs_full_tree,
    pair_by_family,
    pair_expectation,
    run_time_orders,
    single_by_family,
)

#: Variances below which the C-map is its linearisation at 0 to relative 1e-30 (propagation of
#: non-homogeneous activations on the log scale).
Q_LINEAR_BELOW = 1e-30
#: Variances above which the C-map of a ReLU-like activation is the ReLU C-map to relative 1e-40.
Q_ASYMPTOTE_ABOVE = 1e40
#: Most layers a propagation may have (memory: (depth + 1) D^2 floats are returned).
MAX_DEPTH = 10_000_000
#: Most floats a propagation may return.
MAX_PROPAGATION_SIZE = 2**28
HOMOGENEOUS = (LINEAR, RELU, LEAKY_RELU, ABS)
#: Positively homogeneous of another degree (0 and n): their normalised maps are scale-free too.
SCALE_FREE = (SIGN, RELU_POWER)
RELU_LIKE = (SOFTPLUS, SWISH, GELU)
DBL_TINY = float(np.finfo(np.float64).tiny)
LOG_DBL_MIN = math.log(DBL_TINY)
LOG_DBL_MAX = math.log(np.finfo(np.float64).max)
INV_2PI = 1.0 / (2.0 * math.pi)
#: Activations whose C-map (derivative orders 0) has a closed form at every (q1, q2, c)
#: (:func:`meanfield.gaussian.pair_value` never reaches its quadrature for them).
CLOSED_C_MAP = (LINEAR, RELU, LEAKY_RELU, ERF, HARD_TANH, GELU, SIN, COS, ABS, SIGN, EXP, RBF, RELU_POWER, ELU, SELU)
#: Activations with no closed form at derivative orders 0: their C-map is quadrature only (the
#: ReLU asymptote of softplus and swish at large scale is :func:`relu_c_map_one`).
QUADRATURE_C_MAP = (TANH, SIGMOID, SOFTPLUS, SWISH)


def finite_result(x, what):
    if not np.all(np.isfinite(x)):
        raise ValueError(
            f"{what} exceeds the float64 range at these parameters (use propagate_log, which keeps "
            "covariances on a log scale)"
        )
    return x


@numba.njit(cache=True)
def correlation(cov_ab, sa, sb):
    den = sa * sb
    if den == 0.0:
        return 0.0
    r = cov_ab / den
    return min(1.0, max(-1.0, r))


@numba.njit(cache=True)
def cov_map_one(code, a, d, sw, sb, cov, z, w, cf, out):
    """out = sw * E phi^(d)(h) phi^(d)(h)^T (+ sb if d == 0) for one covariance (h ~ N(0, cov)).

    Family-split by the types of ``z`` and ``cf`` as :func:`c_map_one` (see
    :func:`kernel_rule_for`): with ``(None, None, 0)`` an entry without a closed form is NaN
    and the caller redoes the matrix with :func:`full_rule`.
    """
    dim = cov.shape[0]
    bias = sb if d == 0 else 0.0
    for i in range(dim):
        qi = max(cov[i, i], 0.0)
        out[i, i] = sw * single_by_family(code, a, d, d, qi, z, w, cf) + bias
        si = math.sqrt(qi)
        for j in range(i + 1, dim):
            qj = max(cov[j, j], 0.0)
            cij = correlation(cov[i, j], si, math.sqrt(qj))
            v = sw * pair_by_family(code, a, d, d, qi, qj, cij, z, w, cf) + bias
            out[i, j] = v
            out[j, i] = v


@numba.njit(cache=True)
def relu_pair(q1, q2, c):
    """E relu(u1) relu(u2): the arc-cosine kernel, the same operations as the ReLU branch of
    ``gaussian.pair_value`` at derivative orders 0 (so the same bits)."""
    s12 = math.sqrt(q1) * math.sqrt(q2)
    a = 0.0
    theta, sine = acos_terms(c)
    k = s12 * INV_2PI * (sine + (math.pi - theta) * c)
    return (1.0 - a) ** 2 * k + a * c * s12


@numba.njit(cache=True)
def relu_c_map_one(cov, out):
    """out = E relu(h) relu(h)^T for one covariance (the asymptote of softplus, swish and gelu at
    large scale), without the other closed forms or the quadrature (the quadrature-only
    kernels of softplus and swish then compile no closed-form tree)."""
    dim = cov.shape[0]
    for i in range(dim):
        qi = max(cov[i, i], 0.0)
        out[i, i] = relu_pair(qi, qi, 1.0)
        si = math.sqrt(qi)
        for j in range(i + 1, dim):
            qj = max(cov[j, j], 0.0)
            v = relu_pair(qi, qj, correlation(cov[i, j], si, math.sqrt(qj)))
            out[i, j] = v
            out[j, i] = v


@numba.njit(cache=True)
def c_map_one(code, a, cov, z, w, cf, out):
    """out = E phi(h) phi(h)^T for one covariance: :func:`cov_map_one` with the derivative orders 0.

    What is compiled is chosen by the argument types (Numba prunes an ``x is not None`` branch
    when ``x`` is typed None): ``cf`` None -> no closed forms, ``z`` None -> no
    quadrature; with both given, the closed form and quadrature where it is NaN, as
    :func:`meanfield.gaussian.pair_value`. See :func:`kernel_rule_for`.
    """
    o0, _o1, _o2 = run_time_orders(code)  # run-time 0, 1, 2: literal arguments compile extra specialisations
    dim = cov.shape[0]
    for i in range(dim):
        qi = max(cov[i, i], 0.0)
        out[i, i] = single_by_family(code, a, o0, o0, qi, z, w, cf)
        si = math.sqrt(qi)
        for j in range(i + 1, dim):
            qj = max(cov[j, j], 0.0)
            cij = correlation(cov[i, j], si, math.sqrt(qj))
            v = pair_by_family(code, a, o0, o0, qi, qj, cij, z, w, cf)
            out[i, j] = v
            out[j, i] = v


@numba.njit(cache=True)
def cov_map_kernel(code, a, d, sw, sb, cov, z, w, cf, out):
    """:func:`cov_map_one` for a stack of covariances."""
    for m in range(cov.shape[0]):
        cov_map_one(code, a, d, sw, sb, cov[m], z, w, cf, out[m])


def map_stack(cov, act, d, sigma_w2, sigma_b2, degree):
    shape = cov.shape
    stack = np.ascontiguousarray(cov.reshape((-1,) + shape[-2:]))
    z, w = kernel_rule(degree)
    if act.is_builtin:
        out = np.empty_like(stack)
        z, w, cf = kernel_rule_for(act, degree)  # one family compiled
        cov_map_kernel(act.code, act.param, d, sigma_w2, sigma_b2, stack, z, w, cf, out)
        if needs_full_tree(cf):  # the first tier reached the graded rule: every rule
            cov_map_kernel(act.code, act.param, d, sigma_w2, sigma_b2, stack, z, w, None, out)
        if z is None:  # a closed form is NaN (none at this order): closed forms with the quadrature fallback
            redo = np.flatnonzero(np.isnan(out).any(axis=(1, 2)))
            if redo.size:
                part = np.empty((redo.size,) + stack.shape[1:])
                cov_map_kernel(
                    act.code,
                    act.param,
                    d,
                    sigma_w2,
                    sigma_b2,
                    np.ascontiguousarray(stack[redo]),
                    *full_rule(degree),
                    part,
                )
                out[redo] = part
    else:
        q = np.maximum(np.diagonal(stack, axis1=-2, axis2=-1), 0.0)
        s = np.sqrt(q)
        den = s[:, :, None] * s[:, None, :]
        c = np.where(den > 0, stack / np.where(den > 0, den, 1.0), 0.0).clip(-1.0, 1.0)
        qa = np.broadcast_to(q[:, :, None], stack.shape)
        qb = np.broadcast_to(q[:, None, :], stack.shape)
        with np.errstate(over="ignore", invalid="ignore"):
            out = sigma_w2 * pair_expectation(act, qa, qb, c, (d, d), degree) + (sigma_b2 if d == 0 else 0.0)
    return finite_result(out, "the covariance map").reshape(shape)


@numba.njit(cache=True)
def combine(tmp, logs, log_rel, const, kout):
    """Write kout and return L with exp(L) kout = exp(logs + log_rel) tmp + const, max diag(kout) = 1.

    Everything is formed relative to the larger of the two terms, so nothing over- or underflows,
    and the large ``logs`` receives a single addition (the log scale of deep networks, ~1e4, is
    not perturbed by more rounding than the one of q^{l+1} / q^l itself); tmp is any symmetric
    matrix with a non-negative diagonal.
    """
    dim = tmp.shape[0]
    hmax = 0.0
    for i in range(dim):
        hmax = max(hmax, tmp[i, i])
    if not math.isfinite(hmax):
        return math.inf  # the map overflowed (exp, relu_power): the caller reports it
    lh = log_rel + math.log(hmax) if (hmax > 0.0 and log_rel > -math.inf) else -math.inf
    lc = math.log(const) - logs if const > 0.0 else -math.inf
    base = max(lh, lc)
    if base == -math.inf:
        for i in range(dim):
            for j in range(dim):
                kout[i, j] = 0.0
        return 0.0
    f = math.exp(lh - base) / hmax if lh > -math.inf else 0.0
    cr = math.exp(lc - base) if lc > -math.inf else 0.0
    m = 0.0
    for i in range(dim):
        for j in range(dim):
            kout[i, j] = tmp[i, j] * f + cr
        m = max(m, kout[i, i])
    if not m > 0.0:  # NaN on the diagonal (a first quadrature tier's redo mark, gaussian.first_tier)
        return math.nan
    for i in range(dim):
        for j in range(dim):
            kout[i, j] /= m
    return logs + (base + math.log(m))


@numba.njit(cache=True)
def sign_kernel_map(code, k, out):
    """E A(h_i) A(h_j) for the asymptote A of a bounded activation (sgn; sigmoid: the step)."""
    dim = k.shape[0]
    for i in range(dim):
        for j in range(dim):
            qi = k[i, i]
            qj = k[j, j]
            if code == SIGMOID:
                if qi == 0.0 or qj == 0.0:
                    out[i, j] = 0.25  # sigmoid(0) = 1/2 times E step = 1/2
                else:
                    out[i, j] = 0.25 + math.asin(correlation(k[i, j], math.sqrt(qi), math.sqrt(qj))) / (2.0 * math.pi)
            else:
                if qi == 0.0 or qj == 0.0:
                    out[i, j] = 0.0
                else:
                    out[i, j] = (2.0 / math.pi) * math.asin(correlation(k[i, j], math.sqrt(qi), math.sqrt(qj)))


# Inlined into its two loops (dense's propagate_kernel, conv's): a separate compiled function
# costs one more LLVM optimisation and code generation of the whole C-map call tree below it,
# ~15 % of a cold dense.propagate (benchmarks/bench_cold_start.py).
@numba.njit(inline="always")
def scaled_step(code, a, sw, sb, k, logs, z, w, cf, tmp, kout, work):
    """One C-map step on Sigma = exp(logs) k (k normalised); writes kout, returns its log scale
    (``tmp`` and ``work`` are D x D scratch buffers).

    Positively homogeneous activations: C(e^L k) = e^L sw K(k) + sb exactly. Others: the map is
    evaluated directly while the scale is moderate; below Q_LINEAR_BELOW by its form at 0 (the
    linearisation, relative error O(q); exact homogeneity for sign and relu_power; the leaky germ
    of a kink, relative error O(sqrt(q))); above Q_ASYMPTOTE_ABOVE (ReLU-like) or 1e300 (bounded) by the map
    of the activation's asymptote (relative error O(q^{-1/2}) or smaller).
    """
    dim = k.shape[0]
    kmax = 0.0
    for i in range(dim):
        kmax = max(kmax, k[i, i])
    log_sw = math.log(sw) if sw > 0.0 else -math.inf
    relu_like = code == SOFTPLUS or code == SWISH or code == GELU
    tiny = (
        kmax > 0.0
        and logs < math.log(Q_LINEAR_BELOW)
        and not (code == LINEAR or code == RELU or code == LEAKY_RELU or code == ABS)
    )
    a0, b0 = origin_slopes(code, a) if tiny else (1.0, 1.0)
    # Below Q_LINEAR_BELOW the map of an activation that is not smooth at 0 is that of its germ
    # there. sign and relu^n are positively homogeneous of degree 0 and n: C(e^L k) = e^(p L) C(k)
    # exactly, on the normalised k (the one call site of the kernel map below). A kink at 0 (elu
    # with alpha != 1, selu; phi(0) = 0) leaves phi(u) ~ a0 leaky(u) of slope s = b0 / a0, whose
    # map is s Sigma + (1 - s)^2 E relu relu (relative error O(sqrt(q))).
    # relu^n also where its moments q^n would pass 1e300 (the direct evaluation would overflow)
    germ = (tiny and code == SIGN) or (code == RELU_POWER and kmax > 0.0 and (tiny or a * logs > math.log(1e300)))
    if tiny and a0 != b0:
        relu_c_map_one(k, tmp)
        s = b0 / a0
        for i in range(dim):
            for j in range(dim):
                tmp[i, j] = s * k[i, j] + (1.0 - s) * (1.0 - s) * tmp[i, j]
        return combine(tmp, logs + 2.0 * math.log(a0), log_sw, sb, kout)
    if tiny and not germ:
        o0, o1, o2 = run_time_orders(code)  # run-time orders: literals compile extra specialisations
        phi0 = evaluate_call(code, a, o0, 0.0)
        d1 = evaluate_call(code, a, o1, 0.0)
        d2 = evaluate_call(code, a, o2, 0.0)
        # E phi(u_i) phi(u_j) = phi0^2 + phi0 phi''(0) (q_i + q_j) / 2 + phi'(0)^2 Sigma_ij + O(q^2)
        for i in range(dim):
            for j in range(dim):
                tmp[i, j] = d1 * d1 * k[i, j] + 0.5 * phi0 * d2 * (k[i, i] + k[j, j])
        return combine(tmp, logs, log_sw, sw * phi0 * phi0 + sb, kout)
    if (
        kmax > 0.0
        and not relu_like
        and code != LINEAR
        and code != RELU
        and code != LEAKY_RELU
        and (code < SIN or code == SIGN)  # the extended closed forms are evaluated at any scale
        and logs > math.log(1e300)
    ):
        sign_kernel_map(code, k, tmp)
        return combine(tmp, 0.0, log_sw, sb, kout)
    # one call site of the kernel map (every argument a plain runtime value: one compilation)
    if kmax > 0.0 and relu_like and logs > math.log(Q_ASYMPTOTE_ABOVE):
        relu_c_map_one(k, tmp)  # the asymptote's map, in closed form whatever the kernel's family
        return combine(tmp, logs, log_sw, sb, kout)
    kcode = code
    ka = a
    mat = k
    lf = logs
    if germ:
        lf = 0.0 if code == SIGN else a * logs
    elif code == LINEAR or code == RELU or code == LEAKY_RELU or code == ABS:
        pass  # C(e^L k) = e^L C(k) + sb exactly
    else:
        scale = math.exp(logs) if kmax > 0.0 else 0.0
        mat = work
        for i in range(dim):
            for j in range(dim):
                mat[i, j] = k[i, j] * scale
        lf = 0.0
    c_map_one(kcode, ka, mat, z, w, cf, tmp)
    return combine(tmp, lf, log_sw, sb, kout)


@numba.njit(cache=True)
def propagate_kernel(code, a, sw, sb, k0, log0, depth, z, w, cf, k_out, logs_out):
    """Iterate the C-map on (log-scale, normalised covariance); see propagate_log."""
    dim = k0.shape[0]
    # element loop, not ``k_out[0] = k0``: an array slice assignment compiles numba's shape-mismatch
    # message formatting (string joins, reprs), a quarter of this kernel's first-call compile time
    for i in range(dim):
        for j in range(dim):
            k_out[0, i, j] = k0[i, j]
    logs_out[0] = log0
    tmp = np.empty((dim, dim))
    work = np.empty((dim, dim))
    for layer in range(1, depth + 1):
        logs_out[layer] = scaled_step(
            code, a, sw, sb, k_out[layer - 1], logs_out[layer - 1], z, w, cf, tmp, k_out[layer], work
        )
        if not math.isfinite(logs_out[layer]):
            for rest in range(layer + 1, depth + 1):
                logs_out[rest] = math.nan
            return


def kernel_rule_for(act, degree):
    """``(z, w, cf)`` for :func:`c_map_one` / :func:`cov_map_one` / :func:`scaled_step` / :func:`propagate_kernel`.

    :func:`meanfield.gaussian.family_rule` (one classification for every family-split kernel):
    closed-form activations get ``(None, None, cf)`` (the quadrature is not compiled, and ``cf``'s
    type selects the closed forms of the activation's family only), the
    quadrature-only ones ``(z, w, first_tier())`` (the closed forms are not compiled; a call
    whose status :func:`meanfield.gaussian.needs_full_tree` is redone with ``(z, w, None)``). The same numbers
    either way; the first call of ``dense.propagate`` compiles about half as much (
    benchmarks/bench_cold_start.py). A closed-form result that is not finite (where
    ``pair_value`` would have tried quadrature) is recomputed by the caller with :func:`full_rule`.
    """
    return family_rule(act, degree)


def full_rule(degree):
    """``(z, w, 0)``: closed forms with the quadrature fallback (see :func:`kernel_rule_for`)."""
    z, w = kernel_rule(degree)
    return z, w, 0


#: Bound on the estimated run time of one propagation through a quadrature-only C-map, in
#: nanoseconds of one core (measured on a shared core: about 2 us per layer, 100 ns per node of a
#: variance, 15 ns per node of a covariance's two-dimensional rule): a few seconds.
MAX_QUADRATURE_NS = 5e9


def check_quadrature_work(code, name, depth, dim, degree):
    """ValueError when ``depth`` layers of D inputs through a quadrature-only C-map would take
    longer than :data:`MAX_QUADRATURE_NS` (closed-form activations are not limited here)."""
    if code not in QUADRATURE_C_MAP:
        return
    pairs = dim * (dim - 1) // 2
    per_layer = 2000.0 + 100.0 * dim * degree + 15.0 * pairs * degree * degree
    if depth * per_layer > MAX_QUADRATURE_NS:
        most = int(MAX_QUADRATURE_NS // per_layer)
        raise ValueError(
            f"depth must be <= {most} for activation {name} with a ({dim}, {dim}) covariance at degree {degree} "
            f"(quadrature in every layer: about {depth * per_layer / 1e9:.0f} s for depth {depth}); "
            "use fewer layers or inputs, or a lower degree"
        )


def refuse_unbounded(cov0, activation, depth, degree):
    """:func:`check_quadrature_work` for well-formed arguments of a propagation of a ``(D, D)``
    ``cov0`` (D inputs or positions); malformed ones are left to the documented checks."""
    from .activations import get_activation

    if isinstance(depth, (bool, np.bool_)) or not isinstance(depth, (int, np.integer)) or depth <= 0:
        return
    if isinstance(degree, (bool, np.bool_)) or not isinstance(degree, (int, np.integer)) or degree < 1:
        return
    shape = np.shape(cov0)
    if len(shape) != 2:
        return
    try:
        act = get_activation(activation)
    except (TypeError, ValueError):
        return
    if act.is_builtin:
        check_quadrature_work(act.code, act.name, int(depth), int(shape[0]), int(degree))


def check_depth(depth, dim=1):
    depth = check_int(depth, "depth", 0, MAX_DEPTH)
    if (depth + 1) * dim * dim > MAX_PROPAGATION_SIZE:
        raise ValueError(
            f"depth must satisfy (depth + 1) D^2 <= {MAX_PROPAGATION_SIZE} (the size of the returned "
            f"trajectory), got depth {depth} with D = {dim}"
        )
    return depth


def normalised_start(cov0):
    m = float(np.max(np.diagonal(cov0)))
    if m > 0:
        return np.ascontiguousarray(cov0 / m), math.log(m)
    return np.ascontiguousarray(cov0), 0.0


def unscale(res, what):
    """exp(log_scale) * normalized, or a ValueError naming the layer where float64 over/underflows."""
    diag = np.diagonal(res.normalized, axis1=1, axis2=2)
    with np.errstate(over="ignore", under="ignore"):  # one errstate: each costs microseconds
        scale = np.exp(res.log_scale)
        var = scale[:, None] * diag
        over = ~np.isfinite(var).all(axis=1)
        under = ((diag > 0) & (var < DBL_TINY)).any(axis=1)
        if not (over.any() or under.any()):
            return scale[:, None, None] * res.normalized
    layer = int(np.argmax(over | under))
    kind = "exceed the float64 range" if over[layer] else "fall below the smallest normal float64 (underflow)"
    raise ValueError(
        f"{what}: the variances {kind} from layer {layer} on (log q = {res.log_scale[layer]:.6g}); "
        "use propagate_log, which keeps them as log-scale x normalised matrix"
    )
