"""Monte-Carlo simulators on NumPy against PyTorch (CPU, or CUDA where visible), measured in one run.

Each simulator runs the same problem on ``numpy`` and on ``torch`` (and ``cupy`` when it can be
imported), alternating backends over ``--repeats`` rounds after one warm-up call each, and the
script prints the median seconds per call and the ratio ``t_backend / t_numpy`` (> 1: slower than
NumPy). PyTorch runs with ``--torch-threads`` threads (default 1: on a shared CPU its thread pool
spins).

    python benchmarks/bench_backends.py [--repeats 3] [--torch-threads 1] [--only conv jacobian]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

from meanfield import simulate as S
from meanfield.backend import available_backends

X = np.random.default_rng(0).standard_normal((3, 64))
POOL = np.random.default_rng(1).standard_normal((64, 32))
DATA = np.random.default_rng(2).standard_normal((128, 16))
X2D = np.random.default_rng(3).standard_normal((2, 6, 6, 3))
XLL = np.random.default_rng(4).standard_normal((8, 8, 8, 16))
X1D = np.random.default_rng(5).standard_normal((2, 8, 4))


def _conv_pair_moments(*args, **kwargs):
    from meanfield.validation.kurtosis_conv import conv_pair_moments

    return conv_pair_moments(*args, **kwargs)


def _simulate_multi_input(*args, **kwargs):
    from meanfield.validation.conv_inputs import simulate_multi_input

    return simulate_multi_input(*args, **kwargs)


#: name -> callable(backend): one simulator call of a size that takes ~0.1-1 s on NumPy
CASES = {
    "dense": lambda b: S.simulate_dense(X, "tanh", 1.5, 0.05, 20, 256, 64, gradients=True, backend=b, rng=0),
    "conv": lambda b: S.simulate_conv(
        np.eye(16),
        "tanh",
        1.5,
        0.05,
        np.full(3, 1 / 3),
        10,
        64,
        16,
        init="orthogonal",
        gradients=True,
        backend=b,
        rng=0,
    ),
    "finite_width": lambda b: S.simulate_squared_norms(POOL, [(128, 2 / 128, 0.0)] * 10, 200, 8, backend=b, rng=0),
    "jacobian": lambda b: S.jacobian_singular_values(
        "tanh", 1.05, 0.01, 20, 128, 8, "orthogonal", q=0.5, backend=b, rng=0
    ),
    "conv_jacobian": lambda b: S.conv_jacobian_singular_values(
        "tanh", 1.05, 0.01, 10, 16, 16, 4, "orthogonal", q=0.5, backend=b, rng=0
    ),
    "ntk": lambda b: S.empirical_ntk(X, "tanh", 1.5, 0.05, 3, 256, 32, backend=b, rng=0),
    "layer_moments": lambda b: S.layer_moments([256] * 20, 0.1, "gaussian", 64, backend=b, rng=0),
    "empirical_variances": lambda b: S.empirical_variances(
        DATA, "he", 50, 32, 64, backend=b, rng=0, dtype="float64", engine="blas"
    ),
    # ported to the backend namespace
    "residual_moments": lambda b: S.simulate_residual_moments(64, 10, 1500, 0.0, backend=b, rng=0),
    "conv_moments": lambda b: S.simulate_conv_moments(8, 3, 32, 6, 4000, backend=b, rng=0),
    "conv_pair_moments": lambda b: _conv_pair_moments(20_000, rng=0, backend=b),
    "conv2d_jacobian": lambda b: S.conv2d_jacobian_singular_values(
        "tanh", 1.05, 0.01, 6, 8, (6, 6), 4, "orthogonal", q=0.5, backend=b, rng=0
    ),
    "cnn_ntk_2d": lambda b: S.empirical_periodic_cnn_ntk(
        X2D, "tanh", 1.5, 0.05, np.full((3, 3), 1 / 9), 2, 32, 8, position=(2, 2), backend=b, rng=0
    ),
    "looks_linear": lambda b: S.looks_linear_delta_orthogonal_forward(XLL, 50, 32, (3, 3), rng=0, backend=b),
    "multi_input": lambda b: _simulate_multi_input(
        X1D, "tanh", 1.8, 0.05, (0.25, 0.5, 0.25), 3, 64, 40, rng=0, backend=b
    ),
}


def main() -> None:
    os.environ.setdefault("MEANFIELD_NO_PROGRESS", "1")
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--torch-threads", type=int, default=1)
    p.add_argument("--only", nargs="*", default=None, choices=sorted(CASES))
    args = p.parse_args()
    backends = [b for b in available_backends() if b in ("numpy", "torch", "cupy")]
    if "torch" in backends:
        import torch

        torch.set_num_threads(args.torch_threads)
        device = "cuda" if torch.cuda.is_available() else "cpu"
        print(f"torch {torch.__version__} on {device}, {torch.get_num_threads()} thread(s)")
    print(f"backends: {', '.join(backends)}; median of {args.repeats} alternating rounds after a warm-up call")
    print(f"load average at start: {' '.join(f'{v:.2f}' for v in os.getloadavg())} (CPU time in brackets)")
    header = f"{'simulator':<22}" + "".join(f"{b + ' s':>12}" for b in backends)
    print(header + "".join(f"{b + '/numpy':>14}" for b in backends[1:]))
    for name in args.only or CASES:
        f = CASES[name]
        times = {b: [] for b in backends}
        cpu = {b: [] for b in backends}
        for b in backends:
            f(b)  # warm-up: Numba compilation, torch kernels
        for _ in range(args.repeats):
            for b in backends:
                t0, c0 = time.perf_counter(), time.process_time()
                f(b)
                times[b].append(time.perf_counter() - t0)
                cpu[b].append(time.process_time() - c0)
        med = {b: statistics.median(t) for b, t in times.items()}
        med_cpu = {b: statistics.median(t) for b, t in cpu.items()}
        row = f"{name:<22}" + "".join(f"{med[b]:>12.3f}" for b in backends)
        row += "".join(f"{med[b] / med['numpy']:>14.2f}" for b in backends[1:])
        cpu_ratios = "".join(f" {med_cpu[b] / max(med_cpu['numpy'], 1e-9):.2f}" for b in backends[1:])
        print(row + f"   [cpu s: {' '.join(f'{med_cpu[b]:.3f}' for b in backends)}; ratio{cpu_ratios}]", flush=True)
    print(f"load average at end: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
