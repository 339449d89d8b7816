r"""Mean-field theory of deep periodic convolutional networks (Xiao et al. 2018).

Network convention (Xiao et al. 2018, eq. 2.1 and Sec. 2.1.6): periodic boundaries, c channels,

.. math:: h^{l+1}_j(\alpha) = \sum_{i}\sum_{\beta\in ker} \phi(h^l_i(\alpha+\beta))\,\omega^{l+1}_{ij}(\beta) + b^{l+1}_j,
    \qquad \omega_{ij}(\beta) \sim N(0, \sigma_w^2 v_\beta / c),\ b_j \sim N(0, \sigma_b^2),

with a *variance vector* ``v`` (non-negative, summing to 1): uniform ``v`` is the standard network,
one-hot ``v`` the delta initialisation. In the many-channel limit each channel is an independent
Gaussian field with spatial covariance :math:`\Sigma^l` (P x P over the P flattened positions),
and (eqs. 2.3-2.5, 2.13; supplement Corollary A.2)

.. math:: \Sigma^{l+1} = \mathcal{A}_v \star \mathcal{C}(\Sigma^l), \qquad
    [\mathcal{A}_v\star\Sigma]_{\alpha,\alpha'} = \sum_\beta v_\beta\,\Sigma_{\alpha+\beta,\alpha'+\beta},

where :math:`\mathcal{C}` is the dense C-map :func:`meanfield.dense.covariance_map` applied to every
pair of positions. Signals are 1-D (spatial size ``n``, ``v`` of length ``2k+1``, index ``j`` <->
offset ``beta = j - k``) or 2-D (shape ``(n1, n2)``, ``v`` of shape ``(2k1+1, 2k2+1)``, positions
flattened row-major, ``a = a1 * n2 + a2``).

Code name <-> symbol: ``cov`` = :math:`\Sigma`, ``average`` = :math:`\mathcal{A}_v\star`,
``lambda_`` = :math:`\lambda` (eigenvalues of :math:`\mathcal{A}_v\star`, eq. 2.11),
``chi_c``/``chi_q``/``chi_1`` as in :mod:`meanfield.dense` (eq. 2.7), ``kappa`` =
:math:`\kappa` (eq. S13), ``cov_grad`` = :math:`\tilde\Sigma` (backward covariance, eq. 2.15).

Fourier modes. :math:`\mathcal{A}_v\star` maps each cyclic diagonal
:math:`e_d(\alpha) = \Sigma_{\alpha,\alpha+d}` to itself by a circular cross-correlation with ``v``,
so the Fourier mode ``m`` of every cyclic diagonal is an eigenvector with eigenvalue
:math:`\lambda_m = \sum_\beta v_\beta e^{2\pi i m\beta/n}` (the conjugate DFT of ``v`` placed on the
ring; the paper's :math:`\lambda_{\alpha,\alpha'} = \lambda_{(\alpha+\alpha') \bmod n}`, "n copies
of the 1-D DFT of v"). :func:`cyclic_diagonal_modes` returns these Fourier amplitudes.

References
----------
Xiao, Bahri, Sohl-Dickstein, Schoenholz, Pennington (2018), "Dynamical isometry and a mean field
theory of CNNs: how to train 10,000-layer vanilla convolutional neural networks", Sec. 2.1-2.2,
supplement A-B, F.
"""

from __future__ import annotations

from ._averaging import (
    CRITICAL_ATOL as CRITICAL_ATOL,
)
from ._averaging import (
    KAPPA_STEP as KAPPA_STEP,
)
from ._averaging import (
    MAX_COVARIANCE_POSITIONS as MAX_COVARIANCE_POSITIONS,
)
from ._averaging import (
    MAX_GS_COUNT as MAX_GS_COUNT,
)
from ._averaging import (
    MAX_MULTI_INPUT_DEPTH as MAX_MULTI_INPUT_DEPTH,
)
from ._averaging import (
    MAX_POSITIONS as MAX_POSITIONS,
)
from ._averaging import (
    average,
    average_transpose,
    spatial_shape,
)
from ._backward import BackwardPropagation, backward_covariance_map, gradient_variance_decay
from ._depth import (
    ConvDepthScales,
    LinearizedDecay,
    depth_scales,
    fig_s4_setup,
    fig_s4_theory,
    fixed_point_covariance,
    linearized_decay,
)
from ._forward import covariance_map, propagate, propagate_log
from ._fourier import averaging_singular_values, cyclic_diagonal_modes, fourier_eigenvalues, gs_family
from ._multi_input import (
    CMapEigenbasis,
    cmap_jacobian,
    cmap_jacobian_eigenbasis,
    multi_input_covariance,
    multi_input_covariance_map,
    multi_input_propagate,
)

__all__ = [
    "BackwardPropagation",
    "CMapEigenbasis",
    "ConvDepthScales",
    "LinearizedDecay",
    "average",
    "average_transpose",
    "averaging_singular_values",
    "backward_covariance_map",
    "cmap_jacobian",
    "cmap_jacobian_eigenbasis",
    "covariance_map",
    "cyclic_diagonal_modes",
    "depth_scales",
    "fig_s4_setup",
    "fig_s4_theory",
    "fixed_point_covariance",
    "fourier_eigenvalues",
    "gradient_variance_decay",
    "gs_family",
    "linearized_decay",
    "multi_input_covariance",
    "multi_input_covariance_map",
    "multi_input_propagate",
    "propagate",
    "propagate_log",
    "spatial_shape",
]
