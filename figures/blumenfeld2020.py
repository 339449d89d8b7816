"""Figures of Blumenfeld, Gilboa & Soudry (2020), Blumenfeld et al. 2020, on the CPU at small sizes.

The paper trains Wide-ResNet-sized networks on CIFAR-10 and MNIST for hundreds of epochs on GPUs;
here every experiment runs on scikit-learn's embedded 8 x 8 digits (the library's real default
data set) with small networks, so the *mechanisms* are reproduced, not the paper's accuracies.
Every figure runs on the CPU only (``backend`` must be ``"numpy"``): the networks have 8 to 64
units or channels on 8 x 8 images, far too small for a GPU to help.

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
- ``fig_4``: the same run's ``1 - C_f`` and ``1 - C_b`` averaged per group of Sec. 4.2 (groups derived
  by :func:`meanfield.train.symmetric.constnet_groups`), with the exact group test of
  :mod:`meanfield.validation.symmetry_groups` (Fig. 4 analogue).
- ``fig_9``: symmetry-breaking perturbation ratio of the forward features, layer by layer, of
  LeakyNets with mixed identity / averaging layers during training with relative gradient noise
  1e-6 (a model of non-deterministic rounding; Fig. 9 analogue); ``fig_10`` the same for the
  backward features (Fig. 10 analogue).
- ``fig_12``: App. J, LeakyNets whose layers are all ``gamma I + (1 - gamma) 11^T / n``: training
  loss and final ``C_f`` per layer (Fig. 12 analogue).
- ``table_correlations`` (not in the paper): closed-form C_f, C_b after eq. 6 next to values
  measured on tensors, with standard errors.
- ``table_2``, ``table_3``, ``table_4``, ``fig_7``, ``fig_8``, ``fig_11``: LeakyNets with averaging
  layers and ConstNets with each symmetry-breaking noise source, from the runs of
  :mod:`meanfield.validation.symmetry_breaking` (Tables 2-4, Figs. 7, 8, 11 analogues).

Every training run uses the one engine, :func:`meanfield.train.train_ensemble`, with
the specs of :mod:`meanfield.train.symmetric`.

Every figure writes ``blumenfeld2020_NAME.png`` and ``.json`` (metadata block, named axes; read it
back with :func:`meanfield.figures.load`). Exact zeros on logarithmic axes (symmetric networks at
initialisation) are drawn in a grey band whose tick reads "0".
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from matplotlib.ticker import MaxNLocator

from meanfield import init as mf_init
from meanfield import symmetry
from meanfield.data import load_digits
from meanfield.simulate import LeakyNet, softmax_xent

from ._common import by_size, figure, plt, progress, registered, save_figure
from ._logzero import plot_with_zeros, zero_band, zero_floor

__all__ = [
    "FIGURES",
    "LEAKY_CONFIGS",
    "PAPER",
    "TABLE_1_PAPER",
    "TABLE_2_PAPER",
    "TABLE_3_PAPER",
    "TABLE_4_PAPER",
    "fig_1",
    "fig_3",
    "fig_4",
    "fig_5",
    "fig_6",
    "fig_7",
    "fig_8",
    "fig_9",
    "fig_10",
    "fig_11",
    "fig_12",
    "table_1",
    "table_2",
    "table_3",
    "table_4",
    "table_correlations",
]

#: How the figures' titles and metadata name the paper.
PAPER = "Blumenfeld et al. 2020"

#: The figures of this module, ``{name: function}`` (read-only; filled by their ``@figure`` declarations).
FIGURES = registered(__name__)
_CPU = "runs on the CPU only"

#: Images of the digits data set used for training in Figs. 1 and 5 (the other 500 are the test set).
N_TRAIN = 1297
#: Minibatch of the SGD runs of Figs. 1 and 5.
BATCH = 32


def _digits(rng):
    """The standardised digits, shuffled by ``rng``."""
    d = load_digits(standardized=True)
    perm = rng.permutation(len(d.y))
    return d.x[perm], d.y[perm]


def _split(seed):
    """Independent streams: one shuffles the data, the others seed the repetitions."""
    data_ss, rep_ss = np.random.SeedSequence(seed).spawn(2)
    x, y = _digits(np.random.default_rng(data_ss))
    return (x[:N_TRAIN], y[:N_TRAIN], x[N_TRAIN:], y[N_TRAIN:]), rep_ss


def _regimes(size):
    """SGD regimes of Figs. 1 and 5: ``{title: (learning rate, steps)}``."""
    return {
        "paper's learning rate 0.1": (0.1, by_size(size, smoke=20, default=1000, full=7500)),
        "short run, learning rate 0.01": (0.01, by_size(size, smoke=10, default=300, full=300)),
    }


def _replicated_errors(split, rep_ss, n_rep, width, cells, lr, steps):
    """Test errors [%] of ``n_rep`` repetitions of every cell ``(unique, noise)`` of one width, shape
    ``(len(cells), n_rep)``: one ensemble on the training engine (``train_ensemble`` with a list of
    :class:`~meanfield.train.symmetric.ReplicatedNetSpec`; cell ``j`` gets child ``j`` of
    ``rep_ss`` and its repetitions the children of that stream)."""
    from meanfield.train import TrainingData, train_ensemble
    from meanfield.train.symmetric import ReplicatedNetSpec

    xtr, ytr, xte, yte = split
    data = TrainingData(xtr[:, None, :], ytr, xte[:, None, :], yte, 10, "digits 8x8 (flattened), shuffled")
    nets = [ReplicatedNetSpec(width=width, unique=u, noise=lam) for u, lam in cells]
    curves = train_ensemble(
        nets,
        n_rep,
        data=data,
        steps=steps,
        batch_size=BATCH,
        lr=lr,
        optimizer="sgd",
        record_every=max(1, steps),
        n_eval=None,
        rng=np.random.default_rng(rep_ss),
        dtype="float64",
    )
    return np.stack([100.0 * (1.0 - c.final_test_accuracy) for c in curves])


@figure(paper=PAPER, figure="analogue of Fig. 1 (digits, small network)", honours_backend=False)
def fig_1(out_dir, *, size, backend, seed):
    """Test error against the number K of unique hidden features (width N = 64), lambda = 0, 0.1, 0.5.

    A two-layer ReLU network ``x -> W2 relu(W1 x)`` with ``N = 64`` hidden units whose first layer
    is initialised with replicated features, ``W1[i] = (1 - lambda) W~[i mod K] + lambda W^[i]``
    (eqs. 10-11, He-scaled ``W~``, ``W^``), trained by SGD (batch 32) on 1,297 digits and tested on
    the other 500. Two regimes: the paper's learning rate 0.1, and a short run at 0.01 where the
    loss of diversity shows most. Mean and standard error over repetitions (smoke 2, default 6,
    full 30). Sizes: K in {1, 4} / {1, 2, 4, 8, 16, 64} / {1, 2, 4, 8, 16, 32, 64}; steps at
    learning rate 0.1: 20 / 1,000 / 7,500; at 0.01: 10 / 300 / 300.

    Notes
    -----
    Blumenfeld et al. 2020, Sec. 2.1, App. E, eqs. 10-11, Fig. 1 (which trains on MNIST / CIFAR-10).
    """
    width = 64
    ks = by_size(size, smoke=[1, 4], default=[1, 2, 4, 8, 16, 64], full=[1, 2, 4, 8, 16, 32, 64])
    lams = by_size(size, smoke=[0.0, 0.1], default=[0.0, 0.1, 0.5], full=[0.0, 0.1, 0.5])
    n_rep = by_size(size, smoke=2, default=6, full=30)
    regimes = _regimes(size)
    split, rep_ss = _split(seed)
    mean = np.empty((len(regimes), len(lams), len(ks)))
    stderr = np.empty_like(mean)
    cells = [(k, lam) for lam in lams for k in ks]
    for i in progress(range(len(regimes)), desc="fig_1"):
        lr, steps = list(regimes.values())[i]
        errs = _replicated_errors(split, rep_ss, n_rep, width, cells, lr, steps).reshape(len(lams), len(ks), n_rep)
        mean[i], stderr[i] = errs.mean(axis=2), errs.std(axis=2, ddof=1) / math.sqrt(n_rep)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    for i, (ax, (title, (_lr, steps))) in enumerate(zip(axes, regimes.items())):
        for j, lam in enumerate(lams):
            ax.errorbar(ks, mean[i, j], stderr[i, j], marker="o", capsize=2, label=f"$\\lambda$ = {lam:g}")
        ax.set_xscale("log", base=2)
        ax.set_xticks(ks, [str(k) for k in ks])
        ax.set_xlabel(f"unique features $K$ (of $N$ = {width} hidden units)")
        ax.set_ylabel("test error [%]")
        ax.set_title(f"{title}, {steps:,} SGD steps", fontsize=9)
        ax.legend(fontsize=8, title="initial noise", title_fontsize=8)
    fig.suptitle(
        f"{PAPER}, analogue of Fig. 1: replicated hidden features in a two-layer ReLU network\n"
        f"$W_1[i] = (1-\\lambda)\\,\\tilde W[i\\, \\mathrm{{mod}}\\, K] + \\lambda \\hat W[i]$; trained on {N_TRAIN:,} 8x8 digits "
        f"(batch {BATCH}), tested on {len(split[3])}; mean $\\pm$ s.e. of {n_rep} repetitions",
        fontsize=10,
    )
    fig.tight_layout()
    data = {
        "K": np.array(ks),
        "lambda": np.array(lams),
        "regime": list(regimes),
        "learning_rate": np.array([r[0] for r in regimes.values()]),
        "steps": np.array([r[1] for r in regimes.values()]),
        "test_error": mean,
        "test_error_stderr": stderr,
    }
    names = ["regime", "lambda", "K"]
    return save_figure(
        fig,
        out_dir,
        "blumenfeld2020_fig_1",
        data,
        figure=fig_1,
        rng=seed,
        size=size,
        backend=backend,
        params={
            "width_N": width,
            "K": ks,
            "lambda": lams,
            "repetitions": n_rep,
            "n_train": N_TRAIN,
            "n_test": len(split[3]),
            "batch": BATCH,
            "regimes": {t: {"learning_rate": lr, "steps": s} for t, (lr, s) in regimes.items()},
            "data": "digits 8x8, standardised per feature",
            "activation": "relu",
            "initialisation": "He (eqs. 10-11)",
        },
        axes={"test_error": names, "test_error_stderr": names},
        units={
            "test_error": "percent of test images misclassified (as in the PNG)",
            "test_error_stderr": "percent",
            "learning_rate": "per SGD step",
            "steps": "SGD steps",
        },
    )


@figure(paper=PAPER, figure="analogue of Fig. 5 (digits, small network)", honours_backend=False)
def fig_5(out_dir, *, size, backend, seed):
    """Width-N network with K unique features (replicated N/K times) against a width-K network.

    The network and training of :func:`fig_1` with ``lambda = 0``: ``N = 64`` hidden units made of
    ``K`` unique features each repeated ``N / K`` times, against a network of width ``K`` (the
    replicas removed). Mean and standard error over repetitions (smoke 2, default 6, full 30).
    Sizes: K in {1, 4} / {1, 2, 4, 8, 16, 32, 64}; steps as in :func:`fig_1`.

    Notes
    -----
    Blumenfeld et al. 2020, App. E, Fig. 5.
    """
    width = 64
    ks = by_size(size, smoke=[1, 4], default=[1, 2, 4, 8, 16, 32, 64], full=[1, 2, 4, 8, 16, 32, 64])
    n_rep = by_size(size, smoke=2, default=6, full=30)
    regimes = _regimes(size)
    split, rep_ss = _split(seed)
    variants = {"width N, K unique features replicated": lambda k: width, "width K (replicas removed)": lambda k: k}
    mean = np.empty((len(regimes), len(variants), len(ks)))
    stderr = np.empty_like(mean)
    jobs = [(i, k) for i in range(len(regimes)) for k in range(len(ks))]
    for i, k in progress(jobs, desc="fig_5"):
        lr, steps = list(regimes.values())[i]
        if k == 0:  # the replicated width-N networks of every K: one ensemble
            rep = _replicated_errors(split, rep_ss, n_rep, width, [(kk, 0.0) for kk in ks], lr, steps)
            mean[i, 0], stderr[i, 0] = rep.mean(axis=1), rep.std(axis=1, ddof=1) / math.sqrt(n_rep)
        errs = _replicated_errors(split, rep_ss, n_rep, ks[k], [(ks[k], 0.0)], lr, steps)[0]
        mean[i, 1, k], stderr[i, 1, k] = errs.mean(), errs.std(ddof=1) / math.sqrt(n_rep)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    for i, (ax, (title, (_lr, steps))) in enumerate(zip(axes, regimes.items())):
        for j, label in enumerate(variants):
            ax.errorbar(
                ks,
                mean[i, j],
                stderr[i, j],
                marker="o",
                capsize=2,
                label=label.replace("width N", f"width N = {width}"),
            )
        ax.set_xscale("log", base=2)
        ax.set_xticks(ks, [str(k) for k in ks])
        ax.set_xlabel("unique features $K$")
        ax.set_ylabel("test error [%]")
        ax.set_title(f"{title}, {steps:,} SGD steps", fontsize=9)
        ax.legend(fontsize=7)
    fig.suptitle(
        f"{PAPER}, analogue of Fig. 5: replicated features against removed replicas, two-layer ReLU network\n"
        f"trained on {N_TRAIN:,} 8x8 digits (batch {BATCH}), tested on {len(split[3])}; "
        f"mean $\\pm$ s.e. of {n_rep} repetitions",
        fontsize=10,
    )
    fig.tight_layout()
    data = {
        "K": np.array(ks),
        "variant": list(variants),
        "regime": list(regimes),
        "learning_rate": np.array([r[0] for r in regimes.values()]),
        "steps": np.array([r[1] for r in regimes.values()]),
        "test_error": mean,
        "test_error_stderr": stderr,
    }
    names = ["regime", "variant", "K"]
    return save_figure(
        fig,
        out_dir,
        "blumenfeld2020_fig_5",
        data,
        figure=fig_5,
        rng=seed,
        size=size,
        backend=backend,
        params={
            "width_N": width,
            "K": ks,
            "lambda": 0.0,
            "repetitions": n_rep,
            "n_train": N_TRAIN,
            "n_test": len(split[3]),
            "batch": BATCH,
            "regimes": {t: {"learning_rate": lr, "steps": s} for t, (lr, s) in regimes.items()},
            "data": "digits 8x8, standardised per feature",
            "activation": "relu",
        },
        axes={"test_error": names, "test_error_stderr": names},
        units={
            "test_error": "percent of test images misclassified (as in the PNG)",
            "test_error_stderr": "percent",
            "learning_rate": "per SGD step",
            "steps": "SGD steps",
        },
    )


#: ConstNet of Figs. 3 and 6: channels of the three stages, blocks per stage.
CONSTNET_WIDTHS, CONSTNET_BLOCKS = (8, 16, 32), 1
#: Learning rate of the ConstNet runs (full-batch gradient descent).
CONSTNET_LR = 0.1
#: The ConstNet tensor Fig. 3 follows: the 3 x 3 convolution of the second stage.
FIG3_TENSOR = "block1_0"


def _tensor_label(name: str, widths=CONSTNET_WIDTHS) -> str:
    """A reader's name for a ConstNet convolution (``params`` key -> words)."""
    if name == "first":
        return f"input conv 3x3 (1 -> {widths[0]})"
    if name.startswith("block"):
        stage = int(name[5:].split("_")[0])
        return f"stage {stage + 1} conv 3x3 ({widths[stage]} ch.)"
    stage = int(name[-1])
    if name.startswith("skip"):
        return f"widening {stage + 1}: skip 1x1 ({widths[stage]} -> {widths[stage + 1]})"
    return f"widening {stage + 1}: conv 3x3 ({widths[stage]} -> {widths[stage + 1]})"


