"""Degeneracy of trained networks: singularities of the weights and of the Hessian (Orhan 2017).

Private submodule of :mod:`meanfield.landscape`:

- :func:`singularity_measures`: the two singularities of Supp. Note 1 of Orhan (2017) computed
  exactly on a list of weight matrices -- *elimination* (a hidden unit whose incoming or outgoing
  weights vanish: its parameters are not identifiable) and *overlap* (two units of a layer with the
  same incoming weights: only the sum of their outgoing weights is identifiable);
- :func:`degenerate_fraction`: the fraction of (numerically) zero eigenvalues of a Hessian;
- :func:`skip_network_hessian`: the exact Hessian of the squared error of :func:`skip_network`
  (Supp. Note 1's cost ``E = ||y - x_L||^2 / 2``) by PyTorch automatic differentiation in float64
  (the ``torch`` extra);
- :func:`bias_targets` and :func:`bias_penalty`: the bias-based symmetry breaking of Sec. 2.4.1
  (``BiasSymmBreak``: an l2 penalty pulling the biases towards fixed random targets
  ``N(0, sigma^2)``; ``sigma = 0`` is plain l2 regularisation, ``BiasL2Reg``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._checks import as_float_array, check_rng, check_scalar
from .._results import Result
from ._common import _check_architecture, _int
from ._symmetries import _SKIP_ARCHITECTURES, _check_skip_net, _skip_options

__all__ = [
    "HessianSpectrum",
    "SingularityMeasures",
    "bias_penalty",
    "bias_targets",
    "degenerate_fraction",
    "singularity_measures",
    "skip_network_hessian",
]

#: Default relative threshold of :func:`degenerate_fraction`: an eigenvalue counts as zero when
#: ``|lambda| <= DEGENERATE_RTOL * max |lambda|``. Rounding in a float64 Hessian of ``p`` parameters
#: leaves exact zeros at ~``p * 1e-16`` relative (1e-13 at p = 1000); 1e-6 sits far above that and
#: far below the smallest curvature of a non-degenerate direction of the small networks used here.
DEGENERATE_RTOL = 1e-6

#: Largest number of parameters of :func:`skip_network_hessian` (a dense p x p Hessian and its
#: eigenvalues; 4000 parameters: 128 MB, ~30 s on two cores).
MAX_HESSIAN_PARAMETERS = 4000


@dataclass(frozen=True)
class SingularityMeasures(Result):
    """Elimination and overlap singularities of each weight matrix (:func:`singularity_measures`).

    Attributes
    ----------
    incoming_min : ndarray, shape (n_layers,)
        ``min_i ||W_l[i, :]|| / rms_i ||W_l[i, :]||`` (0: a unit with no incoming weights).
    outgoing_min : ndarray, shape (n_layers,)
        ``min_i ||W_{l+1}[:, i]|| / rms_i ||W_{l+1}[:, i]||`` for the units made by ``W_l``
        (NaN-free: 1.0 is reported for the last matrix, which has no successor, and is flagged by
        ``has_outgoing``).
    overlap_min : ndarray, shape (n_layers,)
        ``min_{i<j} ||W_l[i, :] - W_l[j, :]|| / rms_i ||W_l[i, :]||`` (0: two units with the
        same incoming weights; 1.0 for a layer of one unit).
    n_eliminated : ndarray of int, shape (n_layers,)
        Units whose relative incoming or outgoing norm is ``<= tol``.
    n_overlapping : ndarray of int, shape (n_layers,)
        Pairs of units whose relative distance is ``<= tol``.
    has_outgoing : ndarray of bool, shape (n_layers,)
    tol : float
    """

    incoming_min: np.ndarray
    outgoing_min: np.ndarray
    overlap_min: np.ndarray
    n_eliminated: np.ndarray
    n_overlapping: np.ndarray
    has_outgoing: np.ndarray
    tol: float


def _matrices(weights: object, name: str) -> list[np.ndarray]:
    if isinstance(weights, np.ndarray) and weights.ndim == 3:
        weights = list(weights)
    if not isinstance(weights, (list, tuple)) or len(weights) < 1:
        raise TypeError(f"{name} must be a non-empty list of 2-D arrays, got {type(weights).__name__}")
    out = []
    for i, w in enumerate(weights):
        w = as_float_array(w, f"{name}[{i}]")
        if w.ndim != 2 or w.size == 0:
            raise ValueError(f"{name}[{i}] must be a non-empty 2-D array (n_out, n_in), got shape {w.shape}")
        if i and w.shape[1] != out[-1].shape[0]:
            raise ValueError(
                f"{name}[{i}] must have {out[-1].shape[0]} columns (the rows of {name}[{i - 1}]), got shape {w.shape}"
            )
        out.append(w)
    return out


def _relative(norms: np.ndarray) -> np.ndarray:
    """``norms / rms(norms)`` computed without overflow; all zeros stay zeros."""
    m = float(np.max(norms))
    if m == 0.0:
        return np.zeros_like(norms)
    r = norms / m
    return r / math.sqrt(float(np.mean(r * r)))


def _row_norms(w: np.ndarray) -> np.ndarray:
    m = np.max(np.abs(w), axis=1, keepdims=True)
    safe = np.where(m > 0, m, 1.0)
    return (m * np.sqrt(np.sum((w / safe) ** 2, axis=1, keepdims=True)))[:, 0]


def singularity_measures(weights: Sequence[ArrayLike] | np.ndarray, tol: float = 1e-3) -> SingularityMeasures:
    """Elimination and overlap singularities of a feed-forward stack ``W_1, ..., W_m`` (Supp. Note 1 of Orhan 2017).

    Units are the rows of each ``W_l`` (shape ``(n_out, n_in)``; its outputs feed ``W_{l+1}``).
    Norms and distances are relative to the root-mean-square row norm of the same matrix, so the
    measures do not change when a layer is rescaled (the rescaling symmetry of Sec. 2.1).

    Parameters
    ----------
    weights : list of 2-D arrays
        ``W_1 .. W_m``, finite, with matching inner sizes.
    tol : float
        Relative threshold in (0, 1) below which a norm or a distance counts as a singularity.

    Returns
    -------
    SingularityMeasures

    Raises
    ------
    ValueError
        Shapes that do not chain, non-finite entries or entries that do not convert to real
        numbers (e.g. non-numeric strings), ``tol`` outside (0, 1).
    TypeError
        ``weights`` not a list of arrays; complex entries; a bool, complex or string ``tol``.

    Notes
    -----
    Orhan 2017, Supp. Note 1: when units ``j`` and ``j'`` have the same incoming weights, the Hessian
    columns of ``W_{l,ij}`` and ``W_{l,ij'}`` coincide (overlap singularity); a unit with zero
    incoming (outgoing) weights leaves its outgoing (incoming) weights without any effect on the
    cost (elimination singularity). Exact: pairwise distances of all rows, no sampling.

    Examples
    --------
    >>> w1 = np.array([[1.0, 2.0], [1.0, 2.0], [0.0, 1.0]])   # units 0 and 1 overlap
    >>> m = singularity_measures([w1, np.ones((1, 3))])
    >>> float(m.overlap_min[0]), int(m.n_overlapping[0])
    (0.0, 1)
    """
    ws = _matrices(weights, "weights")
    tol = check_scalar(tol, "tol")
    if not 0.0 < tol < 1.0:
        raise ValueError(f"tol must lie in (0, 1), got {tol}")
    m = len(ws)
    inc, out, ovl = np.ones(m), np.ones(m), np.ones(m)
    n_elim, n_ovl = np.zeros(m, dtype=np.int64), np.zeros(m, dtype=np.int64)
    has_out = np.zeros(m, dtype=bool)
    for l, w in enumerate(ws):
        rows = _relative(_row_norms(w))
        inc[l] = float(rows.min())
        eliminated = rows <= tol
        if l + 1 < m:
            has_out[l] = True
            cols = _relative(_row_norms(ws[l + 1].T))
            out[l] = float(cols.min())
            eliminated |= cols <= tol
        n_elim[l] = int(eliminated.sum())
        if w.shape[0] >= 2:
            scale = float(np.max(np.abs(w)))
            if scale == 0.0:
                ovl[l], n_ovl[l] = 0.0, w.shape[0] * (w.shape[0] - 1) // 2
                continue
            ws_ = w / scale
            rms = math.sqrt(float(np.mean(np.sum(ws_ * ws_, axis=1))))
            d = np.sqrt(np.sum((ws_[:, None, :] - ws_[None, :, :]) ** 2, axis=-1)) / rms
            iu = np.triu_indices(w.shape[0], 1)
            ovl[l] = float(d[iu].min())
            n_ovl[l] = int(np.sum(d[iu] <= tol))
    return SingularityMeasures(inc, out, ovl, n_elim, n_ovl, has_out, tol)


def degenerate_fraction(eigenvalues: ArrayLike, rtol: float = DEGENERATE_RTOL) -> float:
    """Fraction of eigenvalues with ``|lambda| <= rtol * max |lambda|`` (the degenerate directions of a Hessian).

    Parameters
    ----------
    eigenvalues : array_like, 1-D, non-empty, finite
    rtol : float
        In (0, 1); default :data:`DEGENERATE_RTOL`.

    Returns
    -------
    float
        In [0, 1]; 1.0 when every eigenvalue is zero.

    Raises
    ------
    ValueError
        Empty or non-finite input, input that does not convert to real numbers (e.g.
        non-numeric strings), ``rtol`` outside (0, 1).
    TypeError
        Complex input; a bool, complex or string ``rtol``.

    Notes
    -----
    Orhan 2017, Supp. Notes 1-3: the singularities make the Hessian degenerate; the fraction of
    zero eigenvalues counts the non-identifiable directions.
    """
    ev = as_float_array(eigenvalues, "eigenvalues")
    if ev.ndim != 1 or ev.size == 0:
        raise ValueError(f"eigenvalues must be a non-empty 1-D array, got shape {ev.shape}")
    rtol = check_scalar(rtol, "rtol")
    if not 0.0 < rtol < 1.0:
        raise ValueError(f"rtol must lie in (0, 1), got {rtol}")
    top = float(np.max(np.abs(ev)))
    if top == 0.0:
        return 1.0
    return float(np.mean(np.abs(ev) / top <= rtol))


@dataclass(frozen=True)
class HessianSpectrum(Result):
    """Hessian of a loss in the parameters (:func:`skip_network_hessian`).

    Attributes
    ----------
    hessian : ndarray, shape (p, p)
        Symmetric; parameters ordered ``W_1`` (row-major), ``b_1``, ``W_2``, ``b_2``, ...
    eigenvalues : ndarray, shape (p,)
        Ascending.
    loss : float
        The loss at the point.
    names : tuple of str
        ``"W{l}[i,j]"`` and ``"b{l}[i]"`` (1-based ``l``) for each parameter.
    """

    hessian: np.ndarray
    eigenvalues: np.ndarray
    loss: float
    names: tuple[str, ...]

    def degenerate_fraction(self, rtol: float = DEGENERATE_RTOL) -> float:
        """:func:`degenerate_fraction` of the eigenvalues."""
        return degenerate_fraction(self.eigenvalues, rtol)


def _torch():
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError('skip_network_hessian needs PyTorch: pip install "meanfield-theory[torch]"') from exc
    return torch


def _torch_skip_forward(torch: Any, architecture: str, h: Any, ws: list, bs: list, skips, long_skips, constant_bias):
    """The forward pass of :func:`skip_network` on torch tensors."""
    history = [h]
    for idx, (w, b) in enumerate(zip(ws, bs)):
        l = idx + 1
        pre = h @ w.transpose(-1, -2) + b
        if constant_bias is not None:
            pre = pre + (constant_bias[0] * l + constant_bias[1])
        new = torch.relu(pre)
        if architecture != "plain":
            new = new + (h if skips is None else h @ skips[idx].transpose(-1, -2))
        if architecture == "hyper_residual" and l >= 2:
            longs = skips if long_skips is None else long_skips
            if longs is None:
                far = sum(history[:-1])
            else:
                far = sum(x_k @ longs[k].transpose(-1, -2) for k, x_k in enumerate(history[:-1]))
            new = new + far / (l - 1)
        h = new
        history.append(h)
    return h


def skip_network_hessian(
    architecture: str,
    x: ArrayLike,
    y: ArrayLike,
    weights: Sequence[ArrayLike] | np.ndarray,
    biases: Sequence[ArrayLike] | np.ndarray | None = None,
    *,
    skips: Sequence[ArrayLike] | np.ndarray | None = None,
    long_skips: Sequence[ArrayLike] | np.ndarray | None = None,
    constant_bias: tuple[float, float] | None = None,
) -> HessianSpectrum:
    """Exact Hessian of ``E = sum_p ||y_p - x_L(x_p)||^2 / (2 P)`` for :func:`skip_network` (Supp. Note 1 of Orhan 2017).

    The weights ``W_l`` and biases ``b_l`` are the parameters (skips and constant biases are
    fixed); the Hessian is formed by PyTorch automatic differentiation in float64 and symmetrised
    (``(H + H^T) / 2``; the two orders agree to rounding). ReLU's second derivative is zero away
    from the kinks, which is what autodiff returns; inputs that sit exactly on a kink are
    differentiated with ``relu'(0) = 0``.

    Parameters
    ----------
    architecture, x, weights, biases, skips, long_skips, constant_bias
        As in :func:`skip_network`.
    y : array_like, shape (P, n)
        Targets, finite.

    Returns
    -------
    HessianSpectrum

    Raises
    ------
    ValueError
        As :func:`skip_network`; ``y`` of another shape than ``x``; more than
        :data:`MAX_HESSIAN_PARAMETERS` parameters.
    TypeError
        As :func:`skip_network`.
    ImportError
        Without PyTorch (the ``torch`` extra).

    Notes
    -----
    Orhan 2017, Supp. Note 1 (eq. 27): if units ``j`` and ``j'`` of layer ``l`` have the same
    incoming weights in a plain net, the Hessian columns of ``W_{l,ij}`` and ``W_{l,ij'}`` are
    identical and ``H`` is singular; an identity skip into layer ``l`` makes the two units'
    activities differ and removes this degeneracy.
    """
    _check_architecture(architecture, _SKIP_ARCHITECTURES)
    h, ws, bs = _check_skip_net(x, weights, biases)
    skips, long_skips, constant_bias = _skip_options(architecture, h, ws, skips, long_skips, constant_bias)
    y = as_float_array(y, "y")
    if y.shape != h.shape:
        raise ValueError(f"y must have the shape of x {h.shape}, got {y.shape}")
    n = h.shape[1]
    p = len(ws) * (n * n + n)
    if p > MAX_HESSIAN_PARAMETERS:
        raise ValueError(
            f"the network has {p} parameters, more than MAX_HESSIAN_PARAMETERS = {MAX_HESSIAN_PARAMETERS} "
            "(a dense Hessian); use fewer or narrower layers"
        )
    torch = _torch()
    t = lambda a: torch.as_tensor(a, dtype=torch.float64)  # noqa: E731
    xt, yt = t(h), t(y)
    qs = None if skips is None else [t(q) for q in skips]
    ps = None if long_skips is None else [t(q) for q in long_skips]
    theta0 = torch.cat([torch.cat([t(w).reshape(-1), t(b)]) for w, b in zip(ws, bs)])

    def loss(theta):
        wl, bl, k = [], [], 0
        for _ in ws:
            wl.append(theta[k : k + n * n].reshape(n, n))
            bl.append(theta[k + n * n : k + n * n + n])
            k += n * n + n
        out = _torch_skip_forward(torch, architecture, xt, wl, bl, qs, ps, constant_bias)
        return 0.5 * ((yt - out) ** 2).sum() / xt.shape[0]

    hess = torch.func.jacfwd(torch.func.jacrev(loss))(theta0).detach().numpy()  # forward-over-reverse
    hess = 0.5 * (hess + hess.T)
    value = float(loss(theta0))
    if not (np.all(np.isfinite(hess)) and math.isfinite(value)):
        raise ValueError(
            "x, weights and biases give a loss or Hessian that overflows double precision (scale them down)"
        )
    names = []
    for l in range(1, len(ws) + 1):
        names += [f"W{l}[{i},{j}]" for i in range(n) for j in range(n)] + [f"b{l}[{i}]" for i in range(n)]
    return HessianSpectrum(hess, np.linalg.eigvalsh(hess), value, tuple(names))


def bias_targets(widths: Sequence[int], sigma: float, rng: Any = None) -> list[np.ndarray]:
    """Random bias targets ``b*_l ~ N(0, sigma^2)``, one vector per layer (Sec. 2.4.1 of Orhan 2017).

    Parameters
    ----------
    widths : sequence of int
        Units of each layer (each >= 1, at most 10^6 in all).
    sigma : float
        Standard deviation, finite and >= 0 (0: all targets zero, plain l2 regularisation).
    rng : None, int, SeedSequence or numpy.random.Generator

    Returns
    -------
    list of ndarray
        One vector of ``widths[l]`` targets per layer.

    Raises
    ------
    ValueError
        Widths < 1 or too many units, widths that are not integers (bools, strings, non-integral
        floats), ``sigma`` negative or non-finite.
    TypeError
        ``widths`` not a sequence (e.g. a single int), complex widths, a complex, boolean or
        non-numeric ``sigma``.

    Notes
    -----
    Orhan 2017, Sec. 2.4.1: the targets give every unit of a layer its own preferred bias, which
    orders the units and breaks their permutation symmetry (``BiasSymmBreak``; the same targets as
    initial values without the penalty are ``BiasInit``).
    """
    if isinstance(widths, (int, np.integer)) or not hasattr(widths, "__iter__"):
        raise TypeError(f"widths must be a sequence of ints, got {type(widths).__name__}")
    ws = [_int(n, "widths", minimum=1, maximum=10**6) for n in widths]
    if sum(ws) > 10**6:
        raise ValueError(f"widths must sum to at most 10^6, got {sum(ws)}")
    sigma = check_scalar(sigma, "sigma")
    if sigma < 0:
        raise ValueError(f"sigma must be >= 0, got {sigma}")
    rng = check_rng(rng)
    return [sigma * rng.standard_normal(n) for n in ws]


def bias_penalty(
    biases: Sequence[ArrayLike], targets: Sequence[ArrayLike], strength: float
) -> tuple[float, list[np.ndarray]]:
    """``lambda sum_l ||b_l - b*_l||^2`` and its gradient (the bias regulariser of Sec. 2.4.1 of Orhan 2017).

    Parameters
    ----------
    biases, targets : lists of 1-D arrays
        Matching shapes, finite.
    strength : float
        ``lambda``, finite and >= 0.

    Returns
    -------
    (float, list of ndarray)
        The penalty and ``2 lambda (b_l - b*_l)`` per layer.

    Raises
    ------
    ValueError
        Mismatched lengths or shapes, non-finite entries or entries that do not convert to real
        numbers (e.g. non-numeric strings), negative ``strength``, a penalty that overflows.
    TypeError
        Not lists; complex entries; a complex, boolean or non-numeric ``strength``.
    """
    for name, v in (("biases", biases), ("targets", targets)):
        if not isinstance(v, (list, tuple)):
            raise TypeError(f"{name} must be a list of 1-D arrays, got {type(v).__name__}")
    if len(biases) != len(targets):
        raise ValueError(f"biases and targets must have the same length, got {len(biases)} and {len(targets)}")
    strength = check_scalar(strength, "strength")
    if strength < 0:
        raise ValueError(f"strength must be >= 0, got {strength}")
    total, grads = 0.0, []
    with np.errstate(over="ignore", invalid="ignore"):
        for i, (b, t) in enumerate(zip(biases, targets)):
            b, t = as_float_array(b, f"biases[{i}]"), as_float_array(t, f"targets[{i}]")
            if b.ndim != 1 or b.shape != t.shape:
                raise ValueError(f"biases[{i}] and targets[{i}] must be 1-D of one shape, got {b.shape}, {t.shape}")
            d = b - t
            total += strength * float(np.sum(d * d))
            grads.append(2.0 * strength * d)
    if not math.isfinite(total) or not all(np.all(np.isfinite(g)) for g in grads):
        raise ValueError("the bias penalty overflows double precision (biases, targets or strength too large)")
    return total, grads
