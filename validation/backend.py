"""Array-backend selection for the Monte-Carlo simulators: NumPy always, CuPy when installed.

Simulators are written once against the array namespace returned by :func:`get_backend`
(``xp.matmul``, ``xp.tanh``, ...) and draw random numbers from the backend's own Generator, so
the same code runs on the CPU and on a GPU. Results are returned as NumPy arrays (:func:`to_numpy`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Backend", "available_backends", "get_backend", "to_numpy"]


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

    def rng(self, seed=None):
        """A random Generator on this backend (``numpy.random.default_rng`` or CuPy's)."""
        if isinstance(seed, np.random.Generator):
            if self.name == "numpy":
                return seed
            seed = int(seed.integers(2**63 - 1))
        return self.xp.random.default_rng(seed)

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
