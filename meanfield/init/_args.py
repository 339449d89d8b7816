"""Argument checks shared by the initialisers (private).

On top of :mod:`meanfield._checks`: bools, complex numbers, strings and arrays are refused where a
real number is expected (``TypeError`` naming the argument), integers are bounded (bools,
strings and non-integral floats given for them raise ``ValueError``, complex numbers
``TypeError``), and every result or work array is bounded in size so that absurd sizes raise
``ValueError`` in constant time instead of ``MemoryError`` or an endless loop.
"""

from __future__ import annotations

import numpy as np

# real_array: re-exported for the initialisers (one check shared with meanfield.finite_width)
from .._checks import check_int, check_nonnegative_scalar, check_scalar
from .._checks import real_array as real_array

#: The ``rng``, ``batch_shape`` and ``backend`` parameters of the matrix samplers, inserted in their
#: docstrings as ``{matrix_draw}`` (:func:`meanfield.checks.doc_sections`).
DOC_MATRIX_DRAW = """
rng : None, int, SeedSequence or numpy.random.Generator
    Randomness (an int ``n`` gives the stream of ``numpy.random.default_rng(n)``); on CuPy also
    a CuPy Generator (:meth:`meanfield.backend.Backend.rng`).
batch_shape : int or tuple of int
    Leading axes of independent matrices (default none), ``prod(batch_shape) * n_out * n_in <= 2**31``.
backend : str or Backend
    ``"numpy"`` (default) or ``"cupy"``: where the matrices are drawn and returned.
"""

#: Largest number of float64 entries one initialiser allocates (2^29 numbers = 4 GiB).
MAX_ELEMENTS = 2**29
#: Largest batched draw (``batch_shape=`` of the samplers, e.g. one matrix per simulated network)
#: and largest periodic-convolution result: 2^31 numbers = 16 GiB, the simulators' ``MAX_ELEMENTS``.
MAX_BATCH_ELEMENTS = 2**31
#: Largest layer size / channel count / count accepted where nothing bounds it more tightly.
MAX_SIZE = 2**31


def int_arg(n, name: str, minimum: int, maximum: int | None = MAX_SIZE) -> int:
    """An integer in ``[minimum, maximum]``; complex numbers raise ``TypeError``."""
    if isinstance(n, (complex, np.complexfloating)):
        raise TypeError(f"{name} must be an integer, got the complex {n!r}")
    return check_int(n, name, minimum, maximum)


def real(x, name: str) -> float:
    """A finite real scalar (bools, complex numbers, strings, arrays: ``TypeError``)."""
    return check_scalar(x, name)


def nonneg(x, name: str) -> float:
    """A finite real scalar ``>= 0``."""
    return check_nonnegative_scalar(x, name, what="")


def positive(x, name: str) -> float:
    v = check_scalar(x, name)
    if v <= 0:
        raise ValueError(f"{name} must be > 0, got {v!r}")
    return v


def check_size(n_elements: int, what: str) -> None:
    """``ValueError`` when an array of ``n_elements`` numbers would exceed :data:`MAX_ELEMENTS`."""
    if n_elements > MAX_ELEMENTS:
        raise ValueError(f"{what} must be <= 2**29 entries (4 GiB of float64), got {n_elements}")


def check_batch_size(n_elements: int, what: str) -> None:
    """``ValueError`` when a batched array of ``n_elements`` numbers would exceed :data:`MAX_BATCH_ELEMENTS`."""
    if n_elements > MAX_BATCH_ELEMENTS:
        raise ValueError(
            f"{what} must be <= 2**31 entries (16 GiB of float64), got {n_elements}: draw fewer networks per call "
            "and combine calls made with independent rng streams (numpy.random.SeedSequence.spawn)"
        )


def batch_shape(batch, name: str = "batch_shape") -> tuple[int, ...]:
    """A batch shape: an int or a tuple of ints, each ``>= 1`` (``()``: no batch axes)."""
    if isinstance(batch, (int, np.integer)) and not isinstance(batch, (bool, np.bool_)):
        batch = (batch,)
    if not isinstance(batch, (tuple, list)):
        raise TypeError(f"{name} must be an int or a tuple of ints (the leading batch axes), got {batch!r}")
    return tuple(int_arg(b, name, 1) for b in batch)


def check_law(law, allowed) -> str:
    if not isinstance(law, str) or law not in allowed:
        raise ValueError(f"law must be one of {tuple(allowed)}, got {law!r}")
    return law
