"""A kernel cached on disk is recompiled when a helper it inlines from another file changes.

Numba stamps a cached kernel with its own file's source only; ``import meanfield`` stamps every
kernel of the package with the whole package's source (``meanfield/_numba_cache.py``). Checked end to
end on a copy of the package with its own cache directory: ``conv.propagate``'s compiled loop (in
``conv/_forward.py``) inlines ``combine`` from ``_logscale.py``; an edit of ``combine`` alone must
give the next process the numbers of a fresh compilation, not load the old kernel from the cache.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import meanfield

PACKAGE = Path(meanfield.__file__).resolve().parent
CALL = (
    "import json, sys; import numpy as np; from meanfield import conv; "
    "out = conv.propagate(0.5 * np.eye(3) + 0.5, 'relu', 2.0, 0.1, np.full(3, 1 / 3), 4); "
    "json.dump([conv.__file__, out[-1].tolist()], sys.stdout)"
)
#: The edit of the helper: another log scale per layer (any change of the numbers would do).
OLD = "    return logs + (base + math.log(m))\n"
NEW = "    return logs + (base + math.log(m)) + 1.0\n"


def _run(root: Path, cache: Path) -> list:
    env = dict(os.environ, PYTHONPATH=str(root), NUMBA_CACHE_DIR=str(cache))
    env.pop("NUMBA_CACHE_LOCATOR_CLASSES", None)
    res = subprocess.run([sys.executable, "-c", CALL], capture_output=True, text=True, env=env, cwd=root, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    where, last = json.loads(res.stdout)
    assert Path(where).resolve().is_relative_to(root.resolve())  # the copy, not the installed package
    return last


def test_an_edited_inlined_helper_recompiles_the_kernels_that_inline_it(tmp_path):
    shutil.copytree(PACKAGE, tmp_path / "meanfield", ignore=shutil.ignore_patterns("__pycache__"))
    cache = tmp_path / "numba-cache"
    before = _run(tmp_path, cache)
    assert any(cache.rglob("*_forward*.nbi"))  # the kernel was cached
    helper = tmp_path / "meanfield" / "_logscale.py"
    text = helper.read_text()
    assert text.count(OLD) == 1
    helper.write_text(text.replace(OLD, NEW))
    after = _run(tmp_path, cache)
    assert after != before  # the edit reached the kernel: it was recompiled, not loaded
    assert after == _run(tmp_path, tmp_path / "empty-cache")  # exactly what a fresh machine computes
