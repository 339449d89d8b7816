"""Shared internals of the simulators (private to :mod:`meanfield.simulate`).

Size limits and their checks, argument conversion, the activation adapter that runs
:mod:`meanfield.activations`' built-ins natively on NumPy / CuPy arrays, the log-scale
arithmetic (``exp(L) * u`` with ``max |u| = 1`` per network) that keeps every recorded statistic
finite, and the progress bar of the long simulators. The public names among them are re-exported
by the subpackage.
"""

from __future__ import annotations

import functools
import math
import os
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from meanfield.activations import Activation, get_activation
from meanfield.backend import Backend, astype, get_backend, matrix_transpose, spawn_sequences, to_numpy
from meanfield.checks import as_float_array
from meanfield.init import haar_orthogonal

__all__ = [
    "HOMOGENEOUS",
    "MAX_ELEMENTS",
    "MAX_WORK",
    "UNDERFLOW_LOG",
    "LogScaledActivation",
    "activation_fn",
    "check_elements",
    "check_work",
    "combine",
    "diag2",
    "expand_log",
    "host_array",
    "log_sqrt",
    "normalize",
    "orthogonal_conv_kernels",
    "progress",
    "symmetric_projections",
]

#: Largest array (number of float64 elements, 16 GiB) a simulator allocates; a call that would
#: need more raises ``ValueError`` (split it into calls with spawned ``rng`` streams instead).
MAX_ELEMENTS = 2**31
#: Largest amount of arithmetic (multiply-adds: 1.8e13, hours on one CPU core; the full-size
#: Grzejdziak 2023 Fig. 1 needs 1.8e12) a simulator whose run time is not bounded by :data:`MAX_ELEMENTS`
#: accepts; more raises ``ValueError`` at once.
MAX_WORK = 2**44
#: Natural log of the smallest pre-activation scale (max |h| of a network) that a
#: non-homogeneous activation is evaluated at: ``log(tiny * 2**53)`` ~ log(2.0e-292), so every
#: entry within 2^-53 of the largest keeps full relative precision. Below it a ``ValueError``.
UNDERFLOW_LOG = math.log(np.finfo(np.float64).tiny) + 53 * math.log(2.0)
#: Built-in activations with phi(s h) = s phi(h) for s > 0 (carried exactly on the log scale).
HOMOGENEOUS = ("linear", "relu", "leaky_relu")
LOG_MAX = math.log(np.finfo(np.float64).max)
LOG_TINY = math.log(np.finfo(np.float64).tiny)


#: Environment variable that hides the progress bars (``meanfield --no-progress`` sets it).
NO_PROGRESS_ENV = "MEANFIELD_NO_PROGRESS"


def progress(iterable=None, desc: str = "", total: int | None = None, **kwargs):
    """A tqdm progress bar on stderr, hidden when the environment has ``MEANFIELD_NO_PROGRESS=1``."""
    from tqdm.auto import tqdm

    disable = os.environ.get(NO_PROGRESS_ENV, "") == "1"
    return tqdm(iterable, desc=desc, total=total, disable=disable, leave=False, file=sys.stderr, **kwargs)


# --- argument checks ---------------------------------------------------------------------------


def _fmt(count: int) -> str:
    try:
        return f"{float(count):.3g}"
    except OverflowError:
        return f"~1e{len(str(int(count))) - 1}"


def check_work(count: int, what: str) -> None:
    """``ValueError`` when ``count`` multiply-adds exceed :data:`MAX_WORK`."""
    if count > MAX_WORK:
        raise ValueError(
            f"{what} would need {_fmt(count)} multiply-adds, more than MAX_WORK = {MAX_WORK}: "
            "simulate fewer networks (or steps, or layers) per call"
        )


def check_elements(count: int, what: str) -> None:
    """``ValueError`` when an array of ``count`` float64 numbers exceeds :data:`MAX_ELEMENTS`."""
    if count > MAX_ELEMENTS:
        raise ValueError(
            f"{what} would need {_fmt(count)} float64 elements, more than MAX_ELEMENTS = {MAX_ELEMENTS} "
            f"({8 * MAX_ELEMENTS / 2**30:.0f} GiB): simulate fewer networks (or a smaller width) per call and "
            "combine calls made with independent rng streams (numpy.random.SeedSequence.spawn)"
        )


def host_array(x: Any, name: str) -> np.ndarray:
    """A finite float64 NumPy array (CuPy input is copied to the host); booleans rejected."""
    if isinstance(x, (bool, np.bool_)) or (isinstance(x, np.ndarray) and x.dtype == np.bool_):
        raise TypeError(f"{name} must be real numbers, got booleans")
    if hasattr(x, "get") and hasattr(x, "dtype"):  # a CuPy array
        x = x.get()
    return as_float_array(x, name)


