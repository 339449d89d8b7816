r"""NNGP and NTK kernels of many inputs through deep dense networks, for any activation.

The infinite-width covariance (NNGP kernel) and tangent kernel (NTK) of D inputs obey, layer by
layer (Poole et al. 2016, eqs. 3-5; Xiao et al. 2018, eq. 2.5; Jacot et al. 2018, Thm. 1; Arora et al.
2019, eq. 9; the conventions of :mod:`meanfield.dense` and :mod:`meanfield.ntk`),

.. math::

    \Sigma^{l+1}_{ab} = \sigma_w^2\,\kappa(q_a, q_b, c_{ab}) + \sigma_b^2, \qquad
    \Theta^{l+1} = \Sigma^{l+1} + \sigma_w^2\,\dot\kappa(q, q, c) \odot \Theta^{l},

with :math:`\kappa = \mathbb{E}\phi(u_a)\phi(u_b)` and :math:`\dot\kappa = \mathbb{E}\phi'(u_a)\phi'(u_b)`
over :math:`(u_a, u_b) \sim N(0, \Sigma^l_{\{a,b\}})`. For activations without a closed form
(tanh, sigmoid, softplus, swish, user activations) :func:`meanfield.dense.propagate` integrates
every pair by bivariate quadrature (~60 us a pair per layer: D = 1000 inputs through 10 tanh
layers take minutes). :func:`propagate_mehler` evaluates the same maps by Mehler's formula,
:math:`\kappa_{ab} = \sum_k a_k(q_a)a_k(q_b)c_{ab}^k`, with one set of Hermite coefficients per
input and a certified truncation bound (the derivation is in
the notes of :func:`mehler_layer_maps`), falling back to the direct quadrature for the pairs
whose bound cannot be met (kinks at :math:`|c|` near 1).

Code name <-> symbol: ``cov`` = :math:`\Sigma^l`, ``ntk`` = :math:`\Theta^l`, ``rtol`` = the bound
on each layer map's error relative to :math:`\sqrt{\kappa_{aa}\kappa_{bb}}`.

References
----------
Poole, Lahiri, Raghu, Sohl-Dickstein, Ganguli (2016), "Exponential expressivity in deep neural
networks through transient chaos". Jacot, Gabriel, Hongler (2018), "Neural tangent kernel".
Arora et al. (2019), "On exact computation with an infinitely wide neural net". Mehler (1866).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ._checks import PSD_RTOL, check_bool, check_covariance, check_nonnegative_scalar
from ._logscale import check_depth
from ._mehler import K_MAX, Q_MAX, RTOL_RANGE, MehlerMaps, mehler_layer_maps
from ._results import Result
from .activations import Activation, get_activation

__all__ = ["K_MAX", "Q_MAX", "RTOL_RANGE", "MehlerMaps", "MehlerPropagation", "mehler_layer_maps", "propagate_mehler"]


@dataclass(frozen=True)
class MehlerPropagation(Result):
    r"""Kernels of D inputs through depth (see :func:`propagate_mehler`).

    Attributes
    ----------
    cov : ndarray, shape (depth + 1, D, D)
        NNGP covariances :math:`\Sigma^l`; ``cov[0]`` is ``cov0``.
    ntk : ndarray, shape (depth + 1, D, D), or None
        Tangent kernels :math:`\Theta^l` (``ntk[0] = cov0``); None unless ``ntk=True``.
    error_bound : ndarray, shape (depth,)
        Certified relative error of each layer's maps :math:`\kappa, \dot\kappa` over the pairs summed
        by Mehler's formula (a per-layer bound on the map, not an end-to-end bound through depth).
    n_fallback : int
        Entries (over all layers, of both maps) computed by direct bivariate quadrature.
    terms : int
        Largest number of Hermite terms any pair used.
    """

    cov: np.ndarray
    ntk: np.ndarray | None
    error_bound: np.ndarray
    n_fallback: int
    terms: int


def _correlation(cov):
    """Variances and correlations of one covariance (c = 0 where a variance is 0, c_aa = 1 otherwise)."""
    q = np.maximum(np.diagonal(cov).copy(), 0.0)
    s = np.sqrt(q)
    inv = np.divide(1.0, s, out=np.zeros_like(s), where=s > 0)
    c = cov * (inv[:, None] * inv[None, :])  # an exactly symmetric product: the symmetric kernel applies
    np.clip(c, -1.0, 1.0, out=c)
    idx = np.arange(q.size)
    c[idx, idx] = np.where(q > 0, 1.0, 0.0)
    return q, c


def _check_cov0(cov0):
    """``check_covariance``, with a Cholesky certificate first for a large exactly symmetric matrix.

    Cholesky of ``A / scale + (t / 2) I`` succeeding proves that the smallest eigenvalue of
    ``A / scale`` is above ``-t`` (t = PSD_RTOL * D), the acceptance rule of ``check_covariance``,
    at a tenth of the cost of its eigenvalues; anything else is decided by ``check_covariance``.
    """
    arr = np.asarray(cov0)
    if (
        isinstance(cov0, np.ndarray)
        and arr.dtype == np.float64
        and arr.ndim == 2
        and arr.shape[0] == arr.shape[1]
        and arr.shape[0] >= 64
        and np.isfinite(arr).all()
        and (arr == arr.T).all()
    ):
        scale = max(float(np.max(np.abs(arr))), 1e-300)
        shifted = arr / scale
        shifted[np.diag_indices_from(shifted)] += 0.5 * PSD_RTOL * arr.shape[0]
        try:
            np.linalg.cholesky(shifted)
        except np.linalg.LinAlgError:
            pass
        else:
            return np.array(arr, dtype=np.float64, order="C")
    return check_covariance(cov0, "cov0", strict=True)


def propagate_mehler(
    cov0: ArrayLike,
    activation: str | Activation,
    sigma_w2: float,
    sigma_b2: float,
    depth: int,
    *,
    ntk: bool = False,
    rtol: float = 1e-10,
) -> MehlerPropagation:
    r"""NNGP covariances (and NTKs) of many inputs through ``depth`` dense layers, by Mehler's formula.

    Parameters
    ----------
    cov0 : array_like, shape (D, D)
        Pre-activation covariance at index 0 (e.g. :func:`meanfield.dense.input_covariance`),
        symmetric PSD, D >= 1.
    activation : str or Activation
        Any activation: a built-in name, an Activation, or a user activation
        (:meth:`~meanfield.activations.Activation.from_functions`).
    sigma_w2, sigma_b2 : float
        Variances (>= 0), scalars.
    depth : int
        Number of layers (>= 0, and (depth + 1) D^2 <= ``meanfield.dense.MAX_PROPAGATION_SIZE``).
    ntk : bool
        Also propagate the tangent kernel (the convention of :func:`meanfield.ntk.propagate_ntk`:
        :math:`\Theta^0 = \Sigma^0`).
    rtol : float
        Bound on each layer map's error relative to the pair's scale, in [1e-12, 1e-2].

    Returns
    -------
    MehlerPropagation

    Raises
    ------
    ValueError
        ``cov0`` not a finite symmetric PSD (D, D) matrix; negative variances; ``depth`` or ``rtol``
        out of range; ``ntk=True`` for ``sign``; a kernel beyond the float64 range.
    TypeError
        Complex or boolean arguments.

    Notes
    -----
    Xiao et al. 2018, eq. 2.5 iterated, and the NTK recursion of Arora et al. (2019), eq. 9; the layer maps
    are :func:`mehler_layer_maps` (certified to ``rtol`` per layer; pairs it
    cannot certify are done by :func:`meanfield.gaussian.pair_expectation` and counted in
    ``n_fallback``). The diagonal is the 1-D second moment :func:`meanfield.gaussian.expectation`.
    Agreement with :func:`meanfield.dense.propagate` is to ``rtol`` times the depth's error
    amplification (measured in ``benchmarks/mehler.py``), not bit for bit. The variances stay on
    the float64 scale (no log-scale representation: use :func:`meanfield.dense.propagate_log` for
    networks whose variances over- or underflow). Inputs whose variance exceeds :data:`Q_MAX`
    (softplus or swish deep in the chaotic phase) have all their pairs integrated directly, at the
    cost of :func:`meanfield.dense.propagate`.

    Examples
    --------
    >>> import numpy as np
    >>> r = propagate_mehler(np.array([[1.0, 0.5], [0.5, 1.0]]), "tanh", 1.5, 0.05, depth=3)
    >>> r.cov.shape, bool(r.error_bound.max() <= 1e-10)
    ((4, 2, 2), True)
    """
    act = get_activation(activation)
    cov = _check_cov0(cov0)
    if cov.ndim != 2:
        raise ValueError(f"cov0 must be a single (D, D) matrix with D >= 1, got shape {cov.shape}")
    sw = check_nonnegative_scalar(sigma_w2, "sigma_w2")
    sb = check_nonnegative_scalar(sigma_b2, "sigma_b2")
    depth = check_depth(depth, cov.shape[0])
    ntk = check_bool(ntk, "ntk")
    covs = np.empty((depth + 1, *cov.shape))
    covs[0] = cov
    thetas = None
    if ntk:
        thetas = np.empty_like(covs)
        thetas[0] = cov
    bounds = np.zeros(depth)
    n_fall = 0
    terms = 0
    for layer in range(depth):
        q, c = _correlation(covs[layer])
        maps = mehler_layer_maps(act, q, q, c, rtol=rtol, derivative=ntk)
        with np.errstate(over="ignore", invalid="ignore"):
            nxt = covs[layer + 1]
            np.multiply(maps.kappa, sw, out=nxt)
            nxt += sb
            if ntk:
                np.multiply(maps.kappa_dot, thetas[layer], out=thetas[layer + 1])
                thetas[layer + 1] *= sw
                thetas[layer + 1] += nxt
        if not np.all(np.isfinite(covs[layer + 1])) or (ntk and not np.all(np.isfinite(thetas[layer + 1]))):
            raise ValueError(
                f"the kernels of activation {act.name!r} exceed the float64 range at layer {layer + 1} "
                "(choose smaller variances or fewer layers)"
            )
        bounds[layer] = maps.error_bound
        n_fall += maps.n_fallback
        terms = max(terms, maps.terms)
    return MehlerPropagation(cov=covs, ntk=thetas, error_bound=bounds, n_fallback=n_fall, terms=terms)
