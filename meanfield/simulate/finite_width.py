"""Random finite ReLU networks in the parametrisation of Burkholz & Dubatovka 2019 (Burkholz & Dubatovka 2019).

``h^(l) = W^(l) x^(l-1) + b^(l)``, ``W_ij ~ N(0, sigma_w2 / fan_in)``, ``b_i ~ N(0, sigma_b2)``,
``x^(l) = relu(h^(l))``. Many independent networks are simulated at once as stacked weight tensors
on the chosen backend (NumPy, CuPy, PyTorch or ``array_api_strict``: every array operation, the
choice of inputs included, runs on it), drawn by :func:`meanfield.init.dense_weights`; each network
processes a batch of inputs.

Parametrisation: like every simulator and :mod:`meanfield.finite_width` itself, these take the
library's fan-in-scaled ``sigma_w2`` (He = 2); a layer's ``fan_in`` defaults to its width, as in
:func:`meanfield.finite_width.expected_squared_norm`, so the same ``layers`` list goes to the
theory and to the simulation. Burkholz & Dubatovka 2019 writes the per-weight variance ``Var W_ij`` (He = ``2 / N``);
:func:`meanfield.finite_width.sigma_w2_from_unscaled` converts it at the call. The weights are
drawn with the per-weight variance :func:`meanfield.finite_width.unscaled_sigma_w2` ``(sigma_w2,
fan_in)``.

Randomness: ``rng`` is None, an int, a SeedSequence or a NumPy Generator (the rule of
:mod:`meanfield.backend`; an int ``n`` gives the numbers of ``numpy.random.default_rng(n)``).
Each chunk of networks draws from its own child streams spawned off it (input choice and weights),
never from seeds computed by arithmetic.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from meanfield import Result
from meanfield import finite_width as fw
from meanfield.backend import Backend, get_backend, spawn_sequences, to_numpy
from meanfield.checks import as_float_array, check_int, check_rng, check_variance
from meanfield.init import dense_weights

from ._common import check_elements, check_work

__all__ = ["PairSimulation", "simulate_pair", "simulate_squared_norms"]

#: Networks per stacked batch (bounded memory: batch * width^2 doubles per layer).
_BATCH_ELEMENTS = 8_000_000
#: Squared norms are trusted down to this value (below: subnormal float64, precision lost).
_NORM_MIN = np.finfo(np.float64).tiny * 2.0**53


def _layers(layers):
    """``(width, per-weight variance, sigma_b2)`` of each layer (Layer, an object with those fields,
    or a ``(width, sigma_w2[, sigma_b2[, fan_in]])`` tuple; ``fan_in`` defaults to the width)."""
    if isinstance(layers, (str, bytes)) or not hasattr(layers, "__iter__"):
        raise ValueError(f"layers must be a sequence of (width, sigma_w2[, sigma_b2[, fan_in]]), got {layers!r}")
    out = []
    for i, layer in enumerate(layers):
        if hasattr(layer, "width"):
            w, sw = layer.width, layer.sigma_w2
            sb, fi = getattr(layer, "sigma_b2", 0.0), getattr(layer, "fan_in", None)
        else:
            if isinstance(layer, (str, bytes)) or not hasattr(layer, "__len__") or len(layer) not in (2, 3, 4):
                raise ValueError(f"layers[{i}] must be (width, sigma_w2[, sigma_b2[, fan_in]]), got {layer!r}")
            w, sw, *rest = layer
            sb = rest[0] if rest else 0.0
            fi = rest[1] if len(rest) > 1 else None
        w = check_int(w, "layers width", 1)
        sw = check_variance(sw, "layers sigma_w2")
        fi = w if fi is None else check_int(fi, "layers fan_in", 1)
        out.append((w, fw.unscaled_sigma_w2(sw, fi), check_variance(sb, "layers sigma_b2")))
    if not out:
        raise ValueError("layers must contain at least one layer")
    return out


def _check_norms(sq, live, layer):
    """Squared norms must be finite and, where the signal is non-zero, not subnormal."""
    if not np.all(np.isfinite(sq)) or np.any(live & (sq < _NORM_MIN)):
        raise ValueError(
            f"squared norms leave the float64 range at layer {layer} (sigma_w2 or the inputs too large, or "
            "the signal vanishing in a deep network); rescale sigma_w2 / the inputs or use fewer layers"
        )


def simulate_squared_norms(
    inputs: ArrayLike,
    layers: Sequence[Any],
    n_networks: int,
    inputs_per_network: int,
    *,
    backend: str | Backend = "numpy",
    rng: Any = None,
) -> np.ndarray:
    """Squared norms ``|x^(l)|^2`` through ``n_networks`` independent random ReLU networks.

    Parameters
    ----------
    inputs : array_like, shape (n, d)
        Pool of finite input vectors (n, d >= 1); each network receives ``inputs_per_network`` of
        them drawn uniformly with replacement (so the input law is the empirical law of the pool).
    layers : sequence of Layer, (width, sigma_w2[, sigma_b2[, fan_in]]) or objects with those attributes
        Widths >= 1, variances >= 0; ``W_ij ~ N(0, sigma_w2 / fan_in)`` with ``fan_in`` defaulting
        to the layer's width (He: ``sigma_w2 = 2``), as :func:`meanfield.finite_width.expected_squared_norm`.
    n_networks, inputs_per_network : int
        >= 1.
    backend : str or Backend
    rng : None, int, SeedSequence or numpy.random.Generator
        Chunk ``i`` of networks draws its inputs and its weights from two children spawned off it.

    Returns
    -------
    ndarray, shape (n_networks, inputs_per_network, L + 1)
        Column 0 is ``|x^(0)|^2``.

    Raises
    ------
    ValueError
        Arguments out of range; squared norms that overflow float64 or fall below ~2e-292 while
        the signal is not exactly zero.

    Notes
    -----
    Burkholz & Dubatovka 2019, Prop. 1 (the law of ``|x^(l)|^2`` whose transition operator T_l the theory computes).
    """
    be = get_backend(backend)
    xp = be.xp
    pool = as_float_array(inputs, "inputs")
    if pool.ndim != 2 or pool.shape[0] < 1 or pool.shape[1] < 1:
        raise ValueError(f"inputs must have shape (n, d) with n, d >= 1, got {pool.shape}")
    lays = _layers(layers)
    n_networks = check_int(n_networks, "n_networks", 1)
    inputs_per_network = check_int(inputs_per_network, "inputs_per_network", 1)
    generator = check_rng(rng)
    check_elements(n_networks * inputs_per_network * (len(lays) + 1), "the squared norms")
    widest = max([pool.shape[1]] + [w for w, _, _ in lays])
    check_elements(widest * widest, "one network's weights")
    check_elements(inputs_per_network * widest, "one network's signals")
    dims = [pool.shape[1]] + [w for w, _, _ in lays]
    check_work(n_networks * inputs_per_network * sum(a * b for a, b in zip(dims, dims[1:])), "simulate_squared_norms")
    out = np.empty((n_networks, inputs_per_network, len(lays) + 1))
    batch = max(1, min(_BATCH_ELEMENTS // (widest * widest), _BATCH_ELEMENTS // (inputs_per_network * widest)))
    starts = range(0, n_networks, batch)
    seqs = spawn_sequences(generator, 2 * len(starts))
    pool_b = be.asarray(pool)  # moved to the backend once
    for i, start in enumerate(starts):
        b = min(batch, n_networks - start)
        idx = be.generator(seqs[2 * i]).integers(0, pool.shape[0], (b * inputs_per_network,))
        rng_w = be.generator(seqs[2 * i + 1])
        x = xp.reshape(xp.take(pool_b, idx, axis=0), (b, inputs_per_network, pool.shape[1]))
        norms, live = [xp.sum(x * x, axis=-1)], [xp.any(x != 0, axis=-1)]
        for width, sw, sb in lays:
            # W^T as a (fan_in, width) matrix of i.i.d. N(0, 1) entries (dense_weights at unit variance), times sqrt(sw)
            w = dense_weights(
                x.shape[-1], width, float(width), "gaussian", rng_w, batch_shape=b, backend=be
            ) * math.sqrt(sw)
            h = xp.matmul(x, w)
            if sb > 0:
                h = h + rng_w.standard_normal((b, 1, width)) * math.sqrt(sb)
            x = xp.maximum(h, 0.0)
            norms.append(xp.sum(x * x, axis=-1))
            live.append(xp.any(x != 0, axis=-1))
        # one transfer per chunk: the (b, k, L + 1) statistics, checked layer by layer on the host
        sq, alive = to_numpy(xp.stack(norms, axis=-1)), to_numpy(xp.stack(live, axis=-1))
        for layer in range(len(lays) + 1):
            _check_norms(sq[..., layer], alive[..., layer], layer)
        out[start : start + b] = sq
    return out


@dataclass(frozen=True)
class PairSimulation(Result):
    """Outputs of one random ReLU layer on two inputs, per network (:func:`simulate_pair`).

    Attributes
    ----------
    inner : ndarray, shape (n_networks,)
        ``<x1', x2'>``, the inner product of the two outputs.
    cosine : ndarray, shape (n_networks,)
        Their cosine similarity (0 when one output is the zero vector).

    Unpacking ``inner, cosine = simulate_pair(...)`` still works (the result iterates over the two
    fields in this order), but new code should use the named fields.
    """

    inner: np.ndarray
    cosine: np.ndarray

    def __iter__(self) -> Iterator[np.ndarray]:
        return iter((self.inner, self.cosine))


def simulate_pair(
    x1: ArrayLike,
    x2: ArrayLike,
    width: int,
    sigma_w2: float,
    sigma_b2: float,
    n_networks: int,
    *,
    fan_in: int | None = None,
    backend: str | Backend = "numpy",
    rng: Any = None,
) -> PairSimulation:
    """One ReLU layer applied to two inputs by ``n_networks`` random networks.

    Parameters
    ----------
    x1, x2 : array_like, shape (d,)
        Finite inputs of the same length d >= 1.
    width : int
        Output width (>= 1).
    sigma_w2, sigma_b2 : float
        Weight and bias variances (>= 0): ``W_ij ~ N(0, sigma_w2 / fan_in)`` (He: 2; module notes).
    n_networks : int
        >= 1.
    fan_in : int, optional
        The fan-in that scales ``sigma_w2`` (>= 1); default ``d``, the length of the inputs.
    backend : str or Backend
    rng : None, int, SeedSequence or numpy.random.Generator
        Chunk ``i`` of networks draws from the ``i``-th child spawned off it.

    Returns
    -------
    PairSimulation
        ``inner`` (``<x1', x2'>``) and ``cosine`` (the cosine similarity of the two outputs, 0 when
        one output is zero), each of shape (n_networks,).

    Raises
    ------
    ValueError
        Arguments out of range, or inner products / norms that overflow float64.

    Notes
    -----
    Burkholz & Dubatovka 2019, Prop. 2 and Thm. 5 (the joint law of two outputs of one layer).

    Examples
    --------
    >>> sim = simulate_pair(np.ones(4), np.arange(4.0), width=16, sigma_w2=2.0, sigma_b2=0.0, n_networks=5, rng=0)
    >>> sim.inner.shape, bool(np.all(np.abs(sim.cosine) <= 1))
    ((5,), True)
    """
    be = get_backend(backend)
    xp = be.xp
    x1 = as_float_array(x1, "x1")
    x2 = as_float_array(x2, "x2")
    if x1.ndim != 1 or x1.shape != x2.shape or x1.size < 1:
        raise ValueError(f"x1 and x2 must be 1-D of the same length >= 1, got shapes {x1.shape} and {x2.shape}")
    width = check_int(width, "width", 1)
    sigma_w2 = check_variance(sigma_w2, "sigma_w2")
    sigma_b2 = check_variance(sigma_b2, "sigma_b2")
    n_networks = check_int(n_networks, "n_networks", 1)
    generator = check_rng(rng)
    d = x1.shape[0]
    fan_in = d if fan_in is None else check_int(fan_in, "fan_in", 1)
    sigma_w2 = fw.unscaled_sigma_w2(sigma_w2, fan_in)  # the per-weight variance the weights are drawn with
    check_elements(d * width, "one network's weights")
    check_elements(n_networks, "the outputs")
    check_work(n_networks * d * width, "simulate_pair")
    # the inputs' scale is factored out (relu(s h) = s relu(h)), so large inputs cannot overflow
    scale = max(float(np.max(np.abs(x1))), float(np.max(np.abs(x2))))
    if scale == 0.0:
        scale = 1.0
    x = be.asarray(np.stack([x1, x2]) / scale)  # (2, d)
    inner = np.empty(n_networks)
    cosine = np.empty(n_networks)
    batch = max(1, _BATCH_ELEMENTS // (d * width))
    starts = range(0, n_networks, batch)
    seqs = spawn_sequences(generator, len(starts))
    for i, start in enumerate(starts):
        rng_w = be.generator(seqs[i])
        b = min(batch, n_networks - start)
        w = dense_weights(d, width, float(width), "gaussian", rng_w, batch_shape=b, backend=be) * math.sqrt(
            sigma_w2
        )  # W^T, unit entries
        h = xp.matmul(x[None, ...], w)  # (b, 2, width)
        if sigma_b2 > 0:
            h = h + rng_w.standard_normal((b, 1, width)) * (math.sqrt(sigma_b2) / scale)
        y = xp.maximum(h, 0.0)
        m = xp.max(xp.abs(xp.reshape(y, (b, -1))), axis=1)
        yn = y / xp.where(m > 0, m, 1.0)[:, None, None]
        y1, y2 = yn[:, 0, :], yn[:, 1, :]
        ipn = to_numpy(xp.sum(y1 * y2, axis=-1))
        den = to_numpy(xp.sqrt(xp.sum(y1**2, axis=-1) * xp.sum(y2**2, axis=-1)))
        mm = to_numpy(m)
        with np.errstate(over="ignore", under="ignore"):
            ip = ipn * mm * mm * scale * scale
        if not np.all(np.isfinite(ip)) or not np.all(np.isfinite(den)):
            raise ValueError("the inner products overflow float64: rescale x1, x2, sigma_w2 or sigma_b2")
        if np.any((ipn != 0) & (np.abs(ip) < _NORM_MIN)):
            raise ValueError(
                "the inner products underflow float64 (below ~2e-292): rescale x1, x2, sigma_w2 or sigma_b2"
            )
        inner[start : start + b] = ip
        cosine[start : start + b] = np.divide(ipn, den, out=np.zeros(b), where=den > 0)
    return PairSimulation(inner, cosine)
