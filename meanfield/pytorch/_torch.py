"""The lazy PyTorch import shared by the bridge's modules (``ImportError`` naming the extra)."""

from __future__ import annotations

__all__ = ["INSTALL_HINT", "require_torch"]

#: What to install when PyTorch is missing.
INSTALL_HINT = 'pip install "meanfield-theory[torch]"'


def require_torch():
    """The ``torch`` module, or ``ImportError`` naming the extra to install."""
    try:
        import torch
    except ImportError as exc:
        raise ImportError(
            f"meanfield.pytorch needs PyTorch, which is not installed: {INSTALL_HINT} "
            '(or `pip install -e ".[torch]"` from a clone)'
        ) from exc
    return torch
