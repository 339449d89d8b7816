"""validation.networks: periodic convolution primitive and the dense Monte-Carlo simulator."""

import numpy as np
import pytest

from meanfield import dense
from meanfield.validation.networks import periodic_conv, periodic_conv_transpose, random_weights, simulate_dense


def direct_conv_1d(x, k):
    n, size = x.shape[-2], k.shape[0]
    out = np.zeros(x.shape[:-1] + (k.shape[-1],))
    for a in range(n):
        for j in range(size):
            out[..., a, :] += x[..., (a + j - size // 2) % n, :] @ k[j]
    return out


def test_periodic_conv_matches_the_definition_and_its_adjoint():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 9, 4))
    k = rng.standard_normal((5, 4, 2))
    h = periodic_conv(x, k, 1)
    assert np.allclose(h, direct_conv_1d(x, k), atol=1e-13)
    g = rng.standard_normal(h.shape)
    assert np.sum(g * h) == pytest.approx(np.sum(periodic_conv_transpose(g, k, 1) * x), rel=1e-12)
    x2 = rng.standard_normal((2, 5, 6, 3))
    k2 = rng.standard_normal((3, 3, 3, 4))
    h2 = periodic_conv(x2, k2, 2)
    g2 = rng.standard_normal(h2.shape)
    assert np.sum(g2 * h2) == pytest.approx(np.sum(periodic_conv_transpose(g2, k2, 2) * x2), rel=1e-12)
    with pytest.raises(ValueError):
        periodic_conv(x, rng.standard_normal((4, 4, 2)), 1)


@pytest.mark.parametrize("law", ["gaussian", "uniform", "rademacher", "orthogonal"])
def test_random_weight_laws_have_the_mean_field_variance(law, backend):
    from meanfield.validation.backend import get_backend, to_numpy

    b = get_backend(backend)
    w = to_numpy(random_weights((20, 64, 32), 2.0, law, rng=1, backend=b))
    # E W^2 = sigma_w2 / n_in; over 40,960 entries the standard error of the mean square is < 1 %
    assert np.mean(w**2) * 32 == pytest.approx(2.0, rel=0.05)
    if law == "orthogonal":
        assert np.allclose(np.swapaxes(w, 1, 2) @ w, 2.0 * 64 / 32 * np.eye(32), atol=1e-12)


def test_simulated_first_layer_matches_input_covariance_in_mean():
    x = np.random.default_rng(2).standard_normal((2, 30))
    sim = simulate_dense(x, "tanh", 1.5, 0.1, depth=2, width=200, n_networks=64, gradients=True, rng=3)
    assert sim.cov.shape == (64, 3, 2, 2) and sim.grad_sq.shape == (64, 3, 2)
    theory = dense.input_covariance(x, 1.5, 0.1)
    m = sim.cov[:, 0].mean(axis=0)
    se = sim.cov[:, 0].std(axis=0, ddof=1) / np.sqrt(64)
    assert np.all(np.abs(m - theory) <= 4.5 * se)
    assert np.all(np.abs(sim.grad_sq[:, -1].mean(axis=0) - 1.0) <= 4.5 * sim.grad_sq[:, -1].std(axis=0, ddof=1) / 8)


def test_cupy_backend_reports_what_to_install():
    from meanfield.validation.backend import available_backends, get_backend

    if "cupy" in available_backends():
        pytest.skip("CuPy is installed here")
    with pytest.raises(ImportError, match="pip install"):
        get_backend("cupy")
