"""Figures of Burkholz & Dubatovka (2019), seed 001: exact finite-width signal propagation.

- ``fig_1a``: law of the squared signal norm ``|x^(l)|^2`` at depths 0..9 of ReLU networks of width
  N = 200 with He parameters (``sigma_w2 = 2 / N``, ``sigma_b = 0``), inputs from the embedded digits
  data set (pixels / 16; the paper uses MNIST): lines = :func:`propagate_distribution`, steps =
  histograms over random networks.
- ``fig_1b``: eigenvalue ``lambda_m`` of the eigenfunction ``y^m`` against ``m`` for N = 10, 20, 100
  (He): the derived eq. 8 (solid), eq. 8 as printed (dashed; the paper's curve), the discretised
  operator applied to ``y^m`` (markers) and the paper's stated ``m_crit = -3.256 - 1.621 N``
  (crosses at lambda = 1, next to the printed formula's lower roots, far from the derived ones).
- ``fig_2``: law of the cosine similarity of two ReLU layers given the previous layer, for
  ``<x1, x2> = 0, 0.25, 0.5, 0.75`` (``|x1| = |x2| = 1``) and N = 100 (dashed) and 200 (solid),
  from :func:`cosine_similarity_samples` (10^6 repeats with ``--full``).
- ``fig_thm5`` (not a figure of the paper): the ReLU correlation map of Thm. 5 against the identity
  and the exact mean inner product (eq. 9) against its linear interpolation (eq. 10), with
  simulation points.
"""

from __future__ import annotations

import numpy as np

from meanfield import finite_width as fw
from meanfield.data import load_digits
from meanfield.validation._finite_width_networks import simulate_squared_norms

from ._common import plt, progress, save_figure

__all__ = ["FIGURES", "fig_1a", "fig_1b", "fig_2", "fig_thm5"]


def fig_1a(out_dir, full=False, backend="numpy", seed=0):
    """Squared-norm laws at depths 0..9, N = 200, He: theory lines and network histograms."""
    width, depth = 200, 9
    n_net, per_net = (2000, 32) if full else (200, 16)
    cells = 600 if full else 300
    pool = load_digits().x / 16.0
    y0 = (pool * pool).sum(1)
    grid = np.linspace(0.0, 3.0 * y0.max(), cells + 1)
    layers = [fw.Layer(width, 2.0 / width)] * depth
    laws = fw.propagate_distribution(fw.grid_masses(y0, grid), grid, layers, nodes_per_cell=2)
    sim = simulate_squared_norms(pool, layers, n_net, per_net, backend=backend, rng=seed)
    dz = np.diff(grid)
    mid = 0.5 * (grid[1:] + grid[:-1])
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    cmap = plt.get_cmap("viridis")
    bins = np.linspace(0.0, 40.0, 81)
    data = {"grid": grid, "laws": laws, "bins": bins, "width": width, "n_networks": n_net, "inputs_per_network": per_net,
            "mean_theory": laws @ np.concatenate([[0.0], mid]), "mean_mc": sim.reshape(-1, depth + 1).mean(0), "histograms": []}
    for layer in progress(range(depth + 1), desc="fig_1a"):
        color = cmap(layer / depth)
        ax.plot(mid, laws[layer, 1:] / dz, color=color, lw=1.2, label=f"L = {layer}")
        hist, _ = np.histogram(sim[:, :, layer].reshape(-1), bins=bins, density=True)
        ax.stairs(hist, bins, color=color, lw=0.6, alpha=0.6)
        data["histograms"].append(hist)
    ax.set_xlim(0, 40)
    ax.set_xlabel(r"$|x^{(L)}|^2$")
    ax.set_ylabel("density")
    ax.set_title(f"ReLU, N = {width}, He ($\\sigma_w^2 = 2/N$): lines = $T_l$ on a grid, steps = {n_net}x{per_net} networks", fontsize=8)
    ax.legend(fontsize=6, ncol=2)
    return save_figure(fig, out_dir, "burkholz2019_fig_1a", data)


