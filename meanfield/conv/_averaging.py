"""Shapes, variance vectors and the averaging operator A_v (Xiao et al. 2018, eqs. 2.3-2.5; private)."""

from __future__ import annotations

import functools
import math

import numpy as np
from numpy.typing import ArrayLike

from .. import dense
from .._checks import as_real_array, check_int, default_spatial_shape
from ..checks import check_variance_vector

#: |chi * |lambda| - 1| below which a Fourier mode is called critical (infinite depth scale).
CRITICAL_ATOL = dense.CRITICAL_ATOL
#: Relative step of the central difference giving kappa (eq. S13) for activations with kinks,
#: whose phi'' has Dirac parts; the error is O(step^2) ~ 1e-10 relative for the arc-cosine family.
KAPPA_STEP = 1e-5
#: Most spatial positions P a shape may have (a 1024 x 1024 image): beyond it the Fourier
#: eigenvalues alone would take gigabytes, so sizes are refused at once with a ValueError.
MAX_POSITIONS = 2**20
#: Most positions of a P x P covariance the library allocates itself (:func:`fixed_point_covariance`):
#: 16,384^2 float64 entries are 2 GiB.
MAX_COVARIANCE_POSITIONS = 2**14
#: Most variance vectors :func:`gs_family` returns.
MAX_GS_COUNT = 10**5
#: Most layers :func:`multi_input_propagate` accepts (a Python-level step of a few ms per layer).
MAX_MULTI_INPUT_DEPTH = 2_000


# ----------------------------------------------------------------------------------------------
# Shapes, variance vectors and the averaging operator.


def spatial_shape(shape: int | tuple[int, ...] | None) -> tuple:
    """Normalise a ``shape`` argument: an int ``n`` (1-D) or a pair ``(n1, n2)`` (2-D), each >= 1.

    Xiao et al. 2018 treats 1-D signals (Sec. 2.1) and 2-D images (Sec. 3, Fig. 4) on periodic lattices.

    Parameters
    ----------
    shape : int or sequence of int
        ``n`` or ``(n,)`` (1-D) or ``(n1, n2)`` (2-D).

    Returns
    -------
    tuple of int
        ``(n,)`` or ``(n1, n2)``.

    Raises
    ------
    TypeError
        A complex size.
    ValueError
        A size < 1, a non-integer size, more than two dimensions, or more than
        :data:`MAX_POSITIONS` positions.
    """
    return _spatial_shape(shape, "shape")


def _spatial_shape(shape, name: str) -> tuple:
    """:func:`spatial_shape` with the argument's name in the messages."""
    if isinstance(shape, (tuple, list, np.ndarray)):
        dims = tuple(check_int(s, name, 1, MAX_POSITIONS) for s in shape)
        if len(dims) not in (1, 2):
            raise ValueError(f"{name} must be an int n (1-D) or a pair (n1, n2) (2-D), got {shape!r}")
    else:
        dims = (check_int(shape, name, 1, MAX_POSITIONS),)
    if math.prod(dims) > MAX_POSITIONS:
        raise ValueError(f"{name} {dims} has {math.prod(dims)} positions, more than MAX_POSITIONS = {MAX_POSITIONS}")
    return dims


def _check_v(v) -> np.ndarray:
    """:func:`meanfield.checks.check_variance_vector` after the strict real-number check of ``v``."""
    return check_variance_vector(as_real_array(v, "v"), "v")


def _resolve_shape(v, shape, size):
    """Spatial shape from ``shape`` or, if None, from the number of positions ``size``."""
    if shape is None:
        shape = default_spatial_shape(v.ndim, size)
    shape = spatial_shape(shape)
    if len(shape) != v.ndim:
        raise ValueError(f"shape {shape} has {len(shape)} dimension(s) but v has {v.ndim}")
    if size is not None and int(np.prod(shape)) != size:
        raise ValueError(f"shape {shape} has {int(np.prod(shape))} positions but the covariance has {size}")
    return shape


