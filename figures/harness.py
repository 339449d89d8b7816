"""The figure harness: declaring a figure, its sizes and random streams, saving and drawing it.

The public face of the machinery every figure module shares (its implementation lives in private
modules of this package); a new figure is written with it:

- declaring and saving: :func:`figure` (the decorator that gives every figure function the
  signature ``(out_dir, *, size="default", full=None, backend="numpy", seed=0)`` and checks its
  arguments), :func:`save_figure` (PNG + self-describing JSON), :data:`SIZES`, :func:`by_size`,
  :func:`check_size`, :func:`check_seed`, :func:`check_backend`, :func:`streams` (independent
  ``SeedSequence`` children of the seed), :func:`rng_kwargs`;
- drawing: :data:`plt` (``matplotlib.pyplot`` on the Agg backend), :func:`colors`, :func:`title`,
  :func:`plot_log_floor`, :func:`mark_floor`, and the log-scale plots with exact zeros
  :func:`plot_with_zeros`, :func:`zero_band`, :func:`zero_floor`;
- running: :mod:`meanfield.figures.runner` (``all_figures``, ``run_figures``, ``main``: the
  ``meanfield figures`` command).

Importing this module imports matplotlib (``import meanfield.figures`` alone does not).
"""

from __future__ import annotations

from ._common import (
    BLUE_RED,
    SIZES,
    by_size,
    check_backend,
    check_seed,
    check_size,
    colors,
    figure,
    mark_floor,
    plot_log_floor,
    plt,
    rng_kwargs,
    save_figure,
    streams,
    title,
)
from ._logzero import plot_with_zeros, zero_band, zero_floor

__all__ = [
    "BLUE_RED",
    "SIZES",
    "by_size",
    "check_backend",
    "check_seed",
    "check_size",
    "colors",
    "figure",
    "mark_floor",
    "plot_log_floor",
    "plot_with_zeros",
    "plt",
    "rng_kwargs",
    "save_figure",
    "streams",
    "title",
    "zero_band",
    "zero_floor",
]
