r"""Input-output Jacobians of finite random dense and periodic convolutional networks (Xiao et al. 2018, Sec. 2.2.1).

The network is :math:`h^l = W^l x^{l-1} + b^l`, :math:`x^l = \phi(h^l)`, ``l = 1..depth``, started
at the fixed point: the entries of :math:`h^0` are drawn i.i.d. :math:`N(0, q)` and
:math:`x^0 = \phi(h^0)`, so that every layer's pre-activations have variance ~q (q = q* of
:func:`meanfield.dense.fixed_point` by default). The Jacobian is :math:`J = \prod_l D^l W^l`,
:math:`D^l = \mathrm{diag}\,\phi'(h^l)`, accumulated by matrix products; the result is the squared
singular values of J (the eigenvalues of :math:`JJ^T`), the quantity
:func:`meanfield.spectra.jacobian_spectrum` predicts.

Convolutions: ``width`` channels on a ring of ``size`` positions; :math:`W^l` is the
``(size * width)``-square block-circulant operator (:func:`meanfield.init.conv_matrix`) of a kernel
drawn by Xiao et al.'s Algorithm 2 (delta-orthogonal), Algorithm 1 in 1-D (the laws of
:func:`meanfield.init.delta_orthogonal_kernel_1d` and :func:`meanfield.init.orthogonal_conv_kernel_1d`,
built on the backend) or :func:`meanfield.init.gaussian_conv_kernel` (uniform ``v``); it is applied
to the Jacobian's columns with :func:`meanfield.init.periodic_conv`. Biases are per channel.

Backends: ``backend=`` (:mod:`meanfield.backend`) runs every step -- weights, products, singular
values -- on NumPy, CuPy, PyTorch or ``array_api_strict``; NumPy and ``array_api_strict`` draw the
same numbers.

Randomness: ``rng`` as everywhere (None, int, SeedSequence, Generator); each network draws from its
own spawned child stream, so results do not depend on how many networks are simulated together.
"""

from __future__ import annotations

import math

import numpy as np

from meanfield import dense
from meanfield.activations import get_activation
from meanfield.backend import Backend, get_backend, spawn_sequences, svdvals, to_numpy
from meanfield.checks import check_int, check_rng
from meanfield.checks import check_variance as check_nonnegative_scalar
from meanfield.init import (
    conv_matrix,
    delta_orthogonal_kernel,
    dense_weights,
    gaussian_conv_kernel,
    haar_orthogonal,
    orthogonal_conv_kernel,
    periodic_conv,
)

from ._common import activation_fn, check_work, orthogonal_conv_kernels, spawned_generators

__all__ = [
    "JACOBIAN_CONV_KERNELS",
    "JACOBIAN_WEIGHTS",
    "conv2d_jacobian_singular_values",
    "conv_jacobian_singular_values",
    "jacobian_singular_values",
]

#: Weight laws of :func:`jacobian_singular_values`.
JACOBIAN_WEIGHTS = ("gaussian", "orthogonal")
#: Kernel laws of :func:`conv_jacobian_singular_values`.
JACOBIAN_CONV_KERNELS = ("delta_orthogonal", "orthogonal", "gaussian")


def _start_q(activation, sigma_w2, sigma_b2, q):
    if q is None:
        q = dense.fixed_point(activation, sigma_w2, sigma_b2).q_star
        if not math.isfinite(q):
            raise ValueError("q* is infinite at these variances: pass q")
        return q
    return check_nonnegative_scalar(q, "q")


def _choice(value, allowed, name):
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, one of {allowed}, got {value!r}")
    if value not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
    return value


def _checked_network(activation, sigma_w2, sigma_b2, depth, width, max_width):
    """The checks shared by the three simulators: ``(act, sigma_w2, sigma_b2, depth, width)``."""
    act = get_activation(activation)
    sigma_w2 = check_nonnegative_scalar(sigma_w2, "sigma_w2")
    sigma_b2 = check_nonnegative_scalar(sigma_b2, "sigma_b2")
    depth = check_int(depth, "depth", minimum=1, maximum=10**4)
    width = check_int(width, "width", minimum=1, maximum=max_width)
    return act, sigma_w2, sigma_b2, depth, width


