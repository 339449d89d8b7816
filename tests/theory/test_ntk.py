"""meanfield.ntk: the NTK recursion against closed forms, its fixed points, and empirical kernels."""

from __future__ import annotations

import math

import numpy as np
import pytest

from meanfield import dense, ntk
from meanfield.data import gaussian_inputs
from meanfield.simulate.ntk import empirical_ntk


def _relu_ntk(q1, q2, c12, depth):
    """Arc-cosine closed form at sigma_w2 = 2, sigma_b2 = 0 (Arora et al. 2019, Sec. 4)."""
    s = np.array([[q1, c12], [c12, q2]], dtype=float)
    t = s.copy()
    for _ in range(depth):
        theta = math.acos(np.clip(s[0, 1] / math.sqrt(s[0, 0] * s[1, 1]), -1, 1))
        off = math.sqrt(s[0, 0] * s[1, 1]) / math.pi * (math.sin(theta) + (math.pi - theta) * math.cos(theta))
        dot_off = 1 - theta / math.pi
        s = np.array([[s[0, 0], off], [off, s[1, 1]]])
        t = s + np.array([[1.0, dot_off], [dot_off, 1.0]]) * t
    return t


def test_relu_ntk_matches_arc_cosine_closed_form():
    cov0 = np.array([[1.3, 0.4], [0.4, 0.7]])
    r = ntk.propagate_ntk(cov0, "relu", 2.0, 0.0, 5)
    assert np.allclose(r.ntk[5], _relu_ntk(1.3, 0.7, 0.4, 5), rtol=1e-12)
    assert np.allclose(r.cov[5], dense.propagate(cov0, "relu", 2.0, 0.0, 5)[5], rtol=1e-12)
    assert np.allclose(r.ntk[:, 0, 0], 1.3 * np.arange(1, 7))  # Theta^l = l q on the diagonal


def test_fixed_point_and_depth_scales():
    fp = ntk.ntk_fixed_point("tanh", 0.8, 0.05)
    r = ntk.propagate_ntk([[fp.q_star]], "tanh", 0.8, 0.05, 300)
    assert r.ntk[-1, 0, 0] == pytest.approx(fp.theta_diag, rel=1e-10)
    # geometric approach with ratio chi_1 = exp(-1/xi)
    dev = np.abs(r.ntk[:40, 0, 0] - fp.theta_diag)
    assert dev[30] / dev[29] == pytest.approx(math.exp(-1 / fp.xi_diag), rel=1e-8)
    ch = ntk.ntk_fixed_point("tanh", 2.5, 0.05)
    assert ch.theta_diag == math.inf and math.isfinite(ch.theta_offdiag) and ch.growth > 1
    crit = ntk.ntk_fixed_point("relu", 2.0, 0.0)
    assert crit.xi_diag == math.inf


def test_ntk_map_is_psd_and_checks_arguments():
    cov = np.array([[1.0, 0.3], [0.3, 0.8]])
    step = ntk.ntk_map(cov, cov, "tanh", 1.5, 0.1)
    assert np.all(np.linalg.eigvalsh(step.ntk) >= -1e-12)
    assert np.allclose(step.cov, dense.covariance_map(cov, "tanh", 1.5, 0.1))
    with pytest.raises(ValueError):
        ntk.ntk_map(cov, np.eye(3), "tanh", 1.5, 0.1)
    with pytest.raises(ValueError):
        ntk.ntk_map(cov, [[1.0, 2.0], [2.0, 1.0]], "tanh", 1.5, 0.1)  # not PSD
    with pytest.raises(ValueError):
        ntk.propagate_ntk(cov, "tanh", -1.0, 0.1, 2)
    with pytest.raises(TypeError):
        ntk.propagate_ntk(cov, "tanh", 1j, 0.1, 2)
    with pytest.raises(ValueError):
        ntk.propagate_ntk(cov, "tanh", 1.0, 0.1, -1)
    with pytest.raises(ValueError):
        ntk.propagate_ntk([[float("nan")]], "tanh", 1.0, 0.1, 1)


