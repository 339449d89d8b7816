"""Every reader of a user's file runs in bounded memory and time and refuses hostile files with ValueError.

Each hostile file is generated here (a few hundred kilobytes at most) and read in a subprocess
whose address space is capped (``RLIMIT_AS``) at what the interpreter holds after its imports plus
:data:`HEADROOM`, under a wall-clock :data:`TIMEOUT`. Without the bounds these files take
gigabytes (a MemoryError under the cap) or block forever (a timeout); with them the reader must
raise ``ValueError`` naming the file.
"""

from __future__ import annotations

import gzip
import json
import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc/self/status are Linux features"
)

#: Address space a reader may add to the interpreter's after imports (the hostile files below
#: take gigabytes without the bounds; an honest read of them would need far less than this).
HEADROOM = 256 << 20
#: Seconds a reader may take on a hostile file (they are refused in well under a second).
TIMEOUT = 60

_HARNESS = """
import os, resource, sys
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
{imports}
size = next(int(l.split()[1]) * 1024 for l in open("/proc/self/status") if l.startswith("VmSize:"))
limit = size + {headroom}
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
try:
{call}
except ValueError as exc:
    print("ValueError:", exc)
    cause = exc
    while cause is not None:  # refused only because the cap made an allocation fail: not bounded
        if isinstance(cause, MemoryError):
            print("OTHER: the ValueError comes from a MemoryError:", repr(cause))
            sys.exit(5)
        cause = cause.__cause__ or cause.__context__
    sys.exit(0)
except BaseException as exc:
    print("OTHER:", type(exc).__name__, exc)
    sys.exit(3)
print("RETURNED without an error")
sys.exit(4)
"""


def _run_bounded(imports: str, call: str, headroom: int = HEADROOM) -> str:
    """Run ``call`` under the memory cap; the ValueError's message (the test fails otherwise)."""
    code = _HARNESS.format(
        imports=textwrap.dedent(imports).strip(), headroom=headroom, call=textwrap.indent(textwrap.dedent(call), "    ")
    )
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MEANFIELD_NO_PROGRESS="1")
    try:
        proc = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=TIMEOUT, env=env, check=False
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{call} did not return within {TIMEOUT} s")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{call}: expected a ValueError under the memory cap, got:\n{out}"
    return out


def _data(call: str) -> str:
    return _run_bounded("from meanfield import data", call)


# --------------------------------------------------------------------------- CIFAR-10 pickles


def test_cifar_rows_sharing_one_object_are_refused(tmp_path):
    """150,000 rows that all reference one 3072-pixel list: ~600 KB on disk, > 3 GB as an array."""
    row = list(range(256)) * 12
    n = 150_000
    raw = pickle.dumps({b"data": [row] * n, b"labels": [0] * n}, protocol=2)
    assert len(raw) < 1 << 20  # the pickler memoises the row: two bytes per reference
    path = tmp_path / "data_batch_1"
    path.write_bytes(raw)
    out = _data(f"data.read_cifar10_batch({str(path)!r})")
    assert str(path) in out and "expand" in out


def test_cifar_memo_index_bomb_is_refused(tmp_path):
    """A 9-byte pickle naming memo index 2**28: the C unpickler allocates a 4 GB memo table for it."""
    path = tmp_path / "memo"
    path.write_bytes(b"\x80\x02N" + b"r" + (2**28).to_bytes(4, "little") + b".")
    out = _data(f"data.read_cifar10_batch({str(path)!r})")
    assert str(path) in out


@pytest.mark.parametrize(
    ("name", "body"),
    [("marks", b"(" * (1 << 20)), ("dicts", b"]" + b"}a" * (1 << 19)), ("tuples", b"]" + b")\x85a" * (1 << 18))],
)
def test_cifar_container_spam_stays_within_20_times_the_file(tmp_path, name, body):
    """One-byte opcodes that each create a list, dict or stack frame (~80 bytes each): 1 MiB of
    them would take ~80 MiB; the reader must refuse within 20 times the file's size (plus 16 MiB)."""
    raw = b"\x80\x02" + body + b"."
    path = tmp_path / name
    path.write_bytes(raw)
    out = _run_bounded(
        "from meanfield import data", f"data.read_cifar10_batch({str(path)!r})", 20 * len(raw) + (16 << 20)
    )
    assert str(path) in out


def test_cifar_length_field_beyond_the_file_is_refused(tmp_path):
    """BINBYTES8 promising 2**62 bytes: the reader never asks the file for more than it holds."""
    path = tmp_path / "long"
    path.write_bytes(b"\x80\x04\x8e" + (2**62).to_bytes(8, "little") + b"abc")
    out = _data(f"data.read_cifar10_batch({str(path)!r})")
    assert str(path) in out


