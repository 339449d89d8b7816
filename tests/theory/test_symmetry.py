"""meanfield.symmetry and the symmetric initialisers of meanfield.init (Blumenfeld et al. 2020)."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from meanfield import Result, init, symmetry
from meanfield.activations import get_activation

#: Rounding tolerance of exact identities computed in float64 (sums of O(100) terms of size O(1)).
EXACT = 1e-12

#: Standard errors allowed for Monte-Carlo means (two-sided P(|Z| > 4.5) = 7e-6 per assertion).
Z = 4.5


def naive_mean_cosine(vectors):
    """Eqs. 5-6 written as the double sum over i != j (reference for the O(m p) formula)."""
    m = len(vectors)
    total = 0.0
    for i in range(m):
        for j in range(m):
            if i == j:
                continue
            ni, nj = np.linalg.norm(vectors[i]), np.linalg.norm(vectors[j])
            if ni == 0 and nj == 0:
                total += 1.0
            elif ni == 0 or nj == 0:
                total += 0.0
            else:
                total += vectors[i].ravel() @ vectors[j].ravel() / (ni * nj)
    return total / (m * (m - 1))


shapes = st.one_of(
    st.tuples(st.integers(2, 7), st.integers(2, 7)),
    st.tuples(st.sampled_from([1, 3]), st.sampled_from([1, 3]), st.integers(2, 6), st.integers(2, 6)),
)


@given(shape=shapes, seed=st.integers(0, 2**31 - 1))
def test_correlations_match_the_double_sum_and_lie_in_range(shape, seed):
    w = np.random.default_rng(seed).standard_normal(shape)
    n_out, n_in = shape[-2:]
    rows = [w[..., i, :] for i in range(n_out)]
    cols = [w[..., :, j] for j in range(n_in)]
    filters = [w[..., i, j] for i in range(n_out) for j in range(n_in)]
    cf, cb, ct = symmetry.forward_correlation(w), symmetry.backward_correlation(w), symmetry.total_correlation(w)
    assert cf == pytest.approx(naive_mean_cosine(rows), abs=EXACT)
    assert cb == pytest.approx(naive_mean_cosine(cols), abs=EXACT)
    assert ct == pytest.approx(naive_mean_cosine(filters), abs=EXACT)
    for c in (cf, cb, ct):
        assert -1.0 <= c <= 1.0


@given(shape=shapes, seed=st.integers(0, 2**31 - 1), scale=st.floats(1e-300, 1e300))
def test_correlations_invariant_to_permutations_and_positive_scaling_of_filters(shape, seed, scale):
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(shape)
    n_out, n_in = shape[-2:]
    cf, cb = symmetry.forward_correlation(w), symmetry.backward_correlation(w)
    # permute output and input channels; rescale each output filter by its own positive factor
    v = w[..., rng.permutation(n_out), :][..., rng.permutation(n_in)]
    assert symmetry.forward_correlation(v) == pytest.approx(cf, abs=EXACT)
    assert symmetry.backward_correlation(v) == pytest.approx(cb, abs=EXACT)
    f = rng.uniform(0.1, 10.0, n_out)[:, None]
    assert symmetry.forward_correlation(w * f) == pytest.approx(cf, abs=EXACT)
    g = rng.uniform(0.1, 10.0, n_in)
    assert symmetry.backward_correlation(w * g) == pytest.approx(cb, abs=EXACT)
    # a global scale up to the float64 range neither overflows nor underflows
    assert symmetry.forward_correlation(w * scale) == pytest.approx(cf, abs=1e-9)


@given(shape=shapes, value=st.floats(-1e3, 1e3).filter(lambda v: v != 0))
def test_constant_and_zero_tensors_are_fully_correlated(shape, value):
    for w in (np.full(shape, value), np.zeros(shape)):
        assert symmetry.forward_correlation(w) == 1.0
        assert symmetry.backward_correlation(w) == 1.0
        assert symmetry.total_correlation(w) == 1.0


@given(n_in=st.integers(1, 8), p=st.integers(1, 5), k=st.sampled_from([(1, 1), (3, 3), (5,)]))
def test_replicated_identity_closed_form(n_in, p, k):
    n_out = n_in * p
    if n_out < 2:
        return
    w = init.delta_kernel(k)[..., None, None] * np.tile(np.eye(n_in), (p, 1))
    th = symmetry.closed_form_correlations("replicated_identity", n_out, n_in)
    assert symmetry.forward_correlation(w) == pytest.approx(th.c_f, abs=EXACT) == pytest.approx((p - 1) / (n_out - 1))
    if n_in >= 2:
        assert symmetry.backward_correlation(w) == pytest.approx(th.c_b, abs=EXACT)


@given(n=st.integers(2, 12), seed=st.integers(0, 1000))
def test_orthogonal_and_delta_orthogonal_are_uncorrelated(n, seed):
    u = init.haar_orthogonal(n, n, rng=seed)
    for w in (u, init.delta_kernel((3, 3))[..., None, None] * u):
        assert abs(symmetry.forward_correlation(w)) < EXACT
        assert abs(symmetry.backward_correlation(w)) < EXACT
    # looks-linear delta-orthogonal (eq. 8): rows i and i + n pair with cosine -1, others 0
    ll = init.looks_linear_delta_orthogonal(2 * n, rng=seed)
    assert symmetry.forward_correlation(ll) == pytest.approx(-1.0 / (2 * n - 1), abs=EXACT)


def test_random_and_replicated_feature_closed_forms_by_monte_carlo():
    """Mean over 400 tensors vs the exact expectations; tolerance Z standard errors."""
    rng = np.random.default_rng(0)
    d, r, n_in = 12, 3, 10
    cf_rand, cb_rand, cf_rep, cb_rep = [], [], [], []
    for _ in range(400):
        w = rng.standard_normal((3, 3, d, n_in))
        cf_rand.append(symmetry.forward_correlation(w))
        cb_rand.append(symmetry.backward_correlation(w))
        rep = np.repeat(rng.standard_normal((d // r, n_in)), r, axis=0)
        cf_rep.append(symmetry.forward_correlation(rep))
        cb_rep.append(symmetry.backward_correlation(rep))
    rand = symmetry.closed_form_correlations("random")
    rep_th = symmetry.closed_form_correlations("replicated_features", d, replicas=r)
    assert rep_th.c_f == pytest.approx((r - 1) / (d - 1))
    for samples, th in ((cf_rand, rand.c_f), (cb_rand, rand.c_b), (cf_rep, rep_th.c_f), (cb_rep, rep_th.c_b)):
        s = np.asarray(samples)
        assert abs(s.mean() - th) <= Z * s.std(ddof=1) / math.sqrt(len(s))


def test_effective_width():
    assert symmetry.effective_width(0.0, 64) == 64
    assert symmetry.effective_width(1.0, 64) == 1
    assert symmetry.effective_width(-1.0, 64) == 1
    assert np.allclose(symmetry.effective_width(np.array([0.6, 0.0]), 11), [9.0, 11.0])


def test_bad_inputs_raise_value_error():
    with pytest.raises(ValueError, match="n_out >= 2"):
        symmetry.forward_correlation(np.ones((1, 5)))
    with pytest.raises(ValueError, match="n_in >= 2"):
        symmetry.backward_correlation(np.ones((5, 1)))
    with pytest.raises(ValueError, match="shape"):
        symmetry.forward_correlation(np.ones(5))
    with pytest.raises(ValueError, match="finite"):
        symmetry.forward_correlation(np.array([[1.0, np.nan], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="c_f"):
        symmetry.effective_width(1.5, 4)
    with pytest.raises(ValueError, match="n must be >= 1"):
        symmetry.effective_width(0.5, 0)
    with pytest.raises(ValueError, match="kind"):
        symmetry.closed_form_correlations("gaussian")
    with pytest.raises(ValueError, match="slope"):
        init.leakynet(["I"], 4, slope=0.0)
    with pytest.raises(ValueError, match="kind"):
        init.channel_matrix(4, "J")
    with pytest.raises(ValueError, match="even"):
        init.looks_linear_delta_orthogonal(5)
    with pytest.raises(ValueError, match="kernel_shape"):
        init.delta_kernel((2, 2))
    with pytest.raises(ValueError, match="kinds"):
        symmetry.propagate_perturbation(np.ones((2, 3)), np.zeros((2, 3)), ["X"])


# --- perturbation propagation (App. G) ------------------------------------------------------


@given(n=st.integers(2, 32), seed=st.integers(0, 1000), kinds=st.lists(st.sampled_from("I1"), min_size=1, max_size=12))
def test_perturbation_is_killed_by_a_one_layer_and_kept_by_a_linear_identity(n, seed, kinds):
    rng = np.random.default_rng(seed)
    alpha = np.repeat(1.0 + np.abs(rng.standard_normal((5, 1))), n, axis=1)  # symmetric, positive features
    eps = 1e-3 * rng.standard_normal((5, n))  # too small to flip a sign
    r = symmetry.propagate_perturbation(alpha, eps, kinds, slope=0.1)
    assert r[0] == pytest.approx(symmetry.perturbation_ratio(alpha + eps))
    first_one = kinds.index("1") + 1 if "1" in kinds else len(kinds) + 1
    assert np.all(r[first_one:] == 0.0)  # '1' makes the features exactly symmetric again
    # before it, every location keeps one sign per layer, so the leaky ReLU scales all alike
    assert np.allclose(r[:first_one], r[0], rtol=1e-9)


def test_one_layer_moves_one_over_n_of_an_isotropic_perturbation_into_the_mean():
    """App. G: the channel mean of independent components has ~1/sqrt(n) of their norm; E|P1 e|^2/|e|^2 = 1/n."""
    rng = np.random.default_rng(3)
    n = 16
    e = rng.standard_normal((4000, n))
    frac = np.sum(e.mean(axis=1, keepdims=True) ** 2 * n, axis=1) / np.sum(e**2, axis=1)
    assert abs(frac.mean() - 1.0 / n) <= Z * frac.std(ddof=1) / math.sqrt(len(frac))


# --- exact identities of the constructions --------------------------------------------------


def leaky_reference(v, slope):
    """The leaky ReLU written out (independent of meanfield.activations, which the library uses)."""
    return np.where(v > 0, v, slope * v)


@given(slope=st.floats(1e-3, 1.0), seed=st.integers(0, 1000), n=st.integers(1, 20))
def test_leaky_relu_sign_flip(slope, seed, n):
    """Sec. 5.1: phi(-phi(x) / slope) = -x for the library's leaky ReLU, which equals the reference."""
    x = np.random.default_rng(seed).standard_normal(n) * 10.0
    phi = get_activation("leaky_relu", slope=slope).phi
    np.testing.assert_array_equal(phi(x), leaky_reference(x, slope))
    assert np.allclose(phi(-phi(x) / slope), -x, rtol=1e-13, atol=0)


