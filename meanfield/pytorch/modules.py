r"""``nn.Module`` builders for the papers' networks, initialised with :mod:`meanfield.pytorch.init`.

Every builder has the signature ``(width, depth, activation, n_in, n_out, init=..., generator=...)``
(plus a few keywords of its own) and returns an ``nn.Module`` whose weights carry their
:class:`~meanfield.pytorch.init.InitSpec`, so that :func:`meanfield.pytorch.audit` can re-initialise
it and state the theory it was built for.

- :func:`mlp`: ``Linear -> phi`` x depth ``-> Linear``, the mean-field MLP (Xiao et al. 2018);
- :func:`periodic_cnn`: circular-padding ``Conv -> phi`` x depth, mean pool, ``Linear`` (Xiao et al. 2018);
- :func:`looks_linear_mlp`, :func:`gsm_mlp`: ReLU MLPs with orthogonal looks-linear or
  Gaussian-submatrix weights (Burkholz & Dubatovka 2019);
- :func:`residual_mlp`: ``x_{l+1} = phi(W_l x_l + b_l) + x_l`` (Orhan 2017, eq. 25, ``Q_l = I``);
- :func:`hyper_residual_mlp`: plus ``(x_{l-1} + ... + x_1) / (l - 1)`` (eq. 26);
- :func:`path_residual_mlp`: a skip matrix of ones, ``x_{l+1} = phi(W x_l + b) + 11^T x_l / n``;
- :func:`constnet`: ConstNet, averaging first conv, zero residual blocks, zero head (Blumenfeld et al. 2020);
- :func:`leakynet`: LeakyNet, ``W_l = s_l Delta (x) M_l`` convolutions (Blumenfeld et al. 2020).

The path-residual skip matrix is the matrix of ones of Orhan 2017 (Sec. 2.2, eq. 4) divided by the
width, so that the skip carries the mean of the units instead of ``n`` times it (the paper's toy
network, of width 2, divides by 4 = 2 x 2 for the same reason).
"""

from __future__ import annotations

from typing import Any

from .._checks import check_int, check_nonnegative_scalar
from ._activations import resolve_activation
from ._torch import require_torch
from .init import (
    constnet_,
    critical_init_,
    critical_sigma_w2,
    gsm_,
    leakynet_,
    looks_linear_,
    mean_field_normal_,
    tag_layers_,
)

torch = require_torch()
nn = torch.nn

__all__ = [
    "INITS",
    "ConstNet",
    "LeakyNet",
    "OrhanNet",
    "Residual",
    "activation_module",
    "constnet",
    "gsm_mlp",
    "hyper_residual_mlp",
    "leakynet",
    "looks_linear_mlp",
    "mlp",
    "path_residual_mlp",
    "periodic_cnn",
    "residual_mlp",
]

#: ``init`` values of :func:`mlp` and :func:`periodic_cnn`.
INITS = ("critical", "delta_orthogonal", "orthogonal", "gaussian")

_MODULES = {
    "tanh": lambda: nn.Tanh(),
    "relu": lambda: nn.ReLU(),
    "gelu": lambda: nn.GELU(),
    "swish": lambda: nn.SiLU(),
    "sigmoid": lambda: nn.Sigmoid(),
    "softplus": lambda: nn.Softplus(),
    "hard_tanh": lambda: nn.Hardtanh(),
    "linear": lambda: nn.Identity(),
}


def activation_module(activation: Any) -> Any:
    """A fresh PyTorch module for a library activation name (``"leaky_relu"`` takes slope 0.01), or
    a copy of a given module. Raises ``ValueError`` for names without a PyTorch module (``"erf"``)."""
    import copy

    if isinstance(activation, nn.Module):
        return copy.deepcopy(activation)
    act = resolve_activation(activation)
    if act.name.startswith("leaky_relu"):
        return nn.LeakyReLU(act.param)
    base = act.name
    if base not in _MODULES:
        raise ValueError(f"activation {act.name!r} has no PyTorch module; pass an nn.Module instead")
    return _MODULES[base]()


def _sizes(width, depth, n_in, n_out):
    return (
        check_int(width, "width", 1, 2**16),
        check_int(depth, "depth", 1, 10**4),
        check_int(n_in, "n_in", 1, 2**20),
        check_int(n_out, "n_out", 1, 2**20),
    )


