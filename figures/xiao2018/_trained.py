"""Xiao et al. 2018, Sec. 3: trained networks (Figs. 1, 2, 3, 4a, 5), the experiments of meanfield.train.experiment."""

from __future__ import annotations

import numpy as np

from meanfield import conv, dense

from .. import _training
from .._common import by_size, figure, plt
from ._cnn import _red_to_black
from ._shared import PAPER

# --- trained networks: meanfield.train.experiment runs, drawn by figures/_training.py ---


@figure(paper=PAPER, figure="Fig. 2", honours_backend=False)
def fig_2(out_dir, *, size, backend, seed):
    """Training accuracy over (sigma_w2, depth) of tanh networks at sigma_b2 = 2e-5, with 6 xi_c overlaid.

    Notes
    -----
    Xiao et al. 2018 Fig. 2 and Sec. 3.1: networks train only while ``L < 6 xi_c``. Fully-connected tanh
    networks on the embedded digits (the CNN mean field's zero mode has the dense depth scale);
    the curve is the theory layer of :func:`fig_2_theory` (``dense.phase_diagram``). Sizes: see
    :mod:`meanfield.train.experiment` (``depth_scale``).
    """
    res = _training.experiment("depth_scale", size, seed)
    p = res["params"]
    sw, depths = res["sigma_w2"], res["depths"]
    acc = res["train_accuracy"].mean(axis=2)
    n_w = by_size(size, smoke=40, default=240, full=800)
    curve_sw = np.linspace(0.05, max(4.0, float(sw.max())), n_w)
    six_xi = 6 * dense.phase_diagram("tanh", curve_sw, [2e-5]).xi_c[:, 0]
    from meanfield.train.experiment import depth_scale_agreement

    frac, n = depth_scale_agreement(res)
    fig, ax = plt.subplots(figsize=(6.0, 4.4), layout="constrained")
    mesh = ax.pcolormesh(sw, depths, acc, shading="nearest", cmap="viridis", vmin=0, vmax=1)
    fig.colorbar(mesh, ax=ax, label="training accuracy (mean over networks)")
    ax.plot(curve_sw, six_xi, "w--", lw=1.2, label=r"$6\xi_c$ (mean field)")
    ax.set_yscale("log")
    ax.set_ylim(depths.min() / 1.3, depths.max() * 1.3)
    ax.set_xlabel(r"weight variance $\sigma_w^2$")
    ax.set_ylabel("depth $L$ (hidden layers)")
    ax.legend(fontsize=7, loc="upper right", facecolor="0.4", labelcolor="w")
    data = {
        "sigma_w2": sw,
        "depths": depths,
        "train_accuracy": res["train_accuracy"],
        "test_accuracy": res["test_accuracy"],
        "xi_c": res["xi_c"],
        "curve_sigma_w2": curve_sw,
        "curve_six_xi_c": six_xi,
        "agreement": frac,
        "cells_scored": n,
        "seconds": res["seconds"],
    }
    axes = {k: ["depth", "sigma_w2", "network"] for k in ("train_accuracy", "test_accuracy")}
    return _training.title_and_save(
        fig_2,
        fig,
        out_dir,
        res,
        data,
        axes,
        units={"train_accuracy": "fraction correct", "seconds": "s"},
        what=rf"trainability of tanh networks vs $6\xi_c$ (agreement {frac:.0%} of {n} cells)",
        details=(
            f"dense width {p['width']}, {p['steps']} steps, {p['n_networks']} nets/cell, "
            f"$\\sigma_b^2$=2e-5; {p['dataset'].split(' (')[0]} ({size} size)"
        ),
        notes="trainable = mean training accuracy >= 0.5; cells within a factor 2 of 6 xi_c not scored",
    )


#: What Figs. 1, 3 and 5 draw of the ``deep_cnn`` runs: ``{figure: ({initialiser: label}, title)}``.
_DEEP_CNN_CURVES = {
    "fig_1": (
        {"delta_orthogonal": "delta-orthogonal", "gaussian": "Gaussian"},
        "critical delta-orthogonal vs Gaussian tanh CNNs",
    ),
    "fig_3": (
        {"delta_orthogonal": "delta-orthogonal", "orthogonal": "orthogonal (Alg. 1)"},
        "learning curves of deep orthogonal-kernel tanh CNNs",
    ),
    "fig_5": (
        {"orthogonal": "orthogonal (Alg. 1)", "gaussian": "Gaussian"},
        "orthogonal vs Gaussian kernels: training speed",
    ),
}


