"""Input sets for simulations and figures.

- :func:`gaussian_inputs`: synthetic inputs with a prescribed squared norm per feature and a
  prescribed correlation between inputs;
- :func:`load_digits`: the embedded real default, scikit-learn's bundled 8 x 8 handwritten digits
  (1,797 images, 64 features; installed with the ``data`` extra). The library uses it wherever a
  paper uses MNIST or CIFAR-10, since data sets cannot be downloaded at run time;
- :func:`read_mnist_idx` and :func:`read_cifar10_batch`: readers for MNIST IDX files (optionally
  gzipped) and CIFAR-10 python batches the user already has on disk. Both treat the file as
  untrusted: a file that is not what it claims to be raises :class:`ValueError` naming the path and
  what the file should be, and CIFAR-10 pickles are read by a restricted unpickler that admits
  only the types a batch is made of (see :func:`read_cifar10_batch`), so a crafted pickle cannot
  run code;
- :func:`standardize`: per-feature standardisation (zero mean, unit variance over the set).
"""

from __future__ import annotations

import codecs
import gzip
import math
import os
import pickle
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike

from ._checks import as_float_array, check_bool, check_int, check_rng, check_scalar
from ._docstrings import doc_sections
from ._files import check_path, open_regular_file, read_at_most
from ._results import Result

__all__ = [
    "CIFAR_MEMORY_FACTOR",
    "CONTAINER_BYTES",
    "GZIP_MAX_RATIO",
    "MAX_IDX_BYTES",
    "Dataset",
    "gaussian_inputs",
    "load_digits",
    "read_cifar10_batch",
    "read_mnist_idx",
    "standardize",
]

#: Largest number of entries ``n_inputs * dim`` drawn by :func:`gaussian_inputs` (8 GiB of
#: float64): a guard against sizes that cannot be allocated, not a property of the inputs.
MAX_GAUSSIAN_ENTRIES = 2**30

#: Largest number of data bytes an IDX header may promise (4 GiB; the MNIST training images are
#: 47 MB): :func:`read_mnist_idx` refuses a larger claim before reading the data.
MAX_IDX_BYTES = 2**32

#: Largest expansion of a deflate stream (RFC 1951: at most 1032 output bytes per input byte):
#: a gzip-compressed IDX file of ``S`` bytes cannot hold more than ``GZIP_MAX_RATIO * S`` data
#: bytes, so :func:`read_mnist_idx` refuses a header promising more before decompressing anything.
GZIP_MAX_RATIO = 1032

#: :func:`read_cifar10_batch` refuses a batch whose data and labels, expanded the way NumPy would
#: convert them (a row referenced twice counts twice), exceed ``CIFAR_MEMORY_FACTOR`` times the
#: file's size (plus 1 MiB); an honest batch stays near 1 time its size.
CIFAR_MEMORY_FACTOR = 4


@dataclass(frozen=True)
class Dataset(Result):
    """Inputs and labels.

    Attributes
    ----------
    x : ndarray, shape (n_samples, n_features)
        Inputs as float64.
    y : ndarray, shape (n_samples,)
        Integer labels.
    name : str
        Where the data came from.
    """

    x: np.ndarray
    y: np.ndarray
    name: str


