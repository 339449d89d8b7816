"""Argument checks: the public checks every layer of the library validates its inputs with.

The theory functions, the initialisers, the Monte-Carlo simulators of
:mod:`meanfield.simulate` and the figures raise the same errors for the same bad
input, because they call these functions: a ``ValueError`` (bad value: NaN, infinity, out of
range, wrong shape) or a ``TypeError`` (bad type: bools, complex numbers, strings where numbers are
expected) whose message names the argument and the allowed range.

================================  ================================================================================
function                          accepts (else ``ValueError`` / ``TypeError``)
================================  ================================================================================
:func:`as_float_array`            finite real numbers -> contiguous float64 array (:func:`check_finite`: the same)
:func:`check_scalar`              one finite real number (no bool, complex, str, array)
:func:`check_int`                 an integer in ``[minimum, maximum]`` (no bool)
:func:`check_bool`                ``bool`` or ``numpy.bool_`` only
:func:`check_variance`            a finite real number ``>= 0``
:func:`check_nonnegative`         finite real numbers ``>= 0`` (scalar or array)
:func:`check_positive`            finite real numbers ``> 0``
:func:`check_correlation`         correlations in ``[-1, 1]``
:func:`check_covariance`          a finite, symmetric, positive semi-definite (stack of) matrix
:func:`check_probability_vector`  non-negative entries summing to 1
:func:`check_variance_vector`     Xiao et al.'s ``v``: a probability vector of odd sizes, 1-D or 2-D
:func:`resolve_spatial_shape`     the spatial shape of a CNN signal (default from its size)
:func:`check_rng`                 the randomness rule (None, int, SeedSequence, Generator)
:func:`open_regular_file`         a path naming a regular file (no FIFO, device, directory), opened to read
================================  ================================================================================

The randomness rule: ``rng=None`` draws fresh OS entropy, a non-negative ``int`` ``n`` gives
exactly the stream of ``numpy.random.default_rng(n)``, a ``SeedSequence`` seeds a new Generator
and a ``numpy.random.Generator`` is used as it is (and advanced).

Examples
--------
>>> check_variance(2, "sigma_w2")
2.0
>>> check_int(3.0, "width", 1)
3
>>> check_variance_vector([0.25, 0.5, 0.25]).shape
(3,)
>>> resolve_spatial_shape(2, None, 16)
(4, 4)
>>> check_bool(1, "gradients")
Traceback (most recent call last):
    ...
TypeError: gradients must be True or False, got 1
"""

from __future__ import annotations

import io
import math
import os
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from . import _checks, _files
from ._deprecate import renamed_kwargs
from ._docstrings import doc_sections

__all__ = [
    "as_float_array",
    "check_bool",
    "check_correlation",
    "check_covariance",
    "check_finite",
    "check_int",
    "check_nonnegative",
    "check_positive",
    "check_probability_vector",
    "check_rng",
    "check_scalar",
    "check_variance",
    "check_variance_vector",
    "doc_sections",
    "open_regular_file",
    "renamed_kwargs",
    "resolve_spatial_shape",
]


# --- the checks of meanfield._checks, typed and documented here ------------------------------------


def as_float_array(x: ArrayLike, name: str) -> np.ndarray:
    """``x`` as a contiguous float64 array (a scalar stays 0-d).

    Raises
    ------
    TypeError
        Complex input.
    ValueError
        Non-numeric input, NaN or infinity.
    """
    return _checks.as_float_array(x, name)


def check_finite(x: ArrayLike, name: str) -> np.ndarray:
    """Alias of :func:`as_float_array` for readability at call sites."""
    return _checks.check_finite(x, name)


def check_scalar(x: object, name: str) -> float:
    """One finite real number (Python or NumPy number, or a 0-d array).

    Raises
    ------
    TypeError
        Arrays, complex numbers, bools and strings.
    ValueError
        NaN or infinity.
    """
    return _checks.check_scalar(x, name)


def check_int(n: object, name: str, minimum: int | None = None, maximum: int | None = None) -> int:
    """An integer (not a bool; a float with an integral value is accepted) in ``[minimum, maximum]``.

    Raises
    ------
    TypeError
        A complex number (or a bound that is not an integer).
    ValueError
        A non-integer or a value out of range (the message names the argument and the range).
    """
    for bound, label in ((minimum, "minimum"), (maximum, "maximum")):
        if bound is not None and (isinstance(bound, (bool, np.bool_)) or not isinstance(bound, (int, np.integer))):
            raise TypeError(f"{label} must be None or an integer, got {bound!r}")
    return _checks.check_int(n, name, minimum, maximum)


