"""Samplers and modules of the new meanfield.nets layer kinds against their mean-field rules.

Each small network's simulated per-unit second moments (independent finite networks) against the
theory, within a Bonferroni bound on the standard errors plus the O(1/width) finite-width bias
:data:`BIAS` times the moments' scale; and each layer's PyTorch module against the NumPy sampler,
given the same weights, to float64 rounding.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

from meanfield.nets import (
    Act,
    AvgPool,
    BatchNorm,
    Concat,
    Conv,
    Dense,
    Dropout,
    Embedding,
    Flatten,
    LayerNorm,
    MaxPool,
    Network,
    RMSNorm,
    SelfAttention,
)

WIDTH = 256
NETWORKS = 24
#: Family-wise false-alarm rate of one network's comparison (Bonferroni over its entries).
ALPHA = 1e-3
#: Finite-width bias allowed, relative to the largest diagonal moment: a few times 1/WIDTH (the
#: normalisations and the attention are O(1/width)-biased; the other rules are unbiased here).
BIAS = 4.0 / WIDTH
#: Float64 rounding of the module against the sampler (same operations, other summation order).
ROUNDING = 1e-12

_RNG = np.random.default_rng(0)
X = _RNG.standard_normal((3, 10))
XB = _RNG.standard_normal((6, 10))
XS = _RNG.standard_normal((2, 8, 3))
XT = _RNG.standard_normal((2, 5, 6))
IDS = np.array([[0, 1, 2, 1], [3, 1, 0, 0]], dtype=float)[..., None]

CASES = {
    "layernorm": (Network([Dense(WIDTH, 2.0, 0.1), Act("relu"), LayerNorm(gain=1.3, bias=0.2), Dense(WIDTH)]), X),
    "rmsnorm": (Network([Dense(WIDTH, 2.0, 0.1), Act("relu"), RMSNorm(gain=0.7), Dense(WIDTH)]), X),
    "batchnorm_train": (Network([Dense(WIDTH, 1.0), BatchNorm(), Dense(WIDTH)]), XB),
    "batchnorm_relu": (Network([Dense(WIDTH, 2.0), BatchNorm(act="relu"), Dense(WIDTH)]), XB),
    "batchnorm_eval": (Network([Dense(WIDTH), BatchNorm(train=False, running_var=2.0), Act("tanh"), Dense(WIDTH)]), XB),
    "dropout": (Network([Dense(WIDTH, 1.5), Act("tanh"), Dropout(0.3, train=True)]), X),
    "avgpool": (Network([Conv(WIDTH, (3,), 2.0), Act("relu"), AvgPool(2)]), XS),
    "maxpool": (Network([Conv(WIDTH, (3,), 2.0), MaxPool(2)]), XS),
    "flatten": (Network([Conv(WIDTH // 4, (3,), 2.0), Act("relu"), Flatten(), Dense(WIDTH)]), XS),
    "concat": (Network([Dense(WIDTH), Concat(((), (Act("relu"), Dense(WIDTH // 2, 2.0)))), Dense(WIDTH)]), X),
    "embedding": (Network([Embedding(5, WIDTH, 1.0, 0.5), Act("tanh"), Dense(WIDTH)]), IDS),
    "attention": (Network([Dense(WIDTH), SelfAttention(WIDTH, heads=4), Dense(WIDTH)]), XT),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_sampler_agrees_with_the_rule(name):
    net, x = CASES[name]
    th = net.theory(x).second[-1]
    sim = net.simulate(x, n_networks=NETWORKS, rng=1)
    layer = len(net.layers)
    iu = np.triu_indices(th.shape[0])
    diff = np.abs(sim.mean(layer) - th)[iu]
    se = sim.standard_error(layer)[iu]
    limit = norm.isf(ALPHA / (2 * iu[0].size)) * se + BIAS * np.max(np.diagonal(th))
    assert np.all(diff <= limit), (name, float(np.max(diff - limit)))


@pytest.mark.parametrize("name", sorted(set(CASES) - {"dropout"}))
def test_module_equals_the_sampler(name):
    torch = pytest.importorskip("torch")
    net, x = CASES[name]
    w = net.weights(x.shape[1:], rng=3, n_networks=2)
    out = net.forward(w, x)
    got = net.to_torch(w, network=1)(torch.tensor(x)).detach().numpy()
    np.testing.assert_allclose(got, out[1], rtol=ROUNDING, atol=ROUNDING * np.max(np.abs(out[1])))


def test_dropout_module_is_torch_dropout():
    torch = pytest.importorskip("torch")
    assert isinstance(Dropout(0.2, train=True).module({}, 0), torch.nn.Dropout)
    assert isinstance(Dropout(0.2).module({}, 0), torch.nn.Identity)


def test_dropout_eval_and_batchnorm_eval_at_init_are_near_identity():
    x = X[:, None, :]  # (D, 1 position, channels) -> one network's forward
    net = Network([Dropout(0.5), BatchNorm(train=False, eps=0.0)])
    w = net.weights((1, 10), rng=0)
    np.testing.assert_array_equal(net.forward(w, x)[0], x)