def _operator_ratio(m_values, n, sw, pts):
    edges = np.concatenate([[0.0], np.logspace(-6, 6, pts)])
    op = fw.discretize_operator(edges, n, sw, nodes_per_cell=2)
    e = edges[1:]
    i = int(np.searchsorted(edges, 1.0))
    out = []
    for m in m_values:
        v = np.log(e[1:] / e[:-1]) if m == -1 else (e[1:] ** (m + 1) - e[:-1] ** (m + 1)) / (m + 1)
        v = np.concatenate([[0.0, 0.0], v])
        out.append((op.matrix @ v)[i] / v[i])
    return np.array(out)


def fig_1b(out_dir, full=False, backend="numpy", seed=0):
    """Eigenvalues vs m (He): derived eq. 8, printed eq. 8, discretised operator."""
    k = 1500 if full else 500  # [-180, -4] shows every printed-formula root; [-4, -0.51] the zoom
    m = np.concatenate([np.linspace(-180.0, -4.0, k, endpoint=False), np.linspace(-4.0, -0.51, k)])
    m_op = np.array([-8.0, -6.0, -4.0, -3.0, -2.5, -2.0, -1.5, -1.2, -1.0, -0.8, -0.6])
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    data = {"m": m, "m_operator": m_op}
    styles = {10: ("k", "o"), 20: ("b", "^"), 100: ("r", "+")}
    for n in progress((10, 20, 100), desc="fig_1b"):
        sw = 2.0 / n
        color, marker = styles[n]
        lam = fw.relu_eigenvalue(m, n, sw)
        lam_p = fw.relu_eigenvalue_printed(m, n, sw)
        pts = 241 if full else 121
        op = (4 * _operator_ratio(m_op, n, sw, 2 * pts - 1) - _operator_ratio(m_op, n, sw, pts)) / 3
        ce = fw.critical_exponents(n)
        axes[0].plot([ce.paper_relation], [1.0], color=color, marker="x", ms=8, ls="none",
                     label=f"N = {n}: paper's $m_{{crit}} = -3.256 - 1.621 N$")
        for ax in axes:
            ax.plot(m, lam, color=color, lw=1.2, label=f"N = {n}: eq. 8 derived")
            ax.plot(m, lam_p, color=color, lw=1.0, ls="--", label=f"N = {n}: eq. 8 as printed")
            ax.plot(m_op, op, color=color, marker=marker, ls="none", ms=6, mfc="none", label=f"N = {n}: operator on grid")
        data[f"N={n}"] = {"derived": lam, "printed": lam_p, "operator": op, "critical": {"lower": ce.lower, "upper": ce.upper, "printed_lower": ce.printed_lower, "printed_upper": ce.printed_upper, "paper_relation": ce.paper_relation}}
    axes[0].set_ylim(0, 1.5)
    axes[0].set_xlim(-180, 0)
    axes[1].set_ylim(0.9, 1.1)
    axes[1].set_xlim(-4, -0.5)
    for ax in axes:
        ax.axhline(1.0, color="gray", lw=0.5)
        ax.set_xlabel("m")
        ax.set_ylabel(r"$\lambda_m$")
    axes[0].legend(fontsize=6)
    axes[1].set_title("zoom: derived eigenvalue < 1 only on (-2, m+), m+ ~ -1", fontsize=8)
    fig.suptitle("ReLU, He: eigenvalues of $T_l$ for eigenfunctions $y^m$", fontsize=9)
    return save_figure(fig, out_dir, "burkholz2019_fig_1b", data)


