r"""Trainability: do the depth scales predict which deep networks train? The papers' training claims.

The rows below test the trainability experiments of :mod:`meanfield.train.experiment` (ensembles
trained with :func:`meanfield.train.train_ensemble` on the embedded digits, at the sizes
``"smoke"``, ``"default"`` and ``"full"``; the experiments and their claims are listed there).
Each experiment is run once per process and size and seed (an in-process cache): ``meanfield
reproduce`` renders the figures first, so the validation rows reuse the figures' runs; ``python -m
meanfield.validation trainability`` alone runs the four experiments its rows need (about two
minutes on an idle 2-core machine).


Validation rows (statistic and tolerance fixed here, before any run)
--------------------------------------------------------------------
1. ``depth_scale``: a grid cell is *trainable* when the mean training accuracy of its networks is
   at least :data:`TRAINABLE_ACCURACY`; the prediction is ``L < 6 xi_c``. Cells within a factor
   :data:`BOUNDARY_BAND` of ``6 xi_c`` are ambiguous (the boundary moves with the training
   budget: Fig. 2a-d) and excluded. Row: the fraction of the other cells where prediction and
   observation agree, which must be at least :data:`MIN_AGREEMENT`.
2. ``deep_cnn``: the delta-orthogonal networks' mean final test accuracy must reach
   :data:`DELTA_ORTHOGONAL_TARGET` (one-sided, ``Z_ONE_SIDED`` standard errors over networks).
3. ``deep_cnn``: delta-orthogonal trains faster than Gaussian: the z-score of the difference of
   the mean training accuracy averaged over the recorded steps (area under the curve) must exceed
   :data:`Z_ONE_SIDED` (one-sided test at level 5 %).
4. ``looks_linear``: orthogonal looks-linear beats He at the deepest depth: z-score of the
   difference of mean final test accuracies > :data:`Z_ONE_SIDED`; the same for GSM.
5. ``zero``: the paper's ordering at the deepest depth, ZerO* >= ZerO > He-Gaussian: z-score of
   ``ZerO - He`` > :data:`Z_ONE_SIDED`, and ``ZerO* - ZerO`` not significantly negative
   (z > -:data:`Z_ONE_SIDED`).
6. ``kurtosis_accuracy``: networks with a larger output kurtosis at initialisation train worse:
   Spearman's rho between log10 output kurtosis (Prop. 4.3) and mean test accuracy over the
   (width, depth, weight law) cells, one-sided test of ``rho < 0`` (:func:`rank_correlation`,
   normal approximation ``z = rho sqrt(n - 1)``); the p-value must be below :data:`RANK_LEVEL`.
7. ``nonuniform_v``: Xiao et al. 2018 Fig. 4a, test accuracy follows the conditioning of A_v's singular
   values: at the deepest trained depth ``L``, Spearman's rho between the theory's score of each
   variance vector, :func:`mode_energy_fraction` (the mean of ``sigma^(2L)`` over A_v's singular
   values on the trained image size: the fraction of a white signal's Fourier modes that survive
   ``L`` critical layers, eq. 2.12 with ``chi_c = 1``), and the final test accuracy of every
   network (ties in average ranks), one-sided test of ``rho > 0``; the p-value must be below
   :data:`RANK_LEVEL`.

A claim the reduced setting does not reproduce FAILs here; docs/training.md says what was seen.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from meanfield import Result
from meanfield.checks import as_float_array, renamed_kwargs
from meanfield.train.experiment import (
    CNN_LR_TIMES_DEPTH,
    DEEP_CNN_DEPTH,
    EXPERIMENTS,
    clear_cache,
    cnn_learning_rate,
    experiment,
    mode_energy_fraction,
    training_data,
)

from .audit import unavailable  # the torch extra: `meanfield validate` skips this module without it
from .report import Comparison
from .runner import main_for

__all__ = [
    "BOUNDARY_BAND",
    "CNN_LR_TIMES_DEPTH",
    "DEEP_CNN_DEPTH",
    "DELTA_ORTHOGONAL_TARGET",
    "EXACT_RANK_MAX",
    "EXPERIMENTS",
    "MIN_AGREEMENT",
    "RANK_LEVEL",
    "TRAINABLE_ACCURACY",
    "Z_ONE_SIDED",
    "RankTest",
    "clear_cache",
    "cnn_learning_rate",
    "depth_scale_agreement",
    "experiment",
    "kurtosis_rank_test",
    "mode_energy_fraction",
    "nonuniform_v_rank_test",
    "rank_correlation",
    "rows",
    "run",
    "training_data",
    "unavailable",
    "z_score",
]

#: Mean training accuracy at or above which a (sigma_w2, depth) cell counts as trainable (chance
#: is 0.1 on ten digits; trained shallow networks reach > 0.9).
TRAINABLE_ACCURACY = 0.5
#: Cells with ``L / (6 xi_c)`` in ``[1 / BOUNDARY_BAND, BOUNDARY_BAND]`` are not scored.
BOUNDARY_BAND = 2.0
#: Fraction of the scored cells where ``L < 6 xi_c`` must agree with trainability.
MIN_AGREEMENT = 0.8
#: Mean final test accuracy the critical delta-orthogonal CNNs must reach at the default depth.
DELTA_ORTHOGONAL_TARGET = 0.5
#: One-sided 5 % critical value of the standard normal: a "beats" claim needs z above it.
Z_ONE_SIDED = 1.645


def z_score(a: np.ndarray, b: np.ndarray) -> float:
    """z-score of ``mean(a) - mean(b)`` with the unpooled (Welch) standard error.

    Parameters
    ----------
    a, b : array_like
        Independent samples (e.g. final accuracies of the networks of two initialisers).

    Returns
    -------
    float
        ``(mean(a) - mean(b)) / sqrt(var(a) / n_a + var(b) / n_b)``; 0 when both the difference
        and the standard error vanish, ``+-1e6`` when only the standard error does (or a sample
        has one element).

    Raises
    ------
    ValueError
        ``a`` or ``b`` empty, ragged or holding NaN / infinity.
    TypeError
        Complex, boolean or non-numeric entries.
    """
    a, b = as_float_array(a, "a").ravel(), as_float_array(b, "b").ravel()
    for name, arr in (("a", a), ("b", b)):
        if arr.size < 1 or not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} must be a non-empty array of finite numbers")
    se = math.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size) if min(a.size, b.size) > 1 else 0.0
    diff = float(a.mean() - b.mean())
    if se == 0.0:
        return 0.0 if diff == 0 else math.copysign(1e6, diff)
    return diff / se


def depth_scale_agreement(res: dict) -> tuple[float, int]:
    """Fraction of scored cells where ``L < 6 xi_c`` agrees with trainability, and the number scored.

    Parameters
    ----------
    res : dict
        ``depths`` (n_depths,), ``xi_c`` (n_sigma,), ``train_accuracy`` (n_depths, n_sigma, n_networks),
        as :func:`experiment` ("depth_scale") returns them.

    Returns
    -------
    fraction, n_scored : float, int
        Cells with ``L / (6 xi_c)`` within a factor :data:`BOUNDARY_BAND` of 1 are not scored; a
        cell is trainable when its mean training accuracy is ``>= TRAINABLE_ACCURACY``. NaN
        fraction when no cell is scored.
    """
    six_xi = 6.0 * res["xi_c"][None, :]
    depth = res["depths"][:, None].astype(float)
    ratio = depth / six_xi
    scored = (ratio < 1.0 / BOUNDARY_BAND) | (ratio > BOUNDARY_BAND)
    predicted = depth < six_xi
    observed = res["train_accuracy"].mean(axis=2) >= TRAINABLE_ACCURACY
    n = int(scored.sum())
    return (float((predicted == observed)[scored].mean()) if n else float("nan")), n


@renamed_kwargs(seed="rng")
def run(backend: str = "numpy", full: bool = False, seed: int = 0) -> list[Comparison]:
    """The trainability rows (module notes) at the default (or, with ``full``, the full) size.

    The networks train on the CPU with PyTorch whatever ``backend`` says (the trainer's ``device``
    argument selects a GPU; this table keeps the CPU so that its numbers are those of the docs).
    """
    return rows(size="full" if full else "default", rng=seed)


@renamed_kwargs(seed="rng")
def rows(size: str = "default", seed: int = 0) -> list[Comparison]:
    """The trainability rows at any size (``"smoke"`` for tests): see the module notes.

    Parameters
    ----------
    size : {"smoke", "default", "full"}
    rng : int

    Returns
    -------
    list of Comparison
        Nine rows; statistics and tolerances are the module constants, fixed before any run.

    Raises
    ------
    ValueError, TypeError
        As :func:`experiment`.
    """
    out: list[Comparison] = []
    res = experiment("depth_scale", size, seed)
    frac, n = depth_scale_agreement(res)
    out.append(
        Comparison(
            f"Xiao et al. 2018 Fig. 2: fraction of {n} (sigma_w2, L) cells where L < 6 xi_c <=> train acc >= {TRAINABLE_ACCURACY}",
            MIN_AGREEMENT,
            frac,
            0.0,
            side="above",
            note=f"cells with L within a factor {BOUNDARY_BAND} of 6 xi_c not scored; {res['params']['steps']} steps",
        )
    )
    cnn = experiment("deep_cnn", size, seed)
    depth = cnn["params"]["depth"]
    do = cnn["runs"]["delta_orthogonal"]
    ga = cnn["runs"]["gaussian"]
    final = do["test_accuracy"][:, -1]
    se = float(final.std(ddof=1) / math.sqrt(final.size)) if final.size > 1 else 0.0
    out.append(
        Comparison(
            f"Xiao et al. 2018 Figs. 1/3: delta-orthogonal tanh CNN, L={depth}: final test accuracy >= target",
            DELTA_ORTHOGONAL_TARGET,
            float(final.mean()),
            se,
            z=Z_ONE_SIDED,
            side="above",
        )
    )
    out.append(
        Comparison(
            f"Xiao et al. 2018 Fig. 5 / Sec. 3.2: L={depth}: z(delta-orthogonal - Gaussian mean train accuracy over steps)",
            Z_ONE_SIDED,
            z_score(do["train_accuracy"].mean(axis=1), ga["train_accuracy"].mean(axis=1)),
            0.0,
            side="above",
            note="one-sided 5 % test over networks",
        )
    )
    ll = experiment("looks_linear", size, seed)
    deep = int(ll["depths"][-1])
    he = ll["test_accuracy"][-1, 0]
    for j, label in ((2, "looks-linear orthogonal"), (1, "GSM")):
        out.append(
            Comparison(
                f"Burkholz & Dubatovka 2019 Figs. 3-4: L={deep} ReLU: z({label} - He final test accuracy)",
                Z_ONE_SIDED,
                z_score(ll["test_accuracy"][-1, j], he),
                0.0,
                side="above",
                note=f"{ll['test_accuracy'].shape[2]} networks each; one-sided 5 % test",
            )
        )
    zr = experiment("zero", size, seed)
    deep = int(zr["depths"][-1])
    acc = zr["test_accuracy"][-1]
    out.append(
        Comparison(
            f"Grzejdziak 2023 Fig. 2: L={deep} width {zr['params']['width']} ReLU: z(ZerO - He Gaussian final test accuracy)",
            Z_ONE_SIDED,
            z_score(acc[3], acc[0]),
            0.0,
            side="above",
        )
    )
    out.append(
        Comparison(
            f"Grzejdziak 2023 supp. Figs. 2-3: L={deep}: z(ZerO* - ZerO) not significantly negative",
            -Z_ONE_SIDED,
            z_score(acc[4], acc[3]),
            0.0,
            side="above",
        )
    )
    out.append(_kurtosis_row(size, seed))
    out.append(_nonuniform_v_row(size, seed))
    return out


def _kurtosis_row(size: str, seed: int) -> Comparison:
    """Row 8: Grzejdziak 2023 supp. Fig. 1, one-sided Spearman test of kurtosis against accuracy."""
    test = kurtosis_rank_test(experiment("kurtosis_accuracy", size, seed))
    return Comparison(
        f"Grzejdziak 2023 supp. Fig. 1: p-value of Spearman rho(log kurtosis, test accuracy) < 0 over {test.n} cells",
        RANK_LEVEL,
        test.p_value,
        0.0,
        side="below",
        note=f"rho = {test.rho:+.3f}, one-sided {test.method} p-value",
    )


# --------------------------------------------------------------------------------------------------
# Rank-correlation rows: Grzejdziak 2023 supp. Fig. 1, Xiao et al. 2018 Fig. 4a
# --------------------------------------------------------------------------------------------------

#: One-sided level of the rank-correlation rows (fixed before the runs).
RANK_LEVEL = 0.05
#: Up to this many points the p-value of :func:`rank_correlation` enumerates every permutation.
EXACT_RANK_MAX = 8


@dataclass(frozen=True)
class RankTest(Result):
    """Spearman rank correlation and its one-sided p-value under exchangeability.

    Attributes
    ----------
    rho : float
        Spearman's rho (Pearson correlation of the average ranks), in [-1, 1]; 0 when either
        sample is constant (no ordering to correlate).
    n : int
        Number of pairs.
    p_value : float
        ``P(rho' <= rho)`` (``alternative="less"``) or ``P(rho' >= rho)`` (``"greater"``) for
        ``rho'`` of a uniformly random pairing, in (0, 1].
    method : str
        ``"exact"`` (every permutation, ``n <= EXACT_RANK_MAX``) or ``"normal"``
        (``z = rho sqrt(n - 1)``: the null variance of rho is exactly ``1 / (n - 1)``).
    alternative : str
    """

    rho: float
    n: int
    p_value: float
    method: str
    alternative: str


def _ranks(a: np.ndarray) -> np.ndarray:
    from scipy.stats import rankdata

    return rankdata(a, method="average")


def _pearson(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Correlation of ``a`` (n,) with every row of ``b`` (m, n); 0 for a constant side."""
    a = a - a.mean()
    b = b - b.mean(axis=-1, keepdims=True)
    den = np.sqrt((a * a).sum() * (b * b).sum(axis=-1))
    num = (b * a).sum(axis=-1)
    return np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)


