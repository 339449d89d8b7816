"""Steady-state speed of ``dense.phase_diagram`` (100 x 100 tanh): this tree against another, interleaved.

The phase kernel's rows ran as a ``parallel=True`` parfor (~2 s of compile on a cold
call); they now run as blocks of a GIL-free serial kernel on Python threads. This script checks
that the steady state did not get slower. Run from outside both trees:

    cd /tmp && python /path/to/benchmarks/bench_phase_threads.py --against /tmp/main_copy [--rounds 2]

Each round starts one fresh process per tree (this tree, then ``PYTHONPATH=PATH``), each doing one
warm-up call (compiling or loading the cache) and ``--calls`` timed calls; it prints the best wall
time and the mean CPU time (``time.process_time``: both threads) per call, the ratio this / other
of each, and the 1-minute load average before each process.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

_CHILD = """
import json, time
import numpy as np
from meanfield import dense
import numba
sw, sb = np.linspace(0.5, 4.0, {n}), np.linspace(0.0, 0.3, {n})
dense.phase_diagram('tanh', sw, sb)
walls, cpus = [], []
for _ in range({calls}):
    c0, t0 = time.process_time(), time.perf_counter()
    dense.phase_diagram('tanh', sw, sb)
    walls.append(time.perf_counter() - t0)
    cpus.append(time.process_time() - c0)
print(json.dumps([min(walls), sum(cpus) / len(cpus), numba.get_num_threads()]))
"""


def _run(pythonpath: str | None, n: int, calls: int) -> tuple[float, float, int]:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    if pythonpath:
        env["PYTHONPATH"] = os.path.abspath(pythonpath)
    with tempfile.TemporaryDirectory() as cwd:  # sys.path[0] must not shadow either tree
        out = subprocess.run(
            [sys.executable, "-c", _CHILD.format(n=n, calls=calls)], cwd=cwd, env=env, capture_output=True, text=True
        )
    if out.returncode:
        raise SystemExit(out.stderr[-2000:])
    return tuple(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", required=True, help="the other source tree (PYTHONPATH)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("--n", type=int, default=100, help="grid points per axis")
    args = parser.parse_args()
    print(f"phase_diagram tanh {args.n} x {args.n}; best wall / mean CPU per call over {args.calls} calls")
    for r in range(args.rounds):
        for label, path in (("this", None), ("other", args.against)):
            load = os.getloadavg()[0]
            wall, cpu, threads = _run(path, args.n, args.calls)
            print(f"round {r} {label:5s}: wall {wall:6.2f} s  CPU {cpu:6.2f} s  ({threads} threads, load {load:.1f})")
            if label == "this":
                mine = (wall, cpu)
        print(f"round {r} ratio this/other: wall {mine[0] / wall:.2f}, CPU {mine[1] / cpu:.2f}", flush=True)


if __name__ == "__main__":
    main()
