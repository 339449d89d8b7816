"""Figures of Grzejdziak, Loog & Tax (2023), Grzejdziak 2023: vanishing empirical variance.

- ``fig_1``: 0.9 / 0.99 / 0.999 quantiles of the output empirical variance over random networks of
  width 10 and depth 100 versus depth (log scale), for He, Glorot, orthogonal, GSM, ZerO, ZerO* and
  MetaInit (Grzejdziak 2023 Fig. 1; inputs: the embedded digits data standardised per feature instead of
  CIFAR-10; 1,000 networks on 256 images by default, 10,000 networks on all 1,797 images with
  ``size="full"``; MetaInit 4 / 200 networks, ~3 s of CPU each), and an eighth panel with the
  fraction of networks below the paper's threshold at layer 80.
- ``fig_kurtosis`` (not a figure of the paper): kurtosis versus depth from Prop. 4.3 (lines) with
  Monte-Carlo points, for widths 2, 10, 50 and Gaussian / uniform / Rademacher weights (ReLU).
- ``fig_spectral_radius`` (not a figure of the paper): ``rho(A) - 1`` of the transition matrix
  versus width (Lemma 4.5).

Every figure writes ``grzejdziak2023_NAME.png`` and ``.json`` (metadata block, named axes; read it
back with :func:`meanfield.figures.load`).
"""

from __future__ import annotations

import math

import numpy as np
from matplotlib.ticker import MaxNLocator

from meanfield import kurtosis
from meanfield.backend import substream
from meanfield.checks import check_scalar
from meanfield.data import load_digits
from meanfield.simulate import (
    FIG1_DEPTH,
    FIG1_FRACTION,
    FIG1_STREAM,
    FIG1_THRESHOLD,
    KAPPA_MAX,
    empirical_variances,
    fig1_variances,
    layer_moments,
)
from meanfield.train.experiment import kurtosis_rank_test

from . import _training
from ._common import by_size, colors, figure, plt, progress, registered, rng_kwargs, save_figure
from ._logzero import plot_with_zeros, zero_band, zero_floor

__all__ = [
    "FIGURES",
    "PAPER",
    "fig_1",
    "fig_2",
    "fig_kurtosis",
    "fig_kurtosis_accuracy",
    "fig_spectral_radius",
    "fig_zero_star",
]

#: How the figures' titles and metadata name the paper.
PAPER = "Grzejdziak et al. 2023"

#: The figures of this module, ``{name: function}`` (read-only; filled by their ``@figure`` declarations).
FIGURES = registered(__name__)

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
#: Fig. 1 network shape (the paper's).
FIG1_WIDTH, FIG1_NET_DEPTH = 10, 100
#: Stream of the single-unit protocol's He networks in :func:`fig_1` (``substream(seed, FIG1_UNIT_STREAM)``).
FIG1_UNIT_STREAM = 917
_QUANTILE_COLORS = ("tab:blue", "tab:orange", "tab:green")
_LAW_COLORS = {"gaussian": "tab:blue", "uniform": "tab:orange", "rademacher": "tab:green"}
#: Monte-Carlo error bars of ``fig_kurtosis``: this many standard errors.
KURTOSIS_BAR_SE = 2.0


#: Largest ``scale`` of ``fig_kurtosis`` (80 million simulated networks at width 2: hours).
MAX_SCALE = 1000.0


