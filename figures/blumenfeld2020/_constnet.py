"""Blumenfeld et al. 2020, Sec. 4: ConstNet weight correlations and accuracy (Figs. 3, 4, 6 and Table 1)."""

from __future__ import annotations

import functools
import math

import numpy as np

from .._common import by_size, figure, plt, progress, save_figure
from .._logzero import plot_with_zeros, zero_band, zero_floor
from ._shared import (
    CONSTNET_BLOCKS,
    CONSTNET_WIDTHS,
    DIGITS_DATA,
    GD_OPTIMISER,
    N_TRAIN,
    PAPER,
    _digits,
    _EngineRecord,
    _integer_xaxis,
    _tensor_label,
    _train_full_batch,
)

#: Learning rate of the ConstNet runs (full-batch gradient descent).
CONSTNET_LR = 0.1
#: The ConstNet tensor Fig. 3 follows: the 3 x 3 convolution of the second stage.
FIG3_TENSOR = "block1_0"


def _constnet_sizes(size):
    return {
        "n_images": by_size(size, smoke=16, default=128, full=512),
        "steps": by_size(size, smoke=3, default=100, full=600),
    }


@functools.lru_cache(maxsize=4)
def _constnet_runs(size, seed):
    """The four ConstNet training runs shared by Figs. 3, 6 and Table 1, on the one training engine
    (:func:`meanfield.train.train_ensemble`; cached per size and seed)."""
    from meanfield.train import TrainingData
    from meanfield.train.symmetric import ConstNetSpec, SymmetryBreaking, correlation_probe

    data_ss, _he_ss, train_ss = np.random.SeedSequence(seed).spawn(3)
    sz = _constnet_sizes(size)
    x, y = _digits(np.random.default_rng(data_ss))
    n = sz["n_images"]
    # the last 500 shuffled digits are never trained on: their accuracy is Table 1's test accuracy
    data = TrainingData(
        x[:n].reshape(-1, 1, 8, 8), y[:n], x[N_TRAIN:].reshape(-1, 1, 8, 8), y[N_TRAIN:], 10, "digits 8x8, shuffled"
    )
    widths, blocks = CONSTNET_WIDTHS, CONSTNET_BLOCKS
    variants = {
        "He init": ("he", None),
        "'0' init, 1% dropout": ("zero", SymmetryBreaking(dropout=0.01)),
        "'0' init, gradient noise 1e-8": ("zero", SymmetryBreaking(grad_noise=1e-8)),
        "'0' init, deterministic": ("zero", None),
    }
    probes = {k: correlation_probe(k) for k in ("forward", "backward", "total")}
    runs = {}
    for name in progress(variants, desc="ConstNet training"):
        init, noise = variants[name]
        spec = ConstNetSpec(widths=widths, blocks_per_stage=blocks, init=init)
        # common random numbers: every variant gets the same child stream (same He weights where drawn)
        c = _train_full_batch(
            spec,
            data,
            steps=sz["steps"],
            lr=CONSTNET_LR,
            rng=np.random.default_rng(train_ss),
            noise=noise,
            probes=probes,
        )
        names = ["first"]
        for st in range(len(widths)):
            names += [f"block{st}_{i}" for i in range(blocks)]
            if st < len(widths) - 1:
                names += [f"skip{st}", f"branch{st}"]
        keep = slice(None, None, CONSTNET_EVAL_EVERY)
        test_steps = np.unique(np.r_[c.steps[keep], c.steps[-1]])
        runs[name] = _EngineRecord(
            names,
            c.probes["forward"][0],
            c.probes["backward"][0],
            c.probes["total"][0],
            c.train_loss[0],
            c.test_accuracy[0][np.searchsorted(c.steps, test_steps)],
            test_steps,
        )
    return runs, sz


def _constnet_params(sz):
    return {
        "widths": list(CONSTNET_WIDTHS),
        "blocks_per_stage": CONSTNET_BLOCKS,
        "stride": 2,
        "kernel": [3, 3],
        "activation": "relu",
        "batchnorm": False,
        "optimiser": GD_OPTIMISER,
        "learning_rate": CONSTNET_LR,
        "steps": sz["steps"],
        "n_images": sz["n_images"],
        "data": DIGITS_DATA,
        "variants": {
            "He init": "He-normal weights",
            "'0' init, 1% dropout": "ConstNet '0' init, dropout 0.01 on every activation",
            "'0' init, gradient noise 1e-8": "ConstNet '0' init, N(0, 1e-8^2) added to every gradient entry",
            "'0' init, deterministic": "ConstNet '0' init, nothing random",
        },
    }


