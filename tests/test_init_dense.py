"""meanfield.init dense laws: He and Glorot variances for leaky slopes (seed 002, Prop. 3.2)."""

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
    """sigma_w2 * E[phi_a(y)^2] = 1 for y ~ N(0, 1): E phi_a^2 = (1 + a^2) / 2 (seed 002, supplement)."""
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