def gaussian_inputs(
    n_inputs: int,
    dim: int,
    q: float = 1.0,
    c: float = 0.0,
    rng: int | np.random.SeedSequence | np.random.Generator | None = None,
) -> np.ndarray:
    """Random inputs with mean squared entry ``q`` and pairwise cosine ``c`` in expectation.

    Each input is ``sqrt(q) * (sqrt(c) * z_0 + sqrt(1 - c) * z_a)`` with ``z`` i.i.d. standard
    normal vectors of length ``dim`` (``c >= 0``), so ``|x_a|^2 / dim -> q`` and
    ``<x_a, x_b> / dim -> c q`` as ``dim`` grows: the inputs of the q- and c-maps (eqs. 2.2-2.5
    of Xiao et al. 2018, Sec. 3.1 of Blumenfeld et al. 2020).

    Parameters
    ----------
    n_inputs, dim : int
        Number of inputs and their dimension (both >= 1, ``n_inputs * dim <=``
        :data:`MAX_GAUSSIAN_ENTRIES`).
    q : float
        Mean squared entry, finite and > 0.
    c : float
        Correlation between inputs, in [0, 1].
    rng : None, int or numpy.random.Generator
        Random source (``meanfield._checks.check_rng``): ``None`` draws fresh OS entropy, an int
        ``n`` gives the stream of ``numpy.random.default_rng(n)``.

    Returns
    -------
    ndarray, shape (n_inputs, dim)

    Raises
    ------
    ValueError
        A size < 1 or above the limit, ``q <= 0``, ``c`` outside [0, 1], a non-finite value.
    TypeError
        A complex, boolean or non-numeric ``q`` or ``c``; an ``rng`` of the wrong type.
    """
    n_inputs = check_int(n_inputs, "n_inputs", 1)
    dim = check_int(dim, "dim", 1)
    if n_inputs * dim > MAX_GAUSSIAN_ENTRIES:
        raise ValueError(
            f"n_inputs * dim must be <= {MAX_GAUSSIAN_ENTRIES} (MAX_GAUSSIAN_ENTRIES), got {n_inputs} * {dim}"
        )
    q = check_scalar(q, "q")
    if q <= 0:
        raise ValueError(f"q must be > 0 (a mean squared entry), got {q!r}")
    c = check_scalar(c, "c")
    if not 0.0 <= c <= 1.0:
        raise ValueError(f"c must lie in [0, 1] for shared-component inputs, got {c!r}")
    rng = check_rng(rng)
    common = rng.standard_normal(dim)
    own = rng.standard_normal((n_inputs, dim))
    return math.sqrt(q) * (math.sqrt(c) * common + math.sqrt(1.0 - c) * own)


def standardize(x: ArrayLike, eps: float = 1e-12) -> np.ndarray:
    """Per-feature standardisation: zero mean and unit variance over the samples.

    A feature whose standard deviation is at most ``eps`` times its largest magnitude
    (``std_j <= eps * max_i |x_ij|``: a constant pixel, or variation at the level of rounding) is set
    to zero rather than divided by (almost) zero. The threshold is relative, so the result does
    not depend on a common scale of ``x``; the computation rescales ``x`` by its largest magnitude
    first, so entries anywhere in the float64 range neither overflow nor underflow.

    Parameters
    ----------
    x : array_like, shape (n_samples, n_features)
        Finite real values; ``n_samples, n_features >= 1``.
    eps : float
        Relative threshold on a feature's standard deviation, finite and ``>= 0`` (0 zeroes only
        exactly constant features).

    Returns
    -------
    ndarray, shape (n_samples, n_features)
        Float64, finite; each kept feature has mean 0 and (population) variance 1.

    Raises
    ------
    ValueError
        ``x`` not 2-D, empty, or holding NaN or infinity (a NaN in one sample would otherwise
        wipe out its whole feature); ``eps`` negative or non-finite.
    TypeError
        Complex ``x`` or ``eps``; a boolean or non-numeric ``eps``.
    """
    x = as_float_array(x, "x")
    if x.ndim != 2:
        raise ValueError(f"x must have shape (n_samples, n_features), got {x.shape}")
    if x.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(f"x must have at least one sample and one feature, got shape {x.shape}")
    eps = check_scalar(eps, "eps")
    if eps < 0:
        raise ValueError(f"eps must be >= 0 (a relative threshold on a standard deviation), got {eps!r}")
    scale = float(np.max(np.abs(x)))
    if scale == 0.0:
        return np.zeros_like(x)
    y = x / scale  # entries in [-1, 1]: the mean and the squares cannot overflow
    out = y - y.mean(axis=0)
    std = np.sqrt(np.mean(out * out, axis=0))
    keep = std > eps * np.max(np.abs(y), axis=0)
    out[:, keep] /= std[keep]
    out[:, ~keep] = 0.0
    return out


