"""Looks-linear initialisation: GSM and orthogonal looks-linear (Burkholz & Dubatovka 2019, Sec. 3).

A layer of even widths is initialised as ``W = [[W0, -W0], [-W0, W0]]``. For an input of the form
``x = [relu(a), relu(-a)]`` the pre-activation is ``W x = [W0 a, -W0 a]``, so a ReLU network so
initialised propagates its pre-activation half exactly as the linear network ``prod_l W0^(l)``
(Burkholz & Dubatovka 2019, Sec. 3: "effectively h^(l) = prod_l W0^(l) h0"). With Gaussian ``W0`` this is the
paper's Gaussian submatrix (GSM) initialisation; with orthogonal ``W0`` it achieves perfect
dynamical isometry of the pre-activation half.

Parametrisation: library convention, ``Var (W0)_ij = sigma_w2 / n_in`` with ``n_in`` the fan-in
of the full layer ``W``; the paper's ``sigma_w,l^2 = 2 / N_l`` is ``sigma_w2 = 2`` here. The
orthogonal construction is scaled by ``sqrt(sigma_w2)`` too (``sigma_w2 = gain^2``).

This module holds the library's one looks-linear construction: the Blumenfeld et al. 2020 delta-orthogonal
kernels (:func:`meanfield.init.looks_linear_delta_orthogonal`) and the GSM networks of the
Grzejdziak 2023 simulators (:mod:`meanfield.simulate`) are built with it; :func:`gsm` and
:func:`orthogonal_looks_linear` take ``batch_shape`` and ``backend`` as :func:`dense_weights` does.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from meanfield._deprecate import renamed_kwargs
from meanfield._docstrings import doc_sections

from ..backend import Backend, concat, get_backend
from ._args import DOC_MATRIX_DRAW, batch_shape, check_batch_size, check_size, int_arg, nonneg, real_array
from ._dense import haar_orthogonal

__all__ = ["gsm", "looks_linear", "looks_linear_input", "orthogonal_looks_linear"]


def _block(xp: Any, w0: Any) -> Any:
    """``[[W0, -W0], [-W0, W0]]`` over the last two axes of ``w0`` (any batch, any backend)."""
    top = concat(xp, [w0, -w0], axis=-1)
    return concat(xp, [top, -top], axis=-2)


def looks_linear(w0: ArrayLike) -> np.ndarray:
    """The looks-linear block matrix ``[[W0, -W0], [-W0, W0]]`` of shape ``(2 m, 2 n)``.

    Parameters
    ----------
    w0 : array_like, shape (..., m, n)
        The submatrix (Gaussian for GSM, orthogonal for the orthogonal looks-linear init); leading
        axes are a batch of independent submatrices.

    Returns
    -------
    ndarray, shape (..., 2 m, 2 n)

    Raises
    ------
    ValueError
        ``w0`` not a finite array of at least two axes, or a result above 2^29 entries per matrix
        (2^31 in all).
    TypeError
        ``w0`` complex, boolean or not numeric.

    Examples
    --------
    >>> looks_linear([[1.0, 2.0]])
    array([[ 1.,  2., -1., -2.],
           [-1., -2.,  1.,  2.]])
    """
    w0 = real_array(w0, "w0")
    if w0.ndim < 2:
        raise ValueError(f"w0 must be a matrix (m, n) or a stack of them (..., m, n), got shape {w0.shape}")
    check_size(4 * w0.shape[-1] * w0.shape[-2], "4 * m * n")
    check_batch_size(4 * w0.size, "4 * w0.size")
    return _block(np, w0)


def looks_linear_input(x: ArrayLike) -> np.ndarray:
    """Map inputs ``x`` (..., n) to ``[relu(x), relu(-x)]`` (..., 2 n), the form a looks-linear layer expects.

    ``looks_linear(W0) @ looks_linear_input(x) == [W0 x, -W0 x]`` (Burkholz & Dubatovka 2019, Sec. 3).

    Parameters
    ----------
    x : array_like, shape (..., n)

    Returns
    -------
    ndarray, shape (..., 2 n)

    Raises
    ------
    ValueError
        ``x`` not finite, 0-dimensional, or a result above 2^29 entries.
    TypeError
        ``x`` complex, boolean or not numeric.
    """
    x = real_array(x, "x")
    if x.ndim == 0:
        raise ValueError("x must have at least one axis (..., n)")
    check_size(2 * x.size, "2 * x.size")
    return np.concatenate([np.maximum(x, 0.0), np.maximum(-x, 0.0)], axis=-1)


#: The Raises section of :func:`gsm` and :func:`orthogonal_looks_linear`.
_DOC_RAISES = """
Raises
------
ValueError
    Odd or non-positive widths, widths that are not integers (bools, strings, non-integral
    floats), ``n_out * n_in > 2**29``, negative or non-finite ``sigma_w2``.
