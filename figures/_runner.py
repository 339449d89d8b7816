"""``python -m meanfield.figures``: discover the figure modules and run the figures asked for."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
import time
from pathlib import Path

from meanfield.validation._runner import progress

__all__ = ["all_figures", "main", "run_figures"]


def all_figures() -> dict[str, callable]:
    """Every registered figure as ``{"paper.fig_name": function}``."""
    import meanfield.figures as figures

    registry = {}
    for info in pkgutil.iter_modules(figures.__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"meanfield.figures.{info.name}")
        for fig_name, func in getattr(module, "FIGURES", {}).items():
            registry[f"{info.name}.{fig_name}"] = func
    return registry


def _select(names, registry):
    chosen = []
    for name in names:
        matches = [k for k in registry if k == name or k.split(".")[0] == name]
        if not matches:
            raise SystemExit(f"unknown figure {name!r}; run `python -m meanfield.figures --list`")
        chosen.extend(m for m in matches if m not in chosen)
    return chosen


def run_figures(names, out="results/figures", full=False, backend="numpy", seed=0) -> list[Path]:
    """Run the named figures (``"paper.fig"`` or ``"paper"``) and return the files written."""
    registry = all_figures()
    written = []
    for key in progress(_select(names, registry), desc="figures"):
        t0 = time.perf_counter()
        paths = registry[key](Path(out), full=full, backend=backend, seed=seed)
        written.extend(paths)
        print(f"{key}: {', '.join(str(p) for p in paths)} ({time.perf_counter() - t0:.1f} s)", file=sys.stderr)
    return written


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m meanfield.figures", description="Regenerate the papers' figures.")
    p.add_argument("names", nargs="*", help="figures as PAPER.FIG, or PAPER for all of a paper's")
    p.add_argument("--all", action="store_true", help="every figure")
    p.add_argument("--list", action="store_true", help="list the figures and exit")
    p.add_argument("--out", default="results/figures", help="output folder (PNG + JSON per figure)")
    p.add_argument("--full", action="store_true", help="paper-size simulations (slow)")
    p.add_argument("--backend", default="numpy", choices=["numpy", "cupy"])
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    registry = all_figures()
    if args.list:
        print("\n".join(sorted(registry)))
        return 0
    names = sorted(registry) if args.all else args.names
    if not names:
        p.error("name figures to make, or pass --all")
    run_figures(names, out=args.out, full=args.full, backend=args.backend, seed=args.seed)
    return 0
