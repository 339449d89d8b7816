"""No module uses a private name of another package, and no theory module another module's private name.

Packages: ``meanfield`` (the theory, with its subpackages ``meanfield.init``, ``meanfield.landscape``,
...), ``meanfield.validation`` (the folder ``validation/``, with ``meanfield.validation.simulators``)
and ``meanfield.figures`` (the folder ``figures/``). ``tests/`` and ``benchmarks/`` belong to none of
them: they use public names only.

A name is private when it starts with one underscore (``_name``; dunders such as ``__version__`` are
public); a module is private when any component of its dotted path is. Every ``.py`` file under the
five folders is parsed (``ast``) and these uses are reported:

(a) across packages: ``from X import _name``, ``import X._mod`` / ``from X._mod import name``, the
    attribute ``X._name`` of an imported module ``X``, and ``setattr``/``getattr``/``monkeypatch``
    calls naming ``"_name"`` on such a module or a dotted string with a private component;
(b) inside ``meanfield``: a module using a private *name* of another, public module (``from .dense
    import _map_stack``, ``dense._HOMOGENEOUS``). Shared internals belong in private shared modules
    (``meanfield._checks``, ``meanfield.init._args``, ``meanfield.landscape._common``, ...), which
    sibling modules may import, names and all.

Nothing is allowed: there is no list of tolerated exceptions.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: Source folder -> installed package name.
PACKAGE_ROOTS = {"meanfield": "meanfield", "validation": "meanfield.validation", "figures": "meanfield.figures"}
#: Folders scanned; ``tests`` and ``benchmarks`` belong to no package.
SCANNED = ("meanfield", "validation", "figures", "benchmarks", "tests")
#: Installed packages, most specific first.
PACKAGES = ("meanfield.validation", "meanfield.figures", "meanfield")


def _module_names() -> dict[str, Path]:
    """Dotted name of every module and package of the three installed folders."""
    out = {}
    for folder, package in PACKAGE_ROOTS.items():
        for path in (ROOT / folder).rglob("*.py"):
            rel = path.relative_to(ROOT / folder).with_suffix("").parts
            if rel[-1] == "__init__":
                rel = rel[:-1]
            out[".".join((package, *rel))] = path
    return out


MODULES = _module_names()


def _package_of(dotted: str | None) -> str | None:
    if dotted is None:
        return None
    for package in PACKAGES:
        if dotted == package or dotted.startswith(package + "."):
            return package
    return None


def _is_private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def _private_parts(dotted: str) -> list[str]:
    return [p for p in dotted.split(".") if _is_private(p)]


def _file_module(path: Path) -> tuple[str | None, bool]:
    """(dotted module name or None, is a package __init__)."""
    rel = path.relative_to(ROOT)
    if rel.parts[0] not in PACKAGE_ROOTS:
        return None, False
    parts = rel.with_suffix("").parts[1:]
    is_pkg = parts[-1:] == ("__init__",)
    if is_pkg:
        parts = parts[:-1]
    return ".".join((PACKAGE_ROOTS[rel.parts[0]], *parts)), is_pkg


def _resolve(node: ast.ImportFrom, module: str | None, is_pkg: bool) -> str | None:
    if node.level == 0:
        return node.module
    if module is None:
        return None
    base = module.split(".")
    if not is_pkg:
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


class _Scanner(ast.NodeVisitor):
    def __init__(self, path: Path):
        self.path = path
        self.rel = path.relative_to(ROOT).as_posix()
        self.module, self.is_pkg = _file_module(path)
        self.package = _package_of(self.module)
        self.aliases: dict[str, str] = {}  # local name -> dotted module of our packages
        self.offences: list[str] = []

    # the rules ------------------------------------------------------------------------------

    def _use(self, owner: str, name: str) -> None:
        """The private ``name`` of module ``owner`` (one of ours) is used here."""
        if _package_of(owner) is None:
            return
        target = f"{owner}.{name}"
        if _package_of(owner) != self.package:
            self.offences.append(f"{self.rel}: {target}")  # (a)
        elif self.package == "meanfield" and owner != self.module and not _private_parts(owner):
            self.offences.append(f"{self.rel}: {target}")  # (b): a public module's private name

    def _module_path(self, dotted: str) -> None:
        """A module of ours is imported by its dotted path: private components across packages."""
        if _package_of(dotted) not in (None, self.package) and _private_parts(dotted):
            self.offences.append(f"{self.rel}: {dotted}")

    def _dotted_string(self, text: str) -> None:
        if _package_of(text) is not None and _private_parts(text):
            owner, _, name = text.rpartition(".")
            if _is_private(name):
                self._use(owner, name)
            else:
                self._module_path(text)

    # imports --------------------------------------------------------------------------------

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._module_path(alias.name)
            if alias.asname:
                self.aliases[alias.asname] = alias.name
            else:
                self.aliases[alias.name.split(".")[0]] = alias.name.split(".")[0]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        source = _resolve(node, self.module, self.is_pkg)
        if source is None:
            return
        self._module_path(source)
        for alias in node.names:
            if alias.name == "*":
                continue
            full = f"{source}.{alias.name}"
            if full in MODULES:  # a submodule: judged as a module path (private ones only inside their package)
                self._module_path(full)
                self.aliases[alias.asname or alias.name] = full
            elif _is_private(alias.name):
                self._use(source, alias.name)

    # attribute access -----------------------------------------------------------------------

    def _chain(self, node: ast.AST) -> str | None:
        """``a.b.c`` as a dotted string of one of our modules' attributes, or None."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id not in self.aliases:
            return None
        return ".".join([self.aliases[node.id]] + parts[::-1])

    def visit_Attribute(self, node: ast.Attribute) -> None:
        dotted = self._chain(node)
        if dotted is not None and _is_private(node.attr):
            owner = dotted.rpartition(".")[0]
            if owner in MODULES or (_package_of(owner) is not None and owner in self.aliases.values()):
                self._use(owner, node.attr)
            self.generic_visit(node)
            return
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name in ("setattr", "getattr", "delattr", "patch", "setitem"):  # (hasattr may assert that a name is gone)
            args = node.args
            if len(args) >= 2 and isinstance(args[1], ast.Constant) and isinstance(args[1].value, str):
                owner = self._chain(args[0]) if isinstance(args[0], (ast.Name, ast.Attribute)) else None
                if owner in MODULES and _is_private(args[1].value):
                    self._use(owner, args[1].value)
            if args and isinstance(args[0], ast.Constant) and isinstance(args[0].value, str):
                self._dotted_string(args[0].value)
        self.generic_visit(node)


