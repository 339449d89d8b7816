"""Argument checks and helpers shared by the modules of :mod:`meanfield.train`."""

from __future__ import annotations

import numbers
import os
import sys
from collections.abc import Sequence

import numpy as np

from meanfield.checks import check_int, check_rng, check_scalar

#: The Raises section of a spec whose fields are checked in ``__post_init__``, inserted as
#: ``{field_raises}`` (:func:`meanfield.checks.doc_sections`).
DOC_FIELD_RAISES = """
Raises
------
ValueError, TypeError
    On construction, naming the field.
"""

#: The Raises section of a cached training run at a named ``size``, inserted as ``{sized_run_raises}``.
DOC_SIZED_RUN_RAISES = """
Raises
------
ValueError
    An unknown ``size``.
TypeError
    A bad ``rng``.
ImportError
    PyTorch is missing (the ``torch`` extra).
"""

#: The last two entries of the Raises section of a trainer entry point, inserted as ``{trainer_raises}``.
DOC_TRAINER_RAISES = """
TypeError
    Arguments of the wrong type.
ImportError
    PyTorch is missing (the ``torch`` extra).
"""

#: Environment variable that, set to ``1``, silences every progress bar (as the command line's).
NO_PROGRESS_ENV = "MEANFIELD_NO_PROGRESS"


def _progress(iterable=None, desc: str = "", total: int | None = None, **kwargs):
    """A tqdm progress bar on stderr, hidden when the environment has ``MEANFIELD_NO_PROGRESS=1``."""
    from tqdm.auto import tqdm

    disable = os.environ.get(NO_PROGRESS_ENV, "") == "1"
    return tqdm(iterable, desc=desc, total=total, disable=disable, leave=False, file=sys.stderr, **kwargs)


def _cache_seed(rng) -> int:
    """The integer a cached run is keyed by: a non-negative int as given, else one int drawn from
    ``check_rng(rng)`` (a Generator, a SeedSequence or None)."""
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, (bool, np.bool_)) and rng >= 0:
        return int(rng)
    return int(check_rng(rng).integers(2**31))


def _torch():
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - exercised without the extra
        raise ImportError(
            'the ensemble trainer needs PyTorch: install the torch extra (pip install "meanfield-theory[torch]")'
        ) from exc
    return torch


def _int(n, name: str, minimum: int, maximum: int) -> int:
    """An int in ``[minimum, maximum]``: bools, floats, complex numbers and strings raise ``TypeError``."""
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (numbers.Integral, np.integer)):
        raise TypeError(f"{name} must be an integer, got {n!r}")
    return check_int(int(n), name, minimum, maximum)


def _choice(value, name: str, allowed: Sequence[str]) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{name} must be one of {tuple(allowed)}, got {value!r}")
    return value


def _nonneg(x, name: str) -> float:
    v = check_scalar(x, name)
    if v < 0:
        raise ValueError(f"{name} must be >= 0, got {v!r}")
    if v > 1e6:
        raise ValueError(f"{name} must be <= 1e6 (a variance beyond overflows float32 networks), got {v!r}")
    return v


def _odd_kernel(k) -> int:
    k = _int(k, "kernel_size", 1, 31)
    if k % 2 == 0:
        raise ValueError(f"kernel_size must be odd (2k + 1), got {k}")
    return k


def _sequence(value, name: str, items: str):
    """``value`` when it is a tuple or a list (a string is neither), else a ``TypeError``.

    Parameters
    ----------
    value : object
    name : str
        The argument's name, for the message.
    items : str
        What its entries must be, for the message (``"ints"``, ``"floats"``, ...).

    Returns
    -------
    tuple or list
        ``value`` itself.

    Raises
    ------
    TypeError
        ``"{name} must be a tuple of {items}, got {value!r}"``.
    """
    if isinstance(value, (str, bytes)) or not isinstance(value, (tuple, list)):
        raise TypeError(f"{name} must be a tuple of {items}, got {value!r}")
    return value


def _fraction(x, name: str, closed: bool = False) -> float:
    v = check_scalar(x, name)
    if not (0.0 <= v <= 1.0 if closed else 0.0 <= v < 1.0):
        raise ValueError(f"{name} must lie in [0, 1{']' if closed else ')'}, got {v!r}")
    return v
