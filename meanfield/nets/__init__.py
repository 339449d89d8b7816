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
:class:`Conv`               convolution, any number of spatial axes: periodic (Xiao et al. 2018) or
                            zero-padded, strided, dilated, grouped (PyTorch's semantics)
:class:`Act`                elementwise activation of :mod:`meanfield.activations`
:class:`Residual`           ``Q z + s f(z)``: skip matrix ``Q`` or a skip path of layers, branch ``f``
:class:`HyperResidual`      Orhan 2017's eq. 26 stack
:class:`ChannelMix`         ``s (gamma I + (1 - gamma) 11^T / n)``: ConstNet / LeakyNet averaging
:class:`Replicate`          replicated features (Blumenfeld et al. 2020, Sec. 4.2)
:class:`LooksLinear`        looks-linear pairs ``[[U, -U], [-U, U]]`` (sampler, weights, module)
:class:`Pool`               global mean pooling (the read-out's first half)
:class:`Subsample`          strided positions (ConstNet's widening blocks)
:class:`LayerNorm`          layer normalisation over the channels (Ba et al. 2016)
:class:`RMSNorm`            RMS normalisation over the channels (Zhang & Sennrich 2019)
:class:`BatchNorm`          batch normalisation, training mode (Yang et al. 2019) or evaluation mode
:class:`Dropout`            dropout: the identity (evaluation) or Bernoulli masks (training)
:class:`AvgPool`            average pooling over windows of positions (zero padding)
:class:`MaxPool`            max pooling, padding, a fused activation (closed form or Gaussian integration)
:class:`Flatten`            positions x channels into one feature axis
:class:`Concat`             channel concatenation of branches (DenseNet, Inception blocks)
:class:`Embedding`          token and positional embeddings (Gaussian rows)
:class:`SelfAttention`      multi-head self-attention, ``1/d`` or ``1/sqrt(d)`` logits (Hron et al. 2020)
==========================  ===============================================================

The papers' architectures are instances (:mod:`meanfield.nets.papers`). Conventions of the theory
state (``second``, ``cross``): see :class:`NetTheory`.
"""

from __future__ import annotations

from ._attention import SelfAttention
from ._concat import Concat
from ._embedding import Embedding
from ._layers import Act, ChannelMix, Conv, Dense, Layer, Pool, Replicate, Subsample
from ._network import NetSimulation, NetTheory, NetWeights, Network
from ._norms import BatchNorm, Dropout, LayerNorm, RMSNorm
from ._pooling import AvgPool, Flatten, MaxPool
from ._skips import HyperResidual, LooksLinear, Residual
from ._train import NetTraining, train

__all__ = [
    "Act",
    "AvgPool",
    "BatchNorm",
    "ChannelMix",
    "Concat",
    "Conv",
    "Dense",
    "Dropout",
    "Embedding",
    "Flatten",
    "HyperResidual",
    "Layer",
    "LayerNorm",
    "LooksLinear",
    "MaxPool",
    "NetSimulation",
    "NetTheory",
    "NetTraining",
    "NetWeights",
    "Network",
    "Pool",
    "RMSNorm",
    "Replicate",
    "Residual",
    "SelfAttention",
    "Subsample",
    "train",
]
