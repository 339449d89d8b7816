"""Edge cases of meanfield.kurtosis (Grzejdziak et al. 2023): inputs that are no moments, extremes, underflow, types.

Each test names the finding it pins; each failed on the code before the fix.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs
from scipy import integrate, special

from meanfield import kurtosis as K

EPS = float(np.finfo(np.float64).eps)
#: scipy.integrate.quad relative accuracy requested in the reference integrals below.
QUAD_RTOL = 1e-11


# ------------------------------------------------------------------ inputs that are no moments


def test_kurtosis_below_one_is_rejected():
    """Issue: propagate(1.0, -1.0, [2], slope=1.0, weight_kurtosis=1.0) returned kappa_1 = 0.5.

    kappa0 = 1 means x_i^2 is constant, so c0 must be 0 (Cauchy-Schwarz): the input is no moment."""
    with pytest.raises(ValueError, match="c0"):
        K.propagate(1.0, -1.0, [2], slope=1.0, weight_kurtosis=1.0)
    with pytest.raises(ValueError, match="c0"):  # Var(x_1^2 + x_2^2 + x_3^2) < 0 at width 3
        K.propagate(2.0, -0.9, [3], slope=1.0, weight_kurtosis=1.0)
    with pytest.raises(ValueError, match="c0"):
        K.depth_to_kurtosis(10.0, 1.0, -1.0, 2, 1.0, 1.0)


@settings(max_examples=60)
@given(
    ws=hs.lists(hs.integers(1, 60), min_size=1, max_size=8),
    a=hs.floats(-3.0, 3.0),
    kw=hs.floats(1.0, 10.0),
    kappa0=hs.floats(1.0, 50.0),
    frac=hs.floats(0.0, 1.0),
)
def test_valid_moments_stay_moments_and_kurtosis_stays_above_one(ws, a, kw, kappa0, frac):
    """Every input inside the moment bounds of width ws[0] gives kappa_l >= 1 at every layer, and
    (kappa_l, c_l) satisfy the same bounds for the width w_l of y^(l) (the set is invariant)."""
    lower = -1.0 if ws[0] == 1 else max(-1.0, -(kappa0 - 1.0) / (ws[0] - 1))
    c0 = lower + frac * (kappa0 - 1.0 - lower)
    res = K.propagate(kappa0, c0, ws, a, kw)
    kappa, c = res.kappa, res.c
    tol = 1e-10 * kappa
    assert np.all(kappa >= 1.0 - tol)
    assert np.all(c <= kappa - 1.0 + tol) and np.all(c >= -1.0 - tol)
    for l, w in enumerate(ws):
        if w >= 2:
            assert c[l] >= -(kappa[l] - 1.0) / (w - 1) - tol[l]


# ------------------------------------------------------------------ foreign exceptions at extremes


@pytest.mark.parametrize("s2", [1e-300, 1e300, 1e-101, 1e101])
def test_sigma_x2_outside_the_representable_range_is_a_valueerror(s2):
    """Issue: transition_matrix(10, sigma_x2=1e300) OverflowError, propagate(..., sigma_x2=1e-300)
    ZeroDivisionError."""
    calls = [
        lambda: K.transition_matrix(10, sigma_x2=s2),
        lambda: K.propagate(3.0, 0.0, [10], sigma_x2=s2),
        lambda: K.product([10], sigma_x2=s2),
        lambda: K.depth_to_kurtosis(10.0, 3.0, 0.0, 10, sigma_x2=s2),
    ]
    for call in calls:
        with pytest.raises(ValueError, match=r"sigma_x2 must lie in \[1e-100, 1e\+100\]"):
            call()


@pytest.mark.parametrize("s2", [1e-100, 1e100])
def test_sigma_x2_at_the_range_ends_scales_c_only(s2):
    """At the ends of SIGMA_X2_RANGE results are finite: kappa is scale free, c scales as s2^2."""
    base = K.propagate(4.0, 0.5, [7, 3, 9], 0.2, 1.8)
    scaled = K.propagate(4.0, 0.5 * s2**2, [7, 3, 9], 0.2, 1.8, sigma_x2=s2)
    np.testing.assert_allclose(scaled.kappa, base.kappa, rtol=10 * EPS)
    np.testing.assert_allclose(scaled.c, base.c * s2**2, rtol=100 * EPS)
    m = K.transition_matrix(7, 0.2, 1.8, s2)
    assert np.all(np.isfinite(m)) and np.all(m[m != 0] != 0)


@pytest.mark.parametrize("slope", [1e300, -1e300, 1e154, 1e10])
def test_huge_slope_is_finite_and_tends_to_the_limit(slope):
    """Issue: slope=1e300 raised OverflowError (slope**4). r(a) = 2(a^4+1)/(a^2+1)^2 -> 2 as |a| -> inf,
    with r(a) - 2 = -4 a^2 / (a^2 + 1)^2 ~ -4 / a^2 (below rounding here)."""
    m = K.transition_matrix(10, slope=slope)
    assert m[0, 0] == pytest.approx(3.0 * 2.0 / 10, rel=4 * (1 / slope) ** 2 + 4 * EPS)
    assert math.isfinite(K.spectral_radius(10, slope)) and math.isfinite(K.trace_determinant(10, slope).gap)
    assert np.all(np.isfinite(K.propagate(3.0, 0.0, [10] * 5, slope).kappa))
    assert math.isfinite(K.product([10] * 5, slope).alpha)
    assert K.depth_to_kurtosis(1e3, 3.0, 0.0, 10, slope) >= 1


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda: K.spectral_radius(1e300), "width"),
        (lambda: K.trace_determinant(2**64), "width"),
        (lambda: K.transition_matrix(1e300), "width"),
        (lambda: K.depth_to_kurtosis(10.0, 3.0, 0.0, 2**64), "width"),
        (lambda: K.depth_to_kurtosis(10.0, 3.0, 0.0, 1e300), "width"),
        (lambda: K.propagate(3.0, 0.0, [1e300, 3]), "widths"),
        (lambda: K.propagate(3.0, 0.0, [2**64]), "widths"),
        (lambda: K.product(np.array([3.0, 1e300])), "widths"),
        (lambda: K.nonzero_probability([1e300]), "widths"),
        (lambda: K.empirical_variance_distribution(3.0, 2**64), "n"),
        (lambda: K.empirical_variance_distribution(3.0, 10, 1e300), "sigma2"),
        (lambda: K.empirical_variance_distribution(3.0, 10, 1e-300), "sigma2"),
        (lambda: K.product([3], weight_kurtosis=1e300), "weight_kurtosis"),
        (lambda: K.spectral_radius(3, weight_kurtosis=1e300), "weight_kurtosis"),
        (lambda: K.propagate(3.0, 0.0, [3], weight_kurtosis=1e300), "weight_kurtosis"),
        (lambda: K.depth_to_kurtosis(10.0, 3.0, 0.0, 3, max_depth=1e300), "max_depth"),
    ],
)
def test_huge_arguments_are_valueerrors_naming_them(call, name):
    """Issue: OverflowError ("int too large to convert to float", "Python int too large to convert
    to C long"), or NaN/inf results (weight_kurtosis=1e300) at absurd sizes."""
    with pytest.raises(ValueError, match=name):
        call()


def test_weight_kurtosis_at_its_bound_stays_finite_on_the_log_scale():
    """kappa_w = 1e100 (the bound) through 50 layers: every log field finite, values that exceed
    float64 raise instead of returning inf/NaN."""
    p = K.product([3] * 50, 0.0, 1e100)
    assert np.all(np.isfinite(p.scaled)) and math.isfinite(p.log_alpha) and math.isfinite(p.log_gamma)
    # alpha_50 >= (kappa_w r / w)^50 = (2e100 / 3)^50: log > 50 * (log(2e100) - log 3)
    assert p.log_alpha >= 50 * (math.log(2e100) - math.log(3)) * (1 - 1e-12)
    with pytest.raises(ValueError, match="log_alpha"):
        p.alpha  # noqa: B018 (the property raises)
    res = K.propagate(3.0, 0.0, [3] * 50, 0.0, 1e100)
    assert np.all(np.isfinite(res.log_kappa)) and np.all(np.diff(res.log_kappa) > 0)
    with pytest.raises(ValueError, match="log_kappa"):
        res.kappa  # noqa: B018 (the property raises)
    td = K.trace_determinant(3, 0.0, 1e100)
    assert all(math.isfinite(v) for v in (td.trace, td.determinant, td.lambda_max, td.lambda_min, td.gap))


# ------------------------------------------------------------------ input statistics


def test_input_statistics_is_scale_free_and_never_nan():
    """Issue: input_statistics(x * 1e300) returned sigma_x2 = inf, kappa0 = c0 = NaN."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((40, 6)) * rng.exponential(size=(40, 1))
    for method in ("pairs", "projected"):
        base = K.input_statistics(x, method)
        for s in (1e40, 1e-40):
            st = K.input_statistics(x * s, method)
            assert st.kappa0 == pytest.approx(base.kappa0, rel=1e-13)
            assert st.sigma_x2 == pytest.approx(base.sigma_x2 * s**2, rel=1e-13)
            assert st.c0 == pytest.approx(base.c0 * s**4, rel=1e-12)
        for s in (1e300, 1e-300, 1e-160):
            with pytest.raises(ValueError, match="x must have a mean square"):
                K.input_statistics(x * s, method)


@pytest.mark.parametrize("bad", ["abc", None, float("nan"), float("inf"), -1.0, 0.5, 1 + 1j, True, [1.0, 2.0]])
def test_input_statistics_validates_weight_kurtosis_on_the_pairs_path(bad):
    """Issue: weight_kurtosis='abc' (or NaN, -1, ...) was accepted and ignored by method='pairs'."""
    with pytest.raises((TypeError, ValueError), match="weight_kurtosis"):
        K.input_statistics(np.eye(3) + 1.0, "pairs", bad)


def test_input_statistics_moments_are_accepted_by_propagate():
    """The moment bounds propagate checks hold for what input_statistics returns (pairs and projected)."""
    rng = np.random.default_rng(4)
    for x in (rng.standard_normal((7, 5)), rng.standard_normal((200, 3)) ** 3, np.abs(rng.standard_normal((9, 2)))):
        for method in ("pairs", "projected"):
            st = K.input_statistics(x, method)
            K.propagate(st.kappa0, st.c0, [x.shape[1], 4], sigma_x2=st.sigma_x2)


# ------------------------------------------------------------------ empirical variance: no silent 0 / inf


def _log_lower_gamma_by_quadrature(a, x):
    """log P(a, x) = a log x - x - lgamma(a) + log int_0^inf exp(-a s + x (1 - e^{-s})) ds (t = x e^{-s}).

    For x < a the integrand is smooth, <= 1 and decays at least like e^{-(a - x) s}; with
    s = u / (a - x) it is ~ e^{-u} on the scale u ~ 1 for any a, and quad reaches QUAD_RTOL."""
    assert x < a
    c = a - x

    def f(u):
        return math.exp(-a * u / c - x * math.expm1(-u / c))

    val = integrate.quad(f, 0.0, math.inf, epsrel=QUAD_RTOL, epsabs=0.0)[0] / c
    return a * math.log(x) - x - special.gammaln(a) + math.log(val)


@pytest.mark.parametrize(
    "kappa,n,v", [(3.0, 1000, 1e-3), (3.0, 50, 1e-30), (1.0, 5000, 0.5), (100.0, 1000, 1e-40), (1.5, 7, 1e-250)]
)
def test_log_prob_below_matches_quadrature_where_the_probability_underflows(kappa, n, v):
    """P(S_n^2 < v) below 1e-308: log_prob_below against an independent quadrature; prob_below raises
    instead of returning 0 (the issue's silent underflow)."""
    ev = K.empirical_variance_distribution(kappa, n)
    ref = _log_lower_gamma_by_quadrature(ev.shape, v / ev.scale)
    assert ref < math.log(1e-308)
    # quadrature relative error QUAD_RTOL on the integral -> absolute QUAD_RTOL on the log; the
    # library's Stirling / log1p form is good to ~1e-13 relative of |log P|
    assert ev.log_prob_below(v) == pytest.approx(ref, rel=1e-12, abs=10 * QUAD_RTOL)
    with pytest.raises(ValueError, match="log_prob_below"):
        ev.prob_below(v)


def test_log_prob_below_agrees_with_scipy_where_both_are_representable():
    ev = K.empirical_variance_distribution(3.0, 200)
    v = np.array([0.2, 0.5, 1.0, 2.0])
    np.testing.assert_allclose(ev.log_prob_below(v), np.log(ev.dist.cdf(v)), rtol=1e-12)
    np.testing.assert_allclose(ev.prob_below(v), ev.dist.cdf(v), rtol=1e-12)
    assert ev.prob_below(-1.0) == 0.0  # exactly 0 below the support, not an underflow


def test_quantile_never_returns_a_silent_zero_or_inf():
    """quantile(1) = inf and tiny quantiles (shape -> 0: the vanishing-variance regime) underflowed to 0.

    log_quantile's small-x branch solves P(k, x) = x^k / Gamma(k + 1) (1 + O(x)) = p; at the
    boundary it must agree with log(gammaincinv) (x ~ 1e-300: the O(x) term is invisible)."""
    ev = K.empirical_variance_distribution(1e5, 10)  # shape ~ 1e-4: the median is ~ 0.5^(1 / shape)
    with pytest.raises(ValueError, match="p must lie in"):
        ev.quantile(1.0)
    with pytest.raises(ValueError, match="log_quantile"):
        ev.quantile(0.5)
    lq = ev.log_quantile(0.5)
    assert math.isfinite(lq) and lq < math.log(1e-308)
    # p at which the standardised quantile is 1e-290 (representable): both branches agree there
    k = ev.shape
    p = special.gammainc(k, 1e-290)
    direct = math.log(special.gammaincinv(k, p)) + math.log(ev.scale)
    formula = (math.log(p) + special.gammaln(k + 1)) / k + math.log(ev.scale)
    assert formula == pytest.approx(direct, rel=1e-12)
    assert ev.quantile(0.0) == 0.0


def test_nonzero_probability_log_flag_is_a_bool():
    with pytest.raises(TypeError, match="log"):
        K.nonzero_probability([3, 3], log="no")
    with pytest.raises(TypeError, match="log"):
        K.nonzero_probability([3, 3], log=1)


# ------------------------------------------------------------------ types: bools and complex numbers


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda v: K.transition_matrix(10, slope=v), "slope"),
        (lambda v: K.transition_matrix(10, weight_kurtosis=v), "weight_kurtosis"),
        (lambda v: K.transition_matrix(10, sigma_x2=v), "sigma_x2"),
        (lambda v: K.propagate(v, 0.0, [3]), "kappa0"),
        (lambda v: K.propagate(3.0, v, [3]), "c0"),
        (lambda v: K.propagate(3.0, 0.0, [v]), "widths"),
        (lambda v: K.depth_to_kurtosis(v, 3.0, 0.0, 3), "threshold"),
        (lambda v: K.empirical_variance_distribution(v, 10), "kappa"),
        (lambda v: K.empirical_variance_distribution(3.0, 10, v), "sigma2"),
        (lambda v: K.empirical_variance_distribution(3.0, 10).prob_below(v), "v"),
        (lambda v: K.input_statistics(np.full((3, 3), v)), "x"),
        (lambda v: K.nonzero_probability([v, 3]), "widths"),
    ],
)
@pytest.mark.parametrize("value", [True, 1 + 1j, np.complex128(2.0)])
def test_bools_and_complex_numbers_are_typeerrors(call, name, value):
    """Issue: booleans where numbers are expected were accepted as 1.0; complex input must be a TypeError."""
    with pytest.raises(TypeError, match=name):
        call(value)
