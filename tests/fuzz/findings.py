"""Replay of the audit behind the trust issue (``tests/fuzz/audit_findings.txt``, a copy of
``/work/shared/audit/fuzz-findings.txt``): every call listed there must now be OK.

Each line of the file is ``BAD[-low] FUNCTION [k] PARAM=VALUE  what happened``: the audit changed
one argument of a baseline call (taken from a docstring example; ``[k]`` numbers the baselines of a
function) to a value described by a label. The replay changes the same argument of this
registry's baseline call of the same function to the value the label describes, and judges the
call exactly as the campaign does (:func:`fuzz.harness.judge`): a finite (documented) result, or a
``ValueError`` / ``TypeError`` naming the argument, within the per-call timeout.

What the replay cannot reproduce literally, and what it does instead:

- the audit's baseline values (its ``[k]``): the registry's baseline of the function is used;
- functions and parameters renamed or moved since (:data:`FUNCTION_RENAMES`, :data:`PARAM_RENAMES`);
- functions removed from the API since (``registry.REMOVED``, with their replacements): their lines
  are left out of the replay, and ``test_audit_lines_of_removed_functions_are_counted`` states how many;
- the "custom sqrt (NaN for x<0)" activation: ``Activation.from_functions`` now refuses it when it
  is built (NaN at the probe points), which ``test_audit_custom_sqrt_is_refused_when_built`` checks;
  the calls replay with a user activation that passes the probe and is NaN for |u| > 8
  (:class:`fuzz.catalogue.NaNActivation`), so the integration paths are still exercised.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fuzz import catalogue
from fuzz.catalogue import RAISE, TYPE

PATH = Path(__file__).with_name("audit_findings.txt")
#: prefix of the Job labels of replayed calls (``harness.build_call`` recognises it)
PREFIX = "audit: "

#: audit name -> registry name (the packaging issue moved validation.networks and symmetry.permutation_count)
FUNCTION_RENAMES = {
    "networks.periodic_conv": "init.periodic_conv",
    "networks.periodic_conv_transpose": "init.periodic_conv_transpose",
    "networks.random_weights": "init.dense_weights",
    "symmetry.permutation_count": "landscape.permutation_counts",
}
#: (registry function, audit parameter) -> registry parameter
PARAM_RENAMES = {
    ("simulate.conv_kernels", "channels"): "width",
    ("landscape.permutation_counts", "n"): "widths",
    (
        "init.dense_weights",
        "shape",
    ): "batch_shape",  # random_weights(shape) became dense_weights(n_out, n_in, batch_shape=)
}

_LINE = re.compile(
    r"^(?P<verdict>BAD\S*)\s+(?P<function>\S+)\s+\[(?P<k>\d+)\]\s+(?P<param>\w+)=(?P<label>.*?)\s{2,}(?P<detail>.*)$"
)


@dataclass(frozen=True)
class Finding:
    line: int
    verdict: str
    function: str  # the registry name
    param: str  # the registry parameter
    label: str  # the audit's value label
    detail: str


def registry_name(function: str) -> str:
    if function in FUNCTION_RENAMES:
        return FUNCTION_RENAMES[function]
    return "simulate." + function[len("networks.") :] if function.startswith("networks.") else function


def parse(path: Path = PATH) -> list[Finding]:
    """Every BAD line of the audit file (the lines that do not start with BAD are comments or the
    continuation of a multi-line message)."""
    out = []
    for i, text in enumerate(path.read_text().splitlines(), 1):
        if not text.startswith("BAD"):
            continue
        m = _LINE.match(text)
        if m is None:
            raise ValueError(f"{path}:{i}: cannot parse {text!r}")
        function = registry_name(m["function"])
        param = PARAM_RENAMES.get((function, m["param"]), m["param"])
        out.append(Finding(i, m["verdict"], function, param, m["label"], m["detail"]))
    return out


# ---------------------------------------------------------------------------------------------
# the values behind the labels


def _arr(base):
    return np.array(base, dtype=np.float64, copy=True)


def _entry(value):
    def make(base):
        if isinstance(base, (list, tuple)) and base and not np.isscalar(base[0]):
            items = list(base)
            items[0] = _entry(value)(items[0])
            return items
        if isinstance(base, (list, tuple)):
            return [value, *list(base)[1:]]
        a = _arr(base)
        if a.ndim == 0:
            return np.float64(value)
        a.flat[0] = value
        return a

    return make


def _scaled(factor):
    def make(base):
        if isinstance(base, (list, tuple)) and base and not np.isscalar(base[0]):
            return [_arr(w) * factor for w in base]
        return _arr(base) * factor

    return make


def _complex(base):
    if isinstance(base, (list, tuple)) and base and not np.isscalar(base[0]):
        return [_arr(base[0]) + 1j, *list(base)[1:]]
    return _arr(base) + 1j


def _first(value):
    def make(base):
        items = list(base) if isinstance(base, (list, tuple)) else [base]
        items[0] = value
        return tuple(items)

    return make


def _sqrt_activation(base=None):
    from meanfield.activations import Activation

    return Activation.from_functions("custom_sqrt", np.sqrt, lambda x: 0.5 / np.sqrt(x), lambda x: -0.25 * x**-1.5)


#: label -> (make(base), expectation of the catalogue: None, RAISE or TYPE). The expectation of a
#: flag (kind "flag") is TypeError for every value that is not a real bool, whatever the label.
LABELS = {
    "nan": (lambda b: math.nan, RAISE),
    "np.float64(nan)": (lambda b: np.float64("nan"), RAISE),
    "+inf": (lambda b: math.inf, None),
    "-inf": (lambda b: -math.inf, None),
    "inf": (lambda b: math.inf, None),
    "1e300": (lambda b: 1e300, None),
    "1e-300": (lambda b: 1e-300, None),
    "-1": (lambda b: -1, None),
    "-1e-3": (lambda b: -1e-3, None),
    "0": (lambda b: 0, None),
    "int 0": (lambda b: 0, None),
    "1.5": (lambda b: 1.5, None),
    "2.5": (lambda b: 2.5, None),
    "3": (lambda b: 3, None),
    "10**12": (lambda b: 10**12, None),
    "2**64": (lambda b: 2**64, None),
    "2**70": (lambda b: 2**70, None),
    "True": (lambda b: True, None),
    "False": (lambda b: False, None),
    "None": (lambda b: None, RAISE),
    "1+1j": (lambda b: 1 + 1j, TYPE),
    "complex array": (_complex, TYPE),
    "'abc'": (lambda b: "abc", RAISE),
    "'yes'": (lambda b: "yes", RAISE),
    "'no_such'": (lambda b: "no_such", RAISE),
    "''": (lambda b: "", RAISE),
    "['x']": (lambda b: ["x"], RAISE),
    "['a','b']": (lambda b: ["a", "b"], RAISE),
    "list of strings": (lambda b: ["a", "b"], RAISE),
    "object()": (lambda b: object(), RAISE),
    "object array": (lambda b: np.array([object(), object()], dtype=object), RAISE),
    "[True]": (lambda b: [True], None),
    "()": (lambda b: (), None),
    "empty array": (lambda b: np.array([]), None),
    "empty 2-D": (lambda b: np.zeros((0, 0)), None),
    "3-D array": (lambda b: np.ones((2, 2, 2)), None),
    "scalar 1.0": (lambda b: 1.0, None),
    "x1e300": (_scaled(1e300), None),
    "x1e-300": (_scaled(1e-300), None),
    "entry nan": (_entry(math.nan), RAISE),
    "entry +inf": (_entry(math.inf), None),
    "entry -inf": (_entry(-math.inf), None),
    "entry 10**12": (_entry(10**12), None),
    "first matrix with nan": (_entry(math.nan), RAISE),
    "first matrix with inf": (_entry(math.inf), None),
    "2.5 first": (_first(2.5), RAISE),
    "inf first": (_first(math.inf), RAISE),
    "huge first": (_first(10**12), None),
    "SeedSequence": (lambda b: np.random.SeedSequence(1), None),
    "RandomState(0)": (lambda b: np.random.RandomState(0), RAISE),
    "returns nan": (lambda b: catalogue._nan_function, None),
    "custom sqrt (NaN for x<0)": (catalogue.NaNActivation.make, None),
    "'gelu'": (lambda b: "gelu", None),
    "'leaky_relu'": (lambda b: "leaky_relu", None),
    # data readers: the fixtures of harness.make_fixtures (same layout, this repository's bytes)
    "path:empty": (lambda b: str(b) + ".empty", RAISE),
    "path:garbage.txt": (lambda b: str(b) + ".garbage", RAISE),
    "path:gz-garbage.gz": (lambda b: str(b) + ".garbage.gz", RAISE),
    "path:trunc-idx": (lambda b: str(b) + ".truncated", RAISE),
    "path:nan-double-idx": (lambda b: str(b) + ".nan", None),
    "path:badtype-idx": (lambda b: str(b) + ".badtype", RAISE),
    "path:overflow-idx": (lambda b: str(b) + ".overflow", RAISE),
    "path:neg-ndim-idx": (lambda b: str(b) + ".zerondim", RAISE),
    "path:dict-nan.pkl": (lambda b: str(b) + ".nan", None),
}

#: kinds whose values must be integers: a non-integral number must raise
_INTEGER_KINDS = {"int", "intseq", "int_pair", "shape"}


def expectation(finding: Finding, kind: str, default) -> str | None:
    """What a correct library must do with the finding's value (see :mod:`fuzz.catalogue`)."""
    make, expect = LABELS[finding.label]
    if kind == "flag":
        return None if finding.label in ("True", "False") else TYPE
    if kind == "text" and isinstance(make(None), str):
        return None  # free text (a user activation's name): any string is valid
    if finding.label == "None" and default is None:
        return None
    if kind in _INTEGER_KINDS and finding.label in ("1.5", "2.5", "nan", "np.float64(nan)", "'abc'"):
        return RAISE
    return expect


