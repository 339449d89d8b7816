"""Every Monte-Carlo simulator on a non-NumPy namespace, on the CPU (issue 18, item 3).

``array_api_strict`` accepts only the array-API standard, so a NumPy-only call in the code that the
GPU backends run fails here; it draws from the NumPy Generator of the same ``rng``, so its results
equal NumPy's (to float rounding: the same operations in the same order). PyTorch CPU tensors draw
from torch's own generator: same law, other numbers, checked by two-sample z statistics.

Tolerances, fixed before looking at data:

- ``EXACT_ATOL``: the same float64 operations on the same numbers; 1e-12 allows for a BLAS that
  orders a sum differently (about 1e3 ulps of O(1) numbers).
- ``Z_TOL = 4.5``: a two-sided z of 4.5 has probability 6.8e-6 under the null; with at most ~20
  comparisons per test the chance of a false failure is below 1.4e-4 (seeds are fixed, so a test
  either always passes or always fails; this bounds the chance that the fixed seeds are unlucky).
"""

from __future__ import annotations

import numpy as np
import pytest
from meanfield.validation.simulators import conv_kernels, empirical_conv_ntk, empirical_ntk, simulate_conv

from meanfield.backend import to_numpy
from meanfield.init import orthogonal_kernel_variance

pytest.importorskip("array_api_strict")

EXACT_ATOL = 1e-12
Z_TOL = 4.5


def _torch():
    pytest.importorskip("torch")
    pytest.importorskip("array_api_compat")


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


def test_ntk_torch_agrees_in_distribution():
    _torch()
    iu = np.triu_indices(3)
    a = empirical_ntk(X, "tanh", 1.5, 0.1, 2, 16, 300, rng=np.random.SeedSequence(6, spawn_key=(1,)))
    t = empirical_ntk(X, "tanh", 1.5, 0.1, 2, 16, 300, rng=np.random.SeedSequence(6, spawn_key=(2,)), backend="torch")
    z = _z_means(a[:, iu[0], iu[1]], t[:, iu[0], iu[1]])
    assert np.all(np.abs(z) < Z_TOL), z
    with pytest.raises(ValueError, match="method='torch'"):
        empirical_ntk(X, "tanh", 1.5, 0.1, 1, 4, 1, method="torch", backend="torch")
