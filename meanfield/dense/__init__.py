r"""Mean-field theory of deep fully-connected networks.

Network convention: :math:`h^{l+1} = W^{l+1}\phi(h^l) + b^{l+1}`, :math:`W_{ij} \sim N(0, \sigma_w^2/N_l)`,
:math:`b_i \sim N(0, \sigma_b^2)`; ``sigma_w2`` and ``sigma_b2`` are the *squared* scales. For
D inputs the pre-activation covariance :math:`\Sigma^l \in \mathbb{R}^{D\times D}` evolves, in the
infinite-width limit, by the C-map (Poole et al. 2016, eqs. 3-5; Xiao et al. 2018, eqs. 2.5-2.6)

.. math:: \Sigma^{l+1}_{ab} = \sigma_w^2\, \mathbb{E}_{h \sim N(0, \Sigma^l)}\,\phi(h_a)\phi(h_b) + \sigma_b^2 .

Code name ↔ symbol: ``q`` = :math:`q^l = \Sigma^l_{aa}` (pre-activation variance), ``c`` =
:math:`c^l_{ab} = \Sigma^l_{ab}/\sqrt{q_a q_b}`, ``q_star``/``c_star`` = :math:`q^*, c^*`,
``chi_1`` = :math:`\chi_1 = \sigma_w^2 \mathbb{E}\,\phi'(\sqrt{q^*}z)^2`, ``chi_c`` =
:math:`\chi_{c^*} = \sigma_w^2 \mathbb{E}\,\phi'(u_1)\phi'(u_2)` at :math:`(q^*, c^*)` (the slope of
the c-map at c*), ``chi_q`` = :math:`\chi_{q^*} = \sigma_w^2\,\partial_q \mathbb{E}\phi(\sqrt q z)^2|_{q^*}`
(Xiao et al. 2018, eq. 2.7), ``xi_q``/``xi_c`` = :math:`\xi = -1/\log\chi` (Schoenholz et al. 2017, eqs. 6-9).

q*. The stable fixed point reached from small input variances: the smallest root of
:math:`g(q) = \mathrm{qmap}(q) - q` at which g changes sign from + to - (q = 0 itself when
:math:`\phi(0) = 0`, :math:`\sigma_b^2 = 0` and the slope :math:`\sigma_w^2\phi'(0)^2 < 1`). It is
found by scanning q geometrically (factor 2) from the lower bound qmap(0) with a check for a
dip of g between scan points, then safeguarded Newton. Divergence is decided by the
asymptotic slope of the q-map, :math:`\mathrm{qmap}(q)/q \to \sigma_w^2 m_\infty` with
:math:`m_\infty = \lim E\phi(\sqrt q z)^2/q = (a^2 + b^2)/2`, a and b the slopes of the
asymptote below (1/2 for relu, softplus, swish, gelu and elu, which differ from relu by a term
decaying at infinity; 0 for bounded activations): when
:math:`\sigma_w^2 m_\infty > 1` and g is still positive and increasing at q = Q_ASYMPTOTIC, q* is
infinite. Every loop has an iteration cap.

The edges. q* = inf (activations growing linearly, in the chaotic phase): the chi's are those
of the asymptote :math:`\phi(x) \sim a x` (x > 0), :math:`b x` (x < 0) of
:func:`meanfield.activations.asymptote` (:math:`\chi_1 = \chi_{c^*} = \sigma_w^2 (a^2 + b^2)/2`:
:math:`\sigma_w^2/2` for relu, softplus, swish, gelu and elu, :math:`\sigma_w^2\lambda^2/2`
for selu, :math:`\sigma_w^2` for abs; :math:`\chi_{q^*} = \sigma_w^2 m_\infty`), c* = 1, and
the c-map is the q-independent normalised map of the asymptote. q* = 0 (:math:`\sigma_b^2 = 0`, :math:`\phi(0) = 0`, ordered):
the c-map is the q -> 0 limit: q-independent (the normalised kernel map) for positively
homogeneous activations of degree 1, whose fixed point c* = 1 has slope 1 (correlations converge
to 1 only polynomially), the normalised map of the germ at 0 for an activation kinked there (abs,
elu with alpha != 1, selu: a leaky map), and the identity :math:`c \mapsto c` for smooth
activations (:math:`\phi(u) \approx \phi'(0) u`), whose correlations freeze at an
input-dependent value (``FixedPoint.c_frozen``). In these cases ``chi_c`` reports the c-map's
slope, 1, and ``xi_c = inf``; ``chi_1 = chi_q = sigma_w2 phi'(0)^2``. relu^n (``relu_power``,
positively homogeneous of degree n >= 2) is the exception: its q-independent map has the unstable
fixed point c = 1 (slope n^2 / (2n - 1)), and c* is its stable fixed point in (0, 1) with
``chi_c`` its slope there (0.380 and 0.709 for n = 2), reached exponentially; the same holds
at q* = inf, where its map is the same scale-free one.

c* is solved by Newton from c = 0 on the deflated residual, which converges monotonically
because the c-map is a power series in c with non-negative coefficients (Mehler expansion),
hence convex on [0, 1] with :math:`c^* \in [0, 1]`.

The package reads as the theory does: ``_maps`` (q-map, c-map, covariance maps), ``_solvers``
(the compiled q* and c* solvers), ``_phases`` (fixed points, depth scales, phase diagrams, the
critical sigma_w2), ``_propagation`` (covariances through depth), ``_backward`` (gradient variance).

References
----------
Poole, Lahiri, Raghu, Sohl-Dickstein, Ganguli (2016), "Exponential expressivity in deep neural
networks through transient chaos". Schoenholz, Gilmer, Ganguli, Sohl-Dickstein (2017), "Deep
information propagation". Xiao, Bahri, Sohl-Dickstein, Schoenholz, Pennington (2018), "Dynamical
isometry and a mean field theory of CNNs: how to train 10,000-layer vanilla convolutional neural
networks", Sec. 2.1 and App. B.
"""

from .._logscale import MAX_PROPAGATION_SIZE as MAX_PROPAGATION_SIZE
from .._logscale import Q_ASYMPTOTE_ABOVE as Q_ASYMPTOTE_ABOVE
from ..activations import LEAKY_RELU as LEAKY_RELU
from ..activations import RELU as RELU
from ._backward import backward_variance
from ._common import CRITICAL_ATOL as CRITICAL_ATOL
from ._common import Q_ASYMPTOTIC as Q_ASYMPTOTIC
from ._common import Q_INFINITY as Q_INFINITY
from ._common import Q_SCAN_MAX as Q_SCAN_MAX
from ._common import SOLVER_RTOL as SOLVER_RTOL
from ._maps import cmap, covariance_map, derivative_covariance_map, input_covariance, qmap
from ._phases import PHASE_ROWS_PER_TASK as PHASE_ROWS_PER_TASK
from ._phases import FixedPoint, PhaseDiagram, critical_sigma_w2, fixed_point, phase_diagram
from ._propagation import LogPropagation, propagate, propagate_log
from ._solvers import PHASE_BLOCKS_PER_THREAD as PHASE_BLOCKS_PER_THREAD

__all__ = [
    "FixedPoint",
    "LogPropagation",
    "PhaseDiagram",
    "backward_variance",
    "cmap",
    "covariance_map",
    "critical_sigma_w2",
    "derivative_covariance_map",
    "fixed_point",
    "input_covariance",
    "phase_diagram",
    "propagate",
    "propagate_log",
    "qmap",
]
