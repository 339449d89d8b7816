"""Theory-versus-Monte-Carlo comparisons, their verdicts, the printed table and its JSON (public).

The row type :class:`Comparison`, the verdict rule and :data:`Z_DEFAULT` live in the core,
:mod:`meanfield.compare` (shared with :mod:`meanfield.pytorch.audit`), and are re-exported here. A
row is a *check* (verdict ``ok`` / ``FAIL``; a failure is a bug) or a *claim* of a paper or about the
platform (``reproduced`` / ``not reproduced`` at this size, reported, never a failure).
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import subprocess
from pathlib import Path

import numpy as np

from meanfield.backend import BACKENDS
from meanfield.checks import renamed_kwargs
from meanfield.compare import Z_DEFAULT, Comparison

__all__ = [
    "Z_DEFAULT",
    "Comparison",
    "format_table",
    "git_commit",
    "mean_and_stderr",
    "not_reproduced",
    "run_metadata",
    "table_records",
    "to_jsonable",
    "write_table_json",
]


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
    passed and failed checks and, when there are claims, the claims reproduced and not reproduced.
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


@renamed_kwargs(seed="rng")
def write_table_json(path, title: str, rows, *, seed, full: bool, backend: str, seconds: float | None = None) -> Path:
    """Write a validation table as JSON with the metadata block of every output of the library.

    The file has the three blocks of a figure's JSON (``metadata``, ``axes``, ``data``) and is read
    back by :func:`meanfield.figures.load`; ``data["rows"]`` holds one record per comparison
    (:data:`ROW_FIELDS`).

    Raises ``TypeError`` / ``ValueError`` naming the argument for a ``title`` that is not a str, a
    ``rng`` that is not an int >= 0, a non-bool ``full``, a ``backend`` not in
    :data:`meanfield.backend.BACKENDS`, ``seconds`` not None or a finite number >= 0, or rows that are not :class:`Comparison`.
    ``data["passed"]`` / ``data["failed"]`` count the checks, ``data["claims_reproduced"]`` /
    ``data["claims_not_reproduced"]`` the claims.
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
    failed = sum(r.failed for r in rows)
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
        "side='above'/'below', > for side='differs'; kind 'check' (ok / FAIL, a failure is a bug) or 'claim' "
        "(reproduced / not reproduced, reported) (see meanfield.compare)",
    )
    checks = sum(r.kind == "check" for r in rows)
    missing = len(not_reproduced(rows))
    data = {
        "rows": table_records(rows),
        "passed": checks - failed,
        "failed": failed,
        "claims_reproduced": len(rows) - checks - missing,
        "claims_not_reproduced": missing,
    }
    path = Path(path)
    path.write_text(
        json.dumps(to_jsonable({"metadata": meta, "axes": {"rows": ["comparison"]}, "data": data}), indent=1)
    )
    return path
