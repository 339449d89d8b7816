"""Two inputs: joint pre-activation law (Burkholz & Dubatovka 2019, Prop. 2) and the law of ``<x1, x2>`` and the cosine (Thm. 5, Fig. 2)."""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike, DTypeLike
from scipy import special

from .._checks import check_bool, check_covariance, check_rng, check_scalar
from ._common import (
    LOG_MAX,
    MAX_ELEMENTS,
    MAX_WIDTH,
    TINY,
    check_grid,
    check_pair,
    check_size,
    correlation,
    int_arg,
    is_equidistant,
    lattice_law_to_cells,
    nonneg,
    positive,
    real_array,
    truncated_power,
    unscaled,
    width_arg,
)
from ._correlation import orthant_probability

__all__ = ["cosine_similarity_samples", "inner_product_law", "preactivation_covariance", "relu_product_density"]


def preactivation_covariance(gram: ArrayLike, sigma_w2: float, sigma_b2: float = 0.0, *, fan_in: int) -> np.ndarray:
    r"""``V_ij = sigma_w2 / fan_in <x_i, x_j> + sigma_b2`` given the previous layer (Burkholz & Dubatovka 2019, Prop. 2, eq. 4).

    Conditionally on the previous signals, one neuron's pre-activations for D inputs are jointly
    ``N(0, V)``, independently over neurons: :math:`h_i = \sum_k W_{k} x_{i,k} + b` with
    ``W_k ~ N(0, sigma_w2 / fan_in)`` and ``b ~ N(0, sigma_b2)`` gives
    :math:`\mathrm{Cov}(h_i, h_j) = \sigma_w^2 \langle x_i, x_j\rangle / \mathrm{fan\_in} + \sigma_b^2`
    (Burkholz & Dubatovka 2019 writes ``sigma_w^2`` for ``sigma_w2 / fan_in``).

    Parameters
    ----------
    gram : array_like, shape (D, D)
        Gram matrix ``<x_i, x_j>`` of the previous layer's signals (symmetric PSD).
    sigma_w2 : float
        Weight variance times fan-in (>= 0); He is 2.
    sigma_b2 : float
        Bias variance (>= 0).
    fan_in : int
        Keyword only, required: ``1 <= fan_in <= MAX_WIDTH``, the dimension of the signals ``x_i``
        (a Gram matrix does not carry it).

    Returns
    -------
    ndarray, shape (D, D)
        Finite.

    Raises
    ------
    ValueError
        ``gram`` not a symmetric PSD matrix, a negative or non-finite variance, ``fan_in`` out of
        range or not an integer (a bool, a string or a non-integral float), or entries of ``V``
        beyond float64.
    TypeError
        Bools, complex numbers or strings where real numbers are expected; a complex ``fan_in``;
        ``fan_in`` missing.

    Examples
    --------
    >>> preactivation_covariance([[2.0, 1.0], [1.0, 2.0]], 2.0, 0.1, fan_in=4)
    array([[1.1, 0.6],
           [0.6, 1.1]])
    """
    gram = real_array(gram, "gram")
    if gram.ndim != 2 or gram.shape[0] != gram.shape[1]:
        raise ValueError(f"gram must be a square matrix, got shape {gram.shape}")
    gram = check_covariance(gram, "gram")
    fi = int_arg(fan_in, "fan_in", 1, MAX_WIDTH)
    sw = unscaled(nonneg(sigma_w2, "sigma_w2"), fi)
    sb = nonneg(sigma_b2, "sigma_b2")
    with np.errstate(over="ignore"):
        v = sw * gram + sb
    if not np.all(np.isfinite(v)):
        raise ValueError("sigma_w2 / fan_in * gram + sigma_b2 overflows float64 (entries beyond 1.8e308); rescale gram")
    return v


