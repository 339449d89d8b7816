"""Edge cases of meanfield.finite_width (Burkholz & Dubatovka 2019): extreme depths, widths and variances, types, rng.

Each test names the finding it pins; each failed on the code before the fix.
"""

import math

import numpy as np
import pytest
from scipy import special, stats

from meanfield import finite_width as fw
from meanfield.activations import Activation

EPS = float(np.finfo(np.float64).eps)
GRID = np.linspace(0.0, 4.0, 33)


# ------------------------------------------------------------------ expected squared norm (Cor. 3)


@pytest.mark.parametrize("gain", [0.5, 1.5])  # sigma_w2 / 2 below / above criticality (square layers)
def test_expected_squared_norm_at_depth_1e4_carries_a_log_scale(gain):
    """Issue: below criticality the value stuck at 4.94e-322 (true: ~1e-3010); above it overflowed.

    Without biases eq. 6 is E_L = y0 (sigma_w2 / 2)^L exactly, so log E_L = log y0 + L log(gain);
    L additions of logs round to at most L * EPS relative."""
    n, depth, y0 = 10, 10**4, 3.0
    layers = [(n, 2.0 * gain)] * depth
    log_e = fw.log_expected_squared_norm(y0, layers)
    exact = math.log(y0) + np.arange(depth + 1) * math.log(gain)
    np.testing.assert_allclose(log_e, exact, rtol=depth * EPS, atol=depth * EPS)
    assert (
        abs((log_e[-1] - math.log(y0)) / math.log(10) - (-3010.3 if gain == 0.5 else 1760.9)) < 0.1
    )  # the issue: 1e-3010
    with pytest.raises(ValueError, match="log_expected_squared_norm"):
        fw.expected_squared_norm(y0, layers)
    # where every value is representable the two agree and the linear one is the direct recursion
    short = layers[:500]
    np.testing.assert_allclose(
        np.log(fw.expected_squared_norm(y0, short)), fw.log_expected_squared_norm(y0, short), rtol=1e-13
    )


def test_log_expected_squared_norm_with_biases_matches_the_geometric_series():
    """With biases, E_L = a^L y0 + b (a^L - 1) / (a - 1), a = sigma_w2 / 2, b = sigma_b2 N / 2 (eq. 6, square layers)."""
    n, sigma_w2, sb, y0 = 8, 0.8, 0.3, 2.0
    a, b = sigma_w2 / 2, sb * n / 2
    for depth in (1, 7, 60, 10**4):
        closed = a**depth * y0 + b * (a**depth - 1) / (a - 1)
        assert fw.log_expected_squared_norm(y0, [(n, sigma_w2, sb)] * depth)[-1] == pytest.approx(
            math.log(closed), rel=1e-12
        )
    assert fw.expected_squared_norm(y0, [(n, sigma_w2, sb)] * 10**4)[-1] == pytest.approx(b / (1 - a), rel=1e-12)


def test_expected_squared_norm_exact_zeros_stay_zero():
    """y0 = 0 without biases: the expectation is exactly 0 at every depth (log: -inf, documented)."""
    out = fw.expected_squared_norm([0.0, 1.0], [(10, 0.2)] * 3)
    assert np.all(out[:, 0] == 0.0) and np.all(out[:, 1] > 0)
    assert np.all(np.isneginf(fw.log_expected_squared_norm(0.0, [(10, 0.2)] * 3)))


@pytest.mark.parametrize(
    "layers,exc",
    [
        ("abc", TypeError),
        (3, TypeError),
        ([(10,)], TypeError),
        ([(10, 0.2, 0.1, 4, 5)], TypeError),
        ([(0, 0.2)], ValueError),
        ([(10, -0.2)], ValueError),
        ([(10, True)], TypeError),
        ([(10.5, 0.2)], ValueError),
        ([(10, 1 + 1j)], TypeError),
    ],
)
def test_layers_are_validated_naming_the_layer(layers, exc):
    with pytest.raises(exc, match="layers"):
        fw.expected_squared_norm(1.0, layers)
    with pytest.raises(exc, match="layers"):
        fw.propagate_distribution(np.eye(33)[3], GRID, layers)


