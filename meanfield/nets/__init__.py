"""Networks as one description: a composition of layers, and from it theory, sampler, weights and module.

A :class:`Network` is a tuple of layers (frozen dataclasses). Each layer kind carries, in one place,
its mean-field rule (the per-unit second moments over inputs x positions, the derivative map that
gives chi and the gradient moments, its NTK term), its Monte-Carlo sampler (any backend of
:mod:`meanfield.backend`), its weight construction (:mod:`meanfield.init`) and its PyTorch module.
From the description follow :meth:`Network.theory`, :meth:`Network.simulate`,
:meth:`Network.weights`, :meth:`Network.to_torch` and :func:`train`.

==========================  ===============================================================
Layer kind                  What it is
==========================  ===============================================================
:class:`Dense`              ``W z + b``, ``W_ij ~ N(0, sigma_w2 / n_in)`` (Xiao et al. 2018, eq. 2.5)
:class:`Conv`               periodic convolution, any number of spatial axes (Xiao et al. 2018)
:class:`Act`                elementwise activation of :mod:`meanfield.activations`
:class:`Residual`           ``Q z + s f(z)``: skip matrix ``Q``, branch ``f``, branch scale ``s``
:class:`HyperResidual`      Orhan 2017's eq. 26 stack
:class:`ChannelMix`         ``s (gamma I + (1 - gamma) 11^T / n)``: ConstNet / LeakyNet averaging
:class:`Replicate`          replicated features (Blumenfeld et al. 2020, Sec. 4.2)
:class:`LooksLinear`        looks-linear pairs ``[[U, -U], [-U, U]]`` (sampler, weights, module)
:class:`Pool`               global mean pooling (the read-out's first half)
:class:`Subsample`          strided positions (ConstNet's widening blocks)
==========================  ===============================================================

The papers' architectures are instances (:mod:`meanfield.nets.papers`). Conventions of the theory
state (``second``, ``cross``): see :class:`NetTheory`.
"""

from __future__ import annotations

from ._layers import Act, ChannelMix, Conv, Dense, Layer, Pool, Replicate, Subsample
from ._network import NetSimulation, NetTheory, NetWeights, Network
from ._skips import HyperResidual, LooksLinear, Residual
from ._train import NetTraining, train

__all__ = [
    "Act",
    "ChannelMix",
    "Conv",
    "Dense",
    "HyperResidual",
    "Layer",
    "LooksLinear",
    "NetSimulation",
    "NetTheory",
    "NetTraining",
    "NetWeights",
    "Network",
    "Pool",
    "Replicate",
    "Residual",
    "Subsample",
    "train",
]
