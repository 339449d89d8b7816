r"""Data-set kernels: the infinite-width NNGP and NTK between two sets of inputs.

For inputs :math:`x_1 \in \mathbb{R}^{D_1\times n_0}` and :math:`x_2 \in \mathbb{R}^{D_2\times n_0}`
this module computes the :math:`D_1\times D_2` blocks of the NNGP kernel :math:`\Sigma^{L+1}` and of
the neural tangent kernel :math:`\Theta^{L+1}` of a deep network (train/train when ``x2`` is
omitted, test/train otherwise), the inputs of kernel regression (:mod:`meanfield.kernel_regression`).
The recursions are those of :mod:`meanfield.dense` and :mod:`meanfield.ntk` (dense networks) and of
:mod:`meanfield.conv` and :func:`meanfield.ntk.propagate_conv_ntk` (periodic CNNs, Xiao et al. 2018):

.. math:: \Sigma^1_{ij} = \frac{\sigma_w^2}{n_0} x_i\cdot x_j + \sigma_b^2, \qquad \Theta^1 = \Sigma^1,

.. math:: \Sigma^{l+1}_{ij} = \sigma_w^2\,\kappa(q_i, q_j, c_{ij}) + \sigma_b^2, \qquad
    \Theta^{l+1}_{ij} = \Sigma^{l+1}_{ij} + \sigma_w^2\,\dot\kappa(q_i, q_j, c_{ij})\,\Theta^l_{ij},

with :math:`\kappa = \mathbb{E}\,\phi(u)\phi(v)`, :math:`\dot\kappa = \mathbb{E}\,\phi'(u)\phi'(v)`,
:math:`(u, v) \sim N(0, [[q_i, c_{ij}\sqrt{q_iq_j}], [\cdot, q_j]])`, :math:`q_i = \Sigma^l_{ii}`
(Jacot et al. 2018; Arora et al. 2019, eq. 9; Lee et al. 2019, eq. 4). For a periodic CNN every input
pair carries a :math:`P\times P` block over positions, mapped entrywise by the same pair map and then
averaged, :math:`\Sigma^{l+1} = \mathcal{A}_v\star(\sigma_w^2\kappa) + \sigma_b^2` and
:math:`\Theta^{l+1} = \Sigma^{l+1} + \mathcal{A}_v\star(\sigma_w^2\dot\kappa\odot\Theta^l)` (Xiao et al.
2018, eqs. 2.3-2.5; :func:`meanfield.ntk.conv_ntk_map`).

How it is computed. Given the per-input variances :math:`q^l_i` (a cheap pass over the inputs),
every pair evolves independently through depth, so the work is a throughput problem: the rows of
``x1`` are cut into blocks of ``block_rows`` rows, the blocks run on all cores (compiled kernels that release the GIL, one thread per core),
and within a row every layer streams once over the row's columns; the NNGP and the NTK are updated
in the same pass from one evaluation of the closed-form pair map (:func:`closed_layer_maps`: the
arcsine kernel for erf, the arc-cosine kernel for relu / leaky relu, linear). Memory is the output
arrays plus O(``block_rows`` x D2) scratch (the per-input trajectories are O((depth + 1)(D1 + D2))).
Every pair's arithmetic is a fixed, symmetric function of the pair's inputs, so the result does not
depend on the block size, on the number of threads, on the split into Dask tasks
(``rows_per_task``, through :mod:`meanfield.parallel`) or on the order of the inputs, bit for bit.

Activations without a closed form (tanh, sigmoid, softplus, swish, gelu, user activations) go
through Mehler's formula (``meanfield._mehler.mehler_layer_maps``, as in
:func:`meanfield.mehler.propagate_mehler`): Hermite coefficients once per input, a short series per
pair, each layer certified to ``rtol`` of ``sqrt(K_ii K_jj)``; pairs it cannot certify (correlations
near 1 that the series reaches too slowly) fall back to the per-pair quadrature
(:func:`quadrature_layer_maps`), so the speed depends on how many pairs are nearly parallel.

Relation to :func:`meanfield.dense.propagate` and :func:`meanfield.ntk.propagate_ntk`: those carry the
whole (depth + 1, D, D) trajectory on a log scale (a normalised matrix times a scale, to reach any
depth without overflow) and run on one core; the kernels here carry the last layer's (or the
``layers`` chosen) values in plain float64. The two agree to float64 rounding (the tests bound the
difference by :data:`ROUNDING_RTOL` per layer), not bit for bit.

Code name <-> symbol: ``nngp`` = :math:`\Sigma^{L+1}` (= :math:`\mathcal{K}` of Lee et al. 2019),
``ntk`` = :math:`\Theta^{L+1}`, ``kappa`` = :math:`\kappa`, ``kappa_dot`` = :math:`\dot\kappa`.

References
----------
Jacot, Gabriel, Hongler (2018), "Neural tangent kernel". Lee et al. (2018), "Deep neural networks as
Gaussian processes". Arora et al. (2019), "On exact computation with an infinitely wide neural net".
Lee et al. (2019), "Wide neural networks of any depth evolve as linear models under gradient
descent". Xiao, Bahri, Sohl-Dickstein, Schoenholz, Pennington (2018), "Dynamical isometry and a
mean field theory of CNNs", Sec. 2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numba
import numpy as np
from numpy.typing import ArrayLike

from ._checks import as_real_array, check_bool, check_int, check_nonnegative_scalar, check_probability_vector
from ._results import Result
from .activations import ERF, LEAKY_RELU, LINEAR, RELU, get_activation
from .gaussian import DEFAULT_DEGREE, expectation, pair_expectation

if TYPE_CHECKING:  # annotations only
    from .activations import Activation

__all__ = [
    "CLOSED_FORM",
    "DEFAULT_BLOCK_ROWS",
    "MAX_DEPTH",
    "MAX_OUTPUT_ELEMENTS",
    "PARALLEL_MIN_WORK",
    "READOUTS",
    "ROUNDING_RTOL",
    "DatasetKernels",
    "LayerMaps",
    "closed_layer_maps",
    "conv_kernels",
    "dense_kernels",
    "quadrature_layer_maps",
]

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

_INV_2PI = 1.0 / (2.0 * math.pi)
_TWO_PI = 2.0 / math.pi
_FOUR_PI = 4.0 / math.pi


@dataclass(frozen=True)
class LayerMaps(Result):
    r"""The pair map of one layer for every pair of two sets of inputs (see :func:`closed_layer_maps`).

    Attributes
    ----------
    kappa : ndarray, shape (D1, D2)
        :math:`\kappa_{ij} = \mathbb{E}\,\phi(u)\phi(v)`.
    kappa_dot : ndarray, shape (D1, D2) or None
        :math:`\dot\kappa_{ij} = \mathbb{E}\,\phi'(u)\phi'(v)` (None when not asked for).
    error : float
        A bound on the absolute error of every entry (0 for closed forms up to rounding; NaN where
        the method gives none, e.g. the Gauss-Hermite quadrature).
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
# The compiled pair map (closed forms) and its per-input helper.


