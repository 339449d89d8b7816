"""Decoupled mode strengths of deep linear networks: energy, gradient, Hessian, flow (Orhan 2017).

Private submodule of :mod:`meanfield.landscape`: Sec. 2.3.2, eqs. 19-23 and Supplementary Note 3
(eqs. 34-37) of Orhan (2017). One mode of a deep linear network with ``N_l - 1`` weight layers
has mode strengths ``a_1 .. a_{N_l-1}`` and target singular value ``s``; the plain (eq. 21),
residual and hyper-residual energies differ by the offsets ``c_l`` = 0, 1, ``l`` added to the
strengths (:func:`mode_offsets`), ``E = (s - prod_l (a_l + c_l))^2 / 2`` with ``tau = 1``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .._checks import as_float_array, check_scalar
from .._results import Result
from ._common import MAX_FLOW_DIMENSION, _check_architecture, _check_times, _check_tolerances, _int, _integrate

__all__ = [
    "ModeTrajectory",
    "mode_energy",
    "mode_flow",
    "mode_gradient",
    "mode_hessian",
    "mode_offsets",
    "mode_saddle",
]

#: Largest number of mode strengths (layers) of the mode-strength functions (the Hessian is N x N).
MAX_MODE_LAYERS = 4096

_MODE_ARCHITECTURES = ("plain", "residual", "hyper_residual")


def mode_offsets(architecture: str, n_weights: int) -> np.ndarray:
    """Constants added to the mode strengths: 0 (plain, eq. 21), 1 (residual), ``l`` (hyper-residual).

    The paper labels eq. 22 ``E_hyperres`` and eq. 23 ``E_res``; the text (and eqs. 6-7) make
    ``+1`` the residual and ``+l`` the hyper-residual energy, which is what this function returns.

    Parameters
    ----------
    architecture : {"plain", "residual", "hyper_residual"}
    n_weights : int
        Number of weight layers ``N_l - 1``, in [1, :data:`MAX_MODE_LAYERS`].

    Returns
    -------
    ndarray, shape (n_weights,)

    Raises
    ------
    ValueError
        Unknown architecture or ``n_weights`` out of range.
    TypeError
        ``architecture`` not a str.
    """
    _check_architecture(architecture, _MODE_ARCHITECTURES)
    n_weights = _int(n_weights, "n_weights", minimum=1, maximum=MAX_MODE_LAYERS)
    if architecture == "plain":
        return np.zeros(n_weights)
    if architecture == "residual":
        return np.ones(n_weights)
    return np.arange(1, n_weights + 1, dtype=np.float64)


def _mode_args(a, s, architecture, name="a"):
    _check_architecture(architecture, _MODE_ARCHITECTURES)
    a = as_float_array(a, name)
    if a.ndim != 1 or not 1 <= a.size <= MAX_MODE_LAYERS:
        raise ValueError(
            f"{name} must be a 1-D array of 1 to {MAX_MODE_LAYERS} (MAX_MODE_LAYERS) mode strengths "
            f"a_1..a_{{N_l-1}}, got shape {a.shape}"
        )
    s = check_scalar(s, "s")
    with np.errstate(over="ignore"):
        x = a + mode_offsets(architecture, a.size)
        finite = np.all(np.isfinite(x)) and np.isfinite(np.prod(np.abs(x)))
    if not finite:
        raise ValueError(
            f"prod_l |{name}_l + c_l| overflows double precision for these {a.size} mode strengths {name}; "
            "use fewer layers or smaller strengths"
        )
    return a, s, x


def _mode_overflow(what):
    return ValueError(
        f"{what} overflows double precision for these mode strengths and s (|s - prod_l (a_l + c_l)| "
        "too large); use a smaller s or smaller strengths"
    )


def mode_energy(a: ArrayLike, s: float, architecture: str = "plain") -> float:
    """``E = (s - prod_l (a_l + c_l))^2 / 2`` (eqs. 21-23 of Orhan 2017 with ``tau = 1``; ``c_l`` from :func:`mode_offsets`).

    Parameters
    ----------
    a : array_like, shape (N_l - 1,)
        Mode strengths ``a_l`` of one mode (1 to :data:`MAX_MODE_LAYERS` of them).
    s : float
        Its target singular value (a finite real number).
    architecture : {"plain", "residual", "hyper_residual"}

    Returns
    -------
    float
        Finite and >= 0.

    Raises
    ------
    ValueError
        Bad shapes, non-finite values, an ``a`` that does not convert to real numbers (e.g.
        non-numeric strings), unknown architecture, or a product or energy that overflows double
        precision (e.g. ``s = 1e300``: ``E = 5e599``).
    TypeError
        Complex ``a``; a complex, boolean or non-numeric ``s``; ``architecture`` not a str.
    """
    _, s, x = _mode_args(a, s, architecture)
    with np.errstate(over="ignore"):
        d = np.float64(s) - np.prod(x)
        e = 0.5 * d * d
    if not np.isfinite(e):
        raise _mode_overflow("the energy")
    return float(e)


def _prod_except(x):
    """``prod_{l != i} x_l`` for every ``i`` without dividing (exact at zeros)."""
    ones = np.ones(1)
    left = np.concatenate([ones, np.cumprod(x[:-1])])
    right = np.concatenate([np.cumprod(x[::-1][:-1])[::-1], ones])
    return left * right


def mode_gradient(a: ArrayLike, s: float, architecture: str = "plain") -> np.ndarray:
    """``dE/da_i = -(s - u) prod_{l != i}(a_l + c_l)`` (Supp. eq. 35 of Orhan 2017).

    Parameters and errors as :func:`mode_energy`; returns a finite array of shape (N_l - 1,).
    """
    _, s, x = _mode_args(a, s, architecture)
    with np.errstate(over="ignore", invalid="ignore"):
        g = -(np.float64(s) - np.prod(x)) * _prod_except(x)
    if not np.all(np.isfinite(g)):
        raise _mode_overflow("the gradient")
    return g


def mode_hessian(a: ArrayLike, s: float, architecture: str = "plain") -> np.ndarray:
    """Hessian of eqs. 21-23 (Supp. eqs. 36-37 of Orhan 2017).

    ``H_ii = (prod_{l != i} x_l)^2`` and ``H_ik = (2 u - s) prod_{l != i,k} x_l`` with
    ``x_l = a_l + c_l`` and ``u = prod_l x_l``; equivalently ``H = g g^T - (s - u) K`` with
    ``g_i = prod_{l != i} x_l`` and ``K_ik = prod_{l != i,k} x_l`` (``K_ii = 0``).

    Parameters and errors as :func:`mode_energy`; returns a finite symmetric array of shape
    (N_l - 1, N_l - 1), computed in O(N^2) without division (exact at zeros).

    Notes
    -----
    Supp. Note 3 states that the columns for ``a_i`` and ``a_j`` become identical when
    ``a_i = a_j``. They do not: on ``x_i = x_j`` the vector ``e_i - e_j`` is an eigenvector with
    eigenvalue ``(s - u) prod_{l != i,j} x_l``, which vanishes only on the solution manifold
    ``u = s`` or where another factor vanishes. For two weight layers
    ``det H = (s - x_1 x_2)(3 x_1 x_2 - s)``: singular exactly on the hyperbolas ``u = s`` and
    ``u = s/3``, not on the diagonal. What ``a_i = a_j`` is, is an invariant manifold of the flow
    (the permutation symmetry) -- which the hyper-residual offsets move off the diagonal.
    """
    _, s, x = _mode_args(a, s, architecture)
    n = x.size
    with np.errstate(over="ignore", invalid="ignore"):
        u = np.prod(x)
        g = _prod_except(x)
        # row i of K: prod_except of x with x_i replaced by 1 (prefix times suffix products)
        xs = np.tile(x, (n, 1))
        np.fill_diagonal(xs, 1.0)
        ones = np.ones((n, 1))
        left = np.concatenate([ones, np.cumprod(xs[:, :-1], axis=1)], axis=1)
        right = np.concatenate([np.cumprod(xs[:, ::-1][:, :-1], axis=1)[:, ::-1], ones], axis=1)
        k = left * right
        np.fill_diagonal(k, 0.0)
        k = 0.5 * (k + k.T)  # the two rounding orders of K_ik and K_ki agree to a few ulps
        h = np.outer(g, g) - (np.float64(s) - u) * k
    if not np.all(np.isfinite(h)):
        raise _mode_overflow("the Hessian")
    return h


def mode_saddle(architecture: str, n_weights: int = 2) -> np.ndarray:
    """The critical point where every factor ``a_l + c_l`` vanishes: (0, 0), (-1, -1), (-1, -2) for two weight layers (Fig. 6a).

    Parameters and errors as :func:`mode_offsets`.
    """
    return -mode_offsets(architecture, n_weights)


@dataclass(frozen=True)
class ModeTrajectory(Result):
    """Mode-strength flow: ``a[k]`` (mode strength per layer) and ``u[k] = prod_l a_l`` at ``t[k]``.

    ``u`` is the product of the raw strengths as in Fig. 6b; ``product`` is ``prod_l (a_l + c_l)``,
    the quantity that converges to ``s``.
    """

    t: np.ndarray
    a: np.ndarray
    u: np.ndarray
    product: np.ndarray
    architecture: str


def mode_flow(
    a0: ArrayLike, s: float, t: ArrayLike, architecture: str = "plain", rtol: float = 1e-9, atol: float = 1e-12
) -> ModeTrajectory:
    """Integrate the gradient flow ``da/dt = -dE/da`` of eqs. 21-23 (Orhan 2017) with ``scipy.integrate.solve_ivp`` (LSODA).

    Parameters
    ----------
    a0 : array_like, shape (N_l - 1,)
        Initial mode strengths (1 to :data:`MAX_FLOW_DIMENSION` of them).
    s : float
        Target singular value.
    t : array_like
        Strictly increasing, finite output times (``t = iteration x learning rate``; at most 10^6).
    architecture : {"plain", "residual", "hyper_residual"}
    rtol, atol : float
        Tolerances of the integrator, as in :func:`~meanfield.landscape.three_layer_flow`.

    Returns
    -------
    ModeTrajectory
        Finite arrays.

    Raises
    ------
    ValueError
        Bad arguments (as :func:`mode_energy`; ``t``, ``rtol``, ``atol``), an initial energy that
        overflows, or an integration that cannot be carried out in bounded time and range: more
        than :data:`MAX_FLOW_EVALUATIONS` right-hand sides (e.g. ``s = 1e300`` or a time grid of
        spacing 1e-300), solver failure, or a solution that leaves the float64 range.
    TypeError
        Complex arrays; complex, boolean or non-numeric scalars (``s``, ``rtol``, ``atol``);
        ``architecture`` not a str.
    """
    rtol, atol = _check_tolerances(rtol, atol)
    a0, s, _ = _mode_args(a0, s, architecture, "a0")
    if a0.size > MAX_FLOW_DIMENSION:
        raise ValueError(
            f"a0 must hold at most {MAX_FLOW_DIMENSION} (MAX_FLOW_DIMENSION) mode strengths, got {a0.size}"
        )
    t = _check_times(t)
    mode_energy(a0, s, architecture)  # the initial energy must be representable
    c = mode_offsets(architecture, a0.size)

    def rhs(y):
        x = y + c
        return (s - np.prod(x)) * _prod_except(x)

    scales = f"s = {s:.3g}, max |a0| = {float(np.max(np.abs(a0))):.3g}"
    a = _integrate(rhs, a0, t, rtol, atol, scales)
    with np.errstate(over="ignore", invalid="ignore"):
        u = np.prod(a, axis=1)
        product = np.prod(a + c, axis=1)
    if not (np.all(np.isfinite(u)) and np.all(np.isfinite(product))):
        raise ValueError(f"t: the products of the mode strengths overflow double precision along the flow ({scales})")
    return ModeTrajectory(t, a, u, product, architecture)
