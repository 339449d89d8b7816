"""Tests of meanfield.landscape (Orhan 2017)."""

import itertools
import math
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meanfield import landscape as L

#: Relative agreement of the Numba loss with the NumPy reference: both sum <= 25 terms of O(10)
#: in double precision, so rounding is < 1e-13 relative.
LOSS_RTOL = 1e-12
#: Rank / singularity threshold on singular values relative to the largest (double precision
#: Hessians of O(1) entries built from a handful of products).
SING_RTOL = 1e-10
#: Finite-difference step and tolerance for Hessian checks (central differences, O(h^2) = 1e-8).
FD_H = 1e-4
FD_TOL = 1e-6

ARCHS = list(L.ARCHITECTURES)


@pytest.fixture(scope="module")
def task():
    return L.regression_task(grid_size=4, rng=3)


# ------------------------------------------------------------------ enumerator vs brute force


def _brute_force(arch, x, t, n_layers, bias_bit, biases=None, rtol=1e-12):
    """Pure-Python landscape: losses, better-neighbour counts, walks, basins."""
    n = L.n_binary_parameters(n_layers, x.shape[1], bias_bit)
    losses = []
    for c in range(2**n):
        mats, w, b = L.decode_configuration(c, n_layers, x.shape[1], bias_bit)
        y = L.forward_binary(arch, x, mats, w, b, biases)
        losses.append(float(np.mean((y - t) ** 2)))
    better, succ = [], []
    for c in range(2**n):
        lc = losses[c]
        nb, best, bl = 0, c, lc
        for k in range(n):
            d = c ^ (1 << k)
            if losses[d] < lc - rtol * max(abs(lc), abs(losses[d])):
                nb += 1
                if losses[d] < bl - rtol * max(abs(bl), abs(losses[d])):
                    best, bl = d, losses[d]
        better.append(nb)
        succ.append(best)
    lengths, ends = [], []
    for c in range(2**n):
        x_, k = c, 0
        while succ[x_] != x_:
            x_, k = succ[x_], k + 1
        lengths.append(k)
        ends.append(x_)
    return np.array(losses), np.array(better), np.array(lengths), np.array(ends)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("n_layers,bias_bit", [(3, False), (3, True), (4, False)])
def test_enumerator_matches_brute_force(task, arch, n_layers, bias_bit):
    r = L.binary_landscape(arch, task.inputs, task.targets, n_layers=n_layers, output_bias_bit=bias_bit)
    losses, better, lengths, ends = _brute_force(arch, task.inputs, task.targets, n_layers, bias_bit)
    np.testing.assert_allclose(r.losses, losses, rtol=LOSS_RTOL, atol=0)
    np.testing.assert_array_equal(r.n_better, better)
    np.testing.assert_array_equal(r.walk_length, lengths)
    np.testing.assert_array_equal(r.walk_end, ends)
    assert r.n_local_minima == int(np.sum(better == 0))


def test_enumerator_with_random_biases_matches_brute_force(task):
    rng = np.random.default_rng(1)
    biases = rng.standard_normal((3, 2))
    r = L.binary_landscape("residual", task.inputs, task.targets, biases=biases, n_layers=4)
    losses, better, _, _ = _brute_force("residual", task.inputs, task.targets, 4, False, biases)
    np.testing.assert_allclose(r.losses, losses, rtol=LOSS_RTOL)
    np.testing.assert_array_equal(r.n_better, better)


def test_forward_binary_matches_paper_equations():
    """Eqs. 1-4 written out by hand for one 2-unit hidden layer."""
    x = np.array([[0.3, -0.7]])
    w1 = np.array([[1.0, -1.0], [-1.0, -1.0]])
    wo = np.array([1.0, -1.0])
    relu = np.maximum(w1 @ x[0], 0)
    expected = {
        "plain": relu,
        "residual": 2 / 3 * (relu + x[0]),
        "hyper_residual": 2 / 3 * (relu + x[0]),  # l = 1: 2/(l+2) [f + x_1]
        "path_residual": 2 / 4 * (relu + x[0].sum()),
    }
    for arch, h in expected.items():
        assert L.forward_binary(arch, x, [w1], wo)[0] == pytest.approx(wo @ h, rel=1e-15)
    # second hidden layer of the hyper-residual net: 2/(2+2) [f(W_2 x_2) + x_2 + x_1]
    x2 = 2 / 3 * (relu + x[0])
    h3 = 0.5 * (np.maximum(w1 @ x2, 0) + x2 + x[0])
    assert L.forward_binary("hyper_residual", x, [w1, w1], wo)[0] == pytest.approx(wo @ h3, rel=1e-14)


@given(arch=st.sampled_from(ARCHS), seed=st.integers(0, 50), n_layers=st.integers(3, 4))
@settings(max_examples=12)
def test_every_neighbour_pair_is_better_worse_or_tied(arch, seed, n_layers):
    """Each unordered neighbour pair is counted once as 'better' (from the worse side) or twice as tied."""
    t = L.regression_task(3, rng=seed)
    r = L.binary_landscape(arch, t.inputs, t.targets, n_layers=n_layers)
    n_pairs = r.n_params * r.n_configurations // 2
    assert int(r.n_better.sum()) + int(r.n_equal.sum()) // 2 == n_pairs
    assert int(r.n_equal.sum()) % 2 == 0


def _swap_hidden_units(c, n_layers, g):
    """Configuration of the net with the two units of hidden layer g + 2 swapped (rows of W_g, columns of W_{g+1})."""
    mats, w, _b = L.decode_configuration(c, n_layers, 2)
    mats = [m.copy() for m in mats]
    mats[g] = mats[g][::-1]
    if g + 1 < len(mats):
        mats[g + 1] = mats[g + 1][:, ::-1]
    else:
        w = w[::-1]
    params = np.concatenate([m.ravel() for m in mats] + [w])
    n = params.size
    return int(sum(1 << (n - 1 - j) for j in range(n) if params[j] > 0))


def test_permutation_symmetry_plain_broken_by_residual(task):
    """Plain: swapping two hidden units leaves the loss unchanged for every configuration (Sec. 2.1);
    residual: the identity skip orders the units, so the swap changes the loss."""
    n_layers = 4
    plain = L.binary_landscape("plain", task.inputs, task.targets, n_layers=n_layers)
    res = L.binary_landscape("residual", task.inputs, task.targets, n_layers=n_layers)
    perm = np.array([_swap_hidden_units(c, n_layers, 0) for c in range(plain.n_configurations)])
    np.testing.assert_allclose(plain.losses[perm], plain.losses, rtol=LOSS_RTOL)
    changed = ~np.isclose(res.losses[perm], res.losses, rtol=1e-9)
    assert changed.mean() > 0.5


def test_parameter_count():
    assert L.n_binary_parameters(7, 2) == 22  # what eqs. 1-4 imply
    assert L.n_binary_parameters(7, 2, output_bias_bit=True) == 23  # the paper's count


@pytest.mark.parametrize("arch", ARCHS)
def test_basins_partition_and_walks_consistent(task, arch):
    r = L.binary_landscape(arch, task.inputs, task.targets, n_layers=5)
    n_conf = r.n_configurations
    assert r.basin_sizes.sum() == n_conf
    assert np.all(r.basin_sizes >= 1)  # every local minimum is in its own basin
    assert set(np.unique(r.walk_end)) == set(r.local_minima)
    # walk length = 1 + successor's walk length, zero exactly at local minima
    nonmin = r.successor != np.arange(n_conf)
    np.testing.assert_array_equal(r.walk_length[nonmin], r.walk_length[r.successor[nonmin]] + 1)
    assert np.all(r.walk_length[~nonmin] == 0)
    assert np.all(r.losses[r.successor[nonmin]] < r.losses[nonmin])
    # successor is a neighbour (one bit) and the best one
    diff = r.successor[nonmin] ^ np.flatnonzero(nonmin)
    assert np.all((diff & (diff - 1)) == 0)
    assert np.array_equal(np.flatnonzero(r.n_better == 0), r.local_minima)
    assert r.better_histogram().sum() == n_conf
    assert r.n_strict_local_minima <= r.n_local_minima


