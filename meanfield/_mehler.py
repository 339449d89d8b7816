r"""Data-set kernels of any activation by Mehler's formula, with a certified error bound (private).

For D1 x D2 pairs of inputs the layer maps of a dense network are

.. math::

    \kappa_{ij} = \mathbb{E}\,\phi(u_i)\phi(v_j), \qquad
    \dot\kappa_{ij} = \mathbb{E}\,\phi'(u_i)\phi'(v_j), \qquad
    u_i = \sqrt{q_i}\, z_1, \quad v_j = \sqrt{q_j}\,(c_{ij} z_1 + \sqrt{1 - c_{ij}^2}\, z_2),

with :math:`z_1, z_2` independent standard normals. Direct bivariate quadrature costs one 2-D rule
per pair; here every pair costs a short polynomial in :math:`c_{ij}` whose coefficients are
computed once per *input* (D1 + D2 one-dimensional integrals, not D1 D2 two-dimensional ones).

Derivation (Mehler's formula). Let :math:`p_k = \mathrm{He}_k/\sqrt{k!}` be the normalised
probabilists' Hermite polynomials, orthonormal under the standard normal density
:math:`\varphi`. For :math:`(z_1, z_1')` standard normal with correlation c, Mehler's formula
says that the joint density is :math:`\varphi(z_1)\varphi(z_1')\sum_k c^k p_k(z_1) p_k(z_1')`,
i.e. :math:`\mathbb{E}[p_k(z_1) p_l(z_1')] = \delta_{kl} c^k`. Writing
:math:`f(z) = \phi(\sqrt{q_i} z) = \sum_k a_k(q_i) p_k(z)` and :math:`g(z') = \phi(\sqrt{q_j} z')`
in the Hermite basis (both in :math:`L^2(\varphi)` whenever :math:`\mathbb{E}\phi^2 < \infty`),
with :math:`z_1' = c z_1 + \sqrt{1-c^2} z_2`,

.. math::

    \kappa_{ij} = \sum_{k \ge 0} a_k(q_i)\, a_k(q_j)\, c_{ij}^k, \qquad
    a_k(q) = \frac{\mathbb{E}[\phi(\sqrt q z)\,\mathrm{He}_k(z)]}{\sqrt{k!}},
    \qquad \sum_k a_k(q)^2 = \mathbb{E}\,\phi(\sqrt q z)^2 \ \text{(Parseval)},

and the same with :math:`\phi'` for :math:`\dot\kappa` (the NTK's derivative kernel).

Certified truncation (Cauchy-Schwarz). With the tail energies
:math:`T_K(q) = \mathbb{E}\phi(\sqrt q z)^2 - \sum_{k \le K} a_k(q)^2 \ge 0`,

.. math::

    \Big|\sum_{k > K} a_k(q_i) a_k(q_j) c^k\Big|
    \le |c|^{K+1} \Big(\sum_{k>K} a_k(q_i)^2\Big)^{1/2}\Big(\sum_{k>K} a_k(q_j)^2\Big)^{1/2}
    = |c|^{K+1}\sqrt{T_K(q_i)\,T_K(q_j)} .

Errors are measured relative to the natural scale of the pair,
:math:`s_{ij} = \sqrt{\mathbb{E}\phi(u_i)^2\,\mathbb{E}\phi(v_j)^2} \ge |\kappa_{ij}|` (Cauchy-Schwarz
again); with relative tails :math:`t_i(K) = T_K(q_i)/\mathbb{E}\phi(u_i)^2` a pair's truncation
error is at most :math:`|c|^{K+1}\sqrt{t_i(K)t_j(K)}\, s_{ij}`. Every pair sums its series term by
term and stops at the first K where the bound (plus the coefficient error below) is at most
``rtol``; :math:`|c|^{K+1}` makes pairs of small correlation stop after a few terms, pairs with
:math:`|c| = 1` stop once both tails are small.

Coefficient quadrature and its error. With the Hermite functions
:math:`\psi_k(z) = p_k(z)\,e^{-z^2/4}/(2\pi)^{1/4}` (orthonormal in :math:`L^2(dz)`, bounded by
about 1 for every k, computed by the stable three-term recurrence
:math:`\psi_{k+1} = (z\psi_k - \sqrt{k}\,\psi_{k-1})/\sqrt{k+1}`),
:math:`a_k(q) = \int \phi(\sqrt q z)\, e^{-z^2/4}(2\pi)^{-1/4}\, \psi_k(z)\, dz`: a smooth integrand
decaying like :math:`e^{-z^2/4}` whatever k, integrated by the trapezoid rule on
:math:`|z| \le 13` with step h resolving both the activation's features in u (h <= 0.125 / sqrt(q))
and the oscillation of :math:`\psi_k` (h <= 1 / sqrt(K + 1), which also keeps the step-2h rule
below accurate where :math:`\psi_k` grows off the real axis); the rule converges geometrically
for analytic integrands. The error of every coefficient is estimated by the same sums on every
other node (step 2h, free), ``|a(h) - a(2h)|``, an over-estimate of the error of the step-h rule
wherever the rule converges geometrically; the mass of :math:`\phi^2\varphi` beyond :math:`|z| = 11` bounds
the truncation of the domain. With :math:`\varepsilon_i` the l2 norm of the coefficient errors
relative to :math:`\sqrt{\mathbb{E}\phi(u_i)^2}`, a computed partial sum is off by at most
:math:`(\varepsilon_i + \varepsilon_j + \varepsilon_i\varepsilon_j) s_{ij}` (Cauchy-Schwarz on the
first K + 1 terms), and the computed tails are raised by their own error (that of
:math:`\mathbb{E}\phi^2` -- the trapezoid value against the library's 1-D quadrature
:func:`meanfield.gaussian.expectation` -- of :math:`\sum_k a_k^2`, and rounding), so they are upper
bounds. The reported bound of a pair is therefore

.. math:: b_{ij} = |c_{ij}|^{K+1}\sqrt{\hat t_i(K)\hat t_j(K)} + \varepsilon_i + \varepsilon_j + \varepsilon_i\varepsilon_j .

Fallback. Pairs whose bound cannot reach ``rtol`` with K <= :data:`K_MAX` terms (kinks, whose
coefficients decay only like a power of k, at :math:`|c|` near 1; variances above :data:`Q_MAX`;
activations whose coefficient quadrature does not converge) are computed by the library's direct
bivariate quadrature (:func:`meanfield.gaussian.pair_expectation`, closed forms where they exist)
and counted in ``n_fallback``; their accuracy is that documented in :mod:`meanfield.gaussian`.

References
----------
Mehler (1866), "Ueber die Entwicklung einer Function von beliebig vielen Variablen nach
Laplaceschen Functionen hoeherer Ordnung". O'Donnell (2014), "Analysis of Boolean Functions",
Sec. 11.2 (Hermite expansions and the noise operator). Daniely, Frostig, Singer (2016), "Toward
deeper understanding of neural networks: the power of initialization and a dual view on
expressivity" (dual activations as power series in c).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np
from numpy.typing import ArrayLike

from ._checks import as_real_array, check_bool, check_scalar
from ._results import Result
from .activations import ERF, HARD_TANH, LINEAR, SIGN, TANH, Activation, call_user, get_activation
from .gaussian import expectation, pair_expectation

__all__ = ["K_MAX", "K_START", "Q_MAX", "RTOL_RANGE", "MehlerMaps", "mehler_layer_maps"]

#: Most Hermite terms a pair may use before it falls back to direct quadrature.
K_MAX = 1024
#: Terms of the first pass; inputs whose tail is not yet small get 2x, 4x, ... up to K_MAX.
K_START = 32
#: Inputs with a larger variance have all their pairs done by direct quadrature (the coefficient
#: rule needs ~0.125 / sqrt(q) steps: at Q_MAX, 6657 nodes; its Hermite table at K_MAX is 55 MB).
Q_MAX = 1e3
#: Most function values evaluated at once (memory: 16 MB).
_CHUNK = 1 << 21
#: Allowed range of ``rtol``.
RTOL_RANGE = (1e-12, 1e-2)
#: Half-width of the z-domain of the coefficient rule (the integrand decays like e^{-z^2/4}).
Z_MAX = 13.0
#: The mass of phi^2 times the normal density beyond this |z| bounds the domain truncation.
Z_OUTER = 11.0
#: Trapezoid step in u (features of unit width in u) and the Hermite-function resolution constant.
H_U = 0.125
H_K = 1.0
#: Second moments below this are treated as unusable (their coefficients would underflow).
E_MIN = 1e-280
#: Relative slack on the coefficient-error term (covers the norm of the computed coefficients).
_SAFETY = 1.0 + 1e-6
_EPS = float(np.finfo(np.float64).eps)
#: Margin on the log of the bound in the bisection (keeps the directly evaluated bound <= rtol).
_LOG_MARGIN = 1e-9


@dataclass(frozen=True)
class MehlerMaps(Result):
    r"""Layer maps of D1 x D2 input pairs (see :func:`mehler_layer_maps`).

    Attributes
    ----------
    kappa : ndarray, shape (D1, D2)
        :math:`\mathbb{E}\,\phi(u_i)\phi(v_j)`.
    kappa_dot : ndarray, shape (D1, D2), or None
        :math:`\mathbb{E}\,\phi'(u_i)\phi'(v_j)` (None unless ``derivative=True``).
    error_bound : float
        Certified largest error of the pairs summed by Mehler's formula, relative to each pair's
        scale :math:`\sqrt{\mathbb{E}\phi(u_i)^2\,\mathbb{E}\phi(v_j)^2}` (and the same with phi' for
        ``kappa_dot``); at most ``rtol``. 0 when every pair fell back.
    n_fallback : int
        Number of entries (of ``kappa`` and ``kappa_dot`` together) computed by direct quadrature.
    terms : int
        Largest number of Hermite terms K + 1 any pair used.
    """

    kappa: np.ndarray
    kappa_dot: np.ndarray | None
    error_bound: float
    n_fallback: int
    terms: int


#: Hermite tables per step, grown in place as passes ask for more terms (a few steps at once).
_TABLES: dict = {}
_TABLES_KEEP = 2


def _hermite_functions(h: float, k_max: int):
    """Nodes ``z = h m`` (|m| <= N, N even), Gaussian factor, psi_k(z) as an (n, >= k_max + 1) array
    and the cache of its half tables (:func:`_half_table`).

    The table of a step is kept and extended by the same recurrence when more terms are asked for,
    so its first columns never change.
    """
    hit = _TABLES.pop(h, None)
    if hit is None:
        n_half = math.ceil(Z_MAX / h)
        n_half += n_half % 2  # even: the step-2h sub-rule is the even m, and contains z = 0
        z = h * np.arange(-n_half, n_half + 1, dtype=np.float64)
        g = np.exp(-0.25 * z * z) / (2.0 * math.pi) ** 0.25
        psi = np.empty((z.size, 2))
        psi[:, 0] = g
        psi[:, 1] = z * g
        hit = (z, g, psi, {})
    z, g, psi, halves = hit
    if psi.shape[1] < k_max + 1:
        old = psi.shape[1]
        psi = np.concatenate([psi, np.empty((z.size, k_max + 1 - old))], axis=1)
        for k in range(old - 1, k_max):
            psi[:, k + 1] = (z * psi[:, k] - math.sqrt(k) * psi[:, k - 1]) / math.sqrt(k + 1.0)
        psi.setflags(write=False)
        halves = {}
        hit = (z, g, psi, halves)
    _TABLES[h] = hit
    while len(_TABLES) > _TABLES_KEEP:
        _TABLES.pop(next(iter(_TABLES)))
    return z, g, psi, halves


def _half_table(z, psi, halves, par):
    """Contiguous psi_k(z) on z >= 0 for the k of parity ``par`` (column j is k = 2 j + par)."""
    tab = halves.get(par)
    if tab is None:
        mid = (z.size - 1) // 2
        tab = np.ascontiguousarray(psi[mid:, par::2])
        halves[par] = tab
    return tab


def _steps(q: np.ndarray, k: int) -> np.ndarray:
    """Steps of the coefficient rule per input (powers of 2: inputs share rules), see the module notes."""
    h = np.full(q.shape, H_K / math.sqrt(k + 1.0))
    pos = q > 0.0
    h[pos] = np.minimum(h[pos], H_U / np.sqrt(q[pos]))
    return np.exp2(np.floor(np.log2(h)))


#: Built-ins whose phi is odd (phi' even): their coefficients are summed on z >= 0 only.
_KNOWN_PARITY = {LINEAR: 1, TANH: 1, ERF: 1, HARD_TANH: 1}
_ORDER = {"phi": 0, "dphi": 1}


def _parity(f: np.ndarray) -> int:
    """1 if every row of ``f`` (values on a grid symmetric about 0) is odd, 0 if every row is even, else -1."""
    r = f[:, ::-1]
    if np.array_equal(r, -f):
        return 1
    if np.array_equal(r, f):
        return 0
    return -1


def _columns_on(fn, label, act, q, k0, k1, h):
    """Coefficients a_k (k0 <= k <= k1) on step h and on step 2h, and the sums of phi^2 (see the notes).

    Returns ``(a, a2, e_h, e_2h, e_out)``: the coefficients on the step-h and step-2h rules, the
    second moment on both rules and the mass beyond ``Z_OUTER``. Rows of one parity (tanh and its
    derivative: odd and even) are summed on z >= 0 with weights 1 (z = 0) and 2: the same
    trapezoid sums, whose coefficients of the other parity vanish, at a quarter of the work.
    """
    z, g, psi, halves = _hermite_functions(h, k1)
    rows = max(1, _CHUNK // z.size)
    if q.size > rows:  # bounded memory: blocks of inputs
        parts = [_columns_on(fn, label, act, q[i : i + rows], k0, k1, h) for i in range(0, q.size, rows)]
        return tuple(np.concatenate(p) for p in zip(*parts, strict=True))
    mid = (z.size - 1) // 2  # z[mid] = 0; the step-2h nodes are the even offsets from it
    dens = g * g  # the standard normal density
    outer = np.abs(z) > Z_OUTER
    par = _KNOWN_PARITY.get(act.code, -1) if act.is_builtin else -1
    if par >= 0:  # phi odd: phi' even, and the reverse
        par = (par + _ORDER[label]) % 2
        fh = call_user(fn, np.sqrt(q)[:, None] * z[None, mid:], label, act.name).reshape(q.size, -1)
    else:
        f = call_user(fn, np.sqrt(q)[:, None] * z[None, :], label, act.name).reshape(q.size, -1)
        par = _parity(f)
        fh = f[:, mid:]
    if par >= 0:
        w = np.full(z.size - mid, 2.0)
        w[0] = 1.0
        fgw = fh * (g[mid:] * w)[None, :]
        a = np.zeros((q.size, k1 - k0 + 1))
        a2 = np.zeros_like(a)
        j0, j1 = (k0 - par + 1) // 2, (k1 - par) // 2  # columns 2 j + par in [k0, k1]
        if j1 >= j0:
            tab = _half_table(z, psi, halves, par)[:, j0 : j1 + 1]
            first = 2 * j0 + par - k0
            even = fgw[:, ::2] @ tab[::2]  # the step-2h nodes; the step-h rule adds the others
            a[:, first::2] = h * (even + fgw[:, 1::2] @ tab[1::2])
            a2[:, first::2] = (2.0 * h) * even
        f2w = (fh * fh) * w[None, :]
        e_h = h * (f2w @ dens[mid:])
        e_2h = 2.0 * h * (f2w[:, ::2] @ dens[mid::2])
        far = outer[mid:]
        e_out = h * (f2w[:, far] @ dens[mid:][far])
        return a, a2, e_h, e_2h, e_out
    fg = f * g[None, :]
    cols = psi[:, k0 : k1 + 1]
    even = fg[:, ::2] @ cols[::2]  # the step-2h nodes; the step-h rule adds the others
    a = h * (even + fg[:, 1::2] @ cols[1::2])
    a2 = (2.0 * h) * even
    e_h = h * ((f * f) @ dens)
    e_2h = 2.0 * h * ((f[:, ::2] * f[:, ::2]) @ dens[::2])
    e_out = h * ((f[:, outer] ** 2) @ dens[outer])
    return a, a2, e_h, e_2h, e_out


def _certify(a, a2, e_h, e_2h, e_out, e_ref, k):
    """Certified relative tails and relative coefficient errors of coefficient rows a (see the notes)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        coef_err = np.sqrt(np.sum((a - a2) ** 2, axis=1)) + np.sqrt(e_out)
        eps = coef_err / np.sqrt(e_h)
        delta = (np.abs(e_h - e_2h) + np.abs(e_h - e_ref) + e_out) / e_h + 2.0 * eps + eps * eps
        delta += 2.0 * (k + 2) * _EPS
        tails = np.maximum(0.0, 1.0 - np.cumsum(a * a, axis=1) / e_h[:, None]) + delta[:, None]
    return tails, eps


