"""Figures of Blumenfeld, Gilboa & Soudry (2020), seed 000, on the CPU at small sizes.

The paper trains Wide-ResNet-sized networks on CIFAR-10 and MNIST for hundreds of epochs on GPUs;
here every experiment runs on scikit-learn's embedded 8 x 8 digits (the library's real default
data set) with small networks, so the *mechanisms* are reproduced, not the paper's accuracies.

- ``fig_1``: two-layer ReLU network with replicated hidden features (eqs. 10-11, App. E): test
  error against the number K of unique features, with and without initial noise lambda, at the
  paper's learning rate 0.1 and in a short, small-learning-rate run.
- ``fig_5``: the width-N network with K unique (replicated) features against a width-K network
  with the replicas removed (Fig. 5's comparison).
- ``fig_3``: forward / backward correlation of one hidden convolution of a ConstNet during
  full-batch training: He initialisation, '0' initialisation with 1 % dropout, with tiny gradient
  noise, and deterministic (Fig. 3 analogue).
- ``fig_6``: ``1 - C_f``, ``1 - C_b``, ``1 - C_t`` of every convolution of the '0'-initialised
  ConstNet with 1 % dropout over training (Fig. 6 analogue).
- ``fig_9``: symmetry-breaking perturbation ratio of the forward features, layer by layer, of
  LeakyNets with mixed 'I' / '1' layers during training with relative gradient noise 1e-6 (a model
  of non-deterministic rounding; Fig. 9 analogue); ``fig_10`` the
  same for the backward features (Fig. 10 analogue).
- ``fig_12``: App. J, LeakyNets whose layers are all ``gamma I + (1 - gamma) 11^T / n``: training
  loss and final ``C_f`` per layer (Fig. 12 analogue).
- ``table_correlations``: closed-form C_f, C_b after eq. 6 next to values measured on tensors.
"""

from __future__ import annotations

import functools

import numpy as np

from meanfield import init as mf_init
from meanfield import symmetry
from meanfield.data import load_digits
from meanfield.validation._symmetry_networks import ConstNet, LeakyNet, replicated_feature_experiment, train

from ._common import plt, progress, save_figure

__all__ = ["FIGURES", "fig_1", "fig_10", "fig_12", "fig_3", "fig_5", "fig_6", "fig_9", "table_correlations"]


def _digits(n=None, seed=0):
    d = load_digits(standardized=True)
    perm = np.random.default_rng(seed).permutation(len(d.y))
    return d.x[perm], d.y[perm]


def fig_1(out_dir, full=False, backend="numpy", seed=0):
    """Test error vs unique features K (width N = 64) for lambda = 0 and 0.1, two training regimes."""
    x, y = _digits(seed=seed)
    n_train = 1297
    xtr, ytr, xte, yte = x[:n_train], y[:n_train], x[n_train:], y[n_train:]
    width = 64
    ks = [1, 2, 4, 8, 16, 64] if not full else [1, 2, 4, 8, 16, 32, 64]
    lams = [0.0, 0.1, 0.5]
    n_seeds = 6 if not full else 30
    regimes = {"lr 0.1, 1000 steps (paper's lr)": (0.1, 1000 if not full else 7500), "lr 0.01, 300 steps": (0.01, 300)}
    data = {"width": width, "K": ks, "lambda": lams, "n_seeds": n_seeds, "n_train": n_train, "n_test": len(yte)}
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), sharey=False)
    jobs = [(r, lam, k) for r in regimes for lam in lams for k in ks]
    results = {}
    for r, lam, k in progress(jobs, desc="fig_1"):
        lr, steps = regimes[r]
        errs = [replicated_feature_experiment(xtr, ytr, xte, yte, width, k, lam, steps=steps, lr=lr, rng=np.random.SeedSequence(seed, spawn_key=(s,)))[0]
                for s in range(n_seeds)]
        results[(r, lam, k)] = (float(np.mean(errs)), float(np.std(errs, ddof=1) / np.sqrt(n_seeds)))
    for ax, r in zip(axes, regimes):
        for lam in lams:
            m = np.array([results[(r, lam, k)][0] for k in ks])
            se = np.array([results[(r, lam, k)][1] for k in ks])
            ax.errorbar(ks, 100 * m, 100 * se, marker="o", capsize=2, label=f"$\\lambda$={lam}")
            data[f"{r} | lambda={lam}"] = {"mean_error": m, "stderr": se}
        ax.set_xscale("log", base=2)
        ax.set_xlabel("unique features K (of N = 64)")
        ax.set_ylabel("test error [%]")
        ax.set_title(r, fontsize=9)
        ax.legend(fontsize=8)
    fig.suptitle(f"Replicated features, 2-layer ReLU net on digits ({n_seeds} seeds)")
    return save_figure(fig, out_dir, "blumenfeld2020_fig_1", data)


