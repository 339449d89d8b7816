"""Orhan 2017, Sec. 2.2: exhaustively enumerated binary-weight landscapes of the toy networks (Figs. 4, S1)."""

from __future__ import annotations

import math

import numpy as np
from matplotlib.ticker import MaxNLocator

from meanfield import landscape as L

from .._common import by_size, figure, plt, progress, save_figure
from .._logzero import plot_with_zeros, zero_band, zero_floor
from ._shared import COLORS, LABELS, ORDER, PAPER

#: Width of every hidden layer of the binary toy networks (the paper's).
TOY_WIDTH = 2


def _landscape_sizes(size):
    return {
        "n_layers": by_size(size, smoke=4, default=7, full=7),
        "grid_size": by_size(size, smoke=3, default=5, full=10),
        "output_bias_bit": by_size(size, smoke=False, default=False, full=True),
    }


def _basin_bins(largest: int) -> np.ndarray:
    """Logarithmic bin edges over integer basin sizes, no bin narrower than one integer."""
    edges = np.unique(np.round(np.logspace(0, math.log10(max(largest, 2)) + 0.05, 30)))
    return np.concatenate([edges - 0.5, [edges[-1] + 0.5]])


def _landscape_figure(out_dir, name, size, seed, random_biases):
    sz = _landscape_sizes(size)
    grid, n_layers, bias_bit = sz["grid_size"], sz["n_layers"], sz["output_bias_bit"]
    task = L.regression_task(grid_size=grid, rng=seed)
    bias_rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])
    biases = bias_rng.standard_normal((n_layers - 1, TOY_WIDTH)) if random_biases else None
    results = {
        arch: L.binary_landscape(
            arch, task.inputs, task.targets, biases=biases, n_layers=n_layers, output_bias_bit=bias_bit
        )
        for arch in progress(ORDER, desc=name)
    }
    n_params = next(iter(results.values())).n_params
    better = np.stack([r.better_histogram() for r in results.values()])
    walk_len = max(r.walk_histogram().size for r in results.values())
    walks = np.stack([np.pad(r.walk_histogram(), (0, walk_len - r.walk_histogram().size)) for r in results.values()])
    edges = _basin_bins(max(int(r.basin_sizes.max()) for r in results.values()))
    basins = np.stack([np.histogram(r.basin_sizes, bins=edges)[0] for r in results.values()])
    centres = np.sqrt((edges[:-1] + 0.5) * (edges[1:] - 0.5))  # geometric middle of the integers in a bin
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.6))
    panels = (
        (axes[0], np.arange(better.shape[1]), better),
        (axes[1], np.arange(walk_len), walks),
        (axes[2], centres, basins),
    )
    for ax, x, counts in panels:
        floor = zero_floor(counts)
        for arch, row in zip(results, counts):
            plot_with_zeros(
                ax,
                x,
                row,
                floor,
                marker="o",
                ms=3,
                color=COLORS[arch],
                label=f"{LABELS[arch]} ({results[arch].n_local_minima:,} local minima)",
            )
        zero_band(ax, floor, counts)
    axes[0].set_xlabel(f"better neighbours (of {n_params} single-bit flips)")
    axes[0].set_ylabel("configurations")
    axes[0].set_title("(left) number of better neighbours; 0 = local minimum", fontsize=9)
    axes[1].set_xlabel("adaptive-walk length [bit flips to a local minimum]")
    axes[1].set_ylabel("configurations")
    axes[1].set_title("(middle) lengths of adaptive walks", fontsize=9)
    axes[2].set_xscale("log")
    axes[2].set_xlabel("basin size [configurations]")
    axes[2].set_ylabel("local minima per bin")
    axes[2].set_title("(right) basin sizes of local minima (log bins)", fontsize=9)
    for ax in axes[:2]:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes[0].legend(fontsize=7, loc="lower center")
    which = "Fig. S1" if random_biases else "Fig. 4"
    fig.suptitle(
        f"{PAPER}, {which}: loss landscapes of toy ReLU networks with weights $\\pm 1$, evaluated exhaustively\n"
        f"{n_layers} layers of width {TOY_WIDTH}, {n_params} binary parameters ({2**n_params:,} configurations"
        f"{', incl. an output bias' if bias_bit else ''}); mean squared error on a random target function over a "
        f"{grid}x{grid} grid" + ("; fixed biases drawn from N(0, 1)" if random_biases else "; zero biases"),
        fontsize=10,
    )
    fig.tight_layout()
    data = {
        "architecture": list(results),
        "n_params": n_params,
        "n_local_minima": np.array([r.n_local_minima for r in results.values()]),
        "n_strict_local_minima": np.array([r.n_strict_local_minima for r in results.values()]),
        "n_zero_output": np.array([r.n_zero_output for r in results.values()]),
        "n_tied_configurations": np.array([r.n_tied_configurations for r in results.values()]),
        "mean_walk_length": np.array([float(r.walk_length.mean()) for r in results.values()]),
        "mean_basin_size": np.array([float(r.basin_sizes.mean()) for r in results.values()]),
        "better_histogram": better,
        "walk_histogram": walks,
        "basin_size_bin_edges": edges,
        "basin_size_histogram": basins,
        "largest_basin_sizes": {arch: np.sort(r.basin_sizes)[-100:][::-1] for arch, r in results.items()},
        "biases": biases,
        "targets": task.targets,
        "inputs": task.inputs,
    }
    axes_names = {
        "better_histogram": ["architecture", "better_neighbours"],
        "walk_histogram": ["architecture", "walk_length"],
        "basin_size_histogram": ["architecture", "basin_size_bin"],
        "inputs": ["grid_point", "coordinate"],
    }
    if biases is not None:
        axes_names["biases"] = ["layer", "unit"]
    return save_figure(
        fig,
        out_dir,
        f"orhan2017_{name}",
        data,
        params={
            **sz,
            "width": TOY_WIDTH,
            "n_params": n_params,
            "activation": "relu",
            "weights": "+-1",
            "loss": "mean squared error",
            "biases": "N(0, 1), fixed" if random_biases else "zero",
            "task": "random Fourier target on a grid in [-1, 1]^2 (meanfield.landscape.regression_task, seed = seed)",
            "tie_rtol": 1e-12,
        },
        axes=axes_names,
        units={
            "better_histogram": "configurations",
            "walk_histogram": "configurations",
            "basin_size_histogram": "local minima per bin",
            "basin_size_bin_edges": "configurations (integer bins)",
            "largest_basin_sizes": "configurations, the 100 largest basins per architecture, largest first",
            "mean_walk_length": "bit flips",
            "mean_basin_size": "configurations",
        },
        notes="Zero counts on the log axes are drawn in the grey band whose tick reads 0.",
    )


