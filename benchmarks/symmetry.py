"""Speed of the feature-symmetry measures and simulators (Blumenfeld et al. 2020), measured in one run.

    PYTHONPATH=. python benchmarks/symmetry.py

Prints, for each comparison, the time of the library's path, of a baseline, and their ratio:

1. ``forward_correlation`` (O(m p): unit rows, their sum and spread) against the Gram-matrix form
   of eq. 5 (``U U^T``, O(m^2 p) GEMM) and against the literal double loop over pairs (small m);
2. the library's one periodic convolution ``meanfield.init.periodic_conv`` (stacked small products,
   zero taps skipped), which the simulators use, against one flattened tall GEMM (multi-threaded BLAS);
3. one full-batch ConstNet gradient step at depth 12 and 120 (forward + backward + update; the
   step of the removed ``simulators.train``, without its symmetry measures).
"""

from __future__ import annotations

import time

import numpy as np
from timing import best_of
from workloads import gd_steps

from meanfield import symmetry
from meanfield.init import periodic_conv
from meanfield.simulate import ConstNet


def gram_cf(w):
    v = np.moveaxis(w, -2, 0).reshape(w.shape[-2], -1)
    u = v / np.linalg.norm(v, axis=1, keepdims=True)
    g = u @ u.T
    m = len(u)
    return (g.sum() - np.trace(g)) / (m * (m - 1))


def loop_cf(w):
    v = np.moveaxis(w, -2, 0).reshape(w.shape[-2], -1)
    m = len(v)
    total = 0.0
    for i in range(m):
        for j in range(m):
            if i != j:
                total += v[i] @ v[j] / (np.linalg.norm(v[i]) * np.linalg.norm(v[j]))
    return total / (m * (m - 1))


def main():
    rng = np.random.default_rng(0)
    print("== forward_correlation vs Gram matrix (eq. 5) ==")
    for shape in [(3, 3, 64, 64), (3, 3, 640, 640), (1, 1, 4096, 512)]:
        w = rng.standard_normal(shape)
        assert abs(symmetry.forward_correlation(w) - gram_cf(w)) < 1e-10
        t_lib, t_gram = best_of(lambda: symmetry.forward_correlation(w)), best_of(lambda: gram_cf(w))
        print(
            f"  W {shape}: library {t_lib * 1e3:8.2f} ms, Gram {t_gram * 1e3:8.2f} ms, speed-up {t_gram / t_lib:6.1f}x"
        )
    w = rng.standard_normal((3, 3, 64, 16))
    t_lib, t_loop = best_of(lambda: symmetry.forward_correlation(w)), best_of(lambda: loop_cf(w), 1)
    print(
        f"  W (3, 3, 64, 16): library {t_lib * 1e3:.2f} ms, double loop {t_loop * 1e3:.1f} ms, speed-up {t_loop / t_lib:.0f}x"
    )

    print("== meanfield.init.periodic_conv (the simulators' convolution) vs one flattened GEMM ==")

    def flat_conv(x, k):
        out = 0.0
        for i in range(3):
            for j in range(3):
                s = np.roll(x, (1 - i, 1 - j), axis=(1, 2))
                out = out + (s.reshape(-1, x.shape[-1]) @ k[i, j].T).reshape(x.shape[:-1] + (k.shape[-2],))
        return out

    for batch, size, c in [(256, 8, 8), (256, 16, 16), (64, 32, 64)]:
        x = rng.standard_normal((batch, size, size, c))
        k = rng.standard_normal((3, 3, c, c))
        t_lib, t_flat = best_of(lambda: periodic_conv(x, k, 2)), best_of(lambda: flat_conv(x, k))
        print(
            f"  x {x.shape}, k (3,3,{c},{c}): periodic_conv {t_lib * 1e3:7.2f} ms, flat GEMM {t_flat * 1e3:7.2f} ms "
            f"({t_flat / t_lib:4.2f}x)"
        )
        k0 = np.zeros_like(k)
        k0[1, 1] = k[1, 1]
        t_delta = best_of(lambda: periodic_conv(x, k0, 2))
        print(
            f"    delta kernel (LeakyNet / ConstNet init): periodic_conv {t_delta * 1e3:7.2f} ms ({t_lib / t_delta:4.1f}x faster: zero taps skipped)"
        )

    print("== ConstNet full-batch training step (128 digits-size 8x8 images) ==")
    x = rng.standard_normal((128, 8, 8, 1))
    y = rng.integers(0, 10, 128)
    times = {}
    for blocks in (4, 40):
        net = ConstNet.initial((8, 16, 32), blocks, 1, 10)
        t = time.perf_counter()
        gd_steps(net, x, y, 3)
        times[blocks] = (time.perf_counter() - t) / 3
        print(f"  {3 * blocks + 2} convolutions: {times[blocks] * 1e3:.0f} ms per step")
    print(f"  step time ratio (10x depth): {times[40] / times[4]:.1f}x")


if __name__ == "__main__":
    main()
