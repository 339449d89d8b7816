"""Figures of Xiao et al. (2018), Xiao et al. 2018: the dense mean-field background and the CNN figures.

Dense background (App. B):

- ``fig_s1``: order-to-chaos phase diagram of tanh networks: q* in colour over the
  (sigma_w2, sigma_b2) plane, the critical line chi_1 = 1 (Xiao et al. 2018 Fig. S1; Poole et al. 2016 Fig. 2).
- ``fig_qc_maps`` (not a figure of Xiao et al. 2018): iterated q-map and c-map of tanh networks with
  Monte-Carlo points (mean +- standard error over random networks) in the style of Poole et al. 2016.
- ``fig_depth_scales`` (not a figure of Xiao et al. 2018): depth scale xi_c against sigma_w2 for several
  sigma_b2, diverging at the edge of chaos (Schoenholz et al. 2017 Fig. 1 style).

CNN figures (Xiao et al. 2018, :mod:`meanfield.conv`):

- ``fig_2_theory``: the trainability boundary 6 xi_c over the (sigma_w2, depth) plane for tanh at
  sigma_b2 = 2e-5 (the curve Fig. 2 overlays on its MNIST heat maps; the training runs are not
  reproduced).
- ``fig_4b``: singular values of the averaging operator A_v for the GS0 ... GS4 variance vectors
  (8 x 8 images, 3 x 3 kernels), in descending order.
- ``fig_s2``: per-layer weight-gradient norms of a random tanh CNN (L = 100, n = 10, kernel 3,
  sigma_b2 = 0.05) relative to the last layer, sigma_w2 from 1.0 to 4.25, with the mean-field
  prediction (dashed green).
- ``fig_s3``: singular values of a block-circulant convolution matrix with i.i.d. weights (n = 26,
  2k + 1 = 5, growing c) against a dense nc x nc Gaussian matrix and the Marchenko-Pastur
  (quarter-circle) law.
- ``fig_s4``: Fourier amplitudes of a perturbation of the fixed point through random erf CNNs
  (Sec. F) against the linearised prediction (dashed green) and the exact mean-field map.

Every figure takes ``size="smoke" | "default" | "full"`` (see :mod:`meanfield.figures._common`).
Variances are ``sigma_w2`` (``W ~ N(0, sigma_w2 / fan_in)``) and ``sigma_b2`` throughout; all
quantities are dimensionless (variances of pre-activations in units of the input variance).
"""

from __future__ import annotations

import numpy as np

from meanfield import conv, dense, parallel
from meanfield.data import gaussian_inputs
from meanfield.init import conv_singular_values
from meanfield.simulate import simulate_conv, simulate_dense, simulate_fig_s4

from . import _kernel_regression, _training
from ._common import (
    by_size,
    colors,
    figure,
    mark_floor,
    plot_log_floor,
    plt,
    progress,
    registered,
    rng_kwargs,
    save_figure,
    streams,
    title,
)

__all__ = [
    "FIGURES",
    "PAPER",
    "fig_1",
    "fig_2",
    "fig_2_theory",
    "fig_3",
    "fig_4a",
    "fig_4b",
    "fig_5",
    "fig_depth_scales",
    "fig_kernel_regression",
    "fig_qc_maps",
    "fig_s1",
    "fig_s2",
    "fig_s3",
    "fig_s4",
    "fig_spectra",
]

PAPER = "Xiao et al. 2018"

#: The figures of this module, ``{name: function}`` (read-only; filled by their ``@figure`` declarations).
FIGURES = registered(__name__)


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
    return save_figure(
        fig,
        out_dir,
        "xiao2018_fig_s1",
        data,
        figure=fig_s1,
        size=size,
        backend=backend,
        rng=seed,
        params=params,
        axes=axes,
        units=units,
    )


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
        figure=fig_qc_maps,
        size=size,
        backend=backend,
        rng=seed,
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
        figure=fig_depth_scales,
        size=size,
        backend=backend,
        rng=seed,
        params=params,
        axes={"xi_c": ["sigma_w2", "sigma_b2"]},
        units={"xi_c": "layers"},
    )


# --- CNN figures --------------------------------------------------------------------------------


