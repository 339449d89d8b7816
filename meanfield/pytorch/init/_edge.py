"""The edge of chaos of any activation: the critical ``sigma_w2`` and the fixed point the signal reaches."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ... import dense
from ..._checks import check_nonnegative_scalar
from ..._results import Result
from ...activations import Activation
from ...gaussian import expectation
from .._activations import resolve_activation
from .._torch import require_torch

torch = require_torch()


def _user_q_star(act: Activation, sigma_w2: float, sigma_b2: float) -> float:
    """q* of a user-defined activation by iterating the q-map (at most 4000 steps)."""
    q = 1.0
    for _ in range(4000):
        new = dense.qmap(q, act, sigma_w2, sigma_b2)
        if not math.isfinite(new) or new > 1e12:
            return math.inf
        if abs(new - q) <= 1e-14 * max(1.0, q):
            return float(new)
        q = float(new)
    return q


#: Edge-of-chaos values of built-in activations already solved: (name, param, sigma_b2) -> sigma_w2.
_CRITICAL_CACHE: dict = {}


def _builtin_critical(act: Activation, sigma_b2: float) -> float:
    key = (act.name, act.param, sigma_b2)
    if key not in _CRITICAL_CACHE:
        if len(_CRITICAL_CACHE) > 1024:
            _CRITICAL_CACHE.clear()
        _CRITICAL_CACHE[key] = float(dense.critical_sigma_w2(act, sigma_b2))
    return _CRITICAL_CACHE[key]


#: Activations whose chi_1 does not depend on q (positively homogeneous): the edge of chaos is
#: ``sigma_w2 = 1 / E phi'^2`` at every q.
_HOMOGENEOUS = ("relu", "linear", "leaky_relu")


@dataclass(frozen=True)
class EdgeOfChaos(Result):
    """A critical point of the dense q-map (:func:`edge_of_chaos`).

    Attributes
    ----------
    activation : str
    sigma_w2, sigma_b2 : float
        The variances; chi_1 = sigma_w2 E phi'(sqrt(q*) z)^2 = 1.
    q_star : float
        The fixed point q* = sigma_w2 E phi(sqrt(q*) z)^2 + sigma_b2 the signal settles at (0 for an
        odd activation at sigma_b2 = 0; ``inf`` for ReLU-like activations, critical at every q).
    chi_1 : float
        At q*.
    method : str
        ``"closed form"`` (linear), ``"dense.critical_sigma_w2"``, ``"iterated q-map"`` or
        ``"nontrivial fixed point"``.
    chi_q : float or None
        Slope of the q-map at q* (< 1: real inputs converge to q*, over ``-1 / ln(chi_q)``
        layers); ``None`` where not computed.
    """

    activation: str
    sigma_w2: float
    sigma_b2: float
    q_star: float
    chi_1: float
    method: str
    chi_q: float | None = None


def _moments(act: Activation, q: float) -> tuple[float, float]:
    """(E phi(sqrt(q) z)^2, E phi'(sqrt(q) z)^2)."""
    return float(expectation(act, q, (0, 0))), float(expectation(act, q, (1, 1)))


def _bias_at(act: Activation, q: float) -> float:
    """The sigma_b2 for which q is a critical fixed point: ``q - E phi^2 / E phi'^2``."""
    e0, e1 = _moments(act, q)
    return q - e0 / e1


def _is_odd(act: Activation) -> bool:
    x = np.array([0.3, 0.9, 1.7, 3.1])
    with np.errstate(all="ignore"):
        return bool(np.allclose(np.asarray(act.phi(-x)), -np.asarray(act.phi(x)), rtol=1e-12, atol=1e-14))


#: q grid on which the critical curve (sigma_w2(q), sigma_b2(q)) is bracketed.
_Q_GRID = np.geomspace(1e-4, 1e4, 81)


def _qmap_slope(act: Activation, q: float, sw: float) -> float:
    """d/dq of sigma_w2 E phi(sqrt(q) z)^2 (central difference, relative step 1e-4)."""
    h = 1e-4 * q
    return sw * (_moments(act, q + h)[0] - _moments(act, q - h)[0]) / (2 * h)


def _stable_curve(act: Activation) -> tuple[float, float, float] | None:
    """(sigma_b2, q*, sigma_w2) of the smallest q* on the grid from which the critical fixed point is
    stable (q-map slope < 1) with sigma_b2 >= 0; ``None`` when there is none."""
    for q in _Q_GRID:
        q = float(q)
        with np.errstate(all="ignore"):
            e0, e1 = _moments(act, q)
        if not (math.isfinite(e0) and math.isfinite(e1)) or e1 <= 0:
            continue
        sw = 1.0 / e1
        sb = q - e0 * sw
        if sb >= 0 and _qmap_slope(act, q, sw) < 1.0:
            return sb, q, sw
    return None


def _nontrivial_point(act: Activation, sigma_b2: float) -> EdgeOfChaos:
    """Solve ``q - E phi^2(q) / E phi'^2(q) = sigma_b2`` for q* > 0 (Brent), sigma_w2 = 1 / E phi'^2(q*),
    keeping the roots where the q-map is stable (slope < 1, so that real inputs reach q*); among
    several, the one nearest q = 1 (standardised data)."""
    from scipy.optimize import brentq

    qs = _Q_GRID
    with np.errstate(all="ignore"):
        f = np.array([_bias_at(act, float(q)) - sigma_b2 for q in qs])
    roots = []
    for i in range(len(qs) - 1):
        if np.isfinite(f[i]) and np.isfinite(f[i + 1]) and f[i] * f[i + 1] < 0:
            roots.append(brentq(lambda q: _bias_at(act, q) - sigma_b2, qs[i], qs[i + 1], xtol=1e-14, rtol=1e-12))
    found, unstable = [], []
    for q in roots:
        sw = 1.0 / _moments(act, q)[1]
        slope = _qmap_slope(act, q, sw)
        (found if slope < 1.0 else unstable).append((abs(math.log(q)), q, sw, slope))
    if not found:
        curve = _stable_curve(act)
        advice = (
            f"sigma_b2 >= {math.ceil(curve[0] * 1000) / 1000:.3g} gives a stable one (q* = {curve[1]:.3g}, "
            f"sigma_w2 = {curve[2]:.4g})"
            if curve is not None
            else "no sigma_b2 >= 0 gives a stable one for q* in [1e-4, 1e4]"
        )
        what = (
            f"only unstable ones (q* = {unstable[0][1]:.3g}, q-map slope {unstable[0][3]:.3f} > 1: real inputs "
            "drift away from it)"
            if unstable
            else "none with q* > 0"
        )
        raise ValueError(
            f"activation {act.name!r} has no stable edge of chaos at sigma_b2={sigma_b2:.6g}, {what}; {advice}"
        )
    _, q, sw, slope = min(found)
    chi_1 = float(sw * _moments(act, q)[1])
    return EdgeOfChaos(act.name, float(sw), sigma_b2, float(q), chi_1, "nontrivial fixed point", float(slope))


def stable_sigma_b2(activation: Any) -> float:
    """A bias variance at which ``activation`` has a stable edge of chaos: 0 where ``sigma_b2 = 0``
    has one, otherwise the first stable point of the 81-point q grid of :func:`edge_of_chaos`,
    rounded up to 1e-3. This is an upper bound on the smallest such ``sigma_b2``, not the
    smallest itself: GELU gets 0.186 where :func:`edge_of_chaos` accepts ``sigma_b2`` from about
    0.173, SiLU 0.591 where it accepts from about 0.556.

    Raises ``ValueError`` when the grid finds no stable point (softplus). For sigmoid
    (``phi(0) != 0``) it returns a grid estimate (2.094) that :func:`edge_of_chaos` may still
    refuse (``chi_1 = 1`` not crossed there).

    Examples
    --------
    >>> stable_sigma_b2("tanh"), stable_sigma_b2("gelu")
    (0.0, 0.186)
    """
    act = resolve_activation(activation)
    try:
        edge_of_chaos(act, 0.0)
        return 0.0
    except ValueError:
        pass
    curve = _stable_curve(act)
    if curve is None:
        raise ValueError(f"activation {act.name!r} has no stable edge of chaos for any sigma_b2 >= 0")
    return math.ceil(curve[0] * 1000) / 1000


def edge_of_chaos(activation: Any, sigma_b2: float = 0.0) -> EdgeOfChaos:
    """The edge of chaos (chi_1 = 1) at the fixed point q* that real inputs reach.

    Parameters
    ----------
    activation : str, Activation or torch.nn.Module
    sigma_b2 : float
        Bias variance (>= 0, finite).

    Returns
    -------
    EdgeOfChaos

    Raises
    ------
    ValueError
        No critical point with a stable q* > 0 at this ``sigma_b2``: the message names the
        smallest ``sigma_b2`` that has one (:func:`stable_sigma_b2`). GELU and SiLU at
        ``sigma_b2 = 0`` are such cases: their only critical point is q* = 0 with sigma_w2 = 4,
        which every real input leaves (for q >> 1 the q-map grows like sigma_w2 q / 2 = 2 q); at
        small ``sigma_b2 > 0`` their critical q* repels (q-map slope 1.07-1.10): GELU has a stable
        one from about ``sigma_b2 = 0.173`` (q* ~ 3.6), SiLU from about ``sigma_b2 = 0.556``
        (q* ~ 14).
    TypeError
        A bad ``activation`` or ``sigma_b2``.

    Notes
    -----
    chi_1 = sigma_w2 E phi'(sqrt(q*) z)^2 (Xiao et al. 2018, eq. 2.7; Schoenholz et al. 2017, eq. 5)
    together with the fixed point q* = sigma_w2 E phi(sqrt(q*) z)^2 + sigma_b2 (eq. 2.5) gives the
    one-parameter curve ``sigma_w2 = 1 / E phi'^2(q)``, ``sigma_b2 = q - E phi^2(q) / E phi'^2(q)``
    (Hayou, Doucet & Rousseau 2019). ReLU-like activations are critical at ``sigma_w2 = 1 / E phi'^2``
    for every q; an odd activation at ``sigma_b2 = 0`` is critical at q* = 0 (the q-map contracts
    to it); otherwise :func:`meanfield.dense.critical_sigma_w2` is kept where its fixed point has
    chi_1 = 1 and 0 < q* < inf, and the curve above is solved for q* where it has not (a jump of
    q* from 0 or to infinity).

    Examples
    --------
    >>> point = edge_of_chaos("gelu", 0.3)
    >>> round(point.chi_1, 9), point.q_star > 1, point.chi_q < 1
    (1.0, True, True)
    """
    act = resolve_activation(activation)
    sigma_b2 = check_nonnegative_scalar(sigma_b2, "sigma_b2")
    base = act.name.split("(")[0]
    if act.is_builtin and base == "linear":  # chi_1 = sigma_w2 exactly
        return EdgeOfChaos(act.name, 1.0, sigma_b2, math.inf, 1.0, "closed form")
    if act.is_builtin:
        sw = _builtin_critical(act, sigma_b2)
        if base in _HOMOGENEOUS or act.name.startswith("leaky_relu"):
            return EdgeOfChaos(act.name, sw, sigma_b2, math.inf, 1.0, "dense.critical_sigma_w2")
        try:
            fp = dense.fixed_point(act, sw, sigma_b2)
        except ValueError:
            fp = None
        if fp is not None and abs(fp.chi_1 - 1.0) < 1e-6:
            if 0.0 < fp.q_star < math.inf and fp.q_star > 1e-6:
                return EdgeOfChaos(act.name, sw, sigma_b2, float(fp.q_star), float(fp.chi_1), "dense.critical_sigma_w2")
            if fp.q_star <= 1e-6 and sigma_b2 == 0.0 and _is_odd(act):
                return EdgeOfChaos(act.name, sw, sigma_b2, 0.0, float(fp.chi_1), "dense.critical_sigma_w2")
    elif sigma_b2 == 0.0 and _is_odd(act):
        sw = _user_critical(act, sigma_b2)
        return EdgeOfChaos(act.name, sw, sigma_b2, 0.0, 1.0, "iterated q-map")
    return _nontrivial_point(act, sigma_b2)


def _user_critical(act: Activation, sigma_b2: float) -> float:
    from scipy.optimize import brentq

    def excess(sw):
        q = _user_q_star(act, sw, sigma_b2)
        if not math.isfinite(q):
            return 1.0
        return sw * float(expectation(act, q, (1, 1))) - 1.0

    lo, hi = 1e-6, 100.0
    if excess(lo) > 0 or excess(hi) < 0:
        raise ValueError(
            f"activation {act.name!r} has no edge of chaos for sigma_w2 in (1e-6, 100) at sigma_b2={sigma_b2}"
        )
    return float(brentq(excess, lo, hi, xtol=1e-13, rtol=1e-12, maxiter=200))


def critical_sigma_w2(activation: Any, sigma_b2: float = 0.0) -> float:
    """The weight variance at the edge of chaos (chi_1 = 1) for ``activation`` and ``sigma_b2``.

    ``edge_of_chaos(activation, sigma_b2).sigma_w2`` (:func:`edge_of_chaos`): the critical point
    at the fixed point q* that real inputs reach.

    Parameters
    ----------
    activation, sigma_b2
        As in :func:`edge_of_chaos`.

    Returns
    -------
    float
        ``sigma_w2 > 0``.

    Raises
    ------
    ValueError
        Negative or non-finite ``sigma_b2``; no edge of chaos with q* > 0 (GELU, SiLU at
        ``sigma_b2 = 0``: the message names a ``sigma_b2`` that has one).
    TypeError
        A bad ``activation`` or a non-real ``sigma_b2``.

    Notes
    -----
    Xiao et al. 2018, eq. 2.7 (chi_1); Schoenholz et al. (2017), eq. 5.
    """
    return edge_of_chaos(activation, sigma_b2).sigma_w2
