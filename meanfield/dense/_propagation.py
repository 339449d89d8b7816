"""Covariances propagated through depth, on a log scale where they leave the float64 range."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from .._checks import check_covariance
from .._fastpath import fast_start, float64_trajectory, trajectory_ok
from .._logscale import (
    check_depth,
    check_quadrature_work,
    full_rule,
    kernel_rule_for,
    normalised_start,
    propagate_kernel,
    refuse_unbounded,
)
from .._results import Result
from ..gaussian import DEFAULT_DEGREE, needs_full_tree
from ._common import _act, _require_builtin, _variances

if TYPE_CHECKING:  # annotations only
    from ..activations import Activation


# ----------------------------------------------------------------------------------------------
# Propagation through depth on a log scale: cov[l] = exp(log_scale[l]) * normalized[l].


@dataclass(frozen=True)
class LogPropagation(Result):
    """Covariances through depth as ``cov[l] = exp(log_scale[l]) * normalized[l]``.

    Attributes
    ----------
    log_scale : ndarray, shape (depth + 1,)
        Natural log of the largest variance at each layer (0 where every variance is 0).
    normalized : ndarray, shape (depth + 1, D, D)
        Covariance divided by ``exp(log_scale)`` (largest diagonal entry 1, or all 0).
    """

    log_scale: np.ndarray
    normalized: np.ndarray

    @property
    def log_q(self) -> np.ndarray:
        """log of each input's variance, shape (depth + 1, D) (-inf where it is exactly 0)."""
        with np.errstate(divide="ignore"):
            return self.log_scale[:, None] + np.log(np.diagonal(self.normalized, axis1=1, axis2=2))

    @property
    def correlation(self) -> np.ndarray:
        """Correlation matrices, shape (depth + 1, D, D) (0 where a variance is 0)."""
        q = np.diagonal(self.normalized, axis1=1, axis2=2)
        s = np.sqrt(q)
        den = s[:, :, None] * s[:, None, :]
        return np.where(den > 0, self.normalized / np.where(den > 0, den, 1.0), 0.0).clip(-1.0, 1.0)


def _fast_propagate_log(cov0, activation, sigma_w2, sigma_b2, depth, degree):
    """``(LogPropagation, validated cov0)`` on the fast path (``meanfield._fastpath``), or None where
    the general path :func:`_propagate_log` must decide: it certifies the arguments in one compiled
    call and runs the same kernel, so the result is the same where it answers."""
    refuse_unbounded(cov0, activation, depth, degree)
    start = fast_start(cov0, activation, sigma_w2, sigma_b2, depth, degree)
    if start is None:
        return None
    act, sym, k0, log0, (z, w, cf), sw, sb = start
    k_out = np.empty((depth + 1,) + k0.shape)
    logs = np.empty(depth + 1)
    propagate_kernel(act.code, act.param, sw, sb, k0, log0, depth, z, w, cf, k_out, logs)
    # a first tier that reached the graded rule, or a trajectory that left float64: the general
    # path retries (with every rule, or with quadrature) or raises
    if needs_full_tree(cf) or not trajectory_ok(logs, k_out, math.inf):
        return None
    return LogPropagation(log_scale=logs, normalized=k_out), sym


def _propagate_log(cov0, activation, sigma_w2, sigma_b2, depth, degree):
    """propagate_log and the validated cov0."""
    fast = _fast_propagate_log(cov0, activation, sigma_w2, sigma_b2, depth, degree)
    if fast is not None:
        return fast
    return _general_propagate_log(cov0, activation, sigma_w2, sigma_b2, depth, degree)


def _general_propagate_log(cov0, activation, sigma_w2, sigma_b2, depth, degree):
    """:func:`_propagate_log` for any arguments: every check, in the documented order."""
    act = _act(activation)
    _require_builtin(act, "propagate")
    cov0 = check_covariance(cov0, "cov0", strict=True)
    if cov0.ndim != 2 or cov0.shape[0] < 1:
        raise ValueError(f"cov0 must be a single (D, D) matrix with D >= 1, got shape {cov0.shape}")
    sigma_w2, sigma_b2 = _variances(sigma_w2, sigma_b2)
    depth = check_depth(depth, cov0.shape[0])
    k0, log0 = normalised_start(cov0)
    z, w, cf = kernel_rule_for(act, degree)
    check_quadrature_work(act.code, act.name, depth, cov0.shape[0], int(degree))
    k_out = np.empty((depth + 1,) + k0.shape)
    logs = np.empty(depth + 1)
    propagate_kernel(act.code, act.param, sigma_w2, sigma_b2, k0, log0, depth, z, w, cf, k_out, logs)
    if needs_full_tree(cf):  # the first tier reached the graded rule: every rule
        propagate_kernel(act.code, act.param, sigma_w2, sigma_b2, k0, log0, depth, z, w, None, k_out, logs)
    finite = np.isfinite(logs).all() and np.isfinite(k_out).all()
    if not finite and z is None:  # a closed form failed where pair_value would try quadrature
        propagate_kernel(act.code, act.param, sigma_w2, sigma_b2, k0, log0, depth, *full_rule(degree), k_out, logs)
        finite = np.isfinite(logs).all() and np.isfinite(k_out).all()
    if not finite:
        raise ValueError(
            f"propagation of activation {act.name} leaves even the log-scale representation at these parameters"
        )
    return LogPropagation(log_scale=logs, normalized=k_out), cov0


