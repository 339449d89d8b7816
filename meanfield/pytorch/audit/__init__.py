r"""Audit a PyTorch model's signal propagation against mean-field theory: ``audit(model, inputs)``.

The model is re-initialised ``n_networks`` times; forward (and backward) hooks on every ``Linear`` /
``Conv1d`` / ``Conv2d`` / ``Conv3d`` / ``Embedding`` layer record, for D inputs, the pre-activation second moment
:math:`q^l = \langle (h^l_i)^2\rangle` (mean over units and positions), the mean pairwise
correlation :math:`c^l` of the inputs, the kurtosis :math:`\langle h^4\rangle/\langle h^2\rangle^2`
and the gradient second moment :math:`\langle(\partial L/\partial h^l_i)^2\rangle` for a Gaussian
cotangent at the output (``L = <v, model(x)>``, ``v ~ N(0, 1)``). The same quantities are
predicted by the library in two ways.

**Layer-local check** (rows ``q_layer``, every weight layer of any architecture). Given the layer's
*measured* input ``x`` in that initialisation, its weights (zero mean, ``E W^2 = sigma_w2 v_beta /
c_in`` per tap ``beta``, independent of ``x``) and bias (``E b^2 = sigma_b2``) give exactly

.. math:: \mathbb{E}[h_i(p)^2 \mid x] = \frac{\sigma_w^2}{c_{in}} \sum_{c, \beta} v_\beta\, x_c(s p + d \beta - \text{pad})^2 + \sigma_b^2,

the sum running over the input channels of unit ``i``'s group and the taps that output position
``p`` sees (stride ``s``, dilation ``d``, groups; zero padding contributes nothing, so border
positions see fewer inputs; reflect / replicate / circular padding pad the squared input as the
layer pads its input); for ``Linear``, :math:`\sigma_w^2 \langle |x|^2\rangle / n_{in} +
\sigma_b^2`; for ``Embedding`` (rows ``W_t ~ sigma_w2``, PyTorch's default ``N(0, 1)``),
``sigma_w2`` times the fraction of looked-up tokens other than ``padding_idx``. No
approximation enters: the prediction holds whatever precedes the layer (norms, attention,
residual additions, a module used twice: its first call). The row compares
``<h^2>`` (mean over units, inputs and positions) with the mean prediction; the output units are
independent given the input, so the standard error comes from the unit-wise residuals
``u_i - E[u_i | x]`` over all units and re-initialisations. It checks that every layer's weights and
bias have the variance the initialiser declared (or PyTorch's default law); it does not check
how the signal propagates between layers (the end-to-end rows do, where a theory covers the path).
Orthogonal rows are uniform on the sphere, so the same prediction holds (their units are
negatively correlated: the standard error is conservative); ``orthogonal_conv_`` kernels correlate
their taps and get no layer-local row. ``nn.MultiheadAttention`` applies its packed
``in_proj_weight`` and its out-projection inside ``F.multi_head_attention_forward``: a hook on the
module sees the query, key and value, each projection is the ``Linear`` rule on its input (rows
``<module>.in_proj.q`` / ``.k`` / ``.v``, PyTorch's ``xavier_uniform_`` law ``sigma_w2 = 1/2``,
re-drawn from a stream of its own), and the out-projection's input is recomputed by the same
function with the out-projection replaced by the identity (row ``<module>.out_proj``).

**End-to-end theory** (rows ``q``, ``c``, ``kurtosis``, ``grad``): the state is propagated from the
inputs through the model, layer by layer:

* ``Linear`` (``W_ij ~ sigma_w2 / fan_in``): :math:`\Sigma_{out} = \sigma_w^2 K_{in} + \sigma_b^2`
  with :math:`K` the second-moment matrix of the layer's input (exact for the data at layer 1);
* ``Conv1d``/``Conv2d`` with ``padding=k // 2, padding_mode="circular"``, stride 1: the CNN
  covariance map :math:`\Sigma_{out} = \sigma_w^2 \mathcal{A}_v\star K + \sigma_b^2` of Xiao et al. 2018
  (eqs. 2.3-2.5, :func:`meanfield.conv.average`), with the variance vector ``v`` that the kernel's
  initialiser realises; zero padding is computed as if circular and marked *approximate* (the
  borders differ);
* activation modules: :math:`K = \mathbb{E}\phi(u)\phi(u)^T`, :math:`u\sim N(0,\Sigma)`
  (:func:`meanfield.dense.covariance_map`);
* :class:`~meanfield.pytorch.modules.Residual` blocks (identity skips) and Orhan's residual /
  hyper-residual / path-residual nets: the residual mean-field recursion, in which the stream is a
  sum of unit-wise independent components (cross moments :math:`m_i m_j^T` from their means);
* ``Flatten``, ``Identity``, ``Dropout`` (the audit runs in ``eval()`` mode), ``AdaptiveAvgPool(1)``;
* gradients: the backward map under gradient independence (Xiao et al. 2018, eq. 2.16; Schoenholz et al.
  2017, eq. 14) through plain stacks of the layers above;
* kurtosis: the exact finite-width recursion of Grzejdziak 2023 (Prop. 4.3, :func:`meanfield.kurtosis.propagate`)
  where it applies: a ``Linear`` stack of i.i.d. Gaussian weights without biases and ReLU / leaky ReLU
  / identity activations. The sample kurtosis is heavy-tailed: once the predicted kurtosis is large
  (measured: above ~10 with 400 re-initialisations of a width-16 ReLU MLP) its jackknife standard
  error is optimistic and such rows can FAIL although the recursion holds (the validation module
  ``meanfield.validation.kurtosis`` keeps rows with kappa <= 30 and uses 20,000 networks for them).

Anything else (``BatchNorm``, attention, a module used twice, a user's ``forward`` that is not a
``Sequential``) stops the end-to-end theory: its rows from there on are measured and marked
``"no theory"`` (the layer-local rows still check every layer).

The default number of re-initialisations (``n_networks=None``) resolves a relative deviation
:data:`DETECTABLE_Q_DEVIATION` (10 %) of the first layer's ``q`` with power ``Phi(POWER_Z)`` (95 %):
after one initialisation the relative standard error ``se_1`` of the first layer's layer-local row is
estimated from its units, and ``K = ceil(((Z + POWER_Z) se_1 / 0.1)^2)`` re-initialisations are run,
clipped to [:data:`N_INITS_MIN`, :data:`N_INITS_MAX`].

Verdicts follow :class:`meanfield.validation.report.Comparison` (the same rule and constant, here
without importing the upper layer): ``ok`` when :math:`|measured - theory| \le z\,se + systematic`, else ``FAIL``, at the level of
:data:`Z` (4.5 standard errors, two-sided ``6.8e-6``): ``se`` is the standard error over the
``n_networks`` re-initialisations, itself estimated, so ``z`` is the Student-t quantile of that level
with ``n_networks - 1`` degrees of freedom (:func:`z_for`: 19.4 for 6, 9.3 for 10, 6.1 for 20, 4.5
from 200). ``systematic`` is the finite-width bias of mean-field theory, stated in advance
as :data:`FINITE_WIDTH_BIAS`: :math:`(l - 1)/N` of the quantity's scale at layer ``l`` with ``N``
the smallest fan-in width on the way (the O(depth / width) corrections of deep networks; Roberts,
Yaida & Hanin 2022, ch. 4-5); the first layer is exact given the inputs.
"""

from __future__ import annotations

from ._audit import audit
from ._inputs import prepare_inputs
from ._rows import (
    DETECTABLE_Q_DEVIATION,
    FINITE_WIDTH_BIAS,
    MAX_INPUTS,
    N_INITS_MAX,
    N_INITS_MIN,
    POWER_Z,
    QUANTITIES,
    VERDICTS,
    Audit,
    AuditRow,
    Z,
    verdict,
    z_for,
)

__all__ = [
    "DETECTABLE_Q_DEVIATION",
    "FINITE_WIDTH_BIAS",
    "MAX_INPUTS",
    "N_INITS_MAX",
    "N_INITS_MIN",
    "POWER_Z",
    "QUANTITIES",
    "VERDICTS",
    "Audit",
    "AuditRow",
    "Z",
    "audit",
    "prepare_inputs",
    "verdict",
    "z_for",
]