def test_empirical_ntk_numpy_backprop_equals_torch_autograd():
    pytest.importorskip("torch")
    x = gaussian_inputs(3, 8, q=1.0, c=0.5, rng=0)
    a = empirical_ntk(x, "tanh", 1.5, 0.05, 2, 16, 2, method="numpy", rng=4)
    b = empirical_ntk(x, "tanh", 1.5, 0.05, 2, 16, 2, method="torch", rng=4)
    assert np.allclose(a, b, rtol=1e-12, atol=1e-12)


def test_empirical_ntk_mean_matches_theory():
    # width 256, 120 networks: the mean is within 4.5 standard errors plus the O(1/N) bias bound
    # |Theta| * depth / N (the first-order finite-width correction is at most ~depth/N relative)
    x = gaussian_inputs(2, 16, q=1.0, c=0.6, rng=1)
    depth, width = 2, 256
    emp = empirical_ntk(x, "relu", 2.0, 0.0, depth, width, 120, rng=2)
    th = ntk.propagate_ntk(dense.input_covariance(x, 2.0, 0.0), "relu", 2.0, 0.0, depth).ntk[depth]
    se = emp.std(axis=0, ddof=1) / math.sqrt(emp.shape[0])
    assert np.all(np.abs(emp.mean(axis=0) - th) <= 4.5 * se + np.abs(th) * (depth + 1) / width)


def test_empirical_ntk_arguments():
    x = np.ones((2, 3))
    with pytest.raises(ValueError):
        empirical_ntk(x, "tanh", 1.0, 0.0, 1, 4, 1, method="jax")
    with pytest.raises(TypeError):
        empirical_ntk(x, "tanh", 1.0, 0.0, 1, 4, 1, method=None)
    with pytest.raises(ValueError):
        empirical_ntk(np.ones(3), "tanh", 1.0, 0.0, 1, 4, 1)
    a = empirical_ntk(x, "tanh", 1.0, 0.0, 1, 4, 2, rng=7)
    assert np.array_equal(a, empirical_ntk(x, "tanh", 1.0, 0.0, 1, 4, 2, rng=np.random.default_rng(7)))


# ---- periodic CNNs --------------------------------------------------------------------------------

CONV_V = [0.25, 0.5, 0.25]


def test_conv_ntk_reduces_to_dense_for_one_position_and_matches_by_hand():
    from meanfield import conv

    x = np.random.default_rng(0).standard_normal((2, 5, 3))
    cov0 = conv.multi_input_covariance(x, 1.5, 0.05, CONV_V)
    one = cov0[:, :1, :, :1]
    a = ntk.propagate_conv_ntk(one, "tanh", 1.5, 0.05, [1.0], 3).ntk[3][:, 0, :, 0]
    b = ntk.propagate_ntk(one[:, 0, :, 0], "tanh", 1.5, 0.05, 3).ntk[3]
    assert np.allclose(a, b, rtol=1e-13)
    # one layer by hand: Theta' = Sigma' + A * (Sigma_dot o Theta)
    step = ntk.conv_ntk_map(cov0, cov0, "relu", 2.0, 0.1, CONV_V)
    flat = cov0.reshape(10, 10)
    dot = dense.derivative_covariance_map(flat, "relu", 2.0).reshape(2, 5, 2, 5)
    prod = np.swapaxes(dot * cov0, 1, 2)
    expect = conv.multi_input_covariance_map(cov0, "relu", 2.0, 0.1, CONV_V) + np.swapaxes(
        conv.average(prod, CONV_V), 1, 2
    )
    assert np.allclose(step.ntk, expect, rtol=1e-13)


def test_empirical_conv_ntk_mean_matches_theory():
    from meanfield import conv
    from meanfield.simulate import empirical_conv_ntk

    x = np.random.default_rng(3).standard_normal((2, 6, 3))
    cov0 = conv.multi_input_covariance(x, 2.0, 0.0, CONV_V)
    depth, width = 1, 96
    th = ntk.propagate_conv_ntk(cov0, "relu", 2.0, 0.0, CONV_V, depth).ntk[depth][:, 2, :, 2]
    emp = empirical_conv_ntk(x, "relu", 2.0, 0.0, CONV_V, depth, width, 80, position=2, rng=4)
    se = emp.std(axis=0, ddof=1) / math.sqrt(emp.shape[0])
    # 4.5 standard errors plus the O(1/c) bias bound |Theta| (depth + 1) / c
    assert np.all(np.abs(emp.mean(axis=0) - th) <= 4.5 * se + np.abs(th) * (depth + 1) / width)


