"""Fuzz test of the public API: every public function returns finite, documented values or raises
ValueError / TypeError naming the argument, within a time bound.

The harness, the table of baseline calls and the catalogue of values live in ``tests/fuzz/``
(see its ``__init__``). ``test_public_api_fuzz[MODULE]`` changes each argument of each baseline
call in turn to each value of the catalogue of its kind. By default it runs the fast subset of the
catalogue (about 8,100 calls of 263 functions, tens of seconds of wall time on two cores with a
warm Numba cache); ``MEANFIELD_FUZZ_FULL=1`` runs every value (about 13,000 calls). Every hang costs the per-call timeout; the first run on a cold cache compiles during
the baseline calls, which have a 300 s timeout.

Environment:

``MEANFIELD_FUZZ_REPORT=FILE``
    also write the report of the calls that failed, grouped by module;
``MEANFIELD_FUZZ_FULL=1``
    the whole catalogue (what the lead runs after a merge; ``python tests/fuzz/run.py`` does the same);
``MEANFIELD_FUZZ_FAST=1``
    the fast subset even when ``MEANFIELD_FUZZ_FULL`` is set;
``MEANFIELD_FUZZ_TIMEOUT`` (20), ``MEANFIELD_FUZZ_WORKERS`` (CPU count, at most 2),
``MEANFIELD_FUZZ_MEMORY_GB`` (4)
    the per-call timeout in seconds, the number of worker processes, their address-space limit.

Outside pytest: ``python tests/fuzz/run.py [--fast] [--module dense] [--only NAME] [--report FILE]``.
"""

from __future__ import annotations

import inspect
import math
import os
import sys
import tempfile

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/, which holds fuzz/

from fuzz import api, catalogue, harness, registry
from fuzz.catalogue import RAISE, TYPE

MODULES = sorted({e.module for e in registry.REGISTRY})
#: lines of BAD calls shown in an assertion message (the report has them all)
SHOWN = 80


# ---------------------------------------------------------------------------------------------
# the registry covers the public API


def _public_callables() -> dict:
    return api.public_callables()


def _template(name, func) -> str:
    """A row to start from: every parameter with its default (choose kinds and small values)."""
    try:
        params = inspect.signature(func).parameters.values()
    except (TypeError, ValueError):
        return f'    E("{name}", ...),'
    args = ", ".join(
        f"{p.name}=?({p.default!r})" if p.default is not p.empty else f"{p.name}=?(...)"
        for p in params
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    )
    return f'    E("{name}", {args}),'


def test_registry_covers_every_public_callable():
    public = _public_callables()
    fuzzed = {e.name for e in registry.REGISTRY}
    missing = sorted(set(public) - fuzzed - set(registry.NOT_FUZZED))
    assert not missing, (
        f"public callables without a baseline call in tests/fuzz/registry.py: {missing}.\n"
        "Add one E(...) row per function to REGISTRY in tests/fuzz/registry.py: a small, fast, valid call "
        "with every parameter given by keyword and wrapped in its kind (F float, I int, A array, B bool, "
        "R rng, ACT activation, CH choice, BK backend, SH shape, IS int sequence, ... -- see the module "
        "docstring), or a NOT_FUZZED entry saying why it is not fuzzed (result containers, CLI plumbing); "
        "then run `python tests/fuzz/run.py --only NAME`. Templates to fill in:\n"
        + "\n".join(_template(name, public[name]) for name in missing)
    )
    stale = sorted(n for n in registry.NOT_FUZZED if n not in public)
    assert not stale, f"NOT_FUZZED names that are not public callables: {stale}"
    classes = {n.rsplit(".", 1)[0] for n in fuzzed if n.rsplit(".", 1)[0] in public}
    stale_rows = sorted(n for n in fuzzed if n not in public and n.rsplit(".", 1)[0] not in classes)
    assert not stale_rows, f"registry rows that are not public callables (renamed or removed?): {stale_rows}"
    assert len(fuzzed) == len(registry.REGISTRY), "a function has two rows"
    for name in fuzzed:
        assert callable(harness.resolve(name)), name
    # the classmethod constructors of public classes that users call are fuzzed too
    assert "activations.Activation.from_functions" in fuzzed


