"""Blumenfeld et al. 2020, Sec. 5.1 and App. I: Tables 2-4 and Figs. 7, 8, 11 from the runs of the ensemble trainer."""

from __future__ import annotations

import math

import numpy as np

from .._common import figure, plt, save_figure
from ._shared import PAPER, _tensor_label

# --------------------------------------------------------------------------------------------------
# Tables 2-4 and Figs. 7, 8, 11 on the one training engine (train_ensemble)
# --------------------------------------------------------------------------------------------------

#: Table 3 of Blumenfeld et al. 2020 (CIFAR-10, 200 epochs, test accuracy in %), the cells our variants model
#: (GTX-1080 rows for FP32; RTX-2080 FP16 rows for bfloat16; "computation noise" = non-deterministic cuDNN).
TABLE_3_PAPER = {
    "He init": 95.40,  # Table 1 (300 epochs): ConstNet, He
    "'0' init, deterministic": 24.96,
    "'0' init, 1% dropout": 92.99,
    "'0' init, computation noise": 94.09,
    "'0' init, gradient noise": float("nan"),  # not in the paper
    "'0' init, bfloat16, deterministic": 22.55,
    "'0' init, bfloat16 + computation noise": 38.61,
    "'0' init, 1% dropout + computation noise": 94.80,
}
#: Table 2 of Blumenfeld et al. 2020 (CIFAR-10): test accuracy [%], max_l C_f, mean_l sqrt(1 - C_f^2).
TABLE_2_PAPER = {
    "13 He": (95.57, 0.21, 0.97),
    "13 I, 0 '1'": (94.05, 0.27, 0.97),
    "12 I, 1 '1'": (94.34, 0.25, 0.97),
    "10 I, 3 '1'": (93.47, 0.63, 0.94),
    "8 I, 5 '1'": (87.85, 1.00, 0.79),
    "6 I, 7 '1'": (44.89, 1.00, 0.52),
    "0 I, 13 '1'": (29.77, 1.00, 0.21),
}
#: Table 4 of Blumenfeld et al. 2020 (CIFAR-10 vanilla, test accuracy in %): '0' against i.i.d. initialisation.
TABLE_4_PAPER = {"He init": 94.90, "'0' init, 1% dropout + computation noise": 94.82}


#: Widths of the ConstNet of the engine runs (:mod:`meanfield.train.symmetry_breaking`).
ENGINE_CONSTNET_WIDTHS = (8, 16)


def _engine_size(size):
    return size if size in ("smoke", "default", "full") else "default"


def _draw_table(text, cols, title, widths=None):
    fig, ax = plt.subplots(figsize=(13.5, 0.3 * (len(text) + 1) + 1.0))
    ax.axis("off")
    tab = ax.table(cellText=text, colLabels=cols, loc="upper center", cellLoc="center", colWidths=widths)
    tab.auto_set_font_size(False)
    tab.set_fontsize(8)
    tab.scale(1, 1.35)
    ax.set_title(title, fontsize=9)
    return fig


def _engine_params(t):
    return {k: v for k, v in t.params.items() if k != "seconds"} | {"engine": "meanfield.train.train_ensemble"}


def _verdict(t, label, ref="'0' init, deterministic"):
    i, j = t.labels.index(label), t.labels.index(ref)
    a, b = t.test_accuracy[i], t.test_accuracy[j]
    se = math.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
    diff = a.mean() - b.mean()
    return diff, se, bool(diff > 3.0 * se)


