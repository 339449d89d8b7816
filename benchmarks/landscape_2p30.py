"""The four Orhan toy architectures at n_layers = 9 (30 binary weights, 2^30 configurations each).

``meanfield.landscape.landscape_census`` splits the configurations by their 8 leading bits into 256
chunks of 2^22 (at most 108 MiB per task) and runs them on ``meanfield.parallel``. A complete
census of all four architectures costs ~55 CPU-minutes (the exhaustive counts are in
docs/distributed.md), so this script

1. measures the CPU cost of one chunk (in-process, serial) on ``--sample`` chunks drawn at random
   (seeded) for every architecture and projects the wall time of the whole landscape on N workers
   (``256 * cost / N``, ignoring the ~ms per-task overhead measured by bench_distributed.py);
2. estimates each architecture's local-minimum count from the sampled chunks (``256 x`` the mean
   per chunk, standard error with the finite-population correction of sampling chunks without
   replacement) -- an estimate, labelled so, not the exhaustive count;
3. runs the architectures named by ``--complete`` exhaustively (all 256 chunks) on a Dask
   LocalCluster of ``--workers`` processes and prints the exact counts and the wall time.

    python benchmarks/landscape_2p30.py --workers 2 --sample 4 --complete hyper_residual

Task: ``regression_task(grid_size=5, rng=0)`` (25 inputs), the task of ``orhan2017.fig_4`` at the
default size; rtol = 1e-12 (the library's tie rule).
"""

from __future__ import annotations

import argparse
import json
import math
import time

import numpy as np

from meanfield import landscape as L
from meanfield import parallel

ORDER = ["plain", "path_residual", "residual", "hyper_residual"]  # the paper's: most -> fewest minima
N_LAYERS, CHUNK_BITS = 9, 8


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--sample", type=int, default=4, help="chunks sampled per architecture")
    p.add_argument("--complete", nargs="*", default=["hyper_residual"], help="architectures run exhaustively")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--part",
        default=None,
        metavar="I/K",
        help="with --complete: census only the I-th of K equal shares of the chunks, in-process, and append "
        "the counts as a JSON line to --parts-file (partial censuses of disjoint chunks add up)",
    )
    p.add_argument("--parts-file", default="landscape_2p30_parts.jsonl")
    p.add_argument("--merge", action="store_true", help="add up the parts in --parts-file and print the totals")
    args = p.parse_args()
    if args.merge:
        _merge(args.parts_file)
        return
    task = L.regression_task(grid_size=5, rng=0)
    n_chunks = 1 << CHUNK_BITS
    L.landscape_census("plain", task.inputs, task.targets, n_layers=4)  # compile outside the timings
    sample = np.sort(np.random.default_rng(args.seed).choice(n_chunks, size=args.sample, replace=False))
    print(f"2^30 configurations, {n_chunks} chunks of 2^22; sampled chunks {sample.tolist()}")
    archs = ORDER if args.sample > 0 else []
    print(
        f"{'architecture':<16}{'CPU s/chunk':>12}{'estimated minima':>20}{'+- s.e.':>12}  projected wall (1 / 2 / 16 / 256 workers)"
    )
    estimates = {}
    for arch in archs:
        t_cpu, t0 = time.process_time(), time.perf_counter()
        cen = L.landscape_census(
            arch, task.inputs, task.targets, n_layers=N_LAYERS, chunk_bits=CHUNK_BITS, chunks=sample.tolist()
        )
        cost = (time.process_time() - t_cpu) / args.sample
        wall = (time.perf_counter() - t0) / args.sample
        per = cen.minima_per_chunk.astype(float)
        est = n_chunks * per.mean()
        fpc = 1.0 - args.sample / n_chunks
        se = n_chunks * per.std(ddof=1) / math.sqrt(args.sample) * math.sqrt(fpc) if args.sample > 1 else math.inf
        estimates[arch] = (est, se)
        proj = " / ".join(f"{n_chunks * cost / w / 60:.1f} min" for w in (1, 2, 16, 256))
        print(f"{arch:<16}{cost:>12.2f}{est:>20,.0f}{se:>12,.0f}  {proj}   (wall {wall:.2f} s/chunk here)")
        scale = n_chunks / args.sample
        print(
            f"{'':<16}in the sample: {cen.n_local_minima:,} minima, {cen.n_strict_local_minima:,} strict "
            f"(x{scale:.0f}: {cen.n_strict_local_minima * scale:,.0f}), zero-output fraction "
            f"{cen.n_zero_output / cen.n_configurations:.3f}"
        )
    order_est = sorted(estimates, key=lambda a: -estimates[a][0])
    print("estimated order (most -> fewest):", " > ".join(order_est), "| paper:", " > ".join(ORDER))
    if args.part is not None:
        i, k = (int(v) for v in args.part.split("/"))
        share = list(range(i * n_chunks // k, (i + 1) * n_chunks // k))
        for arch in args.complete:
            t_cpu, t0 = time.process_time(), time.perf_counter()
            cen = L.landscape_census(
                arch, task.inputs, task.targets, n_layers=N_LAYERS, chunk_bits=CHUNK_BITS, chunks=share
            )
            rec = {
                "architecture": arch,
                "chunks": [share[0], share[-1]],
                "n_local_minima": cen.n_local_minima,
                "n_strict_local_minima": cen.n_strict_local_minima,
                "n_zero_output": cen.n_zero_output,
                "min_loss": cen.min_loss,
                "argmin": cen.argmin,
                "cpu_s": time.process_time() - t_cpu,
                "wall_s": time.perf_counter() - t0,
            }
            with open(args.parts_file, "a") as fh:
                fh.write(json.dumps(rec) + "\n")
            print(rec)
        return
    for arch in args.complete:
        t0 = time.perf_counter()
        with parallel.using(workers=args.workers):
            cen = L.landscape_census(arch, task.inputs, task.targets, n_layers=N_LAYERS, chunk_bits=CHUNK_BITS)
        wall = time.perf_counter() - t0
        print(
            f"complete {arch}: {cen.n_local_minima:,} local minima ({cen.n_strict_local_minima:,} strict), "
            f"{cen.n_zero_output:,} zero-output configurations, min loss {cen.min_loss:.6g} at c = {cen.argmin}; "
            f"{wall:.1f} s wall on {args.workers} workers (cluster start included)"
        )


def _merge(path: str) -> None:
    recs = [json.loads(line) for line in open(path)]
    for arch in ORDER:
        mine = [r for r in recs if r["architecture"] == arch]
        if not mine:
            continue
        covered = sorted(c for r in mine for c in range(r["chunks"][0], r["chunks"][1] + 1))
        if len(set(covered)) != len(covered):
            raise SystemExit(f"{arch}: overlapping parts in {path}")
        best = min(mine, key=lambda r: (r["min_loss"], r["argmin"]))
        print(
            f"{arch}: chunks covered {len(covered)} / {1 << CHUNK_BITS}; "
            f"{sum(r['n_local_minima'] for r in mine):,} local minima, "
            f"{sum(r['n_strict_local_minima'] for r in mine):,} strict, "
            f"{sum(r['n_zero_output'] for r in mine):,} zero-output; min loss {best['min_loss']:.6g} at c = {best['argmin']}; "
            f"CPU {sum(r['cpu_s'] for r in mine):.0f} s, wall {sum(r['wall_s'] for r in mine):.0f} s (in-process, 1 core)"
        )


if __name__ == "__main__":
    main()
