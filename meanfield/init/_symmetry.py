"""Deterministic, symmetric-feature initialisations of Blumenfeld, Gilboa & Soudry (2020), Blumenfeld et al. 2020.

- :func:`delta_kernel`: the delta kernel ``Delta`` of eq. 7;
- :func:`averaging_conv`: ``Delta (x) (1 / n_in) 1 1^T``, ConstNet's first layer and, with a 1 x 1
  kernel, the constant widening convolution (App. A);
- :func:`constnet`: every tensor of a ConstNet at initialisation (Sec. 2.2, 3.1, App. A);
- :func:`channel_matrix`, :func:`leakynet`: LeakyNet's ``Delta (x) s_l M_l`` tensors with ``M_l``
  the identity (``'I'``) or ``1 1^T / n`` (``'1'``) and ``s_l = -1 / slope`` on odd layers (Sec. 5.1,
  App. H), ``slope`` the leaky ReLU's negative slope (the paper's ``rho``);
- :func:`looks_linear_delta_orthogonal`: ``Delta (x) [[U, -U], [-U, U]]`` with Haar ``U`` scaled by
  ``sqrt(sigma_w2)`` (eq. 8, App. B).

Layout: convolution tensors have the paper's shape ``(k_1, ..., k_d, n_out, n_in)`` (Sec. 4.1),
the layout of :mod:`meanfield.symmetry`; dense tensors ``(n_out, n_in)``. It is the library's one
kernel layout: :func:`meanfield.init.periodic_conv` and the simulators take these tensors as they
are. Weight scales follow the library's ``sigma_w2`` convention (for an orthogonal construction,
``sigma_w2 = gain^2``: ``U`` is multiplied by ``sqrt(sigma_w2)``). :class:`ConstNetInit` is a
frozen dataclass with ``.replace()``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._checks import check_rng
from .._results import Result
from ..backend import Backend, concat, get_backend
from ._args import check_size, int_arg, nonneg, positive
from ._dense import haar_orthogonal
from ._looks_linear import looks_linear

__all__ = [
    "ConstNetInit",
    "averaging_conv",
    "channel_matrix",
    "constnet",
    "delta_kernel",
    "leakynet",
    "looks_linear_delta_orthogonal",
]


#: Largest number of blocks per ConstNet stage and of LeakyNet layers (each is one array).
MAX_LAYERS = 10**5


def _kernel_shape(kernel_shape: int | Sequence[int]) -> tuple[int, ...]:
    if isinstance(kernel_shape, (int, np.integer)) and not isinstance(kernel_shape, (bool, np.bool_)):
        kernel_shape = (kernel_shape,)
    if not isinstance(kernel_shape, (tuple, list)):
        raise TypeError(f"kernel_shape must be an odd int or a tuple of 1 or 2 odd ints, got {kernel_shape!r}")
    ks = tuple(int_arg(k, "kernel_shape", 1) for k in kernel_shape)
    if not 1 <= len(ks) <= 2 or any(k % 2 == 0 for k in ks):
        raise ValueError(f"kernel_shape must be 1 or 2 odd sizes (2k+1), got {kernel_shape!r}")
    check_size(int(np.prod(ks)), "prod(kernel_shape)")
    return ks


def delta_kernel(kernel_shape: int | Sequence[int] = (3, 3)) -> np.ndarray:
    """The delta kernel of eq. 7: ``Delta_ij = delta_i0 delta_j0`` with offsets indexed ``-k`` to ``k``.

    Parameters
    ----------
    kernel_shape : int or tuple of odd int
        ``(2k+1,)`` or ``(2k+1, 2k+1)``.

    Returns
    -------
    ndarray, shape kernel_shape

    Raises
    ------
    ValueError
        Even or non-positive sizes, more than two axes, more than 2^29 entries; entries of a
        tuple ``kernel_shape`` that are not integers (bools, strings, non-integral floats).
    TypeError
        ``kernel_shape`` neither an int nor a tuple or list (a bool, a float or a string
        included); complex sizes.
    """
    ks = _kernel_shape(kernel_shape)
    d = np.zeros(ks)
    d[tuple(k // 2 for k in ks)] = 1.0
    return d


def _kron_delta(ks: tuple[int, ...], m: np.ndarray) -> np.ndarray:
    return delta_kernel(ks)[(...,) + (None, None)] * m


def averaging_conv(n_out: int, n_in: int, kernel_shape: int | Sequence[int] = (3, 3)) -> np.ndarray:
    """``Delta (x) (1 / n_in) 1 1^T`` of shape ``(*kernel_shape, n_out, n_in)``: averages the input channels.

    ConstNet's first convolution (App. A: ``F_kl = delta_k1 delta_l1 / n_in``) and, with
    ``kernel_shape=(1, 1)``, the constant ``1 / n`` widening convolution.

    Parameters
    ----------
    n_out, n_in : int
        Output and input channels, >= 1.
    kernel_shape : int or tuple of odd int
        ``(2k+1,)`` or ``(2k+1, 2k+1)``.

    Returns
    -------
    ndarray, shape ``(*kernel_shape, n_out, n_in)``

    Raises
    ------
    ValueError
        Sizes < 1 or not integers (bools, strings, non-integral floats), a bad ``kernel_shape``
        (as :func:`delta_kernel`), more than 2^29 entries.
    TypeError
        Complex sizes; a ``kernel_shape`` neither an int nor a tuple or list (as
        :func:`delta_kernel`).
    """
    n_out = int_arg(n_out, "n_out", 1)
    n_in = int_arg(n_in, "n_in", 1)
    ks = _kernel_shape(kernel_shape)
    check_size(int(np.prod(ks)) * n_out * n_in, "prod(kernel_shape) * n_out * n_in")
    return _kron_delta(ks, np.full((n_out, n_in), 1.0 / n_in))


@dataclass(frozen=True)
class ConstNetInit(Result):
    """Every tensor of a ConstNet at initialisation (Blumenfeld et al. 2020, Sec. 3.1 eq. 4, App. A, Fig. 13).

    The network is ``first -> [blocks of stage 0] -> widen -> [blocks of stage 1] -> ... -> pool -> head``:

    - ``first``: averaging convolution from the ``n_input`` data channels to ``widths[0]``;
    - ``blocks[s]``: zero residual-branch kernels ``(*k, n_s, n_s)`` of the ConstNet blocks
      ``CB(a) = a + W * g(a) + b`` (eq. 4's ``O_i``) of stage ``s``;
    - ``widen_skip[s]``: the constant ``1 / n_s`` 1 x 1 convolution ``(1, 1, n_{s+1}, n_s)`` of the
      widening block between stages ``s`` and ``s + 1`` (applied with stride ``stride``);
    - ``widen_branch[s]``: its zero branch kernel ``(*k, n_{s+1}, n_s)``;
    - ``head``: the zero fully connected layer ``(n_classes, widths[-1])``;
    - ``widths``: the channel count of each stage, as validated by :func:`constnet` (a tuple of
      ints);
    - ``stride``: the spatial stride of each widening block.

    Biases are zero and not stored.
    """

    first: np.ndarray
    blocks: tuple[tuple[np.ndarray, ...], ...]
    widen_skip: tuple[np.ndarray, ...]
    widen_branch: tuple[np.ndarray, ...]
    head: np.ndarray
    widths: tuple[int, ...]
    stride: int


def constnet(
    widths: Sequence[int] = (16, 32, 64),
    blocks_per_stage: int | Sequence[int] = 2,
    n_input: int = 3,
    n_classes: int = 10,
    kernel_shape: int | Sequence[int] = (3, 3),
    stride: int = 2,
) -> ConstNetInit:
    """ConstNet at initialisation: averaging first layer, zero single-operation residual blocks,
    widening blocks with stride and a constant ``1 / n`` 1 x 1 conv, zero head (Blumenfeld et al. 2020, App. A).

    Parameters
    ----------
    widths : sequence of int
        Channel count of each stage (the paper widens by ``s``: ``n_{s+1} = s n_s``; any widths are allowed).
    blocks_per_stage : int or sequence of int
        ConstNet blocks per stage (>= 0), one number for all stages or one per stage.
    n_input : int
        Data channels (3 for RGB).
    n_classes : int
    kernel_shape : tuple of odd int
        Spatial kernel, 1-D or 2-D.
    stride : int
        Spatial stride of each widening block, ``1 <= stride <= 2**31``.

    Returns
    -------
    ConstNetInit

    Raises
    ------
    ValueError
        Empty ``widths``, sizes out of range (``blocks_per_stage <= 10^5`` per stage), more than
        2^29 numbers in all; sizes that are not integers (bools, strings, non-integral floats) in
        ``widths``, ``n_input``, ``n_classes``, ``stride``, as entries of ``blocks_per_stage`` or
        ``kernel_shape``, or a non-integral float ``blocks_per_stage``.
    TypeError
        ``widths`` not a sequence; a ``blocks_per_stage`` that is neither a number nor a
        sequence (a bool or a string included); a ``kernel_shape`` as in :func:`delta_kernel`;
        complex sizes.
    """
    if isinstance(widths, (str, bytes)) or not isinstance(widths, (tuple, list, np.ndarray)):
        raise TypeError(f"widths must be a sequence of integers, got {widths!r}")
    widths = tuple(int_arg(n, "widths", 1) for n in widths)
    if not widths:
        raise ValueError("widths must hold at least one stage width")
    if isinstance(blocks_per_stage, (int, float, np.integer, np.floating)) and not isinstance(
        blocks_per_stage, (bool, np.bool_)
    ):
        blocks_per_stage = [int_arg(blocks_per_stage, "blocks_per_stage", 0, MAX_LAYERS)] * len(widths)
    if not isinstance(blocks_per_stage, (tuple, list, np.ndarray)):
        raise TypeError(f"blocks_per_stage must be an int or one int per stage, got {blocks_per_stage!r}")
    counts = [int_arg(b, "blocks_per_stage", 0, MAX_LAYERS) for b in blocks_per_stage]
    if len(counts) != len(widths):
        raise ValueError(f"blocks_per_stage must give one count per stage ({len(widths)}), got {len(counts)}")
    n_input = int_arg(n_input, "n_input", 1)
    n_classes = int_arg(n_classes, "n_classes", 1)
    ks = _kernel_shape(kernel_shape)
    stride = int_arg(stride, "stride", 1)
    area = int(np.prod(ks))
    total = area * widths[0] * n_input + n_classes * widths[-1]
    total += sum(b * area * n * n for n, b in zip(widths, counts))
    total += sum((1 + area) * n * m for n, m in zip(widths[:-1], widths[1:]))
    check_size(total, "the total number of ConstNet parameters")
    ones = (1,) * len(ks)
    return ConstNetInit(
        first=averaging_conv(widths[0], n_input, ks),
        blocks=tuple(tuple(np.zeros(ks + (n, n)) for _ in range(b)) for n, b in zip(widths, counts)),
        widen_skip=tuple(averaging_conv(m, n, ones) for n, m in zip(widths[:-1], widths[1:])),
        widen_branch=tuple(np.zeros(ks + (m, n)) for n, m in zip(widths[:-1], widths[1:])),
        head=np.zeros((n_classes, widths[-1])),
        widths=widths,
        stride=stride,
    )


def channel_matrix(n: int, kind: str = "I", gamma: float | None = None) -> np.ndarray:
    """LeakyNet's channel matrix: ``I`` (``'I'``), ``1 1^T / n`` (``'1'``), or ``gamma I + (1 - gamma) 1 1^T / n`` (App. J).

    Both ``'I'`` and ``'1'`` map symmetric features (all channels equal) to themselves (App. H).

    Parameters
    ----------
    n : int
        Channels, ``n >= 1``, ``n^2 <= 2**29``.
    kind : {"I", "1"}
        The matrix when ``gamma`` is None (validated either way).
    gamma : float, optional
        Mixture weight in [0, 1] (App. J); overrides ``kind``.

    Returns
    -------
    ndarray, shape (n, n)
        The channel matrix ``M_l`` of LeakyNet's ``Delta (x) s_l M_l``.

    Raises
    ------
    ValueError
        ``n`` out of range or not an integer (a bool, a string or a non-integral float), an
        unknown ``kind``, ``gamma`` outside [0, 1].
    TypeError
        A bool, complex number or string as ``gamma``; a complex ``n``.
    """
    n = int_arg(n, "n", 1)
    if not isinstance(kind, str) or kind not in ("I", "1"):
        raise ValueError(f"kind must be 'I' or '1', got {kind!r}")
    check_size(n * n, "n^2")
    if gamma is not None:
        gamma = nonneg(gamma, "gamma")
        if gamma > 1:
            raise ValueError(f"gamma must lie in [0, 1], got {gamma}")
        return gamma * np.eye(n) + (1.0 - gamma) * np.full((n, n), 1.0 / n)
    if kind == "I":
        return np.eye(n)
    return np.full((n, n), 1.0 / n)


def leakynet(
    kinds: Sequence[str],
    n: int,
    slope: float = 0.01,
    kernel_shape: int | Sequence[int] = (3, 3),
    gamma: Sequence[float] | np.ndarray | None = None,
) -> list[np.ndarray]:
    """LeakyNet tensors ``W_l = s_l Delta (x) M_l``, ``s_l = -1 / slope`` for odd ``l`` (1-based), else 1.

    With the leaky ReLU ``phi`` of negative slope ``slope`` (the paper's ``sigma_rho``,
    ``rho = slope``; :func:`meanfield.activations.get_activation` ``("leaky_relu", slope=slope)``)
    and ``h^l = W_l * phi(h^{l-1})``, two consecutive layers compose to ``-x`` on symmetric
    features (``phi(-phi(x) / slope) = -x``, Sec. 5.1 of Blumenfeld et al. 2020), so the pre-activations repeat
    with period 4 (App. H): ``h^0, -phi(h^0)/slope, -h^0, -phi(-h^0)/slope``.

    Parameters
    ----------
    kinds : sequence of {"I", "1"}
        Channel matrix of each layer.
    n : int
        Channels.
    slope : float
        Negative slope of the leaky ReLU, in (0, 1].
    kernel_shape : tuple of odd int
    gamma : sequence of float, optional
        Mixture ``gamma_l I + (1 - gamma_l) 11^T / n`` per layer (App. J) instead of ``kinds``.

    Returns
    -------
    list of ndarray, each ``(*kernel_shape, n, n)``

    Raises
    ------
    ValueError
        ``slope`` outside (0, 1], unknown kinds, ``gamma`` values outside [0, 1] or of the wrong
        length, more than 10^5 layers or 2^29 numbers in all; ``n`` or an entry of a tuple
        ``kernel_shape`` that is not an integer (a bool, a string or a non-integral float).
    TypeError
        ``kinds`` or ``gamma`` not sequences; bools, complex numbers or strings where real numbers
        are expected (``slope``, entries of ``gamma``); complex sizes; a ``kernel_shape`` as in
        :func:`delta_kernel`.

    Examples
    --------
    >>> w = leakynet(["I", "1"], 2, slope=0.5, kernel_shape=(1,))
    >>> w[0][0], w[1][0]  # s_1 I with s_1 = -1 / slope, then 11^T / n
    (array([[-2., -0.],
           [-0., -2.]]), array([[0.5, 0.5],
           [0.5, 0.5]]))
    """
    slope = positive(slope, "slope")
    if slope > 1:
        raise ValueError(f"slope must lie in (0, 1], got {slope}")
    if isinstance(kinds, (str, bytes)) or not isinstance(kinds, (tuple, list)):
        raise TypeError(f"kinds must be a list of 'I' / '1', got {kinds!r}")
    kinds = list(kinds)
    if len(kinds) > MAX_LAYERS:
        raise ValueError(f"kinds must list at most {MAX_LAYERS} layers, got {len(kinds)}")
    for kind in kinds:
        if not isinstance(kind, str) or kind not in ("I", "1"):
            raise ValueError(f"kinds must hold 'I' or '1', got {kind!r}")
    n = int_arg(n, "n", 1)
    ks = _kernel_shape(kernel_shape)
    if gamma is not None:
        if isinstance(gamma, (str, bytes)) or not isinstance(gamma, (tuple, list, np.ndarray)):
            raise TypeError(f"gamma must be a sequence with one value per layer, got {gamma!r}")
        if len(gamma) != len(kinds):
            raise ValueError(f"gamma must have one value per layer ({len(kinds)}), got {len(gamma)}")
    check_size(len(kinds) * int(np.prod(ks)) * n * n, "len(kinds) * prod(kernel_shape) * n^2")
    out = []
    for layer, kind in enumerate(kinds, start=1):
        m = channel_matrix(n, kind, None if gamma is None else gamma[layer - 1])
        out.append(_kron_delta(ks, (-1.0 / slope if layer % 2 else 1.0) * m))
    return out


def looks_linear_delta_orthogonal(
    n: int,
    kernel_shape: int | Sequence[int] = (3, 3),
    sigma_w2: float = 1.0,
    rng: int | np.random.Generator | None = None,
    *,
    backend: str | Backend = "numpy",
) -> Any:
    """``Delta (x) [[U, -U], [-U, U]]`` with ``U = sqrt(sigma_w2) Q``, ``Q`` Haar orthogonal of size ``n / 2`` (eq. 8 of Blumenfeld et al. 2020).

    For an input ``[x, 0]`` (or any pre-activation of the form ``[a, -a]`` after a ReLU), the
    pre-activations of consecutive layers are related by ``diag(U, U)`` (eq. 9) surely, at any
    width: a rotation for the default ``sigma_w2 = 1``.

    Parameters
    ----------
    n : int
        Channels (even, >= 2).
    kernel_shape : tuple of odd int
    sigma_w2 : float
        Weight variance scale, finite and >= 0: ``U`` is multiplied by ``sqrt(sigma_w2)`` (the
        library's convention for orthogonal constructions, ``sigma_w2 = gain^2``).
    rng : None, int or numpy.random.Generator
        Randomness (an int ``n`` gives the stream of ``numpy.random.default_rng(n)``); on another
        backend also a Generator of that backend (:meth:`meanfield.backend.Backend.rng`).
    backend : str or Backend
        Array backend (:data:`meanfield.backend.BACKENDS`) on which ``Q`` is drawn
        (:func:`haar_orthogonal`) and the kernel built; NumPy and ``array_api_strict`` give the same
        numbers for the same ``rng``.

    Returns
    -------
    array, shape ``(*kernel_shape, n, n)``
        On ``backend``.

    Raises
    ------
    ValueError
        ``n`` odd or < 2 or not an integer (a bool, a string or a non-integral float), a bad
        ``kernel_shape`` (as :func:`delta_kernel`), negative ``sigma_w2``, more than 2^29 entries.
    TypeError
        A bool, complex number or string as ``sigma_w2``; a complex ``n``; a ``kernel_shape`` as
        in :func:`delta_kernel`; a bad ``rng``.
    ImportError
        A ``backend`` whose package is not installed.

    Examples
    --------
    >>> w = looks_linear_delta_orthogonal(4, kernel_shape=(3,), sigma_w2=4.0, rng=0)
    >>> w.shape
    (3, 4, 4)
    >>> u = w[1, :2, :2]  # centre tap, top-left block: 2 Q
    >>> bool(np.allclose(u @ u.T, 4.0 * np.eye(2)))
    True
    """
    n = int_arg(n, "n", 2)
    if n % 2:
        raise ValueError(f"n must be even for a looks-linear layer, got {n}")
    sigma_w2 = nonneg(sigma_w2, "sigma_w2")
    ks = _kernel_shape(kernel_shape)
    check_size(int(np.prod(ks)) * n * n, "prod(kernel_shape) * n^2")
    b = get_backend(backend)
    if b.name == "numpy":
        rng = check_rng(rng)
        u = math.sqrt(sigma_w2) * haar_orthogonal(n // 2, n // 2, rng=rng)
        return _kron_delta(ks, looks_linear(u))
    xp = b.xp
    u = math.sqrt(sigma_w2) * haar_orthogonal(n // 2, n // 2, rng=b.rng(rng), backend=b)
    top = concat(xp, [u, -u], axis=-1)
    block = concat(xp, [top, -top], axis=-2)  # looks_linear(u) on the backend
    return b.asarray(delta_kernel(ks)[(...,) + (None, None)]) * block
