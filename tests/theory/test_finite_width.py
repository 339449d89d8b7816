"""Tests of meanfield.finite_width (Burkholz & Dubatovka 2019).

Every formula is checked against an independent computation: direct quadrature of its defining
integral with SciPy's chi-square law, or simulation of the random variables it describes.

The library takes ``sigma_w2`` with ``W_ij ~ N(0, sigma_w2 / fan_in)`` (He = 2; ``fan_in`` defaults
to the width). The independent references below (``_kernel_scipy``, the simulations) are written in
Burkholz & Dubatovka 2019's per-weight variance ``sw = sigma_w2 / fan_in``; each test converts at that boundary.
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

#: Relative rounding of relu_eigenvalue's log-space sum (Stirling-difference Gamma ratios, error
#: < 3e-14 per term, see the private meanfield.finite_width._eigen) plus float64 accumulation.
EIGEN_RTOL = 1e-12
#: Relative accuracy requested from scipy.integrate.quad (epsrel, with epsabs = 0).
QUAD_RTOL = 1e-10
#: z-score allowed for Monte-Carlo comparisons (two-sided 6.8e-6 per check).
Z = 4.5
#: A first-order discretisation's error is estimated from one refinement (step h -> h / 2) by
#: error(h) ~ 2 |value(h) - value(h / 2)| (Richardson with p = 1; for p = 2 the factor is 4/3,
#: so 2 is safe for both).
REFINEMENT_FACTOR = 2.0


def _kernel_scipy(y, z, n, sw, sb=0.0):
    """Independent ReLU kernel density: 0.5^N sum_k C(N, k) chi2_k(z / s) / s, via scipy.stats (sw unscaled)."""
    s = sw * y + sb
    return sum(math.comb(n, k) * 0.5**n * stats.chi2.pdf(z / s, k) / s for k in range(1, n + 1))


# ------------------------------------------------------------------------------------------------
# kernel
# ------------------------------------------------------------------------------------------------


@given(st.integers(1, 40), st.floats(0.05, 5.0), st.floats(0.0, 1.0), st.floats(0.05, 5.0), st.floats(0.01, 8.0))
@settings(max_examples=25)
def test_kernel_matches_chi_square_mixture(n, sw, sb, y, z):
    k = fw.relu_kernel(y, z, n, sw * n, sb)  # sigma_w2 = sw * fan_in, fan_in = width
    assert k.atom == pytest.approx(0.5**n)
    assert k.density == pytest.approx(_kernel_scipy(y, z, n, sw, sb), rel=1e-9, abs=1e-300)


@given(st.integers(1, 40), st.integers(1, 500), st.floats(0.05, 5.0), st.floats(0.05, 5.0), st.floats(0.01, 8.0))
@settings(max_examples=15)
def test_kernel_fan_in_scales_the_weight_variance(n, fan_in, sigma_w2, y, z):
    """W_ij ~ N(0, sigma_w2 / fan_in): the kernel is Burkholz & Dubatovka's with sw = sigma_w2 / fan_in."""
    k = fw.relu_kernel(y, z, n, sigma_w2, 0.1, fan_in=fan_in)
    assert k.density == pytest.approx(_kernel_scipy(y, z, n, sigma_w2 / fan_in, 0.1), rel=1e-9, abs=1e-300)


@pytest.mark.slow
def test_kernel_is_a_probability_law_and_matches_simulation():
    n, sigma_w2, sb, y = 7, 2.8, 0.2, 1.3
    sw = sigma_w2 / n  # Burkholz & Dubatovka's per-weight variance, for the simulation
    mass = integrate.quad(lambda z: fw.relu_kernel(y, z, n, sigma_w2, sb).density, 0, np.inf, limit=400)[0]
    assert mass + 0.5**n == pytest.approx(1.0, abs=1e-8)
    rng = np.random.default_rng(1)
    h = rng.standard_normal((200_000, n)) * math.sqrt(sw * y + sb)
    zs = (np.maximum(h, 0) ** 2).sum(1)
    for t in (0.5, 1.5, 3.0):
        cdf = 0.5**n + integrate.quad(lambda z: fw.relu_kernel(y, z, n, sigma_w2, sb).density, 0, t, limit=400)[0]
        p = (zs <= t).mean()
        assert abs(p - cdf) < Z * math.sqrt(cdf * (1 - cdf) / zs.size)


def test_kernel_wide_layer_is_finite():
    k = fw.relu_kernel(1.0, np.array([0.9, 1.0, 1.1]), 100_000, 2.0)  # He
    assert np.all(np.isfinite(k.density)) and np.all(k.density > 0)
    # concentrated around z = y with sd sqrt(2 * (3 - 1) / N) ~ 0.0063 (relative)
    assert k.density[1] > 10 * k.density[0]


# ------------------------------------------------------------------------------------------------
# eigenvalues
# ------------------------------------------------------------------------------------------------


@given(st.integers(1, 3000), st.floats(1e-3, 10.0), st.integers(1, 10**6))
def test_lambda_minus_one(n, sigma_w2, fan_in):
    assert fw.relu_eigenvalue(-1.0, n, sigma_w2, fan_in=fan_in) == pytest.approx(1 - 0.5**n, rel=1e-12)


@pytest.mark.slow
@given(st.integers(1, 25), st.floats(0.1, 4.0), st.floats(-4.0, -0.6), st.floats(0.2, 3.0))
@settings(max_examples=10)
def test_eigenvalue_equals_direct_quadrature(n, sw, m, z):
    """T[y^m](z) / z^m by quadrature of the defining integral, with the independent kernel."""
    f = lambda y: _kernel_scipy(y, z, n, sw) * y**m  # noqa: E731
    # split at the kernel's peak region to help quad; tolerance = the accuracy quad was asked for
    # (relative QUAD_RTOL per part, no absolute floor: quad's default epsabs=1.5e-8 lets the
    # infinite tail stop at 1e-8 relative while reporting 1e-11) plus its reported error estimates
    edges = (0, z / sw / 50, z / sw / 5, z / sw, z / sw * 5, np.inf)
    parts = [integrate.quad(f, a, b, limit=500, epsabs=0.0, epsrel=QUAD_RTOL) for a, b in zip(edges[:-1], edges[1:])]
    val, err = sum(p[0] for p in parts), sum(p[1] for p in parts)
    lam = fw.relu_eigenvalue(m, n, sw * n)  # sigma_w2 = sw * fan_in, fan_in = width
    assert abs(lam - val / z**m) <= (QUAD_RTOL * abs(val) + err) / z**m + EIGEN_RTOL * lam