def test_cifar_self_referencing_list_is_refused(tmp_path):
    cyc = []
    cyc.append(cyc)
    path = tmp_path / "cycle"
    path.write_bytes(pickle.dumps({b"data": cyc, b"labels": [0]}, protocol=2))
    out = _data(f"data.read_cifar10_batch({str(path)!r})")
    assert str(path) in out


def test_cifar_ndarray_cannot_be_called_to_allocate(tmp_path):
    """``numpy.ndarray((2**40,))`` through REDUCE would allocate a terabyte the file does not hold."""
    raw = b"\x80\x02cnumpy\nndarray\n\x8a\x06\x00\x00\x00\x00\x00\x01\x85R."  # ndarray((2**40,))
    path = tmp_path / "alloc"
    path.write_bytes(raw)
    out = _data(f"data.read_cifar10_batch({str(path)!r})")
    assert str(path) in out


def test_cifar_honest_batch_reads_under_the_same_cap(tmp_path):
    """The cap is not what makes the hostile files fail: an honest batch of 500 images reads under it."""
    rng = np.random.default_rng(0)
    batch = {
        b"data": rng.integers(0, 256, (500, 3072), dtype=np.uint8),
        b"labels": [int(v) for v in rng.integers(0, 10, 500)],
    }
    path = tmp_path / "data_batch_1"
    path.write_bytes(pickle.dumps(batch, protocol=2))
    out = _data(
        f"d = data.read_cifar10_batch({str(path)!r}); assert d.x.shape == (500, 3072); raise ValueError('read')"
    )
    assert "ValueError: read" in out


# --------------------------------------------------------------------------- IDX files


def _idx_header(shape, code=0x08):
    return bytes([0, 0, code, len(shape)]) + b"".join(int(n).to_bytes(4, "big") for n in shape)


def test_gzip_idx_with_an_absurd_header_is_refused_before_decompressing(tmp_path):
    """Header claiming 4294967295^3 bytes over 256 MiB of zeros (256 identical gzip members, 0.3 MB)."""
    member = gzip.compress(bytes(1 << 20), compresslevel=9)
    raw = gzip.compress(_idx_header((2**32 - 1,) * 3)) + member * 256
    path = tmp_path / "train-images-idx3-ubyte.gz"
    path.write_bytes(raw)
    out = _data(f"data.read_mnist_idx({str(path)!r})")
    assert str(path) in out and "promises" in out


def test_gzip_idx_claim_beyond_deflate_ratio_is_refused(tmp_path):
    """1 GiB promised by a 40 KB gzip stream: deflate cannot expand that much (GZIP_MAX_RATIO)."""
    member = gzip.compress(bytes(1 << 20), compresslevel=9)
    raw = gzip.compress(_idx_header((1024, 1024, 1024))) + member * 40
    path = tmp_path / "bomb.gz"
    path.write_bytes(raw)
    out = _data(f"data.read_mnist_idx({str(path)!r})")
    assert "deflate" in out


def test_plain_idx_claim_beyond_the_file_is_refused(tmp_path):
    path = tmp_path / "plain-idx"
    path.write_bytes(_idx_header((2**32 - 1,) * 3) + bytes(1000))
    out = _data(f"data.read_mnist_idx({str(path)!r})")
    assert str(path) in out and "promises" in out


def test_gzip_idx_stream_longer_than_promised_stops_at_the_promise(tmp_path):
    """A plausible claim (8 bytes) over 256 MiB of zeros: only the promised bytes are decompressed."""
    member = gzip.compress(bytes(1 << 20), compresslevel=9)
    raw = gzip.compress(_idx_header((8,))) + member * 256
    path = tmp_path / "long.gz"
    path.write_bytes(raw)
    out = _data(f"data.read_mnist_idx({str(path)!r})")
    assert "trailing" in out or "at least" in out


# --------------------------------------------------------------------------- FIFOs and devices


def _fifo(tmp_path, name):
    path = tmp_path / name
    os.mkfifo(path)
    return path


@pytest.mark.parametrize(
    ("imports", "call", "suffix"),
    [
        ("from meanfield import data", "data.read_mnist_idx(PATH)", ""),
        ("from meanfield import data", "data.read_cifar10_batch(PATH)", ""),
        ("import meanfield.figures as f", "f.load(PATH)", ".json"),
    ],
)
def test_readers_refuse_a_fifo_without_blocking(tmp_path, imports, call, suffix):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no named pipes on this platform")
    path = _fifo(tmp_path, "pipe" + suffix)
    out = _run_bounded(imports, call.replace("PATH", repr(str(path))))
    assert "FIFO" in out and str(path) in out


