"""``meanfield audit path/to/model.py:build_model``: the audit of a user's model from the command line.

:func:`load_model` imports ``path/to/model.py``, calls ``build_model()`` (no arguments) and checks
that it returns a ``torch.nn.Module``; :func:`run` audits it (:func:`meanfield.pytorch.audit`),
prints the table, and writes ``OUT/audit_<name>.png`` (the plot) and ``OUT/audit_<name>.json``
(the rows, the phase and depth scales, and a metadata block: library version, model, inputs,
seed, ``n_inits``, creation time).
"""

from __future__ import annotations

import datetime as _dt
import importlib.util
import json
import math
import os
import sys
from pathlib import Path
from typing import Any

import numpy as np

from meanfield._deprecate import renamed_kwargs

from ._torch import require_torch

__all__ = [
    "EXIT_FAILED",
    "EXIT_NOTHING_CHECKED",
    "EXIT_OK",
    "EXIT_USAGE",
    "ModelLoadError",
    "exit_status",
    "load_inputs",
    "load_model",
    "run",
]

#: Exit status of ``meanfield audit``: every row checked against theory passed.
EXIT_OK = 0
#: Exit status: at least one row's verdict is ``FAIL``.
EXIT_FAILED = 1
#: Exit status: a usage error (bad arguments, a model or inputs that cannot be loaded, an existing
#: file as ``--out``, a model function that raised or called ``sys.exit``); one line on stderr.
EXIT_USAGE = 2
#: Exit status: nothing could be checked -- every row's verdict is ``"no theory"`` (no layer of
#: the model is one the theory describes), so no prediction was compared.
EXIT_NOTHING_CHECKED = 3

torch = require_torch()


class ModelLoadError(ValueError):
    """A ``PATH.py:FUNCTION`` that cannot be loaded (one-line message)."""


def load_model(spec: str) -> tuple[Any, str]:
    """Import ``PATH.py``, call ``FUNCTION()`` and return ``(model, FUNCTION)``.

    Raises
    ------
    ModelLoadError
        A spec without ``:``, a missing file, a file that fails to import (the exception's first
        line; ``sys.exit`` included), a missing or non-callable attribute, a call that fails or
        calls ``sys.exit``, a result that is not an ``nn.Module``.
    """
    if not isinstance(spec, str) or ":" not in spec:
        raise ModelLoadError(f"model must be given as PATH.py:FUNCTION, got {spec!r}")
    path_text, _, func_name = spec.rpartition(":")
    path = Path(path_text)
    if not path.exists():
        raise ModelLoadError(f"no such file: {path_text!r}")
    if not path.is_file():  # a FIFO or a device would block or never end: refused before reading
        raise ModelLoadError(f"{path_text!r} is not a regular file (a Python file PATH.py:FUNCTION)")
    if not func_name.isidentifier():
        raise ModelLoadError(f"{func_name!r} is not a Python name (PATH.py:FUNCTION)")
    module_name = f"meanfield_user_model_{abs(hash(str(path.resolve())))}"
    try:
        mspec = importlib.util.spec_from_file_location(module_name, path)
        if mspec is None or mspec.loader is None:
            raise ModelLoadError(f"{path_text!r} is not a Python file")
        module = importlib.util.module_from_spec(mspec)
        mspec.loader.exec_module(module)
    except ModelLoadError:
        raise
    except BaseException as exc:  # the user's code: report it on one line
        if isinstance(exc, KeyboardInterrupt):
            raise
        first = (str(exc).splitlines() or [""])[0]
        raise ModelLoadError(f"importing {path_text!r} failed: {type(exc).__name__}: {first}") from None
    func = getattr(module, func_name, None)
    if func is None:
        raise ModelLoadError(f"{path_text!r} defines no {func_name!r}")
    if not callable(func):
        raise ModelLoadError(f"{path_text}:{func_name} is not callable")
    try:
        model = func()
    except SystemExit as exc:  # the user's function called sys.exit(): an error, never a silent exit 0
        raise ModelLoadError(
            f"{path_text}:{func_name}() called sys.exit({exc.code!r}) instead of returning a model"
        ) from None
    except Exception as exc:
        first = (str(exc).splitlines() or [""])[0]
        raise ModelLoadError(f"{path_text}:{func_name}() failed: {type(exc).__name__}: {first}") from None
    if not isinstance(model, torch.nn.Module):
        raise ModelLoadError(f"{path_text}:{func_name}() returned {type(model).__name__}, not a torch.nn.Module")
    return model, func_name