def _dense_stack(width, depth, activation, n_in, n_out, bias=True):
    """The layers of ``Linear(n_in, width) -> phi -> [Linear(width, width) -> phi] x (depth - 1) -> Linear(width, n_out)``.

    Parameters
    ----------
    width, depth, activation, n_in, n_out
        As in :func:`mlp` (sizes already checked).
    bias : bool
        Whether every ``Linear`` has a bias.

    Returns
    -------
    list of torch.nn.Module
        The modules in execution order (one fresh activation module after every hidden ``Linear``).
    """
    layers = [nn.Linear(n_in, width, bias=bias), activation_module(activation)]
    for _ in range(depth - 1):
        layers += [nn.Linear(width, width, bias=bias), activation_module(activation)]
    layers.append(nn.Linear(width, n_out, bias=bias))
    return layers


def _gaussian_init(model, types, sigma_w2, sigma_b2, generator):
    """Draw every ``types`` module's weight and bias with :func:`mean_field_normal_`, in module order.

    Parameters
    ----------
    model : torch.nn.Module
    types : type or tuple of type
        The weight-layer classes to initialise (``nn.Linear``, ``nn.Conv1d``, ...).
    sigma_w2, sigma_b2 : float
        The variances of every such layer.
    generator : torch.Generator or None

    Returns
    -------
    torch.nn.Module
        ``model``, its layers tagged by :func:`tag_layers_`.
    """
    for m in model.modules():
        if isinstance(m, types):
            mean_field_normal_(m.weight, sigma_w2, sigma_b2, m.bias, generator=generator)
    return tag_layers_(model)


def _initialise(model, init, activation, sigma_w2, sigma_b2, generator):
    sigma_b2 = check_nonnegative_scalar(sigma_b2, "sigma_b2")
    if not isinstance(init, str) or init not in INITS:
        raise ValueError(f"init must be one of {INITS}, got {init!r}")
    if init == "gaussian":
        if sigma_w2 is None:
            raise ValueError("init='gaussian' needs sigma_w2 (e.g. 1.0 ordered, 2.5 chaotic for tanh)")
        return _gaussian_init(model, (nn.Linear, nn.Conv1d, nn.Conv2d), sigma_w2, sigma_b2, generator)
    if sigma_w2 is not None:
        raise ValueError(f"sigma_w2 is set by init={init!r} (the edge of chaos); pass init='gaussian' to choose it")
    kernel = {"critical": "gaussian", "delta_orthogonal": "delta_orthogonal", "orthogonal": "orthogonal"}[init]
    critical_init_(model, activation, sigma_b2, kernel, generator=generator, residual=None)
    return model


def mlp(
    width: int,
    depth: int,
    activation: Any = "tanh",
    n_in: int = 64,
    n_out: int = 10,
    init: str = "critical",
    *,
    sigma_w2: float | None = None,
    sigma_b2: float = 0.0,
    generator: Any = None,
) -> Any:
    """The mean-field MLP ``Linear(n_in, width) -> phi -> [Linear(width, width) -> phi] x (depth - 1) -> Linear(width, n_out)``.

    Parameters
    ----------
    width, depth : int
        Hidden width (>= 1) and number of hidden layers (>= 1).
    activation : str, Activation or torch.nn.Module
    n_in, n_out : int
    init : {"critical", "delta_orthogonal", "orthogonal", "gaussian"}
        ``"critical"``: Gaussian at the edge of chaos (:func:`critical_init_` with
        ``kernel="gaussian"``); ``"delta_orthogonal"``/``"orthogonal"``: orthogonal matrices at
        the edge of chaos; ``"gaussian"``: Gaussian with the given ``sigma_w2``.
    sigma_w2 : float, optional
        Only with ``init="gaussian"``.
    sigma_b2 : float
    generator : torch.Generator, optional

    Returns
    -------
    torch.nn.Sequential

    Raises
    ------
    TypeError, ValueError
        Sizes out of range, an unknown ``init``, ``sigma_w2`` missing or superfluous.

    Notes
    -----
    Xiao et al. 2018, Sec. 2.1 (the dense network of Poole et al. 2016).
    """
    width, depth, n_in, n_out = _sizes(width, depth, n_in, n_out)
    layers = _dense_stack(width, depth, activation, n_in, n_out)
    return _initialise(nn.Sequential(*layers), init, activation, sigma_w2, sigma_b2, generator)


def _conv_class(ndim):
    ndim = check_int(ndim, "ndim", 1, 2)
    return ndim, (nn.Conv1d if ndim == 1 else nn.Conv2d), (nn.AdaptiveAvgPool1d if ndim == 1 else nn.AdaptiveAvgPool2d)


