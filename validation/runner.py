"""The comparison modules: which there are, and how one is run (public).

A comparison module ``validation/NAME.py`` defines ``run(backend="numpy", full=False, rng=0)``
returning a list of :class:`meanfield.compare.Comparison` and ends with::

    if __name__ == "__main__":
        raise SystemExit(main_for(run, __name__))

``meanfield validate`` (or ``python -m meanfield.validation``) discovers every such module
(:func:`comparison_modules`: any public module of the package with a ``run`` function) and runs them
all; with ``--out DIR`` each module's table is also written as ``DIR/validation_NAME.json``
(metadata block, read back with :func:`meanfield.io.load`). A module runs on the backend asked for
when it lists it in its ``BACKENDS`` tuple, else on NumPy (:func:`module_backend`); a module whose
optional extra is missing says so in its ``unavailable()`` (:func:`unavailable`) and is skipped.
Exit status: 0 when every check passed (claims of a paper or about the platform that a run does not
reproduce are listed in the summary, not failures), 1 when a check failed, 2 for a usage error (one
line on stderr, before any work).

The command-line plumbing (parsers, ``--seed``, ``--backend``, ``--workers``, progress bars, the
``validate`` command) is :mod:`meanfield.cli`; its older names here (``CliParser``,
``run_modules``, ``main``, ...) still work and warn ``DeprecationWarning``.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import warnings
from collections.abc import Callable

from meanfield.checks import doc_sections, renamed_kwargs
from meanfield.cli import DATA_DIR_ENV, check_run_arguments, progress  # the plumbing the modules use

#: The Returns section of a comparison module's ``run`` (and of functions returning its rows),
#: inserted with :func:`meanfield.checks.doc_sections` as ``{run_returns}``.
_RUN_RETURNS = """
Returns
-------
list of Comparison
    One row per prediction: theory, estimate, standard error, verdict.
"""

#: The Raises section of a function that checks ``(backend, full, rng)`` with :func:`check_run_arguments`,
#: inserted as ``{run_raises}``.
_RUN_RAISES = """
Raises
------
ValueError
    ``backend`` not one of :data:`meanfield.backend.BACKENDS`; a negative ``rng``.
TypeError
    ``full`` not a bool; ``rng`` not an int.
"""

__all__ = [
    "DATA_DIR_ENV",
    "check_run_arguments",
    "comparison_modules",
    "comparison_run",
    "main_for",
    "module_backend",
    "progress",
    "unavailable",
]


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


def comparison_run(func: Callable[[str, bool, int], list]) -> Callable[..., list]:
    """Decorator of a comparison module's ``run(backend, full, seed)``: the arguments are checked first.

    The decorated ``run`` takes ``rng`` (``seed=`` still works and warns ``DeprecationWarning``),
    checks ``(backend, full, rng)`` with :func:`check_run_arguments` before any work and calls
    ``func`` with the plain values. The docstring's ``{run_returns}`` and ``{run_raises}`` lines
    become the Returns and Raises sections every such ``run`` shares.

    Parameters
    ----------
    func : callable
        ``func(backend, full, seed) -> list of Comparison``.

    Returns
    -------
    callable
        The checked ``run``, with ``func``'s name and docstring.
    """
    func = doc_sections(run_returns=_RUN_RETURNS, run_raises=_RUN_RAISES)(func)

    @functools.wraps(func)
    def run(backend="numpy", full=False, seed=0):
        return func(*check_run_arguments(backend, full, seed))

    return renamed_kwargs(seed="rng")(run)


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


def unavailable(module) -> str | None:
    """A module's ``unavailable()`` reason (an optional extra it needs is missing), else None."""
    check = getattr(module, "unavailable", None)
    return check() if callable(check) else None


def main_for(run, module_name: str, argv=None) -> int:
    """Entry point of ``python -m meanfield.validation.NAME``: run one module's comparisons
    (:func:`meanfield.cli.validate_module_main`); the exit status."""
    from meanfield.cli import validate_module_main

    return validate_module_main(run, module_name, argv)


#: Names that moved to :mod:`meanfield.cli` -> their name there.
_MOVED = {
    "CLI_BACKENDS": "CLI_BACKENDS",
    "ENVIRONMENT_HELP": "ENVIRONMENT_HELP",
    "NO_PROGRESS_ENV": "NO_PROGRESS_ENV",
    "CliParser": "CliParser",
    "add_arguments": "validate_arguments",
    "add_common_arguments": "add_common_arguments",
    "add_parallel_arguments": "add_parallel_arguments",
    "backend_description": "backend_description",
    "check_backend_available": "check_backend_available",
    "check_out_dir": "check_out_dir",
    "main": "validate_main",
    "open_executor": "open_executor",
    "run_modules": "run_modules",
    "size_from_args": "size_from_args",
}


def __getattr__(name):
    if name in _MOVED:
        import meanfield.cli

        new = _MOVED[name]
        warnings.warn(
            f"meanfield.validation.runner.{name} is now meanfield.cli.{new}",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(meanfield.cli, new)
    raise AttributeError(f"module 'meanfield.validation.runner' has no attribute {name!r}")
