"""The kurtosis recursion of Grzejdziak 2023, Sec. 4 (private): the transition matrix A^(l) and the propagation of
(kappa, c) over depth (Prop. 4.3), products of transition matrices (Lemma 4.4), their trace, determinant and spectral
radius (Lemma 4.5), and the depth at which the kurtosis passes a threshold.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .._checks import check_scalar
from .._results import Result
from ._args import (
    _LOG_MAX,
    _RESCALE,
    MAX_WIDTH,
    _check_kw,
    _check_sigma_x2,
    _check_slope,
    _check_widths,
    _coefficients,
    _int,
    _slope_ratio,
)

# --------------------------------------------------------------------------------------------
# Prop. 4.3: the transition matrix and the propagation of (kappa, c)
# --------------------------------------------------------------------------------------------


def transition_matrix(
    width: int, slope: float = 0.0, weight_kurtosis: float = 3.0, sigma_x2: float = 1.0
) -> np.ndarray:
    r"""The 3 x 3 matrix ``A^(l)`` of Prop. 4.3 (Grzejdziak 2023), ``k^(l+1) = A^(l) k^(l)``.

    .. math::

        A^{(l)} = \begin{bmatrix}
            \frac{2(a^4+1)\kappa_w}{w_l(a^2+1)^2} & \frac{3(w_l-1)}{w_l\sigma_x^4} & \frac{3(w_l-1)}{w_l}\\
            \frac{2(a^4+1)\sigma_x^4}{w_l(a^2+1)^2} & \frac{w_l-1}{w_l} & -\frac{\sigma_x^4}{w_l}\\
            0 & 0 & 1 \end{bmatrix},
        \qquad k^{(l)} = [\kappa_l, c_l, 1]^T .

    Parameters
    ----------
    width : int
        ``1 <= w_l <= 2**53``, the width of ``y^(l)`` (fan-in of layer ``l + 1``).
    slope : float
        Negative slope ``a`` of the leaky ReLU (``0``: ReLU, ``1``: linear); any finite number.
    weight_kurtosis : float
        ``1 <= kappa_w <= 1e100`` (Gaussian 3, uniform 1.8, Rademacher 1; see :func:`weight_kurtosis`).
    sigma_x2 : float
        ``sigma_x^2`` in ``SIGMA_X2_RANGE = [1e-100, 1e100]``, the variance preserved through the layers.

    Returns
    -------
    ndarray, shape (3, 3)
        Finite entries.

    Raises
    ------
    ValueError
        An argument outside the ranges above, or non-finite; a ``width`` that is not an integer
        (a bool, a string, a non-integral float or an array).
    TypeError
        A bool, complex, string or array where a real number is expected (``slope``,
        ``weight_kurtosis``, ``sigma_x2``); a complex ``width``.

    Notes
    -----
    Prop. 4.3 of Grzejdziak 2023, re-derived from Lemmas 4.1-4.2: identical to the printed matrix (see the
    module notes for the assumptions the derivation needs).

    Examples
    --------
    ReLU (``a = 0``, so ``2 (a^4 + 1) / (a^2 + 1)^2 = 2``), Gaussian weights, width 2:

    >>> transition_matrix(2)
    array([[ 3. ,  1.5,  1.5],
           [ 1. ,  0.5, -0.5],
           [ 0. ,  0. ,  1. ]])
    """
    width = _int(width, "width", 1, MAX_WIDTH)
    r = _slope_ratio(_check_slope(slope))
    kw = _check_kw(weight_kurtosis)
    s4 = _check_sigma_x2(sigma_x2) ** 2
    al, be, ga, de = _coefficients(width, r, kw)
    return np.array([[al, be / s4, be], [ga * s4, de, -s4 / width], [0.0, 0.0, 1.0]])


def _exp_checked(log_values, what: str, alternative: str):
    """``exp(log_values)`` or a ``ValueError`` naming ``alternative`` when it exceeds float64."""
    log_values = np.asarray(log_values, dtype=np.float64)
    if log_values.size and np.max(log_values) > _LOG_MAX:
        first = int(np.argmax(log_values > _LOG_MAX))
        raise ValueError(
            f"{what} exceeds the float64 range (log value {float(np.max(log_values)):.6g} > {_LOG_MAX:.2f}, first at "
            f"index {first}); use {alternative}"
        )
    with np.errstate(under="ignore"):
        return np.exp(log_values)


@dataclass(frozen=True)
class KurtosisPropagation(Result):
    """Kurtosis and squared-output covariance through a network (Prop. 4.3), on a log scale.

    The recursion is carried as ``log_scale`` plus rescaled values, so that depth 10^4 (``kappa``
    up to ``10^5000``) is represented; ``kappa`` and ``c`` are formed on request.

    Attributes
    ----------
    log_scale : ndarray, shape (d + 1,)
        ``kappa_l = kappa_scaled[l] * exp(log_scale[l])``; 0 while nothing needed rescaling.
    kappa_scaled : ndarray, shape (d + 1,)
        ``kappa_l / exp(log_scale[l])``, in ``(0, 1e100]``.
    c_scaled : ndarray, shape (d + 1,)
        ``c_l / (sigma_x2^2 exp(log_scale[l]))``: the covariance in units of ``sigma_x^4``, rescaled.
    widths : ndarray
        The widths used (``widths[l]`` = fan-in of layer ``l + 1``).
    slope, weight_kurtosis, sigma_x2 : float
        The parameters.
    log_kappa : ndarray
        Property: ``log kappa_l``, finite at any depth.
    kappa, c : ndarray
        Properties: ``kappa_l`` and ``c_l = Cov[(y_i^(l))^2, (y_j^(l))^2]``; they raise
        ``ValueError`` (naming the log-scale fields) when a value exceeds the float64 range.
    """

    log_scale: np.ndarray
    kappa_scaled: np.ndarray
    c_scaled: np.ndarray
    widths: np.ndarray
    slope: float
    weight_kurtosis: float
    sigma_x2: float

    @property
    def log_kappa(self) -> np.ndarray:
        """``log kappa_l`` (finite; ``kappa_l >= 1``)."""
        return np.log(self.kappa_scaled) + self.log_scale

    @property
    def kappa(self) -> np.ndarray:
        """``kappa_l``; ``ValueError`` where it exceeds float64 (use :attr:`log_kappa`)."""
        exact = self.log_scale == 0.0
        out = _exp_checked(np.where(exact, 0.0, self.log_kappa), "kappa", "log_kappa")
        return np.where(exact, self.kappa_scaled, out)

    @property
    def c(self) -> np.ndarray:
        """``c_l``; ``ValueError`` where it exceeds float64 (use ``c_scaled`` and ``log_scale`` there)."""
        s4 = self.sigma_x2**2
        exact = self.log_scale == 0.0
        with np.errstate(divide="ignore"):
            logc = np.log(np.abs(self.c_scaled)) + self.log_scale + math.log(s4)
        mag = _exp_checked(
            np.where(exact, 0.0, logc), "c", "c_scaled and log_scale (c = c_scaled sigma_x2^2 exp(log_scale))"
        )
        return np.where(exact, self.c_scaled * s4, np.sign(self.c_scaled) * mag)


#: Relative rounding allowance of the input-moment bounds (inputs estimated by input_statistics).
_MOMENT_RTOL = 1e-12


def _check_input_moments(kappa0, c0, sigma_x2, width0):
    """``kappa0`` and ``c0 / sigma_x^4`` after checking that they can be moments of a width-``width0`` signal.

    With ``X_i = x_i^2 / sigma_x^2`` (mean 1, ``E X_i^2 = kappa0``, ``Cov(X_i, X_j) = c0 / sigma_x^4``):
    ``E X_i X_j >= 0`` gives ``c0 >= -sigma_x^4``; Cauchy-Schwarz ``c0 <= (kappa0 - 1) sigma_x^4``;
    ``Var(sum_i X_i) >= 0`` gives ``c0 >= -(kappa0 - 1) sigma_x^4 / (w_0 - 1)`` for ``w_0 >= 2``.
    All three hold for averages over coordinates too (what :func:`input_statistics` returns), and
    :func:`propagate` maps this set into itself layer by layer (tested), so every ``kappa_l >= 1``.
    """
    kappa0 = check_scalar(kappa0, "kappa0")
    c0 = check_scalar(c0, "c0")
    if kappa0 < 1.0:
        raise ValueError(f"kappa0 must be >= 1 (a kurtosis), got {kappa0!r}")
    s4 = sigma_x2**2
    cn = c0 / s4  # finite: |c0| <= 1.8e308 and s4 >= 1e-200 can overflow only when c0 is out of range anyway
    tol = _MOMENT_RTOL * kappa0
    lower = -1.0
    if width0 >= 2:
        lower = max(lower, -(kappa0 - 1.0) / (width0 - 1.0))
    upper = kappa0 - 1.0
    if not (lower - tol <= cn <= upper + tol):
        raise ValueError(
            f"c0 must lie in [{lower * s4:.6g}, {upper * s4:.6g}] for kappa0={kappa0!r}, sigma_x2={sigma_x2!r} and input "
            f"width {width0} (E x_i^2 x_j^2 >= 0, Cauchy-Schwarz, Var(sum_i x_i^2) >= 0), got {c0!r}"
        )
    return kappa0, min(max(cn, lower), upper)


def propagate(
    kappa0: float,
    c0: float,
    widths: Sequence[int] | ArrayLike,
    slope: float = 0.0,
    weight_kurtosis: float = 3.0,
    sigma_x2: float = 1.0,
) -> KurtosisPropagation:
    """Iterate ``k^(l+1) = A^(l) k^(l)`` (Prop. 4.3 of Grzejdziak 2023) from ``k^(0) = [kappa0, c0, 1]``.

    Parameters
    ----------
    kappa0, c0 : float
        Input kurtosis (``>= 1``) and squared-entry covariance; e.g. from :func:`input_statistics`.
        Gaussian i.i.d. inputs: ``(3, 0)``. They must be moments of a signal of width
        ``widths[0]``: ``max(-1, -(kappa0 - 1) / (widths[0] - 1)) <= c0 / sigma_x2^2 <= kappa0 - 1``
        (the first bound from ``E x_i^2 x_j^2 >= 0``, the second from ``Var(sum x_i^2) >= 0``
        (``widths[0] >= 2`` only), the last from Cauchy-Schwarz).
    widths : sequence of int
        ``1 <= widths[l] <= 2**53`` is the width of ``y^(l)``, the fan-in of layer ``l + 1``; the
        depth is ``len(widths)``. ``c`` at the output needs an output width >= 2 to have a meaning.
    slope, weight_kurtosis, sigma_x2
        As in :func:`transition_matrix`.

    Returns
    -------
    KurtosisPropagation
        ``kappa[l]``, ``c[l]`` for ``l = 0 .. d`` (every ``kappa_l >= 1``). The recursion is run on
        ``(kappa, c / sigma_x^4, 1)`` rescaled by a log-scale, so depth 10^4 at width 2
        (``kappa ~ 10^5440``) is represented: ``log_kappa`` is always finite, and ``kappa`` / ``c``
        raise ``ValueError`` when asked for values beyond float64.

    Raises
    ------
    ValueError
        Invalid widths, slope, kurtoses, ``sigma_x2`` outside ``SIGMA_X2_RANGE``, or input moments
        that no signal has (the bounds above).
    TypeError
        Bools, complex numbers or strings where numbers are expected.

    Notes
    -----
    Prop. 4.3 of Grzejdziak 2023. ``A^(l)`` acts on ``c / sigma_x^4`` without ``sigma_x2``; only the unit of
    ``c`` depends on it.

    Examples
    --------
    Two ReLU layers of width 2 from Gaussian inputs: ``k^(1) = A k^(0)`` with ``A`` of
    :func:`transition_matrix`, ``k^(0) = (3, 0, 1)``:

    >>> res = propagate(3.0, 0.0, [2, 2])
    >>> res.kappa, res.c
    (array([ 3.  , 10.5 , 36.75]), array([ 0.  ,  2.5 , 11.25]))
    """
    widths = _check_widths(widths)
    slope = _check_slope(slope)
    r = _slope_ratio(slope)
    kw = _check_kw(weight_kurtosis)
    sigma_x2 = _check_sigma_x2(sigma_x2)
    kappa0, cn0 = _check_input_moments(kappa0, c0, sigma_x2, int(widths[0]))
    d = widths.size
    # scaled state: (kappa, c / s4, 1) = exp(s) * (u, v, t); coefficients vectorised over layers
    wf = widths.astype(np.float64)
    al, be, ga = (kw * r / wf).tolist(), (3.0 * (wf - 1.0) / wf).tolist(), (r / wf).tolist()
    de, dm = ((wf - 1.0) / wf).tolist(), (-1.0 / wf).tolist()
    u, v, t, s = kappa0, cn0, 1.0, 0.0
    big = max(u, abs(v))
    if big > _RESCALE:
        u, v, t, s = u / big, v / big, t / big, math.log(big)
    us, vs, ss = [u], [v], [s]
    for l in range(d):
        u, v = al[l] * u + be[l] * v + be[l] * t, ga[l] * u + de[l] * v + dm[l] * t
        big = max(u, abs(v))
        if big > _RESCALE:
            u, v, t, s = u / big, v / big, t / big, s + math.log(big)
        us.append(u)
        vs.append(v)
        ss.append(s)
    return KurtosisPropagation(np.array(ss), np.array(us), np.array(vs), widths, slope, kw, sigma_x2)


# --------------------------------------------------------------------------------------------
# Lemma 4.4: products; Lemma 4.5: trace, determinant, spectral radius
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LemmaProduct(Result):
    """The product ``B = prod_l A^(d - l)`` in the form of Lemma 4.4, on a log scale.

    ``B = [[alpha, beta / s4, beta], [gamma s4, delta, s4 (delta - 1)], [0, 0, 1]]`` with
    ``s4 = sigma_x2^2``, ``gamma > 0``, ``alpha >= gamma``, ``delta > 0``, ``beta >= delta`` (``w > 1``).

    Attributes
    ----------
    scaled : ndarray, shape (4,)
        ``(alpha, beta, gamma, delta) / exp(log_scale)`` (finite, largest entry ``<= 1e100``).
    log_scale : float
        The common log-scale (0 while nothing needed rescaling).
    sigma_x2 : float
        The variance the matrix was built for.
    alpha, beta, gamma, delta : float
        Properties; ``ValueError`` when beyond float64 (use the ``log_*`` properties).
    log_alpha, log_beta, log_gamma, log_delta : float
        Properties, finite at any depth; ``-inf`` only for an exact zero (``delta`` and ``beta``
        of a single width-1 layer).
    matrix : ndarray, shape (3, 3)
        Property; ``ValueError`` when an entry is beyond float64.
    """

    scaled: np.ndarray
    log_scale: float
    sigma_x2: float

    def _log(self, i: int) -> float:
        v = float(self.scaled[i])
        return math.log(v) + self.log_scale if v > 0 else -math.inf

    def _value(self, i: int, name: str) -> float:
        if self.log_scale == 0.0:
            return float(self.scaled[i])
        return float(_exp_checked(self._log(i), name, f"log_{name}"))

    @property
    def alpha(self) -> float:
        """``alpha`` (``ValueError`` beyond float64)."""
        return self._value(0, "alpha")

    @property
    def beta(self) -> float:
        """``beta`` (``ValueError`` beyond float64)."""
        return self._value(1, "beta")

    @property
    def gamma(self) -> float:
        """``gamma`` (``ValueError`` beyond float64)."""
        return self._value(2, "gamma")

    @property
    def delta(self) -> float:
        """``delta`` (``ValueError`` beyond float64)."""
        return self._value(3, "delta")

    @property
    def log_alpha(self) -> float:
        """``log alpha``."""
        return self._log(0)

    @property
    def log_beta(self) -> float:
        """``log beta`` (``-inf`` for an exact zero)."""
        return self._log(1)

    @property
    def log_gamma(self) -> float:
        """``log gamma``."""
        return self._log(2)

    @property
    def log_delta(self) -> float:
        """``log delta`` (``-inf`` for an exact zero)."""
        return self._log(3)

    @property
    def matrix(self) -> np.ndarray:
        """The 3 x 3 matrix ``B`` (zeros of row 3 exact); ``ValueError`` when an entry exceeds float64."""
        s4 = self.sigma_x2**2
        a, b, g, d = self.alpha, self.beta, self.gamma, self.delta
        with np.errstate(over="ignore"):
            m = np.array([[a, b / s4, b], [g * s4, d, s4 * (d - 1.0)], [0.0, 0.0, 1.0]])
        if not np.all(np.isfinite(m)):
            raise ValueError("matrix has entries beyond the float64 range; use the log_* properties")
        return m


def product(
    widths: Sequence[int] | ArrayLike, slope: float = 0.0, weight_kurtosis: float = 3.0, sigma_x2: float = 1.0
) -> LemmaProduct:
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
        ``1 <= widths[l] <= 2**53`` is the width ``w_l`` of ``A^(l)``; ``A^(0)`` acts first.
    slope, weight_kurtosis, sigma_x2
        As in :func:`transition_matrix`.

    Returns
    -------
    LemmaProduct
        ``alpha, beta, gamma, delta`` and ``matrix`` (``ValueError`` beyond float64), their
        logarithms (always available). For every width ``> 1``: ``gamma > 0``, ``alpha >= gamma``,
        ``delta > 0``, ``beta >= delta``.

    Raises
    ------
    ValueError
        Empty or non-integer ``widths``, a width outside ``[1, 2**53]``, ``weight_kurtosis``
        outside ``[1, 1e100]``, ``sigma_x2`` outside ``SIGMA_X2_RANGE``, or a non-finite argument.
    TypeError
        Bools, complex numbers or strings where numbers are expected.

    Notes
    -----
    Lemma 4.4 of Grzejdziak 2023 (stated for ``w > 1``); a width of 1 gives ``delta = 0`` there, which
    the lemma excludes (``log_delta = -inf``).

    Examples
    --------
    >>> b = product([2, 2])       # A^(1) A^(0) for ReLU, width 2, Gaussian weights
    >>> b.alpha, b.beta, b.gamma, b.delta
    (10.5, 5.25, 3.5, 1.75)
    """
    widths = _check_widths(widths)
    r = _slope_ratio(_check_slope(slope))
    kw = _check_kw(weight_kurtosis)
    sigma_x2 = _check_sigma_x2(sigma_x2)
    a2, b2, g2, d2 = _coefficients(int(widths[0]), r, kw)
    s = 0.0
    for w in widths[1:]:
        a1, b1, g1, d1 = _coefficients(int(w), r, kw)
        a2, b2, g2, d2 = a1 * a2 + b1 * g2, a1 * b2 + b1 * d2, g1 * a2 + d1 * g2, g1 * b2 + d1 * d2
        big = max(a2, b2, g2, d2)
        if big > _RESCALE:
            a2, b2, g2, d2, s = a2 / big, b2 / big, g2 / big, d2 / big, s + math.log(big)
    return LemmaProduct(np.array([a2, b2, g2, d2]), s, sigma_x2)


