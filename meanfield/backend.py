"""Array backends: NumPy always, CuPy (the extra ``gpu``) and PyTorch (``torch``) when installed.

``"torch"`` runs the simulators on PyTorch tensors (CUDA when a GPU is visible, else the CPU)
through the array-API namespace of ``array_api_compat.torch``; ``"array_api_strict"`` runs them
on ``array_api_strict``, the minimal strict array-API namespace (CPU, for tests: any call outside
the standard -- a NumPy-only function, an array method NumPy has and the standard lacks -- fails).
Code written for every backend uses only the array-API standard on ``Backend.xp`` plus the
helpers :func:`matrix_transpose`, :func:`astype`, :func:`concat` and :func:`diagonal` (which fall
back to the NumPy / CuPy spellings) and :func:`svdvals`.

The weight samplers of :mod:`meanfield.init` (``backend=`` argument) and the Monte-Carlo
simulators of :mod:`meanfield.simulate` are written once against the array namespace
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

from meanfield._deprecate import renamed_kwargs

from ._checks import as_float_array, check_int, check_rng

__all__ = [
    "BACKENDS",
    "Backend",
    "astype",
    "available_backends",
    "concat",
    "diagonal",
    "get_backend",
    "matrix_transpose",
    "spawn_sequences",
    "substream",
    "svdvals",
    "to_numpy",
]

#: Names accepted by :func:`get_backend`.
BACKENDS = ("numpy", "cupy", "torch", "array_api_strict")


def matrix_transpose(xp: Any, x: Any) -> Any:
    """``x`` with its last two axes swapped (array API ``matrix_transpose``; ``swapaxes`` elsewhere)."""
    f = getattr(xp, "matrix_transpose", None)
    return f(x) if f is not None else xp.swapaxes(x, -1, -2)


def concat(xp: Any, arrays: Any, axis: int = 0) -> Any:
    """Join ``arrays`` along ``axis`` (array API ``concat``; ``concatenate`` elsewhere)."""
    f = getattr(xp, "concat", None)
    return f(list(arrays), axis=axis) if f is not None else xp.concatenate(list(arrays), axis=axis)


def astype(xp: Any, x: Any, dtype: Any) -> Any:
    """``x`` converted to ``dtype`` (array API ``astype`` function; the ``.astype`` method elsewhere)."""
    f = getattr(xp, "astype", None)
    return f(x, dtype) if f is not None else x.astype(dtype)


def diagonal(xp: Any, x: Any) -> Any:
    """The diagonals of the matrices in the last two axes of ``x`` (array API ``linalg.diagonal``)."""
    f = getattr(getattr(xp, "linalg", None), "diagonal", None)
    return f(x) if f is not None else xp.diagonal(x, axis1=-2, axis2=-1)


def svdvals(backend: str | Backend, x: Any) -> Any:
    """Singular values (descending) of the matrices in the last two axes of ``x``, on ``backend``.

    The array API's ``linalg.svdvals`` where the namespace has it (PyTorch through
    ``array_api_compat``, ``array_api_strict``, NumPy >= 2), else ``linalg.svd(x, compute_uv=False)``
    (NumPy < 2, CuPy): no transfer to the host.

    Parameters
    ----------
    backend : str or Backend
    x : array of ``backend``, shape (..., m, n)

    Returns
    -------
    array of ``backend``, shape (..., min(m, n))

    Raises
    ------
    ImportError
        As :func:`get_backend` for ``backend``.
    TypeError
        ``x`` complex or boolean (a NumPy array or list when ``backend`` is NumPy, else an array of
        ``backend``).
    ValueError
        ``x`` with fewer than two axes, an empty matrix, NaN or infinity.
    """
    b = get_backend(backend)
    xp = b.xp
    if b.name == "numpy" or isinstance(x, (np.ndarray, list, tuple)):
        if isinstance(x, np.ndarray) and x.dtype == np.bool_:
            raise TypeError("x must hold real numbers, got booleans")
        x = b.asarray(as_float_array(x, "x"))
    elif not hasattr(x, "dtype") or not xp.isdtype(x.dtype, "real floating"):
        raise TypeError(f"x must be a real floating array of backend {b.name!r}, got {getattr(x, 'dtype', type(x))}")
    elif not bool(xp.all(xp.isfinite(x))):
        raise ValueError("x must be finite (no NaN or infinity)")
    if x.ndim < 2 or min(x.shape[-2:]) < 1:
        raise ValueError(f"x must have at least two axes (matrices, m, n >= 1), got shape {tuple(x.shape)}")
    linalg = xp.linalg
    f = getattr(linalg, "svdvals", None)
    return f(x) if f is not None else linalg.svd(x, compute_uv=False)


class _TorchGenerator:
    """A ``torch.Generator`` with the NumPy Generator methods the samplers use (float64 tensors).

    Seeded with 63 bits of a ``SeedSequence`` state (as CuPy's): reproducible for a given ``rng``,
    other numbers than NumPy's (another bit generator).
    """

    def __init__(self, seed: int, device: Any):
        import torch

        self._torch = torch
        self.device = device
        self.generator = torch.Generator(device=device)
        self.generator.manual_seed(seed)

    def _shape(self, size):
        return (size,) if isinstance(size, int) else tuple(size)

    def standard_normal(self, size, dtype=None):
        t = self._torch
        return t.randn(self._shape(size), generator=self.generator, dtype=dtype or t.float64, device=self.device)

    def random(self, size, dtype=None):
        t = self._torch
        return t.rand(self._shape(size), generator=self.generator, dtype=dtype or t.float64, device=self.device)

    def integers(self, low, high, size):
        t = self._torch
        return t.randint(low, high, self._shape(size), generator=self.generator, device=self.device)

    def exponential(self, scale=1.0, size=None):
        t = self._torch
        out = t.empty(self._shape(size), dtype=t.float64, device=self.device)
        return out.exponential_(1.0 / scale, generator=self.generator)


class _HostGenerator:
    """A NumPy Generator whose draws are moved to an array namespace without a generator of its own
    (``array_api_strict``): the same numbers as the NumPy backend for the same ``rng``."""

    def __init__(self, generator: np.random.Generator, xp: Any):
        self.numpy_generator = generator
        self.xp = xp

    def standard_normal(self, size, dtype=None):
        return self.xp.asarray(self.numpy_generator.standard_normal(size), dtype=self.xp.float64)

    def random(self, size, dtype=None):
        return self.xp.asarray(self.numpy_generator.random(size), dtype=self.xp.float64)

    def integers(self, low, high, size):
        return self.xp.asarray(self.numpy_generator.integers(low, high, size=size))

    def exponential(self, scale=1.0, size=None):
        return self.xp.asarray(self.numpy_generator.exponential(scale, size), dtype=self.xp.float64)


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


@renamed_kwargs(seed="rng")
def substream(rng: int, *key: int) -> np.random.SeedSequence:
    """The child ``SeedSequence(rng).spawn(...)[key[0]].spawn(...)[key[1]]...`` of an integer seed ``rng``.

    Comparison modules keep an integer ``seed`` (what the command line records) and hand every
    simulator call its own stream ``substream(seed, part, case, ...)``: spawned children (equal to
    ``SeedSequence(rng, spawn_key=key)``), independent of each other and of the call order. ``seed=``
    is the deprecated spelling of ``rng``.
    """
    if isinstance(rng, (complex, np.complexfloating)):
        raise TypeError(f"rng must be a non-negative int seed, got the complex {rng!r}")
    if isinstance(rng, (bool, np.bool_)) or not isinstance(rng, (int, np.integer)) or int(rng) < 0:
        raise ValueError(f"rng must be a non-negative int seed, got {rng!r}")
    for k in key:
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)) or int(k) < 0:
            raise ValueError(f"substream keys must be non-negative ints, got {k!r}")
    return np.random.SeedSequence(int(rng), spawn_key=tuple(int(k) for k in key))


@dataclass(frozen=True)
class Backend:
    """An array namespace plus a seeded random Generator on that device.

    Attributes
    ----------
    name : str
        One of :data:`BACKENDS`.
    xp : module
        The array namespace (``numpy``, ``cupy``, ``array_api_compat.torch`` or ``array_api_strict``).
    device : str or None
        ``"cuda"`` or ``"cpu"`` for ``"torch"``; None otherwise.
    """

    name: str
    xp: Any
    device: Any = None

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
        if self.name == "torch" and isinstance(rng, _TorchGenerator):
            return rng
        if self.name == "array_api_strict" and isinstance(rng, _HostGenerator):
            return rng
        generator = check_rng(rng)
        if self.name == "numpy":
            return generator
        if self.name == "array_api_strict":
            return _HostGenerator(generator, self.xp)
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
        if self.name == "array_api_strict":
            return _HostGenerator(np.random.default_rng(seq), self.xp)
        state = int(seq.generate_state(1, np.uint64)[0]) >> 1
        if self.name == "torch":
            return _TorchGenerator(state, self.device)
        return self.xp.random.default_rng(state)

    def asarray(self, x: Any, dtype: Any = None) -> Any:
        """``x`` as an array of this backend (float64 unless ``dtype`` is given; no copy when it already is one)."""
        dtype = dtype if dtype is not None else self.xp.float64
        if self.device is not None:
            return self.xp.asarray(x, dtype=dtype, device=self.device)
        return self.xp.asarray(x, dtype=dtype)

    def full(self, shape: Any, value: float) -> Any:
        """A float64 array of ``shape`` filled with ``value``, on this backend's device."""
        if self.device is not None:
            return self.xp.full(shape, value, dtype=self.xp.float64, device=self.device)
        return self.xp.full(shape, value, dtype=self.xp.float64)

    def empty(self, shape: Any) -> Any:
        """An uninitialised float64 array of ``shape`` on this backend's device."""
        if self.device is not None:
            return self.xp.empty(shape, dtype=self.xp.float64, device=self.device)
        return self.xp.empty(shape, dtype=self.xp.float64)


def _is_device_generator(xp: Any, rng: Any) -> bool:
    """Whether ``rng`` is a Generator of the (non-NumPy) array namespace ``xp``."""
    random = getattr(xp, "random", None)
    kind = getattr(random, "Generator", None)
    return isinstance(kind, type) and isinstance(rng, kind)


def get_backend(name: str | Backend = "numpy") -> Backend:
    """Return the backend called ``name`` (one of :data:`BACKENDS`).

    Parameters
    ----------
    name : str or Backend
        ``"numpy"``, ``"cupy"``, ``"torch"`` (PyTorch through ``array_api_compat``, on CUDA when
        available), ``"array_api_strict"`` (CPU, for tests), or a :class:`Backend` (returned as it is).

    Returns
    -------
    Backend

    Raises
    ------
    ImportError
        ``"cupy"``, ``"torch"`` or ``"array_api_strict"`` was asked for and its package is not
        installed; the message says what to install.
    TypeError
        ``name`` is neither a string nor a Backend.
    ValueError
        ``name`` is not a known backend.
    """
    if isinstance(name, Backend):
        return name
    if not isinstance(name, str):
        raise TypeError(f"backend name must be one of {BACKENDS} or a Backend, got {type(name).__name__}")
    if name == "numpy":
        return Backend("numpy", np)
    if name == "torch":
        try:
            import torch
            from array_api_compat import torch as xp
        except ImportError as exc:
            raise ImportError(
                "backend='torch' needs PyTorch and array-api-compat: install them with "
                "`pip install 'meanfield-theory[torch]' array-api-compat`"
            ) from exc
        return Backend("torch", xp, "cuda" if torch.cuda.is_available() else "cpu")
    if name == "array_api_strict":
        try:
            import array_api_strict
        except ImportError as exc:
            raise ImportError(
                "backend='array_api_strict' (a test backend) needs array-api-strict: "
                "`pip install 'meanfield-theory[test]'`"
            ) from exc
        return Backend("array_api_strict", array_api_strict)
    if name == "cupy":
        try:
            import cupy
        except ImportError as exc:  # pragma: no cover - depends on the machine
            raise ImportError(
                "backend='cupy' needs CuPy: install it with `pip install 'meanfield-theory[gpu]'` "
                "(cupy-cuda12x) on a machine with a CUDA GPU"
            ) from exc
        return Backend("cupy", cupy)
    raise ValueError(f"backend name must be one of {BACKENDS}, got {name!r}")


def available_backends() -> list[str]:
    """Names of the backends importable here (NumPy first)."""
    names = ["numpy"]
    try:
        get_backend("cupy").xp.cuda.runtime.getDeviceCount()
        names.append("cupy")
    except Exception:
        pass
    try:
        get_backend("torch")
        names.append("torch")
    except ImportError:
        pass
    return names


def to_numpy(x: Any) -> np.ndarray:
    """Copy a backend array to host memory as a NumPy array (no copy for NumPy input)."""
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "get"):  # CuPy
        return x.get()
    if hasattr(x, "detach"):  # PyTorch
        return x.detach().cpu().numpy()
    if hasattr(x, "__dlpack__"):  # array_api_strict and other array-API arrays
        return np.from_dlpack(x)
    return np.asarray(x)