def test_printed_eigenvalue_differs_by_four_to_m_plus_one():
    m = np.array([-3.0, -2.0, -1.5])
    assert np.allclose(fw.relu_eigenvalue_printed(m, 10, 2.0), fw.relu_eigenvalue(m, 10, 2.0) * 4.0 ** (m + 1))
    # ... and the printed one is not the quadrature value (m = -2, He: derived = 1, printed = 1/4)
    assert fw.relu_eigenvalue(-2.0, 10, 2.0) == pytest.approx(1.0)
    assert fw.relu_eigenvalue_printed(-2.0, 10, 2.0) == pytest.approx(0.25)


@pytest.mark.parametrize("n", [1, 10, 1000, 100_000])
def test_eigenvalue_he_minus_two_is_one_and_stable(n):
    assert fw.relu_eigenvalue(-2.0, n, 2.0) == pytest.approx(1.0, rel=1e-10)
    # beyond float64: an error naming the log-scale function, never inf or NaN; the log is finite
    with pytest.raises(ValueError, match="relu_log_eigenvalue"):
        fw.relu_eigenvalue(-1e4, n, 2.0)
    assert math.isfinite(fw.relu_log_eigenvalue(-1e4, n, 2.0)) and fw.relu_log_eigenvalue(-1e4, n, 2.0) > 709


def test_critical_exponents_he():
    widths = (10, 20, 50, 100)
    printed = []
    for n in widths:
        ce = fw.critical_exponents(n)
        paper = -3.2559793 - 1.6207083 * n
        assert ce.paper_relation == pytest.approx(paper)
        # He: lambda_{-2} = 1 exactly (mean preservation, Cor. 3), so -2 is the derived lower root
        assert ce.lower == pytest.approx(-2.0, abs=1e-8)
        assert -1.0 - 1e-12 < ce.upper < -0.5
        mid = 0.5 * (ce.lower + ce.upper)
        assert fw.relu_eigenvalue(mid, n, 2.0) < 1 < fw.relu_eigenvalue(ce.lower - 0.5, n, 2.0)
        # roots really are roots of their formulas (Brent to 1e-13 in m)
        for root in (ce.printed_lower, ce.printed_upper):
            assert math.log(fw.relu_eigenvalue_printed(root, n, 2.0)) == pytest.approx(0.0, abs=1e-9)
        printed.append(ce.printed_lower)
    # the paper's relation is linear in N with slope -1.6207: the derived lower root has slope 0,
    # the printed formula's slope -1.6186 (fit over N = 10..100): the paper used the printed form.
    slope = np.polyfit(widths, printed, 1)[0]
    assert abs(slope - (-1.6207083)) < 0.01 * 1.6207083  # discriminates 0 from 1.62, not a fit tolerance


def test_critical_exponents_have_no_fixed_scan_range():
    """Small sigma_w2 pushes the lower root far below -1000; both roots are still found (no NaN)."""
    ce = fw.critical_exponents(10, 1e-2)
    assert ce.lower < -1000 and -1.0 < ce.upper < -0.5
    for root in (ce.lower, ce.upper):
        assert fw.relu_log_eigenvalue(root, 10, 1e-2) == pytest.approx(0.0, abs=1e-9)
    # quasi-stationary exponent on either side of -1 (supercritical sigma_w2: in (-1, -1/2))
    for sigma_w2 in (2.0, 3.0):
        m = fw.quasi_stationary_exponent(10, sigma_w2)
        assert abs(m + 1) > 0.1
        assert fw.relu_eigenvalue(m, 10, sigma_w2) == pytest.approx(1 - 0.5**10, rel=1e-12)


# ------------------------------------------------------------------------------------------------
# discretised operator and propagated laws
# ------------------------------------------------------------------------------------------------


@given(st.integers(5, 40), st.integers(1, 30), st.floats(0.01, 3.0), st.floats(0.0, 1.0), st.floats(0.5, 20.0))
@settings(max_examples=8)
def test_operator_conserves_probability(g, n, sw, sb, top):
    op = fw.discretize_operator(np.linspace(0, top, g), n, sw * n, sb, nodes_per_cell=2)
    assert np.all(op.matrix >= 0)
    assert np.allclose(op.matrix.sum(0), 1.0, atol=1e-12)


def test_operator_second_eigenvalue_is_lambda_minus_one():
    """Every column puts exactly 0.5^N on the atom, so the cell block has Perron root 1 - 0.5^N."""
    for n in (3, 10):
        op = fw.discretize_operator(np.linspace(0, 6, 61), n, 2.0)
        w, _ = op.eig()
        assert w[0].real == pytest.approx(1.0)
        assert w[1].real == pytest.approx(1 - 0.5**n, abs=1e-10)


@pytest.mark.slow
@pytest.mark.parametrize("factor", [2.0, 1.6, 1.2])
def test_operator_positive_eigenvector_is_power_law(factor):
    """The eigenvector of 1 - 0.5^N has density ~ y^m, m = quasi_stationary_exponent (paper: shapes ~ y^m)."""
    n = 10
    slopes = []
    for cells in (200, 400):
        g = np.linspace(0, 8, cells + 1)
        op = fw.discretize_operator(g, n, factor, nodes_per_cell=2)
        w, v = op.eig()
        assert w[1].real == pytest.approx(1 - 0.5**n)
        dens = np.abs(np.real(v[1:, 1])) / np.diff(g)
        c = op.centers[1:]
        sel = (c > 0.2) & (c < 2.0)
        slopes.append(np.polyfit(np.log(c[sel]), np.log(dens[sel]), 1)[0])
    # cell averaging of a power law: O(h^2); Richardson with its own error estimate |fine - coarse| / 3
    rich = (4 * slopes[1] - slopes[0]) / 3
    assert abs(rich - fw.quasi_stationary_exponent(n, factor)) <= abs(slopes[1] - slopes[0]) / 3


