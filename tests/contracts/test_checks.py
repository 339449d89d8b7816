"""meanfield.checks (and meanfield.backend's argument checks): regressions found by the public-API fuzzer
(tests/fuzz/). Each test failed on the code before the fix."""

from __future__ import annotations

import numpy as np
import pytest

from meanfield import backend, checks

RAGGED = [[1.0, 2.0], [3.0]]


@pytest.mark.parametrize(
    "call",
    [
        lambda: checks.as_float_array(RAGGED, "weights"),
        lambda: checks.check_finite(RAGGED, "weights"),
        lambda: checks.check_covariance(RAGGED, "weights"),
        lambda: checks.check_probability_vector(RAGGED, "weights"),
        lambda: checks.check_variance_vector(RAGGED, "weights"),
    ],
)
def test_ragged_input_names_the_argument(call):
    """np.iscomplexobj raised numpy's own 'inhomogeneous shape' ValueError outside the check's try."""
    with pytest.raises(ValueError, match="weights"):
        call()


def test_complex_integer_is_a_type_error():
    with pytest.raises(TypeError, match="width must be an integer"):
        checks.check_int(2 + 1j, "width")
    with pytest.raises(TypeError, match="size"):
        checks.resolve_spatial_shape(1, None, 2 + 1j)
    assert checks.check_int(3.0, "width", 1) == 3  # an integral float is still accepted


@pytest.mark.parametrize("bound", [1.5, float("nan"), "a", 2 + 1j, np.array([2, 3])])
def test_check_int_bounds_are_integers(bound):
    """minimum=1.5 / nan were accepted, 'a' gave a TypeError about '<' without the bound's name."""
    with pytest.raises(TypeError, match="minimum"):
        checks.check_int(3, "n", minimum=bound)
    with pytest.raises(TypeError, match="maximum"):
        checks.check_int(3, "n", maximum=bound)


@pytest.mark.parametrize("atol", [float("nan"), -1e-3, "a", None, 1 + 1j, np.array([1.0, 2.0])])
def test_probability_vector_atol_is_checked(atol):
    """atol=nan accepted any sum; 'a' raised numpy's UFuncTypeError."""
    with pytest.raises((TypeError, ValueError), match="atol"):
        checks.check_probability_vector([0.25, 0.5, 0.25], atol=atol)


@pytest.mark.parametrize("ndim", [1.5, "a", float("nan"), 3, 2 + 1j])
def test_variance_vector_ndim_is_checked(ndim):
    with pytest.raises((TypeError, ValueError), match="ndim"):
        checks.check_variance_vector([0.25, 0.5, 0.25], ndim=ndim)


def test_empty_covariance_is_refused():
    """A (0, 0) covariance passed the check and failed later in a reshape."""
    with pytest.raises(ValueError, match="cov"):
        checks.check_covariance(np.zeros((0, 0)))


@pytest.mark.parametrize("generator", [-1, 1.5, "a", True, np.random.RandomState(0), np.random.SeedSequence(1)])
def test_spawn_sequences_needs_a_generator(generator):
    """AttributeError: 'int' object has no attribute 'integers'."""
    with pytest.raises(TypeError, match="generator"):
        backend.spawn_sequences(generator, 2)


@pytest.mark.parametrize("n", [-1, 1.5, 10**12, 2**64, "a", None, 2 + 1j])
def test_spawn_sequences_count_is_bounded(n):
    """n=10**12 spawned for minutes; -1 raised OverflowError, 'a' an unnamed TypeError."""
    with pytest.raises((TypeError, ValueError), match=r"\bn\b"):
        backend.spawn_sequences(np.random.default_rng(0), n)
    assert len(backend.spawn_sequences(np.random.default_rng(0), 3)) == 3


def test_backend_errors_name_the_argument():
    with pytest.raises(ValueError, match="name"):
        backend.get_backend("no_such")
    with pytest.raises(TypeError, match="seed"):
        backend.substream(2 + 1j)
