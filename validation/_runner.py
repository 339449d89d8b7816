"""Command-line plumbing shared by every comparison module and by ``python -m meanfield.validation``.

A comparison module ``validation/NAME.py`` defines ``run(backend="numpy", full=False, seed=0)``
returning a list of :class:`validation._report.Comparison` and ends with::

    if __name__ == "__main__":
        raise SystemExit(main_for(run, __name__))

``python -m meanfield.validation`` discovers every such module (any public module of the package with a
``run`` function) and runs them all; it exits with status 1 when any comparison fails.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
import time

from tqdm.auto import tqdm

from ._report import format_table

__all__ = ["comparison_modules", "main_for", "progress", "run_modules"]


def progress(iterable=None, desc: str = "", total: int | None = None, **kwargs):
    """A tqdm progress bar on stderr (silenced when ``MEANFIELD_NO_PROGRESS=1``)."""
    disable = os.environ.get("MEANFIELD_NO_PROGRESS", "") == "1"
    return tqdm(iterable, desc=desc, total=total, disable=disable, leave=False, file=sys.stderr, **kwargs)


def comparison_modules() -> list[str]:
    """Names of the modules of ``validation`` that define a ``run`` comparison."""
    import meanfield.validation as validation

    names = []
    for info in pkgutil.iter_modules(validation.__path__):
        if info.name.startswith("_") or info.name in {"backend", "networks"}:
            continue
        module = importlib.import_module(f"meanfield.validation.{info.name}")
        if callable(getattr(module, "run", None)):
            names.append(info.name)
    return sorted(names)


def _parser(prog: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description="Theory versus Monte-Carlo comparisons.")
    p.add_argument("--backend", default="numpy", choices=["numpy", "cupy"], help="array backend of the simulations")
    p.add_argument("--full", action="store_true", help="paper-size simulations (slow)")
    p.add_argument("--seed", type=int, default=0, help="random seed")
    return p


def run_modules(names, backend="numpy", full=False, seed=0) -> bool:
    """Run the named comparison modules, print their tables; True when every row passed."""
    all_ok = True
    total_passed = total_failed = 0
    for name in progress(names, desc="validation"):
        module = importlib.import_module(f"meanfield.validation.{name}")
        t0 = time.perf_counter()
        rows = module.run(backend=backend, full=full, seed=seed)
        elapsed = time.perf_counter() - t0
        tqdm.write(format_table(f"validation.{name}", rows) + f"  ({elapsed:.1f} s)\n")
        failed = sum(not r.passed for r in rows)
        total_failed += failed
        total_passed += len(rows) - failed
        all_ok &= failed == 0 and len(rows) > 0
    print(f"validation: {total_passed} passed, {total_failed} failed")
    return all_ok


def main_for(run, module_name: str, argv=None) -> int:
    """Entry point of ``python -m meanfield.validation.NAME``: run one module's comparisons."""
    name = module_name.rsplit(".", 1)[-1]
    if module_name == "__main__":  # executed with python -m: recover the real name from argv[0]
        name = os.path.splitext(os.path.basename(sys.argv[0]))[0]
    args = _parser(f"python -m meanfield.validation.{name}").parse_args(argv)
    rows = run(backend=args.backend, full=args.full, seed=args.seed)
    print(format_table(f"validation.{name}", rows))
    return 0 if rows and all(r.passed for r in rows) else 1


def main(argv=None) -> int:
    """Entry point of ``python -m meanfield.validation``: every registered comparison."""
    p = _parser("python -m meanfield.validation")
    p.add_argument("names", nargs="*", help="comparison modules to run (default: all)")
    args = p.parse_args(argv)
    names = args.names or comparison_modules()
    unknown = sorted(set(names) - set(comparison_modules()))
    if unknown:
        p.error(f"unknown comparison module(s) {unknown}; known: {comparison_modules()}")
    return 0 if run_modules(names, backend=args.backend, full=args.full, seed=args.seed) else 1
