"""Multi-input CNN covariances (Xiao et al. 2018, footnote 3) against simulated periodic CNNs.

:func:`meanfield.conv.multi_input_propagate` predicts the joint covariance of a channel's
pre-activations over D = 2 inputs and P positions. Finite CNNs with ``width`` channels are
simulated directly (:func:`meanfield.init.periodic_conv`, i.i.d. Gaussian kernels
:func:`meanfield.init.gaussian_conv_kernel` with variance vector ``v``, the same kernels for both
inputs), starting from two fixed random inputs with ``C0`` channels; the empirical covariance is
the channel average ``sum_j h_j^a(alpha) h_j^b(alpha') / c``. Rows at layers 1 and ``depth``:
the cross-input covariance at equal positions, the cross-input covariance at offset 2, and the
same-input covariance at offset 1.

Tolerance, stated in advance (as :mod:`meanfield.validation.conv`): channel averages at c and 2c
channels are Richardson-extrapolated (``2 m_2c - m_c``) with their standard errors over
independent networks; the verdict allows ``Z_DEFAULT`` standard errors plus
:func:`EXTRAPOLATION_BIAS` (the quantity's scale over c^2).
"""

from __future__ import annotations

import math

import numpy as np

from meanfield import conv
from meanfield.activations import get_activation
from meanfield.backend import Backend, get_backend, matrix_transpose, spawn_sequences, to_numpy
from meanfield.checks import (
    as_float_array,
    check_int,
    check_probability_vector,
    check_rng,
    check_variance,
    renamed_kwargs,
)
from meanfield.init import gaussian_conv_kernel, periodic_conv
from meanfield.simulate import activation_fn

from ._extrapolation import EXTRAPOLATION_BIAS, extrapolate_samples
from .backend import substream
from .report import Comparison
from .runner import main_for, progress

__all__ = ["BACKENDS", "POINTS", "V", "run", "simulate_multi_input"]

#: Backends the simulation honours (:func:`meanfield.validation.runner.module_backend`).
BACKENDS = ("numpy", "cupy", "torch", "array_api_strict")

#: Variance vector (kernel width 3, not uniform, so that the averaging is visible).
V = (0.25, 0.5, 0.25)
#: Positions and input channels.
P, C0 = 8, 4
#: (activation, sigma_w2, sigma_b2).
POINTS = (("tanh", 1.8, 0.05), ("relu", 2.0, 0.0))


#: Largest number of float64 values :func:`simulate_multi_input` returns.
MAX_ELEMENTS = 10**8
#: Largest number of multiply-adds of one :func:`simulate_multi_input` call.
MAX_WORK = 2**44


