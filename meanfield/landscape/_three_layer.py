"""Linear three-layer networks in the mode basis: energy, gradient flow and Hessian (Orhan 2017).

Private submodule of :mod:`meanfield.landscape`: Sec. 2.3.1, eqs. 8-18 (plain eqs. 8-14, residual
eqs. 15-18) and Supplementary Note 2 (eqs. 29-33) of Orhan (2017), in the notation of Saxe et
al. (2013). Column ``alpha`` of ``a`` (shape ``(n_hidden, n_modes)``) is the paper's ``a^alpha``
(input mode ``alpha`` to the hidden layer), column ``alpha`` of ``b`` is ``b^alpha`` (hidden layer
to output mode ``alpha``), ``s`` holds the singular values of the input-output correlation
matrix, and the skip vectors ``u``, ``v`` (eqs. 19-20) turn the plain network into the residual
one (``tau = 1``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .._checks import as_float_array, check_bool
from .._results import Result
from ._common import MAX_FLOW_DIMENSION, _check_times, _check_tolerances, _integrate

__all__ = [
    "ThreeLayerHessian",
    "ThreeLayerTrajectory",
    "three_layer_energy",
    "three_layer_flow",
    "three_layer_gradient_field",
    "three_layer_hessian",
]

#: Largest number of entries ``n_hidden * n_modes`` of the three-layer functions (the Hessian has
#: ``(2 n_hidden n_modes)^2`` entries).
MAX_THREE_LAYER_ENTRIES = 2048


def _sum_of_squares(r: np.ndarray) -> float:
    """``sum(r^2)`` without intermediate overflow; ``inf`` only when the result itself overflows."""
    m = float(np.max(np.abs(r))) if r.size else 0.0
    if m == 0.0 or not math.isfinite(m):
        return 0.0 if m == 0.0 else math.inf
    with np.errstate(over="ignore"):
        return m * m * float(np.sum((r / m) ** 2))


def _three_layer_args(a, b, s, u, v, names=("a", "b")):
    na, nb = names
    a = as_float_array(a, na)
    b = as_float_array(b, nb)
    s = as_float_array(s, "s")
    if a.ndim != 2 or b.shape != a.shape or a.size == 0:
        raise ValueError(
            f"{na} and {nb} must be non-empty (n_hidden, n_modes) arrays of equal shape, got {a.shape} and {b.shape}"
        )
    if a.size > MAX_THREE_LAYER_ENTRIES:
        raise ValueError(
            f"{na} must have n_hidden * n_modes <= {MAX_THREE_LAYER_ENTRIES} (MAX_THREE_LAYER_ENTRIES), got shape {a.shape}"
        )
    if s.shape != (a.shape[1],):
        raise ValueError(f"s must have shape (n_modes,) = ({a.shape[1]},), got {s.shape}")
    u = np.zeros_like(b) if u is None else as_float_array(u, "u")
    v = np.zeros_like(a) if v is None else as_float_array(v, "v")
    if u.shape != a.shape or v.shape != a.shape:
        raise ValueError(f"u and v must have the shape of a, {a.shape}, got {u.shape} and {v.shape}")
    with np.errstate(over="ignore"):
        A, B = a + v, b + u
    if not (np.all(np.isfinite(A)) and np.all(np.isfinite(B))):
        raise ValueError(f"{na} + v or {nb} + u overflows double precision (scale {na}, {nb}, u, v down)")
    return a, b, s, A, B


def _residual(A, B, s) -> np.ndarray:
    """``R = diag(s) - A^T B``; raises when it overflows."""
    with np.errstate(over="ignore", invalid="ignore"):
        r = np.diag(s) - A.T @ B
    if not np.all(np.isfinite(r)):
        raise ValueError("diag(s) - (a + v)^T (b + u) overflows double precision (scale a, b, s, u, v down)")
    return r


_OVERFLOW_HINT = (
    "overflows double precision for these a, b, s, u, v (scale them down: the energy scales as the fourth power "
    "of a common factor of a and b)"
)


def three_layer_energy(
    a: ArrayLike, b: ArrayLike, s: ArrayLike, u: ArrayLike | None = None, v: ArrayLike | None = None
) -> float:
    """Energy of a linear three-layer net in the mode basis: eq. 10 (plain) and Supp. eq. 31 (residual).

    .. math:: E = \\tfrac12 \\lVert \\mathrm{diag}(s) - (a + v)^\\top (b + u) \\rVert_F^2

    Parameters
    ----------
    a, b : array_like, shape (n_hidden, n_modes)
        Column ``alpha`` is the paper's ``a^alpha`` (input mode -> hidden) and ``b^alpha``
        (hidden -> output mode); ``n_hidden * n_modes <=`` :data:`MAX_THREE_LAYER_ENTRIES`.
    s : array_like, shape (n_modes,)
        Singular values of the input-output correlation matrix.
    u, v : array_like, shape (n_hidden, n_modes), optional
        Skip vectors (columns ``u^alpha``, ``v^alpha`` of orthogonal matrices, eqs. 19-20); ``None``
        (zero) is the plain network. ``tau = 1``.

    Returns
    -------
    float
        Finite and >= 0 (the sum of squares is formed without intermediate overflow).

    Raises
    ------
    ValueError
        Shapes that do not match, NaN or infinity, arrays that do not convert to real numbers
        (e.g. non-numeric strings), too many entries, or an energy that overflows double
        precision.
    TypeError
        Complex arrays.
    """
    _, _, s, A, B = _three_layer_args(a, b, s, u, v)
    e = 0.5 * _sum_of_squares(_residual(A, B, s))
    if not math.isfinite(e):
        raise ValueError(f"the energy {_OVERFLOW_HINT}")
    return e


def _field_of_residual(A, B, r, printed):
    """``(da/dt, db/dt)`` from the residual ``r = diag(s) - A^T B``: the gradient of eq. 10, or the printed eqs. 13-14 / 17-18."""
    da = B @ r.T
    if not printed:
        db = A @ r
    else:
        m = A.T @ B
        db = np.empty_like(B)
        db[:, 0] = r[0, 0] * A[:, 0] - m[0, 1] * A[:, 1]
        db[:, 1] = r[1, 1] * A[:, 1] - m[1, 0] * A[:, 0]
    return da, db


def _three_layer_field(A, B, s, printed):
    r = _residual(A, B, s)
    with np.errstate(over="ignore", invalid="ignore"):
        return _field_of_residual(A, B, r, printed)


def three_layer_gradient_field(
    a: ArrayLike,
    b: ArrayLike,
    s: ArrayLike,
    u: ArrayLike | None = None,
    v: ArrayLike | None = None,
    printed: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Right-hand sides ``(da/dt, db/dt)`` of eqs. 8-9 / 11-18 of Orhan 2017 (gradient flow of the energy).

    ``da/dt = (b + u) R^T`` and ``db/dt = (a + v) R`` with ``R = diag(s) - (a + v)^T (b + u)``.
    The paper's printed eqs. 13-14 and 17-18 use ``(a^1 . b^2) a^2`` where the gradient of eq. 10
    (and the paper's own eq. 9) gives ``(a^2 . b^1) a^2``; ``printed=True`` (two modes only)
    integrates the printed form instead, which is not a gradient flow.

    Parameters
    ----------
    a, b, s, u, v
        As in :func:`three_layer_energy`.
    printed : bool
        Use the printed eqs. 13-14 / 17-18 (requires ``n_modes = 2``).

    Returns
    -------
    (da, db) : tuple of ndarray, shape (n_hidden, n_modes)
        Finite.

    Raises
    ------
    ValueError
        As :func:`three_layer_energy`; ``printed=True`` with ``n_modes != 2``; a field that
        overflows double precision.
    TypeError
        ``printed`` not a bool; complex arrays.
    """
    printed = check_bool(printed, "printed")
    a, _, s, A, B = _three_layer_args(a, b, s, u, v)
    if printed and a.shape[1] != 2:
        raise ValueError("printed=True implements eqs. 13-14 / 17-18, which have n_modes = 2")
    da, db = _three_layer_field(A, B, s, printed)
    if not (np.all(np.isfinite(da)) and np.all(np.isfinite(db))):
        raise ValueError(f"the gradient field {_OVERFLOW_HINT}")
    return da, db


