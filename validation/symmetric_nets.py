"""Deprecated: Blumenfeld et al. 2020's networks on the trainer moved to :mod:`meanfield.train.symmetric`.

This module re-exports their public names and warns ``DeprecationWarning`` when imported.
"""

from __future__ import annotations

import warnings

from meanfield.train.symmetric import (
    COMPUTE_DTYPES,
    FLOAT32_ROUNDOFF,
    KERNELS,
    ConstNetGroups,
    ConstNetSpec,
    LeakyNetSpec,
    PlatformSymmetry,
    ReplicatedNetSpec,
    SymmetryBreaking,
    constnet_groups,
    conv_kernels,
    correlation_probe,
    platform_symmetry,
    unit_exact_conv,
)

__all__ = [
    "COMPUTE_DTYPES",
    "FLOAT32_ROUNDOFF",
    "KERNELS",
    "ConstNetGroups",
    "ConstNetSpec",
    "LeakyNetSpec",
    "PlatformSymmetry",
    "ReplicatedNetSpec",
    "SymmetryBreaking",
    "constnet_groups",
    "conv_kernels",
    "correlation_probe",
    "platform_symmetry",
    "unit_exact_conv",
]

warnings.warn(
    "meanfield.validation.symmetric_nets is deprecated and will be removed; import from meanfield.train.symmetric",
    DeprecationWarning,
    stacklevel=2,
)
