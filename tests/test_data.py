"""meanfield.data: synthetic inputs, the embedded digits, MNIST IDX and CIFAR-10 readers."""

import gzip
import pickle

import numpy as np
import pytest

from meanfield import data


def write_idx(path, array, code=0x08):
    header = bytes([0, 0, code, array.ndim]) + b"".join(int(s).to_bytes(4, "big") for s in array.shape)
    dtype = {0x08: ">u1", 0x0C: ">i4", 0x0D: ">f4"}[code]
    payload = header + array.astype(dtype).tobytes()
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "wb") as f:
        f.write(payload)


@pytest.mark.parametrize("name,code", [("imgs-idx3-ubyte", 0x08), ("imgs-idx3-ubyte.gz", 0x08), ("x.idx", 0x0C), ("f.idx", 0x0D)])
def test_idx_round_trip(tmp_path, name, code):
    rng = np.random.default_rng(0)
    arr = rng.integers(0, 255, size=(5, 28, 28)) if code != 0x0D else rng.standard_normal((4, 3)).astype(np.float32)
    write_idx(tmp_path / name, arr, code)
    out = data.read_mnist_idx(tmp_path / name)
    assert out.shape == arr.shape and np.array_equal(out, arr.astype(out.dtype))


def test_idx_labels_and_errors(tmp_path):
    labels = np.array([3, 1, 4, 1, 5], dtype=np.uint8)
    write_idx(tmp_path / "labels-idx1-ubyte", labels)
    assert list(data.read_mnist_idx(tmp_path / "labels-idx1-ubyte")) == [3, 1, 4, 1, 5]
    (tmp_path / "bad").write_bytes(b"\x01\x02\x08\x01\x00\x00\x00\x01\x07")
    with pytest.raises(ValueError, match="magic"):
        data.read_mnist_idx(tmp_path / "bad")
    (tmp_path / "short").write_bytes(bytes([0, 0, 8, 1, 0, 0, 0, 9, 1, 2]))
    with pytest.raises(ValueError, match="promises"):
        data.read_mnist_idx(tmp_path / "short")


def test_cifar10_batch(tmp_path):
    rng = np.random.default_rng(1)
    batch = {b"data": rng.integers(0, 256, size=(6, 3072), dtype=np.uint8), b"labels": [0, 1, 2, 3, 4, 5], b"batch_label": b"t"}
    with open(tmp_path / "data_batch_1", "wb") as f:
        pickle.dump(batch, f)
    ds = data.read_cifar10_batch(tmp_path / "data_batch_1")
    assert ds.x.shape == (6, 3072) and ds.x.dtype == np.float64 and list(ds.y) == [0, 1, 2, 3, 4, 5]
    with open(tmp_path / "not_cifar", "wb") as f:
        pickle.dump({b"x": 1}, f)
    with pytest.raises(ValueError):
        data.read_cifar10_batch(tmp_path / "not_cifar")


def test_embedded_digits():
    ds = data.load_digits()
    assert ds.x.shape == (1797, 64) and ds.x.max() == 16.0 and set(np.unique(ds.y)) == set(range(10))
    z = data.load_digits(n_samples=500, standardized=True).x
    keep = z.std(axis=0) > 0
    assert np.allclose(z.mean(axis=0), 0.0, atol=1e-12) and np.allclose(z.std(axis=0)[keep], 1.0)
    with pytest.raises(ValueError):
        data.load_digits(n_samples=0)


def test_gaussian_inputs_statistics():
    x = data.gaussian_inputs(2, 200_000, q=2.0, c=0.5, seed=3)
    # |x|^2 / dim -> q and <x1, x2> / dim -> c q; standard errors ~ q sqrt(2 / dim) = 0.006
    assert np.mean(x[0] ** 2) == pytest.approx(2.0, abs=0.04)
    assert np.mean(x[0] * x[1]) == pytest.approx(1.0, abs=0.04)
    with pytest.raises(ValueError):
        data.gaussian_inputs(2, 10, c=-0.5)
