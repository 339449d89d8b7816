"""Xiao et al. 2018, Secs. 2-3 and Apps.: the CNN mean field without training (Figs. 2 theory, 4b, S2, S3, S4)."""

from __future__ import annotations

import numpy as np

from meanfield import conv, dense, parallel
from meanfield.init import conv_singular_values
from meanfield.simulate import simulate_conv, simulate_fig_s4

from .._common import (
    by_size,
    colors,
    figure,
    mark_floor,
    plot_log_floor,
    plt,
    progress,
    rng_kwargs,
    save_figure,
    streams,
    title,
)
from ._shared import PAPER

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
    return save_figure(fig, out_dir, "xiao2018_fig_s2", data, params=params, axes=axes, units=units)


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
    return save_figure(fig, out_dir, "xiao2018_fig_s3", data, params=params, axes=axes, units=units)


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
        params=params,
        axes=axes,
        units=units,
        notes="monte_carlo: mean over networks of the real part of each mode; the imaginary part is zero "
        "up to rounding (eps is symmetric)",
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
