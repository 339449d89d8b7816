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


# --- periodic convolutional networks (seed 003) ------------------------------------------------

CONV_INITS = ("gaussian", "orthogonal", "delta_orthogonal")


def conv_kernels(n_networks, kernel_shape, channels, sigma_w2, v=None, init="gaussian", rng=None, backend="numpy"):
    """One layer's kernels for ``n_networks`` networks, shape (n_networks, *kernel_shape, c, c).

    ``init="gaussian"``: i.i.d. ``omega_ij(beta) ~ N(0, sigma_w2 v_beta / c)`` (seed 003, Sec. 2.1.6;
    ``v`` defaults to uniform). ``"orthogonal"`` / ``"delta_orthogonal"``: Algorithms 1 / 2 of seed 003
    (:func:`meanfield.init.orthogonal_conv_kernel` and its 1-D variant), times ``sqrt(sigma_w2)``,
    drawn on the host with NumPy (``rng`` must then be a NumPy Generator or seed) and moved to
    ``backend``. ``kernel_shape`` entries must be odd.
    """
    from meanfield.init import (  # noqa: PLC0415 - keep the simulator import light
        delta_orthogonal_kernel,
        delta_orthogonal_kernel_1d,
        orthogonal_conv_kernel,
        orthogonal_conv_kernel_1d,
    )

    b = get_backend(backend)
    kernel_shape = tuple(int(s) for s in kernel_shape)
    c = int(channels)
    if init == "gaussian":
        v = np.full(kernel_shape, 1.0 / np.prod(kernel_shape)) if v is None else np.asarray(v, dtype=np.float64)
        if v.shape != kernel_shape:
            raise ValueError(f"v has shape {v.shape}, expected the kernel shape {kernel_shape}")
        std = b.asarray(np.sqrt(sigma_w2 * v / c)[..., None, None])
        return std * rng.standard_normal((n_networks,) + kernel_shape + (c, c))
    if init not in CONV_INITS:
        raise ValueError(f"init must be one of {CONV_INITS}, got {init!r}")
    if len(set(kernel_shape)) != 1:
        raise ValueError(f"{init} kernels are square: kernel_shape {kernel_shape}")
    host = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(int(rng.integers(2**62)))
    two_d = len(kernel_shape) == 2
    make = {
        ("orthogonal", True): orthogonal_conv_kernel,
        ("orthogonal", False): orthogonal_conv_kernel_1d,
        ("delta_orthogonal", True): delta_orthogonal_kernel,
        ("delta_orthogonal", False): delta_orthogonal_kernel_1d,
    }[(init, two_d)]
    ks = np.stack([make(kernel_shape[0], c, c, rng=host) for _ in range(n_networks)])
    return b.asarray(float(np.sqrt(sigma_w2)) * ks)


@dataclass(frozen=True)
class ConvSimulation:
    """Per-network statistics of simulated periodic CNNs (NumPy arrays).

    Attributes
    ----------
    cov : ndarray, shape (n_networks, depth + 1, D, P, P)
        Empirical spatial covariance of each input's pre-activations, averaged over channels:
        ``sum_j h_j(a) h_j(a') / c`` at layers 0 .. depth (index 0 is the sampled layer-0 field).
    grad_sq : ndarray, shape (n_networks, depth + 1, D, P) or None
        ``sum_j delta_j(a)^2 / c``: back-propagated gradient variance per position, with
        ``delta^depth`` i.i.d. standard normal (the gradient of ``E = <g, h^depth>`` for a random
        standard-normal ``g``).
    weight_grad_sq : ndarray, shape (n_networks, depth, D) or None
        ``|dE/d omega^l|^2 / c^2`` for layers l = 1 .. depth (entry l - 1), the quantity of seed 003
        Fig. S2 per channel pair.
    """

    cov: np.ndarray
    grad_sq: np.ndarray | None
    weight_grad_sq: np.ndarray | None


