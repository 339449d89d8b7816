"""SHA-256 of the outputs of every analytic entry point x every built-in activation.

The cold-start work changes only what Numba compiles (which branches a kernel contains), never the
operations: this script checks that claim bit for bit. Run

    cd /tmp && python /path/to/benchmarks/cold_start_hashes.py [--against PATH]

It evaluates every entry point below for every built-in activation (the parametrised ones with
two parameter values each) on inputs that reach every quadrature regime (Gauss-Hermite, trapezoid,
graded panels: q from 0 to 1e12, c from -1 to 1), and hashes the raw bytes of every result (an
error is hashed by its type and message, so the same error on both sides also matches). With
``--against PATH`` it runs itself a second time in a fresh process with ``PYTHONPATH=PATH`` (e.g. a
``git archive`` of ``main``; started from a temporary directory so that ``sys.path[0]`` does not
shadow it) and reports, per entry point, whether the two digests agree; the exit status is 1 on
any difference.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

from meanfield.activations import ACTIVATIONS

#: The parametrised built-ins at two parameter values each: their defaults and one other.
PARAMETERS = {
    "leaky_relu": ({}, {"slope": 0.3}),
    "rbf": ({}, {"gamma": 1.7}),
    "relu_power": ({}, {"n": 3}),
    "elu": ({}, {"alpha": 0.4}),
}
#: Activation settings: every built-in (in the order of ``ACTIVATIONS``), the parametrised ones at
#: their :data:`PARAMETERS`, the others at their defaults.
SETTINGS = [(name, params) for name in ACTIVATIONS for params in PARAMETERS.get(name, ({},))]
Q = np.array([0.0, 1e-3, 0.2, 1.0, 4.0, 30.0, 1e4, 1e12])
C = np.array([-1.0, -0.9, 0.0, 0.5, 0.99, 1.0])
ORDERS = [(0, 0), (0, 1), (1, 1), (0, 2), (1, 2), (2, 2)]
VARIANCES = [(0.5, 0.0), (1.5, 0.05), (2.0, 0.3), (4.0, 1.0)]


def _entries(act):
    """name -> zero-argument callable, for one activation."""
    import meanfield.conv as conv
    import meanfield.dense as dense
    import meanfield.gaussian as g
    import meanfield.kernels as kernels
    import meanfield.spectra as spectra

    qq, cc = np.meshgrid(Q[1:7], C, indexing="ij")
    cov3 = np.array([[1.0, 0.3, 0.1], [0.3, 0.8, 0.2], [0.1, 0.2, 1.2]])
    covs = np.stack([cov3 * s for s in (1e-3, 0.5, 1.0, 9.0, 1e4)])
    v3 = np.full(3, 1 / 3)
    c0 = 0.5 * np.eye(4) + 0.5
    xs = np.random.default_rng(0).standard_normal((5, 4))
    xc = np.random.default_rng(1).standard_normal((4, 6, 2))
    out = {}
    for d in ORDERS:
        out[f"gaussian.expectation{d}"] = lambda d=d: g.expectation(act, Q, d)
        out[f"gaussian.pair_expectation{d}"] = lambda d=d: g.pair_expectation(act, qq, qq[::-1], cc, d)
    out["gaussian.pair_expectation(q1!=q2)"] = lambda: g.pair_expectation(act, qq, 2.5 * qq + 0.1, cc)
    out["gaussian.variance_derivative"] = lambda: g.variance_derivative(act, Q)
    for sw, sb in VARIANCES:
        tag = f"({sw},{sb})"
        out[f"dense.qmap{tag}"] = lambda sw=sw, sb=sb: dense.qmap(Q, act, sw, sb)
        out[f"dense.cmap{tag}"] = lambda sw=sw, sb=sb: dense.cmap(C, act, sw, sb, q=0.7)
        out[f"dense.cmap(q*){tag}"] = lambda sw=sw, sb=sb: dense.cmap(C, act, sw, sb)
        out[f"dense.covariance_map{tag}"] = lambda sw=sw, sb=sb: dense.covariance_map(covs, act, sw, sb)
        out[f"dense.derivative_covariance_map{tag}"] = lambda sw=sw: dense.derivative_covariance_map(covs, act, sw)
        out[f"dense.propagate{tag}"] = lambda sw=sw, sb=sb: dense.propagate(cov3, act, sw, sb, 12)
        out[f"dense.propagate_log{tag}"] = lambda sw=sw, sb=sb: dense.propagate_log(cov3 * 1e6, act, sw, sb, 40)
        out[f"dense.fixed_point{tag}"] = lambda sw=sw, sb=sb: dense.fixed_point(act, sw, sb)
        out[f"dense.backward_variance{tag}"] = lambda sw=sw, sb=sb: dense.backward_variance(1.3, act, sw, sb, 8)
        out[f"conv.propagate{tag}"] = lambda sw=sw, sb=sb: conv.propagate(c0, act, sw, sb, v3, 6)
        out[f"conv.covariance_map{tag}"] = lambda sw=sw, sb=sb: conv.covariance_map(c0, act, sw, sb, v3)
        out[f"conv.depth_scales{tag}"] = lambda sw=sw, sb=sb: conv.depth_scales(act, sw, sb, v3, (6,))
        out[f"conv.linearized_decay{tag}"] = lambda sw=sw, sb=sb: conv.linearized_decay(0.01 * c0, act, sw, sb, v3, 4)
    out["dense.phase_diagram"] = lambda: dense.phase_diagram(act, [0.5, 1.5, 3.0], [0.0, 0.05, 0.5])
    out["dense.critical_sigma_w2"] = lambda: dense.critical_sigma_w2(act, [0.0, 0.05])
    for sw, sb in VARIANCES[1:3]:
        tag = f"({sw},{sb})"
        out[f"spectra.spectrum_moments{tag}"] = lambda sw=sw, sb=sb: spectra.spectrum_moments(act, sw, sb, 6)
        out[f"spectra.jacobian_spectrum{tag}"] = lambda sw=sw, sb=sb: spectra.jacobian_spectrum(
            act, sw, sb, 6, n_points=32, n_atoms=400, accuracy="ignore"
        )
        out[f"kernels.dense_kernels{tag}"] = lambda sw=sw, sb=sb: kernels.dense_kernels(
            xs, xs[:2] + 0.1, act, sw, sb, 5
        )
        out[f"kernels.conv_kernels{tag}"] = lambda sw=sw, sb=sb: kernels.conv_kernels(xc, None, act, sw, sb, v3, 3)
    return out


def _bytes(x) -> bytes:
    """Raw bytes of a result: arrays (dtype, shape, data), dataclasses field by field, scalars by repr."""
    import dataclasses

    if dataclasses.is_dataclass(x):
        return b"".join(f.name.encode() + _bytes(getattr(x, f.name)) for f in dataclasses.fields(x))
    if isinstance(x, np.ndarray):
        a = np.ascontiguousarray(x)
        return str((a.dtype, a.shape)).encode() + a.tobytes()
    if isinstance(x, (float, np.floating)):
        return np.float64(x).tobytes()
    return repr(x).encode()


def digests() -> dict[str, str]:
    """entry point -> SHA-256 over every activation setting (in SETTINGS order); ``"#errors"`` the
    number of calls that raised (of ``"#calls"``), so a run that only hashes errors shows."""
    from meanfield.activations import get_activation

    hashes: dict[str, hashlib._Hash] = {}
    counts = {"#calls": 0, "#errors": 0}
    for name, params in SETTINGS:
        act = get_activation(name, **params)
        for entry, call in _entries(act).items():
            counts["#calls"] += 1
            try:
                data = _bytes(call())
            except (ValueError, TypeError) as exc:  # the same error on both sides matches too
                data = f"{type(exc).__name__}: {exc}".encode()
                counts["#errors"] += 1
            hashes.setdefault(entry, hashlib.sha256()).update(f"{name}{params}".encode() + data)
    return {**{k: h.hexdigest() for k, h in hashes.items()}, **{k: str(v) for k, v in counts.items()}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", help="a source tree (PYTHONPATH) whose digests to compare with")
    parser.add_argument("--json", action="store_true", help="print the digests as JSON (used by --against)")
    args = parser.parse_args()
    import meanfield

    mine = digests()
    if args.json:
        print(json.dumps({"file": meanfield.__file__, "digests": mine}))
        return 0
    total = hashlib.sha256("".join(mine[k] for k in sorted(mine)).encode()).hexdigest()
    print(
        f"this tree: {meanfield.__file__}\n  {len(mine) - 2} entry points x {len(SETTINGS)} activation settings: "
        f"{mine['#calls']} calls, {mine['#errors']} raised (hashed by message)"
    )
    print(f"  overall SHA-256 {total}")
    if not args.against:
        return 0
    env = dict(os.environ, PYTHONPATH=os.path.abspath(args.against))
    with tempfile.TemporaryDirectory() as cwd:
        res = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--json"], cwd=cwd, env=env, capture_output=True, text=True
        )
    if res.returncode:
        raise SystemExit(f"the run against {args.against} failed:\n{res.stderr[-3000:]}")
    theirs = json.loads(res.stdout.strip().splitlines()[-1])
    other = theirs["digests"]
    total_other = hashlib.sha256("".join(other[k] for k in sorted(other)).encode()).hexdigest()
    print(f"other tree: {theirs['file']}\n  overall SHA-256 {total_other}")
    differ = sorted(k for k in set(mine) | set(other) if mine.get(k) != other.get(k))
    for k in differ:
        print(f"  DIFFERS: {k}")
    print("bit-identical" if not differ else f"{len(differ)} of {len(mine)} entry points differ")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
