r"""``torch.nn.init``-style initialisers: the constructions of :mod:`meanfield.init` on PyTorch tensors.

Every initialiser works in place on a weight tensor (trailing underscore), under
``torch.no_grad()``, takes ``generator=`` (a ``torch.Generator``; ``None`` uses PyTorch's global
generator, so ``torch.manual_seed`` applies as for ``torch.nn.init``) and returns the tensor. None
re-implements an algorithm: each draws a NumPy stream from the generator (:func:`numpy_rng`),
calls the NumPy construction of :mod:`meanfield.init` and copies the result into the tensor in
PyTorch's layout (``Linear``: ``(out, in)``; ``Conv1d/2d``: ``(c_out, c_in, *k)``, converted with
:func:`meanfield.init.to_torch_layout`). The same seed therefore gives the same numbers as the
NumPy function called with ``rng=numpy_rng(generator)``.

============================  ==============================================================  =========
initialiser                   construction                                                    seed
============================  ==============================================================  =========
:func:`critical_normal_`      Gaussian at the edge of chaos, ``sigma_w2`` solving chi_1 = 1   003 eq. 2.7
:func:`orthogonal_conv_`      :func:`meanfield.init.orthogonal_conv_kernel` (Algorithm 1)      003
:func:`delta_orthogonal_`     :func:`meanfield.init.delta_orthogonal_kernel` (Algorithm 2)     003
:func:`looks_linear_`         :func:`meanfield.init.orthogonal_looks_linear` (dense) or        001, 000
                              :func:`meanfield.init.looks_linear_delta_orthogonal` (conv)
:func:`gsm_`                  :func:`meanfield.init.gsm`                                       001
:func:`zero_`                 :func:`meanfield.init.zero_weights` (ZerO, deterministic)        002
:func:`zero_star_`            :func:`meanfield.init.zero_star_network` (ZerO*)                 002
:func:`constnet_`             :func:`meanfield.init.averaging_conv` or zeros (ConstNet)        000
:func:`leakynet_`             :func:`meanfield.init.leakynet` (LeakyNet layer ``l``)            000
:func:`critical_init_`        every ``Linear``/``Conv`` of a model at the edge of chaos        003
============================  ==============================================================  =========

Each initialiser records what it did on the tensor as ``tensor.meanfield_init`` (an
:class:`InitSpec`: the construction, ``sigma_w2``, ``sigma_b2``, the convolution variance vector
``v``); :func:`meanfield.pytorch.audit` reads it to re-initialise a model and to state the theory
the model was initialised for.

Conventions: ``sigma_w2`` means ``W_ij ~ N(0, sigma_w2 / fan_in)`` (``fan_in = c_in * prod(k)`` for
a convolution); orthogonal constructions are multiplied by ``sqrt(sigma_w2)`` (``sigma_w2 =
gain^2``). Convolutions must be used with ``padding=k // 2, padding_mode="circular"`` for the
periodic theory of Xiao et al. 2018 to hold exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import dense
from .. import init as np_init
from .._checks import check_nonnegative_scalar
from .._results import Result
from ..activations import Activation
from ..gaussian import expectation
from ._activations import resolve_activation
from ._torch import require_torch

torch = require_torch()

__all__ = [
    "KERNELS",
    "CriticalInit",
    "EdgeOfChaos",
    "InitSpec",
    "LayerInit",
    "constnet_",
    "critical_init_",
    "critical_normal_",
    "critical_sigma_w2",
    "delta_orthogonal_",
    "edge_of_chaos",
    "gsm_",
    "leakynet_",
    "looks_linear_",
    "mean_field_normal_",
    "numpy_rng",
    "orthogonal_conv_",
    "recorded_spec",
    "reinitialise_",
    "stable_sigma_b2",
    "tag_layers_",
    "zero_",
    "zero_star_",
]

#: Kernels accepted by :func:`critical_init_`.
KERNELS = ("delta_orthogonal", "orthogonal", "gaussian")


@dataclass(frozen=True)
class InitSpec(Result):
    """What an initialiser of :mod:`meanfield.pytorch.init` drew into a weight tensor.

    Attributes
    ----------
    method : str
        The initialiser's name (``"critical_normal_"``, ``"delta_orthogonal_"``, ...).
    sigma_w2 : float
        Weight variance in the library convention (``fan_in * E W_ij^2``).
    sigma_b2 : float or None
        Bias variance drawn into the layer's bias, ``None`` when the bias was not touched.
    v : tuple or None
        Convolution variance vector (shape of the kernel, summing to 1) that the kernel realises
        on average (Xiao et al. 2018, eq. 2.2): uniform for Gaussian kernels, one-hot for delta-orthogonal,
        binomial for Algorithm 1 (:func:`meanfield.init.orthogonal_kernel_variance`); ``None`` for
        dense weights.
    gaussian : bool
        Whether the entries are i.i.d. Gaussian (the kurtosis recursion of Grzejdziak 2023 assumes it).
    deterministic : bool
        True for constructions without randomness (ZerO, ConstNet, LeakyNet): mean-field theory,
        a statement about random weights, does not apply to them.
    kwargs : tuple
        ``(name, value)`` pairs that re-run the initialiser (:func:`reinitialise_`).
    """

    method: str
    sigma_w2: float
    sigma_b2: float | None = None
    v: tuple | None = None
    gaussian: bool = False
    deterministic: bool = False
    kwargs: tuple = ()


def _check_generator(generator) -> Any:
    if generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator or None, got {type(generator).__name__}")
    return generator


def numpy_rng(generator: Any = None) -> np.random.Generator:
    """A NumPy Generator seeded from a PyTorch generator: the stream every initialiser here draws from.

    One 63-bit integer is drawn from ``generator`` (``torch.randint(0, 2**63 - 1, (1,))``; ``None``:
    PyTorch's global generator) and seeds ``numpy.random.default_rng``.

    Parameters
    ----------
    generator : torch.Generator or None

    Returns
    -------
    numpy.random.Generator

    Raises
    ------
    TypeError
        ``generator`` is not a ``torch.Generator`` or ``None``.
    """
    generator = _check_generator(generator)
    seed = int(torch.randint(0, 2**63 - 1, (1,), generator=generator, dtype=torch.int64).item())
    return np.random.default_rng(seed)


def _check_tensor(tensor, name: str = "tensor", ndims=(2, 3, 4, 5)) -> Any:
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(tensor).__name__}")
    if not tensor.is_floating_point():
        raise TypeError(f"{name} must hold floating-point numbers, got dtype {tensor.dtype}")
    if tensor.dim() not in ndims:
        allowed = ", ".join(str(d) for d in ndims)
        raise ValueError(
            f"{name} must have {allowed} dimensions (Linear: (out, in); ConvNd: (c_out, c_in, *k)), got shape {tuple(tensor.shape)}"
        )
    if tensor.numel() == 0:
        raise ValueError(f"{name} must not be empty, got shape {tuple(tensor.shape)}")
    return tensor


def _copy(tensor, array: np.ndarray, spec: InitSpec):
    with torch.no_grad():
        tensor.copy_(torch.from_numpy(np.ascontiguousarray(array)).to(dtype=tensor.dtype, device=tensor.device))
    tensor.meanfield_init = spec
    return tensor


def _fan_in(tensor) -> int:
    return int(tensor.shape[1]) * int(math.prod(tensor.shape[2:]))


def _draw_bias(bias, sigma_b2: float, rng: np.random.Generator) -> None:
    if bias is None:
        return
    if not isinstance(bias, torch.Tensor) or bias.dim() != 1:
        raise TypeError(f"bias must be a 1-D torch.Tensor or None, got {type(bias).__name__}")
    values = math.sqrt(sigma_b2) * rng.standard_normal(int(bias.shape[0]))
    with torch.no_grad():
        bias.copy_(torch.from_numpy(values).to(dtype=bias.dtype, device=bias.device))


def _user_q_star(act: Activation, sigma_w2: float, sigma_b2: float) -> float:
    """q* of a user-defined activation by iterating the q-map (at most 4000 steps)."""
    q = 1.0
    for _ in range(4000):
        new = dense.qmap(q, act, sigma_w2, sigma_b2)
        if not math.isfinite(new) or new > 1e12:
            return math.inf
        if abs(new - q) <= 1e-14 * max(1.0, q):
            return float(new)
        q = float(new)
    return q


#: Edge-of-chaos values of built-in activations already solved: (name, param, sigma_b2) -> sigma_w2.
_CRITICAL_CACHE: dict = {}


def _builtin_critical(act: Activation, sigma_b2: float) -> float:
    key = (act.name, act.param, sigma_b2)
    if key not in _CRITICAL_CACHE:
        if len(_CRITICAL_CACHE) > 1024:
            _CRITICAL_CACHE.clear()
        _CRITICAL_CACHE[key] = float(dense.critical_sigma_w2(act, sigma_b2))
    return _CRITICAL_CACHE[key]


#: Activations whose chi_1 does not depend on q (positively homogeneous): the edge of chaos is
#: ``sigma_w2 = 1 / E phi'^2`` at every q.
_HOMOGENEOUS = ("relu", "linear", "leaky_relu")


@dataclass(frozen=True)
class EdgeOfChaos(Result):
    """A critical point of the dense q-map (:func:`edge_of_chaos`).

    Attributes
    ----------
    activation : str
    sigma_w2, sigma_b2 : float
        The variances; chi_1 = sigma_w2 E phi'(sqrt(q*) z)^2 = 1.
    q_star : float
        The fixed point q* = sigma_w2 E phi(sqrt(q*) z)^2 + sigma_b2 the signal settles at (0 for an
        odd activation at sigma_b2 = 0; ``inf`` for ReLU-like activations, critical at every q).
    chi_1 : float
        At q*.
    method : str
        ``"closed form"`` (linear), ``"dense.critical_sigma_w2"``, ``"iterated q-map"`` or
        ``"nontrivial fixed point"``.
    chi_q : float or None
        Slope of the q-map at q* (< 1: real inputs converge to q*, over ``-1 / ln(chi_q)``
        layers); ``None`` where not computed.
    """

    activation: str
    sigma_w2: float
    sigma_b2: float
    q_star: float
    chi_1: float
    method: str
    chi_q: float | None = None


def _moments(act: Activation, q: float) -> tuple[float, float]:
    """(E phi(sqrt(q) z)^2, E phi'(sqrt(q) z)^2)."""
    return float(expectation(act, q, (0, 0))), float(expectation(act, q, (1, 1)))


def _bias_at(act: Activation, q: float) -> float:
    """The sigma_b2 for which q is a critical fixed point: ``q - E phi^2 / E phi'^2``."""
    e0, e1 = _moments(act, q)
    return q - e0 / e1


def _is_odd(act: Activation) -> bool:
    x = np.array([0.3, 0.9, 1.7, 3.1])
    with np.errstate(all="ignore"):
        return bool(np.allclose(np.asarray(act.phi(-x)), -np.asarray(act.phi(x)), rtol=1e-12, atol=1e-14))


#: q grid on which the critical curve (sigma_w2(q), sigma_b2(q)) is bracketed.
_Q_GRID = np.geomspace(1e-4, 1e4, 81)


def _qmap_slope(act: Activation, q: float, sw: float) -> float:
    """d/dq of sigma_w2 E phi(sqrt(q) z)^2 (central difference, relative step 1e-4)."""
    h = 1e-4 * q
    return sw * (_moments(act, q + h)[0] - _moments(act, q - h)[0]) / (2 * h)


def _stable_curve(act: Activation) -> tuple[float, float, float] | None:
    """(sigma_b2, q*, sigma_w2) of the smallest q* on the grid from which the critical fixed point is
    stable (q-map slope < 1) with sigma_b2 >= 0; ``None`` when there is none."""
    for q in _Q_GRID:
        q = float(q)
        with np.errstate(all="ignore"):
            e0, e1 = _moments(act, q)
        if not (math.isfinite(e0) and math.isfinite(e1)) or e1 <= 0:
            continue
        sw = 1.0 / e1
        sb = q - e0 * sw
        if sb >= 0 and _qmap_slope(act, q, sw) < 1.0:
            return sb, q, sw
    return None


def _nontrivial_point(act: Activation, sigma_b2: float) -> EdgeOfChaos:
    """Solve ``q - E phi^2(q) / E phi'^2(q) = sigma_b2`` for q* > 0 (Brent), sigma_w2 = 1 / E phi'^2(q*),
    keeping the roots where the q-map is stable (slope < 1, so that real inputs reach q*); among
    several, the one nearest q = 1 (standardised data)."""
    from scipy.optimize import brentq

    qs = _Q_GRID
    with np.errstate(all="ignore"):
        f = np.array([_bias_at(act, float(q)) - sigma_b2 for q in qs])
    roots = []
    for i in range(len(qs) - 1):
        if np.isfinite(f[i]) and np.isfinite(f[i + 1]) and f[i] * f[i + 1] < 0:
            roots.append(brentq(lambda q: _bias_at(act, q) - sigma_b2, qs[i], qs[i + 1], xtol=1e-14, rtol=1e-12))
    found, unstable = [], []
    for q in roots:
        sw = 1.0 / _moments(act, q)[1]
        slope = _qmap_slope(act, q, sw)
        (found if slope < 1.0 else unstable).append((abs(math.log(q)), q, sw, slope))
    if not found:
        curve = _stable_curve(act)
        advice = (
            f"sigma_b2 >= {math.ceil(curve[0] * 1000) / 1000:.3g} gives a stable one (q* = {curve[1]:.3g}, "
            f"sigma_w2 = {curve[2]:.4g})"
            if curve is not None
            else "no sigma_b2 >= 0 gives a stable one for q* in [1e-4, 1e4]"
        )
        what = (
            f"only unstable ones (q* = {unstable[0][1]:.3g}, q-map slope {unstable[0][3]:.3f} > 1: real inputs "
            "drift away from it)"
            if unstable
            else "none with q* > 0"
        )
        raise ValueError(
            f"activation {act.name!r} has no stable edge of chaos at sigma_b2={sigma_b2:.6g}, {what}; {advice}"
        )
    _, q, sw, slope = min(found)
    chi_1 = float(sw * _moments(act, q)[1])
    return EdgeOfChaos(act.name, float(sw), sigma_b2, float(q), chi_1, "nontrivial fixed point", float(slope))


def stable_sigma_b2(activation: Any) -> float:
    """The smallest bias variance (to the 81-point q grid of :func:`edge_of_chaos`, rounded up to
    1e-3) at which ``activation`` has a stable edge of chaos; 0 where ``sigma_b2 = 0`` has one.

    Raises ``ValueError`` when no ``sigma_b2 >= 0`` has one (softplus, sigmoid: ``phi(0) != 0``).

    Examples
    --------
    >>> stable_sigma_b2("tanh"), stable_sigma_b2("gelu")
    (0.0, 0.186)
    """
    act = resolve_activation(activation)
    try:
        edge_of_chaos(act, 0.0)
        return 0.0
    except ValueError:
        pass
    curve = _stable_curve(act)
    if curve is None:
        raise ValueError(f"activation {act.name!r} has no stable edge of chaos for any sigma_b2 >= 0")
    return math.ceil(curve[0] * 1000) / 1000


def edge_of_chaos(activation: Any, sigma_b2: float = 0.0) -> EdgeOfChaos:
    """The edge of chaos (chi_1 = 1) at the fixed point q* that real inputs reach.

    Parameters
    ----------
    activation : str, Activation or torch.nn.Module
    sigma_b2 : float
        Bias variance (>= 0, finite).

    Returns
    -------
    EdgeOfChaos

    Raises
    ------
    ValueError
        No critical point with a stable q* > 0 at this ``sigma_b2``: the message names the
        smallest ``sigma_b2`` that has one (:func:`stable_sigma_b2`). GELU and SiLU at
        ``sigma_b2 = 0`` are such cases: their only critical point is q* = 0 with sigma_w2 = 4,
        which every real input leaves (for q >> 1 the q-map grows like sigma_w2 q / 2 = 2 q); at
        small ``sigma_b2 > 0`` their critical q* repels (q-map slope 1.07-1.10): GELU has a stable
        one from ``sigma_b2 = 0.187`` (q* ~ 3.7), SiLU from ``sigma_b2 = 0.57`` (q* ~ 15).
    TypeError
        A bad ``activation`` or ``sigma_b2``.

    Notes
    -----
    chi_1 = sigma_w2 E phi'(sqrt(q*) z)^2 (Xiao et al. 2018, eq. 2.7; Schoenholz et al. 2017, eq. 5)
    together with the fixed point q* = sigma_w2 E phi(sqrt(q*) z)^2 + sigma_b2 (eq. 2.5) gives the
    one-parameter curve ``sigma_w2 = 1 / E phi'^2(q)``, ``sigma_b2 = q - E phi^2(q) / E phi'^2(q)``
    (Hayou, Doucet & Rousseau 2019). ReLU-like activations are critical at ``sigma_w2 = 1 / E phi'^2``
    for every q; an odd activation at ``sigma_b2 = 0`` is critical at q* = 0 (the q-map contracts
    to it); otherwise :func:`meanfield.dense.critical_sigma_w2` is kept where its fixed point has
    chi_1 = 1 and 0 < q* < inf, and the curve above is solved for q* where it has not (a jump of
    q* from 0 or to infinity).

    Examples
    --------
    >>> point = edge_of_chaos("gelu", 0.3)
    >>> round(point.chi_1, 9), point.q_star > 1, point.chi_q < 1
    (1.0, True, True)
    """
    act = resolve_activation(activation)
    sigma_b2 = check_nonnegative_scalar(sigma_b2, "sigma_b2")
    base = act.name.split("(")[0]
    if act.is_builtin and base == "linear":  # chi_1 = sigma_w2 exactly
        return EdgeOfChaos(act.name, 1.0, sigma_b2, math.inf, 1.0, "closed form")
    if act.is_builtin:
        sw = _builtin_critical(act, sigma_b2)
        if base in _HOMOGENEOUS or act.name.startswith("leaky_relu"):
            return EdgeOfChaos(act.name, sw, sigma_b2, math.inf, 1.0, "dense.critical_sigma_w2")
        try:
            fp = dense.fixed_point(act, sw, sigma_b2)
        except ValueError:
            fp = None
        if fp is not None and abs(fp.chi_1 - 1.0) < 1e-6:
            if 0.0 < fp.q_star < math.inf and fp.q_star > 1e-6:
                return EdgeOfChaos(act.name, sw, sigma_b2, float(fp.q_star), float(fp.chi_1), "dense.critical_sigma_w2")
            if fp.q_star <= 1e-6 and sigma_b2 == 0.0 and _is_odd(act):
                return EdgeOfChaos(act.name, sw, sigma_b2, 0.0, float(fp.chi_1), "dense.critical_sigma_w2")
    elif sigma_b2 == 0.0 and _is_odd(act):
        sw = _user_critical(act, sigma_b2)
        return EdgeOfChaos(act.name, sw, sigma_b2, 0.0, 1.0, "iterated q-map")
    return _nontrivial_point(act, sigma_b2)


def _user_critical(act: Activation, sigma_b2: float) -> float:
    from scipy.optimize import brentq

    def excess(sw):
        q = _user_q_star(act, sw, sigma_b2)
        if not math.isfinite(q):
            return 1.0
        return sw * float(expectation(act, q, (1, 1))) - 1.0

    lo, hi = 1e-6, 100.0
    if excess(lo) > 0 or excess(hi) < 0:
        raise ValueError(
            f"activation {act.name!r} has no edge of chaos for sigma_w2 in (1e-6, 100) at sigma_b2={sigma_b2}"
        )
    return float(brentq(excess, lo, hi, xtol=1e-13, rtol=1e-12, maxiter=200))


def critical_sigma_w2(activation: Any, sigma_b2: float = 0.0) -> float:
    """The weight variance at the edge of chaos (chi_1 = 1) for ``activation`` and ``sigma_b2``.

    ``edge_of_chaos(activation, sigma_b2).sigma_w2`` (:func:`edge_of_chaos`): the critical point
    at the fixed point q* that real inputs reach.

    Parameters
    ----------
    activation : str, Activation or torch.nn.Module
    sigma_b2 : float
        Bias variance (>= 0, finite).

    Returns
    -------
    float
        ``sigma_w2 > 0``.

    Raises
    ------
    ValueError
        Negative or non-finite ``sigma_b2``; no edge of chaos with q* > 0 (GELU, SiLU at
        ``sigma_b2 = 0``: the message names a ``sigma_b2`` that has one).
    TypeError
        A bad ``activation`` or a non-real ``sigma_b2``.

    Notes
    -----
    Xiao et al. 2018, eq. 2.7 (chi_1); Schoenholz et al. (2017), eq. 5.
    """
    return edge_of_chaos(activation, sigma_b2).sigma_w2


def _is_conv_weight(tensor) -> bool:
    return tensor.dim() >= 3


def _kernel_shape(tensor) -> tuple[int, ...]:
    return tuple(int(s) for s in tensor.shape[2:])


def _gaussian_array(tensor, sigma_w2: float, rng) -> tuple[np.ndarray, tuple | None]:
    c_out, c_in = int(tensor.shape[0]), int(tensor.shape[1])
    if not _is_conv_weight(tensor):
        return np_init.dense_weights(c_out, c_in, sigma_w2, "gaussian", rng), None
    ks = _kernel_shape(tensor)
    if len(ks) in (1, 2) and all(k % 2 == 1 for k in ks):
        kernel = np_init.gaussian_conv_kernel(ks, c_in, c_out, sigma_w2=sigma_w2, rng=rng)
        v = np.full(ks, 1.0 / math.prod(ks))
        return np_init.to_torch_layout(kernel), _tuple(v)
    # Conv3d or even kernels: i.i.d. N(0, sigma_w2 / fan_in) entries, the same law, drawn densely
    flat = np_init.dense_weights(c_out, c_in * math.prod(ks), sigma_w2, "gaussian", rng)
    return flat.reshape(tensor.shape), _tuple(np.full(ks, 1.0 / math.prod(ks)))


def _tuple(v: np.ndarray) -> tuple:
    return tuple(map(_tuple, v)) if v.ndim > 1 else tuple(float(x) for x in v)


def critical_normal_(
    tensor: Any, activation: Any, sigma_b2: float = 0.0, bias: Any = None, *, generator: Any = None
) -> Any:
    """Gaussian weights at the edge of chaos: ``W_ij ~ N(0, sigma_w2* / fan_in)`` with chi_1(sigma_w2*) = 1.

    Parameters
    ----------
    tensor : torch.Tensor
        ``Linear`` weight ``(out, in)`` or ``ConvNd`` weight ``(c_out, c_in, *k)``; filled in place.
    activation : str, Activation or torch.nn.Module
        The activation whose edge of chaos is wanted (a library name, an ``Activation``, or a
        PyTorch activation module; see :mod:`meanfield.pytorch._activations`).
    sigma_b2 : float
        Bias variance (>= 0, finite); the edge of chaos depends on it.
    bias : torch.Tensor, optional
        The layer's bias, drawn ``N(0, sigma_b2)`` in place after the weights.
    generator : torch.Generator, optional

    Returns
    -------
    torch.Tensor
        ``tensor``, with ``tensor.meanfield_init`` set.

    Raises
    ------
    TypeError
        ``tensor`` not a floating-point tensor; a bad ``activation``, ``bias`` or ``generator``.
    ValueError
        A tensor of the wrong rank or empty; a negative or non-finite ``sigma_b2``.

    Notes
    -----
    The Gaussian weights of Xiao et al. 2018, eq. 2.2 (uniform variance vector ``v`` for a kernel, drawn
    by :func:`meanfield.init.gaussian_conv_kernel`; dense weights by
    :func:`meanfield.init.dense_weights`) with ``sigma_w2`` from :func:`critical_sigma_w2`
    (chi_1 = 1, eq. 2.7).

    Examples
    --------
    >>> import torch
    >>> layer = torch.nn.Linear(256, 256)
    >>> _ = critical_normal_(layer.weight, "tanh", 0.05, layer.bias, generator=torch.Generator().manual_seed(0))
    >>> round(layer.weight.meanfield_init.sigma_w2, 4)
    1.761
    """
    _check_tensor(tensor)
    sigma_b2 = check_nonnegative_scalar(sigma_b2, "sigma_b2")
    act = resolve_activation(activation)
    sigma_w2 = critical_sigma_w2(act, sigma_b2)
    return _normal(tensor, sigma_w2, sigma_b2, bias, generator, "critical_normal_", (("activation", act.name),))


def _normal(tensor, sigma_w2, sigma_b2, bias, generator, method, extra=()):
    rng = numpy_rng(generator)
    array, v = _gaussian_array(tensor, sigma_w2, rng)
    _draw_bias(bias, sigma_b2, rng)
    spec = InitSpec(
        method,
        sigma_w2,
        sigma_b2 if bias is not None else None,
        v,
        gaussian=True,
        kwargs=(("sigma_w2", sigma_w2), ("sigma_b2", sigma_b2)) + tuple(extra),
    )
    return _copy(tensor, array, spec)


def mean_field_normal_(
    tensor: Any, sigma_w2: float, sigma_b2: float = 0.0, bias: Any = None, *, generator: Any = None
) -> Any:
    """Gaussian weights of the mean-field convention at any ``sigma_w2``: ``W_ij ~ N(0, sigma_w2 / fan_in)``.

    The law of :func:`critical_normal_` without the edge-of-chaos choice: used to place a network
    in the ordered (chi_1 < 1) or chaotic (chi_1 > 1) phase.

    Parameters
    ----------
    tensor : torch.Tensor
        ``Linear`` weight ``(out, in)`` or ``ConvNd`` weight ``(c_out, c_in, *k)``.
    sigma_w2 : float
        Weight variance times fan-in (>= 0, finite).
    sigma_b2 : float
        Bias variance (>= 0, finite).
    bias : torch.Tensor, optional
        Drawn ``N(0, sigma_b2)`` after the weights.
    generator : torch.Generator, optional

    Returns
    -------
    torch.Tensor

    Raises
    ------
    TypeError, ValueError
        A bad tensor, negative or non-finite variances, a bad ``bias`` or ``generator``.

    Notes
    -----
    Xiao et al. 2018, eq. 2.2 (:func:`meanfield.init.gaussian_conv_kernel`, uniform ``v``) and the dense
    convention of :func:`meanfield.init.dense_weights`.
    """
    _check_tensor(tensor)
    sigma_w2 = check_nonnegative_scalar(sigma_w2, "sigma_w2")
    sigma_b2 = check_nonnegative_scalar(sigma_b2, "sigma_b2")
    return _normal(tensor, sigma_w2, sigma_b2, bias, generator, "mean_field_normal_")


def _conv_sizes(tensor, name: str):
    _check_tensor(tensor, ndims=(3, 4))
    c_out, c_in = int(tensor.shape[0]), int(tensor.shape[1])
    ks = _kernel_shape(tensor)
    if len(ks) == 2 and ks[0] != ks[1]:
        raise ValueError(f"{name} needs a square k x k kernel, got kernel shape {ks}")
    return c_out, c_in, ks


def _centre_tap(ks: tuple[int, ...]) -> np.ndarray:
    """The one-hot variance vector of a kernel with weight only at the centre tap ``k // 2``."""
    v = np.zeros(ks)
    v[tuple(k // 2 for k in ks)] = 1.0
    return v


def _from_library(tensor, method: str, sigma_w2: float, array: np.ndarray, v: np.ndarray | None = None):
    """The one converter of the ``sigma_w2``-scaled constructions of :mod:`meanfield.init` into a tensor.

    ``array`` is in the library's layout: a dense ``(n_out, n_in)`` matrix, copied as it is, or a
    kernel ``(*k, c_out, c_in)``, converted by :func:`meanfield.init.to_torch_layout`; the tensor's
    ``meanfield_init`` records ``method``, ``sigma_w2`` and the kernel's variance vector ``v``.
    """
    spec = InitSpec(
        method, float(sigma_w2), None, None if v is None else _tuple(v), kwargs=(("sigma_w2", float(sigma_w2)),)
    )
    return _copy(tensor, array if tensor.dim() == 2 else np_init.to_torch_layout(array), spec)


def _orthogonal_kernel_(tensor, method: str, sigma_w2: float, generator, make_1d, make_2d, variance):
    """A 1-D or square 2-D orthogonal kernel from ``make_1d`` / ``make_2d`` with ``variance(ks)`` as ``v``,
    scaled to the library convention ``fan_in * E W^2 = sigma_w2`` for any ``c_in``, ``c_out``.

    ``c_in <= c_out``: the isometry of :mod:`meanfield.init` times ``sqrt(sigma_w2 c_out / c_in)``
    (``|K * x|^2 = sigma_w2 (c_out / c_in) |x|^2``, per output unit ``sigma_w2`` times the input's
    second moment); ``c_in > c_out``: the adjoint of an isometry from ``c_out`` to ``c_in``
    channels (channels swapped, taps mirrored), orthonormal rows, times ``sqrt(sigma_w2)``.
    """
    c_out, c_in, ks = _conv_sizes(tensor, method)
    sigma_w2 = check_nonnegative_scalar(sigma_w2, "sigma_w2")
    rng = numpy_rng(generator)
    make = make_1d if len(ks) == 1 else make_2d
    if c_in <= c_out:
        kernel = make(ks[0], c_in, c_out, sigma_w2=sigma_w2 * (c_out / c_in), rng=rng)
    else:
        adjoint = make(ks[0], c_out, c_in, sigma_w2=sigma_w2, rng=rng)  # (*k, c_in, c_out)
        mirrored = adjoint[(slice(None, None, -1),) * len(ks)]
        kernel = np.ascontiguousarray(np.swapaxes(mirrored, -1, -2))
    return _from_library(tensor, method, sigma_w2, kernel, variance(ks))


def orthogonal_conv_(tensor: Any, sigma_w2: float = 1.0, *, generator: Any = None) -> Any:
    """Orthogonal convolution kernel, Algorithm 1 of Xiao et al. 2018 (:func:`meanfield.init.orthogonal_conv_kernel`).

    With ``padding=k // 2, padding_mode="circular"`` the convolution by the kernel is an isometry
    (``c_in <= c_out``) or co-isometry (orthonormal rows, ``c_in > c_out``) for every spatial size
    (Definition 2.1 of Xiao et al. 2018), scaled so that ``fan_in * E W^2 = sigma_w2``: the factor is
    ``sqrt(sigma_w2 * c_out / c_in)`` for ``c_in <= c_out`` (``sqrt(sigma_w2)``, the paper's
    ``gain``, for square kernels) and ``sqrt(sigma_w2)`` for ``c_in > c_out``.

    Parameters
    ----------
    tensor : torch.Tensor
        ``Conv1d`` weight ``(c_out, c_in, k)`` or ``Conv2d`` weight ``(c_out, c_in, k, k)``.
    sigma_w2 : float
        ``fan_in * E W^2`` (>= 0, finite).
    generator : torch.Generator, optional

    Returns
    -------
    torch.Tensor
        ``tensor`` (``tensor.meanfield_init.v`` is the binomial variance vector that Algorithm 1
        realises on average, :func:`meanfield.init.orthogonal_kernel_variance`).

    Raises
    ------
    TypeError, ValueError
        A tensor that is not a 1-D or square 2-D convolution weight, a bad ``sigma_w2`` or a
        request beyond :data:`meanfield.init.MAX_KERNEL_WORK`.

    Notes
    -----
    Xiao et al. 2018, Algorithm 1 and eq. 2.17.
    """
    return _orthogonal_kernel_(
        tensor,
        "orthogonal_conv_",
        sigma_w2,
        generator,
        np_init.orthogonal_conv_kernel_1d,
        np_init.orthogonal_conv_kernel,
        lambda ks: np_init.orthogonal_kernel_variance(ks[0], ndim=len(ks)),
    )


def delta_orthogonal_(tensor: Any, sigma_w2: float = 1.0, *, generator: Any = None) -> Any:
    """Delta-orthogonal kernel, Algorithm 2 of Xiao et al. 2018 (:func:`meanfield.init.delta_orthogonal_kernel`).

    Parameters
    ----------
    tensor, sigma_w2, generator
        As in :func:`orthogonal_conv_`.

    Returns
    -------
    torch.Tensor
        ``tensor``: a Haar ``c_out x c_in`` matrix with orthonormal columns (``c_in <= c_out``)
        times ``sqrt(sigma_w2 c_out / c_in)``, or with orthonormal rows times ``sqrt(sigma_w2)``,
        at the centre tap, zero elsewhere (``meanfield_init.v`` one-hot): ``fan_in * E W^2 =
        sigma_w2`` in both cases.

    Raises
    ------
    TypeError, ValueError
        As :func:`orthogonal_conv_`.

    Notes
    -----
    Xiao et al. 2018, Algorithm 2.
    """
    return _orthogonal_kernel_(
        tensor,
        "delta_orthogonal_",
        sigma_w2,
        generator,
        np_init.delta_orthogonal_kernel_1d,
        np_init.delta_orthogonal_kernel,
        _centre_tap,
    )


def _orthogonal_dense_(tensor, sigma_w2: float, generator) -> Any:
    """Dense orthogonal law of :func:`meanfield.init.dense_weights` (``law="orthogonal"``)."""
    _check_tensor(tensor, ndims=(2,))
    rng = numpy_rng(generator)
    w = np_init.dense_weights(int(tensor.shape[0]), int(tensor.shape[1]), sigma_w2, "orthogonal", rng)
    return _from_library(tensor, "orthogonal", sigma_w2, w)


def looks_linear_(tensor: Any, sigma_w2: float = 1.0, *, generator: Any = None) -> Any:
    """Orthogonal looks-linear weights ``[[U, -U], [-U, U]]`` (Burkholz & Dubatovka 2019 Sec. 3; Blumenfeld et al. 2020 eq. 8 for kernels).

    Parameters
    ----------
    tensor : torch.Tensor
        ``Linear`` weight ``(out, in)`` with even sizes (:func:`meanfield.init.orthogonal_looks_linear`),
        or a ``Conv1d``/``Conv2d`` weight ``(n, n, *k)`` with ``n`` even
        (:func:`meanfield.init.looks_linear_delta_orthogonal`: ``Delta (x) [[U, -U], [-U, U]]``).
    sigma_w2 : float
        ``U = sqrt(sigma_w2) Q`` with ``Q`` Haar orthogonal (>= 0, finite).
    generator : torch.Generator, optional

    Returns
    -------
    torch.Tensor

    Raises
    ------
    TypeError, ValueError
        Odd sizes, a non-square convolution, a bad ``sigma_w2`` or tensor.

    Notes
    -----
    A ReLU network so initialised propagates its pre-activation half as the linear network
    ``prod_l U_l`` (Burkholz & Dubatovka 2019, Sec. 3): dynamical isometry at any depth.
    """
    _check_tensor(tensor, ndims=(2, 3, 4))
    rng = numpy_rng(generator)
    if tensor.dim() == 2:
        w = np_init.orthogonal_looks_linear(int(tensor.shape[0]), int(tensor.shape[1]), sigma_w2, rng)
        return _from_library(tensor, "looks_linear_", sigma_w2, w)
    c_out, c_in, ks = int(tensor.shape[0]), int(tensor.shape[1]), _kernel_shape(tensor)
    if c_out != c_in:
        raise ValueError(f"looks_linear_ on a convolution needs c_out == c_in, got {c_out} and {c_in}")
    kernel = np_init.looks_linear_delta_orthogonal(c_out, ks, sigma_w2, rng)
    return _from_library(tensor, "looks_linear_", sigma_w2, kernel, _centre_tap(ks))


def gsm_(tensor: Any, sigma_w2: float = 2.0, *, generator: Any = None) -> Any:
    """Gaussian submatrix (GSM) weights ``[[W0, -W0], [-W0, W0]]``, ``W0 ~ N(0, sigma_w2 / n_in)`` (Burkholz & Dubatovka 2019, Sec. 3).

    Parameters
    ----------
    tensor : torch.Tensor
        ``Linear`` weight ``(out, in)`` with even sizes.
    sigma_w2 : float
        ``n_in * Var W0_ij`` (the paper's He-like ``2 / N`` is ``sigma_w2 = 2``, the default).
    generator : torch.Generator, optional

    Returns
    -------
    torch.Tensor

    Raises
    ------
    TypeError, ValueError
        Not a 2-D floating tensor, odd sizes, a bad ``sigma_w2``.

    Notes
    -----
    :func:`meanfield.init.gsm`; Burkholz & Dubatovka 2019, Sec. 3.
    """
    _check_tensor(tensor, ndims=(2,))
    rng = numpy_rng(generator)
    w = np_init.gsm(int(tensor.shape[0]), int(tensor.shape[1]), sigma_w2, rng)
    return _from_library(tensor, "gsm_", sigma_w2, w)


def zero_(tensor: Any) -> Any:
    """ZerO weights (deterministic, Hadamard-based; :func:`meanfield.init.zero_weights`; Grzejdziak 2023 part 3).

    Parameters
    ----------
    tensor : torch.Tensor
        ``Linear`` weight ``(out, in)``.

    Returns
    -------
    torch.Tensor
        Partial identity when ``out <= in``, else a scaled Hadamard block.

    Raises
    ------
    TypeError, ValueError
        Not a 2-D floating tensor.
    """
    _check_tensor(tensor, ndims=(2,))
    w = np_init.zero_weights(int(tensor.shape[0]), int(tensor.shape[1]))
    return _copy(tensor, w, InitSpec("zero_", float(np.sum(w**2)) / int(tensor.shape[0]), deterministic=True))


def zero_star_(tensors: Any, law: str = "gaussian", *, generator: Any = None) -> list:
    """ZerO* (Grzejdziak 2023, part 3 Sec. A): a random first layer (``Var W = 1 / n_in``), ZerO elsewhere.

    Parameters
    ----------
    tensors : sequence of torch.Tensor
        The ``Linear`` weights of a network in order, ``tensors[l].shape[1] == tensors[l-1].shape[0]``.
    law : {"gaussian", "uniform", "rademacher"}
        Law of the first layer's entries.
    generator : torch.Generator, optional

    Returns
    -------
    list of torch.Tensor

    Raises
    ------
    TypeError, ValueError
        Not a sequence of 2-D floating tensors with chained shapes; an unknown ``law``.

    Notes
    -----
    :func:`meanfield.init.zero_star_network`.
    """
    if isinstance(tensors, torch.Tensor) or not isinstance(tensors, (list, tuple)) or not tensors:
        raise TypeError("tensors must be a non-empty list of Linear weight tensors, in order")
    for i, t in enumerate(tensors):
        _check_tensor(t, f"tensors[{i}]", ndims=(2,))
    widths = [int(tensors[0].shape[1])] + [int(t.shape[0]) for t in tensors]
    for i in range(1, len(tensors)):
        if int(tensors[i].shape[1]) != int(tensors[i - 1].shape[0]):
            raise ValueError(
                f"tensors[{i}] has {int(tensors[i].shape[1])} inputs but tensors[{i - 1}] has {int(tensors[i - 1].shape[0])} outputs"
            )
    rng = numpy_rng(generator)
    mats = np_init.zero_star_network(widths, law, rng)
    out = []
    for i, (t, w) in enumerate(zip(tensors, mats)):
        spec = InitSpec("zero_star_", 1.0, None, None, gaussian=(i == 0 and law == "gaussian"), deterministic=i > 0)
        out.append(_copy(t, w, spec))
    return out


def constnet_(tensor: Any, kind: str = "average") -> Any:
    """A ConstNet tensor (Blumenfeld et al. 2020, Sec. 3.1, App. A): the averaging layer ``Delta (x) 11^T / n_in`` or zeros.

    Parameters
    ----------
    tensor : torch.Tensor
        ``Linear`` weight ``(out, in)`` or ``Conv1d``/``Conv2d`` weight ``(c_out, c_in, *k)`` (odd k).
    kind : {"average", "zero"}
        ``"average"``: :func:`meanfield.init.averaging_conv` (ConstNet's first layer and widening
        skip); ``"zero"``: the zero residual branches and head.

    Returns
    -------
    torch.Tensor

    Raises
    ------
    TypeError, ValueError
        A bad tensor or ``kind``.
    """
    _check_tensor(tensor, ndims=(2, 3, 4))
    if not isinstance(kind, str) or kind not in ("average", "zero"):
        raise ValueError(f"kind must be 'average' or 'zero', got {kind!r}")
    c_out, c_in = int(tensor.shape[0]), int(tensor.shape[1])
    if kind == "zero":
        w = np.zeros(tuple(tensor.shape))
    elif tensor.dim() == 2:
        w = np_init.averaging_conv(c_out, c_in, (1,))[0]
    else:
        w = np_init.to_torch_layout(np_init.averaging_conv(c_out, c_in, _kernel_shape(tensor)))
    return _copy(tensor, w, InitSpec("constnet_", 0.0, deterministic=True, kwargs=(("kind", kind),)))


def leakynet_(tensor: Any, layer: int, slope: float = 0.01, kind: str = "I") -> Any:
    """LeakyNet tensor of layer ``layer`` (1-based): ``s_l Delta (x) M_l``, ``s_l = -1 / slope`` on odd layers (Blumenfeld et al. 2020, Sec. 5.1).

    Parameters
    ----------
    tensor : torch.Tensor
        Square ``Linear`` weight ``(n, n)`` or ``Conv1d``/``Conv2d`` weight ``(n, n, *k)``.
    layer : int
        1-based layer index (its parity sets the sign and scale).
    slope : float
        Negative slope of the leaky ReLU, in (0, 1].
    kind : {"I", "1"}
        Channel matrix ``I`` or ``11^T / n``.

    Returns
    -------
    torch.Tensor

    Raises
    ------
    TypeError, ValueError
        A non-square tensor, ``layer < 1``, ``slope`` outside (0, 1], an unknown ``kind``.

    Notes
    -----
    :func:`meanfield.init.leakynet`.
    """
    from .._checks import check_int

    _check_tensor(tensor, ndims=(2, 3, 4))
    layer = check_int(layer, "layer", 1, 10**5)
    n = int(tensor.shape[0])
    if int(tensor.shape[1]) != n:
        raise ValueError(f"leakynet_ needs a square weight (n, n, ...), got shape {tuple(tensor.shape)}")
    ks = _kernel_shape(tensor) if tensor.dim() > 2 else (1,)
    kinds = [kind] if layer % 2 else ["I", kind]
    w = np_init.leakynet(kinds, n, slope, ks)[-1]
    w = w[0] if tensor.dim() == 2 else np_init.to_torch_layout(w)
    return _copy(tensor, w, InitSpec("leakynet_", 0.0, deterministic=True))


# --- whole models ----------------------------------------------------------------------------------


def _is_weight_layer(m) -> bool:
    nn = torch.nn
    return isinstance(m, (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d))


def layer_activations(model: Any, activation: Any = None, example_inputs: Any = None) -> dict:
    """For every ``Linear``/``Conv`` layer of ``model``, the activation whose output it consumes.

    Read from the traced graph (:func:`meanfield.pytorch.trace.trace`, the rule stated there), so
    functional activations and residual paths are seen; ``activation`` (when given) overrides the
    detection for every layer. Returns ``{module: Activation}`` in execution order.
    """
    from .trace import trace

    tr = trace(model, example_inputs)
    override = None if activation is None else resolve_activation(activation)
    return {model.get_submodule(w.name): override or w.activation for w in tr.weight_layers}


@dataclass(frozen=True)
class LayerInit(Result):
    """What :func:`critical_init_` did to one module.

    Attributes
    ----------
    name : str
        Qualified module name.
    kind : str
        ``"weight"``, ``"norm"``, ``"attention"``, ``"embedding"``, ...
    action : str
        ``"initialised"``, ``"set"`` (norm affine parameters) or ``"left alone"``.
    activation : str or None
        The activation the layer consumes (weight layers).
    sigma_w2, sigma_b2 : float or None
        Drawn variances (``sigma_w2`` after the residual-branch factor).
    construction : str
        ``"critical_normal_"``, ``"orthogonal"``, ``"delta_orthogonal_"``, ``"orthogonal_conv_"``.
    branch_factor : float
        Residual-branch factor applied (1 outside residual branches).
    q_star : float or None
        The fixed point of the edge of chaos used.
    reason : str
    """

    name: str
    kind: str
    action: str
    activation: str | None = None
    sigma_w2: float | None = None
    sigma_b2: float | None = None
    construction: str = ""
    branch_factor: float = 1.0
    q_star: float | None = None
    reason: str = ""


@dataclass(frozen=True)
class CriticalInit(Result):
    """The report of :func:`critical_init_` (``print(report)`` shows the table).

    Attributes
    ----------
    layers : tuple of LayerInit
        Every weight, norm, attention and embedding module, in execution order.
    frozen : tuple of str
        Modules left alone because their parameters do not require gradients.
    unsupported : tuple of str
        ``"node (op): reason"`` for every traced node outside the theory.
    residual_adds : int
        ``L`` of the residual-branch rule.
    trace_method : str
        ``"fx"`` or ``"hooks"``.
    sigma_b2 : float or "auto"
    kernel : str
    """

    layers: tuple
    frozen: tuple
    unsupported: tuple
    residual_adds: int
    trace_method: str
    sigma_b2: float | str
    kernel: str

    @property
    def initialised(self) -> tuple:
        """Names of the weight layers drawn."""
        return tuple(r.name for r in self.layers if r.action == "initialised")

    def table(self) -> str:
        """One line per module, then the frozen and unsupported lists."""
        width = max([len(r.name) for r in self.layers] + [6])
        head = (
            f"{'module':<{width}} | {'kind':<9} | {'action':<11} | {'consumes':<10} | {'sigma_w2':>9} | "
            f"{'sigma_b2':>8} | {'branch':>6} | construction / reason"
        )
        lines = [head, "-" * len(head)]
        for r in self.layers:
            sw = "-" if r.sigma_w2 is None else f"{r.sigma_w2:.4g}"
            sb = "-" if r.sigma_b2 is None else f"{r.sigma_b2:.4g}"
            what = r.construction + (f"; {r.reason}" if r.reason and r.construction else r.reason)
            lines.append(
                f"{r.name:<{width}} | {r.kind:<9} | {r.action:<11} | {r.activation or '-':<10} | {sw:>9} | "
                f"{sb:>8} | {r.branch_factor:>6.3g} | {what}"
            )
        lines.append(f"frozen (left alone): {', '.join(self.frozen) or 'none'}")
        lines.append(f"{len(self.unsupported)} traced node(s) outside the theory" + (":" if self.unsupported else ""))
        lines.extend(f"  {u}" for u in self.unsupported)
        lines.append(
            f"{len(self.initialised)} weight layer(s) initialised ({self.kernel}, sigma_b2 = {self.sigma_b2}), "
            f"{self.residual_adds} residual addition(s), traced by {self.trace_method}"
        )
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


#: Residual-branch rules accepted by :func:`critical_init_`.
RESIDUAL_RULES = ("depth", None)


def _frozen(module) -> bool:
    params = list(module.parameters(recurse=False))
    return bool(params) and not any(p.requires_grad for p in params)


def _flat_orthogonal_(tensor, sigma_w2: float, generator) -> None:
    """Dense orthogonal law over the flattened fan-in ``(c_out, c_in * prod(k))`` (strided, even or 3-D kernels)."""
    rng = numpy_rng(generator)
    c_out = int(tensor.shape[0])
    w = np_init.dense_weights(c_out, _fan_in(tensor), sigma_w2, "orthogonal", rng)
    spec = InitSpec("orthogonal", float(sigma_w2), None, None, kwargs=(("sigma_w2", float(sigma_w2)),))
    _copy(tensor, w.reshape(tuple(tensor.shape)), spec)


def _branch_factor(n_res: int, prenorm: bool) -> float:
    """Variance factor of a residual branch's output under ``residual="depth"``.

    ``1 / L`` for a branch that reads the stream directly (the stream's variance grows at most by
    ``(1 + 1/L)^L < e``); ``1 / sqrt(L)`` for a pre-norm branch, which reads the stream through a
    normalisation: its input has unit variance whatever the stream's, so the stream grows only
    linearly, ``q_l = q_0 + l a`` with ``a`` the branch variance, and the gradient at the first
    branch's weights over the gradient at the last layer is ``sqrt(a (1 + L a) / (1 + a))``
    (each norm divides the backward signal by ``sqrt(q_l)``), exactly 1 at ``a = 1 / sqrt(L)``
    (``1 / sqrt(L)`` small at ``a = 1 / L``, ``sqrt(L / 2)`` large at ``a = 1``).
    """
    return 1.0 / math.sqrt(n_res) if prenorm else 1.0 / n_res


def critical_init_(
    model: Any,
    activation: Any = None,
    sigma_b2: float | str = 0.0,
    kernel: str = "delta_orthogonal",
    *,
    generator: Any = None,
    example_inputs: Any = None,
    residual: str | None = "depth",
) -> CriticalInit:
    """Initialise every weight layer of ``model`` at the edge of chaos of the path through it.

    The model is traced (:func:`meanfield.pytorch.trace.trace`): each ``Linear``/``Conv`` layer
    gets the critical ``sigma_w2`` of the activation whose output it consumes along the graph
    (functional activations included; the first layer, which consumes the data, takes the
    activation that follows it; a layer after a normalisation, attention or another weight layer
    consumes a linear signal: ``sigma_w2 = 1``), at the fixed point q* the signal reaches
    (:func:`edge_of_chaos`), and its bias ``N(0, sigma_b2)``. Where q* is a nontrivial fixed point
    (GELU, SiLU), which the q-map approaches only over tens of layers (slope ~0.98-0.99), the layer
    fed by the data gets ``sigma_w2 = (q* - sigma_b2) / q_in`` so that the signal starts at q*
    (``q_in``: the mean square of ``example_inputs``, 1 without them).

    Parameters
    ----------
    model : torch.nn.Module
    activation : str, Activation or torch.nn.Module, optional
        One activation for every layer, overriding the traced ones.
    sigma_b2 : float or "auto"
        Bias variance (>= 0, finite). GELU needs ``sigma_b2 >= 0.186`` and SiLU ``>= 0.591`` for a
        critical point that real inputs reach (below, ``ValueError`` naming the bound);
        ``"auto"``: each layer's bias gets :func:`stable_sigma_b2` of the activation it consumes
        (0 for tanh, ReLU, linear).
    kernel : {"delta_orthogonal", "orthogonal", "gaussian"}
        ``"delta_orthogonal"``: delta-orthogonal kernels (Algorithm 2) for odd-sized stride-1
        convolutions, orthogonal matrices for ``Linear`` layers (dynamical isometry, Xiao et al. 2018
        Sec. 2.4); ``"orthogonal"``: Algorithm-1 kernels for those convolutions; ``"gaussian"``:
        i.i.d. Gaussian weights everywhere. Orthogonal weights are scaled so that ``fan_in * E W^2
        = sigma_w2`` for any channel counts (orthonormal columns for ``c_in <= c_out``, rows for
        ``c_in > c_out``); strided, even-sized and 3-D kernels get the dense orthogonal law over
        their flattened fan-in.
    generator : torch.Generator, optional
        One NumPy stream is drawn from it per layer, in execution order.
    example_inputs : torch.Tensor or tuple, optional
        A batch for tracing on a real forward pass where ``torch.fx`` fails.
    residual : {"depth", None}
        ``"depth"``: with ``L`` residual additions in the graph, the last weight layer of every
        residual branch gets ``sigma_w2 / L`` and ``sigma_b2 / L`` (or, when a norm sits between
        it and the addition, the norm's weight is set to ``1 / sqrt(L)``), so that the stream's
        variance grows at most by ``(1 + 1/L)^L < e`` over the whole depth and the depth scales
        stay finite. A pre-norm branch (the stream enters it through a normalisation: pre-LN
        transformer and mixer blocks) gets ``1 / sqrt(L)`` instead (norm weight ``L^(-1/4)``):
        the norm already keeps its input at unit variance, the stream grows only linearly, and
        ``a = 1 / sqrt(L)`` is the branch variance that makes the gradient at the first branch's
        weights equal the gradient at the output (``1 / L`` leaves it ``~sqrt(2 / L)``).
        A post-norm branch (the addition's output is seen only through a normalisation:
        post-LayerNorm transformer blocks) gets no factor: the norm after the addition keeps the
        stream at unit variance, and the block's c-map ``(c + a f(c)) / (1 + a)`` has slope 1 at
        ``c = 1`` for a critical branch ``f`` whatever its variance ``a``; ``1 / L`` would only
        shrink the gradient at the branch's weights to ``~sqrt(a)`` of the stream's.
        ``None``: no factor (the papers' residual networks, :mod:`meanfield.pytorch.modules`).

    Returns
    -------
    CriticalInit
        Per module: what was drawn or set, or left alone and why; frozen modules; the traced nodes
        outside the theory. Every drawn weight is tagged with its :class:`InitSpec`.

    Raises
    ------
    TypeError
        ``model`` not a ``torch.nn.Module``; a bad ``activation`` or ``generator``.
    ValueError
        An unknown ``kernel`` or ``residual``; a negative ``sigma_b2``; no edge of chaos for a
        layer's activation at ``sigma_b2`` (the message names the layer); a model without
        ``Linear``/``Conv`` layers; a model ``torch.fx`` cannot trace without ``example_inputs``.

    Notes
    -----
    Left alone, with the reason in the report: frozen modules (``requires_grad=False``),
    attention modules (``nn.MultiheadAttention``: softmax attention is outside the theory; PyTorch's
    own init kept), embeddings. Norm layers' affine parameters are set to weight 1, bias 0 (the
    identity after normalisation, the unit-variance signal the next layer's rule assumes), except a
    branch-end norm under ``residual="depth"``. chi_1 = 1 is the edge of chaos of Xiao et al. 2018,
    eq. 2.7 (Schoenholz et al. 2017). Orthogonal weights have the same q-map and chi_1 as Gaussian
    ones in mean field, with a better-conditioned input-output Jacobian (Xiao et al. 2018, Sec. 2.4).

    Examples
    --------
    >>> import torch
    >>> net = torch.nn.Sequential(torch.nn.Linear(8, 64), torch.nn.Tanh(), torch.nn.Linear(64, 2))
    >>> report = critical_init_(net, sigma_b2=0.05, generator=torch.Generator().manual_seed(0))
    >>> round(net[2].weight.meanfield_init.sigma_w2, 4)
    1.761
    """
    from .trace import trace

    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if not isinstance(kernel, str) or kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}")
    if residual not in RESIDUAL_RULES:
        raise ValueError(f"residual must be 'depth' or None, got {residual!r}")
    auto = isinstance(sigma_b2, str) and sigma_b2 == "auto"
    if not auto:
        if isinstance(sigma_b2, str):
            raise ValueError(f"sigma_b2 must be a number >= 0 or 'auto', got {sigma_b2!r}")
        sigma_b2 = check_nonnegative_scalar(sigma_b2, "sigma_b2")
    _check_generator(generator)
    override = None if activation is None else resolve_activation(activation)
    tr = trace(model, example_inputs)
    if not tr.weight_layers:
        raise ValueError("model has no Linear or Conv layer to initialise")
    q_in = 1.0  # standardised data
    if isinstance(example_inputs, torch.Tensor) and example_inputs.is_floating_point():
        measured = float(example_inputs.detach().double().pow(2).mean())
        if math.isfinite(measured) and measured > 0:
            q_in = measured
    n_res = tr.residual_adds if residual == "depth" else 0
    branch_norms = {
        w.branch_norm: w.branch_prenorm for w in tr.weight_layers if w.branch_end and w.branch_norm and n_res
    }
    rows: list = []
    frozen: list = []
    cache: dict = {}
    for w in tr.weight_layers:
        m = model.get_submodule(w.name)
        act = override or w.activation
        if _frozen(m):
            frozen.append(w.name)
            rows.append(LayerInit(w.name, "weight", "left alone", act.name, reason="frozen (requires_grad=False)"))
            continue
        if act.name not in cache:
            try:
                cache[act.name] = edge_of_chaos(act, stable_sigma_b2(act) if auto else sigma_b2)
            except ValueError as exc:
                raise ValueError(f"layer {w.name!r} consumes {act.name}: {exc}") from exc
        point = cache[act.name]
        factor = 1.0
        if w.branch_end and n_res and w.branch_norm is None:
            factor = 1.0 if w.branch_postnorm else _branch_factor(n_res, w.branch_prenorm)
        sw = point.sigma_w2 * factor
        # the branch's output variance is sigma_w2 E phi^2 + sigma_b2: both are scaled, else the biases
        # of L branch ends add up to an input-independent component of variance L sigma_b2 in the stream
        layer_b2 = point.sigma_b2 * factor
        start = ""
        if w.fed_by_data and point.method == "nontrivial fixed point" and point.q_star > point.sigma_b2:
            # the data enter at q_in: start the signal at q* instead of ~50 layers away from it
            sw = (point.q_star - point.sigma_b2) / q_in
            start = f"first layer: sigma_w2 = (q* - sigma_b2) / q_in, q_in = {q_in:.3g}"
        bias = m.bias
        conv = m.weight.dim() > 2
        plain_conv = conv and (
            m.weight.dim() in (3, 4)
            and all(k % 2 == 1 for k in m.kernel_size)
            and len(set(m.kernel_size)) == 1
            and all(s == 1 for s in m.stride)
            and all(d == 1 for d in m.dilation)
            and m.groups == 1
        )
        note = ""
        if kernel == "gaussian":
            _normal(m.weight, sw, layer_b2, bias, generator, "critical_normal_", (("activation", act.name),))
        else:
            if not conv:
                _orthogonal_dense_(m.weight, sw, generator)
            elif not plain_conv or m.groups != 1:
                if m.groups != 1:
                    _normal(m.weight, sw, layer_b2, bias, generator, "critical_normal_", (("activation", act.name),))
                    note = "grouped convolution: Gaussian"
                else:
                    _flat_orthogonal_(m.weight, sw, generator)
                    note = "strided, dilated or even kernel: dense orthogonal over the flattened fan-in"
            elif kernel == "delta_orthogonal":
                delta_orthogonal_(m.weight, sw, generator=generator)
            else:
                orthogonal_conv_(m.weight, sw, generator=generator)
            if m.weight.meanfield_init.method != "critical_normal_":
                spec = m.weight.meanfield_init
                _draw_bias(bias, layer_b2, numpy_rng(generator))
                m.weight.meanfield_init = spec.replace(
                    sigma_b2=layer_b2 if bias is not None else None,
                    kwargs=spec.kwargs + (("critical", act.name),),
                )
        if w.branch_end and n_res and w.branch_postnorm and w.branch_norm is None:
            note = (note + "; " if note else "") + "post-norm residual branch end: no depth factor"
        if factor != 1.0:
            rule = "sigma_w2, sigma_b2 / sqrt(L) (pre-norm)" if w.branch_prenorm else "sigma_w2, sigma_b2 / L"
            note = (note + "; " if note else "") + f"residual branch end: {rule}, L = {n_res}"
        if start:
            note = (note + "; " if note else "") + start
        rows.append(
            LayerInit(
                w.name,
                "weight",
                "initialised",
                act.name,
                sw,
                layer_b2 if bias is not None else None,
                m.weight.meanfield_init.method,
                factor,
                point.q_star,
                (f"{w.rule}; " if not note else f"{note}; {w.rule}; ")
                + (f"q* = {point.q_star:.4g}" if math.isfinite(point.q_star) else "critical at every q"),
            )
        )
    seen = {w.name for w in tr.weight_layers}
    for node in tr.nodes:
        if node.module is None or node.module in seen or node.kind not in ("norm", "attention", "embedding"):
            continue
        seen.add(node.module)
        m = model.get_submodule(node.module)
        if _frozen(m):
            frozen.append(node.module)
            rows.append(LayerInit(node.module, node.kind, "left alone", reason="frozen (requires_grad=False)"))
            continue
        if node.kind != "norm":
            rows.append(LayerInit(node.module, node.kind, "left alone", reason=node.reason + "; PyTorch's init kept"))
            continue
        weight, nbias = getattr(m, "weight", None), getattr(m, "bias", None)
        if not isinstance(weight, torch.Tensor):
            rows.append(LayerInit(node.module, "norm", "left alone", reason="no affine parameters"))
            continue
        gain = math.sqrt(_branch_factor(n_res, branch_norms[node.module])) if node.module in branch_norms else 1.0
        with torch.no_grad():
            weight.fill_(gain)
            if isinstance(nbias, torch.Tensor):
                nbias.zero_()
        reason = (
            f"residual branch end: weight {'L^(-1/4) (pre-norm)' if branch_norms[node.module] else '1 / sqrt(L)'}"
            f", L = {n_res}"
            if gain != 1.0
            else "weight 1, bias 0: the unit-variance signal the next layer assumes"
        )
        rows.append(LayerInit(node.module, "norm", "set", branch_factor=gain**2, reason=reason))
    tag_layers_(model)
    unsupported = tuple(f"{n.name} ({n.op}): {n.reason}" for n in tr.unsupported)
    return CriticalInit(tuple(rows), tuple(frozen), unsupported, n_res, tr.method, sigma_b2, kernel)


def recorded_spec(module: Any) -> InitSpec | None:
    """The :class:`InitSpec` recorded for a layer: on its weight (``module.weight.meanfield_init``), else
    on the module itself (``module.meanfield_init``, set by :func:`critical_init_`, :func:`tag_layers_`
    and the builders; it survives ``copy.deepcopy``, which drops tensor attributes); ``None`` without one."""
    spec = getattr(getattr(module, "weight", None), "meanfield_init", None)
    if not isinstance(spec, InitSpec):
        spec = getattr(module, "meanfield_init", None)
    return spec if isinstance(spec, InitSpec) else None


def tag_layers_(model: Any) -> Any:
    """Copy every weight's :class:`InitSpec` onto its module (``module.meanfield_init``), so that the
    record survives ``copy.deepcopy``; returns ``model``."""
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    for m in model.modules():
        spec = getattr(getattr(m, "weight", None), "meanfield_init", None)
        if isinstance(spec, InitSpec):
            m.meanfield_init = spec
    return model


def reinitialise_(module: Any, *, generator: Any = None) -> bool:
    """Re-run the initialiser recorded on ``module.weight`` (``meanfield_init``) with a new stream.

    Returns True when the module carried a record and was re-initialised, False otherwise (the
    module is then left as it is). The bias is redrawn ``N(0, sigma_b2)`` when the record drew it.
    """
    spec = recorded_spec(module)
    if spec is None or spec.deterministic:
        return False
    w = module.weight
    kw = dict(spec.kwargs)
    bias = getattr(module, "bias", None) if spec.sigma_b2 is not None else None
    if spec.method in ("critical_normal_", "mean_field_normal_"):
        extra = tuple((k, v) for k, v in spec.kwargs if k not in ("sigma_w2", "sigma_b2"))
        _normal(w, spec.sigma_w2, kw["sigma_b2"], bias, generator, spec.method, extra)
        module.meanfield_init = w.meanfield_init
        return True
    if spec.method == "gsm_":
        gsm_(w, kw["sigma_w2"], generator=generator)
    elif spec.method == "looks_linear_":
        looks_linear_(w, kw["sigma_w2"], generator=generator)
    elif spec.method == "orthogonal" and w.dim() > 2:
        _flat_orthogonal_(w, kw["sigma_w2"], generator)
    elif spec.method == "orthogonal":
        _orthogonal_dense_(w, kw["sigma_w2"], generator)
    elif spec.method == "delta_orthogonal_":
        delta_orthogonal_(w, kw["sigma_w2"], generator=generator)
    elif spec.method == "orthogonal_conv_":
        orthogonal_conv_(w, kw["sigma_w2"], generator=generator)
    else:
        return False
    if bias is not None:
        _draw_bias(bias, spec.sigma_b2, numpy_rng(generator))
    w.meanfield_init = spec
    module.meanfield_init = spec
    return True
