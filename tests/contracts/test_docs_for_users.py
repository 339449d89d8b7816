"""Docs and docstrings are for users: no internal work items, branch names, commit hashes or dates.

Papers are named by author and year (``Xiao et al. 2018``), never by an internal number
(``seed 003``); history (which work item changed what, on which branch, when) belongs in git and
the changelog, not in the documentation, the docstrings or the names of the tests.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: Folders whose text a user reads: the documentation and every module (docstrings, comments).
USER_TEXT = ("README.md", "docs", "meanfield", "validation", "figures", "examples", "benchmarks", "tests")
#: Generated folders of the documentation build.
GENERATED = ("docs/_build", "docs/generated", "docs/auto_examples")

WORK_ITEMS = re.compile(r"\bissues?[ -]\d+|\bseed[ -]00[0-4]\b|\bthis round\b", re.IGNORECASE)
BRANCH = re.compile(r"\b(?:on|in|from) (?:the )?branch(?:es)? `[\w./-]+`|\(branch `[\w./-]+`")
#: A commit hash in prose: 7-40 hex digits with at least one letter and one digit, in backticks or
#: after "at" / "commit" (hex constants in code are not prose).
COMMIT = re.compile(r"(?:\bcommit |\bat |`)(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b")
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b")


def _files():
    for entry in USER_TEXT:
        path = ROOT / entry
        paths = [path] if path.is_file() else sorted(path.rglob("*"))
        for p in paths:
            rel = p.relative_to(ROOT).as_posix()
            if p.suffix in {".py", ".md", ".rst"} and not rel.startswith(GENERATED) and "__pycache__" not in rel:
                if rel != "tests/contracts/test_docs_for_users.py":
                    yield rel, p.read_text(encoding="utf-8")


FILES = dict(_files())


@pytest.mark.parametrize(("name", "pattern"), [("work items", WORK_ITEMS), ("branch names", BRANCH)])
def test_no_internal_history_in_user_text(name, pattern):
    hits = [
        f"{rel}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}"
        for rel, text in FILES.items()
        for m in pattern.finditer(text)
    ]
    assert not hits, f"{name} in docs / docstrings / tests:\n" + "\n".join(hits[:40])


def test_no_commit_hashes_or_dates_in_the_documentation():
    docs = {rel: text for rel, text in FILES.items() if rel.endswith((".md", ".rst"))}
    hits = [
        f"{rel}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)}"
        for rel, text in docs.items()
        for pat in (COMMIT, DATE)
        for m in pat.finditer(text)
    ]
    assert not hits, "commit hashes or dates in the documentation:\n" + "\n".join(hits[:40])


def test_the_patterns_find_what_they_are_for():
    assert WORK_ITEMS.search("fixed in issue 17 item 2") and WORK_ITEMS.search("(seed 003, eq. 2.7)")
    assert WORK_ITEMS.search("the pre-issue-18 kernel") and WORK_ITEMS.search("the issue-17 built-ins")
    assert (
        BRANCH.search("measured on branch `fig1-fast`")
        and not BRANCH.search("a residual branch `f`")
        and COMMIT.search("a run at 9eff7a8")
    )
    assert DATE.search("(2026-11-24)") and not COMMIT.search("an array of 1024 entries")
    assert not WORK_ITEMS.search("issues a warning") and not WORK_ITEMS.search("seed 0, 1, 2")
