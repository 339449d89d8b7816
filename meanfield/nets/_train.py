"""Training a network description: plain PyTorch SGD over the modules of :meth:`Network.to_torch`.

The project's ensemble trainer, for the papers' architectures on stacked weights, is
:mod:`meanfield.train`; this is the minimal trainer of a network description: every network of an
ensemble is its own ``nn.Module`` (float64), trained by full-batch or mini-batch SGD on the mean
squared error or the cross-entropy, with mini-batch orders drawn from the network's own spawned
stream.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._checks import as_real_array, check_int, check_rng, check_scalar
from .._results import Result
from ..backend import spawn_sequences
from ._torch import require_torch

__all__ = ["NetTraining", "train"]

#: ``loss`` values of :func:`train`.
LOSSES = ("mse", "cross_entropy")


@dataclass(frozen=True)
class NetTraining(Result):
    """Result of :func:`train`.

    Attributes
    ----------
    loss : ndarray, shape (n_networks, steps + 1)
        Training loss of every network on the whole training set, before each step and at the end.
    modules : tuple of torch.nn.Module
        The trained modules.
    """

    loss: np.ndarray
    modules: tuple


def _loss_fn(torch, loss):
    if loss == "mse":
        return lambda out, y: torch.mean((out - y) ** 2)
    return lambda out, y: torch.nn.functional.cross_entropy(out, y)


def train(
    net: Any,
    x: ArrayLike,
    y: ArrayLike,
    *,
    n_networks: int = 1,
    rng: Any = None,
    steps: int = 100,
    lr: float = 0.01,
    momentum: float = 0.0,
    batch_size: int | None = None,
    loss: str = "mse",
    weights: Any = None,
) -> NetTraining:
    """Train ``n_networks`` networks of the description ``net`` from their initial weights.

    Parameters
    ----------
    net : Network
    x : array_like, shape ``(N, *in_shape)``
        Training inputs.
    y : array_like
        Targets: shape ``(N, *out_shape)`` for ``loss="mse"``, integer labels (N,) for ``"cross_entropy"``.
    n_networks : int
        Independent networks (ignored when ``weights`` is given).
    rng : None, int, SeedSequence or numpy.random.Generator
        Child 0 draws the weights (:meth:`Network.weights`), child 1 the mini-batch orders.
    steps : int
        SGD steps (0 to 10^6).
    lr, momentum : float
        ``torch.optim.SGD`` settings (``lr > 0``, ``0 <= momentum < 1``).
    batch_size : int, optional
        Mini-batch size (default: the whole training set).
    loss : {"mse", "cross_entropy"}
    weights : NetWeights, optional
        Start from these weights instead of drawing them.

    Returns
    -------
    NetTraining

    Raises
    ------
    ValueError
        Bad sizes or settings, a number of targets other than ``N``, or a loss that becomes
        non-finite.
    RuntimeError, IndexError
        PyTorch's own errors, uncaught: targets whose other dimensions do not match the
        network's output (``RuntimeError``), and for ``"cross_entropy"`` labels that are not a
        vector (``RuntimeError``) or lie outside ``[0, n_classes)`` (``IndexError``).
    ImportError
        Without PyTorch.
    """
    torch = require_torch()
    xa = as_real_array(x, "x")
    steps = check_int(steps, "steps", 0, 10**6)
    lr = check_scalar(lr, "lr")
    momentum = check_scalar(momentum, "momentum")
    if not (lr > 0 and 0 <= momentum < 1):
        raise ValueError(f"lr must be > 0 and momentum in [0, 1), got lr={lr}, momentum={momentum}")
    if loss not in LOSSES:
        raise ValueError(f"loss must be one of {LOSSES}, got {loss!r}")
    n_data = xa.shape[0]
    batch = n_data if batch_size is None else check_int(batch_size, "batch_size", 1, n_data)
    w_seq, order_seq = spawn_sequences(check_rng(rng), 2)
    if weights is None:
        weights = net.weights(xa.shape[1:], w_seq, n_networks=check_int(n_networks, "n_networks", 1, 10**4))
    xt = torch.tensor(xa, dtype=torch.float64)
    if loss == "mse":
        yt = torch.tensor(as_real_array(y, "y"), dtype=torch.float64)
    else:
        yt = torch.tensor(np.asarray(y), dtype=torch.long)
    if yt.shape[0] != n_data:
        raise ValueError(f"y must have one target per input ({n_data}), got shape {tuple(yt.shape)}")
    fn = _loss_fn(torch, loss)
    losses = np.empty((weights.n_networks, steps + 1))
    modules = []
    orders = spawn_sequences(np.random.default_rng(order_seq), weights.n_networks)
    for k in range(weights.n_networks):
        model = net.to_torch(weights, k)
        opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=momentum)
        gen = np.random.default_rng(orders[k])
        per_epoch = math.ceil(n_data / batch)
        perm = None
        for step in range(steps + 1):
            with torch.no_grad():
                losses[k, step] = float(fn(model(xt), yt))
            if not math.isfinite(losses[k, step]):
                raise ValueError(f"the loss of network {k} became non-finite at step {step} (lower lr)")
            if step == steps:
                break
            if step % per_epoch == 0:
                perm = gen.permutation(n_data)
            idx = torch.as_tensor(perm[(step % per_epoch) * batch : (step % per_epoch + 1) * batch])
            opt.zero_grad()
            fn(model(xt[idx]), yt[idx]).backward()
            opt.step()
        modules.append(model)
    return NetTraining(losses, tuple(modules))
