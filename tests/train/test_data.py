"""meanfield.data: synthetic inputs, the embedded digits, MNIST IDX and CIFAR-10 readers."""

import gzip
import io
import os
import pickle
import struct
import time

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


@pytest.mark.parametrize(
    "name,code", [("imgs-idx3-ubyte", 0x08), ("imgs-idx3-ubyte.gz", 0x08), ("x.idx", 0x0C), ("f.idx", 0x0D)]
)
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
    batch = {
        b"data": rng.integers(0, 256, size=(6, 3072), dtype=np.uint8),
        b"labels": [0, 1, 2, 3, 4, 5],
        b"batch_label": b"t",
    }
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
    x = data.gaussian_inputs(2, 200_000, q=2.0, c=0.5, rng=3)
    # |x|^2 / dim -> q and <x1, x2> / dim -> c q; standard errors ~ q sqrt(2 / dim) = 0.006
    assert np.mean(x[0] ** 2) == pytest.approx(2.0, abs=0.04)
    assert np.mean(x[0] * x[1]) == pytest.approx(1.0, abs=0.04)
    with pytest.raises(ValueError):
        data.gaussian_inputs(2, 10, c=-0.5)


# --------------------------------------------------------------------------- trust: CIFAR-10 pickles


class Py2StylePickler(pickle._Pickler):
    """Protocol 2 as Python 2's cPickle wrote the original CIFAR-10 batches: every str is a
    BINSTRING (so ``encoding="bytes"`` turns keys into ``b"data"``), globals are GLOBAL opcodes and
    NumPy lives under ``numpy.core``."""

    dispatch = pickle._Pickler.dispatch.copy()

    def save_py2_str(self, obj):
        raw = obj.encode("latin1") if isinstance(obj, str) else obj
        if len(raw) < 256:
            self.write(pickle.SHORT_BINSTRING + bytes([len(raw)]) + raw)
        else:
            self.write(pickle.BINSTRING + struct.pack("<i", len(raw)) + raw)
        self.memoize(obj)

    dispatch[str] = save_py2_str
    dispatch[bytes] = save_py2_str

    def save_global(self, obj, name=None):
        module = obj.__module__.replace("numpy._core", "numpy.core")
        self.write(pickle.GLOBAL + f"{module}\n{name or obj.__qualname__}\n".encode("ascii"))
        self.memoize(obj)


def _py2_dumps(obj):
    buf = io.BytesIO()
    Py2StylePickler(buf, protocol=2).dump(obj)
    return buf.getvalue()


def _globals_of(raw):
    """(module, name) of every global a (trusted, self-made) pickle resolves when loaded."""
    seen = set()

    class Recorder(pickle.Unpickler):
        def find_class(self, module, name):
            seen.add((module, name))
            return super().find_class(module, name)

    Recorder(io.BytesIO(raw), encoding="bytes").load()
    return seen


def _batch(n=4, seed=0, str_keys=False):
    rng = np.random.default_rng(seed)
    b = {
        "batch_label": "training batch 1 of 5",
        "labels": [int(v) for v in rng.integers(0, 10, n)],
        "data": rng.integers(0, 256, size=(n, 3072), dtype=np.uint8),
        "filenames": [f"img_{i}.png" for i in range(n)],
    }
    return b if str_keys else {k.encode(): v for k, v in b.items()}


@pytest.mark.parametrize("layout", ["py2", "protocol2", "protocol4", "protocol5", "str_keys"])
def test_cifar10_restricted_unpickler_reads_real_layouts(tmp_path, layout):
    """The original files are Python-2 pickles (BINSTRING keys, numpy.core globals); re-pickled
    copies come in protocols 2-5. Each must load, and reference only admitted globals."""
    b = _batch(str_keys=layout in ("py2", "str_keys"))
    raw = (
        _py2_dumps(b)
        if layout == "py2"
        else pickle.dumps(b, protocol={"protocol2": 2, "protocol4": 4, "protocol5": 5, "str_keys": 4}[layout])
    )
    refs = _globals_of(raw)
    # every global in ``refs`` is admitted: the restricted unpickler raises on any other, and the
    # read below must succeed (test_cifar10_refuses_a_pickle_that_runs_code checks the refusal)
    if layout == "py2":
        assert refs == {("numpy.core.multiarray", "_reconstruct"), ("numpy", "ndarray"), ("numpy", "dtype")}
    if layout == "protocol2":
        assert ("_codecs", "encode") in refs
    (tmp_path / "data_batch_1").write_bytes(raw)
    ds = data.read_cifar10_batch(tmp_path / "data_batch_1")
    src = b["data" if layout in ("py2", "str_keys") else b"data"]
    labels = b["labels" if layout in ("py2", "str_keys") else b"labels"]
    np.testing.assert_array_equal(ds.x, src.astype(np.float64))
    np.testing.assert_array_equal(ds.y, labels)
    assert ds.x.dtype == np.float64 and ds.y.dtype == np.int64


class _Payload:
    """Unpickling this runs ``command`` through os.system under plain ``pickle.load``."""

    def __init__(self, command):
        self.command = command

    def __reduce__(self):
        return (os.system, (self.command,))


