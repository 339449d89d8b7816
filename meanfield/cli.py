"""The ``meanfield`` console script.

Subcommands
-----------
``meanfield reproduce [--out DIR] [--full] [--backend numpy|cupy]``
    The main job: regenerate every figure, then run every validation comparison.
``meanfield figures [NAME ...] [--all] [--list]``
    Same as ``python -m meanfield.figures``.
``meanfield validate [NAME ...]``
    Same as ``python -m meanfield.validation``.
"""

from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    p = argparse.ArgumentParser(prog="meanfield", description=__doc__.split("\n\n")[0])
    p.add_argument("command", choices=["reproduce", "figures", "validate"])
    if not argv or argv[0] in {"-h", "--help"}:
        p.print_help()
        return 0 if argv else 2
    command, rest = argv[0], argv[1:]
    if command == "figures":
        from meanfield.figures._runner import main as figures_main

        return figures_main(rest)
    if command == "validate":
        from meanfield.validation._runner import main as validation_main

        return validation_main(rest)
    if command == "reproduce":
        r = argparse.ArgumentParser(prog="meanfield reproduce", description="Every figure, then every validation.")
        r.add_argument("--out", default="results", help="output folder (figures under OUT/figures)")
        r.add_argument("--full", action="store_true", help="paper-size simulations (slow)")
        r.add_argument("--backend", default="numpy", choices=["numpy", "cupy"])
        r.add_argument("--seed", type=int, default=0)
        args = r.parse_args(rest)
        from meanfield.figures._runner import all_figures, run_figures
        from meanfield.validation._runner import comparison_modules, run_modules

        run_figures(sorted(all_figures()), out=f"{args.out}/figures", full=args.full, backend=args.backend, seed=args.seed)
        ok = run_modules(comparison_modules(), backend=args.backend, full=args.full, seed=args.seed)
        print(f"figures written to {args.out}/figures; validation {'passed' if ok else 'FAILED'}")
        return 0 if ok else 1
    p.error(f"unknown command {command!r}")
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
