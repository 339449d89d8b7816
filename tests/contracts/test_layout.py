"""Package layout: one namespace in site-packages, and the theory layer imports nothing above it."""

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
