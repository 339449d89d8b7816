"""ZerO and ZerO* initialisation (Zhao, Schaefer & Anandkumar 2022; Grzejdziak 2023, part 3 Sec. A).

ZerO (Algorithm 1 of Zhao et al.) sets a weight matrix ``W`` of shape ``(P, Q)`` (fan-out ``P``,
fan-in ``Q``) deterministically from zeros and ones:

* ``P == Q``: the identity;
* ``P < Q``: the partial identity ``I*`` (propagate the first ``P`` coordinates);
* ``P > Q``: ``c I* H_m I*`` with ``H_m`` the ``2^m x 2^m`` Sylvester-Hadamard matrix,
  ``m = ceil(log2 P)``, ``c = 2^{-(m - 1)/2}``, and ``I*`` the truncations to ``P`` rows and
  ``Q`` columns (the top-left ``P x Q`` block of ``c H_m``).

ZerO* (Grzejdziak, part 3, Sec. A) initialises the *first* layer with i.i.d. zero-mean symmetric
weights of variance ``1 / w_0`` and every other layer as ZerO: its randomness acts on one layer
only, so neither the kurtosis nor the empirical variance drifts with depth.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._checks import check_rng
from ._args import check_law, check_size, int_arg
from ._dense import dense_weights

__all__ = ["hadamard", "zero_network", "zero_star_network", "zero_weights"]


def hadamard(m: int) -> np.ndarray:
    """The ``2^m x 2^m`` Sylvester-Hadamard matrix with entries ``+-1`` (``H H^T = 2^m I``).

    Entry ``(i, j)`` is ``(-1)^{popcount(i & j)}`` (Sylvester's recursive construction
    ``H_{m+1} = [[H_m, H_m], [H_m, -H_m]]``).

    Parameters
    ----------
    m : int
        ``0 <= m <= 14`` (``4^m <= 2^29`` entries).

    Returns
    -------
    ndarray, shape (2^m, 2^m)

    Raises
    ------
    ValueError
        ``m`` out of range or not an integer (a bool, a string or a non-integral float).
    TypeError
        ``m`` a complex number.

    Examples
    --------
    >>> hadamard(2)
    array([[ 1.,  1.,  1.,  1.],
           [ 1., -1.,  1., -1.],
           [ 1.,  1., -1., -1.],
           [ 1., -1., -1.,  1.]])
    """
    m = int_arg(m, "m", 0, 14)
    return _hadamard_block(1 << m, 1 << m)


def _hadamard_block(rows: int, cols: int) -> np.ndarray:
    """The top-left ``rows x cols`` block of any Sylvester-Hadamard matrix large enough: ``(-1)^popcount(i & j)``."""
    i = np.arange(rows, dtype=np.uint64)[:, None]
    j = np.arange(cols, dtype=np.uint64)[None, :]
    return 1.0 - 2.0 * (np.bitwise_count(i & j) & 1)


def zero_weights(n_out: int, n_in: int) -> np.ndarray:
    """The ZerO matrix of shape ``(n_out, n_in)`` (Algorithm 1 of Zhao et al. 2022; see the module notes).

    Parameters
    ----------
    n_out, n_in : int
        Fan-out ``P`` and fan-in ``Q`` (>= 1).

    Returns
    -------
    ndarray, shape (n_out, n_in)
        ``I`` / ``I*`` when ``n_out <= n_in``; else ``c I* H_m I*`` with ``m = ceil(log2 n_out)``,
        ``c = 2^{-(m-1)/2}`` (``W^T W = 2 I`` when ``n_out`` is a power of two: the ``sqrt 2``
        gain that compensates one ReLU). Deterministic.

    Raises
    ------
    ValueError
        ``n_out`` or ``n_in`` < 1 or not an integer (a bool, a string or a non-integral float),
        or ``n_out * n_in > 2**29``.
    TypeError
        Complex sizes.

    Examples
    --------
    >>> zero_weights(2, 3)          # partial identity
    array([[1., 0., 0.],
           [0., 1., 0.]])
    >>> w = zero_weights(4, 2)      # m = 2, c = 2^(-1/2): the top-left block of c H_2
    >>> bool(np.allclose(w * np.sqrt(2.0), hadamard(2)[:, :2])), bool(np.allclose(w.T @ w, 2 * np.eye(2)))
    (True, True)
    """
    n_out = int_arg(n_out, "n_out", 1)
    n_in = int_arg(n_in, "n_in", 1)
    check_size(n_out * n_in, "n_out * n_in")
    if n_out <= n_in:
        return np.eye(n_out, n_in)
    m = (n_out - 1).bit_length()  # ceil(log2 n_out), exact for any integer
    c = 2.0 ** (-(m - 1) / 2.0)
    return c * _hadamard_block(n_out, n_in)


def zero_network(widths: Sequence[int]) -> list[np.ndarray]:
    """ZerO matrices of a dense network with widths ``widths[0] -> widths[1] -> ...`` (Grzejdziak 2023, Fig. 1's ZerO).

    Parameters
    ----------
    widths : sequence of int
        Layer widths (each >= 1), input first; at least two.

    Returns
    -------
    list of ndarray
        ``zero_weights(widths[l + 1], widths[l])`` for each layer: identities where the width is
        kept, so the empirical variance after the first ReLU is constant with depth.

    Raises
    ------
    ValueError
        Fewer than two widths, a width < 1 or not an integer (a bool, a string or a non-integral
        float), or more than 2^29 entries in all.
    TypeError
        ``widths`` not a sequence (e.g. a str or a single int); a complex width.

    Examples
    --------
    >>> [w.shape for w in zero_network([3, 4, 4, 2])]
    [(4, 3), (4, 4), (2, 4)]
    """
    widths = _check_widths(widths)
    return [zero_weights(o, i) for i, o in zip(widths[:-1], widths[1:])]


def _check_widths(widths) -> list:
    if isinstance(widths, (str, bytes)) or not hasattr(widths, "__len__") or not hasattr(widths, "__iter__"):
        raise TypeError(f"widths must be a sequence of integers, got {widths!r}")
    widths = [int_arg(w, "widths", 1) for w in widths]
    if len(widths) < 2:
        raise ValueError("widths must list at least an input and an output width")
    check_size(sum(i * o for i, o in zip(widths[:-1], widths[1:])), "the total number of weights")
    return widths


def zero_star_network(
    widths: Sequence[int], law: str = "gaussian", rng: int | np.random.Generator | None = None
) -> list[np.ndarray]:
    """ZerO* (Grzejdziak 2023, part 3 Sec. A): random first layer with ``Var W = 1 / widths[0]``, ZerO elsewhere.

    Parameters
    ----------
    widths : sequence of int
        Layer widths (each >= 1), input first; at least two.
    law : {"gaussian", "uniform", "rademacher"}
        Law of the first layer's i.i.d. zero-mean symmetric entries.
    rng : None, int or numpy.random.Generator
        Randomness, first layer only (an int ``n`` gives the stream of ``numpy.random.default_rng(n)``).

    Returns
    -------
    list of ndarray
        As :func:`zero_network` with the first matrix replaced.

    Raises
    ------
    ValueError
        Bad ``widths`` (as :func:`zero_network`) or unknown ``law``.
    TypeError
        ``widths`` not a sequence (e.g. a str or a single int); a complex width; a bad ``rng``.

    Examples
    --------
    >>> mats = zero_star_network([3, 4, 4], law="rademacher", rng=0)
    >>> bool(np.allclose(np.abs(mats[0]), 1 / np.sqrt(3))), bool(np.array_equal(mats[1], np.eye(4)))  # Var W = 1 / 3
    (True, True)
    """
    law = check_law(law, ("gaussian", "uniform", "rademacher"))
    mats = zero_network(widths)
    rng = check_rng(rng)
    mats[0] = dense_weights(mats[0].shape[0], mats[0].shape[1], 1.0, law, rng=rng)
    return mats
