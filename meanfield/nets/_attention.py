r"""Self-attention at initialisation (see :mod:`meanfield.nets._layers`).

The positions of a signal are its tokens. One layer of ``heads`` heads of dimension
``d = width / heads``:

.. math::

    q = W_Q z,\; k = W_K z,\; v = W_V z, \qquad
    A_{\alpha\beta} = \mathrm{softmax}_\beta\big(q_\alpha \cdot k_\beta / d^{\,\tau}\big), \qquad
    y_\alpha = W_O \sum_\beta A_{\alpha\beta} v_\beta,

weights :math:`N(0, \sigma^2 / \text{fan-in})` (``sigma_qk2`` for ``W_Q``, ``W_K``; ``sigma_v2``,
``sigma_o2``). With the logits scaled ``1/d`` (``tau = 1``) the logit :math:`q\cdot k / d` is an
average of ``d`` products of independent zero-mean units and vanishes at infinite width: the
attention weights become uniform, :math:`A = 11^T/L`, and the layer is exactly a dense map of the
token mean (Hron, Bahri, Sohl-Dickstein & Novak 2020, the ``d^{-1}`` limit),

.. math::

    S'_{(a\alpha),(b\alpha')} = \sigma_o^2 \sigma_v^2\, \tfrac{1}{L^2}\sum_{\beta\beta'} S_{(a\beta),(b\beta')}.

Every token of one input then carries the same signal: the token correlation is 1 after one layer,
the infinite-width form of rank collapse (Dong, Cordonnier & Loukas 2021; Noci et al. 2022), and a
residual branch ``z + f(z)`` keeps it below 1 at every depth. With ``1/sqrt(d)`` (``tau = 1/2``)
the logits stay Gaussian at infinite width, jointly over inputs and tokens with
:math:`\mathrm{Cov}(\ell_{a\alpha\beta}, \ell_{b\alpha'\beta'}) = \sigma_{qk}^4 S_{(a\alpha),(b\alpha')} S_{(a\beta),(b\beta')}`
(Hron et al. 2020, the ``d^{-1/2}`` limit), and

.. math::

    S'_{(a\alpha),(b\alpha')} = \sigma_o^2\sigma_v^2 \sum_{\beta\beta'}
    \mathbb{E}\big[\mathrm{softmax}(\ell_{a\alpha})_\beta\, \mathrm{softmax}(\ell_{b\alpha'})_{\beta'}\big] S_{(a\beta),(b\beta')},

a Gaussian integral over the ``2 L`` logits of each pair, computed by randomised quasi-Monte-Carlo
(``meanfield.nets`` private ``_gauss``: 8 scrambled Sobol sets of 4,096 points; the replicas'
standard error, about 1e-4 of the moments' scale, is the stated error). The attention weights stay
random, so the output's covariance concentrates only over many heads: the rule is Hron et al.'s
limit of infinitely many heads (exact for the second moments at any number of heads; later layers
see an O(1/heads) mixture). Its derivative map is reported by name (the logits' gradient does not
vanish in this scaling).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from .. import init
from .._checks import check_int, check_nonnegative_scalar
from ..backend import matrix_transpose
from ._gauss import expectation
from ._layers import Layer, _channels_matmul, _not_described

__all__ = ["SCALINGS", "SelfAttention"]

#: Logit scalings: ``"1/d"`` (the uniform infinite-width limit) and ``"1/sqrt(d)"`` (Gaussian logits).
SCALINGS = ("1/d", "1/sqrt(d)")


def _softmax(x, xp):
    m = xp.max(x, axis=-1, keepdims=True)
    e = xp.exp(x - m)
    return e / xp.sum(e, axis=-1, keepdims=True)


@dataclass(frozen=True)
class SelfAttention(Layer):
    r"""Multi-head self-attention over the positions (tokens) of a signal, at initialisation.

    Parameters
    ----------
    width : int
        Width of the queries, keys, values and output (``heads * d``).
    heads : int
        Number of heads (dividing ``width``).
    sigma_qk2, sigma_v2, sigma_o2 : float
        Weight variances (times ``1/fan_in``) of ``W_Q`` and ``W_K``, ``W_V``, ``W_O``.
    scaling : {"1/d", "1/sqrt(d)"}
        The logits' scaling by the head dimension ``d`` (module notes).

    Notes
    -----
    Hron et al. 2020. Rule for ``"1/d"`` (exact at infinite width): uniform attention, the token
    mean of the input's moments times :math:`\sigma_o^2\sigma_v^2` (module notes); the output is
    Gaussian with independent units. Backward: :math:`\sigma_o^2\sigma_v^2 (n_{out}/n_{in})\,
    \bar A^T g \bar A` with :math:`\bar A = I_D \otimes 11^T/L` (the logits' derivative vanishes in
    the limit). ``"1/sqrt(d)"``: the Gaussian-logit integral of the module notes (infinitely many
    heads, quasi-Monte-Carlo error about 1e-4 relative); its derivative map and the NTK are
    reported by name. No biases (PyTorch's
    ``nn.MultiheadAttention`` initialises them to zero).
    """

    width: int
    heads: int = 1
    sigma_qk2: float = 1.0
    sigma_v2: float = 1.0
    sigma_o2: float = 1.0
    scaling: str = "1/d"
    random = True

    def __post_init__(self):
        object.__setattr__(self, "width", check_int(self.width, "width", 1, 2**16))
        object.__setattr__(self, "heads", check_int(self.heads, "heads", 1, self.width))
        if self.width % self.heads:
            raise ValueError(f"heads must divide width ({self.width}), got {self.heads}")
        for name in ("sigma_qk2", "sigma_v2", "sigma_o2"):
            object.__setattr__(self, name, check_nonnegative_scalar(getattr(self, name), name))
        if self.scaling not in SCALINGS:
            raise ValueError(f"scaling must be one of {SCALINGS}, got {self.scaling!r}")

    def out_shape(self, in_shape):
        if len(in_shape) < 2:
            raise ValueError(f"SelfAttention needs positions (tokens): a signal (*spatial, channels), got {in_shape}")
        return tuple(in_shape[:-1]) + (self.width,)

    def init(self, seq, in_shape, n, b):
        gen = b.generator(seq)
        c = in_shape[-1]
        out = {}
        for key, fan, s2 in (("q", c, self.sigma_qk2), ("k", c, self.sigma_qk2), ("v", c, self.sigma_v2)):
            out[key] = init.dense_weights(self.width, fan, s2, "gaussian", gen, batch_shape=n, backend=b)
        out["o"] = init.dense_weights(self.width, self.width, self.sigma_o2, "gaussian", gen, batch_shape=n, backend=b)
        return out

    def apply(self, params, x, b):
        xp = b.xp
        n, d_in = x.shape[0], x.shape[1]
        sp = tuple(x.shape[2:-1])
        tokens = xp.reshape(x, (n, d_in, math.prod(sp), x.shape[-1]))
        h, dh = self.heads, self.width // self.heads
        denom = float(dh) if self.scaling == "1/d" else math.sqrt(dh)

        def proj(key):
            y = _channels_matmul(tokens, params[key], xp)  # (n, D, L, width)
            y = xp.reshape(y, (n, d_in, tokens.shape[2], h, dh))
            return (
                xp.permute_dims(y, (0, 1, 3, 2, 4)) if hasattr(xp, "permute_dims") else xp.transpose(y, (0, 1, 3, 2, 4))
            )

        q, k, v = proj("q"), proj("k"), proj("v")  # (n, D, h, L, dh)
        att = _softmax(q @ matrix_transpose(xp, k) / denom, xp)
        y = att @ v
        y = xp.permute_dims(y, (0, 1, 3, 2, 4)) if hasattr(xp, "permute_dims") else xp.transpose(y, (0, 1, 3, 2, 4))
        y = xp.reshape(y, (n, d_in, tokens.shape[2], self.width))
        y = _channels_matmul(y, params["o"], xp)
        return xp.reshape(y, (n, d_in) + sp + (self.width,))

    def module(self, params, k):
        from ._torch import require_torch, tensor

        torch = require_torch()
        heads, width, scaling = self.heads, self.width, self.scaling

        class SelfAttentionModule(torch.nn.Module):
            """Multi-head self-attention over channels-last positions (float64)."""

            def __init__(self, wq, wk, wv, wo):
                super().__init__()
                self.wq, self.wk = torch.nn.Parameter(wq), torch.nn.Parameter(wk)
                self.wv, self.wo = torch.nn.Parameter(wv), torch.nn.Parameter(wo)

            def forward(self, x):
                b, sp = x.shape[0], x.shape[1:-1]
                t = x.reshape(b, -1, x.shape[-1])
                dh = width // heads
                denom = float(dh) if scaling == "1/d" else math.sqrt(dh)

                def proj(w):
                    return (t @ w.T).reshape(b, t.shape[1], heads, dh).transpose(1, 2)  # (b, h, L, dh)

                q, kk, v = proj(self.wq), proj(self.wk), proj(self.wv)
                att = torch.softmax(q @ kk.transpose(-1, -2) / denom, dim=-1)
                y = (att @ v).transpose(1, 2).reshape(b, t.shape[1], width) @ self.wo.T
                return y.reshape(b, *sp, width)

        return SelfAttentionModule(*(tensor(params[key], k) for key in ("q", "k", "v", "o")))

    def _mean_map(self, state):
        p = math.prod(state.spatial)
        return np.kron(np.eye(state.n_inputs), np.full((p, p), 1.0 / p))

    def _check(self, state, backward=False):
        if backward and self.scaling != "1/d":
            raise _not_described(
                self, "its derivative map with 1/sqrt(d) logits is not derived (the logits' gradient stays)"
            )
        if state.ntk is not None:
            raise _not_described(self, "its NTK term is not derived")

    def _gaussian_logits(self, st):
        """``E[A S A^T]`` over the Gaussian logits of the ``1/sqrt(d)`` limit (module notes), and its error."""
        d, p = st.n_inputs, math.prod(st.spatial)
        s4 = st.second.reshape(d, p, d, p)
        k = self.sigma_qk2**2
        n = d * p
        out, err = np.zeros((n, n)), 0.0
        for i in range(n):
            a, al = divmod(i, p)
            for j in range(i, n):
                b, be = divmod(j, p)
                cov = np.block(
                    [
                        [k * s4[a, al, a, al] * s4[a, :, a, :], k * s4[a, al, b, be] * s4[a, :, b, :]],
                        [k * s4[b, be, a, al] * s4[b, :, a, :], k * s4[b, be, b, be] * s4[b, :, b, :]],
                    ]
                )
                block = s4[a, :, b, :]

                def f(x, block=block):
                    pu, pv = _softmax(x[:, :p], np), _softmax(x[:, p:], np)
                    return np.einsum("nb,bc,nc->n", pu, block, pv)[:, None]

                m, e = expectation(cov, f)
                out[i, j] = out[j, i] = m[0]
                err = max(err, e)
        return out, err

    def theory(self, state, degree):
        self._check(state)
        st = self.materialise(state, degree)
        if self.scaling == "1/d":
            m = self._mean_map(st)
            s = self.sigma_o2 * self.sigma_v2 * (m @ st.second @ m.T)
        else:
            s = self.sigma_o2 * self.sigma_v2 * self._gaussian_logits(st)[0]
        return replace(st, second=s, cross=None, width=self.width, gaussian=True, mean=None, mean_known=True, ntk=None)

    def backward(self, state, g, gc, degree):
        self._check(state, backward=True)
        m = self._mean_map(state)
        return self.sigma_o2 * self.sigma_v2 * (self.width / state.width) * (m.T @ g @ m), None
