"""The ``meanfield`` command line: help, version, argument checks before any work, exit codes, and
what ``reproduce`` / ``validate --out`` write."""

from __future__ import annotations

import subprocess
import sys
import types

import meanfield.figures.runner as fig_runner
import meanfield.validation.runner as val_runner
import pytest
from meanfield.figures import load
from meanfield.figures.harness import figure, plt, save_figure
from meanfield.validation.report import Comparison

import meanfield
import meanfield.cli as cli
from meanfield.cli import main


def _has_cupy() -> bool:
    try:
        import cupy  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.fixture
def fake(monkeypatch):
    """A registry of three fake figures (one CPU-only, one failing) and a fake comparison module."""
    calls = []

    def make(name, honours_backend, fail=False):
        @figure(paper="Doe et al. 2020", figure=f"Fig. {name}", honours_backend=honours_backend)
        def fig(out_dir, *, size, backend, seed):
            """A fake figure."""
            calls.append((name, size, backend, seed))
            if fail:
                raise RuntimeError("boom\nsecond line")
            f, ax = plt.subplots()
            ax.plot([0, 1], [0, 1])
            return save_figure(
                f,
                out_dir,
                f"fake_{name}",
                {"x": [0, 1]},
                paper="Doe et al. 2020",
                figure=f"Fig. {name}",
                rng=seed,
                size=size,
                backend=backend,
                params={"n": 1},
            )

        return fig

    registry = {
        "fake.gpu": make("gpu", True),
        "fake.cpu": make("cpu", False),
        "other.bad": make("bad", True, fail=True),
    }
    monkeypatch.setattr(fig_runner, "all_figures", lambda: dict(registry))
    module = types.ModuleType("meanfield.validation.fakecmp")

    def run(backend="numpy", full=False, rng=0):
        calls.append(("validation", full, backend, rng))
        return [Comparison("q", 1.0, 1.0, 0.1), Comparison("c", 0.5, 0.5, 0.1)]

    module.run = run
    monkeypatch.setitem(sys.modules, "meanfield.validation.fakecmp", module)
    monkeypatch.setattr(val_runner, "comparison_modules", lambda: ["fakecmp"])
    monkeypatch.setenv("MEANFIELD_NO_PROGRESS", "1")
    return types.SimpleNamespace(calls=calls, registry=registry)


def _one_line_error(capsys, prog):
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(f"{prog}: error: ")
    return err[0]


