"""Finite random networks, simulated in batches on NumPy or CuPy.

Dense networks
--------------
:func:`simulate_dense`
    Many independent fully-connected networks at once (batched matrix products), recording the
    empirical pre-activation covariance of a set of inputs at every layer and, optionally, the
    squared norms of back-propagated gradients.

Periodic convolutional networks (seed 003)
------------------------------------------
:func:`simulate_conv`, :func:`conv_kernels`
    Random periodic CNNs in 1-D or 2-D (Gaussian, orthogonal or delta-orthogonal kernels), recording
    spatial covariances, gradient variances and weight-gradient norms.

Shared primitives
-----------------
:func:`periodic_conv` / :func:`periodic_conv_transpose`
    Periodic (circular) cross-correlation of eq. 2.1 of Xiao et al. (2018), 1-D or 2-D, channels
    last, and its adjoint (the backward pass with respect to the input).
:func:`random_weights`
    Weight matrices of the four laws (Gaussian, uniform, Rademacher, Haar-orthogonal).

Random numbers
--------------
Every stochastic function takes ``rng`` (``None`` = fresh OS entropy, an ``int``, a
``SeedSequence`` or a ``numpy.random.Generator``; see :mod:`validation.backend`): an int ``n``
gives exactly the numbers of ``numpy.random.default_rng(n)``. The simulators draw each layer's
weights from its own child stream (``Generator.spawn``), so the backward passes regenerate
weights instead of storing them, with the same numbers.

Range of the recorded statistics
--------------------------------
The simulators never return inf, NaN or an underflowed zero. Each network's signal is carried
as ``exp(L) * u`` with ``max |u| = 1`` (a log-scale per network and layer): every linear step
``W a + b`` is computed with its two terms' scales factored out, so the matrix products cannot
overflow or underflow whatever ``sigma_w2``, ``sigma_b2`` or the inputs' scale. Positively
homogeneous activations (``linear``, ``relu``, ``leaky_relu``: ``phi(s h) = s phi(h)``) are applied
to ``u`` directly, which is exact at any depth (ReLU at depth 10^4, ``sigma_w2 = 3``: variance
~ 1.5^{10^4}). Other activations need the pre-activations themselves: when they overflow the
float64 range, bounded activations (tanh, erf, sigmoid, hard_tanh) receive their exact limits
(``phi(+-inf)``); when they fall below ~2e-292 (:data:`UNDERFLOW_LOG`) a ``ValueError`` says which
layer. The results carry ``log_scale`` and ``normalized`` fields; ``cov``, ``grad_sq`` and
``weight_grad_sq`` multiply them out and raise a ``ValueError`` naming the log-scale fields when
the value does not fit in float64.
"""

from __future__ import annotations

import itertools
import math
import numbers
from dataclasses import dataclass

import numpy as np

from meanfield._checks import as_float_array, check_bool, check_covariance, check_int, check_rng, check_scalar
from meanfield.activations import get_activation

from .backend import Backend, get_backend, spawn_sequences, to_numpy

__all__ = [
    "MAX_ELEMENTS",
    "MAX_WORK",
    "UNDERFLOW_LOG",
    "WEIGHT_LAWS",
    "DenseSimulation",
    "activation_fn",
    "periodic_conv",
    "periodic_conv_transpose",
    "random_weights",
    "simulate_dense",
]

#: Largest array (number of float64 elements, 16 GiB) a simulator allocates; a call that would
#: need more raises ``ValueError`` (split it into calls with spawned ``rng`` streams instead).
MAX_ELEMENTS = 2**31
#: Largest amount of arithmetic (multiply-adds: 1.8e13, hours on one CPU core; the full-size
#: seed-002 Fig. 1 needs 1.8e12) a simulator whose run time is not bounded by :data:`MAX_ELEMENTS`
#: accepts; more raises ``ValueError`` at once.
MAX_WORK = 2**44
#: Natural log of the smallest pre-activation scale (max |h| of a network) that a
#: non-homogeneous activation is evaluated at: ``log(tiny * 2**53)`` ~ log(2.0e-292), so every
#: entry within 2^-53 of the largest keeps full relative precision. Below it a ``ValueError``.
UNDERFLOW_LOG = math.log(np.finfo(np.float64).tiny) + 53 * math.log(2.0)
#: Weight laws of :func:`random_weights`.
WEIGHT_LAWS = ("gaussian", "uniform", "rademacher", "orthogonal")
#: Built-in activations with phi(s h) = s phi(h) for s > 0 (carried exactly on the log scale).
_HOMOGENEOUS = ("linear", "relu", "leaky_relu")
#: Weights kept in memory for the backward pass up to this many elements; beyond, regenerated.
_STORE_ELEMENTS = 2**29
_LOG_MAX = math.log(np.finfo(np.float64).max)
_LOG_TINY = math.log(np.finfo(np.float64).tiny)


# --- argument checks ---------------------------------------------------------------------------


def _backend(backend) -> Backend:
    return get_backend(backend)


def _variance(x, name) -> float:
    value = check_scalar(x, name)
    if value < 0:
        raise ValueError(f"{name} must be >= 0 (a variance), got {value!r}")
    return value


def _elements(shape) -> int:
    return math.prod(int(s) for s in shape)


def _fmt(count: int) -> str:
    try:
        return f"{float(count):.3g}"
    except OverflowError:
        return f"~1e{len(str(int(count))) - 1}"


def _check_work(count: int, what: str) -> None:
    if count > MAX_WORK:
        raise ValueError(
            f"{what} would need {_fmt(count)} multiply-adds, more than MAX_WORK = {MAX_WORK}: "
            "simulate fewer networks (or steps, or layers) per call"
        )


def _check_elements(count: int, what: str) -> None:
    if count > MAX_ELEMENTS:
        raise ValueError(
            f"{what} would need {_fmt(count)} float64 elements, more than MAX_ELEMENTS = {MAX_ELEMENTS} "
            f"({8 * MAX_ELEMENTS / 2**30:.0f} GiB): simulate fewer networks (or a smaller width) per call and "
            "combine calls made with independent rng streams (numpy.random.SeedSequence.spawn)"
        )


def _check_law(law) -> str:
    if not isinstance(law, str) or law not in WEIGHT_LAWS:
        raise ValueError(f"law must be one of {WEIGHT_LAWS}, got {law!r}")
    return law


def _backend_array(x, name, b: Backend):
    """A finite float64 array on backend ``b`` (NumPy input is validated by ``as_float_array``)."""
    if isinstance(x, (bool, np.bool_)) or (isinstance(x, np.ndarray) and x.dtype == np.bool_):
        raise TypeError(f"{name} must be real numbers, got booleans")
    if b.name != "numpy" and isinstance(x, b.xp.ndarray):
        if x.dtype.kind == "c":
            raise TypeError(f"{name} must be real, got a complex array")
        if x.dtype.kind not in "fiu":
            raise TypeError(f"{name} must be a real array, got dtype {x.dtype}")
        x = x.astype(b.xp.float64, copy=False)
        if not bool(b.xp.all(b.xp.isfinite(x))):
            raise ValueError(f"{name} must be finite (no NaN or infinity)")
        return x
    return b.asarray(as_float_array(x, name))


