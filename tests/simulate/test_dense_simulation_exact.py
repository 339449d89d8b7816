"""The exact forward sampler of simulate_dense (method="exact") against the weight-sampling path.

The two paths draw the same law of every recorded statistic, with different random numbers. The
check is a two-sample test on independent per-network statistics: for each distinct entry of the
last layer's empirical covariance, the difference of the two means and of the two variances is
compared with its standard error (estimated from the samples: second and fourth moments).
``Z_TOL = 4.5`` is fixed in advance: a two-sided normal tail of 6.8e-6 per comparison, so the 24
comparisons below (2 laws x 6 entries x mean and variance) raise a false alarm with probability
below 2e-4; the seeds are fixed, so the outcome is deterministic. A power check shows the same test
rejects a 10 % error in sigma_w2.
"""

from __future__ import annotations

import numpy as np
import pytest

from meanfield.simulate import EXACT_LAWS, FORWARD_METHODS, simulate_dense

#: Two-sided z tolerance of every comparison (stated before looking at data; see module notes).
Z_TOL = 4.5
N_NETWORKS = 400
WIDTH = 48
DEPTH = 2
X = np.random.default_rng(3).standard_normal((3, 24))


def _last_layer(sim):
    """Per-network distinct entries of the last layer's covariance, shape (n_networks, 6)."""
    iu = np.triu_indices(X.shape[0])
    return sim.cov[:, -1][:, iu[0], iu[1]]


def _sample(method, law, sigma_w2=1.5, key=0):
    return _last_layer(
        simulate_dense(
            X,
            "tanh",
            sigma_w2,
            0.05,
            DEPTH,
            WIDTH,
            N_NETWORKS,
            law=law,
            method=method,
            rng=np.random.SeedSequence(2024, spawn_key=(key,)),
        )
    )


@pytest.mark.parametrize("law", EXACT_LAWS)
def test_exact_sampler_has_the_law_of_the_weight_path(law, z_scores):
    exact = _sample("exact", law, key=1)
    weights = _sample("weights", law, key=2)
    z_mean, z_var = z_scores(exact, weights)
    assert np.all(np.abs(z_mean) < Z_TOL), z_mean
    assert np.all(np.abs(z_var) < Z_TOL), z_var


def test_the_two_sample_test_rejects_a_wrong_variance(z_scores):
    # power: the same statistics with sigma_w2 10 % too large fail the tolerance
    exact = _sample("exact", "gaussian", key=1)
    wrong = _sample("weights", "gaussian", sigma_w2=1.65, key=2)
    z_mean, _ = z_scores(exact, wrong)
    assert np.max(np.abs(z_mean)) > Z_TOL


def test_exact_orthogonal_layers_preserve_norms_exactly():
    # square Haar layers, linear activation, no bias: |W a| = |a| for every input, so the diagonal
    # of the empirical covariance is carried unchanged from layer 1 on (up to rounding)
    x = np.random.default_rng(0).standard_normal((2, 32))
    sim = simulate_dense(x, "linear", 1.0, 0.0, 3, 16, 5, law="orthogonal", method="exact", rng=0)
    diag = np.diagonal(sim.cov, axis1=-2, axis2=-1)
    np.testing.assert_allclose(diag[:, 1:], np.broadcast_to(diag[:, 1:2], diag[:, 1:].shape), rtol=1e-12)
    # the first layer (16 x 32, orthonormal rows at sigma_w2 = 1) is a projection: norms shrink
    assert np.all(diag[:, 0] <= np.sum(x**2, axis=1) / 32 * 32 / 16 * (1 + 1e-12))


def test_auto_uses_the_weights_where_the_law_needs_them():
    x = X[:2]
    kw = dict(depth=2, width=32, n_networks=3, rng=7)
    for extra in ({"gradients": True}, {"law": "uniform"}, {"law": "rademacher"}):
        auto = simulate_dense(x, "tanh", 1.5, 0.05, method="auto", **kw, **extra)
        ref = simulate_dense(x, "tanh", 1.5, 0.05, method="weights", **kw, **extra)
        np.testing.assert_array_equal(auto.cov_normalized, ref.cov_normalized)
    # few inputs and a Gaussian law: auto samples exactly (different numbers from the same rng)
    auto = simulate_dense(x, "tanh", 1.5, 0.05, method="auto", **kw)
    exact = simulate_dense(x, "tanh", 1.5, 0.05, method="exact", **kw)
    np.testing.assert_array_equal(auto.cov_normalized, exact.cov_normalized)


def test_method_arguments_are_checked():
    assert FORWARD_METHODS == ("auto", "weights", "exact")
    with pytest.raises(ValueError, match="method must be one of"):
        simulate_dense(X, "tanh", 1.5, 0.05, 1, 8, 2, method="fast", rng=0)
    with pytest.raises(ValueError, match="method must be one of"):
        simulate_dense(X, "tanh", 1.5, 0.05, 1, 8, 2, method=None, rng=0)
    with pytest.raises(ValueError, match="gradients"):
        simulate_dense(X, "tanh", 1.5, 0.05, 1, 8, 2, gradients=True, method="exact", rng=0)
    with pytest.raises(ValueError, match="law"):
        simulate_dense(X, "tanh", 1.5, 0.05, 1, 8, 2, law="uniform", method="exact", rng=0)