def test_ties_plain_dead_networks(task):
    """Every configuration with an identically zero output has loss mean(t^2): they tie exactly."""
    r = L.binary_landscape("plain", task.inputs, task.targets, n_layers=5)
    assert r.n_zero_output > 1
    dead = np.abs(r.losses - np.mean(task.targets**2)) <= LOSS_RTOL * np.mean(task.targets**2)
    assert dead.sum() >= r.n_zero_output
    assert np.unique(r.losses[dead]).size == 1  # computed by the same kernel: bitwise equal
    assert r.n_tied_configurations >= r.n_zero_output


def test_exact_ties_versus_tolerance(task):
    """rtol = 0 can only find at least as many better neighbours as rtol > 0."""
    r0 = L.binary_landscape("plain", task.inputs, task.targets, n_layers=4, rtol=0.0)
    r1 = L.binary_landscape("plain", task.inputs, task.targets, n_layers=4, rtol=1e-12)
    assert np.all(r0.n_better >= r1.n_better)


@pytest.mark.slow
def test_landscape_ordering_small(task):
    """Seven layers, two units (the paper's net): plain is the most rugged, hyper-residual the least."""
    counts = {a: L.binary_landscape(a, task.inputs, task.targets).n_local_minima for a in ARCHS}
    assert counts["plain"] > counts["path_residual"] > counts["residual"] > counts["hyper_residual"]


def test_landscape_errors(task):
    with pytest.raises(ValueError, match="architecture"):
        L.binary_landscape("dense", task.inputs, task.targets)
    with pytest.raises(ValueError, match="targets"):
        L.binary_landscape("plain", task.inputs, task.targets[:-1])
    with pytest.raises(ValueError, match="biases"):
        L.binary_landscape("plain", task.inputs, task.targets, biases=np.zeros((2, 2)))
    with pytest.raises(ValueError, match="finite"):
        L.binary_landscape("plain", task.inputs * np.nan, task.targets)
    with pytest.raises(ValueError, match="rtol"):
        L.binary_landscape("plain", task.inputs, task.targets, rtol=-1)


def test_regression_task_seeded():
    a, b = L.regression_task(5, rng=4), L.regression_task(5, rng=4)
    np.testing.assert_array_equal(a.targets, b.targets)
    assert a.inputs.shape == (25, 2)
    assert not np.array_equal(a.targets, L.regression_task(5, rng=5).targets)


# ------------------------------------------------------------------ three-layer linear dynamics


def _fd_hessian(f, x, h=FD_H):
    n = x.size
    hess = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            e_i, e_j = np.eye(n)[i] * h, np.eye(n)[j] * h
            hess[i, j] = (f(x + e_i + e_j) - f(x + e_i - e_j) - f(x - e_i + e_j) + f(x - e_i - e_j)) / (4 * h * h)
    return hess


def _pack(a, b):
    return np.concatenate([a.T.ravel(), b.T.ravel()])


def _unpack(theta, n, m):
    return theta[: n * m].reshape(m, n).T, theta[n * m :].reshape(m, n).T


UV = np.array([[1, 1], [1, -1]]) / math.sqrt(2)


@pytest.mark.parametrize("skip", [False, True])
def test_three_layer_hessian_matches_finite_differences(skip):
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(2, 2)), rng.normal(size=(2, 2))
    s = np.array([3.0, 1.5])
    u = v = UV if skip else None
    h = L.three_layer_hessian(a, b, s, u, v).full
    f = lambda th: L.three_layer_energy(*_unpack(th, 2, 2), s, u, v)  # noqa: E731
    np.testing.assert_allclose(h, _fd_hessian(f, _pack(a, b)), atol=FD_TOL)
    # eqs. 29-30 / 32-33 entries of the aa block
    B = b + (UV if skip else 0)
    hh = L.three_layer_hessian(a, b, s, u, v)
    assert hh.aa[0, 0] == pytest.approx(np.sum(B[0] ** 2))
    assert hh.aa[0, 1] == pytest.approx(np.sum(B[0] * B[1]))
    assert hh.aa[2, 3] == pytest.approx(hh.aa[0, 1])  # independent of the mode index


def test_gradient_field_is_minus_gradient():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(3, 2)), rng.normal(size=(3, 2))
    s = np.array([2.0, 0.7])
    da, db = L.three_layer_gradient_field(a, b, s)
    f = lambda th: L.three_layer_energy(*_unpack(th, 3, 2), s)  # noqa: E731
    th = _pack(a, b)
    grad = np.array([(f(th + FD_H * e) - f(th - FD_H * e)) / (2 * FD_H) for e in np.eye(th.size)])
    np.testing.assert_allclose(-_pack(da, db), grad, atol=FD_TOL)
    # eq. 11 written out
    A1, A2, B1, B2 = a[:, 0], a[:, 1], b[:, 0], b[:, 1]
    np.testing.assert_allclose(da[:, 0], (s[0] - A1 @ B1) * B1 - (A1 @ B2) * B2)
    # the gradient of eq. 10 for b^1 (the paper's eq. 9): (s1 - a1.b1) a1 - (a2.b1) a2
    np.testing.assert_allclose(db[:, 0], (s[0] - A1 @ B1) * A1 - (A2 @ B1) * A2)


def _smallest_sv(m):
    sv = np.linalg.svd(m, compute_uv=False)
    return sv[-1] / sv[0]


def test_supp_note2_block_singular_on_hyperplane_plain_not_residual():
    rng = np.random.default_rng(2)
    s = np.array([3.0, 1.5])
    for _ in range(5):
        a = rng.normal(size=(2, 2))
        b = rng.normal(size=(2, 2))
        b_sym = b.copy()
        b_sym[1] = b_sym[0]  # hyperplane b_1^beta = b_2^beta for all beta
        assert _smallest_sv(L.three_layer_hessian(a, b_sym, s).aa) < SING_RTOL
        assert _smallest_sv(L.three_layer_hessian(a, b, s).aa) > 1e-6  # regular off it
        assert _smallest_sv(L.three_layer_hessian(a, b_sym, s, UV, UV).aa) > 1e-6  # skip breaks it
        b_zero = b.copy()
        b_zero[0] = 0.0  # the additional hyperplane b_i = 0
        assert _smallest_sv(L.three_layer_hessian(a, b_zero, s).aa) < SING_RTOL
        # with skips the singular set is shifted to b_i + u_i = b_j + u_j
        b_shift = b.copy()
        b_shift[1] = b_shift[0] + UV[0] - UV[1]
        assert _smallest_sv(L.three_layer_hessian(a, b_shift, s, UV, UV).aa) < SING_RTOL


def test_full_hessian_regular_on_hyperplane_unless_fitted():
    """Derivation vs Supp. Note 2: the full Hessian (with the a-b cross block) stays regular on
    b_1 = b_2; its a_1^alpha / a_2^alpha columns coincide only where row alpha of R vanishes."""
    rng = np.random.default_rng(4)
    s = np.array([3.0, 1.5])
    for _ in range(5):
        a = rng.normal(size=(2, 2))
        b = rng.normal(size=(2, 2))
        b[1] = b[0]
        h = L.three_layer_hessian(a, b, s).full
        assert _smallest_sv(h) > 1e-4
        r = np.diag(s) - a.T @ b
        col_diff = h[:, 0] - h[:, 1]  # a_1^1 minus a_2^1
        np.testing.assert_allclose(col_diff[4:6], [-r[0, 0], r[0, 0]], atol=1e-12)
        np.testing.assert_allclose(col_diff[:4], 0, atol=1e-12)


