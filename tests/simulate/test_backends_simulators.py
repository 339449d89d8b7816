"""Every Monte-Carlo simulator on a non-NumPy namespace, on the CPU.

``array_api_strict`` accepts only the array-API standard, so a NumPy-only call in the code that the
GPU backends run fails here; it draws from the NumPy Generator of the same ``rng``, so its results
equal NumPy's (to float rounding: the same operations in the same order). PyTorch CPU tensors draw
from torch's own generator: same law, other numbers, checked by two-sample z statistics.

Tolerances, fixed before looking at data:

- ``EXACT_ATOL``: the same float64 operations on the same numbers; 1e-12 allows for a BLAS that
  orders a sum differently (about 1e3 ulps of O(1) numbers).
- ``EXACT_RTOL = 1e-12``: the same numbers where the NumPy path sums its products in
  ``numpy.einsum``'s order and the other backends with ``matmul`` (the moment simulators of seed
  002, Sec. 6): a few ulps per product and layer, through at most 4 layers and a fourth power,
  stays below 1e2 ulps (2e-14); 1e-12 is 50 times that and far below any statistical effect.
- ``Z_TOL = 4.5``: a two-sided z of 4.5 has probability 6.8e-6 under the null; with at most ~20
  comparisons per test the chance of a false failure is below 1.4e-4 (seeds are fixed, so a test
  either always passes or always fails; this bounds the chance that the fixed seeds are unlucky).
"""

from __future__ import annotations

import numpy as np
import pytest

from meanfield.backend import get_backend, to_numpy
from meanfield.init import orthogonal_kernel_variance
from meanfield.simulate import (
    INPUT_KINDS,
    JACOBIAN_CONV_KERNELS,
    JACOBIAN_WEIGHTS,
    ConstNet,
    LeakyNet,
    conv2d_jacobian_singular_values,
    conv_jacobian_singular_values,
    conv_kernels,
    empirical_conv_ntk,
    empirical_ntk,
    empirical_periodic_cnn_ntk,
    empirical_variances,
    fig1_variances,
    jacobian_singular_values,
    layer_moments,
    looks_linear_delta_orthogonal_forward,
    nonzero_fraction,
    simulate_conv,
    simulate_conv_moments,
    simulate_pair,
    simulate_residual_moments,
    simulate_squared_norms,
    softmax_xent,
)

pytest.importorskip("array_api_strict")

EXACT_ATOL = 1e-12
EXACT_RTOL = 1e-12
Z_TOL = 4.5


def _torch():
    pytest.importorskip("torch")
    pytest.importorskip("array_api_compat")


@pytest.fixture(autouse=True, scope="module")
def _one_torch_thread():
    """PyTorch CPU on one thread here: its thread pool spins on a loaded 2-core machine (10x slower,
    measured: the CNN Jacobian test took 32 s with the default threads, 2.3 s with one)."""
    try:
        import torch
    except ImportError:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _z_means(a, b):
    """z of the difference of the means of per-network samples ``a``, ``b`` (axis 0)."""
    se = np.sqrt(a.var(0, ddof=1) / a.shape[0] + b.var(0, ddof=1) / b.shape[0])
    return (a.mean(0) - b.mean(0)) / se


# --- conv --------------------------------------------------------------------------------------

CONV_CASES = [
    ("gaussian", np.full(3, 1 / 3), True),
    ("orthogonal", np.full(3, 1 / 3), True),
    ("delta_orthogonal", np.full(3, 1 / 3), False),
    ("gaussian", np.full((3, 3), 1 / 9), True),
    ("orthogonal", np.full((3, 3), 1 / 9), False),
]


def test_fig_s4_strict_namespace_reproduces_numpy():
    """Xiao et al. 2018's Fig. S4 ensemble (simulate_conv from Sigma* and Sigma* - eps^0) on the strict namespace."""
    from meanfield.simulate import simulate_fig_s4

    ref = simulate_fig_s4(2, 4, 2, rng=3)
    strict = simulate_fig_s4(2, 4, 2, backend="array_api_strict", rng=3)
    np.testing.assert_allclose(strict, ref, rtol=0, atol=EXACT_ATOL)


