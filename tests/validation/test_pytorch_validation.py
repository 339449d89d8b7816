"""validation.audit in the main job: skipped with a notice (not failed) when the torch extra is missing."""

from __future__ import annotations

import meanfield.validation.audit as val_audit
from meanfield.validation.runner import comparison_modules

from meanfield.cli import run_modules


def test_audit_is_a_comparison_module():
    assert "audit" in comparison_modules()


def test_a_missing_extra_is_said_and_skipped(monkeypatch, capsys):
    monkeypatch.setattr(val_audit, "unavailable", lambda: "needs the torch extra: skipped")

    def run(**kwargs):
        raise AssertionError("must not run")

    run.__module__ = val_audit.__name__
    monkeypatch.setattr(val_audit, "run", run)
    assert run_modules(["audit"]) is True
    out = capsys.readouterr()
    assert "validation.audit: needs the torch extra: skipped" in out.out + out.err
    assert val_audit.main_for(val_audit.run, "meanfield.validation.audit", []) == 0