def _host_array(x, name):
    """A finite float64 NumPy array (CuPy input is copied to the host); booleans rejected."""
    if isinstance(x, (bool, np.bool_)) or (isinstance(x, np.ndarray) and x.dtype == np.bool_):
        raise TypeError(f"{name} must be real numbers, got booleans")
    if hasattr(x, "get") and hasattr(x, "dtype"):  # a CuPy array
        x = x.get()
    return as_float_array(x, name)


def _check_finite_output(xp, arr, what: str, hint: str) -> None:
    if not bool(xp.all(xp.isfinite(arr))):
        raise ValueError(f"{what} is not finite: {hint}")


# --- periodic convolutions ---------------------------------------------------------------------


def _offsets(kernel_shape):
    """Kernel indices and their offsets beta = j - k per spatial axis (eq. 2.1: j <-> j - k)."""
    for index in itertools.product(*(range(s) for s in kernel_shape)):
        yield index, tuple(j - s // 2 for j, s in zip(index, kernel_shape))


def _periodic_conv(x, kernel, sd, xp):
    ks = kernel.shape[kernel.ndim - 2 - sd : kernel.ndim - 2]
    axes = tuple(range(x.ndim - 1 - sd, x.ndim - 1))
    out = None
    for index, beta in _offsets(ks):
        shifted = xp.roll(x, tuple(-b for b in beta), axis=axes)  # shifted[a] = x[a + beta]
        k = kernel[(Ellipsis,) + index + (slice(None), slice(None))]
        k = k.reshape(k.shape[:-2] + (1,) * (sd - 1) + k.shape[-2:])
        term = shifted @ k
        out = term if out is None else out + term
    return out


def _periodic_conv_transpose(g, kernel, sd, xp):
    ks = kernel.shape[kernel.ndim - 2 - sd : kernel.ndim - 2]
    axes = tuple(range(g.ndim - 1 - sd, g.ndim - 1))
    out = None
    for index, beta in _offsets(ks):
        shifted = xp.roll(g, beta, axis=axes)  # shifted[a] = g[a - beta]
        k = kernel[(Ellipsis,) + index + (slice(None), slice(None))]
        k = xp.swapaxes(k, -1, -2)
        k = k.reshape(k.shape[:-2] + (1,) * (sd - 1) + k.shape[-2:])
        term = shifted @ k
        out = term if out is None else out + term
    return out


def _conv_arguments(x, x_name, kernel, spatial_dims, backend, channel_axis):
    """Validate the arguments of :func:`periodic_conv` (``channel_axis=-2``) or its transpose (-1)."""
    b = _backend(backend)
    sd = check_int(spatial_dims, "spatial_dims", 1, 2)
    x = _backend_array(x, x_name, b)
    kernel = _backend_array(kernel, "kernel", b)
    if x.ndim < sd + 1:
        raise ValueError(f"{x_name} must have shape (..., *spatial ({sd} axes), channels), got shape {x.shape}")
    if kernel.ndim < sd + 2:
        raise ValueError(f"kernel must have shape (..., *kernel_spatial ({sd} axes), c_in, c_out), got shape {kernel.shape}")
    if x.size == 0 or kernel.size == 0:
        raise ValueError(f"{x_name} and kernel must not be empty, got shapes {x.shape} and {kernel.shape}")
    ks = kernel.shape[kernel.ndim - 2 - sd : kernel.ndim - 2]
    if any(s % 2 == 0 for s in ks):
        raise ValueError(f"kernel spatial sizes must be odd (2k+1), got {tuple(ks)}")
    if x.shape[-1] != kernel.shape[channel_axis]:
        side = "c_in (kernel.shape[-2])" if channel_axis == -2 else "c_out (kernel.shape[-1])"
        raise ValueError(f"{x_name} has {x.shape[-1]} channels but the kernel's {side} is {kernel.shape[channel_axis]}")
    stack_x = x.shape[: x.ndim - 2]
    stack_k = kernel.shape[: kernel.ndim - 2 - sd] + (1,) * (sd - 1)
    try:
        lead = np.broadcast_shapes(stack_x, stack_k)
    except ValueError:
        raise ValueError(
            f"the leading axes of {x_name} {x.shape} and kernel {kernel.shape} do not broadcast "
            f"(after aligning the {sd} spatial axes)"
        ) from None
    _check_elements(_elements(lead) * x.shape[-2] * kernel.shape[-1], "the convolution's output")
    return b, sd, x, kernel


def periodic_conv(x, kernel, spatial_dims: int, backend="numpy"):
    """Periodic cross-correlation ``h_j(a) = sum_i sum_beta x_i(a + beta) K_ij(beta)`` (seed 003, eq. 2.1).

    Parameters
    ----------
    x : array, shape (..., *spatial, c_in)
        Finite real signals with ``spatial_dims`` periodic spatial axes before the channel axis.
    kernel : array, shape (..., *kernel_spatial, c_in, c_out)
        Odd kernel sizes ``2k + 1``; index ``j`` is offset ``beta = j - k``. Leading axes broadcast
        against the leading axes of ``x`` after the spatial axes are aligned (e.g. one kernel per
        network: ``x`` (nets, batch, n, c), ``kernel`` (nets, 1, 2k+1, c, c)).
    spatial_dims : {1, 2}
    backend : str or Backend
        ``"numpy"`` or ``"cupy"``.

    Returns
    -------
    array, shape (..., *spatial, c_out)
        On ``backend``.

    Raises
    ------
    TypeError
        Complex or boolean ``x`` / ``kernel``; a ``backend`` that is not a string.
    ValueError
        Non-finite or non-numeric entries, empty arrays, wrong numbers of axes, even kernel sizes,
        mismatched channels, leading axes that do not broadcast, an output beyond
        :data:`MAX_ELEMENTS`, or a result that overflows float64.

    Notes
    -----
    Eq. 2.1 of Xiao et al. (2018), seed 003, with periodic boundaries.
    """
    b, sd, x, kernel = _conv_arguments(x, "x", kernel, spatial_dims, backend, -2)
    with np.errstate(over="ignore", invalid="ignore"):
        out = _periodic_conv(x, kernel, sd, b.xp)
    _check_finite_output(b.xp, out, "periodic_conv's result", "|x| * |kernel| overflows float64; rescale x or kernel")
    return out


def periodic_conv_transpose(g, kernel, spatial_dims: int, backend="numpy"):
    """Adjoint of :func:`periodic_conv` with respect to ``x``: ``dx_i(a) = sum_beta sum_j g_j(a - beta) K_ij(beta)``.

    Parameters
    ----------
    g : array, shape (..., *spatial, c_out)
        Finite real upstream gradient.
    kernel : array, shape (..., *kernel_spatial, c_in, c_out)
        As in :func:`periodic_conv`.
    spatial_dims : {1, 2}
    backend : str or Backend

    Returns
    -------
    array, shape (..., *spatial, c_in)

    Raises
    ------
    TypeError, ValueError
        As :func:`periodic_conv` (``g`` takes the place of ``x``; its channels must equal c_out).
    """
    b, sd, g, kernel = _conv_arguments(g, "g", kernel, spatial_dims, backend, -1)
    with np.errstate(over="ignore", invalid="ignore"):
        out = _periodic_conv_transpose(g, kernel, sd, b.xp)
    _check_finite_output(b.xp, out, "periodic_conv_transpose's result", "|g| * |kernel| overflows float64; rescale g or kernel")
    return out


# --- activations -------------------------------------------------------------------------------

def _sech2(xp, x):
    with np.errstate(over="ignore"):  # cosh overflows beyond |x| ~ 710: sech^2 = 0 there (e^-1420)
        return 1.0 / xp.cosh(x) ** 2


_XP_ACTIVATIONS = {
    "linear": (lambda xp, x, a: x, lambda xp, x, a: xp.ones_like(x)),
    # derivatives as sech^2 (not 1 - tanh^2, which cancels to 0 beyond |x| ~ 19): full relative precision
    "tanh": (lambda xp, x, a: xp.tanh(x), lambda xp, x, a: _sech2(xp, x)),
    "relu": (lambda xp, x, a: xp.maximum(x, 0.0), lambda xp, x, a: (x > 0).astype(x.dtype)),
    "leaky_relu": (
        lambda xp, x, a: xp.where(x > 0, x, a * x),
        lambda xp, x, a: xp.where(x > 0, 1.0, a).astype(x.dtype),
    ),
    "hard_tanh": (lambda xp, x, a: xp.clip(x, -1.0, 1.0), lambda xp, x, a: (xp.abs(x) < 1).astype(x.dtype)),
    "sigmoid": (
        lambda xp, x, a: 0.5 * (1.0 + xp.tanh(0.5 * x)),
        lambda xp, x, a: 0.25 * _sech2(xp, 0.5 * x),
    ),
}


def _base_name(act) -> str:
    return act.name.split("(")[0]


def activation_fn(activation, backend="numpy"):
    """``(phi, dphi)`` acting on arrays of ``backend``.

    Built-ins with an elementwise backend form (linear, tanh, relu, leaky_relu, hard_tanh,
    sigmoid) run natively on NumPy and CuPy; ``erf`` uses ``scipy.special.erf`` or
    ``cupyx.scipy.special.erf``; any other activation (and user-defined ones) runs the
    Activation's NumPy callables (host round-trip on CuPy).

    Parameters
    ----------
    activation : str or Activation
    backend : str or Backend

    Returns
    -------
    (phi, dphi) : two callables

    Raises
    ------
    ValueError
        Unknown activation or backend name.
    """
    act = get_activation(activation)
    b = _backend(backend)
    xp = b.xp
    base = _base_name(act)
    if act.is_builtin and base in _XP_ACTIVATIONS:
        f, df = _XP_ACTIVATIONS[base]
        return (lambda x: f(xp, x, act.param)), (lambda x: df(xp, x, act.param))
    if act.is_builtin and base == "erf":
        if b.name == "cupy":
            from cupyx.scipy.special import erf  # noqa: PLC0415
        else:
            from scipy.special import erf  # noqa: PLC0415
        c = 2.0 / np.sqrt(np.pi)
        return erf, (lambda x: c * xp.exp(-x * x))
    if b.name == "numpy":
        return act.phi, act.dphi
    return (lambda x: xp.asarray(act.phi(to_numpy(x)))), (lambda x: xp.asarray(act.dphi(to_numpy(x))))


class _Act:
    """An activation applied to log-scaled signals ``exp(L) u`` with checks on its output."""

    def __init__(self, activation, b: Backend):
        act = get_activation(activation)
        self.name = act.name
        self.homogeneous = act.is_builtin and _base_name(act) in _HOMOGENEOUS
        # phi' > 0 everywhere: a back-propagated signal that becomes exactly zero has underflowed
        self.positive_derivative = act.is_builtin and _base_name(act) in ("linear", "tanh", "erf", "sigmoid")
        self.phi, self.dphi = activation_fn(act, b)
        self.xp = b.xp

    def _checked(self, f, h, what, layer, scale_log):
        xp = self.xp
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):  # non-finite output is checked below
            out = f(h)
        if np.iscomplexobj(out):
            raise TypeError(f"activation {self.name!r}: {what} returned complex values at layer {layer}")
        try:
            out = xp.asarray(out, dtype=xp.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"activation {self.name!r}: {what} must return real numbers, got {type(out).__name__}") from exc
        if out.ndim == 0:
            out = xp.broadcast_to(out, h.shape)
        if out.shape != h.shape:
            raise ValueError(f"activation {self.name!r}: {what} returned shape {out.shape} for input shape {h.shape}")
        if not bool(xp.all(xp.isfinite(out))):
            where = "pre-activations beyond the float64 range" if scale_log > _LOG_MAX else f"max |h| = exp({scale_log:.4g})"
            raise ValueError(
                f"activation {self.name!r}: {what} returned NaN or infinity at layer {layer} ({where}); "
                "the activation must be finite on all real inputs (and at +-inf when the signal overflows)"
            )
        return out

    def expand(self, u, log_u):
        """``exp(L) u`` per network (inf where it overflows, 0 where ``u`` is 0)."""
        xp = self.xp
        shape = (u.shape[0],) + (1,) * (u.ndim - 1)
        with np.errstate(over="ignore", invalid="ignore"):
            return xp.where(u == 0, 0.0, u * xp.exp(log_u).reshape(shape))

    def forward(self, u, log_u, layer):
        """``phi(exp(L) u)`` as ``(a, log_a)`` with ``exp(log_a) a`` the activation."""
        xp = self.xp
        if self.homogeneous:
            return self._checked(self.phi, u, "phi", layer, 0.0), log_u
        top = float(xp.max(log_u))
        low = float(xp.min(log_u))
        if low < UNDERFLOW_LOG:
            raise ValueError(
                f"the signal underflows at layer {layer}: max |h| = exp({low:.4g}) < 2e-292, and activation "
                f"{self.name!r} is not positively homogeneous, so it cannot be rescaled; use fewer layers, "
                "sigma_b2 > 0, a homogeneous activation (linear, relu, leaky_relu), or the theory's "
                "meanfield.dense.propagate_log"
            )
        a = self._checked(self.phi, self.expand(u, log_u), "phi", layer, top)
        return a, xp.zeros(u.shape[0])

    def derivative(self, u, log_u, layer):
        """``phi'(exp(L) u)``."""
        if self.homogeneous:
            return self._checked(self.dphi, u, "dphi", layer, 0.0)
        return self._checked(self.dphi, self.expand(u, log_u), "dphi", layer, float(self.xp.max(log_u)))

    def backward(self, u, log_u, layer, upstream):
        """``phi'(exp(L) u) * upstream``; a ValueError when it underflows to zero for a whole network."""
        xp = self.xp
        step = self.derivative(u, log_u, layer) * upstream
        if self.positive_derivative:
            n = step.shape[0]
            lost = (xp.max(xp.abs(step.reshape(n, -1)), axis=1) == 0) & (xp.max(xp.abs(upstream.reshape(n, -1)), axis=1) > 0)
            if bool(xp.any(lost)):
                raise ValueError(
                    f"the back-propagated gradient underflows at layer {layer}: activation {self.name!r} saturates "
                    f"(pre-activations up to exp({float(xp.max(log_u)):.4g})), so phi'(h) is below the float64 range; "
                    "use a smaller sigma_w2 or input scale"
                )
        return step


