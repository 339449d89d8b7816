"""Accuracy of the elu / selu Gaussian moments against scipy's adaptive quadrature (nested
``scipy.integrate.quad`` with breakpoints at the kinks).

Run: ``python benchmarks/elu_quadrature_accuracy.py``. Prints the worst relative error per
activation and derivative order over q1, q2 in {0.05, 0.3, 1, 4, 16}, c in {-0.6, 0.3, 0.9}.
Before the closed forms (``meanfield.activations._closed_elu``) the library integrated these by
Gauss-Hermite / trapezoid rules, which the kink at u = 0 limits to 1e-5 .. 6e-2 relative; the
closed forms agree to ~1e-15 (``tests/theory/test_closed_forms_elu_gelu.py`` pins ``QUAD_RTOL``).
"""

from __future__ import annotations

import itertools
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import numpy as np
from test_closed_forms import quad_pair

from meanfield.activations import get_activation
from meanfield.gaussian import pair_expectation


def main():
    grid_q = [0.05, 0.3, 1.0, 4.0, 16.0]
    grid_c = [-0.6, 0.3, 0.9]
    t0 = time.perf_counter()
    for act in (get_activation("elu"), get_activation("elu", alpha=0.5), get_activation("selu")):
        for d in ((0, 0), (1, 1)):
            worst = 0.0
            where = None
            for q1, q2, c in itertools.product(grid_q, grid_q, grid_c):
                ref = quad_pair(act, *d, q1, q2, c)
                err = abs(pair_expectation(act, q1, q2, c, d) - ref) / max(abs(ref), 1e-12)
                if err > worst:
                    worst, where = err, (q1, q2, c)
            print(f"{act.name:22s} d={d}  worst relative error {worst:.2e} at (q1, q2, c) = {where}")
    print(f"[{time.perf_counter() - t0:.0f} s]")
    # speed: the closed forms against the library's quadrature of a smooth built-in (softplus, same
    # rules elu used before) on the same 2,000 (q1, q2, c) triples, compiled calls only
    rng = np.random.default_rng(0)
    q1, q2 = rng.uniform(0.05, 16.0, (2, 2000))
    c = rng.uniform(-0.95, 0.95, 2000)
    for name in ("elu", "selu", "gelu", "softplus"):
        pair_expectation(name, q1[:2], q2[:2], c[:2], (1, 1))  # compile
        t = time.perf_counter()
        for d in ((0, 0), (1, 1)):
            pair_expectation(name, q1, q2, c, d)
        per = (time.perf_counter() - t) / 4000
        if name == "elu":
            ref = per
        print(f"{name:9s} {per * 1e6:8.1f} us per bivariate moment  ({per / ref:.2f} x elu)")


if __name__ == "__main__":
    main()