def fig_2(out_dir, full=False, backend="numpy", seed=0):
    """Cosine-similarity laws for <x1, x2> = 0, 0.25, 0.5, 0.75 and N = 100, 200."""
    n_samples = 1_000_000 if full else 100_000
    bins = np.linspace(0.0, 1.0, 201)
    centers = 0.5 * (bins[1:] + bins[:-1])
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    data = {"bins": bins, "n_samples": n_samples}
    colors = dict(zip((0.0, 0.25, 0.5, 0.75), ("C0", "C1", "C2", "C3")))
    markers = dict(zip((0.0, 0.25, 0.5, 0.75), ("o", "s", "D", "^")))
    jobs = [(n, c) for n in (100, 200) for c in (0.0, 0.25, 0.5, 0.75)]
    for k, (n, c) in enumerate(progress(jobs, desc="fig_2")):
        s = fw.cosine_similarity_samples(n, c, n_samples=n_samples, seed=seed + k, dtype=np.float32)
        hist, _ = np.histogram(s, bins=bins, density=True)
        filled = n == 100
        ax.plot(centers, hist, color=colors[c], ls="--" if filled else "-", lw=1.0,
                marker=markers[c], markevery=12, ms=4, mfc=colors[c] if filled else "none",
                label=f"N = {n}, <x1,x2> = {c}")
        data[f"N={n},c={c}"] = {"density": hist, "mean": float(s.mean()), "sd": float(s.std()),
                                "limit_mean": 2 * float(fw.mean_inner_product(1, 1.0, 1.0, c))}
    ax.set_xlabel("cosine similarity after one ReLU layer")
    ax.set_ylabel("density")
    ax.set_title(f"$|x_1| = |x_2| = 1$, $\\sigma_b = 0$; {n_samples} repeats each", fontsize=8)
    ax.legend(fontsize=6)
    return save_figure(fig, out_dir, "burkholz2019_fig_2", data)


def fig_thm5(out_dir, full=False, backend="numpy", seed=0):
    """Thm. 5: ReLU correlation map against the identity, and eq. 9 against its linearisation eq. 10."""
    rho = np.linspace(-1.0, 1.0, 401)
    rho_mc = np.linspace(-0.9, 0.9, 7)
    n = 400_000 if full else 100_000
    rng = np.random.default_rng(seed)
    cor_mc, ip_mc = [], []
    for r in progress(rho_mc, desc="fig_thm5"):
        a = rng.standard_normal(n)
        b = r * a + np.sqrt(1 - r * r) * rng.standard_normal(n)
        a, b = np.maximum(a, 0), np.maximum(b, 0)
        cor_mc.append(np.corrcoef(a, b)[0, 1])
        ip_mc.append(np.mean(a * b))
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    axes[0].plot(rho, fw.relu_correlation(rho), label="Cor(relu(h1), relu(h2)) (Thm. 5)")
    axes[0].plot(rho, rho, "k:", lw=0.8, label="identity")
    axes[0].plot(rho_mc, cor_mc, "o", ms=4, label=f"simulation ({n} pairs)")
    axes[0].set_xlabel(r"$\rho$")
    axes[0].legend(fontsize=7)
    axes[0].set_title("below the identity only for $\\rho > 0$", fontsize=8)
    exact = fw.mean_inner_product(1, 1.0, 1.0, rho)
    axes[1].plot(rho, exact, label="eq. 9 (exact)")
    axes[1].plot(rho, (rho + 1) / 4, "--", label="eq. 10: (rho + 1) / 4")
    axes[1].plot(rho_mc, ip_mc, "o", ms=4, label="simulation")
    axes[1].set_xlabel(r"$\rho$")
    axes[1].set_ylabel(r"$E\langle x_1, x_2\rangle / (N \sqrt{v_{11} v_{22}})$")
    axes[1].legend(fontsize=7)
    data = {"rho": rho, "correlation": fw.relu_correlation(rho), "mean_inner_exact": exact, "mean_inner_eq10": (rho + 1) / 4,
            "rho_mc": rho_mc, "correlation_mc": cor_mc, "mean_inner_mc": ip_mc, "pairs": n}
    return save_figure(fig, out_dir, "burkholz2019_fig_thm5", data)


FIGURES = {"fig_1a": fig_1a, "fig_1b": fig_1b, "fig_2": fig_2, "fig_thm5": fig_thm5}