def load_digits(n_samples: int | None = None, standardized: bool = False) -> Dataset:
    """The embedded real data set: scikit-learn's bundled 8 x 8 digits (UCI optdigits test set).

    Parameters
    ----------
    n_samples : int, optional
        Keep the first ``n_samples`` images (1 <= n_samples <= 1797); all by default.
    standardized : bool
        Standardise each feature (see :func:`standardize`).

    Returns
    -------
    Dataset
        ``x`` of shape (n, 64) with pixel values 0..16 (or standardised), ``y`` the digit.

    Raises
    ------
    ValueError
        ``n_samples`` not an integer in [1, 1797].
    TypeError
        ``standardized`` not a bool.
    ImportError
        scikit-learn is missing: install the ``data`` extra (``pip install meanfield-theory[data]``,
        or ``pip install -e ".[data]"`` from a clone).
    """
    standardized = check_bool(standardized, "standardized")
    if n_samples is not None:
        n_samples = check_int(n_samples, "n_samples", 1, 1797)
    try:
        from sklearn.datasets import load_digits as _sk_load_digits
    except ImportError as exc:
        raise ImportError(
            "the embedded digits data set ships with scikit-learn: install it with "
            "`pip install meanfield-theory[data]` (or `pip install scikit-learn`)"
        ) from exc
    bunch = _sk_load_digits()
    x = np.asarray(bunch.data, dtype=np.float64)
    y = np.asarray(bunch.target, dtype=np.int64)
    if n_samples is not None:
        n_samples = check_int(n_samples, "n_samples", 1, x.shape[0])
        x, y = x[:n_samples], y[:n_samples]
    if standardized:
        x = standardize(x)
    return Dataset(x=x, y=y, name="sklearn digits 8x8")


def _check_path(path) -> Path:
    return Path(check_path(path))


#: The ``Raises`` entries of every file reader on its ``path`` (``TypeError`` and ``OSError``),
#: inserted into their docstrings as ``{path_raises}`` (:func:`meanfield._docstrings.doc_sections`).
_DOC_PATH_RAISES = """
TypeError
    ``path`` is not a str or path-like.
OSError
    The file cannot be opened (e.g. ``FileNotFoundError``).
"""


_IDX_DTYPES = {
    0x08: np.uint8,
    0x09: np.int8,
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}

_GZIP_MAGIC = b"\x1f\x8b"


