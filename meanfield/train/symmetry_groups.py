r"""Group behaviour of symmetry breaking in a ConstNet (Blumenfeld et al. 2020, Sec. 4.2, Figs. 4 and 6), with an exact
permutation test (PyTorch for the training run, ``torch`` extra).

Blumenfeld et al. 2020 (Blumenfeld, Gilboa & Soudry 2020), Sec. 4.2: in a '0'-initialised ConstNet trained with
a symmetry-breaking mechanism, "the forward and backward correlations of the members of each group
behave in a similar manner"; the groups correspond to the hidden widths, separated by the averaging
widening operations (Fig. 4; Fig. 6's caption defines them: tensors whose outputs are summed
together, the backward group following the stream the input comes from). The groups are derived
from the network by :func:`meanfield.train.symmetric.constnet_groups`.

The statistic, fixed before any run
-----------------------------------
- **Series.** For every 3 x 3 convolution of the network, the trajectory
  ``x(t) = log10(1 - C_f(t))`` labelled by its forward group, and ``log10(1 - C_b(t))`` labelled by
  its backward group (the input convolution has one input channel: no ``C_b``). The 1 x 1
  widening skips are **excluded in advance**: Fig. 6's caption says the residual convolutions
  "fluctuate and are less predictable", and the paper's claim is stated for the 3 x 3
  convolutions. The 1 x 1 skips are still drawn by ``figures.blumenfeld2020.fig_6``.
- **Steps.** Every recorded step after initialisation (the whole run: at this size it is the early
  phase of training, the loss is still falling), except the steps at which some included
  ``1 - C`` is exactly 0 in some network (the symmetry has not reached that tensor yet, and the
  logarithm is undefined). Fewer than :data:`MIN_STEPS` such steps: no test, the row fails.
- **Distance.** ``D_ij`` = root mean square over those steps of ``x_i(t) - x_j(t)``, averaged over the
  networks of the ensemble; only series of the same kind (forward with forward, backward with
  backward) are compared.
- **Ratio.** ``R`` = mean ``D`` over same-kind pairs in the same group / mean ``D`` over same-kind
  pairs in different groups; ``R < 1`` means members of a group are closer to each other than to
  other groups.
- **Test.** Exact permutation test: ``p`` = fraction of all distinct relabellings (the group labels
  permuted among the forward series and, independently, among the backward series, group sizes
  kept) whose ratio is ``<= R``. Under the null hypothesis that the group does not matter, the
  observed labelling is uniform among them, so ``p`` is exact (no Monte-Carlo error). The row passes
  when ``p <= P_THRESHOLD = 0.05``.
- **Run.** The ConstNet of Figs. 3, 4 and 6 (stages of 8, 16, 32 channels, one block each,
  stride 2, no batch normalisation), '0'-initialised, 1 % dropout on every activation, full-batch
  gradient descent at learning rate 0.1 in float64 on the first 128 of the embedded 8 x 8 digits,
  100 steps, 4 networks (different dropout masks) at the default size (:data:`SIZES`).

With one block per stage there are 6 forward series (two per group) and 5 backward series, so
``6! / 2!^3 * 5! / (2!^2 1!) = 2,700`` relabellings: the smallest attainable ``p`` is far below
0.05 (with the forward series alone it would be 6 / 90 = 0.067, which could never pass).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from meanfield import Result
from meanfield._docstrings import doc_sections
from meanfield.train.symmetric import ConstNetGroups, ConstNetSpec, SymmetryBreaking, constnet_groups, correlation_probe

from ._checks import DOC_SIZED_RUN_RAISES
from ._checks import _cache_seed as _seed

__all__ = [
    "MAX_ASSIGNMENTS",
    "MIN_STEPS",
    "P_THRESHOLD",
    "SIZES",
    "GroupBehaviour",
    "GroupSeparation",
    "GroupSeries",
    "clear_cache",
    "constnet_group_series",
    "group_behaviour",
    "group_separation",
]

#: Significance level of the group-behaviour row (fixed before the runs).
P_THRESHOLD = 0.05
#: Fewest usable steps (every included ``1 - C`` positive) for the test to be made.
MIN_STEPS = 5
#: Largest number of relabellings enumerated (bounded time; 2,700 for the default network).
MAX_ASSIGNMENTS = 200_000
#: The network: stage widths and blocks per stage (those of figures.blumenfeld2020's Figs. 3, 4, 6).
WIDTHS, BLOCKS = (8, 16, 32), 1
#: Full-batch gradient descent step and dropout probability of the run.
LEARNING_RATE, DROPOUT = 0.1, 0.01
#: Sizes: networks in the ensemble, gradient steps, training images (8 x 8 digits, full batch).
SIZES = {
    "smoke": {"networks": 2, "steps": 3, "n_train": 16},
    "default": {"networks": 4, "steps": 100, "n_train": 128},
    "full": {"networks": 8, "steps": 600, "n_train": 512},
}


# --------------------------------------------------------------------------------------------------
# The exact permutation test
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GroupSeparation(Result):
    """Result of :func:`group_separation`.

    Attributes
    ----------
    ratio : float
        Mean within-group distance / mean between-group distance (same-stratum pairs only); 1 when
        every distance is 0.
    p_value : float
        Fraction of the distinct relabellings with a ratio ``<=`` the observed one (exact), in (0, 1].
    n_assignments : int
        Number of relabellings enumerated (the observed one included).
    mean_within, mean_between : float
        The two means of the ratio.
    distances : ndarray, shape (n_series, n_series)
        Root-mean-square distances between the series (averaged over networks).
    """

    ratio: float
    p_value: float
    n_assignments: int
    mean_within: float
    mean_between: float
    distances: np.ndarray = field(compare=False)


def _array(a, name: str) -> np.ndarray:
    if isinstance(a, (str, bytes)):
        raise TypeError(f"{name} must be an array, got {a!r}")
    try:
        return np.asarray(a)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{name} must be a rectangular array: {exc}") from None


def _labels(a, name: str, n: int) -> np.ndarray:
    arr = _array(a, name)
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer):
        raise TypeError(f"{name} must be an integer array, got dtype {arr.dtype}")
    if arr.shape != (n,):
        raise ValueError(f"{name} must have shape ({n},) (one label per series), got {arr.shape}")
    return arr.astype(np.int64)


def _multinomial(labels: np.ndarray) -> int:
    _, counts = np.unique(labels, return_counts=True)
    out = math.factorial(int(counts.sum()))
    for c in counts:
        out //= math.factorial(int(c))
    return out


def _distinct_permutations(labels: np.ndarray) -> np.ndarray:
    """Every distinct ordering of the multiset ``labels``, shape (m, n)."""
    values, counts = np.unique(labels, return_counts=True)
    counts = list(counts)
    n = labels.size
    rows, prefix = [], []

    def rec():
        if len(prefix) == n:
            rows.append(list(prefix))
            return
        for k, v in enumerate(values):
            if counts[k]:
                counts[k] -= 1
                prefix.append(v)
                rec()
                prefix.pop()
                counts[k] += 1

    rec()
    return np.asarray(rows, dtype=np.int64)


def _within_sum(labels: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Sum of the upper-triangular ``d`` over same-label pairs, for every row of ``labels`` (m, n)."""
    return np.einsum("mij,ij->m", labels[:, :, None] == labels[:, None, :], d)


