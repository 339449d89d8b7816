r"""Blumenfeld et al.'s networks on the ensemble trainer: ConstNet, LeakyNet, the replicated-feature net, and the
symmetry-breaking noise sources (PyTorch, ``torch`` extra).

:func:`meanfield.validation.training.train_ensemble` is the project's one training engine. This
module registers three more architectures with it and defines the noise sources that Blumenfeld et al. 2020
(Blumenfeld, Gilboa & Soudry 2020) uses to break the symmetry of a symmetric initialisation:

- :class:`ConstNetSpec`: ConstNet (Sec. 3.1, eq. 4, App. A): an averaging first convolution,
  residual blocks ``a <- a + W * relu(a)`` with ``W = 0``, widening blocks
  ``a <- subsample_s(skip * a) + subsample_s(W * relu(a))`` (``skip`` the constant ``1 / n`` 1 x 1
  convolution), global average pooling and a zero dense head (with a zero bias). ``init="zero"`` is
  the paper's '0' initialisation (:func:`meanfield.init.constnet`, the tensors of
  :func:`meanfield.pytorch.constnet` bit for bit), ``init="he"`` draws the first, block and branch
  kernels He-normal (:func:`meanfield.init.gaussian_conv_kernel`, ``sigma_w2 = 2``).
- :class:`LeakyNetSpec`: LeakyNet (Sec. 5.1, App. H): averaging first convolution, then
  ``h^l = W_l * phi_a(h^{l-1})`` with ``W_l = s_l Delta (x) M_l`` (:func:`meanfield.init.leakynet`,
  ``M_l = I`` or ``1 1^T / n`` or App. J's mixture), pooling and a zero head. ``init="he"``: every
  convolution He-normal for the leaky ReLU (``sigma_w2 = 2 / (1 + slope^2)``), the head still zero
  (Fig. 8's baseline).
- :class:`ReplicatedNetSpec`: the two-layer ReLU network of eqs. 10-11 (Sec. 2.1, App. E):
  ``W1[i] = (1 - lambda) W~[i mod K] + lambda W^[i]``, ``W2`` He-normal, no biases.
- :class:`SymmetryBreaking`: dropout on every activation, Gaussian gradient noise, a model of
  non-deterministic reductions, and reduced-precision forward/backward passes.

Kernels live in the trainer's flat parameter vector in PyTorch's layout ``(c_out, c_in, *k)``
(:func:`meanfield.init.to_torch_layout`); :func:`conv_kernels` gives them back in the library's
layout ``(*k, c_out, c_in)``, where :mod:`meanfield.symmetry` measures ``C_f`` and ``C_b``.

Exact symmetry
--------------
Without noise the engine is deterministic, and a '0'-initialised ConstNet keeps identical features
*exactly* when every gradient entry of a tensor connecting two symmetric layers is the same sum
computed in the same order: ``1 - C_f`` stays 0 to the last bit. That is a property of the
platform's kernels: a matrix product may compute some units in an edge tile with another
instruction sequence (measured: oneDNN's AVX2 sgemm in a convolution's weight gradient).
:func:`platform_symmetry` measures it; ``SymmetryBreaking(kernels="unit_exact")`` computes the
convolutions, pooling and head with elementwise products and trees of elementwise additions, exact
by construction on any CPU. This is the "Deterministic" row of Blumenfeld et al.'s Tables 1 and 3.

Randomness
----------
The trainer spawns one child stream per network; after the initial weights and the mini-batch seed,
network ``k`` draws one more seed ``int(child.integers(2**63))`` for a ``torch.Generator`` that
draws its dropout masks, gradient noise and reduction perturbations (in that order each step).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from meanfield import Result, symmetry
from meanfield import init as mf_init
from meanfield.checks import check_int, check_scalar

__all__ = [
    "COMPUTE_DTYPES",
    "FLOAT32_ROUNDOFF",
    "KERNELS",
    "ConstNetGroups",
    "ConstNetSpec",
    "LeakyNetSpec",
    "PlatformSymmetry",
    "ReplicatedNetSpec",
    "SymmetryBreaking",
    "constnet_groups",
    "conv_kernels",
    "correlation_probe",
    "platform_symmetry",
    "unit_exact_conv",
]

#: Unit roundoff of IEEE float32 (``2^-24``): the relative size of one rounding error of a float32
#: sum, the natural scale of :attr:`SymmetryBreaking.reduction_noise` for a float32 GPU.
FLOAT32_ROUNDOFF = 2.0**-24
#: Dtypes of the forward/backward pass (:attr:`SymmetryBreaking.compute_dtype`).
COMPUTE_DTYPES = ("float64", "float32", "bfloat16", "float16")
#: Arithmetic of the forward/backward pass (:attr:`SymmetryBreaking.kernels`).
KERNELS = ("platform", "unit_exact")
_MAX_LAYERS = 1000
_MAX_CHANNELS = 4096


def _int(n, name: str, minimum: int, maximum: int) -> int:
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (numbers.Integral, np.integer)):
        raise TypeError(f"{name} must be an integer, got {n!r}")
    return check_int(int(n), name, minimum, maximum)


def _odd_kernel(k) -> int:
    k = _int(k, "kernel_size", 1, 31)
    if k % 2 == 0:
        raise ValueError(f"kernel_size must be odd (2k + 1), got {k}")
    return k


def _fraction(x, name: str, closed: bool = False) -> float:
    v = check_scalar(x, name)
    if not (0.0 <= v <= 1.0 if closed else 0.0 <= v < 1.0):
        raise ValueError(f"{name} must lie in [0, 1{']' if closed else ')'}, got {v!r}")
    return v


# --------------------------------------------------------------------------------------------------
# Specifications
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConstNetSpec(Result):
    """ConstNet for :func:`~meanfield.validation.training.train_ensemble` (Blumenfeld et al. 2020, Sec. 3.1, App. A).

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

    Raises
    ------
    ValueError, TypeError
        On construction, naming the field.

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
        w = self.widths
        if isinstance(w, (str, bytes)) or not isinstance(w, (tuple, list)):
            raise TypeError(f"widths must be a tuple of ints, got {w!r}")
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


