"""The core public modules of meanfield, one list for every check that walks the API.

The fuzz manager imports them before forking workers (:data:`fuzz.harness.PRELOAD`) and the
docstring check of ``tests/contracts/test_docs_examples.py`` parses their docstrings
(``API_MODULES`` there starts with them).
"""

#: the library's core public modules, in the order the API reference lists them
CORE_MODULES = [
    "meanfield.gaussian",
    "meanfield.activations",
    "meanfield.dense",
    "meanfield.conv",
    "meanfield.init",
    "meanfield.finite_width",
    "meanfield.kurtosis",
    "meanfield.symmetry",
    "meanfield.landscape",
    "meanfield.data",
    "meanfield.backend",
    "meanfield.checks",
    "meanfield.numerics",
    "meanfield.cli",
    "meanfield.compare",
    "meanfield.io",
    "meanfield.simulate",
]
