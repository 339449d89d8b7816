"""Depth scales and the linearised dynamics about the fixed point (Xiao et al. 2018, Sec. 2.2, eqs. 2.9-2.12, App. F;
private).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from .. import dense
from .._checks import as_real_array, check_correlation, check_int, check_nonnegative_scalar, check_scalar
from .._logscale import check_depth
from .._results import Result
from ..activations import get_activation
from ..gaussian import DEFAULT_DEGREE, pair_expectation
from ._averaging import CRITICAL_ATOL, KAPPA_STEP, MAX_COVARIANCE_POSITIONS, _average, _check_v, _resolve_shape
from ._forward import propagate
from ._fourier import cyclic_diagonal_modes, fourier_eigenvalues

if TYPE_CHECKING:  # annotations only
    from ..activations import Activation

# ----------------------------------------------------------------------------------------------
# Depth scales and linearised dynamics.


def _xi(x):
    # |chi| as in dense (chi_q < 0 for non-monotone q-maps such as cos, rbf)
    x = np.abs(np.asarray(x, dtype=np.float64))
    with np.errstate(divide="ignore"):
        xi = np.where(x < 1.0, -1.0 / np.log(np.where(x < 1.0, x, 0.5)), np.inf)
    return np.where(np.abs(x - 1.0) <= CRITICAL_ATOL, np.inf, xi)


@dataclass(frozen=True)
class ConvDepthScales(Result):
    """Per-Fourier-mode depth scales of a deep CNN (Xiao et al. 2018, eqs. 2.11-2.12).

    Attributes
    ----------
    lambda_ : ndarray of complex, shape ``shape``
        Eigenvalues of :math:`\\mathcal{A}_v\\star` per Fourier mode (:func:`fourier_eigenvalues`).
    xi_c : ndarray, shape ``shape``
        Off-diagonal depth scales ``-1 / log(chi_c |lambda|)``; inf where ``chi_c |lambda| >= 1``
        (no exponential convergence), 0 where ``lambda = 0``.
    xi_q : ndarray, shape ``shape``
        Diagonal depth scales ``-1 / log(|chi_q| |lambda|)``, same conventions (``chi_q < 0`` for
        non-monotone q-maps: cos, rbf, as in :class:`meanfield.dense.FixedPoint`).
    fixed_point : meanfield.dense.FixedPoint
        q*, c*, chi_1, chi_c, chi_q of the dense network (identical for the CNN, Sec. 2.1.4).
    """

    lambda_: np.ndarray
    xi_c: np.ndarray
    xi_q: np.ndarray
    fixed_point: dense.FixedPoint


def depth_scales(
    activation: str | Activation,
    sigma_w2: float,
    sigma_b2: float,
    v: ArrayLike,
    shape: int | tuple[int, ...] | None,
    degree: int = DEFAULT_DEGREE,
) -> ConvDepthScales:
    r"""Depth scales :math:`\xi_m = -1/\log(\chi_{c^*}|\lambda_m|)` of every Fourier mode (eqs. 2.9-2.12).

    The paper writes :math:`-1/\log(\chi_{c^*}\lambda)`; for a non-symmetric ``v`` the eigenvalue is
    complex (or negative for some symmetric ``v``) and the amplitude of the mode decays by
    :math:`|\chi\lambda|` per layer, so the modulus is used. The diagonal modes use
    :math:`\chi_{q^*}` in place of :math:`\chi_{c^*}`.

    Parameters
    ----------
    activation : str or Activation
    sigma_w2, sigma_b2 : float
        Weight and bias variances (>= 0).
    v : array_like
        Variance vector, shape (2k+1,) or (2k1+1, 2k2+1).
    shape : int or (int, int)
        Spatial shape.
    degree : int
        Gauss-Hermite degree for activations without closed forms.

    Returns
    -------
    ConvDepthScales
        ``xi_c``, ``xi_q`` of shape ``shape``; ``inf`` where ``chi |lambda| >= 1`` or within
        :data:`CRITICAL_ATOL` of 1 (no exponential convergence of that mode: e.g. every mode of a
        one-hot ``v`` at criticality, every mode with ``chi |lambda| > 1`` in the chaotic phase,
        where q* may be ``inf`` too, as for relu at ``sigma_w2 > 2``); 0 where ``lambda = 0`` or
        the chi is 0. These infinities are values, not errors; the chi's are those of
        :func:`meanfield.dense.fixed_point` (at q* = 0 ``chi_c`` is the c-map's slope 1, so the
        off-diagonal modes decay by the spatial averaging alone, ``|lambda_m|`` per layer).

    Raises
    ------
    ValueError
        Bad ``v`` or ``shape``; negative or non-finite variances; q* beyond the float64 range.
    TypeError
        Complex or boolean arguments; arrays for the variances.

    Examples
    --------
    >>> ds = depth_scales("relu", 2.0, 0.0, [0.0, 1.0, 0.0], 8)
    >>> bool(np.all(np.isinf(ds.xi_c)))
    True
    """
    lam = fourier_eigenvalues(v, shape)
    fp = dense.fixed_point(activation, sigma_w2, sigma_b2, degree)
    mod = np.abs(lam)
    with np.errstate(invalid="ignore"):  # chi = inf (exp at q* = inf): a mode with lambda = 0 still has xi = 0
        xi_c, xi_q = (_xi(np.where(mod == 0.0, 0.0, chi * mod)) for chi in (fp.chi_c, fp.chi_q))
    return ConvDepthScales(lambda_=lam, xi_c=xi_c, xi_q=xi_q, fixed_point=fp)


def _kappa(act, sigma_w2, q, c, degree):
    """kappa = sigma_w2 / 2 * E phi''(h1) phi(h2) at (q*, c*) (eq. S13) = sigma_w2 d/dq1 E phi(h1)phi(h2)."""
    if act.smooth:
        return 0.5 * sigma_w2 * float(pair_expectation(act, q, q, c, (2, 0), degree))
    # kinked: differentiate E phi(u1) phi(u2) in Var u1 at fixed Cov(u1, u2) = c q (central difference)
    h = KAPPA_STEP * max(q, 1e-300)
    vals = []
    for s in (+1.0, -1.0):
        q1 = q + s * h
        vals.append(float(pair_expectation(act, q1, q, min(1.0, c * q / math.sqrt(q1 * q)), (0, 0), degree)))
    return sigma_w2 * (vals[0] - vals[1]) / (2 * h)


@dataclass(frozen=True)
class LinearizedDecay(Result):
    """A perturbation of the CNN fixed point propagated by the linearised map (eqs. 2.9-2.11).

    Attributes
    ----------
    eps : ndarray, shape (depth + 1, P, P)
        :math:`\\epsilon^l`, index 0 being the input perturbation.
    modes : ndarray of complex, shape ``(depth + 1, *shape, *shape)``
        :func:`cyclic_diagonal_modes` of ``eps``: ``modes[l, d, m]`` is the Fourier amplitude ``m``
        of cyclic diagonal ``d`` (Fig. S4 plots ``abs(modes[:, 1, :])``).
    lambda_ : ndarray of complex, shape ``shape``
    chi_c, chi_q, kappa : float
        The Jacobian of the C-map at :math:`\\Sigma^*` (Lemma B.2).
    q_star, c_star : float
    """

    eps: np.ndarray
    modes: np.ndarray
    lambda_: np.ndarray
    chi_c: float
    chi_q: float
    kappa: float
    q_star: float
    c_star: float


def fixed_point_covariance(q_star: float, c_star: float, size: int) -> np.ndarray:
    """The spatially uniform fixed point :math:`\\Sigma^* = q^*(\\delta_{\\alpha\\alpha'} + (1 - \\delta_{\\alpha\\alpha'}) c^*)` (Xiao et al. 2018, eq. 2.6).

    Parameters
    ----------
    q_star : float
        Fixed-point variance ``q*`` (>= 0, finite), e.g. :attr:`meanfield.dense.FixedPoint.q_star`.
    c_star : float
        Fixed-point correlation ``c*`` in [-1, 1].
    size : int
        Number of positions P (``1 <= P <= MAX_COVARIANCE_POSITIONS``).

    Returns
    -------
    ndarray, shape (size, size)

    Raises
    ------
    ValueError
        ``q_star`` negative or not finite, ``|c_star| > 1``, ``size`` out of range.
    """
    q_star = check_nonnegative_scalar(q_star, "q_star")
    c_star = check_correlation(check_scalar(c_star, "c_star"), "c_star")
    size = check_int(size, "size", 1, MAX_COVARIANCE_POSITIONS)
    return q_star * (c_star + (1.0 - c_star) * np.eye(size))


def linearized_decay(
    eps0: ArrayLike,
    activation: str | Activation,
    sigma_w2: float,
    sigma_b2: float,
    v: ArrayLike,
    depth: int,
    shape: int | tuple[int, ...] | None = None,
    degree: int = DEFAULT_DEGREE,
) -> LinearizedDecay:
    r"""Perturbation :math:`\epsilon^l = \Sigma^* - \Sigma^l` predicted layer by layer by the linearised map (eq. 2.9).

    .. math:: \epsilon^{l+1} = \mathcal{A}_v\star J(\epsilon^l), \quad
        J(\epsilon)_{\alpha\alpha} = \chi_{q^*}\epsilon_{\alpha\alpha}, \quad
        J(\epsilon)_{\alpha\alpha'} = \chi_{c^*}\epsilon_{\alpha\alpha'} + \kappa(\epsilon_{\alpha\alpha} + \epsilon_{\alpha'\alpha'})

    (Lemma B.2 of the supplement, the Jacobian of the C-map at the fixed point). In Fourier space
    the off-diagonal modes obey eq. 2.11: ``modes[l, d, m] = (chi_c lambda_m)^l modes[0, d, m]``
    for ``d != 0`` when ``eps0`` has a zero diagonal (the Fig. S4 set-up).

    Parameters
    ----------
    eps0 : array_like, shape (P, P)
        Symmetric perturbation at layer 0.
    activation, sigma_w2, sigma_b2, v, shape, degree
        As in :func:`covariance_map`; the fixed point must be finite (q* < inf).
    depth : int
        Layers (>= 0).

    Returns
    -------
    LinearizedDecay
        ``chi_c`` is the off-diagonal factor used: the fixed point's chi_c, or chi_1 at q* = 0
        (where :math:`C(\Sigma) \approx \sigma_w^2\phi'(0)^2\Sigma`).

    Raises
    ------
    ValueError
        Bad arguments; q* infinite; q* = 0 with relu or leaky_relu of slope != 1, the only
        activations refused there (their positively homogeneous C-map is not differentiable at
        Sigma* = 0); any other activation, abs included, gets ``chi_c = chi_1`` at q* = 0.
    TypeError
        Complex or boolean arguments.
    """
    act = get_activation(activation)
    v = _check_v(v)
    eps0 = as_real_array(eps0, "eps0")
    if eps0.ndim != 2 or eps0.shape[0] != eps0.shape[1]:
        raise ValueError(f"eps0 must be a (P, P) matrix, got shape {eps0.shape}")
    if not np.allclose(eps0, eps0.T, rtol=1e-12, atol=1e-14):
        raise ValueError("eps0 must be symmetric")
    shape = _resolve_shape(v, shape, eps0.shape[0])
    depth = check_depth(depth, eps0.shape[0])
    fp = dense.fixed_point(act, sigma_w2, sigma_b2, degree)
    if not math.isfinite(fp.q_star):
        raise ValueError(
            "the fixed point q* is infinite at these parameters (activation, sigma_w2, sigma_b2): no linearisation exists"
        )
    if fp.q_star > 0:
        kappa = _kappa(act, sigma_w2, fp.q_star, fp.c_star, degree)
        chi_c = fp.chi_c
    else:
        # Sigma* = 0: C(Sigma) = sigma_w2 phi'(0)^2 Sigma + O(Sigma^2) for smooth phi with phi(0) = 0,
        # so every entry of a perturbation scales by chi_1 (the c-map slope 1 is a statement about
        # ratios). relu and leaky relu are homogeneous, not differentiable at 0.
        if act.is_builtin and act.code in (dense.RELU, dense.LEAKY_RELU) and act.param != 1.0:
            raise ValueError(
                f"q* = 0: the C-map of the positively homogeneous {act.name} is not differentiable at "
                "Sigma* = 0, so no linearisation exists (add a bias, sigma_b2 > 0)"
            )
        kappa = 0.0
        chi_c = fp.chi_1
    eps = np.empty((depth + 1,) + eps0.shape)
    eps[0] = eps0
    for layer in range(1, depth + 1):
        e = eps[layer - 1]
        diag = np.diag(e)
        j = chi_c * e + kappa * (diag[:, None] + diag[None, :])
        np.fill_diagonal(j, fp.chi_q * diag)
        eps[layer] = _average(j, v, shape, +1)
    return LinearizedDecay(
        eps=eps,
        modes=cyclic_diagonal_modes(eps, shape),
        lambda_=fourier_eigenvalues(v, shape),
        chi_c=chi_c,
        chi_q=fp.chi_q,
        kappa=kappa,
        q_star=fp.q_star,
        c_star=fp.c_star,
    )


# ----------------------------------------------------------------------------------------------
# The perturbation experiment of Xiao et al. 2018, App. F (Fig. S4).


def fig_s4_setup() -> dict:
    """The Fig. S4 experiment of Xiao et al. 2018 (App. F): parameters, Sigma^*, eps^0.

    A perturbation ``eps^0`` of the fixed-point covariance ``Sigma^*`` of erf CNNs whose Fourier
    modes decay with depth as the linearised map (eq. 2.9; modes: eq. 2.11) predicts.

    Returns
    -------
    dict
        ``activation`` (``"erf"``), ``sigma_w2`` (= 1.5^2), ``sigma_b2`` (= 0.5^2), ``v``
        (``[0.025, 0.95, 0.025]``), ``n`` (10 positions), ``fixed_point`` (the dense fixed point),
        ``sigma_star`` (eq. 2.6) and ``eps0``: zero except the first cyclic diagonal
        ``eps0[a, a + 1] = eps0[a + 1, a] = d[a]``, whose DFT is
        ``-1/6 [1, r, r^3, r^5, r^4, r^2, r^4, r^5, r^3, r]`` with ``r = 2/3``.

    References
    ----------
    Xiao, Bahri, Sohl-Dickstein, Schoenholz, Pennington (2018), App. F and Fig. S4.
    """
    act, sw, sb, n = "erf", 1.5**2, 0.5**2, 10
    v = np.array([0.025, 0.95, 0.025])
    fp = dense.fixed_point(act, sw, sb)
    r = 2.0 / 3.0
    spectrum = -np.array([1, r, r**3, r**5, r**4, r**2, r**4, r**5, r**3, r]) / 6.0
    d = np.fft.ifft(spectrum).real  # the spectrum is real and symmetric: d is real
    eps0 = np.zeros((n, n))
    idx = np.arange(n)
    eps0[idx, (idx + 1) % n] = d
    eps0[(idx + 1) % n, idx] = d
    star = fixed_point_covariance(fp.q_star, fp.c_star, n)
    return {
        "activation": act,
        "sigma_w2": sw,
        "sigma_b2": sb,
        "v": v,
        "n": n,
        "sigma_star": star,
        "eps0": eps0,
        "fixed_point": fp,
    }


def fig_s4_theory(depth: int) -> tuple[np.ndarray, np.ndarray]:
    """(exact map, linearised map) Fourier amplitudes of the first cyclic diagonal, each (depth + 1, n).

    Parameters
    ----------
    depth : int
        Layers (>= 0) of the experiment of :func:`fig_s4_setup`.

    Returns
    -------
    exact, linearised : ndarray of complex, shape (depth + 1, n)
        The modes of ``Sigma^* - propagate(Sigma^* - eps^0)`` (:func:`propagate`) and of the
        linearised decay of ``eps^0`` (:func:`linearized_decay`, eq. 2.9 of Xiao et al. 2018;
        modes: eq. 2.11).
    """
    s = fig_s4_setup()
    args = (s["activation"], s["sigma_w2"], s["sigma_b2"], s["v"], depth)
    exact = s["sigma_star"][None] - propagate(s["sigma_star"] - s["eps0"], *args)
    lin = linearized_decay(s["eps0"], *args)
    return cyclic_diagonal_modes(exact)[:, 1, :], lin.modes[:, 1, :]
