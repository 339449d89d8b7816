"""Speed of the CNN mean field (Xiao et al. 2018): per-layer covariance map on 16 x 16 images, orthogonal
kernel generation against its O((k c)^3) cost, and Monte-Carlo CNN throughput against NumPy GEMM.

Run: ``PYTHONPATH=. python benchmarks/conv.py`` (prints measured ratios; not a test).
"""

from __future__ import annotations

import time

import numpy as np
from timing import best_of

from meanfield import conv, gaussian
from meanfield.init import orthogonal_conv_kernel
from meanfield.simulate import simulate_conv


def covariance_map_2d():
    print("== covariance map, 2-D 16 x 16 image (256 x 256 covariance), 3 x 3 uniform v ==")
    rng = np.random.default_rng(0)
    p = 256
    a = rng.standard_normal((p, p + 4)) + 0.5
    cov = a @ a.T / p
    v = np.full((3, 3), 1 / 9)
    for act in ("relu", "erf", "tanh"):
        t0 = time.perf_counter()
        conv.covariance_map(cov, act, 1.5, 0.05, v)
        first = time.perf_counter() - t0
        t_map = best_of(lambda: conv.covariance_map(cov, act, 1.5, 0.05, v))
        t_avg = best_of(lambda: conv.average(cov, v))
        # naive baseline: one scalar pair_expectation call per pair of positions (timed on 300 pairs)
        q = np.diag(cov)
        pairs = [(i, j) for i in range(20) for j in range(i, i + 15)][:300]
        t0 = time.perf_counter()
        for i, j in pairs:
            c = cov[i, j] / np.sqrt(q[i] * q[j])
            gaussian.pair_expectation(act, q[i], q[j], min(1.0, max(-1.0, c)))
        per_pair = (time.perf_counter() - t0) / len(pairs)
        naive = per_pair * p * (p + 1) / 2
        print(
            f"{act:5s}: layer {t_map * 1e3:8.2f} ms (averaging A_v {t_avg * 1e3:6.2f} ms; first call incl. compile "
            f"{first:6.2f} s); naive per-pair calls ~{naive:7.2f} s -> speed-up x{naive / t_map:,.0f}"
        )


def orthogonal_kernels():
    print("== orthogonal kernel generation (Algorithm 1) vs O((k c)^3) ==")
    rows = []
    for k in (3, 5, 7):
        for c in (32, 64, 128):
            t = best_of(lambda: orthogonal_conv_kernel(k, c, c, rng=0), repeat=2)
            rows.append((k, c, t))
            print(f"k={k} c={c:4d}: {t * 1e3:8.2f} ms, t / (k c)^3 = {t / (k * c) ** 3 * 1e9:7.3f} ns")
    k, c, t = np.array(rows).T
    slope_c = np.polyfit(np.log(c[k == 5]), np.log(t[k == 5]), 1)[0]
    slope_k = np.polyfit(np.log(k[c == 128]), np.log(t[c == 128]), 1)[0]
    print(
        f"fitted exponents: t ~ c^{slope_c:.2f} (k = 5), t ~ k^{slope_k:.2f} (c = 128); supplement C.1 bound: 3 and 3"
    )


def monte_carlo_throughput():
    print("== Monte-Carlo CNN throughput vs NumPy GEMM (float64) ==")
    from meanfield.backend import get_backend
    from meanfield.init import periodic_conv
    from meanfield.simulate import conv_kernels

    n, c, nets, depth = 16, 128, 16, 8
    v = np.full(3, 1 / 3)
    b = get_backend("numpy")
    rng = b.rng(0)
    simulate_conv(np.eye(n), "tanh", 1.5, 0.05, v, 1, c, nets)  # warm-up
    t_sim = best_of(lambda: simulate_conv(np.eye(n), "tanh", 1.5, 0.05, v, depth, c, nets), repeat=2) / depth
    t_rng = best_of(lambda: conv_kernels(nets, (3,), c, 1.5, v, "gaussian", rng=rng, backend=b))
    k = conv_kernels(nets, (3,), c, 1.5, v, "gaussian", rng=rng, backend=b)[:, None]
    x = rng.standard_normal((nets, 1, n, c))
    t_conv = best_of(lambda: periodic_conv(x, k, 1), repeat=5)
    a = rng.standard_normal((nets, n, c))
    w = rng.standard_normal((nets, c, c))
    t_gemm = best_of(lambda: [a @ w for _ in range(v.size)], repeat=5)
    flops = 2.0 * nets * n * c * c * v.size
    big = rng.standard_normal((1024, 1024))
    t_peak = best_of(lambda: big @ big, repeat=3)
    print(f"NumPy GEMM peak here (1024 x 1024 float64): {2 * 1024**3 / t_peak / 1e9:.2f} GFLOP/s")
    print(
        f"1-D, n={n}, c={c}, {nets} networks, kernel 3, per layer: simulate_conv {t_sim * 1e3:.2f} ms, of which drawing "
        f"the Gaussian kernels {t_rng * 1e3:.2f} ms and the periodic convolution {t_conv * 1e3:.2f} ms"
    )
    print(
        f"periodic_conv {flops / t_conv / 1e9:.2f} GFLOP/s vs the same batched GEMMs {flops / t_gemm / 1e9:.2f} GFLOP/s "
        f"-> {t_gemm / t_conv:.2f} of GEMM speed; whole layer {flops / t_sim / 1e9:.2f} GFLOP/s "
        f"(each weight is used only 2 n = {2 * n} flops, so drawing it dominates)"
    )


if __name__ == "__main__":
    covariance_map_2d()
    orthogonal_kernels()
    monte_carlo_throughput()
