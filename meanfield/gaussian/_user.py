"""The NumPy quadrature of user-defined activations (:meth:`meanfield.activations.Activation.from_functions`), on the nodes of the same rule builder; piecewise rules for activations with breakpoints."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from ..activations import call_user
from ._rules import (
    GH_MAX_SCALE,
    TRAPEZOID_MAX_SCALE,
    TRAPEZOID_ZMAX,
    _inner_rules,
    _outer_features,
    _rule_capacity,
    _rule_nodes,
)

_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _user_values(act, order, u):
    return call_user(act.derivative(order), u, ("phi", "dphi", "d2phi")[order], act.name)


#: Offset at which the one-sided derivatives of a user activation at a kink are evaluated.
_ONE_SIDED = 1e-300
#: Largest number of nodes the NumPy path of a user activation evaluates in one call.
_USER_CHUNK = 1 << 20


def _custom_pair(act, d1, d2, q1, q2, c, z, w):
    """NumPy path for user-defined activations, on the nodes the kernels use (see :func:`pair_value`)."""
    out = np.empty_like(q1)
    for k in range(q1.size):
        s1, s2, ck = math.sqrt(q1[k]), math.sqrt(q2[k]), min(1.0, max(-1.0, c[k]))
        sc = s2 * ck
        ss = s2 * math.sqrt(max(0.0, 1.0 - ck * ck))
        outer = max(s1, abs(sc))
        graded = outer > TRAPEZOID_MAX_SCALE or ss > TRAPEZOID_MAX_SCALE
        allow_gh = graded or (outer <= GH_MAX_SCALE and ss <= GH_MAX_SCALE)
        hw_extra, tail_extra, tail1 = _outer_features(s1, sc, ss, False)
        z1, w1 = _rule_nodes(outer, 0.0, allow_gh, tail1, hw_extra, tail_extra, z, w)
        f1 = _user_values(act, d1, s1 * z1)
        base = sc * z1
        if ss == 0.0:
            inner = _user_values(act, d2, base)
        elif not graded or ss <= TRAPEZOID_MAX_SCALE:
            z2, w2 = _rule_nodes(ss, 0.0, allow_gh, 0.0, 0.0, 0.0, z, w)
            inner = _user_values(act, d2, base[:, None] + ss * z2[None, :]) @ w2
        else:  # inner rules graded at the z2 where u2 = 0, one per outer node (chunked: memory)
            inner = np.empty(base.size)
            per_node = _rule_capacity(ss, 0.0, z.size)
            step = max(1, _USER_CHUNK // per_node)
            for lo in range(0, base.size, step):
                chunk = base[lo : lo + step]
                counts, z2, w2 = _inner_rules(ss, chunk, 0.0, z, w)
                vals = _user_values(act, d2, np.repeat(chunk, counts) + ss * z2) * w2
                inner[lo : lo + step] = np.add.reduceat(vals, np.concatenate(([0], np.cumsum(counts)[:-1])))
        out[k] = np.dot(w1, f1 * inner)
    return out


# ----------------------------------------------------------------------------------------------
# User activations with kinks or jumps (Activation.breakpoints): piecewise Gauss-Legendre rules.


def piecewise_panel_nodes(degree: int) -> int:
    """Gauss-Legendre nodes per panel of the piecewise rule of a kinked user activation at ``degree``.

    ``degree // 5`` clipped to [4, 200] (20 at the default degree 100): a larger degree refines
    every panel, so the result converges as ``degree`` grows.
    """
    return max(4, min(200, degree // 5))


@lru_cache(maxsize=64)
def _legendre(n):
    return np.polynomial.legendre.leggauss(n)


def _graded_offsets(hw):
    """0, +-hw 2^k below 1 (hw < 1): offsets of panel edges graded towards a feature."""
    d = [0.0]
    while hw < 1.0:
        d += [-hw, hw]
        hw *= 2.0
    return d


def _piecewise_rules(scale, mus, features, n):
    """Nodes z and weights w, shape (len(mus), P), with w[i] @ f(mus[i] + scale z[i]) ~ E f(mus[i] + scale Z).

    ``features`` lists ``(u, hw_u)``: points u where f has a kink or jump, or varies on the width
    hw_u in u. Panel edges: the integers on |z| <= TRAPEZOID_ZMAX, each feature's point (an edge:
    f is integrated piecewise between kinks) and edges graded geometrically (ratio 2) towards it
    from the half-width hw_u / scale up to 1; ``n`` Gauss-Legendre nodes per panel (edges beyond
    the range collapse into empty panels). Between the edges f is assumed smooth, so each panel
    converges spectrally in ``n``.
    """
    mus = np.atleast_1d(np.asarray(mus, dtype=np.float64))
    lim = TRAPEZOID_ZMAX
    if scale == 0.0:
        return np.zeros((mus.size, 1)), np.ones((mus.size, 1))
    cols = [np.broadcast_to(np.arange(-lim, lim + 1.0), (mus.size, 2 * int(lim) + 1))]
    for u, hw_u in features:
        off = np.asarray(_graded_offsets(max(hw_u / scale, 1e-12)))
        zc = (u - mus) / scale
        cols.append(zc[:, None] + off[None, :])
    e = np.sort(np.clip(np.concatenate(cols, axis=1), -lim, lim), axis=1)
    x, wl = _legendre(n)
    mid = 0.5 * (e[:, 1:] + e[:, :-1])
    half = 0.5 * (e[:, 1:] - e[:, :-1])
    z = (mid[:, :, None] + half[:, :, None] * x).reshape(mus.size, -1)
    w = (half[:, :, None] * wl).reshape(mus.size, -1) * _INV_SQRT_2PI * np.exp(-0.5 * z * z)
    return z, w


def _kink_features(act):
    """(u, half-width) of the features of a kinked user activation for :func:`_piecewise_rules`:
    u = 0 and its breakpoints, each with the unit-width structure the rules of the built-ins assume."""
    return [(0.0, 0.5)] + [(float(b), 0.5) for b in act.breakpoints if b != 0.0]


def _piecewise_single(act, d1, d2, q, degree, weight_z=False):
    n = piecewise_panel_nodes(degree)
    out = np.empty_like(q)
    for k, qk in enumerate(q):
        s = math.sqrt(qk)
        z, w = _piecewise_rules(s, 0.0, _kink_features(act), n)
        z, w = z[0], w[0]
        u = s * z
        with np.errstate(over="ignore", invalid="ignore"):
            vals = _user_values(act, d1, u) * _user_values(act, d2, u)
            out[k] = (w * z) @ vals / s if weight_z else w @ vals
    return out


def _piecewise_pair(act, d1, d2, q1, q2, c, degree):
    """E phi^(d1)(u1) phi^(d2)(u2) of a kinked user activation: the outer rule on z1 cut at the
    breakpoints of phi^(d1)(s1 z1) and graded at those of the smoothed factor E phi^(d2)(sc z1 + ss Z2)
    (width ss), inner rules on z2 cut at the breakpoints of phi^(d2), one per outer node."""
    n = piecewise_panel_nodes(degree)
    out = np.empty_like(q1)
    feats = _kink_features(act)
    for k in range(q1.size):
        s1, s2, ck = math.sqrt(q1[k]), math.sqrt(q2[k]), min(1.0, max(-1.0, c[k]))
        sc = s2 * ck
        ss = s2 * math.sqrt(max(0.0, (1.0 - ck) * (1.0 + ck)))
        outer = s1 if s1 > 0.0 else 1.0
        ofeats = list(feats) if s1 > 0.0 else []
        if sc != 0.0:  # the factor's features, at sc z1 = u, i.e. at outer * u / sc in units of outer z1
            rel = outer / sc
            # smoothed by the inner Gaussian, a kink of the factor has the width ss (for ss = 0 it is
            # an edge, next to the activation's own structure of unit width)
            ofeats += [(u * rel, (0.5 * ss if ss > 0.0 else hw) * abs(rel)) for u, hw in feats]
        z1, w1 = _piecewise_rules(outer, 0.0, ofeats, n)
        z1, w1 = z1[0], w1[0]
        with np.errstate(over="ignore", invalid="ignore"):
            f1 = _user_values(act, d1, s1 * z1)
            base = sc * z1
            if ss == 0.0:
                inner = _user_values(act, d2, base)
            else:
                z2, w2 = _piecewise_rules(ss, base, feats, n)
                used = w2 != 0.0  # nodes of collapsed panels (edges beyond |z| = 9) are not evaluated
                vals = np.zeros_like(z2)
                vals[used] = _user_values(act, d2, (base[:, None] + ss * z2)[used])
                inner = np.sum(w2 * vals, axis=1)
            out[k] = np.dot(w1, f1 * inner)
    return out
