"""The ``meanfield`` console script, and the command-line plumbing every command shares.

Subcommands
-----------
``meanfield reproduce [--out DIR] [--size smoke|default|full | --full] [--backend numpy|cupy|torch] [--seed N] [--workers N | --scheduler ADDRESS]``
    The main job: every figure (``DIR/figures``), then every validation comparison, whose tables are
    also written as JSON (``DIR/validation``).
``meanfield figures [NAME ...] [--all] [--list] [--out DIR] [...]``
    Regenerate figures (``python -m meanfield.figures`` is the same command).
``meanfield validate [NAME ...] [--list] [--out DIR] [--full] [...]``
    Theory-versus-Monte-Carlo tables (``python -m meanfield.validation`` is the same command;
    ``python -m meanfield.validation.NAME`` runs one module, :func:`validate_module_main`).
``meanfield audit PATH.py:FUNCTION [--inputs digits|FILE] [--out DIR] [--n-inits N] [--seed N]``
    Audit a PyTorch model against mean-field theory (:mod:`meanfield.pytorch`; needs the torch extra).
    Exit status 0 every checked row passed, 1 a row failed, 2 usage error (bad arguments, an
    existing file as ``--out``, a model that cannot be loaded or whose function raises or calls
    ``sys.exit``), 3 nothing could be checked (every row "no theory").

Every argument is checked before any work (the output folder is created and a file test-written,
``--backend cupy`` needs CuPy, names must be known, ``--seed`` a non-negative integer). Exit status:
0 success (claims of the papers not reproduced at this size are listed, not failures), 1 a figure
or a check failed, 2 usage error (one line on stderr), 3 (``audit`` only) nothing could be checked,
130 interrupted, 141 the reader of its output went away (``meanfield validate --list | head``).
``MEANFIELD_NO_PROGRESS=1`` in the environment hides the progress bars (as ``--no-progress`` does).

The plumbing (public: :mod:`meanfield.figures` and :mod:`meanfield.validation` use it):
:class:`CliParser` (usage errors on one line, exit status 2), :func:`add_common_arguments`
(``--size``/``--full``, ``--backend``, ``--seed``, ``--no-progress``, ``--data-dir``,
``--workers``/``--scheduler``), :func:`open_executor`, :func:`check_backend_available`,
:func:`check_out_dir`, :func:`progress`. This module imports the comparison modules and the figures
only when a command runs.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import os
import sys
import tempfile
import textwrap
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from .backend import BACKENDS, get_backend
from .checks import renamed_kwargs
from .compare import format_table, not_reproduced

__all__ = [
    "CLI_BACKENDS",
    "CLOSED_PIPE_STATUS",
    "DATA_DIR_ENV",
    "ENVIRONMENT_HELP",
    "FIGURE_BACKEND_HELP",
    "NO_PROGRESS_ENV",
    "CliParser",
    "add_common_arguments",
    "add_parallel_arguments",
    "backend_description",
    "check_argv",
    "check_backend_available",
    "check_out_dir",
    "check_run_arguments",
    "exit_on_closed_pipe",
    "main",
    "open_executor",
    "progress",
    "run_modules",
    "size_from_args",
    "validate_arguments",
    "validate_main",
    "validate_module_main",
]

#: What ``meanfield figures --help`` says about --backend (kept in one place with figures/runner.py).
FIGURE_BACKEND_HELP = (
    "--backend cupy/torch runs the simulations of the figures that honour it on that backend; the "
    "figures marked 'CPU only' in --list (no simulation, or simulations on NumPy only: declared "
    "honours_backend=False) run on NumPy, with a notice, and naming one of them explicitly with "
    "another backend is a usage error."
)

#: Backends the command line offers (``array_api_strict``, a test backend, is accepted by the functions only).
CLI_BACKENDS = ("numpy", "cupy", "torch")

#: Environment variable that, set to ``1``, silences every progress bar.
NO_PROGRESS_ENV = "MEANFIELD_NO_PROGRESS"

#: Environment variable naming the folder of MNIST / CIFAR-10 files (``--data-dir``).
DATA_DIR_ENV = "MEANFIELD_DATA_DIR"

ENVIRONMENT_HELP = f"""\
environment:
  {NO_PROGRESS_ENV}=1   hide the progress bars (same as --no-progress)