def check_bool(flag: object, name: str) -> bool:
    """A real boolean (``bool`` or ``numpy.bool_``).

    Raises
    ------
    TypeError
        Anything else (``0``, ``1``, ``"yes"``, ``None``, ...).
    """
    return _checks.check_bool(flag, name)


def check_nonnegative(x: ArrayLike, name: str) -> float | np.ndarray:
    """Finite real numbers ``>= 0``: a float for scalar input, else a float64 array.

    Raises
    ------
    TypeError, ValueError
        As :func:`as_float_array`; a negative entry (``ValueError``).
    """
    return _checks.check_nonnegative(x, name)


def check_positive(x: ArrayLike, name: str) -> float | np.ndarray:
    """Finite real numbers ``> 0``: a float for scalar input, else a float64 array.

    Raises
    ------
    TypeError, ValueError
        As :func:`as_float_array`; an entry ``<= 0`` (``ValueError``).
    """
    return _checks.check_positive(x, name)


def check_correlation(c: ArrayLike, name: str = "c") -> float | np.ndarray:
    """Correlations in ``[-1, 1]``: a float for scalar input, else a float64 array.

    Raises
    ------
    TypeError, ValueError
        As :func:`as_float_array`; an entry outside ``[-1, 1]`` (``ValueError``).
    """
    return _checks.check_correlation(c, name)


def check_covariance(cov: ArrayLike, name: str = "cov") -> np.ndarray:
    """A finite, symmetric, positive semi-definite matrix (or stack ``(..., D, D)``), symmetrised.

    Raises
    ------
    TypeError, ValueError
        As :func:`as_float_array`; not square, not symmetric or not PSD (``ValueError``).
    """
    return _checks.check_covariance(cov, name)


def check_probability_vector(v: ArrayLike, name: str = "v", atol: float = 1e-10) -> np.ndarray:
    """Non-empty, non-negative entries summing to 1 (to ``atol``).

    Raises
    ------
    TypeError, ValueError
        As :func:`as_float_array`; empty, negative or a sum other than 1 (``ValueError``); an
        ``atol`` that is not a finite real number ``>= 0``.
    """
    atol = _checks.check_nonnegative_scalar(atol, "atol")
    return _checks.check_probability_vector(v, name, atol)


def check_rng(rng: int | np.random.SeedSequence | np.random.Generator | None = None) -> np.random.Generator:
    """The library's one randomness rule: a ``numpy.random.Generator`` from ``rng``.

    ``None`` draws fresh OS entropy; a non-negative ``int`` ``n`` gives exactly the stream of
    ``numpy.random.default_rng(n)``; a ``SeedSequence`` seeds a new Generator; a ``Generator`` is
    used as it is (and advanced).

    Raises
    ------
    TypeError
        A bool, float, string or any other object.
    ValueError
        A negative int.
    """
    return _checks.check_rng(rng)


def check_variance(x: object, name: str) -> float:
    """A variance: one finite real number ``>= 0``.

    Parameters
    ----------
    x : float
        The value to check.
    name : str
        The argument's name, used in the error message.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        A bool, complex number, string or array.
    ValueError
        NaN, infinity or a negative number.
    """
    return _checks.check_nonnegative_scalar(x, name)


def check_variance_vector(v: ArrayLike, name: str = "v", ndim: int | None = None) -> np.ndarray:
    """Xiao et al.'s variance vector ``v``: non-negative, summing to 1, odd sizes ``2k + 1``, 1-D or 2-D.

    Index ``j`` along an axis of size ``2k + 1`` is the kernel offset ``beta = j - k`` (uniform ``v``
    is the standard Gaussian kernel, one-hot ``v`` the delta kernel).

    Parameters
    ----------
    v : array_like, shape (2k+1,) or (2k1+1, 2k2+1)
    name : str
        The argument's name, used in the error message.
    ndim : {1, 2}, optional
        The number of spatial dimensions ``v`` must have.

    Returns
    -------
    ndarray
        ``v`` as a contiguous float64 array.

    Raises
    ------
    TypeError
        Complex entries; a bool or a boolean NumPy array. A list of Python bools (``[True]``) is
        not caught: it is read as 0/1 floats.
    ValueError
        Non-finite or negative entries, a sum other than 1 (to 1e-10), even sizes, or a number of
        dimensions other than 1, 2 or ``ndim``; ``ndim`` not 1, 2 or None.

    Notes
    -----
    Xiao et al. 2018, eq. 2.2: ``omega_ij(beta) ~ N(0, sigma_w2 v_beta / c)``.
    """
    if ndim is not None:
        ndim = check_int(ndim, "ndim", 1, 2)
    if isinstance(v, (bool, np.bool_)) or (isinstance(v, np.ndarray) and v.dtype == np.bool_):
        raise TypeError(f"{name} must hold real numbers, got booleans")
    v = check_probability_vector(v, name)
    if v.ndim not in (1, 2):
        raise ValueError(f"{name} must be 1-D (length 2k+1) or 2-D (shape (2k1+1, 2k2+1)), got ndim {v.ndim}")
    if any(s % 2 == 0 for s in v.shape):
        raise ValueError(f"{name} must have odd sizes 2k+1 (index j <-> offset j - k), got shape {v.shape}")
    if ndim is not None and v.ndim != ndim:
        raise ValueError(f"{name} has {v.ndim} spatial dimension(s) but the signal has {ndim}")
    return v


