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

from dataclasses import dataclass
from typing import Any

from .._results import Result
from ..activations import Activation, get_activation
from ._activations import ACTIVATION_MODULES, activation_from_module
from ._torch import require_torch

torch = require_torch()
nn = torch.nn

__all__ = ["ACTIVATION_FUNCTIONS", "KINDS", "Trace", "TraceNode", "WeightLayer", "trace"]

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


@dataclass(frozen=True)
class TraceNode(Result):
    """One node of a :class:`Trace`.

    Attributes
    ----------
    name : str
        Unique name (the module's qualified name for a module call, ``name#2`` for its second call).
    kind : str
        One of :data:`KINDS`.
    op : str
        The module class or function name.
    inputs : tuple of str
        The signal-carrying nodes it consumes (parameters and constants excluded).
    module : str or None
        Qualified name of the module called, ``None`` for a function.
    activation : Activation or None
        For ``activation`` nodes.
    reason : str
        Why the theory cannot describe the node (``unknown``, ``attention``, ``embedding``, a
        functional weight layer), else empty.
    params : tuple of str
        Parameters or buffers it consumes directly (functional calls).
    """

    name: str
    kind: str
    op: str
    inputs: tuple
    module: str | None = None
    activation: Activation | None = None
    reason: str = ""
    params: tuple = ()


@dataclass(frozen=True)
class WeightLayer(Result):
    """A weight layer of a traced model and the activation whose output it consumes.

    Attributes
    ----------
    name : str
        Qualified module name.
    node : str
        Its (first) node in the trace.
    layer_type : str
        ``"Linear"``, ``"Conv2d"`` ...
    activation : Activation
        The activation whose output the layer consumes (the rule of the module docstring).
    source : str
        The node that decided it (``"data"`` for a layer fed by the input).
    rule : str
        The rule applied, in words.
    calls : int
        How often the module was called (> 1: shared weights).
    branch_end : bool
        Last weight layer of a residual branch.
    branch_norm : str or None
        The norm module between the layer and the residual addition, if any.
    fed_by_data : bool
        The layer consumes the model's input (through transparent nodes only).
    branch_prenorm : bool
        Last weight layer of a pre-norm residual branch: the skip operand of the addition also
        feeds a normalisation, through which the branch reads the stream.
    branch_postnorm : bool
        Last weight layer of a post-norm residual branch (not pre-norm): the addition's output
        is seen only through normalisations (post-LayerNorm transformer blocks).
    """

    name: str
    node: str
    layer_type: str
    activation: Activation
    source: str
    rule: str
    calls: int = 1
    branch_end: bool = False
    branch_norm: str | None = None
    fed_by_data: bool = False
    branch_prenorm: bool = False
    branch_postnorm: bool = False


@dataclass(frozen=True)
class Trace(Result):
    """The graph of a traced model (:func:`trace`).

    Attributes
    ----------
    method : {"fx", "hooks"}
        ``torch.fx`` symbolic tracing, or a real forward pass with hooks.
    nodes : tuple of TraceNode
        In execution order.
    weight_layers : tuple of WeightLayer
        In execution order (first call).
    unsupported : tuple of TraceNode
        Every signal-carrying node the theory cannot describe, each with its ``op`` and ``reason``
        (``unknown``, ``attention``, ``embedding``, functional or shared weight layers).
    residual_adds : int
        Residual additions found (``L`` of the branch-scaling rule of :func:`critical_init_`).
    fx_error : str
        Why ``torch.fx`` failed, when ``method == "hooks"``.
    """

    method: str
    nodes: tuple
    weight_layers: tuple
    unsupported: tuple
    residual_adds: int
    fx_error: str = ""

    def layer(self, name: str) -> WeightLayer:
        """The :class:`WeightLayer` of module ``name`` (``KeyError`` when not a traced weight layer)."""
        for w in self.weight_layers:
            if w.name == name:
                return w
        raise KeyError(f"no weight layer named {name!r} in the trace")

    def activations(self) -> dict:
        """``{layer name: activation name}`` for every weight layer."""
        return {w.name: w.activation.name for w in self.weight_layers}

    def table(self) -> str:
        """Weight layers with their activation and rule, then the unsupported nodes with reasons."""
        width = max([len(w.name) for w in self.weight_layers] + [5])
        lines = [f"traced by {self.method}" + (f" (torch.fx failed: {self.fx_error})" if self.fx_error else "")]
        lines.append(f"{'layer':<{width}} | {'type':<8} | {'consumes':<12} | rule")
        for w in self.weight_layers:
            extra = " [residual branch end]" if w.branch_end else ""
            lines.append(f"{w.name:<{width}} | {w.layer_type:<8} | {w.activation.name:<12} | {w.rule}{extra}")
        lines.append(f"{len(self.unsupported)} node(s) outside the theory:")
        for n in self.unsupported:
            lines.append(f"  {n.name} ({n.kind}, {n.op}): {n.reason}")
        lines.append(f"{self.residual_adds} residual addition(s)")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


