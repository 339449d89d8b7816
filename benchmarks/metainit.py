"""Cost of one MetaInit step (a script, not a test).

    PYTHONPATH=. python benchmarks/metainit.py

Setting of Grzejdziak's Fig. 1: width 10, depth 100 plus a 10-class read-out (101 matrices, the first
64 -> 10), ReLU, batch 32, cross-entropy on random labels, zero biases counted in the GQ.
Prints, measured in one run (interleaved, best of :data:`REPEATS`; CPU time, because the shared
2-core machine's load changes the wall time by a factor 2-3):

1. the exact meta-gradient :func:`meanfield.init.gradient_quotient_gradient` (forward, backward,
   three R-operator passes, one second-order pass), one network per call, and 32 networks stacked;
2. the naive baseline: ``dGQ / d log|W_l|`` by central finite differences of ``GQ`` over the 101
   norms (202 GQ evaluations per step, each a forward, a backward and one Hessian-vector
   product), the 202 perturbed networks stacked into one vectorised evaluation;
3. the fraction of the 101 signs (all signSGD uses) on which the two agree, and the projected CPU
   time of a 500-step MetaInit per network.
"""

from __future__ import annotations

import os
import time

import numpy as np

from meanfield.init import gradient_quotient, gradient_quotient_gradient

REPEATS = 3
WIDTHS = [64] + [10] * 101
STEPS = {"exact_1": 10, "exact_32": 3, "fd": 1}


def _weights(k, rng):
    return [rng.standard_normal((k, o, i)) * np.sqrt(2.0 / i) for i, o in zip(WIDTHS[:-1], WIDTHS[1:])]


def _batch(rng, k):
    """Standard-normal inputs (k, 32, n_0) and uniform labels (k, 32), as MetaInit draws them."""
    return rng.standard_normal((k, 32, WIDTHS[0])), rng.integers(0, WIDTHS[-1], size=(k, 32))


def exact(ws, batches):
    return [gradient_quotient_gradient(ws, x, t, 0.0, eps=1e-5, biases=True).norm_gradient for x, t in batches]


def finite_differences(ws, batches, h=1e-6):
    """Central differences of GQ in log|W_l| (single network): all 2L perturbed copies stacked."""
    n = len(ws)
    out = []
    for x, t in batches:
        stacked = []
        for k, w in enumerate(ws):
            f = np.ones((2 * n, 1, 1))
            f[2 * k], f[2 * k + 1] = 1.0 + h, 1.0 - h
            stacked.append(np.repeat(w, 2 * n, axis=0) * f)
        gq = gradient_quotient(
            stacked, np.repeat(x, 2 * n, axis=0), np.repeat(t, 2 * n, axis=0), 0.0, eps=1e-5, biases=True
        )
        out.append(((gq[0::2] - gq[1::2]) / (2 * h))[None])
    return out


def main():
    print(
        f"cores visible: {os.cpu_count()}, load average: {os.getloadavg()[0]:.1f} (CPU time, best of {REPEATS}, interleaved)"
    )
    rng = np.random.default_rng(0)
    one, many = _weights(1, rng), _weights(32, rng)
    b1 = [_batch(rng, 1) for _ in range(STEPS["exact_1"])]
    b32 = [_batch(rng, 32) for _ in range(STEPS["exact_32"])]
    methods = {
        "exact_1": (lambda: exact(one, b1), STEPS["exact_1"]),
        "exact_32": (lambda: exact(many, b32), 32 * STEPS["exact_32"]),
        "fd": (lambda: finite_differences(one, b1[: STEPS["fd"]]), STEPS["fd"]),
    }
    best = {k: float("inf") for k in methods}
    for _ in range(REPEATS):
        for k, (fn, _) in methods.items():
            t0 = time.process_time()
            fn()
            best[k] = min(best[k], time.process_time() - t0)
    per = {k: best[k] / methods[k][1] for k in methods}
    labels = {
        "exact_1": "exact meta-gradient, one network per call",
        "exact_32": "exact meta-gradient, 32 networks stacked",
        "fd": "finite differences over the 101 norms (202 GQ evaluations, stacked)",
    }
    print("MetaInit step, width 10, depth 100 + read-out, batch 32 (CPU ms per network-step):")
    for k in methods:
        ratio = "(baseline)" if k == "fd" else f"x{per['fd'] / per[k]:.0f} faster than finite differences"
        print(f"  {labels[k]:70s} {per[k] * 1e3:9.2f} ms   {ratio}")
    print(f"  stacking 32 networks: x{per['exact_1'] / per['exact_32']:.1f} per network over one per call")
    ex = exact(one, b1[:1])[0][0]
    fd = finite_differences(one, b1[:1])[0][0]
    print(
        f"  signs of dGQ/d|W_l| equal in {np.mean(np.sign(ex) == np.sign(fd)):.3f} of the 101 layers; "
        f"median relative difference {np.median(np.abs(fd - ex) / np.abs(ex)):.1e}"
    )
    print(
        f"  projected CPU time of 500 steps per network: exact stacked {500 * per['exact_32']:.1f} s, "
        f"one per call {500 * per['exact_1']:.1f} s, finite differences {500 * per['fd']:.0f} s"
    )


if __name__ == "__main__":
    main()
