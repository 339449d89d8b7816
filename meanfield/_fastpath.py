"""The fast path of the small analytic calls (``dense.propagate``, ``conv.propagate``) (private).

A call such as ``dense.propagate(cov3, "erf", 1.5, 0.05, 50)`` computes ~10 us in its compiled
kernel but spent ~50 us in its Python wrapper: ``check_covariance`` (type checks, ``np.isfinite``,
``np.allclose``, ``np.linalg.eigvalsh``, the symmetrised copy), the scalar checks (each a few NumPy
calls), ``normalised_start``, the finiteness test of the trajectory and :func:`unscale`. The
helpers here do the same work for the common argument types (a writeable C-contiguous float64
ndarray, Python floats and ints, a built-in activation) in one or two compiled calls.

The rule that keeps every decision the same: **the fast path only ever accepts**. Whatever it
cannot certify (a non-finite, not exactly symmetric or huge matrix, a matrix whose PSD test is
close to the tolerance, a trajectory that is not finite or leaves the float64 range, any other
argument type) goes to the unchanged general path, which then accepts or raises exactly as
before, with the same message and in the same order. What the fast path accepts the general
path accepts too, and the numbers are the same floating-point operations (bit-identical).

PSD certificate. :func:`meanfield._checks.check_covariance` rejects ``cov`` when
``eigvalsh(cov / s)`` has an eigenvalue below ``-tau``, ``tau = PSD_RTOL * D``, with
``s = max(max|cov|, 1e-300)``. :func:`cov_fast` instead runs a Cholesky factorisation of
``B = cov / s + (tau / 2) I``; if it completes in floating point, ``B + E = R^T R`` with
``|E| <= gamma_{D+1} |R^T| |R|`` (Higham, *Accuracy and Stability of Numerical Algorithms*,
Thm 10.5), and since every row of ``R`` has norm ``sqrt(b_ii) <= sqrt(1 + tau)``,
``||E||_2 <= (D + 1) D u (1 + tau)`` (u = 2^-53). So the smallest eigenvalue of ``cov / s`` is at
least ``-tau / 2 - (D + 1) D u (1 + tau)``, and ``eigvalsh`` (backward stable: error at most
``~ D u ||cov / s||_2 <= D^2 u``) returns at least ``-tau / 2 - 3 D^2 u``, which is above
``-tau = -1e-10 D`` for every ``D <= MAX_CERTIFIED_DIM``: ``eigvalsh`` accepts. A factorisation that
fails proves nothing and the general path decides.
"""

from __future__ import annotations

import inspect
import math

import numba
import numpy as np

from ._checks import PSD_RTOL, check_probability_vector
from ._logscale import DBL_TINY, MAX_DEPTH, MAX_PROPAGATION_SIZE, kernel_rule_for, unscale
from .activations import ACTIVATIONS, Activation, get_activation
from .activations._quadrature import first_tier

#: Largest matrix the Cholesky certificate is used for: ``3 D^2 u < PSD_RTOL D / 2`` holds for
#: ``D < PSD_RTOL / (6 u) ~ 1.5e5``; the trajectory limit (``MAX_PROPAGATION_SIZE``) keeps D below
#: 16,384 anyway.
MAX_CERTIFIED_DIM = 16384
#: Entries above this go to the general path (its symmetrised copy ``0.5 (a + a^T)`` would
#: overflow near the float64 maximum; the fast path copies ``a`` and must give the same bits).
MAX_FAST_ENTRY = 1e300
#: Log scales outside ``[-LOG_FAST, LOG_FAST]`` go to the general path: inside, ``np.exp`` neither
#: overflows nor underflows, so it needs no ``np.errstate`` (a few microseconds) whatever the user's
#: ``np.seterr``.
LOG_FAST = 700.0

#: ``check_probability_vector``'s tolerance on ``sum(v) - 1`` (the one ``conv`` validates ``v`` with).
PROBABILITY_ATOL = inspect.signature(check_probability_vector).parameters["atol"].default

F64 = np.dtype(np.float64)
#: Built-in activations by name (``get_activation(name)`` builds a new frozen object, ~2 us).
_ACTS: dict = {}
#: ``kernel_rule_for`` by (activation code, degree).
_RULES: dict = {}


def plain_matrix(x) -> bool:
    """``x`` is a writeable, C-contiguous 2-D float64 ndarray (not a subclass): the one array type
    the compiled helpers are specialised for (any other would compile a new specialisation)."""
    if type(x) is not np.ndarray or x.dtype is not F64 or x.ndim != 2:
        return False
    flags = x.flags
    return flags.c_contiguous and flags.writeable


