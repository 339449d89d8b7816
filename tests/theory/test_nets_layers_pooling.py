"""Pooling and flattening layers of meanfield.nets against exact small cases.

Average pooling against the window means written as loops; max pooling of two positions against
the closed form ``E max(X1, X2)^2 = 1`` of two independent standard normals and against direct
sampling of the four-variate Gaussian (tolerance from the sampling standard error); flattening
against the per-unit average over positions.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from meanfield.backend import get_backend
from meanfield.nets import Act, AvgPool, BatchNorm, Conv, Dense, Flatten, LayerNorm, MaxPool, Network

#: Float64 rounding of a few matrix products.
ROUNDING = 1e-12
#: Standard errors allowed for sampled Gaussian vectors (Bonferroni over <= 100 entries at 1e-4).
Z = 5.0


def _cov(rng, n):
    a = rng.standard_normal((n, n))
    return a @ a.T / n + 0.3 * np.eye(n)


def test_avgpool_2d_equals_the_window_means():
    rng = np.random.default_rng(0)
    d, sp = 2, (3, 4)
    p = 12
    s = _cov(rng, d * p)
    layer = AvgPool((2, 2), (1, 2))
    th = Network([layer]).theory(cov0=s, in_shape=sp + (1,), gaussian=True).second[1]
    wins = [[(i + a) * 4 + (j + b) for a in range(2) for b in range(2)] for i in range(2) for j in (0, 2)]
    want = np.zeros((d * len(wins),) * 2)
    for x in range(d):
        for u, wu in enumerate(wins):
            for y in range(d):
                for v, wv in enumerate(wins):
                    want[x * 4 + u, y * 4 + v] = np.mean([s[x * p + i, y * p + j] for i in wu for j in wv])
    np.testing.assert_allclose(th, want, rtol=ROUNDING, atol=ROUNDING)
    assert layer.out_shape(sp + (5,)) == (2, 2, 5)


def test_maxpool_of_independent_standard_normals_has_unit_second_moment():
    th = Network([MaxPool(2)]).theory(cov0=np.eye(4), in_shape=(4, 1), gaussian=True)
    # E max(X1, X2)^2 = 1; E max = 1 / sqrt(pi); different windows independent
    np.testing.assert_allclose(th.second[1], np.eye(2) + (1 - np.eye(2)) / math.pi, rtol=ROUNDING)


def test_maxpool_window_two_matches_direct_sampling():
    rng = np.random.default_rng(1)
    d, p = 2, 4
    s = _cov(rng, d * p)
    th = Network([MaxPool(2, stride=1)]).theory(cov0=s, in_shape=(p, 1), gaussian=True).second[1]
    h = rng.standard_normal((400_000, d * p)) @ np.linalg.cholesky(s).T
    h = h.reshape(-1, d, p)
    m = np.maximum(h[:, :, :-1], h[:, :, 1:]).reshape(-1, d * (p - 1))
    prod = m[:, :, None] * m[:, None, :]
    mean, se = prod.mean(axis=0), prod.std(axis=0) / math.sqrt(prod.shape[0])
    assert np.max(np.abs(th - mean) / se) < Z


def test_maxpool_backward_matches_direct_sampling():
    rng = np.random.default_rng(2)
    p = 4
    s = _cov(rng, p)
    g = _cov(rng, p // 2)
    layer = MaxPool(2)
    state = Network([layer])._initial(None, s, (p, 1), True, False)
    got, _ = layer.backward(state, g, None, 40)
    h = rng.standard_normal((400_000, p)) @ np.linalg.cholesky(s).T
    first = (h[:, 0::2] > h[:, 1::2]).astype(float)  # (n, 2): window k's winner is its first position
    route = np.zeros((h.shape[0], p // 2, p))
    for k in range(p // 2):
        route[:, k, 2 * k] = first[:, k]
        route[:, k, 2 * k + 1] = 1 - first[:, k]
    prod = np.transpose(route, (0, 2, 1)) @ g @ route
    mean, se = prod.mean(axis=0), prod.std(axis=0) / math.sqrt(prod.shape[0])
    ok = se > 0
    assert np.max(np.abs(got - mean)[ok] / se[ok]) < Z
    np.testing.assert_allclose(got[~ok], mean[~ok], atol=ROUNDING)


#: The stated error of the quasi-Monte-Carlo rule of larger windows: 1e-3 of the moments' scale
#: (the replicas' standard error is about 1e-4; the routing probabilities' about 1e-3).
QMC = 3e-3


def test_maxpool_integration_reproduces_the_two_position_closed_form():
    rng = np.random.default_rng(5)
    s = _cov(rng, 8)
    layer = MaxPool(2)
    state = Network([layer])._initial(None, s, (4, 1), True, False)
    exact = layer.theory(state, 40).second
    integrated, _ = layer._integrated(state)
    assert np.max(np.abs(integrated - exact)) < QMC * np.max(np.diagonal(exact))
    g = _cov(rng, 4)
    routed, _ = layer._integrated(state, g)
    assert np.max(np.abs(routed - layer.backward(state, g, None, 40)[0])) < QMC * np.max(np.abs(g))


def test_maxpool_window_three_matches_direct_sampling():
    rng = np.random.default_rng(6)
    d, p = 2, 6
    s = _cov(rng, d * p)
    th = Network([MaxPool(3)]).theory(cov0=s, in_shape=(p, 1), gaussian=True)
    h = (rng.standard_normal((200_000, d * p)) @ np.linalg.cholesky(s).T).reshape(-1, d, 2, 3)
    m = h.max(axis=-1).reshape(-1, d * 2)
    prod = m[:, :, None] * m[:, None, :]
    mean, se = prod.mean(axis=0), prod.std(axis=0) / math.sqrt(prod.shape[0])
    assert np.max(np.abs(th.second[1] - mean) / (se + QMC * np.max(mean))) < Z
    mu, mu_se = m.mean(axis=0), m.std(axis=0) / math.sqrt(m.shape[0])
    bound = Z * (np.outer(mu_se, np.abs(mu)) + np.outer(np.abs(mu), mu_se)) + QMC * np.max(mu) ** 2
    assert np.all(np.abs(th.cross[1] - np.outer(mu, mu)) < bound)  # different units: the mean squared


def test_maxpool_outside_its_rule_is_named():
    s = np.eye(8)
    with pytest.raises(ValueError, match="Gaussian"):
        Network([Act("relu"), MaxPool(2)]).theory(cov0=s, in_shape=(8, 1), gaussian=True)


def test_flatten_averages_positions_and_tracks_gaussianity():
    rng = np.random.default_rng(3)
    d, p = 2, 3
    s = _cov(rng, d * p)
    th = Network([Flatten()]).theory(cov0=s, in_shape=(p, 1), gaussian=True)
    want = np.mean([s[np.ix_(np.arange(d) * p + k, np.arange(d) * p + k)] for k in range(p)], axis=0)
    np.testing.assert_allclose(th.second[1], want, rtol=ROUNDING)
    # a non-stationary Gaussian field is not Gaussian per unit after flattening
    with pytest.raises(ValueError, match="non-Gaussian"):
        Network([Flatten(), Act("tanh"), Dense(4)]).theory(cov0=s, in_shape=(p, 1), gaussian=True)
    # a stationary field (periodic positions, a circulant covariance) stays Gaussian per unit:
    # the activation applies exactly, to the one per-position block
    row = np.array([1.0, 0.5, 0.2, 0.5])
    circ = np.array([np.roll(row, k) for k in range(4)])
    net = Network([Conv(8, (3,), 2.0), Flatten(), Act("tanh"), Dense(4)])
    th = net.theory(cov0=circ, in_shape=(4, 1), gaussian=True)
    assert th.second[-1].shape == (1, 1)
    assert th.second[-1][0, 0] < th.second[2][0, 0]


@pytest.mark.parametrize("make", [lambda: AvgPool(0), lambda: MaxPool((2, 2), stride=(1,)), lambda: AvgPool(())])
def test_bad_windows_raise_value_error(make):
    with pytest.raises(ValueError):
        make()


def test_window_larger_than_the_signal_raises():
    with pytest.raises(ValueError, match="window"):
        AvgPool(5).out_shape((4, 2))


def test_deterministic_layers_on_the_raw_input_are_applied_to_the_data():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 6, 4))
    numpy_backend = get_backend("numpy")
    for layer in (LayerNorm(eps=0.0), BatchNorm(eps=0.0), MaxPool(2), AvgPool(3), Flatten()):
        z = layer.apply({}, x[None], numpy_backend)[0]  # the layer on the data, by hand
        flat = z.reshape(-1, z.shape[-1])  # (inputs x positions, channels)
        want = 1.5 * flat @ flat.T / z.shape[-1] + 0.1  # a dense layer at every position
        got = Network([layer, Dense(7, 1.5, 0.1)]).theory(x).second[-1]
        np.testing.assert_allclose(got, want, rtol=ROUNDING, atol=ROUNDING)


# ------------------------------------------------------------------------------------------------
# Padding (PyTorch's semantics: zeros for average pooling, -inf for max pooling).

PADDED = [
    AvgPool((3, 3), 2, padding=1),
    AvgPool((3, 2), (2, 1), padding=(1, 1), count_include_pad=False),
    MaxPool((3, 3), 2, padding=1),
    MaxPool((2, 2), 1, padding=1),
    MaxPool((3, 3), 2, padding=1, act="relu"),
]


@pytest.mark.parametrize("pool", PADDED, ids=repr)
def test_padded_pooling_sampler_and_module_equal_torch(pool):
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(3).standard_normal((2, 6, 5, 3))
    kw = {"count_include_pad": pool.count_include_pad} if pool.op == "avg" else {}
    ref = (torch.nn.AvgPool2d if pool.op == "avg" else torch.nn.MaxPool2d)(pool.window, pool.stride, pool.padding, **kw)
    xin = np.maximum(x, 0.0) if getattr(pool, "act", None) == "relu" else x
    want = ref(torch.tensor(xin).permute(0, 3, 1, 2)).permute(0, 2, 3, 1).numpy()
    net = Network([pool])
    got = net.forward(net.weights(x.shape[1:], rng=0, n_networks=1), x)[0]
    assert got.shape == want.shape and np.max(np.abs(got - want)) <= ROUNDING
    module = pool.module({}, 0)
    assert np.max(np.abs(module(torch.tensor(x)).numpy() - want)) <= ROUNDING


def test_padded_avgpool_is_the_window_sums_over_the_whole_window():
    rng = np.random.default_rng(4)
    d, n = 2, 5
    s = _cov(rng, d * n)
    th = Network([AvgPool(3, 2, padding=1)]).theory(cov0=s, in_shape=(n, 1), gaussian=True).second[1]
    wins = [[i for i in range(2 * o - 1, 2 * o + 2) if 0 <= i < n] for o in range(3)]  # padded reads are zeros
    want = np.zeros((d * 3,) * 2)
    for a in range(d):
        for b in range(d):
            for u, wu in enumerate(wins):
                for v, wv in enumerate(wins):
                    want[a * 3 + u, b * 3 + v] = sum(s[a * n + i, b * n + j] for i in wu for j in wv) / 9.0
    assert np.max(np.abs(th - want)) <= ROUNDING


@pytest.mark.parametrize("act", ["relu", "tanh"])
def test_padded_maxpool_after_an_activation_matches_sampling(act):
    """E max_W phi(h) max_W' phi(h') over the unpadded positions against direct sampling of the Gaussian."""
    rng = np.random.default_rng(5)
    d, n = 2, 5
    s = _cov(rng, d * n)
    th = Network([MaxPool(3, 2, padding=1, act=act)]).theory(cov0=s, in_shape=(n, 1), gaussian=True).second[1]
    samples = 200_000
    h = rng.standard_normal((samples, d * n)) @ np.linalg.cholesky(s).T
    z = np.maximum(h, 0.0) if act == "relu" else np.tanh(h)
    z = z.reshape(samples, d, n)
    wins = [[i for i in range(2 * o - 1, 2 * o + 2) if 0 <= i < n] for o in range(3)]
    m = np.stack([z[:, :, w].max(axis=2) for w in wins], axis=2).reshape(samples, d * 3)
    prod = m[:, :, None] * m[:, None, :]
    mean, se = prod.mean(axis=0), prod.std(axis=0) / math.sqrt(samples)
    assert np.max(np.abs(th - mean) / (se + 1e-300)) < Z


def test_padded_maxpool_keeps_units_independent():
    x = np.random.default_rng(6).standard_normal((2, 6, 2))
    net = Network([Conv(8, (3,), 2.0, 0.1, padding=1), MaxPool(3, 2, padding=1, act="relu")])
    th = net.theory(x)
    mu2 = th.cross[2]
    assert mu2 is not None and np.all(np.diagonal(mu2) > 0) and np.all(mu2 < th.second[2] + 1e-12)
    with pytest.raises(ValueError, match="fuse the activation"):
        Network([Conv(8, (3,), 2.0, 0.1, padding=1), Act("relu"), MaxPool(3, 2, padding=1)]).theory(x)
