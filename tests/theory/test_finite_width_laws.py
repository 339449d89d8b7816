"""meanfield.finite_width._laws: multi-layer Gram chain, cosine law over depth, eqs. 2-3, GSM spectrum."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate

import meanfield.finite_width as fw

#: Standard errors allowed in the statistical checks: P(|Z| > 5) = 6e-7 per check.
Z = 5.0


@pytest.mark.parametrize("depth", [1, 2, 5])
def test_fuss_catalan_density_is_normalised_and_has_the_fuss_catalan_moments(depth):
    top = (depth + 1) ** (depth + 1) / depth**depth
    ks = np.arange(4)

    def integrand(u):  # x = top u^(L+1) removes the x^(-L/(L+1)) singularity at 0
        x = top * u ** (depth + 1)
        return x**ks * fw.gsm_product_density(x, depth) * top * (depth + 1) * u**depth

    val, err = integrate.quad_vec(integrand, 0.0, 1.0, epsrel=1e-10, limit=400)
    assert err < 1e-8
    assert np.allclose(val, fw.gsm_product_moments(depth, ks), rtol=1e-7)


def test_fuss_catalan_closed_forms():
    x = np.array([0.5, 1.0, 3.0])
    assert np.allclose(fw.gsm_product_density(x, 1), np.sqrt((4 - x) / x) / (2 * np.pi), rtol=1e-12)
    assert fw.gsm_product_density(5.0, 1) == 0.0 and math.isinf(fw.gsm_product_density(0.0, 2))
    assert fw.gsm_product_moments(3, 2) == 4.0  # FC_L(2) = L + 1
    assert fw.gsm_second_moment(1, 100) == pytest.approx(2.01, rel=1e-15)  # one Ginibre: 2 + 1/n
    assert fw.gsm_second_moment(4, 10**6) == pytest.approx(5.0, rel=1e-4)  # -> FC_L(2) as n -> inf


def test_gsm_second_moment_matches_monte_carlo_products():
    rng = np.random.default_rng(7)
    n, depth, reps = 12, 3, 4000
    w = rng.standard_normal((reps, depth, n, n)) / math.sqrt(n)
    p = np.broadcast_to(np.eye(n), (reps, n, n)).copy()
    for l in range(depth):
        p = w[:, l] @ p
    a = p @ np.swapaxes(p, 1, 2)
    m2 = np.einsum("rij,rji->r", a, a) / n
    se = m2.std(ddof=1) / math.sqrt(reps)
    assert abs(m2.mean() - fw.gsm_second_moment(depth, n)) < Z * se


def test_component_cdf_uses_the_right_continuous_inverse():
    # ReLU: F(0) = P(h <= 0) = 1/2 (the printed generalised inverse gives the left limit 0)
    assert fw.component_cdf(0.0, [1.0], [4.0], 2.0, fan_in=8) == 0.5
    assert fw.component_cdf(-1e-9, [1.0], [4.0], 2.0, fan_in=8) == 0.0
    # a two-state law is the mixture of the two Gaussian CDFs
    x = np.array([0.3, 1.0, 2.5])
    from scipy.special import ndtr

    ref = 0.25 * ndtr(x / math.sqrt(2.0 / 4 * 1.0 + 0.1)) + 0.75 * ndtr(x / math.sqrt(2.0 / 4 * 6.0 + 0.1))
    got = fw.component_cdf(x, [0.25, 0.75], [1.0, 6.0], 2.0, 0.1, fan_in=4)
    assert np.allclose(got, ref, rtol=1e-14)
    # tanh: the inverse is atanh; F(tanh(t)) = Phi(t / sigma) for a single state
    t = 0.7
    assert fw.component_cdf(math.tanh(t), [1.0], [2.0], 1.0, fan_in=2, activation="tanh") == pytest.approx(
        ndtr(t), rel=1e-13
    )
    with pytest.raises(ValueError, match="activation"):
        fw.component_cdf(0.0, [1.0], [1.0], 1.0, fan_in=1, activation="sin")
    with pytest.raises(ValueError, match="law"):
        fw.component_cdf(0.0, [0.5], [1.0], 1.0, fan_in=1)


def test_joint_component_cdf_is_a_mixture_of_products():
    law, states = [0.5, 0.5], [0.5, 8.0]
    x = [0.4, 1.2, 0.0]
    marg = [fw.component_cdf(xi, law, states, 2.0, fan_in=4) for xi in x]
    per_state = [np.prod([fw.component_cdf(xi, [1.0], [s], 2.0, fan_in=4) for xi in x]) for s in states]
    joint = fw.joint_component_cdf(x, law, states, 2.0, fan_in=4)
    assert joint == pytest.approx(0.5 * sum(per_state), rel=1e-14)
    assert joint > np.prod(marg)  # positive dependence through the shared norm


def test_gram_chain_moments_against_exact_theory():
    width, d = 40, 10
    g0 = np.array([[1.0, 0.3], [0.3, 2.0]])
    ch = fw.gram_chain_samples(g0, 3, width, 2.0, 0.05, fan_in=d, n_samples=20_000, rng=11)
    # layer 1: E<x1', x2'> is eq. 9 exactly
    v = fw.preactivation_covariance(g0, 2.0, 0.05, fan_in=d)
    se = ch.inner[1].std(ddof=1) / math.sqrt(ch.inner.shape[1])
    assert abs(ch.inner[1].mean() - fw.mean_inner_product(width, v[0, 0], v[1, 1], v[0, 1])) < Z * se
    # layer 3: E|x1|^2 is Cor. 3 exactly (fan-in d for the first layer, width later)
    layers = [fw.Layer(width, 2.0, 0.05, fan_in=d), fw.Layer(width, 2.0, 0.05), fw.Layer(width, 2.0, 0.05)]
    se = ch.norms2[3].std(ddof=1) / math.sqrt(ch.norms2.shape[1])
    assert abs(ch.norms2[3].mean() - fw.expected_squared_norm(2.0, layers)[-1]) < Z * se


def test_bias_free_cosine_law_does_not_depend_on_sigma_w2():
    g0 = [[1.0, 0.2], [0.2, 1.0]]
    a = fw.gram_chain_samples(g0, 4, 30, 2.0, fan_in=5, n_samples=300, rng=3).cosine
    b = fw.gram_chain_samples(g0, 4, 30, 1.7, fan_in=5, n_samples=300, rng=3).cosine
    assert np.allclose(a, b, rtol=0, atol=1e-12)


def test_cosine_law_mean_field_is_the_normalised_arc_cosine_map():
    law = fw.cosine_law_over_depth([[1.0, 0.0], [0.0, 1.0]], 5, 50, fan_in=50, n_samples=200, rng=0)
    c = 0.0
    for l in range(1, 6):
        c = (math.sqrt(1 - c * c) + (math.pi - math.acos(c)) * c) / math.pi  # relu cosine map
        assert law.mean_field[l] == pytest.approx(c, rel=1e-12)
    assert np.allclose(law.density.sum(1) * np.diff(law.edges)[0], 1.0)
    assert np.all(np.diff(law.mean_field) > 0)  # signals become parallel (in the mean-field limit)


def test_gram_chain_rejects_bad_arguments():
    with pytest.raises(ValueError, match="gram0"):
        fw.gram_chain_samples([[1.0, 2.0], [2.0, 1.0]], 2, 10, fan_in=2)
    with pytest.raises(ValueError, match="depth"):
        fw.gram_chain_samples(np.eye(2), -1, 10, fan_in=2)
    with pytest.raises((TypeError, ValueError), match="width"):
        fw.gram_chain_samples(np.eye(2), 2, True, fan_in=2)
    with pytest.raises(ValueError, match="sigma_w2"):
        fw.gram_chain_samples(np.eye(2), 2, 10, np.nan, fan_in=2)


# --- regressions found by the public-API fuzzer (tests/fuzz/) ------------------------------------


def test_component_cdfs_name_states_and_k():
    grid = np.linspace(0.0, 6.0, 13)
    law = np.full(13, 1 / 13)
    for bad in ([np.nan] * 13, -grid, None, "a"):
        with pytest.raises((TypeError, ValueError), match="states"):
            fw.component_cdf(0.1, law, bad, 2.0, fan_in=5)
        with pytest.raises((TypeError, ValueError), match="states"):
            fw.joint_component_cdf([0.1, 0.2], law, bad, 2.0, fan_in=5)
    with pytest.raises(ValueError, match=r"\bk\b"):
        fw.gsm_product_moments(2, [[1, 2], [1]])


def test_cosine_law_underflow_names_sigma_w2():
    with pytest.raises(ValueError, match="sigma_w2"):
        fw.cosine_law_over_depth(
            np.array([[1.0, 0.3], [0.3, 0.8]]), 2, 4, 1e-300, fan_in=4, n_samples=50, bins=5, rng=0
        )