def test_flow_decreases_energy_and_converges():
    rng = np.random.default_rng(3)
    s = np.array([3.0, 1.5])
    a0, b0 = rng.normal(0, 0.1, (2, 2)), rng.normal(0, 0.1, (2, 2))
    t = np.linspace(0, 40, 200)
    for uv in (None, UV):
        tr = L.three_layer_flow(a0, b0, s, t, uv, uv)
        assert np.all(np.diff(tr.energy) <= 1e-9)
        assert tr.energy[-1] < 1e-6


def test_fig5a_residual_faster_than_plain():
    """Small random init (sd 1e-4): the residual net reaches the solution much sooner (Fig. 5a)."""
    rng = np.random.default_rng(0)
    s = np.array([3.0, 1.5])
    a0, b0 = rng.normal(0, 1e-4, (2, 2)), rng.normal(0, 1e-4, (2, 2))
    t = np.linspace(0, 20, 401)
    plain = L.three_layer_flow(a0, b0, s, t)
    res = L.three_layer_flow(a0, b0, s, t, UV, UV)
    half = 0.5 * plain.energy[0]
    t_plain = t[np.argmax(plain.energy < half)]
    t_res = t[np.argmax(res.energy < half)]
    assert t_res < t_plain / 3


# ------------------------------------------------------------------ mode strengths (eqs. 21-23)


@pytest.mark.parametrize("arch,saddle", [("plain", (0, 0)), ("residual", (-1, -1)), ("hyper_residual", (-1, -2))])
def test_fig6a_saddles(arch, saddle):
    s = 2.0
    p = L.mode_saddle(arch, 2)
    np.testing.assert_array_equal(p, saddle)
    np.testing.assert_allclose(L.mode_gradient(p, s, arch), 0, atol=0)
    ev = np.linalg.eigvalsh(L.mode_hessian(p, s, arch))
    np.testing.assert_allclose(ev, [-s, s])  # a saddle: one unstable direction


@pytest.mark.parametrize("arch", ["plain", "residual", "hyper_residual"])
@given(a=st.lists(st.floats(-2, 2), min_size=2, max_size=5), s=st.floats(0.1, 4))
@settings(max_examples=20)
def test_mode_hessian_and_gradient_match_finite_differences(arch, a, s):
    a = np.array(a)
    f = lambda x: L.mode_energy(x, s, arch)  # noqa: E731
    scale = 1 + np.max(np.abs(L.mode_hessian(a, s, arch)))
    np.testing.assert_allclose(L.mode_hessian(a, s, arch), _fd_hessian(f, a), atol=FD_TOL * scale * 100)
    grad = np.array([(f(a + FD_H * e) - f(a - FD_H * e)) / (2 * FD_H) for e in np.eye(a.size)])
    np.testing.assert_allclose(L.mode_gradient(a, s, arch), grad, atol=FD_TOL * scale * 100)


@given(x=st.floats(-2, 2), y=st.floats(-2, 2), s=st.floats(0.1, 4))
def test_two_layer_determinant_closed_form(x, y, s):
    """det H = (s - u)(3u - s) for E = (s - x y)^2 / 2 (residual: x = a + 1, y = b + 1)."""
    h = L.mode_hessian([x - 1, y - 1], s, "residual")
    u = x * y
    assert np.linalg.det(h) == pytest.approx((s - u) * (3 * u - s), abs=1e-9)


def test_supp_note3_diagonal_is_not_singular_but_invariant():
    """Derivation vs Supp. Note 3: on a_i = a_j the Hessian is regular unless u = s (or u = s/3 for two layers)."""
    s = 2.0
    for a in ([0.3, 0.3], [0.5, -0.2, 0.5], [1.2, 1.2, 0.1, -0.4]):
        a = np.array(a)
        h = L.mode_hessian(a, s, "residual")
        assert _smallest_sv(h) > 1e-6
        e = np.zeros(a.size)
        i, j = [k for k in range(a.size) if np.sum(a == a[k]) > 1][:2]
        e[i], e[j] = 1, -1
        x = a + 1
        lam = (s - np.prod(x)) * np.prod(np.delete(x, [i, j]))
        np.testing.assert_allclose(h @ e, lam * e, atol=1e-12)
        g = L.mode_gradient(a, s, "residual")
        assert g[i] == pytest.approx(g[j])  # the flow keeps a_i = a_j
    # on the solution manifold u = s the Hessian has rank one
    h = L.mode_hessian([math.sqrt(2) - 1, math.sqrt(2) - 1], 2.0, "residual")
    assert _smallest_sv(h) < SING_RTOL
    # u = s / 3
    h = L.mode_hessian([math.sqrt(2 / 3) - 1, math.sqrt(2 / 3) - 1], 2.0, "residual")
    assert _smallest_sv(h) < SING_RTOL


def test_fig6b_ten_layers_ordering():
    """10-layer nets: hyper-residual and residual converge, plain stays near zero for a long time (Fig. 6b)."""
    rng = np.random.default_rng(0)
    a0 = rng.normal(0, 0.1, 9)
    s = 3.0
    t = np.linspace(0, 5, 101)
    out = {arch: L.mode_flow(a0, s, t, arch) for arch in ("plain", "residual", "hyper_residual")}
    assert abs(out["plain"].product[-1] - s) > 0.9 * s
    assert abs(out["residual"].product[-1] - s) < 1e-3
    assert abs(out["hyper_residual"].product[-1] - s) < 1e-3


# ------------------------------------------------------------------ skip matrices


@pytest.mark.parametrize("k", [16, 8, 4, 2, 1])
def test_folded_orthogonal(k):
    m = L.folded_orthogonal(16, k, rng=0)
    assert np.linalg.matrix_rank(m) == k
    np.testing.assert_allclose(m[:, :k].T @ m[:, :k], np.eye(k), atol=1e-12)
    np.testing.assert_array_equal(m[:, k:], m[:, np.arange(k, 16) % k])
    with pytest.raises(ValueError, match="n_orthonormal"):
        L.folded_orthogonal(16, 3)


@given(n=st.integers(1, 12), tau=st.floats(0, 0.6), seed=st.integers(0, 100))
@settings(max_examples=30)
def test_controlled_skip_matrix_spectra(n, tau, seed):
    m = L.controlled_skip_matrix(n, tau, rng=seed)
    np.testing.assert_allclose(np.abs(np.linalg.eigvals(m)), 1.0, atol=1e-6)
    gram = np.sort(np.linalg.eigvalsh(m.T @ m))[::-1]
    np.testing.assert_allclose(gram / gram[0], L.column_covariance_spectrum(n, tau), rtol=1e-8, atol=1e-12)
    assert np.prod(gram) == pytest.approx(1.0, rel=1e-8)


def test_controlled_skip_matrix_tau_zero_is_orthogonal():
    m = L.controlled_skip_matrix(10, 0.0, rng=1)
    np.testing.assert_allclose(m.T @ m, np.eye(10), atol=1e-12)


def test_supp4_recipe_eigenvalues_on_unit_circle():
    m = L.supp4_skip_matrix(8, 0.5, rng=2)
    np.testing.assert_allclose(np.abs(np.linalg.eigvals(m)), 1.0, atol=1e-8)


# ------------------------------------------------------------------ rescaling and permutations