class _Store:
    """Coefficient columns computed so far per input, with their step: a pass at a larger K on the
    same step computes only the new columns (the Hermite table's first columns do not change)."""

    def __init__(self, fn, label, act, q, e_ref):
        self.fn, self.label, self.act, self.q, self.e_ref = fn, label, act, q, e_ref
        n = q.size
        self.a = np.zeros((n, 0))
        self.a2 = np.zeros((n, 0))
        self.h = np.zeros(n)
        self.k = np.full(n, -1, dtype=np.int64)
        self.e = np.zeros((3, n))

    def series(self, idx, k, h):
        """(a, tails, eps) of inputs ``idx`` with K = k on step h."""
        if self.a.shape[1] < k + 1:
            grow = k + 1 - self.a.shape[1]
            self.a = np.pad(self.a, ((0, 0), (0, grow)))
            self.a2 = np.pad(self.a2, ((0, 0), (0, grow)))
        start = np.where(self.h[idx] == h, self.k[idx] + 1, 0)
        for k0 in np.unique(start):
            sub = idx[start == k0]
            if k0 <= k:
                a, a2, *e = _columns_on(self.fn, self.label, self.act, self.q[sub], int(k0), k, h)
                self.a[sub, k0 : k + 1] = a
                self.a2[sub, k0 : k + 1] = a2
                self.e[:, sub] = e
                self.h[sub] = h
                self.k[sub] = k
        a = self.a[idx, : k + 1]
        tails, eps = _certify(a, self.a2[idx, : k + 1], *self.e[:, idx], self.e_ref[idx], k)
        return a, tails, eps


