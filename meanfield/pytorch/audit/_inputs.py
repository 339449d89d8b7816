"""The inputs an audit feeds the model: the embedded digits, a batch, or a file, shaped for the first layer."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._checks import check_int
from .._torch import require_torch
from ._rows import MAX_INPUTS

torch = require_torch()
nn = torch.nn


# --- inputs ------------------------------------------------------------------------------------------


def _first_weight_layer(model):
    for m in model.modules():
        if isinstance(m, (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d)):
            return m
    raise ValueError("model has no Linear or Conv layer to audit")


def prepare_inputs(model: Any, inputs: Any = "digits", n_inputs: int = MAX_INPUTS) -> Any:
    """The first ``n_inputs`` inputs as a float tensor for ``model`` (the digits shaped for its first layer).

    Parameters
    ----------
    model : torch.nn.Module
    inputs : "digits", torch.Tensor, numpy array, or a DataLoader batch ``(x, y)``
        ``"digits"``: the embedded 8 x 8 digits (:func:`meanfield.data.load_digits`, standardised per
        feature), shaped ``(D, 64)`` for a ``Linear`` first layer, ``(D, 1, 64)`` for ``Conv1d`` and
        ``(D, 1, 8, 8)`` for ``Conv2d`` (one input channel). A tensor, array or batch is used as
        given (its first ``n_inputs`` rows), neither reshaped nor checked against the first
        layer's shape: a mismatch shows only when the model runs on it.
    n_inputs : int
        Inputs kept (2 to 64; the first ones).

    Returns
    -------
    torch.Tensor
        In the dtype and on the device of the model's first weight.

    Raises
    ------
    TypeError
        Inputs of an unsupported type, complex or non-numeric.
    ValueError
        Non-finite inputs, fewer than 2 inputs or fewer than 2 dimensions; for ``"digits"``, a
        first layer that cannot take them (a ``Linear`` without 64 features, a ``Conv`` without
        one input channel).
    """
    n_inputs = check_int(n_inputs, "n_inputs", 2, 64)
    first = _first_weight_layer(model)
    if isinstance(inputs, str):
        if inputs != "digits":
            raise ValueError(f"inputs must be 'digits', a tensor or a DataLoader batch, got the string {inputs!r}")
        from ...data import load_digits

        x = torch.from_numpy(load_digits(n_samples=n_inputs, standardized=True).x)
        leaves = [m for m in model.modules() if not list(m.children())]
        if leaves and isinstance(leaves[0], (nn.Unflatten, nn.Flatten)):
            pass  # the model reshapes the 64 features itself
        elif isinstance(first, nn.Conv2d):
            if first.in_channels != 1:
                raise ValueError(
                    f"the digits are one-channel 8 x 8 images; the model's first Conv2d takes {first.in_channels} channels"
                )
            x = x.reshape(-1, 1, 8, 8)
        elif isinstance(first, nn.Conv1d):
            if first.in_channels != 1:
                raise ValueError(
                    f"the digits are one-channel signals of length 64; the first Conv1d takes {first.in_channels} channels"
                )
            x = x.reshape(-1, 1, 64)
        elif isinstance(first, nn.Linear) and first.in_features != 64:
            raise ValueError(f"the digits have 64 features; the model's first Linear takes {first.in_features}")
    else:
        if isinstance(inputs, (list, tuple)) and inputs:  # a DataLoader batch (x, y, ...)
            inputs = inputs[0]
        if isinstance(inputs, np.ndarray):
            if inputs.dtype == np.bool_ or inputs.dtype.kind not in "iuf":
                raise TypeError(f"inputs must hold real numbers, got dtype {inputs.dtype}")
            inputs = torch.from_numpy(np.ascontiguousarray(inputs, dtype=np.float64))
        if not isinstance(inputs, torch.Tensor):
            raise TypeError(
                f"inputs must be 'digits', a torch.Tensor, a NumPy array or a DataLoader batch, got {type(inputs).__name__}"
            )
        if inputs.is_complex() or inputs.dtype == torch.bool:
            raise TypeError(f"inputs must hold real numbers, got dtype {inputs.dtype}")
        x = inputs.detach()[:n_inputs]
    if x.dim() < 2 or x.shape[0] < 2:
        raise ValueError(f"inputs must be a batch of at least 2 inputs (batch, ...), got shape {tuple(x.shape)}")
    if not bool(torch.isfinite(x).all()):
        raise ValueError("inputs must be finite (no NaN or infinity)")
    if not x.is_floating_point() and any(isinstance(m, nn.Embedding) for m in model.modules()):
        return x.to(device=first.weight.device)  # token indices for an embedding
    x = x.to(dtype=first.weight.dtype, device=first.weight.device)
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"inputs overflow the model's dtype {first.weight.dtype}: rescale them")
    return x