@figure(paper=PAPER, figure="Fig. 4", honours_backend=False)
def fig_4(out_dir, *, size, backend, seed):
    """Better neighbours, adaptive walks and basin sizes of the four binary toy landscapes.

    Every ``+-1`` configuration of the plain, path-residual, residual and hyper-residual toy
    networks (eqs. 1-4, width 2) is evaluated on a random regression target; left: how many of its
    single-bit-flip neighbours are better, middle: the length of the best-improvement walk to a local
    minimum, right: the basin sizes of the local minima. Zero counts are drawn in the grey band
    whose tick reads "0". Sizes: smoke 4 layers (10 bits) on a 3 x 3 grid; default 7 layers (22
    bits) on 5 x 5; full 7 layers plus an output-bias bit (23 bits, the paper's) on 10 x 10.

    Notes
    -----
    Orhan 2017, Sec. 2.2, eqs. 1-4, Fig. 4 (:func:`meanfield.landscape.binary_landscape`).
    """
    return _landscape_figure(out_dir, "fig_4", size, seed, False)


@figure(paper=PAPER, figure="Fig. S1", honours_backend=False)
def fig_s1(out_dir, *, size, backend, seed):
    """As :func:`fig_4` with fixed biases drawn from N(0, 1) (their own random stream).

    Notes
    -----
    Orhan 2017, Supp. Fig. S1.
    """
    return _landscape_figure(out_dir, "fig_s1", size, seed, True)
