"""The free-probability equation for the S-transform of JJ^T, solved by Newton's method on a grid (Pennington et al.
2017, eqs. 5-8; private).
"""

from __future__ import annotations

import math

import numpy as np

from ._laws import _MAX_HALVINGS, _NEWTON_ITERS, _NEWTON_RTOL, _VERTICAL_AFTER, LOW_MASS_TOL, DerivativeLaw, _cumulative


def _moments_upto(lam, rho, top):
    """Trapezoid (in log lambda) mass and first moment of rho over lam <= top, the last piece ending at top."""
    keep = lam <= top
    lk, rk = lam[keep], rho[keep]
    if lk[-1] < top < lam[-1]:  # close the last interval at exactly ``top`` (linear in log lambda)
        j = lk.size
        t = (math.log(top) - math.log(lam[j - 1])) / (math.log(lam[j]) - math.log(lam[j - 1]))
        r_top = (1.0 - t) * rho[j - 1] + t * rho[j]
        lk, rk = np.append(lk, top), np.append(rk, r_top)
    dl = np.diff(np.log(lk))
    f0, f1 = rk * lk, rk * lk * lk
    return float(np.sum(0.5 * (f0[1:] + f0[:-1]) * dl)), float(np.sum(0.5 * (f1[1:] + f1[:-1]) * dl))


def _psi(u, values, weights):
    """psi_{D^2}(u) = E d u / (1 - d u) and its derivative E d / (1 - d u)^2 (u complex, vector over atoms)."""
    r = 1.0 / (1.0 - values * u)
    wd = weights * values
    return u * np.dot(wd, r), np.dot(wd, r * r)


def _unwrap(logval, ref):
    """``logval`` plus the multiple of 2 pi i closest to ``ref`` (continuity of a logarithm's branch)."""
    k = np.round((ref.imag - logval.imag) / (2 * np.pi))
    return logval + 2j * np.pi * k


class _Solver:
    """Newton continuation of the S-transform equation along the grid (see the module notes)."""

    def __init__(self, values, weights, sigma_w2, depth, gaussian):
        self.d = values.astype(complex)
        self.p = weights
        self.log_s = math.log(sigma_w2)
        self.L = depth
        self.coef = depth * (0 if gaussian else 1) - 1
        self.mu1 = float(np.dot(weights, values))

    def residual(self, u, log_z, refs):
        m, dm = _psi(u, self.d, self.p)
        lu = _unwrap(np.log(u), refs[0])
        lm = _unwrap(np.log(m), refs[1])
        l1 = _unwrap(np.log1p(m), refs[2])
        f = self.L * (lu - self.log_s) - (self.L - 1) * lm + self.coef * l1 - log_z
        # the rounding floor of f: the sum of its terms' magnitudes times a few ulps
        self.floor = (
            64
            * np.finfo(float).eps
            * (self.L * (abs(lu) + abs(self.log_s)) + (self.L - 1) * abs(lm) + abs(self.coef * l1) + abs(log_z))
        )
        fp = self.L / u + (self.coef / (1.0 + m) - (self.L - 1) / m) * dm
        return f, fp, m, (lu, lm, l1)

    def newton(self, u0, log_z, refs):
        u = u0
        for _ in range(_NEWTON_ITERS):
            f, fp, m, logs = self.residual(u, log_z, refs)
            if not (np.isfinite(f) and np.isfinite(fp)) or fp == 0:
                return None
            if abs(f) <= self.floor:
                return u, m, logs
            step = f / fp
            # damping: never move u by more than half its modulus in one step
            limit = 0.5 * abs(u)
            if abs(step) > limit:
                step *= limit / abs(step)
            u = u - step
            if abs(step) <= _NEWTON_RTOL * abs(u):
                f, fp, m, logs = self.residual(u, log_z, refs)
                return u, m, logs
        return None


def _log_z(lam, eta):
    return -np.log(lam * complex(1.0, eta))


def _vertical(solver: _Solver, lam, eta, scale):
    """Solve at w = lam (1 + i eta) along the vertical path w = lam + i y, y from 1e3 (lam + scale)
    down to eta lam (the solution is analytic in the upper half-plane; the path stays away from the
    real-axis singularities of the discretised law). None on failure."""
    L = solver.L
    y_target = eta * lam
    log_y = math.log(1e3 * (lam + scale))

    def lz_of(ly):
        return -np.log(complex(lam, math.exp(ly)))

    lz = lz_of(log_y)
    log_u = lz + (L - 1) * math.log(solver.mu1) + L * solver.log_s
    u = np.exp(log_u)
    m0 = solver.mu1 * u
    sol = solver.newton(u, lz, (log_u, np.log(m0), np.log1p(m0)))
    if sol is None:
        return None
    u, m, refs = sol
    step = math.log(0.7)
    target = math.log(y_target)
    halvings = 0
    while log_y > target:
        nxt = max(log_y + step, target)
        sol = solver.newton(u, lz_of(nxt), refs)
        if sol is None:
            halvings += 1
            if halvings > _MAX_HALVINGS:
                return None
            step *= 0.5
            continue
        u, m, refs = sol
        log_y = nxt
        step = max(step * 1.5, math.log(0.5))
    return u, m, refs


