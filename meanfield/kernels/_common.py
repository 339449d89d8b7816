"""Results, constants, argument checks, task scheduling and the array pair maps of :mod:`meanfield.kernels` (private)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numba
import numpy as np
from numpy.typing import ArrayLike

from .._checks import as_real_array, check_bool, check_int, check_nonnegative_scalar
from .._results import Result
from ..activations import ERF, LEAKY_RELU, LINEAR, RELU, get_activation
from ..gaussian import DEFAULT_DEGREE, pair_expectation
from ._closed import _closed_maps_kernel

if TYPE_CHECKING:  # annotations only
    from ..activations import Activation

#: Activations whose pair map has a closed form and runs in the compiled, multi-core kernels.
CLOSED_FORM = ("linear", "relu", "leaky_relu", "erf")
_CLOSED_CODES = (LINEAR, RELU, LEAKY_RELU, ERF)
#: Rows of ``x1`` per block of the compiled kernels (a block's scratch is 2 x block_rows x D2 floats
#: at most; the result does not depend on it).
DEFAULT_BLOCK_ROWS = 16
#: Most layers.
MAX_DEPTH = 100_000
#: Most floats the returned arrays may hold together (8 bytes each: 2^31 is 16 GiB).
MAX_OUTPUT_ELEMENTS = 2**31
#: Relative difference per layer to :func:`meanfield.dense.propagate` / :func:`meanfield.ntk.propagate_ntk`
#: that float64 rounding explains: a few ulps per operation, ~20 operations per pair map and layer.
ROUNDING_RTOL = 64 * float(np.finfo(np.float64).eps)
#: Read-outs of :func:`conv_kernels`.
READOUTS = ("flatten", "gap", "full")
#: Pair-layer updates below which the compiled kernels run on one core (a parallel launch's fixed
#: cost); the results are the same bits.
PARALLEL_MIN_WORK = 2_000_000


@dataclass(frozen=True)
class LayerMaps(Result):
    r"""The pair map of one layer for every pair of two sets of inputs (see :func:`closed_layer_maps`).

    Attributes
    ----------
    kappa : ndarray, shape (D1, D2)
        :math:`\kappa_{ij} = \mathbb{E}\,\phi(u)\phi(v)`.
    kappa_dot : ndarray, shape (D1, D2) or None
        :math:`\dot\kappa_{ij} = \mathbb{E}\,\phi'(u)\phi'(v)` (None when not asked for).
    error : float or None
        A bound on the absolute error of every entry (0 for closed forms up to rounding; None where
        the method gives none, e.g. :func:`quadrature_layer_maps`).
    """

    kappa: np.ndarray
    kappa_dot: np.ndarray | None
    error: float


@dataclass(frozen=True)
class DatasetKernels(Result):
    r"""NNGP and NTK between two sets of inputs (see :func:`dense_kernels`, :func:`conv_kernels`).

    Attributes
    ----------
    nngp : ndarray, shape (D1, D2), (n_layers, D1, D2), or for ``readout="full"`` (..., D1, P, D2, P)
        :math:`\Sigma^{l+1}(x_{1,i}, x_{2,j})` at the last layer (or at each of ``layers``).
    ntk : ndarray of the shape of ``nngp``, or None
        :math:`\Theta^{l+1}(x_{1,i}, x_{2,j})` (None when ``ntk=False``).
    layers : tuple of int
        The layers returned (0 = the input layer :math:`\Sigma^1`, ``depth`` = :math:`\Sigma^{L+1}`).
    method : str
        ``"closed"`` (compiled closed forms) or the name of the pair map used.
    """

    nngp: np.ndarray
    ntk: np.ndarray | None
    layers: tuple
    method: str


# ----------------------------------------------------------------------------------------------
# Pair maps as functions of one layer: the compiled kernels inline the closed forms; these are the
# same maps for arrays, and the interface of a pair map for activations without a closed form.


def _pair_arrays(q1, q2, c):
    q1 = as_real_array(q1, "q1")
    q2 = as_real_array(q2, "q2")
    c = as_real_array(c, "c")
    if (q1 < 0).any() or (q2 < 0).any():
        raise ValueError("q1 and q2 must be >= 0 (variances)")
    if (np.abs(c) > 1.0).any():
        raise ValueError("c must lie in [-1, 1] (correlations)")
    try:
        q1, q2, c = np.broadcast_arrays(q1, q2, c)
    except ValueError as exc:
        raise ValueError(f"q1, q2 and c must broadcast together, got {q1.shape}, {q2.shape}, {c.shape}") from exc
    return q1, q2, c


def closed_layer_maps(
    activation: str | Activation,
    q1: ArrayLike,
    q2: ArrayLike,
    c: ArrayLike,
    *,
    rtol: float = 1e-10,
    derivative: bool = True,
) -> LayerMaps:
    r"""The closed-form pair map of one layer: :math:`\kappa = \mathbb{E}\,\phi(u)\phi(v)` and :math:`\dot\kappa = \mathbb{E}\,\phi'(u)\phi'(v)`.

    :math:`(u, v) \sim N(0, [[q_{1,i}, c_{ij}\sqrt{q_{1,i}q_{2,j}}], [\cdot, q_{2,j}]])`, for every
    pair at once (``q1`` of shape (D1, 1), ``q2`` of shape (1, D2), ``c`` of shape (D1, D2), or any
    shapes that broadcast). This is the form of every pair map of :mod:`meanfield.kernels`.

    Parameters
    ----------
    activation : str or Activation
        One of :data:`CLOSED_FORM`.
    q1, q2 : array_like
        Variances (>= 0).
    c : array_like
        Correlations in [-1, 1].
    rtol : float
        The accuracy asked for (> 0): the closed forms are exact up to rounding whatever it is.
    derivative : bool
        Also return :math:`\dot\kappa`.

    Returns
    -------
    LayerMaps
        ``error`` = 0.0 (closed forms: float64 rounding only).

    Raises
    ------
    ValueError
        An activation without a closed form here (use :func:`quadrature_layer_maps`), negative
        variances, correlations outside [-1, 1], shapes that do not broadcast, ``rtol <= 0``.
    TypeError
        Non-numeric arguments.

    Notes
    -----
    erf: :math:`\kappa = \frac{2}{\pi}\arcsin\frac{2c\sqrt{q_1q_2}}{\sqrt{(1+2q_1)(1+2q_2)}}`,
    :math:`\dot\kappa = \frac{4}{\pi}[(1+2q_1)(1+2q_2) - 4c^2q_1q_2]^{-1/2}` (Williams 1997). relu /
    leaky relu (slope ``a``): the arc-cosine kernel (Cho & Saul 2009),
    :math:`\kappa = (1-a)^2\frac{\sqrt{q_1q_2}}{2\pi}(\sin\theta + (\pi-\theta)c) + a c\sqrt{q_1q_2}`,
    :math:`\dot\kappa = \frac{(1+a^2)(\pi-\theta) + 2a\theta}{2\pi}`, :math:`\theta = \arccos c`.
    """
    act = get_activation(activation)
    if act.code not in _CLOSED_CODES or not act.is_builtin:
        raise ValueError(f"activation must be one of {CLOSED_FORM} (closed forms), got {act.name!r}")
    rtol = check_nonnegative_scalar(rtol, "rtol")
    if rtol <= 0.0:
        raise ValueError(f"rtol must be > 0, got {rtol}")
    derivative = check_bool(derivative, "derivative")
    q1, q2, c = _pair_arrays(q1, q2, c)
    shape = c.shape
    flat = [np.ascontiguousarray(x, dtype=np.float64).ravel() for x in (q1, q2, c)]
    kappa = np.empty(flat[0].size)
    kdot = np.empty_like(kappa)
    _closed_maps_kernel(act.code, act.param, *flat, kappa, kdot)
    if not (np.isfinite(kappa).all() and np.isfinite(kdot).all()):
        raise ValueError("the pair map exceeds the float64 range at these q1, q2, c")
    return LayerMaps(kappa=kappa.reshape(shape), kappa_dot=kdot.reshape(shape) if derivative else None, error=0.0)


def quadrature_layer_maps(
    activation: str | Activation,
    q1: ArrayLike,
    q2: ArrayLike,
    c: ArrayLike,
    *,
    rtol: float = 1e-10,
    derivative: bool = True,
    degree: int = DEFAULT_DEGREE,
) -> LayerMaps:
    r"""The pair map of :func:`closed_layer_maps` by the library's per-pair quadrature (any built-in).

    :func:`meanfield.gaussian.pair_expectation` on every pair: closed forms where the library has
    them, Gauss-Hermite (or graded panels at large scales) otherwise. Slow: use it for activations
    without a closed form only, and for small data sets.

    Parameters
    ----------
    activation : str or Activation
    q1, q2, c : array_like
        As :func:`closed_layer_maps`.
    rtol : float
        Unused by the fixed-degree quadrature (checked only: a finite float >= 0); ``degree`` sets
        its accuracy.
    derivative : bool
    degree : int
        Gauss-Hermite degree per dimension.

    Returns
    -------
    LayerMaps
        ``error`` is None: the fixed-degree quadrature gives no bound.

    Raises
    ------
    ValueError, TypeError
        As :func:`meanfield.gaussian.pair_expectation`.
    """
    check_nonnegative_scalar(rtol, "rtol")
    derivative = check_bool(derivative, "derivative")
    q1, q2, c = _pair_arrays(q1, q2, c)
    kappa = np.asarray(pair_expectation(activation, q1, q2, c, (0, 0), degree), dtype=np.float64)
    kdot = np.asarray(pair_expectation(activation, q1, q2, c, (1, 1), degree), dtype=np.float64) if derivative else None
    return LayerMaps(kappa=kappa, kappa_dot=kdot, error=None)


def _external_layer_maps():
    """The pair map for activations without a closed form: Mehler's formula (``meanfield._mehler``)."""
    from .._mehler import mehler_layer_maps

    return mehler_layer_maps, "mehler"


