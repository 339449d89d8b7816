r"""Empirical neural tangent kernels of finite random dense networks (for :mod:`meanfield.ntk`).

The network is the NTK parametrisation of :mod:`meanfield.ntk`: ``depth`` hidden layers of width
``width`` and a scalar linear read-out,
:math:`h^{l+1} = \sigma_w\,\omega^{l+1}\phi(h^l)/\sqrt{N_l} + \sigma_b\beta^{l+1}` with
:math:`\phi(h^0) = x`, standard normal :math:`\omega, \beta`. The empirical kernel is
:math:`\Theta(x_a, x_b) = \sum_p \partial_p f(x_a)\,\partial_p f(x_b)` over every weight and bias.

Two ways to differentiate, same networks: ``method="numpy"`` back-propagates by hand,
:math:`\delta^l = \phi'(h^l)\odot(\sigma_w\omega^{l+1}/\sqrt{N_l})^T\delta^{l+1}` and
:math:`\Theta = \sum_l \delta^l_a\!\cdot\delta^l_b\,(\sigma_w^2\,x^{l-1}_a\!\cdot x^{l-1}_b/N_{l-1} + \sigma_b^2)`;
``method="torch"`` (extra ``torch``) differentiates the same weights with PyTorch autograd and
forms the Gram matrix of the per-input parameter gradients; ``"auto"`` is torch when installed.
The weights are drawn from ``rng`` (one spawned stream per network), so both methods see
identical networks.

Backends: ``backend=`` (:mod:`meanfield.backend`) runs the hand-written back-propagation
(``method="numpy"``, the default under ``"auto"`` off NumPy) on NumPy, CuPy, PyTorch or
``array_api_strict`` arrays, the weights drawn by that backend's Generator from a child
``SeedSequence`` of each network's stream (NumPy and ``array_api_strict``: the same numbers).
``method="torch"`` differentiates NumPy-drawn weights with autograd and needs ``backend="numpy"``.
"""

from __future__ import annotations

import importlib.util
import math

import numpy as np

from meanfield.activations import get_activation
from meanfield.backend import Backend, get_backend, matrix_transpose, spawn_sequences, to_numpy
from meanfield.checks import as_float_array, check_int, check_probability_vector, check_rng
from meanfield.checks import check_variance as _variance
from meanfield.init import periodic_conv, periodic_conv_transpose

from ._common import activation_fn, check_work, spawned_generators

__all__ = ["NTK_METHODS", "empirical_conv_ntk", "empirical_ntk", "empirical_periodic_cnn_ntk"]

#: Differentiation methods of :func:`empirical_ntk`.
NTK_METHODS = ("auto", "numpy", "torch")


def _checked_network(activation, sigma_w2, sigma_b2, depth, width, n_networks, max_width):
    """The checks shared by the simulators: ``(act, sigma_w, sigma_b, depth, width, n_networks)``."""
    act = get_activation(activation)
    sw = math.sqrt(_variance(sigma_w2, "sigma_w2"))
    sb = math.sqrt(_variance(sigma_b2, "sigma_b2"))
    depth = check_int(depth, "depth", minimum=0, maximum=100)
    width = check_int(width, "width", minimum=1, maximum=max_width)
    n_networks = check_int(n_networks, "n_networks", minimum=1, maximum=10**5)
    return act, sw, sb, depth, width, n_networks


def _finite(out):
    if not np.all(np.isfinite(out)):
        raise ValueError("the empirical NTK is not finite (reduce depth or sigma_w2)")
    return out


def _weights(gen, n0, width, depth):
    sizes = [n0] + [width] * depth + [1]
    return [
        (gen.standard_normal((sizes[i + 1], sizes[i])), gen.standard_normal(sizes[i + 1])) for i in range(depth + 1)
    ]


def _numpy_ntk(x, params, phi, dphi, sw, sb, xp=np):
    """Hand back-propagation on the array namespace ``xp`` (``x`` and ``params`` its arrays)."""
    acts, pres = [matrix_transpose(xp, x)], []  # x^{l-1} as columns: (n_{l-1}, D)
    for i, (w, b) in enumerate(params):
        h = sw * (w @ acts[-1]) / math.sqrt(w.shape[1]) + sb * b[:, None]
        pres.append(h)
        if i < len(params) - 1:
            acts.append(phi(h))
    delta = xp.ones_like(pres[-1])  # d f / d h^{L+1}
    theta = None
    for i in range(len(params) - 1, -1, -1):
        w = params[i][0]
        dd = matrix_transpose(xp, delta) @ delta
        term = dd * (sw * sw * (matrix_transpose(xp, acts[i]) @ acts[i]) / w.shape[1] + sb * sb)
        theta = term if theta is None else theta + term
        if i:
            delta = dphi(pres[i - 1]) * ((sw / math.sqrt(w.shape[1])) * (matrix_transpose(xp, w) @ delta))
    return theta


