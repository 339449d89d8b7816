"""Backward (gradient) variance through depth (Schoenholz et al. 2017, Sec. 4)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from .._checks import (
    check_bool,
    check_int,
    check_nonnegative_scalar,
)
from .._logscale import (
    HOMOGENEOUS,
    LOG_DBL_MAX,
    LOG_DBL_MIN,
    MAX_DEPTH,
    Q_ASYMPTOTE_ABOVE,
    Q_LINEAR_BELOW,
    RELU_LIKE,
)
from ..activations import (
    COS,
    RELU_POWER,
    SIN,
    evaluate_call,
    origin_slopes,
)
from ..gaussian import (
    DEFAULT_DEGREE,
    expectation,
)
from ._common import _act, _variances
from ._propagation import propagate_log

if TYPE_CHECKING:  # annotations only
    from ..activations import Activation


# ----------------------------------------------------------------------------------------------
# Backward (gradient) variance.


def _log_chi1_along(act, sigma_w2, log_q, degree):
    """log(sigma_w2 E phi'(sqrt(q) z)^2) for q = exp(log_q) anywhere in the log range."""
    if sigma_w2 == 0.0:
        return np.full(log_q.shape, -np.inf)
    log_sw = math.log(sigma_w2)
    if act.code in HOMOGENEOUS:
        return np.full(log_q.shape, log_sw + math.log(expectation(act, 1.0, (1, 1), degree)))
    out = np.empty(log_q.shape)
    tiny = log_q < math.log(Q_LINEAR_BELOW)
    big_relu = (log_q > math.log(Q_ASYMPTOTE_ABOVE)) & (act.code in RELU_LIKE)
    big_bounded = (log_q > math.log(1e300)) & (act.code not in RELU_LIKE) & (act.code < SIN)
    # relu^n: phi' is homogeneous of degree n - 1, so E phi'(sqrt(q) z)^2 = q^(n-1) E phi'(z)^2 exactly;
    # used where the direct moment would underflow or overflow
    power = act.code == RELU_POWER
    scaled = (tiny | (log_q > math.log(1e300))) if power else np.zeros(log_q.shape, dtype=bool)
    big_other = (log_q > math.log(1e300)) & (act.code >= SIN) & (not power)
    if big_other.any() and act.code not in (SIN, COS):
        raise ValueError(
            f"the gradient variance of {act.name} is implemented for q <= 1e300, got log q up to {float(log_q.max()):.6g}"
        )
    mid = ~(tiny | big_relu | big_bounded | big_other | scaled)
    d0 = float(evaluate_call(act.code, act.param, 1, 0.0))
    a0, b0 = origin_slopes(act.code, act.param)
    with np.errstate(divide="ignore"):
        if power:
            out[scaled] = log_sw + (act.param - 1.0) * log_q[scaled] + math.log(expectation(act, 1.0, (1, 1), degree))
        elif a0 != b0:  # kink at 0 (elu with alpha != 1, selu): E phi'(u)^2 -> (a0^2 + b0^2) / 2
            out[tiny] = log_sw + math.log(0.5 * (a0 * a0 + b0 * b0))
        else:
            out[tiny] = log_sw + math.log(d0 * d0) if d0 != 0 else -np.inf
        out[big_relu] = log_sw + math.log(0.5)
        out[big_other] = log_sw + math.log(0.5)  # sin, cos: E cos(u)^2, E sin(u)^2 -> 1/2
        if big_bounded.any():  # E phi'(u)^2 ~ (int phi'^2) / sqrt(2 pi q): relative error O(1/q)
            out[big_bounded] = (
                log_sw
                + math.log(expectation(act, 1e300, (1, 1), degree))
                - 0.5 * (log_q[big_bounded] - math.log(1e300))
            )
        if mid.any():
            out[mid] = log_sw + np.log(expectation(act, np.exp(log_q[mid]), (1, 1), degree))
    return out


def backward_variance(
    q0: float,
    activation: str | Activation,
    sigma_w2: float,
    sigma_b2: float,
    depth: int,
    log: bool = False,
    degree: int = DEFAULT_DEGREE,
) -> np.ndarray:
    r"""Mean-field ratio of gradient variance at layer l to that at the last layer L = ``depth``.

    With :math:`\delta^l = \partial E / \partial h^l` and the gradient-independence assumption,
    :math:`\mathbb{E}(\delta^l)^2 = \sigma_w^2\,\mathbb{E}\,\phi'(h^l)^2\;\mathbb{E}(\delta^{l+1})^2`
    (Schoenholz et al. 2017, eq. 14; Xiao et al. 2018 eq. 2.16), so

    .. math:: \frac{\tilde q^l}{\tilde q^L} = \prod_{k=l}^{L-1} \sigma_w^2\,\mathbb{E}\,\phi'(\sqrt{q^k}z)^2
        \;\to\; \chi_1^{L-l} \text{ at the fixed point.}

    Parameters
    ----------
    q0 : float
        Pre-activation variance of layer 1 (>= 0, finite); ``q^{l+1} = qmap(q^l)`` (carried on a
        log scale: any depth). The state comes first, as in :func:`qmap` and :func:`propagate`.
    activation : str or Activation
        A built-in activation.
    sigma_w2, sigma_b2 : float
        Variances (>= 0), scalars.
    depth : int
        L, the number of layers (1 <= L <= 10^7 + 1).
    log : bool
        Return the natural log of the ratio (never overflows or underflows).
    degree : int
        Gauss-Hermite degree for activations without closed forms.

    Returns
    -------
    ndarray, shape (depth,)
        Entry l - 1 is the ratio for layer l = 1..L (the last entry is 1, or 0 with ``log``). With
        ``log=True`` an entry is ``-inf`` exactly where the ratio is exactly 0 (sigma_w2 = 0).

    Raises
    ------
    ValueError
        Bad arguments; with ``log=False``, a ratio beyond the float64 range (overflow, or a
        non-zero ratio below the smallest normal float): pass ``log=True``.
    TypeError
        Complex, boolean or array variances; ``log`` not a bool.
    """
    act = _act(activation)
    log = check_bool(log, "log")
    depth = check_int(depth, "depth", 1, MAX_DEPTH + 1)
    q0 = check_nonnegative_scalar(q0, "q0")
    sigma_w2, sigma_b2 = _variances(sigma_w2, sigma_b2)
    traj = propagate_log(np.array([[q0]]), act, sigma_w2, sigma_b2, depth - 1, degree)
    logs = _log_chi1_along(act, sigma_w2, traj.log_q[:, 0], degree)
    # suffix sums: log ratio at l = sum_{k=l}^{L-1} log chi(q^k)
    log_ratio = np.concatenate([np.cumsum(logs[:-1][::-1])[::-1], [0.0]])
    if log:
        return log_ratio
    finite = np.isfinite(log_ratio)
    if np.any(log_ratio[finite] > LOG_DBL_MAX) or np.any(log_ratio[finite] < LOG_DBL_MIN):
        raise ValueError(
            "the gradient-variance ratio leaves the normal float64 range at this depth (overflow or "
            "underflow): pass log=True"
        )
    with np.errstate(under="ignore"):
        return np.exp(log_ratio)