# ----------------------------------------------------------------------------------------------
# Arguments.


def _inputs(x, name, ndim):
    arr = as_real_array(x, name)
    if arr.ndim != ndim or min(arr.shape) < 1:
        want = "(D, n0)" if ndim == 2 else "(D, P, c0)"
        raise ValueError(f"{name} must have shape {want} with every size >= 1, got {arr.shape}")
    return np.ascontiguousarray(arr, dtype=np.float64)


def _common(x1, x2, ndim, activation, sigma_w2, sigma_b2, depth, ntk, layers, block_rows, rows_per_task):
    x1 = _inputs(x1, "x1", ndim)
    sym = x2 is None
    x2 = x1 if sym else _inputs(x2, "x2", ndim)
    if x2.shape[1:] != x1.shape[1:]:
        raise ValueError(f"x2 must have the trailing shape of x1 {x1.shape[1:]}, got {x2.shape[1:]}")
    act = get_activation(activation)
    sw = check_nonnegative_scalar(sigma_w2, "sigma_w2")
    sb = check_nonnegative_scalar(sigma_b2, "sigma_b2")
    depth = check_int(depth, "depth", 0, MAX_DEPTH)
    want_ntk = check_bool(ntk, "ntk")
    if layers is None:
        layers = (depth,)
    else:
        if isinstance(layers, (int, np.integer)) and not isinstance(layers, (bool, np.bool_)):
            layers = (layers,)
        if isinstance(layers, (str, bytes)) or not hasattr(layers, "__iter__"):
            raise TypeError(f"layers must be None, an int or a sequence of ints, got {layers!r}")
        layers = tuple(check_int(v, "layers", 0, depth) for v in layers)
        if len(layers) == 0 or len(set(layers)) != len(layers) or list(layers) != sorted(layers):
            raise ValueError(f"layers must be distinct, increasing layer indices in [0, depth = {depth}], got {layers}")
    block_rows = check_int(block_rows, "block_rows", 1, 1 << 30)
    if rows_per_task is not None:
        rows_per_task = check_int(rows_per_task, "rows_per_task", 1, 1 << 30)
    record = np.full(depth + 1, -1, dtype=np.int64)
    record[list(layers)] = np.arange(len(layers))
    return x1, x2, sym, act, sw, sb, depth, want_ntk, layers, record, block_rows, rows_per_task


