"""The public API the fuzz registry must cover: every callable in ``__all__`` of every public module.

Public modules: the submodules listed in ``meanfield.__all__``; every ``meanfield.validation``
module whose name does not start with an underscore (the deprecated ``validation.simulators`` included: it
re-exports the objects of ``meanfield.simulate``, covered under their ``simulate.`` names); and the package
``meanfield.figures`` itself, whose ``__all__`` holds the loaders (``load``, ``FigureData``). The
per-paper figure modules are not in scope: their functions draw figures and are rendered by
``tests/figures/test_figures_render.py``. :data:`EXTRA_SCOPE` can restrict a module to some of its names.

A callable re-exported under several names (``meanfield.backend.get_backend`` is
``meanfield.validation.backend.get_backend``) is one function: it is covered when any of its names
is in the registry or in ``NOT_FUZZED``.
"""

from __future__ import annotations

import importlib
import pkgutil

#: Of these modules only the listed names are in scope (none restricted today).
EXTRA_SCOPE: dict[str, set[str]] = {}


def public_modules() -> list[str]:
    """Registry-style module names (below ``meanfield``), in a fixed order."""
    import meanfield.validation as validation

    import meanfield

    names = [m for m in meanfield.__all__ if isinstance(getattr(meanfield, m, None), type(meanfield))]
    names += [f"validation.{m.name}" for m in pkgutil.iter_modules(validation.__path__) if not m.name.startswith("_")]
    names.append("figures")
    return names


def public_callables() -> dict[str, object]:
    """Registry name -> public callable (first name of each object; aliases dropped)."""
    out: dict[str, object] = {}
    seen: dict[int, str] = {}
    for module_name in public_modules():
        module = importlib.import_module(f"meanfield.{module_name}")
        scope = EXTRA_SCOPE.get(module_name)
        for attr in getattr(module, "__all__", []):
            if scope is not None and attr not in scope:
                continue
            obj = getattr(module, attr, None)
            if obj is None or not callable(obj) or isinstance(obj, type(module)):
                continue
            if id(obj) in seen:
                continue
            name = f"{module_name}.{attr}"
            seen[id(obj)] = name
            out[name] = obj
    return out


def aliases() -> dict[str, str]:
    """Every public name of a re-exported callable -> the name :func:`public_callables` uses."""
    canonical = {id(obj): name for name, obj in public_callables().items()}
    out = {}
    for module_name in public_modules():
        module = importlib.import_module(f"meanfield.{module_name}")
        for attr in getattr(module, "__all__", []):
            obj = getattr(module, attr, None)
            if obj is not None and id(obj) in canonical:
                out[f"{module_name}.{attr}"] = canonical[id(obj)]
    return out
