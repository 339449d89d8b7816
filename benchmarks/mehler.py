"""Many-input NNGP / NTK of tanh networks by Mehler's formula against per-pair bivariate quadrature.

Run ``python benchmarks/mehler.py [D] [D_SUBSET]`` (defaults 1000 and 100), or
``python benchmarks/mehler.py --cases [D]`` for the table of item 4. Every number is
measured in this run:

1. ``meanfield.mehler.propagate_mehler`` of D inputs (``gaussian_inputs(D, 32, q=1, c=0.3)``)
   through 10 tanh layers (sigma_w2 = 1.5, sigma_b2 = 0.05), NNGP alone and with the NTK: wall
   time and process CPU time (best of 2, after a warm-up call that compiles and is reported).
2. Its error against direct quadrature on 200 random pairs (a, b), a < b, plus 20 diagonal
   entries: the 2 x 2 sub-covariance of a pair evolves on its own, so ``dense.propagate`` and
   ``ntk.propagate_ntk`` of that 2 x 2 block are the per-pair reference; the error is relative to
   sqrt(Sigma_aa Sigma_bb) (resp. sqrt(Theta_aa Theta_bb)), maximum over layers and pairs.
3. The existing per-pair path (``dense.propagate``, ``ntk.propagate_ntk``) on the first D_SUBSET
   inputs, timed and extrapolated to D by the number of pairs D (D + 1) / 2 -- an extrapolation,
   stated as such (the per-pair cost does not depend on D).
4. ``--cases``: the table of D inputs through 10 tanh layers for three kinds of inputs -- (a) the
   correlation-0.3 Gaussian inputs above, (b) independent 32-dimensional Gaussian inputs
   (``gaussian_inputs(D, 32)``), (c) the first D embedded digits (``meanfield.data.load_digits``,
   raw pixels 0..16: variances near 100 at the first layer, pair correlations up to 0.99), (d) the
   same digits standardised per feature (``standardized=True``) -- each
   through ``propagate_mehler`` and ``kernels.dense_kernels``, NNGP alone and NNGP + NTK: process
   CPU time and wall time of one warm call, the certified per-layer bound, the fallback count, and
   the largest error of ``dense_kernels`` against direct quadrature on 200 random pairs (all
   layers; the per-pair reference as in 2.) next to the bound propagated through depth
   (``PROPAGATED``: 1e-10 per layer, amplified by at most sigma_w2 per later layer); on the
   ``propagate_mehler NNGP`` row, ``(map)``: the largest error of one layer's map on those pairs
   (each layer mapped once by ``dense.covariance_map``), the quantity the certified bound is about.
"""

from __future__ import annotations

import functools
import sys
import time

import numpy as np
import timing

from meanfield import dense, kernels, ntk
from meanfield.data import gaussian_inputs, load_digits
from meanfield.mehler import propagate_mehler

ACT, SW, SB, DEPTH = "tanh", 1.5, 0.05, 10
N_PAIRS, N_DIAG = 200, 20
#: The per-layer bound 1e-10, amplified by at most sigma_w2 max|phi'|^2 = SW per later layer.
PROPAGATED = 1e-10 * sum(SW**k for k in range(DEPTH))


def timed(fn):
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t0, time.process_time() - c0


def best_of(fn, repeat=2):
    best = None
    for _ in range(repeat):
        out, wall, cpu = timed(fn)
        if best is None or wall < best[1]:
            best = (out, wall, cpu)
    return best


row = functools.partial(timing.row, width=66)