def _check_size(n_out, want_ntk):
    total = n_out * (2 if want_ntk else 1)
    if total > MAX_OUTPUT_ELEMENTS:
        raise ValueError(
            f"the kernels would hold {total} floats, more than MAX_OUTPUT_ELEMENTS = {MAX_OUTPUT_ELEMENTS} "
            "(fewer inputs, fewer layers, or ntk=False)"
        )


def _finish(nngp, ntk, layers, method, squeeze):
    if not (np.isfinite(nngp).all() and (ntk is None or np.isfinite(ntk).all())):
        raise ValueError(
            "the kernels exceed the float64 range at these activation, sigma_w2, sigma_b2, depth "
            "(fewer layers, smaller variances; meanfield.dense.propagate_log keeps a log scale)"
        )
    if squeeze:
        nngp = nngp[0]
        ntk = None if ntk is None else ntk[0]
    return DatasetKernels(nngp=nngp, ntk=ntk, layers=tuple(int(v) for v in layers), method=method)


def _n_tasks(d1, block, sym):
    nb = (d1 + block - 1) // block
    return (nb + 1) // 2 if sym else nb


def _run_tasks(kernel, n_tasks, work, *args):
    """``kernel(t0, t1, *args)`` over ranges covering ``range(n_tasks)``: in this thread for small
    ``work``, else on ``numba.get_num_threads()`` threads (the kernels release the GIL). Every task
    writes its own rows, so the result is the same bits either way."""
    n_threads = min(numba.get_num_threads(), n_tasks)
    if work < sys.modules[__package__].PARALLEL_MIN_WORK or n_threads <= 1:  # settable on the package
        kernel(0, n_tasks, *args)
        return
    from concurrent.futures import ThreadPoolExecutor

    n_chunks = min(n_tasks, 4 * n_threads)  # a few chunks per thread: balance on a shared machine
    edges = np.linspace(0, n_tasks, n_chunks + 1).astype(np.int64)
    with ThreadPoolExecutor(n_threads) as pool:
        for f in [pool.submit(kernel, int(edges[k]), int(edges[k + 1]), *args) for k in range(n_chunks)]:
            f.result()


def _map_rows(task, x1, x2, sym, rows_per_task, args_before, args_after):
    from ..parallel import chunk_ranges, map_chunks

    ranges = chunk_ranges(x1.shape[0], rows_per_task)
    parts = map_chunks(task, [(*args_before, x1[a:b], x2, a if sym else -1, *args_after) for a, b in ranges])
    nngp = np.concatenate([p[0] for p in parts], axis=1)
    ntk = None if parts[0][1] is None else np.concatenate([p[1] for p in parts], axis=1)
    return nngp, ntk
