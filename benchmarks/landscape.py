"""Speed of the exhaustive binary-landscape enumerator (meanfield.landscape.binary_landscape).

Prints, in one run: first-call compile time, the time of each of the four architectures on the
paper's 7-layer, 2-unit net (22 bits; 23 with the output-bias bit), the total (target <= 60 s on
2 cores), and the speed ratio against a naive per-configuration NumPy forward pass measured on a
sample of configurations and extrapolated.

    PYTHONPATH=. python benchmarks/landscape.py [--grid 5] [--bias-bit] [--threads 2]
"""

from __future__ import annotations

import argparse
import time

import numba
import numpy as np

from meanfield import landscape as L


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--grid", type=int, default=5, help="inputs per axis (P = grid^2)")
    p.add_argument("--bias-bit", action="store_true", help="23 bits (paper's count)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--naive-sample", type=int, default=2000)
    args = p.parse_args()
    numba.set_num_threads(min(args.threads, numba.config.NUMBA_NUM_THREADS))
    task = L.regression_task(args.grid, rng=0)
    t0 = time.perf_counter()
    L.binary_landscape("plain", task.inputs, task.targets, n_layers=3)
    print(f"first call (compile or cache load): {time.perf_counter() - t0:.2f} s; threads = {numba.get_num_threads()}")
    total = 0.0
    n_bits = L.n_binary_parameters(7, 2, args.bias_bit)
    for arch in L.ARCHITECTURES:
        t0 = time.perf_counter()
        r = L.binary_landscape(arch, task.inputs, task.targets, output_bias_bit=args.bias_bit)
        dt = time.perf_counter() - t0
        total += dt
        print(f"{arch:15s} 2^{n_bits} configs x {task.inputs.shape[0]} inputs: {dt:6.2f} s "
              f"({r.n_configurations / dt / 1e6:.2f} M configs/s), {r.n_local_minima} local minima")
    print(f"all four architectures: {total:.2f} s (target <= 60 s on 2 cores)")
    rng = np.random.default_rng(0)
    sample = rng.integers(0, 2**n_bits, args.naive_sample)
    t0 = time.perf_counter()
    for c in sample:
        mats, w, b = L.decode_configuration(int(c), 7, 2, args.bias_bit)
        np.mean((L.forward_binary("residual", task.inputs, mats, w, b) - task.targets) ** 2)
    naive = (time.perf_counter() - t0) / args.naive_sample * 2**n_bits
    print(f"naive NumPy losses only, one architecture (extrapolated from {args.naive_sample} configs): {naive:.0f} s; "
          f"speed ratio vs full Numba landscape (losses + neighbours + walks): {naive / (total / 4):.0f}x")


if __name__ == "__main__":
    main()
