"""Skip connections as symmetry breaking: binary-weight landscapes and linear dynamics (Orhan 2017).

Orhan 2017 (Orhan, *Skip Connections as Effective Symmetry-Breaking*, 2017). Map from code to paper:

=================================  ===============================================================
code                               paper
=================================  ===============================================================
``binary_landscape``               Sec. 2.2, Fig. 4 / Fig. S1: exhaustive landscape of the toy nets
``"plain"``                        eq. 1, ``x_{l+1} = f(W_l x_l)``
``"residual"``                     eq. 2, ``x_{l+1} = 2/3 [f(W_l x_l) + x_l]``
``"hyper_residual"``               eq. 3, ``x_{l+1} = 2/(l+2) [f(W_l x_l) + x_l + ... + x_1]``
``"path_residual"``                eq. 4, ``x_{l+1} = 2/4 [f(W_l x_l) + 1 x_l]``
``regression_task``                the "two-dimensional regression problem with a random target"
``three_layer_flow``               eqs. 8-9, 11-14 (plain) and 15-18 (residual)
``three_layer_energy``             eq. 10 (plain) and Supp. eq. 31 (residual)
``three_layer_hessian``            Supp. Note 2, eqs. 29-30 and 32-33
``mode_energy``                    eqs. 21-23 (mode strengths ``a_l``; ``tau`` = 1)
``mode_hessian``                   Supp. Note 3, eqs. 36-37
``folded_orthogonal``              Sec. 2.4.2, Fig. 9 ("128, 64, ..., 1 orthonormal vectors")
``controlled_skip_matrix``         Sec. 2.4.2, Fig. 10, Supp. Note 4 (eigenvalues on the unit circle)
``skip_network``                   eqs. 24-26 (real-valued ReLU nets; skip matrices ``Q_l``, long
                                   skips of eq. 26, constant bias profiles ``a l + b`` of Sec. 2.4.3)
``singularity_measures``           Supp. Note 1: elimination and overlap singularities of weights
``skip_network_hessian``           Supp. Note 1: exact Hessian (PyTorch autodiff, float64)
``degenerate_fraction``            fraction of zero Hessian eigenvalues
``bias_targets``                   Sec. 2.4.1: BiasSymmBreak / BiasL2Reg / BiasInit
``bias_penalty``                   Sec. 2.4.1: BiasSymmBreak / BiasL2Reg / BiasInit
``rescaling_deviation``            Sec. 2.1, Fig. 2c (rescaling symmetry)
``permutation_counts``             Sec. 2.1, Fig. 1a (``prod_l n_l!``) and the Discussion (``n!``
                                   versus ``K! (d!)^K``)
=================================  ===============================================================

Organisation
------------
One concept per private submodule, every public name re-exported here (import from
``meanfield.landscape``; the submodules are not part of the API):

- ``_binary``: binary toy networks and their exhaustive landscapes (Sec. 2.2, eqs. 1-4, Fig. 4):
  :func:`regression_task`, :func:`n_binary_parameters`, :func:`decode_configuration`,
  :func:`forward_binary`, :func:`binary_landscape` (conventions below);
- ``_three_layer``: three-layer linear networks in the mode basis (eqs. 8-18, Supp. Note 2):
  :func:`three_layer_energy`, :func:`three_layer_gradient_field`, :func:`three_layer_flow`,
  :func:`three_layer_hessian`;
- ``_modes``: mode-strength dynamics of deep linear networks (eqs. 19-23, Supp. Note 3):
  :func:`mode_offsets`, :func:`mode_energy`, :func:`mode_gradient`, :func:`mode_hessian`,
  :func:`mode_saddle`, :func:`mode_flow`;
- ``_skip_matrices``: skip matrices of controlled orthogonality (Sec. 2.4.2, Supp. Note 4):
  :func:`folded_orthogonal`, :func:`column_covariance_spectrum`, :func:`controlled_skip_matrix`,
  :func:`supp4_skip_matrix`;
- ``_symmetries``: the rescaling and permutation symmetries (Sec. 2.1, Discussion):
  :func:`skip_network`, :func:`rescaling_deviation`, :func:`permutation_counts`;
- ``_census``: local-minimum counts of landscapes too large to hold, chunked by leading bits and
  run on :mod:`meanfield.parallel` (a Dask cluster when asked): :func:`landscape_census`.
- ``_degeneracy``: singularities and Hessian degeneracy of (trained) networks and the bias
  regulariser of Sec. 2.4.1 (Supp. Note 1): :func:`singularity_measures`,
  :func:`degenerate_fraction`, :func:`skip_network_hessian`, :func:`bias_targets`,
  :func:`bias_penalty`.

Every result is a frozen dataclass with ``.replace()`` (:class:`meanfield._results.Result`).
Random functions take ``rng`` (``None``, an int ``n`` meaning ``numpy.random.default_rng(n)``, or a
``numpy.random.Generator``).

Conventions of the toy networks (Sec. 2.2)
------------------------------------------
``n_layers`` layers: the input ``x_1`` (``width`` units), ``n_layers - 2`` hidden layers of
``width`` units produced by square matrices ``W_1 ... W_{n_layers-2}`` and one linear output
unit ``y = w_out . x_{n_layers-1}`` (no skip into the output, no nonlinearity). Every weight is
``+1`` or ``-1``. The paper's net has ``n_layers = 7`` and ``width = 2``: five 2x2 matrices
(20 weights) and a 1x2 output row (2 weights), **22** binary weights. The paper states 23
parameters (2^23 ~ 8.4M configurations); its equations imply 22. ``output_bias_bit=True`` adds a
trainable output bias in ``{-1, +1}`` as the 23rd bit, which reproduces the paper's count; we know
of no other reading of eqs. 1-4 that gives 23.

The activity normalisation "by the number of incoming connections" generalises to width ``w``
as ``w / (incoming)``: plain ``w`` (factor 1), residual ``w + 1``, hyper-residual ``w + l``,
path-residual ``2 w``; for ``w = 2`` these are the paper's 1, 2/3, 2/(l+2) and 2/4.

Configuration encoding: configuration ``c`` (an integer in ``[0, 2^n)``) sets parameter ``j``
(order: ``W_1`` row-major, ..., ``W_{L-2}``, ``w_out``, output bias) to ``+1`` when bit
``n - 1 - j`` of ``c`` is 1 and to ``-1`` otherwise; :func:`decode_configuration` does this.

Local minima and ties
---------------------
A neighbour (one flipped bit) is *better* when its loss is lower by more than
``rtol * max(|L_c|, |L_nb|)`` (``rtol = 1e-12`` by default, so that two configurations computing
the same function tie even if rounding differs; ``rtol = 0`` compares exactly). A configuration is
a *local minimum* when it has no better neighbour (the paper's definition: "zero [better
neighbours] corresponds to local minima"); plateaus of tied configurations therefore count every
member as a local minimum. ``n_strict_local_minima`` counts configurations whose neighbours are
all strictly worse. Ties are frequent in the plain net: every configuration whose output is
identically zero has loss ``mean(t^2)``.

Adaptive walks move from a configuration to its best neighbour (lowest loss; neighbours tied
within ``rtol`` resolve to the lowest bit index) while that neighbour is better, so each walk ends
at a local minimum; the basin of a local minimum is the set of configurations whose walk ends
there, and the basins partition the configurations.

Limits and failure modes
------------------------
Every function validates its arguments and returns finite values: ``ValueError`` names the
argument and the allowed range, and is also what integer arguments that are bools, strings or
non-integral floats raise ("must be an integer"), as do arrays that do not convert to real
numbers (e.g. non-numeric strings); ``TypeError`` is for complex input, for bools, strings or
other non-numbers where a real scalar is expected, and for flags that are not ``bool``. Sizes
that cannot be computed in bounded time or memory are refused with the named limit:
:data:`MAX_BINARY_PARAMETERS` and :data:`MAX_LANDSCAPE_WORK` (enumeration),
:data:`MAX_DECODE_PARAMETERS`, :data:`MAX_SKIP_SIZE` and :data:`MAX_TAU_SPREAD` (skip matrices),
:data:`MAX_MODE_LAYERS`, :data:`MAX_THREE_LAYER_ENTRIES`, :data:`MAX_FLOW_DIMENSION` and
:data:`MAX_FLOW_EVALUATIONS` (flows), :data:`MAX_FACTORIAL_ARGUMENT`.
Results that would overflow double precision raise ``ValueError`` saying so (energies and norms
are formed without intermediate overflow, so only a result beyond the float64 range does);
:func:`column_covariance_spectrum` has ``log=True`` for spectra that underflow.

References
----------
Orhan, A. E. (2017). Skip connections as effective symmetry-breaking. arXiv:1701.09175.

Saxe, McClelland, Ganguli (2013). Exact solutions to the nonlinear dynamics of learning in deep
linear neural networks. arXiv:1312.6120.

Examples
--------
>>> from meanfield import landscape
>>> landscape.n_binary_parameters(7, 2)  # eqs. 1-4: five 2x2 matrices and a 1x2 output row
22
>>> landscape.mode_saddle("hyper_residual")  # Fig. 6a: where every factor a_l + c_l vanishes
array([-1., -2.])
"""

