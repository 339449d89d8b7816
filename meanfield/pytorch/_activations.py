"""PyTorch activation modules as the library's :class:`meanfield.activations.Activation` objects.

============================================  =====================================================
PyTorch module                                library activation
============================================  =====================================================
``nn.Tanh``                                   ``"tanh"``
``nn.ReLU``                                   ``"relu"``
``nn.LeakyReLU(negative_slope=a)``            ``"leaky_relu"`` with ``slope=a``
``nn.PReLU()`` (one weight ``a``)             ``"leaky_relu"`` with ``slope=a`` (its value now; a
                                              PReLU with one weight per channel is refused)
``nn.RReLU(lower, upper)`` in eval mode       ``"leaky_relu"`` with ``slope=(lower + upper) / 2``
                                              (in training mode it is random: refused)
``nn.GELU()`` (``approximate="none"``)        ``"gelu"`` (exact, ``x Phi(x)``)
``nn.SiLU``                                   ``"swish"`` (``x sigmoid(x)``)
``nn.Sigmoid``                                ``"sigmoid"``
``nn.Softplus()`` (``beta=1``)                ``"softplus"`` (PyTorch returns ``x`` above ``threshold=20``,
                                              where ``log(1 + e^x) - x < 2.1e-9``)
``nn.Hardtanh(-b, b)``                        ``"hard_tanh"`` with ``bound=b`` (``"hard_tanh"`` for b = 1)
``nn.ELU(alpha=a)``                           ``"elu"`` with ``alpha=a``
``nn.CELU(alpha=1)``                          ``"elu"`` with ``alpha=1`` (the same function)
``nn.SELU``                                   ``"selu"``
``nn.Identity``; ``nn.Dropout*`` in eval mode ``"linear"`` (dropout in training mode is random: refused)
anything else (and other parameters)          :meth:`Activation.from_functions` with the module's
                                              own function, its derivatives by autograd in float64
                                              (kinks and jumps located by its breakpoint scan);
                                              a module whose output is random is refused
============================================  =====================================================

Functional activations written inside ``forward`` (``torch.nn.functional.gelu``, ``torch.tanh``)
have no module; :func:`meanfield.pytorch.trace.trace` finds them all the same (``torch.fx``, or the
hooks of a real forward pass), so :func:`meanfield.pytorch.critical_init_` picks them up. An
explicit ``activation`` overrides the traced ones.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..activations import Activation, get_activation

__all__ = ["ACTIVATION_MODULES", "activation_from_module", "is_activation_module", "resolve_activation"]

#: PyTorch module class names recognised as activations (mapped to built-ins when their
#: parameters are the defaults listed in the module docstring).
ACTIVATION_MODULES = (
    "Tanh",
    "ReLU",
    "LeakyReLU",
    "GELU",
    "SiLU",
    "Sigmoid",
    "Softplus",
    "Hardtanh",
    "Identity",
    "ReLU6",
    "ELU",
    "SELU",
    "CELU",
    "Mish",
    "Hardswish",
    "Hardsigmoid",
    "Softsign",
    "Tanhshrink",
    "LogSigmoid",
    "PReLU",
    "RReLU",
)

#: Modules that draw random numbers in training mode (refused there; the identity, or RReLU's mean
#: slope, in eval mode).
_RANDOM_MODULES = ("Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout", "RReLU")


def _torch():
    from ._torch import require_torch

    return require_torch()


def is_activation_module(module: Any) -> bool:
    """Whether ``module`` is one of PyTorch's elementwise activation modules (:data:`ACTIVATION_MODULES`)."""
    torch = _torch()
    return (
        isinstance(module, torch.nn.Module)
        and type(module).__name__ in ACTIVATION_MODULES
        and (type(module).__module__.startswith("torch.nn"))
    )


def _from_module_function(module, name: str) -> Activation:
    """``Activation.from_functions`` with phi = the module itself (float64), phi' and phi'' by autograd."""
    torch = _torch()

    def _eval(x, order):
        t = torch.as_tensor(np.asarray(x, dtype=np.float64)).clone().requires_grad_(order > 0)
        with torch.enable_grad():
            y = module(t)
            if order == 0:
                return y.detach().numpy()
            (g,) = torch.autograd.grad(y.sum(), t, create_graph=order > 1)
            if order == 1:
                return g.detach().numpy()
            if not g.requires_grad:  # piecewise linear: phi'' = 0 almost everywhere
                return np.zeros(np.shape(x))
            (g2,) = torch.autograd.grad(g.sum(), t)
            return g2.detach().numpy()

    probe = np.linspace(-4.0, 4.0, 17)
    first, second = _eval(probe, 0), _eval(probe, 0)
    if np.shape(first) == probe.shape and not np.array_equal(first, second, equal_nan=True):
        raise ValueError(
            f"module {name} returns different values for the same input: a random module has no "
            "mean-field activation (put it in eval mode, or pass the activation it stands for)"
        )
    # kinks and jumps (ReLU6, Hardswish, asymmetric Hardtanh, ...) are found by from_functions' scan
    return Activation.from_functions(name, lambda x: _eval(x, 0), lambda x: _eval(x, 1), lambda x: _eval(x, 2))


