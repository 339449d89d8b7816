"""Results as JSON with a metadata block: written by the figures and the comparisons, read back safely.

Every output of the library (a figure's numbers beside its PNG, a validation table of
``meanfield validate --out``) is one JSON file with three blocks::

    {"metadata": {"library": "meanfield", "version": ..., "commit": ..., "modified": ...,
                  "created": ..., "kind": "figure" | "validation", "name": ..., "seed": 0,
                  "size": "default", "full": false, "backend": "numpy",
                  "params": {...}, "units": {...}, "notes": "..."},
     "axes": {"array name": ["axis 0 name", "axis 1 name", ...], ...},
     "data": {"array name": [...], ...}}

:func:`run_metadata` builds the common head of the metadata block, :func:`write_json` writes the
three blocks (refusing arrays of two or more dimensions whose axes are not named) and :func:`load`
reads a file back as a :class:`FigureData`, with the bounded reader
:func:`meanfield.checks.open_regular_file` and limits on size and nesting (:data:`MAX_JSON_BYTES`,
:data:`MAX_JSON_DEPTH`, :data:`JSON_CONTAINER_BYTES`) checked before parsing. Non-finite floats are
written as the strings ``"inf"``, ``"-inf"``, ``"nan"`` (JSON has no such numbers) and read back as
floats.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ._results import Result
from .checks import open_regular_file

__all__ = [
    "JSON_CONTAINER_BYTES",
    "MAX_JSON_BYTES",
    "MAX_JSON_DEPTH",
    "FigureData",
    "git_commit",
    "load",
    "run_metadata",
    "to_jsonable",
    "write_json",
]

#: Deepest nesting of arrays and objects :func:`load` accepts (a figure's JSON nests a few levels:
#: blocks, parameter dicts, arrays of up to four axes); deeper files are refused before parsing.
MAX_JSON_DEPTH = 64

#: Largest file :func:`load` reads (64 MiB; the figures' JSON files are kilobytes to a few
#: megabytes).
MAX_JSON_BYTES = 1 << 26

#: :func:`load` refuses a file with more than one array or object per this many bytes (plus
#: 65536; a figure's arrays hold numbers, at least two per row): an array costs ~80 bytes of
#: memory however short its text (``[],``), so this keeps the parsed file within about 30 times
#: its size.
JSON_CONTAINER_BYTES = 8

#: JSON strings (with their escapes): removed before the brackets are counted.
_JSON_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)

_NONFINITE = {"inf": np.inf, "-inf": -np.inf, "nan": np.nan}


def to_jsonable(obj):
    """Convert NumPy arrays and scalars (recursively) to JSON-serialisable Python objects.

    Non-finite floats become the strings ``"inf"``, ``"-inf"``, ``"nan"`` (JSON has no such numbers;
    :func:`load` turns them back into floats).
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


