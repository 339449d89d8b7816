"""The log-scale C-map machinery shared by dense and conv (meanfield/_logscale.py), through the public API.

The compiled loop of :func:`meanfield.conv.propagate_log` (the whole loop over layers in one
kernel, the averaging plan cached per ``(v, shape)``) is checked against the composition of the
public one-layer maps, and the per-call validation shortcuts (one ``check_covariance`` per call, the
exact-symmetry shortcut before ``np.allclose``) against the behaviour they replace.
"""

from __future__ import annotations

import numpy as np
import pytest

from meanfield import conv, dense
from meanfield.activations import ACTIVATIONS

EPS = np.finfo(np.float64).eps
#: Depth of the comparisons below.
DEPTH = 8
#: The log-scale path and the iterated float64 map differ by the rounding of the per-layer
#: normalisation (a division and the bias added relative to the scale: <= 8 ulps per layer),
#: amplified by the map's Lipschitz constant (<= sigma_w2 = 1.5 per layer here): 8 layers x 8 ulps
#: x 1.5^8 (~26) x eps ~ 3.7e-13, below this bound.
REL = 1e-12


def _iterated(c0, act, sw, sb, v, depth, shape=None):
    out = [np.asarray(c0, dtype=float)]
    for _ in range(depth):
        out.append(conv.covariance_map(out[-1], act, sw, sb, v, shape))
    return np.array(out)


@pytest.mark.parametrize("act", ["erf", "relu", "tanh", "softplus"])
def test_conv_propagate_equals_iterated_covariance_map(act):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 9))
    c0 = x @ x.T / 9
    c0 = 0.5 * (c0 + c0.T)
    v = np.array([0.2, 0.5, 0.3])
    got = conv.propagate(c0, act, 1.5, 0.05, v, DEPTH)
    want = _iterated(c0, act, 1.5, 0.05, v, DEPTH)
    assert got[0] is not c0 and np.array_equal(got[0], 0.5 * (c0 + c0.T))
    np.testing.assert_allclose(got, want, rtol=REL, atol=REL * float(np.max(np.abs(want))))


def test_conv_propagate_2d_equals_iterated_covariance_map():
    v = np.zeros((3, 3))
    v[0, 1] = v[1, 1] = v[2, 2] = 1.0 / 3.0  # asymmetric 2-D filter: the gather order matters
    c0 = 0.6 * np.eye(16) + 0.4
    got = conv.propagate(c0, "erf", 1.5, 0.05, v, DEPTH, shape=(4, 4))
    want = _iterated(c0, "erf", 1.5, 0.05, v, DEPTH, shape=(4, 4))
    np.testing.assert_allclose(got, want, rtol=REL, atol=REL * float(np.max(np.abs(want))))


def test_conv_plan_cache_keeps_v_apart():
    """Calls with different v (same shape) interleaved give each v's own result (the plan cache key)."""
    c0 = 0.5 * np.eye(5) + 0.5 + np.diag(np.arange(5) * 0.1)
    va, vb = np.array([0.6, 0.3, 0.1]), np.array([0.1, 0.3, 0.6])
    a1 = conv.propagate(c0, "erf", 1.5, 0.05, va, 4)
    b1 = conv.propagate(c0, "erf", 1.5, 0.05, vb, 4)
    a2 = conv.propagate(c0, "erf", 1.5, 0.05, va, 4)
    assert np.array_equal(a1, a2)
    assert not np.allclose(a1[1:], b1[1:], rtol=1e-6)
    np.testing.assert_allclose(b1, _iterated(c0, "erf", 1.5, 0.05, vb, 4), rtol=REL, atol=REL)


def test_conv_propagate_log_overflow_names_layer():
    """exp's map E exp(u)^2 = exp(2 q) overflows at q > 354: the compiled loop reports the layer."""
    with pytest.raises(ValueError, match="log-scale representation at layer 1"):
        conv.propagate_log(400.0 * np.eye(3), "exp", 1.0, 0.0, np.full(3, 1 / 3), 3)


def test_conv_propagate_user_activation_takes_python_loop():
    """A user-defined activation (not compiled) still propagates, and agrees with the built-in one
    to the Gauss-Hermite error of erf at the default degree (3e-14 measured, DESIGN.md; 1e-12 here)."""
    from meanfield.activations import Activation, get_activation

    erf = get_activation("erf")
    user = Activation.from_functions("my_erf", erf.phi, erf.dphi)
    c0 = 0.5 * np.eye(4) + 0.5
    v = np.full(3, 1 / 3)
    np.testing.assert_allclose(
        conv.propagate(c0, user, 1.5, 0.05, v, 4), conv.propagate(c0, "erf", 1.5, 0.05, v, 4), rtol=1e-12, atol=1e-12
    )


def test_nearly_symmetric_covariance_accepted_and_symmetrised():
    """The exact-symmetry shortcut does not change what is accepted: rounding-level asymmetry
    (what ``X X^T`` gives) still passes through ``np.allclose`` and is symmetrised; more is refused."""
    c = np.array([[1.0, 0.3], [0.3 + 1e-15, 1.0]])
    traj = dense.propagate(c, "erf", 1.5, 0.05, 2)
    assert np.array_equal(traj[0], 0.5 * (c + c.T))
    with pytest.raises(ValueError, match="symmetric"):
        dense.propagate(np.array([[1.0, 0.3], [0.31, 1.0]]), "erf", 1.5, 0.05, 2)
    with pytest.raises(ValueError, match="symmetric"):
        conv.propagate(np.array([[1.0, 0.3], [0.31, 1.0]]), "erf", 1.5, 0.05, np.full(1, 1.0), 2)


@pytest.mark.parametrize("act", [a for a in ACTIVATIONS])
def test_dense_propagate_equals_iterated_covariance_map_every_activation(act):
    """The propagation kernels compile only the closed forms, only the quadrature, or both, by
    activation family; ``covariance_map`` always evaluates closed form then quadrature.
    A mis-filed activation would show the quadrature error of a kinked activation (~1e-4 relative
    at the default degree, DESIGN.md) or NaN, far above REL."""
    cov = np.array([[1.0, 0.3, 0.1], [0.3, 0.8, 0.2], [0.1, 0.2, 1.2]])
    sw = 0.1 if act == "exp" else 1.2  # exp's map E exp(u)^2 = exp(2 q) overflows at sigma_w2 = 1.2
    got = dense.propagate(cov, act, sw, 0.05, 4)
    want = [cov]
    for _ in range(4):
        want.append(dense.covariance_map(want[-1], act, sw, 0.05))
    want = np.array(want)
    np.testing.assert_allclose(got, want, rtol=REL, atol=REL * float(np.max(np.abs(want))))