def test_conv_ntk_arguments():
    with pytest.raises(ValueError):
        ntk.conv_ntk_map(np.eye(4), np.eye(4), "tanh", 1.0, 0.0, CONV_V)
    with pytest.raises(ValueError):
        ntk.propagate_conv_ntk(np.ones((1, 3, 1, 3)) * -1.0, "tanh", 1.0, 0.0, CONV_V, 1)


def test_constnet_ntk_is_a_linear_models_kernel_and_matches_backprop():
    from meanfield.validation.ntk import constnet_empirical_ntk

    x = np.random.default_rng(5).standard_normal((3, 8, 8, 3))
    th = ntk.constnet_ntk(x, (4, 8), 3, 4, 2)
    emp = constnet_empirical_ntk(x, (4, 8), 4)
    assert np.allclose(emp, th, rtol=0, atol=1e-12 * np.abs(th).max())
    # linear in each input (plus the bias's 1): Theta - 1 is bilinear
    y = np.random.default_rng(6).standard_normal((1, 8, 8, 3))
    lin = ntk.constnet_ntk(np.concatenate([x[:1], y, x[:1] + 2 * y]), (4, 8), 3, 1, 2)[..., 0, 0] - 1
    assert lin[0, 2] == pytest.approx(lin[0, 0] + 2 * lin[0, 1], rel=1e-12)
    assert np.all(th[:, :, 0, 1] == 0)
    with pytest.raises(ValueError):
        ntk.constnet_ntk(x, (4, 8), 2, 4, 2)  # n_input does not match x
    with pytest.raises(TypeError):
        ntk.constnet_ntk(x.astype(complex), (4, 8), 3, 4, 2)


# --- regressions found by the public-API fuzzer (tests/fuzz/) ------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda: ntk.ntk_map(np.eye(2), np.eye(2), "sign", 1.5, 0.05),
        lambda: ntk.propagate_ntk(np.eye(2), "exp", 1.5, 0.05, 3),
        lambda: ntk.propagate_ntk(np.eye(2), "tanh", 1e300, 0.05, 3),
    ],
)
def test_ntk_overflow_names_the_arguments(call):
    with pytest.raises(ValueError, match="activation, sigma_w2, sigma_b2"):
        call()


def test_conv_ntk_overflow_and_ragged_name_the_arguments():
    from meanfield.conv import multi_input_covariance

    x = np.random.default_rng(0).standard_normal((2, 5, 2))
    v = np.array([0.25, 0.5, 0.25])
    cov = multi_input_covariance(x, 1.5, 0.05, v, 5)
    with pytest.raises(ValueError, match="sigma_w2"):
        ntk.propagate_conv_ntk(cov, "tanh", 1e300, 0.05, v, 2, shape=5)
    with pytest.raises(ValueError, match="activation"):
        ntk.conv_ntk_map(cov, cov, "sign", 1.5, 0.05, v, shape=5)
    with pytest.raises(ValueError, match="cov"):
        ntk.conv_ntk_map([[1.0, 2.0], [1.0]], cov, "tanh", 1.5, 0.05, v, shape=5)


def test_constnet_ntk_bounds_n_classes_and_overflow():
    x = np.random.default_rng(0).standard_normal((2, 4, 4, 1))
    with pytest.raises(ValueError, match="n_classes"):
        ntk.constnet_ntk(x, (2, 4), n_input=1, n_classes=10**12)
    with pytest.raises(ValueError, match="n_classes"):
        ntk.constnet_ntk(x, (2, 4), n_input=1, n_classes=2**64)
    with pytest.raises(ValueError, match=r"\bx\b"):
        ntk.constnet_ntk(1e300 * x, (2, 4), n_input=1, n_classes=3)


@pytest.mark.parametrize("x", [None, "a", 1.0, np.ones((2, 4, 4, 1, 1)), 1e300 * np.ones((2, 4, 4, 1))])
def test_constnet_empirical_ntk_checks_x(x):
    from meanfield.validation.ntk import constnet_empirical_ntk

    with pytest.raises((TypeError, ValueError), match=r"\bx\b"):
        constnet_empirical_ntk(x, [2, 4], 3)
