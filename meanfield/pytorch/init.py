r"""``torch.nn.init``-style initialisers: the constructions of :mod:`meanfield.init` on PyTorch tensors.

Every initialiser works in place on a weight tensor (trailing underscore), under
``torch.no_grad()``, takes ``generator=`` (a ``torch.Generator``; ``None`` uses PyTorch's global
generator, so ``torch.manual_seed`` applies as for ``torch.nn.init``) and returns the tensor. None
re-implements an algorithm: each draws a NumPy stream from the generator (:func:`numpy_rng`),
calls the NumPy construction of :mod:`meanfield.init` and copies the result into the tensor in
PyTorch's layout (``Linear``: ``(out, in)``; ``Conv1d/2d``: ``(c_out, c_in, *k)``, converted with
:func:`meanfield.init.to_torch_layout`). The same seed therefore gives the same numbers as the
NumPy function called with ``rng=numpy_rng(generator)``.

============================  ==============================================================  =========
initialiser                   construction                                                    seed
============================  ==============================================================  =========
:func:`critical_normal_`      Gaussian at the edge of chaos, ``sigma_w2`` solving chi_1 = 1   003 eq. 2.7
:func:`orthogonal_conv_`      :func:`meanfield.init.orthogonal_conv_kernel` (Algorithm 1)      003
:func:`delta_orthogonal_`     :func:`meanfield.init.delta_orthogonal_kernel` (Algorithm 2)     003
:func:`looks_linear_`         :func:`meanfield.init.orthogonal_looks_linear` (dense) or        001, 000
                              :func:`meanfield.init.looks_linear_delta_orthogonal` (conv)
:func:`gsm_`                  :func:`meanfield.init.gsm`                                       001
:func:`zero_`                 :func:`meanfield.init.zero_weights` (ZerO, deterministic)        002
:func:`zero_star_`            :func:`meanfield.init.zero_star_network` (ZerO*)                 002
:func:`constnet_`             :func:`meanfield.init.averaging_conv` or zeros (ConstNet)        000
:func:`leakynet_`             :func:`meanfield.init.leakynet` (LeakyNet layer ``l``)            000
:func:`critical_init_`        every ``Linear``/``Conv`` of a model at the edge of chaos        003
============================  ==============================================================  =========

Each initialiser records what it did on the tensor as ``tensor.meanfield_init`` (an
:class:`InitSpec`: the construction, ``sigma_w2``, ``sigma_b2``, the convolution variance vector
``v``); :func:`meanfield.pytorch.audit` reads it to re-initialise a model and to state the theory
the model was initialised for.

Conventions: ``sigma_w2`` means ``W_ij ~ N(0, sigma_w2 / fan_in)`` (``fan_in = c_in * prod(k)`` for
a convolution); orthogonal constructions are multiplied by ``sqrt(sigma_w2)`` (``sigma_w2 =
gain^2``). Convolutions must be used with ``padding=k // 2, padding_mode="circular"`` for the
periodic theory of seed 003 to hold exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import dense
from .. import init as np_init
from .._checks import check_nonnegative_scalar
from .._results import Result
from ..activations import Activation
from ..gaussian import expectation
from ._activations import is_activation_module, resolve_activation
from ._torch import require_torch

torch = require_torch()

__all__ = [
    "KERNELS",
    "InitSpec",
    "constnet_",
    "critical_init_",
    "critical_normal_",
    "critical_sigma_w2",
    "delta_orthogonal_",
    "gsm_",
    "leakynet_",
    "looks_linear_",
    "mean_field_normal_",
    "numpy_rng",
    "orthogonal_conv_",
    "recorded_spec",
    "reinitialise_",
    "tag_layers_",
    "zero_",
    "zero_star_",
]

#: Kernels accepted by :func:`critical_init_`.
KERNELS = ("delta_orthogonal", "orthogonal", "gaussian")


@dataclass(frozen=True)
class InitSpec(Result):
    """What an initialiser of :mod:`meanfield.pytorch.init` drew into a weight tensor.

    Attributes
    ----------
    method : str
        The initialiser's name (``"critical_normal_"``, ``"delta_orthogonal_"``, ...).
    sigma_w2 : float
        Weight variance in the library convention (``fan_in * E W_ij^2``).
    sigma_b2 : float or None
        Bias variance drawn into the layer's bias, ``None`` when the bias was not touched.
    v : tuple or None
        Convolution variance vector (shape of the kernel, summing to 1) that the kernel realises
        on average (seed 003, eq. 2.2): uniform for Gaussian kernels, one-hot for delta-orthogonal,
        binomial for Algorithm 1 (:func:`meanfield.init.orthogonal_kernel_variance`); ``None`` for
        dense weights.
    gaussian : bool
        Whether the entries are i.i.d. Gaussian (the kurtosis recursion of seed 002 assumes it).
    deterministic : bool
        True for constructions without randomness (ZerO, ConstNet, LeakyNet): mean-field theory,
        a statement about random weights, does not apply to them.
    kwargs : tuple
        ``(name, value)`` pairs that re-run the initialiser (:func:`reinitialise_`).
    """

    method: str
    sigma_w2: float
    sigma_b2: float | None = None
    v: tuple | None = None
    gaussian: bool = False
    deterministic: bool = False
    kwargs: tuple = ()


def _check_generator(generator) -> Any:
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator or None, got {type(generator).__name__}")
    return generator


def numpy_rng(generator: Any = None) -> np.random.Generator:
    """A NumPy Generator seeded from a PyTorch generator: the stream every initialiser here draws from.

    One 63-bit integer is drawn from ``generator`` (``torch.randint(0, 2**63 - 1, (1,))``; ``None``:
    PyTorch's global generator) and seeds ``numpy.random.default_rng``.

    Parameters
    ----------
    generator : torch.Generator or None

    Returns
    -------
    numpy.random.Generator

    Raises
    ------
    TypeError
        ``generator`` is not a ``torch.Generator`` or ``None``.
    """
    generator = _check_generator(generator)
    seed = int(torch.randint(0, 2**63 - 1, (1,), generator=generator, dtype=torch.int64).item())
    return np.random.default_rng(seed)


def _check_tensor(tensor, name: str = "tensor", ndims=(2, 3, 4, 5)) -> Any:
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(tensor).__name__}")
    if not tensor.is_floating_point():
        raise TypeError(f"{name} must hold floating-point numbers, got dtype {tensor.dtype}")
    if tensor.dim() not in ndims:
        allowed = ", ".join(str(d) for d in ndims)
        raise ValueError(
            f"{name} must have {allowed} dimensions (Linear: (out, in); ConvNd: (c_out, c_in, *k)), got shape {tuple(tensor.shape)}"
        )
    if tensor.numel() == 0:
        raise ValueError(f"{name} must not be empty, got shape {tuple(tensor.shape)}")
    return tensor


def _copy(tensor, array: np.ndarray, spec: InitSpec):
    with torch.no_grad():
        tensor.copy_(torch.from_numpy(np.ascontiguousarray(array)).to(dtype=tensor.dtype, device=tensor.device))
    tensor.meanfield_init = spec
    return tensor


def _fan_in(tensor) -> int:
    return int(tensor.shape[1]) * int(math.prod(tensor.shape[2:]))


def _draw_bias(bias, sigma_b2: float, rng: np.random.Generator) -> None:
    if bias is None:
        return
    if not isinstance(bias, torch.Tensor) or bias.dim() != 1:
        raise TypeError(f"bias must be a 1-D torch.Tensor or None, got {type(bias).__name__}")
    values = math.sqrt(sigma_b2) * rng.standard_normal(int(bias.shape[0]))
    with torch.no_grad():
        bias.copy_(torch.from_numpy(values).to(dtype=bias.dtype, device=bias.device))


def _user_q_star(act: Activation, sigma_w2: float, sigma_b2: float) -> float:
    """q* of a user-defined activation by iterating the q-map (at most 4000 steps)."""
    q = 1.0
    for _ in range(4000):
        new = dense.qmap(q, act, sigma_w2, sigma_b2)
        if not math.isfinite(new) or new > 1e12:
            return math.inf
        if abs(new - q) <= 1e-14 * max(1.0, q):
            return float(new)
        q = float(new)
    return q


#: Edge-of-chaos values of built-in activations already solved: (name, param, sigma_b2) -> sigma_w2.
_CRITICAL_CACHE: dict = {}


def _builtin_critical(act: Activation, sigma_b2: float) -> float:
    key = (act.name, act.param, sigma_b2)
    if key not in _CRITICAL_CACHE:
        if len(_CRITICAL_CACHE) > 1024:
            _CRITICAL_CACHE.clear()
        _CRITICAL_CACHE[key] = float(dense.critical_sigma_w2(act, sigma_b2))
    return _CRITICAL_CACHE[key]


def critical_sigma_w2(activation: Any, sigma_b2: float = 0.0) -> float:
    """The weight variance at the edge of chaos (chi_1 = 1) for ``activation`` and ``sigma_b2``.

    Built-in activations use :func:`meanfield.dense.critical_sigma_w2`; a user-defined activation
    (or a PyTorch module outside the built-ins) is solved here with Brent's method on
    ``chi_1(sigma_w2) - 1``, ``chi_1 = sigma_w2 E phi'(sqrt(q*) z)^2`` with q* from the iterated
    q-map.

    Parameters
    ----------
    activation : str, Activation or torch.nn.Module
    sigma_b2 : float
        Bias variance (>= 0, finite).

    Returns
    -------
    float
        ``sigma_w2 > 0``.

    Raises
    ------
    ValueError
        Negative or non-finite ``sigma_b2``; no edge of chaos in ``(1e-6, 100)``.
    TypeError
        A bad ``activation`` or a non-real ``sigma_b2``.

    Notes
    -----
    Seed 003, eq. 2.7 (chi_1); Schoenholz et al. (2017), eq. 5.
    """
    act = resolve_activation(activation)
    sigma_b2 = check_nonnegative_scalar(sigma_b2, "sigma_b2")
    if act.is_builtin:
        return _builtin_critical(act, sigma_b2)
    from scipy.optimize import brentq

    def excess(sw):
        q = _user_q_star(act, sw, sigma_b2)
        if not math.isfinite(q):
            return 1.0
        return sw * float(expectation(act, q, (1, 1))) - 1.0

    lo, hi = 1e-6, 100.0
    if excess(lo) > 0 or excess(hi) < 0:
        raise ValueError(
            f"activation {act.name!r} has no edge of chaos for sigma_w2 in (1e-6, 100) at sigma_b2={sigma_b2}"
        )
    return float(brentq(excess, lo, hi, xtol=1e-13, rtol=1e-12, maxiter=200))


def _is_conv_weight(tensor) -> bool:
    return tensor.dim() >= 3


def _kernel_shape(tensor) -> tuple[int, ...]:
    return tuple(int(s) for s in tensor.shape[2:])


def _gaussian_array(tensor, sigma_w2: float, rng) -> tuple[np.ndarray, tuple | None]:
    c_out, c_in = int(tensor.shape[0]), int(tensor.shape[1])
    if not _is_conv_weight(tensor):
        return np_init.dense_weights(c_out, c_in, sigma_w2, "gaussian", rng), None
    ks = _kernel_shape(tensor)
    if len(ks) in (1, 2) and all(k % 2 == 1 for k in ks):
        kernel = np_init.gaussian_conv_kernel(ks, c_in, c_out, sigma_w2=sigma_w2, rng=rng)
        v = np.full(ks, 1.0 / math.prod(ks))
        return np_init.to_torch_layout(kernel), _tuple(v)
    # Conv3d or even kernels: i.i.d. N(0, sigma_w2 / fan_in) entries, the same law, drawn densely
    flat = np_init.dense_weights(c_out, c_in * math.prod(ks), sigma_w2, "gaussian", rng)
    return flat.reshape(tensor.shape), _tuple(np.full(ks, 1.0 / math.prod(ks)))


def _tuple(v: np.ndarray) -> tuple:
    return tuple(map(_tuple, v)) if v.ndim > 1 else tuple(float(x) for x in v)


def critical_normal_(
    tensor: Any, activation: Any, sigma_b2: float = 0.0, bias: Any = None, *, generator: Any = None
) -> Any:
    """Gaussian weights at the edge of chaos: ``W_ij ~ N(0, sigma_w2* / fan_in)`` with chi_1(sigma_w2*) = 1.

    Parameters
    ----------
    tensor : torch.Tensor
        ``Linear`` weight ``(out, in)`` or ``ConvNd`` weight ``(c_out, c_in, *k)``; filled in place.
    activation : str, Activation or torch.nn.Module
        The activation whose edge of chaos is wanted (a library name, an ``Activation``, or a
        PyTorch activation module; see :mod:`meanfield.pytorch._activations`).
    sigma_b2 : float
        Bias variance (>= 0, finite); the edge of chaos depends on it.
    bias : torch.Tensor, optional
        The layer's bias, drawn ``N(0, sigma_b2)`` in place after the weights.
    generator : torch.Generator, optional

    Returns
    -------
    torch.Tensor
        ``tensor``, with ``tensor.meanfield_init`` set.

    Raises
    ------
    TypeError
        ``tensor`` not a floating-point tensor; a bad ``activation``, ``bias`` or ``generator``.
    ValueError
        A tensor of the wrong rank or empty; a negative or non-finite ``sigma_b2``.

    Notes
    -----
    The Gaussian weights of seed 003, eq. 2.2 (uniform variance vector ``v`` for a kernel, drawn
    by :func:`meanfield.init.gaussian_conv_kernel`; dense weights by
    :func:`meanfield.init.dense_weights`) with ``sigma_w2`` from :func:`critical_sigma_w2`
    (chi_1 = 1, eq. 2.7).

    Examples
    --------
    >>> import torch
    >>> layer = torch.nn.Linear(256, 256)
    >>> _ = critical_normal_(layer.weight, "tanh", 0.05, layer.bias, generator=torch.Generator().manual_seed(0))
    >>> round(layer.weight.meanfield_init.sigma_w2, 4)
    1.761
    """
    _check_tensor(tensor)
    sigma_b2 = check_nonnegative_scalar(sigma_b2, "sigma_b2")
    act = resolve_activation(activation)
    sigma_w2 = critical_sigma_w2(act, sigma_b2)
    return _normal(tensor, sigma_w2, sigma_b2, bias, generator, "critical_normal_", (("activation", act.name),))


def _normal(tensor, sigma_w2, sigma_b2, bias, generator, method, extra=()):
    rng = numpy_rng(generator)
    array, v = _gaussian_array(tensor, sigma_w2, rng)
    _draw_bias(bias, sigma_b2, rng)
    spec = InitSpec(
        method,
        sigma_w2,
        sigma_b2 if bias is not None else None,
        v,
        gaussian=True,
        kwargs=(("sigma_w2", sigma_w2), ("sigma_b2", sigma_b2)) + tuple(extra),
    )
    return _copy(tensor, array, spec)


def mean_field_normal_(
    tensor: Any, sigma_w2: float, sigma_b2: float = 0.0, bias: Any = None, *, generator: Any = None
) -> Any:
    """Gaussian weights of the mean-field convention at any ``sigma_w2``: ``W_ij ~ N(0, sigma_w2 / fan_in)``.

    The law of :func:`critical_normal_` without the edge-of-chaos choice: used to place a network
    in the ordered (chi_1 < 1) or chaotic (chi_1 > 1) phase.

    Parameters
    ----------
    tensor : torch.Tensor
        ``Linear`` weight ``(out, in)`` or ``ConvNd`` weight ``(c_out, c_in, *k)``.
    sigma_w2 : float
        Weight variance times fan-in (>= 0, finite).
    sigma_b2 : float
        Bias variance (>= 0, finite).
    bias : torch.Tensor, optional
        Drawn ``N(0, sigma_b2)`` after the weights.
    generator : torch.Generator, optional

    Returns
    -------
    torch.Tensor

    Raises
    ------
    TypeError, ValueError
        A bad tensor, negative or non-finite variances, a bad ``bias`` or ``generator``.

    Notes
    -----
    Seed 003, eq. 2.2 (:func:`meanfield.init.gaussian_conv_kernel`, uniform ``v``) and the dense
    convention of :func:`meanfield.init.dense_weights`.
    """
    _check_tensor(tensor)
    sigma_w2 = check_nonnegative_scalar(sigma_w2, "sigma_w2")
    sigma_b2 = check_nonnegative_scalar(sigma_b2, "sigma_b2")
    return _normal(tensor, sigma_w2, sigma_b2, bias, generator, "mean_field_normal_")


def _conv_sizes(tensor, name: str):
    _check_tensor(tensor, ndims=(3, 4))
    c_out, c_in = int(tensor.shape[0]), int(tensor.shape[1])
    ks = _kernel_shape(tensor)
    if len(ks) == 2 and ks[0] != ks[1]:
        raise ValueError(f"{name} needs a square k x k kernel, got kernel shape {ks}")
    return c_out, c_in, ks


def _centre_tap(ks: tuple[int, ...]) -> np.ndarray:
    """The one-hot variance vector of a kernel with weight only at the centre tap ``k // 2``."""
    v = np.zeros(ks)
    v[tuple(k // 2 for k in ks)] = 1.0
    return v


def _from_library(tensor, method: str, sigma_w2: float, array: np.ndarray, v: np.ndarray | None = None):
    """The one converter of the ``sigma_w2``-scaled constructions of :mod:`meanfield.init` into a tensor.

    ``array`` is in the library's layout: a dense ``(n_out, n_in)`` matrix, copied as it is, or a
    kernel ``(*k, c_out, c_in)``, converted by :func:`meanfield.init.to_torch_layout`; the tensor's
    ``meanfield_init`` records ``method``, ``sigma_w2`` and the kernel's variance vector ``v``.
    """
    spec = InitSpec(
        method, float(sigma_w2), None, None if v is None else _tuple(v), kwargs=(("sigma_w2", float(sigma_w2)),)
    )
    return _copy(tensor, array if tensor.dim() == 2 else np_init.to_torch_layout(array), spec)


def _orthogonal_kernel_(tensor, method: str, sigma_w2: float, generator, make_1d, make_2d, variance):
    """A 1-D or square 2-D orthogonal kernel from ``make_1d`` / ``make_2d`` with ``variance(ks)`` as ``v``."""
    c_out, c_in, ks = _conv_sizes(tensor, method)
    rng = numpy_rng(generator)
    make = make_1d if len(ks) == 1 else make_2d
    kernel = make(ks[0], c_in, c_out, sigma_w2=sigma_w2, rng=rng)
    return _from_library(tensor, method, sigma_w2, kernel, variance(ks))


def orthogonal_conv_(tensor: Any, sigma_w2: float = 1.0, *, generator: Any = None) -> Any:
    """Orthogonal convolution kernel, Algorithm 1 of seed 003 (:func:`meanfield.init.orthogonal_conv_kernel`).

    With ``padding=k // 2, padding_mode="circular"`` the convolution by the kernel is an isometry
    times ``sqrt(sigma_w2)`` for every spatial size (Definition 2.1 of seed 003).

    Parameters
    ----------
    tensor : torch.Tensor
        ``Conv1d`` weight ``(c_out, c_in, k)`` or ``Conv2d`` weight ``(c_out, c_in, k, k)``,
        ``c_in <= c_out``.
    sigma_w2 : float
        ``gain^2`` (>= 0, finite).
    generator : torch.Generator, optional

    Returns
    -------
    torch.Tensor
        ``tensor`` (``tensor.meanfield_init.v`` is the binomial variance vector that Algorithm 1
        realises on average, :func:`meanfield.init.orthogonal_kernel_variance`).

    Raises
    ------
    TypeError, ValueError
        A tensor that is not a 1-D or square 2-D convolution weight, ``c_in > c_out``, a bad
        ``sigma_w2`` or a request beyond :data:`meanfield.init.MAX_KERNEL_WORK`.

    Notes
    -----
    Seed 003, Algorithm 1 and eq. 2.17.
    """
    return _orthogonal_kernel_(
        tensor,
        "orthogonal_conv_",
        sigma_w2,
        generator,
        np_init.orthogonal_conv_kernel_1d,
        np_init.orthogonal_conv_kernel,
        lambda ks: np_init.orthogonal_kernel_variance(ks[0], ndim=len(ks)),
    )


def delta_orthogonal_(tensor: Any, sigma_w2: float = 1.0, *, generator: Any = None) -> Any:
    """Delta-orthogonal kernel, Algorithm 2 of seed 003 (:func:`meanfield.init.delta_orthogonal_kernel`).

    Parameters
    ----------
    tensor, sigma_w2, generator
        As in :func:`orthogonal_conv_`.

    Returns
    -------
    torch.Tensor
        ``tensor``: a Haar-orthogonal ``c_out x c_in`` matrix times ``sqrt(sigma_w2)`` at the
        centre tap, zero elsewhere (``meanfield_init.v`` one-hot).

    Raises
    ------
    TypeError, ValueError
        As :func:`orthogonal_conv_`.

    Notes
    -----
    Seed 003, Algorithm 2.
    """
    return _orthogonal_kernel_(
        tensor,
        "delta_orthogonal_",
        sigma_w2,
        generator,
        np_init.delta_orthogonal_kernel_1d,
        np_init.delta_orthogonal_kernel,
        _centre_tap,
    )


def _orthogonal_dense_(tensor, sigma_w2: float, generator) -> Any:
    """Dense orthogonal law of :func:`meanfield.init.dense_weights` (``law="orthogonal"``)."""
    _check_tensor(tensor, ndims=(2,))
    rng = numpy_rng(generator)
    w = np_init.dense_weights(int(tensor.shape[0]), int(tensor.shape[1]), sigma_w2, "orthogonal", rng)
    return _from_library(tensor, "orthogonal", sigma_w2, w)


def looks_linear_(tensor: Any, sigma_w2: float = 1.0, *, generator: Any = None) -> Any:
    """Orthogonal looks-linear weights ``[[U, -U], [-U, U]]`` (seed 001 Sec. 3; seed 000 eq. 8 for kernels).

    Parameters
    ----------
    tensor : torch.Tensor
        ``Linear`` weight ``(out, in)`` with even sizes (:func:`meanfield.init.orthogonal_looks_linear`),
        or a ``Conv1d``/``Conv2d`` weight ``(n, n, *k)`` with ``n`` even
        (:func:`meanfield.init.looks_linear_delta_orthogonal`: ``Delta (x) [[U, -U], [-U, U]]``).
    sigma_w2 : float
        ``U = sqrt(sigma_w2) Q`` with ``Q`` Haar orthogonal (>= 0, finite).
    generator : torch.Generator, optional

    Returns
    -------
    torch.Tensor

    Raises
    ------
    TypeError, ValueError
        Odd sizes, a non-square convolution, a bad ``sigma_w2`` or tensor.

    Notes
    -----
    A ReLU network so initialised propagates its pre-activation half as the linear network
    ``prod_l U_l`` (seed 001, Sec. 3): dynamical isometry at any depth.
    """
    _check_tensor(tensor, ndims=(2, 3, 4))
    rng = numpy_rng(generator)
    if tensor.dim() == 2:
        w = np_init.orthogonal_looks_linear(int(tensor.shape[0]), int(tensor.shape[1]), sigma_w2, rng)
        return _from_library(tensor, "looks_linear_", sigma_w2, w)
    c_out, c_in, ks = int(tensor.shape[0]), int(tensor.shape[1]), _kernel_shape(tensor)
    if c_out != c_in:
        raise ValueError(f"looks_linear_ on a convolution needs c_out == c_in, got {c_out} and {c_in}")
    kernel = np_init.looks_linear_delta_orthogonal(c_out, ks, sigma_w2, rng)
    return _from_library(tensor, "looks_linear_", sigma_w2, kernel, _centre_tap(ks))


def gsm_(tensor: Any, sigma_w2: float = 2.0, *, generator: Any = None) -> Any:
    """Gaussian submatrix (GSM) weights ``[[W0, -W0], [-W0, W0]]``, ``W0 ~ N(0, sigma_w2 / n_in)`` (seed 001, Sec. 3).

    Parameters
    ----------
    tensor : torch.Tensor
        ``Linear`` weight ``(out, in)`` with even sizes.
    sigma_w2 : float
        ``n_in * Var W0_ij`` (the paper's He-like ``2 / N`` is ``sigma_w2 = 2``, the default).
    generator : torch.Generator, optional

    Returns
    -------
    torch.Tensor

    Raises
    ------
    TypeError, ValueError
        Not a 2-D floating tensor, odd sizes, a bad ``sigma_w2``.

    Notes
    -----
    :func:`meanfield.init.gsm`; seed 001, Sec. 3.
    """
    _check_tensor(tensor, ndims=(2,))
    rng = numpy_rng(generator)
    w = np_init.gsm(int(tensor.shape[0]), int(tensor.shape[1]), sigma_w2, rng)
    return _from_library(tensor, "gsm_", sigma_w2, w)


def zero_(tensor: Any) -> Any:
    """ZerO weights (deterministic, Hadamard-based; :func:`meanfield.init.zero_weights`; seed 002 part 3).

    Parameters
    ----------
    tensor : torch.Tensor
        ``Linear`` weight ``(out, in)``.

    Returns
    -------
    torch.Tensor
        Partial identity when ``out <= in``, else a scaled Hadamard block.

    Raises
    ------
    TypeError, ValueError
        Not a 2-D floating tensor.
    """
    _check_tensor(tensor, ndims=(2,))
    w = np_init.zero_weights(int(tensor.shape[0]), int(tensor.shape[1]))
    return _copy(tensor, w, InitSpec("zero_", float(np.sum(w**2)) / int(tensor.shape[0]), deterministic=True))


def zero_star_(tensors: Any, law: str = "gaussian", *, generator: Any = None) -> list:
    """ZerO* (seed 002, part 3 Sec. A): a random first layer (``Var W = 1 / n_in``), ZerO elsewhere.

    Parameters
    ----------
    tensors : sequence of torch.Tensor
        The ``Linear`` weights of a network in order, ``tensors[l].shape[1] == tensors[l-1].shape[0]``.
    law : {"gaussian", "uniform", "rademacher"}
        Law of the first layer's entries.
    generator : torch.Generator, optional

    Returns
    -------
    list of torch.Tensor

    Raises
    ------
    TypeError, ValueError
        Not a sequence of 2-D floating tensors with chained shapes; an unknown ``law``.

    Notes
    -----
    :func:`meanfield.init.zero_star_network`.
    """
    if isinstance(tensors, torch.Tensor) or not isinstance(tensors, (list, tuple)) or not tensors:
        raise TypeError("tensors must be a non-empty list of Linear weight tensors, in order")
    for i, t in enumerate(tensors):
        _check_tensor(t, f"tensors[{i}]", ndims=(2,))
    widths = [int(tensors[0].shape[1])] + [int(t.shape[0]) for t in tensors]
    for i in range(1, len(tensors)):
        if int(tensors[i].shape[1]) != int(tensors[i - 1].shape[0]):
            raise ValueError(
                f"tensors[{i}] has {int(tensors[i].shape[1])} inputs but tensors[{i - 1}] has {int(tensors[i - 1].shape[0])} outputs"
            )
    rng = numpy_rng(generator)
    mats = np_init.zero_star_network(widths, law, rng)
    out = []
    for i, (t, w) in enumerate(zip(tensors, mats)):
        spec = InitSpec("zero_star_", 1.0, None, None, gaussian=(i == 0 and law == "gaussian"), deterministic=i > 0)
        out.append(_copy(t, w, spec))
    return out


def constnet_(tensor: Any, kind: str = "average") -> Any:
    """A ConstNet tensor (seed 000, Sec. 3.1, App. A): the averaging layer ``Delta (x) 11^T / n_in`` or zeros.

    Parameters
    ----------
    tensor : torch.Tensor
        ``Linear`` weight ``(out, in)`` or ``Conv1d``/``Conv2d`` weight ``(c_out, c_in, *k)`` (odd k).
    kind : {"average", "zero"}
        ``"average"``: :func:`meanfield.init.averaging_conv` (ConstNet's first layer and widening
        skip); ``"zero"``: the zero residual branches and head.

    Returns
    -------
    torch.Tensor

    Raises
    ------
    TypeError, ValueError
        A bad tensor or ``kind``.
    """
    _check_tensor(tensor, ndims=(2, 3, 4))
    if not isinstance(kind, str) or kind not in ("average", "zero"):
        raise ValueError(f"kind must be 'average' or 'zero', got {kind!r}")
    c_out, c_in = int(tensor.shape[0]), int(tensor.shape[1])
    if kind == "zero":
        w = np.zeros(tuple(tensor.shape))
    elif tensor.dim() == 2:
        w = np_init.averaging_conv(c_out, c_in, (1,))[0]
    else:
        w = np_init.to_torch_layout(np_init.averaging_conv(c_out, c_in, _kernel_shape(tensor)))
    return _copy(tensor, w, InitSpec("constnet_", 0.0, deterministic=True, kwargs=(("kind", kind),)))


def leakynet_(tensor: Any, layer: int, slope: float = 0.01, kind: str = "I") -> Any:
    """LeakyNet tensor of layer ``layer`` (1-based): ``s_l Delta (x) M_l``, ``s_l = -1 / slope`` on odd layers (seed 000, Sec. 5.1).

    Parameters
    ----------
    tensor : torch.Tensor
        Square ``Linear`` weight ``(n, n)`` or ``Conv1d``/``Conv2d`` weight ``(n, n, *k)``.
    layer : int
        1-based layer index (its parity sets the sign and scale).
    slope : float
        Negative slope of the leaky ReLU, in (0, 1].
    kind : {"I", "1"}
        Channel matrix ``I`` or ``11^T / n``.

    Returns
    -------
    torch.Tensor

    Raises
    ------
    TypeError, ValueError
        A non-square tensor, ``layer < 1``, ``slope`` outside (0, 1], an unknown ``kind``.

    Notes
    -----
    :func:`meanfield.init.leakynet`.
    """
    from .._checks import check_int

    _check_tensor(tensor, ndims=(2, 3, 4))
    layer = check_int(layer, "layer", 1, 10**5)
    n = int(tensor.shape[0])
    if int(tensor.shape[1]) != n:
        raise ValueError(f"leakynet_ needs a square weight (n, n, ...), got shape {tuple(tensor.shape)}")
    ks = _kernel_shape(tensor) if tensor.dim() > 2 else (1,)
    kinds = [kind] if layer % 2 else ["I", kind]
    w = np_init.leakynet(kinds, n, slope, ks)[-1]
    w = w[0] if tensor.dim() == 2 else np_init.to_torch_layout(w)
    return _copy(tensor, w, InitSpec("leakynet_", 0.0, deterministic=True))


# --- whole models ----------------------------------------------------------------------------------


def _layers_in_order(model) -> list:
    """Every module of ``model`` in registration order (depth first), leaves only."""
    return [m for m in model.modules() if not list(m.children())]


def _is_weight_layer(m) -> bool:
    nn = torch.nn
    return isinstance(m, (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d))


def layer_activations(model: Any, activation: Any = None) -> dict:
    """For every ``Linear``/``Conv`` layer of ``model``, the activation whose output it consumes.

    The module graph is read in registration order: a weight layer consumes the activation module
    registered last before it; the first weight layer (which consumes the data) takes the first
    activation registered after it. ``activation`` (when given) overrides the detection.

    Returns a dict ``{module: Activation}``; raises ``ValueError`` when no activation is found and
    none is given.
    """
    leaves = _layers_in_order(model)
    if activation is not None:
        act = resolve_activation(activation)
        return {m: act for m in leaves if _is_weight_layer(m)}
    out, last = {}, None
    pending = []
    for m in leaves:
        if is_activation_module(m):
            last = resolve_activation(m)
            for p in pending:
                out[p] = last
            pending = []
        elif _is_weight_layer(m):
            if last is None:
                pending.append(m)
            else:
                out[m] = last
    if pending:
        raise ValueError(
            "no activation module found in the model's module graph (functional activations are invisible): "
            "pass activation='tanh' (or the module) to critical_init_"
        )
    return out


def critical_init_(
    model: Any,
    activation: Any = None,
    sigma_b2: float = 0.0,
    kernel: str = "delta_orthogonal",
    *,
    generator: Any = None,
) -> Any:
    """Initialise every ``Linear``/``Conv`` layer of ``model`` at the edge of chaos (chi_1 = 1).

    Each weight layer gets the critical ``sigma_w2`` of the activation whose output it consumes
    (:func:`layer_activations`: chi_1 = sigma_w2^{l+1} E phi_l'(h^l)^2 pairs the weights of layer
    ``l + 1`` with the activation of layer ``l``; the first layer, which consumes the data, takes
    the activation that follows it), and its bias ``N(0, sigma_b2)``.

    Parameters
    ----------
    model : torch.nn.Module
    activation : str, Activation or torch.nn.Module, optional
        Overrides the activation detected from the module graph (needed when the model applies
        its activations functionally inside ``forward``).
    sigma_b2 : float
        Bias variance (>= 0, finite).
    kernel : {"delta_orthogonal", "orthogonal", "gaussian"}
        ``"delta_orthogonal"``: delta-orthogonal kernels (Algorithm 2) for convolutions and
        orthogonal matrices for ``Linear`` layers (dynamical isometry, seed 003 Sec. 2.4);
        ``"orthogonal"``: Algorithm-1 kernels for convolutions, orthogonal matrices for ``Linear``;
        ``"gaussian"``: :func:`critical_normal_` everywhere. Orthogonal kernels need
        ``c_in <= c_out`` (``ValueError`` otherwise: use ``"gaussian"``).
    generator : torch.Generator, optional
        One NumPy stream is drawn from it per layer, in registration order.

    Returns
    -------
    torch.nn.Module
        ``model``, every weight tagged with its :class:`InitSpec`.

    Raises
    ------
    TypeError
        ``model`` not a ``torch.nn.Module``; a bad ``activation`` or ``generator``.
    ValueError
        An unknown ``kernel``; no activation found; a negative ``sigma_b2``; a model without
        ``Linear``/``Conv`` layers.

    Notes
    -----
    chi_1 = 1 is the edge of chaos of seed 003, eq. 2.7 (Schoenholz et al. 2017). Orthogonal
    weights have the same q-map and chi_1 as Gaussian ones in mean field, with a better-conditioned
    input-output Jacobian (seed 003, Sec. 2.4).

    Examples
    --------
    >>> import torch
    >>> net = torch.nn.Sequential(torch.nn.Linear(8, 64), torch.nn.Tanh(), torch.nn.Linear(64, 2))
    >>> _ = critical_init_(net, sigma_b2=0.05, generator=torch.Generator().manual_seed(0))
    >>> round(net[2].weight.meanfield_init.sigma_w2, 4)
    1.761
    """
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(kernel, str) or kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}")
    sigma_b2 = check_nonnegative_scalar(sigma_b2, "sigma_b2")
    _check_generator(generator)
    acts = layer_activations(model, activation)
    if not acts:
        raise ValueError("model has no Linear or Conv layer to initialise")
    cache: dict = {}
    for m, act in acts.items():
        if act.name not in cache:
            cache[act.name] = critical_sigma_w2(act, sigma_b2)
        sw = cache[act.name]
        bias = m.bias
        if kernel == "gaussian":
            critical_normal_(m.weight, act, sigma_b2, bias, generator=generator)
            continue
        if isinstance(m, torch.nn.Linear):
            _orthogonal_dense_(m.weight, sw, generator)
        elif isinstance(m, torch.nn.Conv3d):
            raise ValueError("orthogonal kernels are built in 1-D and 2-D only: use kernel='gaussian' for Conv3d")
        elif kernel == "delta_orthogonal":
            delta_orthogonal_(m.weight, sw, generator=generator)
        else:
            orthogonal_conv_(m.weight, sw, generator=generator)
        spec = m.weight.meanfield_init
        rng = numpy_rng(generator)
        _draw_bias(bias, sigma_b2, rng)
        m.weight.meanfield_init = spec.replace(
            sigma_b2=sigma_b2 if bias is not None else None,
            kwargs=spec.kwargs + (("critical", act.name),),
        )
    return tag_layers_(model)


def recorded_spec(module: Any) -> InitSpec | None:
    """The :class:`InitSpec` recorded for a layer: on its weight (``module.weight.meanfield_init``), else
    on the module itself (``module.meanfield_init``, set by :func:`critical_init_`, :func:`tag_layers_`
    and the builders; it survives ``copy.deepcopy``, which drops tensor attributes); ``None`` without one."""
    spec = getattr(getattr(module, "weight", None), "meanfield_init", None)
    if not isinstance(spec, InitSpec):
        spec = getattr(module, "meanfield_init", None)
    return spec if isinstance(spec, InitSpec) else None


def tag_layers_(model: Any) -> Any:
    """Copy every weight's :class:`InitSpec` onto its module (``module.meanfield_init``), so that the
    record survives ``copy.deepcopy``; returns ``model``."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    for m in model.modules():
        spec = getattr(getattr(m, "weight", None), "meanfield_init", None)
        if isinstance(spec, InitSpec):
            m.meanfield_init = spec
    return model


def reinitialise_(module: Any, *, generator: Any = None) -> bool:
    """Re-run the initialiser recorded on ``module.weight`` (``meanfield_init``) with a new stream.

    Returns True when the module carried a record and was re-initialised, False otherwise (the
    module is then left as it is). The bias is redrawn ``N(0, sigma_b2)`` when the record drew it.
    """
    spec = recorded_spec(module)
    if spec is None or spec.deterministic:
        return False
    w = module.weight
    kw = dict(spec.kwargs)
    bias = getattr(module, "bias", None) if spec.sigma_b2 is not None else None
    if spec.method in ("critical_normal_", "mean_field_normal_"):
        extra = tuple((k, v) for k, v in spec.kwargs if k not in ("sigma_w2", "sigma_b2"))
        _normal(w, spec.sigma_w2, kw["sigma_b2"], bias, generator, spec.method, extra)
        module.meanfield_init = w.meanfield_init
        return True
    if spec.method == "gsm_":
        gsm_(w, kw["sigma_w2"], generator=generator)
    elif spec.method == "looks_linear_":
        looks_linear_(w, kw["sigma_w2"], generator=generator)
    elif spec.method == "orthogonal":
        _orthogonal_dense_(w, kw["sigma_w2"], generator)
    elif spec.method == "delta_orthogonal_":
        delta_orthogonal_(w, kw["sigma_w2"], generator=generator)
    elif spec.method == "orthogonal_conv_":
        orthogonal_conv_(w, kw["sigma_w2"], generator=generator)
    else:
        return False
    if bias is not None:
        _draw_bias(bias, spec.sigma_b2, numpy_rng(generator))
    w.meanfield_init = spec
    module.meanfield_init = spec
    return True