exit status:
  0 success (every check passed; claims not reproduced are listed, not failures),
  1 a figure or a check failed, 2 usage error, 130 interrupted,
  141 the reader of the output went away (| head)"""

_VALIDATE_DESCRIPTION = (
    "Theory versus Monte-Carlo comparisons: a table per module "
    "(theory | Monte-Carlo | standard error | tolerance | verdict)."
)


# --- parsing --------------------------------------------------------------------------------------


def progress(iterable=None, desc: str = "", total: int | None = None, **kwargs):
    """A tqdm progress bar on stderr, hidden when the environment has ``MEANFIELD_NO_PROGRESS=1``."""
    disable = os.environ.get(NO_PROGRESS_ENV, "") == "1"
    return tqdm(iterable, desc=desc, total=total, disable=disable, leave=False, file=sys.stderr, **kwargs)


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the epilog's line breaks; subcommand names and help on one line."""

    def __init__(self, prog):
        super().__init__(prog, max_help_position=32)
        self._action_max_length = 16


class CliParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose usage errors are one line on stderr and exit status 2."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("epilog", ENVIRONMENT_HELP)
        kwargs.setdefault("formatter_class", _Formatter)
        if kwargs.get("description") and "\n" not in kwargs["description"]:
            kwargs["description"] = textwrap.fill(kwargs["description"], 80)
        super().__init__(*args, **kwargs)

    def fail(self, message: str) -> int:
        """Print ``PROG: error: MESSAGE (see PROG --help)`` on one line; return 2."""
        message = " ".join(str(message).split())
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        return 2

    def error(self, message):  # argparse's hook: one line instead of usage + message
        raise SystemExit(self.fail(message))


