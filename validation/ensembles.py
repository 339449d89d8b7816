"""Monte-Carlo ensembles of the comparison tables in chunks, on any executor of :mod:`meanfield.parallel`.

The comparison tables average per-network statistics over hundreds to tens of thousands of
simulated networks. :func:`ensemble_moments` and :func:`ensemble_samples` split those networks
into chunks of a fixed size (a property of the table, never of the number of workers); chunk
``k`` draws its networks from the ``k``-th ``SeedSequence`` child of the row's stream
(:func:`meanfield.parallel.chunk_streams`) and runs on the executor in force (``with
meanfield.parallel.using(...)``; the CLI's ``--workers N`` / ``--scheduler ADDRESS``). It is
reduced where it ran -- to the count, sum and sum of squares of the per-network statistics
(:class:`meanfield.parallel.Moments`), or to the per-network arrays a quantile needs -- and the
reductions are added (or concatenated) in chunk order. So a seed gives the same numbers bit for
bit serially, on local processes and on a Dask cluster, and the merge is exact: sums of the
networks' values, never an average of chunk averages.

Used by :mod:`meanfield.validation.dense`, :mod:`meanfield.validation.conv` and
:mod:`meanfield.validation.finite_width` (each names its ``CHUNK_NETWORKS``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from meanfield import parallel

__all__ = ["ensemble_moments", "ensemble_samples"]


def _check_statistic(statistic: object, optional: bool = False) -> None:
    if statistic is None and optional:
        return
    if not callable(statistic):
        raise TypeError(f"statistic must be a callable of a simulator result, got {type(statistic).__name__}")


def _moments(statistic: Callable[[Any], np.ndarray], result: Any) -> parallel.Moments:
    """Count, sum and sum of squares over networks of ``statistic(result)``, an (n_networks, ...) array.

    Non-finite statistics (an overflowing simulation) are summed as they are: the table's mean
    and standard error are then non-finite and its row FAILs, as with
    :func:`meanfield.validation.report.mean_and_stderr`.
    """
    x = np.asarray(statistic(result))
    if np.iscomplexobj(x) or x.dtype == bool or not np.issubdtype(x.dtype, np.number):
        raise TypeError(f"statistic must return a real numeric array, got dtype {x.dtype}")
    if x.ndim == 0 or x.shape[0] == 0:
        raise ValueError(f"statistic must return an array with the networks along axis 0, got shape {x.shape}")
    x = x.astype(np.float64).reshape(x.shape[0], -1)
    return parallel.Moments(int(x.shape[0]), x.sum(axis=0), (x * x).sum(axis=0))


def ensemble_moments(
    simulator: Callable[..., Any],
    *args: Any,
    statistic: Callable[[Any], np.ndarray],
    n_networks: int,
    chunk_size: int,
    rng: Any = None,
    **kwargs: Any,
) -> parallel.Moments:
    """Moments of per-network statistics over ``n_networks`` simulated networks, in chunks.

    Chunk ``k`` calls ``simulator(*args, n_networks=m_k, rng=stream_k, **kwargs)`` (the chunks of
    :func:`meanfield.parallel.chunk_ranges`, ``stream_k`` the ``k``-th child of ``rng``) on the
    current executor and reduces ``statistic(result)`` to its count, sum and sum of squares; the
    reductions are added in chunk order.

    Parameters
    ----------
    simulator : callable
        A simulator of :mod:`meanfield.simulate` (any module-level function taking
        ``n_networks`` and ``rng`` keywords).
    *args, **kwargs
        Passed on to ``simulator``.
    statistic : callable
        Maps a result of ``m`` networks to a real array with the networks along axis 0 (the other
        axes are flattened to ``K`` statistics). A module-level function or a
        ``functools.partial`` of one: it is pickled for processes and Dask.
    n_networks : int
        Total networks, >= 1.
    chunk_size : int
        Networks per chunk, >= 1 (with ``n_networks``, at most :data:`meanfield.parallel.MAX_CHUNKS` chunks).
    rng : None, int, SeedSequence or numpy.random.Generator
        The ensemble's stream; chunk ``k`` uses its ``k``-th spawned child.

    Returns
    -------
    meanfield.parallel.Moments
        ``count == n_networks``; ``total`` and ``total_sq`` of shape ``(K,)``; ``.mean`` and
        ``.stderr`` (ddof = 1) are the table's estimate and standard error. Non-finite statistics
        give non-finite sums (the comparison row then fails), never an exception.

    Raises
    ------
    TypeError
        ``simulator`` or ``statistic`` not callable; a statistic that is not a real array.
    ValueError
        Bad ``n_networks`` / ``chunk_size`` (:func:`meanfield.parallel.chunk_ranges`); a
        statistic without a network axis; whatever ``simulator`` raises for its arguments.

    Notes
    -----
    The result depends on ``rng``, ``n_networks`` and ``chunk_size`` only, not on the executor
    (the same numbers wherever the chunks run); it differs from one unchunked
    simulator call, which draws every network from one stream.
    """
    _check_statistic(statistic)
    return parallel.ensemble(
        simulator,
        *args,
        n_networks=n_networks,
        chunk_size=chunk_size,
        rng=rng,
        reduce=functools.partial(_moments, statistic),
        **kwargs,
    )


class _Samples:
    """A chunk's per-network arrays (networks first); ``merge`` concatenates (``parallel.ensemble``'s ``reduce``)."""

    def __init__(self, value: Any):
        self.value = value

    def merge(self, other: _Samples) -> _Samples:
        return _Samples(_cat(self.value, other.value))


def _cat(a: Any, b: Any) -> Any:
    if isinstance(a, tuple):
        return tuple(_cat(x, y) for x, y in zip(a, b))
    return np.concatenate([a, b], axis=0)


def _samples(statistic: Callable[[Any], Any], result: Any) -> _Samples:
    return _Samples(statistic(result))


def ensemble_samples(
    simulator: Callable[..., Any],
    *args: Any,
    n_networks: int,
    chunk_size: int,
    rng: Any = None,
    statistic: Callable[[Any], Any] | None = None,
    **kwargs: Any,
) -> Any:
    """Per-network results of ``n_networks`` simulated networks in chunks, concatenated in chunk order.

    For the rows that need every sample (quantiles, Kolmogorov-Smirnov distances). The chunks
    and their streams are those of :func:`ensemble_moments`.

    Parameters
    ----------
    simulator : callable
        As in :func:`ensemble_moments`.
    *args, **kwargs
        Passed on to ``simulator``.
    n_networks, chunk_size : int
        As in :func:`ensemble_moments`.
    rng : None, int, SeedSequence or numpy.random.Generator
        As in :func:`ensemble_moments`.
    statistic : callable, optional
        Reduces each chunk's result, where it ran, to an array (or a tuple of arrays) with the
        networks along axis 0 before it travels back. Without it the simulator's own results are
        concatenated (arrays, or result dataclasses whose array fields have the network axis first).

    Returns
    -------
    The concatenated arrays (or result dataclass), networks in chunk order.

    Raises
    ------
    TypeError
        ``simulator`` or ``statistic`` not callable; results that cannot be concatenated.
    ValueError
        As :func:`ensemble_moments`.
    """
    _check_statistic(statistic, optional=True)
    if statistic is None:
        return parallel.ensemble(simulator, *args, n_networks=n_networks, chunk_size=chunk_size, rng=rng, **kwargs)
    merged = parallel.ensemble(
        simulator,
        *args,
        n_networks=n_networks,
        chunk_size=chunk_size,
        rng=rng,
        reduce=functools.partial(_samples, statistic),
        **kwargs,
    )
    return merged.value
