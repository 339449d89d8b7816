"""Package layout: one namespace in site-packages, and each layer imports nothing above it.

Layers, bottom up: the theory (every module of ``meanfield`` but the simulators), the simulators
(``meanfield.simulate``: they may import ``meanfield.backend``, ``meanfield.init`` and the theory
modules), then ``meanfield.validation`` and ``meanfield.figures``.
"""

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _importable(name: str, cwd: Path) -> bool:
    code = f"import importlib.util, sys; sys.exit(0 if importlib.util.find_spec({name!r}) else 1)"
    return subprocess.run([sys.executable, "-c", code], cwd=cwd).returncode == 0


def test_no_generic_top_level_packages(tmp_path):
    # run outside the repository so that the working directory does not shadow the install
    assert _importable("meanfield.validation", tmp_path)
    assert _importable("meanfield.figures", tmp_path)
    assert not _importable("validation", tmp_path)
    assert not _importable("figures", tmp_path)


def test_user_module_named_validation_does_not_break_cli(tmp_path):
    (tmp_path / "validation.py").write_text("raise RuntimeError('user module imported')\n")
    (tmp_path / "figures.py").write_text("raise RuntimeError('user module imported')\n")
    code = "from meanfield.validation.runner import comparison_modules; print(comparison_modules())"
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "dense" in out.stdout


def test_theory_layer_imports_nothing_above_it():
    offenders = []
    for path in (ROOT / "meanfield").rglob("*.py"):
        if path.name == "cli.py":  # the console script loads the upper layers lazily
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for n in names:
                if n.split(".")[:2] in (["meanfield", "validation"], ["meanfield", "figures"]) or n.split(".")[0] in {
                    "validation",
                    "figures",
                }:
                    offenders.append(f"{path.relative_to(ROOT)}: {n}")
    assert offenders == []


def _imported_names(source: str, package: str) -> list[str]:
    """Absolute names of the modules ``source`` imports, relative imports resolved against ``package``;
    ``from A import b`` also yields ``A.b`` (``b`` may be a submodule: ``from meanfield import simulate``)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            parts = package.split(".")
            base = parts[: len(parts) - node.level + 1] if node.level else []
            module = ".".join([*base, node.module] if node.module else base)
            out += [module] + [f"{module}.{a.name}" for a in node.names]
    return out


def _imported_modules(path: Path) -> list[str]:
    return _imported_names(path.read_text(), ".".join(path.relative_to(ROOT).parts[:-1]))


def _is_simulate(name: str) -> bool:
    return name == "meanfield.simulate" or name.startswith("meanfield.simulate.")


def test_theory_modules_do_not_import_the_simulators():
    """The simulators sit above the theory: no theory module imports ``meanfield.simulate``."""
    offenders = []
    for path in (ROOT / "meanfield").rglob("*.py"):
        rel = path.relative_to(ROOT)
        if rel.parts[1] == "simulate" or path.name == "cli.py":
            continue
        offenders += [f"{rel}: {n}" for n in _imported_modules(path) if _is_simulate(n)]
    assert offenders == []


def test_the_simulators_import_only_the_library_below_them():
    """``meanfield.simulate`` imports the theory, ``meanfield.backend`` and ``meanfield.init``: never the
    comparison or figure packages, nor the command line."""
    offenders = []
    for path in (ROOT / "meanfield" / "simulate").rglob("*.py"):
        for n in _imported_modules(path):
            if n.split(".")[:2] in (["meanfield", "validation"], ["meanfield", "figures"], ["meanfield", "cli"]):
                offenders.append(f"{path.relative_to(ROOT)}: {n}")
    assert offenders == []


def test_the_import_resolver_sees_each_form():
    """The helper behind the layer tests resolves every import form (so that an offence cannot hide)."""
    for code in (
        "from .. import simulate",
        "from ..simulate.dense import simulate_dense",
        "import meanfield.simulate",
        "from meanfield import simulate as S",
    ):
        assert any(_is_simulate(n) for n in _imported_names(code, "meanfield.nets")), code
    assert not any(_is_simulate(n) for n in _imported_names("from .simulated import x", "meanfield"))
    assert _imported_names("from ..runner import progress", "meanfield.validation.simulators")[0] == (
        "meanfield.validation.runner"
    )


def test_every_package_folder_is_installed():
    """Each folder with an __init__.py under the three roots is listed in pyproject's packages."""
    import tomllib

    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(cfg["packages"])
    roots = {src: pkg for pkg, src in cfg["package-dir"].items()}
    found = set()
    for src, pkg in roots.items():
        for init in (ROOT / src).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / src).parts
            found.add(".".join((pkg, *rel)))
    assert found <= listed, f"not installed: {sorted(found - listed)}"


def test_version_has_one_source():
    import re

    import meanfield

    written = re.findall(r'__version__ = "([^"]+)"', (ROOT / "meanfield" / "_version.py").read_text())
    assert written == [meanfield.__version__]
    assert "version =" not in (ROOT / "pyproject.toml").read_text().split("[project]")[1].split("[")[0]


def test_the_cli_module_imports_no_comparison_module():
    """The core's command line (``meanfield.cli``) reaches ``meanfield.validation`` only when a command runs."""
    import subprocess
    import sys

    code = "import sys, meanfield.cli; print(any(m.startswith('meanfield.validation') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False"


#: Figure modules that import a comparison module of ``meanfield.validation`` (none).
FIGURES_USING_VALIDATION: set[str] = set()


def test_figures_import_nothing_from_validation():
    """The figures draw what the library computes: a computation a figure shares with a comparison
    lives in ``meanfield`` (simulate, train, compare), not in ``meanfield.validation``."""
    users = set()
    for path in (ROOT / "figures").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            if any(n.split(".")[:2] == ["meanfield", "validation"] for n in names):
                users.add(str(path.relative_to(ROOT)))
    assert users == FIGURES_USING_VALIDATION
