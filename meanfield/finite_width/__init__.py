r"""Exact finite-width signal propagation in Gaussian ReLU ensembles (Burkholz & Dubatovka 2019).

Given the previous layer's signal ``x`` with ``|x|^2 = y``, every pre-activation of a layer with
Gaussian weights and biases is exactly ``h_i ~ N(0, sigma_y^2)``,
``sigma_y^2 = sigma_w2 / fan_in * y + sigma_b2``, independently over the ``N`` neurons. The squared
norm of the next signal, ``z = |phi(h)|^2``, is therefore the ``N``-fold convolution of the law of
``phi(h_i)^2``; its density ``k(y, z)`` is the kernel of the linear operator ``T_l`` that maps the
law of ``|x^(l-1)|^2`` to that of ``|x^(l)|^2`` (Burkholz & Dubatovka 2019, Prop. 1, eq. 1).

Parametrisation (the library's, as everywhere): ``W_ij ~ N(0, sigma_w2 / fan_in)``, He is
``sigma_w2 = 2``. The functions taking ``sigma_w2`` also take ``fan_in`` (keyword), defaulting
to the layer's ``width``: square layers, the setting of Burkholz & Dubatovka 2019, whose He ``sigma_w,l^2 = 2 / N_l``
is then ``sigma_w2 = 2``. The exceptions: :func:`preactivation_covariance`,
:func:`gram_chain_samples`, :func:`cosine_law_over_depth`, :func:`component_cdf` and
:func:`joint_component_cdf` require ``fan_in`` (no default), and
:func:`cosine_similarity_samples` takes none (the scale drops out of the cosine). Burkholz &
Dubatovka 2019 writes the per-weight variance ``sigma_w^2 = sigma_w2 / fan_in`` ("unscaled");
:func:`unscaled_sigma_w2`, :func:`sigma_w2_from_unscaled` and ``Layer.unscaled_sigma_w2`` convert
at the boundary (figures, simulators written in the paper's parametrisation). ``rho`` is a
correlation throughout.

Submodules (private; everything is re-exported here):

==================  ===============================================================================
``_kernel``         the operator ``T_l``'s ReLU kernel (Prop. 1, Prop. 4 eq. 7)
``_eigen``          eigenfunctions ``y^m`` and eigenvalues (Prop. 4 eq. 8), critical exponents (Sec. 2.3)
``_layer``          :class:`Layer` and the conversion to Burkholz & Dubatovka's unscaled variance
``_operator``       ``T_l`` on a grid and propagated laws (Prop. 1, Sec. 2.2, Fig. 1a)
``_norms``          expected squared norms with biases (Cor. 3, eqs. 5-6)
``_correlation``    the ReLU correlation map and the mean inner product (Thm. 5, eqs. 9-10)
``_joint``          two inputs: joint pre-activations (Prop. 2), the law of ``<x1, x2>`` and of the
                    cosine (Thm. 5, Fig. 2)
``_laws``           several layers: the Gram-matrix chain, the cosine law over depth, the component
                    CDFs (eqs. 2-3), the GSM product spectrum (Sec. 3)
==================  ===============================================================================

Code name                         paper symbol / statement
================================  ======================================================================
:func:`relu_kernel`               ``k_l(y, z)`` of Prop. 4, eq. 7 (atom ``0.5^N`` at ``z = 0`` + chi-square mixture)
:func:`kernel_masses`             ``k_l(y, .)`` on a grid, any activation (``p_{phi(h)^2}^{*N}`` by FFT, Prop. 1)
:func:`relu_eigenvalue`           ``lambda_{l,m}`` of Prop. 4, eq. 8, **derived** prefactor ``0.5^(N+m+1)``
:func:`relu_eigenvalue_printed`   eq. 8 as printed (prefactor ``0.5^(N-m-1)``); the curve of Fig. 1b
:func:`critical_exponents`        the ``m`` with ``lambda_m = 1`` (paper: ``m_crit ~ -3.256 - 1.621 N``)
:func:`quasi_stationary_exponent` the ``m`` of the discretised operator's positive eigenvector ``~ y^m``
:func:`discretize_operator`       ``T_l`` on a grid (Sec. 2.2: "approximated numerically ... FFT")
:func:`propagate_distribution`    ``p_L = prod_l T_l p_0`` (Fig. 1a)
:func:`expected_squared_norm`     Cor. 3, eqs. 5-6 (:func:`log_expected_squared_norm` at any depth)
:func:`preactivation_covariance`  Prop. 2, eq. 4
:func:`orthant_probability`       ``g(rho)`` of Thm. 5
:func:`relu_correlation`          ``Cor(x1, x2)`` of Thm. 5
:func:`mean_inner_product`        eq. 9 (eq. 10 is its linear interpolation, see Notes there)
:func:`relu_product_density`      the K0 part of ``f_prod`` in Thm. 5
:func:`inner_product_law`         ``f_prod^{*N}``, the law of ``<x1, x2>`` given the previous layer
:func:`cosine_similarity_samples` the Fig. 2 law: iid bivariate normal components (Prop. 2), ReLU, cosine
:func:`gram_chain_samples`        joint law of ``(|x1|^2, |x2|^2, <x1, x2>)`` through L layers (Prop. 2 iterated)
:func:`cosine_law_over_depth`     the cosine's law at every depth + the mean-field cosine ("signals become parallel")
:func:`component_cdf`             eq. 2 (right-continuous inverse: **corrected** at atoms)
:func:`joint_component_cdf`       eq. 3
:func:`gsm_product_moments`       Fuss-Catalan moments of the GSM product's squared singular values (Sec. 3)
:func:`gsm_product_density`       the Fuss-Catalan density (Neuschel's parametrisation)
:func:`gsm_second_moment`         exact finite-n second moment of the GSM product spectrum
================================  ======================================================================

:func:`cosine_similarity_samples` is a sampler in the theory layer on purpose: it draws the
theory's conditional law (Prop. 2: given the previous layer the components are iid), which has no
closed form, and simulates no network; random networks live in :mod:`meanfield.validation`.

Numerical range. Widths and fan-ins run up to ``MAX_WIDTH`` (10^7). Quantities that leave float64
at depth 10^4 or width 10^5 are carried on a log scale (:func:`log_expected_squared_norm`,
:func:`relu_log_eigenvalue`, ``TransitionKernel.log_atom`` / ``log_density``,
``relu_product_density(..., log=True)``). Their linear versions :func:`expected_squared_norm`,
:func:`relu_eigenvalue` and ``relu_product_density(..., log=False)`` raise ``ValueError``
naming the log-scale one instead of returning 0 or inf; ``TransitionKernel.atom`` and
``density`` instead are correctly rounded, 0.0 where they underflow (below 5e-324; use
``log_atom`` / ``log_density`` there). Grid masses are probabilities with absolute accuracy ~1e-15;
those below the smallest normal float64 are 0. Bools, complex numbers and strings where real
numbers are expected raise ``TypeError``; integer arguments (widths, fan-ins, depths, sample
counts) that are bools, strings or non-integral floats raise ``ValueError`` ("must be an
integer"), complex ones ``TypeError`` (the moment orders ``k`` of :func:`gsm_product_moments`:
``TypeError`` for any non-integer); absurd sizes (more than 2^29 numbers) raise ``ValueError``.

Where the printed paper and the derivation differ (each verified numerically by the tests):

* Prop. 1 prints ``h_y ~ N(0, sigma_w^2 y^2 + sigma_b^2)``; with ``y = |x|^2`` the variance is
  ``sigma_w^2 y + sigma_b^2`` (as in the paper's eq. 2), which is what is implemented.

* eq. 8: the eigenvalue of ``y^m`` is
  ``0.5^(N+m+1) sigma_w^-(2m+2) sum_{k=1}^N C(N,k) Gamma(k/2-m-1) / Gamma(k/2)``, valid for
  ``m < -1/2`` (the ``k = 1`` moment ``E chi_1^{2(-m-1)}`` exists only there); the printed
  prefactor ``0.5^(N-m-1)`` differs by the factor ``4^(m+1)``.
* With He (``sigma_w2 = 2``, square layers) the derived eigenvalue equals 1 exactly at ``m = -2``
  (mean preservation, Cor. 3) and at one ``m_+`` in ``(-1, -1/2)`` (``m_+ -> -1`` as ``N``
  grows); it is below 1 only on ``(-2, m_+)``. The paper's relation
  ``m_crit ~ -3.2559793 - 1.6207083 N`` is close to the lower root of the *printed* formula (see
  :func:`critical_exponents`).
* Thm. 5: ``Cor(x1, x2) <= rho`` holds on ``[0, 1]`` only; for ``rho < 0`` the correlation after
  ReLU is larger than ``rho`` (``Cor(-1) = -1 / (pi - 1)``).

References
----------
R. Burkholz and A. Dubatovka, "Initialization of ReLUs for Dynamical Isometry", NeurIPS 2019.
"""

from __future__ import annotations

from ._common import MAX_WIDTH as MAX_WIDTH
from ._correlation import *  # noqa: F403
from ._correlation import __all__ as _correlation_all
from ._eigen import *  # noqa: F403
from ._eigen import __all__ as _eigen_all
from ._joint import *  # noqa: F403
from ._joint import __all__ as _joint_all
from ._kernel import *  # noqa: F403
from ._kernel import __all__ as _kernel_all
from ._laws import *  # noqa: F403
from ._laws import __all__ as _laws_all
from ._layer import *  # noqa: F403
from ._layer import __all__ as _layer_all
from ._norms import *  # noqa: F403
from ._norms import __all__ as _norms_all
from ._operator import *  # noqa: F403
from ._operator import __all__ as _operator_all

__all__ = sorted(
    ["MAX_WIDTH"]
    + list(_kernel_all)
    + list(_eigen_all)
    + list(_layer_all)
    + list(_operator_all)
    + list(_norms_all)
    + list(_correlation_all)
    + list(_joint_all)
    + list(_laws_all)
)
