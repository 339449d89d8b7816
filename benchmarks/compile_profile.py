"""Compile-event profile of a cold first call (which kernels cost compile time).

Run with an empty Numba cache, e.g. ``NUMBA_CACHE_DIR=$(mktemp -d) python
benchmarks/compile_profile.py tanh`` (a cold ``dense.fixed_point`` of that activation), or with an
entry-point name of ``benchmarks/bench_cold_start.py`` (``NUMBA_CACHE_DIR=$(mktemp -d) python
benchmarks/compile_profile.py "dense.propagate(erf)"``): prints the CPU time of the first call and,
per compiled function, the self and inclusive wall time of its compilation events
(``numba.core.event``).
"""

from __future__ import annotations

import collections
import os
import sys
import time

import numba.core.event as ev

from meanfield import dense


def _call(what: str):
    """A zero-argument callable: an entry point of bench_cold_start.py, else fixed_point(what, ...)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bench_cold_start import ENTRY_POINTS

    sys.path.pop(0)
    if what not in ENTRY_POINTS:
        return lambda: dense.fixed_point(what, 1.5, 0.05)
    import numpy as np

    setup, call = ENTRY_POINTS[what]
    scope = {
        "np": np,
        "x1": np.linspace(-2.0, 2.0, 5),
        "cov": np.array([[1.0, 0.3, 0.1], [0.3, 0.8, 0.2], [0.1, 0.2, 1.2]]),
    }
    exec(setup, scope)
    return lambda: exec(call, scope)


def main(what: str = "tanh") -> None:
    call = _call(what)
    t0 = time.process_time()
    with ev.install_recorder("numba:compile") as rec:
        call()
    total = time.process_time() - t0
    stack, incl, self_t = [], collections.Counter(), collections.Counter()
    for ts, e in rec.buffer:
        try:
            name = e.data["dispatcher"].py_func.__qualname__
        except (KeyError, AttributeError, TypeError):
            name = "?"
        if e.is_start:
            stack.append([name, ts, 0.0])
        else:
            n, t, child = stack.pop()
            d = ts - t
            incl[n] += d
            self_t[n] += d - child
            if stack:
                stack[-1][2] += d
    print(f"first call: {total:.2f} CPU-s; {len(self_t)} compiled functions (self, inclusive wall s):")
    for n, v in self_t.most_common(25):
        print(f"{v:7.2f} {incl[n]:7.2f} {n}")


if __name__ == "__main__":
    main(*sys.argv[1:2])
