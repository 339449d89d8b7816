"""
The PyTorch bridge: a model's audit against mean-field theory
=============================================================

``meanfield.pytorch.audit`` of a tanh MLP built in PyTorch and initialised at the edge of chaos,
as ``meanfield reproduce`` draws it, here at the reduced "smoke" size. Needs the ``torch`` extra
(without it the figure says so).
"""

import tempfile

import matplotlib.pyplot as plt
from meanfield.figures import pytorch_bridge

OUT = tempfile.mkdtemp()


def show(func):
    """Render ``func`` at the smoke size and display its PNG."""
    png = func(OUT, size="smoke")[0]
    image = plt.imread(png)
    _fig, ax = plt.subplots(figsize=(image.shape[1] / 60, image.shape[0] / 60))
    ax.imshow(image)
    ax.axis("off")


# %%
# ``pytorch_bridge.fig_audit``: measured q^l, c^l and gradient second moments of a critical tanh MLP versus theory.
show(pytorch_bridge.fig_audit)
