"""Finite random networks, simulated in batches on NumPy or CuPy.

Dense networks
--------------
:func:`simulate_dense`
    Many independent fully-connected networks at once (batched matrix products), recording the
    empirical pre-activation covariance of a set of inputs at every layer and, optionally, the
    squared norms of back-propagated gradients.

Shared primitives
-----------------
:func:`periodic_conv` / :func:`periodic_conv_transpose`
    Periodic (circular) cross-correlation of eq. 2.1 of Xiao et al. (2018), 1-D or 2-D, channels
    last, and its adjoint (the backward pass with respect to the input).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from meanfield._checks import as_float_array, check_int, check_nonnegative
from meanfield.activations import get_activation

from .backend import get_backend, to_numpy

__all__ = ["DenseSimulation", "activation_fn", "periodic_conv", "periodic_conv_transpose", "random_weights", "simulate_dense"]


def _offsets(kernel_shape):
    """Kernel indices and their offsets beta = j - k per spatial axis (eq. 2.1: j <-> j - k)."""
    for index in itertools.product(*(range(s) for s in kernel_shape)):
        yield index, tuple(j - s // 2 for j, s in zip(index, kernel_shape))


def periodic_conv(x, kernel, spatial_dims: int, backend="numpy"):
    """Periodic cross-correlation ``h_j(a) = sum_i sum_beta x_i(a + beta) K_ij(beta)``.

    Parameters
    ----------
    x : array, shape (..., *spatial, c_in)
        Signals with ``spatial_dims`` periodic spatial axes before the channel axis.
    kernel : array, shape (..., *kernel_spatial, c_in, c_out)
        Odd kernel sizes ``2k + 1``; index ``j`` is offset ``beta = j - k``. Leading axes broadcast
        against the leading axes of ``x`` after the spatial axes are aligned (e.g. one kernel per
        network: ``x`` (nets, batch, n, c), ``kernel`` (nets, 1, 2k+1, c, c)).
    spatial_dims : {1, 2}
    backend : str or Backend

    Returns
    -------
    array, shape (..., *spatial, c_out)
    """
    xp = get_backend(backend).xp
    ks = kernel.shape[kernel.ndim - 2 - spatial_dims : kernel.ndim - 2]
    if any(s % 2 == 0 for s in ks):
        raise ValueError(f"kernel spatial sizes must be odd (2k+1), got {tuple(ks)}")
    axes = tuple(range(x.ndim - 1 - spatial_dims, x.ndim - 1))
    out = None
    for index, beta in _offsets(ks):
        shifted = xp.roll(x, tuple(-b for b in beta), axis=axes)  # shifted[a] = x[a + beta]
        k = kernel[(Ellipsis,) + index + (slice(None), slice(None))]
        k = k.reshape(k.shape[:-2] + (1,) * (spatial_dims - 1) + k.shape[-2:])
        term = shifted @ k
        out = term if out is None else out + term
    return out


def periodic_conv_transpose(g, kernel, spatial_dims: int, backend="numpy"):
    """Adjoint of :func:`periodic_conv` with respect to ``x``: ``dx_i(a) = sum_beta sum_j g_j(a - beta) K_ij(beta)``.

    ``g`` has shape (..., *spatial, c_out); the result has shape (..., *spatial, c_in).
    """
    xp = get_backend(backend).xp
    ks = kernel.shape[kernel.ndim - 2 - spatial_dims : kernel.ndim - 2]
    axes = tuple(range(g.ndim - 1 - spatial_dims, g.ndim - 1))
    out = None
    for index, beta in _offsets(ks):
        shifted = xp.roll(g, beta, axis=axes)  # shifted[a] = g[a - beta]
        k = kernel[(Ellipsis,) + index + (slice(None), slice(None))]
        k = xp.swapaxes(k, -1, -2)
        k = k.reshape(k.shape[:-2] + (1,) * (spatial_dims - 1) + k.shape[-2:])
        term = shifted @ k
        out = term if out is None else out + term
    return out


# --- dense networks ---------------------------------------------------------------------------

_XP_ACTIVATIONS = {
    "linear": (lambda xp, x, a: x, lambda xp, x, a: xp.ones_like(x)),
    "tanh": (lambda xp, x, a: xp.tanh(x), lambda xp, x, a: 1.0 - xp.tanh(x) ** 2),
    "relu": (lambda xp, x, a: xp.maximum(x, 0.0), lambda xp, x, a: (x > 0).astype(x.dtype)),
    "leaky_relu": (
        lambda xp, x, a: xp.where(x > 0, x, a * x),
        lambda xp, x, a: xp.where(x > 0, 1.0, a).astype(x.dtype),
    ),
    "hard_tanh": (lambda xp, x, a: xp.clip(x, -1.0, 1.0), lambda xp, x, a: (xp.abs(x) < 1).astype(x.dtype)),
    "sigmoid": (
        lambda xp, x, a: 0.5 * (1.0 + xp.tanh(0.5 * x)),
        lambda xp, x, a: 0.25 * (1.0 - xp.tanh(0.5 * x) ** 2),
    ),
}


def activation_fn(activation, backend="numpy"):
    """``(phi, dphi)`` acting on arrays of ``backend``.

    Built-ins with an elementwise backend form (linear, tanh, relu, leaky_relu, hard_tanh,
    sigmoid) run natively on NumPy and CuPy; ``erf`` uses ``scipy.special.erf`` or
    ``cupyx.scipy.special.erf``; any other activation (and user-defined ones) runs the
    Activation's NumPy callables (host round-trip on CuPy).
    """
    act = get_activation(activation)
    b = get_backend(backend)
    xp = b.xp
    base = act.name.split("(")[0]
    if act.is_builtin and base in _XP_ACTIVATIONS:
        f, df = _XP_ACTIVATIONS[base]
        return (lambda x: f(xp, x, act.param)), (lambda x: df(xp, x, act.param))
    if act.is_builtin and base == "erf":
        if b.name == "cupy":
            from cupyx.scipy.special import erf  # noqa: PLC0415
        else:
            from scipy.special import erf  # noqa: PLC0415
        c = 2.0 / np.sqrt(np.pi)
        return erf, (lambda x: c * xp.exp(-x * x))
    if b.name == "numpy":
        return act.phi, act.dphi
    return (lambda x: xp.asarray(act.phi(to_numpy(x)))), (lambda x: xp.asarray(act.dphi(to_numpy(x))))


def random_weights(shape, sigma_w2, law, rng, backend="numpy"):
    """Weights of shape (..., n_out, n_in) with E W^2 = sigma_w2 / n_in, drawn on ``backend``.

    ``law`` is "gaussian", "uniform", "rademacher" or "orthogonal" (Haar via QR with the sign
    fix of R's diagonal, scaled as in :func:`meanfield.init.dense_weights`).
    """
    xp = get_backend(backend).xp
    n_out, n_in = shape[-2], shape[-1]
    std = float(np.sqrt(sigma_w2 / n_in))
    if law == "gaussian":
        return std * rng.standard_normal(shape)
    if law == "uniform":
        return std * float(np.sqrt(3.0)) * (2.0 * rng.random(shape) - 1.0)
    if law == "rademacher":
        return std * (2.0 * rng.integers(0, 2, size=shape).astype(xp.float64) - 1.0)
    if law == "orthogonal":
        big, small = max(n_out, n_in), min(n_out, n_in)
        z = rng.standard_normal(tuple(shape[:-2]) + (big, small))
        q, r = xp.linalg.qr(z)
        q = q * xp.sign(xp.diagonal(r, axis1=-2, axis2=-1))[..., None, :]
        if n_out < n_in:
            q = xp.swapaxes(q, -1, -2)
        return float(np.sqrt(sigma_w2 * big / n_in)) * q
    raise ValueError(f"law must be gaussian, uniform, rademacher or orthogonal, got {law!r}")


@dataclass(frozen=True)
class DenseSimulation:
    """Per-network statistics of simulated dense networks (NumPy arrays).

    Attributes
    ----------
    cov : ndarray, shape (n_networks, depth + 1, D, D)
        Empirical pre-activation covariance ``h^l h^l^T / width`` of the D inputs at layers
        1 .. depth + 1 (index 0 is the first layer, matching ``meanfield.dense.propagate``).
    grad_sq : ndarray, shape (n_networks, depth + 1, D) or None
        Mean squared back-propagated gradient ``|delta^l|^2 / width`` per input, with
        ``delta^{depth+1}`` i.i.d. standard normal (so its expected mean square is 1).
    """

    cov: np.ndarray
    grad_sq: np.ndarray | None


def simulate_dense(
    x,
    activation,
    sigma_w2,
    sigma_b2,
    depth,
    width,
    n_networks=16,
    law="gaussian",
    gradients=False,
    backend="numpy",
    seed=0,
) -> DenseSimulation:
    """Simulate ``n_networks`` independent random dense networks on the inputs ``x``.

    ``h^1 = W^1 x + b^1`` (``W^1`` of shape (width, n0), Var = sigma_w2 / n0), then
    ``h^{l+1} = W^{l+1} phi(h^l) + b^{l+1}`` for l = 1 .. depth, every network drawn afresh.

    Parameters
    ----------
    x : array_like, shape (D, n0)
        Inputs.
    activation : str or Activation
    sigma_w2, sigma_b2 : float
        Variances (>= 0).
    depth : int
        Number of hidden-to-hidden layers (>= 0); covariances are recorded at depth + 1 layers.
    width : int
        Hidden width (>= 1).
    n_networks : int
        Independent networks simulated together (batched matrix products).
    law : str
        Weight law: "gaussian", "uniform", "rademacher" or "orthogonal".
    gradients : bool
        Also back-propagate a standard-normal ``delta`` from the last layer.
    backend : str
        "numpy" or "cupy".
    seed : int or numpy Generator
        Random seed.
    """
    b = get_backend(backend)
    xp = b.xp
    x = as_float_array(x, "x")
    if x.ndim != 2:
        raise ValueError(f"x must have shape (D, n0), got {x.shape}")
    sigma_w2 = check_nonnegative(sigma_w2, "sigma_w2")
    sigma_b2 = check_nonnegative(sigma_b2, "sigma_b2")
    depth = check_int(depth, "depth", 0)
    width = check_int(width, "width", 1)
    n_networks = check_int(n_networks, "n_networks", 1)
    phi, dphi = activation_fn(activation, b)
    rng = b.rng(seed)
    n_in = x.shape[1]
    xs = b.asarray(x.T)  # (n0, D)
    d = x.shape[0]
    bias_std = float(np.sqrt(sigma_b2))

    def bias():
        return bias_std * rng.standard_normal((n_networks, width, 1))

    covs = xp.empty((n_networks, depth + 1, d, d))
    weights = []
    pre = []
    h = random_weights((n_networks, width, n_in), sigma_w2, law, rng, b) @ xs + bias()
    for layer in range(depth + 1):
        if layer > 0:
            w = random_weights((n_networks, width, width), sigma_w2, law, rng, b)
            if gradients:
                weights.append(w)
            h = w @ phi(h) + bias()
        covs[:, layer] = xp.swapaxes(h, 1, 2) @ h / width
        if gradients:
            pre.append(h)
    grad_sq = None
    if gradients:
        grads = xp.empty((n_networks, depth + 1, d))
        delta = rng.standard_normal((n_networks, width, d))
        grads[:, depth] = xp.mean(delta**2, axis=1)
        for layer in range(depth - 1, -1, -1):
            delta = dphi(pre[layer]) * (xp.swapaxes(weights[layer], 1, 2) @ delta)
            grads[:, layer] = xp.mean(delta**2, axis=1)
        grad_sq = to_numpy(grads)
    return DenseSimulation(cov=to_numpy(covs), grad_sq=grad_sq)
