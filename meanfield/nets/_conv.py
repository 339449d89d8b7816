r"""Convolutions with zero or circular padding, stride, dilation and groups (private; see :class:`meanfield.nets.Conv`).

With PyTorch's semantics, output position ``p`` of axis ``a`` reads, through tap ``j``, the input
position :math:`i = s_a p + d_a j - \mathrm{pad}_a` (stride ``s``, dilation ``d``); with zero
padding an out-of-range ``i`` reads ``z = 0``, with circular padding it wraps modulo the axis length.
The tap index maps of every axis combine into one flat map per tap, with the *sentinel* ``P`` (the
number of input positions) for a padded read. The mean-field rule is then, for every pair of inputs
``(a, b)``,

.. math::

    S'_{(a,p),(b,p')} = \sigma_w^2 \sum_j v_j\, \tilde S_{(a, i_j(p)),(b, i_j(p'))} + \sigma_b^2,

with :math:`\tilde S` the per-unit second moments of the layer's input ``z`` extended by zero rows
and columns at the sentinel: the same tap on both sides, because different taps have independent
weights. Its adjoint (the derivative map) scatters the gradient moments back through the same maps,
times :math:`\sigma_w^2 c_{out} / c_{in}` (each input unit feeds ``c_out / groups`` outputs through
weights of variance :math:`\sigma_w^2 v_j / (c_{in}/\mathrm{groups})`).
"""

from __future__ import annotations

import math

import numpy as np

from ..backend import Backend, concat

__all__: list[str] = []


def out_size(n: int, k: int, stride: int, dilation: int, pad: int) -> int:
    """PyTorch's output length ``floor((n + 2 pad - d (k - 1) - 1) / s) + 1``."""
    return (n + 2 * pad - dilation * (k - 1) - 1) // stride + 1


def taps(v: np.ndarray):
    """``(tap index tuple, v_j)`` for the non-zero entries of ``v``, in row-major order."""
    for index in zip(*np.nonzero(v)):
        yield tuple(int(j) for j in index), float(v[index])


def _axis_map(n, m, j, stride, dilation, pad, circular):
    i = stride * np.arange(m) + dilation * j - pad
    if circular:
        return i % n, np.ones(m, dtype=bool)
    ok = (i >= 0) & (i < n)
    return np.where(ok, i, 0), ok


def tap_maps(layer, spatial: tuple) -> list:
    """``[(v_j, flat map (P_out,))]`` of every tap: the input position each output position reads, ``P_in`` when padded."""
    p_in = math.prod(spatial)
    out_sp = layer.out_spatial(spatial)
    strides = np.cumprod((1,) + tuple(spatial[::-1]))[:-1][::-1]
    circular = layer.padding_mode == "circular"
    maps = []
    for index, weight in taps(layer.v):
        flat = np.zeros(1, dtype=int)
        valid = np.ones(1, dtype=bool)
        for ax, j in enumerate(index):
            i, ok = _axis_map(
                spatial[ax], out_sp[ax], j, layer.stride[ax], layer.dilation[ax], layer.pads[ax], circular
            )
            flat = (flat[:, None] + strides[ax] * i[None, :]).ravel()
            valid = (valid[:, None] & ok[None, :]).ravel()
        maps.append((weight, np.where(valid, flat, p_in)))
    return maps


def _blocks(flat: np.ndarray, d: int, p: int) -> np.ndarray:
    """(D P, D P) -> (D, P + 1, D, P + 1) with zero rows and columns at the sentinel ``P``."""
    out = np.zeros((d, p + 1, d, p + 1))
    out[:, :p, :, :p] = flat.reshape(d, p, d, p)
    return out


def gather(flat: np.ndarray, maps: list, d: int, p_in: int) -> np.ndarray:
    r""":math:`\sum_j v_j \tilde S_{(a, i_j(p)),(b, i_j(p'))}` of a (D P_in, D P_in) matrix (module notes)."""
    padded = _blocks(flat, d, p_in)
    out = None
    for weight, idx in maps:
        term = weight * np.take(np.take(padded, idx, axis=1), idx, axis=3)
        out = term if out is None else out + term
    p_out = maps[0][1].size
    return out.reshape(d * p_out, d * p_out)


def scatter(flat: np.ndarray, maps: list, d: int, p_in: int) -> np.ndarray:
    """The adjoint of :func:`gather`: (D P_out, D P_out) gradient moments summed back onto the input positions."""
    p_out = maps[0][1].size
    g = np.transpose(flat.reshape(d, p_out, d, p_out), (1, 3, 0, 2))  # (P_out, P_out, D, D)
    out = np.zeros((d, p_in + 1, d, p_in + 1))
    for weight, idx in maps:
        np.add.at(out, (slice(None), idx[:, None], slice(None), idx[None, :]), weight * g)
    return out[:, :p_in, :, :p_in].reshape(d * p_in, d * p_in)


def pad_input(x, layer, xp, full):
    """``x`` (n, B, *spatial, c) padded on every spatial axis (zeros or circular), any array backend."""
    for ax, p in enumerate(layer.pads):
        if p == 0:
            continue
        axis = 2 + ax
        n = x.shape[axis]
        lo = [slice(None)] * x.ndim
        hi = [slice(None)] * x.ndim
        if layer.padding_mode == "circular":
            lo[axis], hi[axis] = slice(n - p, n), slice(0, p)
            x = concat(xp, [x[tuple(lo)], x, x[tuple(hi)]], axis=axis)
        else:
            shape = list(x.shape)
            shape[axis] = p
            z = full(tuple(shape))
            x = concat(xp, [z, x, z], axis=axis)
    return x


