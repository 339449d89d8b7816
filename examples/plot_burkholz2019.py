"""
Burkholz & Dubatovka 2019: exact finite-width signal propagation
===========================================================================

Every figure of the paper as ``meanfield reproduce`` draws it, here at the reduced "smoke" size
(seconds each) so that the documentation builds quickly; ``meanfield figures burkholz2019 --full`` gives the
paper's sizes. The numbers behind each figure are written beside its PNG as JSON
(``meanfield.figures.load``).
"""

import tempfile

import matplotlib.pyplot as plt
from meanfield.figures import burkholz2019

OUT = tempfile.mkdtemp()


def show(func):
    """Render ``func`` at the smoke size and display its PNG."""
    png = func(OUT, size="smoke")[0]
    image = plt.imread(png)
    _fig, ax = plt.subplots(figsize=(image.shape[1] / 60, image.shape[0] / 60))
    ax.imshow(image)
    ax.axis("off")


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
