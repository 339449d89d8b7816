r"""The neural tangent kernel (NTK) of deep dense networks in the infinite-width limit.

Parametrisation (the NTK parametrisation of Jacot et al. 2018): the trained parameters are
standard normal, :math:`h^{l+1} = \frac{\sigma_w}{\sqrt{N_l}}\,\omega^{l+1}\phi(h^l) + \sigma_b\,\beta^{l+1}`,
:math:`\omega_{ij}, \beta_i \sim N(0, 1)` (with :math:`\phi(h^0) = x`, the input). At
initialisation this is the library's network (``W = sigma_w omega / sqrt(N)``, ``sigma_w2`` squared),
so the forward covariances are those of :mod:`meanfield.dense`. The tangent kernel
:math:`\Theta^l(x, x') = \sum_p \partial_p h^l(x)\,\partial_p h^l(x')` (sum over the parameters of
layers 1..l) of any unit of layer l converges, as every width grows, to (Jacot et al. 2018, Thm. 1;
Arora et al. 2019, eq. 9)

.. math:: \Theta^1 = \Sigma^1, \qquad
    \Theta^{l+1} = \Sigma^{l+1} + \dot\Sigma^{l+1} \odot \Theta^{l}, \qquad
    \dot\Sigma^{l+1}_{ab} = \sigma_w^2\,\mathbb{E}_{h\sim N(0,\Sigma^l)}\,\phi'(h_a)\phi'(h_b),

with :math:`\Sigma^{l+1}` the C-map :func:`meanfield.dense.covariance_map` and
:math:`\dot\Sigma^{l+1}` :func:`meanfield.dense.derivative_covariance_map`. A network with L hidden
layers and a linear scalar read-out has the kernel :math:`\Theta^{L+1}` (``depth = L``).

Fixed points and depth scales. At the fixed point :math:`(q^*, c^*)` the diagonal obeys
:math:`\Theta_{l+1} = q^* + \chi_1\Theta_l`: it converges to :math:`q^*/(1-\chi_1)` with depth scale
:math:`\xi_1 = -1/\log\chi_1` in the ordered phase, grows linearly (by :math:`q^*` per layer) at
criticality and like :math:`\chi_1^l` in the chaotic phase. Off the diagonal
:math:`\Theta_{l+1} = q^*c^* + \chi_{c^*}\Theta_l`, with fixed point :math:`q^*c^*/(1-\chi_{c^*})` and
depth scale :math:`\xi_{c^*} = -1/\log\chi_{c^*}` (Xiao, Pennington, Schoenholz 2020, Sec. 3).

Periodic CNNs (Xiao et al. 2018). With NTK-parametrised kernels,
:math:`h^{l+1}_j(\alpha) = \frac{\sigma_w}{\sqrt{c}}\sum_{\beta}\sqrt{v_\beta}\sum_i\omega_{ji}(\beta)\phi(h^l_i(\alpha+\beta)) + \sigma_b\beta_j`,
the kernel over (input, position) pairs obeys (Arora et al. 2019, Sec. 5 for the uniform case)

.. math:: \Theta^{l+1} = \Sigma^{l+1} + \mathcal{A}_v\star\big(\dot\Sigma^{l+1}\odot\Theta^l\big),
    \qquad \Sigma^{l+1} = \mathcal{A}_v\star\mathcal{C}(\Sigma^l),

with the covariances over inputs x positions of :func:`meanfield.conv.multi_input_covariance_map`
(:func:`conv_ntk_map`, :func:`propagate_conv_ntk`).

References
----------
Jacot, Gabriel, Hongler (2018), "Neural tangent kernel: convergence and generalization in neural
networks". Arora et al. (2019), "On exact computation with an infinitely wide neural net". Xiao,
Pennington, Schoenholz (2020), "Disentangling trainability and generalization in deep neural
networks".
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from . import dense
from ._checks import as_real_array, check_covariance, check_int
from ._results import Result
from .activations import get_activation
from .gaussian import DEFAULT_DEGREE

if TYPE_CHECKING:  # annotations only
    from .activations import Activation

__all__ = [
    "ConvNTKFixedPoint",
    "NTKFixedPoint",
    "NTKPropagation",
    "NTKStep",
    "constnet_ntk",
    "conv_ntk_fixed_point",
    "conv_ntk_map",
    "ntk_fixed_point",
    "ntk_map",
    "propagate_conv_ntk",
    "propagate_ntk",
]

#: Most layers :func:`propagate_ntk` accepts: each layer is a Python-level step of about a
#: millisecond (two quadrature maps), so the largest call stays within a few seconds.
MAX_DEPTH = 2_000


@dataclass(frozen=True)
class NTKPropagation(Result):
    r"""Covariances and tangent kernels through depth (see :func:`propagate_ntk`).

    Attributes
    ----------
    cov : ndarray, shape (depth + 1, D, D)
        :math:`\Sigma^{l}`, l = 1..depth+1 (``cov[0]`` is the given first-layer covariance).
    ntk : ndarray, shape (depth + 1, D, D)
        :math:`\Theta^{l}`, l = 1..depth+1 (``ntk[0] = cov[0]``).
    """

    cov: np.ndarray
    ntk: np.ndarray


#: Largest ``D * D * n_classes**2`` that :func:`constnet_ntk` allocates (8 bytes each).
MAX_ELEMENTS = 10**8


def _overflow():
    """The ValueError for a kernel beyond float64, naming the arguments that set its scale."""
    return ValueError(
        "the tangent kernel exceeds the float64 range at these activation, sigma_w2, sigma_b2 "
        "(choose smaller variances, fewer layers, or an activation of bounded growth)"
    )


def _maps(fn, *args):
    """Call a covariance map of :mod:`meanfield.dense` / :mod:`meanfield.conv`; overflow -> :func:`_overflow`."""
    try:
        out = fn(*args)
    except ValueError as exc:
        if "float64 range" in str(exc):
            raise _overflow() from exc
        raise
    if not np.all(np.isfinite(out)):
        raise _overflow()
    return out


@dataclass(frozen=True)
class NTKStep(Result):
    r"""One layer of the NTK recursion (see :func:`ntk_map`).

    Attributes
    ----------
    cov : ndarray, shape (..., D, D)
        :math:`\Sigma^{l+1}`.
    ntk : ndarray, shape (..., D, D)
        :math:`\Theta^{l+1}`.
    """

    cov: np.ndarray
    ntk: np.ndarray


def _check_pair(cov, ntk):
    if ntk.shape != cov.shape:
        raise ValueError(f"ntk must have the shape of cov {cov.shape}, got {ntk.shape}")


def _step(nxt, combine):
    """The :class:`NTKStep` of the next covariance ``nxt`` and the kernel ``combine()`` (overflow -> :func:`_overflow`)."""
    with np.errstate(over="ignore", invalid="ignore"):
        out = combine()
    if not np.all(np.isfinite(out)):
        raise _overflow()
    return NTKStep(cov=nxt, ntk=out)


def _propagate(step_map, cov, depth, *args):
    """``depth`` steps of ``step_map(cov, theta, *args)`` from Theta^1 = Sigma^1 = ``cov`` (checked)."""
    covs = np.empty((depth + 1, *cov.shape))
    ntks = np.empty_like(covs)
    covs[0] = ntks[0] = cov
    theta = cov
    for layer in range(depth):
        try:
            step = step_map(cov, theta, *args)
        except ValueError as exc:
            # the input was checked at layer 0: a later state check failing means the
            # propagated kernel left the float64 range
            if layer > 0 and str(exc).startswith(("cov ", "ntk ")):
                raise _overflow() from exc
            raise
        cov, theta = step.cov, step.ntk
        covs[layer + 1], ntks[layer + 1] = cov, theta
    return NTKPropagation(cov=covs, ntk=ntks)


def ntk_map(
    cov: ArrayLike,
    ntk: ArrayLike,
    activation: str | Activation,
    sigma_w2: float,
    sigma_b2: float,
    degree: int = DEFAULT_DEGREE,
) -> NTKStep:
    r"""One layer of the NTK recursion: :math:`(\Sigma, \Theta) \mapsto (\mathcal{C}(\Sigma),\ \mathcal{C}(\Sigma) + \dot{\mathcal{C}}(\Sigma)\odot\Theta)`.

    Parameters
    ----------
    cov : array_like, shape (..., D, D)
        Pre-activation covariance :math:`\Sigma^l` (symmetric PSD).
    ntk : array_like, shape (..., D, D)
        Tangent kernel :math:`\Theta^l` (symmetric PSD, the shape of ``cov``).
    activation : str or Activation
    sigma_w2, sigma_b2 : float
        Variances (>= 0).
    degree : int
        Gauss-Hermite degree for activations without closed forms.

    Returns
    -------
    NTKStep
        ``cov`` = :math:`\Sigma^{l+1}`, ``ntk`` = :math:`\Theta^{l+1}`.

    Raises
    ------
    ValueError
        Non-PSD, non-finite or mismatched matrices; negative variances; results beyond float64.
    TypeError
        Complex, boolean or non-numeric arguments.

    Notes
    -----
    Jacot et al. (2018), Thm. 1; the derivative kernel is the factor of the backward covariance
    map of Xiao et al. 2018 (supplement A.1).
    """
    cov = check_covariance(cov, "cov", strict=True)
    ntk = check_covariance(ntk, "ntk", strict=True)
    _check_pair(cov, ntk)
    nxt = _maps(dense.covariance_map, cov, activation, sigma_w2, sigma_b2, degree)
    dot = _maps(dense.derivative_covariance_map, cov, activation, sigma_w2, degree)
    return _step(nxt, lambda: nxt + dot * ntk)


def propagate_ntk(
    cov0: ArrayLike,
    activation: str | Activation,
    sigma_w2: float,
    sigma_b2: float,
    depth: int,
    degree: int = DEFAULT_DEGREE,
) -> NTKPropagation:
    r"""The infinite-width NTK of D inputs through ``depth`` layers.

    Parameters
    ----------
    cov0 : array_like, shape (D, D)
        First-layer covariance :math:`\Sigma^1` (e.g. :func:`meanfield.dense.input_covariance`);
        :math:`\Theta^1 = \Sigma^1`.
    activation : str or Activation
    sigma_w2, sigma_b2 : float
        Variances (>= 0).
    depth : int
        Layers after the first (0 to :data:`MAX_DEPTH`); a network with ``depth`` hidden layers and a
        scalar read-out has the kernel ``ntk[depth]``.
    degree : int

    Returns
    -------
    NTKPropagation

    Raises
    ------
    ValueError
        As :func:`ntk_map`; ``depth`` out of range.
    TypeError
        As :func:`ntk_map`.

    Notes
    -----
    The recursion of the module notes (Arora et al. 2019, eq. 9 in the NTK parametrisation). For
    many inputs (data sets), :func:`meanfield.kernels.dense_kernels` computes the NNGP and NTK of the
    last layer (or chosen layers) between two sets of inputs on all cores in bounded memory, much
    faster; it agrees with this function to float64 rounding
    (:func:`meanfield.kernels.conv_kernels` for :func:`propagate_conv_ntk`).

    Examples
    --------
    >>> r = propagate_ntk([[1.0]], "relu", 2.0, 0.0, 3)
    >>> [round(float(t), 6) for t in r.ntk[:, 0, 0]]  # relu, sigma_w2 = 2: Theta^l = l q
    [1.0, 2.0, 3.0, 4.0]
    """
    cov = check_covariance(cov0, "cov0", strict=True)
    if cov.ndim != 2:
        raise ValueError(f"cov0 must be one (D, D) matrix, got shape {cov.shape}")
    depth = check_int(depth, "depth", minimum=0, maximum=MAX_DEPTH)
    return _propagate(ntk_map, cov, depth, activation, sigma_w2, sigma_b2, degree)


def _check_multi(x, name):
    arr = as_real_array(x, name)
    if arr.ndim < 4 or arr.shape[-4] != arr.shape[-2] or arr.shape[-3] != arr.shape[-1]:
        raise ValueError(f"{name} must have shape (..., D, P, D, P), got {arr.shape}")
    d, p = arr.shape[-4], arr.shape[-3]
    flat = check_covariance(arr.reshape(arr.shape[:-4] + (d * p, d * p)), name, strict=True)
    return flat.reshape(arr.shape)


def conv_ntk_map(
    cov: ArrayLike,
    ntk: ArrayLike,
    activation: str | Activation,
    sigma_w2: float,
    sigma_b2: float,
    v: ArrayLike,
    shape: int | tuple[int, ...] | None = None,
    degree: int = DEFAULT_DEGREE,
) -> NTKStep:
    r"""One periodic-CNN layer of the NTK recursion over (input, position) pairs (Xiao et al. 2018 networks).

    Parameters
    ----------
    cov, ntk : array_like, shape (..., D, P, D, P)
        :math:`\Sigma^l` and :math:`\Theta^l` over D inputs and P positions (each symmetric PSD
        as a ``(D P) x (D P)`` matrix).
    activation : str or Activation
    sigma_w2, sigma_b2 : float
    v : array_like
        Variance vector (see :func:`meanfield.conv.average`).
    shape : int or (int, int), optional
    degree : int

    Returns
    -------
    NTKStep
        ``cov`` = :math:`\Sigma^{l+1}`, ``ntk`` = :math:`\Theta^{l+1}`, shape (..., D, P, D, P).

    Raises
    ------
    ValueError
        Shapes other than (..., D, P, D, P) or mismatched, matrices not PSD, bad variances or ``v``.
    TypeError
        Complex, boolean or non-numeric arguments.

    Notes
    -----
    The recursion of the module notes; the derivative kernel is the factor of the backward map of
    Xiao et al. 2018, eq. 2.15.
    """
    from . import conv

    cov = _check_multi(cov, "cov")
    ntk = _check_multi(ntk, "ntk")
    _check_pair(cov, ntk)
    d, p = cov.shape[-4], cov.shape[-3]
    lead = cov.shape[:-4]
    nxt = _maps(conv.multi_input_covariance_map, cov, activation, sigma_w2, sigma_b2, v, shape, degree)
    flat = cov.reshape(lead + (d * p, d * p))
    dot = _maps(dense.derivative_covariance_map, flat, activation, sigma_w2, degree).reshape(cov.shape)

    def combine():
        blocks = np.swapaxes(dot * ntk, -3, -2)  # (..., D, D, P, P)
        return nxt + np.swapaxes(conv.average(blocks, v, shape), -3, -2)

    return _step(nxt, combine)


def propagate_conv_ntk(
    cov0: ArrayLike,
    activation: str | Activation,
    sigma_w2: float,
    sigma_b2: float,
    v: ArrayLike,
    depth: int,
    shape: int | tuple[int, ...] | None = None,
    degree: int = DEFAULT_DEGREE,
) -> NTKPropagation:
    r"""The infinite-channel NTK of a periodic CNN over (input, position) pairs through ``depth`` layers.

    Parameters
    ----------
    cov0 : array_like, shape (D, P, D, P)
        First-layer covariance (e.g. :func:`meanfield.conv.multi_input_covariance`); :math:`\Theta^1 = \Sigma^1`.
    activation, sigma_w2, sigma_b2, v, shape, degree
        As :func:`conv_ntk_map`.
    depth : int
        Layers after the first (0 to :data:`MAX_DEPTH`).

    Returns
    -------
    NTKPropagation
        ``cov`` and ``ntk`` of shape (depth + 1, D, P, D, P). The NTK of a read-out of one channel
        at position alpha is ``ntk[depth][:, alpha, :, alpha]``.

    Raises
    ------
    ValueError, TypeError
        As :func:`conv_ntk_map`; ``depth`` out of range.
    """
    cov = _check_multi(cov0, "cov0")
    if cov.ndim != 4:
        raise ValueError(f"cov0 must have shape (D, P, D, P), got {cov.shape}")
    depth = check_int(depth, "depth", minimum=0, maximum=MAX_DEPTH)
    return _propagate(conv_ntk_map, cov, depth, activation, sigma_w2, sigma_b2, v, shape, degree)


@dataclass(frozen=True)
class NTKFixedPoint(Result):
    r"""Large-depth behaviour of the NTK at the fixed point (see :func:`ntk_fixed_point`).

    Attributes
    ----------
    theta_diag : float
        :math:`q^*/(1 - \chi_1)`; when :math:`\chi_1 \ge 1` (within :data:`meanfield.dense.CRITICAL_ATOL`)
        ``inf`` if :math:`q^* > 0` (the diagonal grows) and 0 if :math:`q^* = 0`.
    theta_offdiag : float
        :math:`q^* c^*/(1 - \chi_{c^*})`; when :math:`\chi_{c^*} \ge 1`, ``inf`` if :math:`q^* c^* > 0`
        (or :math:`q^* = \infty`) and 0 otherwise (e.g. :math:`q^* = 0`).
    xi_diag, xi_offdiag : float
        Depth scales :math:`-1/\log\chi_1`, :math:`-1/\log\chi_{c^*}` of the approach to them
        (``inf`` where the chi is >= 1, 0 where it is 0).
    growth : float
        Per-layer growth factor of the diagonal: :math:`\chi_1` (> 1 chaotic; at criticality the
        growth is linear, :math:`q^*` per layer; ``inf`` for ``"sign"``, whose derivative is a
        Dirac delta, as ``chi_1`` of :func:`meanfield.dense.fixed_point`).
    q_star, c_star, chi_1, chi_c : float
        The forward fixed point (:func:`meanfield.dense.fixed_point`).
    """

    theta_diag: float
    theta_offdiag: float
    xi_diag: float
    xi_offdiag: float
    growth: float
    q_star: float
    c_star: float
    chi_1: float
    chi_c: float


def _depth_scale(chi):
    if chi <= 0.0:
        return 0.0
    if chi >= 1.0 - dense.CRITICAL_ATOL:
        return math.inf
    return -1.0 / math.log(chi)


def ntk_fixed_point(
    activation: str | Activation, sigma_w2: float, sigma_b2: float, degree: int = DEFAULT_DEGREE
) -> NTKFixedPoint:
    r"""Fixed points and depth scales of the NTK recursion at the forward fixed point (q*, c*).

    Parameters
    ----------
    activation : str or Activation
        A built-in activation.
    sigma_w2, sigma_b2 : float
        Variances (>= 0).
    degree : int

    Returns
    -------
    NTKFixedPoint
        ``inf`` where the kernel grows without bound (chi >= 1 and q* > 0, or q* = inf); 0 where
        chi >= 1 and q* = 0; nothing is NaN.

    Raises
    ------
    ValueError, TypeError
        As :func:`meanfield.dense.fixed_point`.

    Notes
    -----
    The linear recursions :math:`\Theta \mapsto q^* + \chi_1\Theta` (diagonal) and
    :math:`\Theta \mapsto q^*c^* + \chi_{c^*}\Theta` (off-diagonal) of the module notes; Xiao,
    Pennington, Schoenholz (2020), Sec. 3.
    """
    act = get_activation(activation)
    fp = dense.fixed_point(act, sigma_w2, sigma_b2, degree)
    q, c, chi1, chic = fp.q_star, fp.c_star, fp.chi_1, fp.chi_c

    def fixed(const, chi):
        if math.isinf(q) or chi >= 1.0 - dense.CRITICAL_ATOL:
            return math.inf if const > 0 or math.isinf(q) else 0.0
        return const / (1.0 - chi)

    return NTKFixedPoint(
        theta_diag=fixed(q, chi1),
        theta_offdiag=fixed(q * c if math.isfinite(q) else math.inf, chic),
        xi_diag=_depth_scale(chi1),
        xi_offdiag=_depth_scale(chic),
        growth=chi1,
        q_star=q,
        c_star=c,
        chi_1=chi1,
        chi_c=chic,
    )


# ----------------------------------------------------------------------------------------------
# ConstNet (Blumenfeld et al. 2020, App. D).


def constnet_ntk(
    x: ArrayLike, widths: tuple[int, ...] = (4, 8, 16), n_input: int = 3, n_classes: int = 10, stride: int = 2
) -> np.ndarray:
    r"""The NTK of a ConstNet at initialisation: the kernel of a linear model (Blumenfeld et al. 2020, App. D).

    With the head initialised to zero every back-propagated signal :math:`\beta^{(\ell)}` vanishes,
    so only the head and its bias contribute:

    .. math:: \Theta_{ij}(x, x') = \delta_{ij}\big(\langle\bar a(x), \bar a(x')\rangle + 1\big),

    :math:`\bar a` the spatially pooled last features. At initialisation (App. C) they are the
    first layer's features at the positions kept by the ``len(widths) - 1`` strided widening blocks,
    equal in every channel: :math:`\bar a_c(x) = m(x)`, the mean over the kept positions of
    :math:`\frac{1}{n_{in}}\sum_j x_{\gamma j}` (the library's first layer averages the input
    channels, :func:`meanfield.init.constnet`; the paper's App. D writes the sum, a factor
    :math:`n_{in}`). Hence :math:`\Theta_{ij} = \delta_{ij}(n_{last}\,m(x)m(x') + 1)`: a linear
    model's kernel, independent of the number of ConstNet blocks and of the kernel size.

    Parameters
    ----------
    x : array_like, shape ``(D, *spatial, n_input)``
        D inputs, 1-D or 2-D spatial, channels last.
    widths : sequence of int
        Stage widths (each >= 1); the last is :math:`n_{last}`.
    n_input : int
        Input channels (must match ``x``).
    n_classes : int
        Outputs (>= 1).
    stride : int
        Stride of the widening blocks (>= 1).

    Returns
    -------
    ndarray, shape (D, D, n_classes, n_classes)
        :math:`\Theta_{ij}(x_a, x_b)` at ``[a, b, i, j]``.

    Raises
    ------
    ValueError
        Shapes that do not match, sizes out of range, non-finite inputs.
    TypeError
        Complex, boolean or non-numeric inputs.

    Notes
    -----
    Blumenfeld et al. 2020, App. C (the features through narrowing layers) and App. D (the NTK); checked against
    the empirical NTK of :class:`meanfield.simulate.ConstNet` (all parameters, by
    back-propagation) in :mod:`meanfield.validation.ntk`.
    """
    x = as_real_array(x, "x")
    if x.ndim not in (3, 4) or x.shape[-1] != check_int(n_input, "n_input", minimum=1) or min(x.shape) < 1:
        raise ValueError(f"x must have shape (D, *spatial, n_input) with 1 or 2 spatial axes, got {x.shape}")
    if not isinstance(widths, (tuple, list, np.ndarray)) or len(widths) < 1:
        raise ValueError(f"widths must be a non-empty sequence of ints, got {widths!r}")
    widths = [check_int(w, "widths", minimum=1) for w in widths]
    n_classes = check_int(n_classes, "n_classes", minimum=1)
    if x.shape[0] ** 2 * n_classes**2 > MAX_ELEMENTS:
        raise ValueError(
            f"n_classes must satisfy D**2 * n_classes**2 <= MAX_ELEMENTS = {MAX_ELEMENTS} (D = {x.shape[0]} inputs), "
            f"got n_classes = {n_classes}"
        )
    stride = check_int(stride, "stride", minimum=1)
    sd = x.ndim - 2
    a0 = x.mean(axis=-1)  # first layer: delta kernel averaging the input channels
    keep = (slice(None),) + (slice(None, None, stride ** (len(widths) - 1)),) * sd
    m = a0[keep].reshape(x.shape[0], -1).mean(axis=1)
    with np.errstate(over="ignore", invalid="ignore"):
        gram = widths[-1] * np.outer(m, m) + 1.0
    if not np.all(np.isfinite(gram)):
        raise ValueError("x is too large: the kernel n_last m(x) m(x') + 1 exceeds the float64 range")
    return gram[:, :, None, None] * np.eye(n_classes)


# ----------------------------------------------------------------------------------------------
# Periodic CNNs at the forward fixed point: the NTK per Fourier mode (Xiao et al. 2018, eqs. 2.9-2.12).


@dataclass(frozen=True)
class ConvNTKFixedPoint(Result):
    r"""The CNN NTK's fixed point and its depth scales per Fourier mode (see :func:`conv_ntk_fixed_point`).

    Attributes
    ----------
    lambda_ : ndarray of complex, shape ``shape``
        Eigenvalues :math:`\lambda_m` of :math:`\mathcal{A}_v\star` (:func:`meanfield.conv.fourier_eigenvalues`).
    theta_diag, theta_offdiag : float
        The fixed point :math:`\Theta^*_{\alpha\alpha} = q^*/(1 - \chi_1)` and
        :math:`\Theta^*_{\alpha\alpha'} = q^*c^*/(1 - \chi_{c^*})` (:math:`\alpha \ne \alpha'`): it lives in
        the mode m = 0 of every cyclic diagonal; ``inf`` where that mode grows (chi >= 1 and q* > 0, or
        q* = inf), 0 where chi >= 1 and q* = 0 (as :class:`NTKFixedPoint`).
    growth_diag, growth_offdiag : ndarray, shape ``shape``
        Per-layer factors :math:`|\chi_1\lambda_m|` and :math:`|\chi_{c^*}\lambda_m|` of the Fourier
        amplitudes of the diagonal and off-diagonal cyclic diagonals of :math:`\Theta - \Theta^*`.
    xi_diag, xi_offdiag : ndarray, shape ``shape``
        Depth scales :math:`-1/\log` of the growth factors (``inf`` where the factor is >= 1 or within
        :data:`meanfield.dense.CRITICAL_ATOL` of it, 0 where it is 0).
    fixed_point : meanfield.dense.FixedPoint
        The forward fixed point (q*, c*, chi_1, chi_c, chi_q), that of the dense network.
    """

    lambda_: np.ndarray
    theta_diag: float
    theta_offdiag: float
    growth_diag: np.ndarray
    growth_offdiag: np.ndarray
    xi_diag: np.ndarray
    xi_offdiag: np.ndarray
    fixed_point: dense.FixedPoint


def conv_ntk_fixed_point(
    activation: str | Activation,
    sigma_w2: float,
    sigma_b2: float,
    v: ArrayLike,
    shape: int | tuple[int, ...] | None,
    degree: int = DEFAULT_DEGREE,
) -> ConvNTKFixedPoint:
    r"""Fixed point and per-Fourier-mode depth scales of the NTK of deep periodic CNNs (Xiao et al. 2018 networks).

    Parameters
    ----------
    activation : str or Activation
        A built-in activation.
    sigma_w2, sigma_b2 : float
        Variances (>= 0).
    v : array_like
        Variance vector, shape (2k+1,) or (2k1+1, 2k2+1) (:func:`meanfield.conv.average`).
    shape : int or (int, int)
        Spatial shape of the periodic signal.
    degree : int
        Gauss-Hermite degree for activations without closed forms.

    Returns
    -------
    ConvNTKFixedPoint
        Nothing is NaN: ``inf`` marks growth without bound.

    Raises
    ------
    ValueError, TypeError
        As :func:`meanfield.conv.depth_scales`.

    Notes
    -----
    At the forward fixed point :math:`\Sigma^* = q^*[(1 - c^*)I + c^*\mathbf 1\mathbf 1^\top]` (Xiao et al. 2018,
    Sec. 2.1.4) the derivative kernel is :math:`\dot\Sigma^*_{\alpha\alpha} = \chi_1`,
    :math:`\dot\Sigma^*_{\alpha\alpha'} = \chi_{c^*}`, and the recursion of :func:`conv_ntk_map`,
    :math:`\Theta^{l+1} = \Sigma^* + \mathcal{A}_v\star(\dot\Sigma^*\odot\Theta^l)`, is affine. On a
    cyclic diagonal :math:`e_d(\alpha) = \Theta_{\alpha,\alpha+d}` the operator
    :math:`\mathcal{A}_v\star` is the convolution with ``v`` (Xiao et al. 2018, eqs. 2.9-2.11), so the Fourier
    amplitude m of :math:`e_d` obeys :math:`\hat e^{l+1}_d(m) = P\,\Sigma^*_d\,\delta_{m0} +
    \chi_d\lambda_m\hat e^l_d(m)` with :math:`\chi_0 = \chi_1`, :math:`\chi_{d \ne 0} = \chi_{c^*}`:
    the source feeds mode 0 only (:math:`\lambda_0 = 1`), giving the fixed point of the dense NTK
    (:func:`ntk_fixed_point`), and every mode relaxes by :math:`\chi_d\lambda_m` per layer. The diagonal
    modes use :math:`\chi_1` where the forward covariance uses :math:`\chi_{q^*}`
    (:func:`meanfield.conv.depth_scales`). With a single input (D = 1); for several inputs each
    input pair's block behaves alike with :math:`c^*` and :math:`\chi_{c^*}` of that pair.
    """
    from . import conv

    act = get_activation(activation)
    cds = conv.depth_scales(act, sigma_w2, sigma_b2, v, shape, degree)
    fp = cds.fixed_point
    dense_fp = ntk_fixed_point(act, sigma_w2, sigma_b2, degree)
    mod = np.abs(cds.lambda_)
    with np.errstate(invalid="ignore", over="ignore"):  # chi = inf (sign, exp) times lambda = 0: no growth
        g_diag = np.where(mod == 0.0, 0.0, fp.chi_1 * mod)
        g_off = np.where(mod == 0.0, 0.0, fp.chi_c * mod)
    xi_d = np.array([_depth_scale(float(g)) for g in g_diag.ravel()]).reshape(g_diag.shape)
    xi_o = np.array([_depth_scale(float(g)) for g in g_off.ravel()]).reshape(g_off.shape)
    return ConvNTKFixedPoint(
        lambda_=cds.lambda_,
        theta_diag=dense_fp.theta_diag,
        theta_offdiag=dense_fp.theta_offdiag,
        growth_diag=g_diag,
        growth_offdiag=g_off,
        xi_diag=xi_d,
        xi_offdiag=xi_o,
        fixed_point=fp,
    )
