"""Constants, the law of D^2 = phi'(h)^2 at the fixed point and the spectrum's result type (private)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .._checks import as_real_array, check_int, check_nonnegative_scalar
from .._results import Result
from ..activations import get_activation
from ..gaussian import expectation

if TYPE_CHECKING:  # annotations only
    from ..activations import Activation


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
        True for an exact finite law (phi'^2 takes one or two values), False for a continuous law
        discretised on the uniform z-grid ``np.linspace(-8.5, 8.5, n)`` with normal-density
        (trapezoid) weights.
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
        Atoms and weights. The law is exact (``exact`` True) when :math:`\phi'(\sqrt{q}z)^2` takes one
        value on the z-grid, or two differing by more than 1e-12 relative: one atom, or two whose
        weights reproduce the closed-form :math:`\mathbb{E}\phi'^2` of :func:`meanfield.gaussian.expectation`
        (linear, abs, sign, relu, leaky_relu, hard_tanh). q = 0 is evaluated at q = 1e-300 (the
        limit q -> 0+): exact where phi'^2 is constant near 0 to rounding (tanh) or kinked at 0
        (relu, selu), not otherwise (cos: phi'^2 = sin^2 takes n distinct tiny values).

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


def _cumulative(lam, rho):
    """Trapezoid cumulative integral of rho d(lambda) = rho lambda d(log lambda)."""
    f = rho * lam
    dl = np.diff(np.log(lam))
    return np.concatenate([[0.0], np.cumsum(0.5 * (f[1:] + f[:-1]) * dl)])


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
        :math:`\int\rho\,d\lambda` from the grid's first point up to (1 + :data:`MOMENT_REACH`
        eta) times the last grid point at or below ``upper_edge`` times (1 + :data:`EDGE_MARGIN`), the
        density solved on the grid's step beyond the grid where needed; Richardson-extrapolated to
        eta -> 0 from the density at eta and 2 eta: 1 minus ``atom_at_zero`` minus the continuous
        mass below the grid's first point.
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
        The broadened density's trapezoid mass over the grid up to ``upper_edge`` times (1 +
        :data:`EDGE_MARGIN`), no extrapolation: what
        :meth:`cdf` and :meth:`quantile` count, so that the CDF reaches 1 at the top of the grid.
    grid_mean : float
        The broadened density's first moment over the range of ``grid_mass`` (no extrapolation).
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
