"""The figure harness: declaring a figure, its sizes and random streams, saving and drawing it.

The public face of the machinery every figure module shares (its implementation lives in private
modules of this package); a new figure is written with it:

- declaring and saving: :func:`figure` (the decorator that gives every figure function the
  signature ``(out_dir, *, size="default", full=None, backend="numpy", rng=0)``, checks its
  arguments and registers it under its figure module), :func:`registered` (a figure module's
  registered figures), :func:`save_figure` (PNG + self-describing JSON: the one way a figure is
  saved), :data:`SIZES`, :func:`by_size`, :func:`check_size`, :func:`check_seed`,
  :func:`check_backend`, :func:`streams` (independent ``SeedSequence`` children of the seed),
  :func:`rng_kwargs`;
- drawing: :data:`plt` (``matplotlib.pyplot`` on the Agg backend), :func:`colors`, :func:`title`,
  :func:`plot_log_floor`, :func:`mark_floor`, and the log-scale plots with exact zeros
  :func:`plot_with_zeros`, :func:`zero_band`, :func:`zero_floor`;
- showing: :func:`show_figure` (render a figure and display its PNG in the current matplotlib
  figure: the documentation gallery and notebooks);
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
    registered,
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
    "registered",
    "rng_kwargs",
    "save_figure",
    "show_figure",
    "streams",
    "title",
    "zero_band",
    "zero_floor",
]


def show_figure(func, out_dir=None, *, size: str = "smoke", **kwargs):
    """Render the figure ``func`` and display its PNG on a new matplotlib figure.

    Parameters
    ----------
    func : callable
        A figure function declared with :func:`figure` (e.g. ``meanfield.figures.xiao2018.fig_s1``).
    out_dir : str or path-like, optional
        Where the PNG and its JSON are written; a new temporary folder when omitted.
    size : {"smoke", "default", "full"}
        The figure's size (``"smoke"``: seconds; the gallery's choice).
    **kwargs
        Passed to ``func`` (``rng``, ``backend``).

    Returns
    -------
    list of pathlib.Path
        The files ``func`` wrote (its PNG first).

    Raises
    ------
    TypeError
        If ``func`` is not a figure function.
    """
    import tempfile

    if not callable(func) or not hasattr(func, "sizes"):
        raise TypeError(f"func must be a figure function declared with @figure, got {func!r}")
    out_dir = tempfile.mkdtemp() if out_dir is None else out_dir
    files = func(out_dir, size=size, **kwargs)
    image = plt.imread(files[0])
    _fig, ax = plt.subplots(figsize=(image.shape[1] / 60, image.shape[0] / 60))
    ax.imshow(image)
    ax.axis("off")
    return files
