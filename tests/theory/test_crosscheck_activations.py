"""Cross-checks between functions for activations: built-ins against the same functions wrapped as
user activations, and the edge of chaos against an independent adaptive quadrature.

The reference for chi_1 is scipy's adaptive ``quad`` on the Gaussian integral, split at the
activation's kinks, with its own error estimate; q* is re-solved from those integrals.
"""

import copy
import math

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.optimize import brentq

from meanfield import dense
from meanfield.activations import ACTIVATIONS, Activation, get_activation
from meanfield.gaussian import expectation, pair_expectation

#: Built-ins and parametrised variants: (name, params).
VARIANTS = [(n, {}) for n in ACTIVATIONS] + [
    ("leaky_relu", {"slope": -0.7}),
    ("leaky_relu", {"slope": 3.0}),
    ("elu", {"alpha": 2.5}),
    ("hard_tanh", {"bound": 2.0}),
    ("relu_power", {"n": 3}),
    ("rbf", {"gamma": 2.0}),
]
#: Variances of the single-variable comparison (1e-6 to 1e6).
Q_GRID = (1e-6, 1e-2, 1.0, 1e2, 1e6)
#: (q, c) of the pair-map comparison.
PAIR_GRID = ((0.5, 0.3), (1e3, -0.6), (1e6, 0.9))
#: Activations a user rule cannot integrate at large q (documented: the rules for user activations
#: assume asymptotically polynomial tails; sin and cos oscillate, exp grows exponentially): q <= 1.
NON_POLYNOMIAL_TAILS = ("sin", "cos", "exp")
#: Relative agreement of a built-in's closed form or compiled quadrature with the user rule
#: (the user rules converge to ~1e-14; the compiled rules are documented to ~1e-12 relative at
#: the moments' scale, see meanfield.gaussian): two orders of magnitude of margin.
WRAP_RTOL = 1e-10
#: Relative tolerance requested from scipy's quad (no absolute one: q* can be ~1e-16), and the largest error estimate
#: accepted from it (a reference whose estimate is larger fails the test instead of passing it).
QUAD_EPS = 1e-13
QUAD_ERR_MAX = 1e-10
#: chi_1 at the returned sigma_w2 is 1 up to the library's root-finding tolerance (brentq xtol
#: 1e-14 on chi_1 - 1) and its integrals (~1e-12), plus the reference's propagated error estimate
#: times this safety factor.
LIBRARY_CHI_ATOL = 1e-9
QUAD_SAFETY = 10.0


def _variant_id(v):
    return v[0] + "".join(f"-{k}={x}" for k, x in v[1].items())


def _wrapped(act):
    return Activation.from_functions("user " + act.name, act.phi, act.dphi, act.d2phi)


@pytest.mark.parametrize("variant", VARIANTS, ids=_variant_id)
def test_builtin_matches_itself_as_user_activation(variant):
    name, params = variant
    builtin = get_activation(name, **params)
    user = _wrapped(builtin)
    qs = Q_GRID if name not in NON_POLYNOMIAL_TAILS else tuple(q for q in Q_GRID if q <= 1.0)
    orders = [(0, 0)] if name == "sign" else [(0, 0), (1, 1)]  # sign' is a Dirac delta
    for q in qs:
        for d in orders:
            ref = expectation(builtin, q, d)
            assert expectation(user, q, d) == pytest.approx(ref, rel=WRAP_RTOL, abs=1e-300), (q, d)
    pairs = PAIR_GRID if name not in NON_POLYNOMIAL_TAILS else ((0.5, 0.3), (1.0, -0.6))
    for q, c in pairs:
        ref = pair_expectation(builtin, q, q, c)
        scale = expectation(builtin, q)  # |E phi(u1) phi(u2)| <= E phi^2
        assert abs(pair_expectation(user, q, q, c) - ref) <= WRAP_RTOL * scale, (q, c)


# --- the independent reference: scipy quad on the Gaussian integral, split at kinks ------------


def gauss_quad(f, q, kinks=()):
    """(E f(u), error estimate) for u ~ N(0, q) by adaptive quadrature, split at 0, the kinks and
    +-sd multiples; ``f`` maps a float to a float."""
    sd = math.sqrt(q)
    cuts = sorted({0.0, *kinks, *(k * sd for k in (-8, -3, -1, 1, 3, 8))})
    edges = [-math.inf, *cuts, math.inf]

    def integrand(u):
        return f(u) * math.exp(-0.5 * u * u / q) / math.sqrt(2 * math.pi * q)

    val = err = 0.0
    for lo, hi in zip(edges[:-1], edges[1:]):
        if hi <= lo:
            continue
        v, e = quad(integrand, lo, hi, epsabs=0.0, epsrel=QUAD_EPS, limit=400)
        val += v
        err += e
    return val, err