from __future__ import annotations

from ._binary import *  # noqa: F403
from ._binary import MAX_BINARY_PARAMETERS as MAX_BINARY_PARAMETERS
from ._binary import MAX_DECODE_PARAMETERS as MAX_DECODE_PARAMETERS
from ._binary import MAX_LANDSCAPE_WORK as MAX_LANDSCAPE_WORK
from ._binary import __all__ as _binary_all
from ._common import MAX_FLOW_DIMENSION as MAX_FLOW_DIMENSION
from ._common import MAX_FLOW_EVALUATIONS as MAX_FLOW_EVALUATIONS
from ._degeneracy import *  # noqa: F403
from ._degeneracy import DEGENERATE_RTOL as DEGENERATE_RTOL
from ._degeneracy import MAX_HESSIAN_PARAMETERS as MAX_HESSIAN_PARAMETERS
from ._degeneracy import __all__ as _degeneracy_all
from ._modes import *  # noqa: F403
from ._modes import MAX_MODE_LAYERS as MAX_MODE_LAYERS
from ._modes import __all__ as _modes_all
from ._skip_matrices import *  # noqa: F403
from ._skip_matrices import MAX_SKIP_SIZE as MAX_SKIP_SIZE
from ._skip_matrices import MAX_TAU_SPREAD as MAX_TAU_SPREAD
from ._skip_matrices import __all__ as _skip_matrices_all
from ._symmetries import *  # noqa: F403
from ._symmetries import MAX_FACTORIAL_ARGUMENT as MAX_FACTORIAL_ARGUMENT
from ._symmetries import __all__ as _symmetries_all
from ._three_layer import *  # noqa: F403
from ._three_layer import MAX_THREE_LAYER_ENTRIES as MAX_THREE_LAYER_ENTRIES
from ._three_layer import __all__ as _three_layer_all

# the MAX_* limits are importable (and settable) from here but are not listed in __all__
__all__ = (
    list(_binary_all)
    + list(_three_layer_all)
    + list(_modes_all)
    + list(_skip_matrices_all)
    + list(_symmetries_all)
    + list(_degeneracy_all)
)

# chunked (distributed) census of the binary landscapes: meanfield.parallel, docs/distributed.md
from ._census import *  # noqa: F403
from ._census import MAX_CENSUS_PARAMETERS as MAX_CENSUS_PARAMETERS
from ._census import MAX_CHUNK_CONFIGURATIONS as MAX_CHUNK_CONFIGURATIONS
from ._census import __all__ as _census_all

__all__ += list(_census_all)
