"""The ``meanfield`` console script.

Subcommands
-----------
``meanfield reproduce [--out DIR] [--size smoke|default|full | --full] [--backend numpy|cupy|torch] [--seed N] [--workers N | --scheduler ADDRESS]``
    The main job: every figure (``DIR/figures``), then every validation comparison, whose tables are
    also written as JSON (``DIR/validation``).
``meanfield figures [NAME ...] [--all] [--list] [--out DIR] [...]``
    Regenerate figures (``python -m meanfield.figures`` is the same command).
``meanfield validate [NAME ...] [--list] [--out DIR] [--full] [...]``
    Theory-versus-Monte-Carlo tables (``python -m meanfield.validation`` is the same command).
``meanfield audit PATH.py:FUNCTION [--inputs digits|FILE] [--out DIR] [--n-inits N] [--seed N]``
    Audit a PyTorch model against mean-field theory (:mod:`meanfield.pytorch`; needs the torch extra).
    Exit status 0 every checked row passed, 1 a row failed, 2 usage error (bad arguments, an
    existing file as ``--out``, a model that cannot be loaded or whose function raises or calls
    ``sys.exit``), 3 nothing could be checked (every row "no theory").

Every argument is checked before any work (the output folder is created and a file test-written,
``--backend cupy`` needs CuPy, names must be known, ``--seed`` a non-negative integer). Exit status:
0 success (claims of the papers not reproduced at this size are listed, not failures), 1 a figure
or a check failed, 2 usage error (one line on stderr), 3 (``audit`` only) nothing could be checked,
130 interrupted.
``MEANFIELD_NO_PROGRESS=1`` in the environment hides the progress bars (as ``--no-progress`` does).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

#: What ``meanfield figures --help`` says about --backend (kept in one place with figures/runner.py).
FIGURE_BACKEND_HELP = (
    "--backend cupy/torch runs the simulations of the figures that honour it on that backend; the "
    "figures marked 'CPU only' in --list (no simulation, or simulations on NumPy only: declared "
    "honours_backend=False) run on NumPy, with a notice, and naming one of them explicitly with "
    "another backend is a usage error."
)

__all__ = ["main"]

_DESCRIPTION = """\
Mean-field theory of signal propagation in random deep networks: regenerate the
papers' figures and check every prediction against Monte-Carlo simulation.
Run `meanfield COMMAND --help` for a command's options."""

_EXAMPLES = """\
examples:
  meanfield reproduce --out results          every figure, then every comparison
  meanfield figures --list                   the figures, CPU-only ones marked
  meanfield figures xiao2018.fig_s4 --size smoke --out /tmp/figs
  meanfield validate dense conv --out results/validation
  meanfield audit model.py:build_model       audit a PyTorch model (exit 3: nothing checked)
  python -c "import meanfield.figures as f; print(f.load('results/figures/xiao2018_fig_s4.json'))"
"""


_AUDIT_EXIT_STATUS = """\
exit status:
  0  every row that theory covers passed
  1  at least one row FAILed
  2  usage error, one line on stderr: bad arguments, --out an existing file or not
     writable, a model or inputs that cannot be loaded, a model function that
     raises or calls sys.exit()
  3  nothing could be checked: every row is "no theory" (no layer the theory
     describes), so no prediction was compared
  130 interrupted
"""


def _version() -> str:
    from meanfield import __version__
    from meanfield.validation.report import git_commit

    commit = git_commit()
    return f"meanfield {__version__}" + (f" (commit {commit[:12]})" if commit else "")


