"""The figure and validation registries and the console script."""

import pytest

from meanfield.figures._runner import all_figures
from meanfield.cli import main
from meanfield.validation._report import Comparison, format_table
from meanfield.validation._runner import comparison_modules


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
    from meanfield.figures._runner import main as figures_main

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

    from meanfield.validation._report import mean_and_stderr

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
    from meanfield.validation._runner import run_modules

    monkeypatch.setattr("meanfield.validation._runner.comparison_modules", lambda: ["dense"])
    monkeypatch.setattr("importlib.import_module", lambda name: pytest.fail(f"{name} imported"))
    cases = [
        (dict(names="dense"), TypeError, "names"),
        (dict(names=["nope"]), ValueError, "unknown"),
        (dict(names=["dense"], full=1), TypeError, "full"),
        (dict(names=["dense"], backend="jax"), ValueError, "backend"),
        (dict(names=["dense"], seed=-1), ValueError, "seed"),
        (dict(names=["dense"], seed=1.0), TypeError, "seed"),
    ]
    for kwargs, err, match in cases:
        with pytest.raises(err, match=match):
            run_modules(**kwargs)


def test_entry_points_reject_a_string_argv():
    from meanfield.figures._runner import main as figures_main
    from meanfield.validation._runner import main as validation_main

    for entry in (main, figures_main, validation_main):
        with pytest.raises(TypeError, match="argv"):
            entry("figures --all")
