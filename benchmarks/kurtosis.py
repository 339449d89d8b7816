"""Speed of the Grzejdziak 2023 simulations and recursions (a script, not a test).

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

from meanfield import kurtosis
from meanfield.data import load_digits
from meanfield.simulate import empirical_variances

DEPTH, WIDTH = 100, 10


def naive(x: np.ndarray, n_networks: int, rng: int | np.random.Generator | None = 0) -> np.ndarray:
    """One network at a time (the baseline the batched simulator replaces); ``rng`` as ``numpy.random.default_rng``."""
    rng = np.random.default_rng(rng)
    xt = x.T
    out = np.empty((n_networks, DEPTH + 1))
    for k in range(n_networks):
        y = rng.standard_normal((WIDTH, xt.shape[0])) / np.sqrt(xt.shape[0]) @ xt
        out[k, 1] = y.var(ddof=1)
        for l in range(2, DEPTH + 1):
            y = (rng.standard_normal((WIDTH, WIDTH)) * np.sqrt(2.0 / WIDTH)) @ np.maximum(y, 0.0)
            out[k, l] = y.var(ddof=1)
    return out


#: Repetitions per method, interleaved; the best (least disturbed) time is reported, because the
#: shared machine's load changes from second to second.
REPEATS = 3


def main() -> None:
    x = load_digits(standardized=True).x
    n = x.shape[0]
    print(f"cores visible: {os.cpu_count()}, load average: {os.getloadavg()[0]:.1f} (best of {REPEATS}, interleaved)")
    empirical_variances(x[:40], "he", 3, WIDTH, 2, engine="numba")  # compile or load the cache
    nets = {"naive": 10, "blas64": 200, "blas32": 200, "numba": 200}
    methods = {
        "naive": lambda: naive(x, nets["naive"]),
        "blas64": lambda: empirical_variances(x, "he", DEPTH, WIDTH, nets["blas64"], dtype="float64", engine="blas"),
        "blas32": lambda: empirical_variances(x, "he", DEPTH, WIDTH, nets["blas32"], dtype="float32", engine="blas"),
        "numba": lambda: empirical_variances(x, "he", DEPTH, WIDTH, nets["numba"], engine="numba"),
    }
    best = {k: float("inf") for k in methods}
    for _ in range(REPEATS):
        for k, fn in methods.items():
            t0 = time.perf_counter()
            fn()
            best[k] = min(best[k], time.perf_counter() - t0)
    rate = {k: nets[k] * n * DEPTH / best[k] for k in methods}
    labels = {
        "naive": "naive loop over networks (float64)",
        "blas64": "stacked matmul, float64",
        "blas32": "stacked matmul, float32 + renormalisation",
        "numba": "fused Numba kernel, float64 (CPU default)",
    }
    print("Fig. 1 forward pass (width 10, depth 100, 1,797 inputs, He), network x input x layer updates / s:")
    for k in methods:
        print(
            f"  {labels[k]:45s} {rate[k]:10.3g}   ({nets[k]} nets, {best[k]:.2f} s)  x{rate[k] / rate['naive']:.1f} vs naive"
        )
    work = 5 * 10_000 * n * DEPTH
    print(
        "  projected --full fig_1 (5 random initialisers x 10,000 networks): "
        + ", ".join(f"{k} {work / rate[k]:.0f} s" for k in methods)
    )

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
    print(
        f"  meanfield.kurtosis.propagate (scaled, no overflow): {t_prop * 1e3:.1f} ms, log kappa = {res.log_kappa[-1]:.1f}"
    )
    print(f"  NumPy loop of A @ k (overflows to {k[0]}):          {t_np * 1e3:.1f} ms  ratio x{t_np / t_prop:.1f}")


if __name__ == "__main__":
    main()
