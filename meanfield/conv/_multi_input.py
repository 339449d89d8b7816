"""Several inputs at once (Xiao et al. 2018, footnote 3) and the eigenbases of the C-map's Jacobian (eq. 2.8,
supplement Lemma B.2 / Theorem B.1; private).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from .. import dense
from .._checks import as_real_array, check_covariance, check_int, check_nonnegative_scalar
from .._logscale import refuse_unbounded
from .._results import Result
from ..activations import get_activation
from ..gaussian import DEFAULT_DEGREE
from ._averaging import MAX_MULTI_INPUT_DEPTH, _average, _check_v, _resolve_shape
from ._depth import _kappa

if TYPE_CHECKING:  # annotations only
    from ..activations import Activation

# ----------------------------------------------------------------------------------------------
# Several inputs at once (Xiao et al. 2018, footnote 3) and the eigenbases of the C-map's Jacobian
# (eq. 2.8, supplement Lemma B.2 / Theorem B.1).


def _multi_shape(cov, name):
    if cov.ndim < 4 or cov.shape[-4] != cov.shape[-2] or cov.shape[-3] != cov.shape[-1]:
        raise ValueError(f"{name} must have shape (..., D, P, D, P), got {cov.shape}")
    return cov.shape[-4], cov.shape[-3]


def multi_input_covariance_map(
    cov: ArrayLike,
    activation: str | Activation,
    sigma_w2: float,
    sigma_b2: float,
    v: ArrayLike,
    shape: int | tuple[int, ...] | None = None,
    degree: int = DEFAULT_DEGREE,
) -> np.ndarray:
    r"""One CNN layer for D inputs at once: the covariance over inputs x positions (Xiao et al. 2018, footnote 3).

    .. math:: \Sigma^{l+1}_{(a,\alpha),(b,\alpha')} = \sum_\beta v_\beta\,
        \mathcal{C}(\Sigma^l)_{(a,\alpha+\beta),(b,\alpha'+\beta)},

    the dense C-map on every pair of (input, position) and the averaging operator applied to every
    input pair's block (the same kernels act on all inputs, so the shift is common).

    Parameters
    ----------
    cov : array_like, shape (..., D, P, D, P)
        Joint covariance of a channel's pre-activations over D inputs and P positions (the
        ``(D P) x (D P)`` matrix, reshaped; symmetric PSD).
    activation : str or Activation
    sigma_w2, sigma_b2 : float
        Variances (>= 0).
    v : array_like
        Variance vector (see :func:`average`).
    shape : int or (int, int), optional
        Spatial shape (see :func:`average`).
    degree : int

    Returns
    -------
    ndarray, shape (..., D, P, D, P)
        The diagonal blocks ``out[..., a, :, a, :]`` equal :func:`covariance_map` of ``cov[..., a, :, a, :]``.

    Raises
    ------
    ValueError
        A shape other than (..., D, P, D, P), a matrix that is not symmetric PSD, bad variances or ``v``.
    TypeError
        Complex, boolean or non-numeric arguments.

    Notes
    -----
    Xiao et al. 2018, eqs. 2.3-2.5 with footnote 3. D = 1 reduces to :func:`covariance_map`.
    """
    v = _check_v(v)
    cov = as_real_array(cov, "cov")
    d, p = _multi_shape(cov, "cov")
    lead = cov.shape[:-4]
    flat = check_covariance(cov.reshape(lead + (d * p, d * p)), "cov", strict=True)
    shape = _resolve_shape(v, shape, p)
    mapped = dense.covariance_map(flat, activation, sigma_w2, sigma_b2, degree).reshape(lead + (d, p, d, p))
    blocks = np.swapaxes(mapped, -3, -2)  # (..., D, D, P, P)
    return np.swapaxes(_average(blocks, v, shape, +1), -3, -2)


def multi_input_propagate(
    cov0: ArrayLike,
    activation: str | Activation,
    sigma_w2: float,
    sigma_b2: float,
    v: ArrayLike,
    depth: int,
    shape: int | tuple[int, ...] | None = None,
    degree: int = DEFAULT_DEGREE,
) -> np.ndarray:
    r"""Iterate :func:`multi_input_covariance_map` ``depth`` times.

    Parameters
    ----------
    cov0 : array_like, shape (D, P, D, P)
    activation, sigma_w2, sigma_b2, v, shape, degree
        As :func:`multi_input_covariance_map`.
    depth : int
        Layers (0 to :data:`MAX_MULTI_INPUT_DEPTH`; each is a Python-level step of a few
        milliseconds; for tanh, sigmoid, softplus and swish also an estimated run time of a few
        seconds for the ``D P`` (input, position) pairs).

    Returns
    -------
    ndarray, shape (depth + 1, D, P, D, P)
        ``out[0] = cov0``.

    Raises
    ------
    ValueError, TypeError
        As :func:`multi_input_covariance_map`; ``depth`` out of range.
    """
    cov = as_real_array(cov0, "cov0")
    d, p = _multi_shape(cov, "cov0")
    if cov.ndim != 4:
        raise ValueError(f"cov0 must have shape (D, P, D, P), got {cov.shape}")
    check_covariance(cov.reshape(d * p, d * p), "cov0")
    depth = check_int(depth, "depth", 0, MAX_MULTI_INPUT_DEPTH)
    refuse_unbounded(cov.reshape(d * p, d * p), activation, depth, degree)
    out = np.empty((depth + 1, d, p, d, p))
    out[0] = cov
    for layer in range(depth):
        out[layer + 1] = cov = multi_input_covariance_map(cov, activation, sigma_w2, sigma_b2, v, shape, degree)
    return out


def multi_input_covariance(
    x: ArrayLike, sigma_w2: float, sigma_b2: float, v: ArrayLike, shape: int | tuple[int, ...] | None = None
) -> np.ndarray:
    r"""First-layer covariance over inputs x positions of a periodic CNN on D inputs.

    .. math:: \Sigma^1_{(a,\alpha),(b,\alpha')} = \frac{\sigma_w^2}{c_0}\sum_\beta v_\beta\,
        x_a(\alpha+\beta)\cdot x_b(\alpha'+\beta) + \sigma_b^2.

    Parameters
    ----------
    x : array_like, shape (D, P, c0)
        D inputs with P (flattened, row-major) positions and c0 channels.
    sigma_w2, sigma_b2 : float
        Variances (>= 0).
    v, shape
        As :func:`average`.

    Returns
    -------
    ndarray, shape (D, P, D, P)

    Raises
    ------
    ValueError, TypeError
        A wrong shape, non-finite values, bad variances or ``v``.
    """
    v = _check_v(v)
    x = as_real_array(x, "x")
    if x.ndim != 3 or min(x.shape) < 1:
        raise ValueError(f"x must have shape (D, P, c0) with every size >= 1, got {x.shape}")
    sigma_w2 = check_nonnegative_scalar(sigma_w2, "sigma_w2")
    sigma_b2 = check_nonnegative_scalar(sigma_b2, "sigma_b2")
    _, p, c0 = x.shape
    shape = _resolve_shape(v, shape, p)
    gram = np.einsum("aic,bjc->abij", x, x) / c0  # (D, D, P, P)
    out = sigma_w2 * _average(gram, v, shape, +1) + sigma_b2
    if not np.all(np.isfinite(out)):
        raise ValueError("the input covariance exceeds the float64 range (rescale x)")
    return np.swapaxes(out, 1, 2)


@dataclass(frozen=True)
class CMapEigenbasis(Result):
    r"""Eigenbases of the Jacobian J of the C-map at the fixed point :math:`\Sigma^*` (Lemma B.2, Thm. B.1).

    Attributes
    ----------
    diagonal : ndarray, shape (P, P, P)
        :math:`\tilde V_\alpha = V_{\alpha\alpha} + \frac{\kappa}{\chi_{q^*}-\chi_{c^*}}\sum_{\alpha'\ne\alpha}V_{\alpha\alpha'}`,
        eigenvalue :math:`\chi_{q^*}` (the basis of :math:`V_d`, eq. 2.8).
    off_diagonal : ndarray, shape (P (P - 1) / 2, P, P)
        :math:`V_{\alpha\alpha'}` (ones at (alpha, alpha') and (alpha', alpha)), alpha < alpha',
        eigenvalue :math:`\chi_{c^*}` (the basis of :math:`V_{o.d.}`).
    fourier : ndarray, shape (P, P, P), complex
        :math:`U_m = \sum_\alpha e^{2\pi i m\alpha/P}\tilde V_\alpha` (1-D positions): the basis of
        :math:`V_d` that also diagonalises the averaging operator (Thm. B.1's proof).
    chi_q, chi_c, kappa : float
        Eigenvalues and the coupling kappa of eq. S13.
    q_star, c_star : float
        The fixed point.
    """

    diagonal: np.ndarray
    off_diagonal: np.ndarray
    fourier: np.ndarray
    chi_q: float
    chi_c: float
    kappa: float
    q_star: float
    c_star: float


def cmap_jacobian(
    u: ArrayLike, activation: str | Activation, sigma_w2: float, sigma_b2: float, degree: int = DEFAULT_DEGREE
) -> np.ndarray:
    r"""The Jacobian of the C-map at the fixed point applied to symmetric matrices (Lemma B.2).

    .. math:: J(U)_{\alpha\alpha} = \chi_{q^*}U_{\alpha\alpha},\qquad
        J(U)_{\alpha\alpha'} = \chi_{c^*}U_{\alpha\alpha'} + \kappa\,(U_{\alpha\alpha} + U_{\alpha'\alpha'}).

    Parameters
    ----------
    u : array_like, shape (..., P, P)
        Symmetric matrices (a perturbation of :math:`\Sigma^*`).
    activation : str or Activation
        A built-in activation.
    sigma_w2, sigma_b2 : float
    degree : int

    Returns
    -------
    ndarray, shape (..., P, P)

    Raises
    ------
    ValueError
        ``u`` not square and symmetric, q* infinite, bad variances.
    TypeError
        Complex, boolean or non-numeric arguments.

    Notes
    -----
    Xiao et al. 2018, supplement B, eqs. S11-S13 (kappa by :func:`linearized_decay`'s rule at q* > 0,
    eq. S13).
    """
    u = as_real_array(u, "u")
    if u.ndim < 2 or u.shape[-1] != u.shape[-2]:
        raise ValueError(f"u must have shape (..., P, P), got {u.shape}")
    if u.size == 0:
        raise ValueError(f"u must be non-empty (P >= 1), got shape {u.shape}")
    if not np.allclose(u, np.swapaxes(u, -1, -2), rtol=1e-12, atol=1e-12 * max(float(np.max(np.abs(u))), 1e-300)):
        raise ValueError("u must be symmetric")
    chi_q, chi_c, kappa, _, _ = _jacobian_constants(activation, sigma_w2, sigma_b2, degree)
    diag = np.diagonal(u, axis1=-2, axis2=-1)
    out = chi_c * u + kappa * (diag[..., :, None] + diag[..., None, :])
    p = u.shape[-1]
    idx = np.arange(p)
    out[..., idx, idx] = chi_q * diag
    return out


def _jacobian_constants(activation, sigma_w2, sigma_b2, degree):
    act = get_activation(activation)
    fp = dense.fixed_point(act, sigma_w2, sigma_b2, degree)
    if not math.isfinite(fp.q_star):
        raise ValueError(
            "q* is infinite at these activation, sigma_w2, sigma_b2: the C-map has no finite fixed point to linearise"
        )
    kappa = _kappa(act, check_nonnegative_scalar(sigma_w2, "sigma_w2"), fp.q_star, fp.c_star, degree)
    return fp.chi_q, fp.chi_c, kappa, fp.q_star, fp.c_star


def cmap_jacobian_eigenbasis(
    activation: str | Activation, sigma_w2: float, sigma_b2: float, size: int, degree: int = DEFAULT_DEGREE
) -> CMapEigenbasis:
    r"""The eigenbases :math:`B_d` and :math:`B_{o.d.}` of eq. 2.8 in the form of Lemma B.2 / Thm. B.1.

    Parameters
    ----------
    activation : str or Activation
        A built-in activation.
    sigma_w2, sigma_b2 : float
        Variances (>= 0).
    size : int
        Number of positions P (1 to 256).
    degree : int

    Returns
    -------
    CMapEigenbasis

    Raises
    ------
    ValueError
        q* infinite; chi_q = chi_c with kappa != 0 (J is then not diagonalisable on V_d this way);
        bad arguments.
    TypeError
        Complex, boolean or non-numeric arguments.

    Notes
    -----
    Xiao et al. 2018, eq. 2.8 and supplement B (proof of Thm. B.1). The printed eq. 2.8 writes the diagonal
    basis as :math:`\gamma\delta_{\alpha\bar\alpha}\delta_{\alpha\bar\alpha'} + \delta_{\bar\alpha\alpha} + \delta_{\bar\alpha'\alpha}`
    with an unspecified gamma; the supplement's :math:`\tilde V_\alpha` is the same space up to
    normalisation: :math:`\tilde V_\alpha` divided by its off-diagonal coefficient
    :math:`\kappa/(\chi_{q^*}-\chi_{c^*})` is eq. 2.8's form with
    :math:`\gamma = (\chi_{q^*}-\chi_{c^*})/\kappa - 2` (the diagonal entry of eq. 2.8's matrix is
    gamma + 2).
    """
    size = check_int(size, "size", 1, 256)
    sigma_w2 = check_nonnegative_scalar(sigma_w2, "sigma_w2")
    chi_q, chi_c, kappa, q, c = _jacobian_constants(activation, sigma_w2, sigma_b2, degree)
    if abs(chi_q - chi_c) <= 1e-12 * max(abs(chi_q), 1e-300):
        if kappa != 0.0:
            raise ValueError(
                "chi_q = chi_c with kappa != 0 at these activation, sigma_w2, sigma_b2: the diagonal eigenbasis "
                "of Thm. B.1 does not exist"
            )
        coef = 0.0
    else:
        coef = kappa / (chi_q - chi_c)
    p = size
    eye = np.eye(p)
    diag = np.empty((p, p, p))
    for a in range(p):
        m = coef * (eye[a][:, None] + eye[a][None, :])
        m[a, a] = 1.0
        diag[a] = m
    iu = np.triu_indices(p, 1)
    off = np.zeros((iu[0].size, p, p))
    off[np.arange(iu[0].size), iu[0], iu[1]] = 1.0
    off[np.arange(iu[0].size), iu[1], iu[0]] = 1.0
    phase = np.exp(2j * np.pi * np.outer(np.arange(p), np.arange(p)) / p)  # (m, alpha)
    fourier = np.einsum("ma,aij->mij", phase, diag)
    return CMapEigenbasis(
        diagonal=diag,
        off_diagonal=off,
        fourier=fourier,
        chi_q=float(chi_q),
        chi_c=float(chi_c),
        kappa=float(kappa),
        q_star=float(q),
        c_star=float(c),
    )
