"""A network as a composition of layers, and what follows from the one description."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._checks import as_real_array, check_bool, check_covariance, check_int, check_rng
from .._results import Result
from ..backend import Backend, get_backend, matrix_transpose, spawn_sequences, to_numpy
from ..gaussian import DEFAULT_DEGREE
from ._layers import Layer
from ._state import State, materialise

__all__ = ["NetSimulation", "NetTheory", "NetWeights", "Network"]

#: Most numbers one simulated layer's signal may hold (n_networks x inputs x positions x channels).
MAX_SIGNAL = 2**28


@dataclass(frozen=True)
class NetTheory(Result):
    """Mean-field moments of a :class:`Network` (see :meth:`Network.theory`).

    Attributes
    ----------
    second : tuple of ndarray
        ``second[l]``, shape (D P_l, D P_l): the same-unit second moments of layer ``l``'s output over
        inputs x positions (row-major ``a * P + alpha``); ``second[0]`` is the input's.
    cross : tuple of (ndarray or None)
        The different-unit second moments (None where they vanish).
    ntk : ndarray or None
        The tangent kernel of the output (same unit), when requested.
    grad : tuple of ndarray or None
        ``grad[l]``: second moments of the gradient with respect to layer ``l``'s output when the
        output's gradient has identity moments (gradient-independence assumption); the ratio of
        consecutive diagonals is the layer's chi. None unless requested.
    """

    second: tuple
    cross: tuple
    ntk: np.ndarray | None = None
    grad: tuple | None = None


@dataclass(frozen=True)
class NetSimulation(Result):
    """Monte-Carlo moments of finite networks (see :meth:`Network.simulate`).

    Attributes
    ----------
    second : tuple of ndarray
        ``second[l]``, shape (n_networks, D P_l, D P_l): each network's mean over units of
        ``z_i(a, alpha) z_i(b, beta)`` at layer ``l`` (index 0 the input).
    output : ndarray, shape ``(n_networks, D, *out_shape)``
        The networks' outputs.
    """

    second: tuple
    output: np.ndarray

    def mean(self, layer: int) -> np.ndarray:
        """The ensemble mean of ``second[layer]``."""
        return self.second[layer].mean(axis=0)

    def standard_error(self, layer: int) -> np.ndarray:
        """The standard error of :meth:`mean` (the networks are independent)."""
        s = self.second[layer]
        return s.std(axis=0, ddof=1) / math.sqrt(s.shape[0]) if s.shape[0] > 1 else np.full(s.shape[1:], np.inf)


@dataclass(frozen=True)
class NetWeights(Result):
    """Every layer's weights for ``n_networks`` networks (see :meth:`Network.weights`).

    ``params[l]`` is a dict of arrays on ``backend`` with a leading network axis (deterministic
    tensors, e.g. a fixed skip matrix or a channel average, are shared and have none).
    """

    params: tuple
    in_shape: tuple
    n_networks: int
    backend: Any


def _check_signal(shapes, n, d):
    for shape in shapes:
        if n * d * math.prod(shape) > MAX_SIGNAL:
            raise ValueError(
                f"a layer's signal of shape {shape} x {n} networks x {d} inputs exceeds MAX_SIGNAL = {MAX_SIGNAL}"
            )


def _check_layers(layers):
    if isinstance(layers, Layer):
        layers = (layers,)
    layers = tuple(layers)
    if not layers or not all(isinstance(layer, Layer) for layer in layers):
        raise TypeError("layers must be a non-empty sequence of layers of meanfield.nets")
    return layers


@dataclass(frozen=True)
class Network:
    """A network: a composition of layers of :mod:`meanfield.nets`, applied in order.

    Signals are channels-last: one input has shape ``(*spatial, channels)`` (``(n0,)`` for a dense
    input), a batch of D inputs ``(D, *spatial, channels)``.

    Examples
    --------
    >>> from meanfield.nets import Network, Dense, Act
    >>> net = Network([Dense(64, 1.5, 0.05), Act("tanh"), Dense(64, 1.5, 0.05)])
    >>> x = np.random.default_rng(0).standard_normal((2, 10))
    >>> net.theory(x).second[-1].shape
    (2, 2)
    """

    layers: tuple

    def __post_init__(self):
        object.__setattr__(self, "layers", _check_layers(self.layers))

    # -- shapes ---------------------------------------------------------------------------------
    def shapes(self, in_shape: tuple) -> list[tuple]:
        """The signal shape after each layer, ``in_shape`` first."""
        shape = tuple(check_int(n, "in_shape", 1) for n in in_shape)
        out = [shape]
        for layer in self.layers:
            shape = tuple(layer.out_shape(shape))
            out.append(shape)
        return out

    # -- weights ---------------------------------------------------------------------------------
    def weights(
        self, in_shape: tuple, rng: Any = None, *, n_networks: int = 1, backend: str | Backend = "numpy"
    ) -> NetWeights:
        """Weights of ``n_networks`` networks, each random layer from its own spawned child of ``rng``.

        Parameters
        ----------
        in_shape : tuple of int
            One input's shape ``(*spatial, channels)``.
        rng : None, int, SeedSequence or numpy.random.Generator
            The children ``rng.spawn(k)`` go, in order, to the layers that draw weights (an int ``n``
            gives the numbers of ``numpy.random.default_rng(n)``).
        n_networks : int
        backend : str or Backend
            Array backend of the weights (:data:`meanfield.backend.BACKENDS`).

        Returns
        -------
        NetWeights
        """
        b = get_backend(backend)
        n = check_int(n_networks, "n_networks", 1, 2**20)
        shapes = self.shapes(in_shape)
        random = [layer for layer in self.layers if layer.random]
        seqs = iter(spawn_sequences(check_rng(rng), len(random)))
        params = []
        for layer, shape in zip(self.layers, shapes):
            params.append(layer.init(next(seqs) if layer.random else None, shape, n, b))
        return NetWeights(tuple(params), shapes[0], n, b)

    # -- finite networks -------------------------------------------------------------------------
    def forward(self, weights: NetWeights, x: ArrayLike, keep: bool = False) -> Any:
        """The outputs of the networks of ``weights`` on ``x`` ``(D, *in_shape)``, shape ``(n, D, *out_shape)``.

        With ``keep=True`` also the list of every layer's output (the input first).
        """
        b = weights.backend if isinstance(weights.backend, Backend) else get_backend(weights.backend)
        keep = check_bool(keep, "keep")
        xa = as_real_array(x, "x")
        if tuple(xa.shape[1:]) != tuple(weights.in_shape):
            raise ValueError(f"x must have shape (D, *{weights.in_shape}), got {xa.shape}")
        _check_signal(self.shapes(weights.in_shape), weights.n_networks, xa.shape[0])
        h = b.asarray(xa)[None, ...]
        h = b.xp.broadcast_to(h, (weights.n_networks,) + tuple(h.shape[1:]))
        feats = [h] if keep else None
        for layer, p in zip(self.layers, weights.params):
            h = layer.apply(p, h, b)
            if keep:
                feats.append(h)
        return (h, feats) if keep else h

    def simulate(
        self, x: ArrayLike, n_networks: int = 16, rng: Any = None, *, backend: str | Backend = "numpy"
    ) -> NetSimulation:
        """Monte-Carlo: ``n_networks`` independent finite networks (weights of :meth:`weights`) on ``x``.

        Parameters
        ----------
        x : array_like, shape ``(D, *spatial, channels)``
        n_networks : int
        rng : None, int, SeedSequence or numpy.random.Generator
        backend : str or Backend

        Returns
        -------
        NetSimulation
            Per-layer same-unit second moments of every network, and the outputs.

        Raises
        ------
        ValueError
            A shape that does not fit the layers, a signal beyond :data:`MAX_SIGNAL` numbers, or a
            non-finite result (the message names the layer).
        """
        xa = as_real_array(x, "x")
        if xa.ndim < 2:
            raise ValueError(f"x must have shape (D, *spatial, channels), got {xa.shape}")
        n = check_int(n_networks, "n_networks", 1, 2**20)
        w = self.weights(xa.shape[1:], rng, n_networks=n, backend=backend)
        _, feats = self.forward(w, xa, keep=True)
        xp = w.backend.xp
        seconds = []
        for i, f in enumerate(feats):
            c = f.shape[-1]
            flat = xp.reshape(f, (n, -1, c))
            m = to_numpy(flat @ matrix_transpose(xp, flat) / c)
            if not np.all(np.isfinite(m)):
                where = "the input" if i == 0 else repr(self.layers[i - 1])
                raise ValueError(f"the simulated signal after {where} is not finite (rescale x or the weights)")
            seconds.append(m)
        return NetSimulation(tuple(seconds), to_numpy(feats[-1]))

    # -- theory ------------------------------------------------------------------------------------
    def theory(
        self,
        x: ArrayLike | None = None,
        *,
        cov0: ArrayLike | None = None,
        in_shape: tuple | None = None,
        gaussian: bool = False,
        ntk: bool = False,
        backward: bool = False,
        degree: int = DEFAULT_DEGREE,
    ) -> NetTheory:
        """Mean-field moments of the infinitely wide network, layer by layer.

        Parameters
        ----------
        x : array_like, shape ``(D, *spatial, channels)``, optional
            Inputs; the first dense or convolutional layer computes their covariance exactly
            (:func:`meanfield.dense.input_covariance`, :func:`meanfield.conv.multi_input_covariance`).
        cov0 : array_like, shape (D P, D P), optional
            Instead of ``x``: the input's per-unit second moments over inputs x positions.
        in_shape : tuple of int, optional
            With ``cov0``: one input's shape (default ``(1,)``: dense, one channel's worth of moments).
        gaussian : bool
            With ``cov0``: the input is a zero-mean Gaussian pre-activation (a network may then
            start with an activation, e.g. to continue :func:`meanfield.dense.propagate` from ``cov0``).
        ntk : bool
            Also the tangent kernel of the output (NTK parametrisation, Jacot et al. 2018).
        backward : bool
            Also the gradient moments of every layer (module notes of :mod:`meanfield.nets`).
        degree : int
            Gauss-Hermite degree for activations without closed forms.

        Returns
        -------
        NetTheory

        Raises
        ------
        ValueError
            Neither or both of ``x`` and ``cov0``; shapes that do not fit; a layer whose rule the
            theory does not have (the message names the layer).
        """
        state = self._initial(x, cov0, in_shape, gaussian, ntk)
        states = [state]
        for layer in self.layers:
            state = layer.theory(state, degree)
            states.append(state)
        recorded = [materialise(s, "the output", degree) if s.act is not None or s.x is not None else s for s in states]
        grads = None
        if backward:
            g, gc = np.eye(states[-1].second.shape[0]), None
            grads = [g]
            for layer, st in zip(reversed(self.layers), reversed(states[:-1])):
                g, gc = layer.backward(st, g, gc, degree)
                grads.append(g)
            grads = tuple(grads[::-1])
        last = recorded[-1]
        return NetTheory(
            tuple(s.second for s in recorded), tuple(s.cross for s in recorded), last.ntk if ntk else None, grads
        )

    def _initial(self, x, cov0, in_shape, gaussian, ntk):
        if (x is None) == (cov0 is None):
            raise ValueError("give exactly one of x (inputs) and cov0 (their second moments)")
        gaussian = check_bool(gaussian, "gaussian")
        if x is not None:
            xa = as_real_array(x, "x")
            if xa.ndim < 2 or min(xa.shape) < 1:
                raise ValueError(f"x must have shape (D, *spatial, channels), got {xa.shape}")
            self.shapes(xa.shape[1:])
            return State(
                None,
                None,
                xa.shape[-1],
                tuple(xa.shape[1:-1]),
                xa.shape[0],
                False,
                ntk=np.zeros(0) if ntk else None,
                x=xa,
            )
        c = check_covariance(cov0, "cov0", strict=True)
        if c.ndim != 2:
            raise ValueError(f"cov0 must be one (D P, D P) matrix, got shape {c.shape}")
        shape = (1,) if in_shape is None else tuple(in_shape)
        self.shapes(shape)
        p = math.prod(shape[:-1])
        if c.shape[0] % p:
            raise ValueError(f"cov0 of size {c.shape[0]} is not D x P with P = {p} positions")
        return State(
            c,
            None,
            shape[-1],
            tuple(shape[:-1]),
            c.shape[0] // p,
            gaussian,
            ntk=np.zeros_like(c) if ntk else None,
            mean_known=gaussian,  # a Gaussian pre-activation has zero mean; other moments say nothing of it
        )

    # -- PyTorch ----------------------------------------------------------------------------------
    def to_torch(
        self, weights: NetWeights | None = None, network: int = 0, *, rng: Any = None, in_shape: tuple | None = None
    ) -> Any:
        """The ``torch.nn.Module`` of network ``network`` of ``weights`` (float64, channels-last).

        Without ``weights``, draws one network's from ``rng`` for inputs of ``in_shape``. Its forward
        pass on ``(B, *in_shape)`` equals :meth:`forward` to float64 rounding.
        """
        from ._torch import network_module

        if weights is None:
            if in_shape is None:
                raise ValueError("to_torch needs weights, or in_shape (and rng) to draw them")
            weights = self.weights(in_shape, rng)
        k = check_int(network, "network", 0, weights.n_networks - 1)
        return network_module(self, weights, k)
