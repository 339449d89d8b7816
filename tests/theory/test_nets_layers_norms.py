"""Normalisation layers of meanfield.nets against closed forms and exact small cases.

Layer and RMS normalisation against the arc-cosine kernel of ReLU written out here; batch
normalisation in training mode against its isotropic closed form, Yang et al. 2019's gradient
growth ``(B - 2)/(B - 3)`` at the fixed point of a linear BN network, and direct sampling of the
batch vector (``h ~ N(0, S)`` in ``B`` dimensions, tolerance from the sampling standard error);
evaluation mode and dropout against their affine and diagonal maps.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from meanfield.nets import Act, BatchNorm, Dense, Dropout, LayerNorm, Network, RMSNorm

#: Float64 rounding of a few matrix products and the arc-cosine kernel.
ROUNDING = 1e-12
#: The batch-normalisation integrals are computed to a relative error of 1e-10 (BN_RTOL); a few of
#: them combine, so 1e-8 relative bounds the result.
QUAD = 1e-8
#: Standard errors allowed for the sampled batch vector (Bonferroni over <= 36 entries at 1e-4).
Z = 5.0


def _relu_kernel(s):
    """E relu(u) relu(v) for (u, v) ~ N(0, s): Cho & Saul's arc-cosine kernel of degree 1."""
    d = np.sqrt(np.diagonal(s))
    c = np.clip(s / np.outer(d, d), -1.0, 1.0)
    th = np.arccos(c)
    return np.outer(d, d) * (np.sin(th) + (math.pi - th) * np.cos(th)) / (2 * math.pi)


def _cov(rng, n):
    a = rng.standard_normal((n, n))
    return a @ a.T / n + 0.3 * np.eye(n)


def test_layernorm_after_relu_subtracts_the_mean_and_normalises():
    s = _cov(np.random.default_rng(0), 3)
    out = Network([Act("relu"), LayerNorm(eps=0.0, gain=1.5, bias=0.25)]).theory(cov0=s, gaussian=True)
    mu = np.sqrt(np.diagonal(s) / (2 * math.pi))  # E relu(h) of h ~ N(0, q)
    centred = _relu_kernel(s) - np.outer(mu, mu)
    d = np.sqrt(np.diagonal(centred))
    want = 1.5**2 * centred / np.outer(d, d) + 0.25**2
    np.testing.assert_allclose(out.second[-1], want, rtol=ROUNDING, atol=ROUNDING)
    np.testing.assert_allclose(out.cross[-1], np.full((3, 3), 0.25**2), rtol=ROUNDING)


def test_layernorm_of_a_gaussian_layer_is_its_correlation_and_stays_gaussian():
    s = _cov(np.random.default_rng(1), 4)
    th = Network([LayerNorm(eps=0.1), Act("tanh")]).theory(cov0=s, gaussian=True)
    d = np.sqrt(np.diagonal(s) + 0.1)
    np.testing.assert_allclose(th.second[1], s / np.outer(d, d), rtol=ROUNDING)
    assert th.cross[1] is None
    # the activation applies (the output is Gaussian): tanh of a unit-variance-ish field
    assert np.all(np.diagonal(th.second[2]) < np.diagonal(th.second[1]))


def test_rmsnorm_after_relu_keeps_the_mean():
    s = _cov(np.random.default_rng(2), 3)
    out = Network([Act("relu"), RMSNorm(eps=0.0, gain=0.7)]).theory(cov0=s, gaussian=True)
    k = _relu_kernel(s)
    d = np.sqrt(np.diagonal(k))
    np.testing.assert_allclose(out.second[-1], 0.49 * k / np.outer(d, d), rtol=ROUNDING)
    mu = np.sqrt(np.diagonal(s) / (2 * math.pi))
    np.testing.assert_allclose(out.cross[-1], 0.49 * np.outer(mu, mu) / np.outer(d, d), rtol=ROUNDING)


