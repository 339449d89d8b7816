"""Binary-weight landscapes and skip connections (Orhan 2017): the paper's claims checked.

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
  net does not within the window;
- Supp. Note 1 (exact Hessians by PyTorch autodiff): duplicated units give identical Hessian
  columns at a zero residual, columns that agree outside the units' own incoming weights otherwise
  (the paper's "identical" holds only there), and identity skips remove the coincidence;
- trained networks (the ``torch`` extra; the rows are skipped without it): skips reduce the
  fraction of degenerate Hessian eigenvalues during training, trained plain nets keep their
  accuracy under rescaling while residual nets lose it (Fig. 2c), orthogonal skips train better
  than folded or non-orthogonal ones (Figs. 9-10). Statistics and tolerances in
  :func:`_trained_rows`.

:func:`untrained_rows` gives the rows that need no training at a chosen size (what the tests run).
"""

from __future__ import annotations

import math

import numpy as np

from meanfield import landscape as L
from meanfield.checks import doc_sections, renamed_kwargs

from .report import Comparison, mean_and_stderr
from .runner import _RUN_RETURNS, comparison_run, main_for, progress

__all__ = ["run", "untrained_rows"]

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


def _untrained_streams(seed, n_targets):
    """Independent streams of the untrained rows, spawned from ``seed`` (child 0 of the module's
    ``SeedSequence(seed).spawn(6)``; children 1-4 drive the trained rows): one ``(task, biases)``
    pair per target, then the enumerator, rescaling and mode-flow streams."""
    targets, exact, rescaling, modes = np.random.SeedSequence(seed).spawn(6)[0].spawn(4)
    return [t.spawn(2) for t in targets.spawn(n_targets)], exact, rescaling, modes


def _landscape_rows(n_targets, grid, streams):
    stats = {a: {"minima": [], "walk": [], "basin": []} for a in ORDER}
    for k in progress(range(n_targets), desc="landscapes"):
        task = L.regression_task(grid_size=grid, rng=streams[k][0])
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


def _bias_rows(n_targets, grid, streams):
    """Fig. S1 (fixed N(0, 1) biases): plain keeps the most local minima, hyper-residual the fewest.

    The path-residual / residual order is not robust with biases (reversed for 1 of 4 targets we
    tried), so it is not asserted here; the counts go in the notes.
    """
    most = fewest = 0
    notes = []
    for k in progress(range(n_targets), desc="landscapes with biases"):
        task = L.regression_task(grid_size=grid, rng=streams[k][0])  # the targets of _landscape_rows
        b = np.random.default_rng(streams[k][1]).standard_normal((6, 2))
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


def _exact_rows(stream):
    task = L.regression_task(grid_size=4, rng=stream)
    rows = []
    for arch in ORDER:
        r = L.binary_landscape(arch, task.inputs, task.targets, n_layers=4)
        ref = _brute_force_count(arch, task.inputs, task.targets, 4)
        rows.append(Comparison(f"4-layer {arch}: local minima, kernel vs brute force", ref, r.n_local_minima, 0.0))
    return rows


def _rescaling_rows(n_nets, stream):
    rng = np.random.default_rng(stream)
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


def _mode_rows(stream):
    rng = np.random.default_rng(stream)
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


@comparison_run
def run(backend: str = "numpy", full: bool = False, seed: int = 0) -> list[Comparison]:
    """All comparisons; ``full`` uses 10 targets on a 10x10 grid (default 3 targets, 5x5).

    Parameters
    ----------
    backend : str
        One of :data:`meanfield.backend.BACKENDS`; validated but unused (the landscapes and flows are CPU theory).
    full : bool
        The paper's sizes (10 targets on a 10x10 grid, 100 rescaled nets) instead of the quick default.
    rng : int
        Base seed of the random streams.

    {run_returns}

    {run_raises}
    """
    n_targets, grid, n_nets = (10, 10, 100) if full else (3, 5, 20)
    rows = untrained_rows(n_targets, grid, n_nets, seed)
    rows += _trained_rows(full, seed)
    return rows