@given(n=st.integers(1, 10), seed=st.integers(0, 1000), kinds=st.lists(st.sampled_from("I1"), min_size=8, max_size=8))
def test_leakynet_tensors_preserve_symmetric_features_and_have_period_four(n, seed, kinds):
    slope = 0.01
    ws = init.leakynet(kinds, n, slope=slope, kernel_shape=(3,))
    assert ws[0].shape == (3, n, n)
    a0 = np.repeat(np.random.default_rng(seed).standard_normal((6, 1)), n, axis=1)
    h = [a0, ws[0][1] @ leaky_reference(a0, slope).T]  # h^1 = W_1 sigma(h^0); delta kernel: centre tap only
    h[1] = h[1].T
    for w in ws[1:]:
        h.append(leaky_reference(h[-1], slope) @ w[1].T)
    expected = [a0, -leaky_reference(a0, slope) / slope, -a0, -leaky_reference(-a0, slope) / slope]
    for layer, hl in enumerate(h):
        assert np.allclose(hl, expected[layer % 4], rtol=1e-12, atol=1e-12 * np.abs(a0).max() / slope)


@given(widths=st.lists(st.integers(1, 6), min_size=1, max_size=3), b=st.integers(0, 3))
def test_constnet_initialisation_structure(widths, b):
    net = init.constnet(widths, b, n_input=3, n_classes=4)
    assert np.allclose(net.first.sum(axis=-1)[1, 1], 1.0) and np.count_nonzero(net.first[0]) == 0
    assert all(np.all(w == 0) for stage in net.blocks for w in stage)
    assert all(np.all(w == 0) for w in net.widen_branch) and np.all(net.head == 0)
    for skip, n in zip(net.widen_skip, widths[:-1]):
        assert np.allclose(skip, 1.0 / n)
    if widths[0] >= 2:
        assert symmetry.forward_correlation(net.first) == 1.0