class _EvalPayload:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (eval, (f"open({str(self.path)!r}, 'w').write('pwned')",))


@pytest.mark.parametrize("where", ["top", "data", "label", "eval"])
def test_cifar10_refuses_a_pickle_that_runs_code(tmp_path, where):
    marker = tmp_path / "pwned"
    payload = _EvalPayload(marker) if where == "eval" else _Payload(f"echo pwned > {marker}")
    b = _batch()
    if where == "top":
        b = payload
    elif where in ("data", "eval"):
        b[b"data"] = payload
    else:
        b[b"labels"][1] = payload
    (tmp_path / "data_batch_1").write_bytes(pickle.dumps(b, protocol=2))
    with pytest.raises(ValueError, match="CIFAR-10 python batch") as err:
        data.read_cifar10_batch(tmp_path / "data_batch_1")
    assert "refused" in str(err.value)
    assert not marker.exists(), "the pickle's payload ran"


def test_cifar10_admitted_globals_cannot_be_abused(tmp_path):
    """_codecs.encode only for latin-1 text; _reconstruct only for plain ndarrays."""
    evil_codec = b"\x80\x02c_codecs\nencode\nq\x00X\x03\x00\x00\x00abcq\x01X\x04\x00\x00\x00zlibq\x02\x86q\x03Rq\x04."
    (tmp_path / "a").write_bytes(evil_codec)
    with pytest.raises(ValueError, match="CIFAR-10 python batch"):
        data.read_cifar10_batch(tmp_path / "a")
    sub = pickle.dumps(np.zeros(3).view(np.ma.MaskedArray), protocol=2)
    (tmp_path / "b").write_bytes(sub)
    with pytest.raises(ValueError, match="refused"):
        data.read_cifar10_batch(tmp_path / "b")


def _write(path, raw):
    path.write_bytes(raw)
    return path