def _read_idx(f, path, available: int, compressed: bool):
    """The array of an IDX stream ``f``; ``available`` bounds the data bytes the file can hold
    (its size for a plain file, ``GZIP_MAX_RATIO`` times it for a gzip stream)."""
    head = read_at_most(f, 4)
    if len(head) < 4 or head[0] != 0 or head[1] != 0:
        raise ValueError(
            f"path {path} is not an IDX file (bad magic number: an IDX file starts with two zero bytes, "
            "a type code and the number of dimensions)"
        )
    code, ndim = head[2], head[3]
    if code not in _IDX_DTYPES:
        raise ValueError(
            f"path {path}: unknown IDX data type code 0x{code:02x} (expected one of "
            f"{', '.join(f'0x{k:02x}' for k in _IDX_DTYPES)})"
        )
    dims = read_at_most(f, 4 * ndim)
    if len(dims) < 4 * ndim:
        raise ValueError(f"path {path}: truncated IDX header ({ndim} dimensions promised)")
    shape = tuple(int.from_bytes(dims[4 * i : 4 * i + 4], "big") for i in range(ndim))
    dtype = np.dtype(_IDX_DTYPES[code])
    n_bytes = math.prod(shape) * dtype.itemsize  # exact: no int64 wrap-around for absurd headers
    if n_bytes > MAX_IDX_BYTES:
        raise ValueError(
            f"path {path}: IDX header promises {n_bytes} data bytes (shape {shape}), more than "
            f"MAX_IDX_BYTES = {MAX_IDX_BYTES}"
        )
    available -= 4 + 4 * ndim
    if n_bytes > available:
        held = (
            f"a gzip stream of this size holds at most {available} (deflate expands at most {GZIP_MAX_RATIO}-fold)"
            if compressed
            else f"file has {available}"
        )
        raise ValueError(f"path {path}: IDX header promises {n_bytes} data bytes (shape {shape}), {held}")
    raw = read_at_most(f, n_bytes + 1)  # a gzip stream is decompressed only up to the promised size
    if len(raw) != n_bytes:
        found = f"at least {len(raw)}" if len(raw) > n_bytes else str(len(raw))
        raise ValueError(f"path {path}: IDX header promises {n_bytes} data bytes (shape {shape}), file has {found}")
    data = np.frombuffer(raw, dtype=dtype).astype(dtype.newbyteorder("="), copy=True).reshape(shape)
    if dtype.kind == "f" and not np.all(np.isfinite(data)):
        raise ValueError(f"path {path}: the IDX data hold NaN or infinity (expected finite values)")
    return data


@doc_sections(path_raises=_DOC_PATH_RAISES)
def read_mnist_idx(path: str | os.PathLike) -> np.ndarray:
    """Read an IDX file (the MNIST format), gzip-compressed or not.

    The header is two zero bytes, a type code (0x08 unsigned byte, 0x09 signed byte, 0x0B short,
    0x0C int, 0x0D float, 0x0E double), the number of dimensions, then one big-endian 32-bit size
    per dimension; the data follow in C order. A gzip-compressed file is recognised by its magic
    bytes (whatever its name). The file must be a regular file (a FIFO or a device is refused
    before it is read). Memory use is bounded by the file's contents, whatever the header claims: a
    header promising more data bytes than the file can hold (its size; for a gzip stream,
    :data:`GZIP_MAX_RATIO` times its size, the most deflate can expand) or more than
    :data:`MAX_IDX_BYTES` is refused before the data are read, and a gzip stream is decompressed
    only up to the promised size, so at most about twice ``min(claim, GZIP_MAX_RATIO * size)``
    bytes are held.

    Parameters
    ----------
    path : str or os.PathLike
        e.g. ``train-images-idx3-ubyte`` or ``train-labels-idx1-ubyte.gz``.

    Returns
    -------
    ndarray
        Shape given by the header (images: (n, 28, 28) uint8; labels: (n,) uint8), native byte
        order; floating-point data are finite.

    Raises
    ------
    ValueError
        The file is not a valid IDX file (bad magic number, unknown type, truncated or trailing
        data, a header promising more than the file can hold or more than :data:`MAX_IDX_BYTES`,
        NaN or infinity in float data), a corrupt gzip stream, or not a regular file (a FIFO,
        a device, a directory).
    {path_raises}
    """
    path = _check_path(path)
    with open_regular_file(path) as raw_file:
        compressed = raw_file.read(2) == _GZIP_MAGIC
        raw_file.seek(0)
        if not compressed:
            return _read_idx(raw_file, path, raw_file.size, False)
        try:
            with gzip.GzipFile(fileobj=raw_file, mode="rb") as f:
                return _read_idx(f, path, GZIP_MAX_RATIO * raw_file.size, True)
        except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
            raise ValueError(f"path {path} is not a valid gzip-compressed IDX file ({exc})") from exc


# ---------------------------------------------------------------------------------------------
# CIFAR-10 python batches: a restricted unpickler
# ---------------------------------------------------------------------------------------------


_NP_RECONSTRUCT = np.zeros(0).__reduce__()[0]  # numpy(._)core.multiarray._reconstruct