def _circular_conv(conv, c_in, c_out, k, bias=True):
    """``conv(c_in, c_out, k)`` with circular padding ``k // 2``, which keeps the spatial size (odd ``k``)."""
    return conv(c_in, c_out, k, padding=k // 2, padding_mode="circular", bias=bias)


def periodic_cnn(
    width: int,
    depth: int,
    activation: Any = "tanh",
    n_in: int = 1,
    n_out: int = 10,
    init: str = "critical",
    *,
    kernel_size: int = 3,
    ndim: int = 1,
    sigma_w2: float | None = None,
    sigma_b2: float = 0.0,
    generator: Any = None,
) -> Any:
    """The periodic-padding CNN of Xiao et al.: ``[Conv(k, circular) -> phi] x depth -> mean pool -> Linear``.

    Parameters
    ----------
    width, depth : int
        Channels and number of convolutions.
    activation : str, Activation or torch.nn.Module
    n_in, n_out : int
        Input channels and outputs.
    init : {"critical", "delta_orthogonal", "orthogonal", "gaussian"}
        As in :func:`mlp`; ``"delta_orthogonal"`` is Algorithm 2, ``"orthogonal"`` Algorithm 1.
    kernel_size : int
        Odd ``k``; ``padding=k // 2, padding_mode="circular"`` keeps the spatial size.
    ndim : {1, 2}
        Spatial dimensions (input ``(batch, n_in, L)`` or ``(batch, n_in, H, W)``).
    sigma_w2 : float, optional
    sigma_b2 : float
    generator : torch.Generator, optional

    Returns
    -------
    torch.nn.Sequential

    Raises
    ------
    TypeError, ValueError
        As :func:`mlp`; an even ``kernel_size``.

    Notes
    -----
    Xiao et al. 2018, eq. 2.1 (periodic boundary) and Sec. 2.4 (initialisations).
    """
    width, depth, n_in, n_out = _sizes(width, depth, n_in, n_out)
    k = check_int(kernel_size, "kernel_size", 1, 99)
    if k % 2 == 0:
        raise ValueError(f"kernel_size must be odd (2k + 1), got {k}")
    ndim, conv, pool = _conv_class(ndim)
    layers = []
    for i in range(depth):
        layers += [
            _circular_conv(conv, n_in if i == 0 else width, width, k),
            activation_module(activation),
        ]
    layers += [pool(1), nn.Flatten(), nn.Linear(width, n_out)]
    return _initialise(nn.Sequential(*layers), init, activation, sigma_w2, sigma_b2, generator)


def _even(n, name):
    if n % 2:
        raise ValueError(f"{name} must be even for looks-linear weights, got {n}")
    return n


def looks_linear_mlp(
    width: int,
    depth: int,
    activation: Any = "relu",
    n_in: int = 64,
    n_out: int = 10,
    init: str = "looks_linear",
    *,
    sigma_w2: float | None = None,
    generator: Any = None,
) -> Any:
    """A ReLU MLP with looks-linear weights ``[[U, -U], [-U, U]]`` in every layer (Burkholz & Dubatovka 2019, Sec. 3).

    Parameters
    ----------
    width, depth : int
        Even width; number of hidden layers.
    activation : str, Activation or torch.nn.Module
        ReLU in the paper.
    n_in, n_out : int
        Even sizes.
    init : {"looks_linear", "gsm"}
        Orthogonal ``U`` (:func:`looks_linear_`, default ``sigma_w2 = 1``: dynamical isometry of
        the pre-activation half) or Gaussian (:func:`gsm_`, default ``sigma_w2 = 2``).
    sigma_w2 : float, optional
    generator : torch.Generator, optional

    Returns
    -------
    torch.nn.Sequential

    Raises
    ------
    TypeError, ValueError
        Odd sizes, an unknown ``init``.
    """
    width, depth, n_in, n_out = _sizes(width, depth, n_in, n_out)
    for n, name in ((width, "width"), (n_in, "n_in"), (n_out, "n_out")):
        _even(n, name)
    if init not in ("looks_linear", "gsm"):
        raise ValueError(f"init must be 'looks_linear' or 'gsm', got {init!r}")
    sw = (
        (1.0 if init == "looks_linear" else 2.0) if sigma_w2 is None else check_nonnegative_scalar(sigma_w2, "sigma_w2")
    )
    model = nn.Sequential(*_dense_stack(width, depth, activation, n_in, n_out, bias=False))
    for m in model:
        if isinstance(m, nn.Linear):
            (looks_linear_ if init == "looks_linear" else gsm_)(m.weight, sw, generator=generator)
    return tag_layers_(model)


def gsm_mlp(
    width: int,
    depth: int,
    activation: Any = "relu",
    n_in: int = 64,
    n_out: int = 10,
    *,
    sigma_w2: float = 2.0,
    generator: Any = None,
) -> Any:
    """:func:`looks_linear_mlp` with Gaussian-submatrix weights (``init="gsm"``, Burkholz & Dubatovka 2019 Sec. 3)."""
    return looks_linear_mlp(width, depth, activation, n_in, n_out, "gsm", sigma_w2=sigma_w2, generator=generator)


class Residual(nn.Module):
    """``x + branch(x)``: an identity skip around ``branch`` (the audit's residual recursion knows it)."""

    def __init__(self, branch):
        super().__init__()
        self.branch = branch

    def forward(self, x):
        return x + self.branch(x)


#: Architectures of :class:`OrhanNet`.
ARCHITECTURES = ("plain", "residual", "hyper_residual", "path_residual")


class OrhanNet(nn.Module):
    """Orhan's fully-connected nets (Orhan 2017, eqs. 24-26): ``embed -> depth skip layers -> head``.

    ``x_1 = embed(x)``; for ``l = 1..depth``: ``x_{l+1} = phi(W_l x_l + b_l) + skip_l``, with
    ``skip_l`` = 0 (plain), ``x_l`` (residual), ``x_l + (x_{l-1} + ... + x_1) / (l - 1)``
    (hyper-residual, ``l >= 2``) or ``mean_units(x_l)`` broadcast to every unit (path-residual);
    the output is ``head(x_{depth+1})``.
    """

    def __init__(self, width: int, depth: int, activation: Any, n_in: int, n_out: int, architecture: str):
        super().__init__()
        if architecture not in ARCHITECTURES:
            raise ValueError(f"architecture must be one of {ARCHITECTURES}, got {architecture!r}")
        self.architecture = architecture
        self.embed = nn.Linear(n_in, width)
        self.layers = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))
        self.act = activation_module(activation)
        self.head = nn.Linear(width, n_out)

    def forward(self, x):
        x = self.embed(x)
        history = [x]
        for l, layer in enumerate(self.layers, start=1):
            new = self.act(layer(x))
            if self.architecture in ("residual", "hyper_residual"):
                new = new + x
            if self.architecture == "hyper_residual" and l >= 2:
                new = new + sum(history[:-1]) / (l - 1)
            if self.architecture == "path_residual":
                new = new + x.mean(dim=-1, keepdim=True)
            x = new
            history.append(x)
        return self.head(x)