@given(half=st.integers(1, 6), seed=st.integers(0, 1000))
def test_looks_linear_delta_orthogonal_rotates_pre_activations(half, seed):
    """Eq. 9: relu then W maps [a, -a] to [U a, -U a], hence diag(U, U) on pre-activations."""
    n = 2 * half
    w = init.looks_linear_delta_orthogonal(n, kernel_shape=(3,), rng=seed)
    m = w[1]
    u = m[:half, :half]
    assert np.allclose(u @ u.T, np.eye(half), atol=EXACT)
    a = np.random.default_rng(seed + 1).standard_normal((7, half))
    pre = np.concatenate([a, -a], axis=1)
    out = np.maximum(pre, 0.0) @ m.T
    assert np.allclose(out, np.concatenate([a @ u.T, -a @ u.T], axis=1), atol=EXACT)


# --- App. F counts ----------------------------------------------------------------------------


def brute_force_counts(d, n_layers, include_empty):
    masks = [m for m in itertools.product((0, 1), repeat=d * n_layers)]
    if not include_empty:
        masks = [m for m in masks if all(any(m[l * d : (l + 1) * d]) for l in range(n_layers))]
    layers = lambda m: [m[l * d : (l + 1) * d] for l in range(n_layers)]  # noqa: E731
    all_to_all = {tuple(sum(x) for x in layers(m)) for m in masks}
    one_to_one = {tuple(sorted(zip(*layers(m)))) for m in masks}  # chain of feature i = its mask per layer
    return len(masks), len(all_to_all), len(one_to_one)


