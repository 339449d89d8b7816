"""Orhan's skip networks (Orhan 2017, eqs. 24-26) as a network family of the ensemble trainer.

:func:`meanfield.train.train_ensemble` trains :class:`DenseNet` and :class:`ConvNet`
ensembles; :mod:`meanfield.train` registers this module's family with it, so that
the same engine (per-network child streams, batched forward, one optimiser, divergence freezing,
the recorded curves) trains the skip networks of Orhan 2017 Sec. 2.4:

``x_1 = relu(W_0 x + b_0)`` (input layer), then ``depth`` hidden layers

- plain (eq. 24): ``x_{l+1} = relu(W_l x_l + b_l + c_l)``,
- residual (eq. 25): ``... + Q_l x_l``,
- hyper-residual (eq. 26): ``... + Q_l x_l + [P_{l-1} x_{l-1} + ... + P_1 x_1] / (l - 1)``,
- path-residual (Sec. 2.2, Fig. 3d): ``... + 1 1^T x_l / width`` (every unit receives the mean of
  the previous layer; the same as residual with ``Q_l = 1 1^T / width``),

and a linear read-out ``W_out x_{depth+1} + b_out``. ``c_l = a l + b`` is an untrained constant
bias profile (Sec. 2.4.3); ``bias_reg = (sigma, strength)`` adds ``strength sum_l ||b_l - b*_l||^2``
with fixed targets ``b*_l ~ N(0, sigma^2)`` to each network's loss (Sec. 2.4.1, BiasSymmBreak;
``sigma = 0`` is BiasL2Reg); ``bias_init_sigma`` draws the initial hidden biases ``N(0, sigma^2)``
(BiasInit); ``batchnorm_layer`` normalises one hidden layer's pre-activations with the statistics
of the batch it sees (no affine parameters; BiasSymmBreak+BN of Fig. 8).

Layout: each network's row of the trainer's ``theta`` is ``W0, b0, (W_l, b_l) for l = 1..depth,
Wout, bout`` followed by the *fixed* arrays ``Q`` (residual / hyper-residual with ``skips``), ``P``
(hyper-residual with ``long_skips``) and the bias targets (``bias_reg``). The forward pass reads
the fixed arrays through ``detach()``, so their gradient is exactly zero and SGD, momentum and Adam
leave them unchanged (Adam's update ``0 / (0 + eps)`` is 0): they ride along with the network
without a second parameter store. The hidden ``W_l, b_l`` are one contiguous block of the row (the
Hessian's parameters).

Randomness: a network's child stream (spawned by the trainer) spawns five sub-streams, for the
weights, the initial biases, ``Q``, ``P`` and the bias targets. Spawning does not draw from the
child, so the trainer's next draw from it (the seed of the network's mini-batch order) is the same
for every variant: networks ``k`` of a plain and of a residual ensemble trained with the same
``rng`` start from the same weights and see the same mini-batches (common random numbers, which
the paired validation statistics use).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from meanfield import Result
from meanfield._docstrings import doc_sections
from meanfield.checks import as_float_array, check_int, check_scalar

from ._checks import DOC_FIELD_RAISES

__all__ = ["ARCHITECTURES", "SkipNet"]

#: Architectures of eqs. 24-26, and the path-residual net of Sec. 2.2 (Fig. 3d: skip matrix of
#: ones, here divided by the width as in :func:`meanfield.pytorch.path_residual_mlp`).
ARCHITECTURES = ("plain", "residual", "hyper_residual", "path_residual")


@doc_sections(field_raises=DOC_FIELD_RAISES)
@dataclass(frozen=True)
class SkipNet(Result):
    """The skip network of Orhan 2017 eqs. 24-26, as a net of :func:`meanfield.train.train_ensemble`.

    Attributes
    ----------
    architecture : {"plain", "residual", "hyper_residual", "path_residual"}
    depth : int
        Hidden skip layers (1 to 1,000; the paper: 30).
    width : int
        Units per layer (2 to 4,096; the paper: 128).
    sigma_w2 : float
        Initial weights ``N(0, sigma_w2 / fan_in)`` (> 0, <= 1e6); biases start at 0.
    skips, long_skips : callable, optional
        ``f(rng) -> (width, width)`` array, called once per hidden layer and network for ``Q_l``
        (residual, hyper-residual; default identity) and ``P_l`` (hyper-residual; default ``Q_l``).
    constant_bias : (float, float), optional
        Untrained bias ``a l + b`` of hidden layer ``l = 1 .. depth`` (Fig. 12).
    bias_reg : (float, float), optional
        ``(sigma, strength)`` of the bias penalty (both >= 0).
    bias_init_sigma : float, optional
        Initial hidden biases ``N(0, sigma^2)`` (>= 0); default zero.
    batchnorm_layer : int, optional
        0-based hidden layer whose pre-activations are batch-normalised.
    monitor : callable, optional
        ``monitor(model, step, theta)`` is called at every recorded step of the trainer with the
        detached parameters ``theta`` (n_networks, n_params); a measurement hook (it does not
        take part in comparisons).

    {field_raises}

    Notes
    -----
    Orhan 2017 Sec. 2.4 (eqs. 24-26), 2.4.1 (bias symmetry breaking), 2.4.2 (skip matrices), 2.4.3
    (constant bias profiles). :func:`meanfield.landscape.skip_network` is the NumPy reference of
    the hidden stack (tests compare them).
    """

    architecture: str
    depth: int
    width: int
    sigma_w2: float = 1.0
    skips: Callable[[np.random.Generator], np.ndarray] | None = None
    long_skips: Callable[[np.random.Generator], np.ndarray] | None = None
    constant_bias: tuple | None = None
    bias_reg: tuple | None = None
    bias_init_sigma: float | None = None
    batchnorm_layer: int | None = None
    monitor: Callable | None = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        if not isinstance(self.architecture, str) or self.architecture not in ARCHITECTURES:
            raise ValueError(f"architecture must be one of {list(ARCHITECTURES)}, got {self.architecture!r}")
        object.__setattr__(self, "depth", check_int(self.depth, "depth", 1, 1000))
        object.__setattr__(self, "width", check_int(self.width, "width", 2, 4096))
        s = check_scalar(self.sigma_w2, "sigma_w2")
        if not 0 < s <= 1e6:
            raise ValueError(f"sigma_w2 must lie in (0, 1e6], got {s}")
        object.__setattr__(self, "sigma_w2", s)
        for name in ("skips", "long_skips", "monitor"):
            v = getattr(self, name)
            if v is not None and not callable(v):
                raise TypeError(f"{name} must be None or a callable, got {type(v).__name__}")
        if self.architecture in ("plain", "path_residual") and (self.skips is not None or self.long_skips is not None):
            raise ValueError(
                f"skips and long_skips apply to the residual and hyper-residual architectures, not to {self.architecture!r}"
            )
        if self.architecture == "residual" and self.long_skips is not None:
            raise ValueError("long_skips applies to the hyper-residual architecture only (eq. 26)")
        if self.constant_bias is not None:
            if not isinstance(self.constant_bias, (tuple, list)) or len(self.constant_bias) != 2:
                raise TypeError(f"constant_bias must be None or a pair (a, b) of floats, got {self.constant_bias!r}")
            a = check_scalar(self.constant_bias[0], "constant_bias[0]")
            b = check_scalar(self.constant_bias[1], "constant_bias[1]")
            if max(abs(a) * self.depth, abs(b)) > 1e6:
                raise ValueError(f"constant_bias must keep |a l + b| <= 1e6, got {self.constant_bias!r}")
            object.__setattr__(self, "constant_bias", (a, b))
        if self.bias_reg is not None:
            if not isinstance(self.bias_reg, (tuple, list)) or len(self.bias_reg) != 2:
                raise TypeError(f"bias_reg must be None or a pair (sigma, strength), got {self.bias_reg!r}")
            sig = check_scalar(self.bias_reg[0], "bias_reg[0] (sigma)")
            strength = check_scalar(self.bias_reg[1], "bias_reg[1] (strength)")
            if not (0 <= sig <= 1e6 and 0 <= strength <= 1e6):
                raise ValueError(f"bias_reg (sigma, strength) must both lie in [0, 1e6], got {self.bias_reg!r}")
            object.__setattr__(self, "bias_reg", (sig, strength))
        if self.bias_init_sigma is not None:
            v = check_scalar(self.bias_init_sigma, "bias_init_sigma")
            if not 0 <= v <= 1e6:
                raise ValueError(f"bias_init_sigma must lie in [0, 1e6], got {v}")
            object.__setattr__(self, "bias_init_sigma", v)
        if self.batchnorm_layer is not None:
            object.__setattr__(
                self, "batchnorm_layer", check_int(self.batchnorm_layer, "batchnorm_layer", 0, self.depth - 1)
            )

    # -- layout ------------------------------------------------------------------------------
    def shapes(self, n_in: int, n_classes: int) -> list[tuple[int, ...]]:
        """Shapes of the blocks of one network's parameter row (trained, then fixed)."""
        n, L = self.width, self.depth
        out = [(n, n_in), (n,)]
        for _ in range(L):
            out += [(n, n), (n,)]
        out += [(n_classes, n), (n_classes,)]
        if self.skips is not None:
            out.append((L, n, n))
        if self.long_skips is not None:
            out.append((L, n, n))
        if self.bias_reg is not None:
            out.append((L, n))
        return out

    def hidden_block(self, n_in: int) -> tuple[int, int]:
        """``(start, stop)`` of the hidden ``W_l, b_l`` in a parameter row."""
        start = self.width * n_in + self.width
        return start, start + self.depth * (self.width * self.width + self.width)


