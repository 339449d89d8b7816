"""Skip matrices of controlled orthogonality (Orhan 2017, Sec. 2.4.2, Figs. 9-10, Supp. Note 4).

Private submodule of :mod:`meanfield.landscape`: :func:`folded_orthogonal` (Fig. 9: a Haar
orthogonal matrix whose columns are folded onto ``n / 2^f`` orthonormal ones),
:func:`column_covariance_spectrum` (the target spectrum ``exp(-tau (i - 1))`` of Fig. 10a),
:func:`controlled_skip_matrix` (our construction with that column Gram spectrum and eigenvalues on
the unit circle) and :func:`supp4_skip_matrix` (the printed recipe of Supplementary Note 4).
"""

from __future__ import annotations

import math

import numpy as np

from .._checks import check_bool, check_rng, check_scalar
from ._common import _int

__all__ = ["column_covariance_spectrum", "controlled_skip_matrix", "folded_orthogonal", "supp4_skip_matrix"]

#: Largest size ``n`` of the skip matrices (:func:`folded_orthogonal`, :func:`controlled_skip_matrix`,
#: :func:`supp4_skip_matrix`): their QR / eigen-decompositions cost O(n^3) (about 10 s at n = 1024
#: on two cores). The paper uses n = 128.
MAX_SKIP_SIZE = 1024

#: Largest ``tau (n - 1)`` of the skip matrices of controlled orthogonality: the column Gram matrix
#: (or, for Supp. Note 4, the covariance ``S``) has condition number ``exp(tau (n - 1))``, which
#: must stay well below ``1 / eps = 4.5e15`` for the stated spectrum to be resolved in double
#: precision (``exp(30) = 1.1e13``); beyond it the returned matrix would not have the properties
#: it is constructed for. ``tau = 0.05`` at ``n = 128`` gives 6.35.
MAX_TAU_SPREAD = 30.0


def _haar(n: int, rng: np.random.Generator) -> np.ndarray:
    from ..init import haar_orthogonal

    return haar_orthogonal(n, n, rng=rng)


def folded_orthogonal(n: int, n_orthonormal: int, rng: int | np.random.Generator | None = None) -> np.ndarray:
    """A Haar orthogonal matrix folded until ``n_orthonormal`` distinct orthonormal columns remain (Fig. 9 of Orhan 2017).

    Folding copies the first half of the columns onto the second half; after ``f`` folds column
    ``j`` equals column ``j mod (n / 2^f)`` of the orthogonal matrix.

    Parameters
    ----------
    n : int
        Size, in [1, :data:`MAX_SKIP_SIZE`].
    n_orthonormal : int
        ``n / 2^f`` for an integer ``f >= 0`` (``n`` itself: no folding; 1: every column equal).
    rng : None, int or numpy.random.Generator
        Random source (``meanfield._checks.check_rng``; an int ``k`` gives the matrix drawn from
        ``numpy.random.default_rng(k)``).

    Returns
    -------
    ndarray, shape (n, n)
        Rank ``n_orthonormal``.

    Raises
    ------
    ValueError
        ``n`` out of range or ``n_orthonormal`` not of the form ``n / 2^f``.
    TypeError
        An ``rng`` that is not None, an int or a Generator.
    """
    n = _int(n, "n", minimum=1, maximum=MAX_SKIP_SIZE)
    k = _int(n_orthonormal, "n_orthonormal", minimum=1, maximum=n)
    f = n // k
    if n % k or f & (f - 1):
        raise ValueError(f"n_orthonormal must be n / 2^f for an integer f >= 0 (n = {n}), got {k}")
    q = _haar(n, check_rng(rng))
    return np.ascontiguousarray(q[:, np.arange(n) % k])


def _check_n_tau(n, tau, limit=True):
    n = _int(n, "n", minimum=1, maximum=MAX_SKIP_SIZE if limit else None)
    tau = check_scalar(tau, "tau")
    if tau < 0:
        raise ValueError(f"tau must be >= 0 (0: orthogonal), got {tau!r}")
    if limit and tau * (n - 1) > MAX_TAU_SPREAD:
        raise ValueError(
            f"tau (n - 1) must be <= {MAX_TAU_SPREAD} (MAX_TAU_SPREAD), got tau = {tau!r} with n = {n}: the "
            f"spectrum exp(-tau (i - 1)) spans a condition number exp(tau (n - 1)) that double precision "
            "cannot resolve in a computed matrix (column_covariance_spectrum(n, tau, log=True) gives the "
            "target spectrum itself at any tau)"
        )
    return n, tau


