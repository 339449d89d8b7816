"""Compile-event profile of a cold ``dense.fixed_point`` call (issue 18: which kernels cost compile time).

Run with an empty Numba cache, e.g. ``NUMBA_CACHE_DIR=$(mktemp -d) python
benchmarks/compile_profile.py tanh``: prints the CPU time of the first call and, per compiled
function, the self and inclusive wall time of its compilation events (``numba.core.event``).
"""

from __future__ import annotations

import collections
import sys
import time

import numba.core.event as ev

from meanfield import dense


def main(activation: str = "tanh") -> None:
    t0 = time.process_time()
    with ev.install_recorder("numba:compile") as rec:
        dense.fixed_point(activation, 1.5, 0.05)
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
