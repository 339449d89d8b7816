"""Self-attention, embeddings and concatenation of meanfield.nets against closed forms.

Self-attention with ``1/d`` logits is the token mean at infinite width (Hron et al. 2020): one
layer makes every token of an input equal (rank collapse, Dong et al. 2021), while a residual
stack ``z + W A V z`` of orthonormal tokens has the closed-form token correlation
``(2^l - 1) / (L + 2^l - 1)`` after ``l`` layers (below 1 at every depth). Embeddings: the token
identity kernel. Concatenation: the width-weighted average of its branches.
"""

from __future__ import annotations

import numpy as np
import pytest

from meanfield.nets import Act, Concat, Dense, Embedding, Network, Residual, SelfAttention

#: Float64 rounding of a few matrix products over <= 10 layers.
ROUNDING = 1e-12


def _corr(s, tokens):
    d = np.sqrt(np.diagonal(s))
    c = s / np.outer(d, d)
    return c[:tokens, :tokens][~np.eye(tokens, dtype=bool)]


def test_attention_with_1_over_d_logits_is_the_token_mean():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((8, 8))
    s = a @ a.T / 8 + np.eye(8)  # 2 inputs x 4 tokens
    th = Network([SelfAttention(16, heads=4, sigma_v2=1.5, sigma_o2=0.8)]).theory(
        cov0=s, in_shape=(4, 16), gaussian=True
    )
    want = np.zeros_like(s)
    for x in range(2):
        for y in range(2):
            want[x * 4 : x * 4 + 4, y * 4 : y * 4 + 4] = 1.2 * s[x * 4 : x * 4 + 4, y * 4 : y * 4 + 4].mean()
    np.testing.assert_allclose(th.second[1], want, rtol=ROUNDING)
    np.testing.assert_allclose(_corr(th.second[1], 4), 1.0, rtol=ROUNDING)  # collapsed


def test_residual_attention_keeps_token_correlation_below_one():
    tokens, depth = 5, 6
    net = Network([Residual((SelfAttention(32), Dense(32, 1.0))) for _ in range(depth)])
    th = net.theory(cov0=np.eye(tokens), in_shape=(tokens, 32), gaussian=True)
    for layer in range(1, depth + 1):
        b = 2.0**layer - 1.0
        np.testing.assert_allclose(_corr(th.second[layer], tokens), b / (tokens + b), rtol=ROUNDING)


def test_gaussian_logits_without_query_key_variance_are_the_uniform_limit():
    rng = np.random.default_rng(2)
    a = rng.standard_normal((6, 6))
    s = a @ a.T / 6 + np.eye(6)  # 2 inputs x 3 tokens
    kw = dict(cov0=s, in_shape=(3, 8), gaussian=True)
    flat = Network([SelfAttention(8, sigma_qk2=0.0, scaling="1/sqrt(d)")]).theory(**kw).second[1]
    uniform = Network([SelfAttention(8)]).theory(**kw).second[1]
    np.testing.assert_allclose(flat, uniform, rtol=ROUNDING)


def test_gaussian_logits_match_direct_sampling_of_the_logits():
    """The 1/sqrt(d) rule against logits sampled here from their covariance (pseudo-random draws)."""
    rng = np.random.default_rng(3)
    tokens = 3
    a = rng.standard_normal((tokens, tokens))
    s = a @ a.T / tokens + 0.5 * np.eye(tokens)  # one input
    th = Network([SelfAttention(8, sigma_qk2=1.5, scaling="1/sqrt(d)")]).theory(
        cov0=s, in_shape=(tokens, 8), gaussian=True
    )
    # logits l_{alpha beta}: Cov(l_{ab}, l_{a'b'}) = sigma_qk^4 S_{aa'} S_{bb'} = 2.25 (S kron S)
    chol = np.linalg.cholesky(2.25 * np.kron(s, s))
    logits = (rng.standard_normal((200_000, tokens * tokens)) @ chol.T).reshape(-1, tokens, tokens)
    att = np.exp(logits - logits.max(axis=-1, keepdims=True))
    att /= att.sum(axis=-1, keepdims=True)
    samples = np.einsum("nab,bc,ndc->nad", att, s, att)
    mean = samples.mean(axis=0)
    se = samples.std(axis=0) / np.sqrt(samples.shape[0])
    assert np.max(np.abs(th.second[1] - mean) / se) < 5.0  # Bonferroni over 9 entries, plus the QMC error


def test_attention_backward_spreads_the_gradient_over_tokens():
    net = Network([SelfAttention(8)])
    th = net.theory(cov0=np.eye(3), in_shape=(3, 4), gaussian=True, backward=True)
    np.testing.assert_allclose(th.grad[0], (8 / 4) * np.full((3, 3), 1 / 3), rtol=ROUNDING)


def test_attention_outside_its_rule_is_named():
    with pytest.raises(ValueError, match="sqrt"):
        Network([SelfAttention(8, scaling="1/sqrt(d)")]).theory(
            cov0=np.eye(3), in_shape=(3, 4), gaussian=True, backward=True
        )
    with pytest.raises(ValueError):
        SelfAttention(8, heads=3)
    with pytest.raises(ValueError):
        SelfAttention(8, scaling="1/d^2")


def test_embedding_is_the_token_identity_kernel():
    ids = np.array([[2, 0, 2], [1, 2, 0]], dtype=float)[..., None]
    th = Network([Embedding(3, 16, sigma2=0.5, positional_sigma2=0.25)]).theory(ids)
    flat = ids.reshape(-1)
    pos = np.tile(np.arange(3), 2)
    want = np.array([[0.5 * (flat[i] == flat[j]) + 0.25 * (pos[i] == pos[j]) for j in range(6)] for i in range(6)])
    np.testing.assert_array_equal(th.second[1], want)
    with pytest.raises(ValueError, match="integers"):
        Network([Embedding(2, 4)]).theory(ids)
    with pytest.raises(ValueError, match="first layer"):
        Network([Dense(1), Embedding(3, 4)]).theory(ids)


def test_concat_is_the_width_weighted_average():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 10))
    net = Network([Dense(30, 1.0), Concat(((), (Act("relu"), Dense(10, 2.0))))])
    th = net.theory(x)
    s_in = th.second[1]
    relu_branch = Network([Dense(30, 1.0), Act("relu"), Dense(10, 2.0)]).theory(x).second[-1]
    np.testing.assert_allclose(th.second[2], (30 * s_in + 10 * relu_branch) / 40, rtol=ROUNDING)
    assert th.cross[2] is None  # zero-mean branches: uncorrelated units
    with pytest.raises(ValueError):
        Concat(((),))
    with pytest.raises(TypeError):
        Concat(((), (1,)))
