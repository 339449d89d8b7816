"""Monte-Carlo simulation of random dense networks (Xiao et al.'s dense background, Grzejdziak's laws).

:func:`simulate_dense` runs many independent fully-connected networks at once (batched matrix
products on NumPy or CuPy), recording the empirical pre-activation covariance of a set of inputs at
every layer and, optionally, the squared norms of back-propagated gradients. Weights are drawn by
:func:`meanfield.init.dense_weights` (the library's one weight sampler), activations are
:mod:`meanfield.activations`' built-ins evaluated by :func:`~meanfield.simulate.activation_fn`.

Range of the recorded statistics
--------------------------------
The simulators never return inf, NaN or an underflowed zero. Each network's signal is carried
as ``exp(L) * u`` with ``max |u| = 1`` (a log-scale per network and layer): every linear step
``W a + b`` is computed with its two terms' scales factored out, so the matrix products cannot
overflow or underflow whatever ``sigma_w2``, ``sigma_b2`` or the inputs' scale. Positively
homogeneous activations (``linear``, ``relu``, ``leaky_relu``: ``phi(s h) = s phi(h)``) are applied
to ``u`` directly, which is exact at any depth (ReLU at depth 10^4, ``sigma_w2 = 3``: variance
~ 1.5^{10^4}). Other activations need the pre-activations themselves: when they overflow the
float64 range, bounded activations (tanh, erf, sigmoid, hard_tanh) receive their exact limits
(``phi(+-inf)``); when they fall below ~2e-292 (:data:`UNDERFLOW_LOG`) a ``ValueError`` says which
layer. The results carry ``log_scale`` and ``normalized`` fields; ``cov`` and ``grad_sq`` multiply
them out and raise a ``ValueError`` naming the log-scale fields when the value does not fit in
float64.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from meanfield import Result
from meanfield.activations import Activation, get_activation
from meanfield.backend import Backend, get_backend, matrix_transpose, spawn_sequences, to_numpy
from meanfield.checks import check_bool, check_int, check_rng, check_variance
from meanfield.init import WEIGHT_LAWS, dense_weights, haar_orthogonal

from ._common import (
    UNDERFLOW_LOG,  # noqa: F401  (named in the module notes)
    LogScaledActivation,
    LogScaledMoments,
    check_elements,
    combine,
    host_array,
    log_sqrt,
    normalize,
)

__all__ = ["EXACT_LAWS", "FORWARD_METHODS", "DenseSimulation", "simulate_dense"]

#: Weights kept in memory for the backward pass up to this many elements; beyond, regenerated.
_STORE_ELEMENTS = 2**29
#: ``method`` values of :func:`simulate_dense`.
FORWARD_METHODS = ("auto", "weights", "exact")
#: Weight laws whose layer outputs given the layer inputs the exact sampler draws (rotation invariant).
EXACT_LAWS = ("gaussian", "orthogonal")
#: ``method="auto"`` samples a layer exactly when ``EXACT_RATIO * D <= fan_in`` (measured break-even
#: is near D = fan_in / 2 at width 512; ``benchmarks/bench_simulate.py``).
EXACT_RATIO = 4


def _exact_product(a, width, fan_in, law, gen, b, n_networks):
    """A draw of ``W @ a`` (W of the law at sigma_w2 = 1, one per network) in O(fan_in D^2 + width D^2).

    ``a = Q R`` (reduced QR, Q with k = min(fan_in, D) orthonormal columns), so ``W a = (W Q) R``.
    Gaussian W: ``W Q`` has i.i.d. N(0, 1 / fan_in) entries (rotation invariance). Haar W (scaled as
    :func:`meanfield.init.dense_weights`): ``W Q`` is ``sqrt(max(width, fan_in) / fan_in)`` times the
    first ``width`` rows of a Haar-uniform k-frame in R^max(width, fan_in). Either way the law of
    ``W a`` given ``a`` is exactly that of the weight path (Xiao et al.'s dense layer; the Gaussian case
    is the conditional law h | Phi ~ N(0, Phi Phi^T / fan_in) of the mean-field derivation).
    """
    xp = b.xp
    _, r = xp.linalg.qr(a)  # a: (m, fan_in, D) with m = 1 or n_networks; r: (m, k, D)
    k = r.shape[-2]
    if law == "gaussian":
        g = gen.standard_normal((n_networks, width, k)) * (1.0 / math.sqrt(fan_in))
    else:
        big = max(width, fan_in)
        frame = haar_orthogonal(big, k, gen, batch_shape=(n_networks,), backend=b)
        g = math.sqrt(big / fan_in) * frame[:, :width, :]
    return g @ r


@dataclass(frozen=True)
class DenseSimulation(LogScaledMoments, Result):
    """Per-network statistics of simulated dense networks (NumPy arrays), on a log scale.

    Attributes
    ----------
    cov_normalized : ndarray, shape (n_networks, depth + 1, D, D)
        Empirical pre-activation covariance ``h^l h^l^T / width`` of the D inputs at layers
        1 .. depth + 1 (index 0 is the first layer, matching ``meanfield.dense.propagate``),
        divided by ``exp(log_scale)`` (entries in [-1, 1]).
    log_scale : ndarray, shape (n_networks, depth + 1)
        ``cov = cov_normalized * exp(log_scale[..., None, None])``.
    grad_sq_normalized : ndarray, shape (n_networks, depth + 1, D) or None
        Mean squared back-propagated gradient ``|delta^l|^2 / width`` per input, with
        ``delta^{depth+1}`` i.i.d. standard normal (so its expected mean square is 1), divided by
        ``exp(grad_log_scale)``.
    grad_log_scale : ndarray, shape (n_networks, depth + 1) or None

    Properties ``cov`` and ``grad_sq`` return the products; they raise ``ValueError`` when a value
    overflows or underflows float64 (deep networks away from criticality), naming the log fields.
    """

    cov_normalized: np.ndarray
    log_scale: np.ndarray
    grad_sq_normalized: np.ndarray | None = None
    grad_log_scale: np.ndarray | None = None


def simulate_dense(
    x: ArrayLike,
    activation: str | Activation,
    sigma_w2: float,
    sigma_b2: float,
    depth: int,
    width: int,
    n_networks: int = 16,
    law: str = "gaussian",
    gradients: bool = False,
    *,
    backend: str | Backend = "numpy",
    rng: Any = None,
    method: str = "auto",
) -> DenseSimulation:
    """Simulate ``n_networks`` independent random dense networks on the inputs ``x``.

    ``h^1 = W^1 x + b^1`` (``W^1`` of shape (width, n0), Var = sigma_w2 / n0), then
    ``h^{l+1} = W^{l+1} phi(h^l) + b^{l+1}`` for l = 1 .. depth, every network drawn afresh.

    Parameters
    ----------
    x : array_like, shape (D, n0)
        Finite real inputs, D >= 1 and n0 >= 1 (any scale: the first layer is log-scaled).
    activation : str or Activation
        A built-in name or an :class:`meanfield.activations.Activation`; it must return finite
        values of the input's shape.
    sigma_w2, sigma_b2 : float
        Variances (>= 0, finite).
    depth : int
        Number of hidden-to-hidden layers (>= 0); covariances are recorded at depth + 1 layers.
    width : int
        Hidden width (>= 1).
    n_networks : int
        Independent networks simulated together (batched matrix products, >= 1).
    law : {"gaussian", "uniform", "rademacher", "orthogonal"}
        Weight law, drawn by :func:`meanfield.init.dense_weights` (one matrix per network).
    gradients : bool
        Also back-propagate a standard-normal ``delta`` from the last layer.
    backend : str or Backend
        One of :data:`meanfield.backend.BACKENDS` (``"numpy"``, ``"cupy"``, ``"torch"``,
        ``"array_api_strict"``): the forward and backward passes use only its array-API namespace.
    rng : None, int, SeedSequence or numpy.random.Generator
        Randomness (:mod:`meanfield.backend`): layer ``l``'s weights and biases come from the
        ``l``-th child spawned off it, the output gradient from the last child; an int ``n`` gives
        the same numbers as ``numpy.random.default_rng(n)``; None draws fresh entropy.
    method : {"auto", "weights", "exact"}
        How a layer's ``W a`` is drawn. ``"weights"``: sample the ``width x fan_in`` matrix and
        multiply, O(width fan_in D) per layer and network. ``"exact"``: sample ``W a`` given ``a``
        directly from its law, O((fan_in + width) D^2) (see Notes); only for the rotation-invariant
        laws :data:`EXACT_LAWS` and without ``gradients`` (which need the weights).
        ``"auto"`` (default): ``"exact"`` for a layer when that is allowed and
        ``EXACT_RATIO * D <= fan_in`` (few inputs), else ``"weights"``. Both give the same law of
        every recorded statistic, but different numbers for the same ``rng``.

    Returns
    -------
    DenseSimulation
        Log-scaled covariances and gradients (``.cov`` and ``.grad_sq`` multiply them out).

    Raises
    ------
    TypeError
        Complex or boolean inputs or variances, a non-bool ``gradients``, an ``rng`` of another type.
    ValueError
        Empty or non-finite ``x`` or a shape other than (D, n0); negative / non-finite variances;
        ``depth < 0``, ``width < 1``, ``n_networks < 1``; an unknown ``law``, ``method`` or activation;
        ``method="exact"`` with ``gradients`` or a law outside :data:`EXACT_LAWS`; an array
        beyond :data:`MAX_ELEMENTS`; an activation returning NaN / infinity (the message names the
        layer); a non-homogeneous activation's signal falling below ~2e-292 (:data:`UNDERFLOW_LOG`).

    Notes
    -----
    The finite-width networks behind the mean-field recursion of Xiao et al. 2018, eqs. 2.2-2.4 in the
    one-tap (dense) case, and the backward variance of its eq. 2.16.

    The exact sampler: with the post-activations ``a`` (fan_in x D) of a network fixed,
    Gaussian weights make the next pre-activations' rows i.i.d. ``N(0, sigma_w2 a^T a / fan_in +
    sigma_b2)`` -- the conditional law behind the mean-field recursion (Xiao et al. 2018, eq. 2.2) -- drawn
    here as ``Z R / sqrt(fan_in)`` with ``a = Q R``; Haar-orthogonal weights map the orthonormal
    frame Q to a uniformly random D-frame with the same Gram matrix ``R^T R = a^T a``.

    Examples
    --------
    >>> x = np.random.default_rng(0).standard_normal((2, 50))
    >>> sim = simulate_dense(x, "relu", 2.0, 0.0, depth=3, width=64, n_networks=8, rng=1)
    >>> sim.cov.shape                     # (networks, layers, inputs, inputs)
    (8, 4, 2, 2)
    >>> bool(np.allclose(sim.cov, sim.cov_normalized * np.exp(sim.log_scale)[..., None, None]))
    True
    """
    b = get_backend(backend)
    xp = b.xp
    x = host_array(x, "x")
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(f"x must have shape (D, n0) with D >= 1 and n0 >= 1, got {x.shape}")
    act = LogScaledActivation(get_activation(activation), b)
    sigma_w2 = check_variance(sigma_w2, "sigma_w2")
    sigma_b2 = check_variance(sigma_b2, "sigma_b2")
    depth = check_int(depth, "depth", 0)
    width = check_int(width, "width", 1)
    n_networks = check_int(n_networks, "n_networks", 1)
    if not isinstance(law, str) or law not in WEIGHT_LAWS:
        raise ValueError(f"law must be one of {WEIGHT_LAWS}, got {law!r}")
    gradients = check_bool(gradients, "gradients")
    if not isinstance(method, str) or method not in FORWARD_METHODS:
        raise ValueError(f"method must be one of {FORWARD_METHODS}, got {method!r}")
    if method == "exact" and (gradients or law not in EXACT_LAWS):
        raise ValueError(
            f"method='exact' needs a law in {EXACT_LAWS} and gradients=False (the backward pass needs the "
            f"weights), got law={law!r}, gradients={gradients}"
        )
    generator = check_rng(rng)
    d, n_in = x.shape
    check_elements(
        n_networks * width * (max(width, n_in) if depth else n_in), "one layer's weights (n_networks x width x fan-in)"
    )
    check_elements(n_networks * (depth + 1) * d * max(d, width if gradients else 1), "the recorded statistics")

    seqs = spawn_sequences(generator, depth + 2)  # layer l: seqs[l]; output gradient: seqs[-1]
    log_w = log_sqrt(sigma_w2)  # the weights are drawn at sigma_w2 = 1; their scale is carried on the log scale
    log_b = b.full(n_networks, log_sqrt(sigma_b2))
    x_n, log_x = normalize(np, x[None])
    a = b.asarray(x_n[0].T[None])  # (1, n0, D), max |a| = 1
    log_a = b.full(n_networks, float(log_x[0]) if np.isfinite(log_x[0]) else -math.inf)
    store = gradients and n_networks * width * width * depth <= _STORE_ELEMENTS
    cov_n = b.empty((n_networks, depth + 1, d, d))
    logs = b.empty((n_networks, depth + 1))
    pre, weights = [], []
    for layer in range(depth + 1):
        gen = b.generator(seqs[layer])
        fan_in = n_in if layer == 0 else width
        exact = method == "exact" or (
            method == "auto" and not gradients and law in EXACT_LAWS and EXACT_RATIO * d <= fan_in
        )
        if exact:
            wa = _exact_product(a, width, fan_in, law, gen, b, n_networks)
        else:
            w = dense_weights(width, fan_in, 1.0, law, gen, batch_shape=n_networks, backend=b)
            wa = w @ a
        bias = gen.standard_normal((n_networks, width, 1)) if sigma_b2 > 0 else None
        u, log_u = combine(xp, wa, log_a + log_w, bias, log_b)
        cov_n[:, layer, ...] = matrix_transpose(xp, u) @ u / width
        logs[:, layer] = 2.0 * log_u
        if gradients:
            pre.append((u, log_u))
            if store and layer > 0:
                weights.append(w)
        if layer < depth:
            a, log_a = act.forward(u, log_u, layer + 1)
            a, lm = normalize(xp, a)
            log_a = log_a + lm
    grad_n = grad_logs = None
    if gradients:
        grad_n = b.empty((n_networks, depth + 1, d))
        grad_logs = b.empty((n_networks, depth + 1))
        delta, log_d = normalize(xp, b.generator(seqs[-1]).standard_normal((n_networks, width, d)))
        grad_n[:, depth, ...] = xp.mean(delta**2, axis=1)
        grad_logs[:, depth] = 2.0 * log_d
        for layer in range(depth - 1, -1, -1):
            if store:
                w = weights[layer]
            else:  # regenerate W^{layer+2}: the first draw of its layer's stream
                w = dense_weights(
                    width, width, 1.0, law, b.generator(seqs[layer + 1]), batch_shape=n_networks, backend=b
                )
            u, log_u = pre[layer]
            step = act.backward(u, log_u, layer + 1, matrix_transpose(xp, w) @ delta)
            delta, log_d = combine(xp, step, log_d + log_w, None, None)
            grad_n[:, layer, ...] = xp.mean(delta**2, axis=1)
            grad_logs[:, layer] = 2.0 * log_d
        grad_n, grad_logs = to_numpy(grad_n), to_numpy(grad_logs)
    return DenseSimulation(to_numpy(cov_n), to_numpy(logs), grad_n, grad_logs)
