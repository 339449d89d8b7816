"""Paper-size Grzejdziak Fig. 1 from a 1/20 slice, with a profile.

Run ``python benchmarks/bench_fig1_slice.py [--networks 500] [--metainit 32] [--metainit-steps 50]``.

The paper-size ensemble is 10,000 networks x 1,797 inputs (all of scikit-learn's digits) x depth
100 x width 10 for each of the six non-MetaInit initialisers of ``FIG1_INITS``, plus 200 MetaInit
networks. This script runs ``--networks`` of them per initialiser through the code path of
``meanfield.simulate.fig1_variances`` (``empirical_variances(..., dtype="float64")`` on
the NumPy backend: the fused Numba kernel), warm (one small call first compiles), under cProfile,
old and new interleaved in one run, and prints:

* per initialiser the CPU and wall time of the old kernel (``engine="numba_generic"``: the width a
  runtime value, the generic kernel) and of the new one (``engine="numba"``: the width-10
  kernel), their ratio and the largest relative difference of the variances; the slice's
  extrapolation to 10,000 networks (linear in the number of networks: chunks are independent),
  and its projection on 2 idle cores (CPU / 2: the kernel is ``prange`` over networks);
* where the time goes (cProfile, wall): the kernels, the weight sampling (Gaussian draws, QR for
  the orthogonal ones), the first layer (one BLAS matmul, inside ``_empirical_variances_numba``);
* the work of the hidden layers as multiply-adds and each kernel's GFLOP per CPU second (its share
  of the slice's wall time x the slice's CPU time: wall seconds are not ours on a shared machine),
  against the float64 matmul's GFLOP per CPU second measured in the same run (a 2048 x 2048 ``@``)
  and the nominal core peak (16 flop per cycle x the listed clock); and against a stacked
  ``np.matmul`` of the same 10 x 10 layers with the ReLU and the sums done by NumPy separately;
* the first layer as a stacked ``np.matmul`` against one 2-D GEMM;
* MetaInit: ``--metainit`` networks, one stream each (as ``fig1_variances`` draws them), run one
  at a time (4 of them: the former one-task-per-network layout) and batched (all at once,
  ``metainit_weights(..., rng=[streams])``), interleaved, best of 2: CPU per network-step, the
  ratio, whether the weights are bit-identical, and the projection to 200 networks x 500 steps;
* the paper-size estimate with and without MetaInit.

All numbers are from one run; the machine is shared (CPU times are printed beside wall times).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import time

import numpy as np

from meanfield.data import load_digits
from meanfield.simulate import FIG1_INITS, empirical_variances, metainit_weights

PAPER_NETWORKS = 10_000
PAPER_METAINIT = 200
DEPTH = 100
WIDTH = 10


def _clock(f, *a, **k):
    c0, t0 = time.process_time(), time.perf_counter()
    out = f(*a, **k)
    return out, time.process_time() - c0, time.perf_counter() - t0


def _peak(n=2048, repeat=3):
    """float64 matmul throughput: GFLOP per wall second (all threads) and per CPU second (best of ``repeat``)."""
    a = np.random.default_rng(0).standard_normal((n, n))
    a @ a
    runs = [_clock(np.matmul, a, a) for _ in range(repeat)]
    return 2 * n**3 / min(r[2] for r in runs) / 1e9, 2 * n**3 / min(r[1] for r in runs) / 1e9


def _nominal_core_peak():
    """16 float64 flop per cycle per core (two 256-bit FMA pipes: AVX2 / Zen 4) x the listed clock, or None."""
    try:
        with open("/proc/cpuinfo") as f:
            mhz = [float(line.split(":")[1]) for line in f if line.startswith("cpu MHz")]
        return 16 * mhz[0] / 1e3 if mhz else None
    except OSError:
        return None


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
    p.add_argument("--metainit", type=int, default=32, help="MetaInit networks batched (0: skip)")
    p.add_argument("--metainit-steps", type=int, default=50)
    p.add_argument("--unfused-networks", type=int, default=200)
    args = p.parse_args()
    x = load_digits(standardized=True).x
    inits = [i for i in FIG1_INITS if i != "metainit"]
    print(f"load average at start: {os.getloadavg()[0]:.2f}; inputs {x.shape}, depth {DEPTH}, width {WIDTH}")
    for init in inits:  # compile / warm
        for e in ("numba_generic", "numba"):
            empirical_variances(x[:8], init, 3, WIDTH, 2, rng=0, dtype="float64", engine=e)
    peak, peak_cpu = _peak()
    nominal = _nominal_core_peak()
    print(
        f"float64 matmul peak (2048^3, all threads): {peak:.1f} GFLOP/s wall, {peak_cpu:.1f} GFLOP per CPU-s"
        + (f"; nominal core peak {nominal:.1f} GFLOP/s (16 flop/cycle)" if nominal else "")
    )

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
        # on a shared machine wall time is not ours: the kernel's CPU time ~ its share of the wall
        # time x the slice's CPU time (both threads of the prange kernel counted)
        kcpu = fused[e] / total * cpu[e]
        print(
            f"  kernel {fused[e]:.1f} s wall ({100 * fused[e] / total:.0f} % of the slice) ~ {kcpu:.1f} CPU-s -> "
            f"{2 * macs / kcpu / 1e9:.1f} GFLOP per CPU-s = {100 * 2 * macs / kcpu / 1e9 / peak_cpu:.0f} % of the "
            f"matmul's per-CPU-s peak"
            + (f", {100 * 2 * macs / kcpu / 1e9 / nominal:.0f} % of the nominal core peak" if nominal else "")
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
        # MetaInit, old vs new in one run: the same networks (one stream each, as fig1_variances
        # draws them) one at a time (the former one-task-per-network layout) and all at once
        streams = np.random.SeedSequence(7).spawn(args.metainit)
        steps = args.metainit_steps

        def one_at_a_time():
            return [metainit_weights(1, DEPTH, WIDTH, x.shape[1], rng=s, steps=steps) for s in streams[:4]]

        def batched():
            return metainit_weights(len(streams), DEPTH, WIDTH, x.shape[1], rng=list(streams), steps=steps)

        metainit_weights(2, 4, WIDTH, x.shape[1], rng=list(streams[:2]), steps=1)  # warm
        best = {"one": (np.inf, np.inf), "batched": (np.inf, np.inf)}
        for _ in range(2):  # interleaved, best of 2 (CPU)
            w1, c1, t1 = _clock(one_at_a_time)
            wb, cb, tb = _clock(batched)
            best["one"] = min(best["one"], (c1 / len(w1), t1 / len(w1)))
            best["batched"] = min(best["batched"], (cb / len(streams), tb / len(streams)))
        same = all(np.array_equal(wb[l][k], w1[k][l][0]) for k in range(len(w1)) for l in range(DEPTH))
        per_step = args.metainit_steps
        print(f"\nMetaInit, depth {DEPTH}, {per_step} steps per network (cost linear in steps; the paper: 500):")
        for name, (c, t) in best.items():
            print(
                f"  {name:8s} CPU {c:6.3f} s / network ({1e3 * c / per_step:5.2f} ms per network-step), wall {t:6.3f} s"
                f" -> {PAPER_METAINIT} networks x 500 steps: CPU {c * PAPER_METAINIT * 500 / per_step:5.0f} s"
            )
        print(
            f"  batched ({len(streams)} networks) vs one at a time (4 networks): "
            f"{best['one'][0] / best['batched'][0]:.2f}x CPU; weights bit-identical: {same}"
        )
        mi_cpu = best["batched"][0] * PAPER_METAINIT * 500 / per_step
        total = cpu["numba"] * scale
        print(
            f"\npaper-size Fig. 1 estimate (new code): without MetaInit CPU {total:.0f} s (2 idle cores: ~{total / 2:.0f} s wall); "
            f"with MetaInit CPU {total + mi_cpu:.0f} s (2 idle cores: ~{(total + mi_cpu) / 2:.0f} s wall)"
        )
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