def test_rescaling_symmetry_plain_only():
    rng = np.random.default_rng(0)
    n, depth = 16, 6
    x = rng.normal(size=(32, n))
    ws = [rng.normal(0, math.sqrt(2 / n), (n, n)) for _ in range(depth)]
    bs = [rng.normal(0, 0.1, n) for _ in range(depth)]
    assert L.rescaling_deviation("plain", x, ws, 1, 4, 10.0, bs) < 1e-12
    assert L.rescaling_deviation("residual", x, ws, 1, 4, 10.0, bs) > 0.1
    assert L.rescaling_deviation("hyper_residual", x, ws, 1, 4, 10.0, bs) > 0.1


def test_mode_overflow_is_an_error():
    with pytest.raises(ValueError, match="overflows"):
        L.mode_energy(np.zeros(400), 1.0, "hyper_residual")  # 400! overflows


def _brute_force_class_respecting(n, k):
    """Permutations of range(n) that map every class {c d, ..., c d + d - 1} onto a class (enumerated)."""
    d = n // k
    return sum(
        all(len({perm[c * d + j] // d for j in range(d)}) == 1 for c in range(k))
        for perm in itertools.permutations(range(n))
    )


def test_permutation_counts():
    p = L.permutation_counts(128, 4)
    assert p.undifferentiated == math.factorial(128)
    assert p.class_respecting == 24 * math.factorial(32) ** 4
    assert (p.widths, p.n_classes, p.n) == ((128,), (4,), 128)
    for n in range(2, 13):
        for k in range(2, n):
            if n % k == 0:
                q = L.permutation_counts(n, k)
                assert q.class_respecting < q.undifferentiated  # 1 < K < n
    assert L.permutation_counts(6, 1).class_respecting == L.permutation_counts(6, 6).class_respecting == 720
    with pytest.raises(ValueError, match="n_classes"):
        L.permutation_counts(10, 3)


@pytest.mark.parametrize("n,k", [(1, 1), (4, 2), (6, 2), (6, 3), (6, 6), (8, 4)])
def test_permutation_counts_by_enumeration(n, k):
    """K! (d!)^K against the permutations of n units that respect K classes, enumerated; n! likewise."""
    p = L.permutation_counts(n, k)
    assert p.class_respecting == _brute_force_class_respecting(n, k)
    assert p.undifferentiated == _brute_force_class_respecting(n, 1)


def test_permutation_counts_of_several_layers():
    """One function for Orhan 2017: prod_l n_l! of a plain net (formerly symmetry.permutation_count) and
    the class-respecting count per layer."""
    p = L.permutation_counts([3, 4])
    assert (p.undifferentiated, p.class_respecting, p.widths, p.n_classes, p.n) == (144, 144, (3, 4), (1, 1), 7)
    assert L.permutation_counts(np.array([3, 4])) == p
    q = L.permutation_counts([4, 6, 1], [2, 3, 1])
    assert q.undifferentiated == math.factorial(4) * math.factorial(6)
    assert q.class_respecting == _brute_force_class_respecting(4, 2) * _brute_force_class_respecting(6, 3)
    assert L.permutation_counts([4, 6], 2).class_respecting == (2 * 2**2) * (2 * 6**2)  # one K for every layer
    assert q.log10_ratio == pytest.approx(math.log10(q.undifferentiated / q.class_respecting), rel=1e-12)
    empty = L.permutation_counts([])
    assert (empty.undifferentiated, empty.class_respecting, empty.widths, empty.n) == (1, 1, (), 0)
    assert empty.log10_ratio == 0.0


# ------------------------------------------------------------------ validation and figures (reduced size)


@pytest.mark.slow
def test_validation_landscape_rows_pass():
    from meanfield.validation import landscape as V

    # the default run at reduced size: 2 targets instead of 3, 5 rescaled nets instead of 20
    rows = V.untrained_rows(n_targets=2, grid=5, n_networks=5, rng=0)
    assert len(rows) >= 20
    failed = [r.name for r in rows if not r.passed]
    assert not failed, failed


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"n_targets": 0}, ValueError),
        ({"n_targets": 2.0}, TypeError),
        ({"grid": 1}, ValueError),
        ({"grid": 10**6}, ValueError),
        ({"n_networks": True}, TypeError),
        ({"n_networks": 1j}, TypeError),
        ({"rng": -1}, ValueError),
        ({"rng": "0"}, TypeError),
    ],
)
def test_validation_untrained_rows_checks_its_arguments(kwargs, error):
    from meanfield.validation import landscape as V

    with pytest.raises(error, match=next(iter(kwargs))):
        V.untrained_rows(**kwargs)


@pytest.mark.slow
def test_figures_orhan2017(tmp_path):
    from meanfield.figures import load, orhan2017

    assert set(orhan2017.FIGURES) >= {"fig_4", "fig_5", "fig_6"}
    paths = orhan2017.fig_4(tmp_path)
    fd = load(paths[1])
    minima = dict(zip(fd["architecture"], fd["n_local_minima"]))
    assert [minima[a] for a in ("plain", "path_residual", "residual", "hyper_residual")] == sorted(
        minima.values(), reverse=True
    )
    for name in ("fig_5", "fig_6"):
        for p in orhan2017.FIGURES[name](tmp_path):
            assert p.exists() and p.stat().st_size > 0
    fig6 = load(tmp_path / "orhan2017_fig_6.json")
    saddles = dict(zip(fig6["architecture"], fig6["saddle"].tolist()))
    assert saddles["residual"] == [-1.0, -1.0]
    assert saddles["hyper_residual"] == [-1.0, -2.0]


