"""
Grzejdziak 2023: kurtosis recursion and vanishing empirical variance (seed 002)
===============================================================================

Every figure of the paper as ``meanfield reproduce`` draws it, here at the reduced "smoke" size
(seconds each) so that the documentation builds quickly; ``meanfield figures grzejdziak2023 --full`` gives the
paper's sizes. The numbers behind each figure are written beside its PNG as JSON
(``meanfield.figures.load``).
"""

from meanfield.figures import grzejdziak2023
from meanfield.figures.harness import show_figure as show

# %%
# ``grzejdziak2023.fig_1`` (Fig. 1 (digits instead of CIFAR-10)): Quantiles of the output empirical variance versus depth for seven initialisers.
show(grzejdziak2023.fig_1)

# %%
# ``grzejdziak2023.fig_kurtosis`` (not in the paper: Prop. 4.3 against simulation): Kurtosis growth with depth: Prop. 4.3 (lines) and Monte-Carlo (points with error bars).
show(grzejdziak2023.fig_kurtosis)

# %%
# ``grzejdziak2023.fig_spectral_radius`` (not in the paper: Lemma 4.5): ``rho(A) - 1`` versus width for several slopes and weight laws (Lemma 4.5: always > 0).
show(grzejdziak2023.fig_spectral_radius)
