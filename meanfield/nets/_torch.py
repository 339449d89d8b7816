"""PyTorch modules of the layer kinds (imported lazily: ``pip install "meanfield-theory[torch]"``).

Each module computes, in float64 and channels-last layout ``(batch, *spatial, channels)``, the same
operations as its layer's NumPy sampler, so that a network's module equals
:meth:`meanfield.nets.Network.forward` to float64 rounding given the same weights.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..backend import to_numpy

__all__: list[str] = []


def require_torch():
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError('meanfield.nets modules need PyTorch: pip install "meanfield-theory[torch]"') from exc
    return torch


def tensor(x: Any, k: int | None = None):
    """``x[k]`` (or ``x``) as a float64 torch tensor (a host copy of any backend's array)."""
    torch = require_torch()
    a = np.asarray(to_numpy(x), dtype=np.float64)
    if k is not None:
        a = a[k]
    return torch.tensor(np.ascontiguousarray(a), dtype=torch.float64)


def _classes():
    torch = require_torch()
    nn = torch.nn

    class DenseModule(nn.Module):
        """``x @ W^T + b`` on the channel axis."""

        def __init__(self, weight, bias=None):
            super().__init__()
            self.weight = nn.Parameter(weight)
            self.bias = None if bias is None else nn.Parameter(bias)

        def forward(self, x):
            lead = x.shape[:-1]
            y = (x.reshape(-1, x.shape[-1]) @ self.weight.T).reshape(*lead, self.weight.shape[0])
            return y if self.bias is None else y + self.bias

    class MatrixModule(nn.Module):
        """A fixed channel matrix ``x @ M^T`` (a buffer), or a trainable one (a parameter)."""

        def __init__(self, matrix, trainable=False):
            super().__init__()
            if trainable:
                self.matrix = nn.Parameter(matrix)
            else:
                self.register_buffer("matrix", matrix)

        def forward(self, x):
            lead = x.shape[:-1]
            return (x.reshape(-1, x.shape[-1]) @ self.matrix.transpose(-1, -2)).reshape(*lead, self.matrix.shape[-2])

    class ConvModule(nn.Module):
        """Periodic cross-correlation in any dimension by rolls (the taps with ``v_beta > 0``)."""

        def __init__(self, kernel, bias, taps):
            super().__init__()
            self.kernel = nn.Parameter(kernel)
            self.bias = nn.Parameter(bias)
            self.taps = taps  # [(tap index, offset beta)]

        def forward(self, x):
            sd = len(self.taps[0][1])
            dims = tuple(range(1, 1 + sd))
            out = None
            for tap, beta in self.taps:
                k = self.kernel[tap]
                shifted = torch.roll(x, tuple(-b for b in beta), dims=dims)
                lead = shifted.shape[:-1]
                term = (shifted.reshape(-1, shifted.shape[-1]) @ k.T).reshape(*lead, k.shape[0])
                out = term if out is None else out + term
            return out + self.bias

    class ActModule(nn.Module):
        def __init__(self, base, param, fallback):
            super().__init__()
            self.base, self.param, self.fallback = base, param, fallback

        def forward(self, x):
            if self.base == "linear":
                return x
            if self.base == "tanh":
                return torch.tanh(x)
            if self.base == "relu":
                return torch.clamp_min(x, 0.0)
            if self.base == "leaky_relu":
                return torch.where(x > 0, x, self.param * x)
            if self.base == "hard_tanh":
                return torch.clamp(x, -1.0, 1.0)
            if self.base == "erf":
                return torch.special.erf(x)
            return self.fallback(x)

    class ReplicateModule(nn.Module):
        def __init__(self, replicas):
            super().__init__()
            self.replicas = replicas

        def forward(self, x):
            return torch.repeat_interleave(x, self.replicas, dim=-1)

    class PoolModule(nn.Module):
        def forward(self, x):
            return x.mean(dim=tuple(range(1, x.ndim - 1)))

    class SubsampleModule(nn.Module):
        def __init__(self, stride):
            super().__init__()
            self.stride = stride

        def forward(self, x):
            sd = x.ndim - 2
            return x[(slice(None),) + (slice(None, None, self.stride),) * sd + (slice(None),)]

    class ResidualModule(nn.Module):
        """``skip(x) + scale * branch(x)``."""

        def __init__(self, branch, skip, scale):
            super().__init__()
            self.branch = nn.Sequential(*branch)
            self.skip_kind = "none" if skip is None else ("identity" if isinstance(skip, str) else "matrix")
            if self.skip_kind == "matrix":
                self.register_buffer("skip", skip)
            self.scale = scale

        def forward(self, x):
            y = self.branch(x)
            if self.scale != 1.0:
                y = self.scale * y
            if self.skip_kind == "none":
                return y
            if self.skip_kind == "identity":
                return x + y
            lead = x.shape[:-1]
            return (x.reshape(-1, x.shape[-1]) @ self.skip.T).reshape(*lead, self.skip.shape[0]) + y

    class HyperResidualModule(nn.Module):
        """Orhan's eq. 26 stack (see :class:`meanfield.nets.HyperResidual`)."""

        def __init__(self, weights, biases, skips, longs):
            super().__init__()
            self.layers = nn.ModuleList(DenseModule(w, b) for w, b in zip(weights, biases))
            self.skips = None if skips is None else [MatrixModule(q) for q in skips]
            self.longs = self.skips if longs is None else [MatrixModule(p) for p in longs]
            extra = [m for m in (self.skips or []) + (self.longs or [])]
            self.fixed = nn.ModuleList(extra)

        def forward(self, x):
            history, h = [x], x
            for idx, layer in enumerate(self.layers):
                level = idx + 1
                new = torch.clamp_min(layer(h), 0.0)
                new = new + (h if self.skips is None else self.skips[idx](h))
                if level >= 2:
                    if self.longs is None:
                        far = sum(history[:-1])
                    else:
                        far = sum(self.longs[k](xk) for k, xk in enumerate(history[:-1]))
                    new = new + far / (level - 1)
                h = new
                history.append(h)
            return h

    return {
        "Dense": DenseModule,
        "Matrix": MatrixModule,
        "Conv": ConvModule,
        "Act": ActModule,
        "Replicate": ReplicateModule,
        "Pool": PoolModule,
        "Subsample": SubsampleModule,
        "Residual": ResidualModule,
        "HyperResidual": HyperResidualModule,
    }


_CACHE: dict = {}


def module_class(name: str):
    """The module class ``name`` (built on first use, so that importing meanfield.nets needs no torch)."""
    if not _CACHE:
        _CACHE.update(_classes())
    return _CACHE[name]


def network_module(net, weights, k: int):
    """``nn.Sequential`` of every layer's module for network ``k`` of ``weights``."""
    torch = require_torch()
    return torch.nn.Sequential(*(layer.module(p, k) for layer, p in zip(net.layers, weights.params)))