def test_registry_gives_every_parameter_a_baseline_value():
    problems = []
    for entry in registry.REGISTRY + registry.SELFTEST_REGISTRY:
        func = harness.resolve(entry.name)
        params = inspect.signature(func).parameters
        given = {harness.parameter_name(func, p) for p in entry.args}
        takes_kwargs = any(p.kind is p.VAR_KEYWORD for p in params.values())
        for p in entry.args:
            if harness.parameter_name(func, p) not in params and not takes_kwargs:
                problems.append(f"{entry.name}: {p!r} is not a parameter")
            if entry.args[p].kind not in catalogue.KINDS:
                problems.append(f"{entry.name}: unknown kind {entry.args[p].kind!r}")
        for name, p in params.items():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or name in given or name in entry.skip:
                continue
            if name == "seed" and "rng" in given:  # the older alias of rng (check_rng refuses both)
                continue
            problems.append(f"{entry.name}: parameter {name!r} has no baseline value (or skip= reason)")
    assert not problems, "\n".join(problems)


def test_job_list_is_deterministic_and_labels_unique():
    catalogue.check_labels_unique()
    a, b = harness.make_jobs(False), harness.make_jobs(False)
    assert a == b
    full = harness.make_jobs(True)
    assert len(full[1]) > len(a[1]) > 3000
    assert {(j.function, j.param, j.label) for j in a[1]} <= {(j.function, j.param, j.label) for j in full[1]}
    # every kind offers the values the trust issue lists
    labels = {kind: {m.label for m in muts} for kind, muts in catalogue.KINDS.items()}
    assert {
        "nan",
        "+inf",
        "-inf",
        "-1",
        "0",
        "1e-300",
        "1e300",
        "complex 1+1j",
        "True",
        "'a'",
        "None",
        "array [1., 2.]",
        "empty array",
    } <= labels["float"]
    assert {"-1", "0", "1.5", "True", "10**12", "'a'"} <= labels["int"]
    assert {"nan entry", "+inf entry", "empty", "ndim+1", "complex", "x1e300"} <= labels["array"]
    assert {"'yes'", "None", "nan", "1"} <= labels["flag"]
    assert {"-1", "1.5", "'a'", "True"} <= labels["rng"]
    assert {"'no_such'", "None", "user activation returning NaN"} <= labels["activation"]


# ---------------------------------------------------------------------------------------------
# the verdicts (fixed inputs: each assertion fails if the rule it pins is dropped)


def _job(function="dense.qmap", param="sigma_w2", label="x", expect=None):
    return harness.Job(function, param, label, expect, 1.0)


def test_names_argument():
    assert harness.names_argument("sigma_w2 must be >= 0, got -1", "sigma_w2")
    assert not harness.names_argument("sigma_w2 must be >= 0", "sigma_b2")
    assert not harness.names_argument("widths must be positive", "width")
    assert harness.names_argument("a must be finite (no NaN or infinity)", "a")
    assert harness.names_argument("W must be finite", "w")  # the paper's symbol, any case
    assert harness.names_argument("got 'x' of shape (2,)", "x")
    assert not harness.names_argument("could not convert a string to a float", "a")  # the article
    assert not harness.names_argument("expected a real number", "a")


def test_verdicts_of_exceptions():
    ok, bad = "OK", "BAD"
    j = _job()
    assert harness.judge(j, "dense.qmap", "sigma_w2", {}, exc=ValueError("sigma_w2 must be >= 0"))[0] == ok
    assert harness.judge(j, "dense.qmap", "sigma_w2", {}, exc=TypeError("sigma_w2 must be a real number"))[0] == ok
    assert harness.judge(j, "dense.qmap", "sigma_w2", {}, exc=ValueError("operands could not be broadcast"))[0] == bad
    # a conflict with another parameter is named by that parameter (values that may be valid only)
    assert harness.judge(j, "dense.qmap", "sigma_w2", {}, exc=ValueError("degree too small for q"))[0] == ok
    assert (
        harness.judge(_job(expect=RAISE), "dense.qmap", "sigma_w2", {}, exc=ValueError("degree too small for q"))[0]
        == bad
    )
    # an out-of-range result may instead name its log-scale alternative (the overflow contract)
    fj = _job("finite_width.expected_squared_norm", "layers", "x", None)
    out_of_range = ValueError("the expected squared norm leaves the float64 range; use log_expected_squared_norm")
    assert harness.judge(fj, fj.function, "layers", {}, exc=out_of_range)[0] == ok
    assert harness.judge(fj, fj.function, "layers", {}, exc=ValueError("overflow; use smaller numbers"))[0] == bad
    # foreign exceptions, even subclasses of ValueError, are BAD whatever their message
    assert harness.judge(j, "dense.qmap", "sigma_w2", {}, exc=np.linalg.LinAlgError("sigma_w2 singular"))[0] == bad
    assert harness.judge(j, "dense.qmap", "sigma_w2", {}, exc=ZeroDivisionError("sigma_w2"))[0] == bad
    assert harness.judge(j, "dense.qmap", "sigma_w2", {}, exc=OverflowError("sigma_w2"))[0] == bad
    # complex input and non-bool flags need a TypeError
    tj = _job(expect=TYPE)
    assert harness.judge(tj, "dense.qmap", "sigma_w2", {}, exc=ValueError("sigma_w2 must be real"))[0] == bad
    assert harness.judge(tj, "dense.qmap", "sigma_w2", {}, exc=TypeError("sigma_w2 must be real"))[0] == ok
    # the baseline must not raise at all
    assert harness.judge(_job(param=None, label="baseline"), "dense.qmap", None, {}, exc=ValueError("q"))[0] == bad
    # a file reader may let the OS say that a file is missing (the message holds the path)
    pj = _job("data.read_mnist_idx", "path", "missing file", RAISE)
    assert harness.judge(pj, "data.read_mnist_idx", "path", {"path": "/x/y"}, exc=FileNotFoundError("/x/y"))[0] == ok
    pj = _job("data.read_mnist_idx", "path", "garbage bytes", RAISE)
    assert harness.judge(pj, "data.read_mnist_idx", "path", {"path": "/x/y"}, exc=FileNotFoundError("/x/y"))[0] == bad
    assert (
        harness.judge(pj, "data.read_mnist_idx", "path", {"path": "/x/y"}, exc=ValueError("/x/y is not an IDX file"))[0]
        == ok
    )


