"""What the Blumenfeld et al. 2020 figures share: the paper's name, the digits, ConstNet tensor names, run records."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from meanfield.data import load_digits

#: How the figures' titles and metadata name the paper.
PAPER = "Blumenfeld et al. 2020"

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
