"""Looks-linear initialisation: GSM and orthogonal looks-linear (Burkholz & Dubatovka 2019, Sec. 3).

A layer of even widths is initialised as ``W = [[W0, -W0], [-W0, W0]]``. For an input of the form
``x = [relu(a), relu(-a)]`` the pre-activation is ``W x = [W0 a, -W0 a]``, so a ReLU network so
initialised propagates its pre-activation half exactly as the linear network ``prod_l W0^(l)``
(seed 001, Sec. 3: "effectively h^(l) = prod_l W0^(l) h0"). With Gaussian ``W0`` this is the
paper's Gaussian submatrix (GSM) initialisation; with orthogonal ``W0`` it achieves perfect
dynamical isometry of the pre-activation half.

Parametrisation: library convention, ``Var (W0)_ij = sigma_w2 / n_in`` with ``n_in`` the fan-in
of the full layer ``W``; the paper's ``sigma_w,l^2 = 2 / N_l`` is ``sigma_w2 = 2`` here.
"""

from __future__ import annotations

import numpy as np

from .._checks import check_rng
from ._args import check_size, int_arg, nonneg, real_array
from ._dense import haar_orthogonal

__all__ = ["gsm", "looks_linear", "looks_linear_input", "orthogonal_looks_linear"]


def looks_linear(w0) -> np.ndarray:
    """The looks-linear block matrix ``[[W0, -W0], [-W0, W0]]`` of shape ``(2 m, 2 n)``.

    Parameters
    ----------
    w0 : array_like, shape (m, n)
        The submatrix (Gaussian for GSM, orthogonal for the orthogonal looks-linear init).

    Returns
    -------
    ndarray, shape (2 m, 2 n)

    Raises
    ------
    ValueError
        ``w0`` not a finite matrix, or a result above 2^29 entries.
    TypeError
        ``w0`` complex, boolean or not numeric.
    """
    w0 = real_array(w0, "w0")
    if w0.ndim != 2:
        raise ValueError(f"w0 must be a matrix (m, n), got shape {w0.shape}")
    check_size(4 * w0.size, "4 * w0.size")
    return np.block([[w0, -w0], [-w0, w0]])


def looks_linear_input(x) -> np.ndarray:
    """Map inputs ``x`` (..., n) to ``[relu(x), relu(-x)]`` (..., 2 n), the form a looks-linear layer expects.

    ``looks_linear(W0) @ looks_linear_input(x) == [W0 x, -W0 x]`` (seed 001, Sec. 3).

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


def _half(n, name):
    n = int_arg(n, name, 2)
    if n % 2:
        raise ValueError(f"{name} must be even for a looks-linear layer, got {n}")
    return n // 2


def gsm(n_out, n_in, sigma_w2=2.0, rng=None) -> np.ndarray:
    """Gaussian submatrix (GSM) initialisation: ``looks_linear(W0)``, ``W0_ij ~ N(0, sigma_w2 / n_in)``.

    Parameters
    ----------
    n_out, n_in : int
        Even layer widths; ``W0`` has shape ``(n_out / 2, n_in / 2)``.
    sigma_w2 : float
        ``n_in * Var W0_ij``; the paper's He-like choice ``2 / N`` is ``sigma_w2 = 2``, which makes
        the linear half-network of width ``n / 2`` variance preserving.
    rng : None, int or numpy.random.Generator
        Randomness (an int ``n`` gives the stream of ``numpy.random.default_rng(n)``).

    Returns
    -------
    ndarray, shape (n_out, n_in)
        ``[[W0, -W0], [-W0, W0]]`` (seed 001, Sec. 3).

    Raises
    ------
    ValueError
        Odd or non-positive widths, ``n_out * n_in > 2**29``, negative or non-finite ``sigma_w2``.
    TypeError
        Bools, complex numbers or strings where numbers are expected; a bad ``rng``.
    """
    m, n = _half(n_out, "n_out"), _half(n_in, "n_in")
    sigma_w2 = nonneg(sigma_w2, "sigma_w2")
    check_size(4 * m * n, "n_out * n_in")
    rng = check_rng(rng)
    return looks_linear(np.sqrt(sigma_w2 / n_in) * rng.standard_normal((m, n)))


def orthogonal_looks_linear(n_out, n_in, gain=1.0, rng=None) -> np.ndarray:
    """Orthogonal looks-linear initialisation: ``looks_linear(gain * W0)``, ``W0`` Haar orthogonal.

    With ``n_out = n_in`` and ``gain = 1`` the pre-activation half is propagated by an orthogonal
    matrix: every singular value of its input-output map equals 1 (seed 001, Sec. 3).

    Parameters
    ----------
    n_out, n_in : int
        Even layer widths; ``W0`` has shape ``(n_out / 2, n_in / 2)`` with orthonormal rows or
        columns.
    gain : float
        Scale of ``W0`` (>= 0, finite).
    rng : None, int or numpy.random.Generator
        Randomness (an int ``n`` gives the stream of ``numpy.random.default_rng(n)``).

    Returns
    -------
    ndarray, shape (n_out, n_in)

    Raises
    ------
    ValueError
        Odd or non-positive widths, ``n_out * n_in > 2**29``, negative or non-finite ``gain``.
    TypeError
        Bools, complex numbers or strings where numbers are expected; a bad ``rng``.
    """
    m, n = _half(n_out, "n_out"), _half(n_in, "n_in")
    gain = nonneg(gain, "gain")
    check_size(4 * m * n, "n_out * n_in")
    rng = check_rng(rng)
    return looks_linear(gain * haar_orthogonal(m, n, rng=rng))
