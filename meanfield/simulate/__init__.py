"""Monte-Carlo simulators of finite random networks, one module per theory.

=================================================  ======================================================  ======================
module                                             simulators                                              theory it checks
=================================================  ======================================================  ======================
:mod:`~meanfield.simulate.dense`                   :func:`simulate_dense` (:class:`DenseSimulation`)       :mod:`meanfield.dense`
:mod:`~meanfield.simulate.conv`                    :func:`simulate_conv` (:class:`ConvSimulation`),        :mod:`meanfield.conv`
                                                   :func:`conv_kernels`, :func:`simulate_fig_s4`
:mod:`~meanfield.simulate.finite_width`            :func:`simulate_squared_norms`, :func:`simulate_pair`   :mod:`meanfield.finite_width`
                                                   (:class:`PairSimulation`)
:mod:`~meanfield.simulate.kurtosis`                :func:`layer_moments` (:class:`LayerMoments`),          :mod:`meanfield.kurtosis`
                                                   :func:`nonzero_fraction`, :func:`empirical_variances`,
                                                   :func:`metainit_weights`
:mod:`~meanfield.simulate.kurtosis_residual`       :func:`simulate_residual_moments`,                      :mod:`meanfield.kurtosis`
                                                   :func:`simulate_conv_moments`
                                                   (:class:`MomentSimulation`)
:mod:`~meanfield.simulate.spectra`                 :func:`jacobian_singular_values`,                       :mod:`meanfield.spectra`
                                                   :func:`conv_jacobian_singular_values`,
                                                   :func:`conv2d_jacobian_singular_values`
:mod:`~meanfield.simulate.ntk`                     :func:`empirical_ntk`, :func:`empirical_conv_ntk`,      :mod:`meanfield.ntk`
                                                   :func:`empirical_periodic_cnn_ntk`
:mod:`~meanfield.simulate.symmetry`                :class:`ConstNet`, :class:`LeakyNet`,                   :mod:`meanfield.symmetry`
                                                   :func:`looks_linear_delta_orthogonal_forward`
=================================================  ======================================================  ======================

Every public name is re-exported here: ``from meanfield.simulate import simulate_dense``. The
comparisons of these simulations with the theory are in :mod:`meanfield.validation` (one module per
paper); the simulators themselves import only :mod:`meanfield.backend`, :mod:`meanfield.init`,
:mod:`meanfield.activations` and the theory modules, and no theory module imports them.

One signature style
-------------------
Problem arguments first (inputs, activation, variances), then the sizes under the same names
everywhere -- ``depth`` (number of layers), ``width`` (hidden width; the channel count of a CNN),
``n_networks`` (independent networks simulated together) -- and the keyword-only ``backend``
(``"numpy"``, ``"cupy"``, ``"torch"`` or ``"array_api_strict"``, :mod:`meanfield.backend`) and
``rng``. Every simulator honours ``backend`` (its arrays go through the backend's namespace only;
``tests/simulate/test_backends_simulators.py`` runs each on ``array_api_strict``, where a NumPy-only call
fails). Training is not a simulator: the one
training engine is :func:`meanfield.train.train_ensemble` (Blumenfeld et al.'s networks through
:mod:`meanfield.train.symmetric`). Results with several fields are
frozen dataclasses inheriting :class:`meanfield.Result` (``.replace()``); several-field results
that used to be tuples still unpack (``inner, cosine = simulate_pair(...)``).

Shared building blocks, one of each in the library: weights are drawn by
:func:`meanfield.init.dense_weights` / :func:`meanfield.init.gaussian_conv_kernel` and Xiao et al.'s
orthogonal kernels (``batch`` and ``backend`` arguments), convolutions are
:func:`meanfield.init.periodic_conv` (kernel layout ``(*k, c_out, c_in)``), looks-linear blocks
:func:`meanfield.init.looks_linear` / :func:`meanfield.init.gsm`, and activations
:func:`meanfield.activations.get_activation`, evaluated on the backend by :func:`activation_fn`.

Parametrisation: ``sigma_w2`` means ``W_ij ~ N(0, sigma_w2 / fan_in)`` in every simulator, the
Burkholz & Dubatovka 2019 ones (:func:`simulate_squared_norms`, :func:`simulate_pair`) included; Burkholz & Dubatovka's
per-weight variance is converted at the call (see :mod:`~meanfield.simulate.finite_width`).

Randomness: ``rng`` is ``None`` (fresh OS entropy), a non-negative ``int`` ``n`` (exactly the stream of
``numpy.random.default_rng(n)``), a ``SeedSequence`` or a NumPy ``Generator``; independent streams
(layers, chunks) are children spawned off it, never seeds computed by arithmetic. Sizes are bounded:
arrays beyond :data:`MAX_ELEMENTS` numbers or work beyond :data:`MAX_WORK` multiply-adds raise
``ValueError`` at once.
"""

