"""
Burkholz & Dubatovka 2019: exact finite-width signal propagation
===========================================================================

Every figure of the paper, drawn at the smoke size; ``meanfield figures burkholz2019 --full`` draws
them at the paper's sizes.
"""

# sphinx_gallery_capture_repr = ()
from meanfield.figures import burkholz2019
from meanfield.figures.harness import show_figure as show

# %%
# ``burkholz2019.fig_1a`` (Fig. 1a): Squared-norm laws at depths 0..9, N = 200, He: theory lines and network histograms.
show(burkholz2019.fig_1a)

# %%
# ``burkholz2019.fig_1b`` (Fig. 1b): Eigenvalues vs m (He): derived eq. 8, printed eq. 8, discretised operator.
show(burkholz2019.fig_1b)

# %%
# ``burkholz2019.fig_2`` (Fig. 2): Cosine-similarity laws for <x1, x2> = 0, 0.25, 0.5, 0.75 and N = 100, 200.
show(burkholz2019.fig_2)

# %%
# ``burkholz2019.fig_thm5`` (not in the paper (Thm. 5, eqs. 9-10)): Thm. 5: ReLU correlation map against the identity, and eq. 9 against its linearisation eq. 10.
show(burkholz2019.fig_thm5)

# %%
# ``burkholz2019.fig_3`` (Fig. 3, trained networks): Test accuracy against depth of ReLU networks: He against GSM and orthogonal looks-linear.
show(burkholz2019.fig_3)

# %%
# ``burkholz2019.fig_4`` (Fig. 4 (training accuracy; CIFAR-10 not run), trained networks): Training accuracy of the runs of :func:`fig_3` (the paper's Fig. 4 repeats Fig. 3 on CIFAR-10).
show(burkholz2019.fig_4)