@pytest.mark.parametrize("init,v,gradients", CONV_CASES)
def test_conv_strict_namespace_reproduces_numpy(init, v, gradients):
    p = 6 if v.ndim == 1 else 16
    cov0 = np.stack([np.eye(p), 0.5 * np.eye(p) + 0.5])
    kw = dict(depth=2, width=4, n_networks=3, init=init, gradients=gradients, rng=11)
    ref = simulate_conv(cov0, "tanh", 1.5, 0.05, v, **kw)
    strict = simulate_conv(cov0, "tanh", 1.5, 0.05, v, backend="array_api_strict", **kw)
    np.testing.assert_allclose(strict.cov_normalized, ref.cov_normalized, rtol=0, atol=EXACT_ATOL)
    np.testing.assert_allclose(strict.log_scale, ref.log_scale, rtol=0, atol=EXACT_ATOL)
    if gradients:
        np.testing.assert_allclose(strict.grad_sq_normalized, ref.grad_sq_normalized, rtol=0, atol=EXACT_ATOL)
        np.testing.assert_allclose(
            strict.weight_grad_sq_normalized, ref.weight_grad_sq_normalized, rtol=0, atol=EXACT_ATOL
        )


@pytest.mark.parametrize("init", ["gaussian", "orthogonal"])
def test_conv_torch_agrees_in_distribution_and_repeats(init):
    _torch()
    v = np.full(3, 1 / 3)
    cov0 = 0.8 * np.eye(6) + 0.2
    kw = dict(depth=2, width=8, n_networks=200, init=init)
    a = simulate_conv(cov0, "relu", 2.0, 0.05, v, rng=np.random.SeedSequence(5, spawn_key=(1,)), **kw)
    t = simulate_conv(cov0, "relu", 2.0, 0.05, v, backend="torch", rng=np.random.SeedSequence(5, spawn_key=(2,)), **kw)
    # the last layer's covariance at lags 0, 1, 2 (entries (0, 0), (0, 1), (0, 2)) per network
    z = _z_means(a.cov[:, -1, 0, 0, :3], t.cov[:, -1, 0, 0, :3])
    assert np.all(np.abs(z) < Z_TOL), z
    again = simulate_conv(
        cov0, "relu", 2.0, 0.05, v, backend="torch", rng=np.random.SeedSequence(5, spawn_key=(2,)), **kw
    )
    np.testing.assert_array_equal(again.cov_normalized, t.cov_normalized)


@pytest.mark.parametrize("backend", ["numpy", "array_api_strict", "torch"])
@pytest.mark.parametrize("kernel_shape", [(5,), (3, 3)])
def test_batched_orthogonal_kernels_are_isometries_with_the_binomial_variance(backend, kernel_shape):
    # Algorithm 1 built on the backend: sum_beta K(beta)^T K(beta) = I for every network, and the
    # tap energies |K(beta)|_F^2 / c average to orthogonal_kernel_variance (the binomial law):
    # theory vs the batched construction
    if backend == "torch":
        _torch()
    c, n = 6, 400
    k = to_numpy(conv_kernels(n, kernel_shape, c, 1.0, init="orthogonal", rng=3, backend=backend))
    sd = len(kernel_shape)
    flat = k.reshape(n, -1, c, c)
    gram = np.einsum("ntji,ntjk->nik", flat, flat)
    np.testing.assert_allclose(gram, np.broadcast_to(np.eye(c), gram.shape), atol=1e-12)
    energy = (flat**2).sum(axis=(-1, -2)) / c
    z = (energy.mean(0) - orthogonal_kernel_variance(kernel_shape[0], sd).ravel()) / (
        energy.std(0, ddof=1) / np.sqrt(n)
    )
    assert np.all(np.abs(z) < Z_TOL), z


# --- ntk ---------------------------------------------------------------------------------------

X = np.random.default_rng(3).standard_normal((3, 5))


