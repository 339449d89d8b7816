"""Tests of meanfield.finite_width (seed 001, Burkholz & Dubatovka 2019).

Every formula is checked against an independent computation: direct quadrature of its defining
integral with SciPy's chi-square law, or simulation of the random variables it describes.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from meanfield import finite_width as fw
from meanfield.gaussian import pair_expectation
from meanfield.init import gsm, looks_linear, looks_linear_input, orthogonal_looks_linear

#: Relative accuracy of scipy.integrate.quad on the smooth eigenvalue integrals (observed ~1e-12).
QUAD_RTOL = 1e-7
#: z-score allowed for Monte-Carlo comparisons (two-sided 6.8e-6 per check).
Z = 4.5


def _kernel_scipy(y, z, n, sw, sb=0.0):
    """Independent ReLU kernel density: 0.5^N sum_k C(N, k) chi2_k(z / s) / s, via scipy.stats."""
    s = sw * y + sb
    return sum(math.comb(n, k) * 0.5**n * stats.chi2.pdf(z / s, k) / s for k in range(1, n + 1))


# ------------------------------------------------------------------------------------------------
# kernel
# ------------------------------------------------------------------------------------------------


@given(st.integers(1, 40), st.floats(0.05, 5.0), st.floats(0.0, 1.0), st.floats(0.05, 5.0), st.floats(0.01, 8.0))
@settings(max_examples=25)
def test_kernel_matches_chi_square_mixture(n, sw, sb, y, z):
    k = fw.relu_kernel(y, z, n, sw, sb)
    assert k.atom == pytest.approx(0.5**n)
    assert k.density == pytest.approx(_kernel_scipy(y, z, n, sw, sb), rel=1e-9, abs=1e-300)


def test_kernel_is_a_probability_law_and_matches_simulation():
    n, sw, sb, y = 7, 0.4, 0.2, 1.3
    mass = integrate.quad(lambda z: fw.relu_kernel(y, z, n, sw, sb).density, 0, np.inf, limit=400)[0]
    assert mass + 0.5**n == pytest.approx(1.0, abs=1e-8)
    rng = np.random.default_rng(1)
    h = rng.standard_normal((200_000, n)) * math.sqrt(sw * y + sb)
    zs = (np.maximum(h, 0) ** 2).sum(1)
    for t in (0.5, 1.5, 3.0):
        cdf = 0.5**n + integrate.quad(lambda z: fw.relu_kernel(y, z, n, sw, sb).density, 0, t, limit=400)[0]
        p = (zs <= t).mean()
        assert abs(p - cdf) < Z * math.sqrt(cdf * (1 - cdf) / zs.size)


def test_kernel_wide_layer_is_finite():
    k = fw.relu_kernel(1.0, np.array([0.9, 1.0, 1.1]), 100_000, 2e-5)
    assert np.all(np.isfinite(k.density)) and np.all(k.density > 0)
    # concentrated around z = y with sd sqrt(2 * (3 - 1) / N) ~ 0.0063 (relative)
    assert k.density[1] > 10 * k.density[0]


# ------------------------------------------------------------------------------------------------
# eigenvalues
# ------------------------------------------------------------------------------------------------


@given(st.integers(1, 3000), st.floats(1e-3, 10.0))
def test_lambda_minus_one(n, sw):
    assert fw.relu_eigenvalue(-1.0, n, sw) == pytest.approx(1 - 0.5**n, rel=1e-12)


@given(st.integers(1, 25), st.floats(0.1, 4.0), st.floats(-4.0, -0.6), st.floats(0.2, 3.0))
@settings(max_examples=10)
def test_eigenvalue_equals_direct_quadrature(n, sw, m, z):
    """T[y^m](z) / z^m by quadrature of the defining integral, with the independent kernel."""
    f = lambda y: _kernel_scipy(y, z, n, sw) * y**m  # noqa: E731
    # split at the kernel's peak region to help quad
    val = sum(integrate.quad(f, a, b, limit=500)[0] for a, b in ((0, z / sw / 50), (z / sw / 50, z / sw * 5), (z / sw * 5, np.inf)))
    assert fw.relu_eigenvalue(m, n, sw) == pytest.approx(val / z**m, rel=QUAD_RTOL)


def test_printed_eigenvalue_differs_by_four_to_m_plus_one():
    m = np.array([-3.0, -2.0, -1.5])
    assert np.allclose(fw.relu_eigenvalue_printed(m, 10, 0.2), fw.relu_eigenvalue(m, 10, 0.2) * 4.0 ** (m + 1))
    # ... and the printed one is not the quadrature value (m = -2, He: derived = 1, printed = 1/4)
    assert fw.relu_eigenvalue(-2.0, 10, 0.2) == pytest.approx(1.0)
    assert fw.relu_eigenvalue_printed(-2.0, 10, 0.2) == pytest.approx(0.25)


@pytest.mark.parametrize("n", [1, 10, 1000, 100_000])
def test_eigenvalue_he_minus_two_is_one_and_stable(n):
    assert fw.relu_eigenvalue(-2.0, n, 2.0 / n) == pytest.approx(1.0, rel=1e-10)
    big = fw.relu_eigenvalue(-1e4, n, 2.0 / n)
    assert big == math.inf or big > 1  # never NaN


def test_critical_exponents_he():
    for n, paper in ((10, -19.4630623), (20, -35.6701453), (100, -165.3268093)):
        ce = fw.critical_exponents(n)
        assert ce.paper_relation == pytest.approx(paper)
        assert ce.lower == pytest.approx(-2.0, abs=1e-8)
        assert -1.0 < ce.upper < -0.5
        mid = 0.5 * (ce.lower + ce.upper)
        assert fw.relu_eigenvalue(mid, n, 2.0 / n) < 1 < fw.relu_eigenvalue(ce.lower - 0.5, n, 2.0 / n)
        # the paper's relation is (within ~1.2) the printed formula's lower root, not the derived one
        assert abs(ce.printed_lower - paper) < 1.2
        assert abs(ce.lower - paper) > 15


# ------------------------------------------------------------------------------------------------
# discretised operator and propagated laws
# ------------------------------------------------------------------------------------------------


@given(st.integers(5, 40), st.integers(1, 30), st.floats(0.01, 3.0), st.floats(0.0, 1.0), st.floats(0.5, 20.0))
@settings(max_examples=8)
def test_operator_conserves_probability(g, n, sw, sb, top):
    op = fw.discretize_operator(np.linspace(0, top, g), n, sw, sb, nodes_per_cell=2)
    assert np.all(op.matrix >= 0)
    assert np.allclose(op.matrix.sum(0), 1.0, atol=1e-12)


def test_operator_second_eigenvalue_is_lambda_minus_one():
    """Every column puts exactly 0.5^N on the atom, so the cell block has Perron root 1 - 0.5^N."""
    for n in (3, 10):
        op = fw.discretize_operator(np.linspace(0, 6, 61), n, 2.0 / n)
        w, _ = op.eig()
        assert w[0].real == pytest.approx(1.0)
        assert w[1].real == pytest.approx(1 - 0.5**n, abs=1e-10)


@pytest.mark.parametrize("factor", [2.0, 1.6, 1.2])
def test_operator_positive_eigenvector_is_power_law(factor):
    """The eigenvector of 1 - 0.5^N has density ~ y^m, m = quasi_stationary_exponent (paper: shapes ~ y^m)."""
    n = 10
    g = np.linspace(0, 8, 201)
    op = fw.discretize_operator(g, n, factor / n, nodes_per_cell=2)
    w, v = op.eig()
    assert w[1].real == pytest.approx(1 - 0.5**n)
    dens = np.abs(np.real(v[1:, 1])) / np.diff(g)
    c = op.centers[1:]
    sel = (c > 0.2) & (c < 2.0)
    slope = np.polyfit(np.log(c[sel]), np.log(dens[sel]), 1)[0]
    # cell averaging of a steep power law on the step-0.04 grid: error ~ m^2 h^2 / y^2, <= 1 % here
    assert slope == pytest.approx(fw.quasi_stationary_exponent(n, factor / n), rel=0.01)


def test_operator_spectrum_converges_under_refinement():
    eig = []
    for g in (51, 101, 201):
        w, _ = fw.discretize_operator(np.linspace(0, 8, g), 10, 0.1, 0.5, nodes_per_cell=2).eig()
        eig.append(np.real(w[1:4]))
    d1, d2 = np.abs(eig[1] - eig[0]), np.abs(eig[2] - eig[1])
    assert np.all(d2 < 0.65 * d1)  # first order: ratio ~1/2
    assert np.all(d2 < 2e-3)


def test_operator_reproduces_eigenvalue_on_log_grid():
    """Apply the matrix to the cell masses of y^m; the interior ratio -> lambda_m (O(h^2), Richardson)."""
    n, sw = 20, 0.1
    est = {}
    for pts in (121, 241):
        edges = np.concatenate([[0.0], np.logspace(-6, 6, pts)])
        op = fw.discretize_operator(edges, n, sw, nodes_per_cell=2)
        e = edges[1:]
        i = np.searchsorted(edges, 1.0)
        for m in (-3.0, -2.0, -1.5):
            v = np.concatenate([[0.0, 0.0], (e[1:] ** (m + 1) - e[:-1] ** (m + 1)) / (m + 1)])
            est.setdefault(m, []).append((op.matrix @ v)[i] / v[i])
    for m, (coarse, fine) in est.items():
        assert (4 * fine - coarse) / 3 == pytest.approx(fw.relu_eigenvalue(m, n, sw), rel=2e-4)


def test_fft_path_matches_closed_form():
    g = np.linspace(0, 5, 101)
    a = fw.discretize_operator(g, 20, 0.1, nodes_per_cell=2)
    b = fw.discretize_operator(g, 20, 0.1, nodes_per_cell=2, method="fft", n_quantiles=2048)
    ks = np.abs(np.cumsum(a.matrix - b.matrix, 0)).max(0)
    assert ks[20:].max() < 0.02  # sources >= 20 cells from 0: O(step) lattice error
    c = a.centers
    assert np.allclose((c @ a.matrix)[20:80], (c @ b.matrix)[20:80], rtol=2e-3)


def test_kernel_masses_relu_closed_vs_fft_vs_simulation():
    g = np.linspace(0, 6, 121)
    closed = fw.kernel_masses(2.0, g, 16, 0.125)[0]
    fft = fw.kernel_masses(2.0, g, 16, 0.125, method="fft")[0]
    assert closed.sum() == pytest.approx(1.0) and fft.sum() == pytest.approx(1.0)
    assert closed[0] == pytest.approx(0.5**16) and fft[0] == pytest.approx(0.5**16)
    assert np.max(np.abs(np.cumsum(closed - fft))) < 0.01  # O(grid step 0.05) on a law of sd ~0.8
    zs = (np.maximum(np.random.default_rng(2).standard_normal((100_000, 16)) * 0.5, 0) ** 2).sum(1)
    cdf_mc = np.array([(zs <= t).mean() for t in g])
    assert np.max(np.abs(np.cumsum(closed) - cdf_mc)) < Z * 0.5 / math.sqrt(zs.size)


def test_fft_path_other_activation_conserves_and_matches_simulation():
    g = np.linspace(0, 20, 201)
    op = fw.discretize_operator(g, 8, 1.0, 0.1, activation="tanh", nodes_per_cell=1)
    assert np.allclose(op.matrix.sum(0), 1.0)
    j = 50  # source cell (4.9, 5.0]
    y = op.centers[j]
    rng = np.random.default_rng(3)
    zs = (np.tanh(rng.standard_normal((100_000, 8)) * math.sqrt(y + 0.1)) ** 2).sum(1)
    cdf_th = np.cumsum(op.matrix[:, j])
    cdf_mc = np.array([(zs <= t).mean() for t in g])
    assert np.max(np.abs(cdf_th - cdf_mc)) < 0.03  # lattice step 0.1 on a law of sd ~0.8


def test_propagate_distribution_mean_follows_corollary_3():
    g = np.linspace(0, 12, 241)
    p0 = np.zeros(g.size)
    p0[20] = 1.0  # cell (0.95, 1.0]
    layers = [(30, 2 / 30), (20, 2 / 20, 0.05), fw.Layer(40, 0.04, 0.0)]
    laws = fw.propagate_distribution(p0, g, layers)
    assert laws.shape == (4, g.size)
    assert np.allclose(laws.sum(1), 1.0)
    c = np.concatenate([[0.0], 0.5 * (g[1:] + g[:-1])])
    y0 = c[20]
    expected = fw.expected_squared_norm(y0, layers)
    assert np.allclose(laws @ c, expected, rtol=5e-3)  # grid step 0.05 against means ~1


def test_expected_squared_norm_against_simulation():
    rng = np.random.default_rng(5)
    widths, sws, sbs = [50, 30, 40], [0.05, 0.06, 0.05], [0.1, 0.0, 0.2]
    x0 = rng.standard_normal(20)
    y0 = x0 @ x0
    reps = 20_000
    x = np.broadcast_to(x0, (reps, 20))
    for n, sw, sb in zip(widths, sws, sbs):
        w = rng.standard_normal((reps, x.shape[1], n)) * math.sqrt(sw)
        x = np.maximum(np.einsum("ri,rij->rj", x, w) + rng.standard_normal((reps, n)) * math.sqrt(sb), 0)
    z = (x * x).sum(1)
    th = fw.expected_squared_norm(y0, list(zip(widths, sws, sbs)))[-1]
    assert abs(z.mean() - th) < Z * z.std() / math.sqrt(reps)


def test_grid_masses():
    g = np.array([0.0, 1.0, 2.0])
    assert np.allclose(fw.grid_masses([0.0, 0.5, 1.0, 1.5, 7.0], g), [0.2, 0.4, 0.4])


# ------------------------------------------------------------------------------------------------
# two inputs: Prop. 2, Thm. 5
# ------------------------------------------------------------------------------------------------


def test_preactivation_covariance():
    gram = np.array([[2.0, 0.5], [0.5, 1.0]])
    assert np.allclose(fw.preactivation_covariance(gram, 0.3, 0.1), 0.3 * gram + 0.1)


@given(st.floats(-0.999, 0.999))
@settings(max_examples=15)
def test_orthant_probability_is_papers_integral(rho):
    r = rho / math.sqrt(1 - rho * rho)
    val = integrate.quad(lambda u: stats.norm.cdf(u * r) * math.exp(-u * u / 2), 0, np.inf)[0] / math.sqrt(2 * math.pi)
    assert fw.orthant_probability(rho) == pytest.approx(val, abs=1e-9)


def test_relu_correlation_endpoints_and_monotone():
    assert fw.relu_correlation(1.0) == pytest.approx(1.0)
    assert fw.relu_correlation(0.0) == pytest.approx(0.0)
    assert fw.relu_correlation(-1.0) == pytest.approx(-1 / (math.pi - 1))
    r = np.linspace(-1, 1, 2001)
    c = fw.relu_correlation(r)
    assert np.all(np.diff(c) > 0)
    assert np.all(c[r >= 0] <= r[r >= 0] + 1e-15)  # Thm. 5's "smaller than rho" on [0, 1] ...
    assert np.all(c[(r < 0)] > r[(r < 0)])  # ... but not for rho < 0


@given(st.floats(-1.0, 1.0), st.floats(0.1, 3.0), st.floats(0.1, 3.0))
@settings(max_examples=20)
def test_relu_correlation_and_mean_equal_arc_cosine_kernel(rho, v11, v22):
    exy = float(pair_expectation("relu", v11, v22, rho))  # arc-cosine kernel
    mean = math.sqrt(v11 * v22) / (2 * math.pi)  # E relu(h1) E relu(h2)
    var = math.sqrt(v11 * v22) * (math.pi - 1) / (2 * math.pi)
    assert fw.relu_correlation(rho) == pytest.approx((exy - mean) / var, abs=1e-10)
    v12 = rho * math.sqrt(v11 * v22)
    assert fw.mean_inner_product(7, v11, v22, v12) == pytest.approx(7 * exy, rel=1e-10)


def test_relu_correlation_against_simulation():
    rng = np.random.default_rng(7)
    for rho in (-0.6, 0.3, 0.9):
        a = rng.standard_normal(400_000)
        b = rho * a + math.sqrt(1 - rho * rho) * rng.standard_normal(a.size)
        c = np.corrcoef(np.maximum(a, 0), np.maximum(b, 0))[0, 1]
        assert abs(c - fw.relu_correlation(rho)) < Z * (1 - c * c) / math.sqrt(a.size) * 1.5


def test_product_density_integrates_to_g_and_matches_simulation():
    v11, v22, v12 = 1.5, 0.8, 0.5
    rho = v12 / math.sqrt(v11 * v22)
    f = lambda t: fw.relu_product_density(t, v11, v22, v12)  # noqa: E731
    assert integrate.quad(f, 0, np.inf, limit=400)[0] == pytest.approx(fw.orthant_probability(rho), abs=1e-8)
    rng = np.random.default_rng(11)
    h = rng.multivariate_normal([0, 0], [[v11, v12], [v12, v22]], size=400_000)
    prod = np.maximum(h[:, 0], 0) * np.maximum(h[:, 1], 0)
    for t in (0.1, 0.5, 2.0):
        p_th = 1 - fw.orthant_probability(rho) + integrate.quad(f, 0, t, limit=400)[0]
        p_mc = (prod <= t).mean()
        assert abs(p_mc - p_th) < Z * math.sqrt(p_th * (1 - p_th) / prod.size)


def test_inner_product_law_mean_and_simulation():
    n, v11, v22, v12 = 20, 0.1, 0.1, 0.05
    g = np.linspace(0, 3, 601)
    law = fw.inner_product_law(g, n, v11, v22, v12)
    assert law.sum() == pytest.approx(1.0)
    c = np.concatenate([[0.0], 0.5 * (g[1:] + g[:-1])])
    assert law @ c == pytest.approx(fw.mean_inner_product(n, v11, v22, v12), rel=5e-3)
    rng = np.random.default_rng(13)
    h = rng.multivariate_normal([0, 0], [[v11, v12], [v12, v22]], size=(100_000, n))
    s = (np.maximum(h[..., 0], 0) * np.maximum(h[..., 1], 0)).sum(1)
    cdf = np.cumsum(law)
    for j in (60, 120, 200):
        p_mc = (s <= g[j]).mean()
        assert abs(p_mc - cdf[j]) < Z * math.sqrt(cdf[j] * (1 - cdf[j]) / s.size) + 5e-3  # + O(step) lattice


def test_cosine_similarity_samples():
    s = fw.cosine_similarity_samples(50, 1.0, n_samples=1000, seed=0)
    assert np.allclose(s, 1.0)
    a = fw.cosine_similarity_samples(100, 0.5, n_samples=20_000, seed=1)
    b = fw.cosine_similarity_samples(100, 0.5, n_samples=20_000, seed=1)
    assert np.array_equal(a, b)
    assert np.all((a >= 0) & (a <= 1))
    # mean cosine -> E relu relu / E relu^2 = 2 (g rho + sqrt(1-rho^2) / (2 pi)) as N grows
    limit = 2 * float(fw.mean_inner_product(1, 1.0, 1.0, 0.5))
    assert abs(a.mean() - limit) < 0.01  # O(1/N) ratio bias at N = 100 (~1e-3) + 4.5 se (~1e-3)
    f = fw.cosine_similarity_samples(100, 0.5, n_samples=20_000, seed=1, dtype=np.float32)
    assert np.max(np.abs(f - a)) > 0 and abs(f.mean() - a.mean()) < 0.004  # independent draws: 4.5 * sqrt(2) se


# ------------------------------------------------------------------------------------------------
# looks-linear initialisation (Sec. 3)
# ------------------------------------------------------------------------------------------------


@given(st.integers(1, 40), st.integers(1, 6), st.booleans())
@settings(max_examples=20)
def test_looks_linear_network_is_linear(half, depth, orthogonal):
    rng = np.random.default_rng(half * 10 + depth)
    a = rng.standard_normal(half)
    x = looks_linear_input(a)
    lin = a.copy()
    for _ in range(depth):
        w = orthogonal_looks_linear(2 * half, 2 * half, rng=rng) if orthogonal else gsm(2 * half, 2 * half, rng=rng)
        w0 = w[:half, :half]
        assert np.array_equal(w, looks_linear(w0))
        h = w @ x
        lin = w0 @ lin
        assert np.allclose(h[:half], lin, rtol=1e-12, atol=1e-12 * (1 + np.abs(lin).max()))
        assert np.allclose(h[half:], -lin, rtol=1e-12, atol=1e-12 * (1 + np.abs(lin).max()))
        x = np.maximum(h, 0)
    if orthogonal:
        assert np.linalg.norm(lin) == pytest.approx(np.linalg.norm(a))


# ------------------------------------------------------------------------------------------------
# bad input
# ------------------------------------------------------------------------------------------------


def test_bad_inputs_raise():
    with pytest.raises(ValueError, match="m must be < -1/2"):
        fw.relu_eigenvalue(-0.5, 10, 0.2)
    with pytest.raises(ValueError, match="width"):
        fw.relu_eigenvalue(-2.0, 0, 0.2)
    with pytest.raises(ValueError, match="sigma_w2"):
        fw.relu_eigenvalue(-2.0, 5, 0.0)
    with pytest.raises(ValueError, match="increasing"):
        fw.discretize_operator([0.0, 2.0, 1.0], 5, 0.2)
    with pytest.raises(ValueError, match="start at 0"):
        fw.discretize_operator([1.0, 2.0], 5, 0.2)
    with pytest.raises(ValueError, match="equidistant"):
        fw.discretize_operator([0.0, 1.0, 3.0], 5, 0.2, activation="tanh")
    with pytest.raises(ValueError, match="width"):
        fw.relu_kernel(1.0, 1.0, 0, 0.2)
    with pytest.raises(ValueError, match="rho"):
        fw.relu_correlation(1.5)
    with pytest.raises(ValueError, match="v12"):
        fw.mean_inner_product(3, 1.0, 1.0, 2.0)
    with pytest.raises(ValueError, match="p0"):
        fw.propagate_distribution([0.5, 0.6], [0.0, 1.0], [(3, 0.5)])


# ------------------------------------------------------------------------------------------------
# the paper's qualitative claims (Fig. 1a), the simulator, validation rows and a figure
# ------------------------------------------------------------------------------------------------


def test_fig_1a_claim_mean_preserved_and_right_tail_grows():
    """He, N = 200: E|x^l|^2 is preserved while the law becomes more right-skewed (Sec. 2.3)."""
    grid = np.linspace(0, 4, 201)
    p0 = np.zeros(grid.size)
    p0[50] = 1.0  # cell (0.98, 1.0]
    laws = fw.propagate_distribution(p0, grid, [(200, 0.01)] * 9, nodes_per_cell=1)
    c = np.concatenate([[0.0], 0.5 * (grid[1:] + grid[:-1])])
    mean = laws @ c
    assert np.allclose(mean, mean[0], rtol=1e-3)
    var = laws @ c**2 - mean**2
    skew = np.array([(law @ (c - m) ** 3) / v**1.5 for law, m, v in zip(laws[1:], mean[1:], var[1:])])
    assert np.all(np.diff(var[1:]) > 0) and np.all(skew > 0)
    # z | y = (2 y / N) chi^2_K, K ~ Bin(N, 1/2): Var(z | y) = (2y/N)^2 (2 E K + Var K) = 5 y^2 / N;
    # 5 % covers the grid (step 0.02 on a law of sd 0.16)
    assert var[1] == pytest.approx(5 / 200 * mean[0] ** 2, rel=0.05)


def test_simulator_squared_norms_he_preserves_mean():
    from validation._finite_width_networks import simulate_squared_norms

    x = np.random.default_rng(0).standard_normal((4, 10))
    sim = simulate_squared_norms(x, [(50, 0.04)] * 3, 400, 4, seed=1)
    assert sim.shape == (400, 4, 4)
    y0 = (x * x).sum(1).mean()
    m, se = sim[:, :, 3].mean(), sim[:, :, 3].mean(1).std() / math.sqrt(400)
    assert abs(m - y0) < Z * se + 0.02 * y0  # 0.02: input-sampling noise of the pool mean


def test_validation_eigen_rows_pass():
    from validation.finite_width import _eigen_rows

    rows = []
    _eigen_rows(rows)
    assert len(rows) == 9 and all(r.passed for r in rows)


def test_fig_1b_writes_files(tmp_path):
    import json

    from figures.burkholz2019 import fig_1b

    paths = fig_1b(tmp_path)
    assert all(p.exists() for p in paths)
    data = json.loads(paths[1].read_text())
    assert data["N=10"]["critical"]["lower"] == pytest.approx(-2.0, abs=1e-6)


def test_depth_ten_thousand_atom_mass_exact():
    """Each He layer moves exactly 0.5^N of the non-zero mass to the absorbing atom at 0."""
    n, depth = 10, 10_000
    grid = np.linspace(0, 5, 41)
    p0 = np.zeros(grid.size)
    p0[8] = 1.0
    laws = fw.propagate_distribution(p0, grid, [(n, 2.0 / n)] * depth, nodes_per_cell=1)
    assert np.all(np.isfinite(laws)) and np.allclose(laws.sum(1), 1.0, atol=1e-9)
    layers = np.array([1, 100, depth])
    assert np.allclose(laws[layers, 0], 1 - (1 - 0.5**n) ** layers, rtol=1e-9)


def test_cosine_law_does_not_depend_on_sigma_w_without_bias():
    """Sec. 2.3 says a smaller sigma_w than He lowers the mean cosine similarity; with sigma_b = 0
    a ReLU network is positively homogeneous, so every layer's cosine is independent of sigma_w."""
    from validation._finite_width_networks import simulate_pair

    x1, x2 = np.eye(8)[0], (np.eye(8)[0] + np.eye(8)[1]) / math.sqrt(2)
    _, c_he = simulate_pair(x1, x2, 50, 2 / 50, 0.0, 500, seed=3)
    _, c_small = simulate_pair(x1, x2, 50, 1 / 50, 0.0, 500, seed=3)
    assert np.allclose(c_he, c_small, rtol=1e-12)
    _, c_bias = simulate_pair(x1, x2, 50, 1 / 50, 0.5, 500, seed=3)
    assert c_bias.mean() > c_he.mean()  # a bias adds a shared component: cosines increase