def relu_product_density(t: ArrayLike, v11: float, v22: float, v12: float, log: bool = False) -> float | np.ndarray:
    r"""Density of ``relu(h1) relu(h2)`` at ``t > 0`` (the continuous part of ``f_prod``, Thm. 5).

    .. math::
        f(t) = \frac{1}{2\pi\sqrt{\det V}} \exp\Big(\frac{v_{12} t}{\det V}\Big)
        K_0\Big(\frac{\sqrt{v_{11}v_{22}}\, t}{\det V}\Big),

    the positive-quadrant half of the density of the product of two correlated normals; it
    integrates to ``g(rho)``, and ``f_prod = (1 - g(rho)) delta_0 + f``. Needs ``det V > 0``.
    Evaluated as ``log f = -log(2 pi s sqrt(1 - rho^2)) + log K0e(x) - (1 - rho) x`` with
    ``s = sqrt(v11 v22)``, ``x = t / (s (1 - rho^2))`` (exponentially scaled ``k0e``; ``det V``
    never formed, so no overflow or underflow of ``v11 v22``).

    Parameters
    ----------
    t : float or array_like
        Points ``> 0``.
    v11, v22, v12 : float
        The pre-activation covariance of Prop. 2, ``v12^2 < v11 v22``.
    log : bool
        Return ``log f(t)`` (finite) instead of ``f(t)``.

    Returns
    -------
    float or ndarray
        ``f(t)``, correctly rounded: 0.0 in the far tail where ``f < 5e-324`` (use ``log=True``
        there), or ``log f(t)``.

    Raises
    ------
    ValueError
        ``t <= 0``, non-positive variances, ``v12^2 >= v11 v22``, ``t / (sqrt(v11 v22) (1 - rho^2))``
        beyond float64, or (``log=False``) a density beyond float64 (use ``log=True``).
    TypeError
        ``log`` not a bool; bools, complex numbers or strings where numbers are expected.
    """
    t = real_array(t, "t")
    if np.any(t <= 0):
        raise ValueError(f"t must be > 0, got values down to {float(t.min()) if t.size else None!r}")
    v11, v22, v12, rho, scale = check_pair(v11, v22, v12)
    log = check_bool(log, "log")
    one_m_r2 = (1.0 - rho) * (1.0 + rho)
    if np.any(one_m_r2 <= 0):
        raise ValueError(
            "v12 must satisfy v12^2 < v11 v22 (|rho| < 1): the law of relu(h1) relu(h2) has a density only then"
        )
    with np.errstate(over="ignore"):
        x = t / (scale * one_m_r2)
    if not np.all(np.isfinite(x)):
        raise ValueError("t / (sqrt(v11 v22) (1 - rho^2)) overflows float64; rescale t, v11, v22, v12")
    with np.errstate(divide="ignore"):
        out = (
            -math.log(2 * math.pi) - math.log(scale) - 0.5 * np.log(one_m_r2) + np.log(special.k0e(x)) - (1.0 - rho) * x
        )
    if not log:
        if np.any(out > LOG_MAX):
            raise ValueError("the density exceeds float64 here (sqrt(v11 v22) (1 - rho^2) is tiny); use log=True")
        with np.errstate(under="ignore"):
            out = np.exp(out)
    return float(out) if np.ndim(out) == 0 else out


