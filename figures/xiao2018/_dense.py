"""Xiao et al. 2018, App. B: the dense mean-field background (Fig. S1, q- and c-maps, depth scales)."""

from __future__ import annotations

import numpy as np

from meanfield import dense
from meanfield.data import gaussian_inputs
from meanfield.simulate import simulate_dense

from .._common import by_size, colors, figure, plt, progress, rng_kwargs, save_figure, streams, title
from ._shared import PAPER


@figure(paper=PAPER, figure="Fig. S1", honours_backend=False)
def fig_s1(out_dir, *, size, backend, seed):
    """Phase diagram of tanh networks: q* (colour) over (sigma_w2, sigma_b2) and the critical line chi_1 = 1.

    Notes
    -----
    Xiao et al. 2018 Fig. S1 (reproduced there from Pennington et al. 2017): the fixed point q* of the
    q-map (eq. 2.6) and chi_1 (eq. 2.7) on a grid, and the critical line found by a root finder.
    Theory only (no simulation, no randomness).
    """
    n_w, n_b = by_size(size, smoke=(12, 8), default=(48, 32), full=(100, 100))
    n_line = by_size(size, smoke=4, default=16, full=16)
    sw = np.linspace(0.5, 4.0, n_w)
    sb = np.linspace(0.0, 0.3, n_b)
    pd = dense.phase_diagram("tanh", sw, sb)
    sb_line = np.linspace(0.0, 0.3, n_line)
    sw_line = np.array([dense.critical_sigma_w2("tanh", b) for b in progress(sb_line, desc="critical line")])
    fig, ax = plt.subplots(figsize=(5.6, 4.4), layout="constrained")
    mesh = ax.pcolormesh(sw, sb, pd.q_star.T, shading="auto", cmap="viridis")
    fig.colorbar(mesh, ax=ax, label=r"fixed point $q^*$ (pre-activation variance)")
    ax.contour(sw, sb, pd.chi_1.T, levels=[1.0], colors="w", linestyles="--")
    ax.plot([], [], "w--", label=r"$\chi_1 = 1$ (contour of the grid)")
    ax.plot(sw_line, sb_line, "r.", label=r"$\chi_1 = 1$ (root finder)")
    ax.text(0.9, 0.22, "ordered\n" r"($\chi_1 < 1$)", color="w", fontsize=9)
    ax.text(2.9, 0.04, "chaotic\n" r"($\chi_1 > 1$)", color="k", fontsize=9)
    ax.set_xlabel(r"weight variance $\sigma_w^2$")
    ax.set_ylabel(r"bias variance $\sigma_b^2$")
    ax.legend(loc="upper left", fontsize=7, facecolor="0.5", labelcolor="w", framealpha=0.6)
    title(
        fig,
        PAPER,
        "Fig. S1",
        "tanh order-to-chaos phase diagram",
        f"grid {n_w} x {n_b} ($\\sigma_w^2$ x $\\sigma_b^2$); {n_line} root-finder points",
    )
    data = {
        "sigma_w2": sw,
        "sigma_b2": sb,
        "q_star": pd.q_star,
        "chi_1": pd.chi_1,
        "critical_sigma_b2": sb_line,
        "critical_sigma_w2": sw_line,
    }
    params = {
        "activation": "tanh",
        "grid": [n_w, n_b],
        "sigma_w2_range": [0.5, 4.0],
        "sigma_b2_range": [0.0, 0.3],
        "critical_line_points": n_line,
    }
    axes = {"q_star": ["sigma_w2", "sigma_b2"], "chi_1": ["sigma_w2", "sigma_b2"]}
    units = {"q_star": "pre-activation variance (dimensionless)", "chi_1": "dimensionless"}
    return save_figure(fig, out_dir, "xiao2018_fig_s1", data, params=params, axes=axes, units=units)


