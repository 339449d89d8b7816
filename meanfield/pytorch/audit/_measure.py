"""Re-initialising a model and measuring each layer against its layer-local prediction."""

from __future__ import annotations

import math

import numpy as np

from .._torch import require_torch
from ..init import recorded_spec, reinitialise_
from ._rows import (
    _MEAN_FIELD_METHODS,
    DETECTABLE_Q_DEVIATION,
    N_INITS_MAX,
    N_INITS_MIN,
    POWER_Z,
    AuditRow,
    Z,
    verdict,
    z_for,
)

torch = require_torch()
nn = torch.nn


# --- measurement ---------------------------------------------------------------------------------------


def _weight_layers(model) -> list:
    kinds = (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.Embedding)
    return [(name, m) for name, m in model.named_modules() if isinstance(m, kinds)]


def _reinit_mode(model, init) -> str:
    if init is not None:
        if not callable(init):
            raise TypeError(f"init must be a callable init(model, generator) or None, got {type(init).__name__}")
        return "callable"
    return "recorded"


def _has_spec(module) -> bool:
    return recorded_spec(module) is not None


def _reinitialise(model, mode, init, generator, seed):
    """``init(model, generator)``; or each layer's recorded initialiser, PyTorch's ``reset_parameters``
    (seeded from ``seed``) for the layers without a record."""
    if mode == "callable":
        with torch.no_grad():
            init(model, generator)
        return
    layers = [m for _, m in _weight_layers(model)]
    for m in layers:
        if _has_spec(m):
            reinitialise_(m, generator=generator)
    plain = [m for m in layers if not _has_spec(m)]
    if plain:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            for m in plain:
                m.reset_parameters()


def _torch_default_params(module) -> tuple:
    """PyTorch's default ``reset_parameters`` law: kaiming_uniform(a = sqrt(5)) -> sigma_w2 = 1/3; bias
    U(+-1/sqrt(fan_in)) -> sigma_b2 = 1 / (3 fan_in)."""
    if isinstance(module, nn.Embedding):  # normal_(0, 1): one row per token, fan-in 1
        return (1.0, 0.0, None, "PyTorch default init (normal)")
    fan_in = module.weight[0].numel()
    sb = 0.0 if module.bias is None else 1.0 / (3.0 * fan_in)
    return (1.0 / 3.0, sb, None, "PyTorch default init (uniform)")


def _jackknife_ratio(m4: np.ndarray, m2: np.ndarray) -> tuple[float, float]:
    """kurtosis mean(m4) / mean(m2)^2 over initialisations and its jackknife standard error."""
    n = m4.size
    full = m4.mean() / m2.mean() ** 2
    loo = np.array([(m4.sum() - m4[i]) / (n - 1) / ((m2.sum() - m2[i]) / (n - 1)) ** 2 for i in range(n)])
    se = math.sqrt((n - 1) / n * np.sum((loo - loo.mean()) ** 2))
    return float(full), float(se)


def _row(name, index, quantity, samples, theory, systematic, approx, note, z) -> AuditRow:
    samples = np.asarray(samples, dtype=np.float64)
    mean = float(samples.mean())
    se = float(samples.std(ddof=1) / math.sqrt(samples.size))
    return AuditRow(
        name,
        index,
        quantity,
        mean,
        se,
        theory,
        systematic if theory is not None else 0.0,
        verdict(mean, se, theory, systematic, approx, z),
        note,
        z,
    )


