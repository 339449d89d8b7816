"""meanfield.parallel: one execution layer; the same numbers serially, on processes and on Dask.

Equality is bitwise everywhere: the chunks and their streams do not depend on the executor and the
merges run in chunk order, so no floating-point reduction tolerance is needed.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import sys
import threading
import time

import numpy as np
import pytest

from meanfield import dense, landscape, parallel
from meanfield.simulate import simulate_dense

# --------------------------------------------------------------------------------------------
# helpers (module level: pickled by reference to worker processes)
# --------------------------------------------------------------------------------------------


def _draw(n, rng):
    return np.random.default_rng(rng).standard_normal(n)


def _slow_draw(n, rng, seconds):
    time.sleep(seconds)
    return np.random.default_rng(rng).standard_normal(n)


def _log_scale_moments(sim):
    return parallel.Moments.of(sim.log_scale)


def _draws(rng, n_chunks=6, size=5, fn=_draw, extra=()):
    streams = parallel.chunk_streams(rng, n_chunks)
    return np.concatenate(parallel.map_chunks(fn, [(size, s, *extra) for s in streams]))


X = np.random.default_rng(0).standard_normal((2, 8))
DENSE = dict(activation="tanh", sigma_w2=1.5, sigma_b2=0.05, depth=3, width=16)


def _dense_ensemble(reduce=None):
    return parallel.ensemble(simulate_dense, X, **DENSE, n_networks=10, chunk_size=3, rng=7, reduce=reduce)


def _task():
    return landscape.regression_task(grid_size=4, rng=3)


# --------------------------------------------------------------------------------------------
# in-process
# --------------------------------------------------------------------------------------------


def test_default_is_serial():
    assert isinstance(parallel.current(), parallel.SerialExecutor)
    with parallel.using() as ex:
        assert isinstance(ex, parallel.SerialExecutor)


def test_chunk_ranges_cover_range():
    assert parallel.chunk_ranges(10, 3) == [(0, 3), (3, 6), (6, 9), (9, 10)]
    assert parallel.chunk_ranges(1, 5) == [(0, 1)]


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, "3", None])
def test_chunk_ranges_rejects(bad):
    with pytest.raises((TypeError, ValueError), match="chunk_size"):
        parallel.chunk_ranges(10, bad)


def test_map_chunks_rejects_bad_lists():
    with pytest.raises(TypeError, match="args_list"):
        parallel.map_chunks(_draw, ((5, s) for s in range(2)))
    with pytest.raises(TypeError, match="args_list"):
        parallel.map_chunks(_draw, [5, 6])
    with pytest.raises(TypeError, match="fn"):
        parallel.map_chunks(3, [(1,)])
    assert parallel.map_chunks(_draw, []) == []


def test_chunk_streams_are_spawned_children():
    got = parallel.chunk_streams(5, 3)
    want = np.random.SeedSequence(5).spawn(3)
    # default_rng(5)'s seed sequence is SeedSequence(5): chunk k's stream is its k-th child
    for g, w in zip(got, want):
        assert np.array_equal(g.generate_state(4), w.generate_state(4))
    a = np.random.default_rng(got[0]).standard_normal(3)
    assert not np.array_equal(a, np.random.default_rng(got[1]).standard_normal(3))


def test_moments_merge_is_exact():
    x = np.random.default_rng(1).standard_normal((11, 3))
    whole = parallel.Moments.of(x)
    merged = parallel.Moments.of(x[:4]).merge(parallel.Moments.of(x[4:]))
    assert merged.count == 11
    # sums in a different association: equal to a few ulps of the sum of |x| (2 additions per term)
    scale = np.abs(x).sum(axis=0)
    assert np.all(np.abs(merged.total - whole.total) <= 4 * np.finfo(float).eps * scale)
    np.testing.assert_allclose(merged.mean, x.mean(axis=0), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(merged.variance, x.var(axis=0, ddof=1), rtol=1e-12)


@pytest.mark.parametrize("bad", [np.array([]), np.array([np.nan]), np.array([1 + 1j]), np.array([True])])
def test_moments_rejects(bad):
    with pytest.raises((TypeError, ValueError), match="samples"):
        parallel.Moments.of(bad)


@pytest.mark.parametrize(
    "kwargs, exc",
    [
        ({"workers": 0}, ValueError),
        ({"workers": True}, TypeError),
        ({"workers": 1.5}, TypeError),
        ({"target": "gpu"}, ValueError),
        ({"target": 3}, TypeError),
        ({"retries": -1}, ValueError),
        ({"scheduler": ""}, TypeError),
        ({"target": np.zeros(2)}, TypeError),
    ],
)
def test_using_rejects(kwargs, exc):
    with pytest.raises(exc):
        with parallel.using(**kwargs):
            pass


def test_without_distributed_asking_for_dask_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    with pytest.raises(ImportError, match=r"meanfield-theory\[distributed\]"):
        with parallel.using(workers=2):
            pass
    with pytest.raises(ImportError, match="distributed"):
        parallel.executor_from_options(scheduler="tcp://127.0.0.1:1")
    # and the serial default still runs
    assert _draws(1).shape == (30,)


def test_ensemble_concatenates_chunks_in_order():
    sim = _dense_ensemble()
    assert sim.cov_normalized.shape == (10, 4, 2, 2)
    streams = parallel.chunk_streams(7, 4)
    second = simulate_dense(X, **DENSE, n_networks=3, rng=streams[1])
    assert np.array_equal(sim.log_scale[3:6], second.log_scale)


def test_ensemble_reduce_equals_moments_of_concatenation():
    red = _dense_ensemble(_log_scale_moments)
    full = _dense_ensemble().log_scale
    assert red.count == 10
    # reduced per chunk, then added: a different association than one sum over 10 rows
    np.testing.assert_allclose(red.total, full.sum(axis=0), rtol=4 * np.finfo(float).eps * 10)


def test_sweep_phase_diagram_is_bitwise_equal():
    sw, sb = np.linspace(0.5, 3.0, 7), np.array([0.0, 0.05, 0.3])
    whole = dense.phase_diagram("tanh", sw, sb)
    rows = parallel.sweep(
        dense.phase_diagram, "sigma_w2", sw, rows_per_chunk=3, keep=("sigma_b2",), activation="tanh", sigma_b2=sb
    )
    for name in ("sigma_w2", "sigma_b2", "q_star", "c_star", "chi_1", "chi_c", "xi_c", "c_frozen"):
        assert np.array_equal(getattr(rows, name), getattr(whole, name)), name


def test_sweep_of_a_pointwise_conv_function_equals_the_loop():
    from meanfield import conv

    grid = np.array([0.8, 1.2, 1.6, 2.0, 2.4])
    v = np.full(3, 1 / 3)
    args = dict(activation="tanh", sigma_b2=0.05, v=v, shape=(8,))
    got = parallel.sweep(conv.depth_scales, "sigma_w2", grid, rows_per_chunk=2, vectorised=False, **args)
    want = [conv.depth_scales(sigma_w2=float(s), **args) for s in grid]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        for f in dataclasses.fields(w):
            assert np.array_equal(getattr(g, f.name), getattr(w, f.name)), f.name


@pytest.mark.parametrize("arch", ["plain", "residual", "hyper_residual", "path_residual"])
def test_census_equals_binary_landscape(arch):
    task = _task()
    full = landscape.binary_landscape(arch, task.inputs, task.targets, n_layers=5)
    for bits in (0, 3, full.n_params):
        cen = landscape.landscape_census(arch, task.inputs, task.targets, n_layers=5, chunk_bits=bits)
        assert cen.n_local_minima == full.n_local_minima
        assert cen.n_strict_local_minima == full.n_strict_local_minima
        assert cen.n_zero_output == full.n_zero_output
        assert np.array_equal(cen.local_minima, full.local_minima)
        assert cen.min_loss == full.losses.min()
        assert cen.argmin == int(np.argmin(full.losses))
        assert cen.minima_per_chunk.sum() == cen.n_local_minima
        assert cen.complete and cen.n_configurations == 2**full.n_params


def test_partial_censuses_add_up():
    task = _task()
    whole = landscape.landscape_census("residual", task.inputs, task.targets, n_layers=5, chunk_bits=3)
    a = landscape.landscape_census("residual", task.inputs, task.targets, n_layers=5, chunk_bits=3, chunks=[5, 0, 2])
    b = landscape.landscape_census(
        "residual", task.inputs, task.targets, n_layers=5, chunk_bits=3, chunks=[1, 3, 4, 6, 7]
    )
    assert not a.complete and a.n_configurations == 3 * 2**11
    assert list(a.chunk_indices) == [0, 2, 5]
    assert a.n_local_minima + b.n_local_minima == whole.n_local_minima
    assert np.array_equal(np.sort(np.concatenate([a.local_minima, b.local_minima])), whole.local_minima)
    assert min(a.min_loss, b.min_loss) == whole.min_loss


@pytest.mark.parametrize("cross", ["recompute", "tables"])
@pytest.mark.parametrize("arch", ["plain", "residual"])
def test_census_both_cross_chunk_paths_agree(arch, cross):
    task = _task()
    full = landscape.binary_landscape(arch, task.inputs, task.targets, n_layers=5)
    cen = landscape.landscape_census(arch, task.inputs, task.targets, n_layers=5, chunk_bits=5, cross_neighbours=cross)
    assert np.array_equal(cen.local_minima, full.local_minima)
    assert cen.n_strict_local_minima == full.n_strict_local_minima


def test_census_with_biases_and_bias_bit_equals_binary_landscape():
    task = _task()
    b = np.random.default_rng(2).standard_normal((3, 2))
    full = landscape.binary_landscape("plain", task.inputs, task.targets, biases=b, n_layers=4, output_bias_bit=True)
    cen = landscape.landscape_census(
        "plain", task.inputs, task.targets, biases=b, n_layers=4, output_bias_bit=True, chunk_bits=4
    )
    assert np.array_equal(cen.local_minima, full.local_minima)
    assert cen.n_strict_local_minima == full.n_strict_local_minima


@pytest.mark.parametrize(
    "kwargs, exc",
    [
        ({"chunk_bits": -1}, ValueError),
        ({"chunk_bits": 99}, ValueError),
        ({"chunk_bits": 1.5}, (TypeError, ValueError)),
        ({"n_layers": 40}, ValueError),
        ({"rtol": np.nan}, ValueError),
        ({"architecture": "dense"}, ValueError),
        ({"chunk_bits": 2, "chunks": [4]}, ValueError),
        ({"chunk_bits": 2, "chunks": [1, 1]}, ValueError),
        ({"chunk_bits": 2, "chunks": []}, ValueError),
        ({"chunk_bits": 2, "chunks": "01"}, TypeError),
        ({"chunk_bits": 2, "chunks": [True]}, (TypeError, ValueError)),
        ({"cross_neighbours": "both"}, ValueError),
    ],
)
def test_census_rejects(kwargs, exc):
    task = _task()
    args = {"architecture": "plain", "inputs": task.inputs, "targets": task.targets, "n_layers": 4, **kwargs}
    with pytest.raises(exc):
        landscape.landscape_census(**args)


def test_census_rejects_overflow():
    task = _task()
    with pytest.raises(ValueError, match="overflow"):
        landscape.landscape_census("plain", task.inputs * 1e160, task.targets, n_layers=4)


# --------------------------------------------------------------------------------------------
# local processes and a Dask LocalCluster: bitwise the serial numbers
# --------------------------------------------------------------------------------------------


def test_process_executor_matches_serial():
    serial = (_draws(11), _dense_ensemble())
    with parallel.using("processes", workers=2) as ex:
        assert isinstance(ex, parallel.ProcessExecutor)
        got = (_draws(11), _dense_ensemble())
    assert np.array_equal(got[0], serial[0])
    assert np.array_equal(got[1].cov_normalized, serial[1].cov_normalized)
    assert np.array_equal(got[1].log_scale, serial[1].log_scale)


def test_dask_matches_serial(client):
    task = _task()
    serial = (
        _draws(11),
        _dense_ensemble(),
        landscape.landscape_census("residual", task.inputs, task.targets, n_layers=5, chunk_bits=3),
    )
    sw, sb = np.linspace(0.5, 3.0, 5), np.array([0.0, 0.1])
    pd = dense.phase_diagram("erf", sw, sb)
    with parallel.using(client) as ex:
        assert isinstance(ex, parallel.DaskExecutor)
        draws = _draws(11)
        ens = _dense_ensemble()
        cen = landscape.landscape_census("residual", task.inputs, task.targets, n_layers=5, chunk_bits=3)
        rows = parallel.sweep(
            dense.phase_diagram, "sigma_w2", sw, rows_per_chunk=2, keep=("sigma_b2",), activation="erf", sigma_b2=sb
        )
    assert np.array_equal(draws, serial[0])
    assert np.array_equal(ens.cov_normalized, serial[1].cov_normalized)
    assert np.array_equal(ens.log_scale, serial[1].log_scale)
    for name in ("n_local_minima", "n_strict_local_minima", "n_zero_output", "min_loss", "argmin"):
        assert getattr(cen, name) == getattr(serial[2], name), name
    assert np.array_equal(cen.local_minima, serial[2].local_minima)
    assert np.array_equal(cen.minima_per_chunk, serial[2].minima_per_chunk)
    assert np.array_equal(rows.chi_1, pd.chi_1) and np.array_equal(rows.q_star, pd.q_star)


@pytest.mark.slow  # ~5 s idle (digits, MetaInit and the Fig. 1 kernel loaded in every worker)
def test_dask_fig1_ensemble_matches_serial(client):
    pytest.importorskip("sklearn")  # the embedded digits (data extra)
    from meanfield import simulate

    kw = dict(n_networks=simulate.FIG1_CHUNK + 7, n_inputs=20, depth=6, n_metainit=2, metainit_steps=2, rng=11)
    serial = simulate.fig1_variances(**kw)
    with parallel.using(client):
        spread = simulate.fig1_variances(**kw)
    assert list(spread) == list(serial)
    for init in serial:
        assert np.array_equal(spread[init], serial[init]), init
    assert serial["he"].shape == (simulate.FIG1_CHUNK + 7, 7)  # two chunks of networks


def test_dask_active_client_is_picked_up(client):
    with pytest.raises(ValueError, match="no active"):
        with parallel.using("dask"):
            pass
    with client.as_current(), parallel.using("dask") as ex:
        assert ex.client is client
        got = _draws(2, n_chunks=3)
    assert np.array_equal(got, _draws(2, n_chunks=3))


def test_dask_worker_killed_mid_run_loses_no_chunk(client):
    """A worker process killed while chunks run: the scheduler re-runs its tasks; same result."""
    want = _draws(5, n_chunks=8, fn=_slow_draw, extra=(0.0,))
    pids = list(client.run(os.getpid).values())
    assert len(pids) == 2
    killed = []

    def kill_when_busy():
        deadline = time.time() + 20
        while time.time() < deadline:
            if sum(1 for tasks in client.processing().values() if tasks) >= 2:
                break
            time.sleep(0.02)
        time.sleep(0.2)  # both workers are inside a chunk (each sleeps 0.4 s)
        os.kill(pids[0], signal.SIGKILL)
        killed.append(pids[0])

    th = threading.Thread(target=kill_when_busy)
    th.start()
    with parallel.using(client):
        got = _draws(5, n_chunks=8, fn=_slow_draw, extra=(0.4,))
    th.join()
    assert killed == [pids[0]]
    assert np.array_equal(got, want)
    client.wait_for_workers(2, timeout=60)  # the nanny restarts the killed worker


# --------------------------------------------------------------------------------------------
# CLI: --workers / --scheduler checked before any work
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["validate", "dense", "--workers", "0"], "--workers"),
        (["validate", "dense", "--workers", "two"], "--workers"),
        (["validate", "dense", "--workers", "2", "--scheduler", "tcp://127.0.0.1:1"], "--scheduler"),
        (["reproduce", "--workers", "-1", "--out", "OUT"], "--workers"),
    ],
)
def test_cli_rejects_bad_parallel_options(argv, needle, tmp_path, capsys):
    from meanfield.cli import main

    argv = [str(tmp_path) if a == "OUT" else a for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0]


def test_cli_unreachable_scheduler_is_a_usage_error(capsys, monkeypatch):
    pytest.importorskip("distributed")
    from meanfield.cli import main

    monkeypatch.setattr(parallel, "CONNECT_TIMEOUT_S", 2.0)
    t0 = time.perf_counter()
    assert main(["validate", "dense", "--scheduler", "tcp://127.0.0.1:9"]) == 2
    assert time.perf_counter() - t0 < 30
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "scheduler" in err[0]


def test_cli_scheduler_runs_the_modules_on_that_cluster(client, monkeypatch):
    import meanfield.cli as cli

    seen = []

    def fake_run_modules(names, **kwargs):
        ex = parallel.current()
        seen.append((names, type(ex).__name__, ex.client.scheduler.address))
        return True

    monkeypatch.setattr(cli, "run_modules", fake_run_modules)
    address = client.scheduler.address
    assert cli.validate_main(["dense", "--scheduler", address]) == 0
    assert seen == [(["dense"], "DaskExecutor", address)]
    assert isinstance(parallel.current(), parallel.SerialExecutor)
    assert len(client.scheduler_info()["workers"]) == 2  # the CLI closed its client, not the cluster


@pytest.mark.slow  # starts its own LocalCluster (~5 s idle)
def test_cli_workers_runs_the_modules_on_a_dask_cluster(monkeypatch):
    pytest.importorskip("distributed")
    import meanfield.cli as cli

    seen = []

    def fake_run_modules(names, **kwargs):
        ex = parallel.current()
        seen.append((names, type(ex).__name__, ex.n_workers))
        return True

    monkeypatch.setattr(cli, "run_modules", fake_run_modules)
    assert cli.validate_main(["dense", "--workers", "1"]) == 0
    assert seen == [(["dense"], "DaskExecutor", 1)]
    assert isinstance(parallel.current(), parallel.SerialExecutor)  # closed and reset afterwards


def test_cli_reproduce_runs_figures_and_validation_on_the_cluster(client, monkeypatch, tmp_path):
    import meanfield.figures.runner as fr

    import meanfield.cli as cli

    seen = []

    def fake_figures(names, **kwargs):
        seen.append(("figures", type(parallel.current()).__name__))
        return []

    def fake_modules(names, **kwargs):
        seen.append(("validation", type(parallel.current()).__name__))
        return True

    monkeypatch.setattr(fr, "run_figures", fake_figures)
    monkeypatch.setattr(cli, "run_modules", fake_modules)
    from meanfield.cli import main

    assert main(["reproduce", "--out", str(tmp_path), "--scheduler", client.scheduler.address]) == 0
    assert seen == [("figures", "DaskExecutor"), ("validation", "DaskExecutor")]
    assert isinstance(parallel.current(), parallel.SerialExecutor)


def _blas_threads(_):
    from threadpoolctl import threadpool_info

    return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]


def test_serial_chunks_run_with_one_blas_thread_like_workers():
    """The serial executor runs each chunk with one BLAS thread (as worker processes do), and gives
    the caller's thread count back afterwards."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    before = [p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"]
    if not before:
        pytest.skip("NumPy's BLAS is not visible to threadpoolctl")
    inside = parallel.map_chunks(_blas_threads, [(0,), (1,)])
    assert inside == [[1] * len(before)] * 2
    assert [p["num_threads"] for p in threadpoolctl.threadpool_info() if p["user_api"] == "blas"] == before