@figure(paper=PAPER, figure="Fig. 2 (theory curve only)", honours_backend=False)
def fig_2_theory(out_dir, *, size, backend, seed):
    """6 xi_c over (sigma_w2, depth) for tanh at sigma_b2 = 2e-5: deeper networks do not train (Fig. 2).

    Notes
    -----
    Xiao et al. 2018 Fig. 2 overlays 6 xi_c (white dashed) on MNIST training accuracy; this figure draws
    the curve and the critical point only (the training runs are not reproduced). Theory only.
    """
    sb = 2e-5
    n_w = by_size(size, smoke=40, default=240, full=800)
    sw = np.linspace(0.05, 4.0, n_w)
    pd = dense.phase_diagram("tanh", sw, [sb])
    xi = pd.xi_c[:, 0]
    crit = float(dense.critical_sigma_w2("tanh", sb))
    fig, ax = plt.subplots(figsize=(5.4, 4.0), layout="constrained")
    bound = np.minimum(6 * xi, 1e4)
    ax.fill_between(sw, 10, np.clip(bound, 10, 600), color="0.85", label=r"$L < 6\xi_c$ (trainable)")
    ax.plot(sw, 6 * xi, "k--", lw=1, label=r"$6\xi_c$")
    ax.axvline(crit, color="r", lw=0.8, label=rf"$\chi_1 = 1$ ($\sigma_w^2$ = {crit:.3f})")
    ax.set_ylim(10, 600)
    ax.set_xlabel(r"weight variance $\sigma_w^2$")
    ax.set_ylabel("depth $L$ (layers)")
    ax.legend(fontsize=7, loc="upper left")
    title(
        fig,
        PAPER,
        fig_2_theory.figure,
        r"trainable depth $6\xi_c$ of tanh networks",
        f"$\\sigma_b^2 = 2\\times10^{{-5}}$; {n_w} values of $\\sigma_w^2$; MNIST training not reproduced",
    )
    data = {"sigma_w2": sw, "xi_c": xi, "six_xi_c": 6 * xi, "critical_sigma_w2": crit}
    params = {"activation": "tanh", "sigma_b2": sb, "n_sigma_w2": n_w, "sigma_w2_range": [0.05, 4.0]}
    return save_figure(
        fig,
        out_dir,
        "xiao2018_fig_2_theory",
        data,
        figure=fig_2_theory,
        size=size,
        backend=backend,
        rng=seed,
        params=params,
        units={"xi_c": "layers", "six_xi_c": "layers"},
    )


def _red_to_black(n):
    """``n`` colours from red (GS0, delta) to black (GS4, uniform), as in Xiao et al. 2018 Fig. 4; none near white."""
    t = np.linspace(0.0, 1.0, n)[:, None]
    return [tuple(c) for c in (1 - t) * np.array([0.85, 0.05, 0.05]) + t * np.array([0.0, 0.0, 0.0])]


