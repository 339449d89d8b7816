"""Edge cases of the Gaussian engine, activations, dense and conv mean field: extreme variances, q* = 0 and inf, hangs.

Each test pins a wrong answer, a hang or an error of the wrong kind that the library used to give;
expected values come from independent computations (scipy quadrature of a different formula,
closed forms of the limits, Monte-Carlo, the library's own propagation), never from the code under
test. Tolerances are named below and stated before looking.
"""

import inspect
import json
import math
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.special import erf, ndtr

from meanfield import conv, dense
from meanfield.activations import Activation, get_activation
from meanfield.gaussian import expectation, pair_expectation, variance_derivative

#: scipy.integrate.quad asked for 1e-13 absolute on smooth pieces: 1e-11 leaves room for the
#: 1e-19 Gaussian tail cut and rounding of the nested integrals.
REF_TOL = 1e-11
#: Residual of the solvers and agreement of two evaluations of the same rule.
RULE_TOL = 1e-12
#: Monte-Carlo tolerance in standard errors (two-sided p ~ 6e-7 per check, seeded).
N_SE = 5.0
#: Relative error of leading-order asymptotics at q ~ 1e300: corrections are O(1/q) or O(q^-1/2).
ASYMPTOTIC_RTOL = 1e-10

_SQRT_2PI = math.sqrt(2 * math.pi)


def _pdf(x, s):
    return math.exp(-0.5 * (x / s) ** 2) / (s * _SQRT_2PI)


def _nested(f1, inner, s1, points):
    """int f1(u1) pdf(u1; s1) inner(u1) du1 over |u1| <= 12 s1, split at ``points``."""
    lo, hi = -12 * s1, 12 * s1
    cuts = [lo] + sorted(p for p in points if lo < p < hi) + [hi]
    return sum(
        quad(lambda u: f1(u) * _pdf(u, s1) * inner(u), a, b, limit=400, epsabs=1e-14, epsrel=1e-13)[0]
        for a, b in zip(cuts[:-1], cuts[1:])
    )


def _conditional(s1, s2, c, u1):
    """Mean and standard deviation of u2 given u1."""
    return c * s2 * u1 / s1, s2 * math.sqrt(1 - c * c)


# --- Gaussian engine: user-defined activations use the built-ins' rules ------------------------


def test_user_defined_tanh_is_right_at_large_variance():
    """The issue: E tanh^2 off by 4e-2 at q = 100 and E tanh'tanh' = 0.00386 instead of 0.00727."""
    mine = Activation.from_functions("my_tanh", np.tanh, lambda x: 1 - np.tanh(x) ** 2)
    q, c = 100.0, 0.5
    s = math.sqrt(q)
    ref_second = quad(lambda u: math.tanh(u) ** 2 * _pdf(u, s), -12 * s, 12 * s, points=[0.0], limit=400, epsabs=1e-14)[
        0
    ]
    assert abs(expectation(mine, q) - ref_second) < REF_TOL

    def sech2(u):
        return 1.0 / math.cosh(u) ** 2 if abs(u) < 350 else 0.0

    def inner(u1):  # E[sech^2(u2) | u1], split where u2 = 0
        m, sd = _conditional(s, s, c, u1)
        a, b = m - 12 * sd, m + 12 * sd
        cuts = [a] + [p for p in (-5.0, 0.0, 5.0) if a < p < b] + [b]
        return sum(
            quad(lambda u: sech2(u) * _pdf(u - m, sd), x, y, epsabs=1e-15)[0] for x, y in zip(cuts[:-1], cuts[1:])
        )

    ref_pair = _nested(sech2, inner, s, [-5.0, 0.0, 5.0])
    assert ref_pair == pytest.approx(0.00727, abs=5e-6)  # the value
    assert abs(pair_expectation(mine, q, q, c, (1, 1)) - ref_pair) < REF_TOL
    # one mechanism: the user path and the compiled path integrate on the same nodes
    for q1, q2, cc in [(0.2, 0.1, 0.3), (100.0, 100.0, 0.5), (1e4, 2.0, -0.7), (1e6, 1e6, 0.99)]:
        assert pair_expectation(mine, q1, q2, cc) == pytest.approx(pair_expectation("tanh", q1, q2, cc), abs=RULE_TOL)
    assert variance_derivative(mine, 1e4) == pytest.approx(variance_derivative("tanh", 1e4), abs=RULE_TOL)


