"""Array backends: NumPy always, CuPy when installed (the extra ``gpu``).

The weight samplers of :mod:`meanfield.init` (``backend=`` argument) and the Monte-Carlo
simulators of :mod:`meanfield.validation.simulators` are written once against the array namespace
returned by :func:`get_backend` (``xp.matmul``, ``xp.tanh``, ...) and draw random numbers from the
backend's own Generator, so the same code runs on the CPU and on a GPU. Results are returned as
NumPy arrays (:func:`to_numpy`). ``meanfield.validation.backend`` re-exports this module.

Random numbers (one rule for every simulator)
---------------------------------------------
Every simulator takes ``rng``: ``None`` (fresh OS entropy), a non-negative ``int`` ``n`` (exactly the
stream of ``numpy.random.default_rng(n)``), a ``numpy.random.SeedSequence`` or a
``numpy.random.Generator`` (used and advanced), converted by :func:`meanfield.checks.check_rng`;
so ``f(..., rng=7)`` and ``f(..., rng=numpy.random.default_rng(7))`` return the same numbers.
Independent streams (per layer, per chunk, per simulator call of a comparison) are children of
that Generator's ``SeedSequence`` (:func:`spawn_sequences`, i.e. ``Generator.spawn``), never seeds
computed by arithmetic. On the CuPy backend the device Generator is seeded from a spawned child
of the NumPy one (:meth:`Backend.rng`, :meth:`Backend.generator`): CuPy results are reproducible
for a given ``rng`` but differ from NumPy's (another bit generator). A device Generator
(``cupy.random.Generator``) is also accepted as ``rng`` by the functions that take ``backend``: it
is used as it is, as a NumPy Generator is on the NumPy backend.

Examples
--------
>>> b = get_backend("numpy")
>>> b.name, b.xp.__name__
('numpy', 'numpy')
>>> to_numpy(b.asarray([1, 2])).dtype
dtype('float64')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ._checks import check_int, check_rng

__all__ = ["Backend", "available_backends", "get_backend", "spawn_sequences", "substream", "to_numpy"]

#: Most children :func:`spawn_sequences` creates in one call (each is a Python object).
MAX_SPAWN = 2**24


def spawn_sequences(generator: np.random.Generator, n: int) -> list[np.random.SeedSequence]:
    """``n`` independent child ``SeedSequence`` objects of a NumPy Generator's seed sequence.

    The same children as ``generator.spawn(n)`` (whose generators are built on them): spawning
    advances the parent's child counter, not its stream, so a fresh ``default_rng(7)`` always
    spawns the same children. A child sequence can seed several Generators that repeat the same
    numbers (the CNN simulator regenerates a layer's kernels in its backward pass this way).
    Generators whose bit generator has no spawnable seed sequence (built from a raw state) get
    children of a ``SeedSequence`` seeded with 128 bits drawn from them.

    Raises
    ------
    TypeError
        ``generator`` not a ``numpy.random.Generator``; ``n`` complex.
    ValueError
        ``n`` not an integer in ``[0, MAX_SPAWN]``.
    """
    if not isinstance(generator, np.random.Generator):
        raise TypeError(
            f"generator must be a numpy.random.Generator (see meanfield.checks.check_rng), got {type(generator).__name__}"
        )
    n = check_int(n, "n", 0, MAX_SPAWN)
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
    if isinstance(seed, (complex, np.complexfloating)):
        raise TypeError(f"seed must be a non-negative int, got the complex {seed!r}")
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

    def rng(self, rng: Any = None) -> Any:
        """A random Generator on this backend from the library's ``rng`` rule.

        NumPy: :func:`meanfield.checks.check_rng` (a Generator passed in is returned as it is).
        CuPy: a device Generator passed in is returned as it is; otherwise a
        ``cupy.random.default_rng`` seeded from a child spawned off the NumPy Generator of ``rng``
        (see :meth:`generator`), so a given ``rng`` always gives the same device stream.

        Parameters
        ----------
        rng : None, int, SeedSequence, numpy.random.Generator or a Generator of this backend

        Returns
        -------
        Generator
            ``numpy.random.Generator`` or ``cupy.random.Generator``.

        Raises
        ------
        TypeError, ValueError
            ``rng`` is not None, a non-negative int, a SeedSequence, a NumPy Generator or a
            Generator of this backend.
        """
        if self.name != "numpy" and _is_device_generator(self.xp, rng):
            return rng
        generator = check_rng(rng)
        if self.name == "numpy":
            return generator
        return self.generator(spawn_sequences(generator, 1)[0])

    def generator(self, seq: np.random.SeedSequence) -> Any:
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

    def asarray(self, x: Any, dtype: Any = None) -> Any:
        """``x`` as an array of this backend (float64 unless ``dtype`` is given; no copy when it already is one)."""
        return self.xp.asarray(x, dtype=dtype if dtype is not None else self.xp.float64)


def _is_device_generator(xp: Any, rng: Any) -> bool:
    """Whether ``rng`` is a Generator of the (non-NumPy) array namespace ``xp``."""
    random = getattr(xp, "random", None)
    kind = getattr(random, "Generator", None)
    return isinstance(kind, type) and isinstance(rng, kind)


def get_backend(name: str | Backend = "numpy") -> Backend:
    """Return the backend called ``name`` (``"numpy"`` or ``"cupy"``).

    Parameters
    ----------
    name : str or Backend
        ``"numpy"``, ``"cupy"``, or a :class:`Backend` (returned as it is).

    Returns
    -------
    Backend

    Raises
    ------
    ImportError
        ``"cupy"`` was asked for and CuPy is not installed; the message says what to install.
    TypeError
        ``name`` is neither a string nor a Backend.
    ValueError
        ``name`` is not a known backend.
    """
    if isinstance(name, Backend):
        return name
    if not isinstance(name, str):
        raise TypeError(f"backend name must be 'numpy', 'cupy' or a Backend, got {type(name).__name__}")
    if name == "numpy":
        return Backend("numpy", np)
    if name == "cupy":
        try:
            import cupy
        except ImportError as exc:  # pragma: no cover - depends on the machine
            raise ImportError(
                "backend='cupy' needs CuPy: install it with `pip install 'meanfield-theory[gpu]'` "
                "(cupy-cuda12x) on a machine with a CUDA GPU"
            ) from exc
        return Backend("cupy", cupy)
    raise ValueError(f"backend name must be 'numpy' or 'cupy', got {name!r}")


def available_backends() -> list[str]:
    """Names of the backends importable here (NumPy first)."""
    names = ["numpy"]
    try:
        get_backend("cupy").xp.cuda.runtime.getDeviceCount()
        names.append("cupy")
    except Exception:
        pass
    return names


def to_numpy(x: Any) -> np.ndarray:
    """Copy a backend array to host memory as a NumPy array (no copy for NumPy input)."""
    if hasattr(x, "get"):
        return x.get()
    return np.asarray(x)