def _normalize(xp, u):
    """``u = exp(log_m) u_n`` per network (axis 0) with ``max |u_n| = 1``; ``log_m = -inf`` for u = 0."""
    n = u.shape[0]
    m = xp.max(xp.abs(u.reshape(n, -1)), axis=1)
    pos = m > 0
    safe = xp.where(pos, m, 1.0)
    un = u / safe.reshape((n,) + (1,) * (u.ndim - 1))
    return un, xp.where(pos, xp.log(safe), -xp.inf)


def _combine(xp, t1, log1, t2, log2):
    """``exp(log1) t1 + exp(log2) t2`` (per network; ``log = -inf`` drops a term, ``t2`` may be None)
    as ``(u, L)`` with ``max |u| = 1``, or ``(0, 0)`` when the sum is zero. Each term's scale is
    factored out first, so neither the products nor the sum can overflow or underflow."""
    n = t1.shape[0]
    big = xp.maximum(log1, log2) if t2 is not None else log1
    big = xp.where(xp.isfinite(big), big, 0.0)

    def factor(lg):
        return xp.exp(lg - big).reshape((n,) + (1,) * (t1.ndim - 1))

    u = t1 * factor(log1)
    if t2 is not None:
        u = u + t2 * factor(log2)
    un, lm = _normalize(xp, u)
    return un, xp.where(xp.isfinite(lm), big + lm, 0.0)


