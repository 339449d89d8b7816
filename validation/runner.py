"""Command-line plumbing shared by every comparison module, by ``meanfield validate`` and by ``meanfield figures``.

Public: :mod:`meanfield.figures` and the ``meanfield`` command use it (:func:`progress`,
:class:`CliParser`, :func:`check_out_dir`, ...), and a new comparison module needs :func:`main_for`.

A comparison module ``validation/NAME.py`` defines ``run(backend="numpy", full=False, seed=0)``
returning a list of :class:`validation.report.Comparison` and ends with::

    if __name__ == "__main__":
        raise SystemExit(main_for(run, __name__))

``meanfield validate`` (or ``python -m meanfield.validation``) discovers every such module (any public
module of the package with a ``run`` function) and runs them all; with ``--out DIR`` each module's
table is also written as ``DIR/validation_NAME.json`` (metadata block, read back with
:func:`meanfield.figures.load`). Exit status: 0 when every check passed (claims of a paper or about
the platform that a run does not reproduce are listed in the summary, not failures), 1 when a check
failed, 2 for a usage error (one line on stderr, before any work).

Environment: ``MEANFIELD_NO_PROGRESS=1`` hides the progress bars (as ``--no-progress`` does).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import pkgutil
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from meanfield.backend import BACKENDS, get_backend
from meanfield.checks import renamed_kwargs

from .report import format_table, not_reproduced, write_table_json

__all__ = [
    "CliParser",
    "add_arguments",
    "add_common_arguments",
    "add_parallel_arguments",
    "backend_description",
    "check_backend_available",
    "check_out_dir",
    "comparison_modules",
    "main",
    "main_for",
    "module_backend",
    "open_executor",
    "progress",
    "run_modules",
    "size_from_args",
]

#: Backends the command line offers (``array_api_strict``, a test backend, is accepted by the functions only).
CLI_BACKENDS = ("numpy", "cupy", "torch")

#: Environment variable that, set to ``1``, silences every progress bar.
NO_PROGRESS_ENV = "MEANFIELD_NO_PROGRESS"

ENVIRONMENT_HELP = f"""\
environment:
  {NO_PROGRESS_ENV}=1   hide the progress bars (same as --no-progress)

