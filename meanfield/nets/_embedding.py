r"""Token and positional embeddings of the network language (see :mod:`meanfield.nets._layers`).

An embedding looks up Gaussian rows, :math:`y(a, \alpha) = E_{t(a,\alpha)} + P_\alpha` with
:math:`E_{ti} \sim N(0, \sigma^2)` and :math:`P_{\alpha i} \sim N(0, \sigma_p^2)` independent: the
output is a zero-mean Gaussian field of independent units whose covariance is fixed by the token
identities alone,

.. math::

    S_{(a\alpha),(b\beta)} = \sigma^2\, [t(a,\alpha) = t(b,\beta)] + \sigma_p^2\, [\alpha = \beta],

exact at every width for the moments (and Gaussian exactly, not only in the limit).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .._checks import check_int, check_nonnegative_scalar
from ._layers import Layer, _not_described
from ._state import State

__all__ = ["Embedding"]


@dataclass(frozen=True)
class Embedding(Layer):
    r"""Token embedding (``torch.nn.Embedding``) with an optional learned positional embedding.

    Parameters
    ----------
    vocab : int
        Number of tokens; the input holds token ids ``0 .. vocab - 1`` as its one channel,
        shape ``(D, *positions, 1)``.
    dim : int
        Embedding dimension (the output's channels).
    sigma2 : float
        Variance of the token rows (PyTorch's ``nn.Embedding`` draws ``N(0, 1)``).
    positional_sigma2 : float
        Variance of the positional rows, one per position (0: none).

    Notes
    -----
    Rule (module notes): :math:`\sigma^2[t = t'] + \sigma_p^2[\alpha = \beta]`, from the token ids
    of the raw input; an embedding must be the network's first layer (anything else is reported by
    name). The derivative map ends at the ids (zero: they are not differentiable).
    """

    vocab: int
    dim: int
    sigma2: float = 1.0
    positional_sigma2: float = 0.0
    random = True

    def __post_init__(self):
        object.__setattr__(self, "vocab", check_int(self.vocab, "vocab", 1, 2**24))
        object.__setattr__(self, "dim", check_int(self.dim, "dim", 1, 2**16))
        object.__setattr__(self, "sigma2", check_nonnegative_scalar(self.sigma2, "sigma2"))
        object.__setattr__(
            self, "positional_sigma2", check_nonnegative_scalar(self.positional_sigma2, "positional_sigma2")
        )

    def out_shape(self, in_shape):
        if in_shape[-1] != 1:
            raise ValueError(f"Embedding takes token ids as one channel, shape (*positions, 1), got {in_shape}")
        return tuple(in_shape[:-1]) + (self.dim,)

    def _ids(self, x):
        ids = np.asarray(x)
        r = np.rint(ids)
        if np.any(r != ids) or np.any(r < 0) or np.any(r >= self.vocab):
            raise ValueError(f"the token ids must be integers in [0, {self.vocab - 1}] (vocab)")
        return r.astype(np.int64)

    def init(self, seq, in_shape, n, b):
        gen = b.generator(seq)
        out = {"weight": math.sqrt(self.sigma2) * gen.standard_normal((n, self.vocab, self.dim))}
        if self.positional_sigma2 > 0:
            p = math.prod(in_shape[:-1])
            out["position"] = math.sqrt(self.positional_sigma2) * gen.standard_normal((n, p, self.dim))
        return out

    def apply(self, params, x, b):
        from ..backend import to_numpy

        xp = b.xp
        ids = self._ids(to_numpy(x[0, ..., 0]))  # the same ids in every network: (D, *positions)
        w = params["weight"]
        flat = xp.asarray(ids.ravel())
        y = xp.stack([w[k][flat] for k in range(w.shape[0])])
        y = xp.reshape(y, (w.shape[0],) + ids.shape + (self.dim,))
        if "position" in params:
            pos = params["position"]
            y = y + xp.reshape(pos, (pos.shape[0], 1) + ids.shape[1:] + (self.dim,))
        return y

    def module(self, params, k):
        from ._torch import require_torch, tensor

        torch = require_torch()
        pos = tensor(params["position"], k) if "position" in params else None

        class EmbeddingModule(torch.nn.Module):
            """Rows of a table for the ids in the last (single) channel, plus positional rows."""

            def __init__(self, weight, position):
                super().__init__()
                self.weight = torch.nn.Parameter(weight)
                self.position = None if position is None else torch.nn.Parameter(position)

            def forward(self, x):
                ids = x[..., 0].round().long()
                y = self.weight[ids]
                if self.position is not None:
                    y = y + self.position.reshape(*ids.shape[1:], -1)
                return y

        return EmbeddingModule(tensor(params["weight"], k), pos)

    def theory(self, state, degree):
        if state.x is None:
            raise _not_described(self, "an embedding reads token ids: it must be the network's first layer")
        if state.ntk is not None:
            raise _not_described(self, "its NTK term is not derived")
        ids = self._ids(state.x).reshape(-1)
        d, p = state.n_inputs, ids.size // state.n_inputs
        s = self.sigma2 * (ids[:, None] == ids[None, :])
        if self.positional_sigma2 > 0:
            pos = np.tile(np.arange(p), d)
            s = s + self.positional_sigma2 * (pos[:, None] == pos[None, :])
        return State(s.astype(float), None, self.dim, state.spatial, d, True)

    def backward(self, state, g, gc, degree):
        n = state.n_inputs * math.prod(state.spatial)
        return np.zeros((n, n)), None
