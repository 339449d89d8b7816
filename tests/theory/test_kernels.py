"""meanfield.kernels: data-set NNGP / NTK against the existing recursions, direct quadrature, and invariances."""

from __future__ import annotations

import math

import numpy as np
import pytest

from meanfield import conv, dense, gaussian, kernels, ntk
from meanfield.kernels import ROUNDING_RTOL

SW, SB = 1.7, 0.1
#: Per-layer rounding budget times the layers: the two implementations use different (equally
#: exact) arrangements of the same closed forms, each rounding error contracts or grows by at
#: most the layer's chi, so the difference after L layers is below L * ROUNDING_RTOL * max chi^L.
DEPTH = 4
#: The arc-cosine derivative kernel is not Lipschitz at c = 1: a 1-ulp change of c near 1 moves
#: acos(c) by sqrt(2 ulp) ~ 2e-8 (relu's NTK between distinct but nearly parallel inputs).
ACOS_RTOL = 4 * math.sqrt(2 * np.finfo(float).eps)
#: Gauss-Hermite error of the library's quadrature for smooth activations (measured 3e-14 for erf).
QUAD_RTOL = 1e-11
#: Activations without a closed form go through Mehler's formula, certified per layer to
#: ``MEHLER_LAYER_RTOL`` of sqrt(K_ii K_jj); like a rounding error, each layer's error grows at most by
#: the layer's chi, so after L layers the difference is below L * MEHLER_LAYER_RTOL * max chi^L.
MEHLER_LAYER_RTOL = 1e-10
MEHLER_RTOL = DEPTH * MEHLER_LAYER_RTOL * 4 + QUAD_RTOL


def _x(d, n0=5, seed=0):
    return np.random.default_rng(seed).standard_normal((d, n0))


def _tol(act, depth=DEPTH):
    return ACOS_RTOL if act in ("relu", "leaky_relu") else depth * ROUNDING_RTOL * 4


@pytest.mark.parametrize("act", ["erf", "relu", "linear", "tanh"])
def test_dense_matches_propagate_ntk(act):
    x = _x(7)
    k = kernels.dense_kernels(x, None, act, SW, SB, DEPTH, layers=range(DEPTH + 1))
    ref = ntk.propagate_ntk(dense.input_covariance(x, SW, SB), act, SW, SB, DEPTH)
    tol = MEHLER_RTOL if act == "tanh" else _tol(act)
    scale = np.abs(ref.cov).max(axis=(1, 2), keepdims=True)
    assert np.max(np.abs(k.nngp - ref.cov) / scale) < tol
    scale = np.abs(ref.ntk).max(axis=(1, 2), keepdims=True)
    assert np.max(np.abs(k.ntk - ref.ntk) / scale) < tol
    assert k.method == ("closed" if act != "tanh" else "mehler")
    # the NNGP alone is dense.propagate's last layer
    only = kernels.dense_kernels(x, None, act, SW, SB, DEPTH, ntk=False)
    assert only.ntk is None and np.array_equal(only.nngp, k.nngp[-1])


def test_sign_has_an_nngp_and_no_ntk():
    """sign's NNGP exists (Mehler's formula) while its NTK does not (phi' is a Dirac delta): ntk=False
    gives dense.propagate's and conv.propagate's last layer, ntk=True names the reason."""
    x = _x(6)
    only = kernels.dense_kernels(x, None, "sign", SW, SB, DEPTH, ntk=False)
    ref = dense.propagate(dense.input_covariance(x, SW, SB), "sign", SW, SB, DEPTH)[-1]
    assert only.ntk is None and np.max(np.abs(only.nngp - ref)) / np.abs(ref).max() < MEHLER_RTOL
    xc = np.random.default_rng(1).standard_normal((3, 6, 2))
    v = np.ones(3) / 3
    conv_only = kernels.conv_kernels(xc, None, "sign", SW, SB, v, DEPTH, readout="full", ntk=False)
    conv_ref = conv.multi_input_propagate(conv.multi_input_covariance(xc, SW, SB, v), "sign", SW, SB, v, DEPTH)[-1]
    assert conv_only.ntk is None
    assert np.max(np.abs(conv_only.nngp - conv_ref)) / np.abs(conv_ref).max() < MEHLER_RTOL
    for call in (
        lambda: kernels.dense_kernels(x, None, "sign", SW, SB, DEPTH),
        lambda: kernels.conv_kernels(xc, None, "sign", SW, SB, v, DEPTH),
    ):
        with pytest.raises(ValueError, match="NTK of activation 'sign' is not finite.*ntk=False"):
            call()