def _input_series(act: Activation, d: int, q: np.ndarray, c_max: np.ndarray, rtol: float, k_min: int = 0):
    """Per input: coefficient rows (zero-padded), relative tails, relative errors and K available.

    An input is done at the first K (K_START, 2 K_START, ..., K_MAX) where
    ``t(K) c_max^(2K + 2) <= max(rtol / 2 - 2 eps, rtol / 200)^2 / (rtol / 2)``, ``c_max`` the
    largest |c| of its pairs and ``eps`` its coefficient error: then every pair of two done inputs
    with ``eps <= rtol / 4`` meets ``sqrt(t_i t_j) |c|^(K+1) + eps_i + eps_j + eps_i eps_j <= rtol``
    (the bound a pair needs); an input with ``eps >= rtol`` stops (its pairs fall back).

    ``eps = inf`` marks an input whose pairs must fall back (variance above Q_MAX, a second moment
    that is not finite or below E_MIN, a coefficient rule that did not converge).
    """
    fn = act.derivative(d)
    label = ("phi", "dphi")[d]
    with np.errstate(over="ignore", invalid="ignore"):
        e_ref = np.atleast_1d(np.asarray(expectation(act, q, (d, d)), dtype=np.float64)) if q.size else q.copy()
    n = q.size
    store = _Store(fn, label, act, q, e_ref)
    k_of = np.zeros(n, dtype=np.int64)
    eps = np.full(n, np.inf)
    zero = (e_ref == 0.0) & (q == 0.0)  # phi^(d)(0) = 0 at q = 0: every coefficient is 0 exactly
    eps[zero] = 0.0
    pending = np.flatnonzero(~zero & (q <= Q_MAX) & np.isfinite(e_ref) & (e_ref > E_MIN))
    blocks = []  # (inputs, coefficient rows, tails) of the inputs finished in one pass
    k = K_START
    half = 0.5 * rtol
    while pending.size:
        steps = _steps(q[pending], k)
        done = np.zeros(pending.size, dtype=bool)
        for h in np.unique(steps):
            sel = np.flatnonzero(steps == h)
            idx = pending[sel]
            a, tails, ep = store.series(idx, k, float(h))
            good = np.isfinite(ep) & np.isfinite(a).all(axis=1) & np.isfinite(tails[:, -1])
            with np.errstate(under="ignore", invalid="ignore"):
                reach = tails[:, -1] * c_max[idx] ** (2 * k + 2)
                room = np.maximum(half - 2.0 * _SAFETY * ep, 0.01 * half) ** 2 / half
            # ep >= rtol: the coefficient error alone exceeds the budget, more terms cannot help
            fin = (good & ((reach <= room) | (ep >= rtol))) | (k >= K_MAX)
            done[sel[fin]] = True
            keep = fin & good
            if keep.any():
                blocks.append((idx[keep], a[keep], tails[keep]))
                k_of[idx[keep]] = k
                eps[idx[keep]] = ep[keep]
        pending = pending[~done]
        k = min(2 * k, K_MAX)
    # every usable input gets the largest K of the layer: a pair's series may run past the K at
    # which its shorter input's own tail was small, as far as its partner needs
    k_final = max(int(k_of.max()) if n else 0, k_min)
    short = np.flatnonzero(np.isfinite(eps) & ~zero & (k_of < k_final))
    if short.size:
        steps = _steps(q[short], k_final)
        for h in np.unique(steps):
            idx = short[steps == h]
            a, tails, ep = store.series(idx, k_final, float(h))
            good = np.isfinite(ep) & np.isfinite(a).all(axis=1) & np.isfinite(tails[:, -1])
            blocks.append((idx[good], a[good], tails[good]))
            k_of[idx[good]] = k_final
            eps[idx[good]] = ep[good]
            eps[idx[~good]] = np.inf
    width = k_final + 1
    a_out = np.zeros((n, width))
    t_out = np.full((n, width), np.inf)
    t_out[zero] = 0.0
    k_of[zero] = k_final
    for idx, a, tails in blocks:
        a_out[idx, : a.shape[1]] = a
        t_out[idx, : tails.shape[1]] = tails
    k_of[~np.isfinite(eps)] = -1
    return a_out, t_out, eps, k_of, e_ref


