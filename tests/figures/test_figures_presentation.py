"""What the figures of seeds 000, 002 and 004 show and write (figures.blumenfeld2020, grzejdziak2023,
orhan2017 and the zero band of figures._logzero), at the smoke size.

Each figure is rendered once (module-scoped fixture); the matplotlib Figure is captured on its way
into ``save_figure`` so the tests can read what a reader sees: titles, labels, plotted values,
axis limits and tick labels.
"""

import re

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.backends.backend_agg import FigureCanvasAgg
from meanfield.figures import blumenfeld2020 as B
from meanfield.figures import grzejdziak2023 as G
from meanfield.figures import load
from meanfield.figures import orhan2017 as O
from meanfield.figures.harness import plot_with_zeros, zero_band, zero_floor

#: Standard errors allowed between a closed form and a Monte-Carlo mean (normal tail ~7e-6).
Z = 4.5

#: Internal names that must not reach a reader: ConstNet parameter keys, seed-file numbers, the
#: LeakyNet shorthand of the old panel titles ("12 I", "9 I / 3 1").
JARGON = re.compile(r"block\d_\d|skip\d|branch\d|\bfirst\b|seed 00\d|\b\d+ [I1]\b|\bI / \d")

#: The figures rendered for these tests (one render each).
RENDERED = [
    (B, "fig_1"),
    (B, "fig_6"),
    (B, "fig_9"),
    (B, "table_correlations"),
    (O, "fig_6"),
    (G, "fig_spectral_radius"),
]


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """``{(module name, figure): (Figure, FigureData)}`` at the smoke size."""
    out = tmp_path_factory.mktemp("figures")
    result = {}
    mp = pytest.MonkeyPatch()
    try:
        for module, name in RENDERED:
            captured = []
            real = matplotlib.figure.Figure.savefig

            def capture(fig, *args, _real=real, _captured=captured, **kwargs):
                _captured.append(fig)
                return _real(fig, *args, **kwargs)

            # every figure is written by Figure.savefig inside save_figure (the one save path):
            # capture it there
            mp.setattr(matplotlib.figure.Figure, "savefig", capture)
            paths = module.FIGURES[name](out, size="smoke", rng=0)
            mp.undo()
            FigureCanvasAgg(captured[0])  # save_figure closed it: a fresh canvas to draw on again
            result[(module.PAPER, name)] = (captured[0], load(paths[1]))
    finally:
        mp.undo()
    return result


def _texts(fig):
    """Every string a reader sees: suptitle, titles, axis labels, legend entries, tick labels, texts, tables."""
    fig.canvas.draw()
    out = [fig._suptitle.get_text()] if fig._suptitle is not None else []
    for ax in fig.axes:
        out += [ax.get_title(loc) for loc in ("left", "center", "right")] + [ax.get_xlabel(), ax.get_ylabel()]
        out += [t.get_text() for t in ax.get_xticklabels() + ax.get_yticklabels() + ax.texts]
        if ax.get_legend() is not None:
            out += [t.get_text() for t in ax.get_legend().get_texts()]
        for table in ax.tables:
            out += [c.get_text().get_text() for c in table.get_celld().values()]
    for legend in fig.legends:
        out += [t.get_text() for t in legend.get_texts()]
    return [t for t in out if t]


def test_zero_band_draws_exact_zeros_at_a_tick_labelled_0():
    fig, ax = plt.subplots()
    y = np.array([0.0, 1e-12, 1e-3, 0.0, 1.0])
    floor = zero_floor(y)
    assert floor == 1e-13
    line = plot_with_zeros(ax, np.arange(5), y, floor)
    assert zero_band(ax, floor, y)
    fig.canvas.draw()
    lo, hi = ax.get_ylim()
    assert lo < floor < 1e-12 <= hi and ax.get_yscale() == "log"
    assert np.array_equal(line.get_ydata(), np.where(y > 0, y, floor))
    labels = {t.get_text(): t.get_position()[1] for t in ax.get_yticklabels()}
    assert labels["0"] == pytest.approx(floor)
    plt.close(fig)
    with pytest.raises(ValueError, match="negative"):
        plot_with_zeros(ax, [0, 1], [-1.0, 1.0], 1e-3)