def conv_apply(x, kernel, layer, b: Backend):
    """``y_o(p) = sum_j sum_{i in group(o)} K_{o i}(j) z_i(s p + d j - pad)`` on ``(n, B, *spatial, c_in)``.

    ``kernel`` (n, *k, c_out, c_in / groups); padded reads are zeros or wrap around (circular).
    """
    from ._layers import _channels_matmul

    xp = b.xp
    sd = len(layer.kernel_shape)
    out_sp = layer.out_spatial(tuple(x.shape[2 : 2 + sd]))
    xpad = pad_input(x, layer, xp, lambda shape: b.full(shape, 0.0))
    g = layer.groups
    cin_g = x.shape[-1] // g
    cout_g = layer.channels // g
    out = None
    for index, _ in taps(layer.v):
        sl = tuple(
            slice(d * j, d * j + s * (m - 1) + 1, s) for j, s, d, m in zip(index, layer.stride, layer.dilation, out_sp)
        )
        shifted = xpad[(slice(None), slice(None)) + sl + (slice(None),)]
        k = kernel[(slice(None),) + index + (Ellipsis,)]  # (n, c_out, c_in / g)
        if g == 1:
            term = _channels_matmul(shifted, k, xp)
        else:
            parts = [
                _channels_matmul(
                    shifted[..., gi * cin_g : (gi + 1) * cin_g], k[:, gi * cout_g : (gi + 1) * cout_g, :], xp
                )
                for gi in range(g)
            ]
            term = concat(xp, parts, axis=-1)
        out = term if out is None else out + term
    return out


def conv_module(kernel, bias, layer):
    """A torch module computing :func:`conv_apply` (float64, channels-last) for one network's ``kernel`` (*k, c_out, c_in/g)."""
    from ._torch import require_torch

    torch = require_torch()

    class GeneralConvModule(torch.nn.Module):
        """Zero- or circular-padded, strided, dilated, grouped cross-correlation on channels-last signals."""

        def __init__(self):
            super().__init__()
            self.kernel = torch.nn.Parameter(kernel)
            self.bias = torch.nn.Parameter(bias)

        def forward(self, x):
            sd = len(layer.kernel_shape)
            # channels-first for torch's padding and convolution of 1-3 spatial axes
            perm = (0, sd + 1) + tuple(range(1, sd + 1))
            xc = x.permute(*perm)
            pads = []
            for p in reversed(layer.pads):
                pads += [p, p]
            if any(layer.pads):
                mode = "circular" if layer.padding_mode == "circular" else "constant"
                xc = torch.nn.functional.pad(xc, pads, mode=mode)
            w = self.kernel.permute(sd, sd + 1, *range(sd))  # (c_out, c_in / g, *k)
            conv = (torch.nn.functional.conv1d, torch.nn.functional.conv2d, torch.nn.functional.conv3d)[sd - 1]
            y = conv(xc, w, None, layer.stride, 0, layer.dilation, layer.groups)
            back = (0,) + tuple(range(2, sd + 2)) + (1,)
            return y.permute(*back) + self.bias

    if not 1 <= len(layer.kernel_shape) <= 3:
        raise TypeError(f"the PyTorch module of {layer!r} needs 1 to 3 spatial axes (torch's conv1d/2d/3d)")
    return GeneralConvModule()


def conv_theory(layer, state, degree: int):
    """The rule of the module notes on a :class:`~meanfield.nets._state.State` (NTK term alike)."""
    from .. import dense
    from ._state import State, materialise

    sw, sb, shape = layer.sigma_w2, layer.sigma_b2, tuple(state.spatial)
    d, p_in = state.n_inputs, math.prod(shape)
    out_sp = layer.out_spatial(shape)
    p_out = math.prod(out_sp)
    if sw == 0.0 or layer.law == "zero":  # a zero kernel: the output is the bias, whatever the input
        s = np.full((d * p_out,) * 2, sb)
        return State(s, None, layer.channels, out_sp, d, True, ntk=None if state.ntk is None else s)
    maps = tap_maps(layer, shape)
    th = None
    if state.x is not None:
        flat = state.x.reshape(d * p_in, state.width)
        with np.errstate(over="ignore", invalid="ignore"):
            s = sw * gather(flat @ flat.T / state.width, maps, d, p_in) + sb
        if not np.all(np.isfinite(s)):
            raise ValueError("the input covariance exceeds the float64 range (rescale x)")
        th = s if state.ntk is not None else None
    elif state.act is not None and state.cross is None and state.gaussian:
        # z = phi(h) at the input's positions, z = 0 (not phi(0)) at the padded ones
        s = sw * gather(dense.covariance_map(state.second, state.act, 1.0, 0.0, degree), maps, d, p_in) + sb
        if state.ntk is not None:
            dot = dense.derivative_covariance_map(state.second, state.act, 1.0, degree)
            th = s + sw * gather(dot * state.ntk, maps, d, p_in)
    else:
        st = materialise(state, repr(layer), degree)
        s = sw * gather(st.second, maps, d, p_in) + sb
        th = None if st.ntk is None else s + sw * gather(st.ntk, maps, d, p_in)
    return State(s, None, layer.channels, out_sp, d, True, ntk=th)


def conv_backward(layer, state, g):
    """The derivative map: :func:`scatter` times ``sigma_w2 c_out / c_in`` (module notes)."""
    shape = tuple(state.spatial)
    factor = layer.sigma_w2 * (layer.channels / state.width)
    return factor * scatter(g, tap_maps(layer, shape), state.n_inputs, math.prod(shape)), None
