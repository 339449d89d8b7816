r"""Feature concatenation of branches (see :mod:`meanfield.nets._layers` and :class:`meanfield.nets.Residual`).

:class:`Concat` applies ``K`` branches (each a tuple of layers, the empty tuple the identity) to the
same input and concatenates their channels, :math:`y = [f_1(z), \dots, f_K(z)]` (DenseNet's and
Inception's blocks). With widths :math:`n_k`, :math:`N = \sum_k n_k`, the per-unit state of ``y`` is
the average over its units:

.. math::

    S' = \sum_k \frac{n_k}{N} S_k, \qquad
    C' = \frac{\sum_k n_k (n_k - 1) C_k + \sum_{k \ne l} n_k n_l\, \mu_k \mu_l^T}{N (N - 1)},

the different-branch units decoupled as in :class:`meanfield.nets.Residual` (fresh weights in the
limit: :math:`\mathbb{E} f_{k,i} f_{l,j} = \mu_k \mu_l^T`, zero when either mean is zero).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._layers import Layer, _name, _not_described
from ._projection import backward_through
from ._state import State, materialise

__all__ = ["Concat"]


@dataclass(frozen=True)
class Concat(Layer):
    r"""Concatenate the channels of branches applied to the same input, :math:`y = [f_1(z), \dots, f_K(z)]`.

    Parameters
    ----------
    branches : sequence of sequences of layers
        Two or more branches; ``()`` is the identity (``Concat(((), (Dense(n), Act("relu"))))``
        is a DenseNet block).

    Notes
    -----
    Rule (module notes): the width-weighted average of the branches' moments, exact for what a
    following dense or convolutional layer needs. The output is Gaussian when every branch's is
    and all have the same moments (then an activation applies exactly); otherwise non-Gaussian.
    Backward: every branch receives the output's gradient moments, and their input gradients add
    (independent output units). The NTK and branches of unknown mean are reported by name.
    """

    branches: tuple
    random = True

    def __post_init__(self):
        branches = tuple(tuple(b) for b in self.branches)
        if len(branches) < 2:
            raise ValueError(f"branches must hold two or more branches, got {len(branches)}")
        if not all(isinstance(layer, Layer) for b in branches for layer in b):
            raise TypeError("every branch must be a sequence of layers of meanfield.nets")
        object.__setattr__(self, "branches", branches)

    def _shapes(self, in_shape):
        out = []
        for branch in self.branches:
            shape = tuple(in_shape)
            for layer in branch:
                shape = tuple(layer.out_shape(shape))
            out.append(shape)
        return out

    def out_shape(self, in_shape):
        shapes = self._shapes(in_shape)
        if len({s[:-1] for s in shapes}) != 1:
            raise ValueError(f"{_name(self)}: the branches give different positions {[s[:-1] for s in shapes]}")
        return shapes[0][:-1] + (sum(s[-1] for s in shapes),)

    def init(self, seq, in_shape, n, b):
        kids = seq.spawn(len(self.branches))
        params = []
        for branch, kid in zip(self.branches, kids):
            shape, ps = tuple(in_shape), []
            seqs = kid.spawn(len(branch))
            for layer, s in zip(branch, seqs):
                ps.append(layer.init(s if layer.random else None, shape, n, b))
                shape = layer.out_shape(shape)
            params.append(ps)
        return {"branches": params}

    def apply(self, params, x, b):
        outs = []
        for branch, ps in zip(self.branches, params["branches"]):
            y = x
            for layer, p in zip(branch, ps):
                y = layer.apply(p, y, b)
            outs.append(y)
        return b.xp.concat(outs, axis=-1) if hasattr(b.xp, "concat") else b.xp.concatenate(outs, axis=-1)

    def module(self, params, k):
        from ._torch import require_torch

        torch = require_torch()
        mods = [
            torch.nn.Sequential(*(layer.module(p, k) for layer, p in zip(br, ps)))
            for br, ps in zip(self.branches, params["branches"])
        ]

        class ConcatModule(torch.nn.Module):
            def __init__(self, branches):
                super().__init__()
                self.branches = torch.nn.ModuleList(branches)

            def forward(self, x):
                return torch.cat([m(x) for m in self.branches], dim=-1)

        return ConcatModule(mods)

    def _run(self, state, degree):
        outs = []
        for branch in self.branches:
            st = state
            for layer in branch:
                st = layer.theory(st, degree)
            outs.append(materialise(st, repr(self), degree))
        return outs

    def theory(self, state, degree):
        if state.ntk is not None:
            raise _not_described(self, "its NTK term is not derived")
        outs = self._run(state, degree)
        widths = np.array([o.width for o in outs], dtype=float)
        total = float(widths.sum())
        second = sum(w * o.second for w, o in zip(widths, outs)) / total
        n = second.shape[0]
        if not all(o.mean_known for o in outs):
            raise _not_described(self, "the cross-branch moments need the branches' means, not all determined")
        mus = [np.zeros(n) if o.mean is None else o.mean for o in outs]
        cross = np.zeros_like(second)
        for k, o in enumerate(outs):
            if o.cross is not None:
                cross += widths[k] * (widths[k] - 1) * o.cross
            for j in range(len(outs)):
                if j != k:
                    cross += widths[k] * widths[j] * np.outer(mus[k], mus[j])
        cross /= total * (total - 1)
        mean = sum(w * m for w, m in zip(widths, mus)) / total
        tol = 1e-12 * max(float(np.max(np.abs(second))), 1e-300)
        same = all(np.max(np.abs(o.second - second)) <= tol for o in outs)
        gaussian = all(o.gaussian for o in outs) and same and not np.any(cross)
        return State(
            second,
            cross if np.any(cross) else None,
            int(total),
            outs[0].spatial,
            state.n_inputs,
            gaussian,
            mean=mean if np.any(mean) else None,
            mean_known=True,
        )

    def backward(self, state, g, gc, degree):
        total_g, total_gc = None, None
        for branch in self.branches:
            bg, bgc = backward_through(branch, state, g, gc, degree)
            total_g = bg if total_g is None else total_g + bg
            if bgc is not None:
                total_gc = bgc if total_gc is None else total_gc + bgc
        return total_g, total_gc