def test_zero_band_is_not_drawn_without_zeros():
    fig, ax = plt.subplots()
    y = np.array([1e-5, 1.0])
    ax.plot([0, 1], y)
    assert not zero_band(ax, zero_floor(y), y)
    assert ax.get_yscale() == "log" and not ax.patches
    plt.close(fig)


@pytest.mark.slow
@pytest.mark.parametrize("key", RENDERED, ids=[f"{m.__name__.rsplit('.', 1)[-1]}.{n}" for m, n in RENDERED])
def test_json_is_self_describing_and_title_names_paper_and_figure(rendered, key):
    """The JSON had no version, seed, size, parameters, units or axis names; titles lacked the paper."""
    module, name = key
    fig, fd = rendered[(module.PAPER, name)]
    meta = fd.metadata
    assert meta["paper"] == module.PAPER and meta["figure"] == module.FIGURES[name].figure
    assert meta["version"] and meta["seed"] == 0 and meta["size"] == "smoke" and meta["full"] is False
    assert meta["params"] and meta["units"]
    for array_name, value in fd.data.items():
        if isinstance(value, np.ndarray) and value.ndim >= 2:
            assert len(fd.axes[array_name]) == value.ndim, array_name
    title = fig._suptitle.get_text() if fig._suptitle is not None else fig.axes[0].get_title()
    assert module.PAPER in title
    figure_words = module.FIGURES[name].figure
    assert (figure_words.split(" (")[0] in title) or ("not a figure of the paper" in title)


@pytest.mark.slow
@pytest.mark.parametrize("key", RENDERED, ids=[f"{m.__name__.rsplit('.', 1)[-1]}.{n}" for m, n in RENDERED])
def test_every_axes_with_data_is_labelled_and_free_of_jargon(rendered, key):
    module, name = key
    fig, _ = rendered[(module.PAPER, name)]
    for ax in fig.axes:
        if ax.lines or ax.collections:
            assert ax.get_xlabel() and ax.get_ylabel(), (name, ax.get_title())
    bad = [t for t in _texts(fig) if JARGON.search(t)]
    assert not bad, bad


@pytest.mark.parametrize("name", ["fig_6", "fig_9"])
def test_exact_zeros_on_log_axes_are_shown(rendered, name):
    """fig_9's step-1 ratios and fig_6's C_t of the skip convolutions are exactly 0; they were
    clipped to 1e-300 below the panel's limits (1e-20, 1e-30) and vanished."""
    fig, fd = rendered[(B.PAPER, name)]
    arrays = [fd["ratio"]] if name == "fig_9" else [fd["one_minus_C_f"], fd["one_minus_C_t"]]
    assert any(np.any(a == 0) for a in arrays)  # there are zeros to show
    zeros_drawn = 0
    for ax in fig.axes:
        if ax.get_yscale() != "log":
            continue
        lo, hi = ax.get_ylim()
        ticks = {t.get_text(): t.get_position()[1] for t in ax.get_yticklabels()}
        for line in ax.lines:
            if line.get_transform() != ax.transData:  # axvline / axhline: axes coordinates
                continue
            y = np.asarray(line.get_ydata(), dtype=float)
            y = y[np.isfinite(y)]
            assert np.all((y >= lo) & (y <= hi)), "a plotted point lies outside the panel"
            if "0" in ticks:
                zeros_drawn += int(np.sum(np.isclose(y, ticks["0"])))
    assert zeros_drawn > 0