@figure(paper=PAPER, figure="Fig. 4b", honours_backend=False)
def fig_4b(out_dir, *, size, backend, seed):
    """Singular values of A_v (descending; each has 64 copies on 64 x 64 covariances) for GS0 to GS4.

    Notes
    -----
    Xiao et al. 2018 eq. 2.13 and Sec. 3.3: the GS_i interpolate between the delta (GS0) and the uniform
    (GS4) variance vector of a 3 x 3 kernel; the singular values are those of the averaging operator
    on 8 x 8 images. Exact linear algebra, the same at every size.
    """
    family = conv.gs_family((3, 3), 5)
    svs = np.array([conv.averaging_singular_values(v, (8, 8)) for v in family])
    fig, ax = plt.subplots(figsize=(5.4, 4.0), layout="constrained")
    for i, (s, col, mk) in enumerate(zip(svs, _red_to_black(len(family)), "osD^v")):
        ax.plot(
            np.arange(1, s.size + 1),
            s,
            "-",
            marker=mk,
            ms=2.5,
            lw=1,
            color=col,
            label=f"GS{i}" + (" (delta)" if i == 0 else " (uniform)" if i == len(family) - 1 else ""),
        )
    ax.set_xlabel("index $i$ of the singular value (descending)")
    ax.set_ylabel(r"singular value $s_i$ of $\mathcal{A}_v\star$")
    ax.legend(fontsize=8)
    title(
        fig,
        PAPER,
        "Fig. 4b",
        r"singular values of the averaging operator $\mathcal{A}_v\star$",
        "8 x 8 images, 3 x 3 kernels; variance vectors GS0 (delta) to GS4 (uniform); each value has 64 copies",
    )
    data = {"v": np.array(family), "singular_values": svs}
    params = {
        "image_shape": [8, 8],
        "kernel_shape": [3, 3],
        "family_size": len(family),
        "family": "GS_i = (1 - t_i) delta + t_i uniform, t_i = i / 4",
    }
    axes = {
        "v": ["variance vector (GS0..GS4)", "kernel row", "kernel column"],
        "singular_values": ["variance vector (GS0..GS4)", "index (descending)"],
    }
    return save_figure(
        fig,
        out_dir,
        "xiao2018_fig_4b",
        data,
        figure=fig_4b,
        size=size,
        backend=backend,
        rng=seed,
        params=params,
        axes=axes,
        units={"v": "fraction of sigma_w2 per kernel offset (sums to 1)"},
    )


@figure(paper=PAPER, figure="Fig. S2", honours_backend=True)
def fig_s2(out_dir, *, size, backend, seed):
    """Weight-gradient norms ``|dE/dW^l|^2 / |dE/dW^L|^2`` of random tanh CNNs across the phase transition.

    Notes
    -----
    Xiao et al. 2018 Fig. S2 and eqs. 2.15-2.16 (backward covariance map); the Monte-Carlo curves average
    the per-layer squared weight gradients over random CNNs
    (:func:`meanfield.simulate.simulate_conv`). The input covariance is a random
    spatial covariance normalised to unit mean variance.
    """
    n, sb, v = 10, 0.05, np.full(3, 1 / 3)
    depth = by_size(size, smoke=12, default=100, full=100)
    channels, n_net = by_size(size, smoke=(8, 2), default=(48, 6), full=(2000, 4))
    sws = np.linspace(1.0, 4.25, by_size(size, smoke=3, default=5, full=8))
    rng_cov, *rng_nets = streams(seed, 1 + sws.size)
    a = rng_cov.standard_normal((n, n)) + 1.0
    cov0 = a @ a.T / n + 0.3 * np.eye(n)
    cov0 /= np.mean(np.diag(cov0))
    fig, ax = plt.subplots(figsize=(5.6, 4.3), layout="constrained")
    layers = np.arange(1, depth + 1)
    mc_all, th_all = [], []
    # one task per sigma_w2 (meanfield.parallel: in-process by default, on processes / Dask under
    # --workers / --scheduler); each draws from its own stream, so the numbers do not depend on where it ran
    points = parallel.map_chunks(
        _fig_s2_point,
        [(cov0, float(sw), sb, v, depth, channels, n_net, backend, rng) for sw, rng in zip(sws, rng_nets)],
    )
    for sw, col, (th, mc) in zip(progress(sws, desc="fig_s2"), colors(sws.size), points):
        ax.semilogy(layers, mc, color=col, lw=1.3, label=f"$\\sigma_w^2$ = {sw:.2f}")
        ax.semilogy(layers, th / th[-1], "--", color="tab:green", lw=1)
        mc_all.append(mc)
        th_all.append(th / th[-1])
    ax.plot([], [], "--", color="tab:green", label="mean field")
    ax.set_xlabel(r"layer $\ell$")
    ax.set_ylabel(r"$\|\nabla_{W^\ell}\|_2^2 \,/\, \|\nabla_{W^L}\|_2^2$")
    ax.legend(fontsize=7)
    title(
        fig,
        PAPER,
        "Fig. S2",
        "vanishing / exploding weight gradients in random tanh CNNs",
        f"L = {depth}, n = {n}, 2k+1 = 3 (uniform v), c = {channels}, $\\sigma_b^2$ = {sb}; "
        f"mean of {n_net} networks (solid) vs mean field (dashed)",
    )
    data = {
        "layer": layers,
        "sigma_w2": sws,
        "monte_carlo": np.array(mc_all),
        "theory": np.array(th_all),
        "input_covariance": cov0,
    }
    params = {
        "activation": "tanh",
        "depth": depth,
        "n": n,
        "kernel_size": 3,
        "v": v,
        "sigma_b2": sb,
        "sigma_w2": sws,
        "channels": channels,
        "n_networks": n_net,
    }
    axes = {
        "monte_carlo": ["sigma_w2", "layer"],
        "theory": ["sigma_w2", "layer"],
        "input_covariance": ["position", "position"],
    }
    units = {
        "monte_carlo": "ratio to the last layer (dimensionless)",
        "theory": "ratio to the last layer (dimensionless)",
    }
    return save_figure(
        fig,
        out_dir,
        "xiao2018_fig_s2",
        data,
        figure=fig_s2,
        size=size,
        backend=backend,
        rng=seed,
        params=params,
        axes=axes,
        units=units,
    )


