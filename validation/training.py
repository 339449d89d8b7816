r"""The ensemble trainer: many small networks trained at once on stacked weights (PyTorch, ``torch`` extra).

The papers' trained-network claims (Xiao et al. 2018 Figs. 1-5, Burkholz & Dubatovka 2019 Figs. 3-4, Grzejdziak 2023 Fig. 2 and its
supplement) compare *ensembles* of small networks that differ in their initialisation. This module
trains ``n_networks`` of them in one computation: the parameters of network ``k`` are row ``k`` of
one flat tensor ``theta`` of shape ``(n_networks, n_params)``; dense layers are batched matrix
products (:func:`torch.baddbmm`) and convolutions one grouped, circularly padded
:func:`torch.nn.functional.conv1d` / ``conv2d`` with ``groups=n_networks``, so nothing loops over
networks in Python. Networks never interact: the loss is the sum of the networks' own mean
cross-entropies, so the gradient row ``k`` is network ``k``'s gradient, and every optimiser
(SGD, momentum, Adam) is elementwise.

Code names and the papers' symbols
----------------------------------
- :class:`DenseNet`: ``h^{l+1} = W^{l+1} phi(h^l) + b^{l+1}`` with ``depth`` hidden layers of
  ``width`` units, then a linear read-out to the classes; ``W_ij ~ N(0, sigma_w2 / fan_in)``
  (``sigma_w2`` = :math:`\sigma_w^2`, ``sigma_b2`` = :math:`\sigma_b^2` of Xiao et al. 2018 eq. 2.2 and the
  design notes).
- :class:`ConvNet`: ``depth`` periodic (circular-padding) convolutions of ``channels`` channels
  (Xiao et al. 2018 eq. 2.1, :func:`meanfield.init.periodic_conv`), global average pooling and a linear
  read-out (the architecture of Xiao et al. 2018 Sec. 3 without its two strided down-sampling layers).
- Initial weights come from :mod:`meanfield.init`, the library's one source of every
  construction, and convolution kernels are converted with :func:`meanfield.init.to_torch_layout`:
  ``"gaussian"`` / ``"uniform"`` / ``"rademacher"`` / ``"orthogonal"``
  (:func:`meanfield.init.dense_weights`), ``"gsm"`` and ``"looks_linear"`` (Burkholz & Dubatovka 2019 Sec. 3,
  :func:`meanfield.init.gsm`, :func:`meanfield.init.orthogonal_looks_linear`), ``"zero"`` and
  ``"zero_star"`` (Grzejdziak 2023, :func:`meanfield.init.zero_network`,
  :func:`meanfield.init.zero_star_network`); for convolutions ``"gaussian"`` (eq. 2.2 with a
  variance vector ``v``, :func:`meanfield.init.gaussian_conv_kernel`), ``"orthogonal"``
  (Algorithm 1) and ``"delta_orthogonal"`` (Algorithm 2).

Randomness
----------
One rule: ``rng`` (``None``, an int, a ``SeedSequence`` or a ``numpy.random.Generator``) is made a
Generator with :func:`meanfield.checks.check_rng` and ``n_networks`` independent child streams are
spawned from it (``Generator.spawn``); network ``k`` draws its initial weights and then the
torch.Generator seed of its mini-batch order (``int(child.integers(2**63))``) from child ``k``
alone. With a list of nets, net ``j`` gets child ``j`` of ``rng`` and its networks the
children of that stream. Child ``k`` does not depend on how many networks are spawned, so the curves of network ``k``
do not depend on the size of the ensemble (up to the rounding of the batched kernels, which the
tests bound), and the same ``rng`` on the same device gives the same curves. Each network sees its
own random mini-batches (a fresh permutation of the training set per epoch), so the networks of an
ensemble are independent samples, as the statistical tests of :mod:`meanfield.validation.trainability`
need.

Divergence
----------
A network whose mini-batch loss or updated parameters become non-finite is frozen at its last
finite parameters (its learning rate is set to zero) and the step is recorded in
``TrainingCurves.diverged_at``; recorded losses of such a network stay finite (logits that
overflow are clipped to ``+-MAX_LOGIT``, losses to ``MAX_LOSS``), so every returned number is
finite and the accuracy of a diverged network is reported as what its frozen parameters achieve.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import numbers
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from meanfield import Result
from meanfield.checks import check_bool, check_int, check_rng, check_scalar
from meanfield.data import load_digits, read_cifar10_batch, read_mnist_idx
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

from .runner import progress

__all__ = [
    "ACTIVATIONS",
    "CONV_INITS",
    "DENSE_INITS",
    "GATHER_MAX_SAVED",
    "MAX_LOGIT",
    "MAX_LOSS",
    "OPTIMIZERS",
    "ConvNet",
    "DenseNet",
    "TrainingCurves",
    "TrainingData",
    "ensemble_forward",
    "init_parameters",
    "load_training_data",
    "train_ensemble",
]

#: Activations of the trained networks.
ACTIVATIONS = ("tanh", "relu", "linear", "erf", "leaky_relu")
#: Initialisers of :class:`DenseNet` (all from :mod:`meanfield.init`).
DENSE_INITS = ("gaussian", "uniform", "rademacher", "orthogonal", "gsm", "looks_linear", "zero", "zero_star")
#: Initialisers of :class:`ConvNet` (all from :mod:`meanfield.init`).
CONV_INITS = ("gaussian", "orthogonal", "delta_orthogonal")
#: Optimisers of :func:`train_ensemble` (elementwise, hence independent across networks).
OPTIMIZERS = ("sgd", "momentum", "adam")
#: Logits are clipped to ``[-MAX_LOGIT, MAX_LOGIT]`` (NaN -> 0) before losses and accuracies are
#: recorded, so that a network whose activations overflow still gets a finite score.
MAX_LOGIT = 1e4
#: Largest recorded cross-entropy (reached only by clipped logits).
MAX_LOSS = 2.0 * MAX_LOGIT
#: Largest ``n_networks * n_params`` (2^28 numbers: 1 GiB in float32 per copy of the parameters).
MAX_TOTAL_PARAMS = 2**28
#: Largest number of training steps of one call.
MAX_STEPS = 10**7
#: Largest depth of one network (the papers' deepest network has 10,000 layers).
MAX_DEPTH = 100_000
#: Largest width / channel count.
MAX_WIDTH = 2**16
#: Rows of an evaluation chunk times networks: bounds the memory of the no-grad evaluation pass.
_EVAL_ROWS = 2**14
#: Convolutions take the gather + batched-matmul path (``_Ensemble._forward_gather``, faster on
#: small tensors) unless a training step would keep more than this many gathered numbers for the
#: backward pass (2^28: 1 GiB in float32); beyond it, one grouped convolution per layer.
GATHER_MAX_SAVED = 2**28

#: Network families registered by other modules of this package (net class -> hooks); see
#: :func:`_register_family`. Orhan's skip networks register here (``validation/_skip_nets.py``).
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


#: Architectures defined in other modules, registered at the end of this module: type -> adapter
#: with ``init_parameters``, ``param_count``, ``check_input``, ``forward`` and ``compatible_keys``
#: (Blumenfeld et al.'s ConstNet / LeakyNet / replicated-feature net: :mod:`meanfield.validation.symmetric_nets`).
_NETWORK_TYPES: dict[type, Any] = {}


def _net_types() -> tuple[type, ...]:
    return (DenseNet, ConvNet, *_FAMILIES, *_NETWORK_TYPES)


def _torch():
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - exercised without the extra
        raise ImportError(
            'the ensemble trainer needs PyTorch: install the torch extra (pip install "meanfield-theory[torch]")'
        ) from exc
    return torch


def _int(n, name: str, minimum: int, maximum: int) -> int:
    """An int in ``[minimum, maximum]``: bools, floats, complex numbers and strings raise ``TypeError``."""
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (numbers.Integral, np.integer)):
        raise TypeError(f"{name} must be an integer, got {n!r}")
    return check_int(int(n), name, minimum, maximum)


def _choice(value, name: str, allowed: Sequence[str]) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{name} must be one of {tuple(allowed)}, got {value!r}")
    return value


def _nonneg(x, name: str) -> float:
    v = check_scalar(x, name)
    if v < 0:
        raise ValueError(f"{name} must be >= 0, got {v!r}")
    if v > 1e6:
        raise ValueError(f"{name} must be <= 1e6 (a variance beyond overflows float32 networks), got {v!r}")
    return v


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
        k = _int(self.kernel_size, "kernel_size", 1, 31)
        if k % 2 == 0:
            raise ValueError(f"kernel_size must be odd (2k + 1), got {k}")
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
# Data
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrainingData(Result):
    """A train / test split for the trainer, standardised with the training set's statistics.

    Attributes
    ----------
    x_train, x_test : ndarray, shape ``(n, channels, *spatial)``
        Images, channels first (flattened for :class:`DenseNet` by the trainer), float64.
    y_train, y_test : ndarray of int64, shape (n,)
        Labels in ``0 .. n_classes - 1``.
    n_classes : int
    name : str
        Where the data came from and how it was reduced.
    """

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    n_classes: int
    name: str

    @property
    def image_shape(self) -> tuple[int, ...]:
        """``(channels, *spatial)``."""
        return tuple(self.x_train.shape[1:])


def _find(data_dir: Path, names: Sequence[str]) -> Path | None:
    for n in names:
        for cand in (data_dir / n, data_dir / (n + ".gz")):
            if cand.is_file():
                return cand
    return None


def _pool(x: np.ndarray, factor: int) -> np.ndarray:
    """Average pooling of ``(n, c, h, w)`` images by ``factor`` (``h, w`` cropped to multiples)."""
    if factor == 1:
        return x
    n, c, h, w = x.shape
    h2, w2 = h // factor, w // factor
    if h2 < 1 or w2 < 1:
        raise ValueError(f"downsample must be <= the image size {min(h, w)}, got {factor}")
    x = x[:, :, : h2 * factor, : w2 * factor]
    return x.reshape(n, c, h2, factor, w2, factor).mean(axis=(3, 5))


def load_training_data(
    dataset: str = "digits",
    *,
    data_dir: str | Path | None = None,
    n_train: int | None = None,
    n_test: int | None = None,
    downsample: int = 1,
) -> TrainingData:
    """The embedded digits (default), or MNIST / CIFAR-10 read from files the user already has.

    Parameters
    ----------
    dataset : {"digits", "mnist", "cifar10"}
        ``"digits"``: scikit-learn's bundled 8 x 8 digits (``data`` extra), the first 1,297 images
        for training and the last 500 for testing (a fixed split). ``"mnist"``: the IDX files
        ``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``, ``t10k-images-idx3-ubyte``,
        ``t10k-labels-idx1-ubyte`` (optionally ``.gz``) in ``data_dir``
        (:func:`meanfield.data.read_mnist_idx`). ``"cifar10"``: the python batches
        ``data_batch_1`` ... ``data_batch_5`` (those present) and ``test_batch`` in ``data_dir``
        (:func:`meanfield.data.read_cifar10_batch`).
    data_dir : str or path, optional
        Folder of the MNIST / CIFAR-10 files (required for them, refused for ``"digits"``).
    n_train, n_test : int, optional
        Keep the first ``n_train`` / ``n_test`` examples (``>= 1``; default all).
    downsample : int
        Average-pool the images by this factor (``>= 1``; e.g. 4 turns MNIST into 7 x 7).

    Returns
    -------
    TrainingData
        Each feature standardised with the training set's mean and standard deviation (features
        constant on the training set are set to 0).

    Raises
    ------
    ValueError
        An unknown ``dataset``, a missing ``data_dir`` or missing / invalid files (naming them), or
        sizes out of range.
    TypeError
        Arguments of the wrong type.
    ImportError
        ``"digits"`` without scikit-learn (the ``data`` extra).
    """
    dataset = _choice(dataset, "dataset", ("digits", "mnist", "cifar10"))
    downsample = _int(downsample, "downsample", 1, 64)
    if n_train is not None:
        n_train = _int(n_train, "n_train", 1, 10**8)
    if n_test is not None:
        n_test = _int(n_test, "n_test", 1, 10**8)
    if dataset == "digits":
        if data_dir is not None:
            raise ValueError("data_dir is only used for dataset='mnist' or 'cifar10'")
        d = load_digits()
        x = d.x.reshape(-1, 1, 8, 8)
        xtr, ytr, xte, yte = x[:1297], d.y[:1297], x[1297:], d.y[1297:]
        name = "sklearn digits 8x8 (first 1297 train / last 500 test)"
    else:
        if data_dir is None:
            raise ValueError(f"dataset={dataset!r} needs data_dir, the folder holding its files")
        if isinstance(data_dir, (bool, np.bool_)) or not isinstance(data_dir, (str, Path)):
            raise TypeError(f"data_dir must be a str or pathlib.Path, got {type(data_dir).__name__}")
        root = Path(data_dir)
        if not root.is_dir():
            raise ValueError(f"data_dir {root} is not a folder")
        if dataset == "mnist":
            files = {}
            for key, stem in (
                ("xtr", "train-images-idx3-ubyte"),
                ("ytr", "train-labels-idx1-ubyte"),
                ("xte", "t10k-images-idx3-ubyte"),
                ("yte", "t10k-labels-idx1-ubyte"),
            ):
                path = _find(root, [stem, stem.replace("-idx", ".idx")])
                if path is None:
                    raise ValueError(f"data_dir {root} has no {stem} (or {stem}.gz): the MNIST IDX files are needed")
                files[key] = read_mnist_idx(path)
            for key in ("xtr", "xte"):
                if files[key].ndim != 3:
                    raise ValueError(f"the MNIST image file must have 3 axes (n, h, w), got shape {files[key].shape}")
            for xk, yk in (("xtr", "ytr"), ("xte", "yte")):
                if files[yk].shape != (files[xk].shape[0],):
                    raise ValueError(f"MNIST labels of shape {files[yk].shape} do not match images {files[xk].shape}")
                if files[yk].size and (files[yk].min() < 0 or files[yk].max() > 9):
                    raise ValueError("MNIST labels must lie in 0..9")
            xtr = files["xtr"][:, None].astype(np.float64)
            xte = files["xte"][:, None].astype(np.float64)
            ytr, yte = files["ytr"].astype(np.int64), files["yte"].astype(np.int64)
            name = f"MNIST from {root}"
        else:
            parts = [root / f"data_batch_{i}" for i in range(1, 6) if (root / f"data_batch_{i}").is_file()]
            if not parts or not (root / "test_batch").is_file():
                raise ValueError(f"data_dir {root} must hold CIFAR-10 python batches data_batch_1..5 and test_batch")
            tr = [read_cifar10_batch(p) for p in parts]
            te = read_cifar10_batch(root / "test_batch")
            xtr = np.concatenate([t.x for t in tr]).reshape(-1, 3, 32, 32)
            ytr = np.concatenate([t.y for t in tr])
            xte, yte = te.x.reshape(-1, 3, 32, 32), te.y
            name = f"CIFAR-10 from {root}"
    if n_train is not None:
        xtr, ytr = xtr[:n_train], ytr[:n_train]
    if n_test is not None:
        xte, yte = xte[:n_test], yte[:n_test]
    if downsample > 1:
        xtr, xte = _pool(xtr, downsample), _pool(xte, downsample)
        name += f", {downsample}x{downsample} average-pooled to {xtr.shape[2]}x{xtr.shape[3]}"
    mean = xtr.mean(axis=0)
    std = xtr.std(axis=0)
    keep = std > 1e-12 * max(1.0, float(np.max(np.abs(xtr))))
    scale = np.where(keep, std, 1.0)
    xtr = np.where(keep, (xtr - mean) / scale, 0.0)
    xte = np.where(keep, (xte - mean) / scale, 0.0)
    return TrainingData(xtr, ytr.astype(np.int64), xte, yte.astype(np.int64), 10, name)


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


# --------------------------------------------------------------------------------------------------
# The result
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrainingCurves(Result):
    """Train and test loss / accuracy of every network of an ensemble, recorded during training.

    Attributes
    ----------
    steps : ndarray of int, shape (n_records,)
        Optimiser steps at which the curves were recorded (0 = initialisation; the last is ``steps``).
    train_loss, train_accuracy, test_loss, test_accuracy : ndarray, shape (n_networks, n_records)
        Mean cross-entropy (nats) and accuracy (fraction in [0, 1]) on the evaluation subset of
        the training set and on the test set; always finite (see :data:`MAX_LOSS`).
    diverged_at : ndarray of int, shape (n_networks,)
        Step at which a network's loss or parameters became non-finite (it was frozen there);
        -1 when it never did.
    net : DenseNet or ConvNet
        The architecture and initialiser.
    dataset : str
        The data's name (:attr:`TrainingData.name`).
    optimizer : str
    lr : float
        Learning rate at step 0 (a schedule's later values are in ``params``).
    batch_size : int
    seconds : float
        Wall time of the training and evaluation (s).
    device : str
    params : dict
        Everything else the run used (sizes, schedule, dtype, evaluation subset).
    probes : dict
        ``name -> ndarray of shape (n_networks, n_records, ...)``: what each probe of
        :func:`train_ensemble` returned at the recorded steps (empty without probes).
    """

    steps: np.ndarray
    train_loss: np.ndarray
    train_accuracy: np.ndarray
    test_loss: np.ndarray
    test_accuracy: np.ndarray
    diverged_at: np.ndarray
    net: DenseNet | ConvNet
    dataset: str
    optimizer: str
    lr: float
    batch_size: int
    seconds: float
    device: str
    params: dict = field(default_factory=dict, compare=False)
    probes: dict = field(default_factory=dict, compare=False)

    @property
    def n_networks(self) -> int:
        """Networks in the ensemble."""
        return int(self.train_loss.shape[0])

    @property
    def final_test_accuracy(self) -> np.ndarray:
        """Test accuracy of each network at the last recorded step, shape ``(n_networks,)``."""
        return self.test_accuracy[:, -1]

    @property
    def final_train_accuracy(self) -> np.ndarray:
        """Training accuracy of each network at the last recorded step, shape ``(n_networks,)``."""
        return self.train_accuracy[:, -1]


# --------------------------------------------------------------------------------------------------
# The functional ensemble model (torch)
# --------------------------------------------------------------------------------------------------


def _act(torch, name: str, slope: float):
    if name == "tanh":
        return torch.tanh
    if name == "relu":
        return torch.relu
    if name == "linear":
        return lambda x: x
    if name == "erf":
        return torch.special.erf
    return lambda x: torch.nn.functional.leaky_relu(x, slope)


class _Ensemble:
    """Parameter layout and forward pass of ``E`` networks stored as rows of ``theta`` (E, P)."""

    def __init__(self, torch, net, input_shape, n_classes, per_network: list[list[np.ndarray]], device, dtype):
        self.torch = torch
        self.net = net
        self.E = len(per_network)
        self.input_shape = tuple(input_shape)
        self.shapes = [p.shape for p in per_network[0]]
        self.sizes = [int(np.prod(s)) for s in self.shapes]
        flat = np.stack([np.concatenate([p.ravel() for p in ps]) for ps in per_network])
        self.theta = torch.tensor(flat, dtype=dtype, device=device)
        self.adapter = _NETWORK_TYPES.get(type(net))
        self.act = None if self.adapter is not None else _act(torch, net.activation, net.slope)
        self._pad_index = None
        self._shift_index = None

    @property
    def n_params(self) -> int:
        return int(sum(self.sizes))

    def forward(self, theta, x):
        """Logits ``(E, B, n_classes)`` for inputs ``x`` of shape ``(E, B, *input_shape)``."""
        if self.adapter is not None:
            return self.adapter.forward(self, theta, x)
        torch = self.torch
        E = self.E
        parts = theta.split(self.sizes, dim=1)
        B = x.shape[1]
        if isinstance(self.net, DenseNet):
            h = x.reshape(E, B, -1)
            n_layers = len(parts) // 2
            for i in range(n_layers):
                w = parts[2 * i].view(E, *self.shapes[2 * i])
                b = parts[2 * i + 1].view(E, 1, -1)
                h = torch.baddbmm(b, h, w.transpose(1, 2))
                if i < n_layers - 1:
                    h = self.act(h)
            return h
        F = torch.nn.functional
        net = self.net
        pad = net.kernel_size // 2
        spatial = self.input_shape[1:] if net.ndim == 2 else (math.prod(self.input_shape[1:]),)
        taps = net.kernel_size**net.ndim
        saved = E * net.channels * taps * math.prod(spatial) * B * net.depth
        if not torch.is_grad_enabled() or saved <= GATHER_MAX_SAVED:
            return self._forward_gather(theta, parts, x, spatial, taps)
        padded = tuple(n + 2 * pad for n in spatial)
        conv = F.conv2d if net.ndim == 2 else F.conv1d
        if self._pad_index is None:  # circular padding as one gather over the flattened positions
            ranges = [torch.arange(-pad, n + pad) % n for n in spatial]
            flat = ranges[0] if net.ndim == 1 else (ranges[0][:, None] * spatial[1] + ranges[1][None, :]).reshape(-1)
            self._pad_index = flat.to(theta.device)
        # (E, B, c, *S) -> (B, E * c, *S): the networks are the groups of one grouped convolution
        h = x.reshape(E, B, self.input_shape[0], -1).transpose(0, 1).reshape(B, -1, math.prod(spatial))
        for i in range(net.depth):
            shape = self.shapes[2 * i]
            w = parts[2 * i].reshape(E * shape[0], *shape[1:])
            b = parts[2 * i + 1].reshape(-1)
            hp = h.index_select(2, self._pad_index).view(B, -1, *padded) if pad else h.view(B, -1, *spatial)
            h = self.act(conv(hp, w, b, groups=E)).reshape(B, -1, math.prod(spatial))
        h = h.reshape(B, E, net.channels, -1)
        # (E, B, features): global average pooling, or every channel at every position (channel-major)
        h = (h.mean(dim=3) if net.readout == "pool" else h.reshape(B, E, -1)).transpose(0, 1)
        w = parts[-2].view(E, *self.shapes[-2])
        b = parts[-1].view(E, 1, -1)
        return torch.baddbmm(b, h, w.transpose(1, 2))

    def _forward_gather(self, theta, parts, x, spatial, taps):
        """The periodic convolutions as one gather of the ``taps`` shifted copies and one batched matmul.

        Activations are kept as ``(E, c, positions, B)``: layer ``l`` gathers, for every position
        ``p`` and kernel tap ``t`` (C order), the input at ``p + t - pad`` (periodic), giving a
        ``(E, c_in * taps, positions * B)`` matrix, and multiplies it by the kernels viewed as
        ``(E, c_out, c_in * taps)`` (PyTorch's layout flattened): the cross-correlation of
        ``conv2d`` / ``conv1d`` with circular padding, in three kernels per layer (gather, baddbmm,
        activation) instead of a grouped convolution, which on small CPU tensors is dominated by
        per-call overhead (``benchmarks/bench_trainer.py``). It stores ``taps`` times more
        activations for the backward pass, hence :data:`GATHER_MAX_SAVED`.
        """
        torch = self.torch
        net = self.net
        E, B = x.shape[0], x.shape[1]
        n_pos = math.prod(spatial)
        if self._shift_index is None:
            pad = net.kernel_size // 2
            grid = np.indices(spatial).reshape(net.ndim, -1)  # (ndim, positions), C order
            rows = []
            for offset in itertools.product(range(-pad, pad + 1), repeat=net.ndim):
                moved = [(grid[d] + offset[d]) % spatial[d] for d in range(net.ndim)]
                rows.append(np.ravel_multi_index(moved, spatial))
            self._shift_index = torch.as_tensor(np.concatenate(rows), dtype=torch.int64, device=theta.device)
        h = x.reshape(E, B, self.input_shape[0], n_pos).permute(0, 2, 3, 1)  # (E, c, positions, B)
        for i in range(net.depth):
            c_out, c_in = self.shapes[2 * i][:2]
            w = parts[2 * i].view(E, c_out, c_in * taps)
            b = parts[2 * i + 1].view(E, c_out, 1)
            shifted = h.index_select(2, self._shift_index).reshape(E, c_in * taps, n_pos * B)
            h = self.act(torch.baddbmm(b, w, shifted)).view(E, c_out, n_pos, B)
        # (E, B, features): global average pooling, or every channel at every position (channel-major)
        feats = h.mean(dim=2) if net.readout == "pool" else h.reshape(E, net.channels * n_pos, B)
        w = parts[-2].view(E, *self.shapes[-2])
        b = parts[-1].view(E, 1, -1)
        return torch.baddbmm(b, feats.transpose(1, 2), w.transpose(1, 2))


def ensemble_forward(
    net: DenseNet | ConvNet, parameters: Sequence[Sequence[np.ndarray]], x: np.ndarray, *, dtype: str = "float64"
) -> np.ndarray:
    """Logits of an ensemble with given parameters: the trainer's forward pass, NumPy in and out.

    Parameters
    ----------
    net : DenseNet or ConvNet
    parameters : sequence of sequences of ndarray
        One list per network, as :func:`init_parameters` returns it (same shapes for every network).
    x : ndarray, shape ``(n_networks, batch, channels, *spatial)``
        Finite real inputs, one batch per network.
    dtype : {"float64", "float32"}

    Returns
    -------
    ndarray, shape (n_networks, batch, n_classes)
        Float64 logits (finite unless the network overflows ``dtype``).

    Raises
    ------
    ValueError
        Shapes that do not fit ``net`` or each other, non-finite inputs.
    TypeError
        Arguments of the wrong type.
    ImportError
        PyTorch is missing (the ``torch`` extra).

    Notes
    -----
    Dense layers ``h^{l+1} = W^{l+1} phi(h^l) + b^{l+1}``; convolutions are Xiao et al.'s periodic
    cross-correlation (eq. 2.1), computed by circularly padded grouped PyTorch convolutions on the
    kernels :func:`meanfield.init.to_torch_layout` produced (the tests compare it with
    :func:`meanfield.init.periodic_conv`).
    """
    torch = _torch()
    if not isinstance(net, _net_types()):
        raise TypeError(f"net must be a DenseNet or a ConvNet (or a registered spec), got {type(net).__name__}")
    dtype = _choice(dtype, "dtype", ("float32", "float64"))
    try:
        x = np.asarray(x)
    except ValueError as exc:  # ragged
        raise ValueError("x must be a rectangular array of real numbers") from exc
    if np.iscomplexobj(x):
        raise TypeError("x must be real")
    if x.dtype == bool or x.dtype.kind not in "iuf":
        raise TypeError(f"x must hold real numbers, got dtype {x.dtype}")
    if x.ndim < 4 or 0 in x.shape or not np.all(np.isfinite(x)):
        raise ValueError(f"x must be a finite array of shape (n_networks, batch, channels, *spatial), got {x.shape}")
    if isinstance(parameters, (str, bytes)) or len(parameters) != x.shape[0]:
        raise ValueError(f"parameters must hold one list per network ({x.shape[0]}), got {len(parameters)}")
    shape = tuple(x.shape[2:])
    if isinstance(net, ConvNet):
        _check_conv_input(net, shape)
    per = [[np.asarray(p, dtype=np.float64) for p in ps] for ps in parameters]
    ref = [p.shape for p in per[0]]
    if any([p.shape for p in ps] != ref for ps in per):
        raise ValueError("every network's parameters must have the same shapes")
    n_classes = int(ref[-1][0])
    if n_classes < 2:
        raise ValueError("the read-out must have at least 2 classes")
    expected = [p.shape for p in init_parameters(net, shape, n_classes, rng=0)]
    if ref != expected:
        raise ValueError(f"parameters have shapes {ref}, expected {expected} for this net and input shape")
    tdtype = getattr(torch, dtype)
    model = _Ensemble(torch, net, shape, n_classes, per, torch.device("cpu"), tdtype)
    with torch.no_grad():
        out = model.forward(model.theta, torch.tensor(x, dtype=tdtype))
    return out.double().numpy()


def _scores(torch, logits, y):
    """Clipped per-network mean cross-entropy and accuracy: two (E,) tensors."""
    logits = torch.nan_to_num(logits, nan=0.0, posinf=MAX_LOGIT, neginf=-MAX_LOGIT).clamp(-MAX_LOGIT, MAX_LOGIT)
    E, B, C = logits.shape
    ce = torch.nn.functional.cross_entropy(logits.reshape(E * B, C), y.reshape(E * B), reduction="none")
    loss = ce.view(E, B).mean(dim=1).clamp(max=MAX_LOSS)
    acc = (logits.argmax(dim=2) == y).to(logits.dtype).mean(dim=1)
    return loss, acc


def _check_lr(lr) -> Callable[[int], float]:
    if callable(lr):

        def schedule(step: int) -> float:
            v = lr(step)
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (numbers.Real, np.floating, np.integer)):
                raise TypeError(f"lr(step) must return a real number, got {v!r} at step {step}")
            v = float(v)
            if not (math.isfinite(v) and 0 <= v <= 1e6):
                raise ValueError(f"lr(step) must return a finite number in [0, 1e6], got {v!r} at step {step}")
            return v

        return schedule
    v = check_scalar(lr, "lr")
    if not 0 <= v <= 1e6:
        raise ValueError(f"lr must be in [0, 1e6], got {v!r}")
    return lambda step: v


def _as_data(data) -> TrainingData:
    if data is None:
        return load_training_data()
    if not isinstance(data, TrainingData):
        raise TypeError(f"data must be a TrainingData (load_training_data) or None, got {type(data).__name__}")
    for name in ("x_train", "x_test"):
        arr = getattr(data, name)
        if not isinstance(arr, np.ndarray) or arr.dtype.kind not in "iuf" or arr.ndim < 2 or arr.shape[0] < 1:
            raise ValueError(f"data.{name} must be a non-empty real array of shape (n, channels, *spatial)")
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"data.{name} must be finite")
    if data.x_train.shape[1:] != data.x_test.shape[1:]:
        raise ValueError("data.x_train and data.x_test must have the same input shape")
    for name, xn in (("y_train", "x_train"), ("y_test", "x_test")):
        y = getattr(data, name)
        if not isinstance(y, np.ndarray) or y.dtype.kind not in "iu" or y.shape != (getattr(data, xn).shape[0],):
            raise ValueError(f"data.{name} must be integer labels, one per row of data.{xn}")
        if y.min() < 0 or y.max() >= data.n_classes:
            raise ValueError(f"data.{name} must lie in 0 .. n_classes - 1 = {data.n_classes - 1}")
    return data


def train_ensemble(
    net: DenseNet | ConvNet,
    n_networks: int,
    *,
    data: TrainingData | None = None,
    steps: int = 500,
    batch_size: int = 64,
    lr: float | Callable[[int], float] = 0.01,
    optimizer: str = "sgd",
    momentum: float = 0.9,
    betas: tuple[float, float] = (0.9, 0.999),
    record_every: int | None = None,
    n_eval: int | None = 500,
    rng: Any = None,
    device: str = "cpu",
    dtype: str = "float32",
    show_progress: bool = False,
    num_threads: int | None = 1,
    noise: Any = None,
    probes: dict[str, Callable] | None = None,
) -> TrainingCurves:
    """Train ``n_networks`` independently initialised copies of ``net`` at once; record their curves.

    Parameters
    ----------
    net : DenseNet or ConvNet, or a list of them
        Architecture and initialiser (every network of the ensemble shares them and differs only
        in its random stream). A list trains ``n_networks`` networks of each in one ensemble (one
        set of batched kernels: cheaper than one call per net); its nets must share the
        architecture (depth, width / channels, activation, ...) and may differ in ``init``,
        ``sigma_w2``, ``sigma_b2`` and ``v``. Registered families are accepted too: Orhan's
        :class:`meanfield.validation.symmetry_training.SkipNet` (Adam's or SGD's update of its
        fixed skip matrices is zero; a per-network bias penalty is added to the loss).
    n_networks : int
        Networks per net, ``1 <= n_networks <= 65,536`` (and ``n_networks * len(nets) * n_params
        <= 2^28``).
    data : TrainingData, optional
        Default: :func:`load_training_data` (the embedded digits).
    steps : int
        Optimiser steps, ``0 <= steps <= 10^7``.
    batch_size : int
        Mini-batch size, ``1 <= batch_size <= n_train``; each network draws its own batches
        (one fresh permutation of the training set per epoch).
    lr : float or callable
        Learning rate in ``[0, 1e6]``, or ``lr(step) -> float`` (a schedule, e.g. Burkholz & Dubatovka's
        ``(1e-4 + 3e-3 exp(-step / 1e4)) / L``).
    optimizer : {"sgd", "momentum", "adam"}
        Plain SGD, heavy-ball momentum (``v <- momentum v + g``, ``theta <- theta - lr v``, PyTorch's
        convention) or Adam (Kingma & Ba 2015, bias-corrected, eps = 1e-8; Grzejdziak's choice).
    momentum : float
        In ``[0, 1)``.
    betas : tuple of two floats
        Adam's ``(beta1, beta2)``, each in ``[0, 1)``.
    record_every : int, optional
        Record the curves every ``record_every`` steps (and at step 0 and at the end); default
        ``max(1, steps // 20)``.
    n_eval : int, optional
        Evaluate on the first ``n_eval`` training and test examples (``None``: all); ``>= 1``.
    rng : None, int, SeedSequence or numpy.random.Generator
        The one randomness rule (module notes): ``n_networks`` child streams are spawned.
    device : str
        A torch device (``"cpu"`` default, ``"cuda"``, ``"cuda:1"``, ...).
    dtype : {"float32", "float64"}
    show_progress : bool
        Show a progress bar over the steps.
    num_threads : int, optional
        CPU threads of PyTorch during the call (restored afterwards; ``1 <= num_threads <= 1024``);
        ``None`` keeps PyTorch's setting. Default 1: the ensemble is already batched, and on a
        shared or busy machine more threads than free cores slow the small kernels down by up to
        100x (measured: a grouped 8 x 8 convolution took 109 ms with 2 threads on a loaded 2-core
        machine, 1.2 ms with 1).
    noise : SymmetryBreaking, optional
        Symmetry-breaking noise sources (:class:`meanfield.validation.symmetric_nets.SymmetryBreaking`):
        dropout (only for the registered Blumenfeld et al. 2020 specs), gradient noise, a model of
        non-deterministic reductions, a reduced-precision forward/backward pass, and the choice of
        the platform's kernels or unit-exact arithmetic (``kernels``). ``None``: none, and the
        training is deterministic (on the platform's kernels).
    probes : dict of str to callable, optional
        ``probe(net, parameters) -> array`` called at every recorded step for every network, on a
        float64 NumPy copy of its parameters (the layout of :func:`init_parameters`); the returned
        arrays (finite, of one shape) are stacked into ``TrainingCurves.probes[name]`` of shape
        ``(n_networks, n_records, ...)``. E.g.
        :func:`meanfield.validation.symmetric_nets.correlation_probe` records ``1 - C_f``.

    Returns
    -------
    TrainingCurves or list of TrainingCurves
        Finite curves of shape ``(n_networks, n_records)``; one per net when ``net`` is a list.

    Raises
    ------
    ValueError
        Sizes or hyper-parameters out of range, data that does not fit ``net``, an unknown
        optimiser or dtype, an unavailable device.
    TypeError
        Arguments of the wrong type.
    ImportError
        PyTorch is missing (the ``torch`` extra).

    Notes
    -----
    Xiao et al. 2018 Sec. 3 (trainability of deep CNNs, Figs. 1-5), Burkholz & Dubatovka 2019 Sec. 4 (Figs. 3-4), Grzejdziak 2023
    Sec. 6 (Fig. 2): each trains many networks of one architecture and compares accuracies across
    initialisers; this is that experiment, vectorised over networks. Cost per step: one forward and
    one backward pass of all networks (``benchmarks/bench_trainer.py`` measures the throughput).

    Examples
    --------
    >>> curves = train_ensemble(DenseNet(depth=2, width=16), 3, steps=20, rng=0)  # doctest: +SKIP
    >>> curves.test_accuracy.shape  # doctest: +SKIP
    (3, 21)
    """
    torch = _torch()
    single = _is_net(net)
    if single:
        nets = [net]
    elif isinstance(net, (list, tuple)) and net and all(_is_net(n) for n in net):
        nets = list(net)
    else:
        raise TypeError(f"net must be a DenseNet or a ConvNet, or a non-empty list of them, got {net!r:.80}")
    n_networks = _int(n_networks, "n_networks", 1, MAX_WIDTH)
    data = _as_data(data)
    shape = data.image_shape
    for n in nets:
        if isinstance(n, ConvNet):
            _check_conv_input(n, shape)
        elif type(n) in _NETWORK_TYPES:
            _NETWORK_TYPES[type(n)].check_input(n, shape)
    noise, probes = _check_noise_probes(noise, probes, nets)
    _check_compatible(nets, shape, int(data.n_classes))
    steps = _int(steps, "steps", 0, MAX_STEPS)
    n_train = data.x_train.shape[0]
    batch_size = _int(batch_size, "batch_size", 1, 2**20)
    if batch_size > n_train:
        raise ValueError(f"batch_size must be <= the {n_train} training examples, got {batch_size}")
    schedule = _check_lr(lr)
    optimizer = _choice(optimizer, "optimizer", OPTIMIZERS)
    momentum = check_scalar(momentum, "momentum")
    if not 0 <= momentum < 1:
        raise ValueError(f"momentum must be in [0, 1), got {momentum!r}")
    if isinstance(betas, (str, bytes)) or not isinstance(betas, (tuple, list)) or len(betas) != 2:
        raise TypeError(f"betas must be a tuple of two floats, got {betas!r}")
    beta1, beta2 = (check_scalar(b, "betas") for b in betas)
    if not (0 <= beta1 < 1 and 0 <= beta2 < 1):
        raise ValueError(f"betas must lie in [0, 1), got {betas!r}")
    record_every = max(1, steps // 20) if record_every is None else _int(record_every, "record_every", 1, MAX_STEPS)
    if n_eval is not None:
        n_eval = _int(n_eval, "n_eval", 1, 2**31)
    if not isinstance(device, str):
        raise TypeError(f"device must be a str such as 'cpu' or 'cuda', got {device!r}")
    try:
        dev = torch.device(device)
        torch.empty(1, device=dev)
    except (RuntimeError, AssertionError) as exc:
        raise ValueError(f"device {device!r} is not available to PyTorch ({exc})") from None
    dtype_name = _choice(dtype, "dtype", ("float32", "float64"))
    show_progress = check_bool(show_progress, "show_progress")
    if num_threads is not None:
        num_threads = _int(num_threads, "num_threads", 1, 1024)
    previous_threads = torch.get_num_threads()
    if num_threads is not None:
        torch.set_num_threads(num_threads)
    try:
        curves = _train(
            torch,
            nets,
            single,
            n_networks,
            data,
            steps,
            batch_size,
            schedule,
            optimizer,
            momentum,
            beta1,
            beta2,
            record_every,
            n_eval,
            rng,
            dev,
            dtype_name,
            show_progress,
            noise,
            probes,
        )
    finally:
        torch.set_num_threads(previous_threads)
    return curves[0] if single else curves


def _check_compatible(nets, shape, n_classes) -> None:
    """Nets trained in one ensemble must share the architecture; they may differ in their initialisation."""
    first = nets[0]
    if type(first) in _FAMILIES:
        same = _FAMILIES[type(first)]["same"]
        for n in nets[1:]:
            if type(n) is not type(first) or not same(first, n):
                raise ValueError(f"the nets of one ensemble must share their architecture; got {first} and {n}")
        return
    if type(first) in _NETWORK_TYPES:
        keep = _NETWORK_TYPES[type(first)].compatible_keys(first)
    else:
        keep = (
            ("depth", "width", "activation", "slope")
            if isinstance(first, DenseNet)
            else ("depth", "channels", "ndim", "kernel_size", "activation", "slope", "readout")
        )
    for n in nets[1:]:
        if type(n) is not type(first) or any(getattr(n, k) != getattr(first, k) for k in keep):
            raise ValueError(
                f"the nets of one ensemble must share {keep} and differ only in init, sigma_w2, sigma_b2 or v; "
                f"got {first} and {n}"
            )


def _train(
    torch,
    nets,
    single,
    n_networks,
    data,
    steps,
    batch_size,
    schedule,
    optimizer,
    momentum,
    beta1,
    beta2,
    record_every,
    n_eval,
    rng,
    dev,
    dtype_name,
    show_progress,
    noise=None,
    probes=None,
):
    n_train = data.x_train.shape[0]
    tdtype = getattr(torch, dtype_name)

    shape = data.image_shape
    n_classes = int(data.n_classes)
    net = nets[0]
    n_per_net = n_networks
    n_networks = n_per_net * len(nets)
    # size check before drawing anything: the parameter count of one network
    probe = _param_count(net, shape, n_classes)
    if probe * n_networks > MAX_TOTAL_PARAMS:
        raise ValueError(
            f"n_networks * n_params must be <= 2**28, got {n_networks} * {probe}: train fewer networks per call "
            "(independent calls with spawned rng streams give the same curves per network)"
        )
    root = check_rng(rng)
    if single:
        children = [root.spawn(n_per_net)]
    else:
        children = [g.spawn(n_per_net) for g in root.spawn(len(nets))]
    per_network, batch_seeds, noise_seeds = [], [], []
    for this, kids in zip(nets, children):
        for child in kids:
            per_network.append(init_parameters(this, shape, n_classes, child))
            batch_seeds.append(int(child.integers(2**63)))
            if noise is not None and noise.random:  # drawn last: the weights and batches never depend on it
                noise_seeds.append(int(child.integers(2**63)))
    family = _FAMILIES.get(type(net))
    build = _Ensemble if family is None else family["model"]
    model = build(torch, net, shape, n_classes, per_network, dev, tdtype)
    penalty = getattr(model, "penalty", None)
    observe = getattr(model, "observe", None)
    gens = [torch.Generator(device="cpu").manual_seed(s) for s in batch_seeds]
    model.noise_generators = [torch.Generator(device="cpu").manual_seed(s) for s in noise_seeds]
    model.dropout = 0.0 if noise is None else noise.dropout
    model.kernels = "platform" if noise is None else noise.kernels
    model.training = False
    cdtype = tdtype if noise is None or noise.compute_dtype is None else getattr(torch, noise.compute_dtype)
    probe_rec: dict[str, list] = {name: [] for name in probes}
    param_nets = [this for this in nets for _ in range(n_per_net)]

    xtr = torch.tensor(data.x_train, dtype=tdtype, device=dev)
    ytr = torch.tensor(data.y_train, dtype=torch.int64, device=dev)
    xte = torch.tensor(data.x_test, dtype=tdtype, device=dev)
    yte = torch.tensor(data.y_test, dtype=torch.int64, device=dev)
    n_tr_eval = n_train if n_eval is None else min(n_eval, n_train)
    n_te_eval = xte.shape[0] if n_eval is None else min(n_eval, xte.shape[0])

    def evaluate(theta, x, y, n):
        losses, accs = [], []
        chunk = max(1, _EVAL_ROWS // n_networks)
        with torch.no_grad():
            for start in range(0, n, chunk):
                xb = x[start : min(start + chunk, n)]
                yb = y[start : min(start + chunk, n)]
                xe = xb.unsqueeze(0).expand(n_networks, *xb.shape)
                loss, acc = _scores(torch, model.forward(theta, xe), yb.unsqueeze(0).expand(n_networks, -1))
                losses.append(loss * xb.shape[0])
                accs.append(acc * xb.shape[0])
        return (torch.stack(losses).sum(0) / n).cpu().numpy(), (torch.stack(accs).sum(0) / n).cpu().numpy()

    record_steps = sorted(set(range(0, steps + 1, record_every)) | {steps})
    rec = {k: np.zeros((n_networks, len(record_steps))) for k in ("trl", "tra", "tel", "tea")}
    diverged_at = np.full(n_networks, -1, dtype=np.int64)
    theta = model.theta
    alive = torch.ones(n_networks, dtype=torch.bool, device=dev)
    state: dict[str, Any] = {}
    perms = [np.empty(0, dtype=np.int64)] * n_networks
    cursor = np.zeros(n_networks, dtype=np.int64)
    lrs = []
    t0 = time.perf_counter()
    rec_i = 0

    def record(i, th):
        rec["trl"][:, i], rec["tra"][:, i] = evaluate(th, xtr, ytr, n_tr_eval)
        rec["tel"][:, i], rec["tea"][:, i] = evaluate(th, xte, yte, n_te_eval)
        if probes:
            _run_probes(probes, probe_rec, param_nets, th.detach().double().cpu().numpy(), model.shapes, model.sizes)
        if observe is not None:
            observe(record_steps[i], th.detach())

    if record_steps[0] == 0:
        record(0, theta)
        rec_i = 1
    loop = (
        progress(range(steps), desc=f"training {n_networks} networks", total=steps) if show_progress else range(steps)
    )
    for step in loop:
        idx = np.empty((n_networks, batch_size), dtype=np.int64)
        for k in range(n_networks):  # index bookkeeping only: the networks are trained together below
            if cursor[k] + batch_size > perms[k].size:
                perms[k] = torch.randperm(n_train, generator=gens[k]).numpy()
                cursor[k] = 0
            idx[k] = perms[k][cursor[k] : cursor[k] + batch_size]
            cursor[k] += batch_size
        tidx = torch.from_numpy(idx).to(dev)
        xb, yb = xtr[tidx], ytr[tidx]
        th = theta.detach().requires_grad_(True)
        model.training = True
        if cdtype != tdtype:  # reduced precision: cast the master weights and the batch, cast the logits back
            logits = model.forward(th.to(cdtype), xb.to(cdtype)).to(tdtype)
        else:
            logits = model.forward(th, xb)
        model.training = False
        E, B, C = logits.shape
        ce = torch.nn.functional.cross_entropy(logits.reshape(E * B, C), yb.reshape(E * B), reduction="none")
        loss = ce.view(E, B).mean(dim=1)
        extra = None if penalty is None else penalty(th)
        if extra is not None:
            loss = loss + extra
        ok = torch.isfinite(loss) & alive
        total = torch.where(ok, loss, torch.zeros_like(loss)).sum()
        (grad,) = torch.autograd.grad(total, th)
        grad = torch.where(ok[:, None], grad, torch.zeros_like(grad))
        if noise is not None and (noise.grad_noise > 0 or noise.reduction_noise > 0):
            grad = _noisy_gradient(torch, grad, noise, model.noise_generators)
        rate = schedule(step)
        lrs.append(rate)
        with torch.no_grad():
            if optimizer == "sgd":
                update = rate * grad
            elif optimizer == "momentum":
                buf = state.get("v")
                buf = grad.clone() if buf is None else momentum * buf + grad
                state["v"] = buf
                update = rate * buf
            else:
                t = state.get("t", 0) + 1
                m = state.get("m", torch.zeros_like(grad)) * beta1 + (1 - beta1) * grad
                s = state.get("s", torch.zeros_like(grad)) * beta2 + (1 - beta2) * grad * grad
                state.update(t=t, m=m, s=s)
                mhat = m / (1 - beta1**t)
                shat = s / (1 - beta2**t)
                update = rate * mhat / (shat.sqrt() + 1e-8)
            new = theta - update
            fine = ok & torch.isfinite(new).all(dim=1)
            newly_dead = alive & ~fine
            if bool(newly_dead.any()):
                diverged_at[newly_dead.cpu().numpy()] = step
                alive = alive & fine
            theta = torch.where(alive[:, None], new, theta)
        if rec_i < len(record_steps) and record_steps[rec_i] == step + 1:
            record(rec_i, theta)
            rec_i += 1
    seconds = time.perf_counter() - t0
    params = {
        "n_train": int(n_train),
        "n_test": int(xte.shape[0]),
        "n_eval_train": int(n_tr_eval),
        "n_eval_test": int(n_te_eval),
        "steps": int(steps),
        "record_every": int(record_every),
        "momentum": momentum if optimizer == "momentum" else None,
        "betas": [beta1, beta2] if optimizer == "adam" else None,
        "lr_first": lrs[0] if lrs else schedule(0),
        "lr_last": lrs[-1] if lrs else schedule(0),
        "dtype": dtype_name,
        "n_params_per_network": model.n_params,
        "input_shape": list(shape),
        "noise": None if noise is None else dataclasses.asdict(noise),
    }
    out = []
    for j, this in enumerate(nets):
        rows = slice(j * n_per_net, (j + 1) * n_per_net)
        out.append(
            TrainingCurves(
                steps=np.asarray(record_steps, dtype=np.int64),
                train_loss=rec["trl"][rows],
                train_accuracy=rec["tra"][rows],
                test_loss=rec["tel"][rows],
                test_accuracy=rec["tea"][rows],
                diverged_at=diverged_at[rows],
                net=this,
                dataset=data.name,
                optimizer=optimizer,
                lr=float(params["lr_first"]),
                batch_size=batch_size,
                seconds=seconds,
                device=str(dev),
                params={**params, "n_nets_trained_together": len(nets)},
                probes={k: np.stack(v, axis=1)[rows] for k, v in probe_rec.items()},
            )
        )
    return out


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


def _check_noise_probes(noise, probes, nets):
    """Validate the ``noise`` and ``probes`` options of :func:`train_ensemble`."""
    if noise is not None:
        if not isinstance(noise, SymmetryBreaking):
            raise TypeError(f"noise must be a SymmetryBreaking or None, got {type(noise).__name__}")
        if noise.dropout > 0 and not all(type(n) in _NETWORK_TYPES for n in nets):
            raise ValueError(
                "noise.dropout is implemented for the Blumenfeld et al. 2020 specs (ConstNetSpec, LeakyNetSpec, ...)"
            )
        if noise.kernels != "platform" and not all(isinstance(n, (ConstNetSpec, LeakyNetSpec)) for n in nets):
            raise ValueError("noise.kernels='unit_exact' is implemented for ConstNetSpec and LeakyNetSpec only")
    if probes is None:
        return noise, {}
    if not isinstance(probes, dict):
        raise TypeError(f"probes must be a dict of name -> callable, got {type(probes).__name__}")
    for name, fn in probes.items():
        if not isinstance(name, str) or not callable(fn):
            raise TypeError(f"probes must map str names to callables, got {name!r}: {fn!r:.60}")
    return noise, dict(probes)


def _run_probes(probes, store, nets, theta, shapes, sizes) -> None:
    """Call every probe on every network's float64 parameters; append ``(n_networks, ...)`` arrays."""
    bounds = np.cumsum([0, *sizes])
    for name, fn in probes.items():
        vals = []
        for k, this in enumerate(nets):
            params = [theta[k, bounds[i] : bounds[i + 1]].reshape(s) for i, s in enumerate(shapes)]
            v = np.asarray(fn(this, params))
            if v.dtype.kind not in "iuf" or not np.all(np.isfinite(v)):
                raise ValueError(f"probe {name!r} must return finite real numbers, got {v!r:.80}")
            vals.append(v.astype(np.float64))
        if len({v.shape for v in vals}) != 1 or (store[name] and store[name][0].shape[1:] != vals[0].shape):
            raise ValueError(f"probe {name!r} must return arrays of one shape")
        store[name].append(np.stack(vals))


def _noisy_gradient(torch, grad, noise, generators):
    """Gradient noise and the explicit model of a non-deterministic reduction, one generator per network."""
    P = grad.shape[1]

    def normal():
        return torch.stack([torch.randn(P, generator=g, dtype=torch.float64) for g in generators]).to(grad)

    if noise.grad_noise > 0:
        grad = grad + noise.grad_noise * normal()
    if noise.reduction_noise > 0:
        grad = grad * (1.0 + noise.reduction_noise * normal())
    return grad


# Blumenfeld et al.'s architectures and noise sources (registered here so that importing the trainer is enough)
from .symmetric_nets import _ADAPTER, _SPECS, ConstNetSpec, LeakyNetSpec, SymmetryBreaking  # noqa: E402

for _spec in _SPECS:
    _NETWORK_TYPES[_spec] = _ADAPTER
del _spec
