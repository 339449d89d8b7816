"""The large-scale asymptote maps of the log-scale step (``dense.propagate_log``, ``conv.propagate_log``).

``meanfield._logscale.scaled_step`` evaluates a bounded activation above the scale 1e300 by the
C-map of its sign-like asymptote, and a ReLU-like one above ``dense.Q_ASYMPTOTE_ABOVE`` by the
ReLU arc-cosine kernel. These tests compare one propagation step at such scales, for every built-in
that reaches a map, with the asymptote's closed form written here in NumPy (Cho & Saul 2009 for the
ReLU kernel; the arcsine law of sign(u1) sign(u2) for the bounded ones). They guard any pruning of
those maps by activation family (cold start: a kernel that compiled the wrong family's
map, or none, would leave the step's scratch buffer unset -- checked: they fail then).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from meanfield import conv, dense

#: Relative agreement of two float64 evaluations of the same closed form (a few dozen rounded
#: operations each, then the log-scale split exp(L) * k: ~1e-15 each, 1e-12 leaves margin and is
#: far below what a missing or wrong map gives, an O(1) difference).
RTOL = 1e-12
SW, SB = 1.7, 0.05
#: Unit-scale shape of the input covariance (two inputs, correlation 0.3 / sqrt(0.8)).
K = np.array([[1.0, 0.3], [0.3, 0.8]])


def _corr(k):
    return k[0, 1] / math.sqrt(k[0, 0] * k[1, 1])


def _bounded(name, k):
    """E A(u_i) A(u_j) of the asymptote A: sign for tanh, erf, hard_tanh, sign; step / 2 + 1/4 for sigmoid."""
    c = _corr(k)
    if name == "sigmoid":
        return np.array([[0.5, 0.25 + math.asin(c) / (2 * math.pi)], [0.25 + math.asin(c) / (2 * math.pi), 0.5]])
    off = 2 / math.pi * math.asin(c)
    return np.array([[1.0, off], [off, 1.0]])


def _relu(k):
    """E relu(u_i) relu(u_j): the arc-cosine kernel of degree 1."""
    c = _corr(k)
    theta = math.acos(c)
    s1, s2 = math.sqrt(k[0, 0]), math.sqrt(k[1, 1])
    off = s1 * s2 / (2 * math.pi) * (math.sin(theta) + (math.pi - theta) * c)
    return np.array([[k[0, 0] / 2, off], [off, k[1, 1] / 2]])


def _one_step(res):
    return math.exp(res.log_scale[1]) * res.normalized[1]


@pytest.mark.parametrize("name", ["tanh", "erf", "hard_tanh", "sigmoid", "sign"])
def test_bounded_asymptote_map(name):
    """Above 1e300 a bounded activation's step is sw E A A^T + sb (A its sign-like asymptote)."""
    scale = 1e305
    res = dense.propagate_log(scale * K, name, SW, SB, 1)
    np.testing.assert_allclose(_one_step(res), SW * _bounded(name, K) + SB, rtol=RTOL, atol=0)


@pytest.mark.parametrize("name", ["softplus", "swish", "gelu"])
def test_relu_asymptote_map(name):
    """Above Q_ASYMPTOTE_ABOVE a ReLU-like activation's step is sw E relu relu^T + sb."""
    scale = 1e60
    assert scale > dense.Q_ASYMPTOTE_ABOVE
    res = dense.propagate_log(scale * K, name, SW, SB, 1)
    np.testing.assert_allclose(_one_step(res), SW * scale * _relu(K) + SB, rtol=RTOL, atol=0)


@pytest.mark.parametrize(("name", "scale"), [("tanh", 1e305), ("softplus", 1e60)])
def test_conv_step_uses_the_same_map(name, scale):
    """conv's loop takes the same flag: with the identity filter (v = [1]) its step is dense's."""
    want = dense.propagate_log(scale * K, name, SW, SB, 2)
    got = conv.propagate_log(scale * K, name, SW, SB, np.array([1.0]), 2)
    np.testing.assert_array_equal(got.log_scale, want.log_scale)
    np.testing.assert_array_equal(got.normalized, want.normalized)
