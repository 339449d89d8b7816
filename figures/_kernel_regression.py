"""NNGP / NTK kernel regression on the digits against depth and sigma_w2, beside 6 xi_c (private).

The Xiao et al. 2018 / Schoenholz et al. 2017 picture with exact infinite-width predictors (Lee et
al. 2019) in place of trained networks: the test accuracy of the NNGP posterior mean and of the
converged NTK prediction of erf networks over the (sigma_w2, depth) plane, with the depth scale
6 xi_c of the correlation map overlaid. Away from criticality the kernel forgets the inputs'
correlations beyond a few xi_c (they relax to c* like exp(-l / xi_c) until they fall below the
ridge ``DIAG_REG``) and the accuracy drops to chance; at the critical sigma_w2 (xi_c = inf) it
persists to any depth. Registered as ``xiao2018.fig_kernel_regression``.
"""

from __future__ import annotations

import numpy as np

from meanfield import dense, kernel_regression
from meanfield.data import load_digits

from ._common import by_size, plt, progress, title

ACTIVATION = "erf"
SIGMA_B2 = 0.05
#: Ridge of both solves, relative to the mean diagonal of the train/train kernel.
DIAG_REG = 1e-4
#: Inputs are the standardised digits divided by this (unit-variance pixels give q^1 ~ sigma_w2).
INPUT_SCALE = 8.0


def sizes(size):
    """(n_train, n_test, sigma_w2 grid, depths) of a figure size."""
    n_train = by_size(size, smoke=120, default=400, full=1000)
    n_test = by_size(size, smoke=120, default=300, full=797)
    n_sw = by_size(size, smoke=5, default=15, full=30)
    n_depth = by_size(size, smoke=7, default=10, full=14)
    crit = dense.critical_sigma_w2(ACTIVATION, SIGMA_B2)
    sw = np.geomspace(0.25, 5.0, n_sw)
    sw[np.argmin(np.abs(np.log(sw / crit)))] = crit  # the critical point on the grid
    depths = tuple(
        int(d) for d in np.unique(np.round(np.geomspace(1, by_size(size, smoke=256, default=512, full=2048), n_depth)))
    )
    return n_train, n_test, sw, depths, crit


def accuracies(size, seed):
    """Test accuracies ``(nngp, ntk)`` of shape (n_sigma_w2, n_depths), the grid and 6 xi_c."""
    n_train, n_test, sw, depths, crit = sizes(size)
    ds = load_digits(standardized=True)
    perm = np.random.default_rng(seed).permutation(ds.y.size)
    tr, te = perm[:n_train], perm[n_train : n_train + n_test]
    x = ds.x / INPUT_SCALE
    y = np.eye(10)[ds.y[tr]] - 0.1  # centred one-hot targets
    acc_nngp = np.empty((sw.size, len(depths)))
    acc_ntk = np.empty_like(acc_nngp)
    six_xi = np.empty(sw.size)
    for k, s in enumerate(progress(sw, desc="kernel regression: sigma_w2")):
        p = kernel_regression.kernel_regression(x[tr], y, x[te], ACTIVATION, s, SIGMA_B2, depths, diag_reg=DIAG_REG)
        acc_nngp[k] = (p.nngp.argmax(-1) == ds.y[te]).mean(-1)
        acc_ntk[k] = (p.ntk.argmax(-1) == ds.y[te]).mean(-1)
        six_xi[k] = 6.0 * dense.fixed_point(ACTIVATION, s, SIGMA_B2).xi_c
    return {
        "sigma_w2": sw,
        "depth": np.array(depths),
        "accuracy_nngp": acc_nngp,
        "accuracy_ntk": acc_ntk,
        "six_xi_c": six_xi,
        "critical_sigma_w2": crit,
        "n_train": n_train,
        "n_test": n_test,
    }


def draw(res, paper, figure_name):
    sw, depths = res["sigma_w2"], res["depth"]
    fig, axes = plt.subplots(1, 2, figsize=(9.6, 4.0), layout="constrained", sharey=False)
    for ax, key, name in zip(
        axes, ("accuracy_nngp", "accuracy_ntk"), ("NNGP posterior mean", "NTK, trained to convergence")
    ):
        mesh = ax.pcolormesh(sw, depths, res[key].T, shading="nearest", cmap="viridis", vmin=0.0, vmax=1.0)
        finite = np.isfinite(res["six_xi_c"])
        ax.plot(sw[finite], res["six_xi_c"][finite], "w--", lw=1.5, label=r"$6\,\xi_c$")
        ax.axvline(res["critical_sigma_w2"], color="w", lw=0.7, ls=":", label=r"critical $\sigma_w^2$")
        ax.set_xscale("log")
        ax.set_xticks([0.25, 0.5, 1, 2, 4], ["0.25", "0.5", "1", "2", "4"])
        ax.xaxis.set_minor_formatter(plt.NullFormatter())
        ax.set_yscale("log")
        ax.set_ylim(depths[0] * 0.8, depths[-1] * 1.25)
        ax.set_xlabel(r"weight variance $\sigma_w^2$")
        ax.set_ylabel("depth (hidden layers)")
        ax.set_title(name, fontsize=9)
        ax.legend(fontsize=7, loc="lower left")
    fig.colorbar(mesh, ax=axes, label="test accuracy (10 classes)")
    title(
        fig,
        paper,
        figure_name,
        f"{ACTIVATION} kernel regression on the digits against depth and $\\sigma_w^2$",
        f"$\\sigma_b^2$ = {SIGMA_B2}, {res['n_train']} train / {res['n_test']} test, ridge {DIAG_REG}",
    )
    return fig