@figure(
    paper=PAPER,
    figure="analogue of Table 3 (and Table 1; digits, small ConstNet, train_ensemble)",
    honours_backend=False,
)
def table_3(out_dir, *, size, backend, seed):
    """ConstNet test accuracy with each symmetry-breaking noise source, FP32 and bfloat16 (Tables 1, 3).

    The runs of :func:`meanfield.train.symmetry_breaking.constnet_noise_table`: He and '0'
    initialised ConstNets trained by the ensemble trainer, deterministic, with 1 % dropout, with
    the explicit model of non-deterministic reductions (computation noise), with gradient noise,
    and in bfloat16 with and without computation noise. Columns: mean test accuracy +- standard
    error over seeds, the paper's CIFAR-10 number, ``1 - C_f`` at the end (0: still identical
    features), and whether the accuracy recovered above the deterministic run (one-sided, 3 SE).

    Notes
    -----
    Blumenfeld et al. 2020, Sec. 4, Table 1, App. I, Table 3.
    """
    from meanfield.train.symmetry_breaking import constnet_noise_table

    t = constnet_noise_table(_engine_size(size), rng=seed)
    m, se = t.mean_se()
    broken = t.one_minus_cf[:, :, -1, 1:].max(axis=2).min(axis=1)
    text = []
    for i, label in enumerate(t.labels):
        if label in ("He init", "'0' init, deterministic"):
            rec = "(reference)"
        else:
            d, s, ok = _verdict(t, label)
            rec = f"{'yes' if ok else 'NO'} ({100 * d:+.1f} +- {100 * s:.1f})"
        paper = TABLE_3_PAPER[label]
        text.append(
            [
                label,
                f"{100 * m[i]:.1f} +- {100 * se[i]:.1f}",
                "-" if math.isnan(paper) else f"{paper:.2f}",
                f"{broken[i]:.2g}",
                rec,
            ]
        )
    cols = ["variant", "test acc. [%] (here)", "paper [%] (CIFAR-10)", "min over seeds of max 1 - C_f", "recovered?"]
    fig = _draw_table(
        text,
        cols,
        f"{PAPER}, analogue of Table 3 (and Table 1): ConstNet '0' init with each symmetry-breaking source\n"
        f"{t.params['seeds']} seeds, {t.params['steps']} SGD steps (momentum 0.9, lr {t.params['lr']:g}, batch "
        f"{t.params['batch_size']}), {t.params['data']}; paper: CIFAR-10, 200-300 epochs",
        [0.3, 0.15, 0.14, 0.18, 0.2],
    )
    return save_figure(
        fig,
        out_dir,
        "blumenfeld2020_table_3",
        {
            "variant": list(t.labels),
            "test_accuracy": t.test_accuracy,
            "paper_test_accuracy": np.array([TABLE_3_PAPER[k] for k in t.labels]),
            "min_max_one_minus_cf": broken,
            "step": t.steps,
            "test_curve": t.test_curve,
        },
        params=_engine_params(t),
        axes={"test_accuracy": ["variant", "seed"], "test_curve": ["variant", "seed", "step"]},
        units={
            "test_accuracy": "fraction",
            "paper_test_accuracy": "percent (NaN: not in the paper)",
            "min_max_one_minus_cf": "min over seeds of the max over hidden convolutions of 1 - C_f at the end",
        },
    )