@pytest.mark.parametrize("d,n_layers", [(1, 1), (2, 2), (3, 2), (2, 3), (3, 3), (4, 2)])
@pytest.mark.parametrize("include_empty", [True, False])
def test_subnetwork_counts_by_enumeration(d, n_layers, include_empty):
    c = symmetry.subnetwork_counts(d, n_layers, include_empty)
    assert (c.random, c.all_to_all, c.one_to_one) == brute_force_counts(d, n_layers, include_empty)


@pytest.mark.slow
def test_subnetwork_counts_paper_numbers_and_scale():
    c = symmetry.subnetwork_counts(640, 10_000)
    logs = c.log2()
    assert logs["random"] == 640 * 10_000  # 2^(dL)
    assert logs["all_to_all"] == pytest.approx(10_000 * math.log2(641))  # (d+1)^L, the paper's d^L erratum
    # one-to-one, 2^L >> d: C(2^L + d - 1, d) ~ 2^(dL) / d!  (the paper writes / d^d)
    c2 = symmetry.subnetwork_counts(8, 40)
    assert math.log2(c2.one_to_one) == pytest.approx(8 * 40 - math.log2(math.factorial(8)), abs=1e-6)


def test_complement_resolves_correlations_within_rounding_of_one():
    """1 - C_f for m rows, one rotated by theta: 2 (1 - cos theta) / m = theta^2 / m, far below eps."""
    m, theta = 8, 1e-10
    w = np.zeros((m, 2))
    w[:, 0] = 1.0
    w[0] = [np.cos(theta), np.sin(theta)]
    assert symmetry.forward_correlation(w) == 1.0
    assert symmetry.forward_correlation(w, complement=True) == pytest.approx(theta**2 / m, rel=1e-6)
    assert symmetry.backward_correlation(np.ones((3, 3, 4, 5)), complement=True) == 0.0


@given(n=st.integers(2, 20), gamma=st.floats(0.0, 1.0))
def test_mixture_closed_form_of_appendix_j(n, gamma):
    w = init.delta_kernel((3, 3))[..., None, None] * init.channel_matrix(n, gamma=gamma)
    th = symmetry.closed_form_correlations("mixture", n, gamma=gamma)
    assert symmetry.forward_correlation(w) == pytest.approx(th.c_f, abs=EXACT)
    assert symmetry.backward_correlation(w) == pytest.approx(th.c_b, abs=EXACT)