# ------------------------------------------------------------------ masses on grids


def test_grid_masses_of_no_samples_is_an_error_not_nan():
    """Issue: grid_masses([], grid) returned 31 NaN."""
    with pytest.raises(ValueError, match="samples"):
        fw.grid_masses([], GRID)
    np.testing.assert_allclose(fw.grid_masses([[0.0, 1.0], [5.0, 2.0]], GRID).sum(), 1.0)  # any shape: flattened


@pytest.mark.parametrize("activation,method", [("relu", "auto"), ("relu", "fft"), ("tanh", "auto")])
def test_masses_on_a_tiny_grid_are_finite(activation, method):
    """Issue: kernel_masses on grid * 1e-300 raised IndexError (index -2^63: u / dz overflowed to inf).

    Given y = 1, z = sum phi(h_i)^2 exceeds 4e-300 unless every phi(h_i) = 0 (ReLU: probability
    0.5^N, the atom) or it is that tiny (probability ~ 1e-150 at most): the last cell gets the rest."""
    n = 10
    m = fw.kernel_masses([1.0], GRID * 1e-300, n, 2.0, activation=activation, method=method, n_quantiles=64)
    assert np.all(np.isfinite(m)) and m.sum() == pytest.approx(1.0, abs=1e-12)
    atom = 0.5**n if activation == "relu" else 0.0
    assert m[0, -1] == pytest.approx(1.0 - atom, abs=1e-12)
    op = fw.discretize_operator(GRID * 1e-300, n, 2.0, activation=activation, method=method, n_quantiles=64)
    assert np.all(np.isfinite(op.matrix)) and np.allclose(op.matrix.sum(0), 1.0)
    law = fw.inner_product_law(GRID * 1e-300, n, 1.0, 1.0, 0.3)
    assert np.all(np.isfinite(law)) and law.sum() == pytest.approx(1.0)


def test_activation_with_nan_is_a_valueerror_naming_it():
    """Issue: a custom sqrt activation (NaN for h < 0) gave IndexError on the FFT path."""

    # Activation.from_functions now refuses such a phi itself; either way a ValueError names it.
    def sq():
        return Activation.from_functions("sqrt", np.sqrt, lambda x: 0.5 / np.sqrt(x))

    calls = [
        lambda: fw.kernel_masses([1.0], GRID, 10, 2.0, activation=sq(), n_quantiles=64),
        lambda: fw.discretize_operator(GRID, 10, 2.0, activation=sq(), n_quantiles=64),
        lambda: fw.propagate_distribution(np.eye(33)[3], GRID, [(10, 2.0)], activation=sq(), n_quantiles=64),
    ]
    for call in calls:
        with pytest.raises(ValueError, match="activation 'sqrt'"):
            call()


def test_custom_activation_named_relu_takes_the_fft_path():
    """The closed form is chosen by the activation's code, not its name: a user 'relu' that is
    really |h| must not get the ReLU kernel (|h|^2 ~ sigma^2 chi^2_N: no atom at 0)."""
    fake = Activation.from_functions("relu", np.abs, np.sign)
    m = fw.kernel_masses([1.0], np.linspace(0, 8, 161), 4, 2.0, activation=fake, n_quantiles=4096)
    assert m[0, 0] == 0.0  # the true ReLU has an atom 0.5^4 there


@pytest.mark.parametrize("bad", ["abc", float("nan"), float("inf"), -1, 2.5, None, True, 1 + 1j, 10**12])
def test_n_quantiles_is_validated_on_the_relu_path(bad):
    """Issue: n_quantiles='abc' (and nan, -1, ...) were accepted and ignored by the closed-form path."""
    for call in (
        lambda: fw.kernel_masses([1.0], GRID, 10, 0.2, n_quantiles=bad),
        lambda: fw.discretize_operator(GRID, 10, 0.2, n_quantiles=bad),
        lambda: fw.propagate_distribution(np.eye(33)[3], GRID, [], n_quantiles=bad),
    ):
        with pytest.raises((TypeError, ValueError), match="n_quantiles"):
            call()


