"""The closed-form Gaussian moments of every built-in, dispatched by activation code and by family.

:func:`_closed_pair`, :func:`_closed_single` and :func:`_closed_variance_derivative` return the
closed form of any built-in (NaN where there is none); the ``closed_*_by`` functions, called from
compiled kernels only, compile the closed forms of one family (:data:`CLOSED_CORE`:
:mod:`._closed_core`; :data:`CLOSED_EXTENDED`: :mod:`._closed_extended` and :mod:`._closed_elu`).
"""

from __future__ import annotations

import math

import numba
from numba.core import types
from numba.extending import overload

from ._closed_core import (
    _acos_terms,
    _core_closed_pair,
    _core_closed_single,
    _core_closed_variance_derivative,
)
from ._closed_extended import pair_closed, single_closed, variance_derivative_closed
from ._registry import ERF, GELU, HARD_TANH, LEAKY_RELU, LINEAR, RELU, SIN


@numba.njit(cache=True)
def _closed_pair(code, a, d1, d2, q1, q2, c):
    """E phi^(d1)(u1) phi^(d2)(u2) in closed form, or NaN."""
    if code >= SIN or code == GELU:  # the extended closed forms (meanfield.closed_forms)
        return pair_closed(code, a, d1, d2, q1, q2, c)
    return _core_closed_pair(code, a, d1, d2, q1, q2, c)


@numba.njit(cache=True)
def _closed_single(code, a, d1, d2, q):
    """E phi^(d1)(u) phi^(d2)(u), u ~ N(0, q), in closed form, or NaN."""
    if code >= SIN or code == GELU:
        return single_closed(code, a, d1, d2, q)
    return _core_closed_single(code, a, d1, d2, q)


@numba.njit(cache=True)
def _closed_variance_derivative(code, a, q):
    """d/dq E phi(sqrt(q) z)^2 in closed form, or NaN."""
    if code >= SIN or code == GELU:
        return variance_derivative_closed(code, a, q)
    return _core_closed_variance_derivative(code, a, q)


#: The closed forms alone, NaN where there is none (for kernels that select them by activation
#: family, so that the quadrature path is not compiled where it is never used).
closed_pair_value = _closed_pair


closed_single_value = _closed_single


closed_variance_derivative_value = _closed_variance_derivative


#: (theta, sin theta) of theta = arccos(c), c clipped to [-1, 1] (the arc-cosine kernels).
acos_terms = _acos_terms


#: Values of the closed-form flag ``cf`` of the family-split kernels (:func:`family_rule`). Only the
#: *type* matters: it selects, at compile time, which closed forms a kernel compiles.
#: An int: every built-in's (the code-dispatched tree of :func:`_closed_pair`). An int64 array (a
#: status, :func:`meanfield.activations._quadrature.first_tier`): none (the quadrature's first tier).
CLOSED_ALL = 0


#: A float: those of linear, relu, leaky_relu, erf, hard_tanh only (``_core_closed_*``).
CLOSED_CORE = 0.0


#: A bool: those of gelu and the extended built-ins only (``_closed_extended``, ``_closed_elu``: sin, cos, abs,
#: sign, exp, rbf, relu_power, elu, selu).
CLOSED_EXTENDED = True


#: The built-ins of :data:`CLOSED_CORE`.
CORE_CLOSED = (LINEAR, RELU, LEAKY_RELU, ERF, HARD_TANH)


def closed_pair_by(cf, code, a, d1, d2, q1, q2, c):
    """:func:`closed_pair_value`, compiling only the closed forms of ``cf``'s family (Numba only)."""
    raise NotImplementedError("closed_pair_by is called from compiled kernels only")


def closed_single_by(cf, code, a, d1, d2, q):
    """:func:`closed_single_value`, compiling only the closed forms of ``cf``'s family (Numba only)."""
    raise NotImplementedError("closed_single_by is called from compiled kernels only")


def closed_variance_derivative_by(cf, code, a, q):
    """:func:`closed_variance_derivative_value` for ``cf``'s family (Numba only)."""
    raise NotImplementedError("closed_variance_derivative_by is called from compiled kernels only")


# The family is chosen by the type of cf while the caller is typed: the other families' closed
# forms are never typed or compiled (the tree of every built-in's closed forms is ~30 % of the
# compile time of a closed-form kernel). Same functions, so the same bits.
@overload(closed_pair_by)
def _closed_pair_by(cf, code, a, d1, d2, q1, q2, c):
    if isinstance(cf, types.Array):  # the quadrature's first tier (first_tier): no closed form
        return lambda cf, code, a, d1, d2, q1, q2, c: math.nan
    if isinstance(cf, types.Boolean):
        return lambda cf, code, a, d1, d2, q1, q2, c: pair_closed(code, a, d1, d2, q1, q2, c)
    if isinstance(cf, types.Float):
        return lambda cf, code, a, d1, d2, q1, q2, c: _core_closed_pair(code, a, d1, d2, q1, q2, c)
    return lambda cf, code, a, d1, d2, q1, q2, c: _closed_pair(code, a, d1, d2, q1, q2, c)


@overload(closed_single_by)
def _closed_single_by(cf, code, a, d1, d2, q):
    if isinstance(cf, types.Array):  # the quadrature's first tier (first_tier): no closed form
        return lambda cf, code, a, d1, d2, q: math.nan
    if isinstance(cf, types.Boolean):
        return lambda cf, code, a, d1, d2, q: single_closed(code, a, d1, d2, q)
    if isinstance(cf, types.Float):
        return lambda cf, code, a, d1, d2, q: _core_closed_single(code, a, d1, d2, q)
    return lambda cf, code, a, d1, d2, q: _closed_single(code, a, d1, d2, q)


@overload(closed_variance_derivative_by)
def _closed_variance_derivative_by(cf, code, a, q):
    if isinstance(cf, types.Array):  # the quadrature's first tier (first_tier): no closed form
        return lambda cf, code, a, q: math.nan
    if isinstance(cf, types.Boolean):
        return lambda cf, code, a, q: variance_derivative_closed(code, a, q)
    if isinstance(cf, types.Float):
        return lambda cf, code, a, q: _core_closed_variance_derivative(code, a, q)
    return lambda cf, code, a, q: _closed_variance_derivative(code, a, q)
