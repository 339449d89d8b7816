"""Shared private helpers of :mod:`meanfield.landscape`: architecture names and the flow integrator.

The gradient flows of :func:`~meanfield.landscape.three_layer_flow` (Orhan 2017, eqs. 11-18) and
:func:`~meanfield.landscape.mode_flow` (eqs. 21-23) are integrated by :func:`_integrate` (LSODA
through ``scipy.integrate.solve_ivp``) under one evaluation budget, :data:`MAX_FLOW_EVALUATIONS`,
defined here and read at each call from the public package (``meanfield.landscape.MAX_FLOW_EVALUATIONS``,
the documented name to change or patch).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import numpy as np
from numpy.typing import ArrayLike

from .._checks import as_float_array, check_int, check_scalar

#: Largest number of unknowns of an integrated flow (:func:`mode_flow`, :func:`three_layer_flow`):
#: LSODA's stiff steps factorise a dense Jacobian of this size.
MAX_FLOW_DIMENSION = 512


#: Right-hand-side evaluations after which a flow integration is abandoned: an integration that
#: needs more spans too many characteristic times of the flow (e.g. a time grid of spacing 1e-300,
#: or a target ``s = 1e300``) and would not finish in reasonable time (50 000 evaluations take
#: 1-5 s). The paper's flows need at most 625 (Figs. 5 and 6 at full size, measured).
MAX_FLOW_EVALUATIONS = 50_000


def _check_architecture(architecture: object, allowed: Iterable[str]) -> str:
    if not isinstance(architecture, str):
        raise TypeError(f"architecture must be a str, one of {list(allowed)}, got {type(architecture).__name__}")
    if architecture not in allowed:
        raise ValueError(f"architecture must be one of {list(allowed)}, got {architecture!r}")
    return architecture


def _int(n: object, name: str, minimum: int | None = None, maximum: int | None = None) -> int:
    """:func:`meanfield._checks.check_int`, with complex numbers a ``TypeError`` (the library's rule)."""
    if isinstance(n, (complex, np.complexfloating)) or (isinstance(n, np.ndarray) and n.dtype.kind == "c"):
        raise TypeError(f"{name} must be an integer, got the complex {n!r}")
    return check_int(n, name, minimum, maximum)


class _FlowBudgetExceeded(Exception):
    """Raised inside a right-hand side when :data:`MAX_FLOW_EVALUATIONS` is exhausted."""


def _sample_rows(x: object, name: str, symbol: str) -> np.ndarray:
    """``x`` as a finite float64 ``(P, symbol)`` array with ``P, symbol >= 1`` (one row per input);
    errors name ``name``."""
    h = as_float_array(x, name)
    if h.ndim != 2 or h.shape[0] < 1 or h.shape[1] < 1:
        raise ValueError(f"{name} must have shape (P, {symbol}) with P, {symbol} >= 1, got shape {h.shape}")
    return h


def _square_matrices(mats: Iterable[object], name: str, n: int, symbol: str, suffix: str = "") -> list[np.ndarray]:
    """Each entry of ``mats`` as a finite float64 ``(n, n)`` array; errors name ``name[i]`` and the shape
    ``(symbol, symbol)``, followed by ``suffix``."""
    out = []
    for i, w in enumerate(mats):
        w = as_float_array(w, f"{name}[{i}]")
        if w.shape != (n, n):
            raise ValueError(f"{name}[{i}] must have shape ({symbol}, {symbol}) = {(n, n)}{suffix}, got {w.shape}")
        out.append(w)
    return out


def _check_tolerances(rtol: object, atol: object) -> tuple[float, float]:
    rtol = check_scalar(rtol, "rtol")
    if not 0.0 < rtol < 1.0:
        raise ValueError(f"rtol must lie in (0, 1), got {rtol!r}")
    atol = check_scalar(atol, "atol")
    if not atol > 0.0:
        raise ValueError(f"atol must be a finite number > 0, got {atol!r}")
    return rtol, atol


def _check_times(t: ArrayLike) -> np.ndarray:
    t = as_float_array(t, "t")
    if t.ndim != 1 or t.size < 2 or np.any(np.diff(t) <= 0):
        raise ValueError("t must be a strictly increasing 1-D array of at least 2 finite times")
    if t.size > 10**6:
        raise ValueError(f"t must hold at most 10^6 output times, got {t.size}")
    with np.errstate(over="ignore"):
        span = t[-1] - t[0]
    if not math.isfinite(span):
        raise ValueError(f"t must span a finite interval, got [{t[0]!r}, {t[-1]!r}]")
    return t


def _integrate(
    rhs: Callable[[np.ndarray], np.ndarray], y0: np.ndarray, t: np.ndarray, rtol: float, atol: float, scales: str
) -> np.ndarray:
    """Integrate ``dy/dt = rhs(y)`` with LSODA on the grid ``t``; returns ``y`` of shape (len(t), dim).

    Raises ``ValueError`` (naming ``t`` and the scales) when the integration needs more than
    :data:`MAX_FLOW_EVALUATIONS` right-hand sides, fails, or leaves the float64 range.
    """
    from scipy.integrate import solve_ivp

    from .. import landscape  # the public name, read at call time (the package re-exports this module's value)

    limit = landscape.MAX_FLOW_EVALUATIONS
    count = 0

    def counted(_, y):
        nonlocal count
        count += 1
        if count > limit:
            raise _FlowBudgetExceeded
        with np.errstate(over="ignore", invalid="ignore"):
            return rhs(y)

    try:
        sol = solve_ivp(counted, (t[0], t[-1]), y0, t_eval=t, method="LSODA", rtol=rtol, atol=atol)
    except _FlowBudgetExceeded:
        raise ValueError(
            f"t: integrating from {t[0]!r} to {t[-1]!r} needed more than {limit} "
            f"(MAX_FLOW_EVALUATIONS) right-hand-side evaluations: the span covers too many "
            f"characteristic times of the flow at these scales ({scales}); use a shorter or coarser "
            "time span, or values of moderate size"
        ) from None
    if not sol.success or sol.y.shape != (y0.size, t.size) or not np.all(np.isfinite(sol.y)):
        raise ValueError(
            f"t: the flow could not be integrated from {t[0]!r} to {t[-1]!r} at these scales ({scales}): "
            f"{sol.message if not sol.success else 'the solution left the float64 range'}; use a "
            "shorter time span or values of moderate size"
        )
    return sol.y.T
