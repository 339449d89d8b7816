"""Layer kinds of the network language: each kind's rule, sampler, weights and module in one place.

Every layer is a frozen dataclass with

- ``out_shape(in_shape)``: the signal shape ``(*spatial, channels)`` it produces;
- ``init(seq, in_shape, n, b)``: its weights for ``n`` networks (a dict of arrays on backend ``b``,
  drawn from the ``SeedSequence`` ``seq`` through :mod:`meanfield.init`; ``seq`` is None for
  deterministic layers, :attr:`random` False);
- ``apply(params, x, b)``: the finite-network forward pass on ``(n, batch, *spatial, channels)``;
- ``theory(state, degree)``: the mean-field rule on a :class:`~meanfield.nets._state.State`;
- ``backward(state, g, gc, degree)``: the derivative map (gradient second moments from the
  layer's output to its input, under the gradient-independence assumption);
- ``module(params, k)``: the PyTorch module of network ``k`` (:mod:`meanfield.nets._torch`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .. import dense, init, ntk
from .._checks import check_int, check_nonnegative_scalar, check_probability_vector, check_scalar
from ..activations import Activation, get_activation
from ..backend import Backend, matrix_transpose, to_numpy
from ._state import ChannelMoments, State, average_flat, map_positions, materialise, offsets

__all__ = [
    "Act",
    "ChannelMix",
    "Conv",
    "Dense",
    "Layer",
    "Pool",
    "Replicate",
    "Subsample",
]

#: Activations with ``phi(-u) = -phi(u)``: zero-mean Gaussian inputs give zero-mean outputs.
ODD = ("linear", "tanh", "erf", "sin", "hard_tanh")


def _name(layer) -> str:
    return type(layer).__name__


def _not_described(layer, why: str) -> ValueError:
    return ValueError(f"the mean-field theory cannot describe {layer!r}: {why}")


class Layer:
    """Base of the layer kinds (module notes)."""

    random = False

    def out_shape(self, in_shape: tuple) -> tuple:
        """The output shape ``(*spatial, channels)`` for an input of shape ``in_shape`` (default: the same)."""
        return in_shape

    def materialise(self, state: State, degree: int) -> State:
        """``state`` with a pending activation (or the raw input) turned into its moments, for a rule
        that needs them; the activation of a non-Gaussian representation raises naming this layer."""
        return materialise(state, repr(self), degree)

    def init(self, seq, in_shape, n, b: Backend) -> dict:
        """The layer's weights for ``n`` networks (default: none)."""
        return {}

    def apply(self, params, x, b: Backend):
        """The finite-network forward pass on ``(n, batch, *spatial, channels)`` arrays of backend ``b``."""
        raise TypeError(f"{_name(self)} has no sampler (define apply)")

    def module(self, params, k: int):
        """The PyTorch module of network ``k``."""
        raise TypeError(f"{_name(self)} has no PyTorch module (define module)")

    def theory(self, state: State, degree: int) -> State:
        raise _not_described(self, "no mean-field rule")

    def backward(self, state: State, g, gc, degree: int):
        raise _not_described(self, "no derivative map")


def _gen(b: Backend, seq):
    return b.generator(seq)


def _bias(gen, n, width, sigma_b2, b):
    if sigma_b2 > 0:
        return math.sqrt(sigma_b2) * gen.standard_normal((n, width))
    return b.full((n, width), 0.0)


def _channels_matmul(x, w, xp):
    """``x @ w^T`` on the channel axis; ``x`` (n, B, ..., c_in), ``w`` (n, c_out, c_in) or (c_out, c_in)."""
    lead = tuple(x.shape[:-1])
    flat = xp.reshape(x, (lead[0], -1, x.shape[-1]))
    out = flat @ matrix_transpose(xp, w)
    return xp.reshape(out, lead + (w.shape[-2],))


def _bias_add(y, bias, xp):
    return y + xp.reshape(bias, (bias.shape[0],) + (1,) * (y.ndim - 2) + (bias.shape[-1],))


# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Dense(Layer):
    r"""Dense layer on the channel axis, :math:`h' = W z + b`, :math:`W_{ij} \sim N(0, \sigma_w^2/n_{in})`, :math:`b_i \sim N(0, \sigma_b^2)`.

    Rule: the C-map :func:`meanfield.dense.covariance_map` (Xiao et al. 2018, eq. 2.5) when its input is a
    pending activation, :func:`meanfield.dense.input_covariance` on the raw input, and
    :math:`\sigma_w^2 S + \sigma_b^2` otherwise; NTK term :func:`meanfield.ntk.ntk_map`. Weights
    :func:`meanfield.init.dense_weights` (``law``); applied at every position of a spatial signal.
    """

    width: int
    sigma_w2: float = 1.0
    sigma_b2: float = 0.0
    law: str = "gaussian"
    random = True

    def __post_init__(self):
        object.__setattr__(self, "width", check_int(self.width, "width", 1, 2**20))
        object.__setattr__(self, "sigma_w2", check_nonnegative_scalar(self.sigma_w2, "sigma_w2"))
        object.__setattr__(self, "sigma_b2", check_nonnegative_scalar(self.sigma_b2, "sigma_b2"))
        if self.law not in init.WEIGHT_LAWS:
            raise ValueError(f"law must be one of {init.WEIGHT_LAWS}, got {self.law!r}")

    def out_shape(self, in_shape):
        return tuple(in_shape[:-1]) + (self.width,)

    def init(self, seq, in_shape, n, b):
        gen = _gen(b, seq)
        w = init.dense_weights(self.width, in_shape[-1], self.sigma_w2, self.law, gen, batch_shape=n, backend=b)
        return {"weight": w, "bias": _bias(gen, n, self.width, self.sigma_b2, b)}

    def apply(self, params, x, b):
        return _bias_add(_channels_matmul(x, params["weight"], b.xp), params["bias"], b.xp)

    def module(self, params, k):
        from ._torch import module_class, tensor

        return module_class("Dense")(tensor(params["weight"], k), tensor(params["bias"], k))

    def theory(self, state, degree):
        sw, sb = self.sigma_w2, self.sigma_b2
        th = None
        if sw == 0.0:  # a zero layer: its output is the bias, whatever the input
            s = np.full((state.n_inputs * math.prod(state.spatial),) * 2, sb)
            return State(s, None, self.width, state.spatial, state.n_inputs, True, ntk=None if state.ntk is None else s)
        if state.x is not None and not state.spatial:
            s = dense.input_covariance(state.x.reshape(state.n_inputs, state.width), sw, sb)
            th = s if state.ntk is not None else None
        elif state.act is not None and state.cross is None and state.gaussian:
            if state.ntk is not None:
                step = ntk.ntk_map(state.second, state.ntk, state.act, sw, sb, degree)
                s, th = step.cov, step.ntk
            else:
                s = dense.covariance_map(state.second, state.act, sw, sb, degree)
        else:
            st = materialise(state, repr(self), degree)
            s = sw * st.second + sb
            th = None if st.ntk is None else s + sw * st.ntk
        return State(s, None, self.width, state.spatial, state.n_inputs, True, ntk=th)

    def backward(self, state, g, gc, degree):
        # dL/dz_j = sum_i W_ij delta_i: n_out terms of variance sigma_w2 / n_in each
        return (self.sigma_w2 * (self.width / state.width)) * g, None