from __future__ import annotations

from ._common import MAX_ELEMENTS, MAX_WORK, UNDERFLOW_LOG, activation_fn
from .conv import CONV_INITS, ConvSimulation, conv_kernels, simulate_conv, simulate_fig_s4
from .dense import EXACT_LAWS, FORWARD_METHODS, DenseSimulation, simulate_dense
from .finite_width import PairSimulation, simulate_pair, simulate_squared_norms
from .kurtosis import (
    FIG1_CHUNK,
    FIG1_DEPTH,
    FIG1_FRACTION,
    FIG1_INITS,
    FIG1_METAINIT_BATCH,
    FIG1_METAINIT_CHUNK,
    FIG1_METAINIT_NETWORKS,
    FIG1_STREAM,
    FIG1_THRESHOLD,
    INPUT_KINDS,
    INPUT_MOMENTS,
    KAPPA_MAX,
    METAINIT_CHUNK,
    RENORM_EVERY,
    LayerMoments,
    empirical_variances,
    fig1_variances,
    layer_moments,
    metainit_weights,
    nonzero_fraction,
)
from .kurtosis_residual import MomentSimulation, simulate_conv_moments, simulate_residual_moments
from .ntk import NTK_METHODS, empirical_conv_ntk, empirical_ntk, empirical_periodic_cnn_ntk
from .spectra import (
    JACOBIAN_CONV_KERNELS,
    JACOBIAN_WEIGHTS,
    conv2d_jacobian_singular_values,
    conv_jacobian_singular_values,
    jacobian_singular_values,
)
from .symmetry import (
    ConstNet,
    LeakyNet,
    LooksLinearForward,
    looks_linear_delta_orthogonal_forward,
    softmax_xent,
)

__all__ = [
    "CONV_INITS",
    "EXACT_LAWS",
    "FIG1_CHUNK",
    "FIG1_DEPTH",
    "FIG1_FRACTION",
    "FIG1_INITS",
    "FIG1_METAINIT_BATCH",
    "FIG1_METAINIT_CHUNK",
    "FIG1_METAINIT_NETWORKS",
    "FIG1_STREAM",
    "FIG1_THRESHOLD",
    "FORWARD_METHODS",
    "INPUT_KINDS",
    "INPUT_MOMENTS",
    "JACOBIAN_CONV_KERNELS",
    "JACOBIAN_WEIGHTS",
    "KAPPA_MAX",
    "MAX_ELEMENTS",
    "MAX_WORK",
    "METAINIT_CHUNK",
    "NTK_METHODS",
    "RENORM_EVERY",
    "UNDERFLOW_LOG",
    "ConstNet",
    "ConvSimulation",
    "DenseSimulation",
    "LayerMoments",
    "LeakyNet",
    "LooksLinearForward",
    "MomentSimulation",
    "PairSimulation",
    "activation_fn",
    "conv2d_jacobian_singular_values",
    "conv_jacobian_singular_values",
    "conv_kernels",
    "empirical_conv_ntk",
    "empirical_ntk",
    "empirical_periodic_cnn_ntk",
    "empirical_variances",
    "fig1_variances",
    "jacobian_singular_values",
    "layer_moments",
    "looks_linear_delta_orthogonal_forward",
    "metainit_weights",
    "nonzero_fraction",
    "simulate_conv",
    "simulate_conv_moments",
    "simulate_dense",
    "simulate_fig_s4",
    "simulate_pair",
    "simulate_residual_moments",
    "simulate_squared_norms",
    "softmax_xent",
]
