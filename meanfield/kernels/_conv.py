"""Periodic CNNs: :func:`conv_kernels` (Xiao et al. 2018 covariance map over positions) (private)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from .._checks import as_real_array, check_probability_vector
from ..gaussian import DEFAULT_DEGREE
from ._closed import _conv_diag_trajectories, _conv_kernel, _mirror, _mirror_blocks
from ._common import (
    _CLOSED_CODES,
    DEFAULT_BLOCK_ROWS,
    READOUTS,
    DatasetKernels,
    _check_size,
    _common,
    _external_layer_maps,
    _finish,
    _map_rows,
    _n_tasks,
    _run_tasks,
    quadrature_layer_maps,
)
from ._general import _general_task

if TYPE_CHECKING:  # annotations only
    from ..activations import Activation


def _conv_plan(v, shape, p):
    """``(index, weight)``: ``[A_v * S].ravel()[m] = sum_o weight[o] S.ravel()[index[o, m]]`` for one
    (P, P) matrix (the offsets of :func:`meanfield.conv.average`, in its order)."""
    from .. import conv

    v = check_probability_vector(as_real_array(v, "v"), "v")
    if v.ndim not in (1, 2) or any(n % 2 == 0 for n in v.shape):
        raise ValueError(f"v must have shape (2k+1,) or (2k1+1, 2k2+1) (odd sizes), got {v.shape}")
    if shape is None:
        n = math.isqrt(p)
        shape = (p,) if v.ndim == 1 else (n, n)
    shape = conv.spatial_shape(shape)
    if len(shape) != v.ndim or math.prod(shape) != p:
        raise ValueError(f"shape {shape} must have {v.ndim} dimension(s) and P = {p} positions (x1.shape[1])")
    idx = np.arange(p * p).reshape(shape + shape)
    axes = tuple(range(2 * len(shape)))
    index, weight = [], []
    for entry in zip(*np.nonzero(v)):
        beta = tuple(int(j) - n // 2 for j, n in zip(entry, v.shape))
        index.append(np.roll(idx, tuple(-b for b in beta) * 2, axis=axes).ravel())
        weight.append(float(v[entry]))
    return np.array(index, dtype=np.int64), np.array(weight)


def _conv_trajectories(act, sw, sb, x, depth, plan):
    index, weight = plan
    d, p, _ = x.shape
    q = np.empty((depth + 1, d, p))
    t = np.empty_like(q)
    u = np.empty_like(q)
    _conv_diag_trajectories(act.code, act.param, sw, sb, x, depth, index, weight, q, t, u)
    return q, t, u


_READOUT_CODES = {"flatten": 0, "gap": 1, "full": 2}


def _conv_closed_rows(act, sw, sb, depth, x1, x2, sym, self_offset, traj1, plan, readout, block, record, want_ntk):
    index, weight = plan
    n_rec = int((record >= 0).sum())
    d1, p, _ = x1.shape
    d2 = x2.shape[0]
    q1, t1, u1 = traj1
    _, _, u2 = traj1 if (sym or self_offset >= 0) else _conv_trajectories(act, sw, sb, x2, depth, plan)
    shape_out = (n_rec, d1, p, d2, p) if readout == "full" else (n_rec, d1, 1, d2, 1)
    nngp = np.zeros(shape_out)
    ntk = np.zeros(shape_out) if want_ntk else np.zeros((1, 1, 1, 1, 1))
    work = d1 * d2 * p * p * (depth + 1)
    _run_tasks(
        _conv_kernel,
        _n_tasks(d1, block, sym),
        work,
        act.code,
        act.param, sw, sb, depth, x1, x2, u1, u2, q1, t1, np.ascontiguousarray(index),
        np.ascontiguousarray(weight), sym, self_offset, block, record, _READOUT_CODES[readout], want_ntk, nngp, ntk,
    )  # fmt: skip
    if sym:
        for out in (nngp, ntk) if want_ntk else (nngp,):
            if readout == "full":
                _mirror_blocks(out)
            else:
                flat = out.reshape(n_rec, d1, d2)
                _run_tasks(_mirror, (d1 + 63) // 64, flat.size, flat)
    return nngp, (ntk if want_ntk else None)


def _conv_task(act, sw, sb, depth, x1, x2, self_offset, plan, readout, block, record, want_ntk):
    """One Dask task of :func:`conv_kernels`: rows of x1 against every x2."""
    traj = _conv_trajectories(act, sw, sb, x2 if self_offset >= 0 else x1, depth, plan)
    return _conv_closed_rows(
        act, sw, sb, depth, x1, x2, False, self_offset, traj, plan, readout, block, record, want_ntk
    )


def conv_kernels(
    x1: ArrayLike,
    x2: ArrayLike | None,
    activation: str | Activation,
    sigma_w2: float,
    sigma_b2: float,
    v: ArrayLike,
    depth: int,
    *,
    shape: int | tuple[int, int] | None = None,
    readout: str = "flatten",
    ntk: bool = True,
    layers: int | tuple[int, ...] | None = None,
    block_rows: int = DEFAULT_BLOCK_ROWS,
    rows_per_task: int | None = None,
    degree: int = DEFAULT_DEGREE,
) -> DatasetKernels:
    r"""NNGP and NTK of a deep periodic CNN between two sets of inputs (Xiao et al. 2018 covariance map).

    Every layer is a periodic convolution with variance vector ``v`` (``omega_ij(beta) ~
    N(0, sigma_w2 v_beta / c)``, :mod:`meanfield.conv`) followed by the activation; the first layer
    acts on the input channels, :math:`\Sigma^1` of :func:`meanfield.conv.multi_input_covariance`,
    and :math:`\Theta^1 = \Sigma^1` (:func:`meanfield.ntk.propagate_conv_ntk`).

    Parameters
    ----------
    x1 : array_like, shape (D1, P, c0)
        Inputs with P positions (flattened row-major for 2-D signals) and c0 channels.
    x2 : array_like, shape (D2, P, c0), or None
        Second set; None for ``x1`` against itself.
    activation : str or Activation
        As :func:`dense_kernels`.
    sigma_w2, sigma_b2 : float
        Variances (>= 0).
    v : array_like
        Variance vector, shape (2k+1,) (1-D) or (2k1+1, 2k2+1) (2-D), non-negative, summing to 1
        (uniform: the standard CNN; one-hot: the delta initialisation).
    depth : int
        Convolution layers after the first (0 to :data:`MAX_DEPTH`).
    shape : int or (int, int), optional
        Spatial shape (default P, or the square image for a 2-D ``v``).
    readout : {"flatten", "gap", "full"}
        ``"flatten"``: the mean over positions of :math:`K(\alpha, \alpha)` (a dense read-out of the
        flattened last layer); ``"gap"``: the mean over every :math:`(\alpha, \alpha')` (global
        average pooling); ``"full"``: the blocks over positions, shape (D1, P, D2, P).
    ntk, layers, block_rows, rows_per_task, degree
        As :func:`dense_kernels`.

    Returns
    -------
    DatasetKernels
        (D1, D2) per layer, or (D1, P, D2, P) for ``readout="full"``.

    Raises
    ------
    ValueError, TypeError
        As :func:`dense_kernels`; a bad ``v``, ``shape`` or ``readout``.

    Notes
    -----
    Xiao et al. 2018, eqs. 2.3-2.5 and the NTK recursion of :func:`meanfield.ntk.conv_ntk_map`; equal to
    :func:`meanfield.ntk.propagate_conv_ntk` to float64 rounding. Work per input pair and layer is
    P^2 pair maps and 2 P^2 ``len(v)`` multiply-adds.
    """
    if not isinstance(readout, str) or readout not in READOUTS:
        raise ValueError(f"readout must be one of {READOUTS}, got {readout!r}")
    layers_arg = layers
    x1, x2, sym, act, sw, sb, depth, want_ntk, layers, record, block, per_task = _common(
        x1, x2, 3, activation, sigma_w2, sigma_b2, depth, ntk, layers, block_rows, rows_per_task
    )
    p = x1.shape[1]
    plan = _conv_plan(v, shape, p)
    per_pair = p * p if readout == "full" else 1
    _check_size(len(layers) * x1.shape[0] * x2.shape[0] * per_pair, want_ntk)
    d1, d2 = x1.shape[0], x2.shape[0]
    if act.is_builtin and act.code in _CLOSED_CODES:
        method = "closed"
        if per_task is None:
            traj = _conv_trajectories(act, sw, sb, x1, depth, plan)
            nngp, ntk_ = _conv_closed_rows(
                act, sw, sb, depth, x1, x2, sym, 0 if sym else -1, traj, plan, readout, block, record, want_ntk
            )
        else:
            nngp, ntk_ = _map_rows(
                _conv_task, x1, x2, sym, per_task, (act, sw, sb, depth), (plan, readout, block, record, want_ntk)
            )
    else:
        maps, method = _external_layer_maps()
        if maps is None:
            maps, method = quadrature_layer_maps, "quadrature"
        after = (plan, readout, maps, degree, record, want_ntk, block)
        if per_task is None:
            nngp, ntk_ = _general_task(act, sw, sb, depth, x1, x2, 0 if sym else -1, *after)
        else:
            nngp, ntk_ = _map_rows(_general_task, x1, x2, sym, per_task, (act, sw, sb, depth), after)
    if readout != "full":
        nngp = nngp.reshape(-1, d1, d2)
        ntk_ = None if ntk_ is None else ntk_.reshape(-1, d1, d2)
    return _finish(nngp, ntk_, layers, method, layers_arg is None)