def _git(*args: str) -> str | None:
    """The output of ``git ARGS`` run in the library's source tree; None when git fails or is missing."""
    try:
        out = subprocess.run(
            ["git", *args],
            cwd=Path(__file__).resolve().parent,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def git_commit() -> str | None:
    """The git commit of the source tree the library runs from, when it is a git checkout."""
    out = _git("rev-parse", "HEAD")
    return (out.strip() or None) if out is not None else None


def _modified() -> bool | None:
    """Whether the git checkout the library runs from has uncommitted changes (None: not a checkout)."""
    out = _git("status", "--porcelain", "--untracked-files=no")
    return bool(out.strip()) if out is not None else None


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


def _check_axes(data: dict, axes: dict) -> None:
    for key, value in data.items():
        if isinstance(value, dict):
            continue
        try:
            arr = np.asarray(value)
        except ValueError:  # ragged lists
            arr = None
        if arr is None or arr.dtype == object:
            if isinstance(value, (list, tuple)) and key not in axes:
                raise ValueError(f"data[{key!r}] is a ragged list: name its axes in axes[{key!r}]")
            continue
        if arr.ndim >= 2:
            names = axes.get(key)
            if names is None or len(names) != arr.ndim:
                raise ValueError(f"data[{key!r}] has shape {arr.shape}: axes[{key!r}] must name its {arr.ndim} axes")
    unknown = sorted(set(axes) - set(data))
    if unknown:
        raise ValueError(f"axes names arrays that are not in data: {unknown}")


def write_json(path, metadata: dict, data: dict, axes: dict | None = None, check_axes: bool = True) -> Path:
    """Write the three-block JSON of a figure (or any result) to ``path``.

    Parameters
    ----------
    path : str or pathlib.Path
        The file written (replaced when it exists).
    metadata : dict
        The metadata block, usually :func:`run_metadata` with the result's own fields.
    data : dict
        Arrays and scalars (NumPy values are converted by :func:`to_jsonable`).
    axes : dict, optional
        ``{array name: [axis names]}``; required for every array of two or more dimensions.
    check_axes : bool
        Whether to check ``axes`` against ``data`` before anything is written.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    TypeError
        ``path`` is not a str or path, ``metadata`` or ``data`` not a dict, ``axes`` not a dict or
        None, ``check_axes`` not a bool.
    ValueError
        With ``check_axes``: an array of two or more dimensions (or a ragged list) without named
        axes, or ``axes`` naming an array that is not in ``data``.
    """
    if isinstance(path, bytes) or not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or pathlib.Path, got {path!r}")
    for name, block in (("metadata", metadata), ("data", data)):
        if not isinstance(block, dict):
            raise TypeError(f"{name} must be a dict, got {type(block).__name__}")
    if axes is not None and not isinstance(axes, dict):
        raise TypeError(f"axes must be a dict of axis-name lists or None, got {type(axes).__name__}")
    if not isinstance(check_axes, (bool, np.bool_)):
        raise TypeError(f"check_axes must be True or False, got {check_axes!r}")
    axes = {k: list(v) for k, v in (axes or {}).items()}
    if check_axes:
        _check_axes(data, axes)
    path = Path(path)
    path.write_text(json.dumps(to_jsonable({"metadata": metadata, "axes": axes, "data": data}), indent=1))
    return path


@dataclass(frozen=True)
class FigureData(Result):
    """A figure's numbers read back by :func:`load`.

    Attributes
    ----------
    metadata : dict
        Library version, commit, creation time, paper and figure, seed, ``full``, backend,
        ``params`` (every parameter used), ``units`` and ``notes``.
    axes : dict
        ``{array name: [axis names]}`` for every array of two or more dimensions (and any other the
        figure names).
    data : dict
        The arrays (NumPy, float where numeric) and scalars behind the figure.
    """

    metadata: dict = field(default_factory=dict)
    axes: dict = field(default_factory=dict)
    data: dict = field(default_factory=dict)

    def __getitem__(self, key):
        return self.data[key]


def _restore(value):
    if isinstance(value, str):
        return _NONFINITE.get(value, value)
    if isinstance(value, dict):
        return {k: _restore(v) for k, v in value.items()}
    if isinstance(value, list):
        items = [_restore(v) for v in value]
        try:
            arr = np.asarray(items)
        except ValueError:  # ragged
            return items
        if arr.dtype.kind in "biuf" and arr.ndim >= 1:
            return arr
        return items
    return value


def _json_nesting(raw: bytes) -> tuple[int, int]:
    """``(deepest nesting, number of arrays and objects)`` of a JSON text, brackets inside strings
    not counted (linear time, no recursion; the running depth is taken 1 MiB at a time)."""
    brackets = _JSON_STRING.sub(b"", raw).translate(None, b" \t\r\n,:0123456789.eE+-truefalsnul")
    steps = np.frombuffer(brackets, dtype=np.uint8)
    depth = deepest = opened = 0
    for start in range(0, steps.size, 1 << 20):
        seg = steps[start : start + (1 << 20)]
        opens = (seg == ord("[")) | (seg == ord("{"))
        delta = opens.astype(np.int64) - ((seg == ord("]")) | (seg == ord("}")))
        run = depth + np.cumsum(delta)
        deepest = max(deepest, int(run.max()))
        depth = int(run[-1])
        opened += int(np.count_nonzero(opens))
    return deepest, opened


def load(path) -> FigureData:
    """Read a figure's JSON, or a validation table's (``meanfield reproduce``, ``meanfield figures``,
    ``meanfield validate --out``).

    Parameters
    ----------
    path : str or pathlib.Path
        ``NAME.json`` or ``NAME.png`` (the JSON beside it is read).

    Returns
    -------
    FigureData
        ``metadata``, ``axes`` and ``data`` with numeric lists as NumPy arrays and the strings
        ``"inf"``, ``"-inf"``, ``"nan"`` restored to floats. ``metadata["kind"]`` is ``"figure"``
        or ``"validation"``.

    Raises
    ------
    TypeError
        ``path`` is not a str or path.
    ValueError
        The file cannot be read, is not a regular file (a FIFO or a device such as ``/dev/zero``
        is refused before it is read), is larger than :data:`MAX_JSON_BYTES`, nests arrays or
        objects deeper than :data:`MAX_JSON_DEPTH` or holds more than one per
        :data:`JSON_CONTAINER_BYTES` bytes (so parsing stays within about 30 times the file's size,
        and never raises ``RecursionError``), is not JSON, or is not an output of this
        library (no ``metadata``/``data`` blocks). The message names the path.

    Examples
    --------
    >>> from meanfield.figures import load  # doctest: +SKIP
    >>> d = load("results/figures/xiao2018_fig_s4.json")  # doctest: +SKIP
    >>> d.metadata["params"]["sigma_w2"], d.axes["monte_carlo"]  # doctest: +SKIP
    (2.25, ['layer', 'Fourier mode m'])
    """
    if isinstance(path, bytes) or not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a str or pathlib.Path, got {path!r}")
    path = Path(path)
    if path.suffix == ".png":
        path = path.with_suffix(".json")
    try:
        with open_regular_file(path) as f:
            if f.size > MAX_JSON_BYTES:
                raise ValueError(
                    f"path {str(path)!r} holds {f.size} bytes, more than MAX_JSON_BYTES = {MAX_JSON_BYTES} "
                    "(not a figure's JSON)"
                )
            text = f.read_at_most(MAX_JSON_BYTES + 1)
    except OSError as exc:
        raise ValueError(f"path {str(path)!r} cannot be read ({exc.strerror or type(exc).__name__})") from None
    if len(text) > MAX_JSON_BYTES:
        raise ValueError(f"path {str(path)!r} grew past MAX_JSON_BYTES = {MAX_JSON_BYTES} while being read")
    depth, containers = _json_nesting(text)
    if depth > MAX_JSON_DEPTH:
        raise ValueError(
            f"path {str(path)!r} nests arrays or objects {depth} deep, more than MAX_JSON_DEPTH = {MAX_JSON_DEPTH} "
            "(not a figure's JSON)"
        )
    most = len(text) // JSON_CONTAINER_BYTES + 65536
    if containers > most:
        raise ValueError(
            f"path {str(path)!r} holds {containers} arrays and objects, more than one per JSON_CONTAINER_BYTES = "
            f"{JSON_CONTAINER_BYTES} bytes (+ 65536): not a figure's JSON (refused: parsing it would take many times "
            "its size in memory)"
        )
    try:
        raw = json.loads(text.decode("utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise ValueError(f"path {str(path)!r} is not a JSON file: {exc}") from None
    if not isinstance(raw, dict) or "metadata" not in raw or "data" not in raw:
        raise ValueError(f"path {str(path)!r} is not a meanfield figure JSON (needs 'metadata' and 'data' blocks)")
    return FigureData(metadata=raw["metadata"], axes=raw.get("axes", {}), data=_restore(raw["data"]))