def test_operator_spectrum_converges_under_refinement():
    eig = []
    for g in (51, 101, 201):
        w, _ = fw.discretize_operator(np.linspace(0, 8, g), 10, 1.0, 0.5, nodes_per_cell=2).eig()
        eig.append(np.real(w[1:4]))
    d1, d2 = np.abs(eig[1] - eig[0]), np.abs(eig[2] - eig[1])
    # observed order log2(d1 / d2) between 0.6 and 2: convergent, first order or better
    assert np.all((d2 < 0.65 * d1) & (d2 > 0.25 * d1))


def test_operator_reproduces_eigenvalue_on_log_grid():
    """Apply the matrix to the cell masses of y^m; the interior ratio -> lambda_m (O(h^2), Richardson)."""
    n, sigma_w2 = 20, 2.0
    est = {}
    for pts in (121, 241):
        edges = np.concatenate([[0.0], np.logspace(-6, 6, pts)])
        op = fw.discretize_operator(edges, n, sigma_w2, nodes_per_cell=2)
        e = edges[1:]
        i = np.searchsorted(edges, 1.0)
        for m in (-3.0, -2.0, -1.5):
            v = np.concatenate([[0.0, 0.0], (e[1:] ** (m + 1) - e[:-1] ** (m + 1)) / (m + 1)])
            est.setdefault(m, []).append((op.matrix @ v)[i] / v[i])
    from meanfield.validation.finite_width import domain_truncation

    for m, (coarse, fine) in est.items():
        # Richardson (O(h^2)); |fine - coarse| / 3 estimates the error of `fine` and so bounds
        # that of the extrapolate; plus the sources beyond the grid's top (1e6)
        tol = abs(fine - coarse) / 3 + domain_truncation(m, n, sigma_w2, 1e6)
        assert abs((4 * fine - coarse) / 3 - fw.relu_eigenvalue(m, n, sigma_w2)) <= tol


def _coarse_columns(fine):
    """Columns of an operator on the twice finer grid, averaged per coarse cell, CDF at coarse edges."""
    cols = np.concatenate([fine.matrix[:, :1], 0.5 * (fine.matrix[:, 1::2] + fine.matrix[:, 2::2])], 1)
    return np.cumsum(cols, 0)[::2], fine.centers @ cols


def test_fft_path_matches_closed_form():
    """The general (FFT) path converges to the closed form; its error is within the refinement estimate."""
    g, gf = np.linspace(0, 5, 101), np.linspace(0, 5, 201)
    a = fw.discretize_operator(g, 20, 2.0, nodes_per_cell=2)
    b = fw.discretize_operator(g, 20, 2.0, nodes_per_cell=2, method="fft", n_quantiles=1024)
    bf = fw.discretize_operator(gf, 20, 2.0, nodes_per_cell=2, method="fft", n_quantiles=4096)
    cdf_f, mean_f = _coarse_columns(bf)
    err = np.abs(np.cumsum(a.matrix - b.matrix, 0)).max(0)
    est = np.abs(np.cumsum(b.matrix, 0) - cdf_f).max(0)
    sel = slice(20, None)  # sources >= 20 cells from 0 (near 0 the lattice is coarser than the law)
    assert np.all(err[sel] <= REFINEMENT_FACTOR * est[sel])
    c = a.centers
    mean_a, mean_b = c @ a.matrix, c @ b.matrix
    assert np.all(np.abs(mean_a - mean_b)[20:80] <= REFINEMENT_FACTOR * np.abs(mean_b - mean_f)[20:80])


def test_kernel_masses_relu_closed_vs_fft_vs_simulation():
    g, gf = np.linspace(0, 6, 121), np.linspace(0, 6, 241)
    closed = fw.kernel_masses(2.0, g, 16, 2.0)[0]  # He: per-weight variance 2 / 16 = 0.125
    fft = fw.kernel_masses(2.0, g, 16, 2.0, method="fft", n_quantiles=1024)[0]
    fft_fine = fw.kernel_masses(2.0, gf, 16, 2.0, method="fft", n_quantiles=4096)[0]
    assert closed.sum() == pytest.approx(1.0) and fft.sum() == pytest.approx(1.0)
    assert closed[0] == pytest.approx(0.5**16) and fft[0] == pytest.approx(0.5**16)
    # FFT error (lattice step and quantile count) within its refinement estimate
    est = np.max(np.abs(np.cumsum(fft) - np.cumsum(fft_fine)[::2]))
    assert np.max(np.abs(np.cumsum(closed - fft))) <= REFINEMENT_FACTOR * est
    zs = (np.maximum(np.random.default_rng(2).standard_normal((100_000, 16)) * 0.5, 0) ** 2).sum(1)
    cdf_mc = np.array([(zs <= t).mean() for t in g])
    assert np.max(np.abs(np.cumsum(closed) - cdf_mc)) < Z * 0.5 / math.sqrt(zs.size)


def test_fft_path_other_activation_conserves_and_matches_simulation():
    g = np.linspace(0, 20, 201)
    op = fw.discretize_operator(g, 8, 8.0, 0.1, activation="tanh", nodes_per_cell=1)  # per-weight variance 1
    assert np.allclose(op.matrix.sum(0), 1.0)
    j = 50  # source cell (4.9, 5.0]
    y = op.centers[j]
    rng = np.random.default_rng(3)
    zs = (np.tanh(rng.standard_normal((100_000, 8)) * math.sqrt(y + 0.1)) ** 2).sum(1)
    cdf_th = np.cumsum(op.matrix[:, j])
    cdf_mc = np.array([(zs <= t).mean() for t in g])
    # the source cell (4.9, 5.0] is a single point with nodes_per_cell=1: the same law on the
    # twice finer grid (and 4x the quantiles) estimates the FFT path's discretisation error
    fine = fw.kernel_masses(y, np.linspace(0, 20, 401), 8, 8.0, 0.1, activation="tanh", n_quantiles=4 * 4096)[0]
    est = np.abs(cdf_th - np.cumsum(fine)[::2])
    se = np.sqrt(cdf_mc * (1 - cdf_mc) / zs.size)
    assert np.all(np.abs(cdf_th - cdf_mc) <= Z * np.maximum(se, 0.5 / zs.size) + REFINEMENT_FACTOR * est)


