"""Simulators for seed 000 (Blumenfeld et al. 2020): ConstNet, LeakyNet, looks-linear delta-orthogonal
convolutional networks with explicit forward and backward passes, full-batch training, and the
two-layer replicated-feature experiment of App. E.

Layout: inputs and features are channels-last ``(batch, *spatial, channels)`` with periodic
boundaries; kernels are stored in the layout of :func:`validation.networks.periodic_conv`,
``(*k, c_in, c_out)`` (the transpose of the paper's ``(*k, n_out, n_in)`` used by
:mod:`meanfield.symmetry`; :func:`paper_layout` converts). Gradients are written out by hand (no
autodiff dependency) and checked against finite differences in the tests.

Randomness: :func:`train`, :func:`looks_linear_delta_orthogonal_forward` and
:func:`replicated_feature_experiment` take ``rng`` (None, an int, a SeedSequence or a NumPy
Generator; the rule of :mod:`validation.backend`: an int ``n`` draws the numbers of
``numpy.random.default_rng(n)``, None fresh entropy).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from meanfield import init as mf_init
from meanfield import symmetry
from meanfield._checks import as_float_array, check_bool, check_int, check_rng, check_scalar

from .backend import get_backend, to_numpy
from .networks import _check_elements, _check_work

__all__ = [
    "ConstNet",
    "LeakyNet",
    "TrainingRecord",
    "conv",
    "conv_transpose",
    "conv_weight_grad",
    "looks_linear_delta_orthogonal_forward",
    "paper_layout",
    "replicated_feature_experiment",
    "softmax_xent",
    "train",
]


def paper_layout(kernel):
    """``(*k, c_in, c_out)`` -> the paper's ``(*k, n_out, n_in)`` (and back: it is an involution)."""
    return np.swapaxes(to_numpy(kernel), -1, -2)


