"""Activation functions for mean-field computations.

An :class:`Activation` carries NumPy-vectorised ``phi``, ``dphi`` (phi') and ``d2phi`` (phi'').
Built-in activations are identified inside Numba kernels by an integer ``code`` dispatched by
the compiled (not inlined) :func:`evaluate` (never as a function argument, which would defeat ``cache=True``), and their
parameters (leaky_relu's ``slope``, hard_tanh's ``bound``, rbf's ``gamma``, relu_power's ``n``,
elu's ``alpha``) travel as a float. User-defined activations,
:meth:`Activation.from_functions`, take an uncached NumPy path through the quadrature.

Built-ins (``get_activation(name, **params)``):

============  ==========================================  ==============================
name          phi(x)                                      Gaussian moments
============  ==========================================  ==============================
linear        x                                           closed form
tanh          tanh(x)                                     quadrature
erf           erf(x)  (plain, not erf(sqrt(pi) x / 2))    closed form (arcsine kernel)
relu          max(x, 0)                                   closed form (arc-cosine kernel)
leaky_relu    max(x, 0) + slope * min(x, 0)               closed form (arc-cosine kernel)
hard_tanh     clip(x, -b, b)  (bound b > 0, default 1)     closed form (clipped Gaussian)
sigmoid       1 / (1 + exp(-x))                           quadrature
softplus      log(1 + exp(x))                             quadrature
swish         x * sigmoid(x)                              quadrature
gelu          x * Phi(x)  (exact, Phi the normal CDF)     closed form (orders <= 2)
sin, cos      sin(x), cos(x)                              closed form
abs           abs(x)                                      closed form (arc-cosine kernel)
sign          sign(x)                                     closed form (arcsine kernel) (*)
exp           exp(x)                                      closed form
rbf           exp(-gamma x^2)  (gamma > 0, default 1/2)   closed form
relu_power    max(x, 0)^n  (n = 2, 3, 4; default 2)       closed form (arc-cosine, degree n)
elu           x (x > 0), alpha (e^x - 1) (default 1)      closed form (exp / erfcx, Phi)
selu          lambda elu_alpha(x) (Klambauer et al.)      closed form (exp / erfcx, Phi)
============  ==========================================  ==============================

(*) sign' is the Dirac 2 delta(x): its first-derivative moments are the distributional ones,
E phi'(u1) phi'(u2) = 2 / (pi sqrt(q1 q2 (1 - c^2))), infinite at c = 1 (chi_1 = inf: sign
networks are maximally chaotic); ``dphi`` itself is 0 pointwise. Closed forms are in
:mod:`meanfield.closed_forms` (mixed derivative orders without a closed form use quadrature).

"quadrature" is Gauss-Hermite for small variances and trapezoid / graded Gauss-Legendre rules for
large ones (see :mod:`meanfield.gaussian`); every rule has a bounded number of nodes at any q.

Each built-in's behaviour far out and at 0 is described once, here: :func:`asymptote` gives the
slopes (a, b) of phi(x) ~ a x as x -> +inf, ~ b x as x -> -inf, from which the large-variance
limits follow (E phi^2 / q and E phi'^2 -> (a^2 + b^2) / 2: chi_1 at q* = inf), and
:func:`origin_slopes` the one-sided slopes at 0 (the q -> 0 limits of the activations kinked there).

User activations with kinks or jumps carry their ``breakpoints`` (found by
:func:`find_breakpoints` or given): their Gaussian expectations are integrated piecewise.

``phi''`` of relu, leaky_relu, hard_tanh, abs, sign, selu and elu with alpha != 1 has Dirac parts
that a pointwise ``d2phi`` cannot represent; :attr:`Activation.smooth` is False for them and the Gaussian engine refuses
expectations of their ``phi''`` (the chi's are computed from first derivatives instead).

The package keeps each activation once: ``_registry`` (codes, the compiled :func:`evaluate` of
phi and its derivatives, :class:`Activation`, :func:`get_activation`); the Gaussian moments in
closed form by family, ``_closed_core`` (linear, relu and leaky_relu through the arc-cosine kernel,
erf through the arcsine kernel, hard_tanh as a clipped Gaussian), ``_closed_extended`` (sin, cos,
abs, sign, exp, rbf, relu_power, gelu), ``_closed_elu`` (elu, selu) and ``_closed_erf`` (the scaled
and shifted erf of :mod:`meanfield.closed_forms`), dispatched by code in ``_closed``; and
``_quadrature`` (the Gauss-Hermite rules and the quadrature family each built-in's kernels
compile: closed forms, quadrature, or both).
"""

from ._registry import ABS as ABS
from ._registry import ACTIVATIONS, Activation, get_activation
from ._registry import BOUNDED as BOUNDED
from ._registry import BREAKPOINT_SCAN as BREAKPOINT_SCAN
from ._registry import BREAKPOINT_STEP as BREAKPOINT_STEP
from ._registry import COS as COS
from ._registry import CUSTOM as CUSTOM
from ._registry import ELU as ELU
from ._registry import ERF as ERF
from ._registry import EXP as EXP
from ._registry import GELU as GELU
from ._registry import HARD_TANH as HARD_TANH
from ._registry import HOMOGENEOUS as HOMOGENEOUS
from ._registry import LEAKY_RELU as LEAKY_RELU
from ._registry import LINEAR as LINEAR
from ._registry import MAX_BREAKPOINTS as MAX_BREAKPOINTS
from ._registry import RBF as RBF
from ._registry import RELU as RELU
from ._registry import RELU_LIKE as RELU_LIKE
from ._registry import RELU_POWER as RELU_POWER
from ._registry import RELU_POWER_MAX as RELU_POWER_MAX
from ._registry import SELU as SELU
from ._registry import SELU_ALPHA as SELU_ALPHA
from ._registry import SELU_LAMBDA as SELU_LAMBDA
from ._registry import SIGMOID as SIGMOID
from ._registry import SIGN as SIGN
from ._registry import SIN as SIN
from ._registry import SOFTPLUS as SOFTPLUS
from ._registry import SWISH as SWISH
from ._registry import TANH as TANH
from ._registry import asymptote as asymptote
from ._registry import asymptote_activation as asymptote_activation
from ._registry import asymptotic_derivative_moment as asymptotic_derivative_moment
from ._registry import asymptotic_slope as asymptotic_slope
from ._registry import asymptotic_slopes as asymptotic_slopes
from ._registry import bound_squared as bound_squared
from ._registry import call_user as call_user
from ._registry import evaluate as evaluate
from ._registry import evaluate_call as evaluate_call
from ._registry import find_breakpoints as find_breakpoints
from ._registry import origin_activation as origin_activation
from ._registry import origin_slopes as origin_slopes

__all__ = ["ACTIVATIONS", "Activation", "get_activation"]
