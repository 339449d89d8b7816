"""The layer-local check of ``nn.MultiheadAttention``'s packed in-projection (queries, keys, values).

``F.multi_head_attention_forward`` applies ``in_proj_weight`` inside the module, so no ``Linear``
module is called for it; the module's forward hook sees the query, key and value inputs, and each
projection ``h = x W_p^T + b_p`` (``W_p`` the ``p``-th block of ``embed_dim`` rows) is a linear map
of the measured input: the rule of the ``Linear`` layer-local row applies to each of them. The
out-projection is applied inside the same function (its ``Linear`` module is never called); its
input, the heads' concatenated attention output, is recomputed from the hook's inputs and
keyword arguments by the same function with the out-projection replaced by the identity, and its
output is the module's.
"""

from __future__ import annotations

import math

import numpy as np

from .._torch import require_torch
from ._rows import AuditRow, Z, verdict, z_for

torch = require_torch()
nn = torch.nn

#: The projections of the packed in-projection, in ``in_proj_weight``'s row order.
PROJECTIONS = ("q", "k", "v")

#: PyTorch's default ``xavier_uniform_`` on the ``(3 e, e)`` packed weight: variance ``2 / (4 e)``,
#: i.e. ``fan_in * E W^2 = 1/2``.
XAVIER_PACKED_SIGMA_W2 = 0.5


def attention_modules(model) -> list:
    """``(name, module)`` of every ``nn.MultiheadAttention`` with one packed in-projection."""
    return [
        (name, m)
        for name, m in model.named_modules()
        if isinstance(m, nn.MultiheadAttention) and m._qkv_same_embed_dim and m.in_proj_weight is not None
    ]


def reinitialise_attention(modules, mode: str, generator) -> None:
    """Re-draw each packed in-projection by PyTorch's law (``xavier_uniform_``); the biases, zero at
    PyTorch's initialisation, are left as they are. A custom ``init`` (``mode == "callable"``) does
    its own re-drawing."""
    if mode == "callable":
        return
    with torch.no_grad():
        for _, m in modules:
            nn.init.xavier_uniform_(m.in_proj_weight, generator=generator)


def projection_statistics(module, inputs) -> list:
    """Per projection: (``u_i = <h_i^2>`` per unit, ``a = <|x|^2> / e``) from the hook's inputs."""
    e = module.embed_dim
    w = module.in_proj_weight.detach().double()
    b = None if module.in_proj_bias is None else module.in_proj_bias.detach().double()
    out = []
    for p, x in enumerate(inputs[:3]):
        x = x.detach().double()
        h = torch.nn.functional.linear(x, w[p * e : (p + 1) * e], None if b is None else b[p * e : (p + 1) * e])
        u = h.pow(2).reshape(-1, e).mean(dim=0).cpu().numpy()
        out.append((u, float(x.pow(2).sum(dim=-1).mean()) / e))
    return out


_INPUT_NAMES = ("query", "key", "value")


def hook_inputs(args, kwargs) -> list:
    """The query, key and value a forward hook (``with_kwargs=True``) sees, positional or by keyword."""
    inputs = list(args[:3])
    inputs += [kwargs[n] for n in _INPUT_NAMES[len(inputs) :] if n in kwargs]
    return inputs if len(inputs) == 3 and all(isinstance(t, torch.Tensor) for t in inputs) else []


def out_projection_statistics(module, inputs, kwargs, out) -> tuple:
    """(``u_i = <o_i^2>`` per unit of the module's output, ``a = <|z|^2> / e``) for the out-projection
    ``o = z W_O^T + b_O``, ``z`` the heads' attention output recomputed without the out-projection."""
    e = module.embed_dim
    q, k, v = (t.detach() for t in inputs)
    if module.batch_first and q.dim() == 3:
        q, k, v = (t.transpose(0, 1) for t in (q, k, v))
    eye = torch.eye(e, dtype=q.dtype, device=q.device)
    z = torch.nn.functional.multi_head_attention_forward(
        q,
        k,
        v,
        e,
        module.num_heads,
        module.in_proj_weight.detach(),
        None if module.in_proj_bias is None else module.in_proj_bias.detach(),
        module.bias_k,
        module.bias_v,
        module.add_zero_attn,
        0.0,
        eye,
        torch.zeros(e, dtype=q.dtype, device=q.device),
        training=False,
        key_padding_mask=kwargs.get("key_padding_mask"),
        need_weights=False,
        attn_mask=kwargs.get("attn_mask"),
        is_causal=bool(kwargs.get("is_causal", False)),
    )[0]
    o = (out[0] if isinstance(out, tuple) else out).detach().double()
    u = o.pow(2).reshape(-1, e).mean(dim=0).cpu().numpy()
    return u, float(z.double().pow(2).sum(dim=-1).mean()) / e


def declared_params(module, mode: str, measured: list) -> tuple:
    """(sigma_w2, sigma_b2, note) per projection: PyTorch's law, or the measured variances for a custom ``init``."""
    e = module.embed_dim
    b = module.in_proj_bias
    rows = []
    for p in range(3):
        sb = 0.0 if b is None else float(b.detach().double()[p * e : (p + 1) * e].pow(2).mean())
        if mode == "callable":
            sw = float(np.mean([m[p] for m in measured]))
            rows.append((sw, sb, "theory from the measured weight variance"))
        else:
            rows.append((XAVIER_PACKED_SIGMA_W2, sb, "PyTorch default init (xavier_uniform_)"))
    return rows


def measured_variance(module) -> list:
    """``fan_in * E W_p^2`` of each projection of the current draw."""
    e = module.embed_dim
    w = module.in_proj_weight.detach().double()
    return [float(w[p * e : (p + 1) * e].pow(2).mean()) * e for p in range(3)]


def projection_rows(name: str, index: int, rec: list, params: list, shared: bool) -> list:
    """The ``q_layer`` rows of the three projections and of the out-projection (``rec[k][3]``,
    ``params[3]`` None without a declaration), as the ``Linear`` row: unit-wise residuals."""
    rows = []
    for p, tag in enumerate(PROJECTIONS + ("out",)):
        u = np.stack([r[p][0] for r in rec])  # (K, units)
        a = np.array([r[p][1] for r in rec])[:, None]
        label = f"{name}.out_proj" if tag == "out" else f"{name}.in_proj.{tag}"
        if params[p] is None:
            reason = "no mean-field initialisation declared"
            rows.append(AuditRow(label, index, "q_layer", float(u.mean()), 0.0, None, 0.0, "no theory", reason, Z))
            continue
        sw, sb, note = params[p]
        pred = sw * a + sb
        resid = (u - pred).ravel()
        n = resid.size
        se = float(resid.std(ddof=1) / math.sqrt(n)) if n > 1 else math.inf
        measured, theory = float(u.mean()), float(np.broadcast_to(pred, u.shape).mean())
        what = (
            "out-projection, predicted from the recomputed attention output"
            if tag == "out"
            else (f"{tag}-projection of the packed in_proj_weight, predicted from the module's input")
        )
        note = f"{what}; {note}"
        if shared:
            note += "; module called more than once: its first call"
        z = z_for(n) if n > 1 else Z
        rows.append(
            AuditRow(
                label,
                index,
                "q_layer",
                measured,
                se,
                theory,
                0.0,
                verdict(measured, se, theory, 0.0, False, z),
                note,
                z,
            )
        )
    return rows
