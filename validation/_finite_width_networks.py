"""Random finite ReLU networks in the parametrisation of seed 001 (Burkholz & Dubatovka 2019).

``h^(l) = W^(l) x^(l-1) + b^(l)``, ``W_ij ~ N(0, sigma_w2)`` (unscaled by the width: He is
``sigma_w2 = 2 / N``), ``b_i ~ N(0, sigma_b2)``, ``x^(l) = relu(h^(l))``. Many independent networks
are simulated at once as stacked weight tensors on the chosen backend (NumPy or CuPy); each
network processes a batch of inputs.
"""

from __future__ import annotations

import math

import numpy as np

from .backend import get_backend, to_numpy

__all__ = ["simulate_squared_norms", "simulate_pair"]

#: Networks per stacked batch (bounded memory: batch * width^2 doubles per layer).
_BATCH_ELEMENTS = 8_000_000


def _layers(layers):
    out = []
    for layer in layers:
        if hasattr(layer, "width"):
            out.append((int(layer.width), float(layer.sigma_w2), float(layer.sigma_b2)))
        else:
            w, sw, *rest = layer
            out.append((int(w), float(sw), float(rest[0]) if rest else 0.0))
    return out


def simulate_squared_norms(inputs, layers, n_networks, inputs_per_network, backend="numpy", seed=0):
    """Squared norms ``|x^(l)|^2`` through ``n_networks`` independent random ReLU networks.

    Parameters
    ----------
    inputs : array_like, shape (n, d)
        Pool of input vectors; each network receives ``inputs_per_network`` of them drawn uniformly
        with replacement (so the input law is the empirical law of the pool).
    layers : sequence of (width, sigma_w2[, sigma_b2]) or objects with those attributes
    n_networks, inputs_per_network : int

    Returns
    -------
    ndarray, shape (n_networks, inputs_per_network, L + 1)
        Column 0 is ``|x^(0)|^2``.
    """
    be = get_backend(backend)
    xp = be.xp
    pool = np.asarray(inputs, dtype=np.float64)
    lays = _layers(layers)
    rng_np = np.random.default_rng(seed)
    rng = be.rng(seed + 1)
    out = np.empty((n_networks, inputs_per_network, len(lays) + 1))
    widest = max([pool.shape[1]] + [w for w, _, _ in lays])
    batch = max(1, _BATCH_ELEMENTS // (widest * widest))
    for start in range(0, n_networks, batch):
        b = min(batch, n_networks - start)
        idx = rng_np.integers(0, pool.shape[0], size=(b, inputs_per_network))
        x = be.asarray(pool[idx])  # (b, k, d)
        norms = [to_numpy((x * x).sum(-1))]
        for width, sw, sb in lays:
            w = rng.standard_normal((b, x.shape[-1], width)) * math.sqrt(sw)
            h = xp.matmul(x, w)
            if sb > 0:
                h = h + rng.standard_normal((b, 1, width)) * math.sqrt(sb)
            x = xp.maximum(h, 0.0)
            norms.append(to_numpy((x * x).sum(-1)))
        out[start : start + b] = np.stack(norms, axis=-1)
    return out


def simulate_pair(x1, x2, width, sigma_w2, sigma_b2, n_networks, backend="numpy", seed=0):
    """One ReLU layer applied to two inputs by ``n_networks`` random networks.

    Returns
    -------
    (inner, cosine) : two ndarrays of shape (n_networks,)
        ``<x1', x2'>`` and the cosine similarity of the two outputs (0 when one output is zero).
    """
    be = get_backend(backend)
    xp = be.xp
    rng = be.rng(seed)
    x = be.asarray(np.stack([x1, x2]))  # (2, d)
    d = x.shape[1]
    inner = np.empty(n_networks)
    cosine = np.empty(n_networks)
    batch = max(1, _BATCH_ELEMENTS // (d * width))
    for start in range(0, n_networks, batch):
        b = min(batch, n_networks - start)
        w = rng.standard_normal((b, d, width)) * math.sqrt(sigma_w2)
        h = xp.matmul(x[None], w)  # (b, 2, width)
        if sigma_b2 > 0:
            h = h + rng.standard_normal((b, 1, width)) * math.sqrt(sigma_b2)
        y = xp.maximum(h, 0.0)
        ip = (y[:, 0] * y[:, 1]).sum(-1)
        den = xp.sqrt((y[:, 0] ** 2).sum(-1) * (y[:, 1] ** 2).sum(-1))
        inner[start : start + b] = to_numpy(ip)
        den = to_numpy(den)
        ipn = to_numpy(ip)
        cosine[start : start + b] = np.divide(ipn, den, out=np.zeros(b), where=den > 0)
    return inner, cosine
