"""Numba's on-disk cache, keyed on the whole package's source (private).

Numba stamps a cached kernel with the source of the file that defines it and nothing else
(``numba.core.caching``: the locator's ``get_source_stamp``). The library's kernels inline
helpers from other files (``inline="always"``, the closed forms, the quadrature rules), so an
edit to a helper, an update of a checkout or an upgrade of the package into a shared
``NUMBA_CACHE_DIR`` left kernels whose own file did not change loaded from the cache, compiled
from the old helpers: the numbers of the old code, silently. :func:`install` wraps Numba's cache
locators so that every kernel defined under ``meanfield/`` is stamped with its file's stamp *and*
a digest of every ``.py`` file of the package: any change of the package's source recompiles
every kernel once (what a fresh machine does); nothing else is changed (where the cache lives,
what it holds, kernels of other packages).

``import meanfield`` calls :func:`install` before any kernel is defined. Where the user chose
locators with ``NUMBA_CACHE_LOCATOR_CLASSES``, nothing is wrapped (their choice). Where Numba's
locator list is not where this module expects it (a Numba release that moved it), nothing is
wrapped and a ``RuntimeWarning`` says that the cache must be cleared after updating the library.
"""

from __future__ import annotations

import hashlib
import os
import warnings
from pathlib import Path

_ROOT = Path(__file__).resolve().parent
_DIGEST: str | None = None
_INSTALLED = False


def tree_digest() -> str:
    """SHA-256 over the relative path and bytes of every ``.py`` file of the package (once per process)."""
    global _DIGEST
    if _DIGEST is None:
        h = hashlib.sha256()
        for path in sorted(_ROOT.rglob("*.py")):
            h.update(path.relative_to(_ROOT).as_posix().encode() + b"\0")
            h.update(path.read_bytes())
        _DIGEST = h.hexdigest()
    return _DIGEST


def _in_package(py_file) -> bool:
    try:
        Path(py_file).resolve().relative_to(_ROOT)
    except (TypeError, ValueError, OSError):
        return False
    return True


class _PackageStamp:
    """Locator mixin: the file's own stamp and, for the package's files, :func:`tree_digest`."""

    def get_source_stamp(self):
        stamp = super().get_source_stamp()
        if _in_package(getattr(self, "_py_file", None)):
            return (stamp, tree_digest())
        return stamp


def install() -> bool:
    """Wrap Numba's cache locators (idempotent); True when every kernel of the package is stamped."""
    global _INSTALLED
    if _INSTALLED:
        return True
    if os.environ.get("NUMBA_CACHE_LOCATOR_CLASSES"):
        return False  # the user's choice of locators is left alone
    import numba
    from numba.core import caching

    impl = getattr(caching, "CacheImpl", None) or getattr(caching, "_CacheImpl", None)  # newer / older Numba
    classes = getattr(impl, "_locator_classes", None)
    if not isinstance(classes, list) or not all(isinstance(c, type) for c in classes):
        warnings.warn(
            f"meanfield: Numba {numba.__version__}'s cache locators were not found, so a cached kernel is "
            "keyed on its own file only; clear the Numba cache (NUMBA_CACHE_DIR, or the __pycache__ "
            "folders of meanfield) after updating meanfield",
            RuntimeWarning,
            stacklevel=3,
        )
        return False
    impl._locator_classes = [
        c if issubclass(c, _PackageStamp) else type(c.__name__, (_PackageStamp, c), {}) for c in classes
    ]
    _INSTALLED = True
    return True
