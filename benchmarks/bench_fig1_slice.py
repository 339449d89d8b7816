"""Paper-size Grzejdziak Fig. 1 (seed 002) from a 1/20 slice, with a profile (issue 18 item 2).

Run ``python benchmarks/bench_fig1_slice.py [--networks 500] [--metainit 1]``.

The paper-size ensemble is 10,000 networks x 1,797 inputs (all of scikit-learn's digits) x depth
100 x width 10 for each of the six non-MetaInit initialisers of ``FIG1_INITS``, plus 200 MetaInit
networks. This script runs ``--networks`` of them per initialiser through the code path of
``meanfield.validation.kurtosis.fig1_variances`` (``empirical_variances(..., dtype="float64")`` on
the NumPy backend: the fused Numba kernel), warm (one small call first compiles), under cProfile,
and prints:

* the CPU and wall time of the slice and its extrapolation to 10,000 networks (linear in the
  number of networks: chunks of at most 200 networks are independent);
* where the time goes: the fused kernel (matrix products + ReLU + moment sums, one pass), the weight
  sampling (Gaussian draws, QR for the orthogonal ones), the first layer (one BLAS matmul);
* the work of the hidden layers as multiply-adds and the kernel's GFLOP/s, against the machine's
  float64 matrix-product peak measured in the same run (a 2048 x 2048 ``@``), and against a
  stacked ``np.matmul`` of the same 10 x 10 layers (what BLAS does on this shape) with the ReLU and
  the sums done by NumPy separately (the un-fused split: matrix products vs elementwise vs moments);
* the first layer as a stacked ``np.matmul`` (what the code does) against one 2-D GEMM;
* MetaInit: the CPU time of ``--metainit`` network(s) at depth 100 with 500 steps, times 200.

All numbers are from one run; the machine is shared (CPU times are printed beside wall times).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import time

import numpy as np
from meanfield.validation.simulators import FIG1_INITS, empirical_variances

from meanfield.data import load_digits

PAPER_NETWORKS = 10_000
PAPER_METAINIT = 200
DEPTH = 100
WIDTH = 10


def _clock(f, *a, **k):
    c0, t0 = time.process_time(), time.perf_counter()
    out = f(*a, **k)
    return out, time.process_time() - c0, time.perf_counter() - t0


def _peak(n=2048, repeat=3):
    a = np.random.default_rng(0).standard_normal((n, n))
    a @ a
    best = min(_clock(np.matmul, a, a)[2] for _ in range(repeat))
    return 2 * n**3 / best / 1e9


def _unfused(x, nets, rng):
    """The same hidden layers with NumPy: stacked matmul, then ReLU, then the two sums (seconds each)."""
    y = np.ascontiguousarray(np.broadcast_to(rng.standard_normal((WIDTH, x.shape[1])) @ x.T, (nets, WIDTH, x.shape[0])))
    w = rng.standard_normal((nets, WIDTH, WIDTH)) * np.sqrt(2.0 / WIDTH)
    t_mm = t_relu = t_mom = 0.0
    for _ in range(DEPTH - 1):
        t0 = time.perf_counter()
        v = np.maximum(y, 0.0)
        t1 = time.perf_counter()
        y = np.matmul(w, v)
        t2 = time.perf_counter()
        y.sum(axis=(1, 2))
        np.einsum("bij,bij->b", y, y)
        t3 = time.perf_counter()
        t_relu += t1 - t0
        t_mm += t2 - t1
        t_mom += t3 - t2
        y /= np.sqrt(np.mean(y * y, axis=(1, 2), keepdims=True))  # keep it finite
    return t_mm, t_relu, t_mom


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--networks", type=int, default=500)
    p.add_argument("--metainit", type=int, default=1)
    p.add_argument("--unfused-networks", type=int, default=200)
    args = p.parse_args()
    x = load_digits(standardized=True).x
    inits = [i for i in FIG1_INITS if i != "metainit"]
    print(f"load average at start: {os.getloadavg()[0]:.2f}; inputs {x.shape}, depth {DEPTH}, width {WIDTH}")
    for init in inits:  # compile / warm
        for e in ("numba_generic", "numba"):
            empirical_variances(x[:8], init, 3, WIDTH, 2, rng=0, dtype="float64", engine=e)
    peak = _peak()
    print(f"float64 matmul peak (2048^3, all threads): {peak:.1f} GFLOP/s")

    engines = ("numba_generic", "numba")  # old (runtime-width kernel) vs new (width-10 kernel), interleaved
    profs = {e: cProfile.Profile() for e in engines}
    cpu = {e: 0.0 for e in engines}
    wall = {e: 0.0 for e in engines}
    per = {}
    worst = 0.0
    for k, init in enumerate(inits):
        res = {}
        for e in engines:
            profs[e].enable()
            res[e], c, t = _clock(
                empirical_variances, x, init, DEPTH, WIDTH, args.networks, rng=k, dtype="float64", engine=e
            )
            profs[e].disable()
            per[init, e] = (c, t)
            cpu[e] += c
            wall[e] += t
        alive = res["numba_generic"] > 1e-250
        rel = np.abs(res["numba"] - res["numba_generic"])[alive] / res["numba_generic"][alive]
        worst = max(worst, float(rel.max()) if rel.size else 0.0)
    scale = PAPER_NETWORKS / args.networks
    print(f"\nslice: {args.networks} networks x {len(inits)} initialisers, old (numba_generic) vs new (numba):")
    for init in inits:
        (c0, t0), (c1, t1) = per[init, "numba_generic"], per[init, "numba"]
        print(
            f"  {init:10s} old CPU {c0:6.2f} s wall {t0:6.2f} s | new CPU {c1:6.2f} s wall {t1:6.2f} s | {c0 / c1:4.2f}x CPU"
        )
    for e in engines:
        print(
            f"  {e:13s} slice CPU {cpu[e]:6.1f} s, wall {wall[e]:6.1f} s -> {PAPER_NETWORKS} networks: "
            f"CPU {cpu[e] * scale:5.0f} s, wall {wall[e] * scale:5.0f} s (projected on 2 idle cores: {cpu[e] * scale / 2:4.0f} s)"
        )
    print(
        f"  new / old: {cpu['numba_generic'] / cpu['numba']:.2f}x CPU, {wall['numba_generic'] / wall['numba']:.2f}x wall"
    )
    print(f"  max relative difference of the variances, new vs old (live networks): {worst:.1e}")

    macs = (
        len([i for i in inits if i not in ("zero", "zero_star")])
        * args.networks
        * (DEPTH - 1)
        * WIDTH
        * WIDTH
        * x.shape[0]
    )
    print(f"\nhidden layers: {macs / 1e9:.2f} G multiply-adds (ZerO / ZerO* are identities)")
    fused = {}
    for e in engines:
        st = pstats.Stats(profs[e])
        rows = sorted(st.stats.items(), key=lambda kv: -kv[1][2])  # tottime
        total = sum(v[2] for _, v in rows)
        print(f"profile of {e} (tottime, wall s; total {total:.1f} s), top functions:")
        for (fn, line, name), v in rows[:6]:
            print(f"  {v[2]:7.2f}  {100 * v[2] / total:5.1f} %  {name} ({os.path.basename(fn)}:{line})")
        # the kernels: _fused (generic, also ZerO's identity layers) and _fused_w10 (width 10)
        fused[e] = sum(v[2] for (fn, _l, name), v in rows if name in ("_fused", "_fused_w10"))
        print(
            f"  kernel {fused[e]:.1f} s -> {2 * macs / fused[e] / 1e9:.2f} GFLOP/s = "
            f"{100 * 2 * macs / fused[e] / 1e9 / peak:.1f} % of the measured peak"
        )
    t_mm, t_relu, t_mom = _unfused(x, args.unfused_networks, np.random.default_rng(1))
    m = args.unfused_networks * (DEPTH - 1) * WIDTH * WIDTH * x.shape[0]
    print(
        f"un-fused NumPy, {args.unfused_networks} networks: matmul {t_mm:.2f} s ({2 * m / t_mm / 1e9:.2f} GFLOP/s, "
        f"{100 * 2 * m / t_mm / 1e9 / peak:.1f} % of peak), ReLU {t_relu:.2f} s, moments {t_mom:.2f} s; "
        f"fused kernels on the same work: old {fused['numba_generic'] * args.unfused_networks / args.networks / 4:.2f} s, "
        f"new {fused['numba'] * args.unfused_networks / args.networks / 4:.2f} s"
    )
    # the first layer: a stacked (networks, width, 64) @ (64, n) matmul, as _empirical_variances_numba does
    r = np.random.default_rng(2)
    w1 = r.standard_normal((56, WIDTH, x.shape[1]))
    xt = np.ascontiguousarray(x.T)
    stacked, _, t_st = _clock(np.matmul, w1, xt)
    one, _, t_one = _clock(lambda: (w1.reshape(-1, x.shape[1]) @ xt).reshape(56, WIDTH, -1))
    rel = float(np.max(np.abs(stacked - one)) / np.max(np.abs(stacked)))
    print(
        f"first layer, 56 networks (one chunk): stacked np.matmul {1e3 * t_st:.1f} ms, one 2-D GEMM "
        f"{1e3 * t_one:.1f} ms ({t_st / t_one:.0f}x; max relative difference {rel:.1e})"
    )
    if args.metainit:
        _, c, t = _clock(empirical_variances, x, "metainit", DEPTH, WIDTH, args.metainit, rng=7, dtype="float64")
        print(
            f"\nMetaInit: {args.metainit} network(s), 500 steps: CPU {c:.1f} s, wall {t:.1f} s -> "
            f"x{PAPER_METAINIT}: CPU {c * PAPER_METAINIT / args.metainit:.0f} s"
        )
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
