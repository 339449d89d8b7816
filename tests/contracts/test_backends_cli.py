"""``--backend numpy|cupy|torch`` on ``meanfield reproduce / figures / validate``: checked before any work.

A missing package is simulated in a subprocess whose ``import torch`` / ``import cupy`` fails
(an import hook); the command must exit 2 with one line naming the extra and must
not have written anything.
"""

from __future__ import annotations

import subprocess
import sys
import types

import pytest
from meanfield.validation.runner import module_backend

from meanfield.cli import backend_description, check_backend_available

# an import hook that makes `import torch` / `import cupy` fail as on a machine without them
_BLOCKED = """\
import sys
class _Block:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "cupy"):
            raise ImportError(f"No module named {name!r} (blocked by the test)")
sys.meta_path.insert(0, _Block())
"""


def _run_blocked(args, tmp_path):
    code = _BLOCKED + f"from meanfield.cli import main\nraise SystemExit(main({args!r}))"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120)


@pytest.mark.parametrize(
    "args,extra",
    [
        (["reproduce", "--backend", "torch", "--out", "OUT"], "torch"),
        (["figures", "xiao2018.fig_s4", "--backend", "torch", "--out", "OUT"], "torch"),
        (["validate", "dense", "--backend", "torch", "--out", "OUT"], "torch"),
        (["reproduce", "--backend", "cupy", "--out", "OUT"], "gpu"),
    ],
)
def test_unavailable_backend_fails_at_once_naming_the_extra(args, extra, tmp_path):
    out = tmp_path / "out"
    args = [str(out) if a == "OUT" else a for a in args]
    r = _run_blocked(args, tmp_path)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and f"meanfield-theory[{extra}]" in lines[0], r.stderr
    assert not any(p.is_file() for p in out.rglob("*")) if out.exists() else True


def test_backend_checks_and_device_line():
    assert check_backend_available("numpy") == "numpy"
    with pytest.raises(ValueError, match="backend must be one of"):
        check_backend_available("jax")
    with pytest.raises(TypeError):
        check_backend_available(1)
    assert backend_description("numpy") == "backend numpy (device cpu)"
    pytest.importorskip("torch")
    pytest.importorskip("array_api_compat")
    import torch

    line = backend_description("torch")
    assert line.startswith("backend torch (device ")
    assert ("cuda" in line) == torch.cuda.is_available()


def test_module_backend_rule():
    honours = types.ModuleType("meanfield.validation.fake")
    honours.BACKENDS = ("numpy", "cupy", "torch")
    numpy_only = types.ModuleType("meanfield.validation.other")
    assert module_backend(honours, "torch") == ("torch", None)
    used, note = module_backend(numpy_only, "torch")
    assert used == "numpy" and "validation.other" in note and "runs on NumPy" in note and "\n" not in note
    assert module_backend(numpy_only, "numpy") == ("numpy", None)
    # run as `python -m meanfield.validation.NAME` the module is __main__: the notice names NAME
    assert "validation.landscape:" in module_backend(types.ModuleType("__main__"), "torch", "landscape")[1]


def test_figures_help_says_which_figures_run_on_numpy_only(capsys):
    from meanfield.cli import main

    assert main(["figures", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "CPU only" in text and "honours_backend=False" in text