def _matrices(factory, name, n, rng, count):
    out = []
    for i in range(count):
        q = as_float_array(factory(rng), f"{name}(rng) [call {i}]")
        if q.shape != (n, n):
            raise ValueError(f"{name}(rng) must return an (n, n) = {(n, n)} array, got {q.shape}")
        out.append(q)
    return np.stack(out)


def _init(net: SkipNet, shape, n_classes: int, rng: np.random.Generator) -> list[np.ndarray]:
    d = math.prod(shape)
    n, L = net.width, net.depth
    r_w, r_b, r_q, r_p, r_t = rng.spawn(5)

    def normal(rows, fan_in):
        return r_w.standard_normal((rows, fan_in)) * math.sqrt(net.sigma_w2 / fan_in)

    w0 = normal(n, d)
    ws = [normal(n, n) for _ in range(L)]
    wout = normal(n_classes, n)
    if net.bias_init_sigma is not None:
        bs = [net.bias_init_sigma * r_b.standard_normal(n) for _ in range(L)]
    else:
        bs = [np.zeros(n) for _ in range(L)]
    out = [w0, np.zeros(n)]
    for w, b in zip(ws, bs):
        out += [w, b]
    out += [wout, np.zeros(n_classes)]
    if net.skips is not None:
        out.append(_matrices(net.skips, "skips", n, r_q, L))
    if net.long_skips is not None:
        out.append(_matrices(net.long_skips, "long_skips", n, r_p, L))
    if net.bias_reg is not None:
        out.append(net.bias_reg[0] * r_t.standard_normal((L, n)))
    return out