def _log_sqrt(variance: float) -> float:
    return -math.inf if variance == 0 else 0.5 * math.log(variance)


def _expand_log(normalized, log_scale, name, diag=None):
    """``normalized * exp(log_scale)`` (log_scale broadcast over the trailing axes) or a ValueError."""
    extra = normalized.ndim - log_scale.ndim
    lg = log_scale.reshape(log_scale.shape + (1,) * extra)
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        half = np.exp(0.5 * lg)
        out = np.where(normalized == 0, 0.0, (normalized * half) * half)
    if not np.all(np.isfinite(out)):
        raise ValueError(
            f"{name} overflows float64; use the log-scale fields: {name} = {name}_normalized * exp(log_scale) "
            "(see the result's docstring)"
        )
    check = diag(normalized, out) if diag is not None else (normalized, out)
    nz, val = check
    if np.any((nz != 0) & (np.abs(val) < np.finfo(np.float64).tiny)):
        raise ValueError(
            f"{name} underflows float64 (values below 2.2e-308); use the log-scale fields: "
            f"{name} = {name}_normalized * exp(log_scale) (see the result's docstring)"
        )
    return out


def _diag2(a, b):
    return np.diagonal(a, axis1=-2, axis2=-1), np.diagonal(b, axis1=-2, axis2=-1)


# --- weights -----------------------------------------------------------------------------------


def _raw_weights(shape, law, gen, b: Backend):
    """``(M, log_f)`` with ``exp(log_f) M`` the weights of ``sigma_w2 = 1`` (``E W^2 = 1 / n_in``),
    drawn from the backend Generator ``gen``; the simulators fold ``log_f`` into their log-scale
    instead of spending a pass over the matrix on it."""
    xp = b.xp
    n_out, n_in = shape[-2], shape[-1]
    log_std = -0.5 * math.log(n_in)
    if law == "gaussian":
        return gen.standard_normal(shape), log_std
    if law == "uniform":
        return 2.0 * gen.random(shape) - 1.0, log_std + 0.5 * math.log(3.0)
    if law == "rademacher":
        return 2.0 * gen.integers(0, 2, size=shape).astype(xp.float64) - 1.0, log_std
    big, small = max(n_out, n_in), min(n_out, n_in)
    z = gen.standard_normal(tuple(shape[:-2]) + (big, small))
    q, r = xp.linalg.qr(z)
    q = q * xp.sign(xp.diagonal(r, axis1=-2, axis2=-1))[..., None, :]
    if n_out < n_in:
        q = xp.swapaxes(q, -1, -2)
    return q, 0.5 * math.log(big / n_in)


def _unit_weights(shape, law, gen, b: Backend):
    """Weights with ``E W^2 = 1 / n_in`` (``sigma_w2 = 1``) drawn from the backend Generator ``gen``."""
    m, log_f = _raw_weights(shape, law, gen, b)
    return math.exp(log_f) * m


def _draw_weights(shape, sigma_w2, law, gen, b: Backend):
    """:func:`random_weights` without argument checks, from a Generator ``gen`` of backend ``b``
    (for simulators that validated their arguments and own a device Generator)."""
    return math.sqrt(sigma_w2) * _unit_weights(tuple(shape), law, gen, b)


def _check_shape(shape):
    if isinstance(shape, (str, bytes)) or not isinstance(shape, (tuple, list)):
        raise ValueError(f"shape must be a tuple of ints (..., n_out, n_in), got {shape!r}")
    if len(shape) < 2:
        raise ValueError(f"shape must have at least two axes (..., n_out, n_in), got {tuple(shape)!r}")
    dims = tuple(check_int(s, "shape", 1) for s in shape)
    _check_elements(_elements(dims), f"random_weights(shape={dims})")
    return dims


def random_weights(shape, sigma_w2, law="gaussian", rng=None, backend="numpy"):
    """Weights of shape (..., n_out, n_in) with ``E W^2 = sigma_w2 / n_in``, drawn on ``backend``.

    Parameters
    ----------
    shape : tuple of int
        ``(..., n_out, n_in)``, every size >= 1.
    sigma_w2 : float
        Weight variance times fan-in (>= 0, finite).
    law : {"gaussian", "uniform", "rademacher", "orthogonal"}
        ``"orthogonal"``: Haar via QR with the sign fix of R's diagonal, scaled as in
        :func:`meanfield.init.dense_weights` (``sqrt(sigma_w2 max(n_out, n_in) / n_in)`` times a
        matrix with orthonormal rows or columns).
    rng : None, int, SeedSequence or numpy.random.Generator
        The library's randomness rule (:func:`meanfield._checks.check_rng`); on CuPy the device
        Generator is seeded from a child spawned off it (:meth:`validation.backend.Backend.rng`).
    backend : str or Backend

    Returns
    -------
    array of shape ``shape`` on ``backend``

    Raises
    ------
    TypeError
        ``rng`` of another type, complex or boolean ``sigma_w2``.
    ValueError
        ``shape`` with fewer than two axes, a size < 1, more than :data:`MAX_ELEMENTS` entries;
        ``sigma_w2`` negative, NaN or infinite; an unknown ``law``.

    Notes
    -----
    The dense convention of the design notes, ``W_ij ~ N(0, sigma_w2 / fan_in)`` (seed 003 eq. 2.2
    for one-tap kernels; seed 002 uses ``sigma_w2 = 2 / (1 + a^2)``).
    """
    shape = _check_shape(shape)
    sigma_w2 = _variance(sigma_w2, "sigma_w2")
    law = _check_law(law)
    b = _backend(backend)
    gen = b.rng(rng)
    return math.sqrt(sigma_w2) * _unit_weights(shape, law, gen, b)


