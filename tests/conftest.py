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


# --- the suite on several cores (pytest-xdist: `python -m pytest -q -n auto --dist loadfile`) ------------
#
# Each worker runs with one BLAS / OpenMP / Numba / PyTorch thread (unless the variables are set): two
# workers on two cores with two threads each oversubscribe the cores (``benchmarks/bench_test_suite.py``
# measures it). The fuzz campaign (tests/contracts/test_fuzz_api.py) forks its own worker processes, each call
# under a 20-s wall-clock limit: it gets the cores of one xdist worker (cores // workers, at least 1),
# so that a call, and the Numba compilation a new activation starts, keeps a core of its own as in a
# run without xdist. The controller sets the variables before it starts the workers, which inherit them.

_ONE_THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")


def pytest_configure(config):
    workers = len(config.getoption("tx", default=None) or []) if config.getoption("dist", default="no") != "no" else 0
    if workers > 1 and "PYTEST_XDIST_WORKER" not in os.environ:
        for var in _ONE_THREAD_VARS:
            os.environ.setdefault(var, "1")
        os.environ.setdefault("MEANFIELD_FUZZ_WORKERS", str(max(1, (os.cpu_count() or 1) // workers)))