def fig_5(out_dir, full=False, backend="numpy", seed=0):
    """Width-N network with K unique features (replicated N/K times) against a width-K network."""
    x, y = _digits(seed=seed)
    n_train = 1297
    xtr, ytr, xte, yte = x[:n_train], y[:n_train], x[n_train:], y[n_train:]
    width = 64
    ks = [1, 2, 4, 8, 16, 32, 64]
    n_seeds = 6 if not full else 30
    regimes = {"lr 0.1, 1000 steps": (0.1, 1000 if not full else 7500), "lr 0.01, 300 steps": (0.01, 300)}
    data = {"N": width, "K": ks, "n_seeds": n_seeds}
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    for ax, (r, (lr, steps)) in zip(axes, regimes.items()):
        for label, net_width in (("width N, K unique (replicated)", lambda k: width), ("width K (replicas removed)", lambda k: k)):
            m, se = [], []
            for k in progress(ks, desc=f"fig_5 {r} {label}"):
                errs = [replicated_feature_experiment(xtr, ytr, xte, yte, net_width(k), k, 0.0, steps=steps, lr=lr, rng=np.random.SeedSequence(seed, spawn_key=(s,)))[0]
                        for s in range(n_seeds)]
                m.append(np.mean(errs))
                se.append(np.std(errs, ddof=1) / np.sqrt(n_seeds))
            ax.errorbar(ks, 100 * np.array(m), 100 * np.array(se), marker="o", capsize=2, label=label)
            data[f"{r} | {label}"] = {"mean_error": m, "stderr": se}
        ax.set_xscale("log", base=2)
        ax.set_xlabel("unique features K")
        ax.set_ylabel("test error [%]")
        ax.set_title(r, fontsize=9)
        ax.legend(fontsize=7)
    fig.suptitle(f"Replicas versus removed features, 2-layer ReLU net on digits, N = {width} ({n_seeds} seeds)")
    return save_figure(fig, out_dir, "blumenfeld2020_fig_5", data)


def _he_constnet(widths, blocks, n_input, n_classes, seed):
    net = ConstNet.initial(widths, blocks, n_input, n_classes)
    rng = np.random.default_rng(seed)
    for k, v in net.params.items():
        if k.startswith(("block", "branch", "first")):
            fan_in = int(np.prod(v.shape[:-1]))
            net.params[k] = rng.standard_normal(v.shape) * np.sqrt(2.0 / fan_in)
    return net


@functools.lru_cache(maxsize=4)
def _constnet_runs(full, seed):
    x, y = _digits(seed=seed)
    n = 512 if full else 128
    x, y = x[:n].reshape(-1, 8, 8, 1), y[:n]
    steps = 600 if full else 100
    widths, blocks = (8, 16, 32), 1
    runs = {}
    variants = {
        "He init": (lambda: _he_constnet(widths, blocks, 1, 10, seed), {}),
        "'0' init, 1% dropout": (lambda: ConstNet.initial(widths, blocks, 1, 10), {"dropout": 0.01}),
        "'0' init, gradient noise 1e-8": (lambda: ConstNet.initial(widths, blocks, 1, 10), {"grad_noise": 1e-8}),
        "'0' init, deterministic": (lambda: ConstNet.initial(widths, blocks, 1, 10), {}),
    }
    for name in progress(variants, desc="ConstNet training"):
        make, kw = variants[name]
        runs[name] = train(make(), x, y, steps, lr=0.1, rng=seed, **kw)
    return runs, steps


