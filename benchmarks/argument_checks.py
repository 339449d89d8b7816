"""Cost of the argument checks added for the public-API fuzzer (tests/fuzz/), measured against the
work they guard: ``softmax_xent``'s logits / labels checks against the unchecked arithmetic and
against one full-batch gradient step of a NumPy ConstNet (forward, loss, backward, update; the
removed ``simulators.train``'s step, rewritten here).

Run: ``PYTHONPATH=. python benchmarks/argument_checks.py`` (prints measured ratios; not a test).
"""

from __future__ import annotations

import functools
import time

import numpy as np
import timing
from workloads import gd_steps

from meanfield.simulate import ConstNet, softmax_xent

best_of = functools.partial(timing.best_of, repeat=5, number=200)


def _softmax_xent_unchecked(logits, labels):
    """The arithmetic of softmax_xent without its checks (the code before the fuzzer)."""
    z = logits - logits.max(axis=1, keepdims=True)
    p = np.exp(z)
    p /= p.sum(axis=1, keepdims=True)
    n = logits.shape[0]
    loss = float(-np.log(p[np.arange(n), labels] + 1e-300).mean())
    g = p.copy()
    g[np.arange(n), labels] -= 1.0
    return loss, g / n


def main():
    rng = np.random.default_rng(0)
    added = {}
    print("== softmax_xent: checks (finite real logits, integer labels in range) vs arithmetic ==")
    for batch, classes in ((32, 10), (256, 10), (1797, 10)):
        logits = rng.standard_normal((batch, classes))
        labels = rng.integers(0, classes, batch)
        t_checked = best_of(lambda: softmax_xent(logits, labels))
        t_raw = best_of(lambda: _softmax_xent_unchecked(logits, labels))
        added[batch] = t_checked - t_raw
        print(
            f"batch {batch:5d} x {classes}: checked {t_checked * 1e6:8.1f} us, unchecked {t_raw * 1e6:8.1f} us, "
            f"ratio {t_checked / t_raw:.2f}"
        )

    print("== a gradient step (ConstNet widths (4, 8), 1-D 16 positions, batch 32): a step vs its softmax checks ==")
    x = rng.standard_normal((32, 16, 3))
    y = rng.integers(0, 10, 32)
    steps = 20
    t0 = time.perf_counter()
    gd_steps(ConstNet.initial((4, 8), 1, 3, 10, kernel_shape=(3,), stride=1), x, y, steps)
    t_train = (time.perf_counter() - t0) / steps
    t_check = added[32]  # measured above at the same batch and number of classes
    print(
        f"one step {t_train * 1e3:.2f} ms; added checks per step {max(t_check, 0.0) * 1e6:.1f} us "
        f"(ratio {max(t_check, 0.0) / t_train:.4f} of a step)"
    )


if __name__ == "__main__":
    main()