@figure(paper=PAPER, figure="Fig. S3", honours_backend=False)
def fig_s3(out_dir, *, size, backend, seed):
    """Singular values of block-circulant vs dense i.i.d. Gaussian weight matrices vs Marchenko-Pastur.

    Notes
    -----
    Xiao et al. 2018 Fig. S3 (App. D): one draw per channel count c of a block-circulant nc x nc matrix
    with entries N(0, 1 / (c (2k+1))) and of a dense nc x nc matrix with entries N(0, 1 / (nc)); the
    square Marchenko-Pastur law of the singular values is the quarter circle sqrt(4 - s^2) / pi.
    The block-circulant spectrum comes from :func:`meanfield.init.conv_singular_values`.
    Runs on the CPU (NumPy linear algebra).
    """
    n, width = 26, 5
    cs = by_size(size, smoke=(2, 8), default=(2, 8, 32), full=(2, 8, 32, 128))
    rngs = streams(seed, 2 * len(cs))
    fig, ax = plt.subplots(figsize=(5.6, 4.3), layout="constrained")
    grid = np.linspace(0, 2, 400)
    bins = np.linspace(0, 2.4, 49)
    conv_h, dense_h, conv_s, dense_s = [], [], [], []
    for j, (c, col) in enumerate(zip(progress(cs, desc="fig_s3"), colors(len(cs)))):
        kernel = rngs[2 * j].standard_normal((width, c, c)) / np.sqrt(c * width)
        s_conv = conv_singular_values(kernel, n)
        s_dense = np.linalg.svd(rngs[2 * j + 1].standard_normal((n * c, n * c)) / np.sqrt(n * c), compute_uv=False)
        hist, _ = np.histogram(s_conv, bins=bins, density=True)
        hd, _ = np.histogram(s_dense, bins=bins, density=True)
        ax.stairs(hist, bins, color=col, lw=1.3, label=f"block-circulant, c = {c}")
        ax.stairs(hd, bins, color="tab:green", ls="--", lw=0.8)
        conv_h.append(hist)
        dense_h.append(hd)
        conv_s.append(s_conv)
        dense_s.append(np.sort(s_dense))
    mp = np.sqrt(np.clip(4 - grid**2, 0, None)) / np.pi  # square Marchenko-Pastur: quarter circle
    ax.plot([], [], color="tab:green", ls="--", lw=0.8, label="dense nc x nc (same c)")
    ax.plot(grid, mp, "k", lw=1.5, label="Marchenko-Pastur (quarter circle)")
    ax.set_xlabel("singular value $s$")
    ax.set_ylabel("probability density of $s$")
    ax.legend(fontsize=7)
    title(
        fig,
        PAPER,
        "Fig. S3",
        "singular values of i.i.d. convolution vs dense weight matrices",
        f"n = {n} positions, 2k+1 = {width}, channels c = {', '.join(map(str, cs))}; one draw each",
    )
    data = {
        "channels": np.array(cs),
        "bins": bins,
        "conv_density": np.array(conv_h),
        "dense_density": np.array(dense_h),
        "conv_singular_values": conv_s,
        "dense_singular_values": dense_s,
        "mp_grid": grid,
        "mp_density": mp,
    }
    params = {
        "n": n,
        "kernel_size": width,
        "channels": list(cs),
        "conv_entry_variance": "1 / (c (2k+1))",
        "dense_entry_variance": "1 / (n c)",
    }
    axes = {
        "conv_density": ["channels c", "bin"],
        "dense_density": ["channels c", "bin"],
        "conv_singular_values": ["channels c", "singular value (ascending; n*c of them)"],
        "dense_singular_values": ["channels c", "singular value (ascending; n*c of them)"],
    }
    units = {
        "conv_density": "probability density",
        "dense_density": "probability density",
        "mp_density": "probability density",
    }
    return save_figure(
        fig,
        out_dir,
        "xiao2018_fig_s3",
        data,
        figure=fig_s3,
        size=size,
        backend=backend,
        rng=seed,
        params=params,
        axes=axes,
        units=units,
    )