@figure(paper=PAPER, figure="analogue of Fig. 3 (digits, small ConstNet)", honours_backend=False)
def fig_3(out_dir, *, size, backend, seed):
    """Forward and backward weight correlations C_f, C_b of one ConstNet convolution over training.

    A ConstNet (App. A: '0'-initialised residual convolutions, constant widening convolutions, zero
    head) with stages of 8, 16, 32 channels, one block each, trained by full-batch gradient descent
    on 8 x 8 digits in four variants: He initialisation, '0' initialisation with 1 % dropout, with
    gradient noise of standard deviation 1e-8, and fully deterministic. Left: ``C_f`` (solid) and
    ``C_b`` (dashed) of the second stage's 3 x 3 convolution; right: ``1 - C_f`` on a log scale
    (exact zeros, the symmetric networks, in the grey band whose tick reads "0"). Sizes: 16 / 128 / 512 images,
    3 / 100 / 600 steps.

    Notes
    -----
    Blumenfeld et al. 2020, Sec. 4, eqs. 5-6 (C_f, C_b), Fig. 3.
    """
    runs, sz = _constnet_runs(size, seed)
    steps = np.arange(sz["steps"] + 1)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4))
    one_minus = np.stack([r.one_minus_cf[:, r.names.index(FIG3_TENSOR)] for r in runs.values()])
    floor = zero_floor(one_minus)
    c_f, c_b = [], []
    for name, rec in runs.items():
        j = rec.names.index(FIG3_TENSOR)
        cf, cb = 1.0 - rec.one_minus_cf[:, j], 1.0 - rec.one_minus_cb[:, j]
        line = axes[0].plot(steps, cf, label=name)[0]
        axes[0].plot(steps, cb, "--", color=line.get_color())
        plot_with_zeros(axes[1], steps, rec.one_minus_cf[:, j], floor, color=line.get_color(), label=name)
        c_f.append(cf)
        c_b.append(cb)
    _integer_xaxis(axes[0])
    axes[0].set_ylabel("$C_f$ (solid), $C_b$ (dashed)")
    axes[0].set_ylim(-0.05, 1.05)
    axes[0].legend(fontsize=7, loc="center right")
    zero_band(axes[1], floor, one_minus, top=2.0)
    _integer_xaxis(axes[1])
    axes[1].set_ylabel("$1 - C_f$")
    axes[1].set_title("log scale: the deterministic run stays exactly symmetric", fontsize=8)
    fig.suptitle(
        f"{PAPER}, analogue of Fig. 3: weight correlations of the {_tensor_label(FIG3_TENSOR)} of a ConstNet\n"
        f"stages of {', '.join(map(str, CONSTNET_WIDTHS))} channels, one block each; full-batch gradient descent "
        f"(learning rate {CONSTNET_LR:g}) on {sz['n_images']} 8x8 digits",
        fontsize=10,
    )
    fig.tight_layout()
    data = {
        "step": steps,
        "variant": list(runs),
        "tensor": FIG3_TENSOR,
        "tensor_label": _tensor_label(FIG3_TENSOR),
        "C_f": np.stack(c_f),
        "C_b": np.stack(c_b),
        "one_minus_C_f": one_minus,
        "one_minus_C_b": np.stack([r.one_minus_cb[:, r.names.index(FIG3_TENSOR)] for r in runs.values()]),
        "loss": np.stack([r.loss for r in runs.values()]),
    }
    two = ["variant", "step"]
    return save_figure(
        fig,
        out_dir,
        "blumenfeld2020_fig_3",
        data,
        params=_constnet_params(sz),
        axes={k: two for k in ("C_f", "C_b", "one_minus_C_f", "one_minus_C_b", "loss")},
        units={
            "C_f": "cosine similarity (eq. 5), dimensionless",
            "C_b": "cosine similarity (eq. 6), dimensionless",
            "one_minus_C_f": "1 - C_f, computed without cancellation",
            "one_minus_C_b": "1 - C_b",
            "loss": "cross-entropy [nats], before the step",
            "step": "full-batch gradient steps",
        },
    )


