"""Test configuration: a deterministic hypothesis profile and an array-backend fixture."""

import os

import pytest
from hypothesis import HealthCheck, settings

os.environ.setdefault("MEANFIELD_NO_PROGRESS", "1")

settings.register_profile(
    "deterministic",
    deadline=None,
    derandomize=True,
    max_examples=40,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))


def _backends():
    from meanfield.validation.backend import available_backends

    return available_backends()


@pytest.fixture(params=_backends())
def backend(request):
    """Every installed array backend's name ("numpy", and "cupy" where a GPU is present)."""
    return request.param
