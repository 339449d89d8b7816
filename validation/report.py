"""Theory-versus-Monte-Carlo comparisons, their verdicts, the printed table and its JSON (public).

A :class:`Comparison` holds one prediction, its Monte-Carlo estimate and the estimate's standard
error. The verdict is ``|theory - estimate| <= z * stderr + systematic`` (or, for a one-sided claim
such as "at least 90 %", ``estimate >= theory - tolerance`` with ``side="above"`` and
``estimate <= theory + tolerance`` with ``side="below"``): ``z`` is the number of
standard errors allowed (a named constant, :data:`Z_DEFAULT`, chosen so that a correct theory
fails a table of ~100 rows with probability < 1e-3), and ``systematic`` an explicit, documented
bound on effects the theory neglects on purpose (e.g. the O(1/width) finite-width correction of
mean-field theory); it defaults to zero.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from meanfield._deprecate import renamed_kwargs
from meanfield.backend import BACKENDS

__all__ = [
    "Z_DEFAULT",
    "Comparison",
    "format_table",
    "git_commit",
    "mean_and_stderr",
    "run_metadata",
    "table_records",
    "to_jsonable",
    "write_table_json",
]

#: Standard errors allowed by default: two-sided ``P(|Z| > 4.5) = 6.8e-6``, so 100 correct rows all
#: pass with probability > 0.999.
Z_DEFAULT = 4.5


@dataclass(frozen=True)
class Comparison:
    """One theory-versus-simulation row.

    Attributes
    ----------
    name : str
        What is compared (e.g. ``"tanh chaotic: q^5"``).
    theory : float
        The prediction.
    estimate : float
        The Monte-Carlo estimate.
    stderr : float
        Standard error of ``estimate``.
    z : float
        Standard errors allowed.
    systematic : float
        Documented bound on the bias the theory neglects (absolute units of ``theory``).
    note : str
        Where the tolerance comes from, or anything a reader should know.
    side : {"both", "above", "below"}
        ``"both"``: the estimate must equal the theory; ``"above"`` / ``"below"``: the claim is a
        bound, the estimate must not fall significantly below / above ``theory``.
    """

    name: str
    theory: float
    estimate: float
    stderr: float
    z: float = Z_DEFAULT
    systematic: float = 0.0
    note: str = field(default="", compare=False)
    side: str = "both"

    def __post_init__(self):
        if not isinstance(self.name, str):
            raise TypeError(f"name must be a str, got {self.name!r}")
        if not isinstance(self.note, str):
            raise TypeError(f"note must be a str, got {self.note!r}")
        if not isinstance(self.side, str) or self.side not in ("both", "above", "below"):
            raise ValueError(f"side must be 'both', 'above' or 'below', got {self.side!r}")
        for attr in ("theory", "estimate", "stderr", "z", "systematic"):
            value = getattr(self, attr)
            if isinstance(value, (bool, np.bool_, str, bytes)) or np.iscomplexobj(value):
                raise TypeError(f"{attr} must be a real number, got {value!r}")
            arr = np.asarray(value)
            if arr.ndim != 0 or not np.issubdtype(arr.dtype, np.number):
                raise TypeError(f"{attr} must be a real scalar, got {value!r}")
            # NaN/inf in theory, estimate or stderr is allowed: the row then FAILs (a visible verdict)
            if attr in ("stderr", "z", "systematic") and float(arr) < 0:
                raise ValueError(f"{attr} must be >= 0, got {float(arr)}")
            if attr in ("z", "systematic") and not math.isfinite(float(arr)):
                raise ValueError(f"{attr} must be finite, got {float(arr)}")

    @property
    def tolerance(self) -> float:
        return self.z * self.stderr + self.systematic

    @property
    def passed(self) -> bool:
        values = (self.theory, self.estimate, self.stderr)
        if not all(math.isfinite(float(v)) for v in values):
            return False
        diff = float(self.estimate) - float(self.theory)
        if self.side == "above":
            return diff >= -self.tolerance
        if self.side == "below":
            return diff <= self.tolerance
        return abs(diff) <= self.tolerance

    @property
    def verdict(self) -> str:
        return "ok" if self.passed else "FAIL"


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


def format_table(title: str, rows: list[Comparison]) -> str:
    """The table ``theory | Monte-Carlo | standard error | tolerance | verdict``.

    ``rows`` is a list of :class:`Comparison` (``TypeError`` otherwise); the last line counts the
    passed and failed rows.
    """
    if not isinstance(title, str):
        raise TypeError(f"title must be a str, got {title!r}")
    rows = list(rows)
    if not all(isinstance(r, Comparison) for r in rows):
        raise TypeError("rows must be Comparison objects")
    width = max([len(r.name) for r in rows] + [len("comparison")])
    head = f"{'comparison':<{width}} | {'theory':>12} | {'Monte-Carlo':>12} | {'std. error':>10} | {'tolerance':>10} | verdict"
    lines = [f"== {title} ==", head, "-" * len(head)]
    for r in rows:
        lines.append(
            f"{r.name:<{width}} | {r.theory:>12.6g} | {r.estimate:>12.6g} | {r.stderr:>10.3g} | "
            f"{r.tolerance:>10.3g} | {r.verdict}"
        )
    failed = sum(not r.passed for r in rows)
    lines.append(f"{title}: {len(rows) - failed} passed, {failed} failed")
    return "\n".join(lines)


# --- self-describing output (shared with meanfield.figures._io) ----------------------------------


def to_jsonable(obj):
    """Convert NumPy arrays and scalars (recursively) to JSON-serialisable Python objects.

    Non-finite floats become the strings ``"inf"``, ``"-inf"``, ``"nan"`` (JSON has no such numbers;
    :func:`meanfield.figures.load` turns them back into floats).
    """
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (np.floating, float)):
        value = float(obj)
        return value if math.isfinite(value) else str(value)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, Path):
        return str(obj)
    return obj


def git_commit() -> str | None:
    """The git commit of the source tree the library runs from, when it is a git checkout."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def _modified() -> bool | None:
    """Whether the git checkout the library runs from has uncommitted changes (None: not a checkout)."""
    try:
        out = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return bool(out.stdout.strip()) if out.returncode == 0 else None


