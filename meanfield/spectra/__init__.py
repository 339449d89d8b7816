r"""Singular-value spectra of the input-output Jacobian of deep random networks (free probability).

Dynamical isometry as a spectrum rather than a mean (Xiao et al. 2018, Sec. 2.2.1, after Pennington,
Schoenholz & Ganguli 2017, 2018). A depth-``L`` network :math:`h^l = W^l x^{l-1} + b^l`,
:math:`x^l = \phi(h^l)` has the input-output Jacobian

.. math:: J = \frac{\partial x^L}{\partial x^0} = \prod_{l=L}^{1} D^l W^l, \qquad D^l = \mathrm{diag}\,\phi'(h^l).

At the fixed point every :math:`h^l_i` is :math:`N(0, q^*)`, so the diagonal entries of
:math:`(D^l)^2` follow the law of :math:`\phi'(\sqrt{q^*} z)^2`, :math:`z \sim N(0, 1)`. In the
wide limit the :math:`W^l` and :math:`D^l` are asymptotically free and the S-transforms of the
squared singular values multiply (Pennington et al. 2017, eq. 8):

.. math:: S_{JJ^T}(m) = \prod_{l=1}^{L} S_{W_lW_l^T}(m)\, S_{D_l^2}(m) = \big[S_{WW^T}(m)\,S_{D^2}(m)\big]^L,

with :math:`S_{WW^T} = 1/\sigma_w^2` for (scaled) orthogonal weights and
:math:`S_{WW^T} = 1/(\sigma_w^2 (1 + m))` for Gaussian weights :math:`N(0, \sigma_w^2/N)` (the
Marchenko-Pastur law), and :math:`S_{D^2}(m) = (1+m)\,\psi_{D^2}^{-1}(m)/m`. Here
:math:`\psi_X(z) = \int \rho_X(t)\, tz/(1 - tz)\,dt` is the moment generating function and
:math:`S_X(m) = (1+m)\,\psi_X^{-1}(m)/m` (Pennington et al. 2017, eqs. 5-7).

Solving for the density. Writing :math:`u = \psi_{D^2}^{-1}(m)`, the equation
:math:`\psi_{JJ^T}^{-1}(m) = m\,S_{JJ^T}(m)/(1+m) = z` becomes one analytic equation in ``u``
(``s = sigma_w2``, ``g = 1`` for Gaussian and ``0`` for orthogonal weights):

.. math:: L \log(u/s) - (L-1)\log m + \big((1-g)L - 1\big)\log(1+m) = \log z, \qquad m = \psi_{D^2}(u).

It is solved by Newton's method at :math:`z = 1/w`, :math:`w = \lambda(1 + i\eta)` for the squared
singular values :math:`\lambda` on a geometric grid, continued from far above the support (where
:math:`m \approx \mu_1 u \to 0` on the real axis) down to the smallest grid point, the logarithms
kept on a continuous branch. The Stieltjes transform is :math:`G(w) = (1 + m)\,z` and the density of
:math:`\lambda` is :math:`\rho(\lambda) = -\mathrm{Im}\,G(w)/\pi`: the true density smoothed by a
Cauchy kernel of relative width :math:`\eta` (by default twice the grid's step in
:math:`\log\lambda`; the O(eta) error of any moment is removed by Richardson extrapolation in eta). The law of :math:`D^2` is
represented by :data:`DEFAULT_ATOMS` atoms :math:`\phi'(\sqrt{q} z_i)^2` on a uniform grid of
:math:`z_i` with normal-density weights (the trapezoid rule), dense enough that the atoms' spacing
stays below the broadening; when :math:`\phi'^2` takes exactly two values (relu,
leaky_relu, hard_tanh) the law is the exact two-point law, its weights fixed by the closed-form
:math:`\mathbb{E}\phi'^2`.

Checks. The mean squared singular value is :math:`\int\lambda\rho = \chi_1^L` (Xiao et al. 2018,
Sec. 2.2.1: :math:`\chi_1` is the mean squared singular value of one layer); the relative variance
is :math:`L(\mu_2/\mu_1^2 - 1 + g)` with :math:`\mu_k = \mathbb{E}\phi'^{2k}` (from the first two
terms of the S-transforms; Pennington et al. 2017, eq. 15); a linear network with Gaussian weights
has the Fuss-Catalan moments :math:`\binom{(L+1)k}{k}/(Lk+1)` and for ``L = 1`` the
Marchenko-Pastur density.

Convolutions (Xiao et al. 2018, Sec. 2.2.1). The Jacobian of a periodic CNN layer is :math:`D^l W^l` with
:math:`W^l` the ``(n c) x (n c)`` block-circulant matrix of the kernel. For an orthogonal kernel
(Algorithm 1) or a delta-orthogonal kernel (Algorithm 2) :math:`W^l/\sigma_w` is an orthogonal
matrix, for i.i.d. Gaussian kernels its singular values tend to Marchenko-Pastur as c grows
(Xiao et al. 2018, Fig. S3), so :func:`conv_jacobian_spectrum` is the dense law with the matching weight
law, at the CNN's fixed point (which has the same :math:`q^*` as the dense network).

Code name <-> symbol: ``squared_singular_values`` = :math:`\lambda`, ``density`` =
:math:`\rho(\lambda)`, ``singular_values`` = :math:`\sigma = \sqrt\lambda`,
``singular_value_density`` = :math:`2\sigma\rho(\sigma^2)`, ``depth`` = :math:`L`.

References
----------
Pennington, Schoenholz, Ganguli (2017), "Resurrecting the sigmoid in deep learning through dynamical
isometry: theory and practice", NeurIPS. Pennington, Schoenholz, Ganguli (2018), "The emergence of
spectral universality in deep networks", AISTATS. Xiao, Bahri, Sohl-Dickstein, Schoenholz,
Pennington (2018), "Dynamical isometry and a mean field theory of CNNs: how to train 10,000-layer
vanilla convolutional neural networks", Sec. 2.2.1 and supplement E.
"""

from __future__ import annotations

from ._jacobian import SpectrumMoments, conv_jacobian_spectrum, jacobian_spectrum, spectrum_moments
from ._laws import ACCURACY_MODES as ACCURACY_MODES
from ._laws import (
    CONV_KERNELS,
    DEFAULT_ATOMS,
    WEIGHT_LAWS,
    DerivativeLaw,
    JacobianSpectrum,
    SpectrumAccuracyError,
    SpectrumAccuracyWarning,
    derivative_law,
)
from ._laws import EDGE_FACTOR as EDGE_FACTOR
from ._laws import EDGE_MARGIN as EDGE_MARGIN
from ._laws import LOW_MASS_TOL as LOW_MASS_TOL
from ._laws import MASS_TOL as MASS_TOL
from ._laws import MAX_DEPTH as MAX_DEPTH
from ._laws import MAX_POINTS as MAX_POINTS
from ._laws import MAX_TRIM_LEAK as MAX_TRIM_LEAK
from ._laws import MEAN_RTOL as MEAN_RTOL
from ._laws import MOMENT_REACH as MOMENT_REACH
from ._laws import Q_ZERO as Q_ZERO
from ._laws import Z_RANGE as Z_RANGE

__all__ = [
    "CONV_KERNELS",
    "DEFAULT_ATOMS",
    "WEIGHT_LAWS",
    "DerivativeLaw",
    "JacobianSpectrum",
    "SpectrumAccuracyError",
    "SpectrumAccuracyWarning",
    "SpectrumMoments",
    "conv_jacobian_spectrum",
    "derivative_law",
    "jacobian_spectrum",
    "spectrum_moments",
]
