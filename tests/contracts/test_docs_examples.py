"""Every Python example in the README and the documentation pages runs as pasted.

The blocks of one page run in order in one namespace (a page may build on its earlier blocks), as a
reader pasting them into one session would.
"""

import functools
import importlib.util
import re
import sys
from pathlib import Path

import matplotlib
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, which holds fuzz/

from fuzz.modules import CORE_MODULES

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
#: The user-facing pages with Python code blocks (pages without any have nothing to run).
PAGES = [p for p in PAGES if "_build" not in p.parts and "auto_examples" not in p.parts and BLOCK.search(p.read_text())]


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_python_blocks_run(page, tmp_path, monkeypatch):
    blocks = BLOCK.findall(page.read_text())
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__main__"}  # as in a script: guarded blocks run too
    for i, code in enumerate(blocks):
        try:
            exec(compile(code, f"{page.name}[block {i}]", "exec"), namespace)
        except Exception as exc:  # pragma: no cover - the failure message is the point
            raise AssertionError(
                f"{page.relative_to(ROOT)} block {i} failed: {type(exc).__name__}: {exc}\n{code}"
            ) from exc


def test_gallery_shows_every_registered_figure_once(tmp_path):
    """The gallery's source (``docs/paper_gallery.py``): every registered figure shown exactly once,
    every script valid Python, the hand-written examples kept, papers' figures in the paper's order."""
    sys.path.insert(0, str(ROOT / "docs"))
    try:
        import paper_gallery
    finally:
        sys.path.remove(str(ROOT / "docs"))
    from meanfield.figures.runner import all_figures

    written = paper_gallery.gallery_source(ROOT / "examples", tmp_path / "gallery")
    scripts = sorted((tmp_path / "gallery").glob("plot_*.py"))
    assert {p.name for p in (ROOT / "examples").iterdir() if p.suffix in {".py", ".rst"}} <= {
        p.name for p in (tmp_path / "gallery").iterdir()
    }
    assert set(written) <= set(scripts)
    shown = []
    for path in scripts:
        text = path.read_text()
        compile(text, path.name, "exec")
        shown += re.findall(r"^show\(([\w.]+)\)$", text, re.M)
    assert sorted(shown) == sorted(all_figures()), "every registered figure once"
    order = re.findall(r"^show\(([\w.]+)\)$", (tmp_path / "gallery" / "plot_xiao2018.py").read_text(), re.M)
    assert order[:3] == ["xiao2018.fig_1", "xiao2018.fig_2", "xiao2018.fig_2_theory"]
    assert order.index("xiao2018.fig_5") < order.index("xiao2018.fig_s1")  # Fig. 5 before Fig. S1


def test_figure_labels_sort_in_paper_order():
    sys.path.insert(0, str(ROOT / "docs"))
    try:
        from paper_gallery import figure_key
    finally:
        sys.path.remove(str(ROOT / "docs"))
    labels = [
        "not in the paper: x",
        "Table 2",
        "Fig. S1",
        "analogue of Fig. 10",
        "Fig. 2 (theory)",
        "Fig. 2",
        "Fig. 4b",
    ]
    assert sorted(labels, key=figure_key) == [
        "Fig. 2",
        "Fig. 2 (theory)",
        "Fig. 4b",
        "analogue of Fig. 10",
        "Fig. S1",
        "Table 2",
        "not in the paper: x",
    ]


# --- docstrings render as reStructuredText without warnings -------------------------------------
#
# The API reference is built with ``sphinx-build -W``: a docstring with ``|x|`` (a substitution), a
# bare ``*`` (emphasis), a malformed table or an unreferenced citation fails the whole build. This
# check parses every public docstring the API reference shows, as numpydoc renders it, with plain
# docutils (Sphinx-only roles and directives registered as no-ops), in a few seconds.

API_MODULES = [
    *CORE_MODULES,
    "meanfield.simulate.dense",
    "meanfield.simulate.conv",
    "meanfield.simulate.finite_width",
    "meanfield.simulate.kurtosis",
    "meanfield.simulate.kurtosis_residual",
    "meanfield.simulate.symmetry",
    "meanfield.validation.backend",
    "meanfield.validation.report",
    "meanfield.validation.runner",
    "meanfield.figures.harness",
    "meanfield.figures.runner",
    "meanfield.validation.dense",
    "meanfield.validation.conv",
    "meanfield.validation.finite_width",
    "meanfield.validation.kurtosis",
    "meanfield.validation.landscape",
    "meanfield.validation.symmetry",
    "meanfield.figures",
    "meanfield.figures.xiao2018",
    "meanfield.figures.burkholz2019",
    "meanfield.figures.grzejdziak2023",
    "meanfield.figures.blumenfeld2020",
    "meanfield.figures.orhan2017",
    "meanfield.validation.audit",
    "meanfield.figures.pytorch_bridge",
    *(
        ["meanfield.pytorch", "meanfield.pytorch.init", "meanfield.pytorch.audit", "meanfield.pytorch.modules"]
        + ["meanfield.pytorch.trace"]
        + ["meanfield.pytorch.command"]
        if importlib.util.find_spec("torch") is not None
        else []
    ),
    "meanfield.spectra",
    "meanfield.ntk",
    "meanfield.mehler",
    "meanfield.simulate.spectra",
    "meanfield.simulate.ntk",
    "meanfield.validation.spectra",
    "meanfield.validation.ntk",
    "meanfield.validation.conv_inputs",
    "meanfield.validation.kurtosis_conv",
]