def fig_3(out_dir, full=False, backend="numpy", seed=0):
    """C_f (solid) and C_b (dashed) of the ConstNet convolution 'block1_0' over training."""
    runs, steps = _constnet_runs(full, seed)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    data = {"steps": np.arange(steps + 1), "tensor": "block1_0"}
    for name, rec in runs.items():
        j = rec.names.index("block1_0")
        cf, cb = 1.0 - rec.one_minus_cf[:, j], 1.0 - rec.one_minus_cb[:, j]
        line = axes[0].plot(cf, label=name)[0]
        axes[0].plot(cb, "--", color=line.get_color())
        axes[1].semilogy(np.maximum(rec.one_minus_cf[:, j], 1e-300), color=line.get_color(), label=name)
        data[name] = {"C_f": cf, "C_b": cb, "one_minus_C_f": rec.one_minus_cf[:, j], "one_minus_C_b": rec.one_minus_cb[:, j], "loss": rec.loss}
    axes[0].set_xlabel("full-batch step")
    axes[0].set_ylabel("$C_f$ (solid), $C_b$ (dashed)")
    axes[0].legend(fontsize=7)
    axes[1].set_xlabel("full-batch step")
    axes[1].set_ylabel("$1 - C_f$")
    axes[1].set_title("deterministic: exactly 0 at every step (not drawn)", fontsize=8)
    axes[1].set_ylim(1e-30, 2)
    fig.suptitle("ConstNet on digits: weight correlations of conv 'block1_0' (Fig. 3 analogue)")
    return save_figure(fig, out_dir, "blumenfeld2020_fig_3", data)


def fig_6(out_dir, full=False, backend="numpy", seed=0):
    """1 - C_f, 1 - C_b, 1 - C_t of every convolution of the '0'-initialised ConstNet with dropout."""
    runs, steps = _constnet_runs(full, seed)
    rec = runs["'0' init, 1% dropout"]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8), sharey=True)
    data = {"steps": np.arange(steps + 1), "names": rec.names}
    for ax, (label, arr) in zip(axes, (("C_f", rec.one_minus_cf), ("C_b", rec.one_minus_cb), ("C_t", rec.one_minus_ct))):
        for j, name in enumerate(rec.names):
            ax.semilogy(np.maximum(arr[:, j], 1e-300), label=name)
        ax.set_title(f"$1 - {label}$")
        ax.set_xlabel("full-batch step")
        ax.set_ylim(1e-30, 2)
        data[f"one_minus_{label}"] = arr
    axes[0].legend(fontsize=6, ncol=2)
    fig.suptitle("ConstNet '0' init + 1% dropout on digits: symmetry breaking per tensor (Fig. 6 analogue)")
    return save_figure(fig, out_dir, "blumenfeld2020_fig_6", data)


LEAKY_CONFIGS = {
    "12 I": "IIIIIIIIIIII",
    "9 I / 3 1": "II1III1III1I",
    "6 I / 6 1": "I1I1I1I1I1I1",
    "12 1": "111111111111",
}


@functools.lru_cache(maxsize=4)
def _leaky_runs(full, seed):
    x, y = _digits(seed=seed)
    n = 256 if full else 128
    x, y = x[:n].reshape(-1, 8, 8, 1), y[:n]
    steps = 100 if full else 30
    runs = {}
    for name in progress(LEAKY_CONFIGS, desc="LeakyNet training"):
        net = LeakyNet.initial(list(LEAKY_CONFIGS[name]), n=8, n_input=1, n_classes=10, rho=0.01)
        runs[name] = train(net, x, y, steps, lr=0.02, grad_noise=1e-6, relative_noise=True, rng=seed, ratios=True)
    return runs, steps