def _orhan(width, depth, activation, n_in, n_out, architecture, sigma_w2, sigma_b2, generator):
    width, depth, n_in, n_out = _sizes(width, depth, n_in, n_out)
    model = OrhanNet(width, depth, activation, n_in, n_out, architecture)
    sw = critical_sigma_w2(resolve_activation(activation), sigma_b2) if sigma_w2 is None else sigma_w2
    return _gaussian_init(model, nn.Linear, sw, sigma_b2, generator)


def residual_mlp(
    width: int,
    depth: int,
    activation: Any = "relu",
    n_in: int = 64,
    n_out: int = 10,
    *,
    sigma_w2: float | None = None,
    sigma_b2: float = 0.0,
    generator: Any = None,
) -> Any:
    """Orhan's residual MLP (Orhan 2017, eq. 25 with ``Q_l = I``); Gaussian weights, ``sigma_w2`` default the edge of chaos.

    Returns an :class:`OrhanNet`; raises ``ValueError``/``TypeError`` for bad sizes or variances.
    """
    return _orhan(width, depth, activation, n_in, n_out, "residual", sigma_w2, sigma_b2, generator)


def hyper_residual_mlp(
    width: int,
    depth: int,
    activation: Any = "relu",
    n_in: int = 64,
    n_out: int = 10,
    *,
    sigma_w2: float | None = None,
    sigma_b2: float = 0.0,
    generator: Any = None,
) -> Any:
    """Orhan's hyper-residual MLP (Orhan 2017, eq. 26, identity skips); see :func:`residual_mlp`."""
    return _orhan(width, depth, activation, n_in, n_out, "hyper_residual", sigma_w2, sigma_b2, generator)


