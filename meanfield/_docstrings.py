"""Shared docstring sections: a section several functions document alike is written once.

:func:`doc_sections` replaces a placeholder line of a docstring by a shared text, indented as the
placeholder, so that :func:`help` and the rendered API pages show the complete numpydoc docstring.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from typing import TypeVar

__all__ = ["doc_sections"]

T = TypeVar("T")


def doc_sections(**sections: str) -> Callable[[T], T]:
    """Decorator: each docstring line that reads ``{name}`` becomes the text ``sections[name]``.

    Parameters
    ----------
    **sections : str
        Placeholder name -> the text it stands for (any indentation; dedented, then indented as the
        placeholder line, blank lines kept blank).

    Returns
    -------
    callable
        The decorator; it sets the decorated function's or class's ``__doc__`` and returns the
        object itself (a docstring stripped by ``python -OO`` stays ``None``).

    Raises
    ------
    ValueError
        A placeholder that is not a line of the docstring, or one given twice in it (raised on
        decoration, i.e. when the defining module is imported).

    Examples
    --------
    >>> _RNG = "rng : int\\n    Base seed."
    >>> @doc_sections(rng=_RNG)
    ... def f(rng=0):
    ...     '''Parameters
    ...     ----------
    ...     {rng}
    ...     '''
    >>> import inspect
    >>> print(inspect.getdoc(f))
    Parameters
    ----------
    rng : int
        Base seed.
    """
    texts = {name: textwrap.dedent(text).strip("\n").split("\n") for name, text in sections.items()}

    def decorate(obj: T) -> T:
        doc = obj.__doc__
        if doc is None:
            return obj
        lines, seen = [], []
        for line in doc.split("\n"):
            stripped = line.strip()
            key = stripped[1:-1] if stripped[:1] == "{" and stripped[-1:] == "}" else None
            if key not in texts:
                lines.append(line)
                continue
            if key in seen:
                raise ValueError(f"docstring placeholder {{{key}}} occurs twice in {obj.__qualname__}")
            seen.append(key)
            indent = line[: len(line) - len(line.lstrip())]
            lines += [indent + t if t.strip() else "" for t in texts[key]]
        missing = sorted(set(texts) - set(seen))
        if missing:
            raise ValueError(f"docstring of {obj.__qualname__} has no placeholder line for {missing}")
        obj.__doc__ = "\n".join(lines)
        return obj

    return decorate
