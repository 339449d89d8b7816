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
spectral universality in deep networks", AISTATS. Xiao et al. (2018), Xiao et al. 2018, Sec. 2.2.1 and
supplement E.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from . import dense
from ._checks import as_real_array, check_int, check_nonnegative_scalar, check_scalar
from ._results import Result
from .activations import asymptote_activation, get_activation
from .gaussian import expectation

if TYPE_CHECKING:  # annotations only
    from .activations import Activation

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

#: Atoms (a uniform grid of z on [-Z_RANGE, Z_RANGE], normal-density weights: the trapezoid rule,
#: spectrally accurate for smooth phi') representing the law of phi'(sqrt(q) z)^2.
DEFAULT_ATOMS = 6000
Z_RANGE = 8.5
#: Weight laws of :func:`jacobian_spectrum`.
WEIGHT_LAWS = ("gaussian", "orthogonal")
#: Kernel laws of :func:`conv_jacobian_spectrum` and the dense weight law each maps to.
CONV_KERNELS = {"gaussian": "gaussian", "orthogonal": "orthogonal", "delta_orthogonal": "orthogonal"}
#: The support's upper edge is the largest lambda where the density exceeds EDGE_FACTOR times the
#: Cauchy tail eta / (pi lambda) that the broadening leaves above the support.
EDGE_FACTOR = 1.5
#: The returned grid ends EDGE_MARGIN (relative) above the located edge.
EDGE_MARGIN = 0.05
#: Mass below the support the solver may leave out when its continuation stops (below the lower
#: edge of a spectrum bounded away from 0 the true density is 0).
LOW_MASS_TOL = 0.01
#: The first pass trims the grid from below only if its broadening moves at most this much mass.
MAX_TRIM_LEAK = 0.1
#: Variance standing for the limit q -> 0+ in :func:`derivative_law`.
Q_ZERO = 1e-300
#: Largest depth accepted (the solver's cost is linear in nothing but the grid; the bound keeps
#: (sigma_w2 max phi'^2)^L and its logarithm well inside float64).
MAX_DEPTH = 100_000
#: Most grid points.
MAX_POINTS = 200_000
#: Newton iterations per grid point before the step is halved, and most halvings.
_NEWTON_ITERS = 40
_MAX_HALVINGS = 30
#: Halvings of a grid step after which the point is reached by a vertical path instead.
_VERTICAL_AFTER = 6
_NEWTON_RTOL = 1e-12
#: The accuracy check of :func:`jacobian_spectrum`: largest relative distance of the eta-extrapolated
#: mean from chi_1^L, and largest amount by which the extrapolated mass (plus the atom at 0) may
#: exceed 1 or fall short of 1 beyond what the grid can miss below its first point.
MEAN_RTOL = 0.02
MASS_TOL = 0.02
#: The moments are integrated up to (1 + MOMENT_REACH * eta) times the grid's top.
MOMENT_REACH = 20.0
#: What :func:`jacobian_spectrum` does when the check fails (``accuracy`` argument).
ACCURACY_MODES = ("warn", "raise", "ignore")


class SpectrumAccuracyWarning(UserWarning):
    """The numerical spectrum misses its own first-moment or mass check (see :func:`jacobian_spectrum`)."""


class SpectrumAccuracyError(ValueError):
    """The numerical spectrum misses its own first-moment or mass check; ``result`` holds the spectrum."""

    def __init__(self, message, result=None):
        super().__init__(message)
        self.result = result

    def __reduce__(self):  # keeps the result when pickled (processes, Dask workers)
        return type(self), (self.args[0] if self.args else "", self.result)


@dataclass(frozen=True)
class DerivativeLaw(Result):
    r"""The law of :math:`D^2 = \phi'(\sqrt{q} z)^2`, :math:`z \sim N(0,1)`, as weighted atoms.

    Attributes
    ----------
    values : ndarray, shape (n,)
        Atom locations (>= 0).
    weights : ndarray, shape (n,)
        Probabilities (>= 0, summing to 1).
    q : float
        The pre-activation variance.
    exact : bool
        True for an exact finite law (phi'^2 takes finitely many values), False for the quantile
        discretisation of a continuous law.
    """

    values: np.ndarray
    weights: np.ndarray
    q: float
    exact: bool

    def moment(self, k: int) -> float:
        r""":math:`\mu_k = \mathbb{E}\,\phi'^{2k}` of the atoms (``k >= 0`` an integer)."""
        k = check_int(k, "k", minimum=0, maximum=1000)
        return float(np.sum(self.weights * self.values**k))


