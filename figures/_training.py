"""Shared drawing of the trained-network figures: the runs come from
:func:`meanfield.train.experiment.experiment` (cached per process, so ``meanfield reproduce``
trains each ensemble once for the figures and the validation rows)."""

from __future__ import annotations

import math

import numpy as np

from meanfield.train.experiment import experiment

from ._common import _owner, colors, plt, save_figure, title

__all__ = [
    "curves_figure",
    "depth_figure",
    "experiment",
    "relu_depth_figure",
    "relu_run_details",
    "run_sizes",
    "title_and_save",
]


def run_sizes(p: dict, keys) -> str:
    """``"k1 = v1, k2 = v2"`` for the title line."""
    return ", ".join(f"{k} {p[k]}" for k in keys if k in p)


def relu_run_details(p: dict, optimiser: str, size: str) -> str:
    """The title line of a ReLU depth sweep's parameters ``p``: width, ``optimiser`` steps, learning
    rate (a schedule's text as given), networks per point, data set and figure size."""
    lr = p["lr"] if isinstance(p["lr"], str) else f"{p['lr']:g}"
    return (
        f"ReLU, width {p['width']}, {p['steps']} {optimiser} steps, lr {lr}, {p['n_networks']} nets each; "
        f"{p['dataset'].split(' (')[0]} ({size} size)"
    )


def title_and_save(func, fig, out_dir, res, data, axes, units, what, details, notes=""):
    """Title ``fig`` "paper, figure: ``what``" of the declared figure function ``func`` over ``details``,
    and save it as ``PAPER_NAME`` (its module and name) with the run's ``params``.

    Parameters
    ----------
    func : callable
        The declared figure function (:func:`meanfield.figures._common.figure`) being drawn.
    fig : matplotlib.figure.Figure
        The drawn figure.
    out_dir : pathlib.Path
        Output folder.
    res : dict
        The run of :func:`experiment`; its ``"params"`` are recorded.
    data, axes, units : dict
        The numbers saved beside the PNG, their axis names and units (:func:`save_figure`).
    what, details : str
        The title's subject and its second line of sizes and parameters.
    notes : str, optional
        A note for the JSON.

    Returns
    -------
    list of pathlib.Path
        The PNG and the JSON.
    """
    title(fig, func.paper, func.figure, what, details)
    return save_figure(
        fig,
        out_dir,
        f"{_owner(func.__module__)}_{func.__name__}",
        data,
        params=res["params"],
        axes=axes,
        units=units,
        notes=notes,
    )


def _ci95(a: np.ndarray) -> np.ndarray:
    """Half-width of the 95 % confidence interval of the mean over the last axis (0 for one sample)."""
    n = a.shape[-1]
    return 1.96 * a.std(axis=-1, ddof=1) / math.sqrt(n) if n > 1 else np.zeros(a.shape[:-1])


def depth_figure(
    func,
    out_dir,
    res,
    *,
    what,
    details,
    key="test_accuracy",
    ylabel="test accuracy",
    notes="",
    bars="ci",
    extra_panel=None,
):
    """Accuracy against depth, one line per initialiser (mean and 95 % CI or min-max bars), saved as
    ``PAPER_NAME`` of the figure function ``func``."""
    acc = res[key]
    depths = res["depths"]
    ncols = 2 if extra_panel else 1
    fig, axs = plt.subplots(1, ncols, figsize=(5.6 * ncols, 4.2), layout="constrained", squeeze=False)
    ax = axs[0, 0]
    for j, (label, col) in enumerate(zip(res["labels"], colors(len(res["labels"])))):
        m = acc[:, j].mean(axis=-1)
        if bars == "minmax":
            err = [m - acc[:, j].min(axis=-1), acc[:, j].max(axis=-1) - m]
        else:
            err = _ci95(acc[:, j])
        ax.errorbar(depths, m, yerr=err, marker="o", ms=3, capsize=2, lw=1, color=col, label=label)
    ax.axhline(0.1, color="0.6", ls=":", lw=0.8, label="chance (10 classes)")
    ax.set_xlabel("depth $L$ (hidden layers)")
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, 1)
    ax.legend(fontsize=7)
    if extra_panel:
        extra_panel(axs[0, 1])
    data = {k: v for k, v in res.items() if k not in ("params",)}
    data["labels"] = list(res["labels"])
    axes = {k: ["depth", "initialiser", "network"] for k in data if k.endswith("accuracy")}
    if "v" in data:
        axes["v"] = ["variance vector (GS0..GS4)", "kernel row", "kernel column"]
    if "mode_energy_fraction" in data:
        axes["mode_energy_fraction"] = ["depth", "variance vector (GS0..GS4)"]
    for k, v in data.items():
        if isinstance(v, np.ndarray) and v.ndim >= 2 and k not in axes:
            axes[k] = [f"axis {i}" for i in range(v.ndim)]
    return title_and_save(
        func, fig, out_dir, res, data, axes, {key: "fraction correct", "seconds": "s"}, what, details, notes
    )


def relu_depth_figure(func, out_dir, name, optimiser, size, seed, what, keep=None, **style):
    """:func:`depth_figure` of the ReLU depth sweep ``name`` of :func:`experiment` trained with
    ``optimiser``, its parameters on the title line (:func:`relu_run_details`); ``keep`` (indices or a
    slice) selects initialisers, ``style`` goes to :func:`depth_figure`."""
    res = experiment(name, size, seed)
    if keep is not None:
        labels = res["labels"][keep] if isinstance(keep, slice) else [res["labels"][j] for j in keep]
        res = dict(res, labels=labels, test_accuracy=res["test_accuracy"][:, keep])
    details = relu_run_details(res["params"], optimiser, size)
    return depth_figure(func, out_dir, res, what=what, details=details, **style)


def curves_figure(func, out_dir, res, inits, labels, *, what, details, notes=""):
    """Train (dashed) and test (solid) accuracy against steps for the given initialisers of ``deep_cnn``,
    saved as ``PAPER_NAME`` of the figure function ``func``."""
    fig, ax = plt.subplots(figsize=(5.8, 4.2), layout="constrained")
    data = {}
    axes = {}
    for init, label, col in zip(inits, labels, colors(len(inits))):
        run = res["runs"][init]
        steps = run["steps"]
        for key, ls in (("test_accuracy", "-"), ("train_accuracy", "--")):
            a = run[key]
            m = a.mean(axis=0)
            ax.plot(steps, m, ls, color=col, lw=1.2, label=f"{label}, {key.split('_')[0]}")
            ax.fill_between(steps, a.min(axis=0), a.max(axis=0), color=col, alpha=0.12, lw=0)
            data[f"{init}_{key}"] = a
            axes[f"{init}_{key}"] = ["network", "record"]
        data[f"{init}_steps"] = steps
    ax.axhline(0.1, color="0.6", ls=":", lw=0.8, label="chance")
    ax.set_xlabel("training step")
    ax.set_ylabel("accuracy (mean; band: min to max)")
    finals = ", ".join(
        f"{label} {res['runs'][init]['test_accuracy'][:, -1].mean():.2f}" for init, label in zip(inits, labels)
    )
    details = f"{details}\nfinal test accuracy (mean over networks): {finals}"
    ax.set_ylim(0, 1)
    ax.legend(fontsize=7)
    data["seconds"] = res["seconds"]
    return title_and_save(func, fig, out_dir, res, data, axes, {"seconds": "s"}, what, details, notes)
