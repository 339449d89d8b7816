"""Mehler-formula layer maps (meanfield.mehler) against direct quadrature and closed forms.

The certified bound is checked, not trusted: every value is compared with an independent
computation (the library's direct bivariate quadrature, scipy's adaptive ``dblquad``, the arcsine
and arc-cosine closed forms), and the actual error must not exceed the reported bound plus the
reference's own documented error.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import dblquad, quad

from meanfield import dense, ntk
from meanfield.activations import Activation
from meanfield.gaussian import expectation, pair_expectation
from meanfield.mehler import Q_MAX, RTOL_RANGE, mehler_layer_maps, propagate_mehler

#: Error of the direct-quadrature reference relative to the pair scale: meanfield.gaussian's
#: accuracy table gives at most 2e-11 absolute on moments of size ~q = 100 (2e-13 relative) and
#: 4e-13 absolute for tanh at q <= 100; a factor ~10 of margin.
REFERENCE_RTOL = 5e-12
#: scipy dblquad at epsabs = 1e-13, epsrel = 1e-12 (its requested accuracy, with margin).
DBLQUAD_ATOL = 1e-11
#: Propagation through DEPTH layers: each layer map is certified to 1e-10 of its scale, and an
#: error is amplified by at most sigma_w2 max|phi'|^2 = SW (tanh: |phi'| <= 1) per later layer,
#: so the sum over layers is below 1e-10 (1 + SW + SW^2 + ...) < 1e-9 at DEPTH = 3, SW = 1.5.
DEPTH = 3
SW, SB = 1.5, 0.05
PROPAGATION_RTOL = 1e-9


def _user():
    return Activation.from_functions(
        "tanh_plus_linear", lambda x: np.tanh(x) + 0.1 * x, lambda x: 1.0 / np.cosh(x) ** 2 + 0.1
    )


def _random_pairs(seed, d1=6, d2=5):
    rng = np.random.default_rng(seed)
    q1 = 10.0 ** rng.uniform(-3.0, 2.0, d1)
    q2 = 10.0 ** rng.uniform(-3.0, 2.0, d2)
    c = rng.uniform(-1.0, 1.0, (d1, d2))
    c[0, 0], c[1, 1], c[2, 2] = 1.0, -1.0, 0.9999
    return q1, q2, c


def _scale(act, d, q1, q2):
    return np.sqrt(np.outer(expectation(act, q1, (d, d)), expectation(act, q2, (d, d))))


@pytest.mark.parametrize("name", ["tanh", "erf", "softplus", "swish", "gelu", "sigmoid", "user"])
def test_matches_direct_quadrature_within_bound(name):
    act = _user() if name == "user" else name
    q1, q2, c = _random_pairs(7)
    m = mehler_layer_maps(act, q1, q2, c)
    assert m.error_bound <= 1e-10
    assert m.kappa.shape == m.kappa_dot.shape == c.shape
    for d, got in ((0, m.kappa), (1, m.kappa_dot)):
        ref = pair_expectation(act, q1[:, None], q2[None, :], c, (d, d))
        err = np.abs(got - ref) / _scale(act, d, q1, q2)
        assert err.max() <= m.error_bound + REFERENCE_RTOL, (name, d, err.max(), m.error_bound)
    assert m.n_fallback < 2 * c.size  # most pairs are summed, not integrated


@pytest.mark.parametrize("rtol", [1e-5])
def test_loose_bound_is_honest(rtol):
    """At a loose rtol the truncation error is far above the reference's: the bound itself is tested."""
    q1, q2, c = _random_pairs(11, 8, 8)
    for act in ("tanh", "softplus"):
        m = mehler_layer_maps(act, q1, q2, c, rtol=rtol)
        assert m.error_bound <= rtol
        for d, got in ((0, m.kappa), (1, m.kappa_dot)):
            ref = pair_expectation(act, q1[:, None], q2[None, :], c, (d, d))
            err = np.abs(got - ref) / _scale(act, d, q1, q2)
            assert err.max() <= m.error_bound + REFERENCE_RTOL
    tight = mehler_layer_maps("tanh", q1, q2, c, rtol=1e-10)
    assert mehler_layer_maps("tanh", q1, q2, c, rtol=rtol).n_fallback <= tight.n_fallback


def test_erf_against_arcsine_closed_form():
    q1, q2, c = _random_pairs(3)
    m = mehler_layer_maps("erf", q1, q2, c, derivative=False)
    assert m.kappa_dot is None
    s = np.sqrt(np.outer(1.0 + 2.0 * q1, 1.0 + 2.0 * q2))
    closed = (2.0 / math.pi) * np.arcsin(np.clip(2.0 * c * np.sqrt(np.outer(q1, q2)) / s, -1.0, 1.0))
    scale = (2.0 / math.pi) * np.sqrt(np.outer(np.arcsin(2 * q1 / (1 + 2 * q1)), np.arcsin(2 * q2 / (1 + 2 * q2))))
    assert np.max(np.abs(m.kappa - closed) / scale) <= m.error_bound + REFERENCE_RTOL


