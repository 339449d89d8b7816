"""Skip matrices, constant biases, singularity measures and the exact Hessian of Orhan 2017.

Checked three ways: the general skip network against its special cases (zero skips = plain, zero
long skips = residual, identity skips = the earlier identity-skip network), the autodiff Hessian
against central finite differences of the NumPy forward pass and against the closed form of a
one-layer net in its linear region, and Supp. Note 1's claim (duplicated units make identical
Hessian columns in a plain net, not in a residual one).
"""

from __future__ import annotations

import numpy as np
import pytest

from meanfield import landscape as L

#: Central second differences with step h: rounding error ~ eps * |E| / h^2 = 2e-16 / 1e-6 = 2e-10
#: at h = 1e-3 and |E| ~ 1; the loss is piecewise polynomial (degree <= 2 per layer), so the
#: truncation error of the 4-point formula is exactly zero within a linear region of the ReLUs.
#: The inputs are drawn so that no pre-activation lies within 1e-2 of a kink (checked in the test).
FD_STEP = 1e-3
FD_TOL = 1e-7
#: Rounding of a float64 autodiff Hessian of ~100 parameters, relative to its largest entry.
HESSIAN_ROUNDING = 1e-12


def _net(arch, n=3, depth=3, p=5, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((p, n))
    ws = [rng.standard_normal((n, n)) / np.sqrt(n) for _ in range(depth)]
    bs = [0.1 * rng.standard_normal(n) for _ in range(depth)]
    y = rng.standard_normal((p, n))
    return x, y, ws, bs


@pytest.mark.parametrize("arch", ["residual", "hyper_residual"])
def test_identity_skips_equal_default(arch):
    x, _, ws, bs = _net(arch)
    eye = [np.eye(3)] * len(ws)
    a = L.skip_network(arch, x, ws, bs)
    b = L.skip_network(arch, x, ws, bs, skips=eye)
    np.testing.assert_array_equal(a, b)


def test_zero_skips_are_plain_and_zero_long_skips_residual():
    x, _, ws, bs = _net("plain", n=4, depth=4)
    zero = [np.zeros((4, 4))] * 4
    np.testing.assert_allclose(
        L.skip_network("residual", x, ws, bs, skips=zero), L.skip_network("plain", x, ws, bs), rtol=0, atol=0
    )
    q = [L.folded_orthogonal(4, 2, rng=k) for k in range(4)]
    np.testing.assert_allclose(
        L.skip_network("hyper_residual", x, ws, bs, skips=q, long_skips=zero),
        L.skip_network("residual", x, ws, bs, skips=q),
        rtol=1e-15,
        atol=1e-15,
    )


def test_general_skip_matrix_one_layer_by_hand():
    rng = np.random.default_rng(3)
    x, w, b, q = (
        rng.standard_normal((4, 3)),
        rng.standard_normal((3, 3)),
        rng.standard_normal(3),
        rng.standard_normal((3, 3)),
    )
    out = L.skip_network("residual", x, [w], [b], skips=[q], constant_bias=(0.5, -0.2))
    np.testing.assert_allclose(out, np.maximum(x @ w.T + b + 0.3, 0) + x @ q.T, rtol=1e-14)


def test_constant_bias_breaks_rescaling_of_plain_net():
    x, _, ws, _ = _net("plain", n=6, depth=4, p=20, seed=1)
    exact = L.rescaling_deviation("plain", x, ws, 0, 2)
    broken = L.rescaling_deviation("plain", x, ws, 0, 2, constant_bias=(-0.01, 0.1))
    assert exact < 1e-12 and broken > 0.05


def test_skip_option_errors():
    x, _, ws, _bs = _net("plain")
    with pytest.raises(ValueError, match="skips"):
        L.skip_network("plain", x, ws, skips=[np.eye(3)] * 3)
    with pytest.raises(ValueError, match="long_skips"):
        L.skip_network("residual", x, ws, long_skips=[np.eye(3)] * 3)
    with pytest.raises(ValueError, match="skips"):
        L.skip_network("residual", x, ws, skips=[np.eye(3)] * 2)
    with pytest.raises(ValueError, match=r"skips\[0\]"):
        L.skip_network("residual", x, ws, skips=[np.full((3, 3), np.nan)] * 3)
    with pytest.raises(TypeError, match="constant_bias"):
        L.skip_network("plain", x, ws, constant_bias=0.1)
    with pytest.raises(ValueError, match="constant_bias"):
        L.skip_network("plain", x, ws, constant_bias=(np.inf, 0.0))


def _loss(arch, x, y, ws, bs):
    out = L.skip_network(arch, x, ws, bs)
    return 0.5 * np.sum((y - out) ** 2) / x.shape[0]


def _unpack(theta, n, depth):
    ws, bs, k = [], [], 0
    for _ in range(depth):
        ws.append(theta[k : k + n * n].reshape(n, n))
        bs.append(theta[k + n * n : k + n * n + n])
        k += n * n + n
    return ws, bs


def _kink_margin(arch, x, ws, bs):
    h, hist, margin = x, [x], np.inf
    for idx, (w, b) in enumerate(zip(ws, bs)):
        pre = h @ w.T + b
        margin = min(margin, float(np.min(np.abs(pre))))
        new = np.maximum(pre, 0)
        if arch != "plain":
            new = new + h
        if arch == "hyper_residual" and idx >= 1:
            new = new + sum(hist[:-1]) / idx
        h = new
        hist.append(h)
    return margin


@pytest.mark.parametrize("arch", ["plain", "residual", "hyper_residual"])
def test_hessian_matches_finite_differences(arch):
    pytest.importorskip("torch")
    n, depth = 2, 3

    # the first seed whose pre-activations all lie > 10 h from a ReLU kink (a precondition of FD_TOL)
    def margin(s):
        x, _, ws, bs = _net(arch, n=n, depth=depth, p=4, seed=s)
        return _kink_margin(arch, x, ws, bs)

    seed = next(s for s in range(100) if margin(s) > 10 * FD_STEP)
    x, y, ws, bs = _net(arch, n=n, depth=depth, p=4, seed=seed)
    res = L.skip_network_hessian(arch, x, y, ws, bs)
    theta = np.concatenate([np.concatenate([w.ravel(), b]) for w, b in zip(ws, bs)])
    p = theta.size
    assert res.hessian.shape == (p, p) and len(res.names) == p
    assert res.loss == pytest.approx(_loss(arch, x, y, ws, bs), rel=1e-14)
    h = FD_STEP
    fd = np.empty((p, p))
    for i in range(p):
        for j in range(i, p):
            vals = []
            for si, sj in ((1, 1), (1, -1), (-1, 1), (-1, -1)):
                t = theta.copy()
                t[i] += si * h
                t[j] += sj * h
                vals.append(_loss(arch, x, y, *_unpack(t, n, depth)))
            fd[i, j] = fd[j, i] = (vals[0] - vals[1] - vals[2] + vals[3]) / (4 * h * h)
    np.testing.assert_allclose(res.hessian, fd, rtol=0, atol=FD_TOL * max(1.0, np.abs(fd).max()))
    np.testing.assert_allclose(res.eigenvalues, np.linalg.eigvalsh(fd), atol=1e-6)


def test_hessian_closed_form_one_layer_linear_region():
    pytest.importorskip("torch")
    rng = np.random.default_rng(2)
    n, p = 3, 6
    x = rng.standard_normal((p, n))
    w = 0.01 * rng.standard_normal((n, n))
    b = np.full(n, 10.0)  # every pre-activation positive: the net is affine in a neighbourhood
    y = rng.standard_normal((p, n))
    res = L.skip_network_hessian("plain", x, y, [w], [b])
    # parameters of output unit i: W[i, :] and b[i]; E = sum_p ||y_p - W x_p - b||^2 / (2P)
    xt = np.concatenate([x, np.ones((p, 1))], axis=1)
    g = xt.T @ xt / p  # (n + 1) x (n + 1) Gram matrix of one unit's inputs
    order = [i * n + j for i in range(n) for j in range(n)] + [n * n + i for i in range(n)]
    expected = np.zeros((n * n + n, n * n + n))
    for i in range(n):
        idx = [order[i * n + j] for j in range(n)] + [order[n * n + i]]
        expected[np.ix_(idx, idx)] = g
    np.testing.assert_allclose(res.hessian, expected, rtol=0, atol=HESSIAN_ROUNDING * np.abs(expected).max())


def test_supp_note_1_duplicated_units():
    """Supp. Note 1: units j, j' of layer 2 with the same incoming weights (rows of W1).

    What holds exactly (and is asserted): the Hessian columns of W2[i, j] and W2[i, j'] agree in
    every row except those of the two units' own incoming parameters (W1[j, :], b1[j] and
    W1[j', :], b1[j']), where they differ by the error back-propagated to the units; so the
    Hessian is singular wherever that error vanishes -- at a zero-residual point exactly (one zero
    eigenvalue per output unit i at least) -- but not in general, which the paper's "the columns
    become identical" overstates. With an identity skip the two units' activities differ and the
    columns differ in every block.
    """
    pytest.importorskip("torch")
    n = 3
    x, y, ws, bs = _net("plain", n=n, depth=3, p=8, seed=11)
    ws[0][1] = ws[0][0]
    bs[0][1] = bs[0][0]  # units 0 and 1 of layer 2 are copies
    col = lambda i, j: (n * n + n) + i * n + j  # noqa: E731 - index of W2[i, j]
    own = [0, 1, 2, 3, 4, 5, n * n, n * n + 1]  # W1[0, :], W1[1, :], b1[0], b1[1]
    rest = np.setdiff1d(np.arange(2 * (n * n + n) + n * n + n), own)
    plain = L.skip_network_hessian("plain", x, y, ws, bs)
    scale = np.abs(plain.hessian).max()
    own_gap = 0.0
    for i in range(n):
        d = plain.hessian[:, col(i, 0)] - plain.hessian[:, col(i, 1)]
        np.testing.assert_allclose(d[rest], 0.0, rtol=0, atol=HESSIAN_ROUNDING * scale)
        own_gap = max(own_gap, np.abs(d[own]).max())
    assert own_gap > 1e-3 * scale  # the printed claim does not hold off the solution set
    # at a zero-residual point (targets = the network's own outputs) the Hessian is singular
    y0 = L.skip_network("plain", x, ws, bs)
    zero = L.skip_network_hessian("plain", x, y0, ws, bs)
    assert zero.loss < 1e-30
    for i in range(n):
        np.testing.assert_allclose(
            zero.hessian[:, col(i, 0)], zero.hessian[:, col(i, 1)], rtol=0, atol=HESSIAN_ROUNDING * scale
        )
    assert L.degenerate_fraction(zero.eigenvalues) >= n / zero.eigenvalues.size
    res = L.skip_network_hessian("residual", x, y, ws, bs)
    gap = np.abs(res.hessian[rest, col(0, 0)] - res.hessian[rest, col(0, 1)]).max()
    assert gap > 1e-3 * np.abs(res.hessian).max()
    m = L.singularity_measures(ws)
    assert m.overlap_min[0] == 0.0 and m.n_overlapping[0] == 1


def test_hessian_errors():
    pytest.importorskip("torch")
    x, y, ws, bs = _net("plain")
    with pytest.raises(ValueError, match="y must"):
        L.skip_network_hessian("plain", x, y[:, :2], ws, bs)
    with pytest.raises(ValueError, match="MAX_HESSIAN_PARAMETERS"):
        big = np.zeros((1, 40))
        L.skip_network_hessian("plain", big, big, [np.zeros((40, 40))] * 3)


def test_singularity_measures_invariances_and_errors():
    rng = np.random.default_rng(0)
    ws = [rng.standard_normal((5, 4)), rng.standard_normal((6, 5)), rng.standard_normal((2, 6))]
    m = L.singularity_measures(ws)
    assert np.all(m.n_eliminated == 0) and np.all(m.n_overlapping == 0)
    assert np.all(m.incoming_min > 0.1) and np.all(m.overlap_min > 0.1)
    scaled = L.singularity_measures([ws[0] * 1e150, ws[1] / 1e150, ws[2]])
    np.testing.assert_allclose(scaled.incoming_min, m.incoming_min, rtol=1e-12)
    np.testing.assert_allclose(scaled.overlap_min, m.overlap_min, rtol=1e-12)
    ws[1][:, 2] = 0.0  # unit 2 of layer 1 has no outgoing weights: eliminated
    e = L.singularity_measures(ws)
    assert e.n_eliminated[0] == 1 and e.outgoing_min[0] == 0.0 and not e.has_outgoing[2]
    with pytest.raises(ValueError, match="columns"):
        L.singularity_measures([np.ones((3, 2)), np.ones((2, 2))])
    with pytest.raises(ValueError, match="tol"):
        L.singularity_measures(ws, tol=0.0)
    with pytest.raises(TypeError):
        L.singularity_measures("w")
    with pytest.raises(ValueError):
        L.singularity_measures([np.array([[np.nan]])])


def test_degenerate_fraction():
    assert L.degenerate_fraction([0.0, 1e-9, -1e-3, 1.0]) == 0.5
    assert L.degenerate_fraction([0.0, 0.0]) == 1.0
    for bad in ([], [np.nan], [[1.0]]):
        with pytest.raises(ValueError):
            L.degenerate_fraction(bad)
    with pytest.raises(ValueError, match="rtol"):
        L.degenerate_fraction([1.0], rtol=2.0)


def test_bias_targets_and_penalty():
    t = L.bias_targets([3, 4], 0.5, rng=1)
    assert [v.shape for v in t] == [(3,), (4,)]
    assert all(np.all(v == 0) for v in L.bias_targets([3], 0.0, rng=1))
    rng = np.random.default_rng(0)
    b = [rng.standard_normal(3), rng.standard_normal(4)]
    val, grads = L.bias_penalty(b, t, 0.3)
    assert val == pytest.approx(0.3 * sum(np.sum((bi - ti) ** 2) for bi, ti in zip(b, t)), rel=1e-14)
    eps = 1e-6
    b2 = [b[0].copy(), b[1].copy()]
    b2[1][2] += eps
    assert (L.bias_penalty(b2, t, 0.3)[0] - val) / eps == pytest.approx(grads[1][2], rel=1e-5)
    with pytest.raises(ValueError, match="sigma"):
        L.bias_targets([3], -1.0)
    with pytest.raises(ValueError, match="strength"):
        L.bias_penalty(b, t, -1.0)
    with pytest.raises(ValueError, match="same length"):
        L.bias_penalty(b, t[:1], 1.0)
