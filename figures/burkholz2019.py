"""Figures of Burkholz & Dubatovka (2019), Burkholz & Dubatovka 2019: exact finite-width signal propagation.

- ``fig_1a``: law of the squared signal norm ``|x^(l)|^2`` at depths 0..9 of ReLU networks of width
  N = 200 with He parameters (``sigma_w2 = 2``, ``fan_in = N``, ``sigma_b = 0``), inputs from the embedded digits
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
  simulation points (mean +- standard error).

Every figure takes ``size="smoke" | "default" | "full"`` (see :mod:`meanfield.figures._common`).
Parametrisation: the library's ``sigma_w2`` (``W_ij ~ N(0, sigma_w2 / fan_in)``, He = 2) with
``fan_in`` = the layer's width, which is the paper's per-weight variance ``sigma_w^2 = 2 / N``
(Burkholz & Dubatovka 2019 uses ``2 / N_l`` also for the first layer, whose input has 64 pixels here). The random
networks of ``fig_1a`` come from a simulator that takes the same layers (it draws the weights with
the per-weight ``Layer.unscaled_sigma_w2``). Both values are recorded in the JSON ``params``
(``sigma_w2`` and ``sigma_w2_unscaled``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from meanfield import finite_width as fw
from meanfield import parallel
from meanfield.data import load_digits
from meanfield.numerics import richardson
from meanfield.simulate import simulate_squared_norms

from . import _training
from ._common import by_size, colors, figure, plt, progress, registered, rng_kwargs, save_figure, streams, title

__all__ = ["FIGURES", "fig_1a", "fig_1b", "fig_2", "fig_3", "fig_4", "fig_thm5"]

PAPER = "Burkholz & Dubatovka 2019"

#: The figures of this module, ``{name: function}`` (read-only; filled by their ``@figure`` declarations).
FIGURES = registered(__name__)


@figure(paper=PAPER, figure="Fig. 1a", honours_backend=True)
def fig_1a(out_dir: Path, *, size: str, backend: str, seed: int) -> list[Path]:
    """Squared-norm laws at depths 0..9, N = 200, He: theory lines and network histograms.

    Notes
    -----
    Burkholz & Dubatovka 2019 Prop. 1 and Fig. 1a: the law of ``|x^(l)|^2`` propagated by the operator T_l on a grid
    (:func:`meanfield.finite_width.propagate_distribution`) against histograms of random ReLU
    networks (He, no bias); inputs are the embedded 8 x 8 digits scaled to [0, 1] (pixels / 16;
    the paper uses MNIST), so the input law is the empirical law of that pool.
    """
    width, depth = 200, 9
    n_net, per_net = by_size(size, smoke=(8, 4), default=(200, 16), full=(2000, 32))
    cells = by_size(size, smoke=60, default=300, full=600)
    pool = load_digits().x / 16.0
    y0 = (pool * pool).sum(1)
    grid = np.linspace(0.0, 3.0 * y0.max(), cells + 1)
    layers = [fw.Layer(width, 2.0)] * depth  # He; fan_in = width: the paper's 2 / N in every layer
    laws = fw.propagate_distribution(fw.grid_masses(y0, grid), grid, layers, nodes_per_cell=2)
    (rng,) = streams(seed, 1)
    # the simulator takes the same layers (sigma_w2 = 2 at fan_in = width: the paper's 2 / N)
    sim = simulate_squared_norms(
        pool, layers, n_net, per_net, backend=backend, **rng_kwargs(simulate_squared_norms, rng)
    )
    dz = np.diff(grid)
    mid = 0.5 * (grid[1:] + grid[:-1])
    fig, ax = plt.subplots(figsize=(6.6, 4.6), layout="constrained")
    bins = np.linspace(0.0, 40.0, 81)
    hists = []
    for layer, color in zip(progress(range(depth + 1), desc="fig_1a"), colors(depth + 1, plt.cm.viridis, 0.0, 0.9)):
        ax.plot(mid, laws[layer, 1:] / dz, color=color, lw=1.2, label=f"$l$ = {layer}")
        hist, _ = np.histogram(sim[:, :, layer].reshape(-1), bins=bins, density=True)
        ax.stairs(hist, bins, color=color, lw=0.6, alpha=0.7)
        hists.append(hist)
    ax.plot([], [], "k-", lw=1.2, label="$T_l$ on a grid")
    ax.stairs([0.0], [0.0, 1e-9], color="k", lw=0.6, label="networks (histogram)")
    ax.set_xlim(0, 40)
    ax.set_xlabel(r"squared signal norm $|x^{(l)}|^2$ after layer $l$")
    ax.set_ylabel(r"probability density of $|x^{(l)}|^2$")
    ax.legend(fontsize=6, ncol=2)
    title(
        fig,
        PAPER,
        "Fig. 1a",
        "law of the squared signal norm through ReLU layers",
        f"N = {width} neurons per layer, He ($\\sigma_w^2 = 2/N$, no bias), {depth} layers; "
        f"{n_net} networks x {per_net} digit inputs; grid of {cells} cells",
    )
    data = {
        "grid": grid,
        "laws": laws,
        "bins": bins,
        "histograms": np.array(hists),
        "mean_theory": laws @ np.concatenate([[0.0], mid]),
        "mean_mc": sim.reshape(-1, depth + 1).mean(0),
    }
    params = {
        "width": width,
        "depth": depth,
        "sigma_w2_unscaled": layers[0].unscaled_sigma_w2,
        "sigma_w2": 2.0,
        "fan_in": width,
        "sigma_b2": 0.0,
        "activation": "relu",
        "n_networks": n_net,
        "inputs_per_network": per_net,
        "grid_cells": cells,
        "inputs": "embedded 8x8 digits (scikit-learn), pixels / 16",
    }
    axes = {
        "laws": ["layer (0..depth)", "grid cell (index 0 = atom at 0, then the cells of grid)"],
        "histograms": ["layer (0..depth)", "bin"],
    }
    units = {
        "laws": "probability mass per cell",
        "histograms": "probability density",
        "grid": "squared norm",
        "bins": "squared norm",
        "mean_theory": "squared norm",
        "mean_mc": "squared norm",
    }
    return save_figure(
        fig,
        out_dir,
        "burkholz2019_fig_1a",
        data,
        params=params,
        axes=axes,
        units=units,
        notes="sigma_w2_unscaled is the paper's per-weight variance (2/N); sigma_w2 the library's (times fan_in = N)",
    )


def _operator_ratio(m_values, n: int, sigma_w2: float, pts: int) -> np.ndarray:
    edges = np.concatenate([[0.0], np.logspace(-6, 6, pts)])
    op = fw.discretize_operator(edges, n, sigma_w2, nodes_per_cell=2)
    e = edges[1:]
    i = int(np.searchsorted(edges, 1.0))
    out = []
    for m in m_values:
        v = np.log(e[1:] / e[:-1]) if m == -1 else (e[1:] ** (m + 1) - e[:-1] ** (m + 1)) / (m + 1)
        v = np.concatenate([[0.0, 0.0], v])
        out.append((op.matrix @ v)[i] / v[i])
    return np.array(out)


@figure(paper=PAPER, figure="Fig. 1b", honours_backend=False)
def fig_1b(out_dir: Path, *, size: str, backend: str, seed: int) -> list[Path]:
    """Eigenvalues vs m (He): derived eq. 8, printed eq. 8, discretised operator.

    Notes
    -----
    Burkholz & Dubatovka 2019 Prop. 4, eq. 8 and Fig. 1b: the eigenvalue lambda_m of the eigenfunction y^m of T_l
    for ReLU layers with He parameters, as derived by the library
    (:func:`meanfield.finite_width.relu_eigenvalue`), as printed in the paper
    (:func:`meanfield.finite_width.relu_eigenvalue_printed`), and measured by applying the
    discretised operator to y^m (Richardson-extrapolated in the grid); crosses: the paper's stated
    m_crit = -3.256 - 1.621 N at lambda = 1. Theory only (no simulation).
    """
    k = by_size(size, smoke=60, default=500, full=1500)  # [-180, -4] shows every printed-formula root
    pts = by_size(size, smoke=41, default=121, full=241)
    m = np.concatenate([np.linspace(-180.0, -4.0, k, endpoint=False), np.linspace(-4.0, -0.51, k)])
    m_op = np.array([-8.0, -6.0, -4.0, -3.0, -2.5, -2.0, -1.5, -1.2, -1.0, -0.8, -0.6])
    fig, axes = plt.subplots(1, 2, figsize=(10.5, 4.6), layout="constrained")
    data = {"m": m, "m_operator": m_op}
    styles = {10: ("k", "o"), 20: ("tab:blue", "^"), 100: ("tab:red", "s")}
    for n in progress((10, 20, 100), desc="fig_1b"):
        sigma_w2 = 2.0  # He (fan_in = N: the paper's 2 / N)
        color, marker = styles[n]
        lam = fw.relu_eigenvalue(m, n, sigma_w2)
        lam_p = fw.relu_eigenvalue_printed(m, n, sigma_w2)
        # cell averaging of y^m: O(h^2) in the log-grid step, halved from pts to 2 pts - 1 points
        op = richardson(
            _operator_ratio(m_op, n, sigma_w2, pts), _operator_ratio(m_op, n, sigma_w2, 2 * pts - 1), order=2
        ).value
        ce = fw.critical_exponents(n)
        axes[0].plot([ce.paper_relation], [1.0], color=color, marker="x", ms=9, mew=2, ls="none")
        for ax in axes:
            ax.plot(m, lam, color=color, lw=1.3)
            ax.plot(m, lam_p, color=color, lw=1.0, ls="--")
            ax.plot(m_op, op, color=color, marker=marker, ls="none", ms=6, mfc="none")
        data[f"N={n}"] = {
            "derived": lam,
            "printed": lam_p,
            "operator": op,
            "critical": {
                "lower": ce.lower,
                "upper": ce.upper,
                "printed_lower": ce.printed_lower,
                "printed_upper": ce.printed_upper,
                "paper_relation": ce.paper_relation,
            },
        }
    axes[0].set_ylim(0, 1.5)
    axes[0].set_xlim(-180, 0)
    axes[1].set_ylim(0.9, 1.1)
    axes[1].set_xlim(-4, -0.5)
    for ax, what in zip(
        axes,
        (
            "(a) all roots of the printed formula",
            r"(b) zoom: derived $\lambda_m < 1$ only on $(-2, m_+)$, $m_+ \approx -1$",
        ),
    ):
        ax.axhline(1.0, color="gray", lw=0.5)
        ax.set_xlabel("exponent $m$ of the eigenfunction $y^m$")
        ax.set_ylabel(r"eigenvalue $\lambda_m$")
        ax.set_title(what, fontsize=8)
    by_n = [plt.Line2D([], [], color=styles[n][0], lw=1.3, label=f"N = {n}") for n in (10, 20, 100)]
    by_kind = [
        plt.Line2D([], [], color="0.3", lw=1.3, label="eq. 8 derived"),
        plt.Line2D([], [], color="0.3", lw=1.0, ls="--", label="eq. 8 as printed"),
        plt.Line2D([], [], color="0.3", marker="o", mfc="none", ls="none", label="operator on a grid"),
        plt.Line2D([], [], color="0.3", marker="x", mew=2, ls="none", label="paper's $m_{crit} = -3.256 - 1.621N$"),
    ]
    fig.legend(handles=by_n + by_kind, loc="outside lower center", ncol=7, fontsize=7, frameon=False)
    title(
        fig,
        PAPER,
        "Fig. 1b",
        "eigenvalues of $T_l$ for the eigenfunctions $y^m$ (ReLU, He)",
        f"N = 10, 20, 100 neurons, $\\sigma_w^2 = 2/N$ (paper's scaling), no bias; operator: grids of {pts} and "
        f"{2 * pts - 1} log-spaced cells, Richardson-extrapolated",
    )
    params = {
        "widths": [10, 20, 100],
        "sigma_w2_unscaled": "2 / N",
        "sigma_w2": 2.0,
        "sigma_b2": 0.0,
        "activation": "relu",
        "m_points": 2 * k,
        "operator_grid_cells": [pts, 2 * pts - 1],
    }
    units = {"m": "exponent (dimensionless)", "derived": "eigenvalue (dimensionless)"}
    return save_figure(
        fig,
        out_dir,
        "burkholz2019_fig_1b",
        data,
        params=params,
        units=units,
        notes="per width N: arrays indexed like m (derived, printed) or m_operator",
    )


@figure(paper=PAPER, figure="Fig. 2", honours_backend=False)
def fig_2(out_dir: Path, *, size: str, backend: str, seed: int) -> list[Path]:
    """Cosine-similarity laws for <x1, x2> = 0, 0.25, 0.5, 0.75 and N = 100, 200.

    Notes
    -----
    Burkholz & Dubatovka 2019 Thm. 5 and Fig. 2: the law of the cosine similarity of two inputs after one ReLU layer
    given the previous layer (``|x1| = |x2| = 1``, no bias), sampled exactly by
    :func:`meanfield.finite_width.cosine_similarity_samples` on the CPU.
    """
    n_samples = by_size(size, smoke=4_000, default=100_000, full=1_000_000)
    bins = np.linspace(0.0, 1.0, 201)
    centers = 0.5 * (bins[1:] + bins[:-1])
    fig, ax = plt.subplots(figsize=(6.6, 4.5), layout="constrained")
    data = {"bins": bins}
    rhos = (0.0, 0.25, 0.5, 0.75)
    cols = dict(zip(rhos, ("tab:blue", "tab:orange", "tab:green", "tab:red")))
    markers = dict(zip(rhos, ("o", "s", "D", "^")))
    jobs = [(n, c) for n in (100, 200) for c in rhos]
    # one task per (N, <x1, x2>) (meanfield.parallel: in-process by default, on processes / Dask under
    # --workers / --scheduler), each with its own stream: the same numbers wherever it ran
    samples = parallel.map_chunks(
        _fig_2_samples, [(n, c, n_samples, rng) for (n, c), rng in zip(jobs, streams(seed, len(jobs)))]
    )
    for (n, c), s in zip(progress(jobs, desc="fig_2"), samples):
        hist, _ = np.histogram(s, bins=bins, density=True)
        narrow = n == 200
        ax.plot(
            centers,
            hist,
            color=cols[c],
            ls="-" if narrow else "--",
            lw=1.0,
            marker=markers[c],
            markevery=12,
            ms=4,
            mfc="none" if narrow else cols[c],
            label=f"N = {n}, $\\langle x_1, x_2\\rangle$ = {c}",
        )
        data[f"N={n},c={c}"] = {
            "density": hist,
            "mean": float(s.mean()),
            "sd": float(s.std()),
            "mean_stderr": float(s.std() / np.sqrt(n_samples)),
            "limit_mean": 2 * float(fw.mean_inner_product(1, 1.0, 1.0, c)),
        }
    ax.set_xlabel(r"cosine similarity $\cos(x_1^{(1)}, x_2^{(1)})$ after one ReLU layer")
    ax.set_ylabel("probability density")
    ax.legend(fontsize=6, ncol=2)
    title(
        fig,
        PAPER,
        "Fig. 2",
        "law of the cosine similarity after one ReLU layer",
        f"$|x_1| = |x_2| = 1$, no bias, N = 100 (dashed, filled) and 200 (solid, open); {n_samples} samples each",
    )
    params = {
        "widths": [100, 200],
        "inner_products": list(rhos),
        "input_norms": 1.0,
        "sigma_b2": 0.0,
        "activation": "relu",
        "n_samples": n_samples,
        "sample_dtype": "float32",
    }
    units = {"bins": "cosine similarity (dimensionless)", "density": "probability density"}
    return save_figure(
        fig,
        out_dir,
        "burkholz2019_fig_2",
        data,
        params=params,
        units=units,
        notes="per (N, <x1,x2>): density over bins, sample mean and sd",
    )


@figure(paper=PAPER, figure="not in the paper (Thm. 5, eqs. 9-10)", honours_backend=False)
def fig_thm5(out_dir: Path, *, size: str, backend: str, seed: int) -> list[Path]:
    """Thm. 5: ReLU correlation map against the identity, and eq. 9 against its linearisation eq. 10.

    Notes
    -----
    Burkholz & Dubatovka 2019 Thm. 5 (the correlation of relu(h1), relu(h2) for standard bivariate normal h with
    correlation rho), eq. 9 (the exact mean inner product) and eq. 10 (its linear interpolation);
    points: simulation of pairs on the CPU, mean +- one standard error (delta method for the
    correlation: (1 - r^2) / sqrt(n)).
    """
    rho = np.linspace(-1.0, 1.0, 401)
    rho_mc = np.linspace(-0.9, 0.9, by_size(size, smoke=3, default=7, full=7))
    n = by_size(size, smoke=4_000, default=100_000, full=400_000)
    cor_mc, cor_se, ip_mc, ip_se = [], [], [], []
    for r, rng in zip(progress(rho_mc, desc="fig_thm5"), streams(seed, rho_mc.size)):
        a = rng.standard_normal(n)
        b = r * a + np.sqrt(1 - r * r) * rng.standard_normal(n)
        a, b = np.maximum(a, 0), np.maximum(b, 0)
        cor = np.corrcoef(a, b)[0, 1]
        cor_mc.append(cor)
        cor_se.append((1 - cor**2) / np.sqrt(n))
        ip_mc.append(np.mean(a * b))
        ip_se.append(np.std(a * b, ddof=1) / np.sqrt(n))
    fig, axes = plt.subplots(1, 2, figsize=(9.5, 4.0), layout="constrained")
    axes[0].plot(rho, fw.relu_correlation(rho), label="Thm. 5: Cor(relu($h_1$), relu($h_2$))")
    axes[0].plot(rho, rho, "k:", lw=0.8, label="identity")
    axes[0].errorbar(
        rho_mc, cor_mc, yerr=cor_se, fmt="o", ms=4, capsize=2, label=f"simulation ({n} pairs), $\\pm$ s.e."
    )
    axes[0].set_xlabel(r"pre-activation correlation $\rho$")
    axes[0].set_ylabel("post-activation correlation")
    axes[0].legend(fontsize=7)
    axes[0].set_title(r"(a) below the identity only for $\rho > 0$", fontsize=8)
    exact = fw.mean_inner_product(1, 1.0, 1.0, rho)
    axes[1].plot(rho, exact, label="eq. 9 (exact)")
    axes[1].plot(rho, (rho + 1) / 4, "--", label=r"eq. 10: $(\rho + 1) / 4$")
    axes[1].errorbar(rho_mc, ip_mc, yerr=ip_se, fmt="o", ms=4, capsize=2, label="simulation, $\\pm$ s.e.")
    axes[1].set_xlabel(r"pre-activation correlation $\rho$")
    axes[1].set_ylabel(r"$E\langle x_1, x_2\rangle / (N \sqrt{v_{11} v_{22}})$")
    axes[1].set_title("(b) mean inner product after one ReLU layer", fontsize=8)
    axes[1].legend(fontsize=7)
    title(
        fig,
        PAPER,
        fig_thm5.figure,
        "ReLU correlation map and mean inner product",
        f"standard bivariate normal pre-activations; {rho_mc.size} simulated correlations, {n} pairs each",
    )
    data = {
        "rho": rho,
        "correlation": fw.relu_correlation(rho),
        "mean_inner_exact": exact,
        "mean_inner_eq10": (rho + 1) / 4,
        "rho_mc": rho_mc,
        "correlation_mc": np.array(cor_mc),
        "correlation_mc_stderr": np.array(cor_se),
        "mean_inner_mc": np.array(ip_mc),
        "mean_inner_mc_stderr": np.array(ip_se),
    }
    params = {"activation": "relu", "pairs": n, "rho_mc": rho_mc, "v11": 1.0, "v22": 1.0}
    return save_figure(
        fig,
        out_dir,
        "burkholz2019_fig_thm5",
        data,
        params=params,
        units={"correlation": "dimensionless", "mean_inner_exact": "per neuron, per unit variance"},
    )


# --- trained networks: meanfield.validation.trainability runs, drawn by figures/_training.py ---


@figure(paper=PAPER, figure="Fig. 3", honours_backend=False)
def fig_3(out_dir, *, size, backend, seed):
    """Test accuracy against depth of ReLU networks: He against GSM and orthogonal looks-linear.

    Notes
    -----
    Burkholz & Dubatovka 2019 Sec. 4, Fig. 3 (MNIST, widths 100-500, depths 1-10, 10^4 SGD steps): GSM and orthogonal
    looks-linear initialisation (Sec. 3) train deeper ReLU networks than He. Here the embedded
    digits; bars are 95 % confidence intervals of the mean over networks.
    """
    what = "looks-linear / GSM vs He on deep ReLU networks"
    return _training.relu_depth_figure(fig_3, out_dir, "looks_linear", "SGD", size, seed, what)


@figure(paper=PAPER, figure="Fig. 4 (training accuracy; CIFAR-10 not run)", honours_backend=False)
def fig_4(out_dir, *, size, backend, seed):
    """Training accuracy of the runs of :func:`fig_3` (the paper's Fig. 4 repeats Fig. 3 on CIFAR-10).

    Notes
    -----
    CIFAR-10 cannot be downloaded at run time; this figure shows the training accuracy of the
    digits runs, so the CIFAR-10 claim itself is not tested (docs/training.md).
    """
    return _training.relu_depth_figure(
        fig_4,
        out_dir,
        "looks_linear",
        "SGD",
        size,
        seed,
        "training accuracy (CIFAR-10 of the paper not run)",
        key="train_accuracy",
        ylabel="training accuracy",
        notes="the paper's Fig. 4 uses CIFAR-10; not available offline",
    )


def _fig_2_samples(n, c, n_samples, rng):
    """One curve of :func:`fig_2`: exact cosine-similarity samples (float32) for width ``n`` and <x1, x2> = ``c``."""
    return fw.cosine_similarity_samples(n, c, n_samples=n_samples, rng=rng, dtype=np.float32)
