r"""Orthogonal and delta-orthogonal convolution kernels (Xiao et al. 2018, seed 003, Sec. 2.3-2.4).

Kernels have shape ``(k, k, c_in, c_out)`` (2-D) or ``(k, c_in, c_out)`` (1-D) and act, channels
last, as the periodic cross-correlation of :func:`validation.networks.periodic_conv`:
:math:`y_j(a) = \sum_i\sum_\beta x_i(a+\beta) K_{ij}(\beta)` with kernel index ``t`` <-> offset
``beta = t - k // 2``. :func:`conv_matrix` writes that operator as a dense block-circulant matrix.

An *orthogonal kernel* (Definition 2.1) satisfies :math:`\|K * x\|_2 = \|x\|_2` for every input.
Algorithm 1 builds one from the paraunitary polynomial matrix
:math:`K(z) = H\prod_{t=1}^{k-1}(P_t + (1-P_t) z_1)(Q_t + (1-Q_t) z_2)` with random symmetric
projections :math:`P_t, Q_t` (the block products of eq. 2.17) and a ``c_in x c_out`` matrix ``H``
with orthonormal rows; on the unit torus :math:`K(z)K(z)^* = I_{c_in}`, so the periodic convolution
is an isometry for every spatial size. The projections are drawn as in TensorFlow's
``ConvolutionOrthogonal`` initializer: :math:`P = U D U^T` with Haar ``U`` and a diagonal ``D`` of
independent fair 0/1 entries (rank ~ Binomial(c, 1/2)).

Cost: Algorithm 1 performs O(k^2) products of ``c x c`` matrices per step, O((k c)^3) in total
(supplement C.1); ``benchmarks/conv.py`` measures it. Requests beyond :data:`MAX_KERNEL_WORK`
(``k^3 c_out^3`` in 2-D, ``k^2 c_out^3`` in 1-D: hours of computation) or 2^29 output entries
raise ``ValueError``.

Randomness: every stochastic function takes ``rng`` (``None``, an ``int`` or a
``numpy.random.Generator``; an int ``n`` draws exactly the stream of ``numpy.random.default_rng(n)``).
"""

from __future__ import annotations

import math

import numpy as np

from .._checks import check_rng
from ._args import check_size, int_arg, real_array
from ._dense import haar_orthogonal

__all__ = [
    "MAX_KERNEL_WORK",
    "conv_matrix",
    "delta_orthogonal_kernel",
    "delta_orthogonal_kernel_1d",
    "orthogonal_conv_kernel",
    "orthogonal_conv_kernel_1d",
    "orthogonal_kernel_variance",
    "symmetric_projection",
]


#: Largest ``k^3 c_out^3`` (2-D) or ``k^2 c_out^3`` (1-D) accepted by Algorithm 1 (about 1e12
#: multiply-adds: minutes to an hour of NumPy).
MAX_KERNEL_WORK = 2**40


def symmetric_projection(n, rng=None) -> np.ndarray:
    """A random symmetric orthogonal projection ``P = U diag(m) U^T`` (``U`` Haar, ``m`` i.i.d. fair bits).

    The projections ``P_t, Q_t`` of Algorithm 1 (seed 003, eq. 2.17), drawn as in TensorFlow's
    ``ConvolutionOrthogonal`` initializer. ``P = P^T = P @ P``; its rank is Binomial(n, 1/2).

    Parameters
    ----------
    n : int
        Size, ``1 <= n``, ``n^2 <= 2**29``.
    rng : None, int or numpy.random.Generator
        Randomness (an int ``n`` gives the stream of ``numpy.random.default_rng(n)``).

    Returns
    -------
    ndarray, shape (n, n)

    Raises
    ------
    ValueError
        ``n`` out of range.
    TypeError
        ``n`` a bool, complex number or string; a bad ``rng``.
    """
    n = int_arg(n, "n", 1)
    check_size(n * n, "n^2")
    rng = check_rng(rng)
    u = haar_orthogonal(n, n, rng=rng)
    mask = rng.integers(0, 2, n).astype(np.float64)
    return (u * mask) @ u.T


def _check_channels(c_in, c_out):
    c_in = int_arg(c_in, "c_in", 1)
    c_out = int_arg(c_out, "c_out", 1)
    if c_in > c_out:
        raise ValueError(
            f"c_in must be <= c_out for an orthogonal kernel (norm preservation needs c_out >= c_in), got c_in={c_in} > c_out={c_out}"
        )
    return c_in, c_out


