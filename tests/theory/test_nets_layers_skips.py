"""meanfield.nets.Residual with a projection skip (a skip path of layers, ResNet's downsampling).

The torch module against the sampler (float64 rounding); the theory against a direct Monte-Carlo
of the block (Bonferroni bound on the standard errors), with zero and with non-zero path means (the
cross term is the product of the means); the derivative map against back-propagation through
finite networks; the refusal where neither path ends with fresh zero-mean weights.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from meanfield.nets import Act, BatchNorm, Conv, Dense, Network, Residual

#: Float64 rounding of a few hundred products summed in another order.
ROUNDING = 1e-13
#: Family-wise false-alarm rate of a theory-vs-simulation test (Bonferroni over its K entries).
ALPHA = 1e-3

X = np.random.default_rng(0).standard_normal((2, 4, 4, 3))


def _agree(theory, mean, se):
    iu = np.triu_indices(theory.shape[0])
    z = (mean - theory)[iu] / se[iu]
    assert np.max(np.abs(z)) < float(norm.isf(ALPHA / (2 * iu[0].size))), np.max(np.abs(z))


def _downsample(n, shift=0.0):
    bn = BatchNorm(train=False, bias=shift)
    branch = (
        Conv(2 * n, (3, 3), 2.0, 0.0, stride=2, padding=1),
        BatchNorm(train=False),
        Act("relu"),
        Conv(2 * n, (3, 3), 2.0, 0.0, padding=1),
        bn,
    )
    skip = (Conv(2 * n, (1, 1), 1.0, 0.0, stride=2, padding=0), bn)
    # a shift makes the block's output non-zero-mean: no activation after it then (it needs a zero-mean Gaussian)
    tail = [Act("relu")] if shift == 0 else [Dense(n)]
    return Network([Conv(n, (3, 3), 2.0, 0.1, padding=1), Act("relu"), Residual(branch, skip=skip)] + tail)


def test_module_equals_the_sampler():
    torch = pytest.importorskip("torch")
    net = _downsample(4, shift=0.2)
    w = net.weights(X.shape[1:], rng=1, n_networks=2)
    assert net.shapes(X.shape[1:])[3] == (2, 2, 8)
    y = net.forward(w, X)
    yt = net.to_torch(w, 1)(torch.tensor(X)).detach().numpy()
    assert np.max(np.abs(y[1] - yt)) <= ROUNDING * np.max(np.abs(yt))


@pytest.mark.parametrize("shift", [0.0, 0.5])
def test_theory_matches_monte_carlo(shift):
    net = _downsample(32, shift)
    th = net.theory(X)
    sim = net.simulate(X, n_networks=200, rng=2)
    for layer in (3, 4):
        _agree(th.second[layer], sim.mean(layer), sim.standard_error(layer))
    if shift:  # the cross term 2 shift^2 is in the block's moments
        assert np.min(th.second[3]) > 2 * shift**2


def test_derivative_map_matches_backpropagation():
    torch = pytest.importorskip("torch")
    x = X.reshape(2, -1)
    n = 32
    block = Residual((Dense(n, 2.0), Act("tanh"), Dense(n, 1.5)), skip=(Dense(n, 1.0), Act("relu")))
    net = Network([Dense(n, 1.0), block])
    th = net.theory(x, backward=True)
    n_networks = 100
    w = net.weights(x.shape[1:], rng=5, n_networks=n_networks)
    xi = np.random.default_rng(6).standard_normal((n_networks, 2, n))
    grads = []
    for k in range(n_networks):
        module = net.to_torch(w, k)
        h = module[0](torch.tensor(x))
        h.retain_grad()
        (module[1](h) * torch.tensor(xi[k])).sum().backward()
        g = h.grad.numpy()
        grads.append(g @ g.T / n)
    vals = np.array(grads)
    _agree(th.grad[1], vals.mean(axis=0), vals.std(axis=0, ddof=1) / math.sqrt(n_networks))


def test_paths_without_fresh_weights_are_refused():
    net = Network([Dense(8, 1.0), Residual((Act("relu"),), skip=(Act("tanh"),))])
    with pytest.raises(ValueError, match="neither the skip path nor the branch"):
        net.theory(X.reshape(2, -1))
    with pytest.raises(TypeError, match="skip path"):
        Residual((Act("relu"),), skip=(Act("tanh"), "x"))
    with pytest.raises(ValueError, match="skip path"):
        Network([Residual((Dense(4),), skip=(Dense(5),))]).theory(X.reshape(2, -1))


def test_activation_after_a_non_gaussian_residual_sum_is_the_law_of_the_sum():
    """relu stream + fresh dense branch, then tanh: the theory against sampling the limit law directly.

    In the limit the unit's field is ``u = relu(h) + f`` with ``h ~ N(0, S_h)`` and an independent
    ``f ~ N(0, 1.5 E[relu(h) relu(h)^T])``; the expected ``E tanh(u_a) tanh(u_b)`` is sampled here
    (200,000 draws; tolerance: the sampling standard error, Bonferroni-corrected).
    """
    x = X.reshape(2, -1)[:, :12]
    net = Network([Dense(64, 1.0), Act("relu"), Residual((Dense(64, 1.5),)), Act("tanh"), Dense(64)])
    th = net.theory(x)
    s_h = th.second[1]
    rng = np.random.default_rng(7)
    draws = 200_000
    h = rng.standard_normal((draws, 2)) @ np.linalg.cholesky(s_h).T
    z = np.maximum(h, 0.0)
    f = rng.standard_normal((draws, 2)) @ np.linalg.cholesky(1.5 * (z.T @ z) / draws).T
    t = np.tanh(z + f)
    prod = t[:, :, None] * t[:, None, :]
    mean, se = prod.mean(axis=0), prod.std(axis=0) / math.sqrt(draws)
    _agree(th.second[5], mean, se)  # the Dense after tanh sees E tanh(u) tanh(u')
