"""Steady-state time and per-call overhead of ``dense.propagate`` / ``conv.propagate`` against ``main``.

Run ``python benchmarks/bench_overhead.py [--repeat N] [--ref main] [--quick]``.

For each workload of the issue (the ones it timed for the archived neural-tangents' ``jit``-compiled
``kernel_fn``, float64, on this class of 2-core machine) the script prints, for this tree
("branch") and for ``--ref`` ("main", a ``git archive`` of that ref unpacked under /tmp), measured
in this one run:

* ``call``: one public call (validation, compiled kernel, result wrapping): wall time of the
  fastest single call and process CPU time per call (the mean of a round of ``number`` calls,
  best of ``repeat`` rounds);
* ``fixed``: the same call at depth 0 (validation, allocation, one compiled call that does no
  layer, result wrapping): the fixed per-call cost of the Python wrapper;
* ``kernel``: ``call - fixed`` (the layers);
* ``nt``: the issue's neural-tangents time for the workload, and ``call / nt`` (< 1: faster), wall
  and CPU.

neural-tangents itself cannot be installed here (archived; it needs an old JAX), so ``nt`` is the
issue's number, not a same-run measurement. Main and the branch run in two worker processes
started from /tmp (outside both trees, ``PYTHONPATH`` set to the tree) and are measured round by
round, alternately (main first in even rounds, the branch first in odd ones), so the ratio
``main / branch`` is a same-run comparison; the load average is printed at start and end (the wall
times of this shared 2-core machine scale with it; the CPU times much less).

Bit-identity: each worker hashes (SHA-256) the outputs of every workload plus ``dense.propagate``
of 14 more activations, ``dense.propagate_log`` (relu, depth 10^4), ``conv.propagate`` (relu, tanh)
and the same calls with a nested-list ``cov0`` (the general argument path); the script prints
both digests and whether they agree.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np

#: The issue's neural-tangents times (ms).
NT_MS = {
    "erf, 3 inputs": 0.024,
    "relu, 3 inputs": 0.035,
    "erf, 128 inputs": 28.0,
    "conv erf, P=10": 0.10,
    "tanh, 3 inputs": 69.0,
}
#: Calls per round (call, depth-0 call).
NUMBER = {
    "erf, 3 inputs": (300, 300),
    "relu, 3 inputs": (300, 300),
    "erf, 128 inputs": (1, 20),
    "conv erf, P=10": (100, 300),
    "tanh, 3 inputs": (3, 300),
}
#: Activations hashed beside the workloads (dense.propagate, 3 inputs, depth 50).
HASH_ACTIVATIONS = (
    "linear",
    "relu",
    "leaky_relu",
    "abs",
    "erf",
    "tanh",
    "sigmoid",
    "softplus",
    "swish",
    "gelu",
    "elu",
    "selu",
    "sin",
    "hard_tanh",
)


def _inputs():
    from meanfield import dense

    rng = np.random.default_rng(0)
    cov3 = np.array([[1.0, 0.3, 0.1], [0.3, 0.8, 0.2], [0.1, 0.2, 1.2]])
    cov128 = dense.input_covariance(rng.standard_normal((128, 64)), 1.0, 0.0)
    c10 = 0.5 * np.eye(10) + 0.5
    v = np.full(3, 1.0 / 3.0)
    return cov3, cov128, c10, v


def _workloads():
    """name -> (call at the workload's depth, the same call at depth 0)."""
    from meanfield import conv, dense

    cov3, cov128, c10, v = _inputs()

    def dense_case(cov, act, depth):
        return (lambda: dense.propagate(cov, act, 1.5, 0.05, depth)), (lambda: dense.propagate(cov, act, 1.5, 0.05, 0))

    return {
        "erf, 3 inputs": dense_case(cov3, "erf", 50),
        "relu, 3 inputs": dense_case(cov3, "relu", 50),
        "erf, 128 inputs": dense_case(cov128, "erf", 50),
        "conv erf, P=10": (
            lambda: conv.propagate(c10, "erf", 1.5, 0.05, v, 20),
            lambda: conv.propagate(c10, "erf", 1.5, 0.05, v, 0),
        ),
        "tanh, 3 inputs": dense_case(cov3, "tanh", 50),
    }


def _digest() -> str:
    from meanfield import conv, dense

    cov3, _cov128, c10, v = _inputs()
    h = hashlib.sha256()
    for call, empty in _workloads().values():
        h.update(call().tobytes())
        h.update(empty().tobytes())
    for act in HASH_ACTIVATIONS:
        for cov in (cov3, cov3.tolist()):
            h.update(dense.propagate(cov, act, 1.5, 0.05, 50).tobytes())
    for cov in (cov3, cov3.tolist()):
        res = dense.propagate_log(cov, "relu", 1.5, 0.0, 10_000)
        h.update(res.log_scale.tobytes())
        h.update(res.normalized.tobytes())
    for act in ("relu", "tanh"):
        for cov, vv in ((c10, v), (c10.tolist(), v.tolist())):
            h.update(conv.propagate(cov, act, 1.5, 0.05, vv, 20).tobytes())
    return h.hexdigest()


def _round(f, number):
    """(wall s, CPU s) of ``number`` calls: the fastest single call's wall time (a call of tens of
    microseconds fits in one time slice, so on a loaded machine the minimum is the uncontended cost,
    where a round's mean is not) and the round's mean process CPU time per call."""
    clock = time.perf_counter
    fastest = float("inf")
    c0 = time.process_time()
    for _ in range(number):
        t0 = clock()
        f()
        fastest = min(fastest, clock() - t0)
    return fastest, (time.process_time() - c0) / number


def worker() -> None:
    """Answer one JSON line per request line: ``digest``, ``where`` or ``NAME|call|N`` / ``NAME|fixed|N``."""
    import meanfield

    cases = _workloads()
    for call, empty in cases.values():  # compile or load the kernels
        call()
        empty()
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        line = line.strip()
        if line == "digest":
            print(json.dumps({"digest": _digest()}), flush=True)
        elif line == "where":
            print(json.dumps({"where": str(Path(meanfield.__file__).resolve().parent)}), flush=True)
        elif line:
            name, kind, number = line.split("|")
            call, empty = cases[name]
            wall, cpu = _round(call if kind == "call" else empty, int(number))
            print(json.dumps({"wall": wall, "cpu": cpu}), flush=True)


def profile(calls: int = 20_000) -> None:
    """cProfile (CPU time) of this tree's two small calls at depth 0 and the floor of a call on this
    machine: an empty Python call, ``np.empty``, ``np.exp`` of 51 numbers, an empty compiled call."""
    import cProfile
    import pstats
    import timeit

    import numba

    from meanfield import conv, dense

    cov3, _cov128, c10, v = _inputs()
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for label, f in (
        ("dense.propagate(cov3, 'erf', 1.5, 0.05, 0)", lambda: dense.propagate(cov3, "erf", 1.5, 0.05, 0)),
        ("conv.propagate(c10, 'erf', 1.5, 0.05, v, 0)", lambda: conv.propagate(c10, "erf", 1.5, 0.05, v, 0)),
    ):
        f()
        prof = cProfile.Profile(time.process_time)
        prof.enable()
        for _ in range(calls):
            f()
        prof.disable()
        print(f"\n{label}, {calls} calls, process CPU time:")
        pstats.Stats(prof).sort_stats("tottime").print_stats(12)

    @numba.njit
    def noop(a, b, c, d, e, f, g, h, i, j, k, m):
        return 0

    def py(a, b, c, d, e, f):
        return None

    x = np.empty((51, 3, 3))
    logs = np.zeros(51)
    noop(1, 1.0, 1.0, 1.0, x, 0.0, 1, None, None, 0, x, logs)
    floor = {
        "Python call, 6 arguments": lambda: py(cov3, "erf", 1.5, 0.05, 50, 64),
        "np.empty((51, 3, 3))": lambda: np.empty((51, 3, 3)),
        "np.exp of 51 numbers": lambda: np.exp(logs),
        "compiled no-op, 12 arguments (3 arrays)": lambda: noop(1, 1.0, 1.0, 1.0, x, 0.0, 1, None, None, 0, x, logs),
    }
    print("floor of one call on this machine (process CPU time, best of 7 x 20,000):")
    for label, f in floor.items():
        t = min(timeit.Timer(f, timer=time.process_time).repeat(number=20_000, repeat=7)) / 20_000
        print(f"  {label:<42s} {t * 1e6:6.2f} us")


class Tree:
    """A worker process importing ``meanfield`` from ``root``."""

    def __init__(self, label: str, root: Path, script: Path):
        env = dict(os.environ, PYTHONPATH=str(root), OPENBLAS_NUM_THREADS="1")
        self.label = label
        self.proc = subprocess.Popen(
            [sys.executable, str(script), "--worker"],
            cwd=tempfile.gettempdir(),  # outside both trees
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.ask(None) == {"ready": True}

    def ask(self, request):
        if request is not None:
            self.proc.stdin.write(request + "\n")
            self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the {self.label} worker exited")
        return json.loads(line)

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def _archive(ref: str, repo: Path) -> Path:
    """``git archive ref`` of ``repo`` unpacked in a fresh folder under /tmp."""
    dest = Path(tempfile.mkdtemp(prefix="bench_overhead_ref_"))
    tar = dest / "ref.tar"
    subprocess.run(["git", "-C", str(repo), "archive", "--format=tar", "-o", str(tar), ref], check=True)
    with tarfile.open(tar) as t:
        t.extractall(dest, filter="data")
    tar.unlink()
    return dest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7, help="rounds per workload and tree (best is kept)")
    ap.add_argument("--ref", default="main", help="git ref to compare with (default main)")
    ap.add_argument("--quick", action="store_true", help="3 rounds, no tanh workload")
    ap.add_argument("--profile", action="store_true", help="cProfile of this tree's small calls, and the floor")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker()
        return
    if args.profile:
        profile()
        return
    script = Path(__file__).resolve()
    repo = script.parents[1]
    repeat = 3 if args.quick else args.repeat
    ref_root = _archive(args.ref, repo)
    cpu0 = time.process_time()
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (2-core machine, shared)")
    try:
        print("starting the workers (first calls compile or load the kernels) ...", flush=True)
        trees = [Tree(args.ref, ref_root, script), Tree("branch", repo, script)]
        for t in trees:
            print(f"  {t.label:>6s}: meanfield from {t.ask('where')['where']}")
        names = [n for n in NT_MS if not (args.quick and n.startswith("tanh"))]
        best = {(t.label, n, k): [np.inf, np.inf] for t in trees for n in names for k in ("call", "fixed")}
        for r in range(repeat):
            order = trees if r % 2 == 0 else trees[::-1]
            for n in names:
                for k, number in zip(("call", "fixed"), NUMBER[n]):
                    for t in order:
                        got = t.ask(f"{n}|{k}|{number}")
                        b = best[(t.label, n, k)]
                        b[0], b[1] = min(b[0], got["wall"]), min(b[1], got["cpu"])
        digests = {t.label: t.ask("digest")["digest"] for t in trees}
        for t in trees:
            t.close()
    finally:
        shutil.rmtree(ref_root, ignore_errors=True)

    ms = 1e3
    print()
    print(
        f"ms per call: wall (fastest single call) | process CPU (best of {repeat} round means);"
        " kernel = call - fixed (depth 0)"
    )
    head = f"{'workload':<16s} {'tree':>6s} {'call':>17s} {'fixed':>17s} {'kernel':>17s} {'nt':>7s} {'call/nt':>13s}"
    print(head)
    for n in names:
        nt = NT_MS[n]
        for t in trees:
            cw, cc = (x * ms for x in best[(t.label, n, "call")])
            fw, fc = (x * ms for x in best[(t.label, n, "fixed")])
            print(
                f"{n:<16s} {t.label:>6s} {cw:8.4f} | {cc:6.4f} {fw:8.4f} | {fc:6.4f} {cw - fw:8.4f} | {cc - fc:6.4f}"
                f" {nt:7.3f} {cw / nt:6.2f} | {cc / nt:4.2f}"
            )
        ref_c, new_c = best[(args.ref, n, "call")], best[("branch", n, "call")]
        ref_f, new_f = best[(args.ref, n, "fixed")], best[("branch", n, "fixed")]
        print(
            f"{'':<16s} {args.ref + '/branch':>13s}: call {ref_c[0] / new_c[0]:.2f}x wall, {ref_c[1] / new_c[1]:.2f}x CPU;"
            f" fixed {ref_f[0] / new_f[0]:.2f}x wall, {ref_f[1] / new_f[1]:.2f}x CPU"
        )
    same = len(set(digests.values())) == 1
    print()
    for label, d in digests.items():
        print(f"SHA-256 of the outputs ({label}): {d}")
    print(f"bit-identical to {args.ref}: {'yes' if same else 'NO'}")
    print(
        f"CPU time of this process: {time.process_time() - cpu0:.1f} s (the workers' is not included);"
        f" load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