def _checked_conv(kernel, kernel_size, max_kernel_size, n, n_name, n_networks, depth, what):
    """The kernel law and size of a CNN simulator, its Jacobian's size ``n`` (named ``n_name``) and work."""
    kernel = _choice(kernel, JACOBIAN_CONV_KERNELS, "kernel")
    kernel_size = check_int(kernel_size, "kernel_size", minimum=1, maximum=max_kernel_size)
    if kernel_size % 2 == 0:
        raise ValueError(f"kernel_size must be odd, got {kernel_size}")
    if n > 4096:
        raise ValueError(f"{n_name} must be <= 4096, got {n}")
    check_work(n_networks * depth * 3 * n**3, what)
    return kernel, kernel_size


def _start(act, sigma_w2, sigma_b2, q, backend):
    """``(q, backend, phi, dphi, sigma_b)``: the starting variance and the activation on the backend."""
    q = _start_q(act, sigma_w2, sigma_b2, q)
    be = get_backend(backend)
    phi, dphi = activation_fn(act, be)
    return q, be, phi, dphi, math.sqrt(sigma_b2)


def _conv_draws(kernel, kernel_shape, width, sigma_w2, sb, be):
    """``(kernel_of, bias_of)``: one layer's kernel (Algorithms 1 / 2 batched on ``be``, as in
    :func:`conv_kernels`, or Gaussian taps) and per-channel biases, drawn from a Generator of ``be``."""
    scale = math.sqrt(sigma_w2)

    def kernel_of(g):
        if kernel == "gaussian":
            return gaussian_conv_kernel(kernel_shape, width, width, sigma_w2=sigma_w2, rng=g, backend=be)
        return scale * orthogonal_conv_kernels(1, kernel_shape, width, kernel, g, be)[0, ...]

    def bias_of(g):
        return sb * g.standard_normal(width)  # one bias per channel, broadcast over positions

    return kernel_of, bias_of


def _run(draw_w, draw_b, n, depth, phi, dphi, q, gen, b: Backend | None = None):
    """Squared singular values of one network's Jacobian, every step on backend ``b`` (NumPy by
    default: the circulant-matrix reference path of :func:`conv2d_jacobian_singular_values`)."""
    b = get_backend("numpy") if b is None else b
    xp = b.xp
    h = math.sqrt(q) * gen.standard_normal(n)
    x = phi(h)
    jac = b.asarray(np.eye(n))
    for _ in range(depth):
        w = draw_w(gen)
        h = w @ x + draw_b(gen)
        x = phi(h)
        jac = dphi(h)[:, None] * (w @ jac)
    if not bool(xp.all(xp.isfinite(jac))):
        raise ValueError("the Jacobian overflowed (reduce depth or sigma_w2)")
    s = svdvals(b, jac)
    return s * s


def _run_conv(kernel_of, bias_of, spatial, width, depth, phi, dphi, q, gen, b: Backend):
    """As :func:`_run` for a periodic CNN on ``spatial`` positions (1 or 2 axes): the Jacobian's
    ``n = prod(spatial) * width`` columns are propagated as ``n`` signals of shape
    ``(*spatial, width)`` by :func:`meanfield.init.periodic_conv` (the rows of ``J^T``; the same
    singular values), never forming the circulant matrix."""
    xp = b.xp
    spatial = (spatial,) if isinstance(spatial, int) else tuple(spatial)
    sd = len(spatial)
    n = math.prod(spatial) * width
    h = math.sqrt(q) * gen.standard_normal((*spatial, width))
    x = phi(h)
    cols = xp.reshape(b.asarray(np.eye(n)), (n, *spatial, width))  # column j of J as a signal
    for _ in range(depth):
        k = kernel_of(gen)
        h = periodic_conv(x, k, sd, b, check_finite=False) + bias_of(gen)
        x = phi(h)
        cols = dphi(h) * periodic_conv(cols, k, sd, b, check_finite=False)
    jt = xp.reshape(cols, (n, n))
    if not bool(xp.all(xp.isfinite(jt))):
        raise ValueError("the Jacobian overflowed (reduce depth or sigma_w2)")
    s = svdvals(b, jt)
    return s * s


