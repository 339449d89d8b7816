"""Figures of Xiao et al. (2018), seed 003: the dense mean-field background (App. B, Fig. S1).

- ``fig_s1``: order-to-chaos phase diagram of tanh networks: q* in colour over the
  (sigma_w2, sigma_b2) plane, the critical line chi_1 = 1 (seed 003 Fig. S1; Poole et al. 2016 Fig. 2).
- ``fig_qc_maps``: iterated q-map and c-map of tanh networks with Monte-Carlo points from
  finite random networks (Poole et al. 2016 Figs. 1-2 style).
- ``fig_depth_scales``: depth scale xi_c against sigma_w2 for several sigma_b2, diverging at the
  edge of chaos (Schoenholz et al. 2017 Fig. 1 style).
"""

from __future__ import annotations

import numpy as np

from meanfield import dense
from meanfield.data import gaussian_inputs
from validation.networks import simulate_dense

from ._common import plt, progress, save_figure

__all__ = ["FIGURES", "fig_depth_scales", "fig_qc_maps", "fig_s1"]


def fig_s1(out_dir, full=False, backend="numpy", seed=0):
    """Phase diagram of tanh: q* (colour) and the critical line chi_1 = 1."""
    n_w, n_b = (100, 100) if full else (48, 32)
    sw = np.linspace(0.5, 4.0, n_w)
    sb = np.linspace(0.0, 0.3, n_b)
    pd = dense.phase_diagram("tanh", sw, sb)
    sb_line = np.linspace(0.0, 0.3, 16)
    sw_line = np.array([dense.critical_sigma_w2("tanh", b) for b in progress(sb_line, desc="critical line")])
    fig, ax = plt.subplots(figsize=(5.5, 4.2))
    mesh = ax.pcolormesh(sw, sb, pd.q_star.T, shading="auto", cmap="viridis")
    fig.colorbar(mesh, ax=ax, label="$q^*$")
    ax.contour(sw, sb, pd.chi_1.T, levels=[1.0], colors="w", linestyles="--")
    ax.plot(sw_line, sb_line, "r.", label=r"$\chi_1 = 1$ (root finder)")
    ax.text(1.0, 0.22, "ordered", color="w")
    ax.text(3.0, 0.05, "chaotic", color="w")
    ax.set_xlabel(r"$\sigma_w^2$")
    ax.set_ylabel(r"$\sigma_b^2$")
    ax.set_title("tanh: order-to-chaos phase diagram")
    ax.legend(loc="upper left", fontsize=8)
    data = {"sigma_w2": sw, "sigma_b2": sb, "q_star": pd.q_star, "chi_1": pd.chi_1, "critical_sigma_b2": sb_line, "critical_sigma_w2": sw_line}
    return save_figure(fig, out_dir, "xiao2018_fig_s1", data)


def fig_qc_maps(out_dir, full=False, backend="numpy", seed=0):
    """q^l and c^l of two inputs through tanh layers: theory lines, Monte-Carlo points."""
    width, n_net, depth = (1000, 50, 30) if full else (256, 16, 15)
    sb = 0.05
    points = [(0.8, "ordered"), (float(dense.critical_sigma_w2("tanh", sb)), "critical"), (3.0, "chaotic")]
    x = gaussian_inputs(2, 100, q=1.0, c=0.5, seed=seed + 7)
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    data = {"depth": np.arange(depth + 1), "width": width, "n_networks": n_net, "sigma_b2": sb}
    for k, (sw, label) in enumerate(progress(points, desc="fig_qc_maps")):
        cov0 = dense.input_covariance(x, sw, sb)
        th = dense.propagate(cov0, "tanh", sw, sb, depth)
        sim = simulate_dense(x, "tanh", sw, sb, depth, width, n_net, backend=backend, seed=seed + k)
        q_mc = sim.cov[:, :, 0, 0].mean(0)
        c_mc = (sim.cov[:, :, 0, 1] / np.sqrt(sim.cov[:, :, 0, 0] * sim.cov[:, :, 1, 1])).mean(0)
        c_th = th[:, 0, 1] / np.sqrt(th[:, 0, 0] * th[:, 1, 1])
        line = axes[0].plot(th[:, 0, 0], label=f"{label} ($\\sigma_w^2$={sw:.2f})")[0]
        axes[0].plot(q_mc, "o", color=line.get_color(), ms=3)
        axes[1].plot(c_th, color=line.get_color())
        axes[1].plot(c_mc, "o", color=line.get_color(), ms=3)
        data[label] = {"sigma_w2": sw, "q_theory": th[:, 0, 0], "q_mc": q_mc, "c_theory": c_th, "c_mc": c_mc}
    axes[0].set_xlabel("layer $l$")
    axes[0].set_ylabel("$q^l$")
    axes[1].set_xlabel("layer $l$")
    axes[1].set_ylabel("$c^l$")
    axes[0].legend(fontsize=7)
    fig.suptitle(f"tanh, $\\sigma_b^2$={sb}: lines = mean field, points = {n_net} networks of width {width}")
    return save_figure(fig, out_dir, "xiao2018_fig_qc_maps", data)


def fig_depth_scales(out_dir, full=False, backend="numpy", seed=0):
    """xi_c versus sigma_w2 for tanh at several sigma_b2: divergence at the edge of chaos."""
    sw = np.linspace(0.5, 4.0, 400 if full else 120)
    sbs = np.array([0.01, 0.05, 0.1, 0.3])
    pd = dense.phase_diagram("tanh", sw, sbs)
    fig, ax = plt.subplots(figsize=(5, 3.6))
    for j, b in enumerate(sbs):
        ax.semilogy(sw, pd.xi_c[:, j], label=f"$\\sigma_b^2$={b}")
    ax.set_xlabel(r"$\sigma_w^2$")
    ax.set_ylabel(r"$\xi_c$")
    ax.set_title(r"tanh depth scale $\xi_c = -1/\log\chi_{c^*}$")
    ax.legend(fontsize=8)
    return save_figure(fig, out_dir, "xiao2018_fig_depth_scales", {"sigma_w2": sw, "sigma_b2": sbs, "xi_c": pd.xi_c})


FIGURES = {"fig_s1": fig_s1, "fig_qc_maps": fig_qc_maps, "fig_depth_scales": fig_depth_scales}