# --- dense networks ----------------------------------------------------------------------------


@dataclass(frozen=True)
class DenseSimulation:
    """Per-network statistics of simulated dense networks (NumPy arrays), on a log scale.

    Attributes
    ----------
    cov_normalized : ndarray, shape (n_networks, depth + 1, D, D)
        Empirical pre-activation covariance ``h^l h^l^T / width`` of the D inputs at layers
        1 .. depth + 1 (index 0 is the first layer, matching ``meanfield.dense.propagate``),
        divided by ``exp(log_scale)`` (entries in [-1, 1]).
    log_scale : ndarray, shape (n_networks, depth + 1)
        ``cov = cov_normalized * exp(log_scale[..., None, None])``.
    grad_sq_normalized : ndarray, shape (n_networks, depth + 1, D) or None
        Mean squared back-propagated gradient ``|delta^l|^2 / width`` per input, with
        ``delta^{depth+1}`` i.i.d. standard normal (so its expected mean square is 1), divided by
        ``exp(grad_log_scale)``.
    grad_log_scale : ndarray, shape (n_networks, depth + 1) or None

    Properties ``cov`` and ``grad_sq`` return the products; they raise ``ValueError`` when a value
    overflows or underflows float64 (deep networks away from criticality), naming the log fields.
    """

    cov_normalized: np.ndarray
    log_scale: np.ndarray
    grad_sq_normalized: np.ndarray | None = None
    grad_log_scale: np.ndarray | None = None

    @property
    def cov(self) -> np.ndarray:
        """``cov_normalized * exp(log_scale)``, shape (n_networks, depth + 1, D, D)."""
        return _expand_log(self.cov_normalized, self.log_scale, "cov", _diag2)

    @property
    def grad_sq(self) -> np.ndarray | None:
        """``grad_sq_normalized * exp(grad_log_scale)``, shape (n_networks, depth + 1, D), or None."""
        if self.grad_sq_normalized is None:
            return None
        return _expand_log(self.grad_sq_normalized, self.grad_log_scale, "grad_sq")


def _check_activation(activation):
    return get_activation(activation)


def simulate_dense(
    x,
    activation,
    sigma_w2,
    sigma_b2,
    depth,
    width,
    n_networks=16,
    law="gaussian",
    gradients=False,
    backend="numpy",
    rng=None,
) -> DenseSimulation:
    """Simulate ``n_networks`` independent random dense networks on the inputs ``x``.

    ``h^1 = W^1 x + b^1`` (``W^1`` of shape (width, n0), Var = sigma_w2 / n0), then
    ``h^{l+1} = W^{l+1} phi(h^l) + b^{l+1}`` for l = 1 .. depth, every network drawn afresh.

    Parameters
    ----------
    x : array_like, shape (D, n0)
        Finite real inputs, D >= 1 and n0 >= 1 (any scale: the first layer is log-scaled).
    activation : str or Activation
        A built-in name or an :class:`meanfield.activations.Activation`; it must return finite
        values of the input's shape.
    sigma_w2, sigma_b2 : float
        Variances (>= 0, finite).
    depth : int
        Number of hidden-to-hidden layers (>= 0); covariances are recorded at depth + 1 layers.
    width : int
        Hidden width (>= 1).
    n_networks : int
        Independent networks simulated together (batched matrix products, >= 1).
    law : {"gaussian", "uniform", "rademacher", "orthogonal"}
        Weight law (:func:`random_weights`).
    gradients : bool
        Also back-propagate a standard-normal ``delta`` from the last layer.
    backend : str or Backend
        ``"numpy"`` or ``"cupy"``.
    rng : None, int, SeedSequence or numpy.random.Generator
        Randomness (:mod:`validation.backend`): layer ``l``'s weights and biases come from the
        ``l``-th child spawned off it, the output gradient from the last child; an int ``n`` gives
        the same numbers as ``numpy.random.default_rng(n)``; None draws fresh entropy.

    Returns
    -------
    DenseSimulation
        Log-scaled covariances and gradients (``.cov`` and ``.grad_sq`` multiply them out).

    Raises
    ------
    TypeError
        Complex or boolean inputs or variances, a non-bool ``gradients``, an ``rng`` of another type.
    ValueError
        Empty or non-finite ``x`` or a shape other than (D, n0); negative / non-finite variances;
        ``depth < 0``, ``width < 1``, ``n_networks < 1``; an unknown ``law`` or activation; an array
        beyond :data:`MAX_ELEMENTS`; an activation returning NaN / infinity (the message names the
        layer); a non-homogeneous activation's signal falling below ~2e-292 (:data:`UNDERFLOW_LOG`).

    Notes
    -----
    The finite-width networks behind the mean-field recursion of seed 003, eqs. 2.2-2.4 in the
    one-tap (dense) case, and the backward variance of its eq. 2.16.
    """
    b = _backend(backend)
    xp = b.xp
    x = _host_array(x, "x")
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(f"x must have shape (D, n0) with D >= 1 and n0 >= 1, got {x.shape}")
    act = _Act(_check_activation(activation), b)
    sigma_w2 = _variance(sigma_w2, "sigma_w2")
    sigma_b2 = _variance(sigma_b2, "sigma_b2")
    depth = check_int(depth, "depth", 0)
    width = check_int(width, "width", 1)
    n_networks = check_int(n_networks, "n_networks", 1)
    law = _check_law(law)
    gradients = check_bool(gradients, "gradients")
    generator = check_rng(rng)
    d, n_in = x.shape
    _check_elements(n_networks * width * (max(width, n_in) if depth else n_in), "one layer's weights (n_networks x width x fan-in)")
    _check_elements(n_networks * (depth + 1) * d * max(d, width if gradients else 1), "the recorded statistics")

    seqs = spawn_sequences(generator, depth + 2)  # layer l: seqs[l]; output gradient: seqs[-1]
    log_w = _log_sqrt(sigma_w2)
    log_b = xp.full(n_networks, _log_sqrt(sigma_b2))
    x_n, log_x = _normalize(np, x[None])
    a = b.asarray(x_n[0].T)[None]  # (1, n0, D), max |a| = 1
    log_a = xp.full(n_networks, float(log_x[0]) if np.isfinite(log_x[0]) else -math.inf)
    store = gradients and n_networks * width * width * depth <= _STORE_ELEMENTS
    cov_n = xp.empty((n_networks, depth + 1, d, d))
    logs = xp.empty((n_networks, depth + 1))
    pre, weights = [], []
    log_f_hidden = 0.0  # log of the hidden layers' weight factor (the same for every hidden layer)
    for layer in range(depth + 1):
        gen = b.generator(seqs[layer])
        fan_in = n_in if layer == 0 else width
        w, log_f = _raw_weights((n_networks, width, fan_in), law, gen, b)
        bias = gen.standard_normal((n_networks, width, 1)) if sigma_b2 > 0 else None
        u, log_u = _combine(xp, w @ a, log_a + (log_w + log_f), bias, log_b)
        cov_n[:, layer] = xp.swapaxes(u, 1, 2) @ u / width
        logs[:, layer] = 2.0 * log_u
        if layer > 0:
            log_f_hidden = log_f
        if gradients:
            pre.append((u, log_u))
            if store and layer > 0:
                weights.append(w)
        if layer < depth:
            a, log_a = act.forward(u, log_u, layer + 1)
            a, lm = _normalize(xp, a)
            log_a = log_a + lm
    grad_n = grad_logs = None
    if gradients:
        grad_n = xp.empty((n_networks, depth + 1, d))
        grad_logs = xp.empty((n_networks, depth + 1))
        delta, log_d = _normalize(xp, b.generator(seqs[-1]).standard_normal((n_networks, width, d)))
        grad_n[:, depth] = xp.mean(delta**2, axis=1)
        grad_logs[:, depth] = 2.0 * log_d
        for layer in range(depth - 1, -1, -1):
            if store:
                w = weights[layer]
            else:  # regenerate W^{layer+2}: the first draw of its layer's stream
                w = _raw_weights((n_networks, width, width), law, b.generator(seqs[layer + 1]), b)[0]
            u, log_u = pre[layer]
            step = act.backward(u, log_u, layer + 1, xp.swapaxes(w, 1, 2) @ delta)
            delta, log_d = _combine(xp, step, log_d + (log_w + log_f_hidden), None, None)
            grad_n[:, layer] = xp.mean(delta**2, axis=1)
            grad_logs[:, layer] = 2.0 * log_d
        grad_n, grad_logs = to_numpy(grad_n), to_numpy(grad_logs)
    return DenseSimulation(to_numpy(cov_n), to_numpy(logs), grad_n, grad_logs)


