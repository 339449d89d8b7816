"""Regression tests for wrong answers about activations found by cross-checking functions.

Expected values come from the activations' definitions (slopes of their asymptotes, exact
Gaussian moments of steps), not from the code under test.
"""

import math

import numpy as np
import pytest

from meanfield import conv, dense, ntk, spectra
from meanfield.activations import Activation, get_activation
from meanfield.gaussian import expectation, pair_expectation

#: SELU's constants (Klambauer et al. 2017).
SELU_LAMBDA = 1.0507009873554805
SELU_ALPHA = 1.6732632423543772
#: Exact arithmetic on the asymptote slopes: a few ulps.
EXACT_RTOL = 1e-14
#: Moments of user activations with jumps against their exact values (the piecewise rules
#: converge to ~1e-15; the broken rule was 10 % off).
STEP_ATOL = 1e-12


# --- 1. q* = inf: the chi's of each activation's own asymptote -----------------------------------


def test_selu_chaotic_at_infinite_q_uses_its_own_asymptote():
    fp = dense.fixed_point("selu", 1.9, 0.0)
    assert math.isinf(fp.q_star)
    # selu(x) ~ lambda x (x > 0), ~ 0 (x < 0): E phi'^2 -> lambda^2 / 2
    assert fp.chi_1 == pytest.approx(1.9 * SELU_LAMBDA**2 / 2, rel=EXACT_RTOL)
    assert fp.phase == "chaotic"


def test_selu_edge_of_chaos_is_not_the_relu_root():
    for sb in (0.05, 0.5):
        sw = dense.critical_sigma_w2("selu", sb)
        assert abs(sw - 2.0) > 0.1
        assert dense.fixed_point("selu", sw, sb).chi_1 == pytest.approx(1.0, abs=1e-9)


def test_ntk_growth_of_selu_at_infinite_q():
    assert ntk.ntk_fixed_point("selu", 2.0, 0.0).growth == pytest.approx(SELU_LAMBDA**2, rel=EXACT_RTOL)


def test_abs_at_infinite_q_has_chi1_sigma_w2():
    fp = dense.fixed_point("abs", 1.5, 0.0)  # abs' = +-1: E phi'^2 = 1 at every q
    assert math.isinf(fp.q_star)
    assert fp.chi_1 == pytest.approx(1.5, rel=EXACT_RTOL)


def test_leaky_relu_spectrum_at_infinite_q_keeps_its_slope():
    # q* = inf (sw (1 + a^2) / 2 > 1): the mean squared singular value per layer is chi_1 = sw (1 + a^2) / 2
    m = spectra.spectrum_moments(get_activation("leaky_relu", slope=0.5), 2.0, 0.1, depth=3)
    assert m.mean == pytest.approx((2.0 * (1 + 0.25) / 2) ** 3, rel=1e-12)


# --- q* = 0: activations with a kink at 0 (elu with alpha != 1, selu) -----------------------------


def test_kinked_activation_at_zero_q_uses_both_slopes():
    # elu(alpha=2) near 0: slope 1 (x > 0), 2 (x < 0): E phi'(u)^2 -> (1 + 4) / 2 as q -> 0
    fp = dense.fixed_point(get_activation("elu", alpha=2.0), 0.1, 0.0)
    assert fp.q_star == 0.0
    assert fp.chi_1 == pytest.approx(0.1 * 2.5, rel=EXACT_RTOL)
    assert not fp.c_frozen  # the limiting c-map is that of leaky_relu(2), not the identity
    leaky = get_activation("leaky_relu", slope=2.0)
    ref = pair_expectation(leaky, 1.0, 1.0, 0.3) / expectation(leaky, 1.0)
    assert dense.cmap(0.3, get_activation("elu", alpha=2.0), 0.1, 0.0) == pytest.approx(ref, rel=EXACT_RTOL)


def test_selu_edge_of_chaos_without_bias():
    # q* = 0 is stable while sw (lambda^2 + lambda^2 alpha^2) / 2 < 1
    edge = 2.0 / (SELU_LAMBDA**2 * (1.0 + SELU_ALPHA**2))
    assert dense.critical_sigma_w2("selu", 0.0) == pytest.approx(edge, rel=1e-7)


