"""What the Blumenfeld et al. 2020 figures share: the paper's name, the digits, ConstNet tensor names, run records."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from matplotlib.ticker import MaxNLocator

from meanfield.data import load_digits

#: How the figures' titles and metadata name the paper.
PAPER = "Blumenfeld et al. 2020"

#: How the JSON of the trained ConstNet / LeakyNet figures names their optimiser and data.
GD_OPTIMISER = "full-batch gradient descent (meanfield.train.train_ensemble, float64)"
DIGITS_DATA = "digits 8x8x1, standardised per feature"

#: Images of the digits data set used for training in Figs. 1 and 5 (the other 500 are the test set).
N_TRAIN = 1297


def _digits(rng):
    """The standardised digits, shuffled by ``rng``."""
    d = load_digits(standardized=True)
    perm = rng.permutation(len(d.y))
    return d.x[perm], d.y[perm]


#: ConstNet of Figs. 3 and 6: channels of the three stages, blocks per stage.
CONSTNET_WIDTHS, CONSTNET_BLOCKS = (8, 16, 32), 1


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


def _train_full_batch(spec, data, *, steps, lr, rng, noise, probes):
    """One network of ``spec`` trained by full-batch gradient descent on ``data`` (the one training engine).

    Parameters
    ----------
    spec : network spec of :mod:`meanfield.train.symmetric`
        The ConstNet or LeakyNet to train.
    data : meanfield.train.TrainingData
        Training and test images; every step uses all the training images.
    steps : int
        Gradient steps; every step is recorded (losses and probes have ``steps + 1`` rows).
    lr : float
        Learning rate of plain SGD.
    rng : numpy.random.Generator
        The stream of the network's weights and of its noise.
    noise : meanfield.train.symmetric.SymmetryBreaking or None
        The symmetry-breaking noise source (``None``: fully deterministic).
    probes : dict
        Trainer probes, ``{name: probe(net, params)}``.

    Returns
    -------
    meanfield.train.TrainingCurves
        The curves of the one network (float64; losses on the whole training set, no evaluation subset).
    """
    from meanfield.train import train_ensemble

    return train_ensemble(
        spec,
        1,
        data=data,
        steps=steps,
        batch_size=len(data.x_train),
        lr=lr,
        optimizer="sgd",
        record_every=1,
        n_eval=None,
        rng=rng,
        dtype="float64",
        noise=noise,
        probes=probes,
    )


def _integer_xaxis(ax, label="full-batch gradient step"):
    """Label the x axis of ``ax`` with ``label`` and put its ticks on whole numbers (steps, layers)."""
    ax.set_xlabel(label)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