#: ``-log`` of the smallest positive normal double: ``exp(-x)`` underflows for larger ``x``.
_LOG_TINY = -math.log(np.finfo(np.float64).tiny)


def column_covariance_spectrum(n: int, tau: float, log: bool = False) -> np.ndarray:
    """Target spectrum ``lambda_i = exp(-tau (i - 1))``, ``i = 1..n`` (Sec. 2.4.2, Fig. 10a of Orhan 2017).

    Parameters
    ----------
    n : int
        Number of eigenvalues, in [1, 10^7].
    tau : float
        Non-orthogonality, finite and >= 0.
    log : bool
        Return ``log lambda_i = -tau (i - 1)`` instead (representable at any ``tau``).

    Returns
    -------
    ndarray, shape (n,)
        Decreasing from 1 (or from 0 on the log scale).

    Raises
    ------
    ValueError
        ``n`` out of range, ``tau`` negative or non-finite, or (with ``log=False``) eigenvalues
        that underflow double precision (``tau (n - 1) > 708.4``): use ``log=True``.
    TypeError
        ``log`` not a bool; complex or non-numeric ``tau``.
    """
    log = check_bool(log, "log")
    n, tau = _check_n_tau(n, tau, limit=False)
    if n > 10**7:
        raise ValueError(f"n must be <= 10^7, got {n}")
    exponent = -tau * np.arange(n)
    if log:
        return exponent
    if tau * (n - 1) > _LOG_TINY:
        raise ValueError(
            f"tau (n - 1) = {tau * (n - 1):.6g} > {_LOG_TINY:.1f}: the smallest eigenvalues underflow "
            "double precision; use log=True for log lambda_i = -tau (i - 1)"
        )
    return np.exp(exponent)


