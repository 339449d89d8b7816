"""meanfield.kurtosis (Grzejdziak et al. 2023): Prop. 4.3, Lemmas 4.1-4.6, Thm. 4.7, Sec. 5, Props. B.1-B.2."""

import math
from decimal import Decimal, getcontext

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs
from scipy import integrate, stats

from meanfield import kurtosis as K
from meanfield.init import dense_weights
from meanfield.simulate import INPUT_MOMENTS, layer_moments, nonzero_fraction

#: float64 machine epsilon (rounding bounds of sums: n terms -> n * EPS relative).
EPS = float(np.finfo(np.float64).eps)
#: Standard errors allowed in Monte-Carlo checks (two-sided 1e-5 per check).
Z = 4.5
#: Relative tolerance of products of <= 30 matrices with entries O(1) in float64 (each product
#: adds a few ulps; 30 products, cond. ~1): 1e-10 leaves ample margin.
PRODUCT_RTOL = 1e-10
#: scipy.integrate.quad on smooth, exponentially decaying integrands reaches ~1e-10 absolute.
QUAD_TOL = 1e-8

widths_st = hs.integers(2, 200)
slopes_st = hs.floats(-2.0, 2.0, allow_nan=False)
kw_st = hs.floats(1.0, 12.0, allow_nan=False)


# ------------------------------------------------------------------ Lemmas 4.1 / 4.2 by quadrature


@pytest.mark.parametrize("a", [0.0, 0.1, 0.5, 1.0])
@pytest.mark.parametrize("dist", [stats.norm(), stats.laplace(), stats.uniform(-1, 2)])
def test_lemma_4_1_by_quadrature(a, dist):
    phi4 = lambda x: (x if x > 0 else a * x) ** 4 * dist.pdf(x)  # noqa: E731
    lo, hi = dist.support()
    lo, hi = max(lo, -60.0), min(hi, 60.0)
    val = integrate.quad(phi4, lo, 0.0, epsabs=1e-12)[0] + integrate.quad(phi4, 0.0, hi, epsabs=1e-12)[0]
    s2 = dist.var()
    kappa = K.weight_kurtosis(dist)
    assert val == pytest.approx((a**4 + 1) / 2 * s2**2 * kappa, abs=QUAD_TOL, rel=1e-9)


def test_lemma_4_2_needs_sign_flip_invariance():
    """E phi^2(x) phi^2(y) = (a^2+1)^2/4 (sigma^4 + c) holds when (x, y) -> (-x, y) leaves the law
    invariant (true inside a network), but not for every uncorrelated, symmetric, identically
    distributed pair."""
    a = 0.3
    f = lambda t: np.where(t > 0, t, a * t) ** 2  # noqa: E731
    th = np.linspace(0, 2 * np.pi, 400_001)[:-1]  # uniform angle: invariant pair
    x, y = np.cos(th), np.sin(th)
    assert np.mean(f(x) * f(y)) == pytest.approx((a**2 + 1) ** 2 / 4 * np.mean(x**2 * y**2), rel=1e-9)
    # (1, 1), (-1, -1) w.p. 0.4 each, (2, -2), (-2, 2) w.p. 0.1 each: E xy = 0.8 - 0.8 = 0,
    # symmetric identical marginals, not invariant. ReLU: LHS = 0.4, the Lemma would give 1.0.
    pts = np.array([[1, 1], [-1, -1], [2, -2], [-2, 2]], dtype=float)
    pr = np.array([0.4, 0.4, 0.1, 0.1])
    assert pr @ (pts[:, 0] * pts[:, 1]) == pytest.approx(0.0, abs=1e-15)
    relu2 = np.maximum(pts, 0) ** 2
    lhs = pr @ (relu2[:, 0] * relu2[:, 1])
    rhs = 0.25 * (pr @ (pts[:, 0] ** 2 * pts[:, 1] ** 2))
    assert (lhs, rhs) == pytest.approx((0.4, 1.0))


# ------------------------------------------------------------------ Prop. 4.3 and Lemma 4.4