# --- periodic convolutional networks (seed 003) ------------------------------------------------

CONV_INITS = ("gaussian", "orthogonal", "delta_orthogonal")


def _check_kernel_shape(kernel_shape):
    if isinstance(kernel_shape, numbers.Integral) and not isinstance(kernel_shape, (bool, np.bool_)):
        kernel_shape = (kernel_shape,)
    if isinstance(kernel_shape, (str, bytes)) or not isinstance(kernel_shape, (tuple, list, np.ndarray)):
        raise ValueError(f"kernel_shape must be a tuple of 1 or 2 odd ints, got {kernel_shape!r}")
    ks = tuple(check_int(s, "kernel_shape", 1) for s in kernel_shape)
    if len(ks) not in (1, 2):
        raise ValueError(f"kernel_shape must have 1 or 2 entries (1-D or 2-D), got {ks}")
    if any(s % 2 == 0 for s in ks):
        raise ValueError(f"kernel_shape entries must be odd (2k+1), got {ks}")
    return ks


def _check_init(init):
    if not isinstance(init, str) or init not in CONV_INITS:
        raise ValueError(f"init must be one of {CONV_INITS}, got {init!r}")
    return init


def _check_conv_v(v, kernel_shape):
    from meanfield import conv as mf_conv  # noqa: PLC0415

    if v is None:
        return np.full(kernel_shape, 1.0 / math.prod(kernel_shape))
    v = mf_conv._check_v(_host_array(v, "v"))
    if v.shape != kernel_shape:
        raise ValueError(f"v has shape {v.shape}, expected the kernel shape {kernel_shape}")
    return v


def _unit_conv_kernels(n_networks, kernel_shape, c, v, init, gen, b: Backend):
    """Kernels at ``sigma_w2 = 1`` (``gen``: a backend Generator for Gaussian kernels, a NumPy one otherwise)."""
    if init == "gaussian":
        std = b.asarray(np.sqrt(v / c)[..., None, None])
        return std * gen.standard_normal((n_networks,) + kernel_shape + (c, c))
    from meanfield.init import (  # noqa: PLC0415 - keep the simulator import light
        delta_orthogonal_kernel,
        delta_orthogonal_kernel_1d,
        orthogonal_conv_kernel,
        orthogonal_conv_kernel_1d,
    )

    make = {
        ("orthogonal", True): orthogonal_conv_kernel,
        ("orthogonal", False): orthogonal_conv_kernel_1d,
        ("delta_orthogonal", True): delta_orthogonal_kernel,
        ("delta_orthogonal", False): delta_orthogonal_kernel_1d,
    }[(init, len(kernel_shape) == 2)]
    return b.asarray(np.stack([make(kernel_shape[0], c, c, rng=gen) for _ in range(n_networks)]))


def _kernel_generator(b: Backend, seq, init):
    """Orthogonal kernels are built on the host with NumPy; Gaussian ones on the backend."""
    return b.generator(seq) if init == "gaussian" else np.random.default_rng(seq)


def conv_kernels(n_networks, kernel_shape, channels, sigma_w2, v=None, init="gaussian", rng=None, backend="numpy"):
    """One layer's kernels for ``n_networks`` networks, shape (n_networks, *kernel_shape, c, c).

    Parameters
    ----------
    n_networks : int
        >= 1.
    kernel_shape : int or tuple of int
        ``(2k+1,)`` (1-D) or ``(2k1+1, 2k2+1)`` (2-D), odd sizes; square for orthogonal inits.
    channels : int
        ``c`` (>= 1).
    sigma_w2 : float
        Weight variance (>= 0, finite).
    v : array_like, optional
        Variance vector of shape ``kernel_shape`` (non-negative, summing to 1; default uniform).
        Validated for every ``init``; used by ``"gaussian"`` only.
    init : {"gaussian", "orthogonal", "delta_orthogonal"}
        ``"gaussian"``: i.i.d. ``omega_ij(beta) ~ N(0, sigma_w2 v_beta / c)``. ``"orthogonal"`` /
        ``"delta_orthogonal"``: Algorithms 1 / 2 of seed 003 (:func:`meanfield.init.orthogonal_conv_kernel`
        and its 1-D variant) times ``sqrt(sigma_w2)``, drawn on the host with NumPy and moved to
        ``backend``.
    rng : None, int, SeedSequence or numpy.random.Generator
        The library's randomness rule; Gaussian kernels on CuPy use a device Generator seeded from
        a child spawned off it.
    backend : str or Backend

    Returns
    -------
    array, shape (n_networks, *kernel_shape, c, c), on ``backend``

    Raises
    ------
    TypeError
        ``rng`` of another type; complex or boolean ``sigma_w2`` / ``v``.
    ValueError
        Sizes < 1, even kernel sizes, a non-square orthogonal kernel, an invalid ``v`` or ``init``,
        a negative / non-finite ``sigma_w2``, more than :data:`MAX_ELEMENTS` entries.

    Notes
    -----
    Seed 003, Sec. 2.1 (eq. 2.2's weight law) and Algorithms 1-2.
    """
    n_networks = check_int(n_networks, "n_networks", 1)
    ks = _check_kernel_shape(kernel_shape)
    c = check_int(channels, "channels", 1)
    sigma_w2 = _variance(sigma_w2, "sigma_w2")
    init = _check_init(init)
    _check_elements(n_networks * math.prod(ks) * c * c, "the kernels (n_networks x kernel x c x c)")
    v = _check_conv_v(v, ks)
    if init != "gaussian" and len(set(ks)) != 1:
        raise ValueError(f"{init} kernels are square: kernel_shape {ks}")
    b = _backend(backend)
    generator = check_rng(rng)
    gen = b.rng(generator) if init == "gaussian" else generator
    return math.sqrt(sigma_w2) * _unit_conv_kernels(n_networks, ks, c, v, init, gen, b)


