"""Speed of the free-probability Jacobian spectra (meanfield.spectra) against Monte-Carlo SVDs.

Run ``python benchmarks/spectra.py``. Every number is measured in this run and printed with the
ratio it is judged by; nothing is timed inside the test suite.

1. ``jacobian_spectrum`` (tanh, critical, orthogonal and Gaussian, depths 4 and 64) at the default
   2000 grid points, and its cost per grid point and per atom of the law of phi'^2.
2. The same spectrum estimated by simulation: SVDs of width-400 network Jacobians
   (``jacobian_singular_values``), 16 networks (6400 eigenvalues); the ratio simulation / theory.
"""

from __future__ import annotations

import time

from timing import row

from meanfield import dense, spectra
from meanfield.simulate import jacobian_singular_values


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def main():
    sb = 1e-4
    sw = float(dense.critical_sigma_w2("tanh", sb))
    spectra.jacobian_spectrum("tanh", sw, sb, 1, "orthogonal", n_points=64, n_atoms=64)  # warm-up
    for law in ("orthogonal", "gaussian"):
        for depth in (4, 64):
            t_th, s = timed(lambda: spectra.jacobian_spectrum("tanh", sw, sb, depth, law))
            t_small, _ = timed(lambda: spectra.jacobian_spectrum("tanh", sw, sb, depth, law, n_atoms=1000))
            t_mc, _ = timed(lambda: jacobian_singular_values("tanh", sw, sb, depth, 400, 16, law, rng=0))
            label = f"{law} L={depth}"
            row(f"{label}: theory, 2000 points x 6000 atoms", t_th, "s")
            row(f"{label}:   per grid point (both passes)", t_th / (1.5 * s.squared_singular_values.size) * 1e3, "ms")
            row(f"{label}:   ratio 6000 atoms / 1000 atoms", t_th / t_small, "x")
            row(f"{label}: simulation, 16 networks of width 400", t_mc, "s")
            row(f"{label}:   ratio simulation / theory", t_mc / t_th, "x")


if __name__ == "__main__":
    main()