def test_propagate_distribution_validates_options_without_layers():
    with pytest.raises(TypeError, match="unexpected keyword"):
        fw.propagate_distribution(np.eye(33)[3], GRID, [], nodes=3)
    with pytest.raises(ValueError, match="method"):
        fw.propagate_distribution(np.eye(33)[3], GRID, [], method="exact")
    with pytest.raises(ValueError, match="activation"):
        fw.propagate_distribution(np.eye(33)[3], GRID, [], activation="nope")


def test_deep_and_wide_propagation_stays_a_probability_law():
    """Depth 10^4 at width 10^5 (He): the law stays finite and normalised; the atom gains exactly
    0.5^N of the non-zero mass per layer, 0 to float64 at N = 10^5 (mass accuracy ~1e-16 absolute)."""
    grid = np.linspace(0.0, 3.0, 31)
    p0 = fw.grid_masses([1.0], grid)
    out = fw.propagate_distribution(p0, grid, [(10**5, 2.0)] * 10**4, nodes_per_cell=1)
    assert np.all(np.isfinite(out)) and np.all(out >= 0)
    np.testing.assert_allclose(out.sum(axis=1), 1.0, atol=1e-10)


# ------------------------------------------------------------------ kernel and eigenvalues at extremes


def test_relu_kernel_at_width_1e5_carries_log_fields():
    """The atom 0.5^N underflows to 0 for N > 1074: log_atom carries it exactly; the far tail of the
    density underflows too: log_density carries it. N = 1 has the closed form 0.5 chi^2_1 / s."""
    k = fw.relu_kernel(1.0, [0.5, 1.0, 1e4], 10**5, 2.0)
    assert np.all(k.log_atom == -(10**5) * math.log(2.0)) and np.all(k.atom == 0.0)
    assert np.all(np.isfinite(k.log_density))
    np.testing.assert_allclose(np.exp(k.log_density[:2]), k.density[:2], rtol=1e-12)
    s, z = 0.7, np.array([0.3, 50.0, 5e3])  # chi^2_1 density e^{-3571} at the last point
    k1 = fw.relu_kernel(1.0, z, 1, s)
    ref = math.log(0.5) + stats.chi2.logpdf(z / s, 1) - math.log(s)
    np.testing.assert_allclose(k1.log_density, ref, rtol=1e-12)
    assert k1.density[-1] == 0.0 and math.isfinite(k1.log_density[-1])


def test_relu_eigenvalue_beyond_float_range_raises_instead_of_inf():
    """lambda_m for very negative m exceeded float64 and came back as inf; relu_log_eigenvalue is finite."""
    with pytest.raises(ValueError, match="relu_log_eigenvalue"):
        fw.relu_eigenvalue(-1e4, 10, 0.2)
    with pytest.raises(ValueError, match="relu_log_eigenvalue"):
        fw.relu_eigenvalue_printed(-1e4, 10, 0.2)
    for m in (-1e4, -1e150, -1e300):
        assert math.isfinite(fw.relu_log_eigenvalue(m, 10, 0.2))
    with pytest.raises(ValueError, match=r"m must lie in \[-1e300"):
        fw.relu_log_eigenvalue(-1e308, 10, 0.2)


@pytest.mark.parametrize("sw", [1e300, 1e-300, 1e40])
def test_critical_exponents_unresolvable_sigma_w2_names_it(sw):
    """Issue class: sigma_w2 = 1e300 gave 'm must be < -1/2' (an internal argument) and 1e-300 a
    FloatingPointError; both are now ValueErrors naming sigma_w2 and the resolvable range."""
    for f in (fw.critical_exponents, fw.quasi_stationary_exponent):
        with pytest.raises(ValueError, match="sigma_w2"):
            f(100, sw)


def test_critical_exponents_resolved_over_the_documented_range():
    """Every sigma_w2 in [1e-12, 2] (square layers) resolves (checked at the ends and He); the roots are roots."""
    for n in (3, 200):
        for c in (1e-12, 1e-3, 2.0):
            ce = fw.critical_exponents(n, c)
            for root in (ce.lower, ce.upper):
                assert abs(fw.relu_log_eigenvalue(root, n, c)) < 1e-9 * max(1.0, abs(root))


