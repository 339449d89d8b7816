"""Figures of Orhan (2017), seed 004: binary-weight landscapes and linear learning dynamics.

- ``fig_4``: the four toy landscapes (Sec. 2.2): distribution of better neighbours, adaptive-walk
  lengths and basin sizes (three panels).
- ``fig_s1``: the same with fixed N(0, 1) biases (Supp. Fig. S1).
- ``fig_5``: evolution of ``a^1``, ``a^2`` in three-layer linear plain and residual nets
  (eqs. 11-18): (a) small random initialisation, (b) equalised initial norms.
- ``fig_6``: (a) phase portraits of the two-layer mode-strength flows (eqs. 21-23) with the
  saddles (0, 0), (-1, -1), (-1, -2); (b) ``prod_l (a_l + c_l)`` for 10-layer nets.
"""

from __future__ import annotations

import math

import numpy as np

from meanfield import landscape as L

from ._common import plt, progress, save_figure

__all__ = ["FIGURES", "fig_4", "fig_5", "fig_6", "fig_s1"]

ORDER = ["plain", "path_residual", "residual", "hyper_residual"]
COLORS = {"plain": "tab:blue", "path_residual": "tab:green", "residual": "tab:red", "hyper_residual": "tab:purple"}


def _landscape_figure(out_dir, name, full, seed, random_biases):
    grid = 10 if full else 5
    task = L.regression_task(grid_size=grid, rng=seed)
    biases = np.random.default_rng(seed + 1).standard_normal((6, 2)) if random_biases else None
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    data = {"grid_size": grid, "seed": seed, "biases": biases, "architectures": {}}
    for arch in progress(ORDER, desc=name):
        r = L.binary_landscape(arch, task.inputs, task.targets, biases=biases, output_bias_bit=full)
        hb = r.better_histogram()
        hw = r.walk_histogram()
        sizes = np.sort(r.basin_sizes)
        axes[0].semilogy(np.arange(hb.size), np.where(hb > 0, hb, np.nan), "o-", ms=3, color=COLORS[arch], label=f"{arch} ({r.n_local_minima} minima)")
        axes[1].semilogy(np.arange(hw.size), np.where(hw > 0, hw, np.nan), "o-", ms=3, color=COLORS[arch], label=arch)
        bins = np.logspace(0, math.log10(max(sizes.max(), 2)) + 0.1, 30)
        axes[2].hist(sizes, bins=bins, histtype="step", color=COLORS[arch], label=arch)
        data["architectures"][arch] = {
            "n_params": r.n_params,
            "n_local_minima": r.n_local_minima,
            "n_strict_local_minima": r.n_strict_local_minima,
            "n_zero_output": r.n_zero_output,
            "n_tied_configurations": r.n_tied_configurations,
            "better_histogram": hb,
            "walk_histogram": hw,
            "basin_sizes_sorted": sizes[-2000:],
            "mean_walk_length": float(r.walk_length.mean()),
            "mean_basin_size": float(r.basin_sizes.mean()),
        }
    axes[0].set_xlabel("number of better neighbours")
    axes[0].set_ylabel("configurations")
    axes[1].set_xlabel("adaptive-walk length")
    axes[2].set_xlabel("basin size")
    axes[2].set_xscale("log")
    axes[2].set_yscale("log")
    axes[2].set_ylabel("local minima")
    axes[0].legend(fontsize=7)
    bits = 23 if full else 22
    fig.suptitle(f"binary toy nets, {bits} bits, {grid}x{grid} grid" + (", N(0,1) biases" if random_biases else ""))
    return save_figure(fig, out_dir, f"orhan2017_{name}", data)


def fig_4(out_dir, full=False, backend="numpy", seed=0):
    """Fig. 4: better neighbours, adaptive walks, basin sizes of the four toy landscapes."""
    return _landscape_figure(out_dir, "fig_4", full, seed, random_biases=False)


def fig_s1(out_dir, full=False, backend="numpy", seed=0):
    """Fig. S1: as Fig. 4 with fixed biases drawn from N(0, 1)."""
    return _landscape_figure(out_dir, "fig_s1", full, seed, random_biases=True)


