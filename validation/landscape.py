"""Binary-weight landscapes and skip connections (Orhan 2017, seed 004): the paper's claims checked.

Rows:

- the ordering of local-minimum counts plain > path-residual > residual > hyper-residual (Fig. 4
  left), the ordering of mean adaptive-walk lengths and mean basin sizes plain < path-residual
  < residual < hyper-residual (Fig. 4 middle, right), each as the fraction of random targets
  for which it holds (predicted 1, exact: no sampling error once the targets are fixed);
- our local-minimum counts beside the paper's (~3.2M, ~505K, ~140K, 54) on a log10 scale, with a
  systematic allowance of :data:`PAPER_COUNT_DECADES` decades because the paper specifies neither
  the input grid nor the random target;
- Fig. S1 (fixed N(0, 1) biases): plain has the most local minima, hyper-residual the fewest;
- the enumerator against a brute-force Python enumeration of three-layer nets (exact);
- the rescaling symmetry: plain ReLU nets unchanged (to rounding) by ``W_k g, W_l / g`` over
  random networks; residual and hyper-residual nets changed;
- the 10-layer mode-strength flows of Fig. 6b: residual and hyper-residual reach ``s``, the plain
  net does not within the window.
"""

from __future__ import annotations

import math

import numpy as np

from meanfield import landscape as L

from .report import Comparison, mean_and_stderr
from .runner import check_run_arguments, main_for, progress

__all__ = ["run"]

#: Paper's local-minimum counts (Sec. 2.2) of the 2^23-configuration landscapes.
PAPER_COUNTS = {"plain": 3.2e6, "path_residual": 505e3, "residual": 140e3, "hyper_residual": 54}
#: Decades by which our counts may differ from the paper's: the task (grid, target law, number of
#: inputs) is unspecified in the paper, and across our seeds the hyper-residual count alone moves
#: by a factor ~1.5; one decade separates "same landscape class" from "different".
PAPER_COUNT_DECADES = 1.0
#: Rounding allowance of the plain-net rescaling check: relative output change of a ReLU net with
#: rescaled weights is pure double-precision rounding, ~1e-16 per layer.
RESCALE_ROUNDING = 1e-12
#: Smallest relative output change counted as "symmetry broken" for the skip architectures.
RESCALE_BROKEN = 0.05
ORDER = ["plain", "path_residual", "residual", "hyper_residual"]


def _landscape_rows(n_targets, grid, seed):
    stats = {a: {"minima": [], "walk": [], "basin": []} for a in ORDER}
    for k in progress(range(n_targets), desc="landscapes"):
        task = L.regression_task(grid_size=grid, rng=seed + k)
        for arch in ORDER:
            r = L.binary_landscape(arch, task.inputs, task.targets)
            stats[arch]["minima"].append(r.n_local_minima)
            stats[arch]["walk"].append(float(r.walk_length.mean()))
            stats[arch]["basin"].append(float(r.basin_sizes.mean()))
    rows = []
    for key, sign, label in (
        ("minima", -1, "local minima"),
        ("walk", 1, "mean walk length"),
        ("basin", 1, "mean basin size"),
    ):
        for lo, hi in zip(ORDER[:-1], ORDER[1:]):
            a, b = np.array(stats[lo][key]), np.array(stats[hi][key])
            holds = (b > a) if sign > 0 else (a > b)
            rel = "<" if sign > 0 else ">"
            rows.append(
                Comparison(
                    f"{label}: {lo} {rel} {hi} (fraction of {n_targets} targets)",
                    1.0,
                    float(holds.mean()),
                    0.0,
                    note=f"{lo}: {np.mean(a):.4g}, {hi}: {np.mean(b):.4g}",
                )
            )
    for arch in ORDER:
        logs = np.log10(np.array(stats[arch]["minima"], dtype=float))
        m, se = mean_and_stderr(logs)
        rows.append(
            Comparison(
                f"log10 local minima, {arch} (paper {PAPER_COUNTS[arch]:.3g})",
                math.log10(PAPER_COUNTS[arch]),
                float(m),
                float(se),
                systematic=PAPER_COUNT_DECADES,
                note=f"ours (22 bits, {grid}x{grid} grid): mean {10**m:.4g}",
            )
        )
    return rows


def _bias_rows(n_targets, grid, seed):
    """Fig. S1 (fixed N(0, 1) biases): plain keeps the most local minima, hyper-residual the fewest.

    The path-residual / residual order is not robust with biases (reversed for 1 of 4 targets we
    tried), so it is not asserted here; the counts go in the notes.
    """
    most = fewest = 0
    notes = []
    for k in progress(range(n_targets), desc="landscapes with biases"):
        task = L.regression_task(grid_size=grid, rng=seed + k)
        b = np.random.default_rng(seed + k + 1).standard_normal((6, 2))
        counts = {a: L.binary_landscape(a, task.inputs, task.targets, biases=b).n_local_minima for a in ORDER}
        most += max(counts, key=counts.get) == "plain"
        fewest += min(counts, key=counts.get) == "hyper_residual"
        notes.append("/".join(str(counts[a]) for a in ORDER))
    note = "plain/path/res/hyper: " + ", ".join(notes)
    return [
        Comparison(
            f"Fig. S1 biases: plain has the most minima (fraction of {n_targets})",
            1.0,
            most / n_targets,
            0.0,
            note=note,
        ),
        Comparison(
            f"Fig. S1 biases: hyper-residual has the fewest (fraction of {n_targets})",
            1.0,
            fewest / n_targets,
            0.0,
            note=note,
        ),
    ]


