"""MetaInit (Dauphin & Schoenholz 2019) for dense leaky-ReLU networks, exact, in NumPy.

MetaInit tunes the Frobenius norm of every weight matrix, keeping its direction, so that a
gradient step looks locally linear: it minimises the *gradient quotient* (Eq. 1 of [1]_)

.. math::

    \\mathrm{GQ}(L, \\theta) = \\frac{1}{N} \\sum_{i=1}^N
        \\left| \\frac{g_i - (H g)_i}{g_i + \\epsilon\\, s_i} - 1 \\right|
      = \\frac{1}{N} \\sum_{i=1}^N \\frac{|(H g)_i + \\epsilon\\, s_i|}{|g_i| + \\epsilon},

with ``g`` the gradient of the loss ``L`` on a batch, ``H`` its Hessian, ``N`` the number of
parameters and ``s_i = sign(g_i)`` (``+1`` where ``g_i = 0``) held constant when differentiating,
as in the authors' code (Fig. 2 of [1]_). ``GQ`` is the mean relative change of the gradient
after a unit step ``theta - g``: ``g(theta - g) ~= g - H g``. The norms follow signSGD with
momentum on ``dGQ / d|W_l|``, one fresh batch of standard-normal inputs and uniformly random
class labels per step (cross-entropy loss), ``lr = 0.1``, ``momentum = 0.9``, 500 steps,
``eps = 1e-5``, batch 32: the defaults of [1]_'s code, also used by Grzejdziak 2023 for its Fig. 1.

Networks (Grzejdziak 2023 convention, the first layer acting on the raw input as in Prop. 3.3 and the
Fig. 1 networks): ``y^(1) = W^(1) x``, ``y^(l) = W^(l) phi_a(y^(l-1))`` for ``l = 2 .. L``, with
leaky ReLU ``phi_a`` of negative slope ``a`` (``a = 0``: ReLU), no biases, and logits
``z = y^(L)``: the **last matrix is the read-out** of the MetaInit objective.

Everything is exact (no finite differences): one forward and one backward pass give ``g``;
``H v`` is the R-operator (forward-over-reverse, Pearlmutter 1994) pass; and the gradient of
``GQ`` with respect to the weights is

.. math::

    \\nabla_W \\mathrm{GQ} = H (\\bar g + H \\bar h) + \\nabla^3 L[\\bar h, g],

with ``bar g = dGQ/dg`` and ``bar h = dGQ/d(Hg)`` (explicit, from the formula above) and
``nabla^3 L[u, v]`` the third derivative contracted twice, computed by a second-order forward
pass (``R_u R_v`` of the backward pass). Leaky-ReLU networks are piecewise linear in each weight
matrix, so ``H`` and ``nabla^3 L`` are defined almost everywhere (the activation's second
derivative is zero off the kink) and all curvature comes from the weight products and the loss.
Only the projections ``<nabla_{W_l} GQ, W_l>`` are needed; they are taken without forming the
outer products. Cost: about 25 small matrix products per layer and step.

Arrays carry a leading axis over independent networks, so a stack of networks is meta-initialised
in one vectorised run (same architecture, own weights, own random batches).

Choices the paper leaves open, and what this module does (each follows the authors' code):

* ``N`` counts every parameter in the GQ; only matrices (``ndim >= 2``) are rescaled. With
  ``biases=True`` zero biases take part in ``g``, ``H g`` and ``N`` but stay at zero, as in
  Grzejdziak's PyTorch networks (``nn.Linear(bias=True)`` with zero biases).
* A norm update that would make a norm negative flips the matrix's sign (the code multiplies the
  matrix by ``new_norm / norm``); such events are counted in ``MetaInitResult.sign_flips``.
* ``GQ`` is recorded before each step's update, on that step's batch.

References
----------
.. [1] Y. N. Dauphin, S. S. Schoenholz, "MetaInit: Initializing learning by learning to
   initialize", NeurIPS 32 (2019), Eq. 1 (gradient quotient) and Fig. 2 (the algorithm as
   PyTorch code, with its defaults).
.. [2] B. A. Pearlmutter, "Fast exact multiplication by the Hessian", Neural Comput. 6 (1994).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._checks import check_bool, check_rng, is_complex
from .._results import Result
from ._args import check_size, int_arg, real, real_array

__all__ = [
    "EPS_RANGE",
    "LOSSES",
    "MAX_EVAL_BATCHES",
    "MAX_STEPS",
    "GradientQuotient",
    "MetaInitResult",
    "gradient_quotient",
    "gradient_quotient_gradient",
    "metainit",
]

#: Losses of the MetaInit objective: cross-entropy with uniformly random labels (the paper's
#: classification setting) or half the mean squared error to standard-normal targets.
LOSSES = ("cross_entropy", "mse")
#: Allowed ``eps``: GQ has terms ``|(H g)_i| / eps`` where ``g_i = 0`` and its derivative terms in
#: ``1 / eps^2``, which leave float64 for ``eps`` much below 1e-150 (or above 1e150).
EPS_RANGE = (1e-100, 1e100)
#: Largest ``steps`` and ``eval_batches`` of :func:`metainit` (each step costs milliseconds or more).
MAX_STEPS = 10**6
MAX_EVAL_BATCHES = 10**4


def _mT(a):
    return a.swapaxes(-1, -2)


def _dot(a, b):
    """``<a, b>`` per network (the leading axis)."""
    return np.einsum("kij,kij->k", a, b)


def _lin_forward(ws, masks, src):
    """Tangent forward pass ``r y_k = W_k r a_k + src_k``, ``r a_{k+1} = D_k r y_k``, ``r a_0 = 0``.

    Returns ``(r a, W r a, r z)``; entry 0 of the first two lists is ``None`` (the input is fixed).
    """
    ra, wra = [None], [None]
    ry = src[0]
    for k in range(1, len(ws)):
        r = masks[k - 1] * ry
        w = ws[k] @ r
        ra.append(r)
        wra.append(w)
        ry = w + src[k]
    return ra, wra, ry


def _lin_backward(wts, masks, top, src):
    """Backward pass ``d_{L-1} = top``, ``d_k = D_k (W_{k+1}^T d_{k+1} + src_k)`` (``wts``: the ``W^T``)."""
    d = [None] * len(wts)
    d[-1] = top
    for k in range(len(wts) - 2, -1, -1):
        t = wts[k + 1] @ d[k + 1]
        if src is not None:
            t += src[k]
        t *= masks[k]
        d[k] = t
    return d


def _flat(arrays):
    """Concatenate per-layer arrays of shape (K, ...) into (K, total)."""
    return np.concatenate([a.reshape(a.shape[0], -1) for a in arrays], axis=1)


def _split(flat, like):
    """Inverse of :func:`_flat`: views of ``flat`` shaped like ``like``."""
    out, start = [], 0
    for a in like:
        stop = start + a[0].size
        out.append(flat[:, start:stop].reshape(a.shape))
        start = stop
    return out


@dataclass
class _Tangent:
    """First-order directional derivatives along one direction ``v`` (R-operator)."""

    ra: list
    wra: list
    rz: np.ndarray
    rd: list


class _Network:
    """Forward and backward pass of a stack of networks on one batch, kept for the R-passes.

    ``ws[k]``: shape (K, n_{k+1}, n_k); ``x``: (K, n_0, B); ``target``: labels (K, B) or (K, n_L, B).
    """

    def __init__(self, ws, x, target, slope, loss):
        self.ws, self.wts, self.loss = ws, [_mT(w) for w in ws], loss
        a, masks, ys = [x], [], []
        y = ws[0] @ x
        for k in range(1, len(ws)):
            ys.append(y)
            m = np.where(y > 0, 1.0, slope)
            masks.append(m)
            a.append(m * y)
            y = ws[k] @ a[k]
        ys.append(y)
        self.a, self.at, self.masks, self.ys = a, [_mT(ak) for ak in a], masks, ys
        z = y
        self.batch = b = z.shape[-1]
        if loss == "cross_entropy":
            zmax = z.max(axis=1, keepdims=True)
            ez = np.exp(z - zmax)
            tot = ez.sum(axis=1, keepdims=True)
            self.p = ez / tot
            zt = np.take_along_axis(z, target[:, None, :], axis=1)
            self.value = (np.log(tot) + zmax - zt)[:, 0, :].mean(axis=1)
            e = self.p.copy()
            idx = target[:, None, :]
            np.put_along_axis(e, idx, np.take_along_axis(e, idx, axis=1) - 1.0, axis=1)
            self.e = e / b
        else:
            r = z - target
            self.value = 0.5 * np.einsum("kij,kij->k", r, r) / b
            self.e = r / b
        self.delta = _lin_backward(self.wts, masks, self.e, None)

    def hz(self, r):
        """Hessian of the loss in logit space times ``r`` (per sample)."""
        if self.loss == "mse":
            return r / self.batch
        p = self.p
        return p * (r - (p * r).sum(axis=1, keepdims=True)) / self.batch

    def tz(self, r, s):
        """Third derivative of the loss in logit space contracted with ``r`` and ``s``.

        Cross-entropy (log-sum-exp): ``p * (r~ s~ - <p, r~ s~>)`` with ``r~ = r - <p, r>``.
        """
        if self.loss == "mse":
            return 0.0
        p = self.p
        rs = (r - (p * r).sum(axis=1, keepdims=True)) * (s - (p * s).sum(axis=1, keepdims=True))
        return p * (rs - (p * rs).sum(axis=1, keepdims=True)) / self.batch

    def gradient(self):
        """``(dL/dW_k, dL/db_k)``: ``delta_k a_k^T`` and ``delta_k 1``."""
        return [d @ at for d, at in zip(self.delta, self.at)], [d.sum(axis=-1) for d in self.delta]

    def tangent(self, v, vb=None):
        """R-operator along the weight direction ``v`` (and bias direction ``vb``)."""
        src = [vk @ ak for vk, ak in zip(v, self.a)]
        if vb is not None:
            for s, bk in zip(src, vb):
                s += bk[..., None]
        ra, wra, rz = _lin_forward(self.ws, self.masks, src)
        bsrc = [_mT(v[k + 1]) @ self.delta[k + 1] for k in range(len(v) - 1)]
        rd = _lin_backward(self.wts, self.masks, self.hz(rz), bsrc)
        return _Tangent(ra, wra, rz, rd)

    def hvp(self, t):
        """``H v`` (weights, biases) from the tangent pass ``t`` along ``v``."""
        hv = [t.rd[0] @ self.at[0]]
        hv += [rd @ at + d @ _mT(ra) for rd, at, d, ra in zip(t.rd[1:], self.at[1:], self.delta[1:], t.ra[1:])]
        return hv, [rd.sum(axis=-1) for rd in t.rd]

    def hvp_projection(self, t):
        """``<(H v)_k, W_k>`` per layer, shape (K, L), without forming ``H v``."""
        out = [_dot(t.rd[0], self.ys[0])]
        out += [_dot(rd, y) + _dot(d, w) for rd, y, d, w in zip(t.rd[1:], self.ys[1:], self.delta[1:], t.wra[1:])]
        return np.stack(out, axis=1)

    def third_projection(self, tu, u, tv, v):
        """``<nabla^3 L[u, v]_k, W_k>`` per layer (the ``R_u R_v`` pass), shape (K, L)."""
        ws, n = self.ws, len(self.ws)
        src = [np.zeros_like(self.ys[0])] + [u[k] @ tv.ra[k] + v[k] @ tu.ra[k] for k in range(1, n)]
        _ma, wma, mz = _lin_forward(ws, self.masks, src)
        top = self.hz(mz) + self.tz(tu.rz, tv.rz)
        bsrc = [_mT(u[k + 1]) @ tv.rd[k + 1] + _mT(v[k + 1]) @ tu.rd[k + 1] for k in range(n - 1)]
        md = _lin_backward(self.wts, self.masks, top, bsrc)
        out = [_dot(md[0], self.ys[0])]
        for k in range(1, n):
            out.append(
                _dot(md[k], self.ys[k])
                + _dot(tu.rd[k], tv.wra[k])
                + _dot(tv.rd[k], tu.wra[k])
                + _dot(self.delta[k], wma[k])
            )
        return np.stack(out, axis=1)


def _gq_terms(g, h, eps):
    """Per-entry ``|h + eps s| / (|g| + eps)`` and its partial derivatives in ``h`` and in ``g``."""
    s = np.where(g >= 0, 1.0, -1.0)
    q = np.abs(g) + eps
    num = h + eps * s
    with np.errstate(over="ignore", under="ignore"):  # q^2 may under/overflow; the check of the caller decides
        return np.abs(num) / q, np.sign(num) / q, -np.abs(num) * s / (q * q)


def _gq_and_gradient(ws, x, target, slope, loss, eps, biases, meta_gradient=True):
    """``GQ`` (K,) of the batch and, if ``meta_gradient``, ``<nabla_{W_k} GQ, W_k>`` (K, L)."""
    net = _Network(ws, x, target, slope, loss)
    nw = len(ws)
    g, gb = net.gradient()
    tv = net.tangent(g, gb if biases else None)
    h, hb = net.hvp(tv)
    like = g + gb if biases else g
    value, dh, dg = _gq_terms(_flat(like), _flat(h + hb if biases else h), eps)
    n = value.shape[1]
    gq = value.sum(axis=1) / n
    if not meta_gradient:
        return gq, None
    hbar = _split(dh / n, like)
    tu = net.tangent(hbar[:nw], hbar[nw:] if biases else None)
    hu, hub = net.hvp(tu)
    w = _split(dg / n + _flat(hu + hub if biases else hu), like)
    proj = net.hvp_projection(net.tangent(w[:nw], w[nw:] if biases else None)) + net.third_projection(
        tu, hbar[:nw], tv, g
    )
    return gq, proj


def _check_weights(weights):
    if isinstance(weights, (np.ndarray, str, bytes)) or not hasattr(weights, "__len__") or len(weights) == 0:
        raise ValueError("weights must be a non-empty sequence of weight matrices (one per layer)")
    ws = [real_array(w, f"weights[{k}]") for k, w in enumerate(weights)]
    ndim = ws[0].ndim
    if ndim not in (2, 3) or any(w.ndim != ndim for w in ws):
        raise ValueError("weights must all be 2-D (one network) or all 3-D (a stack of networks, leading axis)")
    stacked = ndim == 3
    if not stacked:
        ws = [w[None] for w in ws]
    if any(w.shape[0] != ws[0].shape[0] for w in ws) or ws[0].shape[0] < 1:
        raise ValueError("weights must have the same (>= 1) number of networks on the leading axis")
    for k in range(len(ws)):
        if min(ws[k].shape[1:]) < 1:
            raise ValueError(f"weights[{k}] must have at least one row and one column, got shape {ws[k].shape}")
        if k and ws[k].shape[2] != ws[k - 1].shape[1]:
            raise ValueError(
                f"weights[{k}] must have {ws[k - 1].shape[1]} columns (the rows of weights[{k - 1}]), got shape {ws[k].shape}"
            )
    return ws, stacked


def _check_eps(eps) -> float:
    eps = real(eps, "eps")
    if not EPS_RANGE[0] <= eps <= EPS_RANGE[1]:
        raise ValueError(
            f"eps must lie in [1e-100, 1e100] (GQ involves 1 / eps and its derivative 1 / eps^2), got {eps!r}"
        )
    return eps


def _overflow_error(where: str) -> ValueError:
    return ValueError(
        f"{where} is not finite: the network's forward or backward pass overflows float64 at these weights, "
        "x / targets, slope, eps or lr; rescale them (GQ is a ratio, but the loss, gradient and Hessian are not)"
    )


def _check_loss(loss, n_classes):
    if not isinstance(loss, str) or loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
    if loss == "cross_entropy" and n_classes < 2:
        raise ValueError("weights[-1] must have >= 2 rows (classes) for loss='cross_entropy'")


def _random_batch(rng, k, n_in, n_out, batch, loss):
    if isinstance(rng, list):  # one Generator per network: network j's draws are those of a run on its own
        parts = [_random_batch(g, 1, n_in, n_out, batch, loss) for g in rng]
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
    x = rng.standard_normal((k, n_in, batch))
    if loss == "cross_entropy":
        return x, rng.integers(0, n_out, size=(k, batch))
    return x, rng.standard_normal((k, n_out, batch))


def _check_rngs(rng, kn, stacked):
    """``rng`` of :func:`metainit`: one Generator, or a list of ``kn`` (one per stacked network)."""
    if isinstance(rng, (list, tuple)):
        if not stacked or len(rng) != kn:
            raise ValueError(
                f"rng must be None, an int, a Generator, or a sequence of one per network ({kn}, stacked "
                f"weights only), got a sequence of {len(rng)}{'' if stacked else ' with unstacked weights'}"
            )
        gens = [check_rng(r) for r in rng]
        if len({id(g) for g in gens}) != len(gens):
            raise ValueError("rng must not repeat a Generator (each network needs its own stream)")
        return gens
    return check_rng(rng)


def _prepare(weights, x, targets, slope, eps, loss, biases):
    """Check the arguments of :func:`gradient_quotient` / :func:`gradient_quotient_gradient`.

    Returns ``(ws, x, targets, slope, eps, biases, stacked)`` in the internal layout: ``ws[k]`` of
    shape (K, n_{k+1}, n_k), ``x`` (K, n_0, B), labels (K, B) or targets (K, n_L, B).
    """
    ws, stacked = _check_weights(weights)
    kn, n_in, n_out = ws[0].shape[0], ws[0].shape[2], ws[-1].shape[1]
    _check_loss(loss, n_out)
    eps = _check_eps(eps)
    slope = real(slope, "slope")
    biases = check_bool(biases, "biases")
    xa = real_array(x, "x")
    if xa.ndim != (3 if stacked else 2) or xa.shape[-1] != n_in or (stacked and xa.shape[0] != kn):
        raise ValueError(f"x must have shape {'(K, ' if stacked else '('}B, {n_in}), got {xa.shape}")
    xa = np.ascontiguousarray(_mT(xa if stacked else xa[None]))
    batch = xa.shape[-1]
    if loss == "cross_entropy":
        if is_complex(targets):
            raise TypeError("targets must be integer labels, got complex numbers")
        try:
            t = np.asarray(targets)
        except ValueError as exc:  # a ragged nested sequence
            raise ValueError("targets must be a regular array of integer labels") from exc
        if (
            not np.issubdtype(t.dtype, np.integer)
            or t.size == 0
            or t.shape != ((kn, batch) if stacked else (batch,))
            or t.min() < 0
            or t.max() >= n_out
        ):
            raise ValueError(
                f"targets must be integer labels in [0, {n_out}) of shape {'(K, B)' if stacked else '(B,)'}"
            )
        t = t if stacked else t[None]
    else:
        t = real_array(targets, "targets")
        if t.shape != ((kn, batch, n_out) if stacked else (batch, n_out)):
            raise ValueError(
                f"targets must have shape {'(K, ' if stacked else '('}B, {n_out}) for loss='mse', got {t.shape}"
            )
        t = np.ascontiguousarray(_mT(t if stacked else t[None]))
    return ws, xa, t, slope, eps, biases, stacked


def gradient_quotient(
    weights: Sequence[ArrayLike],
    x: ArrayLike,
    targets: ArrayLike,
    slope: float = 0.0,
    *,
    eps: float = 1e-5,
    loss: str = "cross_entropy",
    biases: bool = False,
) -> float | np.ndarray:
    """Gradient quotient (Eq. 1 of Dauphin & Schoenholz 2019) of a network on one batch.

    Parameters
    ----------
    weights : sequence of ndarray
        ``weights[l]`` of shape ``(n_{l+1}, n_l)``; the last one gives the logits. A leading axis
        of size ``K`` on every matrix evaluates ``K`` networks at once.
    x : ndarray, shape (B, n_0) or (K, B, n_0)
        The inputs, one per row.
    targets : ndarray
        ``cross_entropy``: integer labels in ``[0, n_L)``, shape (B,) or (K, B); ``mse``: real
        targets of shape (B, n_L) or (K, B, n_L).
    slope : float
        Negative slope ``a`` of the leaky ReLU (``0``: ReLU, ``1``: linear).
    eps : float
        The ``epsilon`` of the denominator, in ``EPS_RANGE = [1e-100, 1e100]``.
    loss : {"cross_entropy", "mse"}
        Mean cross-entropy of the softmax, or ``sum (z - t)^2 / (2 B)``.
    biases : bool
        Count zero biases as parameters (they enter ``g``, ``H g`` and ``N``); a real bool.

    Returns
    -------
    float or ndarray of shape (K,)
        ``(1/N) sum_i |(H g)_i + eps s_i| / (|g_i| + eps)`` (see the module notes), finite.

    Raises
    ------
    ValueError
        Shapes that do not chain, non-finite values, ``eps`` outside ``EPS_RANGE``, an unknown
        ``loss``, labels outside ``[0, n_L)``, or a network whose loss, gradient or Hessian
        overflows float64 (e.g. weights or inputs of size 1e300, slope 1e300).
    TypeError
        ``biases`` not a bool; bools, complex numbers or strings where numbers are expected.

    References
    ----------
    Y. N. Dauphin, S. S. Schoenholz, NeurIPS 32 (2019), Eq. 1 and Fig. 2.

    Examples
    --------
    One linear unit ``z = w . x`` with loss ``z^2 / 2``: ``g = z x``, ``H = x x^T``, so
    ``H g = z |x|^2 x`` and every term of GQ is ``|x|^2`` (1.25 here, up to ``eps``):

    >>> import numpy as np
    >>> gq = gradient_quotient([np.array([[2.0, 1.0]])], np.array([[1.0, 0.5]]), np.array([[0.0]]), slope=1.0, loss="mse")
    >>> round(gq, 4)
    1.25
    """
    ws, xa, t, slope, eps, biases, stacked = _prepare(weights, x, targets, slope, eps, loss, biases)
    with np.errstate(all="ignore"):
        gq, _ = _gq_and_gradient(ws, xa, t, slope, loss, eps, biases, meta_gradient=False)
    if not np.all(np.isfinite(gq)):
        raise _overflow_error("the gradient quotient")
    return gq if stacked else float(gq[0])


@dataclass(frozen=True)
class GradientQuotient(Result):
    """Result of :func:`gradient_quotient_gradient`.

    Attributes
    ----------
    value : float or ndarray of shape (K,)
        The gradient quotient, as :func:`gradient_quotient` returns it.
    norm_gradient : ndarray, shape (L,) or (K, L)
        ``<dGQ / dW_l, W_l> = dGQ / d log|W_l|`` per matrix (``|W_l|`` its Frobenius norm, the
        direction held fixed): the derivative MetaInit's signSGD follows (its sign is that of
        ``dGQ / d|W_l|``).
    """

    value: Any
    norm_gradient: np.ndarray


def gradient_quotient_gradient(
    weights: Sequence[ArrayLike],
    x: ArrayLike,
    targets: ArrayLike,
    slope: float = 0.0,
    *,
    eps: float = 1e-5,
    loss: str = "cross_entropy",
    biases: bool = False,
) -> GradientQuotient:
    """Gradient quotient and its exact derivative in the log-norm of every matrix (one MetaInit step's work).

    Parameters
    ----------
    weights, x, targets, slope, eps, loss, biases
        As in :func:`gradient_quotient`.

    Returns
    -------
    GradientQuotient
        ``value`` (the GQ, bit for bit :func:`gradient_quotient`'s) and ``norm_gradient``, the
        projections ``<nabla_{W_l} GQ, W_l>`` computed exactly: two Hessian-vector products and a
        second-order forward pass (see the module notes), no finite differences.

    Raises
    ------
    ValueError
        As :func:`gradient_quotient`, and when the derivative overflows float64.
    TypeError
        As :func:`gradient_quotient`.

    Notes
    -----
    ``nabla_W GQ = H (bar g + H bar h) + nabla^3 L[bar h, g]`` with ``bar g = dGQ/dg`` and
    ``bar h = dGQ/d(Hg)`` (module notes; Eq. 1 and Fig. 2 of Dauphin & Schoenholz 2019, where the
    sign ``s_i`` is held constant as in the authors' code).

    Examples
    --------
    One linear unit ``z = w . x`` with loss ``z^2 / 2`` (the example of :func:`gradient_quotient`):
    every term of GQ is ``|x|^2``, independent of ``|w|`` away from ``eps``, so the derivative in
    ``log |w|`` is about ``eps``-small:

    >>> import numpy as np
    >>> r = gradient_quotient_gradient([np.array([[2.0, 1.0]])], np.array([[1.0, 0.5]]), np.array([[0.0]]), slope=1.0, loss="mse")
    >>> round(r.value, 4), bool(abs(r.norm_gradient[0]) < 1e-4)
    (1.25, True)
    """
    ws, xa, t, slope, eps, biases, stacked = _prepare(weights, x, targets, slope, eps, loss, biases)
    with np.errstate(all="ignore"):
        gq, proj = _gq_and_gradient(ws, xa, t, slope, loss, eps, biases, meta_gradient=True)
    if not (np.all(np.isfinite(gq)) and np.all(np.isfinite(proj))):
        raise _overflow_error("the gradient quotient or its derivative")
    if stacked:
        return GradientQuotient(gq, proj)
    return GradientQuotient(float(gq[0]), proj[0])


@dataclass(frozen=True)
class MetaInitResult(Result):
    """Result of :func:`metainit`.

    Attributes
    ----------
    weights : list of ndarray
        The meta-initialised matrices, same shapes as the input: ``norms[l] * sign * W_l / |W_l|``.
    norms : ndarray, shape (L,) or (K, L)
        Final Frobenius norms.
    initial_norms : ndarray, shape (L,) or (K, L)
        Norms of the input matrices.
    gq_history : ndarray, shape (steps,) or (K, steps)
        GQ of each step's batch, before that step's update.
    gq_before, gq_after : float, ndarray of shape (K,) or None
        Mean GQ over ``eval_batches`` fresh batches (the same batches for both) at the input and
        at the returned weights; ``None`` when ``eval_batches = 0`` (nothing evaluated).
    sign_flips : ndarray of int, shape (L,) or (K, L)
        How many times an update made a norm negative, flipping the matrix's sign (see notes).
    """

    weights: list
    norms: np.ndarray
    initial_norms: np.ndarray
    gq_history: np.ndarray
    gq_before: Any
    gq_after: Any
    sign_flips: np.ndarray


def metainit(
    weights: Sequence[ArrayLike],
    slope: float = 0.0,
    *,
    steps: int = 500,
    lr: float = 0.1,
    momentum: float = 0.9,
    eps: float = 1e-5,
    batch_size: int = 32,
    loss: str = "cross_entropy",
    biases: bool = False,
    eval_batches: int = 4,
    rng: int | np.random.Generator | None = None,
) -> MetaInitResult:
    """MetaInit: tune the norm of every weight matrix to minimise the gradient quotient.

    Implements the algorithm of Fig. 2 (PyTorch code) of Dauphin & Schoenholz (2019): each step
    draws a batch of standard-normal inputs with random targets, computes ``GQ`` (Eq. 1, see the module notes)
    and its exact derivative with respect to each norm, and updates the norms ``r_l`` by signSGD
    with momentum,

    .. math::

        m_l \\leftarrow \\mu\\, m_l - \\eta\\, \\mathrm{sign}(\\partial \\mathrm{GQ} / \\partial r_l),
        \\qquad r_l \\leftarrow r_l + m_l,

    keeping each matrix's direction ``W_l / |W_l|_F``.

    Parameters
    ----------
    weights : sequence of ndarray
        The starting matrices ``W^(1) .. W^(L)``, ``weights[l]`` of shape ``(n_{l+1}, n_l)``, each
        non-zero; the network is ``y^(1) = W^(1) x``, ``y^(l) = W^(l) phi_a(y^(l-1))`` and the last
        matrix gives the logits (include a read-out layer). Give every matrix a leading axis of
        size ``K`` to meta-initialise ``K`` independent networks in one vectorised run.
    slope : float
        Negative slope ``a`` of the leaky ReLU (``0``: ReLU).
    steps : int
        Number of signSGD steps, ``0 <= steps <= 10^6`` (the paper's code: 500).
    lr : float
        Step size ``eta`` in units of the Frobenius norm (> 0, finite; 0.1).
    momentum : float
        ``mu`` in ``[0, 1)`` (0.9).
    eps : float
        ``epsilon`` of the gradient quotient, in ``EPS_RANGE = [1e-100, 1e100]`` (1e-5).
    batch_size : int
        Inputs per step (>= 1; 32, as for CIFAR-10 in the paper and in Grzejdziak 2023).
    loss : {"cross_entropy", "mse"}
        ``cross_entropy`` with labels uniform over the ``n_L`` classes (the paper), or ``mse`` with
        standard-normal targets.
    biases : bool
        Count zero biases as GQ parameters (Grzejdziak's networks); they are not updated. A real bool.
    eval_batches : int
        Fresh batches for ``gq_before`` / ``gq_after``, ``0 <= eval_batches <= 10^4``.
    rng : None, int, numpy.random.SeedSequence or numpy.random.Generator, or a sequence of them
        Randomness (an int ``n`` gives exactly the stream of ``numpy.random.default_rng(n)``);
        the same ``rng`` gives the same result. With stacked weights, a sequence of ``K`` of them
        (distinct Generators) gives every network its own stream: network ``k`` then gets exactly
        the result of ``metainit`` run on network ``k`` alone with ``rng[k]`` (the stacked run is
        the batched form of per-network runs; same products per network, so equal to rounding),
        and the result does not depend on how networks are batched.

    Returns
    -------
    MetaInitResult
        Finite weights, norms and GQ values.

    Raises
    ------
    ValueError
        ``weights`` empty, not chaining, non-finite, with a zero matrix or a Frobenius norm beyond
        float64; ``steps``, ``batch_size`` or ``eval_batches`` not integers in range; ``lr <= 0``,
        ``momentum`` outside ``[0, 1)``, ``eps`` outside ``EPS_RANGE``; unknown ``loss``; a
        cross-entropy read-out with one class; arrays above 2^29 numbers; or a step at which the
        network's loss, gradient or Hessian overflows float64 (weights, slope or ``lr`` too large:
        the message names the step); a sequence ``rng`` with unstacked weights, of a length other
        than ``K`` or repeating a Generator.
    TypeError
        ``biases`` not a bool; bools, complex numbers or strings where real numbers are expected
        (``slope``, ``lr``, ``momentum``, ``eps``, array entries); a complex ``steps``,
        ``batch_size`` or ``eval_batches``; a bad ``rng`` (or entry of a sequence ``rng``).

    Notes
    -----
    Cost per step: one forward, one backward, three R-operator passes and one second-order pass,
    about 25 products of ``(n, n) x (n, B)`` matrices per layer. Measured (``benchmarks/metainit.py``;
    width 10, depth 100 plus a read-out, batch 32): 16 ms of CPU per step for one network, 3.6 ms
    per network with 32 stacked, i.e. 8 s and 1.8 s per network for 500 steps; finite differences
    over the norms would cost ~550 ms per step. The final iterate does not always have a lower GQ
    than the start: signSGD with momentum oscillates (see ``gq_history``).

    References
    ----------
    Y. N. Dauphin, S. S. Schoenholz, "MetaInit: Initializing learning by learning to initialize",
    NeurIPS 32 (2019): Eq. 1 (gradient quotient) and Fig. 2 (algorithm and defaults, PyTorch code).

    Examples
    --------
    Sixteen ReLU networks of width 10 (five hidden layers and a read-out), He start, stacked:

    >>> import numpy as np
    >>> from meanfield.init import dense_weights, metainit
    >>> rng = np.random.default_rng(0)
    >>> ws = [np.stack([dense_weights(10, 10, 2.0, rng=rng) for _ in range(16)]) for _ in range(6)]
    >>> res = metainit(ws, steps=100, rng=1)
    >>> res.norms.shape, res.gq_history.shape
    ((16, 6), (16, 100))
    >>> bool(np.median(res.gq_after / res.gq_before) < 0.1)
    True
    """
    ws, stacked = _check_weights(weights)
    kn, n_in, n_out = ws[0].shape[0], ws[0].shape[2], ws[-1].shape[1]
    _check_loss(loss, n_out)
    slope = real(slope, "slope")
    steps = int_arg(steps, "steps", 0, MAX_STEPS)
    batch_size = int_arg(batch_size, "batch_size", 1)
    eval_batches = int_arg(eval_batches, "eval_batches", 0, MAX_EVAL_BATCHES)
    lr = real(lr, "lr")
    if lr <= 0:
        raise ValueError(f"lr must be > 0, got {lr!r}")
    eps = _check_eps(eps)
    momentum = real(momentum, "momentum")
    if not 0.0 <= momentum < 1.0:
        raise ValueError(f"momentum must lie in [0, 1), got {momentum!r}")
    biases = check_bool(biases, "biases")
    widest = max(max(w.shape[1:]) for w in ws)
    check_size(kn * widest * batch_size * (len(ws) + 1), "networks * width * batch_size * (layers + 1) (activations)")
    check_size(kn * n_in * batch_size * max(eval_batches, 1), "networks * n_0 * batch_size * eval_batches")
    check_size(kn * steps, "networks * steps (gq_history)")
    rng = _check_rngs(rng, kn, stacked)
    with np.errstate(over="ignore", under="ignore"):
        initial = np.stack([np.sqrt(_dot(w, w)) for w in ws], axis=1)  # (K, L)
        if not np.all(np.isfinite(initial) & (initial > 0)):  # squares over/underflowed: scale first
            top = np.stack([np.abs(w).max(axis=(1, 2)) for w in ws], axis=1)
            unit = [w / np.where(t > 0, t, 1.0)[:, None, None] for w, t in zip(ws, top.T)]
            initial = top * np.stack([np.sqrt(_dot(u, u)) for u in unit], axis=1)
    if np.any(initial == 0):
        k = int(np.nonzero(np.any(initial == 0, axis=0))[0][0])
        raise ValueError(f"weights[{k}] must be non-zero (MetaInit keeps the direction W / |W|)")
    if not np.all(np.isfinite(initial)):
        raise ValueError("weights must have Frobenius norms inside float64 (below 1.8e308); rescale them")
    units = [w / initial[:, k, None, None] for k, w in enumerate(ws)]
    scale = initial.copy()  # signed norms: W_l = scale_l * unit_l
    memory = np.zeros_like(scale)
    flips = np.zeros(scale.shape, dtype=np.int64)
    history = np.empty((kn, steps))

    def current():
        return [s[:, None, None] * u for s, u in zip(scale.T, units)]

    eval_set = [_random_batch(rng, kn, n_in, n_out, batch_size, loss) for _ in range(eval_batches)]

    def mean_gq(mats, when):
        if not eval_set:
            return None
        with np.errstate(all="ignore"):
            out = np.mean(
                [_gq_and_gradient(mats, x, t, slope, loss, eps, biases, False)[0] for x, t in eval_set], axis=0
            )
        if not np.all(np.isfinite(out)):
            raise _overflow_error(f"the gradient quotient {when}")
        return out

    before = mean_gq(ws, "at the input weights")
    for step in range(steps):
        x, t = _random_batch(rng, kn, n_in, n_out, batch_size, loss)
        with np.errstate(all="ignore"):
            gq, proj = _gq_and_gradient(current(), x, t, slope, loss, eps, biases)
        if not (np.all(np.isfinite(gq)) and np.all(np.isfinite(proj))):
            raise _overflow_error(f"at step {step} the gradient quotient or its derivative")
        history[:, step] = gq
        # sign(dGQ/d|W_l|) = sign(<dGQ/dW_l, W_l>); the reference code's arithmetic below
        memory = momentum * memory - lr * np.sign(proj)
        sgn = np.where(scale >= 0, 1.0, -1.0)
        new = np.abs(scale) + memory
        flips += new < 0
        scale = sgn * new
    norms = np.abs(scale)
    if not np.all(np.isfinite(norms)):
        raise _overflow_error("a norm after the last step (lr too large)")
    final = current()
    after = mean_gq(final, "at the returned weights")
    if not stacked:
        final = [w[0] for w in final]
        first = [None if v is None else float(v[0]) for v in (before, after)]
        return MetaInitResult(final, norms[0], initial[0], history[0], first[0], first[1], flips[0])
    return MetaInitResult(final, norms, initial, history, before, after, flips)
