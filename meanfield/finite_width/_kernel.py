"""The transition kernel ``k(y, z)`` of the operator ``T_l`` for ReLU layers (Burkholz & Dubatovka 2019, Prop. 1, Prop. 4 eq. 7)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import special

from .._results import Result
from ._common import LOG2, binomial_log_weights, fan_in_arg, nonneg, nonneg_array, unscaled, width_arg

__all__ = ["TransitionKernel", "relu_kernel"]


@dataclass(frozen=True)
class TransitionKernel(Result):
    """``k(y, z) = atom * delta_0(z) + density(z)`` for ``z >= 0`` (Burkholz & Dubatovka 2019, Prop. 4, eq. 7).

    Attributes
    ----------
    atom : ndarray
        ``P(z = 0 | y)``: ``0.5^N`` when ``sigma_y^2 > 0`` (every neuron inactive), 1 otherwise.
        Correctly rounded: ``0.5^N`` is 0.0 in float64 beyond ``N = 1074`` (use ``log_atom``).
    density : ndarray
        The continuous part at ``z > 0`` (0 at ``z <= 0``); correctly rounded, i.e. 0.0 where the
        density is below ``5e-324`` (far tails, large ``N``): use ``log_density`` there.
    log_atom : ndarray
        ``log atom`` (``-N log 2``, or 0), finite.
    log_density : ndarray
        ``log density``: finite wherever the density is positive, ``-inf`` exactly where it is
        0 (``z <= 0``, or ``sigma_y^2 = 0``).
    """

    atom: np.ndarray
    density: np.ndarray
    log_atom: np.ndarray
    log_density: np.ndarray


def relu_kernel(
    y: ArrayLike, z: ArrayLike, width: int, sigma_w2: float, sigma_b2: float = 0.0, *, fan_in: int | None = None
) -> TransitionKernel:
    r"""ReLU transition kernel ``k(y, z)`` of the squared signal norm (Burkholz & Dubatovka 2019, Prop. 4, eq. 7).

    .. math::
        k(y, z) = 0.5^N\Big(\delta_0(z) + \sum_{k=1}^N \binom{N}{k}\frac{1}{\sigma_y^2}
        p_{\chi^2_k}\big(z / \sigma_y^2\big)\Big), \qquad
        \sigma_y^2 = \frac{\sigma_w^2}{\mathrm{fan\_in}}\, y + \sigma_b^2.

    Derivation: given ``|x|^2 = y`` the ``N`` pre-activations are iid ``N(0, sigma_y^2)``; a
    Binomial(N, 1/2) number ``k`` of them is positive and ``z = sigma_y^2 chi^2_k``.
    Evaluated in log space (log-sum-exp over ``k``): the log fields are accurate for every width
    up to ``MAX_WIDTH``; the linear fields are their correctly rounded exponentials.

    Parameters
    ----------
    y, z : array_like
        Previous and next squared norms (>= 0); broadcast together.
    width : int
        ``1 <= N <= MAX_WIDTH`` (10^7), the number of neurons of the layer.
    sigma_w2 : float
        Weight variance times fan-in (>= 0): ``W_ij ~ N(0, sigma_w2 / fan_in)``; He is 2.
    sigma_b2 : float
        Bias variance (>= 0).
    fan_in : int, optional
        ``1 <= fan_in <= MAX_WIDTH``, the dimension of the previous signal; default ``width``
        (square layers: Burkholz & Dubatovka's He ``sigma_w^2 = 2 / N`` is ``sigma_w2 = 2``).

    Returns
    -------
    TransitionKernel
        ``atom``, ``density`` and their logarithms, shaped like ``y`` and ``z`` broadcast.

    Raises
    ------
    ValueError
        Negative or non-finite input, ``width`` or ``fan_in`` out of range or not an integer (a
        bool, a string or a non-integral float), ``y`` and ``z`` that do not broadcast, or
        ``sigma_w2 / fan_in * y + sigma_b2`` beyond float64.
    TypeError
        Bools, complex numbers or strings where real numbers are expected; a complex ``width`` or
        ``fan_in``.

    Examples
    --------
    He at N = 2 and ``y = 1``: ``z = chi^2_K``, ``K ~ Bin(2, 1/2)``, so the density is
    ``(2 p_{chi^2_1}(z) + p_{chi^2_2}(z)) / 4``:

    >>> k = relu_kernel(1.0, [0.5, 1.0], width=2, sigma_w2=2.0)
    >>> float(k.atom[0]), [round(float(d), 6) for d in k.density]
    (0.25, [0.317046, 0.196802])
    """
    n = width_arg(width)
    y = nonneg_array(y, "y")
    z = nonneg_array(z, "z")
    sw = unscaled(nonneg(sigma_w2, "sigma_w2"), fan_in_arg(fan_in, n))
    sb = nonneg(sigma_b2, "sigma_b2")
    try:
        yb, zb = np.broadcast_arrays(y, z)
    except ValueError as exc:
        raise ValueError(f"y and z must broadcast together, got shapes {y.shape} and {z.shape}") from exc
    with np.errstate(over="ignore"):
        s = sw * yb + sb
    if not np.all(np.isfinite(s)):
        raise ValueError(
            "sigma_w2 / fan_in * y + sigma_b2 (the pre-activation variance) must be finite; it overflows float64 here"
        )
    k, logw = binomial_log_weights(n)
    pos = (s > 0) & (zb > 0)
    log_dens = np.full(yb.shape, -np.inf)
    if np.any(pos):
        ls = np.log(s[pos])
        lx = np.log(zb[pos]) - ls
        with np.errstate(over="ignore"):
            x = np.exp(lx)
        out = np.empty(lx.size)
        chunk = max(1, 2**22 // k.size)
        const = logw - (k / 2) * LOG2 - special.gammaln(k / 2)
        for i in range(0, lx.size, chunk):
            sl = slice(i, i + chunk)
            # log chi^2_k density at x, summed over k in log space
            logp = const[None, :] + (k[None, :] / 2 - 1) * lx[sl, None] - x[sl, None] / 2
            out[sl] = special.logsumexp(logp, axis=1)
        log_dens[pos] = out - ls
    log_atom = np.where(s > 0, -n * LOG2, 0.0)
    atom = np.where(s > 0, 0.5**n, 1.0)  # exact (0.0 beyond N = 1074: see log_atom)
    with np.errstate(under="ignore"):
        return TransitionKernel(atom=atom, density=np.exp(log_dens), log_atom=log_atom, log_density=log_dens)
