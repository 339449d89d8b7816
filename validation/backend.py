"""Array-backend selection for the simulators: the public names of :mod:`meanfield.backend`.

The implementation lives in the theory package, :mod:`meanfield.backend`, because the weight
samplers of :mod:`meanfield.init` take a ``backend`` argument too; this module re-exports it so
that ``meanfield.validation.backend.get_backend("cupy")`` keeps working.
"""

from __future__ import annotations

from meanfield.backend import Backend, available_backends, get_backend, spawn_sequences, substream, to_numpy

__all__ = ["Backend", "available_backends", "get_backend", "spawn_sequences", "substream", "to_numpy"]
