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
        empirical_variances(x[:8], init, 3, WIDTH, 2, rng=0, dtype="float64")
    peak = _peak()
    print(f"float64 matmul peak (2048^3, all threads): {peak:.1f} GFLOP/s")

    prof = cProfile.Profile()
    cpu = wall = 0.0
    per = {}
    for k, init in enumerate(inits):
        prof.enable()
        _, c, t = _clock(empirical_variances, x, init, DEPTH, WIDTH, args.networks, rng=k, dtype="float64")
        prof.disable()
        per[init] = (c, t)
        cpu += c
        wall += t
    scale = PAPER_NETWORKS / args.networks
    print(f"\nslice: {args.networks} networks x {len(inits)} initialisers: CPU {cpu:.1f} s, wall {wall:.1f} s")
    for init, (c, t) in per.items():
        print(f"  {init:10s} CPU {c:6.2f} s  wall {t:6.2f} s")
    print(f"extrapolated to {PAPER_NETWORKS} networks: CPU {cpu * scale:.0f} s, wall {wall * scale:.0f} s")

    st = pstats.Stats(prof)
    rows = sorted(st.stats.items(), key=lambda kv: -kv[1][2])  # tottime
    total = sum(v[2] for _, v in rows)
    print(f"\nprofile (tottime, wall s; total {total:.1f} s), top functions:")
    for (fn, line, name), v in rows[:10]:
        print(f"  {v[2]:7.2f}  {100 * v[2] / total:5.1f} %  {name} ({os.path.basename(fn)}:{line})")
    fused = sum(v[2] for (fn, _l, name), v in rows if name == "_fused" or name == "fused_relu_sums")
    macs = (
        len([i for i in inits if i not in ("zero", "zero_star")])
        * args.networks
        * (DEPTH - 1)
        * WIDTH
        * WIDTH
        * x.shape[0]
    )
    print(
        f"\nhidden layers: {macs / 1e9:.2f} G multiply-adds (ZerO / ZerO* are identities); "
        f"fused kernel {fused:.1f} s -> {2 * macs / fused / 1e9:.2f} GFLOP/s = {100 * 2 * macs / fused / 1e9 / peak:.1f} % of peak"
    )
    t_mm, t_relu, t_mom = _unfused(x, args.unfused_networks, np.random.default_rng(1))
    m = args.unfused_networks * (DEPTH - 1) * WIDTH * WIDTH * x.shape[0]
    print(
        f"un-fused NumPy, {args.unfused_networks} networks: matmul {t_mm:.2f} s ({2 * m / t_mm / 1e9:.2f} GFLOP/s, "
        f"{100 * 2 * m / t_mm / 1e9 / peak:.1f} % of peak), ReLU {t_relu:.2f} s, moments {t_mom:.2f} s; "
        f"fused kernel on the same work: {fused * args.unfused_networks / args.networks / 4:.2f} s"
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
