"""The papers' figures, one module per paper, one function per figure.

``meanfield figures --all`` (or ``python -m meanfield.figures --all``) regenerates every figure;
``meanfield figures PAPER`` one paper's; ``meanfield figures PAPER.FIG`` a single figure (e.g.
``xiao2018.fig_s1``). ``--list`` lists them. Each figure writes ``NAME.png`` and ``NAME.json``;
:func:`load` reads the JSON back as a :class:`FigureData`.
"""

from ._io import FigureData, load

__all__ = ["FigureData", "load"]
