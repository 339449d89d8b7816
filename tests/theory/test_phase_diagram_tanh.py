"""The tanh phase diagram's fast c* solver (100 x 100 grid in <= 1 s) against the public integrals.

``dense.fixed_point`` and ``dense.phase_diagram`` take, for tanh, the two bivariate integrals of
each Newton step on the c-map (E tanh tanh and E tanh' tanh') from one pass over the trapezoid
nodes with tanh of a sum formed from products of exponentials (``meanfield/_tanh_fused.py``), and
the q* solver's two one-dimensional integrals from one pass with one ``math.tanh`` per node. These
tests check the results against :func:`meanfield.gaussian.pair_expectation` /
:func:`meanfield.gaussian.expectation` (per-node ``math.tanh``, the same rules; themselves pinned
against scipy's adaptive quadrature in ``tests/theory/test_gaussian.py`` and ``tests/theory/test_dense_edge_cases.py``).
"""

from __future__ import annotations

import numpy as np
import pytest

from meanfield import dense, gaussian

EPS = np.finfo(float).eps
#: Largest difference between the fused moments and pair_expectation's, derived before measuring:
#: per node, tanh from the rounded product P = e^{2a} e^{2b} is off by <= 1.5 eps, the division
#: and subtraction add ~1 eps, libm's tanh ~1 eps (3.5 eps, times weights summing to 1); the two
#: nested sums of ~10^2 terms each round differently in the two codes, ~sqrt(10^2) eps / 2 each
#: in the random-walk model (10 eps). 32 eps leaves a factor ~2 over that sum.
MOMENT_TOL = 32 * EPS
#: Newton on the deflated c-map stops when its step is <= 1e-15 (``dense._solve_c``).
NEWTON_STEP = 1e-15

#: sigma_w2 up to 12 reaches q* > 9 (scale > 3: the graded rule, where the fused pass falls back);
#: small sigma_w2 and sigma_b2 give q* < 0.25 (Gauss-Hermite, also left to pair_quadrature).
SW = np.concatenate([np.linspace(0.1, 4.0, 14), [1.01, 6.0, 12.0]])
SB = np.array([0.0, 0.002, 0.05, 0.2, 0.5])


@pytest.fixture(scope="module")
def grid():
    return dense.phase_diagram("tanh", SW, SB)


def test_c_star_is_a_root_of_the_public_c_map(grid):
    sw = np.broadcast_to(SW[:, None], grid.q_star.shape)
    sb = np.broadcast_to(SB[None, :], grid.q_star.shape)
    chaotic = (grid.chi_1 > 1.0 + 1e-12) & (grid.q_star > 0)
    assert chaotic.sum() >= 30 and (~chaotic).sum() >= 20  # both phases and every rule are exercised
    assert grid.q_star[chaotic].max() > 9.0 and grid.q_star[chaotic].min() < 0.25
    q, c = grid.q_star[chaotic], grid.c_star[chaotic]
    w, b = sw[chaotic], sb[chaotic]
    m0 = gaussian.pair_expectation("tanh", q, q, c)
    m1 = gaussian.pair_expectation("tanh", q, q, c, derivatives=(1, 1))
    # h(c) = (sw E tanh tanh + sb) / q - c vanishes at c* up to the moments' difference (divided by
    # q, times sw) and Newton's last step times the residual's slope |sw m1 - 1| <= max(1, sw)
    residual = np.abs((w * m0 + b) / q - c)
    bound = w * MOMENT_TOL / q + NEWTON_STEP * np.maximum(1.0, w) + 4 * EPS
    assert np.all(residual <= bound), np.max(residual / bound)
    # chi_c is sw E tanh'(u1) tanh'(u2) at Newton's last iterate, within NEWTON_STEP of c*: its slope
    # in c is sw q E tanh'' tanh'' <= sw q (|tanh''| <= 0.77)
    chi_bound = w * (MOMENT_TOL + q * NEWTON_STEP) + 4 * EPS
    assert np.all(np.abs(grid.chi_c[chaotic] - w * m1) <= chi_bound)
    # the ordered phase: c* = 1 and chi_c = chi_1 exactly (q* = 0: the frozen map's slope, 1)
    ordered = (grid.chi_1 <= 1.0 + 1e-12) & (grid.q_star > 0)
    assert np.all(grid.c_star[~chaotic] == 1.0)
    assert np.array_equal(grid.chi_c[ordered], grid.chi_1[ordered])


def test_q_star_and_chi_1_satisfy_the_public_q_map(grid):
    """q* comes from the fused one-dimensional pass, bit-identical to the two-pass integrals."""
    sw = np.broadcast_to(SW[:, None], grid.q_star.shape)
    sb = np.broadcast_to(SB[None, :], grid.q_star.shape)
    q = grid.q_star
    e0 = gaussian.expectation("tanh", q)
    # the solver stops at relative step 4e-16 (dense.SOLVER_RTOL); g'(q*) = chi_q - 1 in [-1, 0]
    assert np.all(np.abs(sw * e0 + sb - q) <= 8 * EPS * np.maximum(q, 1.0))
    assert np.array_equal(grid.chi_1, sw * gaussian.expectation("tanh", q, derivatives=(1, 1)))


def test_phase_diagram_equals_pointwise_fixed_points_bit_for_bit(grid):
    """fixed_point and phase_diagram share the solver: same numbers at every grid point."""
    for i in (0, 4, 9, 13, 15, 16):
        for j, b in enumerate(SB):
            fp = dense.fixed_point("tanh", SW[i], b)
            assert fp.q_star == grid.q_star[i, j] and fp.chi_1 == grid.chi_1[i, j]
            if j == 0:  # phase_diagram warm-starts c* along sigma_b2 from the previous column
                assert fp.c_star == grid.c_star[i, j] and fp.chi_c == grid.chi_c[i, j]
            else:
                assert fp.c_star == pytest.approx(grid.c_star[i, j], abs=1e-12)


def test_odd_symmetry_without_bias_gives_c_star_zero_exactly_at_small_q():
    """sigma_b2 = 0 just above sigma_w2 = 1: q* ~ 1e-2, Gauss-Hermite with math.tanh (exactly odd),
    so the c-map vanishes exactly at c = 0 and Newton from c = 0 stops there."""
    fp = dense.fixed_point("tanh", 1.006, 0.0)
    assert 0.0 < fp.q_star < 0.25 and fp.chi_1 > 1.0
    assert fp.c_star == 0.0