@figure(paper=PAPER, figure="analogue of Fig. 6 (digits, small ConstNet)", honours_backend=False)
def fig_6(out_dir, *, size, backend, seed):
    """``1 - C_f``, ``1 - C_b``, ``1 - C_t`` of every convolution of a '0'-initialised ConstNet with dropout.

    The '0'-initialised ConstNet of :func:`fig_3` trained with 1 % dropout: how fast the symmetry of
    each of its 8 convolutions breaks, measured by the forward, backward and total correlations
    (log scale; exact zeros, the symmetric tensors, in the grey band whose tick reads "0"). The input
    convolution has one input channel, so its ``C_b`` is undefined and not drawn.

    Notes
    -----
    Blumenfeld et al. 2020, eqs. 5-6 and Fig. 6 (``C_t``: the correlation between all filters).
    """
    runs, sz = _constnet_runs(size, seed)
    rec = runs["'0' init, 1% dropout"]
    steps = np.arange(sz["steps"] + 1)
    panels = (
        ("C_f", "forward", rec.one_minus_cf),
        ("C_b", "backward", rec.one_minus_cb),
        ("C_t", "total", rec.one_minus_ct),
    )
    fig, axes = plt.subplots(1, 3, figsize=(14, 4.6), sharey=True)
    floor = zero_floor(*(arr for _, _, arr in panels))
    colors = plt.get_cmap("tab10").colors
    for ax, (label, word, arr) in zip(axes, panels):
        for j, name in enumerate(rec.names):
            if label == "C_b" and name == "first":
                continue  # one input channel: C_b undefined (recorded as 0 by convention)
            plot_with_zeros(ax, steps, arr[:, j], floor, color=colors[j % 10], label=_tensor_label(name))
        always = [
            _tensor_label(n)
            for j, n in enumerate(rec.names)
            if not np.any(arr[:, j]) and not (label == "C_b" and n == "first")
        ]
        ax.set_title(
            f"{word} correlation: $1 - {label}$"
            + ("\nexactly 0 at every step:\n" + "\n".join(always) if always else ""),
            fontsize=9,
        )
        _integer_xaxis(ax)
        ax.set_ylabel(f"$1 - {label}$")
    for ax in axes:
        zero_band(ax, floor, top=2.0)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8, frameon=False)
    fig.suptitle(
        f"{PAPER}, analogue of Fig. 6: symmetry breaking in every convolution of a '0'-initialised ConstNet with 1% dropout\n"
        f"stages of {', '.join(map(str, CONSTNET_WIDTHS))} channels; full-batch gradient descent (learning rate "
        f"{CONSTNET_LR:g}) on {sz['n_images']} 8x8 digits; the input convolution's $C_b$ is undefined (one input channel)",
        fontsize=10,
    )
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    data = {
        "step": steps,
        "tensor": list(rec.names),
        "tensor_label": [_tensor_label(n) for n in rec.names],
        "one_minus_C_f": rec.one_minus_cf,
        "one_minus_C_b": rec.one_minus_cb,
        "one_minus_C_t": rec.one_minus_ct,
        "loss": rec.loss,
    }
    two = ["step", "tensor"]
    return save_figure(
        fig,
        out_dir,
        "blumenfeld2020_fig_6",
        data,
        params={**_constnet_params(sz), "variant": "'0' init, 1% dropout"},
        axes={"one_minus_C_f": two, "one_minus_C_b": two, "one_minus_C_t": two},
        units={
            "one_minus_C_f": "1 - C_f (eq. 5), dimensionless",
            "one_minus_C_b": "1 - C_b (eq. 6); 0 by convention for the input conv (one input channel)",
            "one_minus_C_t": "1 - C_t (all filters), dimensionless",
            "loss": "cross-entropy [nats]",
            "step": "full-batch gradient steps",
        },
    )


#: Steps between test-accuracy evaluations of the ConstNet runs (a 500-image forward pass costs
#: about as much as a training step on 128 images: evaluating every step doubled Fig. 3's time).
CONSTNET_EVAL_EVERY = 10

#: Table 1 of Blumenfeld et al. 2020 (CIFAR-10, 300 epochs, test accuracy in %): the paper's numbers beside ours.
TABLE_1_PAPER = {
    "He init": 95.40,
    "'0' init, 1% dropout": 95.46,
    "'0' init, gradient noise 1e-8": 95.37,  # the paper's "non-deterministic GPU computation" row
    "'0' init, deterministic": 24.79,
}