def test_depth_ten_thousand_and_width_hundred_thousand_stay_finite():
    rng = np.random.default_rng(5)
    alpha = np.repeat(1.0 + np.abs(rng.standard_normal((3, 1))), 4, axis=1)
    r = symmetry.propagate_perturbation(alpha, 1e-6 * rng.standard_normal((3, 4)), ["I"] * 10_000, slope=0.01)
    assert np.all(np.isfinite(r)) and np.allclose(r, r[0], rtol=1e-6)  # 4-periodic features, no growth
    w = rng.standard_normal((100_000, 3)) * 1e-200  # tiny entries: no underflow of the squared norms
    assert abs(symmetry.forward_correlation(w)) < 1e-3  # (|sum u|^2 - m) / m^2 of 1e5 random unit rows is ~ 1/m = 1e-5
    assert abs(symmetry.backward_correlation(w.T * 1e300 * 1e100)) <= 1.0
    assert symmetry.effective_width(0.5, 100_000) == pytest.approx(1 + 99_999 * math.sqrt(0.75))


# --- trust: argument validation, bounded sizes ---------------------------------------------

import time  # noqa: E402

#: Wall-clock limit for calls that used to hang (the refusals take microseconds).
HANG_LIMIT_S = 10.0


NOT_BOOLS = ["yes", None, np.nan, [True], 1]
CORRELATIONS = [symmetry.forward_correlation, symmetry.backward_correlation, symmetry.total_correlation]


@pytest.mark.parametrize("flag", NOT_BOOLS)
def test_complement_and_include_empty_must_be_bool(flag):
    w = np.random.default_rng(0).standard_normal((3, 4))
    for f in CORRELATIONS + [symmetry.pairwise_mean_cosine]:
        with pytest.raises(TypeError, match="complement"):
            f(w, complement=flag)
        assert f(w, complement=np.bool_(True)) == pytest.approx(1.0 - f(w), abs=EXACT)
    with pytest.raises(TypeError, match="include_empty"):
        symmetry.subnetwork_counts(2, 2, include_empty=flag)


def test_complex_input_is_a_type_error():
    w = np.ones((3, 3)) + 1j
    for f in CORRELATIONS:
        with pytest.raises(TypeError, match="W must be real"):
            f(w)
    with pytest.raises(TypeError, match="vectors"):
        symmetry.pairwise_mean_cosine(w)
    with pytest.raises(TypeError, match="a must be real"):
        symmetry.perturbation_ratio(w)
    with pytest.raises(TypeError, match="alpha"):
        symmetry.propagate_perturbation(w, np.zeros((3, 3)), ["I"])
    with pytest.raises(TypeError, match="epsilon"):
        symmetry.propagate_perturbation(np.ones((3, 3)), w, ["I"])
    with pytest.raises(TypeError, match="slope"):
        symmetry.propagate_perturbation(np.ones((3, 3)), np.zeros((3, 3)), ["I"], slope=0.1 + 1j)


BAD_SIZES = [np.nan, np.inf, -np.inf, -1, -1e-3, "abc", ["a", "b"], 1 + 1j, np.float64(np.nan), 2.5]


@pytest.mark.parametrize(
    "kind", ["random", "orthogonal", "constant", "replicated_features", "mixture", "replicated_identity"]
)
@pytest.mark.parametrize("bad", BAD_SIZES)
def test_closed_form_validates_every_argument_on_every_path(kind, bad):
    """Fuzz: gamma, n_in and replicas were never validated on paths that do not use them."""
    ok = dict(n_out=4, n_in=2, replicas=2, gamma=0.5)
    for name in ("n_out", "n_in", "replicas", "gamma"):
        if name == "gamma" and isinstance(bad, float) and bad == 2.5:
            bad_value = 2.5  # outside [0, 1]
        else:
            bad_value = bad
        with pytest.raises((ValueError, TypeError), match=name):
            symmetry.closed_form_correlations(kind, **{**ok, name: bad_value})
    with pytest.raises(ValueError, match="replicas"):
        symmetry.closed_form_correlations(kind, **{**ok, "replicas": None})
    with pytest.raises(ValueError, match="replicas"):
        symmetry.closed_form_correlations(kind, **{**ok, "replicas": 5})  # > n_out


def test_closed_form_requires_what_the_kind_needs():
    with pytest.raises(ValueError, match="gamma"):
        symmetry.closed_form_correlations("mixture", 4)
    with pytest.raises(ValueError, match="n_in"):
        symmetry.closed_form_correlations("replicated_identity", 4)
    with pytest.raises(ValueError, match="n_out"):
        symmetry.closed_form_correlations("replicated_features", replicas=2)
    with pytest.raises(TypeError, match="kind"):
        symmetry.closed_form_correlations(["random"])
    assert symmetry.closed_form_correlations("replicated_features", 6, replicas=3).c_f == pytest.approx(2 / 5)