@pytest.mark.parametrize(
    "call",
    [
        lambda w: fw.relu_kernel(1.0, 1.0, w, 0.2),
        lambda w: fw.relu_log_eigenvalue(-2.0, w, 0.2),
        lambda w: fw.critical_exponents(w),
        lambda w: fw.kernel_masses([1.0], GRID, w, 0.2),
        lambda w: fw.kernel_masses([1.0], GRID, w, 0.2, activation="tanh"),
        lambda w: fw.discretize_operator(GRID, w, 0.2),
        lambda w: fw.mean_inner_product(w, 1.0, 1.0, 0.5),
        lambda w: fw.inner_product_law(GRID, w, 1.0, 1.0, 0.5),
        lambda w: fw.cosine_similarity_samples(w, 0.5, n_samples=10),
        lambda w: fw.expected_squared_norm(1.0, [(w, 0.2)]),
    ],
)
@pytest.mark.parametrize("width", [10**12, 2**64, 1e300])
def test_absurd_widths_are_valueerrors(call, width):
    """Issue class: width 10^12 raised MemoryError, 1e300 'Maximum allowed size exceeded', or was
    silently accepted on the FFT path."""
    with pytest.raises(ValueError, match="width"):
        call(width)


# ------------------------------------------------------------------ two inputs (Thm. 5)


def test_relu_product_density_scale_invariance_without_overflow():
    """Variances 1e-200 or 1e200: det V under/overflowed ('v12 must satisfy ...' or NaN). The law of
    relu(h1) relu(h2) scales: f_{cV}(t) = f_V(t / c) / c."""
    t = np.array([0.05, 0.4, 2.0])
    base = fw.relu_product_density(t, 1.0, 2.0, 0.6, log=True)
    for c in (1e-200, 1e200):
        scaled = fw.relu_product_density(t * c, c, 2.0 * c, 0.6 * c, log=True)
        np.testing.assert_allclose(scaled, base - math.log(c), rtol=1e-12, atol=1e-12)
    # against the printed formula with K0 where everything is representable
    v11, v22, v12 = 1.0, 2.0, 0.6
    det = v11 * v22 - v12 * v12
    direct = np.exp(v12 * t / det) * special.k0(math.sqrt(v11 * v22) * t / det) / (2 * math.pi * math.sqrt(det))
    np.testing.assert_allclose(fw.relu_product_density(t, v11, v22, v12), direct, rtol=1e-12)
    assert math.isfinite(fw.relu_product_density(1e4, 1.0, 1.0, 0.0, log=True))  # e^{-1e4}: on the log scale


def test_mean_inner_product_huge_and_tiny_variances():
    """v11 = v22 = 1e200 made v11 v22 overflow (inf result); the value is N sqrt(v11 v22) K(rho)."""
    ref = fw.mean_inner_product(10, 1.0, 1.0, 0.3)
    for c in (1e-150, 1e200):
        assert fw.mean_inner_product(10, c, c, 0.3 * c) == pytest.approx(ref * c, rel=1e-14)
    with pytest.raises(ValueError, match="float64"):
        fw.mean_inner_product(10**7, 1e302, 1e302, 0.0)


# ------------------------------------------------------------------ randomness


def test_cosine_similarity_samples_follows_the_rng_rule():
    """rng=7 gives the numbers of numpy.random.default_rng(7); the old seed keyword is gone."""
    a = fw.cosine_similarity_samples(20, 0.4, n_samples=500, rng=7)
    b = fw.cosine_similarity_samples(20, 0.4, n_samples=500, rng=np.random.default_rng(7))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, fw.cosine_similarity_samples(20, 0.4, n_samples=500, rng=8))
    with pytest.raises(TypeError):
        fw.cosine_similarity_samples(20, 0.4, n_samples=5, seed=7)
    for bad in (True, 1.5, "7", -1):
        with pytest.raises((TypeError, ValueError), match="rng"):
            fw.cosine_similarity_samples(20, 0.4, n_samples=5, rng=bad)