def test_verdicts_of_results():
    j = _job()
    assert harness.judge(j, "dense.qmap", "sigma_w2", {}, result=np.array([1.0, 2.0]))[0] == "OK"
    assert harness.judge(j, "dense.qmap", "sigma_w2", {}, result=np.array([1.0, np.nan]))[0] == "BAD"
    assert harness.judge(j, "dense.qmap", "sigma_w2", {}, result={"a": [1.0, (2.0, -np.inf)]})[0] == "BAD"
    assert harness.judge(j, "dense.qmap", "sigma_w2", {}, result=complex(1.0, np.inf))[0] == "BAD"
    # a value that must be refused is BAD even when the result is finite
    assert harness.judge(_job(expect=RAISE), "dense.qmap", "sigma_w2", {}, result=1.0)[0] == "BAD"
    assert harness.judge(_job(expect=TYPE), "dense.qmap", "sigma_w2", {}, result=1.0)[0] == "BAD"


def test_allow_list_admits_only_documented_infinities():
    from meanfield.dense import FixedPoint

    diverging = FixedPoint(
        q_star=math.inf, c_star=1.0, chi_1=1.5, chi_c=1.5, chi_q=1.5, xi_q=math.inf, xi_c=math.inf, phase="chaotic"
    )
    assert harness.nonfinite_problems("dense.fixed_point", diverging, {}) == []
    # the same infinities where the documented condition (chi >= 1) fails, or a NaN, are BAD
    wrong = diverging.replace(chi_q=0.75, chi_c=0.5)
    assert len(harness.nonfinite_problems("dense.fixed_point", wrong, {})) == 3
    assert harness.nonfinite_problems("dense.fixed_point", diverging.replace(q_star=math.nan), {})
    # and an infinity of another function is not covered by this rule
    assert harness.nonfinite_problems("dense.qmap", math.inf, {})
    for rule in registry.ALLOW_NONFINITE:
        assert rule.function in harness.ENTRIES, rule.function
        assert rule.doc


