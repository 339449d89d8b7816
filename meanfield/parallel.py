"""One execution layer: independent chunks run in-process, on local processes or on a Dask cluster.

The library's expensive work (Monte-Carlo ensembles, parameter sweeps, exhaustive landscapes) is a
list of independent *chunks* whose results are merged. This module runs such a list

- in the calling process (the default; nothing extra installed),
- on local processes (:class:`ProcessExecutor`, the standard library's
  :class:`concurrent.futures.ProcessPoolExecutor`), or
- on a ``dask.distributed`` cluster (:class:`DaskExecutor`: ``client.map`` with ``retries``,
  results collected with ``distributed.as_completed``) -- a :class:`distributed.LocalCluster`, a
  scheduler at an address, or any cluster ``dask-jobqueue`` starts on SLURM / PBS.

Where the work runs is chosen with a context, not an argument of every function::

    from meanfield import parallel
    with parallel.using(workers=4):            # a LocalCluster of 4 worker processes
        res = landscape.landscape_census("plain", x, t, n_layers=9)
    with parallel.using(client):               # an existing dask.distributed.Client
        ...
    with parallel.using("dask"):               # the active client (distributed.get_client())
        ...
    with parallel.using(scheduler="tcp://host:8786"):
        ...

Design: one context (a :class:`contextvars.ContextVar`) instead of an ``executor=`` argument on
every heavy function, so no public signature changes, nested library calls inherit the choice and
the CLI (``--workers N``, ``--scheduler ADDRESS``) wraps a whole run in one ``with``.

Same numbers wherever it runs
-----------------------------
The split into chunks is a property of the problem (``chunk_size`` arguments), never of the number
of workers. Every stochastic chunk draws from the ``SeedSequence`` spawned from the user's ``rng``
by chunk index (:func:`chunk_streams`), and results are merged in chunk-index order by exact
operations (concatenation, or :class:`Moments`: counts, sums and sums of squares), so a seed gives
bit-for-bit the same result serially, on processes and on any Dask cluster, whatever the order in
which chunks finish. A chunk that is re-run (a worker died and Dask retried it) recomputes the same
numbers from the same stream: the merge is idempotent.

Optional dependency: the ``distributed`` extra (``pip install "meanfield-theory[distributed]"``),
imported only when a Dask executor is asked for.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import math
import multiprocessing
import numbers
import os
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._checks import check_rng
from ._results import Result

__all__ = [
    "CONNECT_TIMEOUT_S",
    "DEFAULT_RETRIES",
    "MAX_CHUNKS",
    "DaskExecutor",
    "Executor",
    "Moments",
    "ProcessExecutor",
    "SerialExecutor",
    "chunk_ranges",
    "chunk_streams",
    "current",
    "ensemble",
    "executor_from_options",
    "map_chunks",
    "one_blas_thread",
    "sweep",
    "using",
]

#: Times Dask re-runs a task that failed outside the chunk (a lost task; a worker that dies is also
#: handled by the scheduler's own ``allowed-failures``). An exception raised by the chunk itself is
#: deterministic (chunks are pure functions of their arguments): it is re-raised at once, never retried.
DEFAULT_RETRIES = 3

#: Largest number of chunks in one :func:`map_chunks` call (a size guard: each chunk is a task).
MAX_CHUNKS = 1_000_000

_EXTRA_HINT = 'pip install "meanfield-theory[distributed]"'

#: How long connecting to ``scheduler=`` may take before it is reported unreachable.
CONNECT_TIMEOUT_S = 10.0


def _require_distributed():
    """Import ``distributed`` or raise ``ImportError`` naming the extra."""
    try:
        import distributed
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(f"Dask execution needs the 'distributed' extra: {_EXTRA_HINT}") from exc
    return distributed


def _count(value: object, name: str, minimum: int = 1, maximum: int | None = None) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral, np.integer)):
        raise TypeError(f"{name} must be an int >= {minimum}, got {value!r}")
    value = int(value)
    if value < minimum or (maximum is not None and value > maximum):
        hi = f" and <= {maximum}" if maximum is not None else ""
        raise ValueError(f"{name} must be an int >= {minimum}{hi}, got {value}")
    return value


# --------------------------------------------------------------------------------------------
# executors
# --------------------------------------------------------------------------------------------


class Executor:
    """Runs ``fn(*args)`` for every ``args`` of a list and returns the results in list order.

    Subclasses: :class:`SerialExecutor`, :class:`ProcessExecutor`, :class:`DaskExecutor`.
    """

    #: Number of chunks that run at the same time (1 for the serial executor).
    n_workers: int = 1

    def map(self, fn: Callable[..., Any], args_list: Sequence[tuple]) -> list:  # pragma: no cover
        raise NotImplementedError

    def close(self) -> None:
        """Release what the executor started (processes, a cluster); a no-op otherwise."""


class SerialExecutor(Executor):
    """Every chunk in the calling process, one after the other (the default).

    Each chunk runs with one BLAS thread, as in a worker process (:func:`one_blas_thread`), so a
    serial run equals a run on processes or on a cluster bit for bit.
    """

    def map(self, fn, args_list):
        with one_blas_thread():
            return [fn(*args) for args in args_list]

    def __repr__(self) -> str:
        return "SerialExecutor()"


class ProcessExecutor(Executor):
    """Chunks on ``n_workers`` local processes (``concurrent.futures.ProcessPoolExecutor``, spawn).

    A worker that dies (``BrokenProcessPool``) fails the call it happened in; the next call starts a
    fresh pool. Processes are started with the ``spawn`` method (no fork of a process whose Numba / BLAS
    threads are running) and each is limited to one BLAS thread, so ``n_workers`` processes use
    ``n_workers`` cores.

    Parameters
    ----------
    n_workers : int
        Processes, in [1, 4096].
    """

    def __init__(self, n_workers: int):
        self.n_workers = _count(n_workers, "n_workers", 1, 4096)
        self._pool: ProcessPoolExecutor | None = None

    def _get_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(
                max_workers=self.n_workers,
                mp_context=multiprocessing.get_context("spawn"),
            )
        return self._pool

    def map(self, fn, args_list):
        if not args_list:
            return []
        with _one_thread_env():  # spawned children copy the environment when they start
            try:
                return list(self._get_pool().map(_call, [(fn, a) for a in args_list]))
            except BrokenProcessPool:
                # a worker died: this call fails, the next one starts a fresh pool
                self._discard_pool()
                raise

    def _discard_pool(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __repr__(self) -> str:
        return f"ProcessExecutor(n_workers={self.n_workers})"


_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")


def one_blas_thread() -> contextlib.AbstractContextManager:
    """A context in which NumPy's BLAS (OpenBLAS, MKL, BLIS) runs one thread, as in a worker process.

    A product split over more BLAS threads may round differently in the last bits; worker processes
    run one BLAS thread each, so the serial executor runs its chunks in this context too. Set through
    ``threadpoolctl`` (the ``data`` and ``distributed`` extras install it); without it the context
    does nothing and a serial run may differ from a run on workers in the last bits.

    Returns
    -------
    contextlib.AbstractContextManager
        ``threadpoolctl.threadpool_limits(1, "blas")``, or a null context without ``threadpoolctl``.

    Examples
    --------
    >>> import numpy as np
    >>> with one_blas_thread():
    ...     float((np.eye(3) @ np.ones(3)).sum())
    3.0
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