def derivative_law(activation: str | Activation, q: float | None, n_atoms: int = DEFAULT_ATOMS) -> DerivativeLaw:
    r"""The law of :math:`\phi'(\sqrt{q}\,z)^2` for :math:`z \sim N(0, 1)` (the entries of :math:`D^2`).

    Parameters
    ----------
    activation : str or Activation
        Any activation the library knows (built-in or :meth:`Activation.from_functions`).
    q : float
        Pre-activation variance (>= 0, finite).
    n_atoms : int
        Grid points of z used for a continuous law (16 to 10^6).

    Returns
    -------
    DerivativeLaw
        Atoms and weights. When phi'^2 takes at most two distinct values on the quantile grid
        (relu, leaky_relu, hard_tanh, linear; any q for q = 0) the law is exact: two atoms whose
        weights reproduce the closed-form :math:`\mathbb{E}\phi'^2` of :func:`meanfield.gaussian.expectation`.

    Raises
    ------
    ValueError
        ``q`` negative or not finite; ``n_atoms`` out of range; phi' not finite.
    TypeError
        Complex, boolean or non-numeric arguments.

    Notes
    -----
    The trapezoid rule on [-8.5, 8.5] integrates smooth functions of :math:`D^2` against the normal
    density with an error decaying exponentially in n (plus the tail mass beyond 8.5, ~1e-17).
    """
    act = get_activation(activation)
    q = check_nonnegative_scalar(q, "q")
    n_atoms = check_int(n_atoms, "n_atoms", minimum=16, maximum=10**6)
    # q = 0: the limit q -> 0+ (phi'(0+-)^2 for kinks at 0, e.g. relu's fair Bernoulli law)
    q_eval = q if q > 0.0 else Q_ZERO
    z = np.linspace(-Z_RANGE, Z_RANGE, n_atoms)
    pz = np.exp(-0.5 * z * z)
    pz /= pz.sum()  # the trapezoid rule of the normal density (end weights ~1e-16: negligible)
    d = np.asarray(act.derivative(1)(math.sqrt(q_eval) * z), dtype=float) ** 2
    if not np.all(np.isfinite(d)):
        raise ValueError(f"phi' of {act.name} is not finite at variance q = {q!r}")
    distinct = np.unique(d)
    if distinct.size <= 2 and (distinct.size == 1 or distinct[1] - distinct[0] > 1e-12 * distinct[1]):
        if distinct.size == 1:
            return DerivativeLaw(values=distinct, weights=np.array([1.0]), q=q, exact=True)
        mean = float(expectation(act, q_eval, (1, 1)))  # closed form for the kinked built-ins
        p_high = min(max((mean - distinct[0]) / (distinct[1] - distinct[0]), 0.0), 1.0)
        return DerivativeLaw(values=distinct, weights=np.array([1.0 - p_high, p_high]), q=q, exact=True)
    return DerivativeLaw(values=np.ascontiguousarray(d), weights=pz, q=q, exact=False)


@dataclass(frozen=True)
class JacobianSpectrum(Result):
    r"""The singular-value density of a deep network's input-output Jacobian (see :mod:`meanfield.spectra`).

    Attributes
    ----------
    squared_singular_values : ndarray, shape (n,)
        The grid of :math:`\lambda` (increasing, geometric).
    density : ndarray, shape (n,)
        :math:`\rho(\lambda)`, density of the squared singular values (per unit :math:`\lambda`, >= 0).
    singular_values : ndarray, shape (n,)
        :math:`\sigma = \sqrt\lambda`.
    singular_value_density : ndarray, shape (n,)
        :math:`2\sigma\rho(\sigma^2)`, density of the singular values.
    mass : float
        :math:`\int\rho\,d\lambda` over the grid up to ``upper_edge`` (times 1 +
        :data:`EDGE_MARGIN`), Richardson-extrapolated to eta -> 0 from the density at eta and 2 eta:
        1 minus ``atom_at_zero`` minus the continuous mass below the grid's first point.
    mean : float
        :math:`\int\lambda\rho\,d\lambda` over the same range, extrapolated the same way
        (compare ``expected_mean``). The broadened density's own first moment is biased by about
        :math:`\eta\,\lambda_{max}/\pi` (the Cauchy tail integrated up to the edge), which is
        large against chi_1^L for a wide spectrum; that is why it is extrapolated.
    upper_edge : float
        The support's upper edge as located on the grid: the last point where the density exceeds
        :data:`EDGE_FACTOR` times the Cauchy tail the broadening leaves above the support.
    expected_mean : float
        :math:`\chi_1^L` (Xiao et al. 2018, Sec. 2.2.1), what ``mean`` converges to as eta -> 0.
    expected_variance : float
        :math:`\chi_1^{2L} L(\mu_2/\mu_1^2 - 1 + g)`, the variance of :math:`\lambda` (g = 1 Gaussian, 0 orthogonal).
    q : float
        Pre-activation variance at which :math:`D` is evaluated (q* unless given).
    chi_1 : float
        :math:`\sigma_w^2\mu_1`.
    depth : int
        :math:`L`.
    weights : str
        ``"gaussian"`` or ``"orthogonal"``.
    eta : float
        Relative broadening of the density.
    lower_cutoff : float
        0, or the lambda below which the density is set to 0: where the continuation cannot pass
        the poles of the discretised law of D^2 below the support (only allowed when less than
        :data:`LOW_MASS_TOL` of the mass can lie below it).
    grid_mass : float
        The broadened density's trapezoid mass over the same range (no extrapolation): what
        :meth:`cdf` and :meth:`quantile` count, so that the CDF reaches 1 at the top of the grid.
    grid_mean : float
        The broadened density's first moment (no extrapolation).
    atom_at_zero : float
        The atom of the law at 0: :math:`P(\phi'(u) = 0)` (the atom of a free product is the
        largest atom of its factors; the weights have none).
    mean_error : float
        Estimated error of ``mean`` (the size of the extrapolation step).
    """

    squared_singular_values: np.ndarray
    density: np.ndarray
    singular_values: np.ndarray
    singular_value_density: np.ndarray
    mass: float
    mean: float
    expected_mean: float
    expected_variance: float
    q: float
    chi_1: float
    depth: int
    weights: str
    eta: float
    upper_edge: float = math.inf
    lower_cutoff: float = 0.0
    grid_mass: float | None = None
    grid_mean: float | None = None
    atom_at_zero: float = 0.0
    mean_error: float = 0.0

    def __post_init__(self):
        if self.grid_mass is None:
            object.__setattr__(self, "grid_mass", self.mass)
        if self.grid_mean is None:
            object.__setattr__(self, "grid_mean", self.mean)

    def cdf(self, lam) -> np.ndarray:
        r"""Cumulative distribution :math:`P(\lambda' \le \lambda)` of the continuous part, plus the mass below the grid.

        Parameters
        ----------
        lam : array_like
            Squared singular values (finite, >= 0).

        Returns
        -------
        ndarray
            Values in [0, 1], non-decreasing; ``1 - grid_mass`` below the grid's first point.

        Notes
        -----
        ``1 - grid_mass`` counts everything the grid misses as lying below it, including the O(eta)
        Cauchy tails of the broadening above the support: the CDF is accurate to O(eta);
        :mod:`meanfield.validation.spectra` removes that term by Richardson extrapolation in eta
        (the same range at n and 2n points).
        """
        lam = as_real_array(lam, "lam")
        if np.any(lam < 0):
            raise ValueError("lam must be >= 0 (squared singular values)")
        cum = _cumulative(self.squared_singular_values, self.density)
        cum = (1.0 - self.grid_mass) + cum
        return np.clip(
            np.interp(lam, self.squared_singular_values, cum, left=1.0 - self.grid_mass, right=1.0), 0.0, 1.0
        )

    def quantile(self, p) -> np.ndarray:
        r"""The :math:`\lambda` at which :meth:`cdf` reaches ``p`` (``p`` in [0, 1]; 0 below the grid)."""
        p = as_real_array(p, "p")
        if np.any((p < 0) | (p > 1)):
            raise ValueError("p must lie in [0, 1]")
        cum = (1.0 - self.grid_mass) + _cumulative(self.squared_singular_values, self.density)
        cum = np.maximum.accumulate(np.clip(cum, 0.0, 1.0))
        out = np.interp(p, cum, self.squared_singular_values)
        return np.where(p < cum[0], 0.0, out)


