"""Moment simulators for the residual and convolutional conjectures of Grzejdziak 2023, Sec. 6.

:func:`simulate_residual_moments` (``y' = y + W phi_a(y)`` or plain ``y' = W phi_a(y)``) and
:func:`simulate_conv_moments` (1-D periodic convolutional leaky-ReLU layers) record, per layer and
network, the coordinate averages ``mean y^2``, ``mean y^4`` and ``mean_{i != j} y_i^2 y_j^2`` of one
Gaussian input (:class:`MomentSimulation`): the Monte-Carlo side of
:mod:`meanfield.kurtosis`. Each chunk of networks draws from its own child stream spawned
off ``rng``; ``backend=`` runs the batched products on CuPy, PyTorch or ``array_api_strict``
(:mod:`meanfield.backend`); on NumPy the ``numpy.einsum`` order of earlier releases, so their
numbers are unchanged. The plain-network simulators of the same paper are in
:mod:`meanfield.simulate.kurtosis`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from meanfield import Result
from meanfield.backend import Backend, get_backend, to_numpy
from meanfield.checks import check_int, check_rng, check_scalar

from ._common import MAX_ELEMENTS, check_work, spawned_generators

__all__ = ["MomentSimulation", "simulate_conv_moments", "simulate_residual_moments"]


@dataclass(frozen=True)
class MomentSimulation(Result):
    """Per-network coordinate averages of a simulated signal (residual, plain or convolutional), per layer.

    Attributes
    ----------
    s2, m4, m22 : ndarray, shape (depth + 1, n_networks)
        ``mean_i y_i^2``, ``mean_i y_i^4`` and ``mean_{i != j} y_i^2 y_j^2`` of one Gaussian input
        in each network (independent over networks: standard errors from the spread over axis 1).
    """

    s2: np.ndarray
    m4: np.ndarray
    m22: np.ndarray


def _record_moments(out, l, s, y2, m, xp):
    """``out[:, l, s:s+b]`` = mean ``y^2``, mean ``y^4`` and the mean over distinct pairs of ``y_i^2 y_j^2``
    of the per-network squares ``y2`` (shape ``(b, m)``), reduced on the backend, finished on the host."""
    tot = to_numpy(xp.sum(y2, axis=1))
    sq = to_numpy(xp.sum(y2 * y2, axis=1))
    b = tot.shape[0]
    out[0, l, s : s + b] = tot / m
    out[1, l, s : s + b] = sq / m
    out[2, l, s : s + b] = (tot * tot - sq) / (m * (m - 1))


def _simulate(gen, be, n, depth, chunk, m, first, layer):
    """The chunked simulation of both simulators: chunk ``k`` of ``chunk`` networks draws from the
    ``k``-th child of ``gen`` (a backend Generator ``g``) its inputs ``first(g, b)`` and, at each layer,
    the next signal ``layer(g, y, b)``; the moments of the ``m`` coordinates are recorded per layer."""
    xp = be.xp
    out = np.empty((3, depth + 1, n))
    starts = list(range(0, n, chunk))
    for g, s in zip(spawned_generators(gen, len(starts), be), starts):
        b = min(chunk, n - s)
        y = first(g, b)
        for l in range(depth + 1):
            if l > 0:
                y = layer(g, y, b)
            _record_moments(out, l, s, xp.reshape(y * y, (b, m)), m, xp)
        if not np.all(np.isfinite(out[:, :, s : s + b])):
            raise ValueError("the simulated signals leave float64: use a smaller depth")
    return MomentSimulation(s2=out[0], m4=out[1], m22=out[2])


def simulate_residual_moments(
    width: int,
    depth: int,
    n_networks: int,
    slope: float = 0.0,
    *,
    residual: bool = True,
    rng=None,
    backend: str | Backend = "numpy",
) -> MomentSimulation:
    """Moments of ``y' = y + W phi_a(y)`` (or ``W phi_a(y)``) with He Gaussian weights, by simulation.

    Parameters
    ----------
    width : int
        ``2 <= w <= 4096``.
    depth : int
        ``0 <= depth <= 1000``.
    n_networks : int
        ``>= 2``; each network gets its own weights and one input ``x ~ N(0, I_w)``.
    slope : float
        Leaky-ReLU negative slope ``a`` (finite).
    residual : bool
        Skip connection or not.
    rng : None, int, SeedSequence or numpy.random.Generator
        Chunks of networks draw from children spawned off it.
    backend : str or Backend
        Array backend (:data:`meanfield.backend.BACKENDS`): each chunk's inputs and weights are drawn
        by the backend's Generator on the chunk's child stream and the layers run there as batched
        matrix-vector products (NumPy: ``numpy.einsum``, the reference order; elsewhere
        ``xp.matmul``). NumPy and ``array_api_strict`` draw the same numbers; the result is NumPy.

    Returns
    -------
    MomentSimulation

    Raises
    ------
    ValueError
        Arguments out of range; non-finite signals; ``width``, ``depth`` or ``n_networks`` not an
        integer (a bool, a string, a non-integral float; an integral float is accepted).
    TypeError
        ``slope`` a bool, complex number or string; ``residual`` not a bool; a complex
        ``width``, ``depth`` or ``n_networks``.
    ImportError
        A ``backend`` whose package is not installed.

    Notes
    -----
    The Monte-Carlo side of :func:`meanfield.kurtosis.residual_moments` (Grzejdziak 2023, Sec. 6).
    """
    w = check_int(width, "width", 2, 4096)
    depth = check_int(depth, "depth", 0, 1000)
    n = check_int(n_networks, "n_networks", 2, MAX_ELEMENTS)
    check_work(n * (depth + 1) * w * w, "simulate_residual_moments: n_networks * (depth + 1) * width**2")
    a = check_scalar(slope, "slope")
    if not isinstance(residual, bool):
        raise TypeError(f"residual must be a bool, got {residual!r}")
    gen = check_rng(rng)
    be = get_backend(backend)
    xp = be.xp
    sd = math.sqrt(2.0 / (w * (1.0 + a * a)))

    def layer(g, y, b):
        phi = xp.where(y > 0, y, a * y)
        weights = g.standard_normal((b, w, w)) * sd
        if be.name == "numpy":  # the reference summation order (results of earlier releases)
            u = np.einsum("bij,bj->bi", weights, phi)
        else:
            u = xp.matmul(weights, phi[..., None])[..., 0]
        return y + u if residual else u

    return _simulate(gen, be, n, depth, max(1, 2**22 // (w * w)), w, lambda g, b: g.standard_normal((b, w)), layer)


def simulate_conv_moments(
    channels: int,
    kernel_size: int,
    positions: int,
    depth: int,
    n_networks: int,
    slope: float = 0.0,
    *,
    rng=None,
    backend: str | Backend = "numpy",
) -> MomentSimulation:
    """Moments of a 1-D periodic convolutional leaky-ReLU network with He Gaussian kernels, by simulation.

    ``y^(l+1)[i, p] = sum_{j, b} W[i, j, b] phi_a(y^(l)[j, (p + b) mod n])`` with
    ``Var W = 2 / (channels kernel_size (1 + a^2))`` (He for fan-in ``channels * kernel_size``), one input
    ``x ~ N(0, I)`` of shape (channels, positions) per network.

    Parameters
    ----------
    channels, kernel_size, positions : int
        ``1 <= channels <= 256``, ``1 <= kernel_size <= positions <= 4096``, ``channels * positions >= 2``.
    depth : int
        ``0 <= depth <= 1000``.
    n_networks : int
        ``>= 2``.
    slope : float
        Negative slope ``a`` (finite).
    rng : None, int, SeedSequence or numpy.random.Generator
        Chunks of networks draw from children spawned off it.
    backend : str or Backend
        Array backend (:data:`meanfield.backend.BACKENDS`): kernels and inputs drawn by its Generator,
        each layer one batched product of the kernels with the ``kernel_size`` rolled copies of the
        signal (NumPy: ``numpy.einsum``, the reference order; elsewhere ``xp.matmul``). NumPy and
        ``array_api_strict`` draw the same numbers; the result is NumPy.

    Returns
    -------
    MomentSimulation
        Averages over the ``channels * positions`` coordinates (``m22`` over distinct coordinates).

    Raises
    ------
    ValueError, TypeError
        Arguments out of range or of the wrong type; non-finite signals.
    ImportError
        A ``backend`` whose package is not installed.

    Notes
    -----
    Grzejdziak 2023, Sec. 6: "convolutional layers induce even more dependence of layer outputs due to
    parameter sharing, so we expect the output kurtosis to grow at even faster pace".
    ``kernel_size = 1`` is ``positions`` dense networks of width ``channels`` sharing weights, whose
    per-coordinate kurtosis follows Prop. 4.3 exactly (``validation.kurtosis`` checks it).
    """
    c = check_int(channels, "channels", 1, 256)
    n_pos = check_int(positions, "positions", 1, 4096)
    k = check_int(kernel_size, "kernel_size", 1, n_pos)
    if c * n_pos < 2:
        raise ValueError("channels * positions must be >= 2")
    depth = check_int(depth, "depth", 0, 1000)
    n = check_int(n_networks, "n_networks", 2, MAX_ELEMENTS)
    check_work(
        n * (depth + 1) * c * c * k * n_pos,
        "simulate_conv_moments: n_networks * (depth + 1) * channels**2 * kernel_size * positions",
    )
    a = check_scalar(slope, "slope")
    gen = check_rng(rng)
    be = get_backend(backend)
    xp = be.xp
    sd = math.sqrt(2.0 / (c * k * (1.0 + a * a)))

    def layer(g, y, b):
        phi = xp.where(y > 0, y, a * y)
        shifted = xp.stack([xp.roll(phi, -beta, axis=2) for beta in range(k)], axis=2)  # (b, c, k, n)
        w = g.standard_normal((b, c, c, k)) * sd
        if be.name == "numpy":  # the reference summation order (results of earlier releases)
            return np.einsum("bijk,bjkn->bin", w, shifted)
        # (b, c_out, c_in k) @ (b, c_in k, n)
        return xp.matmul(xp.reshape(w, (b, c, c * k)), xp.reshape(shifted, (b, c * k, n_pos)))

    chunk = max(1, 2**22 // (c * k * n_pos + c * c * k))
    return _simulate(gen, be, n, depth, chunk, c * n_pos, lambda g, b: g.standard_normal((b, c, n_pos)), layer)
