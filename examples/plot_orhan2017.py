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