def _int_at_least(minimum: int, what: str):
    """An argparse ``type``: an integer ``>= minimum`` (``what``: the message's noun)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be a {what} integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be a {what} integer, got {value}")
        return value

    return parse


_seed = _int_at_least(0, "non-negative")
_workers = _int_at_least(1, "positive")


class _NoProgress(argparse.Action):
    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        os.environ[NO_PROGRESS_ENV] = "1"
        setattr(namespace, self.dest, True)


def add_common_arguments(p: argparse.ArgumentParser, sizes=None) -> None:
    """``--full`` (and ``--size`` when ``sizes`` is given), ``--backend``, ``--seed``, ``--no-progress``,
    ``--data-dir``, and ``--workers``/``--scheduler`` (:func:`add_parallel_arguments`)."""
    if sizes:
        p.add_argument(
            "--size",
            choices=list(sizes),
            default=None,
            help="smoke: seconds (a check that everything runs); default: minutes; full: the paper's sizes",
        )
        p.add_argument("--full", action="store_true", help="the paper's sizes (slow); same as --size full")
    else:
        p.add_argument("--full", action="store_true", help="paper-size simulations (slow)")
    p.add_argument(
        "--backend",
        default="numpy",
        choices=list(CLI_BACKENDS),
        help="array backend of the simulations, checked before any work: cupy needs CuPy and a GPU (the gpu "
        "extra), torch needs PyTorch (the torch extra; CUDA when visible, else the CPU); modules and figures "
        "that cannot use it say so and run on NumPy (default: numpy)",
    )
    p.add_argument(
        "--seed",
        type=_seed,
        default=0,
        metavar="N",
        help="non-negative seed of every random stream, recorded in the JSON (default: 0)",
    )
    p.add_argument(
        "--no-progress", action=_NoProgress, default=False, help=f"hide progress bars (or set {NO_PROGRESS_ENV}=1)"
    )
    p.add_argument(
        "--data-dir",
        default=None,
        metavar="DIR",
        help=f"a folder holding MNIST (IDX, optionally gzipped) or CIFAR-10 (python batches) files, read by the "
        f"training figures and rows at --full size instead of the embedded digits (sets ${DATA_DIR_ENV}; "
        "checked before any work)",
    )
    add_parallel_arguments(p)


def add_parallel_arguments(p: argparse.ArgumentParser) -> None:
    """``--workers N`` and ``--scheduler ADDRESS`` (Dask, :mod:`meanfield.parallel`)."""
    p.add_argument(
        "--workers",
        type=_workers,
        default=None,
        metavar="N",
        help="run the chunks of ensembles, sweeps and landscapes on a local Dask cluster of N worker "
        "processes (needs the 'distributed' extra); same numbers as without it",
    )
    p.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="run the chunks on the Dask scheduler at ADDRESS (e.g. tcp://host:8786; a SLURM cluster "
        "through dask-jobqueue, see docs/distributed.md)",
    )


def open_executor(args) -> contextlib.ExitStack:
    """Enter the executor of ``--workers`` / ``--scheduler`` (started or connected here, before any
    work); the returned stack closes it. ``ValueError`` with a one-line reason when Dask is missing
    (naming the extra), both options are given or the scheduler cannot be reached."""
    from meanfield import parallel

    data_dir = getattr(args, "data_dir", None)
    if data_dir is not None:  # before the executor starts, so that local worker processes inherit it
        if not os.path.isdir(data_dir):
            raise ValueError(f"--data-dir: {data_dir!r} is not a folder")
        os.environ[DATA_DIR_ENV] = os.path.abspath(data_dir)
    stack = contextlib.ExitStack()
    workers, scheduler = getattr(args, "workers", None), getattr(args, "scheduler", None)
    try:
        stack.enter_context(parallel.executor_from_options(workers, scheduler))
    except ImportError as exc:
        raise ValueError(f"--workers / --scheduler: {exc}") from None
    except (OSError, TimeoutError) as exc:
        raise ValueError(f"--scheduler: cannot connect to {scheduler!r} ({exc})") from None
    except (TypeError, ValueError) as exc:
        opt = "--scheduler" if scheduler is not None else "--workers"
        msg = str(exc)
        raise ValueError(msg if msg.startswith("--") else f"{opt}: {msg}") from None
    return stack


def size_from_args(args) -> str:
    """The size asked for by ``--size``/``--full``; ``ValueError`` when they disagree."""
    size = getattr(args, "size", None)
    if args.full and size not in (None, "full"):
        raise ValueError(f"--full contradicts --size {size}")
    return "full" if args.full else (size or "default")


# --- checks made before any work ----------------------------------------------------------------


#: Exit status of a command whose reader closed its standard output (128 + SIGPIPE, as the shell reports
#: a command killed by that signal).
CLOSED_PIPE_STATUS = 141


def exit_on_closed_pipe(func):
    """Decorator of a command's entry point: a reader that goes away (``| head``) ends it quietly.

    Python ignores SIGPIPE, so a write to a closed pipe raises ``BrokenPipeError`` with a
    traceback. The decorated function then points standard output at ``os.devnull`` (so that the
    interpreter's last flush does not raise again) and returns :data:`CLOSED_PIPE_STATUS`.

    Parameters
    ----------
    func : callable
        An entry point returning an exit status.

    Returns
    -------
    callable
        ``func`` with the same signature and docstring.
    """

    @functools.wraps(func)
    def entry(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except BrokenPipeError:
            with contextlib.suppress(AttributeError, OSError, ValueError):  # stdout without a descriptor
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())
                os.close(devnull)
            return CLOSED_PIPE_STATUS

    return entry


def check_argv(argv) -> None:
    """``argv`` is None or a list of strings (``TypeError`` otherwise): the entry points' first check."""
    if argv is not None and (isinstance(argv, str) or not all(isinstance(a, str) for a in argv)):
        raise TypeError(f"argv must be a list of strings, got {argv!r}")


def check_backend_available(backend: str) -> str:
    """``backend`` when it can be used here, checked before any work starts.

    ``"numpy"`` always; ``"cupy"`` needs CuPy (the ``gpu`` extra), ``"torch"`` PyTorch and
    ``array-api-compat`` (the ``torch`` extra), ``"array_api_strict"`` (a CPU test backend) the
    ``test`` extra. A missing package raises ``ValueError`` with a one-line message naming the extra.

    Raises
    ------
    TypeError
        ``backend`` is not a str.
    ValueError
        ``backend`` is not one of :data:`meanfield.backend.BACKENDS`, or its package is missing.
    """
    if not isinstance(backend, str):
        raise TypeError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "cupy":
        try:
            import cupy  # noqa: F401
        except ImportError:
            raise ValueError(
                "backend 'cupy' needs CuPy, which is not installed: `pip install \"meanfield-theory[gpu]\"` "
                "on a machine with a CUDA GPU, or use backend 'numpy'"
            ) from None
    elif backend != "numpy":
        try:
            get_backend(backend)
        except ImportError as exc:
            extra = "torch" if backend == "torch" else "test"
            raise ValueError(
                f"backend {backend!r} is not available here ({exc.__cause__ or exc}): "
                f"`pip install \"meanfield-theory[{extra}]\"`, or use backend 'numpy'"
            ) from None
    return backend


def backend_description(backend: str) -> str:
    """One line naming the backend and its device, e.g. ``"backend torch (device cpu: no CUDA device visible)"``."""
    backend = check_backend_available(backend)
    if backend == "torch":
        device = get_backend("torch").device
        why = "" if device == "cuda" else ": no CUDA device visible"
        return f"backend torch (device {device}{why})"
    if backend == "cupy":
        return "backend cupy (device cuda)"
    return f"backend {backend} (device cpu)"


def check_out_dir(out_dir) -> Path:
    """Create ``out_dir`` (with parents) and test-write a file in it; the folder as a ``Path``.

    Raises ``TypeError`` when ``out_dir`` is not a str or path, ``ValueError`` (one line, naming the
    folder) when it cannot be created or written -- before any work is done.
    """
    if isinstance(out_dir, bytes) or not isinstance(out_dir, (str, os.PathLike)):
        raise TypeError(f"out_dir must be a folder path (str or pathlib.Path), got {out_dir!r}")
    if str(out_dir) == "":
        raise ValueError("out_dir must be a folder path, got ''")
    path = Path(out_dir)
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".meanfield-write-test-"):
            pass
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ValueError(f"output folder {str(path)!r} is not writable ({reason})") from None
    return path


