"""The figure and validation registries and the console script."""

import pytest
from meanfield.figures.runner import all_figures
from meanfield.validation.report import Comparison, format_table
from meanfield.validation.runner import comparison_modules

from meanfield.cli import main


def test_registries_discover_modules():
    assert "dense" in comparison_modules()
    figs = all_figures()
    assert figs and all("." in k for k in figs)


def test_comparison_verdicts_and_table():
    ok = Comparison("a", 1.0, 1.1, 0.05)  # 2 standard errors off
    bad = Comparison("b", 1.0, 2.0, 0.05)
    nan = Comparison("c", 1.0, float("nan"), 0.05)
    assert ok.passed and not bad.passed and not nan.passed
    assert format_table("t", [ok, bad]).splitlines()[-1] == "t: 1 passed, 1 failed"


def test_one_sided_comparisons():
    # "at least 0.9": any estimate above passes, one more than z standard errors below fails
    assert Comparison("a", 0.9, 5.0, 0.01, side="above").passed
    assert Comparison("a", 0.9, 0.9 - 4.0 * 0.01, 0.01, side="above").passed
    assert not Comparison("a", 0.9, 0.9 - 5.0 * 0.01, 0.01, side="above").passed
    assert Comparison("b", 0.9, -5.0, 0.01, side="below").passed
    assert not Comparison("b", 0.9, 0.96, 0.01, side="below").passed
    with pytest.raises(ValueError, match="side"):
        Comparison("c", 0.0, 0.0, 0.0, side="left")


def test_cli_help_and_figure_list(capsys):
    assert main(["--help"]) == 0
    from meanfield.figures.runner import main as figures_main

    capsys.readouterr()
    assert figures_main(["--list"]) == 0
    out = capsys.readouterr().out
    assert "xiao2018.fig_s1" in out and "Xiao et al. 2018, Fig. S1" in out


def test_comparison_rejects_what_is_not_a_real_number():
    import numpy as np

    for bad in (1 + 2j, True, "1", np.array([1.0, 2.0])):
        with pytest.raises(TypeError, match="theory"):
            Comparison("a", bad, 1.0, 0.1)
    with pytest.raises(ValueError, match="stderr"):
        Comparison("a", 1.0, 1.0, -0.1)
    with pytest.raises(ValueError, match="z"):
        Comparison("a", 1.0, 1.0, 0.1, z=float("inf"))
    with pytest.raises(TypeError, match="name"):
        Comparison(3, 1.0, 1.0, 0.1)
    # a non-finite estimate is allowed on purpose: the row FAILs where a reader sees it
    assert Comparison("a", 1.0, float("inf"), 0.1).verdict == "FAIL"
    with pytest.raises(TypeError, match="rows"):
        format_table("t", ["not a row"])


def test_mean_and_stderr_checks_its_samples():
    import numpy as np
    from meanfield.validation.report import mean_and_stderr

    m, se = mean_and_stderr([1.0, 3.0])
    assert m == 2.0 and se == pytest.approx(1.0)
    with pytest.raises(ValueError, match="at least 2"):
        mean_and_stderr([1.0])
    with pytest.raises(ValueError, match="at least 2"):
        mean_and_stderr([])
    with pytest.raises(TypeError, match="real"):
        mean_and_stderr(np.array([1j, 2j]))
    with pytest.raises(TypeError, match="real"):
        mean_and_stderr([True, False])
    with pytest.raises(ValueError, match="axis"):
        mean_and_stderr(np.ones((3, 2)), axis=2)
    with pytest.raises(ValueError, match="axis"):
        mean_and_stderr(1.0)


def test_run_modules_checks_arguments_before_running(monkeypatch):
    from meanfield.cli import run_modules

    monkeypatch.setattr("meanfield.validation.runner.comparison_modules", lambda: ["dense"])
    monkeypatch.setattr("importlib.import_module", lambda name: pytest.fail(f"{name} imported"))
    cases = [
        (dict(names="dense"), TypeError, "names"),
        (dict(names=["nope"]), ValueError, "unknown"),
        (dict(names=["dense"], full=1), TypeError, "full"),
        (dict(names=["dense"], backend="jax"), ValueError, "backend"),
        (dict(names=["dense"], rng=-1), ValueError, "rng"),
        (dict(names=["dense"], rng=1.0), TypeError, "rng"),
    ]
    for kwargs, err, match in cases:
        with pytest.raises(err, match=match):
            run_modules(**kwargs)