def fig_5(out_dir, full=False, backend="numpy", seed=0):
    """Fig. 5: a^1, a^2 versus iteration in three-layer linear plain (blue) and residual (red) nets.

    Gradient descent with learning rate ``eta`` is integrated as the gradient flow at ``t = k eta``;
    (a) weights ~ N(0, 1e-4^2), eta = 0.1; (b) plain a^alpha = [1, 1]/sqrt 2, b^alpha = [1, -1]/sqrt 2,
    residual all zero, eta = 0.01; s = (3, 1.5), u = v = [[1, 1], [1, -1]]/sqrt 2.
    """
    s = np.array([3.0, 1.5])
    uv = np.array([[1.0, 1.0], [1.0, -1.0]]) / math.sqrt(2)
    rng = np.random.default_rng(seed)
    n_pts = 801 if full else 201
    setups = {
        "a": dict(lr=0.1, steps=150, plain=(rng.normal(0, 1e-4, (2, 2)), rng.normal(0, 1e-4, (2, 2)))),
        "b": dict(lr=0.01, steps=600, plain=(np.full((2, 2), 1 / math.sqrt(2)), np.array([[1.0, 1.0], [-1.0, -1.0]]) / math.sqrt(2))),
    }
    setups["a"]["residual"] = setups["a"]["plain"]
    setups["b"]["residual"] = (np.zeros((2, 2)), np.zeros((2, 2)))
    fig, axes = plt.subplots(2, 2, figsize=(9, 6.5))
    data = {"s": s, "u": uv, "v": uv}
    for row, (panel, cfg) in enumerate(progress(list(setups.items()), desc="fig_5")):
        it = np.linspace(0, cfg["steps"], n_pts)
        t = it * cfg["lr"]
        plain = L.three_layer_flow(*cfg["plain"], s, t)
        res = L.three_layer_flow(*cfg["residual"], s, t, uv, uv)
        for mode in range(2):
            ax = axes[row, mode]
            ax.plot(it, plain.a[:, :, mode], color="tab:blue")
            ax.plot(it, res.a[:, :, mode], color="tab:red")
            ax.set_title(f"({panel}) $a^{mode + 1}$, learning rate {cfg['lr']}")
            ax.set_xlabel("iteration")
        axes[row, 0].plot([], [], color="tab:blue", label="plain")
        axes[row, 0].plot([], [], color="tab:red", label="residual")
        axes[row, 0].legend(fontsize=8)
        data[panel] = {"iteration": it, "lr": cfg["lr"], "plain_a": plain.a, "plain_b": plain.b, "plain_energy": plain.energy,
                       "residual_a": res.a, "residual_b": res.b, "residual_energy": res.energy}
    fig.tight_layout()
    return save_figure(fig, out_dir, "orhan2017_fig_5", data)


def fig_6(out_dir, full=False, backend="numpy", seed=0):
    """Fig. 6: (a) phase portraits of eqs. 21-23 for two weight layers; (b) 10-layer products."""
    s = 2.0
    n_grid = 41 if full else 25
    g = np.linspace(-3, 3, n_grid)
    fig, axes = plt.subplots(1, 4, figsize=(16, 3.8))
    data = {"s": s, "grid": g}
    for ax, arch in zip(axes[:3], ["plain", "residual", "hyper_residual"]):
        da = np.zeros((n_grid, n_grid))
        db = np.zeros((n_grid, n_grid))
        for i, bv in enumerate(g):
            for j, av in enumerate(g):
                grad = L.mode_gradient([av, bv], s, arch)
                da[i, j], db[i, j] = -grad
        ax.streamplot(g, g, da, db, color="0.45", density=1.1, linewidth=0.7)
        c = L.mode_offsets(arch, 2)
        xs = np.linspace(-3, 3, 400)
        with np.errstate(divide="ignore", invalid="ignore"):
            ys = s / (xs + c[0]) - c[1]
        ys[np.abs(xs + c[0]) < 0.05] = np.nan
        ax.plot(xs, ys, "k--", lw=1, label="$E = 0$")
        p = L.mode_saddle(arch, 2)
        ax.plot(*p, "r*", ms=12, label=f"saddle {tuple(int(v) for v in p)}")
        ax.set_xlim(-3, 3)
        ax.set_ylim(-3, 3)
        ax.set_xlabel("a")
        ax.set_ylabel("b")
        ax.set_title(f"{arch}, s = {s}")
        ax.legend(fontsize=7, loc="lower left")
        data[arch] = {"da": da, "db": db, "saddle": p}
    rng = np.random.default_rng(seed)
    a0 = rng.normal(0, 0.1, 9)
    t = np.concatenate([[0.0], np.logspace(-5, 2, 1001 if full else 301)])
    ax = axes[3]
    s10 = 3.0
    data["fig_6b"] = {"t": t, "s": s10, "a0": a0}
    for arch in progress(["plain", "residual", "hyper_residual"], desc="fig_6b"):
        tr = L.mode_flow(a0, s10, t, arch)
        ax.semilogx(t[1:], tr.product[1:], label=arch)
        data["fig_6b"][arch] = {"product": tr.product, "u": tr.u}
    ax.axhline(s10, color="k", ls=":", lw=1)
    ax.set_xlabel("t")
    ax.set_ylabel(r"$\prod_l (a_l + c_l)$")
    ax.set_ylim(-0.5, 2 * s10)
    ax.set_title("(b) 10-layer linear nets")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return save_figure(fig, out_dir, "orhan2017_fig_6", data)


FIGURES = {"fig_4": fig_4, "fig_s1": fig_s1, "fig_5": fig_5, "fig_6": fig_6}
