"""Weight kurtosis of named laws and the input statistics (kappa_0, c_0) of a data set (Grzejdziak 2023, Sec. 4;
private).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._results import Result
from ..init._args import real_array as _real_array
from ._args import _NAMED_KURTOSIS, SIGMA_X2_RANGE, _check_kw

# --------------------------------------------------------------------------------------------
# weight and input statistics
# --------------------------------------------------------------------------------------------


def weight_kurtosis(distribution: str | Any) -> float:
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
        ``kappa_w >= 1``, the constant of Prop. 4.3's ``A^(l)`` (Grzejdziak 2023).

    Raises
    ------
    ValueError
        Unknown name (``"orthogonal"`` is not an i.i.d. law), infinite or undefined fourth moment,
        an unfrozen distribution that needs parameters.

    Examples
    --------
    >>> from scipy import stats
    >>> weight_kurtosis("uniform"), weight_kurtosis(stats.t(df=7))   # Student t: 3 + 6 / (df - 4)
    (1.8, 5.0)
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
        raise ValueError(
            f"distribution must be a name or a scipy.stats distribution, got {type(distribution).__name__}"
        )
    try:
        excess = np.asarray(distribution.stats(moments="k"), dtype=np.float64)
    except (TypeError, ValueError, AttributeError) as exc:
        raise ValueError(
            f"distribution must be a name or a scipy.stats distribution with its parameters set, got {distribution!r}"
        ) from exc
    if excess.ndim != 0 or not math.isfinite(float(excess)):
        raise ValueError(
            "distribution must have one finite fourth moment (its kurtosis is infinite, undefined or an array)"
        )
    return float(excess) + 3.0


@dataclass(frozen=True)
class InputStatistics(Result):
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


def input_statistics(x: ArrayLike, method: str = "pairs", weight_kurtosis: float = 3.0) -> InputStatistics:
    """``kappa_0`` and ``c_0`` of a data set (the start of the recursion of Prop. 4.3).

    The paper (supplement E) estimates them "using 10^7 random samples" for channel-standardised
    MNIST and CIFAR-10 and reports (text) MNIST ``c0 = 0.71, kappa0 = 3.95`` and CIFAR-10
    ``c0 = 0.10, kappa0 = 3.28``, without saying what is sampled. Two readings are offered, both
    computed exactly (no sampling), the data being taken as centred:

    * ``method="pairs"``: moments of the coordinates themselves, averaged over every example and
      coordinate (``kappa0 = E x_i^4 / sigma^4``) and every ordered pair of distinct coordinates
      (``c0 = E x_i^2 x_j^2 - sigma^4``).
    * ``method="projected"``: moments of ``z = W x`` with ``W`` i.i.d. symmetric of variance
      ``1 / w`` and kurtosis ``weight_kurtosis`` (the He random vector of Prop. 3.3), averaged over
      ``W`` analytically: with ``r = |x|^2 / w``, ``sigma^2 = E r``, ``c0 = Var r``,
      ``kappa0 = (3 E r^2 + (kappa_w - 3) E sum_k x_k^4 / w^2) / sigma^4``.

    The authors' published code (github.com/Grzejdziok/vanishing-empirical-variance, ``train_utils.py``)
    settles the labels the other way round: its constants are MNIST ``kappa0 = 3.284, c0 = 0.0973``
    and CIFAR-10 ``kappa0 = 3.953, c0 = 0.710`` (``he_random_vector_kurtosis`` /
    ``..._covariance_of_squares``, "estimated using 10^7 samples", the start of its Prop. 4.3
    recursion with ``c0`` normalised by ``sigma^4``): the supplement's text swaps the two data sets.
    The code's names say which reading it uses, the second ("He random vector"). That reading gives
    ``kappa0 = 3 (1 + c0 / sigma^4)`` exactly for Gaussian ``W``; the MNIST pair satisfies it
    (3 x 1.097 = 3.29 vs 3.28), the CIFAR-10 pair does not (3 x 1.71 = 5.13 vs 3.95). Neither data set
    is bundled (``meanfield.data.read_mnist_idx`` and ``read_cifar10_batch`` read user copies); the
    embedded 8 x 8 digits standardised as the code standardises MNIST (one global mean and standard
    deviation) give ``kappa0 = 3.05, c0 / sigma^4 = 0.015``, close to the MNIST pair of the code.

    Parameters
    ----------
    x : array_like, shape (n, w)
        ``n >= 1`` examples of dimension ``w >= 2``, not all zero.
    method : {"pairs", "projected"}
    weight_kurtosis : float
        ``1 <= kappa_w <= 1e100`` of the projection (used by ``"projected"``, validated by both).

    Returns
    -------
    InputStatistics
        ``sigma_x2``, ``kappa0``, ``c0``: the start ``k^(0) = [kappa0, c0, 1]`` of Prop. 4.3.
        The embedded digits data standardised per feature give ``kappa0 = 118.4, c0 = 1.14``
        (pairs) and ``kappa0 = 12.2, c0 = 2.79`` (projected), ``sigma_x2 = 0.953``.

    Raises
    ------
    ValueError
        ``x`` not of shape ``(n >= 1, w >= 2)``, not finite, or identically zero; a mean square
        outside ``SIGMA_X2_RANGE``; unknown ``method``; ``weight_kurtosis`` outside ``[1, 1e100]``
        (checked for both methods).
    TypeError
        ``x`` complex, boolean or not numeric.

    Examples
    --------
    >>> st = input_statistics([[1.0, -1.0], [2.0, 0.0]])
    >>> round(st.sigma_x2, 12), round(st.kappa0, 12), round(st.c0, 12)
    (1.5, 2.0, -1.75)
    """
    x = _real_array(x, "x")
    if x.ndim != 2 or x.shape[1] < 2 or x.shape[0] < 1:
        raise ValueError(f"x must have shape (n >= 1, w >= 2), got {x.shape}")
    if not isinstance(method, str) or method not in ("pairs", "projected"):
        raise ValueError(f"method must be 'pairs' or 'projected', got {method!r}")
    kw = _check_kw(weight_kurtosis)  # validated on both paths
    top = float(np.max(np.abs(x)))
    if top == 0.0:
        raise ValueError("x must not be identically zero")
    xs = x / top  # kappa0 and c0 / sigma_x2^2 are scale invariant; no overflow or underflow of x^4
    x2 = xs * xs
    w = x.shape[1]
    row2 = x2.sum(axis=1)
    row4 = (x2 * x2).sum(axis=1)
    if method == "pairs":
        s2 = float(x2.mean())
        kappa0 = float(row4.mean() / w) / s2**2
        cn = float(((row2 * row2 - row4) / (w * (w - 1))).mean()) / s2**2 - 1.0
    else:
        r = row2 / w
        s2 = float(r.mean())
        er2 = float((r * r).mean())
        kappa0 = (3.0 * er2 + (kw - 3.0) * float(row4.mean()) / w**2) / s2**2
        cn = er2 / s2**2 - 1.0
    log_sigma_x2 = math.log(s2) + 2.0 * math.log(top)
    lo, hi = SIGMA_X2_RANGE
    if not math.log(lo) <= log_sigma_x2 <= math.log(hi):
        raise ValueError(
            f"x must have a mean square in SIGMA_X2_RANGE = [{lo:g}, {hi:g}] (the range propagate accepts), got "
            f"exp({log_sigma_x2:.6g}); rescale x (kappa0 and c0 / sigma_x2^2 do not depend on the scale)"
        )
    sigma_x2 = s2 * top * top
    return InputStatistics(sigma_x2, kappa0, cn * sigma_x2**2)
