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
import sys
from pathlib import Path
from typing import Any

import numpy as np

from ._torch import require_torch

__all__ = ["ModelLoadError", "load_inputs", "load_model", "run"]

torch = require_torch()


class ModelLoadError(ValueError):
    """A ``PATH.py:FUNCTION`` that cannot be loaded (one-line message)."""


def load_model(spec: str) -> tuple[Any, str]:
    """Import ``PATH.py``, call ``FUNCTION()`` and return ``(model, FUNCTION)``.

    Raises
    ------
    ModelLoadError
        A spec without ``:``, a missing file, a file that fails to import (the exception's first
        line), a missing or non-callable attribute, a call that fails, a result that is not an
        ``nn.Module``.
    """
    if not isinstance(spec, str) or ":" not in spec:
        raise ModelLoadError(f"model must be given as PATH.py:FUNCTION, got {spec!r}")
    path_text, _, func_name = spec.rpartition(":")
    path = Path(path_text)
    if not path.is_file():
        raise ModelLoadError(f"no such file: {path_text!r}")
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
    except Exception as exc:
        first = (str(exc).splitlines() or [""])[0]
        raise ModelLoadError(f"{path_text}:{func_name}() failed: {type(exc).__name__}: {first}") from None
    if not isinstance(model, torch.nn.Module):
        raise ModelLoadError(f"{path_text}:{func_name}() returned {type(model).__name__}, not a torch.nn.Module")
    return model, func_name


def load_inputs(text: str) -> Any:
    """``"digits"`` or the path of a ``.npy`` / ``.pt`` file holding a batch of inputs."""
    if text == "digits":
        return "digits"
    path = Path(text)
    if not path.is_file():
        raise ModelLoadError(f"--inputs must be 'digits' or a .npy / .pt file, got {text!r}")
    try:
        if path.suffix == ".npy":
            return np.load(path, allow_pickle=False)
        if path.suffix == ".pt":
            return torch.load(path, weights_only=True)
    except Exception as exc:
        raise ModelLoadError(f"reading {text!r} failed: {type(exc).__name__}: {exc}") from None
    raise ModelLoadError(f"--inputs must be 'digits' or a .npy / .pt file, got {text!r}")


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


def run(
    model_spec: str,
    inputs: str = "digits",
    out: Any = "results/audit",
    n_inits: int = 20,
    seed: int = 0,
    backward: bool = True,
) -> int:
    """Audit ``model_spec`` and write the plot and JSON; the exit status (0 no row failed, 1 some failed).

    Raises :class:`ModelLoadError` (a usage error) for a bad model spec or inputs.
    """
    from .. import __version__
    from .audit import audit

    model, name = load_model(model_spec)
    x = load_inputs(inputs)
    try:
        result = audit(model, x, n_inits=n_inits, rng=seed, backward=backward)
    except (TypeError, ValueError) as exc:
        raise ModelLoadError(f"the audit of {model_spec} failed: {exc}") from None
    print(result.table())
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    png, js = out / f"audit_{name}.png", out / f"audit_{name}.json"
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
    return 0 if result.passed else 1
