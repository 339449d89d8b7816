r"""Per-unit laws of non-Gaussian signals built from independent Gaussian parts (private).

At infinite width every unit of a representation is an independent copy of one random field over
the D inputs x P positions. After a dense or convolutional layer that field is a zero-mean
Gaussian, fixed by its second moments; after a max pooling, or a residual sum of a non-Gaussian
stream and a fresh branch (post-activation ResNets: :math:`x_{l+1} = \phi(x_l + f_l(x_l))`), it is
not, and an activation of it needs more than its moments. It is then still an explicit function of
independent Gaussian fields whose covariances the rules compute:

- :class:`GaussLaw` ``N(0, S)``;
- :class:`ActLaw` :math:`\phi(u)` of a law ``u``;
- :class:`SumLaw` ``u + g`` of two independent laws (the branch's fresh weights make its unit
  independent of the stream's in the limit);
- :class:`MaxLaw` :math:`\max_{W}\phi(h)` over pooling windows of a Gaussian ``h``.

A law draws its field at any few entries from standard normal points (:meth:`draw`, ``dims``
normals per point), so that the moments a rule needs -- :math:`\mathbb{E}\,\phi(u_a)\phi(u_b)` for a
pair of entries, :math:`\mathbb{E}\,\phi(u_a)` -- are Gaussian integrals over at most ``dims``
variables, computed by the randomised quasi-Monte-Carlo of :mod:`meanfield.nets._gauss` (8 scrambled
Sobol sets of 4,096 points; error about 1e-4 to 1e-3 relative). A law travels on the
:class:`~meanfield.nets._state.State` whose ``second`` it describes (``law.second is
state.second``); any rule that changes the moments without building a new law drops it, so that a
stale law is never used.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._gauss import _normals, sqrt_psd

__all__: list[str] = []


@dataclass(frozen=True, eq=False)
class GaussLaw:
    """``N(0, cov)`` over the entries."""

    cov: np.ndarray

    def dims(self, entries) -> int:
        return len(entries)

    def draw(self, z, entries):
        e = np.asarray(entries)
        return z @ sqrt_psd(self.cov[np.ix_(e, e)]).T


@dataclass(frozen=True, eq=False)
class ActLaw:
    """``phi(u)`` of a law ``u`` (``phi`` a NumPy function)."""

    base: Any
    phi: Any

    def dims(self, entries) -> int:
        return self.base.dims(entries)

    def draw(self, z, entries):
        return self.phi(self.base.draw(z, entries))


@dataclass(frozen=True, eq=False)
class SumLaw:
    """``u + g`` of two independent laws."""

    a: Any
    b: Any

    def dims(self, entries) -> int:
        return self.a.dims(entries) + self.b.dims(entries)

    def draw(self, z, entries):
        k = self.a.dims(entries)
        return self.a.draw(z[:, :k], entries) + self.b.draw(z[:, k:], entries)


@dataclass(frozen=True, eq=False)
class MaxLaw:
    """``max_{W_e} phi(h)`` for every output entry ``e`` (``windows[e]``: its input entries), ``h ~ N(0, cov)``."""

    cov: np.ndarray
    windows: tuple
    phi: Any

    def _union(self, entries):
        return np.unique(np.concatenate([self.windows[e] for e in entries]))

    def dims(self, entries) -> int:
        return self._union(entries).size

    def draw(self, z, entries):
        u = self._union(entries)
        h = self.phi(z @ sqrt_psd(self.cov[np.ix_(u, u)]).T)
        cols = [np.searchsorted(u, self.windows[e]) for e in entries]
        return np.stack([np.max(h[:, c], axis=1) for c in cols], axis=1)


@dataclass(frozen=True, eq=False)
class Described:
    """A law with the moments it was built for (``second``, ``cross``: identity-checked against the state's)."""

    law: Any
    second: np.ndarray
    cross: Any
    cache: dict = field(default_factory=dict)  # moments of activations of the law, by (activation, degree)


def moments_of(law, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(E v_a v_b, E v_a)`` over the ``n`` entries of ``law`` (module notes)."""
    second = np.empty((n, n))
    mean = np.empty(n)
    for a in range(n):
        d = law.dims([a])
        v = law.draw(_normals(d).reshape(-1, d), [a])[:, 0]
        mean[a] = v.mean()
        second[a, a] = np.mean(v * v)
        for b in range(a + 1, n):
            d = law.dims([a, b])
            z = _normals(d).reshape(-1, d)
            pair = law.draw(z, [a, b])
            second[a, b] = second[b, a] = np.mean(pair[:, 0] * pair[:, 1])
    return second, mean
