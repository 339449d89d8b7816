"""Grzejdziak et al. 2023: Lemma 4.6 (every entry of A^m diverges) and the residual kurtosis recursion (Sec. 6)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from meanfield import kurtosis as K
from meanfield.kurtosis import residual_moments
from meanfield.simulate import simulate_residual_moments

#: Standard errors allowed: P(|Z| > 5) = 6e-7 per check.
Z = 5.0


@settings(max_examples=40, deadline=None)
@given(w=hs.integers(2, 200), a=hs.floats(-2.0, 2.0, allow_nan=False), kw=hs.floats(1.0, 12.0, allow_nan=False))
def test_lemma_4_6_all_four_entries_of_a_power_diverge_at_the_perron_rate(w, a, kw):
    # A^m in the Lemma 4.4 form: alpha_m, beta_m, gamma_m, delta_m all -> inf. Each grows like
    # lambda_max^m (Perron: the dominant eigenvector of the positive block A_- is positive), so
    # log(entry) / m -> log(lambda_max) > 0 for all four, not only for the norm (Lemma 4.6's claim).
    lam = K.trace_determinant(w, a, kw).lambda_max
    m1, m2 = 400, 800
    p1, p2 = K.product([w] * m1, a, kw), K.product([w] * m2, a, kw)
    logs1 = np.array([p1.log_alpha, p1.log_beta, p1.log_gamma, p1.log_delta])
    logs2 = np.array([p2.log_alpha, p2.log_beta, p2.log_gamma, p2.log_delta])
    rate = (logs2 - logs1) / (m2 - m1)
    # the subdominant eigenvalue contributes (lambda_min / lambda_max)^m <= (1 - gap)^400: negligible
    # unless the gap is tiny; the tolerance covers a ratio up to 0.99 (0.99^400 = 0.018 -> 4.5e-5 per step)
    assert np.allclose(rate, math.log(lam), atol=1e-4, rtol=0)
    assert np.all(logs2 > logs1) and np.all(np.isfinite(logs2))
    # and the lemma's case analysis: the ordering alpha >= gamma > 0, beta >= delta > 0 persists
    assert p2.log_alpha >= p2.log_gamma and p2.log_beta >= p2.log_delta


def test_lemma_4_6_entries_increase_monotonically_from_the_first_power():
    prev = None
    for m in range(1, 60):
        p = K.product([3] * m)
        cur = np.array([p.alpha, p.beta, p.gamma, p.delta])
        if prev is not None:
            assert np.all(cur > prev)
        prev = cur


@pytest.mark.parametrize("a", [0.0, 0.3, 1.0, -0.5])
def test_plain_raw_moment_recursion_reproduces_prop_4_3(a):
    r = residual_moments(6, 8, slope=a, residual=False)
    p = K.propagate(3.0, 0.0, [6] * 8, slope=a)
    assert np.allclose(r.kappa, p.kappa, rtol=1e-12)
    assert np.allclose(r.m22 / r.s2**2 - 1.0, p.c, rtol=1e-10, atol=1e-12)


def test_linear_residual_recursion_is_exact_against_simulation():
    sim = simulate_residual_moments(6, 4, 20_000, slope=1.0, rng=5)
    th = residual_moments(6, 4, slope=1.0)
    for l in (1, 4):
        for name in ("s2", "m4", "m22"):
            x = getattr(sim, name)[l]
            assert abs(x.mean() - getattr(th, name)[l]) < Z * x.std(ddof=1) / math.sqrt(x.size), (l, name)


def test_residual_kurtosis_grows_and_variance_doubles():
    r = residual_moments(8, 10, slope=0.0)
    assert np.allclose(r.s2, 2.0 ** np.arange(11))
    assert np.all(np.diff(r.kappa) > 0)


def test_residual_moments_reject_bad_arguments():
    with pytest.raises(ValueError, match="width"):
        residual_moments(1, 3)
    with pytest.raises(ValueError, match="moments"):
        residual_moments(4, 3, m4=0.5)
    with pytest.raises(TypeError):
        residual_moments(4, 3, residual=1)
    with pytest.raises(ValueError, match="weight_kurtosis"):
        residual_moments(4, 3, weight_kurtosis=0.5)


def test_pointwise_convolution_follows_prop_4_3_and_kernel_three_grows_faster():
    from meanfield.simulate import simulate_conv_moments

    depth = 3
    dense = K.propagate(3.0, 0.0, [6] * depth).kappa
    sim = simulate_conv_moments(6, 1, 8, depth, 6_000, rng=9)  # kernel 1: dense nets of width 6
    k = sim.m4.mean(1) / sim.s2.mean(1) ** 2
    m4, s2 = sim.m4[depth], sim.s2[depth]
    infl = m4 / s2.mean() ** 2 - 2 * k[depth] * s2 / s2.mean()
    assert abs(k[depth] - dense[-1]) < Z * infl.std(ddof=1) / math.sqrt(m4.size)
    assert k[0] == pytest.approx(3.0, rel=0.05)  # Gaussian input (4,000-sample estimate)
    with pytest.raises(ValueError, match="kernel_size"):
        simulate_conv_moments(2, 9, 8, 1, 10)


def test_fig1_unit_protocol():
    from meanfield.simulate import empirical_variances

    x = np.random.default_rng(0).standard_normal((30, 6))
    # one unit per layer: the two protocols coincide (same weights for the same rng)
    pooled = empirical_variances(x, "he", 5, 1, 4, rng=2, engine="blas", dtype="float64")
    unit = empirical_variances(x, "he", 5, 1, 4, rng=2, protocol="unit", dtype="float64")
    assert np.allclose(pooled, unit, rtol=1e-12)
    with pytest.raises(ValueError, match="protocol"):
        empirical_variances(x, "he", 5, 2, 4, protocol="one")
    with pytest.raises(ValueError, match="blas"):
        empirical_variances(x, "he", 5, 2, 4, protocol="unit", engine="numba")


# --- regressions found by the public-API fuzzer (tests/fuzz/) ------------------------------------


@pytest.mark.parametrize("n", [10**12, 2**64])
def test_moment_simulators_bound_n_networks(n):
    from meanfield.simulate import simulate_conv_moments

    with pytest.raises(ValueError, match="n_networks"):
        simulate_residual_moments(3, 2, n, 0.1, rng=0)
    with pytest.raises(ValueError, match="n_networks"):
        simulate_conv_moments(2, 3, 4, 2, n, 0.1, rng=0)


def test_the_old_module_path_warns_and_gives_the_same_function():
    import importlib
    import sys

    sys.modules.pop("meanfield.kurtosis_residual", None)
    with pytest.warns(DeprecationWarning, match="meanfield.kurtosis"):
        old = importlib.import_module("meanfield.kurtosis_residual")
    assert old.residual_moments is residual_moments
    assert old.ResidualMoments is K.ResidualMoments


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"slope": 1e300}, "slope"),
        ({"slope": -1e51}, "slope"),
        ({"s2": 1e-300, "m4": 3e-300, "m22": 1e-300}, "s2"),
        ({"s2": 1e-150, "m4": 1e300, "m22": 0.0}, "m4"),
    ],
)
def test_arguments_outside_the_float64_range_are_refused_by_name(kwargs, name):
    with pytest.raises(ValueError, match=name):
        residual_moments(4, 3, **kwargs)