def test_user_activation_returning_nan_is_a_value_error():
    with pytest.raises(ValueError, match="phi"):
        Activation.from_functions("sqrt", np.sqrt, lambda x: 0.5 / np.sqrt(x))
    # finite on the probe points, NaN where the quadrature reaches at q = 10 (|u| up to 28)
    late = Activation.from_functions(
        "late", lambda x: np.where(np.abs(x) > 6, np.nan, np.tanh(x)), lambda x: 1 - np.tanh(x) ** 2
    )
    with pytest.raises(ValueError, match="NaN"):
        expectation(late, 10.0)
    with pytest.raises(ValueError, match="NaN"):
        dense.covariance_map(np.eye(2) * 10.0, late, 1.0, 0.0)


# --- hard_tanh: closed forms of the clipped Gaussian -------------------------------------------


def _clip_mean(m, sd):
    """E clip(U, -1, 1) for U ~ N(m, sd^2)."""
    a, b = (-1 - m) / sd, (1 - m) / sd
    inside = m * (ndtr(b) - ndtr(a)) + sd * (math.exp(-a * a / 2) - math.exp(-b * b / 2)) / _SQRT_2PI
    return inside + (1 - ndtr(b)) - ndtr(a)


@pytest.mark.parametrize(
    "q1,q2,c", [(1.0, 1.0, 0.5), (0.5, 2.0, 0.9999999), (3.0, 0.2, -0.9999), (0.3, 7.0, 0.0), (1e4, 1e-4, 0.6)]
)
def test_hard_tanh_moments_match_independent_quadrature(q1, q2, c):
    s1, s2 = math.sqrt(q1), math.sqrt(q2)

    def clip(u):
        return min(1.0, max(-1.0, u))

    def p_inside(u1):  # P(|u2| < 1 | u1)
        m, sd = _conditional(s1, s2, c, u1)
        return ndtr((1 - m) / sd) - ndtr((-1 - m) / sd)

    def e_clip(u1):
        return _clip_mean(*_conditional(s1, s2, c, u1))

    rect = _nested(lambda u: 1.0 if abs(u) < 1 else 0.0, p_inside, s1, [-1.0, 1.0])
    cross = _nested(clip, e_clip, s1, [-1.0, 0.0, 1.0])
    assert abs(pair_expectation("hard_tanh", q1, q2, c, (1, 1)) - rect) < REF_TOL
    assert abs(pair_expectation("hard_tanh", q1, q2, c) - cross) < REF_TOL


def test_hard_tanh_moments_match_monte_carlo_and_erf():
    assert expectation("hard_tanh", 1.0, (1, 1)) == pytest.approx(erf(1 / math.sqrt(2)), abs=1e-15)  # was 0.6197
    rng = np.random.default_rng(20240601)
    n, q1, q2, c = 2_000_000, 0.8, 1.7, 0.6
    z1, z2 = rng.standard_normal((2, n))
    u1 = math.sqrt(q1) * z1
    u2 = math.sqrt(q2) * (c * z1 + math.sqrt(1 - c * c) * z2)
    for d, sample in [((0, 0), np.clip(u1, -1, 1) * np.clip(u2, -1, 1)), ((1, 1), (np.abs(u1) < 1) & (np.abs(u2) < 1))]:
        se = sample.std() / math.sqrt(n)
        assert abs(pair_expectation("hard_tanh", q1, q2, c, d) - sample.mean()) < N_SE * se


def test_hard_tanh_critical_line_is_critical_and_monotone():
    sb = np.array([0.05, 0.5, 1.0, 2.0])
    sw = dense.critical_sigma_w2("hard_tanh", sb)
    for w, b in zip(sw, sb):  # the issue: chi_1 = 0.9990 at sigma_b2 = 1, 0.914 at 0.5
        assert dense.fixed_point("hard_tanh", w, b).chi_1 == pytest.approx(1.0, abs=1e-9)
    assert np.all(np.diff(sw) > 0)


# --- hangs: every call returns, with q* = inf and the right chi's -----------------------------