def test_propagate_distribution_mean_follows_corollary_3():
    layers = [(30, 2.0), (20, 2.0, 0.05), fw.Layer(40, 0.8, 0.0, fan_in=20)]
    means = []
    for cells in (200, 400):  # the same source law (uniform on (0.9, 1.0]) on two grids
        g = np.linspace(0, 20, cells + 1)
        p0 = np.zeros(g.size)
        k = cells // 200
        p0[k * 9 + 1 : k * 10 + 1] = 1.0 / k
        laws = fw.propagate_distribution(p0, g, layers, nodes_per_cell=1)
        assert laws.shape == (4, g.size)
        assert np.allclose(laws.sum(1), 1.0)
        means.append(laws @ np.concatenate([[0.0], 0.5 * (g[1:] + g[:-1])]))
    expected = fw.expected_squared_norm(0.95, layers)  # Cor. 3 is linear: the source mean suffices
    assert means[0][0] == pytest.approx(0.95)
    # midpoint representation of each layer's law: O(h^2), estimated by the refinement
    assert np.all(np.abs(means[0] - expected) <= REFINEMENT_FACTOR * np.abs(means[0] - means[1]) + 1e-14)


@pytest.mark.slow
def test_expected_squared_norm_against_simulation():
    rng = np.random.default_rng(5)
    widths, sigma_w2s, sbs = [50, 30, 40], [1.0, 3.0, 1.5], [0.1, 0.0, 0.2]
    x0 = rng.standard_normal(20)
    y0 = x0 @ x0
    reps = 20_000
    x = np.broadcast_to(x0, (reps, 20))
    fan_ins = []
    for n, sigma_w2, sb in zip(widths, sigma_w2s, sbs):
        fan_ins.append(x.shape[1])  # W_ij ~ N(0, sigma_w2 / fan_in)
        w = rng.standard_normal((reps, x.shape[1], n)) * math.sqrt(sigma_w2 / x.shape[1])
        x = np.maximum(np.einsum("ri,rij->rj", x, w) + rng.standard_normal((reps, n)) * math.sqrt(sb), 0)
    z = (x * x).sum(1)
    th = fw.expected_squared_norm(y0, list(zip(widths, sigma_w2s, sbs, fan_ins)))[-1]
    assert abs(z.mean() - th) < Z * z.std() / math.sqrt(reps)


def test_grid_masses():
    g = np.array([0.0, 1.0, 2.0])
    assert np.allclose(fw.grid_masses([0.0, 0.5, 1.0, 1.5, 7.0], g), [0.2, 0.4, 0.4])


# ------------------------------------------------------------------------------------------------
# two inputs: Prop. 2, Thm. 5
# ------------------------------------------------------------------------------------------------


def test_preactivation_covariance_against_simulation():
    """Prop. 2: given the previous signals, one neuron's pre-activations are N(0, sigma_w2 / fan_in G + sigma_b2)."""
    rng = np.random.default_rng(17)
    x = rng.standard_normal((3, 12)) * 0.4  # three previous-layer signals of dimension 12
    sigma_w2, sb, reps = 3.6, 0.1, 200_000
    h = rng.standard_normal((reps, 12)) @ x.T * math.sqrt(sigma_w2 / 12) + rng.standard_normal((reps, 1)) * math.sqrt(
        sb
    )
    v = fw.preactivation_covariance(x @ x.T, sigma_w2, sb, fan_in=12)
    emp = h.T @ h / reps
    se = np.sqrt((np.outer(np.diag(v), np.diag(v)) + v**2) / reps)  # Var(h_i h_j) for a normal pair
    assert np.all(np.abs(emp - v) <= Z * se)
    with pytest.raises(ValueError, match="gram"):
        fw.preactivation_covariance(np.array([[1.0, 2.0], [2.0, 1.0]]), 1.0, fan_in=2)


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
    """Sample correlations of 40 independent batches of 10^4 pairs: mean and standard error of the
    mean (the O(1/n) bias of a sample correlation, ~1e-4 here, is below one standard error)."""
    rng = np.random.default_rng(7)
    for rho in (-0.6, 0.3, 0.9):
        a = rng.standard_normal((40, 10_000))
        b = rho * a + math.sqrt(1 - rho * rho) * rng.standard_normal(a.shape)
        x, y = np.maximum(a, 0), np.maximum(b, 0)
        x, y = x - x.mean(1, keepdims=True), y - y.mean(1, keepdims=True)
        c = (x * y).sum(1) / np.sqrt((x * x).sum(1) * (y * y).sum(1))
        assert abs(c.mean() - fw.relu_correlation(rho)) <= Z * c.std(ddof=1) / math.sqrt(c.size)


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
    # top 6: the mass beyond the grid (lumped into the last cell) is ~1e-12, so only the lattice
    # error remains, estimated by one refinement
    g, gf = np.linspace(0, 6, 1201), np.linspace(0, 6, 2401)
    law, law_f = fw.inner_product_law(g, n, v11, v22, v12), fw.inner_product_law(gf, n, v11, v22, v12)
    assert law.sum() == pytest.approx(1.0)
    mean, mean_f = (lw @ np.concatenate([[0.0], 0.5 * (e[1:] + e[:-1])]) for lw, e in ((law, g), (law_f, gf)))
    assert abs(mean - fw.mean_inner_product(n, v11, v22, v12)) <= REFINEMENT_FACTOR * abs(mean - mean_f)
    rng = np.random.default_rng(13)
    h = rng.multivariate_normal([0, 0], [[v11, v12], [v12, v22]], size=(100_000, n))
    s = (np.maximum(h[..., 0], 0) * np.maximum(h[..., 1], 0)).sum(1)
    cdf, cdf_f = np.cumsum(law), np.cumsum(law_f)[::2]
    for j in (60, 120, 200):
        p_mc = (s <= g[j]).mean()
        lattice = REFINEMENT_FACTOR * abs(cdf[j] - cdf_f[j])
        assert abs(p_mc - cdf[j]) <= Z * math.sqrt(cdf[j] * (1 - cdf[j]) / s.size) + lattice


