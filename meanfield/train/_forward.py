"""The ensemble's forward pass: ``E`` networks stored as rows of one parameter tensor ``theta`` (E, P)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from meanfield._docstrings import doc_sections

from ._checks import DOC_TRAINER_RAISES, _choice, _torch
from ._specs import _NETWORK_TYPES, ConvNet, DenseNet, _check_conv_input, _net_types, init_parameters

#: Logits are clipped to ``[-MAX_LOGIT, MAX_LOGIT]`` (NaN -> 0) before losses and accuracies are
#: recorded, so that a network whose activations overflow still gets a finite score.
MAX_LOGIT = 1e4
#: Largest recorded cross-entropy (reached only by clipped logits).
MAX_LOSS = 2.0 * MAX_LOGIT


def _gather_max_saved() -> int:
    """:data:`meanfield.train.GATHER_MAX_SAVED`, read when a forward pass runs (tests and benchmarks set it)."""
    import meanfield.train

    return meanfield.train.GATHER_MAX_SAVED


def _act(torch, name: str, slope: float):
    if name == "tanh":
        return torch.tanh
    if name == "relu":
        return torch.relu
    if name == "linear":
        return lambda x: x
    if name == "erf":
        return torch.special.erf
    return lambda x: torch.nn.functional.leaky_relu(x, slope)


class _Ensemble:
    """Parameter layout and forward pass of ``E`` networks stored as rows of ``theta`` (E, P)."""

    def __init__(self, torch, net, input_shape, n_classes, per_network: list[list[np.ndarray]], device, dtype):
        self.torch = torch
        self.net = net
        self.E = len(per_network)
        self.input_shape = tuple(input_shape)
        self.shapes = [p.shape for p in per_network[0]]
        self.sizes = [int(np.prod(s)) for s in self.shapes]
        flat = np.stack([np.concatenate([p.ravel() for p in ps]) for ps in per_network])
        self.theta = torch.tensor(flat, dtype=dtype, device=device)
        self.adapter = _NETWORK_TYPES.get(type(net))
        self.act = None if self.adapter is not None else _act(torch, net.activation, net.slope)
        self._pad_index = None
        self._shift_index = None

    @property
    def n_params(self) -> int:
        return int(sum(self.sizes))

    def forward(self, theta, x):
        """Logits ``(E, B, n_classes)`` for inputs ``x`` of shape ``(E, B, *input_shape)``."""
        if self.adapter is not None:
            return self.adapter.forward(self, theta, x)
        torch = self.torch
        E = self.E
        parts = theta.split(self.sizes, dim=1)
        B = x.shape[1]
        if isinstance(self.net, DenseNet):
            h = x.reshape(E, B, -1)
            n_layers = len(parts) // 2
            for i in range(n_layers):
                w = parts[2 * i].view(E, *self.shapes[2 * i])
                b = parts[2 * i + 1].view(E, 1, -1)
                h = torch.baddbmm(b, h, w.transpose(1, 2))
                if i < n_layers - 1:
                    h = self.act(h)
            return h
        F = torch.nn.functional
        net = self.net
        pad = net.kernel_size // 2
        spatial = self.input_shape[1:] if net.ndim == 2 else (math.prod(self.input_shape[1:]),)
        taps = net.kernel_size**net.ndim
        saved = E * net.channels * taps * math.prod(spatial) * B * net.depth
        if not torch.is_grad_enabled() or saved <= _gather_max_saved():
            return self._forward_gather(theta, parts, x, spatial, taps)
        padded = tuple(n + 2 * pad for n in spatial)
        conv = F.conv2d if net.ndim == 2 else F.conv1d
        if self._pad_index is None:  # circular padding as one gather over the flattened positions
            ranges = [torch.arange(-pad, n + pad) % n for n in spatial]
            flat = ranges[0] if net.ndim == 1 else (ranges[0][:, None] * spatial[1] + ranges[1][None, :]).reshape(-1)
            self._pad_index = flat.to(theta.device)
        # (E, B, c, *S) -> (B, E * c, *S): the networks are the groups of one grouped convolution
        h = x.reshape(E, B, self.input_shape[0], -1).transpose(0, 1).reshape(B, -1, math.prod(spatial))
        for i in range(net.depth):
            shape = self.shapes[2 * i]
            w = parts[2 * i].reshape(E * shape[0], *shape[1:])
            b = parts[2 * i + 1].reshape(-1)
            hp = h.index_select(2, self._pad_index).view(B, -1, *padded) if pad else h.view(B, -1, *spatial)
            h = self.act(conv(hp, w, b, groups=E)).reshape(B, -1, math.prod(spatial))
        h = h.reshape(B, E, net.channels, -1)
        # (E, B, features): global average pooling, or every channel at every position (channel-major)
        h = (h.mean(dim=3) if net.readout == "pool" else h.reshape(B, E, -1)).transpose(0, 1)
        w = parts[-2].view(E, *self.shapes[-2])
        b = parts[-1].view(E, 1, -1)
        return torch.baddbmm(b, h, w.transpose(1, 2))

    def _forward_gather(self, theta, parts, x, spatial, taps):
        """The periodic convolutions as one gather of the ``taps`` shifted copies and one batched matmul.

        Activations are kept as ``(E, c, positions, B)``: layer ``l`` gathers, for every position
        ``p`` and kernel tap ``t`` (C order), the input at ``p + t - pad`` (periodic), giving a
        ``(E, c_in * taps, positions * B)`` matrix, and multiplies it by the kernels viewed as
        ``(E, c_out, c_in * taps)`` (PyTorch's layout flattened): the cross-correlation of
        ``conv2d`` / ``conv1d`` with circular padding, in three kernels per layer (gather, baddbmm,
        activation) instead of a grouped convolution, which on small CPU tensors is dominated by
        per-call overhead (``benchmarks/bench_trainer.py``). It stores ``taps`` times more
        activations for the backward pass, hence :data:`meanfield.train.GATHER_MAX_SAVED`.
        """
        torch = self.torch
        net = self.net
        E, B = x.shape[0], x.shape[1]
        n_pos = math.prod(spatial)
        if self._shift_index is None:
            pad = net.kernel_size // 2
            grid = np.indices(spatial).reshape(net.ndim, -1)  # (ndim, positions), C order
            rows = []
            for offset in itertools.product(range(-pad, pad + 1), repeat=net.ndim):
                moved = [(grid[d] + offset[d]) % spatial[d] for d in range(net.ndim)]
                rows.append(np.ravel_multi_index(moved, spatial))
            self._shift_index = torch.as_tensor(np.concatenate(rows), dtype=torch.int64, device=theta.device)
        h = x.reshape(E, B, self.input_shape[0], n_pos).permute(0, 2, 3, 1)  # (E, c, positions, B)
        for i in range(net.depth):
            c_out, c_in = self.shapes[2 * i][:2]
            w = parts[2 * i].view(E, c_out, c_in * taps)
            b = parts[2 * i + 1].view(E, c_out, 1)
            shifted = h.index_select(2, self._shift_index).reshape(E, c_in * taps, n_pos * B)
            h = self.act(torch.baddbmm(b, w, shifted)).view(E, c_out, n_pos, B)
        # (E, B, features): global average pooling, or every channel at every position (channel-major)
        feats = h.mean(dim=2) if net.readout == "pool" else h.reshape(E, net.channels * n_pos, B)
        w = parts[-2].view(E, *self.shapes[-2])
        b = parts[-1].view(E, 1, -1)
        return torch.baddbmm(b, feats.transpose(1, 2), w.transpose(1, 2))


@doc_sections(trainer_raises=DOC_TRAINER_RAISES)
def ensemble_forward(
    net: DenseNet | ConvNet, parameters: Sequence[Sequence[np.ndarray]], x: np.ndarray, *, dtype: str = "float64"
) -> np.ndarray:
    """Logits of an ensemble with given parameters: the trainer's forward pass, NumPy in and out.

    Parameters
    ----------
    net : DenseNet or ConvNet
    parameters : sequence of sequences of ndarray
        One list per network, as :func:`init_parameters` returns it (same shapes for every network).
    x : ndarray, shape ``(n_networks, batch, channels, *spatial)``
        Finite real inputs, one batch per network.
    dtype : {"float64", "float32"}

    Returns
    -------
    ndarray, shape (n_networks, batch, n_classes)
        Float64 logits (finite unless the network overflows ``dtype``).

    Raises
    ------
    ValueError
        Shapes that do not fit ``net`` or each other, non-finite inputs.
    {trainer_raises}

    Notes
    -----
    Dense layers ``h^{l+1} = W^{l+1} phi(h^l) + b^{l+1}``; convolutions are Xiao et al.'s periodic
    cross-correlation (eq. 2.1), computed by circularly padded grouped PyTorch convolutions on the
    kernels :func:`meanfield.init.to_torch_layout` produced (the tests compare it with
    :func:`meanfield.init.periodic_conv`).
    """
    torch = _torch()
    if not isinstance(net, _net_types()):
        raise TypeError(f"net must be a DenseNet or a ConvNet (or a registered spec), got {type(net).__name__}")
    dtype = _choice(dtype, "dtype", ("float32", "float64"))
    try:
        x = np.asarray(x)
    except ValueError as exc:  # ragged
        raise ValueError("x must be a rectangular array of real numbers") from exc
    if np.iscomplexobj(x):
        raise TypeError("x must be real")
    if x.dtype == bool or x.dtype.kind not in "iuf":
        raise TypeError(f"x must hold real numbers, got dtype {x.dtype}")
    if x.ndim < 4 or 0 in x.shape or not np.all(np.isfinite(x)):
        raise ValueError(f"x must be a finite array of shape (n_networks, batch, channels, *spatial), got {x.shape}")
    if isinstance(parameters, (str, bytes)) or len(parameters) != x.shape[0]:
        raise ValueError(f"parameters must hold one list per network ({x.shape[0]}), got {len(parameters)}")
    shape = tuple(x.shape[2:])
    if isinstance(net, ConvNet):
        _check_conv_input(net, shape)
    per = [[np.asarray(p, dtype=np.float64) for p in ps] for ps in parameters]
    ref = [p.shape for p in per[0]]
    if any([p.shape for p in ps] != ref for ps in per):
        raise ValueError("every network's parameters must have the same shapes")
    n_classes = int(ref[-1][0])
    if n_classes < 2:
        raise ValueError("the read-out must have at least 2 classes")
    expected = [p.shape for p in init_parameters(net, shape, n_classes, rng=0)]
    if ref != expected:
        raise ValueError(f"parameters have shapes {ref}, expected {expected} for this net and input shape")
    tdtype = getattr(torch, dtype)
    model = _Ensemble(torch, net, shape, n_classes, per, torch.device("cpu"), tdtype)
    with torch.no_grad():
        out = model.forward(model.theta, torch.tensor(x, dtype=tdtype))
    return out.double().numpy()


def _scores(torch, logits, y):
    """Clipped per-network mean cross-entropy and accuracy: two (E,) tensors."""
    logits = torch.nan_to_num(logits, nan=0.0, posinf=MAX_LOGIT, neginf=-MAX_LOGIT).clamp(-MAX_LOGIT, MAX_LOGIT)
    E, B, C = logits.shape
    ce = torch.nn.functional.cross_entropy(logits.reshape(E * B, C), y.reshape(E * B), reduction="none")
    loss = ce.view(E, B).mean(dim=1).clamp(max=MAX_LOSS)
    acc = (logits.argmax(dim=2) == y).to(logits.dtype).mean(dim=1)
    return loss, acc
