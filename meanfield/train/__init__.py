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

Modules
-------
This package holds the engine; the comparisons that use it (rows of theory versus training) live
in :mod:`meanfield.validation`. :mod:`meanfield.train.symmetric`: Blumenfeld et al. 2020's
ConstNet, LeakyNet and replicated-feature net, the symmetry-breaking noise sources and the
symmetry probes; :mod:`meanfield.train.skip`: Orhan 2017's skip networks, their training and Hessians;
:mod:`meanfield.train.experiment`: the trainability experiments of Xiao et al. 2018, Burkholz &
Dubatovka 2019 and Grzejdziak 2023 (cached per process). Their network families
are registered with the trainer below, when the package is imported.
"""

from __future__ import annotations

from . import _skip
from ._data import TrainingData, load_training_data
from ._engine import TrainingCurves, train_ensemble
from ._forward import MAX_LOGIT, MAX_LOSS, ensemble_forward
from ._probes import COMPUTE_DTYPES, FLOAT32_ROUNDOFF, KERNELS, SymmetryBreaking
from ._skip import ARCHITECTURES as SKIP_ARCHITECTURES
from ._skip import SkipNet
from ._specs import (
    ACTIVATIONS,
    CONV_INITS,
    DENSE_INITS,
    OPTIMIZERS,
    ConvNet,
    DenseNet,
    _register_family,
    _register_spec,
    init_parameters,
)
from ._symmetric import _ADAPTER, ConstNetSpec, LeakyNetSpec, ReplicatedNetSpec
from .skip import SkipTrainingResult, rescaled_accuracy_ratio, skip_ensemble_hessians, train_skip_ensemble
from .symmetric import (
    ConstNetGroups,
    PlatformSymmetry,
    constnet_groups,
    conv_kernels,
    correlation_probe,
    platform_symmetry,
    unit_exact_conv,
)

__all__ = [
    "ACTIVATIONS",
    "COMPUTE_DTYPES",
    "CONV_INITS",
    "DENSE_INITS",
    "FLOAT32_ROUNDOFF",
    "GATHER_MAX_SAVED",
    "KERNELS",
    "MAX_LOGIT",
    "MAX_LOSS",
    "OPTIMIZERS",
    "SKIP_ARCHITECTURES",
    "ConstNetGroups",
    "ConstNetSpec",
    "ConvNet",
    "DenseNet",
    "LeakyNetSpec",
    "PlatformSymmetry",
    "ReplicatedNetSpec",
    "SkipNet",
    "SkipTrainingResult",
    "SymmetryBreaking",
    "TrainingCurves",
    "TrainingData",
    "constnet_groups",
    "conv_kernels",
    "correlation_probe",
    "ensemble_forward",
    "init_parameters",
    "load_training_data",
    "platform_symmetry",
    "rescaled_accuracy_ratio",
    "skip_ensemble_hessians",
    "train_ensemble",
    "train_skip_ensemble",
    "unit_exact_conv",
]

#: Convolutions take the gather + batched-matmul path (faster on small tensors) unless a training
#: step would keep more than this many gathered numbers for the backward pass (2^28: 1 GiB in
#: float32); beyond it, one grouped convolution per layer. Read at every forward pass, so setting
#: ``meanfield.train.GATHER_MAX_SAVED`` switches the path (``benchmarks/bench_trainer.py`` does).
GATHER_MAX_SAVED = 2**28

# The trainer's plug-in registry, filled here, once: Blumenfeld et al.'s specs run on the trainer's
# own ensemble (an adapter of its forward pass), Orhan's skip networks bring their own model.
_register_spec(ConstNetSpec, _ADAPTER, unit_exact=True)
_register_spec(LeakyNetSpec, _ADAPTER, unit_exact=True)
_register_spec(ReplicatedNetSpec, _ADAPTER)
_register_family(
    SkipNet,
    init=_skip._init,
    n_params=_skip._n_params,
    same_architecture=_skip._same_architecture,
    model=_skip.SkipModel,
)