# --- building nodes --------------------------------------------------------------------------------


class _Builder:
    """Collects nodes (in execution order) from either tracer and classifies function calls."""

    def __init__(self, model):
        self.model = model
        self.nodes: list = []
        self.by_name: dict = {}
        self.calls: dict = {}

    def add(self, node: TraceNode) -> TraceNode:
        self.nodes.append(node)
        self.by_name[node.name] = node
        return node

    def unique(self, base: str) -> str:
        base = base or "node"
        n = self.calls.get(base, 0) + 1
        self.calls[base] = n
        return base if n == 1 else f"{base}#{n}"

    def module_node(self, qualname: str, module, inputs: tuple) -> TraceNode:
        kind, reason = _module_kind(module) or ("unknown", f"{type(module).__name__}")
        act = None
        if kind == "activation":
            try:
                act = activation_from_module(module)
            except ValueError as exc:  # a PReLU with a slope per channel, a random module: no theory
                kind, reason = "unknown", str(exc)
        name = self.unique(qualname)
        return self.add(TraceNode(name, kind, type(module).__name__, inputs, qualname, act, reason))

    def function_node(self, base: str, target, args, kwargs, inputs: tuple, params: tuple, attr=None) -> TraceNode:
        fname = _function_name(target)
        if fname == "getattr":
            kind = "shape" if attr in _SHAPE_ATTRS else "flatten"
            return self.add(TraceNode(self.unique(base), kind, f"getattr.{attr}", inputs))
        if not inputs:
            return self.add(TraceNode(self.unique(base), "shape", fname, inputs, params=params))
        act, reason = None, ""
        if fname in ACTIVATION_FUNCTIONS:
            kind = "activation"
            try:
                act = activation_from_module(ACTIVATION_FUNCTIONS[fname](args, kwargs))
            except (TypeError, ValueError) as exc:  # e.g. an argument given as a traced value
                kind, reason = "unknown", f"activation {fname} with arguments not known at trace time ({exc})"
        else:
            kind = _KIND_OF_FUNCTION.get(fname, "unknown")
            if kind == "unknown":
                reason = f"function {fname}: no mean-field rule in this library"
            elif kind == "scale" and len(inputs) > 1:
                kind, reason = "unknown", f"{fname} of two signals (a product of signals is not Gaussian)"
            elif kind == "weight":
                reason = f"functional {fname} on a raw weight tensor: not a module the initialiser can reach"
            elif kind == "attention":
                reason = "attention (softmax(QK^T) V): outside the mean-field theory of this library"
            elif kind == "embedding":
                reason = "embedding lookup: its output is not a function of a Gaussian signal"
        return self.add(TraceNode(self.unique(base), kind, fname, inputs, None, act, reason, params))


def _leaf(module) -> bool:
    return _module_kind(module) is not None


# --- torch.fx --------------------------------------------------------------------------------------