def test_feature_norm_backward_rescales_the_gradient():
    s = _cov(np.random.default_rng(3), 3)
    net = Network([Dense(8, 1.0), LayerNorm(eps=0.0, gain=2.0)])
    th = net.theory(cov0=s, in_shape=(8,), backward=True)
    d = np.sqrt(np.diagonal(th.second[1]))
    np.testing.assert_allclose(th.grad[1], 4.0 * np.eye(3) / np.outer(d, d), rtol=ROUNDING)


def test_batchnorm_train_isotropic_closed_form():
    b = 5
    th = Network([BatchNorm(eps=0.0)]).theory(cov0=2.0 * np.eye(b), gaussian=True)
    cen = np.eye(b) - 1.0 / b
    np.testing.assert_allclose(th.second[1], b / (b - 1) * cen, rtol=QUAD, atol=QUAD)


def test_batchnorm_gradient_growth_at_the_fixed_point_is_yang_et_al_closed_form():
    for b in (5, 6, 9):
        cen = np.eye(b) - 1.0 / b
        net = Network([Dense(16, 1.0), BatchNorm(eps=0.0), Dense(16, 1.0), BatchNorm(eps=0.0)])
        th = net.theory(cov0=b / (b - 1) * cen, in_shape=(16,), backward=True)
        rate = np.trace(th.grad[0]) / np.trace(th.grad[2])
        assert abs(rate - (b - 2) / (b - 3)) < QUAD, (b, rate)
        # the forward map fixes the fixed point
        np.testing.assert_allclose(th.second[2], b / (b - 1) * cen, rtol=QUAD, atol=QUAD)


def _bn_samples(s, eps, n, rng):
    b = s.shape[0]
    h = rng.standard_normal((n, b)) @ np.linalg.cholesky(s).T
    x = h - h.mean(axis=1, keepdims=True)
    r = np.sqrt(np.sum(x * x, axis=1) + b * eps)
    return x, r


@pytest.mark.parametrize("eps", [0.0, 0.05])
def test_batchnorm_train_forward_matches_direct_sampling(eps):
    rng = np.random.default_rng(4)
    s = _cov(rng, 6)
    x, r = _bn_samples(s, eps, 400_000, rng)
    y = math.sqrt(6) * x / r[:, None]
    prod = y[:, :, None] * y[:, None, :]
    mean, se = prod.mean(axis=0), prod.std(axis=0) / math.sqrt(prod.shape[0])
    th = Network([BatchNorm(eps=eps, gain=1.1)]).theory(cov0=s, gaussian=True).second[1]
    assert np.max(np.abs(th - 1.21 * mean) / (1.21 * se)) < Z


def test_batchnorm_train_backward_matches_direct_sampling():
    rng = np.random.default_rng(5)
    b = 6
    s = _cov(rng, b)
    g = _cov(rng, b)
    x, r = _bn_samples(s, 0.0, 200_000, rng)
    cen = np.eye(b) - 1.0 / b
    # J = sqrt(B) (I / r - x x^T / r^3) G, per sample
    jac = math.sqrt(b) * (np.eye(b)[None] / r[:, None, None] - x[:, :, None] * x[:, None, :] / r[:, None, None] ** 3)
    jac = jac @ cen
    prod = np.transpose(jac, (0, 2, 1)) @ g @ jac
    mean, se = prod.mean(axis=0), prod.std(axis=0) / math.sqrt(prod.shape[0])
    layer = BatchNorm(eps=0.0)
    state = Network([layer])._initial(None, s, None, True, False)
    got, _ = layer.backward(state, g, None, 40)
    assert np.max(np.abs(got - mean) / se) < Z


def test_batchnorm_eval_is_its_affine_map():
    s = _cov(np.random.default_rng(6), 3)
    layer = BatchNorm(train=False, running_var=3.0, eps=1e-5, gain=2.0)
    th = Network([layer]).theory(cov0=s, gaussian=True)
    a2 = 4.0 / (3.0 + 1e-5)
    np.testing.assert_allclose(th.second[1], a2 * s, rtol=ROUNDING)
    th = Network([Dense(4), layer]).theory(cov0=s, in_shape=(4,), backward=True)
    np.testing.assert_allclose(th.grad[1], a2 * np.eye(3), rtol=ROUNDING)


