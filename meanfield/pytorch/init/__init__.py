r"""``torch.nn.init``-style initialisers: the constructions of :mod:`meanfield.init` on PyTorch tensors.

Every initialiser works in place on a weight tensor (trailing underscore), under
``torch.no_grad()``, takes ``generator=`` (a ``torch.Generator``; ``None`` uses PyTorch's global
generator, so ``torch.manual_seed`` applies as for ``torch.nn.init``) and returns the tensor. None
re-implements an algorithm: each draws a NumPy stream from the generator (:func:`numpy_rng`),
calls the NumPy construction of :mod:`meanfield.init` and copies the result into the tensor in
PyTorch's layout (``Linear``: ``(out, in)``; ``Conv1d/2d``: ``(c_out, c_in, *k)``, converted with
:func:`meanfield.init.to_torch_layout`). The same seed therefore gives the same numbers as the
NumPy function called with ``rng=numpy_rng(generator)``.

=========================  ==============================================================  ===========================
initialiser                construction                                                    paper
=========================  ==============================================================  ===========================
:func:`critical_normal_`   Gaussian at the edge of chaos, ``sigma_w2`` solving chi_1 = 1   Xiao et al. 2018, eq. 2.7
:func:`orthogonal_conv_`   :func:`meanfield.init.orthogonal_conv_kernel` (Algorithm 1)      Xiao et al. 2018
:func:`delta_orthogonal_`  :func:`meanfield.init.delta_orthogonal_kernel` (Algorithm 2)     Xiao et al. 2018
:func:`looks_linear_`      :func:`meanfield.init.orthogonal_looks_linear` (dense) or        Burkholz & Dubatovka 2019,
                           :func:`meanfield.init.looks_linear_delta_orthogonal` (conv)      Blumenfeld et al. 2020
:func:`gsm_`               :func:`meanfield.init.gsm`                                       Burkholz & Dubatovka 2019
:func:`zero_`              :func:`meanfield.init.zero_weights` (ZerO, deterministic)        Grzejdziak 2023
:func:`zero_star_`         :func:`meanfield.init.zero_star_network` (ZerO*)                 Grzejdziak 2023
:func:`constnet_`          :func:`meanfield.init.averaging_conv` or zeros (ConstNet)        Blumenfeld et al. 2020
:func:`leakynet_`          :func:`meanfield.init.leakynet` (LeakyNet layer ``l``)            Blumenfeld et al. 2020
:func:`critical_init_`     every weight layer of a traced model at the edge of chaos        Xiao et al. 2018
=========================  ==============================================================  ===========================

Each initialiser records what it did on the tensor as ``tensor.meanfield_init`` (an
:class:`InitSpec`: the construction, ``sigma_w2``, ``sigma_b2``, the convolution variance vector
``v``); :func:`meanfield.pytorch.audit` reads it to re-initialise a model and to state the theory
the model was initialised for.

Conventions: ``sigma_w2`` means ``W_ij ~ N(0, sigma_w2 / fan_in)`` (``fan_in = c_in * prod(k)`` for
a convolution); orthogonal constructions are multiplied by ``sqrt(sigma_w2)`` (``sigma_w2 =
gain^2``). Convolutions must be used with ``padding=k // 2, padding_mode="circular"`` for the
periodic theory of Xiao et al. 2018 to hold exactly.
"""

from __future__ import annotations

from ._edge import EdgeOfChaos, critical_sigma_w2, edge_of_chaos, stable_sigma_b2
from ._model import RESIDUAL_RULES as RESIDUAL_RULES
from ._model import CriticalInit, LayerInit, critical_init_, recorded_spec, reinitialise_, tag_layers_
from ._model import layer_activations as layer_activations
from ._spec import KERNELS, InitSpec, numpy_rng
from ._tensors import (
    constnet_,
    critical_normal_,
    delta_orthogonal_,
    gsm_,
    leakynet_,
    looks_linear_,
    mean_field_normal_,
    orthogonal_conv_,
    zero_,
    zero_star_,
)

# The classes are documented (and pickled) under this package, the path users import them from.
for _cls in (CriticalInit, EdgeOfChaos, InitSpec, LayerInit):
    _cls.__module__ = __name__
del _cls

__all__ = [
    "KERNELS",
    "CriticalInit",
    "EdgeOfChaos",
    "InitSpec",
    "LayerInit",
    "constnet_",
    "critical_init_",
    "critical_normal_",
    "critical_sigma_w2",
    "delta_orthogonal_",
    "edge_of_chaos",
    "gsm_",
    "leakynet_",
    "looks_linear_",
    "mean_field_normal_",
    "numpy_rng",
    "orthogonal_conv_",
    "recorded_spec",
    "reinitialise_",
    "stable_sigma_b2",
    "tag_layers_",
    "zero_",
    "zero_star_",
]