def main(d=1000, d_sub=100):
    x = gaussian_inputs(d, 32, q=1.0, c=0.3, rng=0)
    cov0 = dense.input_covariance(x, SW, SB)
    _, wall, _ = timed(lambda: propagate_mehler(cov0[:8, :8], ACT, SW, SB, 2, ntk=True))
    row("first call (compile or load of the cached kernels), 8 inputs", wall, "s")

    nngp, wall, cpu = best_of(lambda: propagate_mehler(cov0, ACT, SW, SB, DEPTH))
    row(f"propagate_mehler NNGP, D = {d}, {DEPTH} layers: wall", wall, "s")
    row("    process CPU time (all threads)", cpu, "s")
    row("    certified per-layer bound (max)", float(nngp.error_bound.max()))
    row("    fallback entries / most terms", nngp.n_fallback, f"/ {nngp.terms}")
    both, wall_ntk, cpu_ntk = best_of(lambda: propagate_mehler(cov0, ACT, SW, SB, DEPTH, ntk=True))
    row(f"propagate_mehler NNGP + NTK, D = {d}: wall", wall_ntk, "s")
    row("    process CPU time (all threads)", cpu_ntk, "s")
    row("    certified per-layer bound (max)", float(both.error_bound.max()))
    row("    fallback entries / most terms", both.n_fallback, f"/ {both.terms}")

    rng = np.random.default_rng(1)
    pairs = []
    while len(pairs) < N_PAIRS:
        a, b = sorted(rng.choice(d, 2, replace=False))
        pairs.append((a, b))
    err_cov = err_ntk = 0.0
    t_ref = 0.0
    for a, b in pairs + [(int(i), int(i)) for i in rng.choice(d, N_DIAG, replace=False)]:
        idx = [a, b] if a != b else [a]
        sub = cov0[np.ix_(idx, idx)]
        t0 = time.perf_counter()
        ref_cov = dense.propagate(sub, ACT, SW, SB, DEPTH)
        ref_ntk = ntk.propagate_ntk(sub, ACT, SW, SB, DEPTH).ntk
        t_ref += time.perf_counter() - t0
        i, j = (0, 1) if a != b else (0, 0)
        for got, ref, e in ((both.cov, ref_cov, "cov"), (both.ntk, ref_ntk, "ntk")):
            scale = np.sqrt(ref[:, i, i] * ref[:, j, j])
            err = float(np.max(np.abs(got[:, a, b] - ref[:, i, j]) / scale))
            if e == "cov":
                err_cov = max(err_cov, err)
            else:
                err_ntk = max(err_ntk, err)
    row(f"max relative error vs direct quadrature, {N_PAIRS} pairs + {N_DIAG} diagonal: NNGP", err_cov)
    row("    NTK", err_ntk)
    assert np.array_equal(nngp.cov, both.cov)

    sub = np.ascontiguousarray(cov0[:d_sub, :d_sub])
    dense.propagate(sub[:4, :4], ACT, SW, SB, DEPTH)  # compile / load outside the timing
    _, wall_sub, _ = timed(lambda: dense.propagate(sub, ACT, SW, SB, DEPTH))
    _, wall_sub_ntk, _ = timed(lambda: ntk.propagate_ntk(sub, ACT, SW, SB, DEPTH))
    factor = d * (d + 1) / (d_sub * (d_sub + 1))
    row(f"dense.propagate, D = {d_sub} (measured)", wall_sub, "s")
    row(f"dense.propagate, D = {d} (extrapolated x {factor:.1f} by pairs)", wall_sub * factor, "s")
    row(f"ntk.propagate_ntk, D = {d_sub} (measured)", wall_sub_ntk, "s")
    row(f"ntk.propagate_ntk, D = {d} (extrapolated by pairs)", wall_sub_ntk * factor, "s")
    row("speed-up NNGP (extrapolated per-pair path / Mehler)", wall_sub * factor / wall, "x")
    row("speed-up NNGP + NTK", wall_sub_ntk * factor / wall_ntk, "x")


def _inputs(case, d):
    if case == "a":
        return gaussian_inputs(d, 32, q=1.0, c=0.3, rng=0)
    if case == "b":
        return gaussian_inputs(d, 32, rng=0)
    return load_digits(d, standardized=case == "d").x


