"""What the Xiao et al. 2018 figures share: the paper's name."""

from __future__ import annotations

PAPER = "Xiao et al. 2018"
