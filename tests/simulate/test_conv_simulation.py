"""Monte-Carlo periodic CNNs (meanfield.simulate.simulate_conv) against meanfield.conv,
and the validation.conv set-ups at reduced size."""

import numpy as np
import pytest
from meanfield.validation import conv as vconv

from meanfield import conv
from meanfield.simulate import ConvSimulation, conv_kernels, simulate_conv

#: Standard errors allowed: every quantity below is an unbiased estimate (first layer, or the
#: first backward step from an independent output gradient), so only sampling noise remains;
#: P(|Z| > 4.5) = 7e-6 per entry.
Z = 4.5


def _check_unbiased(samples, theory):
    mean = samples.mean(0)
    se = samples.std(0, ddof=1) / np.sqrt(samples.shape[0])
    assert np.all(np.abs(mean - theory) <= Z * se + 1e-12)


@pytest.mark.parametrize(
    "activation, v, init",
    [
        ("tanh", np.array([0.2, 0.5, 0.3]), "gaussian"),
        ("relu", np.full((3, 3), 1 / 9), "gaussian"),
        ("erf", np.array([0.0, 1.0, 0.0]), "delta_orthogonal"),
    ],
)
def test_first_layer_covariance_and_gradients_are_unbiased(activation, v, init):
    """Layer 1 is exactly A_v * C(Sigma^0) in expectation at any channel count (h^0 is exactly Gaussian)."""
    p = 6 if v.ndim == 1 else 9
    rng = np.random.default_rng(0)
    a = rng.standard_normal((p, p)) + 1.0
    cov0 = a @ a.T / p + 0.2 * np.eye(p)
    sim = simulate_conv(cov0, activation, 1.7, 0.1, v, 1, 16, 300, init=init, gradients=True, rng=1)
    theory = conv.propagate(cov0, activation, 1.7, 0.1, v, 1)
    _check_unbiased(sim.cov[:, 1, 0].reshape(300, -1), theory[1].ravel())
    bp = conv.gradient_variance_decay(cov0, activation, 1.7, 0.1, v, 1)
    _check_unbiased(sim.grad_sq[:, 0, 0], np.diag(bp.cov_grad[0]))
    _check_unbiased(sim.weight_grad_sq[:, 0, 0][:, None], bp.weight_grad_sq[:1])


def test_gaussian_kernel_variances_follow_v():
    v = np.array([0.1, 0.6, 0.3])
    k = conv_kernels(400, (3,), 8, 2.0, v, "gaussian", rng=0, backend="numpy")
    per_offset = (k**2).mean(axis=(0, 2, 3)) * 8  # E omega^2 * c = sigma_w2 v_beta
    # omega^2 c / (sigma_w2 v) ~ chi^2_1 (variance 2): relative standard error sqrt(2 / samples)
    rel_se = np.sqrt(2.0 / (400 * 8 * 8))
    assert np.all(np.abs(per_offset / (2.0 * v) - 1.0) <= Z * rel_se)


def test_fig_s4_setup_matches_the_paper():
    s = vconv.fig_s4_setup()
    r = 2 / 3
    spectrum = -np.array([1, r, r**3, r**5, r**4, r**2, r**4, r**5, r**3, r]) / 6
    assert np.allclose(conv.cyclic_diagonal_modes(s["eps0"])[1], spectrum, atol=1e-14)
    assert np.linalg.eigvalsh(s["sigma_star"] - s["eps0"]).min() > 0
    assert s["sigma_w2"] == 2.25 and s["sigma_b2"] == 0.25


def test_fig_s4_small_simulation_agrees_with_theory():
    depth = 3
    modes = vconv.simulate_fig_s4(depth, 128, 24, rng=3).real
    exact, lin = vconv.fig_s4_theory(depth)
    mean = modes.mean(0)
    se = modes.std(0, ddof=1) / np.sqrt(24)
    bias = vconv.S4_WIDTH_BIAS * np.abs(lin[0]) / 128
    assert np.all(np.abs(mean[1] - exact[1].real) <= Z * se[1])  # layer 1 is exactly unbiased
    assert np.all(np.abs(mean[2:] - exact[2:].real) <= Z * se[2:] + bias)
    # the zero mode decays most slowly (Fig. S4)
    assert np.all(np.abs(lin[-1, 0]) / np.abs(lin[0, 0]) >= np.abs(lin[-1, 1:]) / np.abs(lin[0, 1:]))


@pytest.mark.slow
def test_isometry_rows_pass():
    rows = vconv.isometry_rows(0)
    assert rows and all(r.passed for r in rows)


def test_conv_results_are_frozen_with_replace():
    sim = simulate_conv(np.eye(5), "tanh", 1.5, 0.1, np.full(3, 1 / 3), 1, 4, 2, rng=0)
    assert isinstance(sim, ConvSimulation)
    other = sim.replace(log_scale=sim.log_scale + 1.0)
    np.testing.assert_allclose(other.cov, np.e * sim.cov, rtol=1e-14)
    with pytest.raises(AttributeError):
        sim.log_scale = None


def test_simulators_take_width_and_keyword_backend_and_rng():
    """One signature style: the channel count is ``width``; ``backend`` and ``rng`` are keywords."""
    v = np.full(3, 1 / 3)
    a = simulate_conv(np.eye(5), "relu", 1.5, 0.1, v, 1, width=4, n_networks=2, rng=3)
    assert np.array_equal(
        a.cov, simulate_conv(np.eye(5), "relu", 1.5, 0.1, v, 1, 4, 2, rng=np.random.default_rng(3)).cov
    )
    with pytest.raises(TypeError):
        simulate_conv(np.eye(5), "relu", 1.5, 0.1, v, 1, 4, 2, "gaussian", None, False, "numpy", 3)
    with pytest.raises(TypeError):
        conv_kernels(2, 3, 4, 1.0, v, "gaussian", 0)
    assert conv_kernels(2, 3, width=4, sigma_w2=1.0, rng=0).shape == (2, 3, 4, 4)


# --- figures (reduced size) -------------------------------------------------------------------


def test_fig_s3_claim_block_circulant_approaches_marchenko_pastur():
    """Sec. 2.2.1 / Fig. S3: with growing c the spectrum of i.i.d. block-circulant weights tends to MP."""
    from meanfield.init import conv_singular_values as block_circulant_singular_values

    rng = np.random.default_rng(1)
    grid = np.linspace(0, 2, 2001)
    mp_cdf = np.cumsum(np.sqrt(4 - grid**2) / np.pi) * (grid[1] - grid[0])

    def ks(c):
        s = block_circulant_singular_values(rng.standard_normal((5, c, c)) / np.sqrt(5 * c), 26)
        emp = np.searchsorted(np.sort(s), grid, side="right") / s.size
        return np.max(np.abs(emp - mp_cdf))

    # KS distance to the quarter circle falls with c (measured ~1/c: 0.16-0.45, 0.05-0.09, 0.010-0.013
    # at c = 2, 8, 64 over three seeds); 8x the channels must at least halve it
    k2, k8, k64 = ks(2), ks(8), ks(64)
    assert k2 > k8 > 2 * k64


@pytest.mark.slow
def test_fast_figures_write_png_and_json(tmp_path):
    from meanfield.figures.xiao2018 import fig_2_theory, fig_4b

    for fig in (fig_2_theory, fig_4b):
        paths = fig(tmp_path)
        assert [p.suffix for p in paths] == [".png", ".json"] and all(p.stat().st_size > 0 for p in paths)