# fdlibm's rational approximation of asin (e_asin.c, Sun Microsystems 1993): the same
# coefficients for asin and acos; written without data-dependent branches (both halves computed,
# one selected) so that the compiled loops over a row vectorise. Error below 2 ulp (the test pins it).
_PIO2_HI = 1.57079632679489655800e00
_PIO2_LO = 6.12323399573676603587e-17
_PS0 = 1.66666666666666657415e-01
_PS1 = -3.25565818622400915405e-01
_PS2 = 2.01212532134862925881e-01
_PS3 = -4.00555345006794114027e-02
_PS4 = 7.91534994289814532176e-04
_PS5 = 3.47933107596021167570e-05
_QS1 = -2.40339491173441421878e00
_QS2 = 2.02094576023350569471e00
_QS3 = -6.88283971605453293030e-01
_QS4 = 7.70381505559019352791e-02


@numba.njit(inline="always")
def _rat(t):
    """fdlibm's R(t) = P(t) / Q(t), asin(x) = x + x R(x^2) for |x| <= 0.5."""
    p = t * (_PS0 + t * (_PS1 + t * (_PS2 + t * (_PS3 + t * (_PS4 + t * _PS5)))))
    q = 1.0 + t * (_QS1 + t * (_QS2 + t * (_QS3 + t * _QS4)))
    return p / q


@numba.njit(inline="always")
def _reduced(x):
    """(|x|, |x| < 0.5, R(t), sqrt(t)) with t = x^2 below 0.5, (1 - |x|)/2 above (fdlibm's reduction)."""
    ax = abs(x)
    small = ax < 0.5
    t = x * x if small else (1.0 - ax) * 0.5
    return ax, small, _rat(t), math.sqrt(t)


@numba.njit(inline="always")
def _asin(x):
    """arcsin on [-1, 1] (branch-free fdlibm)."""
    ax, small, r, s = _reduced(x)
    big = _PIO2_HI - (2.0 * (s + s * r) - _PIO2_LO)
    out = ax + ax * r if small else big
    return out if x >= 0.0 else -out


@numba.njit(inline="always")
def _acos(x):
    """arccos on [-1, 1] (branch-free fdlibm)."""
    _, small, r, s = _reduced(x)
    mid = _PIO2_HI - (x - (_PIO2_LO - x * r))
    w = r * s
    neg = math.pi - 2.0 * (s + (w - _PIO2_LO))
    pos = 2.0 * (s + w)
    return mid if small else (pos if x > 0.0 else neg)


@numba.njit(inline="always")
def _aux(code, q):
    """The per-input factor of the pair map: 1/sqrt(1 + 2q) (erf), sqrt(q) (the others)."""
    if code == ERF:
        return 1.0 / math.sqrt(1.0 + 2.0 * q)
    return math.sqrt(max(q, 0.0))