def scan(path: Path) -> list[str]:
    """Offences of one file (``'relative/path.py: dotted.private.name'``)."""
    scanner = _Scanner(path)
    scanner.visit(ast.parse(path.read_text(), filename=str(path)))
    return scanner.offences


def all_offences() -> set[str]:
    found = set()
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            found.update(scan(path))
    return found


def test_no_private_names_across_packages():
    found = all_offences()
    unexpected = sorted(found)
    assert unexpected == [], "private names used across packages / theory modules:\n" + "\n".join(unexpected)


def _offences_of(source: str, rel: str) -> list[str]:
    path = ROOT / rel
    scanner = _Scanner(path)
    scanner.visit(ast.parse(source))
    return scanner.offences


def test_scanner_catches_each_form():
    """The rules themselves: every form of private use is reported, public uses are not."""
    t = "tests/test_x.py"
    assert _offences_of("from meanfield.validation import _runner", t) == [f"{t}: meanfield.validation._runner"]
    assert _offences_of("from meanfield._checks import check_rng", t) == [f"{t}: meanfield._checks"]
    assert _offences_of("import meanfield.validation._runner as R", t) == [f"{t}: meanfield.validation._runner"]
    assert _offences_of("from meanfield.dense import _map_stack", t) == [f"{t}: meanfield.dense._map_stack"]
    assert _offences_of("from meanfield import conv\nconv._check_v(1)", t) == [f"{t}: meanfield.conv._check_v"]
    assert _offences_of("import meanfield.conv as C\nC._resolve_shape", t) == [f"{t}: meanfield.conv._resolve_shape"]
    assert _offences_of("from meanfield.validation import simulators as S\nmonkeypatch.setattr(S, '_X', 1)", t) == [
        f"{t}: meanfield.validation.simulators._X"
    ]
    assert _offences_of("monkeypatch.setattr('meanfield.landscape._common.LIMIT', 1)", t) == [
        f"{t}: meanfield.landscape._common.LIMIT"
    ]
    # public names, dunders, other libraries and the file's own private names are fine
    assert _offences_of("from meanfield import __version__, dense\nimport numpy as np\nnp._x\ndense.propagate", t) == []
    # (a) across packages from inside a package
    v = "validation/simulators/dense.py"
    assert _offences_of("from meanfield._checks import check_rng", v) == [f"{v}: meanfield._checks"]
    assert _offences_of("from meanfield.conv import _check_v", v) == [f"{v}: meanfield.conv._check_v"]
    assert (
        _offences_of("from ._common import check_elements\nfrom meanfield.validation._runner import progress", v) == []
    )
    # (b) inside meanfield: private shared modules yes, another module's private names no
    m = "meanfield/conv.py"
    assert (
        _offences_of("from ._checks import check_rng\nfrom .init._args import int_arg\nfrom . import _checks", m) == []
    )
    assert _offences_of("from ._common import _int", "meanfield/landscape/_binary.py") == []
    assert _offences_of("from .dense import _map_stack", m) == [f"{m}: meanfield.dense._map_stack"]
    assert _offences_of("from . import dense\ndense._HOMOGENEOUS", m) == [f"{m}: meanfield.dense._HOMOGENEOUS"]
    assert _offences_of("_X = 1\ndef f():\n    return _X", m) == []