class _NdarrayType:
    """What ``numpy.ndarray`` resolves to in a batch pickle: a marker for ``_reconstruct``'s first
    argument, not callable, so a pickle cannot call ``numpy.ndarray(shape)`` to allocate memory
    that the file does not hold."""

    __slots__ = ()

    def __reduce__(self):  # pragma: no cover - never pickled
        raise TypeError("not picklable")


_NDARRAY = _NdarrayType()


def _reconstruct(subtype, shape, dtype):
    """NumPy's ``_reconstruct`` (how ``ndarray.__reduce__`` rebuilds an array) for plain ndarrays only.

    NumPy always writes an empty shape here (the data come with the state that follows), so any
    other shape is refused: it would allocate memory the file does not hold.
    """
    if subtype is not _NDARRAY:
        raise pickle.UnpicklingError("only numpy.ndarray may be reconstructed")
    dtype = np.dtype(dtype)
    if dtype.hasobject:
        raise pickle.UnpicklingError("object arrays are not admitted")
    if not isinstance(shape, tuple) or len(shape) > 32 or any(not isinstance(n, int) or n < 0 for n in shape):
        raise pickle.UnpicklingError("_reconstruct takes a shape of non-negative integers")
    if math.prod(shape) != 0:
        raise pickle.UnpicklingError("_reconstruct with a non-empty shape is not admitted (NumPy writes (0,))")
    return _NP_RECONSTRUCT(np.ndarray, shape, dtype)


def _frombuffer(buf, dtype, shape, order):
    """NumPy's ``_frombuffer`` (pickle protocol 5): an array over a byte buffer, no object dtype."""
    dtype = np.dtype(dtype)
    if dtype.hasobject:
        raise pickle.UnpicklingError("object arrays are not admitted")
    return np.frombuffer(buf, dtype=dtype).reshape(shape, order=order)


def _scalar(dtype, obj=None):
    """``numpy.core.multiarray.scalar`` for numeric dtypes (a NumPy scalar label)."""
    dtype = np.dtype(dtype)
    if dtype.kind not in "biuf" or not isinstance(obj, bytes):
        raise pickle.UnpicklingError("only numeric NumPy scalars may be unpickled")
    return np.frombuffer(obj, dtype=dtype, count=1)[0]


def _latin1_encode(text, encoding="latin1", errors="strict"):
    """``_codecs.encode`` as protocol-2 pickles written by Python 3 use it for ``bytes``: latin-1 only."""
    if not isinstance(text, str) or codecs.lookup(encoding).name != "iso8859-1":
        raise pickle.UnpicklingError("_codecs.encode is admitted only for latin-1 text (protocol-2 bytes)")
    return text.encode("latin1", errors)


#: The globals a CIFAR-10 batch pickle references, and what they resolve to. Python-2 files
#: (the originals) reference ``numpy.core.multiarray._reconstruct``, ``numpy.ndarray`` and
#: ``numpy.dtype``; Python-3 protocol-2 pickles add ``_codecs.encode`` for ``bytes``; NumPy >= 2
#: writes ``numpy._core``; protocol 5 uses ``_frombuffer``; NumPy-scalar labels use ``scalar``.
_CIFAR_GLOBALS = {
    ("numpy", "ndarray"): _NDARRAY,
    ("numpy", "dtype"): np.dtype,
    ("_codecs", "encode"): _latin1_encode,
}
for _core in ("numpy.core", "numpy._core"):
    _CIFAR_GLOBALS[(f"{_core}.multiarray", "_reconstruct")] = _reconstruct
    _CIFAR_GLOBALS[(f"{_core}.multiarray", "scalar")] = _scalar
    _CIFAR_GLOBALS[(f"{_core}.numeric", "_frombuffer")] = _frombuffer
del _core


class _ForbiddenGlobal(ValueError):
    """A pickle referenced a global that a CIFAR-10 batch never contains."""


