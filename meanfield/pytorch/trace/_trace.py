"""``trace(model)``: the graph of a PyTorch model, each weight layer with the activation it feeds."""

from __future__ import annotations

from typing import Any

from .._torch import require_torch
from ._analyse import _analyse
from ._capture import _fx_trace, _hook_trace, _tensors
from ._graph import Trace, _Builder

torch = require_torch()
nn = torch.nn


def trace(model: Any, example_inputs: Any = None, *, method: str = "auto") -> Trace:
    """The graph of ``model``: node kinds, the activation each weight layer consumes, the residual
    branches, and every node outside the theory with the reason.

    Parameters
    ----------
    model : torch.nn.Module
    example_inputs : torch.Tensor or tuple of tensors, optional
        Inputs for a real forward pass, needed when ``torch.fx`` cannot trace the model (then the
        model runs once in ``eval()`` mode with gradients enabled, restored afterwards).
    method : {"auto", "fx", "hooks"}
        ``"auto"``: ``torch.fx``, falling back to hooks on ``example_inputs``.

    Returns
    -------
    Trace

    Raises
    ------
    TypeError
        ``model`` not an ``nn.Module``; ``example_inputs`` not a tensor or tuple.
    ValueError
        An unknown ``method``; ``torch.fx`` failed and no ``example_inputs`` were given; the forward
        pass on ``example_inputs`` failed (the message says why).

    Examples
    --------
    >>> import torch
    >>> class Mixer(torch.nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.fc1, self.fc2 = torch.nn.Linear(8, 16), torch.nn.Linear(16, 8)
    ...     def forward(self, x):
    ...         return x + self.fc2(torch.nn.functional.gelu(self.fc1(x)))
    >>> trace(Mixer()).activations()
    {'fc1': 'gelu', 'fc2': 'gelu'}
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if method not in ("auto", "fx", "hooks"):
        raise ValueError(f"method must be 'auto', 'fx' or 'hooks', got {method!r}")
    if example_inputs is not None and not isinstance(example_inputs, (torch.Tensor, tuple)):
        raise TypeError(
            f"example_inputs must be a torch.Tensor or a tuple of tensors, got {type(example_inputs).__name__}"
        )
    fx_error = ""
    if method in ("auto", "fx"):
        builder = _Builder(model)
        try:
            _fx_trace(model, builder)
            return _analyse(builder, "fx", "")
        except Exception as exc:
            fx_error = f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:200]}"
            if method == "fx":
                raise ValueError(f"torch.fx could not trace the model: {fx_error}") from exc
    if example_inputs is None:
        raise ValueError(
            f"torch.fx could not trace the model ({fx_error}); pass example_inputs (a batch the model accepts) "
            "so that a real forward pass can be traced"
        )
    builder = _Builder(model)
    try:
        _hook_trace(model, example_inputs, builder)
    except (RuntimeError, TypeError, IndexError) as exc:
        shapes = [tuple(t.shape) for t in _tensors(example_inputs)]
        raise ValueError(
            f"example_inputs of shape {shapes} cannot be fed to the model: {(str(exc).splitlines() or [''])[0]}"
        ) from exc
    return _analyse(builder, "hooks", fx_error)
