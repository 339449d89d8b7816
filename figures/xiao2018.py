"""Figures of Xiao et al. (2018), seed 003: the dense mean-field background (App. B, Fig. S1).

- ``fig_s1``: order-to-chaos phase diagram of tanh networks: q* in colour over the
  (sigma_w2, sigma_b2) plane, the critical line chi_1 = 1 (seed 003 Fig. S1; Poole et al. 2016 Fig. 2).
- ``fig_qc_maps``: iterated q-map and c-map of tanh networks with Monte-Carlo points from
  finite random networks (Poole et al. 2016 Figs. 1-2 style).
- ``fig_depth_scales``: depth scale xi_c against sigma_w2 for several sigma_b2, diverging at the
  edge of chaos (Schoenholz et al. 2017 Fig. 1 style).

CNN figures (seed 003, :mod:`meanfield.conv`):

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
"""

from __future__ import annotations

import numpy as np

from meanfield import conv, dense
from meanfield.data import gaussian_inputs
from meanfield.validation.networks import simulate_conv, simulate_dense

from ._common import plt, progress, save_figure

__all__ = [
    "FIGURES",
    "block_circulant_singular_values",
    "fig_2_theory",
    "fig_4b",
    "fig_depth_scales",
    "fig_qc_maps",
    "fig_s1",
    "fig_s2",
    "fig_s3",
    "fig_s4",
]


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
        sim = simulate_dense(x, "tanh", sw, sb, depth, width, n_net, backend=backend, rng=np.random.SeedSequence(seed, spawn_key=(k,)))
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


# --- CNN figures --------------------------------------------------------------------------------


def fig_2_theory(out_dir, full=False, backend="numpy", seed=0):
    """6 xi_c over (sigma_w2, depth) for tanh at sigma_b2 = 2e-5: networks deeper than the curve do not train (Fig. 2)."""
    sb = 2e-5
    sw = np.linspace(0.05, 4.0, 800 if full else 240)
    pd = dense.phase_diagram("tanh", sw, [sb])
    xi = pd.xi_c[:, 0]
    crit = float(dense.critical_sigma_w2("tanh", sb))
    fig, ax = plt.subplots(figsize=(5.2, 3.8))
    bound = np.minimum(6 * xi, 1e4)
    ax.fill_between(sw, 10, np.clip(bound, 10, 600), color="0.85", label=r"$L < 6\xi_c$ (trainable)")
    ax.plot(sw, 6 * xi, "w--", lw=2)
    ax.plot(sw, 6 * xi, "k--", lw=1, label=r"$6\xi_c$")
    ax.axvline(crit, color="r", lw=0.8, label=rf"$\chi_1 = 1$ ($\sigma_w^2$={crit:.3f})")
    ax.set_ylim(10, 600)
    ax.set_xlabel(r"$\sigma_w^2$")
    ax.set_ylabel("depth $L$")
    ax.set_title(r"tanh CNN, $\sigma_b^2 = 2\times10^{-5}$: depth scale bound")
    ax.legend(fontsize=7, loc="upper left")
    data = {"sigma_w2": sw, "sigma_b2": sb, "xi_c": xi, "six_xi_c": 6 * xi, "critical_sigma_w2": crit}
    return save_figure(fig, out_dir, "xiao2018_fig_2_theory", data)


def fig_4b(out_dir, full=False, backend="numpy", seed=0):
    """Singular values of A_v (descending; each has 64 copies on 64 x 64 covariances) for GS0 ... GS4."""
    family = conv.gs_family((3, 3), 5)
    svs = [conv.averaging_singular_values(v, (8, 8)) for v in family]
    fig, ax = plt.subplots(figsize=(5, 3.6))
    colors = plt.cm.coolwarm_r(np.linspace(0, 1, len(family)))[::-1]
    for i, (s, col) in enumerate(zip(svs, colors)):
        ax.plot(np.arange(1, s.size + 1), s, "o-", ms=2.5, color=col, label=f"GS{i}")
    ax.set_xlabel("index")
    ax.set_ylabel(r"singular value of $\mathcal{A}_v\star$")
    ax.set_title("8x8 images, 3x3 kernels: GS0 (delta) to GS4 (uniform)")
    ax.legend(fontsize=8)
    data = {"v": family, "singular_values": svs}
    return save_figure(fig, out_dir, "xiao2018_fig_4b", data)


