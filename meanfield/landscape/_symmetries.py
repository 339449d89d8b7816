"""Symmetries of the loss landscape: rescaling of weight matrices and permutation counts (Orhan 2017).

Private submodule of :mod:`meanfield.landscape`:

- :func:`skip_network` and :func:`rescaling_deviation`: the real-valued ReLU nets of eqs. 24-26
  and the rescaling symmetry of Sec. 2.1 / Fig. 2c (``W_k -> g W_k``, ``W_l -> W_l / g``), exact
  for plain nets and broken by skip connections;
- :func:`permutation_counts`: the permutation symmetry of hidden units (Sec. 2.1, Fig. 1a), whose
  size is ``prod_l n_l!`` for a plain net, and the Discussion's count ``K! (d!)^K`` of the
  permutations that respect ``K`` classes of ``d`` units (``n = K d``).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .._checks import as_float_array, check_scalar
from .._results import Result
from ._common import _check_architecture, _int, _sample_rows, _square_matrices

__all__ = ["PermutationCounts", "permutation_counts", "rescaling_deviation", "skip_network"]

#: Largest total number of units ``sum(widths)`` of :func:`permutation_counts` (the counts are exact
#: integers; ``n!`` has 1.5 million bits at ``n = 10^5``).
MAX_FACTORIAL_ARGUMENT = 10**5

_SKIP_ARCHITECTURES = ("plain", "residual", "hyper_residual")


def _check_skip_net(x, weights, biases):
    h = _sample_rows(x, "x", "n")
    n = h.shape[1]
    if isinstance(weights, np.ndarray) and weights.ndim == 3:
        weights = list(weights)
    if not isinstance(weights, (list, tuple)) or len(weights) < 1:
        raise TypeError(f"weights must be a non-empty list of (n, n) arrays, got {type(weights).__name__}")
    ws = _square_matrices(weights, "weights", n, "n", " to match x")
    if biases is None:
        bs = [np.zeros(n) for _ in ws]
    else:
        if isinstance(biases, np.ndarray) and biases.ndim == 2:
            biases = list(biases)
        if not isinstance(biases, (list, tuple)):
            raise TypeError(
                f"biases must be a list of (n,) arrays (one per weight matrix), got {type(biases).__name__}"
            )
        if len(biases) != len(ws):
            raise ValueError(f"biases must have one vector per weight matrix ({len(ws)}), got {len(biases)}")
        bs = []
        for i, b in enumerate(biases):
            b = as_float_array(b, f"biases[{i}]")
            if b.shape != (n,):
                raise ValueError(f"biases[{i}] must have shape (n,) = ({n},), got {b.shape}")
            bs.append(b)
    return h, ws, bs


def _check_matrices(mats, n, count, name):
    """``None`` or a list of ``count`` finite (n, n) arrays (a 3-D array is split along its first axis)."""
    if mats is None:
        return None
    if isinstance(mats, np.ndarray) and mats.ndim == 3:
        mats = list(mats)
    if not isinstance(mats, (list, tuple)):
        raise TypeError(f"{name} must be a list of (n, n) arrays (one per weight matrix), got {type(mats).__name__}")
    if len(mats) != count:
        raise ValueError(f"{name} must hold one (n, n) matrix per weight matrix ({count}), got {len(mats)}")
    return _square_matrices(mats, name, n, "n")


def _check_constant_bias(constant_bias):
    """``None`` or the pair ``(a, b)`` of finite floats of the profile ``a l + b`` (Sec. 2.4.3)."""
    if constant_bias is None:
        return None
    if not isinstance(constant_bias, (tuple, list)) or len(constant_bias) != 2:
        raise TypeError(f"constant_bias must be None or a pair (a, b) of floats, got {constant_bias!r}")
    return check_scalar(constant_bias[0], "constant_bias[0] (a)"), check_scalar(
        constant_bias[1], "constant_bias[1] (b)"
    )


def _skip_forward(architecture, h, ws, bs, skips=None, long_skips=None, constant_bias=None):
    history = [h]
    with np.errstate(over="ignore", invalid="ignore"):
        for idx, (w, b) in enumerate(zip(ws, bs)):
            l = idx + 1
            pre = h @ w.T + b
            if constant_bias is not None:
                pre = pre + (constant_bias[0] * l + constant_bias[1])
            new = np.maximum(pre, 0.0)
            if architecture != "plain":
                new = new + (h if skips is None else h @ skips[idx].T)
            if architecture == "hyper_residual" and l >= 2:
                longs = skips if long_skips is None else long_skips
                if longs is None:
                    far = sum(history[:-1])
                else:
                    far = sum(x_k @ longs[k].T for k, x_k in enumerate(history[:-1]))
                new = new + far / (l - 1)
            h = new
            history.append(h)
    return h


def _skip_options(architecture, h, ws, skips, long_skips, constant_bias):
    n, count = h.shape[1], len(ws)
    skips = _check_matrices(skips, n, count, "skips")
    long_skips = _check_matrices(long_skips, n, count, "long_skips")
    if architecture == "plain" and (skips is not None or long_skips is not None):
        raise ValueError("skips and long_skips apply to the residual and hyper-residual architectures, not to 'plain'")
    if architecture == "residual" and long_skips is not None:
        raise ValueError("long_skips applies to the hyper-residual architecture only (eq. 26)")
    return skips, long_skips, _check_constant_bias(constant_bias)


def skip_network(
    architecture: str,
    x: ArrayLike,
    weights: Sequence[ArrayLike] | np.ndarray,
    biases: Sequence[ArrayLike] | np.ndarray | None = None,
    *,
    skips: Sequence[ArrayLike] | np.ndarray | None = None,
    long_skips: Sequence[ArrayLike] | np.ndarray | None = None,
    constant_bias: tuple[float, float] | None = None,
) -> np.ndarray:
    """Real-valued ReLU net with skip matrices: eq. 24 (plain), 25 (residual), 26 (hyper-residual) of Orhan 2017.

    Plain (eq. 24): ``x_{l+1} = f(W_l x_l + b_l + c_l)``; residual (eq. 25):
    ``x_{l+1} = f(W_l x_l + b_l + c_l) + Q_l x_l``; hyper-residual (eq. 26):
    ``x_{l+1} = f(W_l x_l + b_l + c_l) + Q_l x_l + [P_{l-1} x_{l-1} + ... + P_1 x_1] / (l - 1)``,
    with ``f = relu``, ``Q_l`` the ``skips`` (default the identity), ``P_k`` the ``long_skips``
    (default ``Q_k``, eq. 26 as printed; Fig. 11 uses ``Q = I`` and twice-folded orthogonal ``P``,
    :func:`folded_orthogonal`) and ``c_l = a l + b`` the untrained constant bias profile of
    Sec. 2.4.3 / Fig. 12 (``constant_bias=(a, b)``; default none), the same for every unit of layer
    ``l = 1 .. len(weights)``, so it breaks the rescaling symmetry but not the permutation symmetry.

    Parameters
    ----------
    architecture : {"plain", "residual", "hyper_residual"}
    x : array_like, shape (P, n)
        Inputs, finite, ``P, n >= 1``.
    weights : list of (n, n) arrays
        ``W_1 ... W_{L-1}`` (at least one), finite.
    biases : list of (n,) arrays, optional
        One per weight matrix (default zero), finite.
    skips : list of (n, n) arrays, optional
        ``Q_1 .. Q_{L-1}`` of eqs. 25-26 (residual and hyper-residual only; default identities),
        e.g. :func:`folded_orthogonal` or :func:`controlled_skip_matrix` (Figs. 9-10).
    long_skips : list of (n, n) arrays, optional
        ``P_1 .. P_{L-1}``, the matrices of the connections from non-adjacent layers in eq. 26
        (hyper-residual only; default ``skips``). The last one is never used.
    constant_bias : (float, float), optional
        ``(a, b)`` of the untrained bias ``a l + b`` added to every pre-activation of layer ``l``
        (Sec. 2.4.3, Fig. 12; ``(0, 0)`` is the plain bias-free net).

    Returns
    -------
    ndarray, shape (P, n)
        The last layer; finite.

    Raises
    ------
    ValueError
        Unknown architecture, arrays of the wrong shape, with NaN or infinity or that do not
        convert to real numbers (e.g. non-numeric strings), a bias or skip list of the wrong
        length, skips given to the plain net (or ``long_skips`` to the residual net), or
        activations that overflow double precision (scale x or the weights down).
    TypeError
        ``architecture`` not a str; ``weights``, ``biases``, ``skips`` or ``long_skips`` not lists;
        ``constant_bias`` not a pair; complex entries.

    Notes
    -----
    Orhan 2017, Sec. 2.4, eqs. 24-26; Secs. 2.4.2-2.4.3 for the skip matrices and constant biases.
    With ``skips=None`` and ``long_skips=None`` the skips are identities (``Q_l = P_l = I``).
    """
    _check_architecture(architecture, _SKIP_ARCHITECTURES)
    h, ws, bs = _check_skip_net(x, weights, biases)
    skips, long_skips, constant_bias = _skip_options(architecture, h, ws, skips, long_skips, constant_bias)
    out = _skip_forward(architecture, h, ws, bs, skips, long_skips, constant_bias)
    if not np.all(np.isfinite(out)):
        raise ValueError("x, weights and biases give activations that overflow double precision (scale them down)")
    return out


def _scaled_norm(v: np.ndarray):
    """``(m, r)`` with ``||v||_F = m * r``, ``m = max |v|``, ``r`` in [1, sqrt(size)]: no overflow."""
    m = float(np.max(np.abs(v)))
    if m == 0.0:
        return 0.0, 0.0
    return m, float(np.sqrt(np.sum((v / m) ** 2)))


def rescaling_deviation(
    architecture: str,
    x: ArrayLike,
    weights: Sequence[ArrayLike] | np.ndarray,
    k: int,
    l: int,
    g: float = 10.0,
    biases: Sequence[ArrayLike] | np.ndarray | None = None,
    *,
    skips: Sequence[ArrayLike] | np.ndarray | None = None,
    long_skips: Sequence[ArrayLike] | np.ndarray | None = None,
    constant_bias: tuple[float, float] | None = None,
) -> float:
    """Relative change ``||F' - F|| / ||F||`` of the output when ``W_k -> g W_k``, ``W_l -> W_l / g``
    and the biases of layers ``k`` to ``l - 1`` are multiplied by ``g`` (Sec. 2.1, Fig. 2c of Orhan 2017).

    Zero (to rounding) for the plain ReLU net (positive homogeneity); non-zero with skips.

    Parameters
    ----------
    architecture : {"plain", "residual", "hyper_residual"}
        Eq. 24, 25 or 26 (see :func:`skip_network`).
    x : array_like, shape (P, n)
        Inputs.
    weights : list of (n, n) arrays
        ``W_1 ... W_{L-1}`` (at least two).
    k, l : int
        0-based indices into ``weights``, ``0 <= k < l < len(weights)``.
    g : float
        Rescaling factor, finite and ``> 0``.
    biases : list of (n,) arrays, optional
        Default zero (the trained biases; they are rescaled).
    skips, long_skips, constant_bias
        As in :func:`skip_network`; never rescaled (the constant biases of Fig. 12 are untrained).

    Returns
    -------
    float
        ``||F' - F||_F / ||F||_F``, finite (norms are formed without intermediate overflow).

    Raises
    ------
    ValueError
        Bad ``k``, ``l`` or ``g`` (``k`` or ``l`` not an integer -- a bool, a string or a
        non-integral float -- included); arrays of the wrong shape, non-finite or not convertible
        to real numbers (e.g. non-numeric strings); an identically zero output ``F`` (the
        relative change is undefined); an output ``F`` or ``F'`` that overflows (scale ``x`` or
        the weights down, or use a ``g`` nearer 1), or a ratio beyond the float64 range.
    TypeError
        ``architecture`` not a str; complex arrays; a complex, boolean or non-numeric ``g``; a
        complex ``k`` or ``l``.
    """
    _check_architecture(architecture, _SKIP_ARCHITECTURES)
    h, ws, bs = _check_skip_net(x, weights, biases)
    skips, long_skips, constant_bias = _skip_options(architecture, h, ws, skips, long_skips, constant_bias)
    n = len(ws)
    if n < 2:
        raise ValueError(f"weights must hold at least 2 matrices to rescale a pair, got {n}")
    k = _int(k, "k", minimum=0, maximum=n - 2)
    l = _int(l, "l", minimum=k + 1, maximum=n - 1)
    g = check_scalar(g, "g")
    if not g > 0:
        raise ValueError(f"g must be a finite number > 0, got {g!r}")
    w2 = [w.copy() for w in ws]
    b2 = [b.copy() for b in bs]
    with np.errstate(over="ignore", under="ignore"):
        w2[k] *= g
        w2[l] /= g
        for j in range(k, l):
            b2[j] *= g
    f0 = _skip_forward(architecture, h, ws, bs, skips, long_skips, constant_bias)
    f1 = _skip_forward(architecture, h, w2, b2, skips, long_skips, constant_bias)
    if not (np.all(np.isfinite(f0)) and np.all(np.isfinite(f1)) and all(np.all(np.isfinite(w)) for w in w2 + b2)):
        raise ValueError(
            f"x, weights and g = {g!r} give an output that overflows double precision (scale x or the "
            "weights down, or use a g nearer 1)"
        )
    m0, r0 = _scaled_norm(f0)
    if m0 == 0.0:
        raise ValueError(
            "x and weights give an identically zero output F: the relative change ||F' - F|| / ||F|| is undefined"
        )
    # F' - F without overflow: both are finite, so their halves' difference is finite
    md, rd = _scaled_norm(0.5 * f1 - 0.5 * f0)
    with np.errstate(over="ignore", under="ignore"):
        ratio = 2.0 * (md / m0) * (rd / r0)
    if not math.isfinite(ratio):
        raise ValueError(f"g = {g!r}: the relative change of the output exceeds the float64 range; use a g nearer 1")
    return float(ratio)


@dataclass(frozen=True)
class PermutationCounts(Result):
    """Hidden-unit permutations of a plain network: undifferentiated units versus units in classes (exact integers).

    Attributes
    ----------
    widths : tuple of int
        Units of each hidden layer, ``n_l``.
    n_classes : tuple of int
        Classes ``K_l`` of each layer (``d_l = n_l / K_l`` units per class).
    undifferentiated : int
        ``prod_l n_l!``: permutations of the units within each layer, which leave a plain
        network's function unchanged (Sec. 2.1, Fig. 1a of Orhan 2017).
    class_respecting : int
        ``prod_l K_l! (d_l!)^{K_l}``: the permutations that respect class membership (the
        Discussion of Orhan 2017); equal to ``undifferentiated`` for ``K_l = 1`` or ``K_l = n_l``.
    """

    widths: tuple[int, ...]
    n_classes: tuple[int, ...]
    undifferentiated: int
    class_respecting: int

    @property
    def n(self) -> int:
        """Total number of units ``sum(widths)`` (the Discussion's ``n`` for one layer)."""
        return sum(self.widths)

    @property
    def log10_ratio(self) -> float:
        """``log10(undifferentiated / class_respecting)`` (>= 0; exact integers, any size)."""
        return math.log10(self.undifferentiated) - math.log10(self.class_respecting)


def _count_list(values: object, name: str) -> tuple[list[object], bool]:
    """The entries of an int (then ``True``: a scalar) or of a 1-D sequence; complex raises ``TypeError``."""
    if isinstance(values, (str, bytes)) or values is None:
        raise TypeError(f"{name} must be an int or a sequence of ints, got {type(values).__name__}")
    if isinstance(values, np.ndarray) and values.ndim == 0:
        values = values.item()
    if isinstance(values, (numbers.Number, np.number, np.bool_)):
        if isinstance(values, (complex, np.complexfloating)):
            raise TypeError(f"{name} must be an integer, got the complex {values!r}")
        return [values], True
    if not hasattr(values, "__len__") or not hasattr(values, "__iter__") or isinstance(values, Mapping):
        raise TypeError(f"{name} must be an int or a sequence of ints, got {type(values).__name__}")
    if len(values) > MAX_FACTORIAL_ARGUMENT:
        raise ValueError(
            f"{name} must list at most {MAX_FACTORIAL_ARGUMENT} (MAX_FACTORIAL_ARGUMENT) layers, got {len(values)}"
        )
    if isinstance(values, np.ndarray):
        if values.dtype.kind == "c":
            raise TypeError(f"{name} must hold integers, got a complex array")
        if values.ndim != 1:
            raise ValueError(f"{name} must be an int or a 1-D sequence of ints, got an array of shape {values.shape}")
        values = values.tolist()
    values = list(values)
    if any(isinstance(v, (complex, np.complexfloating)) for v in values):
        raise TypeError(f"{name} must hold integers, got complex values")
    return values, False


def permutation_counts(widths: int | Sequence[int], n_classes: int | Sequence[int] = 1) -> PermutationCounts:
    """Permutation counts of Orhan 2017: ``prod_l n_l!`` versus ``prod_l K_l! (d_l!)^{K_l}``, exact integers.

    Units within a hidden layer can be permuted without changing the function of a plain network
    (Sec. 2.1, Fig. 1a): ``n_l!`` permutations per layer, ``prod_l n_l!`` in all; skip
    connections between adjacent layers of equal width break this symmetry. The Discussion
    divides the ``n = K d`` units of a layer into ``K`` classes of ``d`` units: only the ``K! (d!)^K``
    permutations that respect class membership remain, fewer than ``n!`` for ``1 < K < n``.

    Parameters
    ----------
    widths : int or sequence of int
        Units ``n_l`` of each hidden layer (one int: a single layer), each >= 1, in total at most
        :data:`MAX_FACTORIAL_ARGUMENT`. An empty sequence (no hidden layer) gives counts of 1.
    n_classes : int or sequence of int
        Classes ``K_l`` per layer, each dividing its ``n_l``: one int for every layer or one per
        layer. The default 1 (undifferentiated units) makes both counts ``prod_l n_l!``.

    Returns
    -------
    PermutationCounts
        The exact integers ``undifferentiated`` and ``class_respecting`` and ``log10_ratio``.

    Raises
    ------
    ValueError
        A width that is not an integer >= 1; ``sum(widths) > MAX_FACTORIAL_ARGUMENT``; a class
        count outside ``[1, n_l]`` or not dividing ``n_l``; ``n_classes`` of another length than
        ``widths``.
    TypeError
        ``widths`` or ``n_classes`` a str, None or another non-numeric object; complex values.

    Examples
    --------
    >>> p = permutation_counts(128, 4)  # the Discussion: 128! versus 4! (32!)^4
    >>> round(p.log10_ratio, 1)
    72.5
    >>> permutation_counts([3, 4]).undifferentiated  # 3! 4!
    144
    """
    ws = [_int(n, "widths", minimum=1, maximum=MAX_FACTORIAL_ARGUMENT) for n in _count_list(widths, "widths")[0]]
    total = sum(ws)
    if total > MAX_FACTORIAL_ARGUMENT:
        raise ValueError(
            f"widths must sum to at most {MAX_FACTORIAL_ARGUMENT} (MAX_FACTORIAL_ARGUMENT: the counts are exact "
            f"integers), got {total}"
        )
    ks, scalar = _count_list(n_classes, "n_classes")
    ks = [_int(k, "n_classes", minimum=1, maximum=MAX_FACTORIAL_ARGUMENT) for k in ks]
    if scalar:
        ks = ks * len(ws)
    elif len(ks) != len(ws):
        raise ValueError(f"n_classes must be one int or one per layer ({len(ws)}), got {len(ks)}")
    undifferentiated = class_respecting = 1
    for n, k in zip(ws, ks):
        if k > n or n % k:
            raise ValueError(f"n_classes must divide the layer width n = {n} (1 <= K <= n), got {k}")
        undifferentiated *= math.factorial(n)
        class_respecting *= math.factorial(k) * math.factorial(n // k) ** k
    return PermutationCounts(tuple(ws), tuple(ks), undifferentiated, class_respecting)