@figure(paper=PAPER, figure="analogue of Table 4 (digits, small ConstNet, train_ensemble)", honours_backend=False)
def table_4(out_dir, *, size, backend, seed):
    """'0' against i.i.d. (He) initialisation of ConstNet with dropout and computation noise (Table 4).

    Two rows of the runs of :func:`table_3` (one data set, the embedded digits; the paper:
    CIFAR-10, CIFAR-100, CINIC). The claim: with noise the '0' initialisation trains as well as
    the random one.

    Notes
    -----
    Blumenfeld et al. 2020, App. I, Table 4.
    """
    from meanfield.train.symmetry_breaking import constnet_noise_table

    t = constnet_noise_table(_engine_size(size), rng=seed)
    labels = list(TABLE_4_PAPER)
    idx = [t.labels.index(k) for k in labels]
    m, se = t.mean_se()
    a, b = t.test_accuracy[idx[1]], t.test_accuracy[idx[0]]
    diff = a.mean() - b.mean()
    dse = math.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
    same = abs(diff) <= 3.0 * dse
    text = [[k, f"{100 * m[i]:.1f} +- {100 * se[i]:.1f}", f"{TABLE_4_PAPER[k]:.2f}"] for k, i in zip(labels, idx)]
    fig = _draw_table(
        text,
        ["initialisation", "test acc. [%] (digits, here)", "paper [%] (CIFAR-10)"],
        f"{PAPER}, analogue of Table 4: '0' - He = {100 * diff:+.1f} +- {100 * dse:.1f} points: "
        f"{'equal within 3 SE (reproduced)' if same else 'NOT equal within 3 SE (not reproduced at this size)'}\n"
        f"{t.params['seeds']} seeds, {t.params['steps']} steps, {t.params['data']}",
        [0.45, 0.25, 0.25],
    )
    return save_figure(
        fig,
        out_dir,
        "blumenfeld2020_table_4",
        {
            "variant": labels,
            "test_accuracy": t.test_accuracy[idx],
            "paper_test_accuracy": np.array([TABLE_4_PAPER[k] for k in labels]),
            "difference": float(diff),
            "difference_stderr": float(dse),
        },
        params=_engine_params(t),
        axes={"test_accuracy": ["variant", "seed"]},
        units={"test_accuracy": "fraction", "paper_test_accuracy": "percent", "difference": "fraction"},
    )


@figure(paper=PAPER, figure="analogue of Table 2 (digits, small LeakyNets, train_ensemble)", honours_backend=False)
def table_2(out_dir, *, size, backend, seed):
    """LeakyNets with 0 to 13 averaging layers and a He-initialised one: accuracy, max C_f, mean sqrt(1 - C_f^2).

    The runs of :func:`meanfield.train.symmetry_breaking.leakynet_averaging_table` (every
    run with the computation-noise model). Table 2's claim: accuracy falls as averaging ('1')
    layers are added, ``max_l C_f`` approaches 1 and the mean dissimilarity falls.

    Notes
    -----
    Blumenfeld et al. 2020, Sec. 5.1, Table 2. With the digits' single input channel, the first convolution of
    every LeakyNet gives identical features, so all LeakyNets here start symmetric (on CIFAR-10 the
    'I' networks do not).
    """
    from meanfield.train.symmetry_breaking import leakynet_averaging_table, table_2_metrics

    t = leakynet_averaging_table(_engine_size(size), rng=seed)
    m, se = t.mean_se()
    mx, dis = table_2_metrics(t)
    text = []
    for i, label in enumerate(t.labels):
        p = TABLE_2_PAPER[label]
        text.append(
            [
                label,
                f"{100 * m[i]:.1f} +- {100 * se[i]:.1f}",
                f"{p[0]:.2f}",
                f"{mx[i].mean():.2f}",
                f"{p[1]:.2f}",
                f"{dis[i].mean():.2f}",
                f"{p[2]:.2f}",
            ]
        )
    i_all, i_one = t.labels.index("13 I, 0 '1'"), t.labels.index("0 I, 13 '1'")
    drop = m[i_all] - m[i_one]
    fig = _draw_table(
        text,
        ["init (13 conv layers)", "test acc. [%]", "paper", "max C_f", "paper", "mean sqrt(1-C_f^2)", "paper"],
        f"{PAPER}, analogue of Table 2: all 'I' - all '1' accuracy = {100 * drop:+.1f} points "
        f"({'accuracy falls with averaging layers' if drop > 0 else 'NO fall at this size'})\n"
        f"{t.params['seeds']} seeds, {t.params['steps']} steps (lr {t.params['lr']:g}), {t.params['data']}; "
        "paper: CIFAR-10",
        [0.2, 0.14, 0.08, 0.1, 0.08, 0.16, 0.08],
    )
    return save_figure(
        fig,
        out_dir,
        "blumenfeld2020_table_2",
        {
            "config": list(t.labels),
            "test_accuracy": t.test_accuracy,
            "max_cf": mx,
            "mean_dissimilarity": dis,
            "paper": np.array([TABLE_2_PAPER[k] for k in t.labels]),
        },
        params=_engine_params(t),
        axes={
            "test_accuracy": ["config", "seed"],
            "max_cf": ["config", "seed"],
            "mean_dissimilarity": ["config", "seed"],
            "paper": ["config", "accuracy_percent|max_cf|mean_dissimilarity"],
        },
        units={"test_accuracy": "fraction", "max_cf": "max over the 13 convolutions of C_f at the end"},
    )