exit status:
  0 success (every check passed; claims not reproduced are listed, not failures),
  1 a figure or a check failed, 2 usage error, 130 interrupted"""


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


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {value}")
    return value


class _NoProgress(argparse.Action):
    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        os.environ[NO_PROGRESS_ENV] = "1"
        setattr(namespace, self.dest, True)


#: Environment variable naming the folder of MNIST / CIFAR-10 files (``--data-dir``).
DATA_DIR_ENV = "MEANFIELD_DATA_DIR"


def add_common_arguments(p: argparse.ArgumentParser, sizes=None) -> None:
    """``--full`` (and ``--size`` when ``sizes`` is given), ``--backend``, ``--seed``, ``--no-progress``, ``--data-dir``."""
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


def _workers(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


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


def comparison_modules() -> list[str]:
    """Names of the modules of ``validation`` that define a ``run`` comparison."""
    import meanfield.validation as validation

    names = []
    for info in pkgutil.iter_modules(validation.__path__):
        if info.name.startswith("_") or info.ispkg or info.name in {"backend", "report", "runner"}:
            continue
        module = importlib.import_module(f"meanfield.validation.{info.name}")
        if callable(getattr(module, "run", None)):
            names.append(info.name)
    return sorted(names)


def _parser(prog: str) -> CliParser:
    return CliParser(
        prog=prog,
        description="Theory versus Monte-Carlo comparisons: a table per module "
        "(theory | Monte-Carlo | standard error | tolerance | verdict).",
    )


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


def module_backend(module, backend: str, name: str | None = None) -> tuple[str, str | None]:
    """The backend a comparison module runs on and, when it falls back to NumPy, the one-line reason.

    The rule: a module runs on ``backend`` when it lists it in its ``BACKENDS`` tuple (the
    backends every simulator it calls honours); otherwise it runs on NumPy and says so in one line
    (a module without ``BACKENDS`` is NumPy-only: it computes theory or trains with PyTorch's own
    device handling). ``name`` (default: the module's own) is the one the notice prints.
    """
    if backend == "numpy":
        return backend, None
    name = name or getattr(module, "__name__", "?").rsplit(".", 1)[-1]
    honoured = getattr(module, "BACKENDS", ("numpy",))
    if backend in honoured:
        return backend, None
    return "numpy", f"validation.{name}: does not honour backend {backend!r} (NumPy only); runs on NumPy"


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


@renamed_kwargs(seed="rng")
def run_modules(names, backend="numpy", full=False, seed=0, out=None) -> bool:
    """Run the named comparison modules and print their tables; True when every check passed.

    Claims (rows of ``kind="claim"``) a run does not reproduce are listed after the totals and do
    not make the result False.

    Arguments are checked before any module runs: ``names`` must be known modules
    (:func:`comparison_modules`), ``backend`` ``'numpy'`` or an importable ``'cupy'``, ``full`` a
    bool, ``seed`` a non-negative int, ``out`` a writable folder (``TypeError``/``ValueError``).

    With ``out`` (a folder) each module's table is also written as ``out/validation_NAME.json``
    with the metadata block (library version, commit, seed, ``full``, backend) and one record per
    row (name, theory, estimate, stderr, z, systematic, tolerance, side, passed, note).
    """
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise TypeError(f"names must be a list of module names such as ['dense', 'conv'], got {names!r}")
    known = comparison_modules()
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
        skip = _unavailable(module)
        if skip:  # an optional extra is missing: said, not counted as a failure
            tqdm.write(f"validation.{name}: {skip}\n")
            continue
        used, note = module_backend(module, backend)
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


def _unavailable(module) -> str | None:
    """A module's ``unavailable()`` reason (an optional extra it needs is missing), else None."""
    check = getattr(module, "unavailable", None)
    return check() if callable(check) else None


def main_for(run, module_name: str, argv=None) -> int:
    """Entry point of ``python -m meanfield.validation.NAME``: run one module's comparisons."""
    name = module_name.rsplit(".", 1)[-1]
    if module_name == "__main__":  # executed with python -m: recover the real name from argv[0]
        name = os.path.splitext(os.path.basename(sys.argv[0]))[0]
    _check_argv(argv)
    p = _parser(f"python -m meanfield.validation.{name}")
    p.add_argument("--out", default=None, metavar="DIR", help="also write the table as DIR/validation_NAME.json")
    add_common_arguments(p)
    try:
        args = p.parse_args(argv)
        check_backend_available(args.backend)
        out = check_out_dir(args.out) if args.out is not None else None
        stack = open_executor(args)
    except SystemExit as exc:
        return int(exc.code or 0)
    except ValueError as exc:
        return p.fail(str(exc))
    skip = _unavailable(sys.modules.get(getattr(run, "__module__", ""), None))
    if skip:
        print(f"validation.{name}: {skip}")
        return 0
    used, note = module_backend(sys.modules.get(getattr(run, "__module__", ""), None), args.backend, name)
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


def add_arguments(p: argparse.ArgumentParser, *, names: bool = True) -> None:
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


def _check_argv(argv):
    if argv is not None and (isinstance(argv, str) or not all(isinstance(a, str) for a in argv)):
        raise TypeError(f"argv must be a list of strings, got {argv!r}")


def main(argv=None, prog: str = "meanfield validate") -> int:
    """Entry point of ``meanfield validate`` and ``python -m meanfield.validation``; the exit status."""
    _check_argv(argv)
    p = _parser(prog)
    add_arguments(p)
    try:
        args = p.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    known = comparison_modules()
    if args.list:
        print("\n".join(known))
        return 0
    names = args.names or known
    unknown = [n for n in names if n not in known]
    if unknown:
        return p.fail(f"unknown comparison module(s) {', '.join(unknown)}; known: {', '.join(known)}")
    try:
        check_backend_available(args.backend)
        out = check_out_dir(args.out) if args.out is not None else None
        stack = open_executor(args)
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
