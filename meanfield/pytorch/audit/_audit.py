"""``audit(model, inputs)``: re-initialise, measure every layer and compare with theory."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from meanfield._deprecate import renamed_kwargs

from ..._checks import check_bool, check_int, check_rng
from .._torch import require_torch
from ._attention import (
    attention_modules,
    declared_params,
    hook_inputs,
    measured_variance,
    out_projection_statistics,
    projection_rows,
    projection_statistics,
    reinitialise_attention,
)
from ._inputs import prepare_inputs
from ._measure import (
    _has_spec,
    _jackknife_ratio,
    _local_row,
    _local_statistics,
    _power_n_inits,
    _reinit_mode,
    _reinitialise,
    _row,
    _torch_default_params,
    _weight_layers,
)
from ._rows import FINITE_WIDTH_BIAS, MAX_INPUTS, N_INITS_MIN, Audit, AuditRow, verdict, z_for
from ._theory import _kurtosis_theory, _layer_params, _NoTheory, _phase, _State, _Theory, _walk_obstacle

torch = require_torch()
nn = torch.nn


@renamed_kwargs(n_inits="n_networks")
def audit(
    model: Any,
    inputs: Any = "digits",
    n_inits: int | None = None,
    rng: Any = None,
    backward: bool = True,
    *,
    init: Any = None,
    n_inputs: int = MAX_INPUTS,
    inplace: bool = False,
) -> Audit:
    """Measure a model's signal propagation over re-initialisations and compare it with mean-field theory.

    Parameters
    ----------
    model : torch.nn.Module
        The model. The audit re-initialises a deep copy (``copy.deepcopy``) in ``eval()`` mode;
        the model itself is unchanged. The audit runs PyTorch with one intra-op thread (its
        batches are small), restoring the setting afterwards.
    inputs : "digits", torch.Tensor, numpy array or DataLoader batch
        See :func:`prepare_inputs`; the first ``n_inputs`` are used.
    n_networks : int or None
        Re-initialisations (2 to 10^4); the standard errors are over them. ``None`` (default): the
        power rule of the module docstring (10 to 200).
    rng : None, int, SeedSequence or numpy.random.Generator
        One independent stream per re-initialisation is spawned from it; each seeds a
        ``torch.Generator`` with ``int(stream.integers(2**63))``.
    backward : bool
        Also record gradient second moments (cotangent ``v ~ N(0, 1)`` at the output).
    init : callable, optional
        ``init(model, generator)`` re-initialises the model. Default: each layer's initialiser as
        recorded on its weight (``weight.meanfield_init``, set by :mod:`meanfield.pytorch.init`),
        and PyTorch's ``reset_parameters`` for a layer without a record (theory: its uniform law,
        ``sigma_w2 = 1/3``, ``sigma_b2 = 1 / (3 fan_in)``).
    n_inputs : int
        Inputs used (2 to 64).
    inplace : bool
        Re-initialise ``model`` itself instead of a copy (its parameters are then overwritten, its
        training mode restored); for models too large to copy.

    Returns
    -------
    Audit
        Per layer: ``q``, ``q_layer`` (layer-local), ``c``, ``kurtosis``, ``grad`` rows with verdicts;
        the phase and depth scales; ``table()``, ``plot()``.

    Raises
    ------
    TypeError
        ``model`` not an ``nn.Module``; bad ``inputs``, ``rng``, ``backward``, ``init``.
    ValueError
        ``n_networks`` out of range; inputs the model cannot take (wrong feature count, channels or
        shape: the forward pass's error is quoted); a model without weight layers or with
        parameters on the meta device; a forward pass that gives NaN or infinity.

    Notes
    -----
    The theory is that of the module docstring: Xiao et al. 2018 eqs. 2.2-2.7 and 2.16, Grzejdziak 2023 Prop. 4.3,
    and the residual recursion for identity skips (Orhan's architectures, eqs. 25-26).
    The theory's weight and bias variances are those the initialisers declared. Every layer is
    re-drawn (by its recorded initialiser, or by ``init``), so changes made to the model's weights
    after initialisation are not seen; a layer that ``init`` draws at another scale than its
    declaration is flagged. With a custom ``init`` whose layers carry no declaration, the theory
    uses the measured ``fan_in * E W^2`` and ``E b^2`` (averaged over the re-initialisations) and
    cannot flag a scale.

    Examples
    --------
    >>> import torch
    >>> from meanfield.pytorch import mlp, audit
    >>> net = mlp(128, 6, "tanh", init="critical", sigma_b2=0.05)
    >>> result = audit(net, "digits", n_networks=4, rng=0)
    >>> result.phase
    'critical'
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if n_inits is not None:
        n_inits = check_int(n_inits, "n_networks", 2, 10**4)
    backward = check_bool(backward, "backward")
    inplace = check_bool(inplace, "inplace")
    rng = check_rng(rng)
    mode = _reinit_mode(model, init)
    if any(t.is_meta for t in list(model.parameters()) + list(model.buffers())):
        raise ValueError(
            "model has parameters on the meta device (shapes without values): materialise them first, "
            "e.g. model.to_empty(device='cpu') and an initialiser"
        )
    if not inplace:
        import copy

        model = copy.deepcopy(model)
    x = prepare_inputs(model, inputs, n_inputs)
    d = int(x.shape[0])
    layers = _weight_layers(model)
    if not layers:
        raise ValueError("model has no Linear or Conv layer to audit")
    auto = n_inits is None
    was_training = model.training
    model.eval()
    records: dict = {m: {"q": [], "gram": [], "m4": [], "g": [], "u": [], "a": []} for _, m in layers}
    order: list = []
    calls: dict = {}
    measured_w: dict = {m: [] for _, m in layers}
    attn = attention_modules(model)  # packed in-projections: run inside F.multi_head_attention_forward
    attn_rec: dict = {m: [] for _, m in attn}
    attn_w: dict = {m: [] for _, m in attn}
    attn_index: dict = {}
    attn_calls: dict = {}

    def attention_hook(module, args, kwargs, out):
        attn_calls[module] = attn_calls.get(module, 0) + 1
        inp = hook_inputs(args, kwargs)
        if attn_calls[module] > 1 or not inp:
            return
        attn_index[module] = len(order)  # after the weight layers called before it
        with torch.no_grad():
            stats = projection_statistics(module, inp)
            stats.append(out_projection_statistics(module, inp, kwargs, out))
        attn_rec[module].append(stats)

    def forward_hook(module, inp, out):
        calls[module] = calls.get(module, 0) + 1
        if calls[module] > 1:
            return
        order.append(module)
        rec = records[module]
        h = out.detach().double().reshape(d, out.shape[1], -1).cpu().numpy()
        h2 = h**2
        rec["q"].append(np.mean(h2, axis=(1, 2)))
        rec["gram"].append(np.einsum("acp,bcp->ab", h, h) / (h.shape[1] * h.shape[2]))
        rec["m4"].append(np.mean(h**4, axis=(1, 2)))
        u, a = _local_statistics(module, inp[0], out)
        rec["u"].append(u)
        rec["a"].append(a)
        if backward and out.requires_grad:
            out.register_hook(
                lambda g, rec=rec: rec["g"].append(
                    float(
                        np.mean(np.mean(g.detach().double().reshape(d, g.shape[1], -1).cpu().numpy() ** 2, axis=(1, 2)))
                    )
                )
            )

    handles = [m.register_forward_hook(forward_hook) for _, m in layers]
    handles += [m.register_forward_hook(attention_hook, with_kwargs=True) for _, m in attn]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # batches of <= 64 inputs: thread start-up would dominate
    k, n_inits_target = 0, N_INITS_MIN
    try:
        while True:
            if not auto and k >= n_inits:
                break
            if auto and k >= 1 and k >= n_inits_target:
                break
            (stream,) = rng.spawn(1)  # the k-th child: the same streams as rng.spawn(n_inits)
            seed = int(stream.integers(2**63))
            generator = torch.Generator(device="cpu").manual_seed(seed)
            _reinitialise(model, mode, init, generator, seed)
            if attn:  # its own stream: the other layers' draws and the cotangent stay as without it
                reinitialise_attention(attn, mode, torch.Generator(device="cpu").manual_seed((seed + 1) % 2**63))
                for _, m in attn:
                    attn_w[m].append(measured_variance(m))
            for _, m in layers:
                w = m.weight.detach().double()
                b = getattr(m, "bias", None)
                bias = 0.0 if b is None else float(b.detach().double().pow(2).mean())
                fan_in = 1 if isinstance(m, nn.Embedding) else w[0].numel()
                measured_w[m].append((float(w.pow(2).mean()) * fan_in, bias))
            calls.clear()
            attn_calls.clear()
            if k > 0:
                order.clear()
            xin = x.clone()
            with torch.set_grad_enabled(backward):
                try:
                    out = model(xin)
                except (RuntimeError, IndexError) as exc:
                    raise ValueError(
                        f"inputs of shape {tuple(x.shape)} cannot be fed to the model: "
                        f"{(str(exc).splitlines() or [''])[0]}"
                    ) from exc
                if not isinstance(out, torch.Tensor):
                    raise ValueError(f"model must return a tensor, got {type(out).__name__}")
                if not bool(torch.isfinite(out).all()):
                    raise ValueError("the model's output is NaN or infinite for these inputs and this initialisation")
                if backward:
                    cot = torch.randn(out.shape, generator=generator, dtype=out.dtype)
                    out.backward(cot.to(out.device))
            model.zero_grad(set_to_none=True)
            if auto and k == 0:
                n_inits_target = _power_n_inits(records, order, measured_w)
            k += 1
    finally:
        for h in handles:
            h.remove()
        model.train(was_training)
        torch.set_num_threads(threads)
    n_inits = k
    shared = {m for m, n in calls.items() if n > 1}

    # theory parameters
    source: dict = {}
    params = {}
    for _, m in layers:
        if mode == "recorded" and not _has_spec(m):
            params[m] = _torch_default_params(m)
            source["PyTorch default init"] = 1
            continue
        p = _layer_params(m, source)
        if p is None and mode == "callable":
            sw = float(np.mean([a for a, _ in measured_w[m]]))
            sb = float(np.mean([b for _, b in measured_w[m]]))
            p = (sw, sb, None, "theory from the measured weight variance")
            source["measured weight variances"] = 1
        if p is not None:
            params[m] = p
    src = ", ".join(k if k != "declared" else "the initialisers' declarations" for k in source) or "nothing"

    theory = _Theory(params, d)
    x_np = x.detach().double().cpu().numpy().reshape(d, -1)
    first = layers[0][1]
    stopped_reason = _walk_obstacle(model, x)
    try:
        if stopped_reason:
            raise _NoTheory(stopped_reason)
        if isinstance(first, (nn.Conv1d, nn.Conv2d)):
            c_in = first.in_channels
            shape = tuple(int(s) for s in x.shape[2:])
            xs = x.detach().double().cpu().numpy().reshape(d, c_in, -1)  # (D, C, P)
            cov0 = np.einsum("acp,bcq->apbq", xs, xs).reshape(d * xs.shape[2], d * xs.shape[2]) / c_in
            s0 = _State(cov0, xs.mean(axis=1).reshape(-1), shape, False)
        else:
            s0 = _State(x_np @ x_np.T / x_np.shape[1], x_np.mean(axis=1), (), False)
        theory.walk(model, s0)
    except _NoTheory as exc:
        stopped_reason = str(exc)
    except ValueError as exc:  # e.g. a covariance beyond the float64 range: measured, not guessed
        stopped_reason = f"theory not computable: {(str(exc).splitlines() or [''])[0]}"
    grads = theory.backward() if (backward and theory.plain and not stopped_reason) else {}

    # kurtosis theory (Grzejdziak 2023 Prop. 4.3): Linear stack, Gaussian weights, no bias, relu-family
    kurt_theory = _kurtosis_theory(model, layers, params, theory, stopped_reason)

    name_of = {m: n for n, m in layers}
    widths = {m: getattr(m, "in_features", getattr(m, "in_channels", math.inf)) for _, m in layers}
    rows = []
    z = z_for(n_inits)
    n_eff = math.inf
    for index, m in enumerate(order, start=1):
        if index > 1:
            n_eff = min(n_eff, widths[m])
        rec = records[m]
        q_k = np.stack(rec["q"])  # (K, D)
        q_meas = q_k.mean(axis=1)
        name = name_of[m] or type(m).__name__
        state = theory.out.get(m)
        note = params.get(m, (None, None, None, ""))[3]
        if m in shared:
            state, note = None, "module called more than once: first call measured, no theory"
        elif state is None:
            note = stopped_reason or note or "no mean-field initialisation declared"
        approx = bool(state is not None and state.approximate)
        if approx:
            note = "zero padding: computed as circular, approximate at the borders"
        # q
        th_q = None
        if state is not None:
            p = state.positions
            diag = np.diag(state.cov).reshape(d, p).mean(axis=1)
            th_q = float(diag.mean())
        rows.append(_row(name, index, "q", q_meas, th_q, FINITE_WIDTH_BIAS(th_q or 0.0, index, n_eff), approx, note, z))
        rows.append(_local_row(name, index, m, rec, params.get(m), m in shared))
        # c
        g_ab = np.stack(rec["gram"])  # (K, D, D)
        iu = np.triu_indices(d, 1)
        gd = np.diagonal(g_ab, axis1=1, axis2=2)
        den = np.sqrt(gd[:, :, None] * gd[:, None, :])
        corr = np.divide(g_ab, den, out=np.zeros_like(g_ab), where=den > 0)  # a silent (all-zero) signal: 0
        c_k = corr[:, iu[0], iu[1]].mean(axis=1)
        th_c = None
        if state is not None:
            p = state.positions
            blocks = state.cov.reshape(d, p, d, p)
            kab = np.einsum("apbp->ab", blocks) / p
            if np.all(np.diag(kab) > 0):
                th_c = float((kab / np.sqrt(np.outer(np.diag(kab), np.diag(kab))))[iu].mean())
        silent = bool(np.any(q_k.mean(axis=0) == 0))
        cnote = "undefined for a zero signal (reported as 0)" if silent else note
        rows.append(
            _row(
                name, index, "c", c_k, None if silent else th_c, FINITE_WIDTH_BIAS(1.0, index, n_eff), approx, cnote, z
            )
        )
        # kurtosis
        m4 = np.stack(rec["m4"])  # (K, D)
        if silent:
            kval, kerr, th_k = 0.0, 0.0, None
        else:
            kur, kse = zip(*(_jackknife_ratio(m4[:, a], q_k[:, a]) for a in range(d)))
            kval, kerr = float(np.mean(kur)), float(math.sqrt(np.sum(np.square(kse))) / d)
            th_k = kurt_theory.get(m)
        rows.append(
            AuditRow(
                name,
                index,
                "kurtosis",
                kval,
                kerr,
                th_k,
                0.0,
                verdict(kval, kerr, th_k, 0.0, approx, z),
                "Grzejdziak 2023 Prop. 4.3 (exact at finite width); jackknife s.e., optimistic for large kurtosis"
                if th_k is not None
                else "undefined for a zero signal (reported as 0)"
                if silent
                else "kurtosis recursion applies to bias-free Gaussian ReLU-family Linear stacks only",
                z,
            )
        )
        # gradients
        if backward and rec["g"]:
            g_k = np.array(rec["g"])
            th_g = None
            gnote = note
            if m in grads and state is not None:
                th_g = float(grads[m].mean())
            elif state is not None:
                gnote = "backward theory for plain stacks only"
            depth_total = len(order)
            rows.append(
                _row(
                    name, index, "grad", g_k, th_g, FINITE_WIDTH_BIAS(th_g or 0.0, depth_total, n_eff), approx, gnote, z
                )
            )

    n_projections = 0
    for name, m in attn:
        if attn_rec[m]:
            out_param = params.get(m.out_proj)
            out_param = None if out_param is None else (out_param[0], out_param[1], out_param[3])
            declared = declared_params(m, mode, attn_w[m]) + [out_param]
            rows += projection_rows(name, attn_index[m], attn_rec[m], declared, False)
            n_projections += 4
    rows.sort(key=lambda r: r.index)  # stable: each attention's rows after the layer called before it

    phase, chi_1, xi_q, xi_c = _phase(theory, params)
    n_dropped = len(layers) - len(order) - sum(1 for _, m in attn if attn_rec[m] and m.out_proj not in calls)
    if n_dropped:
        src += f"; {n_dropped} layer(s) never called"
    return Audit(
        rows=tuple(rows),
        layers=tuple(name_of[m] for m in order),
        depth=len(order),
        phase=phase,
        chi_1=chi_1,
        xi_q=xi_q,
        xi_c=xi_c,
        n_inits=n_inits,
        n_inputs=d,
        source=src,
        n_checked=len({r.layer for r in rows if r.verdict in ("ok", "FAIL")}),
        n_weight_layers=len(order) + n_projections,
    )
