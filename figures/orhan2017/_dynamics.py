"""Orhan 2017, Sec. 2.3: learning dynamics of linear plain and residual networks (Figs. 5, 6)."""

from __future__ import annotations

import math

import numpy as np
from matplotlib.ticker import FuncFormatter, NullLocator

from meanfield import landscape as L

from .._common import by_size, figure, plt, progress, save_figure
from ._shared import COLORS, LABELS, PAPER


@figure(paper=PAPER, figure="Fig. 5", honours_backend=False)
def fig_5(out_dir, *, size, backend, seed):
    """``a^1``, ``a^2`` versus iteration in three-layer linear plain (blue) and residual (red) nets.

    Gradient descent with learning rate ``eta`` is integrated as the gradient flow at ``t = k eta``
    (eqs. 11-14 plain, 15-18 residual); two hidden units, singular values ``s = (3, 1.5)``, skip
    vectors ``u = v = [[1, 1], [1, -1]] / sqrt 2``. (a) every weight drawn from N(0, 1e-4^2),
    ``eta = 0.1``, 150 iterations; (b) plain ``a^alpha = [1, 1] / sqrt 2``,
    ``b^alpha = [1, -1] / sqrt 2``, residual all zero (equal initial norms), ``eta = 0.01``, 600
    iterations. Output points per panel: 21 (smoke), 201 (default), 801 (full).

    Notes
    -----
    Orhan 2017, Sec. 2.3.1, eqs. 11-18, Fig. 5 (:func:`meanfield.landscape.three_layer_flow`).
    """
    s = np.array([3.0, 1.5])
    uv = np.array([[1.0, 1.0], [1.0, -1.0]]) / math.sqrt(2)
    rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])
    n_pts = by_size(size, smoke=21, default=201, full=801)
    init_sd = 1e-4
    b_plain = np.array([[1.0, 1.0], [-1.0, -1.0]]) / math.sqrt(2)
    setups = {
        "a": {
            "lr": 0.1,
            "steps": 150,
            "plain": (rng.normal(0, init_sd, (2, 2)), rng.normal(0, init_sd, (2, 2))),
            "init": f"every weight ~ N(0, {init_sd:g}^2)",
        },
        "b": {
            "lr": 0.01,
            "steps": 600,
            "plain": (np.full((2, 2), 1 / math.sqrt(2)), b_plain),
            "init": "plain a = [1, 1]/sqrt 2, b = [1, -1]/sqrt 2; residual all 0 (equal initial norms)",
        },
    }
    setups["a"]["residual"] = setups["a"]["plain"]
    setups["b"]["residual"] = (np.zeros((2, 2)), np.zeros((2, 2)))
    fig, axes = plt.subplots(2, 2, figsize=(10, 7.4))
    stacked = {
        k: []
        for k in ("iteration", "plain_a", "plain_b", "plain_energy", "residual_a", "residual_b", "residual_energy")
    }
    for row, (panel, cfg) in enumerate(progress(list(setups.items()), desc="fig_5")):
        it = np.linspace(0, cfg["steps"], n_pts)
        t = it * cfg["lr"]
        plain = L.three_layer_flow(*cfg["plain"], s, t)
        res = L.three_layer_flow(*cfg["residual"], s, t, uv, uv)
        for mode in range(2):
            ax = axes[row, mode]
            ax.plot(it, plain.a[:, :, mode], color="tab:blue")
            ax.plot(it, res.a[:, :, mode], color="tab:red")
            ax.set_title(
                f"({panel}) $a^{mode + 1}$ ($s_{mode + 1}$ = {s[mode]:g}), learning rate {cfg['lr']:g}", fontsize=9
            )
            ax.set_xlabel("gradient-descent iteration $k$ ($t = k \\eta$)")
            ax.set_ylabel(f"$a^{mode + 1}_i$ (one line per hidden unit $i$)")
        axes[row, 0].plot([], [], color="tab:blue", label="plain (eqs. 11-14)")
        axes[row, 0].plot([], [], color="tab:red", label="residual (eqs. 15-18)")
        axes[row, 0].legend(fontsize=8)
        for key, value in (
            ("iteration", it),
            ("plain_a", plain.a),
            ("plain_b", plain.b),
            ("plain_energy", plain.energy),
            ("residual_a", res.a),
            ("residual_b", res.b),
            ("residual_energy", res.energy),
        ):
            stacked[key].append(value)
    data = {
        "panel": list(setups),
        "learning_rate": np.array([c["lr"] for c in setups.values()]),
        "initialisation": [c["init"] for c in setups.values()],
        "s": s,
        "u": uv,
        "v": uv,
        **{k: np.stack(v) for k, v in stacked.items()},
    }
    four = ["panel", "point", "hidden_unit", "mode"]
    axes_names = {
        "u": ["mode", "component"],
        "v": ["mode", "component"],
        "iteration": ["panel", "point"],
        "plain_energy": ["panel", "point"],
        "residual_energy": ["panel", "point"],
        "plain_a": four,
        "plain_b": four,
        "residual_a": four,
        "residual_b": four,
    }
    fig.suptitle(
        f"{PAPER}, Fig. 5: learning dynamics of three-layer linear networks with 2 hidden units\n"
        f"singular values $s$ = (3, 1.5), skip vectors $u = v = [1, \\pm 1]/\\sqrt{{2}}$; (a) N(0, {init_sd:g}$^2$) weights; "
        f"(b) equal initial norms",
        fontsize=10,
    )
    fig.tight_layout()
    return save_figure(
        fig,
        out_dir,
        "orhan2017_fig_5",
        data,
        params={
            "s": s.tolist(),
            "hidden_units": 2,
            "u": uv.tolist(),
            "v": uv.tolist(),
            "output_points": n_pts,
            "panels": {
                p: {"learning_rate": c["lr"], "iterations": c["steps"], "initialisation": c["init"]}
                for p, c in setups.items()
            },
            "integrator": "scipy.integrate.solve_ivp, rtol 1e-9, atol 1e-12",
        },
        axes=axes_names,
        units={
            "iteration": "gradient-descent iterations k (flow time t = k * learning_rate)",
            "plain_a": "a^alpha_i at each output point (plain_b, residual_a, residual_b alike)",
            "plain_energy": "eq. 10 energy (residual_energy alike)",
        },
    )