def _pair_errors(x, k, pairs):
    """Largest error of the (depth + 1, D, D) kernels ``k`` against per-pair direct quadrature."""
    cov0 = dense.input_covariance(x, SW, SB)
    err_cov = err_ntk = 0.0
    for a, b in pairs:
        sub = cov0[np.ix_([a, b], [a, b])]
        ref = ntk.propagate_ntk(sub, ACT, SW, SB, DEPTH)
        for got, want, which in ((k.nngp, ref.cov, 0), (k.ntk, ref.ntk, 1)):
            scale = np.sqrt(want[:, 0, 0] * want[:, 1, 1])
            err = float(np.max(np.abs(got[:, a, b] - want[:, 0, 1]) / scale))
            if which == 0:
                err_cov = max(err_cov, err)
            else:
                err_ntk = max(err_ntk, err)
    return err_cov, err_ntk


def _map_errors(r, pairs):
    """Largest error of one layer's map: each layer of ``r`` on a pair, mapped once by the direct
    quadrature of ``dense.covariance_map``, against ``r``'s next layer; relative to
    sigma_w2 sqrt(kappa_aa kappa_bb), the scale of the certified per-layer bound."""
    a, b = np.array(pairs).T
    cov = r.cov[:-1]
    blocks = np.stack([np.stack([cov[:, a, a], cov[:, a, b]], -1), np.stack([cov[:, b, a], cov[:, b, b]], -1)], -2)
    ref = dense.covariance_map(blocks, ACT, SW, SB)
    scale = np.sqrt((ref[..., 0, 0] - SB) * (ref[..., 1, 1] - SB))
    return float(np.max(np.abs(r.cov[1:, a, b] - ref[..., 0, 1]) / scale))


def cases(d=1000):
    """The table of item 4 of the module notes."""
    kernels.dense_kernels(_inputs("a", 8), None, ACT, SW, SB, 2)  # compile / load outside the timing
    print(f"\nD = {d}, {DEPTH} tanh layers, sigma_w2 = {SW}, sigma_b2 = {SB}; bound through depth {PROPAGATED:.2g}")
    print(
        f"{'inputs':<34s} {'call':<24s} {'CPU-s':>7s} {'wall-s':>7s} {'bound':>8s} {'fallback':>8s} {'err NNGP':>9s} {'err NTK':>9s}"
    )
    names = {
        "a": "(a) Gaussian, c = 0.3",
        "b": "(b) Gaussian, independent",
        "c": "(c) digits (raw)",
        "d": "(d) digits (standardised)",
    }
    rng = np.random.default_rng(1)
    for case in ("a", "b", "c", "d"):
        x = _inputs(case, d)
        cov0 = dense.input_covariance(x, SW, SB)
        pairs = []
        while len(pairs) < N_PAIRS:
            a, b = sorted(int(v) for v in rng.choice(d, 2, replace=False))
            pairs.append((a, b))
        for label, fn in (
            ("propagate_mehler NNGP", lambda: propagate_mehler(cov0, ACT, SW, SB, DEPTH)),
            ("propagate_mehler +NTK", lambda: propagate_mehler(cov0, ACT, SW, SB, DEPTH, ntk=True)),
            ("dense_kernels NNGP", lambda: kernels.dense_kernels(x, None, ACT, SW, SB, DEPTH, ntk=False)),
            ("dense_kernels +NTK", lambda: kernels.dense_kernels(x, None, ACT, SW, SB, DEPTH, layers=range(DEPTH + 1))),
        ):
            out, wall, cpu = timed(fn)
            bound = fall = ""
            errs = ("", "")
            if label.startswith("propagate"):
                bound = f"{float(out.error_bound.max()):.1e}"
                fall = str(out.n_fallback)
                if "NTK" not in label:
                    errs = (f"{_map_errors(out, pairs):.1e}", "(map)")
            elif "NTK" in label:
                errs = tuple(f"{e:.1e}" for e in _pair_errors(x, out, pairs))
            print(
                f"{names[case]:<34s} {label:<24s} {cpu:>7.2f} {wall:>7.2f} {bound:>8s} {fall:>8s} {errs[0]:>9s} {errs[1]:>9s}"
            )


if __name__ == "__main__":
    if "--cases" in sys.argv:
        args = [v for v in sys.argv[1:] if v != "--cases"]
        cases(*(int(v) for v in args[:1]))
    else:
        main(*(int(v) for v in sys.argv[1:3]))