@numba.njit(inline="always")
def _pair(code, a, s, ui, uj):
    """(kappa, kappa_dot) at the covariance s of two inputs with per-input factors ui, uj (:func:`_aux`).

    Symmetric in (ui, uj) operation by operation (only the product ui * uj enters), so K(x, y)
    and K(y, x) are the same bits.
    """
    uu = ui * uj
    if code == ERF:  # r = 2 c sqrt(q1/(1+2q1)) sqrt(q2/(1+2q2)) = 2 s / sqrt((1+2q1)(1+2q2))
        r = 2.0 * s * uu
        r = min(1.0, max(-1.0, r))
        om = (1.0 - r) * (1.0 + r)  # 1 - r^2 = det / ((1+2q1)(1+2q2))
        kd = _FOUR_PI * uu / math.sqrt(om) if om > 0.0 else math.inf
        return _TWO_PI * _asin(r), kd
    if code == LINEAR:
        return s, 1.0
    # relu, leaky relu: the arc-cosine kernel (Cho & Saul 2009), uu = sqrt(q1) sqrt(q2)
    c = 0.0
    if uu > 0.0:
        c = min(1.0, max(-1.0, s / uu))
    return _arccos_pair(code, a, uu, c)


@numba.njit(inline="always")
def _arccos_pair(code, a, uu, c):
    """(kappa, kappa_dot) of relu / leaky relu at correlation c, uu = sqrt(q1) sqrt(q2)."""
    if code == RELU:
        a = 0.0
    theta = _acos(c)
    sine = math.sqrt(max(0.0, 1.0 - c * c))
    k = uu * _INV_2PI * (sine + (math.pi - theta) * c)
    kap = (1.0 - a) * (1.0 - a) * k + a * c * uu
    kd = ((1.0 + a * a) * (math.pi - theta) + 2.0 * a * theta) * _INV_2PI
    return kap, kd


@numba.njit(inline="always")
def _single(code, a, q, u):
    """(kappa, kappa_dot) of an input with itself (variance q, factor u = _aux(code, q))."""
    if code == ERF:
        return _TWO_PI * _asin(2.0 * q / (1.0 + 2.0 * q)), _FOUR_PI / math.sqrt(1.0 + 4.0 * q)
    if code == LINEAR:
        return q, 1.0
    return _arccos_pair(code, a, u * u, 1.0)  # c = 1 exactly (acos is not Lipschitz at 1)


@numba.njit(cache=True, error_model="numpy")
def _diag_trajectories(code, a, sw, sb, q0, depth, q, t, u):
    """Per-input variances q[l, i], NTK diagonals t[l, i] and factors u[l, i] through depth."""
    for i in range(q0.size):
        qi = q0[i]
        ti = qi
        for layer in range(depth + 1):
            ui = _aux(code, qi)
            q[layer, i] = qi
            t[layer, i] = ti
            u[layer, i] = ui
            kap, kd = _single(code, a, qi, ui)
            qi = sw * kap + sb
            ti = qi + (sw * kd) * ti


@numba.njit(cache=True, error_model="numpy")
def _gram_diag(x, sw, sb, out):
    """out[i] = sw * (x_i . x_i) / n0 + sb, the sum in the order of _dense_rows."""
    n0 = x.shape[1]
    for i in range(x.shape[0]):
        acc = 0.0
        for k in range(n0):
            acc += x[i, k] * x[i, k]
        out[i] = sw * (acc / n0) + sb


@numba.njit(inline="always")
def _closed_layer(code, a, sw, sb, ui, u, s, th, want_ntk):
    """One layer of a row: s <- sw kappa + sb, th <- s + sw kappa_dot th (``code`` a constant at each
    call site, so each loop compiles branch-free and vectorises; kappa_dot is dead code without the NTK)."""
    if want_ntk:
        for j in range(s.size):
            kap, kd = _pair(code, a, s[j], ui, u[j])
            sn = sw * kap + sb
            th[j] = sn + (sw * kd) * th[j]
            s[j] = sn
    else:
        for j in range(s.size):
            kap, kd = _pair(code, a, s[j], ui, u[j])
            s[j] = sw * kap + sb


@numba.njit(inline="always")
def _linear_layer(sw, sb, s, th):
    for j in range(s.size):
        sn = sw * s[j] + sb
        th[j] = sn + sw * th[j]
        s[j] = sn