@dataclass(frozen=True)
class LeakyNetSpec(Result):
    """LeakyNet for :func:`~meanfield.validation.training.train_ensemble` (Blumenfeld et al. 2020, Sec. 5.1, App. H, J).

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

    Raises
    ------
    ValueError, TypeError
        On construction, naming the field.

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
        k = self.kinds
        if isinstance(k, (str, bytes)) or not isinstance(k, (tuple, list)):
            raise TypeError(f"kinds must be a tuple of 'I' / '1', got {k!r}")
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
            g = self.gamma
            if isinstance(g, (str, bytes)) or not isinstance(g, (tuple, list)):
                raise TypeError(f"gamma must be a tuple of floats, got {g!r}")
            if len(g) != len(k):
                raise ValueError(f"gamma must have one value per layer ({len(k)}), got {len(g)}")
            object.__setattr__(self, "gamma", tuple(_fraction(v, "gamma", closed=True) for v in g))
        if not isinstance(self.init, str) or self.init not in ("leaky", "he"):
            raise ValueError(f"init must be 'leaky' or 'he', got {self.init!r}")

    @property
    def activation(self) -> str:
        """Always ``"leaky_relu"``."""
        return "leaky_relu"


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

    Raises
    ------
    ValueError, TypeError
        On construction, naming the field.

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


@dataclass(frozen=True)
class SymmetryBreaking(Result):
    """The symmetry-breaking noise sources of Blumenfeld et al. 2020 (Sec. 4, Tables 1 and 3) as trainer options.

    Attributes
    ----------
    dropout : float
        Dropout probability in [0, 1) on every activation of a :class:`ConstNetSpec` /
        :class:`LeakyNetSpec` / :class:`ReplicatedNetSpec` during training (inverted dropout:
        kept units are divided by ``1 - dropout``); evaluation runs without it.
    grad_noise : float
        Standard deviation (``0 <= grad_noise <= 1e6``) of Gaussian noise added to every gradient
        entry before the optimiser step.
    reduction_noise : float
        Relative standard deviation (``0 <= reduction_noise <= 1``) of a perturbation of every
        gradient entry, ``g <- g (1 + reduction_noise xi)`` with ``xi ~ N(0, 1)``: the explicit
        model of a non-deterministic reduction (a GPU summing the terms of a gradient in a varying
        order gets a result that differs by rounding errors of relative order the unit roundoff).
        :data:`FLOAT32_ROUNDOFF` (``2^-24``) models one float32 rounding of each entry.
    compute_dtype : {"float64", "float32", "bfloat16", "float16"}, optional
        Dtype of the forward and backward passes; the parameters (master weights) stay in the
        trainer's ``dtype`` and the gradient is cast back to it before the update. ``None``: the
        trainer's ``dtype``. Logits are cast to the master dtype before the cross-entropy.
    kernels : {"platform", "unit_exact"}
        Arithmetic of the convolutions, the pooling and the head of a :class:`ConstNetSpec` /
        :class:`LeakyNetSpec`. ``"platform"`` (default): PyTorch's kernels (oneDNN, MKL), fast, but
        a matrix product may compute identical units with different instruction sequences (an edge
        tile of a GEMM), so that their rounding differs: a deterministic noise source of the
        platform (:func:`platform_symmetry` measures it). ``"unit_exact"``: elementwise products and
        pairwise sums (``torch.roll`` for the shifts, a tree of additions for every reduction,
        forward and backward), so that identical units stay bitwise identical on any CPU; equal to
        the platform's result up to rounding, several times slower.

    Raises
    ------
    ValueError, TypeError
        On construction, naming the field.

    Notes
    -----
    Blumenfeld et al. 2020, Sec. 4 ("One additional source of stochasticity ... is the computation process
    itself"), App. I and Table 3 (FP32 / FP16 training with and without computation noise and
    dropout). The hardware's non-determinism is not reproducible on a CPU, which is why it is modelled
    explicitly; a reduced-precision pass without it is deterministic and keeps exact symmetry (the
    FP16 rows without computation noise).
    """

    dropout: float = 0.0
    grad_noise: float = 0.0
    reduction_noise: float = 0.0
    compute_dtype: str | None = None
    kernels: str = "platform"

    def __post_init__(self):
        object.__setattr__(self, "dropout", _fraction(self.dropout, "dropout"))
        g = check_scalar(self.grad_noise, "grad_noise")
        if not 0 <= g <= 1e6:
            raise ValueError(f"grad_noise must lie in [0, 1e6], got {g!r}")
        object.__setattr__(self, "grad_noise", g)
        object.__setattr__(self, "reduction_noise", _fraction(self.reduction_noise, "reduction_noise", closed=True))
        c = self.compute_dtype
        if c is not None and (not isinstance(c, str) or c not in COMPUTE_DTYPES):
            raise ValueError(f"compute_dtype must be None or one of {COMPUTE_DTYPES}, got {c!r}")
        if not isinstance(self.kernels, str) or self.kernels not in KERNELS:
            raise ValueError(f"kernels must be one of {KERNELS}, got {self.kernels!r}")

    @property
    def random(self) -> bool:
        """Whether any source draws random numbers."""
        return self.dropout > 0 or self.grad_noise > 0 or self.reduction_noise > 0


# --------------------------------------------------------------------------------------------------
# Initial parameters (numpy)
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
    """What :mod:`meanfield.validation.training` needs of a registered architecture."""

    init_parameters: Callable
    param_count: Callable
    check_input: Callable
    forward: Callable
    compatible_keys: Callable


_ADAPTER = _Adapter(_init, _param_count, _check_input, _forward, _compatible_keys)
_SPECS = (ConstNetSpec, LeakyNetSpec, ReplicatedNetSpec)


# --------------------------------------------------------------------------------------------------
# Probes
# --------------------------------------------------------------------------------------------------


def conv_kernels(spec: ConstNetSpec | LeakyNetSpec, parameters: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
    """The convolution kernels of one network in the library's layout ``(*k, c_out, c_in)``.

    Parameters
    ----------
    spec : ConstNetSpec or LeakyNetSpec
    parameters : sequence of ndarray
        One network's parameters as :func:`~meanfield.validation.training.init_parameters` returns
        them (PyTorch layout).

    Returns
    -------
    dict
        ``name -> kernel`` in network order (``first``, ``block{s}_{i}``, ``skip{s}``,
        ``branch{s}`` or ``layer{l}``), via :func:`meanfield.init.from_torch_layout`.

    Raises
    ------
    TypeError
        ``spec`` of another type.
    ValueError
        ``parameters`` of the wrong number or shapes.
    """
    if not isinstance(spec, (ConstNetSpec, LeakyNetSpec)):
        raise TypeError(f"spec must be a ConstNetSpec or a LeakyNetSpec, got {type(spec).__name__}")
    names = _names(spec)[:-2]
    if isinstance(parameters, (str, bytes)) or len(parameters) != len(names) + 2:
        raise ValueError(f"parameters must hold {len(names) + 2} arrays for this spec")
    out = {}
    for name, w in zip(names, parameters):
        w = np.asarray(w, dtype=np.float64)
        if w.ndim != 4 or w.shape[-1] != w.shape[-2]:
            raise ValueError(f"parameter {name} must be a (c_out, c_in, k, k) kernel, got shape {w.shape}")
        out[name] = mf_init.from_torch_layout(w)
    return out


_MEASURES = {
    "forward": symmetry.forward_correlation,
    "backward": symmetry.backward_correlation,
    "total": symmetry.total_correlation,
}


def correlation_probe(
    which: str = "forward", complement: bool = True
) -> Callable[[Any, Sequence[np.ndarray]], np.ndarray]:
    """A trainer probe recording a weight correlation of every convolution (Blumenfeld et al. 2020, eqs. 5-6).

    Parameters
    ----------
    which : {"forward", "backward", "total"}
        :func:`meanfield.symmetry.forward_correlation` (``C_f``), ``backward_correlation``
        (``C_b``) or ``total_correlation`` (``C_t``).
    complement : bool
        Record ``1 - C`` computed without cancellation (exactly 0 for identical features), the
        default, or ``C``.

    Returns
    -------
    callable
        ``probe(spec, parameters) -> ndarray of shape (n_tensors,)`` for
        ``train_ensemble(..., probes={"name": probe})``; tensors with a single channel on the
        measured side (the first convolution of a 1-channel input, for ``C_b``) record 0.

    Raises
    ------
    ValueError
        An unknown ``which``.
    TypeError
        ``complement`` not a bool.
    """
    if not isinstance(which, str) or which not in _MEASURES:
        raise ValueError(f"which must be one of {tuple(_MEASURES)}, got {which!r}")
    if not isinstance(complement, (bool, np.bool_)):
        raise TypeError(f"complement must be a bool, got {complement!r}")
    measure = _MEASURES[which]
    complement = bool(complement)

    def probe(spec, parameters):
        vals = []
        for w in conv_kernels(spec, parameters).values():
            n = {"forward": w.shape[-2], "backward": w.shape[-1], "total": w.shape[-1] * w.shape[-2]}[which]
            vals.append(measure(w, complement=complement) if n > 1 else (0.0 if complement else 1.0))
        return np.asarray(vals, dtype=np.float64)

    probe.__doc__ = f"1 - C_{which[0]} of every convolution" if complement else f"C_{which[0]} of every convolution"
    return probe


# --------------------------------------------------------------------------------------------------
# Groups of Sec. 4.2 (Figs. 4 and 6)
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConstNetGroups(Result):
    """The groups of Blumenfeld et al.'s Sec. 4.2 for every convolution of a ConstNet.

    Attributes
    ----------
    tensors : tuple of str
        Convolution names in network order (``first``, ``block{s}_{i}``, ``skip{s}``,
        ``branch{s}``), as :func:`conv_kernels` and :func:`correlation_probe` order them.
    forward : tuple of int
        Forward group of each tensor: the stage ``s`` (``0 <= s < len(widths)``) of the summed
        stream its output joins.
    backward : tuple of int
        Backward group: the stage of the stream its input comes from; ``-1`` for ``first``, whose
        input is the data (no hidden stream; with one input channel its ``C_b`` is undefined).
    kernel_size : tuple of int
        Spatial kernel size of each tensor (1 for the widening skips, ``spec.kernel_size`` else).
    n_groups : int
        Number of groups, ``len(widths)``: one per stage, i.e. per hidden width.
    """

    tensors: tuple
    forward: tuple
    backward: tuple
    kernel_size: tuple
    n_groups: int

    def members(self, group: int, which: str = "forward", kernel_size: int | None = None) -> tuple:
        """Names of the tensors whose ``which`` ("forward" / "backward") group is ``group``,
        optionally only those with the given ``kernel_size``."""
        if which not in ("forward", "backward"):
            raise ValueError(f"which must be 'forward' or 'backward', got {which!r}")
        g = _int(group, "group", -1, self.n_groups - 1)
        k = None if kernel_size is None else _int(kernel_size, "kernel_size", 1, 31)
        labels = self.forward if which == "forward" else self.backward
        return tuple(
            t for t, lab, ks in zip(self.tensors, labels, self.kernel_size) if lab == g and (k is None or ks == k)
        )


def constnet_groups(spec: ConstNetSpec) -> ConstNetGroups:
    """Forward and backward group of every convolution of a ConstNet (Blumenfeld et al. 2020, Sec. 4.2, Figs. 4, 6).

    Parameters
    ----------
    spec : ConstNetSpec
        The network (widths, blocks per stage, kernel size).

    Returns
    -------
    ConstNetGroups
        Tensor names in network order with their forward and backward groups.

    Raises
    ------
    TypeError
        ``spec`` is not a :class:`ConstNetSpec`.

    Notes
    -----
    Fig. 6's caption: tensors belong to the same group if the outputs of their operations are
    summed together (with or without an activation in between); the backward correlation's group
    follows the stream the tensor's input comes from ("the forward correlation of 'Convolution
    3-0' is on group 3, while its backward correlation matches group 2, to which its input is
    connected"). In the ConstNet of :class:`ConstNetSpec` the summed streams are the residual
    streams ``a`` of the stages, separated by the widening blocks
    ``a <- subsample(skip * a) + subsample(branch * relu(a))`` (Sec. 4.2: the groups correspond
    to the hidden widths, separated by the averaging operations). Derived from the same walk over
    the network as the trainer's forward pass:

    - ``first`` starts stage 0's stream: forward group 0, backward ``-1`` (the data);
    - ``block{s}_{i}`` reads and adds to stage ``s``'s stream: forward and backward group ``s``;
    - ``skip{s}`` and ``branch{s}`` read stage ``s``'s stream and their sum starts stage
      ``s + 1``'s: forward group ``s + 1``, backward group ``s``.
    """
    if not isinstance(spec, ConstNetSpec):
        raise TypeError(f"spec must be a ConstNetSpec, got {type(spec).__name__}")
    tensors, fwd, bwd, ks = [], [], [], []

    def add(name, out_stream, in_stream, k):
        tensors.append(name)
        fwd.append(out_stream)
        bwd.append(in_stream)
        ks.append(k)

    add("first", 0, -1, spec.kernel_size)
    for s in range(len(spec.widths)):
        for i in range(spec.blocks_per_stage):
            add(f"block{s}_{i}", s, s, spec.kernel_size)
        if s < len(spec.widths) - 1:
            add(f"skip{s}", s + 1, s, 1)
            add(f"branch{s}", s + 1, s, spec.kernel_size)
    if tensors != _constnet_names(spec):  # the trainer's parameter order: one walk, not two tables
        raise AssertionError("constnet_groups is out of step with the ConstNet parameter names")
    return ConstNetGroups(tuple(tensors), tuple(fwd), tuple(bwd), tuple(ks), len(spec.widths))


# --------------------------------------------------------------------------------------------------
# Does this platform keep identical units identical? (a measured noise source)
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PlatformSymmetry(Result):
    """Whether one training step of the trainer keeps identical units bitwise identical here.

    Attributes
    ----------
    exact : bool
        Every gradient entry of every tensor equal, bit for bit, across the units that the
        symmetric weights make identical.
    max_relative_difference : float
        ``max |g_u - g_0| / max |g|`` over tensors (0 when ``exact``): the size of the platform's
        asymmetric rounding after one step.
    relative_difference : dict
        The same per tensor (``first``, ``block0_0``, ..., ``head``).
    kernels : str
        The arithmetic probed (:attr:`SymmetryBreaking.kernels`).
    params : dict
        Shapes, dtypes, threads, PyTorch version, CPU capability, whether oneDNN is enabled.
    """

    exact: bool
    max_relative_difference: float
    relative_difference: dict
    kernels: str
    params: dict


def _symmetric_parameters(spec, input_shape, n_classes, rng):
    """Random parameters with identical units: every kernel ``w[o, i] = u`` (one random ``k x k``
    filter per tensor), every head column equal; one draw per network."""
    out = []
    for w in _init(spec, input_shape, n_classes, rng):
        if w.ndim == 4:
            u = rng.standard_normal(w.shape[2:]) / math.sqrt(w.shape[1] * w.shape[2] * w.shape[3])
            out.append(np.broadcast_to(u, w.shape).copy())
        elif w.ndim == 2:  # head (classes, channels): one value per class
            out.append(np.broadcast_to(rng.standard_normal((w.shape[0], 1)), w.shape).copy())
        else:
            out.append(rng.standard_normal(w.shape))
    return out


def platform_symmetry(
    spec: ConstNetSpec | LeakyNetSpec,
    n_networks: int,
    batch_size: int,
    input_shape: Sequence[int],
    n_classes: int,
    *,
    dtype: str = "float32",
    compute_dtype: str | None = None,
    kernels: str = "platform",
    num_threads: int | None = 1,
    rng: Any = 0,
) -> PlatformSymmetry:
    """Probe one forward and backward pass of the trainer for bitwise symmetry of identical units.

    The ensemble of ``n_networks`` networks gets random weights whose units are identical (every
    kernel ``w[o, i] = u``, a random filter per tensor; every column of the head equal), a random
    batch of ``batch_size`` inputs of ``input_shape`` and labels; the gradient of the summed
    cross-entropy is computed with the trainer's own forward pass (the same torch operations, shapes,
    dtypes and threads as :func:`~meanfield.validation.training.train_ensemble`) and compared bit
    for bit across the units. Exact arithmetic gives equal entries; a platform whose matrix-product
    kernels compute some units with another instruction sequence (an edge tile of a GEMM: measured
    with oneDNN's AVX2 kernels in the weight gradient of a convolution with 8 output channels, the
    last 2 of which fall in the 6-column kernel's edge tile) gives differences of order the unit
    roundoff, which training then amplifies.

    Parameters
    ----------
    spec : ConstNetSpec or LeakyNetSpec
    n_networks, batch_size : int
        The ensemble and mini-batch sizes of the run (``1 <= n <= 65,536``).
    input_shape : sequence of int
        ``(channels, h, w)`` of the inputs.
    n_classes : int
        ``>= 2``.
    dtype : {"float32", "float64"}
        Master dtype.
    compute_dtype : str, optional
        :attr:`SymmetryBreaking.compute_dtype`.
    kernels : {"platform", "unit_exact"}
        :attr:`SymmetryBreaking.kernels`.
    num_threads : int, optional
        PyTorch threads during the probe (restored afterwards), as the trainer's option.
    rng : None, int or numpy.random.Generator
        The weights, inputs and labels.

    Returns
    -------
    PlatformSymmetry

    Raises
    ------
    ValueError, TypeError
        Arguments out of range or of the wrong type, naming the argument.
    ImportError
        PyTorch is missing (the ``torch`` extra).
    """
    from meanfield.checks import check_rng

    from .training import _Ensemble, _torch

    torch = _torch()
    if not isinstance(spec, (ConstNetSpec, LeakyNetSpec)):
        raise TypeError(f"spec must be a ConstNetSpec or a LeakyNetSpec, got {type(spec).__name__}")
    n_networks = _int(n_networks, "n_networks", 1, 2**16)
    batch_size = _int(batch_size, "batch_size", 1, 2**16)
    if isinstance(input_shape, (str, bytes)) or not isinstance(input_shape, (tuple, list)) or len(input_shape) != 3:
        raise ValueError(f"input_shape must be (channels, h, w), got {input_shape!r}")
    input_shape = tuple(_int(n, "input_shape", 1, 4096) for n in input_shape)
    n_classes = _int(n_classes, "n_classes", 2, 4096)
    if not isinstance(dtype, str) or dtype not in ("float32", "float64"):
        raise ValueError(f"dtype must be 'float32' or 'float64', got {dtype!r}")
    noise = SymmetryBreaking(compute_dtype=compute_dtype, kernels=kernels)  # checks both
    if num_threads is not None:
        num_threads = _int(num_threads, "num_threads", 1, 1024)
    gen = check_rng(rng)
    per_network = [_symmetric_parameters(spec, input_shape, n_classes, gen) for _ in range(n_networks)]
    x = gen.standard_normal((n_networks, batch_size, *input_shape))
    y = gen.integers(n_classes, size=(n_networks, batch_size))
    tdtype = getattr(torch, dtype)
    cdtype = tdtype if compute_dtype is None else getattr(torch, compute_dtype)
    previous = torch.get_num_threads()
    if num_threads is not None:
        torch.set_num_threads(num_threads)
    try:
        model = _Ensemble(torch, spec, input_shape, n_classes, per_network, "cpu", tdtype)
        model.kernels, model.dropout, model.training, model.noise_generators = noise.kernels, 0.0, True, []
        th = model.theta.detach().requires_grad_(True)
        logits = model.forward(th.to(cdtype), torch.tensor(x, dtype=tdtype).to(cdtype)).to(tdtype)
        ce = torch.nn.functional.cross_entropy(
            logits.reshape(-1, n_classes), torch.tensor(y.reshape(-1), dtype=torch.int64), reduction="sum"
        )
        (grad,) = torch.autograd.grad(ce, th)
    finally:
        torch.set_num_threads(previous)
    parts = [p.reshape(n_networks, *s) for p, s in zip(grad.double().split(model.sizes, dim=1), model.shapes)]
    diffs = {}
    for name, g in zip(_names(spec), parts):
        if name == "bias":
            continue
        ref = g[:, :1, :1] if g.ndim == 5 else g[:, :, :1]  # kernels (E, o, i, k, k); head (E, classes, channels)
        scale = float(g.abs().max())
        diffs[name] = float((g - ref).abs().max()) / scale if scale > 0 else 0.0
    worst = max(diffs.values())
    params = {
        "n_networks": n_networks,
        "batch_size": batch_size,
        "input_shape": list(input_shape),
        "n_classes": n_classes,
        "dtype": dtype,
        "compute_dtype": compute_dtype,
        "num_threads": torch.get_num_threads() if num_threads is None else num_threads,
        "torch": torch.__version__,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "mkldnn_enabled": bool(torch.backends.mkldnn.enabled),
    }
    return PlatformSymmetry(bool(worst == 0.0), float(worst), diffs, noise.kernels, params)
