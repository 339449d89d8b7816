"""Render every registered figure (all papers, found through the registry) at the smoke size and
check what a reader needs: a title naming the paper, labelled axes, no empty axes, no near-white
lines, and a JSON that reads back with its metadata."""

from __future__ import annotations

import re

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")
import matplotlib.figure
import matplotlib.pyplot as plt
from matplotlib.colors import to_rgba
from meanfield.figures import load
from meanfield.figures.runner import all_figures

REGISTRY = all_figures()

#: WCAG contrast ratio against white below which a thin data line is barely visible
#: (coolwarm's middle grey, the invisible sigma_w2 = 2.62 curve of the old fig_s2, has 1.36).
MIN_CONTRAST_WITH_WHITE = 1.5


def _luminance(rgb) -> float:
    lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]


def _contrast_with_white(color) -> float:
    r, g, b, a = to_rgba(color)
    # a translucent line over white: blend first
    rgb = [a * c + (1 - a) for c in (r, g, b)]
    return 1.05 / (_luminance(rgb) + 0.05)


def _has_data(ax) -> bool:
    lines = [ln for ln in ax.get_lines() if len(np.atleast_1d(ln.get_xdata())) > 0]
    return bool(lines or ax.collections or ax.images or ax.patches or ax.tables or ax.containers)


@pytest.fixture
def captured(monkeypatch):
    """Figures as they are saved (``Figure.savefig`` records them; ``plt.close`` is delayed)."""
    figs = []
    original = matplotlib.figure.Figure.savefig

    def savefig(self, *args, **kwargs):
        figs.append(self)
        return original(self, *args, **kwargs)

    real_close = plt.close
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", savefig)
    monkeypatch.setattr(plt, "close", lambda *a, **k: None)
    yield figs
    real_close("all")


def _texts(fig) -> list[str]:
    out = [fig._suptitle.get_text()] if fig._suptitle is not None else []
    out += [ax.get_title(loc) for ax in fig.axes for loc in ("center", "left", "right")]
    return out


@pytest.mark.slow
@pytest.mark.parametrize("key", sorted(REGISTRY))
def test_figure_renders_for_a_reader(key, tmp_path, captured):
    func = REGISTRY[key]
    assert hasattr(func, "sizes"), f"{key} is not declared with @figure (no smoke size, paper or backend declaration)"
    paths = func(tmp_path, size="smoke", rng=0)
    assert [p.suffix for p in paths] == [".png", ".json"] and all(p.stat().st_size > 0 for p in paths)
    assert len(captured) == 1, f"{key} saved {len(captured)} figures"
    fig = captured[0]

    # the title names the paper (and the figure)
    texts = " | ".join(_texts(fig))
    assert func.paper in texts, f"{key}: no title names {func.paper!r} (titles: {texts!r})"
    label = re.search(r"(Fig\.|Table)\s*S?\d+[a-z]?", func.figure)  # a figure of the paper: its number
    if label:
        assert label.group(0) in texts, f"{key}: no title names {label.group(0)!r} (declared {func.figure!r})"
    for jargon in ("seed 0", "block1_0", "12 I"):
        assert jargon not in texts, f"{key}: internal jargon {jargon!r} in a title"

    for i, ax in enumerate(fig.axes):
        where = f"{key}, axes {i}"
        if not ax.axison:  # e.g. a table: must still show something
            assert ax.tables or ax.texts, f"{where} is invisible and empty"
            continue
        assert _has_data(ax), f"{where} is empty"
        if hasattr(ax, "_colorbar"):
            assert ax.get_ylabel() or ax.get_xlabel(), f"{where}: colour bar without a label"
            continue
        assert ax.get_xlabel().strip(), f"{where}: no x label"
        assert ax.get_ylabel().strip(), f"{where}: no y label"
        for line in ax.get_lines():
            # labelled data lines (those a legend names, as the invisible curves of the issue were);
            # unlabelled decorations such as a white separator are not data
            if len(np.atleast_1d(line.get_xdata())) == 0 or not line.get_visible() or line.get_label().startswith("_"):
                continue
            for color in (line.get_color(), line.get_markerfacecolor(), line.get_markeredgecolor()):
                if isinstance(color, str) and color == "none":
                    continue
                # lines drawn over an image or a mesh may be white: only lines on white axes count
                if ax.images or any(type(c).__name__ == "QuadMesh" for c in ax.collections):
                    continue
                assert _contrast_with_white(color) >= MIN_CONTRAST_WITH_WHITE, (
                    f"{where}: line {line.get_label()!r} has a near-white colour {to_rgba(color)}"
                )

    # the JSON reads back with the metadata of the run
    back = load(paths[1])
    meta = back.metadata
    assert meta["paper"] == func.paper and meta["figure"] == func.figure
    assert meta["size"] == "smoke" and meta["full"] is False and meta["seed"] == 0
    assert meta["backend"] == "numpy" and meta["params"], f"{key}: no parameters recorded"
    # a parameter recorded as an object's default repr ("<function ... at 0x...>") describes nothing
    # and differs between runs of the same seed
    assert not re.search(r" at 0x[0-9a-f]+>", paths[1].read_text()), f"{key}: an object address in the JSON"
    for name, value in back.data.items():
        if isinstance(value, np.ndarray) and value.ndim >= 2:
            assert len(back.axes.get(name, [])) == value.ndim, f"{key}: axes of {name!r} not named"


def test_every_declared_figure_says_whether_it_honours_the_backend():
    assert len(REGISTRY) >= 27  # every figure of the five papers
    for key, func in REGISTRY.items():
        assert isinstance(func.honours_backend, bool), key
        assert ("CPU only" in func.__doc__) != func.honours_backend, key
