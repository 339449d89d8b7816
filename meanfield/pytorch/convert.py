r"""From a PyTorch model to the library's network description: ``to_network(model)`` -> :class:`Conversion`.

The model is traced (:func:`meanfield.pytorch.trace`) and its graph is read back, from the output
to the input, into a :class:`meanfield.nets.Network` whose layers carry the model's *declared*
weight variances: the :class:`~meanfield.pytorch.InitSpec` recorded by the initialisers of
:mod:`meanfield.pytorch.init`, else PyTorch's default law (``kaiming_uniform_(a=sqrt(5))``:
:math:`W_{ij} \sim U(\pm 1/\sqrt{n_{in}})`, i.e. :math:`\sigma_w^2 = 1/3`, and a bias
:math:`U(\pm 1/\sqrt{n_{in}})`, i.e. :math:`\sigma_b^2 = 1/(3 n_{in})`).

==============================================  ======================================================
traced node                                     layer of :mod:`meanfield.nets`
==============================================  ======================================================
``nn.Linear``                                   :class:`~meanfield.nets.Dense`
``nn.Conv1d/2d/3d`` (zero or circular padding)  :class:`~meanfield.nets.Conv`: periodic for circular
                                                ``d (k // 2)``, stride 1, one group (Xiao et al.
                                                2018, eq. 2.1), else with ``stride``, ``dilation``,
                                                ``groups``, ``padding`` (exact, position-dependent)
activation module or function                   :class:`~meanfield.nets.Act`
``a + f(a)``                                    :class:`~meanfield.nets.Residual` (identity skip)
``P(a) + f(a)``, both paths with layers         :class:`~meanfield.nets.Residual` with ``skip=P`` (the
                                                path with fewer weight layers; ResNet's downsampling)
``nn.Flatten()``, ``torch.flatten(x, 1)``       :class:`~meanfield.nets.Flatten`
``nn.Dropout``                                  :class:`~meanfield.nets.Dropout` (its mode)
``AdaptiveAvgPool(1)``                          :class:`~meanfield.nets.Pool` (global mean)
``AvgPool`` / ``MaxPool`` (padding, floor)      :class:`~meanfield.nets.AvgPool` / ``MaxPool``
an activation right before ``MaxPool``          fused: ``MaxPool(act=...)`` (the same function)
``LayerNorm`` / ``RMSNorm`` / ``BatchNorm``     :class:`~meanfield.nets.LayerNorm` / ``RMSNorm`` /
                                                ``BatchNorm`` (scalar affine maps, the module's mode)
``nn.MultiheadAttention`` (self-attention)      :class:`~meanfield.nets.SelfAttention` (``1/sqrt(d)``)
``nn.Identity``, casts, ``contiguous``          nothing (the same signal)
==============================================  ======================================================

Everything else -- reflect or replicate padding, pooling with dilation or ``ceil_mode``, reshapes
whose meaning for the positions x channels layout the trace does not record, scalings,
concatenations, functional weight layers, shared weights, unknown modules -- is listed in
:attr:`Conversion.unconverted` with its op and the reason, never skipped silently. The description
is channels-last, PyTorch is channels-first: the per-unit moments (all the theory tracks) are the
same. torchvision's ``resnet18`` converts completely and its theory covers every layer (the
activations after its residual sums act on a non-Gaussian stream, whose per-unit law the theory
carries); a layer whose rule the per-unit state cannot carry is reported by
:meth:`meanfield.nets.Network.theory`, naming it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from .. import nets
from .._results import Result
from ..activations import ACTIVATIONS
from ._torch import require_torch
from .init import recorded_spec
from .trace import Trace, TraceNode, trace

torch = require_torch()
nn = torch.nn

__all__ = ["Conversion", "to_network"]

#: PyTorch's default weight law (``kaiming_uniform_(a=sqrt(5))``) in the library convention.
TORCH_DEFAULT_SIGMA_W2 = 1.0 / 3.0

#: Function nodes of kind ``flatten`` that leave every entry where it is.
_SAME_SIGNAL = ("contiguous", "clone", "to", "type", "float", "double", "half", "bfloat16", "type_as")


@dataclass(frozen=True)
class Conversion(Result):
    """A traced model read as a :class:`meanfield.nets.Network` (see :func:`to_network`).

    Attributes
    ----------
    network : meanfield.nets.Network or None
        The description; when ``complete`` is False it leaves out the nodes of ``unconverted``
        (None when nothing could be converted, or when a signal is used by more than one later
        operation outside a residual fork, so that the graph is no chain of blocks).
    unconverted : tuple of TraceNode
        Every node the description cannot express, each with its ``op`` and ``reason``.
    complete : bool
        True when every node of the model's graph was converted.
    trace : Trace
        The trace the conversion read.
    """

    network: Any
    unconverted: tuple
    complete: bool
    trace: Trace

    def __str__(self) -> str:
        head = (
            "complete conversion" if self.complete else f"partial conversion: {len(self.unconverted)} node(s) left out"
        )
        lines = [head]
        if self.network is not None:
            lines += [f"  {layer!r}" for layer in self.network.layers]
        for n in self.unconverted:
            lines.append(f"  unconverted {n.name} ({n.op}): {n.reason}")
        return "\n".join(lines)


# --- weight variances -----------------------------------------------------------------------------


def _fan_in(module) -> int:
    w = module.weight
    return int(w.shape[1]) * math.prod(int(s) for s in w.shape[2:])


def _variances(module) -> tuple[float, float, Any, str, str]:
    """(sigma_w2, sigma_b2, v, law, problem) declared for a weight module."""
    spec = recorded_spec(module)
    fan = _fan_in(module)
    has_bias = getattr(module, "bias", None) is not None
    if spec is None:
        return TORCH_DEFAULT_SIGMA_W2, (1.0 / (3.0 * fan) if has_bias else 0.0), None, "uniform", ""
    if spec.deterministic:
        return 0.0, 0.0, None, "gaussian", f"deterministic construction {spec.method}: no random-weight description"
    if not has_bias:
        sb = 0.0
    elif spec.sigma_b2 is not None:
        sb = float(spec.sigma_b2)
    else:  # a bias the initialiser left alone: fixed, it enters through its mean square
        sb = float(module.bias.detach().double().pow(2).mean())
    law = "orthogonal" if "orthogonal" in spec.method else "gaussian"
    return float(spec.sigma_w2), sb, spec.v, law, ""


# --- one node -------------------------------------------------------------------------------------


class _Reader:
    def __init__(self, model, tr: Trace):
        self.model = model
        self.trace = tr
        self.nodes = {n.name: n for n in tr.nodes}
        self.order = {n.name: i for i, n in enumerate(tr.nodes)}
        self.unconverted: list = []
        self.used: dict = {}
        self.ancestors: dict = {}
        self.tangled = False  # a signal used twice outside a residual fork: no chain of blocks

    def fail(self, node: TraceNode, reason: str) -> list:
        self.unconverted.append(node.replace(reason=reason))
        return []

    def module(self, node: TraceNode):
        return self.model.get_submodule(node.module) if node.module is not None else None

    def ancestry(self, name: str) -> frozenset:
        if name not in self.ancestors:
            out, stack = set(), [name]
            while stack:
                n = stack.pop()
                if n in out:
                    continue
                out.add(n)
                stack.extend(self.nodes[n].inputs)
            self.ancestors[name] = frozenset(out)
        return self.ancestors[name]

    # the layers that compute node `name` from node `stop`
    def chain(self, name: str, stop: str) -> list:
        layers: list = []
        while name != stop:
            node = self.nodes[name]
            self.used[name] = self.used.get(name, 0) + 1
            if self.used[name] > 1:
                self.tangled = True
                self.fail(node, "its output is used by more than one later operation outside a residual fork")
                return layers
            if node.kind == "input":
                return layers
            if node.kind == "add" and len(node.inputs) == 2:
                fork, block = self.residual(node)
                layers[:0] = block
                name = fork
                continue
            if not node.inputs:
                self.fail(node, f"{node.kind} node without a signal input")
                return layers
            if len(node.inputs) > 1:
                layers[:0] = self.fail(node, node.reason or f"{node.kind} of {len(node.inputs)} signals")
                return layers
            try:
                layers[:0] = self.layer(node)
            except (TypeError, ValueError) as exc:  # a size or parameter outside the layer kind's range
                self.fail(node, f"outside the range of meanfield.nets: {exc}")
            name = node.inputs[0]
        return layers

    def residual(self, node: TraceNode) -> tuple[str, list]:
        a, b = node.inputs
        common = self.ancestry(a) & self.ancestry(b)
        if not common:
            return a, self.fail(node, "sum of two signals with no common input")
        fork = max(common, key=self.order.__getitem__)
        if node.op in ("sub", "isub", "rsub"):
            return fork, self.fail(node, "difference of two signals: not a residual sum")
        if fork in (a, b):
            branch = self.chain(b if fork == a else a, fork)
            return fork, [nets.Residual(tuple(branch))] if branch else self.fail(node, "empty residual branch")
        left, right = self.chain(a, fork), self.chain(b, fork)
        weights = (nets.Dense, nets.Conv, nets.SelfAttention, nets.Residual)
        nw = [sum(isinstance(x, weights) for x in side) for side in (left, right)]
        skip, branch = (left, right) if nw[0] <= nw[1] else (right, left)
        if not branch:
            return fork, self.fail(node, "residual sum of two paths without layers")
        if not skip:  # the skip path holds only identities
            return fork, [nets.Residual(tuple(branch))]
        return fork, [nets.Residual(tuple(branch), skip=tuple(skip))]

    def layer(self, node: TraceNode) -> list:
        kind = node.kind
        m = self.module(node)
        if kind in ("identity", "output"):
            return []
        if kind == "activation":
            act = node.activation
            if act.name in ACTIVATIONS:
                return [nets.Act(act.name)]
            if act.name.startswith("leaky_relu"):
                return [nets.Act("leaky_relu", slope=act.param)]
            return self.fail(node, f"activation {act.name}: its parameters have no Act equivalent")
        if kind == "weight":
            return self.weight(node, m)
        if kind == "flatten":
            if isinstance(m, nn.Flatten):
                if (m.start_dim, m.end_dim) != (1, -1):
                    return self.fail(node, f"Flatten({m.start_dim}, {m.end_dim}): not all of positions x channels")
                return [nets.Flatten()]
            if m is None and node.op == "flatten":
                return self.flatten(node)
            if m is None and node.op in _SAME_SIGNAL:
                return []
            return self.fail(node, f"{node.op}: the trace does not record what it does to positions x channels")
        if kind == "dropout":
            if isinstance(m, nn.Dropout):
                return [nets.Dropout(m.p, train=m.training)]
            if m is not None and not m.training:
                return []  # e.g. DropPath in evaluation mode: the identity
            return self.fail(node, f"{node.op} in training mode: no description of its masks")
        if kind == "pool":
            return self.pool(node, m)
        if kind == "norm":
            return self.norm(node, m)
        if kind == "attention":
            return self.attention(node, m)
        reason = node.reason or f"{kind} node: no layer of meanfield.nets describes it"
        if kind == "scale":
            reason = f"{node.op} by a constant: the factor is not recorded by the trace"
        elif kind == "add":
            reason = f"{node.op} of a signal and a constant or parameter (a shift, not a residual sum)"
        return self.fail(node, reason)

    def weight(self, node, m) -> list:
        if m is None:
            return self.fail(node, node.reason or f"functional {node.op}")
        if self.trace.layer(node.module).calls > 1:
            return self.fail(
                node, "shared weights (a module called more than once): the description draws each layer anew"
            )
        sw, sb, v, law, problem = _variances(m)
        if problem:
            return self.fail(node, problem)
        if isinstance(m, nn.Linear):
            return [nets.Dense(m.out_features, sw, sb, law=law)]
        return self.conv(node, m, sw, sb, v)

    def conv(self, node, m, sw, sb, v) -> list:
        k = tuple(int(s) for s in m.kernel_size)
        stride, dilation = tuple(int(s) for s in m.stride), tuple(int(d) for d in m.dilation)
        if m.padding_mode not in ("zeros", "circular"):
            return self.fail(node, f"padding_mode {m.padding_mode!r}: the description pads with zeros or circularly")
        pad = m.padding
        if pad == "valid":
            pad = (0,) * len(k)
        elif pad == "same":  # stride 1 (PyTorch's rule): d (k - 1) in total, the extra one on the right
            total = [d * (s - 1) for d, s in zip(dilation, k)]
            if any(t % 2 for t in total):
                return self.fail(node, f"padding='same' with an even extent {total}: asymmetric padding")
            pad = tuple(t // 2 for t in total)
        pad = tuple(int(p) for p in pad)
        mode = m.padding_mode
        same = all(p == d * (s // 2) for p, d, s in zip(pad, dilation, k)) and all(s % 2 for s in k)
        if mode == "circular" and same:  # periodic padding to the same size: the rule of Xiao et al. 2018
            return [nets.Conv(m.out_channels, k, sw, sb, v=v, stride=stride, dilation=dilation, groups=m.groups)]
        return [
            nets.Conv(
                m.out_channels,
                k,
                sw,
                sb,
                v=v,
                stride=stride,
                dilation=dilation,
                groups=m.groups,
                padding=pad,
                padding_mode=mode,
            )
        ]

    def flatten(self, node) -> list:
        """``torch.flatten(x, 1)`` / ``x.flatten(1)``: the features of every sample, positions x channels."""
        pos = [a for a in node.args if not isinstance(a, tuple) or len(a) != 2 or not isinstance(a[0], str)]
        kw = dict(a for a in node.args if isinstance(a, tuple) and len(a) == 2 and isinstance(a[0], str))
        start = kw.get("start_dim", pos[0] if pos else 0)
        end = kw.get("end_dim", pos[1] if len(pos) > 1 else -1)
        if (start, end) != (1, -1):
            return self.fail(node, f"flatten(start_dim={start!r}, end_dim={end!r}): only flatten(x, 1) is described")
        return [nets.Flatten()]

    def pool(self, node, m) -> list:
        mods = nn.modules.pooling
        if isinstance(m, mods._AdaptiveAvgPoolNd):
            size = m.output_size if isinstance(m.output_size, tuple) else (m.output_size,)
            if all(s == 1 for s in size):
                return [nets.Pool()]
            return self.fail(node, f"adaptive pooling to {m.output_size}: windows depend on the input size")
        if isinstance(m, (mods._AvgPoolNd, mods._MaxPoolNd)):
            dil = getattr(m, "dilation", 1)
            if getattr(m, "ceil_mode", False) or any(d != 1 for d in (dil if isinstance(dil, tuple) else (dil,))):
                return self.fail(node, f"{node.op} with dilation or ceil_mode")
            if getattr(m, "divisor_override", None) is not None:
                return self.fail(node, f"{node.op} with divisor_override")
            name = type(m).__name__
            n = int(name[-2]) if name[-2:-1].isdigit() else 1

            def per(value):
                return tuple(value) if isinstance(value, (tuple, list)) else (value,) * n

            window, pad = per(m.kernel_size), per(m.padding)
            stride = window if m.stride is None else per(m.stride)
            if isinstance(m, mods._AvgPoolNd):
                return [nets.AvgPool(window, stride, pad, count_include_pad=bool(m.count_include_pad))]
            return [nets.MaxPool(window, stride, pad)]
        return self.fail(node, f"{node.op}: the pooled axes are not recorded by the trace")

    def norm(self, node, m) -> list:
        def scalar(t, default):
            if t is None:
                return default
            t = t.detach().double()
            return float(t.flatten()[0]) if bool(torch.all(t == t.flatten()[0])) else None

        if m is None:
            return self.fail(node, f"functional {node.op}: its parameters are not recorded")
        gain, bias = scalar(getattr(m, "weight", None), 1.0), scalar(getattr(m, "bias", None), 0.0)
        if gain is None or bias is None:
            return self.fail(node, f"{node.op} with a gain or bias per unit: the description has one scalar each")
        if isinstance(m, nn.LayerNorm):
            if len(m.normalized_shape) != 1:
                return self.fail(node, f"LayerNorm over {m.normalized_shape}: the description normalises channels")
            return [nets.LayerNorm(m.eps, gain, bias)]
        if hasattr(nn, "RMSNorm") and isinstance(m, nn.RMSNorm):
            if len(m.normalized_shape) != 1:
                return self.fail(node, f"RMSNorm over {m.normalized_shape}: the description normalises channels")
            return [nets.RMSNorm(gain=gain, bias=bias) if m.eps is None else nets.RMSNorm(m.eps, gain, bias)]
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            if m.training or m.running_mean is None:
                return [nets.BatchNorm(True, m.eps, gain, bias)]
            rm, rv = scalar(m.running_mean, 0.0), scalar(m.running_var, 1.0)
            if rm is None or rv is None:
                return self.fail(node, "BatchNorm with running statistics that differ between units")
            return [nets.BatchNorm(False, m.eps, gain, bias, rm, rv)]
        return self.fail(node, f"{node.op}: no layer of meanfield.nets describes it")

    def attention(self, node, m) -> list:
        if not isinstance(m, nn.MultiheadAttention):
            return self.fail(node, node.reason or f"functional {node.op}: its projections are not modules")
        e = m.embed_dim
        if not m._qkv_same_embed_dim or m.in_proj_weight is None:
            return self.fail(node, "attention with separate key/value widths")
        for b in (m.in_proj_bias, m.out_proj.bias, m.bias_k, m.bias_v):
            if b is not None and bool(torch.any(b != 0)):
                return self.fail(node, "attention with non-zero biases: the description has none")
        spec_in, spec_out = getattr(m.in_proj_weight, "meanfield_init", None), recorded_spec(m.out_proj)
        # PyTorch's defaults: xavier_uniform_ on the (3e, e) packed projection (variance 2 / (4e):
        # sigma2 = 1/2), the out-projection's Linear default (1/3)
        s_in = 0.5 if spec_in is None else float(spec_in.sigma_w2)
        s_out = TORCH_DEFAULT_SIGMA_W2 if spec_out is None else float(spec_out.sigma_w2)
        return [nets.SelfAttention(e, m.num_heads, s_in, s_in, s_out, scaling="1/sqrt(d)")]


def _fuse(layers: list) -> list:
    """An activation right before a max pooling fused into it (``MaxPool(act=...)``: the same function,
    whose rule integrates the activation; a separate one before a max pooling has none), in residual paths too."""
    out: list = []
    for layer in layers:
        if isinstance(layer, nets.Residual):
            skip = tuple(_fuse(list(layer.skip))) if isinstance(layer.skip, tuple) else layer.skip
            layer = replace(layer, branch=tuple(_fuse(list(layer.branch))), skip=skip)
        prev = out[-1] if out else None
        if isinstance(layer, nets.MaxPool) and layer.act is None and isinstance(prev, nets.Act) and prev.slope is None:
            out[-1] = replace(layer, act=prev.name)
            continue
        out.append(layer)
    return out


def to_network(model: Any, example_inputs: Any = None) -> Conversion:
    """The :class:`meanfield.nets.Network` of a PyTorch model, with its declared weight variances.

    Parameters
    ----------
    model : torch.nn.Module
    example_inputs : torch.Tensor or tuple of tensors, optional
        Passed to :func:`meanfield.pytorch.trace` (needed when ``torch.fx`` cannot trace the model).

    Returns
    -------
    Conversion
        ``network`` (None when nothing converted), ``unconverted`` (every node the description
        cannot express, with its op and reason) and ``complete``.

    Raises
    ------
    TypeError, ValueError
        As :func:`meanfield.pytorch.trace`.

    Notes
    -----
    Weight variances: the recorded :class:`~meanfield.pytorch.InitSpec`, else PyTorch's default
    law (:math:`\\sigma_w^2 = 1/3`, :math:`\\sigma_b^2 = 1/(3 n_{in})`); dense layers follow Xiao et
    al. 2018, eq. 2.5, convolutions eq. 2.1 (periodic boundary; zero padding, strides, dilation and
    groups by the exact position-dependent rule of :class:`meanfield.nets.Conv`), residual sums the
    identity-skip blocks of Orhan 2017, eq. 25, or a projection skip. The module notes list the
    correspondence.

    Examples
    --------
    >>> import torch
    >>> model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))
    >>> conv = to_network(model)
    >>> conv.complete, [type(layer).__name__ for layer in conv.network.layers]
    (True, ['Dense', 'Act', 'Dense'])
    """
    tr = trace(model, example_inputs)
    reader = _Reader(model, tr)
    inputs = [n for n in tr.nodes if n.kind == "input"]
    outputs = [n for n in tr.nodes if n.kind == "output"]
    layers: list = []
    if len(inputs) != 1:
        for n in inputs[1:]:
            reader.fail(n, "a second model input: the description has one")
    if not outputs or not outputs[0].inputs:
        reader.unconverted.append(TraceNode("output", "output", "output", (), reason="no traced output signal"))
    else:
        out = outputs[0]
        for extra in out.inputs[1:]:
            reader.fail(reader.nodes[extra], "a second model output: the description has one")
        layers = reader.chain(out.inputs[0], inputs[0].name if inputs else "")
    unconverted = tuple(reader.unconverted)
    layers = _fuse(layers)
    network = nets.Network(layers) if layers and not reader.tangled else None
    return Conversion(network, unconverted, not unconverted and network is not None, tr)