def test_tanh_on_strongly_correlated_inputs():
    """Nearly parallel inputs with large first-layer variances (pair correlations above 0.9 at every
    layer, the ordered phase): the Mehler path against ntk.propagate_ntk, train/train and cross."""
    rng = np.random.default_rng(13)
    x = 5.0 * (rng.standard_normal(8) + 0.1 * rng.standard_normal((6, 8)))
    ref = ntk.propagate_ntk(dense.input_covariance(x, 1.5, 0.05), "tanh", 1.5, 0.05, DEPTH)
    corr = ref.cov / np.sqrt(np.einsum("lii,ljj->lij", ref.cov, ref.cov))
    assert corr.min() > 0.9
    k = kernels.dense_kernels(x, None, "tanh", 1.5, 0.05, DEPTH, layers=range(DEPTH + 1))
    cross = kernels.dense_kernels(x[:3], x[2:], "tanh", 1.5, 0.05, DEPTH, layers=range(DEPTH + 1))
    for got, want, name in ((k.nngp, ref.cov, "nngp"), (k.ntk, ref.ntk, "ntk")):
        scale = np.abs(want).max(axis=(1, 2), keepdims=True)
        assert np.max(np.abs(got - want) / scale) < MEHLER_RTOL, name
        part = (cross.nngp if name == "nngp" else cross.ntk) - want[:, :3, 2:]
        assert np.max(np.abs(part) / scale) < MEHLER_RTOL, name
    assert np.array_equal(k.nngp, np.swapaxes(k.nngp, 1, 2))  # the symmetric form: exactly symmetric


def test_leaky_relu_and_cross_kernel_match_joint_propagation():
    x1, x2 = _x(3, seed=1), _x(5, seed=2)
    both = np.vstack([x1, x2])
    ref = ntk.propagate_ntk(dense.input_covariance(both, 2.0, 0.05), "leaky_relu", 2.0, 0.05, DEPTH)
    k = kernels.dense_kernels(x1, x2, "leaky_relu", 2.0, 0.05, DEPTH)
    assert k.nngp.shape == (3, 5)
    assert np.allclose(k.nngp, ref.cov[-1][:3, 3:], rtol=_tol("relu"), atol=0)
    assert np.allclose(k.ntk, ref.ntk[-1][:3, 3:], rtol=_tol("relu"), atol=0)


def _erf_direct(q1, q2, c, d, degree=120):
    """E g(u) g(v) by a direct 2-D Gauss-Hermite sum (g = erf or erf'), u = sqrt(q1) z1,
    v = sqrt(q2) (c z1 + sqrt(1 - c^2) z2)."""
    z, w = gaussian.hermite_rule(degree)
    z1, z2 = z[:, None], z[None, :]
    ww = w[:, None] * w[None, :]
    from scipy.special import erf

    g = erf if d == 0 else (lambda u: 2 / math.sqrt(math.pi) * np.exp(-u * u))
    u = math.sqrt(q1) * z1 + 0 * z2
    v = math.sqrt(q2) * (c * z1 + math.sqrt(1 - c * c) * z2)
    return float(np.sum(ww * g(u) * g(v)))


def _relu_direct(q1, q2, c, d):
    """E relu^(d)(u) relu^(d)(v) by adaptive quadrature over z1 of the closed inner expectation over z2:
    v | z1 ~ N(m, s^2), E relu(v) = m Phi(m/s) + s phi(m/s), E step(v) = Phi(m/s)."""
    from scipy import integrate

    s = math.sqrt(q2 * (1 - c * c))

    def cdf(z):
        return 0.5 * math.erfc(-z / math.sqrt(2.0))

    def pdf(z):
        return math.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)

    def inner(z1):
        m = math.sqrt(q2) * c * z1
        if d == 0:
            return m * cdf(m / s) + s * pdf(m / s)
        return cdf(m / s)

    def f(z1):
        u = math.sqrt(q1) * z1
        return (u if d == 0 else 1.0) * inner(z1) * pdf(z1)

    val, _ = integrate.quad(f, 0.0, 40.0, epsabs=1e-14, epsrel=1e-13, limit=200)
    return val


