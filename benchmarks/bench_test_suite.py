"""Wall and CPU time of the test suite: one process against pytest-xdist workers, cold Numba cache.

Run ``python benchmarks/bench_test_suite.py [--modes serial,xdist] [--repeat 1] [--warm] [PYTEST ARGS ...]``
from the repository root (default pytest arguments: the whole suite, ``tests``; pass test files or
``-m "not slow"`` to time a part). Target: the default suite in <= 3 minutes on 2 cores
with a cold cache.

Modes, run one after the other in each repetition (interleaved, so that a change of the machine's
load hits every mode alike):

* ``serial``: ``python -m pytest -q`` (the former test command);
* ``xdist``: ``python -m pytest -q -n WORKERS --dist loadfile`` (the test command; WORKERS defaults to
  the number of cores);
* ``warm+xdist``: first every public entry point of ``bench_cold_start.py`` is called once in one
  process (it compiles the kernels that most test files share into the cache), then ``xdist``; the
  time is the sum. The question it answers: does warming the shared kernels once, before the
  workers start, beat two workers each compiling what they need?

Each run gets a new empty ``NUMBA_CACHE_DIR`` (cold; ``--warm`` reuses one filled cache for every
run instead). Time is the wall time of the command and its CPU time (user + system of the process
and every descendant it waited for: the xdist workers, process pools, the fuzz manager), with the
1-minute load average before and after: the project's machine is 2 cores shared by several jobs, so
the wall time of one run scales with the load; CPU time does not (much), and ratios are taken inside
one command.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_WARM_UP = """
import sys
sys.path.insert(0, {bench!r})
import numpy as np
from bench_cold_start import ENTRY_POINTS
x1 = np.linspace(-2.0, 2.0, 5)
cov = np.array([[1.0, 0.3, 0.1], [0.3, 0.8, 0.2], [0.1, 0.2, 1.2]])
for setup, call in ENTRY_POINTS.values():
    exec(setup)
    exec(call)
"""


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _timed(cmd: list[str], env: dict) -> tuple[float, float, int, str]:
    """(wall s, CPU s, exit status, last output line) of one command."""
    cpu0, t0 = _children_cpu(), time.perf_counter()
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - t0, _children_cpu() - cpu0
    lines = (out.stdout + out.stderr).strip().splitlines()
    return wall, cpu, out.returncode, lines[-1] if lines else ""


def _run(mode: str, pytest_args: list[str], workers: int, cache: str) -> tuple[float, float, int, str]:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache, MEANFIELD_NO_PROGRESS="1")
    base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    if mode == "serial":
        return _timed(base + pytest_args, env)
    xdist = base + ["-n", str(workers), "--dist", "loadfile"] + pytest_args
    if mode == "xdist":
        return _timed(xdist, env)
    warm = _timed([sys.executable, "-c", _WARM_UP.format(bench=str(ROOT / "benchmarks"))], env)
    run = _timed(xdist, env)
    return warm[0] + run[0], warm[1] + run[1], warm[2] or run[2], run[3]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default="serial,xdist", help="comma-separated: serial, xdist, warm+xdist")
    parser.add_argument("--repeat", type=int, default=1, help="repetitions of the interleaved modes")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="xdist workers (default: cores)")
    parser.add_argument("--warm", action="store_true", help="one filled Numba cache for every run (default: cold)")
    args, pytest_args = parser.parse_known_args()
    modes = args.modes.split(",")
    unknown = sorted(set(modes) - {"serial", "xdist", "warm+xdist"})
    if unknown:
        raise SystemExit(f"unknown modes {unknown}")
    pytest_args = pytest_args or ["tests"]
    print(f"pytest {' '.join(pytest_args)}; {args.workers} xdist workers; {'warm' if args.warm else 'cold'} cache")
    print(f"{'mode':<11s} {'wall s':>8s} {'CPU s':>8s} {'load before':>11s} {'load after':>10s}  result")
    results: dict[str, list[tuple[float, float]]] = {m: [] for m in modes}
    shared = tempfile.mkdtemp(prefix="meanfield-bench-suite-") if args.warm else None
    try:
        if shared:  # fill the shared cache once (not timed)
            _run("serial", pytest_args, args.workers, shared)
        for _ in range(args.repeat):
            for mode in modes:
                cache = shared or tempfile.mkdtemp(prefix="meanfield-bench-suite-")
                load0 = os.getloadavg()[0]
                try:
                    wall, cpu, status, last = _run(mode, pytest_args, args.workers, cache)
                finally:
                    if not shared:
                        shutil.rmtree(cache, ignore_errors=True)
                results[mode].append((wall, cpu))
                flag = "" if status == 0 else f"  (exit status {status})"
                print(f"{mode:<11s} {wall:8.1f} {cpu:8.1f} {load0:11.2f} {os.getloadavg()[0]:10.2f}  {last}{flag}")
                sys.stdout.flush()
    finally:
        if shared:
            shutil.rmtree(shared, ignore_errors=True)
    if "serial" in results and len(modes) > 1:
        serial_wall = sum(w for w, _ in results["serial"])
        serial_cpu = sum(c for _, c in results["serial"])
        for mode in modes[1:] if modes[0] == "serial" else [m for m in modes if m != "serial"]:
            wall = sum(w for w, _ in results[mode])
            cpu = sum(c for _, c in results[mode])
            print(f"{mode} / serial: wall {wall / serial_wall:.2f}, CPU {cpu / serial_cpu:.2f}")


if __name__ == "__main__":
    main()