@contextlib.contextmanager
def _one_thread_env():
    """One BLAS / OpenMP / Numba thread in processes started inside the block (unset ones only)."""
    added = [v for v in _THREAD_VARS if v not in os.environ]
    for v in added:
        os.environ[v] = "1"
    try:
        yield
    finally:
        for v in added:
            os.environ.pop(v, None)


def _call(fn_args):
    fn, args = fn_args
    return fn(*args)


class _Raised:
    """What a Dask task returns when its chunk raised: the exception travels back as a value, so
    the scheduler does not re-run a deterministic failure (``retries`` is for lost tasks only)."""

    def __init__(self, exc: BaseException, where: str):
        self.exc = exc
        self.where = where


def _call_capturing(fn_args):
    try:
        return _call(fn_args)
    except Exception as exc:  # re-raised by the client, unchanged
        import traceback

        return _Raised(exc, "".join(traceback.format_exception(exc)))


class DaskExecutor(Executor):
    """Chunks as tasks of a ``dask.distributed.Client`` (``client.map``, ``as_completed``, ``retries``).

    Results are collected as they finish (``distributed.as_completed``) and returned in chunk
    order. A task lost with a worker is re-run by the scheduler; an exception raised by a chunk is
    deterministic (chunks are pure functions of their arguments) and is re-raised at once, unchanged,
    without re-running the chunk.

    Parameters
    ----------
    client : distributed.Client
        A connected client.
    retries : int
        Re-runs of a task that failed outside its chunk, in [0, 100].
    owns : bool
        Close the client (and its cluster) in :meth:`close`: True when the executor created them.
    """

    def __init__(self, client: Any, retries: int = DEFAULT_RETRIES, owns: bool = False):
        distributed = _require_distributed()
        if not isinstance(client, distributed.Client):
            raise TypeError(f"client must be a distributed.Client, got {type(client).__name__}")
        self.client = client
        self.retries = _count(retries, "retries", 0, 100)
        self._owns = bool(owns)

    @property
    def n_workers(self) -> int:  # type: ignore[override]
        info = self.client.scheduler_info()
        return max(1, sum(w.get("nthreads", 1) for w in info.get("workers", {}).values()))

    def map(self, fn, args_list):
        if not args_list:
            return []
        distributed = _require_distributed()
        token = uuid.uuid4().hex[:12]
        name = getattr(fn, "__name__", "chunk")
        keys = [f"meanfield-{name}-{token}-{i}" for i in range(len(args_list))]
        futures = [
            self.client.submit(_call_capturing, (fn, args), key=key, pure=False, retries=self.retries)
            for key, args in zip(keys, args_list)
        ]
        index = {key: i for i, key in enumerate(keys)}
        results: list = [None] * len(futures)
        try:
            for fut in distributed.as_completed(futures, loop=self.client.loop):
                res = fut.result()  # this client's own future: no default client needed
                if isinstance(res, _Raised):  # a chunk's own error: deterministic, re-raised at once
                    res.exc.add_note(f"raised in a Dask worker:\n{res.where}")
                    raise res.exc
                results[index[fut.key]] = res
        finally:
            for fut in futures:
                fut.release()
        return results

    def close(self) -> None:
        if self._owns:
            cluster = getattr(self.client, "cluster", None)
            self.client.close()
            if cluster is not None:
                cluster.close()

    def __repr__(self) -> str:
        return f"DaskExecutor({self.client!r})"