def _count(value, name: str, maximum: int) -> int:
    """An int in ``[1, maximum]``: ``TypeError`` for a non-int (bools included), ``ValueError`` outside."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int in [1, {maximum}], got {value!r}")
    if not 1 <= int(value) <= maximum:
        raise ValueError(f"{name} must be an int in [1, {maximum}], got {int(value)}")
    return int(value)


@figure(paper=PAPER, figure="Fig. 1 (digits instead of CIFAR-10)", honours_backend=True)
def fig_1(out_dir, *, size, backend, seed, n_networks=None, n_inputs=None, n_metainit=None, metainit_steps=None):
    """Quantiles of the output empirical variance versus depth for seven initialisers.

    Width-10, depth-100 ReLU networks (Grzejdziak's Fig. 1 setting) on the embedded 8 x 8 digits,
    standardised per feature (the paper uses CIFAR-10). For every initialiser the 0.9, 0.99 and
    0.999 quantiles over networks of the empirical variance ``S^2_l`` of layer ``l``'s outputs on the
    data set are drawn against ``l`` on a log scale, exact zeros (dead networks) in a grey band
    whose tick reads "0"; the last panel shows the fraction of networks with ``S^2_80 < 1e-3`` and its binomial
    standard error against the paper's claim (at least 0.9 for every random initialiser but MetaInit).
    Sizes: smoke 20 networks on 20 images (MetaInit 1 network, 2 steps); default 1,000 networks on
    256 images (MetaInit 4, 500 steps); full 10,000 networks on all 1,797 images (MetaInit 200).

    Parameters
    ----------
    n_networks, n_inputs, n_metainit, metainit_steps : int, optional
        Override the size's numbers of networks, input images, MetaInit networks and MetaInit steps.

    Notes
    -----
    Grzejdziak 2023, Sec. 6.1 and Fig. 1; the simulations are those of
    :func:`meanfield.simulate.fig1_variances` (the validation table checks the same
    claims). ``S^2_l`` is the pooled empirical variance (``ddof = 1``) of the ``10 x n`` entries of
    ``y^(l)`` over the ``n`` images, in units of the input features' variance (``S^2_0 = 1``).
    Two protocols are reported: the library pools all units (the panels); the authors'
    published code takes the variance of a single output unit, computed here for He on the same
    sizes (``he_unit_protocol_*`` in the JSON, the blue square of the last panel, the title).
    """
    sizes = {
        "n_networks": by_size(size, smoke=20, default=1_000, full=10_000),
        "n_inputs": by_size(size, smoke=20, default=256, full=1_797),
        "n_metainit": by_size(size, smoke=1, default=4, full=200),
        "metainit_steps": by_size(size, smoke=2, default=500, full=500),
    }
    limits = {"n_networks": 100_000, "n_inputs": 1_797, "n_metainit": 10_000, "metainit_steps": 100_000}
    given = {"n_networks": n_networks, "n_inputs": n_inputs, "n_metainit": n_metainit, "metainit_steps": metainit_steps}
    for key, value in given.items():
        if value is not None:
            sizes[key] = _count(value, key, limits[key])
    # the validation table's stream for Fig. 1: at the default size its Fig. 1 rows use the same numbers
    var = fig1_variances(backend=backend, depth=FIG1_NET_DEPTH, **sizes, rng=substream(seed, FIG1_STREAM))
    # the authors' protocol: the variance of ONE output unit over the data set, for He,
    # beside the library's protocol (all units pooled)
    x_unit = load_digits(standardized=True).x[: sizes["n_inputs"]]
    var_unit = empirical_variances(
        x_unit,
        "he",
        FIG1_NET_DEPTH,
        FIG1_WIDTH,
        sizes["n_networks"],
        backend=backend,
        protocol="unit",
        rng=substream(seed, FIG1_UNIT_STREAM),
        desc="fig1 he (single unit)",
    )
    unit_frac = float(np.mean(var_unit[:, FIG1_DEPTH] < FIG1_THRESHOLD))
    unit_se = math.sqrt(max(unit_frac * (1 - unit_frac), 1.0 / var_unit.shape[0]) / var_unit.shape[0])
    inits = list(var)
    depth = np.arange(FIG1_NET_DEPTH + 1)
    fig, axes = plt.subplots(2, 4, figsize=(15, 7.2), sharex=False)
    quantiles = np.empty((len(inits), len(QUANTILES), depth.size))
    fractions = np.empty(len(inits))
    fraction_se = np.empty(len(inits))
    n_nets = np.empty(len(inits), dtype=int)
    for i, (ax, init) in enumerate(zip(axes.ravel(), inits)):
        v = var[init]
        q = np.quantile(v, QUANTILES, axis=0)
        quantiles[i] = q
        n_nets[i] = v.shape[0]
        frac = float(np.mean(v[:, FIG1_DEPTH] < FIG1_THRESHOLD))
        fractions[i] = frac
        fraction_se[i] = math.sqrt(max(frac * (1 - frac), 1.0 / v.shape[0]) / v.shape[0])
        floor = zero_floor(q, FIG1_THRESHOLD)
        for qq, p, color in zip(q, QUANTILES, _QUANTILE_COLORS):
            plot_with_zeros(ax, depth, qq, floor, color=color, label=f"{p}")
        ax.axhline(FIG1_THRESHOLD, color="k", ls=":", lw=0.8)
        ax.axvline(FIG1_DEPTH, color="k", ls=":", lw=0.8)
        zero_band(ax, floor, q)
        ax.set_title(f"{_LABELS[init]} ({v.shape[0]:,} network{'s' if v.shape[0] > 1 else ''})", fontsize=9)
        ax.set_xlabel("layer $l$")
        ax.set_ylabel(r"$S^2_l$ quantile over networks")
    axes[0, 0].legend(title="quantile", fontsize=7, title_fontsize=7, loc="lower left")
    ax = axes[1, 3]
    x = np.arange(len(inits))
    ax.errorbar(x, fractions, yerr=2.0 * fraction_se, fmt="o", color="k", capsize=3)
    ax.errorbar(
        [0.25], [unit_frac], yerr=[2.0 * unit_se], fmt="s", color="tab:blue", capsize=3, label="He, single unit"
    )
    ax.axhline(FIG1_FRACTION, color="tab:red", ls="--", lw=1, label=f"paper's claim: $\\geq$ {FIG1_FRACTION}")
    ax.set_xticks(x, [_LABELS[i] for i in inits], rotation=45, ha="right", fontsize=8)
    ax.set_ylim(-0.05, 1.05)
    ax.set_xlabel("initialiser")
    ax.set_ylabel(f"fraction with $S^2_{{{FIG1_DEPTH}}} < 10^{{{int(math.log10(FIG1_THRESHOLD))}}}$")
    ax.set_title("claim at layer 80 (bars: 2 s.e.)", fontsize=9)
    ax.legend(fontsize=7, loc="center right")
    n_in = sizes["n_inputs"]
    fig.suptitle(
        f"{PAPER}, Fig. 1: quantiles of the output empirical variance $S^2_l$ over random ReLU networks\n"
        f"width {FIG1_WIDTH}, depth {FIG1_NET_DEPTH}, {sizes['n_networks']:,} networks per initialiser "
        f"(MetaInit {sizes['n_metainit']}, {sizes['metainit_steps']} steps) on {n_in:,} standardised 8x8 digits "
        f"(paper: CIFAR-10); dotted: $S^2 = 10^{{-3}}$ and layer {FIG1_DEPTH}\n"
        f"$S^2$ pools all units (library protocol); the authors' code uses one output unit: for He, fraction "
        f"with $S^2_{{{FIG1_DEPTH}}} < 10^{{-3}}$ = {fractions[inits.index('he')]:.3f} pooled vs {unit_frac:.3f} single unit",
        fontsize=10,
    )
    fig.tight_layout()
    data = {
        "layer": depth,
        "quantile_levels": np.array(QUANTILES),
        "initialisers": inits,
        "quantiles": quantiles,
        "median": np.stack([np.median(var[i], axis=0) for i in inits]),
        "n_networks": n_nets,
        "fraction_below_threshold_at_80": fractions,
        "fraction_below_threshold_at_80_stderr": fraction_se,
        "fraction_above_input_at_80": np.array([float(np.mean(var[i][:, FIG1_DEPTH] > var[i][:, 0])) for i in inits]),
        # "all quantiles decrease monotonically after 40 layers": fraction of decreasing steps per quantile
        "decreasing_steps_after_40": np.stack(
            [np.mean(np.diff(quantiles[k][:, 40:], axis=1) < 0, axis=1) for k in range(len(inits))]
        ),
        "he_unit_protocol_quantiles": np.quantile(var_unit, QUANTILES, axis=0),
        "he_unit_protocol_fraction_below_threshold_at_80": unit_frac,
        "he_unit_protocol_fraction_below_threshold_at_80_stderr": unit_se,
        "threshold": FIG1_THRESHOLD,
        "claim_layer": FIG1_DEPTH,
        "claim_fraction": FIG1_FRACTION,
    }
    axes_names = {
        "quantiles": ["initialiser", "quantile_level", "layer"],
        "median": ["initialiser", "layer"],
        "decreasing_steps_after_40": ["initialiser", "quantile_level"],
        "he_unit_protocol_quantiles": ["quantile_level", "layer"],
    }
    units = {
        "quantiles": "variance in units of the input features' variance (inputs standardised: S^2_0 = 1)",
        "median": "as quantiles",
        "threshold": "as quantiles",
        "fraction_below_threshold_at_80": "fraction of networks (0-1)",
        "fraction_below_threshold_at_80_stderr": "fraction of networks (0-1); binomial, floor 1/n",
        "fraction_above_input_at_80": "fraction of networks (0-1)",
        "decreasing_steps_after_40": "fraction of layer steps 40..100 (0-1)",
        "he_unit_protocol_quantiles": "as quantiles; variance of output unit 0 over the data set (authors' protocol)",
        "he_unit_protocol_fraction_below_threshold_at_80": "fraction of networks (0-1)",
        "he_unit_protocol_fraction_below_threshold_at_80_stderr": "fraction of networks (0-1); binomial, floor 1/n",
        "layer": "layer index l (0 = input)",
    }
    params = {
        "width": FIG1_WIDTH,
        "depth": FIG1_NET_DEPTH,
        "activation": "relu",
        "data": "digits 8x8, standardised per feature",
        "quantile_levels": list(QUANTILES),
        **sizes,
        "initialisers": inits,
    }
    return save_figure(
        fig,
        out_dir,
        "grzejdziak2023_fig_1",
        data,
        params=params,
        axes=axes_names,
        units=units,
        notes="S^2 exactly 0 (every output unit dead) is drawn in the grey band whose tick reads 0.",
    )


@figure(paper=PAPER, figure="not in the paper: Prop. 4.3 against simulation", honours_backend=True)
def fig_kurtosis(out_dir, *, size, backend, seed, scale=None):
    """Kurtosis growth with depth: Prop. 4.3 (lines) and Monte-Carlo (points with error bars).

    ReLU networks of constant width 2, 10 and 50 and depth 20, He-scaled i.i.d. weights of three laws
    (Gaussian, uniform, Rademacher), one Gaussian input per network. The kurtosis
    ``kappa_l = E[(y_i^(l))^4] / E[(y_i^(l))^2]^2`` of an output unit over random networks follows the
    recursion ``k^(l+1) = A^(l) k^(l)`` of Prop. 4.3 (lines); the points are the Monte-Carlo means of
    ``(y_i^(l))^4`` (He scaling keeps ``E (y_i^(l))^2 = 1``) over ``n`` networks, drawn up to the
    last layer where the theory is at most :data:`~meanfield.simulate.KAPPA_MAX` (beyond,
    the fourth moment is too heavy-tailed to estimate), with bars of 2 standard errors.
    Networks per width (2 / 10 / 50): smoke 200 / 100 / 20; default 20,000 / 10,000 / 2,000;
    full four times the default.

    Parameters
    ----------
    scale : float, optional
        Multiplies the size's numbers of networks (at least 2 networks are simulated).

    Notes
    -----
    Grzejdziak 2023, Prop. 4.3 (the matrix ``A^(l)``), Lemma 4.4.
    """
    if scale is not None:
        scale = check_scalar(scale, "scale")
        if not 0 < scale <= MAX_SCALE:
            raise ValueError(f"scale must lie in (0, {MAX_SCALE:g}], got {scale!r}")
    depth = 20
    laws = ("gaussian", "uniform", "rademacher")
    widths = (2, 10, 50)
    base = by_size(
        size,
        smoke={2: 200, 10: 100, 50: 20},
        default={2: 20_000, 10: 10_000, 50: 2_000},
        full={2: 80_000, 10: 40_000, 50: 8_000},
    )
    scale = 1.0 if scale is None else float(scale)
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.4), sharey=True)
    jobs = [(w, law) for w in widths for law in laws]
    children = np.random.SeedSequence(seed).spawn(len(jobs))
    theory = np.empty((len(widths), len(laws), depth + 1))
    log_theory = np.empty_like(theory)
    mc = np.full_like(theory, np.nan)
    mc_se = np.full_like(theory, np.nan)
    n_networks = np.empty((len(widths), len(laws)), dtype=int)
    last_compared = np.empty((len(widths), len(laws)), dtype=int)
    for (w, law), child in zip(progress(jobs, desc="fig_kurtosis"), children):
        i, j = widths.index(w), laws.index(law)
        ax = axes[i]
        kw = kurtosis.weight_kurtosis(law)
        th = kurtosis.propagate(3.0, 0.0, [w] * depth, 0.0, kw)
        ax.plot(np.arange(depth + 1), th.kappa, color=_LAW_COLORS[law], label=f"{law} ($\\kappa_w$ = {kw:g})")
        last = int(np.max(np.nonzero(th.kappa <= KAPPA_MAX)[0]))
        n_net = max(2, round(scale * base[w]))
        sim = layer_moments(
            [w] * (last + 1),
            0.0,
            law,
            n_net,
            backend=backend,
            **rng_kwargs(layer_moments, np.random.default_rng(child)),
        )
        m = sim.m4.mean(axis=0)
        se = sim.m4.std(axis=0, ddof=1) / math.sqrt(n_net)
        # a log axis cannot draw a bar below 0: a bar that reaches 0 runs off the bottom of the panel
        lower = np.where(m - KURTOSIS_BAR_SE * se > 0, KURTOSIS_BAR_SE * se, m * (1 - 1e-12))
        ax.errorbar(
            np.arange(last + 1), m, yerr=[lower, KURTOSIS_BAR_SE * se], fmt="o", ms=3, color=_LAW_COLORS[law], capsize=2
        )
        theory[i, j], log_theory[i, j] = th.kappa, th.log_kappa
        mc[i, j, : last + 1], mc_se[i, j, : last + 1] = m, se
        n_networks[i, j], last_compared[i, j] = n_net, last
    shown = np.concatenate([theory.ravel(), mc[np.isfinite(mc)]])
    for ax, w in zip(axes, widths):
        ax.set_yscale("log")
        ax.set_ylim(0.5 * shown.min(), 2.0 * shown.max())
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_title(f"width {w}: {n_networks[widths.index(w), 0]:,} networks per law", fontsize=9)
        ax.set_xlabel("layer $l$")
    for ax in axes:
        ax.set_ylabel(r"kurtosis $\kappa_l = E[y^4] / E[y^2]^2$ of an output unit")
    axes[0].legend(title="weight law", fontsize=7, title_fontsize=7)
    fig.suptitle(
        f"{PAPER} (not a figure of the paper): kurtosis over random ReLU networks, Prop. 4.3 (lines) "
        f"and Monte-Carlo (points, {KURTOSIS_BAR_SE:g} s.e. bars)\n"
        f"He-scaled i.i.d. weights, one Gaussian input per network, depth {depth}; points up to the layer where "
        f"$\\kappa_l \\leq$ {KAPPA_MAX:g}; a bar running off the bottom reaches 0",
        fontsize=10,
    )
    fig.tight_layout()
    data = {
        "layer": np.arange(depth + 1),
        "width": np.array(widths),
        "weight_law": list(laws),
        "weight_kurtosis": np.array([kurtosis.weight_kurtosis(law) for law in laws]),
        "theory": theory,
        "log_theory": log_theory,
        "mc": mc,
        "mc_stderr": mc_se,
        "n_networks": n_networks,
        "last_layer_compared": last_compared,
        "kappa_max_compared": KAPPA_MAX,
    }
    three = ["width", "weight_law", "layer"]
    axes_names = {
        "theory": three,
        "log_theory": three,
        "mc": three,
        "mc_stderr": three,
        "n_networks": ["width", "weight_law"],
        "last_layer_compared": ["width", "weight_law"],
    }
    units = {
        "theory": "dimensionless (E y^4 / (E y^2)^2)",
        "log_theory": "natural log of theory",
        "mc": "dimensionless; NaN beyond last_layer_compared",
        "mc_stderr": "standard error of mc",
        "layer": "layer index l (0 = input)",
    }
    params = {
        "depth": depth,
        "widths": list(widths),
        "weight_laws": list(laws),
        "activation": "relu",
        "slope": 0.0,
        "input": "gaussian (kappa0 = 3, c0 = 0)",
        "sigma_w2": "He: 2 / fan_in",
        "networks_per_width": {str(w): int(n_networks[i, 0]) for i, w in enumerate(widths)},
        "scale": scale,
        "error_bar_standard_errors": KURTOSIS_BAR_SE,
    }
    return save_figure(fig, out_dir, "grzejdziak2023_fig_kurtosis", data, params=params, axes=axes_names, units=units)


@figure(paper=PAPER, figure="not in the paper: Lemma 4.5", honours_backend=False)
def fig_spectral_radius(out_dir, *, size, backend, seed):
    """``rho(A) - 1`` versus width for several slopes and weight laws (Lemma 4.5: always > 0).

    The spectral radius of the 2 x 2 block of the kurtosis transition matrix ``A^(l)`` (Prop. 4.3)
    exceeds 1 at every width, so the kurtosis grows geometrically with depth however wide the
    network. Closed form, no simulation. Widths: 2 to 10^5, 30 (smoke), 120 (default), 400 (full)
    log-spaced integers.

    Notes
    -----
    Grzejdziak 2023, Lemma 4.5 (:func:`meanfield.kurtosis.trace_determinant`).
    """
    n_widths = by_size(size, smoke=30, default=120, full=400)
    widths = np.unique(np.logspace(np.log10(2), 5, n_widths).astype(int))
    slopes = (0.0, 0.1, 1.0)
    laws = ("gaussian", "uniform", "rademacher")
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    gap = np.empty((len(slopes), len(laws), widths.size))
    for i, a in enumerate(slopes):
        for j, law in enumerate(laws):
            kw = kurtosis.weight_kurtosis(law)
            gap[i, j] = [kurtosis.trace_determinant(int(w), a, kw).gap for w in widths]
            ax.loglog(
                widths,
                gap[i, j],
                label=f"a = {a:g}, {law}",
                ls={0.0: "-", 0.1: "--", 1.0: ":"}[a],
                color=_LAW_COLORS[law],
            )
    ax.set_xlabel("width $w$ (units per layer)")
    ax.set_ylabel(r"$\rho(A^{(l)}) - 1$ (spectral radius minus 1)")
    ax.set_title(
        f"{PAPER} (not a figure of the paper), Lemma 4.5:\nthe spectral radius of $A^{{(l)}}$ exceeds 1 at every width "
        "(a: negative slope)",
        fontsize=9,
    )
    ax.legend(fontsize=6, ncol=3, title="leaky-ReLU slope a, weight law", title_fontsize=6)
    data = {"width": widths, "slope": np.array(slopes), "weight_law": list(laws), "gap": gap}
    return save_figure(
        fig,
        out_dir,
        "grzejdziak2023_fig_spectral_radius",
        data,
        params={
            "widths": f"{widths.size} log-spaced integers from 2 to 1e5",
            "slopes": list(slopes),
            "weight_laws": list(laws),
        },
        axes={"gap": ["slope", "weight_law", "width"]},
        units={"gap": "dimensionless: rho(A) - 1", "width": "units per layer"},
    )


# --- trained networks: meanfield.train.experiment runs, drawn by figures/_training.py ---


def _zero_depth(func, out_dir, size, seed, keep, what):
    """Test accuracy against depth (min-max bars) of the initialisers ``keep`` (indices or a slice) of the
    ``zero`` runs of :mod:`meanfield.train.experiment` (Fig. 2 and supplement Figs. 2-3)."""
    return _training.relu_depth_figure(func, out_dir, "zero", "Adam", size, seed, what, keep=keep, bars="minmax")


@figure(paper=PAPER, figure="Fig. 2", honours_backend=False)
def fig_2(out_dir, *, size, backend, seed):
    """Test accuracy against depth of constant-width ReLU networks: He (three weight laws) vs ZerO.

    Notes
    -----
    Grzejdziak 2023 Sec. 6, Fig. 2 (CIFAR-10, width 10, depths 0-100, Adam 1e-4, 500 steps): random
    initialisations, whose empirical output variance vanishes with depth, fail in deep networks;
    ZerO does not. Bars: min and max over networks (as in the paper).
    """
    return _zero_depth(fig_2, out_dir, size, seed, slice(None, 4), "random initialisations vs ZerO over depth")


@figure(paper=PAPER, figure="supplement Figs. 2-3 (ZerO vs ZerO*)", honours_backend=False)
def fig_zero_star(out_dir, *, size, backend, seed):
    """Test accuracy against depth of ZerO and ZerO* (random first layer) beside He Gaussian.

    Notes
    -----
    Grzejdziak 2023, supplement Figs. 2-3: ZerO* (random first layer, ZerO elsewhere) is at least as good as
    ZerO, and keeps the input information that ZerO's truncated identities drop.
    """
    return _zero_depth(fig_zero_star, out_dir, size, seed, [0, 3, 4], "ZerO vs ZerO*")


@figure(paper=PAPER, figure="supplement Fig. 1 (kurtosis vs accuracy)", honours_backend=False)
def fig_kurtosis_accuracy(out_dir, *, size, backend, seed):
    """Test accuracy after training against the output kurtosis at initialisation (Prop. 4.3).

    Notes
    -----
    Grzejdziak 2023, supplement Fig. 1 (MNIST, CIFAR-10; widths and depths 5-50, Bernoulli / uniform /
    normal weights, Adam 1e-4, 500 steps): networks with a large output kurtosis at initialisation
    train badly. The kurtosis is the theory's (:func:`meanfield.kurtosis.propagate` from the
    training inputs' statistics), the accuracy the trained networks' (digits).
    """
    res = _training.experiment("kurtosis_accuracy", size, seed)
    p = res["params"]
    logk = res["log10_output_kurtosis"]
    acc = res["test_accuracy"].mean(axis=-1)
    fig, ax = plt.subplots(figsize=(5.8, 4.2), layout="constrained")
    for j, (label, col, mk) in enumerate(zip(res["labels"], colors(len(res["labels"])), "so^")):
        ax.plot(logk[..., j].ravel(), acc[..., j].ravel(), mk, ms=4, color=col, label=f"{label} weights")
    ax.axhline(0.1, color="0.6", ls=":", lw=0.8, label="chance")
    ax.set_xlabel(r"$\log_{10}$ output kurtosis at initialisation (Prop. 4.3)")
    ax.set_ylabel("test accuracy after training (mean over networks)")
    ax.set_ylim(0, 1)
    ax.legend(fontsize=7)
    test = kurtosis_rank_test(res)  # the statistic of validation row 8 (average ranks, one-sided p-value)
    rho = test.rho
    data = {k: v for k, v in res.items() if k != "params"}
    data["rank_correlation"] = rho
    data["rank_correlation_p_value"] = test.p_value
    axes = {
        "log10_output_kurtosis": ["width", "depth", "weight law"],
        "test_accuracy": ["width", "depth", "weight law", "network"],
    }
    return _training.title_and_save(
        fig_kurtosis_accuracy,
        fig,
        out_dir,
        res,
        data,
        axes,
        units={"test_accuracy": "fraction correct", "seconds": "s"},
        what=f"accuracy vs output kurtosis (Spearman rho {rho:+.2f}, one-sided p = {test.p_value:.1g})",
        details=(
            f"He ReLU nets, widths {list(res['widths'])} x depths {list(res['depths'])}, {p['steps']} Adam steps, "
            f"lr {p['lr']:g}, {p['n_networks']} nets each; digits ({size} size)"
        ),
    )