def test_ntk_strict_namespace_reproduces_numpy():
    for act in ("tanh", "relu", "erf"):
        ref = empirical_ntk(X, act, 1.5, 0.1, 2, 8, 3, rng=4)
        strict = empirical_ntk(X, act, 1.5, 0.1, 2, 8, 3, rng=4, backend="array_api_strict")
        np.testing.assert_allclose(strict, ref, rtol=1e-13, atol=0)
    xc = np.random.default_rng(4).standard_normal((2, 6, 3))
    ref = empirical_conv_ntk(xc, "tanh", 1.5, 0.05, (0.25, 0.5, 0.25), 2, 4, 2, position=1, rng=5)
    strict = empirical_conv_ntk(
        xc, "tanh", 1.5, 0.05, (0.25, 0.5, 0.25), 2, 4, 2, position=1, rng=5, backend="array_api_strict"
    )
    np.testing.assert_allclose(strict, ref, rtol=1e-13, atol=0)


X2D = np.random.default_rng(17).standard_normal((2, 3, 4, 2))
V2D = np.full((3, 3), 1 / 9)


def test_periodic_cnn_ntk_2d_strict_namespace_reproduces_numpy():
    # EXACT_RTOL: the NumPy path sums the weight-gradient inner products with einsum, the others with matmul
    for act, sb2 in (("tanh", 0.1), ("relu", 0.0)):
        kw = dict(position=(1, 2), rng=6)
        ref = empirical_periodic_cnn_ntk(X2D, act, 1.5, sb2, V2D, 2, 3, 2, **kw)
        strict = empirical_periodic_cnn_ntk(X2D, act, 1.5, sb2, V2D, 2, 3, 2, backend="array_api_strict", **kw)
        np.testing.assert_allclose(strict, ref, rtol=EXACT_RTOL, atol=0)


def test_periodic_cnn_ntk_2d_torch_agrees_in_distribution():
    _torch()
    iu = np.triu_indices(2)
    s1, s2 = np.random.SeedSequence(18, spawn_key=(1,)), np.random.SeedSequence(18, spawn_key=(2,))
    kw = dict(position=(1, 2))
    a = empirical_periodic_cnn_ntk(X2D, "tanh", 1.5, 0.1, V2D, 1, 4, 200, rng=s1, **kw)
    t = empirical_periodic_cnn_ntk(X2D, "tanh", 1.5, 0.1, V2D, 1, 4, 200, rng=s2, backend="torch", **kw)
    z = _z_means(a[:, iu[0], iu[1]], t[:, iu[0], iu[1]])
    assert np.all(np.abs(z) < Z_TOL), z


def test_ntk_torch_agrees_in_distribution():
    _torch()
    iu = np.triu_indices(3)
    a = empirical_ntk(X, "tanh", 1.5, 0.1, 2, 16, 300, rng=np.random.SeedSequence(6, spawn_key=(1,)))
    t = empirical_ntk(X, "tanh", 1.5, 0.1, 2, 16, 300, rng=np.random.SeedSequence(6, spawn_key=(2,)), backend="torch")
    z = _z_means(a[:, iu[0], iu[1]], t[:, iu[0], iu[1]])
    assert np.all(np.abs(z) < Z_TOL), z
    with pytest.raises(ValueError, match="method='torch'"):
        empirical_ntk(X, "tanh", 1.5, 0.1, 1, 4, 1, method="torch", backend="torch")


# --- finite_width (Burkholz & Dubatovka 2019) -------------------------------------------------------------------

POOL = np.random.default_rng(7).standard_normal((10, 5))
LAYERS = [(8, 2 / 8, 0.01), (6, 2 / 6, 0.0)]


def test_finite_width_strict_namespace_reproduces_numpy():
    ref = simulate_squared_norms(POOL, LAYERS, 4, 3, rng=2)
    strict = simulate_squared_norms(POOL, LAYERS, 4, 3, backend="array_api_strict", rng=2)
    np.testing.assert_allclose(strict, ref, rtol=1e-13, atol=0)
    ref = simulate_pair(np.ones(5), np.arange(5.0), 16, 2 / 16, 0.01, 5, rng=1)
    strict = simulate_pair(np.ones(5), np.arange(5.0), 16, 2 / 16, 0.01, 5, backend="array_api_strict", rng=1)
    np.testing.assert_allclose(strict.inner, ref.inner, rtol=1e-13, atol=0)
    np.testing.assert_allclose(strict.cosine, ref.cosine, rtol=1e-13, atol=0)


