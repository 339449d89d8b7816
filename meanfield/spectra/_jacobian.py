"""Jacobian singular-value spectra of dense and convolutional networks and their moments (Xiao et al. 2018, Sec. 2.2.1
and supplement E; private).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .._checks import as_real_array, check_int, check_nonnegative_scalar, check_scalar
from .._results import Result
from ..activations import asymptote_activation, get_activation
from ..dense._phases import _q_star_chi_1  # fixed_point's q* without the c-map (a lighter first call)
from ..gaussian import expectation
from ._laws import (
    ACCURACY_MODES,
    CONV_KERNELS,
    DEFAULT_ATOMS,
    EDGE_FACTOR,
    EDGE_MARGIN,
    LOW_MASS_TOL,
    MASS_TOL,
    MAX_DEPTH,
    MAX_POINTS,
    MAX_TRIM_LEAK,
    MEAN_RTOL,
    MOMENT_REACH,
    WEIGHT_LAWS,
    JacobianSpectrum,
    SpectrumAccuracyError,
    SpectrumAccuracyWarning,
    _cumulative,
    derivative_law,
)
from ._solver import _check_weights, _density, _moments_upto, _Solver, _support_bound

if TYPE_CHECKING:  # annotations only
    from ..activations import Activation


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
        q* = inf unless phi's asymptote at large ``|u|`` is relu-like, ``scale * base`` with ``base`` relu
        or leaky_relu of slope != -1 (refused: no piecewise-linear asymptote, e.g. exp; linear or
        abs, whose phi'^2 tends to a constant); a solver failure (named).
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
        q = _q_star_chi_1(act, sigma_w2, sigma_b2)[0]
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
    ValueError
        A variance, ``q`` or ``depth`` out of range, ``weights`` unknown; ``q`` not given and
        :func:`meanfield.dense.fixed_point` fails (e.g. a user-defined activation, which needs
        ``q``); q* = inf for an activation without a piecewise-linear asymptote (e.g. exp);
        :math:`\mathbb{E}\phi'^2` not finite (sign); :math:`\chi_1^L` beyond the float64 range.
        Unlike :func:`jacobian_spectrum` it does not refuse ``sigma_w2 = 0`` or phi' = 0 almost surely
        (``(0, 0)``) nor q* = inf for linear or abs (phi'^2 constant).
    TypeError
        Complex, boolean or non-numeric arguments; ``weights`` not a str.

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
        q = _q_star_chi_1(act, sigma_w2, sigma_b2)[0]
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