def test_argument_errors_name_the_argument():
    with pytest.raises(ValueError, match="tau"):
        L.controlled_skip_matrix(4, -0.1)
    with pytest.raises(ValueError, match="architecture"):
        L.mode_energy([0.1, 0.2], 1.0, "dense")
    with pytest.raises(ValueError, match="s must have shape"):
        L.three_layer_energy(np.zeros((2, 2)), np.zeros((2, 2)), [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="t must be"):
        L.mode_flow([0.1, 0.1], 1.0, [0.0, 0.0])
    with pytest.raises(ValueError, match="g must be"):
        L.rescaling_deviation("plain", np.ones((2, 2)), [np.eye(2)] * 3, 0, 2, g=-1.0)
    with pytest.raises(ValueError, match="grid_size"):
        L.regression_task(1)


def test_rescaling_deviation_refuses_undefined_ratios():
    """A dead (identically zero) output or an overflowing one raises instead of returning NaN."""
    ws = [-np.eye(2)] * 3
    with pytest.raises(ValueError, match="zero output"):
        L.rescaling_deviation("plain", np.ones((4, 2)), ws, 0, 2)
    with pytest.raises(ValueError, match="overflows"):
        L.rescaling_deviation("plain", np.full((4, 2), 1e300), [1e10 * np.eye(2)] * 3, 0, 2)


# ------------------------------------------------------------------ trust: argument validation and bounded time

#: Wall-clock limit for calls that used to hang: the flows abandon after MAX_FLOW_EVALUATIONS
#: right-hand sides, lowered to 20 000 in these tests (about 0.4 s of LSODA on one core).
HANG_LIMIT_S = 20.0
TEST_FLOW_EVALUATIONS = 20_000


@pytest.fixture
def small_flow_budget(monkeypatch):
    # the integrator reads the limit from the public package at each call
    monkeypatch.setattr(L, "MAX_FLOW_EVALUATIONS", TEST_FLOW_EVALUATIONS)


NOT_BOOLS = ["yes", None, np.nan, [True], 1]


@pytest.mark.parametrize("flag", NOT_BOOLS)
def test_bool_flags_must_be_bool(task, flag):
    with pytest.raises(TypeError, match="output_bias_bit"):
        L.n_binary_parameters(7, 2, flag)
    with pytest.raises(TypeError, match="output_bias_bit"):
        L.decode_configuration(0, 7, 2, flag)
    with pytest.raises(TypeError, match="output_bias_bit"):
        L.binary_landscape("plain", task.inputs, task.targets, n_layers=3, output_bias_bit=flag)
    a = np.full((2, 2), 0.1)
    with pytest.raises(TypeError, match="printed"):
        L.three_layer_gradient_field(a, a, [1.0, 2.0], printed=flag)
    with pytest.raises(TypeError, match="printed"):
        L.three_layer_flow(a, a, [1.0, 2.0], [0.0, 1.0], printed=flag)
    assert L.n_binary_parameters(7, 2, np.bool_(True)) == 23


def test_complex_input_is_a_type_error(task):
    a = np.full((2, 2), 0.1)
    c = a + 1j
    s = np.array([1.0, 2.0])
    calls = {
        "inputs": lambda: L.forward_binary("plain", task.inputs + 1j, [np.eye(2)], [1.0, 1.0]),
        "w_out": lambda: L.forward_binary("plain", task.inputs, [np.eye(2)], np.array([1.0, 1.0]) + 1j),
        "output_bias": lambda: L.forward_binary("plain", task.inputs, [np.eye(2)], [1.0, 1.0], 1 + 1j),
        "targets": lambda: L.binary_landscape("plain", task.inputs, task.targets + 1j, n_layers=3),
        "a": lambda: L.three_layer_energy(c, a, s),
        "b": lambda: L.three_layer_hessian(a, c, s),
        "s": lambda: L.three_layer_gradient_field(a, a, s + 1j),
        "a0": lambda: L.three_layer_flow(c, a, s, [0.0, 1.0]),
        "t": lambda: L.mode_flow([0.1, 0.2], 1.0, np.array([0.0, 1.0]) + 1j),
        "a ": lambda: L.mode_energy(np.array([0.1, 0.2]) + 1j, 1.0),
        "s ": lambda: L.mode_gradient([0.1, 0.2], 1 + 1j),
        "a  ": lambda: L.mode_hessian(np.array([0.1, 0.2]) + 1j, 1.0),
        "x": lambda: L.skip_network("plain", np.ones((2, 2)) + 1j, [np.eye(2)]),
        "x ": lambda: L.rescaling_deviation("residual", np.ones((2, 2)) + 1j, [np.eye(2)] * 3, 0, 1),
        "tau": lambda: L.controlled_skip_matrix(4, 0.1 + 1j),
    }
    for name, call in calls.items():
        with pytest.raises(TypeError, match=name.strip()):
            call()


@pytest.mark.parametrize(
    "biases",
    [0.0, np.nan, np.inf, -1, 1e300, True, np.array([]), np.zeros((3, 2)), np.full((2, 2), np.nan)],
)
def test_forward_binary_rejects_bad_biases(biases):
    """Fuzz: biases=0.0 (and every scalar) raised IndexError; NaN rows passed through."""
    x = np.array([[0.3, -0.7], [1.0, 0.5]])
    with pytest.raises((ValueError, TypeError), match="biases"):
        L.forward_binary("residual", x, [np.ones((2, 2))], np.ones(2), 0.0, biases)


def test_forward_binary_rejects_bad_inputs_and_weights():
    x = np.array([[0.3, -0.7], [1.0, 0.5]])
    w = [np.array([[1.0, -1.0], [-1.0, 1.0]])]
    for bad, name in [
        (None, "inputs"),
        (np.array([]), "inputs"),
        (1.0, "inputs"),
        (np.array([[np.nan, 1.0]]), "inputs"),
        (np.array([[np.inf, 1.0]]), "inputs"),
    ]:
        with pytest.raises((ValueError, TypeError), match=name):
            L.forward_binary("plain", bad, w, np.ones(2))
    for mats in ([np.full((2, 2), np.nan)], [np.full((2, 2), np.inf)], [np.ones((3, 3))], "abc", None):
        with pytest.raises((ValueError, TypeError), match="mats"):
            L.forward_binary("plain", x, mats, np.ones(2))
    for w_out in (np.array([np.nan, 1.0]), np.array([np.inf, 1.0]), np.ones(3)):
        with pytest.raises(ValueError, match="w_out"):
            L.forward_binary("plain", x, w, w_out)
    for ob in (np.nan, np.inf, -np.inf, np.float64(np.nan)):
        with pytest.raises(ValueError, match="output_bias"):
            L.forward_binary("plain", x, w, np.ones(2), ob)
    with pytest.raises(ValueError, match="overflow"):
        L.forward_binary("plain", np.full((2, 2), 1e308), [np.ones((2, 2))] * 3, np.ones(2))
    with pytest.raises(TypeError, match="architecture"):
        L.forward_binary(["plain"], x, w, np.ones(2))


def test_binary_landscape_refuses_overflowing_losses(task):
    for inputs, targets in ((task.inputs * 1e300, task.targets), (task.inputs, task.targets * 1e300)):
        with pytest.raises(ValueError, match="overflow"):
            L.binary_landscape("plain", inputs, targets, n_layers=3)
    with pytest.raises(ValueError, match="rtol"):
        L.binary_landscape("plain", task.inputs, task.targets, n_layers=3, rtol=np.nan)


def test_decode_configuration_is_exact_and_bounded(deadline):
    """Bits of c against Python's own binary expansion; absurd sizes are refused at once."""
    rng = np.random.default_rng(0)
    for n_layers, width, bit in ((7, 2, False), (7, 2, True), (3, 5, True), (40, 7, False)):
        n = L.n_binary_parameters(n_layers, width, bit)
        for c in [0, 2**n - 1, *(int(v) for v in rng.integers(0, 2 ** min(n, 62), 5))]:
            mats, w, b = L.decode_configuration(c, n_layers, width, bit)
            params = np.concatenate([m.ravel() for m in mats] + [w] + ([np.array([b])] if bit else []))
            expected = [1.0 if ch == "1" else -1.0 for ch in format(c, f"0{n}b")]
            np.testing.assert_array_equal(params, expected)
        with pytest.raises(ValueError, match="c must be"):
            L.decode_configuration(2**n, n_layers, width, bit)
    start = time.perf_counter()
    for kwargs in (
        dict(width=10**12),
        dict(n_layers=10**12),
        dict(width=2**64),
        dict(n_layers=1e300),
        dict(width=1e300),
    ):
        with deadline(HANG_LIMIT_S), pytest.raises(ValueError, match="MAX_DECODE_PARAMETERS"):
            L.decode_configuration(0, **kwargs)
    assert time.perf_counter() - start < 1.0


def test_mode_functions_refuse_overflow_instead_of_raising_foreign_errors():
    """Fuzz: mode_energy(a, 1e300) raised OverflowError (the energy is 5e599)."""
    with pytest.raises(ValueError, match="overflows double precision"):
        L.mode_energy([0.1, 0.2], 1e300)
    # just inside the range: E = s^2 / 2 at a product of 0.02 (relative effect 1e-152)
    assert L.mode_energy([0.1, 0.2], 1e154) == pytest.approx(0.5e308, rel=1e-15)
    # gradient and Hessian at s = 1e300 are representable: -(s - u) prod_except, g g^T - (s - u) K
    np.testing.assert_allclose(L.mode_gradient([0.1, 0.2], 1e300), [-0.2e300, -0.1e300], rtol=1e-15)
    np.testing.assert_allclose(L.mode_hessian([0.1, 0.2], 1e300), [[0.04, -1e300], [-1e300, 0.01]], rtol=1e-15)
    for f in (L.mode_gradient, L.mode_hessian):
        with pytest.raises(ValueError, match="overflows double precision"):
            f([1e10, 1e10, 1e10], 1e308)


def test_mode_hessian_entries_exact_at_zeros_and_large_n():
    """H = g g^T - (s - u) K with K_ik = prod_{l != i,k} x_l, against a direct product per entry."""
    rng = np.random.default_rng(3)
    for a in (np.array([0.0, -1.0, 0.5, 2.0]) - 1, rng.uniform(-0.5, 0.5, 40)):
        x = a + 1
        n = x.size
        s = 1.7
        u = math.prod(x)
        expected = np.empty((n, n))
        for i in range(n):
            for k in range(n):
                rest = [x[l] for l in range(n) if l not in (i, k)]
                if i == k:
                    expected[i, i] = math.prod(rest) ** 2
                else:
                    expected[i, k] = (2 * u - s) * math.prod(rest)
        h = L.mode_hessian(a, s, "residual")
        np.testing.assert_allclose(h, expected, rtol=1e-12, atol=1e-300)
        assert np.array_equal(h, h.T)


@pytest.mark.parametrize("t_scale", [1e-300, 1e-200, 1e300])
def test_mode_flow_extreme_times_raise_in_bounded_time(small_flow_budget, t_scale, deadline):
    """Fuzz: t = x1e-300 hung; t = x1e300 returned NaN."""
    t = np.linspace(0, 5, 11) * t_scale
    with deadline(HANG_LIMIT_S), pytest.raises(ValueError, match="t"):
        L.mode_flow([0.1, 0.2], 2.0, t)


def test_mode_flow_huge_target_raises_in_bounded_time(small_flow_budget, deadline):
    """Fuzz: s = 1e300 hung (its energy is not representable); s = 1e100 returned NaN."""
    t = np.linspace(0, 5, 11)
    for s in (1e300, 1e100):
        with deadline(HANG_LIMIT_S), pytest.raises(ValueError, match="overflow|t"):
            L.mode_flow([0.1, 0.2], s, t)


@pytest.mark.parametrize(
    "name,value",
    [
        ("rtol", np.nan),
        ("rtol", np.inf),
        ("rtol", -np.inf),
        ("rtol", -1),
        ("rtol", -1e-3),
        ("rtol", 0.0),
        ("rtol", np.array([])),
        ("atol", np.nan),
        ("atol", np.inf),
        ("atol", 0.0),
    ],
)
def test_flow_tolerances_are_validated(name, value):
    a = np.full((2, 2), 0.1)
    t = np.linspace(0, 1, 5)
    with pytest.raises((ValueError, TypeError), match=name):
        L.mode_flow([0.1, 0.2], 2.0, t, **{name: value})
    with pytest.raises((ValueError, TypeError), match=name):
        L.three_layer_flow(a, a, [3.0, 1.5], t, **{name: value})


@pytest.mark.parametrize("t_scale,s_scale", [(1e-300, 1.0), (1e300, 1.0), (1.0, 1e300), (1.0, 1e150)])
def test_three_layer_flow_extreme_scales_raise_in_bounded_time(small_flow_budget, t_scale, s_scale, deadline):
    """Fuzz: t = x1e-300 and s = x1e300 hung; t = x1e300 raised RuntimeError."""
    a = np.full((2, 2), 0.1)
    with deadline(HANG_LIMIT_S), pytest.raises(ValueError, match="t|overflow"):
        L.three_layer_flow(a, a, np.array([3.0, 1.5]) * s_scale, np.linspace(0, 5, 11) * t_scale)


def test_three_layer_functions_refuse_overflow():
    a = np.full((2, 2), 0.1)
    s = np.array([3.0, 1.5])
    for args in ((a * 1e300, a, s), (a, a * 1e300, s), (a * 1e160, a * 1e160, s)):
        for f in (L.three_layer_energy, L.three_layer_gradient_field, L.three_layer_hessian):
            with pytest.raises(ValueError, match="overflow"):
                f(*args)
    with pytest.raises(ValueError, match="overflow"):
        L.three_layer_energy(a, a, s * 1e300)  # E ~ 5e600
    da, _db = L.three_layer_gradient_field(a, a, s * 1e300)  # ~ 0.1 * 3e300: representable
    np.testing.assert_allclose(da, a @ np.diag(s * 1e300), rtol=1e-15)


def test_three_layer_energy_scales_as_fourth_power():
    """E(k a, k b, k^2 s) = k^4 E(a, b, s) up to the largest representable k (no premature overflow)."""
    rng = np.random.default_rng(5)
    a, b = rng.normal(size=(3, 2)), rng.normal(size=(3, 2))
    s = np.array([2.0, 0.5])
    e = L.three_layer_energy(a, b, s)
    for k in (1e-70, 1e70, 1e75):
        assert L.three_layer_energy(k * a, k * b, k * k * s) == pytest.approx(k**4 * e, rel=1e-13)


def test_skip_matrices_refuse_tau_beyond_double_precision():
    """Fuzz: controlled_skip_matrix(5, 1e300) returned inf/NaN; supp4_skip_matrix raised LinAlgError."""
    for f in (L.controlled_skip_matrix, L.supp4_skip_matrix):
        for tau in (1e300, L.MAX_TAU_SPREAD / 4 * 1.01):
            with pytest.raises(ValueError, match="MAX_TAU_SPREAD"):
                f(5, tau, rng=0)
        m = f(5, L.MAX_TAU_SPREAD / 4, rng=0)  # at the limit: finite and on the unit circle
        assert np.all(np.isfinite(m))
        # eigenvalue error <= n eps ||M|| kappa(eigenvectors) <= n eps exp(tau (n - 1)) = 1.1e-2
        tol = 5 * np.finfo(float).eps * math.exp(L.MAX_TAU_SPREAD)
        np.testing.assert_allclose(np.abs(np.linalg.eigvals(m)), 1.0, atol=tol)
    for n in (0, L.MAX_SKIP_SIZE + 1, 10**12):
        with pytest.raises(ValueError, match="n must be"):
            L.controlled_skip_matrix(n, 0.0)
        with pytest.raises(ValueError, match="n must be"):
            L.folded_orthogonal(n, 1)


def test_column_covariance_spectrum_log_scale():
    np.testing.assert_array_equal(L.column_covariance_spectrum(4, 2.0, log=True), [0.0, -2.0, -4.0, -6.0])
    np.testing.assert_allclose(L.column_covariance_spectrum(4, 2.0), np.exp([0.0, -2.0, -4.0, -6.0]), rtol=1e-15)
    with pytest.raises(ValueError, match="log=True"):
        L.column_covariance_spectrum(5, 1e300)
    assert L.column_covariance_spectrum(5, 1e300, log=True)[-1] == -4e300


@pytest.mark.parametrize(
    "f",
    [
        lambda rng: L.regression_task(4, rng=rng).targets,
        lambda rng: L.folded_orthogonal(8, 2, rng=rng),
        lambda rng: L.controlled_skip_matrix(6, 0.3, rng=rng),
        lambda rng: L.supp4_skip_matrix(6, 0.3, rng=rng),
    ],
)
def test_rng_rule(f):
    """Fuzz: regression_task(seed=Generator) raised. rng=7 must equal default_rng(7); None works."""
    np.testing.assert_array_equal(f(7), f(np.random.default_rng(7)))
    assert not np.array_equal(f(7), f(8))
    assert np.all(np.isfinite(f(None)))
    for bad in (1.5, "7", True, -1):
        with pytest.raises((TypeError, ValueError), match="rng"):
            f(bad)


def test_regression_task_records_its_seed_and_draw_order():
    task = L.regression_task(3, extent=2.0, n_components=4, rng=11)
    assert task.seed == 11 and L.regression_task(3, rng=np.random.default_rng(11)).seed is None
    g = np.random.default_rng(11)  # the documented draw order, by hand
    omega = g.normal(0.0, math.pi / 2.0, size=(4, 2))
    phi = g.uniform(0.0, 2 * math.pi, size=4)
    alpha = g.normal(0.0, math.sqrt(2.0 / 4), size=4)
    np.testing.assert_array_equal(task.frequencies, omega)
    np.testing.assert_allclose(task.targets, np.cos(task.inputs @ omega.T + phi) @ alpha, rtol=1e-14)
    with pytest.raises(TypeError):
        L.regression_task(3, seed=1)  # the old keyword is gone
    for extent in (0.0, -1.0, np.nan, np.inf, 1e308):
        with pytest.raises(ValueError, match="extent"):
            L.regression_task(3, extent=extent, rng=0)


def test_permutation_counts_sizes_are_bounded(deadline):
    """Fuzz: n = 1e300 / 2**64 raised OverflowError, n = 10**12 hung (one layer and several)."""
    start = time.perf_counter()
    for widths in (
        1e300,
        2**64,
        10**12,
        L.MAX_FACTORIAL_ARGUMENT + 1,
        [1e300],
        [10**12],
        [3, 2**64],
        [L.MAX_FACTORIAL_ARGUMENT, 1],
        np.ones(L.MAX_FACTORIAL_ARGUMENT + 1, dtype=int),
    ):
        with deadline(HANG_LIMIT_S), pytest.raises(ValueError, match="MAX_FACTORIAL_ARGUMENT|widths must be"):
            L.permutation_counts(widths)
    assert time.perf_counter() - start < 1.0


def test_permutation_counts_arguments():
    """Every argument validated, naming it; complex values are TypeErrors."""
    for bad in ("34", None, b"3", object(), {3: 4}, 3 + 0j, [3 + 1j], np.array([3 + 0j])):
        with pytest.raises(TypeError, match="widths"):
            L.permutation_counts(bad)
    for bad in ([0], [2.5], [np.nan], [True], -3, np.ones((2, 2), dtype=int)):
        with pytest.raises(ValueError, match="widths"):
            L.permutation_counts(bad)
    for bad in ("2", None, 2 + 0j, [2j]):
        with pytest.raises(TypeError, match="n_classes"):
            L.permutation_counts([4], bad)
    for bad in (0, 3, 5, 2.5, np.nan, True, [2, 2], [[2]]):
        with pytest.raises(ValueError, match="n_classes"):
            L.permutation_counts([4], bad)
    with pytest.raises(ValueError, match="n_classes"):  # validated even with no layer to apply it to
        L.permutation_counts([], 0)


def test_skip_network_and_rescaling_deviation_validation():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 3))
    ws = [rng.normal(0, 0.5, (3, 3)) for _ in range(4)]
    with pytest.raises(ValueError, match="overflow"):
        L.skip_network("residual", x, [w * 1e300 for w in ws])
    with pytest.raises((TypeError, ValueError), match="weights"):
        L.rescaling_deviation("residual", x, "abc", 0, 1)
    with pytest.raises((TypeError, ValueError), match="biases"):
        L.rescaling_deviation("residual", x, ws, 0, 1, biases=np.array([]))
    with pytest.raises((TypeError, ValueError), match="biases"):
        L.skip_network("residual", x, ws, biases=[np.zeros(3)] * 3)
    # fuzz: x = x1e300 gave NaN (the norm of F overflowed); zero-bias nets are homogeneous in x
    assert L.rescaling_deviation("residual", x * 1e300, ws, 0, 2) == pytest.approx(
        L.rescaling_deviation("residual", x, ws, 0, 2), rel=1e-12
    )
    with pytest.raises(ValueError, match="overflow"):
        L.rescaling_deviation("residual", x * 1e300, [w * 1e10 for w in ws], 0, 2)
    for g in (1e300, 1e-300):
        try:
            r = L.rescaling_deviation("residual", x, ws, 0, 2, g=g)
        except ValueError as exc:
            assert "g" in str(exc)
        else:
            assert math.isfinite(r)


