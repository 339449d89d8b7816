"""``T_l`` on a grid and propagated squared-norm laws (Burkholz & Dubatovka 2019, Prop. 1, Sec. 2.2, Fig. 1a)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from .._results import Result
from ..activations import RELU, Activation, get_activation
from ._common import (
    MAX_QUANTILES,
    TINY,
    binomial_log_weights,
    check_grid,
    check_method,
    check_size,
    fan_in_arg,
    int_arg,
    is_equidistant,
    lattice_law_to_cells,
    nonneg,
    nonneg_array,
    real_array,
    truncated_power,
    unscaled,
    width_arg,
)
from ._layer import Layer, check_layers

__all__ = ["DiscreteOperator", "discretize_operator", "grid_masses", "kernel_masses", "propagate_distribution"]


@dataclass(frozen=True)
class DiscreteOperator(Result):
    """``T_l`` as a column-stochastic matrix on the states {atom at 0} + cells (Burkholz & Dubatovka 2019, Sec. 2.2).

    State 0 is the atom ``z = 0``; state ``j >= 1`` the cell ``(grid[j-1], grid[j]]``. A law is a
    vector of masses ``p`` (sum 1); the next layer's is ``matrix @ p``.

    Attributes
    ----------
    grid : ndarray
        Cell edges, ``grid[0] = 0``.
    matrix : ndarray, shape (G, G)
        ``matrix[i, j] = P(next state i | state j)``; every column sums to 1 (mass beyond the last
        edge is put into the last cell, see ``tail``).
    tail : ndarray, shape (G,)
        Mass per column that fell beyond ``grid[-1]`` and was lumped into the last cell.
    layer : Layer
        The layer's parameters (``fan_in`` resolved).
    activation : str
    centers : ndarray, shape (G,)
        Property: representative points of the states.
    """

    grid: np.ndarray
    matrix: np.ndarray
    tail: np.ndarray
    layer: Layer
    activation: str

    @property
    def centers(self) -> np.ndarray:
        """Representative points of the states: 0 for the atom, cell midpoints otherwise."""
        return np.concatenate([[0.0], 0.5 * (self.grid[1:] + self.grid[:-1])])

    def eig(self) -> tuple[np.ndarray, np.ndarray]:
        """Eigenvalues (sorted by decreasing modulus) and eigenvectors (columns) of ``matrix``."""
        w, v = np.linalg.eig(self.matrix)
        order = np.argsort(-np.abs(w))
        return w[order], v[:, order]


def _source_nodes(grid, nodes_per_cell):
    """Gauss-Legendre nodes in every cell and their weights (summing to 1 per cell)."""
    x, w = np.polynomial.legendre.leggauss(nodes_per_cell)
    a, b = grid[:-1], grid[1:]
    y = 0.5 * (a + b)[:, None] + 0.5 * (b - a)[:, None] * x[None, :]
    return y, np.broadcast_to(0.5 * w, y.shape)


def _gamma_mixture_cdf(x, k, w):
    """``sum_k w_k P(k/2, x)`` (regularised lower incomplete gamma) for consecutive ``k``.

    Upward recurrence ``Q(a + 1, x) = Q(a, x) + x^a e^-x / Gamma(a + 1)`` on each parity chain
    (adds positive terms: stable), two ``gammaincc`` calls per chain instead of one per ``k``.
    """
    out = np.zeros(x.shape)
    with np.errstate(divide="ignore"):
        lx = np.log(x)
    for parity in (0, 1):
        sel = (k.astype(np.int64) % 2) == parity
        if not np.any(sel):
            continue
        ks, ws = k[sel], w[sel]
        a = ks[0] / 2
        q = special.gammaincc(a, x)
        for j, (_kk, ww) in enumerate(zip(ks, ws)):
            if j:
                a_prev = ks[j - 1] / 2
                q = q + np.exp(a_prev * lx - x - special.gammaln(a_prev + 1))
                q = np.minimum(q, 1.0)
            out += ww * (1.0 - q)
    return out


def _relu_cell_masses(y, grid, n, sw, sb):
    """``P(z in cell j | y)`` for each source ``y`` (1-d) and the tail mass beyond the grid."""
    s = sw * y + sb
    k, logw = binomial_log_weights(n)
    w = np.exp(logw)
    pos = s > 0
    with np.errstate(over="ignore"):
        # chi^2_k <= t  <=>  Gamma(k/2) <= t/2; beyond 1e300 every P(k/2, x) is 1 (no inf - inf below)
        x = np.minimum(grid[None, :] / np.where(pos, s, 1.0)[:, None] / 2.0, 1e300)
    cdf = _gamma_mixture_cdf(x, k, w)
    cont = np.diff(cdf, axis=1)  # mass in (grid[j-1], grid[j]] from the continuous part
    total_cont = 1.0 - 0.5**n  # exact, including pruned terms
    tail = np.maximum(total_cont - cdf[:, -1], 0.0)  # >= 0 up to rounding
    masses = np.zeros((y.size, grid.size))
    masses[:, 0] = 0.5**n
    masses[:, 1:] = cont
    masses[:, -1] += tail
    masses[~pos] = 0.0
    masses[~pos, 0] = 1.0
    masses[np.abs(masses) < TINY] = 0.0  # below the absolute accuracy (~1e-16): no subnormals
    tail = np.where(pos, tail, 0.0)
    return masses, tail


def _phi_squared(act, h):
    """``phi(h)^2`` as finite float64 values, or a ``ValueError`` naming the activation."""
    try:
        with np.errstate(all="ignore"):
            v = np.asarray(act.phi(h))
            if np.iscomplexobj(v) or v.shape != h.shape:
                raise TypeError(f"phi returned {v.dtype} of shape {v.shape} for {h.shape} inputs")
            u = v.astype(np.float64) ** 2
    except Exception as exc:  # a user-defined phi may raise anything
        raise ValueError(
            f"activation {act.name!r}: phi must map real arrays to real arrays of the same shape ({exc})"
        ) from exc
    if not np.all(np.isfinite(u)):
        raise ValueError(
            f"activation {act.name!r} gives non-finite phi(h)^2 for h ~ N(0, sigma_w2 / fan_in * y + sigma_b2) (NaN or overflow); "
            "the FFT path needs phi finite on the whole real line"
        )
    return u


def _fft_cell_masses(y, grid, n, sw, sb, act, n_quantiles):
    """Cell masses of ``sum_i phi(h_i)^2`` by FFT convolution on the equidistant grid (any activation).

    The law of ``u = phi(h)^2`` is represented by ``n_quantiles`` equiprobable Gaussian quantiles;
    exact zeros form an atom ``a``, the rest is spread onto the lattice ``j * dz`` linearly (mean
    preserving). ``(a + C)^N`` is formed by truncated FFT powers; lattice point ``j * dz`` is split
    half/half between cells ``j`` and ``j + 1`` (the cell edges it sits on).
    """
    dz = grid[1] - grid[0]
    size = grid.size  # lattice points 0..G-1
    probs = (np.arange(n_quantiles) + 0.5) / n_quantiles
    zq = special.ndtri(probs)
    masses = np.zeros((y.size, grid.size))
    tails = np.zeros(y.size)
    for i, yi in enumerate(y):
        s = sw * yi + sb
        if s <= 0:
            u = np.full(n_quantiles, _phi_squared(act, np.zeros(1))[0])
        else:
            u = _phi_squared(act, math.sqrt(s) * zq)
        is_zero = u == 0.0
        a = is_zero.mean()
        with np.errstate(over="ignore"):
            t = np.minimum(u[~is_zero] / dz, size + 1.0)  # beyond the lattice: all lumped, no int overflow
        lo = np.floor(t).astype(np.int64)
        frac = t - lo
        c = np.zeros(size + 1)
        np.add.at(c, np.minimum(lo, size), (1 - frac) / n_quantiles)
        np.add.at(c, np.minimum(lo + 1, size), frac / n_quantiles)
        c = c[:size]  # mass beyond the lattice never comes back: truncation is exact below
        p = c.copy()
        p[0] += a
        masses[i], tails[i] = lattice_law_to_cells(truncated_power(p, n), a**n)
    masses[masses < TINY] = 0.0  # below the absolute accuracy: no subnormals
    return masses, tails


def _check_variance_range(y, sw, sb):
    """``sw * y + sb`` (Burkholz & Dubatovka's variances) must be finite for every source."""
    with np.errstate(over="ignore"):
        top = sw * (float(np.max(y)) if np.size(y) else 0.0) + sb
    if not math.isfinite(top):
        raise ValueError(
            "sigma_w2 / fan_in * y + sigma_b2 (the pre-activation variance) must be finite; it overflows float64 here"
        )


def kernel_masses(
    y: ArrayLike,
    grid: ArrayLike,
    width: int,
    sigma_w2: float,
    sigma_b2: float = 0.0,
    activation: str | Activation = "relu",
    method: str = "auto",
    n_quantiles: int = 4096,
    *,
    fan_in: int | None = None,
) -> np.ndarray:
    """Law of the next squared norm given ``|x|^2 = y``, as masses on the states of ``grid`` (Burkholz & Dubatovka 2019, Prop. 1, Prop. 4).

    ReLU: closed form (Prop. 4; exact cell masses from chi-square CDFs). Any other built-in
    activation, or ``method="fft"``: the ``N``-fold convolution of the law of ``phi(h)^2``,
    ``h ~ N(0, sigma_w2 / fan_in * y + sigma_b2)``, by truncated FFT powers on the equidistant
    grid (Prop. 1).

    Parameters
    ----------
    y : float or array_like
        Previous squared norm(s) (>= 0); flattened.
    grid : array_like
        Cell edges starting at 0, strictly increasing (equidistant on the FFT path).
    width : int
        ``1 <= N <= MAX_WIDTH``.
    sigma_w2 : float
        Weight variance times fan-in (>= 0): ``W_ij ~ N(0, sigma_w2 / fan_in)``; He is 2.
    sigma_b2 : float
        Bias variance (>= 0).
    activation : str or Activation
        Built-in activation name (``"relu"`` has the closed form) or an ``Activation`` whose
        ``phi`` is finite on the real line (FFT path).
    method : {"auto", "closed", "fft"}
        ``"fft"`` forces the general path (e.g. to cross-check it against the closed form).
    n_quantiles : int
        Equiprobable Gaussian quantiles representing ``phi(h)^2`` on the FFT path,
        ``16 <= n_quantiles <= 2**24`` (validated on every path); the FFT path's error is
        O(grid step) + O(N / n_quantiles).
    fan_in : int, optional
        ``1 <= fan_in <= MAX_WIDTH``, the dimension of the previous signal; default ``width``.

    Returns
    -------
    ndarray, shape (len(y), len(grid))
        Row ``i``: mass of the atom at 0, then of each cell; rows sum to 1 (mass beyond the grid
        lumped into the last cell). Masses are probabilities accurate to ~1e-15 absolutely;
        those below the smallest normal float64 (e.g. the atom ``0.5^N`` for ``N > 1022``) are 0.

    Raises
    ------
    ValueError
        Bad grid, width, fan-in, variances, ``method``, ``n_quantiles``; integer arguments
        (``width``, ``n_quantiles``, ``fan_in``) that are bools, strings or non-integral floats;
        an activation whose ``phi(h)^2`` is not finite; a result larger than 2^29 numbers; a
        pre-activation variance ``sigma_w2 / fan_in * y + sigma_b2`` overflowing.
    TypeError
        Bools, complex numbers or strings where real numbers are expected; complex integer
        arguments.

    Examples
    --------
    >>> masses = kernel_masses(1.0, [0.0, 0.5, 1.0, 2.0], width=2, sigma_w2=2.0)
    >>> masses.round(4)      # atom 0.5^2, then the cells (0, 0.5], (0.5, 1], (1, 2] (+ tail)
    array([[0.25  , 0.3155, 0.1242, 0.3103]])
    """
    g = check_grid(grid)
    n = width_arg(width)
    y = np.ravel(nonneg_array(y, "y"))
    sw = unscaled(nonneg(sigma_w2, "sigma_w2"), fan_in_arg(fan_in, n))
    sb = nonneg(sigma_b2, "sigma_b2")
    act = get_activation(activation)
    method = check_method(method)
    n_quantiles = int_arg(n_quantiles, "n_quantiles", 16, MAX_QUANTILES)
    check_size(y.size * g.size, "len(y) * len(grid)")
    _check_variance_range(y, sw, sb)
    if act.code == RELU and method != "fft":
        return _relu_cell_masses(y, g, n, sw, sb)[0]
    if method == "closed":
        raise ValueError("method='closed' exists for activation 'relu' only")
    if not is_equidistant(g):
        raise ValueError(f"grid must be equidistant for the FFT path (activation {act.name!r})")
    return _fft_cell_masses(y, g, n, sw, sb, act, n_quantiles)[0]


def discretize_operator(
    grid: ArrayLike,
    width: int,
    sigma_w2: float,
    sigma_b2: float = 0.0,
    activation: str | Activation = "relu",
    nodes_per_cell: int = 3,
    n_quantiles: int = 4096,
    method: str = "auto",
    *,
    fan_in: int | None = None,
) -> DiscreteOperator:
    """A mass-conserving matrix for ``T_l`` on a grid, the atom at 0 included (Burkholz & Dubatovka 2019, Prop. 1).

    Column ``j`` is the law of the next squared norm given that the current one is distributed
    uniformly on cell ``j`` (Gauss-Legendre average over ``nodes_per_cell`` source points), or is
    exactly 0 (column 0).

    Parameters
    ----------
    grid : array_like
        Strictly increasing cell edges starting at 0 (any spacing for ReLU; equidistant for other
        activations).
    width, sigma_w2, sigma_b2
        As :func:`kernel_masses`.
    activation : str or Activation
        ``"relu"`` uses the closed-form kernel (chi-square CDFs, exact cell masses). Any other
        activation uses the ``N``-fold FFT convolution of the law of ``phi(h)^2`` (accuracy
        O(grid step)); its ``phi`` must be finite on the real line.
    nodes_per_cell : int
        Gauss-Legendre nodes per source cell, 1 to 64.
    n_quantiles : int
        Gaussian quantiles representing ``phi(h)^2`` on the FFT path, ``16 <= n_quantiles <= 2**24``
        (validated on every path).
    method : {"auto", "closed", "fft"}
        ``"auto"``: closed form for ReLU, FFT otherwise; ``"fft"`` forces the general path (used
        to cross-check it against the closed form).
    fan_in : int, optional
        ``1 <= fan_in <= MAX_WIDTH``, the dimension of the previous signal; default ``width``.

    Returns
    -------
    DiscreteOperator
        Column-stochastic ``matrix`` (every column sums to 1, the atom's column included). Entries
        are probabilities accurate to ~1e-15 absolutely; those below the smallest normal float64
        (e.g. the atom ``0.5^N`` for ``N > 1022``) are 0.

    Raises
    ------
    ValueError
        Bad grid (not starting at 0, not increasing, not equidistant on the FFT path), width or
        fan-in out of range, negative variances, bad ``nodes_per_cell``, ``n_quantiles`` or
        ``method``, integer arguments (``width``, ``nodes_per_cell``, ``n_quantiles``,
        ``fan_in``) that are bools, strings or non-integral floats, an activation with non-finite
        ``phi(h)^2``, ``(len(grid) * nodes_per_cell + 1) * len(grid)`` above 2^29.
    TypeError
        Bools, complex numbers or strings where real numbers are expected; complex integer
        arguments.

    Examples
    --------
    >>> op = discretize_operator(np.linspace(0.0, 6.0, 61), width=10, sigma_w2=2.0)
    >>> bool(np.allclose(op.matrix.sum(axis=0), 1.0)), round(float(op.eig()[0][1].real), 6)  # 1 - 0.5^10
    (True, 0.999023)
    """
    g = check_grid(grid)
    n = width_arg(width)
    fi = fan_in_arg(fan_in, n)
    sigma_w2 = nonneg(sigma_w2, "sigma_w2")
    sw = unscaled(sigma_w2, fi)
    sb = nonneg(sigma_b2, "sigma_b2")
    q = int_arg(nodes_per_cell, "nodes_per_cell", 1, 64)
    n_quantiles = int_arg(n_quantiles, "n_quantiles", 16, MAX_QUANTILES)
    method = check_method(method)
    act = get_activation(activation)
    if method == "closed" and act.code != RELU:
        raise ValueError("method='closed' exists for activation 'relu' only")
    check_size(((g.size - 1) * q + 1) * g.size, "(len(grid) * nodes_per_cell + 1) * len(grid)")
    _check_variance_range(g[-1:], sw, sb)
    y, wts = _source_nodes(g, q)
    src = np.concatenate([[0.0], y.reshape(-1)])
    if act.code == RELU and method != "fft":
        masses, tail = _relu_cell_masses(src, g, n, sw, sb)
    else:
        if not is_equidistant(g):
            raise ValueError(f"grid must be equidistant for activation {act.name!r} (FFT convolution)")
        masses, tail = _fft_cell_masses(src, g, n, sw, sb, act, n_quantiles)
    G = g.size
    mat = np.empty((G, G))
    mat[:, 0] = masses[0]
    cellm = masses[1:].reshape(G - 1, q, G)
    mat[:, 1:] = np.einsum("cq,cqg->gc", wts, cellm)
    tails = np.concatenate([[tail[0]], (tail[1:].reshape(G - 1, q) * wts).sum(1)])
    mat /= mat.sum(axis=0, keepdims=True)  # exact to rounding already; removes the last ulp
    mat[mat < TINY] = 0.0
    return DiscreteOperator(grid=g, matrix=mat, tail=tails, layer=Layer(n, sigma_w2, sb, fi), activation=act.name)


def grid_masses(samples: ArrayLike, grid: ArrayLike) -> np.ndarray:
    """Masses of the empirical law of ``samples`` (squared norms) on the states of ``grid``.

    The state layout of :class:`DiscreteOperator` (Burkholz & Dubatovka 2019, Sec. 2.2: the law of ``|x^(0)|^2``
    that :func:`propagate_distribution` takes as ``p0``). Exact zeros go to the atom (state 0);
    values beyond the last edge go to the last cell.

    Parameters
    ----------
    samples : array_like
        Squared norms (>= 0), at least one; flattened.
    grid : array_like
        Cell edges, starting at 0, strictly increasing.

    Returns
    -------
    ndarray, shape (len(grid),)
        Masses summing to 1.

    Raises
    ------
    ValueError
        Empty or negative ``samples``, a bad grid, non-finite input.
    TypeError
        Bools, complex numbers or strings where numbers are expected.

    Examples
    --------
    >>> grid_masses([0.0, 0.2, 0.7, 5.0], [0.0, 0.5, 1.0])
    array([0.25, 0.25, 0.5 ])
    """
    g = check_grid(grid)
    x = np.ravel(nonneg_array(samples, "samples"))
    if x.size == 0:
        raise ValueError("samples must hold at least one squared norm (an empty sample has no law)")
    idx = np.searchsorted(g, x, side="left")  # x in (g[j-1], g[j]] -> j ; x == 0 -> 0
    idx = np.minimum(idx, g.size - 1)
    out = np.bincount(idx, minlength=g.size).astype(np.float64)
    return out / x.size


_OPERATOR_OPTIONS = ("nodes_per_cell", "n_quantiles", "method")


def propagate_distribution(
    p0: ArrayLike,
    grid: ArrayLike,
    layers: Sequence[Layer | tuple],
    activation: str | Activation = "relu",
    **kwargs: Any,
) -> np.ndarray:
    """Propagate a squared-norm law through layers: ``p_l = T_l p_{l-1}`` (Burkholz & Dubatovka 2019, Prop. 1, Fig. 1a).

    Parameters
    ----------
    p0 : array_like, shape (G,)
        Masses on the states of ``grid`` (see :class:`DiscreteOperator`, :func:`grid_masses`),
        non-negative, summing to 1 (to 1e-8).
    grid : array_like
        Cell edges, starting at 0.
    layers : list of Layer or (width, sigma_w2[, sigma_b2[, fan_in]]) tuples
        One entry per layer, each with its own width and variances (``W_ij ~ N(0, sigma_w2 /
        fan_in)``, ``fan_in`` defaulting to the layer's ``width``; validated as in
        :func:`discretize_operator`); operators are built once per distinct layer.
    activation : str or Activation
    **kwargs
        ``nodes_per_cell``, ``n_quantiles``, ``method`` of :func:`discretize_operator` (validated
        even when ``layers`` is empty).

    Returns
    -------
    ndarray, shape (L + 1, G)
        Row ``l`` is the law after ``l`` layers (row 0 is ``p0``).

    Raises
    ------
    ValueError
        A bad ``p0``, grid or layer, as :func:`discretize_operator` (a layer's width or fan-in that
        is a bool, a string or a non-integral float included), or a result above 2^29 numbers.
    TypeError
        Unknown keyword arguments; bools, complex numbers or strings where real numbers are
        expected; a complex width or fan-in.

    Examples
    --------
    >>> grid = np.linspace(0.0, 8.0, 81)
    >>> p0 = grid_masses([1.0], grid)       # all mass in the cell (0.9, 1], midpoint 0.95
    >>> laws = propagate_distribution(p0, grid, [Layer(20, 2.0)] * 3)      # He keeps the mean
    >>> laws.shape, round(float(laws[-1] @ np.concatenate([[0.0], 0.5 * (grid[1:] + grid[:-1])])), 2)
    ((4, 81), 0.95)
    """
    g = check_grid(grid)
    p = real_array(p0, "p0")
    if p.shape != g.shape or np.any(p < 0) or abs(p.sum() - 1.0) > 1e-8:
        raise ValueError(f"p0 must be non-negative masses summing to 1 with shape {g.shape}")
    lays = check_layers(layers)
    unknown = sorted(set(kwargs) - set(_OPERATOR_OPTIONS))
    if unknown:
        raise TypeError(
            f"propagate_distribution got unexpected keyword arguments {unknown} (allowed: {_OPERATOR_OPTIONS})"
        )
    opts = dict(kwargs)
    if "nodes_per_cell" in opts:
        opts["nodes_per_cell"] = int_arg(opts["nodes_per_cell"], "nodes_per_cell", 1, 64)
    if "n_quantiles" in opts:
        opts["n_quantiles"] = int_arg(opts["n_quantiles"], "n_quantiles", 16, MAX_QUANTILES)
    if "method" in opts:
        check_method(opts["method"])
    act = get_activation(activation)
    check_size((len(lays) + 1) * g.size, "(len(layers) + 1) * len(grid)")
    out = np.empty((len(lays) + 1, g.size))
    out[0] = p
    cache: dict = {}
    for l, lay in enumerate(lays):
        key = (lay.width, lay.sigma_w2, lay.sigma_b2, lay.fan_in)
        if key not in cache:
            cache[key] = discretize_operator(
                g, lay.width, lay.sigma_w2, lay.sigma_b2, act, fan_in=lay.fan_in, **opts
            ).matrix
        out[l + 1] = cache[key] @ out[l]
    return out
