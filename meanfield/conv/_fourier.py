"""Fourier structure of A_v: eigenvalues, singular values, cyclic diagonals (Xiao et al. 2018, eq. 2.11; private)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .._checks import as_real_array, check_int
from ._averaging import MAX_GS_COUNT, _check_v, _offsets, _spatial_shape, spatial_shape

# ----------------------------------------------------------------------------------------------
# Fourier structure.


def _ring(v, shape):
    """v placed on the periodic lattice: u[beta mod n] += v_beta."""
    u = np.zeros(shape)
    for beta, weight in _offsets(v):
        u[tuple(b % n for b, n in zip(beta, shape))] += weight
    return u


def fourier_eigenvalues(v: ArrayLike, shape: int | tuple[int, ...] | None) -> np.ndarray:
    r"""Eigenvalues :math:`\lambda_m = \sum_\beta v_\beta e^{2\pi i\, m\cdot\beta/n}` of :math:`\mathcal{A}_v\star`, one per Fourier mode.

    Mode ``m`` (an index in ``range(n)``, or a pair in 2-D) of every cyclic diagonal of a
    covariance is an eigenvector of :math:`\mathcal{A}_v\star` (see the module notes); the paper's
    :math:`\lambda_{\alpha,\alpha'} = \mathcal{F}(A_v)^*_{\alpha,\alpha'}` (eq. 2.11) are these values,
    each repeated n times.

    Parameters
    ----------
    v : array_like
        Variance vector, shape (2k+1,) or (2k1+1, 2k2+1).
    shape : int or (int, int)
        Spatial shape; offsets wrap around when the kernel is wider than the signal.

    Returns
    -------
    ndarray of complex, shape ``shape``
        ``conj(fftn(v on the ring))``; real when ``v`` is symmetric; ``lambda[0] = 1`` and
        ``|lambda| <= 1`` because ``v`` is a probability vector.
    """
    v = _check_v(v)
    shape = spatial_shape(shape)
    if len(shape) != v.ndim:
        raise ValueError(f"shape {shape} has {len(shape)} dimension(s) but v has {v.ndim}")
    return np.conj(np.fft.fftn(_ring(v, shape)))


def averaging_singular_values(v: ArrayLike, shape: int | tuple[int, ...] | None) -> np.ndarray:
    r"""Singular values of :math:`\mathcal{A}_v\star` in descending order (Xiao et al. 2018, Fig. 4b).

    :math:`\mathcal{A}_v\star` is a normal operator (a convex combination of commuting cyclic
    shifts), so its singular values are :math:`|\lambda_m|`; on P x P matrices each of the P values
    appears P times ("64 singular values, each with 64 copies" for 8 x 8 images).

    Parameters
    ----------
    v : array_like
        Variance vector, shape (2k+1,) or (2k1+1, 2k2+1).
    shape : int or (int, int)
        Spatial shape.

    Returns
    -------
    ndarray, shape (P,)
        ``|lambda_m|`` sorted in descending order, one per Fourier mode.
    """
    return np.sort(np.abs(fourier_eigenvalues(v, shape)).ravel())[::-1]


def gs_family(kernel_shape: tuple[int, ...] = (3, 3), count: int = 5) -> list[np.ndarray]:
    """The variance vectors GS0 ... GS{count-1} between the delta (GS0) and the uniform vector (last).

    ``GS_i = (1 - t_i) * delta + t_i * uniform`` with ``t_i = i / (count - 1)``. Xiao et al. 2018 (Sec. 3.3,
    Fig. 4) says only that GS1-GS3 "interpolate" between GS0 and GS4; linear interpolation is this
    library's choice.

    Parameters
    ----------
    kernel_shape : int or (int, int)
        Odd kernel size(s) ``2k+1``.
    count : int
        Number of vectors (``2 <= count <= MAX_GS_COUNT``).

    Returns
    -------
    list of ndarray, each of shape ``kernel_shape``
        Variance vectors (non-negative, summing to 1), GS0 first.
    """
    ks = _spatial_shape(kernel_shape, "kernel_shape")
    if any(s % 2 == 0 for s in ks):
        raise ValueError(f"kernel_shape must be odd (2k+1), got {ks}")
    count = check_int(count, "count", 2, MAX_GS_COUNT)
    delta = np.zeros(ks)
    delta[tuple(s // 2 for s in ks)] = 1.0
    uniform = np.full(ks, 1.0 / np.prod(ks))
    return [(1 - t) * delta + t * uniform for t in np.linspace(0.0, 1.0, count)]


def cyclic_diagonal_modes(cov: ArrayLike, shape: int | tuple[int, ...] | None = None) -> np.ndarray:
    r"""Fourier amplitudes of the cyclic diagonals :math:`e_d(\alpha) = \Sigma_{\alpha,\alpha+d}`.

    Parameters
    ----------
    cov : array_like, shape (..., P, P)
    shape : int or (int, int), optional
        Spatial shape (default: 1-D of size P).

    Returns
    -------
    ndarray of complex, shape ``(..., *shape, *shape)``
        ``out[..., d, m] = sum_a Sigma[a, a + d] exp(-2 pi i m a / n)`` (indices are pairs in 2-D).
        Under the linearised dynamics (eq. 2.11) each entry is multiplied by
        ``chi * lambda_m`` per layer.
    """
    cov = as_real_array(cov, "cov")
    if cov.ndim < 2 or cov.shape[-1] != cov.shape[-2]:
        raise ValueError(f"cov must have shape (..., P, P), got {cov.shape}")
    shape = spatial_shape(cov.shape[-1] if shape is None else shape)
    if int(np.prod(shape)) != cov.shape[-1]:
        raise ValueError(f"shape {shape} does not match {cov.shape[-1]} positions")
    lead = cov.shape[:-2]
    grids = np.meshgrid(*(np.arange(n) for n in shape), indexing="ij")
    a = np.ravel_multi_index(grids, shape)  # positions a, laid out on shape
    diags = np.empty(lead + shape + shape)
    for d in np.ndindex(*shape):
        b = np.ravel_multi_index(tuple((g + dd) % n for g, dd, n in zip(grids, d, shape)), shape)
        diags[(Ellipsis,) + d + (slice(None),) * len(shape)] = cov[..., a, b]
    axes = tuple(range(diags.ndim - len(shape), diags.ndim))
    return np.fft.fftn(diags, axes=axes)
