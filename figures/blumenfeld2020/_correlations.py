"""Blumenfeld et al. 2020, eqs. 5-6: closed-form weight correlations against measured ones (a table)."""

from __future__ import annotations

import math

import numpy as np

from meanfield import init as mf_init
from meanfield import symmetry

from .._common import by_size, figure, plt, save_figure
from ._shared import PAPER


def _pair(w):
    return symmetry.forward_correlation(w), symmetry.backward_correlation(w)


@figure(paper=PAPER, figure="not in the paper: closed forms after eq. 6", honours_backend=False)
def table_correlations(out_dir, *, size, backend, seed):
    """Closed-form forward / backward correlations C_f, C_b (after eq. 6) next to values measured on tensors.

    Random tensors are measured as the mean over draws with its standard error (smoke 10, default
    200, full 2,000 draws); tensors whose correlations are the same for every draw (deterministic
    constructions, and orthogonal ones, whose filters are exactly orthogonal) are measured once.

    Notes
    -----
    Blumenfeld et al. 2020, eqs. 5-6 and the closed forms listed after eq. 6; App. B eq. 8 (looks-linear).
    """
    rng_random, rng_replicated, rng_orth, rng_ll = (
        np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(4)
    )
    n, p, d, r = 16, 4, 32, 4
    delta = mf_init.delta_kernel((3, 3))[..., None, None]
    n_rand = by_size(size, smoke=10, default=200, full=2000)

    def mean_se(pairs):
        a = np.asarray(pairs)
        return a.mean(axis=0), a.std(axis=0, ddof=1) / math.sqrt(len(a))

    rand = mean_se([_pair(rng_random.standard_normal((3, 3, n, n))) for _ in range(n_rand)])
    rep = mean_se([_pair(np.repeat(rng_replicated.standard_normal((d // r, n)), r, axis=0)) for _ in range(n_rand)])

    def exact(w):
        return (np.array(_pair(w)), np.zeros(2))

    rows = [
        (
            f"random i.i.d. N(0,1), 3x3 kernel, {n}x{n} channels",
            symmetry.closed_form_correlations("random"),
            rand,
            f"mean of {n_rand} draws",
        ),
        (
            f"delta-orthogonal, {n}x{n} channels",
            symmetry.closed_form_correlations("orthogonal"),
            exact(delta * mf_init.haar_orthogonal(n, n, rng=rng_orth)),
            "one draw (exact for all)",
        ),
        (
            f"identity replicated {p} times ({p * n}x{n})",
            symmetry.closed_form_correlations("replicated_identity", p * n, n),
            exact(delta * np.tile(np.eye(n), (p, 1))),
            "deterministic",
        ),
        (
            f"constant 0.3, {n}x{n}",
            symmetry.closed_form_correlations("constant"),
            exact(np.full((3, 3, n, n), 0.3)),
            "deterministic",
        ),
        (
            "zero tensor (C = 1 by convention)",
            symmetry.closed_form_correlations("zero"),
            exact(np.zeros((3, 3, n, n))),
            "deterministic",
        ),
        (
            f"{d // r} random rows, each {r} times ({d}x{n})",
            symmetry.closed_form_correlations("replicated_features", d, replicas=r),
            rep,
            f"mean of {n_rand} draws",
        ),
        (
            f"LeakyNet averaging layer $11^T/n$, n = {n}",
            symmetry.closed_form_correlations("constant"),
            exact(delta * mf_init.channel_matrix(n, "1")),
            "deterministic",
        ),
        (
            f"looks-linear delta-orth. (eq. 8), n = {n}",
            symmetry.ClosedFormCorrelations("looks_linear", -1 / (n - 1), -1 / (n - 1), True),
            exact(mf_init.looks_linear_delta_orthogonal(n, rng=rng_ll)),
            "one draw (exact for all)",
        ),
    ]

    def num(value):
        return f"{0.0 if abs(value) < 5e-5 else value:+.4f}"  # no "-0.0000" for a rounding-level value

    def cell(value, se, how):
        return num(value) if how in ("deterministic", "one draw (exact for all)") else f"{num(value)} ± {se:.4f}"

    text = [
        [name, num(th.c_f), cell(m[0], s[0], how), num(th.c_b), cell(m[1], s[1], how), how]
        for name, th, (m, s), how in rows
    ]
    cols = ["tensor", "$C_f$ closed form", "$C_f$ measured", "$C_b$ closed form", "$C_b$ measured", "measured on"]
    fig, ax = plt.subplots(figsize=(13.5, 0.28 * (len(text) + 1) + 0.6))
    ax.axis("off")
    tab = ax.table(
        cellText=text,
        colLabels=cols,
        loc="upper center",
        cellLoc="center",
        colWidths=[0.31, 0.11, 0.15, 0.11, 0.15, 0.17],
    )
    tab.auto_set_font_size(False)
    tab.set_fontsize(8)
    tab.scale(1, 1.35)
    for (row, col), c in tab.get_celld().items():
        if col == 0 and row > 0:
            c.set_text_props(ha="left")
            c.PAD = 0.02
    ax.set_title(
        f"{PAPER} (not a figure of the paper): forward and backward weight correlations $C_f$, $C_b$ (eqs. 5-6),\n"
        f"closed forms listed after eq. 6 against values measured on tensors (mean $\\pm$ standard error over random draws)",
        fontsize=10,
    )
    data = {
        "tensor": [row[0] for row in rows],
        "c_f_theory": np.array([row[1].c_f for row in rows]),
        "c_f_measured": np.array([row[2][0][0] for row in rows]),
        "c_f_stderr": np.array([row[2][1][0] for row in rows]),
        "c_b_theory": np.array([row[1].c_b for row in rows]),
        "c_b_measured": np.array([row[2][0][1] for row in rows]),
        "c_b_stderr": np.array([row[2][1][1] for row in rows]),
        "measured_on": [row[3] for row in rows],
    }
    return save_figure(
        fig,
        out_dir,
        "blumenfeld2020_table_correlations",
        data,
        params={
            "n": n,
            "replication_P": p,
            "replicated_features_d": d,
            "replicas_R": r,
            "random_draws": n_rand,
            "kernel": [3, 3],
        },
        units={
            "c_f_theory": "dimensionless (eq. 5)",
            "c_b_theory": "dimensionless (eq. 6)",
            "c_f_stderr": "standard error of the mean over draws; 0 where the value is the same for every draw",
            "c_b_stderr": "as c_f_stderr",
        },
    )
