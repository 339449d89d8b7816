"""Whole models: every weight layer of a traced graph at the edge of chaos, and the records it leaves."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ... import init as np_init
from ..._checks import check_nonnegative_scalar
from ..._results import Result
from .._activations import resolve_activation
from .._torch import require_torch
from ._edge import edge_of_chaos, stable_sigma_b2
from ._spec import KERNELS, InitSpec, _check_generator, _copy, _draw_bias, _fan_in, numpy_rng
from ._tensors import _normal, _orthogonal_dense_, delta_orthogonal_, gsm_, looks_linear_, orthogonal_conv_

torch = require_torch()


def _is_weight_layer(m) -> bool:
    nn = torch.nn
    return isinstance(m, (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d))


def layer_activations(model: Any, activation: Any = None, example_inputs: Any = None) -> dict:
    """For every ``Linear``/``Conv`` layer of ``model``, the activation whose output it consumes.

    Read from the traced graph (:func:`meanfield.pytorch.trace.trace`, the rule stated there), so
    functional activations and residual paths are seen; ``activation`` (when given) overrides the
    detection for every layer. Returns ``{module: Activation}`` in execution order.
    """
    from ..trace import trace

    tr = trace(model, example_inputs)
    override = None if activation is None else resolve_activation(activation)
    return {model.get_submodule(w.name): override or w.activation for w in tr.weight_layers}


@dataclass(frozen=True)
class LayerInit(Result):
    """What :func:`critical_init_` did to one module.

    Attributes
    ----------
    name : str
        Qualified module name.
    kind : str
        ``"weight"``, ``"norm"``, ``"attention"``, ``"embedding"``, ...
    action : str
        ``"initialised"``, ``"set"`` (norm affine parameters) or ``"left alone"``.
    activation : str or None
        The activation the layer consumes (weight layers).
    sigma_w2, sigma_b2 : float or None
        Drawn variances (``sigma_w2`` after the residual-branch factor).
    construction : str
        ``"critical_normal_"``, ``"orthogonal"``, ``"delta_orthogonal_"``, ``"orthogonal_conv_"``.
    branch_factor : float
        Residual-branch factor applied (1 outside residual branches).
    q_star : float or None
        The fixed point of the edge of chaos used.
    reason : str
    """

    name: str
    kind: str
    action: str
    activation: str | None = None
    sigma_w2: float | None = None
    sigma_b2: float | None = None
    construction: str = ""
    branch_factor: float = 1.0
    q_star: float | None = None
    reason: str = ""


@dataclass(frozen=True)
class CriticalInit(Result):
    """The report of :func:`critical_init_` (``print(report)`` shows the table).

    Attributes
    ----------
    layers : tuple of LayerInit
        Every weight layer, in execution order, then every norm, attention and embedding module
        (in execution order among themselves).
    frozen : tuple of str
        Modules left alone because their parameters do not require gradients.
    unsupported : tuple of str
        ``"node (op): reason"`` for every traced node outside the theory.
    residual_adds : int
        ``L`` of the residual-branch rule.
    trace_method : str
        ``"fx"`` or ``"hooks"``.
    sigma_b2 : float or "auto"
    kernel : str
    """

    layers: tuple
    frozen: tuple
    unsupported: tuple
    residual_adds: int
    trace_method: str
    sigma_b2: float | str
    kernel: str

    @property
    def initialised(self) -> tuple:
        """Names of the weight layers drawn."""
        return tuple(r.name for r in self.layers if r.action == "initialised")

    def table(self) -> str:
        """One line per module, then the frozen and unsupported lists."""
        width = max([len(r.name) for r in self.layers] + [6])
        head = (
            f"{'module':<{width}} | {'kind':<9} | {'action':<11} | {'consumes':<10} | {'sigma_w2':>9} | "
            f"{'sigma_b2':>8} | {'branch':>6} | construction / reason"
        )
        lines = [head, "-" * len(head)]
        for r in self.layers:
            sw = "-" if r.sigma_w2 is None else f"{r.sigma_w2:.4g}"
            sb = "-" if r.sigma_b2 is None else f"{r.sigma_b2:.4g}"
            what = r.construction + (f"; {r.reason}" if r.reason and r.construction else r.reason)
            lines.append(
                f"{r.name:<{width}} | {r.kind:<9} | {r.action:<11} | {r.activation or '-':<10} | {sw:>9} | "
                f"{sb:>8} | {r.branch_factor:>6.3g} | {what}"
            )
        lines.append(f"frozen (left alone): {', '.join(self.frozen) or 'none'}")
        lines.append(f"{len(self.unsupported)} traced node(s) outside the theory" + (":" if self.unsupported else ""))
        lines.extend(f"  {u}" for u in self.unsupported)
        lines.append(
            f"{len(self.initialised)} weight layer(s) initialised ({self.kernel}, sigma_b2 = {self.sigma_b2}), "
            f"{self.residual_adds} residual addition(s), traced by {self.trace_method}"
        )
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


#: Residual-branch rules accepted by :func:`critical_init_`.
RESIDUAL_RULES = ("depth", None)


def _frozen(module) -> bool:
    params = list(module.parameters(recurse=False))
    return bool(params) and not any(p.requires_grad for p in params)


def _flat_orthogonal_(tensor, sigma_w2: float, generator) -> None:
    """Dense orthogonal law over the flattened fan-in ``(c_out, c_in * prod(k))`` (strided, even or 3-D kernels)."""
    rng = numpy_rng(generator)
    c_out = int(tensor.shape[0])
    w = np_init.dense_weights(c_out, _fan_in(tensor), sigma_w2, "orthogonal", rng)
    spec = InitSpec("orthogonal", float(sigma_w2), None, None, kwargs=(("sigma_w2", float(sigma_w2)),))
    _copy(tensor, w.reshape(tuple(tensor.shape)), spec)


def _branch_factor(n_res: int, prenorm: bool) -> float:
    """Variance factor of a residual branch's output under ``residual="depth"``.

    ``1 / L`` for a branch that reads the stream directly (the stream's variance grows at most by
    ``(1 + 1/L)^L < e``); ``1 / sqrt(L)`` for a pre-norm branch, which reads the stream through a
    normalisation: its input has unit variance whatever the stream's, so the stream grows only
    linearly, ``q_l = q_0 + l a`` with ``a`` the branch variance, and the gradient at the first
    branch's weights over the gradient at the last layer is ``sqrt(a (1 + L a) / (1 + a))``
    (each norm divides the backward signal by ``sqrt(q_l)``), exactly 1 at ``a = 1 / sqrt(L)``
    (``1 / sqrt(L)`` small at ``a = 1 / L``, ``sqrt(L / 2)`` large at ``a = 1``).
    """
    return 1.0 / math.sqrt(n_res) if prenorm else 1.0 / n_res


def critical_init_(
    model: Any,
    activation: Any = None,
    sigma_b2: float | str = 0.0,
    kernel: str = "delta_orthogonal",
    *,
    generator: Any = None,
    example_inputs: Any = None,
    residual: str | None = "depth",
) -> CriticalInit:
    """Initialise every weight layer of ``model`` at the edge of chaos of the path through it.

    The model is traced (:func:`meanfield.pytorch.trace.trace`): each ``Linear``/``Conv`` layer
    gets the critical ``sigma_w2`` of the activation whose output it consumes along the graph
    (functional activations included; the first layer, which consumes the data, takes the
    activation that follows it; a layer after a normalisation, attention or another weight layer
    consumes a linear signal: ``sigma_w2 = 1``), at the fixed point q* the signal reaches
    (:func:`edge_of_chaos`), and its bias ``N(0, sigma_b2)``. Where q* is a nontrivial fixed point
    (GELU, SiLU), which the q-map approaches only over tens of layers (slope ~0.98-0.99), the layer
    fed by the data gets ``sigma_w2 = (q* - sigma_b2) / q_in`` so that the signal starts at q*
    (``q_in``: the mean square of ``example_inputs``, 1 without them).

    Parameters
    ----------
    model : torch.nn.Module
    activation : str, Activation or torch.nn.Module, optional
        One activation for every layer, overriding the traced ones.
    sigma_b2 : float or "auto"
        Bias variance (>= 0, finite). GELU needs ``sigma_b2`` of about 0.173 or more and SiLU about
        0.556 or more for a critical point that real inputs reach (below, ``ValueError`` naming
        the sufficient bound of :func:`stable_sigma_b2`: 0.186 for GELU, 0.591 for SiLU);
        ``"auto"``: each layer's bias gets :func:`stable_sigma_b2` of the activation it consumes
        (0 for tanh, ReLU, linear).
    kernel : {"delta_orthogonal", "orthogonal", "gaussian"}
        ``"delta_orthogonal"``: delta-orthogonal kernels (Algorithm 2) for odd-sized stride-1
        convolutions, orthogonal matrices for ``Linear`` layers (dynamical isometry, Xiao et al. 2018
        Sec. 2.4); ``"orthogonal"``: Algorithm-1 kernels for those convolutions; ``"gaussian"``:
        i.i.d. Gaussian weights everywhere. Orthogonal weights are scaled so that ``fan_in * E W^2
        = sigma_w2`` for any channel counts (orthonormal columns for ``c_in <= c_out``, rows for
        ``c_in > c_out``); strided, even-sized and 3-D kernels get the dense orthogonal law over
        their flattened fan-in.
    generator : torch.Generator, optional
        One NumPy stream is drawn from it per layer, in execution order.
    example_inputs : torch.Tensor or tuple, optional
        A batch for tracing on a real forward pass where ``torch.fx`` fails.
    residual : {"depth", None}
        ``"depth"``: with ``L`` residual additions in the graph, the last weight layer of every
        residual branch gets ``sigma_w2 / L`` and ``sigma_b2 / L`` (or, when a norm sits between
        it and the addition, the norm's weight is set to ``1 / sqrt(L)``), so that the stream's
        variance grows at most by ``(1 + 1/L)^L < e`` over the whole depth and the depth scales
        stay finite. A pre-norm branch (the stream enters it through a normalisation: pre-LN
        transformer and mixer blocks) gets ``1 / sqrt(L)`` instead (norm weight ``L^(-1/4)``):
        the norm already keeps its input at unit variance, the stream grows only linearly, and
        ``a = 1 / sqrt(L)`` is the branch variance that makes the gradient at the first branch's
        weights equal the gradient at the output (``1 / L`` leaves it ``~sqrt(2 / L)``).
        A post-norm branch (the addition's output is seen only through a normalisation:
        post-LayerNorm transformer blocks) gets no factor: the norm after the addition keeps the
        stream at unit variance, and the block's c-map ``(c + a f(c)) / (1 + a)`` has slope 1 at
        ``c = 1`` for a critical branch ``f`` whatever its variance ``a``; ``1 / L`` would only
        shrink the gradient at the branch's weights to ``~sqrt(a)`` of the stream's.
        ``None``: no factor (the papers' residual networks, :mod:`meanfield.pytorch.modules`).

    Returns
    -------
    CriticalInit
        Per module: what was drawn or set, or left alone and why; frozen modules; the traced nodes
        outside the theory. Every drawn weight is tagged with its :class:`InitSpec`.

    Raises
    ------
    TypeError
        ``model`` not a ``torch.nn.Module``; a bad ``activation`` or ``generator``.
    ValueError
        An unknown ``kernel`` or ``residual``; a negative ``sigma_b2``; no edge of chaos for a
        layer's activation at ``sigma_b2`` (the message names the layer); a model without
        ``Linear``/``Conv`` layers; a model ``torch.fx`` cannot trace without ``example_inputs``.

    Notes
    -----
    Left alone, with the reason in the report: frozen modules (``requires_grad=False``),
    attention modules (``nn.MultiheadAttention``: softmax attention is outside the theory; PyTorch's
    own init kept), embeddings. Norm layers' affine parameters are set to weight 1, bias 0 (the
    identity after normalisation, the unit-variance signal the next layer's rule assumes), except a
    branch-end norm under ``residual="depth"``. chi_1 = 1 is the edge of chaos of Xiao et al. 2018,
    eq. 2.7 (Schoenholz et al. 2017). Orthogonal weights have the same q-map and chi_1 as Gaussian
    ones in mean field, with a better-conditioned input-output Jacobian (Xiao et al. 2018, Sec. 2.4).

    Examples
    --------
    >>> import torch
    >>> net = torch.nn.Sequential(torch.nn.Linear(8, 64), torch.nn.Tanh(), torch.nn.Linear(64, 2))
    >>> report = critical_init_(net, sigma_b2=0.05, generator=torch.Generator().manual_seed(0))
    >>> round(net[2].weight.meanfield_init.sigma_w2, 4)
    1.761
    """
    from ..trace import trace

    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(kernel, str) or kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}")
    if residual not in RESIDUAL_RULES:
        raise ValueError(f"residual must be 'depth' or None, got {residual!r}")
    auto = isinstance(sigma_b2, str) and sigma_b2 == "auto"
    if not auto:
        if isinstance(sigma_b2, str):
            raise ValueError(f"sigma_b2 must be a number >= 0 or 'auto', got {sigma_b2!r}")
        sigma_b2 = check_nonnegative_scalar(sigma_b2, "sigma_b2")
    _check_generator(generator)
    override = None if activation is None else resolve_activation(activation)
    tr = trace(model, example_inputs)
    if not tr.weight_layers:
        raise ValueError("model has no Linear or Conv layer to initialise")
    q_in = 1.0  # standardised data
    if isinstance(example_inputs, torch.Tensor) and example_inputs.is_floating_point():
        measured = float(example_inputs.detach().double().pow(2).mean())
        if math.isfinite(measured) and measured > 0:
            q_in = measured
    n_res = tr.residual_adds if residual == "depth" else 0
    branch_norms = {
        w.branch_norm: w.branch_prenorm for w in tr.weight_layers if w.branch_end and w.branch_norm and n_res
    }
    rows: list = []
    frozen: list = []
    cache: dict = {}
    for w in tr.weight_layers:
        m = model.get_submodule(w.name)
        act = override or w.activation
        if _frozen(m):
            frozen.append(w.name)
            rows.append(LayerInit(w.name, "weight", "left alone", act.name, reason="frozen (requires_grad=False)"))
            continue
        if act.name not in cache:
            try:
                cache[act.name] = edge_of_chaos(act, stable_sigma_b2(act) if auto else sigma_b2)
            except ValueError as exc:
                raise ValueError(f"layer {w.name!r} consumes {act.name}: {exc}") from exc
        point = cache[act.name]
        factor = 1.0
        if w.branch_end and n_res and w.branch_norm is None:
            factor = 1.0 if w.branch_postnorm else _branch_factor(n_res, w.branch_prenorm)
        sw = point.sigma_w2 * factor
        # the branch's output variance is sigma_w2 E phi^2 + sigma_b2: both are scaled, else the biases
        # of L branch ends add up to an input-independent component of variance L sigma_b2 in the stream
        layer_b2 = point.sigma_b2 * factor
        start = ""
        if w.fed_by_data and point.method == "nontrivial fixed point" and point.q_star > point.sigma_b2:
            # the data enter at q_in: start the signal at q* instead of ~50 layers away from it
            sw = (point.q_star - point.sigma_b2) / q_in
            start = f"first layer: sigma_w2 = (q* - sigma_b2) / q_in, q_in = {q_in:.3g}"
        bias = m.bias
        conv = m.weight.dim() > 2
        plain_conv = conv and (
            m.weight.dim() in (3, 4)
            and all(k % 2 == 1 for k in m.kernel_size)
            and len(set(m.kernel_size)) == 1
            and all(s == 1 for s in m.stride)
            and all(d == 1 for d in m.dilation)
            and m.groups == 1
        )
        note = ""
        if kernel == "gaussian":
            _normal(m.weight, sw, layer_b2, bias, generator, "critical_normal_", (("activation", act.name),))
        else:
            if not conv:
                _orthogonal_dense_(m.weight, sw, generator)
            elif not plain_conv or m.groups != 1:
                if m.groups != 1:
                    _normal(m.weight, sw, layer_b2, bias, generator, "critical_normal_", (("activation", act.name),))
                    note = "grouped convolution: Gaussian"
                else:
                    _flat_orthogonal_(m.weight, sw, generator)
                    note = "strided, dilated or even kernel: dense orthogonal over the flattened fan-in"
            elif kernel == "delta_orthogonal":
                delta_orthogonal_(m.weight, sw, generator=generator)
            else:
                orthogonal_conv_(m.weight, sw, generator=generator)
            if m.weight.meanfield_init.method != "critical_normal_":
                spec = m.weight.meanfield_init
                _draw_bias(bias, layer_b2, numpy_rng(generator))
                m.weight.meanfield_init = spec.replace(
                    sigma_b2=layer_b2 if bias is not None else None,
                    kwargs=spec.kwargs + (("critical", act.name),),
                )
        if w.branch_end and n_res and w.branch_postnorm and w.branch_norm is None:
            note = (note + "; " if note else "") + "post-norm residual branch end: no depth factor"
        if factor != 1.0:
            rule = "sigma_w2, sigma_b2 / sqrt(L) (pre-norm)" if w.branch_prenorm else "sigma_w2, sigma_b2 / L"
            note = (note + "; " if note else "") + f"residual branch end: {rule}, L = {n_res}"
        if start:
            note = (note + "; " if note else "") + start
        rows.append(
            LayerInit(
                w.name,
                "weight",
                "initialised",
                act.name,
                sw,
                layer_b2 if bias is not None else None,
                m.weight.meanfield_init.method,
                factor,
                point.q_star,
                (f"{w.rule}; " if not note else f"{note}; {w.rule}; ")
                + (f"q* = {point.q_star:.4g}" if math.isfinite(point.q_star) else "critical at every q"),
            )
        )
    seen = {w.name for w in tr.weight_layers}
    for node in tr.nodes:
        if node.module is None or node.module in seen or node.kind not in ("norm", "attention", "embedding"):
            continue
        seen.add(node.module)
        m = model.get_submodule(node.module)
        if _frozen(m):
            frozen.append(node.module)
            rows.append(LayerInit(node.module, node.kind, "left alone", reason="frozen (requires_grad=False)"))
            continue
        if node.kind != "norm":
            rows.append(LayerInit(node.module, node.kind, "left alone", reason=node.reason + "; PyTorch's init kept"))
            continue
        weight, nbias = getattr(m, "weight", None), getattr(m, "bias", None)
        if not isinstance(weight, torch.Tensor):
            rows.append(LayerInit(node.module, "norm", "left alone", reason="no affine parameters"))
            continue
        gain = math.sqrt(_branch_factor(n_res, branch_norms[node.module])) if node.module in branch_norms else 1.0
        with torch.no_grad():
            weight.fill_(gain)
            if isinstance(nbias, torch.Tensor):
                nbias.zero_()
        reason = (
            f"residual branch end: weight {'L^(-1/4) (pre-norm)' if branch_norms[node.module] else '1 / sqrt(L)'}"
            f", L = {n_res}"
            if gain != 1.0
            else "weight 1, bias 0: the unit-variance signal the next layer assumes"
        )
        rows.append(LayerInit(node.module, "norm", "set", branch_factor=gain**2, reason=reason))
    tag_layers_(model)
    unsupported = tuple(f"{n.name} ({n.op}): {n.reason}" for n in tr.unsupported)
    return CriticalInit(tuple(rows), tuple(frozen), unsupported, n_res, tr.method, sigma_b2, kernel)


def recorded_spec(module: Any) -> InitSpec | None:
    """The :class:`InitSpec` recorded for a layer: on its weight (``module.weight.meanfield_init``), else
    on the module itself (``module.meanfield_init``, set by :func:`critical_init_`, :func:`tag_layers_`
    and the builders; it survives ``copy.deepcopy``, which drops tensor attributes); ``None`` without one."""
    spec = getattr(getattr(module, "weight", None), "meanfield_init", None)
    if not isinstance(spec, InitSpec):
        spec = getattr(module, "meanfield_init", None)
    return spec if isinstance(spec, InitSpec) else None


def tag_layers_(model: Any) -> Any:
    """Copy every weight's :class:`InitSpec` onto its module (``module.meanfield_init``), so that the
    record survives ``copy.deepcopy``; returns ``model``."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    for m in model.modules():
        spec = getattr(getattr(m, "weight", None), "meanfield_init", None)
        if isinstance(spec, InitSpec):
            m.meanfield_init = spec
    return model


def reinitialise_(module: Any, *, generator: Any = None) -> bool:
    """Re-run the initialiser recorded on ``module.weight`` (``meanfield_init``) with a new stream.

    Returns True when the module carried a record and was re-initialised, False otherwise (the
    module is then left as it is). The bias is redrawn ``N(0, sigma_b2)`` when the record drew it.
    """
    spec = recorded_spec(module)
    if spec is None or spec.deterministic:
        return False
    w = module.weight
    kw = dict(spec.kwargs)
    bias = getattr(module, "bias", None) if spec.sigma_b2 is not None else None
    if spec.method in ("critical_normal_", "mean_field_normal_"):
        extra = tuple((k, v) for k, v in spec.kwargs if k not in ("sigma_w2", "sigma_b2"))
        _normal(w, spec.sigma_w2, kw["sigma_b2"], bias, generator, spec.method, extra)
        module.meanfield_init = w.meanfield_init
        return True
    if spec.method == "gsm_":
        gsm_(w, kw["sigma_w2"], generator=generator)
    elif spec.method == "looks_linear_":
        looks_linear_(w, kw["sigma_w2"], generator=generator)
    elif spec.method == "orthogonal" and w.dim() > 2:
        _flat_orthogonal_(w, kw["sigma_w2"], generator)
    elif spec.method == "orthogonal":
        _orthogonal_dense_(w, kw["sigma_w2"], generator)
    elif spec.method == "delta_orthogonal_":
        delta_orthogonal_(w, kw["sigma_w2"], generator=generator)
    elif spec.method == "orthogonal_conv_":
        orthogonal_conv_(w, kw["sigma_w2"], generator=generator)
    else:
        return False
    if bias is not None:
        _draw_bias(bias, spec.sigma_b2, numpy_rng(generator))
    w.meanfield_init = spec
    module.meanfield_init = spec
    return True