def test_finite_width_torch_agrees_in_distribution():
    _torch()
    s1, s2 = np.random.SeedSequence(8, spawn_key=(1,)), np.random.SeedSequence(8, spawn_key=(2,))
    a = simulate_squared_norms(POOL, LAYERS, 400, 2, rng=s1)
    t = simulate_squared_norms(POOL, LAYERS, 400, 2, backend="torch", rng=s2)
    z = _z_means(a[:, 0, 1:], t[:, 0, 1:])  # layers 1 and 2 of each network's first input
    assert np.all(np.abs(z) < Z_TOL), z
    pa = simulate_pair(np.ones(5), np.arange(5.0), 16, 2 / 16, 0.01, 400, rng=s1)
    pt = simulate_pair(np.ones(5), np.arange(5.0), 16, 2 / 16, 0.01, 400, backend="torch", rng=s2)
    z = _z_means(np.stack([pa.inner, pa.cosine], 1), np.stack([pt.inner, pt.cosine], 1))
    assert np.all(np.abs(z) < Z_TOL), z


# --- jacobian (Xiao et al. 2018, Sec. 2.2.1) -----------------------------------------------------------


def test_jacobian_strict_namespace_reproduces_numpy():
    for weights in JACOBIAN_WEIGHTS:
        ref = jacobian_singular_values("tanh", 1.05, 0.01, 3, 6, 2, weights, q=0.5, rng=1)
        strict = jacobian_singular_values(
            "tanh", 1.05, 0.01, 3, 6, 2, weights, q=0.5, rng=1, backend="array_api_strict"
        )
        np.testing.assert_allclose(strict, ref, rtol=1e-12, atol=0)
    for kernel in JACOBIAN_CONV_KERNELS:
        ref = conv_jacobian_singular_values("tanh", 1.05, 0.01, 3, 3, 5, 2, kernel, q=0.5, rng=1)
        strict = conv_jacobian_singular_values(
            "tanh", 1.05, 0.01, 3, 3, 5, 2, kernel, q=0.5, rng=1, backend="array_api_strict"
        )
        np.testing.assert_allclose(strict, ref, rtol=1e-12, atol=0)


@pytest.mark.parametrize("backend", ["numpy", "torch"])
def test_linear_orthogonal_cnn_jacobian_is_an_isometry(backend):
    # dynamical isometry exactly (Xiao et al. 2018, Sec. 2.2.1): linear network, orthogonal kernels, sigma_w2 = 1
    if backend == "torch":
        _torch()
    for kernel in ("orthogonal", "delta_orthogonal"):
        s = conv_jacobian_singular_values("linear", 1.0, 0.0, 4, 3, 5, 2, kernel, q=0.5, rng=1, backend=backend)
        np.testing.assert_allclose(s, 1.0, atol=1e-12)


def test_conv2d_jacobian_strict_namespace_reproduces_numpy():
    # the same kernels from the same streams; NumPy multiplies circulant matrices, the backends
    # propagate the Jacobian's columns by periodic_conv: the squared singular values agree to
    # rounding relative to the largest (a backward-stable SVD's error is relative to ||J||)
    for kernel in JACOBIAN_CONV_KERNELS:
        for act in ("tanh", "relu"):
            ref = conv2d_jacobian_singular_values(act, 1.3, 0.05, 2, 2, (3, 4), 2, kernel, q=0.7, rng=4)
            strict = conv2d_jacobian_singular_values(
                act, 1.3, 0.05, 2, 2, (3, 4), 2, kernel, q=0.7, rng=4, backend="array_api_strict"
            )
            np.testing.assert_allclose(strict, ref, rtol=0, atol=EXACT_RTOL * ref.max())


@pytest.mark.parametrize("backend", ["array_api_strict", "torch"])
def test_linear_orthogonal_2d_cnn_jacobian_is_an_isometry(backend):
    if backend == "torch":
        _torch()
    for kernel in ("orthogonal", "delta_orthogonal"):
        s = conv2d_jacobian_singular_values("linear", 1.0, 0.0, 3, 2, (3, 3), 2, kernel, q=0.5, rng=1, backend=backend)
        np.testing.assert_allclose(s, 1.0, atol=1e-12)