# --- activations on backend arrays ---------------------------------------------------------------


def _sech2(xp, x):
    with np.errstate(over="ignore"):  # cosh overflows beyond |x| ~ 710: sech^2 = 0 there (e^-1420)
        return 1.0 / xp.cosh(x) ** 2


# array-API calls only (every backend of meanfield.backend): no array methods, no NumPy-only functions
_XP_ACTIVATIONS = {
    "linear": (lambda xp, x, a: x, lambda xp, x, a: xp.ones_like(x)),
    # derivatives as sech^2 (not 1 - tanh^2, which cancels to 0 beyond |x| ~ 19): full relative precision
    "tanh": (lambda xp, x, a: xp.tanh(x), lambda xp, x, a: _sech2(xp, x)),
    "relu": (lambda xp, x, a: xp.maximum(x, 0.0), lambda xp, x, a: astype(xp, x > 0, x.dtype)),
    "leaky_relu": (
        lambda xp, x, a: xp.where(x > 0, x, a * x),
        lambda xp, x, a: xp.where(x > 0, xp.ones_like(x), a * xp.ones_like(x)),
    ),
    "hard_tanh": (lambda xp, x, a: xp.clip(x, -1.0, 1.0), lambda xp, x, a: astype(xp, xp.abs(x) < 1, x.dtype)),
    "sigmoid": (
        lambda xp, x, a: 0.5 * (1.0 + xp.tanh(0.5 * x)),
        lambda xp, x, a: 0.25 * _sech2(xp, 0.5 * x),
    ),
}


def _base_name(act) -> str:
    return act.name.split("(")[0]


def activation_fn(activation: str | Activation, backend: str | Backend = "numpy") -> tuple[Callable, Callable]:
    """``(phi, dphi)`` of a :mod:`meanfield.activations` activation, acting on arrays of ``backend``.

    Every simulator resolves its activation with :func:`meanfield.activations.get_activation` (the
    library's one activation table: names, parameters such as leaky ReLU's ``slope``) and evaluates
    it here. Built-ins with an elementwise backend form (linear, tanh, relu, leaky_relu, hard_tanh,
    sigmoid) run natively on NumPy and CuPy (whole-array operations: the Activation's own callables
    are scalar Numba loops, NumPy only); ``erf`` uses ``scipy.special.erf`` or
    ``cupyx.scipy.special.erf``; any other activation (and user-defined ones) runs the
    Activation's NumPy callables (host round-trip on CuPy).

    Parameters
    ----------
    activation : str or Activation
        A name of :data:`meanfield.activations.ACTIVATIONS` or an Activation (e.g.
        ``get_activation("leaky_relu", slope=0.1)``).
    backend : str or Backend

    Returns
    -------
    (phi, dphi) : two callables
        Elementwise ``phi`` and ``phi'`` on arrays of ``backend``.

    Raises
    ------
    ValueError
        Unknown activation or backend name.

    Examples
    --------
    >>> from meanfield.activations import get_activation
    >>> phi, dphi = activation_fn(get_activation("leaky_relu", slope=0.1))
    >>> phi(np.array([-2.0, 3.0])), dphi(np.array([-2.0, 3.0]))
    (array([-0.2,  3. ]), array([0.1, 1. ]))
    """
    act = get_activation(activation)
    b = get_backend(backend)
    if act.is_builtin:  # cached: the models call this on every pass
        return _builtin_fn(act, b)
    return _activation_fn(act, b)


@functools.lru_cache(maxsize=64)
def _builtin_fn(act: Activation, b: Backend) -> tuple[Callable, Callable]:
    return _activation_fn(act, b)


def _activation_fn(act: Activation, b: Backend) -> tuple[Callable, Callable]:
    xp = b.xp
    base = _base_name(act)
    if act.is_builtin and base in _XP_ACTIVATIONS:
        f, df = _XP_ACTIVATIONS[base]
        return (lambda x: f(xp, x, act.param)), (lambda x: df(xp, x, act.param))
    if act.is_builtin and base == "erf" and b.name in ("numpy", "cupy", "torch"):
        if b.name == "cupy":
            from cupyx.scipy.special import erf
        elif b.name == "torch":
            import torch

            erf = torch.special.erf
        else:
            from scipy.special import erf
        c = 2.0 / np.sqrt(np.pi)
        return erf, (lambda x: c * xp.exp(-x * x))
    if b.name == "numpy":
        return act.phi, act.dphi
    return (lambda x: b.asarray(act.phi(to_numpy(x)))), (lambda x: b.asarray(act.dphi(to_numpy(x))))


