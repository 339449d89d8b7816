"""Deprecated module path: :func:`residual_moments` and :class:`ResidualMoments` are in :mod:`meanfield.kurtosis`.

Importing this module warns with a ``DeprecationWarning``; it will be removed in a later release.
"""

from __future__ import annotations

import warnings

from .kurtosis import ResidualMoments, residual_moments

__all__ = ["ResidualMoments", "residual_moments"]

warnings.warn(
    "meanfield.kurtosis_residual is deprecated and will be removed; import residual_moments and "
    "ResidualMoments from meanfield.kurtosis",
    DeprecationWarning,
    stacklevel=2,
)
