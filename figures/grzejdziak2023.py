"""Figures of Grzejdziak, Loog & Tax (2023), seed 002: vanishing empirical variance.

- ``fig_1``: 0.9 / 0.99 / 0.999 quantiles of the output empirical variance over random networks of
  width 10 and depth 100 versus depth (log scale), for He, Glorot, orthogonal, GSM, ZerO, ZerO* and
  MetaInit (seed 002 Fig. 1; inputs: the embedded digits data standardised per feature instead of
  CIFAR-10; 1,000 networks on 256 images by default, 10,000 networks on all 1,797 images with
  ``--full``; MetaInit 4 / 200 networks, ~3 s of CPU each).
- ``fig_kurtosis``: kurtosis versus depth from Prop. 4.3 (lines) with Monte-Carlo points, for
  widths 2, 10, 50 and Gaussian / uniform / Rademacher weights (ReLU).
- ``fig_spectral_radius``: ``rho(A) - 1`` of the transition matrix versus width (Lemma 4.5).
"""

from __future__ import annotations

import numpy as np

from meanfield import kurtosis
from meanfield.validation._kurtosis_networks import layer_moments
from meanfield.validation.kurtosis import FIG1_DEPTH, FIG1_THRESHOLD, KAPPA_MAX, fig1_variances

from ._common import plt, progress, save_figure

__all__ = ["FIGURES", "fig_1", "fig_kurtosis", "fig_spectral_radius"]

QUANTILES = (0.9, 0.99, 0.999)
_LABELS = {
    "he": "He",
    "glorot": "Glorot",
    "orthogonal": "orthogonal",
    "gsm": "GSM",
    "zero": "ZerO",
    "zero_star": "ZerO*",
    "metainit": "MetaInit",
}


def fig_1(out_dir, full=False, backend="numpy", seed=0, *, n_networks=None, n_inputs=None, n_metainit=None, metainit_steps=500):
    """Quantiles of the output empirical variance versus depth for seven initialisers (seed 002 Fig. 1).

    ``n_networks`` / ``n_inputs`` / ``n_metainit`` / ``metainit_steps`` override the sizes (tests
    use small ones).
    """
    var = fig1_variances(
        full=full, backend=backend, seed=seed, n_networks=n_networks, n_inputs=n_inputs, n_metainit=n_metainit, metainit_steps=metainit_steps
    )
    depth = np.arange(next(iter(var.values())).shape[1])
    fig, axes = plt.subplots(2, 4, figsize=(15, 6.5), sharex=True)
    axes.ravel()[-1].set_axis_off()
    data = {"depth": depth, "quantiles": QUANTILES, "threshold": FIG1_THRESHOLD, "claim_depth": FIG1_DEPTH}
    for ax, (init, v) in zip(axes.ravel(), var.items()):
        q = np.quantile(v, QUANTILES, axis=0)
        for qq, p in zip(q, QUANTILES):
            ax.plot(depth, np.maximum(qq, 1e-300), label=f"{p}")
        frac = float(np.mean(v[:, FIG1_DEPTH] < FIG1_THRESHOLD))
        ax.axhline(FIG1_THRESHOLD, color="k", ls=":", lw=0.8)
        ax.axvline(FIG1_DEPTH, color="k", ls=":", lw=0.8)
        ax.set_yscale("log")
        ax.set_title(f"{_LABELS[init]} ({v.shape[0]} nets): P(S$^2_{{80}}$ < 1e-3) = {frac:.3f}", fontsize=9)
        data[init] = {
            "quantiles": q,
            "fraction_below_threshold_at_80": frac,
            "fraction_above_input_at_80": float(np.mean(v[:, FIG1_DEPTH] > v[:, 0])),
            "median": np.median(v, axis=0),
            "n_networks": v.shape[0],
        }
        # "all quantiles decrease monotonically after 40 layers": fraction of decreasing steps
        data[init]["decreasing_steps_after_40"] = np.mean(np.diff(q[:, 40:], axis=1) < 0, axis=1)  # per quantile
    axes[0, -1].xaxis.set_tick_params(labelbottom=True)
    for ax in list(axes[1]) + [axes[0, -1]]:
        ax.set_xlabel("layer $l$")
    for ax in axes[:, 0]:
        ax.set_ylabel("empirical variance quantile")
    axes[0, 0].legend(title="quantile", fontsize=7)
    fig.suptitle("Width 10 ReLU networks on standardised digits: quantiles over networks")
    return save_figure(fig, out_dir, "grzejdziak2023_fig_1", data)


