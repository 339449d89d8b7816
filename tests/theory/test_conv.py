"""Tests of meanfield.conv: the CNN covariance map, its Fourier structure, depth scales, linearised
and backward dynamics (Xiao et al. 2018), checked against independent constructions."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meanfield import conv, dense

#: Float64 rounding of sums of O(P^2) terms of size O(1).
ROUND_ATOL = 1e-12
#: Central finite difference of the exact map with step t: error O(t * |eps|^2), t = 1e-4 here.
LINEARISATION_RTOL = 1e-3


def _random_v(rng, shape):
    v = rng.random(shape) + 0.05
    return v / v.sum()


def _random_psd(rng, p):
    a = rng.standard_normal((p, p + 2))
    return a @ a.T / p


def _operator_matrix(v, shape):
    """A_v as an explicit (P^2 x P^2) matrix, built by applying it to the canonical basis."""
    p = int(np.prod(shape))
    basis = np.eye(p * p).reshape(p * p, p, p)
    return conv.average(basis, v, shape).reshape(p * p, p * p).T


# --- averaging operator -----------------------------------------------------------------------


@given(st.integers(0, 10_000), st.integers(1, 9), st.integers(0, 2), st.booleans())
@settings(max_examples=30)
def test_average_preserves_trace_and_psd(seed, n, k, two_d):
    rng = np.random.default_rng(seed)
    shape = (n, 3) if two_d else (n,)
    v = _random_v(rng, (2 * k + 1, 3) if two_d else (2 * k + 1,))
    cov = _random_psd(rng, int(np.prod(shape)))
    out = conv.average(cov, v, shape)
    assert abs(np.trace(out) - np.trace(cov)) <= ROUND_ATOL * np.trace(cov) * 10
    assert np.allclose(out, out.T, atol=ROUND_ATOL)
    assert np.linalg.eigvalsh(out).min() >= -1e-12 * np.abs(cov).max()


def test_average_matches_definition_1d():
    rng = np.random.default_rng(3)
    n, v = 7, np.array([0.1, 0.2, 0.4, 0.2, 0.1])
    cov = rng.standard_normal((n, n))
    expected = np.zeros((n, n))
    for a in range(n):
        for b in range(n):
            expected[a, b] = sum(v[j] * cov[(a + j - 2) % n, (b + j - 2) % n] for j in range(5))
    assert np.allclose(conv.average(cov, v), expected, atol=ROUND_ATOL)
    # the adjoint uses -beta and is the transpose of the operator
    op = _operator_matrix(v, (n,))
    basis = np.eye(n * n).reshape(n * n, n, n)
    op_t = conv.average_transpose(basis, v, (n,)).reshape(n * n, n * n).T
    assert np.allclose(op_t, op.T, atol=ROUND_ATOL)


# --- Fourier eigenvalues ----------------------------------------------------------------------


@given(st.integers(0, 10_000), st.integers(1, 12), st.integers(0, 3))
@settings(max_examples=30)
def test_fourier_eigenvalues_is_dft_of_v_on_ring(seed, n, k):
    rng = np.random.default_rng(seed)
    v = _random_v(rng, 2 * k + 1)
    lam = conv.fourier_eigenvalues(v, n)
    m = np.arange(n)
    direct = sum(v[j] * np.exp(2j * np.pi * m * (j - k) / n) for j in range(2 * k + 1))
    assert np.allclose(lam, direct, atol=ROUND_ATOL)
    assert abs(lam[0] - 1.0) <= ROUND_ATOL
    assert np.all(np.abs(lam) <= 1.0 + ROUND_ATOL)


@pytest.mark.parametrize("shape, v", [((6,), [0.2, 0.5, 0.3]), ((3, 4), np.outer([0.3, 0.4, 0.3], [0.1, 0.6, 0.3]))])
def test_fourier_eigenvalues_are_the_spectrum_of_the_operator(shape, v):
    """Eigenvalues of A_v on P x P matrices are P copies of lambda (Xiao et al. 2018, Sec. 2.1.4)."""
    v = np.asarray(v)
    p = int(np.prod(shape))
    eig = np.linalg.eigvals(_operator_matrix(v, shape))
    lam = conv.fourier_eigenvalues(v, shape).ravel()
    expected = np.repeat(lam, p)
    # multiset equality: every expected eigenvalue is matched by a distinct computed one
    remaining = list(eig)
    for lam_i in expected:
        j = int(np.argmin(np.abs(np.array(remaining) - lam_i)))
        assert abs(remaining.pop(j) - lam_i) <= 1e-8


def test_cyclic_diagonal_modes_are_eigenvectors():
    rng = np.random.default_rng(0)
    n, v = 9, _random_v(rng, 5)
    cov = rng.standard_normal((n, n))
    before = conv.cyclic_diagonal_modes(cov)
    after = conv.cyclic_diagonal_modes(conv.average(cov, v))
    lam = conv.fourier_eigenvalues(v, n)
    assert np.allclose(after, before * lam[None, :], atol=1e-10)


def test_fig_s4_eigenvalues():
    """v = [0.025, 0.95, 0.025]: lambda_m = 0.95 + 0.05 cos(2 pi m / 10), zero mode slowest."""
    lam = conv.fourier_eigenvalues([0.025, 0.95, 0.025], 10)
    m = np.arange(10)
    assert np.allclose(lam, 0.95 + 0.05 * np.cos(2 * np.pi * m / 10), atol=ROUND_ATOL)
    assert np.argmax(lam.real) == 0


def test_delta_v_gives_unit_eigenvalues_and_infinite_depth_scales():
    delta = np.zeros((3, 3))
    delta[1, 1] = 1.0
    assert np.allclose(conv.fourier_eigenvalues(delta, (5, 4)), 1.0)
    ds = conv.depth_scales("relu", 2.0, 0.0, delta, (5, 4))
    assert np.all(np.isinf(ds.xi_c))
    sw = float(dense.critical_sigma_w2("tanh", 0.05))
    ds = conv.depth_scales("tanh", sw, 0.05, [0.0, 1.0, 0.0], 8)
    assert np.all(np.isinf(ds.xi_c))
    # uniform v at the same critical point: only the zero mode keeps an infinite depth scale
    ds = conv.depth_scales("tanh", sw, 0.05, [1 / 3, 1 / 3, 1 / 3], 8)
    assert np.isinf(ds.xi_c[0]) and np.all(np.isfinite(ds.xi_c[1:]))


def test_depth_scales_formula():
    ds = conv.depth_scales("erf", 2.25, 0.25, [0.025, 0.95, 0.025], 10)
    fp = dense.fixed_point("erf", 2.25, 0.25)
    lam = 0.95 + 0.05 * np.cos(2 * np.pi * np.arange(10) / 10)
    assert np.allclose(ds.xi_c, -1 / np.log(fp.chi_c * lam), rtol=1e-12)
    assert np.allclose(ds.xi_q, -1 / np.log(fp.chi_q * lam), rtol=1e-12)
    assert ds.xi_c[0] == pytest.approx(fp.xi_c, rel=1e-12)  # zero mode = the dense depth scale


# --- forward map ------------------------------------------------------------------------------


@pytest.mark.parametrize("activation", ["tanh", "erf", "relu"])
def test_uniform_v_on_constant_covariance_equals_dense_map(activation):
    n = 7
    cov = 1.3 * (0.4 + 0.6 * np.eye(n))
    out = conv.covariance_map(cov, activation, 1.7, 0.1, np.full(3, 1 / 3))
    assert np.allclose(out, dense.covariance_map(cov, activation, 1.7, 0.1), atol=ROUND_ATOL)


def test_circulant_covariance_is_unchanged_by_any_v():
    rng = np.random.default_rng(1)
    n = 8
    row = np.array([2.0, 0.8, 0.3, 0.1, 0.05, 0.1, 0.3, 0.8])
    cov = np.array([[row[(b - a) % n] for b in range(n)] for a in range(n)])
    v = _random_v(rng, 5)
    assert np.allclose(
        conv.covariance_map(cov, "tanh", 1.5, 0.05, v), dense.covariance_map(cov, "tanh", 1.5, 0.05), atol=ROUND_ATOL
    )


def test_fixed_point_covariance_rejects_bad_arguments():
    with pytest.raises(ValueError, match="q_star"):
        conv.fixed_point_covariance(float("nan"), 0.5, 3)
    with pytest.raises(ValueError, match="c_star"):
        conv.fixed_point_covariance(1.0, 1.5, 3)


def test_fixed_point_is_fixed():
    fp = dense.fixed_point("erf", 2.25, 0.25)
    star = conv.fixed_point_covariance(fp.q_star, fp.c_star, 10)
    out = conv.covariance_map(star, "erf", 2.25, 0.25, [0.025, 0.95, 0.025])
    assert np.allclose(out, star, atol=1e-12)


def test_two_d_and_one_d_agree_on_separable_cases():
    rng = np.random.default_rng(4)
    n = 6
    cov = _random_psd(rng, n)
    v1 = np.array([0.2, 0.5, 0.3])
    one = conv.propagate(cov, "tanh", 1.5, 0.1, v1, 3)
    two = conv.propagate(cov, "tanh", 1.5, 0.1, v1[:, None], 3, shape=(n, 1))
    assert np.allclose(one, two, atol=ROUND_ATOL)
    # separable 2-D v: eigenvalues factorise into the 1-D ones
    v2 = np.array([0.1, 0.7, 0.2])
    lam = conv.fourier_eigenvalues(np.outer(v1, v2), (5, 4))
    assert np.allclose(lam, np.outer(conv.fourier_eigenvalues(v1, 5), conv.fourier_eigenvalues(v2, 4)), atol=ROUND_ATOL)


@pytest.mark.parametrize("activation", ["tanh", "relu", "erf"])
def test_two_d_field_constant_along_one_axis_follows_the_one_d_map(activation):
    """A 2-D signal constant along axis 2 (covariance kron(S, ones)) with a separable, non-trivial
    v = v1 x v2 stays constant along axis 2 and its covariance follows the 1-D map with v1."""
    rng = np.random.default_rng(8)
    n1, n2, depth = 5, 4, 3
    cov1 = _random_psd(rng, n1)
    v1, v2 = _random_v(rng, 3), _random_v(rng, 3)
    two = conv.propagate(
        np.kron(cov1, np.ones((n2, n2))), activation, 1.7, 0.1, np.outer(v1, v2), depth, shape=(n1, n2)
    )
    one = conv.propagate(cov1, activation, 1.7, 0.1, v1, depth)
    assert np.allclose(two, np.kron(one, np.ones((n2, n2))), atol=ROUND_ATOL * np.abs(one).max())


def test_two_d_averaging_of_kronecker_products_factorises():
    """A_{v1 x v2} (S1 kron S2) = (A_v1 S1) kron (A_v2 S2): pins the row-major 2-D position layout."""
    rng = np.random.default_rng(6)
    s1, s2 = rng.standard_normal((5, 5)), rng.standard_normal((4, 4))
    v1, v2 = _random_v(rng, 3), _random_v(rng, 5)
    lhs = conv.average(np.kron(s1, s2), np.outer(v1, v2), (5, 4))
    rhs = np.kron(conv.average(s1, v1), conv.average(s2, v2, 4))
    assert np.allclose(lhs, rhs, atol=ROUND_ATOL)


@pytest.mark.slow
def test_propagate_deep_relu_does_not_overflow():
    cov0 = 0.5 + 0.5 * np.eye(4)
    res = conv.propagate_log(cov0, "relu", 3.0, 0.1, [0.25, 0.5, 0.25], 10_000)
    assert np.all(np.isfinite(res.normalized)) and np.all(np.isfinite(res.log_scale))
    # relu without bias: q grows by exactly sigma_w2 / 2 per layer
    res0 = conv.propagate_log(cov0, "relu", 3.0, 0.0, [0.25, 0.5, 0.25], 10_000)
    assert res0.log_q[-1, 0] == pytest.approx(10_000 * np.log(1.5), rel=1e-9)
    with pytest.raises(ValueError, match="propagate_log"):
        conv.propagate(cov0, "relu", 3.0, 0.1, [0.25, 0.5, 0.25], 10_000)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(v=[0.2, 0.2, 0.2]), "sum to 1"),
        (dict(v=[0.5, 0.5]), "odd"),
        (dict(v=[-0.1, 1.0, 0.1]), "non-negative"),
        (dict(sigma_w2=-1.0), "sigma_w2"),
        (dict(cov=-np.eye(4)), "positive semi-definite"),
        (dict(v=np.full((3, 3), 1 / 9)), "square"),
    ],
)
def test_bad_arguments_raise(kwargs, match):
    args = dict(cov=np.eye(5), activation="tanh", sigma_w2=1.0, sigma_b2=0.1, v=[0.25, 0.5, 0.25])
    if "cov" not in kwargs and np.asarray(kwargs.get("v", [0])).ndim == 2:
        args["cov"] = np.eye(5)
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        conv.covariance_map(**args)


# --- linearised dynamics ----------------------------------------------------------------------


@pytest.mark.parametrize("activation, sw, sb", [("tanh", 2.5, 0.05), ("erf", 2.25, 0.25)])
def test_linearized_decay_matches_finite_difference_of_exact_map(activation, sw, sb):
    rng = np.random.default_rng(2)
    n, v, depth, t = 6, np.array([0.2, 0.5, 0.3]), 4, 1e-4
    fp = dense.fixed_point(activation, sw, sb)
    star = conv.fixed_point_covariance(fp.q_star, fp.c_star, n)
    eps = rng.standard_normal((n, n))
    eps = 0.1 * (eps + eps.T)  # includes the diagonal, so chi_q and kappa are exercised
    exact = (star[None] - conv.propagate(star - t * eps, activation, sw, sb, v, depth)) / t
    lin = conv.linearized_decay(eps, activation, sw, sb, v, depth)
    scale = np.abs(lin.eps[1:]).max()
    assert np.abs(exact[1:] - lin.eps[1:]).max() <= LINEARISATION_RTOL * scale


def test_linearized_off_diagonal_modes_follow_eq_2_11():
    n, v, depth = 10, [0.025, 0.95, 0.025], 7
    eps = np.zeros((n, n))
    idx = np.arange(n)
    d = np.cos(2 * np.pi * 3 * idx / n) * 0.01
    eps[idx, (idx + 1) % n] = d
    eps[(idx + 1) % n, idx] = d
    lin = conv.linearized_decay(eps, "erf", 2.25, 0.25, v, depth)
    lam = conv.fourier_eigenvalues(v, n)
    expected = lin.modes[0, 1][None] * (lin.chi_c * lam[None]) ** np.arange(depth + 1)[:, None]
    assert np.allclose(lin.modes[:, 1], expected, atol=1e-14)


def test_kappa_closed_path_matches_finite_difference_path():
    """kappa = sigma_w2/2 E phi''(h1) phi(h2) (eq. S13) equals sigma_w2 d/dq1 E phi(h1) phi(h2)
    (checked through the public ``linearized_decay(...).kappa``)."""
    import dataclasses

    from meanfield.activations import get_activation

    act = get_activation("erf")
    kinked = dataclasses.replace(act, smooth=False)  # forces the central-difference path
    eps = 1e-3 * np.eye(4)
    v = np.array([0.2, 0.5, 0.3])
    k_smooth = conv.linearized_decay(eps, act, 2.25, 0.25, v, 1).kappa
    k_diff = conv.linearized_decay(eps, kinked, 2.25, 0.25, v, 1).kappa
    assert k_smooth != 0.0
    assert k_diff == pytest.approx(k_smooth, rel=1e-8)


# --- backward ---------------------------------------------------------------------------------


def test_backward_map_at_fixed_point_is_chi1_times_averaged_diagonal():
    """eq. 2.16: diag(Sigma~^l) = chi_1 A_v^T diag(Sigma~^{l+1}) at the fixed point."""
    fp = dense.fixed_point("tanh", 1.2, 0.05)
    n, v = 8, np.array([0.2, 0.5, 0.3])
    star = conv.fixed_point_covariance(fp.q_star, fp.c_star, n)
    g = np.diag(np.arange(1.0, n + 1))
    out = conv.backward_covariance_map(g, star, "tanh", 1.2, v)
    dg = np.diag(g)
    expected = fp.chi_1 * sum(v[j] * np.roll(dg, j - 1) for j in range(3))  # sum_beta v_beta g(a - beta)
    assert np.allclose(np.diag(out), expected, rtol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("sw", [1.0, 4.25])
def test_gradient_variance_decays_like_chi1_power(sw):
    fp = dense.fixed_point("tanh", sw, 0.05)
    n, depth = 10, 30
    star = conv.fixed_point_covariance(fp.q_star, fp.c_star, n)
    bp = conv.gradient_variance_decay(star, "tanh", sw, 0.05, np.full(3, 1 / 3), depth)
    assert np.allclose(bp.grad_variance, fp.chi_1 ** np.arange(depth, -1, -1), rtol=1e-10)
    # the weight-gradient ratio tends to chi_1^(L - l) at the fixed point (post-activations are stationary)
    ratio = bp.weight_grad_sq / bp.weight_grad_sq[-1]
    assert np.allclose(ratio, fp.chi_1 ** np.arange(depth - 1, -1, -1), rtol=1e-10)


# --- singular values and the GS family --------------------------------------------------------


def test_averaging_singular_values_match_svd_of_operator():
    v = np.outer([0.3, 0.4, 0.3], [0.2, 0.6, 0.2])
    shape = (3, 4)
    sv = conv.averaging_singular_values(v, shape)
    full = np.linalg.svd(_operator_matrix(v, shape), compute_uv=False)
    assert np.allclose(np.sort(full)[::-1], np.repeat(sv, 12), atol=1e-10)


def test_gs_family_conditioning_worsens_from_delta_to_uniform():
    family = conv.gs_family((3, 3), 5)
    assert np.allclose(family[0], np.pad([[1.0]], 1))
    assert np.allclose(family[-1], 1 / 9)
    svs = [conv.averaging_singular_values(v, (8, 8)) for v in family]
    assert np.allclose(svs[0], 1.0)
    energy = [np.sum(s**2) for s in svs]
    # Parseval: sum |lambda|^2 = P sum v^2, strictly decreasing along the family
    assert np.allclose(energy, [64 * np.sum(v**2) for v in family], rtol=1e-12)
    assert all(a > b for a, b in zip(energy, energy[1:]))


# --- regressions found by the public-API fuzzer (tests/fuzz/) ------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda: conv.fourier_eigenvalues([0.25, 0.5, 0.25], (10**12,)),
        lambda: conv.averaging_singular_values([0.25, 0.5, 0.25], 10**12),
        lambda: conv.depth_scales("tanh", 1.5, 0.05, [0.25, 0.5, 0.25], (10**12,)),
        lambda: conv.spatial_shape((2**20 + 1,)),
    ],
)
def test_huge_shapes_are_refused_at_once(call):
    """A shape of 10**12 positions raised MemoryError (trying to allocate 7 TiB)."""
    with pytest.raises(ValueError, match="shape"):
        call()


def test_size_limits_of_allocating_functions():
    with pytest.raises(ValueError, match="count"):
        conv.gs_family(3, 10**12)  # MemoryError before
    with pytest.raises(ValueError, match="size"):
        conv.fixed_point_covariance(1.0, 0.5, 2**64)  # numpy's "Maximum allowed dimension exceeded"


@pytest.mark.parametrize("kernel_shape", [0, 3.5, "a", None, (2, 3, 4), ()])
def test_gs_family_messages_name_kernel_shape(kernel_shape):
    """The messages said 'shape must be ...'."""
    with pytest.raises(ValueError, match="kernel_shape"):
        conv.gs_family(kernel_shape)


def test_complex_sizes_are_type_errors():
    with pytest.raises(TypeError, match="shape"):
        conv.spatial_shape(3 + 1j)
    with pytest.raises(TypeError, match="count"):
        conv.gs_family(3, 2 + 1j)


def test_ragged_covariance_names_the_argument():
    with pytest.raises(ValueError, match="cov"):
        conv.average([[1.0, 2.0], [3.0]], [0.25, 0.5, 0.25], 2)
    with pytest.raises(ValueError, match="v"):
        conv.fourier_eigenvalues([[0.25, 0.5], [0.25]], 4)


# --- regressions found by the public-API fuzzer (tests/fuzz/, full catalogue) -------------------


def test_depth_scales_finite_for_negative_chi_q_and_zero_modes():
    """cos has chi_q < 0: xi_q = -1/log|chi_q lambda| is finite (was NaN); a mode with lambda = 0 has
    xi = 0 even where chi is inf (exp at q* = inf; was inf * 0 = NaN -> inf)."""
    v = [0.25, 0.5, 0.25]
    r = conv.depth_scales("cos", 1.5, 0.05, v, 4)
    assert r.fixed_point.chi_q < 0
    mod = np.abs(r.lambda_)
    np.testing.assert_allclose(r.xi_q[mod > 0], -1.0 / np.log(np.abs(r.fixed_point.chi_q) * mod[mod > 0]))
    r = conv.depth_scales("exp", 1.5, 0.05, v, 4)
    zero = np.abs(r.lambda_) == 0
    assert zero.any() and np.all(r.xi_c[zero] == 0.0) and np.all(r.xi_q[zero] == 0.0)
