"""Argument validation shared by every public function.

Every check raises an error whose message names the argument and the allowed range, as fixed by
the project's design notes: :class:`ValueError` for values out of range (and, in
:func:`check_int`, for bools, strings and non-integral numbers given as integers),
:class:`TypeError` for complex numbers and, where a real number is expected
(:func:`check_scalar`, :func:`as_real_array`, :func:`real_array`), for bools, strings and other
non-numbers. Public functions call these before converting their inputs to contiguous float64
arrays and handing them to Numba kernels.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

__all__ = [
    "as_float_array",
    "as_real_array",
    "check_bool",
    "check_correlation",
    "check_covariance",
    "check_finite",
    "check_int",
    "check_nonnegative",
    "check_nonnegative_scalar",
    "check_pair",
    "check_positive",
    "check_probability_vector",
    "check_rng",
    "check_scalar",
    "default_spatial_shape",
    "is_backend_array",
    "is_complex",
    "real_array",
]

#: Relative tolerance below which a negative eigenvalue of a covariance is rounding, not a defect.
PSD_RTOL = 1e-10


def is_complex(x) -> bool:
    """``numpy.iscomplexobj(x)``, but False (not ``ValueError``) for a ragged nested sequence, which the
    caller's own conversion then rejects with a message naming the argument."""
    try:
        return bool(np.iscomplexobj(x))
    except (TypeError, ValueError):
        return False


def is_backend_array(b, x) -> bool:
    """Whether ``x`` is already an array of the (non-NumPy) backend ``b`` (a :class:`meanfield.backend.Backend`).

    A CuPy array, a PyTorch tensor, or an array of ``b.xp``'s module (``array_api_strict``); a NumPy
    array never is.
    """
    if b.name == "cupy":
        return isinstance(x, b.xp.ndarray)
    if b.name == "torch":
        import torch

        return isinstance(x, torch.Tensor)
    return not isinstance(x, np.ndarray) and type(x).__module__.startswith(b.xp.__name__)


def as_float_array(x, name: str) -> np.ndarray:
    """Return ``x`` as a contiguous float64 array; reject NaN and infinity."""
    if is_complex(x):  # is_complex: numpy's iscomplexobj raises its own ValueError on a ragged list
        raise TypeError(f"{name} must be real, got a complex value")
    try:
        arr = np.asarray(x, dtype=np.float64)
        if arr.ndim:  # ascontiguousarray would turn a scalar into shape (1,)
            arr = np.ascontiguousarray(arr)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a real number or a regular (non-ragged) array of real numbers") from exc
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (no NaN or infinity)")
    return arr


def check_finite(x, name: str) -> np.ndarray:
    """Alias of :func:`as_float_array` for readability at call sites."""
    return as_float_array(x, name)


def check_nonnegative(x, name: str, strict: bool = False):
    """``x >= 0`` elementwise; returns a float (scalar input) or a float64 array.

    ``strict=True`` applies the type rules of :func:`as_real_array` (bools, complex, strings raise
    ``TypeError``).
    """
    arr = as_real_array(x, name) if strict else as_float_array(x, name)
    if np.any(arr < 0):
        raise ValueError(f"{name} must be >= 0 (a variance), got {x!r}")
    return float(arr) if arr.ndim == 0 else arr


def check_positive(x, name: str):
    """``x > 0`` elementwise; returns a float (scalar input) or a float64 array."""
    arr = as_float_array(x, name)
    if np.any(arr <= 0):
        raise ValueError(f"{name} must be > 0, got {x!r}")
    return float(arr) if arr.ndim == 0 else arr


def check_correlation(c, name: str = "c", strict: bool = False):
    """``-1 <= c <= 1`` elementwise (``strict``: the type rules of :func:`as_real_array`)."""
    arr = as_real_array(c, name) if strict else as_float_array(c, name)
    if np.any(np.abs(arr) > 1.0):
        raise ValueError(f"{name} must lie in [-1, 1], got {c!r}")
    return float(arr) if arr.ndim == 0 else arr


