"""Figures of Orhan (2017), Orhan 2017: binary-weight landscapes and linear learning dynamics.

- ``fig_4``: the four toy landscapes (Sec. 2.2): distribution of better neighbours, adaptive-walk
  lengths and basin sizes (three panels).
- ``fig_s1``: the same with fixed N(0, 1) biases (Supp. Fig. S1).
- ``fig_5``: evolution of ``a^1``, ``a^2`` in three-layer linear plain and residual nets
  (eqs. 11-18): (a) small random initialisation, (b) equalised initial norms.
- ``fig_6``: (a) phase portraits of the two-layer mode-strength flows (eqs. 21-23) with the
  saddles (0, 0), (-1, -1), (-1, -2), ``s = 2``; (b) ``prod_l (a_l + c_l)`` for 10-layer nets,
  ``s = 3``.

- ``fig_2c``, ``fig_7`` ... ``fig_12``: the trained fully-connected networks of Sec. 2.4 on the
  embedded digits (PyTorch, :mod:`meanfield.train.skip`); ``fig_singularities``:
  the exact Hessian's degenerate eigenvalues and the overlap singularities during training.

The landscapes are exhaustive enumerations (a Numba kernel on the CPU), the dynamics ODE solutions
and the trained networks small PyTorch ensembles, so every figure runs on the CPU only (``backend``
must be ``"numpy"``). Every figure writes ``orhan2017_NAME.png`` and ``.json`` (metadata block,
named axes; read it back with :func:`meanfield.figures.load`).

The figures live in private modules by the paper's sections (``_landscapes``: Sec. 2.2;
``_dynamics``: Sec. 2.3; ``_trained``: Sec. 2.4 and Supp. Note 1); this package re-exports them.
"""

from .._common import registered
from ._dynamics import fig_5, fig_6
from ._landscapes import fig_4, fig_s1
from ._shared import PAPER
from ._trained import fig_2c, fig_7, fig_8, fig_9, fig_10, fig_11, fig_12, fig_singularities

__all__ = [
    "FIGURES",
    "PAPER",
    "fig_2c",
    "fig_4",
    "fig_5",
    "fig_6",
    "fig_7",
    "fig_8",
    "fig_9",
    "fig_10",
    "fig_11",
    "fig_12",
    "fig_s1",
    "fig_singularities",
]

#: The figures of this package, ``{name: function}`` (read-only; filled by their ``@figure`` declarations).
FIGURES = registered(__name__)
