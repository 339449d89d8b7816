"""Profile of ``dense.phase_diagram`` on the 100 x 100 tanh grid (target: <= 1 s after compilation).

Usage::

    python benchmarks/phase_diagram_profile.py [--repeat 3]
    python benchmarks/phase_diagram_profile.py --against DIR [--rounds 3] [--repeat 2]

``--against DIR`` compares another version of the library with this checkout in one run: DIR holds
a ``meanfield`` package, e.g. ``main`` exported with ``git -C <clone> archive main meanfield | tar
-x -C DIR``. Fresh processes, started from a temporary directory outside both trees (``sys.path``
puts the current directory before ``PYTHONPATH``), alternate: DIR, this checkout, DIR, ... (``--rounds``
pairs); each compiles or loads its kernels, then times the 100 x 100 grid (best of ``--repeat``).
Printed: wall and CPU time of each run, the CPU ratio per pair, the load average, and the largest
change of q*, c*, chi_1, chi_c between the two versions' grids (against ``RESULT_TOL``, and per
point against the rounding bound amplified by the c-map's conditioning, see :func:`_accuracy`).
``--cold`` adds, for each version, ``--rounds`` first calls of ``phase_diagram`` in fresh processes
with empty Numba caches (``NUMBA_CACHE_DIR`` a new temporary directory), alternating: the CPU time
of compilation.

Without ``--against`` it prints, in one run (so the ratios are comparable on a loaded machine), wall and CPU time (best of
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
import tempfile
import time
from pathlib import Path

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


FIELDS = ("q_star", "c_star", "chi_1", "chi_c")
#: Largest relative change (|a - b| / max(1, |a|)) of q*, c*, chi_1, chi_c accepted between two
#: versions: the accuracy to which the library's tests hold its fixed points (``FIXED_POINT_TOL``
#: of tests/theory/test_dense.py: the maps are satisfied to 1e-10).
RESULT_TOL = 1e-10
#: Largest difference of the c-map integrals between the fused tanh pass and per-node math.tanh
#: (``MOMENT_TOL`` of tests/theory/test_phase_diagram_tanh.py, derived there) and Newton's final step.
MOMENT_TOL = 32 * np.finfo(float).eps
NEWTON_STEP = 1e-15


def _accuracy(ref, new):
    """Largest relative change per field, and the largest ratio of |delta c*| to its rounding bound.

    A change delta of the c-map's integrals moves the root c* of h(c) = (sw E phi phi + sb) / q - c
    by sw delta / (q |h'(c*)|), h'(c*) = chi_c - 1: near the edge of chaos (chi_c -> 1) rounding is
    amplified. Bound per chaotic point: sw MOMENT_TOL / (q |chi_c - 1|) + 2 NEWTON_STEP.
    """
    rel = {}
    for f in FIELDS:
        a, b = ref[f], new[f]
        same_nan = np.array_equal(np.isnan(a), np.isnan(b)) and np.array_equal(np.isinf(a), np.isinf(b))
        ok = np.isfinite(a) & np.isfinite(b)
        d = np.abs(a[ok] - b[ok]) / np.maximum(1.0, np.abs(a[ok]))
        rel[f] = (float(d.max()) if d.size else 0.0, same_nan, float(np.mean(a == b)))
    sw = np.broadcast_to(SW[:, None], ref["q_star"].shape)
    chaotic = (ref["c_star"] < 1.0) & (ref["q_star"] > 0)
    q, chic = ref["q_star"][chaotic], ref["chi_c"][chaotic]
    bound = sw[chaotic] * MOMENT_TOL / (q * np.abs(chic - 1.0)) + 2 * NEWTON_STEP
    ratio = float(np.max(np.abs(ref["c_star"][chaotic] - new["c_star"][chaotic]) / bound)) if q.size else 0.0
    return rel, ratio


def _cold(versions, rounds):
    """CPU time of the first ``phase_diagram`` call with an empty Numba cache, alternating versions."""
    code = (
        "import time; from meanfield import dense; t = time.process_time(); "
        "dense.phase_diagram('tanh', [1.0, 2.0], [0.0, 0.1]); print(time.process_time() - t)"
    )
    cpu = {label: [] for label, _ in versions}
    for _ in range(rounds):
        for label, path in versions:
            with tempfile.TemporaryDirectory() as cache:
                env = dict(os.environ, PYTHONPATH=path, NUMBA_CACHE_DIR=cache)
                res = subprocess.run([sys.executable, "-c", code], env=env, cwd=cache, capture_output=True, text=True)
                if res.returncode != 0:
                    print(f"{label} cold child failed:", res.stderr[-800:])
                    return
                cpu[label].append(float(res.stdout.split()[-1]))
    for label, _ in versions:
        print(f"cold compile CPU s, {label}: {sorted(round(v, 2) for v in cpu[label])}")
    print(f"load average after the cold runs: {os.getloadavg()}")


def _compare(against, rounds, repeat, cold=False):
    here = Path(__file__).resolve()
    versions = (("against", str(Path(against).resolve())), ("this checkout", str(here.parents[1])))
    print(f"load average at start: {os.getloadavg()}; cores: {os.cpu_count()}")
    print(f"against = {versions[0][1]}; this checkout = {versions[1][1]}")
    cpu = {label: [] for label, _ in versions}
    grids = {}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(rounds):
            for label, path in versions:
                out = os.path.join(tmp, f"{label.replace(' ', '_')}.npz")
                env = dict(os.environ, PYTHONPATH=path)
                res = subprocess.run(
                    [sys.executable, str(here), "--grid-child", out, "--repeat", str(repeat)],
                    env=env,
                    cwd=tmp,
                    capture_output=True,
                    text=True,
                )
                if res.returncode != 0:
                    print(f"{label} child failed:", res.stderr[-800:])
                    return 1
                w, c, where = res.stdout.split()[-3:]
                cpu[label].append(float(c))
                _row(f"round {r + 1}: {label}", (float(w), float(c)), f"({where}; load {os.getloadavg()[0]:.1f})")
                if r == 0:
                    with np.load(out) as f:
                        grids[label] = {k: f[k] for k in FIELDS}
    old, new = (np.array(cpu[label]) for label, _ in versions)
    print(f"CPU ratio against / this checkout per round: {np.round(old / new, 2).tolist()}")
    print(f"best CPU: against {old.min():.3f} s, this checkout {new.min():.3f} s: {old.min() / new.min():.2f}x")
    print(f"load average at end: {os.getloadavg()}")
    rel, ratio = _accuracy(grids["against"], grids["this checkout"])
    for f, (d, same, frac) in rel.items():
        verdict = "ok" if d <= RESULT_TOL and same else "OVER RESULT_TOL"
        print(
            f"{f:<7} max rel. change {d:.2e} (RESULT_TOL {RESULT_TOL:.0e}: {verdict}); nan/inf pattern same: {same}; bit-identical: {100 * frac:.1f} %"
        )
    print(f"c*: largest |change| / (rounding bound amplified by 1 / |chi_c - 1|): {ratio:.2e} (<= 1 expected)")
    if cold:
        _cold(versions, rounds)
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--against", metavar="DIR", help="directory holding another version's meanfield package")
    p.add_argument("--rounds", type=int, default=3, help="alternating pairs of runs with --against")
    p.add_argument("--cold", action="store_true", help="with --against: also the cold compile, alternating")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--grid-child", metavar="OUT", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.against:
        return _compare(args.against, args.rounds, args.repeat, args.cold)
    if args.grid_child:
        dense.phase_diagram("tanh", SW[:3], SB[:3])  # compile / load the cache
        t, pd = _best(lambda: dense.phase_diagram("tanh", SW, SB), args.repeat)
        np.savez(args.grid_child, **{f: getattr(pd, f) for f in FIELDS})
        print(f"{t[0]} {t[1]} {Path(dense.__file__).parents[1]}")
        return 0
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