def _dblquad_pair(f, q1, q2, c):
    s1, s2, r = math.sqrt(q1), math.sqrt(q2), math.sqrt(1.0 - c * c)

    def integrand(z2, z1):
        return f(s1 * z1) * f(s2 * (c * z1 + r * z2)) * math.exp(-0.5 * (z1 * z1 + z2 * z2)) / (2.0 * math.pi)

    return dblquad(integrand, -9, 9, -9, 9, epsabs=1e-13, epsrel=1e-12)[0]


@pytest.mark.parametrize(
    ("name", "f", "q1", "q2", "c"),
    [
        ("tanh", math.tanh, 0.7, 2.3, 0.6),
        ("user", lambda x: math.tanh(x) + 0.1 * x, 1.4, 0.3, -0.8),
    ],
)
def test_against_scipy_dblquad(name, f, q1, q2, c):
    act = _user() if name == "user" else name
    m = mehler_layer_maps(act, [q1], [q2], [[c]], derivative=False)
    assert m.n_fallback == 0
    scale = float(_scale(act, 0, np.array([q1]), np.array([q2]))[0, 0])
    assert m.error_bound <= 1e-10
    assert abs(float(m.kappa[0, 0]) - _dblquad_pair(f, q1, q2, c)) <= m.error_bound * scale + DBLQUAD_ATOL


def _relu_pair(q1, q2, c):
    """Cho & Saul's arc-cosine kernel of degree 1, written out here independently."""
    theta = np.arccos(np.clip(c, -1.0, 1.0))
    return np.sqrt(q1 * q2) * (np.sin(theta) + (math.pi - theta) * np.cos(theta)) / (2.0 * math.pi)


#: Correlations approaching 1 from both sides, where the series needs the most terms.
NEAR_ONE = (0.99, 0.999, 0.99999, 1.0 - 1e-9, -0.9995)


@pytest.mark.parametrize("name", ["tanh", "user"])
def test_strongly_correlated_pairs_meet_the_bound(name):
    """Pairs with |c| near 1 and distinct variances: summed (not integrated) and within the bound."""
    act = _user() if name == "user" else name
    q1 = np.array([0.4, 1.5, 3.0, 9.0])
    q2 = np.array([0.45, 1.4, 3.3, 8.0, 0.4])
    c = np.resize(np.array(NEAR_ONE), q1.size * q2.size).reshape(q1.size, q2.size)
    m = mehler_layer_maps(act, q1, q2, c)
    assert m.n_fallback == 0 and m.error_bound <= 1e-10
    for d, got in ((0, m.kappa), (1, m.kappa_dot)):
        ref = pair_expectation(act, q1[:, None], q2[None, :], c, (d, d))
        err = np.abs(got - ref) / _scale(act, d, q1, q2)
        assert err.max() <= m.error_bound + REFERENCE_RTOL, (name, d, err.max())


def test_strongly_correlated_data_set_through_depth():
    """A data set whose pairs approach c = 1 (the ordered phase, large first-layer variances) against
    the layer-by-layer direct quadrature of ``dense.covariance_map``."""
    rng = np.random.default_rng(12)
    common = rng.standard_normal(16)
    x = 6.0 * (common + 0.08 * rng.standard_normal((6, 16)))  # q near 50, pair correlations near 0.99
    cov0 = dense.input_covariance(x, 1.0, 0.05)
    r = propagate_mehler(cov0, "tanh", SW, SB, DEPTH)
    assert r.error_bound.max() <= 1e-10
    cov = cov0
    off = ~np.eye(6, dtype=bool)
    for layer in range(1, DEPTH + 1):
        cov = dense.covariance_map(cov, "tanh", SW, SB)
        corr = cov / np.sqrt(np.outer(np.diag(cov), np.diag(cov)))
        assert corr[off].min() > 0.9
        scale = np.sqrt(np.outer(np.diag(cov), np.diag(cov)))
        assert np.max(np.abs(r.cov[layer] - cov) / scale) <= PROPAGATION_RTOL


def test_fallback_where_no_bound_is_met():
    """At a variance near Q_MAX the coefficients of tanh decay too slowly for a pair at c ~ 1 within
    K_MAX terms: that pair is integrated directly (and counted), the others are summed."""
    q = np.array([600.0, 0.5])
    c = np.array([[0.999999, 0.3], [0.3, 0.2]])
    m = mehler_layer_maps("tanh", q, q, c, derivative=False)
    assert m.n_fallback == 1  # the pair of the two large variances
    ref = pair_expectation("tanh", q[:, None], q[None, :], c)
    err = np.abs(m.kappa - ref) / _scale("tanh", 0, q, q)
    assert err.max() <= m.error_bound + REFERENCE_RTOL
    above = mehler_layer_maps("tanh", [2.0 * Q_MAX], [1.0], [[0.5]], derivative=False)
    assert above.n_fallback == 1 and above.error_bound == 0.0