@dataclass(frozen=True)
class TraceDeterminant(Result):
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


def trace_determinant(width: int, slope: float = 0.0, weight_kurtosis: float = 3.0) -> TraceDeterminant:
    r"""Trace, determinant and eigenvalues of the 2 x 2 block ``A_-^(l)`` (Lemma 4.5 of Grzejdziak 2023).

    .. math::

        \mathrm{tr} A_- = \frac{2(a^4+1)\kappa_w}{w(a^2+1)^2} - \frac1w + 1, \qquad
        \det A_- = \frac{2(a^4+1)(w-1)(\kappa_w-3)}{w^2(a^2+1)^2}.

    Parameters
    ----------
    width : int
        ``1 <= w <= 2**53``.
    slope, weight_kurtosis
        As in :func:`transition_matrix` (the block does not depend on ``sigma_x2``).

    Returns
    -------
    TraceDeterminant
        ``trace``, ``determinant``, ``lambda_max``, ``lambda_min`` and ``gap = lambda_max - 1``
        (solved from the shifted characteristic polynomial, no cancellation at large width); all
        finite.

    Raises
    ------
    ValueError
        ``width`` outside ``[1, 2**53]`` or not an integer (a bool, a string or a non-integral
        float), ``weight_kurtosis`` outside ``[1, 1e100]`` or a non-finite argument.
    TypeError
        Bools, complex numbers or strings where real numbers are expected; a complex ``width``.

    Notes
    -----
    The printed proof of Lemma 4.5 omits the condition it needs for ``1 <= tr < 2``:
    ``lambda_max > 1  <=>  det + 1 < tr``, which holds for every ``w > 1`` (tested).

    Examples
    --------
    >>> td = trace_determinant(2)     # Gaussian weights: det = 0 (kappa_w = 3)
    >>> td.trace, td.determinant, td.lambda_max, td.gap
    (3.5, 0.0, 3.5, 2.5)
    """
    width = float(_int(width, "width", 1, MAX_WIDTH))
    r = _slope_ratio(_check_slope(slope))  # in [1, 2]
    kw = _check_kw(weight_kurtosis)
    tr_minus_1 = (r * kw - 1.0) / width
    trace = 1.0 + tr_minus_1
    det = r * (width - 1.0) / width * (kw - 3.0) / width
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


