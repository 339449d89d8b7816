r"""Closed-form Gaussian moments of sin, cos, abs, sign, exp, rbf, relu_power, gelu, elu, selu and erf(a x + b).

:math:`E_2^{(d_1, d_2)} = \mathbb{E}\,\phi^{(d_1)}(u_1)\,\phi^{(d_2)}(u_2)` for a centred bivariate
normal with variances ``q1, q2`` and correlation ``c`` (write :math:`s_i = \sqrt{q_i}`,
:math:`k = c s_1 s_2`), the single-variable moments (``q1 = q2 = q``, ``c = 1``) and the slope
:math:`\partial_q \mathbb{E}\,\phi(\sqrt q z)^2` that gives chi_q. The compiled scalar functions
(private modules of :mod:`meanfield.activations`) are called from :mod:`meanfield.gaussian` before any
quadrature; they return NaN where no closed form is implemented (order-2 moments where
phi'' has a Dirac part), and the caller integrates numerically.

=============  ===================================================================================
activation     closed form (derivation)
=============  ===================================================================================
sin, cos       :math:`\mathbb{E}\sin(u_1 + \alpha_1)\sin(u_2 + \alpha_2) = \tfrac12[e^{-(q_1 + q_2 - 2k)/2}
               \cos(\alpha_1 - \alpha_2) - e^{-(q_1 + q_2 + 2k)/2}\cos(\alpha_1 + \alpha_2)]` with
               :math:`\phi^{(d)}(x) = \sin(x + (d + \delta)\pi/2)` (δ = 0 for sin, 1 for cos)
abs            :math:`|x| = \mathrm{relu}(x) + \mathrm{relu}(-x)`: :math:`\tfrac{2 s_1 s_2}{\pi}(\sqrt{1 - c^2} +
               c \arcsin c)`; :math:`\mathbb{E}\,\mathrm{sign}\,\mathrm{sign} = \tfrac2\pi \arcsin c`
sign           :math:`\tfrac2\pi\arcsin c`; :math:`\phi' = 2\delta`: :math:`4 p(0, 0) = 2 / (\pi s_1 s_2 \sqrt{1 - c^2})`
exp            :math:`\exp((q_1 + q_2 + 2k)/2)` for every order
rbf            :math:`\phi = e^{-\gamma x^2}`: :math:`\det(I + 2\gamma\Sigma)^{-1/2}\,\mathbb{E}_{\tilde\Sigma}[P_{d_1} P_{d_2}]`,
               :math:`\tilde\Sigma = (\Sigma^{-1} + 2\gamma I)^{-1}`, :math:`P_0 = 1, P_1 = -2\gamma x,
               P_2 = 4\gamma^2 x^2 - 2\gamma`
relu_power     arc-cosine kernel of degree n (Cho & Saul 2009, eq. 3):
               :math:`\mathbb{E}\,\mathrm{relu}(u_1)^m \mathrm{relu}(u_2)^m = (s_1 s_2)^m J_m(\theta) / (2\pi)`,
               :math:`\theta = \arccos c`, :math:`\phi^{(d)} = \tfrac{n!}{(n - d)!}\,\mathrm{relu}^{n - d}`;
               mixed degrees by an exact angular integral
gelu           :math:`x\Phi(x)`: :math:`\tfrac{k}{4} + \tfrac{1}{2\pi}\big[\tfrac{k^2 + q_1 q_2 D^2}{A D} + k \arcsin(k/\sqrt A)\big]`,
               :math:`A = (1 + q_1)(1 + q_2)`, :math:`D^2 = A - k^2`; the (1, 1) moment is its
               derivative in k (Price's theorem). Orders (0, 1), (0, 2), (1, 2), (2, 2): each
               :math:`\varphi(u_i)` factor of :math:`\mathrm{gelu}' = \Phi + x\varphi`,
               :math:`\mathrm{gelu}'' = \varphi(x)(2 - x^2)` is a Gaussian tilt
               (:math:`\Sigma \to (\Sigma^{-1} + e_ie_i^\top)^{-1}`), :math:`\Phi(u) = P(\xi < u)`
               with an independent :math:`\xi`, the rest Stein's lemma:
               :math:`E_{01} = [q_1/\sqrt{1 + q_1} + k/\sqrt{1 + q_2} + k (1 + q_2)^{-3/2}] / (2\sqrt{2\pi})`,
               :math:`E_{12} = (1 - \tfrac{q_2}{2(1 + q_2)}) / \sqrt{2\pi(1 + q_2)}` (no c: gelu'' is even),
               :math:`E_{22} = [4 - 2\Sigma'_{11} - 2\Sigma'_{22} + \Sigma'_{11}\Sigma'_{22} + 2\Sigma'^2_{12}] /
               (2\pi \det(I + \Sigma)^{1/2})`, :math:`\Sigma' = \Sigma(I + \Sigma)^{-1}`, and
               :math:`E_{02}` likewise (``meanfield.activations._closed_extended._gelu_mixed``)
elu, selu      :math:`\phi^{(d)} = p_0 + p_1 x` (x > 0), :math:`e_0 e^x + c_0` (x <= 0). Single variable:
               :math:`\mathbb{E}\,e^{a u}1\{u < 0\} = e^{a^2 q/2}\Phi(-a\sqrt q) = \tfrac12\mathrm{erfcx}(a\sqrt{q/2})`,
               e.g. :math:`\mathbb{E}\,\phi^2 = \lambda^2[q/2 + \alpha^2(M_2 - 2M_1 + \tfrac12)]`,
               :math:`\partial_q \mathbb{E}\,\phi^2 = \lambda^2[\tfrac12 + \alpha^2(2M_2 - M_1)]`.
               Bivariate: the conditional moment :math:`\mathbb{E}[\phi^{(d_2)}(u_2) | u_1]` in
               exp/Phi form, then one smooth integral over :math:`u_1` split at the kink
               (graded Gauss-Legendre; ``meanfield.activations._closed_elu``) (the
               bivariate-normal-CDF / Owen's T form overflows as e^A Phi_2 at large q; this is finite
               up to q = 1e300)
=============  ===================================================================================

Every form is evaluated in a scaled way (ratios :math:`q_i / (1 + q_i)`, :math:`1 - c^2` kept
separate, exponents <= 0 for sin/cos) so that variances up to 1e300 give finite results wherever
the moment itself is finite (exp and relu_power moments overflow and the public wrappers raise
ValueError). ``tests/theory/test_closed_forms.py`` checks each against scipy's adaptive quadrature
(:data:`QUAD_RTOL`) and against Monte-Carlo.

:func:`erf_pair_expectation` gives :math:`\mathbb{E}\,\phi^{(d_1)}(u_1)\phi^{(d_2)}(u_2)` of the scaled
and shifted :math:`\phi(x) = \mathrm{erf}(a x + b)` (orders 0 and 1) through the bivariate normal
CDF (Owen's T function; computed in ``meanfield.activations._closed_erf``): the kernels' activations carry one parameter, so this two-parameter
family is offered as a function, not as a built-in activation.

References
----------
Cho & Saul (2009), "Kernel methods for deep learning" (arc-cosine kernels, J_n).
Williams (1997), "Computing with infinite networks" (erf). Price (1958) (derivative moments).
Hendrycks & Gimpel (2016) (gelu); Klambauer et al. (2017) (selu).
"""

from __future__ import annotations

from .activations._closed_erf import QUAD_RTOL, erf_pair_expectation

__all__ = ["QUAD_RTOL", "erf_pair_expectation"]
