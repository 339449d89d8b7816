"""What each traced operation is to the theory: module kinds, functional calls and activation functions."""

from __future__ import annotations

from .._activations import ACTIVATION_MODULES
from .._torch import require_torch

torch = require_torch()
nn = torch.nn


#: Node kinds (see the module docstring).
KINDS = (
    "input",
    "output",
    "parameter",
    "shape",
    "weight",
    "activation",
    "add",
    "cat",
    "norm",
    "pool",
    "flatten",
    "dropout",
    "identity",
    "scale",
    "attention",
    "embedding",
    "unknown",
)

#: Kinds walked through when looking for the activation a weight layer consumes.
TRANSPARENT = ("dropout", "identity", "flatten", "pool", "scale")


def _arg(args, kwargs, i, name, default):
    if name in kwargs:
        return kwargs[name]
    return args[i] if len(args) > i else default


#: Functional activations (name as called, in-place ``_`` and dunders stripped) -> the
#: ``torch.nn`` module computing the same function, built from the call's arguments; the module is
#: mapped by :func:`meanfield.pytorch.activation_from_module`.
ACTIVATION_FUNCTIONS = {
    "relu": lambda a, k: nn.ReLU(),
    "relu6": lambda a, k: nn.ReLU6(),
    "gelu": lambda a, k: nn.GELU(approximate=_arg(a, k, 1, "approximate", "none")),
    "silu": lambda a, k: nn.SiLU(),
    "tanh": lambda a, k: nn.Tanh(),
    "sigmoid": lambda a, k: nn.Sigmoid(),
    "leaky_relu": lambda a, k: nn.LeakyReLU(float(_arg(a, k, 1, "negative_slope", 0.01))),
    "elu": lambda a, k: nn.ELU(float(_arg(a, k, 1, "alpha", 1.0))),
    "selu": lambda a, k: nn.SELU(),
    "celu": lambda a, k: nn.CELU(float(_arg(a, k, 1, "alpha", 1.0))),
    "softplus": lambda a, k: nn.Softplus(_arg(a, k, 1, "beta", 1.0), _arg(a, k, 2, "threshold", 20.0)),
    "hardtanh": lambda a, k: nn.Hardtanh(_arg(a, k, 1, "min_val", -1.0), _arg(a, k, 2, "max_val", 1.0)),
    "mish": lambda a, k: nn.Mish(),
    "hardswish": lambda a, k: nn.Hardswish(),
    "hardsigmoid": lambda a, k: nn.Hardsigmoid(),
    "softsign": lambda a, k: nn.Softsign(),
    "tanhshrink": lambda a, k: nn.Tanhshrink(),
    "logsigmoid": lambda a, k: nn.LogSigmoid(),
}

_FUNCTION_KINDS = {
    "add": ("add", "sub", "iadd", "isub", "radd", "rsub"),
    "cat": ("cat", "concat", "concatenate", "stack", "hstack", "vstack"),
    "norm": ("layer_norm", "batch_norm", "group_norm", "instance_norm", "rms_norm", "normalize", "local_response_norm"),
    "pool": (
        "max_pool1d",
        "max_pool2d",
        "max_pool3d",
        "avg_pool1d",
        "avg_pool2d",
        "avg_pool3d",
        "adaptive_avg_pool1d",
        "adaptive_avg_pool2d",
        "adaptive_avg_pool3d",
        "adaptive_max_pool1d",
        "adaptive_max_pool2d",
        "adaptive_max_pool3d",
        "mean",
    ),
    "flatten": (
        "view",
        "reshape",
        "flatten",
        "unflatten",
        "permute",
        "transpose",
        "t",
        "contiguous",
        "squeeze",
        "unsqueeze",
        "expand",
        "expand_as",
        "unbind",
        "chunk",
        "split",
        "getitem",
        "narrow",
        "movedim",
        "swapaxes",
        "clone",
        "to",
        "type",
        "float",
        "double",
        "half",
        "bfloat16",
        "type_as",
        "view_as",
        "reshape_as",
        "select",
    ),
    "dropout": ("dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout"),
    "attention": ("scaled_dot_product_attention", "multi_head_attention_forward"),
    "embedding": ("embedding",),
    "weight": ("linear", "conv1d", "conv2d", "conv3d", "bilinear"),
    "scale": ("mul", "div", "truediv", "imul", "itruediv", "rmul", "rtruediv", "neg"),
    "shape": ("size", "dim", "numel", "_assert", "eq", "ne", "floordiv", "is_floating_point", "ndimension"),
}
_KIND_OF_FUNCTION = {name: kind for kind, names in _FUNCTION_KINDS.items() for name in names}
_SHAPE_ATTRS = ("shape", "dtype", "device", "ndim", "is_nested", "requires_grad", "is_cuda")


def _function_name(target) -> str:
    """``F.relu_`` -> ``relu``; ``Tensor.__iadd__`` -> ``iadd``; ``operator.add`` -> ``add``."""
    name = target if isinstance(target, str) else getattr(target, "__name__", type(target).__name__)
    if name.startswith("__") and name.endswith("__"):
        name = name[2:-2]
    if name.endswith("_") and not name.startswith("_") and name[:-1] in ACTIVATION_FUNCTIONS | _KIND_OF_FUNCTION:
        name = name[:-1]
    return name


def _is_activation_module(m) -> bool:
    names = [c.__name__ for c in type(m).__mro__ if c.__module__.startswith("torch.nn")]
    return any(n in ACTIVATION_MODULES and n != "Identity" for n in names)


def _module_kind(m) -> tuple[str, str] | None:
    """(kind, reason) of a leaf module, ``None`` for a module traced through."""
    mods = nn.modules
    if isinstance(m, (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d)):
        return "weight", ""
    if isinstance(m, (nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d, nn.Bilinear)):
        return "unknown", f"{type(m).__name__}: no mean-field rule in this library"
    if isinstance(m, nn.Identity):
        return "identity", ""
    if _is_activation_module(m):
        return "activation", ""
    if isinstance(m, mods.dropout._DropoutNd) or type(m).__name__ == "DropPath":
        return "dropout", ""
    norms = (mods.batchnorm._NormBase, nn.LayerNorm, nn.GroupNorm, nn.LocalResponseNorm)
    if isinstance(m, norms) or (hasattr(nn, "RMSNorm") and isinstance(m, nn.RMSNorm)):
        return "norm", ""
    pools = (mods.pooling._MaxPoolNd, mods.pooling._AvgPoolNd, mods.pooling._AdaptiveAvgPoolNd)
    if isinstance(m, pools + (mods.pooling._AdaptiveMaxPoolNd,)):
        return "pool", ""
    if isinstance(m, (nn.Flatten, nn.Unflatten)):
        return "flatten", ""
    if isinstance(m, nn.MultiheadAttention):
        return "attention", "attention (softmax(QK^T) V): outside the mean-field theory of this library"
    if isinstance(m, (nn.Embedding, nn.EmbeddingBag)):
        return "embedding", "embedding lookup: its output is not a function of a Gaussian signal"
    if isinstance(m, (nn.Softmax, nn.LogSoftmax, nn.Softmin)):
        return "unknown", f"{type(m).__name__}: not elementwise"
    return None
