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

from . import conv, dense, finite_width, kurtosis, kurtosis_residual, ntk, spectra, symmetry
from ._common import MAX_ELEMENTS, MAX_WORK, UNDERFLOW_LOG, activation_fn
from .conv import *  # noqa: F403
from .dense import *  # noqa: F403
from .finite_width import *  # noqa: F403
from .kurtosis import *  # noqa: F403
from .kurtosis_residual import *  # noqa: F403
from .ntk import *  # noqa: F403
from .spectra import *  # noqa: F403
from .symmetry import *  # noqa: F403

# every public name of the simulator modules, plus the shared limits and activation_fn of _common
__all__ = ["MAX_ELEMENTS", "MAX_WORK", "UNDERFLOW_LOG", "activation_fn"]
for _module in (conv, dense, finite_width, kurtosis, kurtosis_residual, ntk, spectra, symmetry):
    __all__ += _module.__all__
del _module