def _block_step(kernel, p, q):
    """K <- K box [[PQ, P(1-Q)], [(1-P)Q, (1-P)(1-Q)]] (eq. 2.17) for a 2-D block kernel of shape (a, b, c, c)."""
    eye = np.eye(p.shape[0])
    block = np.empty((2, 2) + p.shape)
    block[0, 0] = p @ q
    block[0, 1] = p @ (eye - q)
    block[1, 0] = (eye - p) @ q
    block[1, 1] = (eye - p) @ (eye - q)
    a, b = kernel.shape[:2]
    out = np.zeros((a + 1, b + 1) + p.shape)
    for i in range(2):
        for j in range(2):
            out[i : i + a, j : j + b] += kernel @ block[i, j]
    return out


def _check_kernel_request(k, c_in, c_out, ndim):
    """Output size and Algorithm 1's work bounded (``ValueError`` instead of MemoryError or hours)."""
    check_size(k**ndim * c_out * max(c_in, c_out), f"kernel_size^{ndim} * c_out^2")
    work = k ** (ndim + 1) * c_out**3
    if work > MAX_KERNEL_WORK:
        raise ValueError(
            f"kernel_size and c_out must satisfy kernel_size^{ndim + 1} * c_out^3 <= 2**40 (Algorithm 1 costs "
            f"O(k^{ndim + 1} c^3)), got kernel_size={k}, c_out={c_out}"
        )


def orthogonal_conv_kernel(kernel_size, c_in, c_out, rng=None) -> np.ndarray:
    """A random 2-D orthogonal convolution kernel, Algorithm 1 of seed 003.

    Parameters
    ----------
    kernel_size : int
        k (>= 1); the kernel is ``k x k``. Odd sizes are needed by the periodic-convolution
        simulators (offsets ``t - k // 2``); the construction itself works for any k.
    c_in, c_out : int
        Channel counts with ``1 <= c_in <= c_out``; ``k^3 c_out^3 <= 2**40``.
    rng : None, int or numpy.random.Generator
        Randomness (an int ``n`` gives the stream of ``numpy.random.default_rng(n)``).

    Returns
    -------
    ndarray, shape (k, k, c_in, c_out)
        ``sum_{beta} K(beta) K(beta)^T = I_{c_in}`` and, more strongly, the periodic convolution
        by K is an isometry (Definition 2.1) for every spatial size. Multiply by
        ``sqrt(sigma_w2)`` for weight variance ``sigma_w2``.

    Raises
    ------
    ValueError
        ``c_in > c_out``, a size < 1, or a request beyond ``MAX_KERNEL_WORK`` / 2^29 entries.
    TypeError
        Bools, complex numbers or strings as sizes; a bad ``rng``.
    """
    k = int_arg(kernel_size, "kernel_size", 1)
    c_in, c_out = _check_channels(c_in, c_out)
    _check_kernel_request(k, c_in, c_out, 2)
    rng = check_rng(rng)
    kernel = np.eye(c_out)[None, None]  # Step 1
    for _ in range(k - 1):  # Step 2
        kernel = _block_step(kernel, symmetric_projection(c_out, rng=rng), symmetric_projection(c_out, rng=rng))
    h = haar_orthogonal(c_out, c_in, rng=rng).T  # Step 3: c_in x c_out, orthonormal rows
    return np.ascontiguousarray(h @ kernel)


def orthogonal_conv_kernel_1d(kernel_size, c_in, c_out, rng=None) -> np.ndarray:
    """The 1-D analogue of Algorithm 1 (seed 003): ``K(z) = H prod_t (P_t + (1 - P_t) z)``.

    Parameters
    ----------
    kernel_size : int
        k (>= 1).
    c_in, c_out : int
        Channel counts with ``1 <= c_in <= c_out``; ``k^2 c_out^3 <= 2**40``.
    rng : None, int or numpy.random.Generator
        Randomness (an int ``n`` gives the stream of ``numpy.random.default_rng(n)``).

    Returns
    -------
    ndarray, shape (k, c_in, c_out)
        The periodic 1-D convolution by K is an isometry for every signal length (Definition 2.1).

    Raises
    ------
    ValueError
        ``c_in > c_out``, a size < 1, or a request beyond ``MAX_KERNEL_WORK`` / 2^29 entries.
    TypeError
        Bools, complex numbers or strings as sizes; a bad ``rng``.
    """
    k = int_arg(kernel_size, "kernel_size", 1)
    c_in, c_out = _check_channels(c_in, c_out)
    _check_kernel_request(k, c_in, c_out, 1)
    rng = check_rng(rng)
    kernel = np.eye(c_out)[None]
    eye = np.eye(c_out)
    for _ in range(k - 1):
        p = symmetric_projection(c_out, rng=rng)
        out = np.zeros((kernel.shape[0] + 1, c_out, c_out))
        out[:-1] += kernel @ p
        out[1:] += kernel @ (eye - p)
        kernel = out
    h = haar_orthogonal(c_out, c_in, rng=rng).T
    return np.ascontiguousarray(h @ kernel)