def _solve_grid(solver: _Solver, grid_desc, eta, lam_start):
    """Solve along ``lam_start`` (far above the support) then ``grid_desc`` (decreasing); returns m on the grid."""
    # the asymptotic start: m ~ mu1 u, u ~ z s^L mu1^(L-1) (both weight laws)
    lz = _log_z(lam_start, eta)
    L = solver.L
    if solver.mu1 > 0:
        log_u = lz + (L - 1) * math.log(solver.mu1) + L * solver.log_s
    else:  # phi' = 0 almost surely: nothing propagates; handled by the caller
        raise ValueError("the law of phi'^2 is a point mass at 0")
    u = np.exp(log_u)
    m0 = solver.mu1 * u
    refs = (log_u, np.log(m0), np.log1p(m0))
    sol = solver.newton(u, lz, refs)
    if sol is None:
        raise ValueError(
            "the spectrum solver did not converge at the starting point at these sigma_w2, sigma_b2, depth "
            "(variances this extreme put the spectrum outside the solver's float64 range)"
        )
    u, m, refs = sol
    prev_log_lam = math.log(lam_start)
    out = np.zeros(grid_desc.size, dtype=complex)  # unsolved points (below a stop) stay 0
    for i, lam in enumerate(grid_desc):
        target = math.log(lam)
        # step from prev_log_lam to target, halving on failure
        pieces = [target]
        cur = prev_log_lam
        halvings = 0
        while pieces:
            nxt = pieces[-1]
            lz = _log_z(math.exp(nxt), eta)
            # linear extrapolation of u in log lambda is not needed: previous u is a good guess
            sol = solver.newton(u, lz, refs)
            ok = sol is not None
            if ok:
                g = (1.0 + sol[1]) * np.exp(lz)
                ok = g.imag <= 1e-9 * abs(g)  # density >= 0: the physical branch
            if ok:
                u, m, refs = sol
                cur = nxt
                pieces.pop()
            else:
                halvings += 1
                if halvings == _VERTICAL_AFTER:  # detour: reach the target vertically from far above
                    sol = _vertical(solver, lam, eta, lam_start)
                    if sol is not None:
                        u, m, refs = sol
                        pieces = []
                        break
                if halvings > _MAX_HALVINGS:
                    return out, i
                pieces.append(0.5 * (cur + nxt))
        prev_log_lam = target
        out[i] = m
    return out, grid_desc.size


def _density(solver: _Solver, grid, eta, check_mass=True):
    """-Im G / pi on the increasing ``grid``, continued from far above it."""
    log_top = math.log(grid[-1])
    start = math.exp(log_top + math.log(1e3))
    approach = np.exp(np.linspace(math.log(start), log_top, 40))[1:-1]
    m_all, reached = _solve_grid(solver, np.concatenate([approach, grid[::-1]]), eta, start)
    reached -= approach.size  # grid points solved, counted from the top
    if reached < 2:
        raise ValueError(f"the spectrum solver did not converge near lambda = {grid[-1]:.3g} (try a larger eta)")
    m = m_all[approach.size :][::-1]
    g = (1.0 + m) / (grid * complex(1.0, eta))
    rho = np.maximum(-g.imag / np.pi, 0.0)
    first = grid.size - reached  # lowest solved index
    if first > 0:
        solved = float(_cumulative(grid[first:], rho[first:])[-1])
        # the Cauchy broadening moves about eta / pi per e-fold of the grid out of the solved part
        leak = eta / math.pi * math.log(grid[-1] / grid[first])
        if check_mass and solved < 1.0 - LOW_MASS_TOL - leak:
            raise ValueError(
                f"the spectrum solver did not converge near lambda = {grid[first - 1]:.3g} with only "
                f"{solved:.3f} of the mass above it (try a larger eta or fewer atoms)"
            )
        rho[:first] = 0.0
    return rho, grid[first]


def _support_bound(law: DerivativeLaw, sigma_w2, depth, gaussian):
    """log of an upper bound of the squared singular values: (sigma_w2 max d)^L, times the upper edge
    (L+1)^(L+1) / L^L of the product of L unit Wishart matrices (Fuss-Catalan) for Gaussian weights:
    J_L J_L^T <= max(d) W_L (J_{L-1} J_{L-1}^T) W_L^T in the operator order."""
    top = float(np.max(law.values))
    fc = (depth + 1) * math.log(depth + 1) - depth * math.log(depth) if gaussian else 0.0
    return depth * (math.log(sigma_w2) + math.log(top)) + fc


def _check_weights(weights, allowed, name="weights"):
    if not isinstance(weights, str):
        raise TypeError(f"{name} must be a str, one of {tuple(allowed)}, got {weights!r}")
    if weights not in allowed:
        raise ValueError(f"{name} must be one of {tuple(allowed)}, got {weights!r}")
    return weights
