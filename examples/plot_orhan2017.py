"""
Orhan 2017: skip connections as symmetry breaking
============================================================

Every figure of the paper as ``meanfield reproduce`` draws it, here at the reduced "smoke" size
(seconds each) so that the documentation builds quickly; ``meanfield figures orhan2017 --full`` gives the
paper's sizes. The numbers behind each figure are written beside its PNG as JSON
(``meanfield.figures.load``).
"""

import tempfile

import matplotlib.pyplot as plt
from meanfield.figures import orhan2017

OUT = tempfile.mkdtemp()


def show(func):
    """Render ``func`` at the smoke size and display its PNG."""
    png = func(OUT, size="smoke")[0]
    image = plt.imread(png)
    _fig, ax = plt.subplots(figsize=(image.shape[1] / 60, image.shape[0] / 60))
    ax.imshow(image)
    ax.axis("off")


# %%
# ``orhan2017.fig_4`` (Fig. 4): Better neighbours, adaptive walks and basin sizes of the four binary toy landscapes.
show(orhan2017.fig_4)

# %%
# ``orhan2017.fig_s1`` (Fig. S1): As :func:`fig_4` with fixed biases drawn from N(0, 1) (their own random stream).
show(orhan2017.fig_s1)

# %%
# ``orhan2017.fig_5`` (Fig. 5): ``a^1``, ``a^2`` versus iteration in three-layer linear plain (blue) and residual (red) nets.
show(orhan2017.fig_5)

# %%
# ``orhan2017.fig_6`` (Fig. 6): (a) Phase portraits of eqs. 21-23 for two weight layers (``s = 2``); (b) 10-layer products (``s = 3``).
show(orhan2017.fig_6)

# %%
# ``orhan2017.fig_2c`` (Fig. 2c): rescaling symmetry of trained plain, residual and hyper-residual nets.
show(orhan2017.fig_2c)

# %%
# ``orhan2017.fig_7`` (Fig. 7): training accuracy of plain, residual and the bias symmetry-breaking variants.
show(orhan2017.fig_7)

# %%
# ``orhan2017.fig_8`` (Fig. 8): gradient norms per layer after training; BiasSymmBreak with one batch-normalised layer.
show(orhan2017.fig_8)

# %%
# ``orhan2017.fig_9`` (Fig. 9): residual nets with folded orthogonal skip matrices.
show(orhan2017.fig_9)

# %%
# ``orhan2017.fig_10`` (Fig. 10): skip matrices of controlled orthogonality (eigenvalues on the unit circle).
show(orhan2017.fig_10)

# %%
# ``orhan2017.fig_11`` (Fig. 11): hyper-residual nets with folded long skips against residual nets.
show(orhan2017.fig_11)

# %%
# ``orhan2017.fig_12`` (Fig. 12): constant untrained bias profiles ``a l + b``.
show(orhan2017.fig_12)

# %%
# ``orhan2017.fig_singularities`` (Supp. Note 1 during training): degenerate Hessian eigenvalues and overlaps.
show(orhan2017.fig_singularities)
