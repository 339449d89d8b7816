"""Closed-form Gaussian moments of elu / selu (meanfield.activations._closed_elu) and gelu's derivative orders
(0, 1), (0, 2), (1, 2), (2, 2) (meanfield.activations._closed_extended._gelu_mixed): against scipy's adaptive quadrature,
against Price's theorem by finite differences of a lower order, against Monte-Carlo, and finite
at extreme variances."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate
from test_closed_forms import QUAD_ATOL, quad_pair

from meanfield.activations import get_activation
from meanfield.closed_forms import QUAD_RTOL
from meanfield.gaussian import expectation, pair_expectation, variance_derivative

_SQ = 1.0 / math.sqrt(2.0 * math.pi)

#: Orders checked against nested adaptive quadrature (one off-diagonal point each: ~0.5 s a call).
PAIR_CASES = [
    ("elu", {}, [(0, 1), (1, 0), (0, 2), (2, 2), (1, 2)]),
    ("elu", {"alpha": 0.5}, [(0, 1)]),
    ("selu", {}, [(1, 0)]),
    ("gelu", {}, [(0, 1), (1, 0), (0, 2), (2, 2), (1, 2)]),
]


@pytest.mark.parametrize("name,params,orders", PAIR_CASES, ids=[f"{c[0]}{c[1]}" for c in PAIR_CASES])
def test_pair_moments_match_adaptive_quadrature(name, params, orders):
    act = get_activation(name, **params)
    for d in orders:
        q1, q2, c = 0.7, 2.3, -0.45
        ref = quad_pair(act, *d, q1, q2, c)
        assert pair_expectation(act, q1, q2, c, d) == pytest.approx(ref, rel=QUAD_RTOL, abs=QUAD_ATOL), d


def quad_single(act, d1, d2, q):
    """E phi^(d1)(u) phi^(d2)(u) by scipy.integrate.quad split at the kink u = 0."""
    f1, f2 = act.derivative(d1), act.derivative(d2)
    s = math.sqrt(q)

    def h(z):
        return float(f1(s * z)) * float(f2(s * z)) * _SQ * math.exp(-0.5 * z * z)

    kw = {"epsabs": 1e-15, "epsrel": 1e-13, "limit": 200}
    return integrate.quad(h, -12, 0, **kw)[0] + integrate.quad(h, 0, 12, **kw)[0]


@pytest.mark.parametrize("name,params", [("elu", {}), ("elu", {"alpha": 0.5}), ("selu", {}), ("gelu", {})])
def test_single_moments_match_adaptive_quadrature(name, params):
    act = get_activation(name, **params)
    orders = [(0, 0), (1, 1), (0, 1)] + ([(0, 2), (2, 2), (1, 2)] if act.smooth else [])
    # q below and above SINGLE_FORM_MIN_Q = 1e-3 (the graded integral vs the exp/erfcx form)
    for q in (1e-4, 0.3, 7.0):
        for d in orders:
            ref = quad_single(act, *d, q)
            assert expectation(act, q, d) == pytest.approx(ref, rel=QUAD_RTOL, abs=1e-14), (q, d)


@pytest.mark.parametrize("name,params", [("elu", {}), ("elu", {"alpha": 0.3}), ("selu", {})])
def test_variance_derivative_is_the_slope_of_the_second_moment(name, params):
    act = get_activation(name, **params)
    for q in (0.01, 0.4, 3.0):
        h = 1e-5 * q
        fd = (expectation(act, q + h) - expectation(act, q - h)) / (2 * h)
        # central difference: truncation ~ h^2 |f'''| ~ 1e-10 q^2, rounding ~ 1e-16 q / h = 1e-11
        assert variance_derivative(act, q) == pytest.approx(fd, rel=1e-6, abs=1e-8)
    # q -> 0: phi'(0)^2 + phi(0) phi''(0) with phi' taken as the mean of the one-sided limits squared
    lam, alpha = (1.0507009873554805, 1.6732632423543772) if name == "selu" else (1.0, act.param)
    assert variance_derivative(act, 0.0) == pytest.approx(lam**2 * (1 + alpha**2) / 2, rel=1e-15)


#: Relative accuracy of a central difference in c of a closed form with step H_C: truncation
#: ~ H_C^2 |d^3/dc^3| / 6 (~1e-9 here), rounding ~ 1e-16 / H_C (~1e-11).
PRICE_RTOL = 1e-7
H_C = 1e-4


@pytest.mark.parametrize("name,params", [("elu", {}), ("selu", {}), ("gelu", {})])
def test_price_theorem(name, params):
    # d/dk E f(u1) g(u2) = E f'(u1) g'(u2), k = c sqrt(q1 q2): links orders (0,0)->(1,1), (0,1)->(1,2), (1,1)->(2,2)
    act = get_activation(name, **params)
    q1, q2, c = 0.8, 1.9, 0.35
    pairs = [((0, 0), (1, 1)), ((0, 1), (1, 2))] if act.smooth else [((0, 0), (1, 1))]
    if act.smooth:
        pairs.append(((1, 1), (2, 2)))
    for low, high in pairs:
        fd = (pair_expectation(act, q1, q2, c + H_C, low) - pair_expectation(act, q1, q2, c - H_C, low)) / (
            2 * H_C * math.sqrt(q1 * q2)
        )
        assert pair_expectation(act, q1, q2, c, high) == pytest.approx(fd, rel=PRICE_RTOL, abs=1e-10), (low, high)


#: Monte-Carlo samples and the number of standard errors allowed (a 5-sigma two-sided bound: a
#: false failure rate ~6e-7 per comparison; the seed is fixed, so the test is deterministic).
MC_SAMPLES = 400_000
MC_SIGMAS = 5.0


def test_monte_carlo_agrees_with_the_closed_forms():
    rng = np.random.default_rng(20240917)
    q1, q2, c = 1.3, 0.6, 0.55
    z = rng.standard_normal((2, MC_SAMPLES))
    u1 = math.sqrt(q1) * z[0]
    u2 = math.sqrt(q2) * (c * z[0] + math.sqrt(1 - c * c) * z[1])
    for name, params, orders in [
        ("elu", {"alpha": 0.7}, [(0, 0), (1, 1), (0, 1)]),
        ("selu", {}, [(0, 0), (1, 1), (1, 0)]),
        ("gelu", {}, [(0, 1), (0, 2), (2, 2), (1, 2)]),
    ]:
        act = get_activation(name, **params)
        for d in orders:
            x = act.derivative(d[0])(u1) * act.derivative(d[1])(u2)
            se = x.std(ddof=1) / math.sqrt(x.size)
            assert abs(x.mean() - pair_expectation(act, q1, q2, c, d)) < MC_SIGMAS * se, (name, d)


@pytest.mark.parametrize("name", ["elu", "selu", "gelu"])
def test_finite_at_extreme_variances_and_correlations(name):
    act = get_activation(name)
    orders = [(0, 0), (1, 1), (0, 1), (1, 0)] + ([(0, 2), (2, 2), (1, 2)] if act.smooth else [])
    for q in (0.0, 1e-300, 1e-8, 1e6, 1e300):
        for c in (-1.0, -0.3, 1.0 - 1e-15, 1.0):
            for d in orders:
                v = pair_expectation(act, q, 0.5 * q, c, d)
                assert np.isfinite(v), (q, c, d)
        assert np.isfinite(expectation(act, q)) and np.isfinite(variance_derivative(act, q))
    # large q: the ReLU asymptotes, E phi^2 / q -> lambda^2 / 2 and E phi'^2 -> lambda^2 / 2
    lam2 = 1.0507009873554805**2 if name == "selu" else 1.0
    assert expectation(act, 1e300) / 1e300 == pytest.approx(lam2 / 2, rel=1e-12)
    assert expectation(act, 1e300, (1, 1)) == pytest.approx(lam2 / 2, rel=1e-12)


def test_elu_is_no_longer_integrated_by_quadrature():
    # the closed form does not depend on the Gauss-Hermite degree (quadrature did, at ~1e-3)
    for name in ("elu", "selu"):
        a = pair_expectation(name, 1.0, 2.0, 0.3, (1, 1), degree=8)
        b = pair_expectation(name, 1.0, 2.0, 0.3, (1, 1), degree=400)
        assert a == b
    assert pair_expectation("gelu", 1.0, 2.0, 0.3, (0, 2), degree=8) == pair_expectation(
        "gelu", 1.0, 2.0, 0.3, (0, 2), degree=400
    )
