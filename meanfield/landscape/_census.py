"""Exhaustive binary landscapes in chunks of leading bits, with bounded memory (Orhan 2017, Sec. 2.2, Fig. 4).

Private submodule of :mod:`meanfield.landscape` (import the names from there):
:func:`landscape_census` and its result :class:`LandscapeCensus`.

:func:`meanfield.landscape.binary_landscape` holds the whole loss table (``8 * 2^n`` bytes, and
about 40 bytes per configuration with the neighbour and walk tables): 2^30 configurations need
~40 GiB. Here the configurations are split by their ``chunk_bits`` leading bits into
``2^chunk_bits`` chunks of ``2^(n - chunk_bits)`` consecutive configurations, each an independent
task of :mod:`meanfield.parallel` (in-process, local processes or a Dask cluster), holding only its
own losses.

Neighbours across chunk boundaries
----------------------------------
A configuration's ``n`` single-flip neighbours differ from it in one bit. Flips of the
``n - chunk_bits`` trailing bits stay inside the chunk (their losses are in the chunk's table);
flips of the ``chunk_bits`` leading bits land in other chunks. Those losses are recomputed on the
fly, only for the *candidates* -- configurations with no better neighbour inside the chunk -- by
a full forward pass of the same kernel (bit-for-bit the loss :func:`binary_landscape` computes:
each layer's activations are a deterministic function of the bits of the layers below). A
configuration is a local minimum iff it is a candidate and none of its cross-chunk neighbours is
better, with the tie rule of :func:`binary_landscape` (``rtol``). When candidates are many (the
plain net's plateaus of dead configurations make most of a chunk candidates), the chunk instead
computes the loss table of each neighbouring chunk ``k ^ (1 << j)`` in turn -- flipping a leading
bit keeps a configuration's index inside its chunk -- which costs ``chunk_bits`` incremental
passes instead of ``chunk_bits`` full passes per candidate (:data:`CROSS_PASS_RATIO`). So the counts are exact and
equal :func:`binary_landscape`'s at every size both can run (tests check it).

What is not computed: the per-configuration better-neighbour histogram, the adaptive walks and the
basin sizes (the walks cross chunks; they need the global successor table).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numba
import numpy as np
from numpy.typing import ArrayLike

from .. import parallel
from .._results import Result
from ._binary import _chunk_losses, _recompute, _scratch, _task_arguments
from ._common import _int

__all__ = ["LandscapeCensus", "landscape_census"]

#: Largest number of binary parameters :func:`landscape_census` enumerates (2^36 ~ 7e10
#: configurations: about 2 days on 1,000 cores); a time guard, not a paper value.
MAX_CENSUS_PARAMETERS = 36

#: Largest chunk (configurations per task): 2^26 configurations need at most 2^26 * 27 bytes =
#: 1.7 GiB. The memory of a task is at most ``27 * 2^(n - chunk_bits)`` bytes (two float64 loss
#: tables, three flags, the int64 candidate list) plus the inputs.
MAX_CHUNK_CONFIGURATIONS = 2**26

#: Local minima listed per chunk at most (counts are always exact; the list is for checks).
MAX_LISTED_MINIMA = 1_000_000


@numba.njit(cache=True)
def _inner_flags(low_bits, rtol, losses, better, tied):
    """Better / tied flags from the in-chunk neighbours (flips of the ``low_bits`` trailing bits)."""
    for i in range(losses.shape[0]):
        lc = losses[i]
        b = False
        t = False
        for k in range(low_bits):
            ld = losses[i ^ (1 << k)]
            tol = rtol * max(abs(lc), abs(ld))
            if ld < lc - tol:
                b = True
                break
            elif abs(ld - lc) <= tol:
                t = True
        better[i] = b
        tied[i] = t


@numba.njit(cache=True)
def _cross_recompute(
    cands, c0, low_bits, n_bits, rtol, arch, width, n_h, has_bias, biases, inputs, targets, losses, better, tied
):
    """Cross-chunk neighbours of the candidates, each loss recomputed by a full forward pass."""
    xs, cums, out = _scratch(inputs, n_h, width)
    for j in range(cands.shape[0]):
        i = cands[j]
        lc = losses[i]
        for k in range(low_bits, n_bits):
            d = (c0 + i) ^ (1 << k)
            ld = _recompute(d, 0, arch, n_bits, width, n_h, has_bias, xs, cums, biases, inputs, targets, out)
            tol = rtol * max(abs(lc), abs(ld))
            if ld < lc - tol:
                better[i] = True
                break
            elif abs(ld - lc) <= tol:
                tied[i] = True


@numba.njit(cache=True)
def _cross_from_table(cands, rtol, losses, other, better, tied):
    """Cross-chunk neighbours of the candidates from the neighbouring chunk's loss table ``other``
    (flipping a leading bit keeps the local index)."""
    for j in range(cands.shape[0]):
        i = cands[j]
        if better[i]:
            continue
        lc = losses[i]
        ld = other[i]
        tol = rtol * max(abs(lc), abs(ld))
        if ld < lc - tol:
            better[i] = True
        elif abs(ld - lc) <= tol:
            tied[i] = True


@dataclass(frozen=True)
class LandscapeCensus(Result):
    """Local-minimum census of an exhaustive binary landscape, merged over chunks (Sec. 2.2, Fig. 4).

    Attributes
    ----------
    architecture, n_params, n_strict_local_minima, n_zero_output, rtol
        As :class:`~meanfield.landscape.LandscapeResult`.
    chunk_bits : int
        Leading bits that index the chunks (``2^chunk_bits`` chunks).
    n_local_minima : int
        Configurations with no better single-flip neighbour (non-strict local minima, the
        definition of :func:`binary_landscape`).
    min_loss : float
        The global minimum of the loss.
    argmin : int
        The lowest configuration attaining it.
    local_minima : ndarray of int64 or None
        The local minima in increasing order, or None when a chunk had more than
        ``MAX_LISTED_MINIMA`` (the counts stay exact).
    minima_per_chunk : ndarray of int64, shape (n_chunks,)
        Local minima found in each censused chunk.
    chunk_indices : ndarray of int64, shape (n_chunks,)
        The chunks censused, increasing: all ``2^chunk_bits`` of them unless ``chunks`` was given
        (then every count, ``min_loss`` and ``argmin`` refer to those chunks only).
    """

    architecture: str
    n_params: int
    chunk_bits: int
    n_local_minima: int
    n_strict_local_minima: int
    n_zero_output: int
    min_loss: float
    argmin: int
    local_minima: np.ndarray | None
    minima_per_chunk: np.ndarray
    chunk_indices: np.ndarray
    rtol: float

    @property
    def n_configurations(self) -> int:
        """Configurations censused: ``len(chunk_indices) * 2^(n_params - chunk_bits)``."""
        return int(self.chunk_indices.size) << (self.n_params - self.chunk_bits)

    @property
    def complete(self) -> bool:
        """Whether every chunk was censused (the counts are the whole landscape's)."""
        return int(self.chunk_indices.size) == 1 << self.chunk_bits


#: Measured cost of one full forward pass relative to one incremental step of
#: :func:`_chunk_losses` (~1.2 us versus ~0.12 us per configuration at n_layers = 9, P = 25, on
#: this project's 2-core machine): above ``m / CROSS_PASS_RATIO`` candidates a chunk computes its
#: neighbouring chunks' whole loss tables instead of recomputing candidates' neighbours one by one.
CROSS_PASS_RATIO = 10


def _census_chunk(k, arch, n, chunk_bits, width, n_h, has_bias, group_of_bit, b, x, t, rtol, cross="auto"):
    """Census of chunk ``k`` (configurations ``k * 2^(n - chunk_bits)`` onwards); runs anywhere.

    Memory: two float64 tables of the chunk (its own and, when candidates are many, one
    neighbouring chunk's at a time), three flags and at most one int64 candidate index per
    configuration: ``27 * 2^(n - chunk_bits)`` bytes at most.
    """
    low = n - chunk_bits
    m = 1 << low
    c0 = k << low
    losses = np.empty(m)
    zero_out = np.empty(m, dtype=np.bool_)
    _chunk_losses(c0, m, arch, n, width, n_h, has_bias, group_of_bit, b, x, t, losses, zero_out)
    if not np.all(np.isfinite(losses)):
        return None
    better = np.empty(m, dtype=np.bool_)
    tied = np.empty(m, dtype=np.bool_)
    _inner_flags(low, rtol, losses, better, tied)
    cands = np.flatnonzero(~better)
    if chunk_bits and cands.size:
        if cross == "tables" or (cross == "auto" and cands.size * CROSS_PASS_RATIO > m):
            other = np.empty(m)
            other_zero = np.empty(m, dtype=np.bool_)
            for bit in range(chunk_bits):
                _chunk_losses(
                    (k ^ (1 << bit)) << low, m, arch, n, width, n_h, has_bias, group_of_bit, b, x, t, other, other_zero
                )
                _cross_from_table(cands, rtol, losses, other, better, tied)
        else:
            _cross_recompute(cands, c0, low, n, rtol, arch, width, n_h, has_bias, b, x, t, losses, better, tied)
    minima = np.flatnonzero(~better)
    j = int(np.argmin(losses))
    listed = (minima + c0).astype(np.int64) if minima.size <= MAX_LISTED_MINIMA else None
    return {
        "n_min": int(minima.size),
        "n_strict": int(np.count_nonzero(~better & ~tied)),
        "n_zero": int(np.count_nonzero(zero_out)),
        "min_loss": float(losses[j]),
        "argmin": c0 + j,
        "minima": listed,
    }


def landscape_census(
    architecture: str,
    inputs: ArrayLike,
    targets: ArrayLike,
    biases: ArrayLike | None = None,
    n_layers: int = 7,
    output_bias_bit: bool = False,
    rtol: float = 1e-12,
    chunk_bits: int | None = None,
    chunks: Sequence[int] | None = None,
    cross_neighbours: str = "auto",
) -> LandscapeCensus:
    """Count the local minima of a toy net's exhaustive landscape, chunk by chunk (Fig. 4, any depth).

    Same networks, encoding and tie rule as :func:`binary_landscape` (Orhan 2017, eqs. 1-4), but the
    loss table is never held whole: the ``2^n`` configurations are split by their ``chunk_bits``
    leading bits into tasks of :mod:`meanfield.parallel` (run them on a cluster with
    ``with meanfield.parallel.using(...)``), and losses of neighbours in other chunks are
    recomputed on the fly (module notes). Memory per task: at most ``27 * 2^(n - chunk_bits)``
    bytes plus the inputs (2^22 configurations per chunk: 108 MiB).

    Parameters
    ----------
    architecture : {"plain", "residual", "hyper_residual", "path_residual"}
    inputs : array_like, shape (P, width)
    targets : array_like, shape (P,)
    biases : array_like, shape (n_layers - 1, width), optional
        As in :func:`binary_landscape`.
    n_layers : int
        Layers counting input and output, in [3, 64]; 9 with width 2 gives 30 bits.
    output_bias_bit : bool
    rtol : float
        Tie tolerance, in [0, 1).
    chunk_bits : int, optional
        Leading bits per chunk index, in [0, n]; default ``max(0, n - 22)`` (chunks of at most
        2^22 configurations, at most 108 MiB). At most :data:`MAX_CHUNK_CONFIGURATIONS` per chunk.
    chunks : sequence of int, optional
        Census only these chunk indices (distinct, in ``[0, 2^chunk_bits)``): a partial census, e.g.
        a random sample of chunks to estimate counts, or one job's share of a very large run
        (counts of disjoint partial censuses add up).
    cross_neighbours : {"auto", "recompute", "tables"}
        How the losses of neighbours in other chunks are obtained (module notes): one full forward
        pass per candidate's neighbour, the neighbouring chunks' whole loss tables, or whichever
        is cheaper (:data:`CROSS_PASS_RATIO`). A speed knob: the result is the same.

    Returns
    -------
    LandscapeCensus
        Counts merged exactly (sums of integers; minima concatenated in chunk order).

    Raises
    ------
    ValueError
        As :func:`binary_landscape` (shapes, NaN, architecture, ``rtol``), more than
        :data:`MAX_CENSUS_PARAMETERS` bits, a chunk beyond :data:`MAX_CHUNK_CONFIGURATIONS`,
        losses that overflow double precision; arrays that do not convert to real numbers (e.g.
        non-numeric strings); ``chunk_bits``, ``n_layers`` or an entry of ``chunks`` that is not
        an integer (a bool, a string or a non-integral float).
    TypeError
        Complex arrays, a complex ``chunk_bits``, non-bool ``output_bias_bit``.

    Notes
    -----
    Orhan 2017, Sec. 2.2 and Fig. 4 ("local minima ... fewer with skip connections"), at depths the
    paper did not enumerate. The cost is one incremental forward pass per configuration (mostly
    the output layer) plus ``chunk_bits`` full passes per in-chunk candidate.
    """
    arch, x, t, n_layers, output_bias_bit, width, n_h, n, rtol, b = _task_arguments(
        architecture,
        inputs,
        targets,
        n_layers,
        output_bias_bit,
        rtol,
        biases,
        MAX_CENSUS_PARAMETERS,
        "MAX_CENSUS_PARAMETERS",
    )
    if chunk_bits is None:
        chunk_bits = max(0, n - 22)
    chunk_bits = _int(chunk_bits, "chunk_bits", minimum=0, maximum=n)
    if (1 << (n - chunk_bits)) > MAX_CHUNK_CONFIGURATIONS:
        raise ValueError(
            f"chunk_bits = {chunk_bits} gives chunks of 2^{n - chunk_bits} configurations; at most "
            f"MAX_CHUNK_CONFIGURATIONS = 2^26 (use chunk_bits >= {n - 26})"
        )
    if not isinstance(cross_neighbours, str) or cross_neighbours not in ("auto", "recompute", "tables"):
        raise ValueError(f"cross_neighbours must be 'auto', 'recompute' or 'tables', got {cross_neighbours!r}")
    if chunks is None:
        idx = np.arange(1 << chunk_bits, dtype=np.int64)
    else:
        if isinstance(chunks, (str, bytes)) or np.ndim(chunks) != 1:
            raise TypeError(f"chunks must be a sequence of chunk indices, got {chunks!r}")
        idx = np.array([_int(c, "chunks", minimum=0, maximum=(1 << chunk_bits) - 1) for c in chunks], dtype=np.int64)
        if idx.size == 0 or np.unique(idx).size != idx.size:
            raise ValueError("chunks must be non-empty and without repeats")
        idx = np.sort(idx)
    group_of_bit = np.empty(n, dtype=np.int64)
    for j in range(n):
        group_of_bit[n - 1 - j] = min(j // (width * width), n_h)
    parts = parallel.map_chunks(
        _census_chunk,
        [
            (k, arch, n, chunk_bits, width, n_h, output_bias_bit, group_of_bit, b, x, t, rtol, cross_neighbours)
            for k in idx.tolist()
        ],
    )
    if any(p is None for p in parts):
        raise ValueError(
            "inputs, targets and biases give squared errors that overflow double precision; scale them down"
        )
    best = min(range(len(parts)), key=lambda i: (parts[i]["min_loss"], parts[i]["argmin"]))
    listed = None
    if all(p["minima"] is not None for p in parts):
        listed = np.concatenate([p["minima"] for p in parts])
    return LandscapeCensus(
        architecture=architecture,
        n_params=n,
        chunk_bits=chunk_bits,
        n_local_minima=sum(p["n_min"] for p in parts),
        n_strict_local_minima=sum(p["n_strict"] for p in parts),
        n_zero_output=sum(p["n_zero"] for p in parts),
        min_loss=parts[best]["min_loss"],
        argmin=int(parts[best]["argmin"]),
        local_minima=listed,
        minima_per_chunk=np.array([p["n_min"] for p in parts], dtype=np.int64),
        chunk_indices=idx,
        rtol=rtol,
    )
