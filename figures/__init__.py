"""The papers' figures, one module per paper, one function per figure.

``meanfield figures --all`` (or ``python -m meanfield.figures --all``) regenerates every figure;
``meanfield figures PAPER`` one paper's; ``meanfield figures PAPER.FIG`` a single figure (e.g.
``xiao2018.fig_s1``). ``--list`` lists them with the paper's figure each reproduces and marks those
that run on the CPU only. ``--size smoke|default|full`` (``--full`` = ``--size full``) picks the
sizes: ``smoke`` in seconds (a check that everything runs), ``default`` in minutes, ``full`` the
paper's.

Each figure function, e.g. ``meanfield.figures.xiao2018.fig_s4(out_dir, size="default",
backend="numpy", seed=0)``, writes ``NAME.png`` and ``NAME.json`` into ``out_dir`` and returns their
paths. The JSON is self-describing: a ``metadata`` block (library version, git commit when known,
creation time, paper and figure, seed, size, backend, every parameter, units), the axis names of
every array of two or more dimensions, and the data; :func:`load` reads it back as a
:class:`FigureData` (it also reads the validation tables written by ``meanfield validate --out``).
Figures declared CPU-only (they do not simulate, or simulate with NumPy only) refuse
``backend="cupy"``; in ``meanfield figures --all`` and ``meanfield reproduce --backend cupy`` they
run on the CPU and the command says so.
"""

from ._io import JSON_CONTAINER_BYTES, MAX_JSON_BYTES, MAX_JSON_DEPTH, FigureData, load

__all__ = ["JSON_CONTAINER_BYTES", "MAX_JSON_BYTES", "MAX_JSON_DEPTH", "FigureData", "load"]
