"""The mean-field state a network description carries from layer to layer (private).

A :class:`State` describes one representation of D inputs over P spatial positions (P = 1 for dense
signals) in the infinite-width limit, per unit (channel):

- ``second``: the same-unit second moments :math:`S_{(a\\alpha),(b\\beta)} = \\mathbb{E}\\, z_i(a,\\alpha) z_i(b,\\beta)`
  (uncentred), shape (D P, D P);
- ``cross``: the second moments of two *different* units, :math:`\\mathbb{E}\\, z_i z_j` (i != j), assumed
  the same for every pair (exchangeable units), or None when they vanish exactly (the units of a
  dense or convolutional layer with zero-mean weights are uncorrelated);
- ``act``: a pending activation. When set, the state is :math:`\\phi(h)` with ``h`` the zero-mean
  Gaussian described by ``second`` / ``cross``: the next dense or convolutional layer then applies
  the library's C-map :func:`meanfield.dense.covariance_map` to ``h`` in one call (the numbers of
  :mod:`meanfield.dense`, :mod:`meanfield.conv` and :mod:`meanfield.ntk`);
- ``gaussian``: whether ``second`` / ``cross`` describe a zero-mean jointly Gaussian field (what an
  activation needs to be applied exactly);
- ``ntk`` / ``ntk_cross``: the tangent kernel of the representation (same-unit, different-unit),
  or None when not requested;
- ``law``: for a non-Gaussian field of independent units, its per-unit law as a function of
  independent Gaussian fields (:mod:`meanfield.nets._law`), valid only for the ``second`` and
  ``cross`` it was built with: an activation of the field then has a rule.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .. import dense

__all__: list[str] = []


@dataclass(frozen=True)
class State:
    """Per-unit moments of one representation (module notes)."""

    second: np.ndarray | None
    cross: np.ndarray | None
    width: int
    spatial: tuple
    n_inputs: int
    gaussian: bool
    act: Any = None
    ntk: np.ndarray | None = None
    ntk_cross: np.ndarray | None = None
    x: np.ndarray | None = None  # the raw input (D, *spatial, c) before the first layer
    mean: np.ndarray | None = None  # E z_i over inputs x positions (D P,), None: zero
    mean_known: bool = True  # False where the mean is not determined by the library's kernels
    law: Any = None  # a non-Gaussian field's per-unit law (meanfield.nets._law.Described), valid for `second` only


def law_of(state: State):
    """The per-unit law of ``state`` when it carries a valid one (built for its ``second``), else None."""
    if state.law is not None and state.law.second is state.second and state.law.cross is state.cross:
        return state.law.law
    return None


def gaussian_law(state: State):
    """The law of a zero-mean Gaussian state of independent units without a pending activation, else None."""
    from ._law import GaussLaw

    if state.gaussian and state.act is None and state.x is None and state.cross is None:
        return GaussLaw(state.second)
    return law_of(state) if state.act is None and state.x is None else None


def with_law(state: State, law) -> State:
    """``state`` carrying ``law`` (the law of its units, which must have its ``second``)."""
    from ._law import Described

    return replace(state, law=Described(law, state.second, state.cross))


#: Activations with phi(-u) = -phi(u): a zero-mean Gaussian input gives a zero-mean output.
ODD = ("linear", "tanh", "erf", "hard_tanh", "sin", "sign")
#: Activations whose mean over a zero-mean Gaussian is positive, so that it is the square root of
#: E phi(h) E phi(h') (h' an independent copy), a pair expectation the library computes.
POSITIVE_MEAN = ("relu", "sigmoid", "softplus", "swish", "gelu", "cos", "abs", "exp", "rbf", "relu_power")


def activation_mean(act, second: np.ndarray, degree: int):
    """``(mean, known)`` of ``phi(h)``, ``h ~ N(0, second)``, per input x position."""
    base = act.name.split("(")[0]
    if act.is_builtin and (base in ODD or (base == "leaky_relu" and act.param == 1.0)):
        return None, True
    if act.is_builtin and (base in POSITIVE_MEAN or (base == "leaky_relu" and act.param < 1.0)):
        q = np.diagonal(second)
        pairs = np.zeros((q.size, 2, 2))
        pairs[:, 0, 0] = pairs[:, 1, 1] = q
        m2 = dense.covariance_map(pairs, act, 1.0, 0.0, degree)[:, 0, 1]  # E phi(h) E phi(h')
        return np.sqrt(np.clip(m2, 0.0, None)), True
    return None, False


def map_positions(state: State, f, spatial: tuple, mean) -> State:
    """``state`` with the same linear map of the positions ``f`` applied to every moment matrix (None stays None)."""

    def g(m):
        return None if m is None else f(m)

    return replace(
        state,
        second=g(state.second),
        cross=g(state.cross),
        ntk=g(state.ntk),
        ntk_cross=g(state.ntk_cross),
        spatial=spatial,
        mean=None if state.mean is None else mean(state.mean),
    )


def joint(s: np.ndarray, c: np.ndarray | None) -> np.ndarray:
    """The covariance of two distinct units over inputs x positions, ``[[S, C], [C, S]]``."""
    c = np.zeros_like(s) if c is None else c
    return np.block([[s, c], [c.T, s]])


def materialise(state: State, where: str, degree: int) -> State:
    """The moments of ``phi(h)`` for a pending activation (identity without one); the raw input's moments."""
    if state.x is not None:
        x = state.x.reshape(state.n_inputs, -1, state.width)  # (D, P, c)
        p = x.shape[1]
        flat = x.reshape(state.n_inputs * p, state.width)
        with np.errstate(over="ignore", invalid="ignore"):
            s = flat @ flat.T / state.width
            m = flat.mean(axis=1)
            c = (np.outer(m, m) * state.width - s) / (state.width - 1) if state.width > 1 else None
        if not np.all(np.isfinite(s)) or (c is not None and not np.all(np.isfinite(c))):
            raise ValueError("x is too large: its second moments exceed the float64 range (rescale x)")
        return replace(
            state, second=s, cross=c, x=None, gaussian=False, ntk=None if state.ntk is None else np.zeros_like(s)
        )
    if state.act is None:
        return state
    if not state.gaussian and law_of(state) is not None and state.ntk is None:
        return _law_materialise(state, degree)
    if not state.gaussian:
        raise ValueError(
            f"the mean-field theory cannot describe Act({state.act.name!r}) before {where}: it acts on a "
            "non-Gaussian representation (features of a deterministic or non-Gaussian layer)"
        )
    n = state.second.shape[0]
    mapped = dense.covariance_map(joint(state.second, state.cross), state.act, 1.0, 0.0, degree)
    ntk = ntk_c = None
    if state.ntk is not None:
        dot = dense.derivative_covariance_map(joint(state.second, state.cross), state.act, 1.0, degree)
        ntk = dot[:n, :n] * state.ntk
        ntk_c = None if state.ntk_cross is None else dot[:n, n:] * state.ntk_cross
    mean, known = activation_mean(state.act, state.second, degree)
    out = replace(
        state,
        second=mapped[:n, :n],
        cross=mapped[:n, n:],
        act=None,
        gaussian=False,
        ntk=ntk,
        ntk_cross=ntk_c,
        mean=mean,
        mean_known=known,
    )
    if state.cross is None:  # independent units: phi(h) has the law of meanfield.nets._law
        from ._law import ActLaw, GaussLaw

        out = with_law(out, ActLaw(GaussLaw(state.second), _numpy_phi(state.act)))
    return out