TypeError
    Bools, complex numbers or strings as ``sigma_w2``; complex widths; a bad ``rng``; a
    ``batch_shape`` that is not an int, a tuple or a list.
"""


def _half(n: int, name: str) -> int:
    n = int_arg(n, name, 2)
    if n % 2:
        raise ValueError(f"{name} must be even for a looks-linear layer, got {n}")
    return n // 2


def _block_arguments(n_out, n_in, sigma_w2, batch, backend):
    """Checked ``(m, n, sigma_w2, batch, backend)`` of a looks-linear matrix of ``m x n`` blocks ``W0``."""
    m, n = _half(n_out, "n_out"), _half(n_in, "n_in")
    sigma_w2 = nonneg(sigma_w2, "sigma_w2")
    check_size(4 * m * n, "n_out * n_in")
    batch = batch_shape(batch)
    check_batch_size(math.prod(batch) * 4 * m * n, "prod(batch_shape) * n_out * n_in")
    return m, n, sigma_w2, batch, get_backend(backend)


@renamed_kwargs(batch="batch_shape")
@doc_sections(matrix_draw=DOC_MATRIX_DRAW, looks_linear_raises=_DOC_RAISES)
def gsm(
    n_out: int,
    n_in: int,
    sigma_w2: float = 2.0,
    rng: Any = None,
    *,
    batch: int | tuple[int, ...] = (),
    backend: str | Backend = "numpy",
) -> Any:
    """Gaussian submatrix (GSM) initialisation: ``looks_linear(W0)``, ``W0_ij ~ N(0, sigma_w2 / n_in)``.

    Parameters
    ----------
    n_out, n_in : int
        Even layer widths; ``W0`` has shape ``(n_out / 2, n_in / 2)``.
    sigma_w2 : float
        ``n_in * Var W0_ij``; the paper's He-like choice ``2 / N`` is ``sigma_w2 = 2``, which makes
        the linear half-network of width ``n / 2`` variance preserving.
    {matrix_draw}

    Returns
    -------
    array, shape ``batch_shape + (n_out, n_in)``
        ``[[W0, -W0], [-W0, W0]]`` (Burkholz & Dubatovka 2019, Sec. 3), on ``backend``.

    {looks_linear_raises}

    Examples
    --------
    >>> w = gsm(4, 6, rng=0)
    >>> bool(np.array_equal(w[:2, :3], -w[2:, :3]) and np.array_equal(w[:2, :3], w[2:, 3:]))
    True
    """
    m, n, sigma_w2, batch, b = _block_arguments(n_out, n_in, sigma_w2, batch, backend)
    gen = b.rng(rng)
    return _block(b.xp, math.sqrt(sigma_w2 / n_in) * gen.standard_normal(batch + (m, n)))


@renamed_kwargs(batch="batch_shape")
@doc_sections(matrix_draw=DOC_MATRIX_DRAW, looks_linear_raises=_DOC_RAISES)
def orthogonal_looks_linear(
    n_out: int,
    n_in: int,
    sigma_w2: float = 1.0,
    rng: Any = None,
    *,
    batch: int | tuple[int, ...] = (),
    backend: str | Backend = "numpy",
) -> Any:
    """Orthogonal looks-linear initialisation: ``looks_linear(sqrt(sigma_w2) W0)``, ``W0`` Haar orthogonal.

    With ``n_out = n_in`` and ``sigma_w2 = 1`` the pre-activation half is propagated by an
    orthogonal matrix: every singular value of its input-output map equals 1 (Burkholz & Dubatovka 2019, Sec. 3).

    Parameters
    ----------
    n_out, n_in : int
        Even layer widths; ``W0`` has shape ``(n_out / 2, n_in / 2)`` with orthonormal rows or
        columns.
    sigma_w2 : float
        Scale of ``W0`` squared (>= 0, finite): ``sigma_w2 = gain^2`` of an orthogonal initialiser.
    {matrix_draw}

    Returns
    -------
    array, shape ``batch_shape + (n_out, n_in)``
        ``[[V, -V], [-V, V]]`` with ``V = sqrt(sigma_w2) W0`` (Burkholz & Dubatovka 2019, Sec. 3), on ``backend``.

    {looks_linear_raises}

    Examples
    --------
    >>> w = orthogonal_looks_linear(4, 4, sigma_w2=4.0, rng=0)
    >>> w0 = w[:2, :2]
    >>> bool(np.allclose(w0 @ w0.T, 4.0 * np.eye(2)))
    True
    """
    m, n, sigma_w2, batch, b = _block_arguments(n_out, n_in, sigma_w2, batch, backend)
    return _block(b.xp, math.sqrt(sigma_w2) * haar_orthogonal(m, n, rng, batch_shape=batch, backend=b))