def _log_cf(one_minus_cf):
    cf = np.clip(1.0 - one_minus_cf, 1e-6, None)  # ln C_f as the paper plots it; C_f <= 0 drawn at ln 1e-6
    return np.log(cf)


@figure(paper=PAPER, figure="analogue of Fig. 7 (digits, small ConstNet, train_ensemble)", honours_backend=False)
def fig_7(out_dir, *, size, backend, seed):
    """ln C_f of every ConstNet convolution over training, '0' init (dropout + computation noise) against He.

    From the runs of :func:`table_3`; mean over seeds. The paper's claim: the '0'-initialised
    ConstNet's forward correlations converge to the values of the He-initialised one.

    Notes
    -----
    Blumenfeld et al. 2020, Sec. 4.1, Fig. 7.
    """
    from meanfield.train.symmetry_breaking import constnet_noise_table

    t = constnet_noise_table(_engine_size(size), rng=seed)
    labels = ["He init", "'0' init, 1% dropout + computation noise"]
    curves = np.stack(
        [_log_cf(t.one_minus_cf[t.labels.index(k)]).mean(axis=0) for k in labels]
    )  # (2, records, tensors)
    n_t = len(t.tensors)
    cols = min(4, n_t)
    rows_ = math.ceil(n_t / cols)
    fig, axs = plt.subplots(rows_, cols, figsize=(3.2 * cols, 2.3 * rows_), squeeze=False)
    for j, name in enumerate(t.tensors):
        ax = axs[j // cols][j % cols]
        for k, lab in enumerate(labels):
            ax.plot(t.steps, curves[k, :, j], label=lab)
        ax.set_title(_tensor_label(name, ENGINE_CONSTNET_WIDTHS), fontsize=8)
        ax.set_xlabel("step", fontsize=7)
        ax.set_ylabel("ln C_f", fontsize=7)
    for j in range(n_t, rows_ * cols):
        fig.delaxes(axs[j // cols][j % cols])
    axs[0][0].legend(fontsize=6)
    gap = np.abs(curves[0, -1] - curves[1, -1])[1:]
    fig.suptitle(
        f"{PAPER}, analogue of Fig. 7: ln C_f per ConstNet convolution, mean of {t.params['seeds']} seeds, "
        f"{t.params['steps']} steps\nfinal |ln C_f('0') - ln C_f(He)| over hidden tensors: median {np.median(gap):.2f} "
        "(paper: they converge to the same values after 200 epochs of CIFAR-10)",
        fontsize=8,
    )
    fig.tight_layout()
    return save_figure(
        fig,
        out_dir,
        "blumenfeld2020_fig_7",
        {"variant": labels, "tensor": list(t.tensors), "step": t.steps, "ln_cf": curves},
        params=_engine_params(t),
        axes={"ln_cf": ["variant", "step", "tensor"]},
        units={"ln_cf": "natural log of C_f (clipped at ln 1e-6), mean over seeds"},
    )


@figure(
    paper=PAPER,
    figure="analogue of Fig. 8 (digits, small LeakyNets and a He LeakyNet, train_ensemble)",
    honours_backend=False,
)
def fig_8(out_dir, *, size, backend, seed):
    """ln C_f per layer at the end of training for LeakyNets with mixed 'I'/'1' layers and a He LeakyNet.

    From the runs of :func:`table_2`; mean +- standard error over seeds. The paper's claim: the
    mixed LeakyNets' correlations do not converge to the He-initialised network's values.

    Notes
    -----
    Blumenfeld et al. 2020, Sec. 5.1, Fig. 8.
    """
    from meanfield.train.symmetry_breaking import leakynet_averaging_table

    t = leakynet_averaging_table(_engine_size(size), rng=seed)
    lc = _log_cf(t.one_minus_cf[:, :, -1, :])  # (configs, seeds, layers)
    mean = lc.mean(axis=1)
    se = lc.std(axis=1, ddof=1) / math.sqrt(lc.shape[1])
    fig, ax = plt.subplots(figsize=(8, 4.5))
    layers = np.arange(len(t.tensors))
    for i, lab in enumerate(t.labels):
        ax.errorbar(layers, mean[i], yerr=se[i], marker="o", ms=3, capsize=2, label=lab)
    ax.set_xlabel("layer (0 = first convolution)")
    ax.set_ylabel("ln C_f at the end of training")
    ax.legend(fontsize=7)
    he = t.labels.index("13 He")
    dist = np.abs(mean - mean[he]).mean(axis=1)
    ax.set_title(
        f"{PAPER}, analogue of Fig. 8: mean |ln C_f - ln C_f(He)| per config: "
        + ", ".join(f"{lab.split(',')[-1].strip()}: {d:.2f}" for lab, d in zip(t.labels, dist) if lab != "13 He")
        + f"\n{t.params['seeds']} seeds, {t.params['steps']} steps, {t.params['data']}",
        fontsize=7,
    )
    fig.tight_layout()
    return save_figure(
        fig,
        out_dir,
        "blumenfeld2020_fig_8",
        {"config": list(t.labels), "layer": layers, "ln_cf_mean": mean, "ln_cf_stderr": se},
        params=_engine_params(t),
        axes={"ln_cf_mean": ["config", "layer"], "ln_cf_stderr": ["config", "layer"]},
        units={"ln_cf_mean": "natural log of C_f at the end (clipped at ln 1e-6)"},
    )


@figure(paper=PAPER, figure="analogue of Fig. 11 (digits, small ConstNet, train_ensemble)", honours_backend=False)
def fig_11(out_dir, *, size, backend, seed):
    """Distribution over seeds of the final test accuracy of every ConstNet variant of :func:`table_3`.

    The paper's claim: with computation noise as the sole symmetry-breaking source, training is
    unreliable (some seeds break the symmetry too late and end far below the others).

    Notes
    -----
    Blumenfeld et al. 2020, App. I.1, Fig. 11.
    """
    from meanfield.train.symmetry_breaking import constnet_noise_table

    t = constnet_noise_table(_engine_size(size), rng=seed)
    fig, ax = plt.subplots(figsize=(9, 4.2))
    for i in range(len(t.labels)):
        ax.scatter(np.full(t.test_accuracy.shape[1], i), 100 * t.test_accuracy[i], alpha=0.7)
    ax.set_xticks(
        range(len(t.labels)), [k.replace("'0' init, ", "'0', ") for k in t.labels], rotation=25, ha="right", fontsize=7
    )
    ax.set_ylabel("final test accuracy [%]")
    ax.set_xlabel("initialisation and symmetry-breaking source")
    spread = 100 * (t.test_accuracy.max(axis=1) - t.test_accuracy.min(axis=1))
    k = t.labels.index("'0' init, computation noise")
    ax.set_title(
        f"{PAPER}, analogue of Fig. 11: final test accuracy per seed ({t.params['seeds']} seeds, {t.params['steps']} steps)\n"
        f"spread with computation noise only: {spread[k]:.1f} points (paper: some of 6 seeds fail after 200 epochs)",
        fontsize=8,
    )
    fig.tight_layout()
    return save_figure(
        fig,
        out_dir,
        "blumenfeld2020_fig_11",
        {"variant": list(t.labels), "test_accuracy": t.test_accuracy, "spread": spread},
        params=_engine_params(t),
        axes={"test_accuracy": ["variant", "seed"]},
        units={"test_accuracy": "fraction", "spread": "percentage points (max - min over seeds)"},
    )
