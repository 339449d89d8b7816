"""Reading the graph: the activation each weight layer feeds, residual branches and their normalisation."""

from __future__ import annotations

from ...activations import Activation, get_activation
from .._torch import require_torch
from ._graph import Trace, WeightLayer, _Builder
from ._kinds import TRANSPARENT

torch = require_torch()
nn = torch.nn


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
