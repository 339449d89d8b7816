"""meanfield.compare: checks and claims, the verdict rule, and what the runners do with them."""

import json
import sys
import types

import pytest
from meanfield.validation import report, runner

import meanfield.cli as cli
from meanfield.compare import Z_DEFAULT, Comparison, passes


def test_one_rule_and_one_constant():
    assert report.Comparison is Comparison and report.Z_DEFAULT == Z_DEFAULT == 4.5
    # |estimate - theory| against z * stderr + systematic, on each side
    assert passes(1.0, 1.0 + 4.4 * 0.1, 0.1) and not passes(1.0, 1.0 + 4.6 * 0.1, 0.1)
    assert passes(1.0, 0.0, 0.1, side="below") and not passes(1.0, 0.0, 0.1, side="above")
    assert passes(1.0, 1.0 + 4.6 * 0.1, 0.1, side="differs") and not passes(1.0, 1.0 + 4.4 * 0.1, 0.1, side="differs")
    assert not passes(1.0, float("nan"), 0.1, side="differs")  # a non-finite row never passes
    with pytest.raises(ValueError, match="side"):
        passes(1.0, 1.0, 0.1, side="either")
    with pytest.raises(TypeError, match="estimate"):
        passes(1.0, "1", 0.1)
    with pytest.raises(ValueError, match="stderr"):
        passes(1.0, 1.0, -0.1)


def test_the_audit_uses_the_same_rule_and_constant():
    pytest.importorskip("torch")
    import importlib

    audit = importlib.import_module("meanfield.pytorch.audit")

    assert audit.Z == Z_DEFAULT
    for measured in (1.0, 1.44, 1.46, float("inf")):
        expect = "ok" if Comparison("x", 1.0, measured, 0.1).passed else "FAIL"
        assert audit.verdict(measured, 0.1, 1.0, 0.0) == expect


#: Agreement of two float64 evaluations of the same Student-t quantile (scipy.special against
#: scipy.stats, both ~1e-15 relative; a looser bound than that catches only a different rule).
QUANTILE_RTOL = 1e-9


def test_student_z_is_the_t_quantile_of_the_normal_level():
    from scipy import stats

    from meanfield.compare import STUDENT_Z_LARGE, student_z

    for n in (2, 6, 10, 20, STUDENT_Z_LARGE - 1):
        expect = stats.t.isf(stats.norm.sf(Z_DEFAULT), n - 1)
        assert student_z(n) == pytest.approx(expect, rel=QUANTILE_RTOL), n
    assert student_z(6) > student_z(10) > student_z(20) > Z_DEFAULT  # fewer samples, wider
    assert student_z(STUDENT_Z_LARGE) == student_z(10**6) == Z_DEFAULT
    assert student_z(10, z=2.0) == pytest.approx(stats.t.isf(stats.norm.sf(2.0), 9), rel=QUANTILE_RTOL)
    with pytest.raises(ValueError, match="n_samples"):
        student_z(1)
    with pytest.raises(ValueError, match="z"):
        student_z(10, z=-1.0)
    with pytest.raises(ValueError, match="z"):
        student_z(10, z=1e300)


def test_the_audit_z_rule_is_the_library_student_z():
    pytest.importorskip("torch")
    import importlib

    from meanfield.compare import student_z

    audit = importlib.import_module("meanfield.pytorch.audit")
    for n in (2, 6, 20, 199, 200, 1000):
        assert audit.z_for(n) == student_z(n), n


def test_claims_are_reported_and_never_fail():
    check = Comparison("c", 0.0, 1.0, 0.1)
    claim = Comparison("p", 0.0, 1.0, 0.1, kind="claim", note="evidence")
    assert check.verdict == "FAIL" and check.failed
    assert claim.verdict == "not reproduced" and not claim.failed and not claim.passed
    assert Comparison("p", 0.0, 0.0, 0.1, kind="claim").verdict == "reproduced"
    with pytest.raises(ValueError, match="kind"):
        Comparison("x", 0.0, 0.0, 0.1, kind="belief")
    table = report.format_table("t", [check, claim])
    assert "not reproduced" in table and table.endswith("t: 0 passed, 1 failed; claims: 0 reproduced, 1 not reproduced")
    assert report.not_reproduced([check, claim]) == [claim]


def _fake_module(monkeypatch, rows):
    mod = types.ModuleType("meanfield.validation.fake_claims")
    mod.run = lambda backend="numpy", full=False, rng=0: list(rows)
    monkeypatch.setitem(sys.modules, "meanfield.validation.fake_claims", mod)
    monkeypatch.setattr(runner, "comparison_modules", lambda: ["fake_claims"])
    return mod


@pytest.mark.parametrize("failing_check", [False, True])
def test_exit_status_counts_checks_and_the_summary_lists_claims(monkeypatch, tmp_path, capsys, failing_check):
    rows = [
        Comparison("a check", 1.0, 1.0, 0.1),
        Comparison("a claim of the paper", 3.0, -1.2, 0.0, side="above", kind="claim", note="no LeakyNet trains"),
    ]
    if failing_check:
        rows.append(Comparison("a broken check", 1.0, 9.0, 0.1))
    mod = _fake_module(monkeypatch, rows)
    ok = cli.run_modules(["fake_claims"], out=tmp_path)
    out = capsys.readouterr().out
    assert ok is (not failing_check)
    assert "claims not reproduced at this size" in out and "a claim of the paper" in out and "no LeakyNet" in out
    data = json.loads((tmp_path / "validation_fake_claims.json").read_text())["data"]
    assert data["failed"] == int(failing_check) and data["claims_not_reproduced"] == 1
    assert [r["kind"] for r in data["rows"]][:2] == ["check", "claim"]
    assert data["rows"][1]["verdict"] == "not reproduced"
    assert runner.main_for(mod.run, "meanfield.validation.fake_claims", argv=[]) == int(failing_check)