@dataclass(frozen=True)
class ThreeLayerTrajectory(Result):
    """Solution of the three-layer flow: ``a[k]``, ``b[k]`` at ``t[k]`` and the energy."""

    t: np.ndarray
    a: np.ndarray
    b: np.ndarray
    energy: np.ndarray


def three_layer_flow(
    a0: ArrayLike,
    b0: ArrayLike,
    s: ArrayLike,
    t: ArrayLike,
    u: ArrayLike | None = None,
    v: ArrayLike | None = None,
    printed: bool = False,
    rtol: float = 1e-9,
    atol: float = 1e-12,
) -> ThreeLayerTrajectory:
    """Integrate eqs. 11-14 (plain, ``u = v = None``) or 15-18 (residual) of Orhan 2017 with LSODA.

    Parameters
    ----------
    a0, b0 : array_like, shape (n_hidden, n_modes)
        Initial values; ``2 n_hidden n_modes <=`` :data:`MAX_FLOW_DIMENSION`.
    s : array_like, shape (n_modes,)
    t : array_like
        Strictly increasing, finite output times (``t[0]`` is the initial time; at most 10^6).
        For gradient descent with learning rate ``eta``, step ``k`` corresponds to ``t = k eta``.
    u, v : array_like, optional
        Skip vectors (residual network).
    printed : bool
        Use the paper's printed eqs. 13-14/17-18 (see :func:`three_layer_gradient_field`).
    rtol : float
        Relative tolerance of the integrator, in (0, 1).
    atol : float
        Absolute tolerance, finite and > 0.

    Returns
    -------
    ThreeLayerTrajectory
        Finite ``a``, ``b`` of shape (len(t), n_hidden, n_modes) and the energy at every time.

    Raises
    ------
    ValueError
        Bad shapes or values (as :func:`three_layer_energy`), a bad ``t``, ``rtol`` or ``atol``,
        or an integration that cannot be carried out in bounded time and range: more than
        :data:`MAX_FLOW_EVALUATIONS` right-hand sides (e.g. a time grid of spacing 1e-300 or
        ``s = 1e300``), solver failure, or a solution that leaves the float64 range.
    TypeError
        ``printed`` not a bool; complex arrays; a complex, boolean or non-numeric ``rtol`` or
        ``atol``.
    """
    printed = check_bool(printed, "printed")
    rtol, atol = _check_tolerances(rtol, atol)
    a0, b0, s, _, _ = _three_layer_args(a0, b0, s, u, v, names=("a0", "b0"))
    if 2 * a0.size > MAX_FLOW_DIMENSION:
        raise ValueError(
            f"a0 must have 2 n_hidden n_modes <= {MAX_FLOW_DIMENSION} (MAX_FLOW_DIMENSION), got shape {a0.shape}"
        )
    if printed and a0.shape[1] != 2:
        raise ValueError("printed=True implements eqs. 13-14 / 17-18, which have n_modes = 2")
    t = _check_times(t)
    try:
        three_layer_energy(a0, b0, s, u, v)  # the initial energy must be representable
    except ValueError as exc:  # name the flow's own arguments (a0, b0), not the energy's
        raise ValueError(str(exc).replace("these a, b,", "these a0, b0,")) from None
    u = np.zeros_like(b0) if u is None else as_float_array(u, "u")
    v = np.zeros_like(a0) if v is None else as_float_array(v, "v")
    shape = a0.shape
    size = a0.size

    def rhs(y):
        A = y[:size].reshape(shape) + v
        B = y[size:].reshape(shape) + u
        da, db = _field_of_residual(A, B, np.diag(s) - A.T @ B, printed)
        return np.concatenate([da.ravel(), db.ravel()])

    scales = f"max |s| = {float(np.max(np.abs(s))):.3g}, max |a0|, |b0| = {float(max(np.max(np.abs(a0)), np.max(np.abs(b0)))):.3g}"
    y = _integrate(rhs, np.concatenate([a0.ravel(), b0.ravel()]), t, rtol, atol, scales)
    a = y[:, :size].reshape(-1, *shape)
    b = y[:, size:].reshape(-1, *shape)
    e = np.array([three_layer_energy(a[k], b[k], s, u, v) for k in range(len(t))])
    return ThreeLayerTrajectory(t, a, b, e)


