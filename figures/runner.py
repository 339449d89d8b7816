"""``meanfield figures`` / ``python -m meanfield.figures``: discover the figures and run those asked for.

Every argument is checked before any figure is computed: the names must be known, the output folder
is created and a file test-written in it, ``--backend cupy`` needs CuPy and, for a figure named
explicitly, a figure that honours the backend (figures declared ``honours_backend=False`` run on the
CPU; inside ``PAPER`` or ``--all`` they do so with a notice). Usage errors print one line and exit
with status 2; a figure that fails prints one line, the others still run, and the exit status is 1.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
import time
from pathlib import Path

from meanfield.checks import renamed_kwargs
from meanfield.cli import (
    FIGURE_BACKEND_HELP,
    CliParser,
    add_common_arguments,
    backend_description,
    check_argv,
    exit_on_closed_pipe,
    open_executor,
    progress,
    size_from_args,
)

from ._common import SIZES, check_backend, check_out_dir, check_seed, check_size, registered

__all__ = ["add_arguments", "all_figures", "main", "run_figures", "select_figures"]


def all_figures() -> dict[str, callable]:
    """Every registered figure as ``{"paper.fig_name": function}``.

    Imports the public modules ``figures/PAPER.py`` (each imports its helper modules at its top), whose
    ``@figure`` declarations fill the registry (:func:`meanfield.figures._common.registered`).
    """
    import meanfield.figures as figures

    registry = {}
    for info in pkgutil.iter_modules(figures.__path__):
        if info.name.startswith("_"):
            continue
        importlib.import_module(f"meanfield.figures.{info.name}")
        for fig_name, func in registered(info.name).items():
            registry[f"{info.name}.{fig_name}"] = func
    return registry


def select_figures(names, registry=None) -> list[str]:
    """The registry keys for ``names`` (``"paper.fig"`` or ``"paper"``), in order, without repeats.

    Raises
    ------
    TypeError
        ``names`` is a single string or contains something that is not a string.
    ValueError
        A name is not a known figure or paper (the message lists the papers).
    """
    registry = all_figures() if registry is None else registry
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise TypeError(f"names must be a list of strings such as ['xiao2018.fig_s4', 'burkholz2019'], got {names!r}")
    chosen = []
    for name in names:
        matches = [k for k in registry if k == name or k.split(".")[0] == name]
        if not matches:
            papers = sorted({k.split(".")[0] for k in registry})
            raise ValueError(
                f"unknown figure {name!r}: give PAPER.FIG or PAPER (papers: {', '.join(papers)}; "
                "`meanfield figures --list` lists the figures)"
            )
        chosen.extend(m for m in matches if m not in chosen)
    return chosen


def _cpu_only(func) -> bool:
    return not func.honours_backend


def _plan(names, registry, backend):
    """``[(key, backend to use)]`` for ``names``; refuses a CPU-only figure named explicitly with another backend."""
    keys = select_figures(names, registry)
    if backend != "numpy":
        explicit = [n for n in names if n in registry and _cpu_only(registry[n])]
        if explicit:
            raise ValueError(
                f"{', '.join(explicit)} run(s) on the CPU only (NumPy, honours_backend=False); drop --backend {backend}"
            )
    return [(k, "numpy" if _cpu_only(registry[k]) else backend) for k in keys]


@renamed_kwargs(seed="rng")
def run_figures(
    names, out="results/figures", size=None, backend="numpy", rng=0, *, full=None, keep_going=False
) -> list[Path]:
    """Run the named figures and return the files written.

    Parameters
    ----------
    names : list of str
        ``"paper.fig"`` (one figure) or ``"paper"`` (all of a paper's figures).
    out : str or pathlib.Path
        Output folder (created; a file is test-written before any figure runs).
    size : {'smoke', 'default', 'full'}, optional
        Figure size; ``full=True`` is an alias of ``'full'``.
    backend : {'numpy', 'cupy', 'torch', 'array_api_strict'}
        Backend of the simulations; figures that run on the CPU only get ``'numpy'`` (and say so on
        stderr), except when named explicitly, which raises ``ValueError``.
    rng : int
        Non-negative seed passed to every figure (``seed=`` is its deprecated spelling).
    keep_going : bool
        When True a figure that raises is reported on one line and the others still run; the
        failures are listed in the ``RuntimeError`` raised at the end. A figure that needs an
        optional extra that is not installed (an ``ImportError`` naming ``meanfield-theory[EXTRA]``)
        is reported as skipped, whatever ``keep_going``.

    Returns
    -------
    list of pathlib.Path
        PNG and JSON files written.

    Raises
    ------
    TypeError, ValueError
        Bad arguments, before any figure runs.
    RuntimeError
        With ``keep_going``, when some figure failed (the message names them).
    """
    size = check_size(size, full)
    if not isinstance(keep_going, bool):
        raise TypeError(f"keep_going must be True or False, got {keep_going!r}")
    rng = check_seed(rng)
    backend = check_backend(backend)
    registry = all_figures()
    plan = _plan(names, registry, backend)
    out = check_out_dir(out)
    cpu = [k for k, b in plan if b != backend]
    if cpu:
        print(f"figures: running {len(cpu)} CPU-only figure(s) on numpy: {', '.join(cpu)}", file=sys.stderr)
    written, failed = [], []
    for key, fig_backend in progress(plan, desc="figures"):
        t0 = time.perf_counter()
        try:
            paths = registry[key](out, size=size, backend=fig_backend, rng=rng)
        except ImportError as exc:
            if "meanfield-theory[" not in str(exc):
                raise
            # an optional extra the figure needs is not installed: said, not a failure of the figure
            print(f"{key}: skipped: {exc}".splitlines()[0], file=sys.stderr)
            continue
        except Exception as exc:
            if not keep_going:
                raise
            failed.append(key)
            print(f"{key}: FAILED: {type(exc).__name__}: {exc}".splitlines()[0], file=sys.stderr)
            continue
        written.extend(paths)
        print(f"{key}: {', '.join(str(p) for p in paths)} ({time.perf_counter() - t0:.1f} s)", file=sys.stderr)
    if failed:
        raise RuntimeError(f"{len(failed)} figure(s) failed: {', '.join(failed)}")
    return written


def add_arguments(p: argparse.ArgumentParser, *, names: bool = True) -> None:
    """The arguments of ``meanfield figures`` (shared with ``python -m meanfield.figures``)."""
    if names:
        p.add_argument(
            "names",
            nargs="*",
            metavar="NAME",
            help="a figure as PAPER.FIG (e.g. xiao2018.fig_s4) or PAPER for all of a paper's",
        )
        p.add_argument("--all", action="store_true", help="every figure")
        p.add_argument("--list", action="store_true", help="list the figures (CPU-only ones marked) and exit")
    p.add_argument(
        "--out",
        default="results/figures",
        metavar="DIR",
        help="output folder, created if needed: a PNG and a JSON per figure (default: %(default)s)",
    )
    add_common_arguments(p, sizes=SIZES)


def _listing(registry) -> str:
    lines = []
    for key in sorted(registry):
        func = registry[key]
        what = f"{func.paper}, {func.figure}"
        where = "CPU only" if _cpu_only(func) else "numpy/cupy/torch"
        lines.append(f"{key:<34} {what:<44} {where}".rstrip())
    return "\n".join(lines)


@exit_on_closed_pipe
def main(argv=None, prog: str = "meanfield figures") -> int:
    """Entry point of ``meanfield figures`` and ``python -m meanfield.figures``; the exit status."""
    check_argv(argv)
    p = CliParser(
        prog=prog,
        description="Regenerate the papers' figures: a PNG and a self-describing JSON "
        "(read back with meanfield.figures.load) per figure. " + FIGURE_BACKEND_HELP,
    )
    add_arguments(p)
    try:
        args = p.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    registry = all_figures()
    if args.list:
        print(_listing(registry))
        return 0
    names = sorted(registry) if args.all else args.names
    if not names:
        return p.fail("name figures to make (PAPER.FIG or PAPER), or pass --all or --list")
    try:
        size = size_from_args(args)
        check_backend(args.backend)
        _plan(names, registry, args.backend)
        check_out_dir(args.out)
        stack = open_executor(args)
    except (TypeError, ValueError) as exc:
        return p.fail(str(exc))
    print(backend_description(args.backend))
    try:
        with stack:
            run_figures(names, out=args.out, size=size, backend=args.backend, rng=args.seed, keep_going=True)
    except RuntimeError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    return 0
