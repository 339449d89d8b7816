"""Blumenfeld et al. 2020, Sec. 2.1 and App. E: replicated hidden features (Figs. 1 and 5)."""

from __future__ import annotations

import math

import numpy as np

from .._common import by_size, figure, plt, progress, save_figure
from ._shared import N_TRAIN, PAPER, _digits

#: Minibatch of the SGD runs of Figs. 1 and 5.
BATCH = 32


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


#: Units of the test errors of Figs. 1 and 5.
_ERROR_UNITS = {
    "test_error": "percent of test images misclassified (as in the PNG)",
    "test_error_stderr": "percent",
    "learning_rate": "per SGD step",
    "steps": "SGD steps",
}


def _draw_errors(ks, regimes, mean, stderr, labels, xlabel, **legend):
    """Figs. 1 and 5: test error against K, one panel per SGD regime, one line per entry of ``labels``
    (``mean[regime, line, K]`` and its standard error); ``legend`` styles each panel's legend."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
    for i, (ax, (title, (_lr, steps))) in enumerate(zip(axes, regimes.items())):
        for j, label in enumerate(labels):
            ax.errorbar(ks, mean[i, j], stderr[i, j], marker="o", capsize=2, label=label)
        ax.set_xscale("log", base=2)
        ax.set_xticks(ks, [str(k) for k in ks])
        ax.set_xlabel(xlabel)
        ax.set_ylabel("test error [%]")
        ax.set_title(f"{title}, {steps:,} SGD steps", fontsize=9)
        ax.legend(**legend)
    return fig


def _params(width, ks, lam, n_rep, split, regimes):
    """The parameters Figs. 1 and 5 record (``lam``: the initial noise lambda, a list for Fig. 1)."""
    return {
        "width_N": width,
        "K": ks,
        "lambda": lam,
        "repetitions": n_rep,
        "n_train": N_TRAIN,
        "n_test": len(split[3]),
        "batch": BATCH,
        "regimes": {t: {"learning_rate": lr, "steps": s} for t, (lr, s) in regimes.items()},
        "data": "digits 8x8, standardised per feature",
        "activation": "relu",
    }


def _save_errors(fig, out_dir, func, line, lines, mean, stderr, regimes, params):
    """Save Fig. 1 or 5: the test errors with axes ``(regime, line, K)``, ``lines`` naming the lines."""
    data = {
        "K": np.array(params["K"]),
        line: lines,
        "regime": list(regimes),
        "learning_rate": np.array([r[0] for r in regimes.values()]),
        "steps": np.array([r[1] for r in regimes.values()]),
        "test_error": mean,
        "test_error_stderr": stderr,
    }
    names = ["regime", line, "K"]
    return save_figure(
        fig,
        out_dir,
        f"blumenfeld2020_{func.__name__}",
        data,
        params=params,
        axes={"test_error": names, "test_error_stderr": names},
        units=_ERROR_UNITS,
    )


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
    fig = _draw_errors(
        ks,
        regimes,
        mean,
        stderr,
        [f"$\\lambda$ = {lam:g}" for lam in lams],
        f"unique features $K$ (of $N$ = {width} hidden units)",
        fontsize=8,
        title="initial noise",
        title_fontsize=8,
    )
    fig.suptitle(
        f"{PAPER}, analogue of Fig. 1: replicated hidden features in a two-layer ReLU network\n"
        f"$W_1[i] = (1-\\lambda)\\,\\tilde W[i\\, \\mathrm{{mod}}\\, K] + \\lambda \\hat W[i]$; trained on {N_TRAIN:,} 8x8 digits "
        f"(batch {BATCH}), tested on {len(split[3])}; mean $\\pm$ s.e. of {n_rep} repetitions",
        fontsize=10,
    )
    fig.tight_layout()
    params = _params(width, ks, lams, n_rep, split, regimes) | {"initialisation": "He (eqs. 10-11)"}
    return _save_errors(fig, out_dir, fig_1, "lambda", np.array(lams), mean, stderr, regimes, params)


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
    labels = [label.replace("width N", f"width N = {width}") for label in variants]
    fig = _draw_errors(ks, regimes, mean, stderr, labels, "unique features $K$", fontsize=7)
    fig.suptitle(
        f"{PAPER}, analogue of Fig. 5: replicated features against removed replicas, two-layer ReLU network\n"
        f"trained on {N_TRAIN:,} 8x8 digits (batch {BATCH}), tested on {len(split[3])}; "
        f"mean $\\pm$ s.e. of {n_rep} repetitions",
        fontsize=10,
    )
    fig.tight_layout()
    params = _params(width, ks, 0.0, n_rep, split, regimes)
    return _save_errors(fig, out_dir, fig_5, "variant", list(variants), mean, stderr, regimes, params)