#: Fig. S4's amplitudes at or below this value are drawn on the axis floor (zeros included).
FIG_S4_FLOOR = 1e-4


@figure(paper=PAPER, figure="Fig. S4", honours_backend=True)
def fig_s4(out_dir, *, size, backend, seed):
    """Absolute Fourier amplitudes of the first cyclic diagonal of eps^l through random erf CNNs (Sec. F).

    Notes
    -----
    Xiao et al. 2018 Fig. S4 and App. F: erf, sigma_w2 = 1.5^2, sigma_b2 = 0.5^2, n = 10,
    v = [0.025, 0.95, 0.025]; eps^0 is zero except its first cyclic diagonal, whose DFT is
    -1/6 [1, r, r^3, r^5, r^4, r^2, r^4, r^5, r^3, r], r = 2/3. Points: absolute mean over networks of each
    mode with one standard error; dashed green: the linearised decay (eq. 2.12); dotted: the exact
    mean-field map. Modes whose mean is at or below :data:`FIG_S4_FLOOR` (or zero) are drawn on the
    floor with a triangle.
    """
    depth = by_size(size, smoke=4, default=20, full=40)
    channels, n_net = by_size(size, smoke=(16, 4), default=(256, 32), full=(1024, 64))
    (rng,) = streams(seed, 1)
    per_net = simulate_fig_s4(depth, channels, n_net, backend=backend, **rng_kwargs(simulate_fig_s4, rng)).real
    modes, se = per_net.mean(0), per_net.std(0, ddof=1) / np.sqrt(n_net)
    exact, lin = conv.fig_s4_theory(depth)
    setup = conv.fig_s4_setup()
    layers = np.arange(depth + 1)
    fig, ax = plt.subplots(figsize=(5.8, 4.4), layout="constrained")
    shown = range(6)
    cols = colors(len(shown), plt.cm.plasma, 0.0, 0.8)  # no green (the theory colour), no near-white
    for m, col in zip(shown, cols):
        plot_log_floor(ax, layers, np.abs(modes[:, m]), FIG_S4_FLOOR, yerr=se[:, m], color=col, ms=3, label=f"mode {m}")
        ax.plot(layers, np.abs(lin[:, m]), "--", color="tab:green", lw=1)
        ax.plot(layers, np.abs(exact[:, m]), ":", color=col, lw=0.9)
    ax.set_yscale("log")
    ax.plot([], [], "--", color="tab:green", label="linearised (eq. 2.12)")
    ax.plot([], [], ":", color="k", label="exact mean-field map")
    mark_floor(ax, FIG_S4_FLOOR, "|mean|")
    ax.set_xlabel("layer $l$")
    ax.set_ylabel(r"$|\tilde\epsilon^l_m|$, Fourier mode $m$ of the first cyclic diagonal")
    ax.legend(fontsize=6, ncol=2)
    title(
        fig,
        PAPER,
        "Fig. S4",
        "multiple depth scales: Fourier modes of a perturbation of $\\Sigma^*$",
        f"erf, $\\sigma_w^2$ = 1.5$^2$, $\\sigma_b^2$ = 0.5$^2$, n = 10, v = [0.025, 0.95, 0.025]; "
        f"{n_net} CNNs with c = {channels}; points: |mean| $\\pm$ s.e.",
    )
    data = {
        "layer": layers,
        "monte_carlo": modes,
        "monte_carlo_stderr": se,
        "linearised": lin.real,
        "exact_map": exact.real,
    }
    params = {
        "activation": setup["activation"],
        "sigma_w2": setup["sigma_w2"],
        "sigma_b2": setup["sigma_b2"],
        "v": setup["v"],
        "n": setup["n"],
        "depth": depth,
        "channels": channels,
        "n_networks": n_net,
        "modes_shown": list(shown),
        "eps0_spectrum": "-1/6 [1, r, r^3, r^5, r^4, r^2, r^4, r^5, r^3, r], r = 2/3",
    }
    axes = {
        name: ["layer", "Fourier mode m"] for name in ("monte_carlo", "monte_carlo_stderr", "linearised", "exact_map")
    }
    units = {
        name: "covariance (same unit as Sigma; signed, the plot shows |value|)"
        for name in ("monte_carlo", "monte_carlo_stderr", "linearised", "exact_map")
    }
    return save_figure(
        fig,
        out_dir,
        "xiao2018_fig_s4",
        data,
        figure=fig_s4,
        size=size,
        backend=backend,
        rng=seed,
        params=params,
        axes=axes,
        units=units,
        notes="monte_carlo: mean over networks of the real part of each mode; the imaginary part is zero "
        "up to rounding (eps is symmetric)",
    )