@numba.njit(inline="always")
def _dense_row(
    code, a, sw, sb, depth, x1, i, x2t, j0, self_j, u1, gi, u2, t1, q1, record, want_ntk, s_all, th_all, nngp, ntk
):
    """Row i of the dense kernels (global input gi), columns j0..D2-1; self_j: the column holding the
    same input (its values are the per-input trajectories, exactly), or -1.

    Every loop runs over views starting at j0 (a loop index that cannot be negative: the loops
    vectorise, Numba's negative-index wraparound would prevent it)."""
    d2 = x2t.shape[1]
    n0 = x2t.shape[0]
    s = s_all[j0:d2]  # s_all holds the row's Gram sums x_i . x_j (see _dense_block_task)
    th = th_all[j0:d2]
    sj = self_j - j0
    if code == RELU:
        a = 0.0
    for j in range(s.size):
        s[j] = sw * (s[j] / n0) + sb
        th[j] = s[j]
    for layer in range(depth + 1):
        if self_j >= 0:
            s[sj] = q1[layer, gi]
            th[sj] = t1[layer, gi]
        slot = record[layer]
        if slot >= 0:
            out = nngp[slot, i, j0:d2]
            for j in range(s.size):
                out[j] = s[j]
            if want_ntk:
                out = ntk[slot, i, j0:d2]
                for j in range(s.size):
                    out[j] = th[j]
        if layer == depth:
            break
        ui = u1[layer, gi]
        u = u2[layer, j0:d2]
        # one loop per activation family and NTK flag: branch-free bodies that vectorise
        if code == ERF:
            _closed_layer(ERF, a, sw, sb, ui, u, s, th, want_ntk)
        elif code == LINEAR:
            _linear_layer(sw, sb, s, th)
        else:
            _closed_layer(LEAKY_RELU, a, sw, sb, ui, u, s, th, want_ntk)


@numba.njit(inline="always")
def _dense_block_task(
    task, code, a, sw, sb, depth, x1, x2t, u1, u2, t1, q1, sym, self_offset, block, record, want_ntk, nngp, ntk
):
    """Task ``task`` of :func:`_dense_kernel`: row block ``task`` (and, when ``sym``, block nb - 1 - task)."""
    d1 = x1.shape[0]
    d2 = x2t.shape[1]
    n0 = x2t.shape[0]
    nb = (d1 + block - 1) // block
    gram = np.empty((block, d2))  # O(block x D2) scratch: the block's Gram rows, then each row's state
    th = np.empty(d2)
    for which in range(2):
        b = task if which == 0 else nb - 1 - task
        if which == 1 and (not sym or b == task):
            break
        i0 = b * block
        i1 = min(i0 + block, d1)
        jb = i0 if sym else 0
        for r in range(i1 - i0):
            g = gram[r, jb:d2]
            for j in range(g.size):
                g[j] = 0.0
        # the block's Gram rows, column-wise in k order: each x2 row is read once per block (not once
        # per row), and every entry is the same sequential sum over k whatever the block
        for k in range(n0):
            xk = x2t[k, jb:d2]
            for r in range(i1 - i0):
                xik = x1[i0 + r, k]
                g = gram[r, jb:d2]
                for j in range(g.size):
                    g[j] += xik * xk[j]
        for i in range(i0, i1):
            gi = i + max(self_offset, 0)
            self_j = gi if self_offset >= 0 else -1
            j0 = i if sym else 0
            _dense_row(
                code, a, sw, sb, depth, x1, i, x2t, j0, self_j, u1, gi, u2, t1, q1, record, want_ntk, gram[i - i0],
                th, nngp, ntk,
            )  # fmt: skip


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _dense_kernel(
    task0, task1, code, a, sw, sb, depth, x1, x2t, u1, u2, t1, q1, sym, self_offset, block, record, want_ntk, nngp, ntk
):
    """Tasks task0..task1-1 of the dense NNGP/NTK rows (blocks of ``block`` rows; :func:`_run_tasks`
    runs ranges of tasks on all cores, the GIL released).

    Row i is the global input ``gi = i + self_offset`` of the trajectories ``u1, t1, q1``; with
    ``self_offset >= 0`` x2 holds the same inputs as the trajectories and column gi is the input
    itself. ``sym``: x2 is x1, only the upper triangle j >= i is computed (the caller mirrors
    it) and task b runs blocks b and nb - 1 - b so that every task has the same work.
    """
    for task in range(task0, task1):
        _dense_block_task(
            task, code, a, sw, sb, depth, x1, x2t, u1, u2, t1, q1, sym, self_offset, block, record, want_ntk, nngp, ntk
        )


@numba.njit(inline="always")
def _mirror_tile(out, ti, tile):
    n = out.shape[1]
    for m in range(out.shape[0]):
        for tj in range(ti + 1):
            for i in range(ti * tile, min((ti + 1) * tile, n)):
                for j in range(tj * tile, min((tj + 1) * tile, i)):
                    out[m, i, j] = out[m, j, i]


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _mirror(task0, task1, out):
    """out[:, i, j] = out[:, j, i] for j < i (the upper triangle onto the lower), row tiles task0..task1-1 of 64."""
    for ti in range(task0, task1):
        _mirror_tile(out, ti, 64)


# ----------------------------------------------------------------------------------------------
# Periodic CNNs: a P x P block per input pair.


@numba.njit(inline="always")
def _average_into(src, index, weight, sb, out):
    """out[m] = sum_o weight[o] src[index[o, m]] + sb (the sum in plan order, from 0)."""
    for m in range(out.size):
        acc = 0.0
        for o in range(weight.size):
            acc += weight[o] * src[index[o, m]]
        out[m] = acc + sb


