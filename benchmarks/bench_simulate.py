"""Monte-Carlo throughput of simulate_dense: the exact sampler against the weight path, and GEMM peak.

Run ``python benchmarks/bench_simulate.py [--quick] [--many-only]`` (``--many-only``: item 2 alone). Every
ratio is measured in this run:

1. network-layers per second of ``simulate_dense`` with few inputs (D = 3, the validation tables'
   case) for ``method="weights"`` (today's path: sample W, multiply) and ``method="exact"`` (the
   O(n D^2) sampler), Gaussian and orthogonal laws, widths 512 and 1024, and their ratio;
2. with many inputs (D = width), GFLOP/s of the weight path as a fraction of NumPy's square
   matrix-product peak measured in the same run (target >= 70 % at width >= 512), from wall times
   and from process CPU times (the latter far less sensitive to the shared machine's load).

The machine's load average is printed (2 shared cores: absolute numbers move with the load; the
ratios are taken between runs interleaved in time).
"""

from __future__ import annotations

import functools
import os
import sys
import time

import numpy as np
import timing

from meanfield.simulate import simulate_dense

best_of = functools.partial(timing.best_of, warm_up=True)


def cpu_of(fn, repeat=3):
    """Mean process CPU time of ``fn`` (all BLAS threads), after one warm-up call: on the shared
    machine the wall time of a GEMM varies several-fold with the load, its CPU time much less."""
    fn()
    c0 = time.process_time()
    for _ in range(repeat):
        fn()
    return (time.process_time() - c0) / repeat


def few_inputs(widths, depth, nets):
    x = np.random.default_rng(1).standard_normal((3, 64))
    print(f"{'few inputs (D = 3), tanh':<44s} {'weights':>12s} {'exact':>12s} {'ratio':>7s}  (network-layers/s)")
    for law in ("gaussian", "orthogonal"):
        for n in widths:
            rates = []
            for method in ("weights", "exact"):
                t = best_of(
                    lambda: simulate_dense(x, "tanh", 1.5, 0.05, depth, n, nets, law=law, method=method, rng=0),
                    repeat=2,
                )
                rates.append(nets * (depth + 1) / t)
            print(
                f"  {law:<10s} width {n:<5d} depth {depth:<3d} {nets:>3d} nets {rates[0]:12.1f} {rates[1]:12.1f} "
                f"{rates[1] / rates[0]:6.0f}x",
                flush=True,
            )


def many_inputs(widths, depth, nets):
    print("many inputs (D = width), tanh, Gaussian weights: GFLOP/s and fraction of NumPy's GEMM peak")
    for n in widths:
        a = np.random.default_rng(0).standard_normal((n, n))
        t_gemm = best_of(lambda: a @ a)
        peak = 2 * n**3 / t_gemm / 1e9
        x = np.random.default_rng(1).standard_normal((n, 64))
        t = best_of(lambda: simulate_dense(x, "tanh", 1.5, 0.05, depth, n, nets, method="weights", rng=0), repeat=2)
        # multiply-adds of the products W a (per layer) and a^T a (the recorded covariance)
        flops = nets * (depth * 2 * n * n * n + 2 * n * 64 * n + (depth + 1) * 2 * n * n * n)
        rate = flops / t / 1e9
        print(
            f"  width {n:<5d} GEMM peak {peak:7.1f} GFLOP/s   simulate_dense {rate:7.1f} GFLOP/s = "
            f"{100 * rate / peak:4.0f} % of peak (wall)",
            flush=True,
        )
        c_gemm = cpu_of(lambda: a @ a)
        c_sim = cpu_of(lambda: simulate_dense(x, "tanh", 1.5, 0.05, depth, n, nets, method="weights", rng=0), repeat=2)
        print(
            f"  width {n:<5d} on CPU time: GEMM {2 * n**3 / c_gemm / 1e9:7.1f} GFLOP/CPU-s, simulate_dense "
            f"{flops / c_sim / 1e9:7.1f} GFLOP/CPU-s = {100 * (flops / c_sim) / (2 * n**3 / c_gemm):4.0f} % of peak",
            flush=True,
        )


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    print(f"load average at start: {os.getloadavg()[0]:.2f} (2 shared cores)")
    if "--many-only" not in sys.argv:
        few_inputs((512,) if quick else (512, 1024), depth=10, nets=4 if quick else 8)
    many_inputs((512,) if quick else (512, 1024), depth=4, nets=2)
    print(f"load average at end: {os.getloadavg()[0]:.2f}")
