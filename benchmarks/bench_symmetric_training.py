"""Cost of Blumenfeld et al.'s training on the one engine (train_ensemble): per-step throughput of ConstNet /
LeakyNet in float64, float32 and bfloat16 passes, and the wall / CPU time of every Blumenfeld et al. 2020 figure
at a given size (the budget of ``meanfield reproduce``: at most 4 CPU-minutes for the whole set).

Run::

    python benchmarks/bench_symmetric_training.py             # throughput ratios only (about a minute)
    python benchmarks/bench_symmetric_training.py --figures   # + every blumenfeld2020 figure at default size

On a GPU (not measured here: no GPU was lent), pass ``--device cuda`` for the throughput part.
Prints ratios measured in one run (never a timed test).
"""

from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np

from meanfield.train import load_training_data, train_ensemble
from meanfield.train.symmetric import ConstNetSpec, LeakyNetSpec, SymmetryBreaking


def throughput(device: str, steps: int = 60) -> None:
    data = load_training_data(downsample=2)
    for spec in (ConstNetSpec(), LeakyNetSpec()):
        base = None
        for dtype, compute in (("float64", None), ("float32", None), ("float32", "bfloat16")):
            t0, c0 = time.perf_counter(), time.process_time()
            train_ensemble(
                spec,
                3,
                data=data,
                steps=steps,
                record_every=steps,
                n_eval=64,
                rng=0,
                dtype=dtype,
                device=device,
                noise=SymmetryBreaking(compute_dtype=compute) if compute else None,
            )
            wall, cpu = time.perf_counter() - t0, time.process_time() - c0
            base = base or wall
            print(
                f"{type(spec).__name__:14s} master {dtype} pass {compute or dtype:8s}: {1e3 * wall / steps:7.1f} ms/step "
                f"(CPU {1e3 * cpu / steps:7.1f} ms), ratio to float64 {wall / base:.2f}"
            )


def figures(size: str) -> None:
    from meanfield.figures import blumenfeld2020 as b

    out = tempfile.mkdtemp()
    total_wall = total_cpu = 0.0
    for name, func in b.FIGURES.items():
        t0, c0 = time.perf_counter(), time.process_time()
        func(out, size=size, backend="numpy", rng=0)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        total_wall += wall
        total_cpu += cpu
        print(f"{name:20s} wall {wall:7.1f} s  CPU {cpu:7.1f} s")
    print(
        f"{'all Blumenfeld et al. 2020 figures':20s} wall {total_wall:7.1f} s  CPU {total_cpu:7.1f} s (budget: 240 CPU-s at default)"
    )
    print(f"(machine load changes wall time; CPU time is this process's; {np.__name__} {np.__version__})")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--figures", action="store_true")
    p.add_argument("--size", default="default", choices=("smoke", "default", "full"))
    args = p.parse_args()
    throughput(args.device)
    if args.figures:
        figures(args.size)
