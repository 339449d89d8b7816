"""Compare two ``meanfield reproduce`` (or ``meanfield validate --out``) output folders number by number.

Usage::

    python benchmarks/compare_runs.py A_DIR B_DIR [--rtol R] [--atol A] [--ignore KEY ...] [--max-lines N]

Every ``*.json`` file under either folder (``figures/*.json``, ``validation/validation_*.json``, or
the files of one ``--out`` folder) is read and compared with its namesake in the other folder:
every number of its ``data`` and ``axes`` blocks and every metadata field except those that
record *when* or *how long* (``created``, ``seconds``, ``commit``, ``modified``, ``wall_s`` by
default; ``--ignore`` adds keys, anywhere in the tree). Validation tables are compared row by row
(matched by the row's name): a changed verdict (``passed``) is reported first as ``VERDICT``,
then every differing number of the row.

Numbers are equal when ``|a - b| <= atol + rtol * max(|a|, |b|)``; the defaults (0, 0) ask for
bit-for-bit equality, which is what :mod:`meanfield.parallel` promises for serial versus
``--workers N`` runs of the same seed. PNG files are not compared (matplotlib output is not a
number); their JSON is.

Prints one line per file (``same``, ``DIFFERENT: n values``, ``only in A``) and the differences
(``path: a != b``), then a summary; exit status 0 when everything compared is equal, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

#: Keys whose values differ between two runs of the same computation (clock, commit, timing).
DEFAULT_IGNORE = ("created", "seconds", "commit", "modified", "wall_s")


def _is_number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _num(x):
    """Numbers, and the strings 'inf' / '-inf' / 'nan' a figure JSON uses for non-finite values."""
    if _is_number(x):
        return float(x)
    if isinstance(x, str) and x in ("inf", "-inf", "nan", "Infinity", "-Infinity", "NaN"):
        return float(x.replace("Infinity", "inf").replace("NaN", "nan"))
    return None


def _close(a: float, b: float, rtol: float, atol: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= atol + rtol * max(abs(a), abs(b))


def compare(a, b, path: str, out: list, *, rtol: float, atol: float, ignore: set) -> int:
    """Append ``(path, a, b)`` for every difference between two JSON trees; return values compared."""
    if isinstance(a, dict) and isinstance(b, dict):
        n = 0
        for k in sorted(set(a) | set(b)):
            if k in ignore:
                continue
            if k not in a or k not in b:
                out.append((f"{path}.{k}", a.get(k, "<missing>"), b.get(k, "<missing>")))
                continue
            n += compare(a[k], b[k], f"{path}.{k}", out, rtol=rtol, atol=atol, ignore=ignore)
        return n
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append((f"{path} (length)", len(a), len(b)))
            return 1
        return sum(
            compare(x, y, f"{path}[{i}]", out, rtol=rtol, atol=atol, ignore=ignore)
            for i, (x, y) in enumerate(zip(a, b))
        )
    na, nb = _num(a), _num(b)
    if na is not None and nb is not None:
        if not _close(na, nb, rtol, atol):
            out.append((path, a, b))
        return 1
    if a != b:
        out.append((path, a, b))
    return 1


def compare_validation(a: dict, b: dict, out: list, verdicts: list, *, rtol: float, atol: float, ignore: set) -> int:
    """Validation tables: rows matched by name; verdict changes listed in ``verdicts``."""
    rows_a = {r["name"]: r for r in a.get("data", {}).get("rows", [])}
    rows_b = {r["name"]: r for r in b.get("data", {}).get("rows", [])}
    n = 0
    for name in list(rows_a) + [k for k in rows_b if k not in rows_a]:
        if name not in rows_a or name not in rows_b:
            out.append(
                (
                    f"row {name!r}",
                    "present" if name in rows_a else "<missing>",
                    "present" if name in rows_b else "<missing>",
                )
            )
            continue
        ra, rb = rows_a[name], rows_b[name]
        if ra.get("passed") != rb.get("passed"):
            verdicts.append((name, ra.get("passed"), rb.get("passed")))
        n += compare(ra, rb, f"row {name!r}", out, rtol=rtol, atol=atol, ignore=ignore)
    rest_a = {k: v for k, v in a.items() if k != "data"}
    rest_b = {k: v for k, v in b.items() if k != "data"}
    rest_a["data"] = {k: v for k, v in a.get("data", {}).items() if k != "rows"}
    rest_b["data"] = {k: v for k, v in b.get("data", {}).items() if k != "rows"}
    return n + compare(rest_a, rest_b, "", out, rtol=rtol, atol=atol, ignore=ignore)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("a_dir", type=Path)
    p.add_argument("b_dir", type=Path)
    p.add_argument("--rtol", type=float, default=0.0, help="relative tolerance (default 0: bitwise)")
    p.add_argument("--atol", type=float, default=0.0, help="absolute tolerance (default 0)")
    p.add_argument("--ignore", nargs="*", default=[], help=f"more keys to skip (always: {', '.join(DEFAULT_IGNORE)})")
    p.add_argument("--max-lines", type=int, default=20, help="differences printed per file")
    args = p.parse_args(argv)
    for d in (args.a_dir, args.b_dir):
        if not d.is_dir():
            p.error(f"{d} is not a folder")
    if not (args.rtol >= 0 and args.atol >= 0 and math.isfinite(args.rtol) and math.isfinite(args.atol)):
        p.error("--rtol and --atol must be finite and >= 0")
    ignore = set(DEFAULT_IGNORE) | set(args.ignore)
    files_a = {f.relative_to(args.a_dir) for f in args.a_dir.rglob("*.json")}
    files_b = {f.relative_to(args.b_dir) for f in args.b_dir.rglob("*.json")}
    n_same = n_diff = n_values = n_verdicts = 0
    for rel in sorted(files_a | files_b, key=str):
        if rel not in files_b or rel not in files_a:
            print(f"{rel}: only in {'A' if rel in files_a else 'B'}")
            n_diff += 1
            continue
        ja = json.loads((args.a_dir / rel).read_text())
        jb = json.loads((args.b_dir / rel).read_text())
        out: list = []
        verdicts: list = []
        if ja.get("metadata", {}).get("kind") == "validation":
            n = compare_validation(ja, jb, out, verdicts, rtol=args.rtol, atol=args.atol, ignore=ignore)
        else:
            n = compare(ja, jb, "", out, rtol=args.rtol, atol=args.atol, ignore=ignore)
        n_values += n
        if not out:
            print(f"{rel}: same ({n} values)")
            n_same += 1
            continue
        n_diff += 1
        n_verdicts += len(verdicts)
        print(f"{rel}: DIFFERENT: {len(out)} of {n} values, {len(verdicts)} verdicts")
        for name, va, vb in verdicts:
            print(f"  VERDICT {name!r}: passed={va} in A, passed={vb} in B")
        for path, va, vb in out[: args.max_lines]:
            print(f"  {path}: {va!r} != {vb!r}")
        if len(out) > args.max_lines:
            print(f"  ... {len(out) - args.max_lines} more")
    tol = "bitwise" if args.rtol == 0 and args.atol == 0 else f"rtol={args.rtol:g}, atol={args.atol:g}"
    print(
        f"compared {n_same + n_diff} files ({n_values} values, {tol}): {n_same} same, {n_diff} different, "
        f"{n_verdicts} verdicts changed"
    )
    return 0 if n_diff == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