def jacobian_singular_values(
    activation,
    sigma_w2: float,
    sigma_b2: float,
    depth: int,
    width: int,
    n_networks: int,
    weights: str = "orthogonal",
    *,
    q: float | None = None,
    rng=None,
    backend: str | Backend = "numpy",
) -> np.ndarray:
    r"""Squared singular values of the input-output Jacobian of random dense networks.

    Parameters
    ----------
    activation : str or Activation
    sigma_w2, sigma_b2 : float
        Variances (>= 0); weights ``N(0, sigma_w2 / width)`` or ``sqrt(sigma_w2)`` times Haar orthogonal.
    depth, width, n_networks : int
        Layers (1 to 10^4), width (1 to 4096), networks (1 to 10^5).
    weights : {"orthogonal", "gaussian"}
    q : float, optional
        Variance of the starting pre-activations (default q*).
    rng : None, int, SeedSequence or Generator
        Network ``k`` draws from the ``k``-th child spawned off it.
    backend : str or Backend
        Array backend (:data:`meanfield.backend.BACKENDS`): weights drawn by its Generator, products
        and the singular values (:func:`meanfield.backend.svdvals`) computed on it; the result is a
        NumPy array.

    Returns
    -------
    ndarray, shape (n_networks, width)
        Eigenvalues of :math:`JJ^T`, descending per network.

    Raises
    ------
    ValueError
        Sizes out of range, an unknown weight law, q* infinite without ``q``, work beyond the
        simulators' bound, a Jacobian beyond float64.
    TypeError
        Wrong argument types.
    """
    act, sigma_w2, sigma_b2, depth, width = _checked_network(activation, sigma_w2, sigma_b2, depth, width, 4096)
    n_networks = check_int(n_networks, "n_networks", minimum=1, maximum=10**5)
    weights = _choice(weights, JACOBIAN_WEIGHTS, "weights")
    check_work(n_networks * depth * 3 * width**3, "jacobian_singular_values")
    q, be, phi, dphi, sb = _start(act, sigma_w2, sigma_b2, q, backend)
    seqs = spawn_sequences(check_rng(rng), n_networks)
    if weights == "orthogonal":
        scale = math.sqrt(sigma_w2)

        def draw_w(g):
            return scale * haar_orthogonal(width, width, rng=g, backend=be)
    else:

        def draw_w(g):
            return dense_weights(width, width, sigma_w2=sigma_w2, rng=g, backend=be)

    def draw_b(g):
        return sb * g.standard_normal(width)

    return to_numpy(be.xp.stack([_run(draw_w, draw_b, width, depth, phi, dphi, q, be.generator(s), be) for s in seqs]))


def conv_jacobian_singular_values(
    activation,
    sigma_w2: float,
    sigma_b2: float,
    depth: int,
    width: int,
    size: int,
    n_networks: int,
    kernel: str = "delta_orthogonal",
    *,
    kernel_size: int = 3,
    q: float | None = None,
    rng=None,
    backend: str | Backend = "numpy",
) -> np.ndarray:
    r"""Squared singular values of the Jacobian of random 1-D periodic CNNs (Xiao et al. 2018, Sec. 2.2.1).

    Parameters
    ----------
    activation, sigma_w2, sigma_b2, depth, q, rng
        As :func:`jacobian_singular_values`.
    width : int
        Channels c (1 to 1024).
    size : int
        Spatial positions n (1 to 256); the Jacobian is ``(n c) x (n c)`` (at most 4096).
    n_networks : int
    kernel : {"delta_orthogonal", "orthogonal", "gaussian"}
        Algorithm 2, Algorithm 1 (1-D), or i.i.d. ``N(0, sigma_w2 / (c k))`` taps (uniform ``v``).
    kernel_size : int
        Odd kernel width k (1 to size).
    backend : str or Backend
        As :func:`jacobian_singular_values`: kernels (Algorithm 1 / 2 batched on the backend, as in
        :func:`conv_kernels`), convolutions (:func:`meanfield.init.periodic_conv` applied to the
        Jacobian's columns) and singular values on it.

    Returns
    -------
    ndarray, shape (n_networks, size * width)
        Eigenvalues of :math:`JJ^T`, descending per network.

    Raises
    ------
    ValueError, TypeError
        As :func:`jacobian_singular_values`; an even or oversized ``kernel_size``.
    """
    act, sigma_w2, sigma_b2, depth, width = _checked_network(activation, sigma_w2, sigma_b2, depth, width, 1024)
    size = check_int(size, "size", minimum=1, maximum=256)
    n_networks = check_int(n_networks, "n_networks", minimum=1, maximum=10**5)
    kernel, kernel_size = _checked_conv(
        kernel, kernel_size, size, size * width, "size * width", n_networks, depth, "conv_jacobian_singular_values"
    )
    q, be, phi, dphi, sb = _start(act, sigma_w2, sigma_b2, q, backend)
    kernel_of, bias_of = _conv_draws(kernel, (kernel_size,), width, sigma_w2, sb, be)
    seqs = spawn_sequences(check_rng(rng), n_networks)
    return to_numpy(
        be.xp.stack(
            [_run_conv(kernel_of, bias_of, size, width, depth, phi, dphi, q, be.generator(s), be) for s in seqs]
        )
    )


