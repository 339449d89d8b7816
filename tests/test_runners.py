"""The figure and validation registries and the console script."""

import subprocess
import sys

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


def test_cli_help_and_figure_list():
    assert main(["--help"]) == 0
    # the installed name, from a folder where no local ``figures`` package can shadow it
    out = subprocess.run([sys.executable, "-m", "meanfield.figures", "--list"], capture_output=True, text=True,
                         check=True, cwd="/").stdout
    assert "xiao2018.fig_s1" in out and "Xiao et al. 2018, Fig. S1" in out
