"""Monte-Carlo simulation of random periodic CNNs (Xiao et al. 2018).

:func:`simulate_conv` runs random periodic CNNs in 1-D or 2-D (Gaussian, orthogonal or
delta-orthogonal kernels, :func:`conv_kernels`), recording spatial covariances, back-propagated
gradient variances and weight-gradient norms. The convolution is :func:`meanfield.init.periodic_conv`
(the library's one periodic convolution, kernels in its layout ``(..., c_out, c_in)``); the kernels
come from :mod:`meanfield.init`. Statistics are carried on a log scale exactly as in
:mod:`meanfield.simulate.dense` (see there).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from meanfield import Result
from meanfield.activations import Activation, get_activation
from meanfield.backend import Backend, get_backend, matrix_transpose, spawn_sequences, to_numpy
from meanfield.checks import (
    check_bool,
    check_covariance,
    check_int,
    check_rng,
    check_variance,
    check_variance_vector,
    resolve_spatial_shape,
)
from meanfield.conv import cyclic_diagonal_modes, fig_s4_setup
from meanfield.init import (
    gaussian_conv_kernel,
    periodic_conv,
    periodic_conv_transpose,
    periodic_conv_weight_grad,
)

from ._common import (
    LogScaledActivation,
    LogScaledMoments,
    check_elements,
    combine,
    expand_log,
    host_array,
    log_sqrt,
    normalize,
    orthogonal_conv_kernels,
)

__all__ = ["CONV_INITS", "ConvSimulation", "conv_kernels", "simulate_conv", "simulate_fig_s4"]

#: Kernel laws of :func:`conv_kernels` and :func:`simulate_conv`.
CONV_INITS = ("gaussian", "orthogonal", "delta_orthogonal")


def _check_kernel_shape(kernel_shape):
    if isinstance(kernel_shape, numbers.Integral) and not isinstance(kernel_shape, (bool, np.bool_)):
        kernel_shape = (kernel_shape,)
    if isinstance(kernel_shape, (str, bytes)) or not isinstance(kernel_shape, (tuple, list, np.ndarray)):
        exc = TypeError if isinstance(kernel_shape, (complex, np.complexfloating)) else ValueError
        raise exc(f"kernel_shape must be a tuple of 1 or 2 odd ints, got {kernel_shape!r}")
    ks = tuple(check_int(s, "kernel_shape", 1) for s in kernel_shape)
    if len(ks) not in (1, 2):
        raise ValueError(f"kernel_shape must have 1 or 2 entries (1-D or 2-D), got {ks}")
    if any(s % 2 == 0 for s in ks):
        raise ValueError(f"kernel_shape entries must be odd (2k+1), got {ks}")
    return ks


def _check_init(init):
    if not isinstance(init, str) or init not in CONV_INITS:
        raise ValueError(f"init must be one of {CONV_INITS}, got {init!r}")
    return init


def _check_conv_v(v, kernel_shape):
    if v is None:
        return np.full(kernel_shape, 1.0 / math.prod(kernel_shape))
    v = check_variance_vector(host_array(v, "v"))
    if v.shape != kernel_shape:
        raise ValueError(f"v has shape {v.shape}, expected the kernel shape {kernel_shape}")
    return v


def _unit_conv_kernels(n_networks, kernel_shape, c, v, init, gen, b: Backend):
    """Kernels at ``sigma_w2 = 1`` (``gen``: a Generator of backend ``b``), on ``b``."""
    if init == "gaussian":
        return gaussian_conv_kernel(kernel_shape, c, c, v=v, rng=gen, batch_shape=n_networks, backend=b)
    return orthogonal_conv_kernels(n_networks, kernel_shape, c, init, gen, b)


def conv_kernels(
    n_networks: int,
    kernel_shape: int | Sequence[int],
    width: int,
    sigma_w2: float,
    v: ArrayLike | None = None,
    init: str = "gaussian",
    *,
    rng: Any = None,
    backend: str | Backend = "numpy",
) -> Any:
    """One layer's kernels for ``n_networks`` networks, shape ``(n_networks, *kernel_shape, c, c)``.

    In the library's kernel layout ``(..., c_out, c_in)`` (:mod:`meanfield.init`), drawn by
    :func:`meanfield.init.gaussian_conv_kernel` or Xiao et al.'s orthogonal initialisers.

    Parameters
    ----------
    n_networks : int
        >= 1.
    kernel_shape : int or tuple of int
        ``(2k+1,)`` (1-D) or ``(2k1+1, 2k2+1)`` (2-D), odd sizes; square for orthogonal inits.
    width : int
        Number of channels ``c`` (>= 1).
    sigma_w2 : float
        Weight variance (>= 0, finite).
    v : array_like, optional
        Variance vector of shape ``kernel_shape`` (non-negative, summing to 1; default uniform).
        Validated for every ``init``; used by ``"gaussian"`` only.
    init : {"gaussian", "orthogonal", "delta_orthogonal"}
        ``"gaussian"``: i.i.d. ``omega_ji(beta) ~ N(0, sigma_w2 v_beta / c)``. ``"orthogonal"`` /
        ``"delta_orthogonal"``: Algorithms 1 / 2 of Xiao et al. 2018 (the laws of
        :func:`meanfield.init.orthogonal_conv_kernel` and its 1-D variant) times ``sqrt(sigma_w2)``,
        built for all networks at once on ``backend`` (batched Haar matrices and products).
    rng : None, int, SeedSequence or numpy.random.Generator
        The library's randomness rule; on CuPy and PyTorch the kernels come from a device Generator
        seeded from a child spawned off it (:meth:`meanfield.backend.Backend.rng`).
    backend : str or Backend
        One of :data:`meanfield.backend.BACKENDS`.

    Returns
    -------
    array, shape ``(n_networks, *kernel_shape, c, c)``, on ``backend``

    Raises
    ------
    TypeError
        ``rng`` of another type; complex or boolean ``sigma_w2`` / ``v``.
    ValueError
        Sizes < 1, even kernel sizes, a non-square orthogonal kernel, an invalid ``v`` or ``init``,
        a negative / non-finite ``sigma_w2``, more than :data:`MAX_ELEMENTS` entries.

    Notes
    -----
    Xiao et al. 2018, Sec. 2.1 (eq. 2.2's weight law) and Algorithms 1-2.
    """
    n_networks = check_int(n_networks, "n_networks", 1)
    ks = _check_kernel_shape(kernel_shape)
    c = check_int(width, "width", 1)
    sigma_w2 = check_variance(sigma_w2, "sigma_w2")
    init = _check_init(init)
    check_elements(n_networks * math.prod(ks) * c * c, "the kernels (n_networks x kernel x c x c)")
    v = _check_conv_v(v, ks)
    if init != "gaussian" and len(set(ks)) != 1:
        raise ValueError(f"{init} kernels are square: kernel_shape {ks}")
    b = get_backend(backend)
    gen = b.rng(check_rng(rng))
    return math.sqrt(sigma_w2) * _unit_conv_kernels(n_networks, ks, c, v, init, gen, b)


@dataclass(frozen=True)
class ConvSimulation(LogScaledMoments, Result):
    """Per-network statistics of simulated periodic CNNs (NumPy arrays), on a log scale.

    Attributes
    ----------
    cov_normalized : ndarray, shape (n_networks, depth + 1, D, P, P)
        Empirical spatial covariance of each input's pre-activations, averaged over the ``width``
        channels,
        ``sum_j h_j(a) h_j(a') / c`` at layers 0 .. depth (index 0 is the sampled layer-0 field),
        divided by ``exp(log_scale)``.
    log_scale : ndarray, shape (n_networks, depth + 1)
    grad_sq_normalized : ndarray, shape (n_networks, depth + 1, D, P) or None
        ``sum_j delta_j(a)^2 / c``: back-propagated gradient variance per position, with
        ``delta^depth`` i.i.d. standard normal (the gradient of ``E = <g, h^depth>`` for a random
        standard-normal ``g``), divided by ``exp(grad_log_scale)``.
    grad_log_scale : ndarray, shape (n_networks, depth + 1) or None
    weight_grad_sq_normalized : ndarray, shape (n_networks, depth, D) or None
        ``|dE/d omega^l|^2 / c^2`` for layers l = 1 .. depth (entry l - 1, ``c`` = ``width``), the quantity of Xiao et al. 2018
        Fig. S2 per channel pair, divided by ``exp(weight_grad_log_scale)``.
    weight_grad_log_scale : ndarray, shape (n_networks, depth) or None

    Properties ``cov``, ``grad_sq`` and ``weight_grad_sq`` return the products and raise
    ``ValueError`` (naming the log fields) when a value overflows or underflows float64.
    """

    cov_normalized: np.ndarray
    log_scale: np.ndarray
    grad_sq_normalized: np.ndarray | None = None
    grad_log_scale: np.ndarray | None = None
    weight_grad_sq_normalized: np.ndarray | None = None
    weight_grad_log_scale: np.ndarray | None = None

    @property
    def weight_grad_sq(self) -> np.ndarray | None:
        """``weight_grad_sq_normalized * exp(weight_grad_log_scale)`` or None."""
        if self.weight_grad_sq_normalized is None:
            return None
        return expand_log(self.weight_grad_sq_normalized, self.weight_grad_log_scale, "weight_grad_sq")


def simulate_conv(
    cov0: ArrayLike,
    activation: str | Activation,
    sigma_w2: float,
    sigma_b2: float,
    v: ArrayLike,
    depth: int,
    width: int,
    n_networks: int = 16,
    init: str = "gaussian",
    spatial_shape: int | Sequence[int] | None = None,
    gradients: bool = False,
    *,
    backend: str | Backend = "numpy",
    rng: Any = None,
) -> ConvSimulation:
    """Simulate ``n_networks`` random periodic CNNs (1-D or 2-D) with ``width`` channels.

    Layer 0: every channel of every input is an independent Gaussian field ``h^0 = L_d z`` with
    ``L_d L_d^T = cov0[d]`` and the *same* standard-normal ``z`` for all D inputs (common random
    numbers: differences between inputs are estimated with little noise). Then
    ``h^{l+1} = periodic_conv(phi(h^l), omega^{l+1}) + b^{l+1}`` for l = 0 .. depth - 1
    (:func:`meanfield.init.periodic_conv`), the kernels drawn as by :func:`conv_kernels`; in the
    many-channel limit ``cov[:, l]`` tends to ``meanfield.conv.propagate(cov0, ...)[l]``.

    Parameters
    ----------
    cov0 : array_like, shape (P, P) or (D, P, P)
        Layer-0 spatial covariance(s): finite, symmetric, positive semi-definite.
    activation : str or Activation
    sigma_w2, sigma_b2 : float
        Variances (>= 0, finite).
    v : array_like
        Variance vector, shape (2k+1,) (1-D) or (2k1+1, 2k2+1) (2-D), non-negative and summing to
        1 (validated for every init); for orthogonal inits only its shape (the kernel size) is used.
    depth : int
        Number of convolutional layers (>= 0).
    width : int
        Number of channels c (>= 1).
    n_networks : int
        Independent networks simulated together (>= 1).
    init : {"gaussian", "orthogonal", "delta_orthogonal"}
    spatial_shape : int or (int, int), optional
        Default: P (1-D v) or the square image (2-D v).
    gradients : bool
        Also back-propagate a standard-normal ``delta^depth`` (through the same weights).
    backend : str or Backend
        One of :data:`meanfield.backend.BACKENDS` (``"numpy"``, ``"cupy"``, ``"torch"``,
        ``"array_api_strict"``): every array operation of the simulation runs on it.
    rng : None, int, SeedSequence or numpy.random.Generator
        Randomness (:mod:`meanfield.backend`): children spawned off it draw the layer-0 field, the
        output gradient, and each layer's kernels and biases (the kernels are regenerated from
        their stream in the backward pass); an int ``n`` gives the same numbers as
        ``numpy.random.default_rng(n)``; None draws fresh entropy.

    Returns
    -------
    ConvSimulation
        Log-scaled statistics (``.cov``, ``.grad_sq``, ``.weight_grad_sq`` multiply them out).

    Raises
    ------
    TypeError
        Complex or boolean arrays or variances, a non-bool ``gradients``, an ``rng`` of another type.
    ValueError
        A ``cov0`` that is not a finite PSD stack of square matrices; an invalid ``v`` or
        ``spatial_shape``; negative / non-finite variances; sizes out of range; an unknown init or
        activation; arrays beyond :data:`MAX_ELEMENTS`; an activation returning NaN / infinity (the
        message names the layer); a non-homogeneous activation's signal below ~2e-292.

    Notes
    -----
    Xiao et al. 2018, eqs. 2.1-2.5 (forward covariance map), 2.15-2.16 (backward) and Fig. S2 (weight
    gradients).

    Examples
    --------
    >>> sim = simulate_conv(np.eye(6), "tanh", 1.5, 0.05, np.full(3, 1 / 3), depth=2, width=8, n_networks=4,
    ...                     gradients=True, rng=0)
    >>> sim.cov.shape, sim.weight_grad_sq.shape
    ((4, 3, 1, 6, 6), (4, 2, 1))
    """
    b = get_backend(backend)
    xp = b.xp
    cov0 = check_covariance(host_array(cov0, "cov0"), "cov0")
    if cov0.ndim == 2:
        cov0 = cov0[None]
    if cov0.ndim != 3 or cov0.shape[1] < 1 or cov0.shape[0] < 1:
        raise ValueError(f"cov0 must have shape (P, P) or (D, P, P) with P, D >= 1, got {cov0.shape}")
    v = check_variance_vector(host_array(v, "v"))
    sigma_w2 = check_variance(sigma_w2, "sigma_w2")
    sigma_b2 = check_variance(sigma_b2, "sigma_b2")
    depth = check_int(depth, "depth", 0)
    c = check_int(width, "width", 1)
    n_networks = check_int(n_networks, "n_networks", 1)
    init = _check_init(init)
    if init != "gaussian" and len(set(v.shape)) != 1:
        raise ValueError(f"{init} kernels are square: v has shape {v.shape}")
    gradients = check_bool(gradients, "gradients")
    act = LogScaledActivation(get_activation(activation), b)
    generator = check_rng(rng)
    n_in, p = cov0.shape[0], cov0.shape[1]
    shape = resolve_spatial_shape(v.ndim, spatial_shape, p, "spatial_shape")
    sd = len(shape)
    ks = v.shape
    signal = n_networks * n_in * p * c
    check_elements(signal, "one layer's signal (n_networks x D x P x c)")
    check_elements(n_networks * math.prod(ks) * c * c, "one layer's kernels (n_networks x kernel x c x c)")
    check_elements(n_networks * (depth + 1) * n_in * p * p, "the recorded covariances")
    if gradients:
        check_elements(signal * (depth + 1), "the stored pre-activations for gradients (depth x signal)")
        check_elements(
            n_networks * n_in * math.prod(ks) * c * c, "one layer's weight gradients (n_networks x D x kernel x c x c)"
        )

    # children: [0] layer-0 field, [1] output gradient, [2 .. depth+1] kernels, [depth+2 ..] biases
    seqs = spawn_sequences(generator, 2 * depth + 2)
    kernel_seqs, bias_seqs = seqs[2 : depth + 2], seqs[depth + 2 :]
    log_w = log_sqrt(sigma_w2)
    log_b = b.full(n_networks, log_sqrt(sigma_b2))

    # symmetric PSD square roots U sqrt(w) U^T: defined for singular covariances and continuous in
    # cov0, so nearby covariances get nearby fields from the same z (common random numbers)
    c_n, log_c = normalize(np, cov0[None])
    log_c0 = float(log_c[0]) if np.isfinite(log_c[0]) else 0.0
    w_eig, u_eig = np.linalg.eigh(c_n[0])
    roots = b.asarray((u_eig * np.sqrt(np.clip(w_eig, 0.0, None))[:, None, :]) @ np.swapaxes(u_eig, -1, -2))
    z = b.generator(seqs[0]).standard_normal((n_networks, 1, p, c))
    h = xp.reshape(roots[None, ...] @ z, (n_networks, n_in) + shape + (c,))
    u, log_u = combine(xp, h, b.full(n_networks, 0.5 * log_c0), None, None)
    cov_n = b.empty((n_networks, depth + 1, n_in, p, p))
    logs = b.empty((n_networks, depth + 1))

    def record(layer, u, log_u):
        flat = xp.reshape(u, (n_networks, n_in, p, c))
        cov_n[:, layer, ...] = flat @ matrix_transpose(xp, flat) / c
        logs[:, layer] = 2.0 * log_u

    def kernel(layer):
        k = _unit_conv_kernels(n_networks, ks, c, v, init, b.generator(kernel_seqs[layer - 1]), b)
        return xp.reshape(k, (n_networks, 1) + tuple(k.shape[1:]))

    record(0, u, log_u)
    pre = [(u, log_u)]
    bshape = (n_networks, 1) + (1,) * sd + (c,)
    for layer in range(1, depth + 1):
        a, log_a = act.forward(u, log_u, layer - 1)
        a, lm = normalize(xp, a)
        bias = b.generator(bias_seqs[layer - 1]).standard_normal(bshape) if sigma_b2 > 0 else None
        # signals are normalised (max |a| = 1) and kernels drawn at sigma_w2 = 1: no product can overflow
        u, log_u = combine(
            xp, periodic_conv(a, kernel(layer), sd, b, check_finite=False), log_a + lm + log_w, bias, log_b
        )
        record(layer, u, log_u)
        if gradients:
            pre.append((u, log_u))
    grad_n = grad_logs = wgrad_n = wgrad_logs = None
    if gradients:
        grad_n = b.empty((n_networks, depth + 1, n_in, p))
        grad_logs = b.empty((n_networks, depth + 1))
        wgrad_n = b.empty((n_networks, depth, n_in))
        wgrad_logs = b.empty((n_networks, depth))
        delta, log_d = normalize(xp, b.generator(seqs[1]).standard_normal(tuple(u.shape)))
        grad_n[:, depth, ...] = xp.reshape(xp.mean(delta**2, axis=-1), (n_networks, n_in, p))
        grad_logs[:, depth] = 2.0 * log_d
        grad_axes = tuple(range(2, 4 + sd))  # the kernel taps and (c_out, c_in) of each (network, input)
        for layer in range(depth, 0, -1):
            x, log_x = act.forward(*pre[layer - 1], layer - 1)
            x, lm = normalize(xp, x)
            log_x = log_x + lm
            # dE/d omega_ji(beta) = sum_a delta_j(a) x_i(a + beta), per network and input
            g = periodic_conv_weight_grad(
                x, delta, ks, backend=b, check_finite=False
            )  # (nets, D, *kernel, c_out, c_in)
            wgrad_n[:, layer - 1, ...] = xp.sum(g * g, axis=grad_axes) / c**2
            finite = xp.isfinite(log_x)
            wgrad_logs[:, layer - 1] = xp.where(finite, 2.0 * (log_x + log_d), 0.0)
            step = act.backward(
                *pre[layer - 1], layer - 1, periodic_conv_transpose(delta, kernel(layer), sd, b, check_finite=False)
            )
            delta, log_d = combine(xp, step, log_d + log_w, None, None)
            grad_n[:, layer - 1, ...] = xp.reshape(xp.mean(delta**2, axis=-1), (n_networks, n_in, p))
            grad_logs[:, layer - 1] = 2.0 * log_d
        grad_n, grad_logs, wgrad_n, wgrad_logs = (to_numpy(t) for t in (grad_n, grad_logs, wgrad_n, wgrad_logs))
    return ConvSimulation(to_numpy(cov_n), to_numpy(logs), grad_n, grad_logs, wgrad_n, wgrad_logs)


def simulate_fig_s4(depth: int, width: int, n_networks: int, *, backend: str = "numpy", rng: Any = None) -> np.ndarray:
    """Per-network Fourier amplitudes of the first cyclic diagonal of eps^l, shape (n_networks, depth + 1, n).

    Parameters
    ----------
    depth : int
        Layers (>= 0).
    width : int
        Channels of the CNNs (>= 1).
    n_networks : int
        Independent CNNs (>= 1).
    backend : str
        One of :data:`meanfield.backend.BACKENDS`.
    rng : None, int, SeedSequence or numpy.random.Generator
        Passed to :func:`simulate_conv`.

    Returns
    -------
    ndarray of complex, shape (n_networks, depth + 1, n)

    Notes
    -----
    Xiao et al. 2018, Fig. S4 and App. F: CNNs started from ``Sigma^*`` and ``Sigma^* - eps^0`` of
    :func:`meanfield.conv.fig_s4_setup`; theory: :func:`meanfield.conv.fig_s4_theory`.
    """
    s = fig_s4_setup()
    cov0 = np.stack([s["sigma_star"], s["sigma_star"] - s["eps0"]])
    sim = simulate_conv(
        cov0, s["activation"], s["sigma_w2"], s["sigma_b2"], s["v"], depth, width, n_networks, backend=backend, rng=rng
    )
    eps = sim.cov[:, :, 0] - sim.cov[:, :, 1]
    return cyclic_diagonal_modes(eps)[:, :, 1, :]