_CURRENT: contextvars.ContextVar[Executor | None] = contextvars.ContextVar("meanfield_executor", default=None)
_SERIAL = SerialExecutor()


def current() -> Executor:
    """The executor chunks run on here: the innermost :func:`using`, else :class:`SerialExecutor`."""
    ex = _CURRENT.get()
    return _SERIAL if ex is None else ex


def _make_executor(target, workers, scheduler, retries) -> tuple[Executor, bool]:
    """``(executor, owned)`` for :func:`using`'s arguments (checked here, before any work)."""
    if workers is not None:
        workers = _count(workers, "workers", 1, 4096)
    if scheduler is not None and not (isinstance(scheduler, str) and scheduler.strip()):
        raise TypeError(f"scheduler must be an address such as 'tcp://host:8786', got {scheduler!r}")
    if isinstance(target, Executor):
        if workers is not None or scheduler is not None:
            raise ValueError("pass either an executor or workers= / scheduler=, not both")
        return target, False
    if target is None or (isinstance(target, str) and target == "serial"):
        if scheduler is not None:
            distributed = _require_distributed()
            if workers is not None:
                raise ValueError("pass either workers= (a local cluster) or scheduler= (an existing one), not both")
            try:
                client = distributed.Client(scheduler, timeout=f"{CONNECT_TIMEOUT_S}s", set_as_default=False)
            except OSError as exc:
                raise ValueError(f"scheduler: cannot connect to {scheduler!r} ({exc})") from None
            return DaskExecutor(client, retries, owns=True), True
        if workers is not None and target is None:
            distributed = _require_distributed()
            cluster = distributed.LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
            )
            client = distributed.Client(cluster, set_as_default=False)
            return DaskExecutor(client, retries, owns=True), True
        return SerialExecutor(), False
    if isinstance(target, str) and target == "processes":
        if scheduler is not None:
            raise ValueError("scheduler= needs a Dask target, not 'processes'")
        return ProcessExecutor(workers or os.cpu_count() or 1), True
    if isinstance(target, str) and target == "dask":
        distributed = _require_distributed()
        if workers is not None or scheduler is not None:
            raise ValueError("'dask' uses the active client; pass workers= or scheduler= without it")
        try:
            client = distributed.get_client()
        except ValueError:
            raise ValueError("no active dask.distributed client: create one with distributed.Client(...)") from None
        return DaskExecutor(client, retries), False
    if isinstance(target, str):
        raise ValueError(f"target must be None, 'serial', 'processes', 'dask', an Executor or a Client, got {target!r}")
    # anything else must be a distributed.Client
    distributed = _require_distributed()
    if isinstance(target, distributed.Client):
        if workers is not None or scheduler is not None:
            raise ValueError("pass either a client or workers= / scheduler=, not both")
        return DaskExecutor(target, retries), False
    raise TypeError(f"target must be None, a str, an Executor or a distributed.Client, got {type(target).__name__}")