def _parser():
    from meanfield.figures.runner import add_arguments as figure_arguments
    from meanfield.validation.runner import ENVIRONMENT_HELP, CliParser, add_common_arguments
    from meanfield.validation.runner import add_arguments as validation_arguments

    p = CliParser(prog="meanfield", description=_DESCRIPTION, epilog=_EXAMPLES + "\n" + ENVIRONMENT_HELP)
    p.add_argument("--version", action="version", version=_version())
    sub = p.add_subparsers(dest="command", title="commands", metavar="COMMAND", parser_class=CliParser)
    r = sub.add_parser(
        "reproduce",
        help="the main job: every figure, then every validation comparison",
        description="The main job: every figure into OUT/figures, then every validation "
        "comparison, its tables also as JSON into OUT/validation. --size applies to the "
        "figures; the comparisons run at the default size unless --size full / --full. "
        "Figures and comparison modules that cannot use --backend cupy/torch run on NumPy (and say so). Exit "
        "status 1 when a figure or a check failed; claims not reproduced at this size are listed, exit 0.",
    )
    r.add_argument(
        "--out",
        default="results",
        metavar="DIR",
        help="output folder: DIR/figures and DIR/validation (default: %(default)s)",
    )
    from meanfield.figures.runner import SIZES

    add_common_arguments(r, sizes=SIZES)
    f = sub.add_parser(
        "figures",
        help="regenerate figures: a PNG and a self-describing JSON each",
        description="Regenerate the papers' figures: a PNG and a self-describing JSON (read "
        "back with meanfield.figures.load) per figure. " + FIGURE_BACKEND_HELP,
    )
    figure_arguments(f)
    v = sub.add_parser(
        "validate",
        help="theory-versus-Monte-Carlo tables (exit 1 when a check fails)",
        description="Theory versus Monte-Carlo comparisons: a table per module "
        "(theory | Monte-Carlo | standard error | tolerance | verdict).",
    )
    validation_arguments(v)
    a = sub.add_parser(
        "audit",
        help="audit a PyTorch model against mean-field theory (needs the torch extra)",
        description="Re-initialise a PyTorch model N times, measure q^l, c^l, kurtosis and gradient "
        "second moments per layer and compare them with mean-field theory; print the table, save "
        "OUT/audit_FUNCTION.png and .json. --out is checked before anything runs.",
        epilog=_AUDIT_EXIT_STATUS,
    )
    a.add_argument("model", metavar="PATH.py:FUNCTION", help="a file and a function returning an nn.Module")
    a.add_argument("--inputs", default="digits", help="'digits' (embedded) or a .npy / .pt batch (default: digits)")
    a.add_argument("--out", default="results/audit", metavar="DIR", help="output folder (default: %(default)s)")
    a.add_argument(
        "--n-networks",
        "--n-inits",
        dest="n_inits",
        type=int,
        default=20,
        metavar="N",
        help="re-initialisations (default: 20; --n-inits is the older spelling)",
    )
    a.add_argument("--seed", type=int, default=0, metavar="N", help="seed of the re-initialisations (default: 0)")
    a.add_argument("--no-backward", action="store_true", help="skip the gradient second moments")
    return p, {"reproduce": r, "figures": f, "validate": v, "audit": a}


def _audit(args, parser) -> int:
    try:
        from meanfield.pytorch.command import ModelLoadError, run
    except ImportError as exc:
        return parser.fail(str(exc))
    if args.n_inits < 2 or args.seed < 0:
        return parser.fail("--n-networks must be >= 2 and --seed >= 0")
    try:
        return run(args.model, args.inputs, args.out, args.n_inits, args.seed, not args.no_backward)
    except ModelLoadError as exc:
        return parser.fail(str(exc))
    except KeyboardInterrupt:
        print("meanfield audit: interrupted", file=sys.stderr)
        return 130


def _reproduce(args, parser) -> int:
    from pathlib import Path

    from meanfield.figures.runner import all_figures, check_backend, run_figures
    from meanfield.validation.runner import (
        backend_description,
        check_out_dir,
        comparison_modules,
        open_executor,
        run_modules,
        size_from_args,
    )

    try:
        size = size_from_args(args)
        check_backend(args.backend)
        fig_dir = check_out_dir(Path(args.out) / "figures")
        val_dir = check_out_dir(Path(args.out) / "validation")
        stack = open_executor(args)  # --workers / --scheduler: started or connected before any work
    except (TypeError, ValueError) as exc:
        return parser.fail(str(exc))
    print(backend_description(args.backend))
    try:
        stack.__enter__()
        try:
            run_figures(
                sorted(all_figures()), out=fig_dir, size=size, backend=args.backend, rng=args.seed, keep_going=True
            )
            figures_ok = True
        except RuntimeError as exc:
            print(f"meanfield reproduce: {exc}", file=sys.stderr)
            figures_ok = False
        ok = run_modules(comparison_modules(), backend=args.backend, full=size == "full", rng=args.seed, out=val_dir)
    except KeyboardInterrupt:
        print("meanfield reproduce: interrupted", file=sys.stderr)
        return 130
    finally:
        stack.close()
    print(
        f"figures written to {fig_dir} ({'all made' if figures_ok else 'some FAILED'}); "
        f"validation tables in {val_dir} ({'passed' if ok else 'FAILED'})"
    )
    return 0 if ok and figures_ok else 1


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``meanfield`` command line with ``argv`` (default ``sys.argv[1:]``); the exit status."""
    if argv is not None and (isinstance(argv, str) or not all(isinstance(a, str) for a in argv)):
        raise TypeError(f"argv must be a list of strings, got {argv!r}")
    argv = list(sys.argv[1:] if argv is None else argv)
    p, subs = _parser()
    if not argv:
        p.print_help(sys.stderr)
        return 2
    try:
        args = p.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    if args.command == "figures":
        from meanfield.figures.runner import main as figures_main

        return figures_main(argv[1:], prog="meanfield figures")
    if args.command == "validate":
        from meanfield.validation.runner import main as validation_main

        return validation_main(argv[1:], prog="meanfield validate")
    if args.command == "audit":
        return _audit(args, subs["audit"])
    return _reproduce(args, subs["reproduce"])


if __name__ == "__main__":
    raise SystemExit(main())
