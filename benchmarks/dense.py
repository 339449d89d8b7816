"""Speed of the dense mean-field engine and the Monte-Carlo simulator.

Run ``python benchmarks/dense.py``. Every number below is measured in this run and printed with
the ratio it is judged by; nothing is timed inside the test suite.

1. ``covariance_map`` (tanh, quadrature) per bivariate expectation against a plain
   ``scipy.integrate.dblquad`` of the same integral.
2. ``propagate`` of 3 inputs through 50 tanh layers (target < 10 ms after compilation), with the
   accuracy of one layer against an independent fine trapezoid rule (target 1e-9), and through 50 erf layers (closed form,
   target < 1 ms).
3. ``phase_diagram`` on a 100 x 100 tanh grid (target < 2 s on 2 cores).
4. Monte-Carlo throughput of ``meanfield.simulate.simulate_dense`` in GFLOP/s and as a fraction of
   NumPy's square matrix-product peak measured in the same run (target >= 50 % at width >= 512).
5. ``import meanfield`` wall time (target < 1 s) and first-call compile time (fresh Numba cache).
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import timing
from scipy import integrate

from meanfield import dense
from meanfield.activations import get_activation

#: Smallest wall time of ``repeat`` calls (after one warm-up call).
best_of = functools.partial(timing.best_of, repeat=5, warm_up=True)


def row(name, value, unit, target=""):
    timing.row(name, value, unit, target, width=58)


def bench_covariance_map():
    q1, q2, c = 0.8, 1.3, 0.4
    s1, s2 = np.sqrt(q1), np.sqrt(q2)
    cov = np.array([[q1, c * s1 * s2], [c * s1 * s2, q2]])

    def dbl():
        det = q1 * q2 * (1 - c * c)
        inv = np.linalg.inv(cov)
        norm = 1.0 / (2 * np.pi * np.sqrt(det))

        def f(u2, u1):
            quad = inv[0, 0] * u1 * u1 + 2 * inv[0, 1] * u1 * u2 + inv[1, 1] * u2 * u2
            return np.tanh(u1) * np.tanh(u2) * norm * np.exp(-0.5 * quad)

        return integrate.dblquad(f, -9 * s1, 9 * s1, -9 * s2, 9 * s2, epsabs=1e-10)[0]

    t0 = time.perf_counter()
    ref = dbl()
    t_dbl = time.perf_counter() - t0
    big = np.kron(np.eye(20), cov) + 1e-3 * np.eye(40)  # 40 x 40 covariance: 820 distinct entries
    t_map = best_of(lambda: dense.covariance_map(big, "tanh", 1.0, 0.0))
    per_entry = t_map / (40 * 41 / 2)
    ours = dense.covariance_map(cov, "tanh", 1.0, 0.0)[0, 1]
    row("covariance_map tanh: time per bivariate expectation", per_entry * 1e6, "us")
    row("dblquad baseline: time per bivariate expectation", t_dbl * 1e6, "us")
    row("  speed-up over dblquad", t_dbl / per_entry, "x")
    row("  |ours - dblquad|", abs(ours - ref), "")


def bench_propagate():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 50))
    cov0 = dense.input_covariance(x, 1.0, 0.0)
    t = best_of(lambda: dense.propagate(cov0, "tanh", 1.5, 0.05, 50), repeat=5)
    ours = dense.propagate(cov0, "tanh", 1.5, 0.05, 50)
    row("propagate 3 inputs x 50 tanh layers", t * 1e3, "ms", "target < 10 ms")
    # accuracy of one layer at the final covariance against the independent fine trapezoid rule of
    # benchmarks/gaussian_accuracy.py (the propagated error is at most ~50 times this, chi_c < 1)
    from gaussian_accuracy import reference

    act = get_activation("tanh")
    sigma = ours[-2]
    err = 0.0
    for a in range(3):
        for b in range(a, 3):
            qa, qb = sigma[a, a], sigma[b, b]
            exact = 1.5 * reference(act, qa, qb, min(1.0, sigma[a, b] / np.sqrt(qa * qb))) + 0.05
            err = max(err, abs(ours[-1, a, b] - exact))
    row("  one layer vs independent fine-grid reference", err, "", "target 1e-9")
    t = best_of(lambda: dense.propagate(cov0, "erf", 1.5, 0.05, 50), repeat=20)
    row("propagate 3 inputs x 50 erf layers (closed form)", t * 1e3, "ms", "target < 1 ms")


def bench_phase_diagram():
    sw = np.linspace(0.1, 4.0, 100)
    sb = np.linspace(0.0, 0.5, 100)
    dense.phase_diagram("tanh", sw[:2], sb[:2])  # compile
    t0 = time.perf_counter()
    dense.phase_diagram("tanh", sw, sb)
    t = time.perf_counter() - t0
    row("phase_diagram tanh 100 x 100 (sigma_w2 0.1-4, sigma_b2 0-0.5)", t, "s", "target < 2 s")


def bench_monte_carlo():
    from meanfield.simulate import simulate_dense

    for n in (512, 1024):
        a = np.random.default_rng(0).standard_normal((n, n))
        t_gemm = best_of(lambda: a @ a, repeat=3)
        peak = 2 * n**3 / t_gemm / 1e9
        row(f"NumPy GEMM peak {n} x {n}", peak, "GFLOP/s")
        for d in (n, 3):
            x = np.random.default_rng(1).standard_normal((d, 64))
            depth, nets = 4, 2
            t = best_of(lambda: simulate_dense(x, "tanh", 1.5, 0.05, depth, n, n_networks=nets, rng=0), repeat=2)
            flops = nets * (depth * 2 * n * n * d + 2 * n * 64 * d + (depth + 1) * 2 * d * d * n)
            rate = flops / t / 1e9
            row(f"simulate_dense width {n}, {d} inputs", rate, "GFLOP/s", f"{100 * rate / peak:.0f}% of GEMM peak")


def bench_startup():
    code = "import time; t=time.perf_counter(); import meanfield; print(time.perf_counter()-t)"
    env = dict(os.environ, PYTHONPATH=os.getcwd() + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    row("import meanfield", float(out.stdout) * 1e3, "ms", "target < 1000 ms")
    with tempfile.TemporaryDirectory() as cache:
        env["NUMBA_CACHE_DIR"] = cache
        code = (
            "import time; from meanfield import dense; t=time.perf_counter(); "
            "dense.propagate([[1.0, 0.3], [0.3, 1.0]], 'tanh', 1.5, 0.05, 3); print(time.perf_counter()-t)"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
        row("first propagate call, empty Numba cache (compile)", float(out.stdout), "s")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
        row("first propagate call, warm Numba cache", float(out.stdout), "s")


if __name__ == "__main__":
    print(f"{'measurement':<58s} {'value':>12s} {'unit':<10s} target")
    bench_startup()
    bench_covariance_map()
    bench_propagate()
    bench_phase_diagram()
    bench_monte_carlo()
