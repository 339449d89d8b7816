"""
Orhan 2017: skip connections as symmetry breaking
============================================================

Every figure of the paper, drawn at the smoke size; ``meanfield figures orhan2017 --full`` draws
them at the paper's sizes.
"""

# sphinx_gallery_capture_repr = ()
from meanfield.figures import orhan2017
from meanfield.figures.harness import show_figure as show

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
