"""Every Python example in the README and the documentation pages runs as pasted.

The blocks of one page run in order in one namespace (a page may build on its earlier blocks), as a
reader pasting them into one session would.
"""

import re
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("**/*.md"))]
PAGES = [p for p in PAGES if "_build" not in p.parts and "auto_examples" not in p.parts]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_python_blocks_run(page, tmp_path, monkeypatch):
    blocks = BLOCK.findall(page.read_text())
    if not blocks:
        pytest.skip("no python blocks")
    monkeypatch.chdir(tmp_path)
    namespace = {"__name__": "__docs__"}
    for i, code in enumerate(blocks):
        try:
            exec(compile(code, f"{page.name}[block {i}]", "exec"), namespace)
        except Exception as exc:  # pragma: no cover - the failure message is the point
            raise AssertionError(f"{page.relative_to(ROOT)} block {i} failed: {type(exc).__name__}: {exc}\n{code}") from exc


def test_gallery_shows_every_registered_figure():
    from meanfield.figures._runner import all_figures

    gallery = "\n".join(p.read_text() for p in (ROOT / "examples").glob("plot_*.py"))
    missing = [name for name in all_figures() if f"show({name})" not in gallery]
    assert missing == [], f"figures missing from examples/plot_*.py: {missing}"