@figure(paper=PAPER, figure="analogue of Table 1 (digits, small ConstNet)", honours_backend=False)
def table_1(out_dir, *, size, backend, seed):
    """Test accuracy of a ConstNet with and without a symmetry-breaking noise source (the runs of Figs. 3 and 6).

    The four ConstNet runs shared with :func:`fig_3` and :func:`fig_6` (He init; '0' init with 1 %
    dropout; '0' init with N(0, 1e-8^2) gradient noise, the model of non-deterministic GPU
    reductions; '0' init fully deterministic), tested on 500 held-out digits. Left: test accuracy
    over training; right: final test accuracy beside the paper's CIFAR-10 numbers, with
    ``max 1 - C_f`` over the hidden convolutions (0: the features are still identical).

    Notes
    -----
    Blumenfeld et al. 2020, Sec. 4.2, Table 1 (and App. I, Table 3). Reduced precision (FP16) is not modelled.
    """
    runs, sz = _constnet_runs(size, seed)
    names = list(runs)
    acc = np.stack([runs[k].test_accuracy for k in names])
    final = 100.0 * acc[:, -1]
    cf = np.array([float(runs[k].one_minus_cf[-1, 1:].max()) for k in names])
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
    steps_axis = runs[names[0]].test_steps
    for i, k in enumerate(names):
        a.plot(steps_axis, 100.0 * acc[i], marker="o", ms=2, label=k)
    a.set_xlabel("full-batch gradient steps")
    a.set_ylabel("test accuracy [%]")
    a.legend(fontsize=7)
    y = np.arange(len(names))
    b.barh(y, final, color="tab:blue", label="here (digits)")
    b.scatter([TABLE_1_PAPER[k] for k in names], y, color="k", marker="x", zorder=3, label="paper (CIFAR-10)")
    b.set_yticks(y, [f"{k}\n(max 1 - C_f = {c:.2g})" for k, c in zip(names, cf)], fontsize=7)
    b.set_xlabel("final test accuracy [%]")
    b.set_ylabel("initialisation and noise source")
    b.legend(fontsize=7)
    det, drop = final[names.index("'0' init, deterministic")], final[names.index("'0' init, 1% dropout")]
    seen = "reproduced" if drop > det else "NOT reproduced at this size"
    b.set_title(
        f"paper: noise recovers the He accuracy, deterministic fails; dropout {drop:.1f} vs deterministic {det:.1f}: {seen}",
        fontsize=7,
    )
    fig.suptitle(
        f"{PAPER}, analogue of Table 1: ConstNet test accuracy with and without symmetry breaking\n"
        f"{sz['n_images']} training digits, 500 test digits, {sz['steps']} full-batch steps at learning rate {CONSTNET_LR:g} "
        "(paper: CIFAR-10, 300 epochs)",
        fontsize=9,
    )
    fig.tight_layout()
    return save_figure(
        fig,
        out_dir,
        "blumenfeld2020_table_1",
        {
            "variant": names,
            "test_step": steps_axis,
            "test_accuracy": acc,
            "final_test_accuracy": final,
            "paper_test_accuracy": np.array([TABLE_1_PAPER[k] for k in names]),
            "max_one_minus_cf": cf,
        },
        params={**_constnet_params(sz), "n_test": 500},
        axes={"test_accuracy": ["variant", "step"]},
        units={
            "test_accuracy": "fraction of the 500 held-out digits classified correctly",
            "final_test_accuracy": "percent",
            "paper_test_accuracy": "percent (CIFAR-10, Table 1 of the paper)",
            "max_one_minus_cf": "max over hidden convolutions of 1 - C_f after training",
        },
    )


# --------------------------------------------------------------------------------------------------
# Fig. 4: group behaviour of the early symmetry breaking (Sec. 4.2), from the runs of Figs. 3 and 6
# --------------------------------------------------------------------------------------------------


def _group_mean(arr, members):
    """Geometric mean over ``members`` (columns) of ``1 - C`` at every step; 0 where a member is exactly 0."""
    cols = arr[:, members]
    out = np.zeros(cols.shape[0])
    pos = np.all(cols > 0, axis=1)
    out[pos] = 10.0 ** np.mean(np.log10(cols[pos]), axis=1)
    return out


