"""What every figure writes: the metadata block, named axes, units, the loader, and the checks of the
common figure arguments (size, full, backend, seed, out_dir)."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest
from meanfield.figures import FigureData, load
from meanfield.figures.harness import by_size, check_seed, check_size, figure, plt, save_figure, streams
from meanfield.validation.report import Comparison, write_table_json

import meanfield
from meanfield.cli import check_out_dir


def _figure():
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 2])
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    return fig


def test_save_and_load_round_trip(tmp_path):
    grid = np.arange(12.0).reshape(3, 4)
    data = {"grid": grid, "edges": np.array([0.0, np.inf, -np.inf]), "count": 3, "nested": {"a": np.arange(2)}}
    paths = save_figure(
        _figure(),
        tmp_path,
        "demo",
        data,
        paper="Doe et al. 2020",
        figure="Fig. 7",
        rng=5,
        size="smoke",
        backend="numpy",
        params={"sigma_w2": 1.5, "activation": "tanh"},
        axes={"grid": ["sigma_w2", "sigma_b2"]},
        units={"grid": "percent"},
        notes="n",
    )
    assert [p.name for p in paths] == ["demo.png", "demo.json"]
    back = load(paths[1])
    assert isinstance(back, FigureData)
    assert np.array_equal(back["grid"], grid) and back.axes == {"grid": ["sigma_w2", "sigma_b2"]}
    assert back["edges"][0] == 0.0 and back["edges"][1] == math.inf and back["edges"][2] == -math.inf
    assert back["count"] == 3 and np.array_equal(back["nested"]["a"], [0, 1])
    meta = back.metadata
    assert meta["library"] == "meanfield" and meta["version"] == meanfield.__version__
    assert meta["paper"] == "Doe et al. 2020" and meta["figure"] == "Fig. 7" and meta["name"] == "demo"
    assert meta["seed"] == 5 and meta["size"] == "smoke" and meta["full"] is False and meta["backend"] == "numpy"
    assert meta["params"] == {"sigma_w2": 1.5, "activation": "tanh"} and meta["units"] == {"grid": "percent"}
    assert "commit" in meta and "created" in meta and meta["kind"] == "figure"
    assert load(paths[0]).metadata == meta  # the PNG's path reads the JSON beside it


def _fields(meta):
    return meta["paper"], meta["figure"], meta["seed"], meta["size"], meta["full"], meta["backend"]


def test_save_figure_records_the_figure_call_in_progress(tmp_path):
    """Inside a declared figure the arguments save_figure is not given are that call's; given ones win."""
    pytest.importorskip("array_api_strict")

    @figure(paper="Doe et al. 2020", figure="Fig. 8", honours_backend=True, module="_save_context_test_paper")
    def fig_8(out_dir, *, size, backend, seed):
        inherited = save_figure(_figure(), out_dir, "doe_fig_8", {"x": [0, 1]})
        told = save_figure(
            _figure(),
            out_dir,
            "doe_fig_8_told",
            {"x": [0, 1]},
            paper="Roe et al. 2021",
            figure="Fig. 2",
            rng=7,
            size="full",
            backend="numpy",
        )
        return inherited + told

    paths = fig_8(tmp_path, size="smoke", backend="array_api_strict", rng=3)
    assert _fields(load(paths[1]).metadata) == ("Doe et al. 2020", "Fig. 8", 3, "smoke", False, "array_api_strict")
    assert _fields(load(paths[3]).metadata) == ("Roe et al. 2021", "Fig. 2", 7, "full", True, "numpy")
    with pytest.raises(TypeError, match="paper"):  # the call is over: nothing is inherited
        save_figure(_figure(), tmp_path, "after_the_call", {"x": [0, 1]})


def test_paper_is_required(tmp_path):
    with pytest.raises(TypeError, match="paper"):
        save_figure(_figure(), tmp_path, "legacy", {"x": [1, 2]})
    with pytest.raises(TypeError, match="paper"):
        save_figure(_figure(), tmp_path, "legacy", {"x": [1, 2]}, paper=None)
    assert not list(tmp_path.iterdir())


def test_arrays_of_two_or_more_dimensions_need_axis_names(tmp_path):
    with pytest.raises(ValueError, match="axes"):
        save_figure(_figure(), tmp_path, "bad", {"grid": np.zeros((2, 3))}, paper="Doe et al. 2020", figure="Fig. 1")
    assert not (tmp_path / "bad.json").exists() and not (tmp_path / "bad.png").exists()


