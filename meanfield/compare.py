"""Comparison rows and the verdict rule, shared by :mod:`meanfield.validation` and :mod:`meanfield.pytorch.audit`.

A :class:`Comparison` holds one prediction, its estimate (a Monte-Carlo mean, a trained network's
statistic) and the estimate's standard error. The verdict rule (:func:`passes`) is

- ``side="both"``: ``|estimate - theory| <= z * stderr + systematic`` (the estimate equals the theory);
- ``side="above"`` / ``"below"``: ``estimate >= theory - tolerance`` / ``estimate <= theory + tolerance``
  (a bound: the estimate is not significantly below / above ``theory``);
- ``side="differs"``: ``|estimate - theory| > tolerance`` (the estimate is significantly away from
  ``theory``: a row demonstrating that an approximation does *not* hold);

with ``tolerance = z * stderr + systematic``: ``z`` is the number of standard errors allowed (a named
constant, :data:`Z_DEFAULT`, chosen so that a correct theory fails a table of ~100 rows with
probability < 1e-3), ``systematic`` an explicit, documented bound on effects the theory neglects on
purpose (e.g. the O(1/width) finite-width correction of mean-field theory; zero by default). A
non-finite theory, estimate or standard error never passes.

A row is one of two kinds (:data:`KINDS`):

- a **check** (``kind="check"``, the default): theory against simulation. Verdict ``ok`` or
  ``FAIL``; a failed check is a bug, and ``meanfield validate`` / ``meanfield reproduce`` exit 1.
- a **claim** of a paper or about the platform (``kind="claim"``): a statement the run reproduces or
  not at its size (a trained network's accuracy ordering, a property of the machine's kernels).
  Verdict ``reproduced`` or ``not reproduced``, with the evidence in the row; reported in the
  summary, never a failure (exit 0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

__all__ = ["KINDS", "SIDES", "Z_DEFAULT", "Comparison", "passes"]

#: Standard errors allowed by default: two-sided ``P(|Z| > 4.5) = 6.8e-6``, so 100 correct rows all
#: pass with probability > 0.999.
Z_DEFAULT = 4.5
#: What a row asserts about its estimate and theory (:func:`passes`).
SIDES = ("both", "above", "below", "differs")
#: A row is a check (a failure is a bug) or a claim (reproduced or not, reported).
KINDS = ("check", "claim")


def _check_real(value, attr: str) -> None:
    """A real scalar; ``stderr``, ``z``, ``systematic`` >= 0 and ``z``, ``systematic`` finite.
    NaN / inf in ``theory``, ``estimate`` or ``stderr`` is allowed: the row then does not pass."""
    if isinstance(value, (bool, np.bool_, str, bytes)) or np.iscomplexobj(value):
        raise TypeError(f"{attr} must be a real number, got {value!r}")
    arr = np.asarray(value)
    if arr.ndim != 0 or not np.issubdtype(arr.dtype, np.number):
        raise TypeError(f"{attr} must be a real scalar, got {value!r}")
    if attr in ("stderr", "z", "systematic") and float(arr) < 0:
        raise ValueError(f"{attr} must be >= 0, got {float(arr)}")
    if attr in ("z", "systematic") and not math.isfinite(float(arr)):
        raise ValueError(f"{attr} must be finite, got {float(arr)}")


def passes(theory, estimate, stderr, z: float = Z_DEFAULT, systematic: float = 0.0, side: str = "both") -> bool:
    """The verdict rule: whether ``estimate`` meets ``theory`` within ``z * stderr + systematic``.

    Parameters
    ----------
    theory, estimate, stderr : float
        The prediction, its estimate and the estimate's standard error; any of them non-finite: False.
    z : float
        Standard errors allowed (:data:`Z_DEFAULT`).
    systematic : float
        Documented bound on the bias the theory neglects, in the units of ``theory``.
    side : {"both", "above", "below", "differs"}
        See the module notes.

    Returns
    -------
    bool

    Raises
    ------
    TypeError
        An argument that is not a real scalar (a bool, a string, a complex number, an array).
    ValueError
        A negative ``stderr``, ``z`` or ``systematic``, a non-finite ``z`` or ``systematic``, an
        unknown ``side``.
    """
    if not isinstance(side, str) or side not in SIDES:
        raise ValueError(f"side must be one of {SIDES}, got {side!r}")
    for name, value in (
        ("theory", theory),
        ("estimate", estimate),
        ("stderr", stderr),
        ("z", z),
        ("systematic", systematic),
    ):
        _check_real(value, name)
    if not all(math.isfinite(float(v)) for v in (theory, estimate, stderr)):
        return False
    tolerance = z * stderr + systematic
    diff = float(estimate) - float(theory)
    if side == "above":
        return diff >= -tolerance
    if side == "below":
        return diff <= tolerance
    if side == "differs":
        return abs(diff) > tolerance
    return abs(diff) <= tolerance


@dataclass(frozen=True)
class Comparison:
    """One row: a prediction, its estimate, the estimate's standard error and the verdict rule.

    Attributes
    ----------
    name : str
        What is compared (e.g. ``"tanh chaotic: q^5"``).
    theory : float
        The prediction.
    estimate : float
        The Monte-Carlo (or measured) estimate.
    stderr : float
        Standard error of ``estimate``.
    z : float
        Standard errors allowed.
    systematic : float
        Documented bound on the bias the theory neglects (absolute units of ``theory``).
    note : str
        Where the tolerance comes from, the evidence of a claim, anything a reader should know.
    side : {"both", "above", "below", "differs"}
        ``"both"``: the estimate must equal the theory; ``"above"`` / ``"below"``: the claim is a
        bound, the estimate must not fall significantly below / above ``theory``; ``"differs"``: the
        estimate must lie significantly away from ``theory`` (:func:`passes`).
    kind : {"check", "claim"}
        A check (a failure is a bug) or a claim (reproduced or not; module notes).
    """

    name: str
    theory: float
    estimate: float
    stderr: float
    z: float = Z_DEFAULT
    systematic: float = 0.0
    note: str = field(default="", compare=False)
    side: str = "both"
    kind: str = "check"

    def __post_init__(self):
        if not isinstance(self.name, str):
            raise TypeError(f"name must be a str, got {self.name!r}")
        if not isinstance(self.note, str):
            raise TypeError(f"note must be a str, got {self.note!r}")
        if not isinstance(self.side, str) or self.side not in SIDES:
            raise ValueError(f"side must be one of {', '.join(repr(s) for s in SIDES)}, got {self.side!r}")
        if not isinstance(self.kind, str) or self.kind not in KINDS:
            raise ValueError(f"kind must be 'check' or 'claim', got {self.kind!r}")
        for attr in ("theory", "estimate", "stderr", "z", "systematic"):
            _check_real(getattr(self, attr), attr)

    @property
    def tolerance(self) -> float:
        return self.z * self.stderr + self.systematic

    @property
    def passed(self) -> bool:
        """Whether the estimate meets the rule (:func:`passes`): a check passes, a claim is reproduced."""
        return passes(self.theory, self.estimate, self.stderr, self.z, self.systematic, self.side)

    @property
    def failed(self) -> bool:
        """A check that did not pass (a bug; a claim never fails)."""
        return self.kind == "check" and not self.passed

    @property
    def verdict(self) -> str:
        """``"ok"`` / ``"FAIL"`` for a check, ``"reproduced"`` / ``"not reproduced"`` for a claim."""
        if self.kind == "claim":
            return "reproduced" if self.passed else "not reproduced"
        return "ok" if self.passed else "FAIL"