def plain_vector(x) -> bool:
    """As :func:`plain_matrix` for a 1-D array."""
    if type(x) is not np.ndarray or x.dtype is not F64 or x.ndim != 1:
        return False
    flags = x.flags
    return flags.c_contiguous and flags.writeable


def variance_value(x) -> float | None:
    """``x`` as :func:`meanfield._checks.check_nonnegative_scalar` returns it, for a Python float or
    int or a NumPy float64 in ``[0, inf)``; None for anything else (NaN fails the comparison; bools,
    other types and ints beyond int64 go to the general path). ``float(x)`` is what the general path
    computes (``float(np.asarray(x))``)."""
    t = type(x)
    if t is float or t is np.float64:
        v = float(x)
        return v if 0.0 <= v < math.inf else None
    if t is int and 0 <= x < 2**63:
        return float(x)
    return None


@numba.njit(cache=True)
def cov_fast(a, sym, k0):
    """Certify ``a`` as :func:`meanfield._checks.check_covariance` would accept it (see the module
    notes) and write its symmetrised copy ``0.5 (a + a^T)`` into ``sym`` and
    ``normalised_start``'s matrix ``sym / max(diag)`` (or ``sym`` if that is 0) into ``k0``.

    Returns ``max(diag(sym)) >= 0`` when certified, -1.0 when the general path must decide
    (``sym`` and ``k0`` then hold garbage). Only exactly symmetric matrices are certified.
    """
    n = a.shape[0]
    if n < 1 or n != a.shape[1] or n > MAX_CERTIFIED_DIM:
        return -1.0
    big = 0.0
    for i in range(n):
        for j in range(n):
            x = a[i, j]
            if not math.isfinite(x):
                return -1.0
            if x != a[j, i]:  # the general path's np.allclose decides
                return -1.0
            big = max(big, abs(x))
    if big > MAX_FAST_ENTRY:
        return -1.0
    scale = max(big, 1e-300)
    # Cholesky of a / scale + (tau / 2) I, lower triangle, in k0 (written last; no allocation here:
    # it would compile numba's allocator into this function, ~0.3 s of its first call)
    shift = 0.5 * PSD_RTOL * n
    r = k0
    for j in range(n):
        s = a[j, j] / scale + shift
        for k in range(j):
            s -= r[j, k] * r[j, k]
        if not s > 0.0:
            return -1.0
        d = math.sqrt(s)
        r[j, j] = d
        for i in range(j + 1, n):
            t = a[i, j] / scale
            for k in range(j):
                t -= r[i, k] * r[j, k]
            r[i, j] = t / d
    m = -math.inf
    for i in range(n):
        for j in range(n):
            sym[i, j] = 0.5 * (a[i, j] + a[j, i])  # the general path's operations: the same bits
        m = max(m, sym[i, i])
    if m > 0.0:
        for i in range(n):
            for j in range(n):
                k0[i, j] = sym[i, j] / m
        return m
    if m < 0.0:  # not reached for a certified matrix (a negative diagonal with max|a| on it is rejected)
        return -1.0
    for i in range(n):
        for j in range(n):
            k0[i, j] = sym[i, j]
    return 0.0


@numba.njit(cache=True)
def trajectory_ok(logs, k, bound):
    """Every log scale finite and within ``[-bound, bound]``, every normalised entry finite."""
    for layer in range(logs.shape[0]):
        lv = logs[layer]
        if not (-bound <= lv <= bound and math.isfinite(lv)):
            return False
    for layer in range(k.shape[0]):  # loops, not k.ravel(): half the compile time
        for i in range(k.shape[1]):
            for j in range(k.shape[2]):
                if not math.isfinite(k[layer, i, j]):
                    return False
    return True


@numba.njit(cache=True)
def unscale_into(scale, k, sym, out):
    """:func:`meanfield._logscale.unscale` (``scale = np.exp(log_scale)``) and ``out[0] = sym``:
    ``out[l] = scale[l] * k[l]``, the same products. Returns False where a variance over- or
    underflows (the general path then raises its message naming the layer)."""
    layers = k.shape[0]
    n = k.shape[1]
    for layer in range(layers):
        s = scale[layer]
        for i in range(n):
            dv = k[layer, i, i]
            var = s * dv
            if not math.isfinite(var) or (dv > 0.0 and var < DBL_TINY):
                return False
    for layer in range(1, layers):
        s = scale[layer]
        for i in range(n):
            for j in range(n):
                out[layer, i, j] = s * k[layer, i, j]
    for i in range(n):
        for j in range(n):
            out[0, i, j] = sym[i, j]
    return True


