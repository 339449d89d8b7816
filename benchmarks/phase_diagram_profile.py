"""Profile of ``dense.phase_diagram`` on the 100 x 100 tanh grid (issue 16: target <= 1 s after compilation).

Usage::

    python benchmarks/phase_diagram_profile.py [--repeat 3]

Prints, in one run (so the ratios are comparable on a loaded machine), wall and CPU time (best of
``--repeat``; CPU time of the process, all threads) of

1. the whole 100 x 100 grid (sigma_w2 in [0.1, 4], sigma_b2 in [0, 0.5]) at the default
   Gauss-Hermite degree (100, pruned to 64 nodes) and at smaller degrees, with the largest change
   of q*, c*, chi_1, chi_c against degree 100 (what a smaller rule would cost in accuracy);
2. the ordered part (chi_1 < 1 everywhere: only q* and chi_1, one-dimensional integrals) against
   the chaotic part (chi_1 > 1: Newton on the deflated c-map, two-dimensional integrals), same
   number of points: where the time goes;
3. the same grid with ``NUMBA_NUM_THREADS=1`` in a fresh process (thread use);
4. the grid on ``meanfield.parallel.using("processes", workers=2)`` (rows as tasks).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import numpy as np

from meanfield import dense, parallel

SW = np.linspace(0.1, 4.0, 100)
SB = np.linspace(0.0, 0.5, 100)


def _best(fn, repeat):
    best = (np.inf, np.inf)
    out = None
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        best = min(best, (time.perf_counter() - w0, time.process_time() - c0))
    return best, out


def _row(label, t, extra=""):
    print(f"{label:<46} {t[0]:8.3f} s wall {t[1]:8.3f} s CPU  {extra}")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    dense.phase_diagram("tanh", SW[:3], SB[:3])  # compile / load the cache
    if args.child:  # one timing in a process with the environment the parent set
        t, _ = _best(lambda: dense.phase_diagram("tanh", SW, SB), args.repeat)
        print(f"{t[0]} {t[1]}")
        return 0
    print(f"load average at start: {os.getloadavg()[0]:.1f}; cores: {os.cpu_count()}")
    t_ref, ref = _best(lambda: dense.phase_diagram("tanh", SW, SB), args.repeat)
    _row("100 x 100, degree 100 (64 nodes)", t_ref)
    for degree in (60, 40, 30):
        t, pd = _best(lambda d=degree: dense.phase_diagram("tanh", SW, SB, degree=d), args.repeat)
        err = max(
            float(np.max(np.abs(getattr(pd, f) - getattr(ref, f)) / np.maximum(1.0, np.abs(getattr(ref, f)))))
            for f in ("q_star", "c_star", "chi_1", "chi_c")
        )
        _row(f"100 x 100, degree {degree}", t, f"max rel. change vs degree 100: {err:.1e}")
    crit = float(dense.critical_sigma_w2("tanh", 0.5))
    crit0 = float(dense.critical_sigma_w2("tanh", 0.0))
    ordered = np.linspace(0.1, min(crit, crit0) * 0.95, 100)
    chaotic = np.linspace(max(crit, crit0) * 1.05, 4.0, 100)
    t, pd = _best(lambda: dense.phase_diagram("tanh", ordered, SB), args.repeat)
    _row("ordered block (chi_1 < 1), 100 x 100", t, f"chi_1 max {pd.chi_1.max():.3f}")
    t, pd = _best(lambda: dense.phase_diagram("tanh", chaotic, SB), args.repeat)
    _row("chaotic block (chi_1 > 1), 100 x 100", t, f"chi_1 min {pd.chi_1.min():.3f}")
    env = dict(os.environ, NUMBA_NUM_THREADS="1")
    res = subprocess.run(
        [sys.executable, __file__, "--child", "--repeat", str(args.repeat)], env=env, capture_output=True, text=True
    )
    if res.returncode == 0:
        w, c = (float(v) for v in res.stdout.split()[-2:])
        _row("100 x 100, NUMBA_NUM_THREADS=1 (fresh process)", (w, c))
    else:
        print("NUMBA_NUM_THREADS=1 child failed:", res.stderr[-500:])
    with parallel.using("processes", workers=2):
        dense.phase_diagram("tanh", SW[:20], SB)  # start the pool and load the kernels in the workers
        t, pd = _best(lambda: dense.phase_diagram("tanh", SW, SB), args.repeat)
    same = all(np.array_equal(getattr(pd, f), getattr(ref, f)) for f in ("q_star", "c_star", "chi_1", "chi_c"))
    _row("100 x 100 on 2 local processes (rows as tasks)", t, f"bitwise equal: {same}; CPU is the parent's only")
    return 0


if __name__ == "__main__":
    sys.exit(main())
