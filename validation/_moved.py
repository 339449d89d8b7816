"""The old module paths of the trainer under ``meanfield.validation``: one rule for their re-exports."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Sequence


def reexport_moved(namespace: dict, new: str, hint: str, names: Sequence[str] | None = None) -> list[str]:
    """Fill a deprecated module's ``namespace`` with the public ``names`` of module ``new`` and warn.

    Parameters
    ----------
    namespace : dict
        The deprecated module's ``globals()`` (its ``__name__`` names it in the warning).
    new : str
        The module the names moved to.
    hint : str
        What the warning tells the user to do instead (it names ``new``).
    names : sequence of str, optional
        The names re-exported (default: ``new.__all__``).

    Returns
    -------
    list of str
        The deprecated module's ``__all__``.
    """
    target = importlib.import_module(new)
    names = list(target.__all__ if names is None else names)
    namespace.update({name: getattr(target, name) for name in names})
    warnings.warn(
        f"{namespace['__name__']} is deprecated and will be removed; {hint}",
        DeprecationWarning,
        stacklevel=3,
    )
    return names
