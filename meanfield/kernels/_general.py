"""The general path of :mod:`meanfield.kernels`: any pair map, one layer at a time per block of rows (private)."""

from __future__ import annotations

import numpy as np

from ..gaussian import expectation
from ._common import LayerMaps, quadrature_layer_maps

_DENSE_PLAN = (np.zeros((1, 1), dtype=np.int64), np.ones(1))


def _plan_average(src, index, weight, sb):
    """sum_o weight[o] src[..., index[o]] + sb over the flattened P^2 last axis (plan order, from 0)."""
    out = np.zeros_like(src)
    for o in range(weight.size):
        out += weight[o] * src[..., index[o]]
    return out + sb if sb != 0.0 else out


def _general_diag(act, sw, sb, x, depth, plan, degree, want_ntk):
    """Per-input, per-position variances and NTK diagonals (depth + 1, D, P) by the library's quadrature.

    Without ``want_ntk`` the NTK diagonals are not computed (``t`` is zero after layer 0): the
    derivative moment ``E phi'(u)^2`` may not exist (``sign``: phi' is a Dirac delta) where the NNGP does.
    """
    index, weight = plan
    d, p, c0 = x.shape
    dpos = index[:, np.arange(p) * p + np.arange(p)] // p  # the diagonal entries of the plan
    g = np.einsum("dpc,dpc->dp", x, x) / c0
    q = np.empty((depth + 1, d, p))
    t = np.zeros_like(q)
    q[0] = sw * sum(weight[o] * g[:, dpos[o]] for o in range(weight.size)) + sb
    t[0] = q[0]
    for layer in range(depth):
        kap = np.asarray(expectation(act, q[layer], (0, 0), degree))
        m1 = sw * kap + sb
        q[layer + 1] = sum(weight[o] * m1[:, dpos[o]] for o in range(weight.size))
        if not want_ntk:
            continue
        try:
            kd = np.asarray(expectation(act, q[layer], (1, 1), degree))
        except ValueError as err:
            raise ValueError(
                f"ntk=True: the NTK of activation {act.name!r} is not finite (E phi'(u)^2 is not, at layer "
                f"{layer + 1}); pass ntk=False for the NNGP alone"
            ) from err
        m2 = (sw * kd) * t[layer]
        t[layer + 1] = q[layer + 1] + sum(weight[o] * m2[:, dpos[o]] for o in range(weight.size))
    return q, t


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

    q2, t2 = _general_diag(act, sw, sb, x2, depth, plan, degree, want_ntk)
    if self_offset >= 0:
        q1, t1 = q2, t2
    else:
        q1, t1 = _general_diag(act, sw, sb, x1, depth, plan, degree, want_ntk)
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
