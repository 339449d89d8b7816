"""Skip connections and looks-linear layers of the network language (see :mod:`meanfield.nets._layers`)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .. import dense, init
from .._checks import check_int, check_nonnegative_scalar, check_scalar
from ..activations import get_activation
from ._layers import Conv, Dense, Layer, _bias, _bias_add, _channels_matmul, _gen, _name, _not_described
from ._projection import (
    backward_through,
    check_path,
    ends_fresh,
    mean_cross_term,
    path_apply,
    path_backward,
    path_init,
    path_module,
    path_out_shape,
    path_theory,
)
from ._state import (
    ChannelMoments,
    State,
    activation_mean,
    add,
    gaussian_law,
    identity_moments,
    materialise,
    scale,
    with_law,
)

__all__ = ["HyperResidual", "LooksLinear", "Residual"]


# ----------------------------------------------------------------------------------------------
# Skip connections.


@dataclass(frozen=True)
class Residual(Layer):
    r"""Residual block :math:`y = Q z + s\,f(z)`: a skip matrix ``Q`` and a branch ``f`` (a tuple of layers) scaled by ``s``.

    ``skip``: ``"identity"`` (default), ``None`` (no skip), a fixed ``(n_out, n_in)`` matrix (the same in
    every network; e.g. :func:`meanfield.landscape.folded_orthogonal`, Orhan 2017 Sec. 2.4.2), or a
    callable ``f(rng) -> matrix`` drawn per network (the sampler only). Rule: the skip's exact
    channel moments plus ``s^2`` times the branch's plus the cross term
    :math:`\mathbb{E}[(Qz)_i\, s f_i(z)] = (Q1)_i\,\mathbb{E}z\,\mathbb{E}\,s f` (the branch's fresh weights
    decouple ``f_i`` from ``z`` in the limit; zero when the branch ends with a dense or convolutional
    layer or ``z`` has zero mean; skip matrices of unequal row sums enter through their averages over
    units); the output is Gaussian when ``z`` is and the branch ends with a dense or convolutional layer.

    ``skip`` may also be a tuple of layers, a projection path ``P`` (ResNet's downsampling: a strided
    1x1 :class:`Conv` and a :class:`BatchNorm`): :math:`y = P(z) + s f(z)`, described when one of the
    two paths ends with fresh zero-mean weights (a dense or convolutional layer followed only by
    unit-wise layers); then the cross term is the product of the paths' means (zero when either is
    zero), and otherwise the theory reports the block.

    With an identity skip, a non-Gaussian ``z`` of known per-unit law (after a max pooling, an
    activation, another such block) and a branch ending with fresh zero-mean weights, the sum's
    per-unit law is that of ``z`` plus an independent Gaussian of the branch's moments: an
    activation after the block (post-activation ResNets) then integrates over it exactly, up to the
    quasi-Monte-Carlo error of the integrals (about 1e-4 to 1e-3 relative).
    """

    branch: tuple
    skip: Any = "identity"
    scale: float = 1.0
    random = True

    def __post_init__(self):
        object.__setattr__(self, "branch", tuple(self.branch))
        if not all(isinstance(layer, Layer) for layer in self.branch):
            raise TypeError("branch must be a sequence of layers of meanfield.nets")
        object.__setattr__(self, "scale", check_scalar(self.scale, "scale"))
        if isinstance(self.skip, (tuple, list)) and any(isinstance(x, Layer) for x in self.skip):
            object.__setattr__(self, "skip", check_path(self.skip))
            return
        if isinstance(self.skip, str) and self.skip != "identity":
            raise ValueError(f"skip must be 'identity', None, a matrix or a callable, got {self.skip!r}")
        if not (self.skip is None or isinstance(self.skip, str) or callable(self.skip)):
            m = np.array(self.skip, dtype=float)
            if m.ndim != 2 or not np.all(np.isfinite(m)):
                raise ValueError(f"skip must be a finite (n_out, n_in) matrix, got shape {m.shape}")
            m.setflags(write=False)
            object.__setattr__(self, "skip", m)

    def __hash__(self):
        s = self.skip.tobytes() if isinstance(self.skip, np.ndarray) else self.skip
        return hash((self.branch, s, self.scale))

    def __repr__(self):
        s = f"matrix {self.skip.shape}" if isinstance(self.skip, np.ndarray) else repr(self.skip)
        return f"Residual(branch={self.branch!r}, skip={s}, scale={self.scale})"

    @property
    def _path(self) -> bool:
        return isinstance(self.skip, tuple)

    def out_shape(self, in_shape):
        shape = tuple(in_shape)
        for layer in self.branch:
            shape = layer.out_shape(shape)
        if self._path:
            skip = path_out_shape(self.skip, in_shape)
            if skip != shape:
                raise ValueError(f"{_name(self)}: the branch gives shape {shape}, the skip path {skip}")
            return shape
        n_skip = self._skip_shape(in_shape[-1])
        if n_skip is not None and (shape[:-1] != tuple(in_shape[:-1]) or shape[-1] != n_skip[0]):
            raise ValueError(
                f"{_name(self)}: the branch gives shape {shape}, the skip {tuple(in_shape[:-1]) + (n_skip[0],)}"
            )
        return shape

    def _skip_shape(self, n_in):
        if self.skip is None:
            return None
        if isinstance(self.skip, np.ndarray):
            if self.skip.shape[1] != n_in:
                raise ValueError(f"skip has {self.skip.shape[1]} columns but the signal has {n_in} channels")
            return self.skip.shape
        return (n_in, n_in)

    def init(self, seq, in_shape, n, b):
        kids = seq.spawn(len(self.branch) + 1)
        shape, params = tuple(in_shape), []
        for layer, kid in zip(self.branch, kids):
            params.append(layer.init(kid if layer.random else None, shape, n, b))
            shape = layer.out_shape(shape)
        out = {"branch": params}
        if self._path:
            out["skip"] = path_init(self.skip, kids[-1], in_shape, n, b)
        elif callable(self.skip):
            gen = np.random.default_rng(kids[-1])
            out["skip"] = b.asarray(np.stack([np.asarray(self.skip(g), dtype=float) for g in gen.spawn(n)]))
        elif isinstance(self.skip, np.ndarray):
            out["skip"] = b.asarray(self.skip)
        return out

    def apply(self, params, x, b):
        y = x
        for layer, p in zip(self.branch, params["branch"]):
            y = layer.apply(p, y, b)
        if self.scale != 1.0:
            y = self.scale * y
        if self.skip is None:
            return y
        if self._path:
            return path_apply(self.skip, params["skip"], x, b) + y
        if "skip" in params:
            return _channels_matmul(x, params["skip"], b.xp) + y
        return x + y

    def module(self, params, k):
        from ._torch import module_class, tensor

        if self._path:
            return path_module(self, params, k)
        branch = [layer.module(p, k) for layer, p in zip(self.branch, params["branch"])]
        skip = self.skip
        if "skip" in params:
            skip = tensor(params["skip"], k if callable(self.skip) else None)
        return module_class("Residual")(branch, skip, self.scale)

    def _moments(self, n_in):
        if isinstance(self.skip, np.ndarray):
            return ChannelMoments.of(self.skip)
        if self.skip == "identity":
            return identity_moments(n_in)
        raise _not_described(self, "the theory needs a fixed skip matrix (pass the matrix, not a callable)")

    def _ends_linear(self):
        return bool(self.branch) and isinstance(self.branch[-1], (Dense, Conv))

    def theory(self, state, degree):
        if self._path:
            return path_theory(self, state, degree)
        st = materialise(state, repr(self), degree) if state.x is not None else state
        out = st
        for layer in self.branch:
            out = layer.theory(out, degree)
        out = materialise(out, repr(self), degree)
        s2 = self.scale * self.scale
        if self.skip is None:
            return replace(
                out,
                second=s2 * out.second,
                cross=scale(out.cross, s2),
                ntk=scale(out.ntk, s2),
                ntk_cross=scale(out.ntk_cross, s2),
                mean=scale(out.mean, self.scale),
            )
        sk = materialise(st, repr(self), degree)
        m = self._moments(st.width)
        s, c = m.apply(sk.second, sk.cross)
        mu_skip, mu_f = m.apply_mean(sk.mean), scale(out.mean, self.scale)
        # the cross term E[(Q z)_i s f_i(z)] = (Q 1)_i E z E s f (the branch's fresh weights decouple
        # f_i from z in the limit): zero when either mean is zero
        t = mean_cross_term(
            self,
            sk,
            out,
            mu_skip,
            mu_f,
            "the cross term E[(Q z)_i f_i(z)] needs the means of z and of the branch, and one of them is "
            "not determined (an activation whose mean's sign is not known, or correlated units)",
        )
        if t is not None:
            s, c = s + t, add(c, t)
        th = thc = None
        if sk.ntk is not None:
            th, thc = m.apply(sk.ntk, sk.ntk_cross)
            th, thc = th + s2 * out.ntk, add(thc, scale(out.ntk_cross, s2))
        gaussian = st.gaussian and st.act is None and self._ends_linear()
        result = State(
            s + s2 * out.second,
            add(c, scale(out.cross, s2)),
            m.n_out,
            st.spatial,
            st.n_inputs,
            gaussian,
            ntk=th,
            ntk_cross=thc,
            mean=add(mu_skip, mu_f),
            mean_known=sk.mean_known and out.mean_known,
        )
        return self._with_sum_law(result, sk, out, s2)

    def _with_sum_law(self, result, sk, out, s2):
        """A non-Gaussian sum ``z + s f`` of an identity skip: the law of ``z`` plus the branch's independent
        zero-mean Gaussian (its fresh weights), so that an activation after the block has a rule."""
        if result.gaussian or not (isinstance(self.skip, str) and self.skip == "identity") or result.ntk is not None:
            return result
        if not (
            out.gaussian and out.act is None and out.cross is None and out.mean is None and ends_fresh(self.branch)
        ):
            return result
        z = gaussian_law(sk)
        if z is None:
            return result
        from ._law import GaussLaw, SumLaw

        return with_law(result, SumLaw(z, GaussLaw(s2 * out.second)))

    def backward(self, state, g, gc, degree):
        if self._path:
            return path_backward(self, state, g, gc, degree)
        bg, bgc = backward_through(self.branch, state, g, gc, degree)
        s2 = self.scale * self.scale
        bg, bgc = s2 * bg, scale(bgc, s2)
        if self.skip is None:
            return bg, bgc
        sg, sgc = self._moments(state.width).transpose.apply(g, gc)
        return sg + bg, add(sgc, bgc)


@dataclass(frozen=True)
class HyperResidual(Layer):
    r"""Orhan's hyper-residual stack (Orhan 2017, eq. 26): ``depth`` layers
    :math:`x_{l+1} = \mathrm{relu}(W_l x_l + b_l) + Q_l x_l + [P_{l-1}x_{l-1} + \dots + P_1 x_1]/(l-1)`.

    ``skips`` / ``long_skips``: None (identities; ``long_skips`` defaults to ``skips``, as printed) or
    callables ``f(rng) -> (n, n)`` drawn per layer and network.

    Rule (identity skips): the long skips correlate the layers, so the rule carries the same-unit
    moments between every pair of layers, :math:`M_{jk} = \mathbb{E}\,x_{j,i} x_{k,i}`, and the means:
    with :math:`x_{l+1} = f_l + \sum_k a_k x_k` (:math:`a_l = 1`, :math:`a_k = 1/(l-1)` for
    :math:`k < l`), :math:`M_{l+1,l+1} = \mathbb{E} f_l f_l + \sum_{jk} a_j a_k M_{jk} + \sum_k a_k
    (\mu_f\mu_k^T + \mu_k\mu_f^T)` and :math:`M_{l+1,k} = \mu_f \mu_k^T + \sum_j a_j M_{jk}` (the branch's
    fresh weights decouple :math:`f_l` from the history in the limit). Skip matrices drawn per
    network, the NTK and the derivative map are reported by name.
    """

    depth: int
    sigma_w2: float = 2.0
    sigma_b2: float = 0.0
    skips: Any = None
    long_skips: Any = None
    random = True

    def __post_init__(self):
        object.__setattr__(self, "depth", check_int(self.depth, "depth", 1, 10**4))
        object.__setattr__(self, "sigma_w2", check_nonnegative_scalar(self.sigma_w2, "sigma_w2"))
        object.__setattr__(self, "sigma_b2", check_nonnegative_scalar(self.sigma_b2, "sigma_b2"))

    def theory(self, state, degree):
        if self.skips is not None or self.long_skips is not None:
            raise _not_described(
                self, "its theory takes identity skips (skips drawn per network have no fixed moments)"
            )
        if state.ntk is not None:
            raise _not_described(self, "its NTK term is not derived")
        st = materialise(state, repr(self), degree)
        if not st.mean_known:
            raise _not_described(self, "the cross terms need the mean of its input, which is not determined")
        zero = np.zeros(st.second.shape[0])
        mus = [zero if st.mean is None else st.mean]
        moments = {(0, 0): st.second}
        sw, sb = self.sigma_w2, self.sigma_b2
        for idx in range(self.depth):
            h = sw * moments[(idx, idx)] + sb  # the branch's Gaussian pre-activation
            s_f = dense.covariance_map(h, "relu", 1.0, 0.0, degree)
            mu_f, _ = activation_mean(get_activation("relu"), h, degree)
            a = {idx: 1.0}
            if idx >= 1:
                a.update({k: 1.0 / idx for k in range(idx)})
            new = idx + 1
            for k in range(new):  # M[new, k] = mu_f mu_k^T + sum_j a_j M[j, k]
                m = np.outer(mu_f, mus[k]) + sum(w * _pair(moments, j, k) for j, w in a.items())
                moments[(new, k)] = m
            skip_mean = sum(w * mus[k] for k, w in a.items())
            moments[(new, new)] = (
                s_f
                + sum(w * moments[(new, k)] for k, w in a.items())  # E x_new skip^T
                + np.outer(skip_mean, mu_f)  # E skip f^T
            )
            mus.append(mu_f + skip_mean)
        mu = mus[-1]
        return State(
            moments[(self.depth, self.depth)],
            np.outer(mu, mu) if np.any(mu) else None,
            st.width,
            st.spatial,
            st.n_inputs,
            False,
            mean=mu if np.any(mu) else None,
        )

    def init(self, seq, in_shape, n, b):
        r_w, r_q, r_p = seq.spawn(3)
        gen = b.generator(r_w)
        width = in_shape[-1]
        out = {
            "weight": [
                init.dense_weights(width, width, self.sigma_w2, "gaussian", gen, batch_shape=n, backend=b)
                for _ in range(self.depth)
            ],
            "bias": [_bias(gen, n, width, self.sigma_b2, b) for _ in range(self.depth)],
        }
        for key, factory, r in (("skips", self.skips, r_q), ("long_skips", self.long_skips, r_p)):
            if factory is not None:
                gens = np.random.default_rng(r).spawn(n)
                out[key] = [
                    b.asarray(np.stack([np.asarray(factory(g), dtype=float) for g in gens])) for _ in range(self.depth)
                ]
        return out

    def module(self, params, k):
        from ._torch import module_class, tensor

        def stack(key):
            return None if key not in params else [tensor(q, k) for q in params[key]]

        ws = [tensor(w, k) for w in params["weight"]]
        bs = [tensor(b, k) for b in params["bias"]]
        return module_class("HyperResidual")(ws, bs, stack("skips"), stack("long_skips"))

    def apply(self, params, x, b):
        xp = b.xp
        skips = params.get("skips")
        longs = params.get("long_skips", skips)
        history = [x]
        h = x
        for idx in range(self.depth):
            l = idx + 1
            new = xp.maximum(_bias_add(_channels_matmul(h, params["weight"][idx], xp), params["bias"][idx], xp), 0.0)
            new = new + (h if skips is None else _channels_matmul(h, skips[idx], xp))
            if l >= 2:
                if longs is None:
                    far = sum(history[:-1])
                else:
                    far = sum(_channels_matmul(xk, longs[k], xp) for k, xk in enumerate(history[:-1]))
                new = new + far / (l - 1)
            h = new
            history.append(h)
        return h


@dataclass(frozen=True)
class LooksLinear(Layer):
    """Dense layer with looks-linear weights ``[[U, -U], [-U, U]]`` (Burkholz & Dubatovka 2019, Sec. 3;
    Blumenfeld et al. 2020, eq. 8): ``U`` Haar orthogonal (``law="orthogonal"``,
    :func:`meanfield.init.orthogonal_looks_linear`) or Gaussian (``"gaussian"``, :func:`meanfield.init.gsm`).

    Sampler, weights and module; the theory reports it (its rule needs the paired structure
    ``[a, -a]`` of its input, which the per-unit state does not carry).
    """

    width: int
    sigma_w2: float = 1.0
    law: str = "orthogonal"
    random = True

    def __post_init__(self):
        object.__setattr__(self, "width", check_int(self.width, "width", 2, 2**20))
        if self.width % 2:
            raise ValueError(f"width must be even for looks-linear weights, got {self.width}")
        object.__setattr__(self, "sigma_w2", check_nonnegative_scalar(self.sigma_w2, "sigma_w2"))
        if self.law not in ("orthogonal", "gaussian"):
            raise ValueError(f"law must be 'orthogonal' or 'gaussian', got {self.law!r}")

    def out_shape(self, in_shape):
        if in_shape[-1] % 2:
            raise ValueError(f"LooksLinear needs an even number of input channels, got {in_shape[-1]}")
        return tuple(in_shape[:-1]) + (self.width,)

    def init(self, seq, in_shape, n, b):
        gen = _gen(b, seq)
        f = init.orthogonal_looks_linear if self.law == "orthogonal" else init.gsm
        w = f(self.width, in_shape[-1], self.sigma_w2, gen, batch_shape=n, backend=b)
        return {"weight": w, "bias": b.full((n, self.width), 0.0)}

    def module(self, params, k):
        from ._torch import module_class, tensor

        return module_class("Dense")(tensor(params["weight"], k), tensor(params["bias"], k))

    def apply(self, params, x, b):
        return _channels_matmul(x, params["weight"], b.xp)


def _pair(moments, j, k):
    """``M[j, k] = E x_j x_k^T`` from the stored lower triangle (``M[k, j]`` transposed)."""
    return moments[(j, k)] if (j, k) in moments else moments[(k, j)].T