def test_rescaling_deviation_without_intermediate_overflow():
    """||F' - F|| / ||F|| is invariant to a common scale of x and the biases (the nets are positively
    homogeneous): the scaled norms must give the same ratio at 1e200, where the naive norm overflows."""
    rng = np.random.default_rng(1)
    x = np.abs(rng.normal(size=(8, 4)))
    ws = [rng.normal(0, 0.5, (4, 4)) for _ in range(4)]
    bs = [rng.normal(0, 0.1, 4) for _ in range(4)]
    base = L.rescaling_deviation("residual", x, ws, 0, 2, 10.0, bs)
    big = L.rescaling_deviation("residual", x * 1e200, ws, 0, 2, 10.0, [b * 1e200 for b in bs])
    assert big == pytest.approx(base, rel=1e-12)


# ------------------------------------------------------------------ the package: one concept per submodule

import dataclasses  # noqa: E402
import doctest  # noqa: E402
import importlib  # noqa: E402
import inspect  # noqa: E402
import pkgutil  # noqa: E402

from meanfield import Result  # noqa: E402

#: The private submodules of meanfield.landscape, one concept each (the public names are recorded in
#: tests/contracts/public_api.txt).
SUBMODULES = ("_binary", "_census", "_degeneracy", "_modes", "_skip_matrices", "_symmetries", "_three_layer")
LIMITS = {
    "MAX_BINARY_PARAMETERS",
    "MAX_DECODE_PARAMETERS",
    "MAX_FACTORIAL_ARGUMENT",
    "MAX_FLOW_DIMENSION",
    "MAX_FLOW_EVALUATIONS",
    "MAX_LANDSCAPE_WORK",
    "MAX_MODE_LAYERS",
    "MAX_SKIP_SIZE",
    "MAX_TAU_SPREAD",
    "MAX_THREE_LAYER_ENTRIES",
    "DEGENERATE_RTOL",
    "MAX_HESSIAN_PARAMETERS",
    "MAX_CENSUS_PARAMETERS",
    "MAX_CHUNK_CONFIGURATIONS",
}