def _torch_ntk(x, params, act_name, act, sw, sb):
    import torch

    tparams = []
    for w, b in params:
        tparams += [torch.tensor(w, requires_grad=True), torch.tensor(b, requires_grad=True)]
    fns = {
        "tanh": torch.tanh,
        "relu": torch.relu,
        "linear": lambda u: u,
        "erf": torch.erf,
        "sigmoid": torch.sigmoid,
        "softplus": torch.nn.functional.softplus,
        "gelu": torch.nn.functional.gelu,
    }
    if act_name not in fns:
        raise ValueError(f"method='torch' supports {sorted(fns)}, got {act_name!r} (use method='numpy')")
    phi = fns[act_name]
    grads = []
    for a in range(x.shape[0]):
        u = torch.tensor(x[a])
        for i in range(0, len(tparams), 2):
            w, b = tparams[i], tparams[i + 1]
            u = sw * (w @ u) / math.sqrt(w.shape[1]) + sb * b
            if i < len(tparams) - 2:
                u = phi(u)
        g = torch.autograd.grad(u.sum(), tparams)
        grads.append(torch.cat([gi.reshape(-1) for gi in g]))
    jac = torch.stack(grads)
    return (jac @ jac.T).detach().numpy()


def empirical_ntk(
    x,
    activation,
    sigma_w2: float,
    sigma_b2: float,
    depth: int,
    width: int,
    n_networks: int,
    *,
    method: str = "numpy",
    rng=None,
    backend: str | Backend = "numpy",
) -> np.ndarray:
    r"""Empirical NTKs of ``n_networks`` random networks on the inputs ``x``.

    Parameters
    ----------
    x : array_like, shape (D, n0)
        Inputs (finite reals, D and n0 >= 1).
    activation : str or Activation
    sigma_w2, sigma_b2 : float
        Variances (>= 0).
    depth : int
        Hidden layers (0 to 100); the read-out is one more layer.
    width : int
        Hidden width (1 to 8192).
    n_networks : int
        Independent networks (1 to 10^5).
    method : {"numpy", "torch", "auto"}
        How to differentiate (see the module notes); ``"torch"`` needs the extra ``torch`` and
        ``backend="numpy"``; ``"auto"`` is ``"torch"`` on NumPy when PyTorch is installed, else
        ``"numpy"`` (hand back-propagation on ``backend``).
    rng : None, int, SeedSequence or Generator
    backend : str or Backend
        Array backend of ``method="numpy"`` (:data:`meanfield.backend.BACKENDS`); the result is a
        NumPy array.

    Returns
    -------
    ndarray, shape (n_networks, D, D)
        The kernels; :func:`meanfield.ntk.propagate_ntk` ``(input_covariance(x), ...).ntk[depth]`` is
        their infinite-width limit.

    Raises
    ------
    ValueError
        Sizes out of range, an unknown method, work beyond the simulators' bound, non-finite values.
    TypeError
        Wrong argument types.
    ImportError
        ``method="torch"`` without PyTorch (``pip install "meanfield-theory[torch]"``).
    """
    x = as_float_array(x, "x")
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(f"x must have shape (D, n0) with D, n0 >= 1, got {x.shape}")
    act, sw, sb, depth, width, n_networks = _checked_network(
        activation, sigma_w2, sigma_b2, depth, width, n_networks, 8192
    )
    if not isinstance(method, str):
        raise TypeError(f"method must be one of {NTK_METHODS}, got {method!r}")
    if method not in NTK_METHODS:
        raise ValueError(f"method must be one of {NTK_METHODS}, got {method!r}")
    be = get_backend(backend)
    if method == "auto":
        method = "torch" if be.name == "numpy" and importlib.util.find_spec("torch") is not None else "numpy"
    if method == "torch" and be.name != "numpy":
        raise ValueError(f"method='torch' differentiates NumPy weights: use backend='numpy', got {be.name!r}")
    if method == "torch" and importlib.util.find_spec("torch") is None:
        raise ImportError('method="torch" needs PyTorch: pip install "meanfield-theory[torch]"')
    check_work(
        n_networks * (depth + 1) * 4 * width * width * x.shape[0] + n_networks * width * x.shape[1], "empirical_ntk"
    )
    seqs = spawn_sequences(check_rng(rng), n_networks)
    if method == "numpy":
        phi, dphi = activation_fn(act, be)
        xb = be.asarray(x)
        out = to_numpy(
            be.xp.stack(
                [
                    _numpy_ntk(xb, _weights(be.generator(s), x.shape[1], width, depth), phi, dphi, sw, sb, be.xp)
                    for s in seqs
                ]
            )
        )
    else:
        out = np.empty((n_networks, x.shape[0], x.shape[0]))
        for k, s in enumerate(seqs):
            out[k] = _torch_ntk(x, _weights(np.random.default_rng(s), x.shape[1], width, depth), act.name, act, sw, sb)
    return _finite(out)


