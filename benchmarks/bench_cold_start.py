"""First-call (compile) time of every public entry point that reaches Numba, cold and warm cache.

Run ``python benchmarks/bench_cold_start.py [NAME ...]`` (names: the first column below; none = all)
from outside the source tree (e.g. ``cd /tmp``: ``python -c`` puts the current directory first on
``sys.path``). ``--against PATH`` runs every entry point for another tree as well
(``PYTHONPATH=PATH``, e.g. a ``git archive`` of ``main``), interleaved with this one entry by
entry, and prints the ratio of the cold CPU times (this / other).

For each entry point three fresh Python processes run the same call:

* **cold**: ``NUMBA_CACHE_DIR`` set to a new empty temporary directory -- the first call compiles
  every kernel it reaches (what a fresh clone, a CI run or a new user pays);
* **warm**: a second process on the same (now filled) cache directory -- the kernels are loaded
  from disk (what every later process pays);
* the time of a *second* call inside the warm process is printed too (the steady-state cost of
  the call itself, so ``warm - steady`` is the cache-loading overhead).

Targets: cold <= 5 s, warm <= 0.5 s of cache loading (the warm first call minus the steady
second one: a call that itself computes for seconds, such as a 2,000-point Jacobian spectrum, pays
that in every process and is not a loading cost). Compilation is single-threaded, so the process's
CPU time of the first call (``time.process_time``) is what the call costs on an idle core; the wall
time is printed beside it, with the machine's 1-minute load average (the benchmarks share 2 cores
with other jobs; wall times scale with the load).
``import meanfield`` itself is excluded from every time (it compiles nothing).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

#: Setups of the data-set kernels: 6 inputs of 4 features, or of 10 positions x 3 channels.
_DENSE_INPUTS = (
    "from meanfield import kernels; import numpy as np; xs = np.random.default_rng(0).standard_normal((6, 4))"
)
_CONV_INPUTS = (
    "from meanfield import kernels; import numpy as np; xs = np.random.default_rng(0).standard_normal((6, 10, 3))"
)

#: name -> call, for the entry points whose setup only imports the call's module (``from meanfield import dense``).
_PLAIN = {
    "gaussian.expectation": "gaussian.expectation('tanh', 0.7, (1, 1))",
    "gaussian.pair_expectation": "gaussian.pair_expectation('tanh', 0.7, 1.1, 0.3)",
    "gaussian.variance_derivative": "gaussian.variance_derivative('tanh', 0.7)",
    "dense.qmap": "dense.qmap(0.7, 'tanh', 1.5, 0.05)",
    "dense.cmap": "dense.cmap(0.3, 'tanh', 1.5, 0.05)",
    "dense.covariance_map": "dense.covariance_map(cov, 'tanh', 1.5, 0.05)",
    "dense.propagate": "dense.propagate(cov, 'tanh', 1.5, 0.05, 5)",
    "dense.propagate(erf)": "dense.propagate(cov, 'erf', 1.5, 0.05, 5)",
    "dense.propagate(softplus)": "dense.propagate(cov, 'softplus', 1.5, 0.05, 5)",
    "dense.fixed_point": "dense.fixed_point('tanh', 1.5, 0.05)",
    "dense.fixed_point(erf)": "dense.fixed_point('erf', 1.5, 0.05)",
    "dense.covariance_map(erf)": "dense.covariance_map(cov, 'erf', 1.5, 0.05)",
    "dense.phase_diagram": "dense.phase_diagram('tanh', [1.0, 2.0], [0.0, 0.1])",
    "dense.critical_sigma_w2": "dense.critical_sigma_w2('tanh', 0.05)",
    "dense.backward_variance": "dense.backward_variance(1.0, 'tanh', 1.5, 0.05, 5)",
    "ntk.propagate_ntk": "ntk.propagate_ntk(cov, 'tanh', 1.5, 0.05, 5)",
    "ntk.ntk_fixed_point": "ntk.ntk_fixed_point('tanh', 1.5, 0.05)",
    "mehler.propagate_mehler": "mehler.propagate_mehler(cov, 'tanh', 1.5, 0.05, 5, ntk=True)",
    "spectra.jacobian_spectrum": "spectra.jacobian_spectrum('tanh', 1.5, 0.05, 5)",
    "spectra.spectrum_moments": "spectra.spectrum_moments('tanh', 1.5, 0.05, 5)",
    "dense.propagate_log": "dense.propagate_log(cov, 'tanh', 1.5, 0.05, 5)",
    "dense.derivative_covariance_map": "dense.derivative_covariance_map(cov, 'tanh', 1.5)",
    "kernels.quadrature_layer_maps": "kernels.quadrature_layer_maps('tanh', [0.5, 1.0], [0.7, 1.2], [0.1, 0.9])",
    "kernels.closed_layer_maps": "kernels.closed_layer_maps('erf', [0.5, 1.0], [0.7, 1.2], [0.1, 0.9])",
}

#: name -> (setup, call): the setup runs before the clock starts, the call is timed twice.
ENTRY_POINTS = {
    **{name: (f"from meanfield import {call.split('.')[0]}", call) for name, call in _PLAIN.items()},
    "activation.phi": ("from meanfield.activations import get_activation; a = get_activation('tanh')", "a.phi(x1)"),
    "conv.propagate": (
        "from meanfield import conv; import numpy as np; c0 = 0.5 * np.eye(4) + 0.5",
        "conv.propagate(c0, 'tanh', 1.5, 0.05, np.full(3, 1 / 3), 5)",
    ),
    "conv.depth_scales": (
        "from meanfield import conv; import numpy as np",
        "conv.depth_scales('tanh', 1.5, 0.05, np.full(3, 1 / 3), (8,))",
    ),
    "kernels.dense_kernels(tanh)": (_DENSE_INPUTS, "kernels.dense_kernels(xs, None, 'tanh', 1.5, 0.05, 3)"),
    "kernels.conv_kernels": (_CONV_INPUTS, "kernels.conv_kernels(xs, None, 'erf', 1.5, 0.1, np.full(3, 1 / 3), 3)"),
    "kernels.dense_kernels(erf)": (_DENSE_INPUTS, "kernels.dense_kernels(xs, None, 'erf', 1.5, 0.05, 3)"),
    "kernels.dense_kernels(relu)": (_DENSE_INPUTS, "kernels.dense_kernels(xs, None, 'relu', 2.0, 0.05, 3)"),
    "kernels.conv_kernels(tanh)": (
        _CONV_INPUTS,
        "kernels.conv_kernels(xs, None, 'tanh', 1.5, 0.1, np.full(3, 1 / 3), 3)",
    ),
    "ntk.propagate_conv_ntk": (
        "from meanfield import conv, ntk; import numpy as np; v = np.full(3, 1 / 3); "
        "c0 = conv.multi_input_covariance(np.random.default_rng(0).standard_normal((2, 4, 1)), 1.5, 0.05, v)",
        "ntk.propagate_conv_ntk(c0, 'tanh', 1.5, 0.05, v, 3)",
    ),
    "ntk.conv_ntk_fixed_point": (
        "from meanfield import ntk; import numpy as np",
        "ntk.conv_ntk_fixed_point('tanh', 1.5, 0.05, np.full(3, 1 / 3), (8,))",
    ),
    "conv.gradient_variance_decay": (
        "from meanfield import conv; import numpy as np; c0 = 0.5 * np.eye(4) + 0.5",
        "conv.gradient_variance_decay(c0, 'tanh', 1.5, 0.05, np.full(3, 1 / 3), 5)",
    ),
    "conv.linearized_decay": (
        "from meanfield import conv; import numpy as np; c0 = 0.01 * (0.5 * np.eye(4) + 0.5)",
        "conv.linearized_decay(c0, 'tanh', 1.5, 0.05, np.full(3, 1 / 3), 4)",
    ),
    "landscape.binary_landscape": (
        "from meanfield import landscape as L; t = L.regression_task(rng=0)",
        "L.binary_landscape('residual', t.inputs, t.targets, n_layers=3)",
    ),
    "landscape.landscape_census": (
        "from meanfield import landscape as L; t = L.regression_task(rng=0)",
        "L.landscape_census('residual', t.inputs, t.targets, n_layers=3)",
    ),
    "simulators.layer_moments": (
        "from meanfield.simulate import layer_moments",
        "layer_moments([4, 4, 4], slope=0.1, n_networks=3, rng=0)",
    ),
    "simulators.empirical_variances": (
        "from meanfield.simulate import empirical_variances; import numpy as np; xs = np.random.default_rng(0).standard_normal((20, 5))",
        "empirical_variances(xs, 'he', depth=4, width=6, n_networks=3, rng=0)",
    ),
}

_TEMPLATE = """
import json, time
import numpy as np
x1 = np.linspace(-2.0, 2.0, 5)
cov = np.array([[1.0, 0.3, 0.1], [0.3, 0.8, 0.2], [0.1, 0.2, 1.2]])
{setup}
_c0, _t0 = time.process_time(), time.perf_counter()
{call}
_c1, _t1 = time.process_time(), time.perf_counter()
{call}
_t2 = time.perf_counter()
print(json.dumps([_t1 - _t0, _t2 - _t1, _c1 - _c0]))
"""


def _run(name: str, cache: str, pythonpath: str | None = None) -> tuple[float, float, float]:
    setup, call = ENTRY_POINTS[name]
    env = dict(os.environ, NUMBA_CACHE_DIR=cache)
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    with tempfile.TemporaryDirectory() as cwd:  # an empty directory: sys.path[0] shadows neither tree
        out = subprocess.run(
            [sys.executable, "-c", _TEMPLATE.format(setup=setup, call=call)],
            capture_output=True,
            text=True,
            env=env,
            cwd=cwd,
        )
    if out.returncode:
        raise RuntimeError(f"{name} failed:\n{out.stderr[-2000:]}")
    first, second, cpu = json.loads(out.stdout.strip().splitlines()[-1])
    return first, second, cpu


def _measure(name: str, pythonpath: str | None = None) -> tuple[float, float, float, float, float]:
    """(cold wall, cold CPU, warm wall, warm CPU, steady) of one entry point in fresh processes."""
    with tempfile.TemporaryDirectory() as cache:
        cold, _, cold_cpu = _run(name, cache, pythonpath)
        warm, steady, warm_cpu = _run(name, cache, pythonpath)
    return cold, cold_cpu, warm, warm_cpu, steady


def main_against(names: list[str], other: str) -> None:
    """This tree and ``other`` (PYTHONPATH) entry by entry, the other first, then this one."""
    other = os.path.abspath(other)
    print(f"load average at start: {os.getloadavg()[0]:.2f}; other tree: PYTHONPATH={other}")
    print(
        f"{'entry point':<28s} {'other: cold CPU':>15s} {'this: cold CPU':>14s} {'ratio':>6s} "
        f"{'other warm':>10s} {'this warm':>9s} {'this cold wall':>14s} {'load':>5s}  (CPU seconds)"
    )
    for name in names:
        load = os.getloadavg()[0]
        theirs = _measure(name, other)
        mine = _measure(name, None)
        flag = "" if mine[1] <= 5.0 and mine[2] - mine[4] <= 0.5 else "  <-- over target"
        print(
            f"{name:<28s} {theirs[1]:15.2f} {mine[1]:14.2f} {mine[1] / theirs[1]:6.2f} {theirs[3]:10.3f} "
            f"{mine[3]:9.3f} {mine[0]:14.2f} {load:5.1f}{flag}",
            flush=True,
        )
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


def main(names: list[str]) -> None:
    if "--against" in names:
        i = names.index("--against")
        other = names[i + 1]
        names = names[:i] + names[i + 2 :]
        unknown = sorted(set(names) - set(ENTRY_POINTS))
        if unknown:
            raise SystemExit(f"unknown entry points {unknown}; known: {sorted(ENTRY_POINTS)}")
        main_against(names or list(ENTRY_POINTS), other)
        return
    names = names or list(ENTRY_POINTS)
    unknown = sorted(set(names) - set(ENTRY_POINTS))
    if unknown:
        raise SystemExit(f"unknown entry points {unknown}; known: {sorted(ENTRY_POINTS)}")
    print(f"load average at start: {os.getloadavg()[0]:.2f} (2-core machine shared with other jobs)")
    print(
        f"{'entry point':<30s} {'cold wall':>9s} {'cold CPU':>9s} {'warm wall':>9s} {'warm CPU':>9s} {'steady':>9s}"
        "  (seconds; target cold CPU <= 5, warm - steady <= 0.5)"
    )
    worst = [0.0, 0.0]
    for name in names:
        cold, cold_cpu, warm, warm_cpu, steady = _measure(name)
        worst = [max(worst[0], cold_cpu), max(worst[1], warm_cpu)]
        flag = "" if cold_cpu <= 5.0 and warm - steady <= 0.5 else "  <-- over target"
        print(f"{name:<30s} {cold:9.2f} {cold_cpu:9.2f} {warm:9.3f} {warm_cpu:9.3f} {steady:9.4f}{flag}", flush=True)
    print(f"worst CPU: cold {worst[0]:.2f} s, warm {worst[1]:.3f} s; load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
