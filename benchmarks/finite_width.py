"""Speed of meanfield.finite_width against naive baselines, measured in one run.

    PYTHONPATH=. python benchmarks/finite_width.py

The library's ``sigma_w2`` is the weight variance times fan-in (He = 2); the naive baselines are
written in Burkholz & Dubatovka's per-weight variance ``sw = sigma_w2 / N``.

1. ``relu_eigenvalue`` (log space, Stirling-difference Gamma ratios) against the naive float sum
   ``0.5^(N+m+1) sum C(N,k) Gamma(k/2-m-1)/Gamma(k/2)`` (overflows beyond N ~ 1000) and against
   direct quadrature of the defining integral.
2. ``discretize_operator`` (chi-square mixture CDF by the incomplete-gamma recurrence) against one
   ``scipy.special.gammainc`` call per binomial term.
3. ``cosine_similarity_samples`` (chunked NumPy) for 10^6 repeats against a per-repeat Python loop.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np
from scipy import integrate, special, stats

from meanfield import finite_width as fw


def _time(f: Callable[[], object], repeat: int = 3) -> float:
    best = math.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t0)
    return best


def bench_eigenvalue() -> None:
    m = np.linspace(-6, -0.6, 200)
    for n in (20, 1000):
        sw = 2.0 / n

        def naive():
            k = np.arange(1, n + 1)
            with np.errstate(all="ignore"):
                return np.array(
                    [
                        0.5 ** (n + mm + 1)
                        * sw ** (-(mm + 1))
                        * np.sum(special.comb(n, k) * special.gamma(k / 2 - mm - 1) / special.gamma(k / 2))
                        for mm in m
                    ]
                )

        t_fast = _time(lambda: fw.relu_eigenvalue(m, n, 2.0))
        t_naive = _time(naive)
        ok = np.isfinite(naive()).all()
        print(
            f"relu_eigenvalue, N={n:5d}, 200 m: {t_fast * 1e3:8.2f} ms; naive float sum {t_naive * 1e3:8.2f} ms "
            f"(ratio {t_naive / t_fast:6.2f}; naive finite: {ok})"
        )
    t_big = _time(lambda: fw.relu_eigenvalue(m, 100_000, 2.0), repeat=1)
    print(
        f"relu_eigenvalue, N=100000, 200 m: {t_big:.2f} s, lambda_-1 - 1 = {fw.relu_eigenvalue(-1.0, 100_000, 2.0) - 1:.2e}"
    )
    n, sw, mm, z = 20, 0.1, -1.5, 1.0

    def quad():
        s = lambda y: sw * y  # noqa: E731

        def f(y):
            return sum(math.comb(n, k) * 0.5**n * stats.chi2.pdf(z / s(y), k) / s(y) for k in range(1, n + 1)) * y**mm

        return integrate.quad(f, 0, np.inf, limit=500)[0]

    t_q = _time(quad, repeat=1)
    t_1 = _time(lambda: fw.relu_eigenvalue(mm, n, sw * n))
    print(f"one eigenvalue N=20: closed form {t_1 * 1e6:.0f} us, quadrature {t_q * 1e3:.0f} ms (ratio {t_q / t_1:.0f})")


def bench_operator() -> None:
    n, sw = 200, 0.01  # He: sigma_w2 = sw * n = 2
    grid = np.linspace(0, 60, 301)
    t_fast = _time(lambda: fw.discretize_operator(grid, n, sw * n, nodes_per_cell=2), repeat=2)
    # the same 2 Gauss-Legendre source points per cell as discretize_operator, plus the atom's column
    x_gl = np.polynomial.legendre.leggauss(2)[0]
    a, b = grid[:-1, None], grid[1:, None]
    y = np.concatenate([[0.0], (0.5 * (a + b) + 0.5 * (b - a) * x_gl[None, :]).reshape(-1)])

    def naive():
        s = sw * y
        x = grid[None, :] / np.where(s > 0, s, 1)[:, None]
        k = np.arange(1, n + 1)
        logw = stats.binom.logpmf(k, n, 0.5)
        keep = logw > logw.max() - 69.0  # the terms the library keeps (weights above 1e-30 of the largest)
        return sum(np.exp(lw) * special.gammainc(kk / 2, x / 2) for kk, lw in zip(k[keep], logw[keep]))

    t_naive = _time(naive, repeat=1)
    print(
        f"discretize_operator N=200, 301 edges x 601 sources: {t_fast:.2f} s; per-term gammainc CDFs alone {t_naive:.2f} s "
        f"(ratio {t_naive / t_fast:.1f})"
    )


def bench_cosine() -> None:
    for n in (100, 200):
        t = _time(lambda: fw.cosine_similarity_samples(n, 0.5, n_samples=1_000_000, rng=0), repeat=1)
        t32 = _time(
            lambda: fw.cosine_similarity_samples(n, 0.5, n_samples=1_000_000, rng=0, dtype=np.float32), repeat=1
        )
        rng = np.random.default_rng(0)
        reps = 2000

        def loop():
            out = []
            for _ in range(reps):
                a = rng.standard_normal(n)
                b = 0.5 * a + math.sqrt(0.75) * rng.standard_normal(n)
                a, b = np.maximum(a, 0), np.maximum(b, 0)
                out.append(a @ b / math.sqrt((a @ a) * (b @ b)))
            return out

        t_loop = _time(loop, repeat=1) * 1_000_000 / reps
        print(
            f"cosine_similarity_samples N={n}, 10^6 repeats: {t:.2f} s (float32 normals: {t32:.2f} s); "
            f"per-repeat loop (extrapolated) {t_loop:.1f} s (ratio {t_loop / t:.1f}, float32 {t_loop / t32:.1f})"
        )


if __name__ == "__main__":
    bench_eigenvalue()
    bench_operator()
    bench_cosine()
