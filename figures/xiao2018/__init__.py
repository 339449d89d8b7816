"""Figures of Xiao et al. (2018), Xiao et al. 2018: the dense mean-field background and the CNN figures.

Dense background (App. B):

- ``fig_s1``: order-to-chaos phase diagram of tanh networks: q* in colour over the
  (sigma_w2, sigma_b2) plane, the critical line chi_1 = 1 (Xiao et al. 2018 Fig. S1; Poole et al. 2016 Fig. 2).
- ``fig_qc_maps`` (not a figure of Xiao et al. 2018): iterated q-map and c-map of tanh networks with
  Monte-Carlo points (mean +- standard error over random networks) in the style of Poole et al. 2016.
- ``fig_depth_scales`` (not a figure of Xiao et al. 2018): depth scale xi_c against sigma_w2 for several
  sigma_b2, diverging at the edge of chaos (Schoenholz et al. 2017 Fig. 1 style).

CNN figures (Xiao et al. 2018, :mod:`meanfield.conv`):

- ``fig_2_theory``: the trainability boundary 6 xi_c over the (sigma_w2, depth) plane for tanh at
  sigma_b2 = 2e-5 (the curve Fig. 2 overlays on its MNIST heat maps; the training runs are not
  reproduced).
- ``fig_4b``: singular values of the averaging operator A_v for the GS0 ... GS4 variance vectors
  (8 x 8 images, 3 x 3 kernels), in descending order.
- ``fig_s2``: per-layer weight-gradient norms of a random tanh CNN (L = 100, n = 10, kernel 3,
  sigma_b2 = 0.05) relative to the last layer, sigma_w2 from 1.0 to 4.25, with the mean-field
  prediction (dashed green).
- ``fig_s3``: singular values of a block-circulant convolution matrix with i.i.d. weights (n = 26,
  2k + 1 = 5, growing c) against a dense nc x nc Gaussian matrix and the Marchenko-Pastur
  (quarter-circle) law.
- ``fig_s4``: Fourier amplitudes of a perturbation of the fixed point through random erf CNNs
  (Sec. F) against the linearised prediction (dashed green) and the exact mean-field map.

Every figure takes ``size="smoke" | "default" | "full"`` (see :mod:`meanfield.figures._common`).
Variances are ``sigma_w2`` (``W ~ N(0, sigma_w2 / fan_in)``) and ``sigma_b2`` throughout; all
quantities are dimensionless (variances of pre-activations in units of the input variance).

The figures live in private modules by the paper's parts (``_dense``: App. B; ``_cnn``: the CNN
mean field; ``_trained``: the trained networks of Sec. 3; ``_spectra``: Jacobian spectra and kernel
regression, not in the paper); this package re-exports them.
"""

from .._common import registered
from ._cnn import fig_2_theory, fig_4b, fig_s2, fig_s3, fig_s4
from ._dense import fig_depth_scales, fig_qc_maps, fig_s1
from ._shared import PAPER
from ._spectra import fig_kernel_regression, fig_spectra
from ._trained import fig_1, fig_2, fig_3, fig_4a, fig_5

__all__ = [
    "FIGURES",
    "PAPER",
    "fig_1",
    "fig_2",
    "fig_2_theory",
    "fig_3",
    "fig_4a",
    "fig_4b",
    "fig_5",
    "fig_depth_scales",
    "fig_kernel_regression",
    "fig_qc_maps",
    "fig_s1",
    "fig_s2",
    "fig_s3",
    "fig_s4",
    "fig_spectra",
]

#: The figures of this package, ``{name: function}`` (read-only; filled by their ``@figure`` declarations).
FIGURES = registered(__name__)