def test_dropout_train_scales_the_diagonal_only():
    s = _cov(np.random.default_rng(7), 3)
    th = Network([Act("tanh"), Dropout(0.25, train=True)]).theory(cov0=s, gaussian=True)
    base = Network([Act("tanh")]).theory(cov0=s, gaussian=True).second[1]
    want = base.copy()
    want[np.diag_indices(3)] /= 0.75
    np.testing.assert_allclose(th.second[2], want, rtol=ROUNDING)
    ev = Network([Act("tanh"), Dropout(0.25)]).theory(cov0=s, gaussian=True)
    np.testing.assert_array_equal(ev.second[2], base)


def test_layers_that_the_rules_do_not_cover_are_named():
    s = _cov(np.random.default_rng(8), 4)
    with pytest.raises(ValueError, match="BatchNorm"):
        Network([Act("relu"), BatchNorm()]).theory(cov0=s, gaussian=True)
    with pytest.raises(ValueError, match="non-Gaussian"):
        Network([BatchNorm(), Act("relu"), Dense(4)]).theory(cov0=s, gaussian=True)
    with pytest.raises(ValueError, match="NTK"):
        Network([Dense(4), LayerNorm()]).theory(cov0=s, in_shape=(4,), ntk=True)


@pytest.mark.parametrize(
    "make",
    [
        lambda: LayerNorm(eps=-1.0),
        lambda: RMSNorm(bias=0.1),
        lambda: BatchNorm(running_var=-1.0),
        lambda: Dropout(1.0),
        lambda: Dropout(-0.1),
    ],
)
def test_bad_arguments_raise_value_error(make):
    with pytest.raises(ValueError):
        make()


def test_bad_types_raise_type_error():
    with pytest.raises(TypeError):
        BatchNorm(train="yes")


#: The fused activation's quasi-Monte-Carlo error, relative: measured about 1e-3 for the moments and
#: 1e-2 for the derivative map (its 1/r^2 terms are heavy-tailed); allowed three times that.
QMC_FORWARD, QMC_BACKWARD = 3e-3, 3e-2


def test_batchnorm_fused_linear_activation_reproduces_the_quadrature():
    rng = np.random.default_rng(9)
    s, g = _cov(rng, 6), _cov(rng, 6)
    state = Network([BatchNorm()])._initial(None, s, None, True, False)
    exact, fused = BatchNorm(eps=0.0), BatchNorm(eps=0.0, act="linear")
    a, b = exact.theory(state, 40).second, fused.theory(state, 40).second
    assert np.max(np.abs(a - b)) < QMC_FORWARD * np.max(np.abs(a))
    ga, gb = exact.backward(state, g, None, 40)[0], fused.backward(state, g, None, 40)[0]
    assert np.max(np.abs(ga - gb)) < QMC_BACKWARD * np.max(np.abs(ga))


def test_batchnorm_relu_matches_direct_sampling():
    rng = np.random.default_rng(10)
    s = _cov(rng, 6)
    th = Network([BatchNorm(eps=0.0, act="relu")]).theory(cov0=s, gaussian=True)
    x, r = _bn_samples(s, 0.0, 400_000, rng)
    z = np.maximum(math.sqrt(6) * x / r[:, None], 0.0)
    prod = z[:, :, None] * z[:, None, :]
    mean, se = prod.mean(axis=0), prod.std(axis=0) / math.sqrt(prod.shape[0])
    assert np.max(np.abs(th.second[1] - mean) / (se + QMC_FORWARD * np.max(mean))) < Z
    mu, mu_se = z.mean(axis=0), z.std(axis=0) / math.sqrt(z.shape[0])
    bound = Z * (np.outer(mu_se, mu) + np.outer(mu, mu_se)) + QMC_FORWARD * np.max(mu) ** 2
    assert np.all(np.abs(th.cross[1] - np.outer(mu, mu)) < bound)  # different units: the means' product
    with pytest.raises(ValueError, match="training mode"):
        BatchNorm(train=False, act="relu")
