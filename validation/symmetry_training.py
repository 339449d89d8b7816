"""Deprecated: Orhan 2017's skip-network training moved to :mod:`meanfield.train.skip`.

This module re-exports its public names and warns ``DeprecationWarning`` when imported.
"""

from __future__ import annotations

from ._moved import reexport_moved

__all__ = reexport_moved(
    globals(),
    "meanfield.train.skip",
    "import from meanfield.train.skip",
    ("SkipNet", "SkipTrainingResult", "rescaled_accuracy_ratio", "skip_ensemble_hessians", "train_skip_ensemble"),
)
