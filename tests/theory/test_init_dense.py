"""meanfield.init dense laws: He and Glorot variances for leaky slopes (Grzejdziak et al. 2023, Prop. 3.2)."""

import math

import numpy as np
import pytest
from scipy import integrate, stats

from meanfield.init import dense_weights, glorot_sigma_w2, he_sigma_w2

#: scipy.integrate.quad on a smooth, Gaussian-decaying integrand split at the kink: ~1e-12 absolute.
QUAD_TOL = 1e-10
#: Standard errors allowed in Monte-Carlo checks (two-sided 7e-6 per check).
Z = 4.5


@pytest.mark.parametrize("a", [0.0, 0.1, 0.5, 1.0, -0.3, 2.0])
def test_he_keeps_the_second_moment_by_quadrature(a):
    """sigma_w2 * E[phi_a(y)^2] = 1 for y ~ N(0, 1): E phi_a^2 = (1 + a^2) / 2 (Grzejdziak 2023, supplement)."""
    f = lambda x: (x if x > 0 else a * x) ** 2 * stats.norm.pdf(x)  # noqa: E731
    m2 = integrate.quad(f, -np.inf, 0.0, epsabs=1e-13)[0] + integrate.quad(f, 0.0, np.inf, epsabs=1e-13)[0]
    assert he_sigma_w2(a) * m2 == pytest.approx(1.0, abs=QUAD_TOL)


@pytest.mark.parametrize("law", ["gaussian", "uniform", "rademacher"])
@pytest.mark.parametrize("a", [0.0, 0.1])
def test_he_layer_preserves_variance_monte_carlo(law, a):
    """One He layer y = W phi_a(x), x ~ N(0, I): E y_i^2 = 1 for every symmetric weight law."""
    rng = np.random.default_rng(7)
    n_trials, fan_in, fan_out = 2000, 50, 20
    per_trial = np.empty(n_trials)
    for k in range(n_trials):
        x = rng.standard_normal(fan_in)
        w = dense_weights(fan_out, fan_in, he_sigma_w2(a), law, rng=rng)
        y = w @ np.where(x > 0, x, a * x)
        per_trial[k] = np.mean(y * y)
    se = per_trial.std(ddof=1) / math.sqrt(n_trials)
    assert abs(per_trial.mean() - 1.0) <= Z * se


def test_glorot_variance_and_leaky_gain():
    assert glorot_sigma_w2(30, 10) == pytest.approx(2 * 30 / 40)  # fan_in * 2 / (fan_in + fan_out)
    for a in (0.0, 0.1, 0.7):
        assert glorot_sigma_w2(16, 16, slope=a) == pytest.approx(he_sigma_w2(a), rel=1e-15)
        assert glorot_sigma_w2(30, 10, slope=a) == pytest.approx(glorot_sigma_w2(30, 10) * 2 / (1 + a * a), rel=1e-15)
    assert he_sigma_w2() == 2.0 and he_sigma_w2(1.0) == 1.0  # ReLU and linear


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: he_sigma_w2(float("nan")), "slope"),
        (lambda: he_sigma_w2(float("inf")), "slope"),
        (lambda: glorot_sigma_w2(0, 3), "fan_in"),
        (lambda: glorot_sigma_w2(3, 0), "fan_out"),
        (lambda: glorot_sigma_w2(3, 3, slope=float("nan")), "slope"),
        (lambda: dense_weights(3, 3, -1.0), "sigma_w2"),
        (lambda: dense_weights(3, 3, 1.0, law="cauchy"), "law"),
        (lambda: dense_weights(0, 3), "n_out"),
    ],
)
def test_bad_input_names_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# --- the one sampler: batches and backends (the simulators draw through it) --------------------


@pytest.mark.parametrize("law", ["gaussian", "uniform", "rademacher"])
def test_a_batch_is_successive_draws_from_one_generator(law):
    """batch=(k,) gives the numbers of k unbatched draws from the same Generator, so a simulator that
    draws one matrix per network through the sampler has the laws of dense_weights exactly."""
    batched = dense_weights(3, 4, 1.5, law, rng=9, batch_shape=(2, 5))
    g = np.random.default_rng(9)
    one_by_one = np.stack([dense_weights(3, 4, 1.5, law, rng=g) for _ in range(10)]).reshape(2, 5, 3, 4)
    np.testing.assert_array_equal(batched, one_by_one)


def test_batched_orthogonal_matrices_are_orthogonal_and_scaled(backend):
    from meanfield.backend import to_numpy
    from meanfield.init import haar_orthogonal

    w = to_numpy(dense_weights(6, 4, 2.0, "orthogonal", rng=1, batch_shape=7, backend=backend))
    assert w.shape == (7, 6, 4)
    np.testing.assert_allclose(
        np.swapaxes(w, 1, 2) @ w, np.broadcast_to(2.0 * 6 / 4 * np.eye(4), (7, 4, 4)), atol=1e-12
    )
    q = to_numpy(haar_orthogonal(3, 5, rng=1, batch_shape=(2, 2), backend=backend))
    np.testing.assert_allclose(q @ np.swapaxes(q, -1, -2), np.broadcast_to(np.eye(3), (2, 2, 3, 3)), atol=1e-12)


@pytest.mark.parametrize(
    "batch, exc",
    [
        ((0,), ValueError),
        (-1, ValueError),
        ("2", TypeError),
        (2.5, TypeError),
        ((2, True), ValueError),
        ((2**20, 2**20), ValueError),
    ],
)
def test_bad_batches_raise_naming_the_argument(batch, exc):
    with pytest.raises(exc, match="batch"):
        dense_weights(3, 4, batch_shape=batch, rng=0)


def test_unknown_backend_and_device_generators():
    with pytest.raises(ValueError, match="backend"):
        dense_weights(3, 4, rng=0, backend="jax")
    with pytest.raises(TypeError, match="rng"):
        dense_weights(3, 4, rng="7")


def test_looks_linear_block_batched_and_scaled_by_sigma_w2():
    """One looks-linear construction for single matrices and batches; orthogonal_looks_linear takes
    sigma_w2 = gain^2 (its W0 has W0 W0^T = sigma_w2 I) and gsm's batch repeats its single draws."""
    from meanfield.init import gsm, looks_linear, orthogonal_looks_linear

    w0 = np.random.default_rng(0).standard_normal((4, 2, 3))
    block = looks_linear(w0)
    assert block.shape == (4, 4, 6)
    for i in range(4):
        np.testing.assert_array_equal(block[i], np.block([[w0[i], -w0[i]], [-w0[i], w0[i]]]))
    w = orthogonal_looks_linear(6, 6, sigma_w2=2.5, rng=3)
    np.testing.assert_allclose(w[:3, :3] @ w[:3, :3].T, 2.5 * np.eye(3), atol=1e-12)
    np.testing.assert_array_equal(orthogonal_looks_linear(6, 6, 4.0, rng=3), 2.0 * orthogonal_looks_linear(6, 6, rng=3))
    with pytest.raises(TypeError):
        orthogonal_looks_linear(6, 6, gain=1.0, rng=3)  # the former name of sigma_w2 (sigma_w2 = gain^2)
    g = np.random.default_rng(5)
    np.testing.assert_array_equal(gsm(4, 6, rng=5, batch_shape=3), np.stack([gsm(4, 6, rng=g) for _ in range(3)]))