def test_figures_load_refuses_dev_zero():
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    out = _run_bounded("import meanfield.figures as f", "f.load('/dev/zero')")
    assert "character device" in out and "/dev/zero" in out


def test_idx_reader_refuses_dev_zero():
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    out = _data("data.read_mnist_idx('/dev/zero')")
    assert "not a regular file" in out


# --------------------------------------------------------------------------- JSON


@pytest.mark.parametrize("depth", [900, 200_000])
def test_figures_load_refuses_deep_nesting(tmp_path, depth):
    path = tmp_path / "deep.json"
    path.write_text('{"metadata": {}, "data": {"x": ' + "[" * depth + "]" * depth + "}}")
    out = _run_bounded("import meanfield.figures as f", f"f.load({str(path)!r})")
    assert "MAX_JSON_DEPTH" in out and str(path) in out


def test_figures_load_nesting_limit_is_exact(tmp_path):
    from meanfield.figures import MAX_JSON_DEPTH, load

    inner = MAX_JSON_DEPTH - 2  # the outer object and "data" are two levels: "x" nests exactly MAX_JSON_DEPTH
    ok = tmp_path / "ok.json"
    ok.write_text('{"metadata": {}, "data": {"x": ' + "[" * inner + "]" * inner + "}}")
    load(ok)
    deep = tmp_path / "deep.json"
    deep.write_text('{"metadata": {}, "data": {"x": ' + "[" * (inner + 1) + "]" * (inner + 1) + "}}")
    with pytest.raises(ValueError, match="MAX_JSON_DEPTH"):
        load(deep)


def test_figures_load_refuses_many_empty_arrays_within_30_times_the_file(tmp_path):
    """``[[],[],...]``: 3 bytes of text per list, ~80 bytes of memory each once parsed (and again
    when restored): refused before parsing, within 30 times the file's size (plus 32 MiB)."""
    path = tmp_path / "lists.json"
    text = '{"metadata": {}, "data": {"x": [' + ",".join(["[]"] * (1 << 19)) + "]}}"
    path.write_text(text)
    out = _run_bounded("import meanfield.figures as f", f"f.load({str(path)!r})", 30 * len(text) + (32 << 20))
    assert "JSON_CONTAINER_BYTES" in out and str(path) in out


def test_figures_load_depth_ignores_brackets_in_strings(tmp_path):
    """Brackets inside strings are text, not nesting: such a file loads."""
    from meanfield.figures import load

    path = tmp_path / "ok.json"
    path.write_text(json.dumps({"metadata": {"notes": "[" * 500 + '\\"{'}, "data": {"x": [[1.0, 2.0]]}}))
    d = load(path)
    assert d.metadata["notes"].startswith("[[[") and d["x"].shape == (1, 2)


def test_figures_load_keeps_reading_real_figure_files(tmp_path):
    from meanfield.figures import load

    path = tmp_path / "fig.json"
    path.write_text(
        json.dumps({"metadata": {"kind": "figure"}, "axes": {"m": ["a", "b"]}, "data": {"m": [[1, "inf"]]}})
    )
    d = load(path)
    assert d["m"].tolist() == [[1.0, float("inf")]]


# --------------------------------------------------------------------------- meanfield audit --inputs


def test_audit_inputs_npy_header_beyond_the_file_and_fifo_are_refused(tmp_path):
    """``meanfield audit --inputs``: a .npy header promising 80 TB over 64 bytes, then a FIFO
    (one subprocess: importing torch takes seconds)."""
    pytest.importorskip("torch")
    if not hasattr(os, "mkfifo"):
        pytest.skip("no named pipes on this platform")
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (100000, 100000, 1000), }"
    header = header + " " * (63 - (len(header) + 10) % 64) + "\n"
    raw = b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + bytes(64)
    npy = tmp_path / "x.npy"
    npy.write_bytes(raw)
    fifo = _fifo(tmp_path, "pipe.npy")
    call = f"""
        try:
            load_inputs({str(npy)!r})
        except ValueError as exc:
            assert "promises" in str(exc), exc
        else:
            raise AssertionError("the .npy file was accepted")
        load_inputs({str(fifo)!r})
    """
    out = _run_bounded("from meanfield.pytorch.command import load_inputs", call)
    assert "FIFO" in out