def test_conv2d_jacobian_torch_agrees_in_distribution():
    _torch()
    s1, s2 = np.random.SeedSequence(19, spawn_key=(1,)), np.random.SeedSequence(19, spawn_key=(2,))
    # Algorithm 1 batched on torch (Gaussian kernels come from the sampler the strict test pins)
    kw = dict(kernel="orthogonal", q=0.5)
    a = conv2d_jacobian_singular_values("tanh", 1.5, 0.05, 2, 2, (3, 3), 200, rng=s1, **kw)
    t = conv2d_jacobian_singular_values("tanh", 1.5, 0.05, 2, 2, (3, 3), 200, rng=s2, backend="torch", **kw)
    z = _z_means(a[:, [0, 8, 17]], t[:, [0, 8, 17]])
    assert np.all(np.abs(z) < Z_TOL), z


def test_jacobian_torch_agrees_in_distribution():
    _torch()
    s1, s2 = np.random.SeedSequence(9, spawn_key=(1,)), np.random.SeedSequence(9, spawn_key=(2,))
    a = jacobian_singular_values("tanh", 1.5, 0.05, 3, 6, 300, "gaussian", q=0.5, rng=s1)
    t = jacobian_singular_values("tanh", 1.5, 0.05, 3, 6, 300, "gaussian", q=0.5, rng=s2, backend="torch")
    z = _z_means(a[:, [0, 2, 5]], t[:, [0, 2, 5]])
    assert np.all(np.abs(z) < Z_TOL), z
    a = conv_jacobian_singular_values("tanh", 1.5, 0.05, 2, 2, 5, 300, "orthogonal", q=0.5, rng=s1)
    t = conv_jacobian_singular_values("tanh", 1.5, 0.05, 2, 2, 5, 300, "orthogonal", q=0.5, rng=s2, backend="torch")
    z = _z_means(a[:, [0, 4, 9]], t[:, [0, 4, 9]])
    assert np.all(np.abs(z) < Z_TOL), z


# --- kurtosis (Grzejdziak 2023) -----------------------------------------------------------------------

X_DATA = np.random.default_rng(12).standard_normal((16, 6))


@pytest.mark.parametrize("kind", INPUT_KINDS)
def test_kurtosis_strict_namespace_reproduces_numpy(kind):
    ref = layer_moments([4, 6, 6], 0.1, "gaussian", 3, kind, rng=0)
    strict = layer_moments([4, 6, 6], 0.1, "gaussian", 3, kind, backend="array_api_strict", rng=0)
    np.testing.assert_allclose(strict.m4, ref.m4, rtol=1e-13, atol=0)
    for law, inp in (("gsm", "shared_sign"), ("uniform", "gaussian")):
        ref = nonzero_fraction([4, 4, 4], law, 20, inp, rng=1)
        strict = nonzero_fraction([4, 4, 4], law, 20, inp, backend="array_api_strict", rng=1)
        np.testing.assert_array_equal(strict, ref)
    for init in ("he", "gsm", "zero_star"):
        kw = dict(depth=4, width=6, n_networks=3, rng=2, dtype="float64", engine="blas")
        ref = empirical_variances(X_DATA, init, **kw)
        strict = empirical_variances(X_DATA, init, backend="array_api_strict", **kw)
        np.testing.assert_allclose(strict, ref, rtol=1e-12, atol=0)


def test_fig1_variances_strict_namespace_matches_numpy():
    """Grzejdziak 2023 Fig. 1 on the strict namespace: the same streams, the layers as matrix products
    instead of NumPy's fused Numba kernel, so the variances agree to float64 rounding (measured: at
    most 4e-16 relative through 4 layers), every initialiser and MetaInit included."""
    pytest.importorskip("sklearn")  # the embedded digits (data extra)
    kw = dict(n_networks=3, n_inputs=8, depth=4, n_metainit=1, metainit_steps=2, rng=5)
    ref = fig1_variances(**kw)
    strict = fig1_variances(backend="array_api_strict", **kw)
    assert list(strict) == list(ref)
    for init in ref:
        np.testing.assert_allclose(strict[init], ref[init], rtol=EXACT_RTOL, atol=0, err_msg=init)