@dataclass(frozen=True)
class ConvSimulation:
    """Per-network statistics of simulated periodic CNNs (NumPy arrays), on a log scale.

    Attributes
    ----------
    cov_normalized : ndarray, shape (n_networks, depth + 1, D, P, P)
        Empirical spatial covariance of each input's pre-activations, averaged over channels,
        ``sum_j h_j(a) h_j(a') / c`` at layers 0 .. depth (index 0 is the sampled layer-0 field),
        divided by ``exp(log_scale)``.
    log_scale : ndarray, shape (n_networks, depth + 1)
    grad_sq_normalized : ndarray, shape (n_networks, depth + 1, D, P) or None
        ``sum_j delta_j(a)^2 / c``: back-propagated gradient variance per position, with
        ``delta^depth`` i.i.d. standard normal (the gradient of ``E = <g, h^depth>`` for a random
        standard-normal ``g``), divided by ``exp(grad_log_scale)``.
    grad_log_scale : ndarray, shape (n_networks, depth + 1) or None
    weight_grad_sq_normalized : ndarray, shape (n_networks, depth, D) or None
        ``|dE/d omega^l|^2 / c^2`` for layers l = 1 .. depth (entry l - 1), the quantity of seed 003
        Fig. S2 per channel pair, divided by ``exp(weight_grad_log_scale)``.
    weight_grad_log_scale : ndarray, shape (n_networks, depth) or None

    Properties ``cov``, ``grad_sq`` and ``weight_grad_sq`` return the products and raise
    ``ValueError`` (naming the log fields) when a value overflows or underflows float64.
    """

    cov_normalized: np.ndarray
    log_scale: np.ndarray
    grad_sq_normalized: np.ndarray | None = None
    grad_log_scale: np.ndarray | None = None
    weight_grad_sq_normalized: np.ndarray | None = None
    weight_grad_log_scale: np.ndarray | None = None

    @property
    def cov(self) -> np.ndarray:
        """``cov_normalized * exp(log_scale)``, shape (n_networks, depth + 1, D, P, P)."""
        return _expand_log(self.cov_normalized, self.log_scale, "cov", _diag2)

    @property
    def grad_sq(self) -> np.ndarray | None:
        """``grad_sq_normalized * exp(grad_log_scale)`` or None."""
        if self.grad_sq_normalized is None:
            return None
        return _expand_log(self.grad_sq_normalized, self.grad_log_scale, "grad_sq")

    @property
    def weight_grad_sq(self) -> np.ndarray | None:
        """``weight_grad_sq_normalized * exp(weight_grad_log_scale)`` or None."""
        if self.weight_grad_sq_normalized is None:
            return None
        return _expand_log(self.weight_grad_sq_normalized, self.weight_grad_log_scale, "weight_grad_sq")


