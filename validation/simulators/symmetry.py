"""Simulators for seed 000 (Blumenfeld et al. 2020): ConstNet, LeakyNet, looks-linear delta-orthogonal
convolutional networks with explicit forward and backward passes, full-batch training, and the
two-layer replicated-feature experiment of App. E.

Layout: inputs and features are channels-last ``(batch, *spatial, channels)`` with periodic
boundaries; kernels have the library's one layout ``(*k, c_out, c_in)`` -- the paper's
``(*k, n_out, n_in)``, that of :mod:`meanfield.init` and :mod:`meanfield.symmetry` -- and act through
:func:`meanfield.init.periodic_conv` (zero taps of the delta kernels are skipped). Gradients are
written out by hand (no autodiff dependency) and checked against finite differences in the tests.
Activations are :mod:`meanfield.activations`' ``relu`` and ``leaky_relu`` evaluated on the
backend (:func:`~meanfield.validation.simulators.activation_fn`).

Randomness: :func:`train`, :func:`looks_linear_delta_orthogonal_forward` and
:func:`replicated_feature_experiment` take ``rng`` (None, an int, a SeedSequence or a NumPy
Generator; the rule of :mod:`meanfield.backend`: an int ``n`` draws the numbers of
``numpy.random.default_rng(n)``, None fresh entropy).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from meanfield import Result, symmetry
from meanfield import init as mf_init
from meanfield.activations import get_activation
from meanfield.backend import Backend, astype, get_backend, matrix_transpose, to_numpy
from meanfield.checks import as_float_array, check_bool, check_int, check_rng, check_scalar
from meanfield.init import dense_weights, periodic_conv, periodic_conv_transpose, periodic_conv_weight_grad

from ._common import activation_fn, check_elements, check_work

__all__ = [
    "ConstNet",
    "LeakyNet",
    "LooksLinearForward",
    "ReplicatedFeatureResult",
    "TrainingRecord",
    "looks_linear_delta_orthogonal_forward",
    "replicated_feature_experiment",
    "softmax_xent",
    "train",
]


def softmax_xent(logits: Any, labels: Any, xp: Any = np) -> tuple[float, Any]:
    """Mean cross-entropy and its gradient with respect to ``logits`` (batch, classes).

    Parameters
    ----------
    logits : array, shape (batch, classes)
    labels : array of int, shape (batch,)
    xp : module
        The array namespace of ``logits`` (``numpy`` or ``cupy``).

    Returns
    -------
    (float, array)
        The loss and ``dloss / dlogits`` (shape of ``logits``).

    Raises
    ------
    TypeError
        Complex or non-numeric ``logits``; ``labels`` that are not integers.
    ValueError
        ``logits`` not a finite non-empty (batch, classes) array; ``labels`` not of shape (batch,)
        or outside ``[0, classes)``.
    """
    logits, labels = _xent_args(logits, labels, xp)
    z = logits - logits.max(axis=1, keepdims=True)
    p = xp.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    n = logits.shape[0]
    loss = float(-xp.log(p[xp.arange(n), labels] + 1e-300).mean())
    g = p.copy()
    g[xp.arange(n), labels] -= 1.0
    return loss, g / n


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
    return logits, (lab if xp is np else xp.asarray(lab))


def _input(x: Any, b: Backend) -> Any:
    """A network's input as a finite float64 array of backend ``b`` (the one check of a forward pass:
    the convolutions inside run unchecked, and the logits and gradients are checked at the end)."""
    if b.name != "numpy" and _is_backend_array(b, x):
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


def _is_backend_array(b: Backend, x: Any) -> bool:
    """Whether ``x`` is an array of the (non-NumPy) backend ``b``."""
    if b.name == "cupy":
        return isinstance(x, b.xp.ndarray)
    if b.name == "torch":
        import torch

        return isinstance(x, torch.Tensor)
    return not isinstance(x, np.ndarray) and type(x).__module__.startswith(b.xp.__name__)


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
    """A ConstNet (seed 000, Sec. 3.1 eq. 4, App. A) with trainable tensors, forward and backward passes.

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
        b = get_backend(self.backend)
        dropout = _fraction(dropout, "dropout")
        keep = check_bool(keep, "keep")
        rng = b.rng(rng) if dropout > 0 or rng is not None else None
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
    """A LeakyNet (seed 000, Sec. 5.1, App. H): averaging first conv, then ``h^l = W_l * sigma_a(h^{l-1})``
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
        b = get_backend(self.backend)
        dropout = _fraction(dropout, "dropout")
        keep = check_bool(keep, "keep")
        rng = b.rng(rng) if dropout > 0 or rng is not None else None
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


@dataclass(frozen=True)
class TrainingRecord(Result):
    """Per-step measurements of :func:`train` (NumPy arrays).

    Attributes
    ----------
    names : list of str
        Convolution tensors, in network order.
    one_minus_cf, one_minus_cb, one_minus_ct : ndarray, shape (steps + 1, n_tensors)
        ``1 - C_f``, ``1 - C_b`` and ``1 - C_t`` (cancellation-free, :mod:`meanfield.symmetry`)
        before each step; 0 where a tensor has a single channel on that side.
    loss : ndarray, shape (steps + 1,)
    forward_ratio, backward_ratio : ndarray, shape (steps + 1, n_features) or None
        :func:`meanfield.symmetry.perturbation_ratio` of the forward features ``a^l`` and of the
        backward features ``dL/da^l`` (recorded with ``ratios=True``).
    train_accuracy : ndarray, shape (steps + 1,) or None
        Fraction of the training inputs classified correctly by the forward pass of each step (with
        its dropout masks, as trained); None from records made before this field existed.
    test_accuracy : ndarray, shape (n_evaluations,) or None
        Accuracy on ``(x_test, y_test)``, without dropout, at the steps ``test_steps`` (None when no
        test set was given).
    test_steps : ndarray of int or None
        The steps at which ``test_accuracy`` was measured: every ``eval_every``-th and the last.
    """

    names: list
    one_minus_cf: np.ndarray
    one_minus_cb: np.ndarray
    one_minus_ct: np.ndarray
    loss: np.ndarray
    forward_ratio: np.ndarray | None
    backward_ratio: np.ndarray | None
    train_accuracy: np.ndarray | None = None
    test_accuracy: np.ndarray | None = None
    test_steps: np.ndarray | None = None


def _fraction(p, name):
    value = check_scalar(p, name)
    if not 0.0 <= value < 1.0:
        raise ValueError(f"{name} must lie in [0, 1), got {value}")
    return value


def _nonnegative(x, name):
    value = check_scalar(x, name)
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return value


def _noise(rng: Any, shape: tuple[int, ...], xp: Any, kernel: bool) -> Any:
    """Standard normal noise of ``shape``; for a kernel ``(*k, c_out, c_in)`` drawn in ``(*k, c_in, c_out)``
    order (a transposed view), so that a given ``rng`` reproduces the runs of the earlier kernel layout."""
    if not kernel:
        return rng.standard_normal(shape)
    return xp.swapaxes(rng.standard_normal(shape[:-2] + (shape[-1], shape[-2])), -1, -2)


def train(
    net: ConstNet | LeakyNet,
    x: ArrayLike,
    y: ArrayLike,
    steps: int,
    lr: float = 0.1,
    dropout: float = 0.0,
    grad_noise: float = 0.0,
    relative_noise: bool = False,
    *,
    rng: Any = None,
    ratios: bool = False,
    x_test: ArrayLike | None = None,
    y_test: ArrayLike | None = None,
    eval_every: int = 1,
) -> TrainingRecord:
    """Deterministic full-batch gradient descent on ``(x, y)``, optionally with dropout on every
    activation or Gaussian noise of standard deviation ``grad_noise`` added to every gradient entry
    (``relative_noise=True``: ``grad_noise`` times the tensor's root-mean-square gradient, a model of
    rounding noise in non-deterministic reductions, which scales with the numbers summed).

    With neither, nothing random enters and a network with symmetric features keeps them: C_f and
    C_b stay exactly 1 (the "Deterministic" row of Table 1 of seed 000).

    Parameters
    ----------
    net : ConstNet or LeakyNet
        Trained in place.
    x : array, shape ``(batch, *spatial, n_input)``
    y : array of int, shape (batch,)
    steps : int
        Gradient steps (>= 0); the measures are recorded before each and after the last.
    lr : float
        Learning rate (> 0).
    dropout : float
        Dropout probability in [0, 1) on every activation.
    grad_noise : float
        Standard deviation (>= 0) of the noise added to every gradient entry.
    relative_noise : bool
        Scale ``grad_noise`` by each tensor's root-mean-square gradient.
    rng : None, int, SeedSequence or numpy.random.Generator
        Draws the dropout masks and the gradient noise; validated even when neither is used.
    ratios : bool
        Also record the perturbation ratios of the forward and backward features.
    x_test, y_test : array_like, optional
        A held-out set (shapes as ``x``, ``y``); its accuracy is recorded before each step and
        after the last (seed 000 reports test accuracy, Tables 1-4).
    eval_every : int
        Measure the test accuracy every ``eval_every`` steps (>= 1) and after the last.

    Returns
    -------
    TrainingRecord

    Raises
    ------
    TypeError, ValueError
        Arguments out of range or of the wrong type; ``ValueError`` when training diverges (lower ``lr``).

    Notes
    -----
    Seed 000, Sec. 4 and Table 1 (what breaks the symmetry of a symmetric initialisation).

    No figure or validation of the library trains with this loop any more: they use the one
    training engine, :func:`meanfield.validation.training.train_ensemble` with the specs and noise
    sources of :mod:`meanfield.validation.symmetric_nets` (issue 15). This NumPy loop stays as the
    reference with hand-written gradients (checked against finite differences in the tests) and for
    networks the engine's specs do not cover (batch normalisation, 1-D kernels, CuPy arrays).
    """
    b = get_backend(net.backend)
    xp = b.xp
    steps = check_int(steps, "steps", 0)
    lr = check_scalar(lr, "lr")
    if lr <= 0:
        raise ValueError(f"lr must be > 0, got {lr}")
    dropout = _fraction(dropout, "dropout")
    grad_noise = _nonnegative(grad_noise, "grad_noise")
    relative_noise = check_bool(relative_noise, "relative_noise")
    ratios = check_bool(ratios, "ratios")
    rng = b.rng(rng)
    if not hasattr(x, "shape"):
        x = as_float_array(x, "x")
    x_shape = x.shape
    if not x_shape:
        raise ValueError(f"x must be an array of shape (batch, *spatial, n_input), got {x!r}")
    n_classes = int(net.params["head"].shape[0])
    yb = b.asarray(_labels(y, x_shape[0], n_classes, "y"))
    n_params = sum(int(np.prod(v.shape)) for v in net.params.values())
    check_work((steps + 1) * int(np.prod(x_shape)) * n_params, "train (steps + 1) * x.size * parameters")
    eval_every = check_int(eval_every, "eval_every", 1)
    if (x_test is None) != (y_test is None):
        raise ValueError("give both x_test and y_test, or neither")
    if x_test is not None:
        if not hasattr(x_test, "shape") or isinstance(x_test, np.ndarray):
            x_test = as_float_array(x_test, "x_test")
        if len(x_test.shape) != len(x_shape) or tuple(x_test.shape[1:]) != tuple(x_shape[1:]):
            raise ValueError(f"x_test must have the shape of x apart from its batch, got {tuple(x_test.shape)}")
        y_test_b = b.asarray(_labels(y_test, int(x_test.shape[0]), n_classes, "y_test"))
    names = net.conv_names()
    cf, cb, ct, losses, fr, br, acc, test_acc, test_steps = [], [], [], [], [], [], [], [], []
    for step in range(steps + 1):
        p_np = {k: to_numpy(net.params[k]) for k in names}
        if not all(np.all(np.isfinite(v)) for v in p_np.values()):
            raise ValueError(f"training diverged before step {step}: lower lr (got {lr})")
        cf.append(
            [symmetry.forward_correlation(p_np[k], complement=True) if p_np[k].shape[-2] > 1 else 0.0 for k in names]
        )
        cb.append(
            [symmetry.backward_correlation(p_np[k], complement=True) if p_np[k].shape[-1] > 1 else 0.0 for k in names]
        )
        ct.append(
            [
                symmetry.total_correlation(p_np[k], complement=True)
                if p_np[k].shape[-1] * p_np[k].shape[-2] > 1
                else 0.0
                for k in names
            ]
        )
        try:
            logits, feats = net.forward(x, dropout=dropout, rng=rng, keep=True)
            loss, dlog = softmax_xent(logits, yb, xp)
            grads, betas = net.backward(dlog, keep=True)
        except ValueError as exc:  # an overflowing convolution
            raise ValueError(f"training diverged at step {step} ({exc}): lower lr (got {lr})") from exc
        losses.append(loss)
        acc.append(float(xp.mean(xp.argmax(logits, axis=1) == yb)))
        if x_test is not None and (step % eval_every == 0 or step == steps):
            test_steps.append(step)
            test_acc.append(float(xp.mean(xp.argmax(net.forward(x_test), axis=1) == y_test_b)))
        if ratios:
            fr.append([symmetry.perturbation_ratio(to_numpy(f)) for f in feats])
            br.append([symmetry.perturbation_ratio(to_numpy(g)) for g in betas])
        if step == steps:
            break
        for k, g in grads.items():
            if grad_noise > 0:
                std = grad_noise * (float(xp.sqrt(xp.mean(g * g))) if relative_noise else 1.0)
                g = g + std * _noise(rng, g.shape, xp, k in names)
            net.params[k] = net.params[k] - lr * g
    return TrainingRecord(
        names,
        np.array(cf),
        np.array(cb),
        np.array(ct),
        np.array(losses),
        np.array(fr) if ratios else None,
        np.array(br) if ratios else None,
        np.array(acc),
        np.array(test_acc) if x_test is not None else None,
        np.array(test_steps, dtype=np.int64) if x_test is not None else None,
    )


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
        Draws the orthogonal blocks (:func:`meanfield.init.looks_linear_delta_orthogonal`).
    tangent : array_like like x, optional
        Also push this input direction through the linearisation (forward-mode Jacobian-vector product).

    Returns
    -------
    LooksLinearForward

    Raises
    ------
    TypeError, ValueError
        Arguments out of range or of the wrong type (odd ``width``, shapes that do not match).

    Notes
    -----
    Seed 000, App. B, eqs. 7-9: the network is linear on the augmented input,
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
    rng = check_rng(rng)
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
    phi, dphi = activation_fn("relu")
    xb = np.concatenate([x, np.zeros_like(x)], axis=-1)
    tb = None if tangent is None else np.concatenate([tangent, np.zeros_like(tangent)], axis=-1)
    pre, us, jvp = [], [], []
    h, t = xb, tb
    for layer in range(depth):
        w = mf_init.looks_linear_delta_orthogonal(width, kernel_shape, rng=rng)  # (*k, width, width)
        us.append(w[tuple(k // 2 for k in w.shape[:sd])][: width // 2, : width // 2])
        if layer == 0:
            inp, tin = h, t
        else:
            inp = phi(h)
            tin = None if t is None else t * dphi(h)
        h = periodic_conv(inp, w, sd)
        pre.append(h)
        if t is not None:
            t = periodic_conv(tin, w, sd)
            jvp.append(t)
    return LooksLinearForward(pre, us, jvp if tangent is not None else None)


@dataclass(frozen=True)
class ReplicatedFeatureResult(Result):
    """Outcome of :func:`replicated_feature_experiment`.

    Attributes
    ----------
    test_error : float
        Fraction of misclassified test inputs after training.
    forward_correlation : float or None
        :func:`meanfield.symmetry.forward_correlation` of the trained first layer (None for width 1).

    ``error, corr = replicated_feature_experiment(...)`` unpacks the two fields.
    """

    test_error: float
    forward_correlation: float | None

    def __iter__(self) -> Iterator[Any]:
        return iter((self.test_error, self.forward_correlation))


def replicated_feature_experiment(
    x_train: ArrayLike,
    y_train: ArrayLike,
    x_test: ArrayLike,
    y_test: ArrayLike,
    width: int,
    unique: int,
    noise: float,
    steps: int = 2000,
    lr: float = 0.1,
    batch: int = 32,
    dropout: float = 0.0,
    *,
    rng: Any = None,
    n_classes: int = 10,
) -> ReplicatedFeatureResult:
    """Test error of the two-layer ReLU network of eqs. 10-11 of seed 000 (App. E) after SGD.

    ``W1[i] = (1 - lambda) W~[i mod K] + lambda W^[i]`` with ``W~ (K, d)``, ``W^ (N, d)`` and ``W2``
    He-initialised (:func:`meanfield.init.dense_weights` with ``sigma_w2 = 2``); softmax
    cross-entropy, plain SGD with learning rate ``lr`` on minibatches of ``batch`` inputs.

    Parameters
    ----------
    x_train, x_test : array_like, shape (n, d)
    y_train, y_test : array_like of int, labels in ``[0, n_classes)``
    width : int
        Hidden width ``N`` (>= 1).
    unique : int
        Distinct features ``K`` (>= 1).
    noise : float
        ``lambda`` of eq. 10, in [0, 1].
    steps, batch : int
        SGD steps (>= 0) and minibatch size (>= 1).
    lr : float
        Learning rate (> 0).
    dropout : float
        Dropout probability in [0, 1) on the hidden layer.
    rng : None, int, SeedSequence or numpy.random.Generator
        Draws the weights, the minibatches and the dropout masks.
    n_classes : int
        >= 2.

    Returns
    -------
    ReplicatedFeatureResult

    Raises
    ------
    TypeError, ValueError
        Arguments out of range or of the wrong type; ``ValueError`` when SGD diverges.

    Notes
    -----
    Seed 000, Sec. 2.1, App. E, eqs. 10-11 and Figs. 1, 5. Figs. 1 and 5 now train this network on
    the one training engine (:class:`meanfield.validation.symmetric_nets.ReplicatedNetSpec` with
    :func:`meanfield.validation.training.train_ensemble`); this NumPy loop stays as a reference.
    """
    rng = check_rng(rng)
    width = check_int(width, "width", 1)
    unique = check_int(unique, "unique", 1)
    noise = check_scalar(noise, "noise")
    if not 0.0 <= noise <= 1.0:
        raise ValueError(f"noise (lambda of eq. 10) must lie in [0, 1], got {noise}")
    lr = check_scalar(lr, "lr")
    if lr <= 0:
        raise ValueError(f"lr must be > 0, got {lr}")
    steps = check_int(steps, "steps", 0)
    batch = check_int(batch, "batch", 1)
    dropout = _fraction(dropout, "dropout")
    n_classes = check_int(n_classes, "n_classes", 2)
    x_train, x_test = as_float_array(x_train, "x_train"), as_float_array(x_test, "x_test")
    if (
        x_train.ndim != 2
        or x_test.ndim != 2
        or x_train.shape[1] != x_test.shape[1]
        or len(x_train) < 1
        or len(x_test) < 1
    ):
        raise ValueError(
            f"x_train and x_test must be non-empty (n, d) arrays of equal d, got {x_train.shape}, {x_test.shape}"
        )
    y_train = _labels(y_train, len(x_train), n_classes, "y_train")
    y_test = _labels(y_test, len(x_test), n_classes, "y_test")
    d = x_train.shape[1]
    check_elements(max(width, unique, n_classes) * max(d, width), "the weights")
    check_work(steps * batch * width * (d + n_classes), "replicated_feature_experiment")
    wt, wh = dense_weights(unique, d, 2.0, rng=rng), dense_weights(width, d, 2.0, rng=rng)
    w2 = dense_weights(n_classes, width, 2.0, rng=rng)
    w1 = (1.0 - noise) * wt[np.arange(width) % unique] + noise * wh
    phi, dphi = activation_fn("relu")
    n = x_train.shape[0]
    for _ in range(steps):
        idx = rng.integers(0, n, batch)
        xb, yb = x_train[idx], y_train[idx]
        pre = xb @ w1.T
        h = phi(pre)
        mask = 1.0
        if dropout > 0:
            mask = (rng.random(h.shape) >= dropout) / (1.0 - dropout)
            h = h * mask
        try:
            with np.errstate(over="ignore", invalid="ignore"):  # a blow-up is caught just below
                logits = h @ w2.T
            _, dlog = softmax_xent(logits, yb)
        except ValueError:  # non-finite logits: the weights blew up
            raise ValueError(f"SGD diverged (non-finite logits): lower lr (got {lr}) or scale x_train down") from None
        gw2 = dlog.T @ h
        dh = (dlog @ w2) * dphi(pre) * mask
        gw1 = dh.T @ xb
        w1 -= lr * gw1
        w2 -= lr * gw2
    if not (np.all(np.isfinite(w1)) and np.all(np.isfinite(w2))):
        raise ValueError(f"SGD diverged (non-finite weights): lower lr (got {lr})")
    pred = np.argmax(phi(x_test @ w1.T) @ w2.T, axis=1)
    return ReplicatedFeatureResult(
        float(np.mean(pred != y_test)), symmetry.forward_correlation(w1) if width >= 2 else None
    )