@contextlib.contextmanager
def using(
    target: Any = None,
    *,
    workers: int | None = None,
    scheduler: str | None = None,
    retries: int = DEFAULT_RETRIES,
) -> Iterator[Executor]:
    """Run the chunks of every library call inside the ``with`` block on the given executor.

    Parameters
    ----------
    target : None, "serial", "processes", "dask", Executor or distributed.Client
        ``None`` / ``"serial"``: in-process (with ``workers`` or ``scheduler``: a Dask cluster, see
        below); ``"processes"``: ``workers`` local processes without Dask; ``"dask"``: the active
        client (``distributed.get_client()``); a :class:`distributed.Client` or an
        :class:`Executor`: that one (not closed on exit).
    workers : int, optional
        With ``target=None``: start a ``LocalCluster(n_workers=workers, threads_per_worker=1,
        processes=True)`` for the block and close it afterwards. In [1, 4096].
    scheduler : str, optional
        Address of a running Dask scheduler (``"tcp://host:8786"``); the client is closed on exit.
    retries : int
        Dask re-runs of a task that failed outside its chunk, in [0, 100] (a chunk's own exception
        is re-raised at once).

    Yields
    ------
    Executor
        The executor in force inside the block (:func:`current` returns it too).

    Raises
    ------
    ImportError
        A Dask target without the ``distributed`` extra (the message names it).
    ValueError
        ``workers < 1``, contradictory arguments, an unknown target name, no active client for
        ``"dask"``, a scheduler that cannot be reached.
    TypeError
        ``workers`` not an int (bools included), a target of another type.
    """
    retries = _count(retries, "retries", 0, 100)
    executor, owned = _make_executor(target, workers, scheduler, retries)
    token = _CURRENT.set(executor)
    try:
        yield executor
    finally:
        _CURRENT.reset(token)
        if owned:
            executor.close()


def executor_from_options(
    workers: int | None = None, scheduler: str | None = None
) -> contextlib.AbstractContextManager:
    """The context of the CLI's ``--workers N`` / ``--scheduler ADDRESS`` (checked before any work).

    Returns a context manager: :func:`using` for a Dask cluster, or a no-op context when neither
    option is given (serial, as without Dask). ``ImportError`` names the extra when Dask is
    missing; ``ValueError`` for ``workers < 1``, both options at once or an unreachable scheduler.
    """
    if workers is None and scheduler is None:
        return contextlib.nullcontext(current())
    if workers is not None and scheduler is not None:
        raise ValueError("--workers starts a local cluster and --scheduler connects to one: pass only one")
    _require_distributed()
    return using(workers=workers, scheduler=scheduler)


# --------------------------------------------------------------------------------------------
# chunks, streams and exact merges
# --------------------------------------------------------------------------------------------


