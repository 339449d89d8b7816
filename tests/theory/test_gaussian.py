"""meanfield.gaussian: quadrature rules, closed forms against independent quadrature, error table."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs
from scipy.integrate import dblquad, quad

from meanfield.activations import Activation, get_activation
from meanfield.gaussian import expectation, hermite_rule, pair_expectation, variance_derivative

#: Accuracy of scipy's adaptive quadrature used as the independent reference (requested 1e-12).
REF_TOL = 1e-10
#: Error bound of the library's rules for smooth activations measured over q in [0.01, 100]
#: (the table in meanfield.gaussian; measured <= 3e-13, pinned with margin).
SMOOTH_TOL = 1e-11

SMOOTH = ["tanh", "sigmoid", "softplus", "swish", "gelu", "erf"]


_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_INV_2PI = 1.0 / (2.0 * math.pi)


def ref_single(f, q):
    s = math.sqrt(q)
    return quad(
        lambda z: f(s * z) * _INV_SQRT_2PI * math.exp(-0.5 * z * z), -12, 12, limit=400, epsabs=1e-14, epsrel=1e-13
    )[0]


def ref_pair(f, g, q1, q2, c):
    s1, s2, r = math.sqrt(q1), math.sqrt(q2), math.sqrt(1 - c * c)

    def integrand(z2, z1):
        return f(s1 * z1) * g(s2 * (c * z1 + r * z2)) * _INV_2PI * math.exp(-0.5 * (z1 * z1 + z2 * z2))

    return dblquad(integrand, -9, 9, -9, 9, epsabs=1e-13, epsrel=1e-12)[0]


def ref_leaky_pair(slope, d, q1, q2, c):
    """E phi^(d1)(u1) phi^(d2)(u2) for leaky ReLU by conditioning on u1 (1-D adaptive quadrature).

    Independent of the arc-cosine kernel: given z1, u2 ~ N(m, s^2) with m = sqrt(q2) c z1 and
    s = sqrt(q2 (1 - c^2)), E[phi(u2) | z1] = a m + (1 - a)(m Phi(m/s) + s pdf(m/s)) and
    E[phi'(u2) | z1] = a + (1 - a) Phi(m/s); the outer integral is split at the kink z1 = 0.
    """
    a = slope
    s1, s2, r = math.sqrt(q1), math.sqrt(q2), math.sqrt(1 - c * c)

    def outer(z1):
        u1 = s1 * z1
        f = (u1 if u1 > 0 else a * u1) if d[0] == 0 else (1.0 if u1 > 0 else a)
        m, s = s2 * c * z1, s2 * r
        cdf = 0.5 * (1.0 + math.erf(m / (s * math.sqrt(2.0))))
        if d[1] == 0:
            g = a * m + (1 - a) * (m * cdf + s * _INV_SQRT_2PI * math.exp(-0.5 * (m / s) ** 2))
        else:
            g = a + (1 - a) * cdf
        return f * g * _INV_SQRT_2PI * math.exp(-0.5 * z1 * z1)

    return sum(quad(outer, lo, hi, limit=200, epsabs=1e-14, epsrel=1e-13)[0] for lo, hi in [(-12, 0), (0, 12)])


def test_hermite_rule_is_exact_for_gaussian_moments():
    z, w = hermite_rule(20)
    assert w.sum() == pytest.approx(1.0, abs=1e-15)
    for k in range(0, 39):  # exact up to degree 2n - 1
        exact = 0.0 if k % 2 else float(np.prod(np.arange(k - 1, 0, -2, dtype=np.float64))) if k else 1.0
        scale = np.dot(w, np.abs(z) ** k)  # rounding is relative to the sum of |terms|
        assert abs(np.dot(w, z**k) - exact) <= 1e-13 * scale


@pytest.mark.parametrize("name", SMOOTH)
@pytest.mark.parametrize("q", [0.01, 0.3, 1.0, 10.0, 100.0])
def test_single_expectations_match_adaptive_quadrature(name, q):
    act = get_activation(name)
    for d in [(0, 0), (1, 1), (0, 1)]:
        f, g = act.derivative(d[0]), act.derivative(d[1])
        ref = ref_single(lambda u: f(u) * g(u), q)
        assert abs(expectation(act, q, d) - ref) < SMOOTH_TOL + REF_TOL * abs(ref)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["tanh", "gelu", "softplus"])
@pytest.mark.parametrize("q1,q2,c", [(0.1, 0.2, 0.5), (0.8, 1.7, -0.3), (5.0, 30.0, 0.9), (100.0, 100.0, 0.2)])
def test_pair_expectations_match_adaptive_quadrature(name, q1, q2, c):
    act = get_activation(name)
    ref = ref_pair(act.phi, act.phi, q1, q2, c)
    assert abs(pair_expectation(act, q1, q2, c) - ref) < SMOOTH_TOL + REF_TOL * abs(ref)


@settings(max_examples=8)
@given(
    q1=hs.floats(0.05, 20.0),
    q2=hs.floats(0.05, 20.0),
    c=hs.floats(-0.95, 0.95),
    slope=hs.sampled_from([0.0, 0.1, -0.5]),
    d=hs.sampled_from([(0, 0), (1, 1), (0, 1)]),
)
def test_arc_cosine_closed_form_matches_quadrature(q1, q2, c, slope, d):
    act = get_activation("leaky_relu", slope=slope)
    ref = ref_leaky_pair(slope, d, q1, q2, c)
    assert pair_expectation(act, q1, q2, c, d) == pytest.approx(ref, abs=REF_TOL, rel=REF_TOL)


@pytest.mark.slow
@settings(max_examples=8)
@given(
    q1=hs.floats(0.05, 20.0), q2=hs.floats(0.05, 20.0), c=hs.floats(-0.95, 0.95), d=hs.sampled_from([(0, 0), (1, 1)])
)
def test_arcsine_closed_form_matches_quadrature(q1, q2, c, d):
    act = get_activation("erf")
    ref = ref_pair(act.derivative(d[0]), act.derivative(d[1]), q1, q2, c)
    assert pair_expectation(act, q1, q2, c, d) == pytest.approx(ref, abs=1e-9, rel=1e-8)


@pytest.mark.parametrize("name", ["relu", "erf", "linear", "tanh", "gelu"])
def test_variance_derivative_is_the_slope_of_the_second_moment(name):
    for q in [0.2, 1.5, 20.0]:
        h = 1e-5 * q
        fd = (expectation(name, q + h) - expectation(name, q - h)) / (2 * h)
        assert variance_derivative(name, q) == pytest.approx(fd, rel=1e-7, abs=1e-9)


def test_pair_reduces_to_single_at_full_correlation_and_is_symmetric():
    for name in ["tanh", "sigmoid", "relu", "erf"]:
        assert pair_expectation(name, 0.7, 0.7, 1.0) == pytest.approx(expectation(name, 0.7), abs=1e-13)
        assert pair_expectation(name, 0.4, 2.5, 0.3, (0, 1)) == pytest.approx(
            pair_expectation(name, 2.5, 0.4, 0.3, (1, 0)), abs=1e-13
        )


def test_custom_activation_path_agrees_with_builtin():
    tanh = get_activation("tanh")
    custom = Activation.from_functions("my_tanh", np.tanh, lambda x: 1 - np.tanh(x) ** 2)
    for q1, q2, c in [(0.05, 0.1, 0.3), (0.2, 0.15, -0.7)]:
        assert pair_expectation(custom, q1, q2, c) == pytest.approx(pair_expectation(tanh, q1, q2, c), abs=1e-13)
    assert variance_derivative(custom, 0.2) == pytest.approx(variance_derivative(tanh, 0.2), abs=1e-13)


def test_vectorised_shapes():
    q = np.linspace(0.1, 2, 6).reshape(2, 3)
    assert expectation("tanh", q).shape == (2, 3)
    assert pair_expectation("tanh", q, 1.0, np.zeros((1, 3))).shape == (2, 3)


@pytest.mark.parametrize(
    "call",
    [
        lambda: expectation("tanh", -1.0),
        lambda: expectation("tanh", float("nan")),
        lambda: pair_expectation("tanh", 1.0, 1.0, 1.5),
        lambda: pair_expectation("relu", 1.0, 1.0, 0.2, (2, 0)),
        lambda: pair_expectation("tanh", 1.0, 1.0, 0.2, (3, 0)),
        lambda: hermite_rule(0),
    ],
)
def test_bad_input_raises(call):
    with pytest.raises(ValueError):
        call()


# --- regressions found by the public-API fuzzer (tests/fuzz/, full catalogue) -------------------


def test_infinite_expectation_names_the_activation():
    with pytest.raises(ValueError, match="activation"):
        expectation("sign", 1.0, (1, 1))
