"""Shared helpers for figure modules: saving a PNG with the numbers behind it, progress bars.

A figure module ``figures/PAPER.py`` defines figure functions named after the paper's figures and
a registry ``FIGURES = {"fig_1b": fig_1b, ...}``. Each function has the signature
``fig(out_dir, full=False, backend="numpy", seed=0) -> list[pathlib.Path]`` and writes
``PAPER_FIG.png`` plus ``PAPER_FIG.json`` (every array plotted) into ``out_dir``.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from meanfield.validation._runner import progress  # noqa: E402,F401  (re-exported for figure modules)

__all__ = ["plt", "progress", "save_figure", "to_jsonable"]


def to_jsonable(obj):
    """Convert NumPy arrays and scalars (recursively) to JSON-serialisable Python objects."""
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return to_jsonable(obj.tolist())
    if isinstance(obj, (np.floating, float)):
        value = float(obj)
        return value if np.isfinite(value) else str(value)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    return obj


def save_figure(fig, out_dir, name: str, data: dict) -> list[Path]:
    """Save ``fig`` as ``out_dir/name.png`` and ``data`` as ``out_dir/name.json``; close the figure."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    png = out_dir / f"{name}.png"
    js = out_dir / f"{name}.json"
    fig.savefig(png, dpi=120, bbox_inches="tight")
    plt.close(fig)
    js.write_text(json.dumps(to_jsonable(data), indent=1))
    return [png, js]
