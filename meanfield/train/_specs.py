"""The trainer's architectures (:class:`DenseNet`, :class:`ConvNet`), their initial parameters and the
registry of the other network families (Blumenfeld et al. 2020's specs, Orhan 2017's skip networks)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from meanfield import Result
from meanfield.checks import check_rng, check_scalar
from meanfield.init import (
    delta_orthogonal_kernel,
    delta_orthogonal_kernel_1d,
    dense_weights,
    gaussian_conv_kernel,
    gsm,
    orthogonal_conv_kernel,
    orthogonal_conv_kernel_1d,
    orthogonal_looks_linear,
    to_torch_layout,
    zero_network,
    zero_star_network,
)

from ._checks import _choice, _int, _nonneg, _odd_kernel

#: Activations of the trained networks.
ACTIVATIONS = ("tanh", "relu", "linear", "erf", "leaky_relu")
#: Initialisers of :class:`DenseNet` (all from :mod:`meanfield.init`).
DENSE_INITS = ("gaussian", "uniform", "rademacher", "orthogonal", "gsm", "looks_linear", "zero", "zero_star")
#: Initialisers of :class:`ConvNet` (all from :mod:`meanfield.init`).
CONV_INITS = ("gaussian", "orthogonal", "delta_orthogonal")
#: Optimisers of :func:`train_ensemble` (elementwise, hence independent across networks).
OPTIMIZERS = ("sgd", "momentum", "adam")
#: Largest ``n_networks * n_params`` (2^28 numbers: 1 GiB in float32 per copy of the parameters).
MAX_TOTAL_PARAMS = 2**28
#: Largest number of training steps of one call.
MAX_STEPS = 10**7
#: Largest depth of one network (the papers' deepest network has 10,000 layers).
MAX_DEPTH = 100_000
#: Largest width / channel count.
MAX_WIDTH = 2**16

#: Network families registered by other modules of this package (net class -> hooks); see
#: :func:`_register_family`. Orhan's skip networks register here (:mod:`meanfield.train.skip`).
_FAMILIES: dict[type, dict[str, Any]] = {}


def _register_family(cls: type, *, init, n_params, same_architecture, model) -> None:
    """Let :func:`train_ensemble` and :func:`init_parameters` take nets of class ``cls``.

    ``init(net, shape, n_classes, rng) -> list of ndarray`` (one network's parameter row, in
    order), ``n_params(net, shape, n_classes) -> int``, ``same_architecture(a, b) -> bool`` (may
    nets ``a`` and ``b`` share one ensemble), and ``model(torch, net, shape, n_classes,
    per_network, device, dtype)``, an object with ``theta`` (E, P), ``n_params`` and
    ``forward(theta, x) -> logits (E, B, C)``, and optionally ``penalty(theta) -> (E,) or None``
    (added to each network's mini-batch loss) and ``observe(step, theta)`` (called at every
    recorded step with the detached parameters).
    """
    _FAMILIES[cls] = {"init": init, "n_params": n_params, "same": same_architecture, "model": model}


def _is_net(net) -> bool:
    return isinstance(net, (DenseNet, ConvNet)) or type(net) in _FAMILIES or type(net) in _NETWORK_TYPES


#: Architectures of other modules that run on the trainer's own forward pass: type -> adapter with
#: ``init_parameters``, ``param_count``, ``check_input``, ``forward`` and ``compatible_keys``
#: (Blumenfeld et al.'s ConstNet / LeakyNet / replicated-feature net: :mod:`meanfield.train.symmetric`);
#: see :func:`_register_spec`.
_NETWORK_TYPES: dict[type, Any] = {}
#: Registered types whose forward pass offers ``SymmetryBreaking(kernels="unit_exact")``.
_UNIT_EXACT_TYPES: set[type] = set()


def _register_spec(cls: type, adapter: Any, *, unit_exact: bool = False) -> None:
    """Let :func:`train_ensemble`, :func:`init_parameters` and :func:`ensemble_forward` take specs of class ``cls``.

    ``adapter`` has ``init_parameters(spec, shape, n_classes, rng)``, ``param_count(spec, shape,
    n_classes)``, ``check_input(spec, shape)``, ``forward(model, theta, x)`` (``model`` the trainer's
    ensemble: ``E``, ``sizes``, ``shapes``, ``dropout``, ``kernels``, ``training``,
    ``noise_generators``) and ``compatible_keys(spec)``; ``unit_exact``: whether its forward pass
    implements ``kernels="unit_exact"``.
    """
    _NETWORK_TYPES[cls] = adapter
    if unit_exact:
        _UNIT_EXACT_TYPES.add(cls)


def _net_types() -> tuple[type, ...]:
    return (DenseNet, ConvNet, *_FAMILIES, *_NETWORK_TYPES)


# --------------------------------------------------------------------------------------------------
# Architectures
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DenseNet(Result):
    """A fully-connected network: ``depth`` hidden layers of ``width`` units, then a linear read-out.

    Attributes
    ----------
    depth : int
        Hidden layers (``0 <= depth <= 100,000``; 0 is a linear classifier).
    width : int
        Hidden units per layer (``1 <= width <= 65,536``; even for ``"gsm"`` / ``"looks_linear"``).
    activation : {"tanh", "relu", "linear", "erf", "leaky_relu"}
    init : {"gaussian", "uniform", "rademacher", "orthogonal", "gsm", "looks_linear", "zero", "zero_star"}
        Weight construction (see the module notes); the read-out uses the same one. ``"zero"`` and
        ``"zero_star"`` ignore ``sigma_w2`` (ZerO's scale is fixed) and start with zero biases.
    sigma_w2 : float
        ``W_ij ~ N(0, sigma_w2 / fan_in)`` (orthogonal laws: ``sigma_w2 = gain^2``), in ``[0, 1e6]``.
    sigma_b2 : float
        ``b_i ~ N(0, sigma_b2)``, in ``[0, 1e6]``.
    slope : float
        Negative slope of ``"leaky_relu"`` (ignored otherwise), finite.

    Raises
    ------
    ValueError, TypeError
        On construction, for values out of range or of the wrong type (naming the field).

    Notes
    -----
    The layer convention of the design notes and Xiao et al. 2018 eq. 2.2. For ``"gsm"`` /
    ``"looks_linear"`` (Burkholz & Dubatovka 2019 Sec. 3) the first layer is ``[W0; -W0]`` (``W0`` of fan-in the
    input dimension), hidden layers ``[[W0, -W0], [-W0, W0]]`` and the read-out ``[W0, -W0]``, so a
    ReLU network so initialised computes the linear network ``prod_l W0^(l)`` at initialisation.
    """

    depth: int
    width: int
    activation: str = "tanh"
    init: str = "gaussian"
    sigma_w2: float = 1.0
    sigma_b2: float = 0.0
    slope: float = 0.0

    def __post_init__(self):
        object.__setattr__(self, "depth", _int(self.depth, "depth", 0, MAX_DEPTH))
        object.__setattr__(self, "width", _int(self.width, "width", 1, MAX_WIDTH))
        _choice(self.activation, "activation", ACTIVATIONS)
        _choice(self.init, "init", DENSE_INITS)
        object.__setattr__(self, "sigma_w2", _nonneg(self.sigma_w2, "sigma_w2"))
        object.__setattr__(self, "sigma_b2", _nonneg(self.sigma_b2, "sigma_b2"))
        object.__setattr__(self, "slope", check_scalar(self.slope, "slope"))
        if self.init in ("gsm", "looks_linear") and self.width % 2:
            raise ValueError(f"width must be even for init={self.init!r} (a looks-linear layer), got {self.width}")


@dataclass(frozen=True)
class ConvNet(Result):
    """A periodic CNN: ``depth`` circular convolutions of ``channels`` channels, average pooling, read-out.

    Attributes
    ----------
    depth : int
        Convolution layers, the first mapping the input channels to ``channels`` (``1 <= depth <=
        100,000``).
    channels : int
        Channels ``c`` (``1 <= channels <= 65,536``; ``>=`` the input channels for the orthogonal
        constructions).
    ndim : {1, 2}
        Spatial dimensions (1: images are flattened into a 1-D periodic signal).
    kernel_size : int
        Odd kernel size ``2k + 1`` (``1 <= kernel_size <= 31``).
    activation : {"tanh", "relu", "linear", "erf", "leaky_relu"}
    init : {"gaussian", "orthogonal", "delta_orthogonal"}
        Xiao et al. 2018 eq. 2.2 (with variance vector ``v``), Algorithm 1, Algorithm 2.
    sigma_w2, sigma_b2 : float
        Weight and bias variances (``omega_ij(beta) ~ N(0, sigma_w2 v_beta / c_in)``), in ``[0, 1e6]``.
    v : tuple of float, optional
        Variance vector of the Gaussian kernels, flattened in C order (``kernel_size ** ndim``
        non-negative numbers summing to 1); ``None``: uniform. Only with ``init="gaussian"``.
    slope : float
        Negative slope of ``"leaky_relu"``.
    readout : {"pool", "flatten"}
        ``"pool"``: global average pooling then a dense layer (Xiao et al. 2018 Sec. 3); ``"flatten"``: a
        dense layer on all ``channels x positions`` features. On tiny single-channel images
        pooling discards the spatial layout that a delta-orthogonal network (no spatial mixing at
        initialisation) has not learnt to use yet: its 8 channels then see little more than the
        intensity histogram.

    Notes
    -----
    Xiao et al. 2018 Sec. 3 trains ``3x3xc`` tanh CNNs after two strided convolutions; here the images are
    small enough (4 x 4 or 8 x 8 digits) to skip the down-sampling. The read-out is Gaussian,
    ``N(0, 1 / fan_in)``, with zero bias for every ``init``.
    """

    depth: int
    channels: int
    ndim: int = 2
    kernel_size: int = 3
    activation: str = "tanh"
    init: str = "delta_orthogonal"
    sigma_w2: float = 1.0
    sigma_b2: float = 0.0
    v: tuple | None = None
    slope: float = 0.0
    readout: str = "pool"

    def __post_init__(self):
        _choice(self.readout, "readout", ("pool", "flatten"))
        object.__setattr__(self, "depth", _int(self.depth, "depth", 1, MAX_DEPTH))
        object.__setattr__(self, "channels", _int(self.channels, "channels", 1, MAX_WIDTH))
        object.__setattr__(self, "ndim", _int(self.ndim, "ndim", 1, 2))
        k = _odd_kernel(self.kernel_size)
        object.__setattr__(self, "kernel_size", k)
        _choice(self.activation, "activation", ACTIVATIONS)
        _choice(self.init, "init", CONV_INITS)
        object.__setattr__(self, "sigma_w2", _nonneg(self.sigma_w2, "sigma_w2"))
        object.__setattr__(self, "sigma_b2", _nonneg(self.sigma_b2, "sigma_b2"))
        object.__setattr__(self, "slope", check_scalar(self.slope, "slope"))
        if self.v is not None:
            if self.init != "gaussian":
                raise ValueError(f"v is only used with init='gaussian', got init={self.init!r}")
            try:
                arr = np.asarray(self.v)
            except ValueError as exc:  # ragged
                raise ValueError("v must be a flat sequence of real numbers") from exc
            if isinstance(self.v, (str, bytes)) or np.iscomplexobj(arr):
                raise TypeError("v must be a sequence of real numbers")
            if arr.dtype == bool or arr.dtype.kind not in "iuf":
                raise TypeError(f"v must hold real numbers, got dtype {arr.dtype}")
            arr = arr.astype(np.float64).ravel()
            if arr.size != k**self.ndim:
                raise ValueError(f"v must have kernel_size ** ndim = {k**self.ndim} entries, got {arr.size}")
            if not np.all(np.isfinite(arr)) or np.any(arr < 0) or abs(arr.sum() - 1.0) > 1e-8:
                raise ValueError("v must be finite, non-negative and sum to 1")
            object.__setattr__(self, "v", tuple(float(a) for a in arr))

    @property
    def kernel_shape(self) -> tuple[int, ...]:
        """``(kernel_size,) * ndim``."""
        return (self.kernel_size,) * self.ndim


# --------------------------------------------------------------------------------------------------
# Initial parameters (numpy, from meanfield.init)
# --------------------------------------------------------------------------------------------------


def _dense_layers(net: DenseNet, n_in: int, n_classes: int, rng: np.random.Generator) -> list[np.ndarray]:
    """``[W1, b1, W2, b2, ...]`` (``W`` of shape ``(n_out, n_in)``) of one network."""
    sizes = [n_in] + [net.width] * net.depth + [n_classes]
    n_layers = len(sizes) - 1
    out: list[np.ndarray] = []
    if net.init in ("zero", "zero_star"):
        mats = zero_network(sizes) if net.init == "zero" else zero_star_network(sizes, rng=rng)
        for w in mats:
            out += [w, np.zeros(w.shape[0])]
        return out
    for layer, (fi, fo) in enumerate(zip(sizes[:-1], sizes[1:])):
        first, last = layer == 0, layer == n_layers - 1
        if net.init in ("gsm", "looks_linear") and not (first and last):
            build = gsm if net.init == "gsm" else orthogonal_looks_linear
            if first:  # [W0; -W0], W0 of fan-in fi: the left half of a (fo, 2 fi) block
                s = 2.0 * net.sigma_w2 if net.init == "gsm" else net.sigma_w2
                w = build(fo, 2 * fi, s, rng)[:, :fi]
            elif last:  # [W0, -W0], W0 of shape (n_classes, fi / 2): the top half of a (2 fo, fi) block
                w = build(2 * fo, fi, net.sigma_w2, rng)[:fo]
            else:
                w = build(fo, fi, net.sigma_w2, rng)
        elif net.init in ("gsm", "looks_linear"):  # depth 0: a plain Gaussian / orthogonal classifier
            w = dense_weights(fo, fi, net.sigma_w2, "gaussian" if net.init == "gsm" else "orthogonal", rng)
        else:
            w = dense_weights(fo, fi, net.sigma_w2, net.init, rng)
        b = math.sqrt(net.sigma_b2) * rng.standard_normal(fo)
        out += [np.asarray(w, dtype=np.float64), b]
    return out


def _conv_layers(
    net: ConvNet, c_in: int, n_positions: int, n_classes: int, rng: np.random.Generator
) -> list[np.ndarray]:
    """``[K1, b1, ..., Kd, bd, W_out, b_out]``, kernels in PyTorch's layout ``(c_out, c_in, *k)``."""
    out: list[np.ndarray] = []
    v = None if net.v is None else np.asarray(net.v).reshape(net.kernel_shape)
    for layer in range(net.depth):
        ci = c_in if layer == 0 else net.channels
        co = net.channels
        if net.init == "gaussian":
            k = gaussian_conv_kernel(net.kernel_shape, ci, co, sigma_w2=net.sigma_w2, v=v, rng=rng)
        elif net.init == "orthogonal":
            build = orthogonal_conv_kernel if net.ndim == 2 else orthogonal_conv_kernel_1d
            k = build(net.kernel_size, ci, co, sigma_w2=net.sigma_w2, rng=rng)
        else:
            build = delta_orthogonal_kernel if net.ndim == 2 else delta_orthogonal_kernel_1d
            k = build(net.kernel_size, ci, co, sigma_w2=net.sigma_w2, rng=rng)
        out += [to_torch_layout(k), math.sqrt(net.sigma_b2) * rng.standard_normal(co)]
    fan_in = net.channels * (1 if net.readout == "pool" else n_positions)
    out += [dense_weights(n_classes, fan_in, 1.0, "gaussian", rng), np.zeros(n_classes)]
    return out


def init_parameters(
    net: DenseNet | ConvNet, input_shape: Sequence[int], n_classes: int = 10, rng: Any = None
) -> list[np.ndarray]:
    """The initial parameters of one network, as the trainer draws them (numpy, float64).

    Parameters
    ----------
    net : DenseNet or ConvNet
    input_shape : sequence of int
        ``(channels, *spatial)`` of one input (a :class:`DenseNet` flattens it).
    n_classes : int
        Classes of the read-out (``2 <= n_classes <= 65,536``).
    rng : None, int, SeedSequence or numpy.random.Generator
        Randomness of the construction.

    Returns
    -------
    list of ndarray
        ``[W1, b1, W2, b2, ...]``: dense weights ``(n_out, n_in)``; convolution kernels in PyTorch's
        layout ``(c_out, c_in, *kernel)`` (:func:`meanfield.init.to_torch_layout`).

    Raises
    ------
    ValueError
        An input shape that does not fit ``net`` (e.g. an orthogonal kernel with more input
        channels than ``channels``), or parameters beyond the size bounds of :mod:`meanfield.init`.
    TypeError
        ``net`` of another type, a bad ``rng``.
    """
    shape = _input_shape(input_shape)
    n_classes = _int(n_classes, "n_classes", 2, MAX_WIDTH)
    rng = check_rng(rng)
    if isinstance(net, DenseNet):
        return _dense_layers(net, math.prod(shape), n_classes, rng)
    if isinstance(net, ConvNet):
        _check_conv_input(net, shape)
        return _conv_layers(net, shape[0], math.prod(shape[1:]), n_classes, rng)
    if type(net) in _FAMILIES:
        return _FAMILIES[type(net)]["init"](net, shape, n_classes, rng)
    if type(net) in _NETWORK_TYPES:
        _NETWORK_TYPES[type(net)].check_input(net, shape)
        return _NETWORK_TYPES[type(net)].init_parameters(net, shape, n_classes, rng)
    raise TypeError(f"net must be a DenseNet or a ConvNet (or a registered spec), got {type(net).__name__}")


def _input_shape(shape) -> tuple[int, ...]:
    if isinstance(shape, (str, bytes)) or not isinstance(shape, (tuple, list)):
        raise TypeError(f"input_shape must be a tuple of ints (channels, *spatial), got {shape!r}")
    shape = tuple(_int(s, "input_shape", 1, 2**24) for s in shape)
    if not 1 <= len(shape) <= 3:
        raise ValueError(f"input_shape must have 1 to 3 entries (channels, *spatial), got {shape}")
    return shape


def _check_conv_input(net: ConvNet, shape: tuple[int, ...]) -> None:
    if len(shape) < 2:
        raise ValueError(f"a ConvNet needs inputs of shape (channels, *spatial), got {shape}")
    if net.ndim == 2 and len(shape) != 3:
        raise ValueError(f"a 2-D ConvNet needs images of shape (channels, h, w), got {shape}")
    if net.init != "gaussian" and shape[0] > net.channels:
        raise ValueError(
            f"channels must be >= the input channels ({shape[0]}) for init={net.init!r} (an orthogonal kernel)"
        )


def _param_count(net, shape, n_classes) -> int:
    if type(net) in _FAMILIES:
        return int(_FAMILIES[type(net)]["n_params"](net, shape, n_classes))
    if type(net) in _NETWORK_TYPES:
        return int(_NETWORK_TYPES[type(net)].param_count(net, shape, n_classes))
    if isinstance(net, DenseNet):
        sizes = [math.prod(shape)] + [net.width] * net.depth + [n_classes]
        return sum(i * o + o for i, o in zip(sizes[:-1], sizes[1:]))
    t = net.kernel_size**net.ndim
    c = net.channels
    feats = c * (1 if net.readout == "pool" else math.prod(shape[1:]))
    return (shape[0] * c * t + c) + (net.depth - 1) * (c * c * t + c) + feats * n_classes + n_classes
