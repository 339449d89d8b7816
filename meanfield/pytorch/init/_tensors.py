"""In-place initialisers of one weight tensor: the constructions of :mod:`meanfield.init` in PyTorch layout."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ... import init as np_init
from ..._checks import check_nonnegative_scalar
from ..._docstrings import doc_sections
from .._activations import resolve_activation
from .._torch import require_torch
from ._edge import critical_sigma_w2
from ._spec import InitSpec, _check_tensor, _copy, _draw_bias, numpy_rng

torch = require_torch()


#: The ``generator`` parameter and the Returns section of the initialisers that fill one tensor.
_DOC_GENERATOR_RETURNS = """
generator : torch.Generator, optional
    The source of the draws: one NumPy stream seeded from it (:func:`numpy_rng`; ``None``:
    PyTorch's global generator).

Returns
-------
torch.Tensor
    ``tensor``, filled in place, with ``tensor.meanfield_init`` set.
"""


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


@doc_sections(generator_returns=_DOC_GENERATOR_RETURNS)
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
    {generator_returns}

    Raises
    ------
    TypeError
        ``tensor`` not a floating-point tensor; a bad ``activation``, ``bias`` or ``generator``.
    ValueError
        A tensor of the wrong rank or empty; a negative or non-finite ``sigma_b2``.

    Notes
    -----
    The Gaussian weights of Xiao et al. 2018, eq. 2.2 (uniform variance vector ``v`` for a kernel, drawn
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


@doc_sections(generator_returns=_DOC_GENERATOR_RETURNS)
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
    {generator_returns}

    Raises
    ------
    TypeError, ValueError
        A bad tensor, negative or non-finite variances, a bad ``bias`` or ``generator``.

    Notes
    -----
    Xiao et al. 2018, eq. 2.2 (:func:`meanfield.init.gaussian_conv_kernel`, uniform ``v``) and the dense
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
    """A 1-D or square 2-D orthogonal kernel from ``make_1d`` / ``make_2d`` with ``variance(ks)`` as ``v``,
    scaled to the library convention ``fan_in * E W^2 = sigma_w2`` for any ``c_in``, ``c_out``.

    ``c_in <= c_out``: the isometry of :mod:`meanfield.init` times ``sqrt(sigma_w2 c_out / c_in)``
    (``|K * x|^2 = sigma_w2 (c_out / c_in) |x|^2``, per output unit ``sigma_w2`` times the input's
    second moment); ``c_in > c_out``: the adjoint of an isometry from ``c_out`` to ``c_in``
    channels (channels swapped, taps mirrored), orthonormal rows, times ``sqrt(sigma_w2)``.
    """
    c_out, c_in, ks = _conv_sizes(tensor, method)
    sigma_w2 = check_nonnegative_scalar(sigma_w2, "sigma_w2")
    rng = numpy_rng(generator)
    make = make_1d if len(ks) == 1 else make_2d
    if c_in <= c_out:
        kernel = make(ks[0], c_in, c_out, sigma_w2=sigma_w2 * (c_out / c_in), rng=rng)
    else:
        adjoint = make(ks[0], c_out, c_in, sigma_w2=sigma_w2, rng=rng)  # (*k, c_in, c_out)
        mirrored = adjoint[(slice(None, None, -1),) * len(ks)]
        kernel = np.ascontiguousarray(np.swapaxes(mirrored, -1, -2))
    return _from_library(tensor, method, sigma_w2, kernel, variance(ks))


def orthogonal_conv_(tensor: Any, sigma_w2: float = 1.0, *, generator: Any = None) -> Any:
    """Orthogonal convolution kernel, Algorithm 1 of Xiao et al. 2018 (:func:`meanfield.init.orthogonal_conv_kernel`).

    With ``padding=k // 2, padding_mode="circular"`` the convolution by the kernel is an isometry
    (``c_in <= c_out``) or co-isometry (orthonormal rows, ``c_in > c_out``) for every spatial size
    (Definition 2.1 of Xiao et al. 2018), scaled so that ``fan_in * E W^2 = sigma_w2``: the factor is
    ``sqrt(sigma_w2 * c_out / c_in)`` for ``c_in <= c_out`` (``sqrt(sigma_w2)``, the paper's
    ``gain``, for square kernels) and ``sqrt(sigma_w2)`` for ``c_in > c_out``.

    Parameters
    ----------
    tensor : torch.Tensor
        ``Conv1d`` weight ``(c_out, c_in, k)`` or ``Conv2d`` weight ``(c_out, c_in, k, k)``.
    sigma_w2 : float
        ``fan_in * E W^2`` (>= 0, finite).
    generator : torch.Generator, optional

    Returns
    -------
    torch.Tensor
        ``tensor`` (``tensor.meanfield_init.v`` is the binomial variance vector that Algorithm 1
        realises on average, :func:`meanfield.init.orthogonal_kernel_variance`).

    Raises
    ------
    TypeError, ValueError
        A tensor that is not a 1-D or square 2-D convolution weight, a bad ``sigma_w2`` or a
        request beyond :data:`meanfield.init.MAX_KERNEL_WORK`.

    Notes
    -----
    Xiao et al. 2018, Algorithm 1 and eq. 2.17.
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
    """Delta-orthogonal kernel, Algorithm 2 of Xiao et al. 2018 (:func:`meanfield.init.delta_orthogonal_kernel`).

    Parameters
    ----------
    tensor, sigma_w2, generator
        As in :func:`orthogonal_conv_`.

    Returns
    -------
    torch.Tensor
        ``tensor``: a Haar ``c_out x c_in`` matrix with orthonormal columns (``c_in <= c_out``)
        times ``sqrt(sigma_w2 c_out / c_in)``, or with orthonormal rows times ``sqrt(sigma_w2)``,
        at the centre tap, zero elsewhere (``meanfield_init.v`` one-hot): ``fan_in * E W^2 =
        sigma_w2`` in both cases.

    Raises
    ------
    TypeError, ValueError
        As :func:`orthogonal_conv_`.

    Notes
    -----
    Xiao et al. 2018, Algorithm 2.
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


@doc_sections(generator_returns=_DOC_GENERATOR_RETURNS)
def looks_linear_(tensor: Any, sigma_w2: float = 1.0, *, generator: Any = None) -> Any:
    """Orthogonal looks-linear weights ``[[U, -U], [-U, U]]`` (Burkholz & Dubatovka 2019 Sec. 3; Blumenfeld et al. 2020 eq. 8 for kernels).

    Parameters
    ----------
    tensor : torch.Tensor
        ``Linear`` weight ``(out, in)`` with even sizes (:func:`meanfield.init.orthogonal_looks_linear`),
        or a ``Conv1d``/``Conv2d`` weight ``(n, n, *k)`` with ``n`` even
        (:func:`meanfield.init.looks_linear_delta_orthogonal`: ``Delta (x) [[U, -U], [-U, U]]``).
    sigma_w2 : float
        ``U = sqrt(sigma_w2) Q`` with ``Q`` Haar orthogonal (>= 0, finite).
    {generator_returns}

    Raises
    ------
    TypeError, ValueError
        Odd sizes, a non-square convolution, a bad ``sigma_w2`` or tensor.

    Notes
    -----
    A ReLU network so initialised propagates its pre-activation half as the linear network
    ``prod_l U_l`` (Burkholz & Dubatovka 2019, Sec. 3): dynamical isometry at any depth.
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


@doc_sections(generator_returns=_DOC_GENERATOR_RETURNS)
def gsm_(tensor: Any, sigma_w2: float = 2.0, *, generator: Any = None) -> Any:
    """Gaussian submatrix (GSM) weights ``[[W0, -W0], [-W0, W0]]``, ``W0 ~ N(0, sigma_w2 / n_in)`` (Burkholz & Dubatovka 2019, Sec. 3).

    Parameters
    ----------
    tensor : torch.Tensor
        ``Linear`` weight ``(out, in)`` with even sizes.
    sigma_w2 : float
        ``n_in * Var W0_ij`` (the paper's He-like ``2 / N`` is ``sigma_w2 = 2``, the default).
    {generator_returns}

    Raises
    ------
    TypeError, ValueError
        Not a 2-D floating tensor, odd sizes, a bad ``sigma_w2``.

    Notes
    -----
    :func:`meanfield.init.gsm`; Burkholz & Dubatovka 2019, Sec. 3.
    """
    _check_tensor(tensor, ndims=(2,))
    rng = numpy_rng(generator)
    w = np_init.gsm(int(tensor.shape[0]), int(tensor.shape[1]), sigma_w2, rng)
    return _from_library(tensor, "gsm_", sigma_w2, w)


def zero_(tensor: Any) -> Any:
    """ZerO weights (deterministic, Hadamard-based; :func:`meanfield.init.zero_weights`; Grzejdziak 2023 part 3).

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
    """ZerO* (Grzejdziak 2023, part 3 Sec. A): a random first layer (``Var W = 1 / n_in``), ZerO elsewhere.

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
    """A ConstNet tensor (Blumenfeld et al. 2020, Sec. 3.1, App. A): the averaging layer ``Delta (x) 11^T / n_in`` or zeros.

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
        ``tensor``, filled in place with the averaging or the zero tensor (``tensor.meanfield_init``
        set, deterministic).

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
    """LeakyNet tensor of layer ``layer`` (1-based): ``s_l Delta (x) M_l``, ``s_l = -1 / slope`` on odd layers (Blumenfeld et al. 2020, Sec. 5.1).

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
        ``tensor``, filled in place with ``s_l Delta (x) M_l`` (``tensor.meanfield_init`` set, deterministic).

    Raises
    ------
    TypeError, ValueError
        A non-square tensor, ``layer < 1``, ``slope`` outside (0, 1], an unknown ``kind``.

    Notes
    -----
    :func:`meanfield.init.leakynet`.
    """
    from ..._checks import check_int

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