def test_help_describes_subcommands_environment_and_version(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for word in ("reproduce", "figures", "validate", "MEANFIELD_NO_PROGRESS", "exit status"):
        assert word in out
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith(f"meanfield {meanfield.__version__}")
    assert main([]) == 2  # no command: the help on stderr, a usage error


def test_subcommand_usage_names_the_real_program(capsys):
    for command in ("figures", "validate", "reproduce"):
        assert main([command, "--help"]) == 0
        out = capsys.readouterr().out
        assert out.startswith(f"usage: meanfield {command}") and "python -m figures" not in out


@pytest.mark.slow
def test_python_m_entry_points_keep_working():
    """``python -m meanfield.figures`` / ``meanfield.validation`` (run from / so that no local folder
    named ``figures`` or ``validation`` can shadow the installed packages)."""
    for package in ("figures", "validation"):
        out = subprocess.run(
            [sys.executable, "-m", f"meanfield.{package}", "--help"],
            capture_output=True,
            text=True,
            check=True,
            cwd="/",
        ).stdout
        assert out.startswith(f"usage: python -m meanfield.{package}")


@pytest.mark.parametrize(
    "argv, message",
    [
        (["figures", "nope.fig"], "unknown figure 'nope.fig'"),
        (["figures", "fake", "--seed", "-1"], "--seed"),
        (["figures", "fake", "--seed", "1.5"], "--seed"),
        (["figures", "fake", "--size", "huge"], "--size"),
        (["figures", "fake", "--size", "smoke", "--full"], "contradicts"),
        (["figures"], "--all"),
        (["figures", "fake", "--backend", "tpu"], "--backend"),
        (["validate", "nope"], "unknown comparison module"),
        (["validate", "--seed", "-3"], "--seed"),
        (["validate", "--data-dir", "/no/such/folder"], "--data-dir"),
        (["figures", "fake", "--data-dir", "/no/such/folder"], "--data-dir"),
        (["reproduce", "--data-dir", "/no/such/folder"], "--data-dir"),
        (["reproduce", "--seed", "x"], "--seed"),
        (["bogus"], "invalid choice"),
    ],
)
def test_usage_errors_are_one_line_exit_2_and_do_no_work(argv, message, fake, capsys):
    assert main(argv) == 2
    assert message in _one_line_error(
        capsys, " ".join(["meanfield"] + argv[:1] if argv[0] != "bogus" else ["meanfield"])
    )
    assert fake.calls == []


@pytest.mark.parametrize("command", [["figures", "fake"], ["validate"], ["reproduce"]])
def test_unwritable_output_folder_is_refused_before_any_work(command, fake, tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(command + ["--out", str(blocker / "out")]) == 2
    assert "not writable" in _one_line_error(capsys, f"meanfield {command[0]}")
    assert fake.calls == []


@pytest.mark.skipif(_has_cupy(), reason="CuPy is installed here")
@pytest.mark.parametrize("command", [["figures", "fake"], ["validate"], ["reproduce"]])
def test_missing_cupy_is_refused_before_any_work(command, fake, tmp_path, capsys):
    assert main(command + ["--backend", "cupy", "--out", str(tmp_path)]) == 2
    assert "CuPy" in _one_line_error(capsys, f"meanfield {command[0]}")
    assert fake.calls == []


def test_cpu_only_figure_named_with_cupy_is_refused(fake, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(fig_runner, "check_backend", lambda backend, *a, **k: backend)  # as if CuPy were there
    assert main(["figures", "fake.cpu", "--backend", "cupy", "--out", str(tmp_path)]) == 2
    assert "CPU only" in _one_line_error(capsys, "meanfield figures")
    assert fake.calls == []


@pytest.mark.slow
def test_figures_run_cpu_only_ones_on_numpy_and_report_failures(fake, tmp_path, capsys):
    assert main(["figures", "fake", "--size", "smoke", "--seed", "4", "--out", str(tmp_path)]) == 0
    assert sorted(fake.calls) == [("cpu", "smoke", "numpy", 4), ("gpu", "smoke", "numpy", 4)]
    assert load(tmp_path / "fake_gpu.json").metadata["seed"] == 4
    fake.calls.clear()
    capsys.readouterr()
    # a failing figure: one line, the others still run, exit status 1
    assert main(["figures", "other", "fake.gpu", "--full", "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "other.bad: FAILED: RuntimeError: boom" in err and "second line" not in err
    assert ("gpu", "full", "numpy", 0) in fake.calls


def test_list_shows_papers_and_cpu_only(fake, capsys):
    assert main(["figures", "--list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert any(line.startswith("fake.cpu") and "CPU only" in line and "Doe et al. 2020" in line for line in out)
    assert any(line.startswith("fake.gpu") and "CPU only" not in line for line in out)


def test_reproduce_writes_figures_and_validation_tables(fake, tmp_path, monkeypatch, capsys):
    good = {k: v for k, v in fake.registry.items() if k != "other.bad"}
    monkeypatch.setattr(fig_runner, "all_figures", lambda: dict(good))
    assert main(["reproduce", "--out", str(tmp_path), "--size", "smoke", "--seed", "9"]) == 0
    assert (tmp_path / "figures" / "fake_gpu.png").exists() and (tmp_path / "figures" / "fake_cpu.json").exists()
    table = load(tmp_path / "validation" / "validation_fakecmp.json")
    assert table.metadata["kind"] == "validation" and table.metadata["seed"] == 9
    assert table.metadata["version"] == meanfield.__version__
    assert [r["name"] for r in table["rows"]] == ["q", "c"] and table["failed"] == 0
    assert ("validation", False, "numpy", 9) in fake.calls


def test_reproduce_goes_on_after_a_failed_figure_and_exits_1(fake, tmp_path, capsys):
    assert main(["reproduce", "--out", str(tmp_path), "--size", "smoke"]) == 1
    assert (tmp_path / "validation" / "validation_fakecmp.json").exists()
    assert "1 figure(s) failed: other.bad" in capsys.readouterr().err


def test_validate_out_writes_json_and_exit_status(fake, tmp_path, capsys):
    assert main(["validate", "--out", str(tmp_path), "--seed", "2"]) == 0
    assert load(tmp_path / "validation_fakecmp.json")["passed"] == 2
    assert "validation: 2 passed, 0 failed" in capsys.readouterr().out


def test_data_dir_is_exported_before_the_executor_starts(tmp_path, monkeypatch):
    """``--data-dir DIR`` sets $MEANFIELD_DATA_DIR (absolute) for the training figures and rows,
    before any worker process is started, so that local workers inherit it."""
    import argparse

    monkeypatch.delenv(cli.DATA_DIR_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mnist").mkdir()
    args = argparse.Namespace(data_dir="mnist", workers=None, scheduler=None)
    with cli.open_executor(args):
        import os

        assert os.environ[cli.DATA_DIR_ENV] == str(tmp_path / "mnist")


@pytest.mark.parametrize(
    "command",
    [
        ["-m", "meanfield.cli", "validate", "--list"],
        ["-m", "meanfield.cli", "figures", "--list"],
        ["-m", "meanfield.figures", "--list"],
        ["-m", "meanfield.validation", "--list"],
    ],
    ids=" ".join,
)
def test_a_reader_that_goes_away_ends_the_command_quietly(command, tmp_path):
    """``meanfield validate --list | head``: the pipe's reader is gone before the listing is written;
    the command stops with exit status 141 (128 + SIGPIPE) and no traceback."""
    proc = subprocess.Popen([sys.executable, *command], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    proc.stdout.close()  # no reader left: the listing's first write fails with EPIPE
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=120) == cli.CLOSED_PIPE_STATUS == 141
    assert "Traceback" not in err and "BrokenPipeError" not in err, err


def test_exit_on_closed_pipe_keeps_the_entry_point_and_its_status():
    calls = []

    @cli.exit_on_closed_pipe
    def entry(argv=None):
        """Doc."""
        calls.append(argv)
        return 3

    assert entry(["x"]) == 3 and calls == [["x"]] and entry.__doc__ == "Doc." and entry.__name__ == "entry"