class LogScaledActivation:
    """An activation applied to log-scaled signals ``exp(L) u`` with checks on its output."""

    def __init__(self, activation, b: Backend):
        act = get_activation(activation)
        self.name = act.name
        self.homogeneous = act.is_builtin and _base_name(act) in HOMOGENEOUS
        # phi' > 0 everywhere: a back-propagated signal that becomes exactly zero has underflowed
        self.positive_derivative = act.is_builtin and _base_name(act) in ("linear", "tanh", "erf", "sigmoid")
        self.phi, self.dphi = activation_fn(act, b)
        self.xp = b.xp
        self.numpy = b.name == "numpy"

    def _checked(self, f, h, what, layer, scale_log):
        xp = self.xp
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):  # non-finite output is checked below
            out = f(h)
        complex_out = (
            np.iscomplexobj(out)
            if self.numpy or not hasattr(out, "dtype")
            else xp.isdtype(out.dtype, "complex floating")
        )
        if complex_out:
            raise TypeError(f"activation {self.name!r}: {what} returned complex values at layer {layer}")
        try:
            out = xp.asarray(out, dtype=xp.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"activation {self.name!r}: {what} must return real numbers, got {type(out).__name__}"
            ) from exc
        if out.ndim == 0:
            out = xp.broadcast_to(out, h.shape)
        if out.shape != h.shape:
            raise ValueError(f"activation {self.name!r}: {what} returned shape {out.shape} for input shape {h.shape}")
        if not bool(xp.all(xp.isfinite(out))):
            where = (
                "pre-activations beyond the float64 range" if scale_log > LOG_MAX else f"max |h| = exp({scale_log:.4g})"
            )
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
            return xp.where(u == 0, 0.0, u * xp.reshape(xp.exp(log_u), shape))

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
        return a, xp.zeros_like(log_u)

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
            lost = (xp.max(xp.abs(xp.reshape(step, (n, -1))), axis=1) == 0) & (
                xp.max(xp.abs(xp.reshape(upstream, (n, -1))), axis=1) > 0
            )
            if bool(xp.any(lost)):
                raise ValueError(
                    f"the back-propagated gradient underflows at layer {layer}: activation {self.name!r} saturates "
                    f"(pre-activations up to exp({float(xp.max(log_u)):.4g})), so phi'(h) is below the float64 range; "
                    "use a smaller sigma_w2 or input scale"
                )
        return step


# --- log-scale arithmetic --------------------------------------------------------------------------


def normalize(xp, u):
    """``u = exp(log_m) u_n`` per network (axis 0) with ``max |u_n| = 1``; ``log_m = -inf`` for u = 0."""
    n = u.shape[0]
    m = xp.max(xp.abs(xp.reshape(u, (n, -1))), axis=1)
    pos = m > 0
    safe = xp.where(pos, m, 1.0)
    un = u / xp.reshape(safe, (n,) + (1,) * (u.ndim - 1))
    return un, xp.where(pos, xp.log(safe), -xp.inf)


def combine(xp, t1, log1, t2, log2):
    """``exp(log1) t1 + exp(log2) t2`` (per network; ``log = -inf`` drops a term, ``t2`` may be None)
    as ``(u, L)`` with ``max |u| = 1``, or ``(0, 0)`` when the sum is zero. Each term's scale is
    factored out first, so neither the products nor the sum can overflow or underflow."""
    n = t1.shape[0]
    big = xp.maximum(log1, log2) if t2 is not None else log1
    big = xp.where(xp.isfinite(big), big, 0.0)

    def factor(lg):
        return xp.reshape(xp.exp(lg - big), (n,) + (1,) * (t1.ndim - 1))

    u = t1 * factor(log1)
    if t2 is not None:
        u = u + t2 * factor(log2)
    un, lm = normalize(xp, u)
    return un, xp.where(xp.isfinite(lm), big + lm, 0.0)


def log_sqrt(variance: float) -> float:
    return -math.inf if variance == 0 else 0.5 * math.log(variance)


def expand_log(normalized, log_scale, name, diag=None):
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


def diag2(a, b):
    return np.diagonal(a, axis1=-2, axis2=-1), np.diagonal(b, axis1=-2, axis2=-1)


