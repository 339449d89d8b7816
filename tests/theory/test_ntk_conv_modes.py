"""meanfield.ntk.conv_ntk_fixed_point: the CNN NTK's fixed point and per-Fourier-mode depth scales
against iterating the recursion (1-D and 2-D), and the 2-D empirical-NTK simulator."""

from __future__ import annotations

import math

import numpy as np
import pytest

from meanfield import conv, dense, ntk
from meanfield.simulate import empirical_conv_ntk, empirical_periodic_cnn_ntk

V1 = (0.2, 0.5, 0.3)  # not symmetric: complex lambda_m
V2 = np.array([[0.05, 0.1, 0.0], [0.1, 0.4, 0.15], [0.05, 0.1, 0.05]])
#: The relaxation of Theta - Theta' is exactly linear at the fixed point; the only error is the
#: rounding of the (D P)^2 sums (and of the chi's, closed forms / quadrature at 1e-13).
LINEAR_RTOL = 1e-9


def _relaxation(act, sw, sb, v, shape):
    """Per-layer ratio of the Fourier amplitudes of the cyclic diagonals of a perturbation of Theta."""
    p = int(np.prod(shape))
    fp = dense.fixed_point(act, sw, sb)
    sigma = conv.fixed_point_covariance(fp.q_star, fp.c_star, p)[None, :, None, :]
    rng = np.random.default_rng(3)
    a = rng.standard_normal((p, p))
    theta_b = sigma + 0.3 * (a @ a.T / p)[None, :, None, :]
    d0 = theta_b - sigma
    step_a = ntk.conv_ntk_map(sigma, sigma, act, sw, sb, v, shape)
    step_b = ntk.conv_ntk_map(sigma, theta_b, act, sw, sb, v, shape)
    d1 = step_b.ntk - step_a.ntk
    m0 = conv.cyclic_diagonal_modes(d0[0, :, 0, :], shape)
    m1 = conv.cyclic_diagonal_modes(d1[0, :, 0, :], shape)
    return m0, m1


@pytest.mark.parametrize("shape,v", [(6, V1), ((3, 4), V2)], ids=["1d", "2d"])
def test_each_fourier_mode_relaxes_by_chi_lambda(shape, v):
    act, sw, sb = "tanh", 1.3, 0.1
    res = ntk.conv_ntk_fixed_point(act, sw, sb, v, shape)
    m0, m1 = _relaxation(act, sw, sb, v, shape)
    sd = len(np.shape(res.lambda_))
    fp = res.fixed_point
    for d in np.ndindex(*np.shape(res.lambda_)):
        chi = fp.chi_1 if not any(d) else fp.chi_c
        expect = chi * res.lambda_ * m0[d]
        scale = np.abs(m0[d]).max()
        assert np.allclose(m1[d], expect, rtol=0, atol=LINEAR_RTOL * scale), d
        growth = res.growth_diag if not any(d) else res.growth_offdiag
        assert np.allclose(growth, np.abs(chi * res.lambda_), rtol=1e-15)
    assert sd == (1 if isinstance(shape, int) else 2)


def test_fixed_point_and_depth_scale_by_iterating_the_recursion():
    act, sw, sb, v, p = "erf", 1.2, 0.3, V1, 6
    res = ntk.conv_ntk_fixed_point(act, sw, sb, v, p)
    fp = res.fixed_point
    assert fp.chi_1 < 1  # ordered: a finite fixed point (c* = 1 there, so both limits are q* / (1 - chi_1))
    sigma = conv.fixed_point_covariance(fp.q_star, fp.c_star, p)[None, :, None, :]
    theta = sigma
    depth = 80
    for _ in range(depth):
        theta = ntk.conv_ntk_map(sigma, theta, act, sw, sb, v, p).ntk
    t = theta[0, :, 0, :]
    # remaining distance: |Theta^0 - Theta^*| times the slowest factor (mode 0) to the power depth
    rem = max(abs(res.theta_diag - fp.q_star), abs(res.theta_offdiag - fp.q_star * fp.c_star))
    tol = rem * max(res.growth_diag.max(), res.growth_offdiag.max()) ** depth + 1e-12 * res.theta_diag
    assert np.allclose(np.diag(t), res.theta_diag, rtol=0, atol=tol)
    off = t[~np.eye(p, dtype=bool)]
    assert np.allclose(off, res.theta_offdiag, rtol=0, atol=tol)
    # the depth scale of mode 0 is the dense one
    assert res.xi_diag[0] == pytest.approx(-1 / math.log(fp.chi_1), rel=1e-14)
    assert res.xi_offdiag[0] == pytest.approx(-1 / math.log(fp.chi_c), rel=1e-14)


def test_chaotic_and_critical_edges():
    res = ntk.conv_ntk_fixed_point("tanh", 2.5, 0.05, V1, 6)
    assert math.isinf(res.theta_diag) and np.isinf(res.xi_diag[0])
    assert np.all(np.isfinite(res.growth_diag))
    crit = ntk.conv_ntk_fixed_point("relu", 2.0, 0.0, (0.0, 1.0, 0.0), 5)  # delta v at criticality
    assert np.all(np.isinf(crit.xi_offdiag))
    with pytest.raises(ValueError):
        ntk.conv_ntk_fixed_point("tanh", -1.0, 0.0, V1, 6)
    with pytest.raises(ValueError):
        ntk.conv_ntk_fixed_point("tanh", 1.0, 0.0, (0.5, 0.6, 0.1), 6)


def test_nd_simulator_reproduces_the_1d_one_and_runs_in_2d():
    x = np.random.default_rng(1).standard_normal((2, 6, 3))
    a = empirical_conv_ntk(x, "tanh", 1.5, 0.05, (0.25, 0.5, 0.25), 2, 6, 3, position=1, rng=5)
    b = empirical_periodic_cnn_ntk(x, "tanh", 1.5, 0.05, (0.25, 0.5, 0.25), 2, 6, 3, position=1, rng=5)
    assert np.array_equal(a, b)  # same streams, same networks
    x2 = np.random.default_rng(2).standard_normal((1, 3, 4, 2))
    e = empirical_periodic_cnn_ntk(x2, "relu", 2.0, 0.0, V2, 1, 4, 2, position=(2, 3), rng=0)
    assert e.shape == (2, 1, 1) and np.all(e > 0)
    with pytest.raises(ValueError):
        empirical_periodic_cnn_ntk(x2, "relu", 2.0, 0.0, V2, 1, 4, 2, position=(3, 0))
    with pytest.raises(ValueError):
        empirical_periodic_cnn_ntk(x2, "relu", 2.0, 0.0, V1, 1, 4, 2, position=(0, 0))