@numba.njit(cache=True, error_model="numpy")
def _conv_diag_trajectories(code, a, sw, sb, x, depth, index, weight, q, t, u):
    """Per-input, per-position variances q[l, i, alpha], NTK diagonals t and factors u through depth.

    Only the diagonal of the averaging enters: the diagonal entry (alpha, alpha) of the plan reads
    diagonal entries (alpha + beta, alpha + beta) only.
    """
    d, p, c0 = x.shape
    n_off = weight.size
    dg = np.empty(p)  # diagonal plan: position alpha reads position dpos[o, alpha]
    dpos = np.empty((n_off, p), dtype=np.int64)
    for o in range(n_off):
        for al in range(p):
            dpos[o, al] = index[o, al * p + al] // p
    m1 = np.empty(p)
    m2 = np.empty(p)
    for i in range(d):
        for al in range(p):
            acc = 0.0
            for k in range(c0):
                acc += x[i, al, k] * x[i, al, k]
            dg[al] = acc / c0
        for al in range(p):
            acc = 0.0
            for o in range(n_off):
                acc += weight[o] * dg[dpos[o, al]]
            q[0, i, al] = sw * acc + sb
            t[0, i, al] = q[0, i, al]
        for layer in range(depth + 1):
            for al in range(p):
                u[layer, i, al] = _aux(code, q[layer, i, al])
            if layer == depth:
                break
            for al in range(p):
                kap, kd = _single(code, a, q[layer, i, al], u[layer, i, al])
                m1[al] = sw * kap + sb
                m2[al] = (sw * kd) * t[layer, i, al]
            for al in range(p):
                acc = 0.0
                acc2 = 0.0
                for o in range(n_off):
                    acc += weight[o] * m1[dpos[o, al]]
                    acc2 += weight[o] * m2[dpos[o, al]]
                q[layer + 1, i, al] = acc
                t[layer + 1, i, al] = acc + acc2


@numba.njit(inline="always")
def _conv_pair_diagonal(
    code, a, sw, sb, depth, x1, i, gi, x2, j, selfpair, u1, u2, q1, t1, index, weight, record, want_ntk,
    g, s, th, m1, m2, nngp, ntk,
):  # fmt: skip
    """:func:`_conv_pair` for the flatten read-out: the diagonal (alpha, alpha) of a block depends on
    the diagonal of the layer below only (the averaging shifts both positions alike; Novak et al.
    2019), so P entries per layer are carried instead of P^2 (the same bits as the full blocks)."""
    p = x1.shape[1]
    c0 = x1.shape[2]
    n_off = weight.size
    for al in range(p):
        acc = 0.0
        for k in range(c0):
            acc += x1[i, al, k] * x2[j, al, k]
        g[al] = acc / c0
    for o in range(n_off):  # diagonal plan: entry alpha reads entry dpos[o, alpha], kept in g[p:]
        for al in range(p):
            g[p + o * p + al] = index[o, al * p + al] // p
    for al in range(p):
        acc = 0.0
        for o in range(n_off):
            acc += weight[o] * g[int(g[p + o * p + al])]
        s[al] = sw * acc + sb
        th[al] = s[al]
    for layer in range(depth + 1):
        if selfpair:
            for al in range(p):
                s[al] = q1[layer, gi, al]
                th[al] = t1[layer, gi, al]
        slot = record[layer]
        if slot >= 0:
            acc = 0.0
            acc2 = 0.0
            for al in range(p):
                acc += s[al]
                acc2 += th[al]
            nngp[slot, i, 0, j, 0] = acc / p
            if want_ntk:
                ntk[slot, i, 0, j, 0] = acc2 / p
        if layer == depth:
            break
        for al in range(p):
            kap, kd = _pair(code, a, s[al], u1[layer, gi, al], u2[layer, j, al])
            m1[al] = sw * kap + sb
            m2[al] = (sw * kd) * th[al]
        for al in range(p):
            acc = 0.0
            acc2 = 0.0
            for o in range(n_off):
                src = int(g[p + o * p + al])
                acc += weight[o] * m1[src]
                acc2 += weight[o] * m2[src]
            s[al] = acc
            th[al] = acc + acc2