def simulate_multi_input(
    x, activation, sigma_w2, sigma_b2, v, depth, width, n_networks, *, rng=None, backend: str | Backend = "numpy"
):
    """Empirical covariances over inputs x positions of random 1-D periodic CNNs.

    Parameters
    ----------
    x : ndarray, shape (D, P, c0)
        Inputs.
    activation : str or Activation
    sigma_w2, sigma_b2 : float
    v : array_like
        Variance vector of the kernels (length 2k + 1).
    depth : int
        Layers after the first (the first maps x to h^1).
    width : int
        Channels.
    n_networks : int
    rng : None, int, SeedSequence or Generator
        Network ``k`` draws from the ``k``-th child spawned off it.
    backend : str or Backend
        Array backend (:data:`meanfield.backend.BACKENDS`): kernels and biases drawn by its
        Generator on each network's child stream, convolutions and covariances computed there
        (NumPy: ``numpy.einsum``, the reference order; elsewhere ``matmul``). NumPy and
        ``array_api_strict`` draw the same numbers; the result is a NumPy array.

    Returns
    -------
    ndarray, shape (n_networks, depth + 1, D, P, D, P)
        ``sum_j h_j^a(alpha) h_j^b(alpha') / width`` at layers 1 .. depth + 1.

    Raises
    ------
    ValueError
        ``x`` not a non-empty finite (D, P, c0) array; negative or non-finite variances; ``v`` not
        a probability vector of odd length <= P; ``depth`` < 0, ``width`` or ``n_networks`` < 1;
        ``n_networks (depth + 1) (D P)^2`` above :data:`MAX_ELEMENTS` or the multiply-adds above
        :data:`MAX_WORK`; covariances beyond float64.
    TypeError
        Complex, boolean or non-numeric arguments.
    ImportError
        A ``backend`` whose package is not installed.

    Notes
    -----
    Xiao et al. 2018, footnote 3 (the covariance over several inputs), eq. 2.1 networks with periodic boundary.
    """
    act = get_activation(activation)
    be = get_backend(backend)
    xp = be.xp
    phi, _ = activation_fn(act, be)
    x = as_float_array(x, "x")
    if x.ndim != 3 or x.size == 0:
        raise ValueError(f"x must be a non-empty array of shape (D, P, c0), got shape {x.shape}")
    sigma_w2 = check_variance(sigma_w2, "sigma_w2")
    sigma_b2 = check_variance(sigma_b2, "sigma_b2")
    v = check_probability_vector(v, "v")
    if v.size % 2 == 0 or v.size > x.shape[1]:
        raise ValueError(f"v must have an odd length <= P = {x.shape[1]}, got {v.size}")
    depth = check_int(depth, "depth", 0, 10_000)
    width = check_int(width, "width", 1, 100_000)
    n_networks = check_int(n_networks, "n_networks", 1, MAX_ELEMENTS)
    d, p, c0 = x.shape
    if n_networks * (depth + 1) * (d * p) ** 2 > MAX_ELEMENTS:
        raise ValueError(
            f"n_networks * (depth + 1) * (D P)**2 must be <= MAX_ELEMENTS = {MAX_ELEMENTS}, got n_networks = "
            f"{n_networks}, depth = {depth}, D P = {d * p}"
        )
    if n_networks * (depth + 1) * d * p * width * max(width, c0) * v.size > MAX_WORK:
        raise ValueError(
            f"n_networks * (depth + 1) * D * P * width * max(width, c0) * len(v) must be <= MAX_WORK = {MAX_WORK}: "
            f"simulate fewer networks, layers or channels (n_networks = {n_networks}, depth = {depth}, width = {width})"
        )
    out = np.empty((n_networks, depth + 1, d, p, d, p))
    host = check_rng(rng)
    gens = (
        host.spawn(n_networks) if be.name == "numpy" else [be.generator(s) for s in spawn_sequences(host, n_networks)]
    )
    xb = be.asarray(x)
    for k, g in enumerate(gens):
        u = xb
        for layer in range(depth + 1):
            c_in = c0 if layer == 0 else width
            kern = gaussian_conv_kernel(v.size, c_in, width, sigma_w2=sigma_w2, v=v, rng=g, backend=be)
            h = periodic_conv(u, kern, 1, be) + math.sqrt(sigma_b2) * g.standard_normal(width)
            if be.name == "numpy":  # the reference summation order (results of earlier releases)
                out[k, layer] = np.einsum("aic,bjc->aibj", h, h) / width
            else:
                flat = xp.reshape(h, (d * p, width))
                out[k, layer] = to_numpy(xp.reshape(flat @ matrix_transpose(xp, flat), (d, p, d, p))) / width
            u = phi(h)
    if not np.all(np.isfinite(out)):
        raise ValueError("the simulated covariances exceed the float64 range: rescale x or reduce sigma_w2, sigma_b2")
    return out


@renamed_kwargs(seed="rng")
def run(backend: str = "numpy", full: bool = False, seed: int = 0) -> list[Comparison]:
    """Compare multi-input CNN covariances with the theory (see the module docstring); the
    networks are simulated on ``backend`` (:data:`BACKENDS`)."""
    width = 256 if full else 64
    n_networks = 1000 if full else 300
    depth = 6 if full else 3
    x = check_rng(substream(seed, 0)).standard_normal((2, P, C0))
    rows: list[Comparison] = []
    entries = {
        "cross-input, same position": (0, 0, 1, 0),
        "cross-input, offset 2": (0, 0, 1, 2),
        "same input, offset 1": (0, 0, 0, 1),
    }
    for k, (name, sw, sb) in enumerate(progress(POINTS, desc="validation.conv_inputs", total=len(POINTS))):
        cov0 = conv.multi_input_covariance(x, sw, sb, V)
        theory = conv.multi_input_propagate(cov0, name, sw, sb, V, depth)
        sims = [
            simulate_multi_input(
                x, name, sw, sb, V, depth, c, n_networks, rng=substream(seed, 1, k, j), backend=backend
            )
            for j, c in enumerate((width, 2 * width))
        ]
        for layer in (0, depth):
            for what, (a, al, b, be) in entries.items():
                th = float(theory[layer, a, al, b, be])
                est, se = extrapolate_samples(*(s[:, layer, a, al, b, be] for s in sims))
                rows.append(
                    Comparison(
                        f"{name} (sw2={sw:g}, sb2={sb:g}) layer {layer + 1}: {what}",
                        th,
                        float(est),
                        float(se),
                        systematic=EXTRAPOLATION_BIAS(th, width),
                    )
                )
    return rows


if __name__ == "__main__":
    raise SystemExit(main_for(run, __name__))