@dataclass(frozen=True)
class ThreeLayerHessian(Result):
    """Hessian of eq. 10 / 31 in the parameter order ``(a^1, ..., a^m, b^1, ..., b^m)``.

    ``full`` is the whole Hessian, ``aa`` and ``bb`` its first-layer and second-layer blocks
    (Supp. eqs. 29-30 / 32-33 are entries of ``aa``): ``aa = I_m (x) (B B^T)`` with ``B = b + u``.
    """

    full: np.ndarray
    aa: np.ndarray
    bb: np.ndarray


def three_layer_hessian(
    a: ArrayLike, b: ArrayLike, s: ArrayLike, u: ArrayLike | None = None, v: ArrayLike | None = None
) -> ThreeLayerHessian:
    """Analytic Hessian of the three-layer energy (Supp. Note 2 of Orhan 2017).

    With ``A = a + v``, ``B = b + u``, ``R = diag(s) - A^T B``:

    - ``d2E / da_i^alpha da_k^gamma = delta_{alpha gamma} sum_beta B_i^beta B_k^beta`` (eqs. 29-30, 32-33),
    - ``d2E / db_i^beta db_k^delta = delta_{beta delta} sum_alpha A_i^alpha A_k^alpha``,
    - ``d2E / da_i^alpha db_k^delta = -delta_{ik} R_{alpha delta} + B_i^delta A_k^alpha``.

    Parameters
    ----------
    a, b, s, u, v
        As in :func:`three_layer_energy`.

    Returns
    -------
    ThreeLayerHessian
        Finite blocks.

    Raises
    ------
    ValueError
        As :func:`three_layer_energy`; a Hessian that overflows double precision.
    TypeError
        Complex arrays.

    Notes
    -----
    Supp. Note 2 argues from the ``aa`` block: it is singular exactly when the rows of ``B`` are
    linearly dependent, which contains the hyperplanes ``b_i^beta = b_j^beta`` (all beta) and
    ``b_i^beta = 0``. The *full* Hessian's columns for ``a_i^alpha`` and ``a_j^alpha`` are equal
    on that hyperplane only where row ``alpha`` of ``R`` vanishes (the cross block carries
    ``-delta_{ik} R``), so the full Hessian is not singular there in general. With skips
    (``u`` rows distinct), ``b_i = b_j`` leaves ``B`` regular: the singular set moves to
    ``b_i + u_i = b_j + u_j`` rather than disappearing.
    """
    a, _, s, A, B = _three_layer_args(a, b, s, u, v)
    n, m = a.shape
    r = _residual(A, B, s)
    with np.errstate(over="ignore", invalid="ignore"):
        bbt = B @ B.T
        aat = A @ A.T
        eye = np.eye(m)
        aa = np.kron(eye, bbt)
        bb = np.kron(eye, aat)
        ab = np.zeros((n * m, n * m))
        for al in range(m):
            for de in range(m):
                blk = -r[al, de] * np.eye(n) + np.outer(B[:, de], A[:, al])
                ab[al * n : (al + 1) * n, de * n : (de + 1) * n] = blk
        full = np.block([[aa, ab], [ab.T, bb]])
    if not np.all(np.isfinite(full)):
        raise ValueError(f"the Hessian {_OVERFLOW_HINT}")
    return ThreeLayerHessian(full, aa, bb)