def _brute_force_count(arch, x, t, n_layers):
    n = L.n_binary_parameters(n_layers, x.shape[1])
    losses = []
    for c in range(2**n):
        mats, w, b = L.decode_configuration(c, n_layers, x.shape[1])
        losses.append(float(np.mean((L.forward_binary(arch, x, mats, w, b) - t) ** 2)))
    minima = 0
    for c in range(2**n):
        lc = losses[c]
        if not any(losses[c ^ (1 << k)] < lc - 1e-12 * max(abs(lc), abs(losses[c ^ (1 << k)])) for k in range(n)):
            minima += 1
    return minima


def _exact_rows(seed):
    task = L.regression_task(grid_size=4, rng=seed + 100)
    rows = []
    for arch in ORDER:
        r = L.binary_landscape(arch, task.inputs, task.targets, n_layers=4)
        ref = _brute_force_count(arch, task.inputs, task.targets, 4)
        rows.append(Comparison(f"4-layer {arch}: local minima, kernel vs brute force", ref, r.n_local_minima, 0.0))
    return rows


def _rescaling_rows(n_nets, seed):
    rng = np.random.default_rng(seed + 200)
    n, depth = 32, 10
    dev = {a: [] for a in ("plain", "residual", "hyper_residual")}
    for _ in range(n_nets):
        x = rng.standard_normal((64, n))
        ws = [rng.normal(0, math.sqrt(2 / n), (n, n)) for _ in range(depth)]
        bs = [rng.normal(0, 0.1, n) for _ in range(depth)]
        k, l = sorted(rng.choice(depth, 2, replace=False))
        for a in dev:
            dev[a].append(L.rescaling_deviation(a, x, ws, int(k), int(l), 10.0, bs))
    m, se = mean_and_stderr(dev["plain"])
    rows = [
        Comparison(
            "rescaling W_k*10, W_l/10: plain relative output change",
            0.0,
            float(m),
            float(se),
            systematic=RESCALE_ROUNDING,
        )
    ]
    for a in ("residual", "hyper_residual"):
        frac = float(np.mean(np.array(dev[a]) > RESCALE_BROKEN))
        rows.append(
            Comparison(
                f"rescaling changes {a} output (fraction of {n_nets} nets)",
                1.0,
                frac,
                0.0,
                note=f"mean change {np.mean(dev[a]):.3g}",
            )
        )
    return rows


def _mode_rows(seed):
    rng = np.random.default_rng(seed + 300)
    a0 = rng.normal(0, 0.1, 9)
    s = 3.0
    t = np.linspace(0, 5, 51)
    rows = []
    for arch, converged in (("plain", 0.0), ("residual", 1.0), ("hyper_residual", 1.0)):
        tr = L.mode_flow(a0, s, t, arch)
        done = float(abs(tr.product[-1] - s) < 1e-3 * s)
        rows.append(
            Comparison(
                f"10-layer {arch}: prod(a_l + c_l) reaches s by t = 5 (Fig. 6b)",
                converged,
                done,
                0.0,
                note=f"final {tr.product[-1]:.4g}",
            )
        )
    return rows


def run(backend: str = "numpy", full: bool = False, seed: int = 0) -> list[Comparison]:
    """All comparisons; ``full`` uses 10 targets on a 10x10 grid (default 3 targets, 5x5).

    Parameters
    ----------
    backend : str
        ``"numpy"`` or ``"cupy"``; validated but unused (the landscapes and flows are CPU theory).
    full : bool
        The paper's sizes (10 targets on a 10x10 grid, 100 rescaled nets) instead of the quick default.
    seed : int
        Base seed of the random streams.

    Returns
    -------
    list of Comparison
        One row per prediction: theory, estimate, standard error, verdict.

    Raises
    ------
    ValueError
        ``backend`` not ``"numpy"`` or ``"cupy"``; a negative ``seed``.
    TypeError
        ``full`` not a bool; ``seed`` not an int.
    """
    backend, full, seed = check_run_arguments(backend, full, seed)
    n_targets, grid, n_nets = (10, 10, 100) if full else (3, 5, 20)
    rows = _landscape_rows(n_targets, grid, seed)
    rows += _bias_rows(n_targets, grid, seed)
    rows += _exact_rows(seed)
    rows += _rescaling_rows(n_nets, seed)
    rows += _mode_rows(seed)
    return rows


if __name__ == "__main__":
    raise SystemExit(main_for(run, __name__))
