"""Deterministic layers on the raw input: the layer applied to the data itself (private).

Before the first random layer the representation is the data ``x`` (``State.x``), not a
distribution: a deterministic layer there (a normalisation, a pooling, a flattening) is computed
exactly on ``x`` with its own sampler, and the next layer's rule starts from the result.
"""

from __future__ import annotations

from dataclasses import replace

from ..backend import get_backend
from ._state import State

__all__: list[str] = []


def on_data(layer, state: State) -> State:
    """``state`` with its raw input replaced by ``layer`` applied to it (one network, NumPy)."""
    y = layer.apply({}, state.x[None, ...], get_backend("numpy"))[0]
    return replace(state, x=y, width=int(y.shape[-1]), spatial=tuple(y.shape[1:-1]))
