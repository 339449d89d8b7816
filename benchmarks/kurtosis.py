"""Speed of the seed-002 simulations and recursions (a script, not a test).

    PYTHONPATH=. python benchmarks/kurtosis.py

Prints, measured in one run on this machine:

1. the Fig. 1 experiment (width 10, depth 100, ReLU, He weights, the 1,797 digits images):
   network x input x layer updates per second for a naive Python loop over networks (float64,
   one ``W @ relu(y)`` per network and layer), the batched stacked-matmul simulator in float64 and
   in float32, the fused Numba kernel (the CPU default),
   their ratios, and the projected time of the ``--full`` run (10,000 networks, five random
   initialisers + the deterministic ZerO);
2. ``meanfield.kurtosis.propagate`` at depth 10^4 against a NumPy loop of 3 x 3 matrix products.
"""

from __future__ import annotations

import os
import time

import numpy as np

os.environ.setdefault("MEANFIELD_NO_PROGRESS", "1")

from meanfield import kurtosis  # noqa: E402
from meanfield.data import load_digits  # noqa: E402
from validation._kurtosis_networks import empirical_variances  # noqa: E402

DEPTH, WIDTH = 100, 10


def naive(x, n_networks, seed=0):
    """One network at a time (the baseline the batched simulator replaces)."""
    rng = np.random.default_rng(seed)
    xt = x.T
    out = np.empty((n_networks, DEPTH + 1))
    for k in range(n_networks):
        y = rng.standard_normal((WIDTH, xt.shape[0])) / np.sqrt(xt.shape[0]) @ xt
        out[k, 1] = y.var(ddof=1)
        for l in range(2, DEPTH + 1):
            y = (rng.standard_normal((WIDTH, WIDTH)) * np.sqrt(2.0 / WIDTH)) @ np.maximum(y, 0.0)
            out[k, l] = y.var(ddof=1)
    return out


def _rate(fn, n_networks, n_inputs):
    t0 = time.perf_counter()
    fn()
    dt = time.perf_counter() - t0
    return n_networks * n_inputs * DEPTH / dt, dt


def main():
    x = load_digits(standardized=True).x
    n = x.shape[0]
    print(f"cores visible: {os.cpu_count()}, load average: {os.getloadavg()[0]:.1f}")
    r_naive, t_naive = _rate(lambda: naive(x, 20), 20, n)
    r64, t64 = _rate(lambda: empirical_variances(x, "he", DEPTH, WIDTH, 400, dtype="float64", engine="blas"), 400, n)
    r32, t32 = _rate(lambda: empirical_variances(x, "he", DEPTH, WIDTH, 400, dtype="float32", engine="blas"), 400, n)
    t0 = time.perf_counter()
    empirical_variances(x[:40], "he", 3, WIDTH, 2, engine="numba")  # compile or load the cache
    t_compile = time.perf_counter() - t0
    rnb, tnb = _rate(lambda: empirical_variances(x, "he", DEPTH, WIDTH, 400, engine="numba"), 400, n)
    print("Fig. 1 forward pass (width 10, depth 100, 1,797 inputs, He):")
    print(f"  naive loop over networks (float64, 20 nets):  {r_naive:10.3g} net*input*layer/s  ({t_naive:.2f} s)")
    print(f"  batched float64 (400 nets):                   {r64:10.3g} net*input*layer/s  ({t64:.2f} s)  x{r64 / r_naive:.1f}")
    print(f"  batched float32 (400 nets):                   {r32:10.3g} net*input*layer/s  ({t32:.2f} s)  x{r32 / r_naive:.1f}")
    work = 10_000 * n * DEPTH
    print(f"  fused Numba kernel float64 (400 nets):        {rnb:10.3g} net*input*layer/s  ({tnb:.2f} s)  x{rnb / r_naive:.1f}"
          f"  (first call incl. compile/cache load: {t_compile:.1f} s)")
    print(f"  projected --full fig_1 (5 random inits x 10,000 networks): {5 * work / rnb:.0f} s (Numba), {5 * work / r32:.0f} s (BLAS float32)")

    widths = [10] * 10_000
    t0 = time.perf_counter()
    res = kurtosis.propagate(3.0, 0.0, widths)
    t_prop = time.perf_counter() - t0
    a = kurtosis.transition_matrix(10)
    t0 = time.perf_counter()
    k = np.array([3.0, 0.0, 1.0])
    for _ in range(10_000):
        k = a @ k
    t_np = time.perf_counter() - t0
    print("Prop. 4.3 at depth 10^4, width 10:")
    print(f"  meanfield.kurtosis.propagate (scaled, no overflow): {t_prop * 1e3:.1f} ms, log kappa = {res.log_kappa[-1]:.1f}")
    print(f"  NumPy loop of A @ k (overflows to {k[0]}):          {t_np * 1e3:.1f} ms  ratio x{t_np / t_prop:.1f}")


if __name__ == "__main__":
    main()
