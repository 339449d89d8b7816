"""meanfield.dense: maps, fixed points, chi's, depth scales, propagation, phase diagram."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from meanfield import dense
from meanfield.data import gaussian_inputs

#: The solvers stop at relative change 4e-16; the map is satisfied to a few ulps.
FIXED_POINT_TOL = 1e-10
#: Central finite differences with step 1e-5 have truncation + rounding error below 1e-8 here.
FD_TOL = 1e-7
#: One-sided difference at c* = 1. For ReLU the slope of the c-map is sigma_w2 (pi - arccos c) / (2 pi),
#: so the secant over [1 - h, 1] misses chi_c by sigma_w2 (2 sqrt(2) / 3) sqrt(h) / (2 pi) (1.5e-6 for
#: sigma_w2 = 1.5, h = 1e-10); rounding adds ~1e-16 / h = 1e-6.
ONE_SIDED_STEP = 1e-10
ONE_SIDED_TOL = 1e-5

ACTS = ["tanh", "erf", "relu", "sigmoid", "gelu", "linear"]
variances = hs.floats(0.05, 5.0)
bias_variances = hs.floats(0.0, 1.0)


@settings(max_examples=25)
@given(act=hs.sampled_from(ACTS), sw=variances, sb=bias_variances, c=hs.floats(-1.0, 1.0), q=hs.floats(0.01, 10.0))
def test_cmap_maps_interval_into_itself_and_fixes_one(act, sw, sb, c, q):
    out = dense.cmap(c, act, sw, sb, q=q)
    assert -1.0 - 1e-12 <= out <= 1.0 + 1e-12
    assert dense.cmap(1.0, act, sw, sb, q=q) == pytest.approx(1.0, abs=1e-12)


@settings(max_examples=20)
@given(act=hs.sampled_from(ACTS), sw=variances, sb=bias_variances, d=hs.integers(2, 5), seed=hs.integers(0, 10**6))
def test_covariance_map_keeps_psd(act, sw, sb, d, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((d, d - 1))  # rank-deficient on purpose: the boundary of the PSD cone
    cov = a @ a.T
    out = dense.covariance_map(cov, act, sw, sb)
    assert np.allclose(out, out.T)
    assert np.linalg.eigvalsh(out).min() >= -1e-10 * max(1.0, np.abs(out).max())


@pytest.mark.parametrize(
    "act,sw,sb",
    [
        ("tanh", 1.5, 0.05),
        ("tanh", 3.0, 0.3),
        ("erf", 2.5, 0.1),
        ("relu", 1.5, 0.2),
        ("gelu", 1.2, 0.1),
        ("sigmoid", 8.0, 0.1),
        ("tanh", 100.0, 0.0),
    ],
)
def test_fixed_point_satisfies_its_maps_and_chis_are_slopes(act, sw, sb):
    fp = dense.fixed_point(act, sw, sb)
    q, c = fp.q_star, fp.c_star
    assert abs(dense.qmap(q, act, sw, sb) - q) <= FIXED_POINT_TOL * max(1.0, q)
    assert abs(dense.cmap(c, act, sw, sb, q=q) - c) <= FIXED_POINT_TOL
    h = 1e-5
    assert fp.chi_q == pytest.approx(
        (dense.qmap(q + h, act, sw, sb) - dense.qmap(q - h, act, sw, sb)) / (2 * h), abs=FD_TOL
    )
    if c < 1:
        lo, hi = c - h, c + h
    else:  # one-sided; kinked activations have c-map'' ~ (1 - c)^(-1/2) at c = 1, so a tiny step
        lo, hi = c - ONE_SIDED_STEP, c
    slope = (dense.cmap(hi, act, sw, sb, q=q) - dense.cmap(lo, act, sw, sb, q=q)) / (hi - lo)
    assert fp.chi_c == pytest.approx(slope, abs=FD_TOL if c < 1 else ONE_SIDED_TOL)
    assert fp.phase == ("chaotic" if fp.chi_1 > 1 else "ordered")
    assert fp.xi_c == pytest.approx(-1 / math.log(fp.chi_c))


def test_relu_edge_of_chaos_is_sigma_w2_two():
    fp = dense.fixed_point("relu", 2.0, 0.0)
    assert fp.phase == "critical" and fp.chi_1 == 1.0 and math.isinf(fp.xi_c)
    assert dense.critical_sigma_w2("relu", 0.0) == pytest.approx(2.0, abs=1e-12)
    assert dense.fixed_point("relu", 3.0, 0.1).q_star == math.inf


def test_critical_line_of_tanh():
    sb = np.array([0.01, 0.05, 0.2])
    sw = dense.critical_sigma_w2("tanh", sb)
    for w, b in zip(sw, sb):
        assert dense.fixed_point("tanh", w, b).chi_1 == pytest.approx(1.0, abs=1e-9)
    assert np.all(np.diff(sw) > 0)  # the edge of chaos moves to larger sigma_w2 with bias
    # Poole et al. (2016): at sigma_b2 = 0 the transition is at sigma_w2 = 1 / phi'(0)^2 = 1
    assert dense.critical_sigma_w2("tanh", 0.0) == pytest.approx(1.0, abs=1e-6)


@pytest.mark.parametrize("act", ["tanh", "erf"])
@pytest.mark.parametrize("excess", [1e-2, 1e-4, 1e-6])
def test_c_star_just_inside_the_chaotic_phase(act, excess):
    """Near the edge of chaos c* merges with the fixed point c = 1; it must still be solved exactly.

    Linearising the c-map at c = 1 (slope chi_1 > 1, curvature k > 0) gives 1 - c* ~ 2 (chi_1 - 1) / k:
    c* < 1, moving to 1 as chi_1 -> 1, while the map's residual stays at rounding level.
    """
    sb = 0.05
    sw = dense.critical_sigma_w2(act, sb) * (1 + excess)
    fp = dense.fixed_point(act, sw, sb)
    assert fp.phase == "chaotic" and fp.c_star < 1.0
    assert abs(dense.cmap(fp.c_star, act, sw, sb, q=fp.q_star) - fp.c_star) <= FIXED_POINT_TOL
    wider = dense.fixed_point(act, dense.critical_sigma_w2(act, sb) * (1 + 10 * excess), sb)
    assert wider.c_star < fp.c_star  # 1 - c* grows with the distance to the edge


def test_phase_diagram_agrees_with_pointwise_fixed_points():
    sw = np.array([0.5, 1.5, 2.5, 4.0])
    sb = np.array([0.0, 0.05, 0.3])
    pd = dense.phase_diagram("tanh", sw, sb)
    assert pd.q_star.shape == (4, 3)
    for i, w in enumerate(sw):
        for j, b in enumerate(sb):
            fp = dense.fixed_point("tanh", w, b)
            assert pd.q_star[i, j] == pytest.approx(fp.q_star, rel=1e-12, abs=1e-300)
            assert pd.chi_1[i, j] == pytest.approx(fp.chi_1, rel=1e-12)
            assert pd.c_star[i, j] == pytest.approx(fp.c_star, abs=1e-12)


def test_propagate_iterates_the_covariance_map():
    x = gaussian_inputs(3, 50, q=1.0, c=0.3, rng=1)
    cov0 = dense.input_covariance(x, 1.7, 0.1)
    traj = dense.propagate(cov0, "tanh", 1.7, 0.1, 6)
    assert traj.shape == (7, 3, 3) and np.array_equal(traj[0], cov0)
    step = cov0
    for layer in range(1, 7):
        step = dense.covariance_map(step, "tanh", 1.7, 0.1)
        assert np.allclose(traj[layer], step, rtol=1e-13, atol=1e-15)
    fp = dense.fixed_point("tanh", 1.7, 0.1)
    far = dense.propagate(cov0, "tanh", 1.7, 0.1, 300)[-1]
    assert np.allclose(np.diag(far), fp.q_star, rtol=1e-9)
    assert far[0, 1] / far[0, 0] == pytest.approx(fp.c_star, abs=1e-8)


@pytest.mark.slow
def test_deep_networks_do_not_overflow_or_return_nan():
    cov0 = np.array([[1.0, 0.4], [0.4, 1.3]])
    deep = 10_000  # the depth the library promises (10^4): past the float64 range of 0.5^l and 50^l many times
    t = dense.propagate(cov0, "tanh", 100.0, 0.1, deep)
    assert np.all(np.isfinite(t))
    # ordered, no bias: q decays like 0.5^l, below the float64 range after ~1,000 layers; the log
    # scale carries it (q^l = q^0 0.5^l once linear) and propagate refuses to return underflowed zeros
    small = dense.propagate_log(cov0, "tanh", 0.5, 0.0, deep)
    assert (small.log_scale[-1] - small.log_scale[-101]) / 100 == pytest.approx(math.log(0.5), rel=1e-12)
    with pytest.raises(ValueError, match="propagate_log"):
        dense.propagate(cov0, "tanh", 0.5, 0.0, deep)
    lp = dense.propagate_log(cov0, "relu", 100.0, 0.1, deep)
    assert np.all(np.isfinite(lp.log_scale)) and np.all(np.isfinite(lp.normalized))
    # q^l ~ (sigma_w2 / 2)^l: log-scale grows by log 50 per layer
    assert (lp.log_scale[-1] - lp.log_scale[-101]) / 100 == pytest.approx(math.log(50.0), rel=1e-12)
    assert lp.correlation[-1, 0, 1] == pytest.approx(1.0, abs=1e-3)
    with pytest.raises(ValueError, match="propagate_log"):
        dense.propagate(cov0, "relu", 100.0, 0.1, deep)
    lv = dense.backward_variance(1.0, "relu", 100.0, 0.1, deep, log=True)
    assert np.all(np.isfinite(lv)) and lv[0] == pytest.approx((deep - 1) * math.log(50.0))


@pytest.mark.parametrize("act,sw,sb", [("tanh", 1.5, 0.05), ("erf", 2.0, 0.1), ("relu", 1.8, 0.1)])
def test_backward_variance_at_fixed_point_is_chi1_power(act, sw, sb):
    fp = dense.fixed_point(act, sw, sb)
    r = dense.backward_variance(fp.q_star, act, sw, sb, 8)
    assert np.allclose(r, fp.chi_1 ** np.arange(7, -1, -1), rtol=1e-10)


def test_backward_variance_takes_the_state_first_like_the_maps():
    """The state (q0) is the first parameter, then the map's parameters, as in qmap / propagate."""
    import inspect

    params = list(inspect.signature(dense.backward_variance).parameters)
    map_params = list(inspect.signature(dense.propagate).parameters)
    assert params[0] == "q0"
    assert params[1:5] == map_params[1:5] == ["activation", "sigma_w2", "sigma_b2", "depth"]
    assert list(inspect.signature(dense.qmap).parameters)[1:4] == params[1:4]
    # the old order (activation first) is refused, not silently reinterpreted
    with pytest.raises((TypeError, ValueError)):
        dense.backward_variance("tanh", 1.5, 0.05, 5, 1.0)