@figure(paper=PAPER, figure="not in the paper (Poole et al. 2016 style)", honours_backend=True)
def fig_qc_maps(out_dir, *, size, backend, seed):
    """q^l and c^l of two inputs through tanh layers: theory lines, Monte-Carlo points +- standard error.

    Notes
    -----
    The dense background of Xiao et al. 2018 (eqs. 2.2-2.6 for a fully-connected network): the q-map and the
    c-map iterated from the inputs' empirical covariance, against the per-layer covariances of
    random finite networks (:func:`meanfield.simulate.simulate_dense`); error bars are
    one standard error over networks.
    """
    width, n_net, depth = by_size(size, smoke=(16, 4, 4), default=(256, 16, 15), full=(1000, 50, 30))
    sb, dim = 0.05, 100
    points = [(0.8, "ordered"), (float(dense.critical_sigma_w2("tanh", sb)), "critical"), (3.0, "chaotic")]
    rng_x, *rng_nets = streams(seed, 1 + len(points))
    x = gaussian_inputs(2, dim, q=1.0, c=0.5, rng=rng_x)
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.8), layout="constrained")
    layers = np.arange(depth + 1)
    data = {"layer": layers}
    for (sw, label), rng, col in zip(
        progress(points, desc="fig_qc_maps"), rng_nets, ("tab:blue", "tab:purple", "tab:red")
    ):
        cov0 = dense.input_covariance(x, sw, sb)
        th = dense.propagate(cov0, "tanh", sw, sb, depth)
        sim = simulate_dense(x, "tanh", sw, sb, depth, width, n_net, backend=backend, **rng_kwargs(simulate_dense, rng))
        q_net = sim.cov[:, :, 0, 0]
        c_net = sim.cov[:, :, 0, 1] / np.sqrt(sim.cov[:, :, 0, 0] * sim.cov[:, :, 1, 1])
        q_mc, q_se = q_net.mean(0), q_net.std(0, ddof=1) / np.sqrt(n_net)
        c_mc, c_se = c_net.mean(0), c_net.std(0, ddof=1) / np.sqrt(n_net)
        c_th = th[:, 0, 1] / np.sqrt(th[:, 0, 0] * th[:, 1, 1])
        axes[0].plot(layers, th[:, 0, 0], color=col, label=f"{label}: $\\sigma_w^2$ = {sw:.2f}")
        axes[0].errorbar(layers, q_mc, yerr=q_se, fmt="o", ms=3, color=col, capsize=1.5, elinewidth=0.8)
        axes[1].plot(layers, c_th, color=col)
        axes[1].errorbar(layers, c_mc, yerr=c_se, fmt="o", ms=3, color=col, capsize=1.5, elinewidth=0.8)
        data[label] = {
            "sigma_w2": sw,
            "q_theory": th[:, 0, 0],
            "q_mc": q_mc,
            "q_mc_stderr": q_se,
            "c_theory": c_th,
            "c_mc": c_mc,
            "c_mc_stderr": c_se,
        }
    axes[0].plot([], [], "k-", label="mean field (lines)")
    axes[0].errorbar([], [], yerr=[], fmt="o", ms=3, color="k", label="networks: mean $\\pm$ s.e.")
    axes[0].set_xlabel("layer $l$")
    axes[0].set_ylabel("$q^l$ (pre-activation variance)")
    axes[1].set_xlabel("layer $l$")
    axes[1].set_ylabel("$c^l$ (correlation of the two inputs)")
    axes[0].legend(fontsize=7)
    title(
        fig,
        PAPER,
        fig_qc_maps.figure,
        "tanh q-map and c-map",
        f"$\\sigma_b^2$ = {sb}; {n_net} networks of width {width}, depth {depth}; two Gaussian inputs "
        f"of dimension {dim}, $q^0$ = 1, $c^0$ = 0.5 (before the first layer)",
    )
    params = {
        "activation": "tanh",
        "sigma_b2": sb,
        "sigma_w2": [p[0] for p in points],
        "phases": [p[1] for p in points],
        "width": width,
        "n_networks": n_net,
        "depth": depth,
        "input_dim": dim,
        "input_q": 1.0,
        "input_c": 0.5,
    }
    units = {
        "q_theory": "pre-activation variance",
        "q_mc": "pre-activation variance",
        "c_theory": "correlation (dimensionless)",
        "c_mc": "correlation (dimensionless)",
        "q_mc_stderr": "standard error of q_mc over networks",
        "c_mc_stderr": "standard error of c_mc over networks",
    }
    return save_figure(
        fig,
        out_dir,
        "xiao2018_fig_qc_maps",
        data,
        params=params,
        units=units,
        notes="per phase: arrays indexed by layer 0..depth",
    )


@figure(paper=PAPER, figure="not in the paper (Schoenholz et al. 2017 style)", honours_backend=False)
def fig_depth_scales(out_dir, *, size, backend, seed):
    """xi_c versus sigma_w2 for tanh at several sigma_b2: divergence at the edge of chaos.

    Notes
    -----
    The depth scale xi_c = -1 / log chi_c* of the correlation (Xiao et al. 2018 eq. 2.11 in its dense form,
    Schoenholz et al. 2017). Theory only.
    """
    n_w = by_size(size, smoke=24, default=120, full=400)
    sw = np.linspace(0.5, 4.0, n_w)
    sbs = np.array([0.01, 0.05, 0.1, 0.3])
    pd = dense.phase_diagram("tanh", sw, sbs)
    fig, ax = plt.subplots(figsize=(5.4, 4.0), layout="constrained")
    for j, (b, col) in enumerate(zip(sbs, colors(len(sbs)))):
        ax.semilogy(sw, pd.xi_c[:, j], color=col, label=f"$\\sigma_b^2$ = {b}")
        ax.axvline(dense.critical_sigma_w2("tanh", b), color=col, lw=0.6, ls=":")
    ax.plot([], [], "k:", lw=0.6, label=r"critical $\sigma_w^2$ ($\chi_1 = 1$)")
    ax.set_xlabel(r"weight variance $\sigma_w^2$")
    ax.set_ylabel(r"depth scale $\xi_c$ (layers)")
    ax.legend(fontsize=7)
    title(
        fig,
        PAPER,
        fig_depth_scales.figure,
        r"tanh depth scale $\xi_c = -1/\log\chi_{c^*}$",
        f"{n_w} values of $\\sigma_w^2$ in [0.5, 4]; theory only",
    )
    params = {"activation": "tanh", "sigma_b2": sbs, "n_sigma_w2": n_w, "sigma_w2_range": [0.5, 4.0]}
    return save_figure(
        fig,
        out_dir,
        "xiao2018_fig_depth_scales",
        {"sigma_w2": sw, "sigma_b2": sbs, "xi_c": pd.xi_c},
        params=params,
        axes={"xi_c": ["sigma_w2", "sigma_b2"]},
        units={"xi_c": "layers"},
    )