def test_entry_points_reject_a_string_argv():
    from meanfield.figures.runner import main as figures_main

    from meanfield.cli import validate_main as validation_main

    for entry in (main, figures_main, validation_main):
        with pytest.raises(TypeError, match="argv"):
            entry("figures --all")


# --- regressions found by the public-API fuzzer (tests/fuzz/) ------------------------------------


def test_report_and_runner_check_their_arguments(tmp_path):
    import math

    import numpy as np
    from meanfield.validation.report import mean_and_stderr, write_table_json

    from meanfield.cli import check_backend_available

    for backend in ("no_such", None, 3):
        with pytest.raises((TypeError, ValueError), match="backend"):
            check_backend_available(backend)  # returned the value unchecked
    rows = [Comparison("a", 1.0, 1.01, 0.01)]
    kw = {"rng": 0, "full": False, "backend": "numpy", "seconds": 1.0}
    for name, bad in [("rng", 1.5), ("rng", None), ("full", 1), ("backend", "no_such"), ("seconds", math.nan)]:
        with pytest.raises((TypeError, ValueError), match=name):
            write_table_json(tmp_path / "t.json", "t", rows, **(kw | {name: bad}))
    with pytest.raises(TypeError, match="title"):
        write_table_json(tmp_path / "t.json", None, rows, **kw)
    # finite samples near the float64 limit: the squares overflowed to an infinite standard error
    samples = np.array([1.0, 2.0, 4.0]) * 1e300
    _, stderr = mean_and_stderr(samples)
    assert math.isfinite(stderr) and stderr == pytest.approx(
        np.std([1.0, 2.0, 4.0], ddof=1) / math.sqrt(3) * 1e300, rel=1e-12
    )
    with pytest.raises(ValueError, match="samples"):
        mean_and_stderr([[1.0, 2.0], [3.0]])


def test_fig1_variances_checks_its_arguments():
    import numpy as np
    from meanfield.validation.kurtosis import fig1_variances

    kw = {"n_networks": 2, "n_inputs": 4, "depth": 3, "n_metainit": 1, "metainit_steps": 2, "rng": 0}
    for name, bad in [
        ("full", 1),
        ("n_inputs", 1.5),
        ("n_inputs", 1),
        ("n_metainit", "a"),
        ("n_networks", np.array([2, 3])),
    ]:
        with pytest.raises((TypeError, ValueError), match=name):
            fig1_variances(**(kw | {name: bad}))
    with pytest.raises(ValueError, match="metainit_steps"):
        fig1_variances(**(kw | {"metainit_steps": 10**12}))


def test_figure_needing_a_missing_extra_is_skipped_not_failed(tmp_path, monkeypatch, capsys):
    import functools

    from meanfield.figures import runner

    registry = dict(runner.all_figures())
    real = registry["xiao2018.fig_4b"]

    @functools.wraps(real)
    def needs_torch(*args, **kwargs):
        raise ImportError(
            'the ensemble trainer needs PyTorch: install the torch extra (pip install "meanfield-theory[torch]")'
        )

    @functools.wraps(real)
    def broken(*args, **kwargs):
        raise ImportError("No module named 'something_else'")

    monkeypatch.setattr(runner, "all_figures", lambda: {**registry, "xiao2018.fig_4b": needs_torch})
    assert runner.run_figures(["xiao2018.fig_4b"], out=tmp_path, size="smoke") == []
    assert "skipped" in capsys.readouterr().err
    monkeypatch.setattr(runner, "all_figures", lambda: {**registry, "xiao2018.fig_4b": broken})
    with pytest.raises(ImportError, match="something_else"):  # an unrelated ImportError is a failure
        runner.run_figures(["xiao2018.fig_4b"], out=tmp_path, size="smoke")


def test_plumbing_moved_to_meanfield_cli_warns_from_the_old_path():
    import meanfield.validation.runner as runner

    import meanfield.cli as cli

    for old, new in (("run_modules", "run_modules"), ("main", "validate_main"), ("CliParser", "CliParser")):
        with pytest.warns(DeprecationWarning, match=f"meanfield.cli.{new}"):
            assert getattr(runner, old) is getattr(cli, new)
    with pytest.raises(AttributeError, match="no_such_name"):
        runner.no_such_name  # noqa: B018
    # what the comparison modules import from the runner is the plumbing of meanfield.cli, without a warning
    assert runner.progress is cli.progress and runner.check_run_arguments is cli.check_run_arguments