@renamed_kwargs(seed="rng")
def check_run_arguments(backend: object, full: object, seed: object) -> tuple[str, bool, int]:
    """Check the arguments every comparison module's ``run(backend, full, rng)`` takes, before any work.

    Returns
    -------
    tuple of (str, bool, int)
        ``backend``, ``full`` and ``rng`` as plain Python values.

    Raises
    ------
    ValueError
        If ``backend`` is not one of :data:`meanfield.backend.BACKENDS`, or ``rng`` is negative.
    TypeError
        If ``full`` is not a bool or ``rng`` not an int.
    """
    if not isinstance(full, (bool, np.bool_)):
        raise TypeError(f"full must be True or False, got {full!r}")
    if not isinstance(backend, str) or backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"rng must be a non-negative int seed, got {seed!r}")
    if seed < 0:
        raise ValueError(f"rng must be a non-negative int seed, got {seed}")
    return backend, bool(full), int(seed)


def _start(args, out) -> tuple[Path | None, contextlib.ExitStack]:
    """The checks of every command before any work: ``--backend`` usable here, ``out`` (when not
    None) writable, then the executor of ``--workers`` / ``--scheduler`` (``ValueError``, one line)."""
    check_backend_available(args.backend)
    out = check_out_dir(out) if out is not None else None
    return out, open_executor(args)


# --- meanfield validate ---------------------------------------------------------------------------