def spectral_radius(width: int | ArrayLike, slope: float = 0.0, weight_kurtosis: float = 3.0) -> float | np.ndarray:
    """Spectral radius of ``A^(l)``: ``max(lambda_max(A_-), 1)``; ``> 1`` for every ``w > 1`` (Lemma 4.5 of Grzejdziak 2023).

    The eigenvalues of ``A^(l)`` are those of ``A_-^(l)`` and the 1 of its last row.

    Parameters
    ----------
    width : int or array_like of int
        ``1 <= w <= 2**53``; vectorised over arrays (an ndarray of the same shape is returned then).
    slope, weight_kurtosis
        As in :func:`transition_matrix`.

    Returns
    -------
    float or ndarray
        Finite, ``>= 1``.

    Raises
    ------
    ValueError
        As :func:`trace_determinant`; an empty array of widths, or one holding non-integral
        numbers.
    TypeError
        Bools, complex numbers or strings where real numbers are expected; a complex ``width``; an
        array of widths holding strings or complex numbers.

    Examples
    --------
    >>> spectral_radius(2), spectral_radius([2, 4]).round(4)
    (3.5, array([3.5 , 2.25]))
    """
    if np.ndim(width):
        flat = _check_widths(np.ravel(width), "width")
        return np.array([spectral_radius(int(w), slope, weight_kurtosis) for w in flat]).reshape(np.shape(width))
    return max(trace_determinant(width, slope, weight_kurtosis).lambda_max, 1.0)