def test_kurtosis_torch_agrees_in_distribution():
    _torch()
    s1, s2 = np.random.SeedSequence(13, spawn_key=(1,)), np.random.SeedSequence(13, spawn_key=(2,))
    a = layer_moments([6, 6, 6], 0.2, "gaussian", 400, "mixture", rng=s1)
    t = layer_moments([6, 6, 6], 0.2, "gaussian", 400, "mixture", backend="torch", rng=s2)
    z = _z_means(a.m4, t.m4)
    assert np.all(np.abs(z) < Z_TOL), z
    kw = dict(depth=3, width=6, n_networks=300, dtype="float64")
    a = empirical_variances(X_DATA, "he", rng=s1, **kw)
    t = empirical_variances(X_DATA, "he", backend="torch", rng=s2, **kw)
    z = _z_means(a[:, 1:], t[:, 1:])
    assert np.all(np.abs(z) < Z_TOL), z


# --- ConstNet / LeakyNet forward and backward passes (Blumenfeld et al. 2020) ---------------------------------

X_IMG = np.random.default_rng(14).standard_normal((2, 8, 8, 3))
HEAD = np.random.default_rng(15).standard_normal((4, 8)) * 0.3


def _constnet_pass(backend, batchnorm, dropout):
    net = ConstNet.initial((4, 8), 1, 3, 4, batchnorm=batchnorm, head=HEAD, backend=backend)
    logits, feats = net.forward(X_IMG, dropout=dropout, rng=3, keep=True)
    grads, betas = net.backward(net.backend.asarray(np.ones((2, 4))), keep=True)
    return [to_numpy(logits)] + [to_numpy(f) for f in feats + betas] + [to_numpy(grads[k]) for k in sorted(grads)]


@pytest.mark.parametrize("batchnorm", [False, True])
def test_constnet_passes_on_strict_and_torch(batchnorm):
    ref = _constnet_pass("numpy", batchnorm, 0.1)
    for got, want in zip(_constnet_pass("array_api_strict", batchnorm, 0.1), ref):  # same masks: same numbers
        np.testing.assert_allclose(got, want, rtol=0, atol=EXACT_ATOL)
    _torch()
    # no dropout: ConstNet's initialisation is deterministic, so PyTorch gives NumPy's numbers
    ref = _constnet_pass("numpy", batchnorm, 0.0)
    for got, want in zip(_constnet_pass("torch", batchnorm, 0.0), ref):
        np.testing.assert_allclose(got, want, rtol=0, atol=EXACT_ATOL)


def test_leakynet_passes_on_strict_and_torch():
    x = X_IMG[:, 0]  # 1-D: (batch, positions, channels)
    out = {}
    for backend in ("numpy", "array_api_strict") + (("torch",) if _has_torch() else ()):
        net = LeakyNet.initial(
            list("I1I1"), 4, 3, 3, kernel_shape=(3,), slope=0.1, head=np.ones((3, 4)), backend=backend
        )
        logits = net.forward(x)
        grads = net.backward(net.backend.asarray(np.ones((2, 3))))
        out[backend] = [to_numpy(logits)] + [to_numpy(grads[k]) for k in sorted(grads)]
    for backend in out:
        for got, want in zip(out[backend], out["numpy"]):
            np.testing.assert_allclose(got, want, rtol=0, atol=EXACT_ATOL)


def _has_torch():
    try:
        import array_api_compat  # noqa: F401
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


# --- moment simulators of Grzejdziak 2023, Sec. 6 (residual, convolutional) and validation.kurtosis_conv ---

MOMENT_FIELDS = ("s2", "m4", "m22")


