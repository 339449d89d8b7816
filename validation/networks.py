"""Finite random networks, simulated in batches on NumPy or CuPy.

Shared primitives
-----------------
:func:`periodic_conv` / :func:`periodic_conv_transpose`
    Periodic (circular) cross-correlation of eq. 2.1 of Xiao et al. (2018), 1-D or 2-D, channels
    last, and its adjoint (the backward pass with respect to the input).
"""

from __future__ import annotations

import itertools

from .backend import get_backend

__all__ = ["periodic_conv", "periodic_conv_transpose"]


def _offsets(kernel_shape):
    """Kernel indices and their offsets beta = j - k per spatial axis (eq. 2.1: j <-> j - k)."""
    for index in itertools.product(*(range(s) for s in kernel_shape)):
        yield index, tuple(j - s // 2 for j, s in zip(index, kernel_shape))


def periodic_conv(x, kernel, spatial_dims: int, backend="numpy"):
    """Periodic cross-correlation ``h_j(a) = sum_i sum_beta x_i(a + beta) K_ij(beta)``.

    Parameters
    ----------
    x : array, shape (..., *spatial, c_in)
        Signals with ``spatial_dims`` periodic spatial axes before the channel axis.
    kernel : array, shape (..., *kernel_spatial, c_in, c_out)
        Odd kernel sizes ``2k + 1``; index ``j`` is offset ``beta = j - k``. Leading axes broadcast
        against the leading axes of ``x`` after the spatial axes are aligned (e.g. one kernel per
        network: ``x`` (nets, batch, n, c), ``kernel`` (nets, 1, 2k+1, c, c)).
    spatial_dims : {1, 2}
    backend : str or Backend

    Returns
    -------
    array, shape (..., *spatial, c_out)
    """
    xp = get_backend(backend).xp
    ks = kernel.shape[kernel.ndim - 2 - spatial_dims : kernel.ndim - 2]
    if any(s % 2 == 0 for s in ks):
        raise ValueError(f"kernel spatial sizes must be odd (2k+1), got {tuple(ks)}")
    axes = tuple(range(x.ndim - 1 - spatial_dims, x.ndim - 1))
    out = None
    for index, beta in _offsets(ks):
        shifted = xp.roll(x, tuple(-b for b in beta), axis=axes)  # shifted[a] = x[a + beta]
        k = kernel[(Ellipsis,) + index + (slice(None), slice(None))]
        k = k.reshape(k.shape[:-2] + (1,) * (spatial_dims - 1) + k.shape[-2:])
        term = shifted @ k
        out = term if out is None else out + term
    return out


def periodic_conv_transpose(g, kernel, spatial_dims: int, backend="numpy"):
    """Adjoint of :func:`periodic_conv` with respect to ``x``: ``dx_i(a) = sum_beta sum_j g_j(a - beta) K_ij(beta)``.

    ``g`` has shape (..., *spatial, c_out); the result has shape (..., *spatial, c_in).
    """
    xp = get_backend(backend).xp
    ks = kernel.shape[kernel.ndim - 2 - spatial_dims : kernel.ndim - 2]
    axes = tuple(range(g.ndim - 1 - spatial_dims, g.ndim - 1))
    out = None
    for index, beta in _offsets(ks):
        shifted = xp.roll(g, beta, axis=axes)  # shifted[a] = g[a - beta]
        k = kernel[(Ellipsis,) + index + (slice(None), slice(None))]
        k = xp.swapaxes(k, -1, -2)
        k = k.reshape(k.shape[:-2] + (1,) * (spatial_dims - 1) + k.shape[-2:])
        term = shifted @ k
        out = term if out is None else out + term
    return out
