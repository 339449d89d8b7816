"""``meanfield audit`` exit codes: 0 ok, 1 a row failed, 2 usage error, 3 nothing could be checked.

Usage errors are found before the audit runs (``--out`` first), on one line of stderr; a model
function that calls ``sys.exit`` is an error, not a silent exit 0.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from meanfield.cli import main
from meanfield.pytorch.command import (
    EXIT_FAILED,
    EXIT_NOTHING_CHECKED,
    EXIT_OK,
    EXIT_USAGE,
    exit_status,
)

MODEL_FILE = """
import pathlib, sys
import torch

MARKER = pathlib.Path({marker!r})


class Weird(torch.nn.Module):
    # no end-to-end theory describes this layer
    def forward(self, x):
        return torch.sin(3 * x) * x


def unexplained():
    # deterministic (ConstNet) weights: no layer-local theory either, so nothing is checked
    from meanfield.pytorch import constnet_, tag_layers_

    MARKER.write_text("called")
    net = torch.nn.Sequential(Weird(), torch.nn.Linear(64, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))
    constnet_(net[1].weight)
    constnet_(net[3].weight)
    return tag_layers_(net)


def exits():
    sys.exit(0)


class ExitsInForward(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(64, 4)

    def forward(self, x):
        sys.exit(0)


def exits_in_forward():
    return ExitsInForward()
"""


@pytest.fixture
def model(tmp_path):
    marker = tmp_path / "called"
    path = tmp_path / "model.py"
    path.write_text(MODEL_FILE.format(marker=str(marker)))
    return path, marker


def _one_line_error(capsys, *words):
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in err
    for word in words:
        assert word in err, err
    return err


def test_exit_status_from_the_verdicts():
    assert exit_status(["ok", "no theory", "approximate"]) == EXIT_OK == 0
    assert exit_status(["approximate"]) == EXIT_OK
    assert exit_status(["ok", "FAIL", "no theory"]) == EXIT_FAILED == 1
    assert exit_status(["no theory", "FAIL"]) == EXIT_FAILED
    assert exit_status(["no theory"] * 8) == EXIT_NOTHING_CHECKED == 3
    assert exit_status([]) == EXIT_NOTHING_CHECKED
    assert EXIT_USAGE == 2


def test_out_an_existing_file_is_refused_before_the_model_is_built(tmp_path, model, capsys):
    path, marker = model
    existing = tmp_path / "results.txt"
    existing.write_text("keep me")
    assert main(["audit", f"{path}:unexplained", "--n-inits", "2", "--out", str(existing)]) == 2
    _one_line_error(capsys, str(existing), "not a folder")
    assert not marker.exists(), "the model function ran although --out was bad"
    assert existing.read_text() == "keep me"
    assert main(["audit", f"{path}:unexplained", "--n-inits", "2", "--out", str(existing / "sub")]) == 2
    _one_line_error(capsys, "--out")
    assert not marker.exists()


def test_an_output_path_taken_by_a_folder_is_refused_before_the_audit(tmp_path, model, capsys):
    path, _ = model
    out = tmp_path / "out"
    (out / "audit_unexplained.json").mkdir(parents=True)
    assert main(["audit", f"{path}:unexplained", "--n-inits", "2", "--out", str(out)]) == 2
    _one_line_error(capsys, "audit_unexplained.json", "not a file")


def test_nothing_checked_exits_3(tmp_path, model, capsys):
    path, _ = model
    out = tmp_path / "out"
    assert main(["audit", f"{path}:unexplained", "--n-inits", "2", "--out", str(out)]) == 3
    captured = capsys.readouterr()
    assert "no theory" in captured.out and "0 FAIL" in captured.out
    assert "nothing could be checked" in captured.err
    assert (out / "audit_unexplained.json").is_file()


@pytest.mark.parametrize(
    ("function", "words"), [("exits", ("exits()", "sys.exit(0)")), ("exits_in_forward", ("sys.exit(0)",))]
)
def test_sys_exit_in_the_users_model_is_an_error(tmp_path, model, capsys, function, words):
    path, _ = model
    assert main(["audit", f"{path}:{function}", "--n-inits", "2", "--out", str(tmp_path / "out")]) == 2
    _one_line_error(capsys, *words)


def test_sys_exit_while_importing_the_model_file_is_an_error(tmp_path, capsys):
    path = tmp_path / "exits_on_import.py"
    path.write_text("import sys\nsys.exit(0)\n")
    assert main(["audit", f"{path}:build_model", "--out", str(tmp_path / "out")]) == 2
    _one_line_error(capsys, "SystemExit")


def test_help_documents_the_exit_codes(capsys):
    assert main(["audit", "--help"]) == 0
    out = capsys.readouterr().out
    for line in ("0  every row", "1  at least one row FAILed", "2  usage error", "3  nothing could be checked"):
        assert line in out, out


def test_a_fifo_as_the_model_file_is_refused_without_blocking(tmp_path, capsys):
    import os

    if not hasattr(os, "mkfifo"):
        pytest.skip("no named pipes on this platform")
    fifo = tmp_path / "model.py"
    os.mkfifo(fifo)
    assert main(["audit", f"{fifo}:build_model", "--out", str(tmp_path / "out")]) == 2
    _one_line_error(capsys, "not a regular file")


def test_bad_inputs_are_refused_before_the_model_is_built(tmp_path, model, capsys):
    path, marker = model
    missing = tmp_path / "missing.npy"
    assert main(["audit", f"{path}:unexplained", "--inputs", str(missing), "--out", str(tmp_path / "out")]) == 2
    _one_line_error(capsys, "missing.npy")
    assert not marker.exists(), "the model function ran although --inputs was bad"