@pytest.mark.parametrize("act", ["erf", "relu"])
def test_one_layer_against_direct_quadrature(act):
    """kappa and kappa_dot of a few pairs against quadrature of the defining integral."""
    q1 = np.array([0.3, 1.0, 2.5])[:, None]
    q2 = np.array([0.7, 1.9])[None, :]
    c = np.array([[-0.6, 0.2], [0.5, 0.97], [0.0, -0.99]])
    got = kernels.closed_layer_maps(act, q1, q2, c)
    assert got.kappa.shape == got.kappa_dot.shape == (3, 2) and got.error == 0.0
    qa, qb = np.broadcast_arrays(q1, q2)
    for d, out in ((0, got.kappa), (1, got.kappa_dot)):
        for i in range(3):
            for j in range(2):
                if act == "erf":
                    want = _erf_direct(qa[i, j], qb[i, j], c[i, j], d)
                    assert out[i, j] == pytest.approx(want, rel=QUAD_RTOL, abs=QUAD_RTOL)
                else:
                    want = _relu_direct(qa[i, j], qb[i, j], c[i, j], d)
                    assert out[i, j] == pytest.approx(want, rel=QUAD_RTOL, abs=QUAD_RTOL)
    general = kernels.quadrature_layer_maps(act, q1, q2, c)
    assert np.allclose(general.kappa, got.kappa, rtol=1e-12) and general.error is None


def test_arcsine_and_arccosine_within_a_few_ulp():
    """The compiled (vectorisable) arcsine / arccosine of the pair maps against the C library's."""
    rng = np.random.default_rng(3)
    c = np.concatenate([rng.uniform(-1, 1, 20000), 1 - rng.uniform(0, 1e-6, 2000), [0.5, -0.5, 1.0, -1.0, 0.0, 0.975]])
    q = np.full_like(c, 0.8)
    # erf: kappa = (2/pi) asin(r), r formed as the kernel forms it
    uu = (1.0 / np.sqrt(1.0 + 2.0 * q)) * (1.0 / np.sqrt(1.0 + 2.0 * q))
    r = np.clip(2.0 * (c * (np.sqrt(q) * np.sqrt(q))) * uu, -1, 1)
    want = (2.0 / math.pi) * np.vectorize(math.asin)(r)
    got = kernels.closed_layer_maps("erf", q, q, c).kappa
    assert np.max(np.abs(got - want) / (np.spacing(np.abs(want)) + 1e-300)) <= 4
    # relu: kappa_dot = (pi - acos(c)) / (2 pi)
    sq = np.sqrt(q) * np.sqrt(q)
    c2 = np.clip((c * sq) / sq, -1, 1)  # the correlation as the kernel re-forms it from the covariance
    want = (math.pi - np.vectorize(math.acos)(c2)) / (2 * math.pi)
    got = kernels.closed_layer_maps("relu", q, q, c).kappa_dot
    assert np.max(np.abs(got - want)) <= 4 * np.finfo(float).eps


def test_block_size_and_permutation_invariance_bit_for_bit():
    x = _x(37, n0=6, seed=4)
    ref = kernels.dense_kernels(x, None, "erf", SW, SB, 6, layers=(0, 3, 6))
    for block in (1, 5, 64):
        got = kernels.dense_kernels(x, None, "erf", SW, SB, 6, layers=(0, 3, 6), block_rows=block)
        assert np.array_equal(got.nngp, ref.nngp) and np.array_equal(got.ntk, ref.ntk)
    assert np.array_equal(ref.nngp, np.swapaxes(ref.nngp, 1, 2))  # exactly symmetric
    perm = np.random.default_rng(5).permutation(37)
    got = kernels.dense_kernels(x[perm], None, "erf", SW, SB, 6, layers=(0, 3, 6))
    assert np.array_equal(got.nngp, ref.nngp[:, perm][:, :, perm])
    assert np.array_equal(got.ntk, ref.ntk[:, perm][:, :, perm])
    # the cross kernel of the same sets is the same bits as the train/train kernel off the diagonal
    cross = kernels.dense_kernels(x[:10], x, "erf", SW, SB, 6)
    off = ~np.eye(37, dtype=bool)[:10]
    assert np.array_equal(cross.nngp[off], ref.nngp[-1][:10][off])


def test_multi_threaded_kernels_are_the_single_thread_bits(monkeypatch):
    x = _x(37, n0=6, seed=4)
    ref = kernels.dense_kernels(x, None, "erf", SW, SB, 6, layers=(0, 3, 6))
    xc = np.random.default_rng(9).standard_normal((9, 4, 2))
    ref_c = kernels.conv_kernels(xc, None, "relu", 2.0, 0.1, [0.25, 0.5, 0.25], 3, readout="gap")
    monkeypatch.setattr(kernels, "PARALLEL_MIN_WORK", 0)  # every problem on all threads, in chunks of tasks
    par = kernels.dense_kernels(x, None, "erf", SW, SB, 6, layers=(0, 3, 6), block_rows=4)
    assert np.array_equal(par.nngp, ref.nngp) and np.array_equal(par.ntk, ref.ntk)
    par_c = kernels.conv_kernels(xc, None, "relu", 2.0, 0.1, [0.25, 0.5, 0.25], 3, readout="gap", block_rows=2)
    assert np.array_equal(par_c.nngp, ref_c.nngp) and np.array_equal(par_c.ntk, ref_c.ntk)


