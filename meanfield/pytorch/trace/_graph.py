"""The traced graph: its nodes, its weight layers and the builder that records them."""

from __future__ import annotations

from dataclasses import dataclass

from ..._results import Result
from ...activations import Activation
from .._activations import activation_from_module
from .._torch import require_torch
from ._kinds import _KIND_OF_FUNCTION, _SHAPE_ATTRS, ACTIVATION_FUNCTIONS, _function_name, _module_kind

torch = require_torch()
nn = torch.nn


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
    args : tuple
        The constant arguments of a function or method call after its first (``torch.flatten(x, 1)``:
        ``(1,)``), then its constant keyword arguments as ``(name, value)`` pairs; a traced value
        (a signal, a parameter, a shape computed at run time) is recorded as the string ``"<traced>"``.
    """

    name: str
    kind: str
    op: str
    inputs: tuple
    module: str | None = None
    activation: Activation | None = None
    reason: str = ""
    params: tuple = ()
    args: tuple = ()


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


_CONSTANT = (int, float, bool, str, type(None))


def _constant(a):
    """``a`` when it is a constant (numbers, strings, None, tuples or lists of them), else ``"<traced>"``."""
    if isinstance(a, _CONSTANT) and not isinstance(a, torch.Tensor):
        return a
    if isinstance(a, (tuple, list)):
        return tuple(_constant(x) for x in a)
    return "<traced>"


def call_arguments(args, kwargs) -> tuple:
    """The recorded :attr:`TraceNode.args` of a call (its arguments after the first)."""
    out = tuple(_constant(a) for a in args)
    return out + tuple((str(k), _constant(v)) for k, v in (kwargs or {}).items())


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
        recorded = call_arguments(args, kwargs)
        return self.add(TraceNode(self.unique(base), kind, fname, inputs, None, act, reason, params, recorded))