def run_metadata(**fields) -> dict:
    """The common head of every metadata block: library, version, commit and whether the checkout had
    uncommitted changes (``None`` when not run from a git checkout), creation time (UTC, ISO 8601),
    followed by ``fields``."""
    from meanfield import __version__

    commit = git_commit()
    return {
        "library": "meanfield",
        "version": __version__,
        "commit": commit,
        "modified": _modified() if commit else None,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        **fields,
    }


#: Fields of one row in a validation table's JSON, in order.
ROW_FIELDS = ("name", "theory", "estimate", "stderr", "z", "systematic", "tolerance", "side", "passed", "note")


def table_records(rows) -> list[dict]:
    """One dict per :class:`Comparison` with the fields of :data:`ROW_FIELDS`."""
    return [{f: getattr(r, f) for f in ROW_FIELDS} for r in rows]


@renamed_kwargs(seed="rng")
def write_table_json(path, title: str, rows, *, seed, full: bool, backend: str, seconds: float | None = None) -> Path:
    """Write a validation table as JSON with the metadata block of every output of the library.

    The file has the three blocks of a figure's JSON (``metadata``, ``axes``, ``data``) and is read
    back by :func:`meanfield.figures.load`; ``data["rows"]`` holds one record per comparison
    (:data:`ROW_FIELDS`), ``data["passed"]`` / ``data["failed"]`` the counts.

    Raises ``TypeError`` / ``ValueError`` naming the argument for a ``title`` that is not a str, a
    ``rng`` that is not an int >= 0, a non-bool ``full``, a ``backend`` not in
    :data:`meanfield.backend.BACKENDS`, ``seconds`` not None or a finite number >= 0, or rows that are not :class:`Comparison`.
    """
    if not isinstance(title, str):
        raise TypeError(f"title must be a str, got {title!r}")
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"rng must be a non-negative int seed (what the run recorded), got {seed!r}")
    if seed < 0:
        raise ValueError(f"rng must be a non-negative int seed (what the run recorded), got {seed!r}")
    if not isinstance(full, (bool, np.bool_)):
        raise TypeError(f"full must be True or False, got {full!r}")
    if not isinstance(backend, str) or backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if seconds is not None:
        if isinstance(seconds, (bool, np.bool_, str, bytes)) or np.iscomplexobj(seconds) or np.ndim(seconds) != 0:
            raise TypeError(f"seconds must be None or a real number, got {seconds!r}")
        if not (math.isfinite(float(seconds)) and float(seconds) >= 0):
            raise ValueError(f"seconds must be finite and >= 0, got {seconds!r}")
    rows = list(rows)
    if not all(isinstance(r, Comparison) for r in rows):
        raise TypeError("rows must be Comparison objects")
    failed = sum(not r.passed for r in rows)
    meta = run_metadata(
        kind="validation",
        name=title,
        seed=seed,
        size="full" if full else "default",
        full=bool(full),
        backend=backend,
        params={},
        seconds=seconds,
        units={
            "theory": "unit of the compared quantity (see the row name)",
            "estimate": "same as theory",
            "stderr": "same as theory",
            "tolerance": "same as theory",
            "z": "standard errors",
        },
        notes="verdict: |estimate - theory| <= z * stderr + systematic (side='both'); one-sided for "
        "side='above'/'below' (see meanfield.validation.report)",
    )
    data = {"rows": table_records(rows), "passed": len(rows) - failed, "failed": failed}
    path = Path(path)
    path.write_text(
        json.dumps(to_jsonable({"metadata": meta, "axes": {"rows": ["comparison"]}, "data": data}), indent=1)
    )
    return path
