"""The comparison row of Blumenfeld et al. 2020, Sec. 4.2 (group-dependent symmetry breaking).

The statistic, the exact permutation test and the ConstNet run are in
:mod:`meanfield.train.symmetry_groups` (the figures draw the same run); this module turns them
into the validation row, :func:`group_behaviour_row`. Its public names are re-exported here.
"""

from __future__ import annotations

import math
from typing import Any

from meanfield.train.symmetry_groups import *  # noqa: F403 - re-exported: the statistic, the test and the run
from meanfield.train.symmetry_groups import P_THRESHOLD, group_behaviour
from meanfield.train.symmetry_groups import __all__ as _groups_all

from .report import Comparison

__all__ = [*_groups_all, "group_behaviour_row"]


def group_behaviour_row(size: str = "default", *, rng: Any = 0) -> Comparison:
    """The validation row of Sec. 4.2's group behaviour: exact permutation p-value <= :data:`P_THRESHOLD`.

    Parameters
    ----------
    size : {"smoke", "default", "full"}
    rng : int or numpy.random.Generator
        As :func:`group_behaviour`.

    Returns
    -------
    Comparison
        Theory :data:`P_THRESHOLD`, estimate the p-value (``side="below"``, standard error 0: the
        p-value is exact); the note gives the ratio ``R`` and the number of steps used. With too few
        usable steps the estimate is NaN and the row fails.

    Raises
    ------
    ValueError, TypeError, ImportError
        As :func:`group_behaviour`.
    """
    res = group_behaviour(size, rng=rng)
    sep = res.separation
    name = "ConstNet '0' + 1% dropout: group behaviour of log10(1 - C_f), log10(1 - C_b) (Sec. 4.2), exact p"
    if sep is None:
        return Comparison(
            name, P_THRESHOLD, math.nan, 0.0, side="below", note=f"only {res.series.steps.size} usable steps"
        )
    fwd, bwd = res.series.separation("forward"), res.series.separation("backward")
    return Comparison(
        name,
        P_THRESHOLD,
        sep.p_value,
        0.0,
        side="below",
        note=(
            f"within/between RMS distance R = {sep.ratio:.3f} over {len(res.series.kinds)} series of 3x3 convs, "
            f"{res.series.steps.size} steps, {res.one_minus_cf.shape[0]} nets; {sep.n_assignments} relabellings; "
            f"descriptive: C_f alone R = {fwd.ratio:.2f} (p = {fwd.p_value:.3f}), "
            f"C_b alone R = {bwd.ratio:.2f} (p = {bwd.p_value:.3f})"
        ),
    )
