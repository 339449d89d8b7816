"""The comparison package's tables: the library's rows and verdict rule, and the table's JSON (public).

The row type :class:`Comparison`, the verdict rule, :data:`Z_DEFAULT`, the printed table
(:func:`format_table`) and the sample statistics (:func:`mean_and_stderr`) live in the core,
:mod:`meanfield.compare` (shared with :mod:`meanfield.pytorch.audit`); JSON with a metadata block
(:func:`run_metadata`, :func:`to_jsonable`, :func:`git_commit`) in :mod:`meanfield.io`. Both are
re-exported here for the comparison modules. A row is a *check* (verdict ``ok`` / ``FAIL``; a
failure is a bug) or a *claim* of a paper or about the platform (``reproduced`` / ``not
reproduced`` at this size, reported, never a failure). :func:`write_table_json` writes a module's
table in the three blocks of every output of the library.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from meanfield.backend import BACKENDS
from meanfield.checks import renamed_kwargs
from meanfield.compare import (
    ROW_FIELDS,
    Z_DEFAULT,
    Comparison,
    format_table,
    mean_and_stderr,
    not_reproduced,
    table_records,
)
from meanfield.io import git_commit, run_metadata, to_jsonable, write_json

__all__ = [
    "ROW_FIELDS",
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
    return write_json(Path(path), meta, data, {"rows": ["comparison"]}, check_axes=False)
