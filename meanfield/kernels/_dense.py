"""Dense networks: :func:`dense_kernels` (closed forms compiled; other activations by Mehler's formula) (private)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from ..gaussian import DEFAULT_DEGREE
from ._closed import _dense_kernel, _diag_trajectories, _gram_diag, _mirror
from ._common import (
    _CLOSED_CODES,
    DEFAULT_BLOCK_ROWS,
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
from ._general import _DENSE_PLAN, _general_diag, _general_task

if TYPE_CHECKING:  # annotations only
    from ..activations import Activation


def _dense_trajectories(act, sw, sb, x, depth):
    q0 = np.empty(x.shape[0])
    _gram_diag(x, sw, sb, q0)
    q = np.empty((depth + 1, x.shape[0]))
    t = np.empty_like(q)
    u = np.empty_like(q)
    _diag_trajectories(act.code, act.param, sw, sb, q0, depth, q, t, u)
    return q, t, u


def _dense_closed_rows(act, sw, sb, depth, x1, x2, sym, self_offset, traj1, block, record, want_ntk):
    """The compiled dense kernels of rows x1 (global rows from self_offset when x2 holds them)."""
    n_rec = int((record >= 0).sum())
    q1, t1, u1 = traj1
    _, _, u2 = traj1 if (sym or self_offset >= 0) else _dense_trajectories(act, sw, sb, x2, depth)
    nngp = np.empty((n_rec, x1.shape[0], x2.shape[0]))  # every entry is written (the lower triangle by _mirror)
    ntk = np.empty_like(nngp) if want_ntk else np.zeros((1, 1, 1))
    x2t = np.ascontiguousarray(x2.T)
    work = x1.shape[0] * x2.shape[0] * (depth + 1 + x1.shape[1] // 8)
    _run_tasks(
        _dense_kernel, _n_tasks(x1.shape[0], block, sym), work, act.code, act.param, sw, sb, depth, x1, x2t,
        u1, u2, t1, q1, sym, self_offset, block, record, want_ntk, nngp, ntk,
    )  # fmt: skip
    if sym:
        tiles = (x1.shape[0] + 63) // 64
        _run_tasks(_mirror, tiles, nngp.size, nngp)
        if want_ntk:
            _run_tasks(_mirror, tiles, ntk.size, ntk)
    return nngp, (ntk if want_ntk else None)


def _dense_task(act, sw, sb, depth, x1, x2, self_offset, block, record, want_ntk):
    """One Dask task: rows of x1 against every x2 (module-level: pickled by reference)."""
    if self_offset >= 0:  # x1 are rows self_offset.. of x2 (train/train)
        traj = _dense_trajectories(act, sw, sb, x2, depth)
    else:
        traj = _dense_trajectories(act, sw, sb, x1, depth)
    return _dense_closed_rows(act, sw, sb, depth, x1, x2, False, self_offset, traj, block, record, want_ntk)


def dense_kernels(
    x1: ArrayLike,
    x2: ArrayLike | None,
    activation: str | Activation,
    sigma_w2: float,
    sigma_b2: float,
    depth: int,
    *,
    ntk: bool = True,
    layers: int | tuple[int, ...] | None = None,
    block_rows: int = DEFAULT_BLOCK_ROWS,
    rows_per_task: int | None = None,
    degree: int = DEFAULT_DEGREE,
) -> DatasetKernels:
    r"""NNGP and NTK of a deep dense network between the rows of ``x1`` and ``x2`` (Lee et al. 2019, eq. 4).

    Parameters
    ----------
    x1 : array_like, shape (D1, n0)
        Inputs (e.g. the test set).
    x2 : array_like, shape (D2, n0), or None
        Inputs (e.g. the training set); None for ``x1`` against itself (train/train: only the
        upper triangle is computed, the result is exactly symmetric).
    activation : str or Activation
        Any activation; :data:`CLOSED_FORM` ones run compiled on all cores, the others through
        Mehler's formula, certified to 1e-10 per layer (see the module notes).
    sigma_w2, sigma_b2 : float
        Weight and bias variances (>= 0), as in :mod:`meanfield.dense`.
    depth : int
        Layers after the first (0 to :data:`MAX_DEPTH`): the kernels of ``depth`` hidden layers and a
        linear read-out, :math:`\Sigma^{depth+1}` and :math:`\Theta^{depth+1}` (``ntk[depth]`` of
        :func:`meanfield.ntk.propagate_ntk` started at ``meanfield.dense.input_covariance(x)``).
    ntk : bool
        Also compute the NTK (in the same pass; ``False`` halves the work of the update).
    layers : int or sequence of int, optional
        Layers to return (0..depth, increasing); default the last only.
    block_rows : int
        Rows per block of the compiled kernel (>= 1; no effect on the result).
    rows_per_task : int, optional
        Split the rows of ``x1`` into tasks of this many rows on the current executor
        (:func:`meanfield.parallel.using`, e.g. a Dask cluster); the result is the same bits for
        the closed forms (within the certified bound for Mehler's formula).
    degree : int
        Gauss-Hermite degree of the quadrature path.

    Returns
    -------
    DatasetKernels
        ``nngp``, ``ntk`` of shape (D1, D2), or (len(layers), D1, D2) when ``layers`` is given.

    Raises
    ------
    ValueError
        Wrong shapes, negative or non-finite variances, ``depth`` or ``layers`` out of range,
        outputs beyond :data:`MAX_OUTPUT_ELEMENTS`, kernels beyond the float64 range.
    TypeError
        Non-numeric arguments.

    Notes
    -----
    The recursion of the module notes (Jacot et al. 2018, Thm. 1; Arora et al. 2019, eq. 9); equal to
    :func:`meanfield.dense.propagate` and :func:`meanfield.ntk.propagate_ntk` to float64 rounding.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.random.default_rng(0).standard_normal((5, 3))
    >>> k = dense_kernels(x, None, "relu", 2.0, 0.0, 3)
    >>> k.nngp.shape, bool(np.allclose(np.diag(k.ntk), 4 * np.diag(k.nngp)))
    ((5, 5), True)
    """
    layers_arg = layers
    x1, x2, sym, act, sw, sb, depth, want_ntk, layers, record, block, per_task = _common(
        x1, x2, 2, activation, sigma_w2, sigma_b2, depth, ntk, layers, block_rows, rows_per_task
    )
    _check_size(len(layers) * x1.shape[0] * x2.shape[0], want_ntk)
    squeeze = layers_arg is None
    if act.is_builtin and act.code in _CLOSED_CODES:
        if per_task is None:
            traj = _dense_trajectories(act, sw, sb, x1, depth)
            nngp, ntk_ = _dense_closed_rows(
                act, sw, sb, depth, x1, x2, sym, 0 if sym else -1, traj, block, record, want_ntk
            )
        else:
            nngp, ntk_ = _map_rows(_dense_task, x1, x2, sym, per_task, (act, sw, sb, depth), (block, record, want_ntk))
        return _finish(nngp, ntk_, layers, "closed", squeeze)
    maps, name = _external_layer_maps()
    if maps is None:
        maps, name = quadrature_layer_maps, "quadrature"
    d1, d2 = x1.shape[0], x2.shape[0]
    if name == "mehler":  # whole layers at once: the coefficients of every input once per layer
        after = (maps, degree, record, want_ntk)
        if per_task is None:
            nngp, ntk_ = _mehler_dense_task(act, sw, sb, depth, x1, x2, 0 if sym else -1, *after)
        else:
            nngp, ntk_ = _map_rows(_mehler_dense_task, x1, x2, sym, per_task, (act, sw, sb, depth), after)
        return _finish(nngp, ntk_, layers, name, squeeze)
    after = (_DENSE_PLAN, "full", maps, degree, record, want_ntk, block)
    if per_task is None:
        nngp, ntk_ = _general_task(act, sw, sb, depth, x1[:, None, :], x2[:, None, :], 0 if sym else -1, *after)
    else:
        nngp, ntk_ = _map_rows(
            _general_task, x1[:, None, :], x2[:, None, :], sym, per_task, (act, sw, sb, depth), after
        )
    nngp = nngp.reshape(-1, d1, d2)
    ntk_ = None if ntk_ is None else ntk_.reshape(-1, d1, d2)
    return _finish(nngp, ntk_, layers, name, squeeze)


def _mehler_dense_task(act, sw, sb, depth, x1, x2, self_offset, maps, degree, record, want_ntk):
    """Rows of x1 (D1, n0) against x2 through dense layers with Mehler's pair map, a layer at a time.

    Every layer maps all D1 x D2 pairs in one call of ``maps``, so the Hermite coefficients of each
    input are computed once per layer (not once per block of rows), and a data set against itself
    (``x1 is x2``, ``self_offset = 0``) uses the symmetric form (pairs i <= j only). Scratch: a few
    D1 x D2 arrays. The per-pair arithmetic is that of :func:`_general_task` with the dense plan.
    """
    d1, d2 = x1.shape[0], x2.shape[0]
    full = self_offset == 0 and d1 == d2 and x1 is x2
    n_rec = int((record >= 0).sum())
    nngp = np.zeros((n_rec, d1, d2))
    ntk = np.zeros((n_rec, d1, d2)) if want_ntk else None
    q2, t2 = (a[:, :, 0] for a in _general_diag(act, sw, sb, x2[:, None, :], depth, _DENSE_PLAN, degree, want_ntk))
    if self_offset >= 0:
        rows = np.arange(d1) + self_offset
        q1, t1 = q2[:, rows], t2[:, rows]
        own = np.flatnonzero(rows < d2)
        cols = rows[own]
    else:
        q1, t1 = (a[:, :, 0] for a in _general_diag(act, sw, sb, x1[:, None, :], depth, _DENSE_PLAN, degree, want_ntk))
        own = cols = np.zeros(0, dtype=np.int64)
    g = (x1 @ x2.T) / x1.shape[1]
    if full:  # exactly symmetric: the symmetric form of the pair map applies
        g = np.triu(g) + np.triu(g, 1).T
    s = sw * g + sb
    th = s.copy()
    for layer in range(depth + 1):
        s[own, cols] = q1[layer, own]
        th[own, cols] = t1[layer, own]
        slot = record[layer]
        if slot >= 0:
            nngp[slot] = s
            if want_ntk:
                ntk[slot] = th
        if layer == depth:
            break
        sa, sbq = np.sqrt(q1[layer]), np.sqrt(q2[layer])
        den = sa[:, None] * sbq[None, :]
        with np.errstate(invalid="ignore", divide="ignore"):
            c = np.where(den > 0, s / np.where(den > 0, den, 1.0), 0.0).clip(-1.0, 1.0)
        c[own, cols] = np.where(q1[layer, own] > 0, 1.0, 0.0)
        res = maps(act, q1[layer], q2[layer], c, derivative=want_ntk)
        s_new = sw * res.kappa + sb
        if want_ntk:
            th = s_new + (sw * res.kappa_dot) * th
        s = s_new
    return nngp, ntk
