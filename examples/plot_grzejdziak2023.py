"""
Grzejdziak 2023: kurtosis recursion and vanishing empirical variance
===============================================================================

Every figure of the paper, drawn at the smoke size; ``meanfield figures grzejdziak2023 --full`` draws
them at the paper's sizes.
"""

# sphinx_gallery_capture_repr = ()
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

# %%
# ``grzejdziak2023.fig_2`` (Fig. 2, trained networks): Test accuracy against depth of constant-width ReLU networks: He (three weight laws) vs ZerO.
show(grzejdziak2023.fig_2)

# %%
# ``grzejdziak2023.fig_zero_star`` (supplement Figs. 2-3 (ZerO vs ZerO*), trained networks): Test accuracy against depth of ZerO and ZerO* (random first layer) beside He Gaussian.
show(grzejdziak2023.fig_zero_star)

# %%
# ``grzejdziak2023.fig_kurtosis_accuracy`` (supplement Fig. 1 (kurtosis vs accuracy), trained networks): Test accuracy after training against the output kurtosis at initialisation (Prop. 4.3).
show(grzejdziak2023.fig_kurtosis_accuracy)
