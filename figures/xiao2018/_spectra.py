"""Xiao et al. 2018, beyond its figures: Jacobian spectra (Sec. 2.2.1) and infinite-width kernel regression."""

from __future__ import annotations

import numpy as np

from meanfield import dense

from .. import _kernel_regression
from .._common import by_size, colors, figure, plt, progress, save_figure, streams, title
from ._shared import PAPER

#: Bias variance of the Jacobian-spectrum figure (tanh on the critical line: q* = 0.046).
SPECTRA_SIGMA_B2 = 1e-4


@figure(paper=PAPER, figure="not in the paper (Sec. 2.2.1; Pennington et al. 2017 style)", honours_backend=True)
def fig_spectra(out_dir, *, size, backend, seed):
    """Jacobian singular-value spectra of critical tanh networks: orthogonal vs Gaussian weights at depths 2^k.

    Notes
    -----
    Xiao et al. 2018, Sec. 2.2.1 (after Pennington et al. 2017, Fig. 1): the density of the squared singular
    values lambda of the input-output Jacobian, per decade of lambda, from
    :func:`meanfield.spectra.jacobian_spectrum` (free probability), over histograms of the
    eigenvalues of J J^T of finite networks started at the fixed point
    (:func:`meanfield.simulate.jacobian_singular_values`). Orthogonal weights keep the
    spectrum concentrated around chi_1^L = 1 as depth grows (dynamical isometry), Gaussian weights
    spread it over many decades although its mean stays 1. Simulation on ``backend`` (products and
    SVDs on it).
    """
    from meanfield import spectra
    from meanfield.simulate import jacobian_singular_values

    sb = SPECTRA_SIGMA_B2
    sw = float(dense.critical_sigma_w2("tanh", sb))
    depths = by_size(size, smoke=(1, 4), default=(1, 4, 16, 64), full=(1, 4, 16, 64, 256))
    width = by_size(size, smoke=32, default=200, full=400)
    n_networks = by_size(size, smoke=2, default=8, full=20)
    n_points = by_size(size, smoke=240, default=1000, full=2000)
    n_atoms = by_size(size, smoke=800, default=3000, full=6000)
    laws = ("orthogonal", "gaussian")
    rngs = streams(seed, len(laws) * len(depths))
    fig, axs = plt.subplots(1, 2, figsize=(9.5, 4.0), layout="constrained", sharey=True)
    bins = np.linspace(-8, 3, 111)
    data: dict = {"depths": np.array(depths), "log10_bins": bins}
    cases = [(law, d) for law in laws for d in depths]
    for k, (law, depth) in enumerate(progress(cases, desc="fig_spectra")):
        ax = axs[laws.index(law)]
        col = colors(len(depths))[depths.index(depth)]
        s = spectra.jacobian_spectrum("tanh", sw, sb, depth, law, n_points=n_points, n_atoms=n_atoms)
        per_decade = np.log(10.0) * s.squared_singular_values * s.density
        ev = jacobian_singular_values("tanh", sw, sb, depth, width, n_networks, law, rng=rngs[k], backend=backend)
        logs = np.log10(np.clip(ev.ravel(), 1e-300, None))
        hist, _ = np.histogram(logs, bins=bins)
        hist = hist / (logs.size * np.diff(bins))
        ax.stairs(hist, bins, color=col, alpha=0.55, fill=True)
        ax.plot(np.log10(s.squared_singular_values), per_decade, color=col, lw=1.4, label=f"L = {depth}")
        data[f"{law}_L{depth}_log10_lambda"] = np.log10(s.squared_singular_values)
        data[f"{law}_L{depth}_theory_per_decade"] = per_decade
        data[f"{law}_L{depth}_mc_per_decade"] = hist
        data[f"{law}_L{depth}_theory_mass_on_grid"] = s.grid_mass
    for ax, law in zip(axs, laws):
        ax.set_title(f"{law} weights", fontsize=9)
        ax.set_xlabel(r"$\log_{10}\lambda$ ($\lambda$ = squared singular value of $J$)")
        ax.legend(fontsize=7, title="theory (lines), simulation (shaded)", title_fontsize=7)
        ax.set_xlim(bins[0], bins[-1])
    for ax in axs:
        ax.set_ylabel(r"density per decade of $\lambda$")
    title(
        fig,
        PAPER,
        "Sec. 2.2.1",
        "Jacobian spectra, free probability vs simulation (orthogonal: dynamical isometry)",
        f"tanh, sigma_w2 = {sw:.5g} (critical), sigma_b2 = {sb:g}, q* = "
        f"{dense.fixed_point('tanh', sw, sb).q_star:.3g}; width {width}, {n_networks} networks per curve",
    )
    params = {
        "activation": "tanh",
        "sigma_w2": sw,
        "sigma_b2": sb,
        "depths": list(depths),
        "width": width,
        "n_networks": n_networks,
        "n_points": n_points,
        "n_atoms": n_atoms,
    }
    axes = {}
    units = {k: "probability per decade of lambda" for k in data if k.endswith("per_decade")}
    return save_figure(fig, out_dir, "xiao2018_fig_spectra", data, params=params, axes=axes, units=units)


# --- infinite-width kernel regression (Lee et al. 2019) beside 6 xi_c: figures/_kernel_regression.py ---


@figure(paper=PAPER, figure="not in the paper (Fig. 2 style, Lee et al. 2019 kernels)", honours_backend=False)
def fig_kernel_regression(out_dir, *, size, backend, seed):
    """Test accuracy of NNGP / NTK regression of erf networks on the digits over (sigma_w2, depth), with 6 xi_c.

    Notes
    -----
    Exact infinite-width predictors (:mod:`meanfield.kernel_regression`: the NNGP posterior mean and
    the converged NTK prediction, Lee et al. 2019, eq. 16) on the kernels of
    :func:`meanfield.kernels.dense_kernels`, in place of the trained networks of Fig. 2: the accuracy
    drops to chance beyond a few xi_c away from criticality and persists at the critical sigma_w2.
    ``seed`` draws the train/test split.
    """
    res = _kernel_regression.accuracies(size, seed)
    fig = _kernel_regression.draw(res, PAPER, fig_kernel_regression.figure)
    K = _kernel_regression
    params = {
        "activation": K.ACTIVATION,
        "sigma_b2": K.SIGMA_B2,
        "diag_reg": K.DIAG_REG,
        "input_scale": K.INPUT_SCALE,
        "n_train": res["n_train"],
        "n_test": res["n_test"],
        "critical_sigma_w2": res["critical_sigma_w2"],
        "data": "sklearn digits 8x8, standardised",
    }
    data = {k: res[k] for k in ("sigma_w2", "depth", "accuracy_nngp", "accuracy_ntk", "six_xi_c")}
    return save_figure(
        fig,
        out_dir,
        "xiao2018_fig_kernel_regression",
        data,
        params=params,
        axes={"accuracy_nngp": ["sigma_w2", "depth"], "accuracy_ntk": ["sigma_w2", "depth"]},
        units={"depth": "layers", "six_xi_c": "layers", "accuracy_nngp": "fraction", "accuracy_ntk": "fraction"},
    )