def _ratio_figure(out_dir, full, seed, which):
    runs, steps = _leaky_runs(full, seed)
    fig, axes = plt.subplots(1, len(runs), figsize=(3.4 * len(runs), 3.4), sharey=True)
    cmap = plt.get_cmap("viridis")
    data = {"steps": steps, "configs": LEAKY_CONFIGS}
    shown = sorted({1, 2, 5, steps // 2, steps})
    for ax, (name, rec) in zip(axes, runs.items()):
        arr = rec.forward_ratio if which == "forward" else rec.backward_ratio
        layers = np.arange(arr.shape[1])
        for t in shown:
            ax.semilogy(layers, np.maximum(arr[t], 1e-300), color=cmap(t / steps), marker=".", label=f"step {t}")
        for layer, kind in enumerate(LEAKY_CONFIGS[name], start=1):
            if kind == "1":
                ax.axvline(layer, color="gray", ls="--", lw=0.7)
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("layer (0 = first conv)")
        ax.set_ylim(1e-20, 2)
        data[name] = arr
    axes[0].set_ylabel("$\\|(I - 11^T/n) a\\| / \\|a\\|$" if which == "forward" else "$\\|(I - 11^T/n) \\partial L/\\partial a\\| / \\|\\partial L/\\partial a\\|$")
    axes[0].legend(fontsize=7)
    fig.suptitle(f"LeakyNet on digits, relative gradient noise 1e-6: {which} symmetry-breaking perturbation "
                 "(dashed: '1' layers; step 0 is exactly 0)")
    return save_figure(fig, out_dir, f"blumenfeld2020_fig_{9 if which == 'forward' else 10}", data)


def fig_9(out_dir, full=False, backend="numpy", seed=0):
    """Forward perturbation ratio by layer during noisy training of mixed I/1 LeakyNets."""
    return _ratio_figure(out_dir, full, seed, "forward")


def fig_10(out_dir, full=False, backend="numpy", seed=0):
    """Backward (gradient) perturbation ratio by layer during noisy training of mixed I/1 LeakyNets."""
    return _ratio_figure(out_dir, full, seed, "backward")


def fig_12(out_dir, full=False, backend="numpy", seed=0):
    """App. J: LeakyNets whose 12 layers are all ``gamma I + (1 - gamma) 11^T / n``; loss and final C_f per layer."""
    x, y = _digits(seed=seed)
    n = 256 if full else 128
    x, y = x[:n].reshape(-1, 8, 8, 1), y[:n]
    steps = 300 if full else 80
    gammas = [0.0, 0.1, 0.5, 1.0]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    data = {"gamma": gammas, "steps": steps}
    for g in progress(gammas, desc="fig_12"):
        net = LeakyNet.initial(["I"] * 12, n=8, n_input=1, n_classes=10, rho=0.01, gamma=[g] * 12)
        rec = train(net, x, y, steps, lr=0.2, grad_noise=1e-6, relative_noise=True, rng=seed)
        line = axes[0].plot(rec.loss, label=f"$\\gamma$={g}")[0]
        axes[1].plot(np.arange(13), 1.0 - rec.one_minus_cf[-1], "o-", color=line.get_color(), label=f"$\\gamma$={g}")
        axes[1].plot(np.arange(13), 1.0 - rec.one_minus_cf[0], ":", color=line.get_color())
        data[f"gamma={g}"] = {"loss": rec.loss, "initial_C_f": 1.0 - rec.one_minus_cf[0], "final_C_f": 1.0 - rec.one_minus_cf[-1],
                              "final_one_minus_C_f": rec.one_minus_cf[-1], "names": rec.names}
    axes[0].set_xlabel("full-batch step")
    axes[0].set_ylabel("training loss")
    axes[0].legend(fontsize=8)
    axes[1].set_xlabel("layer (0 = first conv)")
    axes[1].set_ylabel(f"$C_f$ after {steps} steps (dotted: at init)")
    fig.suptitle("LeakyNet with mixed layers $\\gamma I + (1-\\gamma) 11^T/n$ on digits (App. J, Fig. 12 analogue)")
    return save_figure(fig, out_dir, "blumenfeld2020_fig_12", data)


def table_correlations(out_dir, full=False, backend="numpy", seed=0):
    """Closed-form C_f, C_b (after eq. 6) next to values measured on real tensors."""
    rng = np.random.default_rng(seed)
    n, p, d, r = 16, 4, 32, 4
    delta = mf_init.delta_kernel((3, 3))[..., None, None]
    n_rand = 200 if not full else 2000
    rand = [(symmetry.forward_correlation(w), symmetry.backward_correlation(w))
            for w in (rng.standard_normal((3, 3, n, n)) for _ in range(n_rand))]
    rep = [(symmetry.forward_correlation(w), symmetry.backward_correlation(w))
           for w in (np.repeat(rng.standard_normal((d // r, n)), r, axis=0) for _ in range(n_rand))]
    rows = [
        ("random (He), 3x3x16x16", symmetry.closed_form_correlations("random"), np.mean(rand, axis=0), f"mean of {n_rand}"),
        ("orthogonal (delta-orth.)", symmetry.closed_form_correlations("orthogonal"),
         (symmetry.forward_correlation(delta * mf_init.haar_orthogonal(n, n, rng=rng)), symmetry.backward_correlation(delta * mf_init.haar_orthogonal(n, n, rng=rng))), "one tensor"),
        (f"replicated identity P={p}", symmetry.closed_form_correlations("replicated_identity", p * n, n),
         (symmetry.forward_correlation(delta * np.tile(np.eye(n), (p, 1))), symmetry.backward_correlation(delta * np.tile(np.eye(n), (p, 1)))), "one tensor"),
        ("constant", symmetry.closed_form_correlations("constant"),
         (symmetry.forward_correlation(np.full((3, 3, n, n), 0.3)), symmetry.backward_correlation(np.full((3, 3, n, n), 0.3))), "one tensor"),
        ("zero (convention)", symmetry.closed_form_correlations("zero"),
         (symmetry.forward_correlation(np.zeros((3, 3, n, n))), symmetry.backward_correlation(np.zeros((3, 3, n, n)))), "one tensor"),
        (f"replicated features d={d}, R={r}", symmetry.closed_form_correlations("replicated_features", d, replicas=r), np.mean(rep, axis=0), f"mean of {n_rand}"),
        ("LeakyNet '1' (11^T/n)", symmetry.closed_form_correlations("constant"),
         (symmetry.forward_correlation(delta * mf_init.channel_matrix(n, "1")), symmetry.backward_correlation(delta * mf_init.channel_matrix(n, "1"))), "one tensor"),
        ("looks-linear delta-orth. eq. 8 (C_f = -1/(n-1))", symmetry.ClosedFormCorrelations("looks_linear", -1 / (n - 1), -1 / (n - 1), True),
         (symmetry.forward_correlation(mf_init.looks_linear_delta_orthogonal(n, rng=rng)), symmetry.backward_correlation(mf_init.looks_linear_delta_orthogonal(n, rng=rng))), "one tensor"),
    ]
    cell = [[name, f"{th.c_f:.4f}", f"{meas[0]:.4f}", f"{th.c_b:.4f}", f"{meas[1]:.4f}", how] for name, th, meas, how in rows]
    fig, ax = plt.subplots(figsize=(10, 0.45 * len(cell) + 0.8))
    ax.axis("off")
    tab = ax.table(cellText=cell, colLabels=["initialisation", "C_f theory", "C_f measured", "C_b theory", "C_b measured", "measured on"], loc="center")
    tab.auto_set_font_size(False)
    tab.set_fontsize(8)
    tab.scale(1, 1.3)
    ax.set_title("Closed-form weight correlations (seed 000, after eq. 6)")
    data = {name: {"c_f_theory": th.c_f, "c_f_measured": meas[0], "c_b_theory": th.c_b, "c_b_measured": meas[1], "measured_on": how}
            for name, th, meas, how in rows}
    return save_figure(fig, out_dir, "blumenfeld2020_table_correlations", data)


FIGURES = {
    "fig_1": fig_1,
    "fig_3": fig_3,
    "fig_5": fig_5,
    "fig_6": fig_6,
    "fig_9": fig_9,
    "fig_10": fig_10,
    "fig_12": fig_12,
    "table_correlations": table_correlations,
}