@pytest.mark.parametrize(
    "call",
    [
        lambda: dense.qmap(1.0, "tanh", -1.0, 0.0),
        lambda: dense.qmap(1.0, "tanh", 1.0, float("nan")),
        lambda: dense.cmap(1.2, "tanh", 1.0, 0.0, q=1.0),
        lambda: dense.covariance_map(np.array([[1.0, 2.0], [2.0, 1.0]]), "tanh", 1.0, 0.0),
        lambda: dense.covariance_map(np.array([[1.0, 0.2], [0.1, 1.0]]), "tanh", 1.0, 0.0),
        lambda: dense.propagate(np.eye(2), "tanh", 1.0, 0.0, -1),
        lambda: dense.fixed_point("tanh", -0.1, 0.0),
        lambda: dense.backward_variance(1.0, "tanh", 1.0, 0.0, 0),
        lambda: dense.phase_diagram("tanh", [1.0, -2.0], [0.0]),
        lambda: dense.input_covariance(np.ones(3), 1.0, 0.0),
        lambda: dense.fixed_point("nope", 1.0, 0.0),
    ],
)
def test_bad_input_raises_value_error(call):
    with pytest.raises(ValueError):
        call()


def test_error_message_names_the_argument():
    with pytest.raises(ValueError, match="sigma_w2"):
        dense.qmap(1.0, "tanh", -1.0, 0.0)
    with pytest.raises(ValueError, match="cov"):
        dense.covariance_map(np.array([[1.0, 2.0], [2.0, 1.0]]), "tanh", 1.0, 0.0)


# --- regressions found by the public-API fuzzer (tests/fuzz/, full catalogue) -------------------


def test_exp_overflow_names_the_activation():
    with pytest.raises(ValueError, match="activation"):
        dense.propagate(np.array([[1.0, 0.3], [0.3, 1.0]]), "exp", 3.0, 0.05, 50)
