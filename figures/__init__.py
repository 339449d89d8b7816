"""The papers' figures, one module per paper, one function per figure.

``python -m meanfield.figures --all`` regenerates every figure; ``python -m meanfield.figures PAPER`` one paper's;
``python -m meanfield.figures PAPER.FIG`` a single figure (e.g. ``dense.fig_s1``). ``--list`` lists them.
"""