# --- trained networks: meanfield.validation.trainability runs, drawn by figures/_training.py ---


@figure(paper=PAPER, figure="Fig. 2", honours_backend=False)
def fig_2(out_dir, *, size, backend, seed):
    """Training accuracy over (sigma_w2, depth) of tanh networks at sigma_b2 = 2e-5, with 6 xi_c overlaid.

    Notes
    -----
    Xiao et al. 2018 Fig. 2 and Sec. 3.1: networks train only while ``L < 6 xi_c``. Fully-connected tanh
    networks on the embedded digits (the CNN mean field's zero mode has the dense depth scale);
    the curve is the theory layer of :func:`fig_2_theory` (``dense.phase_diagram``). Sizes: see
    :mod:`meanfield.validation.trainability` (``depth_scale``).
    """
    res = _training.experiment("depth_scale", size, seed)
    p = res["params"]
    sw, depths = res["sigma_w2"], res["depths"]
    acc = res["train_accuracy"].mean(axis=2)
    n_w = by_size(size, smoke=40, default=240, full=800)
    curve_sw = np.linspace(0.05, max(4.0, float(sw.max())), n_w)
    six_xi = 6 * dense.phase_diagram("tanh", curve_sw, [2e-5]).xi_c[:, 0]
    from meanfield.validation.trainability import depth_scale_agreement

    frac, n = depth_scale_agreement(res)
    fig, ax = plt.subplots(figsize=(6.0, 4.4), layout="constrained")
    mesh = ax.pcolormesh(sw, depths, acc, shading="nearest", cmap="viridis", vmin=0, vmax=1)
    fig.colorbar(mesh, ax=ax, label="training accuracy (mean over networks)")
    ax.plot(curve_sw, six_xi, "w--", lw=1.2, label=r"$6\xi_c$ (mean field)")
    ax.set_yscale("log")
    ax.set_ylim(depths.min() / 1.3, depths.max() * 1.3)
    ax.set_xlabel(r"weight variance $\sigma_w^2$")
    ax.set_ylabel("depth $L$ (hidden layers)")
    ax.legend(fontsize=7, loc="upper right", facecolor="0.4", labelcolor="w")
    title(
        fig,
        PAPER,
        fig_2.figure,
        rf"trainability of tanh networks vs $6\xi_c$ (agreement {frac:.0%} of {n} cells)",
        f"dense width {p['width']}, {p['steps']} steps, {p['n_networks']} nets/cell, "
        f"$\\sigma_b^2$=2e-5; {p['dataset'].split(' (')[0]} ({size} size)",
    )
    data = {
        "sigma_w2": sw,
        "depths": depths,
        "train_accuracy": res["train_accuracy"],
        "test_accuracy": res["test_accuracy"],
        "xi_c": res["xi_c"],
        "curve_sigma_w2": curve_sw,
        "curve_six_xi_c": six_xi,
        "agreement": frac,
        "cells_scored": n,
        "seconds": res["seconds"],
    }
    axes = {k: ["depth", "sigma_w2", "network"] for k in ("train_accuracy", "test_accuracy")}
    return save_figure(
        fig,
        out_dir,
        "xiao2018_fig_2",
        data,
        figure=fig_2,
        size=size,
        backend=backend,
        rng=seed,
        params=p,
        axes=axes,
        units={"train_accuracy": "fraction correct", "seconds": "s"},
        notes="trainable = mean training accuracy >= 0.5; cells within a factor 2 of 6 xi_c not scored",
    )


