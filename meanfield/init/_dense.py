"""Dense-layer weight laws: Gaussian, uniform, Rademacher, Haar-orthogonal; He and Glorot variances.

Weights have shape ``(fan_out, fan_in)`` and act as ``h = W x``; every law is scaled so that
``Var W_ij = sigma_w2 / fan_in`` (the mean-field convention of ``meanfield.dense``). The
orthogonal law is scaled so that ``W^T W = sigma_w2 * fan_out / fan_in * I`` when
``fan_out >= fan_in`` (and ``W W^T = sigma_w2 * I`` otherwise): the same mean squared entry, and
``|W x|^2 = (fan_out / fan_in) sigma_w2 |x|^2`` exactly in the first case.

Randomness: every stochastic function takes ``rng`` (``None``, an ``int``, a ``SeedSequence`` or a
``numpy.random.Generator``; an int ``n`` draws exactly the stream of ``numpy.random.default_rng(n)``).

Batches and backends: :func:`dense_weights` and :func:`haar_orthogonal` take ``batch_shape``
(leading axes of independent matrices, e.g. one per simulated network) and ``backend``
(``"numpy"`` or ``"cupy"``, :mod:`meanfield.backend`): the Monte-Carlo simulators draw their
weights through them.
"""

from __future__ import annotations

import math
from typing import Any

from meanfield._deprecate import renamed_kwargs
from meanfield._docstrings import doc_sections

from ..backend import Backend, astype, diagonal, get_backend, matrix_transpose
from ._args import DOC_MATRIX_DRAW, batch_shape, check_batch_size, check_law, check_size, int_arg, nonneg, real

__all__ = ["MAX_SLOPE", "WEIGHT_LAWS", "dense_weights", "glorot_sigma_w2", "haar_orthogonal", "he_sigma_w2"]

#: Names accepted by :func:`dense_weights` for the law of the entries.
WEIGHT_LAWS = ("gaussian", "uniform", "rademacher", "orthogonal")
#: Largest ``|slope|`` of :func:`he_sigma_w2` / :func:`glorot_sigma_w2`: a safety margin below
#: ``|slope| ~ 9.5e153``, where the gain ``2 / (1 + slope^2)`` falls below the smallest normal
#: float64.
MAX_SLOPE = 1e150


def _leaky_gain(slope: float) -> float:
    """``2 / (1 + slope^2)`` = ``E[y^2] / E[phi_a(y)^2]`` for zero-mean symmetric ``y`` (Grzejdziak 2023, supplement)."""
    slope = real(slope, "slope")
    if abs(slope) > MAX_SLOPE:
        raise ValueError(
            f"slope must satisfy |slope| <= 1e150 (the gain 2 / (1 + slope^2) underflows beyond), got {slope!r}"
        )
    return 2.0 / (1.0 + slope * slope)


def he_sigma_w2(slope: float = 0.0) -> float:
    """He et al. (2015) weight variance for leaky ReLU of negative ``slope``: ``2 / (1 + slope^2)``.

    With ``Var W = sigma_w2 / fan_in`` this keeps the second moment constant through depth:
    ``E[phi_a(y)^2] = (1 + a^2) / 2 E[y^2]`` for any zero-mean symmetric ``y`` (Grzejdziak 2023,
    the supplement's lemma proving Prop. 3.2), so ``sigma_w2 = 2 / (1 + a^2)`` is Prop. 3.2's
    ``Var W = 2 / (w (a^2 + 1))`` with ``w`` the fan-in.

    Parameters
    ----------
    slope : float
        Negative slope ``a`` of the leaky ReLU (0: ReLU, 1: linear), ``|slope| <= 1e150``.

    Returns
    -------
    float
        ``sigma_w2`` in the library convention (``Var W_ij = sigma_w2 / fan_in``), a normal float.

    Raises
    ------
    ValueError
        ``slope`` NaN, infinite or beyond ``MAX_SLOPE`` (1e150, a safety margin below
        ``|slope| ~ 9.5e153``, where the variance would fall below the smallest normal float64).
    TypeError
        ``slope`` a bool, complex number, string or array.

    Notes
    -----
    Grzejdziak 2023, Prop. 3.2.
    """
    return _leaky_gain(slope)