def _local_statistics(module, x, out) -> tuple:
    """Per output unit ``i``: the measured ``u_i = <h_i^2>`` (mean over inputs and positions) and the
    input statistic ``a_i`` of the layer-local prediction ``E[u_i | input] = sigma_w2 a_i + sigma_b2``.

    ``a_i = <sum_{c, beta} v_beta x_c(p + beta)^2> / c_in`` over the taps that the output position
    ``p`` sees (stride, dilation, groups, padding of the module: zero padding contributes nothing,
    the other modes pad the squared input as the layer pads its input), ``c_in`` the input
    channels of unit ``i``'s group; for ``Linear``, ``<|x|^2> / in_features``.
    """
    import torch.nn.functional as F

    h = out.detach().double()
    if isinstance(module, nn.Embedding):  # h = W[token]: E[h_i^2 | tokens] = sigma_w2 (0 for padding_idx)
        n_units = h.shape[-1]
        u = h.pow(2).reshape(-1, n_units).mean(dim=0)
        looked_up = 1.0 if module.padding_idx is None else float((x != module.padding_idx).double().mean())
        return u.cpu().numpy(), np.full(n_units, looked_up)
    x = x.detach().double()
    if isinstance(module, nn.Linear):
        n_units = h.shape[-1]
        u = h.pow(2).reshape(-1, n_units).mean(dim=0)
        a = torch.full((n_units,), float(x.pow(2).sum(dim=-1).mean()) / module.in_features, dtype=torch.float64)
        return u.cpu().numpy(), a.numpy()
    n_units = h.shape[1]
    dims = len(module.kernel_size)
    u = h.pow(2).transpose(0, 1).reshape(n_units, -1).mean(dim=1)
    g = module.groups
    c_g = module.in_channels // g
    x2 = x.pow(2)
    s = x2.reshape(x2.shape[0], g, c_g, *x2.shape[2:]).sum(dim=2)  # (N, groups, *spatial)
    spec = recorded_spec(module)
    if spec is not None and spec.v is not None and spec.method in _MEAN_FIELD_METHODS:
        v = torch.as_tensor(np.asarray(spec.v, dtype=np.float64))
    else:
        v = torch.full(tuple(module.kernel_size), 1.0 / math.prod(module.kernel_size), dtype=torch.float64)
    kernel = (v / c_g).to(s.device).expand(g, 1, *v.shape).contiguous()
    conv = (F.conv1d, F.conv2d, F.conv3d)[dims - 1]
    if module.padding_mode != "zeros":
        s = F.pad(s, module._reversed_padding_repeated_twice, mode=module.padding_mode)
        padding = 0
    else:
        padding = module.padding
    per_group = conv(s, kernel, None, module.stride, padding, module.dilation, g)  # (N, groups, *out)
    a_group = per_group.transpose(0, 1).reshape(g, -1).mean(dim=1)
    a = a_group.repeat_interleave(module.out_channels // g)
    return u.cpu().numpy(), a.cpu().numpy()


def _local_row(name, index, module, rec, param, shared) -> AuditRow:
    """The layer-local ``q`` row: the measured ``<h^2>`` against its prediction from the layer's
    measured input, the standard error from the unit-wise residuals (independent given the input)."""
    u = np.stack(rec["u"])  # (K, units)
    a = np.stack(rec["a"])
    measured = float(u.mean())
    note = "predicted from the layer's measured input (layer-local)"
    if shared:
        note += "; module called more than once: its first call"
    spec = recorded_spec(module)
    if param is None:
        reason = "no mean-field initialisation declared"
        return AuditRow(name, index, "q_layer", measured, 0.0, None, 0.0, "no theory", reason, Z)
    if isinstance(module, nn.Embedding) and module.max_norm is not None:
        reason = "embedding with max_norm: rows renormalised on lookup"
        return AuditRow(name, index, "q_layer", measured, 0.0, None, 0.0, "no theory", reason, Z)
    if spec is not None and spec.method == "orthogonal_conv_":
        reason = "orthogonal_conv_ kernels correlate their taps: no prediction given one input"
        return AuditRow(name, index, "q_layer", measured, 0.0, None, 0.0, "no theory", reason, Z)
    sw, sb = param[0], param[1]
    pred = sw * a + sb
    resid = (u - pred).ravel()
    n = resid.size
    se = float(resid.std(ddof=1) / math.sqrt(n)) if n > 1 else math.inf
    theory = float(pred.mean())
    z = z_for(n) if n > 1 else Z
    return AuditRow(
        name, index, "q_layer", measured, se, theory, 0.0, verdict(measured, se, theory, 0.0, False, z), note, z
    )


def _power_n_inits(records, order, measured_w) -> int:
    """Re-initialisations for which a relative deviation :data:`DETECTABLE_Q_DEVIATION` of the first
    layer's ``q`` is flagged with power ``Phi(POWER_Z)`` (95 %): the smallest ``K`` with
    ``(Z + POWER_Z) se_1 / sqrt(K) <= DETECTABLE_Q_DEVIATION`` for the relative standard error
    ``se_1`` of one initialisation (from the units' residuals of the first layer), clipped to
    ``[N_INITS_MIN, N_INITS_MAX]``."""
    if not order:
        return N_INITS_MIN
    m = order[0]
    u, a = records[m]["u"][0], records[m]["a"][0]
    sw, sb = measured_w[m][0]
    pred = sw * a + sb
    if u.size < 2:
        return N_INITS_MAX
    scale = float(pred.mean())
    if not scale > 0:
        return N_INITS_MIN
    rel = float((u - pred).std(ddof=1) / math.sqrt(u.size)) / scale
    k = math.ceil(((Z + POWER_Z) * rel / DETECTABLE_Q_DEVIATION) ** 2)
    return int(min(max(k, N_INITS_MIN), N_INITS_MAX))
