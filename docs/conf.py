"""Sphinx configuration of the meanfield documentation.

Sphinx because the library's docstrings are numpydoc (rendered natively by numpydoc + autosummary),
its examples are plain scripts (sphinx-gallery executes them and builds the gallery), and the paper
pages stay Markdown (MyST). Built with warnings as errors in CI: ``sphinx-build -W -b html docs docs/_build/html``.
"""

from __future__ import annotations

import os
import sys

import meanfield

os.environ.setdefault("MEANFIELD_NO_PROGRESS", "1")

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
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py.md5", "**.codeobj.json"]
myst_enable_extensions = ["dollarmath", "amsmath"]
myst_heading_anchors = 3

autosummary_generate = True
autosummary_imported_members = False
autodoc_default_options = {"members": True, "undoc-members": False}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks: set[str] = set()

sphinx_gallery_conf = {
    "examples_dirs": ["../examples"],
    "gallery_dirs": ["auto_examples"],
    "filename_pattern": r"/(plot|run)_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "image_scrapers": ("matplotlib",),
    "show_memory": False,
    "show_signature": False,
}

html_theme = "furo"
html_title = f"meanfield {release}"
html_static_path: list[str] = []

sys.setrecursionlimit(3000)
