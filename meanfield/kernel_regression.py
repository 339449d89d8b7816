r"""Kernel regression with the infinite-width NNGP and NTK (Lee et al. 2019).

For training inputs :math:`X` with targets :math:`Y` (rows: inputs, columns: outputs) and test
inputs :math:`x_*`, with :math:`\mathcal{K}` the NNGP kernel and :math:`\Theta` the NTK
(:mod:`meanfield.kernels`):

* the exact Bayesian posterior mean of the network's Gaussian process (Lee et al. 2018, eq. 8;
  Lee et al. 2019, eq. 13): :math:`\mu(x_*) = \mathcal{K}(x_*, X)\,\mathcal{K}(X, X)^{-1}\,Y`;
* the mean prediction of an infinitely wide network trained by gradient flow on the mean squared
  error with learning rate :math:`\eta` for time :math:`t` (Lee et al. 2019, eq. 16):
  :math:`\mu_t(x_*) = \Theta(x_*, X)\,\Theta^{-1}\,(I - e^{-\eta\Theta t})\,Y`, which tends to
  :math:`\Theta(x_*, X)\,\Theta^{-1}\,Y` as :math:`t \to \infty` (the output at initialisation has
  mean zero and is not part of the mean).

``diag_reg`` adds :math:`\epsilon\,\overline{\mathrm{diag}\,K}\,I` to the train/train kernel
(neural-tangents' ``diag_reg`` with ``diag_reg_absolute_scale=False``): a noise variance for the
NNGP, the ridge of the NTK solve.

References
----------
Lee, Bahri, Novak, Schoenholz, Pennington, Sohl-Dickstein (2018), "Deep neural networks as Gaussian
processes". Lee, Xiao, Schoenholz, Bahri, Novak, Sohl-Dickstein, Pennington (2019), "Wide neural
networks of any depth evolve as linear models under gradient descent", Sec. 2.3-2.4.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from ._checks import as_real_array, check_nonnegative_scalar
from ._results import Result
from .kernels import dense_kernels

if TYPE_CHECKING:  # annotations only
    from .activations import Activation

__all__ = [
    "EIG_RTOL",
    "KernelPredictions",
    "gradient_flow_mean",
    "kernel_regression",
    "nngp_posterior_mean",
]

#: Eigenvalues of the (regularised) train/train kernel below ``-EIG_RTOL * largest`` mean it is not
#: positive semi-definite (a ValueError); every eigen-direction with eigenvalue ``<= EIG_RTOL *
#: largest`` (small positive ones included, not only rounding-level negatives) is dropped from the
#: solves, a truncated pseudo-inverse.
EIG_RTOL = 1e-10


def _arrays(k_test_train, k_train_train, y_train):
    kxx = as_real_array(k_train_train, "k_train_train")
    if kxx.ndim != 2 or kxx.shape[0] != kxx.shape[1] or kxx.shape[0] < 1:
        raise ValueError(f"k_train_train must be a square (n_train, n_train) matrix, got shape {kxx.shape}")
    n = kxx.shape[0]
    ktx = as_real_array(k_test_train, "k_test_train")
    if ktx.ndim != 2 or ktx.shape[1] != n:
        raise ValueError(f"k_test_train must have shape (n_test, {n}), got {ktx.shape}")
    y = as_real_array(y_train, "y_train")
    squeeze = y.ndim == 1
    y = y[:, None] if squeeze else y
    if y.ndim != 2 or y.shape[0] != n:
        raise ValueError(f"y_train must have shape ({n},) or ({n}, n_outputs), got {y.shape}")
    if not np.allclose(kxx, kxx.T, rtol=1e-12, atol=1e-12 * float(np.max(np.abs(kxx)))):
        raise ValueError("k_train_train must be symmetric")
    return ktx, 0.5 * (kxx + kxx.T), y, squeeze


def _eig(kxx, diag_reg):
    diag_reg = check_nonnegative_scalar(diag_reg, "diag_reg")
    scale = float(np.mean(np.diag(kxx)))
    lam, vec = np.linalg.eigh(kxx + diag_reg * scale * np.eye(kxx.shape[0]))
    top = float(lam[-1]) if lam.size else 0.0
    if top <= 0.0 or lam[0] < -EIG_RTOL * top:
        raise ValueError(
            f"k_train_train (+ diag_reg) must be positive semi-definite with a positive eigenvalue "
            f"(eigenvalues in [{lam[0]:.3g}, {top:.3g}])"
        )
    return np.maximum(lam, 0.0), vec, top


def _apply(ktx, vec, factor, y):
    return ktx @ (vec @ (factor[:, None] * (vec.T @ y)))


def nngp_posterior_mean(
    k_test_train: ArrayLike, k_train_train: ArrayLike, y_train: ArrayLike, *, diag_reg: float = 0.0
) -> np.ndarray:
    r"""The NNGP posterior mean :math:`\mathcal{K}(x_*, X)\,(\mathcal{K}(X, X) + \epsilon\bar k I)^{-1}\,Y` (Lee et al. 2018, eq. 8).

    Parameters
    ----------
    k_test_train : array_like, shape (n_test, n_train)
    k_train_train : array_like, shape (n_train, n_train)
        Symmetric positive semi-definite.
    y_train : array_like, shape (n_train,) or (n_train, n_outputs)
    diag_reg : float
        :math:`\epsilon \ge 0`, relative to the mean diagonal :math:`\bar k` (a noise variance).

    Returns
    -------
    ndarray, shape (n_test,) or (n_test, n_outputs)
        Eigen-directions with eigenvalue ``<= EIG_RTOL`` times the largest are left out, not only
        those with eigenvalue 0 (a singular kernel without ``diag_reg``): a truncated
        pseudo-inverse, the minimum-norm solution when the kernel is exactly singular.

    Raises
    ------
    ValueError
        Mismatched shapes; a kernel that is not symmetric PSD; negative ``diag_reg``.
    TypeError
        Non-numeric arguments.
    """
    ktx, kxx, y, squeeze = _arrays(k_test_train, k_train_train, y_train)
    lam, vec, top = _eig(kxx, diag_reg)
    with np.errstate(divide="ignore"):
        inv = np.where(lam > EIG_RTOL * top, 1.0 / np.where(lam > 0, lam, 1.0), 0.0)
    out = _apply(ktx, vec, inv, y)
    return out[:, 0] if squeeze else out


def gradient_flow_mean(
    theta_test_train: ArrayLike,
    theta_train_train: ArrayLike,
    y_train: ArrayLike,
    *,
    t: float = math.inf,
    learning_rate: float = 1.0,
    diag_reg: float = 0.0,
) -> np.ndarray:
    r"""Mean test prediction of an infinitely wide network after gradient flow for time t (Lee et al. 2019, eq. 16).

    .. math:: \mu_t(x_*) = \Theta(x_*, X)\,\Theta^{-1}\,(I - e^{-\eta\Theta t})\,Y,

    the linearised network's mean under continuous-time gradient descent on
    :math:`\frac12\|f(X) - Y\|^2`; at ``t = inf`` the converged :math:`\Theta(x_*, X)\Theta^{-1}Y`.

    Parameters
    ----------
    theta_test_train : array_like, shape (n_test, n_train)
    theta_train_train : array_like, shape (n_train, n_train)
        Symmetric positive semi-definite NTK.
    y_train : array_like, shape (n_train,) or (n_train, n_outputs)
    t : float
        Training time (>= 0, may be ``inf``).
    learning_rate : float
        :math:`\eta > 0`.
    diag_reg : float
        Ridge relative to the mean diagonal (>= 0).

    Returns
    -------
    ndarray, shape (n_test,) or (n_test, n_outputs)
        0 at t = 0; eigen-directions with eigenvalue ``<= EIG_RTOL`` times the largest (those of
        eigenvalue 0 included) are left out, i.e. never move (a truncated pseudo-inverse at
        ``t = inf``).

    Raises
    ------
    ValueError, TypeError
        As :func:`nngp_posterior_mean`; ``t < 0``, NaN, or ``learning_rate <= 0``.
    """
    ktx, kxx, y, squeeze = _arrays(theta_test_train, theta_train_train, y_train)
    if isinstance(t, (bool, np.bool_)) or not isinstance(t, (int, float, np.integer, np.floating)):
        raise TypeError(f"t must be a real number >= 0 (or inf), got {t!r}")
    t = float(t)
    if not t >= 0.0:
        raise ValueError(f"t must be >= 0 (or inf), got {t}")
    eta = check_nonnegative_scalar(learning_rate, "learning_rate")
    if eta <= 0.0:
        raise ValueError(f"learning_rate must be > 0, got {eta}")
    lam, vec, top = _eig(kxx, diag_reg)
    keep = lam > EIG_RTOL * top
    safe = np.where(keep, lam, 1.0)
    if math.isinf(t):
        factor = np.where(keep, 1.0 / safe, 0.0)
    else:  # (1 - exp(-eta lam t)) / lam, -expm1 for small eta lam t
        factor = np.where(keep, -np.expm1(-eta * safe * t) / safe, 0.0)
    out = _apply(ktx, vec, factor, y)
    return out[:, 0] if squeeze else out


@dataclass(frozen=True)
class KernelPredictions(Result):
    r"""Test predictions of NNGP and NTK regression (see :func:`kernel_regression`).

    Attributes
    ----------
    nngp : ndarray, shape (n_layers, n_test, n_outputs)
        NNGP posterior means, one per layer of ``layers``.
    ntk : ndarray, shape (n_layers, n_test, n_outputs)
        Gradient-flow means at time ``t``.
    layers : tuple of int
        The depths (hidden layers) of the rows.
    t : float
        The training time of ``ntk``.
    """

    nngp: np.ndarray
    ntk: np.ndarray
    layers: tuple
    t: float


def kernel_regression(
    x_train: ArrayLike,
    y_train: ArrayLike,
    x_test: ArrayLike,
    activation: str | Activation,
    sigma_w2: float,
    sigma_b2: float,
    layers: int | tuple[int, ...],
    *,
    t: float = math.inf,
    learning_rate: float = 1.0,
    diag_reg: float = 0.0,
) -> KernelPredictions:
    r"""NNGP and NTK predictions of dense networks of the given depths on a data set (Lee et al. 2019).

    The kernels of every depth come from one pass of :func:`meanfield.kernels.dense_kernels`
    (``layers``), then :func:`nngp_posterior_mean` and :func:`gradient_flow_mean` per depth.

    Parameters
    ----------
    x_train : array_like, shape (n_train, n0)
    y_train : array_like, shape (n_train,) or (n_train, n_outputs)
        Targets (e.g. centred one-hot labels).
    x_test : array_like, shape (n_test, n0)
    activation : str or Activation
    sigma_w2, sigma_b2 : float
    layers : int or sequence of int
        Depths (hidden layers, >= 0, increasing).
    t, learning_rate : float
        As :func:`gradient_flow_mean`.
    diag_reg : float
        As :func:`nngp_posterior_mean` (the same for both kernels).

    Returns
    -------
    KernelPredictions

    Raises
    ------
    ValueError, TypeError
        As :func:`meanfield.kernels.dense_kernels` and :func:`gradient_flow_mean`.
    """
    y = as_real_array(y_train, "y_train")
    y = y[:, None] if y.ndim == 1 else y
    if isinstance(layers, (int, np.integer)) and not isinstance(layers, (bool, np.bool_)):
        layers = (int(layers),)
    layers = tuple(layers)
    if not layers:
        raise ValueError("layers must name at least one depth")
    depth = max(int(v) for v in layers) if all(isinstance(v, (int, np.integer)) for v in layers) else layers
    kxx = dense_kernels(x_train, None, activation, sigma_w2, sigma_b2, depth, layers=layers)
    ktx = dense_kernels(x_test, x_train, activation, sigma_w2, sigma_b2, depth, layers=layers)
    nngp = np.stack([nngp_posterior_mean(ktx.nngp[m], kxx.nngp[m], y, diag_reg=diag_reg) for m in range(len(layers))])
    ntk = np.stack(
        [
            gradient_flow_mean(ktx.ntk[m], kxx.ntk[m], y, t=t, learning_rate=learning_rate, diag_reg=diag_reg)
            for m in range(len(layers))
        ]
    )
    return KernelPredictions(nngp=nngp, ntk=ntk, layers=kxx.layers, t=float(t))