def _numpy_phi(act):
    from ..backend import get_backend
    from ._layers import activation_fn

    return activation_fn(act, get_backend("numpy"))


def _law_materialise(state: State, degree: int) -> State:
    """The moments of ``phi(u)`` for a non-Gaussian ``u`` of known law: Gaussian integrals over its parts."""
    from ._law import ActLaw, moments_of

    law = ActLaw(law_of(state), _numpy_phi(state.act))
    cache = state.law.cache  # the skip and the branch of a block materialise the same state
    key = (state.act, degree)
    if key not in cache:
        cache[key] = moments_of(law, state.second.shape[0])
    second, mean = cache[key]
    out = replace(
        state,
        second=second,
        cross=np.outer(mean, mean),
        act=None,
        gaussian=False,
        mean=mean,
        mean_known=True,
    )
    return with_law(out, law)


# ----------------------------------------------------------------------------------------------
# Linear maps across channels: y = L x with L of shape (n_out, n_in).


@dataclass(frozen=True)
class ChannelMoments:
    """The four sums of a channel matrix ``L`` (n_out x n_in) that fix the moments of ``L x``.

    With exchangeable units of same-unit moment ``S`` and different-unit moment ``C``:
    ``E ||L x||^2 = tr(L^T L) (S - C) + ||L 1||^2 C`` and, summed over ordered pairs i != k of
    outputs, ``(||L^T 1||^2 - tr(L^T L)) (S - C) + ((1^T L 1)^2 - ||L 1||^2) C``. Exact for
    exchangeable ``L`` (``I``, ``1 1^T / n``, their mixtures); otherwise the average over units.
    """

    n_out: int
    n_in: int
    trace: float  # tr(L^T L)
    row_sums: float  # ||L 1||^2
    col_sums: float  # ||L^T 1||^2
    total: float  # (1^T L 1)^2
    ones: float  # 1^T L 1

    @classmethod
    def of(cls, m: np.ndarray) -> ChannelMoments:
        m = np.asarray(m, dtype=float)
        ones_in, ones_out = np.ones(m.shape[1]), np.ones(m.shape[0])
        return cls(
            m.shape[0],
            m.shape[1],
            float(np.sum(m * m)),
            float(np.sum((m @ ones_in) ** 2)),
            float(np.sum((ones_out @ m) ** 2)),
            float(np.sum(m)) ** 2,
            float(np.sum(m)),
        )

    @property
    def transpose(self) -> ChannelMoments:
        return ChannelMoments(self.n_in, self.n_out, self.trace, self.col_sums, self.row_sums, self.total, self.ones)

    def apply_mean(self, mean: np.ndarray | None) -> np.ndarray | None:
        """The mean of ``L x`` averaged over the outputs, ``(1^T L 1 / n_out) E x`` (exact for equal row sums)."""
        return None if mean is None else (self.ones / self.n_out) * mean

    def apply(self, s: np.ndarray, c: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
        """``(S', C')`` of ``L x`` from ``(S, C)`` of ``x`` (``C = None`` is zero)."""
        c0 = np.zeros_like(s) if c is None else c
        centred = s - c0
        s_out = (self.trace * centred + self.row_sums * c0) / self.n_out
        if self.n_out < 2:
            return s_out, None
        pairs = self.n_out * (self.n_out - 1)
        c_out = ((self.col_sums - self.trace) * centred + (self.total - self.row_sums) * c0) / pairs
        return s_out, (None if not np.any(c_out) else c_out)


def identity_moments(n: int) -> ChannelMoments:
    return ChannelMoments(n, n, float(n), float(n), float(n), float(n) ** 2, float(n))


def add(a: np.ndarray | None, b: np.ndarray | None) -> np.ndarray | None:
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def scale(a: np.ndarray | None, s: float) -> np.ndarray | None:
    return None if a is None else s * a


# ----------------------------------------------------------------------------------------------
# Periodic averaging over positions in any number of spatial dimensions (Xiao et al. 2018, eq. 2.4).


def offsets(v: np.ndarray):
    """(offset tuple beta, weight v_beta) for the non-zero entries of v (beta = j - k per axis)."""
    for index in zip(*np.nonzero(v)):
        yield tuple(int(j) - s // 2 for j, s in zip(index, v.shape)), float(v[index])


def average(blocks: np.ndarray, v: np.ndarray, shape: tuple, sign: int = +1) -> np.ndarray:
    """:math:`\\sum_\\beta v_\\beta \\Sigma_{\\alpha+\\beta,\\alpha'+\\beta}` on the trailing (P, P) axes.

    The rolls of :func:`meanfield.conv.average` (same sums in the same order: the same numbers in
    one and two dimensions) for any number of spatial axes; ``sign=-1`` is the adjoint.
    """
    d = len(shape)
    lead = blocks.shape[:-2]
    x = blocks.reshape(lead + tuple(shape) + tuple(shape))
    axes_a = tuple(range(len(lead), len(lead) + d))
    axes_b = tuple(range(len(lead) + d, len(lead) + 2 * d))
    out = np.zeros_like(x)
    for beta, weight in offsets(v):
        shift = tuple(-sign * b for b in beta) * 2
        out += weight * np.roll(x, shift, axis=axes_a + axes_b)
    return out.reshape(blocks.shape)


def average_flat(flat: np.ndarray, n_inputs: int, v: np.ndarray, shape: tuple, sign: int = +1) -> np.ndarray:
    """:func:`average` of a (D P, D P) matrix, block by block (the same shift for every input pair)."""
    p = math.prod(shape)
    blocks = np.swapaxes(flat.reshape(n_inputs, p, n_inputs, p), 1, 2)
    out = np.swapaxes(average(blocks, v, shape, sign), 1, 2)
    return out.reshape(flat.shape)
