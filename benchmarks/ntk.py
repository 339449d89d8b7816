"""Speed of the NTK recursion and of the empirical NTKs (meanfield.ntk, simulators.empirical_ntk).

Run ``python benchmarks/ntk.py``. Every number is measured in this run and printed with the ratio
it is judged by; nothing is timed inside the test suite.

1. ``propagate_ntk`` of 16 tanh inputs through 50 layers against ``dense.propagate`` of the same
   covariance (the NTK adds one derivative map per layer: expected ratio ~2).
2. ``empirical_ntk`` by NumPy back-propagation against PyTorch autograd on the same networks
   (4 inputs, depth 3, width 256, 8 networks), when torch is installed.
3. ``propagate_conv_ntk`` (2 inputs x 16 positions, 10 layers) against ``conv.multi_input_propagate``.
"""

from __future__ import annotations

import functools
import importlib.util

import numpy as np
import timing
from timing import row

from meanfield import conv, dense, ntk
from meanfield.data import gaussian_inputs
from meanfield.simulate import empirical_ntk

best_of = functools.partial(timing.best_of, warm_up=True)


def main():
    x = gaussian_inputs(16, 32, q=1.0, c=0.5, rng=0)
    cov0 = dense.input_covariance(x, 1.5, 0.05)
    t_ntk = best_of(lambda: ntk.propagate_ntk(cov0, "tanh", 1.5, 0.05, 50))
    t_cov = best_of(lambda: dense.propagate(cov0, "tanh", 1.5, 0.05, 50))
    row("propagate_ntk, 16 inputs, 50 tanh layers", t_ntk * 1e3, "ms")
    row("dense.propagate, same", t_cov * 1e3, "ms")
    row("  ratio NTK / covariances", t_ntk / t_cov, "x")

    x4 = gaussian_inputs(4, 32, q=1.0, c=0.5, rng=1)
    t_np = best_of(lambda: empirical_ntk(x4, "tanh", 1.5, 0.05, 3, 256, 8, method="numpy", rng=2), repeat=2)
    row("empirical_ntk numpy back-propagation (4 inputs, depth 3, width 256, 8 nets)", t_np, "s")
    if importlib.util.find_spec("torch") is not None:
        t_t = best_of(lambda: empirical_ntk(x4, "tanh", 1.5, 0.05, 3, 256, 8, method="torch", rng=2), repeat=2)
        row("empirical_ntk torch autograd, same networks", t_t, "s")
        row("  ratio torch / numpy", t_t / t_np, "x")

    xc = np.random.default_rng(3).standard_normal((2, 16, 3))
    v = [0.25, 0.5, 0.25]
    c0 = conv.multi_input_covariance(xc, 1.5, 0.05, v)
    t_cn = best_of(lambda: ntk.propagate_conv_ntk(c0, "tanh", 1.5, 0.05, v, 10))
    t_cc = best_of(lambda: conv.multi_input_propagate(c0, "tanh", 1.5, 0.05, v, 10))
    row("propagate_conv_ntk, 2 inputs x 16 positions, 10 layers", t_cn * 1e3, "ms")
    row("conv.multi_input_propagate, same", t_cc * 1e3, "ms")
    row("  ratio NTK / covariances", t_cn / t_cc, "x")


if __name__ == "__main__":
    main()