def test_fig_1_json_holds_the_numbers_the_png_shows(rendered):
    """The PNG showed percent, the JSON fractions; both now hold percent, and say so."""
    fig, fd = rendered[(B.PAPER, "fig_1")]
    assert "percent" in fd.metadata["units"]["test_error"]
    assert fd.axes["test_error"] == ["regime", "lambda", "K"]
    for i, ax in enumerate(fig.axes):
        plotted = [np.asarray(c.lines[0].get_ydata()) for c in ax.containers]  # the errorbar data lines
        assert len(plotted) == fd["lambda"].size
        for j, y in enumerate(plotted):
            np.testing.assert_array_equal(y, fd["test_error"][i, j])
    assert np.all((fd["test_error"] >= 0) & (fd["test_error"] <= 100))


def test_table_correlations_labels_fit_and_standard_errors_are_given(rendered):
    fig, fd = rendered[(B.PAPER, "table_correlations")]
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    table = fig.axes[0].tables[0]
    for (row, col), cell in table.get_celld().items():
        if col == 0 and row > 0:
            assert cell.get_text().get_window_extent(renderer).width <= cell.get_window_extent(renderer).width, (
                cell.get_text().get_text()
            )
    random_rows = [i for i, how in enumerate(fd["measured_on"]) if how.startswith("mean of")]
    assert random_rows
    for i in range(len(fd["tensor"])):
        for which in ("c_f", "c_b"):
            se, measured, theory = fd[f"{which}_stderr"][i], fd[f"{which}_measured"][i], fd[f"{which}_theory"][i]
            if i in random_rows:
                assert se > 0 and abs(measured - theory) <= Z * se, (fd["tensor"][i], which)
            else:
                assert se == 0 and measured == pytest.approx(theory, abs=1e-12), (fd["tensor"][i], which)
    cells = [c.get_text().get_text() for c in table.get_celld().values()]
    assert sum("±" in c for c in cells) == 2 * len(random_rows)


def test_orhan_fig_6b_states_its_s_and_shows_the_hyper_residual_curve(rendered):
    """Panel (b) used s = 3 while (a) said s = 2, and the hyper-residual product, which reaches s
    before t = 1e-5, lay hidden under the target line on the drawn range."""
    fig, fd = rendered[(O.PAPER, "fig_6")]
    ax = fig.axes[3]
    assert f"$s$ = {fd['s_b']:g}" in ax.get_title() and fd["s_b"] != fd["s_a"]
    lo, hi = ax.get_xlim()
    hyper = next(line for line in ax.lines if line.get_label().startswith("hyper-residual"))
    t, y = np.asarray(hyper.get_xdata()), np.asarray(hyper.get_ydata())
    inside = (t >= lo) & (t <= hi)
    assert np.ptp(y[inside]) > 1.0  # it visibly descends to s
    assert abs(y[inside][-1] - fd["s_b"]) < 1e-6
    ylo, yhi = ax.get_ylim()
    assert ylo <= y.min() and y.max() <= yhi


@pytest.mark.parametrize(
    "func",
    list(B.FIGURES.values()) + list(O.FIGURES.values()) + [G.fig_spectral_radius],
    ids=lambda f: f"{f.__module__.rsplit('.', 1)[-1]}.{f.__name__}",
)
def test_cpu_only_figures_say_so_and_refuse_cupy(tmp_path, func):
    """The blumenfeld2020 figures ignored ``backend``; CPU-only figures now refuse 'cupy' before any work."""
    assert func.honours_backend is False
    with pytest.raises(ValueError, match="CPU only"):
        func(tmp_path, backend="cupy")
    assert not list(tmp_path.glob("*.png"))


@pytest.mark.slow
def test_fig_s1_biases_are_not_the_next_seeds_task_stream(tmp_path):
    """Fig. S1 drew its biases from seed + 1: the N(0, 1) numbers behind the task of seed 1."""
    fd = load(O.fig_s1(tmp_path, size="smoke", rng=0)[1])
    shape = fd["biases"].shape
    assert not np.allclose(fd["biases"], np.random.default_rng(1).standard_normal(shape))
    assert fd.axes["biases"] == ["layer", "unit"]