def _docutils_parser():
    """A docutils parse function that knows Sphinx's roles and directives as no-ops."""
    import io

    pytest.importorskip("docutils")  # the test extra installs it
    from docutils import nodes
    from docutils.core import publish_doctree
    from docutils.parsers.rst import Directive, directives, roles

    class _AnyOption(dict):
        def __missing__(self, key):
            return directives.unchanged

    class _NoOp(Directive):
        has_content = True
        optional_arguments = 50
        final_argument_whitespace = True
        option_spec = _AnyOption()

        def run(self):
            return []

    for role in (
        "func",
        "class",
        "data",
        "meth",
        "attr",
        "mod",
        "obj",
        "exc",
        "ref",
        "doc",
        "term",
        "math",
        "py:func",
        "py:class",
        "py:data",
        "py:meth",
        "py:attr",
        "py:mod",
        "py:obj",
    ):
        roles.register_generic_role(role, nodes.literal)
    for name in (
        "math",
        "autosummary",
        "only",
        "seealso",
        "versionadded",
        "versionchanged",
        "deprecated",
        "plot",
        "currentmodule",
        "autofunction",
        "autoclass",
    ):
        directives.register_directive(name, _NoOp)

    def parse(text):
        stream = io.StringIO()  # every warning or error docutils reports, transforms' included
        doc = publish_doctree(text, settings_overrides={"report_level": 2, "halt_level": 5, "warning_stream": stream})
        problems = [
            line
            for line in stream.getvalue().splitlines()
            if "(WARNING/" in line or "(ERROR/" in line or "(SEVERE/" in line
        ]
        cited = {ref["refname"] for ref in doc.findall(nodes.citation_reference) if "refname" in ref}
        problems += [
            f"citation [{c['names'][0]}] is not referenced"
            for c in doc.findall(nodes.citation)
            if c["names"] and c["names"][0] not in cited
        ]
        return problems

    return parse


def _public_docstrings(module_name):
    """(label, numpydoc-rendered docstring) of a module, its public names and their members."""
    import importlib
    import inspect

    numpydoc = pytest.importorskip("numpydoc.docscrape_sphinx")  # the test extra installs it
    module = importlib.import_module(module_name)
    names = getattr(module, "__all__", None) or [n for n in vars(module) if not n.startswith("_")]

    def rendered(obj, what):
        return str(numpydoc.get_doc_object(obj, what=what, config={"show_class_members": False}))

    yield module_name, rendered(module, "module")
    for name in names:
        obj = getattr(module, name, None)
        if inspect.isclass(obj):
            yield f"{module_name}.{name}", rendered(obj, "class")
            for member, value in vars(obj).items():
                if member.startswith("_"):
                    continue
                if isinstance(value, property) or inspect.isfunction(value):
                    if value.__doc__:
                        yield f"{module_name}.{name}.{member}", rendered(value, "method")
        elif callable(obj) and not inspect.ismodule(obj):
            yield f"{module_name}.{name}", rendered(obj, "function")
    try:  # module attributes documented with "#:" comments (what autodoc shows for constants)
        from sphinx.pycode import ModuleAnalyzer

        for (_, attr), lines in ModuleAnalyzer.for_module(module_name).find_attr_docs().items():
            if not attr.startswith("_") and attr in names:
                yield f"{module_name}.{attr}", "\n".join(lines)
    except ImportError:
        pass


@functools.cache
def _rst_problems(module_name):
    """{label: [problems]} of every public docstring of a module that does not parse cleanly."""
    import warnings

    parse = _docutils_parser()
    problems = {}
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=UserWarning)  # numpydoc on module docstrings' own headings
        for label, text in _public_docstrings(module_name):
            found = parse(text)
            if found:
                problems.setdefault(label, []).extend(found)
    return problems


@pytest.mark.parametrize("module_name", API_MODULES)
def test_docstrings_are_valid_rst(module_name):
    problems = _rst_problems(module_name)
    assert problems == {}, "\n".join(f"{k}: {p}" for k, v in problems.items() for p in v)