@numba.njit(cache=True, parallel=True)
def _mehler_pairs(a1, lt1, e1, k1, a2, lt2, e2, k2, c, rtol, symmetric, out, row_bound, row_terms, row_fall):
    """Sum each pair's Hermite series to the first K whose certified bound is <= rtol.

    ``lt1``, ``lt2`` are the logs of the certified relative tails (non-increasing in k), so
    ``log(t1 t2 c^(2K+2))`` is non-increasing in K and the smallest K meeting the bound is found by
    bisection; the partial sum is then a polynomial in c (two interleaved Horner chains in c^2).
    A pair that must fall back gets ``out = NaN``. Per row: the largest bound, the most terms and
    the number of fallbacks. ``symmetric``: only j >= i is summed, then mirrored, and a diagonal
    entry with c = 1 is left to the caller (the 1-D second moment).
    """
    d1, d2 = c.shape
    for i in numba.prange(d1):
        start = i if symmetric else 0
        worst = 0.0
        most = 0
        nfall = 0
        for j in range(start, d2):
            cc = c[i, j]
            if symmetric and j == i and cc == 1.0:
                continue
            kk = min(k1[i], k2[j])
            base = (e1[i] + e2[j] + e1[i] * e2[j]) * _SAFETY
            s = math.nan
            if kk >= 0 and base < rtol:
                lc = 2.0 * math.log(abs(cc)) if cc != 0.0 else -math.inf
                target = 2.0 * math.log(rtol - base) - _LOG_MARGIN
                if lt1[i, kk] + lt2[j, kk] + (kk + 1) * lc <= target:
                    lo = 0
                    hi = kk  # the criterion holds at hi; find the first k where it holds
                    while lo < hi:
                        mid = (lo + hi) // 2
                        if lt1[i, mid] + lt2[j, mid] + (mid + 1) * lc <= target:
                            hi = mid
                        else:
                            lo = mid + 1
                    c2 = cc * cc
                    top = lo if lo % 2 == 0 else lo - 1  # largest even index <= lo
                    ev = 0.0
                    od = 0.0
                    for m in range(top, -1, -2):
                        ev = ev * c2 + a1[i, m] * a2[j, m]
                        if m + 1 <= lo:
                            od = od * c2 + a1[i, m + 1] * a2[j, m + 1]
                    s = ev + cc * od
                    b = base + math.exp(0.5 * (lt1[i, lo] + lt2[j, lo] + (lo + 1) * lc))
                    worst = max(worst, b)
                    most = max(most, lo + 1)
            if math.isnan(s):
                nfall += 1 if (not symmetric or j == i) else 2
            out[i, j] = s
            if symmetric:
                out[j, i] = s
        row_bound[i] = worst
        row_terms[i] = most
        row_fall[i] = nfall