def test_transition_matrix_printed_form():
    w, a, kw, s2 = 7, 0.2, 1.8, 1.7
    s4 = s2**2
    g = 2 * (a**4 + 1) / (w * (a**2 + 1) ** 2)
    expected = np.array([[g * kw, 3 * (w - 1) / (w * s4), 3 * (w - 1) / w], [g * s4, (w - 1) / w, -s4 / w], [0, 0, 1]])
    np.testing.assert_allclose(K.transition_matrix(w, a, kw, s2), expected, rtol=1e-15)


@settings(max_examples=40)
@given(ws=hs.lists(widths_st, min_size=1, max_size=30), a=slopes_st, kw=kw_st, s2=hs.floats(0.1, 10.0))
def test_every_product_has_lemma_4_4_form(ws, a, kw, s2):
    p = K.product(ws, a, kw, s2)
    direct = np.eye(3)
    for w in ws:
        direct = K.transition_matrix(w, a, kw, s2) @ direct
    np.testing.assert_allclose(p.matrix, direct, rtol=PRODUCT_RTOL, atol=PRODUCT_RTOL * np.abs(direct).max())
    assert p.gamma > 0 and p.alpha >= p.gamma * (1 - 1e-12)
    assert p.delta > 0 and p.beta >= p.delta * (1 - 1e-12)
    s4 = s2**2
    assert direct[0, 2] == pytest.approx(direct[0, 1] * s4, rel=1e-9)
    assert direct[1, 2] == pytest.approx(s4 * (direct[1, 1] - 1), rel=1e-9, abs=1e-9 * s4)
    np.testing.assert_array_equal(direct[2], [0.0, 0.0, 1.0])  # the homogeneous row stays exact


@settings(max_examples=30)
@given(ws=hs.lists(hs.integers(1, 50), min_size=1, max_size=20), a=slopes_st, kw=kw_st)
def test_propagate_equals_product_times_input(ws, a, kw):
    k0 = np.array([4.0, 0.3, 1.0])
    res = K.propagate(k0[0], k0[1], ws, a, kw)
    kd = K.product(ws, a, kw).matrix @ k0
    assert res.kappa[-1] == pytest.approx(kd[0], rel=1e-9)
    assert res.c[-1] == pytest.approx(kd[1], rel=1e-9, abs=1e-9 * abs(kd[0]))
    assert res.kappa.shape == (len(ws) + 1,) and res.kappa[0] == 4.0


@settings(max_examples=30)
@given(ws=hs.lists(hs.integers(1, 50), min_size=1, max_size=15), a=slopes_st, kw=kw_st, s2=hs.floats(0.01, 100.0))
def test_propagate_scale_covariance(ws, a, kw, s2):
    """Scaling the signal by s leaves kappa unchanged and multiplies c by s^4 = sigma_x2^2."""
    base = K.propagate(4.0, 0.5, ws, a, kw)
    scaled = K.propagate(4.0, 0.5 * s2**2, ws, a, kw, sigma_x2=s2)
    np.testing.assert_allclose(scaled.kappa, base.kappa, rtol=1e-10)
    np.testing.assert_allclose(scaled.c, base.c * s2**2, rtol=1e-10, atol=1e-10 * s2**2 * base.kappa.max())


@pytest.mark.parametrize("law,a", [("gaussian", 0.0), ("uniform", 0.1), ("rademacher", 0.0)])
def test_one_layer_recursion_against_monte_carlo(law, a):
    """One layer of width 5 from Gaussian inputs (moments finite and light-tailed): A k0 vs simulation."""
    n = 200_000
    sim = layer_moments([5, 5], a, law, n, "gaussian", rng=11)
    th = K.propagate(3.0, 0.0, [5], a, K.weight_kurtosis(law))
    m4, m22 = sim.m4[:, 1], sim.m22[:, 1]
    assert abs(m4.mean() - th.kappa[1]) < Z * m4.std() / math.sqrt(n)
    assert abs(m22.mean() - 1.0 - th.c[1]) < Z * m22.std() / math.sqrt(n)


def test_mixture_input_moments():
    """x = sqrt(E) g, E ~ Exp(1): kappa0 = 6, c0 = 1 (the simulator's documented input law)."""
    sim = layer_moments([4], 0.0, "gaussian", 200_000, "mixture", rng=3)
    kappa0, c0 = INPUT_MOMENTS["mixture"]
    assert abs(sim.m4[:, 0].mean() - kappa0) < Z * sim.m4[:, 0].std() / math.sqrt(200_000)
    assert abs(sim.m22[:, 0].mean() - 1 - c0) < Z * sim.m22[:, 0].std() / math.sqrt(200_000)


