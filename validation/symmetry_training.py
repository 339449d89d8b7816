"""Deprecated: Orhan 2017's skip-network training moved to :mod:`meanfield.train.skip`.

This module re-exports its public names and warns ``DeprecationWarning`` when imported.
"""

from __future__ import annotations

import warnings

from meanfield.train.skip import (
    SkipNet,
    SkipTrainingResult,
    rescaled_accuracy_ratio,
    skip_ensemble_hessians,
    train_skip_ensemble,
)

__all__ = ["SkipNet", "SkipTrainingResult", "rescaled_accuracy_ratio", "skip_ensemble_hessians", "train_skip_ensemble"]

warnings.warn(
    "meanfield.validation.symmetry_training is deprecated and will be removed; import from meanfield.train.skip",
    DeprecationWarning,
    stacklevel=2,
)