@numba.njit(cache=True)
def probability_vector_fast(v, atol):
    """``v`` as :func:`meanfield._checks.check_probability_vector` accepts it, certified: finite,
    non-negative, odd length, ``|sum - 1| <= atol / 2`` (the general path sums pairwise, this
    sequentially: the two sums differ by at most ``2 len(v) u sum(v)``, far below ``atol / 2``)."""
    n = v.shape[0]
    if n == 0 or n % 2 == 0:
        return False
    s = 0.0
    for i in range(n):
        x = v[i]
        if not (math.isfinite(x) and x >= 0.0):
            return False
        s += x
    return abs(s - 1.0) <= 0.5 * atol


def builtin_activation(activation):
    """The built-in :class:`~meanfield.activations.Activation` named or given by ``activation``
    (by name: one cached object per name), or None (user-defined, unknown, any other type: the
    general path decides)."""
    if type(activation) is str:
        act = _ACTS.get(activation)
        if act is None and activation in ACTIVATIONS:
            act = _ACTS[activation] = get_activation(activation)
        return act
    if isinstance(activation, Activation) and activation.is_builtin:
        return activation
    return None


def rule_for(act, degree):
    """``kernel_rule_for(act, degree)`` (a valid ``degree``), cached by (code, degree)."""
    key = (act.code, degree)
    rule = _RULES.get(key)
    if rule is None:
        if len(_RULES) > 512:
            _RULES.clear()
        rule = _RULES[key] = kernel_rule_for(act, degree)
    z, w, cf = rule
    if isinstance(cf, np.ndarray):  # a quadrature first tier: a fresh status for every call
        return z, w, first_tier()
    return rule


def fast_start(cov0, activation, sigma_w2, sigma_b2, depth, degree, k0=None):
    """The validated arguments of a propagation when the fast path can certify all of them, else None.

    Returns ``(act, sym, k0, log0, (z, w, cf), sigma_w2, sigma_b2)``: the activation, ``cov0``
    validated and symmetrised (:func:`meanfield._checks.check_covariance`), ``normalised_start(sym)``,
    the kernel rule and the variances as floats.
    ``k0``, if given, is the (D, D) buffer to write the normalised start into. Every check of the
    general path (``dense._propagate_log``) passes for these arguments: the activation is built in,
    ``cov0`` a certified covariance (:func:`cov_fast`), the variances in ``[0, inf)`` (:func:`variance_value`), ``depth``
    an int in ``[0, MAX_DEPTH]`` with ``(depth + 1) D^2 <= MAX_PROPAGATION_SIZE``, ``degree`` an int
    in ``[1, 2000]``.
    """
    act = builtin_activation(activation)
    sw = variance_value(sigma_w2)
    sb = variance_value(sigma_b2)
    if (
        act is None
        or not plain_matrix(cov0)
        or sw is None
        or sb is None
        or type(depth) is not int
        or type(degree) is not int
        or not 1 <= degree <= 2000
    ):
        return None
    n = cov0.shape[0]
    if not 0 <= depth <= MAX_DEPTH or (depth + 1) * n * n > MAX_PROPAGATION_SIZE:
        return None
    sym = np.empty((n, n))
    if k0 is None:
        k0 = np.empty((n, n))
    m = cov_fast(cov0, sym, k0)
    if m < 0.0:
        return None
    return act, sym, k0, (math.log(m) if m > 0.0 else 0.0), rule_for(act, degree), sw, sb


def finish(logs, k, sym):
    """``unscale`` of a trajectory with ``out[0] = sym``, or None where the general path must decide
    (a non-finite entry, a log scale beyond ``LOG_FAST``, a variance that over- or underflows)."""
    if not trajectory_ok(logs, k, LOG_FAST):
        return None
    out = np.empty_like(k)
    if not unscale_into(np.exp(logs), k, sym, out):
        return None
    return out


def float64_trajectory(fast, what, general, *args):
    """The float64 covariances of a log-scale propagation (``propagate`` of dense and conv networks).

    ``fast`` is the compiled path's ``(LogPropagation, cov0)`` or None; None runs
    ``general(*args)``, which returns the same pair. :func:`finish` expands the compiled path's
    result where it can; otherwise ``unscale`` does (raising, with ``what`` in the message, where a
    variance over- or underflows). Index 0 is exactly the input ``cov0``, not
    ``exp(log m) * (cov0 / m)``.
    """
    if fast is None:
        res, cov0 = general(*args)
    else:
        res, cov0 = fast
        out = finish(res.log_scale, res.normalized, cov0)  # unscale's products in one compiled call
        if out is not None:
            return out
    out = unscale(res, what)  # raises where a variance over- or underflows
    out[0] = cov0
    return out
