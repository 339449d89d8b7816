"""Timing and printing shared by the benchmarks (each run as a script: ``python benchmarks/NAME.py``).

``best_of`` is the smallest wall time of a few calls (the least disturbed by the shared machine's
load), ``row`` prints one measured number as ``name  value  unit  [target]`` in fixed columns.
"""

from __future__ import annotations

import time


def best_of(fn, repeat=3, *, warm_up=False, number=1):
    """Smallest wall time, in seconds per call, of ``repeat`` runs of ``number`` calls of ``fn``;
    with ``warm_up`` one untimed call first (compilation, caches)."""
    if warm_up:
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return min(times)


def row(name, value, unit="", target=None, *, width=64):
    """Print ``name`` (padded to ``width``), ``value`` (4 significant digits) and ``unit``; with a
    ``target`` (a str) the unit is padded to 10 characters and the target follows."""
    if target is None:
        print(f"{name:<{width}s} {value:>12.4g} {unit}")
    else:
        print(f"{name:<{width}s} {value:>12.4g} {unit:<10s} {target}")