def group_separation(series, groups, strata=None) -> GroupSeparation:
    """Are series of the same group closer to each other than to other groups? An exact permutation test.

    Parameters
    ----------
    series : array_like, shape (n_series, n_steps) or (n_networks, n_series, n_steps)
        Real, finite trajectories (e.g. ``log10(1 - C)``); with a leading networks axis the
        distances are averaged over networks (the labels are shared).
    groups : array_like of int, shape (n_series,)
        Group label of each series.
    strata : array_like of int, shape (n_series,), optional
        Kind of each series (e.g. 0 forward, 1 backward): only series of the same stratum are
        compared, and labels are permuted within each stratum. Default: one stratum.

    Returns
    -------
    GroupSeparation
        The ratio ``R`` = mean within-group / mean between-group root-mean-square distance and its
        exact permutation p-value.

    Raises
    ------
    ValueError
        Non-finite or empty series, shapes that do not match, no within-group or no
        between-group pair, more than :data:`MAX_ASSIGNMENTS` relabellings.
    TypeError
        Non-real series, non-integer labels.

    Notes
    -----
    ``D_ij = sqrt(mean_t (x_i(t) - x_j(t))^2)`` (mean over networks when given). Every distinct
    relabelling (group sizes kept within each stratum) is enumerated, the observed one included,
    so ``p = #{R' <= R} / #relabellings`` is exact under the null hypothesis that the labels are
    exchangeable, and never below ``1 / n_assignments``. Used for Blumenfeld et al.'s Sec. 4.2 (group
    behaviour of the forward and backward correlations, Figs. 4 and 6).
    """
    x = _array(series, "series")
    if x.dtype == bool or np.iscomplexobj(x) or not np.issubdtype(x.dtype, np.number):
        raise TypeError(f"series must be a real array, got dtype {x.dtype}")
    x = x.astype(np.float64)
    if x.ndim == 2:
        x = x[None]
    if x.ndim != 3 or 0 in x.shape:
        raise ValueError(
            f"series must have shape (n_series, n_steps) or (n_networks, n_series, n_steps), got {x.shape}"
        )
    if not np.all(np.isfinite(x)):
        raise ValueError("series must be finite")
    n = x.shape[1]
    g = _labels(groups, "groups", n)
    st = np.zeros(n, dtype=np.int64) if strata is None else _labels(strata, "strata", n)
    # D_ij: RMS over steps, mean over networks; differences of values up to 1e308 are scaled first
    scale = float(np.max(np.abs(x))) or 1.0
    diff = (x[:, :, None, :] - x[:, None, :, :]) / scale
    dist = np.sqrt(np.mean(diff**2, axis=3)).mean(axis=0) * scale
    strata_idx = [np.flatnonzero(st == s) for s in np.unique(st)]
    total = 1
    for idx in strata_idx:
        total *= _multinomial(g[idx])
        if total > MAX_ASSIGNMENTS:
            raise ValueError(
                f"groups allow more than MAX_ASSIGNMENTS = {MAX_ASSIGNMENTS} relabellings; use fewer series"
            )
    within_sums, w_obs, n_within, n_pairs, all_sum = [], 0.0, 0, 0, 0.0
    for idx in strata_idx:
        d = np.triu(dist[np.ix_(idx, idx)], 1)
        within_sums.append(_within_sum(_distinct_permutations(g[idx]), d))
        w_obs += float(_within_sum(g[idx][None], d)[0])
        _, counts = np.unique(g[idx], return_counts=True)
        n_within += int(sum(c * (c - 1) // 2 for c in counts))
        n_pairs += idx.size * (idx.size - 1) // 2
        all_sum += float(d.sum())
    n_between = n_pairs - n_within
    if n_within == 0:
        raise ValueError("groups must give at least one pair of series in the same group and stratum")
    if n_between == 0:
        raise ValueError("groups must give at least one pair of series in different groups of a stratum")
    # every combination of the strata's relabellings: within-group sums add over strata
    w_all = functools.reduce(lambda a, b: (a[:, None] + b[None, :]).ravel(), within_sums)
    mean_within, mean_between = w_obs / n_within, (all_sum - w_obs) / n_between
    if all_sum == 0.0:
        ratio, p = 1.0, 1.0
    else:
        ratio = mean_within / mean_between if mean_between > 0 else math.inf
        p = float(np.mean(w_all <= w_obs + 1e-12 * all_sum))
    ratio = float(min(ratio, 1e300))
    return GroupSeparation(
        ratio=ratio,
        p_value=p,
        n_assignments=int(w_all.size),
        mean_within=float(mean_within),
        mean_between=float(mean_between),
        distances=dist,
    )


# --------------------------------------------------------------------------------------------------
# The series of a ConstNet run
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GroupSeries(Result):
    """The series of the group-behaviour statistic (module docstring), from :func:`constnet_group_series`.

    Attributes
    ----------
    tensors : tuple of str
        Tensor of each series.
    kinds : tuple of str
        ``"forward"`` (``C_f``) or ``"backward"`` (``C_b``) for each series.
    groups : tuple of int
        The series' group: the tensor's forward group for ``C_f``, its backward group for ``C_b``.
    steps : ndarray of int
        Indices of the recorded steps used (every included ``1 - C`` positive in every network).
    log10 : ndarray, shape (n_networks, n_series, n_steps_used)
        ``log10(1 - C)`` at those steps.
    """

    tensors: tuple
    kinds: tuple
    groups: tuple
    steps: np.ndarray
    log10: np.ndarray

    def separation(self, kind: str | None = None) -> GroupSeparation | None:
        """:func:`group_separation` of the series (kinds as strata); None with fewer than :data:`MIN_STEPS` steps.

        ``kind="forward"`` or ``"backward"`` tests that kind's series alone (descriptive: with one
        block per stage the smallest attainable p-values are 6 / 90 and 2 / 30, above 0.05).
        """
        if kind not in (None, "forward", "backward"):
            raise ValueError(f"kind must be None, 'forward' or 'backward', got {kind!r}")
        if self.steps.size < MIN_STEPS:
            return None
        keep = np.array([kind is None or k == kind for k in self.kinds])
        kinds = np.array([0 if k == "forward" else 1 for k in self.kinds], dtype=np.int64)[keep]
        return group_separation(self.log10[:, keep], np.asarray(self.groups, dtype=np.int64)[keep], kinds)


def _complements(a, name: str, n_tensors: int) -> np.ndarray:
    arr = _array(a, name)
    if arr.dtype == bool or np.iscomplexobj(arr) or not np.issubdtype(arr.dtype, np.number):
        raise TypeError(f"{name} must be a real array, got dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    if arr.ndim == 2:
        arr = arr[None]
    if arr.ndim != 3 or arr.shape[2] != n_tensors or arr.shape[1] == 0 or arr.shape[0] == 0:
        raise ValueError(
            f"{name} must have shape (n_steps, {n_tensors}) or (n_networks, n_steps, {n_tensors}), got {np.shape(a)}"
        )
    if not np.all(np.isfinite(arr)) or np.any(arr < 0) or np.any(arr > 2):
        raise ValueError(f"{name} must hold values 1 - C in [0, 2]")
    return arr


def constnet_group_series(groups: ConstNetGroups, one_minus_cf, one_minus_cb) -> GroupSeries:
    """The 3 x 3 convolutions' ``log10(1 - C_f)`` and ``log10(1 - C_b)`` series, labelled by group.

    Parameters
    ----------
    groups : ConstNetGroups
        :func:`~meanfield.train.symmetric.constnet_groups` of the network.
    one_minus_cf, one_minus_cb : array_like, shape (n_steps, n_tensors) or (n_networks, n_steps, n_tensors)
        ``1 - C_f`` and ``1 - C_b`` of every convolution at every recorded step (step 0 =
        initialisation, dropped), tensors in ``groups.tensors`` order, values in [0, 2].

    Returns
    -------
    GroupSeries
        Forward series of the convolutions with ``kernel_size > 1``, then their backward series
        (except where the input is the data); only the steps after the first at which every one of
        them is positive in every network.

    Raises
    ------
    TypeError
        ``groups`` not a ConstNetGroups; non-real arrays.
    ValueError
        Arrays of the wrong shape (or of different shapes), values outside [0, 2] or not finite.

    Notes
    -----
    Blumenfeld et al. 2020, Sec. 4.2 and Fig. 6's caption; the selection rules (1 x 1 skips excluded, exact zeros
    dropped) are those of the module docstring, fixed before any run.
    """
    if not isinstance(groups, ConstNetGroups):
        raise TypeError(f"groups must be a ConstNetGroups, got {type(groups).__name__}")
    n = len(groups.tensors)
    cf = _complements(one_minus_cf, "one_minus_cf", n)
    cb = _complements(one_minus_cb, "one_minus_cb", n)
    if cf.shape != cb.shape:
        raise ValueError(f"one_minus_cf and one_minus_cb must have the same shape, got {cf.shape} and {cb.shape}")
    tensors, kinds, labels, cols = [], [], [], []
    for kind, arr, lab in (("forward", cf, groups.forward), ("backward", cb, groups.backward)):
        for j, (t, g, k) in enumerate(zip(groups.tensors, lab, groups.kernel_size)):
            if k > 1 and g >= 0:
                tensors.append(t)
                kinds.append(kind)
                labels.append(g)
                cols.append(arr[:, :, j])
    values = np.stack(cols, axis=1)  # (networks, series, steps)
    usable = np.all(values > 0, axis=(0, 1))
    usable[0] = False  # initialisation
    steps = np.flatnonzero(usable)
    return GroupSeries(tuple(tensors), tuple(kinds), tuple(labels), steps, np.log10(values[:, :, steps]))


# --------------------------------------------------------------------------------------------------
# The run and the row
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GroupBehaviour(Result):
    """The '0'-initialised ConstNet runs with 1 % dropout and their group statistic (:func:`group_behaviour`).

    Attributes
    ----------
    groups : ConstNetGroups
        Groups of the network's convolutions.
    one_minus_cf, one_minus_cb : ndarray, shape (n_networks, steps + 1, n_tensors)
        ``1 - C_f`` and ``1 - C_b`` of every convolution before every step and after the last.
    loss : ndarray, shape (n_networks, steps + 1)
        Training loss (cross-entropy, nats).
    series : GroupSeries
        The statistic's series.
    separation : GroupSeparation or None
        The exact permutation test; None when fewer than :data:`MIN_STEPS` steps are usable.
    params : dict
        Sizes, network, optimiser, seconds.
    """

    groups: ConstNetGroups
    one_minus_cf: np.ndarray
    one_minus_cb: np.ndarray
    loss: np.ndarray
    series: GroupSeries
    separation: GroupSeparation | None
    params: dict = field(default_factory=dict, compare=False)


def _size(size) -> dict:
    if not isinstance(size, str) or size not in SIZES:
        raise ValueError(f"size must be one of {tuple(SIZES)}, got {size!r}")
    return SIZES[size]


@functools.lru_cache(maxsize=4)
def _cached(size: str, seed: int) -> GroupBehaviour:
    import time

    from meanfield.train import load_training_data, train_ensemble

    sz = SIZES[size]
    t0, c0 = time.perf_counter(), time.process_time()
    spec = ConstNetSpec(widths=WIDTHS, blocks_per_stage=BLOCKS, init="zero")
    data = load_training_data(n_train=sz["n_train"], n_test=10)
    curves = train_ensemble(
        spec,
        sz["networks"],
        data=data,
        steps=sz["steps"],
        batch_size=sz["n_train"],  # full-batch gradient descent
        lr=LEARNING_RATE,
        optimizer="sgd",
        record_every=1,
        n_eval=None,
        rng=np.random.default_rng(np.random.SeedSequence(seed)),
        dtype="float64",
        noise=SymmetryBreaking(dropout=DROPOUT),
        probes={"cf": correlation_probe("forward"), "cb": correlation_probe("backward")},
    )
    groups = constnet_groups(spec)
    cf, cb = np.asarray(curves.probes["cf"]), np.asarray(curves.probes["cb"])
    series = constnet_group_series(groups, cf, cb)
    params = {
        **sz,
        "net": f"ConstNet widths {list(WIDTHS)}, {BLOCKS} block per stage, stride 2, 3x3, no batchnorm, '0' init",
        "noise": f"dropout {DROPOUT} on every activation",
        "optimiser": f"full-batch gradient descent, learning rate {LEARNING_RATE}, float64",
        "data": curves.dataset,
        "wall_seconds": time.perf_counter() - t0,
        "cpu_seconds": time.process_time() - c0,
    }
    return GroupBehaviour(groups, cf, cb, np.asarray(curves.train_loss), series, series.separation(), params)


@doc_sections(sized_run_raises=DOC_SIZED_RUN_RAISES)
def group_behaviour(size: str = "default", *, rng: Any = 0) -> GroupBehaviour:
    """Train '0'-initialised ConstNets with 1 % dropout and test the group behaviour of Sec. 4.2.

    Parameters
    ----------
    size : {"smoke", "default", "full"}
        :data:`SIZES` (networks, steps, training images).
    rng : int or numpy.random.Generator
        Seed of the ensemble (a Generator is reduced to one int drawn from it); the networks differ
        in their dropout masks only (the '0' initialisation is deterministic).

    Returns
    -------
    GroupBehaviour
        The correlations of every convolution at every step, the statistic's series and its exact
        permutation test. Cached per ``(size, seed)``.

    {sized_run_raises}

    Notes
    -----
    Blumenfeld et al. 2020, Sec. 4.2 ("group behaviour"), Fig. 4 and Fig. 6's caption. The paper: ConstNet on
    CIFAR-10, the first 3 epochs of 391 SGD steps; here the ConstNet of the module docstring on
    8 x 8 digits, full-batch gradient descent.
    """
    return _cached(_size(size) and size, _seed(rng))


def clear_cache() -> None:
    """Forget the cached runs of :func:`group_behaviour`."""
    _cached.cache_clear()
