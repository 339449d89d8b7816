"""The compiled closed-form kernels of :mod:`meanfield.kernels`: dense rows and periodic-CNN blocks (private)."""

from __future__ import annotations

import math

import numba
import numpy as np

from ..activations import ERF, LEAKY_RELU, LINEAR, RELU

_INV_2PI = 1.0 / (2.0 * math.pi)
_TWO_PI = 2.0 / math.pi
_FOUR_PI = 4.0 / math.pi

# ----------------------------------------------------------------------------------------------
# The compiled pair map (closed forms) and its per-input helper.
#
# The helpers are inlined into the row and block loops (inline="always": Numba copies their IR
# into every loop), except _erf_pair and _acos: those are compiled once on their own and LLVM
# inlines them where they are called. The pair map stands in four loops of a dense row and two of
# a CNN block, so a cold dense kernel compiles in about half the time and a CNN kernel in about
# three quarters; the loops still vectorise (same steady-state speed) and give the same bits.
# Compiled on its own, the whole arc-cosine pair map is not inlined by LLVM and a relu row runs
# at half the speed, so it stays inline="always".


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


@numba.njit(error_model="numpy")
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
    if code == ERF:
        return _erf_pair(s, uu)
    if code == LINEAR:
        return s, 1.0
    # relu, leaky relu: the arc-cosine kernel (Cho & Saul 2009), uu = sqrt(q1) sqrt(q2)
    c = 0.0
    if uu > 0.0:
        c = min(1.0, max(-1.0, s / uu))
    return _arccos_pair(code, a, uu, c)


@numba.njit(error_model="numpy")
def _erf_pair(s, uu):
    """(kappa, kappa_dot) of erf at covariance s, uu = 1/sqrt((1+2q1)(1+2q2))."""
    r = 2.0 * s * uu  # r = 2 c sqrt(q1/(1+2q1)) sqrt(q2/(1+2q2)) = 2 s / sqrt((1+2q1)(1+2q2))
    r = min(1.0, max(-1.0, r))
    om = (1.0 - r) * (1.0 + r)  # 1 - r^2 = det / ((1+2q1)(1+2q2))
    kd = _FOUR_PI * uu / math.sqrt(om) if om > 0.0 else math.inf
    return _TWO_PI * _asin(r), kd


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


# Compiled on its own, not inlined into _conv_kernel: a cold conv_kernels compiles about 13 %
# faster, at the same steady-state speed (_conv_pair stays inlined: the per-pair call costs a
# quarter of the speed). The error model is _conv_kernel's.
@numba.njit(cache=True, error_model="numpy")
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