def test_rows_per_task_on_executors_bit_for_bit():
    from meanfield import parallel

    x = _x(23, seed=6)
    xs = np.random.default_rng(7).standard_normal((11, 6, 2))
    ref_d = kernels.dense_kernels(x, None, "relu", 2.0, 0.1, 5)
    ref_c = kernels.conv_kernels(xs, None, "erf", SW, SB, [0.25, 0.5, 0.25], 3, readout="gap")
    with parallel.using("serial"):
        got_d = kernels.dense_kernels(x, None, "relu", 2.0, 0.1, 5, rows_per_task=4)
    assert np.array_equal(got_d.nngp, ref_d.nngp) and np.array_equal(got_d.ntk, ref_d.ntk)
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as lc:
        with distributed.Client(lc, set_as_default=False) as client, parallel.using(client):
            got_d = kernels.dense_kernels(x, None, "relu", 2.0, 0.1, 5, rows_per_task=4)
            got_c = kernels.conv_kernels(xs, None, "erf", SW, SB, [0.25, 0.5, 0.25], 3, readout="gap", rows_per_task=3)
    assert np.array_equal(got_d.nngp, ref_d.nngp) and np.array_equal(got_d.ntk, ref_d.ntk)
    assert np.array_equal(got_c.nngp, ref_c.nngp) and np.array_equal(got_c.ntk, ref_c.ntk)


@pytest.mark.parametrize(("v", "shape", "p"), [([0.25, 0.5, 0.25], None, 5), (np.full((3, 3), 1 / 9), (3, 2), 6)])
@pytest.mark.parametrize("act", ["erf", "relu", "tanh"])
def test_conv_matches_propagate_conv_ntk(v, shape, p, act):
    rng = np.random.default_rng(8)
    x = rng.standard_normal((3, p, 2))
    k = kernels.conv_kernels(x, None, act, SW, SB, v, 3, shape=shape, readout="full", layers=(0, 3))
    cov0 = conv.multi_input_covariance(x, SW, SB, v, shape)
    ref = ntk.propagate_conv_ntk(cov0, act, SW, SB, v, 3, shape)
    tol = MEHLER_RTOL if act == "tanh" else _tol(act)
    for got, want in ((k.nngp, ref.cov[[0, 3]]), (k.ntk, ref.ntk[[0, 3]])):
        assert np.max(np.abs(got - want)) / np.abs(want).max() < tol
    flat = kernels.conv_kernels(x, None, act, SW, SB, v, 3, shape=shape, readout="flatten")
    gap = kernels.conv_kernels(x, None, act, SW, SB, v, 3, shape=shape, readout="gap")
    last = ref.ntk[3]
    tol_r = tol * 4
    assert np.allclose(flat.ntk, np.einsum("iaja->ij", last) / p, rtol=tol_r, atol=0)
    assert np.allclose(gap.ntk, last.mean(axis=(1, 3)), rtol=tol_r, atol=0)


def test_arguments_are_checked():
    x = _x(4)
    with pytest.raises(ValueError, match="x1"):
        kernels.dense_kernels(x[0], None, "erf", SW, SB, 2)
    with pytest.raises(ValueError, match="x2"):
        kernels.dense_kernels(x, _x(3, n0=4), "erf", SW, SB, 2)
    with pytest.raises(ValueError, match="sigma_w2"):
        kernels.dense_kernels(x, None, "erf", -1.0, SB, 2)
    with pytest.raises(ValueError, match="layers"):
        kernels.dense_kernels(x, None, "erf", SW, SB, 2, layers=(2, 1))
    with pytest.raises(ValueError, match="readout"):
        kernels.conv_kernels(x[:, :, None], None, "erf", SW, SB, [1.0], 2, readout="max")
    with pytest.raises(ValueError, match="float64"):
        kernels.dense_kernels(x, None, "relu", 1e300, 1.0, 3)
    with pytest.raises(ValueError, match="c must"):
        kernels.closed_layer_maps("erf", 1.0, 1.0, 1.5)
    with pytest.raises(ValueError, match="activation"):
        kernels.closed_layer_maps("tanh", 1.0, 1.0, 0.5)
    with pytest.raises(TypeError):
        kernels.dense_kernels(x, None, "erf", SW, SB, 2, ntk="yes")