@renamed_kwargs(n_nets="n_networks", seed="rng")
@doc_sections(run_returns=_RUN_RETURNS)
def untrained_rows(n_targets: int = 3, grid: int = 5, n_nets: int = 20, seed: int = 0) -> list[Comparison]:
    """The rows of :func:`run` that need no training (and no ``torch``), at a size of one's choice.

    Landscape orderings (Fig. 4), the biased landscapes (Fig. S1), the enumerator against brute
    force, the rescaling symmetry and the mode-strength flows (Fig. 6b): the first six items of the
    module notes, in that order. :func:`run` uses ``(3, 5, 20)`` by default and ``(10, 10, 100)``
    with ``full=True``; tests use smaller sizes.

    Parameters
    ----------
    n_targets : int
        Random regression targets (tasks) per landscape comparison, ``1 <= n_targets <= 1000``.
    grid : int
        Side of the input grid of each task (``grid**2`` inputs), ``2 <= grid <= 32``.
    n_networks : int
        Random networks of the rescaling check, ``1 <= n_nets <= 10_000``.
    rng : int
        Base seed of the random streams (``>= 0``).

    {run_returns}

    Raises
    ------
    ValueError
        An argument outside its range.
    TypeError
        A bool, float, complex number or string where an int is expected.

    Notes
    -----
    Orhan 2017 (Orhan 2017), Sec. 2.2 (Fig. 4), Supp. Fig. S1, eq. 1-4 (the binary networks),
    Sec. 3 (rescaling symmetry) and eqs. 21-23 (Fig. 6b).
    """
    n_targets = _count(n_targets, "n_targets", 1, 1000)
    grid = _count(grid, "grid", 2, 32)
    n_nets = _count(n_nets, "n_networks", 1, 10_000)
    seed = _count(seed, "rng", 0, None)
    targets, exact, rescaling, modes = _untrained_streams(seed, n_targets)
    rows = _landscape_rows(n_targets, grid, targets)
    rows += _bias_rows(n_targets, grid, targets)
    rows += _exact_rows(exact)
    rows += _rescaling_rows(n_nets, rescaling)
    rows += _mode_rows(modes)
    return rows


def _count(n: object, name: str, minimum: int, maximum: int | None) -> int:
    """An int (not a bool, float or complex) in ``[minimum, maximum]``."""
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {n!r}")
    if n < minimum or (maximum is not None and n > maximum):
        upper = "" if maximum is None else f" and <= {maximum}"
        raise ValueError(f"{name} must be >= {minimum}{upper}, got {n}")
    return int(n)


#: Rounding bound of exact Hessian identities (float64 autodiff of ~100 parameters, relative to the
#: largest entry): each entry is a sum of O(100) products, each rounded to 1.1e-16.
HESSIAN_ROUNDING = 1e-12
#: Accuracy ratio below which the rescaling symmetry counts as broken in trained nets (Fig. 2c).
RESCALE_ACCURACY_BROKEN = 0.95


def _supp1_rows(seed):
    """Supp. Note 1 on a 3-layer net whose units 0 and 1 of layer 2 share their incoming weights."""
    rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(5)[4])
    n = 3
    x, y = rng.standard_normal((8, n)), rng.standard_normal((8, n))
    ws = [rng.standard_normal((n, n)) / math.sqrt(n) for _ in range(3)]
    bs = [0.1 * rng.standard_normal(n) for _ in range(3)]
    ws[0][1], bs[0][1] = ws[0][0], bs[0][0]
    col = lambda i, j: (n * n + n) + i * n + j  # noqa: E731 - W2[i, j]
    own = [0, 1, 2, 3, 4, 5, n * n, n * n + 1]  # W1[0, :], W1[1, :], b1[0], b1[1]
    p = 3 * (n * n + n)
    rest = np.setdiff1d(np.arange(p), own)
    rows = []
    zero = L.skip_network_hessian("plain", x, L.skip_network("plain", x, ws, bs), ws, bs)
    scale = float(np.abs(zero.hessian).max())
    gap = max(float(np.abs(zero.hessian[:, col(i, 0)] - zero.hessian[:, col(i, 1)]).max()) for i in range(n))
    rows.append(
        Comparison(
            "Supp. Note 1, plain, zero residual: Hessian columns of W2[i,j], W2[i,j'] identical",
            0.0,
            gap,
            0.0,
            systematic=HESSIAN_ROUNDING * scale,
            note=f"degenerate fraction {zero.degenerate_fraction():.3f}",
        )
    )
    h = L.skip_network_hessian("plain", x, y, ws, bs)
    scale = float(np.abs(h.hessian).max())
    gap_rest = max(float(np.abs(h.hessian[rest, col(i, 0)] - h.hessian[rest, col(i, 1)]).max()) for i in range(n))
    gap_own = max(float(np.abs(h.hessian[own, col(i, 0)] - h.hessian[own, col(i, 1)]).max()) for i in range(n))
    rows.append(
        Comparison(
            "Supp. Note 1, plain, nonzero residual: columns agree outside the units' own incoming weights",
            0.0,
            gap_rest,
            0.0,
            systematic=HESSIAN_ROUNDING * scale,
            note=f"inside them they differ by {gap_own / scale:.3g} x max|H| (zero only where the error "
            "back-propagated to the units vanishes; the printed 'identical' overstates)",
        )
    )
    r = L.skip_network_hessian("residual", x, y, ws, bs)
    rs = float(np.abs(r.hessian).max())
    gap_res = max(float(np.abs(r.hessian[rest, col(i, 0)] - r.hessian[rest, col(i, 1)]).max()) for i in range(n))
    rows.append(
        Comparison(
            "Supp. Note 1, residual: identity skips make those columns differ (relative gap >= 1e-3)",
            1e-3,
            gap_res / rs,
            0.0,
            side="above",
        )
    )
    return rows


