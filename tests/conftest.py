"""Test configuration: a deterministic hypothesis profile, an array-backend fixture, a deadline and a type-hint check."""

import contextlib
import inspect
import os
import signal
import typing

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


@contextlib.contextmanager
def _deadline(seconds: float):
    """Fail (``TimeoutError``) instead of hanging when the body runs longer than ``seconds`` (SIGALRM)."""

    def _alarm(*_):
        raise TimeoutError(f"no return within {seconds} s")

    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@pytest.fixture
def deadline():
    """``with deadline(seconds): ...`` fails instead of hanging (calls that used to hang must return fast)."""
    return _deadline


def _public_callables(module):
    """``(name, function)`` of every function and public method / property of ``module.__all__``."""
    for name in module.__all__:
        obj = getattr(module, name)
        if inspect.isfunction(obj):
            yield name, obj
        elif inspect.isclass(obj):
            for attr, member in vars(obj).items():
                if attr.startswith("_"):
                    continue
                member = member.fget if isinstance(member, property) else member
                if inspect.isfunction(member):
                    yield f"{name}.{attr}", member


def _missing_type_hints(module) -> list:
    """``"name(param)"`` / ``"name -> ?"`` for every parameter or return of ``module.__all__`` without a hint."""
    missing = []
    for name, f in _public_callables(module):
        hints = typing.get_type_hints(f)
        params = [p for p in inspect.signature(f).parameters if p not in ("self", "cls")]
        missing += [f"{name}({p})" for p in params if p not in hints] + (
            [f"{name} -> ?"] if "return" not in hints else []
        )
    return missing


@pytest.fixture
def missing_type_hints():
    """``missing_type_hints(module)``: the public parameters and returns of ``module.__all__`` lacking a type hint
    (``module`` any object with ``__all__``: a module or a namespace of public names)."""
    return _missing_type_hints