def empirical_conv_ntk(
    x,
    activation,
    sigma_w2: float,
    sigma_b2: float,
    v,
    depth: int,
    width: int,
    n_networks: int,
    *,
    position: int = 0,
    rng=None,
    backend: str | Backend = "numpy",
) -> np.ndarray:
    r"""Empirical NTKs of random 1-D periodic CNNs in the NTK parametrisation (Xiao et al. 2018 networks).

    The kernel of layer l + 1 is :math:`\sigma_w\sqrt{v_\beta}\,\omega(\beta)/\sqrt{c_l}`, standard
    normal :math:`\omega`; ``depth`` hidden convolutional layers of ``width`` channels and a
    one-channel convolutional read-out; the output is that channel at ``position``. Gradients by
    back-propagation (:func:`meanfield.init.periodic_conv_transpose`). The 1-D case of
    :func:`empirical_periodic_cnn_ntk` (one implementation; the same networks for the same ``rng``).

    Parameters
    ----------
    x : array_like, shape (D, P, c0)
        Inputs.
    activation : str or Activation
    sigma_w2, sigma_b2 : float
    v : array_like, shape (2k + 1,)
        Variance vector.
    depth, width, n_networks : int
    position : int
        Output position (0 to P - 1).
    rng : None, int, SeedSequence or Generator
    backend : str or Backend
        Array backend (:data:`meanfield.backend.BACKENDS`): the kernels are drawn by its
        Generator (one spawned child stream per network) and every product runs on it; the
        result is a NumPy array.

    Returns
    -------
    ndarray, shape (n_networks, D, D)
        :func:`meanfield.ntk.propagate_conv_ntk` ``(...).ntk[depth][:, position, :, position]`` is the
        infinite-channel limit.

    Raises
    ------
    ValueError, TypeError
        Bad shapes, sizes, variances or ``v``.
    """
    x = as_float_array(x, "x")
    if x.ndim != 3 or min(x.shape) < 1:
        raise ValueError(f"x must have shape (D, P, c0), got {x.shape}")
    v = check_probability_vector(v, "v")
    if v.ndim != 1 or v.size % 2 == 0 or v.size > x.shape[1]:
        raise ValueError(f"v must be 1-D of odd length <= P, got shape {v.shape}")
    if isinstance(position, tuple):
        raise TypeError(f"position must be an int (one spatial axis), got {position!r}")
    return empirical_periodic_cnn_ntk(
        x, activation, sigma_w2, sigma_b2, v, depth, width, n_networks, position=position, rng=rng, backend=backend
    )


