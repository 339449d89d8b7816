"""Quadrature rules and each built-in's quadrature family.

The probabilists' Gauss-Hermite rule (:func:`hermite_rule`) and its pruned form the kernels use
(:func:`kernel_rule`); :func:`family_rule` selects, per built-in, what its kernels compile: the
quadrature alone (:data:`QUADRATURE_ONLY`), or the closed forms of its family
(:func:`closed_flag`) with a quadrature pass for the entries that have none (:func:`run_by_family`).
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np
from scipy.special import roots_hermitenorm

from .._checks import check_int
from ._closed import CLOSED_CORE, CLOSED_EXTENDED, CORE_CLOSED
from ._registry import SIGMOID, SOFTPLUS, SWISH, TANH

if TYPE_CHECKING:  # annotations only
    from ._registry import Activation


#: Default number of Gauss-Hermite nodes per dimension.
DEFAULT_DEGREE = 100


@lru_cache(maxsize=32)
def _rule(degree: int):
    z, w = roots_hermitenorm(degree)
    w = w / w.sum()
    z.setflags(write=False)
    w.setflags(write=False)
    return z, w


#: Nodes whose normalised weight is below this are dropped from the rule the kernels use: at the
#: default degree 100 this keeps 64 of 100 nodes, and the dropped mass (< 1e-25, times z^2 < 2e-23)
#: is far below rounding, while the 2-D tensor rule becomes 2.4 times cheaper.
PRUNE_WEIGHT = 1e-25


@lru_cache(maxsize=32)
def _kernel_rule(degree: int):
    z, w = _rule(degree)
    keep = w >= PRUNE_WEIGHT
    zk, wk = np.ascontiguousarray(z[keep]), np.ascontiguousarray(w[keep])
    zk.setflags(write=False)
    wk.setflags(write=False)
    return zk, wk


def kernel_rule(degree: int = DEFAULT_DEGREE) -> tuple[np.ndarray, np.ndarray]:
    """The pruned rule the kernels integrate with: :func:`hermite_rule` less nodes of weight < PRUNE_WEIGHT."""
    degree = check_int(degree, "degree", 1, 2000)
    return _kernel_rule(degree)


def hermite_rule(degree: int = DEFAULT_DEGREE) -> tuple[np.ndarray, np.ndarray]:
    """Probabilists' Gauss-Hermite nodes and weights (weights sum to 1), cached per degree.

    ``sum(w * f(z))`` approximates ``E f(Z)`` for ``Z ~ N(0, 1)``, exactly for polynomials of
    degree ``< 2 * degree``.
    """
    degree = check_int(degree, "degree", 1, 2000)
    return _rule(degree)


#: Built-ins with no closed form at any derivative order or argument: :func:`_closed_pair`,
#: :func:`_closed_single` and :func:`_closed_variance_derivative` are NaN for them everywhere, so
#: their kernels compile the quadrature alone. Every other built-in has closed forms (NaN only at
#: some derivative orders: erf's ``(0, 2)``, ...), so its kernels compile the closed forms alone
#: and the NaN entries are redone by quadrature (:func:`family_rule`, :func:`run_by_family`).
QUADRATURE_ONLY = (TANH, SIGMOID, SOFTPLUS, SWISH)


#: Whether a first-tier pass of this process has reached the graded rule (:func:`first_tier`).
_FULL_TREE = [False]


def first_tier():
    """The ``cf`` of a quadrature-only kernel's first pass: a fresh status array, or None.

    The quadrature of a built-in has three rules by the scale ``sqrt(q)`` of its integrand
    (Gauss-Hermite, trapezoid, and graded Gauss-Legendre panels beyond ``TRAPEZOID_MAX_SCALE``);
    the graded rule is 25-40 % of what a first call compiles, and most calls never reach it. With
    ``cf`` an int64 array of one zero, a kernel compiles without it: where it would be used, the
    kernel sets ``cf[0] = 1`` and returns NaN, and the caller redoes the whole call with ``cf``
    None (every rule; :func:`needs_full_tree`), so the numbers are those of the full kernel, bit
    for bit. Once one call of the process has needed the graded rule, every later first pass is
    the full one (None): a second compilation is paid at most once per process.
    """
    return None if _FULL_TREE[0] else np.zeros(1, np.int64)


def needs_full_tree(cf) -> bool:
    """Whether the first-tier pass run with ``cf`` reached the graded rule (its results are void).

    True marks the process (:func:`first_tier` returns None from then on); the caller redoes the
    call with the full rule.
    """
    if isinstance(cf, np.ndarray) and cf[0]:
        _FULL_TREE[0] = True
        return True
    return False


def require_full_tree() -> None:
    """Compile every rule from the first call on: for callers that will reach large variances
    (``dense.critical_sigma_w2``'s bracket), where a first tier would be compiled for nothing."""
    _FULL_TREE[0] = True


def family_rule(act: Activation, degree: int) -> tuple:
    """``(z, w, cf)`` of the first pass of a family-split kernel (for the cold start).

    A family-split kernel takes the quadrature rule ``z, w`` and a flag ``cf``, each either an
    array / int or ``None``, and evaluates ``v = closed form if cf is not None`` then ``quadrature
    if z is not None and v is NaN`` -- the operations of :func:`pair_value` / :func:`single_value`
    / :func:`variance_derivative_value`. Numba prunes, at compile time, the branch of an argument
    typed ``None``, so the kernel compiles one family only:

    * ``QUADRATURE_ONLY`` built-ins: ``(z, w, first_tier())`` -- no closed forms compiled (they
      would all be NaN), and no graded rule until a call needs it (:func:`first_tier`; the caller
      checks :func:`needs_full_tree`);
    * every other built-in: ``(None, None, closed_flag(act))`` -- no quadrature compiled, and only
      the closed forms of the activation's family (:data:`CLOSED_CORE`: linear, relu, leaky_relu,
      erf, hard_tanh; :data:`CLOSED_EXTENDED`: gelu and the extended built-ins); an entry whose closed
      form is NaN (no closed form at that order or argument) must be redone with
      ``(z, w, None)``, which is what :func:`pair_value` would have returned there
      (:func:`run_by_family` does both passes).

    The numbers are therefore those of the kernels with both families, bit for bit
    (``benchmarks/cold_start_hashes.py``).
    """
    z, w = kernel_rule(degree)
    if act.code in QUADRATURE_ONLY:
        return z, w, first_tier()
    return None, None, closed_flag(act)


def closed_flag(act: Activation):
    """The ``cf`` of a closed-form built-in: :data:`CLOSED_CORE` or :data:`CLOSED_EXTENDED` by family."""
    return CLOSED_CORE if act.code in CORE_CLOSED else CLOSED_EXTENDED


def run_by_family(kernel, act: Activation, degree: int, args: tuple, out: np.ndarray) -> np.ndarray:
    """Fill ``out`` (1-D) with ``kernel(code, param, *args, z, w, cf, out)`` split by family.

    ``args`` are scalars and 1-D arrays of ``out``'s length (the per-entry inputs). The first pass
    uses :func:`family_rule`; a quadrature-only first tier that reached the graded rule is redone
    whole with every rule; for a closed-form family the entries left NaN are recomputed by a
    quadrature-only pass on those entries alone (the fallback of :func:`pair_value`).
    """
    z, w, cf = family_rule(act, degree)
    kernel(act.code, act.param, *args, z, w, cf, out)
    if needs_full_tree(cf):
        kernel(act.code, act.param, *args, z, w, None, out)
    if z is None:
        redo = np.flatnonzero(np.isnan(out))
        if redo.size:
            zq, wq = kernel_rule(degree)
            sub = tuple(np.ascontiguousarray(x[redo]) if isinstance(x, np.ndarray) else x for x in args)
            part = np.empty(redo.size)
            kernel(act.code, act.param, *sub, zq, wq, None, part)
            out[redo] = part
    return out