def fig_s2(out_dir, full=False, backend="numpy", seed=0):
    """Weight-gradient norms |dE/dW^l|^2 / |dE/dW^L|^2 of random tanh CNNs across the phase transition."""
    depth, n, sb, v = 100, 10, 0.05, np.full(3, 1 / 3)
    channels, n_net = (2000, 4) if full else (48, 6)
    sws = np.linspace(1.0, 4.25, 8 if full else 5)
    rng = np.random.default_rng(seed + 5)
    a = rng.standard_normal((n, n)) + 1.0
    cov0 = a @ a.T / n + 0.3 * np.eye(n)
    cov0 /= np.mean(np.diag(cov0))
    fig, ax = plt.subplots(figsize=(5.5, 4))
    colors = plt.cm.coolwarm(np.linspace(0, 1, sws.size))
    layers = np.arange(1, depth + 1)
    data = {"layers": layers, "channels": channels, "n_networks": n_net, "sigma_b2": sb, "curves": []}
    for k, (sw, col) in enumerate(zip(progress(sws, desc="fig_s2"), colors)):
        th = conv.gradient_variance_decay(cov0, "tanh", sw, sb, v, depth).weight_grad_sq
        sim = simulate_conv(cov0, "tanh", sw, sb, v, depth, channels, n_net, gradients=True, backend=backend, rng=np.random.SeedSequence(seed, spawn_key=(k,)))
        wg = sim.weight_grad_sq[:, :, 0]
        mc = wg.mean(0) / wg[:, -1].mean()
        ax.semilogy(layers, mc, color=col, label=f"$\\sigma_w^2$={sw:.2f}")
        ax.semilogy(layers, th / th[-1], "--", color="tab:green", lw=1)
        data["curves"].append({"sigma_w2": sw, "monte_carlo": mc, "theory": th / th[-1]})
    ax.set_xlabel(r"layer $\ell$")
    ax.set_ylabel(r"$\|\nabla_{W^\ell}\|^2 / \|\nabla_{W^L}\|^2$")
    ax.set_title(f"tanh CNN, L={depth}, n={n}, c={channels}; dashed: mean field")
    ax.legend(fontsize=7)
    return save_figure(fig, out_dir, "xiao2018_fig_s2", data)


def block_circulant_singular_values(kernel, n):
    r"""Singular values of the periodic 1-D convolution by ``kernel`` (shape (2k+1, c, c)) on size ``n``.

    The block-circulant matrix is block-diagonalised by the DFT over positions: its singular values
    are those of :math:`\hat K(\theta_m) = \sum_\beta K(\beta) e^{i\theta_m\beta}`,
    :math:`\theta_m = 2\pi m / n` (O(n c^3) instead of O((n c)^3)).
    """
    k = kernel.shape[0] // 2
    beta = np.arange(kernel.shape[0]) - k
    theta = 2 * np.pi * np.arange(n) / n
    phases = np.exp(1j * np.outer(theta, beta))  # (n, 2k+1)
    khat = np.einsum("mb,bij->mij", phases, kernel)
    return np.sort(np.linalg.svd(khat, compute_uv=False).ravel())