def empirical_periodic_cnn_ntk(
    x,
    activation,
    sigma_w2: float,
    sigma_b2: float,
    v,
    depth: int,
    width: int,
    n_networks: int,
    *,
    position: int | tuple[int, ...] = 0,
    rng=None,
    backend: str | Backend = "numpy",
) -> np.ndarray:
    r"""Empirical NTKs of random 1-D or 2-D periodic CNNs (Xiao et al. 2018 networks, NTK parametrisation).

    Kernels :math:`\sigma_w\sqrt{v_\beta}\,\omega(\beta)/\sqrt{c_l}` with standard normal
    :math:`\omega`, ``depth`` hidden layers of ``width`` channels, a one-channel read-out at
    ``position``; gradients by back-propagation (:func:`meanfield.init.periodic_conv_transpose`):
    :math:`\Theta(x_a, x_b) = \sum_l \sum_\beta \frac{\sigma_w^2 v_\beta}{c_l}\,
    \langle \partial_{h^{l+1}} f(x_a)\, u^l_a(\cdot + \beta)^T, \partial_{h^{l+1}} f(x_b)\,
    u^l_b(\cdot + \beta)^T\rangle + \sigma_b^2 \langle\textstyle\sum_\alpha \partial_{h^{l+1}(\alpha)} f(x_a),
    \sum_\alpha \partial_{h^{l+1}(\alpha)} f(x_b)\rangle`. :func:`empirical_conv_ntk` is its 1-D case.

    Parameters
    ----------
    x : array_like, shape ``(D, *spatial, c0)``
        Inputs with 1 or 2 periodic spatial axes.
    activation : str or Activation
    sigma_w2, sigma_b2 : float
    v : array_like, shape (2k + 1,) or (2k1 + 1, 2k2 + 1)
        Variance vector, one axis per spatial axis, no wider than the signal.
    depth, width, n_networks : int
    position : int or tuple of int
        Output position (one index per spatial axis).
    rng : None, int, SeedSequence or Generator
        Network ``k`` draws from the ``k``-th child spawned off it.
    backend : str or Backend
        Array backend (:data:`meanfield.backend.BACKENDS`): each network's kernels are drawn by the
        backend's Generator on its child stream and every convolution and product runs there
        (NumPy: ``numpy.einsum`` for the weight-gradient inner products, the reference order;
        elsewhere ``matmul``). NumPy and ``array_api_strict`` draw the same numbers; the result is
        a NumPy array.

    Returns
    -------
    ndarray, shape (n_networks, D, D)
        The infinite-channel limit is :func:`meanfield.ntk.propagate_conv_ntk` with ``shape = spatial``
        at the flattened (row-major) position.

    Raises
    ------
    ValueError, TypeError
        Bad shapes, sizes, variances, ``v`` or ``position``.
    ImportError
        A ``backend`` whose package is not installed.

    Notes
    -----
    Xiao et al.'s networks (eq. 2.1, periodic boundary) in the NTK parametrisation of
    :mod:`meanfield.ntk`.
    """
    x = as_float_array(x, "x")
    if x.ndim not in (3, 4) or min(x.shape) < 1:
        raise ValueError(f"x must have shape (D, *spatial, c0) with 1 or 2 spatial axes, got {x.shape}")
    sd = x.ndim - 2
    spatial = x.shape[1:-1]
    v = check_probability_vector(v, "v")
    if v.ndim != sd or any(k % 2 == 0 or k > n for k, n in zip(v.shape, spatial)):
        raise ValueError(f"v must have {sd} axes of odd lengths <= {spatial}, got shape {v.shape}")
    act, sw, sb, depth, width, n_networks = _checked_network(
        activation, sigma_w2, sigma_b2, depth, width, n_networks, 4096
    )
    pos = (position,) if isinstance(position, (int, np.integer)) and not isinstance(position, bool) else position
    if not isinstance(pos, tuple):
        raise TypeError(f"position must be an int or a tuple of {sd} ints, got {position!r}")
    if len(pos) != sd:
        raise ValueError(f"position must be {sd} index(es), got {position!r}")
    pos = tuple(check_int(p, "position", minimum=0, maximum=n - 1) for p, n in zip(pos, spatial))
    d, c0 = x.shape[0], x.shape[-1]
    p_total = int(np.prod(spatial))
    check_work(
        n_networks * (depth + 1) * 4 * d * p_total * v.size * max(width, c0) * width, "empirical_periodic_cnn_ntk"
    )
    be = get_backend(backend)
    xp = be.xp
    reference = be.name == "numpy"
    phi, dphi = activation_fn(act, be)
    offsets = list(np.ndindex(*v.shape))
    half = [k // 2 for k in v.shape]
    sq = be.asarray(np.sqrt(v)[..., None, None])
    xb = be.asarray(x)
    flat_axes = tuple(range(1, 1 + sd))
    sizes = [c0] + [width] * depth + [1]
    thetas = []
    for g in spawned_generators(check_rng(rng), n_networks, be):
        kernels, biases = [], []
        for i in range(depth + 1):
            om = g.standard_normal((*v.shape, sizes[i + 1], sizes[i]))
            kernels.append(sw * sq * om / math.sqrt(sizes[i]))
            biases.append(g.standard_normal(sizes[i + 1]))
        us, hs = [xb], []
        for i in range(depth + 1):
            h = periodic_conv(us[-1], kernels[i], sd, be) + sb * biases[i]
            hs.append(h)
            if i < depth:
                us.append(phi(h))
        delta = be.full(tuple(hs[-1].shape), 0.0)
        delta[(slice(None), *pos, 0)] = 1.0
        theta = be.full((d, d), 0.0)
        for i in range(depth, -1, -1):
            u = us[i]
            dl = xp.reshape(delta, (d, p_total, -1))
            for t in offsets:
                beta = tuple(tt - hh for tt, hh in zip(t, half))
                shifted = xp.reshape(xp.roll(u, tuple(-b for b in beta), axis=flat_axes), (d, p_total, -1))
                scale = sw * sw * float(v[t]) / sizes[i]
                if reference:  # the summation order of the NumPy reference (earlier releases' numbers)
                    grad = np.einsum("api,apj->aij", dl, shifted)
                    theta = theta + scale * np.einsum("aij,bij->ab", grad, grad)
                else:  # (D, c_out, P) @ (D, P, c_in), flattened to (D, c_out c_in)
                    grad = xp.reshape(matrix_transpose(xp, dl) @ shifted, (d, -1))
                    theta = theta + scale * (grad @ matrix_transpose(xp, grad))
            ssum = xp.sum(dl, axis=1)
            theta = theta + sb * sb * ssum @ matrix_transpose(xp, ssum)
            if i:
                delta = dphi(hs[i - 1]) * periodic_conv_transpose(delta, kernels[i], sd, be)
        thetas.append(theta)
    return _finite(to_numpy(xp.stack(thetas)))
