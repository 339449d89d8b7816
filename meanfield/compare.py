"""Comparison rows, the verdict rule and the printed table, shared by :mod:`meanfield.validation` and :mod:`meanfield.pytorch.audit`.

A :class:`Comparison` holds one prediction, its estimate (a Monte-Carlo mean, a trained network's
statistic) and the estimate's standard error. The verdict rule (:func:`passes`) is

- ``side="both"``: ``|estimate - theory| <= z * stderr + systematic`` (the estimate equals the theory);
- ``side="above"`` / ``"below"``: ``estimate >= theory - tolerance`` / ``estimate <= theory + tolerance``
  (a bound: the estimate is not significantly below / above ``theory``);
- ``side="differs"``: ``|estimate - theory| > tolerance`` (the estimate is significantly away from
  ``theory``: a row demonstrating that an approximation does *not* hold);

with ``tolerance = z * stderr + systematic``: ``z`` is the number of standard errors allowed (a named
constant, :data:`Z_DEFAULT`, chosen so that a correct theory fails a table of ~100 rows with
probability < 1e-3; :func:`student_z` when the standard error is itself estimated from a few
samples), ``systematic`` an explicit, documented bound on effects the theory neglects on
purpose (e.g. the O(1/width) finite-width correction of mean-field theory; zero by default). A
non-finite theory, estimate or standard error never passes.

A row is one of two kinds (:data:`KINDS`):

- a **check** (``kind="check"``, the default): theory against simulation. Verdict ``ok`` or
  ``FAIL``; a failed check is a bug, and ``meanfield validate`` / ``meanfield reproduce`` exit 1.
- a **claim** of a paper or about the platform (``kind="claim"``): a statement the run reproduces or
  not at its size (a trained network's accuracy ordering, a property of the machine's kernels).
  Verdict ``reproduced`` or ``not reproduced``, with the evidence in the row; reported in the
  summary, never a failure (exit 0).

:func:`format_table` prints rows as ``theory | Monte-Carlo | standard error | tolerance | verdict``;
:func:`table_records` gives their JSON records (:data:`ROW_FIELDS`); :func:`mean_and_stderr` is the
sample mean and standard error most rows are built from.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ._checks import check_int
from ._results import Result
from .checks import as_float_array

__all__ = [
    "EXACT_RANK_MAX",
    "KINDS",
    "RANK_LEVEL",
    "ROW_FIELDS",
    "SIDES",
    "Z_DEFAULT",
    "Comparison",
    "RankTest",
    "format_table",
    "mean_and_stderr",
    "not_reproduced",
    "passes",
    "rank_correlation",
    "student_z",
    "table_records",
    "z_score",
]

#: Standard errors allowed by default: two-sided ``P(|Z| > 4.5) = 6.8e-6``, so 100 correct rows all
#: pass with probability > 0.999.
Z_DEFAULT = 4.5
#: What a row asserts about its estimate and theory (:func:`passes`).
SIDES = ("both", "above", "below", "differs")
#: A row is a check (a failure is a bug) or a claim (reproduced or not, reported).
KINDS = ("check", "claim")
#: From this many samples on, :func:`student_z` is the normal quantile ``z`` itself.
STUDENT_Z_LARGE = 200


def _check_real(value, attr: str) -> None:
    """A real scalar; ``stderr``, ``z``, ``systematic`` >= 0 and ``z``, ``systematic`` finite.
    NaN / inf in ``theory``, ``estimate`` or ``stderr`` is allowed: the row then does not pass."""
    if isinstance(value, (bool, np.bool_, str, bytes)) or np.iscomplexobj(value):
        raise TypeError(f"{attr} must be a real number, got {value!r}")
    arr = np.asarray(value)
    if arr.ndim != 0 or not np.issubdtype(arr.dtype, np.number):
        raise TypeError(f"{attr} must be a real scalar, got {value!r}")
    if attr in ("stderr", "z", "systematic") and float(arr) < 0:
        raise ValueError(f"{attr} must be >= 0, got {float(arr)}")
    if attr in ("z", "systematic") and not math.isfinite(float(arr)):
        raise ValueError(f"{attr} must be finite, got {float(arr)}")


def passes(theory, estimate, stderr, z: float = Z_DEFAULT, systematic: float = 0.0, side: str = "both") -> bool:
    """The verdict rule: whether ``estimate`` meets ``theory`` within ``z * stderr + systematic``.

    Parameters
    ----------
    theory, estimate, stderr : float
        The prediction, its estimate and the estimate's standard error; any of them non-finite: False.
    z : float
        Standard errors allowed (:data:`Z_DEFAULT`).
    systematic : float
        Documented bound on the bias the theory neglects, in the units of ``theory``.
    side : {"both", "above", "below", "differs"}
        See the module notes.

    Returns
    -------
    bool

    Raises
    ------
    TypeError
        An argument that is not a real scalar (a bool, a string, a complex number, an array).
    ValueError
        A negative ``stderr``, ``z`` or ``systematic``, a non-finite ``z`` or ``systematic``, an
        unknown ``side``.
    """
    if not isinstance(side, str) or side not in SIDES:
        raise ValueError(f"side must be one of {SIDES}, got {side!r}")
    for name, value in (
        ("theory", theory),
        ("estimate", estimate),
        ("stderr", stderr),
        ("z", z),
        ("systematic", systematic),
    ):
        _check_real(value, name)
    if not all(math.isfinite(float(v)) for v in (theory, estimate, stderr)):
        return False
    tolerance = z * stderr + systematic
    diff = float(estimate) - float(theory)
    if side == "above":
        return diff >= -tolerance
    if side == "below":
        return diff <= tolerance
    if side == "differs":
        return abs(diff) > tolerance
    return abs(diff) <= tolerance


@dataclass(frozen=True)
class Comparison(Result):
    """One row: a prediction, its estimate, the estimate's standard error and the verdict rule.

    Attributes
    ----------
    name : str
        What is compared (e.g. ``"tanh chaotic: q^5"``).
    theory : float
        The prediction.
    estimate : float
        The Monte-Carlo (or measured) estimate.
    stderr : float
        Standard error of ``estimate``.
    z : float
        Standard errors allowed.
    systematic : float
        Documented bound on the bias the theory neglects (absolute units of ``theory``).
    note : str
        Where the tolerance comes from, the evidence of a claim, anything a reader should know.
    side : {"both", "above", "below", "differs"}
        ``"both"``: the estimate must equal the theory; ``"above"`` / ``"below"``: the claim is a
        bound, the estimate must not fall significantly below / above ``theory``; ``"differs"``: the
        estimate must lie significantly away from ``theory`` (:func:`passes`).
    kind : {"check", "claim"}
        A check (a failure is a bug) or a claim (reproduced or not; module notes).
    """

    name: str
    theory: float
    estimate: float
    stderr: float
    z: float = Z_DEFAULT
    systematic: float = 0.0
    note: str = field(default="", compare=False)
    side: str = "both"
    kind: str = "check"

    def __post_init__(self):
        if not isinstance(self.name, str):
            raise TypeError(f"name must be a str, got {self.name!r}")
        if not isinstance(self.note, str):
            raise TypeError(f"note must be a str, got {self.note!r}")
        if not isinstance(self.side, str) or self.side not in SIDES:
            raise ValueError(f"side must be one of {', '.join(repr(s) for s in SIDES)}, got {self.side!r}")
        if not isinstance(self.kind, str) or self.kind not in KINDS:
            raise ValueError(f"kind must be 'check' or 'claim', got {self.kind!r}")
        for attr in ("theory", "estimate", "stderr", "z", "systematic"):
            _check_real(getattr(self, attr), attr)

    @property
    def tolerance(self) -> float:
        return self.z * self.stderr + self.systematic

    @property
    def passed(self) -> bool:
        """Whether the estimate meets the rule (:func:`passes`): a check passes, a claim is reproduced."""
        return passes(self.theory, self.estimate, self.stderr, self.z, self.systematic, self.side)

    @property
    def failed(self) -> bool:
        """A check that did not pass (a bug; a claim never fails)."""
        return self.kind == "check" and not self.passed

    @property
    def verdict(self) -> str:
        """``"ok"`` / ``"FAIL"`` for a check, ``"reproduced"`` / ``"not reproduced"`` for a claim."""
        if self.kind == "claim":
            return "reproduced" if self.passed else "not reproduced"
        return "ok" if self.passed else "FAIL"


def student_z(n_samples: int, z: float = Z_DEFAULT) -> float:
    """Standard errors allowed when the standard error is itself estimated from ``n_samples`` samples.

    The Student-t quantile, with ``n_samples - 1`` degrees of freedom, of the two-sided level of
    ``z`` (``P = 2 Phi(-z)``; ``6.8e-6`` for :data:`Z_DEFAULT`): 19.4 for 6 samples, 9.3 for 10, 6.1
    for 20; ``z`` itself from :data:`STUDENT_Z_LARGE` samples on.

    Parameters
    ----------
    n_samples : int
        Independent samples behind the standard error (>= 2).
    z : float
        The normal quantile of the level, in ``[0, 30]`` (beyond, the level ``2 Phi(-z)`` is below
        ``1e-197`` and the quantile is not meaningful).

    Returns
    -------
    float

    Raises
    ------
    TypeError
        ``z`` is not a real scalar, ``n_samples`` a complex number.
    ValueError
        ``n_samples`` is not an integer >= 2, ``z`` outside ``[0, 30]``.
    """
    n_samples = check_int(n_samples, "n_samples", 2)
    _check_real(z, "z")
    if float(z) > 30:
        raise ValueError(f"z must be in [0, 30], got {float(z)}")
    if n_samples >= STUDENT_Z_LARGE:
        return float(z)
    from scipy import special  # scipy.stats.t.isf(norm.sf(z), n - 1), without importing scipy.stats

    return float(-special.stdtrit(n_samples - 1, special.ndtr(-float(z))))


def mean_and_stderr(samples, axis=0):
    """Sample mean and its standard error (ddof = 1) along ``axis``.

    Parameters
    ----------
    samples : array_like of real numbers
        Independent samples along ``axis`` (at least 2).
    axis : int
        The sample axis.

    Returns
    -------
    mean, stderr : ndarray or float
        Non-finite samples (an overflowing simulation) give a non-finite mean or standard error on
        purpose: a :class:`Comparison` built from them FAILs, so the table shows the problem.

    Raises
    ------
    TypeError
        Complex, boolean or non-numeric samples, or an axis that is not an int.
    ValueError
        Fewer than 2 samples along ``axis``, or ``axis`` out of range.
    """
    try:
        complex_input = np.iscomplexobj(samples)
    except ValueError as exc:  # a ragged nested sequence
        raise ValueError("samples must be a regular (non-ragged) array of real numbers") from exc
    if complex_input:
        raise TypeError("samples must be real, got complex values")
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
        raise TypeError(f"axis must be an int, got {axis!r}")
    arr = np.asarray(samples)
    if arr.dtype == bool or not (np.issubdtype(arr.dtype, np.number) or arr.size == 0):
        raise TypeError(f"samples must be real numbers, got dtype {arr.dtype}")
    samples = arr.astype(np.float64)
    if samples.ndim == 0 or not -samples.ndim <= axis < samples.ndim:
        raise ValueError(f"axis {axis} is out of range for samples of shape {samples.shape}")
    n = samples.shape[axis]
    if n < 2:
        raise ValueError(
            f"samples needs at least 2 independent samples along axis {axis} for a standard error, got {n}"
        )
    mean = samples.mean(axis=axis)
    # scaled by the largest |sample| so that finite samples near the float64 limit (1e300) do not
    # overflow in the squares of the variance
    with np.errstate(invalid="ignore", over="ignore"):
        scale = np.max(np.abs(samples), axis=axis, keepdims=True)
        scale = np.where(np.isfinite(scale) & (scale > 0), scale, 1.0)
        stderr = (samples / scale).std(axis=axis, ddof=1) * np.squeeze(scale, axis=axis) / math.sqrt(n)
    return mean, stderr


def _rows(rows) -> list[Comparison]:
    rows = list(rows)
    if not all(isinstance(r, Comparison) for r in rows):
        raise TypeError("rows must be Comparison objects")
    return rows


def format_table(title: str, rows: list[Comparison]) -> str:
    """The table ``theory | Monte-Carlo | standard error | tolerance | verdict``.

    ``rows`` is a list of :class:`Comparison` (``TypeError`` otherwise); the last line counts the
    passed and failed checks and, when there are claims, the claims reproduced and not reproduced.
    """
    if not isinstance(title, str):
        raise TypeError(f"title must be a str, got {title!r}")
    rows = _rows(rows)
    width = max([len(r.name) for r in rows] + [len("comparison")])
    head = f"{'comparison':<{width}} | {'theory':>12} | {'Monte-Carlo':>12} | {'std. error':>10} | {'tolerance':>10} | verdict"
    lines = [f"== {title} ==", head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r.name:<{width}} | {r.theory:>12.6g} | {r.estimate:>12.6g} | {r.stderr:>10.3g} | "
            f"{r.tolerance:>10.3g} | {r.verdict}"
        )
    lines.append(f"{title}: {_counts(rows)}")
    return "\n".join(lines)


def not_reproduced(rows) -> list[Comparison]:
    """The claims among ``rows`` that the run did not reproduce (reported, not failures)."""
    return [r for r in rows if r.kind == "claim" and not r.passed]


def _counts(rows) -> str:
    """``"N passed, M failed"`` over the checks, then the claims (reproduced / not reproduced) if any."""
    checks = [r for r in rows if r.kind == "check"]
    failed = sum(r.failed for r in checks)
    text = f"{len(checks) - failed} passed, {failed} failed"
    claims = [r for r in rows if r.kind == "claim"]
    if claims:
        missing = len(not_reproduced(claims))
        text += f"; claims: {len(claims) - missing} reproduced, {missing} not reproduced"
    return text


#: Fields of one row in a validation table's JSON, in order.
ROW_FIELDS = (
    "name",
    "theory",
    "estimate",
    "stderr",
    "z",
    "systematic",
    "tolerance",
    "side",
    "passed",
    "note",
    "kind",
    "verdict",
)


def table_records(rows) -> list[dict]:
    """One dict per :class:`Comparison` with the fields of :data:`ROW_FIELDS`."""
    return [{f: getattr(r, f) for f in ROW_FIELDS} for r in rows]


# --- statistics of the paper-claim rows -------------------------------------------------------------


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
    The statistic of the rank rows of the trainability comparison (Grzejdziak 2023,
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