def conv2d_jacobian_singular_values(
    activation,
    sigma_w2: float,
    sigma_b2: float,
    depth: int,
    width: int,
    shape: tuple[int, int],
    n_networks: int,
    kernel: str = "delta_orthogonal",
    *,
    kernel_size: int = 3,
    q: float | None = None,
    rng=None,
    backend: str | Backend = "numpy",
) -> np.ndarray:
    r"""Squared singular values of the Jacobian of random 2-D periodic CNNs (Xiao et al. 2018, Sec. 2.2.1).

    :func:`conv_jacobian_singular_values` on a periodic ``shape = (h, w)`` signal with
    ``kernel_size x kernel_size`` kernels: Algorithm 2 (:func:`meanfield.init.delta_orthogonal_kernel`),
    Algorithm 1 (:func:`meanfield.init.orthogonal_conv_kernel`) or i.i.d. Gaussian taps.

    Parameters
    ----------
    activation, sigma_w2, sigma_b2, depth, q, rng
        As :func:`jacobian_singular_values`.
    width : int
        Channels c (1 to 1024).
    shape : (int, int)
        Spatial shape (each 1 to 64); the Jacobian is ``(h w c) x (h w c)`` (at most 4096).
    n_networks : int
    kernel : {"delta_orthogonal", "orthogonal", "gaussian"}
    kernel_size : int
        Odd kernel width k (1 to min(h, w)).
    backend : str or Backend
        Array backend (:data:`meanfield.backend.BACKENDS`). NumPy: the kernels of
        :mod:`meanfield.init` and the Jacobian as a product of dense circulant matrices
        (:func:`meanfield.init.conv_matrix`), the reference path. Every other backend: the same
        kernels drawn from the same streams and built there (Algorithms 1 and 2 batched, as in
        :func:`conv_kernels`), the Jacobian's columns propagated by
        :func:`meanfield.init.periodic_conv` and the singular values computed there
        (:func:`meanfield.backend.svdvals`): no circulant matrix, no host round trip.
        ``array_api_strict`` reproduces NumPy's numbers to rounding; the result is a NumPy array.

    Returns
    -------
    ndarray, shape (n_networks, h * w * width)
        Eigenvalues of :math:`JJ^T`, descending per network.

    Raises
    ------
    ValueError, TypeError
        As :func:`conv_jacobian_singular_values`; a ``shape`` that is not two sizes.
    ImportError
        A ``backend`` whose package is not installed.
    """
    act, sigma_w2, sigma_b2, depth, width = _checked_network(activation, sigma_w2, sigma_b2, depth, width, 1024)
    if not isinstance(shape, (tuple, list)) or len(shape) != 2:
        raise TypeError(f"shape must be a pair (h, w) of ints, got {shape!r}")
    h, w = (check_int(s, "shape", minimum=1, maximum=64) for s in shape)
    n_networks = check_int(n_networks, "n_networks", minimum=1, maximum=10**5)
    n = h * w * width
    kernel, kernel_size = _checked_conv(
        kernel, kernel_size, min(h, w), n, "h * w * width", n_networks, depth, "conv2d_jacobian_singular_values"
    )
    q, be, phi, dphi, sb = _start(act, sigma_w2, sigma_b2, q, backend)
    gens = spawned_generators(check_rng(rng), n_networks, be)
    if be.name != "numpy":  # the draws of the reference path's kernels, in the same order
        kernel_of, bias_of = _conv_draws(kernel, (kernel_size, kernel_size), width, sigma_w2, sb, be)
        return to_numpy(
            be.xp.stack([_run_conv(kernel_of, bias_of, (h, w), width, depth, phi, dphi, q, g, be) for g in gens])
        )
    out = np.empty((n_networks, n))

    def draw_w(g):
        if kernel == "delta_orthogonal":
            k = delta_orthogonal_kernel(kernel_size, width, width, sigma_w2=sigma_w2, rng=g)
        elif kernel == "orthogonal":
            k = orthogonal_conv_kernel(kernel_size, width, width, sigma_w2=sigma_w2, rng=g)
        else:
            k = gaussian_conv_kernel((kernel_size, kernel_size), width, width, sigma_w2=sigma_w2, rng=g)
        return conv_matrix(k, (h, w))

    def draw_b(g):
        return np.tile(sb * g.standard_normal(width), h * w)  # positions row-major, channels last

    for k, g in enumerate(gens):
        out[k] = _run(draw_w, draw_b, n, depth, phi, dphi, q, g)
    return out