def simulate_conv(
    cov0,
    activation,
    sigma_w2,
    sigma_b2,
    v,
    depth,
    channels,
    n_networks=16,
    init="gaussian",
    spatial_shape=None,
    gradients=False,
    backend="numpy",
    rng=None,
) -> ConvSimulation:
    """Simulate ``n_networks`` random periodic CNNs (1-D or 2-D) of ``channels`` channels.

    Layer 0: every channel of every input is an independent Gaussian field ``h^0 = L_d z`` with
    ``L_d L_d^T = cov0[d]`` and the *same* standard-normal ``z`` for all D inputs (common random
    numbers: differences between inputs are estimated with little noise). Then
    ``h^{l+1} = periodic_conv(phi(h^l), omega^{l+1}) + b^{l+1}`` for l = 0 .. depth - 1, the kernels
    drawn as by :func:`conv_kernels`; in the many-channel limit ``cov[:, l]`` tends to
    ``meanfield.conv.propagate(cov0, ...)[l]``.

    Parameters
    ----------
    cov0 : array_like, shape (P, P) or (D, P, P)
        Layer-0 spatial covariance(s): finite, symmetric, positive semi-definite.
    activation : str or Activation
    sigma_w2, sigma_b2 : float
        Variances (>= 0, finite).
    v : array_like
        Variance vector, shape (2k+1,) (1-D) or (2k1+1, 2k2+1) (2-D), non-negative and summing to
        1 (validated for every init); for orthogonal inits only its shape (the kernel size) is used.
    depth : int
        Number of convolutional layers (>= 0).
    channels : int
        c (>= 1).
    n_networks : int
        Independent networks simulated together (>= 1).
    init : {"gaussian", "orthogonal", "delta_orthogonal"}
    spatial_shape : int or (int, int), optional
        Default: P (1-D v) or the square image (2-D v).
    gradients : bool
        Also back-propagate a standard-normal ``delta^depth`` (through the same weights).
    backend : str or Backend
        ``"numpy"`` or ``"cupy"``.
    rng : None, int, SeedSequence or numpy.random.Generator
        Randomness (:mod:`validation.backend`): children spawned off it draw the layer-0 field, the
        output gradient, and each layer's kernels and biases (the kernels are regenerated from
        their stream in the backward pass); an int ``n`` gives the same numbers as
        ``numpy.random.default_rng(n)``; None draws fresh entropy.

    Returns
    -------
    ConvSimulation
        Log-scaled statistics (``.cov``, ``.grad_sq``, ``.weight_grad_sq`` multiply them out).

    Raises
    ------
    TypeError
        Complex or boolean arrays or variances, a non-bool ``gradients``, an ``rng`` of another type.
    ValueError
        A ``cov0`` that is not a finite PSD stack of square matrices; an invalid ``v`` or
        ``spatial_shape``; negative / non-finite variances; sizes out of range; an unknown init or
        activation; arrays beyond :data:`MAX_ELEMENTS`; an activation returning NaN / infinity (the
        message names the layer); a non-homogeneous activation's signal below ~2e-292.

    Notes
    -----
    Seed 003, eqs. 2.1-2.5 (forward covariance map), 2.15-2.16 (backward) and Fig. S2 (weight
    gradients).
    """
    from meanfield import conv as mf_conv  # noqa: PLC0415

    b = _backend(backend)
    xp = b.xp
    cov0 = check_covariance(_host_array(cov0, "cov0"), "cov0")
    if cov0.ndim == 2:
        cov0 = cov0[None]
    if cov0.ndim != 3 or cov0.shape[1] < 1 or cov0.shape[0] < 1:
        raise ValueError(f"cov0 must have shape (P, P) or (D, P, P) with P, D >= 1, got {cov0.shape}")
    v = mf_conv._check_v(_host_array(v, "v"))
    sigma_w2 = _variance(sigma_w2, "sigma_w2")
    sigma_b2 = _variance(sigma_b2, "sigma_b2")
    depth = check_int(depth, "depth", 0)
    c = check_int(channels, "channels", 1)
    n_networks = check_int(n_networks, "n_networks", 1)
    init = _check_init(init)
    if init != "gaussian" and len(set(v.shape)) != 1:
        raise ValueError(f"{init} kernels are square: v has shape {v.shape}")
    gradients = check_bool(gradients, "gradients")
    act = _Act(get_activation(activation), b)
    generator = check_rng(rng)
    n_in, p = cov0.shape[0], cov0.shape[1]
    shape = mf_conv._resolve_shape(v, spatial_shape, p)
    sd = len(shape)
    ks = v.shape
    signal = n_networks * n_in * p * c
    _check_elements(signal, "one layer's signal (n_networks x D x P x c)")
    _check_elements(n_networks * math.prod(ks) * c * c, "one layer's kernels (n_networks x kernel x c x c)")
    _check_elements(n_networks * (depth + 1) * n_in * p * p, "the recorded covariances")
    if gradients:
        _check_elements(signal * (depth + 1), "the stored pre-activations for gradients (depth x signal)")

    # children: [0] layer-0 field, [1] output gradient, [2 .. depth+1] kernels, [depth+2 ..] biases
    seqs = spawn_sequences(generator, 2 * depth + 2)
    kernel_seqs, bias_seqs = seqs[2 : depth + 2], seqs[depth + 2 :]
    log_w = _log_sqrt(sigma_w2)
    log_b = xp.full(n_networks, _log_sqrt(sigma_b2))

    # symmetric PSD square roots U sqrt(w) U^T: defined for singular covariances and continuous in
    # cov0, so nearby covariances get nearby fields from the same z (common random numbers)
    c_n, log_c = _normalize(np, cov0[None])
    log_c0 = float(log_c[0]) if np.isfinite(log_c[0]) else 0.0
    w_eig, u_eig = np.linalg.eigh(c_n[0])
    roots = b.asarray((u_eig * np.sqrt(np.clip(w_eig, 0.0, None))[:, None, :]) @ np.swapaxes(u_eig, -1, -2))
    z = b.generator(seqs[0]).standard_normal((n_networks, 1, p, c))
    h = (roots[None] @ z).reshape((n_networks, n_in) + shape + (c,))
    u, log_u = _combine(xp, h, xp.full(n_networks, 0.5 * log_c0), None, None)
    cov_n = xp.empty((n_networks, depth + 1, n_in, p, p))
    logs = xp.empty((n_networks, depth + 1))

    def record(layer, u, log_u):
        flat = u.reshape(n_networks, n_in, p, c)
        cov_n[:, layer] = flat @ xp.swapaxes(flat, -1, -2) / c
        logs[:, layer] = 2.0 * log_u

    def kernel(layer):
        k = _unit_conv_kernels(n_networks, ks, c, v, init, _kernel_generator(b, kernel_seqs[layer - 1], init), b)
        return k.reshape((n_networks, 1) + k.shape[1:])

    record(0, u, log_u)
    pre = [(u, log_u)]
    bshape = (n_networks, 1) + (1,) * sd + (c,)
    for layer in range(1, depth + 1):
        a, log_a = act.forward(u, log_u, layer - 1)
        a, lm = _normalize(xp, a)
        bias = b.generator(bias_seqs[layer - 1]).standard_normal(bshape) if sigma_b2 > 0 else None
        u, log_u = _combine(xp, _periodic_conv(a, kernel(layer), sd, xp), log_a + lm + log_w, bias, log_b)
        record(layer, u, log_u)
        if gradients:
            pre.append((u, log_u))
    grad_n = grad_logs = wgrad_n = wgrad_logs = None
    if gradients:
        grad_n = xp.empty((n_networks, depth + 1, n_in, p))
        grad_logs = xp.empty((n_networks, depth + 1))
        wgrad_n = xp.empty((n_networks, depth, n_in))
        wgrad_logs = xp.empty((n_networks, depth))
        delta, log_d = _normalize(xp, b.generator(seqs[1]).standard_normal(u.shape))
        grad_n[:, depth] = xp.mean(delta**2, axis=-1).reshape(n_networks, n_in, p)
        grad_logs[:, depth] = 2.0 * log_d
        axes = tuple(range(2, 2 + sd))
        for layer in range(depth, 0, -1):
            x, log_x = act.forward(*pre[layer - 1], layer - 1)
            x, lm = _normalize(xp, x)
            log_x = log_x + lm
            # dE/d omega_ij(beta) = sum_a x_i(a + beta) delta_j(a), per input
            total = 0.0
            ds = delta.reshape(n_networks, n_in, p, c)
            for index in itertools.product(*(range(s) for s in ks)):
                beta = tuple(j - s // 2 for j, s in zip(index, ks))
                shifted = xp.roll(x, tuple(-bb for bb in beta), axis=axes)
                g = xp.swapaxes(shifted.reshape(n_networks, n_in, p, c), -1, -2) @ ds  # (nets, D, c_in, c_out)
                total = total + xp.sum(g**2, axis=(-1, -2))
            wgrad_n[:, layer - 1] = total / c**2
            finite = xp.isfinite(log_x)
            wgrad_logs[:, layer - 1] = xp.where(finite, 2.0 * (log_x + log_d), 0.0)
            step = act.backward(*pre[layer - 1], layer - 1, _periodic_conv_transpose(delta, kernel(layer), sd, xp))
            delta, log_d = _combine(xp, step, log_d + log_w, None, None)
            grad_n[:, layer - 1] = xp.mean(delta**2, axis=-1).reshape(n_networks, n_in, p)
            grad_logs[:, layer - 1] = 2.0 * log_d
        grad_n, grad_logs, wgrad_n, wgrad_logs = (to_numpy(t) for t in (grad_n, grad_logs, wgrad_n, wgrad_logs))
    return ConvSimulation(to_numpy(cov_n), to_numpy(logs), grad_n, grad_logs, wgrad_n, wgrad_logs)


__all__ += ["CONV_INITS", "ConvSimulation", "conv_kernels", "simulate_conv"]