@pytest.mark.slow
def test_cosine_similarity_samples():
    s = fw.cosine_similarity_samples(50, 1.0, n_samples=1000, rng=0)
    assert np.allclose(s, 1.0)
    a = fw.cosine_similarity_samples(100, 0.5, n_samples=20_000, rng=1)
    b = fw.cosine_similarity_samples(100, 0.5, n_samples=20_000, rng=1)
    assert np.array_equal(a, b)
    assert np.all((a >= 0) & (a <= 1))

    def mean_se(x):
        return x.mean(), x.std(ddof=1) / math.sqrt(x.size)

    # the iid-component sampler against actual random one-layer networks (validation simulator)
    from meanfield.simulate import simulate_pair

    x1 = np.eye(16)[0]
    x2 = 0.5 * x1 + math.sqrt(0.75) * np.eye(16)[1]
    _, net = simulate_pair(x1, x2, 100, 2.0, 0.0, 20_000, rng=4)  # He; the cosine law does not depend on fan_in
    (ma, sa), (mn, sn) = mean_se(a), mean_se(net)
    assert abs(ma - mn) <= Z * math.hypot(sa, sn)
    for t in np.quantile(a, [0.1, 0.5, 0.9]):
        pa, pn = (a <= t).mean(), (net <= t).mean()
        assert abs(pa - pn) <= Z * math.sqrt(pa * (1 - pa) * (1 / a.size + 1 / net.size))
    # (the mean cosine tends to E relu relu / E relu^2 = 2 (g rho + sqrt(1-rho^2) / (2 pi)) as N
    # grows; at N = 100 the O(1/N) ratio bias, measured 3e-4, is below one standard error here, so
    # the limit is not a test of the sampler)
    f = fw.cosine_similarity_samples(100, 0.5, n_samples=20_000, rng=1, dtype=np.float32)
    mf, sf = mean_se(f)
    assert np.max(np.abs(f - a)) > 0 and abs(mf - ma) <= Z * math.hypot(sf, sa)  # independent draws


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
    with pytest.raises(ValueError, match=r"m must lie in \[-1e300, -1/2\)"):
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


def _he_lumping_bound(n, layer, a, b, top, step, k_max=40):
    """Bound on the mean a grid loses at one He layer by lumping ``z > top`` into its last cell.

    The lost mean is ``E(z - top)_+ + P(z > top) step / 2``; with ``E z^k`` exact (He, sigma_b = 0,
    ``y0 ~ U(a, b)``: ``E[z^k | y] = y^k m_k``, ``m_k = (2/N)^k E prod_{i<k} (K + 2i)``,
    ``K ~ Bin(N, 1/2)``), ``(z - t)_+ <= z^k (k-1)^(k-1) / (k^k t^(k-1))`` and Markov's inequality
    give a rigorous bound; the best ``k`` is taken.
    """
    kk = np.arange(n + 1.0)
    w = stats.binom.pmf(kk, n, 0.5)
    best = math.inf
    for k in range(2, k_max):
        m_k = (2.0 / n) ** k * np.sum(w * np.prod([kk + 2 * i for i in range(k)], axis=0))
        ez = m_k**layer * (b ** (k + 1) - a ** (k + 1)) / ((k + 1) * (b - a))
        best = min(best, ez * (k - 1) ** (k - 1) / k**k / top ** (k - 1) + step / 2 * ez / top**k)
    return best


def test_fig_1a_claim_mean_preserved_and_right_tail_grows():
    """He, N = 200: E|x^l|^2 is preserved while the law becomes more right-skewed (Sec. 2.3)."""
    moments = []
    for cells in (200, 400):  # the same source law (uniform on (0.96, 1.0]) on two grids
        grid = np.linspace(0, 8, cells + 1)  # top 8: the mass lumped beyond it is negligible
        k = cells // 200
        p0 = np.zeros(grid.size)
        p0[24 * k + 1 : 25 * k + 1] = 1.0 / k
        laws = fw.propagate_distribution(p0, grid, [(200, 2.0)] * 9, nodes_per_cell=1)  # He
        c = np.concatenate([[0.0], 0.5 * (grid[1:] + grid[:-1])])
        mean = laws @ c
        var = laws @ c**2 - mean**2
        moments.append((mean, var))
    (mean, var), (mean_f, var_f) = moments
    # He preserves E|x|^2 exactly (Cor. 3); the grid loses mean only by lumping the mass beyond the
    # top edge into the last cell (bounded by _he_lumping_bound) and by its midpoint representation
    # (estimated by the refinement)
    assert mean[0] == pytest.approx(0.98)
    lumping = np.cumsum([0.0] + [_he_lumping_bound(200, layer, 0.96, 1.0, 8.0, 0.04) for layer in range(1, 10)])
    assert np.all(np.abs(mean - 0.98) <= lumping + REFINEMENT_FACTOR * np.abs(mean - mean_f) + 1e-14)
    skew = np.array([(law @ (c - m) ** 3) / v**1.5 for law, m, v in zip(laws[1:], mean_f[1:], var_f[1:])])
    assert np.all(np.diff(var[1:]) > 0) and np.all(skew > 0)
    # z | y = (2 y / N) chi^2_K, K ~ Bin(N, 1/2): Var(z | y) = (2y/N)^2 (2 E K + Var K) = 5 y^2 / N,
    # so for y ~ U(0.96, 1.0]: Var z = 5 E[y^2] / N + Var y (He: E[z | y] = y)
    h = 0.04
    exact = 5 / 200 * (0.98**2 + h**2 / 12) + h**2 / 12
    assert abs(var[1] - exact) <= REFINEMENT_FACTOR * abs(var[1] - var_f[1])