# ------------------------------------------------------------------ Lemma 4.5, spectral radius


@settings(max_examples=60)
@given(w=widths_st, a=slopes_st, kw=kw_st)
def test_lemma_4_5_spectral_radius_exceeds_one(w, a, kw):
    td = K.trace_determinant(w, a, kw)
    am = K.transition_matrix(w, a, kw)[:2, :2]
    assert td.trace == pytest.approx(np.trace(am), rel=1e-12)
    assert td.determinant == pytest.approx(np.linalg.det(am), rel=1e-9, abs=1e-14)
    eig = np.linalg.eigvals(K.transition_matrix(w, a, kw))
    assert K.spectral_radius(w, a, kw) == pytest.approx(np.max(np.abs(eig)), rel=1e-10)
    assert td.lambda_max > 1.0 and td.gap > 0.0
    assert td.lambda_max > abs(td.lambda_min)  # Perron
    assert td.determinant + 1.0 < td.trace  # the condition missing from the printed proof


def test_width_one_linear_rademacher_is_marginal():
    """The paper's remark: w = 1 needs |a| != 1 or kappa_w != 1; with both equal to 1 rho = 1."""
    assert K.spectral_radius(1, 1.0, 1.0) == pytest.approx(1.0, abs=1e-15)
    assert K.propagate(2.0, 0.0, [1] * 1000, 1.0, 1.0).kappa[-1] == pytest.approx(2.0, rel=1e-12)
    assert K.spectral_radius(1, 0.0, 3.0) == pytest.approx(6.0)  # E w^4 E relu(y)^4 = 3 * 4 * kappa / 2


@pytest.mark.parametrize("w", [10, 1000, 10**5, 10**7])
def test_gap_accurate_at_large_width(w):
    getcontext().prec = 60
    a, kw = Decimal("0.1"), Decimal("1.8")
    r = 2 * (a**4 + 1) / (a**2 + 1) ** 2
    tr = 1 + (r * kw - 1) / w
    det = r * (w - 1) * (kw - 3) / Decimal(w) ** 2
    lam = (tr + (tr * tr - 4 * det).sqrt()) / 2
    gap = K.trace_determinant(w, 0.1, 1.8).gap
    assert gap == pytest.approx(float(lam - 1), rel=1e-12)


# ------------------------------------------------------------------ Thm. 4.7 and depth 10^4