def _submodule(name):
    return importlib.import_module(f"meanfield.landscape.{name}")


def test_landscape_is_a_package_of_one_concept_per_private_submodule():
    """The package defines nothing itself: its public names are the union of its submodules' ``__all__``,
    each name in exactly one, re-exported as the same object."""
    assert hasattr(L, "__path__")  # a package
    assert set(SUBMODULES) == {m.name for m in pkgutil.iter_modules(L.__path__)} - {"_common"}
    owners = {}
    for sub in SUBMODULES:
        mod = _submodule(sub)
        assert mod.__all__, sub
        for name in mod.__all__:
            assert name not in owners, f"{name} is listed by both {owners.get(name)} and {sub}"
            owners[name] = sub
            assert getattr(L, name) is getattr(mod, name)
    assert sorted(L.__all__) == sorted(owners) and len(L.__all__) == len(owners)
    for name in LIMITS:
        assert isinstance(getattr(L, name), (int, float)) and name not in L.__all__


def test_flow_budget_is_read_from_the_package(monkeypatch):
    """The evaluation budget the integrator obeys is the public meanfield.landscape.MAX_FLOW_EVALUATIONS."""
    monkeypatch.setattr(L, "MAX_FLOW_EVALUATIONS", 5)
    with pytest.raises(ValueError, match="more than 5 .MAX_FLOW_EVALUATIONS."):
        L.mode_flow([0.1, 0.2], 2.0, np.linspace(0, 5, 11))


