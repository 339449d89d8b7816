"""Shared helpers for figure modules: saving a PNG with the numbers behind it, progress bars.

A figure module ``figures/PAPER.py`` defines figure functions named after the paper's figures and
a registry ``FIGURES = {"fig_1b": fig_1b, ...}``. Each function has the signature
``fig(out_dir, full=False, backend="numpy", seed=0) -> list[pathlib.Path]`` and writes
``PAPER_FIG.png`` plus ``PAPER_FIG.json`` (every array plotted) into ``out_dir``.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from meanfield.validation._runner import progress  # noqa: E402,F401  (re-exported for figure modules)

__all__ = ["plt", "progress", "save_figure", "to_jsonable"]

from ._io import figure_metadata, to_jsonable, write_json  # noqa: E402


def _has_text(fig, needle: str) -> bool:
    texts = [fig._suptitle.get_text() if fig._suptitle is not None else ""]
    texts += [ax.get_title(loc) for ax in fig.axes for loc in ("center", "left", "right")]
    return any(needle in t for t in texts)


def save_figure(fig, out_dir, name: str, data: dict, *, paper: str | None = None, figure: str | None = None,
                seed=None, full: bool = False, backend: str = "numpy", params: dict | None = None,
                axes: dict | None = None, units: dict | None = None, notes: str = "") -> list[Path]:
    """Save ``fig`` as ``out_dir/name.png`` and its numbers as ``out_dir/name.json``; close the figure.

    ``paper`` ("Xiao et al. 2018") and ``figure`` ("Fig. S4") name what is reproduced; when no title
    of the figure names the paper, a suptitle "paper, figure" is added. ``params`` holds every
    parameter the figure used (sizes, variances, activation, ...), ``units`` the unit of each array
    whose unit is not obvious, ``axes`` the axis names of every array of two or more dimensions
    (required; see :mod:`meanfield.figures._io`). The JSON carries the metadata block of
    :func:`figure_metadata`.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    png = out_dir / f"{name}.png"
    js = out_dir / f"{name}.json"
    if paper is None:
        meta = {"name": name, "seed": seed, "full": bool(full), "backend": backend}
    else:
        meta = figure_metadata(paper=paper, figure=figure or "", name=name, seed=seed, full=full,
                               backend=backend, params=params, units=units, notes=notes)
        if not _has_text(fig, paper):
            fig.suptitle(f"{paper}, {figure}" if figure else paper, fontsize=10)
    write_json(js, meta, data, axes, check_axes=paper is not None)  # validates the axes before anything is written
    fig.savefig(png, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return [png, js]