@renamed_kwargs(seed="rng")
def run_modules(names, backend="numpy", full=False, seed=0, out=None) -> bool:
    """Run the named comparison modules and print their tables; True when every check passed.

    Claims (rows of ``kind="claim"``) a run does not reproduce are listed after the totals and do
    not make the result False.

    Arguments are checked before any module runs: ``names`` must be known modules
    (:func:`meanfield.validation.runner.comparison_modules`), ``backend`` ``'numpy'`` or an
    importable ``'cupy'`` / ``'torch'``, ``full`` a bool, ``rng`` a non-negative int, ``out`` a
    writable folder (``TypeError``/``ValueError``).

    With ``out`` (a folder) each module's table is also written as ``out/validation_NAME.json``
    with the metadata block (library version, commit, seed, ``full``, backend) and one record per
    row (name, theory, estimate, stderr, z, systematic, tolerance, side, passed, note).
    """
    from meanfield.validation import runner
    from meanfield.validation.report import write_table_json

    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise TypeError(f"names must be a list of module names such as ['dense', 'conv'], got {names!r}")
    known = runner.comparison_modules()
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown comparison module(s) {', '.join(unknown)}; known: {', '.join(known)}")
    backend, full, seed = check_run_arguments(backend, full, seed)
    check_backend_available(backend)
    if out is not None:
        out = check_out_dir(out)
    all_ok = True
    total_passed = total_failed = 0
    claims: list = []
    for name in progress(names, desc="validation"):
        module = importlib.import_module(f"meanfield.validation.{name}")
        skip = runner.unavailable(module)
        if skip:  # an optional extra is missing: said, not counted as a failure
            tqdm.write(f"validation.{name}: {skip}\n")
            continue
        used, note = runner.module_backend(module, backend)
        if note:
            tqdm.write(note)
        t0 = time.perf_counter()
        rows = module.run(backend=used, full=full, rng=seed)
        elapsed = time.perf_counter() - t0
        tqdm.write(format_table(f"validation.{name}", rows) + f"  ({elapsed:.1f} s)\n")
        if out is not None:
            write_table_json(
                Path(out) / f"validation_{name}.json",
                f"validation.{name}",
                rows,
                rng=seed,
                full=full,
                backend=used,
                seconds=elapsed,
            )
        failed = sum(r.failed for r in rows)
        total_failed += failed
        total_passed += sum(r.kind == "check" for r in rows) - failed
        claims += [(name, r) for r in rows if r.kind == "claim"]
        all_ok &= failed == 0 and len(rows) > 0
    missing = [(name, r) for name, r in claims if not r.passed]
    line = f"validation: {total_passed} passed, {total_failed} failed"
    if claims:
        line += f"; claims of the papers and the platform: {len(claims) - len(missing)} reproduced, {len(missing)} not reproduced"
    print(line)
    if missing:
        print(_claims_summary(missing))
    return all_ok


def _claims_summary(missing) -> str:
    """The claims not reproduced, one line each with the evidence (reported; not failures)."""
    if not missing:
        return ""
    lines = ["claims not reproduced at this size (reported, not failures):"]
    for name, r in missing:
        lines.append(f"  validation.{name}: {r.name} (estimate {r.estimate:.6g}, theory {r.theory:.6g}; {r.note})")
    return "\n".join(lines)


def validate_arguments(p: argparse.ArgumentParser, *, names: bool = True) -> None:
    """The arguments of ``meanfield validate`` (shared with ``python -m meanfield.validation``)."""
    if names:
        p.add_argument("names", nargs="*", metavar="NAME", help="comparison modules to run (default: all of them)")
        p.add_argument("--list", action="store_true", help="list the comparison modules and exit")
        p.add_argument(
            "--out",
            default=None,
            metavar="DIR",
            help="also write each module's table as DIR/validation_NAME.json (metadata block included)",
        )
    add_common_arguments(p)