@pytest.mark.parametrize("axis", [2**64, -(2**64), 2, -3, 1.5, "0", True])
def test_perturbation_ratio_axis_is_validated(axis):
    """Fuzz: axis=2**64 raised OverflowError."""
    with pytest.raises(ValueError, match="axis"):
        symmetry.perturbation_ratio(np.ones((2, 3)), axis=axis)


def test_perturbation_ratio_rejects_empty():
    for a in (np.zeros((0, 3)), np.zeros((3, 0))):
        with pytest.raises(ValueError, match="empty"):
            symmetry.perturbation_ratio(a)


def _naive_propagation(alpha, eps, kinds, slope, gamma=None):
    """App. G / H written out with the -1/slope factors (reference for moderate sizes)."""
    h = alpha + eps
    out = [symmetry.perturbation_ratio(h)]
    for layer, kind in enumerate(kinds, start=1):
        x = leaky_reference(h, slope)
        n = x.shape[-1]
        if gamma is not None:
            m = gamma[layer - 1] * np.eye(n) + (1 - gamma[layer - 1]) * np.ones((n, n)) / n
        else:
            m = np.eye(n) if kind == "I" else np.ones((n, n)) / n
        h = (-1.0 / slope if layer % 2 else 1.0) * x @ m.T
        out.append(symmetry.perturbation_ratio(h))
    return np.array(out)


@given(seed=st.integers(0, 1000), kinds=st.lists(st.sampled_from("I1"), min_size=1, max_size=10), mix=st.booleans())
def test_propagation_matches_the_naive_stack_and_survives_extreme_scales(seed, kinds, mix):
    rng = np.random.default_rng(seed)
    alpha = np.repeat(rng.standard_normal((4, 1)), 5, axis=1)
    eps = 0.3 * rng.standard_normal((4, 5))  # flips signs: the nonlinear regime
    gamma = rng.uniform(0, 1, len(kinds)) if mix else None
    r = symmetry.propagate_perturbation(alpha, eps, kinds, slope=0.1, gamma=gamma)
    np.testing.assert_allclose(r, _naive_propagation(alpha, eps, kinds, 0.1, gamma), rtol=1e-9, atol=1e-12)
    # positive homogeneity: the ratios do not depend on a common scale, even where h^0 = alpha + eps overflows
    m = max(np.abs(alpha).max(), np.abs(eps).max())  # at max entry 1.5e308, alpha + eps overflows
    big = symmetry.propagate_perturbation(alpha / m * 1.5e308, eps / m * 1.5e308, kinds, slope=0.1, gamma=gamma)
    np.testing.assert_allclose(big, r, rtol=1e-9, atol=1e-12)
    tiny_slope = symmetry.propagate_perturbation(
        alpha, eps, kinds * 30, slope=5e-324, gamma=None if gamma is None else np.tile(gamma, 30)
    )
    assert np.all(np.isfinite(tiny_slope)) and np.all((tiny_slope >= 0) & (tiny_slope <= 1))


def test_propagate_perturbation_bounded_depth_and_kinds():
    a = np.ones((2, 3))
    with pytest.raises(ValueError, match="MAX_PROPAGATION_DEPTH"):
        symmetry.propagate_perturbation(a, a, ["I"] * (symmetry.MAX_PROPAGATION_DEPTH + 1))
    with pytest.raises(TypeError, match="kinds"):
        symmetry.propagate_perturbation(a, a, 3)
    for slope in (0.0, -0.1, 1.5, np.nan):
        with pytest.raises(ValueError, match="slope"):
            symmetry.propagate_perturbation(a, a, ["I"], slope=slope)
    with pytest.raises(ValueError, match="empty"):
        symmetry.propagate_perturbation(np.zeros((0, 3)), np.zeros((0, 3)), ["I"])