def fig_s3(out_dir, full=False, backend="numpy", seed=0):
    """Singular values of block-circulant vs dense i.i.d. Gaussian weight matrices vs Marchenko-Pastur."""
    n, width = 26, 5
    cs = (2, 8, 32, 128) if full else (2, 8, 32)
    rng = np.random.default_rng(seed + 3)
    fig, ax = plt.subplots(figsize=(5.5, 4))
    grid = np.linspace(0, 2, 400)
    colors = plt.cm.coolwarm(np.linspace(0, 1, len(cs)))
    data = {"n": n, "kernel_size": width, "channels": list(cs), "conv": [], "dense": []}
    bins = np.linspace(0, 2.4, 49)
    for c, col in zip(progress(cs, desc="fig_s3"), colors):
        kernel = rng.standard_normal((width, c, c)) / np.sqrt(c * width)
        s_conv = block_circulant_singular_values(kernel, n)
        s_dense = np.linalg.svd(rng.standard_normal((n * c, n * c)) / np.sqrt(n * c), compute_uv=False)
        hist, _ = np.histogram(s_conv, bins=bins, density=True)
        ax.step(bins[:-1], hist, where="post", color=col, label=f"conv, c={c}")
        hd, _ = np.histogram(s_dense, bins=bins, density=True)
        ax.step(bins[:-1], hd, where="post", color="tab:green", ls="--", lw=0.8)
        data["conv"].append(s_conv)
        data["dense"].append(s_dense)
    mp = np.sqrt(np.clip(4 - grid**2, 0, None)) / np.pi  # square Marchenko-Pastur: quarter circle
    ax.plot(grid, mp, "k", lw=1.5, label="Marchenko-Pastur")
    ax.set_xlabel("singular value")
    ax.set_ylabel("density")
    ax.set_title(f"n={n}, 2k+1={width}; dashed green: dense nc x nc")
    ax.legend(fontsize=7)
    data["mp_grid"], data["mp_density"] = grid, mp
    return save_figure(fig, out_dir, "xiao2018_fig_s3", data)


def fig_s4(out_dir, full=False, backend="numpy", seed=0):
    """|Fourier amplitude| of the first cyclic diagonal of eps^l through random erf CNNs (Sec. F)."""
    from meanfield.validation.conv import fig_s4_theory, simulate_fig_s4  # noqa: PLC0415

    depth = 40 if full else 20
    channels, n_net = (1024, 64) if full else (256, 32)
    modes = simulate_fig_s4(depth, channels, n_net, backend, rng=seed).real.mean(0)
    exact, lin = fig_s4_theory(depth)
    layers = np.arange(depth + 1)
    fig, ax = plt.subplots(figsize=(5.5, 4))
    shown = range(6)
    colors = plt.cm.viridis(np.linspace(0, 0.9, len(shown)))
    for m, col in zip(shown, colors):
        ax.semilogy(layers, np.abs(modes[:, m]), "o", ms=3, color=col, label=f"mode {m}")
        ax.semilogy(layers, np.abs(lin[:, m]), "--", color="tab:green", lw=1)
        ax.semilogy(layers, np.abs(exact[:, m]), ":", color=col, lw=0.8)
    ax.set_xlabel("layer $l$")
    ax.set_ylabel(r"$|\tilde\epsilon^l_m|$ (first cyclic diagonal)")
    ax.set_title(f"erf, $\\sigma_w$=1.5, $\\sigma_b$=0.5, n=10, v=[.025,.95,.025], c={channels}")
    ax.legend(fontsize=7, ncol=2)
    data = {"layers": layers, "monte_carlo": modes, "linearised": lin.real, "exact_map": exact.real, "channels": channels, "n_networks": n_net}
    return save_figure(fig, out_dir, "xiao2018_fig_s4", data)


FIGURES = {
    "fig_s1": fig_s1,
    "fig_qc_maps": fig_qc_maps,
    "fig_depth_scales": fig_depth_scales,
    "fig_2_theory": fig_2_theory,
    "fig_4b": fig_4b,
    "fig_s2": fig_s2,
    "fig_s3": fig_s3,
    "fig_s4": fig_s4,
}
