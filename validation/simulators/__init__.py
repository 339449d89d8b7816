"""Deprecated: the simulators moved to :mod:`meanfield.simulate`.

``meanfield.validation.simulators`` re-exports the public names of :mod:`meanfield.simulate` for
one release and warns ``DeprecationWarning`` when imported; import from ``meanfield.simulate``
instead (same functions, same numbers). The old submodule paths
(``meanfield.validation.simulators.dense``, ``.ntk``, ``.jacobian``, ...) resolve to the new
modules (``jacobian`` is now :mod:`meanfield.simulate.spectra`).
"""

from __future__ import annotations

import sys
import warnings

from meanfield import simulate as _simulate
from meanfield.simulate import *  # noqa: F403

__all__ = list(_simulate.__all__)

warnings.warn(
    "meanfield.validation.simulators is deprecated: import from meanfield.simulate (same names)",
    DeprecationWarning,
    stacklevel=2,
)

for _old, _new in {
    "conv": "conv",
    "dense": "dense",
    "finite_width": "finite_width",
    "jacobian": "spectra",
    "kurtosis": "kurtosis",
    "ntk": "ntk",
    "symmetry": "symmetry",
}.items():
    sys.modules[f"{__name__}.{_old}"] = globals()[_old] = sys.modules[f"{_simulate.__name__}.{_new}"]
del _old, _new