class LogScaledMoments:
    """The ``cov`` and ``grad_sq`` properties of the dense and conv simulation results.

    A base of :class:`DenseSimulation` and :class:`ConvSimulation` (frozen dataclasses with the
    fields ``cov_normalized``, ``log_scale``, ``grad_sq_normalized``, ``grad_log_scale``): each
    property is the stored normalised field times ``exp`` of its log scale, with a ``ValueError``
    naming the log fields when a value overflows or underflows float64.
    """

    __slots__ = ()

    @property
    def cov(self) -> np.ndarray:
        """``cov_normalized * exp(log_scale)``, the shape of ``cov_normalized``."""
        return expand_log(self.cov_normalized, self.log_scale, "cov", diag2)

    @property
    def grad_sq(self) -> np.ndarray | None:
        """``grad_sq_normalized * exp(grad_log_scale)``, the shape of ``grad_sq_normalized``, or None."""
        if self.grad_sq_normalized is None:
            return None
        return expand_log(self.grad_sq_normalized, self.grad_log_scale, "grad_sq")


# --- spawned streams on a backend ------------------------------------------------------------------


def spawned_generators(generator: np.random.Generator, n: int, b: Backend) -> list:
    """``n`` independent Generators on backend ``b``, one per child of ``generator``'s seed sequence.

    NumPy: ``generator.spawn(n)`` (the streams of the NumPy reference, whatever its bit generator).
    Other backends: ``b.generator(child)`` on the same children
    (:func:`meanfield.backend.spawn_sequences`): ``array_api_strict`` then draws NumPy's numbers
    (for the default PCG64 bit generator), PyTorch and CuPy their own from the same children.
    """
    if b.name == "numpy":
        return generator.spawn(n)
    return [b.generator(seq) for seq in spawn_sequences(generator, n)]


# --- Xiao et al.'s orthogonal kernels, batched on a backend ----------------------------------------


def symmetric_projections(n_networks, c, gen, b: Backend):
    """``n_networks`` projections ``U diag(m) U^T`` (U Haar, m fair bits) on ``b``: the batched
    :func:`meanfield.init.symmetric_projection`."""
    xp = b.xp
    u = haar_orthogonal(c, c, gen, batch_shape=(n_networks,), backend=b)
    bits = astype(xp, gen.integers(0, 2, (n_networks, 1, c)), xp.float64)
    return (u * bits) @ matrix_transpose(xp, u)


def orthogonal_conv_kernels(n_networks, kernel_shape, c, init, gen, b: Backend):
    """Xiao et al.'s Algorithms 1 (``"orthogonal"``) and 2 (``"delta_orthogonal"``) for ``n_networks``
    networks at once, with square ``c x c`` taps, drawn and built on backend ``b`` (batched QR and
    products: no host round trip). The same laws as :func:`meanfield.init.orthogonal_conv_kernel`,
    :func:`~meanfield.init.orthogonal_conv_kernel_1d`, :func:`~meanfield.init.delta_orthogonal_kernel`
    and its 1-D variant (which build one kernel on the host); returns ``(n, *kernel_shape, c, c)``
    in the library layout ``(c_out, c_in)``."""
    xp = b.xp
    sd, k = len(kernel_shape), kernel_shape[0]
    if init == "delta_orthogonal":
        h = haar_orthogonal(c, c, gen, batch_shape=(n_networks,), backend=b)
        kernel = b.full((n_networks, *kernel_shape, c, c), 0.0)
        kernel[(slice(None),) + (k // 2,) * sd + (Ellipsis,)] = h
        return kernel
    eye = b.asarray(np.eye(c))
    kernel = xp.reshape(eye, (1,) * (sd + 1) + (c, c)) + b.full((n_networks,) + (1,) * sd + (c, c), 0.0)
    for _ in range(k - 1):  # Step 2 (eq. 2.17), built in Algorithm 1's (c_in, c_out) order
        p = symmetric_projections(n_networks, c, gen, b)
        if sd == 1:
            out = b.full((n_networks, kernel.shape[1] + 1, c, c), 0.0)
            out[:, :-1, ...] = out[:, :-1, ...] + kernel @ p[:, None, ...]
            out[:, 1:, ...] = out[:, 1:, ...] + kernel @ (eye - p)[:, None, ...]
        else:
            q = symmetric_projections(n_networks, c, gen, b)
            blocks = ((p @ q, p @ (eye - q)), ((eye - p) @ q, (eye - p) @ (eye - q)))
            a1, a2 = kernel.shape[1], kernel.shape[2]
            out = b.full((n_networks, a1 + 1, a2 + 1, c, c), 0.0)
            for i in range(2):
                for j in range(2):
                    part = kernel @ blocks[i][j][:, None, None, ...]
                    out[:, i : i + a1, j : j + a2, ...] = out[:, i : i + a1, j : j + a2, ...] + part
        kernel = out
    h = matrix_transpose(xp, haar_orthogonal(c, c, gen, batch_shape=(n_networks,), backend=b))  # Step 3
    h = xp.reshape(h, (n_networks,) + (1,) * sd + (c, c))
    return matrix_transpose(xp, h @ kernel)