def rank_correlation(x, y, alternative: str = "less") -> RankTest:
    """Spearman's rank correlation of paired samples with a one-sided permutation p-value.

    Parameters
    ----------
    x, y : array_like
        Paired finite real samples of the same length ``n >= 3`` (at most 10^6); flattened in C
        order. Ties get average ranks.
    alternative : {"less", "greater"}
        The claim: a negative (``"less"``) or positive (``"greater"``) association.

    Returns
    -------
    RankTest
        ``rho``, ``n``, the one-sided ``p_value`` (exact over all ``n!`` pairings for
        ``n <= EXACT_RANK_MAX``, else the normal approximation ``z = rho sqrt(n - 1)``), ``method``.

    Raises
    ------
    ValueError
        ``x`` / ``y`` empty, of different sizes, shorter than 3, longer than 10^6, holding
        NaN / infinity, or an unknown ``alternative``.
    TypeError
        Complex, boolean or non-numeric entries.

    Notes
    -----
    The statistic of the rank rows of :mod:`meanfield.validation.trainability` (Grzejdziak 2023,
    supplement Fig. 1: kurtosis against accuracy; Xiao et al. 2018 Fig. 4a: the ordering of the variance
    vectors). Under the null hypothesis every pairing of the ranks is equally likely; the exact
    p-value counts the pairings at least as extreme (ties included).
    """
    x, y = as_float_array(x, "x").ravel(), as_float_array(y, "y").ravel()
    for name, arr in (("x", x), ("y", y)):
        if not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} must hold finite numbers")
    if x.size != y.size:
        raise ValueError(f"x and y must have the same size, got {x.size} and {y.size}")
    if not 3 <= x.size <= 10**6:
        raise ValueError(f"x and y must hold 3 to 10**6 pairs, got {x.size}")
    if not isinstance(alternative, str) or alternative not in ("less", "greater"):
        raise ValueError(f"alternative must be 'less' or 'greater', got {alternative!r}")
    rx, ry = _ranks(x), _ranks(y)
    rho = float(np.clip(_pearson(rx, ry[None, :])[0], -1.0, 1.0))
    n = int(x.size)
    sign = -1.0 if alternative == "less" else 1.0
    if n <= EXACT_RANK_MAX:
        from itertools import permutations

        perms = np.array(list(permutations(range(n))))
        null = _pearson(rx, ry[perms])
        p = float(np.mean(sign * null >= sign * rho - 1e-12))
        method = "exact"
    else:
        from scipy.stats import norm

        p = float(norm.sf(sign * rho * math.sqrt(n - 1)))
        method = "normal"
    return RankTest(rho, n, max(p, np.finfo(float).tiny), method, alternative)


