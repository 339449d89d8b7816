"""The gallery's paper scripts, written from the figure registry each time the documentation is built.

Each paper's script shows every figure its figure module registers (``meanfield figures --list``),
at the smoke size, one cell a figure: the figure's name, the paper's figure it reproduces and the
first line of its docstring, then ``show(...)``. A figure added to a paper's module is in the
gallery without further edits. :func:`gallery_source` lays out the folder sphinx-gallery reads:
the hand-written examples of ``examples/`` and one generated ``plot_PAPER.py`` a paper.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

#: Gallery title of each paper's figure module, in the order of the documentation's paper pages.
TITLES = {
    "xiao2018": "Xiao et al. 2018: dense and CNN mean field, orthogonal kernels",
    "burkholz2019": "Burkholz & Dubatovka 2019: exact finite-width signal propagation",
    "grzejdziak2023": "Grzejdziak 2023: kurtosis recursion and vanishing empirical variance",
    "blumenfeld2020": "Blumenfeld, Gilboa & Soudry 2020: feature symmetry, ConstNet, LeakyNet",
    "orhan2017": "Orhan 2017: skip connections as symmetry breaking",
}

_KIND = ("Fig.", "Table")


def figure_key(label: str) -> tuple:
    """Sort key of a figure's paper label: the paper's figures by number (1, 2, ..., 10, S1, ...),
    then its tables, then the figures that are not in the paper; ``"analogue of "`` is ignored."""
    label = label.removeprefix("analogue of ")
    for rank, kind in enumerate(_KIND):
        if label.startswith(kind):
            number = re.match(r"\s*(S?)(\d+)(\w*)", label[len(kind) :])
            if number:
                supplement, digits, suffix = number.groups()
                return (rank, supplement, int(digits), suffix, label)
    return (len(_KIND), "", 0, "", label)


def paper_script(paper: str, figures: dict) -> str:
    """The gallery script of ``paper`` showing ``figures`` (``{"paper.fig": function}``)."""
    title = TITLES[paper]
    lines = [
        '"""',
        title,
        "=" * len(title),
        "",
        f"Every figure of the paper, drawn at the smoke size; ``meanfield figures {paper} --full`` draws",
        "them at the paper's sizes.",
        '"""',
        "",
        "# sphinx_gallery_capture_repr = ()",
        f"from meanfield.figures import {paper}",
        "from meanfield.figures.harness import show_figure as show",
    ]
    for name, func in sorted(figures.items(), key=lambda item: (figure_key(item[1].figure), item[0])):
        summary = (func.__doc__ or "").strip().splitlines()[0]
        lines += ["", "# %%", f"# ``{name}`` ({func.figure}): {summary}", f"show({name})"]
    return "\n".join(lines) + "\n"


def gallery_source(examples: Path, dest: Path) -> list[Path]:
    """Fill ``dest`` with the hand-written examples of ``examples`` and one script a paper.

    Returns the generated scripts. ``dest`` is emptied first (a build product, not committed).
    """
    from meanfield.figures.runner import all_figures

    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(examples, dest, ignore=shutil.ignore_patterns("__pycache__"))
    registry = all_figures()
    written = []
    for paper in TITLES:
        figures = {name: func for name, func in registry.items() if name.split(".")[0] == paper}
        path = dest / f"plot_{paper}.py"
        path.write_text(paper_script(paper, figures))
        written.append(path)
    return written
