"""Expected squared signal norms of ReLU networks with biases (Burkholz & Dubatovka 2019, Cor. 3, eqs. 5-6)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from ._common import LOG_MAX, LOG_TINY, check_size, nonneg_array
from ._layer import Layer, check_layers

__all__ = ["expected_squared_norm", "log_expected_squared_norm"]


def log_expected_squared_norm(y0: ArrayLike, layers: Sequence[Layer | tuple]) -> np.ndarray:
    r"""``log E |x^(l)|^2`` for ReLU layers given ``|x^(0)|^2 = y0`` (Burkholz & Dubatovka 2019, Cor. 3, eqs. 5-6), at any depth.

    The recursion of eq. 5, ``E_l = (sigma_w2_l / fan_in_l * E_{l-1} + sigma_b2_l) N_l / 2``, run on
    the log scale: ``log E_l = log(N_l / 2) + logaddexp(log(sigma_w2_l / fan_in_l) + log E_{l-1},
    log sigma_b2_l)``. Depth 10^4 below or above criticality (``E`` from ``1e-3010`` to ``1e+3010``)
    is represented.

    Parameters
    ----------
    y0, layers
        As :func:`expected_squared_norm`.

    Returns
    -------
    ndarray, shape (L + 1,) + shape of ``y0``
        Row 0 is ``log y0``. ``-inf`` exactly where the expectation is 0 (``y0 = 0`` and no bias
        so far, or a layer with ``sigma_w2 = sigma_b2 = 0``); finite everywhere else.

    Raises
    ------
    ValueError
        Negative or non-finite ``y0`` or variances, a width or fan-in out of range or not an
        integer (a bool, a string or a non-integral float), a result above 2^29 numbers.
    TypeError
        ``layers`` not a list of layers; bools, complex numbers or strings where real numbers are
        expected; a complex width or fan-in.

    Examples
    --------
    >>> log_e = log_expected_squared_norm(1.0, [Layer(10, 1.0)] * 10_000)   # half of He: E_L = 2^-L
    >>> round(float(log_e[-1] / np.log(2.0)), 6)
    -10000.0
    """
    y = nonneg_array(y0, "y0")
    lays = check_layers(layers)
    check_size((len(lays) + 1) * max(y.size, 1), "(len(layers) + 1) * y0.size")
    with np.errstate(divide="ignore"):
        cur = np.log(y)
    out = np.empty((len(lays) + 1,) + y.shape)
    out[0] = cur
    for l, lay in enumerate(lays):
        sw = lay.sigma_w2 / lay.fan_in
        lsw = math.log(sw) if sw > 0 else -math.inf
        lsb = math.log(lay.sigma_b2) if lay.sigma_b2 > 0 else -math.inf
        cur = np.logaddexp(lsw + cur, lsb) + math.log(lay.width / 2.0)
        out[l + 1] = cur
    return out


def expected_squared_norm(y0: ArrayLike, layers: Sequence[Layer | tuple]) -> np.ndarray:
    r"""``E |x^(l)|^2`` for ReLU layers given ``|x^(0)|^2 = y0`` (Burkholz & Dubatovka 2019, Cor. 3, eqs. 5-6).

    Eq. 5: ``E(|x^(l)|^2 | |x^(l-1)|^2 = y) = (sigma_w2_l / fan_in_l * y + sigma_b2_l) N_l / 2``,
    iterated (eq. 6 is the unrolled form), per-layer widths and variances, biases included. He
    (``sigma_w2 = 2``, square layers, no bias) preserves the mean exactly.

    Parameters
    ----------
    y0 : float or array_like
        Squared norm(s) of the input (>= 0).
    layers : list of Layer or (width, sigma_w2[, sigma_b2[, fan_in]]) tuples
        One entry per ReLU layer: ``W_ij ~ N(0, sigma_w2 / fan_in)`` (``fan_in`` defaults to the
        layer's width; He is ``sigma_w2 = 2``), variances >= 0, widths ``1 <= N <= MAX_WIDTH``.

    Returns
    -------
    ndarray, shape (L + 1,) + shape of ``y0``
        Row 0 is ``y0``. Finite, and either exactly 0 (see :func:`log_expected_squared_norm`) or
        a normal float64 number.

    Raises
    ------
    ValueError
        Negative or non-finite ``y0`` or variances, a width or fan-in out of range or not an
        integer (a bool, a string or a non-integral float), or an expectation beyond the float64
        range (deep networks off criticality: e.g. depth 10^4 at ``sigma_w2 = 1``, square layers,
        gives ``1e-3010``); use :func:`log_expected_squared_norm` there.
    TypeError
        ``layers`` not a list of layers; bools, complex numbers or strings where real numbers are
        expected; a complex width or fan-in.

    Examples
    --------
    >>> expected_squared_norm(1.0, [Layer(100, 2.0, 0.01), Layer(50, 2.0, fan_in=100)])
    array([1.  , 1.5 , 0.75])
    """
    logs = log_expected_squared_norm(y0, layers)
    finite = np.isfinite(logs)
    if np.any(finite[1:] & ((logs[1:] > LOG_MAX) | (logs[1:] < LOG_TINY))):  # row 0 is the input itself
        bad = logs[1:][finite[1:]]
        raise ValueError(
            f"the expected squared norm leaves the float64 range (log values from {float(bad.min()):.6g} to "
            f"{float(bad.max()):.6g}); use log_expected_squared_norm"
        )
    y = np.asarray(nonneg_array(y0, "y0"), float)
    out = [y]
    for lay in check_layers(layers):
        out.append((lay.sigma_w2 / lay.fan_in * out[-1] + lay.sigma_b2) * lay.width / 2.0)  # direct: exact to rounding
    return np.where(finite, np.array(out), 0.0)