@figure(paper=PAPER, figure="Fig. 6", honours_backend=False)
def fig_6(out_dir, *, size, backend, seed):
    """Phase portraits of eqs. 21-23 for two weight layers (a, ``s = 2``) and 10-layer products (b, ``s = 3``).

    (a) The gradient flow of ``E = (s - (a + c_1)(b + c_2))^2 / 2`` for the plain (``c = (0, 0)``),
    residual (``c = (1, 1)``) and hyper-residual (``c = (1, 2)``) energies, with the minima
    ``(a + c_1)(b + c_2) = s`` (dashed) and the saddle (star). (b) ``u = prod_l (a_l + c_l)`` of
    10-layer networks (9 mode strengths from N(0, 0.1^2), the same for the three architectures)
    against the flow time ``t`` on a log axis from 1e-13 (the value there equals the value at
    ``t = 0`` to the plotted precision) to 1e3; the vertical axis is linear below 10 and
    logarithmic above, so the hyper-residual product, which starts near 9! and reaches ``s`` by
    ``t ~ 1e-9``, and the plain one, which stays near 0, are both visible.
    Grid of (a): 9 (smoke), 25 (default), 41 (full) points per axis; times of (b): 31, 301, 1,001.

    Notes
    -----
    Orhan 2017, Sec. 2.3.2, eqs. 21-23, Fig. 6 (:func:`meanfield.landscape.mode_flow`). The paper labels
    eq. 22 ``E_hyperres`` and eq. 23 ``E_res``; offsets 1 (residual) and ``l`` (hyper-residual) follow
    the text.
    """
    s = 2.0
    n_grid = by_size(size, smoke=9, default=25, full=41)
    n_t = by_size(size, smoke=31, default=301, full=1001)
    density = by_size(size, smoke=0.4, default=1.1, full=1.1)  # streamlines: the slow part of a smoke render
    g = np.linspace(-3, 3, n_grid)
    archs = ["plain", "residual", "hyper_residual"]
    fig, axes = plt.subplots(1, 4, figsize=(18, 4.6), gridspec_kw={"width_ratios": [1, 1, 1, 1.25]})
    flow = np.zeros((len(archs), 2, n_grid, n_grid))
    saddles = np.zeros((len(archs), 2))
    for k, (ax, arch) in enumerate(zip(axes[:3], archs)):
        for i, bv in enumerate(g):
            for j, av in enumerate(g):
                flow[k, :, i, j] = -L.mode_gradient([av, bv], s, arch)
        ax.streamplot(g, g, flow[k, 0], flow[k, 1], color="0.45", density=density, linewidth=0.7)
        c = L.mode_offsets(arch, 2)
        xs = np.linspace(-3, 3, 400)
        with np.errstate(divide="ignore", invalid="ignore"):
            ys = s / (xs + c[0]) - c[1]
        ys[np.abs(xs + c[0]) < 0.05] = np.nan
        ax.plot(xs, ys, "k--", lw=1, label=f"minima: $(a + {c[0]:g})(b + {c[1]:g}) = s$")
        p = L.mode_saddle(arch, 2) + 0.0  # + 0.0: no "-0" in the label
        saddles[k] = p
        ax.plot(*p, "r*", ms=12, label=f"saddle ({p[0]:g}, {p[1]:g})")
        ax.set_xlim(-3, 3)
        ax.set_ylim(-3, 3)
        ax.set_xlabel("$a = a_1$ (mode strength, layer 1)")
        ax.set_ylabel("$b = a_2$ (mode strength, layer 2)")
        ax.set_title(f"(a) {LABELS[arch]}: $c = ({c[0]:g}, {c[1]:g})$, $s$ = {s:g}", fontsize=9)
        ax.legend(fontsize=7, loc="lower left")
    ax = axes[3]
    s10, n_weights, a_sd, t_min, t_max = 3.0, 9, 0.1, 1e-13, 1e3
    a0 = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0]).normal(0, a_sd, n_weights)
    t = np.concatenate([[0.0], np.logspace(math.log10(t_min), math.log10(t_max), n_t)])
    products, strengths = [], []
    for arch in progress(archs, desc="fig_6b"):
        tr = L.mode_flow(a0, s10, t, arch)
        ax.plot(
            t[1:],
            tr.product[1:],
            color=COLORS[arch],
            lw=2 if arch == "plain" else 1.5,
            label=f"{LABELS[arch]} (starts at {tr.product[0]:.3g})",
        )
        products.append(tr.product)
        strengths.append(tr.a)
    ax.axhline(s10, color="k", ls=":", lw=1, label=f"target $s$ = {s10:g}")
    ax.set_xscale("log")
    ax.set_yscale("symlog", linthresh=10.0, linscale=5.0)
    top = max(float(np.max(products)), 10.0)
    ax.set_ylim(-1.0, 2 * top)
    ax.set_yticks([0, 1, 2, 3, 5] + [10.0**k for k in range(1, math.floor(math.log10(top)) + 2)])
    ax.yaxis.set_major_formatter(
        FuncFormatter(lambda v, pos: f"{v:g}" if v < 10 else f"$10^{{{round(math.log10(v))}}}$")
    )
    ax.yaxis.set_minor_locator(NullLocator())
    ax.set_xlim(t_min, t_max)
    ax.set_xlabel("flow time $t$ (= iteration $\\times$ learning rate), log scale")
    ax.set_ylabel(r"$u = \prod_{l=1}^{9} (a_l + c_l)$ (linear below 10, log above)")
    ax.set_title(f"(b) 10-layer linear networks, $s$ = {s10:g}, $a_l(0) \\sim N(0, {a_sd:g}^2)$", fontsize=9)
    ax.legend(fontsize=7, loc="upper right")
    fig.suptitle(
        f"{PAPER}, Fig. 6: mode-strength dynamics of deep linear networks (eqs. 21-23; "
        f"$c_l$ = 0 plain, 1 residual, $l$ hyper-residual)",
        fontsize=10,
    )
    fig.tight_layout()
    data = {
        "architecture": archs,
        "grid": g,
        "s_a": s,
        "flow": flow,
        "saddle": saddles,
        "t": t,
        "s_b": s10,
        "a0": a0,
        "product": np.stack(products),
        "strengths": np.stack(strengths),
    }
    return save_figure(
        fig,
        out_dir,
        "orhan2017_fig_6",
        data,
        params={
            "a": {"s": s, "grid": f"{n_grid} x {n_grid} on [-3, 3]^2", "weights": 2, "streamline_density": density},
            "b": {
                "s": s10,
                "layers": 10,
                "mode_strengths": n_weights,
                "initial_sd": a_sd,
                "t": f"0 and {n_t} log-spaced times from {t_min:g} to {t_max:g}",
                "integrator": "scipy.integrate.solve_ivp LSODA, rtol 1e-9, atol 1e-12",
            },
        },
        axes={
            "flow": ["architecture", "component (da/dt, db/dt)", "b (grid index)", "a (grid index)"],
            "saddle": ["architecture", "coordinate (a, b)"],
            "product": ["architecture", "t"],
            "strengths": ["architecture", "t", "layer"],
        },
        units={
            "t": "flow time = iterations x learning rate (t[0] = 0)",
            "flow": "da/dt, db/dt = -grad E",
            "product": "u = prod_l (a_l + c_l), converges to s_b",
        },
    )
