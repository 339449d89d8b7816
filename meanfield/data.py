"""Input sets for simulations and figures.

- :func:`gaussian_inputs`: synthetic inputs with a prescribed squared norm per feature and a
  prescribed correlation between inputs;
- :func:`load_digits`: the embedded real default, scikit-learn's bundled 8 x 8 handwritten digits
  (1,797 images, 64 features; installed with the ``data`` extra). The library uses it wherever a
  paper uses MNIST or CIFAR-10, since data sets cannot be downloaded at run time;
- :func:`read_mnist_idx` and :func:`read_cifar10_batch`: readers for MNIST IDX files (optionally
  gzipped) and CIFAR-10 python batches the user already has on disk;
- :func:`standardize`: per-feature standardisation (zero mean, unit variance over the set).
"""

from __future__ import annotations

import gzip
import pickle
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ._checks import check_correlation, check_int, check_positive, check_rng

__all__ = [
    "Dataset",
    "gaussian_inputs",
    "load_digits",
    "read_cifar10_batch",
    "read_mnist_idx",
    "standardize",
]


@dataclass(frozen=True)
class Dataset:
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


def gaussian_inputs(n_inputs, dim, q=1.0, c=0.0, rng=None, seed=None) -> np.ndarray:
    """Random inputs with mean squared entry ``q`` and pairwise cosine ``c`` in expectation.

    Each input is ``sqrt(q) * (sqrt(c) * z_0 + sqrt(1 - c) * z_a)`` with ``z`` i.i.d. standard
    normal vectors of length ``dim`` (``c >= 0``), so ``|x_a|^2 / dim -> q`` and
    ``<x_a, x_b> / dim -> c q`` as ``dim`` grows.

    Parameters
    ----------
    n_inputs, dim : int
        Number of inputs and their dimension (both >= 1).
    q : float
        Mean squared entry (> 0).
    c : float
        Correlation between inputs, in [0, 1].
    rng, seed
        A ``numpy.random.Generator`` or an integer seed.

    Returns
    -------
    ndarray, shape (n_inputs, dim)
    """
    n_inputs = check_int(n_inputs, "n_inputs", 1)
    dim = check_int(dim, "dim", 1)
    q = check_positive(q, "q")
    c = check_correlation(c, "c")
    if c < 0:
        raise ValueError(f"c must lie in [0, 1] for shared-component inputs, got {c}")
    rng = check_rng(rng, seed)
    common = rng.standard_normal(dim)
    own = rng.standard_normal((n_inputs, dim))
    return np.sqrt(q) * (np.sqrt(c) * common + np.sqrt(1.0 - c) * own)


def standardize(x, eps: float = 1e-12) -> np.ndarray:
    """Per-feature standardisation: zero mean and unit variance over the samples.

    Features of zero variance (constant pixels) are set to zero rather than divided by zero.
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"x must have shape (n_samples, n_features), got {x.shape}")
    mean = x.mean(axis=0)
    std = x.std(axis=0)
    out = x - mean
    keep = std > eps
    out[:, keep] /= std[keep]
    out[:, ~keep] = 0.0
    return out


def load_digits(n_samples=None, standardized: bool = False) -> Dataset:
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
    ImportError
        scikit-learn is missing: install the ``data`` extra (``pip install meanfield[data]``).
    """
    try:
        from sklearn.datasets import load_digits as _sk_load_digits  # noqa: PLC0415
    except ImportError as exc:
        raise ImportError(
            "the embedded digits data set ships with scikit-learn: install it with "
            "`pip install meanfield[data]` (or `pip install scikit-learn`)"
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


_IDX_DTYPES = {
    0x08: np.uint8,
    0x09: np.int8,
    0x0B: np.dtype(">i2"),
    0x0C: np.dtype(">i4"),
    0x0D: np.dtype(">f4"),
    0x0E: np.dtype(">f8"),
}


def read_mnist_idx(path) -> np.ndarray:
    """Read an IDX file (the MNIST format), gzipped or not.

    The header is two zero bytes, a type code (0x08 unsigned byte, 0x09 signed byte, 0x0B short,
    0x0C int, 0x0D float, 0x0E double), the number of dimensions, then one big-endian 32-bit size
    per dimension; the data follow in C order.

    Parameters
    ----------
    path : str or Path
        e.g. ``train-images-idx3-ubyte`` or ``train-labels-idx1-ubyte.gz``.

    Returns
    -------
    ndarray
        Shape given by the header (images: (n, 28, 28) uint8; labels: (n,) uint8).

    Raises
    ------
    ValueError
        The file is not a valid IDX file (bad magic number, unknown type, truncated data).
    """
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        raw = f.read()
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0:
        raise ValueError(f"{path} is not an IDX file (bad magic number)")
    code, ndim = raw[2], raw[3]
    if code not in _IDX_DTYPES:
        raise ValueError(f"{path}: unknown IDX data type code 0x{code:02x}")
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise ValueError(f"{path}: truncated IDX header")
    shape = tuple(int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    dtype = np.dtype(_IDX_DTYPES[code])
    count = int(np.prod(shape)) if shape else 1
    if len(raw) - header != count * dtype.itemsize:
        raise ValueError(
            f"{path}: IDX header promises {count * dtype.itemsize} data bytes, file has {len(raw) - header}"
        )
    data = np.frombuffer(raw, dtype=dtype, count=count, offset=header)
    return data.astype(dtype.newbyteorder("="), copy=True).reshape(shape)


def read_cifar10_batch(path) -> Dataset:
    """Read a CIFAR-10 python batch (``data_batch_1`` ... ``test_batch``).

    Parameters
    ----------
    path : str or Path
        A pickled dict with ``b"data"`` (uint8, shape (n, 3072), channel-major 32 x 32 planes)
        and ``b"labels"``.

    Returns
    -------
    Dataset
        ``x`` of shape (n, 3072) as float64 in 0..255, ``y`` the labels.
    """
    path = Path(path)
    with open(path, "rb") as f:
        batch = pickle.load(f, encoding="bytes")
    try:
        data = np.asarray(batch[b"data"], dtype=np.float64)
        labels = np.asarray(batch[b"labels"], dtype=np.int64)
    except (KeyError, TypeError) as exc:
        raise ValueError(f"{path} is not a CIFAR-10 python batch (needs b'data' and b'labels')") from exc
    if data.ndim != 2 or data.shape[1] != 3072 or data.shape[0] != labels.shape[0]:
        raise ValueError(f"{path}: expected data of shape (n, 3072) and n labels, got {data.shape}")
    return Dataset(x=data, y=labels, name=f"CIFAR-10 {path.name}")
