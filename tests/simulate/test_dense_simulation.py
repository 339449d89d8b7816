"""Dense mean field against finite networks at reduced size, and the dense figures' claims."""

import math

import numpy as np
import pytest
from meanfield.validation.report import Z_DEFAULT, mean_and_stderr

from meanfield import dense
from meanfield.data import gaussian_inputs
from meanfield.numerics import richardson
from meanfield.simulate import simulate_dense

#: Networks per width; the verdict is Richardson-extrapolated in the width (as validation.dense).
N_NETWORKS = 120
WIDTHS = (64, 128)
DEPTH = 6


def _extrapolated(a, b):
    """2 m_2N - m_N and its standard error, from per-network samples at widths N and 2N."""
    (m1, s1), (m2, s2) = mean_and_stderr(a), mean_and_stderr(b)
    est = richardson(m1, m2, order=1, coarse_stderr=s1, fine_stderr=s2)
    return est.value, est.stderr


@pytest.mark.parametrize("act,sw,sb", [("tanh", 2.5, 0.05), ("erf", 0.5, 0.05), ("relu", 1.5, 0.1)])
def test_trajectories_and_gradients_agree_with_finite_networks(act, sw, sb):
    x = gaussian_inputs(2, 32, q=1.0, c=0.6, rng=5)
    cov0 = dense.input_covariance(x, sw, sb)
    theory = dense.propagate(cov0, act, sw, sb, DEPTH)
    grad = dense.backward_variance(float(np.mean(np.diag(cov0))), act, sw, sb, DEPTH + 1)
    sims = [
        simulate_dense(
            x, act, sw, sb, DEPTH, n, N_NETWORKS, gradients=True, rng=np.random.SeedSequence(11, spawn_key=(n,))
        )
        for n in WIDTHS
    ]
    # the O(1/N^2) remainder after extrapolation, bounded by scale / N^2 as in validation.dense
    bias = 1.0 / WIDTHS[0] ** 2
    for layer in (1, DEPTH):
        q, se = _extrapolated(*(s.cov[:, layer, 0, 0] for s in sims))
        assert abs(q - theory[layer, 0, 0]) <= Z_DEFAULT * se + bias * theory[layer, 0, 0]
        corr = [s.cov[:, layer, 0, 1] / np.sqrt(s.cov[:, layer, 0, 0] * s.cov[:, layer, 1, 1]) for s in sims]
        c, se = _extrapolated(*corr)
        c_th = theory[layer, 0, 1] / math.sqrt(theory[layer, 0, 0] * theory[layer, 1, 1])
        assert abs(c - c_th) <= Z_DEFAULT * se + bias
    g, se = _extrapolated(*(s.grad_sq[:, 0, 0] for s in sims))
    assert abs(g - grad[0]) <= Z_DEFAULT * se + bias * grad[0]


def test_simulation_detects_a_wrong_theory():
    """The same check rejects the theory of a 20 % smaller sigma_w2 (q^6: 0.73 instead of 1.07)."""
    x = gaussian_inputs(2, 32, q=1.0, c=0.6, rng=5)
    wrong = dense.propagate(dense.input_covariance(x, 2.0, 0.05), "tanh", 2.0, 0.05, DEPTH)
    sims = [
        simulate_dense(x, "tanh", 2.5, 0.05, DEPTH, n, N_NETWORKS, rng=np.random.SeedSequence(11, spawn_key=(n,)))
        for n in WIDTHS
    ]
    q, se = _extrapolated(*(s.cov[:, DEPTH, 0, 0] for s in sims))
    assert abs(q - wrong[DEPTH, 0, 0]) > Z_DEFAULT * se + wrong[DEPTH, 0, 0] / WIDTHS[0] ** 2


def _load(paths):
    from meanfield.figures import load

    return load(next(p for p in paths if p.suffix == ".json")).data


@pytest.mark.slow
def test_fig_s1_phase_diagram_claims(tmp_path):
    from meanfield.figures.xiao2018 import fig_s1

    data = _load(fig_s1(tmp_path))
    sw, sb = np.array(data["sigma_w2"]), np.array(data["sigma_b2"])
    chi = np.array(data["chi_1"])
    crit_w = np.array(data["critical_sigma_w2"])
    # the edge of chaos starts at sigma_w2 = 1 for sigma_b2 = 0 (Poole et al.) and moves right with bias
    assert crit_w[0] == pytest.approx(1.0, abs=1e-6)
    assert np.all(np.diff(crit_w) > 0)
    # ordered (chi_1 < 1) to the left of the line, chaotic to the right, on every grid row
    for j, b in enumerate(sb):
        edge = dense.critical_sigma_w2("tanh", b)
        left, right = sw < edge - 0.05, sw > edge + 0.05
        assert np.all(chi[left, j] < 1) and np.all(chi[right, j] > 1)
    assert (tmp_path / "xiao2018_fig_s1.png").stat().st_size > 0


@pytest.mark.slow
def test_fig_depth_scales_diverge_at_the_edge_of_chaos(tmp_path):
    from meanfield.figures.xiao2018 import fig_depth_scales

    data = _load(fig_depth_scales(tmp_path))
    sw = np.array(data["sigma_w2"])
    xi = np.array([[float(v) for v in row] for row in data["xi_c"]])
    for j, b in enumerate(data["sigma_b2"]):
        peak = sw[np.argmax(xi[:, j])]
        # the grid step bounds how close the largest xi_c can sit to the critical sigma_w2
        assert abs(peak - dense.critical_sigma_w2("tanh", b)) <= 2 * (sw[1] - sw[0])


@pytest.mark.slow
def test_fig_qc_maps_points_follow_theory(tmp_path):
    from meanfield.figures.xiao2018 import fig_qc_maps

    data = _load(fig_qc_maps(tmp_path))
    for phase in ("ordered", "critical", "chaotic"):
        d = data[phase]
        q_th, q_mc = np.array(d["q_theory"]), np.array(d["q_mc"])
        # 16 networks of width 256: relative fluctuation of q ~ sqrt(2 / (16 * 256)) = 2 %
        assert np.max(np.abs(q_mc / q_th - 1)) < Z_DEFAULT * math.sqrt(2 / (16 * 256))
    # c^l -> 1 in the ordered phase, stays below its start in the chaotic phase
    assert data["ordered"]["c_theory"][-1] > 0.99
    assert data["chaotic"]["c_theory"][-1] < data["chaotic"]["c_theory"][0]
