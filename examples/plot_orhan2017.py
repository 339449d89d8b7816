"""
Orhan 2017: skip connections as symmetry breaking (seed 004)
============================================================

Every figure of the paper as ``meanfield reproduce`` draws it, here at the reduced "smoke" size
(seconds each) so that the documentation builds quickly; ``meanfield figures orhan2017 --full`` gives the
paper's sizes. The numbers behind each figure are written beside its PNG as JSON
(``meanfield.figures.load``).
"""

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
# ``orhan2017.fig_2c`` (Fig. 2c (digits, trained networks)): Rescaling symmetry of trained plain, residual and hyper-residual nets: accuracy after ``W_k * 10, W_l / 10`` over before.
show(orhan2017.fig_2c)

# %%
# ``orhan2017.fig_7`` (Fig. 7 (digits, trained networks)): Training accuracy of plain, residual and the bias symmetry-breaking variants of Sec. 2.4.1.
show(orhan2017.fig_7)

# %%
# ``orhan2017.fig_8`` (Fig. 8 (digits, trained networks)): (a) Gradient norms with respect to the layer activities after training; (b) training accuracy.
show(orhan2017.fig_8)

# %%
# ``orhan2017.fig_9`` (Fig. 9 (digits, trained networks)): Residual nets whose skip matrices are Haar orthogonal matrices folded to n, n/4, ..., 1 orthonormal columns.
show(orhan2017.fig_9)

# %%
# ``orhan2017.fig_10`` (Fig. 10 (digits, trained networks)): (a) Column-covariance spectra ``exp(-tau (i - 1))``; (b) training accuracy of residual nets with such skips.
show(orhan2017.fig_10)

# %%
# ``orhan2017.fig_11`` (Fig. 11 (digits, trained networks)): Hyper-residual nets (identity adjacent skips, twice-folded orthogonal long skips) against residual nets.
show(orhan2017.fig_11)

# %%
# ``orhan2017.fig_12`` (Fig. 12 (digits, trained networks)): Constant untrained bias profiles ``a l + b``: (a) profiles, (b) rescaling ratio, (c) training accuracy.
show(orhan2017.fig_12)

# %%
# ``orhan2017.fig_singularities`` (not a figure of the paper: Supp. Note 1 singularities during training): Degenerate Hessian eigenvalues, overlap distance and accuracy during training, with and without skips.
show(orhan2017.fig_singularities)
