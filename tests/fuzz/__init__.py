"""Fuzz harness of meanfield's public API (used by ``tests/contracts/test_fuzz_api.py``).

- :mod:`fuzz.catalogue` -- argument kinds and the fixed per-kind catalogue of bad / extreme values;
- :mod:`fuzz.registry` -- THE TABLE: one valid, small, fast baseline call per public function,
  the public classes that are not fuzzed (and why), and the allow-list of documented infinities;
- :mod:`fuzz.harness` -- job list, worker processes with a per-call timeout, verdicts, report;
- ``python tests/fuzz/run.py [--fast] [--report FILE] [--only NAME ...] [--module MOD ...]`` runs it outside pytest.

The contract checked for every call (the project's standards): a public function returns a value
whose numeric leaves are all finite (except infinities on the allow-list), or raises ``ValueError``
/ ``TypeError`` whose message names the argument that was changed -- within a time bound.
"""