@pytest.mark.parametrize("args", [(1e300, 2), (10**12, 2), (2**64, 2), (2, 1e300), (2, 10**12), (2, 2**64)])
def test_subnetwork_counts_refuse_sizes_that_cannot_be_computed(args, deadline):
    """Fuzz: d or n_layers = 10**12 hung (2^(d L) has d L bits)."""
    start = time.perf_counter()
    with deadline(HANG_LIMIT_S), pytest.raises(ValueError, match="MAX_SUBNETWORK_BITS"):
        symmetry.subnetwork_counts(*args)
    with deadline(HANG_LIMIT_S), pytest.raises(ValueError, match="MAX_SUBNETWORK_BITS|n_layers must be <= 64"):
        symmetry.subnetwork_counts(*args, include_empty=False)
    assert time.perf_counter() - start < 1.0
    with pytest.raises(ValueError, match="MAX_SUBNETWORK_BITS_EXCLUSIVE"):
        symmetry.subnetwork_counts(2**14, 64, include_empty=False)


# --- one leaky slope name, sigma_w2, results, hints, doctests -------------

import dataclasses  # noqa: E402
import doctest  # noqa: E402
import inspect  # noqa: E402
import types  # noqa: E402

#: The symmetric initialisations of :mod:`meanfield.init` (Blumenfeld et al. 2020: ConstNet / LeakyNet weights): the
#: public names of the private module that defines ``constnet`` (recorded in tests/contracts/public_api.txt).
_INIT_SYMMETRY = inspect.getmodule(init.constnet)
init_symmetry = types.SimpleNamespace(
    __name__="meanfield.init (symmetric initialisations)",
    __all__=list(_INIT_SYMMETRY.__all__),
    **{name: getattr(init, name) for name in _INIT_SYMMETRY.__all__},
)


def test_leaky_slope_is_called_slope_everywhere():
    """Issue: ``rho`` was the leaky slope in symmetry and init; meanfield.kurtosis and init call it ``slope``."""
    a = np.ones((2, 3))
    for call in (
        lambda **kw: symmetry.propagate_perturbation(a, a, ["I"], **kw),
        lambda **kw: init.leakynet(["I"], 3, **kw),
    ):
        call(slope=0.5)
        with pytest.raises(TypeError, match="rho"):
            call(rho=0.5)
    for f in (symmetry.propagate_perturbation, init.leakynet):
        assert "slope" in inspect.signature(f).parameters and "rho" not in inspect.signature(f).parameters
    assert not hasattr(symmetry, "_leaky")  # the private leaky ReLU copy is gone (meanfield.activations has it)


def test_propagate_perturbation_uses_the_library_leaky_relu(monkeypatch):
    """Issue: leaky ReLU was defined several times; propagate_perturbation takes meanfield.activations's."""
    calls = []
    real = get_activation

    def spy(name, **params):
        calls.append((name, params))
        return real(name, **params)

    monkeypatch.setattr(symmetry, "get_activation", spy)
    symmetry.propagate_perturbation(np.ones((2, 3)), 0.1 * np.eye(2, 3), ["I", "1"], slope=0.25)
    assert calls == [("leaky_relu", {"slope": 0.25})]


@given(half=st.integers(1, 6), seed=st.integers(0, 1000), sigma_w2=st.sampled_from([0.0, 0.5, 1.0, 2.0, 9.0]))
def test_looks_linear_delta_orthogonal_takes_sigma_w2(half, seed, sigma_w2):
    """Issue: ``gain`` and ``sigma_w2`` both scaled weights; U = sqrt(sigma_w2) Q with Q Haar (gain = sqrt(sigma_w2))."""
    n = 2 * half
    w = init.looks_linear_delta_orthogonal(n, kernel_shape=(3,), sigma_w2=sigma_w2, rng=seed)
    q = init.haar_orthogonal(half, half, rng=seed)  # the same stream: the construction draws Q first
    np.testing.assert_allclose(w[1], np.block([[q, -q], [-q, q]]) * math.sqrt(sigma_w2), rtol=0, atol=EXACT)
    assert np.all(w[0] == 0) and np.all(w[2] == 0)
    u = w[1][:half, :half]
    np.testing.assert_allclose(u @ u.T, sigma_w2 * np.eye(half), atol=EXACT)


