"""What the Orhan 2017 figures share: the paper's name and the four toy architectures' order, colours and labels."""

from __future__ import annotations

#: How the figures' titles and metadata name the paper.
PAPER = "Orhan 2017"

ORDER = ["plain", "path_residual", "residual", "hyper_residual"]
COLORS = {"plain": "tab:blue", "path_residual": "tab:green", "residual": "tab:red", "hyper_residual": "tab:purple"}
LABELS = {
    "plain": "plain",
    "path_residual": "path-residual",
    "residual": "residual",
    "hyper_residual": "hyper-residual",
}
