"""Serial versus a Dask LocalCluster (1 and 2 worker processes), measured in one run.

Workloads (both split into chunks by ``meanfield.parallel``; the numbers are identical everywhere,
checked here too):

- the Grzejdziak Fig. 1 ensemble, ``meanfield.simulate.fig1_variances`` (six random
  initialisers + ZerO* in chunks of ``FIG1_CHUNK`` networks; MetaInit one network per chunk);
- a 2^24-configuration landscape: the residual net with ``n_layers=8`` (26 bits) censused on the
  64 chunks of 2^18 configurations ``0 .. 63`` (``landscape_census(..., chunk_bits=8, chunks=...)``);
- a no-op task, for the per-task overhead of the executor.

Printed: wall time, throughput, speed-up over serial, per-task overhead
(``(wall - serial compute / workers) / tasks``), bytes moved per task (pickled arguments out and
result back), and the cluster's start time (not in the other timings).

    python benchmarks/bench_distributed.py            # a few minutes on 2 cores
"""

from __future__ import annotations

import pickle
import time

import numpy as np
from meanfield.validation import kurtosis as VK

from meanfield import landscape as L
from meanfield import parallel

FIG1 = dict(n_networks=1000, n_inputs=64, depth=100, n_metainit=2, metainit_steps=20, rng=0)
FIG1_WARM = dict(n_networks=2, n_inputs=8, depth=3, n_metainit=1, metainit_steps=1, rng=0)
LAND_BITS, LAND_CHUNKS = 8, list(range(64))


def _noop(i):
    return i


def fig1():
    return VK.fig1_variances(**FIG1)


def land():
    task = L.regression_task(grid_size=5, rng=0)
    return L.landscape_census(
        "residual", task.inputs, task.targets, n_layers=8, chunk_bits=LAND_BITS, chunks=LAND_CHUNKS
    )


def warm():
    """Small calls that load every kernel (Numba cache) and import every module in a process."""
    VK.fig1_variances(**FIG1_WARM)
    task = L.regression_task(grid_size=3, rng=0)
    L.landscape_census("residual", task.inputs, task.targets, n_layers=4, chunk_bits=2)
    return noop()


def noop():
    return parallel.map_chunks(_noop, [(i,) for i in range(200)])


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def _bytes_per_task(fn):
    """Pickled size of every task's arguments and result, averaged (what crosses the network)."""
    sent, got = [], []

    class Recorder(parallel.Executor):
        def map(self, f, args_list):
            res = [f(*a) for a in args_list]
            sent.extend(len(pickle.dumps((f, a))) for a in args_list)
            got.extend(len(pickle.dumps(r)) for r in res)
            return res

    with parallel.using(Recorder()):
        fn()
    return len(sent), float(np.mean(sent)), float(np.mean(got))


def _same(a, b):
    if isinstance(a, dict):
        return all(np.array_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return a == b
    return a.n_local_minima == b.n_local_minima and np.array_equal(a.local_minima, b.local_minima)


def main() -> None:
    work = {"fig1 ensemble": fig1, "2^24 landscape": land, "no-op x200": noop}
    units = {"fig1 ensemble": 6 * FIG1["n_networks"] + FIG1["n_metainit"], "2^24 landscape": 2**24, "no-op x200": 200}
    unit_name = {"fig1 ensemble": "networks", "2^24 landscape": "configurations", "no-op x200": "tasks"}
    warm()
    sizes = {name: _bytes_per_task(fn) for name, fn in work.items()}  # (also warms the caches here)
    serial = {name: _timed(fn) for name, fn in work.items()}
    results = {"serial": {n: (t, 0.0) for n, (t, _) in serial.items()}}
    for workers in (1, 2):
        t0 = time.perf_counter()
        with parallel.using(workers=workers):
            start = time.perf_counter() - t0
            for _ in range(2 * workers):  # warm-up: imports and Numba cache loads in every worker
                warm()
            results[f"{workers} worker(s)"] = {}
            for name, fn in work.items():
                t, out = _timed(fn)
                assert _same(out, serial[name][1]), f"{name}: different numbers on {workers} worker(s)"
                results[f"{workers} worker(s)"][name] = (t, start)
    print("same numbers serially and on 1 and 2 workers: yes (checked bitwise)")
    print(
        f"{'workload':<16}{'run':<14}{'wall s':>8}{'throughput':>28}{'speed-up':>9}{'overhead/task':>15}{'bytes out/in per task':>24}"
    )
    for name in work:
        n_tasks, out_b, in_b = sizes[name]
        t_serial = results["serial"][name][0]
        for run, res in results.items():
            t, start = res[name]
            workers = 1 if run == "serial" else int(run[0])
            overhead = max(0.0, (t - t_serial / workers) / n_tasks) if run != "serial" else 0.0
            thr = f"{units[name] / t:,.0f} {unit_name[name]}/s"
            extra = f"  (cluster start {start:.1f} s)" if run != "serial" and name == "fig1 ensemble" else ""
            print(
                f"{name:<16}{run:<14}{t:>8.2f}{thr:>28}{t_serial / t:>9.2f}{overhead * 1e3:>12.1f} ms"
                f"{f'{out_b:,.0f} / {in_b:,.0f}':>24}{extra}"
            )
    print("tasks per run: " + ", ".join(f"{n} {sizes[n][0]}" for n in work))


if __name__ == "__main__":
    main()
