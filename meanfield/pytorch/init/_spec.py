"""Initialiser records and the NumPy stream drawn from a ``torch.Generator``."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..._results import Result
from .._torch import require_torch

torch = require_torch()


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
        on average (Xiao et al. 2018, eq. 2.2): uniform for Gaussian kernels, one-hot for delta-orthogonal,
        binomial for Algorithm 1 (:func:`meanfield.init.orthogonal_kernel_variance`); ``None`` for
        dense weights.
    gaussian : bool
        Whether the entries are i.i.d. Gaussian (the kurtosis recursion of Grzejdziak 2023 assumes it).
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