def _deep_cnn_curves(func, out_dir, size, seed):
    """Train and test accuracy curves of ``func``'s ``deep_cnn`` runs (:data:`_DEEP_CNN_CURVES`)."""
    runs, what = _DEEP_CNN_CURVES[func.__name__]
    res = _training.experiment("deep_cnn", size, seed)
    p = res["params"]
    details = (
        f"L = {p['depth']} layers{' (largest depth in the 6 CPU-min budget)' if size == 'default' else ''}, "
        f"{p['channels']} channels, 3x3 periodic, critical $\\sigma_w^2$={p['sigma_w2']:.4f}, "
        f"{p['steps']} steps, lr {p['lr']:g}, {p['n_networks']} nets each; digits 4x4 ({size} size)"
    )
    return _training.curves_figure(func, out_dir, res, list(runs), list(runs.values()), what=what, details=details)


@figure(paper=PAPER, figure="Fig. 1", honours_backend=False)
def fig_1(out_dir, *, size, backend, seed):
    """Test accuracy over training of critical delta-orthogonal vs Gaussian tanh CNNs of the same depth.

    Notes
    -----
    Xiao et al. 2018 Fig. 1 / Sec. 3.2: delta-orthogonal (Algorithm 2) CNNs of 10,000 layers train; here the
    depth the CPU budget allows (``deep_cnn`` of :mod:`meanfield.train.experiment`; 10,000
    layers at ``size="full"``).
    """
    return _deep_cnn_curves(fig_1, out_dir, size, seed)


@figure(paper=PAPER, figure="Fig. 3", honours_backend=False)
def fig_3(out_dir, *, size, backend, seed):
    """Training and test accuracy curves of the deepest delta-orthogonal tanh CNN (with orthogonal, Algorithm 1).

    Notes
    -----
    Xiao et al. 2018 Fig. 3 shows CIFAR-10 learning curves for depths 32 to 8,192; here one depth (the
    ``deep_cnn`` run shared with :func:`fig_1` and :func:`fig_5`) on the 4 x 4 digits.
    """
    return _deep_cnn_curves(fig_3, out_dir, size, seed)


@figure(paper=PAPER, figure="Fig. 5", honours_backend=False)
def fig_5(out_dir, *, size, backend, seed):
    """Training speed: orthogonal (Algorithm 1) against Gaussian kernels of the same critical depth.

    Notes
    -----
    Xiao et al. 2018 Fig. 5: a 4,000-layer CNN with Gaussian kernels learns slowly, the orthogonal one fast.
    """
    return _deep_cnn_curves(fig_5, out_dir, size, seed)


@figure(paper=PAPER, figure="Fig. 4a", honours_backend=False)
def fig_4a(out_dir, *, size, backend, seed):
    """Test accuracy against depth of critical Gaussian tanh CNNs with variance vectors GS0 ... GS4.

    Notes
    -----
    Xiao et al. 2018 Fig. 4a / Sec. 3.3: the more poorly conditioned the singular values of A_v (right
    panel, on the image size trained here: 8 x 8 digits at the default size), the faster test
    accuracy falls with depth. The title states validation row 9's one-sided Spearman test
    (:func:`meanfield.train.experiment.nonuniform_v_rank_test`) at the deepest depth.
    """
    from meanfield.compare import RANK_LEVEL
    from meanfield.train.experiment import nonuniform_v_rank_test

    res = _training.experiment("nonuniform_v", size, seed)
    p = res["params"]
    image = tuple(p.get("image_shape", (4, 4)))

    def singular_values(ax):
        for i, (v, col) in enumerate(zip(res["v"], _red_to_black(len(res["v"])))):
            s = conv.averaging_singular_values(v, image)
            ax.plot(np.arange(1, s.size + 1), s, "-o", ms=2.5, lw=1, color=col, label=f"GS{i}")
        ax.set_xlabel("index (descending)")
        ax.set_ylabel(r"singular value of $\mathcal{A}_v\star$" + f" ({image[0]} x {image[-1]} images)")
        ax.legend(fontsize=7)

    # validation row 9's statistic: Spearman rho of the theory's score (mean sigma^(2L)) and accuracy
    deepest = res["test_accuracy"][-1].mean(axis=-1)
    test = nonuniform_v_rank_test(res)
    depth = int(res["depths"][-1])
    seen = (
        f"paper's ordering seen at L = {depth}: rho = {test.rho:+.3f} (p = {test.p_value:.2g} < {RANK_LEVEL}), "
        f"but the mean accuracies of the v's differ by {deepest.max() - deepest.min():.3f} only"
        if test.p_value < RANK_LEVEL
        else f"paper's ordering NOT seen at this size: {res['labels'][int(np.argmax(deepest))]} best at "
        f"L = {depth} (rho = {test.rho:+.3f}, p = {test.p_value:.2g}, needed rho > 0 at p < {RANK_LEVEL})"
    )
    return _training.depth_figure(
        fig_4a,
        out_dir,
        res,
        what="test accuracy vs depth for non-uniform variance vectors",
        details=(
            f"critical Gaussian CNNs, {p['channels']} channels, {p['steps']} steps, {p['n_networks']} nets each; "
            f"digits {image[0]}x{image[-1]} ({size} size)\n{seen}"
        ),
        extra_panel=singular_values,
        notes=seen,
    )