@numba.njit(inline="always")
def _conv_pair(
    code, a, sw, sb, depth, x1, i, gi, x2, j, selfpair, u1, u2, q1, t1, index, weight, record, readout,
    want_ntk, g, s, th, m1, m2, nngp, ntk,
):  # fmt: skip
    """The P x P blocks of input pair (i, j) through depth; records the read-out of each chosen layer."""
    p = x1.shape[1]
    c0 = x1.shape[2]
    if readout == 0:
        _conv_pair_diagonal(
            code, a, sw, sb, depth, x1, i, gi, x2, j, selfpair, u1, u2, q1, t1, index, weight, record, want_ntk,
            g, s, th, m1, m2, nngp, ntk,
        )  # fmt: skip
        return
    for al in range(p):
        for be in range(p):
            acc = 0.0
            for k in range(c0):
                acc += x1[i, al, k] * x2[j, be, k]
            g[al * p + be] = acc / c0
    n_off = weight.size
    for m in range(p * p):
        acc = 0.0
        for o in range(n_off):
            acc += weight[o] * g[index[o, m]]
        s[m] = sw * acc + sb
        th[m] = s[m]
    for layer in range(depth + 1):
        if selfpair:
            for al in range(p):
                s[al * p + al] = q1[layer, gi, al]
                th[al * p + al] = t1[layer, gi, al]
        slot = record[layer]
        if slot >= 0:
            if readout == 2:  # full
                for al in range(p):
                    for be in range(p):
                        nngp[slot, i, al, j, be] = s[al * p + be]
                        if want_ntk:
                            ntk[slot, i, al, j, be] = th[al * p + be]
            else:
                acc = 0.0
                acc2 = 0.0
                if readout == 0:  # flatten: the mean of the diagonal (alpha, alpha)
                    for al in range(p):
                        acc += s[al * p + al]
                        acc2 += th[al * p + al]
                    nngp[slot, i, 0, j, 0] = acc / p
                    if want_ntk:
                        ntk[slot, i, 0, j, 0] = acc2 / p
                else:  # gap: the mean of every (alpha, alpha'), summed in an order symmetric under transposition
                    for al in range(p):
                        acc += s[al * p + al]
                        acc2 += th[al * p + al]
                        for be in range(al + 1, p):
                            acc += s[al * p + be] + s[be * p + al]
                            acc2 += th[al * p + be] + th[be * p + al]
                    nngp[slot, i, 0, j, 0] = acc / (p * p)
                    if want_ntk:
                        ntk[slot, i, 0, j, 0] = acc2 / (p * p)
        if layer == depth:
            break
        for al in range(p):
            ua = u1[layer, gi, al]
            for be in range(p):
                m = al * p + be
                kap, kd = _pair(code, a, s[m], ua, u2[layer, j, be])
                m1[m] = sw * kap + sb
                m2[m] = (sw * kd) * th[m]
        for m in range(p * p):
            acc = 0.0
            acc2 = 0.0
            for o in range(n_off):
                acc += weight[o] * m1[index[o, m]]
                acc2 += weight[o] * m2[index[o, m]]
            s[m] = acc
            th[m] = acc + acc2


@numba.njit(inline="always")
def _conv_block_task(
    task, code, a, sw, sb, depth, x1, x2, u1, u2, q1, t1, index, weight, sym, self_offset, block, record,
    readout, want_ntk, nngp, ntk,
):  # fmt: skip
    d1 = x1.shape[0]
    d2 = x2.shape[0]
    p = x1.shape[1]
    nb = (d1 + block - 1) // block
    g = np.empty(p * p + p * (weight.size + 1))  # the Gram block (or the diagonal and its plan)
    s = np.empty(p * p)
    th = np.empty(p * p)
    m1 = np.empty(p * p)
    m2 = np.empty(p * p)
    for which in range(2):
        b = task if which == 0 else nb - 1 - task
        if which == 1 and (not sym or b == task):
            break
        for i in range(b * block, min((b + 1) * block, d1)):
            gi = i + max(self_offset, 0)
            j0 = i if sym else 0
            for j in range(j0, d2):
                selfpair = self_offset >= 0 and j == gi
                _conv_pair(
                    code, a, sw, sb, depth, x1, i, gi, x2, j, selfpair, u1, u2, q1, t1, index, weight, record,
                    readout, want_ntk, g, s, th, m1, m2, nngp, ntk,
                )  # fmt: skip


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _conv_kernel(
    task0, task1, code, a, sw, sb, depth, x1, x2, u1, u2, q1, t1, index, weight, sym, self_offset, block,
    record, readout, want_ntk, nngp, ntk,
):  # fmt: skip
    """Tasks task0..task1-1 of the CNN kernels (``sym``, ``self_offset`` as :func:`_dense_kernel`)."""
    for task in range(task0, task1):
        _conv_block_task(
            task, code, a, sw, sb, depth, x1, x2, u1, u2, q1, t1, index, weight, sym, self_offset, block,
            record, readout, want_ntk, nngp, ntk,
        )  # fmt: skip


@numba.njit(cache=True, error_model="numpy")
def _mirror_blocks(out):
    """out[:, i, :, j, :] = out[:, j, :, i, :].T for j < i (the (D, P, D, P) upper triangle onto the lower)."""
    n = out.shape[1]
    p = out.shape[2]
    for i in range(n):
        for m in range(out.shape[0]):
            for j in range(i):
                for al in range(p):
                    for be in range(p):
                        out[m, i, al, j, be] = out[m, j, be, i, al]