def test_simulator_squared_norms_he_preserves_mean():
    from meanfield.simulate import simulate_squared_norms

    x = np.random.default_rng(0).standard_normal((4, 10))
    sim = simulate_squared_norms(x, [(50, 2.0)] * 3, 400, 4, rng=1)  # He: fan_in = width, the paper's 2 / N
    assert sim.shape == (400, 4, 4)
    y0 = (x * x).sum(1).mean()
    m, se = sim[:, :, 3].mean(), sim[:, :, 3].mean(1).std() / math.sqrt(400)
    # every network draws its own inputs from the pool, so se over networks includes input sampling
    assert abs(m - y0) <= Z * se


@pytest.mark.slow
def test_validation_eigen_rows_pass():
    from meanfield.validation.finite_width import eigen_rows

    rows = eigen_rows()
    assert len(rows) == 9 and all(r.passed for r in rows)


@pytest.mark.slow
def test_fig_1b_writes_files(tmp_path):
    from meanfield.figures import load
    from meanfield.figures.burkholz2019 import fig_1b

    paths = fig_1b(tmp_path)
    assert all(p.exists() for p in paths)
    data = load(paths[1]).data
    assert data["N=10"]["critical"]["lower"] == pytest.approx(-2.0, abs=1e-6)


def test_depth_ten_thousand_atom_mass_exact():
    """Each He layer moves exactly 0.5^N of the non-zero mass to the absorbing atom at 0."""
    n, depth = 10, 10_000
    grid = np.linspace(0, 5, 41)
    p0 = np.zeros(grid.size)
    p0[8] = 1.0
    laws = fw.propagate_distribution(p0, grid, [(n, 2.0)] * depth, nodes_per_cell=1)
    assert np.all(np.isfinite(laws)) and np.allclose(laws.sum(1), 1.0, atol=1e-9)
    layers = np.array([1, 100, depth])
    assert np.allclose(laws[layers, 0], 1 - (1 - 0.5**n) ** layers, rtol=1e-9)


def test_cosine_law_does_not_depend_on_sigma_w_without_bias():
    """Sec. 2.3 says a smaller sigma_w than He lowers the mean cosine similarity; with sigma_b = 0
    a ReLU network is positively homogeneous, so every layer's cosine is independent of sigma_w."""
    from meanfield.simulate import simulate_pair

    x1, x2 = np.eye(8)[0], (np.eye(8)[0] + np.eye(8)[1]) / math.sqrt(2)
    _, c_he = simulate_pair(x1, x2, 50, 2.0, 0.0, 500, rng=3)
    _, c_small = simulate_pair(x1, x2, 50, 1.0, 0.0, 500, rng=3)
    assert np.allclose(c_he, c_small, rtol=1e-12)
    _, c_bias = simulate_pair(x1, x2, 50, 1.0, 0.5, 500, rng=3)
    assert c_bias.mean() > c_he.mean()  # a bias adds a shared component: cosines increase


#: sd of the cosine law ~ 1/sqrt(N) (CLT); O(1/N) corrections at N = 100, 200 are ~1 %, and the sample
#: sd of 10^5 draws is accurate to 1/sqrt(2 * 10^5) = 0.2 %: a 5 % allowance on the ratio sqrt(2).
COSINE_SD_RATIO_RTOL = 0.05


@pytest.mark.slow
def test_fig_2_claims(tmp_path):
    """Fig. 2: cosines after one ReLU layer lie in [0, 1], their mean grows with <x1, x2>, N = 100 is wider."""
    from meanfield.figures import load
    from meanfield.figures.burkholz2019 import fig_2

    data = load(fig_2(tmp_path)[1]).data
    bins = np.array(data["bins"])
    for n in (100, 200):
        laws = [data[f"N={n},c={c}"] for c in (0.0, 0.25, 0.5, 0.75)]
        means = [law["mean"] for law in laws]
        assert np.all(np.diff(means) > 0)
        for law in laws:
            density = np.array(law["density"])
            assert np.all(density[bins[1:] <= 0.0] == 0.0)  # relu outputs are non-negative
    for c in (0.0, 0.25, 0.5, 0.75):
        ratio = data[f"N=100,c={c}"]["sd"] / data[f"N=200,c={c}"]["sd"]
        assert ratio == pytest.approx(math.sqrt(2.0), rel=COSINE_SD_RATIO_RTOL)


def test_fig_thm5_claims(tmp_path):
    """Thm. 5: Cor(x1, x2) <= rho on [0, 1] (equality at 0 and 1) and > rho on [-1, 0)."""
    from meanfield.figures import load
    from meanfield.figures.burkholz2019 import fig_thm5

    data = load(fig_thm5(tmp_path)[1]).data
    rho, cor = np.array(data["rho"]), np.array(data["correlation"])
    inner = (rho > 0) & (rho < 1)
    assert np.all(cor[inner] < rho[inner]) and np.all(cor[rho < 0] > rho[rho < 0])
    assert cor[-1] == pytest.approx(1.0, abs=1e-12) and cor[0] == pytest.approx(-1 / (math.pi - 1), abs=1e-12)


# ------------------------------------------------------------------------------------------------
# one meaning of sigma_w2 (W_ij ~ N(0, sigma_w2 / fan_in), He = 2), fan_in, the package layout
# ------------------------------------------------------------------------------------------------