@settings(max_examples=15)
@given(ws=hs.lists(hs.integers(2, 20), min_size=1, max_size=10), a=slopes_st, kw=kw_st)
def test_kurtosis_grows_without_bound_for_bounded_widths(ws, a, kw):
    widths = (ws * (10_000 // len(ws) + 1))[:10_000]
    res = K.propagate(3.0, 0.0, widths, a, kw)
    assert np.all(np.isfinite(res.log_kappa)) and np.all(np.isfinite(res.c_scaled))
    rho_min = min(K.spectral_radius(w, a, kw) for w in set(ws))
    # kappa_d >= const * rho_min^d: over 10^4 layers at least a fraction of log rho_min per layer
    assert res.log_kappa[-1] > 0.5 * 10_000 * math.log(rho_min)
    assert res.log_kappa[-1] > res.log_kappa[5_000] > res.log_kappa[100]


def test_depth_1e4_width_1e5_no_overflow():
    res = K.propagate(3.0, 0.0, [10**5] * 10**4, 0.0, 3.0)
    assert np.all(np.isfinite(res.kappa)) and np.all(np.isfinite(res.log_kappa))
    # lambda_max = 1 + 5 / w for Gaussian ReLU (det = 0): kappa_d ~ const * (1 + 5e-5)^d
    assert res.log_kappa[-1] - res.log_kappa[-2] == pytest.approx(math.log1p(5e-5), rel=1e-3)
    big = K.propagate(3.0, 0.0, [2] * 10**4)
    assert math.isfinite(big.log_kappa[-1])
    assert big.log_kappa[-1] == pytest.approx(10**4 * math.log(3.5), rel=1e-3)  # rho(A_2) = 3.5
    for attr in ("kappa", "c"):  # beyond float64: an error that names the log-scale fields, never inf
        with pytest.raises(ValueError, match="log_kappa|log_scale"):
            getattr(big, attr)
    p = K.product([2] * 10**4)
    assert math.isfinite(p.log_alpha) and np.all(np.isfinite(p.scaled))
    for attr in ("alpha", "matrix"):
        with pytest.raises(ValueError, match="log"):
            getattr(p, attr)


def _kappa_gaussian_relu_closed_form(w, d, kappa0=3.0, c0=0.0):
    """``kappa_d`` for ReLU, Gaussian weights, constant width ``w``, in 60-digit decimals.

    Here ``det A_- = 0`` (``kappa_w = 3``), so ``A_-^j = lambda^(j-1) A_-`` with
    ``lambda = 1 + 5 / w``, and ``A^d = [[A_-^d, (I + A_- (lambda^(d-1) - 1) / (lambda - 1)) v], [0, 1]]``
    with ``v = (3 (w-1)/w, -1/w)``: independent of the library's recursion and matrix powers.
    """
    getcontext().prec = 60
    w = Decimal(w)
    al, be, _ga, _de = Decimal(6) / w, 3 * (w - 1) / w, Decimal(2) / w, (w - 1) / w
    lam = 1 + Decimal(5) / w
    v0, v1 = be, -1 / w
    p = lam ** (d - 1)
    geo = (p - 1) / (lam - 1)
    top = p * (al * Decimal(kappa0) + be * Decimal(c0))  # e1^T A_-^d k0
    top += v0 + geo * (al * v0 + be * v1)  # e1^T (I + A_- geo) v
    return top


@pytest.mark.parametrize("w,t", [(10, 1e3), (200, 1e3), (2, 1e100), (10**5, 1e6)])
def test_depth_to_kurtosis(w, t):
    d = K.depth_to_kurtosis(t, 3.0, 0.0, w)
    assert d >= 2
    # the returned depth is the first crossing, by a closed form independent of the library
    assert _kappa_gaussian_relu_closed_form(w, d) >= Decimal(t) > _kappa_gaussian_relu_closed_form(w, d - 1)
    if d <= 10**5:
        res = K.propagate(3.0, 0.0, [w] * d)
        assert res.kappa[d] >= t * (1 - 1e-9) and res.kappa[d - 1] < t


#: Absolute tolerance on ``log kappa_d`` between the log-scale matrix powers of depth_to_kurtosis and
#: the layer-by-layer recursion of propagate: the recursion accumulates ~1e4 roundings of relative
#: size 1e-16 on log kappa ~ 60 (<= 1e-10; measured 2e-12), while one layer at width 1000 moves
#: log kappa by ~5e-3, so the bracket below still pins the depth exactly.
LOG_POWER_ATOL = 1e-9


def test_log_power_matches_propagate():
    """Past the 10^4 scanned layers depth_to_kurtosis bisects with A^d in log-scale (repeated
    squaring); its crossing depth for a threshold just below / above the recursion's kappa_d must be
    d / d + 1, for a general law (slope 0.1, kurtosis 1.8, non-Gaussian input moments)."""
    w, slope, kw, kappa0, c0 = 1000, 0.1, 1.8, 3.5, 0.2
    res = K.propagate(kappa0, c0, [w] * 12_001, slope, kw)
    for d in (10_001, 10_017, 11_000, 12_000):
        assert res.log_kappa[d + 1] - res.log_kappa[d] > 10 * LOG_POWER_ATOL
        below = math.exp(res.log_kappa[d] - LOG_POWER_ATOL)
        above = math.exp(res.log_kappa[d] + LOG_POWER_ATOL)
        assert K.depth_to_kurtosis(below, kappa0, c0, w, slope, kw) == d
        assert K.depth_to_kurtosis(above, kappa0, c0, w, slope, kw) == d + 1


# ------------------------------------------------------------------ weights and inputs


def test_weight_kurtosis_named_and_scipy():
    assert K.weight_kurtosis("gaussian") == 3.0
    assert K.weight_kurtosis("uniform") == 1.8
    assert K.weight_kurtosis("rademacher") == 1.0
    assert K.weight_kurtosis(stats.norm(0, 3)) == pytest.approx(3.0)
    assert K.weight_kurtosis(stats.uniform(-2, 4)) == pytest.approx(1.8)
    assert K.weight_kurtosis(stats.laplace()) == pytest.approx(6.0)


def _kurtosis_and_se(samples):
    """Sample kurtosis m4 / m2^2 (about 0) and its delta-method standard error over i.i.d. samples.

    Influence function of ``k = m4 / m2^2``: ``(x^4 - m4) / m2^2 - 2 m4 (x^2 - m2) / m2^3``.
    """
    x2 = samples * samples
    m2, m4 = x2.mean(), (x2 * x2).mean()
    infl = (x2 * x2 - m4) / m2**2 - 2.0 * m4 * (x2 - m2) / m2**3
    return m4 / m2**2, infl.std(ddof=1) / math.sqrt(samples.size)


#: Rounding allowance for a kurtosis that is exact for every sample (Rademacher: x^4 = (x^2)^2).
KURT_ROUND = 1e-12


@pytest.mark.parametrize("law", ["gaussian", "uniform", "rademacher"])
def test_weight_kurtosis_matches_sampled_weights(law):
    w = dense_weights(400, 500, 2.0, law, rng=5).ravel()  # i.i.d. entries
    k, se = _kurtosis_and_se(w)
    assert abs(k - K.weight_kurtosis(law)) <= Z * se + KURT_ROUND


def _input_statistics_se(x):
    """Delta-method standard errors of ``input_statistics(x)``'s (kappa0, c0) over independent rows.

    ``kappa0 = A / B^2`` and ``c0 = M - B^2`` with row means ``a_r = sum_k x_k^4 / w``,
    ``b_r = sum_k x_k^2 / w``, ``m_r`` = mean of ``x_i^2 x_j^2`` over ``i != j``.
    """
    n, w = x.shape
    x2 = x * x
    a = (x2 * x2).sum(axis=1) / w
    b = x2.sum(axis=1) / w
    m = ((w * b) ** 2 - w * a) / (w * (w - 1))
    big_a, big_b = a.mean(), b.mean()
    infl_k = (a - big_a) / big_b**2 - 2.0 * big_a * (b - big_b) / big_b**3
    infl_c = (m - m.mean()) - 2.0 * big_b * (b - big_b)
    return infl_k.std(ddof=1) / math.sqrt(n), infl_c.std(ddof=1) / math.sqrt(n)


def test_input_statistics_hand_example_and_gaussian():
    st = K.input_statistics([[1.0, -1.0], [2.0, 0.0]])
    assert (st.sigma_x2, st.kappa0, st.c0) == pytest.approx((1.5, 2.0, -1.75))
    rng = np.random.default_rng(0)
    # i.i.d. Gaussian entries: (kappa0, c0) = (3, 0); x = sqrt(E) g with one E ~ Exp(1) per row:
    # E x^4 = E[E^2] 3 = 6, E x_i^2 x_j^2 = E[E^2] = 2, so (6, 1)
    e = rng.exponential(size=(20_000, 1))
    for x, (kappa0, c0) in (
        (rng.standard_normal((20_000, 30)), (3.0, 0.0)),
        (np.sqrt(e) * rng.standard_normal((20_000, 30)), (6.0, 1.0)),
    ):
        st = K.input_statistics(x)
        se_k, se_c = _input_statistics_se(x)
        assert abs(st.kappa0 - kappa0) <= Z * se_k
        assert abs(st.c0 - c0) <= Z * se_c


@pytest.mark.parametrize("kw,law", [(3.0, "gaussian"), (1.0, "rademacher")])
def test_input_statistics_projected_against_monte_carlo(kw, law):
    """Prop. 3.3 projection z = W x of digits rows: exact averages over W versus sampled W."""
    from meanfield.data import load_digits

    x = load_digits(n_samples=300, standardized=True).x
    st = K.input_statistics(x, "projected", kw)
    rng = np.random.default_rng(8)
    n_w = 2000
    w = np.stack([dense_weights(2, 64, 1.0, law, rng=rng) for _ in range(n_w)])  # (n_w, 2, 64)
    z = np.einsum("kij,nj->kni", w, x)  # (n_w, 300, 2)
    m4 = (z**4).mean(axis=(1, 2))  # per W draw (inputs averaged exactly)
    m22 = (z[..., 0] ** 2 * z[..., 1] ** 2).mean(axis=1)
    s4 = st.sigma_x2**2
    assert abs(m4.mean() / s4 - st.kappa0) < Z * m4.std() / math.sqrt(n_w) / s4
    assert abs(m22.mean() - s4 - st.c0) < Z * m22.std() / math.sqrt(n_w)
    m2 = (z**2).mean(axis=(1, 2))
    assert abs(m2.mean() - st.sigma_x2) < Z * m2.std() / math.sqrt(n_w)


# ------------------------------------------------------------------ Sec. 5: empirical variance


@settings(max_examples=40)
@given(kappa=hs.floats(1.0, 1e6), n=hs.integers(2, 10_000), s2=hs.floats(0.01, 100.0))
def test_gamma_approximation_moments(kappa, n, s2):
    ev = K.empirical_variance_distribution(kappa, n, s2)
    assert ev.dist.mean() == pytest.approx(s2, rel=1e-10)
    assert ev.dist.var() == pytest.approx(ev.var_s2, rel=1e-10)
    assert ev.var_s2 == pytest.approx((kappa - (n - 3) / (n - 1)) * s2**2 / n, rel=1e-12)
    assert ev.df == pytest.approx(2 * s2**2 / ev.var_s2, rel=1e-12)


def test_gaussian_sample_variance_is_chi_square():
    """kappa = 3: Var S_n^2 = 2 sigma^4 / (n - 1) and the Gamma law is the exact scaled chi^2 ... up to n vs n-1."""
    for n in (5, 50):
        ev = K.empirical_variance_distribution(3.0, n, 2.0)
        assert ev.var_s2 == pytest.approx(2 * 4.0 / (n - 1), rel=1e-12)
        assert ev.df == pytest.approx(n - 1, rel=1e-12)  # the exact chi^2 degrees of freedom


def test_vanishing_empirical_variance_as_kurtosis_grows():
    logp = [K.empirical_variance_distribution(k, 1000).log_prob_below(1e-3) for k in (3.0, 1e2, 1e4, 1e6, 1e8)]
    assert np.all(np.diff(logp) > 0) and logp[0] < math.log(1e-10) and logp[-1] > math.log(0.9)
    assert math.isfinite(logp[0])  # P ~ 1e-1600 for kappa = 3: on the log scale, not a silent 0
    with pytest.raises(ValueError, match="log_prob_below"):
        K.empirical_variance_distribution(3.0, 1000).prob_below(1e-3)
    q = K.empirical_variance_distribution(1e4, 100).quantile([0.9, 0.99, 0.999])
    assert np.all(np.diff(q) > 0)


# ------------------------------------------------------------------ Props. B.1, B.2


def test_prop_b1_width_one():
    np.testing.assert_allclose(K.nonzero_probability([1] * 10), 0.5 ** np.arange(11), rtol=1e-14)
    # 2^-2000 is below float64: log=True carries it, log=False refuses instead of returning 0
    # cumsum of d log1p terms: rounding <= d * eps relative
    np.testing.assert_allclose(
        K.nonzero_probability([1] * 2000, log=True), -np.arange(2001) * math.log(2.0), rtol=2000 * EPS
    )
    with pytest.raises(ValueError, match="log=True"):
        K.nonzero_probability([1] * 2000)


@pytest.mark.parametrize("law", ["gaussian", "uniform", "orthogonal"])
def test_prop_b2_against_simulation(law):
    widths = [3, 2, 1, 2, 3]
    n = 100_000
    p = K.nonzero_probability(widths[:-1])
    f = nonzero_fraction(widths[:-1], law, n, output_width=widths[-1], rng=21)
    se = np.sqrt(p * (1 - p) / n)
    assert np.all(np.abs(f - p) <= Z * se + 1e-15)


def test_prop_b2_fails_for_rademacher_at_width_two():
    """Equal entries arise with probability > 0 and a (+1, -1) row then zeroes them exactly."""
    widths = [2] * 9
    n = 100_000
    p = K.nonzero_probability(widths[:-1])[-1]
    f = nonzero_fraction(widths[:-1], "rademacher", n, output_width=widths[-1], rng=22)[-1]
    assert p - f > 10 * math.sqrt(p * (1 - p) / n)


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: K.transition_matrix(0), "width"),
        (lambda: K.transition_matrix(3, weight_kurtosis=0.5), "weight_kurtosis"),
        (lambda: K.transition_matrix(3, sigma_x2=-1.0), "sigma_x2"),
        (lambda: K.transition_matrix(3, slope=float("nan")), "slope"),
        (lambda: K.propagate(3.0, -2.0, [3]), "c0"),
        (lambda: K.propagate(0.5, 0.0, [3]), "kappa0"),
        (lambda: K.propagate(3.0, 0.0, []), "widths"),
        (lambda: K.propagate(3.0, 0.0, [3, 0]), "widths"),
        (lambda: K.propagate(3.0, 0.0, [2.5]), "widths"),
        (lambda: K.propagate(3.0, float("nan"), [3]), "c0"),
        (lambda: K.product([]), "widths"),
        (lambda: K.product([3], weight_kurtosis=float("inf")), "weight_kurtosis"),
        (lambda: K.spectral_radius(0), "width"),
        (lambda: K.trace_determinant(3, slope=float("inf")), "slope"),
        (lambda: K.weight_kurtosis("orthogonal"), "distribution"),
        (lambda: K.weight_kurtosis(stats.t(3)), "distribution"),
        (lambda: K.weight_kurtosis(3.0), "distribution"),
        (lambda: K.input_statistics(np.ones(5)), "x must have shape"),
        (lambda: K.input_statistics(np.zeros((3, 4))), "x must not"),
        (lambda: K.input_statistics(np.ones((3, 4)), method="sampled"), "method"),
        (lambda: K.input_statistics(np.ones((3, 4)), method="projected", weight_kurtosis=0.0), "weight_kurtosis"),
        (lambda: K.empirical_variance_distribution(0.5, 10), "kappa"),
        (lambda: K.empirical_variance_distribution(3.0, 1), "n must"),
        (lambda: K.empirical_variance_distribution(3.0, 10, 0.0), "sigma2"),
        (lambda: K.empirical_variance_distribution(3.0, 10).quantile(1.5), "p must"),
        (lambda: K.empirical_variance_distribution(3.0, 10).prob_below(float("nan")), "v must"),
        (lambda: K.nonzero_probability([0]), "widths"),
        (lambda: K.depth_to_kurtosis(1e9, 2.0, 0.0, 1, 1.0, 1.0, max_depth=100), "threshold"),
        (lambda: K.depth_to_kurtosis(-1.0, 3.0, 0.0, 4), "threshold"),
        (lambda: K.depth_to_kurtosis(10.0, 3.0, 0.0, 4, max_depth=-1), "max_depth"),
    ],
)
def test_bad_input_raises_naming_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_result_dataclasses_inherit_result_with_replace():
    """Every result of meanfield.kurtosis is a frozen dataclass inheriting meanfield._results.Result."""
    import dataclasses

    from meanfield import Result

    results = [
        K.propagate(3.0, 0.0, [4, 4]),
        K.product([4, 5]),
        K.trace_determinant(4),
        K.input_statistics(np.array([[1.0, -1.0], [2.0, 0.5]])),
        K.empirical_variance_distribution(3.0, 10),
    ]
    for res in results:
        assert isinstance(res, Result) and dataclasses.is_dataclass(res)
        first = dataclasses.fields(res)[0].name
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(res, first, None)
    p = results[1]
    assert p.replace(log_scale=2.0).log_alpha == pytest.approx(p.log_alpha + 2.0)
    assert results[2].replace(gap=0.5).gap == 0.5


def test_ragged_input_names_the_argument():
    """Regression (public-API fuzzer): a ragged x raised numpy's own 'inhomogeneous shape' error."""
    with pytest.raises(ValueError, match="x"):
        K.input_statistics([[1.0, 2.0], [3.0]])


# --- regressions found by the public-API fuzzer (tests/fuzz/) ------------------------------------


@pytest.mark.parametrize("name", ["n_networks", "n_metainit"])
def test_fig1_variances_bounds_network_counts_by_name(name):
    from meanfield.validation.kurtosis import fig1_variances

    with pytest.raises(ValueError, match=name):
        fig1_variances(full=False, rng=0, n_inputs=4, depth=3, metainit_steps=2, **{name: 10**12})