def test_looks_linear_delta_orthogonal_rejects_gain_and_bad_sigma_w2():
    with pytest.raises(TypeError, match="gain"):
        init.looks_linear_delta_orthogonal(4, gain=1.0)
    for bad in (-1.0, np.nan, np.inf):
        with pytest.raises(ValueError, match="sigma_w2"):
            init.looks_linear_delta_orthogonal(4, sigma_w2=bad)
    for bad in (True, 1 + 1j, "1", [1.0]):
        with pytest.raises(TypeError, match="sigma_w2"):
            init.looks_linear_delta_orthogonal(4, sigma_w2=bad)
    # the default is the unscaled construction of the previous version (same numbers)
    np.testing.assert_array_equal(
        init.looks_linear_delta_orthogonal(4, rng=3), init.looks_linear_delta_orthogonal(4, sigma_w2=1.0, rng=3)
    )


def test_permutation_count_lives_in_landscape_only():
    """Issue: symmetry.permutation_count (Orhan 2017) sat apart from landscape.permutation_counts."""
    from meanfield import landscape

    assert not hasattr(symmetry, "permutation_count") and "permutation_count" not in symmetry.__all__
    assert not hasattr(symmetry, "MAX_PERMUTATION_UNITS")
    assert landscape.permutation_counts([3, 4]).undifferentiated == 6 * 24  # what permutation_count([3, 4]) gave


RESULTS = [
    (symmetry.ClosedFormCorrelations, lambda: symmetry.closed_form_correlations("mixture", 4, gamma=0.5), {"c_f": 0.0}),
    (symmetry.SubnetworkCounts, lambda: symmetry.subnetwork_counts(2, 3), {"d": 5}),
    (init.ConstNetInit, lambda: init.constnet((2, 4), 1, n_input=1, n_classes=2, kernel_shape=(3,)), {"stride": 1}),
]


@pytest.mark.parametrize("cls,make,change", RESULTS, ids=[r[0].__name__ for r in RESULTS])
def test_result_dataclasses_are_frozen_results_with_replace(cls, make, change):
    """Issue: every public result is @dataclass(frozen=True) inheriting meanfield._results.Result."""
    r = make()
    assert isinstance(r, cls) and issubclass(cls, Result)
    assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(r, next(iter(change)), 0)
    r2 = r.replace(**change)
    assert type(r2) is cls and all(getattr(r2, k) == v for k, v in change.items())
    untouched = [f.name for f in dataclasses.fields(cls) if f.name not in change]
    assert all(getattr(r2, k) is getattr(r, k) for k in untouched)


@pytest.mark.parametrize("module", [symmetry, init_symmetry], ids=lambda m: m.__name__)
def test_public_functions_have_complete_type_hints(module, missing_type_hints):
    """Type hints on every public function and method (parameters and return)."""
    assert missing_type_hints(module) == []


@pytest.mark.parametrize("module", [symmetry, init_symmetry], ids=lambda m: m.__name__)
def test_docstring_examples_pass(module):
    """The modules' >>> examples run (python -m pytest --doctest-modules)."""
    if inspect.ismodule(module):
        result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE, verbose=False)
    else:  # public names of a private module: their docstrings, run in their defining module's globals
        runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE, verbose=False)
        for name in module.__all__:
            obj = getattr(module, name)
            for test in doctest.DocTestFinder().find(obj, name, module=inspect.getmodule(obj)):
                runner.run(test)
        result = runner.summarize(verbose=False)
    assert result.attempted > 0 and result.failed == 0


COMPLEX_INTEGER_ARGUMENTS = {
    "n": lambda c: symmetry.effective_width(0.5, c),
    "n_out": lambda c: symmetry.closed_form_correlations("random", n_out=c),
    "n_in": lambda c: symmetry.closed_form_correlations("random", n_in=c),
    "replicas": lambda c: symmetry.closed_form_correlations("random", replicas=c),
    "axis": lambda c: symmetry.perturbation_ratio(np.ones((2, 2)), axis=c),
    "d": lambda c: symmetry.subnetwork_counts(c, 2),
    "n_layers": lambda c: symmetry.subnetwork_counts(2, c),
}


@pytest.mark.parametrize("name", sorted(COMPLEX_INTEGER_ARGUMENTS))
@pytest.mark.parametrize("value", [1 + 0j, np.complex128(1), np.array(1 + 1j)])
def test_complex_integer_arguments_are_type_errors(name, value):
    """Integer arguments given a complex number raised ValueError; complex input is a TypeError."""
    with pytest.raises(TypeError, match=name):
        COMPLEX_INTEGER_ARGUMENTS[name](value)
