"""Accuracy table of ``meanfield.gaussian.pair_expectation`` (the table in its module docstring).

For each quadrature-backed activation and each variance range q1, q2 in [0.01, q_max], the largest
absolute error of E phi(u1) phi(u2) over a grid of (q1, q2, c) against a reference computed
independently in NumPy: a composite trapezoid rule in u-space with step 1/64 over |z| <= 10 (eight
times finer than the library's, spectrally convergent for the analytic activations; for the
kinked ``hard_tanh`` its O(h^2) error is < 1e-5). Run ``python benchmarks/gaussian_accuracy.py``.
"""

from __future__ import annotations

import itertools

import numpy as np

from meanfield.activations import get_activation
from meanfield.gaussian import pair_expectation

ACTIVATIONS = ["tanh", "sigmoid", "softplus", "swish", "gelu", "hard_tanh"]
Q_MAX = [1.0, 10.0, 100.0]
STEP = 1.0 / 64
Z_MAX = 10.0


def reference(act, q1, q2, c, block=1024):
    """E phi(u1) phi(u2) by a fine tensor trapezoid rule in (z1, z2), evaluated in blocks of z1."""
    s1, s2 = np.sqrt(q1), np.sqrt(q2)
    h = STEP / max(s1, s2, 1.0)
    z = np.arange(-Z_MAX, Z_MAX + h / 2, h)
    w = h * np.exp(-0.5 * z * z) / np.sqrt(2 * np.pi)
    wf1 = w * act.phi(s1 * z)
    r = np.sqrt(1 - c * c)
    total = 0.0
    for i in range(0, z.size, block):
        zi = z[i : i + block, None]
        total += wf1[i : i + block] @ (act.phi(s2 * (c * zi + r * z[None, :])) @ w)
    return float(total)


def table():
    qs = lambda qmax: np.geomspace(0.01, qmax, 3)  # noqa: E731
    cs = [-0.9, -0.3, 0.5, 0.95]
    rows = []
    for name in ACTIVATIONS:
        act = get_activation(name)
        errs = []
        for qmax in Q_MAX:
            worst = 0.0
            for q1, q2, c in itertools.product(qs(qmax), qs(qmax), cs):
                worst = max(worst, abs(float(pair_expectation(act, q1, q2, c)) - reference(act, q1, q2, c)))
            errs.append(worst)
        rows.append((name, errs))
    return rows


if __name__ == "__main__":
    print(f"{'activation':<12s}" + "".join(f"  q_max = {q:<6g}" for q in Q_MAX))
    for name, errs in table():
        print(f"{name:<12s}" + "".join(f"  {e:<14.1e}" for e in errs))