def depth_to_kurtosis(
    threshold: float,
    kappa0: float,
    c0: float,
    width: int,
    slope: float = 0.0,
    weight_kurtosis: float = 3.0,
    sigma_x2: float = 1.0,
    max_depth: int = 10**9,
) -> int:
    """The first depth ``d`` with ``kappa_d >= threshold`` for a constant-width network (Prop. 4.3, Thm. 4.7).

    Scans the first 10^4 layers one by one, then (the kurtosis being eventually increasing, Thm. 4.7)
    brackets and bisects with matrix powers of ``A`` computed in log-scale (by construction
    ``kappa_{d-1} < threshold <= kappa_d`` at the returned depth), using
    ``kappa_d = alpha_d kappa_0 + beta_d (c_0 / sigma_x^4 + 1)`` from the proof of Thm. 4.7.

    Parameters
    ----------
    threshold : float
        Kurtosis to reach, ``> 0`` (finite; any size: the search runs on ``log kappa``).
    kappa0, c0 : float
        Input moments, as in :func:`propagate` (input width ``width``).
    width : int
        Constant width ``1 <= w <= 2**53``.
    slope, weight_kurtosis, sigma_x2
        As in :func:`transition_matrix`.
    max_depth : int
        Largest depth searched, ``0 <= max_depth <= 2**62``.

    Returns
    -------
    int
        The depth ``d`` (0 when ``kappa0 >= threshold``).

    Raises
    ------
    ValueError
        Bad arguments (``width`` or ``max_depth`` not an integer -- a bool, a string or a
        non-integral float -- included), or the threshold is not reached within ``max_depth``
        layers (e.g. width 1 with ``|a| = 1`` and ``kappa_w = 1``, where the spectral radius is 1).
    TypeError
        Bools, complex numbers or strings where real numbers are expected; a complex ``width`` or
        ``max_depth``.

    Examples
    --------
    >>> depth_to_kurtosis(100.0, 3.0, 0.0, width=2)     # kappa_l = 3, 10.5, 36.75, 128.6, ...
    3
    """
    threshold = check_scalar(threshold, "threshold")
    if threshold <= 0:
        raise ValueError(f"threshold must be > 0, got {threshold!r}")
    width = _int(width, "width", 1, MAX_WIDTH)
    max_depth = _int(max_depth, "max_depth", 0, 2**62)
    slope = _check_slope(slope)
    kw = _check_kw(weight_kurtosis)
    sigma_x2 = _check_sigma_x2(sigma_x2)
    kappa0, cn0 = _check_input_moments(kappa0, c0, sigma_x2, width)
    if kappa0 >= threshold:
        return 0
    scan = min(max_depth, 10_000)
    res = propagate(kappa0, cn0 * sigma_x2**2, np.full(scan, width), slope, kw, sigma_x2) if scan else None
    logt = math.log(threshold)
    if res is not None:
        hit = np.nonzero(res.log_kappa >= logt)[0]
        if hit.size:
            return int(hit[0])
    if scan == 0 or scan == max_depth or spectral_radius(width, slope, kw) <= 1.0:
        raise ValueError(f"kurtosis does not reach threshold={threshold!r} within max_depth={max_depth} layers")

    def log_kappa_at(d):
        return _log_kappa_power(width, slope, kw, sigma_x2, kappa0, cn0 * sigma_x2**2, d)

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
    al, be, ga, de = _coefficients(width, _slope_ratio(_check_slope(slope)), _check_kw(kw))
    big = max(al, be, ga, de)
    base = (al / big, be / big, ga / big, de / big, math.log(big))
    result = None
    while d:
        if d & 1:
            result = base if result is None else _mul(result, base)
        d >>= 1
        if d:
            base = _mul(base, base)
    a, b, _, _, s = result
    # kappa_d = alpha kappa0 + beta (c0 / s4 + 1)   (proof of Thm. 4.7); every term >= 0 on valid inputs
    m = a * kappa0 + b * (c0 / sigma_x2**2 + 1.0)
    return math.log(m) + s if m > 0 else -math.inf