@dataclass(frozen=True)
class Conv(Layer):
    r"""Convolution in any number of spatial dimensions: periodic (Xiao et al. 2018, eq. 2.1) or zero-padded, strided, dilated, grouped.

    :math:`h'_j(\alpha) = \sum_{\beta}\sum_i \omega_{ji}(\beta) z_i(\alpha+\beta) + b_j`,
    :math:`\omega_{ji}(\beta) \sim N(0, \sigma_w^2 v_\beta / c_{in})`.

    Parameters
    ----------
    channels : int
        Output channels ``c_out`` (1 to 2**16; a multiple of ``groups``).
    kernel_shape : int or tuple of int
        Kernel size per spatial axis (1 to 99; odd for ``padding="circular"``).
    sigma_w2, sigma_b2 : float
        Weight and bias variances (>= 0): weights :math:`N(0, \sigma_w^2 v_\beta / (c_{in}/\mathrm{groups}))`.
    v : array_like, optional
        Variance weights of the taps (non-negative, summing to 1, the kernel's shape); uniform by default.
    law : {"gaussian", "zero"}
        ``"zero"`` gives zero kernels (ConstNet's branches).
    stride, dilation : int or tuple of int
        Per spatial axis (1 to 2**16), PyTorch's meaning.
    groups : int
        Channel groups (1 to 2**16; divides the input and output channels).
    padding : "circular", int or tuple of int
        ``"circular"`` (default): periodic padding by ``dilation * (k // 2)``, the same size at stride 1;
        amounts per axis (0 to 2**16): PyTorch's explicit padding, of mode ``padding_mode``.
    padding_mode : {"zeros", "circular"}, optional
        Mode of explicit amounts (default ``"zeros"``); with ``padding="circular"`` it is ``"circular"``.

    Raises
    ------
    ValueError
        A size, variance or mode outside the ranges above; ``v`` of another shape.

    Notes
    -----
    Default (periodic, stride 1, no dilation, one group): the dense C-map on every (input,
    position) pair followed by the averaging :math:`\mathcal{A}_v\star` (eqs. 2.3-2.5 with
    footnote 3; the numbers of :func:`meanfield.conv.multi_input_covariance_map`); NTK term of
    :func:`meanfield.ntk.conv_ntk_map`; backward map of eq. 2.15; weights
    :func:`meanfield.init.gaussian_conv_kernel` (1-D, 2-D) or the same law drawn directly (3-D and more).

    Otherwise the output position ``p`` reads through tap ``j`` the input position
    ``s p + d j - pad`` (output size ``floor((n + 2 pad - d (k - 1) - 1) / s) + 1``), a zero where
    padded (``z = 0``, after any pending activation) or wrapped (circular), and the rule is exact and
    position-dependent: :math:`S'_{(a,p),(b,p')} = \sigma_w^2 \sum_j v_j \tilde S_{(a, sp + dj - pad),
    (b, sp' + dj - pad)} + \sigma_b^2` with padded entries 0 (the same tap on both sides: different taps
    have independent weights), the NTK term alike; the different units stay uncorrelated and
    zero-mean. The derivative map is its adjoint (the scatter-add through the same taps) times
    :math:`\sigma_w^2 c_{out} / c_{in}`. ``groups`` changes the fan-in to ``c_in / groups``, not the
    per-unit moments.
    """

    channels: int
    kernel_shape: tuple = (3,)
    sigma_w2: float = 1.0
    sigma_b2: float = 0.0
    v: Any = None
    law: str = "gaussian"
    stride: Any = 1
    dilation: Any = 1
    groups: int = 1
    padding: Any = "circular"
    padding_mode: str | None = None
    random = True

    def __post_init__(self):
        ks = self.kernel_shape
        ks = (ks,) if isinstance(ks, (int, np.integer)) else tuple(ks)
        ks = tuple(check_int(k, "kernel_shape", 1, 99) for k in ks)
        circular = isinstance(self.padding, str)
        if circular and self.padding != "circular":
            raise ValueError(f"padding must be 'circular' or amounts per axis, got {self.padding!r}")
        if not ks or (circular and any(k % 2 == 0 for k in ks)):
            raise ValueError(
                f"kernel_shape must be one or more odd sizes 2k+1 with padding='circular', got {self.kernel_shape!r}"
            )
        object.__setattr__(self, "kernel_shape", ks)
        object.__setattr__(self, "channels", check_int(self.channels, "channels", 1, 2**16))
        object.__setattr__(self, "sigma_w2", check_nonnegative_scalar(self.sigma_w2, "sigma_w2"))
        object.__setattr__(self, "sigma_b2", check_nonnegative_scalar(self.sigma_b2, "sigma_b2"))
        v = np.full(ks, 1.0 / math.prod(ks)) if self.v is None else check_probability_vector(self.v, "v")
        if v.shape != ks:
            raise ValueError(f"v must have the kernel's shape {ks}, got {v.shape}")
        v.setflags(write=False)
        object.__setattr__(self, "v", v)
        if self.law not in ("gaussian", "zero"):
            raise ValueError(f"law must be 'gaussian' or 'zero', got {self.law!r}")
        n = len(ks)
        object.__setattr__(self, "stride", _per_axis(self.stride, n, "stride", 1))
        object.__setattr__(self, "dilation", _per_axis(self.dilation, n, "dilation", 1))
        object.__setattr__(self, "groups", check_int(self.groups, "groups", 1, 2**16))
        if self.channels % self.groups:
            raise ValueError(f"channels ({self.channels}) must be a multiple of groups ({self.groups})")
        if circular:
            if self.padding_mode not in (None, "circular"):
                raise ValueError(f"padding='circular' takes padding_mode None or 'circular', got {self.padding_mode!r}")
            object.__setattr__(self, "padding_mode", "circular")
        else:
            object.__setattr__(self, "padding", _per_axis(self.padding, n, "padding", 0))
            mode = "zeros" if self.padding_mode is None else self.padding_mode
            if mode not in ("zeros", "circular"):
                raise ValueError(f"padding_mode must be 'zeros' or 'circular', got {self.padding_mode!r}")
            object.__setattr__(self, "padding_mode", mode)

    @property
    def periodic(self) -> bool:
        """True for the periodic 'same' convolution (circular, stride 1, no dilation, one group): Xiao et al.'s rule."""
        ones = (1,) * len(self.kernel_shape)
        return self.padding == "circular" and self.stride == ones and self.dilation == ones and self.groups == 1

    @property
    def pads(self) -> tuple:
        """The padding amount per spatial axis."""
        if self.padding == "circular":
            return tuple(d * (k // 2) for d, k in zip(self.dilation, self.kernel_shape))
        return self.padding

    def _extra(self):
        return (self.stride, self.dilation, self.groups, self.padding, self.padding_mode)

    def __hash__(self):
        base = (self.channels, self.kernel_shape, self.sigma_w2, self.sigma_b2, self.v.tobytes(), self.law)
        return hash(base if self.periodic else base + self._extra())

    def __eq__(self, other):
        return (
            isinstance(other, Conv)
            and hash(self) == hash(other)
            and np.array_equal(self.v, other.v)
            and self._extra() == other._extra()
        )

    def _check(self, in_shape):
        if len(in_shape) - 1 != len(self.kernel_shape):
            raise ValueError(
                f"{_name(self)} has a {len(self.kernel_shape)}-D kernel but the signal has {len(in_shape) - 1} spatial axes"
            )
        if in_shape[-1] % self.groups:
            raise ValueError(f"{_name(self)}: the input's {in_shape[-1]} channels are not a multiple of groups")
        if not self.periodic:
            if self.padding_mode == "circular" and any(p > n for p, n in zip(self.pads, in_shape[:-1])):
                raise ValueError(f"{_name(self)}: circular padding {self.pads} exceeds the positions {in_shape[:-1]}")
            if any(m < 1 for m in self.out_spatial(tuple(in_shape[:-1]))):
                raise ValueError(f"{_name(self)}: the kernel does not fit the padded positions {in_shape[:-1]}")

    def out_spatial(self, spatial: tuple) -> tuple:
        """The output positions per axis (PyTorch's ``floor((n + 2 pad - d (k - 1) - 1) / s) + 1``)."""
        if self.periodic:
            return tuple(spatial)
        from ._conv import out_size

        return tuple(
            out_size(n, k, s, d, p)
            for n, k, s, d, p in zip(spatial, self.kernel_shape, self.stride, self.dilation, self.pads)
        )

    def out_shape(self, in_shape):
        self._check(in_shape)
        return self.out_spatial(tuple(in_shape[:-1])) + (self.channels,)

    def init(self, seq, in_shape, n, b):
        self._check(in_shape)
        c_in, ks = in_shape[-1] // self.groups, self.kernel_shape
        if self.law == "zero":
            return {"kernel": b.full((n, *ks, self.channels, c_in), 0.0), "bias": b.full((n, self.channels), 0.0)}
        gen = _gen(b, seq)
        if len(ks) <= 2 and self.periodic:
            k = init.gaussian_conv_kernel(
                ks, c_in, self.channels, sigma_w2=self.sigma_w2, v=self.v, rng=gen, batch_shape=n, backend=b
            )
        else:
            std = b.asarray(np.sqrt(self.sigma_w2 * self.v / c_in)[(...,) + (None, None)])
            k = std * gen.standard_normal((n, *ks, self.channels, c_in))
        return {"kernel": k, "bias": _bias(gen, n, self.channels, self.sigma_b2, b)}

    def apply(self, params, x, b):
        if not self.periodic:
            from ._conv import conv_apply

            return _bias_add(conv_apply(x, params["kernel"], self, b), params["bias"], b.xp)
        return _bias_add(periodic_conv(x, params["kernel"], self.v, b), params["bias"], b.xp)

    def module(self, params, k):
        from ._torch import module_class, tensor

        if not self.periodic:
            from ._conv import conv_module

            return conv_module(tensor(params["kernel"], k), tensor(params["bias"], k), self)
        taps = [(tuple(bt + s // 2 for bt, s in zip(beta, self.v.shape)), beta) for beta, _ in offsets(self.v)]
        return module_class("Conv")(tensor(params["kernel"], k), tensor(params["bias"], k), taps)

    def theory(self, state, degree):
        if not self.periodic:
            from ._conv import conv_theory

            return conv_theory(self, state, degree)
        sw, sb, shape = self.sigma_w2, self.sigma_b2, state.spatial
        d, th = state.n_inputs, None
        if sw == 0.0 or self.law == "zero":  # a zero kernel: the output is the bias, whatever the input
            s = np.full((d * math.prod(shape),) * 2, sb)
            return State(s, None, self.channels, shape, d, True, ntk=None if state.ntk is None else s)
        if state.x is not None:
            x = state.x.reshape(d, -1, state.width)
            p = x.shape[1]
            gram = np.einsum("aic,bjc->abij", x, x) / state.width  # (D, D, P, P): conv.multi_input_covariance
            from ._state import average

            out = sw * average(gram, self.v, shape, +1) + sb
            if not np.all(np.isfinite(out)):
                raise ValueError("the input covariance exceeds the float64 range (rescale x)")
            s = np.swapaxes(out, 1, 2).reshape(d * p, d * p)
            th = s if state.ntk is not None else None
        elif state.act is not None and state.cross is None and state.gaussian:
            s = average_flat(dense.covariance_map(state.second, state.act, sw, sb, degree), d, self.v, shape)
            if state.ntk is not None:
                dot = dense.derivative_covariance_map(state.second, state.act, sw, degree)
                th = s + average_flat(dot * state.ntk, d, self.v, shape)
        else:
            st = materialise(state, repr(self), degree)
            s = average_flat(sw * st.second + sb, d, self.v, shape)
            th = None if st.ntk is None else s + average_flat(sw * st.ntk, d, self.v, shape)
        return State(s, None, self.channels, shape, d, True, ntk=th)

    def backward(self, state, g, gc, degree):
        if not self.periodic:
            from ._conv import conv_backward

            return conv_backward(self, state, g)
        factor = self.sigma_w2 * (self.channels / state.width)  # c_out terms of variance sigma_w2 v / c_in
        return factor * average_flat(g, state.n_inputs, self.v, state.spatial, -1), None

    def __repr__(self):
        base = f"Conv(channels={self.channels}, kernel_shape={self.kernel_shape}, sigma_w2={self.sigma_w2}, sigma_b2={self.sigma_b2}"
        if self.periodic:
            return base + ")"
        return (
            base + f", stride={self.stride}, dilation={self.dilation}, groups={self.groups}, "
            f"padding={self.padding!r}, padding_mode={self.padding_mode!r})"
        )


def _per_axis(value, n, name, low):
    """An int (every axis) or one int per axis, each in ``[low, 2**16]``."""
    if isinstance(value, (int, np.integer)):
        vals = (value,) * n
    elif isinstance(value, (tuple, list, np.ndarray)):
        vals = tuple(value)
    else:
        raise TypeError(f"{name} must be an int or a tuple of {n} ints, got {value!r}")
    if len(vals) != n:
        raise ValueError(f"{name} must be an int or one value per spatial axis ({n}), got {value!r}")
    return tuple(check_int(x, name, low, 2**16) for x in vals)


def periodic_conv(x, kernel, v, b: Backend):
    """Periodic cross-correlation ``y_j(a) = sum_beta sum_i K_ji(beta) x_i(a + beta)`` in any dimension.

    ``x`` (n, B, *spatial, c_in), ``kernel`` (n, *k, c_out, c_in) or (*k, c_out, c_in); taps with
    ``v_beta = 0`` are skipped (the delta kernels of Blumenfeld et al. 2020 cost one product).
    """
    xp = b.xp
    sd = len(v.shape)
    axes = tuple(range(2, 2 + sd))
    batched = kernel.ndim == sd + 3
    out = None
    for beta, _ in offsets(v):
        tap = tuple(bt + s // 2 for bt, s in zip(beta, v.shape))
        k = kernel[(slice(None),) + tap + (Ellipsis,)] if batched else kernel[tap + (Ellipsis,)]
        shifted = xp.roll(x, tuple(-bt for bt in beta), axis=axes)
        term = _channels_matmul(shifted, k, xp)
        out = term if out is None else out + term
    return out


@dataclass(frozen=True)
class Act(Layer):
    """Elementwise activation (:func:`meanfield.activations.get_activation`, e.g. ``Act("leaky_relu", slope=0.1)``).

    Rule: marks the Gaussian state as ``phi(h)``; the next dense or convolutional layer applies the
    C-map to it in one call. Backward: :math:`\\mathbb{E}\\,\\phi'(h_a)\\phi'(h_b)` times the gradient
    moments (:func:`meanfield.dense.derivative_covariance_map` at ``sigma_w2 = 1``).
    """

    name: str
    slope: float | None = None

    @property
    def activation(self) -> Activation:
        return get_activation(self.name) if self.slope is None else get_activation(self.name, slope=self.slope)

    def __post_init__(self):
        self.activation  # noqa: B018  (validates the name and parameters)

    def apply(self, params, x, b):
        return activation_fn(self.activation, b)(x)

    def module(self, params, k):
        from ._torch import module_class

        act = self.activation
        fallback = None
        if act.name.split("(")[0] not in ("linear", "tanh", "relu", "leaky_relu", "hard_tanh", "erf"):
            from ..pytorch.modules import activation_module

            fallback = activation_module(act)
        return module_class("Act")(act.name.split("(")[0], act.param, fallback)

    def theory(self, state, degree):
        # on a non-Gaussian representation the activation stays pending: a zero layer after it
        # needs nothing of it, anything else reports it (materialise)
        if state.x is not None or state.act is not None:
            state = materialise(state, repr(self), degree)
        return replace(state, act=self.activation)

    def backward(self, state, g, gc, degree):
        if state.x is not None or state.act is not None or not state.gaussian:
            raise _not_described(self, "its derivative map needs a Gaussian pre-activation")
        n = state.second.shape[0]
        dot = dense.derivative_covariance_map(
            state.second if state.cross is None else _joint(state), self.activation, 1.0, degree
        )
        if state.cross is None:
            return dot * g, None
        return dot[:n, :n] * g, (None if gc is None else dot[:n, n:] * gc)


def _joint(state):
    from ._state import joint

    return joint(state.second, state.cross)


_XP = {
    "linear": lambda xp, x, a: x,
    "tanh": lambda xp, x, a: xp.tanh(x),
    "relu": lambda xp, x, a: xp.maximum(x, 0.0),
    "leaky_relu": lambda xp, x, a: xp.where(x > 0, x, a * x),
    "hard_tanh": lambda xp, x, a: xp.clip(x, -1.0, 1.0),
}


def activation_fn(act: Activation, b: Backend):
    """``phi`` of an Activation on arrays of backend ``b`` (whole-array forms where known, else its NumPy callable)."""
    base = act.name.split("(")[0]
    if act.is_builtin and base in _XP:
        f = _XP[base]
        return lambda x: f(b.xp, x, act.param)
    if b.name == "numpy":
        return act.phi
    return lambda x: b.asarray(act.phi(to_numpy(x)))


# ----------------------------------------------------------------------------------------------
# Deterministic channel maps: ConstNet / LeakyNet averaging, replicated features, pooling.


@dataclass(frozen=True)
class ChannelMix(Layer):
    r"""The deterministic channel map :math:`y = s\,(\gamma I + (1-\gamma)\tfrac1{n_{in}} 1 1^T) z` at every position.

    LeakyNet's layers :math:`s_l \Delta\otimes M_l` (Blumenfeld et al. 2020, Sec. 5.1, App. H, J:
    ``gamma = 1`` is ``'I'``, ``gamma = 0`` is ``'1'``) and ConstNet's averaging convolution
    :math:`\Delta\otimes\tfrac1{n_{in}}11^T` (``gamma = 0``, ``channels`` outputs, App. A). Weights
    :func:`meanfield.init.channel_matrix` / :func:`meanfield.init.averaging_conv`. Rule: the exact
    moments of a linear map of exchangeable units (:class:`~meanfield.nets._state.ChannelMoments`).
    """

    gamma: float = 0.0
    scale: float = 1.0
    channels: int | None = None

    def __post_init__(self):
        g = check_scalar(self.gamma, "gamma")
        if not 0.0 <= g <= 1.0:
            raise ValueError(f"gamma must lie in [0, 1], got {g}")
        object.__setattr__(self, "gamma", g)
        object.__setattr__(self, "scale", check_scalar(self.scale, "scale"))
        if self.channels is not None:
            object.__setattr__(self, "channels", check_int(self.channels, "channels", 1, 2**16))

    def _n_out(self, n_in):
        n = n_in if self.channels is None else self.channels
        if self.gamma > 0 and n != n_in:
            raise ValueError(f"ChannelMix with gamma > 0 keeps the width ({n_in}), got channels={n}")
        return n

    def out_shape(self, in_shape):
        return tuple(in_shape[:-1]) + (self._n_out(in_shape[-1]),)

    def matrix(self, n_in: int) -> np.ndarray:
        n_out = self._n_out(n_in)
        if self.gamma > 0:
            m = init.channel_matrix(n_in, "I", self.gamma)
        else:
            m = init.averaging_conv(n_out, n_in, (1,))[0]
        return self.scale * m

    def init(self, seq, in_shape, n, b):
        return {"matrix": b.asarray(self.matrix(in_shape[-1]))}

    def apply(self, params, x, b):
        return _channels_matmul(x, params["matrix"], b.xp)

    def module(self, params, k):
        from ._torch import module_class, tensor

        return module_class("Matrix")(tensor(params["matrix"]), trainable=True)

    def theory(self, state, degree):
        return linear_theory(self, ChannelMoments.of(self.matrix(state.width)), state, degree)

    def backward(self, state, g, gc, degree):
        return ChannelMoments.of(self.matrix(state.width)).transpose.apply(g, gc)


def linear_theory(layer, moments: ChannelMoments, state: State, degree: int) -> State:
    st = materialise(state, repr(layer), degree)
    s, c = moments.apply(st.second, st.cross)
    th = thc = None
    if st.ntk is not None:
        th, thc = moments.apply(st.ntk, st.ntk_cross)
    return State(
        s,
        c,
        moments.n_out,
        st.spatial,
        st.n_inputs,
        st.gaussian,
        ntk=th,
        ntk_cross=thc,
        mean=moments.apply_mean(st.mean),
        mean_known=st.mean_known,
    )


@dataclass(frozen=True)
class Replicate(Layer):
    """Replicated features: every channel copied ``replicas`` times (``y_{iR + r} = z_i``).

    After a dense layer of ``d / R`` units this is Blumenfeld et al.'s replicated-feature layer
    (``d`` rows of ``d / R`` independent rows repeated ``R`` times, Sec. 4.2; closed-form
    :math:`C_f = (R - 1)/(d - 1)`, :func:`meanfield.symmetry.closed_form_correlations`).
    """

    replicas: int

    def __post_init__(self):
        object.__setattr__(self, "replicas", check_int(self.replicas, "replicas", 1, 2**16))

    def out_shape(self, in_shape):
        return tuple(in_shape[:-1]) + (in_shape[-1] * self.replicas,)

    def apply(self, params, x, b):
        xp = b.xp
        r = self.replicas
        y = xp.broadcast_to(x[..., None], tuple(x.shape) + (r,))
        return xp.reshape(y, tuple(x.shape[:-1]) + (x.shape[-1] * r,))

    def module(self, params, k):
        from ._torch import module_class

        return module_class("Replicate")(self.replicas)

    def _moments(self, n_in):
        m = np.repeat(np.eye(n_in), self.replicas, axis=0)
        return ChannelMoments.of(m)

    def theory(self, state, degree):
        return linear_theory(self, self._moments(state.width), state, degree)

    def backward(self, state, g, gc, degree):
        return self._moments(state.width).transpose.apply(g, gc)


@dataclass(frozen=True)
class Pool(Layer):
    """Global mean pooling over the spatial positions (the read-out of Blumenfeld et al.'s and Xiao et al.'s CNNs)."""

    def out_shape(self, in_shape):
        return (in_shape[-1],)

    def apply(self, params, x, b):
        return b.xp.mean(x, axis=tuple(range(2, x.ndim - 1)))

    def module(self, params, k):
        from ._torch import module_class

        return module_class("Pool")()

    def _pool(self, m, d, p):
        return None if m is None else m.reshape(d, p, d, p).mean(axis=(1, 3))

    def theory(self, state, degree):
        st = materialise(state, repr(self), degree)
        d, p = st.n_inputs, math.prod(st.spatial)
        return State(
            self._pool(st.second, d, p),
            self._pool(st.cross, d, p),
            st.width,
            (),
            d,
            st.gaussian,
            ntk=self._pool(st.ntk, d, p),
            ntk_cross=self._pool(st.ntk_cross, d, p),
            mean=None if st.mean is None else st.mean.reshape(d, p).mean(axis=1),
            mean_known=st.mean_known,
        )

    def backward(self, state, g, gc, degree):
        p = math.prod(state.spatial)
        spread = lambda m: None if m is None else np.kron(m, np.ones((p, p))) / (p * p)  # noqa: E731
        return spread(g), spread(gc)


@dataclass(frozen=True)
class Subsample(Layer):
    """Keep every ``stride``-th position on each spatial axis (ConstNet's strided widening blocks)."""

    stride: int = 2

    def __post_init__(self):
        object.__setattr__(self, "stride", check_int(self.stride, "stride", 1, 2**16))

    def out_shape(self, in_shape):
        return tuple(-(-n // self.stride) for n in in_shape[:-1]) + (in_shape[-1],)

    def apply(self, params, x, b):
        sd = x.ndim - 3
        return x[(slice(None), slice(None)) + (slice(None, None, self.stride),) * sd + (slice(None),)]

    def module(self, params, k):
        from ._torch import module_class

        return module_class("Subsample")(self.stride)

    def _keep(self, spatial, d):
        idx = np.arange(math.prod(spatial)).reshape(spatial)
        keep = idx[(slice(None, None, self.stride),) * len(spatial)].ravel()
        p = math.prod(spatial)
        return (np.arange(d)[:, None] * p + keep[None, :]).ravel()

    def theory(self, state, degree):
        st = materialise(state, repr(self), degree) if state.x is not None else state
        k = self._keep(st.spatial, st.n_inputs)
        sp = self.out_shape(tuple(st.spatial) + (st.width,))[:-1]
        return map_positions(st, lambda m: m[np.ix_(k, k)], sp, lambda mu: mu[k])

    def backward(self, state, g, gc, degree):
        k = self._keep(state.spatial, state.n_inputs)
        n = state.n_inputs * math.prod(state.spatial)

        def up(m):
            if m is None:
                return None
            out = np.zeros((n, n))
            out[np.ix_(k, k)] = m
            return out

        return up(g), up(gc)
