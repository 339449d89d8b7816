"""Array backends without a GPU: simulate_dense on array_api_strict and on PyTorch CPU tensors.

``array_api_strict`` accepts only the array-API standard (no NumPy-only function, no array method
the standard lacks, no implicit NumPy conversion in arithmetic), so a NumPy-only call in the code
the GPU backends run fails here. It draws its random numbers from the NumPy Generator of the same
``rng``, so its results equal NumPy's (exactly, up to the last bit where an activation is
evaluated by another library: erf). PyTorch draws from its own generator: its results agree with
NumPy's in distribution, checked by the two-sample test of ``test_dense_simulation_exact``
(``Z_TOL`` = 4.5 fixed in advance: 6.8e-6 two-sided per comparison, 12 comparisons per case).
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from meanfield.backend import BACKENDS, get_backend, to_numpy
from meanfield.init import dense_weights, haar_orthogonal
from meanfield.simulate import simulate_dense

pytest.importorskip("array_api_strict")

Z_TOL = 4.5
X = np.random.default_rng(3).standard_normal((3, 24))


@pytest.mark.parametrize("act", ["tanh", "relu", "erf", "leaky_relu", "hard_tanh", "sigmoid", "linear"])
@pytest.mark.parametrize(
    "law,method,gradients",
    [
        ("gaussian", "weights", True),
        ("gaussian", "exact", False),
        ("orthogonal", "exact", False),
        ("uniform", "auto", True),
    ],
)
def test_strict_array_api_backend_reproduces_numpy(act, law, method, gradients):
    kw = dict(depth=3, width=16, n_networks=3, law=law, method=method, gradients=gradients, rng=5)
    ref = simulate_dense(X, act, 1.5, 0.05, **kw)
    strict = simulate_dense(X, act, 1.5, 0.05, backend="array_api_strict", **kw)
    # same generator: the same numbers; erf goes through the Activation's callables on the host
    # (array_api_strict has no erf) instead of scipy.special.erf: a few ulps
    np.testing.assert_allclose(strict.cov_normalized, ref.cov_normalized, rtol=0, atol=1e-14)
    np.testing.assert_allclose(strict.log_scale, ref.log_scale, rtol=1e-14, atol=0)
    if gradients:
        np.testing.assert_allclose(strict.grad_sq_normalized, ref.grad_sq_normalized, rtol=0, atol=1e-14)


def test_strict_namespace_rejects_numpy_only_code():
    # the guard itself: NumPy idioms that the simulators must not use fail on array_api_strict
    xp = get_backend("array_api_strict").xp
    a = xp.ones((2, 3, 4), dtype=xp.float64)
    with pytest.raises(IndexError):
        a[:, 0]  # implicit trailing axes
    with pytest.raises((TypeError, AttributeError)):
        xp.swapaxes(a, 1, 2)  # not in the standard
    with pytest.raises(TypeError):
        a + np.ones(4)  # mixing in NumPy arrays


def test_torch_backend_agrees_in_distribution(z_scores):
    pytest.importorskip("torch")
    pytest.importorskip("array_api_compat")
    iu = np.triu_indices(3)
    for method in ("weights", "exact"):
        kw = dict(depth=2, width=48, n_networks=300, method=method)
        a = simulate_dense(X, "tanh", 1.5, 0.05, rng=np.random.SeedSequence(9, spawn_key=(1,)), **kw)
        t = simulate_dense(X, "tanh", 1.5, 0.05, backend="torch", rng=np.random.SeedSequence(9, spawn_key=(2,)), **kw)
        z_mean, z_var = z_scores(a.cov[:, -1][:, iu[0], iu[1]], t.cov[:, -1][:, iu[0], iu[1]])
        assert np.all(np.abs(z_mean) < Z_TOL), (method, z_mean)
        assert np.all(np.abs(z_var) < Z_TOL), (method, z_var)


def test_torch_backend_is_reproducible_and_float64():
    torch = pytest.importorskip("torch")
    pytest.importorskip("array_api_compat")
    b = get_backend("torch")
    assert b.name == "torch" and b.device in ("cpu", "cuda")
    r1 = simulate_dense(X, "relu", 2.0, 0.0, 2, 16, 3, gradients=True, backend=b, rng=4)
    r2 = simulate_dense(X, "relu", 2.0, 0.0, 2, 16, 3, gradients=True, backend="torch", rng=4)
    np.testing.assert_array_equal(r1.cov_normalized, r2.cov_normalized)
    np.testing.assert_array_equal(r1.grad_sq_normalized, r2.grad_sq_normalized)
    w = dense_weights(50, 40, 2.0, "gaussian", rng=1, batch_shape=(20,), backend=b)
    assert isinstance(w, torch.Tensor) and w.dtype == torch.float64 and tuple(w.shape) == (20, 50, 40)
    q = to_numpy(haar_orthogonal(6, 4, rng=1, batch_shape=2, backend=b))
    np.testing.assert_allclose(np.swapaxes(q, 1, 2) @ q, np.broadcast_to(np.eye(4), (2, 4, 4)), atol=1e-12)
    for law in ("uniform", "rademacher", "orthogonal"):
        w = to_numpy(dense_weights(30, 20, 2.0, law, rng=2, batch_shape=(10,), backend=b))
        assert np.isfinite(w).all() and abs(np.mean(w**2) * 20 / 2.0 - 1.0) < 0.1


def test_backend_names_and_missing_packages(monkeypatch):
    assert BACKENDS == ("numpy", "cupy", "torch", "array_api_strict")
    with pytest.raises(ValueError, match="backend name must be one of"):
        get_backend("jax")
    with pytest.raises(TypeError):
        get_backend(3)
    monkeypatch.setitem(sys.modules, "array_api_compat", None)
    with pytest.raises(ImportError, match="meanfield-theory\\[torch\\]"):
        get_backend("torch")
