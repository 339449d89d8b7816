r"""Residual blocks whose skip is itself a sequence of layers (a projection skip; private, see :class:`meanfield.nets.Residual`).

ResNet's downsampling block is :math:`y = P(z) + s\,f(z)` with the skip path ``P`` a strided
1x1 convolution and a batch normalisation. Per unit ``i`` the second moments of the sum are those
of the two paths plus the cross term :math:`\mathbb{E}[P_i(z)\, s f_i(z)]`. When one of the two
paths *ends fresh* -- its last dense or convolutional layer is followed only by unit-wise layers
(activations, batch normalisation, dropout, pooling over positions) -- unit ``i`` of that path is a
function of its own weight row, independent of everything the other path computes in the
infinite-width limit, so the cross term factorises into the two paths' means,
:math:`\mathbb{E}P_i\,\mathbb{E}\,s f_i`: zero when either mean is zero (e.g. a zero-mean
convolution then an evaluation-mode batch normalisation without shift). When neither path ends
fresh the cross term is not determined by the per-unit state and the theory refuses the block,
naming it. The sum is Gaussian when both paths are Gaussian (then independent). The NTK and the
gradient moments add alike (the cross terms carry a zero-mean weight of the fresh path).
"""

from __future__ import annotations

import numpy as np

from ._layers import Act, Conv, Dense, Layer, Pool, Subsample, _not_described
from ._state import State, add, materialise, scale

__all__: list[str] = []


def _unit_wise() -> tuple:
    from ._norms import BatchNorm, Dropout
    from ._pooling import AvgPool, MaxPool

    return (Act, BatchNorm, Dropout, AvgPool, MaxPool, Pool, Subsample)


def ends_fresh(path: tuple) -> bool:
    """Whether the last dense or convolutional layer of ``path`` is followed only by unit-wise layers."""
    unit_wise = _unit_wise()
    for layer in reversed(path):
        if isinstance(layer, (Dense, Conv)):
            return layer.sigma_w2 > 0 and layer.law != "zero"
        if not isinstance(layer, unit_wise):
            return False
    return False


def check_path(path) -> tuple:
    path = tuple(path)
    if not path or not all(isinstance(layer, Layer) for layer in path):
        raise TypeError("a skip path must be a non-empty sequence of layers of meanfield.nets")
    return path


def run(path, state, degree):
    out = state
    for layer in path:
        out = layer.theory(out, degree)
    return out


def mean_cross_term(block, sk: State, out: State, mu_skip, mu_f, why: str) -> np.ndarray | None:
    r"""The cross term :math:`\mu_P \mu_f^T + \mu_f \mu_P^T` of a sum of two paths whose units decouple.

    ``sk`` and ``out`` are the states of the two paths (the skip and the scaled branch), ``mu_skip``
    and ``mu_f`` their per-unit means (None: zero or not known, as ``State.mean``). None when either
    mean is known to be zero (no cross term); ``ValueError`` (:func:`_not_described` with ``why``) when
    it is needed and a mean is not known.
    """
    if (mu_skip is None and sk.mean_known) or (mu_f is None and out.mean_known):
        return None
    if not (sk.mean_known and out.mean_known):
        raise _not_described(block, why)
    return np.outer(mu_skip, mu_f) + np.outer(mu_f, mu_skip)


def path_theory(block, state: State, degree: int) -> State:
    """The rule of the module notes for ``block`` (a :class:`~meanfield.nets.Residual` with a skip path)."""
    st = materialise(state, repr(block), degree) if state.x is not None else state
    if not (ends_fresh(block.skip) or ends_fresh(block.branch)):
        raise _not_described(
            block,
            "neither the skip path nor the branch ends with fresh zero-mean weights (a dense or convolutional "
            "layer followed only by unit-wise layers), so the cross term of the two paths is not determined",
        )
    sk = materialise(run(block.skip, st, degree), repr(block), degree)
    out = materialise(run(block.branch, st, degree), repr(block), degree)
    if sk.width != out.width or tuple(sk.spatial) != tuple(out.spatial):
        raise ValueError(f"{block!r}: the skip path and the branch give different shapes")
    s2 = block.scale * block.scale
    mu_skip, mu_f = sk.mean, scale(out.mean, block.scale)
    s, c = sk.second + s2 * out.second, add(sk.cross, scale(out.cross, s2))
    t = mean_cross_term(
        block,
        sk,
        out,
        mu_skip,
        mu_f,
        "the cross term E[P_i(z)] E[f_i(z)] needs the means of both paths, and one is not determined",
    )
    if t is not None:
        s, c = s + t, add(c, t)
    th = thc = None
    if st.ntk is not None:
        th = sk.ntk + s2 * out.ntk
        thc = add(sk.ntk_cross, scale(out.ntk_cross, s2))
    return State(
        s,
        c,
        out.width,
        out.spatial,
        st.n_inputs,
        sk.gaussian and out.gaussian,
        ntk=th,
        ntk_cross=thc,
        mean=add(mu_skip, mu_f),
        mean_known=sk.mean_known and out.mean_known,
    )


def backward_through(path, state, g, gc, degree):
    """The gradient moments at the input of a sequence of layers, from those at its output.

    Parameters
    ----------
    path : tuple of Layer
        The layers, in execution order (the empty tuple is the identity).
    state : State
        The per-unit state at the input of ``path``.
    g, gc : ndarray or None
        The gradient moments at the output of ``path`` (``gc`` the cross-unit part, or ``None``).
    degree : int
        Quadrature degree of the layers' rules.

    Returns
    -------
    (g, gc)
        The moments at the input: the theory is run forward through ``path`` for every layer's
        input state, then each layer's ``backward`` is applied from the last layer to the first.
    """
    states = [state]
    for layer in path:
        states.append(layer.theory(states[-1], degree))
    for layer, st in zip(reversed(path), reversed(states[:-1])):
        g, gc = layer.backward(st, g, gc, degree)
    return g, gc


def path_backward(block, state, g, gc, degree):
    """The gradient moments at the block's input: the skip path's plus ``s^2`` times the branch's."""
    s2 = block.scale * block.scale
    bg, bgc = backward_through(block.branch, state, g, gc, degree)
    sg, sgc = backward_through(block.skip, state, g, gc, degree)
    return sg + s2 * bg, add(sgc, scale(bgc, s2))


def path_init(path, seq, in_shape, n, b) -> list:
    kids = seq.spawn(len(path))
    shape, params = tuple(in_shape), []
    for layer, kid in zip(path, kids):
        params.append(layer.init(kid if layer.random else None, shape, n, b))
        shape = layer.out_shape(shape)
    return params


def path_apply(path, params, x, b):
    for layer, p in zip(path, params):
        x = layer.apply(p, x, b)
    return x


def path_out_shape(path, in_shape) -> tuple:
    shape = tuple(in_shape)
    for layer in path:
        shape = layer.out_shape(shape)
    return shape


def path_module(block, params, k):
    """``skip(x) + scale * branch(x)`` with both paths modules."""
    from ._torch import require_torch

    torch = require_torch()

    class ProjectionResidualModule(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.branch = torch.nn.Sequential(*(lay.module(p, k) for lay, p in zip(block.branch, params["branch"])))
            self.skip = torch.nn.Sequential(*(lay.module(p, k) for lay, p in zip(block.skip, params["skip"])))
            self.scale = block.scale

        def forward(self, x):
            y = self.branch(x)
            return self.skip(x) + (y if self.scale == 1.0 else self.scale * y)

    return ProjectionResidualModule()