def _check_rtol(rtol) -> float:
    value = check_scalar(rtol, "rtol")
    lo, hi = RTOL_RANGE
    if not lo <= value <= hi:
        raise ValueError(f"rtol must be in [{lo:g}, {hi:g}], got {value!r}")
    return value


def _check_vector(x, name):
    arr = as_real_array(x, name)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of variances, got shape {arr.shape}")
    if np.any(arr < 0):
        raise ValueError(f"{name} must be >= 0 (variances), got a minimum of {float(arr.min())!r}")
    return np.ascontiguousarray(arr)


def _one_map(act, d, q1, q2, c, rtol, symmetric):
    """(values, bound over the Mehler pairs, number of fallback entries, most terms) for order d."""
    ac = np.abs(c)
    if symmetric:
        diag = np.arange(c.shape[0])
        ac[diag, diag] = np.where(c[diag, diag] == 1.0, 0.0, ac[diag, diag])  # the 1-D moment there
    cm1 = ac.max(axis=1) if ac.size else np.zeros(q1.size)
    cm2 = ac.max(axis=0) if ac.size else np.zeros(q2.size)
    a1, t1, e1, k1, e1_ref = _input_series(act, d, q1, cm1, rtol)
    if symmetric:
        a2, t2, e2, k2 = a1, t1, e1, k1
    else:
        a2, t2, e2, k2, _ = _input_series(act, d, q2, cm2, rtol)
        if a2.shape[1] > a1.shape[1]:  # one K for both sides (see _input_series)
            a1, t1, e1, k1, e1_ref = _input_series(act, d, q1, cm1, rtol, a2.shape[1] - 1)
        elif a1.shape[1] > a2.shape[1]:
            a2, t2, e2, k2, _ = _input_series(act, d, q2, cm2, rtol, a1.shape[1] - 1)
    width = max(a1.shape[1], a2.shape[1])
    a1, t1, a2, t2 = (
        np.ascontiguousarray(_pad(x, width, v)) for x, v in ((a1, 0.0), (t1, np.inf), (a2, 0.0), (t2, np.inf))
    )
    out = np.empty(c.shape)
    n1 = c.shape[0]
    row_bound, row_terms, row_fall = np.zeros(n1), np.zeros(n1, dtype=np.int64), np.zeros(n1, dtype=np.int64)
    with np.errstate(divide="ignore"):
        lt1 = np.log(t1)
        lt2 = lt1 if symmetric else np.log(t2)
    _mehler_pairs(a1, lt1, e1, k1, a2, lt2, e2, k2, c, rtol, symmetric, out, row_bound, row_terms, row_fall)
    if symmetric:
        diag = np.arange(n1)
        one = c[diag, diag] == 1.0
        out[diag[one], diag[one]] = e1_ref[one]  # c = 1 with equal variances: the 1-D second moment
    n_fall = int(row_fall.sum())
    if n_fall:
        fall = np.isnan(out)
        fi, fj = np.nonzero(np.triu(fall) if symmetric else fall)
        vals = np.atleast_1d(pair_expectation(act, q1[fi], q2[fj], c[fi, fj], (d, d)))
        out[fi, fj] = vals
        if symmetric:
            out[fj, fi] = vals
    worst = float(row_bound.max()) if n1 else 0.0
    return out, worst, n_fall, int(row_terms.max()) if n1 else 0