def propagate_log(
    cov0: ArrayLike,
    activation: str | Activation,
    sigma_w2: float,
    sigma_b2: float,
    depth: int,
    degree: int = DEFAULT_DEGREE,
) -> LogPropagation:
    r"""Iterate the C-map ``depth`` times without overflow or underflow of the scale.

    The covariance is carried as a log-scale and a normalised matrix. For positively homogeneous
    activations (``linear``, ``relu``, ``leaky_relu``, ``abs``) the map satisfies
    :math:`C(s\Sigma) = s\,C(\Sigma)` up to the bias, so ReLU networks at ``sigma_w2 = 100`` and
    depth 10^4 (variance ~ 50^{10^4}) are represented exactly. For the others the map is
    evaluated directly at moderate scales and, below variances of 1e-30, by its form at 0: the
    linearisation :math:`\phi(u) \approx \phi(0) + \phi'(0)u + \phi''(0)u^2/2` for activations
    smooth at 0 (e.g. tanh without bias in the ordered phase, whose variance decays like chi_1^l;
    relative error O(q)), exact homogeneity for ``sign`` (degree 0) and ``relu_power`` (degree n),
    and the leaky map of the germ :math:`\phi(u) \approx a_0 u` (u > 0), :math:`b_0 u` (u < 0) for
    a kink at 0 (``selu``, ``elu`` with alpha != 1; relative error O(sqrt(q))). Above 1e40 the
    map of a relu-like activation (softplus, swish, gelu in the chaotic phase) is that of its
    asymptote relu (relative error below 1e-20).

    Parameters
    ----------
    cov0 : array_like, shape (D, D)
        Input-layer pre-activation covariance (index 0), symmetric PSD, D >= 1.
    activation : str or Activation
        A built-in activation.
    sigma_w2, sigma_b2 : float
        Variances (>= 0), scalars.
    depth : int
        Number of layers (0 <= depth <= 10^7, and (depth + 1) D^2 <= 2^28 floats returned;
        for the quadrature-only activations tanh, sigmoid, softplus and swish also an estimated
        run time below a few seconds, e.g. depth <= 29,000 for D = 2 at the default degree).
    degree : int
        Gauss-Hermite degree for activations without closed forms.

    Returns
    -------
    LogPropagation

    Raises
    ------
    ValueError
        Bad arguments; a user-defined activation; a scale beyond even the log representation
        (sigma_w2 or sigma_b2 near the float64 maximum).
    TypeError
        Complex or boolean arguments; arrays for the variances.
    """
    return _propagate_log(cov0, activation, sigma_w2, sigma_b2, depth, degree)[0]


def propagate(
    cov0: ArrayLike,
    activation: str | Activation,
    sigma_w2: float,
    sigma_b2: float,
    depth: int,
    degree: int = DEFAULT_DEGREE,
) -> np.ndarray:
    r"""Covariances of D inputs through ``depth`` layers: :math:`\Sigma^{l+1} = C(\Sigma^l)`.

    Parameters
    ----------
    cov0 : array_like, shape (D, D)
        Pre-activation covariance at index 0 (e.g. :func:`input_covariance`), D >= 1.
    activation : str or Activation
        A built-in activation (the loop over layers runs in a compiled kernel).
    sigma_w2, sigma_b2 : float
        Variances (>= 0), scalars.
    depth : int
        Number of layers (>= 0; see :func:`propagate_log` for the upper limits).
    degree : int
        Gauss-Hermite degree for activations without closed forms.

    Returns
    -------
    ndarray, shape (depth + 1, D, D)
        Index 0 is ``cov0``.

    Raises
    ------
    ValueError
        Bad arguments, or a variance leaves the normal float64 range (overflow in expanding
        networks, underflow in contracting networks without bias, e.g. ReLU at
        ``sigma_w2 = 1.5``, depth 10^4): :func:`propagate_log` represents those exactly.
    TypeError
        Complex or boolean arguments; arrays for the variances.

    Notes
    -----
    Xiao et al. 2018, eq. 2.5 iterated (the C-map of Poole et al. 2016, eqs. 3-5). With a writeable
    C-contiguous float64 ``cov0``, float or int variances and a built-in activation, the argument
    checks run in one compiled call (a Cholesky certificate of positive semi-definiteness; the same
    accept/reject decisions and messages as the general checks, which decide whatever it cannot
    certify) and the call costs ~6 us more than its kernel (``benchmarks/bench_overhead.py``).

    For many inputs (data sets of hundreds to thousands), :func:`meanfield.kernels.dense_kernels`
    computes the last layer's (or chosen layers') covariances between two sets of inputs on all
    cores in bounded memory, much faster; it agrees with this function to float64 rounding.

    Examples
    --------
    >>> import numpy as np
    >>> traj = propagate(np.eye(2), "erf", 1.5, 0.05, depth=50)
    >>> traj.shape
    (51, 2, 2)
    """
    args = (cov0, activation, sigma_w2, sigma_b2, depth, degree)
    return float64_trajectory(_fast_propagate_log(*args), "propagate", _general_propagate_log, *args)
