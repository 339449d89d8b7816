"""Cross-checks between independent routes to the same number (deterministic, a few seconds).

Each test computes one quantity two ways that share no code beyond the library's one-layer maps or
a Monte-Carlo simulation: ``dense.propagate`` against iterating ``covariance_map`` / ``qmap`` /
``cmap``; spectra moments against chi_1^L; kernels under a permutation of the inputs; the
finite-width simulators against the theory with the same ``layers`` list (one variance convention);
``nonzero_fraction`` against ``nonzero_probability`` on the same ``widths``; and the largest
documented sizes in bounded time. Regressions for the wrong answers these checks found are named
after the symptom.
"""

from __future__ import annotations

import math
import time
import warnings

import numpy as np
import pytest

from meanfield import dense, ntk, spectra
from meanfield import finite_width as fw
from meanfield import kurtosis as K
from meanfield.simulate import nonzero_fraction, simulate_pair, simulate_squared_norms

#: Standard errors allowed for a Monte-Carlo mean (fixed seeds; two-sided 4.5 sigma).
Z = 4.5
#: Rounding of a covariance iterated over a few layers: ulps per layer, relative to its largest entry.
ULPS_PER_LAYER = 64
EPS = np.finfo(float).eps
#: The spectra check's own tolerance on the eta-extrapolated mean (its documented MEAN_RTOL).
SPECTRUM_MEAN_RTOL = spectra.MEAN_RTOL
#: Wall-clock bound for the largest documented call (measured 1-3 s on one core; before the fix 30-100 s).
MAX_CALL_S = 20.0

ACTIVATIONS = ("tanh", "relu", "erf", "linear", "softplus", "swish", "gelu", "leaky_relu", "elu", "sigmoid")


def _case(k):
    rng = np.random.default_rng([7, k])
    x = rng.standard_normal((3, 4))
    return x, 0.5 + 2.0 * rng.random(), 0.2 * rng.random()


@pytest.mark.parametrize("k, activation", list(enumerate(ACTIVATIONS)))
def test_propagate_is_the_one_layer_maps_iterated(k, activation):
    x, sw, sb = _case(k)
    depth = 6
    cov0 = dense.input_covariance(x, sw, sb)
    got = dense.propagate(cov0, activation, sw, sb, depth)
    it = [cov0]
    q = [np.diag(cov0)]
    for _ in range(depth):
        it.append(dense.covariance_map(it[-1], activation, sw, sb))
        q.append(dense.qmap(q[-1], activation, sw, sb))
    it = np.array(it)
    tol = ULPS_PER_LAYER * depth * EPS * np.abs(it).max()
    np.testing.assert_allclose(got, it, rtol=0, atol=tol)
    np.testing.assert_allclose(np.diagonal(got, axis1=1, axis2=2), np.array(q), rtol=0, atol=tol)


@pytest.mark.parametrize("activation", ["tanh", "relu", "erf"])
def test_propagate_correlation_is_the_cmap_iterated(activation):
    rng = np.random.default_rng(11)
    a, b = rng.standard_normal((2, 5))
    b *= np.linalg.norm(a) / np.linalg.norm(b)  # equal norms: equal variances at every layer
    sw, sb, depth = 1.7, 0.05, 5
    cov = dense.propagate(dense.input_covariance(np.stack([a, b]), sw, sb), activation, sw, sb, depth)
    c = cov[0, 0, 1] / cov[0, 0, 0]
    for layer in range(1, depth + 1):
        c = dense.cmap(c, activation, sw, sb, q=cov[layer - 1, 0, 0])
        got = cov[layer, 0, 1] / math.sqrt(cov[layer, 0, 0] * cov[layer, 1, 1])
        assert abs(got - c) <= ULPS_PER_LAYER * layer * EPS


@pytest.mark.parametrize("activation", ["tanh", "relu", "softplus"])
def test_kernels_are_invariant_under_permuting_the_inputs(activation):
    x, sw, sb = _case(3)
    perm = [2, 0, 1]
    cov0 = dense.input_covariance(x, sw, sb)
    cov0_p = dense.input_covariance(x[perm], sw, sb)
    tol = ULPS_PER_LAYER * 4 * EPS
    a = dense.propagate(cov0, activation, sw, sb, 4)
    b = dense.propagate(cov0_p, activation, sw, sb, 4)
    np.testing.assert_allclose(b, a[:, perm][:, :, perm], rtol=tol, atol=tol * np.abs(a).max())
    ta = ntk.propagate_ntk(cov0, activation, sw, sb, 4)
    tb = ntk.propagate_ntk(cov0_p, activation, sw, sb, 4)
    np.testing.assert_allclose(tb.ntk, ta.ntk[:, perm][:, :, perm], rtol=tol, atol=tol * np.abs(ta.ntk).max())


