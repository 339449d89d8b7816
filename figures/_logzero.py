"""Exact zeros on logarithmic axes: drawn in a labelled band below the data instead of dropped.

A logarithmic axis cannot show 0, and matplotlib silently leaves such points out (or, when they were
clipped to 1e-300, squashes every other value into the top of the panel). The figures of this
package draw a value that is exactly 0 at a *floor* one decade below the smallest positive value on
the panel, as an open marker inside a grey band whose tick is labelled "0", so a reader sees where a quantity
is exactly zero (a symmetric network at initialisation, a dead ReLU network, an empty histogram bin).
"""

from __future__ import annotations

import math

import numpy as np
from matplotlib import ticker

__all__ = ["plot_with_zeros", "zero_band", "zero_floor"]


class _ZeroFormatter(ticker.LogFormatterSciNotation):
    """Log tick labels, with "0" at the tick that marks the zero band."""

    def __init__(self, floor: float):
        super().__init__()
        self._floor = floor

    def __call__(self, x, pos=None):
        if math.isclose(x, self._floor, rel_tol=1e-9):
            return "0"
        return super().__call__(x, pos)


def zero_floor(*arrays, decades_below: float = 1.0, default: float = 1e-1) -> float:
    """The height at which exact zeros are drawn: a power of ten ``decades_below`` decades under
    the smallest positive finite value of ``arrays`` (``default`` when none is positive)."""
    smallest = math.inf
    for a in arrays:
        a = np.asarray(a, dtype=float)
        pos = a[np.isfinite(a) & (a > 0)]
        if pos.size:
            smallest = min(smallest, float(pos.min()))
    if not math.isfinite(smallest):
        return float(default)
    return float(10.0 ** (math.floor(math.log10(smallest)) - decades_below))


def plot_with_zeros(ax, x, y, floor: float, *, zero_marker: str = "o", **kw):
    """Plot ``y`` against ``x`` on a log-``y`` axes, exact zeros drawn at ``floor`` as open markers.

    The line runs through the floor where ``y == 0`` (so a curve that starts at 0 visibly starts in
    the band). Negative values are not expected on a log axis and raise ``ValueError``.
    Returns the line.
    """
    y = np.asarray(y, dtype=float)
    if np.any(y < 0):
        raise ValueError("plot_with_zeros: y has negative values, which a log axis cannot show")
    shown = np.where(y > 0, y, floor)
    line = ax.plot(x, shown, **kw)[0]
    zero = y == 0
    if np.any(zero):
        ax.plot(np.asarray(x)[zero], np.full(int(zero.sum()), floor), zero_marker, ms=4, mfc="white",
                mec=line.get_color(), ls="none")
    return line


def zero_band(ax, floor: float, *arrays, top: float | None = None, axis: str = "y") -> bool:
    """Make ``ax``'s ``axis`` logarithmic; when any of ``arrays`` holds an exact 0 (or no arrays
    are given), extend it below ``floor`` (up to ``top`` if given), shade the band that holds the
    zeros and label its tick "0". Call it after plotting. Returns whether the band was drawn."""
    y = axis == "y"
    set_scale, get_lim, set_lim = (ax.set_yscale, ax.get_ylim, ax.set_ylim) if y else (ax.set_xscale, ax.get_xlim, ax.set_xlim)
    set_scale("log")
    if arrays and not any(np.any(np.asarray(a, dtype=float) == 0) for a in arrays):
        if top is not None:
            set_lim(get_lim()[0], top)
        return False
    hi = float(top) if top is not None else max(get_lim()[1], 100.0 * floor)
    span = math.log10(hi) - math.log10(floor)
    lo = floor / 10.0 ** max(0.5, 0.06 * span)  # the band stays visible on an axis of many decades
    set_lim(lo, hi)
    edge = floor * 10**0.5
    (ax.axhspan if y else ax.axvspan)(lo, edge, color="0.88", zorder=0, lw=0)
    ticks = [t for t in ticker.LogLocator(numticks=8).tick_values(edge, hi) if edge * 1.01 < t <= hi]
    target = ax.yaxis if y else ax.xaxis
    target.set_major_locator(ticker.FixedLocator([floor] + ticks))
    target.set_major_formatter(_ZeroFormatter(floor))
    target.set_minor_locator(ticker.NullLocator())
    return True
