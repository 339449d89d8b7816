r"""Normalisation layers of the network language: layer, RMS and batch normalisation, dropout.

Feature normalisation (:class:`LayerNorm`, :class:`RMSNorm`) at infinite width: the mean and the mean
square over the ``n`` units of one input at one position concentrate (law of large numbers over
exchangeable units), so the normalisation is a deterministic rescaling per input x position and
its rule is exact in the limit,

.. math::

    S'_{ab} = g^2 \frac{S^c_{ab}}{\sqrt{(S^c_{aa} + \epsilon)(S^c_{bb} + \epsilon)}} + \beta^2,

with :math:`S^c = S - C` for :class:`LayerNorm` (the unit average :math:`m_a` of an exchangeable
field has :math:`\mathbb{E}\, z_i m_b = \mathbb{E}\, m_a m_b = C_{ab}`; ``C`` the different-unit
moment, zero after a dense or convolutional layer, so that the mean subtraction is then a no-op in
the limit) and :math:`S^c = S` for :class:`RMSNorm`.

Batch normalisation in training mode (:class:`BatchNorm`, ``train=True``) normalises each unit
over the batch of ``B = D P`` values (D inputs x P positions): the normaliser depends on the unit's
own Gaussian batch vector ``h ~ N(0, S)``, so the map is not a rescaling. With the centring
``G = I - 11^T / B``, ``x = G h`` and :math:`r^2 = |x|^2 + B\epsilon`, the output
:math:`y = \sqrt{B}\, x / r` has (Yang et al. 2019, the Laplace method of their Sec. 3)

.. math::

    \mathbb{E}\, y y^T = B \int_0^\infty \mathbb{E}\,[x x^T e^{-s r^2}]\, ds
    = B \int_0^\infty e^{-sB\epsilon} \det(I + 2s\Sigma^G)^{-1/2}\,
      \Sigma^G (I + 2s\Sigma^G)^{-1}\, ds, \qquad \Sigma^G = G S G,

a one-dimensional integral in the eigenbasis of :math:`\Sigma^G` (adaptive quadrature,
:func:`scipy.integrate.quad_vec`, relative error below :data:`BN_RTOL`). Its derivative map uses
the Jacobian :math:`J = \sqrt{B}(I/r - x x^T / r^3) G` and the moments
:math:`\mathbb{E}[f(x) / r^{2k}] = \Gamma(k)^{-1}\int_0^\infty s^{k-1}\mathbb{E}[f(x) e^{-s r^2}] ds`
of ``1/r^2``, ``x x^T / r^4`` and ``x x^T (x^T g x) / r^6``: the exact
:math:`\mathbb{E}[J^T g J]` under the gradient-independence assumption. For a linear BN network at
its fixed point this gives Yang et al.'s gradient explosion by :math:`(B - 2)/(B - 3)` per layer.

On the raw input (before any random layer) a deterministic layer here is applied to the data
itself (exact); dropout in training mode is random and is not.

References
----------
Ba, Kiros & Hinton 2016, "Layer normalization"; Zhang & Sennrich 2019, "Root mean square layer
normalization"; Ioffe & Szegedy 2015; Yang, Pennington, Rao, Sohl-Dickstein & Schoenholz 2019,
"A mean field theory of batch normalization"; Srivastava et al. 2014 (dropout).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from scipy.integrate import quad_vec

from .._checks import check_bool, check_nonnegative_scalar, check_scalar
from ..activations import get_activation
from ._data import on_data
from ._gauss import expectation
from ._layers import Act, Layer, _not_described
from ._state import scale

__all__ = ["BN_RTOL", "BatchNorm", "Dropout", "LayerNorm", "RMSNorm"]

#: Relative error requested of the batch-normalisation integrals (:func:`scipy.integrate.quad_vec`).
BN_RTOL = 1e-10


def _no_ntk(layer, state):
    if state.ntk is not None:
        raise _not_described(layer, "its NTK term is not derived")


def _full(value, n):
    return None if value == 0.0 else np.full(n, value)


def _module(kind: str, **kw):
    from ._torch import require_torch

    torch = require_torch()

    class FeatureNorm(torch.nn.Module):
        """Layer / RMS normalisation over the channel axis (float64, channels-last)."""

        def __init__(self, centre, eps, gain, bias):
            super().__init__()
            self.centre, self.eps, self.gain, self.bias = centre, eps, gain, bias

        def forward(self, x):
            z = x - x.mean(dim=-1, keepdim=True) if self.centre else x
            return self.gain * z / torch.sqrt((z * z).mean(dim=-1, keepdim=True) + self.eps) + self.bias

    class BatchNormModule(torch.nn.Module):
        """Batch normalisation over the batch and spatial axes (train) or with fixed statistics (eval)."""

        def __init__(self, train, eps, gain, bias, running_mean, running_var):
            super().__init__()
            self.train_mode, self.eps, self.gain, self.bias = train, eps, gain, bias
            self.rm, self.rv = running_mean, running_var

        def forward(self, x):
            if self.train_mode:
                axes = tuple(range(x.ndim - 1))
                m = x.mean(dim=axes, keepdim=True)
                v = ((x - m) ** 2).mean(dim=axes, keepdim=True)
            else:
                m, v = self.rm, torch.tensor(self.rv, dtype=x.dtype)
            return self.gain * (x - m) / torch.sqrt(v + self.eps) + self.bias

    classes = {"feature": FeatureNorm, "batch": BatchNormModule}
    if kind == "dropout":
        return torch.nn.Dropout(kw["p"]) if kw["train"] else torch.nn.Identity()
    return classes[kind](**kw)


# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _FeatureNorm(Layer):
    eps: float = 1e-5
    gain: float = 1.0
    bias: float = 0.0
    centre = True

    def __post_init__(self):
        object.__setattr__(self, "eps", check_nonnegative_scalar(self.eps, "eps"))
        object.__setattr__(self, "gain", check_scalar(self.gain, "gain"))
        object.__setattr__(self, "bias", check_scalar(self.bias, "bias"))

    def apply(self, params, x, b):
        xp = b.xp
        z = x - xp.mean(x, axis=-1, keepdims=True) if self.centre else x
        return self.gain * z / xp.sqrt(xp.mean(z * z, axis=-1, keepdims=True) + self.eps) + self.bias

    def module(self, params, k):
        return _module("feature", centre=self.centre, eps=self.eps, gain=self.gain, bias=self.bias)

    def _centred(self, st):
        s = st.second
        if self.centre and st.cross is not None:
            s = s - st.cross
        q = np.diagonal(s)
        if np.any(q + self.eps <= 0):
            raise ValueError(f"{self!r}: an input has zero signal at some position (its mean square is 0 and eps = 0)")
        return s, 1.0 / np.sqrt(q + self.eps)

    def theory(self, state, degree):
        _no_ntk(self, state)
        if state.x is not None:
            return on_data(self, state)
        st = self.materialise(state, degree)
        s, r = self._centred(st)
        g2, b2 = self.gain**2, self.bias**2
        out = g2 * s * np.outer(r, r) + b2
        n = out.shape[0]
        if self.centre:
            cross = None if b2 == 0.0 else np.full_like(out, b2)
            mean, known = _full(self.bias, n), True
        else:
            cross = None if st.cross is None else g2 * st.cross * np.outer(r, r)
            mean = None if st.mean is None else self.gain * st.mean * r
            known = st.mean_known
        return replace(
            st,
            second=out,
            cross=cross,
            gaussian=st.gaussian and self.bias == 0.0,
            mean=mean,
            mean_known=known,
            ntk=None,
            ntk_cross=None,
        )

    def backward(self, state, g, gc, degree):
        st = self.materialise(state, degree)
        _, r = self._centred(st)
        f = self.gain**2 * np.outer(r, r)
        # dL/dz_j = (g/r)(delta_j - mean_i delta_i - y_j mean_i delta_i y_i): the unit averages of the
        # gradient vanish in the limit (zero-mean gradients independent of the forward pass)
        return f * g, (None if (gc is None or self.centre) else f * gc)


@dataclass(frozen=True)
class LayerNorm(_FeatureNorm):
    r"""Layer normalisation over the channel axis, :math:`y = g\,(z - \bar z)/\sqrt{\overline{(z - \bar z)^2} + \epsilon} + \beta`.

    Parameters
    ----------
    eps : float
        Added to the variance (``torch.nn.LayerNorm``'s default 1e-5), >= 0.
    gain, bias : float
        The affine map, one scalar for every unit (``g = 1``, ``beta = 0`` at PyTorch's initialisation).

    Notes
    -----
    Ba et al. 2016. Rule (module notes): :math:`S' = g^2 (S - C)_{ab} / \sqrt{((S-C)_{aa}+\epsilon)((S-C)_{bb}+\epsilon)} + \beta^2`,
    exact at infinite width: the unit mean and variance of one input concentrate. The mean
    subtraction removes the different-unit moment ``C`` (zero after a dense or convolutional layer:
    then a no-op in the limit). The output is Gaussian when its input is (and ``beta = 0``).
    Backward: :math:`g^2 g_{ab} / \sqrt{(q_a+\epsilon)(q_b+\epsilon)}`. The NTK is reported by name.
    """


@dataclass(frozen=True)
class RMSNorm(_FeatureNorm):
    r"""RMS normalisation over the channel axis, :math:`y = g\, z / \sqrt{\overline{z^2} + \epsilon}`.

    Parameters
    ----------
    eps : float
        Added to the mean square (>= 0; ``torch.nn.RMSNorm``'s ``eps=None`` is the dtype's machine
        epsilon, 2.2e-16 in float64).
    gain : float
        One scalar for every unit (1 at PyTorch's initialisation).

    Notes
    -----
    Zhang & Sennrich 2019. Rule: :math:`S' = g^2 S_{ab} / \sqrt{(S_{aa}+\epsilon)(S_{bb}+\epsilon)}`,
    exact at infinite width (the mean square of one input's units concentrates); different-unit
    moments and means rescale the same way.
    """

    eps: float = float(np.finfo(float).eps)
    centre = False

    def __post_init__(self):
        super().__post_init__()
        if self.bias != 0.0:
            raise ValueError(f"RMSNorm has no bias, got bias={self.bias}")


# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BatchNorm(Layer):
    r"""Batch normalisation of every unit, over the batch and spatial positions (Ioffe & Szegedy 2015).

    Parameters
    ----------
    train : bool
        True: normalise with the statistics of the batch (the ``D`` inputs x ``P`` positions the
        network sees, biased variance, as PyTorch's training mode); False (evaluation mode): with
        the fixed ``running_mean`` / ``running_var``.
    eps : float
        Added to the variance (>= 0; PyTorch's 1e-5).
    gain, bias : float
        The affine map, one scalar for every unit (1 and 0 at PyTorch's initialisation).
    running_mean, running_var : float
        Evaluation mode's statistics (0 and 1 at initialisation: the layer is then ``1/sqrt(1+eps)``
        times the identity); ``running_var`` >= 0.
    act : str, optional
        Training mode only: an activation of :mod:`meanfield.activations` applied right after the
        normalisation, fused into this layer (``BatchNorm(act="relu")`` is ``BN`` then ``ReLU``, the
        block of Yang et al. 2019), since the normalised units are not Gaussian.

    Notes
    -----
    Evaluation mode: the affine map ``a z + c`` with ``a = gain / sqrt(running_var + eps)``,
    ``c = bias - a running_mean``, exact. Training mode: Yang et al. 2019's batch-dependent map
    (module notes), exact for a zero-mean Gaussian input of independent units (after a dense or
    convolutional layer); its output is not Gaussian, so a separate activation right after it is
    reported by name: fuse it (``act``). With ``act`` the moments
    :math:`\mathbb{E}\,\phi(y)\phi(y)^T` and the derivative map
    :math:`\mathbb{E}[J^T (\phi'(y)\phi'(y)^T \circ g) J]` are Gaussian integrals over the unit's
    ``B`` batch values, computed by randomised quasi-Monte-Carlo (8 scrambled Sobol sets of 4,096
    points; error about 1e-3 relative). Without ``act`` the derivative map is the exact :math:`\mathbb{E}[J^T g J]`; it needs ``B - 1 >= 3``
    directions of the centred batch (``E 1/r^2`` diverges otherwise as ``eps -> 0``).
    """

    train: bool = True
    eps: float = 1e-5
    gain: float = 1.0
    bias: float = 0.0
    running_mean: float = 0.0
    running_var: float = 1.0
    act: str | None = None

    def __post_init__(self):
        object.__setattr__(self, "train", check_bool(self.train, "train"))
        if self.act is not None:
            if not self.train:
                raise ValueError("act is for training mode (train=True); in evaluation mode add Act(...) after it")
            get_activation(self.act)  # validates the name
        object.__setattr__(self, "eps", check_nonnegative_scalar(self.eps, "eps"))
        object.__setattr__(self, "gain", check_scalar(self.gain, "gain"))
        object.__setattr__(self, "bias", check_scalar(self.bias, "bias"))
        object.__setattr__(self, "running_mean", check_scalar(self.running_mean, "running_mean"))
        object.__setattr__(self, "running_var", check_nonnegative_scalar(self.running_var, "running_var"))
        if not self.train and self.running_var + self.eps <= 0:
            raise ValueError("running_var + eps must be > 0 in evaluation mode")

    def _affine(self):
        a = self.gain / math.sqrt(self.running_var + self.eps)
        return a, self.bias - a * self.running_mean

    def apply(self, params, x, b):
        xp = b.xp
        if not self.train:
            a, c = self._affine()
            return a * x + c
        axes = tuple(range(1, x.ndim - 1))
        m = xp.mean(x, axis=axes, keepdims=True)
        v = xp.mean((x - m) ** 2, axis=axes, keepdims=True)
        y = self.gain * (x - m) / xp.sqrt(v + self.eps) + self.bias
        return y if self.act is None else Act(self.act).apply({}, y, b)

    def module(self, params, k):
        if self.act is not None:
            from ._torch import require_torch

            return require_torch().nn.Sequential(replace(self, act=None).module(params, k), Act(self.act).module({}, k))
        return _module(
            "batch",
            train=self.train,
            eps=self.eps,
            gain=self.gain,
            bias=self.bias,
            running_mean=self.running_mean,
            running_var=self.running_var,
        )

    # -- evaluation mode --------------------------------------------------------------------------
    def _eval_theory(self, state, degree):
        st = self.materialise(state, degree)
        a, c = self._affine()
        n = st.second.shape[0]
        mu = np.zeros(n) if st.mean is None else st.mean
        if c != 0.0 and not st.mean_known:
            raise _not_described(self, "its shift needs the mean of its input, which is not determined")
        shift = a * c * (mu[:, None] + mu[None, :]) + c * c

        def lin(m):
            return None if m is None else a * a * m

        cross = lin(st.cross)
        if c != 0.0:
            cross = (0.0 if cross is None else cross) + shift
        return replace(
            st,
            second=a * a * st.second + (shift if c != 0.0 else 0.0),
            cross=cross,
            gaussian=st.gaussian and c == 0.0,
            mean=None if (st.mean is None and c == 0.0) else a * mu + c,
            ntk=lin(st.ntk),
            ntk_cross=lin(st.ntk_cross),
        )

    # -- training mode ----------------------------------------------------------------------------
    def _gaussian_batch(self, state):
        if state.act is not None or state.x is not None or not state.gaussian:
            raise _not_described(
                self, "training-mode statistics need a zero-mean Gaussian input (put it after a dense or conv layer)"
            )
        if state.cross is not None:
            raise _not_described(self, "training-mode statistics of correlated units are not derived")
        _no_ntk(self, state)
        s = state.second
        bsz = s.shape[0]
        if bsz < 2:
            raise ValueError(f"{self!r}: batch statistics need at least 2 values per unit (inputs x positions)")
        cen = np.eye(bsz) - 1.0 / bsz
        lam, u = np.linalg.eigh(cen @ s @ cen)
        lam = np.clip(lam, 0.0, None)
        return bsz, cen, lam, u

    def _integrals(self, bsz, lam, backward):
        top = float(lam.max())
        if top <= 0.0:
            raise ValueError(f"{self!r}: the batch has no variance (all inputs and positions equal)")
        ln, be = lam / top, bsz * self.eps / top  # dimensionless: s in units of 1 / top

        def f(s):
            sig = ln / (1.0 + 2.0 * s * ln)
            w = math.exp(-s * be - 0.5 * float(np.sum(np.log1p(2.0 * s * ln))))
            parts = [w * sig]
            if backward:
                parts += [np.array([w]), s * w * sig, 0.5 * s * s * w * np.outer(sig, sig).ravel()]
            return np.concatenate(parts)

        val, err = quad_vec(f, 0.0, np.inf, epsrel=BN_RTOL, epsabs=0.0, limit=2000)
        if not np.all(np.isfinite(val)) or err > 1e3 * BN_RTOL * max(float(np.max(np.abs(val))), 1e-300):
            raise ValueError(f"{self!r}: the batch-normalisation integral did not converge (error {err:.2e})")
        n = lam.size
        fwd = val[:n]
        if not backward:
            return fwd, None
        return fwd, (val[n] / top, val[n + 1 : 2 * n + 1] / top, val[2 * n + 1 :].reshape(n, n) / top)

    def theory(self, state, degree):
        if state.x is not None and state.ntk is None:
            return on_data(self, state)
        if not self.train:
            return self._eval_theory(state, degree)
        if self.act is not None:
            return self._act_theory(state)
        bsz, _, lam, u = self._gaussian_batch(state)
        fwd, _ = self._integrals(bsz, lam, False)
        v = bsz * (u * fwd) @ u.T
        g2, b2 = self.gain**2, self.bias**2
        return replace(
            state,
            second=g2 * v + b2,
            cross=None if b2 == 0.0 else np.full_like(v, b2),
            gaussian=False,
            mean=_full(self.bias, bsz),
            mean_known=True,
        )

    # -- training mode with a fused activation -----------------------------------------------------
    def _normalised(self, h):
        bsz = h.shape[1]
        x = h - h.mean(axis=1, keepdims=True)
        r = np.sqrt(np.sum(x * x, axis=1, keepdims=True) + bsz * self.eps)
        return x, r, self.gain * math.sqrt(bsz) * x / r + self.bias

    def _act_theory(self, state):
        bsz = self._gaussian_batch(state)[0]
        phi = get_activation(self.act).phi

        def f(h):
            z = phi(self._normalised(h)[2])
            return np.concatenate([(z[:, :, None] * z[:, None, :]).reshape(h.shape[0], -1), z], axis=1)

        m, _ = expectation(state.second, f)
        second, mean = m[: bsz * bsz].reshape(bsz, bsz), m[bsz * bsz :]
        nonzero = bool(np.any(np.abs(mean) > 0))
        return replace(
            state,
            second=0.5 * (second + second.T),
            cross=np.outer(mean, mean) if nonzero else None,
            gaussian=False,
            mean=mean if nonzero else None,
            mean_known=True,
        )

    def _act_backward(self, state, g):
        bsz = self._gaussian_batch(state)[0]
        dphi = get_activation(self.act).dphi
        cen = np.eye(bsz) - 1.0 / bsz

        def f(h):
            x, r, y = self._normalised(h)
            r3 = r[:, :, None]
            jac = self.gain * math.sqrt(bsz) * (np.eye(bsz)[None] / r3 - x[:, :, None] * x[:, None, :] / r3**3) @ cen
            d = dphi(y)
            inner = g[None] * d[:, :, None] * d[:, None, :]
            return (np.transpose(jac, (0, 2, 1)) @ inner @ jac).reshape(h.shape[0], -1)

        m, _ = expectation(state.second, f)
        out = m.reshape(bsz, bsz)
        return 0.5 * (out + out.T)

    def backward(self, state, g, gc, degree):
        if not self.train:
            a, _ = self._affine()
            return a * a * g, scale(gc, a * a)
        if state.x is not None:
            raise _not_described(
                self, "its derivative map on the raw input is not derived (put it after a dense layer)"
            )
        if self.act is not None:
            return self._act_backward(state, g), None
        bsz, cen, lam, u = self._gaussian_batch(state)
        if np.sum(lam > 1e-12 * lam.max()) < 3 and self.eps == 0.0:
            raise _not_described(self, "its gradient moments diverge: fewer than 3 directions in the centred batch")
        _, (a1, a2, t) = self._integrals(bsz, lam, True)
        m = u.T @ g @ u
        inner = a1 * m - (a2[:, None] * m + m * a2[None, :]) + np.diag(t.T @ np.diagonal(m)) + 2.0 * t * m
        gt = u.T @ cen @ u
        out = bsz * self.gain**2 * u @ (gt @ inner @ gt) @ u.T
        # different units: independent Jacobians of zero-mean gradients, E J = 0 in the cross term
        return 0.5 * (out + out.T), None


# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Dropout(Layer):
    r"""Dropout with drop probability ``p`` (Srivastava et al. 2014), :math:`y = z\, m / (1 - p)`, :math:`m \sim \mathrm{Bernoulli}(1 - p)`.

    Parameters
    ----------
    p : float
        Drop probability, in [0, 1).
    train : bool
        False (evaluation mode, the default): the identity. True: a fresh mask for every unit,
        input and position.

    Notes
    -----
    Training-mode rule, exact: independent masks leave every moment between different
    (input, position) pairs and different units unchanged and scale the same-unit diagonal by
    :math:`1/(1-p)`, :math:`S'_{aa} = S_{aa}/(1-p)`; the output is not Gaussian. Backward: the
    gradient passes through the same mask, the same factor on the diagonal. The sampler draws the
    masks from the layer's weight stream at every forward pass (a network's module uses PyTorch's
    own random numbers).
    """

    p: float = 0.5
    train: bool = False

    def __post_init__(self):
        p = check_scalar(self.p, "p")
        if not 0.0 <= p < 1.0:
            raise ValueError(f"p must lie in [0, 1), got {p}")
        object.__setattr__(self, "p", p)
        object.__setattr__(self, "train", check_bool(self.train, "train"))

    @property
    def random(self):
        return self.train

    def init(self, seq, in_shape, n, b):
        return {"gen": b.generator(seq)} if self.train else {}

    def apply(self, params, x, b):
        if not self.train or self.p == 0.0:
            return x
        keep = params["gen"].random(tuple(x.shape)) >= self.p
        return b.xp.where(keep, x / (1.0 - self.p), 0.0 * x)

    def module(self, params, k):
        return _module("dropout", p=self.p, train=self.train)

    def theory(self, state, degree):
        if not self.train or self.p == 0.0:
            return state
        _no_ntk(self, state)
        st = self.materialise(state, degree)
        s = st.second.copy()
        s[np.diag_indices_from(s)] /= 1.0 - self.p
        return replace(st, second=s, gaussian=False)

    def backward(self, state, g, gc, degree):
        if not self.train or self.p == 0.0:
            return g, gc
        g = np.array(g, dtype=float)
        g[np.diag_indices_from(g)] /= 1.0 - self.p
        return g, gc
