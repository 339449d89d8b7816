"""The heavy paths wired into meanfield.parallel give the same numbers serially, on local processes
and on a Dask LocalCluster.

Equality is bitwise: every chunk draws from the stream spawned off the user's seed by chunk index,
runs the same code on the same inputs, and the reductions (sums and sums of squares, or
concatenation) are added in chunk order in the calling process.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest
from meanfield.validation.ensembles import ensemble_moments, ensemble_samples

from meanfield import dense, parallel
from meanfield.data import gaussian_inputs
from meanfield.simulate import simulate_conv, simulate_dense, simulate_pair, simulate_squared_norms

#: Float64 rounding of a sum of n terms in a different order: |error| <= n * eps * sum |x| (first
#: order); the tests' sums have n <= 12 terms, so 16 eps relative to the sum of magnitudes.
REORDER_RTOL = 16 * np.finfo(float).eps


# statistics of the kind the comparison tables use (module level: pickled by reference)


def _dense_statistics(sim, layers, grad_layers):
    """q^l, c^l and gradient variances per network, as in meanfield.validation.dense."""
    cov = sim.cov
    q = cov[:, layers, 0, 0]
    c = cov[:, layers, 0, 1] / np.sqrt(cov[:, layers, 0, 0] * cov[:, layers, 1, 1])
    return np.concatenate([q, c, sim.grad_sq[:, grad_layers, 0]], axis=1)


def _cov_entries(sim, entries):
    cov = sim.cov
    return np.stack([cov[:, layer, 0, a, b] for layer, a, b in entries], axis=1)


def _log_weight_grad_ratio(sim):
    wg = sim.weight_grad_sq[:, :, 0]
    return np.log(wg / wg[:, -1:])


def _per_network_mean(sim):
    return sim.mean(axis=1)


def _input_covariance(p, seed):
    a = np.random.default_rng(seed).standard_normal((p, p)) + 1.5
    cov = a @ a.T / p + 0.3 * np.eye(p)
    return cov / np.mean(np.diag(cov))


def _dense_moments():
    x = gaussian_inputs(2, 16, q=1.0, c=0.6, rng=0)
    stat = functools.partial(_dense_statistics, layers=[1, 3], grad_layers=[0, 1])
    return ensemble_moments(
        simulate_dense, x, "tanh", 1.5, 0.05, 3, 16, gradients=True, statistic=stat, n_networks=10, chunk_size=4, rng=5
    )


def _conv_moments():
    cov0 = _input_covariance(6, 1)
    stat = functools.partial(_cov_entries, entries=[(1, 0, 0), (2, 0, 1)])
    v = np.full(3, 1 / 3)
    return ensemble_moments(
        simulate_conv, cov0, "erf", 1.5, 0.1, v, 2, 8, statistic=stat, n_networks=7, chunk_size=3, rng=6
    )


def _conv_s2_moments():
    cov0 = _input_covariance(6, 2)
    v = np.full(3, 1 / 3)
    return ensemble_moments(
        simulate_conv,
        cov0,
        "tanh",
        1.2,
        0.05,
        v,
        4,
        6,
        gradients=True,
        statistic=_log_weight_grad_ratio,
        n_networks=5,
        chunk_size=2,
        rng=7,
    )


def _pair_samples():
    x1, x2 = np.eye(6)[0], 0.5 * np.eye(6)[0] + np.sqrt(0.75) * np.eye(6)[1]
    return ensemble_samples(simulate_pair, x1, x2, 8, 0.25, 0.0, n_networks=50, chunk_size=20, rng=8)


def _norm_samples():
    x0 = np.random.default_rng(0).standard_normal((5, 4))
    layers = [(6, 0.3, 0.1), (5, 0.4, 0.0)]
    return ensemble_samples(
        simulate_squared_norms, x0, layers, inputs_per_network=3, n_networks=9, chunk_size=4, rng=9
    ), ensemble_moments(
        simulate_squared_norms,
        x0,
        layers,
        inputs_per_network=3,
        statistic=_per_network_mean,
        n_networks=9,
        chunk_size=4,
        rng=9,
    )


PD_SW, PD_SB = np.linspace(0.3, 3.5, 19), np.array([0.0, 0.05, 0.4])


def _everything():
    return {
        "dense": _dense_moments(),
        "conv": _conv_moments(),
        "conv_s2": _conv_s2_moments(),
        "pair": _pair_samples(),
        "norms": _norm_samples(),
        "phase": dense.phase_diagram("tanh", PD_SW, PD_SB),
    }


def _assert_identical(got, ref):
    for k in ("dense", "conv", "conv_s2"):
        assert got[k].count == ref[k].count, k
        assert np.array_equal(got[k].total, ref[k].total), k
        assert np.array_equal(got[k].total_sq, ref[k].total_sq), k
    assert np.array_equal(got["pair"].inner, ref["pair"].inner)
    assert np.array_equal(got["pair"].cosine, ref["pair"].cosine)
    assert np.array_equal(got["norms"][0], ref["norms"][0])
    assert np.array_equal(got["norms"][1].total, ref["norms"][1].total)
    for name in ("sigma_w2", "sigma_b2", "q_star", "c_star", "chi_1", "chi_c", "xi_c", "c_frozen"):
        assert np.array_equal(getattr(got["phase"], name), getattr(ref["phase"], name)), name


@pytest.fixture(scope="module")
def serial():
    return _everything()


def test_serial_results_are_sane(serial):
    assert serial["dense"].count == 10 and serial["dense"].total.shape == (6,)
    assert (
        serial["conv"].count == 7 and serial["conv_s2"].count == 5 and serial["conv_s2"].total.shape == (4,)
    )  # depth weight layers
    assert serial["pair"].inner.shape == (50,)
    assert serial["norms"][0].shape[0] == 9
    for k in ("dense", "conv"):
        assert np.all(np.isfinite(serial[k].mean)) and np.all(serial[k].stderr > 0), k
    assert np.all(serial["conv_s2"].stderr[:-1] > 0) and serial["conv_s2"].total[-1] == 0.0  # log(1) at the last layer


def test_statistic_is_checked():
    x = np.ones((2, 4))
    with pytest.raises(TypeError, match="statistic"):
        ensemble_moments(simulate_dense, x, "tanh", 1.0, 0.0, 1, 4, statistic=3, n_networks=2, chunk_size=1)
    with pytest.raises(TypeError, match="statistic"):
        ensemble_samples(simulate_dense, x, "tanh", 1.0, 0.0, 1, 4, statistic="cov", n_networks=2, chunk_size=1)
    with pytest.raises(TypeError, match="real numeric"):
        ensemble_moments(simulate_dense, x, "tanh", 1.0, 0.0, 1, 4, statistic=_complex, n_networks=2, chunk_size=1)
    with pytest.raises(ValueError, match="chunk_size"):
        ensemble_moments(simulate_dense, x, "tanh", 1.0, 0.0, 1, 4, statistic=_complex, n_networks=2, chunk_size=0)


def _complex(sim):
    return sim.log_scale + 1j


def test_moments_are_those_of_the_concatenated_samples():
    """The merged sums equal the sums over all networks of the same chunks (never averages of averages)."""
    x = gaussian_inputs(2, 16, q=1.0, c=0.6, rng=0)
    stat = functools.partial(_dense_statistics, layers=[1, 3], grad_layers=[0, 1])
    kw = dict(gradients=True, n_networks=10, chunk_size=4, rng=5)
    mom = ensemble_moments(simulate_dense, x, "tanh", 1.5, 0.05, 3, 16, statistic=stat, **kw)
    samples = stat(ensemble_samples(simulate_dense, x, "tanh", 1.5, 0.05, 3, 16, **kw))
    assert samples.shape == (10, 6)
    scale = np.abs(samples).sum(axis=0)
    assert np.all(np.abs(mom.total - samples.sum(axis=0)) <= REORDER_RTOL * scale)
    assert np.all(np.abs(mom.total_sq - (samples**2).sum(axis=0)) <= REORDER_RTOL * (samples**2).sum(axis=0))
    # the chunks are really independent streams: the first chunk is not re-used
    assert not np.array_equal(samples[:4], samples[4:8])


def _overflowing(sim):
    out = np.ones((sim.log_scale.shape[0], 2))
    out[0, 0] = np.inf
    return out


def test_moments_propagate_non_finite_statistics():
    """An overflowing statistic makes the row's mean non-finite (so its Comparison FAILs), not an error."""
    x = np.random.default_rng(0).standard_normal((2, 8))
    m = ensemble_moments(
        simulate_dense, x, "tanh", 1.5, 0.05, 1, 4, statistic=_overflowing, n_networks=3, chunk_size=2, rng=1
    )
    assert m.count == 3 and not np.isfinite(m.mean[0]) and np.isfinite(m.mean[1])


