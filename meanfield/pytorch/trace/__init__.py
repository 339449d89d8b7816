r"""Trace a PyTorch model into a graph that mean-field theory can read: ``trace(model)`` -> :class:`Trace`.

The model is traced symbolically by :mod:`torch.fx`; where that fails (data-dependent control flow,
as in :class:`torch.nn.TransformerEncoder`) it is traced on a real forward pass of
``example_inputs``, recording every module call (forward hooks) and every tensor function
(:class:`torch.overrides.TorchFunctionMode`) with the tensors it consumed and produced. Both see
functional activations (``F.gelu``, ``torch.tanh``, ``x.relu()``, ``F.silu`` ...), residual
additions, concatenations and modules called more than once.

Each node gets a kind:

==============  ===============================================================================
kind            what
==============  ===============================================================================
``weight``      ``Linear``, ``Conv1d/2d/3d`` (``F.linear`` / ``F.conv*`` on a raw tensor: listed
                as unsupported, nothing to initialise through a module)
``activation``  an elementwise activation module or function (:data:`ACTIVATION_FUNCTIONS`),
                mapped through :func:`meanfield.pytorch.activation_from_module`
``add``         ``+``, ``torch.add``, ``-`` (residual sums when two signals meet)
``cat``         ``torch.cat`` / ``stack``
``norm``        Batch/Layer/Group/Instance/RMS normalisation (module or function)
``pool``        max / average / adaptive pooling, ``mean`` over an axis
``flatten``     reshapes that move entries without changing them (``view``, ``permute``,
                ``flatten``, ``getitem`` ...)
``dropout``     dropout modules and functions, ``DropPath``
``identity``    ``nn.Identity``
``scale``       a signal multiplied or divided by a constant or a parameter (layer scale)
``attention``   ``nn.MultiheadAttention``, ``F.scaled_dot_product_attention``
``embedding``   ``nn.Embedding``
``unknown``     anything else carrying a signal (listed in :attr:`Trace.unsupported` with its op
                and the reason)
==============  ===============================================================================

and bookkeeping kinds ``input``, ``output``, ``parameter`` and ``shape`` (size arithmetic, no
signal).

The activation of a weight layer (:attr:`WeightLayer.activation`) is the one whose output it
consumes along the graph, the pairing of chi_1 = sigma_w2^{l+1} E phi'(h^l)^2 (Xiao et al. 2018,
eq. 2.7). The rule, walking upstream from the layer's input:

* through ``dropout``, ``identity``, ``flatten``, ``pool`` and ``scale`` nodes (they do not change
  which nonlinearity the signal went through);
* an ``activation`` node: that activation;
* a ``norm`` node: ``linear`` (the normalised signal enters the layer linearly, at unit variance);
* ``add`` / ``cat``: the common activation of all signal operands, ``linear`` when they differ;
* a ``weight``, ``attention``, ``embedding`` or ``unknown`` node: ``linear`` (noted);
* the model's input (a layer that consumes the data): the first activation downstream of the layer
  (through the same transparent nodes and norms), ``linear`` when none follows; the layer then puts
  the data at the scale of the activation it feeds.

A residual addition is an ``add`` of two signals whose operands have different weight depth (the
largest number of weight layers, attention modules included, on a path from the input); the deeper
operand is the branch, and
its last weight layer (walking upstream through the transparent nodes and norms) is recorded in
:attr:`WeightLayer.branch_end` (with the norm in between, if any). The branch is *pre-norm*
(:attr:`WeightLayer.branch_prenorm`) when the skip operand also feeds a normalisation (through
transparent nodes), the branch reading the stream only through it (pre-LayerNorm transformer and
mixer blocks), and *post-norm* (:attr:`WeightLayer.branch_postnorm`) when it is not and the
addition's output is seen only through normalisations (post-LayerNorm transformer blocks).
"""

from __future__ import annotations

from ._graph import Trace, TraceNode, WeightLayer
from ._kinds import ACTIVATION_FUNCTIONS, KINDS
from ._kinds import TRANSPARENT as TRANSPARENT
from ._trace import trace

__all__ = ["ACTIVATION_FUNCTIONS", "KINDS", "Trace", "TraceNode", "WeightLayer", "trace"]