def _fx_trace(model, builder: _Builder) -> None:
    import torch.fx as fx

    class _Tracer(fx.Tracer):
        def is_leaf_module(self, m, qualname):
            return _leaf(m)

    graph = _Tracer().trace(model)
    names = dict(model.named_modules())
    node_of: dict = {}  # fx node -> our node name (None for non-signal)
    signal: dict = {}  # fx node -> carries a signal
    first_input = True

    def refs(a):
        out = []
        fx.node.map_arg(a, lambda n: out.append(n))
        return out

    for n in graph.nodes:
        if n.op == "placeholder":
            if first_input:
                first_input = False
                node_of[n] = builder.add(TraceNode("input", "input", "input", ())).name
                signal[n] = True
            else:
                node_of[n], signal[n] = None, False
            continue
        if n.op == "get_attr":
            node_of[n], signal[n] = None, False
            continue
        args_refs = refs(n.args) + refs(n.kwargs)
        inputs = tuple(dict.fromkeys(node_of[a] for a in args_refs if signal.get(a)))
        params = tuple(str(a.target) for a in args_refs if a.op == "get_attr")
        if n.op == "output":
            builder.add(TraceNode("output", "output", "output", inputs))
            continue
        if n.op == "call_module":
            node = builder.module_node(str(n.target), names[str(n.target)], inputs)
        else:
            attr = n.args[1] if (_function_name(n.target) == "getattr" and len(n.args) > 1) else None
            node = builder.function_node(n.name, n.target, n.args[1:], n.kwargs, inputs, params, attr)
        node_of[n] = node.name
        signal[n] = node.kind != "shape"


# --- hooks on a real forward pass -------------------------------------------------------------------


def _tensors(obj) -> list:
    out = []
    if isinstance(obj, torch.Tensor):
        out.append(obj)
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            out.extend(_tensors(o))
    elif isinstance(obj, dict):
        for o in obj.values():
            out.extend(_tensors(o))
    return out