def test_processes_match_serial(serial):
    with parallel.using("processes", workers=2):
        got = _everything()
    _assert_identical(got, serial)


def test_local_cluster_matches_serial(serial, client):
    with parallel.using(client):
        got = _everything()
    _assert_identical(got, serial)


def test_phase_diagram_rows_per_task_do_not_matter(monkeypatch):
    """The sigma_w2 rows are independent (c* is warm-started along sigma_b2 only): any block size
    of rows gives the in-process result bit for bit."""
    ref = dense.phase_diagram("tanh", PD_SW, PD_SB)

    class Recording(parallel.Executor):
        calls = 0

        def map(self, fn, args_list):
            Recording.calls += len(args_list)
            return [fn(*a) for a in args_list]

    for rows in (1, 4, 7):
        monkeypatch.setattr(dense, "PHASE_ROWS_PER_TASK", rows)
        Recording.calls = 0
        with parallel.using(Recording()):
            got = dense.phase_diagram("tanh", PD_SW, PD_SB)
        assert Recording.calls == -(-PD_SW.size // rows)  # really split into row blocks
        for name in ("q_star", "c_star", "chi_1", "chi_c", "xi_c", "c_frozen"):
            assert np.array_equal(getattr(got, name), getattr(ref, name)), (rows, name)


def test_phase_diagram_errors_travel_from_the_tasks():
    with parallel.using(_NotSerial()):
        with pytest.raises(ValueError, match="sigma_w2"):
            dense.phase_diagram("tanh", [-1.0] + [1.0] * 10, [0.1])
        got = dense.phase_diagram("tanh", [0.5, 1.0], [0.1])  # small grids stay in-process
    assert got.q_star.shape == (2, 1)


class _NotSerial(parallel.Executor):
    def map(self, fn, args_list):
        return [fn(*a) for a in args_list]


# figure sweeps: one task per grid point, each with its own stream


def _figure_data(func, out_dir):
    import json

    paths = func(out_dir, size="smoke", backend="numpy", rng=3)
    js = [p for p in paths if str(p).endswith(".json")]
    assert js, paths
    return json.loads(js[0].read_text())["data"]


class _PicklingExecutor(parallel.Executor):
    """In-process, but every task's arguments and result go through pickle (as to a worker process)
    and the tasks run in reverse order: what a process pool or Dask does to a task, without starting one."""

    def map(self, fn, args_list):
        import pickle

        out = [None] * len(args_list)
        for i in reversed(range(len(args_list))):
            f, args = pickle.loads(pickle.dumps((fn, args_list[i])))
            out[i] = pickle.loads(pickle.dumps(f(*args)))
        return out


@pytest.mark.slow  # 5-10 s each on an idle machine (matplotlib renders the figure twice)
@pytest.mark.parametrize("name", ["xiao2018.fig_s2", "burkholz2019.fig_2"])
def test_figure_sweeps_as_tasks_match_serial(name, tmp_path):
    import importlib

    module, fig = name.split(".")
    func = getattr(importlib.import_module(f"meanfield.figures.{module}"), fig)
    serial = _figure_data(func, tmp_path / "serial")
    with parallel.using(_PicklingExecutor()):
        spread = _figure_data(func, tmp_path / "spread")
    assert spread == serial


# the trainability heat map of xiao2018.fig_2: grid cells as tasks


def test_one_cell_trains_the_networks_of_its_list_entry():
    """Net j of a per-depth list trains from child j of the list's stream: one cell per task
    reproduces it bit for bit (the premise of the cell-wise heat map)."""
    pytest.importorskip("torch")
    import meanfield.train as tr
    from meanfield.checks import check_rng

    data = tr.load_training_data(n_train=64)
    nets = [tr.DenseNet(depth=3, width=8, activation="tanh", sigma_w2=s, sigma_b2=2e-5) for s in (0.5, 2.0)]
    kw = dict(data=data, steps=6, batch_size=16, lr=0.01, optimizer="momentum", record_every=3, n_eval=64)
    together = tr.train_ensemble(nets, 2, rng=np.random.SeedSequence(4), **kw)
    children = check_rng(np.random.SeedSequence(4)).spawn(2)
    for j, net in enumerate(nets):
        alone = tr.train_ensemble(net, 2, rng=children[j], **kw)
        assert np.array_equal(alone.train_loss, together[j].train_loss), j
        assert np.array_equal(alone.test_accuracy, together[j].test_accuracy), j


def test_depth_scale_heat_map_by_cells_matches_serial():
    pytest.importorskip("torch")
    from meanfield.train import experiment as T

    T.clear_cache()
    try:
        serial = T.experiment("depth_scale", "smoke", 0)
        T.clear_cache()
        with parallel.using(_PicklingExecutor()):
            cells = T.experiment("depth_scale", "smoke", 0)
    finally:
        T.clear_cache()
    for key in ("train_accuracy", "test_accuracy", "sigma_w2", "depths", "xi_c"):
        assert np.array_equal(cells[key], serial[key]), key


def _inner_and_cosine(sim):
    return sim.inner, sim.cosine


def test_samples_with_a_statistic_are_the_concatenated_statistics():
    import operator

    x1, x2 = np.eye(6)[0], np.eye(6)[1]
    kw = dict(n_networks=11, chunk_size=4, rng=2)
    whole = ensemble_samples(simulate_pair, x1, x2, 8, 0.25, 0.0, **kw)
    inner = ensemble_samples(simulate_pair, x1, x2, 8, 0.25, 0.0, statistic=operator.attrgetter("inner"), **kw)
    both = ensemble_samples(simulate_pair, x1, x2, 8, 0.25, 0.0, statistic=_inner_and_cosine, **kw)
    assert inner.shape == (11,) and np.array_equal(inner, whole.inner)
    assert np.array_equal(both[0], whole.inner) and np.array_equal(both[1], whole.cosine)
