"""The figure registry: filled by the ``@figure`` declarations alone, every figure exported, one save path.

Static checks read the sources of ``meanfield.figures`` (no figure is run): the paper modules do not
fill ``FIGURES`` by hand and import nothing below their first statement, every registered figure is
in its module's ``__all__``, and only :func:`meanfield.figures._common.save_figure` writes a figure.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import meanfield.figures
import pytest
from meanfield.figures import harness as _common
from meanfield.figures import load
from meanfield.figures.runner import all_figures

FIGURES_DIR = Path(meanfield.figures.__file__).parent
#: Every module of the package, the modules of a paper's package (``xiao2018/_cnn``) included.
SOURCES = {
    p.relative_to(FIGURES_DIR).with_suffix("").as_posix(): p.read_text(encoding="utf-8")
    for p in sorted(FIGURES_DIR.rglob("*.py"))
}
REGISTRY = all_figures()
PAPERS = sorted({key.split(".")[0] for key in REGISTRY})


def _module(name):
    return importlib.import_module(f"meanfield.figures.{name}")


def test_every_paper_module_registers_figures():
    assert set(PAPERS) >= {"xiao2018", "burkholz2019", "grzejdziak2023", "blumenfeld2020", "orhan2017"}
    assert len(REGISTRY) >= 55


@pytest.mark.parametrize("key", sorted(REGISTRY))
def test_registered_figure_is_exported_by_its_module(key):
    paper, name = key.split(".")
    module, func = _module(paper), REGISTRY[key]
    assert name in module.__all__, f"{key} is registered but not in {paper}.__all__"
    assert getattr(module, name) is func
    assert module.FIGURES[name] is func  # FIGURES is the registry's view
    assert func.__name__ == name and hasattr(func, "sizes")


@pytest.mark.parametrize("paper", PAPERS)
def test_every_declared_figure_of_a_module_is_registered(paper):
    module = _module(paper)
    declared = {n for n, obj in vars(module).items() if callable(obj) and hasattr(obj, "sizes")}
    assert declared == set(module.FIGURES)
    with pytest.raises(TypeError):
        module.FIGURES["new"] = None  # read-only: only @figure registers


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_no_figure_module_fills_the_registry_by_hand(name):
    source = SOURCES[name]
    assert "noqa: E402" not in source, f"figures/{name}.py has an import below its first statement"
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "update":
            assert not (isinstance(node.func.value, ast.Name) and node.func.value.id == "FIGURES"), name
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                assert not (isinstance(target, ast.Subscript) and getattr(target.value, "id", "") == "FIGURES"), name
                if isinstance(node, ast.AugAssign):
                    assert getattr(target, "id", "") != "__all__", f"figures/{name}.py extends __all__ piecemeal"
                if isinstance(node, ast.Assign) and getattr(target, "id", "") == "FIGURES":
                    assert isinstance(node.value, ast.Call) and node.value.func.id == "registered", name


@pytest.mark.parametrize("name", [n for n in sorted(SOURCES) if n != "_common"])
def test_module_level_imports_come_first(name):
    body = ast.parse(SOURCES[name]).body
    kinds = [isinstance(n, (ast.Import, ast.ImportFrom)) for n in body]
    docstring = int(bool(body) and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant))
    first_other = next((i for i, k in enumerate(kinds) if not k and i >= docstring), len(kinds))
    late = [body[i].lineno for i in range(first_other, len(body)) if kinds[i]]
    assert not late, f"figures/{name}.py imports at lines {late}, below its first statement"


def test_single_save_path():
    """Only _common.save_figure writes a figure: no other helper, alias or direct savefig / JSON writer."""
    for name, source in SOURCES.items():
        tree = ast.parse(source)
        defined = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        names |= {a.asname or a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
        assert not names & {"save_declared", "_save"}, f"figures/{name}.py saves by another name"
        if name == "_common":
            assert not defined & {"save_declared", "_save"}
            continue
        calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
        writers = {"savefig", "write_json", "figure_metadata", "imsave"}
        direct = sorted(
            {getattr(c.func, "attr", getattr(c.func, "id", "")) for c in calls}
            & writers - (defined if name == "_io" else set())
        )
        assert not direct or name == "_io", f"figures/{name}.py writes a figure with {direct}, not save_figure"
    save_params = inspect.signature(_common.save_figure).parameters
    assert "figure" in save_params and "paper" in save_params


def test_declaration_registers_under_the_named_module(tmp_path):
    """A helper module's figure declared with module="PAPER" is listed under PAPER; its declaration saves it."""
    owner = "_registry_test_paper"

    @_common.figure(paper="Doe et al. 2020", figure="Fig. 9", honours_backend=False, module=owner)
    def fig_9(out_dir, *, size, backend, seed):
        fig, ax = _common.plt.subplots()
        ax.plot([0, 1], [seed, 1])
        return _common.save_figure(fig, out_dir, "doe_fig_9", {"x": [0, 1]}, figure=fig_9, size=size, rng=seed)

    view = _common.registered(f"meanfield.figures.{owner}")
    assert dict(view) == {"fig_9": fig_9} and _common.registered(owner)["fig_9"] is fig_9
    _png, js = fig_9(tmp_path, size="smoke", rng=3)
    meta = load(js).metadata
    assert (meta["paper"], meta["figure"], meta["seed"]) == ("Doe et al. 2020", "Fig. 9", 3)
    assert owner not in {k.split(".")[0] for k in all_figures()}  # not a figure module: not run by `--all`

    with pytest.raises(ValueError, match="declared twice"):

        @_common.figure(paper="Doe et al. 2020", figure="Fig. 9", honours_backend=False, module=owner)
        def fig_9(out_dir, *, size, backend, seed):  # the same name again: refused
            return []

    with pytest.raises(TypeError, match="module"):
        _common.figure(paper="Doe et al. 2020", figure="Fig. 1", honours_backend=False, module=3)
    with pytest.raises(TypeError, match="figure"):
        _common.save_figure(_common.plt.figure(), tmp_path, "bad", {}, paper="Doe et al. 2020", figure=3)
