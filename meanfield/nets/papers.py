"""The papers' architectures as instances of the network language.

=====================================  ===========================================================
Function                               Architecture
=====================================  ===========================================================
:func:`dense_mlp`                      the mean-field MLP (Poole et al. 2016; Xiao et al. 2018 Sec. 2.1)
:func:`periodic_cnn`                   the periodic CNN of Xiao et al. 2018 (eq. 2.1, any dimension)
:func:`constnet`                       ConstNet at initialisation (Blumenfeld et al. 2020, App. A)
:func:`leakynet`                       LeakyNet (Blumenfeld et al. 2020, Sec. 5.1, App. H, J)
:func:`orhan_skip_net`                 Orhan 2017's plain / residual / hyper-residual nets (eqs. 24-26)
=====================================  ===========================================================
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._checks import check_int, check_scalar
from ._layers import Act, ChannelMix, Conv, Dense, Pool, Subsample
from ._network import Network
from ._skips import HyperResidual, Residual

__all__ = ["ORHAN_ARCHITECTURES", "constnet", "dense_mlp", "leakynet", "orhan_skip_net", "periodic_cnn"]

#: Architectures of :func:`orhan_skip_net`.
ORHAN_ARCHITECTURES = ("plain", "residual", "hyper_residual", "path_residual")


def dense_mlp(
    width: int,
    depth: int,
    activation: str = "tanh",
    sigma_w2: float = 1.0,
    sigma_b2: float = 0.0,
    *,
    law: str = "gaussian",
    n_out: int | None = None,
) -> Network:
    """``Dense -> [Act -> Dense] x depth`` (-> ``Act -> Dense(n_out)`` read-out when ``n_out`` is given).

    The network of :func:`meanfield.dense.propagate` (``depth`` hidden-to-hidden layers; ``theory``'s
    dense outputs are ``second[1], second[3], ...``) and of the dense simulator of
    :mod:`meanfield.simulate` (same weights for the same ``rng``).
    """
    depth = check_int(depth, "depth", 0, 10**4)
    layers = [Dense(width, sigma_w2, sigma_b2, law)]
    for _ in range(depth):
        layers += [Act(activation), Dense(width, sigma_w2, sigma_b2, law)]
    if n_out is not None:
        layers += [Act(activation), Dense(n_out, sigma_w2, sigma_b2, law)]
    return Network(layers)


def periodic_cnn(
    channels: int,
    depth: int,
    activation: str = "tanh",
    sigma_w2: float = 1.0,
    sigma_b2: float = 0.0,
    *,
    v: Any = None,
    kernel_shape: Sequence[int] = (3,),
    n_out: int | None = None,
) -> Network:
    """``Conv -> [Act -> Conv] x depth`` with periodic boundaries (Xiao et al. 2018, eq. 2.1, variance vector ``v``).

    With ``n_out``: ``-> Act -> Pool -> Dense(n_out)`` (the global-average-pooling read-out).
    ``v`` fixes the kernel shape when given; the spatial dimension is that of the kernel.
    """
    depth = check_int(depth, "depth", 0, 10**4)
    ks = np.shape(v) if v is not None else tuple(kernel_shape)
    layers = [Conv(channels, ks, sigma_w2, sigma_b2, v)]
    for _ in range(depth):
        layers += [Act(activation), Conv(channels, ks, sigma_w2, sigma_b2, v)]
    if n_out is not None:
        layers += [Act(activation), Pool(), Dense(n_out, sigma_w2, sigma_b2)]
    return Network(layers)


def constnet(
    widths: Sequence[int] = (4, 8, 16),
    blocks_per_stage: int = 2,
    n_classes: int = 10,
    kernel_shape: Sequence[int] = (3, 3),
    stride: int = 2,
) -> Network:
    """ConstNet at initialisation (Blumenfeld et al. 2020, Sec. 3.1 eq. 4, App. A; :func:`meanfield.init.constnet`).

    ``ChannelMix`` averaging first layer to ``widths[0]`` channels; per stage ``blocks_per_stage``
    blocks ``a + W * relu(a)`` with zero kernels ``W``; between stages the widening block
    ``subsample(A a + W * relu(a))`` with ``A`` the constant ``1 / n`` 1 x 1 map; mean pooling and a
    zero head. Every tensor is deterministic (:attr:`Layer.random` draws nothing but zeros).
    """
    widths = [check_int(w, "widths", 1) for w in widths]
    blocks = check_int(blocks_per_stage, "blocks_per_stage", 0, 10**4)
    ks = tuple(kernel_shape)
    layers: list = [ChannelMix(0.0, 1.0, widths[0])]
    for s, n in enumerate(widths):
        for _ in range(blocks):
            layers.append(Residual((Act("relu"), Conv(n, ks, law="zero"))))
        if s + 1 < len(widths):
            m = widths[s + 1]
            layers.append(Residual((Act("relu"), Conv(m, ks, law="zero")), skip=np.full((m, n), 1.0 / n)))
            layers.append(Subsample(stride))
    layers += [Pool(), Dense(check_int(n_classes, "n_classes", 1), 0.0)]
    return Network(layers)


def leakynet(
    kinds: Sequence[str],
    n: int = 8,
    slope: float = 0.01,
    n_classes: int = 10,
    gamma: Sequence[float] | None = None,
) -> Network:
    r"""LeakyNet (Blumenfeld et al. 2020, Sec. 5.1, App. H; App. J's mixtures with ``gamma``).

    ``ChannelMix`` averaging to ``n`` channels, then per layer ``l`` a leaky ReLU of negative slope
    ``slope`` and :math:`s_l M_l` with ``M_l = I`` (``'I'``) or ``11^T / n`` (``'1'``) and
    ``s_l = -1 / slope`` on odd layers (the delta kernels of :func:`meanfield.init.leakynet` act at
    every position as these channel maps); mean pooling and a zero head.
    """
    slope = check_scalar(slope, "slope")
    if not 0 < slope <= 1:
        raise ValueError(f"slope must lie in (0, 1], got {slope}")
    kinds = list(kinds)
    if gamma is not None and len(gamma) != len(kinds):
        raise ValueError(f"gamma must have one value per layer ({len(kinds)}), got {len(gamma)}")
    layers: list = [ChannelMix(0.0, 1.0, check_int(n, "n", 1))]
    for layer, kind in enumerate(kinds, start=1):
        if kind not in ("I", "1"):
            raise ValueError(f"kinds must hold 'I' or '1', got {kind!r}")
        g = (1.0 if kind == "I" else 0.0) if gamma is None else float(gamma[layer - 1])
        layers += [Act("leaky_relu", slope=slope), ChannelMix(g, -1.0 / slope if layer % 2 else 1.0)]
    layers += [Pool(), Dense(check_int(n_classes, "n_classes", 1), 0.0)]
    return Network(layers)


def orhan_skip_net(
    architecture: str,
    width: int,
    depth: int,
    sigma_w2: float = 2.0,
    *,
    skips: Callable | None = None,
    long_skips: Callable | None = None,
    n_out: int | None = None,
) -> Network:
    """Orhan (2017)'s fully connected skip nets: ``x_1 = relu(W_0 x + b_0)`` then ``depth`` layers of eqs. 24-26.

    Plain (eq. 24) ``x_{l+1} = relu(W_l x_l + b_l)``; residual (eq. 25) ``... + Q_l x_l``;
    hyper-residual (eq. 26) ``... + Q_l x_l + [P_{l-1} x_{l-1} + ... + P_1 x_1] / (l - 1)``;
    path-residual (Sec. 2.2) ``... + 1 1^T x_l / width``. ``skips`` / ``long_skips``: callables
    ``f(rng) -> (width, width)`` drawn per layer and network (default identities), e.g.
    :func:`meanfield.landscape.folded_orthogonal`. With ``n_out`` a linear read-out follows.
    """
    if architecture not in ORHAN_ARCHITECTURES:
        raise ValueError(f"architecture must be one of {ORHAN_ARCHITECTURES}, got {architecture!r}")
    depth = check_int(depth, "depth", 1, 10**4)
    if architecture in ("plain", "path_residual") and (skips is not None or long_skips is not None):
        raise ValueError(f"skips and long_skips apply to the residual and hyper-residual nets, not to {architecture!r}")
    if architecture == "residual" and long_skips is not None:
        raise ValueError("long_skips applies to the hyper-residual architecture only (eq. 26)")
    layers: list = [Dense(width, sigma_w2), Act("relu")]
    if architecture == "hyper_residual":
        layers.append(HyperResidual(depth, sigma_w2, 0.0, skips, long_skips))
    else:
        for _ in range(depth):
            branch = (Dense(width, sigma_w2), Act("relu"))
            if architecture == "plain":
                layers += list(branch)
            elif architecture == "path_residual":
                layers.append(Residual(branch, skip=np.full((width, width), 1.0 / width)))
            else:
                layers.append(Residual(branch, skip="identity" if skips is None else skips))
    if n_out is not None:
        layers.append(Dense(n_out, sigma_w2))
    return Network(layers)
