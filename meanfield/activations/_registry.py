"""The activation registry: built-in codes, the compiled :func:`evaluate`, :class:`Activation`, ``get_activation``."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numba
import numpy as np

from .._checks import check_bool, check_scalar

__all__ = ["ACTIVATIONS", "Activation", "get_activation"]

# Integer codes of the built-in activations (private to the kernels; names are the public API).
LINEAR, TANH, ERF, RELU, LEAKY_RELU, HARD_TANH, SIGMOID, SOFTPLUS, SWISH, GELU = range(10)
# Closed-form families (sin ... relu_power) and elu / selu (quadrature).
SIN, COS, ABS, SIGN, EXP, RBF, RELU_POWER, ELU, SELU = range(10, 19)
CUSTOM = -1

_CODES = {
    "linear": LINEAR,
    "tanh": TANH,
    "erf": ERF,
    "relu": RELU,
    "leaky_relu": LEAKY_RELU,
    "hard_tanh": HARD_TANH,
    "sigmoid": SIGMOID,
    "softplus": SOFTPLUS,
    "swish": SWISH,
    "gelu": GELU,
    "sin": SIN,
    "cos": COS,
    "abs": ABS,
    "sign": SIGN,
    "exp": EXP,
    "rbf": RBF,
    "relu_power": RELU_POWER,
    "elu": ELU,
    "selu": SELU,
}
_KINKED = {RELU, LEAKY_RELU, HARD_TANH, ABS, SIGN, SELU}
#: The one parameter of the parametrised built-ins: name -> (keyword, default).
_PARAMS = {
    LEAKY_RELU: ("slope", 0.01),
    RBF: ("gamma", 0.5),
    RELU_POWER: ("n", 2),
    ELU: ("alpha", 1.0),
    HARD_TANH: ("bound", 1.0),
}
#: SELU's constants (Klambauer et al. 2017, eq. 14): selu(x) = lambda * elu_alpha(x).
SELU_ALPHA = 1.6732632423543772
SELU_LAMBDA = 1.0507009873554805
#: Largest exponent n of relu_power whose moments are tabulated in closed form.
RELU_POWER_MAX = 4
#: Positively homogeneous built-ins: phi(s u) = s phi(u) for s > 0 (closed-form moments).
HOMOGENEOUS = (LINEAR, RELU, LEAKY_RELU)
#: Smooth built-ins that grow like ReLU: phi(u) - relu(u) decays as |u| -> infinity.
RELU_LIKE = (SOFTPLUS, SWISH, GELU)
#: Bounded built-ins: phi tends to constants as u -> +-infinity.
BOUNDED = (TANH, ERF, SIGMOID, HARD_TANH)
#: Names accepted by :func:`get_activation`.
ACTIVATIONS = tuple(_CODES)

_SQRT_2 = math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


@numba.njit(inline="always")
def _sigmoid(x):
    if x >= 0.0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


# Not inlined: inlining this ten-way switch into every kernel multiplied the first-call
# compile time (dense.propagate 27 s -> 12 s without it, same results and steady-state speed,
# benchmarks/bench_cold_start.py); LLVM still inlines it where that pays.
@numba.njit(cache=True)
def evaluate(code, param, deriv, x):
    """phi^(deriv)(x) of built-in activation ``code`` (deriv 0, 1 or 2); scalar, for kernels."""
    if code == LINEAR:
        if deriv == 0:
            return x
        return 1.0 if deriv == 1 else 0.0
    if code == TANH:
        t = math.tanh(x)
        if deriv == 0:
            return t
        if deriv == 1:
            return 1.0 - t * t
        return -2.0 * t * (1.0 - t * t)
    if code == ERF:
        if deriv == 0:
            return math.erf(x)
        g = _TWO_OVER_SQRT_PI * math.exp(-x * x)
        return g if deriv == 1 else -2.0 * x * g
    if code == RELU:
        if deriv == 0:
            return x if x > 0.0 else 0.0
        if deriv == 1:
            return 1.0 if x > 0.0 else 0.0
        return 0.0
    if code == LEAKY_RELU:
        if deriv == 0:
            return x if x > 0.0 else param * x
        if deriv == 1:
            return 1.0 if x > 0.0 else param
        return 0.0
    if code == HARD_TANH:  # param: the bound (1 for the plain hard_tanh)
        if deriv == 0:
            return min(param, max(-param, x))
        if deriv == 1:
            return 1.0 if -param < x < param else 0.0
        return 0.0
    if code == SIGMOID:
        s = _sigmoid(x)
        if deriv == 0:
            return s
        if deriv == 1:
            return s * (1.0 - s)
        return s * (1.0 - s) * (1.0 - 2.0 * s)
    if code == SOFTPLUS:
        if deriv == 0:
            return max(x, 0.0) + math.log1p(math.exp(-abs(x)))
        s = _sigmoid(x)
        return s if deriv == 1 else s * (1.0 - s)
    if code == SWISH:
        s = _sigmoid(x)
        if deriv == 0:
            return x * s
        if deriv == 1:
            return s + x * s * (1.0 - s)
        return s * (1.0 - s) * (2.0 + x * (1.0 - 2.0 * s))
    if code == GELU:
        pdf = _INV_SQRT_2PI * math.exp(-0.5 * x * x)
        if deriv == 0:
            return 0.5 * x * (1.0 + math.erf(x / _SQRT_2))
        if deriv == 1:
            return 0.5 * (1.0 + math.erf(x / _SQRT_2)) + x * pdf
        return pdf * (2.0 - x * x)
    if code == SIN:
        if deriv == 0:
            return math.sin(x)
        return math.cos(x) if deriv == 1 else -math.sin(x)
    if code == COS:
        if deriv == 0:
            return math.cos(x)
        return -math.sin(x) if deriv == 1 else -math.cos(x)
    if code == ABS:
        if deriv == 0:
            return abs(x)
        if deriv == 1:
            return 1.0 if x > 0.0 else (-1.0 if x < 0.0 else 0.0)
        return 0.0
    if code == SIGN:
        if deriv == 0:
            return 1.0 if x > 0.0 else (-1.0 if x < 0.0 else 0.0)
        return 0.0
    if code == EXP:
        return math.exp(x)
    if code == RBF:
        e = math.exp(-param * x * x)
        if deriv == 0:
            return e
        if deriv == 1:
            return -2.0 * param * x * e
        return (4.0 * param * param * x * x - 2.0 * param) * e
    if code == RELU_POWER:
        if x <= 0.0:
            return 0.0
        if deriv == 0:
            return x**param
        if deriv == 1:
            return param * x ** (param - 1.0)
        return param * (param - 1.0) * x ** (param - 2.0)
    if code == ELU or code == SELU:
        alpha = param if code == ELU else SELU_ALPHA
        lam = 1.0 if code == ELU else SELU_LAMBDA
        if x > 0.0:
            if deriv == 0:
                return lam * x
            return lam if deriv == 1 else 0.0
        if deriv == 0:
            return lam * alpha * math.expm1(x)
        return lam * alpha * math.exp(x)
    return math.nan


#: :func:`evaluate` itself (kept as a name for the kernels that import it; one compiled copy).
evaluate_call = evaluate


@numba.njit(cache=True)
def asymptote(code, param):
    """Slopes ``(a, b)`` of built-in ``code``'s linear asymptotes: phi(x) ~ a x as x -> +inf, ~ b x as x -> -inf.

    The one description of every built-in's behaviour at large |x| from which the large-variance
    limits are derived (:func:`asymptotic_slope`, :func:`asymptotic_derivative_moment`,
    :func:`asymptotic_slopes`): ``(0, 0)`` for activations growing slower than |x| (bounded ones,
    sin, cos, rbf, sign), ``(inf, inf)`` for those growing faster (exp, relu_power).
    """
    if code == LINEAR:
        return 1.0, 1.0
    if code == RELU or code == SOFTPLUS or code == SWISH or code == GELU or code == ELU:
        return 1.0, 0.0
    if code == LEAKY_RELU:
        return 1.0, param
    if code == SELU:
        return SELU_LAMBDA, 0.0
    if code == ABS:
        return 1.0, -1.0
    if code == EXP or code == RELU_POWER:
        return math.inf, math.inf
    return 0.0, 0.0


@numba.njit(inline="always")
def asymptotic_slope(code, param):
    """lim_{q -> inf} E phi(sqrt(q) z)^2 / q of built-in ``code`` (0 for bounded activations).

    With the asymptotes of :func:`asymptote`, phi(x) ~ a x (x > 0) and b x (x < 0), the limit is
    (a^2 + b^2) / 2 (ReLU: 1/2; softplus, swish, gelu and elu, which differ from ReLU by a term
    decaying at infinity, also 1/2; selu lambda^2 / 2). The q-map grows like ``sigma_w2 m q`` for
    large q, so q* is infinite when ``sigma_w2 m > 1``.
    """
    a, b = asymptote(code, param)
    return 0.5 * (a * a + b * b)


@numba.njit(inline="always")
def asymptotic_derivative_moment(code, param):
    """lim_{q -> inf} E phi'(sqrt(q) z)^2 of built-in ``code``: (a^2 + b^2) / 2 with :func:`asymptote`'s slopes.

    phi'(u) tends to a for u -> +inf and to b for u -> -inf, so chi_1 = sigma_w2 (a^2 + b^2) / 2
    at q* = inf (infinite for exp and relu_power; 0 for the bounded activations).
    """
    a, b = asymptote(code, param)
    return 0.5 * (a * a + b * b)


@numba.njit(cache=True)
def origin_slopes(code, param):
    """Slopes ``(a0, b0)`` of built-in ``code`` at 0: phi(x) - phi(0) ~ a0 x as x -> 0+, ~ b0 x as x -> 0-.

    ``a0 != b0`` for the activations with a kink at 0 (relu, leaky_relu, abs, elu with alpha != 1,
    selu): their q -> 0 limits are those of the piecewise-linear map a0 x (x > 0), b0 x (x < 0),
    E phi'(u)^2 -> (a0^2 + b0^2) / 2, not the pointwise phi'(0)^2. ``(phi'(0), phi'(0))``
    elsewhere (sign: 0, its jump is not a slope).
    """
    if code == RELU:
        return 1.0, 0.0
    if code == LEAKY_RELU:
        return 1.0, param
    if code == ABS:
        return 1.0, -1.0
    if code == ELU:
        return 1.0, param
    if code == SELU:
        return SELU_LAMBDA, SELU_LAMBDA * SELU_ALPHA
    # a run-time order 1 (``code - code + 1``): the literal 1 compiled a second copy of evaluate
    d = evaluate(code, param, code - code + 1, 0.0)
    return d, d


def _piecewise_linear(a, b, what, name):
    if not (0.0 < a < math.inf) or not math.isfinite(b):
        raise ValueError(f"activation {name!r} has no piecewise-linear {what}")
    if b == 0.0:
        return a, get_activation("relu")
    if b == a:
        return a, get_activation("linear")
    return a, get_activation("leaky_relu", slope=b / a)


def origin_activation(activation):
    """``(scale, base)`` with phi(x) - phi(0) ~ ``scale * base(x)`` near 0 for a built-in kinked at 0.

    ``base`` is relu, linear or leaky_relu (see :func:`origin_slopes`); its normalised kernel map
    is the c-map in the limit q -> 0. Raises ``ValueError`` when phi'(0+) is 0.
    """
    act = get_activation(activation)
    a, b = origin_slopes(act.code, act.param)
    return _piecewise_linear(float(a), float(b), "behaviour at 0", act.name)


@numba.njit(inline="always")
def bound_squared(code, param):
    """sup phi^2 of a bounded built-in (tanh, erf, sigmoid: 1; hard_tanh: its bound squared)."""
    if code == HARD_TANH:
        return param * param
    return 1.0


def asymptotic_slopes(activation) -> tuple[float, float]:
    """``(a, b)`` of :func:`asymptote` for an :class:`Activation` or a built-in name (Python callers)."""
    act = get_activation(activation)
    if not act.is_builtin:
        raise ValueError(f"the asymptotes of the user-defined activation {act.name!r} are not known")
    a, b = asymptote(act.code, act.param)
    return float(a), float(b)


def asymptote_activation(activation):
    """``(scale, base)``: phi's large-|u| asymptote is ``scale * base``, ``base`` relu or leaky_relu.

    For the piecewise-linear asymptote a x (x > 0), b x (x < 0) with a > 0: ``base`` is
    ``relu`` when b = 0 and ``leaky_relu(slope=b / a)`` otherwise, ``scale = a``. Its normalised
    kernel map is the c-map at q = inf; ``scale**2 * E base'(z)^2`` is chi_1 / sigma_w2 there.
    Raises ``ValueError`` when the asymptote is not linear (a = 0 or infinite).
    """
    a, b = asymptotic_slopes(activation)
    return _piecewise_linear(a, b, "asymptote", get_activation(activation).name)


@numba.njit(cache=True)
def _apply(code, param, deriv, x, out):
    for i in range(x.size):
        out[i] = evaluate(code, param, deriv, x[i])


def _builtin(code, param, deriv):
    def f(x):
        arr = np.asarray(x, dtype=np.float64)
        flat = np.ascontiguousarray(arr).reshape(-1)
        out = np.empty_like(flat)
        _apply(code, float(param), deriv, flat, out)
        return out.reshape(arr.shape) if arr.ndim else float(out[0])

    return f


@dataclass(frozen=True)
class Activation:
    """A pointwise nonlinearity with its first two derivatives.

    Attributes
    ----------
    name : str
        e.g. ``"tanh"`` or ``"leaky_relu(slope=0.1)"``.
    phi, dphi, d2phi : callable
        NumPy-vectorised phi, phi', phi''.
    code : int
        Kernel dispatch code of a built-in; -1 for a user-defined activation.
    param : float
        The built-in's parameter: leaky_relu's negative slope (default 0.01), hard_tanh's bound (1),
        rbf's gamma (0.5), relu_power's n (2), elu's alpha (1); 0 for the other built-ins and for a
        user-defined activation.
    smooth : bool
        False when phi'' has Dirac parts: relu, leaky_relu, hard_tanh, abs, sign, selu, and elu with
        alpha != 1 (a user-defined activation: see :meth:`from_functions`).
    breakpoints : tuple of float
        Points where a user-defined activation's phi or phi' jumps (kinks and steps), sorted;
        its Gaussian expectations are integrated piecewise between them. Empty for the built-ins
        (their kinks are in their closed forms and quadrature rules).
    """

    name: str
    phi: Callable = field(repr=False, compare=False)
    dphi: Callable = field(repr=False, compare=False)
    d2phi: Callable | None = field(default=None, repr=False, compare=False)
    code: int = CUSTOM
    param: float = 0.0
    smooth: bool = True
    breakpoints: tuple = ()

    @property
    def is_builtin(self) -> bool:
        return self.code != CUSTOM

    @classmethod
    def from_functions(cls, name, phi, dphi, d2phi=None, smooth="auto", breakpoints=None) -> Activation:
        """A user-defined activation from NumPy-vectorised callables.

        Gaussian expectations of custom activations use the quadrature rules of the built-ins
        (:mod:`meanfield.gaussian`: Gauss-Hermite while sqrt(q) <= ``GH_MAX_SCALE``, a trapezoid
        rule up to ``TRAPEZOID_MAX_SCALE``, graded Gauss-Legendre panels beyond), evaluating
        ``phi`` with NumPy on the nodes (uncached, slower; no Numba). These rules assume that the
        activation is smooth, with its structure within a few units of u = 0. An activation with
        kinks or jumps (phi or phi' discontinuous: relu-like, hard clipping, steps) is integrated
        instead on Gauss-Legendre panels cut at its ``breakpoints`` (``degree // 5`` nodes per
        panel, see :func:`meanfield.gaussian.piecewise_panel_nodes`), so that the result converges
        like that of a smooth function.

        Parameters
        ----------
        name : str
            A non-empty label (used in messages and ``repr``).
        phi, dphi : callable
            phi and phi', each mapping a float64 array to a real array of the same shape.
        d2phi : callable or None
            phi''; needed only for expectations with derivative order 2.
        smooth : bool or "auto"
            False when phi'' has Dirac parts (then expectations of order 2 are refused).
            ``"auto"`` (default): False exactly when phi or phi' jumps (breakpoints given, or found).
        breakpoints : sequence of float or None
            The points where phi or phi' (or phi'') jumps. None (default): located automatically,
            by scanning phi, phi' and phi'' (when given) on [-BREAKPOINT_SCAN, BREAKPOINT_SCAN] with step
            ``BREAKPOINT_STEP`` and bisecting each jump to ~1e-12 (jumps closer together than
            the step, or further out, are not found: pass them). An empty sequence declares the
            activation smooth (no scan).

        Returns
        -------
        Activation
            With ``code == -1``.

        Raises
        ------
        TypeError
            ``name`` is not a string, ``smooth`` is not a bool or ``"auto"``, ``breakpoints`` is not a
            sequence of real numbers, or a function returns complex values.
        ValueError
            ``name`` is empty, a function is not callable, fails on, returns the wrong shape or
            non-finite values at the probe points ``linspace(-4, 4, 17)``;
            ``smooth=True`` while phi or phi' jumps; breakpoints that are not finite, or more than
            ``MAX_BREAKPOINTS``. (Non-finite values beyond the probe points are reported where the
            quadrature reaches them.)

        Examples
        --------
        >>> import numpy as np
        >>> cube = Activation.from_functions("cube", lambda x: x**3, lambda x: 3 * x**2, lambda x: 6 * x)
        >>> float(cube.phi(2.0))
        8.0
        >>> step = Activation.from_functions("step", lambda x: (x > 0) * 1.0, lambda x: 0.0 * x)
        >>> step.breakpoints, step.smooth
        ((0.0,), False)
        """
        if not isinstance(name, str):
            raise TypeError(f"name must be a non-empty str, got {type(name).__name__} {name!r}")
        if not name.strip():
            raise ValueError("name must be a non-empty str, got an empty name")
        for label, f in (("phi", phi), ("dphi", dphi)):
            if not callable(f):
                raise ValueError(f"{label} must be callable")
        if d2phi is not None and not callable(d2phi):
            raise ValueError("d2phi must be callable or None")
        auto = isinstance(smooth, str) and smooth == "auto"
        if not auto:
            smooth = check_bool(smooth, "smooth")
        probe = np.linspace(-4.0, 4.0, 17)
        for label, f in (("phi", phi), ("dphi", dphi), ("d2phi", d2phi)):
            if f is not None:
                call_user(f, probe, label, name)
        if breakpoints is None:
            kinks = _merge_points(_jumps(phi, "phi", name) + _jumps(dphi, "dphi", name), name)
            # jumps of phi'' and corners of the highest derivative given: integrated piecewise, no Dirac part
            top, label = (dphi, "dphi") if d2phi is None else (d2phi, "d2phi")
            more = _corners(top, label, name) + ([] if d2phi is None else _jumps(d2phi, "d2phi", name))
            found = _merge_points(list(kinks) + more, name) if more else kinks
        else:
            found = kinks = _check_breakpoints(breakpoints)
        if auto:
            smooth = not kinks
        elif smooth and breakpoints is None and kinks:
            raise ValueError(
                f"smooth=True, but phi or phi' of activation {name!r} jumps at u = {kinks[0]:.12g}: phi'' has a "
                "Dirac part there; pass smooth=False (or omit it), and breakpoints=... to fix the locations"
            )
        return cls(name=name, phi=phi, dphi=dphi, d2phi=d2phi, code=CUSTOM, param=0.0, smooth=smooth, breakpoints=found)

    def derivative(self, order: int) -> Callable:
        """phi, phi' or phi'' for ``order`` 0, 1, 2 (an int; bools and floats raise ``TypeError``)."""
        if isinstance(order, (bool, np.bool_)) or not isinstance(order, (int, np.integer)):
            raise TypeError(f"order must be an integer 0, 1 or 2, got {order!r}")
        if order == 0:
            return self.phi
        if order == 1:
            return self.dphi
        if order == 2:
            if self.d2phi is None:
                raise ValueError(f"activation {self.name!r} has no second derivative (d2phi)")
            return self.d2phi
        raise ValueError(f"order must be 0, 1 or 2, got {order!r}")


#: Half-width of the interval on which :meth:`Activation.from_functions` looks for jumps of phi and phi'.
BREAKPOINT_SCAN = 10.0
#: Step of that scan: jumps closer together than this are not told apart.
BREAKPOINT_STEP = 0.005
#: Most breakpoints a user activation may have.
MAX_BREAKPOINTS = 64
#: A difference between scan points counts as a candidate jump when it exceeds this multiple of
#: the differences two steps away on both sides (a smooth function's differences vary slowly).
_JUMP_RATIO = 4.0
#: A candidate is a jump when, bisected to width ~1e-14 (1 + |u|), the function still changes by
#: more than this fraction of (1 + its largest value on the scan): a continuous one changes by ~1e-14.
_JUMP_TOL = 1e-7


def _check_breakpoints(breakpoints) -> tuple:
    if isinstance(breakpoints, (str, bytes)) or not hasattr(breakpoints, "__iter__"):
        raise TypeError(f"breakpoints must be a sequence of real numbers or None, got {breakpoints!r}")
    try:
        ndim = np.ndim(breakpoints)
    except ValueError:  # ragged nesting
        ndim = 2
    if ndim > 1:
        raise TypeError("breakpoints must be a flat sequence of real numbers, got a nested one")
    if hasattr(breakpoints, "__len__") and len(breakpoints) > MAX_BREAKPOINTS:
        raise ValueError(f"breakpoints must hold at most {MAX_BREAKPOINTS} points, got {len(breakpoints)}")
    pts = [check_scalar(b, "breakpoints") for b in breakpoints]
    if len(pts) > MAX_BREAKPOINTS:
        raise ValueError(f"breakpoints must hold at most {MAX_BREAKPOINTS} points, got {len(pts)}")
    return tuple(sorted(set(float(b) for b in pts)))


def _jumps(f, label, name) -> list:
    """The points of [-BREAKPOINT_SCAN, BREAKPOINT_SCAN] where the user function ``f`` jumps (unrounded)."""
    n = round(2.0 * BREAKPOINT_SCAN / BREAKPOINT_STEP) + 1
    grid = np.linspace(-BREAKPOINT_SCAN, BREAKPOINT_SCAN, n)
    y = call_user(f, grid, label, name, finite=False)  # non-finite values: no jump there (NaN compares False)
    d = np.abs(np.diff(y))
    scale = 1.0 + float(np.nanmax(np.where(np.isfinite(y), np.abs(y), np.nan), initial=0.0))
    pad = np.concatenate(([0.0, 0.0], d, [0.0, 0.0]))
    around = np.maximum(pad[:-4], pad[4:])
    cand = np.nonzero((d > _JUMP_RATIO * around) & (d > _JUMP_TOL * scale))[0]
    if cand.size == 0:
        return []
    lo, hi = grid[cand].copy(), grid[cand + 1].copy()
    ylo, yhi = y[cand].copy(), y[cand + 1].copy()
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        ym = call_user(f, mid, label, name, finite=False)
        left = np.abs(ym - ylo) >= np.abs(yhi - ym)
        hi, yhi = np.where(left, mid, hi), np.where(left, ym, yhi)
        lo, ylo = np.where(left, lo, mid), np.where(left, ylo, ym)
    jump = np.abs(yhi - ylo) > _JUMP_TOL * scale
    return [float(x) for x in 0.5 * (lo[jump] + hi[jump])]


#: Offset of the secant slopes with which corners (jumps of the derivative) are located, and
#: the relative change of slope across 3 offsets that confirms one (a smooth function's slope
#: changes by ~3e-7 times its curvature there).
_CORNER_OFFSET = 1e-7
_CORNER_TOL = 1e-4


def _corners(f, label, name) -> list:
    """Points of [-BREAKPOINT_SCAN, BREAKPOINT_SCAN] where the slope of the user function ``f`` jumps
    (to ~1e-7, snapped to multiples of 2^-20): the kinks of the highest derivative given, i.e. jumps of
    the next one (relu_power(3) = max(x, 0)^3: phi'' = 6 max(x, 0) has a corner at 0)."""
    n = round(2.0 * BREAKPOINT_SCAN / BREAKPOINT_STEP) + 1
    grid = np.linspace(-BREAKPOINT_SCAN, BREAKPOINT_SCAN, n)
    h = grid[1] - grid[0]
    slope = np.diff(call_user(f, grid, label, name, finite=False)) / h
    scale = 1.0 + float(np.nanmax(np.where(np.isfinite(slope), np.abs(slope), np.nan), initial=0.0))
    d = np.abs(np.diff(slope))
    pad = np.concatenate(([0.0, 0.0], d, [0.0, 0.0]))
    around = np.maximum(pad[:-4], pad[4:])
    cand = np.nonzero((d > _JUMP_RATIO * around) & (d > _CORNER_TOL * scale))[0]
    if cand.size == 0:
        return []
    delta = _CORNER_OFFSET

    def secant(x):
        return (call_user(f, x + delta, label, name, False) - call_user(f, x, label, name, False)) / delta

    lo, hi = grid[cand], grid[cand + 2]
    slo, shi = secant(lo), secant(hi)
    for _ in range(18):
        mid = 0.5 * (lo + hi)
        sm = secant(mid)
        left = np.abs(sm - slo) >= np.abs(shi - sm)
        hi, shi = np.where(left, mid, hi), np.where(left, sm, shi)
        lo, slo = np.where(left, lo, mid), np.where(left, slo, sm)
    x = 0.5 * (lo + hi)
    keep = np.abs(secant(x + 2 * delta) - secant(x - 3 * delta)) > _CORNER_TOL * scale
    return [round(float(v) * 2.0**20) / 2.0**20 for v in x[keep]]


def _merge_points(found, name) -> tuple:
    pts = []
    for x in sorted(found):
        x = 0.0 if abs(x) < 1e-12 else float(f"{x:.12g}")
        if not pts or abs(x - pts[-1]) > 1e-6 * (1.0 + abs(x)):
            pts.append(x)
    if len(pts) > MAX_BREAKPOINTS:
        raise ValueError(
            f"activation {name!r} jumps at more than {MAX_BREAKPOINTS} points in "
            f"[-{BREAKPOINT_SCAN:g}, {BREAKPOINT_SCAN:g}]: not supported"
        )
    return tuple(pts)


def find_breakpoints(phi, dphi, name="activation", d2phi=None) -> tuple:
    """The points in [-BREAKPOINT_SCAN, BREAKPOINT_SCAN] where ``phi``, ``dphi`` (or ``d2phi``) jumps, sorted.

    Candidates are grid intervals (step ``BREAKPOINT_STEP``) whose difference stands out from its
    neighbours; each is bisected (60 halvings) towards the larger change and kept when the change
    persists at width ~1e-14, then rounded to 12 significant digits (so 0, +-1, ... come out exact).
    """
    found = _jumps(phi, "phi", name) + _jumps(dphi, "dphi", name)
    if d2phi is not None:
        found += _jumps(d2phi, "d2phi", name)
    return _merge_points(found, name)


def call_user(func, u, label, name, finite=True) -> np.ndarray:
    """Evaluate a user-supplied activation function on the float64 array ``u``, checked.

    Returns a float64 array of ``u``'s shape. Raises ``ValueError`` when the call fails, returns
    the wrong shape, or returns NaN or infinity (unless ``finite`` is False: the breakpoint scan,
    which skips such points), and ``TypeError`` for complex values, each naming the function
    (``label``) and the activation (``name``).
    """
    try:
        with np.errstate(all="ignore"):
            y = func(u)
    except Exception as exc:  # the user's code: report it as a bad argument, keep the cause
        raise ValueError(
            f"{label} of activation {name!r} failed on a float64 array ({type(exc).__name__}: {exc}); "
            "user-defined activation functions must be NumPy-vectorised"
        ) from exc
    if np.iscomplexobj(y):
        raise TypeError(f"{label} of activation {name!r} returned complex values; it must be real")
    try:
        y = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{label} of activation {name!r} returned a non-numeric value") from exc
    if y.shape != np.shape(u):
        if y.ndim == 0:
            y = np.full(np.shape(u), float(y))
        else:
            raise ValueError(
                f"{label} of activation {name!r} returned shape {y.shape} for an argument of shape "
                f"{np.shape(u)}; it must act elementwise"
            )
    if finite and not np.all(np.isfinite(y)):
        bad = np.asarray(u)[~np.isfinite(y)]
        raise ValueError(
            f"{label} of activation {name!r} returned NaN or infinity (e.g. at u = {float(bad.flat[0]):.6g}); "
            "it must be finite on the real line (at quadrature nodes |u| can reach 9 sqrt(q))"
        )
    return y


def get_activation(activation: str | Activation, **params: float) -> Activation:
    """Return an :class:`Activation` from its name (or pass an Activation through).

    Parameters
    ----------
    activation : str or Activation
        One of :data:`ACTIVATIONS`.
    **params
        ``slope`` for ``leaky_relu`` (default 0.01, any finite real number); ``gamma`` for
        ``rbf`` (default 0.5, in (0, 1e150]); ``n`` for ``relu_power`` (default 2, an integer in
        [2, 4]); ``alpha`` for ``elu`` (default 1, in [0, 1e150]); ``bound`` for ``hard_tanh``
        (default 1, in [1e-150, 1e150]: clip(x, -bound, bound), named ``"hard_tanh"`` at bound 1).

    Returns
    -------
    Activation

    Raises
    ------
    ValueError
        Unknown name, unexpected parameter, or a parameter outside its range.
    TypeError
        A parameter is not a real scalar (complex, bool, array, string).
    """
    if isinstance(activation, Activation):
        if params:
            raise ValueError("parameters cannot be given together with an Activation object")
        return activation
    if not isinstance(activation, str) or activation not in _CODES:
        raise ValueError(f"activation must be an Activation or one of {ACTIVATIONS}, got {activation!r}")
    code = _CODES[activation]
    param = 0.0
    name = activation
    if code in _PARAMS:
        key, default = _PARAMS[code]
        unknown = set(params) - {key}
        if unknown:
            raise ValueError(f"activation {activation!r} takes only {key!r}, got {sorted(unknown)}")
        param = _check_param(code, key, params.get(key, default))
        name = f"{activation}({key}={param:g})"
        if code == HARD_TANH and param == 1.0:
            name = activation  # the plain clip(x, -1, 1)
    elif params:
        raise ValueError(f"activation {activation!r} takes no parameters, got {sorted(params)}")
    return Activation(
        name=name,
        phi=_builtin(code, param, 0),
        dphi=_builtin(code, param, 1),
        d2phi=_builtin(code, param, 2),
        code=code,
        param=param,
        smooth=code not in _KINKED and not (code == ELU and param != 1.0),
    )


def _check_param(code, key, value) -> float:
    """The checked parameter of a parametrised built-in (see :func:`get_activation`)."""
    if code == RELU_POWER:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer, float, np.floating)):
            raise TypeError(f"n must be an integer in [2, {RELU_POWER_MAX}], got {value!r}")
        if not (float(value).is_integer() and 2 <= value <= RELU_POWER_MAX):
            raise ValueError(f"n must be an integer in [2, {RELU_POWER_MAX}] (n = 1 is 'relu'), got {value!r}")
        return float(value)
    param = check_scalar(value, key)
    if code == RBF and not 0.0 < param <= 1e150:
        raise ValueError(f"gamma must be in (0, 1e150], got {param!r}")
    if code == ELU and not 0.0 <= param <= 1e150:
        raise ValueError(f"alpha must be in [0, 1e150], got {param!r}")
    if code == HARD_TANH and not 1e-150 <= param <= 1e150:
        raise ValueError(f"bound must be in [1e-150, 1e150], got {param!r}")
    return param