def _deep_cnn_details(res, size):
    p = res["params"]
    return (
        f"L = {p['depth']} layers{' (largest depth in the 6 CPU-min budget)' if size == 'default' else ''}, "
        f"{p['channels']} channels, 3x3 periodic, critical $\\sigma_w^2$={p['sigma_w2']:.4f}, "
        f"{p['steps']} steps, lr {p['lr']:g}, {p['n_networks']} nets each; digits 4x4 ({size} size)"
    )


@figure(paper=PAPER, figure="Fig. 1", honours_backend=False)
def fig_1(out_dir, *, size, backend, seed):
    """Test accuracy over training of critical delta-orthogonal vs Gaussian tanh CNNs of the same depth.

    Notes
    -----
    Xiao et al. 2018 Fig. 1 / Sec. 3.2: delta-orthogonal (Algorithm 2) CNNs of 10,000 layers train; here the
    depth the CPU budget allows (``deep_cnn`` of :mod:`meanfield.validation.trainability`; 10,000
    layers at ``size="full"``).
    """
    res = _training.experiment("deep_cnn", size, seed)
    return _training.curves_figure(
        fig_1,
        out_dir,
        "xiao2018_fig_1",
        res,
        ["delta_orthogonal", "gaussian"],
        ["delta-orthogonal", "Gaussian"],
        size=size,
        seed=seed,
        what="critical delta-orthogonal vs Gaussian tanh CNNs",
        details=_deep_cnn_details(res, size),
    )


@figure(paper=PAPER, figure="Fig. 3", honours_backend=False)
def fig_3(out_dir, *, size, backend, seed):
    """Training and test accuracy curves of the deepest delta-orthogonal tanh CNN (with orthogonal, Algorithm 1).

    Notes
    -----
    Xiao et al. 2018 Fig. 3 shows CIFAR-10 learning curves for depths 32 to 8,192; here one depth (the
    ``deep_cnn`` run shared with :func:`fig_1` and :func:`fig_5`) on the 4 x 4 digits.
    """
    res = _training.experiment("deep_cnn", size, seed)
    return _training.curves_figure(
        fig_3,
        out_dir,
        "xiao2018_fig_3",
        res,
        ["delta_orthogonal", "orthogonal"],
        ["delta-orthogonal", "orthogonal (Alg. 1)"],
        size=size,
        seed=seed,
        what="learning curves of deep orthogonal-kernel tanh CNNs",
        details=_deep_cnn_details(res, size),
    )


@figure(paper=PAPER, figure="Fig. 5", honours_backend=False)
def fig_5(out_dir, *, size, backend, seed):
    """Training speed: orthogonal (Algorithm 1) against Gaussian kernels of the same critical depth.

    Notes
    -----
    Xiao et al. 2018 Fig. 5: a 4,000-layer CNN with Gaussian kernels learns slowly, the orthogonal one fast.
    """
    res = _training.experiment("deep_cnn", size, seed)
    return _training.curves_figure(
        fig_5,
        out_dir,
        "xiao2018_fig_5",
        res,
        ["orthogonal", "gaussian"],
        ["orthogonal (Alg. 1)", "Gaussian"],
        size=size,
        seed=seed,
        what="orthogonal vs Gaussian kernels: training speed",
        details=_deep_cnn_details(res, size),
    )