class _BoundedReader:
    """The file as the unpickler reads it: ``read(n)`` never asks for more than the file has left,
    so a length field of ``2**63`` cannot make the buffered reader allocate it."""

    __slots__ = ("_f", "_left")

    def __init__(self, f, size: int):
        self._f = f
        self._left = size

    def read(self, n: int = -1) -> bytes:
        n = self._left if n is None or n < 0 else min(n, self._left)
        data = self._f.read(n)
        self._left -= len(data)
        return data

    def readline(self) -> bytes:
        line = self._f.readline(self._left)
        self._left -= len(line)
        return line

    def readinto(self, b) -> int:  # pragma: no cover - used for out-of-band buffers only
        raise pickle.UnpicklingError("out-of-band buffers are not admitted")


#: Opcodes a CIFAR-10 batch never contains: sets, extension registry codes, persistent ids and
#: out-of-band buffers.
_CIFAR_REFUSED_OPCODES = (
    pickle.EMPTY_SET,
    pickle.ADDITEMS,
    pickle.FROZENSET,
    pickle.EXT1,
    pickle.EXT2,
    pickle.EXT4,
    pickle.PERSID,
    pickle.BINPERSID,
    pickle.NEXT_BUFFER,
    pickle.READONLY_BUFFER,
)


#: Opcodes that create a list, tuple or dict (or a new stack frame, ``MARK``): the objects that
#: cost the most memory per byte of pickle (about 80 bytes for one byte of ``MARK``).
_CONTAINER_OPCODES = (
    pickle.MARK,
    pickle.EMPTY_LIST,
    pickle.EMPTY_DICT,
    pickle.EMPTY_TUPLE,
    pickle.LIST,
    pickle.DICT,
    pickle.TUPLE,
    pickle.TUPLE1,
    pickle.TUPLE2,
    pickle.TUPLE3,
)

#: A batch pickle holds at most one list, tuple or dict per this many bytes (plus 4096): an
#: honest batch has a handful, plus one tuple per ``bytes`` object in Python-3 protocol-2 files
#: (about one per 25 bytes of file names).
CONTAINER_BYTES = 8


def _counted(op):
    def counted(self):
        self.containers_left -= 1
        if self.containers_left < 0:
            raise _ForbiddenGlobal(
                f"the pickle creates more than one list, tuple or dict per {CONTAINER_BYTES} bytes "
                "(a CIFAR-10 batch has a handful; refused: it would take many times the file's size in memory)"
            )
        op(self)

    return counted


def _refuse_opcode(self):
    raise _ForbiddenGlobal("the pickle uses an opcode (set, extension code, persistent id or buffer) a batch never has")


class _CifarUnpickler(pickle._Unpickler):
    """Unpickler that resolves only :data:`_CIFAR_GLOBALS`; any other import raises.

    ``find_class`` is the only route by which a pickle reaches code (``GLOBAL``,
    ``STACK_GLOBAL``, ``INST`` and ``OBJ`` all go through it), so a payload such as
    ``(os.system, ('...',))`` is refused before anything is called. Persistent ids, sets and
    extension codes are refused as well. This is Python's own pure-Python unpickler: its memo is a
    dict, whereas the C unpickler allocates a memo table as long as the largest memo index the
    file names (a 9-byte pickle naming index ``2**28`` takes 4 GB there). Each opcode creates at
    most one object, and lists, tuples, dicts and stack frames (the objects that cost most per
    byte) are limited to one per :data:`CONTAINER_BYTES` bytes, so the unpickled objects take at
    most about 20 times the file's size.
    """

    dispatch: ClassVar[dict] = dict(pickle._Unpickler.dispatch)
    for _op in _CIFAR_REFUSED_OPCODES:
        dispatch[_op[0]] = _refuse_opcode
    for _op in _CONTAINER_OPCODES:
        dispatch[_op[0]] = _counted(dispatch[_op[0]])
    del _op

    def __init__(self, file, size: int, **kwargs):
        super().__init__(_BoundedReader(file, size), **kwargs)
        self.containers_left = size // CONTAINER_BYTES + 4096

    def find_class(self, module, name):
        try:
            return _CIFAR_GLOBALS[(module, name)]
        except (KeyError, TypeError):
            raise _ForbiddenGlobal(
                f"the pickle references {module}.{name}, which a CIFAR-10 batch never contains "
                "(refused: unpickling it could run code)"
            ) from None

    def persistent_load(self, pid):
        raise _ForbiddenGlobal("the pickle uses persistent ids, which a CIFAR-10 batch never contains")