#: q standing for q* = 0 (sb = 0) and for q* = inf in the reference, and the end of its scan.
Q_TINY = 1e-24
Q_HUGE = 1e24
Q_SCAN_MAX = 1e12
SCAN_FACTOR = 4.0


def scalar(f):
    """A float -> float version of a NumPy-vectorised function."""
    return lambda u: float(f(np.array([u]))[0])


_SELU_A, _SELU_L = 1.6732632423543772, 1.0507009873554805


def _sigmoid(u):
    return 1.0 / (1.0 + math.exp(-u)) if u >= 0 else math.exp(u) / (1.0 + math.exp(u))


#: The built-ins written out independently (float -> float; phi, phi') from their definitions.
REFERENCE = {
    "tanh": (math.tanh, lambda u: 1.0 - math.tanh(u) ** 2),
    "erf": (math.erf, lambda u: 2.0 / math.sqrt(math.pi) * math.exp(-u * u)),
    "softplus": (lambda u: max(u, 0.0) + math.log1p(math.exp(-abs(u))), _sigmoid),
    "swish": (lambda u: u * _sigmoid(u), lambda u: _sigmoid(u) * (1.0 + u * (1.0 - _sigmoid(u)))),
    "gelu": (
        lambda u: 0.5 * u * math.erfc(-u / math.sqrt(2.0)),
        lambda u: 0.5 * math.erfc(-u / math.sqrt(2.0)) + u * math.exp(-0.5 * u * u) / math.sqrt(2.0 * math.pi),
    ),
    "elu": (lambda u, a=1.0: u if u > 0 else a * math.expm1(u), lambda u, a=1.0: 1.0 if u > 0 else a * math.exp(u)),
    "selu": (
        lambda u: _SELU_L * (u if u > 0 else _SELU_A * math.expm1(u)),
        lambda u: _SELU_L * (1.0 if u > 0 else _SELU_A * math.exp(u)),
    ),
    "relu": (lambda u: max(u, 0.0), lambda u: float(u > 0)),
    "leaky_relu": (lambda u, s=0.01: u if u > 0 else s * u, lambda u, s=0.01: 1.0 if u > 0 else s),
    "abs": (abs, lambda u: math.copysign(1.0, u)),
    "hard_tanh": (lambda u, b=1.0: min(b, max(-b, u)), lambda u, b=1.0: float(-b < u < b)),
    "sin": (math.sin, math.cos),
    "rbf": (lambda u: math.exp(-0.5 * u * u), lambda u: -u * math.exp(-0.5 * u * u)),
}


def reference_functions(name, params):
    phi, dphi = REFERENCE[name]
    if params:
        ((_, value),) = params.items()
        return (lambda u: phi(u, value)), (lambda u: dphi(u, value))
    return phi, dphi


def reference_chi1(phi, dphi, kinks, sw, sb, homogeneous=False):
    """(chi_1, error bound): q* re-solved from the quad integrals as the first downward crossing of
    g(q) = sw E phi^2 + sb - q on a geometric scan (factor SCAN_FACTOR: the built-ins here have one
    crossing), then chi_1 = sw E phi'(sqrt(q*) z)^2."""
    if homogeneous:  # chi_1 does not depend on q
        v, e = gauss_quad(lambda u: dphi(u) ** 2, 1.0, kinks)
        return sw * v, sw * e
    g = lambda q: sw * gauss_quad(lambda u: phi(u) ** 2, q, kinks)[0] + sb - q  # noqa: E731
    q_lo = max(sb, Q_TINY)  # sb = 0 with q* = 0: the limit q -> 0, E phi'^2 differing by O(sqrt(q))
    if g(q_lo) <= 0.0:
        q_star = q_lo
    else:
        q = q_lo
        while g(SCAN_FACTOR * q) > 0.0:
            q *= SCAN_FACTOR
            if q > Q_SCAN_MAX:  # q* = inf: the asymptote's E phi'^2, differing by O(q^-1/2)
                v, e = gauss_quad(lambda u: dphi(u) ** 2, Q_HUGE, kinks)
                return sw * v, sw * e
        q_star = brentq(g, q, SCAN_FACTOR * q, xtol=1e-15 * q, rtol=1e-15)
    v, e = gauss_quad(lambda u: dphi(u) ** 2, q_star, kinks)
    # error of q*: the phi^2 integral's estimate divided by |g'(q*)| (chi_q - 1), by finite differences
    e0 = gauss_quad(lambda u: phi(u) ** 2, q_star, kinks)[1]
    h = 1e-6 * q_star
    dg = (g(q_star + h) - g(q_star - h)) / (2 * h)
    dq = sw * e0 / max(abs(dg), 1e-3)
    dchi = sw * abs(gauss_quad(lambda u: dphi(u) ** 2, q_star + h, kinks)[0] - v) / h
    return sw * v, sw * e + dchi * dq