def test_cifar10_files_that_are_not_batches(tmp_path):
    good = pickle.dumps(_batch(), protocol=2)
    nan_data = _batch()
    nan_data[b"data"] = np.full((2, 3072), np.nan)
    nan_data[b"labels"] = [0, 1]
    bad_label = _batch()
    bad_label[b"labels"][0] = 10
    cases = {
        "empty": b"",
        "garbage.txt": b"hello, this is not a pickle\n" * 10,
        "truncated": good[: len(good) // 2],
        "gz-garbage.gz": gzip.compress(b"\x00" * 100),
        "idx": bytes([0, 0, 8, 1, 0, 0, 0, 2, 1, 2]),
        "list.pkl": pickle.dumps([1, 2, 3]),
        "no-labels.pkl": pickle.dumps({b"data": np.zeros((2, 3072), np.uint8)}),
        "dict-nan.pkl": pickle.dumps(nan_data),
        "bad-label.pkl": pickle.dumps(bad_label),
        "wrong-shape.pkl": pickle.dumps({b"data": np.zeros((2, 100), np.uint8), b"labels": [0, 1]}),
        "too-few-labels.pkl": pickle.dumps({b"data": np.zeros((2, 3072), np.uint8), b"labels": [0]}),
        "strings.pkl": pickle.dumps({b"data": [["a"] * 3072], b"labels": [0]}),
        "pixel-300.pkl": pickle.dumps({b"data": np.full((1, 3072), 300), b"labels": [0]}),
        "zero-images.pkl": pickle.dumps({b"data": np.zeros((0, 3072), np.uint8), b"labels": []}),
    }
    for name, raw in cases.items():
        with pytest.raises(ValueError, match="CIFAR-10 python batch") as err:
            data.read_cifar10_batch(_write(tmp_path / name, raw))
        assert str(tmp_path / name) in str(err.value), name
    for bad in (None, 3, 2.5, ["a"], True):
        with pytest.raises(TypeError, match="path"):
            data.read_cifar10_batch(bad)


# --------------------------------------------------------------------------- trust: IDX files


def test_idx_corrupt_gzip_and_non_finite_data_raise(tmp_path):
    write_idx(tmp_path / "ok.gz", np.arange(6).reshape(2, 3))
    raw = (tmp_path / "ok.gz").read_bytes()
    (tmp_path / "gz-garbage.gz").write_bytes(b"\x1f\x8b\x09" + b"\x00" * 40)  # unknown compression method
    (tmp_path / "truncated.gz").write_bytes(raw[: len(raw) - 12])
    (tmp_path / "corrupt.gz").write_bytes(raw[:12] + bytes(b ^ 0x5A for b in raw[12:]))
    for name in ("gz-garbage.gz", "truncated.gz", "corrupt.gz"):
        with pytest.raises(ValueError, match="path .*" + name):
            data.read_mnist_idx(tmp_path / name)
    header = bytes([0, 0, 0x0E, 1]) + (2).to_bytes(4, "big")
    (tmp_path / "nan-double-idx").write_bytes(header + np.array([np.nan, np.inf], ">f8").tobytes())
    with pytest.raises(ValueError, match="NaN or infinity"):
        data.read_mnist_idx(tmp_path / "nan-double-idx")
    with pytest.raises(TypeError, match="path"):
        data.read_mnist_idx(None)


def test_idx_absurd_header_is_refused_without_allocating(tmp_path):
    """A header promising 4 x (2^32 - 1) dimensions (2^128 bytes) must be refused from the file's size."""
    header = bytes([0, 0, 0x0E, 4]) + b"\xff\xff\xff\xff" * 4
    (tmp_path / "overflow-idx").write_bytes(header + b"\x00" * 16)
    start = time.perf_counter()
    with pytest.raises(ValueError, match="promises"):
        data.read_mnist_idx(tmp_path / "overflow-idx")
    assert time.perf_counter() - start < 5.0
    # a gzip stream decompressing to more than the header promises is refused too (no full read)
    write_idx(tmp_path / "long.gz", np.zeros(10, dtype=np.uint8))
    body = gzip.decompress((tmp_path / "long.gz").read_bytes())
    (tmp_path / "long.gz").write_bytes(gzip.compress(body + b"\x00" * 5))
    with pytest.raises(ValueError, match="at least"):
        data.read_mnist_idx(tmp_path / "long.gz")


# --------------------------------------------------------------------------- trust: standardize


def test_standardize_rejects_non_finite_entries_instead_of_zeroing_the_feature():
    x = np.array([[1.0, 2.0], [3.0, 5.0], [4.0, 1.0]])
    for bad in (np.nan, np.inf, -np.inf):
        y = x.copy()
        y[1, 0] = bad
        with pytest.raises(ValueError, match="x must be finite"):
            data.standardize(y)
    with pytest.raises(ValueError, match="at least one sample"):
        data.standardize(np.zeros((0, 3)))
    with pytest.raises(TypeError, match="x must be real"):
        data.standardize(x + 1j)


@pytest.mark.parametrize("eps", [np.nan, np.inf, -np.inf, -1.0, -1e-3, np.float64(np.nan)])
def test_standardize_rejects_bad_eps(eps):
    with pytest.raises(ValueError, match="eps"):
        data.standardize(np.array([[1.0, 2.0], [3.0, 5.0]]), eps=eps)


@pytest.mark.parametrize("eps", [1 + 1j, "1e-12", [1e-12], True])
def test_standardize_rejects_non_real_eps(eps):
    with pytest.raises(TypeError, match="eps"):
        data.standardize(np.array([[1.0, 2.0], [3.0, 5.0]]), eps=eps)


@pytest.mark.parametrize("scale", [1e-300, 1.0, 1e300])
def test_standardize_is_exact_at_any_scale(scale):
    """Zero mean, unit variance (checked with Python's statistics on exact fractions) at the
    extremes of the float64 range, where the naive mean/std overflow or lose precision."""
    from fractions import Fraction

    x = np.array([[1.0, 7.0, 3.0], [2.0, 7.0, -1.0], [4.0, 7.0, 0.5], [-0.5, 7.0, 2.0]])
    z = data.standardize(x * scale)
    assert np.all(np.isfinite(z))
    np.testing.assert_array_equal(z[:, 1], 0.0)  # constant feature
    for j in (0, 2):
        col = [Fraction(v) for v in x[:, j]]
        mean = sum(col) / len(col)
        var = sum((v - mean) ** 2 for v in col) / len(col)
        expected = [float(v - mean) / float(var) ** 0.5 for v in col]
        np.testing.assert_allclose(z[:, j], expected, rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("flag", ["yes", None, np.nan, [True], 1])
def test_load_digits_flag_must_be_bool(flag):
    with pytest.raises(TypeError, match="standardized"):
        data.load_digits(n_samples=10, standardized=flag)


# --------------------------------------------------------------------------- trust: rng rule


def test_gaussian_inputs_rng_rule():
    a = data.gaussian_inputs(3, 5, q=2.0, c=0.25, rng=7)
    b = data.gaussian_inputs(3, 5, q=2.0, c=0.25, rng=np.random.default_rng(7))
    np.testing.assert_array_equal(a, b)
    g = np.random.default_rng(7)  # the documented construction, drawn by hand
    common, own = g.standard_normal(5), g.standard_normal((3, 5))
    np.testing.assert_allclose(a, np.sqrt(2.0) * (0.5 * common + np.sqrt(0.75) * own), rtol=1e-15)
    assert data.gaussian_inputs(2, 3, rng=None).shape == (2, 3)
    with pytest.raises(TypeError):
        data.gaussian_inputs(2, 3, seed=1)  # the old keyword is gone
    for bad in (1.5, "1", True):
        with pytest.raises(TypeError, match="rng"):
            data.gaussian_inputs(2, 3, rng=bad)
    with pytest.raises(TypeError, match="q"):
        data.gaussian_inputs(2, 3, q=1 + 1j)
    with pytest.raises(ValueError, match="q"):
        data.gaussian_inputs(2, 3, q=np.nan)
    with pytest.raises(ValueError, match="c must lie"):
        data.gaussian_inputs(2, 3, c=1.5)
    with pytest.raises(ValueError, match="MAX_GAUSSIAN_ENTRIES"):
        data.gaussian_inputs(10**6, 10**6)
