"""
The PyTorch bridge: a model's audit against mean-field theory
=============================================================

``meanfield.pytorch.audit`` of a tanh MLP built in PyTorch and initialised at the edge of chaos,
as ``meanfield reproduce`` draws it, here at the reduced "smoke" size. Needs the ``torch`` extra
(without it the figure says so).
"""

# sphinx_gallery_capture_repr = ()
from meanfield.figures import pytorch_bridge
from meanfield.figures.harness import show_figure as show

# %%
# ``pytorch_bridge.fig_audit``: measured q^l, c^l and gradient second moments of a critical tanh MLP versus theory.
show(pytorch_bridge.fig_audit)