def delta_orthogonal_kernel(kernel_size, c_in, c_out, rng=None) -> np.ndarray:
    """Delta-orthogonal kernel, Algorithm 2 of seed 003: ``H`` at the centre ``[k//2, k//2]``, zero elsewhere.

    Parameters
    ----------
    kernel_size : int
        k (>= 1); the kernel is ``k x k``.
    c_in, c_out : int
        Channel counts with ``1 <= c_in <= c_out``.
    rng : None, int or numpy.random.Generator
        Randomness (an int ``n`` gives the stream of ``numpy.random.default_rng(n)``).

    Returns
    -------
    ndarray, shape (k, k, c_in, c_out)
        ``H`` has orthonormal rows (``c_in <= c_out``); the variance vector is one-hot, so every
        Fourier mode has ``lambda = 1`` (Sec. 2.4).

    Raises
    ------
    ValueError
        ``c_in > c_out``, a size < 1, or more than 2^29 entries.
    TypeError
        Bools, complex numbers or strings as sizes; a bad ``rng``.
    """
    k = int_arg(kernel_size, "kernel_size", 1)
    c_in, c_out = _check_channels(c_in, c_out)
    check_size(k * k * c_in * c_out, "kernel_size^2 * c_in * c_out")
    rng = check_rng(rng)
    kernel = np.zeros((k, k, c_in, c_out))
    kernel[k // 2, k // 2] = haar_orthogonal(c_out, c_in, rng=rng).T
    return kernel


def delta_orthogonal_kernel_1d(kernel_size, c_in, c_out, rng=None) -> np.ndarray:
    """1-D delta-orthogonal kernel (Algorithm 2 of seed 003 in one spatial dimension).

    Parameters
    ----------
    kernel_size : int
        k (>= 1).
    c_in, c_out : int
        Channel counts with ``1 <= c_in <= c_out``.
    rng : None, int or numpy.random.Generator
        Randomness (an int ``n`` gives the stream of ``numpy.random.default_rng(n)``).

    Returns
    -------
    ndarray, shape (k, c_in, c_out)
        ``H`` (orthonormal rows) at the centre ``k // 2``, zero elsewhere.

    Raises
    ------
    ValueError
        ``c_in > c_out``, a size < 1, or more than 2^29 entries.
    TypeError
        Bools, complex numbers or strings as sizes; a bad ``rng``.
    """
    k = int_arg(kernel_size, "kernel_size", 1)
    c_in, c_out = _check_channels(c_in, c_out)
    check_size(k * c_in * c_out, "kernel_size * c_in * c_out")
    rng = check_rng(rng)
    kernel = np.zeros((k, c_in, c_out))
    kernel[k // 2] = haar_orthogonal(c_out, c_in, rng=rng).T
    return kernel


def conv_matrix(kernel, spatial_shape) -> np.ndarray:
    """The dense block-circulant matrix of the periodic cross-correlation by ``kernel`` (seed 003, eq. 2.1).

    Parameters
    ----------
    kernel : array_like, shape (k, c_in, c_out) or (k1, k2, c_in, c_out)
        Index ``t`` <-> offset ``t - k // 2`` per axis.
    spatial_shape : int or (int, int)
        Signal size ``n`` (1-D) or ``(n1, n2)`` (2-D).

    Returns
    -------
    ndarray, shape (P * c_out, P * c_in)
        ``M @ x.ravel() == y.ravel()`` for ``x`` of shape (*spatial, c_in) and
        ``y_j(a) = sum_i sum_beta x_i(a + beta) K_ij(beta)`` (positions row-major, channels last).
        For an orthogonal kernel with ``c_in = c_out`` the matrix is orthogonal.

    Raises
    ------
    ValueError
        A non-finite kernel, shapes that do not match, or a matrix above 2^29 entries.
    TypeError
        A complex, boolean or non-numeric kernel; sizes that are not integers.
    """
    kernel = real_array(kernel, "kernel")
    if isinstance(spatial_shape, (tuple, list)):
        shape = tuple(int_arg(s, "spatial_shape", 1) for s in spatial_shape)
    else:
        shape = (int_arg(spatial_shape, "spatial_shape", 1),)
    d = len(shape)
    if d not in (1, 2) or kernel.ndim != d + 2:
        raise ValueError(f"kernel of shape {kernel.shape} does not match a {len(shape)}-D spatial_shape {shape}")
    ks = kernel.shape[:d]
    c_in, c_out = kernel.shape[-2:]
    p = math.prod(shape)
    check_size(p * c_out * p * c_in, "(prod(spatial_shape) * c)^2")
    if min(kernel.shape) == 0:
        raise ValueError(f"kernel must have non-empty axes, got shape {kernel.shape}")
    m = np.zeros((p, c_out, p, c_in))
    positions = list(np.ndindex(*shape))
    for t in np.ndindex(*ks):
        beta = tuple(ti - s // 2 for ti, s in zip(t, ks))
        block = kernel[t].T
        for ai, a in enumerate(positions):
            b = np.ravel_multi_index(tuple((x + y) % n for x, y, n in zip(a, beta, shape)), shape)
            m[ai, :, b, :] += block
    return m.reshape(p * c_out, p * c_in)


def orthogonal_kernel_variance(kernel_size, ndim=2) -> np.ndarray:
    r"""The variance vector ``v`` that Algorithm-1 kernels realise on average: a binomial, not uniform.

    With :math:`K(z) = H\prod_{t<k}(P_t + (1-P_t)z)` (per axis) and independent projections of mean
    :math:`\mathbb{E}P = I/2` (:func:`symmetric_projection`), each factor puts half of the weight on
    shift 0 and half on shift 1, and the cross terms vanish in expectation because
    :math:`P(1-P) = 0`. Hence :math:`\mathbb{E}\|K(\beta)\|_F^2 / c_{in} = \binom{k-1}{\beta}2^{-(k-1)}`
    per axis (an outer product in 2-D), and for ``c_in = c_out`` the cross-offset terms
    :math:`\mathrm{tr}\,K(\beta)^T K(\beta')/c` vanish in expectation, so a wide CNN with these kernels
    (times ``sqrt(sigma_w2)``) follows :func:`meanfield.conv.propagate` with this ``v``. Seed 003 calls
    these kernels spatially uniform (Sec. 3.4); their variance is in fact concentrated at the centre.

    Parameters
    ----------
    kernel_size : int
        k (>= 1).
    ndim : {1, 2}
        Spatial dimensions.

    Returns
    -------
    ndarray, shape (k,) or (k, k)
        Binomial weights summing to 1 (entries below 1e-308, far in the tails of large ``k``, are 0).

    Raises
    ------
    ValueError
        ``kernel_size < 1``, ``ndim`` not 1 or 2, more than 2^29 entries.
    TypeError
        Bools, complex numbers or strings.

    Examples
    --------
    >>> orthogonal_kernel_variance(3, ndim=1)
    array([0.25, 0.5 , 0.25])
    """
    from scipy.special import comb, gammaln  # noqa: PLC0415

    k = int_arg(kernel_size, "kernel_size", 1)
    ndim = int_arg(ndim, "ndim", 1, 2)
    check_size(k**ndim, "kernel_size^ndim")
    beta = np.arange(k)
    if k <= 1000:  # exact binomials and power of two (2^(k-1) overflows beyond k = 1024)
        b = comb(k - 1, beta) / 2.0 ** (k - 1)
    else:
        with np.errstate(under="ignore"):
            b = np.exp(gammaln(k) - gammaln(beta + 1.0) - gammaln(k - beta) - (k - 1) * np.log(2.0))
        b[b < np.finfo(np.float64).tiny] = 0.0
        b /= b.sum()  # lgamma differences are accurate to ~1e-13 relative; the weights sum to 1 exactly
    return b if ndim == 1 else np.outer(b, b)
