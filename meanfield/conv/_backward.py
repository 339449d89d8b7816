"""The backward pass: gradient covariances and their decay (Xiao et al. 2018, eq. 2.15; private)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from .. import dense
from .._checks import check_covariance, check_int
from .._logscale import map_stack
from .._results import Result
from ..activations import get_activation
from ..gaussian import DEFAULT_DEGREE
from ._averaging import _average, _check_v, _resolve_shape
from ._forward import propagate

if TYPE_CHECKING:  # annotations only
    from ..activations import Activation

# ----------------------------------------------------------------------------------------------
# Backward pass.


def backward_covariance_map(
    cov_grad: ArrayLike,
    cov: ArrayLike,
    activation: str | Activation,
    sigma_w2: float,
    v: ArrayLike,
    shape: int | tuple[int, ...] | None = None,
    degree: int = DEFAULT_DEGREE,
) -> np.ndarray:
    r"""Back-propagate the gradient covariance one layer (Xiao et al. 2018, eq. 2.15 and supplement A.1).

    .. math:: \tilde\Sigma^l_{\alpha\alpha'} = \Big[\sum_\beta v_\beta\,\tilde\Sigma^{l+1}_{\alpha-\beta,\alpha'-\beta}\Big]
        \cdot \sigma_w^2\,\mathbb{E}_{h\sim N(0,\Sigma^l)}\,\phi'(h_\alpha)\phi'(h_{\alpha'})

    with :math:`\delta^l_j(\alpha) = \partial E/\partial h^l_j(\alpha)`, under the
    gradient-independence assumption (backward weights independent of forward ones).

    Parameters
    ----------
    cov_grad : array_like, shape (P, P)
        :math:`\tilde\Sigma^{l+1}` (symmetric PSD).
    cov : array_like, shape (P, P)
        Forward pre-activation covariance :math:`\Sigma^l` of the layer the gradient arrives at.
    activation, sigma_w2, v, shape, degree
        As in :func:`covariance_map`.

    Returns
    -------
    ndarray, shape (P, P)
    """
    v = _check_v(v)
    cov_grad = check_covariance(cov_grad, "cov_grad", strict=True)
    cov = check_covariance(cov, "cov", strict=True)
    if cov_grad.shape != cov.shape:
        raise ValueError(f"cov_grad {cov_grad.shape} and cov {cov.shape} must have the same shape")
    shape = _resolve_shape(v, shape, cov.shape[-1])
    factor = dense.derivative_covariance_map(cov, activation, sigma_w2, degree)
    return _average(cov_grad, v, shape, -1) * factor


@dataclass(frozen=True)
class BackwardPropagation(Result):
    r"""Forward covariances and back-propagated gradient statistics of a deep CNN.

    Attributes
    ----------
    cov : ndarray, shape (depth + 1, P, P)
        Forward pre-activation covariances :math:`\Sigma^l` (:func:`propagate`).
    cov_grad : ndarray, shape (depth + 1, P, P)
        :math:`\tilde\Sigma^l`, with ``cov_grad[depth]`` the given output-gradient covariance.
    grad_variance : ndarray, shape (depth + 1,)
        Mean gradient variance per position, ``trace(cov_grad[l]) / P``.
    weight_grad_sq : ndarray, shape (depth,)
        Entry ``l - 1`` (layer l = 1..depth, mapping l - 1 -> l) is
        :math:`\mathbb{E}\|\partial E/\partial\omega^l\|^2 / (c_{in} c_{out}) = \sum_\beta\sum_{\alpha\alpha'}
        \tilde\Sigma^l_{\alpha\alpha'}\,K^{l-1}_{\alpha+\beta,\alpha'+\beta}`, with
        :math:`K = \mathbb{E}\,\phi(h)\phi(h)^T` the post-activation covariance and the sum over all
        kernel offsets (Fig. S2's weight-gradient norm, per channel pair).
    """

    cov: np.ndarray
    cov_grad: np.ndarray
    grad_variance: np.ndarray
    weight_grad_sq: np.ndarray


def gradient_variance_decay(
    cov0: ArrayLike,
    activation: str | Activation,
    sigma_w2: float,
    sigma_b2: float,
    v: ArrayLike,
    depth: int,
    cov_grad_out: ArrayLike | None = None,
    shape: int | tuple[int, ...] | None = None,
    degree: int = DEFAULT_DEGREE,
) -> BackwardPropagation:
    r"""Gradient statistics of a depth-``depth`` CNN by :func:`backward_covariance_map` (eq. 2.15-2.16).

    At the fixed point the diagonal obeys :math:`\tilde\Sigma^l_{\alpha\alpha} \approx \chi_1\sum_\beta v_\beta
    \tilde\Sigma^{l+1}_{\alpha-\beta,\alpha-\beta}`, so the gradient variance decays or grows like
    :math:`\chi_1^{L-l}` (eq. 2.16); this function iterates the exact map instead, including the
    transient before the fixed point is reached.

    Parameters
    ----------
    cov0 : array_like, shape (P, P)
        Layer-0 pre-activation covariance.
    activation, sigma_w2, sigma_b2, v, shape, degree
        As in :func:`covariance_map`.
    depth : int
        L, the number of layers (>= 1).
    cov_grad_out : array_like, shape (P, P), optional
        :math:`\tilde\Sigma^L`; default the identity (an output gradient with i.i.d. unit entries).

    Returns
    -------
    BackwardPropagation

    Raises
    ------
    ValueError
        Bad arguments; forward variances or gradient statistics beyond the float64 range
        (:func:`propagate` raises for the forward pass; use fewer layers or :func:`propagate_log`).
    TypeError
        Complex or boolean arguments; arrays for the variances.
    """
    act = get_activation(activation)
    v = _check_v(v)
    depth = check_int(depth, "depth", 1)
    cov = propagate(cov0, act, sigma_w2, sigma_b2, v, depth, shape, degree)
    p = cov.shape[-1]
    shape = _resolve_shape(v, shape, p)
    g = np.eye(p) if cov_grad_out is None else check_covariance(cov_grad_out, "cov_grad_out", strict=True)
    if g.shape != (p, p):
        raise ValueError(f"cov_grad_out must have shape {(p, p)}, got {g.shape}")
    factors = dense.derivative_covariance_map(cov, act, sigma_w2, degree)
    post = map_stack(cov, act, 0, 1.0, 0.0, degree)  # K^l = E phi phi^T
    grads = np.empty_like(cov)
    grads[depth] = g
    with np.errstate(over="ignore", invalid="ignore"):
        for layer in range(depth - 1, -1, -1):
            grads[layer] = _average(grads[layer + 1], v, shape, -1) * factors[layer]
    ones = np.ones_like(v)  # weight gradients sum over every kernel offset, unweighted
    k_sum = _average(post[:-1], ones / ones.size, shape, +1) * ones.size
    weight = np.einsum("lab,lab->l", grads[1:], k_sum)
    if not (np.all(np.isfinite(grads)) and np.all(np.isfinite(weight))):
        raise ValueError(
            "gradient_variance_decay: the back-propagated gradient covariance exceeds the float64 range "
            "(chi_1^depth overflows); reduce depth or sigma_w2"
        )
    return BackwardPropagation(
        cov=cov, cov_grad=grads, grad_variance=np.trace(grads, axis1=1, axis2=2) / p, weight_grad_sq=weight
    )
