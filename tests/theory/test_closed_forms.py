"""meanfield.closed_forms: the extended closed-form Gaussian moments against scipy's adaptive
quadrature, Monte-Carlo and their limits; elu / selu closed forms; the new built-ins in the
dense maps."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate
from scipy.special import erf as scipy_erf

from meanfield.activations import get_activation
from meanfield.closed_forms import QUAD_RTOL, erf_pair_expectation
from meanfield.dense import cmap, fixed_point, propagate, qmap
from meanfield.gaussian import expectation, pair_expectation, variance_derivative

_SQ = 1.0 / math.sqrt(2.0 * math.pi)
#: Absolute floor of the quadrature comparison (scipy's epsabs).
QUAD_ATOL = 1e-12


def quad_pair(act, d1, d2, q1, q2, c):
    """scipy.integrate.quad, nested: E phi^(d1)(u1) phi^(d2)(u2) with breakpoints at the kinks."""
    f1, f2 = act.derivative(d1), act.derivative(d2)
    s1, s2 = math.sqrt(q1), math.sqrt(q2)
    sc, ss = s2 * c, s2 * math.sqrt(max(0.0, 1.0 - c * c))

    def inner(z1):
        if ss == 0.0:
            return float(f2(sc * z1))

        def g(z2):
            return float(f2(sc * z1 + ss * z2)) * _SQ * math.exp(-0.5 * z2 * z2)

        return integrate.quad(g, -10, 10, points=[-sc * z1 / ss], epsabs=1e-14, epsrel=1e-12, limit=200)[0]

    def h(z1):
        return float(f1(s1 * z1)) * inner(z1) * _SQ * math.exp(-0.5 * z1 * z1)

    return integrate.quad(h, -10, 10, points=[0.0], epsabs=1e-14, epsrel=1e-12, limit=200)[0]


CASES = [
    ("sin", {}, [(0, 0), (1, 1), (0, 2)]),
    ("cos", {}, [(0, 0), (1, 1), (2, 2)]),
    ("abs", {}, [(0, 0), (1, 1)]),
    ("sign", {}, [(0, 0)]),
    ("exp", {}, [(0, 0)]),
    ("rbf", {"gamma": 0.7}, [(0, 0), (1, 1), (0, 2), (2, 2)]),
    ("relu_power", {"n": 2}, [(0, 0), (1, 1), (0, 1), (0, 2)]),
    ("relu_power", {"n": 3}, [(0, 0), (1, 2)]),
    ("relu_power", {"n": 4}, [(0, 0)]),
    ("gelu", {}, [(0, 0), (1, 1)]),
]


@pytest.mark.parametrize("name,params,orders", CASES, ids=[f"{c[0]}{c[1]}" for c in CASES])
def test_closed_forms_match_adaptive_quadrature(name, params, orders):
    act = get_activation(name, **params)
    for d in orders:
        for q1, q2, c in [(0.4, 1.3, -0.55)]:
            ref = quad_pair(act, *d, q1, q2, c)
            assert pair_expectation(act, q1, q2, c, d) == pytest.approx(ref, rel=QUAD_RTOL, abs=QUAD_ATOL), d
    ref = quad_pair(act, 0, 0, 0.8, 0.8, 1.0)
    assert expectation(act, 0.8) == pytest.approx(ref, rel=QUAD_RTOL, abs=QUAD_ATOL)


def test_sign_derivative_moment_is_the_dirac_density():
    # sign' = 2 delta: E sign'(u1) sign'(u2) = 4 p(0, 0), the bivariate normal density at the origin
    q1, q2, c = 0.5, 2.0, 0.3
    p00 = 1.0 / (2 * math.pi * math.sqrt(q1 * q2 * (1 - c * c)))
    assert pair_expectation("sign", q1, q2, c, (1, 1)) == pytest.approx(4 * p00, rel=1e-14)
    # and equals d/dk of E sign sign = (2/pi) asin(k / sqrt(q1 q2)) (Price's theorem), by differences
    h = 1e-6
    dk = (pair_expectation("sign", q1, q2, c + h) - pair_expectation("sign", q1, q2, c - h)) / (
        2 * h * math.sqrt(q1 * q2)
    )
    assert dk == pytest.approx(4 * p00, rel=1e-8)
    with pytest.raises(ValueError):
        expectation("sign", 1.0, (1, 1))  # chi_1 of sign is infinite


@pytest.mark.parametrize(
    "name,params",
    [
        ("sin", {}),
        ("cos", {}),
        ("abs", {}),
        ("sign", {}),
        ("exp", {}),
        ("rbf", {"gamma": 0.3}),
        ("relu_power", {"n": 3}),
        ("gelu", {}),
    ],
)
def test_variance_derivative_is_the_slope_of_the_closed_second_moment(name, params):
    act = get_activation(name, **params)
    for q in (0.3, 2.5):
        h = 1e-5 * q
        fd = (expectation(act, q + h) - expectation(act, q - h)) / (2 * h)
        # central difference of a smooth closed form: truncation ~ h^2 |f'''| ~ 1e-10, rounding ~ 1e-11 / h
        assert variance_derivative(act, q) == pytest.approx(fd, rel=1e-6, abs=1e-8)


def test_gelu_matches_the_library_quadrature_at_large_variances():
    # the closed form is evaluated in scaled variables; the graded Gauss-Legendre rules of the
    # library (the quadrature path, kept for the excess integrals) are an independent reference
    from meanfield.activations import Activation

    g = get_activation("gelu")
    user = Activation.from_functions("gelu_user", g.phi, g.dphi, g.d2phi)
    for q in (30.0, 1e4, 1e8):
        for c in (-0.7, 0.5, 0.999):
            for d in ((0, 0), (1, 1)):
                ref = pair_expectation(user, q, 0.5 * q, c, d)
                assert pair_expectation(g, q, 0.5 * q, c, d) == pytest.approx(ref, rel=1e-9, abs=1e-12)
    # q ~ 1e300: finite, and the asymptotes (relu: q/2; relu' moments: (pi - theta) / 2 pi)
    assert expectation(g, 1e300) == pytest.approx(0.5e300, rel=1e-12)
    assert pair_expectation(g, 1e300, 1e300, 0.0, (1, 1)) == pytest.approx(0.25, rel=1e-12)


def test_monte_carlo_agrees_with_the_closed_forms():
    rng = np.random.default_rng(1717)
    n = 400_000
    q1, q2, c = 0.9, 1.6, 0.45
    z1, z2 = rng.standard_normal((2, n))
    u1 = math.sqrt(q1) * z1
    u2 = math.sqrt(q2) * (c * z1 + math.sqrt(1 - c * c) * z2)
    for name, params in [
        ("sin", {}),
        ("abs", {}),
        ("sign", {}),
        ("rbf", {}),
        ("relu_power", {"n": 3}),
        ("gelu", {}),
        ("exp", {}),
    ]:
        act = get_activation(name, **params)
        for d in ((0, 0), (1, 1)) if name != "sign" else ((0, 0),):
            x = act.derivative(d[0])(u1) * act.derivative(d[1])(u2)
            se = x.std() / math.sqrt(n)
            # 5 standard errors: a false failure has probability 6e-7 per comparison
            assert abs(pair_expectation(act, q1, q2, c, d) - x.mean()) < 5 * se, (name, d)


@pytest.mark.parametrize("scale,shift", [(1.0, 0.0), (0.7, 0.4), (2.0, -1.3), (-1.5, 0.8)])
def test_erf_with_scale_and_shift(scale, shift):
    act = __import__("meanfield.activations", fromlist=["Activation"]).Activation.from_functions(
        "erf_affine",
        lambda x: scipy_erf(scale * np.asarray(x) + shift),
        lambda x: 2 * scale / math.sqrt(math.pi) * np.exp(-((scale * np.asarray(x) + shift) ** 2)),
    )
    for d in ((0, 0), (1, 1), (0, 1), (1, 0)):
        q1, q2, c = 0.6, 1.4, -0.35
        ref = quad_pair(act, *d, q1, q2, c)
        assert erf_pair_expectation(q1, q2, c, scale, shift, d) == pytest.approx(ref, rel=QUAD_RTOL, abs=QUAD_ATOL), d
    # c = +-1 edges and q = 0 against the single-variable quadrature / the point value
    ref = quad_pair(act, 0, 0, 0.9, 0.9, 1.0)
    assert erf_pair_expectation(0.9, 0.9, 1.0, scale, shift) == pytest.approx(ref, rel=QUAD_RTOL, abs=QUAD_ATOL)
    assert erf_pair_expectation(0.0, 0.0, 0.0, scale, shift) == pytest.approx(math.erf(shift) ** 2, abs=1e-15)
    # b = 0 reduces to the built-in erf's arcsine kernel with q -> a^2 q
    if shift == 0.0:
        assert erf_pair_expectation(0.6, 1.4, -0.35, scale) == pytest.approx(
            pair_expectation("erf", 0.6 * scale**2, 1.4 * scale**2, -0.35), rel=1e-14
        )


def test_erf_pair_expectation_rejects_bad_arguments():
    with pytest.raises(ValueError, match="q1"):
        erf_pair_expectation(-1.0, 1.0, 0.0)
    with pytest.raises(ValueError, match="c"):
        erf_pair_expectation(1.0, 1.0, 1.5)
    with pytest.raises(ValueError, match="shift"):
        erf_pair_expectation(1.0, 1.0, 0.0, shift=np.nan)
    with pytest.raises(TypeError):
        erf_pair_expectation(1.0, 1.0, 0.0, scale=True)
    with pytest.raises(ValueError, match="orders"):
        erf_pair_expectation(1.0, 1.0, 0.0, derivatives=(0, 2))


@pytest.mark.parametrize("name,params", [("elu", {}), ("elu", {"alpha": 0.5}), ("selu", {})])
def test_elu_selu_closed_forms_match_adaptive_quadrature(name, params):
    # closed forms (meanfield.activations._closed_elu); the quadrature they replace reached only
    # 1e-5 .. 6e-2 relative (the kink at u = 0), now every order agrees to QUAD_RTOL
    act = get_activation(name, **params)
    for q1, q2, c in [(0.05, 0.3, 0.9), (16.0, 4.0, -0.6)]:
        for d in ((0, 0), (1, 1)):
            ref = quad_pair(act, *d, q1, q2, c)
            assert pair_expectation(act, q1, q2, c, d) == pytest.approx(ref, rel=QUAD_RTOL, abs=QUAD_ATOL), (q1, d)


def test_parameters_and_their_checks():
    assert get_activation("rbf").param == 0.5 and get_activation("relu_power").name == "relu_power(n=2)"
    assert get_activation("elu").smooth and not get_activation("elu", alpha=0.5).smooth
    for bad, err in [
        ({"n": 1}, ValueError),
        ({"n": 2.5}, ValueError),
        ({"n": True}, TypeError),
        ({"n": 9}, ValueError),
    ]:
        with pytest.raises(err, match="n"):
            get_activation("relu_power", **bad)
    with pytest.raises(ValueError, match="gamma"):
        get_activation("rbf", gamma=0.0)
    with pytest.raises(ValueError, match="alpha"):
        get_activation("elu", alpha=-1.0)
    with pytest.raises(ValueError):
        get_activation("sin", slope=0.1)


def test_overflowing_moments_raise():
    with pytest.raises(ValueError, match="float64"):
        expectation("exp", 400.0)
    with pytest.raises(ValueError, match="float64"):
        pair_expectation(get_activation("relu_power", n=4), 1e160, 1e160, 0.5)
    assert expectation("sin", 1e300) == pytest.approx(0.5, rel=1e-15)
    assert pair_expectation("rbf", 1e300, 1e300, 0.3) >= 0.0


@pytest.mark.parametrize(
    "name,params",
    [
        ("sin", {}),
        ("cos", {}),
        ("abs", {}),
        ("exp", {}),
        ("rbf", {}),
        ("relu_power", {"n": 2}),
        ("gelu", {}),
        ("elu", {}),
        ("selu", {}),
    ],
)
def test_fixed_point_of_new_builtins_is_a_fixed_point_of_the_qmap(name, params):
    act = get_activation(name, **params)
    for sw, sb in [(0.5, 0.1), (1.5, 0.05)]:
        fp = fixed_point(act, sw, sb)
        assert not any(math.isnan(v) for v in (fp.q_star, fp.c_star, fp.chi_1, fp.chi_c, fp.chi_q))
        if math.isfinite(fp.q_star):
            assert qmap(fp.q_star, act, sw, sb) == pytest.approx(fp.q_star, rel=1e-9, abs=1e-12)
            if fp.q_star > 0 and fp.c_star < 1:
                assert cmap(fp.c_star, act, sw, sb, q=fp.q_star) == pytest.approx(fp.c_star, abs=1e-9)


def test_edges_of_the_new_builtins_in_the_dense_maps():
    # abs is positively homogeneous: q-map sw q + sb exactly, chi_1 = sw E sign^2 = sw at any q
    fp = fixed_point("abs", 2.0, 0.1)
    assert math.isinf(fp.q_star) and fp.chi_1 == 2.0 and fp.phase == "chaotic"
    fp = fixed_point("abs", 0.5, 0.0)
    assert fp.q_star == 0.0 and not fp.c_frozen  # abs's limiting c-map is the (non-identity) kernel map
    # superlinear activations whose variance diverges: chi's are infinite (not relu's sigma_w2 / 2)
    fp = fixed_point("exp", 1.0, 0.1)
    assert math.isinf(fp.q_star) and math.isinf(fp.chi_1) and fp.phase == "chaotic"
    with pytest.raises(ValueError, match="exp"):
        propagate(np.array([[1.0, 0.5], [0.5, 1.0]]), "exp", 1.0, 0.1, 5)
    # non-monotone q-map (cos): chi_q < 0, the depth scale is -1 / log|chi_q|
    fp = fixed_point("cos", 1.0, 0.0)
    assert fp.chi_q < 0 and fp.xi_q == pytest.approx(-1 / math.log(abs(fp.chi_q)))
    # sign: chi_1 = inf (the c-map has infinite slope at c = 1), chi_c finite at c* < 1
    fp = fixed_point("sign", 1.0, 0.1)
    assert math.isinf(fp.chi_1) and 0 < fp.c_star < 1 and math.isfinite(fp.chi_c)