class _TooLarge(ValueError):
    pass


def _expanded_bytes(obj, budget: int) -> int:
    """Bytes ``obj`` takes once NumPy converts it to an array, counting every reference anew.

    A pickle can reference one object many times at the cost of two bytes per reference (the
    memo), and ``numpy.asarray`` copies it each time; this walk counts each reference (8 bytes
    per number or list slot, ``len`` for str and bytes, ``nbytes`` for arrays) and raises
    :class:`_TooLarge` as soon as the total exceeds ``budget``, so it costs at most ``budget``
    steps and follows cycles no further.
    """
    total = 0
    stack = [obj]
    while stack:
        item = stack.pop()
        if isinstance(item, np.ndarray):
            total += 64 + item.nbytes
        elif isinstance(item, (bytes, bytearray, str)):
            total += 40 + len(item)
        elif isinstance(item, (list, tuple)):
            total += 56 + 8 * len(item)
            if total <= budget:
                stack.extend(item)
        elif isinstance(item, dict):
            total += 64 + 16 * len(item)
            if total <= budget:
                stack.extend(item.keys())
                stack.extend(item.values())
        else:
            total += 8
        if total > budget:
            raise _TooLarge(f"its data and labels expand to more than {budget} bytes")
    return total


_CIFAR_EXPECTED = (
    "a CIFAR-10 python batch (data_batch_1 ... data_batch_5 or test_batch from "
    "cifar-10-python.tar.gz): a pickled dict with b'data', a uint8 array of shape (n, 3072), and "
    "b'labels', n integers in 0..9"
)


def _batch_field(batch, key):
    for k in (key.encode(), key):
        if k in batch:
            return batch[k]
    raise KeyError(key)