def test_moment_simulators_strict_namespace_reproduces_numpy():
    from meanfield.validation.kurtosis_conv import conv_pair_moments

    for residual in (True, False):
        kw = dict(residual=residual, rng=3)
        ref = simulate_residual_moments(6, 3, 40, 0.2, **kw)
        strict = simulate_residual_moments(6, 3, 40, 0.2, backend="array_api_strict", **kw)
        for f in MOMENT_FIELDS:
            np.testing.assert_allclose(getattr(strict, f), getattr(ref, f), rtol=EXACT_RTOL, atol=0)
    ref = simulate_conv_moments(3, 3, 8, 3, 40, 0.1, rng=4)
    strict = simulate_conv_moments(3, 3, 8, 3, 40, 0.1, rng=4, backend="array_api_strict")
    for f in MOMENT_FIELDS:
        np.testing.assert_allclose(getattr(strict, f), getattr(ref, f), rtol=EXACT_RTOL, atol=0)
    ref = conv_pair_moments(30, rng=5, chunk=12)  # three chunks: three spawned streams
    strict = conv_pair_moments(30, rng=5, chunk=12, backend="array_api_strict")
    assert set(strict) == set(ref)
    for key in ref:
        np.testing.assert_allclose(strict[key], ref[key], rtol=EXACT_RTOL, atol=0)


def test_moment_simulators_torch_agree_in_distribution_and_repeat():
    from meanfield.validation.kurtosis_conv import conv_pair_moments

    _torch()
    s = [np.random.SeedSequence(16, spawn_key=(i,)) for i in range(6)]
    a = simulate_residual_moments(6, 3, 3000, 0.0, rng=s[0])
    t = simulate_residual_moments(6, 3, 3000, 0.0, rng=s[1], backend="torch")
    z = _z_means(np.concatenate([a.s2[1:], a.m4[1:]]).T, np.concatenate([t.s2[1:], t.m4[1:]]).T)
    assert np.all(np.abs(z) < Z_TOL), z
    again = simulate_residual_moments(6, 3, 3000, 0.0, rng=np.random.SeedSequence(16, spawn_key=(1,)), backend="torch")
    np.testing.assert_array_equal(again.m4, t.m4)
    a = simulate_conv_moments(3, 3, 8, 2, 2000, 0.0, rng=s[2])
    t = simulate_conv_moments(3, 3, 8, 2, 2000, 0.0, rng=s[3], backend="torch")
    z = _z_means(np.concatenate([a.s2[1:], a.m4[1:], a.m22[1:]]).T, np.concatenate([t.s2[1:], t.m4[1:], t.m22[1:]]).T)
    assert np.all(np.abs(z) < Z_TOL), z
    a = conv_pair_moments(2000, rng=s[4])
    t = conv_pair_moments(2000, rng=s[5], backend="torch")
    keys = sorted(a)
    z = _z_means(np.stack([a[k] for k in keys], 1), np.stack([t[k] for k in keys], 1))
    assert np.all(np.abs(z) < Z_TOL), dict(zip(keys, z))


# --- looks-linear delta-orthogonal networks (Blumenfeld et al. 2020, App. B) and the cross-entropy --------------

X_LL = np.random.default_rng(20).standard_normal((2, 5, 5, 2))


def _ll_fields(out):
    return list(out.pre) + list(out.us) + list(out.jvp)


def test_looks_linear_forward_strict_namespace_reproduces_numpy():
    kw = dict(rng=3, tangent=X_LL[::-1])
    ref = looks_linear_delta_orthogonal_forward(X_LL, 3, 4, (3, 3), **kw)
    strict = looks_linear_delta_orthogonal_forward(X_LL, 3, 4, (3, 3), backend="array_api_strict", **kw)
    for got, want in zip(_ll_fields(strict), _ll_fields(ref), strict=True):
        assert isinstance(got, np.ndarray)
        np.testing.assert_allclose(got, want, rtol=0, atol=EXACT_ATOL)


def test_looks_linear_forward_on_torch_is_a_rotation_and_repeats():
    # eq. 9 of Blumenfeld et al. 2020 holds surely, so it holds for PyTorch's own draws: a^(l+1) = diag(U, U) a^l
    _torch()
    out = looks_linear_delta_orthogonal_forward(X_LL, 4, 4, (3, 3), rng=5, backend="torch")
    v = X_LL
    for u in out.us:
        np.testing.assert_allclose(u @ u.T, np.eye(2), atol=1e-12)  # Haar-orthogonal blocks
        v = v @ u.T
    np.testing.assert_allclose(out.pre[-1], np.concatenate([v, -v], axis=-1), atol=1e-12)
    again = looks_linear_delta_orthogonal_forward(X_LL, 4, 4, (3, 3), rng=5, backend="torch")
    np.testing.assert_array_equal(again.pre[-1], out.pre[-1])


