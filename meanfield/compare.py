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

__all__ = [
    "KINDS",
    "ROW_FIELDS",
    "SIDES",
    "Z_DEFAULT",
    "Comparison",
    "format_table",
    "mean_and_stderr",
    "not_reproduced",
    "passes",
    "student_z",
    "table_records",
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
class Comparison:
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