def _cumulative(lam, rho):
    """Trapezoid cumulative integral of rho d(lambda) = rho lambda d(log lambda)."""
    f = rho * lam
    dl = np.diff(np.log(lam))
    return np.concatenate([[0.0], np.cumsum(0.5 * (f[1:] + f[:-1]) * dl)])


def _moments_upto(lam, rho, top):
    """Trapezoid (in log lambda) mass and first moment of rho over lam <= top, the last piece ending at top."""
    keep = lam <= top
    lk, rk = lam[keep], rho[keep]
    if lk[-1] < top < lam[-1]:  # close the last interval at exactly ``top`` (linear in log lambda)
        j = lk.size
        t = (math.log(top) - math.log(lam[j - 1])) / (math.log(lam[j]) - math.log(lam[j - 1]))
        r_top = (1.0 - t) * rho[j - 1] + t * rho[j]
        lk, rk = np.append(lk, top), np.append(rk, r_top)
    dl = np.diff(np.log(lk))
    f0, f1 = rk * lk, rk * lk * lk
    return float(np.sum(0.5 * (f0[1:] + f0[:-1]) * dl)), float(np.sum(0.5 * (f1[1:] + f1[:-1]) * dl))


def _psi(u, values, weights):
    """psi_{D^2}(u) = E d u / (1 - d u) and its derivative E d / (1 - d u)^2 (u complex, vector over atoms)."""
    r = 1.0 / (1.0 - values * u)
    wd = weights * values
    return u * np.dot(wd, r), np.dot(wd, r * r)


def _unwrap(logval, ref):
    """``logval`` plus the multiple of 2 pi i closest to ``ref`` (continuity of a logarithm's branch)."""
    k = np.round((ref.imag - logval.imag) / (2 * np.pi))
    return logval + 2j * np.pi * k


class _Solver:
    """Newton continuation of the S-transform equation along the grid (see the module notes)."""

    def __init__(self, values, weights, sigma_w2, depth, gaussian):
        self.d = values.astype(complex)
        self.p = weights
        self.log_s = math.log(sigma_w2)
        self.L = depth
        self.coef = depth * (0 if gaussian else 1) - 1
        self.mu1 = float(np.dot(weights, values))

    def residual(self, u, log_z, refs):
        m, dm = _psi(u, self.d, self.p)
        lu = _unwrap(np.log(u), refs[0])
        lm = _unwrap(np.log(m), refs[1])
        l1 = _unwrap(np.log1p(m), refs[2])
        f = self.L * (lu - self.log_s) - (self.L - 1) * lm + self.coef * l1 - log_z
        # the rounding floor of f: the sum of its terms' magnitudes times a few ulps
        self.floor = (
            64
            * np.finfo(float).eps
            * (self.L * (abs(lu) + abs(self.log_s)) + (self.L - 1) * abs(lm) + abs(self.coef * l1) + abs(log_z))
        )
        fp = self.L / u + (self.coef / (1.0 + m) - (self.L - 1) / m) * dm
        return f, fp, m, (lu, lm, l1)

    def newton(self, u0, log_z, refs):
        u = u0
        for _ in range(_NEWTON_ITERS):
            f, fp, m, logs = self.residual(u, log_z, refs)
            if not (np.isfinite(f) and np.isfinite(fp)) or fp == 0:
                return None
            if abs(f) <= self.floor:
                return u, m, logs
            step = f / fp
            # damping: never move u by more than half its modulus in one step
            limit = 0.5 * abs(u)
            if abs(step) > limit:
                step *= limit / abs(step)
            u = u - step
            if abs(step) <= _NEWTON_RTOL * abs(u):
                f, fp, m, logs = self.residual(u, log_z, refs)
                return u, m, logs
        return None