def inner_product_law(grid: ArrayLike, width: int, v11: float, v22: float, v12: float) -> np.ndarray:
    """Law of ``<x1, x2> = sum_i relu(h1_i) relu(h2_i)`` given the previous layer: ``f_prod^{*N}`` (Burkholz & Dubatovka 2019, Thm. 5).

    Parameters
    ----------
    grid : array_like
        Equidistant cell edges starting at 0 (state 0 = atom at 0, state j = cell j).
    width : int
        ``1 <= N <= MAX_WIDTH``.
    v11, v22, v12 : float
        The pre-activation covariance of Prop. 2 (``|rho| < 1``).

    Returns
    -------
    ndarray, shape (G,)
        Masses (summing to 1; mass beyond the grid lumped into the last cell), accurate to
        O(grid step); masses below the smallest normal float64 are 0.

    Raises
    ------
    ValueError
        A bad or non-equidistant grid, ``width`` out of range or not an integer (a bool, a string
        or a non-integral float), variances as in :func:`relu_product_density`, or more than 2^27
        grid points.
    TypeError
        Bools, complex numbers or strings where real numbers are expected; a complex ``width``.

    Notes
    -----
    Cell masses of the K0 density are integrated (adaptive quadrature in the first cell, where
    K0 has its log singularity, Gauss-Legendre elsewhere), spread onto the lattice ``j dz`` at
    their cell means, and convolved ``N`` times by truncated FFT powers. Accuracy O(grid step).
    """
    from scipy import integrate

    g = check_grid(grid)
    if not is_equidistant(g):
        raise ValueError("grid must be equidistant (FFT convolution)")
    n = width_arg(width)
    v11, v22, v12, rho, _ = check_pair(v11, v22, v12)
    if not abs(float(rho)) < 1.0:
        raise ValueError(
            "v12 must satisfy v12^2 < v11 v22 (|rho| < 1): the law of relu(h1) relu(h2) has a density only then"
        )
    check_size(4 * g.size, "4 * len(grid) (FFT work arrays)")
    dz = float(g[1] - g[0])
    G = g.size
    log_dz = math.log(dz)

    def cell_density(u):  # dz * f(dz * u): the density of t / dz, bounded by the masses (no overflow)
        with np.errstate(under="ignore"):
            return np.exp(relu_product_density(dz * np.asarray(u), v11, v22, v12, log=True) + log_dz)

    # masses and first moments (in units of dz) of the continuous part on [j dz, (j+1) dz], j = 0..G-1
    x, w = np.polynomial.legendre.leggauss(12)
    ua = np.arange(G)[:, None] + 0.5 * (x[None, :] + 1)  # t / dz
    mass = np.empty(G)
    mom = np.empty(G)
    mass[0] = integrate.quad(cell_density, 0, 1, limit=200)[0]
    mom[0] = integrate.quad(lambda u: u * cell_density(u), 0, 1, limit=200)[0]
    fa = cell_density(ua[1:])
    mass[1:] = (fa * w).sum(1) / 2
    mom[1:] = (fa * ua[1:] * w).sum(1) / 2
    c = np.zeros(G + 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(mass > 0, mom / np.where(mass > 0, mass, 1.0), 0.0)
    t = np.minimum(t, G + 1.0)
    lo = np.floor(t).astype(np.int64)
    frac = t - lo
    np.add.at(c, np.minimum(lo, G), (1 - frac) * mass)
    np.add.at(c, np.minimum(lo + 1, G), frac * mass)
    c = c[:G]
    atom_single = 1.0 - float(orthant_probability(float(rho)))
    p = c.copy()
    p[0] += atom_single
    out, _ = lattice_law_to_cells(truncated_power(p, n), atom_single**n)
    out[out < TINY] = 0.0
    return out


#: Largest number of (pairs of) normals :func:`cosine_similarity_samples` draws, ``n_samples * width``
#: (2^36: about ten minutes on one core).
_MAX_DRAWS = 2**36


def cosine_similarity_samples(
    width: int,
    rho: float,
    n_samples: int = 1_000_000,
    sigma_w2: float = 2.0,
    rng: int | np.random.Generator | None = None,
    chunk: int | None = None,
    dtype: DTypeLike = np.float64,
) -> np.ndarray:
    """Samples of the cosine similarity of two ReLU layers given the previous layer (Burkholz & Dubatovka 2019, Fig. 2).

    ``width`` components are drawn iid from the bivariate normal of Prop. 2 with correlation
    ``rho`` (``|x1| = |x2| = 1``, ``sigma_b = 0``: the scale drops out of the cosine), passed
    through ReLU, and the cosine ``<x1, x2> / (|x1| |x2|)`` is formed; repeated ``n_samples``
    times in chunks. A pair with a zero vector (probability ``< 2 * 0.5^N``) gives cosine 0.
    Random normals dominate the cost; ``dtype=np.float32`` draws them in single precision (about
    1.8x faster, cosines accurate to ~1e-6, ample for histograms).

    Why a sampler lives in the theory layer: it simulates no network (no weight matrix is drawn).
    Prop. 2 says that, given the previous layer, the ``N`` pairs of pre-activations are iid
    bivariate normal, so these draws are exact samples of the theory's conditional law of the
    cosine, for which Thm. 5 gives no closed form; Burkholz & Dubatovka 2019 computes its Fig. 2 the same way.
    Random networks (:mod:`meanfield.validation`) are what it is checked against.

    Parameters
    ----------
    width : int
        ``1 <= N <= MAX_WIDTH``.
    rho : float
        ``<x1, x2>`` of the unit previous-layer signals (the pre-activation correlation), in [-1, 1].
    n_samples : int
        Repeats, ``1 <= n_samples <= 2**29`` with ``n_samples * width <= 2**36``; 10^6 take seconds.
    sigma_w2 : float
        ``> 0``, the weight variance times fan-in (validated); without biases it does not affect
        the cosine (ReLU layers are positively homogeneous).
    rng : None, int or numpy.random.Generator
        Randomness (``meanfield._checks.check_rng``): an int ``n`` gives the stream of
        ``numpy.random.default_rng(n)``.
    chunk : int, optional
        Repeats drawn per block, ``chunk * width <= 2**26`` (memory ``2 * chunk * width``
        numbers); default ``min(20000, 2**24 // width)``. The samples depend on it (the stream is
        consumed block by block).
    dtype : {numpy.float64, numpy.float32}
        Precision of the drawn normals.

    Returns
    -------
    ndarray, shape (n_samples,)
        Cosine similarities in [0, 1].

    Raises
    ------
    ValueError
        Arguments out of range; integer arguments (``width``, ``n_samples``, ``chunk``) that are
        bools, strings or non-integral floats; a ``dtype`` other than float32 or float64.
    TypeError
        Bools, complex numbers or strings as ``rho`` or ``sigma_w2``; complex integer arguments;
        a bad ``rng``; a ``dtype`` that NumPy cannot parse.

    Examples
    --------
    >>> s = cosine_similarity_samples(100, 0.5, n_samples=2000, rng=0)
    >>> s.shape, bool(np.all((s >= 0) & (s <= 1))), round(float(s.mean()), 1)
    ((2000,), True, 0.6)
    """
    n = width_arg(width)
    rho = float(correlation(check_scalar(rho, "rho"), "rho"))
    positive(sigma_w2, "sigma_w2")
    total = int_arg(n_samples, "n_samples", 1, MAX_ELEMENTS)
    if total * n > _MAX_DRAWS:
        raise ValueError(f"n_samples * width must be <= 2**36 (draws of normal pairs), got {total} * {n}")
    chunk = min(20_000, max(1, 2**24 // n)) if chunk is None else int_arg(chunk, "chunk", 1)
    if chunk * n > 2**26:
        raise ValueError(f"chunk * width must be <= 2**26 (memory of one block), got {chunk} * {n}")
    rng = check_rng(rng)
    try:
        dtype = np.dtype(dtype)
    except TypeError as exc:
        raise TypeError(f"dtype must be numpy.float32 or numpy.float64, got {dtype!r}") from exc
    if dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"dtype must be float32 or float64, got {dtype}")
    out = np.empty(total)
    s = math.sqrt(max(1 - rho * rho, 0.0))
    for i in range(0, total, chunk):
        m = min(chunk, total - i)
        a = rng.standard_normal((m, n), dtype=dtype)
        b = rng.standard_normal((m, n), dtype=dtype)
        b *= s
        b += rho * a
        np.maximum(a, 0, out=a)
        np.maximum(b, 0, out=b)
        num = np.einsum("ij,ij->i", a, b).astype(np.float64)
        den = np.sqrt(np.einsum("ij,ij->i", a, a).astype(np.float64) * np.einsum("ij,ij->i", b, b))
        out[i : i + m] = np.divide(num, den, out=np.zeros(m), where=den > 0)
    return out