@numba.njit(cache=True, error_model="numpy")
def _closed_maps_kernel(code, a, q1, q2, c, kappa, kappa_dot):
    for m in range(kappa.size):
        u1 = _aux(code, q1[m])
        u2 = _aux(code, q2[m])
        s = c[m] * (math.sqrt(q1[m]) * math.sqrt(q2[m]))
        kappa[m], kappa_dot[m] = _pair(code, a, s, u1, u2)


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
        Unused by the fixed-degree quadrature (> 0); ``degree`` sets its accuracy.
    derivative : bool
    degree : int
        Gauss-Hermite degree per dimension.

    Returns
    -------
    LayerMaps
        ``error`` is None: the fixed-degree quadrature gives no bound (measured: erf 3e-14,
        ReLU 4e-4 at 128 nodes).

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
    from ._mehler import mehler_layer_maps

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


# ----------------------------------------------------------------------------------------------
# Dense networks.


#: Pair-layer updates below which the compiled kernels run on one core (a parallel launch costs
#: tens of microseconds on a quiet machine, milliseconds on a loaded one; the results are the same bits).
PARALLEL_MIN_WORK = 2_000_000


def _n_tasks(d1, block, sym):
    nb = (d1 + block - 1) // block
    return (nb + 1) // 2 if sym else nb


def _run_tasks(kernel, n_tasks, work, *args):
    """``kernel(t0, t1, *args)`` over ranges covering ``range(n_tasks)``: in this thread for small
    ``work``, else on ``numba.get_num_threads()`` threads (the kernels release the GIL). Every task
    writes its own rows, so the result is the same bits either way."""
    n_threads = min(numba.get_num_threads(), n_tasks)
    if work < PARALLEL_MIN_WORK or n_threads <= 1:
        kernel(0, n_tasks, *args)
        return
    from concurrent.futures import ThreadPoolExecutor

    n_chunks = min(n_tasks, 4 * n_threads)  # a few chunks per thread: balance on a shared machine
    edges = np.linspace(0, n_tasks, n_chunks + 1).astype(np.int64)
    with ThreadPoolExecutor(n_threads) as pool:
        for f in [pool.submit(kernel, int(edges[k]), int(edges[k + 1]), *args) for k in range(n_chunks)]:
            f.result()


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


def _map_rows(task, x1, x2, sym, rows_per_task, args_before, args_after):
    from .parallel import chunk_ranges, map_chunks

    ranges = chunk_ranges(x1.shape[0], rows_per_task)
    parts = map_chunks(task, [(*args_before, x1[a:b], x2, a if sym else -1, *args_after) for a, b in ranges])
    nngp = np.concatenate([p[0] for p in parts], axis=1)
    ntk = None if parts[0][1] is None else np.concatenate([p[1] for p in parts], axis=1)
    return nngp, ntk


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
        A built-in activation; :data:`CLOSED_FORM` ones run compiled on all cores, the others
        through a per-pair quadrature (see the module notes: slow).
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
        (:func:`meanfield.parallel.using`, e.g. a Dask cluster); the result is the same bits.
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


# ----------------------------------------------------------------------------------------------
# The general path: any pair map, one layer at a time per row block (NumPy).

_DENSE_PLAN = (np.zeros((1, 1), dtype=np.int64), np.ones(1))


def _plan_average(src, index, weight, sb):
    """sum_o weight[o] src[..., index[o]] + sb over the flattened P^2 last axis (plan order, from 0)."""
    out = np.zeros_like(src)
    for o in range(weight.size):
        out += weight[o] * src[..., index[o]]
    return out + sb if sb != 0.0 else out


def _general_diag(act, sw, sb, x, depth, plan, degree):
    """Per-input, per-position variances and NTK diagonals (depth + 1, D, P) by the library's quadrature."""
    index, weight = plan
    d, p, c0 = x.shape
    dpos = index[:, np.arange(p) * p + np.arange(p)] // p  # the diagonal entries of the plan
    g = np.einsum("dpc,dpc->dp", x, x) / c0
    q = np.empty((depth + 1, d, p))
    t = np.empty_like(q)
    q[0] = sw * sum(weight[o] * g[:, dpos[o]] for o in range(weight.size)) + sb
    t[0] = q[0]
    for layer in range(depth):
        kap = np.asarray(expectation(act, q[layer], (0, 0), degree))
        kd = np.asarray(expectation(act, q[layer], (1, 1), degree))
        m1 = sw * kap + sb
        m2 = (sw * kd) * t[layer]
        q[layer + 1] = sum(weight[o] * m1[:, dpos[o]] for o in range(weight.size))
        t[layer + 1] = q[layer + 1] + sum(weight[o] * m2[:, dpos[o]] for o in range(weight.size))
    return q, t


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
    q2, t2 = (a[:, :, 0] for a in _general_diag(act, sw, sb, x2[:, None, :], depth, _DENSE_PLAN, degree))
    if self_offset >= 0:
        rows = np.arange(d1) + self_offset
        q1, t1 = q2[:, rows], t2[:, rows]
        own = np.flatnonzero(rows < d2)
        cols = rows[own]
    else:
        q1, t1 = (a[:, :, 0] for a in _general_diag(act, sw, sb, x1[:, None, :], depth, _DENSE_PLAN, degree))
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