def simulate_conv(
    cov0,
    activation,
    sigma_w2,
    sigma_b2,
    v,
    depth,
    channels,
    n_networks=16,
    init="gaussian",
    spatial_shape=None,
    gradients=False,
    backend="numpy",
    seed=0,
) -> ConvSimulation:
    """Simulate ``n_networks`` random periodic CNNs (1-D or 2-D) of ``channels`` channels.

    Layer 0: every channel of every input is an independent Gaussian field ``h^0 = L_d z`` with
    ``L_d L_d^T = cov0[d]`` and the *same* standard-normal ``z`` for all D inputs (common random
    numbers: differences between inputs are estimated with little noise). Then
    ``h^{l+1} = periodic_conv(phi(h^l), omega^{l+1}) + b^{l+1}`` for l = 0 .. depth - 1, the kernels
    drawn by :func:`conv_kernels`; in the many-channel limit ``cov[:, l]`` tends to
    ``meanfield.conv.propagate(cov0, ...)[l]``.

    Parameters
    ----------
    cov0 : array_like, shape (P, P) or (D, P, P)
        Layer-0 spatial covariance(s) (PSD).
    activation : str or Activation
    sigma_w2, sigma_b2 : float
        Variances (>= 0).
    v : array_like
        Variance vector, shape (2k+1,) (1-D) or (2k1+1, 2k2+1) (2-D); for orthogonal inits only its
        shape (the kernel size) is used.
    depth : int
        Number of convolutional layers (>= 0).
    channels : int
        c (>= 1).
    n_networks : int
        Independent networks simulated together.
    init : {"gaussian", "orthogonal", "delta_orthogonal"}
    spatial_shape : int or (int, int), optional
        Default: P (1-D v) or the square image (2-D v).
    gradients : bool
        Also back-propagate a standard-normal ``delta^depth`` (through the same weights).
    backend : str
        "numpy" or "cupy".
    seed : int or numpy Generator
    """
    from meanfield import conv as mf_conv  # noqa: PLC0415

    b = get_backend(backend)
    xp = b.xp
    cov0 = as_float_array(cov0, "cov0")
    if cov0.ndim == 2:
        cov0 = cov0[None]
    if cov0.ndim != 3 or cov0.shape[1] != cov0.shape[2]:
        raise ValueError(f"cov0 must have shape (P, P) or (D, P, P), got {cov0.shape}")
    v = np.asarray(v, dtype=np.float64)
    sigma_w2 = check_nonnegative(sigma_w2, "sigma_w2")
    sigma_b2 = check_nonnegative(sigma_b2, "sigma_b2")
    depth = check_int(depth, "depth", 0)
    c = check_int(channels, "channels", 1)
    n_networks = check_int(n_networks, "n_networks", 1)
    n_in, p = cov0.shape[0], cov0.shape[1]
    shape = mf_conv._resolve_shape(mf_conv._check_v(v) if init == "gaussian" else v, spatial_shape, p)
    sd = len(shape)
    phi, dphi = activation_fn(activation, b)
    rng = b.rng(seed)
    # symmetric PSD square roots U sqrt(w) U^T: defined for singular covariances and continuous in
    # cov0, so nearby covariances get nearby fields from the same z (common random numbers)
    w_eig, u_eig = np.linalg.eigh(cov0)
    roots = b.asarray((u_eig * np.sqrt(np.clip(w_eig, 0.0, None))[:, None, :]) @ np.swapaxes(u_eig, -1, -2))
    z = rng.standard_normal((n_networks, 1, p, c))
    h = (roots[None] @ z).reshape((n_networks, n_in) + shape + (c,))
    bias_std = float(np.sqrt(sigma_b2))
    covs = xp.empty((n_networks, depth + 1, n_in, p, p))

    def record(layer, h):
        flat = h.reshape(n_networks, n_in, p, c)
        covs[:, layer] = flat @ xp.swapaxes(flat, -1, -2) / c

    record(0, h)
    # every layer's kernels come from their own generator, so the backward pass regenerates them
    # instead of holding depth x n_networks x (2k+1) x c^2 weights in memory
    base = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    layer_seeds = [int(s) for s in base.integers(0, 2**62, size=depth)]

    def kernel(layer):
        seed_l = layer_seeds[layer - 1]  # orthogonal kernels are built on the host with NumPy
        rng_l = b.rng(seed_l) if init == "gaussian" else np.random.default_rng(seed_l)
        k = conv_kernels(n_networks, v.shape, c, sigma_w2, v, init, rng_l, b)
        return k.reshape((n_networks, 1) + k.shape[1:])

    pre = [h]
    bshape = (n_networks, 1) + (1,) * sd + (c,)
    for layer in range(1, depth + 1):
        h = periodic_conv(phi(h), kernel(layer), sd, b) + bias_std * rng.standard_normal(bshape)
        record(layer, h)
        if gradients:
            pre.append(h)
    grad_sq = weight_sq = None
    if gradients:
        grads = xp.empty((n_networks, depth + 1, n_in, p))
        wgrads = xp.empty((n_networks, depth, n_in))
        delta = rng.standard_normal(h.shape)
        grads[:, depth] = xp.mean(delta**2, axis=-1).reshape(n_networks, n_in, p)
        axes = tuple(range(2, 2 + sd))
        for layer in range(depth, 0, -1):
            x = phi(pre[layer - 1])
            # dE/d omega_ij(beta) = sum_a x_i(a + beta) delta_j(a), per input
            total = 0.0
            ks = v.shape
            for index in itertools.product(*(range(s) for s in ks)):
                beta = tuple(j - s // 2 for j, s in zip(index, ks))
                shifted = xp.roll(x, tuple(-bb for bb in beta), axis=axes)
                xs = shifted.reshape(n_networks, n_in, p, c)
                ds = delta.reshape(n_networks, n_in, p, c)
                g = xp.swapaxes(xs, -1, -2) @ ds  # (nets, D, c_in, c_out)
                total = total + xp.sum(g**2, axis=(-1, -2))
            wgrads[:, layer - 1] = total / c**2
            delta = dphi(pre[layer - 1]) * periodic_conv_transpose(delta, kernel(layer), sd, b)
            grads[:, layer - 1] = xp.mean(delta**2, axis=-1).reshape(n_networks, n_in, p)
        grad_sq, weight_sq = to_numpy(grads), to_numpy(wgrads)
    return ConvSimulation(cov=to_numpy(covs), grad_sq=grad_sq, weight_grad_sq=weight_sq)


__all__ += ["CONV_INITS", "ConvSimulation", "conv_kernels", "simulate_conv"]