def glorot_sigma_w2(fan_in: int, fan_out: int, slope: float | None = None) -> float:
    """Glorot & Bengio (2010) variance ``2 / (fan_in + fan_out)``, returned as ``sigma_w2 = fan_in * Var W``.

    Parameters
    ----------
    fan_in, fan_out : int
        Layer sizes, ``1 <= fan <= 2**31``.
    slope : float, optional
        If given, the variance is multiplied by the leaky-ReLU gain ``2 / (1 + slope^2)`` (the
        convention of ``torch.nn.init.xavier_normal_(gain=calculate_gain("leaky_relu", slope))``),
        so that for ``fan_in == fan_out`` it equals :func:`he_sigma_w2`; ``|slope| <= 1e150``.
        ``None`` (default) is the original, activation-agnostic Glorot variance used in Fig. 1
        of Grzejdziak 2023.

    Returns
    -------
    float
        ``sigma_w2`` (``Var W_ij = sigma_w2 / fan_in``).

    Raises
    ------
    ValueError
        ``fan_in`` or ``fan_out`` outside ``[1, 2**31]`` or not an integer (a bool, a string or a
        non-integral float), or a non-finite or too large ``slope``.
    TypeError
        A bool, complex number, string or array as ``slope``; a complex ``fan_in`` or
        ``fan_out``.
    """
    fan_in = int_arg(fan_in, "fan_in", 1)
    fan_out = int_arg(fan_out, "fan_out", 1)
    gain = 1.0 if slope is None else _leaky_gain(slope)
    return gain * 2.0 * fan_in / (fan_in + fan_out)


def _orthonormal(big: int, small: int, gen: Any, b: Backend, batch: tuple[int, ...]) -> Any:
    """``batch + (big, small)`` matrices with orthonormal columns, Haar distributed (QR with R's signs absorbed)."""
    xp = b.xp
    z = gen.standard_normal(batch + (big, small))
    q, r = xp.linalg.qr(z)
    # sign(0) would zero a column; R's diagonal is a.s. non-zero
    d = diagonal(xp, r)
    return q * xp.where(d < 0, -xp.ones_like(d), xp.ones_like(d))[..., None, :]


def _sizes(n_out, n_in, batch) -> tuple[int, int, tuple[int, ...]]:
    n_out = int_arg(n_out, "n_out", 1)
    n_in = int_arg(n_in, "n_in", 1)
    check_size(n_out * n_in, "n_out * n_in")
    batch = batch_shape(batch)
    check_batch_size(math.prod(batch) * n_out * n_in, "prod(batch_shape) * n_out * n_in")
    return n_out, n_in, batch


@renamed_kwargs(batch="batch_shape")
@doc_sections(matrix_draw=DOC_MATRIX_DRAW)
def haar_orthogonal(
    n_out: int, n_in: int, rng: Any = None, *, batch: int | tuple[int, ...] = (), backend: str | Backend = "numpy"
) -> Any:
    """A Haar-distributed matrix with orthonormal columns (``n_out >= n_in``) or rows.

    QR of a Gaussian matrix with the signs of R's diagonal absorbed (Mezzadri 2007), which makes
    the law exactly Haar rather than biased by the QR convention.

    Parameters
    ----------
    n_out, n_in : int
        Shape, each ``>= 1``, ``n_out * n_in <= 2**29``.
    {matrix_draw}

    Returns
    -------
    array, shape ``batch_shape + (n_out, n_in)``
        On ``backend``.

    Raises
    ------
    ValueError
        Sizes out of range or not integers (bools, strings, non-integral floats), an unknown
        backend.
    TypeError
        Complex sizes; a bad ``rng``; a ``batch_shape`` that is not an int, a tuple or a list.

    Examples
    --------
    >>> import numpy as np
    >>> q = haar_orthogonal(4, 2, rng=0)
    >>> bool(np.allclose(q.T @ q, np.eye(2)))
    True
    >>> haar_orthogonal(3, 5, rng=0, batch_shape=2).shape
    (2, 3, 5)
    """
    n_out, n_in, batch = _sizes(n_out, n_in, batch)
    b = get_backend(backend)
    gen = b.rng(rng)
    q = _orthonormal(max(n_out, n_in), min(n_out, n_in), gen, b, batch)
    return q if n_out >= n_in else matrix_transpose(b.xp, q)


