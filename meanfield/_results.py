"""The base of every result dataclass: frozen, with ``.replace()``.

Every public result type is declared ``@dataclass(frozen=True)`` and inherits :class:`Result`, so
``result.replace(field=value)`` returns a modified copy (``dataclasses.replace``) everywhere.
"""

from __future__ import annotations

import dataclasses

__all__ = ["Result"]


class Result:
    """Mixin giving a frozen dataclass a ``replace`` method."""

    __slots__ = ()

    def replace(self, **changes):
        """A copy with the named fields replaced (``dataclasses.replace``)."""
        return dataclasses.replace(self, **changes)
