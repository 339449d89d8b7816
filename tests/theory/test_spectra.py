"""meanfield.spectra: free-probability Jacobian spectra against closed forms, moments and simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import comb

from meanfield import dense, spectra
from meanfield.gaussian import expectation
from meanfield.numerics import richardson
from meanfield.simulate.spectra import conv_jacobian_singular_values, jacobian_singular_values

N_POINTS = 600


def _pair(*args, lam_range, n=N_POINTS, **kw):
    """Spectra at n and 2n points on the same range: broadening eta and eta / 2."""
    coarse = spectra.jacobian_spectrum(*args, n_points=n, lam_range=lam_range, **kw)
    fine = spectra.jacobian_spectrum(*args, n_points=2 * n, lam_range=lam_range, **kw)
    return coarse, fine


def _moment(s, k):
    lam, rho = s.squared_singular_values, s.density
    f = rho * lam ** (k + 1)
    return float(np.sum(0.5 * (f[1:] + f[:-1]) * np.diff(np.log(lam))))


def test_marchenko_pastur_density_at_depth_one():
    # linear, Gaussian weights, L = 1: J J^T = W W^T, the Marchenko-Pastur law of ratio 1
    c, f = _pair("linear", 1.0, 0.0, 1, "gaussian", lam_range=(1e-3, 4.2))
    lam = f.squared_singular_values
    sel = (lam > 0.2) & (lam < 3.5)
    exact = np.sqrt(np.clip(lam * (4 - lam), 0, None)) / (2 * np.pi * lam)
    rho_c = np.interp(lam, c.squared_singular_values, c.density)
    ext = richardson(rho_c[sel], f.density[sel], order=1, ratio=c.eta / f.eta)
    # the O(eta) broadening error of the finer density, estimated from the pair, bounds the extrapolate
    assert np.all(np.abs(ext.value - exact[sel]) <= ext.error + 1e-3 * exact[sel] * f.eta)
    assert np.max(np.abs(f.density[sel] - exact[sel]) / exact[sel]) < 10 * f.eta


@pytest.mark.parametrize("depth", [2, 3])
def test_fuss_catalan_moments_of_linear_gaussian_products(depth):
    top = (depth + 1) ** (depth + 1) / depth**depth
    c, f = _pair("linear", 1.0, 0.0, depth, "gaussian", lam_range=(1e-10, 1.05 * top))
    for k in (1, 2):
        exact = comb((depth + 1) * k, k) / (depth * k + 1)
        ext = richardson(_moment(c, k), _moment(f, k), order=1, ratio=c.eta / f.eta)
        # mass below 1e-10 carries lambda^k < 1e-10; the eta-extrapolate's error estimate bounds the rest
        assert abs(ext.value - exact) <= ext.error + 1e-9, (k, ext, exact)


@pytest.mark.parametrize("weights", ["orthogonal", "gaussian"])
def test_mean_and_variance_match_chi1_and_s_transform_series(weights):
    sb = 1e-4
    sw = float(dense.critical_sigma_w2("tanh", sb))
    fp = dense.fixed_point("tanh", sw, sb)
    depth = 3
    probe = spectra.jacobian_spectrum("tanh", sw, sb, depth, weights, n_points=400, n_atoms=2000, decades=10)
    rng_ = (probe.squared_singular_values[0], probe.squared_singular_values[-1])
    c, f = _pair("tanh", sw, sb, depth, weights, lam_range=rng_, n_atoms=2000)
    assert f.expected_mean == pytest.approx(fp.chi_1**depth, rel=1e-9)
    moments = spectra.spectrum_moments("tanh", sw, sb, depth, weights)
    mean, var = moments.mean, moments.variance
    assert mean == pytest.approx(fp.chi_1**depth, rel=1e-12)
    assert var == pytest.approx(f.expected_variance, rel=1e-6)
    m1 = richardson(_moment(c, 1), _moment(f, 1), order=1, ratio=c.eta / f.eta)
    m2 = richardson(_moment(c, 2), _moment(f, 2), order=1, ratio=c.eta / f.eta)
    # mass below the grid: at most 1 - f.mass of lambda <= lam[0]
    below = (1 - f.mass) * rng_[0]
    assert abs(m1.value - mean) <= m1.error + below + 1e-6
    assert abs(m2.value - m1.value**2 - var) <= m2.error + 2 * m1.error * mean + 1e-4


def test_orthogonal_depth_one_is_the_law_of_phi_prime_squared():
    # L = 1, orthogonal: lambda = sigma_w2 tanh'(h)^2, h ~ N(0, q); P(lambda <= x) in closed form
    sw, q = 1.2, 0.5
    s = spectra.jacobian_spectrum("tanh", sw, 0.0, 1, "orthogonal", q=q, lam_range=(0.05, 1.3), n_points=2000)
    for x in (0.4, 0.8, 1.0):
        # tanh'(h)^2 <= x / sw  <=>  |h| >= artanh(sqrt(1 - sqrt(x / sw)))
        h = math.atanh(math.sqrt(1 - math.sqrt(x / sw)))
        exact = math.erfc(h / math.sqrt(2 * q))
        assert float(s.cdf(x)) == pytest.approx(exact, abs=5 * s.eta)


def test_derivative_law_exact_for_kinked_activations():
    law = spectra.derivative_law("relu", 0.0)
    assert law.exact and np.allclose(law.values, [0, 1]) and np.allclose(law.weights, [0.5, 0.5])
    law = spectra.derivative_law("hard_tanh", 0.7)
    assert law.exact
    assert law.weights[1] == pytest.approx(float(expectation("hard_tanh", 0.7, (1, 1))), rel=1e-14)
    law = spectra.derivative_law("tanh", 0.7)
    assert not law.exact
    # the trapezoid rule is spectrally accurate for smooth phi': agree with Gauss-Hermite to 1e-10
    assert law.moment(1) == pytest.approx(float(expectation("tanh", 0.7, (1, 1))), rel=1e-10)
    assert law.moment(0) == pytest.approx(1.0, rel=1e-14)


def test_relu_spectrum_has_mass_at_zero():
    # D^2 is a fair 0/1 projection; J J^T = P (W P W^T) P for free projections of trace 1/2: an atom
    # of mass 1/2 at 0 and a continuous part of mass 1/2
    c, f = _pair("relu", 2.0, 0.0, 2, "orthogonal", lam_range=(1e-6, 4.2), n=1000, n_atoms=200)
    assert f.expected_mean == pytest.approx(1.0)
    ext = richardson(c.mass, f.mass, order=1, ratio=c.eta / f.eta)
    assert abs(ext.value - 0.5) <= ext.error + 1e-3  # + the mass of the continuous part below 1e-6


def test_density_and_cdf_are_valid():
    s = spectra.jacobian_spectrum("tanh", 1.5, 0.05, 4, "gaussian", n_points=300, n_atoms=1000)
    assert np.all(np.isfinite(s.density)) and np.all(s.density >= 0)
    cdf = s.cdf(s.squared_singular_values)
    assert np.all(np.diff(cdf) >= -1e-12) and cdf[0] >= 0 and cdf[-1] <= 1
    p = np.array([0.2, 0.5, 0.8])
    assert np.allclose(s.cdf(s.quantile(p)), p, atol=2e-3)
    assert np.allclose(s.singular_value_density, 2 * s.singular_values * s.density)


def test_conv_spectrum_is_the_dense_law_of_its_kernel():
    kw = dict(n_points=200, n_atoms=500)
    a = spectra.conv_jacobian_spectrum("tanh", 1.2, 0.01, 2, "delta_orthogonal", **kw)
    b = spectra.jacobian_spectrum("tanh", 1.2, 0.01, 2, "orthogonal", **kw)
    assert np.array_equal(a.density, b.density) and a.weights == "orthogonal"
    assert spectra.conv_jacobian_spectrum("tanh", 1.2, 0.01, 2, "gaussian", **kw).weights == "gaussian"


@pytest.mark.parametrize(
    "kwargs, exc",
    [
        (dict(sigma_w2=-1.0), ValueError),
        (dict(sigma_w2=0.0), ValueError),
        (dict(sigma_w2=float("nan")), ValueError),
        (dict(sigma_w2=1j), TypeError),
        (dict(sigma_w2=True), TypeError),
        (dict(depth=0), ValueError),
        (dict(depth=1.5), ValueError),
        (dict(weights="haar"), ValueError),
        (dict(weights=1), TypeError),
        (dict(eta=0.0), ValueError),
        (dict(eta=float("inf")), ValueError),
        (dict(n_points=3), ValueError),
        (dict(decades=1e300), ValueError),
        (dict(lam_range=(2.0, 1.0)), ValueError),
        (dict(lam_range=(0.0, 1.0)), ValueError),
        (dict(q=-1.0), ValueError),
        (dict(depth=10**6), ValueError),
        (dict(sigma_w2=1e300), ValueError),
    ],
)
def test_bad_arguments_raise(kwargs, exc):
    args = dict(activation="tanh", sigma_w2=1.0, sigma_b2=0.01, depth=2, weights="orthogonal", n_points=64)
    args.update(kwargs)
    with pytest.raises(exc):
        spectra.jacobian_spectrum(**args)


def test_conv_kernel_name_checked():
    with pytest.raises(ValueError, match="kernel"):
        spectra.conv_jacobian_spectrum("tanh", 1.0, 0.0, 2, "uniform")


# ---- the simulators -------------------------------------------------------------------------------


def test_linear_orthogonal_jacobian_is_scaled_isometry():
    ev = jacobian_singular_values("linear", 1.3, 0.1, 3, 16, 2, "orthogonal", q=1.0, rng=0)
    assert ev.shape == (2, 16)
    assert np.allclose(ev, 1.3**3, rtol=1e-10)
    ev = conv_jacobian_singular_values("linear", 1.3, 0.1, 3, 4, 5, 2, "orthogonal", q=1.0, rng=0)
    assert ev.shape == (2, 20)
    assert np.allclose(ev, 1.3**3, rtol=1e-10)
    ev = conv_jacobian_singular_values("linear", 1.3, 0.1, 2, 4, 5, 1, "delta_orthogonal", q=1.0, rng=0)
    assert np.allclose(ev, 1.3**2, rtol=1e-10)


def test_simulator_rng_rule_and_arguments():
    a = jacobian_singular_values("tanh", 1.0, 0.0, 2, 8, 3, "gaussian", rng=5)
    b = jacobian_singular_values("tanh", 1.0, 0.0, 2, 8, 3, "gaussian", rng=np.random.default_rng(5))
    assert np.array_equal(a, b)
    with pytest.raises(ValueError):
        jacobian_singular_values("tanh", 1.0, 0.0, 2, 0, 3)
    with pytest.raises(TypeError):
        jacobian_singular_values("tanh", 1.0, 0.0, 2, 8, 3, weights=None)
    with pytest.raises(ValueError):
        conv_jacobian_singular_values("tanh", 1.0, 0.0, 2, 4, 5, 1, kernel_size=2)
    with pytest.raises(ValueError):
        jacobian_singular_values("relu", 3.0, 0.1, 2, 8, 3)  # q* infinite: pass q


# --- regressions found by the public-API fuzzer (tests/fuzz/) ------------------------------------


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: spectra.spectrum_moments("sign", 1.05, 0.01, 3, q=0.5), "activation"),
        (lambda: spectra.spectrum_moments("tanh", 1e300, 0.01, 3, q=0.5), "sigma_w2"),
        (lambda: spectra.conv_jacobian_spectrum("linear", 1.05, 0.01, 3), "activation"),
        (lambda: spectra.conv_jacobian_spectrum("sign", 1.05, 0.01, 3), "activation"),
        (lambda: spectra.conv_jacobian_spectrum("tanh", 1e300, 0.01, 3), "sigma_w2"),
        (lambda: spectra.conv_jacobian_spectrum("tanh", 1.05, 1e300, 3), "sigma_b2"),
        (
            lambda: spectra.jacobian_spectrum(
                "tanh", 1e300, 0.01, 3, q=0.5, n_points=50, lam_range=(1e-3, 10.0), eta=1e-3, n_atoms=200
            ),
            "sigma_w2",
        ),
    ],
)
def test_spectra_errors_name_the_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()


@pytest.mark.parametrize(
    "activation, sigma_w2, sigma_b2",
    [("tanh", 1.5, 0.05), ("tanh", 4.0, 1.0), ("erf", 2.0, 0.3), ("relu", 1.5, 0.05), ("softplus", 1.2, 0.1),
     ("sigmoid", 3.0, 0.2), ("gelu", 1.5, 0.0), ("tanh", 1.0, 0.0)],
)  # fmt: skip
def test_spectra_evaluate_d_at_the_fixed_point_variance_bit_for_bit(activation, sigma_w2, sigma_b2):
    # the spectra solve for q* alone (no c-map); it must be fixed_point's q* and chi_1 to the bit
    fp = dense.fixed_point(activation, sigma_w2, sigma_b2)
    s = spectra.jacobian_spectrum(activation, sigma_w2, sigma_b2, 3, n_points=32, n_atoms=300, accuracy="ignore")
    assert s.q == fp.q_star
    m = spectra.spectrum_moments(activation, sigma_w2, sigma_b2, 3)
    assert m.mean == spectra.spectrum_moments(activation, sigma_w2, sigma_b2, 3, q=fp.q_star).mean


def test_spectra_refuse_an_overflowing_fixed_point_as_fixed_point_does():
    with pytest.raises(ValueError) as fp_error:
        dense.fixed_point("relu", 1.0, 1e308)
    with pytest.raises(ValueError) as spectrum_error:
        spectra.spectrum_moments("relu", 1.0, 1e308, 3)
    assert str(spectrum_error.value) == str(fp_error.value)