def test_cosine_similarity_samples_refuses_absurd_sizes():
    with pytest.raises(ValueError, match="n_samples"):
        fw.cosine_similarity_samples(10, 0.5, n_samples=10**12)
    with pytest.raises(ValueError, match="chunk"):
        fw.cosine_similarity_samples(10**6, 0.5, n_samples=10, chunk=10**4)


# ------------------------------------------------------------------ types


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda v: fw.relu_kernel(1.0, 1.0, 10, v), "sigma_w2"),
        (lambda v: fw.relu_kernel(v, 1.0, 10, 0.2), "y"),
        (lambda v: fw.relu_log_eigenvalue(v, 10, 0.2), "m"),
        (lambda v: fw.relu_eigenvalue(-2.0, 10, v), "sigma_w2"),
        (lambda v: fw.critical_exponents(10, v), "sigma_w2"),
        (lambda v: fw.kernel_masses([1.0], GRID, 10, 0.2, sigma_b2=v), "sigma_b2"),
        (lambda v: fw.discretize_operator(GRID, 10, v), "sigma_w2"),
        (lambda v: fw.grid_masses([v], GRID), "samples"),
        (lambda v: fw.expected_squared_norm(v, [(10, 0.2)]), "y0"),
        (lambda v: fw.preactivation_covariance(np.eye(2), v, fan_in=2), "sigma_w2"),
        (lambda v: fw.orthant_probability(v), "rho"),
        (lambda v: fw.relu_correlation(v), "rho"),
        (lambda v: fw.mean_inner_product(10, v, 1.0, 0.5), "v11"),
        (lambda v: fw.relu_product_density(v, 1.0, 1.0, 0.5), "t"),
        (lambda v: fw.inner_product_law(GRID, 10, 1.0, v, 0.5), "v22"),
        (lambda v: fw.cosine_similarity_samples(10, v, n_samples=5), "rho"),
        (lambda v: fw.cosine_similarity_samples(10, 0.5, n_samples=5, sigma_w2=v), "sigma_w2"),
    ],
)
@pytest.mark.parametrize("value", [True, 1 + 1j])
def test_bools_and_complex_numbers_are_typeerrors(call, name, value):
    """Issue: bools were accepted as numbers (True -> 1.0), and complex input must be a TypeError."""
    with pytest.raises(TypeError, match=name):
        call(value)


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda a: fw.discretize_operator(a, 10, 0.2), "grid"),
        (lambda a: fw.kernel_masses(a[:2], GRID, 10, 0.2), "y"),
        (lambda a: fw.grid_masses(a, GRID), "samples"),
        (lambda a: fw.propagate_distribution(a / a.real.sum(), GRID, []), "p0"),
        (lambda a: fw.preactivation_covariance(np.diag(a[1:4]), 0.2, fan_in=3), "gram"),
        (lambda a: fw.relu_product_density(a[1:], 1.0, 1.0, 0.5), "t"),
        (lambda a: fw.inner_product_law(a, 10, 1.0, 1.0, 0.5), "grid"),
    ],
)
def test_complex_arrays_are_typeerrors(call, name):
    """Fuzz: complex grid, y, samples, p0, gram, t: imaginary parts were dropped silently."""
    with pytest.raises(TypeError, match=name):
        call(GRID + 1j * GRID)


def test_log_flag_must_be_a_bool():
    for bad in ("no", None, 1, float("nan"), [True]):
        with pytest.raises(TypeError, match="log"):
            fw.relu_product_density(1.0, 1.0, 1.0, 0.5, log=bad)


def test_scalars_reject_arrays():
    """sigma_w2=[1, 2] was accepted (broadcast into a wrong-shaped result) or raised a foreign message."""
    for call in (
        lambda: fw.relu_kernel(1.0, 1.0, 10, [1.0, 2.0]),
        lambda: fw.preactivation_covariance(np.eye(2), 0.2, [1.0, 2.0], fan_in=2),
        lambda: fw.mean_inner_product(10, [1.0, 2.0], 1.0, 0.5),
        lambda: fw.discretize_operator(GRID, 10, [0.2, 0.3]),
    ):
        with pytest.raises(TypeError, match="scalar"):
            call()