def mutation(label: str) -> catalogue.Mutation:
    """The catalogue-style mutation of a Job label ``PREFIX + audit label``."""
    make, expect = LABELS[label[len(PREFIX) :]]
    return catalogue.Mutation(label, make, expect)


def replay_jobs(findings: list[Finding], timeout: float) -> tuple[list, list[Finding]]:
    """(harness Jobs, one per distinct (function, parameter, label), findings that cannot be mapped)."""
    import inspect

    from fuzz import harness, registry

    jobs, unmapped, seen = [], [], set()
    for f in findings:
        if f.function in registry.REMOVED:  # removed from the API on purpose (registry.REMOVED; counted in a test)
            continue
        entry = harness.ENTRIES.get(f.function)
        if entry is None or f.param not in entry.args or f.label not in LABELS:
            unmapped.append(f)
            continue
        key = (f.function, f.param, f.label)
        if key in seen:
            continue
        seen.add(key)
        func = harness.resolve(f.function)
        params = inspect.signature(func).parameters
        actual = harness.parameter_name(func, f.param)
        default = params[actual].default if actual in params else inspect.Parameter.empty
        expect = expectation(f, entry.args[f.param].kind, default)
        jobs.append(harness.Job(f.function, f.param, PREFIX + f.label, expect, timeout))
    return jobs, unmapped
