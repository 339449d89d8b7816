r"""Data-set kernels: the infinite-width NNGP and NTK between two sets of inputs.

For inputs :math:`x_1 \in \mathbb{R}^{D_1\times n_0}` and :math:`x_2 \in \mathbb{R}^{D_2\times n_0}`
this module computes the :math:`D_1\times D_2` blocks of the NNGP kernel :math:`\Sigma^{L+1}` and of
the neural tangent kernel :math:`\Theta^{L+1}` of a deep network (train/train when ``x2`` is
omitted, test/train otherwise), the inputs of kernel regression (:mod:`meanfield.kernel_regression`).
The recursions are those of :mod:`meanfield.dense` and :mod:`meanfield.ntk` (dense networks) and of
:mod:`meanfield.conv` and :func:`meanfield.ntk.propagate_conv_ntk` (periodic CNNs, Xiao et al. 2018):

.. math:: \Sigma^1_{ij} = \frac{\sigma_w^2}{n_0} x_i\cdot x_j + \sigma_b^2, \qquad \Theta^1 = \Sigma^1,

.. math:: \Sigma^{l+1}_{ij} = \sigma_w^2\,\kappa(q_i, q_j, c_{ij}) + \sigma_b^2, \qquad
    \Theta^{l+1}_{ij} = \Sigma^{l+1}_{ij} + \sigma_w^2\,\dot\kappa(q_i, q_j, c_{ij})\,\Theta^l_{ij},

with :math:`\kappa = \mathbb{E}\,\phi(u)\phi(v)`, :math:`\dot\kappa = \mathbb{E}\,\phi'(u)\phi'(v)`,
:math:`(u, v) \sim N(0, [[q_i, c_{ij}\sqrt{q_iq_j}], [\cdot, q_j]])`, :math:`q_i = \Sigma^l_{ii}`
(Jacot et al. 2018; Arora et al. 2019, eq. 9; Lee et al. 2019, eq. 4). For a periodic CNN every input
pair carries a :math:`P\times P` block over positions, mapped entrywise by the same pair map and then
averaged, :math:`\Sigma^{l+1} = \mathcal{A}_v\star(\sigma_w^2\kappa) + \sigma_b^2` and
:math:`\Theta^{l+1} = \Sigma^{l+1} + \mathcal{A}_v\star(\sigma_w^2\dot\kappa\odot\Theta^l)` (Xiao et al.
2018, eqs. 2.3-2.5; :func:`meanfield.ntk.conv_ntk_map`).

How it is computed. Given the per-input variances :math:`q^l_i` (a cheap pass over the inputs),
every pair evolves independently through depth, so the work is a throughput problem: the rows of
``x1`` are cut into blocks of ``block_rows`` rows, the blocks run on all cores (compiled kernels that release the GIL, one thread per core),
and within a row every layer streams once over the row's columns; the NNGP and the NTK are updated
in the same pass from one evaluation of the closed-form pair map (:func:`closed_layer_maps`: the
arcsine kernel for erf, the arc-cosine kernel for relu / leaky relu, linear). Memory is the output
arrays plus O(``block_rows`` x D2) scratch (the per-input trajectories are O((depth + 1)(D1 + D2))).
For the closed forms every pair's arithmetic is a fixed, symmetric function of the pair's inputs,
so the result does not depend on the block size, on the number of threads, on the split into Dask
tasks (``rows_per_task``, through :mod:`meanfield.parallel`) or on the order of the inputs, bit for bit.

Activations without a closed form (tanh, sigmoid, softplus, swish, gelu, user activations) go
through Mehler's formula (``meanfield._mehler.mehler_layer_maps``, as in
:func:`meanfield.mehler.propagate_mehler`): Hermite coefficients once per input and layer, a short
series per pair, each layer certified to ``rtol`` of ``sqrt(K_ii K_jj)``; pairs it cannot certify
(kinks at correlations near 1, variances above ``meanfield.mehler.Q_MAX``) fall back to the
per-pair quadrature. A dense network maps whole layers at once (scratch: a few D1 x D2 arrays), so
the coefficients of an input are computed once per layer; the number of terms an input needs is set
by its most correlated partner, so these results may differ between splits into ``rows_per_task``
by at most the certified bound (not bit for bit).

Relation to :func:`meanfield.dense.propagate` and :func:`meanfield.ntk.propagate_ntk`: those carry the
whole (depth + 1, D, D) trajectory on a log scale (a normalised matrix times a scale, to reach any
depth without overflow) and run on one core; the kernels here carry the last layer's (or the
``layers`` chosen) values in plain float64. The two agree to float64 rounding (the tests bound the
difference by :data:`ROUNDING_RTOL` per layer), not bit for bit.

Code name <-> symbol: ``nngp`` = :math:`\Sigma^{L+1}` (= :math:`\mathcal{K}` of Lee et al. 2019),
``ntk`` = :math:`\Theta^{L+1}`, ``kappa`` = :math:`\kappa`, ``kappa_dot`` = :math:`\dot\kappa`.

References
----------
Jacot, Gabriel, Hongler (2018), "Neural tangent kernel". Lee et al. (2018), "Deep neural networks as
Gaussian processes". Arora et al. (2019), "On exact computation with an infinitely wide neural net".
Lee et al. (2019), "Wide neural networks of any depth evolve as linear models under gradient
descent". Xiao, Bahri, Sohl-Dickstein, Schoenholz, Pennington (2018), "Dynamical isometry and a
mean field theory of CNNs", Sec. 2.
"""

from __future__ import annotations

from ._common import (
    CLOSED_FORM,
    DEFAULT_BLOCK_ROWS,
    MAX_DEPTH,
    MAX_OUTPUT_ELEMENTS,
    PARALLEL_MIN_WORK,
    READOUTS,
    ROUNDING_RTOL,
    DatasetKernels,
    LayerMaps,
    closed_layer_maps,
    quadrature_layer_maps,
)
from ._conv import conv_kernels
from ._dense import dense_kernels

__all__ = [
    "CLOSED_FORM",
    "DEFAULT_BLOCK_ROWS",
    "MAX_DEPTH",
    "MAX_OUTPUT_ELEMENTS",
    "PARALLEL_MIN_WORK",
    "READOUTS",
    "ROUNDING_RTOL",
    "DatasetKernels",
    "LayerMaps",
    "closed_layer_maps",
    "conv_kernels",
    "dense_kernels",
    "quadrature_layer_maps",
]