# ------------------------------------------------------------------ spectra


@pytest.mark.parametrize("activation", ["relu", "hard_tanh"])
def test_spectrum_mean_meets_chi1_to_the_depth_at_default_settings(activation):
    """Regression: the broadened density's mean was 11-19 % above chi_1^L (its Cauchy tail up to
    the edge), with no warning; the reported mean is now eta-extrapolated."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", spectra.SpectrumAccuracyWarning)
        s = spectra.jacobian_spectrum(activation, 1.05, 0.0, 5, "gaussian")
    assert abs(s.mean / s.expected_mean - 1) <= SPECTRUM_MEAN_RTOL
    assert abs(s.mass + s.atom_at_zero - 1.0) <= spectra.MASS_TOL + 0.05  # + the mass below 1e-8 chi_1^L
    assert s.mass + s.atom_at_zero <= 1.0 + spectra.MASS_TOL


def test_spectrum_mean_of_an_orthogonal_tanh_network():
    with warnings.catch_warnings():
        warnings.simplefilter("error", spectra.SpectrumAccuracyWarning)
        s = spectra.jacobian_spectrum("tanh", 1.05, 0.0, 3, "orthogonal", n_points=1500, n_atoms=1000)
    assert abs(s.mean / s.expected_mean - 1) <= SPECTRUM_MEAN_RTOL
    assert abs(s.mass - 1.0) <= spectra.MASS_TOL


def test_coarse_spectrum_that_misses_its_moments_says_so():
    """Regression: n_points=400 gave a mean up to 80 % off chi_1^L without a warning."""
    with pytest.warns(spectra.SpectrumAccuracyWarning, match="chi_1"):
        spectra.jacobian_spectrum("relu", 1.05, 0.0, 5, "gaussian", n_points=400)
    with pytest.raises(spectra.SpectrumAccuracyError) as err:
        spectra.jacobian_spectrum("relu", 1.05, 0.0, 5, "gaussian", n_points=400, accuracy="raise")
    assert isinstance(err.value.result, spectra.JacobianSpectrum)
    with warnings.catch_warnings():
        warnings.simplefilter("error", spectra.SpectrumAccuracyWarning)
        spectra.jacobian_spectrum("relu", 1.05, 0.0, 5, "gaussian", n_points=400, accuracy="ignore")
    with pytest.raises(ValueError, match="accuracy"):
        spectra.jacobian_spectrum("relu", 1.05, 0.0, 5, "gaussian", accuracy="loud")


# ------------------------------------------------------------------ finite width: one convention


def test_simulated_squared_norms_match_the_theory_of_the_same_layers():
    """Regression: the simulator took the per-weight variance and the theory the fan-in-scaled one,
    so the same list gave results 3-12x apart."""
    layers = [fw.Layer(12, 2.0, 0.1, fan_in=5), (8, 1.5, 0.0, 12), (6, 3.0)]
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 5))
    sim = simulate_squared_norms(x, layers, 3000, 4, rng=6)
    per_net = sim.mean(axis=1)  # (networks, L + 1), independent over networks
    theory = fw.expected_squared_norm((x * x).sum(1), layers).mean(axis=1)
    mean = per_net.mean(axis=0)
    se = per_net.std(axis=0, ddof=1) / math.sqrt(per_net.shape[0])
    assert np.all(np.abs(mean[1:] - theory[1:]) <= Z * se[1:])


def test_simulated_pair_matches_the_theory_with_the_library_sigma_w2():
    rng = np.random.default_rng(8)
    x1, x2 = rng.standard_normal((2, 6))
    width, sw, n = 10, 2.0, 20000
    sim = simulate_pair(x1, x2, width, sw, 0.0, n, rng=9)
    g = np.array([[x1 @ x1, x1 @ x2], [x1 @ x2, x2 @ x2]])
    v = fw.preactivation_covariance(g, sw, fan_in=x1.size)
    theory = float(fw.mean_inner_product(width, v[0, 0], v[1, 1], v[0, 1]))
    se = sim.inner.std(ddof=1) / math.sqrt(n)
    assert abs(sim.inner.mean() - theory) <= Z * se


# ------------------------------------------------------------------ kurtosis: the same widths


def test_nonzero_fraction_reads_widths_like_nonzero_probability():
    """Regression: the two read ``widths`` one layer apart (shape len and len + 1)."""
    widths, n = [2, 1, 3, 2], 40000
    p = K.nonzero_probability(widths)
    f = nonzero_fraction(widths, "gaussian", n, rng=3)
    assert f.shape == p.shape
    se = np.sqrt(p * (1 - p) / n)
    assert np.all(np.abs(f - p) <= Z * se + 1e-15)
    assert f[0] == 1.0


# ------------------------------------------------------------------ bounded time at the documented limits


def test_critical_exponents_at_the_largest_width_is_bounded():
    t0 = time.perf_counter()
    ce = fw.critical_exponents(fw.MAX_WIDTH)
    assert time.perf_counter() - t0 < MAX_CALL_S
    assert abs(ce.lower + 2.0) < 1e-6  # He: m = -2 exactly (E[z | y] = y)
    with pytest.raises(ValueError, match="width"):
        fw.critical_exponents(fw.MAX_WIDTH + 1)


@pytest.mark.parametrize("m", [-0.6, -1.0, -2.0, -40.0, -300.0])
def test_relu_log_eigenvalue_at_a_large_width_is_the_full_sum(m):
    """Above a few thousand units only the terms that matter are summed; against every term here."""
    from scipy import special, stats

    n, sw = 20000, 2.0
    k = np.arange(0, n + 1, dtype=float)
    logw = stats.binom.logpmf(k, n, 0.5)
    logw = logw - special.logsumexp(logw)
    k, logw = k[1:], logw[1:]
    terms = logw + special.gammaln(k / 2 - m - 1) - special.gammaln(k / 2)
    full = -(m + 1) * (math.log(2.0) + math.log(sw / n)) + special.logsumexp(terms)
    got = fw.relu_log_eigenvalue(m, n, sw)
    assert abs(got - full) <= 1e-9 * max(1.0, abs(full))


def test_propagate_ntk_at_its_largest_depth_is_bounded():
    t0 = time.perf_counter()
    r = ntk.propagate_ntk([[1.0]], "relu", 2.0, 0.0, ntk.MAX_DEPTH)
    assert time.perf_counter() - t0 < MAX_CALL_S
    assert r.ntk[-1, 0, 0] == pytest.approx(ntk.MAX_DEPTH + 1.0, rel=1e-9)  # relu, sigma_w2 = 2: l q
    with pytest.raises(ValueError, match="depth"):
        ntk.propagate_ntk([[1.0]], "relu", 2.0, 0.0, ntk.MAX_DEPTH + 1)


def test_quadrature_propagations_beyond_a_few_seconds_are_refused():
    """Regression: tanh through 10^6 layers of 2 inputs (or 10^5 layers of 8 CNN positions) ran for
    minutes to hours inside the documented limits; now refused, naming the largest depth."""
    from meanfield import conv

    v = np.ones(3) / 3
    with pytest.raises(ValueError, match="depth must be <= "):
        dense.propagate(np.eye(2), "tanh", 1.5, 0.05, 10**6)
    with pytest.raises(ValueError, match="depth must be <= "):
        dense.propagate_log(np.eye(2), "sigmoid", 1.5, 0.05, 10**6)
    with pytest.raises(ValueError, match="depth must be <= "):
        conv.propagate(np.eye(8) * 0.9 + 0.1, "tanh", 1.5, 0.05, v, 10**5)
    with pytest.raises(ValueError, match="depth must be <= "):
        conv.multi_input_propagate(np.eye(8).reshape(2, 4, 2, 4) + 0.1, "relu", 1.5, 0.05, v, 10**5, shape=4)
    # closed forms are not limited by it: relu through 10^5 layers of 2 inputs
    assert dense.propagate(np.eye(2), "relu", 2.0, 0.0, 10**5).shape == (10**5 + 1, 2, 2)
