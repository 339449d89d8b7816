"""meanfield.numerics: the shared Richardson extrapolation."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meanfield.numerics import RichardsonEstimate, richardson

#: float64 rounding of a few operations on O(1) numbers.
RTOL = 1e-13
#: Standard errors allowed in the Monte-Carlo check (two-sided 7e-6).
Z = 4.5


@given(
    st.floats(-10, 10), st.floats(-10, 10), st.floats(0.5, 3.0), st.sampled_from([2.0, 3.0, 1.5]), st.floats(1e-3, 0.5)
)
@settings(max_examples=30)
def test_pure_leading_term_is_removed_exactly(a, c, p, r, h):
    """A(h) = a + c h^p: the extrapolate is a, and error = |A(h / r) - a| exactly."""
    coarse, fine = a + c * h**p, a + c * (h / r) ** p
    est = richardson(coarse, fine, order=p, ratio=r)
    scale = abs(a) + abs(c) * h**p + 1.0
    assert est.value == pytest.approx(a, abs=RTOL * scale * r**p)
    assert est.error == pytest.approx(abs(fine - a), abs=RTOL * scale * r**p)
    assert est.stderr == 0.0


def test_next_order_term_remains_and_error_estimates_the_fine_value():
    """A(h) = 1 + h^2 + h^3: the extrapolate's error is O(h^3), the estimate is the fine value's error to O(h^3)."""
    for h in (0.1, 0.01):
        f = lambda t: 1.0 + t**2 + t**3  # noqa: E731
        est = richardson(f(h), f(h / 2), order=2)
        assert abs(est.value - 1.0) == pytest.approx(h**3 / 6, rel=1e-6)  # (4 (h/2)^3 - h^3) / 3 = -h^3 / 6
        assert abs(est.error - (f(h / 2) - 1.0)) == pytest.approx(
            h**3 / 6, rel=1e-6
        )  # h^2/4 + 7h^3/24 vs h^2/4 + h^3/8


def test_hand_written_forms():
    """(4 fine - coarse) / 3 and 2 fine - coarse with sqrt(4 se_f^2 + se_c^2): the forms used before the helper."""
    c, f = np.array([1.3, 2.0]), np.array([1.1, 2.5])
    np.testing.assert_array_equal(richardson(c, f, order=2).value, (4 * f - c) / 3)
    np.testing.assert_array_equal(richardson(c, f, order=2).error, np.abs(f - c) / 3)
    est = richardson(0.7, 0.8, order=1, coarse_stderr=0.03, fine_stderr=0.02)
    assert est.value == 2 * 0.8 - 0.7 and est.stderr == pytest.approx(math.sqrt(4 * 0.02**2 + 0.03**2), rel=RTOL)
    assert isinstance(est, RichardsonEstimate) and isinstance(est.value, float)
    assert est.replace(value=0.0).value == 0.0


def test_stderr_against_monte_carlo():
    """The stderr of a linear combination of independent estimates, checked by sampling them."""
    rng = np.random.default_rng(3)
    n, sc, sf = 200_000, 0.3, 0.1
    values = richardson(rng.normal(1.0, sc, n), rng.normal(1.0, sf, n), order=1.5, ratio=3.0).value
    se = richardson(1.0, 1.0, order=1.5, ratio=3.0, coarse_stderr=sc, fine_stderr=sf).stderr
    sd = values.std(ddof=1)
    assert abs(sd - se) <= Z * se / math.sqrt(2 * (n - 1))  # sd of a normal sample's sd


@pytest.mark.parametrize(
    "kwargs,exc,match",
    [
        (dict(order=0.0), ValueError, "order"),
        (dict(order=-1.0), ValueError, "order"),
        (dict(order=float("nan")), ValueError, "order"),
        (dict(order=True), TypeError, "order"),
        (dict(order=1 + 1j), TypeError, "order"),
        (dict(order=2, ratio=1.0), ValueError, "ratio"),
        (dict(order=2, ratio=0.5), ValueError, "ratio"),
        (dict(order=2, ratio="2"), TypeError, "ratio"),
        (dict(order=1e-300, ratio=2.0), ValueError, "ratio"),  # r^p - 1 == 0 in float64
        (dict(order=1e300, ratio=2.0), ValueError, "ratio"),  # r^p overflows
        (dict(order=2, coarse_stderr=-1.0), ValueError, "stderr"),
        (dict(order=2, fine_stderr=float("inf")), ValueError, "fine_stderr"),
    ],
)
def test_bad_arguments(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        richardson(1.0, 1.1, **kwargs)


@pytest.mark.parametrize(
    "coarse,fine,exc,match",
    [
        (float("nan"), 1.0, ValueError, "coarse"),
        (1.0, float("inf"), ValueError, "fine"),
        (True, 1.0, TypeError, "coarse"),
        (1.0, 1 + 2j, TypeError, "fine"),
        (np.array([1.0, 2.0]), np.array([1.0, 2.0, 3.0]), ValueError, "broadcast"),
        ("1", 1.0, TypeError, "coarse"),
        (-1.7e308, 1.7e308, ValueError, "overflow"),
        (np.array([]), np.array([]), None, None),
    ],
)
def test_bad_values(coarse, fine, exc, match):
    if exc is None:  # empty arrays: empty results, nothing silently invented
        est = richardson(coarse, fine, order=2)
        assert est.value.shape == (0,) and est.error.shape == (0,)
        return
    with pytest.raises(exc, match=match):
        richardson(coarse, fine, order=2)


@pytest.mark.parametrize("name", ["coarse", "fine", "coarse_stderr", "fine_stderr"])
def test_ragged_input_names_the_argument(name):
    """Regression (public-API fuzzer): a ragged list raised numpy's own 'inhomogeneous shape' error."""
    kwargs = {"coarse": [1.0, 2.0], "fine": [1.1, 2.05], "coarse_stderr": 0.0, "fine_stderr": 0.0}
    kwargs[name] = [[1.0, 2.0], [3.0]]
    with pytest.raises(ValueError, match=name):
        richardson(
            kwargs["coarse"],
            kwargs["fine"],
            order=2,
            coarse_stderr=kwargs["coarse_stderr"],
            fine_stderr=kwargs["fine_stderr"],
        )
