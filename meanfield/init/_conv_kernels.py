"""Xiao et al. 2018's kernel initialisers: Gaussian kernels (eq. 2.2), orthogonal kernels from symmetric
projections (Algorithm 1, eq. 2.17), delta-orthogonal kernels (Algorithm 2) and the variance vector of an
orthogonal kernel (private; re-exported by :mod:`meanfield.init`, layout notes in ``_conv``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from meanfield._deprecate import renamed_kwargs

from .._checks import check_probability_vector, check_rng
from ..backend import Backend, get_backend, matrix_transpose
from ._args import batch_shape, check_batch_size, check_size, int_arg, nonneg
from ._conv import MAX_KERNEL_WORK, _elements, _kernel_sizes
from ._dense import haar_orthogonal

__all__ = [
    "delta_orthogonal_kernel",
    "delta_orthogonal_kernel_1d",
    "gaussian_conv_kernel",
    "orthogonal_conv_kernel",
    "orthogonal_conv_kernel_1d",
    "orthogonal_kernel_variance",
    "symmetric_projection",
]


# --- initialisers ------------------------------------------------------------------------------------------


def symmetric_projection(n: int, rng: Any = None) -> np.ndarray:
    """A random symmetric orthogonal projection ``P = U diag(m) U^T`` (``U`` Haar, ``m`` i.i.d. fair bits).

    The projections ``P_t, Q_t`` of Algorithm 1 (Xiao et al. 2018, eq. 2.17), drawn as in TensorFlow's
    ``ConvolutionOrthogonal`` initializer. ``P = P^T = P @ P``; its rank is Binomial(n, 1/2).

    Parameters
    ----------
    n : int
        Size, ``1 <= n``, ``n^2 <= 2**29``.
    rng : None, int, SeedSequence or numpy.random.Generator
        Randomness (an int ``n`` gives the stream of ``numpy.random.default_rng(n)``).

    Returns
    -------
    ndarray, shape (n, n)
        ``P``, symmetric and idempotent.

    Raises
    ------
    ValueError
        ``n`` out of range or not an integer (a bool, a string or a non-integral float).
    TypeError
        ``n`` a complex number; a bad ``rng``.
    """
    n = int_arg(n, "n", 1)
    check_size(n * n, "n^2")
    rng = check_rng(rng)
    u = haar_orthogonal(n, n, rng=rng)
    mask = rng.integers(0, 2, n).astype(np.float64)
    return (u * mask) @ u.T


@renamed_kwargs(batch="batch_shape")
def gaussian_conv_kernel(
    kernel_shape: int | Sequence[int],
    c_in: int,
    c_out: int,
    *,
    sigma_w2: float = 1.0,
    v: ArrayLike | None = None,
    rng: Any = None,
    batch: int | tuple[int, ...] = (),
    backend: str | Backend = "numpy",
) -> Any:
    """I.i.d. Gaussian kernels of Xiao et al. 2018, eq. 2.2: ``omega_ji(beta) ~ N(0, sigma_w2 v_beta / c_in)``.

    Parameters
    ----------
    kernel_shape : int or tuple of 1 or 2 odd ints
        ``2k + 1`` (1-D) or ``(2k1 + 1, 2k2 + 1)`` (2-D).
    c_in, c_out : int
        Channel counts (>= 1).
    sigma_w2 : float
        Weight variance (>= 0, finite).
    v : array_like, optional
        Variance vector of shape ``kernel_shape``, non-negative and summing to 1 (default uniform;
        one-hot = the delta kernel).
    rng : None, int, SeedSequence or numpy.random.Generator
        Randomness (an int ``n`` gives the stream of ``numpy.random.default_rng(n)``); on CuPy also
        a CuPy Generator.
    batch_shape : int or tuple of int
        Leading axes of independent kernels (default none).
    backend : str or Backend
        ``"numpy"`` (default) or ``"cupy"``.

    Returns
    -------
    array, shape ``batch_shape + kernel_shape + (c_out, c_in)``
        On ``backend``. The normals are drawn in ``(..., c_in, c_out)`` order and a transposed
        view is returned.

    Raises
    ------
    ValueError
        Sizes out of range or not integers (bools, strings, non-integral floats), even kernel
        sizes, an invalid ``v`` or ``sigma_w2``, more than 2^29 numbers per kernel or 2^31 in all.
    TypeError
        Bools, complex numbers or strings as ``sigma_w2``; a bool, boolean ndarray or complex
        ``v``; complex sizes; a bad ``rng``; a ``batch_shape`` that is not an int, a tuple or a
        list.

    Notes
    -----
    Xiao et al. 2018, eq. 2.2 (the weight law of the CNN mean field, :func:`meanfield.conv.propagate`).

    Examples
    --------
    >>> k = gaussian_conv_kernel(3, 8, 8, sigma_w2=2.0, v=[0.0, 1.0, 0.0], rng=0, batch_shape=100)
    >>> k.shape, bool(np.all(k[:, [0, 2]] == 0))
    ((100, 3, 8, 8), True)
    >>> round(float(np.mean(k[:, 1] ** 2) * 8), 1)   # sigma_w2 v_0 = 2
    2.0
    """
    ks = _kernel_sizes(kernel_shape)
    c_in = int_arg(c_in, "c_in", 1)
    c_out = int_arg(c_out, "c_out", 1)
    sigma_w2 = nonneg(sigma_w2, "sigma_w2")
    batch = batch_shape(batch)
    check_size(_elements(ks) * c_in * c_out, "prod(kernel_shape) * c_in * c_out")
    check_batch_size(
        _elements(batch) * _elements(ks) * c_in * c_out, "prod(batch_shape) * prod(kernel_shape) * c_in * c_out"
    )
    if v is None:
        v = np.full(ks, 1.0 / _elements(ks))
    else:
        if isinstance(v, (bool, np.bool_)) or (isinstance(v, np.ndarray) and v.dtype == np.bool_):
            raise TypeError("v must hold real numbers, got booleans")
        v = check_probability_vector(v, "v")
        if v.shape != ks:
            raise ValueError(f"v has shape {v.shape}, expected the kernel shape {ks}")
    b = get_backend(backend)
    gen = b.rng(rng)
    std = b.asarray(np.sqrt(sigma_w2 * v / c_in)[..., None, None])
    return matrix_transpose(b.xp, std * gen.standard_normal(batch + ks + (c_in, c_out)))


def _check_channels(c_in: int, c_out: int) -> tuple[int, int]:
    c_in = int_arg(c_in, "c_in", 1)
    c_out = int_arg(c_out, "c_out", 1)
    if c_in > c_out:
        raise ValueError(
            f"c_in must be <= c_out for an orthogonal kernel (norm preservation needs c_out >= c_in), got c_in={c_in} > c_out={c_out}"
        )
    return c_in, c_out


def _scaled(kernel: np.ndarray, sigma_w2: float) -> np.ndarray:
    """``sqrt(sigma_w2) K`` in the library layout ``(..., c_out, c_in)`` (Algorithm 1 builds ``(..., c_in, c_out)``)."""
    out = np.ascontiguousarray(np.swapaxes(kernel, -1, -2))
    if sigma_w2 != 1.0:
        out *= math.sqrt(sigma_w2)
    return out


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


def _kernel_arguments(
    kernel_size: object, c_in: object, c_out: object, sigma_w2: object, rng: Any, ndim: int, algorithm_1: bool
) -> tuple[int, int, int, float, np.random.Generator]:
    """The checked ``(k, c_in, c_out, sigma_w2, rng)`` of the four orthogonal kernel constructors.

    Sizes first, then the size bound (Algorithm 1's work with ``algorithm_1``, else the entry count of
    a ``k^ndim`` delta kernel), then ``rng``.
    """
    k = int_arg(kernel_size, "kernel_size", 1)
    c_in, c_out = _check_channels(c_in, c_out)
    sigma_w2 = nonneg(sigma_w2, "sigma_w2")
    if algorithm_1:
        _check_kernel_request(k, c_in, c_out, ndim)
    else:
        check_size(
            k**ndim * c_in * c_out, "kernel_size^2 * c_in * c_out" if ndim == 2 else "kernel_size * c_in * c_out"
        )
    return k, c_in, c_out, sigma_w2, check_rng(rng)


def orthogonal_conv_kernel(
    kernel_size: int, c_in: int, c_out: int, *, sigma_w2: float = 1.0, rng: Any = None
) -> np.ndarray:
    """A random 2-D orthogonal convolution kernel, Algorithm 1 of Xiao et al. 2018.

    Parameters
    ----------
    kernel_size : int
        k (>= 1); the kernel is ``k x k``. Odd sizes are needed by :func:`periodic_conv` (offsets
        ``t - k // 2``); the construction itself works for any k.
    c_in, c_out : int
        Channel counts with ``1 <= c_in <= c_out``; ``k^3 c_out^3 <= 2**40``.
    sigma_w2 : float
        Weight variance (>= 0, finite): the kernel is ``sqrt(sigma_w2)`` times an orthogonal one
        (``sigma_w2 = gain^2``).
    rng : None, int, SeedSequence or numpy.random.Generator
        Randomness (an int ``n`` gives the stream of ``numpy.random.default_rng(n)``).

    Returns
    -------
    ndarray, shape (k, k, c_out, c_in)
        The library's layout. At ``sigma_w2 = 1``, ``sum_{beta} K(beta)^T K(beta) = I_{c_in}`` and,
        more strongly, the periodic convolution by K is an isometry (Definition 2.1) for every
        spatial size.

    Raises
    ------
    ValueError
        ``c_in > c_out``, a size < 1 or not an integer (a bool, a string or a non-integral
        float), a negative or non-finite ``sigma_w2``, or a request beyond ``MAX_KERNEL_WORK`` /
        2^29 entries.
    TypeError
        Complex sizes; a bool, complex number or string as ``sigma_w2``; a bad ``rng``.

    Notes
    -----
    Xiao et al. 2018, Algorithm 1 and eq. 2.17.
    """
    k, c_in, c_out, sigma_w2, rng = _kernel_arguments(kernel_size, c_in, c_out, sigma_w2, rng, 2, True)
    kernel = np.eye(c_out)[None, None]  # Step 1
    for _ in range(k - 1):  # Step 2
        kernel = _block_step(kernel, symmetric_projection(c_out, rng=rng), symmetric_projection(c_out, rng=rng))
    h = haar_orthogonal(c_out, c_in, rng=rng).T  # Step 3: c_in x c_out, orthonormal rows
    return _scaled(h @ kernel, sigma_w2)


def orthogonal_conv_kernel_1d(
    kernel_size: int, c_in: int, c_out: int, *, sigma_w2: float = 1.0, rng: Any = None
) -> np.ndarray:
    """The 1-D analogue of Algorithm 1 (Xiao et al. 2018): ``K(z) = H prod_t (P_t + (1 - P_t) z)``.

    Parameters
    ----------
    kernel_size, c_in, c_out, sigma_w2, rng
        As in :func:`orthogonal_conv_kernel` (here ``k^2 c_out^3 <= 2**40``).

    Returns
    -------
    ndarray, shape (k, c_out, c_in)
        At ``sigma_w2 = 1`` the periodic 1-D convolution by K is an isometry for every signal length
        (Definition 2.1).

    Raises
    ------
    ValueError, TypeError
        As :func:`orthogonal_conv_kernel`.

    Examples
    --------
    >>> k = orthogonal_conv_kernel_1d(3, 2, 3, rng=0)
    >>> k.shape, bool(np.allclose(np.einsum("toi,toj->ij", k, k), np.eye(2)))
    ((3, 3, 2), True)
    """
    k, c_in, c_out, sigma_w2, rng = _kernel_arguments(kernel_size, c_in, c_out, sigma_w2, rng, 1, True)
    kernel = np.eye(c_out)[None]
    eye = np.eye(c_out)
    for _ in range(k - 1):
        p = symmetric_projection(c_out, rng=rng)
        out = np.zeros((kernel.shape[0] + 1, c_out, c_out))
        out[:-1] += kernel @ p
        out[1:] += kernel @ (eye - p)
        kernel = out
    h = haar_orthogonal(c_out, c_in, rng=rng).T
    return _scaled(h @ kernel, sigma_w2)


def delta_orthogonal_kernel(
    kernel_size: int, c_in: int, c_out: int, *, sigma_w2: float = 1.0, rng: Any = None
) -> np.ndarray:
    """Delta-orthogonal kernel, Algorithm 2 of Xiao et al. 2018: ``H`` at the centre ``[k//2, k//2]``, zero elsewhere.

    Parameters
    ----------
    kernel_size : int
        k (>= 1); the kernel is ``k x k``.
    c_in, c_out : int
        Channel counts with ``1 <= c_in <= c_out``.
    sigma_w2 : float
        Weight variance (>= 0, finite): ``sqrt(sigma_w2)`` times ``H``.
    rng : None, int, SeedSequence or numpy.random.Generator
        Randomness (an int ``n`` gives the stream of ``numpy.random.default_rng(n)``).

    Returns
    -------
    ndarray, shape (k, k, c_out, c_in)
        ``H`` (``c_out x c_in``, orthonormal columns) at the centre; the variance vector is one-hot,
        so every Fourier mode has ``lambda = 1`` (Sec. 2.4).

    Raises
    ------
    ValueError
        ``c_in > c_out``, a size < 1 or not an integer (a bool, a string or a non-integral
        float), a negative or non-finite ``sigma_w2``, or more than 2^29 entries.
    TypeError
        Complex sizes; a bool, complex number or string as ``sigma_w2``; a bad ``rng``.
    """
    k, c_in, c_out, sigma_w2, rng = _kernel_arguments(kernel_size, c_in, c_out, sigma_w2, rng, 2, False)
    kernel = np.zeros((k, k, c_in, c_out))
    kernel[k // 2, k // 2] = haar_orthogonal(c_out, c_in, rng=rng).T
    return _scaled(kernel, sigma_w2)


def delta_orthogonal_kernel_1d(
    kernel_size: int, c_in: int, c_out: int, *, sigma_w2: float = 1.0, rng: Any = None
) -> np.ndarray:
    """1-D delta-orthogonal kernel (Algorithm 2 of Xiao et al. 2018 in one spatial dimension).

    Parameters
    ----------
    kernel_size, c_in, c_out, sigma_w2, rng
        As in :func:`delta_orthogonal_kernel`.

    Returns
    -------
    ndarray, shape (k, c_out, c_in)
        ``H`` (orthonormal columns) at the centre ``k // 2``, zero elsewhere.

    Raises
    ------
    ValueError, TypeError
        As :func:`delta_orthogonal_kernel`.
    """
    k, c_in, c_out, sigma_w2, rng = _kernel_arguments(kernel_size, c_in, c_out, sigma_w2, rng, 1, False)
    kernel = np.zeros((k, c_in, c_out))
    kernel[k // 2] = haar_orthogonal(c_out, c_in, rng=rng).T
    return _scaled(kernel, sigma_w2)


def orthogonal_kernel_variance(kernel_size: int, ndim: int = 2) -> np.ndarray:
    r"""The variance vector ``v`` that Algorithm-1 kernels realise on average: a binomial, not uniform.

    With :math:`K(z) = H\prod_{t<k}(P_t + (1-P_t)z)` (per axis) and independent projections of mean
    :math:`\mathbb{E}P = I/2` (:func:`symmetric_projection`), each factor puts half of the weight on
    shift 0 and half on shift 1, and the cross terms vanish in expectation because
    :math:`P(1-P) = 0`. Hence :math:`\mathbb{E}\|K(\beta)\|_F^2 / c_{in} = \binom{k-1}{\beta}2^{-(k-1)}`
    per axis (an outer product in 2-D), and for ``c_in = c_out`` the cross-offset terms
    :math:`\mathrm{tr}\,K(\beta)^T K(\beta')/c` vanish in expectation, so a wide CNN with these kernels
    (times ``sqrt(sigma_w2)``) follows :func:`meanfield.conv.propagate` with this ``v``. Xiao et al. 2018 calls
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
        ``kernel_size < 1``, ``ndim`` not 1 or 2, ``kernel_size`` or ``ndim`` not an integer (a
        bool, a string or a non-integral float), more than 2^29 entries.
    TypeError
        A complex ``kernel_size`` or ``ndim``.

    Examples
    --------
    >>> orthogonal_kernel_variance(3, ndim=1)
    array([0.25, 0.5 , 0.25])
    """
    from scipy.special import comb, gammaln

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
