"""meanfield.parallel: every output equals the serial one or raises a named error.

Regressions: a sweep that concatenated a non-row field (another grid axis) instead of raising; a
process pool that stayed broken after one worker died; a deterministic chunk error re-run by Dask.
"""

from __future__ import annotations

import dataclasses
import os
from concurrent.futures.process import BrokenProcessPool

import numpy as np
import pytest

from meanfield import dense, parallel


def _assert_same(a, b):
    assert type(a) is type(b)
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            assert np.array_equal(x, y, equal_nan=True), f.name
        else:
            assert x == y, f.name


def test_sweep_refuses_a_grid_axis_not_named_in_keep():
    with pytest.raises(ValueError, match="sigma_b2.*keep"):
        parallel.sweep(
            dense.phase_diagram, "sigma_w2", [1, 1.5, 2], rows_per_chunk=2, activation="tanh", sigma_b2=[0, 0.1]
        )


@pytest.mark.parametrize("n_rows", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("rows_per_chunk", [1, 2, 3, 7])
def test_sweep_equals_the_serial_call_or_raises(n_rows, rows_per_chunk):
    sw = np.linspace(0.5, 3.0, n_rows)
    sb = np.array([0.0, 0.1])
    serial = dense.phase_diagram("tanh", sw, sb)
    got = parallel.sweep(
        dense.phase_diagram,
        "sigma_w2",
        sw,
        rows_per_chunk=rows_per_chunk,
        keep=("sigma_b2",),
        activation="tanh",
        sigma_b2=sb,
    )
    _assert_same(got, serial)
    with pytest.raises(ValueError, match="keep"):
        parallel.sweep(
            dense.phase_diagram, "sigma_w2", sw, rows_per_chunk=rows_per_chunk, activation="tanh", sigma_b2=sb
        )


def test_moments_refuses_a_negative_count():
    with pytest.raises(ValueError, match="count"):
        parallel.Moments(count=-1, total=np.zeros(2), total_sq=np.zeros(2))
    with pytest.raises(ValueError, match="count"):
        parallel.Moments(count=0, total=np.zeros(2), total_sq=np.zeros(2))
    with pytest.raises(TypeError, match="count"):
        parallel.Moments(count=True, total=np.zeros(2), total_sq=np.zeros(2))
    with pytest.raises(ValueError, match="total_sq"):
        parallel.Moments(count=2, total=np.zeros(2), total_sq=-np.ones(2))


def _die(k):
    if k == 1:
        os._exit(3)
    return k


def _square(k):
    return k * k


def test_process_executor_recovers_after_a_worker_dies():
    ex = parallel.ProcessExecutor(1)
    try:
        with pytest.raises(BrokenProcessPool):
            ex.map(_die, [(0,), (1,)])
        assert ex.map(_square, [(2,), (3,)]) == [4, 9]  # a fresh pool
    finally:
        ex.close()


_CALLS: list[int] = []


class ChunkFailure(RuntimeError):
    pass


def _fail_once_per_call(k):
    _CALLS.append(k)
    raise ChunkFailure(f"chunk {k} is wrong")


def test_dask_does_not_retry_a_deterministic_chunk_error():
    distributed = pytest.importorskip("distributed")
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=1, dashboard_address=None) as client:
        ex = parallel.DaskExecutor(client, retries=3)
        _CALLS.clear()
        with pytest.raises(ChunkFailure, match="chunk 0 is wrong"):
            ex.map(_fail_once_per_call, [(0,)])
        assert _CALLS == [0]
        assert ex.map(_square, [(2,), (5,)]) == [4, 25]