def chunk_ranges(n: int, chunk_size: int) -> list[tuple[int, int]]:
    """Split ``range(n)`` into consecutive ``(start, stop)`` pieces of ``chunk_size`` (the last shorter).

    The split depends only on ``n`` and ``chunk_size`` (never on the number of workers).

    Raises
    ------
    ValueError
        ``n < 1``, ``chunk_size < 1`` or more than :data:`MAX_CHUNKS` chunks.
    TypeError
        Non-integers (bools included).
    """
    n = _count(n, "n", 1)
    chunk_size = _count(chunk_size, "chunk_size", 1)
    n_chunks = -(-n // chunk_size)
    if n_chunks > MAX_CHUNKS:
        raise ValueError(f"chunk_size: {n} items in chunks of {chunk_size} make {n_chunks} > {MAX_CHUNKS} chunks")
    return [(s, min(s + chunk_size, n)) for s in range(0, n, chunk_size)]


def chunk_streams(rng: Any, n_chunks: int) -> list[np.random.SeedSequence]:
    """The random streams of ``n_chunks`` chunks: children spawned from ``rng`` by chunk index.

    ``rng`` follows the library's rule (:func:`meanfield.checks.check_rng`: ``None``, an int, a
    ``SeedSequence`` or a Generator); chunk ``k`` gets the ``k``-th child of its ``SeedSequence``
    (``Generator.spawn``), so the same ``rng`` gives the same streams wherever chunk ``k`` runs.
    Spawning advances a Generator's child counter: a second call with the same Generator gives
    new, independent streams (as a second draw would).
    """
    from .backend import spawn_sequences

    n_chunks = _count(n_chunks, "n_chunks", 1, MAX_CHUNKS)
    return spawn_sequences(check_rng(rng), n_chunks)


def map_chunks(fn: Callable[..., Any], args_list: Sequence[tuple]) -> list:
    """``[fn(*args) for args in args_list]`` on the current executor (:func:`using`), in list order.

    ``fn`` must be a module-level function (it is pickled by reference for processes and Dask) and
    every chunk independent of the others.

    Raises
    ------
    TypeError
        ``fn`` not callable or ``args_list`` not a sequence of tuples.
    ValueError
        More than :data:`MAX_CHUNKS` chunks.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    if isinstance(args_list, (str, bytes)) or not isinstance(args_list, Sequence):
        raise TypeError(f"args_list must be a sequence of argument tuples, got {type(args_list).__name__}")
    args_list = list(args_list)
    if not all(isinstance(a, tuple) for a in args_list):
        raise TypeError("args_list must be a sequence of argument tuples")
    if len(args_list) > MAX_CHUNKS:
        raise ValueError(f"args_list has {len(args_list)} chunks; at most {MAX_CHUNKS} (MAX_CHUNKS)")
    return current().map(fn, args_list)


@dataclass(frozen=True)
class Moments(Result):
    """Exact, mergeable sample statistics: count, sum and sum of squares along the sample axis.

    Merging is exact up to floating-point addition; merging in a fixed (chunk-index) order makes
    the result bitwise reproducible wherever the chunks ran. Never an average of averages.

    Attributes
    ----------
    count : int
        Samples (>= 1).
    total : ndarray
        Sum over samples.
    total_sq : ndarray
        Sum of squares over samples (>= 0, the shape of ``total``).

    Raises
    ------
    ValueError
        ``count < 1``, a negative sum of squares, shapes that differ.
    TypeError
        ``count`` not an int (bools included).
    """

    count: int
    total: np.ndarray
    total_sq: np.ndarray

    def __post_init__(self):
        count = self.count
        if isinstance(count, (bool, np.bool_)) or not isinstance(count, (numbers.Integral, np.integer)):
            raise TypeError(f"count must be an int >= 1, got {count!r}")
        if count < 1:
            raise ValueError(f"count must be an int >= 1 (samples), got {count}")
        total = np.asarray(self.total)
        total_sq = np.asarray(self.total_sq)
        if total.shape != total_sq.shape:
            raise ValueError(f"total and total_sq must have the same shape, got {total.shape} and {total_sq.shape}")
        if np.any(total_sq < 0):
            raise ValueError("total_sq must be >= 0 (a sum of squares)")

    @classmethod
    def of(cls, samples: np.ndarray, axis: int = 0) -> Moments:
        """The moments of ``samples`` along ``axis`` (finite real array with at least one sample)."""
        x = np.asarray(samples)
        if np.iscomplexobj(x) or x.dtype == bool or not np.issubdtype(x.dtype, np.number):
            raise TypeError(f"samples must be a real numeric array, got dtype {x.dtype}")
        if x.ndim == 0 or x.shape[axis] == 0:
            raise ValueError("samples must have at least one sample along axis")
        x = x.astype(np.float64)
        if not np.all(np.isfinite(x)):
            raise ValueError("samples must be finite")
        return cls(int(x.shape[axis]), x.sum(axis=axis), (x * x).sum(axis=axis))

    def merge(self, other: Moments) -> Moments:
        """The moments of both sample sets together (``count``, ``total``, ``total_sq`` added)."""
        if not isinstance(other, Moments):
            raise TypeError(f"other must be Moments, got {type(other).__name__}")
        if np.shape(self.total) != np.shape(other.total):
            raise ValueError(f"other has shape {np.shape(other.total)}, expected {np.shape(self.total)}")
        return Moments(self.count + other.count, self.total + other.total, self.total_sq + other.total_sq)

    @property
    def mean(self) -> np.ndarray:
        return self.total / self.count

    @property
    def variance(self) -> np.ndarray:
        """Unbiased sample variance (``ddof = 1``); 0 for a single sample."""
        if self.count < 2:
            return np.zeros_like(self.total)
        var = (self.total_sq - self.total * self.total / self.count) / (self.count - 1)
        return np.maximum(var, 0.0)

    @property
    def stderr(self) -> np.ndarray:
        """Standard error of the mean, ``sqrt(variance / count)``."""
        return np.sqrt(self.variance / self.count)


def _concat(results: list) -> Any:
    """Concatenate per-sample results along axis 0 (arrays, dicts of arrays or result dataclasses)."""
    first = results[0]
    if isinstance(first, np.ndarray):
        return np.concatenate(results, axis=0)
    if isinstance(first, dict):
        return {k: _concat([r[k] for r in results]) for k in first}
    if dataclasses.is_dataclass(first) and not isinstance(first, type):
        changes = {}
        for f in dataclasses.fields(first):
            vals = [getattr(r, f.name) for r in results]
            if vals[0] is None:
                continue
            if not isinstance(vals[0], np.ndarray):
                raise TypeError(f"field {f.name!r} is not an array: pass reduce= to merge such results")
            changes[f.name] = np.concatenate(vals, axis=0)
        return dataclasses.replace(first, **changes)
    raise TypeError(f"cannot concatenate results of type {type(first).__name__}: pass reduce=")


def _ensemble_chunk(simulator, args, kwargs, size, stream, reduce):
    res = simulator(*args, n_networks=size, rng=stream, **kwargs)
    return res if reduce is None else reduce(res)


def ensemble(
    simulator: Callable[..., Any],
    *args: Any,
    n_networks: int,
    chunk_size: int,
    rng: Any = None,
    reduce: Callable[[Any], Any] | None = None,
    **kwargs: Any,
) -> Any:
    """A Monte-Carlo simulator's ``n_networks`` networks in chunks, on the current executor.

    Calls ``simulator(*args, n_networks=size_k, rng=stream_k, **kwargs)`` for chunk ``k`` of
    :func:`chunk_ranges` ``(n_networks, chunk_size)`` with ``stream_k`` the ``k``-th child of
    ``rng`` (:func:`chunk_streams`), then merges in chunk order: per-network results (arrays,
    dicts of arrays, result dataclasses whose array fields have the network axis first) are
    concatenated; with ``reduce`` (e.g. ``lambda r: Moments.of(r.log_scale)``, a module-level
    function for processes / Dask) each chunk is reduced where it ran and the reductions are
    merged with their ``merge`` method (:class:`Moments`), so only statistics travel.

    The result depends on ``rng``, ``n_networks`` and ``chunk_size`` only (not on the executor);
    it differs from one unchunked ``simulator(..., n_networks=n_networks, rng=rng)`` call, which
    draws all networks from one stream.

    Parameters
    ----------
    simulator : callable
        A simulator of :mod:`meanfield.simulate` (or any function taking
        ``n_networks`` and ``rng`` keywords).
    *args, **kwargs
        Passed on to ``simulator``.
    n_networks : int
        Total networks, >= 1.
    chunk_size : int
        Networks per chunk, >= 1.
    rng : None, int, SeedSequence or Generator
    reduce : callable, optional
        Per-chunk reduction to an object with ``merge``.

    Returns
    -------
    The merged result.

    Raises
    ------
    ValueError, TypeError
        Bad sizes (see :func:`chunk_ranges`); whatever ``simulator`` raises for its arguments.
    """
    if not callable(simulator):
        raise TypeError(f"simulator must be callable, got {type(simulator).__name__}")
    ranges = chunk_ranges(n_networks, chunk_size)
    streams = chunk_streams(rng, len(ranges))
    parts = map_chunks(
        _ensemble_chunk, [(simulator, args, kwargs, b - a, s, reduce) for (a, b), s in zip(ranges, streams)]
    )
    if reduce is None:
        return _concat(parts)
    merged = parts[0]
    for p in parts[1:]:
        merged = merged.merge(p)
    return merged


def _sweep_chunk(func, over, values, kwargs, vectorised=True):
    if vectorised:
        return func(**{over: values}, **kwargs)
    return [func(**{over: v}, **kwargs) for v in values.tolist()]


def sweep(
    func: Callable[..., Any],
    over: str,
    values: Any,
    *,
    rows_per_chunk: int,
    keep: Sequence[str] = (),
    vectorised: bool = True,
    **kwargs: Any,
) -> Any:
    """A deterministic grid function evaluated by rows on the current executor.

    ``func(**{over: values[a:b]}, **kwargs)`` for consecutive row blocks ``[a, b)`` of
    ``rows_per_chunk`` values; the results (arrays or result dataclasses) are concatenated along
    axis 0 in row order, except the fields named in ``keep`` (the other grid axes), which must be
    equal in every chunk and are taken once. E.g. ``sweep(dense.phase_diagram, "sigma_w2", sw,
    rows_per_chunk=16, keep=("sigma_b2",), activation="tanh", sigma_b2=sb)`` equals
    ``dense.phase_diagram("tanh", sw, sb)`` bit for bit.

    Parameters
    ----------
    func : callable
        A module-level function taking ``over`` as a keyword and returning rows along axis 0.
    over : str
        The name of the swept argument.
    values : array_like, 1-D
        The swept grid (non-empty).
    rows_per_chunk : int
        Rows per task, >= 1.
    keep : sequence of str
        Result fields that are not per row.
    vectorised : bool
        ``False`` for functions of one grid point (e.g. :func:`meanfield.conv.depth_scales` over
        ``sigma_w2``): each chunk calls ``func`` once per value and the result is the list of the
        per-point results, in grid order.

    Returns
    -------
    The merged result (a list when ``vectorised`` is False).

    Raises
    ------
    ValueError
        An empty or multi-dimensional grid, ``keep`` fields that differ between chunks, an array
        field not in ``keep`` that is not per row (named after another argument of ``func``, or
        without one entry per row of every chunk).
    TypeError
        ``over`` not a str, ``func`` not callable.
    """
    if not callable(func):
        raise TypeError(f"func must be callable, got {type(func).__name__}")
    if not isinstance(over, str):
        raise TypeError(f"over must be the name of the swept argument, got {over!r}")
    vals = np.asarray(values)
    if vals.ndim != 1 or vals.size == 0:
        raise ValueError(f"values must be a non-empty 1-D grid, got shape {vals.shape}")
    keep = tuple(keep)
    if not isinstance(vectorised, (bool, np.bool_)):
        raise TypeError(f"vectorised must be True or False, got {vectorised!r}")
    ranges = chunk_ranges(vals.size, rows_per_chunk)
    parts = map_chunks(_sweep_chunk, [(func, over, vals[a:b], kwargs, bool(vectorised)) for a, b in ranges])
    if not vectorised:
        return [r for part in parts for r in part]
    first = parts[0]
    if isinstance(first, np.ndarray):
        return np.concatenate(parts, axis=0)
    if not (dataclasses.is_dataclass(first) and not isinstance(first, type)):
        raise TypeError(f"cannot merge results of type {type(first).__name__}")
    rows = [b - a for a, b in ranges]
    changes = {}
    for f in dataclasses.fields(first):
        got = [getattr(p, f.name) for p in parts]
        if f.name in keep or got[0] is None or not isinstance(got[0], np.ndarray):
            if not all(_same(g, got[0]) for g in got[1:]):
                raise ValueError(f"field {f.name!r} differs between chunks; it is not in keep or not per row")
            continue
        # a per-row field has one entry per row of its chunk; a field named after another argument of
        # func (another grid axis) is not per row: it must be named in keep
        if f.name != over and f.name in kwargs:
            raise ValueError(f"field {f.name!r} is the argument {f.name!r} of func, not per row: name it in keep")
        if not all(np.ndim(g) >= 1 and np.shape(g)[0] == r for g, r in zip(got, rows)):
            raise ValueError(
                f"field {f.name!r} does not have one entry per row of every chunk (lengths "
                f"{[np.shape(g)[0] if np.ndim(g) else None for g in got]} for rows {rows}): name it in keep"
            )
        changes[f.name] = np.concatenate(got, axis=0)
    return dataclasses.replace(first, **changes)


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and np.array_equal(a, b, equal_nan=True)
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b