def _pad(x, width, value):
    if x.shape[1] == width:
        return x
    out = np.full((x.shape[0], width), value)
    out[:, : x.shape[1]] = x
    return out


def mehler_layer_maps(
    activation: str | Activation,
    q1: ArrayLike,
    q2: ArrayLike,
    c: ArrayLike,
    *,
    rtol: float = 1e-10,
    derivative: bool = True,
) -> MehlerMaps:
    r"""The layer maps :math:`\kappa`, :math:`\dot\kappa` of all input pairs by Mehler's formula.

    Parameters
    ----------
    activation : str or Activation
        A built-in name, an :class:`~meanfield.activations.Activation`, or a user activation
        (:meth:`~meanfield.activations.Activation.from_functions`).
    q1 : array_like, shape (D1,)
        Variances (>= 0, finite) of the first inputs of the pairs.
    q2 : array_like, shape (D2,)
        Variances of the second inputs.
    c : array_like, shape (D1, D2)
        Correlations in [-1, 1].
    rtol : float
        Requested bound on each pair's error relative to its scale
        :math:`\sqrt{\mathbb{E}\phi(u_i)^2\,\mathbb{E}\phi(v_j)^2}`, in ``RTOL_RANGE`` = [1e-12, 1e-2].
    derivative : bool
        Also compute :math:`\dot\kappa = \mathbb{E}\phi'(u_i)\phi'(v_j)`.

    Returns
    -------
    MehlerMaps
        ``kappa``, ``kappa_dot``, ``error_bound`` (<= rtol), ``n_fallback``, ``terms``.

    Raises
    ------
    ValueError
        Negative or non-finite variances, ``c`` outside [-1, 1] or not of shape (D1, D2), ``rtol``
        outside its range, ``derivative=True`` for ``sign`` (its phi' is a Dirac delta), a user
        activation returning NaN/inf, a result beyond the float64 range.
    TypeError
        Complex, boolean or non-numeric arguments.

    Notes
    -----
    The derivation, the certified bound and the fallback are in the module notes. When ``q1`` and
    ``q2`` are equal and ``c`` is symmetric (a data set against itself), only the pairs
    i <= j are summed, and entries with c = 1 on the diagonal are the 1-D second moments of
    :func:`meanfield.gaussian.expectation`. The cost is D1 + D2 one-dimensional coefficient
    integrals plus, per pair, as many terms as its bound needs (few when :math:`|c|` is small).

    Examples
    --------
    >>> import numpy as np
    >>> m = mehler_layer_maps("tanh", [1.0, 0.5], [1.0, 0.5], [[1.0, 0.3], [0.3, 1.0]])
    >>> m.kappa.shape, m.error_bound <= 1e-10
    ((2, 2), True)
    """
    act = get_activation(activation)
    rtol = _check_rtol(rtol)
    derivative = check_bool(derivative, "derivative")
    q1 = _check_vector(q1, "q1")
    q2 = _check_vector(q2, "q2")
    c = as_real_array(c, "c")
    if c.shape != (q1.size, q2.size):
        raise ValueError(f"c must have shape (D1, D2) = {(q1.size, q2.size)}, got {c.shape}")
    if np.any(np.abs(c) > 1.0):
        raise ValueError("c must lie in [-1, 1]")
    if derivative and act.code == SIGN:
        raise ValueError("derivative=True is not defined pointwise for 'sign' (its phi' is a Dirac delta)")
    c = np.ascontiguousarray(c)
    symmetric = bool(q1.size == q2.size and np.array_equal(q1, q2) and np.array_equal(c, c.T))
    with np.errstate(over="ignore", invalid="ignore"):
        kappa, b0, f0, n0 = _one_map(act, 0, q1, q2, c, rtol, symmetric)
        kdot, b1, f1, n1 = (None, 0.0, 0, 0)
        if derivative:
            kdot, b1, f1, n1 = _one_map(act, 1, q1, q2, c, rtol, symmetric)
    for name, arr in (("kappa", kappa), ("kappa_dot", kdot)):
        if arr is not None and not np.all(np.isfinite(arr)):
            raise ValueError(f"{name} of activation {act.name!r} exceeds the float64 range at these variances")
    return MehlerMaps(kappa=kappa, kappa_dot=kdot, error_bound=max(b0, b1), n_fallback=f0 + f1, terms=max(n0, n1))