def controlled_skip_matrix(n: int, tau: float, rng: int | np.random.Generator | None = None) -> np.ndarray:
    """A skip matrix whose eigenvalues are those of a Haar rotation and whose column Gram matrix
    ``Sigma^T Sigma`` has eigenvalues proportional to ``exp(-tau (i - 1))`` (our construction for
    Sec. 2.4.2 / Fig. 10 of Orhan 2017).

    Supplementary Note 4 is cut off in the text of the paper available to us, and its printed
    recipe ``Sigma = T O T^{-1}`` fixes the eigenvector correlations rather than the column
    covariance. This construction satisfies both properties the main text asks for exactly:

    1. draw ``O`` Haar on SO(n) and take its eigen-angles ``theta_k`` (conjugate pairs, plus a
       real eigenvalue 1 when ``n`` is odd);
    2. the target Gram spectrum ``kappa exp(-tau (i - 1))`` with ``kappa = exp(tau (n - 1) / 2)``
       (so that its product is 1 = ``|det Sigma|^2``) comes in reciprocal pairs
       ``(sigma_k^2, sigma_k^{-2})``, ``i <-> n + 1 - i``;
    3. each pair becomes a real 2x2 block ``M_k = [[cos t, -r sin t], [sin t / r, cos t]]``:
       ``det M_k = 1`` and trace ``2 cos t`` give eigenvalues ``exp(+-i t)``, and
       ``r - 1/r = (sigma - 1/sigma) / |sin t|`` gives singular values
       ``(sigma, 1/sigma)``;
    4. ``Sigma = V (M_1 (+) M_2 (+) ...) V^T`` with ``V`` Haar orthogonal, which keeps both spectra.

    ``tau = 0`` returns an orthogonal matrix (every ``M_k`` a rotation).

    Parameters
    ----------
    n : int
        Size, in [1, :data:`MAX_SKIP_SIZE`].
    tau : float
        Non-orthogonality, >= 0, with ``tau (n - 1) <=`` :data:`MAX_TAU_SPREAD` (the Gram
        matrix's condition number ``exp(tau (n - 1))`` must be resolvable in double precision).
    rng : None, int or numpy.random.Generator
        Random source (``meanfield._checks.check_rng``). Draw order: ``O`` (Haar), the block
        permutation, ``V`` (Haar).

    Returns
    -------
    ndarray, shape (n, n)
        Finite.

    Raises
    ------
    ValueError
        ``n`` out of range, ``tau < 0`` or non-finite, or ``tau (n - 1) > MAX_TAU_SPREAD``.
    TypeError
        Complex or non-numeric ``tau``; an ``rng`` of the wrong type.
    """
    n, tau = _check_n_tau(n, tau)
    rng = check_rng(rng)
    o = _haar(n, rng)
    if np.linalg.det(o) < 0:
        o[:, 0] = -o[:, 0]
    ang = np.angle(np.linalg.eigvals(o))
    pos = np.sort(ang[ang > 1e-12])[: n // 2]
    if pos.size < n // 2:  # measure-zero event (eigenvalue pair at +-1); redraw angles uniformly
        pos = rng.uniform(0.1, math.pi - 0.1, size=n // 2)
    log_g = tau * ((n - 1) / 2.0 - np.arange(n))  # log of kappa * lambda_i
    sig2 = np.exp(log_g[: n // 2])  # sigma_k^2 >= 1, paired with index n + 1 - i
    blocks = np.zeros((n, n))
    for k, (th, s2) in enumerate(zip(rng.permutation(pos), sig2)):
        # r^2 + r^-2 = 2 + w^2 with w = (sigma - 1/sigma) / |sin t|, i.e. r - 1/r = w
        sg = math.sqrt(s2)
        w = (sg - 1.0 / sg) / abs(math.sin(th))
        r = 0.5 * (w + math.sqrt(w * w + 4.0))
        i = 2 * k
        blocks[i : i + 2, i : i + 2] = [[math.cos(th), -r * math.sin(th)], [math.sin(th) / r, math.cos(th)]]
    if n % 2:
        blocks[n - 1, n - 1] = 1.0
    v = _haar(n, rng)
    out = v @ blocks @ v.T
    if not np.all(np.isfinite(out)):  # cannot happen within MAX_TAU_SPREAD; never return inf silently
        raise ValueError(f"tau = {tau!r} gives a matrix that overflows double precision; use a smaller tau")
    return out


def supp4_skip_matrix(n: int, tau: float, rng: int | np.random.Generator | None = None) -> np.ndarray:
    """The printed recipe of Supp. Note 4 of Orhan 2017: ``Sigma = T O T^{-1}``, ``R = T T^T`` the correlation of ``S = Q Lambda Q^T``.

    ``Sigma`` has the eigenvalues of the Haar orthogonal ``O`` (on the unit circle); its
    eigenvectors ``T u_k`` are correlated through ``R``. Kept for comparison with
    :func:`controlled_skip_matrix`, whose column Gram matrix has the stated spectrum exactly.

    Parameters
    ----------
    n : int
        Size, in [1, :data:`MAX_SKIP_SIZE`].
    tau : float
        >= 0 with ``tau (n - 1) <=`` :data:`MAX_TAU_SPREAD` (``S`` has condition number
        ``exp(tau (n - 1))`` and must be numerically positive definite for its Cholesky factor).
    rng : None, int or numpy.random.Generator
        Random source (``meanfield._checks.check_rng``). Draw order: ``Q``, then ``O``.

    Returns
    -------
    ndarray, shape (n, n)
        Finite.

    Raises
    ------
    ValueError
        ``n`` out of range, ``tau < 0`` or non-finite, ``tau (n - 1) > MAX_TAU_SPREAD``, or a
        correlation matrix that is numerically singular.
    TypeError
        Complex or non-numeric ``tau``; an ``rng`` of the wrong type.
    """
    n, tau = _check_n_tau(n, tau)
    rng = check_rng(rng)
    q = _haar(n, rng)
    s = (q * np.exp(-tau * np.arange(n))) @ q.T
    d = 1.0 / np.sqrt(np.diag(s))
    try:
        t = np.linalg.cholesky(s * d[:, None] * d[None, :])
    except np.linalg.LinAlgError:
        raise ValueError(
            f"tau = {tau!r} makes the correlation matrix R numerically singular (condition number "
            f"exp(tau (n - 1)) = {math.exp(tau * (n - 1)):.3g}); use a smaller tau"
        ) from None
    o = _haar(n, rng)
    out = t @ o @ np.linalg.inv(t)
    if not np.all(np.isfinite(out)):
        raise ValueError(f"tau = {tau!r} gives a matrix that overflows double precision; use a smaller tau")
    return out