def _hook_trace(model, example_inputs, builder: _Builder) -> None:
    from torch.overrides import TorchFunctionMode

    producer: dict = {}  # id(tensor) -> node name
    keep: list = []  # tensors kept alive so that ids are not reused
    param_names = {id(p): n for n, p in model.named_parameters()}
    param_names.update({id(b): n for n, b in model.named_buffers()})
    depth = [0]
    pending: list = []

    def inputs_of(args, kwargs):
        ins, params = [], []
        for t in _tensors(args) + _tensors(kwargs):
            if id(t) in producer:
                ins.append(producer[id(t)])
            elif id(t) in param_names:
                params.append(param_names[id(t)])
        return tuple(dict.fromkeys(ins)), tuple(params)

    def outputs(node, out):
        for t in _tensors(out):
            keep.append(t)
            producer[id(t)] = node.name

    class _Mode(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            if depth[0] == 0 and _tensors(out):
                ins, params = inputs_of(args, kwargs)
                fname = _function_name(func)
                if fname == "get" and getattr(func, "__qualname__", "").endswith("__get__"):
                    return out
                node = builder.function_node(fname, func, args[1:], kwargs, ins, params)
                if node.kind != "shape":
                    outputs(node, out)
            return out

    def pre(module, args, kwargs, qualname):
        if depth[0] == 0:
            pending.append(inputs_of(args, kwargs)[0])
        depth[0] += 1

    def post(module, args, kwargs, out, qualname):
        depth[0] -= 1
        if depth[0] == 0:
            node = builder.module_node(qualname, module, pending.pop())
            outputs(node, out)

    handles = []
    for qualname, m in model.named_modules():
        if m is not model and _leaf(m):
            handles.append(
                m.register_forward_pre_hook(lambda mod, a, k, q=qualname: pre(mod, a, k, q), with_kwargs=True)
            )
            handles.append(
                m.register_forward_hook(lambda mod, a, k, o, q=qualname: post(mod, a, k, o, q), with_kwargs=True)
            )
    xs = example_inputs if isinstance(example_inputs, tuple) else (example_inputs,)
    inp = builder.add(TraceNode("input", "input", "input", ()))
    for t in _tensors(xs):
        keep.append(t)
        producer[id(t)] = inp.name
    was_training = model.training
    model.eval()
    try:
        with torch.enable_grad(), _Mode():
            out = model(*xs)
    finally:
        for h in handles:
            h.remove()
        model.train(was_training)
    ins, _ = inputs_of(out, {})
    builder.add(TraceNode("output", "output", "output", ins))


# --- analysis ---------------------------------------------------------------------------------------

_LINEAR = None


def _linear() -> Activation:
    global _LINEAR
    if _LINEAR is None:
        _LINEAR = get_activation("linear")
    return _LINEAR


def _analyse(builder: _Builder, method: str, fx_error: str) -> Trace:
    nodes = builder.nodes
    by = builder.by_name
    consumers: dict = {n.name: [] for n in nodes}
    for n in nodes:
        for i in n.inputs:
            consumers.setdefault(i, []).append(n.name)

    memo: dict = {}

    def upstream(name: str):
        """(activation or None for the data, source node, rule) of the signal leaving node ``name``."""
        if name in memo:
            return memo[name]
        memo[name] = (_linear(), name, "cycle")
        n = by[name]
        if n.kind == "activation":
            res = (n.activation, name, f"consumes {n.op} ({name})")
        elif n.kind in TRANSPARENT:
            res = upstream(n.inputs[0]) if n.inputs else (_linear(), name, f"after {n.op} of no signal")
        elif n.kind == "input":
            res = (None, "data", "data")
        elif n.kind == "norm":
            res = (_linear(), name, f"after the normalisation {name} (unit variance, enters linearly)")
        elif n.kind in ("add", "cat"):
            parts = [upstream(i) for i in n.inputs]
            acts = {None if p[0] is None else p[0].name for p in parts}
            if len(acts) == 1 and parts:
                res = (parts[0][0], parts[0][1], parts[0][2] + f" (every operand of {name})")
            else:
                res = (_linear(), name, f"after {n.op} {name} of paths with different activations")
        elif n.kind == "weight":
            res = (_linear(), name, f"directly after the weight layer {name}")
        else:
            res = (_linear(), name, f"after {n.kind} node {name} ({n.op})")
        memo[name] = res
        return res

    def downstream(name: str):
        seen, frontier = set(), list(consumers.get(name, []))
        while frontier:
            c = frontier.pop(0)
            if c in seen:
                continue
            seen.add(c)
            n = by[c]
            if n.kind == "activation":
                return n.activation, c, f"fed by the data: the activation that follows ({c})"
            if n.kind in TRANSPARENT or n.kind == "norm":
                frontier.extend(consumers.get(c, []))
        return _linear(), "data", "fed by the data, no activation follows: linear"

    # weight depth (longest path counting weight nodes), nodes are in execution (topological) order
    wdepth: dict = {}
    for n in nodes:
        d = max((wdepth.get(i, 0) for i in n.inputs), default=0)
        weighted = n.kind == "weight" or (n.kind == "attention" and n.module is not None)
        wdepth[n.name] = d + (1 if weighted else 0)

    def branch_end(name: str):
        """Nearest weight node upstream of ``name`` (through transparent nodes and norms), and the norm."""
        norm = None
        while True:
            n = by[name]
            if n.kind == "weight":
                return name, norm
            if (n.kind in TRANSPARENT or n.kind == "norm") and n.inputs:
                if n.kind == "norm" and norm is None:
                    norm = n.module
                name = n.inputs[0]
                continue
            return None, None

    def reached(name: str, skip: str = "") -> list:
        """Kinds of the first non-transparent consumers of ``name`` (walking through transparent nodes), ``skip`` excluded."""
        seen, frontier, kinds = {skip}, list(consumers.get(name, [])), []
        while frontier:
            c = frontier.pop(0)
            if c in seen:
                continue
            seen.add(c)
            if by[c].kind in TRANSPARENT:
                frontier.extend(consumers.get(c, []))
            else:
                kinds.append(by[c].kind)
        return kinds

    def feeds_norm(skip: str, add: str) -> bool:
        """Whether ``skip`` feeds a norm node other than through ``add`` (transparent nodes only)."""
        return "norm" in reached(skip, add)

    def only_norms(add: str) -> bool:
        """Whether every consumer of ``add`` (through transparent nodes) is a norm node."""
        kinds = reached(add)
        return bool(kinds) and all(k == "norm" for k in kinds)

    ends: dict = {}
    prenorm: set = set()
    postnorm: set = set()
    residual = 0
    for n in nodes:
        if n.kind == "add" and len(n.inputs) >= 2:
            depths = [wdepth[i] for i in n.inputs]
            top = max(depths)
            if depths.count(top) == 1 and top > min(depths):
                residual += 1
                end, norm = branch_end(n.inputs[depths.index(top)])
                if end is not None:
                    ends[end] = norm
                    skip = n.inputs[depths.index(min(depths))]
                    if feeds_norm(skip, n.name):
                        prenorm.add(end)
                    elif only_norms(n.name):
                        postnorm.add(end)

    calls: dict = {}
    for n in nodes:
        if n.kind == "weight" and n.module is not None:
            calls[n.module] = calls.get(n.module, 0) + 1
    layers, unsupported, seen = [], [], set()
    modules = dict(builder.model.named_modules())
    for n in nodes:
        if n.kind == "weight" and n.module is not None:
            if n.module in seen:
                continue
            seen.add(n.module)
            src = n.inputs[0] if n.inputs else None
            act, source, rule = upstream(src) if src else (_linear(), "none", "no signal input")
            fed = act is None
            if fed:
                act, source, rule = downstream(n.name)
            layers.append(
                WeightLayer(
                    n.module,
                    n.name,
                    type(modules[n.module]).__name__,
                    act,
                    source,
                    rule,
                    calls[n.module],
                    n.name in ends,
                    ends.get(n.name),
                    fed,
                    n.name in prenorm,
                    n.name in postnorm,
                )
            )
            if calls[n.module] > 1:
                unsupported.append(
                    n.replace(reason=f"weights shared: module called {calls[n.module]} times (one initialisation)")
                )
        elif n.kind in ("unknown", "attention", "embedding") or (n.kind == "weight" and n.module is None):
            unsupported.append(n)
    return Trace(method, tuple(nodes), tuple(layers), tuple(unsupported), residual, fx_error)


def trace(model: Any, example_inputs: Any = None, *, method: str = "auto") -> Trace:
    """The graph of ``model``: node kinds, the activation each weight layer consumes, the residual
    branches, and every node outside the theory with the reason.

    Parameters
    ----------
    model : torch.nn.Module
    example_inputs : torch.Tensor or tuple of tensors, optional
        Inputs for a real forward pass, needed when ``torch.fx`` cannot trace the model (then the
        model runs once in ``eval()`` mode with gradients enabled, restored afterwards).
    method : {"auto", "fx", "hooks"}
        ``"auto"``: ``torch.fx``, falling back to hooks on ``example_inputs``.

    Returns
    -------
    Trace

    Raises
    ------
    TypeError
        ``model`` not an ``nn.Module``; ``example_inputs`` not a tensor or tuple.
    ValueError
        An unknown ``method``; ``torch.fx`` failed and no ``example_inputs`` were given; the forward
        pass on ``example_inputs`` failed (the message says why).

    Examples
    --------
    >>> import torch
    >>> class Mixer(torch.nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.fc1, self.fc2 = torch.nn.Linear(8, 16), torch.nn.Linear(16, 8)
    ...     def forward(self, x):
    ...         return x + self.fc2(torch.nn.functional.gelu(self.fc1(x)))
    >>> trace(Mixer()).activations()
    {'fc1': 'gelu', 'fc2': 'gelu'}
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if method not in ("auto", "fx", "hooks"):
        raise ValueError(f"method must be 'auto', 'fx' or 'hooks', got {method!r}")
    if example_inputs is not None and not isinstance(example_inputs, (torch.Tensor, tuple)):
        raise TypeError(
            f"example_inputs must be a torch.Tensor or a tuple of tensors, got {type(example_inputs).__name__}"
        )
    fx_error = ""
    if method in ("auto", "fx"):
        builder = _Builder(model)
        try:
            _fx_trace(model, builder)
            return _analyse(builder, "fx", "")
        except Exception as exc:
            fx_error = f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:200]}"
            if method == "fx":
                raise ValueError(f"torch.fx could not trace the model: {fx_error}") from exc
    if example_inputs is None:
        raise ValueError(
            f"torch.fx could not trace the model ({fx_error}); pass example_inputs (a batch the model accepts) "
            "so that a real forward pass can be traced"
        )
    builder = _Builder(model)
    try:
        _hook_trace(model, example_inputs, builder)
    except (RuntimeError, TypeError, IndexError) as exc:
        shapes = [tuple(t.shape) for t in _tensors(example_inputs)]
        raise ValueError(
            f"example_inputs of shape {shapes} cannot be fed to the model: {(str(exc).splitlines() or [''])[0]}"
        ) from exc
    return _analyse(builder, "hooks", fx_error)