# --- 2. sign with sigma_w2 = 0: a zero Jacobian, never NaN --------------------------------------


def test_sign_without_weights_is_ordered_not_nan():
    fp = dense.fixed_point("sign", 0.0, 0.1)
    assert (fp.chi_1, fp.chi_c, fp.chi_q, fp.phase) == (0.0, 0.0, 0.0, "ordered")
    pd = dense.phase_diagram("sign", [0.0, 1.0], [0.1])
    assert pd.chi_1[0, 0] == 0.0 and math.isinf(pd.chi_1[1, 0])
    assert ntk.ntk_fixed_point("sign", 0.0, 0.1).growth == 0.0
    ds = conv.depth_scales("sign", 0.0, 0.1, np.full(3, 1 / 3), 8)
    assert np.all(np.isfinite(ds.xi_c)) and ds.fixed_point.chi_1 == 0.0


# --- 3. user activations with kinks and jumps ----------------------------------------------------


@pytest.mark.parametrize("q", [0.3, 0.5, 1.0])
def test_user_sign_and_step_moments(q):
    sign = Activation.from_functions("sign", np.sign, lambda x: 0.0 * x)
    step = Activation.from_functions("step", lambda x: (x > 0) * 1.0, lambda x: 0.0 * x)
    assert sign.breakpoints == step.breakpoints == (0.0,)
    assert not sign.smooth
    assert expectation(sign, q) == pytest.approx(1.0, abs=STEP_ATOL)
    assert expectation(step, q) == pytest.approx(0.5, abs=STEP_ATOL)
    assert pair_expectation(step, q, q, 0.0) == pytest.approx(0.25, abs=STEP_ATOL)
    # P(u1 > 0, u2 > 0) = 1/4 + asin(c) / (2 pi)
    assert pair_expectation(step, q, 2 * q, 0.6) == pytest.approx(0.25 + math.asin(0.6) / (2 * math.pi), abs=STEP_ATOL)


def test_user_breakpoints_argument_and_degree():
    step = Activation.from_functions("step", lambda x: (x > 0.3) * 1.0, lambda x: 0.0 * x, breakpoints=[0.3])
    assert step.breakpoints == (0.3,)
    exact = 0.5 * math.erfc(0.3 / math.sqrt(2))
    assert expectation(step, 1.0) == pytest.approx(exact, abs=STEP_ATOL)
    # elu written by hand (phi'' jumps at 0): the result converges as the degree grows
    elu = Activation.from_functions(
        "my elu", lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0))), lambda x: np.where(x > 0, 1.0, np.exp(x))
    )
    assert elu.breakpoints == (0.0,) and elu.smooth
    ref = expectation("elu", 30.0)
    errors = [abs(expectation(elu, 30.0, degree=d) - ref) for d in (5, 100)]
    assert errors[1] < 1e-12 * ref < errors[0]


def test_from_functions_validation():
    with pytest.raises(ValueError, match="smooth=True"):
        Activation.from_functions("sign", np.sign, lambda x: 0.0 * x, smooth=True)
    for bad in ("yes", np.nan, [True]):
        with pytest.raises(TypeError, match="smooth"):
            Activation.from_functions("t", np.tanh, np.tanh, smooth=bad)
    for bad in ("", " "):
        with pytest.raises(ValueError, match="name"):
            Activation.from_functions(bad, np.tanh, np.tanh)
    for bad in (None, 3, ["x"], np.nan):
        with pytest.raises(TypeError, match="name"):
            Activation.from_functions(bad, np.tanh, np.tanh)
    with pytest.raises(TypeError, match="breakpoints"):
        Activation.from_functions("t", np.tanh, np.tanh, breakpoints="0")
    with pytest.raises(ValueError, match="breakpoints"):
        Activation.from_functions("t", np.tanh, np.tanh, breakpoints=[np.inf])
    with pytest.raises(ValueError, match="NaN"):
        Activation.from_functions("t", np.tanh, lambda x: np.where(x > 3, np.nan, x))