def _constnet_sizes(size):
    return {
        "n_images": by_size(size, smoke=16, default=128, full=512),
        "steps": by_size(size, smoke=3, default=100, full=600),
    }


@dataclass(frozen=True)
class _EngineRecord:
    """What Figs. 3, 6 and Table 1 read of a ConstNet run of the engine (one network, every step recorded)."""

    names: list
    one_minus_cf: np.ndarray  # (steps + 1, n_tensors)
    one_minus_cb: np.ndarray
    one_minus_ct: np.ndarray
    loss: np.ndarray  # (steps + 1,) training loss (no dropout), full training set
    test_accuracy: np.ndarray  # (n_evaluations,)
    test_steps: np.ndarray


@functools.lru_cache(maxsize=4)
def _constnet_runs(size, seed):
    """The four ConstNet training runs shared by Figs. 3, 6 and Table 1, on the one training engine
    (:func:`meanfield.train.train_ensemble`; cached per size and seed)."""
    from meanfield.train import TrainingData, train_ensemble
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
        c = train_ensemble(
            spec,
            1,
            data=data,
            steps=sz["steps"],
            batch_size=n,  # full-batch gradient descent
            lr=CONSTNET_LR,
            optimizer="sgd",
            record_every=1,
            n_eval=None,
            rng=np.random.default_rng(train_ss),
            dtype="float64",
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
        "optimiser": "full-batch gradient descent (meanfield.train.train_ensemble, float64)",
        "learning_rate": CONSTNET_LR,
        "steps": sz["steps"],
        "n_images": sz["n_images"],
        "data": "digits 8x8x1, standardised per feature",
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
    axes[0].set_xlabel("full-batch gradient step")
    axes[0].xaxis.set_major_locator(MaxNLocator(integer=True))
    axes[0].set_ylabel("$C_f$ (solid), $C_b$ (dashed)")
    axes[0].set_ylim(-0.05, 1.05)
    axes[0].legend(fontsize=7, loc="center right")
    zero_band(axes[1], floor, one_minus, top=2.0)
    axes[1].set_xlabel("full-batch gradient step")
    axes[1].xaxis.set_major_locator(MaxNLocator(integer=True))
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
        figure=fig_3,
        rng=seed,
        size=size,
        backend=backend,
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
        ax.set_xlabel("full-batch gradient step")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
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
        figure=fig_6,
        rng=seed,
        size=size,
        backend=backend,
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
    from meanfield.train import TrainingData, train_ensemble
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
        c = train_ensemble(
            LeakyNetSpec(kinds=kinds, width=LEAKY_CHANNELS, slope=LEAKY_RHO),
            1,
            data=data,
            steps=sz["steps"],
            batch_size=n,
            lr=LEAKY_LR,
            optimizer="sgd",
            record_every=1,
            n_eval=None,
            rng=np.random.default_rng(train_ss),
            dtype="float64",
            noise=SymmetryBreaking(reduction_noise=LEAKY_NOISE),
            probes={"ratios": _ratio_probe(kinds, x, y)},
        )
        r = c.probes["ratios"][0]
        runs[name] = _RatioRecord(r[:, 0], r[:, 1], c.train_loss[0])
    return runs, sz


def _ratio_figure(out_dir, size, backend, seed, which, func):
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
        ax.set_xlabel("layer $\\ell$ (0 = input conv)")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
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
        figure=func,
        rng=seed,
        size=size,
        backend=backend,
        params={
            "depth": 12,
            "channels": LEAKY_CHANNELS,
            "leaky_relu_slope": LEAKY_RHO,
            "kernel": [3, 3],
            "configurations": LEAKY_CONFIGS,
            "learning_rate": LEAKY_LR,
            "relative_gradient_noise": LEAKY_NOISE,
            "optimiser": "full-batch gradient descent (meanfield.train.train_ensemble, float64)",
            "steps": steps,
            "n_images": sz["n_images"],
            "data": "digits 8x8x1, standardised per feature",
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
    return _ratio_figure(out_dir, size, backend, seed, "forward", fig_9)


@figure(paper=PAPER, figure="analogue of Fig. 10 (digits, small LeakyNet)", honours_backend=False)
def fig_10(out_dir, *, size, backend, seed):
    """Backward (gradient) symmetry-breaking perturbation ratio by layer during noisy training of LeakyNets.

    The runs of :func:`fig_9`; each panel shows the ratio for the gradients ``dL / da`` of every
    layer's features. Exact zeros in the grey band whose tick reads "0".

    Notes
    -----
    Blumenfeld et al. 2020, App. G, Fig. 10.
    """
    return _ratio_figure(out_dir, size, backend, seed, "backward", fig_10)


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
    from meanfield.train import TrainingData, init_parameters, train_ensemble
    from meanfield.train.symmetric import LeakyNetSpec, SymmetryBreaking, correlation_probe

    xd = x.reshape(-1, 1, 8, 8)
    data = TrainingData(xd, y, xd, y, 10, f"{n} shuffled digits 8x8 (accuracy on the training images)")
    for g in progress(gammas, desc="fig_12"):
        spec = LeakyNetSpec(kinds=("I",) * 12, width=LEAKY_CHANNELS, slope=LEAKY_RHO, gamma=(g,) * 12)
        w_init = init_parameters(spec, (1, 8, 8), 10, rng=0)[1:13]  # deterministic construction

        def change(net, params, w_init=w_init):
            return np.array([np.linalg.norm(p - w) / np.linalg.norm(w) for p, w in zip(params[1:13], w_init)])

        c = train_ensemble(
            spec,
            1,
            data=data,
            steps=steps,
            batch_size=n,  # full-batch gradient descent on the one training engine
            lr=lr,
            optimizer="sgd",
            record_every=1,
            n_eval=None,
            rng=np.random.default_rng(train_ss),
            dtype="float64",
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
    axes[0].set_xlabel("full-batch gradient step")
    axes[0].xaxis.set_major_locator(MaxNLocator(integer=True))
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
        figure=fig_12,
        rng=seed,
        size=size,
        backend=backend,
        params={
            "depth": 12,
            "channels": LEAKY_CHANNELS,
            "leaky_relu_slope": LEAKY_RHO,
            "gamma": gammas,
            "learning_rate": lr,
            "relative_gradient_noise": LEAKY_NOISE,
            "noise_model": "SymmetryBreaking(reduction_noise): g <- g (1 + noise xi) per entry",
            "optimiser": "full-batch gradient descent (meanfield.train.train_ensemble, float64)",
            "steps": steps,
            "n_images": n,
            "data": "digits 8x8x1, standardised per feature",
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


def _pair(w):
    return symmetry.forward_correlation(w), symmetry.backward_correlation(w)


@figure(paper=PAPER, figure="not in the paper: closed forms after eq. 6", honours_backend=False)
def table_correlations(out_dir, *, size, backend, seed):
    """Closed-form forward / backward correlations C_f, C_b (after eq. 6) next to values measured on tensors.

    Random tensors are measured as the mean over draws with its standard error (smoke 10, default
    200, full 2,000 draws); tensors whose correlations are the same for every draw (deterministic
    constructions, and orthogonal ones, whose filters are exactly orthogonal) are measured once.

    Notes
    -----
    Blumenfeld et al. 2020, eqs. 5-6 and the closed forms listed after eq. 6; App. B eq. 8 (looks-linear).
    """
    rng_random, rng_replicated, rng_orth, rng_ll = (
        np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(4)
    )
    n, p, d, r = 16, 4, 32, 4
    delta = mf_init.delta_kernel((3, 3))[..., None, None]
    n_rand = by_size(size, smoke=10, default=200, full=2000)

    def mean_se(pairs):
        a = np.asarray(pairs)
        return a.mean(axis=0), a.std(axis=0, ddof=1) / math.sqrt(len(a))

    rand = mean_se([_pair(rng_random.standard_normal((3, 3, n, n))) for _ in range(n_rand)])
    rep = mean_se([_pair(np.repeat(rng_replicated.standard_normal((d // r, n)), r, axis=0)) for _ in range(n_rand)])

    def exact(w):
        return (np.array(_pair(w)), np.zeros(2))

    rows = [
        (
            f"random i.i.d. N(0,1), 3x3 kernel, {n}x{n} channels",
            symmetry.closed_form_correlations("random"),
            rand,
            f"mean of {n_rand} draws",
        ),
        (
            f"delta-orthogonal, {n}x{n} channels",
            symmetry.closed_form_correlations("orthogonal"),
            exact(delta * mf_init.haar_orthogonal(n, n, rng=rng_orth)),
            "one draw (exact for all)",
        ),
        (
            f"identity replicated {p} times ({p * n}x{n})",
            symmetry.closed_form_correlations("replicated_identity", p * n, n),
            exact(delta * np.tile(np.eye(n), (p, 1))),
            "deterministic",
        ),
        (
            f"constant 0.3, {n}x{n}",
            symmetry.closed_form_correlations("constant"),
            exact(np.full((3, 3, n, n), 0.3)),
            "deterministic",
        ),
        (
            "zero tensor (C = 1 by convention)",
            symmetry.closed_form_correlations("zero"),
            exact(np.zeros((3, 3, n, n))),
            "deterministic",
        ),
        (
            f"{d // r} random rows, each {r} times ({d}x{n})",
            symmetry.closed_form_correlations("replicated_features", d, replicas=r),
            rep,
            f"mean of {n_rand} draws",
        ),
        (
            f"LeakyNet averaging layer $11^T/n$, n = {n}",
            symmetry.closed_form_correlations("constant"),
            exact(delta * mf_init.channel_matrix(n, "1")),
            "deterministic",
        ),
        (
            f"looks-linear delta-orth. (eq. 8), n = {n}",
            symmetry.ClosedFormCorrelations("looks_linear", -1 / (n - 1), -1 / (n - 1), True),
            exact(mf_init.looks_linear_delta_orthogonal(n, rng=rng_ll)),
            "one draw (exact for all)",
        ),
    ]

    def num(value):
        return f"{0.0 if abs(value) < 5e-5 else value:+.4f}"  # no "-0.0000" for a rounding-level value

    def cell(value, se, how):
        return num(value) if how in ("deterministic", "one draw (exact for all)") else f"{num(value)} ± {se:.4f}"

    text = [
        [name, num(th.c_f), cell(m[0], s[0], how), num(th.c_b), cell(m[1], s[1], how), how]
        for name, th, (m, s), how in rows
    ]
    cols = ["tensor", "$C_f$ closed form", "$C_f$ measured", "$C_b$ closed form", "$C_b$ measured", "measured on"]
    fig, ax = plt.subplots(figsize=(13.5, 0.28 * (len(text) + 1) + 0.6))
    ax.axis("off")
    tab = ax.table(
        cellText=text,
        colLabels=cols,
        loc="upper center",
        cellLoc="center",
        colWidths=[0.31, 0.11, 0.15, 0.11, 0.15, 0.17],
    )
    tab.auto_set_font_size(False)
    tab.set_fontsize(8)
    tab.scale(1, 1.35)
    for (row, col), c in tab.get_celld().items():
        if col == 0 and row > 0:
            c.set_text_props(ha="left")
            c.PAD = 0.02
    ax.set_title(
        f"{PAPER} (not a figure of the paper): forward and backward weight correlations $C_f$, $C_b$ (eqs. 5-6),\n"
        f"closed forms listed after eq. 6 against values measured on tensors (mean $\\pm$ standard error over random draws)",
        fontsize=10,
    )
    data = {
        "tensor": [row[0] for row in rows],
        "c_f_theory": np.array([row[1].c_f for row in rows]),
        "c_f_measured": np.array([row[2][0][0] for row in rows]),
        "c_f_stderr": np.array([row[2][1][0] for row in rows]),
        "c_b_theory": np.array([row[1].c_b for row in rows]),
        "c_b_measured": np.array([row[2][0][1] for row in rows]),
        "c_b_stderr": np.array([row[2][1][1] for row in rows]),
        "measured_on": [row[3] for row in rows],
    }
    return save_figure(
        fig,
        out_dir,
        "blumenfeld2020_table_correlations",
        data,
        figure=table_correlations,
        rng=seed,
        size=size,
        backend=backend,
        params={
            "n": n,
            "replication_P": p,
            "replicated_features_d": d,
            "replicas_R": r,
            "random_draws": n_rand,
            "kernel": [3, 3],
        },
        units={
            "c_f_theory": "dimensionless (eq. 5)",
            "c_b_theory": "dimensionless (eq. 6)",
            "c_f_stderr": "standard error of the mean over draws; 0 where the value is the same for every draw",
            "c_b_stderr": "as c_f_stderr",
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
        figure=table_1,
        rng=seed,
        size=size,
        backend=backend,
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


#: Widths of the ConstNet of the engine runs (:mod:`meanfield.validation.symmetry_breaking`).
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

    The runs of :func:`meanfield.validation.symmetry_breaking.constnet_noise_table`: He and '0'
    initialised ConstNets trained by the ensemble trainer, deterministic, with 1 % dropout, with
    the explicit model of non-deterministic reductions (computation noise), with gradient noise,
    and in bfloat16 with and without computation noise. Columns: mean test accuracy +- standard
    error over seeds, the paper's CIFAR-10 number, ``1 - C_f`` at the end (0: still identical
    features), and whether the accuracy recovered above the deterministic run (one-sided, 3 SE).

    Notes
    -----
    Blumenfeld et al. 2020, Sec. 4, Table 1, App. I, Table 3.
    """
    from meanfield.validation.symmetry_breaking import constnet_noise_table

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
        figure=table_3,
        rng=seed,
        size=size,
        backend=backend,
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
    from meanfield.validation.symmetry_breaking import constnet_noise_table

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
        figure=table_4,
        rng=seed,
        size=size,
        backend=backend,
        params=_engine_params(t),
        axes={"test_accuracy": ["variant", "seed"]},
        units={"test_accuracy": "fraction", "paper_test_accuracy": "percent", "difference": "fraction"},
    )


@figure(paper=PAPER, figure="analogue of Table 2 (digits, small LeakyNets, train_ensemble)", honours_backend=False)
def table_2(out_dir, *, size, backend, seed):
    """LeakyNets with 0 to 13 averaging layers and a He-initialised one: accuracy, max C_f, mean sqrt(1 - C_f^2).

    The runs of :func:`meanfield.validation.symmetry_breaking.leakynet_averaging_table` (every
    run with the computation-noise model). Table 2's claim: accuracy falls as averaging ('1')
    layers are added, ``max_l C_f`` approaches 1 and the mean dissimilarity falls.

    Notes
    -----
    Blumenfeld et al. 2020, Sec. 5.1, Table 2. With the digits' single input channel, the first convolution of
    every LeakyNet gives identical features, so all LeakyNets here start symmetric (on CIFAR-10 the
    'I' networks do not).
    """
    from meanfield.validation.symmetry_breaking import leakynet_averaging_table, table_2_metrics

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
        figure=table_2,
        rng=seed,
        size=size,
        backend=backend,
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
    from meanfield.validation.symmetry_breaking import constnet_noise_table

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
        figure=fig_7,
        rng=seed,
        size=size,
        backend=backend,
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
    from meanfield.validation.symmetry_breaking import leakynet_averaging_table

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
        figure=fig_8,
        rng=seed,
        size=size,
        backend=backend,
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
    from meanfield.validation.symmetry_breaking import constnet_noise_table

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
        figure=fig_11,
        rng=seed,
        size=size,
        backend=backend,
        params=_engine_params(t),
        axes={"test_accuracy": ["variant", "seed"]},
        units={"test_accuracy": "fraction", "spread": "percentage points (max - min over seeds)"},
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
    :mod:`meanfield.validation.symmetry_groups` (Fig. 6's caption: they fluctuate), whose exact
    permutation test the title reports for this one run.

    Notes
    -----
    Blumenfeld et al. 2020, Sec. 4.2, Fig. 4 (and Fig. 6's caption for the groups). The paper: CIFAR-10, the first
    3 epochs of 391 SGD steps; here 8 x 8 digits, full-batch gradient descent (one step = one epoch).
    """
    from meanfield.validation.symmetry_groups import P_THRESHOLD, constnet_group_series

    from meanfield.train.symmetric import ConstNetSpec, constnet_groups

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
        ax.set_xlabel("full-batch gradient step (= epoch)")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
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
        figure=fig_4,
        rng=seed,
        size=size,
        backend=backend,
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
            "ratio_within_between": "R of meanfield.validation.symmetry_groups.group_separation (dimensionless)",
            "p_value": "exact permutation p-value of R (one network)",
            "ratio_forward_only": "R of the C_f series alone (descriptive)",
            "ratio_backward_only": "R of the C_b series alone (descriptive)",
            "step": "full-batch gradient steps",
        },
    )