def _read_npy(f, text: str) -> np.ndarray:
    """A ``.npy`` array whose header is checked against the file's size before the data are read."""
    fmt = np.lib.format
    try:
        version = fmt.read_magic(f)
        if version == (1, 0):
            shape, _fortran, dtype = fmt.read_array_header_1_0(f)
        elif version == (2, 0):
            shape, _fortran, dtype = fmt.read_array_header_2_0(f)
        else:
            raise ValueError(f"unsupported .npy format version {version} (numeric arrays are written as 1.0 or 2.0)")
    except ValueError as exc:
        raise ModelLoadError(f"--inputs {text!r} is not a .npy array file ({exc})") from None
    if dtype.hasobject:
        raise ModelLoadError(f"--inputs {text!r} holds Python objects, not numbers (refused)")
    n_bytes = math.prod(shape) * dtype.itemsize
    left = f.size - f.tell()
    if n_bytes != left:
        raise ModelLoadError(
            f"--inputs {text!r}: the .npy header promises {n_bytes} data bytes (shape {shape}), the file has {left}"
        )
    f.seek(0)
    try:
        return np.load(f, allow_pickle=False)
    except Exception as exc:
        raise ModelLoadError(f"reading {text!r} failed: {type(exc).__name__}: {exc}") from None


def _read_pt(f, text: str) -> Any:
    """A ``torch.save`` archive (a zip of stored entries) holding a tensor or a batch ``(x, y)``."""
    import zipfile

    try:
        with zipfile.ZipFile(f) as archive:
            entries = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise ModelLoadError(f"--inputs {text!r} is not a file written by torch.save (a zip archive: {exc})") from None
    stored = sum(e.file_size for e in entries)
    if any(e.compress_type != zipfile.ZIP_STORED for e in entries) or stored > f.size:
        raise ModelLoadError(
            f"--inputs {text!r}: the archive holds compressed entries or {stored} bytes in a {f.size}-byte file "
            "(torch.save stores its entries uncompressed; refused)"
        )
    f.seek(0)
    try:
        x = torch.load(f, weights_only=True)
    except Exception as exc:
        raise ModelLoadError(f"reading {text!r} failed: {type(exc).__name__}: {exc}") from None
    batch = isinstance(x, (tuple, list)) and len(x) == 2 and isinstance(x[0], torch.Tensor)
    if not (isinstance(x, torch.Tensor) or batch):
        raise ModelLoadError(f"--inputs {text!r} must hold a tensor or a batch (x, y), got {type(x).__name__}")
    return x


def load_inputs(text: str) -> Any:
    """``"digits"`` or the path of a ``.npy`` / ``.pt`` file holding a batch of inputs.

    The file must be a regular file (a FIFO or a device is refused before it is read); a ``.npy``
    header must promise exactly the bytes the file holds and hold no Python objects; a ``.pt``
    file must be a ``torch.save`` archive whose entries fit in the file, holding a tensor or a
    batch ``(x, y)``. So memory stays within a small multiple of the file's size.

    Raises
    ------
    ModelLoadError
        Any of the above, a missing file, or a file that fails to load (a usage error).
    """
    if text == "digits":
        return "digits"
    from .._files import open_regular_file

    path = Path(text)
    if path.suffix not in (".npy", ".pt"):
        raise ModelLoadError(f"--inputs must be 'digits' or a .npy / .pt file, got {text!r}")
    try:
        f = open_regular_file(path, "--inputs")
    except OSError as exc:
        raise ModelLoadError(f"--inputs {text!r} cannot be read ({exc.strerror or type(exc).__name__})") from None
    except ValueError as exc:
        raise ModelLoadError(str(exc)) from None
    with f:
        return _read_npy(f, text) if path.suffix == ".npy" else _read_pt(f, text)