#: Built-ins whose chi_1 is q-independent (positively homogeneous; abs: E phi'^2 = 1).
HOMOGENEOUS = ("linear", "relu", "leaky_relu", "abs")
#: Kinks of the built-ins (where quad's integrand is split).
KINKS = {"hard_tanh": (-1.0, 1.0)}

CRITICAL_CASES = [
    ("tanh", {}, 0.05),
    ("erf", {}, 0.3),
    ("softplus", {}, 0.05),  # q* = inf at the edge: chi_1 of the asymptote
    ("swish", {}, 2.0),  # q* = inf too (at small sigma_b2 the edge of swish and gelu is a jump of q*)
    ("gelu", {}, 1.0),
    ("elu", {}, 0.05),
    ("elu", {"alpha": 2.0}, 0.05),
    ("selu", {}, 0.05),
    ("selu", {}, 0.0),
    ("relu", {}, 0.05),
    ("leaky_relu", {"slope": 0.2}, 0.1),
    ("abs", {}, 0.05),
    ("hard_tanh", {}, 0.05),
    ("hard_tanh", {"bound": 2.0}, 0.05),
    ("leaky_relu", {"slope": 0.2}, 0.05),
    ("elu", {"alpha": 2.0}, 0.3),
    ("sin", {}, 0.05),
    ("rbf", {}, 0.05),
]


@pytest.mark.parametrize("case", CRITICAL_CASES, ids=lambda c: f"{c[0]}{c[1] or ''}-sb={c[2]}")
def test_critical_sigma_w2_has_chi1_one_by_independent_quadrature(case):
    name, params, sb = case
    act = get_activation(name, **params)
    sw = dense.critical_sigma_w2(act, sb)
    kinks = tuple(k * params.get("bound", 1.0) for k in KINKS.get(name, ())) or (0.0,)
    phi, dphi = reference_functions(name, params)
    chi1, err = reference_chi1(phi, dphi, kinks, sw, sb, homogeneous=name in HOMOGENEOUS)
    assert err < QUAD_ERR_MAX * max(1.0, sw)
    assert abs(chi1 - 1.0) <= LIBRARY_CHI_ATOL + QUAD_SAFETY * err, (sw, chi1)


def test_critical_sigma_w2_of_sign_is_refused_not_nan():
    # chi_1 = 0 at sigma_w2 = 0 and inf beyond (sign' is a Dirac delta): no crossing of 1
    with pytest.raises(ValueError, match="not crossed"):
        dense.critical_sigma_w2("sign", 0.1)


# --- user activations with kinks and jumps: the edge of chaos through pytorch.init ---------------


def _relu6(x):
    return np.clip(x, 0.0, 6.0)


def _relu6_d(x):
    return ((x > 0) & (x < 6)) * 1.0


def _hard_sigmoid(x):
    return np.clip(x / 6.0 + 0.5, 0.0, 1.0)


def _hard_sigmoid_d(x):
    return (np.abs(x) < 3) / 6.0


USER_KINKED = [
    ("relu6", _relu6, _relu6_d, (0.0, 6.0), 0.05),
]


@pytest.mark.parametrize("case", USER_KINKED, ids=lambda c: c[0])
def test_user_kinked_critical_sigma_w2_by_independent_quadrature(case):
    torch_init = pytest.importorskip("meanfield.pytorch.init")
    name, phi, dphi, kinks, sb = case
    act = Activation.from_functions(name, phi, dphi)
    assert act.breakpoints == kinks
    sw = torch_init.critical_sigma_w2(act, sb)
    chi1, err = reference_chi1(scalar(phi), scalar(dphi), kinks, sw, sb)
    assert err < QUAD_ERR_MAX * max(1.0, sw)
    assert abs(chi1 - 1.0) <= LIBRARY_CHI_ATOL + QUAD_SAFETY * err, (sw, chi1)