@pytest.mark.parametrize("backend", ["array_api_strict", "torch"])
def test_softmax_xent_on_the_backends_equals_numpy(backend):
    if backend == "torch":
        _torch()
    r = np.random.default_rng(21)
    logits, labels = 3.0 * r.standard_normal((6, 4)), r.integers(0, 4, 6)
    loss, grad = softmax_xent(logits, labels)
    b = get_backend(backend)
    got_loss, got_grad = softmax_xent(b.asarray(logits), labels, b.xp)
    assert abs(got_loss - loss) <= EXACT_ATOL
    np.testing.assert_allclose(to_numpy(got_grad), grad, rtol=0, atol=EXACT_ATOL)


# --- validation.conv_inputs (Xiao et al. 2018, footnote 3) -------------------------------------------------

X_MI = np.random.default_rng(22).standard_normal((2, 6, 3))


def test_multi_input_cnn_strict_namespace_reproduces_numpy():
    from meanfield.validation.conv_inputs import simulate_multi_input

    for act, sb2 in (("tanh", 0.05), ("relu", 0.0)):
        ref = simulate_multi_input(X_MI, act, 1.8, sb2, (0.25, 0.5, 0.25), 2, 4, 3, rng=8)
        strict = simulate_multi_input(
            X_MI, act, 1.8, sb2, (0.25, 0.5, 0.25), 2, 4, 3, rng=8, backend="array_api_strict"
        )
        np.testing.assert_allclose(strict, ref, rtol=EXACT_RTOL, atol=EXACT_ATOL)


def test_multi_input_cnn_torch_agrees_in_distribution():
    from meanfield.validation.conv_inputs import simulate_multi_input

    _torch()
    s1, s2 = np.random.SeedSequence(23, spawn_key=(1,)), np.random.SeedSequence(23, spawn_key=(2,))
    a = simulate_multi_input(X_MI, "tanh", 1.8, 0.05, (0.25, 0.5, 0.25), 1, 4, 300, rng=s1)
    t = simulate_multi_input(X_MI, "tanh", 1.8, 0.05, (0.25, 0.5, 0.25), 1, 4, 300, rng=s2, backend="torch")
    # the rows of validation.conv_inputs at the last layer: cross-input lag 0 and 2, same-input lag 1
    pick = [(0, 0, 1, 0), (0, 0, 1, 2), (0, 0, 0, 1)]
    z = _z_means(
        np.stack([a[:, -1][(slice(None), *e)] for e in pick], 1),
        np.stack([t[:, -1][(slice(None), *e)] for e in pick], 1),
    )
    assert np.all(np.abs(z) < Z_TOL), z


# --- every simulator takes backend= and has a test here or in test_backends.py ----------------------

#: Stochastic public functions that stay on the host by design, with the reason.
HOST_ONLY = {
    "metainit_weights": "MetaInit optimises on the host; empirical_variances hands its weights to the backend",
}


def test_every_stochastic_simulator_takes_a_backend_and_is_tested_on_one():
    import inspect
    import pathlib

    from meanfield.validation import conv_inputs, kurtosis_conv

    from meanfield import simulate as sims

    here = pathlib.Path(__file__).parent
    tested = (here / "test_backends_simulators.py").read_text() + (here / "test_backends_dense.py").read_text()
    functions = [(n, getattr(sims, n)) for n in sims.__all__ if inspect.isfunction(getattr(sims, n))]
    functions += [(f.__name__, f) for f in (kurtosis_conv.conv_pair_moments, conv_inputs.simulate_multi_input)]
    checked = []
    for name, f in functions:
        params = inspect.signature(f).parameters
        if "rng" not in params or name in HOST_ONLY:
            continue
        assert "backend" in params, f"{name} draws random numbers but takes no backend"
        assert f"{name}(" in tested, f"{name} is not run on a non-NumPy backend by a test"
        checked.append(name)
    for cls in (ConstNet, LeakyNet):
        assert "backend" in inspect.signature(cls.initial).parameters, cls.__name__
    assert len(checked) >= 17, checked