def _jsonable(obj):
    if isinstance(obj, dict):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return str(obj)
    if isinstance(obj, (np.floating, np.integer)):
        return _jsonable(obj.item())
    return obj


def exit_status(verdicts) -> int:
    """The exit status of an audit from its rows' verdicts.

    :data:`EXIT_FAILED` (1) when a verdict is ``"FAIL"``, else :data:`EXIT_NOTHING_CHECKED` (3)
    when there is no row or every verdict is ``"no theory"``, else :data:`EXIT_OK` (0).
    """
    verdicts = list(verdicts)
    if any(v == "FAIL" for v in verdicts):
        return EXIT_FAILED
    if all(v == "no theory" for v in verdicts):
        return EXIT_NOTHING_CHECKED
    return EXIT_OK


def check_out(out: Any) -> Path:
    """``out`` as an output folder: created if missing and test-written, before any work.

    Raises :class:`ModelLoadError` (a usage error) when ``out`` exists and is not a folder, or
    cannot be created or written.
    """
    import tempfile

    if isinstance(out, bytes) or not isinstance(out, (str, os.PathLike)) or str(out) == "":
        raise ModelLoadError(f"--out must be a folder path, got {out!r}")
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise ModelLoadError(f"--out {str(path)!r} exists and is not a folder (give a folder for the plot and JSON)")
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".meanfield-write-test-"):
            pass
    except OSError as exc:
        raise ModelLoadError(
            f"--out {str(path)!r} cannot be created or written ({exc.strerror or type(exc).__name__})"
        ) from None
    return path


@renamed_kwargs(n_inits="n_networks", seed="rng")
def run(
    model_spec: str,
    inputs: str = "digits",
    out: Any = "results/audit",
    n_inits: int = 20,
    seed: int = 0,
    backward: bool = True,
) -> int:
    """Audit ``model_spec``, print the table, write the plot and JSON; the exit status.

    ``out`` is checked first (:func:`check_out`), then the inputs are read and the model is
    loaded, so a bad argument costs no audit (and bad ``out`` or inputs run none of the user's code). The exit status comes from the rows' verdicts (:func:`exit_status`):
    0 every checked row passed, 1 a row failed, 3 nothing could be checked (every row
    ``"no theory"``).

    Raises :class:`ModelLoadError` (a usage error, exit status 2) for a bad ``out``, model spec or
    inputs, a model function that raises or calls ``sys.exit``, or an audit that rejects them.
    """
    from .. import __version__
    from .audit import audit

    out = check_out(out)
    x = load_inputs(inputs)
    model, name = load_model(model_spec)
    png, js = out / f"audit_{name}.png", out / f"audit_{name}.json"
    for target in (png, js):
        if target.exists() and not target.is_file():
            raise ModelLoadError(f"--out: {str(target)!r} exists and is not a file (it would be overwritten)")
    try:
        result = audit(model, x, n_networks=n_inits, rng=seed, backward=backward)
    except SystemExit as exc:  # the user's forward() called sys.exit()
        raise ModelLoadError(f"the audit of {model_spec} failed: the model called sys.exit({exc.code!r})") from None
    except (TypeError, ValueError) as exc:
        raise ModelLoadError(f"the audit of {model_spec} failed: {exc}") from None
    print(result.table())
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig = result.plot(png, title=f"meanfield audit of {model_spec}\n{result.summary()}")
    plt.close(fig)
    meta = {
        "library": "meanfield",
        "version": __version__,
        "kind": "audit",
        "model": model_spec,
        "inputs": inputs,
        "seed": seed,
        "n_inits": n_inits,
        "backward": backward,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    js.write_text(json.dumps(_jsonable({"metadata": meta, "data": result.to_dict()}), indent=1))
    print(f"audit written to {png} and {js}", file=sys.stderr)
    status = exit_status(r.verdict for r in result.rows)
    if status == EXIT_NOTHING_CHECKED:
        print(
            f"meanfield audit: nothing could be checked: every row of {model_spec} is 'no theory' (exit status 3)",
            file=sys.stderr,
        )
    return status