@pytest.mark.parametrize("name", ["relu", "user_relu"])
def test_kinks_near_c_one_fall_back_correctly(name):
    act = name
    if name == "user_relu":
        act = Activation.from_functions(
            "user_relu", lambda x: np.maximum(x, 0.0), lambda x: (x > 0).astype(float), smooth=False
        )
    q = np.array([0.5, 1.0, 2.0])
    c = np.array([[1.0, 0.999, 0.99], [0.999, 1.0, 0.9995], [0.99, 0.9995, 1.0]])
    m = mehler_layer_maps(act, q, q, c, derivative=False)
    off = ~np.eye(3, dtype=bool)
    assert m.n_fallback >= off.sum() // 2  # every pair near c = 1 is integrated directly
    ref = _relu_pair(q[:, None], q[None, :], c)
    # the library's documented kink accuracy of direct quadrature (user path) is ~1e-4 relative
    tol = 1e-12 if name == "relu" else 1e-3
    assert np.max(np.abs(m.kappa - ref)[off] / np.sqrt(np.outer(q, q))[off] * 2.0) <= tol


def test_propagate_matches_dense_and_ntk():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((6, 4))
    cov0 = dense.input_covariance(x, 1.0, 0.1)
    r = propagate_mehler(cov0, "tanh", SW, SB, DEPTH, ntk=True)
    direct = dense.propagate(cov0, "tanh", SW, SB, DEPTH)
    scale = np.sqrt(np.einsum("lii,ljj->lij", direct, direct))
    assert np.max(np.abs(r.cov - direct) / scale) <= PROPAGATION_RTOL
    ref = ntk.propagate_ntk(cov0, "tanh", SW, SB, DEPTH)
    tscale = np.sqrt(np.einsum("lii,ljj->lij", ref.ntk, ref.ntk))
    assert np.max(np.abs(r.ntk - ref.ntk) / tscale) <= PROPAGATION_RTOL
    assert r.error_bound.shape == (DEPTH,) and r.error_bound.max() <= 1e-10
    assert np.array_equal(r.cov[0], cov0)


def test_propagate_user_activation_matches_covariance_map():
    act = _user()
    rng = np.random.default_rng(8)
    cov0 = dense.input_covariance(rng.standard_normal((4, 3)), 1.0, 0.0)
    r = propagate_mehler(cov0, act, SW, SB, 2)
    cov = cov0
    for layer in (1, 2):
        cov = dense.covariance_map(cov, act, SW, SB)
        scale = np.sqrt(np.outer(np.diag(cov), np.diag(cov)))
        assert np.max(np.abs(r.cov[layer] - cov) / scale) <= PROPAGATION_RTOL


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"rtol": 1e-14}, "rtol must be in"),
        ({"rtol": 0.5}, "rtol must be in"),
        ({"c": [[2.0]]}, r"c must lie in \[-1, 1\]"),
        ({"c": [[0.5, 0.5]]}, "c must have shape"),
        ({"q1": [-1.0]}, "q1 must be >= 0"),
        ({"activation": "sign"}, "Dirac"),
    ],
)
def test_bad_arguments(kwargs, match):
    args = {"activation": "tanh", "q1": [1.0], "q2": [1.0], "c": [[0.5]]} | kwargs
    act = args.pop("activation")
    with pytest.raises(ValueError, match=match):
        mehler_layer_maps(act, args.pop("q1"), args.pop("q2"), args.pop("c"), **args)
    assert RTOL_RANGE[0] <= 1e-10 <= RTOL_RANGE[1]


def test_zero_variance_and_exactness_at_q_zero():
    m = mehler_layer_maps("sigmoid", [0.0, 1.0], [0.0], [[0.0], [0.3]])
    # phi(0) = 1/2: E phi(0) phi(v) = E phi(v) / 2 = 1/4 (sigmoid(x) - 1/2 is odd)
    assert np.allclose(m.kappa[:, 0], 0.25, rtol=0, atol=1e-14)
    t = mehler_layer_maps("tanh", [0.0], [2.0], [[1.0]])
    assert t.kappa[0, 0] == 0.0 and t.n_fallback == 0
    assert t.error_bound <= 1e-10
    # phi'(0) = 1: kappa_dot = E tanh'(sqrt(2) z), by scipy's adaptive quadrature
    ref = quad(lambda z: math.exp(-0.5 * z * z) / math.cosh(math.sqrt(2.0) * z) ** 2, -12, 12, epsabs=1e-14)[0]
    assert abs(t.kappa_dot[0, 0] - ref / math.sqrt(2.0 * math.pi)) <= 1e-10 + DBLQUAD_ATOL


def test_public_names_have_type_hints(missing_type_hints):
    import meanfield.mehler as module

    assert missing_type_hints(module) == []
