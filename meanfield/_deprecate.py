"""Renamed keyword arguments: the old spelling keeps working for one release, with a ``DeprecationWarning``.

The library's spellings are ``rng`` (randomness: ``None``, an int or a ``numpy.random.Generator``),
``n_networks`` (ensemble sizes) and ``batch_size`` (batches). :func:`renamed_kwargs` puts the new
spelling in a function's signature and maps the old keyword onto it, unchanged, so ``f(seed=5)``
and ``f(rng=5)`` receive the identical value (and give the identical numbers).
"""

from __future__ import annotations

import functools
import inspect
import warnings

__all__ = ["renamed_kwargs"]


def renamed_kwargs(**renames: str):
    """Decorator: keyword ``old`` is the deprecated spelling of ``new`` (``@renamed_kwargs(seed="rng")``).

    The decorated function's signature shows ``new``. Passing ``old=`` warns with a
    ``DeprecationWarning`` naming both spellings and passes the value on unchanged; passing both
    raises ``TypeError``. The wrapped function may take either ``new`` (renamed already) or still
    ``old`` (its body not yet renamed): the value reaches the parameter it has. Positional calls are
    unaffected. The mapping is recorded on the wrapper as ``__renamed_kwargs__``.
    """
    for old, new in renames.items():
        if not isinstance(new, str) or not new.isidentifier() or new == old:
            raise ValueError(f"renamed_kwargs needs new identifiers, got {old}={new!r}")

    def decorate(func):
        sig = inspect.signature(func)
        inner = {}  # public name -> the wrapped function's parameter name
        params = []
        for name, p in sig.parameters.items():
            if name in renames:
                if renames[name] in sig.parameters:
                    raise ValueError(f"{func.__qualname__} takes both {name} and {renames[name]}")
                inner[renames[name]] = name
                p = p.replace(name=renames[name])
            params.append(p)
        for old, new in renames.items():
            if new not in sig.parameters and new not in inner:
                raise ValueError(f"{func.__qualname__} has no parameter {new} (or {old}) to rename")
        qualname = func.__qualname__

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            for old, new in renames.items():
                if old in kwargs:
                    if new in kwargs:
                        raise TypeError(f"{qualname}() got both {new}= and its deprecated spelling {old}=; pass {new}=")
                    warnings.warn(
                        f"the keyword {old}= of {qualname}() is deprecated and will be removed; use {new}=",
                        DeprecationWarning,
                        stacklevel=2,
                    )
                    kwargs[new] = kwargs.pop(old)
            for new, name in inner.items():
                if new in kwargs:
                    kwargs[name] = kwargs.pop(new)
            return func(*args, **kwargs)

        wrapper.__signature__ = sig.replace(parameters=params)
        wrapper.__renamed_kwargs__ = {**getattr(func, "__renamed_kwargs__", {}), **renames}
        return wrapper

    return decorate
