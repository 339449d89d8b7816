"""Feature symmetry: weight correlations, effective width, symmetry-breaking perturbations, counts.

Implements the measures of Blumenfeld, Gilboa & Soudry (2020) (Sec. 4.1, App. F, G). The
hidden-unit permutation count of Orhan (2017) lives with the other symmetries of that paper:
:func:`meanfield.landscape.permutation_counts`.

==============================  ==================================================================
Code name                       Paper symbol
==============================  ==================================================================
``forward_correlation(W)``      :math:`C_f`, eq. 5 (mean pairwise cosine of the output filters
                                :math:`W_f^i`)
``backward_correlation(W)``     :math:`C_b`, eq. 6 (mean pairwise cosine of the input slices
                                :math:`W_b^i`)
``total_correlation(W)``        :math:`C_t`, Fig. 6 ("correlation between all filters": the
                                :math:`n_{out} n_{in}` spatial filters ``W[..., i, j]``)
``effective_width(c_f, n)``     :math:`1 + (n_\\ell - 1)\\sqrt{1 - C_f(\\ell)^2}`, Sec. 4.1
``closed_form_correlations``    the values listed after eq. 6
``perturbation_ratio(a)``       :math:`\\|(I - \\tfrac1n 11^T) a\\| / \\|a\\|`, App. G, Figs. 9-10
``propagate_perturbation``      that ratio through a LeakyNet stack of ``'I'``/``'1'`` layers
                                (leaky-ReLU ``slope``, :math:`\\rho` in the paper)
``subnetwork_counts``           sub-network counts of App. F
==============================  ==================================================================

Tensor layout follows the paper (Sec. 4.1): a dense weight has shape ``(n_out, n_in)``, a
convolution ``(k_1, ..., k_d, n_out, n_in)`` (``d = 1`` or ``2``), channel axes last.

Zero filters. Eqs. 5-6 are undefined when a filter is zero. The paper considers the zero tensor
fully correlated (:math:`C_f = C_b = 1`). The library extends this pairwise: a pair of two zero
filters has correlation 1 (they are the same feature), a pair of a zero and a non-zero filter has
correlation 0 (the cosine with the zero vector taken as 0). A zero tensor therefore gives exactly 1.

Limits. Arguments are validated whatever path uses them (``ValueError`` naming the argument and
its range, also for integer arguments that are bools, strings or non-integral floats and for
arrays that do not convert to real numbers; ``TypeError`` for complex input, for bools, strings
or other non-numbers where a real scalar is expected, and for non-``bool`` flags). The exact
integer counts are refused beyond :data:`MAX_SUBNETWORK_BITS` (``d * n_layers``; 2^23 keeps
App. F's ``d = 640, L = 10^4``) and :data:`MAX_SUBNETWORK_BITS_EXCLUSIVE`;
:func:`propagate_perturbation` is bounded by :data:`MAX_PROPAGATION_DEPTH` and
:data:`MAX_PROPAGATION_WORK` and never overflows.

Results. :class:`ClosedFormCorrelations` and :class:`SubnetworkCounts` are frozen dataclasses with
``.replace()`` (:class:`meanfield._results.Result`).

References
----------
Y. Blumenfeld, D. Gilboa, D. Soudry, "Beyond Signal Propagation: Is Feature Diversity Necessary in
Deep Neural Network Initialization?", ICML 2020 (Blumenfeld et al. 2020).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ._checks import as_float_array, check_bool, check_correlation, check_int, check_scalar
from ._results import Result
from .activations import get_activation

__all__ = [
    "ClosedFormCorrelations",
    "SubnetworkCounts",
    "backward_correlation",
    "closed_form_correlations",
    "effective_width",
    "forward_correlation",
    "pairwise_mean_cosine",
    "perturbation_ratio",
    "propagate_perturbation",
    "subnetwork_counts",
    "total_correlation",
]

#: Largest ``d * n_layers`` of :func:`subnetwork_counts` (the exact counts have about that many
#: bits; computing ``C(2^L + d - 1, d)`` takes a few seconds at the limit). A time guard.
MAX_SUBNETWORK_BITS = 2**23

#: Largest ``d * n_layers`` with ``include_empty=False`` (inclusion-exclusion: ``L + 1`` binomials).
MAX_SUBNETWORK_BITS_EXCLUSIVE = 2**19

#: Largest depth of :func:`propagate_perturbation`, and largest ``depth * alpha.size``.
MAX_PROPAGATION_DEPTH = 10**5
MAX_PROPAGATION_WORK = 10**9


def _int(n: object, name: str, minimum: int | None = None, maximum: int | None = None) -> int:
    """:func:`meanfield._checks.check_int`, with complex numbers a ``TypeError`` (the library's rule)."""
    if isinstance(n, (complex, np.complexfloating)) or (isinstance(n, np.ndarray) and n.dtype.kind == "c"):
        raise TypeError(f"{name} must be an integer, got the complex {n!r}")
    return check_int(n, name, minimum, maximum)


def _weight(w: ArrayLike, name: str = "W") -> np.ndarray:
    w = as_float_array(w, name)
    if w.ndim not in (2, 3, 4):
        raise ValueError(
            f"{name} must have shape (n_out, n_in) (dense) or (k_1, [k_2,] n_out, n_in) (conv), got shape {w.shape}"
        )
    if w.size == 0:
        raise ValueError(f"{name} must not be empty, got shape {w.shape}")
    return w


def pairwise_mean_cosine(vectors: ArrayLike, complement: bool = False) -> float:
    """Mean cosine over ordered pairs ``i != j`` of the rows of ``vectors`` (shape (m, p), m >= 2).

    With unit rows ``u_i`` and ``d_i = u_i - u_0``,
    ``sum_{i != j} u_i . u_j = m (m - 1) - m sum_i |u_i - mean(u)|^2`` and
    ``sum_i |u_i - mean(u)|^2 = sum_i |d_i|^2 - m |mean(d)|^2``: O(m p) work, exactly 1 for identical
    rows, and ``1 - C`` is resolved without cancellation down to the smallest differences between
    rows (``complement=True`` returns it). Rows are rescaled by the largest entry first, so entries
    anywhere in the float64 range neither overflow nor underflow. Zero rows follow the module's
    convention (zero-zero pairs count 1, zero-nonzero pairs 0). The common kernel of eqs. 5-6
    of Blumenfeld et al. 2020.

    Parameters
    ----------
    vectors : array_like, shape (m, p)
        The filters as rows, ``m >= 2``.
    complement : bool
        Return ``1 - C`` (accurate near ``C = 1``).

    Returns
    -------
    float in [-1, 1] (``[0, 2]`` for the complement)

    Raises
    ------
    ValueError
        Fewer than two rows, rows of length 0, a non-finite entry, or ``vectors`` that do not
        convert to a regular array of real numbers (e.g. non-numeric strings).
    TypeError
        Complex ``vectors``; ``complement`` not a bool.
    """
    complement = check_bool(complement, "complement")
    v = as_float_array(vectors, "vectors")
    if v.ndim != 2:
        raise ValueError(f"vectors must have shape (m, p), got {v.shape}")
    m = v.shape[0]
    if m < 2:
        raise ValueError(f"vectors must hold at least 2 filters (rows) to correlate, got {m}")
    if v.shape[1] < 1:
        raise ValueError(f"vectors must have rows of length p >= 1, got shape {v.shape}")
    scale = float(np.max(np.abs(v)))
    if scale == 0.0:
        return 0.0 if complement else 1.0
    v = v / scale
    norms = np.sqrt(np.einsum("ij,ij->i", v, v))
    nonzero = norms > 0.0
    k = int(np.count_nonzero(nonzero))
    z = m - k
    u = v[nonzero] / norms[nonzero, None]
    d = u - u[0]
    spread = max(0.0, float(np.einsum("ij,ij->", d, d)) - k * float(np.sum(d.mean(axis=0) ** 2)))
    # pairs lost to zero rows: m(m-1) - k(k-1) - z(z-1) = 2 k z
    deficit = (2.0 * k * z + k * spread) / (m * (m - 1))
    deficit = min(2.0, max(0.0, deficit))
    return float(deficit) if complement else float(1.0 - deficit)


def _channel_correlation(w, complement, axis, need):
    """Eq. 5 over the slices of ``W`` along ``axis`` (-2: output channels, -1: input channels)."""
    complement = check_bool(complement, "complement")
    w = _weight(w)
    n = w.shape[axis]
    if n < 2:
        raise ValueError(f"W must have {need}, got {n}")
    return pairwise_mean_cosine(np.moveaxis(w, axis, 0).reshape(n, -1), complement)


def forward_correlation(w: ArrayLike, complement: bool = False) -> float:
    """Forward correlation :math:`C_f` of a weight tensor (eq. 5 of Blumenfeld et al. 2020).

    .. math::
        C_f = \\frac{1}{n_{out}(n_{out}-1)} \\sum_i \\sum_{j \\ne i}
              \\frac{W_f^i \\cdot W_f^j}{\\|W_f^i\\|_F \\|W_f^j\\|_F},

    with :math:`W_f^i` = ``W[..., i, :]`` the weights producing output channel ``i``.

    Parameters
    ----------
    w : array_like, shape (n_out, n_in) or (k_1, [k_2,] n_out, n_in)
        ``n_out >= 2``.
    complement : bool
        Return ``1 - C_f`` instead, accurate when ``C_f`` is within rounding of 1 (symmetry
        breaking starts at differences of order 1e-16 and below).

    Returns
    -------
    float in [-1, 1]
        1 for a constant (or zero) tensor; 0 for orthogonal rows.

    Raises
    ------
    ValueError
        Wrong number of axes, ``n_out < 2``, a non-finite entry, or a ``w`` that does not convert
        to a regular array of real numbers (e.g. non-numeric strings).
    TypeError
        Complex ``w``; ``complement`` not a bool.

    Examples
    --------
    >>> forward_correlation(np.ones((3, 3, 8, 4)))
    1.0
    """
    return _channel_correlation(w, complement, -2, "n_out >= 2 output channels for C_f")


def backward_correlation(w: ArrayLike, complement: bool = False) -> float:
    """Backward correlation :math:`C_b` (eq. 6 of Blumenfeld et al. 2020): eq. 5 over the input slices ``W[..., :, i]``.

    Parameters, return and errors as :func:`forward_correlation`, with ``n_in >= 2``.
    """
    return _channel_correlation(w, complement, -1, "n_in >= 2 input channels for C_b")


def total_correlation(w: ArrayLike, complement: bool = False) -> float:
    """Total correlation :math:`C_t` (Fig. 6 of Blumenfeld et al. 2020): mean pairwise cosine of all spatial filters.

    The paper defines :math:`C_t` only in words ("correlation between all filters"); a *filter* is
    the spatial kernel ``W[..., i, j]`` of one (output, input) channel pair (App. A's
    :math:`F = \\mathrm{Mat}(W_{ij})`), so :math:`C_t` averages the cosine over all ordered pairs of
    the ``n_out * n_in`` filters. For a dense weight (1 x 1 filters) it is the mean over ordered
    pairs of entries of ``sign(W_a) sign(W_b)`` when both are non-zero; pairs with a zero entry
    follow the module's zero convention (two zeros count 1, a zero and a non-zero 0).

    Parameters
    ----------
    w : array_like, shape (n_out, n_in) or (k_1, [k_2,] n_out, n_in)
        ``n_out * n_in >= 2``.
    complement : bool
        Return ``1 - C_t``.

    Returns
    -------
    float in [-1, 1]

    Raises
    ------
    ValueError
        Wrong number of axes, fewer than two filters, a non-finite entry, or a ``w`` that does not
        convert to a regular array of real numbers (e.g. non-numeric strings).
    TypeError
        Complex ``w``; ``complement`` not a bool.
    """
    complement = check_bool(complement, "complement")
    w = _weight(w)
    n_filters = w.shape[-1] * w.shape[-2]
    if n_filters < 2:
        raise ValueError(f"W must hold n_out * n_in >= 2 filters for C_t, got {n_filters}")
    spatial = int(np.prod(w.shape[:-2])) if w.ndim > 2 else 1
    return pairwise_mean_cosine(w.reshape(spatial, n_filters).T, complement)


def effective_width(c_f: ArrayLike, n: int) -> float | np.ndarray:
    """Effective width :math:`1 + (n - 1)\\sqrt{1 - C_f^2}` of a layer of ``n`` features (Sec. 4.1).

    Parameters
    ----------
    c_f : float or array_like
        Forward correlation in [-1, 1].
    n : int
        Number of features (>= 1).

    Returns
    -------
    float or ndarray
        ``n`` for uncorrelated features, 1 for fully correlated ones.

    Raises
    ------
    ValueError
        ``c_f`` outside [-1, 1], non-finite or not convertible to real numbers; ``n`` not an
        integer in [1, 2^53] (a bool, a string or a non-integral float included).
    TypeError
        Complex ``c_f`` or ``n``.
    """
    c = check_correlation(c_f, "c_f")
    n = _int(n, "n", 1, 2**53)
    out = 1.0 + (n - 1) * np.sqrt(1.0 - np.asarray(c) ** 2)
    return float(out) if np.ndim(out) == 0 else out


@dataclass(frozen=True)
class ClosedFormCorrelations(Result):
    """Closed-form :math:`C_f`, :math:`C_b` of one initialisation (the list after eq. 6 of Blumenfeld et al. 2020).

    Attributes
    ----------
    kind : str
    c_f, c_b : float
        Forward and backward correlations. For ``"random"`` these are exact expectations at any
        size (the cosine of two independent isotropic vectors has mean zero), the paper's
        "limit" statement being the vanishing of their fluctuations.
    exact : bool
        True when every tensor of the kind has these values (not only in expectation).
    """

    kind: str
    c_f: float
    c_b: float
    exact: bool


_KINDS = ("random", "orthogonal", "replicated_identity", "constant", "zero", "replicated_features", "mixture")


def closed_form_correlations(
    kind: str, n_out: int | None = None, n_in: int | None = None, replicas: int = 1, gamma: float | None = None
) -> ClosedFormCorrelations:
    """The closed-form correlations listed after eq. 6 of Blumenfeld et al. 2020.

    Parameters
    ----------
    kind : {"random", "orthogonal", "replicated_identity", "constant", "zero", "replicated_features", "mixture"}
        - ``random``: i.i.d. zero-mean isotropic entries; ``C_f = C_b = 0`` in expectation.
        - ``orthogonal``: orthogonal in the channel dimensions (``Delta (x) U``, ``U`` square
          orthogonal); exactly 0, 0.
        - ``replicated_identity``: identity replicated ``P = n_out / n_in`` times,
          ``W[i, j] = [i mod n_in == j]``: ``C_f = (P - 1) / (n_out - 1)``, ``C_b = 0`` exactly.
        - ``constant`` / ``zero``: ``C_f = C_b = 1`` exactly (zero by the paper's convention).
        - ``replicated_features``: ``n_out = d`` rows made of ``d / R`` independent isotropic
          random rows, each repeated ``R`` times: ``C_f = (R - 1) / (d - 1)`` and ``C_b = 0``. For
          ``C_f`` this is the exact expectation (same-feature pairs contribute 1, others mean 0);
          ``C_b = 0`` is the expectation of the columns' cosines (columns are independent given
          the replication pattern, with isotropic, sign-symmetric entries).
        - ``mixture``: App. J's ``gamma I + (1 - gamma) 11^T / n`` (``n = n_out``): rows
          ``gamma e_i + (1 - gamma) 1 / n`` give exactly
          ``C_f = C_b = (1 - gamma^2) / (1 + (n - 1) gamma^2)`` (derived here; the paper gives no value).
    n_out, n_in : int
        Channel counts (``n_out`` needed for ``replicated_identity``, ``replicated_features`` and
        ``mixture``; ``n_in`` for ``replicated_identity``).
    replicas : int
        ``R`` for ``replicated_features`` (must divide ``n_out``).
    gamma : float
        Mixture weight in [0, 1] for ``mixture``.

    Returns
    -------
    ClosedFormCorrelations
        ``c_f``, ``c_b`` and whether they hold for every tensor (``exact``) or in expectation.

    Raises
    ------
    ValueError
        Unknown ``kind``; a missing argument the kind needs; ``n_out < 2``, ``n_in < 1``,
        ``replicas < 1`` or ``> n_out``, ``gamma`` outside [0, 1] -- every argument given is
        validated whatever the kind; ``n_out`` not a multiple of ``n_in`` (replicated identity);
        ``replicas`` not dividing ``n_out`` (replicated features); ``n_out``, ``n_in`` or
        ``replicas`` not an integer (a bool, a string or a non-integral float).
    TypeError
        ``kind`` not a str; a complex, boolean or non-numeric ``gamma``; a complex ``n_out``,
        ``n_in`` or ``replicas``.
    """
    if not isinstance(kind, str):
        raise TypeError(f"kind must be a str, one of {_KINDS}, got {type(kind).__name__}")
    if kind not in _KINDS:
        raise ValueError(f"kind must be one of {_KINDS}, got {kind!r}")
    if n_out is not None:
        n_out = _int(n_out, "n_out", 2)
    if n_in is not None:
        n_in = _int(n_in, "n_in", 1)
    replicas = _int(replicas, "replicas", 1)
    if n_out is not None and replicas > n_out:
        raise ValueError(f"replicas must be <= n_out = {n_out}, got {replicas}")
    if gamma is not None:
        gamma = check_scalar(gamma, "gamma")
        if not 0.0 <= gamma <= 1.0:
            raise ValueError(f"gamma must lie in [0, 1], got {gamma!r}")
    if kind == "random":
        return ClosedFormCorrelations(kind, 0.0, 0.0, exact=False)
    if kind == "orthogonal":
        return ClosedFormCorrelations(kind, 0.0, 0.0, exact=True)
    if kind in ("constant", "zero"):
        return ClosedFormCorrelations(kind, 1.0, 1.0, exact=True)
    if n_out is None:
        raise ValueError(f"n_out (an integer >= 2) is required for kind={kind!r}")
    if kind == "mixture":
        if gamma is None:
            raise ValueError("gamma (in [0, 1]) is required for kind='mixture'")
        c = (1.0 - gamma * gamma) / (1.0 + (n_out - 1) * gamma * gamma)
        return ClosedFormCorrelations(kind, c, c, exact=True)
    if kind == "replicated_identity":
        if n_in is None:
            raise ValueError("n_in (an integer >= 1) is required for kind='replicated_identity'")
        if n_out % n_in:
            raise ValueError(f"n_out must be a multiple P * n_in of n_in={n_in}, got {n_out}")
        p = n_out // n_in
        return ClosedFormCorrelations(kind, (p - 1) / (n_out - 1), 0.0, exact=True)
    if n_out % replicas:
        raise ValueError(f"replicas must divide n_out={n_out}, got {replicas}")
    return ClosedFormCorrelations(kind, (replicas - 1) / (n_out - 1), 0.0, exact=False)


def perturbation_ratio(a: ArrayLike, axis: int = -1) -> float:
    """Relative size of the symmetry-breaking part of features (App. G, Figs. 9-10 of Blumenfeld et al. 2020).

    .. math:: \\frac{\\|(I - \\tfrac1n \\mathbf 1 \\mathbf 1^T) a\\|_F}{\\|a\\|_F},

    the projection acting on the channel ``axis`` (of length ``n``) and the norms taken over the
    whole array. 0 for perfectly symmetric features (all channels equal); 0 for ``a = 0`` by the
    same convention as the zero tensor.

    Parameters
    ----------
    a : array_like
        Features (or gradients with respect to features), channels on ``axis``.
    axis : int
        The channel axis.

    Returns
    -------
    float in [0, 1]

    Raises
    ------
    ValueError
        A scalar or empty ``a``, an ``axis`` outside ``[-a.ndim, a.ndim - 1]`` or not an integer
        (a bool, a string or a non-integral float), a non-finite entry, or an ``a`` that does not
        convert to a regular array of real numbers (e.g. non-numeric strings).
    TypeError
        Complex ``a`` or ``axis``.
    """
    a = as_float_array(a, "a")
    if a.ndim == 0:
        raise ValueError("a must have a channel axis")
    axis = _int(axis, "axis", -a.ndim, a.ndim - 1)
    if a.size == 0:
        raise ValueError(f"a must not be empty, got shape {a.shape}")
    return _ratio(a, axis)


def _ratio(a: np.ndarray, axis: int) -> float:
    scale = float(np.max(np.abs(a)))
    if scale == 0.0:
        return 0.0
    a = a / scale
    d = a - np.take(a, [0], axis=axis)  # deviations from channel 0: exactly 0 for equal channels
    pert = d - d.mean(axis=axis, keepdims=True)
    return float(np.sqrt(np.sum(pert * pert) / np.sum(a * a)))


def propagate_perturbation(
    alpha: ArrayLike,
    epsilon: ArrayLike,
    kinds: Iterable[str],
    slope: float = 0.01,
    gamma: ArrayLike | None = None,
) -> np.ndarray:
    """Propagate symmetric features plus a perturbation through a LeakyNet stack (App. G, H of Blumenfeld et al. 2020).

    Layer ``l`` (1-based) computes ``h^l = s_l M_l phi(h^{l-1})`` at every spatial location
    (delta kernel, eq. 7), with ``phi`` the leaky ReLU of negative slope ``slope`` (the paper's
    :math:`\\sigma_\\rho`, ``rho = slope``), ``M_l = I`` (``'I'``) or ``11^T / n`` (``'1'``) and
    ``s_l = -1 / slope`` on odd layers, 1 on even ones, so that two layers compose to ``-x``
    (``phi(-phi(x) / slope) = -x``) and the features repeat with period 4 (App. H).
    The input is ``h^0 = alpha + epsilon``.

    Parameters
    ----------
    alpha : array_like, shape (..., n)
        Features, channels last (the symmetric part when all channels are equal); leading axes are
        spatial locations / inputs.
    epsilon : array_like, same shape
        Perturbation.
    kinds : sequence of {"I", "1"}
        Channel matrix of each layer.
    slope : float
        Negative slope of the leaky ReLU (``meanfield.activations.get_activation("leaky_relu",
        slope=slope)``), in (0, 1]; the paper's ``rho``.
    gamma : sequence of float, optional
        If given, layer ``l`` uses ``gamma_l I + (1 - gamma_l) 11^T / n`` instead (App. J's
        mixture); ``kinds`` then only sets the depth.

    Returns
    -------
    ndarray, shape (len(kinds) + 1,)
        :func:`perturbation_ratio` of ``h^0 .. h^L``. A ``'1'`` layer sets it to exactly 0 (the
        perturbation's channel mean joins the symmetric part; for independent components that
        mean carries ``1 / sqrt(n)`` of the perturbation's norm, App. G). An ``'I'`` layer keeps it
        exactly while the perturbation flips no sign (the leaky ReLU then scales a location's
        channels alike); otherwise the nonlinearity changes it by O(1) factors, not with depth.

    Raises
    ------
    ValueError
        ``alpha`` and ``epsilon`` of different shapes, scalar or empty, or non-finite; ``slope``
        outside (0, 1]; ``kinds`` with anything but ``'I'`` and ``'1'``, deeper than
        :data:`MAX_PROPAGATION_DEPTH`, or ``depth * alpha.size > MAX_PROPAGATION_WORK``; ``gamma``
        not one value in [0, 1] per layer; arrays that do not convert to regular arrays of real
        numbers (e.g. non-numeric strings).
    TypeError
        Complex arrays; a complex, boolean or non-numeric ``slope``; ``kinds`` not iterable.

    Notes
    -----
    The ratio is invariant to a positive rescaling of the features, and every layer is positively
    homogeneous (``phi(c x) = c phi(x)`` for ``c > 0``), so the computation drops the factor
    ``1 / slope`` of ``s_l`` (keeping its sign) and renormalises each layer by a power of two:
    features never overflow or underflow as a whole, whatever the depth and ``slope``.

    Examples
    --------
    >>> alpha = np.ones((1, 4))  # symmetric features: every channel equal
    >>> eps = np.array([[0.1, -0.1, 0.0, 0.0]])
    >>> propagate_perturbation(alpha, eps, ["I", "1", "I"], slope=0.1).round(4)
    array([0.0705, 0.0705, 0.    , 0.    ])
    """
    a = as_float_array(alpha, "alpha")
    e = as_float_array(epsilon, "epsilon")
    if a.shape != e.shape or a.ndim == 0:
        raise ValueError(f"alpha and epsilon must have the same shape (..., n), got {a.shape} and {e.shape}")
    if a.size == 0:
        raise ValueError(f"alpha must not be empty, got shape {a.shape}")
    slope = check_scalar(slope, "slope")
    if not 0.0 < slope <= 1.0:
        raise ValueError(f"slope must lie in (0, 1], got {slope!r}")
    try:
        kinds = list(kinds)
    except TypeError:
        raise TypeError(f"kinds must be a sequence of 'I' and '1', got {type(kinds).__name__}") from None
    for k in kinds:
        if not (isinstance(k, str) and k in ("I", "1")):
            raise ValueError(f"kinds must contain only 'I' and '1', got {k!r}")
    if len(kinds) > MAX_PROPAGATION_DEPTH or len(kinds) * a.size > MAX_PROPAGATION_WORK:
        raise ValueError(
            f"kinds: depth {len(kinds)} with {a.size} feature entries exceeds MAX_PROPAGATION_DEPTH = "
            f"{MAX_PROPAGATION_DEPTH} or MAX_PROPAGATION_WORK = {MAX_PROPAGATION_WORK} (depth x entries)"
        )
    if gamma is not None:
        gamma = as_float_array(gamma, "gamma")
        if gamma.shape != (len(kinds),) or np.any((gamma < 0) | (gamma > 1)):
            raise ValueError(f"gamma must have one value in [0, 1] per layer ({len(kinds)}), got {gamma}")
    phi = get_activation("leaky_relu", slope=slope).phi
    scale = max(float(np.max(np.abs(a))), float(np.max(np.abs(e))))
    h = a / scale + e / scale if scale > 0 else np.zeros_like(a)
    ratios = [_ratio(h, -1)]
    for layer, kind in enumerate(kinds, start=1):
        x = phi(h)
        mean = x.mean(axis=-1, keepdims=True)
        if gamma is not None:
            mixed = gamma[layer - 1] * x + (1.0 - gamma[layer - 1]) * mean
        else:
            mixed = x if kind == "I" else np.broadcast_to(mean, x.shape)
        h = -mixed if layer % 2 else np.array(mixed)  # s_l = -1/slope or 1, up to a positive factor
        top = float(np.max(np.abs(h)))
        if top > 0.0:
            h = np.ldexp(h, -np.frexp(top)[1])  # exact renormalisation to max |h| in [0.5, 1)
        ratios.append(_ratio(h, -1))
    return np.array(ratios)


@dataclass(frozen=True)
class SubnetworkCounts(Result):
    """Numbers of distinct neuron-masked sub-networks of ``L`` layers of width ``d`` (App. F of Blumenfeld et al. 2020).

    Attributes
    ----------
    d : int
        The width ``d`` of every masked layer, as passed to :func:`subnetwork_counts`.
    n_layers : int
        The number ``L`` of masked layers.
    random : int
        I.i.d. random weights: every mask is distinct, ``2^(d L)`` (``(2^d - 1)^L`` without empty layers).
    all_to_all : int
        Symmetric features with all-to-all connections (ConstNet, LeakyNet ``'1'``): only the
        number of kept neurons per layer matters, ``(d + 1)^L`` (``d^L`` without empty layers).
    one_to_one : int
        Symmetric features with one-to-one connections (LeakyNet ``'I'``): each of the ``d``
        feature chains carries one of ``2^L`` masks and chains are interchangeable, so the count is
        the number of multisets, ``C(2^L + d - 1, d)`` (without empty layers: see Notes).
    include_empty : bool
        Whether masks that remove every neuron of some layer are counted (the value passed to
        :func:`subnetwork_counts`).

    Notes
    -----
    The paper pairs ``2^(dL)`` (which counts empty layers) with ``d^L`` (which does not); counting
    consistently gives ``(d + 1)^L``. Its asymptotic ``2^(dL) / d^d`` for ``one_to_one`` should read
    ``2^(dL) / d!`` (``C(N + d - 1, d) ~ N^d / d!`` for ``N = 2^L >> d``). Without empty layers
    the one-to-one count is the number of multisets of size ``d`` over the ``2^L`` chain masks whose
    union covers every layer; it is computed by inclusion-exclusion over the uncovered layers.
    """

    d: int
    n_layers: int
    random: int
    all_to_all: int
    one_to_one: int
    include_empty: bool

    def log2(self) -> dict[str, float]:
        """The three counts as base-2 logarithms (floats; exact ints can have millions of digits)."""
        return {k: math.log2(getattr(self, k)) for k in ("random", "all_to_all", "one_to_one")}


def subnetwork_counts(d: int, n_layers: int, include_empty: bool = True) -> SubnetworkCounts:
    """Distinct sub-networks obtained by masking neurons (App. F of Blumenfeld et al. 2020); exact integers.

    Parameters
    ----------
    d : int
        Width (>= 1).
    n_layers : int
        Number of masked layers ``L`` (>= 1).
    include_empty : bool
        Count masks that remove every neuron of some layer (True, the convention of the paper's
        ``2^(dL)``) or not.

    Returns
    -------
    SubnetworkCounts
        Exact integers ``random``, ``all_to_all``, ``one_to_one`` (see its Notes for where they
        differ from App. F's printed values).

    Raises
    ------
    ValueError
        ``d`` or ``n_layers`` < 1; ``d * n_layers > MAX_SUBNETWORK_BITS`` (2^23: the counts have
        about ``d L`` bits and take seconds to compute at the limit; the paper's ``d = 640``,
        ``L = 10^4`` is inside it); with ``include_empty=False``, ``n_layers > 64`` or
        ``d * n_layers > MAX_SUBNETWORK_BITS_EXCLUSIVE`` (2^19); ``d`` or ``n_layers`` not an
        integer (a bool, a string or a non-integral float).
    TypeError
        ``include_empty`` not a bool; a complex ``d`` or ``n_layers``.
    """
    include_empty = check_bool(include_empty, "include_empty")
    d = _int(d, "d", 1)
    n_layers = _int(n_layers, "n_layers", 1)
    if d * n_layers > MAX_SUBNETWORK_BITS:
        raise ValueError(
            f"d * n_layers must be <= {MAX_SUBNETWORK_BITS} (MAX_SUBNETWORK_BITS: the exact counts have "
            f"about d * n_layers bits), got d = {d}, n_layers = {n_layers}"
        )
    if include_empty:
        return SubnetworkCounts(
            d, n_layers, 2 ** (d * n_layers), (d + 1) ** n_layers, math.comb(2**n_layers + d - 1, d), True
        )
    if n_layers > 64:
        raise ValueError(f"n_layers must be <= 64 when include_empty=False (inclusion-exclusion), got {n_layers}")
    if d * n_layers > MAX_SUBNETWORK_BITS_EXCLUSIVE:
        raise ValueError(
            f"d * n_layers must be <= {MAX_SUBNETWORK_BITS_EXCLUSIVE} (MAX_SUBNETWORK_BITS_EXCLUSIVE) when "
            f"include_empty=False, got d = {d}, n_layers = {n_layers}"
        )
    # multisets of d chain masks (subsets of the L layers) covering every layer: inclusion-exclusion
    one = sum(
        (-1) ** k * math.comb(n_layers, k) * math.comb(2 ** (n_layers - k) + d - 1, d) for k in range(n_layers + 1)
    )
    return SubnetworkCounts(d, n_layers, (2**d - 1) ** n_layers, d**n_layers, one, False)
