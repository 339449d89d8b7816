r"""Windowed pooling and flattening of the network language (see :mod:`meanfield.nets._layers`).

:class:`AvgPool` is a fixed linear map ``A`` of the positions (every window's mean), so its rule is
exact: :math:`S' = (I_D \otimes A)\, S\, (I_D \otimes A)^T`. :class:`MaxPool` has no closed form in
general; for windows of two positions it uses the exact moments of the maximum of two jointly
Gaussian variables, :math:`\max(X_1, X_2) = (s + |d|)/2` with :math:`s = X_1 + X_2`,
:math:`d = X_1 - X_2`: for zero-mean jointly Gaussian pairs :math:`\mathbb{E}[s\,|d'|] = 0` and
:math:`\mathbb{E}|d||d'| = \tfrac{2}{\pi}\sigma_d\sigma_{d'}(\sqrt{1-\rho^2} + \rho \arcsin\rho)`
(the arc-cosine kernel of degree 1 of ``|.|``; Cho & Saul 2009), so

.. math::

    \mathbb{E}\max(X)\max(Y) = \tfrac14\Big[\mathbb{E}\, s_X s_Y + \tfrac{2}{\pi}\sigma_{d_X}\sigma_{d_Y}
    \big(\sqrt{1-\rho^2} + \rho\arcsin\rho\big)\Big], \qquad \rho = \mathrm{corr}(d_X, d_Y).

On the raw input (before any random layer) these layers are applied to the data itself (exact).

Larger windows have no closed form: their moments are Gaussian integrals over the ``2 k`` pre-pool
values of each pair of outputs, computed by randomised quasi-Monte-Carlo with a stated error
(:class:`MaxPool`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from ..activations import get_activation
from ..backend import concat, get_backend
from ._data import on_data
from ._gauss import _normals, expectation
from ._layers import Layer, _name, _not_described, _per_axis, activation_fn
from ._state import State, map_positions, with_law

__all__ = ["AvgPool", "Flatten", "MaxPool"]


def _module(kind, **kw):
    from ._torch import require_torch

    torch = require_torch()

    class PoolModule(torch.nn.Module):
        """Average or max pooling over channels-last positions (PyTorch's padding: zeros or -inf; floor)."""

        def __init__(self, op, window, stride, padding=None, count_include_pad=True):
            super().__init__()
            self.op, self.window, self.stride = op, window, stride
            self.padding = padding or (0,) * len(window)
            self.count_include_pad = count_include_pad

        def _windows(self, x):
            if any(self.padding):
                pads = [0, 0]
                for p in reversed(self.padding):
                    pads += [p, p]
                x = torch.nn.functional.pad(x, pads, value=float("-inf") if self.op == "max" else 0.0)
            y = x
            for ax, (w, s) in enumerate(zip(self.window, self.stride)):
                y = y.unfold(1 + ax, w, s)  # windows appended as trailing axes
            return y

        def forward(self, x):
            y = self._windows(x)
            sd = len(self.window)
            dims = tuple(range(y.ndim - sd, y.ndim))
            if self.op == "max":
                return y.amax(dim=dims)
            if self.count_include_pad or not any(self.padding):
                return y.mean(dim=dims)
            count = self._windows(torch.ones_like(x[:1, ..., :1])).sum(dim=dims)
            return y.sum(dim=dims) / count

    class FlattenModule(torch.nn.Module):
        def forward(self, x):
            return x.reshape(x.shape[0], -1)

    return PoolModule(**kw) if kind == "pool" else FlattenModule()


@dataclass(frozen=True)
class _Window(Layer):
    window: tuple = (2,)
    stride: tuple | None = None
    padding: tuple | int = 0

    def __post_init__(self):
        n_axes = 1 if isinstance(self.window, (int, np.integer)) else None
        if n_axes is None:
            if not isinstance(self.window, (tuple, list, np.ndarray)):
                raise TypeError(f"window must be an int or a tuple of ints, got {self.window!r}")
            n_axes = len(self.window)
        if not n_axes:
            raise ValueError("window must be one or more sizes >= 1")
        w = _per_axis(self.window, n_axes, "window", 1)
        object.__setattr__(self, "window", w)
        s = w if self.stride is None else _per_axis(self.stride, len(w), "stride", 1)
        object.__setattr__(self, "stride", s)
        pad = _per_axis(self.padding, len(w), "padding", 0)
        if any(2 * p > k for p, k in zip(pad, w)):
            raise ValueError(f"padding must be at most half the window {w} (as PyTorch), got {pad}")
        object.__setattr__(self, "padding", pad)

    def __repr__(self):
        extra = f", padding={self.padding}" if any(self.padding) else ""
        if getattr(self, "count_include_pad", True) is False:
            extra += ", count_include_pad=False"
        if getattr(self, "act", None) is not None:
            extra += f", act={self.act!r}"
        return f"{_name(self)}(window={self.window}, stride={self.stride}{extra})"

    def _check(self, in_shape):
        sp = tuple(in_shape[:-1])
        if len(sp) != len(self.window):
            raise ValueError(
                f"{_name(self)} has a {len(self.window)}-D window but the signal has {len(sp)} spatial axes"
            )
        if any(n + 2 * p < w for n, w, p in zip(sp, self.window, self.padding)):
            raise ValueError(f"{_name(self)}: window {self.window} is larger than the signal's positions {sp}")
        return sp

    def out_shape(self, in_shape):
        sp = self._check(in_shape)
        return tuple((n + 2 * p - w) // s + 1 for n, w, s, p in zip(sp, self.window, self.stride, self.padding)) + (
            in_shape[-1],
        )

    def _windows(self, spatial):
        """(P_out, window size) flat input positions of every window, row-major; ``P_in`` where padded."""
        axes, valid = [], []
        for n, w, s, p in zip(spatial, self.window, self.stride, self.padding):
            starts = np.arange((n + 2 * p - w) // s + 1) * s - p
            pos = starts[:, None] + np.arange(w)[None, :]
            valid.append((pos >= 0) & (pos < n))
            axes.append(np.clip(pos, 0, n - 1))
        strides = np.cumprod((1,) + tuple(spatial[::-1]))[:-1][::-1]
        idx = np.zeros((1, 1), dtype=int)
        ok = np.ones((1, 1), dtype=bool)
        for ax, va, st in zip(axes, valid, strides):
            idx = (idx[:, None, :, None] + st * ax[None, :, None, :]).reshape(idx.shape[0] * ax.shape[0], -1)
            ok = (ok[:, None, :, None] & va[None, :, None, :]).reshape(idx.shape)
        return np.where(ok, idx, math.prod(spatial))

    def _matrix(self, spatial, n_inputs, column=None):
        """``I_D kron A``: A the (P_out, P_in) window mean (or one window column, ``column``); padded reads are zeros."""
        idx = self._windows(spatial)
        p_in = math.prod(spatial)
        a = np.zeros((idx.shape[0], p_in + 1))
        rows = np.arange(idx.shape[0])
        if column is None:
            if getattr(self, "count_include_pad", True):
                np.add.at(a, (rows[:, None], idx), 1.0 / idx.shape[1])
            else:
                count = np.sum(idx < p_in, axis=1, keepdims=True)
                np.add.at(a, (rows[:, None], idx), 1.0 / count)
        else:
            a[rows, idx[:, column]] = 1.0
        return np.kron(np.eye(n_inputs), a[:, :p_in])

    def apply(self, params, x, b):
        xp = b.xp
        sd = len(self.window)
        sp = tuple(x.shape[2 : 2 + sd])
        idx = self._windows(sp)
        lead = tuple(x.shape[:2])
        flat = xp.reshape(x, lead + (math.prod(sp), x.shape[-1]))
        padded = any(self.padding)
        if padded:  # the sentinel position P_in: zero (average) or -inf (max), as PyTorch pads
            fill = b.full(lead + (1, x.shape[-1]), -math.inf if self.op == "max" else 0.0)
            flat = concat(xp, [flat, fill], axis=2)
        parts = [flat[:, :, idx[:, k], :] for k in range(idx.shape[1])]
        out = parts[0]
        for p in parts[1:]:
            out = out + p if self.op == "avg" else xp.maximum(out, p)
        if self.op == "avg":
            if padded and not self.count_include_pad:
                count = np.sum(idx < math.prod(sp), axis=1).astype(float)
                out = out / b.asarray(count[:, None])
            else:
                out = out / len(parts)
        osp = self.out_shape(sp + (x.shape[-1],))[:-1]
        return xp.reshape(out, lead + osp + (x.shape[-1],))

    def module(self, params, k):
        return _module(
            "pool",
            op=self.op,
            window=self.window,
            stride=self.stride,
            padding=self.padding,
            count_include_pad=getattr(self, "count_include_pad", True),
        )


@dataclass(frozen=True, repr=False)
class AvgPool(_Window):
    r"""Average pooling over windows of positions (``torch.nn.AvgPool1d/2d/3d``, floor mode).

    Parameters
    ----------
    window : int or tuple of int
        Window size per spatial axis (an int: a 1-D signal).
    stride : int or tuple of int, optional
        Step per axis (default: the window, as PyTorch).
    padding : int or tuple of int
        Zero padding per axis (0 to half the window, as PyTorch); default 0.
    count_include_pad : bool
        Divide by the whole window (True, PyTorch's default) or by its unpadded positions.

    Notes
    -----
    Exact linear rule (module notes) for the moments, the different-unit moments, the means and the
    NTK; backward :math:`(I\otimes A)^T g\, (I\otimes A)`. Padded positions read ``z = 0`` (after a
    pending activation, which is applied first), so ``A`` is the window mean with those entries
    left out; the border positions then have other moments than the inner ones (exact, position by
    position). A Gaussian input stays Gaussian. Global pooling is :class:`meanfield.nets.Pool`.
    """

    count_include_pad: bool = True
    op = "avg"

    def __post_init__(self):
        super().__post_init__()
        if not isinstance(self.count_include_pad, (bool, np.bool_)):
            raise TypeError(f"count_include_pad must be a bool, got {self.count_include_pad!r}")

    def theory(self, state, degree):
        if state.x is not None and state.ntk is None:
            return on_data(self, state)
        st = self.materialise(state, degree)
        m = self._matrix(st.spatial, st.n_inputs)

        sp = self.out_shape(tuple(st.spatial) + (st.width,))[:-1]
        return map_positions(st, lambda x: m @ x @ m.T, sp, lambda mu: m @ mu)

    def backward(self, state, g, gc, degree):
        m = self._matrix(state.spatial, state.n_inputs)
        return m.T @ g @ m, (None if gc is None else m.T @ gc @ m)


@dataclass(frozen=True, repr=False)
class MaxPool(_Window):
    r"""Max pooling over windows of positions (``torch.nn.MaxPool1d/2d/3d``, floor mode).

    Parameters
    ----------
    window, stride : int or tuple of int
        As :class:`AvgPool`.
    padding : int or tuple of int
        Padding per axis by :math:`-\infty` (0 to half the window, as PyTorch): a border window is
        the maximum over its unpadded positions.
    act : str, optional
        An activation of :mod:`meanfield.activations` applied right before the pooling, fused into
        this layer (``MaxPool(3, 2, 1, act="relu")`` is ReLU then max pooling, ResNet's stem).

    Notes
    -----
    The rule needs a zero-mean Gaussian input of independent units (after a dense or convolutional
    layer), to which the fused activation ``phi`` (if any) is applied first. For windows
    of two positions without padding or activation (e.g. ``window=2`` in 1-D, ``(2, 1)`` in 2-D) it
    is exact: the bivariate maximum formula of the module notes; the units' mean
    :math:`\mathbb{E}\max = \sigma_d / \sqrt{2\pi}` and, between different units, its square.
    Backward: the gradient goes to the winning position, with
    :math:`P(d_X > 0, d_Y > 0) = \tfrac14 + \arcsin(\rho)/(2\pi)` (orthant probability). Larger
    windows, padding or a fused activation: :math:`\mathbb{E}\max_W\phi(h)\max_{W'}\phi(h')` and the
    routing probabilities by Gaussian integration over the pre-pool values of each pair of output
    windows (at most ``2 k``; randomised quasi-Monte-Carlo, 8 scrambled Sobol sets of 4,096 points:
    error about 1e-4 relative for the moments, about 1e-3 for the discontinuous routing
    probabilities; cost grows with the square of the outputs); the units stay independent, so the
    different-unit moment is the square of the mean, and the output of these cases carries its
    per-unit law (the window maxima of the Gaussian input), so that a later activation, e.g. after
    a residual sum, has a rule. A separate activation before the pooling, the
    derivative map with a fused activation and the NTK are reported by name.
    """

    op = "max"

    act: str | None = None

    def __post_init__(self):
        super().__post_init__()
        if self.act is not None:
            get_activation(self.act)  # validates the name

    def _check_state(self, state):
        if state.act is not None or state.x is not None or not state.gaussian or state.cross is not None:
            raise _not_described(
                self,
                "its rule needs a zero-mean Gaussian input of independent units (pool before the activation, "
                "or fuse the activation: MaxPool(..., act=...))",
            )
        if state.ntk is not None:
            raise _not_described(self, "its NTK term is not derived")

    def apply(self, params, x, b):
        if self.act is not None:
            x = activation_fn(get_activation(self.act), b)(x)
        return super().apply(params, x, b)

    def module(self, params, k):
        pool = super().module(params, k)
        if self.act is None:
            return pool
        from ._layers import Act
        from ._torch import require_torch

        return require_torch().nn.Sequential(Act(self.act).module({}, k), pool)

    def _integrated(self, state, g=None):
        """Windows of more than two positions, padding or a fused activation: the moments, or with ``g``
        the routed gradient, by Gaussian integration."""
        backward = g is not None
        self._check_state(state)
        if backward and self.act is not None:
            raise _not_described(self, "its derivative map with a fused activation is not derived")
        phi = (lambda x: x) if self.act is None else activation_fn(get_activation(self.act), get_backend("numpy"))
        idx = self._windows(state.spatial)
        p_in = math.prod(state.spatial)
        wins = [w[w < p_in] for w in idx]  # the unpadded positions of every window
        pos = [a * p_in + w for a in range(state.n_inputs) for w in wins]
        n = len(pos)
        s = state.second
        if not backward and (any(self.padding) or self.act is not None):
            return _batched_moments(s, pos, phi)
        out = np.zeros((s.shape[0],) * 2) if backward else np.zeros((n, n))
        mu = np.array(
            [expectation(s[np.ix_(w, w)], lambda x: np.max(phi(x), axis=1, keepdims=True))[0][0] for w in pos]
        )
        for u in range(n):
            k = pos[u].size
            for v in range(u, n):
                both = np.concatenate([pos[u], pos[v]])
                cov = s[np.ix_(both, both)]
                if not backward:
                    m, _ = expectation(
                        cov, lambda x, k=k: (np.max(phi(x[:, :k]), axis=1) * np.max(phi(x[:, k:]), axis=1))[:, None]
                    )
                    out[u, v] = out[v, u] = m[0]
                    continue

                def route(x, k=k):
                    a = np.eye(k)[np.argmax(x[:, :k], axis=1)]
                    b = np.eye(x.shape[1] - k)[np.argmax(x[:, k:], axis=1)]
                    return a[:, :, None] * b[:, None, :]

                r, _ = expectation(cov, route)
                block = g[u, v] * r
                out[np.ix_(pos[u], pos[v])] += block
                if v != u:
                    out[np.ix_(pos[v], pos[u])] += block.T
        return out, mu

    def _law(self, state):
        """The per-unit law of the output (:mod:`meanfield.nets._law`): the window maxima of ``phi(h)``."""
        from ._law import MaxLaw

        phi = (lambda x: x) if self.act is None else activation_fn(get_activation(self.act), get_backend("numpy"))
        idx = self._windows(state.spatial)
        p_in = math.prod(state.spatial)
        pos = tuple(a * p_in + w[w < p_in] for a in range(state.n_inputs) for w in idx)
        return MaxLaw(state.second, pos, phi)

    def _general(self, state):
        return math.prod(self.window) > 2 or any(self.padding) or self.act is not None

    def _parts(self, state):
        self._check_state(state)
        e1 = self._matrix(state.spatial, state.n_inputs, 0)
        e2 = self._matrix(state.spatial, state.n_inputs, 1)
        css = (e1 + e2) @ state.second @ (e1 + e2).T
        cdd = (e1 - e2) @ state.second @ (e1 - e2).T
        sd = np.sqrt(np.clip(np.diagonal(cdd), 0.0, None))
        den = np.outer(sd, sd)
        with np.errstate(divide="ignore", invalid="ignore"):
            rho = np.where(den > 0, cdd / np.where(den > 0, den, 1.0), 0.0)
        return e1, e2, css, den, np.clip(rho, -1.0, 1.0), sd

    def theory(self, state, degree):
        if state.x is not None and state.ntk is None:
            return on_data(self, state)
        sp = self.out_shape(tuple(state.spatial) + (state.width,))[:-1]
        if math.prod(self.window) == 1 and self.act is None:
            return state
        if self._general(state):
            s, mu = self._integrated(state)
            out = State(s, np.outer(mu, mu), state.width, sp, state.n_inputs, False, mean=mu)
            return with_law(out, self._law(state))
        _, _, css, den, rho, sd = self._parts(state)
        s = 0.25 * (css + (2.0 / math.pi) * den * (np.sqrt(1.0 - rho * rho) + rho * np.arcsin(rho)))
        mu = sd / math.sqrt(2.0 * math.pi)
        return State(
            s,
            np.outer(mu, mu) if np.any(mu) else None,
            state.width,
            sp,
            state.n_inputs,
            False,
            mean=mu if np.any(mu) else None,
        )

    def backward(self, state, g, gc, degree):
        if state.x is not None:
            raise _not_described(self, "its derivative map on the raw input is not derived (put it after a conv layer)")
        if math.prod(self.window) == 1:
            return g, gc
        if self._general(state):
            return self._integrated(state, g)[0], None
        e1, e2, _, _, rho, _ = self._parts(state)
        same = 0.25 + np.arcsin(rho) / (2.0 * math.pi)  # P(d_X > 0, d_Y > 0) = P(d_X < 0, d_Y < 0)
        other = 0.5 - same
        gs, go = g * same, g * other
        out = e1.T @ gs @ e1 + e2.T @ gs @ e2 + e1.T @ go @ e2 + e2.T @ go @ e1
        return out, None


#: Pairs of windows integrated at once by :func:`_batched_moments` (memory: this many x 8 x 4,096 x 2 k floats).
_CHUNK = 16


def _batched_moments(s, pos, phi):
    """``(E max_W phi(h) max_W' phi(h'), E max_W phi(h))`` for every pair of windows ``pos``, ``h ~ N(0, s)``.

    The estimate of :func:`meanfield.nets._gauss.expectation` (the same scrambled Sobol sets and
    square roots), computed for many windows of one size at once.
    """
    n = len(pos)

    def integrate(covs, f):
        lam, u = np.linalg.eigh(0.5 * (covs + np.swapaxes(covs, -1, -2)))
        roots = u * np.sqrt(np.clip(lam, 0.0, None))[:, None, :]
        z = _normals(covs.shape[-1])
        out = np.empty(covs.shape[0])
        for lo in range(0, covs.shape[0], _CHUNK):
            x = z[None] @ np.swapaxes(roots[lo : lo + _CHUNK], -1, -2)[:, None]  # (chunk, replicas, points, dim)
            out[lo : lo + _CHUNK] = f(x).mean(axis=-1).mean(axis=-1)
        return out

    mu = np.empty(n)
    by_size: dict = {}
    for u, w in enumerate(pos):
        by_size.setdefault(w.size, []).append(u)
    for units in by_size.values():
        covs = np.stack([s[np.ix_(pos[u], pos[u])] for u in units])
        mu[units] = integrate(covs, lambda x: np.max(phi(x), axis=-1))
    out = np.empty((n, n))
    pairs: dict = {}
    for u in range(n):
        for v in range(u, n):
            pairs.setdefault((pos[u].size, pos[v].size), []).append((u, v))
    for (k, _), uv in pairs.items():
        covs = np.stack([s[np.ix_(b, b)] for b in (np.concatenate([pos[u], pos[v]]) for u, v in uv)])
        m = integrate(covs, lambda x, k=k: np.max(phi(x[..., :k]), axis=-1) * np.max(phi(x[..., k:]), axis=-1))
        uu, vv = np.array(uv).T
        out[uu, vv] = m
        out[vv, uu] = m
    return out, mu


@dataclass(frozen=True)
class Flatten(Layer):
    r"""Flatten positions and channels into one feature axis, ``(*spatial, c) -> (P c,)`` (channels-last order).

    Notes
    -----
    The units of the flattened signal are the (position, channel) pairs; the per-unit state is
    their average, which is all a following dense layer needs (exact for it):
    :math:`S'_{ab} = \tfrac1P\sum_\alpha S_{(a\alpha),(b\alpha)}`; the different-unit moment is, at
    infinite width, the average :math:`\tfrac1{P^2}\sum_{\alpha\beta} C_{(a\alpha),(b\beta)}` (pairs
    of one channel are a vanishing fraction). The output is Gaussian when the input is and every
    position has the same moments (then an activation applies exactly); otherwise it is marked
    non-Gaussian. A model traced from PyTorch's channels-first layout flattens ``(c, *spatial)``:
    the same per-unit average. Backward: :math:`g \otimes I_P`.
    """

    def out_shape(self, in_shape):
        return (math.prod(in_shape),)

    def apply(self, params, x, b):
        return b.xp.reshape(x, tuple(x.shape[:2]) + (-1,))

    def module(self, params, k):
        return _module("flatten")

    def theory(self, state, degree):
        if state.x is not None and state.ntk is None:
            return on_data(self, state)
        st = self.materialise(state, degree)
        d, p = st.n_inputs, math.prod(st.spatial)
        if p == 1:
            return replace(st, spatial=())
        s4 = st.second.reshape(d, p, d, p)
        blocks = np.stack([s4[:, k, :, k] for k in range(p)])
        second = blocks.mean(axis=0)
        tol = 1e-12 * max(float(np.max(np.abs(second))), 1e-300)
        stationary = bool(np.max(np.abs(blocks - second)) <= tol)

        def avg(m):
            if m is None:
                return None
            m4 = m.reshape(d, p, d, p)
            return np.stack([m4[:, k, :, k] for k in range(p)]).mean(axis=0)

        return State(
            second,
            None if st.cross is None else st.cross.reshape(d, p, d, p).mean(axis=(1, 3)),
            st.width * p,
            (),
            d,
            st.gaussian and stationary,
            ntk=avg(st.ntk),
            ntk_cross=None if st.ntk_cross is None else st.ntk_cross.reshape(d, p, d, p).mean(axis=(1, 3)),
            mean=None if st.mean is None else st.mean.reshape(d, p).mean(axis=1),
            mean_known=st.mean_known,
        )

    def backward(self, state, g, gc, degree):
        p = math.prod(state.spatial)
        eye = np.eye(p)
        return np.kron(g, eye), (None if gc is None else np.kron(gc, eye))