#: One-sided 5 % level of the trained-network claims "skips reduce the degenerate fraction".
Z_ONE_SIDED = 1.645
#: Networks per architecture of the degenerate-Hessian rows (default size): 80 % power at one-sided
#: 5 % for the 0.024 difference of the library's figure at the 8-network run's SD 0.124
#: (:func:`_trained_rows`), fixed before the run.
HESSIAN_MEMBERS = 165
#: The same with ``full=True``: the trainer's largest ensemble.
HESSIAN_MEMBERS_FULL = 256
#: Effect and per-network standard deviation behind :data:`HESSIAN_MEMBERS` (from earlier runs).
HESSIAN_EFFECT, HESSIAN_SD = 0.024, 0.124


def _power(n):
    """Power of the one-sided z >= Z_ONE_SIDED test with ``n`` paired networks at the design effect."""
    from scipy.stats import norm

    return float(norm.cdf(HESSIAN_EFFECT * math.sqrt(n) / HESSIAN_SD - Z_ONE_SIDED))


def _trained_rows(full, seed):
    """Trained networks (PyTorch): Hessian degeneracy, rescaling (Fig. 2c), skip orthogonality (Figs. 9-10).

    Statistics and tolerances, fixed before the runs: the time-averaged degenerate fraction
    (``|lambda| <= DEGENERATE_RTOL max |lambda|``) of the hidden-parameter Hessian, paired by
    network (every architecture starts from the same weights), plain minus skip must be positive
    at the one-sided 5 % level (z >= :data:`Z_ONE_SIDED`; the first version of this row asked only
    for a non-negative mean, which is no test: the z form was fixed after a first run of 4
    networks showed -0.010 +- 0.048, before the 8-network run);
    the rescaled / original training accuracy must be 1 for plain nets up to one argmax flip
    (``1 / n``) and at most :data:`RESCALE_ACCURACY_BROKEN` (+ z standard errors) with identity
    skips; the final training accuracy of residual nets with orthogonal skips must exceed that with
    every column folded onto one vector (Fig. 9) and that of tau = 0.5 skips (Fig. 10), paired
    difference >= 0.
    """
    try:
        import torch  # noqa: F401

        from meanfield.train.skip import rescaled_accuracy_ratio, train_skip_ensemble
    except ImportError:  # pragma: no cover - without the torch extra
        return []
    from meanfield.data import load_digits

    rows = _supp1_rows(seed)
    data_ss, run_ss, pair_ss = np.random.SeedSequence(seed).spawn(6)[1:4]
    d = load_digits(standardized=True)
    perm = np.random.default_rng(data_ss).permutation(len(d.y))
    x, y = d.x[perm][:1297], d.y[perm][:1297]
    members = 16 if full else 8
    # Sample size of the degenerate-Hessian rows, fixed before the run. History: 4 networks
    # (first run) gave plain - residual = -0.010 +- 0.048; 8 networks (previous engine) 0.008 +- 0.044,
    # i.e. a standard deviation of 0.124 per network. The paper prints no effect size; the library's
    # figure saw 0.178 - 0.154 = 0.024. One-sided alpha 0.05 with 80 % power for a 0.024 effect at
    # SD 0.124 needs ((1.645 + 0.842) * 0.124 / 0.024)^2 = 165 networks per architecture
    # (:data:`HESSIAN_MEMBERS`); --full takes the trainer's maximum of 256 (93 % power). Affordable
    # since the Hessians of all members are formed at once (skip_ensemble_hessians' "exact" method,
    # ~25 ms per Hessian with its eigenvalues against ~70-130 ms by per-network autodiff,
    # benchmarks/symmetry_training.py). Networks 0-7 are those of the 8-network run (spawned streams).
    n_hess = HESSIAN_MEMBERS_FULL if full else HESSIAN_MEMBERS
    hess = {}
    for arch in progress(["plain", "residual", "hyper_residual"], desc="Hessians during training"):
        hess[arch] = train_skip_ensemble(
            arch,
            x,
            y,
            n_networks=n_hess,
            width=8,
            depth=4,
            steps=300,
            lr=5e-3,
            batch_size=256,
            record_every=100,
            hessian_every=100,
            hessian_inputs=128,
            rng=run_ss,
        )
    frac = {a: r.degenerate_fraction.mean(axis=0) for a, r in hess.items()}
    for arch in ("residual", "hyper_residual"):
        m, se = mean_and_stderr(frac["plain"] - frac[arch])
        z_diff = float(m) / float(se) if se > 0 else (math.inf if m > 0 else -math.inf)
        rows.append(
            Comparison(
                f"degenerate Hessian eigenvalues during training: z of plain - {arch} >= {Z_ONE_SIDED}",
                Z_ONE_SIDED,
                z_diff,
                0.0,
                z=0.0,
                side="above",
                note=f"plain {frac['plain'].mean():.3f}, {arch} {frac[arch].mean():.3f}, "
                f"difference {float(m):.3f} +- {float(se):.3f} ({n_hess} nets per architecture, paired; "
                f"{_power(n_hess):.0%} power for a 0.024 effect at SD 0.124, n fixed before the run, "
                "docs/papers/orhan2017.md)",
            )
        )
    width, depth, steps = (32, 10, 200) if not full else (64, 20, 1000)
    runs = {}
    variants = {
        "plain": ("plain", {}),
        "residual": ("residual", {}),
        "folded_all": ("residual", {"skips": lambda r: L.folded_orthogonal(width, width, r)}),
        "folded_one": ("residual", {"skips": lambda r: L.folded_orthogonal(width, 1, r)}),
        "tau_0.5": ("residual", {"skips": lambda r: L.controlled_skip_matrix(width, 0.5, r)}),
    }
    for key in progress(list(variants), desc="trained skip networks"):
        arch, kw = variants[key]
        runs[key] = train_skip_ensemble(
            arch, x, y, n_networks=members, width=width, depth=depth, steps=steps, record_every=steps, rng=run_ss, **kw
        )
    pair_rng = np.random.default_rng(pair_ss)
    ratio = {a: rescaled_accuracy_ratio(runs[a], x, y, rng=pair_rng) for a in ("plain", "residual")}
    rows.append(
        Comparison(
            "Fig. 2c: trained plain nets keep their accuracy under W_k*10, W_l/10 (ratio 1)",
            1.0,
            float(ratio["plain"].mean()),
            0.0,
            systematic=1.0 / len(x),
        )
    )
    m, se = mean_and_stderr(ratio["residual"])
    rows.append(
        Comparison(
            f"Fig. 2c: trained residual nets lose accuracy under rescaling (ratio <= {RESCALE_ACCURACY_BROKEN})",
            RESCALE_ACCURACY_BROKEN,
            float(m),
            float(se),
            side="below",
        )
    )
    final = {k: r.train_accuracy[-1] for k, r in runs.items()}
    for better, worse, fig in (("folded_all", "folded_one", "Fig. 9"), ("folded_all", "tau_0.5", "Fig. 10")):
        m, se = mean_and_stderr(final[better] - final[worse])
        rows.append(
            Comparison(
                f"{fig}: orthogonal skips train better than {worse.replace('_', ' ')} skips (accuracy difference >= 0)",
                0.0,
                float(m),
                float(se),
                z=0.0,
                side="above",
                note=f"{final[better].mean():.3f} vs {final[worse].mean():.3f} ({members} nets, width {width}, depth {depth})",
            )
        )
    return rows


if __name__ == "__main__":
    raise SystemExit(main_for(run, __name__))
