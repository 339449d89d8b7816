"""Blumenfeld et al. 2020's architectures on the ensemble trainer: their specs, initial parameters and
forward passes (platform kernels or unit-exact arithmetic); the public names live in
:mod:`meanfield.train.symmetric`."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from meanfield import Result
from meanfield import init as mf_init
from meanfield._docstrings import doc_sections
from meanfield.checks import check_scalar

from ._checks import DOC_FIELD_RAISES, _fraction, _int, _odd_kernel, _sequence

_MAX_LAYERS = 1000
_MAX_CHANNELS = 4096


# --------------------------------------------------------------------------------------------------
# Specifications
# --------------------------------------------------------------------------------------------------


@doc_sections(field_raises=DOC_FIELD_RAISES)
@dataclass(frozen=True)
class ConstNetSpec(Result):
    """ConstNet for :func:`~meanfield.train.train_ensemble` (Blumenfeld et al. 2020, Sec. 3.1, App. A).

    Attributes
    ----------
    widths : tuple of int
        Channels of each stage (``1 <= n <= 4096``, at most 8 stages); one widening block between
        consecutive stages.
    blocks_per_stage : int
        ConstNet blocks ``a + W * relu(a)`` per stage, ``0 <= blocks_per_stage <= 1000``.
    kernel_size : int
        Odd size ``2k + 1`` of the square kernels (``<= 31``).
    stride : int
        Spatial stride of the widening blocks (``1 <= stride <= 8``).
    init : {"zero", "he"}
        The paper's '0' initialisation (identical features) or He-normal first / block / branch
        kernels (the "ConstNet, He" row of Table 1); the widening skips and the head are the
        ConstNet ones (averaging, zero) in both.

    {field_raises}

    Notes
    -----
    Blumenfeld et al. 2020, eq. 4 and App. A (Fig. 13), without batch normalisation (the reduced-size networks
    here train without it). Every kernel is applied as a periodic cross-correlation (circular
    padding), as :func:`meanfield.init.periodic_conv`.
    """

    widths: tuple = (8, 16)
    blocks_per_stage: int = 2
    kernel_size: int = 3
    stride: int = 2
    init: str = "zero"

    def __post_init__(self):
        w = _sequence(self.widths, "widths", "ints")
        if not 1 <= len(w) <= 8:
            raise ValueError(f"widths must hold 1 to 8 stage widths, got {len(w)}")
        object.__setattr__(self, "widths", tuple(_int(n, "widths", 1, _MAX_CHANNELS) for n in w))
        object.__setattr__(self, "blocks_per_stage", _int(self.blocks_per_stage, "blocks_per_stage", 0, _MAX_LAYERS))
        object.__setattr__(self, "kernel_size", _odd_kernel(self.kernel_size))
        object.__setattr__(self, "stride", _int(self.stride, "stride", 1, 8))
        if not isinstance(self.init, str) or self.init not in ("zero", "he"):
            raise ValueError(f"init must be 'zero' or 'he', got {self.init!r}")

    @property
    def activation(self) -> str:
        """Always ``"relu"``."""
        return "relu"


@doc_sections(field_raises=DOC_FIELD_RAISES)
@dataclass(frozen=True)
class LeakyNetSpec(Result):
    """LeakyNet for :func:`~meanfield.train.train_ensemble` (Blumenfeld et al. 2020, Sec. 5.1, App. H, J).

    Attributes
    ----------
    kinds : tuple of {"I", "1"}
        Channel matrix of each of the ``len(kinds)`` layers after the averaging convolution
        (1 to 1000 layers).
    width : int
        Channels ``n`` (``1 <= n <= 4096``).
    slope : float
        Negative slope of the leaky ReLU (the paper's ``rho``), in ``(0, 1]``.
    kernel_size : int
        Odd kernel size (``<= 31``).
    gamma : tuple of float, optional
        App. J's mixtures ``gamma_l I + (1 - gamma_l) 1 1^T / n`` (one per layer, in [0, 1]),
        overriding ``kinds``.
    init : {"leaky", "he"}
        The LeakyNet construction (:func:`meanfield.init.leakynet`) or He-normal kernels for the
        leaky ReLU (``sigma_w2 = 2 / (1 + slope^2)``, every convolution including the first; the
        head stays zero as in Fig. 8).

    {field_raises}

    Notes
    -----
    Blumenfeld et al. 2020, Sec. 5.1 (``W_l = s_l Delta (x) M_l``, ``s_l = -1 / slope`` on odd layers), App. H.
    """

    kinds: tuple = ("I",) * 12
    width: int = 8
    slope: float = 0.01
    kernel_size: int = 3
    gamma: tuple | None = None
    init: str = "leaky"

    def __post_init__(self):
        k = _sequence(self.kinds, "kinds", "'I' / '1'")
        if not 1 <= len(k) <= _MAX_LAYERS:
            raise ValueError(f"kinds must list 1 to {_MAX_LAYERS} layers, got {len(k)}")
        if any(not isinstance(s, str) or s not in ("I", "1") for s in k):
            raise ValueError(f"kinds must hold 'I' or '1', got {k!r}")
        object.__setattr__(self, "kinds", tuple(k))
        object.__setattr__(self, "width", _int(self.width, "width", 1, _MAX_CHANNELS))
        slope = check_scalar(self.slope, "slope")
        if not 0 < slope <= 1:
            raise ValueError(f"slope must lie in (0, 1], got {slope!r}")
        object.__setattr__(self, "slope", slope)
        object.__setattr__(self, "kernel_size", _odd_kernel(self.kernel_size))
        if self.gamma is not None:
            g = _sequence(self.gamma, "gamma", "floats")
            if len(g) != len(k):
                raise ValueError(f"gamma must have one value per layer ({len(k)}), got {len(g)}")
            object.__setattr__(self, "gamma", tuple(_fraction(v, "gamma", closed=True) for v in g))
        if not isinstance(self.init, str) or self.init not in ("leaky", "he"):
            raise ValueError(f"init must be 'leaky' or 'he', got {self.init!r}")

    @property
    def activation(self) -> str:
        """Always ``"leaky_relu"``."""
        return "leaky_relu"


@doc_sections(field_raises=DOC_FIELD_RAISES)
@dataclass(frozen=True)
class ReplicatedNetSpec(Result):
    """The two-layer ReLU network of Blumenfeld et al. 2020, eqs. 10-11 (App. E), for the trainer.

    Attributes
    ----------
    width : int
        Hidden units ``N`` (``1 <= N <= 65,536``).
    unique : int
        Distinct features ``K`` (``1 <= K <= N``).
    noise : float
        ``lambda`` of eq. 10, in [0, 1]: ``W1[i] = (1 - lambda) W~[i mod K] + lambda W^[i]``.

    {field_raises}

    Notes
    -----
    ``W~ (K, d)``, ``W^ (N, d)`` and ``W2 (classes, N)`` are He-normal
    (:func:`meanfield.init.dense_weights`, ``sigma_w2 = 2``), drawn in that order; no biases.
    """

    width: int = 64
    unique: int = 64
    noise: float = 0.0

    def __post_init__(self):
        object.__setattr__(self, "width", _int(self.width, "width", 1, 2**16))
        object.__setattr__(self, "unique", _int(self.unique, "unique", 1, 2**16))
        if self.unique > self.width:
            raise ValueError(f"unique must be <= width ({self.width}), got {self.unique}")
        object.__setattr__(self, "noise", _fraction(self.noise, "noise", closed=True))

    @property
    def activation(self) -> str:
        """Always ``"relu"``."""
        return "relu"


# --------------------------------------------------------------------------------------------------


def _constnet_names(spec: ConstNetSpec) -> list[str]:
    names = ["first"]
    for s in range(len(spec.widths)):
        names += [f"block{s}_{i}" for i in range(spec.blocks_per_stage)]
        if s < len(spec.widths) - 1:
            names += [f"skip{s}", f"branch{s}"]
    return names


def _names(spec) -> list[str]:
    """Names of the parameter tensors, in the trainer's order."""
    if isinstance(spec, ConstNetSpec):
        return _constnet_names(spec) + ["head", "bias"]
    if isinstance(spec, LeakyNetSpec):
        return ["first"] + [f"layer{i}" for i in range(1, len(spec.kinds) + 1)] + ["head", "bias"]
    return ["w1", "w2"]


def _init(spec, input_shape: tuple[int, ...], n_classes: int, rng: np.random.Generator) -> list[np.ndarray]:
    if isinstance(spec, ReplicatedNetSpec):
        d = math.prod(input_shape)
        wt = mf_init.dense_weights(spec.unique, d, 2.0, rng=rng)
        wh = mf_init.dense_weights(spec.width, d, 2.0, rng=rng)
        w2 = mf_init.dense_weights(n_classes, spec.width, 2.0, rng=rng)
        w1 = (1.0 - spec.noise) * wt[np.arange(spec.width) % spec.unique] + spec.noise * wh
        return [w1, w2]
    c_in = input_shape[0]
    ks = (spec.kernel_size,) * 2
    if isinstance(spec, ConstNetSpec):
        c = mf_init.constnet(spec.widths, spec.blocks_per_stage, c_in, n_classes, ks, spec.stride)
        tensors = [c.first]
        for s, stage in enumerate(c.blocks):
            tensors += list(stage)
            if s < len(c.widen_skip):
                tensors += [c.widen_skip[s], c.widen_branch[s]]
        out = []
        for name, w in zip(_constnet_names(spec), tensors):
            if spec.init == "he" and not name.startswith("skip"):
                w = mf_init.gaussian_conv_kernel(ks, w.shape[-1], w.shape[-2], sigma_w2=2.0, rng=rng)
            out.append(mf_init.to_torch_layout(w))
        return out + [np.zeros((n_classes, spec.widths[-1])), np.zeros(n_classes)]
    n = spec.width
    if spec.init == "he":
        s2 = 2.0 / (1.0 + spec.slope**2)
        tensors = [mf_init.gaussian_conv_kernel(ks, c_in, n, sigma_w2=s2, rng=rng)]
        tensors += [mf_init.gaussian_conv_kernel(ks, n, n, sigma_w2=s2, rng=rng) for _ in spec.kinds]
    else:
        tensors = [mf_init.averaging_conv(n, c_in, ks)]
        tensors += mf_init.leakynet(
            list(spec.kinds), n, spec.slope, ks, None if spec.gamma is None else list(spec.gamma)
        )
    return [mf_init.to_torch_layout(w) for w in tensors] + [np.zeros((n_classes, n)), np.zeros(n_classes)]


def _check_input(spec, input_shape: tuple[int, ...]) -> None:
    if isinstance(spec, ReplicatedNetSpec):
        return
    if len(input_shape) != 3:
        raise ValueError(
            f"a {type(spec).__name__} needs images of shape (channels, h, w), got input shape {input_shape}"
        )


def _param_count(spec, input_shape, n_classes) -> int:
    if isinstance(spec, ReplicatedNetSpec):
        return spec.width * (math.prod(input_shape) + n_classes)
    a = spec.kernel_size**2
    c_in = input_shape[0]
    if isinstance(spec, LeakyNetSpec):
        n = spec.width
        return a * n * c_in + len(spec.kinds) * a * n * n + n_classes * n + n_classes
    w = spec.widths
    total = a * w[0] * c_in + sum(spec.blocks_per_stage * a * n * n for n in w)
    total += sum((1 + a) * n * m for n, m in zip(w[:-1], w[1:]))
    return total + n_classes * w[-1] + n_classes


# --------------------------------------------------------------------------------------------------
# Forward pass of the ensemble (torch)
# --------------------------------------------------------------------------------------------------


def _dropout(torch, model, h, groups):
    """Inverted dropout on ``h`` of shape ``(B, E * c, *S)``: one mask per network from its own generator."""
    p = getattr(model, "dropout", 0.0)
    if p <= 0 or not getattr(model, "training", False):
        return h
    E = groups
    B, EC = h.shape[:2]
    shape = (B, EC // E) + tuple(h.shape[2:])
    keep = torch.cat(
        [torch.rand(shape, generator=g, dtype=torch.float64).to(h.device) >= p for g in model.noise_generators],
        dim=1,
    )
    return h * keep.to(h.dtype) / (1.0 - p)


def _forward(model, theta, x):
    """Logits ``(E, B, n_classes)`` of ``E`` networks stored as rows of ``theta`` for ``x (E, B, *input)``."""
    torch = model.torch
    F = torch.nn.functional
    spec = model.net
    E = model.E
    parts = [p.reshape(E, *s) for p, s in zip(theta.split(model.sizes, dim=1), model.shapes)]
    B = x.shape[1]
    if isinstance(spec, ReplicatedNetSpec):
        # batched matrix products: the random read-out W2 breaks the replicas' symmetry at the first
        # step anyway (eq. 11), so exact per-column rounding is not needed here, and products and sums
        # (the head below) were far slower for Figs. 1 and 5's ensembles of ~100 networks (measured:
        # Fig. 1 at default size had not finished its first 1,000-step regime after 72 CPU-seconds)
        h = torch.relu(torch.bmm(x.reshape(E, B, -1), parts[0].transpose(1, 2)))
        h = _dropout(torch, model, h.transpose(0, 1).reshape(B, -1), E).reshape(B, E, -1).transpose(0, 1)
        return torch.bmm(h, parts[1].transpose(1, 2))

    exact = getattr(model, "kernels", "platform") == "unit_exact"

    def conv(h, w, stride=1):  # h (B, E * c_in, H, W), w (E, c_out, c_in, k, k): periodic, one group per network
        if exact:
            return unit_exact_conv(torch, h, w, stride)
        k = w.shape[-1]
        if k > 1:
            h = F.pad(h, (k // 2,) * 4, mode="circular")
        return F.conv2d(h, w.reshape(-1, *w.shape[2:]), stride=stride, groups=E)

    h = x.transpose(0, 1).reshape(B, E * x.shape[2], *x.shape[3:])
    names = _names(spec)
    p = dict(zip(names, parts))
    a = conv(h, p["first"])
    if isinstance(spec, ConstNetSpec):
        s = spec.stride
        for st in range(len(spec.widths)):
            for i in range(spec.blocks_per_stage):
                a = a + conv(_dropout(torch, model, torch.relu(a), E), p[f"block{st}_{i}"])
            if st < len(spec.widths) - 1:
                g = _dropout(torch, model, torch.relu(a), E)
                a = conv(a[:, :, ::s, ::s].contiguous(), p[f"skip{st}"]) + conv(g, p[f"branch{st}"], s)
    else:
        for layer in range(1, len(spec.kinds) + 1):
            act = _dropout(torch, model, F.leaky_relu(a, spec.slope), E)
            a = conv(act, p[f"layer{layer}"])
    if exact:  # the pooling and the head as tree sums of elementwise products (see _unit_exact_contract)
        n_pos = a.shape[2] * a.shape[3]
        pooled = _tree_sum(a.reshape(B, E, -1, n_pos), 3).reshape(B, E, -1).transpose(0, 1) / n_pos
        logits = _unit_exact_contract(torch, pooled.unsqueeze(2), p["head"].unsqueeze(1), 3)
        return logits.squeeze(3) + p["bias"].reshape(E, 1, -1)
    pooled = a.mean(dim=(2, 3)).reshape(B, E, -1).transpose(0, 1)
    # the head as a product and a sum, not a matrix product: a BLAS kernel may round the columns of
    # ``dlogits @ head`` differently (measured: 1e-17 between channels), which breaks exact symmetry
    return (pooled.unsqueeze(2) * p["head"].unsqueeze(1)).sum(dim=3) + p["bias"].reshape(E, 1, -1)


# --------------------------------------------------------------------------------------------------
# Unit-exact arithmetic: identical units computed by identical operation sequences on any CPU
# --------------------------------------------------------------------------------------------------


def _tree_sum(t, dim: int):
    """Sum of ``t`` along ``dim`` (kept, size 1) by pairwise elementwise additions only.

    Element ``j`` of the first half is added to element ``j`` of the second half until one remains
    (an odd element is carried); every output is the same tree of IEEE additions over its own
    inputs, whatever its position in memory, its SIMD lane or the thread that computes it. A
    library reduction (``sum``, a GEMM) promises no such thing: it may split, block or vectorise
    the outputs differently (a GEMM's edge tiles), and then identical units round differently.
    """
    import torch  # only called on torch tensors (the torch extra)

    n = t.shape[dim]
    while n > 1:
        half = n // 2
        s = t.narrow(dim, 0, half) + t.narrow(dim, half, half)
        t = s if n % 2 == 0 else torch.cat([s, t.narrow(dim, 2 * half, 1)], dim)
        n = t.shape[dim]
    return t


def _reduce_to(t, shape):
    """``t`` summed (:func:`_tree_sum`) over the dimensions where ``shape`` is 1 and ``t`` is not."""
    for d, (n, m) in enumerate(zip(t.shape, shape)):
        if m == 1 and n > 1:
            t = _tree_sum(t, d)
    return t


def _unit_exact_contract(torch, x, w, dim: int):
    """``(x * w).sum(dim, keepdim=True)`` (broadcasting) with a backward pass of the same kind.

    Forward: elementwise products and :func:`_tree_sum`. Backward: ``grad_x`` and ``grad_w`` are
    elementwise products of the incoming gradient with ``w`` and ``x``, tree-summed over the
    broadcast dimensions; autograd's own backward of a broadcast product would reduce with
    ``sum_to_size``, a library reduction without the guarantee.
    """
    return _ExactContract.get(torch).apply(x, w, dim)


class _ExactContract:
    _fn = None

    @classmethod
    def get(cls, torch):
        if cls._fn is None:

            class Contract(torch.autograd.Function):
                @staticmethod
                def forward(ctx, x, w, dim):
                    ctx.save_for_backward(x, w)
                    ctx.dim = dim
                    return _tree_sum(x * w, dim)

                @staticmethod
                def backward(ctx, g):
                    x, w = ctx.saved_tensors
                    gx = _reduce_to(g * w, x.shape) if ctx.needs_input_grad[0] else None
                    gw = _reduce_to(g * x, w.shape) if ctx.needs_input_grad[1] else None
                    return gx, gw, None

            cls._fn = Contract
        return cls._fn


def unit_exact_conv(torch, h, w, stride: int = 1):
    """Periodic grouped convolution of ``h (B, E * c_in, H, W)`` with ``w (E, c_out, c_in, k, k)``,
    equal to ``conv2d`` of the circularly padded input up to rounding, unit-exact.

    The ``k * k`` shifted copies of the input come from ``torch.roll`` (copies, exact; their
    backward rolls back and adds), then :func:`_unit_exact_contract` over ``c_in * k * k``.
    """
    B = h.shape[0]
    E, co, ci, k, _ = w.shape
    if k > 1:
        r = k // 2
        taps = [torch.roll(h, shifts=(r - dy, r - dx), dims=(2, 3)) for dy in range(k) for dx in range(k)]
        x = torch.stack(taps, dim=2)  # (B, E * c_in, k * k, H, W)
    else:
        x = h.unsqueeze(2)
    x = x[..., ::stride, ::stride]
    Ho, Wo = x.shape[-2:]
    x = x.reshape(B, E, 1, ci * k * k, Ho * Wo)
    out = _unit_exact_contract(torch, x, w.reshape(1, E, co, ci * k * k, 1), 3)
    return out.reshape(B, E * co, Ho, Wo)


def _compatible_keys(spec) -> tuple[str, ...]:
    if isinstance(spec, ConstNetSpec):
        return ("widths", "blocks_per_stage", "kernel_size", "stride")
    if isinstance(spec, LeakyNetSpec):
        return ("width", "kernel_size", "slope")  # kinds of equal length: checked by the shapes
    return ("width",)


@dataclass(frozen=True)
class _Adapter:
    """What the trainer needs of a registered architecture (:func:`meanfield.train._specs._register_spec`)."""

    init_parameters: Callable
    param_count: Callable
    check_input: Callable
    forward: Callable
    compatible_keys: Callable


_ADAPTER = _Adapter(_init, _param_count, _check_input, _forward, _compatible_keys)