def test_harness_survives_hangs_and_crashes():
    """A hang is killed within the timeout, a crashed worker is replaced, the rest still runs."""
    jobs = [
        harness.Job("selftest.hangs", "x", "nan", RAISE, 2.0),
        harness.Job("selftest.crashes", "x", "-1", None, 5.0),
        harness.Job("selftest.well_behaved", "x", "nan", RAISE, 5.0),
        harness.Job("selftest.well_behaved", "flag", "'yes'", TYPE, 5.0),
        harness.Job("selftest.well_behaved", "x", "1e300", None, 5.0),
        harness.Job("selftest.sloppy", "x", "nan", RAISE, 5.0),
        harness.Job("selftest.sloppy", "x", "'a'", RAISE, 5.0),
        harness.Job("selftest.sloppy", "x", "None", RAISE, 5.0),
        harness.Job("selftest.sloppy", "x", "0", None, 5.0),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        out = harness.run_jobs(jobs, harness.make_fixtures(tmp), workers=2)
    verdicts = [(o.verdict, o.detail.split(":")[0]) for o in out]
    assert verdicts[0][0] == "BAD" and "timeout" in out[0].detail and out[0].elapsed <= 2.0
    assert verdicts[1][0] == "BAD" and "worker process died (signal 11)" in out[1].detail
    assert [v for v, _ in verdicts[2:5]] == ["OK", "OK", "OK"]
    assert "accepted silently" in out[5].detail and "non-finite" in out[5].detail
    assert "does not name 'x'" in out[6].detail
    assert "foreign exception KeyError" in out[7].detail
    assert verdicts[8][0] == "OK"


# ---------------------------------------------------------------------------------------------
# the campaign


def _selected_modules(request) -> set:
    chosen = set()
    for item in request.session.items:
        if getattr(item, "originalname", None) == "test_public_api_fuzz" and hasattr(item, "callspec"):
            chosen.add(item.callspec.params["module"])
    return chosen or set(MODULES)


@pytest.fixture(scope="session")
def campaign(request):
    """One run of every selected module's functions (the modules -k/-m leave in the session)."""
    modules = _selected_modules(request)
    functions = {e.name for e in registry.REGISTRY if e.module in modules}
    full = bool(os.environ.get("MEANFIELD_FUZZ_FULL")) and not os.environ.get("MEANFIELD_FUZZ_FAST")
    result = harness.run_campaign(full=full, functions=functions)
    path = harness.expected_report_path()
    if path:
        with open(path, "w") as f:
            f.write(harness.format_report(result))
    return result


@pytest.mark.parametrize("module", MODULES)
def test_public_api_fuzz(campaign, module):
    """Every public function of ``module``: each argument changed in turn to each catalogue value
    of its kind returns finite (documented) values or raises ValueError/TypeError naming it, in time."""
    assert any(harness.module_of(o.job.function) == module for o in campaign.outcomes)
    bad = campaign.bad_for(module)
    lines = [harness.format_line(o) for o in bad]
    shown = "\n".join(lines[:SHOWN]) + (f"\n... and {len(lines) - SHOWN} more" if len(lines) > SHOWN else "")
    if bad:
        pytest.fail(
            f"{len(bad)} public-API calls of {module} misbehave (set MEANFIELD_FUZZ_REPORT=FILE for the full report; "
            f"rerun one function with `python tests/fuzz/run.py --only NAME`):\n{shown}",
            pytrace=False,
        )


# ---------------------------------------------------------------------------------------------
# the audit behind the trust issue, replayed (tests/fuzz/findings.py)


def test_audit_findings_are_all_mapped():
    """Every BAD line of the audit parses and maps onto a registry function, parameter and value."""
    from fuzz import findings

    found = findings.parse()
    assert len(found) == 695  # the audit file's BAD lines (a changed file must be looked at)
    jobs, unmapped = findings.replay_jobs(found, harness.DEFAULT_TIMEOUT)
    assert not unmapped, "\n".join(f"line {f.line}: {f.function} {f.param}={f.label}" for f in unmapped)
    assert len(jobs) > 500


#: audit lines naming a function of registry.REMOVED (none today: the audit predates nothing removed
#: since; a new audit file with such lines must be looked at, not silently skipped)
REMOVED_AUDIT_LINES = 0


def test_audit_lines_of_removed_functions_are_counted():
    """Functions removed from the API (registry.REMOVED) are gone, have no registry row, say what
    replaces them, and their audit lines (left out of the replay) are exactly the stated number."""
    import importlib

    from fuzz import findings

    assert registry.REMOVED
    fuzzed = {e.name for e in registry.REGISTRY}
    for name, replacement in registry.REMOVED.items():
        module, attr = name.rsplit(".", 1)
        assert not hasattr(importlib.import_module("meanfield." + module), attr), f"{name} is still public"
        assert name not in fuzzed and name not in registry.NOT_FUZZED, name
        assert replacement.startswith("removed"), name
    lines = [f for f in findings.parse() if f.function in registry.REMOVED]
    assert len(lines) == REMOVED_AUDIT_LINES, [f.line for f in lines]


def test_audit_custom_sqrt_is_refused_when_built():
    """The audit's "custom sqrt (NaN for x<0)" activation is now refused by from_functions itself."""
    from meanfield.activations import Activation

    with pytest.raises(ValueError, match="phi"):
        Activation.from_functions("custom_sqrt", np.sqrt, lambda x: 0.5 / np.sqrt(x), lambda x: -0.25 * x**-1.5)


def test_audit_findings_replay():
    """Every call of /work/shared/audit/fuzz-findings.txt (copied to tests/fuzz/audit_findings.txt),
    on this registry's baseline of the same function, is now OK."""
    from fuzz import findings

    jobs, _ = findings.replay_jobs(findings.parse(), harness.DEFAULT_TIMEOUT)
    with tempfile.TemporaryDirectory() as tmp:
        outcomes = harness.run_jobs(jobs, harness.make_fixtures(tmp))
    bad = [harness.format_line(o) for o in outcomes if o.verdict != "OK"]
    assert not bad, f"{len(bad)} calls of the audit still misbehave:\n" + "\n".join(bad[:SHOWN])
