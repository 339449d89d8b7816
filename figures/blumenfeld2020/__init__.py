"""Figures of Blumenfeld, Gilboa & Soudry (2020), Blumenfeld et al. 2020, on the CPU at small sizes.

The paper trains Wide-ResNet-sized networks on CIFAR-10 and MNIST for hundreds of epochs on GPUs;
here every experiment runs on scikit-learn's embedded 8 x 8 digits (the library's real default
data set) with small networks, so the *mechanisms* are reproduced, not the paper's accuracies.
Every figure runs on the CPU only (``backend`` must be ``"numpy"``): the networks have 8 to 64
units or channels on 8 x 8 images, far too small for a GPU to help.

- ``fig_1``: two-layer ReLU network with replicated hidden features (eqs. 10-11, App. E): test
  error against the number K of unique features, with and without initial noise lambda, at the
  paper's learning rate 0.1 and in a short, small-learning-rate run.
- ``fig_5``: the width-N network with K unique (replicated) features against a width-K network
  with the replicas removed (Fig. 5's comparison).
- ``fig_3``: forward / backward correlation of one hidden convolution of a ConstNet during
  full-batch training: He initialisation, '0' initialisation with 1 % dropout, with tiny gradient
  noise, and deterministic (Fig. 3 analogue).
- ``fig_6``: ``1 - C_f``, ``1 - C_b``, ``1 - C_t`` of every convolution of the '0'-initialised
  ConstNet with 1 % dropout over training (Fig. 6 analogue).
- ``fig_4``: the same run's ``1 - C_f`` and ``1 - C_b`` averaged per group of Sec. 4.2 (groups derived
  by :func:`meanfield.train.symmetric.constnet_groups`), with the exact group test of
  :mod:`meanfield.train.symmetry_groups` (Fig. 4 analogue).
- ``fig_9``: symmetry-breaking perturbation ratio of the forward features, layer by layer, of
  LeakyNets with mixed identity / averaging layers during training with relative gradient noise
  1e-6 (a model of non-deterministic rounding; Fig. 9 analogue); ``fig_10`` the same for the
  backward features (Fig. 10 analogue).
- ``fig_12``: App. J, LeakyNets whose layers are all ``gamma I + (1 - gamma) 11^T / n``: training
  loss and final ``C_f`` per layer (Fig. 12 analogue).
- ``table_correlations`` (not in the paper): closed-form C_f, C_b after eq. 6 next to values
  measured on tensors, with standard errors.
- ``table_2``, ``table_3``, ``table_4``, ``fig_7``, ``fig_8``, ``fig_11``: LeakyNets with averaging
  layers and ConstNets with each symmetry-breaking noise source, from the runs of
  :mod:`meanfield.train.symmetry_breaking` (Tables 2-4, Figs. 7, 8, 11 analogues).

Every training run uses the one engine, :func:`meanfield.train.train_ensemble`, with
the specs of :mod:`meanfield.train.symmetric`.

Every figure writes ``blumenfeld2020_NAME.png`` and ``.json`` (metadata block, named axes; read it
back with :func:`meanfield.figures.load`). Exact zeros on logarithmic axes (symmetric networks at
initialisation) are drawn in a grey band whose tick reads "0".

The figures live in private modules by the paper's sections (``_replicated``: Sec. 2.1 and App. E;
``_constnet``: Sec. 4; ``_leakynet``: App. G and J; ``_correlations``: eqs. 5-6; ``_engine``:
Sec. 5.1 and App. I); this package re-exports them.
"""

from .._common import registered
from ._constnet import TABLE_1_PAPER, fig_3, fig_4, fig_6, table_1
from ._correlations import table_correlations
from ._engine import (
    TABLE_2_PAPER,
    TABLE_3_PAPER,
    TABLE_4_PAPER,
    fig_7,
    fig_8,
    fig_11,
    table_2,
    table_3,
    table_4,
)
from ._leakynet import LEAKY_CONFIGS, fig_9, fig_10, fig_12
from ._replicated import fig_1, fig_5
from ._shared import PAPER

__all__ = [
    "FIGURES",
    "LEAKY_CONFIGS",
    "PAPER",
    "TABLE_1_PAPER",
    "TABLE_2_PAPER",
    "TABLE_3_PAPER",
    "TABLE_4_PAPER",
    "fig_1",
    "fig_3",
    "fig_4",
    "fig_5",
    "fig_6",
    "fig_7",
    "fig_8",
    "fig_9",
    "fig_10",
    "fig_11",
    "fig_12",
    "table_1",
    "table_2",
    "table_3",
    "table_4",
    "table_correlations",
]

#: The figures of this package, ``{name: function}`` (read-only; filled by their ``@figure`` declarations).
FIGURES = registered(__name__)