def _log_z(lam, eta):
    return -np.log(lam * complex(1.0, eta))


def _vertical(solver: _Solver, lam, eta, scale):
    """Solve at w = lam (1 + i eta) along the vertical path w = lam + i y, y from 1e3 (lam + scale)
    down to eta lam (the solution is analytic in the upper half-plane; the path stays away from the
    real-axis singularities of the discretised law). None on failure."""
    L = solver.L
    y_target = eta * lam
    log_y = math.log(1e3 * (lam + scale))

    def lz_of(ly):
        return -np.log(complex(lam, math.exp(ly)))

    lz = lz_of(log_y)
    log_u = lz + (L - 1) * math.log(solver.mu1) + L * solver.log_s
    u = np.exp(log_u)
    m0 = solver.mu1 * u
    sol = solver.newton(u, lz, (log_u, np.log(m0), np.log1p(m0)))
    if sol is None:
        return None
    u, m, refs = sol
    step = math.log(0.7)
    target = math.log(y_target)
    halvings = 0
    while log_y > target:
        nxt = max(log_y + step, target)
        sol = solver.newton(u, lz_of(nxt), refs)
        if sol is None:
            halvings += 1
            if halvings > _MAX_HALVINGS:
                return None
            step *= 0.5
            continue
        u, m, refs = sol
        log_y = nxt
        step = max(step * 1.5, math.log(0.5))
    return u, m, refs


def _solve_grid(solver: _Solver, grid_desc, eta, lam_start):
    """Solve along ``lam_start`` (far above the support) then ``grid_desc`` (decreasing); returns m on the grid."""
    # the asymptotic start: m ~ mu1 u, u ~ z s^L mu1^(L-1) (both weight laws)
    lz = _log_z(lam_start, eta)
    L = solver.L
    if solver.mu1 > 0:
        log_u = lz + (L - 1) * math.log(solver.mu1) + L * solver.log_s
    else:  # phi' = 0 almost surely: nothing propagates; handled by the caller
        raise ValueError("the law of phi'^2 is a point mass at 0")
    u = np.exp(log_u)
    m0 = solver.mu1 * u
    refs = (log_u, np.log(m0), np.log1p(m0))
    sol = solver.newton(u, lz, refs)
    if sol is None:
        raise ValueError(
            "the spectrum solver did not converge at the starting point at these sigma_w2, sigma_b2, depth "
            "(variances this extreme put the spectrum outside the solver's float64 range)"
        )
    u, m, refs = sol
    prev_log_lam = math.log(lam_start)
    out = np.zeros(grid_desc.size, dtype=complex)  # unsolved points (below a stop) stay 0
    for i, lam in enumerate(grid_desc):
        target = math.log(lam)
        # step from prev_log_lam to target, halving on failure
        pieces = [target]
        cur = prev_log_lam
        halvings = 0
        while pieces:
            nxt = pieces[-1]
            lz = _log_z(math.exp(nxt), eta)
            # linear extrapolation of u in log lambda is not needed: previous u is a good guess
            sol = solver.newton(u, lz, refs)
            ok = sol is not None
            if ok:
                g = (1.0 + sol[1]) * np.exp(lz)
                ok = g.imag <= 1e-9 * abs(g)  # density >= 0: the physical branch
            if ok:
                u, m, refs = sol
                cur = nxt
                pieces.pop()
            else:
                halvings += 1
                if halvings == _VERTICAL_AFTER:  # detour: reach the target vertically from far above
                    sol = _vertical(solver, lam, eta, lam_start)
                    if sol is not None:
                        u, m, refs = sol
                        pieces = []
                        break
                if halvings > _MAX_HALVINGS:
                    return out, i
                pieces.append(0.5 * (cur + nxt))
        prev_log_lam = target
        out[i] = m
    return out, grid_desc.size


def _density(solver: _Solver, grid, eta, check_mass=True):
    """-Im G / pi on the increasing ``grid``, continued from far above it."""
    log_top = math.log(grid[-1])
    start = math.exp(log_top + math.log(1e3))
    approach = np.exp(np.linspace(math.log(start), log_top, 40))[1:-1]
    m_all, reached = _solve_grid(solver, np.concatenate([approach, grid[::-1]]), eta, start)
    reached -= approach.size  # grid points solved, counted from the top
    if reached < 2:
        raise ValueError(f"the spectrum solver did not converge near lambda = {grid[-1]:.3g} (try a larger eta)")
    m = m_all[approach.size :][::-1]
    g = (1.0 + m) / (grid * complex(1.0, eta))
    rho = np.maximum(-g.imag / np.pi, 0.0)
    first = grid.size - reached  # lowest solved index
    if first > 0:
        solved = float(_cumulative(grid[first:], rho[first:])[-1])
        # the Cauchy broadening moves about eta / pi per e-fold of the grid out of the solved part
        leak = eta / math.pi * math.log(grid[-1] / grid[first])
        if check_mass and solved < 1.0 - LOW_MASS_TOL - leak:
            raise ValueError(
                f"the spectrum solver did not converge near lambda = {grid[first - 1]:.3g} with only "
                f"{solved:.3f} of the mass above it (try a larger eta or fewer atoms)"
            )
        rho[:first] = 0.0
    return rho, grid[first]


