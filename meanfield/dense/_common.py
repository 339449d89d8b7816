"""Constants and argument helpers shared by the modules of :mod:`meanfield.dense`."""

from __future__ import annotations

from .._checks import check_nonnegative_scalar
from ..activations import get_activation

#: |chi_1 - 1| below which a point is called critical.
CRITICAL_ATOL = 1e-9
#: Relative tolerance of the fixed-point solvers (the map is satisfied to ~1e-15 relative).
SOLVER_RTOL = 4e-16
#: q from which the asymptotic slope of the q-map decides divergence (q* = inf): the ReLU-like
#: activations differ from their asymptote's second moment by O(q^{-1/2}) relative there.
Q_ASYMPTOTIC = 1e6
#: Largest q the q* scan visits by doubling; a q-map still above the diagonal there has q* = inf
#: when its asymptotic slope is >= 1, q* in [Q_SCAN_MAX, sigma_w2 + sigma_b2] for bounded
#: activations, and q* beyond the float64 range otherwise (a ValueError).
Q_SCAN_MAX = 1e307
#: Kept for compatibility: q above which q* counts as infinite.
Q_INFINITY = 1e300
#: Probe of the sign of g just above q = 0 when the slope there is exactly 1 (power-law regime).
_Q_PROBE = 1e-3
#: First scan point when q = 0 is an unstable fixed point.
_Q_START_UNSTABLE = 1e-6


def _act(activation):
    return get_activation(activation)


def _require_builtin(act, what):
    if not act.is_builtin:
        raise ValueError(
            f"{what} runs in compiled kernels and needs a built-in activation; "
            f"{act.name!r} is user-defined (use covariance_map / qmap / cmap, which accept it)"
        )


def _variances(sigma_w2, sigma_b2):
    return check_nonnegative_scalar(sigma_w2, "sigma_w2"), check_nonnegative_scalar(sigma_b2, "sigma_b2")