def _offsets(v):
    """(offset tuple beta, weight v_beta) for the non-zero entries of v (beta = j - k per axis)."""
    for index in zip(*np.nonzero(v)):
        yield tuple(int(j) - s // 2 for j, s in zip(index, v.shape)), float(v[index])


def _average(cov, v, shape, sign):
    d = len(shape)
    lead = cov.shape[:-2]
    x = cov.reshape(lead + shape + shape)
    axes_a = tuple(range(len(lead), len(lead) + d))
    axes_b = tuple(range(len(lead) + d, len(lead) + 2 * d))
    out = np.zeros_like(x)
    for beta, weight in _offsets(v):
        shift = tuple(-sign * b for b in beta) * 2  # rolled[a, a'] = x[a + s beta, a' + s beta]
        out += weight * np.roll(x, shift, axis=axes_a + axes_b)
    return out.reshape(cov.shape)


def _checked_average(cov, v, shape, sign):
    """:func:`_average` of checked arguments (``v``, then ``cov`` of shape (..., P, P), then ``shape``)."""
    v = _check_v(v)
    cov = as_real_array(cov, "cov")
    if cov.ndim < 2 or cov.shape[-1] != cov.shape[-2]:
        raise ValueError(f"cov must have shape (..., P, P), got {cov.shape}")
    return _average(cov, v, _resolve_shape(v, shape, cov.shape[-1]), sign)


def _average_plan(v, shape, sign):
    """``[(flat gather index, weight)]`` with ``_average(cov, v, shape, sign).ravel() ==
    sum weight * cov.ravel()[index]`` for one (P, P) matrix (the same rolls, built once per
    propagation: a gather per offset costs ~1 us where ``np.roll`` costs ~30 us, the per-layer
    overhead of :func:`propagate_log`)."""
    p = int(np.prod(shape))
    idx = np.arange(p * p).reshape(shape + shape)
    d = len(shape)
    axes = tuple(range(2 * d))
    plan = []
    for beta, weight in _offsets(v):
        shift = tuple(-sign * b for b in beta) * 2
        plan.append((np.roll(idx, shift, axis=axes).ravel(), weight))
    return plan


@functools.lru_cache(maxsize=64)
def _cached_plan_arrays(v_bytes, v_shape, shape, sign):
    v = np.frombuffer(v_bytes, dtype=np.float64).reshape(v_shape)
    plan = _average_plan(v, shape, sign)
    index = np.array([idx for idx, _ in plan], dtype=np.int64)
    weight = np.array([wt for _, wt in plan], dtype=np.float64)
    index.setflags(write=False)
    weight.setflags(write=False)
    return index, weight


def _plan_arrays(v, shape, sign):
    """:func:`_average_plan` as read-only arrays ``index`` (offsets, P^2) and ``weight`` (offsets,),
    cached by (v, shape, sign): building the plan (one ``np.roll`` per offset) was half the fixed
    cost of a small :func:`propagate`."""
    v = np.ascontiguousarray(v, dtype=np.float64)
    return _cached_plan_arrays(v.tobytes(), v.shape, tuple(int(n) for n in shape), int(sign))


def _apply_plan(cov, plan):
    """:func:`_average` of one (P, P) matrix through a plan of :func:`_average_plan` (same sums, same order)."""
    flat = cov.ravel()
    out = np.zeros_like(flat)
    for index, weight in plan:
        out += weight * flat[index]
    return out.reshape(cov.shape)


def average(cov: ArrayLike, v: ArrayLike, shape: int | tuple[int, ...] | None = None) -> np.ndarray:
    r"""The averaging operator :math:`[\mathcal{A}_v\star\Sigma]_{\alpha,\alpha'} = \sum_\beta v_\beta \Sigma_{\alpha+\beta,\alpha'+\beta}` (eqs. 2.4, S7).

    Parameters
    ----------
    cov : array_like, shape (..., P, P)
        Matrices over the P flattened positions (any real matrices, not only covariances).
    v : array_like
        Variance vector: shape (2k+1,) or (2k1+1, 2k2+1), non-negative, summing to 1.
    shape : int or (int, int), optional
        Spatial shape; default ``P`` (1-D) or the square ``(sqrt P, sqrt P)`` (2-D ``v``).

    Returns
    -------
    ndarray, shape (..., P, P)
        Preserves symmetry, positive semi-definiteness and the trace (a convex combination of
        simultaneous cyclic shifts of rows and columns).
    """
    return _checked_average(cov, v, shape, +1)


def average_transpose(cov: ArrayLike, v: ArrayLike, shape: int | tuple[int, ...] | None = None) -> np.ndarray:
    r"""The adjoint :math:`[\mathcal{A}_v^T\star\Sigma]_{\alpha,\alpha'} = \sum_\beta v_\beta \Sigma_{\alpha-\beta,\alpha'-\beta}` (backward pass, Xiao et al. 2018 eq. 2.15).

    Parameters
    ----------
    cov : array_like, shape (..., P, P)
        Matrices over the P flattened positions.
    v : array_like
        Variance vector, shape (2k+1,) or (2k1+1, 2k2+1), non-negative, summing to 1.
    shape : int or (int, int), optional
        Spatial shape (see :func:`average`).

    Returns
    -------
    ndarray, shape (..., P, P)
        The transpose of :func:`average` with respect to the Frobenius inner product.
    """
    return _checked_average(cov, v, shape, -1)