def test_sigma_w2_means_variance_times_fan_in_as_in_dense():
    """E|x^l|^2 / N_l (Cor. 3) is half the dense q-map's pre-activation variance q_l for ReLU, with
    fan_in = the previous width: sigma_w2 means the same in finite_width and meanfield.dense. (With
    the old unscaled sigma_w2, 2.0 meant W_ij ~ N(0, 2) and E|x^1|^2 was 100 times too large here.)"""
    from meanfield import dense

    d, y0 = 30, 4.5
    widths, sigma_w2s, sigma_b2s = [100, 60, 150], [2.0, 1.3, 2.7], [0.0, 0.05, 0.2]
    layers, fan_in = [], d
    for n, sw, sb in zip(widths, sigma_w2s, sigma_b2s):
        layers.append(fw.Layer(n, sw, sb, fan_in=fan_in))
        fan_in = n
    e = fw.expected_squared_norm(y0, layers)
    q = sigma_w2s[0] * y0 / d + sigma_b2s[0]  # layer 1: sigma_w2 * (mean of x_i^2) + sigma_b2
    for l, (n, sw, sb) in enumerate(zip(widths, sigma_w2s, sigma_b2s), start=1):
        if l > 1:
            q = float(dense.qmap(q, "relu", sw, sb))  # closed form (arc-cosine kernel), q_{l} from q_{l-1}
        assert e[l] / n == pytest.approx(q / 2, rel=1e-13)
    # He preserves the mean of x_i^2 (not |x|^2) when widths change
    he = fw.expected_squared_norm(1.0, [fw.Layer(50, 2.0, fan_in=100), fw.Layer(200, 2.0, fan_in=50)])
    np.testing.assert_allclose(he, [1.0, 0.5, 2.0], rtol=1e-15)


@pytest.mark.parametrize("fan_in", [1, 3, 40])
def test_fan_in_is_the_per_weight_variance_sigma_w2_over_fan_in(fan_in):
    """Every function with sigma_w2 depends on it only through sigma_w2 / fan_in (fan_in default: width):
    the call with fan_in equals the square call with sigma_w2 * width / fan_in."""
    n, sw = 8, 1.7
    eq = sw * n / fan_in
    g = np.linspace(0, 6, 31)
    np.testing.assert_allclose(
        fw.relu_kernel(1.3, [0.5, 2.0], n, sw, 0.1, fan_in=fan_in).density,
        fw.relu_kernel(1.3, [0.5, 2.0], n, eq, 0.1).density,
        rtol=1e-13,
    )
    np.testing.assert_allclose(
        fw.relu_log_eigenvalue([-3.0, -1.5], n, sw, fan_in=fan_in),
        fw.relu_log_eigenvalue([-3.0, -1.5], n, eq),
        rtol=1e-13,
    )
    assert fw.quasi_stationary_exponent(n, sw, fan_in=fan_in) == pytest.approx(
        fw.quasi_stationary_exponent(n, eq), rel=1e-9
    )
    assert fw.critical_exponents(n, sw, fan_in=fan_in).lower == pytest.approx(
        fw.critical_exponents(n, eq).lower, rel=1e-9
    )
    np.testing.assert_allclose(
        fw.kernel_masses([1.0, 2.0], g, n, sw, fan_in=fan_in),
        fw.kernel_masses([1.0, 2.0], g, n, eq),
        rtol=1e-12,
        atol=1e-15,
    )
    op = fw.discretize_operator(g, n, sw, 0.1, nodes_per_cell=1, fan_in=fan_in)
    assert op.layer == fw.Layer(n, sw, 0.1, fan_in)
    np.testing.assert_allclose(
        op.matrix, fw.discretize_operator(g, n, eq, 0.1, nodes_per_cell=1).matrix, rtol=1e-12, atol=1e-15
    )
    p0 = fw.grid_masses([1.0], g)
    np.testing.assert_allclose(
        fw.propagate_distribution(p0, g, [(n, sw, 0.0, fan_in)] * 2, nodes_per_cell=1),
        fw.propagate_distribution(p0, g, [(n, eq)] * 2, nodes_per_cell=1),
        rtol=1e-12,
        atol=1e-15,
    )
    np.testing.assert_allclose(
        fw.preactivation_covariance(np.eye(2), sw, 0.1, fan_in=fan_in), np.eye(2) * sw / fan_in + 0.1, rtol=1e-15
    )
    # the conversion helpers are each other's inverse and match Layer.unscaled_sigma_w2
    assert fw.unscaled_sigma_w2(sw, fan_in) == sw / fan_in == fw.Layer(n, sw, fan_in=fan_in).unscaled_sigma_w2
    assert fw.sigma_w2_from_unscaled(fw.unscaled_sigma_w2(sw, fan_in), fan_in) == pytest.approx(sw, rel=1e-15)
    assert fw.Layer(n, sw).unscaled_sigma_w2 == sw / n


@pytest.mark.parametrize(
    "bad,exc",
    [
        (0, ValueError),
        (-3, ValueError),
        (2.5, ValueError),
        (10**8, ValueError),
        (float("nan"), ValueError),
        (True, (TypeError, ValueError)),
        (1 + 1j, TypeError),
        ("4", (TypeError, ValueError)),
        ([4], (TypeError, ValueError)),
    ],
)
def test_fan_in_is_validated_naming_it(bad, exc):
    g = np.linspace(0, 4, 9)
    calls = [
        lambda: fw.relu_kernel(1.0, 1.0, 5, 2.0, fan_in=bad),
        lambda: fw.relu_log_eigenvalue(-2.0, 5, fan_in=bad),
        lambda: fw.relu_eigenvalue(-2.0, 5, fan_in=bad),
        lambda: fw.relu_eigenvalue_printed(-2.0, 5, fan_in=bad),
        lambda: fw.critical_exponents(5, fan_in=bad),
        lambda: fw.quasi_stationary_exponent(5, fan_in=bad),
        lambda: fw.kernel_masses(1.0, g, 5, 2.0, fan_in=bad),
        lambda: fw.discretize_operator(g, 5, 2.0, fan_in=bad),
        lambda: fw.preactivation_covariance(np.eye(2), 2.0, fan_in=bad),
        lambda: fw.expected_squared_norm(1.0, [fw.Layer(5, 2.0, fan_in=bad)]),
        lambda: fw.propagate_distribution(fw.grid_masses([1.0], g), g, [(5, 2.0, 0.0, bad)]),
        lambda: fw.unscaled_sigma_w2(2.0, bad),
        lambda: fw.sigma_w2_from_unscaled(0.4, bad),
    ]
    for call in calls:
        with pytest.raises(exc, match="fan_in"):
            call()


