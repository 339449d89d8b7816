"""Deprecated: Blumenfeld et al. 2020's networks on the trainer moved to :mod:`meanfield.train.symmetric`.

This module re-exports their public names and warns ``DeprecationWarning`` when imported.
"""

from __future__ import annotations

from ._moved import reexport_moved

__all__ = reexport_moved(globals(), "meanfield.train.symmetric", "import from meanfield.train.symmetric")
