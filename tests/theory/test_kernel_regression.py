"""meanfield.kernel_regression (Lee et al. 2019) and the xiao2018 kernel-regression figure's claim."""

from __future__ import annotations

import math

import numpy as np
import pytest

from meanfield import dense
from meanfield import kernel_regression as KR
from meanfield.kernels import dense_kernels

#: Linear-algebra rounding of an eigen-solve of a well-conditioned 12 x 12 kernel.
SOLVE_ATOL = 1e-9


def _kernels(seed=0, n=12, m=5):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n + m, 4))
    k = dense_kernels(x, None, "erf", 1.5, 0.1, 3)
    return k, n, rng.standard_normal((n, 2))


def test_posterior_mean_interpolates_and_matches_a_direct_solve():
    k, n, y = _kernels()
    kxx, ktx = k.nngp[:n, :n], k.nngp[n:, :n]
    assert np.allclose(KR.nngp_posterior_mean(kxx, kxx, y), y, atol=SOLVE_ATOL)  # noiseless GP interpolates
    want = ktx @ np.linalg.solve(kxx + 0.01 * np.mean(np.diag(kxx)) * np.eye(n), y)
    assert np.allclose(KR.nngp_posterior_mean(ktx, kxx, y, diag_reg=0.01), want, atol=SOLVE_ATOL)
    assert KR.nngp_posterior_mean(ktx, kxx, y[:, 0]).shape == (5,)


def test_gradient_flow_from_zero_to_the_converged_prediction():
    k, n, y = _kernels(1)
    txx, ttx = k.ntk[:n, :n], k.ntk[n:, :n]
    assert np.array_equal(KR.gradient_flow_mean(ttx, txx, y, t=0.0), np.zeros((5, 2)))
    conv = KR.gradient_flow_mean(ttx, txx, y)
    assert np.allclose(conv, ttx @ np.linalg.solve(txx, y), atol=SOLVE_ATOL)
    lam_min = np.linalg.eigvalsh(txx)[0]
    late = KR.gradient_flow_mean(ttx, txx, y, t=60.0 / lam_min)  # exp(-60): converged to rounding
    assert np.allclose(late, conv, atol=SOLVE_ATOL)
    # on the training inputs the residual decays as exp(-eta Theta t) (Lee et al. 2019, eq. 10)
    t, eta = 0.7, 0.5
    lam, vec = np.linalg.eigh(txx)
    want = y - vec @ (np.exp(-eta * lam * t)[:, None] * (vec.T @ y))
    assert np.allclose(KR.gradient_flow_mean(txx, txx, y, t=t, learning_rate=eta), want, atol=SOLVE_ATOL)


def test_arguments_are_checked():
    k, n, y = _kernels()
    kxx = k.nngp[:n, :n]
    with pytest.raises(ValueError, match="k_test_train"):
        KR.nngp_posterior_mean(kxx[:, :3], kxx, y)
    with pytest.raises(ValueError, match="positive semi-definite"):
        KR.nngp_posterior_mean(kxx, -kxx, y)
    with pytest.raises(ValueError, match="t must"):
        KR.gradient_flow_mean(kxx, kxx, y, t=-1.0)
    with pytest.raises(ValueError, match="learning_rate"):
        KR.gradient_flow_mean(kxx, kxx, y, learning_rate=0.0)
    with pytest.raises(ValueError, match="diag_reg"):
        KR.nngp_posterior_mean(kxx, kxx, y, diag_reg=-1.0)


def test_kernel_regression_figure_claim_accuracy_falls_beyond_six_xi_c():
    """Xiao et al. 2018 / Schoenholz et al. 2017: beyond a few xi_c from criticality the infinite-width
    predictors forget the inputs (chance accuracy); at the critical sigma_w2 they keep them."""
    pytest.importorskip("sklearn")
    from meanfield.data import load_digits

    ds = load_digits(standardized=True)
    perm = np.random.default_rng(0).permutation(ds.y.size)
    tr, te = perm[:100], perm[100:200]
    x = ds.x / 8.0
    y = np.eye(10)[ds.y[tr]] - 0.1
    sb = 0.05
    crit = dense.critical_sigma_w2("erf", sb)
    depths = (2, 256)
    chance = 0.2  # 10 balanced classes: 0.1, with a margin of 3 standard errors at 100 test points
    for sw in (0.3, crit, 4.0):
        six_xi = 6 * dense.fixed_point("erf", sw, sb).xi_c
        p = KR.kernel_regression(x[tr], y, x[te], "erf", sw, sb, depths, diag_reg=1e-4)
        for pred in (p.nngp, p.ntk):
            acc = (pred.argmax(-1) == ds.y[te]).mean(-1)
            assert acc[0] > 0.7  # shallow: every sigma_w2 learns the digits
            if math.isinf(six_xi):
                assert acc[1] > 0.7  # critical: depth 256 still learns
            else:
                assert depths[1] > 3 * six_xi
                assert acc[1] < chance  # depth >> 6 xi_c away from criticality: chance