def fig_kurtosis(out_dir, full=False, backend="numpy", seed=0, *, scale=None):
    """Kurtosis growth with depth: Prop. 4.3 (lines) and Monte-Carlo (points, where kappa <= KAPPA_MAX).

    ``scale`` multiplies the numbers of networks (default 1, 4 with ``full``).
    """
    depth = 20
    laws = ("gaussian", "uniform", "rademacher")
    widths = (2, 10, 50)
    scale = scale or (4 if full else 1)
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.8), sharey=True)
    data = {"depth": np.arange(depth + 1), "kappa_max_compared": KAPPA_MAX}
    jobs = [(w, law) for w in widths for law in laws]
    for k, (w, law) in enumerate(progress(jobs, desc="fig_kurtosis")):
        ax = axes[widths.index(w)]
        th = kurtosis.propagate(3.0, 0.0, [w] * depth, 0.0, kurtosis.weight_kurtosis(law))
        line = ax.plot(th.kappa, label=f"{law} ($\\kappa_w$={kurtosis.weight_kurtosis(law)})")[0]
        last = int(np.max(np.nonzero(th.kappa <= KAPPA_MAX)[0]))
        n_net = max(2, int(scale * {2: 20_000, 10: 10_000, 50: 2_000}[w]))
        sim = layer_moments([w] * (last + 1), 0.0, law, n_net, backend=backend, rng=np.random.SeedSequence(seed, spawn_key=(k,)))
        mc = sim.m4.mean(axis=0)
        se = sim.m4.std(axis=0, ddof=1) / np.sqrt(n_net)
        ax.errorbar(np.arange(last + 1), mc, yerr=np.minimum(2.0 * se, 0.9 * mc), fmt="o", ms=3, color=line.get_color())
        data[f"w{w}_{law}"] = {"theory": th.kappa, "log_theory": th.log_kappa, "mc": mc, "mc_stderr": se, "n_networks": n_net}
    for ax, w in zip(axes, widths):
        ax.set_yscale("log")
        ax.set_title(f"width {w}, ReLU, Gaussian inputs")
        ax.set_xlabel("layer $l$")
    axes[0].set_ylabel(r"kurtosis $\kappa_l$")
    axes[0].legend(fontsize=7)
    fig.suptitle(f"Prop. 4.3 (lines) and Monte-Carlo (points, error bars 2 s.e.; shown where $\\kappa \\leq$ {KAPPA_MAX:g})")
    return save_figure(fig, out_dir, "grzejdziak2023_fig_kurtosis", data)


def fig_spectral_radius(out_dir, full=False, backend="numpy", seed=0):
    """``rho(A) - 1`` versus width for several slopes and weight laws (Lemma 4.5: always > 0)."""
    widths = np.unique(np.logspace(np.log10(2), 5, 400 if full else 120).astype(int))
    fig, ax = plt.subplots(figsize=(6, 4.2))
    data = {"width": widths}
    for a in (0.0, 0.1, 1.0):
        for law in ("gaussian", "uniform", "rademacher"):
            kw = kurtosis.weight_kurtosis(law)
            gap = np.array([kurtosis.trace_determinant(int(w), a, kw).gap for w in widths])
            ax.loglog(widths, gap, label=f"a={a}, {law}", ls={0.0: "-", 0.1: "--", 1.0: ":"}[a])
            data[f"a{a}_{law}"] = gap
    ax.set_xlabel("width $w$")
    ax.set_ylabel(r"$\rho(A) - 1$")
    ax.set_title("Lemma 4.5: the spectral radius of $A^{(l)}$ exceeds 1 at every width")
    ax.legend(fontsize=6, ncol=2)
    return save_figure(fig, out_dir, "grzejdziak2023_fig_spectral_radius", data)


FIGURES = {"fig_1": fig_1, "fig_kurtosis": fig_kurtosis, "fig_spectral_radius": fig_spectral_radius}
