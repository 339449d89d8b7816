"""Monte-Carlo throughput on a GPU as a fraction of the card's matrix-product peak.

Run ``python benchmarks/bench_gpu.py [--backend cupy|torch] [--dtype float64]`` on a machine with a
CUDA GPU and CuPy (``pip install "meanfield-theory[gpu]"``) or PyTorch with CUDA plus
array-api-compat. Without a GPU it prints why and exits with status 0 (nothing is measured).

For widths 2048 and 4096 it measures, in the same run, the card's square matrix-product peak
(float64 here: the simulators compute in float64) and the GFLOP/s of
``simulate_dense(method="weights")`` with as many inputs as the width, and prints the fraction
(target >= 50 % at width >= 2048), then the network-layers per second of the exact sampler with
3 inputs. Its figures, once measured on a card, belong in
benchmarks/README.md ("On a GPU").
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np


def _backend(name):
    from meanfield.backend import get_backend

    try:
        b = get_backend(name)
    except ImportError as exc:
        return None, f"backend {name!r} is not installed ({exc})"
    if name == "cupy":
        try:
            if b.xp.cuda.runtime.getDeviceCount() < 1:
                return None, "CuPy sees no CUDA device"
        except Exception as exc:  # no driver, no device
            return None, f"CuPy sees no CUDA device ({type(exc).__name__}: {exc})"
    if name == "torch" and b.device != "cuda":
        return None, "PyTorch sees no CUDA device"
    return b, ""


def _sync(b):
    if b.name == "cupy":
        b.xp.cuda.Device().synchronize()
    else:
        import torch

        torch.cuda.synchronize()


def _time(b, fn, repeat=3):
    fn()
    _sync(b)
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        _sync(b)
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", choices=["cupy", "torch"], default="cupy")
    args = p.parse_args(argv)
    b, why = _backend(args.backend)
    if b is None:
        print(f"bench_gpu: no GPU measurement: {why}. Run it on a machine with a CUDA GPU.")
        return 0
    from meanfield.simulate import simulate_dense

    if args.backend == "cupy":
        name = b.xp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    else:
        import torch

        name = torch.cuda.get_device_name(0)
    print(f"device: {name}, backend {args.backend}")
    for n in (2048, 4096):
        a = b.asarray(np.random.default_rng(0).standard_normal((n, n)))
        peak = 2 * n**3 / _time(b, lambda: a @ a) / 1e9
        x = np.random.default_rng(1).standard_normal((n, 64))
        depth, nets = 4, 2
        t = _time(
            b, lambda: simulate_dense(x, "tanh", 1.5, 0.05, depth, n, nets, method="weights", backend=b, rng=0), 2
        )
        flops = nets * (depth * 2 * n**3 + 2 * n * 64 * n + (depth + 1) * 2 * n**3)
        rate = flops / t / 1e9
        print(
            f"width {n}: float64 GEMM peak {peak:.0f} GFLOP/s, simulate_dense {rate:.0f} GFLOP/s = {100 * rate / peak:.0f} %"
        )
        x3 = np.random.default_rng(1).standard_normal((3, 64))
        t = _time(b, lambda: simulate_dense(x3, "tanh", 1.5, 0.05, 20, n, 64, method="exact", backend=b, rng=0), 2)
        print(f"width {n}: exact sampler, 3 inputs: {64 * 21 / t:.0f} network-layers/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
