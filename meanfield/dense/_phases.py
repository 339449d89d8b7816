"""Fixed points, depth scales and phase diagrams (Schoenholz et al. 2017, eqs. 6-9; Xiao et al. 2018, eq. 2.7)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .._checks import (
    as_real_array,
    check_nonnegative,
    check_scalar,
)
from .._logscale import HOMOGENEOUS
from .._results import Result
from ..activations import RELU_POWER, get_activation
from ..gaussian import DEFAULT_DEGREE, expectation, needs_full_tree, pair_expectation, require_full_tree
from ._common import CRITICAL_ATOL, _act, _require_builtin, _variances
from ._solvers import _fixed_point_values, _fp_full_rule, _fp_rule, _phase_kernel, _q_chi1_values

if TYPE_CHECKING:  # annotations only
    from ..activations import Activation


def _depth_scale(chi):
    chi = np.abs(np.asarray(chi, dtype=np.float64))  # chi < 0 (cos, rbf q-maps): oscillating decay at rate |chi|
    with np.errstate(divide="ignore"):
        xi = np.where(chi < 1.0, -1.0 / np.log(np.where(chi < 1.0, chi, 0.5)), np.inf)
    xi = np.where(np.abs(chi - 1.0) <= CRITICAL_ATOL, np.inf, xi)
    return xi if xi.ndim else float(xi)


def _phase(chi_1):
    if abs(chi_1 - 1.0) <= CRITICAL_ATOL:
        return "critical"
    return "ordered" if chi_1 < 1.0 else "chaotic"


@dataclass(frozen=True)
class FixedPoint(Result):
    """The stable fixed point of the dense mean-field maps and its stability (Xiao et al. 2018, eq. 2.7).

    Attributes
    ----------
    q_star : float
        Fixed-point variance reached from small input variances: finite and >= 0, or ``inf`` when
        q grows without bound (relu with sigma_w2 > 2; softplus, swish, gelu when
        sigma_w2 / 2 > 1 and no finite fixed point lies below; relu at sigma_w2 = 2 with bias).
    c_star : float
        Fixed-point correlation (1 in the ordered phase and wherever q* is 0 or inf).
    chi_1 : float
        sigma_w2 E phi'(sqrt(q*) z)^2: slope of the c-map at c = 1, mean squared singular value
        of the layer Jacobian, per-layer factor of gradient variance. At q* = inf: the value of
        the asymptote, sigma_w2 (a^2 + b^2) / 2 for phi(x) ~ a x (x > 0), b x (x < 0)
        (sigma_w2 / 2 for the ReLU-like, sigma_w2 lambda^2 / 2 for selu, sigma_w2 for abs); at
        q* = 0: sigma_w2 phi'(0)^2; 0 when sigma_w2 = 0 (the Jacobian is 0, also for sign).
        ``inf`` for sign with sigma_w2 > 0 (phi' is a Dirac delta) and at q* = inf for activations growing faster
        than linearly (exp, relu_power with n > 1), as chi_c and chi_q there.
    chi_c : float
        Slope of the c-map at c*: sigma_w2 E phi'(u1) phi'(u2) at (q*, c*) when 0 < q* < inf; at
        q* = inf, chi_1 (the asymptote's value); at q* = 0, the slope of the limiting c-map, 1
        (0 when sigma_w2 = 0).
    chi_q : float
        Slope of the q-map at q* (at q* = inf: sigma_w2 times the asymptotic slope m_inf).
    xi_q, xi_c : float
        Depth scales -1/log|chi_q|, -1/log|chi_c| (chi_q < 0 for non-monotone q-maps: cos, rbf); ``inf`` where the chi is >= 1 or within
        CRITICAL_ATOL of 1 (no exponential convergence: power law at criticality, frozen or
        polynomially converging correlations at q* = 0, growth at q* = inf); 0 where the chi is 0.
    phase : str
        'ordered' (chi_1 < 1), 'chaotic' (chi_1 > 1) or 'critical' (``|chi_1 - 1| <= 1e-9``).
    c_frozen : bool
        True where q* = 0 and the c-map is the identity (phi smooth at 0 with phi(0) = 0 and
        phi'(0) != 0, no bias, the ordered phase; linear): correlations then stop at an
        input-dependent value instead of converging to c_star.

    Notes
    -----
    ``inf`` values are meaningful, not errors: q* = inf with chi_1 > 1 is the chaotic phase of
    ReLU-like activations, where the variance grows exponentially (rate chi_q).
    """

    q_star: float
    c_star: float
    chi_1: float
    chi_c: float
    chi_q: float
    xi_q: float
    xi_c: float
    phase: str
    c_frozen: bool = False


def _fixed_point_error(act, sw, sb):
    return ValueError(
        f"the fixed point q* of {act.name} at sigma_w2 = {sw!r}, sigma_b2 = {sb!r} exceeds the float64 range "
        "(or lies too close to its top for the solver's arithmetic)"
    )


@functools.cache
def _relu_power_origin(n: float) -> tuple[float, float]:
    """``(c*, chi_c)`` of relu^n (n >= 2) at q* = 0 (sigma_b2 = 0) and at q* = inf.

    relu^n is positively homogeneous of degree n, so its c-map is the q-independent normalised map
    f(c) = E relu(u1)^n relu(u2)^n / E relu(u)^2n (unit variances, correlation c), and
    chi_c = f'(c*) = n^2 E relu(u1)^(n-1) relu(u2)^(n-1) / E relu(u)^2n (Price's theorem). c = 1 is
    a fixed point of slope n^2 / (2n - 1) > 1: unstable. f(0) > 0, so the stable one lies in (0, 1).
    """
    from scipy.optimize import brentq

    act = get_activation("relu_power", n=n)
    norm = float(expectation(act, 1.0))

    def f(c):
        return float(pair_expectation(act, 1.0, 1.0, c)) / norm

    c_star = brentq(lambda c: f(c) - c, 0.0, 1.0 - 1e-6, xtol=1e-15, rtol=1e-15, maxiter=200)
    chi_c = float(pair_expectation(act, 1.0, 1.0, c_star, (1, 1))) / norm
    return c_star, chi_c


def _origin_correlations(act, sigma_w2, q_star, c_star, chi_c, frozen):
    """Replace the correlation values of relu^n at q* = 0 and q* = inf in place: there its c-map is
    the scale-free map of :func:`_relu_power_origin` (not the identity, and not a relu asymptote)."""
    if act.code != RELU_POWER:
        return
    q_star = np.asarray(q_star)
    at = ((q_star == 0.0) | np.isinf(q_star)) & (np.asarray(sigma_w2) > 0.0)
    if at.any():
        c_star[at], chi_c[at] = _relu_power_origin(act.param)
        frozen[at] = False


def _by_family(kernel, act, degree, rule, args, out, tail=()):
    """``kernel(code, param, homogeneous, *args, z, w, cf, ex, out, *tail)`` on ``rule`` (:func:`_fp_rule`).

    Where a closed-form-only pass left NaN in ``out`` (belt and braces: no built-in does), the pass
    is redone with the closed forms and the quadrature fallback (:func:`_fp_full_rule`).
    """
    z, w, cf, ex = rule
    kernel(act.code, act.param, act.code in HOMOGENEOUS, *args, z, w, cf, ex, out, *tail)
    if needs_full_tree(cf):  # a quadrature first tier reached the graded rule: every rule
        kernel(act.code, act.param, act.code in HOMOGENEOUS, *args, z, w, None, ex, out, *tail)
    if z is None and np.isnan(out).any():
        z, w, cf, ex = _fp_full_rule(act, degree)
        kernel(act.code, act.param, act.code in HOMOGENEOUS, *args, z, w, cf, ex, out, *tail)


def fixed_point(
    activation: str | Activation, sigma_w2: float, sigma_b2: float, degree: int = DEFAULT_DEGREE
) -> FixedPoint:
    """The stable fixed point (q*, c*), the chi's and depth scales of a deep dense network.

    Parameters
    ----------
    activation : str or Activation
        A built-in activation.
    sigma_w2, sigma_b2 : float
        Variances (>= 0, finite), scalars.
    degree : int
        Gauss-Hermite degree for activations without closed forms.

    Returns
    -------
    FixedPoint
        ``q_star``, ``xi_q``, ``xi_c`` may be ``inf`` (see :class:`FixedPoint`); nothing is NaN.

    Raises
    ------
    ValueError
        Negative or non-finite variances; a user-defined activation; q* beyond the float64 range
        (e.g. sigma_b2 ~ 1e308).
    TypeError
        Complex, boolean or array arguments.

    Notes
    -----
    Xiao et al. 2018, eq. 2.7; the q* = 0 and q* = inf edges as in the module notes. Time is bounded:
    every loop has an iteration cap (a few ms per point; ~10 ms at variances ~1e300).

    Examples
    --------
    >>> fp = fixed_point("relu", 2.0, 0.0)
    >>> fp.phase, fp.chi_1
    ('critical', 1.0)
    """
    act = _act(activation)
    _require_builtin(act, "fixed_point")
    sigma_w2, sigma_b2 = _variances(sigma_w2, sigma_b2)
    out = np.empty(6)
    # the serial kernel: a one-point call to the parallel grid kernel pays a thread-pool launch;
    # c0 passed explicitly (as by _phase_kernel): an omitted default is another type signature,
    # which compiled the kernel a second time
    _by_family(_fixed_point_values, act, degree, _fp_rule(act, degree), (sigma_w2, sigma_b2), out, (0.0,))
    if np.isnan(out[0]):
        raise _fixed_point_error(act, sigma_w2, sigma_b2)
    out = out[None, :]
    _origin_correlations(act, sigma_w2, out[:, 0], out[:, 1], out[:, 3], out[:, 5])
    q, c, chi1, chic, chiq, frozen = (float(v) for v in out[0])
    return FixedPoint(
        q_star=q,
        c_star=c,
        chi_1=chi1,
        chi_c=chic,
        chi_q=chiq,
        xi_q=_depth_scale(chiq),
        xi_c=_depth_scale(chic),
        phase=_phase(chi1),
        c_frozen=bool(frozen),
    )


def _q_star_chi_1(
    act: Activation, sigma_w2: float, sigma_b2: float, degree: int = DEFAULT_DEGREE
) -> tuple[float, float]:
    """``(q*, chi_1)`` of :func:`fixed_point` (the same numbers, the same errors), without the c-map:
    its first call compiles none of the pair integrals (for :func:`critical_sigma_w2` and the
    Jacobian spectra, which need no more)."""
    _require_builtin(act, "fixed_point")
    sigma_w2, sigma_b2 = _variances(sigma_w2, sigma_b2)
    out = np.empty(2)
    _by_family(_q_chi1_values, act, degree, _fp_rule(act, degree), (sigma_w2, sigma_b2), out)
    if np.isnan(out[0]):
        raise _fixed_point_error(act, sigma_w2, sigma_b2)
    return float(out[0]), float(out[1])


@dataclass(frozen=True)
class PhaseDiagram(Result):
    """Fixed-point quantities on a (sigma_w2, sigma_b2) grid; arrays of shape (len(sigma_w2), len(sigma_b2)).

    Attributes
    ----------
    sigma_w2, sigma_b2 : ndarray
        The 1-D grids.
    q_star, c_star, chi_1, chi_c, xi_c : ndarray
        As in :class:`FixedPoint` (``q_star`` and ``xi_c`` may be ``inf``).
    c_frozen : ndarray of bool or None
        As in :class:`FixedPoint`.
    """

    sigma_w2: np.ndarray
    sigma_b2: np.ndarray
    q_star: np.ndarray
    c_star: np.ndarray
    chi_1: np.ndarray
    chi_c: np.ndarray
    xi_c: np.ndarray
    c_frozen: np.ndarray | None = None


def _grid(x, name):
    arr = as_real_array(x, name)
    arr = np.atleast_1d(arr)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D grid, got shape {np.shape(x)}")
    if np.any(arr < 0):
        raise ValueError(f"{name} must be >= 0 (variances)")
    return np.ascontiguousarray(arr, dtype=np.float64)


#: Rows of the sigma_w2 grid per task when :func:`phase_diagram` runs on an executor of
#: :mod:`meanfield.parallel` other than the serial one (a task of 8 rows x 100 columns is ~0.1-0.3 s
#: of CPU for tanh: well above the executors' few-ms overhead per task). Read at each call from
#: the public package (``meanfield.dense.PHASE_ROWS_PER_TASK``, which re-exports this value), so
#: that setting it there takes effect.
PHASE_ROWS_PER_TASK = 8


def _rows_per_task() -> int:
    from .. import dense  # the public name, read at call time

    return dense.PHASE_ROWS_PER_TASK


def _distributed() -> bool:
    """True inside ``meanfield.parallel.using(...)`` with an executor other than the serial one."""
    from .. import parallel

    return not isinstance(parallel.current(), parallel.SerialExecutor)


def _phase_diagram_rows(sw, sb, activation, degree):
    """:func:`phase_diagram` by blocks of rows on the current executor (:func:`meanfield.parallel.sweep`).

    Each row is computed exactly as in-process (the kernel warm-starts c* along sigma_b2 only, never
    across rows), so the result is bit for bit the in-process one.
    """
    from .. import parallel

    return parallel.sweep(
        phase_diagram,
        "sigma_w2",
        sw,
        rows_per_chunk=_rows_per_task(),
        keep=("sigma_b2",),
        activation=activation,
        sigma_b2=sb,
        degree=degree,
    )


def phase_diagram(
    activation: str | Activation, sigma_w2: float, sigma_b2: float, degree: int = DEFAULT_DEGREE
) -> PhaseDiagram:
    """The order-to-chaos phase diagram (Poole et al. 2016 Fig. 2; Xiao et al. 2018 Fig. S1), vectorised.

    Parameters
    ----------
    activation : str or Activation
        A built-in activation.
    sigma_w2, sigma_b2 : array_like, 1-D
        Non-empty grids of variances (>= 0, finite).
    degree : int
        Gauss-Hermite degree for activations without closed forms.

    Returns
    -------
    PhaseDiagram
        The critical line is the level set ``chi_1 == 1``; ``q_star`` and ``xi_c`` may be
        ``inf`` (chaotic ReLU-like points, see :class:`FixedPoint`).

    Raises
    ------
    ValueError
        Empty, multi-dimensional, negative or non-finite grids; q* beyond the float64 range at
        a grid point; a user-defined activation.
    TypeError
        Complex or boolean grids.

    Notes
    -----
    In-process blocks of rows run on ``numba.get_num_threads()`` threads (a GIL-free compiled
    kernel; ``NUMBA_NUM_THREADS`` sets the count). Inside ``with meanfield.parallel.using(...)``
    (local processes, a Dask cluster; the CLI's ``--workers`` / ``--scheduler``) blocks of
    ``PHASE_ROWS_PER_TASK`` (8) rows of the ``sigma_w2`` grid are the tasks; the result is the
    same bit for bit.
    """
    act = _act(activation)
    _require_builtin(act, "phase_diagram")
    sw = _grid(sigma_w2, "sigma_w2")
    sb = _grid(sigma_b2, "sigma_b2")
    rule = _fp_rule(act, degree)
    if sw.size > _rows_per_task() and _distributed():
        return _phase_diagram_rows(sw, sb, activation, degree)
    out = np.empty((sw.size, sb.size, 6))
    _by_family(_phase_kernel, act, degree, rule, (sw, sb), out)
    bad = np.isnan(out[..., 0])
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise _fixed_point_error(act, float(sw[i]), float(sb[j]))
    _origin_correlations(act, sw[:, None], out[..., 0], out[..., 1], out[..., 3], out[..., 5])
    return PhaseDiagram(
        sigma_w2=sw,
        sigma_b2=sb,
        q_star=out[..., 0],
        c_star=out[..., 1],
        chi_1=out[..., 2],
        chi_c=out[..., 3],
        xi_c=_depth_scale(out[..., 3]),
        c_frozen=out[..., 5] > 0,
    )


def critical_sigma_w2(
    activation: str | Activation,
    sigma_b2: float,
    degree: int = DEFAULT_DEGREE,
    bracket: tuple[float, float] = (1e-06, 100.0),
) -> float | np.ndarray:
    """The edge of chaos: the sigma_w2 at which chi_1 = 1, for each sigma_b2.

    Solved with Brent's method (at most 200 iterations) on chi_1(sigma_w2) - 1 (chi_1 increases
    with sigma_w2).

    Parameters
    ----------
    activation : str or Activation
        A built-in activation.
    sigma_b2 : float or array_like
        Bias variances (>= 0, finite).
    degree : int
        Gauss-Hermite degree for activations without closed forms.
    bracket : (float, float)
        Search interval ``0 <= lo < hi`` (finite) for sigma_w2.

    Returns
    -------
    float or ndarray like ``sigma_b2``; never NaN.

    Raises
    ------
    ValueError
        No crossing in ``bracket``; bad arguments.
    TypeError
        Complex or boolean arguments; a ``bracket`` that is not a pair of numbers.

    Notes
    -----
    Where q* jumps from a finite value (or 0) to infinity as sigma_w2 grows, chi_1 jumps across 1
    and the returned point is the jump (within 1e-14): gelu and swish at sigma_b2 = 0 are ordered
    with q* = 0 and chi_1 = sigma_w2 / 4 up to sigma_w2 = 4, and chaotic with q* = inf and
    chi_1 = sigma_w2 / 2 beyond, so 4 is returned.

    Examples
    --------
    >>> round(critical_sigma_w2("relu", 0.0), 12)
    2.0
    """
    from scipy.optimize import brentq

    act = _act(activation)
    _require_builtin(act, "critical_sigma_w2")
    require_full_tree()  # the bracket reaches q* > 9 (the graded rule): no first tier compiled for nothing
    sb = check_nonnegative(sigma_b2, "sigma_b2", strict=True)
    if isinstance(bracket, (str, bytes)) or not hasattr(bracket, "__len__") or len(bracket) != 2:
        raise TypeError(f"bracket must be a pair (lo, hi), got {bracket!r}")
    lo = check_scalar(bracket[0], "bracket[0]")
    hi = check_scalar(bracket[1], "bracket[1]")
    if not 0 <= lo < hi:
        raise ValueError(f"bracket must satisfy 0 <= lo < hi, got {tuple(bracket)}")

    def f(sw, b):
        return _q_star_chi_1(act, sw, b, degree)[1] - 1.0

    def solve(b):
        flo, fhi = f(lo, b), f(hi, b)
        if flo == 0.0:
            return lo
        if fhi == 0.0:
            return hi
        if flo * fhi > 0:
            raise ValueError(f"chi_1 = 1 is not crossed for sigma_w2 in {tuple(bracket)} at sigma_b2 = {b}")
        return brentq(f, lo, hi, args=(b,), xtol=1e-14, rtol=1e-15, maxiter=200)

    if np.ndim(sb) == 0:
        return solve(float(sb))
    if np.size(sb) == 0:
        return np.empty(np.shape(sb))
    return np.vectorize(solve, otypes=[float])(sb)