@exit_on_closed_pipe
def validate_main(argv=None, prog: str = "meanfield validate") -> int:
    """Entry point of ``meanfield validate`` and ``python -m meanfield.validation``; the exit status."""
    from meanfield.validation import runner

    check_argv(argv)
    p = CliParser(prog=prog, description=_VALIDATE_DESCRIPTION)
    validate_arguments(p)
    try:
        args = p.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    known = runner.comparison_modules()
    if args.list:
        print("\n".join(known))
        return 0
    names = args.names or known
    unknown = [n for n in names if n not in known]
    if unknown:
        return p.fail(f"unknown comparison module(s) {', '.join(unknown)}; known: {', '.join(known)}")
    try:
        out, stack = _start(args, args.out)
    except ValueError as exc:
        return p.fail(str(exc))
    try:
        print(backend_description(args.backend))
        with stack:
            ok = run_modules(names, backend=args.backend, full=args.full, rng=args.seed, out=out)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    return 0 if ok else 1


@exit_on_closed_pipe
def validate_module_main(run, module_name: str, argv=None) -> int:
    """Entry point of ``python -m meanfield.validation.NAME``: run one module's comparisons.

    ``run`` is the module's ``run(backend, full, rng)``, ``module_name`` its ``__name__`` (``"__main__"``
    when executed with ``python -m``: the name is then taken from ``sys.argv[0]``). The exit status:
    0 every check passed, 1 a check failed, 2 usage error.
    """
    from meanfield.validation import runner
    from meanfield.validation.report import write_table_json

    name = module_name.rsplit(".", 1)[-1]
    if module_name == "__main__":  # executed with python -m: recover the real name from argv[0]
        name = os.path.splitext(os.path.basename(sys.argv[0]))[0]
    check_argv(argv)
    p = CliParser(prog=f"python -m meanfield.validation.{name}", description=_VALIDATE_DESCRIPTION)
    p.add_argument("--out", default=None, metavar="DIR", help="also write the table as DIR/validation_NAME.json")
    add_common_arguments(p)
    try:
        args = p.parse_args(argv)
        out, stack = _start(args, args.out)
    except SystemExit as exc:
        return int(exc.code or 0)
    except ValueError as exc:
        return p.fail(str(exc))
    module = sys.modules.get(getattr(run, "__module__", ""), None)
    skip = runner.unavailable(module)
    if skip:
        print(f"validation.{name}: {skip}")
        return 0
    used, note = runner.module_backend(module, args.backend, name)
    print(backend_description(args.backend) if note is None else note)
    t0 = time.perf_counter()
    with stack:
        rows = run(backend=used, full=args.full, rng=args.seed)
    print(format_table(f"validation.{name}", rows))
    if out is not None:
        write_table_json(
            out / f"validation_{name}.json",
            f"validation.{name}",
            rows,
            rng=args.seed,
            full=args.full,
            backend=used,
            seconds=time.perf_counter() - t0,
        )
    summary = _claims_summary([(name, r) for r in not_reproduced(rows)])
    if summary:
        print(summary)
    return 0 if rows and not any(r.failed for r in rows) else 1


# --- the meanfield command ------------------------------------------------------------------------

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
    from meanfield.io import git_commit

    commit = git_commit()
    return f"meanfield {__version__}" + (f" (commit {commit[:12]})" if commit else "")


def _parser():
    from meanfield.figures.runner import SIZES
    from meanfield.figures.runner import add_arguments as figure_arguments

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
        description=_VALIDATE_DESCRIPTION,
    )
    validate_arguments(v)
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
    from meanfield.figures.runner import all_figures, check_backend, run_figures
    from meanfield.validation.runner import comparison_modules

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


@exit_on_closed_pipe
def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``meanfield`` command line with ``argv`` (default ``sys.argv[1:]``); the exit status."""
    check_argv(argv)
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
        return validate_main(argv[1:], prog="meanfield validate")
    if args.command == "audit":
        return _audit(args, subs["audit"])
    return _reproduce(args, subs["reproduce"])


if __name__ == "__main__":
    raise SystemExit(main())