def resolve_spatial_shape(
    ndim: int, shape: int | Sequence[int] | None, size: int | None, name: str = "shape"
) -> tuple[int, ...]:
    """The spatial shape of a periodic CNN signal with ``size`` positions and ``ndim`` spatial axes.

    Parameters
    ----------
    ndim : {1, 2}
        Spatial dimensions (those of the variance vector ``v``).
    shape : int, (int, int) or None
        The shape asked for; ``None``: ``(size,)`` in 1-D, the square ``(n, n)`` with ``n^2 = size``
        in 2-D.
    size : int or None
        Number of positions the shape must have (``None``: any; then ``shape`` is required).
    name : str
        The argument's name, used in the error messages.

    Returns
    -------
    tuple of int
        Each entry ``>= 1``.

    Raises
    ------
    TypeError
        Complex numbers as sizes.
    ValueError
        Bools, strings or non-integral floats as sizes (an integral float is accepted); ``ndim``
        not 1 or 2, sizes < 1, a 2-D default for a ``size`` that is not a square, a shape
        whose number of axes is not ``ndim`` or whose number of positions is not ``size``.
    """
    ndim = check_int(ndim, "ndim", 1, 2)
    if size is not None:
        size = check_int(size, "size", 1)
    if shape is None:
        if size is None:
            raise ValueError(f"{name} is required when the number of positions is not known")
        shape = _checks.default_spatial_shape(ndim, size, name)
    if isinstance(shape, (str, bytes)) or np.ndim(shape) not in (0, 1):
        raise ValueError(f"{name} must be an int or a tuple of 1 or 2 ints, got {shape!r}")
    entries = (shape,) if np.ndim(shape) == 0 else tuple(shape)
    if len(entries) not in (1, 2):
        raise ValueError(f"{name} must have 1 or 2 entries, got {entries!r}")
    if any(isinstance(e, (complex, np.complexfloating)) for e in entries):
        raise TypeError(f"{name} must hold integers, got {entries!r}")
    out = tuple(check_int(e, name, 1) for e in entries)
    if len(out) != ndim:
        raise ValueError(f"{name} {out} has {len(out)} dimension(s) but v has {ndim}")
    if size is not None and math.prod(out) != size:
        raise ValueError(f"{name} {out} has {math.prod(out)} positions but the signal has {size}")
    return out


def open_regular_file(path: str | bytes | os.PathLike, name: str = "path") -> io.BufferedReader:
    """Open a user's file for binary reading, refusing anything but a regular file.

    A named pipe (FIFO), a character or block device (``/dev/zero``), a socket or a directory is
    refused before anything is read, so a reader neither blocks on a pipe nobody writes nor reads a
    device without end. The file is opened with ``O_NONBLOCK`` and checked again on the open
    descriptor (a path swapped for a FIFO in between cannot block either). Symbolic links are
    followed. Every reader of the library opens its file this way.

    Parameters
    ----------
    path : str, bytes or os.PathLike
        The file.
    name : str
        The argument's name in error messages.

    Returns
    -------
    io.BufferedReader
        Open in binary mode; its ``size`` attribute is the file's size when opened (bound what you
        read by it) and ``read_at_most(n)`` reads up to ``n`` bytes in 1 MiB chunks.

    Raises
    ------
    TypeError
        ``path`` is not a str, bytes or os.PathLike.
    ValueError
        ``path`` names a FIFO, a device, a socket or a directory (the message names the path and
        says which).
    OSError
        The file does not exist or cannot be opened (e.g. ``FileNotFoundError``).
    """
    return _files.open_regular_file(path, name)
