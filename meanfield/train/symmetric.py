r"""Blumenfeld et al.'s networks on the ensemble trainer: ConstNet, LeakyNet, the replicated-feature net, and the
symmetry-breaking noise sources (PyTorch, ``torch`` extra).

:func:`meanfield.train.train_ensemble` is the project's one training engine. This
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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from meanfield import Result, symmetry
from meanfield import init as mf_init
from meanfield.checks import check_rng

from ._checks import _int, _torch
from ._forward import _Ensemble
from ._probes import COMPUTE_DTYPES, FLOAT32_ROUNDOFF, KERNELS, SymmetryBreaking
from ._symmetric import (
    ConstNetSpec,
    LeakyNetSpec,
    ReplicatedNetSpec,
    _constnet_names,
    _init,
    _names,
    unit_exact_conv,
)

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


# --------------------------------------------------------------------------------------------------
# Probes
# --------------------------------------------------------------------------------------------------


def conv_kernels(spec: ConstNetSpec | LeakyNetSpec, parameters: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
    """The convolution kernels of one network in the library's layout ``(*k, c_out, c_in)``.

    Parameters
    ----------
    spec : ConstNetSpec or LeakyNetSpec
    parameters : sequence of ndarray
        One network's parameters as :func:`~meanfield.train.init_parameters` returns
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
    dtypes and threads as :func:`~meanfield.train.train_ensemble`) and compared bit
    for bit across the units. Exact arithmetic gives equal entries. On some CPUs the matrix-product
    kernels compute some units with another instruction sequence (e.g. oneDNN's AVX2 kernels: in the
    weight gradient of a convolution with 8 output channels, the last 2 fall in the 6-column
    kernel's edge tile), giving differences of order the unit roundoff, which training then
    amplifies; on others the result is exact (``exact=True``).

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