def _general_task(act, sw, sb, depth, x1, x2, self_offset, plan, readout, maps, degree, record, want_ntk, block):
    """Rows of x1 (D1, P, c0) against x2 with the pair map ``maps``, layer by layer per block of rows."""
    index, weight = plan
    d1, p, c0 = x1.shape
    d2 = x2.shape[0]
    n_rec = int((record >= 0).sum())
    shape_out = (n_rec, d1, p, d2, p) if readout == "full" else (n_rec, d1, 1, d2, 1)
    nngp = np.zeros(shape_out)
    ntk = np.zeros(shape_out) if want_ntk else None
    if maps is quadrature_layer_maps:

        def pair_maps(q1, q2, c):
            return quadrature_layer_maps(act, q1, q2, c, derivative=want_ntk, degree=degree)

    else:

        def pair_maps(q1, q2, c):
            # (B, D2, P, P) broadcast blocks -> the (rows, columns) form of the pair map: a row per
            # (input, position) of the block, a column per (input, position) of x2.
            nb, nd2, npos = c.shape[0], c.shape[1], c.shape[2]
            cc = np.ascontiguousarray(c.transpose(0, 2, 1, 3).reshape(nb * npos, nd2 * npos))
            res = maps(act, q1[:, 0, :, 0].reshape(-1), q2[0, :, 0, :].reshape(-1), cc, derivative=want_ntk)

            def back(a):
                return None if a is None else a.reshape(nb, npos, nd2, npos).transpose(0, 2, 1, 3)

            return LayerMaps(kappa=back(res.kappa), kappa_dot=back(res.kappa_dot), error=res.error_bound)

    q2, t2 = _general_diag(act, sw, sb, x2, depth, plan, degree)
    if self_offset >= 0:
        q1, t1 = q2, t2
    else:
        q1, t1 = _general_diag(act, sw, sb, x1, depth, plan, degree)
    diag = np.arange(p) * (p + 1)
    for b0 in range(0, d1, block):
        b1 = min(b0 + block, d1)
        rows = np.arange(b0, b1) + max(self_offset, 0)
        g = np.einsum("iac,jbc->ijab", x1[b0:b1], x2) / c0  # (B, D2, P, P)
        s = sw * _plan_average(g.reshape(b1 - b0, d2, p * p), index, weight, 0.0) + sb
        th = s.copy()
        selfs = [(k, gi) for k, gi in enumerate(rows) if self_offset >= 0 and gi < d2]
        for layer in range(depth + 1):
            for k, gi in selfs:
                s[k, gi, diag] = q1[layer, gi]
                th[k, gi, diag] = t1[layer, gi]
            slot = record[layer]
            if slot >= 0:
                for arr, out in ((s, nngp), (th, ntk)):
                    if out is None:
                        continue
                    blk = arr.reshape(b1 - b0, d2, p, p)
                    if readout == "full":
                        out[slot, b0:b1] = blk.transpose(0, 2, 1, 3)
                    elif readout == "flatten":
                        out[slot, b0:b1, 0, :, 0] = blk[..., np.arange(p), np.arange(p)].mean(axis=-1)
                    else:
                        out[slot, b0:b1, 0, :, 0] = blk.mean(axis=(-2, -1))
            if layer == depth:
                break
            qa = q1[layer, rows][:, None, :, None]  # (B, 1, P, 1)
            qb = q2[layer][None, :, None, :]  # (1, D2, 1, P)
            sa, sbq = np.sqrt(qa), np.sqrt(qb)
            den = (sa * sbq) * np.ones((1, 1, 1, 1))
            blk = s.reshape(b1 - b0, d2, p, p)
            with np.errstate(invalid="ignore", divide="ignore"):
                c = np.where(den > 0, blk / np.where(den > 0, den, 1.0), 0.0).clip(-1.0, 1.0)
            qa_b, qb_b = np.broadcast_arrays(qa, qb, c)[:2]
            res = pair_maps(qa_b, qb_b, c)
            m1 = (sw * res.kappa + sb).reshape(b1 - b0, d2, p * p)
            s_new = _plan_average(m1, index, weight, 0.0)
            if want_ntk:
                m2 = ((sw * res.kappa_dot).reshape(b1 - b0, d2, p * p)) * th
                th = s_new + _plan_average(m2, index, weight, 0.0)
            s = s_new
    return nngp, ntk


# ----------------------------------------------------------------------------------------------
# Periodic CNNs.


def _conv_plan(v, shape, p):
    """``(index, weight)``: ``[A_v * S].ravel()[m] = sum_o weight[o] S.ravel()[index[o, m]]`` for one
    (P, P) matrix (the offsets of :func:`meanfield.conv.average`, in its order)."""
    from . import conv

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
