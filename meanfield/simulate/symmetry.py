"""Simulators for Blumenfeld et al. 2020 (Blumenfeld et al. 2020): ConstNet, LeakyNet and looks-linear
delta-orthogonal convolutional networks with explicit forward and backward passes.

Training is not here: the project has one training engine,
:func:`meanfield.train.train_ensemble`, and Blumenfeld et al.'s networks train on it through the
specs and noise sources of :mod:`meanfield.train.symmetric` (``ConstNetSpec``,
``LeakyNetSpec``, ``ReplicatedNetSpec``, ``SymmetryBreaking``, ``correlation_probe``). The former NumPy
loops ``train`` and ``replicated_feature_experiment`` were removed (see the changelog).

Layout: inputs and features are channels-last ``(batch, *spatial, channels)`` with periodic
boundaries; kernels have the library's one layout ``(*k, c_out, c_in)`` -- the paper's
``(*k, n_out, n_in)``, that of :mod:`meanfield.init` and :mod:`meanfield.symmetry` -- and act through
:func:`meanfield.init.periodic_conv` (zero taps of the delta kernels are skipped). Gradients are
written out by hand (no autodiff dependency) and checked against finite differences in the tests.
Activations are :mod:`meanfield.activations`' ``relu`` and ``leaky_relu`` evaluated on the
backend (:func:`~meanfield.simulate.activation_fn`).

Randomness: :func:`looks_linear_delta_orthogonal_forward` and the ``dropout`` masks of the forward
passes take ``rng`` (None, an int, a SeedSequence or a NumPy
Generator; the rule of :mod:`meanfield.backend`: an int ``n`` draws the numbers of
``numpy.random.default_rng(n)``, None fresh entropy).

Backends: the networks and :func:`looks_linear_delta_orthogonal_forward` take ``backend``
(:mod:`meanfield.backend`) and run every convolution, kernel construction and random draw there.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from meanfield import Result
from meanfield import init as mf_init
from meanfield._checks import is_backend_array
from meanfield.activations import get_activation
from meanfield.backend import Backend, astype, concat, get_backend, matrix_transpose, to_numpy
from meanfield.checks import as_float_array, check_bool, check_int, check_scalar
from meanfield.init import periodic_conv, periodic_conv_transpose, periodic_conv_weight_grad

from ._common import activation_fn, check_elements

__all__ = [
    "ConstNet",
    "LeakyNet",
    "LooksLinearForward",
    "looks_linear_delta_orthogonal_forward",
    "softmax_xent",
]


def softmax_xent(logits: Any, labels: Any, xp: Any = np) -> tuple[float, Any]:
    """Mean cross-entropy and its gradient with respect to ``logits`` (batch, classes).

    Parameters
    ----------
    logits : array, shape (batch, classes)
    labels : array of int, shape (batch,)
        Integer class labels; float labels of integral value (``2.0``) are accepted as integers.
    xp : module
        The array namespace of ``logits`` (``Backend.xp`` of any backend of :mod:`meanfield.backend`:
        array-API calls only); ``labels`` may be a NumPy array or an array of that namespace.

    Returns
    -------
    (float, array)
        The loss and ``dloss / dlogits`` (shape of ``logits``, on its device).

    Raises
    ------
    TypeError
        Complex or non-numeric ``logits``; boolean, complex or non-numeric ``labels``.
    ValueError
        ``logits`` not a finite non-empty (batch, classes) array; ``labels`` not of shape (batch,),
        non-integral or non-finite, or outside ``[0, classes)``.
    """
    logits, onehot = _xent_args(logits, labels, xp)
    z = logits - xp.max(logits, axis=1, keepdims=True)
    p = xp.exp(z)
    p = p / xp.sum(p, axis=1, keepdims=True)
    n = logits.shape[0]
    # p at the labels as a one-hot sum (exact: one term, the others add zeros); no fancy indexing
    loss = float(-xp.mean(xp.log(xp.sum(p * onehot, axis=1) + 1e-300)))
    return loss, (p - onehot) / n


def _head(head: ArrayLike | None, shape: tuple[int, ...]) -> np.ndarray | None:
    """A given classifier head as a finite float64 array of ``shape`` (None stays None)."""
    if head is None:
        return None
    if isinstance(head, np.ndarray) and head.dtype == np.bool_:
        raise TypeError("head must hold real numbers, got booleans")
    head = as_float_array(head, "head")
    if head.shape != tuple(shape):
        raise ValueError(f"head must have shape (n_classes, width) = {tuple(shape)}, got {head.shape}")
    return head


def _labels(labels: Any, n: int, n_classes: int, name: str = "labels") -> np.ndarray:
    """``labels`` as an int64 NumPy array of shape (n,) with entries in ``[0, n_classes)``."""
    if isinstance(labels, (str, bytes)) or labels is None:
        raise TypeError(f"{name} must be an array of integer class labels, got {labels!r}")
    try:
        arr = np.asarray(to_numpy(labels))
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a regular array of integer class labels") from exc
    if arr.dtype == np.bool_ or arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must hold integer class labels, got dtype {arr.dtype}")
    if arr.dtype.kind == "f" and not (np.all(np.isfinite(arr)) and np.all(arr == np.round(arr))):
        raise ValueError(f"{name} must hold integer class labels, got non-integral or non-finite values")
    if arr.shape != (n,):
        raise ValueError(f"{name} must have shape (batch,) = ({n},), got {arr.shape}")
    if n and (arr.min() < 0 or arr.max() >= n_classes):
        raise ValueError(f"{name} must lie in [0, {n_classes}) (the number of classes), got {arr.min()} .. {arr.max()}")
    return arr.astype(np.int64)


def _xent_args(logits: Any, labels: Any, xp: Any) -> tuple[Any, Any]:
    if xp is np:
        if isinstance(logits, np.ndarray) and logits.dtype == np.bool_:
            raise TypeError("logits must hold real numbers, got booleans")
        logits = as_float_array(logits, "logits")
    elif not hasattr(logits, "ndim"):
        raise TypeError(f"logits must be an array of the backend {xp.__name__}, got {type(logits).__name__}")
    if logits.ndim != 2 or logits.shape[0] == 0 or logits.shape[1] == 0:
        raise ValueError(f"logits must be a non-empty (batch, classes) array, got shape {logits.shape}")
    lab = _labels(labels, logits.shape[0], logits.shape[1])
    onehot = (lab[:, None] == np.arange(logits.shape[1])).astype(np.float64)
    if xp is np:
        return logits, onehot
    on_device = {} if hasattr(logits, "get") else {"device": logits.device}  # CuPy: the current device
    return logits, xp.asarray(onehot, **on_device)


def _input(x: Any, b: Backend) -> Any:
    """A network's input as a finite float64 array of backend ``b`` (the one check of a forward pass:
    the convolutions inside run unchecked, and the logits and gradients are checked at the end)."""
    if b.name != "numpy" and is_backend_array(b, x):
        xp = b.xp
        if not xp.isdtype(x.dtype, ("real floating", "integral")):
            raise TypeError(f"x must be a real array, got dtype {x.dtype}")
        x = astype(xp, x, xp.float64) if x.dtype != xp.float64 else x
        if not bool(xp.all(xp.isfinite(x))):
            raise ValueError("x must be finite (no NaN or infinity)")
        return x
    if isinstance(x, (bool, np.bool_)) or (isinstance(x, np.ndarray) and x.dtype == np.bool_):
        raise TypeError("x must be real numbers, got booleans")
    return b.asarray(as_float_array(to_numpy(x) if hasattr(x, "get") else x, "x"))


def _forward_arguments(backend: Any, dropout: Any, rng: Any, keep: Any) -> tuple[Backend, float, Any, bool]:
    """The checked ``(backend, dropout, rng, keep)`` of a forward pass (``rng`` is converted only when given or when
    ``dropout > 0``)."""
    b = get_backend(backend)
    dropout = _fraction(dropout, "dropout")
    keep = check_bool(keep, "keep")
    return b, dropout, b.rng(rng) if dropout > 0 or rng is not None else None, keep


def _finite(xp: Any, arrays: Any, what: str) -> None:
    """``ValueError`` when a forward or backward pass overflowed (unchecked convolutions inside)."""
    if not all(bool(xp.all(xp.isfinite(a))) for a in arrays):
        raise ValueError(f"the {what} are not finite: the signal overflowed float64 (rescale the input or the weights)")


def _bn_forward(a, xp, eps=1e-5):
    axes = tuple(range(a.ndim - 1))
    mu = xp.mean(a, axis=axes, keepdims=True)
    var = xp.mean((a - mu) ** 2, axis=axes, keepdims=True)
    inv = 1.0 / xp.sqrt(var + eps)
    y = (a - mu) * inv
    return y, (y, inv, xp)


def _bn_backward(dy, cache):
    y, inv, xp = cache
    axes = tuple(range(dy.ndim - 1))
    return inv * (dy - xp.mean(dy, axis=axes, keepdims=True) - y * xp.mean(dy * y, axis=axes, keepdims=True))


def _subsample(a, s, sd):
    if s == 1:
        return a
    return a[(slice(None),) + (slice(None, None, s),) * sd + (Ellipsis,)]


def _upsample_zeros(g, s, shape, b):
    """``g`` on every ``s``-th position of a zero array of ``shape`` (on backend ``b``)."""
    if s == 1:
        return g
    out = b.full(tuple(shape), 0.0)
    out[(slice(None),) + (slice(None, None, s),) * (len(shape) - 2) + (Ellipsis,)] = g
    return out


def _readout(xp, pooled, p):
    """Logits ``pooled @ head^T + bias``."""
    return pooled @ matrix_transpose(xp, p["head"]) + p["bias"]


def _readout_backward(xp, dlogits, pooled, p, sd, shape):
    """Head / bias gradients and ``dL/da`` of the last features (``shape``), spread evenly over positions."""
    grads = {"head": matrix_transpose(xp, dlogits) @ pooled, "bias": xp.sum(dlogits, axis=0)}
    n_sp = math.prod(int(n) for n in shape[1:-1])
    up = (dlogits @ p["head"])[(slice(None),) + (None,) * sd + (slice(None),)] / n_sp
    return grads, xp.broadcast_to(up, tuple(shape)) + 0.0  # a fresh array, not a broadcast view


@dataclass
class ConstNet:
    """A ConstNet (Blumenfeld et al. 2020, Sec. 3.1 eq. 4, App. A) with trainable tensors, forward and backward passes.

    ``a^0 = first * x`` (optionally batch-normalised), then per stage ConstNet blocks
    ``a <- a + W * g(a)`` and, between stages, widening blocks
    ``a <- subsample_s(skip * a) + subsample_s(W * g(a))`` with ``skip`` the constant 1 x 1
    ``1 / n`` convolution; ``g = relu`` (``relu o batchnorm`` with ``batchnorm=True``, batch
    statistics, no affine); output ``logits = head @ mean_spatial(a) + bias``.

    Build with :meth:`initial` (the paper's initialisation from :func:`meanfield.init.constnet`).
    ``params`` maps names to arrays: ``first``, ``block{s}_{i}``, ``skip{s}``, ``branch{s}``,
    ``head``, ``bias``.
    """

    params: dict
    stride: int
    spatial_dims: int
    batchnorm: bool = False
    backend: object = "numpy"
    order: list = field(default_factory=list)

    @classmethod
    def initial(
        cls,
        widths: Sequence[int] = (4, 8, 16),
        blocks_per_stage: int | Sequence[int] = 2,
        n_input: int = 3,
        n_classes: int = 10,
        kernel_shape: Sequence[int] = (3, 3),
        stride: int = 2,
        batchnorm: bool = False,
        head: ArrayLike | None = None,
        backend: str | Backend = "numpy",
    ) -> ConstNet:
        """The paper's initialisation; ``head`` (n_classes, widths[-1]) replaces the zero head if given.

        Raises ``TypeError`` / ``ValueError`` naming the argument for bad sizes (see
        :func:`meanfield.init.constnet`), a non-bool ``batchnorm`` or a ``head`` that is not a finite
        real array of shape (n_classes, widths[-1]).
        """
        b = get_backend(backend)
        batchnorm = check_bool(batchnorm, "batchnorm")
        init = mf_init.constnet(widths, blocks_per_stage, n_input, n_classes, kernel_shape, stride)
        head = _head(head, init.head.shape)
        p = {"first": init.first}
        order = []
        for s, stage in enumerate(init.blocks):
            for i, w in enumerate(stage):
                p[f"block{s}_{i}"] = w
                order.append(("block", f"block{s}_{i}"))
            if s < len(init.widen_skip):
                p[f"skip{s}"] = init.widen_skip[s]
                p[f"branch{s}"] = init.widen_branch[s]
                order.append(("widen", s))
        p["head"] = np.array(init.head if head is None else head, dtype=float)
        p["bias"] = np.zeros(n_classes)
        p = {k: b.asarray(v) for k, v in p.items()}
        return cls(p, stride, len(kernel_shape), batchnorm, b, order)

    def _g(self, a, xp, mask=None):
        cache = None
        if self.batchnorm:
            a, cache = _bn_forward(a, xp)
        out = activation_fn("relu", self.backend)[0](a)
        if mask is not None:
            out = out * mask
        return out, (a, cache, mask)

    def _g_back(self, dout, gcache):
        a, cache, mask = gcache
        if mask is not None:
            dout = dout * mask
        d = dout * activation_fn("relu", self.backend)[1](a)
        return _bn_backward(d, cache) if self.batchnorm else d

    def forward(self, x: ArrayLike, dropout: float = 0.0, rng: Any = None, keep: bool = False) -> Any:
        """Logits; with ``keep=True`` also the list of pre-activations ``a^0, a^1, ...``.

        ``rng`` (None, an int, a SeedSequence, a NumPy Generator or one of the network's backend)
        draws the dropout masks when ``dropout > 0``; ``dropout`` in [0, 1), ``keep`` a bool.
        """
        b, dropout, rng, keep = _forward_arguments(self.backend, dropout, rng, keep)
        xp = b.xp
        sd, s = self.spatial_dims, self.stride
        p = self.params
        x = _input(x, b)
        a = periodic_conv(x, p["first"], sd, b, check_finite=False)
        bn0 = None
        if self.batchnorm:
            a, bn0 = _bn_forward(a, xp)
        feats = [a] if keep else None
        tape = []

        def mask_for(shape):
            if dropout <= 0:
                return None
            return astype(xp, rng.random(shape) >= dropout, xp.float64) / (1.0 - dropout)

        for kind, key in self.order:
            g, gc = self._g(a, xp, mask_for(a.shape))
            if kind == "block":
                out = a + periodic_conv(g, p[key], sd, b, check_finite=False)
                tape.append((kind, key, a, g, gc))
            else:
                sub = _subsample(a, s, sd)
                out = periodic_conv(sub, p[f"skip{key}"], sd, b, check_finite=False) + _subsample(
                    periodic_conv(g, p[f"branch{key}"], sd, b, check_finite=False), s, sd
                )
                tape.append((kind, key, a, g, gc, sub))
            a = out
            if keep:
                feats.append(a)
        pooled = xp.mean(a, axis=tuple(range(1, 1 + sd)))
        logits = _readout(xp, pooled, p)
        _finite(xp, [logits, pooled], "logits")
        self._last = (x, bn0, tape, a, pooled)
        return (logits, feats) if keep else logits

    def backward(self, dlogits: Any, keep: bool = False) -> Any:
        """Gradients of the last :meth:`forward` for upstream ``dlogits``; with ``keep`` also the
        backward features ``beta^l = dL / da^l`` (same order as the forward features)."""
        b = get_backend(self.backend)
        xp = b.xp
        sd, s = self.spatial_dims, self.stride
        p = self.params
        x, bn0, tape, a_last, pooled = self._last
        grads, beta = _readout_backward(xp, dlogits, pooled, p, sd, a_last.shape)
        betas = [beta] if keep else None
        ks = lambda w: w.shape[:sd]  # noqa: E731
        for entry in reversed(tape):
            kind, key, a, g, gc = entry[:5]
            if kind == "block":
                w = p[key]
                grads[key] = periodic_conv_weight_grad(g, beta, ks(w), sum_leading=1, backend=b, check_finite=False)
                dg = periodic_conv_transpose(beta, w, sd, b, check_finite=False)
                beta = beta + self._g_back(dg, gc)
            else:
                sub = entry[5]
                wskip, wb = p[f"skip{key}"], p[f"branch{key}"]
                grads[f"skip{key}"] = periodic_conv_weight_grad(
                    sub, beta, ks(wskip), sum_leading=1, backend=b, check_finite=False
                )
                dsub = periodic_conv_transpose(beta, wskip, sd, b, check_finite=False)
                full_shape = tuple(g.shape[:-1]) + (wb.shape[-2],)
                dconv = _upsample_zeros(beta, s, full_shape, b)
                grads[f"branch{key}"] = periodic_conv_weight_grad(
                    g, dconv, ks(wb), sum_leading=1, backend=b, check_finite=False
                )
                dg = periodic_conv_transpose(dconv, wb, sd, b, check_finite=False)
                beta = _upsample_zeros(dsub, s, a.shape, b) + self._g_back(dg, gc)
            if keep:
                betas.append(beta)
        if self.batchnorm:
            beta_in = _bn_backward(beta, bn0)
        else:
            beta_in = beta
        grads["first"] = periodic_conv_weight_grad(
            x, beta_in, ks(p["first"]), sum_leading=1, backend=b, check_finite=False
        )
        _finite(xp, grads.values(), "gradients")
        if keep:
            return grads, betas[::-1]
        return grads

    def conv_names(self) -> list[str]:
        """Names of the convolution tensors in network order (the ones C_f, C_b are measured on)."""
        names = ["first"]
        for kind, key in self.order:
            names += [key] if kind == "block" else [f"skip{key}", f"branch{key}"]
        return names


@dataclass
class LeakyNet:
    """A LeakyNet (Blumenfeld et al. 2020, Sec. 5.1, App. H): averaging first conv, then ``h^l = W_l * sigma_a(h^{l-1})``
    with ``W_l = s_l Delta (x) M_l`` (``M_l`` = ``I`` or ``11^T/n``, ``s_l = -1/a`` on odd layers, ``a``
    the leaky ReLU's negative ``slope``, the paper's ``rho``), global average pooling and a
    (zero-initialised) dense head."""

    params: dict
    slope: float
    spatial_dims: int
    backend: object = "numpy"
    depth: int = 0

    @classmethod
    def initial(
        cls,
        kinds: Sequence[str],
        n: int = 8,
        n_input: int = 3,
        n_classes: int = 10,
        kernel_shape: Sequence[int] = (3, 3),
        slope: float | None = None,
        head: ArrayLike | None = None,
        gamma: Sequence[float] | None = None,
        backend: str | Backend = "numpy",
        *,
        rho: float | None = None,
    ) -> LeakyNet:
        """The paper's initialisation (:func:`meanfield.init.leakynet`); ``slope`` defaults to 0.01.

        Raises ``TypeError`` / ``ValueError`` naming the argument for bad sizes (``n``, ``n_input``,
        ``n_classes`` integers >= 1, a head of at most ``MAX_ELEMENTS`` entries) or a ``head`` that is not
        a finite real array of shape (n_classes, n).

        ``rho`` is the former name of ``slope`` (deprecated; give one of the two).
        """
        if slope is not None and rho is not None:
            raise TypeError("give slope (or its former name rho), not both")
        slope = 0.01 if slope is None and rho is None else (rho if slope is None else slope)
        slope = check_scalar(slope, "slope")
        b = get_backend(backend)
        n = check_int(n, "n", 1)
        n_input = check_int(n_input, "n_input", 1, 2**31)
        n_classes = check_int(n_classes, "n_classes", 1)
        check_elements(n_classes * n, "the head, n_classes * n,")
        head = _head(head, (n_classes, n))
        p = {"first": mf_init.averaging_conv(n, n_input, kernel_shape)}
        for i, w in enumerate(mf_init.leakynet(kinds, n, slope, kernel_shape, gamma)):
            p[f"layer{i + 1}"] = w
        p["head"] = np.zeros((n_classes, n)) if head is None else head
        p["bias"] = np.zeros(n_classes)
        return cls({k: b.asarray(v) for k, v in p.items()}, slope, len(kernel_shape), b, len(list(kinds)))

    def _phi(self) -> tuple[Any, Any]:
        return activation_fn(get_activation("leaky_relu", slope=self.slope), self.backend)

    def forward(self, x: ArrayLike, dropout: float = 0.0, rng: Any = None, keep: bool = False) -> Any:
        """Logits; with ``keep=True`` also the pre-activations ``h^0 .. h^depth``.

        ``rng`` draws the dropout masks when ``dropout > 0`` (as in :meth:`ConstNet.forward`).
        """
        b, dropout, rng, keep = _forward_arguments(self.backend, dropout, rng, keep)
        sd, p = self.spatial_dims, self.params
        phi = self._phi()[0]
        x = _input(x, b)
        h = periodic_conv(x, p["first"], sd, b, check_finite=False)
        feats = [h]
        acts, masks = [], []
        for layer in range(1, self.depth + 1):
            act = phi(h)
            mask = None
            if dropout > 0:
                mask = astype(b.xp, rng.random(tuple(act.shape)) >= dropout, b.xp.float64) / (1.0 - dropout)
                act = act * mask
            acts.append(act)
            masks.append(mask)
            h = periodic_conv(act, p[f"layer{layer}"], sd, b, check_finite=False)
            feats.append(h)
        pooled = b.xp.mean(h, axis=tuple(range(1, 1 + sd)))
        self._last = (x, feats, acts, masks, pooled)
        logits = _readout(b.xp, pooled, p)
        _finite(b.xp, [logits, pooled], "logits")
        return (logits, feats) if keep else logits

    def backward(self, dlogits: Any, keep: bool = False) -> Any:
        """Gradients of the last :meth:`forward`; with ``keep`` also ``dL / dh^l`` for every layer."""
        b = get_backend(self.backend)
        xp = b.xp
        sd, p = self.spatial_dims, self.params
        dphi = self._phi()[1]
        x, feats, acts, masks, pooled = self._last
        grads, beta = _readout_backward(xp, dlogits, pooled, p, sd, feats[-1].shape)
        betas = [beta]
        for layer in range(self.depth, 0, -1):
            w = p[f"layer{layer}"]
            grads[f"layer{layer}"] = periodic_conv_weight_grad(
                acts[layer - 1], beta, w.shape[:sd], sum_leading=1, backend=b, check_finite=False
            )
            dact = periodic_conv_transpose(beta, w, sd, b, check_finite=False)
            if masks[layer - 1] is not None:
                dact = dact * masks[layer - 1]
            beta = dact * dphi(feats[layer - 1])
            betas.append(beta)
        grads["first"] = periodic_conv_weight_grad(
            x, beta, p["first"].shape[:sd], sum_leading=1, backend=b, check_finite=False
        )
        _finite(xp, grads.values(), "gradients")
        return (grads, betas[::-1]) if keep else grads

    def conv_names(self) -> list[str]:
        """Names of the convolution tensors in network order."""
        return ["first"] + [f"layer{i}" for i in range(1, self.depth + 1)]


def _fraction(p, name):
    value = check_scalar(p, name)
    if not 0.0 <= value < 1.0:
        raise ValueError(f"{name} must lie in [0, 1), got {value}")
    return value


@dataclass(frozen=True)
class LooksLinearForward(Result):
    """The layers of a looks-linear delta-orthogonal ReLU network (:func:`looks_linear_delta_orthogonal_forward`).

    Attributes
    ----------
    pre : list of ndarray, each ``(batch, *spatial, width)``
        Pre-activations of layers 1 .. depth.
    us : list of ndarray, each (width / 2, width / 2)
        The orthogonal block ``U`` (times ``sqrt(sigma_w2) = 1``) of each layer's centre tap.
    jvp : list of ndarray or None
        The tangent pushed through each layer (forward-mode Jacobian-vector product), or None.

    ``pre, us, jvp = looks_linear_delta_orthogonal_forward(...)`` unpacks the three fields.
    """

    pre: list
    us: list
    jvp: list | None

    def __iter__(self) -> Iterator[Any]:
        return iter((self.pre, self.us, self.jvp))


def looks_linear_delta_orthogonal_forward(
    x: ArrayLike,
    depth: int,
    width: int,
    kernel_shape: int | Sequence[int] = (3, 3),
    *,
    rng: Any = None,
    tangent: ArrayLike | None = None,
    backend: str | Backend = "numpy",
) -> LooksLinearForward:
    """Pre-activations of a ReLU network with eq. 8 kernels on the augmented input ``[x, 0]`` (App. B).

    Parameters
    ----------
    x : array_like, shape ``(batch, *spatial, width / 2)``
    depth : int
        Number of convolutions (>= 0).
    width : int
        Channels of every layer (even, >= 2).
    kernel_shape : int or tuple of 1 or 2 odd ints
        One spatial size per axis of ``x`` between the batch and channel axes.
    rng : None, int, SeedSequence or numpy.random.Generator
        Draws the orthogonal blocks (:func:`meanfield.init.looks_linear_delta_orthogonal`), one
        stream for all layers (on another backend: that backend's Generator from
        :meth:`meanfield.backend.Backend.rng`).
    tangent : array_like like x, optional
        Also push this input direction through the linearisation (forward-mode Jacobian-vector product).
    backend : str or Backend
        Array backend (:data:`meanfield.backend.BACKENDS`): the kernels are drawn and built there
        and every convolution runs there; the fields of the result are NumPy arrays. NumPy and
        ``array_api_strict`` give the same numbers for the same ``rng``.

    Returns
    -------
    LooksLinearForward

    Raises
    ------
    TypeError, ValueError
        Arguments out of range or of the wrong type (odd ``width``, shapes that do not match).
    ImportError
        A ``backend`` whose package is not installed.

    Notes
    -----
    Blumenfeld et al. 2020, App. B, eqs. 7-9: the network is linear on the augmented input,
    ``h^l = [v^l, -v^l]`` with ``v^l = U_l ... U_1 x`` (``relu(v) - relu(-v) = v``).

    Examples
    --------
    >>> x = np.random.default_rng(0).standard_normal((2, 5, 2))   # batch 2, 5 positions, width / 2 = 2
    >>> out = looks_linear_delta_orthogonal_forward(x, depth=3, width=4, kernel_shape=3, rng=0)
    >>> v = x
    >>> for u in out.us:
    ...     v = v @ u.T
    >>> bool(np.allclose(out.pre[-1], np.concatenate([v, -v], axis=-1)))
    True
    """
    b = get_backend(backend)
    rng = b.rng(rng)
    x = as_float_array(x, "x")
    depth = check_int(depth, "depth", 0)
    width = check_int(width, "width", 2)
    if isinstance(kernel_shape, (int, np.integer)) and not isinstance(kernel_shape, (bool, np.bool_)):
        kernel_shape = (kernel_shape,)
    if not isinstance(kernel_shape, (tuple, list)) or len(kernel_shape) not in (1, 2):
        exc = TypeError if isinstance(kernel_shape, (complex, np.complexfloating)) else ValueError
        raise exc(f"kernel_shape must be an odd int or a tuple of 1 or 2 odd ints, got {kernel_shape!r}")
    sd = len(kernel_shape)
    if width % 2 or x.ndim != sd + 2 or x.shape[-1] != width // 2 or x.size == 0:
        raise ValueError(
            f"width must be even and x of shape (batch, *spatial ({sd} axes), width/2), got width={width}, x.shape={x.shape}"
        )
    check_elements(x.size * 2 * depth * (2 if tangent is not None else 1), "the pre-activations of all layers")
    if tangent is not None:
        tangent = as_float_array(tangent, "tangent")
        if tangent.shape != x.shape:
            raise ValueError(f"tangent must have x's shape {x.shape}, got {tangent.shape}")
    xp = b.xp
    phi, dphi = activation_fn("relu", b)

    def augmented(a):  # [a, 0] on the backend
        a = b.asarray(a)
        return concat(xp, [a, xp.zeros_like(a)], axis=-1)

    xb = augmented(x)
    tb = None if tangent is None else augmented(tangent)
    pre, us, jvp = [], [], []
    h, t = xb, tb
    for layer in range(depth):
        w = mf_init.looks_linear_delta_orthogonal(width, kernel_shape, rng=rng, backend=b)  # (*k, width, width)
        us.append(w[tuple(k // 2 for k in w.shape[:sd]) + (Ellipsis,)][: width // 2, : width // 2])
        if layer == 0:
            inp, tin = h, t
        else:
            inp = phi(h)
            tin = None if t is None else t * dphi(h)
        h = periodic_conv(inp, w, sd, b)
        pre.append(h)
        if t is not None:
            t = periodic_conv(tin, w, sd, b)
            jvp.append(t)
    host = [to_numpy(a) for a in pre], [to_numpy(u) for u in us]
    return LooksLinearForward(*host, [to_numpy(a) for a in jvp] if tangent is not None else None)
