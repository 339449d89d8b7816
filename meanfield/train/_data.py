"""The trainer's data: the embedded digits, or MNIST / CIFAR-10 from files the user already has."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from meanfield import Result
from meanfield.data import load_digits, read_cifar10_batch, read_mnist_idx

from ._checks import _choice, _int


@dataclass(frozen=True)
class TrainingData(Result):
    """A train / test split for the trainer, standardised with the training set's statistics.

    Attributes
    ----------
    x_train, x_test : ndarray, shape ``(n, channels, *spatial)``
        Images, channels first (flattened for :class:`DenseNet` by the trainer), float64.
    y_train, y_test : ndarray of int64, shape (n,)
        Labels in ``0 .. n_classes - 1``.
    n_classes : int
    name : str
        Where the data came from and how it was reduced.
    """

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    n_classes: int
    name: str

    @property
    def image_shape(self) -> tuple[int, ...]:
        """``(channels, *spatial)``."""
        return tuple(self.x_train.shape[1:])


def _find(data_dir: Path, names: Sequence[str]) -> Path | None:
    for n in names:
        for cand in (data_dir / n, data_dir / (n + ".gz")):
            if cand.is_file():
                return cand
    return None


def _pool(x: np.ndarray, factor: int) -> np.ndarray:
    """Average pooling of ``(n, c, h, w)`` images by ``factor`` (``h, w`` cropped to multiples)."""
    if factor == 1:
        return x
    n, c, h, w = x.shape
    h2, w2 = h // factor, w // factor
    if h2 < 1 or w2 < 1:
        raise ValueError(f"downsample must be <= the image size {min(h, w)}, got {factor}")
    x = x[:, :, : h2 * factor, : w2 * factor]
    return x.reshape(n, c, h2, factor, w2, factor).mean(axis=(3, 5))


def load_training_data(
    dataset: str = "digits",
    *,
    data_dir: str | Path | None = None,
    n_train: int | None = None,
    n_test: int | None = None,
    downsample: int = 1,
) -> TrainingData:
    """The embedded digits (default), or MNIST / CIFAR-10 read from files the user already has.

    Parameters
    ----------
    dataset : {"digits", "mnist", "cifar10"}
        ``"digits"``: scikit-learn's bundled 8 x 8 digits (``data`` extra), the first 1,297 images
        for training and the last 500 for testing (a fixed split). ``"mnist"``: the IDX files
        ``train-images-idx3-ubyte``, ``train-labels-idx1-ubyte``, ``t10k-images-idx3-ubyte``,
        ``t10k-labels-idx1-ubyte`` (optionally ``.gz``) in ``data_dir``
        (:func:`meanfield.data.read_mnist_idx`). ``"cifar10"``: the python batches
        ``data_batch_1`` ... ``data_batch_5`` (those present) and ``test_batch`` in ``data_dir``
        (:func:`meanfield.data.read_cifar10_batch`).
    data_dir : str or path, optional
        Folder of the MNIST / CIFAR-10 files (required for them, refused for ``"digits"``).
    n_train, n_test : int, optional
        Keep the first ``n_train`` / ``n_test`` examples (``>= 1``; default all).
    downsample : int
        Average-pool the images by this factor (``>= 1``; e.g. 4 turns MNIST into 7 x 7).

    Returns
    -------
    TrainingData
        Each feature standardised with the training set's mean and standard deviation (features
        constant on the training set are set to 0).

    Raises
    ------
    ValueError
        An unknown ``dataset``, a missing ``data_dir`` or missing / invalid files (naming them), or
        sizes out of range.
    TypeError
        Arguments of the wrong type.
    ImportError
        ``"digits"`` without scikit-learn (the ``data`` extra).
    """
    dataset = _choice(dataset, "dataset", ("digits", "mnist", "cifar10"))
    downsample = _int(downsample, "downsample", 1, 64)
    if n_train is not None:
        n_train = _int(n_train, "n_train", 1, 10**8)
    if n_test is not None:
        n_test = _int(n_test, "n_test", 1, 10**8)
    if dataset == "digits":
        if data_dir is not None:
            raise ValueError("data_dir is only used for dataset='mnist' or 'cifar10'")
        d = load_digits()
        x = d.x.reshape(-1, 1, 8, 8)
        xtr, ytr, xte, yte = x[:1297], d.y[:1297], x[1297:], d.y[1297:]
        name = "sklearn digits 8x8 (first 1297 train / last 500 test)"
    else:
        if data_dir is None:
            raise ValueError(f"dataset={dataset!r} needs data_dir, the folder holding its files")
        if isinstance(data_dir, (bool, np.bool_)) or not isinstance(data_dir, (str, Path)):
            raise TypeError(f"data_dir must be a str or pathlib.Path, got {type(data_dir).__name__}")
        root = Path(data_dir)
        if not root.is_dir():
            raise ValueError(f"data_dir {root} is not a folder")
        if dataset == "mnist":
            files = {}
            for key, stem in (
                ("xtr", "train-images-idx3-ubyte"),
                ("ytr", "train-labels-idx1-ubyte"),
                ("xte", "t10k-images-idx3-ubyte"),
                ("yte", "t10k-labels-idx1-ubyte"),
            ):
                path = _find(root, [stem, stem.replace("-idx", ".idx")])
                if path is None:
                    raise ValueError(f"data_dir {root} has no {stem} (or {stem}.gz): the MNIST IDX files are needed")
                files[key] = read_mnist_idx(path)
            for key in ("xtr", "xte"):
                if files[key].ndim != 3:
                    raise ValueError(f"the MNIST image file must have 3 axes (n, h, w), got shape {files[key].shape}")
            for xk, yk in (("xtr", "ytr"), ("xte", "yte")):
                if files[yk].shape != (files[xk].shape[0],):
                    raise ValueError(f"MNIST labels of shape {files[yk].shape} do not match images {files[xk].shape}")
                if files[yk].size and (files[yk].min() < 0 or files[yk].max() > 9):
                    raise ValueError("MNIST labels must lie in 0..9")
            xtr = files["xtr"][:, None].astype(np.float64)
            xte = files["xte"][:, None].astype(np.float64)
            ytr, yte = files["ytr"].astype(np.int64), files["yte"].astype(np.int64)
            name = f"MNIST from {root}"
        else:
            parts = [root / f"data_batch_{i}" for i in range(1, 6) if (root / f"data_batch_{i}").is_file()]
            if not parts or not (root / "test_batch").is_file():
                raise ValueError(f"data_dir {root} must hold CIFAR-10 python batches data_batch_1..5 and test_batch")
            tr = [read_cifar10_batch(p) for p in parts]
            te = read_cifar10_batch(root / "test_batch")
            xtr = np.concatenate([t.x for t in tr]).reshape(-1, 3, 32, 32)
            ytr = np.concatenate([t.y for t in tr])
            xte, yte = te.x.reshape(-1, 3, 32, 32), te.y
            name = f"CIFAR-10 from {root}"
    if n_train is not None:
        xtr, ytr = xtr[:n_train], ytr[:n_train]
    if n_test is not None:
        xte, yte = xte[:n_test], yte[:n_test]
    if downsample > 1:
        xtr, xte = _pool(xtr, downsample), _pool(xte, downsample)
        name += f", {downsample}x{downsample} average-pooled to {xtr.shape[2]}x{xtr.shape[3]}"
    mean = xtr.mean(axis=0)
    std = xtr.std(axis=0)
    keep = std > 1e-12 * max(1.0, float(np.max(np.abs(xtr))))
    scale = np.where(keep, std, 1.0)
    xtr = np.where(keep, (xtr - mean) / scale, 0.0)
    xte = np.where(keep, (xte - mean) / scale, 0.0)
    return TrainingData(xtr, ytr.astype(np.int64), xte, yte.astype(np.int64), 10, name)


def _as_data(data) -> TrainingData:
    if data is None:
        return load_training_data()
    if not isinstance(data, TrainingData):
        raise TypeError(f"data must be a TrainingData (load_training_data) or None, got {type(data).__name__}")
    for name in ("x_train", "x_test"):
        arr = getattr(data, name)
        if not isinstance(arr, np.ndarray) or arr.dtype.kind not in "iuf" or arr.ndim < 2 or arr.shape[0] < 1:
            raise ValueError(f"data.{name} must be a non-empty real array of shape (n, channels, *spatial)")
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"data.{name} must be finite")
    if data.x_train.shape[1:] != data.x_test.shape[1:]:
        raise ValueError("data.x_train and data.x_test must have the same input shape")
    for name, xn in (("y_train", "x_train"), ("y_test", "x_test")):
        y = getattr(data, name)
        if not isinstance(y, np.ndarray) or y.dtype.kind not in "iu" or y.shape != (getattr(data, xn).shape[0],):
            raise ValueError(f"data.{name} must be integer labels, one per row of data.{xn}")
        if y.min() < 0 or y.max() >= data.n_classes:
            raise ValueError(f"data.{name} must lie in 0 .. n_classes - 1 = {data.n_classes - 1}")
    return data