@figure(paper=PAPER, figure="analogue of Fig. 4 (digits, small ConstNet)", honours_backend=False)
def fig_4(out_dir, *, size, backend, seed):
    """Group behaviour of the early symmetry breaking: ``1 - C_f`` and ``1 - C_b`` per group of a ConstNet.

    The '0'-initialised ConstNet with 1 % dropout of :func:`fig_3` and :func:`fig_6` (the same
    cached runs: no extra training when those figures ran in the same process). Groups (Sec. 4.2,
    Fig. 6's caption) are derived from the network by
    :func:`meanfield.train.symmetric.constnet_groups`: a tensor's forward group is the
    stage whose summed stream its output joins, its backward group the stage its input comes from;
    one group per hidden width. Left: the geometric mean over each group's 3 x 3 convolutions of
    ``1 - C_f`` (solid) and ``1 - C_b`` (dashed), one colour per group (the paper's Fig. 4);
    right: the individual 3 x 3 convolutions, coloured by group. Log scale; exact zeros in the grey
    band whose tick reads "0". The 1 x 1 widening skips are left out, as in the statistic of
    :mod:`meanfield.train.symmetry_groups` (Fig. 6's caption: they fluctuate), whose exact
    permutation test the title reports for this one run.

    Notes
    -----
    Blumenfeld et al. 2020, Sec. 4.2, Fig. 4 (and Fig. 6's caption for the groups). The paper: CIFAR-10, the first
    3 epochs of 391 SGD steps; here 8 x 8 digits, full-batch gradient descent (one step = one epoch).
    """
    from meanfield.train.symmetric import ConstNetSpec, constnet_groups
    from meanfield.train.symmetry_groups import P_THRESHOLD, constnet_group_series

    runs, sz = _constnet_runs(size, seed)
    variant = "'0' init, 1% dropout"
    rec = runs[variant]
    groups = constnet_groups(ConstNetSpec(widths=CONSTNET_WIDTHS, blocks_per_stage=CONSTNET_BLOCKS))
    if list(groups.tensors) != list(rec.names):
        raise RuntimeError("fig_4: the ConstNet groups do not match the tensors of the cached runs")
    steps = np.arange(sz["steps"] + 1)
    conv3 = [j for j, k in enumerate(groups.kernel_size) if k > 1]
    fwd = [[j for j in conv3 if groups.forward[j] == g] for g in range(groups.n_groups)]
    bwd = [[j for j in conv3 if groups.backward[j] == g] for g in range(groups.n_groups)]
    gf = np.stack([_group_mean(rec.one_minus_cf, m) for m in fwd])
    gb = np.stack([_group_mean(rec.one_minus_cb, m) if m else np.full(steps.size, np.nan) for m in bwd])
    series = constnet_group_series(groups, rec.one_minus_cf, rec.one_minus_cb)
    sep, sep_f, sep_b = series.separation(), series.separation("forward"), series.separation("backward")
    names = [f"group {g + 1} ({w}-channel stage)" for g, w in enumerate(CONSTNET_WIDTHS)]
    colors = plt.get_cmap("tab10").colors
    fig, axes = plt.subplots(1, 2, figsize=(13, 5.0), sharey=True)
    shown = [rec.one_minus_cf[:, conv3], rec.one_minus_cb[:, [j for j in conv3 if groups.backward[j] >= 0]]]
    floor = zero_floor(*shown)
    for g in range(groups.n_groups):
        plot_with_zeros(axes[0], steps, gf[g], floor, color=colors[g], label=f"{names[g]}: $1 - C_f$")
        if bwd[g]:
            plot_with_zeros(axes[0], steps, gb[g], floor, color=colors[g], ls="--", label=f"{names[g]}: $1 - C_b$")
        for j in fwd[g]:
            plot_with_zeros(axes[1], steps, rec.one_minus_cf[:, j], floor, color=colors[g], lw=1.0, alpha=0.85)
        for j in bwd[g]:
            plot_with_zeros(axes[1], steps, rec.one_minus_cb[:, j], floor, color=colors[g], lw=1.0, ls="--", alpha=0.85)
    for ax in axes:
        zero_band(ax, floor, *shown, top=2.0)
        _integer_xaxis(ax, "full-batch gradient step (= epoch)")
    axes[0].set_ylabel("$1 - C$ (geometric mean over the group's 3x3 convolutions)")
    axes[1].set_ylabel("$1 - C$ of each 3x3 convolution")
    axes[0].set_title("per group: forward (solid), backward (dashed)", fontsize=9)
    members = "; ".join(
        f"group {g + 1}: " + ", ".join(_tensor_label(groups.tensors[j]).split(" (")[0] for j in fwd[g])
        for g in range(groups.n_groups)
    )
    axes[1].set_title(
        "each convolution, coloured by its group (forward group for $C_f$,\n"
        "backward group = the stage its input comes from, for $C_b$)",
        fontsize=9,
    )
    axes[0].legend(fontsize=7, loc="lower right")
    if sep is None:
        verdict = f"only {series.steps.size} steps with every 1 - C > 0: too few for the group test"
    else:

        def words(r):
            return "close within groups" if r.ratio < 0.5 else "spread within a group about as much as between groups"

        verdict = (
            f"within-group / between-group RMS distance of log10(1 - C) R = {sep.ratio:.2f}, exact permutation "
            f"p = {sep.p_value:.3f} ({'groups separate' if sep.p_value <= P_THRESHOLD else 'no significant grouping'}"
            f" at {P_THRESHOLD:g}; {series.steps.size} steps, one network)\nbackward correlations alone: R = {sep_b.ratio:.2f}, "
            f"{words(sep_b)}; forward correlations alone: R = {sep_f.ratio:.2f}, {words(sep_f)}"
        )
    fig.suptitle(
        f"{PAPER}, analogue of Fig. 4: early symmetry breaking is group dependent; '0'-initialised ConstNet, "
        f"1% dropout\nstages of {', '.join(map(str, CONSTNET_WIDTHS))} channels; full-batch gradient descent "
        f"(learning rate {CONSTNET_LR:g}) on {sz['n_images']} 8x8 digits, {sz['steps']} steps (the paper: "
        f"CIFAR-10, 3 epochs of 391 steps)\n{verdict}",
        fontsize=9,
    )
    fig.text(0.5, 0.01, f"forward groups of the 3x3 convolutions: {members}", ha="center", fontsize=7)
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    data = {
        "step": steps,
        "group": names,
        "group_width": list(CONSTNET_WIDTHS),
        "one_minus_C_f_group": gf,
        "one_minus_C_b_group": gb,
        "tensor": list(groups.tensors),
        "tensor_label": [_tensor_label(n) for n in groups.tensors],
        "forward_group": list(groups.forward),
        "backward_group": list(groups.backward),
        "kernel_size": list(groups.kernel_size),
        "one_minus_C_f": rec.one_minus_cf,
        "one_minus_C_b": rec.one_minus_cb,
        "test_steps_used": series.steps,
        "ratio_within_between": math.nan if sep is None else sep.ratio,
        "p_value": math.nan if sep is None else sep.p_value,
        "ratio_forward_only": math.nan if sep is None else sep_f.ratio,
        "ratio_backward_only": math.nan if sep is None else sep_b.ratio,
    }
    return save_figure(
        fig,
        out_dir,
        "blumenfeld2020_fig_4",
        data,
        params={**_constnet_params(sz), "variant": variant},
        axes={
            "one_minus_C_f_group": ["group", "step"],
            "one_minus_C_b_group": ["group", "step"],
            "one_minus_C_f": ["step", "tensor"],
            "one_minus_C_b": ["step", "tensor"],
        },
        units={
            "one_minus_C_f_group": "geometric mean over the group's 3x3 convolutions of 1 - C_f (eq. 5); 0 when a member is 0",
            "one_minus_C_b_group": "geometric mean over the backward group's 3x3 convolutions of 1 - C_b (eq. 6)",
            "one_minus_C_f": "1 - C_f of every convolution, dimensionless",
            "one_minus_C_b": "1 - C_b; 0 by convention for the input conv (one input channel)",
            "forward_group": "index into group: the stage whose summed stream the tensor's output joins",
            "backward_group": "index into group: the stage its input comes from; -1 = the input data",
            "kernel_size": "spatial kernel size (1: widening skip, not in the group means)",
            "test_steps_used": "steps at which every 3x3 1 - C is > 0 (those of the permutation test)",
            "ratio_within_between": "R of meanfield.train.symmetry_groups.group_separation (dimensionless)",
            "p_value": "exact permutation p-value of R (one network)",
            "ratio_forward_only": "R of the C_f series alone (descriptive)",
            "ratio_backward_only": "R of the C_b series alone (descriptive)",
            "step": "full-batch gradient steps",
        },
    )
