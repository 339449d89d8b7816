r"""tanh's bivariate moments at one variance in one pass over the nodes, without a tanh per node.

The c* solver of :func:`meanfield.dense.fixed_point` and :func:`meanfield.dense.phase_diagram`
needs, at every Newton step on the c-map, the two bivariate expectations at equal variances
:math:`q_1 = q_2 = q = s^2` and correlation c

.. math::

    m_0 = \mathbb{E}\,\tanh(u_1)\tanh(u_2), \qquad m_1 = \mathbb{E}\,\tanh'(u_1)\tanh'(u_2),
    \qquad u_1 = s z_1,\; u_2 = s (c z_1 + \sqrt{1 - c^2}\, z_2),

(the residual of the c-map and its slope; Xiao et al. 2018, eqs. 2.5-2.7; Poole et al. 2016, eq. 5).
:func:`meanfield.gaussian.pair_quadrature` integrates each with its own pass and one
``math.tanh`` per node: ~10^4 tanh evaluations per expectation at q ~ 2 (a profile of
the 100 x 100 phase diagram). :func:`tanh_pair_moments` gives both from **one** pass **on the
same nodes and weights** (the trapezoid rule of step ``TRAPEZOID_STEP / max(scale, 1)`` on
:math:`|z| \le` ``TRAPEZOID_ZMAX`` + one step, the half-plane of the even integrands, as
there), and takes tanh of the sum :math:`u_2 = s c z_{1,i} + s\sqrt{1 - c^2} z_{2,j}` from
products of exponentials computed once per node of each axis:

.. math::

    P = e^{2 s c z_{1,i}}\, e^{2 s\sqrt{1 - c^2} z_{2,j}}, \quad r = \frac{1}{1 + P}, \quad
    \tanh(u_2) = (P - 1)\, r, \quad \tanh'(u_2) = 1 - \tanh^2(u_2) = 4 P r^2,

so the inner loop has one multiplication, one division and a few multiply-adds per node and no
transcendental function. The rounding of P (relative <= 3 eps) moves tanh by at most
2 P r^2 * 3 eps <= 1.5 eps (absolute) and tanh' by ~9 eps (relative): the moments differ from the
per-node ``math.tanh`` ones by rounding (``tests/theory/test_phase_diagram_tanh.py``). The exponents stay below
2 * 3 * 9.25 = 55.5 per axis (scale <= 3): no overflow. The other rules of ``pair_quadrature``
are left to it (the caller falls back on NaN): the graded rule (scales > 3) is rare, and at
small q (Gauss-Hermite, every scale <= 0.5) the absolute error ~eps of P - 1 would be a relative
error ~eps / sqrt(q) of the moments, which the c-map divides by q.

:func:`tanh_variance_moments` is the same idea for the q* solver's two one-dimensional integrals
(E tanh^2 and its q-derivative): one ``math.tanh`` and one Gaussian weight per node for both,
instead of four and two, in the operation order of ``single_quadrature`` and
``variance_derivative_quadrature``, so its values are bit-identical to theirs.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .gaussian import GH_MAX_SCALE, TRAPEZOID_MAX_SCALE, TRAPEZOID_STEP, TRAPEZOID_ZMAX

_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


@numba.njit(inline="always")
def _step(scale):
    """The trapezoid step of :mod:`meanfield.gaussian` (resolves unit-width features in u)."""
    return TRAPEZOID_STEP / max(scale, 1.0)


@numba.njit(inline="always")
def _inner(a_exp, b_exp, wb, n):
    """(sum_j wb_j tanh(u_j + base), sum_j wb_j tanh'(u_j + base) / 4) with a_exp = e^{2 base}, b_exp_j = e^{2 u_j}."""
    t_acc = 0.0
    d_acc = 0.0
    for j in range(n):
        p = a_exp * b_exp[j]
        r = 1.0 / (1.0 + p)
        t_acc += wb[j] * ((p - 1.0) * r)
        d_acc += wb[j] * (p * r * r)
    return t_acc, d_acc


@numba.njit(cache=True)
def tanh_pair_moments(q, c, z, w):
    """``(m0, m1)`` = (E tanh(u1) tanh(u2), E tanh'(u1) tanh'(u2)) at variances q, q and correlation c.

    Same nodes and weights as the trapezoid branch of :func:`meanfield.gaussian.pair_quadrature`
    (module notes). ``(nan, nan)`` where that function would use another rule (Gauss-Hermite:
    every scale <= ``GH_MAX_SCALE``; graded: a scale > ``TRAPEZOID_MAX_SCALE``), at c = +-1 and
    for ``z`` None (a closed-form family's kernel): the caller then uses ``pair_quadrature``.
    q >= 0 finite, c clipped to [-1, 1].
    """
    if z is None:  # a closed-form family's kernel (pruned at compile time: nothing else compiled)
        return math.nan, math.nan
    s = math.sqrt(q)
    c = min(1.0, max(-1.0, c))
    sc = s * c
    ss = s * math.sqrt(max(0.0, 1.0 - c * c))
    outer_scale = max(s, abs(sc))
    if not (outer_scale <= TRAPEZOID_MAX_SCALE and ss <= TRAPEZOID_MAX_SCALE):
        return math.nan, math.nan  # the graded rule
    if (outer_scale <= GH_MAX_SCALE and ss <= GH_MAX_SCALE) or ss == 0.0:
        return math.nan, math.nan  # Gauss-Hermite (small q; see the module notes) or c = +-1
    h1 = _step(outer_scale)
    h2 = _step(ss)
    k1 = int(TRAPEZOID_ZMAX / h1) + 1
    k2 = int(TRAPEZOID_ZMAX / h2) + 1
    n2 = 2 * k2 + 1
    b_exp = np.empty(n2)
    w2 = np.empty(n2)
    for j in range(-k2, k2 + 1):
        zj = j * h2
        b_exp[j + k2] = math.exp(2.0 * (ss * zj))
        w2[j + k2] = h2 * _INV_SQRT_2PI * math.exp(-0.5 * zj * zj)
    acc0 = 0.0
    acc1 = 0.0
    for i in range(0, k1 + 1):
        zi = i * h1
        wi = h1 * _INV_SQRT_2PI * math.exp(-0.5 * zi * zi)
        if i > 0:
            wi *= 2.0
        p1 = math.exp(2.0 * (s * zi))
        r1 = 1.0 / (1.0 + p1)
        t_in, d_in = _inner(math.exp(2.0 * (sc * zi)), b_exp, w2, n2)
        acc0 += wi * ((p1 - 1.0) * r1) * t_in
        acc1 += wi * (4.0 * p1 * r1 * r1) * (4.0 * d_in)
    return acc0, acc1


@numba.njit(cache=True)
def tanh_variance_moments(q, z, w):
    r"""``(E tanh(u)^2, d/dq E tanh(u)^2)``, u ~ N(0, q): the q-map and its slope in one pass.

    The two integrals of a Newton step of the q* solver (:func:`meanfield.dense._g`), on the
    nodes, weights and operation order of :func:`meanfield.gaussian.single_quadrature` and
    :func:`meanfield.gaussian.variance_derivative_quadrature` (the latter is
    :math:`\mathbb{E}[z \tanh(u) \tanh'(u)] / \sqrt q`, Stein's lemma), with one ``math.tanh``
    per node for both instead of four, and one Gaussian weight instead of two: the results are
    bit-identical to theirs. q > 0 finite; ``(nan, nan)`` at q = 0 and beyond
    ``TRAPEZOID_MAX_SCALE`` (the graded rule), where the caller uses those functions.
    """
    if z is None:  # a closed-form family's kernel (pruned at compile time)
        return math.nan, math.nan
    s = math.sqrt(q)
    acc0 = 0.0
    acc1 = 0.0
    if not (0.0 < s <= TRAPEZOID_MAX_SCALE):
        return math.nan, math.nan
    if s <= GH_MAX_SCALE:
        for i in range(z.size):
            t = math.tanh(s * z[i])
            acc0 += w[i] * t * t
            acc1 += w[i] * z[i] * t * (1.0 - t * t)
        return acc0, acc1 / s
    h = _step(s)
    k = int(TRAPEZOID_ZMAX / h) + 1
    for i in range(-k, k + 1):
        zi = i * h
        t = math.tanh(s * zi)
        weight = h * _INV_SQRT_2PI * math.exp(-0.5 * zi * zi)
        acc0 += weight * t * t
        acc1 += weight * zi * t * (1.0 - t * t)
    return acc0, acc1 / s