def _n_params(net: SkipNet, shape, n_classes: int) -> int:
    return sum(math.prod(s) for s in net.shapes(math.prod(shape), n_classes))


def _same_architecture(a: SkipNet, b: SkipNet) -> bool:
    keep = ("architecture", "depth", "width", "constant_bias", "batchnorm_layer")
    layout = ("skips", "long_skips", "bias_reg")
    return all(getattr(a, k) == getattr(b, k) for k in keep) and all(
        (getattr(a, k) is None) == (getattr(b, k) is None) for k in layout
    )


class SkipModel:
    """Forward pass of ``E`` skip networks stored as rows of ``theta`` (the trainer's model protocol)."""

    def __init__(self, torch, net: SkipNet, input_shape, n_classes, per_network, device, dtype):
        self.torch = torch
        self.net = net
        self.E = len(per_network)
        self.n_in = math.prod(input_shape)
        self.n_classes = int(n_classes)
        self.shapes = [tuple(s) for s in net.shapes(self.n_in, n_classes)]
        self.sizes = [math.prod(s) for s in self.shapes]
        flat = np.stack([np.concatenate([np.asarray(p, dtype=np.float64).ravel() for p in ps]) for ps in per_network])
        self.theta = torch.tensor(flat, dtype=dtype, device=device)
        c = net.constant_bias
        self.c = None if c is None else [c[0] * l + c[1] for l in range(1, net.depth + 1)]

    @property
    def n_params(self) -> int:
        return int(sum(self.sizes))

    def _fixed(self, parts, E):
        net, n, L = self.net, self.net.width, self.net.depth
        i = 2 * L + 4
        q = p = t = None
        if net.skips is not None:
            q = parts[i].detach().view(E, L, n, n)
            i += 1
        if net.long_skips is not None:
            p = parts[i].detach().view(E, L, n, n)
            i += 1
        if net.bias_reg is not None:
            t = parts[i].detach().view(E, L, n)
        return q, p, t

    def forward(self, theta, x, keep: bool = False):
        """Logits ``(E, B, n_classes)`` for inputs ``x`` ``(E, B, *input_shape)``; ``keep``: also ``x_1 .. x_{L+1}``."""
        torch = self.torch
        net = self.net
        E, B = theta.shape[0], x.shape[1]
        n, L = net.width, net.depth
        parts = theta.split(self.sizes, dim=1)
        q, p, _ = self._fixed(parts, E)
        h = torch.relu(
            torch.baddbmm(parts[1].view(E, 1, n), x.reshape(E, B, -1), parts[0].view(E, n, -1).transpose(1, 2))
        )
        hist = [h]
        for idx in range(L):
            w = parts[2 + 2 * idx].view(E, n, n)
            b = parts[3 + 2 * idx].view(E, 1, n)
            pre = torch.baddbmm(b, h, w.transpose(1, 2))
            if self.c is not None:
                pre = pre + self.c[idx]
            if net.batchnorm_layer is not None and idx == net.batchnorm_layer:
                mu = pre.mean(dim=1, keepdim=True)
                var = pre.var(dim=1, unbiased=False, keepdim=True)
                pre = (pre - mu) / torch.sqrt(var + 1e-5)
            new = torch.relu(pre)
            if net.architecture == "path_residual":
                new = new + h.mean(dim=-1, keepdim=True)
            elif net.architecture != "plain":
                new = new + (h if q is None else torch.bmm(h, q[:, idx].transpose(1, 2)))
            if net.architecture == "hyper_residual" and idx >= 1:
                longs = p if p is not None else q
                if longs is None:
                    far = sum(hist[:-1])
                else:
                    far = sum(torch.bmm(xk, longs[:, k].transpose(1, 2)) for k, xk in enumerate(hist[:-1]))
                new = new + far / idx
            if keep:
                new.retain_grad()
            h = new
            hist.append(h)
        logits = torch.baddbmm(parts[2 * L + 3].view(E, 1, -1), h, parts[2 * L + 2].view(E, -1, n).transpose(1, 2))
        return (logits, hist) if keep else logits

    def penalty(self, theta):
        """``strength sum_l ||b_l - b*_l||^2`` per network (E,), or None without ``bias_reg``."""
        net = self.net
        if net.bias_reg is None:
            return None
        parts = theta.split(self.sizes, dim=1)
        E, L = theta.shape[0], net.depth
        _, _, t = self._fixed(parts, E)
        b = self.torch.stack([parts[3 + 2 * i] for i in range(L)], dim=1)  # (E, L, n)
        return net.bias_reg[1] * ((b - t) ** 2).sum(dim=(1, 2))

    def observe(self, step: int, theta) -> None:
        """The trainer's record hook: hands the parameters to ``net.monitor`` (if any)."""
        if self.net.monitor is not None:
            self.net.monitor(self, step, theta)

    def unpack(self, theta) -> dict[str, np.ndarray]:
        """Parameters as float64 arrays with a leading network axis (``W0, b0, W, b, Wout, bout, Q, P, targets``)."""
        th = theta.detach().double().cpu()
        parts = th.split(self.sizes, dim=1)
        E, n, L = th.shape[0], self.net.width, self.net.depth
        out = {
            "W0": parts[0].reshape(E, n, self.n_in).numpy(),
            "b0": parts[1].numpy(),
            "W": np.stack([parts[2 + 2 * i].reshape(E, n, n).numpy() for i in range(L)], axis=1),
            "b": np.stack([parts[3 + 2 * i].numpy() for i in range(L)], axis=1),
            "Wout": parts[2 * L + 2].reshape(E, self.n_classes, n).numpy(),
            "bout": parts[2 * L + 3].numpy(),
        }
        q, p, t = self._fixed(parts, E)
        if q is not None:
            out["Q"] = q.numpy()
        if p is not None:
            out["P"] = p.numpy()
        if t is not None:
            out["targets"] = t.numpy()
        return out


def pack(net: SkipNet, params: dict[str, np.ndarray]) -> list[list[np.ndarray]]:
    """Per-network parameter lists (the layout of :func:`_init`) from :meth:`SkipModel.unpack`'s dict."""
    E, L = params["W0"].shape[0], net.depth
    out = []
    for m in range(E):
        row = [params["W0"][m], params["b0"][m]]
        for i in range(L):
            row += [params["W"][m, i], params["b"][m, i]]
        row += [params["Wout"][m], params["bout"][m]]
        for key in ("Q", "P", "targets"):
            if key in params:
                row.append(params[key][m])
        out.append(row)
    return out
