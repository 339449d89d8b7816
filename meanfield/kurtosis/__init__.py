r"""Kurtosis recursion and vanishing empirical variance of deep random networks (Grzejdziak 2023).

Grzejdziak, Loog & Tax (2023), *Vanishing Empirical Variance in Randomly Initialized Networks*.
Networks are ``y^(0) = x``, ``y^(l) = W^(l) phi_a(y^(l-1))`` with leaky ReLU ``phi_a`` of negative
slope ``a`` and i.i.d. zero-mean symmetric weights of variance ``2 / (w (a^2 + 1))``, ``w`` the
**fan-in** (the width of ``y^(l-1)``) and kurtosis ``kappa_w``.

Code names and the paper's symbols:

===========================  ================================================================================
code                         paper
===========================  ================================================================================
``width`` / ``widths``       ``w_l`` = width of ``y^(l)`` = fan-in of layer ``l + 1``
``slope``                    ``a``
``weight_kurtosis``          ``kappa_w``
``sigma_x2``                 ``sigma_x^2`` (the variance kept by He initialisation, Prop. 3.2)
``kappa``, ``c``             ``kappa_l = Kurt[y_i^(l)]``, ``c_l = Cov[(y_i^(l))^2, (y_j^(l))^2]``, i != j
:func:`transition_matrix`    ``A^(l)`` of Prop. 4.3
:func:`product`              ``B = prod_l A^(d - l)`` in the ``(alpha, beta, gamma, delta)`` form of Lemma 4.4
:func:`trace_determinant`    ``tr``, ``det`` and eigenvalues of ``A_-^(l)`` (Lemma 4.5)
===========================  ================================================================================

Derivation check. Re-deriving Prop. 4.3 from Lemmas 4.1-4.2 (multinomial expansion of
``E[(sum_j W_ij phi_j)^4]``, rows of ``W`` independent) gives exactly the printed matrix
``A^(l)``. Two points the paper leaves implicit, both needed for the recursion to be exact:

* Lemma 4.2 needs the joint law of ``(y_i, y_j)`` to be invariant under flipping the sign of one
  coordinate (true for every layer ``l >= 1`` because each row of ``W`` is symmetric and rows are
  independent; for the input it must be assumed, e.g. ``x = W z`` as in Prop. 3.3).
  Uncorrelated, symmetric marginals are not enough.
* The weight variance must use the fan-in ``w_{l-1}`` of ``W^(l)``; the paper writes ``w_l``
  (the fan-out), which preserves the variance only for constant widths. ``A^(l)`` itself uses the
  fan-in ``w_l`` of layer ``l + 1``, consistent with this correction.

The proof of Lemma 4.5 has a missing display; the condition it needs is
``lambda_max > 1  <=>  det(A_-) + 1 < tr(A_-)`` (for ``1 <= tr < 2``), which holds for every
``w > 1``, ``kappa_w >= 1`` (checked in the tests). Prop. B.2's "symmetric and uncorrelated"
justification is insufficient: see :func:`nonzero_probability` for the assumptions it needs.

Numerical range. Widths up to ``MAX_WIDTH`` (2^53), ``sigma_x2`` in ``SIGMA_X2_RANGE``
([1e-100, 1e100]), ``weight_kurtosis`` in ``[1, MAX_WEIGHT_KURTOSIS]`` (1e100), any finite slope.
The recursions run on a log scale: ``KurtosisPropagation.log_kappa`` and ``LemmaProduct.log_*``
are finite at any depth; ``kappa``, ``c``, ``alpha`` ... raise ``ValueError`` when a value leaves
float64 instead of returning inf. Input moments must be moments of some signal of the input
width (``propagate`` checks the three bounds), which keeps every ``kappa_l >= 1``. Far tails of
the empirical-variance law are available as ``log_prob_below`` / ``log_quantile``;
``nonzero_probability(..., log=True)`` at any depth. :func:`residual_moments` has tighter
limits of its own: ``2 <= width <= 10^9``, ``depth <= 10^5``, ``|slope| <= 1e50``,
``weight_kurtosis`` in ``[1, 1e6]``, ``s2`` in ``[1e-150, 1e150]``; it has no log scale, so it
raises ``ValueError`` once its moments leave float64 (for residual layers, whose variance doubles
per layer, before depth 512 with unit input moments).

Residual networks. Grzejdziak 2023 (Discussion) conjectures that "addition of skip connections
cannot stop the growth of kurtosis, because kurtosis explodes even for the networks with no activation function".
:func:`residual_moments` gives the moment recursion of the residual layer

.. math:: y^{(l+1)} = y^{(l)} + W^{(l+1)} \phi_a(y^{(l)}), \qquad
    \mathrm{Var}\,W_{ij} = \frac{2}{w (a^2 + 1)},\ \mathrm{Kurt}\,W_{ij} = \kappa_w,

(constant width ``w``), on the raw moments ``s2 = E y_i^2``, ``m4 = E y_i^4``,
``m22 = E y_i^2 y_j^2`` (i != j), and the plain layer ``y' = W phi_a(y)`` on the same state, whose
kurtosis ``m4 / s2^2`` reproduces Prop. 4.3 (a check of the derivation).

Derivation. With ``u_i = sum_k W_ik phi_k``, rows of ``W`` independent and symmetric, ``v = Var W``:

* ``E u_i^2 = v w (1 + a^2) / 2 s2``; ``E u_i^4 = kappa_w v^2 w E phi^4 + 3 v^2 w (w - 1) E phi_k^2 phi_l^2``;
  ``E u_i^2 u_j^2 = v^2 [w E phi^4 + w (w - 1) E phi_k^2 phi_l^2]``;
* residual: ``m4' = m4 + 6 E y_i^2 u_i^2 + E u_i^4`` and
  ``m22' = m22 + 2 E y_i^2 u_j^2 + E u_i^2 u_j^2`` (terms odd in a row of ``W`` vanish, and
  ``E[y_i u_i y_j u_j] = 0``), with ``E y_i^2 u_j^2 = v [E y_i^2 phi_i^2 + (w - 1) E y_i^2 phi_k^2]``.

Closing the recursion needs ``E phi_a(y)^4 = (1 + a^4) / 2 m4``,
``E phi_a(y_k)^2 phi_a(y_l)^2 = ((1 + a^2) / 2)^2 m22`` and ``E y_i^2 phi_a(y_k)^2 = (1 + a^2) / 2 E y_i^2 y_k^2``:
the invariance of the law under flipping the sign of one coordinate (Grzejdziak's Lemma 4.2). It holds
for plain layers (each row of ``W`` is symmetric) but **not** for residual ones once ``a != 1``:
``y_i + u_i`` does not change sign with row ``i`` of ``W``. The residual recursion is therefore
exact for ``a = 1`` (linear, the case the conjecture invokes; every ``phi`` moment is a ``y``
moment) and a closure otherwise; ``validation.kurtosis`` measures both against simulations.

References
----------
M. Grzejdziak, M. Loog, D. M. J. Tax, "Vanishing Empirical Variance in Randomly Initialized
Networks", MSc thesis / NeurIPS 2023 submission (Grzejdziak 2023).

B. O'Neill, "Some useful moment results in sampling problems", Am. Stat. 68 (2014).
"""

from __future__ import annotations

from ._args import MAX_WEIGHT_KURTOSIS, MAX_WIDTH, SIGMA_X2_RANGE
from ._recursion import (
    KurtosisPropagation,
    LemmaProduct,
    TraceDeterminant,
    depth_to_kurtosis,
    product,
    propagate,
    spectral_radius,
    trace_determinant,
    transition_matrix,
)
from ._residual import ResidualMoments, residual_moments
from ._statistics import InputStatistics, input_statistics, weight_kurtosis
from ._variance import EmpiricalVarianceDistribution, empirical_variance_distribution, nonzero_probability

__all__ = [
    "MAX_WEIGHT_KURTOSIS",
    "MAX_WIDTH",
    "SIGMA_X2_RANGE",
    "EmpiricalVarianceDistribution",
    "InputStatistics",
    "KurtosisPropagation",
    "LemmaProduct",
    "ResidualMoments",
    "TraceDeterminant",
    "depth_to_kurtosis",
    "empirical_variance_distribution",
    "input_statistics",
    "nonzero_probability",
    "product",
    "propagate",
    "residual_moments",
    "spectral_radius",
    "trace_determinant",
    "transition_matrix",
    "weight_kurtosis",
]