_HANG_SCRIPT = textwrap.dedent(
    """
    import json, time, numpy as np
    from meanfield import conv, dense
    out = {}
    def run(key, f):
        t = time.perf_counter(); r = f(); out[key] = [r, time.perf_counter() - t]
    run("gelu", lambda: dense.fixed_point("gelu", 2.25, 0.25).q_star)
    run("softplus", lambda: dense.fixed_point("softplus", 2.5, 0.1).chi_1)
    run("swish", lambda: dense.fixed_point("swish", 4.5, 0.0).phase)
    run("tanh1e300", lambda: dense.fixed_point("tanh", 1e300, 0.05).chi_1)
    run("crit", lambda: [dense.critical_sigma_w2("gelu", b) for b in (0.0, 0.05, 0.5)])
    run("cmap", lambda: dense.cmap(0.5, "softplus", 2.5, 0.1))
    run("phase", lambda: dense.phase_diagram("gelu", np.linspace(0.5, 5.0, 6), [0.0, 0.25]).q_star.tolist())
    run("conv", lambda: conv.depth_scales("gelu", 2.25, 0.25, [0.25, 0.5, 0.25], 8).fixed_point.q_star)
    print(json.dumps(out))
    """
)


@pytest.mark.slow
def test_fixed_points_at_infinite_q_star_return_in_bounded_time():
    # compile (and cache) the kernels here, so the child process times the computations only
    dense.phase_diagram("gelu", [1.0], [0.1])
    dense.fixed_point("gelu", 1.0, 0.1)
    proc = subprocess.run([sys.executable, "-c", _HANG_SCRIPT], capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["gelu"][0] == math.inf  # q-map slope sigma_w2 / 2 = 1.125 > 1 at large q, g > 0 throughout
    assert out["softplus"][0] == pytest.approx(1.25)  # chi_1 of the asymptote relu: sigma_w2 / 2
    assert out["swish"][0] == "chaotic"
    # tanh at sigma_w2 = 1e300: q* ~ 1e300, chi_1 = sigma_w2 int sech^4 / sqrt(2 pi q*) = (4/3) 1e150 / sqrt(2 pi)
    assert out["tanh1e300"][0] == pytest.approx((4 / 3) * 1e150 / _SQRT_2PI, rel=ASYMPTOTIC_RTOL)
    assert out["crit"][0][0] == pytest.approx(4.0, abs=1e-9)  # gelu at sigma_b2 = 0: chi_1 jumps from 1 to 2 at 4
    assert out["cmap"][0] == pytest.approx((math.sqrt(0.75) + (math.pi - math.acos(0.5)) * 0.5) / math.pi, abs=1e-14)
    assert out["conv"][0] == math.inf
    for key, (_, seconds) in out.items():
        assert seconds < 30, key  # generous: shared CPUs; the old code did not return within minutes


@pytest.mark.parametrize("name", ["gelu", "swish", "softplus"])
def test_q_star_agrees_with_the_iterated_q_map(name):
    """q* = inf exactly where the q-map iterated from a small variance diverges; else its limit."""
    for sw in [1.5, 2.25, 3.0, 4.5]:
        for sb in [0.0, 0.1, 0.25]:
            fp = dense.fixed_point(name, sw, sb)
            q = 0.01
            for _ in range(400):
                q = dense.qmap(q, name, sw, sb)
                if q > 1e12:
                    break
            if math.isinf(fp.q_star):
                assert q > 1e12, (name, sw, sb)
            elif fp.chi_q < 0.95:  # converged to rounding after 400 steps
                assert q == pytest.approx(fp.q_star, rel=1e-9, abs=1e-12), (name, sw, sb)


# --- the q* = 0 edge ---------------------------------------------------------------------------


def test_c_map_at_q_star_zero_is_the_limit_map():
    c = 0.5
    arc_cosine = (math.sqrt(1 - c * c) + (math.pi - math.acos(c)) * c) / math.pi
    assert dense.cmap(c, "relu", 2.0, 0.0) == pytest.approx(arc_cosine, abs=1e-15)  # was 1.0
    assert dense.cmap(c, "relu", 2.0, 0.0, q=1.0) == pytest.approx(arc_cosine, abs=1e-15)
    assert dense.cmap(c, "tanh", 0.5, 0.0) == c  # phi(u) ~ u: the identity


def test_tanh_without_bias_freezes_correlations_as_reported():
    fp = dense.fixed_point("tanh", 0.5, 0.0)
    assert fp.q_star == 0.0 and fp.c_frozen and fp.chi_c == 1.0 and math.isinf(fp.xi_c)  # was xi_c = 1.44
    assert fp.chi_1 == 0.5 and fp.xi_q == pytest.approx(1 / math.log(2))
    cov0 = np.array([[1.0, 0.3], [0.3, 1.0]])
    lp = dense.propagate_log(cov0, "tanh", 0.5, 0.0, 200)
    corr = lp.correlation[:, 0, 1]
    assert abs(corr[200] - corr[100]) < 1e-12 and corr[200] < 0.5  # frozen, not -> 1
    assert lp.log_scale[200] - lp.log_scale[199] == pytest.approx(math.log(fp.chi_q), rel=1e-12)

    from meanfield.simulate import simulate_dense

    kw = "rng" if "rng" in inspect.signature(simulate_dense).parameters else "seed"
    x = np.array([[1.0, 0.0], [0.3, math.sqrt(1 - 0.09)]]) * math.sqrt(2.0)
    depth, width, nets = 12, 512, 8
    sim = simulate_dense(x, "tanh", 0.5, 0.0, depth, width, n_networks=nets, **{kw: 7})
    cov_sim = sim.cov[:, -1]
    corr_sim = cov_sim[:, 0, 1] / np.sqrt(cov_sim[:, 0, 0] * cov_sim[:, 1, 1])
    theory = dense.propagate(dense.input_covariance(x, 0.5, 0.0), "tanh", 0.5, 0.0, depth)[-1]
    corr_th = theory[0, 1] / math.sqrt(theory[0, 0] * theory[1, 1])
    se = corr_sim.std(ddof=1) / math.sqrt(nets)
    assert abs(corr_sim.mean() - corr_th) < N_SE * se + 1.0 / width  # + O(1/width) bias of a ratio
    assert corr_sim.mean() < 0.6  # an exponential approach to c* = 1 (xi_c = 1.44) would give > 0.99


def test_relu_without_bias_converges_polynomially():
    fp = dense.fixed_point("relu", 1.5, 0.0)
    assert fp.q_star == 0.0 and fp.chi_c == 1.0 and math.isinf(fp.xi_c) and not fp.c_frozen  # was xi_c = 3.48
    lp = dense.propagate_log(np.array([[1.0, 0.0], [0.0, 1.0]]), "relu", 1.5, 0.0, 800)
    gap = 1.0 - lp.correlation[:, 0, 1]
    # the arc-cosine map has 1 - c^l ~ (3 pi / l)^2 / 2: doubling l divides the gap by ~4
    assert gap[800] / gap[400] == pytest.approx(0.25, abs=0.01)


# --- silent underflow / overflow in propagate -------------------------------------------------


def test_propagate_raises_instead_of_returning_underflowed_covariances():
    cov0 = np.array([[1.0, 0.4], [0.4, 1.3]])
    with pytest.raises(ValueError, match="propagate_log"):
        dense.propagate(cov0, "relu", 1.5, 0.0, 10_000)  # was non-PSD at layer 2,576, zeros from 2,591
    lp = dense.propagate_log(cov0, "relu", 1.5, 0.0, 10_000)
    assert np.all(np.abs(lp.correlation) <= 1.0)
    assert np.linalg.eigvalsh(lp.normalized).min() >= -1e-15
    assert (lp.log_scale[-1] - lp.log_scale[-1001]) / 1000 == pytest.approx(math.log(0.75), rel=1e-12)
    cov4 = 0.5 + 0.5 * np.eye(4)
    with pytest.raises(ValueError, match="propagate_log"):
        conv.propagate(cov4, "relu", 1.5, 0.0, [0.25, 0.5, 0.25], 3000)
    res = conv.propagate_log(cov4, "relu", 1.5, 0.0, [0.25, 0.5, 0.25], 3000)
    assert res.log_q[-1, 0] == pytest.approx(3000 * math.log(0.75) + math.log(1.0), rel=1e-9)


def test_deep_relu_like_propagation_switches_to_the_asymptote():
    """gelu at sigma_w2 = 4: q grows like 2^l past the float64 range; the log scale follows relu."""
    lp = dense.propagate_log(np.array([[1.0, 0.5], [0.5, 1.0]]), "gelu", 4.0, 0.1, 3000)
    assert np.all(np.isfinite(lp.log_scale)) and lp.log_scale[-1] - lp.log_scale[-2] == pytest.approx(
        math.log(2.0), rel=1e-12
    )
    with pytest.raises(ValueError, match="propagate_log"):
        dense.propagate(np.eye(2), "gelu", 4.0, 0.1, 3000)


# --- extreme parameters -----------------------------------------------------------------------


def test_expectations_at_extreme_variances_match_their_asymptotics():
    q = 1e300
    t0 = time.perf_counter()
    assert expectation("tanh", q, (1, 1)) == pytest.approx((4 / 3) / (_SQRT_2PI * 1e150), rel=ASYMPTOTIC_RTOL)
    assert expectation("gelu", q) == pytest.approx(q / 2, rel=ASYMPTOTIC_RTOL)
    assert pair_expectation("tanh", q, q, 0.5) == pytest.approx(1 / 3, abs=1e-12)  # (2/pi) asin(1/2)
    assert pair_expectation("gelu", q, 4.0 * q, 0.5) == pytest.approx(
        2 * q * (math.sqrt(0.75) + (math.pi - math.acos(0.5)) * 0.5) / (2 * math.pi), rel=ASYMPTOTIC_RTOL
    )
    assert expectation("tanh", 1e-300) == pytest.approx(1e-300, rel=1e-12)
    assert time.perf_counter() - t0 < 30
    out = dense.covariance_map(np.array([[1e300, 0.0], [0.0, 1e300]]), "tanh", 1.0, 0.0)
    assert out[0, 0] == pytest.approx(1.0, abs=1e-12) and abs(out[0, 1]) < 1e-15


def test_fixed_point_with_huge_bias_is_finite():
    fp = dense.fixed_point("tanh", 1.5, 1e300)
    assert fp.q_star == pytest.approx(1e300, rel=1e-12) and fp.phase == "ordered" and fp.c_star == 1.0
    with pytest.raises(ValueError, match="float64"):
        dense.fixed_point("gelu", 1.0, 1.7e308)  # q* = sigma_b2 / (1 - 1/2) overflows


def test_input_covariance_scales_instead_of_overflowing():
    x = np.array([[1.0, 2.0, 2.0], [0.0, 3.0, 4.0]]) * 1e200
    out = dense.input_covariance(x, 1e-300, 0.0)
    assert out[1, 1] == pytest.approx(1e100 * 25 / 3, rel=1e-15)
    with pytest.raises(ValueError, match="float64"):
        dense.input_covariance(x * 1e100, 1.0, 0.0)
    with pytest.raises(ValueError, match="underflow"):
        dense.input_covariance(x * 1e-300 * 1e-100, 1.0, 0.0)


# --- errors of the right kind -----------------------------------------------------------------


@pytest.mark.parametrize(
    "call, exc, name",
    [
        (lambda: dense.fixed_point("tanh", np.array([1.5, 2.0]), 0.05), TypeError, "sigma_w2"),
        (lambda: dense.fixed_point("tanh", 1.5, np.array([])), TypeError, "sigma_b2"),
        (lambda: dense.covariance_map(np.eye(2), "tanh", 1.0, np.ones((2, 2, 2))), TypeError, "sigma_b2"),
        (lambda: dense.propagate(np.eye(2), "tanh", np.array([1.0]), 0.0, 3), TypeError, "sigma_w2"),
        (lambda: conv.covariance_map(np.eye(4), "tanh", np.array([]), 0.0, [0.25, 0.5, 0.25]), TypeError, "sigma_w2"),
        (lambda: conv.depth_scales("tanh", 1.5, np.ones((2, 2, 2)), [0.25, 0.5, 0.25], 8), TypeError, "sigma_b2"),
        (lambda: dense.fixed_point("tanh", 1.5 + 0j, 0.05), TypeError, "sigma_w2"),
        (lambda: dense.fixed_point("tanh", True, 0.05), TypeError, "sigma_w2"),
        (lambda: expectation("tanh", 1.0, (2.5, 0)), TypeError, "derivatives"),
        (lambda: expectation("tanh", 1.0, (math.inf, 0)), TypeError, "derivatives"),
        (lambda: pair_expectation("tanh", 1.0, 1.0, 0.2, (True, 0)), TypeError, "derivatives"),
        (lambda: expectation("tanh", 1.0, (3, 0)), ValueError, "derivatives"),
        (lambda: expectation("tanh", [True, False]), TypeError, "q"),
        (lambda: dense.backward_variance(1.0, "tanh", 1.0, 0.0, 5, log="yes"), TypeError, "log"),
        (lambda: dense.backward_variance(1.0, "tanh", 1.0, 0.0, 5, log=None), TypeError, "log"),
        (lambda: dense.phase_diagram("tanh", [1.0 + 1j], [0.0]), TypeError, "sigma_w2"),
        (lambda: dense.phase_diagram("tanh", [], [0.0]), ValueError, "sigma_w2"),
        (lambda: dense.critical_sigma_w2("tanh", 0.1, bracket=(0.5, math.nan)), ValueError, "bracket"),
        (lambda: dense.cmap(0.5, "tanh", 1.5, 0.05, q=np.array([1.0, 2.0])), TypeError, "q"),
        (lambda: conv.fixed_point_covariance(1.0, True, 4), TypeError, "c_star"),
        (lambda: conv.average(np.eye(3, dtype=bool), [0.25, 0.5, 0.25]), TypeError, "cov"),
        (lambda: conv.fourier_eigenvalues([False, True, False], 8), TypeError, "v"),
        (lambda: get_activation("leaky_relu", slope=True), TypeError, "slope"),
        (lambda: get_activation("tanh").derivative(True), TypeError, "order"),
        (lambda: get_activation("leaky_relu", slope=0.1 + 1j), TypeError, "slope"),
        (lambda: Activation.from_functions(None, np.tanh, np.tanh), TypeError, "name"),
        (lambda: Activation.from_functions("", np.tanh, np.tanh), ValueError, "name"),
        (lambda: Activation.from_functions("t", np.tanh, np.tanh, smooth="yes"), TypeError, "smooth"),
        (lambda: Activation.from_functions("t", np.tanh, lambda x: x + 1j), TypeError, "dphi"),
    ],
)
def test_bad_arguments_raise_the_right_kind_naming_the_argument(call, exc, name):
    with pytest.raises(exc, match=name):
        call()


def test_backward_variance_log_of_an_exact_zero_and_underflow():
    lv = dense.backward_variance(1.0, "tanh", 0.0, 0.1, 4, log=True)
    assert np.all(lv[:-1] == -np.inf) and lv[-1] == 0.0  # documented: the ratio is exactly 0
    assert np.array_equal(dense.backward_variance(1.0, "tanh", 0.0, 0.1, 4), [0.0, 0.0, 0.0, 1.0])
    with pytest.raises(ValueError, match="log=True"):  # chi_1 = 0.5^3000: not representable
        dense.backward_variance(1.0, "tanh", 0.5, 0.0, 3000)


def test_conv_gradient_overflow_is_a_value_error():
    with pytest.raises(ValueError, match="float64"):
        conv.gradient_variance_decay(0.5 + 0.5 * np.eye(4), "tanh", 1e300, 0.05, [0.25, 0.5, 0.25], 5)


# --- conv at q* = 0 -----------------------------------------------------------------------------


def test_conv_depth_scales_at_q_star_zero_follow_the_propagation():
    """tanh without bias: correlations only feel the spatial averaging, mode m decays by |lambda_m|."""
    v, n = [0.2, 0.5, 0.3], 8
    ds = conv.depth_scales("tanh", 0.5, 0.0, v, n)
    rng = np.random.default_rng(3)
    a = rng.standard_normal((n, n))
    # start at q ~ 1e-12, where the C-map is linear to 1e-12 relative
    res = conv.propagate_log(1e-12 * (a @ a.T / n + np.eye(n)), "tanh", 0.5, 0.0, v, 6)
    modes = conv.cyclic_diagonal_modes(res.normalized[-2:], n)  # (2, n, n): diagonal offset d, mode m
    for d, m in [(1, 2), (3, 1), (0, 3)]:
        rate = abs(modes[1, d, m] / modes[0, d, m]) / abs(modes[1, 0, 0] / modes[0, 0, 0])
        assert -1 / math.log(rate) == pytest.approx(ds.xi_c[m], rel=1e-6)
    with pytest.raises(ValueError, match="not differentiable"):
        conv.linearized_decay(np.zeros((4, 4)), "relu", 1.5, 0.0, [0.25, 0.5, 0.25], 3)


@pytest.mark.parametrize("activation", ["tanh", "erf", "sigmoid", "hard_tanh"])
def test_bounded_fixed_point_near_the_float64_top_is_refused_not_infinite(activation):
    # q* <= sigma_w2 sup phi^2 + sigma_b2 is finite for a bounded activation; where the solver's
    # arithmetic reaches the float64 top it says so instead of reporting q* = inf (a divergence)
    assert dense.fixed_point(activation, 1.5, 8e307).q_star == pytest.approx(8e307, rel=1e-15)
    for sb in (9e307, 1e308, 1.7e308):
        with pytest.raises(ValueError, match="float64 range"):
            dense.fixed_point(activation, 1.5, sb)


# --- variances below the linearisation threshold: activations that are not smooth at 0 ----------

#: The germ of a kink at 0 (phi ~ a0 leaky) drops terms of relative size O(sqrt(q)): 1e-15 at
#: q = 1e-30; with the rounding of a few layers, 1e-12 relative.
GERM_RTOL = 1e-12
#: Homogeneity is exact: only rounding of the log scale (|log q| ~ 100) separates the two sides.
HOMOGENEOUS_RTOL = 1e-12
_COV = np.array([[1.0, 0.5], [0.5, 0.8]])


def test_sign_and_relu_power_are_scale_free_below_the_linearisation_threshold():
    """sign (degree 0) and relu^n (degree n) at q = 1e-40: C(s Sigma) = s^p C(Sigma) exactly. The
    linearisation at 0 gave sign a zero map (the next layer's variance collapsed to sigma_b2) and
    relu^2 exactly 0."""
    s = 1e-40
    np.testing.assert_allclose(
        dense.propagate(_COV * s, "sign", 1.3, 0.0, 1)[1], dense.covariance_map(_COV, "sign", 1.3, 0.0), rtol=1e-15
    )
    for n in (2, 3):
        act = get_activation("relu_power", n=n)
        got = dense.propagate(_COV * s, act, 1.3, 0.0, 1)[1]
        np.testing.assert_allclose(got / s**n, dense.covariance_map(_COV, act, 1.3, 0.0), rtol=HOMOGENEOUS_RTOL)


@pytest.mark.parametrize("name,params", [("selu", {}), ("elu", {"alpha": 0.5})])
def test_a_kink_at_zero_maps_as_its_leaky_germ_below_the_threshold(name, params):
    """selu, elu(alpha != 1) at q = 1e-40: phi(u) ~ a0 u (u > 0), b0 u (u < 0), so C(s Sigma) ->
    s a0^2 C_leaky(Sigma) with slope b0 / a0 (the linearisation used one-sided phi'(0) and phi''(0):
    47 % off per layer for selu). The reference is the leaky-ReLU closed form at unit scale."""
    act = get_activation(name, **params)
    a0, b0 = (1.0507009873554805, 1.0507009873554805 * 1.6732632423543772) if name == "selu" else (1.0, 0.5)
    s = 1e-40
    want = a0**2 * dense.covariance_map(_COV, get_activation("leaky_relu", slope=b0 / a0), 1.0, 0.0)
    got = dense.propagate(_COV * s, act, 1.0, 0.0, 1)[1] / s
    np.testing.assert_allclose(got, want, rtol=GERM_RTOL)
    # across the threshold the per-layer decay of q is continuous (the single-input moments are
    # accurate on both sides): its log decrement is the same to the germ's O(sqrt(q))
    lq = np.asarray(dense.propagate_log(np.eye(1), act, 0.2, 0.0, 200).log_q).ravel()
    steps = np.diff(lq)
    above, below = steps[(lq[:-1] > -60) & (lq[:-1] < -50)], steps[lq[:-1] < -80]
    assert below.size and above.size and np.all(np.isfinite(lq))
    np.testing.assert_allclose(below, above.mean(), rtol=1e-9)


def test_backward_variance_below_the_threshold_for_relu_power_and_a_kink():
    """E phi'(u)^2 at q = 1e-40: relu^n's is q^(n-1) E phi'(z)^2 (it was taken as phi'(0)^2 = 0:
    log = -inf), selu's (a0^2 + b0^2) / 2 (it was the one-sided phi'(0)^2)."""
    got = dense.backward_variance(1e-40, "relu_power", 1.0, 0.0, 2, log=True)
    want = math.log(expectation("relu_power", 1e-40, (1, 1)))
    assert got[0] == pytest.approx(want, rel=HOMOGENEOUS_RTOL)
    lam, alpha = 1.0507009873554805, 1.6732632423543772
    got = dense.backward_variance(1e-40, "selu", 1.0, 0.0, 2, log=True)
    assert got[0] == pytest.approx(math.log(0.5 * lam**2 * (1 + alpha**2)), rel=GERM_RTOL)


def test_the_q0_correlation_map_of_scale_free_activations_is_their_unit_map():
    for act in ("sign", get_activation("relu_power", n=2)):
        for c in (-0.4, 0.5, 0.9):
            assert dense.cmap(c, act, 1.0, 0.0, q=0.0) == pytest.approx(dense.cmap(c, act, 1.0, 0.0, q=1.0), rel=1e-14)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_relu_power_correlations_at_q_star_zero(n):
    """relu^n at sigma_b2 = 0 flows to q* = 0, where its c-map is the scale-free map f: c = 1 is
    unstable (slope n^2 / (2n - 1) > 1), so c* < 1 and correlations do not freeze. c* is a fixed
    point of dense.cmap, chi_c its slope there (central difference), and a propagated pair of
    inputs reaches c*."""
    act = get_activation("relu_power", n=n)
    fp = dense.fixed_point(act, 1.0, 0.0)
    assert fp.q_star == 0.0 and not fp.c_frozen and 0.0 < fp.c_star < 1.0
    assert dense.cmap(fp.c_star, act, 1.0, 0.0, q=1.0) == pytest.approx(fp.c_star, abs=RULE_TOL)
    h = 1e-5
    slope = (dense.cmap(fp.c_star + h, act, 1.0, 0.0, q=1.0) - dense.cmap(fp.c_star - h, act, 1.0, 0.0, q=1.0)) / (
        2 * h
    )
    assert fp.chi_c == pytest.approx(slope, rel=1e-8)  # central difference: O(h^2) = 1e-10
    assert fp.xi_c == pytest.approx(-1.0 / math.log(fp.chi_c))
    corr = np.asarray(dense.propagate_log(np.array([[1e-3, 3e-4], [3e-4, 1e-3]]), act, 1.0, 0.0, 60).correlation)
    assert corr[-1, 0, 1] == pytest.approx(fp.c_star, abs=10 * fp.chi_c**60 + RULE_TOL)
    pd = dense.phase_diagram(act, [0.5, 1.0], [0.0, 0.1])
    np.testing.assert_array_equal(pd.c_star[:, 0], fp.c_star)
    assert not pd.c_frozen[:, 0].any()
    # q* = inf (a bias too large for the q-map's fixed points): the same scale-free map, the same c*
    fp_inf = dense.fixed_point(act, 2.0, 1.0)
    assert math.isinf(fp_inf.q_star) and (fp_inf.c_star, fp_inf.chi_c) == (fp.c_star, fp.chi_c)
    # (the variance grows like q^(n^l): 20 layers stay inside the log-scale representation)
    corr = np.asarray(dense.propagate_log(np.array([[1.0, 0.3], [0.3, 1.0]]), act, 2.0, 1.0, 20).correlation)
    assert corr[-1, 0, 1] == pytest.approx(fp.c_star, abs=10 * fp.chi_c**15)


@pytest.mark.parametrize("q", [1e-14, 1e-20, 1e-28])
@pytest.mark.parametrize("c", [-0.6, 0.5])
def test_elu_pair_moment_at_tiny_variance_follows_its_series(q, c):
    """E elu(u1) elu(u2) = c q - (2 c / sqrt(2 pi)) q^(3/2) + O(q^2) (elu(x) = x + x^2/2 1{x < 0}
    + ...): the closed form lost 0.1 eps / sqrt(q) relative to the cancellation of E[e^Y; Y < 0]
    against P(Y < 0) (1e-3 at q = 1e-28). The O(q^2) remainder is below 1e-13 of q here."""
    want = c - 2.0 * c / math.sqrt(2.0 * math.pi) * math.sqrt(q)
    assert pair_expectation("elu", q, q, c) / q == pytest.approx(want, abs=1e-13)


def test_relu_power_backward_variance_through_huge_variances():
    """relu^2 at sigma_b2 > 0 diverges (log q doubles per layer) past 1e300, where the direct moment
    overflows and the backward variance raised: each layer's log factor is
    log(sigma_w2 n^2 m_(2n-2) q^(n-1)) with m_k = E relu(z)^k = 2^(k/2-1) Gamma((k+1)/2) / sqrt(pi)."""
    from scipy.special import gamma

    n, sw, depth = 2, 2.0, 12
    log_ratio = dense.backward_variance(1.0, "relu_power", sw, 1.0, depth, log=True)
    log_q = np.asarray(dense.propagate_log(np.eye(1), "relu_power", sw, 1.0, depth).log_q).ravel()
    m = 2 ** ((2 * n - 2) / 2 - 1) * gamma((2 * n - 1) / 2) / math.sqrt(math.pi)
    want = -(math.log(sw * n * n * m) + (n - 1) * log_q[: depth - 1])
    assert log_q[depth - 1] > math.log(1e300)  # the last factors come from beyond the direct range
    np.testing.assert_allclose(np.diff(log_ratio), want, rtol=HOMOGENEOUS_RTOL)