@pytest.mark.parametrize("q", [1e-6, 0.3, 1.0, 1e2, 1e6])
def test_user_kinked_moments_by_independent_quadrature(q):
    for phi, dphi, kinks in (
        (_hard_sigmoid, _hard_sigmoid_d, (-3.0, 3.0)),
        (_relu6, _relu6_d, (0.0, 6.0)),
        (lambda x: (x > 0.5) * 1.0, lambda x: 0.0 * x, (0.5,)),
    ):
        act = Activation.from_functions("k", phi, dphi)
        assert act.breakpoints == kinks
        for f, d in ((lambda u: scalar(phi)(u) ** 2, (0, 0)), (lambda u: scalar(dphi)(u) ** 2, (1, 1))):
            ref, err = gauss_quad(f, q, kinks)
            assert err < QUAD_ERR_MAX
            assert abs(expectation(act, q, d) - ref) <= WRAP_RTOL * max(ref, 1e-300) + QUAD_SAFETY * err


# --- PyTorch activation modules --------------------------------------------------------------


def _torch_cases():
    torch = pytest.importorskip("torch")
    nn = torch.nn
    return [
        (nn.ELU(alpha=2.0), get_activation("elu", alpha=2.0)),
        (nn.ELU(), get_activation("elu")),
        (nn.CELU(), get_activation("elu")),
        (nn.SELU(), get_activation("selu")),
        (nn.Hardtanh(-2.0, 2.0), get_activation("hard_tanh", bound=2.0)),
        (nn.PReLU(init=0.25), get_activation("leaky_relu", slope=0.25)),  # a float32 weight: 0.25 is exact
        (nn.RReLU(0.1, 0.3).eval(), get_activation("leaky_relu", slope=0.2)),
        (nn.LeakyReLU(0.2), get_activation("leaky_relu", slope=0.2)),
    ]


#: Pointwise agreement of a PyTorch module (float64) with the built-in it maps to.
TORCH_POINTWISE_RTOL = 1e-14


def test_parametrised_torch_modules_are_their_builtins():
    """Each parametrised module is the built-in pointwise (value and autograd derivative, on a grid
    through the kinks), and its edge of chaos is the built-in's, which the quadrature test above
    checks for these parameters (elu alpha = 2, selu, hard_tanh bound = 2, leaky slope 0.2)."""
    torch = pytest.importorskip("torch")
    from meanfield.pytorch import activation_from_module
    from meanfield.pytorch.init import critical_sigma_w2

    x = np.linspace(-7.0, 7.0, 1401)
    for module, builtin in _torch_cases():
        act = activation_from_module(module)
        assert act == builtin, module
        m = copy.deepcopy(module).double()
        t = torch.as_tensor(x).clone().requires_grad_(True)
        y = m(t)
        (g,) = torch.autograd.grad(y.sum(), t)
        np.testing.assert_allclose(builtin.phi(x), y.detach().numpy(), rtol=TORCH_POINTWISE_RTOL, atol=1e-300)
        off = np.abs(np.abs(x) - 2.0) > 1e-9  # hard_tanh(2)'s derivative at the kinks is a convention
        np.testing.assert_allclose(builtin.dphi(x)[off], g.numpy()[off], rtol=TORCH_POINTWISE_RTOL, atol=1e-300)
        assert critical_sigma_w2(module, 0.05) == dense.critical_sigma_w2(builtin, 0.05)


def test_random_torch_modules_are_refused_at_once():
    torch = pytest.importorskip("torch")
    from meanfield.pytorch import activation_from_module

    nn = torch.nn
    for module in (nn.RReLU(), nn.Dropout(), nn.AlphaDropout(0.2)):
        with pytest.raises(ValueError, match="random"):
            activation_from_module(module)

    class Noisy(nn.Module):
        def forward(self, x):
            return torch.tanh(x) + 0.01 * torch.randn_like(x)

    with pytest.raises(ValueError, match="random"):
        activation_from_module(Noisy())
    with pytest.raises(ValueError, match="one slope per channel"):
        activation_from_module(nn.PReLU(num_parameters=3))