def test_preactivation_covariance_requires_fan_in():
    """A Gram matrix does not carry the signals' dimension: fan_in is a required keyword."""
    with pytest.raises(TypeError, match="fan_in"):
        fw.preactivation_covariance(np.eye(2), 2.0)


def test_sigma_w2_underflowing_per_weight_variance_is_refused():
    """sigma_w2 / fan_in must not round to 0 for a positive sigma_w2 (a silently linear, bias-only layer)."""
    with pytest.raises(ValueError, match="underflow"):
        fw.relu_kernel(1.0, 1.0, 5, 1e-320, fan_in=10**6)
    with pytest.raises(ValueError, match="underflow"):
        fw.expected_squared_norm(1.0, [(5, 1e-320, 0.0, 10**6)])


def test_finite_width_is_a_package_with_the_same_public_names():
    """The module became a subpackage of private submodules; every public name of the module is still there."""
    import importlib

    names = {
        "MAX_WIDTH",
        "RELU_EIGEN_M_MAX",
        "RELU_EIGEN_M_MIN",
        "CriticalExponents",
        "DiscreteOperator",
        "Layer",
        "TransitionKernel",
        "cosine_similarity_samples",
        "critical_exponents",
        "discretize_operator",
        "expected_squared_norm",
        "grid_masses",
        "inner_product_law",
        "kernel_masses",
        "log_expected_squared_norm",
        "mean_inner_product",
        "orthant_probability",
        "preactivation_covariance",
        "propagate_distribution",
        "quasi_stationary_exponent",
        "relu_correlation",
        "relu_eigenvalue",
        "relu_eigenvalue_printed",
        "relu_kernel",
        "relu_log_eigenvalue",
        "relu_product_density",
    }
    assert hasattr(fw, "__path__")  # a package
    assert names <= set(fw.__all__) and all(hasattr(fw, n) for n in fw.__all__)
    assert len(fw.__all__) == len(set(fw.__all__))
    for sub in ("_kernel", "_eigen", "_layer", "_operator", "_norms", "_correlation", "_joint"):
        mod = importlib.import_module(f"meanfield.finite_width.{sub}")
        assert set(mod.__all__) <= set(fw.__all__)


def test_result_dataclasses_are_frozen_with_replace():
    import dataclasses

    from meanfield import Result

    k = fw.relu_kernel(1.0, 1.0, 3, 2.0)
    ce = fw.critical_exponents(5)
    op = fw.discretize_operator(np.linspace(0, 4, 9), 3, 2.0, nodes_per_cell=1)
    lay = fw.Layer(3, 2.0)
    for obj in (k, ce, op, lay):
        assert isinstance(obj, Result) and dataclasses.is_dataclass(obj)
        with pytest.raises(dataclasses.FrozenInstanceError):
            obj.__setattr__(dataclasses.fields(obj)[0].name, None)
    assert ce.replace(lower=-7.0).lower == -7.0 and ce.lower != -7.0
    assert lay.replace(fan_in=6).unscaled_sigma_w2 == pytest.approx(2.0 / 6)
    assert op.replace(activation="x").activation == "x"


# --- regressions found by the public-API fuzzer (tests/fuzz/) ------------------------------------


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"width": 1.5}, "width"),
        ({"width": "a"}, "width"),
        ({"width": None}, "width"),
        ({"width": float("nan")}, "width"),
        ({"width": 2 + 1j}, "width"),
        ({"sigma_w2": float("nan")}, "sigma_w2"),
        ({"sigma_w2": float("inf")}, "sigma_w2"),
        ({"sigma_w2": -1.0}, "sigma_w2"),
        ({"sigma_w2": 1 + 1j}, "sigma_w2"),
        ({"sigma_w2": "a"}, "sigma_w2"),
        ({"sigma_b2": float("-inf")}, "sigma_b2"),
        ({"sigma_b2": None}, "sigma_b2"),
        ({"fan_in": 1.5}, "fan_in"),
        ({"fan_in": 2 + 1j}, "fan_in"),
    ],
)
def test_layer_validates_its_fields(kwargs, name):
    """Layer(width=1.5), Layer(sigma_w2=nan), ... were built silently (NaN fields, str widths)."""
    args = {"width": 4, "sigma_w2": 0.5, "sigma_b2": 0.1, "fan_in": None} | kwargs
    with pytest.raises((TypeError, ValueError), match=name):
        fw.Layer(**args)


def test_layer_normalises_field_types():
    layer = fw.Layer(4.0, 2, np.float64(0.5), fan_in=np.int64(8))
    assert (type(layer.width), type(layer.sigma_w2), type(layer.sigma_b2), type(layer.fan_in)) == (
        int,
        float,
        float,
        int,
    )
    assert layer.unscaled_sigma_w2 == 0.25


def test_empty_covariance_v12_is_refused():
    """v12=[] gave numpy's 'only 0-dimensional arrays can be converted' / a broadcast error."""
    with pytest.raises(ValueError, match="v12"):
        fw.inner_product_law(np.linspace(0.0, 4.0, 9), 3, 1.0, 1.0, np.array([]))
    with pytest.raises(ValueError, match="v12"):
        fw.relu_product_density([0.2, 0.5], 1.0, 1.0, np.array([]))


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda r: fw.grid_masses(r, np.linspace(0.0, 4.0, 5)), "samples"),
        (lambda r: fw.grid_masses([0.5, 1.0], r), "grid"),
        (lambda r: fw.relu_kernel(1.0, r, 4, 0.5), "z"),
        (lambda r: fw.preactivation_covariance(r, 0.5, 0.1, fan_in=2), "gram"),
    ],
)
def test_ragged_arrays_name_the_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call([[1.0, 2.0], [3.0]])


def test_domain_truncation_takes_one_exponent():
    from meanfield.validation.finite_width import domain_truncation

    with pytest.raises(TypeError, match=r"^m must be a scalar"):
        domain_truncation(np.array([]), 10, 1.5, 1e6)  # numpy's "only 0-dimensional arrays ..." before