def test_load_rejects_what_is_not_a_figure_json(tmp_path):
    (tmp_path / "x.json").write_text("{]")
    (tmp_path / "y.json").write_text(json.dumps({"a": 1}))
    for name in ("x.json", "y.json", "missing.json"):
        with pytest.raises(ValueError, match="path"):
            load(tmp_path / name)
    for bad in (3, None, b"x.json"):
        with pytest.raises(TypeError, match="path"):
            load(bad)


def test_validation_table_json_round_trip(tmp_path):
    rows = [Comparison("q^5", 1.0, 1.01, 0.01), Comparison("c^5", 0.5, 0.9, 0.01, note="why")]
    path = write_table_json(
        tmp_path / "validation_demo.json", "validation.demo", rows, rng=3, full=False, backend="numpy", seconds=1.5
    )
    back = load(path)
    assert back.metadata["kind"] == "validation" and back.metadata["seed"] == 3
    assert back.metadata["version"] == meanfield.__version__ and back.metadata["full"] is False
    assert back.axes == {"rows": ["comparison"]}
    assert back["passed"] == 1 and back["failed"] == 1
    first, second = back["rows"]
    assert first["name"] == "q^5" and first["passed"] is True and first["tolerance"] == pytest.approx(0.045)
    assert second["passed"] is False and second["note"] == "why"


def test_size_and_full_alias():
    assert check_size() == "default" and check_size("smoke") == "smoke"
    assert check_size(full=True) == "full" and check_size(full=False) == "default"
    assert check_size("full", full=True) == "full" and check_size("smoke", full=False) == "smoke"
    assert check_size(full=np.bool_(True)) == "full"
    with pytest.raises(ValueError, match="size"):
        check_size("huge")
    with pytest.raises(ValueError, match="contradicts"):
        check_size("smoke", full=True)
    for bad in (1, None, 1.0, "True"):
        if bad is None:
            continue
        with pytest.raises(TypeError, match="full"):
            check_size(full=bad)
    with pytest.raises(TypeError, match="size"):
        check_size(3)
    assert by_size("smoke", smoke=1, default=2, full=3) == 1


def test_seed_rule():
    assert check_seed(0) == 0 and check_seed(np.int64(7)) == 7
    for bad, err in (
        (True, TypeError),
        (1.0, TypeError),
        ("1", TypeError),
        (None, TypeError),
        (-1, ValueError),
        (1 + 0j, TypeError),
    ):
        with pytest.raises(err, match="seed"):
            check_seed(bad)


def test_streams_are_spawned_not_seed_arithmetic():
    a = streams(4, 3)
    expected = [np.random.default_rng(s) for s in np.random.SeedSequence(4).spawn(3)]
    assert all(x.random() == y.random() for x, y in zip(a, expected))
    # stream k of seed s is not stream 0 of seed s + k (what seed + k used to give)
    assert streams(4, 2)[1].random() != streams(5, 1)[0].random()


def test_out_dir_is_checked_before_any_work(tmp_path):
    made = check_out_dir(tmp_path / "a" / "b")
    assert made.is_dir() and not list(made.iterdir())  # the test file is removed again
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(ValueError, match="not writable"):
        check_out_dir(blocker / "sub")
    with pytest.raises(TypeError, match="out_dir"):
        check_out_dir(3)
    with pytest.raises(ValueError, match="out_dir"):
        check_out_dir("")
    if os.geteuid() != 0:  # root may write anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        with pytest.raises(ValueError, match="not writable"):
            check_out_dir(locked)


def test_declared_figure_checks_every_argument_before_work(tmp_path):
    calls = []

    @figure(paper="Doe et al. 2020", figure="Fig. 1", honours_backend=False)
    def fig_demo(out_dir, *, size, backend, seed):
        """Demo."""
        calls.append((out_dir, size, backend, seed))
        return []

    assert fig_demo.paper == "Doe et al. 2020" and fig_demo.honours_backend is False
    assert "CPU only" in fig_demo.__doc__ and "Parameters" in fig_demo.__doc__
    fig_demo(tmp_path, full=True)
    fig_demo(str(tmp_path), size="smoke", rng=np.int64(3))
    assert calls == [(tmp_path, "full", "numpy", 0), (tmp_path, "smoke", "numpy", 3)]
    blocker = tmp_path / "file"
    blocker.write_text("")
    bad_calls = [
        (dict(backend="cupy"), ValueError, "CPU only"),
        (dict(backend="jax"), ValueError, "backend"),
        (dict(backend=None), TypeError, "backend"),
        (dict(rng=-1), ValueError, "rng"),
        (dict(rng=True), TypeError, "rng"),
        (dict(size="tiny"), ValueError, "size"),
        (dict(full=1), TypeError, "full"),
    ]
    for kwargs, err, match in bad_calls:
        with pytest.raises(err, match=match):
            fig_demo(tmp_path, **kwargs)
    with pytest.raises(ValueError, match="not writable"):
        fig_demo(blocker / "sub")
    assert len(calls) == 2


