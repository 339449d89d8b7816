"""Array-backend selection for the Monte-Carlo simulators: NumPy always, CuPy when installed.

Simulators are written once against the array namespace returned by :func:`get_backend`
(``xp.matmul``, ``xp.tanh``, ...) and draw random numbers from the backend's own Generator, so
the same code runs on the CPU and on a GPU. Results are returned as NumPy arrays (:func:`to_numpy`).

Random numbers (one rule for every simulator)
---------------------------------------------
Every simulator takes ``rng``: ``None`` (fresh OS entropy), a non-negative ``int`` ``n`` (exactly the
stream of ``numpy.random.default_rng(n)``), a ``numpy.random.SeedSequence`` or a
``numpy.random.Generator`` (used and advanced), converted by :func:`meanfield._checks.check_rng`;
so ``f(..., rng=7)`` and ``f(..., rng=numpy.random.default_rng(7))`` return the same numbers.
Independent streams (per layer, per chunk, per simulator call of a comparison) are children of
that Generator's ``SeedSequence`` (:func:`spawn_sequences`, i.e. ``Generator.spawn``), never seeds
computed by arithmetic. On the CuPy backend the device Generator is seeded from a spawned child
of the NumPy one (:meth:`Backend.rng`, :meth:`Backend.generator`): CuPy results are reproducible
for a given ``rng`` but differ from NumPy's (another bit generator).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from meanfield._checks import check_rng

__all__ = ["Backend", "available_backends", "get_backend", "spawn_sequences", "substream", "to_numpy"]


def spawn_sequences(generator: np.random.Generator, n: int) -> list:
    """``n`` independent child ``SeedSequence`` objects of a NumPy Generator's seed sequence.

    The same children as ``generator.spawn(n)`` (whose generators are built on them): spawning
    advances the parent's child counter, not its stream, so a fresh ``default_rng(7)`` always
    spawns the same children. A child sequence can seed several Generators that repeat the same
    numbers (the CNN simulator regenerates a layer's kernels in its backward pass this way).
    Generators whose bit generator has no spawnable seed sequence (built from a raw state) get
    children of a ``SeedSequence`` seeded with 128 bits drawn from them.
    """
    try:
        return generator.bit_generator.seed_seq.spawn(n)
    except (AttributeError, TypeError, NotImplementedError):  # a seedless bit generator
        entropy = [int(v) for v in generator.integers(0, 2**32, size=4, dtype=np.uint64)]
        return np.random.SeedSequence(entropy).spawn(n)


def substream(seed: int, *key: int) -> np.random.SeedSequence:
    """The child ``SeedSequence(seed).spawn(...)[key[0]].spawn(...)[key[1]]...`` of an integer seed.

    Comparison modules keep an integer ``seed`` (what the command line records) and hand every
    simulator call its own stream ``substream(seed, part, case, ...)``: spawned children (equal to
    ``SeedSequence(seed, spawn_key=key)``), independent of each other and of the call order.
    """
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or int(seed) < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    for k in key:
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or int(k) < 0:
            raise ValueError(f"substream keys must be non-negative ints, got {k!r}")
    return np.random.SeedSequence(int(seed), spawn_key=tuple(int(k) for k in key))


@dataclass(frozen=True)
class Backend:
    """An array namespace plus a seeded random Generator on that device.

    Attributes
    ----------
    name : str
        ``"numpy"`` or ``"cupy"``.
    xp : module
        The array namespace (``numpy`` or ``cupy``).
    """

    name: str
    xp: Any

    def rng(self, rng=None):
        """A random Generator on this backend from the library's ``rng`` rule.

        NumPy: :func:`meanfield._checks.check_rng` (a Generator passed in is returned as it is).
        CuPy: a ``cupy.random.default_rng`` seeded from a child spawned off that NumPy Generator
        (see :meth:`generator`), so a given ``rng`` always gives the same device stream.

        Raises
        ------
        TypeError, ValueError
            ``rng`` is not None, a non-negative int, a SeedSequence or a NumPy Generator.
        """
        generator = check_rng(rng)
        if self.name == "numpy":
            return generator
        return self.generator(spawn_sequences(generator, 1)[0])

    def generator(self, seq: np.random.SeedSequence):
        """A fresh Generator on this backend seeded by the ``SeedSequence`` ``seq``.

        NumPy: ``numpy.random.default_rng(seq)``. CuPy: ``cupy.random.default_rng`` seeded with 63
        bits of ``seq.generate_state`` (CuPy's bit generator takes an integer seed). Two calls with
        the same ``seq`` give Generators that draw the same numbers.
        """
        if not isinstance(seq, np.random.SeedSequence):
            raise TypeError(f"seq must be a numpy.random.SeedSequence, got {type(seq).__name__}")
        if self.name == "numpy":
            return np.random.default_rng(seq)
        state = int(seq.generate_state(1, np.uint64)[0]) >> 1
        return self.xp.random.default_rng(state)

    def asarray(self, x, dtype=None):
        return self.xp.asarray(x, dtype=dtype if dtype is not None else self.xp.float64)


def get_backend(name: str | Backend = "numpy") -> Backend:
    """Return the backend called ``name`` (``"numpy"`` or ``"cupy"``).

    Raises
    ------
    ImportError
        ``"cupy"`` was asked for and CuPy is not installed; the message says what to install.
    ValueError
        ``name`` is not a known backend.
    """
    if isinstance(name, Backend):
        return name
    if not isinstance(name, str):
        raise TypeError(f"backend must be 'numpy', 'cupy' or a Backend, got {type(name).__name__}")
    if name == "numpy":
        return Backend("numpy", np)
    if name == "cupy":
        try:
            import cupy  # noqa: PLC0415 - optional dependency imported lazily
        except ImportError as exc:  # pragma: no cover - depends on the machine
            raise ImportError(
                "backend='cupy' needs CuPy: install it with `pip install meanfield[gpu]` "
                "(cupy-cuda12x) on a machine with a CUDA GPU"
            ) from exc
        return Backend("cupy", cupy)
    raise ValueError(f"backend must be 'numpy' or 'cupy', got {name!r}")


def available_backends() -> list[str]:
    """Names of the backends importable here (NumPy first)."""
    names = ["numpy"]
    try:
        get_backend("cupy").xp.cuda.runtime.getDeviceCount()
        names.append("cupy")
    except Exception:  # noqa: BLE001 - CuPy missing or no device: NumPy only
        pass
    return names


def to_numpy(x) -> np.ndarray:
    """Copy a backend array to host memory as a NumPy array (no copy for NumPy input)."""
    if hasattr(x, "get"):
        return x.get()
    return np.asarray(x)