def kurtosis_rank_test(res: dict) -> RankTest:
    """Grzejdziak 2023 supp. Fig. 1: rank correlation of output kurtosis and test accuracy, one-sided (< 0).

    Parameters
    ----------
    res : dict
        ``log10_output_kurtosis`` (width, depth, law) and ``test_accuracy`` (width, depth, law,
        network), as :func:`experiment` ("kurtosis_accuracy") returns them.

    Returns
    -------
    RankTest
        Over the (width, depth, law) cells: log10 kurtosis at initialisation against the mean test
        accuracy over the cell's networks, ``alternative="less"``.

    Raises
    ------
    ValueError, TypeError
        As :func:`rank_correlation`.
    """
    logk = np.asarray(res["log10_output_kurtosis"])
    acc = np.asarray(res["test_accuracy"]).mean(axis=-1)
    return rank_correlation(logk.ravel(), acc.ravel(), "less")


def nonuniform_v_rank_test(res: dict) -> RankTest:
    """Xiao et al. 2018 Fig. 4a: rank correlation of the mode-energy score and test accuracy at the deepest depth.

    Parameters
    ----------
    res : dict
        ``mode_energy_fraction`` (depth, v) and ``test_accuracy`` (depth, v, network), as
        :func:`experiment` ("nonuniform_v") returns them.

    Returns
    -------
    RankTest
        Over every (v, network) pair at the deepest depth, ``alternative="greater"``.

    Raises
    ------
    ValueError, TypeError
        As :func:`rank_correlation`.
    """
    score = np.asarray(res["mode_energy_fraction"])[-1]
    acc = np.asarray(res["test_accuracy"])[-1]
    return rank_correlation(np.repeat(score, acc.shape[-1]), acc.ravel(), "greater")


def _nonuniform_v_row(size: str, seed: int) -> Comparison:
    """Row 9: Xiao et al. 2018 Fig. 4a, one-sided Spearman test of the A_v score against accuracy."""
    res = experiment("nonuniform_v", size, seed)
    test = nonuniform_v_rank_test(res)
    return Comparison(
        f"Xiao et al. 2018 Fig. 4a: p-value of Spearman rho(A_v mode energy, test accuracy) > 0 at L={int(res['depths'][-1])}",
        RANK_LEVEL,
        test.p_value,
        0.0,
        side="below",
        note=f"rho = {test.rho:+.3f} over {test.n} networks ({len(res['labels'])} v's), one-sided {test.method}",
    )


if __name__ == "__main__":
    raise SystemExit(main_for(run, __name__))