def test_cpu_only_figures_refuse_cupy_and_gpu_ones_need_cupy(tmp_path):
    from meanfield.figures import xiao2018

    with pytest.raises(ValueError, match="CPU only"):
        xiao2018.fig_4b(tmp_path, backend="cupy")
    try:
        import cupy  # noqa: F401
    except ImportError:
        with pytest.raises(ValueError, match="CuPy"):
            xiao2018.fig_s4(tmp_path, backend="cupy")
    assert not list(tmp_path.iterdir())


def test_fig_s4_json_is_self_describing(tmp_path):
    """The issue's example: fig_s4.json lacked the activation, sigma_w2, sigma_b2, v and n."""
    from meanfield.figures import xiao2018
    from meanfield.validation.conv import fig_s4_setup

    back = load(xiao2018.fig_s4(tmp_path, size="smoke", rng=2)[1])
    setup = fig_s4_setup()
    params = back.metadata["params"]
    assert params["activation"] == "erf" and params["n"] == 10
    assert params["sigma_w2"] == pytest.approx(2.25) and params["sigma_b2"] == pytest.approx(0.25)
    assert np.allclose(params["v"], setup["v"])
    assert back.metadata["seed"] == 2 and back.metadata["figure"] == "Fig. S4"
    depth = params["depth"]
    assert back["monte_carlo"].shape == (depth + 1, 10) and back.axes["monte_carlo"] == ["layer", "Fourier mode m"]
    assert np.all(back["monte_carlo_stderr"] > 0)


@pytest.mark.slow
def test_fig_s1_names_the_axes_of_its_grids(tmp_path):
    """The issue's example: 48 x 32 arrays with no names."""
    from meanfield.figures import xiao2018

    back = load(xiao2018.fig_s1(tmp_path, size="smoke")[1])
    assert back.axes["q_star"] == ["sigma_w2", "sigma_b2"]
    assert back["q_star"].shape == (back["sigma_w2"].size, back["sigma_b2"].size)
    assert back.metadata["params"]["activation"] == "tanh"


@pytest.mark.slow
def test_same_seed_same_figure_numbers(tmp_path):
    from meanfield.figures import xiao2018

    a, b, c = (load(xiao2018.fig_s3(tmp_path / str(k), size="smoke", rng=s)[1]) for k, s in enumerate((1, 1, 2)))
    assert np.array_equal(a["conv_density"], b["conv_density"])
    assert not np.array_equal(a["conv_density"], c["conv_density"])


@pytest.mark.slow
def test_show_figure_renders_png_and_rejects_non_figures(tmp_path):
    import matplotlib.pyplot as plt
    from meanfield.figures import orhan2017
    from meanfield.figures.harness import show_figure

    files = show_figure(orhan2017.fig_4, tmp_path)
    assert files[0].suffix == ".png" and files[0].exists()
    assert plt.gca().images, "the PNG is drawn on the current axes"
    plt.close("all")
    with pytest.raises(TypeError, match="func"):
        show_figure(print)


def test_figures_and_validation_write_and_read_through_meanfield_io(tmp_path):
    """One writer and one reader: the figures' loader is the library's, and a result written with
    meanfield.io.write_json round-trips through meanfield.figures.load."""
    import meanfield.figures
    import numpy as np

    import meanfield.io

    assert meanfield.figures.load is meanfield.io.load and meanfield.figures.FigureData is meanfield.io.FigureData
    meta = meanfield.io.run_metadata(kind="figure", name="t", seed=3)
    assert list(meta)[:5] == ["library", "version", "commit", "modified", "created"] and meta["seed"] == 3
    path = meanfield.io.write_json(
        tmp_path / "t.json", meta, {"m": np.eye(2), "x": [1.0, float("inf")]}, {"m": ["i", "j"]}
    )
    back = meanfield.figures.load(path)
    assert back.metadata["name"] == "t" and back.axes == {"m": ["i", "j"]}
    assert np.array_equal(back["m"], np.eye(2)) and back["x"][1] == np.inf
    with pytest.raises(ValueError, match="axes"):
        meanfield.io.write_json(tmp_path / "u.json", meta, {"m": np.eye(2)})
    with pytest.raises(TypeError, match="data"):
        meanfield.io.write_json(tmp_path / "u.json", meta, [1, 2])