def _support_bound(law: DerivativeLaw, sigma_w2, depth, gaussian):
    """log of an upper bound of the squared singular values: (sigma_w2 max d)^L, times the upper edge
    (L+1)^(L+1) / L^L of the product of L unit Wishart matrices (Fuss-Catalan) for Gaussian weights:
    J_L J_L^T <= max(d) W_L (J_{L-1} J_{L-1}^T) W_L^T in the operator order."""
    top = float(np.max(law.values))
    fc = (depth + 1) * math.log(depth + 1) - depth * math.log(depth) if gaussian else 0.0
    return depth * (math.log(sigma_w2) + math.log(top)) + fc


def _check_weights(weights, allowed, name="weights"):
    if not isinstance(weights, str):
        raise TypeError(f"{name} must be a str, one of {tuple(allowed)}, got {weights!r}")
    if weights not in allowed:
        raise ValueError(f"{name} must be one of {tuple(allowed)}, got {weights!r}")
    return weights


def jacobian_spectrum(
    activation: str | Activation,
    sigma_w2: float,
    sigma_b2: float,
    depth: int,
    weights: str = "orthogonal",
    *,
    q: float | None = None,
    n_points: int = 2000,
    decades: float = 8.0,
    lam_range: tuple[float, float] | None = None,
    eta: float | None = None,
    n_atoms: int = DEFAULT_ATOMS,
    accuracy: str = "warn",
) -> JacobianSpectrum:
    r"""Density of the squared singular values of a deep dense network's input-output Jacobian.

    Parameters
    ----------
    activation : str or Activation
        Any activation the library knows; a user-defined one needs ``q``.
    sigma_w2, sigma_b2 : float
        Weight and bias variances (``sigma_w2 > 0``, ``sigma_b2 >= 0``, finite).
    depth : int
        Number of layers L (1 to :data:`MAX_DEPTH`).
    weights : {"orthogonal", "gaussian"}
        Scaled Haar-orthogonal weights (``W^T W = sigma_w2 I``) or i.i.d. ``N(0, sigma_w2 / N)``.
    q : float, optional
        Pre-activation variance at which D is evaluated; default the fixed point
        :func:`meanfield.dense.fixed_point` ``q_star`` (the relu-like asymptote when q* = inf).
    n_points : int
        Grid points (16 to :data:`MAX_POINTS`), geometric in lambda.
    decades : float
        Decades the first pass spans below the smaller of chi_1^L and the bound of the support,
        :math:`(\sigma_w^2 \max\phi'^2)^L` times :math:`(L+1)^{L+1}/L^L` (the edge of a product of L
        Wishart matrices) for Gaussian weights, times 1 + :data:`EDGE_MARGIN` (1 to 300).
        The returned grid is the part of that range where the first pass's density exceeds the
        Cauchy floor (plus two points each side).
    lam_range : (float, float), optional
        ``(lo, hi)``, ``0 < lo < hi``: the returned grid's range (no first pass).
    eta : float, optional
        Relative broadening (1e-6 to 0.5): the returned density is the true one convolved with a
        Cauchy kernel of half-width ``eta * lambda``. Default: twice the grid's step in log lambda
        (the finest broadening the grid resolves).
    n_atoms : int
        Atoms of the law of phi'^2 (see :func:`derivative_law`).
    accuracy : {"warn", "raise", "ignore"}
        What to do when the check fails: the eta-extrapolated ``mean`` must lie within
        :data:`MEAN_RTOL` of chi_1^L, and ``mass + atom_at_zero`` within :data:`MASS_TOL` of 1
        (less what the grid can miss below its first point). ``"warn"`` issues a
        :class:`SpectrumAccuracyWarning`, ``"raise"`` raises :class:`SpectrumAccuracyError`
        (carrying the result).

    Returns
    -------
    JacobianSpectrum
        Density on the grid, its (extrapolated) mass and mean, and the expected mean
        :math:`\chi_1^L` and variance.

    Raises
    ------
    ValueError
        Arguments out of range; ``sigma_w2 = 0`` or phi' = 0 almost surely (the Jacobian is 0);
        q* = inf for an activation without a relu-like asymptote; a solver failure (named).
    SpectrumAccuracyError
        ``accuracy="raise"`` and the check fails (a ValueError).
    TypeError
        Complex, boolean or non-numeric arguments; ``weights`` not a str.

    Warns
    -----
    SpectrumAccuracyWarning
        ``accuracy="warn"`` (the default) and the check fails.

    Notes
    -----
    Pennington et al. (2017), eqs. 5-8 and 15; Xiao et al. 2018, Sec. 2.2.1. See the module notes for the
    equation solved and the checks.

    Examples
    --------
    >>> s = jacobian_spectrum("linear", 1.0, 0.0, 1, "gaussian", n_points=200)
    >>> round(s.expected_mean, 6)
    1.0
    """
    act = get_activation(activation)
    sigma_w2 = check_nonnegative_scalar(sigma_w2, "sigma_w2")
    sigma_b2 = check_nonnegative_scalar(sigma_b2, "sigma_b2")
    if sigma_w2 == 0.0:
        raise ValueError("sigma_w2 must be > 0 (the Jacobian of a network with zero weights is 0)")
    depth = check_int(depth, "depth", minimum=1, maximum=MAX_DEPTH)
    weights = _check_weights(weights, WEIGHT_LAWS)
    accuracy = _check_weights(accuracy, ACCURACY_MODES, "accuracy")
    n_points = check_int(n_points, "n_points", minimum=16, maximum=MAX_POINTS)
    decades = check_scalar(decades, "decades")
    if not 1.0 <= decades <= 300.0:
        raise ValueError(f"decades must lie in [1, 300], got {decades}")
    if eta is not None:
        eta = check_scalar(eta, "eta")
        if not 1e-6 <= eta <= 0.5:
            raise ValueError(f"eta must lie in [1e-6, 0.5], got {eta}")
    if q is None:
        if not act.is_builtin:
            raise ValueError(f"q is required for the user-defined activation {act.name!r}")
        fp = dense.fixed_point(act, sigma_w2, sigma_b2)
        q = fp.q_star
        if math.isinf(q):
            try:  # the piecewise-linear asymptote scale * base of activations.asymptote: phi'^2 -> scale^2 base'^2
                scale, base = asymptote_activation(act)
            except ValueError:
                base = None
            if base is None or base.name == "linear" or base.param == -1.0:  # no asymptote, or phi'^2 -> constant
                raise ValueError(f"q* is infinite for activation {act.name} at these sigma_w2, sigma_b2")
            act = base
            q = 1.0
            sigma_w2 = sigma_w2 * scale**2
    else:
        q = check_nonnegative_scalar(q, "q")
    law = derivative_law(act, q, n_atoms)
    mu1, mu2 = law.moment(1), law.moment(2)
    if mu1 == 0.0:
        raise ValueError(
            f"phi'(u) = 0 almost surely for activation {act.name} at q = {q!r} (the fixed point of sigma_w2, "
            "sigma_b2, or the given q): the Jacobian is 0"
        )
    gaussian = weights == "gaussian"
    chi_1 = sigma_w2 * mu1
    if lam_range is None:
        log_hi = _support_bound(law, sigma_w2, depth, gaussian) + math.log(1.0 + EDGE_MARGIN)
        log_lo = min(log_hi, depth * math.log(chi_1)) - decades * math.log(10.0)
    else:
        lam_range = as_real_array(lam_range, "lam_range")
        if lam_range.shape != (2,) or not 0.0 < lam_range[0] < lam_range[1]:
            raise ValueError(f"lam_range must be (lo, hi) with 0 < lo < hi, got {lam_range!r}")
        log_lo, log_hi = (math.log(float(v)) for v in lam_range)
    if log_hi > 700 or log_lo < -700:
        raise ValueError(
            f"the grid spans lambda in [e^{log_lo:.0f}, e^{log_hi:.0f}], beyond float64 (reduce depth or decades)"
        )
    solver = _Solver(law.values, law.weights, sigma_w2, depth, gaussian)
    if lam_range is None:
        # pass 1 (half the points): where the density exceeds the Cauchy floor eta / (pi lambda)
        coarse = np.exp(np.linspace(log_lo, log_hi, max(n_points // 2, 16)))
        eta1 = min(2.0 * (log_hi - log_lo) / (coarse.size - 1), 0.5)
        rho1, stop1 = _density(solver, coarse, eta1, check_mass=False)
        inside = np.nonzero(rho1 > EDGE_FACTOR * eta1 / (np.pi * coarse))[0]
        if inside.size:
            log_hi = math.log(coarse[min(inside[-1] + 2, coarse.size - 1)])
            low = max(inside[0] - 2, 0)
            # trim below only where the first pass solved there and holds (nearly) all the mass above
            cum1 = _cumulative(coarse, rho1)
            leak = eta1 / math.pi * math.log(coarse[-1] / coarse[low])
            if stop1 <= coarse[low] and leak <= MAX_TRIM_LEAK and cum1[-1] - cum1[low] >= 1.0 - LOW_MASS_TOL - leak:
                log_lo = math.log(coarse[low])
    grid = np.exp(np.linspace(log_lo, log_hi, n_points))
    if eta is None:
        eta = min(max(2.0 * (log_hi - log_lo) / (n_points - 1), 1e-6), 0.5)
    rho, lower_cutoff = _density(solver, grid, eta)
    # the support's upper edge: above it the density is the Cauchy tail eta / (pi lambda (1 + eta^2))
    tail = eta / (np.pi * grid * (1.0 + eta * eta))
    inside = np.nonzero(rho > EDGE_FACTOR * tail)[0]
    edge = float(grid[min(inside[-1] + 1, grid.size - 1)]) if inside.size else float(grid[-1])
    lam = grid
    keep = lam <= edge * (1.0 + EDGE_MARGIN)
    grid_mass = float(_cumulative(lam[keep], rho[keep])[-1])
    lk, rk = lam[keep], rho[keep]
    grid_mean = float(np.sum(0.5 * (rk[1:] * lk[1:] ** 2 + rk[:-1] * lk[:-1] ** 2) * np.diff(np.log(lk))))
    expected_mean = math.exp(depth * math.log(chi_1)) if chi_1 > 0 else 0.0
    rel_var = depth * (mu2 / mu1**2 - 1.0 + (1.0 if gaussian else 0.0))
    expected_variance = expected_mean**2 * rel_var
    # eta -> 0: the broadened moments carry an O(eta) bias (the Cauchy tail, ~ eta lambda_max / pi for
    # the mean); Richardson from the density at 2 eta (half the points: the same resolution), both
    # integrated up to the same top, MOMENT_REACH * eta above the grid (a cut closer to the edge
    # makes the truncated tail nonlinear in eta)
    top = float(lk[-1]) * (1.0 + MOMENT_REACH * eta)
    grid2 = np.exp(np.linspace(log_lo, log_hi, max((n_points + 1) // 2, 16)))
    mass_eta, mean_eta = _extended_moments(solver, grid, rho, eta, top)
    try:
        rho2, _ = _density(solver, grid2, min(2.0 * eta, 1.0), check_mass=False)
        mass_2eta, mean_2eta = _extended_moments(solver, grid2, rho2, min(2.0 * eta, 1.0), top)
    except ValueError:  # the coarser solve failed: no extrapolation (the check below says so)
        mass_2eta, mean_2eta = math.nan, math.nan
    mass, mean = 2.0 * mass_eta - mass_2eta, 2.0 * mean_eta - mean_2eta
    mean_error = abs(mean_eta - mean_2eta)
    atom = float(np.sum(law.weights[law.values == 0.0]))
    sv = np.sqrt(lam)
    result = JacobianSpectrum(
        squared_singular_values=lam,
        density=rho,
        singular_values=sv,
        singular_value_density=2.0 * sv * rho,
        mass=mass,
        mean=mean,
        expected_mean=expected_mean,
        expected_variance=float(expected_variance),
        q=float(q),
        chi_1=float(chi_1),
        depth=depth,
        weights=weights,
        eta=eta,
        upper_edge=edge,
        lower_cutoff=float(lower_cutoff if lower_cutoff > grid[0] else 0.0),
        grid_mass=grid_mass,
        grid_mean=grid_mean,
        atom_at_zero=atom,
        mean_error=mean_error,
    )
    if accuracy != "ignore":
        problem = _accuracy_problem(result, rho2 if math.isfinite(mass_2eta) else None, grid2)
        if problem is not None:
            message = (
                f"jacobian_spectrum({act.name}, sigma_w2={sigma_w2:g}, sigma_b2={sigma_b2:g}, depth={depth}, "
                f"{weights}, n_points={n_points}): {problem} (raise n_points, lower eta, or widen decades)"
            )
            if accuracy == "raise":
                raise SpectrumAccuracyError(message, result)
            warnings.warn(message, SpectrumAccuracyWarning, stacklevel=2)
    return result


def _extended_moments(solver, grid, rho, eta, top):
    """Mass and first moment of the broadened density on ``grid`` continued (same step) up to ``top``."""
    step = math.log(grid[1] / grid[0])
    log_hi = math.log(grid[-1])
    k = max(math.ceil((math.log(top) - log_hi) / step), 1)
    ext = np.exp(np.linspace(log_hi, math.log(top), k + 1))[1:]
    rho_ext, _ = _density(solver, ext, eta, check_mass=False) if ext.size >= 2 else (np.zeros(ext.size), None)
    return _moments_upto(np.concatenate([grid, ext]), np.concatenate([rho, rho_ext]), top)


def _accuracy_problem(s: JacobianSpectrum, rho2, grid2):
    """None, or what fails in the check of the eta-extrapolated mass and mean against 1 and chi_1^L."""
    if not (math.isfinite(s.mass) and math.isfinite(s.mean)):
        return "the eta-extrapolation of the moments failed (the solver did not converge at 2 eta)"
    if abs(s.mean - s.expected_mean) > MEAN_RTOL * s.expected_mean:
        return (
            f"the eta-extrapolated mean {s.mean:.6g} is {abs(s.mean / s.expected_mean - 1):.1%} from "
            f"chi_1^L = {s.expected_mean:.6g} (allowed {MEAN_RTOL:.0%})"
        )
    total = s.mass + s.atom_at_zero
    # what the grid can miss below its first point: a density growing at most like lambda^(-L/(L+1))
    # (the hard edge of a product of L Wishart factors) holds at most (L + 1) lambda_0 rho(lambda_0)
    lam0 = float(s.squared_singular_values[0])
    rho0 = 2.0 * s.density[0] - float(np.interp(lam0, grid2, rho2)) if rho2 is not None else s.density[0]
    below = (s.depth + 1) * lam0 * max(float(rho0), 0.0)
    if total > 1.0 + MASS_TOL or total < 1.0 - MASS_TOL - below:
        return (
            f"the eta-extrapolated mass {s.mass:.4f} plus the atom at 0 ({s.atom_at_zero:.4f}) is {total:.4f}, "
            f"not 1 within {MASS_TOL:g} (+ at most {below:.3g} below the grid)"
        )
    return None


def conv_jacobian_spectrum(
    activation: str | Activation,
    sigma_w2: float,
    sigma_b2: float,
    depth: int,
    kernel: str = "delta_orthogonal",
    **options,
) -> JacobianSpectrum:
    r"""Singular-value density of the Jacobian of a deep periodic CNN (Xiao et al. 2018, Sec. 2.2.1).

    Parameters
    ----------
    activation, sigma_w2, sigma_b2, depth
        As :func:`jacobian_spectrum`.
    kernel : {"delta_orthogonal", "orthogonal", "gaussian"}
        Algorithm 2, Algorithm 1, or i.i.d. Gaussian kernels (eq. 2.2, any variance vector ``v``).
    **options
        ``q``, ``n_points``, ``decades``, ``eta``, ``n_atoms``, ``accuracy`` of :func:`jacobian_spectrum`.

    Returns
    -------
    JacobianSpectrum
        The dense law with orthogonal weights (orthogonal and delta-orthogonal kernels: the
        block-circulant matrix over/ ``sqrt(sigma_w2)`` is orthogonal) or Gaussian weights (i.i.d.
        kernels: Marchenko-Pastur in the many-channel limit, Xiao et al. 2018, supplement E). ``weights`` of
        the result names the dense law used.

    Raises
    ------
    ValueError, TypeError
        As :func:`jacobian_spectrum`; an unknown ``kernel``.

    Notes
    -----
    The CNN's fixed-point variance is the dense q* (Xiao et al. 2018, eq. 2.7: the diagonal of the CNN map is
    the dense q-map). The free-probability argument treats :math:`D^l` as free from the
    convolution matrices, which is exact for delta-orthogonal kernels (the Jacobian splits into n
    independent dense orthogonal blocks of width c) and a many-channel approximation otherwise;
    :mod:`meanfield.validation.spectra` measures it on finite CNNs.
    """
    kernel = _check_weights(kernel, CONV_KERNELS, "kernel")
    return jacobian_spectrum(activation, sigma_w2, sigma_b2, depth, CONV_KERNELS[kernel], **options)


@dataclass(frozen=True)
class SpectrumMoments(Result):
    r"""Mean and variance of the squared singular values (see :func:`spectrum_moments`).

    Attributes
    ----------
    mean : float
        :math:`\chi_1^L`.
    variance : float
        :math:`\chi_1^{2L} L (\mu_2/\mu_1^2 - 1 + g)`.
    """

    mean: float
    variance: float


def spectrum_moments(
    activation: str | Activation,
    sigma_w2: float,
    sigma_b2: float,
    depth: int,
    weights: str = "orthogonal",
    *,
    q: float | None = None,
) -> SpectrumMoments:
    r"""Mean and variance of the squared singular values from the S-transform series (no density).

    Parameters
    ----------
    activation, sigma_w2, sigma_b2, depth, weights, q
        As :func:`jacobian_spectrum`.

    Returns
    -------
    SpectrumMoments
        ``mean``, ``variance`` = :math:`(\chi_1^L,\ \chi_1^{2L} L (\mu_2/\mu_1^2 - 1 + g))`, with
        :math:`\mu_k = \mathbb{E}\phi'(\sqrt{q} z)^{2k}` by quadrature (Gauss-Hermite via
        :func:`meanfield.gaussian.expectation` for :math:`\mu_1`; :func:`derivative_law` for :math:`\mu_2`).

    Raises
    ------
    ValueError, TypeError
        As :func:`jacobian_spectrum`.

    Notes
    -----
    :math:`S(m) = \mu_1^{-1} + (\mu_1^2 - \mu_2)\mu_1^{-3} m + O(m^2)` for each factor; the product's
    first two coefficients give the two moments (Pennington et al. 2017, eq. 15).
    """
    act = get_activation(activation)
    sigma_w2 = check_nonnegative_scalar(sigma_w2, "sigma_w2")
    sigma_b2 = check_nonnegative_scalar(sigma_b2, "sigma_b2")
    depth = check_int(depth, "depth", minimum=1, maximum=MAX_DEPTH)
    weights = _check_weights(weights, WEIGHT_LAWS)
    if q is None:
        q = dense.fixed_point(act, sigma_w2, sigma_b2).q_star
        if math.isinf(q):  # the asymptote scale * base (activations.asymptote): phi'^2 -> scale^2 base'^2
            scale, act = asymptote_activation(act)
            q = 1.0
            sigma_w2 = sigma_w2 * scale**2
    q = check_nonnegative_scalar(q, "q")
    law = derivative_law(act, q)
    try:
        mu1 = float(expectation(act, q, (1, 1))) if act.is_builtin else law.moment(1)
    except ValueError as exc:
        raise ValueError(f"E phi'(u)^2 is not finite for activation {act.name!r} at q = {q!r}") from exc
    mu2 = law.moment(2)
    chi_1 = sigma_w2 * mu1
    log_mean = depth * math.log(chi_1) if chi_1 > 0 else -math.inf
    if log_mean > 700:
        raise ValueError(f"chi_1^L = e^{log_mean:.0f} exceeds the float64 range at these sigma_w2, depth")
    mean = math.exp(log_mean)
    g = 1.0 if weights == "gaussian" else 0.0
    variance = mean**2 * depth * (mu2 / mu1**2 - 1.0 + g) if mu1 > 0 else 0.0
    return SpectrumMoments(mean=mean, variance=float(variance))
