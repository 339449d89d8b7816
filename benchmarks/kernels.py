"""Data-set NNGP / NTK kernels: meanfield.kernels against neural-tangents, side by side.

Run ``python benchmarks/kernels.py [--quick] [--nt-python PATH]``. Every number is measured in this
run: for each case the median of ``--repeat`` warm calls of each library (compile / jit time is
excluded and reported separately), their ratio, and the fraction of the machine's peak reached by
the closed-form kernel (its floating-point operations per second against a float64 GEMM measured
here). neural-tangents runs in its own interpreter (``--nt-python``, default ``/work/venv-nt/bin/python``
or ``$NT_PYTHON``) as a subprocess, float64 (``jax_enable_x64``), on the same inputs; its numbers
are compared with ours (max relative difference). Without that interpreter its column is skipped
with a message.

Measured on 2 CPU cores, float64, medians of 3 warm calls, one run
(``python benchmarks/kernels.py --repeat 3 --nt-max-work 1.6e8``): D = 1000, 10 erf layers,
NNGP + NTK: meanfield 0.014 s, neural-tangents 0.21 s (15x); 50 erf layers 0.053 s vs 1.04 s;
D = 4000, 10 erf layers NNGP + NTK 0.49 s vs 4.2 s; relu, D = 1000, 50 layers NNGP + NTK 0.13 s vs
10.1 s; 1-D CNN (10 positions, flatten), D = 128, 10 erf layers NNGP + NTK: 0.0097 s vs 0.044 s.
Differences to neural-tangents: below 1.1e-13 relative (erf), 5e-8 (relu NTK: arccos at c near 1).

Cases: D in {128, 1000, 4000} inputs (train/train, D x D), depth 10 and 50, erf and relu (tanh on
the meanfield path only: neural-tangents has no closed form for it), NNGP only and NNGP + NTK, a
dense network and a 1-D periodic CNN with 10 positions (filter 3, uniform ``v``, flatten read-out).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from meanfield import kernels

SW, SB = 1.7, 0.1
N0 = 64  # input dimension (dense); the CNN has 10 positions x 8 channels
P, C0 = 10, 8
V = [1.0 / 3.0] * 3

#: Floating-point operations per pair and layer of the compiled closed forms (counted in
#: meanfield/kernels/_closed.py: _pair, _asin / _acos, _rat; sqrt and divide count 1), NNGP-only / NNGP + NTK.
FLOPS = {("erf", False): 30, ("erf", True): 40, ("relu", False): 45, ("relu", True): 52}

# The neural-tangents side: a small driver run in the other interpreter (our code, not theirs).
_NT_DRIVER = r"""
import json, sys, time
import numpy as np
import jax
jax.config.update("jax_enable_x64", True)
import neural_tangents as nt
from neural_tangents import stax
spec = json.load(open(sys.argv[1]))
x = np.load(spec["x"])
sw, sb = spec["sw"] ** 0.5, spec["sb"] ** 0.5
act = {"erf": stax.Erf, "relu": stax.Relu}[spec["act"]]
if spec["net"] == "dense":
    layers = [stax.Dense(1, W_std=sw, b_std=sb)]
    for _ in range(spec["depth"]):
        layers += [act(), stax.Dense(1, W_std=sw, b_std=sb)]
else:
    layers = [stax.Conv(1, (3,), padding="CIRCULAR", W_std=sw, b_std=sb)]
    for _ in range(spec["depth"]):
        layers += [act(), stax.Conv(1, (3,), padding="CIRCULAR", W_std=sw, b_std=sb)]
    layers += [stax.Flatten()]
_, _, kernel_fn = stax.serial(*layers)
get = ("nngp", "ntk") if spec["ntk"] else ("nngp",)
fn = jax.jit(kernel_fn, static_argnames="get")
t0 = time.perf_counter()
out = fn(x, None, get=get)
jax.block_until_ready(out)
first = time.perf_counter() - t0
times = []
for _ in range(spec["repeat"]):
    t0 = time.perf_counter()
    out = fn(x, None, get=get)
    jax.block_until_ready(out)
    times.append(time.perf_counter() - t0)
np.save(spec["out_nngp"], np.asarray(out[0]))
if spec["ntk"]:
    np.save(spec["out_ntk"], np.asarray(out[1]))
