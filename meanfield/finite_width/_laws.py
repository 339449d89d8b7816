r"""Finite-width laws across several layers (Burkholz & Dubatovka 2019.

* :func:`gram_chain_samples`: the joint law of ``(|x1|^2, |x2|^2, <x1, x2>)`` through ``L``
  layers. Prop. 2 applied layer by layer: given the Gram matrix ``G`` of the previous layer, the
  ``N`` neurons' pre-activation pairs are iid ``N(0, V)``, ``V = sigma_w2 / fan_in G + sigma_b2``,
  so the next Gram matrix is ``sum_i phi(h_i) phi(h_i)^T`` -- a Markov chain on 2 x 2 Gram
  matrices whose transition is exact and costs O(N) per layer (no weight matrix: O(N^2)).
* :func:`cosine_law_over_depth`: the law of the cosine similarity ``<x1, x2> / (|x1| |x2|)`` at
  every depth from those samples, with the infinite-width (mean-field) cosine beside it: the
  statement "signals become parallel" (Sec. 2.3, after eq. 10) as a law, not only a mean.
* :func:`component_cdf`, :func:`joint_component_cdf`: eqs. 2-3, the CDF of one (all) signal
  components at layer ``l`` given the law of ``|x^(l-1)|^2``.
* :func:`gsm_product_moments`, :func:`gsm_product_density`, :func:`gsm_second_moment`: the
  spectrum of the GSM product matrix ``prod_l W0^(l)`` (Sec. 3).

Derivations and corrections (checked numerically in ``tests/theory/test_finite_width_laws.py``):

* Eq. 2 as printed uses the generalised inverse ``phi^{-1}(x) = inf{y : phi(y) >= x}``; that gives
  ``P(x_i < x)``, not the CDF, wherever ``phi(h)`` has an atom (ReLU at 0: the printed form gives
  ``F(0) = 0`` instead of 1/2). The library uses the right-continuous inverse
  ``phi^+(x) = sup{y : phi(y) <= x}``: ``F(x) = int p_{l-1}(z) Phi(phi^+(x) / sigma_z) dz``.
* Without biases the cosine's law does not depend on ``sigma_w2`` (ReLU layers are positively
  homogeneous: the cosine chain is a Markov chain on its own, ``sigma_w2`` drops out). Burkholz & Dubatovka's
  remark that "a slightly smaller choice of sigma_w than the He initialization reduces the average
  cosine distance" (Sec. 2.3) cannot hold for bias-free networks; it is reported as not reproduced.
* The GSM product (``W0`` of size ``n = N / 2`` with entries ``N(0, sigma_w2 / n)``) has, as
  ``n -> inf``, squared singular values with the Fuss-Catalan law of order ``L``: moments
  ``FC_L(k) = C((L + 1) k, k) / (L k + 1)`` (``sigma_w2 = 1``, i.e. Burkholz & Dubatovka's He ``2 / N``).
  The paper cites the spectrum ("product Wishart distribution with known spectrum [13, 14]")
  without giving it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from .._checks import check_covariance, check_rng
from .._results import Result
from ..activations import get_activation
from ._common import MAX_ELEMENTS, MAX_WIDTH, int_arg, nonneg, real_array, width_arg

if TYPE_CHECKING:  # annotations only
    from ..activations import Activation

__all__ = [
    "CosineLaw",
    "GramChain",
    "component_cdf",
    "cosine_law_over_depth",
    "gram_chain_samples",
    "gsm_product_density",
    "gsm_product_moments",
    "gsm_second_moment",
    "joint_component_cdf",
]

#: Largest number of normal pairs drawn by one call of :func:`gram_chain_samples`.
MAX_DRAWS = 2**31
#: Largest depth of the GSM product spectrum.
MAX_GSM_DEPTH = 1000


@dataclass(frozen=True)
class GramChain(Result):
    """Samples of the Gram matrix of two signals through ``L`` layers.

    Attributes
    ----------
    norms1, norms2 : ndarray, shape (L + 1, n_samples)
        ``|x1^(l)|^2``, ``|x2^(l)|^2`` (row 0: the inputs).
    inner : ndarray, shape (L + 1, n_samples)
        ``<x1^(l), x2^(l)>``.
    """

    norms1: np.ndarray
    norms2: np.ndarray
    inner: np.ndarray

    @property
    def cosine(self) -> np.ndarray:
        """``<x1, x2> / (|x1| |x2|)``, 0 where a signal is exactly zero; shape (L + 1, n_samples)."""
        den = np.sqrt(self.norms1) * np.sqrt(self.norms2)
        return np.divide(self.inner, den, out=np.zeros_like(self.inner), where=den > 0)


def _phi_matrix(act, h):
    return act.phi(h)


def gram_chain_samples(
    gram0: ArrayLike,
    depth: int,
    width: int,
    sigma_w2: float = 2.0,
    sigma_b2: float = 0.0,
    *,
    fan_in: int,
    activation: str | Activation = "relu",
    n_samples: int = 10000,
    rng: int | np.random.SeedSequence | np.random.Generator | None = None,
) -> GramChain:
    r"""Exact samples of ``(|x1|^2, |x2|^2, <x1, x2>)`` through ``depth`` layers (Burkholz & Dubatovka 2019, Prop. 2 iterated).

    Parameters
    ----------
    gram0 : array_like, shape (2, 2)
        Gram matrix ``[[|x1|^2, <x1, x2>], [<x1, x2>, |x2|^2]]`` of the inputs (symmetric PSD, finite).
    depth : int
        Number of layers ``L``, ``0 <= L <= 10^4``.
    width : int
        ``N`` neurons per layer, ``1 <= N <= MAX_WIDTH``.
    sigma_w2, sigma_b2 : float
        ``W_ij ~ N(0, sigma_w2 / fan_in)``, ``b_i ~ N(0, sigma_b2)`` (>= 0); He is ``sigma_w2 = 2``.
    fan_in : int
        Keyword, required: the input dimension (fan-in of the first layer); later layers have
        fan-in ``width``.
    activation : str or Activation
        Any activation (ReLU in Burkholz & Dubatovka 2019).
    n_samples : int
        Independent chains, ``1 <= n_samples``, with ``n_samples * width * depth <= 2^31``.
    rng : None, int, SeedSequence or numpy.random.Generator
        Randomness (:func:`meanfield._checks.check_rng`).

    Returns
    -------
    GramChain

    Raises
    ------
    ValueError
        ``gram0`` not 2 x 2 symmetric PSD, arguments out of range, integer arguments (``depth``,
        ``width``, ``fan_in``, ``n_samples``, ...) that are bools, strings or non-integral floats,
        or norms leaving float64.
    TypeError
        Bools, complex numbers or strings where real numbers are expected; complex integer
        arguments; ``fan_in`` missing.

    Notes
    -----
    Burkholz & Dubatovka 2019, Prop. 2 (eq. 4): given the previous layer, the pre-activations ``(h_{1i}, h_{2i})``
    of neuron ``i`` are iid over ``i`` with covariance ``V = sigma_w2 / fan_in G + sigma_b2``, since
    the rows of ``W`` and the biases are independent. The next Gram matrix is therefore
    ``G' = sum_i phi(h_i) phi(h_i)^T``: iterating this exact transition samples the joint law of
    ``(|x1^(l)|^2, |x2^(l)|^2, <x1^(l), x2^(l)>)`` at every depth (the network is a Markov chain on
    Gram matrices), at cost O(N) per layer and sample. ``validation.finite_width`` checks it
    against networks with weight matrices.

    Examples
    --------
    >>> ch = gram_chain_samples([[1.0, 0.5], [0.5, 1.0]], 3, 50, fan_in=10, n_samples=200, rng=0)
    >>> ch.inner.shape, bool(np.all(ch.cosine[1:] >= 0))
    ((4, 200), True)
    """
    g0 = real_array(gram0, "gram0")
    if g0.shape != (2, 2):
        raise ValueError(f"gram0 must be a 2 x 2 Gram matrix, got shape {g0.shape}")
    g0 = check_covariance(g0, "gram0")
    depth = int_arg(depth, "depth", 0, 10_000)
    n = width_arg(width)
    fi = int_arg(fan_in, "fan_in", 1, MAX_WIDTH)
    sw = nonneg(sigma_w2, "sigma_w2")
    sb = nonneg(sigma_b2, "sigma_b2")
    total = int_arg(n_samples, "n_samples", 1, MAX_ELEMENTS)
    if total * n * max(depth, 1) > MAX_DRAWS:
        raise ValueError(f"n_samples * width * depth must be <= 2**31, got {total} * {n} * {depth}")
    act = get_activation(activation)
    gen = check_rng(rng)
    n1 = np.empty((depth + 1, total))
    n2 = np.empty((depth + 1, total))
    ip = np.empty((depth + 1, total))
    n1[0], n2[0], ip[0] = g0[0, 0], g0[1, 1], g0[0, 1]
    chunk = max(1, min(total, 2**22 // n))
    for l in range(1, depth + 1):
        scale = sw / (fi if l == 1 else n)
        for s in range(0, total, chunk):
            sl = slice(s, min(total, s + chunk))
            m = sl.stop - sl.start
            v11 = scale * n1[l - 1, sl] + sb
            v22 = scale * n2[l - 1, sl] + sb
            v12 = scale * ip[l - 1, sl] + sb
            s1 = np.sqrt(v11)
            r = np.divide(v12, s1 * np.sqrt(v22), out=np.zeros(m), where=(v11 > 0) & (v22 > 0))
            r = np.clip(r, -1.0, 1.0)
            a = gen.standard_normal((m, n))
            b = gen.standard_normal((m, n))
            h1 = s1[:, None] * a
            h2 = np.sqrt(v22)[:, None] * (r[:, None] * a + np.sqrt(1.0 - r * r)[:, None] * b)
            p1 = _phi_matrix(act, h1)
            p2 = _phi_matrix(act, h2)
            n1[l, sl] = np.einsum("ij,ij->i", p1, p1)
            n2[l, sl] = np.einsum("ij,ij->i", p2, p2)
            ip[l, sl] = np.einsum("ij,ij->i", p1, p2)
        if not (np.all(np.isfinite(n1[l])) and np.all(np.isfinite(n2[l]))):
            raise ValueError(f"squared norms leave float64 at layer {l}: rescale gram0, sigma_w2 or sigma_b2")
    return GramChain(norms1=n1, norms2=n2, inner=ip)


@dataclass(frozen=True)
class CosineLaw(Result):
    """The law of the cosine similarity of two signals at every depth.

    Attributes
    ----------
    edges : ndarray, shape (B + 1,)
        Histogram bin edges on [-1, 1].
    density : ndarray, shape (L + 1, B)
        Histogram densities (each row integrates to 1).
    mean, std : ndarray, shape (L + 1,)
        Mean and standard deviation of the cosine over the samples.
    stderr : ndarray, shape (L + 1,)
        Standard error of ``mean``.
    mean_field : ndarray, shape (L + 1,)
        The infinite-width cosine: ``E phi(h1) phi(h2) / sqrt(E phi(h1)^2 E phi(h2)^2)`` under the
        mean-field covariance (:func:`meanfield.dense.propagate`), the limit ``N -> inf``.
    """

    edges: np.ndarray
    density: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    stderr: np.ndarray
    mean_field: np.ndarray


def cosine_law_over_depth(
    gram0: ArrayLike,
    depth: int,
    width: int,
    sigma_w2: float = 2.0,
    sigma_b2: float = 0.0,
    *,
    fan_in: int,
    activation: str | Activation = "relu",
    n_samples: int = 10000,
    bins: int = 100,
    rng: int | np.random.SeedSequence | np.random.Generator | None = None,
) -> CosineLaw:
    r"""The cosine similarity's law over depth (Burkholz & Dubatovka 2019, Sec. 2.3: "signals become parallel").

    Parameters
    ----------
    gram0, depth, width, sigma_w2, sigma_b2, fan_in, activation, n_samples, rng
        As :func:`gram_chain_samples`.
    bins : int
        Histogram bins on [-1, 1], ``1 <= bins <= 10^5``.

    Returns
    -------
    CosineLaw

    Raises
    ------
    ValueError, TypeError
        As :func:`gram_chain_samples`; ``bins`` out of range.

    Notes
    -----
    The samples are exact draws of the finite-width chain (:func:`gram_chain_samples`); the
    mean-field column iterates the infinite-width covariance map from
    ``V^(1) = sigma_w2 / fan_in G0 + sigma_b2``. Eq. 10's statement that the mean cosine grows to 1
    with depth is the mean-field limit; at finite width the law spreads (smaller ``N``: larger
    variance, Fig. 2) around a mean within O(1/N) of the mean-field value.

    Examples
    --------
    >>> law = cosine_law_over_depth([[1.0, 0.0], [0.0, 1.0]], 4, 100, fan_in=100, n_samples=500, rng=1)
    >>> bool(np.all(np.diff(law.mean_field) > 0)), law.density.shape
    (True, (5, 100))
    """
    from .. import dense
    from ..gaussian import expectation, pair_expectation

    bins = int_arg(bins, "bins", 1, 100_000)
    chain = gram_chain_samples(
        gram0,
        depth,
        width,
        sigma_w2,
        sigma_b2,
        fan_in=fan_in,
        activation=activation,
        n_samples=n_samples,
        rng=rng,
    )
    cos = chain.cosine
    edges = np.linspace(-1.0, 1.0, bins + 1)
    dens = np.stack([np.histogram(np.clip(c, -1, 1), bins=edges, density=True)[0] for c in cos])
    g0 = np.asarray(gram0, dtype=float)
    act = get_activation(activation)
    mf = np.empty(depth + 1)
    mf[0] = g0[0, 1] / math.sqrt(g0[0, 0] * g0[1, 1]) if g0[0, 0] * g0[1, 1] > 0 else 0.0
    if depth > 0:
        v1 = nonneg(sigma_w2, "sigma_w2") / fan_in * g0 + nonneg(sigma_b2, "sigma_b2")
        try:
            traj = dense.propagate(v1, act, sigma_w2, sigma_b2, depth - 1)  # pre-activation covariances V^(1..L)
        except ValueError as exc:
            raise ValueError(
                f"the mean-field covariances leave the float64 range at these sigma_w2, sigma_b2 ({exc})"
            ) from exc
        for l in range(1, depth + 1):
            v = traj[l - 1]
            q1, q2 = v[0, 0], v[1, 1]
            c = float(np.clip(v[0, 1] / math.sqrt(q1 * q2), -1, 1)) if q1 * q2 > 0 else 0.0
            num = pair_expectation(act, q1, q2, c)
            den = math.sqrt(expectation(act, q1) * expectation(act, q2))
            mf[l] = num / den if den > 0 else 0.0
    return CosineLaw(
        edges=edges,
        density=dens,
        mean=cos.mean(axis=1),
        std=cos.std(axis=1),
        stderr=cos.std(axis=1, ddof=1) / math.sqrt(cos.shape[1]) if cos.shape[1] > 1 else np.full(depth + 1, np.inf),
        mean_field=mf,
    )


# ----------------------------------------------------------------------------------------------
# Eqs. 2-3: component CDFs.


def _right_inverse(act, x):
    """phi^+(x) = sup{y : phi(y) <= x} for the monotone built-ins (NaN for others)."""
    name = act.name.split("(")[0]
    x = np.asarray(x, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        if name == "relu":
            return np.where(x < 0, -np.inf, x)
        if name == "leaky_relu":
            a = act.param
            if a <= 0:
                raise ValueError("component_cdf needs an increasing activation: leaky_relu slope must be > 0")
            return np.where(x >= 0, x, x / a)
        if name == "linear":
            return x
        if name == "tanh":
            return np.where(x <= -1, -np.inf, np.where(x >= 1, np.inf, np.arctanh(np.clip(x, -1, 1))))
        if name == "erf":
            return np.where(x <= -1, -np.inf, np.where(x >= 1, np.inf, special.erfinv(np.clip(x, -1, 1))))
        if name == "sigmoid":
            return np.where(x <= 0, -np.inf, np.where(x >= 1, np.inf, special.logit(np.clip(x, 0, 1))))
        if name == "hard_tanh":
            return np.where(x < -1, -np.inf, np.where(x >= 1, np.inf, x))
    raise ValueError(
        f"component_cdf needs a non-decreasing activation with a known inverse (relu, leaky_relu with slope > 0, "
        f"linear, tanh, erf, sigmoid, hard_tanh), got {act.name!r}"
    )


def _law_states(law, grid, name="grid"):
    grid = real_array(grid, name)
    p = real_array(law, "law")
    if grid.ndim != 1 or grid.size < 1 or p.shape != grid.shape:
        raise ValueError(f"law and {name} must be 1-D of the same length >= 1, got {p.shape} and {grid.shape}")
    if np.any(grid < 0) or np.any(np.diff(grid) <= 0):
        raise ValueError(f"{name} must be increasing and non-negative (squared norms)")
    if np.any(p < 0) or abs(p.sum() - 1.0) > 1e-8:
        raise ValueError("law must be non-negative masses summing to 1 (to 1e-8)")
    return p, grid


def component_cdf(
    x: ArrayLike,
    law: ArrayLike,
    states: ArrayLike,
    sigma_w2: float,
    sigma_b2: float = 0.0,
    *,
    fan_in: int,
    activation: str | Activation = "relu",
) -> float | np.ndarray:
    r"""CDF of one signal component ``x_i^(l)`` (Burkholz & Dubatovka 2019, eq. 2, with the right-continuous inverse).

    Parameters
    ----------
    x : float or array_like
        Points (finite reals).
    law : array_like, shape (S,)
        Masses of ``|x^(l-1)|^2`` on ``states`` (non-negative, summing to 1), e.g. a row of
        :func:`propagate_distribution` with the states' representative values.
    states : array_like, shape (S,)
        The squared norms carrying the masses (increasing, >= 0).
    sigma_w2, sigma_b2 : float
        ``W_ij ~ N(0, sigma_w2 / fan_in)``, ``b ~ N(0, sigma_b2)``.
    fan_in : int
        Keyword, required: the dimension of ``x^(l-1)``.
    activation : str or Activation
        Non-decreasing built-in (relu, leaky_relu with slope > 0, linear, tanh, erf, sigmoid, hard_tanh).

    Returns
    -------
    float or ndarray shaped like ``x``: ``P(x_i^(l) <= x)``.

    Raises
    ------
    ValueError
        Bad law/states, NaN in ``x``, an activation without a monotone inverse, a ``fan_in`` out
        of range or not an integer (a bool, a string or a non-integral float).
    TypeError
        Bools, complex numbers or strings where real numbers are expected; a complex ``fan_in``;
        ``fan_in`` missing.

    Notes
    -----
    ``F(x) = sum_s p_s Phi(phi^+(x) / sigma_s)``, ``sigma_s^2 = sigma_w2 / fan_in * y_s + sigma_b2``,
    ``phi^+(x) = sup{y : phi(y) <= x}``. The printed eq. 2 uses ``inf{y : phi(y) >= x}``, which
    gives ``P(x_i < x)``: the two differ at atoms (ReLU: by 1/2 at 0). A state with ``sigma_s = 0``
    contributes the step ``1{phi(0) <= x}``.

    Examples
    --------
    >>> float(component_cdf(0.0, [1.0], [1.0], 2.0, fan_in=2))     # the ReLU atom at 0
    0.5
    """
    act = get_activation(activation)
    xs = real_array(x, "x")
    if np.any(np.isnan(xs)):
        raise ValueError("x must not contain NaN")
    p, ys = _law_states(law, states, "states")
    fi = int_arg(fan_in, "fan_in", 1, MAX_WIDTH)
    sig = np.sqrt(nonneg(sigma_w2, "sigma_w2") / fi * ys + nonneg(sigma_b2, "sigma_b2"))
    inv = _right_inverse(act, xs)
    flat = inv.reshape(-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        arg = np.where(sig[None, :] > 0, flat[:, None] / np.where(sig > 0, sig, 1.0)[None, :], np.inf)
        step = (float(act.phi(0.0)) <= xs.reshape(-1))[:, None]
        vals = np.where(sig[None, :] > 0, special.ndtr(arg), step.astype(float))
    out = (vals @ p).reshape(xs.shape)
    return out if out.ndim else float(out)


def joint_component_cdf(
    x: ArrayLike,
    law: ArrayLike,
    states: ArrayLike,
    sigma_w2: float,
    sigma_b2: float = 0.0,
    *,
    fan_in: int,
    activation: str | Activation = "relu",
) -> float:
    r"""Joint CDF ``P(x_1 <= x[0], ..., x_N <= x[N-1])`` of a layer's components (Burkholz & Dubatovka 2019, eq. 3).

    Parameters
    ----------
    x : array_like, shape (N,)
        One threshold per component (finite reals).
    law, states, sigma_w2, sigma_b2, fan_in, activation
        As :func:`component_cdf`.

    Returns
    -------
    float
        ``sum_s p_s prod_i Phi(phi^+(x_i) / sigma_s)`` (products in logs: no underflow before the end).

    Raises
    ------
    ValueError, TypeError
        As :func:`component_cdf`; ``x`` not 1-D.

    Notes
    -----
    Components are independent given ``|x^(l-1)|^2`` (Prop. 1) and dependent through it: the
    joint CDF is a mixture of products, not the product of eq. 2's marginals.

    Examples
    --------
    >>> round(joint_component_cdf([0.0, 0.0], [1.0], [1.0], 2.0, fan_in=2), 12)   # both atoms
    0.25
    """
    xs = real_array(x, "x")
    if xs.ndim != 1 or xs.size < 1:
        raise ValueError(f"x must be 1-D with one threshold per component, got shape {xs.shape}")
    p, ys = _law_states(law, states, "states")
    total = 0.0
    for ps, y in zip(p, ys):
        if ps == 0:
            continue
        f = component_cdf(xs, [1.0], [y], sigma_w2, sigma_b2, fan_in=fan_in, activation=activation)
        f = np.atleast_1d(f)
        if np.any(f == 0):
            continue
        total += ps * math.exp(float(np.sum(np.log(f))))
    return float(total)


# ----------------------------------------------------------------------------------------------
# The GSM product matrix.


def gsm_product_moments(depth: int, k: ArrayLike) -> float | np.ndarray:
    r"""Moments ``int x^k dmu_L`` of the Fuss-Catalan law of order ``L`` (large-width GSM product spectrum).

    Parameters
    ----------
    depth : int
        ``L >= 1``, the number of factors ``W0^(l)`` (at most ``MAX_GSM_DEPTH``).
    k : int or array_like of int
        Moment orders ``0 <= k <= 50``.

    Returns
    -------
    float or ndarray: ``FC_L(k) = C((L + 1) k, k) / (L k + 1)``.

    Raises
    ------
    ValueError, TypeError
        Orders or depth out of range or not integers.

    Notes
    -----
    Burkholz & Dubatovka 2019, Sec. 3: with GSM, ``h^(L) = prod_l W0^(l) h^(0)``; for ``W0`` of size ``n x n`` with
    entries ``N(0, 1 / n)`` (Burkholz & Dubatovka's He ``2 / N`` with ``n = N / 2``) the empirical law of the
    squared singular values of the product converges to the Fuss-Catalan law (Alexeev, Götze &
    Tikhomirov 2010; Neuschel 2014). For entries ``N(0, s / n)`` scale ``x`` by ``s^L``.

    Examples
    --------
    >>> gsm_product_moments(2, [1, 2, 3])        # 1, 3, 12 for two factors
    array([ 1.,  3., 12.])
    """
    depth = int_arg(depth, "depth", 1, MAX_GSM_DEPTH)
    try:
        ks = np.asarray(k)
    except ValueError as exc:  # ragged
        raise ValueError(f"k must be an integer or a rectangular array of integers, got {k!r}") from exc
    if ks.dtype == bool or not np.issubdtype(ks.dtype, np.integer):
        raise TypeError(f"k must be integer moment orders, got {k!r}")
    if np.any(ks < 0) or np.any(ks > 50):
        raise ValueError("k must be in [0, 50]")
    out = special.comb((depth + 1) * ks, ks, exact=False) / (depth * ks + 1.0)
    return out if np.ndim(out) else float(out)


def _fc_x(phi, s):
    return np.sin((s + 1) * phi) ** (s + 1) / (np.sin(phi) * np.sin(s * phi) ** s)


def gsm_product_density(x: ArrayLike, depth: int) -> float | np.ndarray:
    r"""Density of the Fuss-Catalan law of order ``L`` (squared singular values of the GSM product).

    Parameters
    ----------
    x : float or array_like
        Points (finite reals); the support is ``(0, (L + 1)^(L + 1) / L^L]``.
    depth : int
        ``L >= 1`` (at most ``MAX_GSM_DEPTH``).

    Returns
    -------
    float or ndarray shaped like ``x`` (0 outside the support; ``+inf`` at ``x = 0``).

    Raises
    ------
    ValueError, TypeError
        NaN in ``x``, ``depth`` out of range.

    Notes
    -----
    Neuschel's parametrisation (2014): for ``phi in (0, pi / (L + 1))``,
    ``x(phi) = sin((L+1) phi)^(L+1) / (sin(phi) sin(L phi)^L)`` (decreasing) and
    ``p(x(phi)) = sin(phi)^2 sin(L phi)^(L-1) / (pi sin((L+1) phi)^L)``; ``L = 1`` is
    Marchenko-Pastur with ratio 1, ``sqrt((4 - x) / x) / (2 pi)``. ``x(phi)`` is inverted by
    bisection (60 halvings: to rounding).

    Examples
    --------
    >>> import numpy as np
    >>> bool(np.isclose(gsm_product_density(1.0, 1), np.sqrt(3) / (2 * np.pi)))
    True
    """
    s = int_arg(depth, "depth", 1, MAX_GSM_DEPTH)
    xs = real_array(x, "x")
    if np.any(np.isnan(xs)):
        raise ValueError("x must not contain NaN")
    top = (s + 1.0) ** (s + 1) / s**s
    flat = xs.reshape(-1)
    out = np.zeros(flat.shape)
    inside = (flat > 0) & (flat < top)
    xi = flat[inside]
    lo = np.zeros(xi.shape)  # x(lo) = top > xi
    hi = np.full(xi.shape, math.pi / (s + 1))  # x(hi) = 0 < xi
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        big = _fc_x(mid, s) > xi
        lo = np.where(big, mid, lo)
        hi = np.where(big, hi, mid)
    ph = 0.5 * (lo + hi)
    out[inside] = np.sin(ph) ** 2 * np.sin(s * ph) ** (s - 1) / (math.pi * np.sin((s + 1) * ph) ** s)
    out[flat == 0] = np.inf
    out = out.reshape(xs.shape)
    return out if out.ndim else float(out)


def gsm_second_moment(depth: int, n: int) -> float:
    r"""Exact ``E (1/n) tr[(P P^T)^2]`` for ``P`` a product of ``L`` independent ``n x n`` Gaussian matrices.

    Parameters
    ----------
    depth : int
        ``L >= 0``.
    n : int
        Size of ``W0`` (``N / 2`` in GSM), ``1 <= n <= MAX_WIDTH``; entries ``N(0, 1 / n)``.

    Returns
    -------
    float
        Tends to ``FC_L(2) = L + 1`` as ``n -> inf``.

    Raises
    ------
    ValueError, TypeError
        Arguments out of range.

    Notes
    -----
    Wick's theorem for ``P' = W P`` with ``A = P P^T``: ``E tr(W A W^T)^2 = (tr A)^2 + (2/n) tr A^2``
    and ``E tr (W A W^T)^2 = (tr A)^2 / n + (1 + 1/n) tr A^2`` (entries of variance ``1/n``), a
    linear recursion on ``(E (tr A)^2, E tr A^2)`` from ``(n^2, n)`` at ``P = I``.

    Examples
    --------
    >>> gsm_second_moment(1, 100)        # 2 + 1/n for one Ginibre factor
    2.01
    """
    depth = int_arg(depth, "depth", 0, MAX_GSM_DEPTH)
    n = int_arg(n, "n", 1, MAX_WIDTH)
    s2, q = float(n) ** 2, float(n)  # E (tr A)^2, E tr A^2 (divided by n^2 and n below)
    for _ in range(depth):
        s2, q = s2 + 2.0 * q / n, s2 / n + (1.0 + 1.0 / n) * q
    return q / n
