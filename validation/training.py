"""Deprecated: the ensemble trainer moved to :mod:`meanfield.train` (import it from there).

This module re-exports the trainer's public names and warns ``DeprecationWarning`` when imported.
"""

from __future__ import annotations

from ._moved import reexport_moved

__all__ = reexport_moved(
    globals(),
    "meanfield.train",
    "import the trainer from meanfield.train",
    (
        "ACTIVATIONS",
        "CONV_INITS",
        "DENSE_INITS",
        "GATHER_MAX_SAVED",
        "MAX_LOGIT",
        "MAX_LOSS",
        "OPTIMIZERS",
        "ConvNet",
        "DenseNet",
        "TrainingCurves",
        "TrainingData",
        "ensemble_forward",
        "init_parameters",
        "load_training_data",
        "train_ensemble",
    ),
)
