"""The family-split kernels (cold start) give the numbers of the full rule, bit for bit.

The public wrappers ``gaussian.expectation`` / ``pair_expectation`` / ``variance_derivative`` and the
C-maps ``dense.covariance_map`` / ``derivative_covariance_map`` compile one activation family only
(the closed forms, or the quadrature; ``meanfield.gaussian.family_rule``): an entry whose closed form
is NaN is redone by quadrature. That is exactly what the full-rule scalar kernels
``gaussian.single_value`` / ``pair_value`` / ``variance_derivative_value`` do (closed form first,
quadrature where it is NaN), so every result must be *equal* to theirs -- same floating-point
operations, no tolerance. The grid reaches every quadrature regime (Gauss-Hermite below
sqrt(q) = 0.5, trapezoid up to 3, graded panels beyond) and every derivative order each built-in
allows, including orders where a closed-form family has no closed form (erf's (0, 2), elu's
(2, 2), ...), which exercise the quadrature fallback.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from meanfield import dense, gaussian
from meanfield.activations import ACTIVATIONS, get_activation

#: The parametrised built-ins at a non-default parameter.
NON_DEFAULT = {"leaky_relu": {"slope": 0.3}, "rbf": {"gamma": 1.7}, "relu_power": {"n": 3}, "elu": {"alpha": 0.4}}
#: Every built-in (in the order of ``ACTIVATIONS``), the parametrised ones at :data:`NON_DEFAULT`.
SETTINGS = [(name, NON_DEFAULT.get(name, {})) for name in ACTIVATIONS]
#: One variance per quadrature regime (GH, trapezoid, graded, graded far out) and q = 0.
Q = np.array([0.0, 0.04, 2.0, 40.0, 1e8])
C = np.array([-0.9, 0.0, 0.6, 1.0])
DEGREE = gaussian.DEFAULT_DEGREE


def _orders(act):
    orders = [(0, 0), (0, 1), (1, 1)]
    if act.smooth or act.name == "linear":
        orders += [(0, 2), (1, 2), (2, 2)]
    return orders


def _reference(f, *columns):
    """The full-rule scalar kernel entry by entry (closed form, quadrature where it is NaN)."""
    return np.array([f(*row) for row in zip(*columns)])


def _ids(settings):
    return [f"{n}{p or ''}" for n, p in settings]


@pytest.mark.parametrize(("name", "params"), SETTINGS, ids=_ids(SETTINGS))
def test_gaussian_wrappers_equal_full_rule(name, params):
    act = get_activation(name, **params)
    z, w = gaussian.kernel_rule(DEGREE)
    qq, cc = (x.ravel() for x in np.meshgrid(Q[1:], C, indexing="ij"))
    q2 = 1.7 * qq[::-1]
    for d1, d2 in _orders(act):
        ref1 = _reference(lambda q: gaussian.single_value(act.code, act.param, d1, d2, q, z, w), Q)
        ref2 = _reference(lambda a, b, c: gaussian.pair_value(act.code, act.param, d1, d2, a, b, c, z, w), qq, q2, cc)
        for ref, call in (
            (ref1, lambda: gaussian.expectation(act, Q, (d1, d2))),
            (ref2, lambda: gaussian.pair_expectation(act, qq, q2, cc, (d1, d2))),
        ):
            if np.all(np.isfinite(ref)):
                np.testing.assert_array_equal(call(), ref, err_msg=f"{name} orders {(d1, d2)}")
            else:  # the wrappers refuse non-finite results (sign' at q1 = q2, c = 1, exp at q = 1e8)
                with pytest.raises(ValueError, match="not finite"):
                    call()
    ref = _reference(lambda q: gaussian.variance_derivative_value(act.code, act.param, q, z, w), Q)
    if np.all(np.isfinite(ref)):
        np.testing.assert_array_equal(gaussian.variance_derivative(act, Q), ref)


@pytest.mark.parametrize(("name", "params"), SETTINGS, ids=_ids(SETTINGS))
def test_covariance_maps_equal_full_rule(name, params):
    act = get_activation(name, **params)
    z, w = gaussian.kernel_rule(DEGREE)
    base = np.array([[1.0, 0.4, -0.2], [0.4, 0.7, 0.3], [-0.2, 0.3, 1.3]])
    covs = np.stack([base * s for s in (0.01, 1.0, 30.0)])
    sw, sb = 1.3, 0.1
    for d, bias in ((0, sb), (1, 0.0)):
        ref = np.empty_like(covs)
        for m, cov in enumerate(covs):
            s = np.sqrt(np.diag(cov))
            for i in range(3):
                for j in range(3):
                    if i == j:
                        v = gaussian.single_value(act.code, act.param, d, d, cov[i, i], z, w)
                    else:
                        c = min(1.0, max(-1.0, cov[i, j] / (s[i] * s[j])))
                        lo, hi = min(i, j), max(i, j)  # the kernel integrates (q_lo, q_hi) in this order
                        v = gaussian.pair_value(act.code, act.param, d, d, cov[lo, lo], cov[hi, hi], c, z, w)
                    ref[m, i, j] = sw * v + bias
        if d == 0:
            got = lambda: dense.covariance_map(covs, act, sw, sb)  # noqa: E731
        else:
            got = lambda: dense.derivative_covariance_map(covs, act, sw)  # noqa: E731
        if np.all(np.isfinite(ref)):
            np.testing.assert_array_equal(got(), ref, err_msg=f"{name} order {d}")
        else:
            with pytest.raises(ValueError):
                got()


def test_family_rule_compiles_one_family():
    """The quadrature-only built-ins have no closed form anywhere (the reason their kernels skip it)."""
    for name in ("tanh", "sigmoid", "softplus", "swish"):
        act = get_activation(name)
        z, _w, cf = gaussian.family_rule(act, DEGREE)
        assert z is not None and cf is None
        for d1, d2 in _orders(act):
            for q in Q:
                assert math.isnan(gaussian.closed_single_value(act.code, act.param, d1, d2, q))
                for c in C:
                    assert math.isnan(gaussian.closed_pair_value(act.code, act.param, d1, d2, q, 2 * q, c))
        assert math.isnan(gaussian.closed_variance_derivative_value(act.code, act.param, 1.0))
    for name, params in SETTINGS:
        act = get_activation(name, **params)
        if act.code not in gaussian.QUADRATURE_ONLY:
            z, _w, cf = gaussian.family_rule(act, DEGREE)
            assert z is None
            assert type(cf) is (float if act.code in gaussian.CORE_CLOSED else bool)
