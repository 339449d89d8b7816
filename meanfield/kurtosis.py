"""Kurtosis recursion and vanishing empirical variance of deep random networks (seed 002).

Grzejdziak, Loog & Tax (2023), *Vanishing Empirical Variance in Randomly Initialized Networks*.
Networks are ``y^(0) = x``, ``y^(l) = W^(l) phi_a(y^(l-1))`` with leaky ReLU ``phi_a`` of negative
slope ``a`` and i.i.d. zero-mean symmetric weights of variance ``2 / (w (a^2 + 1))``, ``w`` the
**fan-in** (the width of ``y^(l-1)``) and kurtosis ``kappa_w``.

Code names and the paper's symbols:

=====================  ==========================================================================
code                   paper
=====================  ==========================================================================
``width`` / ``widths`` ``w_l`` = width of ``y^(l)`` = fan-in of layer ``l + 1``
``slope``              ``a``
``weight_kurtosis``    ``kappa_w``
``sigma_x2``           ``sigma_x^2`` (the variance kept by He initialisation, Prop. 3.2)
``kappa``, ``c``       ``kappa_l = Kurt[y_i^(l)]``, ``c_l = Cov[(y_i^(l))^2, (y_j^(l))^2]``, i != j
:func:`transition_matrix`  ``A^(l)`` of Prop. 4.3
:func:`product`        ``B = prod_l A^(d - l)`` in the ``(alpha, beta, gamma, delta)`` form of Lemma 4.4
:func:`trace_determinant`  ``tr``, ``det`` and eigenvalues of ``A_-^(l)`` (Lemma 4.5)
=====================  ==========================================================================

Derivation check. Re-deriving Prop. 4.3 from Lemmas 4.1-4.2 (multinomial expansion of
``E[(sum_j W_ij phi_j)^4]``, rows of ``W`` independent) gives exactly the printed matrix
``A^(l)``. Two points the paper leaves implicit, both needed for the recursion to be exact:

* Lemma 4.2 needs the joint law of ``(y_i, y_j)`` to be invariant under flipping the sign of one
  coordinate (true for every layer ``l >= 1`` because each row of ``W`` is symmetric and rows are
  independent; for the input it must be assumed, e.g. ``x = W z`` as in Prop. 3.3).
  Uncorrelated, symmetric marginals are not enough.
* The weight variance must use the fan-in ``w_{l-1}`` of ``W^(l)``; the paper writes ``w_l``
  (the fan-out), which preserves the variance only for constant widths. ``A^(l)`` itself uses the
  fan-in ``w_l`` of layer ``l + 1``, consistent with this correction.

The proof of Lemma 4.5 has a missing display; the condition it needs is
``lambda_max > 1  <=>  det(A_-) + 1 < tr(A_-)`` (for ``1 <= tr < 2``), which holds for every
``w > 1``, ``kappa_w >= 1`` (checked in the tests). Prop. B.2's "symmetric and uncorrelated"
justification is insufficient: see :func:`nonzero_probability` for the assumptions it needs.

References
----------
.. [1] M. Grzejdziak, M. Loog, D. M. J. Tax, "Vanishing Empirical Variance in Randomly
   Initialized Networks", MSc thesis / NeurIPS 2023 submission (seed 002).
.. [2] B. O'Neill, "Some useful moment results in sampling problems", Am. Stat. 68 (2014).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from scipy import stats

from ._checks import as_float_array, check_int, check_positive

__all__ = [
    "EmpiricalVarianceDistribution",
    "InputStatistics",
    "KurtosisPropagation",
    "LemmaProduct",
    "TraceDeterminant",
    "depth_to_kurtosis",
    "empirical_variance_distribution",
    "input_statistics",
    "nonzero_probability",
    "product",
    "propagate",
    "spectral_radius",
    "trace_determinant",
    "transition_matrix",
    "weight_kurtosis",
]

#: Kurtosis of the named weight laws (``E w^4 / (E w^2)^2``).
_NAMED_KURTOSIS = {"gaussian": 3.0, "normal": 3.0, "uniform": 1.8, "rademacher": 1.0, "bernoulli": 1.0, "laplace": 6.0}


# --------------------------------------------------------------------------------------------
# argument checks
# --------------------------------------------------------------------------------------------


def _check_slope(slope) -> float:
    slope = float(as_float_array(slope, "slope"))
    return slope


def _check_kw(weight_kurtosis) -> float:
    kw = float(as_float_array(weight_kurtosis, "weight_kurtosis"))
    if kw < 1.0:
        raise ValueError(f"weight_kurtosis must be >= 1 (every distribution has kurtosis >= 1), got {kw!r}")
    return kw


def _check_widths(widths, name="widths", minimum=1) -> np.ndarray:
    arr = np.atleast_1d(np.asarray(widths))
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty sequence of integers >= {minimum}")
    return np.array([check_int(int(w) if float(w).is_integer() else w, name, minimum) for w in arr.tolist()], dtype=np.int64)


def _coefficients(width: int, slope: float, kw: float):
    """(alpha, beta, gamma, delta) of a single A^(l) (Lemma 4.4 form of Prop. 4.3)."""
    g = 2.0 * (slope**4 + 1.0) / (width * (slope**2 + 1.0) ** 2)
    return kw * g, 3.0 * (width - 1) / width, g, (width - 1) / width


# --------------------------------------------------------------------------------------------
# Prop. 4.3: the transition matrix and the propagation of (kappa, c)
# --------------------------------------------------------------------------------------------


def transition_matrix(width, slope=0.0, weight_kurtosis=3.0, sigma_x2=1.0) -> np.ndarray:
    r"""The 3 x 3 matrix ``A^(l)`` of Prop. 4.3 (seed 002), ``k^(l+1) = A^(l) k^(l)``.

    .. math::

        A^{(l)} = \begin{bmatrix}
            \frac{2(a^4+1)\kappa_w}{w_l(a^2+1)^2} & \frac{3(w_l-1)}{w_l\sigma_x^4} & \frac{3(w_l-1)}{w_l}\\
            \frac{2(a^4+1)\sigma_x^4}{w_l(a^2+1)^2} & \frac{w_l-1}{w_l} & -\frac{\sigma_x^4}{w_l}\\
            0 & 0 & 1 \end{bmatrix},
        \qquad k^{(l)} = [\kappa_l, c_l, 1]^T .

    Parameters
    ----------
    width : int
        ``w_l >= 1``, the width of ``y^(l)`` (fan-in of layer ``l + 1``).
    slope : float
        Negative slope ``a`` of the leaky ReLU (``0``: ReLU, ``1``: linear).
    weight_kurtosis : float
        ``kappa_w >= 1`` (Gaussian 3, uniform 1.8, Rademacher 1; see :func:`weight_kurtosis`).
    sigma_x2 : float
        ``sigma_x^2 > 0``, the variance preserved through the layers.

    Raises
    ------
    ValueError
        ``width < 1``, ``weight_kurtosis < 1``, ``sigma_x2 <= 0`` or a non-finite argument.

    Notes
    -----
    Re-derived from Lemmas 4.1-4.2: identical to the printed matrix (see the module notes for the
    assumptions the derivation needs).
    """
    width = check_int(width, "width", 1)
    slope = _check_slope(slope)
    kw = _check_kw(weight_kurtosis)
    s4 = check_positive(sigma_x2, "sigma_x2") ** 2
    al, be, ga, de = _coefficients(width, slope, kw)
    return np.array([[al, be / s4, be], [ga * s4, de, s4 * (de - 1.0)], [0.0, 0.0, 1.0]])


@dataclass(frozen=True)
class KurtosisPropagation:
    """Kurtosis and squared-output covariance through a network (Prop. 4.3).

    Attributes
    ----------
    kappa : ndarray, shape (d + 1,)
        ``kappa_l``, index 0 the input; ``inf`` beyond the float64 range (use ``log_kappa``).
    c : ndarray, shape (d + 1,)
        ``c_l = Cov[(y_i^(l))^2, (y_j^(l))^2]``; ``+-inf`` beyond the float64 range.
    log_kappa : ndarray, shape (d + 1,)
        ``log kappa_l``, finite at any depth (the recursion is run in scaled form).
    widths : ndarray
        The widths used (``widths[l]`` = fan-in of layer ``l + 1``).
    slope, weight_kurtosis, sigma_x2 : float
        The parameters.
    """

    kappa: np.ndarray
    c: np.ndarray
    log_kappa: np.ndarray
    widths: np.ndarray
    slope: float
    weight_kurtosis: float
    sigma_x2: float

    def replace(self, **changes: Any) -> "KurtosisPropagation":
        return replace(self, **changes)


def _check_input_moments(kappa0, c0, s4):
    kappa0 = float(as_float_array(kappa0, "kappa0"))
    c0 = float(as_float_array(c0, "c0"))
    if kappa0 < 1.0:
        raise ValueError(f"kappa0 must be >= 1 (a kurtosis), got {kappa0!r}")
    if c0 < -s4 * (1.0 + 1e-12):
        raise ValueError(f"c0 must be >= -sigma_x2^2 = {-s4:.6g} (E[x_i^2 x_j^2] >= 0), got {c0!r}")
    return kappa0, c0


def propagate(kappa0, c0, widths, slope=0.0, weight_kurtosis=3.0, sigma_x2=1.0) -> KurtosisPropagation:
    """Iterate ``k^(l+1) = A^(l) k^(l)`` (Prop. 4.3) from ``k^(0) = [kappa0, c0, 1]``.

    Parameters
    ----------
    kappa0, c0 : float
        Input kurtosis (``>= 1``) and squared-entry covariance (``>= -sigma_x2^2``); e.g. from
        :func:`input_statistics`. Gaussian i.i.d. inputs: ``(3, 0)``.
    widths : sequence of int
        ``widths[l] >= 1`` is the width of ``y^(l)``, the fan-in of layer ``l + 1``; the depth is
        ``len(widths)``. ``c`` at the output needs an output width >= 2 to have a meaning.
    slope, weight_kurtosis, sigma_x2
        As in :func:`transition_matrix`.

    Returns
    -------
    KurtosisPropagation
        ``kappa[l]``, ``c[l]`` for ``l = 0 .. d``. The recursion is run on a rescaled vector
        (mantissa and log-scale), so depth 10^4 at width 2 (``kappa ~ 10^5000``) neither overflows
        ``log_kappa`` nor produces NaN.

    Raises
    ------
    ValueError
        Invalid widths, slope, kurtoses, ``sigma_x2 <= 0`` or ``c0 < -sigma_x2^2``.
    """
    widths = _check_widths(widths)
    slope = _check_slope(slope)
    kw = _check_kw(weight_kurtosis)
    sigma_x2 = check_positive(sigma_x2, "sigma_x2")
    s4 = sigma_x2**2
    kappa0, c0 = _check_input_moments(kappa0, c0, s4)
    d = widths.size
    # scaled state: k = exp(s) * (u, v, t), t = exp(-s); coefficients vectorised over layers
    r = 2.0 * (slope**4 + 1.0) / (slope**2 + 1.0) ** 2
    wf = widths.astype(np.float64)
    al, be, ga, de = (kw * r / wf).tolist(), (3.0 * (wf - 1) / wf).tolist(), (r / wf).tolist(), ((wf - 1) / wf).tolist()
    us, vs, ss = [kappa0], [c0], [0.0]
    u, v, t, s = kappa0, c0, 1.0, 0.0
    for l in range(d):
        u, v = al[l] * u + be[l] / s4 * v + be[l] * t, ga[l] * s4 * u + de[l] * v + s4 * (de[l] - 1.0) * t
        if max(u, abs(v)) > 1e100:
            big = max(u, abs(v), t)
            u, v, t, s = u / big, v / big, t / big, s + math.log(big)
        us.append(u)
        vs.append(v)
        ss.append(s)
    u_arr, v_arr, s_arr = np.array(us), np.array(vs), np.array(ss)
    log_kappa = np.log(u_arr) + s_arr
    with np.errstate(over="ignore", divide="ignore"):
        kappa = np.where(s_arr == 0.0, u_arr, np.exp(log_kappa))  # inf beyond float64
        c = np.where(s_arr == 0.0, v_arr, np.sign(v_arr) * np.exp(np.log(np.abs(v_arr)) + s_arr))
    return KurtosisPropagation(kappa, c, log_kappa, widths, slope, kw, sigma_x2)


def _scaled(m: float, s: float) -> float:
    if m == 0.0:
        return 0.0
    e = math.log(abs(m)) + s
    if e > 709.78:
        return math.copysign(math.inf, m)
    return m * math.exp(s)


# --------------------------------------------------------------------------------------------
# Lemma 4.4: products; Lemma 4.5: trace, determinant, spectral radius
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LemmaProduct:
    """``B = A^(d) ... A^(0)`` in the form of Lemma 4.4.

    ``B = [[alpha, beta / s4, beta], [gamma s4, delta, s4 (delta - 1)], [0, 0, 1]]`` with
    ``s4 = sigma_x2^2``, ``gamma > 0``, ``alpha >= gamma``, ``delta > 0``, ``beta >= delta`` (``w > 1``).

    Attributes
    ----------
    alpha, beta, gamma, delta : float
        The parameters (``inf`` beyond the float64 range; see the ``log_*`` fields).
    log_alpha, log_beta, log_gamma, log_delta : float
        Their logarithms, finite at any depth (``-inf`` for an exact zero, e.g. width 1).
    sigma_x2 : float
        The variance the matrix was built for.
    """

    alpha: float
    beta: float
    gamma: float
    delta: float
    log_alpha: float
    log_beta: float
    log_gamma: float
    log_delta: float
    sigma_x2: float

    @property
    def matrix(self) -> np.ndarray:
        """The 3 x 3 matrix ``B`` (may contain ``inf``; zeros of row 3 stay exact)."""
        s4 = self.sigma_x2**2
        return np.array(
            [[self.alpha, self.beta / s4, self.beta], [self.gamma * s4, self.delta, s4 * (self.delta - 1.0)], [0.0, 0.0, 1.0]]
        )


def product(widths, slope=0.0, weight_kurtosis=3.0, sigma_x2=1.0) -> LemmaProduct:
    r"""The product ``prod_{l=0}^{d} A^(d-l)`` of Lemma 4.4 in its ``(alpha, beta, gamma, delta)`` form.

    Computed by the lemma's own recursion (``alpha = alpha1 alpha2 + beta1 gamma2`` ...), which is
    linear in the right factor's parameters, so it is run on rescaled parameters with a log-scale:
    no overflow and no ``0 * inf`` at any depth.

    .. math::

        B = \prod_{l=0}^{d} A^{(d-l)} = \begin{bmatrix} \alpha & \beta / \sigma_x^4 & \beta \\
            \gamma \sigma_x^4 & \delta & \sigma_x^4 (\delta - 1) \\ 0 & 0 & 1 \end{bmatrix},
        \quad \alpha = \alpha_1 \alpha_2 + \beta_1 \gamma_2, \ \beta = \alpha_1 \beta_2 + \beta_1 \delta_2,
        \ \gamma = \gamma_1 \alpha_2 + \delta_1 \gamma_2, \ \delta = \gamma_1 \beta_2 + \delta_1 \delta_2 .

    Parameters
    ----------
    widths : sequence of int
        ``widths[l]`` is the width ``w_l`` of ``A^(l)``; ``A^(0)`` acts first.
    slope, weight_kurtosis, sigma_x2
        As in :func:`transition_matrix`.

    Returns
    -------
    LemmaProduct
        ``alpha, beta, gamma, delta`` (``inf`` beyond float64), their logarithms, and ``matrix``.
        For every width ``> 1``: ``gamma > 0``, ``alpha >= gamma``, ``delta > 0``, ``beta >= delta``.

    Raises
    ------
    ValueError
        Empty or non-integer ``widths``, a width < 1, ``weight_kurtosis < 1``, ``sigma_x2 <= 0``,
        or a non-finite argument.

    Notes
    -----
    Lemma 4.4 of seed 002 (stated for ``w > 1``); a width of 1 gives ``delta = 0`` there, which
    the lemma excludes (``log_delta = -inf``).
    """
    widths = _check_widths(widths)
    slope = _check_slope(slope)
    kw = _check_kw(weight_kurtosis)
    sigma_x2 = check_positive(sigma_x2, "sigma_x2")
    a2, b2, g2, d2 = _coefficients(int(widths[0]), slope, kw)
    s = 0.0
    for w in widths[1:]:
        a1, b1, g1, d1 = _coefficients(int(w), slope, kw)
        a2, b2, g2, d2 = a1 * a2 + b1 * g2, a1 * b2 + b1 * d2, g1 * a2 + d1 * g2, g1 * b2 + d1 * d2
        big = max(a2, b2, g2, d2)
        if big > 1e100:
            a2, b2, g2, d2, s = a2 / big, b2 / big, g2 / big, d2 / big, s + math.log(big)
    logs = [math.log(p) + s if p > 0 else -math.inf for p in (a2, b2, g2, d2)]
    vals = [_scaled(p, s) for p in (a2, b2, g2, d2)]
    return LemmaProduct(*vals, *logs, sigma_x2)


@dataclass(frozen=True)
class TraceDeterminant:
    """Trace, determinant and eigenvalues of ``A_-^(l)`` (``A^(l)`` without row and column 3), Lemma 4.5.

    Attributes
    ----------
    trace, determinant : float
        ``tr = 2(a^4+1) kappa_w / (w (a^2+1)^2) - 1/w + 1``,
        ``det = 2 (a^4+1)(w-1)(kappa_w-3) / (w^2 (a^2+1)^2)``.
    lambda_max, lambda_min : float
        The two real eigenvalues (``lambda_max > |lambda_min|`` by Perron's theorem for ``w > 1``).
    gap : float
        ``lambda_max - 1``, computed without cancellation (accurate at width 10^5 and beyond).
    """

    trace: float
    determinant: float
    lambda_max: float
    lambda_min: float
    gap: float


def trace_determinant(width, slope=0.0, weight_kurtosis=3.0) -> TraceDeterminant:
    r"""Trace, determinant and eigenvalues of the 2 x 2 block ``A_-^(l)`` (Lemma 4.5 of seed 002).

    .. math::

        \mathrm{tr} A_- = \frac{2(a^4+1)\kappa_w}{w(a^2+1)^2} - \frac1w + 1, \qquad
        \det A_- = \frac{2(a^4+1)(w-1)(\kappa_w-3)}{w^2(a^2+1)^2}.

    Parameters
    ----------
    width : int
        ``w >= 1``.
    slope, weight_kurtosis
        As in :func:`transition_matrix` (the block does not depend on ``sigma_x2``).

    Returns
    -------
    TraceDeterminant
        ``trace``, ``determinant``, ``lambda_max``, ``lambda_min`` and ``gap = lambda_max - 1``
        (solved from the shifted characteristic polynomial, no cancellation at large width).

    Raises
    ------
    ValueError
        ``width < 1``, ``weight_kurtosis < 1`` or a non-finite argument.

    Notes
    -----
    The printed proof of Lemma 4.5 omits the condition it needs for ``1 <= tr < 2``:
    ``lambda_max > 1  <=>  det + 1 < tr``, which holds for every ``w > 1`` (tested).
    """
    width = check_int(width, "width", 1)
    slope = _check_slope(slope)
    kw = _check_kw(weight_kurtosis)
    r = 2.0 * (slope**4 + 1.0) / (slope**2 + 1.0) ** 2  # >= 1
    tr_minus_1 = (r * kw - 1.0) / width
    trace = 1.0 + tr_minus_1
    det = r * (width - 1) * (kw - 3.0) / width**2
    disc = trace * trace - 4.0 * det  # = (alpha - delta)^2 + 4 beta gamma >= 0
    root = math.sqrt(max(disc, 0.0))
    lam_max = 0.5 * (trace + root)
    lam_min = det / lam_max if lam_max != 0 else 0.5 * (trace - root)
    # gap x = lambda_max - 1 solves x^2 + (2 - tr) x + q = 0 with q = det - (tr - 1)
    b = 2.0 - trace
    q = det - tr_minus_1
    disc_x = b * b - 4.0 * q
    sx = math.sqrt(max(disc_x, 0.0))
    if b > 0:
        gap = -2.0 * q / (b + sx)
    else:
        gap = 0.5 * (-b + sx)
    return TraceDeterminant(trace, det, lam_max, lam_min, gap)


def spectral_radius(width, slope=0.0, weight_kurtosis=3.0) -> float:
    """Spectral radius of ``A^(l)``: ``max(lambda_max(A_-), 1)``; ``> 1`` for every ``w > 1`` (Lemma 4.5 of seed 002).

    The eigenvalues of ``A^(l)`` are those of ``A_-^(l)`` and the 1 of its last row.

    Parameters
    ----------
    width : int or array_like of int
        ``w >= 1``; vectorised over arrays (an ndarray of the same shape is returned then).
    slope, weight_kurtosis
        As in :func:`transition_matrix`.

    Returns
    -------
    float or ndarray

    Raises
    ------
    ValueError
        As :func:`trace_determinant`.
    """
    if np.ndim(width):
        return np.array([spectral_radius(int(w), slope, weight_kurtosis) for w in np.asarray(width).ravel()]).reshape(
            np.shape(width)
        )
    return max(trace_determinant(width, slope, weight_kurtosis).lambda_max, 1.0)


def depth_to_kurtosis(threshold, kappa0, c0, width, slope=0.0, weight_kurtosis=3.0, sigma_x2=1.0, max_depth=10**9) -> int:
    """The first depth ``d`` with ``kappa_d >= threshold`` for a constant-width network (Prop. 4.3, Thm. 4.7).

    Scans the first 10^4 layers one by one, then (the kurtosis being eventually increasing, Thm. 4.7)
    brackets and bisects with matrix powers of ``A`` computed in log-scale (by construction
    ``kappa_{d-1} < threshold <= kappa_d`` at the returned depth), using
    ``kappa_d = alpha_d kappa_0 + beta_d (c_0 / sigma_x^4 + 1)`` from the proof of Thm. 4.7.

    Parameters
    ----------
    threshold : float
        Kurtosis to reach, ``> 0``.
    kappa0, c0 : float
        Input moments, as in :func:`propagate`.
    width : int
        Constant width ``w >= 1``.
    slope, weight_kurtosis, sigma_x2
        As in :func:`transition_matrix`.
    max_depth : int
        Largest depth searched (``>= 0``).

    Returns
    -------
    int
        The depth ``d`` (0 when ``kappa0 >= threshold``).

    Raises
    ------
    ValueError
        Bad arguments, or the threshold is not reached within ``max_depth`` layers (e.g. width 1
        with ``|a| = 1`` and ``kappa_w = 1``, where the spectral radius is 1).
    """
    threshold = check_positive(threshold, "threshold")
    width = check_int(width, "width", 1)
    max_depth = check_int(max_depth, "max_depth", 0)
    sigma_x2 = check_positive(sigma_x2, "sigma_x2")
    kappa0, c0 = _check_input_moments(kappa0, c0, sigma_x2**2)
    if kappa0 >= threshold:
        return 0
    scan = min(max_depth, 10_000)
    res = propagate(kappa0, c0, np.full(scan, width), slope, weight_kurtosis, sigma_x2) if scan else None
    logt = math.log(threshold)
    if res is not None:
        hit = np.nonzero(res.log_kappa >= logt)[0]
        if hit.size:
            return int(hit[0])
    if scan == 0 or scan == max_depth or spectral_radius(width, slope, weight_kurtosis) <= 1.0:
        raise ValueError(f"kurtosis does not reach threshold={threshold!r} within max_depth={max_depth} layers")

    def log_kappa_at(d):
        return _log_kappa_power(width, slope, weight_kurtosis, sigma_x2, kappa0, c0, d)

    lo, hi = scan, scan
    while True:
        hi = min(2 * hi, max_depth)
        if log_kappa_at(hi) >= logt:
            break
        if hi == max_depth:
            raise ValueError(f"kurtosis does not reach threshold={threshold!r} within max_depth={max_depth} layers")
        lo = hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if log_kappa_at(mid) >= logt:
            hi = mid
        else:
            lo = mid
    return hi


def _mul(p1, p2):
    """Parameters of ``B1 B2`` from those of ``B1``, ``B2`` (Lemma 4.4 recursion), ``p = (a, b, g, d, log_scale)``.

    The map is bilinear and does not involve the constant entries of the form (it is the product
    of the top-left 2 x 2 blocks), so log-scales add exactly.
    """
    a1, b1, g1, d1, s1 = p1
    a2, b2, g2, d2, s2 = p2
    a, b, g, d = a1 * a2 + b1 * g2, a1 * b2 + b1 * d2, g1 * a2 + d1 * g2, g1 * b2 + d1 * d2
    big = max(a, b, g, d)
    return a / big, b / big, g / big, d / big, s1 + s2 + math.log(big)


def _log_kappa_power(width, slope, kw, sigma_x2, kappa0, c0, d):
    """``log kappa_d`` for constant width via ``A^d`` by repeated squaring in log-scale."""
    al, be, ga, de = _coefficients(width, _check_slope(slope), _check_kw(kw))
    base = (al, be, ga, de, 0.0)
    result = None
    while d:
        if d & 1:
            result = base if result is None else _mul(result, base)
        d >>= 1
        if d:
            base = _mul(base, base)
    a, b, _, _, s = result
    # kappa_d = alpha kappa0 + beta (c0 / s4 + 1)   (proof of Thm. 4.7)
    m = a * kappa0 + b * (c0 / sigma_x2**2 + 1.0)
    return math.log(m) + s if m > 0 else -math.inf


# --------------------------------------------------------------------------------------------
# weight and input statistics
# --------------------------------------------------------------------------------------------


def weight_kurtosis(distribution) -> float:
    """Kurtosis ``E (w - mu)^4 / Var(w)^2`` of a weight law.

    Parameters
    ----------
    distribution : str or scipy distribution
        ``"gaussian"``/``"normal"`` (3), ``"uniform"`` (1.8), ``"rademacher"``/``"bernoulli"`` (1,
        the paper's symmetric Bernoulli), ``"laplace"`` (6); or a frozen scipy distribution
        (``scipy.stats.t(df=7)``) or an unfrozen one with default parameters.

    Returns
    -------
    float
        ``kappa_w >= 1``, the constant of Prop. 4.3's ``A^(l)`` (seed 002).

    Raises
    ------
    ValueError
        Unknown name (``"orthogonal"`` is not an i.i.d. law), infinite or undefined fourth moment.
    """
    if isinstance(distribution, str):
        key = distribution.lower()
        if key not in _NAMED_KURTOSIS:
            raise ValueError(
                f"distribution must be one of {sorted(_NAMED_KURTOSIS)} or a scipy distribution, got {distribution!r}"
                " (orthogonal weights are not i.i.d.: Prop. 4.3 does not apply)"
            )
        return _NAMED_KURTOSIS[key]
    if not hasattr(distribution, "stats"):
        raise ValueError(f"distribution must be a name or a scipy.stats distribution, got {type(distribution).__name__}")
    excess = float(distribution.stats(moments="k"))
    if not math.isfinite(excess):
        raise ValueError("distribution must have a finite fourth moment (its kurtosis is infinite or undefined)")
    return excess + 3.0


@dataclass(frozen=True)
class InputStatistics:
    """Input moments ``sigma_x2``, ``kappa0``, ``c0`` of a data set (the start of Prop. 4.3).

    Attributes
    ----------
    sigma_x2 : float
        Mean squared entry ``E x_i^2`` over examples and coordinates.
    kappa0 : float
        ``E x_i^4 / sigma_x2^2``.
    c0 : float
        ``E x_i^2 x_j^2 - sigma_x2^2`` over examples and ordered pairs ``i != j``.
    """

    sigma_x2: float
    kappa0: float
    c0: float


def input_statistics(x, method="pairs", weight_kurtosis=3.0) -> InputStatistics:
    """``kappa_0`` and ``c_0`` of a data set (the start of the recursion of Prop. 4.3).

    The paper (supplement E) estimates them "using 10^7 random samples" for channel-standardised
    MNIST and CIFAR-10 and reports MNIST ``c0 = 0.71, kappa0 = 3.95`` and CIFAR-10
    ``c0 = 0.10, kappa0 = 3.28``, without saying what is sampled. Two readings are offered, both
    computed exactly (no sampling), the data being taken as centred:

    * ``method="pairs"``: moments of the coordinates themselves, averaged over every example and
      coordinate (``kappa0 = E x_i^4 / sigma^4``) and every ordered pair of distinct coordinates
      (``c0 = E x_i^2 x_j^2 - sigma^4``).
    * ``method="projected"``: moments of ``z = W x`` with ``W`` i.i.d. symmetric of variance
      ``1 / w`` and kurtosis ``weight_kurtosis`` (the He random vector of Prop. 3.3), averaged over
      ``W`` analytically: with ``r = |x|^2 / w``, ``sigma^2 = E r``, ``c0 = Var r``,
      ``kappa0 = (3 E r^2 + (kappa_w - 3) E sum_k x_k^4 / w^2) / sigma^4``.

    The second reading gives ``kappa0 ~= 3 (1 + c0 / sigma^4)`` for large ``w``; the CIFAR-10 pair
    satisfies this (3 x 1.10 = 3.30 vs 3.28), the MNIST pair does not (3 x 1.71 = 5.13 vs 3.95). We
    cannot check either without those data sets (not bundled; ``meanfield.data.read_mnist_idx`` and
    ``read_cifar10_batch`` read user copies).

    Parameters
    ----------
    x : array_like, shape (n, w)
        ``n >= 1`` examples of dimension ``w >= 2``, not all zero.
    method : {"pairs", "projected"}
    weight_kurtosis : float
        ``kappa_w >= 1`` of the projection (``"projected"`` only).

    Returns
    -------
    InputStatistics
        ``sigma_x2``, ``kappa0``, ``c0``: the start ``k^(0) = [kappa0, c0, 1]`` of Prop. 4.3.
        The embedded digits data standardised per feature give ``kappa0 = 118.4, c0 = 1.14``
        (pairs) and ``kappa0 = 12.2, c0 = 2.79`` (projected), ``sigma_x2 = 0.953``.

    Raises
    ------
    ValueError
        ``x`` not of shape ``(n >= 1, w >= 2)``, not finite, or identically zero; unknown
        ``method``; ``weight_kurtosis < 1``.
    """
    x = as_float_array(x, "x")
    if x.ndim != 2 or x.shape[1] < 2 or x.shape[0] < 1:
        raise ValueError(f"x must have shape (n >= 1, w >= 2), got {x.shape}")
    x2 = x * x
    n, w = x.shape
    if float(x2.sum()) <= 0:
        raise ValueError("x must not be identically zero")
    row2 = x2.sum(axis=1)
    row4 = (x2 * x2).sum(axis=1)
    if method == "pairs":
        sigma_x2 = float(x2.mean())
        m4 = float(row4.mean() / w)
        m22 = float(((row2 * row2 - row4) / (w * (w - 1))).mean())
        return InputStatistics(sigma_x2, m4 / sigma_x2**2, m22 - sigma_x2**2)
    if method == "projected":
        kw = _check_kw(weight_kurtosis)
        r = row2 / w
        sigma_x2 = float(r.mean())
        er2 = float((r * r).mean())
        m4 = 3.0 * er2 + (kw - 3.0) * float(row4.mean()) / w**2
        return InputStatistics(sigma_x2, m4 / sigma_x2**2, er2 - sigma_x2**2)
    raise ValueError(f"method must be 'pairs' or 'projected', got {method!r}")


# --------------------------------------------------------------------------------------------
# Sec. 5: empirical variance
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EmpiricalVarianceDistribution:
    """The law of the sample variance ``S_n^2`` of ``n`` i.i.d. draws of kurtosis ``kappa`` (Sec. 5).

    Attributes
    ----------
    kappa : float
        Kurtosis of the sampled variable.
    n : int
        Sample size.
    sigma2 : float
        Its variance (the mean of ``S_n^2``).
    var_s2 : float
        Exact ``Var S_n^2 = (kappa - (n - 3) / (n - 1)) sigma^4 / n`` (O'Neill 2014).
    df : float
        ``DF_n = 2 sigma^4 / Var S_n^2 = 2 n / (kappa - (n - 3)/(n - 1))``.
    shape, scale : float
        Gamma approximation ``S_n^2 ~ Gamma(k = DF_n / 2, theta = sigma^2 / k)`` (mean ``sigma^2``,
        variance ``Var S_n^2``).
    dist : scipy frozen distribution
        ``scipy.stats.gamma(shape, scale=scale)``.
    """

    kappa: float
    n: int
    sigma2: float
    var_s2: float
    df: float
    shape: float
    scale: float
    dist: Any

    def quantile(self, p):
        """Quantiles of the Gamma approximation (``p`` in [0, 1])."""
        p = as_float_array(p, "p")
        if np.any((p < 0) | (p > 1)):
            raise ValueError("p must lie in [0, 1]")
        return self.dist.ppf(p)

    def prob_below(self, v):
        """``P(S_n^2 < v)`` under the Gamma approximation."""
        return self.dist.cdf(as_float_array(v, "v"))


def empirical_variance_distribution(kappa, n, sigma2=1.0) -> EmpiricalVarianceDistribution:
    """Variance of ``S_n^2`` and its Gamma approximation, Sec. 5 of seed 002.

    Parameters
    ----------
    kappa : float
        Kurtosis ``>= 1`` of the sampled variable.
    n : int
        Sample size ``>= 2``.
    sigma2 : float
        Its variance ``> 0``.

    Returns
    -------
    EmpiricalVarianceDistribution
        ``var_s2``, ``df``, the Gamma ``shape`` / ``scale`` and the frozen ``scipy.stats.gamma``
        (``quantile``, ``prob_below``).

    Raises
    ------
    ValueError
        ``kappa < 1``, ``n < 2``, ``sigma2 <= 0`` or a non-finite argument.

    Notes
    -----
    Exact for the variance (i.i.d. samples); the Gamma law is the paper's moment-matched
    approximation. As ``kappa -> inf`` the shape ``k -> 0``: the law concentrates at 0 (the
    "vanishing empirical variance"). In a network the ``n`` outputs of one network share weights and
    are not i.i.d.; the paper applies the formula heuristically.
    """
    kappa = float(as_float_array(kappa, "kappa"))
    if kappa < 1.0:
        raise ValueError(f"kappa must be >= 1 (a kurtosis), got {kappa!r}")
    n = check_int(n, "n", 2)
    sigma2 = check_positive(sigma2, "sigma2")
    excess = kappa - (n - 3) / (n - 1)  # >= 2 / (n - 1) > 0
    var_s2 = excess * sigma2**2 / n
    df = 2.0 * n / excess
    shape = df / 2.0
    scale = sigma2 / shape
    return EmpiricalVarianceDistribution(kappa, n, sigma2, var_s2, df, shape, scale, stats.gamma(shape, scale=scale))


# --------------------------------------------------------------------------------------------
# Prop. B.2: probability of a non-zero output
# --------------------------------------------------------------------------------------------


def nonzero_probability(widths):
    """``P(y^(d) != 0)`` for a ReLU network (Prop. B.2): ``prod_{l=0}^{d-1} (1 - 2^{-w_l})``.

    Parameters
    ----------
    widths : sequence of int
        ``widths[l] >= 1`` is the width of ``y^(l)`` (the input to the ReLU of layer ``l + 1``);
        the depth is ``len(widths)``. Width 1 everywhere gives ``2^-d`` (Prop. B.1).

    Returns
    -------
    ndarray, shape (d + 1,)
        The probability after ``0 .. d`` layers (index 0 is 1).

    Raises
    ------
    ValueError
        Empty or non-integer ``widths``, or a width < 1.

    Notes
    -----
    Assumptions (the paper's "symmetric and uncorrelated" does not suffice): conditionally on any
    fixed non-zero ``v = relu(y^(l-1))`` the signs of ``W^(l) v`` are independent fair coins and
    ``W^(l) v != 0`` almost surely. This holds for i.i.d. symmetric weights with independent rows
    when ``W v = 0`` has probability 0 (continuous laws: Gaussian, uniform), and for Haar-orthogonal
    ``W`` (``W v`` is uniform on a sphere); the input must have independent symmetric signs and no
    zero entries. It fails for looks-linear/GSM weights (exactly half of ``W v`` is positive, so
    only the input layer can zero the signal), for inputs with dependent signs (one shared sign:
    ``1/2 prod_{l>=1}``), and for Rademacher weights at width >= 2: two rows with equal signs give
    equal entries, and a later row ``(+1, -1)`` then maps them to exactly 0 (measured: 0.042 instead
    of 0.100 at width 2, depth 8, 100,000 networks). Width 1 is exact for every symmetric law (Prop. B.1). Computed as
    ``exp(cumsum(log1p(-2^-w)))``: no underflow for depth 10^4 at width 1 beyond float64's range
    (returns 0.0 there).

    References
    ----------
    Seed 002, supplement B: Prop. B.1 (width 1) and Prop. B.2 (any widths).
    """
    widths = _check_widths(widths)
    logs = np.concatenate([[0.0], np.cumsum(np.log1p(-np.exp2(-widths.astype(np.float64))))])
    return np.exp(logs)