@figure(paper=PAPER, figure="Fig. 4a", honours_backend=False)
def fig_4a(out_dir, *, size, backend, seed):
    """Test accuracy against depth of critical Gaussian tanh CNNs with variance vectors GS0 ... GS4.

    Notes
    -----
    Xiao et al. 2018 Fig. 4a / Sec. 3.3: the more poorly conditioned the singular values of A_v (right
    panel, on the image size trained here: 8 x 8 digits at the default size), the faster test
    accuracy falls with depth. The title states validation row 9's one-sided Spearman test
    (:func:`meanfield.validation.trainability.nonuniform_v_rank_test`) at the deepest depth.
    """
    from meanfield.validation.trainability import RANK_LEVEL, nonuniform_v_rank_test

    res = _training.experiment("nonuniform_v", size, seed)
    p = res["params"]
    image = tuple(p.get("image_shape", (4, 4)))

    def singular_values(ax):
        for i, (v, col) in enumerate(zip(res["v"], _red_to_black(len(res["v"])))):
            s = conv.averaging_singular_values(v, image)
            ax.plot(np.arange(1, s.size + 1), s, "-o", ms=2.5, lw=1, color=col, label=f"GS{i}")
        ax.set_xlabel("index (descending)")
        ax.set_ylabel(r"singular value of $\mathcal{A}_v\star$" + f" ({image[0]} x {image[-1]} images)")
        ax.legend(fontsize=7)

    # validation row 9's statistic: Spearman rho of the theory's score (mean sigma^(2L)) and accuracy
    deepest = res["test_accuracy"][-1].mean(axis=-1)
    test = nonuniform_v_rank_test(res)
    depth = int(res["depths"][-1])
    seen = (
        f"paper's ordering seen at L = {depth}: rho = {test.rho:+.3f} (p = {test.p_value:.2g} < {RANK_LEVEL}), "
        f"but the mean accuracies of the v's differ by {deepest.max() - deepest.min():.3f} only"
        if test.p_value < RANK_LEVEL
        else f"paper's ordering NOT seen at this size: {res['labels'][int(np.argmax(deepest))]} best at "
        f"L = {depth} (rho = {test.rho:+.3f}, p = {test.p_value:.2g}, needed rho > 0 at p < {RANK_LEVEL})"
    )
    return _training.depth_figure(
        fig_4a,
        out_dir,
        "xiao2018_fig_4a",
        res,
        size=size,
        seed=seed,
        what="test accuracy vs depth for non-uniform variance vectors",
        details=f"critical Gaussian CNNs, {p['channels']} channels, {p['steps']} steps, {p['n_networks']} nets each; "
        f"digits {image[0]}x{image[-1]} ({size} size)\n{seen}",
        extra_panel=singular_values,
        notes=seen,
    )


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
    (:func:`meanfield.simulate.spectra_singular_values`). Orthogonal weights keep the
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
    return save_figure(
        fig,
        out_dir,
        "xiao2018_fig_spectra",
        data,
        figure=fig_spectra,
        size=size,
        backend=backend,
        rng=seed,
        params=params,
        axes=axes,
        units=units,
    )


def _fig_s2_point(cov0, sw, sb, v, depth, channels, n_net, backend, rng):
    """One sigma_w2 of :func:`fig_s2`: (theory weight-gradient norms, Monte-Carlo ratios to the last layer)."""
    th = conv.gradient_variance_decay(cov0, "tanh", sw, sb, v, depth).weight_grad_sq
    sim = simulate_conv(
        cov0,
        "tanh",
        sw,
        sb,
        v,
        depth,
        channels,
        n_net,
        gradients=True,
        backend=backend,
        **rng_kwargs(simulate_conv, rng),
    )
    wg = sim.weight_grad_sq[:, :, 0]
    return th, wg.mean(0) / wg[:, -1].mean()


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
        figure=fig_kernel_regression,
        size=size,
        backend=backend,
        rng=seed,
        params=params,
        axes={"accuracy_nngp": ["sigma_w2", "depth"], "accuracy_ntk": ["sigma_w2", "depth"]},
        units={"depth": "layers", "six_xi_c": "layers", "accuracy_nngp": "fraction", "accuracy_ntk": "fraction"},
    )
