"""Sphinx configuration of the meanfield documentation.

Sphinx because the library's docstrings are numpydoc (rendered natively by numpydoc + autosummary),
its examples are plain scripts (sphinx-gallery executes them and builds the gallery), and the paper
pages stay Markdown (MyST). Built with warnings as errors in CI: ``sphinx-build -W -b html docs docs/_build/html``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import meanfield

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # gallery_order, paper_gallery

import paper_gallery

os.environ.setdefault("MEANFIELD_NO_PROGRESS", "1")


def _document_classes_where_users_import_them() -> None:
    """A class defined in a private module and re-exported by several public modules (a package and
    its public submodule, e.g. ``meanfield.train`` and ``meanfield.train.symmetric``) is documented
    under the deepest of them: autodoc would otherwise describe its private home twice."""
    import importlib
    import inspect
    import pkgutil
    import warnings

    homes: dict[type, list[str]] = {}

    def walk(name: str) -> None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # deprecated alias modules
                mod = importlib.import_module(name)
        except ImportError:  # an optional extra that is not installed
            return
        for attr in getattr(mod, "__all__", ()):
            obj = getattr(mod, attr, None)
            if inspect.isclass(obj) and any(p.startswith("_") for p in obj.__module__.split(".")):
                homes.setdefault(obj, []).append(name)
        for info in pkgutil.iter_modules(getattr(mod, "__path__", [])):
            if not info.name.startswith("_"):
                walk(f"{name}.{info.name}")

    walk("meanfield")
    for cls, modules in homes.items():
        if len(modules) > 1:
            cls.__module__ = max(modules, key=lambda m: m.count("."))


_document_classes_where_users_import_them()

project = "meanfield"
author = "The meanfield developers"
copyright = "2026, The meanfield developers"
release = meanfield.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build", "_gallery", "auto_examples/*.ipynb", "auto_examples/*.py.md5", "**.codeobj.json"]
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3

autosummary_generate = True
autosummary_imported_members = False
autosummary_ignore_module_all = False  # subpackages (finite_width, init, landscape) list their re-exported __all__
autodoc_default_options = {"members": True, "undoc-members": False}
# signatures without type hints: the numpydoc Parameters / Returns sections state the types, and
# numpy.typing.ArrayLike would otherwise expand to a dozen lines of _SupportsArray unions
autodoc_typehints = "none"
numpydoc_show_class_members = False

# autosummary's one-line summaries end at the first ". ", so "Hessian of eq. 10 ..." became "Hessian of
# eq."; the docstrings cite equations, sections and figures everywhere, so treat these as abbreviations.
import sphinx.ext.autosummary as _autosummary  # noqa: E402

_ABBREVIATIONS = "eq eqs Eq Eqs Sec Secs Fig Figs Prop Props Thm App Supp Cor Alg cf resp approx Ref Refs No i.i.d"
_autosummary.WELL_KNOWN_ABBREVIATIONS = (
    *_autosummary.WELL_KNOWN_ABBREVIATIONS,
    *(f"{word}." for word in _ABBREVIATIONS.split()),
)
numpydoc_class_members_toctree = False
numpydoc_validation_checks: set[str] = set()

_DOCS = os.path.dirname(os.path.abspath(__file__))
# The gallery's source: examples/ and one script a paper written from the figure registry.
paper_gallery.gallery_source(Path(_DOCS).parent / "examples", Path(_DOCS) / "_gallery")

sphinx_gallery_conf = {
    "examples_dirs": ["_gallery"],
    "gallery_dirs": ["auto_examples"],
    "filename_pattern": r"/(plot|run)_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "gallery_order.PaperOrder",  # docs/gallery_order.py
    "image_scrapers": ("matplotlib",),
    "show_memory": False,
    "show_signature": False,
}

html_theme = "furo"
html_title = f"meanfield {release}"
html_static_path: list[str] = []

sys.setrecursionlimit(3000)


def _skip_dataclass_fields(app, what, name, obj, skip, options):
    """Skip plain data attributes of classes: the result dataclasses document their fields in a
    numpydoc Attributes section, which autodoc would otherwise repeat as bare ``name: type`` entries.
    Methods and properties are kept."""
    if what == "class" and not name.startswith("_"):
        if not (callable(obj) or isinstance(obj, (property, classmethod, staticmethod))):
            return True
    return None


def setup(app):
    app.connect("autodoc-skip-member", _skip_dataclass_fields)