def path_residual_mlp(
    width: int,
    depth: int,
    activation: Any = "relu",
    n_in: int = 64,
    n_out: int = 10,
    *,
    sigma_w2: float | None = None,
    sigma_b2: float = 0.0,
    generator: Any = None,
) -> Any:
    """Orhan's path-residual MLP (Orhan 2017, Sec. 2.2: skip matrix of ones, here divided by the width)."""
    return _orhan(width, depth, activation, n_in, n_out, "path_residual", sigma_w2, sigma_b2, generator)


class ConstNet(nn.Sequential):
    """ConstNet (Blumenfeld et al. 2020, App. A) in one stage: averaging conv, ``depth`` zero-branch residual blocks
    ``a + W * phi(a)``, mean pool, zero head. Every tensor is deterministic (:func:`constnet_`)."""


class LeakyNet(nn.Sequential):
    """LeakyNet (Blumenfeld et al. 2020, Sec. 5.1): averaging conv, then ``depth`` x [leaky ReLU -> conv ``s_l Delta (x) M_l``], pool, zero head."""


def _averaging_stem(width, depth, n_in, n_out, kernel_size, ndim):
    """The checked sizes and the first layer shared by :func:`constnet` and :func:`leakynet`.

    Parameters
    ----------
    width, depth, n_in, n_out, kernel_size, ndim
        As in :func:`constnet`.

    Returns
    -------
    width, depth, n_out : int
        The checked sizes.
    conv : callable
        ``conv(c_in)``: a bias-free circular ``Conv(c_in, width, kernel_size)`` of ``ndim`` spatial axes.
    pool : type
        The adaptive average pool of ``ndim`` spatial axes.
    first : torch.nn.Module
        ``conv(n_in)`` set to the averaging convolution (:func:`constnet_` ``"average"``).
    """
    width, depth, n_in, n_out = _sizes(width, depth, n_in, n_out)
    ndim, conv_class, pool = _conv_class(ndim)
    k = check_int(kernel_size, "kernel_size", 1, 99)

    def conv(c_in):
        return _circular_conv(conv_class, c_in, width, k, bias=False)

    first = conv(n_in)
    constnet_(first.weight, "average")
    return width, depth, n_out, conv, pool, first


def _zero_head(width, n_out, pool):
    """The tail of ConstNet and LeakyNet: mean pool, flatten, a bias-free ``Linear(width, n_out)`` set to zero."""
    head = nn.Linear(width, n_out, bias=False)
    constnet_(head.weight, "zero")
    return [pool(1), nn.Flatten(), head]


def constnet(
    width: int,
    depth: int,
    activation: Any = "relu",
    n_in: int = 1,
    n_out: int = 10,
    *,
    kernel_size: int = 3,
    ndim: int = 2,
) -> ConstNet:
    """ConstNet at initialisation (Blumenfeld et al. 2020, Sec. 3.1, App. A), one stage of ``depth`` blocks; see :class:`ConstNet`.

    Raises ``ValueError``/``TypeError`` for bad sizes.
    """
    width, depth, n_out, conv, pool, first = _averaging_stem(width, depth, n_in, n_out, kernel_size, ndim)
    blocks = []
    for _ in range(depth):
        c = conv(width)
        constnet_(c.weight, "zero")
        blocks.append(Residual(nn.Sequential(activation_module(activation), c)))
    return tag_layers_(ConstNet(first, *blocks, *_zero_head(width, n_out, pool)))


def leakynet(
    width: int,
    depth: int,
    activation: Any = None,
    n_in: int = 1,
    n_out: int = 10,
    *,
    slope: float = 0.01,
    kind: str = "I",
    kernel_size: int = 3,
    ndim: int = 2,
) -> LeakyNet:
    """LeakyNet at initialisation (Blumenfeld et al. 2020, Sec. 5.1, App. H); ``activation`` defaults to ``LeakyReLU(slope)``.

    Raises ``ValueError``/``TypeError`` for bad sizes, ``slope`` outside (0, 1] or an unknown ``kind``.
    """
    width, depth, n_out, conv, pool, first = _averaging_stem(width, depth, n_in, n_out, kernel_size, ndim)
    layers = [first]
    for l in range(1, depth + 1):
        c = conv(width)
        leakynet_(c.weight, l, slope, kind)
        layers += [nn.LeakyReLU(slope) if activation is None else activation_module(activation), c]
    return tag_layers_(LeakyNet(*layers, *_zero_head(width, n_out, pool)))