RESULTS = {
    "RegressionTask": (lambda: L.regression_task(2, rng=0), {"seed": 5}),
    "LandscapeResult": (lambda: L.binary_landscape("plain", *_tiny_task(), n_layers=3), {"rtol": 0.5}),
    "ThreeLayerTrajectory": (
        lambda: L.three_layer_flow(np.full((2, 2), 0.1), np.full((2, 2), 0.1), [1.0, 0.5], [0.0, 0.1]),
        {"t": None},
    ),
    "ThreeLayerHessian": (lambda: L.three_layer_hessian(np.eye(2), np.eye(2), [1.0, 0.5]), {"aa": None}),
    "ModeTrajectory": (lambda: L.mode_flow([0.1, 0.2], 1.0, [0.0, 0.1]), {"architecture": "residual"}),
    "PermutationCounts": (lambda: L.permutation_counts(4, 2), {"class_respecting": 1}),
    "SingularityMeasures": (lambda: L.singularity_measures([np.eye(2), np.ones((1, 2))]), {"tol": 0.5}),
    "HessianSpectrum": (
        lambda: (pytest.importorskip("torch"), L.skip_network_hessian("plain", np.eye(2), np.eye(2), [np.eye(2)]))[1],
        {"loss": 2.0},
    ),
    "LandscapeCensus": (lambda: L.landscape_census("plain", *_tiny_task(), n_layers=3), {"rtol": 0.5}),
}


def _tiny_task():
    t = L.regression_task(2, rng=0)
    return t.inputs, t.targets


@pytest.mark.parametrize("name", sorted(RESULTS))
def test_result_dataclasses_are_frozen_results_with_replace(name):
    """Every public result is @dataclass(frozen=True) inheriting meanfield._results.Result
    (PermutationCounts had no .replace())."""
    cls = getattr(L, name)
    make, change = RESULTS[name]
    r = make()
    assert type(r) is cls and issubclass(cls, Result)
    assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen
    assert "replace" not in vars(cls)  # the one definition is Result's
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(r, next(iter(change)), None)
    r2 = r.replace(**change)
    assert type(r2) is cls and all(getattr(r2, k) is v or getattr(r2, k) == v for k, v in change.items())
    assert all(getattr(r2, f.name) is getattr(r, f.name) for f in dataclasses.fields(cls) if f.name not in change)
    assert {n for n in L.__all__ if inspect.isclass(getattr(L, n))} == set(RESULTS)


def test_public_functions_have_complete_type_hints(missing_type_hints):
    """Type hints on every public function and method (parameters and return)."""
    assert missing_type_hints(L) == []


def test_docstring_examples_pass():
    """The >>> examples of the package and its submodules run (--doctest-modules)."""
    attempted = 0
    for mod in [L] + [_submodule(s) for s in sorted(SUBMODULES)]:
        result = doctest.testmod(mod, optionflags=doctest.NORMALIZE_WHITESPACE, verbose=False)
        assert result.failed == 0, mod.__name__
        attempted += result.attempted
    assert attempted >= 5


@pytest.mark.parametrize(
    "kwargs,error",
    [
        ({"backend": "gpu"}, ValueError),
        ({"backend": None}, ValueError),
        ({"full": "yes"}, TypeError),
        ({"full": 1}, TypeError),
        ({"rng": -1}, ValueError),
        ({"rng": True}, TypeError),
        ({"rng": 1.5}, TypeError),
    ],
)
def test_validation_run_checks_its_arguments_before_any_work(kwargs, error, deadline):
    """A direct call of meanfield.validation.landscape.run validated nothing (backend was unused, full any
    truthy value); the runner's checks now apply there too, before the landscapes are enumerated."""
    from meanfield.validation import landscape as V

    with deadline(5.0), pytest.raises(error, match=next(iter(kwargs))):
        V.run(**kwargs)


COMPLEX_INTEGER_ARGUMENTS = {
    "n_layers": lambda c: L.n_binary_parameters(c),
    "width": lambda c: L.n_binary_parameters(7, c),
    "c": lambda c: L.decode_configuration(c),
    "grid_size": lambda c: L.regression_task(c, rng=0),
    "n_components": lambda c: L.regression_task(3, n_components=c, rng=0),
    "top_bits": lambda c: L.binary_landscape("plain", np.ones((2, 2)), np.ones(2), n_layers=3, top_bits=c),
    "n_weights": lambda c: L.mode_offsets("plain", c),
    "n": lambda c: L.folded_orthogonal(c, 1),
    "n_orthonormal": lambda c: L.folded_orthogonal(4, c),
    "n ": lambda c: L.column_covariance_spectrum(c, 0.1),
    "k": lambda c: L.rescaling_deviation("plain", np.ones((2, 2)), [np.eye(2)] * 3, c, 2),
    "l": lambda c: L.rescaling_deviation("plain", np.ones((2, 2)), [np.eye(2)] * 3, 0, c),
    "widths": lambda c: L.permutation_counts([c]),
    "n_classes": lambda c: L.permutation_counts(4, c),
}


@pytest.mark.parametrize("name", sorted(COMPLEX_INTEGER_ARGUMENTS))
@pytest.mark.parametrize("value", [2 + 0j, np.complex128(2), np.array(2 + 1j)])
def test_complex_integer_arguments_are_type_errors(name, value):
    """Integer arguments given a complex number raised ValueError ('must be an integer'); the library's
    rule is TypeError for complex input."""
    with pytest.raises(TypeError, match=name.strip()):
        COMPLEX_INTEGER_ARGUMENTS[name](value)


# --- regressions found by the public-API fuzzer (tests/fuzz/) ------------------------------------


@pytest.mark.parametrize("a0", [[np.nan, 0.1], [], [[0.1, 0.1]], 0.1, [1e300, 1e300], "a"])
def test_mode_flow_messages_name_a0(a0):
    """mode_flow's errors named 'a' (the energy's argument), not its own 'a0'."""
    with pytest.raises((TypeError, ValueError), match="a0"):
        L.mode_flow(a0, 2.0, [0.0, 1.0])


@pytest.mark.parametrize("f", [L.mode_energy, L.mode_gradient, L.mode_hessian])
def test_mode_overflow_names_a(f):
    with pytest.raises(ValueError, match=r"mode strengths a\b"):
        f(np.array([0.5, 0.5]) * 1e300, 2.0)


@pytest.mark.parametrize("which", ["a0", "b0", "s", "u", "v"])
def test_three_layer_flow_overflow_names_the_argument(which):
    """The overflow message said 'scale a, b and s down' for three_layer_flow(a0=..., b0=..., u, v)."""
    ab = 0.1 * np.array([[1.0, 0.5], [0.5, 1.0], [0.2, -0.3]])
    kw = {"a0": ab, "b0": ab, "s": np.array([2.0, 1.0]), "u": np.eye(3)[:, :2], "v": np.eye(3)[:, :2]}
    kw[which] = kw[which] * 1e300
    with pytest.raises(ValueError, match=rf"\b{which}\b"):
        L.three_layer_flow(t=[0.0, 0.5], **kw)


def test_degenerate_hessian_rows_are_powered_as_preregistered():
    """The degenerate-Hessian rows use at least the sample size fixed before the run, 80 %
    power at one-sided 5 % for the 0.024 effect at the per-network SD 0.124 of the 8-network run."""
    from meanfield.validation import landscape as V
    from scipy.stats import norm

    needed = ((norm.ppf(0.95) + norm.ppf(0.80)) * V.HESSIAN_SD / V.HESSIAN_EFFECT) ** 2
    assert (V.HESSIAN_EFFECT, V.HESSIAN_SD, V.Z_ONE_SIDED) == (0.024, 0.124, 1.645)
    assert math.ceil(needed) - 1 <= V.HESSIAN_MEMBERS <= V.HESSIAN_MEMBERS_FULL <= 256  # the trainer's maximum