@renamed_kwargs(batch="batch_shape")
@doc_sections(matrix_draw=DOC_MATRIX_DRAW)
def dense_weights(
    n_out: int,
    n_in: int,
    sigma_w2: float = 1.0,
    law: str = "gaussian",
    rng: Any = None,
    *,
    batch: int | tuple[int, ...] = (),
    backend: str | Backend = "numpy",
) -> Any:
    """Weight matrices of shape ``(n_out, n_in)`` with ``E W_ij^2 = sigma_w2 / n_in``: the library's one sampler.

    The dense layers of every simulator in :mod:`meanfield.simulate` are drawn here
    (one matrix per network with ``batch_shape=(n_networks,)``, on the simulation's ``backend``).

    Parameters
    ----------
    n_out, n_in : int
        Fan-out and fan-in (>= 1), ``n_out * n_in <= 2**29``.
    sigma_w2 : float
        Weight variance times fan-in (>= 0, finite).
    law : {"gaussian", "uniform", "rademacher", "orthogonal"}
        Law of the entries (kurtosis 3, 1.8, 1; orthogonal as in the module notes: Haar matrices with
        orthonormal columns or rows, scaled to the same mean squared entry).
    {matrix_draw}

    Returns
    -------
    array, shape ``batch_shape + (n_out, n_in)``
        Finite entries, on ``backend``. For one draw ``batch_shape=(k,)`` gives the numbers of ``k``
        successive unbatched draws from the same Generator (Gaussian, uniform and Rademacher laws).

    Raises
    ------
    ValueError
        Sizes out of range or not integers (bools, strings, non-integral floats), a negative or
        non-finite ``sigma_w2``, an unknown ``law`` or backend.
    TypeError
        Bools, complex numbers or strings as ``sigma_w2``; complex sizes; a bad ``rng``; a
        ``batch_shape`` that is not an int, a tuple or a list.

    Notes
    -----
    The dense convention of the design notes, ``W_ij ~ N(0, sigma_w2 / fan_in)`` (Xiao et al. 2018 eq. 2.2
    for one-tap kernels; Grzejdziak 2023 uses ``sigma_w2 = 2 / (1 + a^2)``, :func:`he_sigma_w2`).

    Examples
    --------
    >>> import numpy as np
    >>> w = dense_weights(300, 200, 2.0, rng=0)
    >>> round(float(np.mean(w**2) * 200), 1)
    2.0
    >>> dense_weights(3, 4, law="rademacher", rng=0, batch_shape=(5,)).shape
    (5, 3, 4)
    """
    n_out, n_in, batch = _sizes(n_out, n_in, batch)
    sigma_w2 = nonneg(sigma_w2, "sigma_w2")
    law = check_law(law, WEIGHT_LAWS)
    b = get_backend(backend)
    gen = b.rng(rng)
    shape = batch + (n_out, n_in)
    std = math.sqrt(sigma_w2 / n_in)
    if law == "gaussian":
        return std * gen.standard_normal(shape)
    if law == "uniform":  # U(-sqrt 3, sqrt 3) std: the numbers of Generator.uniform(-1, 1) (-1 + 2 r == 2 r - 1)
        return (std * math.sqrt(3.0)) * (2.0 * gen.random(shape) - 1.0)
    if law == "rademacher":
        return std * (2.0 * astype(b.xp, gen.integers(0, 2, size=shape), b.xp.float64) - 1.0)
    big = sigma_w2 * max(n_out, n_in)
    scale = math.sqrt(big / n_in) if math.isfinite(big) else math.sqrt(sigma_w2) * math.sqrt(max(n_out, n_in) / n_in)
    q = _orthonormal(max(n_out, n_in), min(n_out, n_in), gen, b, batch)
    return scale * (q if n_out >= n_in else matrix_transpose(b.xp, q))
