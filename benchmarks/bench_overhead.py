"""Steady-state time and per-call overhead of ``dense.propagate`` / ``conv.propagate`` (issue 18, item 2).

Run ``python benchmarks/bench_overhead.py [--repeat N]``.

For each workload of the issue (the ones it timed for the archived neural-tangents' ``jit``-compiled
``kernel_fn``, float64, on this class of 2-core machine) the script prints, all measured in this
one run (best of ``repeat`` rounds, after a warm-up call that compiles or loads the kernels):

* ``call``: one public call (validation, compiled kernel, result wrapping);
* ``overhead``: the same call at depth 0 (validation, allocation, one compiled call that does no
  layer, result wrapping): the fixed per-call cost of the Python wrapper, and ``overhead / call``;
* ``nt``: the issue's neural-tangents time for the same workload, and ``call / nt`` (< 1: faster).

neural-tangents itself cannot be installed here (archived; it needs an old JAX), so ``nt`` is the
issue's number, not a same-run measurement: compare the ratios with that in mind, and with the
machine's load average (printed) -- the wall times of this 2-core shared machine scale with it.
The process CPU time of the whole benchmark is printed too.
"""

from __future__ import annotations

import argparse
import os
import time
import timeit

import numpy as np

from meanfield import conv, dense

#: The issue's neural-tangents times (ms): erf / relu depth 50 on 3 inputs, erf depth 50 on 128
#: inputs, a circular erf CNN of depth 20 on 10 positions, tanh (quadrature) depth 50 on 3 inputs.
NT_MS = {
    "erf, 3 inputs": 0.024,
    "relu, 3 inputs": 0.035,
    "erf, 128 inputs": 28.0,
    "conv erf, P=10": 0.10,
    "tanh, 3 inputs": 69.0,
}


def _best(f, repeat, number):
    return min(timeit.repeat(f, number=number, repeat=repeat)) / number * 1e3


def _dense_case(cov, act_name, depth):
    return (lambda: dense.propagate(cov, act_name, 1.5, 0.05, depth)), (
        lambda: dense.propagate(cov, act_name, 1.5, 0.05, 0)
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    cov3 = np.array([[1.0, 0.3, 0.1], [0.3, 0.8, 0.2], [0.1, 0.2, 1.2]])
    x = rng.standard_normal((128, 64))
    cov128 = dense.input_covariance(x, 1.0, 0.0)
    p = 10
    c10 = 0.5 * np.eye(p) + 0.5
    v = np.full(3, 1.0 / 3.0)

    cases = {
        "erf, 3 inputs": (*_dense_case(cov3, "erf", 50), 300),
        "relu, 3 inputs": (*_dense_case(cov3, "relu", 50), 300),
        "tanh, 3 inputs": (*_dense_case(cov3, "tanh", 50), 3),
        "erf, 128 inputs": (*_dense_case(cov128, "erf", 50), 1),
    }

    cases["conv erf, P=10"] = (
        lambda: conv.propagate(c10, "erf", 1.5, 0.05, v, 20),
        lambda: conv.propagate(c10, "erf", 1.5, 0.05, v, 0),
        100,
    )

    print(f"load average at start: {os.getloadavg()[0]:.2f} (2-core machine shared with other jobs)")
    print(
        f"{'workload':<18s} {'call ms':>9s} {'overhead ms':>12s} {'overhead/call':>14s} {'nt ms':>7s} {'call/nt':>8s}"
    )
    cpu0 = time.process_time()
    for name, (call, empty, number) in cases.items():
        call()  # compile or load the kernels
        t_call = _best(call, args.repeat, number)
        t_empty = _best(empty, args.repeat, max(number, 100))
        nt = NT_MS[name]
        print(
            f"{name:<18s} {t_call:9.4f} {t_empty:12.4f} {t_empty / t_call:14.2f} {nt:7.3f} {t_call / nt:8.2f}",
            flush=True,
        )
    print(
        f"CPU time of the measurements: {time.process_time() - cpu0:.1f} s; load average at end: {os.getloadavg()[0]:.2f}"
    )


if __name__ == "__main__":
    main()