print(json.dumps({"median": float(np.median(times)), "first": first}))
"""


def gemm_peak(n=1500, repeat=3):
    """Measured float64 GEMM rate (flop/s) of this machine: the peak the kernels are judged against."""
    a = np.random.default_rng(0).standard_normal((n, n))
    a @ a
    best = min(_timed(lambda: a @ a) for _ in range(repeat))
    return 2.0 * n**3 / best


def _timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def inputs(net, d):
    rng = np.random.default_rng(d)
    if net == "dense":
        return rng.standard_normal((d, N0))
    return rng.standard_normal((d, P, C0))


def ours(net, x, act, depth, want_ntk):
    if net == "dense":
        return kernels.dense_kernels(x, None, act, SW, SB, depth, ntk=want_ntk)
    return kernels.conv_kernels(x, None, act, SW, SB, V, depth, ntk=want_ntk, readout="flatten")


def run_nt(nt_python, net, x, act, depth, want_ntk, repeat, tmp):
    xs = os.path.join(tmp, "x.npy")
    np.save(xs, x)
    spec = {
        "x": xs, "sw": SW, "sb": SB, "act": act, "net": net, "depth": depth, "ntk": want_ntk, "repeat": repeat,
        "out_nngp": os.path.join(tmp, "nngp.npy"), "out_ntk": os.path.join(tmp, "ntk.npy"),
    }  # fmt: skip
    sp = os.path.join(tmp, "spec.json")
    with open(sp, "w") as f:
        json.dump(spec, f)
    driver = os.path.join(tmp, "driver.py")
    with open(driver, "w") as f:
        f.write(_NT_DRIVER)
    env = dict(os.environ, JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="3")
    res = subprocess.run([nt_python, driver, sp], capture_output=True, text=True, env=env, timeout=1800)
    if res.returncode != 0:
        return None, res.stderr.strip().splitlines()[-1:] or ["failed"]
    stats = json.loads(res.stdout.strip().splitlines()[-1])
    stats["nngp"] = np.load(spec["out_nngp"])
    stats["ntk"] = np.load(spec["out_ntk"]) if want_ntk else None
    return stats, None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="D in {128, 1000}, depth 10 only")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--nt-python", default=os.environ.get("NT_PYTHON", "/work/venv-nt/bin/python"))
    ap.add_argument("--sizes", type=int, nargs="*", default=None)
    ap.add_argument("--nets", nargs="*", default=["dense", "conv"])
    ap.add_argument(
        "--nt-max-work",
        type=float,
        default=4000**2 * 10,
        help="skip neural-tangents where D^2 x depth (x P^2 for the CNN) exceeds this (its run time)",
    )
    args = ap.parse_args(argv)
    sizes = args.sizes or ([128, 1000] if args.quick else [128, 1000, 4000])
    depths = [10] if args.quick else [10, 50]
    have_nt = os.path.exists(args.nt_python)
    if not have_nt:
        print(f"neural-tangents interpreter {args.nt_python} not found: its column is skipped")
    peak = gemm_peak()
    import numba

    print(f"float64 GEMM peak measured: {peak / 1e9:.2f} Gflop/s; numba threads {numba.get_num_threads()}")
    cols = "net    act  D     L   kernels     meanfield_s  nt_s        nt/mf    mf_first_s  frac_peak  max_rel_diff"
    print(cols)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for net in args.nets:
            for act in ("erf", "relu", "tanh"):
                for d in sizes:
                    for depth in depths:
                        for want_ntk in (False, True):
                            if act == "tanh" and (d > 1000 or depth > 10 or net == "conv"):
                                continue  # the quadrature path: slow by design
                            x = inputs(net, d)
                            t0 = time.perf_counter()
                            mine = ours(net, x[: min(d, 8)], act, depth, want_ntk)  # compile (cached) + warm
                            first = time.perf_counter() - t0
                            reps = args.repeat if act != "tanh" else 1
                            times = []
                            for _ in range(reps):
                                t0 = time.perf_counter()
                                mine = ours(net, x, act, depth, want_ntk)
                                times.append(time.perf_counter() - t0)
                            t_mf = float(np.median(times))
                            nt_s, ratio, diff = None, None, None
                            work = d * d * depth * (P * P if net == "conv" else 1)
                            if have_nt and act != "tanh" and work <= args.nt_max_work:
                                stats, err = run_nt(args.nt_python, net, x, act, depth, want_ntk, args.repeat, tmp)
                                if stats is None:
                                    print(f"  neural-tangents failed: {err}")
                                else:
                                    nt_s = stats["median"]
                                    ratio = nt_s / t_mf
                                    diff = float(np.max(np.abs(stats["nngp"] - mine.nngp)) / np.max(np.abs(mine.nngp)))
                                    if want_ntk:
                                        diff = max(
                                            diff,
                                            float(np.max(np.abs(stats["ntk"] - mine.ntk)) / np.max(np.abs(mine.ntk))),
                                        )
                            pairs = (
                                d * (d + 1) / 2 * (P if net == "conv" else 1)
                            )  # the flatten read-out: P maps per pair
                            fl = FLOPS.get((act, want_ntk))
                            frac = (fl * pairs * depth / t_mf) / peak if fl else None
                            kind = "nngp+ntk" if want_ntk else "nngp"
                            line = (
                                f"{net:6s} {act:4s} {d:<5d} {depth:<3d} {kind:11s} {t_mf:<12.4g} "
                                f"{'-' if nt_s is None else f'{nt_s:.4g}':11s} {'-' if ratio is None else f'{ratio:.2f}':8s} "
                                f"{first:<11.3g} {'-' if frac is None else f'{frac:.3f}':10s} {'-' if diff is None else f'{diff:.1e}'}"
                            )
                            print(line, flush=True)
                            rows.append(line)
    return rows


if __name__ == "__main__":
    sys.exit(0 if main() else 1)
