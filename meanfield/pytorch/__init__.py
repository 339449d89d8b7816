"""The PyTorch bridge: initialise a model with the papers' constructions and audit its signal propagation.

An optional extra: ``pip install "meanfield-theory[torch]"``. Without PyTorch the rest of the
library works and ``import meanfield.pytorch`` raises ``ImportError`` naming the extra.

- :mod:`meanfield.pytorch.init`: ``torch.nn.init``-style initialisers (``critical_normal_``,
  ``orthogonal_conv_``, ``delta_orthogonal_``, ``looks_linear_``, ``gsm_``, ``zero_``,
  ``zero_star_``, ``constnet_``, ``leakynet_``) and ``critical_init_(model)``, each the NumPy
  construction of :mod:`meanfield.init` converted to PyTorch's layouts;
- :mod:`meanfield.pytorch.trace`: ``trace(model)`` -> :class:`Trace`, the model's graph by
  ``torch.fx`` (hooks on a real forward pass where fx fails): node kinds, the activation each
  weight layer consumes (functional activations included), residual branches, and every node
  outside the theory with the reason; :func:`critical_init_` initialises from it and returns a
  :class:`CriticalInit` report;
- :mod:`meanfield.pytorch.audit`: ``audit(model, inputs)`` -> :class:`Audit`, per-layer measured
  q^l, c^l, kurtosis and gradient second moments over re-initialisations against mean-field
  theory, with verdicts, phase, depth scales and ``plot()``;
- :mod:`meanfield.pytorch.modules`: ``nn.Module`` builders of the papers' networks (ConstNet,
  LeakyNet, looks-linear / GSM MLPs, Orhan's residual / hyper-residual / path-residual MLPs, the
  periodic-padding CNN of Xiao et al.);
- activation modules map to the library's activations (:func:`activation_from_module`).

Three lines for a user's model::

    from meanfield.pytorch import critical_init_, audit
    print(critical_init_(model, sigma_b2=0.05))
    print(audit(model, inputs).table())
"""

from __future__ import annotations

from ._torch import INSTALL_HINT, require_torch

require_torch()

from ._activations import activation_from_module, resolve_activation  # noqa: E402
from .audit import Audit, AuditRow, audit  # noqa: E402
from .convert import Conversion, to_network  # noqa: E402
from .init import (  # noqa: E402
    CriticalInit,
    EdgeOfChaos,
    InitSpec,
    LayerInit,
    constnet_,
    critical_init_,
    critical_normal_,
    critical_sigma_w2,
    delta_orthogonal_,
    edge_of_chaos,
    gsm_,
    leakynet_,
    looks_linear_,
    mean_field_normal_,
    numpy_rng,
    orthogonal_conv_,
    recorded_spec,
    reinitialise_,
    stable_sigma_b2,
    tag_layers_,
    zero_,
    zero_star_,
)
from .modules import (  # noqa: E402
    ConstNet,
    LeakyNet,
    OrhanNet,
    Residual,
    constnet,
    gsm_mlp,
    hyper_residual_mlp,
    leakynet,
    looks_linear_mlp,
    mlp,
    path_residual_mlp,
    periodic_cnn,
    residual_mlp,
)
from .trace import Trace, TraceNode, WeightLayer, trace  # noqa: E402

__all__ = [
    "INSTALL_HINT",
    "Audit",
    "AuditRow",
    "ConstNet",
    "Conversion",
    "CriticalInit",
    "EdgeOfChaos",
    "InitSpec",
    "LayerInit",
    "LeakyNet",
    "OrhanNet",
    "Residual",
    "Trace",
    "TraceNode",
    "WeightLayer",
    "activation_from_module",
    "audit",
    "constnet",
    "constnet_",
    "critical_init_",
    "critical_normal_",
    "critical_sigma_w2",
    "delta_orthogonal_",
    "edge_of_chaos",
    "gsm_",
    "gsm_mlp",
    "hyper_residual_mlp",
    "leakynet",
    "leakynet_",
    "looks_linear_",
    "looks_linear_mlp",
    "mean_field_normal_",
    "mlp",
    "numpy_rng",
    "orthogonal_conv_",
    "path_residual_mlp",
    "periodic_cnn",
    "recorded_spec",
    "reinitialise_",
    "residual_mlp",
    "resolve_activation",
    "stable_sigma_b2",
    "tag_layers_",
    "to_network",
    "trace",
    "zero_",
    "zero_star_",
]
