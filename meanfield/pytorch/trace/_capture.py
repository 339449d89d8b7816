"""Capturing the graph: ``torch.fx`` symbolic tracing, or hooks on a real forward pass where fx fails."""

from __future__ import annotations

from .._torch import require_torch
from ._graph import TraceNode, _Builder
from ._kinds import _function_name, _module_kind

torch = require_torch()
nn = torch.nn


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