@doc_sections(path_raises=_DOC_PATH_RAISES)
def read_cifar10_batch(path: str | os.PathLike) -> Dataset:
    """Read a CIFAR-10 python batch (``data_batch_1`` to ``test_batch``), treating it as untrusted.

    The batches are pickles, and ``pickle.load`` on a file from elsewhere can run arbitrary code.
    This reader uses a restricted unpickler that resolves only the globals a batch is made of
    (``numpy.ndarray``, ``numpy.dtype``, NumPy's array/scalar reconstruction functions under
    ``numpy.core`` and ``numpy._core``, and ``_codecs.encode`` for latin-1 text); dicts, lists,
    str/bytes and numbers need no globals. Anything else is refused with ``ValueError`` before it
    is called. The original Python-2 files are read with ``encoding="bytes"`` (their keys become
    ``b"data"``, ``b"labels"``); pickles with ``str`` keys are accepted too.

    Memory is bounded by the file's size: the file must be a regular file (a FIFO or a device is
    refused before it is read); no length field is trusted beyond the bytes the file holds; the
    unpickler keeps its memo in a dict (so a memo index cannot allocate a table) and admits at
    most one list, tuple or dict per :data:`CONTAINER_BYTES` bytes of file; and the data and
    labels, counted as NumPy would expand them (a row the pickle references a thousand times
    counts a thousand times), must fit in :data:`CIFAR_MEMORY_FACTOR` times the file's size plus
    1 MiB before they are converted. The returned float64 pixels take 8 bytes per stored pixel.

    Parameters
    ----------
    path : str or os.PathLike
        A pickled dict with ``b"data"`` (uint8, shape (n, 3072), channel-major 32 x 32 planes)
        and ``b"labels"`` (n integers in 0..9).

    Returns
    -------
    Dataset
        ``x`` of shape (n, 3072) as float64 in 0..255, ``y`` the labels (int64).

    Raises
    ------
    ValueError
        The file is not a CIFAR-10 python batch: not a regular file, not a pickle, truncated, a
        pickle that references anything but the batch's own types, data and labels that expand
        beyond the memory bound above, no ``data``/``labels``, data not an (n, 3072) array of
        integers in 0..255, labels not n integers in 0..9, or n = 0.
    {path_raises}
    """
    path = _check_path(path)
    with open_regular_file(path) as f:
        size = f.size
        try:
            batch = _CifarUnpickler(f, size, encoding="bytes").load()
        except _ForbiddenGlobal as exc:
            raise ValueError(f"path {path} is not {_CIFAR_EXPECTED}: {exc}") from None
        except Exception as exc:
            raise ValueError(f"path {path} is not {_CIFAR_EXPECTED} ({type(exc).__name__}: {exc})") from exc
    if not isinstance(batch, dict):
        raise ValueError(f"path {path} is not {_CIFAR_EXPECTED} (the pickle holds a {type(batch).__name__})")
    try:
        data = _batch_field(batch, "data")
        labels = _batch_field(batch, "labels")
    except KeyError as exc:
        raise ValueError(f"path {path} is not {_CIFAR_EXPECTED} (no {exc.args[0]!r} entry)") from None
    budget = CIFAR_MEMORY_FACTOR * size + (1 << 20)
    try:
        _expanded_bytes((data, labels), budget)
    except _TooLarge as exc:
        raise ValueError(
            f"path {path} is not {_CIFAR_EXPECTED}: {exc} (CIFAR_MEMORY_FACTOR = {CIFAR_MEMORY_FACTOR} times "
            f"the file's {size} bytes, plus 1 MiB; the pickle references the same objects over and over)"
        ) from None
    try:
        data = np.asarray(data)
        labels = np.asarray(labels)
        numeric = data.dtype.kind in "iuf" and labels.dtype.kind in "iuf"
    except (TypeError, ValueError):
        numeric = False
    if not numeric:
        raise ValueError(f"path {path} is not {_CIFAR_EXPECTED} (data and labels must be real numbers)")
    if data.ndim != 2 or data.shape[1] != 3072 or data.shape[0] < 1:
        raise ValueError(f"path {path} is not {_CIFAR_EXPECTED} (data has shape {data.shape})")
    if labels.shape != (data.shape[0],):
        raise ValueError(
            f"path {path} is not {_CIFAR_EXPECTED} ({data.shape[0]} images but labels of shape {labels.shape})"
        )
    if data.dtype.kind in "iu":  # integers (the real batches: uint8): the range is all there is to check
        pixels_ok = int(data.min()) >= 0 and int(data.max()) <= 255
        x = data.astype(np.float64)
    else:
        x = data.astype(np.float64)
        pixels_ok = np.all(np.isfinite(x)) and np.all((x >= 0) & (x <= 255)) and np.all(x == np.round(x))
    if not pixels_ok:
        raise ValueError(f"path {path} is not {_CIFAR_EXPECTED} (pixel values must be integers in 0..255)")
    y = labels.astype(np.float64)
    if not (np.all(np.isfinite(y)) and np.all((y >= 0) & (y <= 9)) and np.all(y == np.round(y))):
        raise ValueError(f"path {path} is not {_CIFAR_EXPECTED} (labels must be integers in 0..9)")
    return Dataset(x=x, y=y.astype(np.int64), name=f"CIFAR-10 {path.name}")