def check_pair(q1, q2, c) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The variances ``q1, q2 >= 0`` and correlation ``-1 <= c <= 1`` of a pair of Gaussians, broadcast together.

    Each is checked with the type rules of :func:`as_real_array` (:func:`check_nonnegative` and
    :func:`check_correlation` with ``strict=True``), in the order ``q1``, ``q2``, ``c``.

    Returns
    -------
    tuple of three float64 ndarrays
        Views of the broadcast shape (``numpy.broadcast_arrays``: not to be written into).

    Raises
    ------
    ValueError
        A negative or non-finite variance, ``|c| > 1``, shapes that do not broadcast.
    TypeError
        Bools, complex numbers or strings.
    """
    q1 = check_nonnegative(q1, "q1", strict=True)
    q2 = check_nonnegative(q2, "q2", strict=True)
    c = check_correlation(c, "c", strict=True)
    try:
        return np.broadcast_arrays(np.asarray(q1, float), np.asarray(q2, float), np.asarray(c, float))
    except ValueError as exc:
        raise ValueError(
            f"q1, q2 and c must broadcast together, got shapes {np.shape(q1)}, {np.shape(q2)}, {np.shape(c)}"
        ) from exc


def check_int(n, name: str, minimum: int | None = None, maximum: int | None = None) -> int:
    """An integer (not bool) within ``[minimum, maximum]``.

    An integral Python ``float`` (``numpy.float64`` included, e.g. ``3.0``) is accepted as its
    int. A bool, a string, ``None``, a non-integral float or any other non-integer raises
    ``ValueError`` ("must be an integer"); a complex number raises ``TypeError``.
    """
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        if isinstance(n, float) and float(n).is_integer():
            n = int(n)
        elif isinstance(n, (complex, np.complexfloating)):
            raise TypeError(f"{name} must be an integer, got the complex {n!r}")
        else:
            raise ValueError(f"{name} must be an integer, got {n!r}")
    n = int(n)
    if minimum is not None and n < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {n}")
    if maximum is not None and n > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {n}")
    return n


def check_covariance(cov, name: str = "cov", strict: bool = False) -> np.ndarray:
    """A finite, symmetric, positive semi-definite square matrix (or stack of them).

    ``strict``: the type rules of :func:`as_real_array`.
    """
    arr = as_real_array(cov, name) if strict else as_float_array(cov, name)
    if arr.ndim < 2 or arr.shape[-1] != arr.shape[-2] or arr.shape[-1] == 0:
        raise ValueError(f"{name} must be a square matrix (shape (..., D, D), D >= 1), got shape {arr.shape}")
    scale = max(float(np.max(np.abs(arr))), 1e-300) if arr.size else 1.0
    swapped = np.swapaxes(arr, -1, -2)
    # exactly symmetric (the common case) is close; np.allclose alone was half of a small
    # propagate's per-call time
    if not (arr == swapped).all() and not np.allclose(arr, swapped, rtol=1e-12, atol=1e-12 * scale):
        raise ValueError(f"{name} must be symmetric")
    if arr.size:
        eig = np.linalg.eigvalsh(arr / scale)  # scaled: LAPACK's norms overflow for entries ~1e300
        if (eig < -PSD_RTOL * arr.shape[-1]).any():
            raise ValueError(f"{name} must be positive semi-definite (smallest eigenvalue {eig.min() * scale:.3g} < 0)")
    return 0.5 * (arr + swapped)


def check_probability_vector(v, name: str = "v", atol: float = 1e-10) -> np.ndarray:
    """Non-negative entries summing to one (to ``atol``)."""
    arr = as_float_array(v, name)
    if arr.size == 0:
        raise ValueError(f"{name} must not be empty")
    if np.any(arr < 0):
        raise ValueError(f"{name} must be non-negative")
    if abs(arr.sum() - 1.0) > atol:
        raise ValueError(f"{name} must sum to 1, sums to {arr.sum():.12g}")
    return arr


def check_rng(rng=None) -> np.random.Generator:
    """The library's one randomness rule: a ``numpy.random.Generator`` from ``rng``.

    ``None`` draws fresh OS entropy; a non-negative ``int`` ``n`` gives exactly the stream of
    ``numpy.random.default_rng(n)``; a ``numpy.random.SeedSequence`` seeds a new Generator; a
    ``Generator`` is used as it is (and advanced).
    Anything else (bool, float, str, negative int) raises ``TypeError``/``ValueError``.
    """
    if rng is None:
        return np.random.default_rng()
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, np.random.SeedSequence):
        return np.random.default_rng(rng)
    if isinstance(rng, (bool, np.bool_)) or not isinstance(rng, (numbers.Integral, np.integer)):
        raise TypeError(f"rng must be None, a non-negative int or a numpy.random.Generator, got {type(rng).__name__}")
    if int(rng) < 0:
        raise ValueError(f"rng must be a non-negative int seed, got {int(rng)}")
    return np.random.default_rng(int(rng))


def check_bool(flag, name: str) -> bool:
    """A real boolean (``bool`` or ``numpy.bool_``); anything else raises ``TypeError``."""
    if not isinstance(flag, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {flag!r}")
    return bool(flag)


def check_scalar(x, name: str) -> float:
    """A finite real scalar (a Python or NumPy number, or a 0-d array); arrays, complex, bools and
    strings raise ``TypeError``, NaN and infinity ``ValueError``."""
    if isinstance(x, (bool, np.bool_)) or isinstance(x, (str, bytes)):
        raise TypeError(f"{name} must be a real number, got {x!r}")
    if np.iscomplexobj(x):
        raise TypeError(f"{name} must be a real number, got the complex {x!r}")
    arr = np.asarray(x)
    if arr.ndim != 0:
        raise TypeError(f"{name} must be a scalar, got an array of shape {arr.shape}")
    if not np.issubdtype(arr.dtype, np.number):
        raise TypeError(f"{name} must be a real number, got {type(x).__name__}")
    value = float(arr)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite (no NaN or infinity), got {value}")
    return value


def as_real_array(x, name: str) -> np.ndarray:
    """Like :func:`as_float_array`, but strict about types: bools (scalar or array), complex values,
    strings and other non-numeric objects raise ``TypeError`` naming ``name``; NaN and infinity
    ``ValueError``. Returns a float64 array (0-d for scalars, contiguous otherwise)."""
    if isinstance(x, (bool, np.bool_, str, bytes)):
        raise TypeError(f"{name} must be a real number or array of real numbers, got {x!r}")
    if is_complex(x):
        raise TypeError(f"{name} must be real, got a complex value")
    try:
        raw = np.asarray(x)
    except TypeError as exc:
        raise TypeError(f"{name} must be a real number or array of real numbers") from exc
    except ValueError as exc:  # a ragged nested sequence
        raise ValueError(f"{name} must be a regular (non-ragged) array of real numbers") from exc
    if raw.dtype == np.bool_ or raw.dtype.kind not in "iuf":
        raise TypeError(f"{name} must be a real number or array of real numbers, got dtype {raw.dtype}")
    return as_float_array(raw, name)


def real_array(x, name: str, expected: str = "an array of real numbers") -> np.ndarray:
    """A finite float64 array of real numbers; ``None``, bools, complex numbers, strings and objects raise
    ``TypeError`` (``name must be <expected>``), a ragged sequence ``ValueError``."""
    if x is None or isinstance(x, (str, bytes)) or is_complex(x):
        raise TypeError(f"{name} must be {expected}, got {type(x).__name__}")
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a (rectangular) array of real numbers") from exc
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"{name} must hold real numbers, got dtype {arr.dtype}")
    return as_float_array(arr, name)


def check_nonnegative_scalar(x, name: str, what: str = " (a variance)") -> float:
    """A finite real scalar ``>= 0`` (see :func:`check_scalar` for the type rules); ``what`` follows
    ``>= 0`` in the error message."""
    value = check_scalar(x, name)
    if value < 0:
        raise ValueError(f"{name} must be >= 0{what}, got {value!r}")
    return value


def default_spatial_shape(ndim: int, size: int, name: str = "shape") -> tuple[int, ...]:
    """The spatial shape of ``size`` positions when none is given: ``(size,)`` in 1-D, the square
    ``(n, n)`` with ``n^2 = size`` in 2-D (else ``ValueError`` asking for ``name``)."""
    if ndim == 1:
        return (size,)
    n = math.isqrt(size)
    if n * n != size:
        raise ValueError(f"pass {name}=(n1, n2): {size} positions are not a square image")
    return (n, n)
