"""ZerO and ZerO* initialisation (Zhao, Schaefer & Anandkumar 2022; seed 002, part 3 Sec. A).

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

import numpy as np

from .._checks import check_int, check_rng
from ._dense import dense_weights

__all__ = ["hadamard", "zero_network", "zero_star_network", "zero_weights"]


def hadamard(m: int) -> np.ndarray:
    """The ``2^m x 2^m`` Sylvester-Hadamard matrix with entries ``+-1`` (``H H^T = 2^m I``).

    Entry ``(i, j)`` is ``(-1)^{popcount(i & j)}`` (Sylvester's recursive construction
    ``H_{m+1} = [[H_m, H_m], [H_m, -H_m]]``).
    """
    m = check_int(m, "m", 0, 30)
    h = np.ones((1, 1))
    for _ in range(m):
        h = np.block([[h, h], [h, -h]])
    return h


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
        ``n_out`` or ``n_in`` < 1.
    """
    n_out = check_int(n_out, "n_out", 1)
    n_in = check_int(n_in, "n_in", 1)
    if n_out <= n_in:
        return np.eye(n_out, n_in)
    m = int(np.ceil(np.log2(n_out)))
    c = 2.0 ** (-(m - 1) / 2.0)
    return c * hadamard(m)[:n_out, :n_in]


def zero_network(widths) -> list[np.ndarray]:
    """ZerO matrices of a dense network with widths ``widths[0] -> widths[1] -> ...`` (seed 002, Fig. 1's ZerO).

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
        Fewer than two widths or a width < 1.
    """
    widths = [check_int(w, "widths", 1) for w in widths]
    if len(widths) < 2:
        raise ValueError("widths must list at least an input and an output width")
    return [zero_weights(o, i) for i, o in zip(widths[:-1], widths[1:])]


def zero_star_network(widths, law="gaussian", rng=None, seed=None) -> list[np.ndarray]:
    """ZerO* (seed 002, part 3 Sec. A): random first layer with ``Var W = 1 / widths[0]``, ZerO elsewhere.

    Parameters
    ----------
    widths : sequence of int
        Layer widths (each >= 1), input first; at least two.
    law : {"gaussian", "uniform", "rademacher"}
        Law of the first layer's i.i.d. zero-mean symmetric entries.
    rng, seed
        Random Generator or seed (only the first layer is random).

    Returns
    -------
    list of ndarray
        As :func:`zero_network` with the first matrix replaced.

    Raises
    ------
    ValueError
        Bad ``widths`` or unknown ``law``.
    """
    mats = zero_network(widths)
    if law not in ("gaussian", "uniform", "rademacher"):
        raise ValueError(f"law must be gaussian, uniform or rademacher, got {law!r}")
    rng = check_rng(rng, seed)
    mats[0] = dense_weights(mats[0].shape[0], mats[0].shape[1], 1.0, law, rng=rng)
    return mats
