"""Blumenfeld et al. 2020, App. G and J: symmetry breaking in LeakyNets (Figs. 9, 10 and 12)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from meanfield import init as mf_init
from meanfield import symmetry
from meanfield.simulate import LeakyNet, softmax_xent

from .._common import by_size, figure, plt, progress, save_figure
from .._logzero import plot_with_zeros, zero_band, zero_floor
from ._shared import DIGITS_DATA, GD_OPTIMISER, PAPER, _digits, _EngineRecord, _integer_xaxis, _train_full_batch

#: LeakyNets of Figs. 9-10: a description -> the kind of each of the 12 layers ("I" identity,
#: "1" averaging 11^T/n), layer 1 first.
LEAKY_CONFIGS = {
    "identity in all 12 layers": "IIIIIIIIIIII",
    "averaging in layers 3, 7, 11": "II1III1III1I",
    "averaging in the even layers": "I1I1I1I1I1I1",
    "averaging in all 12 layers": "111111111111",
}
#: LeakyNet of Figs. 9, 10, 12: channels, leaky-ReLU slope, relative gradient noise.
LEAKY_CHANNELS, LEAKY_RHO, LEAKY_NOISE = 8, 0.01, 1e-6
LEAKY_LR = 0.02


def _leaky_sizes(size):
    return {
        "n_images": by_size(size, smoke=16, default=128, full=256),
        "steps": by_size(size, smoke=3, default=30, full=100),
    }


@dataclass(frozen=True)
class _RatioRecord:
    """Perturbation ratios per recorded step and feature (Figs. 9-10)."""

    forward_ratio: np.ndarray  # (steps + 1, n_features)
    backward_ratio: np.ndarray
    loss: np.ndarray  # (steps + 1,) full-batch training loss


def _ratio_probe(kinds, x, y):
    """A trainer probe: forward and backward perturbation ratios of every feature on ``(x, y)``, measured
    with the NumPy simulator's forward and backward passes on the engine's current parameters."""
    sim = LeakyNet.initial(list(kinds), n=LEAKY_CHANNELS, n_input=1, n_classes=10, rho=LEAKY_RHO)
    names = sim.conv_names() + ["head", "bias"]  # the engine's parameter order

    def probe(net, params):
        for k, p in zip(names, params):
            sim.params[k] = mf_init.from_torch_layout(p) if p.ndim == 4 else p
        logits, feats = sim.forward(x, keep=True)
        _, dlog = softmax_xent(logits, y)
        _, betas = sim.backward(dlog, keep=True)
        fwd = [symmetry.perturbation_ratio(f) for f in feats]
        return np.array([fwd, [symmetry.perturbation_ratio(g) for g in betas]])

    return probe


@functools.lru_cache(maxsize=4)
def _leaky_runs(size, seed):
    """The LeakyNet runs of Figs. 9-10 on the one training engine (full-batch gradient descent with the
    computation-noise model); the ratios are measured by a probe at every step."""
    from meanfield.train import TrainingData
    from meanfield.train.symmetric import LeakyNetSpec, SymmetryBreaking

    data_ss, train_ss = np.random.SeedSequence(seed).spawn(2)
    sz = _leaky_sizes(size)
    x, y = _digits(np.random.default_rng(data_ss))
    n = sz["n_images"]
    x, y = x[:n].reshape(-1, 8, 8, 1), y[:n]
    xd = np.moveaxis(x, -1, 1)
    data = TrainingData(xd, y, xd, y, 10, f"{n} shuffled digits 8x8 (accuracy on the training images)")
    runs = {}
    for name in progress(LEAKY_CONFIGS, desc="LeakyNet training"):
        kinds = tuple(LEAKY_CONFIGS[name])
        c = _train_full_batch(
            LeakyNetSpec(kinds=kinds, width=LEAKY_CHANNELS, slope=LEAKY_RHO),
            data,
            steps=sz["steps"],
            lr=LEAKY_LR,
            rng=np.random.default_rng(train_ss),
            noise=SymmetryBreaking(reduction_noise=LEAKY_NOISE),
            probes={"ratios": _ratio_probe(kinds, x, y)},
        )
        r = c.probes["ratios"][0]
        runs[name] = _RatioRecord(r[:, 0], r[:, 1], c.train_loss[0])
    return runs, sz


def _ratio_figure(out_dir, size, seed, which):
    runs, sz = _leaky_runs(size, seed)
    steps = sz["steps"]
    shown = sorted({0, 1, 2, 5, steps // 2, steps} & set(range(steps + 1)))
    ratio = np.stack([(r.forward_ratio if which == "forward" else r.backward_ratio) for r in runs.values()])
    floor = zero_floor(ratio[:, shown])
    cmap = plt.get_cmap("viridis")
    color = {t: cmap(0.85 * k / max(len(shown) - 1, 1)) for k, t in enumerate(shown)}  # no pale yellow end
    fig, axes = plt.subplots(1, len(runs), figsize=(3.9 * len(runs), 4.6), sharey=True)
    layers = np.arange(ratio.shape[2])
    for ax, (name, kinds), arr in zip(axes, LEAKY_CONFIGS.items(), ratio):
        for t in shown:
            plot_with_zeros(ax, layers, arr[t], floor, color=color[t], marker=".", label=f"step {t}")
        for layer, kind in enumerate(kinds, start=1):
            if kind == "1":
                ax.axvline(layer, color="gray", ls="--", lw=0.7)
        ax.set_title(name, fontsize=9)
        _integer_xaxis(ax, "layer $\\ell$ (0 = input conv)")
    for ax in axes:
        zero_band(ax, floor, top=2.0)
    for ax in axes:  # every panel labelled: a reader may look at one alone
        if which == "forward":
            ax.set_ylabel(r"$\|(I - 11^T/n)\,\alpha^{(\ell)}\| \,/\, \|\alpha^{(\ell)}\|$")
        else:
            ax.set_ylabel(
                r"$\|(I - 11^T/n)\,\partial L/\partial\alpha^{(\ell)}\| \,/\, \|\partial L/\partial\alpha^{(\ell)}\|$"
            )
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(
        handles,
        labels,
        loc="lower center",
        ncol=len(shown),
        fontsize=8,
        frameon=False,
        title="training step (exact zeros in the grey band at 0; step 0: every ratio is 0)",
        title_fontsize=8,
    )
    fig.suptitle(
        f"{PAPER}, analogue of Fig. {9 if which == 'forward' else 10}: {which} symmetry-breaking perturbation, layer by layer, "
        f"of 12-layer LeakyNets\n{LEAKY_CHANNELS} channels, leaky-ReLU slope {LEAKY_RHO:g}, identity ($I$) or averaging "
        f"($11^T/n$, dashed) layers; gradient descent (learning rate {LEAKY_LR:g}, relative gradient noise "
        f"{LEAKY_NOISE:g}) on {sz['n_images']} 8x8 digits",
        fontsize=10,
    )
    fig.tight_layout(rect=(0, 0.1, 1, 1))
    data = {
        "step": np.arange(steps + 1),
        "layer": layers,
        "configuration": list(LEAKY_CONFIGS),
        "layer_kinds": list(LEAKY_CONFIGS.values()),
        "steps_drawn": np.array(shown),
        "ratio": ratio,
        "loss": np.stack([r.loss for r in runs.values()]),
    }
    name = f"blumenfeld2020_fig_{9 if which == 'forward' else 10}"
    return save_figure(
        fig,
        out_dir,
        name,
        data,
        params={
            "depth": 12,
            "channels": LEAKY_CHANNELS,
            "leaky_relu_slope": LEAKY_RHO,
            "kernel": [3, 3],
            "configurations": LEAKY_CONFIGS,
            "learning_rate": LEAKY_LR,
            "relative_gradient_noise": LEAKY_NOISE,
            "optimiser": GD_OPTIMISER,
            "steps": steps,
            "n_images": sz["n_images"],
            "data": DIGITS_DATA,
        },
        axes={"ratio": ["configuration", "step", "layer"], "loss": ["configuration", "step"]},
        units={
            "ratio": f"dimensionless, in [0, 1]: the {which} perturbation ratio (App. G) before the step",
            "loss": "cross-entropy [nats]",
            "layer": "0 = input (averaging) conv, l = LeakyNet layer l",
            "layer_kinds": "'I' identity, '1' averaging 11^T/n, layer 1 first",
        },
        notes="Exact zeros (symmetric features) are drawn in the grey band whose tick reads 0.",
    )


@figure(paper=PAPER, figure="analogue of Fig. 9 (digits, small LeakyNet)", honours_backend=False)
def fig_9(out_dir, *, size, backend, seed):
    """Forward symmetry-breaking perturbation ratio by layer during noisy training of LeakyNets.

    Four 12-layer LeakyNets (App. H: delta-kernel layers with channel matrix ``I`` or ``11^T/n``,
    sign-alternating scale) trained with relative gradient noise 1e-6 (a model of
    non-deterministic rounding). Each panel shows ``||(I - 11^T/n) a|| / ||a||`` of the features of
    every layer at a few training steps; averaging layers (dashed) cut the perturbation that
    identity layers pass on. Exact zeros (symmetric features, e.g. at step 0) are drawn in the band
    whose tick reads "0". Sizes: 16 / 128 / 256 images, 3 / 30 / 100 steps (the paper: 1,000).

    Notes
    -----
    Blumenfeld et al. 2020, App. G, Fig. 9.
    """
    return _ratio_figure(out_dir, size, seed, "forward")


@figure(paper=PAPER, figure="analogue of Fig. 10 (digits, small LeakyNet)", honours_backend=False)
def fig_10(out_dir, *, size, backend, seed):
    """Backward (gradient) symmetry-breaking perturbation ratio by layer during noisy training of LeakyNets.

    The runs of :func:`fig_9`; each panel shows the ratio for the gradients ``dL / da`` of every
    layer's features. Exact zeros in the grey band whose tick reads "0".

    Notes
    -----
    Blumenfeld et al. 2020, App. G, Fig. 10.
    """
    return _ratio_figure(out_dir, size, seed, "backward")


@figure(paper=PAPER, figure="analogue of Fig. 12 (digits, small LeakyNet)", honours_backend=False)
def fig_12(out_dir, *, size, backend, seed):
    """App. J: LeakyNets whose 12 layers are all ``gamma I + (1 - gamma) 11^T / n``; loss and C_f per layer.

    Left: training loss; right: the forward correlation ``C_f`` of every layer after training
    (markers) and at initialisation (dotted). Sizes: 16 / 128 / 256 images, 3 / 80 / 300 steps.

    Notes
    -----
    Blumenfeld et al. 2020, App. J, Fig. 12.
    """
    data_ss, train_ss = np.random.SeedSequence(seed).spawn(2)
    n = by_size(size, smoke=16, default=128, full=256)
    steps = by_size(size, smoke=3, default=80, full=300)
    lr = 0.2
    x, y = _digits(np.random.default_rng(data_ss))
    x, y = x[:n].reshape(-1, 8, 8, 1), y[:n]
    gammas = [0.0, 0.1, 0.5, 1.0]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4))
    loss, cf0, cf1, rel_change = [], [], [], []
    from meanfield.train import TrainingData, init_parameters
    from meanfield.train.symmetric import LeakyNetSpec, SymmetryBreaking, correlation_probe

    xd = x.reshape(-1, 1, 8, 8)
    data = TrainingData(xd, y, xd, y, 10, f"{n} shuffled digits 8x8 (accuracy on the training images)")
    for g in progress(gammas, desc="fig_12"):
        spec = LeakyNetSpec(kinds=("I",) * 12, width=LEAKY_CHANNELS, slope=LEAKY_RHO, gamma=(g,) * 12)
        w_init = init_parameters(spec, (1, 8, 8), 10, rng=0)[1:13]  # deterministic construction

        def change(net, params, w_init=w_init):
            return np.array([np.linalg.norm(p - w) / np.linalg.norm(w) for p, w in zip(params[1:13], w_init)])

        c = _train_full_batch(
            spec,
            data,
            steps=steps,
            lr=lr,
            rng=np.random.default_rng(train_ss),
            noise=SymmetryBreaking(reduction_noise=LEAKY_NOISE),
            probes={"cf": correlation_probe("forward"), "change": change},
        )
        rec = _EngineRecord(
            ["first"] + [f"layer{i}" for i in range(1, 13)],
            c.probes["cf"][0],
            c.probes["cf"][0],
            c.probes["cf"][0],
            c.train_loss[0],
            c.test_accuracy[0],
            c.steps,
        )
        line = axes[0].plot(np.arange(steps + 1), rec.loss, label=f"$\\gamma$ = {g:g}")[0]
        axes[1].plot(
            np.arange(13), 1.0 - rec.one_minus_cf[-1], "o-", color=line.get_color(), label=f"$\\gamma$ = {g:g}"
        )
        axes[1].plot(np.arange(13), 1.0 - rec.one_minus_cf[0], ":", color=line.get_color())
        loss.append(rec.loss)
        rel_change.append(c.probes["change"][0, -1].tolist())
        cf0.append(1.0 - rec.one_minus_cf[0])
        cf1.append(1.0 - rec.one_minus_cf[-1])
    _integer_xaxis(axes[0])
    axes[0].set_ylabel("training loss (cross-entropy) [nats]")
    spread = float(np.max(np.ptp(np.stack(loss), axis=0)))
    axes[0].set_title(
        f"largest difference between the {len(gammas)} curves: {spread:.1g} nats"
        + (" (they coincide)" if spread < 1e-3 else ""),
        fontsize=9,
    )
    axes[0].legend(fontsize=8)
    axes[1].set_xlabel("layer $\\ell$ (0 = input conv)")
    axes[1].set_ylabel(f"$C_f$ after {steps} steps (dotted: at initialisation)")
    axes[1].set_ylim(-0.05, 1.05)
    fig.suptitle(
        f"{PAPER}, analogue of Fig. 12 (App. J): LeakyNets with every layer $\\gamma I + (1-\\gamma)\\,11^T/n$\n"
        f"12 layers of {LEAKY_CHANNELS} channels, leaky-ReLU slope {LEAKY_RHO:g}; gradient descent (learning rate {lr:g}, "
        f"per-entry relative gradient noise {LEAKY_NOISE:g}, the computation-noise model) on {n} 8x8 digits\n"
        f"odd layers carry the factor -1/slope (App. H): their weights move {_odd_even_ratio(rel_change):.0f}x less "
        "(relative) than the even ones and keep their initial $C_f$; the paper sees this for the even layers "
        "(its code evidently puts -1/slope on the second layer of each pair, as in Sec. 5.1)",
        fontsize=9,
    )
    fig.tight_layout()
    data = {
        "relative_weight_change": np.array(rel_change),
        "gamma": np.array(gammas),
        "step": np.arange(steps + 1),
        "layer": np.arange(13),
        "loss": np.stack(loss),
        "initial_C_f": np.stack(cf0),
        "final_C_f": np.stack(cf1),
        "tensor": list(rec.names),
    }
    return save_figure(
        fig,
        out_dir,
        "blumenfeld2020_fig_12",
        data,
        params={
            "depth": 12,
            "channels": LEAKY_CHANNELS,
            "leaky_relu_slope": LEAKY_RHO,
            "gamma": gammas,
            "learning_rate": lr,
            "relative_gradient_noise": LEAKY_NOISE,
            "noise_model": "SymmetryBreaking(reduction_noise): g <- g (1 + noise xi) per entry",
            "optimiser": GD_OPTIMISER,
            "steps": steps,
            "n_images": n,
            "data": DIGITS_DATA,
        },
        axes={
            "loss": ["gamma", "step"],
            "initial_C_f": ["gamma", "layer"],
            "final_C_f": ["gamma", "layer"],
            "relative_weight_change": ["gamma", "leakynet_layer"],
        },
        units={
            "loss": "cross-entropy [nats]",
            "initial_C_f": "dimensionless (eq. 5)",
            "final_C_f": "dimensionless (eq. 5)",
            "layer": "0 = input (averaging) conv, l = LeakyNet layer l",
            "relative_weight_change": "||W_l(end) - W_l(0)|| / ||W_l(0)|| for LeakyNet layers 1..12",
        },
    )


def _odd_even_ratio(rel_change) -> float:
    """Median relative weight change of the even LeakyNet layers over that of the odd ones (Fig. 12)."""
    r = np.asarray(rel_change, dtype=float)
    odd, even = np.median(r[:, 0::2]), np.median(r[:, 1::2])
    return float(even / odd) if odd > 0 else float("inf")