def activation_from_module(module: Any) -> Activation:
    """The library's :class:`~meanfield.activations.Activation` for a PyTorch activation module.

    Parameters
    ----------
    module : torch.nn.Module
        An elementwise activation module (see the table in the module docstring), or any
        elementwise ``nn.Module`` (taken through :meth:`Activation.from_functions`).

    Returns
    -------
    Activation
        A built-in activation (Numba kernels, closed forms where known) for the modules of the table
        with their default parameters; otherwise a user-defined activation evaluating the module in
        float64, its derivatives by autograd.

    Raises
    ------
    TypeError
        ``module`` is not a ``torch.nn.Module``.
    ValueError
        The module's output on a float64 vector has a different shape from its input, it returns
        NaN/inf on the probe points of :meth:`Activation.from_functions`, or it is random (dropout
        or RReLU in training mode, or any module whose output differs between two calls on the
        same input); a PReLU with more than one weight. Only the shape is checked: a module that
        keeps the shape but mixes entries (``nn.Softmax``, a cumulative sum) is accepted as if it
        acted elementwise, and the result is not its mean-field activation. A module that cannot
        run on a float64 vector (``nn.LayerNorm`` and ``nn.Linear`` with float32 parameters)
        raises PyTorch's own ``RuntimeError``.
    ImportError
        PyTorch is missing (``pip install "meanfield-theory[torch]"``).
    """
    torch = _torch()
    nn = torch.nn
    if not isinstance(module, nn.Module):
        raise TypeError(f"module must be a torch.nn.Module, got {type(module).__name__}")
    kind = type(module)
    if kind is nn.Tanh:
        return get_activation("tanh")
    if kind is nn.ReLU:
        return get_activation("relu")
    if kind is nn.LeakyReLU:
        return get_activation("leaky_relu", slope=float(module.negative_slope))
    if kind is nn.GELU and module.approximate == "none":
        return get_activation("gelu")
    if kind is nn.SiLU:
        return get_activation("swish")
    if kind is nn.Sigmoid:
        return get_activation("sigmoid")
    if kind is nn.Softplus and float(module.beta) == 1.0 and float(module.threshold) >= 20.0:
        return get_activation("softplus")
    if kind is nn.Hardtanh and float(module.min_val) == -float(module.max_val) > -math.inf:
        return get_activation("hard_tanh", bound=float(module.max_val))
    if kind is nn.ELU:
        return get_activation("elu", alpha=float(module.alpha))
    if kind is nn.CELU and float(module.alpha) == 1.0:
        return get_activation("elu", alpha=1.0)
    if kind is nn.SELU:
        return get_activation("selu")
    if kind is nn.PReLU:
        weight = module.weight.detach()
        if weight.numel() != 1:
            raise ValueError(
                f"nn.PReLU with {weight.numel()} weights (one slope per channel) is not one elementwise "
                "activation; the mean-field theory needs a single slope (nn.PReLU(num_parameters=1))"
            )
        return get_activation("leaky_relu", slope=float(weight.reshape(-1)[0]))
    if type(module).__name__ in _RANDOM_MODULES and kind.__module__.startswith("torch.nn"):
        if module.training:
            raise ValueError(
                f"{kind.__name__} in training mode is random (a fresh draw on every call): it has no "
                "mean-field activation; call .eval() on the model first"
            )
        if kind is nn.RReLU:  # eval mode: the fixed slope (lower + upper) / 2
            return get_activation("leaky_relu", slope=0.5 * (float(module.lower) + float(module.upper)))
        return get_activation("linear")  # dropout in eval mode is the identity
    if kind is nn.Identity:
        return get_activation("linear")
    return _from_module_function(module, f"torch:{module!r}")


def resolve_activation(activation: Any) -> Activation:
    """An ``Activation`` from a library name, an ``Activation``, or a PyTorch activation module.

    Raises ``ValueError`` for an unknown name and ``TypeError`` for any other object.
    """
    if isinstance(activation, (str, Activation)):
        return get_activation(activation)
    torch = _torch()
    if isinstance(activation, torch.nn.Module):
        return activation_from_module(activation)
    raise TypeError(
        f"activation must be a library name such as 'tanh', an Activation, or a torch.nn activation module, "
        f"got {type(activation).__name__}"
    )
