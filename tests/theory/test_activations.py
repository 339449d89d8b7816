"""meanfield.activations: derivatives, names and parameters."""

import numpy as np
import pytest

from meanfield.activations import ACTIVATIONS, Activation, get_activation

KINKS = {"relu": [0.0], "leaky_relu": [0.0], "hard_tanh": [-1.0, 1.0]}


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_derivatives_match_finite_differences(name):
    act = get_activation(name)
    x = np.linspace(-3.1, 3.3, 41)
    x = x[np.all(np.abs(x[:, None] - np.array(KINKS.get(name, [99.0]))[None, :]) > 1e-3, axis=1)]
    h = 1e-6
    assert np.allclose(act.dphi(x), (act.phi(x + h) - act.phi(x - h)) / (2 * h), atol=1e-7)
    assert np.allclose(act.d2phi(x), (act.dphi(x + h) - act.dphi(x - h)) / (2 * h), atol=1e-6)


def test_known_values():
    assert get_activation("erf").phi(np.inf) == 1.0
    assert get_activation("gelu").phi(1.0) == pytest.approx(0.8413447460685429)
    assert get_activation("softplus").phi(-800.0) == pytest.approx(0.0, abs=1e-300)
    assert get_activation("softplus").phi(800.0) == 800.0
    assert get_activation("sigmoid").phi(-800.0) == pytest.approx(0.0, abs=1e-300)
    assert get_activation("leaky_relu", slope=0.2).phi(-2.0) == pytest.approx(-0.4)
    assert not get_activation("relu").smooth and get_activation("tanh").smooth


def test_activation_objects_pass_through_and_compare():
    a = get_activation("leaky_relu", slope=0.3)
    assert get_activation(a) is a
    assert a == get_activation("leaky_relu", slope=0.3)
    assert a != get_activation("leaky_relu", slope=0.1)


def test_from_functions():
    cube = Activation.from_functions("cube", lambda x: x**3, lambda x: 3 * x**2, lambda x: 6 * x)
    assert not cube.is_builtin and cube.derivative(2)(1.0) == 6.0
    with pytest.raises(ValueError):
        Activation.from_functions("bad", 3, lambda x: x)


@pytest.mark.parametrize(
    "args,kwargs",
    [
        (("swishy",), {}),
        (("tanh",), {"slope": 0.1}),
        (("leaky_relu",), {"alpha": 0.1}),
        (("leaky_relu",), {"slope": float("nan")}),
    ],
)
def test_bad_names_and_parameters(args, kwargs):
    with pytest.raises(ValueError):
        get_activation(*args, **kwargs)


# --- regressions found by the public-API fuzzer (tests/fuzz/, full catalogue) -------------------


@pytest.mark.parametrize("name", ["rbf", "relu_power", "elu"])
def test_wrong_parameter_names_the_activation(name):
    with pytest.raises(ValueError, match="activation"):
        get_activation(name, slope=0.1)
