"""The q-map, c-map and covariance maps of a dense layer (Poole et al. 2016, eqs. 3-5; Xiao et al. 2018, eqs. 2.5-2.6)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from .._checks import (
    as_real_array,
    check_correlation,
    check_covariance,
    check_nonnegative_scalar,
)
from .._logscale import (
    HOMOGENEOUS,
    LOG_DBL_MIN,
    RELU_LIKE,
    SCALE_FREE,
    finite_result,
    map_stack,
)
from ..activations import (
    asymptote_activation,
    call_user,
    evaluate_call,
    get_activation,
    origin_activation,
    origin_slopes,
)
from ..gaussian import (
    DEFAULT_DEGREE,
    expectation,
    pair_expectation,
)
from ._common import _act, _variances
from ._phases import fixed_point

if TYPE_CHECKING:  # annotations only
    from ..activations import Activation


# ----------------------------------------------------------------------------------------------
# Maps.


def input_covariance(x: ArrayLike, sigma_w2: float, sigma_b2: float) -> np.ndarray:
    r"""First-layer pre-activation covariance :math:`\Sigma^1 = \sigma_w^2 x x^T / n_0 + \sigma_b^2`.

    Parameters
    ----------
    x : array_like, shape (D, n0)
        D inputs of dimension n0 (D, n0 >= 1).
    sigma_w2, sigma_b2 : float
        Weight and bias variances (>= 0).

    Returns
    -------
    ndarray, shape (D, D)

    Raises
    ------
    ValueError
        Wrong shape, negative or non-finite values, or a covariance beyond the float64 range
        (rescale ``x``; the maps of homogeneous activations are scale-covariant).
    TypeError
        Complex, boolean or non-numeric arguments, arrays for the variances.
    """
    x = as_real_array(x, "x")
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(f"x must have shape (D, n0) with D, n0 >= 1, got {x.shape}")
    sigma_w2, sigma_b2 = _variances(sigma_w2, sigma_b2)
    top = float(np.max(np.abs(x)))
    if sigma_w2 == 0.0 or top == 0.0:
        return np.full((x.shape[0], x.shape[0]), sigma_b2)
    e = math.frexp(top)[1]  # x / 2^e is exact, and sigma_w2 4^e is exact unless it overflows
    xs = np.ldexp(x, -e)
    gram = (xs @ xs.T) / x.shape[1]
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.ldexp(sigma_w2, 2 * e) * gram + sigma_b2 if 2 * e < 2000 else np.full(gram.shape, np.inf)
    if not np.all(np.isfinite(out)):
        raise ValueError(
            "input_covariance exceeds the float64 range: rescale x (sigma_w2 |x|^2 / n0 must stay below ~1e308)"
        )
    diag = np.diagonal(gram)
    with np.errstate(divide="ignore"):
        log_var = math.log(sigma_w2) + 2 * e * math.log(2.0) + np.log(diag)
    if sigma_b2 == 0.0 and np.any((diag > 0) & (log_var < LOG_DBL_MIN)):
        raise ValueError(
            "input_covariance falls below the smallest normal float64 (underflow): rescale x (the maps of "
            "homogeneous activations are scale-covariant) or pass sigma_b2 > 0"
        )
    return out


def qmap(
    q: float | ArrayLike, activation: str | Activation, sigma_w2: float, sigma_b2: float, degree: int = DEFAULT_DEGREE
) -> float | np.ndarray:
    r"""The length map :math:`q^{l+1} = \sigma_w^2\,\mathbb{E}\,\phi(\sqrt{q^l} z)^2 + \sigma_b^2` (Poole et al. 2016, eq. 3).

    Parameters
    ----------
    q : float or array_like
        Pre-activation variances (>= 0, finite).
    activation : str or Activation
    sigma_w2, sigma_b2 : float
        Variances (>= 0), scalars.
    degree : int
        Gauss-Hermite degree for activations without closed forms.

    Returns
    -------
    float or ndarray shaped like ``q``.

    Raises
    ------
    ValueError
        Negative or non-finite arguments; a result beyond the float64 range.
    TypeError
        Complex or boolean arguments; arrays for ``sigma_w2``/``sigma_b2``.

    Examples
    --------
    >>> qmap(1.0, "relu", 2.0, 0.0)
    1.0
    """
    sigma_w2, sigma_b2 = _variances(sigma_w2, sigma_b2)
    with np.errstate(over="ignore"):
        out = sigma_w2 * expectation(activation, q, (0, 0), degree) + sigma_b2
    return finite_result(out, "qmap")


def _limit_cmap(act, c, sigma_w2, where):
    """The c-map in the limit q -> 0 (``where == 0``) or q -> inf (``where == inf``) with sigma_b2 = 0."""
    if sigma_w2 == 0.0:
        return np.ones_like(c) if np.ndim(c) else 1.0
    scale_free = act.code in HOMOGENEOUS or act.code in SCALE_FREE
    if act.is_builtin and (scale_free or (where > 0 and act.code in RELU_LIKE)):
        # q-independent normalised kernel map of the activation (or of its asymptote relu)
        base = act if scale_free else get_activation("relu")
        return pair_expectation(base, 1.0, 1.0, c) / expectation(base, 1.0)
    if act.is_builtin and where > 0:
        # the normalised kernel map of the piecewise-linear asymptote (activations.asymptote)
        base = asymptote_activation(act)[1]
        return pair_expectation(base, 1.0, 1.0, c) / expectation(base, 1.0)
    if where == 0 and act.is_builtin:
        a0, b0 = origin_slopes(act.code, act.param)
        if a0 != b0:  # kinked at 0 (abs, elu, selu): the normalised map of phi's piecewise-linear germ
            base = origin_activation(act)[1]
            return pair_expectation(base, 1.0, 1.0, c) / expectation(base, 1.0)
        return c  # phi(u) ~ phi'(0) u: the linear map, correlations freeze
    raise ValueError(
        f"the c-map of the user-defined activation {act.name!r} at q = {where} is 0/0 "
        "(phi(0) = 0, sigma_b2 = 0) and its limit is not determined: pass q > 0"
    )


def cmap(
    c: float | ArrayLike,
    activation: str | Activation,
    sigma_w2: float,
    sigma_b2: float,
    q: float | ArrayLike | None = None,
    degree: int = DEFAULT_DEGREE,
) -> float | np.ndarray:
    r"""The correlation map of two inputs of equal variance ``q`` (Poole et al. 2016, eq. 5).

    .. math:: c^{l+1} = \frac{\sigma_w^2\,\mathbb{E}\,\phi(u_1)\phi(u_2) + \sigma_b^2}{\sigma_w^2\,\mathbb{E}\,\phi(u)^2 + \sigma_b^2},
        \quad \mathrm{Var}\,u_i = q,\ \mathrm{corr}(u_1, u_2) = c^l .

    Parameters
    ----------
    c : float or array_like
        Correlations in [-1, 1].
    activation : str or Activation
    sigma_w2, sigma_b2 : float
        Variances (>= 0), scalars.
    q : float, optional
        The common variance (>= 0, finite); ``None`` means the fixed point q* (where the map is
        the one iterated by deep networks; a built-in activation is then required).
    degree : int
        Gauss-Hermite degree for activations without closed forms.

    Returns
    -------
    float or ndarray shaped like ``c``

    Raises
    ------
    ValueError
        Bad arguments; a user-defined activation at q = 0 with a 0/0 map; q = None with a
        user-defined activation.
    TypeError
        Complex or boolean arguments; arrays for the scalars.

    Notes
    -----
    Where the ratio is 0/0 (q = 0 with :math:`\phi(0) = 0` and :math:`\sigma_b^2 = 0`, e.g. at
    q* = 0 in the ordered phase without bias) the map is its limit q -> 0: the q-independent
    normalised kernel map for positively homogeneous activations (relu: the arc-cosine map; sign,
    relu_power), the normalised map of the germ at 0 for an activation kinked there (abs, elu with
    alpha != 1, selu), the identity for the other built-ins (:math:`\phi(u) \approx \phi'(0)u`). At q* = inf (relu-like
    activations in the chaotic phase) it is the limit q -> inf, the normalised map of the
    activation's asymptote (relu). At exactly q = 0 with a non-zero denominator every input maps
    to the same pre-activation and the map is 1.

    Examples
    --------
    >>> round(float(cmap(0.5, "relu", 2.0, 0.0)), 4)     # q-independent: the arc-cosine map
    0.609
    """
    act = _act(activation)
    sigma_w2, sigma_b2 = _variances(sigma_w2, sigma_b2)
    c = check_correlation(c, "c", strict=True)
    if q is None:
        q = fixed_point(act, sigma_w2, sigma_b2, degree=degree).q_star
        if math.isinf(q):
            return _limit_cmap(act, c, sigma_w2, math.inf)
    else:
        q = check_nonnegative_scalar(q, "q")
    if q == 0.0:
        if act.is_builtin:
            phi0 = float(evaluate_call(act.code, act.param, 0, 0.0))
        else:
            phi0 = float(call_user(act.phi, np.zeros(1), "phi", act.name)[0])
        if sigma_w2 * phi0 * phi0 + sigma_b2 > 0:
            return np.ones_like(c) if np.ndim(c) else 1.0
        return _limit_cmap(act, c, sigma_w2, 0.0)
    with np.errstate(over="ignore", invalid="ignore"):
        num = sigma_w2 * pair_expectation(act, q, q, c, (0, 0), degree) + sigma_b2
        den = sigma_w2 * expectation(act, q, (0, 0), degree) + sigma_b2
        out = num / den
    if den == 0.0:  # sigma_w2 = sigma_b2 = 0: every pre-activation is 0 (the convention of q = 0)
        return np.ones_like(num) if np.ndim(num) else 1.0
    if not np.all(np.isfinite(out)):
        raise ValueError("cmap: the map's moments exceed the float64 range at these parameters")
    return np.clip(out, -1.0, 1.0) if np.ndim(out) else float(min(1.0, max(-1.0, out)))


def covariance_map(
    cov: ArrayLike, activation: str | Activation, sigma_w2: float, sigma_b2: float, degree: int = DEFAULT_DEGREE
) -> np.ndarray:
    r"""The C-map :math:`\Sigma \mapsto \sigma_w^2\,\mathbb{E}_{h\sim N(0,\Sigma)}\phi(h)\phi(h)^T + \sigma_b^2` (Xiao et al. 2018, eq. 2.5).

    Parameters
    ----------
    cov : array_like, shape (..., D, D)
        Symmetric positive semi-definite covariance(s) of D pre-activations.
    activation, sigma_w2, sigma_b2, degree
        As :func:`qmap`.

    Returns
    -------
    ndarray, shape (..., D, D)
        Positive semi-definite (it is a Gram matrix of phi(h) plus a constant).

    Raises
    ------
    ValueError
        ``cov`` not a finite symmetric PSD matrix; negative or non-finite variances; a
        user-defined activation returning NaN/inf; a result beyond the float64 range.
    TypeError
        Complex or boolean arguments; arrays for the variances.
    """
    act = _act(activation)
    cov = check_covariance(cov, "cov", strict=True)
    sigma_w2, sigma_b2 = _variances(sigma_w2, sigma_b2)
    return map_stack(cov, act, 0, sigma_w2, sigma_b2, degree)


def derivative_covariance_map(
    cov: ArrayLike, activation: str | Activation, sigma_w2: float, degree: int = DEFAULT_DEGREE
) -> np.ndarray:
    r""":math:`\sigma_w^2\,\mathbb{E}_{h\sim N(0,\Sigma)}\phi'(h_a)\phi'(h_b)`: the factor of the backward (gradient) covariance map.

    Under the gradient-independence assumption (Xiao et al. 2018, supplement A.1), back-propagated
    signals obey :math:`\tilde\Sigma^l_{ab} = [\sigma_w^2 \mathbb{E}\phi'(h_a)\phi'(h_b)]\,\tilde\Sigma^{l+1}_{ab}` elementwise.

    Parameters
    ----------
    cov : array_like, shape (..., D, D)
        Forward covariance(s), symmetric PSD.
    activation : str or Activation
    sigma_w2 : float
        Weight variance (>= 0), scalar.
    degree : int
        Gauss-Hermite degree for activations without closed forms.

    Returns
    -------
    ndarray, shape (..., D, D)

    Raises
    ------
    ValueError, TypeError
        As :func:`covariance_map`.
    """
    act = _act(activation)
    cov = check_covariance(cov, "cov", strict=True)
    sigma_w2 = check_nonnegative_scalar(sigma_w2, "sigma_w2")
    return map_stack(cov, act, 1, sigma_w2, 0.0, degree)
