"""Argument kinds and the fixed catalogue of bad, degenerate and extreme-but-valid values per kind.

Every argument of a baseline call (see :mod:`fuzz.registry`) has a *kind*; a fuzz call replaces
that one argument by one catalogue value of its kind and keeps the others at the baseline. The
catalogue is a fixed list (no randomness), so a run is deterministic.

Each :class:`Mutation` states what a correct library must do with it (``expect``):

``None``
    Either a result whose numeric leaves are all finite, or ``ValueError``/``TypeError`` naming
    the argument (e.g. ``-1``, ``0``, ``1e300``: valid for some parameters, invalid for others).
``RAISE``
    ``ValueError`` or ``TypeError`` naming the argument; returning anything is a silent
    acceptance (NaN, strings for numbers, a non-integer for an integer, an unknown name, a file
    that is not the format). ``None`` is exempt where ``None`` is the parameter's default.
``TYPE``
    ``TypeError`` naming the argument (the standards: complex input raises ``TypeError``, a flag
    that is not a real ``bool`` raises ``TypeError``).

``fast`` marks the subset the test runs by default (``run.py --fast``); ``MEANFIELD_FUZZ_FULL=1`` (and
``python tests/fuzz/run.py``) runs every value.
Values are produced by ``make(base)`` in the worker for every call (fresh arrays each time), from
the baseline value ``base`` of the argument.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from meanfield.activations import ACTIVATIONS

#: built-in activations tried by the fast subset in place of the baseline's (kinked and unbounded
#: ones: the fixed-point searches and closed forms most likely to go wrong there)
FAST_BUILTINS = ("leaky_relu", "gelu")

#: labels of the mutations that put a NaN in (see Entry.nan_ok)
NAN_LABELS = frozenset({"nan", "nan entry"})

RAISE = "raise"
TYPE = "TypeError"


@dataclass(frozen=True)
class Mutation:
    label: str
    make: Callable[[Any], Any]
    expect: str | None = None
    fast: bool = False
    none: bool = False  # the value is None: valid where the parameter's default is None


def _const(value):
    return lambda base: value


def M(label, value, expect=None, fast=False):
    """A mutation to a constant (immutable) value."""
    return Mutation(label, _const(value), expect, fast, none=value is None)


def MF(label, make, expect=None, fast=False):
    """A mutation computed from the baseline value (called per call)."""
    return Mutation(label, make, expect, fast)


NONE = lambda fast=True: M("None", None, RAISE, fast)  # noqa: E731


# ---------------------------------------------------------------------------------------------
# helpers building values from the baseline


def _array(base) -> np.ndarray:
    return np.array(base, dtype=np.float64, copy=True)


def _with_entry(value):
    def make(base):
        a = _array(base)
        if a.ndim == 0:
            return np.float64(value)
        a.flat[0] = value  # [0, 0] of a matrix: a covariance stays symmetric
        return a

    return make


def _empty(base):
    a = np.asarray(base)
    return np.zeros((0,) * max(a.ndim, 1))


def _first(transform):
    """Apply ``transform`` to the first element of a list (of arrays / tuples)."""

    def make(base):
        items = list(base)
        items[0] = transform(items[0])
        return items

    return make


def _replace_first(value):
    def make(base):
        items = list(base)
        items[0] = value
        return items

    return make


class NaNActivation:
    """Factory of a user activation whose phi, phi', phi'' return NaN for |u| > 8 (built in the worker).

    NaN everywhere is refused by ``Activation.from_functions`` itself (it probes
    ``linspace(-4, 4, 17)``; fuzzed there as ``phi=returns NaN``), so this one passes the probe and
    must be caught where the library integrates it (quadrature nodes reach |u| > 8 for q = 1).
    """

    @staticmethod
    def make(base=None):
        from meanfield.activations import Activation

        def nan_far(x, f):
            x = np.asarray(x, dtype=float)
            out = np.where(np.abs(x) > 8.0, np.nan, f(x))
            return out if out.ndim else float(out)

        return Activation.from_functions(
            "nan_beyond_8",
            lambda x: nan_far(x, np.tanh),
            lambda x: nan_far(x, lambda u: 1.0 - np.tanh(u) ** 2),
            lambda x: nan_far(x, lambda u: -2.0 * np.tanh(u) * (1.0 - np.tanh(u) ** 2)),
        )


def _user_tanh(base=None):
    from meanfield.activations import Activation

    return Activation.from_functions(
        "user_tanh", np.tanh, lambda x: 1.0 - np.tanh(x) ** 2, lambda x: -2.0 * np.tanh(x) * (1.0 - np.tanh(x) ** 2)
    )


def _nan_function(x):
    return np.full(np.shape(x), np.nan) if np.ndim(x) else np.nan


# ---------------------------------------------------------------------------------------------
# the catalogue: kind -> mutations (order fixed; ``fast`` = the quick-look subset)

FLOAT = [
    M("nan", float("nan"), RAISE, True),
    M("+inf", float("inf"), None, True),
    M("-inf", float("-inf")),
    M("-1", -1.0, None, True),
    M("0", 0.0, None, True),
    M("1e-300", 1e-300),
    M("1e300", 1e300, None, True),
    M("-1e300", -1e300),
    M("complex 1+1j", 1 + 1j, TYPE, True),
    M("True", True, None, True),
    M("'a'", "a", RAISE, True),
    NONE(),
    MF("array [1., 2.]", lambda b: np.array([1.0, 2.0]), None, True),
    MF("empty array", lambda b: np.array([]), None, True),
]

INT = [
    M("-1", -1, None, True),
    M("0", 0, None, True),
    M("1.5", 1.5, RAISE, True),
    M("True", True, None, True),
    M("10**12", 10**12, None, True),
    M("2**64", 2**64),
    M("'a'", "a", RAISE, True),
    NONE(),
    M("nan", float("nan"), RAISE),
    M("complex 2+1j", 2 + 1j, TYPE),
    MF("array [2, 3]", lambda b: np.array([2, 3])),
]

ARRAY = [
    MF("nan entry", _with_entry(np.nan), RAISE, True),
    MF("+inf entry", _with_entry(np.inf), None, True),
    MF("-inf entry", _with_entry(-np.inf)),
    MF("empty", _empty, None, True),
    MF("ndim+1", lambda b: _array(b)[None], None, True),
    MF("scalar", lambda b: np.float64(_array(b).flat[0]) if _array(b).size else np.float64(1.0), None, True),
    MF("complex", lambda b: _array(b) + 1j, TYPE, True),
    MF("x1e300", lambda b: _array(b) * 1e300, None, True),
    MF("negated", lambda b: -_array(b)),
    MF("bool array", lambda b: _array(b) != 0),
    M("ragged", [[1.0, 2.0], [3.0]], RAISE),
    M("'a'", "a", RAISE),
    NONE(False),
]

FLAG = [
    M("'yes'", "yes", TYPE, True),
    M("None", None, TYPE, True),
    M("nan", float("nan"), TYPE, True),
    M("1", 1, TYPE, True),
    M("0", 0, TYPE),
    MF("array [True]", lambda b: np.array([True]), TYPE),
    M("np.True_", np.True_),
]

RNG = [
    M("-1", -1, RAISE, True),
    M("1.5", 1.5, RAISE, True),
    M("'a'", "a", RAISE, True),
    M("True", True, RAISE, True),
    MF("RandomState(0)", lambda b: np.random.RandomState(0), RAISE),
    MF("SeedSequence(1)", lambda b: np.random.SeedSequence(1)),
    MF("Generator", lambda b: np.random.default_rng(1)),
]

ACTIVATION = [
    M("'no_such'", "no_such", RAISE, True),
    M("''", "", RAISE),
    M("None", None, RAISE, True),
    M("3", 3, RAISE),
    MF("user activation returning NaN", NaNActivation.make, None, True),
    MF("user tanh", _user_tanh),
] + [M(repr(name), name, None, name in FAST_BUILTINS) for name in ACTIVATIONS]  # every built-in: extreme but valid

CHOICE = [
    M("'no_such'", "no_such", RAISE, True),
    M("''", "", RAISE),
    M("None", None, RAISE, True),
    M("3", 3, RAISE, True),
]

BACKEND = [
    M("'no_such'", "no_such", RAISE, True),
    M("None", None, RAISE),
    M("3", 3, RAISE, True),
]

SHAPE = [
    M("0", 0, None, True),
    M("-1", -1, None, True),
    M("3.5", 3.5, RAISE, True),
    M("(3.5,)", (3.5,), RAISE),
    M("'a'", "a", RAISE, True),
    NONE(),
    M("True", True),
    M("(10**12,)", (10**12,), None, True),
    M("(2, 3, 4)", (2, 3, 4), None, True),
    M("complex", 3 + 1j, TYPE),
    M("()", ()),
    M("(0,)", (0,)),
]

INTSEQ = [
    M("[]", [], None, True),
    MF("[-1, ...]", _replace_first(-1), None, True),
    MF("[1.5, ...]", _replace_first(1.5), RAISE, True),
    MF("[True, ...]", _replace_first(True)),
    MF("[10**12, ...]", _replace_first(10**12), None, True),
    MF("[nan, ...]", _replace_first(float("nan")), RAISE),
    MF("[complex, ...]", _replace_first(2 + 1j), TYPE),
    M("'a'", "a", RAISE, True),
    NONE(),
    MF("nested", lambda b: [list(b)], None, True),
    MF("x1000 longer", lambda b: list(b) * 1000),
]

PATH = [
    MF("missing file", lambda b: str(b) + ".missing", RAISE, True),
    MF("a directory", lambda b: str(__import__("os").path.dirname(str(b))), RAISE, True),
    MF("garbage bytes", lambda b: str(b) + ".garbage", RAISE, True),
    MF("empty file", lambda b: str(b) + ".empty", RAISE, True),
    MF("truncated", lambda b: str(b) + ".truncated", RAISE, True),
    MF("garbage .gz", lambda b: str(b) + ".garbage.gz", RAISE, True),
    MF("NaN content", lambda b: str(b) + ".nan", None, True),
    MF("wrong layout", lambda b: str(b) + ".wrongshape", RAISE, True),
    NONE(),
    M("3", 3, RAISE),
]

TEXT = [
    M("None", None, RAISE, True),
    M("3", 3, RAISE, True),
    M("''", ""),
    M("['x']", ["x"], RAISE),
]

CALLABLE = [
    M("None", None, RAISE, True),
    M("3", 3, RAISE, True),
    M("returns NaN", _nan_function, None, True),
]

MATRICES = [
    M("[]", [], None, True),
    NONE(),
    M("'a'", "a", RAISE),
    MF("first with nan", _first(lambda w: _with_entry(np.nan)(w)), RAISE, True),
    MF("first with inf", _first(lambda w: _with_entry(np.inf)(w)), None, True),
    MF("first complex", _first(lambda w: _array(w) + 1j), TYPE, True),
    MF("first x1e300", _first(lambda w: _array(w) * 1e300), None, True),
    MF("first transposed", _first(lambda w: _array(w).T.copy())),
    MF("first ragged", _first(lambda w: [[1.0, 2.0], [3.0]]), RAISE),
    MF("first 3-D", _first(lambda w: _array(w)[None])),
]

LAYERS = [
    M("[]", [], None, True),
    NONE(),
    M("'a'", "a", RAISE),
    M("[(-1, 0.5)]", [(-1, 0.5)], None, True),
    M("[(4, nan)]", [(4, float("nan"))], RAISE, True),
    M("[(4, -1.0)]", [(4, -1.0)], None, True),
    M("[(2.5, 0.5)]", [(2.5, 0.5)], RAISE, True),
    M("[(4,)]", [(4,)]),
    M("[(4, 1+1j)]", [(4, 1 + 1j)], TYPE),
    M("[(4, 1e300)]", [(4, 1e300)], None, True),
    M("10**4 layers (4, 0.45)", [(4, 0.45)] * 10**4, None, True),
]

DISTRIBUTION = [
    M("'no_such'", "no_such", RAISE, True),
    M("None", None, RAISE, True),
    M("3", 3, RAISE),
    MF("scipy cauchy (no moments)", lambda b: __import__("scipy.stats").stats.cauchy(), None, True),
    MF("scipy t(df=3) (infinite kurtosis)", lambda b: __import__("scipy.stats").stats.t(df=3)),
]

FLOAT_PAIR = [
    M("(nan, 100)", (float("nan"), 100.0), RAISE, True),
    M("(1, -1)", (1.0, -1.0), None, True),
    M("(100, 1e-6) reversed", (100.0, 1e-6), None, True),
    M("'a'", "a", RAISE),
    NONE(),
    M("(1.0,)", (1.0,)),
    M("(1e-300, 1e300)", (1e-300, 1e300), None, True),
    M("(complex, 2)", (1 + 1j, 2.0), TYPE),
    M("(0, inf)", (0.0, float("inf"))),
]

INT_PAIR = [
    M("(3, 0)", (3, 0), None, True),
    M("(-1, 0)", (-1, 0), None, True),
    M("(1.5, 0)", (1.5, 0), RAISE, True),
    M("(0,)", (0,), None, True),
    NONE(),
    M("'a'", "a", RAISE),
    M("(0, 0, 0)", (0, 0, 0)),
]

TEXTSEQ = [
    M("['no_such']", ["no_such"], None, True),
    M("[]", [], None, True),
    NONE(),
    M("3", 3, RAISE, True),
    M("[None]", [None]),
]

DTYPE = [
    M("'a'", "a", RAISE, True),
    M("np.int64", np.int64, None, True),
    M("np.complex128", np.complex128, None, True),
    M("3", 3, RAISE),
]

#: kind name -> catalogue
KINDS: dict[str, list[Mutation]] = {
    "float": FLOAT,
    "int": INT,
    "array": ARRAY,
    "flag": FLAG,
    "rng": RNG,
    "activation": ACTIVATION,
    "choice": CHOICE,
    "backend": BACKEND,
    "shape": SHAPE,
    "intseq": INTSEQ,
    "path": PATH,
    "text": TEXT,
    "callable": CALLABLE,
    "matrices": MATRICES,
    "layers": LAYERS,
    "distribution": DISTRIBUTION,
    "float_pair": FLOAT_PAIR,
    "int_pair": INT_PAIR,
    "textseq": TEXTSEQ,
    "dtype": DTYPE,
    "fixed": [],  # not mutated (say why in the registry)
}


def mutations(kind: str, full: bool) -> list[Mutation]:
    """The catalogue of ``kind``: every value (``full``) or the fast subset."""
    return [m for m in KINDS[kind] if full or m.fast]


def check_labels_unique():
    for kind, muts in KINDS.items():
        labels = [m.label for m in muts]
        assert len(labels) == len(set(labels)), kind
