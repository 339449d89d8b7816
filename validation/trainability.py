r"""Trainability: do the depth scales predict which deep networks train? The papers' training claims.

The rows below test the trainability experiments of :mod:`meanfield.train.experiment` (ensembles
trained with :func:`meanfield.train.train_ensemble` on the embedded digits, at the sizes
``"smoke"``, ``"default"`` and ``"full"``; the experiments and their claims are listed there).
Each experiment is run once per process and size and seed (an in-process cache): ``meanfield
reproduce`` renders the figures first, so the validation rows reuse the figures' runs; ``python -m
meanfield.validation trainability`` alone runs the six experiments its rows need
(``depth_scale``, ``deep_cnn``, ``looks_linear``, ``zero``, ``kurtosis_accuracy``,
``nonuniform_v``; about 3.6 CPU minutes at the default size, docs/training.md).


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

from meanfield.checks import renamed_kwargs
from meanfield.compare import EXACT_RANK_MAX, RANK_LEVEL, RankTest, rank_correlation, z_score
from meanfield.train.experiment import (
    BOUNDARY_BAND,
    CNN_LR_TIMES_DEPTH,
    DEEP_CNN_DEPTH,
    EXPERIMENTS,
    TRAINABLE_ACCURACY,
    clear_cache,
    cnn_learning_rate,
    depth_scale_agreement,
    experiment,
    kurtosis_rank_test,
    mode_energy_fraction,
    nonuniform_v_rank_test,
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

#: Fraction of the scored cells where ``L < 6 xi_c`` must agree with trainability.
MIN_AGREEMENT = 0.8
#: Mean final test accuracy the critical delta-orthogonal CNNs must reach at the default depth.
DELTA_ORTHOGONAL_TARGET = 0.5
#: One-sided 5 % critical value of the standard normal: a "beats" claim needs z above it.
Z_ONE_SIDED = 1.645


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