def _offsets(kernel_shape):
    for index in itertools.product(*(range(k) for k in kernel_shape)):
        yield index, tuple(j - k // 2 for j, k in zip(index, kernel_shape))


def conv(x, kernel, spatial_dims, backend="numpy"):
    """:func:`validation.networks.periodic_conv` for one shared kernel ``(*k, c_in, c_out)``, skipping zero taps.

    Products are broadcast as stacks of small matrix products (one per row of the image): a single
    flattened tall GEMM goes to multi-threaded BLAS, whose spinning threads were measured 10-40x
    slower on an oversubscribed 2-core machine (``benchmarks/symmetry.py``).
    """
    xp = get_backend(backend).xp
    axes = tuple(range(1, 1 + spatial_dims))
    ks = kernel.shape[:spatial_dims]
    flat = x.shape[:-1]
    out = None
    for index, beta in _offsets(ks):
        k = kernel[index]
        if not xp.any(k):
            continue
        shifted = xp.roll(x, tuple(-b for b in beta), axis=axes) if any(beta) else x
        term = shifted @ k
        out = term if out is None else out + term
    if out is None:
        out = xp.zeros(flat + (kernel.shape[-1],))
    return out


def conv_transpose(g, kernel, spatial_dims, backend="numpy"):
    """Adjoint of :func:`conv` with respect to ``x`` (:func:`validation.networks.periodic_conv_transpose`)."""
    xp = get_backend(backend).xp
    axes = tuple(range(1, 1 + spatial_dims))
    ks = kernel.shape[:spatial_dims]
    flat = g.shape[:-1]
    out = None
    for index, beta in _offsets(ks):
        k = kernel[index]
        if not xp.any(k):
            continue
        shifted = xp.roll(g, beta, axis=axes) if any(beta) else g
        term = shifted @ k.T
        out = term if out is None else out + term
    if out is None:
        out = xp.zeros(flat + (kernel.shape[-2],))
    return out


def conv_weight_grad(x, g, kernel_shape, xp=np):
    """Gradient of ``sum(g * conv(x, K))`` with respect to ``K`` (shape ``(*k, c_in, c_out)``)."""
    sd = len(kernel_shape)
    axes = tuple(range(1, 1 + sd))
    out = xp.empty(tuple(kernel_shape) + (x.shape[-1], g.shape[-1]))
    for index, beta in _offsets(kernel_shape):
        shifted = xp.roll(x, tuple(-b for b in beta), axis=axes) if any(beta) else x
        a = shifted.reshape(x.shape[0], -1, x.shape[-1])
        out[index] = (xp.swapaxes(a, 1, 2) @ g.reshape(g.shape[0], -1, g.shape[-1])).sum(axis=0)
    return out


def softmax_xent(logits, labels, xp=np):
    """Mean cross-entropy and its gradient with respect to ``logits`` (batch, classes)."""
    z = logits - logits.max(axis=1, keepdims=True)
    p = xp.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    n = logits.shape[0]
    loss = float(-xp.log(p[xp.arange(n), labels] + 1e-300).mean())
    g = p.copy()
    g[xp.arange(n), labels] -= 1.0
    return loss, g / n


def _bn_forward(a, xp, eps=1e-5):
    axes = tuple(range(a.ndim - 1))
    mu = a.mean(axis=axes, keepdims=True)
    var = ((a - mu) ** 2).mean(axis=axes, keepdims=True)
    inv = 1.0 / xp.sqrt(var + eps)
    y = (a - mu) * inv
    return y, (y, inv)


def _bn_backward(dy, cache):
    y, inv = cache
    axes = tuple(range(dy.ndim - 1))
    return inv * (dy - dy.mean(axis=axes, keepdims=True) - y * (dy * y).mean(axis=axes, keepdims=True))


def _subsample(a, s, sd):
    if s == 1:
        return a
    return a[(slice(None),) + (slice(None, None, s),) * sd]


def _upsample_zeros(g, s, shape, xp):
    if s == 1:
        return g
    out = xp.zeros(shape)
    out[(slice(None),) + (slice(None, None, s),) * (len(shape) - 2)] = g
    return out


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
    def initial(cls, widths=(4, 8, 16), blocks_per_stage=2, n_input=3, n_classes=10, kernel_shape=(3, 3), stride=2,
                batchnorm=False, head=None, backend="numpy"):
        """The paper's initialisation; ``head`` (n_classes, widths[-1]) replaces the zero head if given."""
        b = get_backend(backend)
        init = mf_init.constnet(widths, blocks_per_stage, n_input, n_classes, kernel_shape, stride)
        p = {"first": paper_layout(init.first)}
        order = []
        for s, stage in enumerate(init.blocks):
            for i, w in enumerate(stage):
                p[f"block{s}_{i}"] = paper_layout(w)
                order.append(("block", f"block{s}_{i}"))
            if s < len(init.widen_skip):
                p[f"skip{s}"] = paper_layout(init.widen_skip[s])
                p[f"branch{s}"] = paper_layout(init.widen_branch[s])
                order.append(("widen", s))
        p["head"] = np.array(init.head if head is None else head, dtype=float)
        p["bias"] = np.zeros(n_classes)
        p = {k: b.asarray(v) for k, v in p.items()}
        return cls(p, stride, len(kernel_shape), batchnorm, b, order)

    def _g(self, a, xp, mask=None):
        cache = None
        if self.batchnorm:
            a, cache = _bn_forward(a, xp)
        out = xp.maximum(a, 0.0)
        if mask is not None:
            out = out * mask
        return out, (a, cache, mask)

    def _g_back(self, dout, gcache):
        a, cache, mask = gcache
        if mask is not None:
            dout = dout * mask
        d = dout * (a > 0)
        return _bn_backward(d, cache) if self.batchnorm else d

    def forward(self, x, dropout=0.0, rng=None, keep=False):
        """Logits; with ``keep=True`` also the list of pre-activations ``a^0, a^1, ...`` and a tape."""
        b = get_backend(self.backend)
        xp = b.xp
        sd, s = self.spatial_dims, self.stride
        p = self.params
        x = b.asarray(x)
        a = conv(x, p["first"], sd, b)
        bn0 = None
        if self.batchnorm:
            a, bn0 = _bn_forward(a, xp)
        feats = [a] if keep else None
        tape = []

        def mask_for(shape):
            if dropout <= 0:
                return None
            return (rng.random(shape) >= dropout) / (1.0 - dropout)

        for kind, key in self.order:
            g, gc = self._g(a, xp, mask_for(a.shape))
            if kind == "block":
                out = a + conv(g, p[key], sd, b)
                tape.append((kind, key, a, g, gc))
            else:
                sub = _subsample(a, s, sd)
                out = conv(sub, p[f"skip{key}"], sd, b) + _subsample(conv(g, p[f"branch{key}"], sd, b), s, sd)
                tape.append((kind, key, a, g, gc, sub))
            a = out
            if keep:
                feats.append(a)
        pooled = a.mean(axis=tuple(range(1, 1 + sd)))
        logits = pooled @ p["head"].T + p["bias"]
        self._last = (x, bn0, tape, a, pooled)
        return (logits, feats) if keep else logits

    def backward(self, dlogits, keep=False):
        """Gradients of the last :meth:`forward` for upstream ``dlogits``; with ``keep`` also the
        backward features ``beta^l = dL / da^l`` (same order as the forward features)."""
        b = get_backend(self.backend)
        xp = b.xp
        sd, s = self.spatial_dims, self.stride
        p = self.params
        x, bn0, tape, a_last, pooled = self._last
        grads = {"head": dlogits.T @ pooled, "bias": dlogits.sum(axis=0)}
        n_sp = int(np.prod(a_last.shape[1:-1]))
        beta = xp.broadcast_to((dlogits @ p["head"])[(slice(None),) + (None,) * sd + (slice(None),)] / n_sp, a_last.shape).copy()
        betas = [beta] if keep else None
        ks = lambda w: w.shape[:sd]  # noqa: E731
        for entry in reversed(tape):
            kind, key, a, g, gc = entry[:5]
            if kind == "block":
                w = p[key]
                grads[key] = conv_weight_grad(g, beta, ks(w), xp)
                dg = conv_transpose(beta, w, sd, b)
                beta = beta + self._g_back(dg, gc)
            else:
                sub = entry[5]
                wskip, wb = p[f"skip{key}"], p[f"branch{key}"]
                grads[f"skip{key}"] = conv_weight_grad(sub, beta, ks(wskip), xp)
                dsub = conv_transpose(beta, wskip, sd, b)
                full_shape = g.shape[:-1] + (wb.shape[-1],)
                dconv = _upsample_zeros(beta, s, full_shape, xp)
                grads[f"branch{key}"] = conv_weight_grad(g, dconv, ks(wb), xp)
                dg = conv_transpose(dconv, wb, sd, b)
                beta = _upsample_zeros(dsub, s, a.shape, xp) + self._g_back(dg, gc)
            if keep:
                betas.append(beta)
        if self.batchnorm:
            beta_in = _bn_backward(beta, bn0)
        else:
            beta_in = beta
        grads["first"] = conv_weight_grad(x, beta_in, ks(p["first"]), xp)
        if keep:
            return grads, betas[::-1]
        return grads

    def conv_names(self):
        """Names of the convolution tensors in network order (the ones C_f, C_b are measured on)."""
        names = ["first"]
        for kind, key in self.order:
            names += [key] if kind == "block" else [f"skip{key}", f"branch{key}"]
        return names


@dataclass
class LeakyNet:
    """A LeakyNet (seed 000, Sec. 5.1, App. H): averaging first conv, then ``h^l = W_l * sigma_rho(h^{l-1})``
    with ``W_l = s_l Delta (x) M_l`` (``M_l`` = ``I`` or ``11^T/n``, ``s_l = -1/rho`` on odd layers),
    global average pooling and a (zero-initialised) dense head."""

    params: dict
    rho: float
    spatial_dims: int
    backend: object = "numpy"
    depth: int = 0

    @classmethod
    def initial(cls, kinds, n=8, n_input=3, n_classes=10, kernel_shape=(3, 3), rho=0.01, head=None, gamma=None, backend="numpy"):
        b = get_backend(backend)
        p = {"first": paper_layout(mf_init.averaging_conv(n, n_input, kernel_shape))}
        for i, w in enumerate(mf_init.leakynet(kinds, n, rho, kernel_shape, gamma)):
            p[f"layer{i + 1}"] = paper_layout(w)
        p["head"] = np.zeros((n_classes, n)) if head is None else np.asarray(head, dtype=float)
        p["bias"] = np.zeros(n_classes)
        return cls({k: b.asarray(v) for k, v in p.items()}, float(rho), len(kernel_shape), b, len(list(kinds)))

    def forward(self, x, dropout=0.0, rng=None, keep=False):
        b = get_backend(self.backend)
        xp = b.xp
        sd, p, rho = self.spatial_dims, self.params, self.rho
        h = conv(b.asarray(x), p["first"], sd, b)
        feats = [h]
        acts, masks = [], []
        for layer in range(1, self.depth + 1):
            act = xp.where(h > 0, h, rho * h)
            mask = None
            if dropout > 0:
                mask = (rng.random(act.shape) >= dropout) / (1.0 - dropout)
                act = act * mask
            acts.append(act)
            masks.append(mask)
            h = conv(act, p[f"layer{layer}"], sd, b)
            feats.append(h)
        pooled = h.mean(axis=tuple(range(1, 1 + sd)))
        self._last = (b.asarray(x), feats, acts, masks, pooled)
        logits = pooled @ p["head"].T + p["bias"]
        return (logits, feats) if keep else logits

    def backward(self, dlogits, keep=False):
        b = get_backend(self.backend)
        xp = b.xp
        sd, p, rho = self.spatial_dims, self.params, self.rho
        x, feats, acts, masks, pooled = self._last
        grads = {"head": dlogits.T @ pooled, "bias": dlogits.sum(axis=0)}
        h = feats[-1]
        n_sp = int(np.prod(h.shape[1:-1]))
        beta = xp.broadcast_to((dlogits @ p["head"])[(slice(None),) + (None,) * sd + (slice(None),)] / n_sp, h.shape).copy()
        betas = [beta]
        for layer in range(self.depth, 0, -1):
            w = p[f"layer{layer}"]
            grads[f"layer{layer}"] = conv_weight_grad(acts[layer - 1], beta, w.shape[:sd], xp)
            dact = conv_transpose(beta, w, sd, b)
            if masks[layer - 1] is not None:
                dact = dact * masks[layer - 1]
            beta = dact * xp.where(feats[layer - 1] > 0, 1.0, rho)
            betas.append(beta)
        grads["first"] = conv_weight_grad(x, beta, p["first"].shape[:sd], xp)
        return (grads, betas[::-1]) if keep else grads

    def conv_names(self):
        return ["first"] + [f"layer{i}" for i in range(1, self.depth + 1)]


@dataclass(frozen=True)
class TrainingRecord:
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
    """

    names: list
    one_minus_cf: np.ndarray
    one_minus_cb: np.ndarray
    one_minus_ct: np.ndarray
    loss: np.ndarray
    forward_ratio: np.ndarray | None
    backward_ratio: np.ndarray | None


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


def train(net, x, y, steps, lr=0.1, dropout=0.0, grad_noise=0.0, relative_noise=False, rng=None, ratios=False) -> TrainingRecord:
    """Deterministic full-batch gradient descent on ``(x, y)``, optionally with dropout on every
    activation or Gaussian noise of standard deviation ``grad_noise`` added to every gradient entry
    (``relative_noise=True``: ``grad_noise`` times the tensor's root-mean-square gradient, a model of
    rounding noise in non-deterministic reductions, which scales with the numbers summed).

    With neither, nothing random enters and a network with symmetric features keeps them: C_f and
    C_b stay exactly 1 (the "Deterministic" row of Table 1 of seed 000).

    ``rng`` (None, an int, a SeedSequence or a NumPy Generator) draws the dropout masks and the
    gradient noise; it is validated even when neither is used. ``steps`` >= 0, ``lr`` > 0,
    ``dropout`` in [0, 1), ``grad_noise`` >= 0; ``relative_noise`` and ``ratios`` are bools.
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
    yb = b.asarray(y, dtype=xp.int64)
    names = net.conv_names()
    cf, cb, ct, losses, fr, br = [], [], [], [], [], []
    for step in range(steps + 1):
        p_np = {k: paper_layout(net.params[k]) for k in names}
        if not all(np.all(np.isfinite(v)) for v in p_np.values()):
            raise ValueError(f"training diverged before step {step}: lower lr (got {lr})")
        cf.append([symmetry.forward_correlation(p_np[k], complement=True) if p_np[k].shape[-2] > 1 else 0.0 for k in names])
        cb.append([symmetry.backward_correlation(p_np[k], complement=True) if p_np[k].shape[-1] > 1 else 0.0 for k in names])
        ct.append([symmetry.total_correlation(p_np[k], complement=True) if p_np[k].shape[-1] * p_np[k].shape[-2] > 1 else 0.0
                   for k in names])
        logits, feats = net.forward(x, dropout=dropout, rng=rng, keep=True)
        loss, dlog = softmax_xent(logits, yb, xp)
        losses.append(loss)
        grads, betas = net.backward(dlog, keep=True)
        if ratios:
            fr.append([symmetry.perturbation_ratio(to_numpy(f)) for f in feats])
            br.append([symmetry.perturbation_ratio(to_numpy(g)) for g in betas])
        if step == steps:
            break
        for k, g in grads.items():
            if grad_noise > 0:
                std = grad_noise * (float(xp.sqrt(xp.mean(g * g))) if relative_noise else 1.0)
                g = g + std * rng.standard_normal(g.shape)
            net.params[k] = net.params[k] - lr * g
    return TrainingRecord(
        names,
        np.array(cf),
        np.array(cb),
        np.array(ct),
        np.array(losses),
        np.array(fr) if ratios else None,
        np.array(br) if ratios else None,
    )


def looks_linear_delta_orthogonal_forward(x, depth, n, kernel_shape=(3, 3), rng=None, tangent=None):
    """Pre-activations of a ReLU network with eq. 8 kernels on the augmented input ``[x, 0]`` (App. B).

    Parameters
    ----------
    x : ndarray, shape (batch, *spatial, n/2)
    depth : int
        Number of convolutions.
    tangent : ndarray like x, optional
        Also push this input direction through the linearisation (forward-mode Jacobian-vector product).

    Returns
    -------
    pre : list of ndarray (batch, *spatial, n), the pre-activations of layers 1 .. depth
    us : list of the orthogonal ``U`` blocks
    jvp : list of tangents per layer (or None)

    ``rng`` (None, an int, a SeedSequence or a NumPy Generator) draws the orthogonal blocks.
    """
    rng = check_rng(rng)
    x = as_float_array(x, "x")
    depth = check_int(depth, "depth", 0)
    n = check_int(n, "n", 2)
    if n % 2 or x.ndim < 2 or x.shape[-1] != n // 2:
        raise ValueError(f"n must be even and x of shape (batch, *spatial, n/2), got n={n}, x.shape={x.shape}")
    _check_elements(x.size * 2 * depth * (2 if tangent is not None else 1), "the pre-activations of all layers")
    if tangent is not None:
        tangent = as_float_array(tangent, "tangent")
        if tangent.shape != x.shape:
            raise ValueError(f"tangent must have x's shape {x.shape}, got {tangent.shape}")
    sd = len(kernel_shape)
    zeros = np.zeros_like(x)
    xb = np.concatenate([x, zeros], axis=-1)
    tb = None if tangent is None else np.concatenate([tangent, np.zeros_like(tangent)], axis=-1)
    pre, us, jvp = [], [], []
    h, t = xb, tb
    for layer in range(depth):
        w = mf_init.looks_linear_delta_orthogonal(n, kernel_shape, rng=rng)
        us.append(w[tuple(k // 2 for k in kernel_shape)][: n // 2, : n // 2])
        k = paper_layout(w)
        if layer == 0:
            inp, tin = h, t
        else:
            inp = np.maximum(h, 0.0)
            tin = None if t is None else t * (h > 0)
        h = conv(inp, k, sd)
        pre.append(h)
        if t is not None:
            t = conv(tin, k, sd)
            jvp.append(t)
    return pre, us, (jvp if tangent is not None else None)


def replicated_feature_experiment(x_train, y_train, x_test, y_test, width, unique, noise, steps=2000, lr=0.1,
                                  batch=32, dropout=0.0, rng=None, n_classes=10):
    """Test error of the two-layer ReLU network of eqs. 10-11 of seed 000 (App. E) after SGD.

    ``W1[i] = (1 - lambda) W~[i mod K] + lambda W^[i]`` with ``W~ (K, d)``, ``W^ (N, d)`` and ``W2``
    He-initialised; softmax cross-entropy, plain SGD with learning rate ``lr`` on minibatches.

    Returns
    -------
    (test_error, final_forward_correlation_of_W1) ; the correlation is None for width 1
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
    if x_train.ndim != 2 or x_test.ndim != 2 or x_train.shape[1] != x_test.shape[1] or len(x_train) < 1 or len(x_test) < 1:
        raise ValueError(f"x_train and x_test must be non-empty (n, d) arrays of equal d, got {x_train.shape}, {x_test.shape}")
    y_train, y_test = np.asarray(y_train), np.asarray(y_test)
    for name, yy, xx in (("y_train", y_train, x_train), ("y_test", y_test, x_test)):
        if yy.shape != (len(xx),) or not np.issubdtype(yy.dtype, np.integer) or yy.min() < 0 or yy.max() >= n_classes:
            raise ValueError(f"{name} must be integer labels in [0, n_classes) of shape ({len(xx)},), got {yy.dtype} {yy.shape}")
    d = x_train.shape[1]
    _check_elements(max(width, unique, n_classes) * max(d, width), "the weights")
    _check_work(steps * batch * width * (d + n_classes), "replicated_feature_experiment")
    he = lambda *shape: rng.standard_normal(shape) * np.sqrt(2.0 / shape[-1])  # noqa: E731
    wt, wh, w2 = he(unique, d), he(width, d), he(n_classes, width)
    w1 = (1.0 - noise) * wt[np.arange(width) % unique] + noise * wh
    n = x_train.shape[0]
    for _ in range(steps):
        idx = rng.integers(0, n, batch)
        xb, yb = x_train[idx], y_train[idx]
        pre = xb @ w1.T
        h = np.maximum(pre, 0.0)
        mask = 1.0
        if dropout > 0:
            mask = (rng.random(h.shape) >= dropout) / (1.0 - dropout)
            h = h * mask
        _, dlog = softmax_xent(h @ w2.T, yb)
        gw2 = dlog.T @ h
        dh = (dlog @ w2) * (pre > 0) * mask
        gw1 = dh.T @ xb
        w1 -= lr * gw1
        w2 -= lr * gw2
    if not (np.all(np.isfinite(w1)) and np.all(np.isfinite(w2))):
        raise ValueError(f"SGD diverged (non-finite weights): lower lr (got {lr})")
    pred = np.argmax(np.maximum(x_test @ w1.T, 0.0) @ w2.T, axis=1)
    return float(np.mean(pred != y_test)), (symmetry.forward_correlation(w1) if width >= 2 else None)
