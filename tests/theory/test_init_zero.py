"""meanfield.init ZerO / ZerO* (Zhao et al. 2022; Grzejdziak et al. 2023 part 3)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from meanfield.data import load_digits
from meanfield.init import hadamard, zero_network, zero_star_network, zero_weights
from meanfield.simulate import empirical_variances

#: Identity layers copy relu(y) bit for bit; pooled variances then agree to rounding of the sums.
ZERO_RTOL = 1e-12
#: Standard errors allowed in Monte-Carlo checks (two-sided 7e-6 per check).
Z = 4.5


@pytest.mark.parametrize("m", [0, 1, 2, 5])
def test_hadamard_is_orthogonal_with_pm_one_entries(m):
    h = hadamard(m)
    n = 2**m
    assert h.shape == (n, n) and set(np.unique(h)) <= {-1.0, 1.0}
    np.testing.assert_array_equal(h @ h.T, n * np.eye(n))


@settings(max_examples=40)
@given(n_out=hs.integers(1, 70), n_in=hs.integers(1, 70))
def test_zero_weights_algorithm_1(n_out, n_in):
    w = zero_weights(n_out, n_in)
    assert w.shape == (n_out, n_in)
    np.testing.assert_array_equal(w, zero_weights(n_out, n_in))  # deterministic
    if n_out <= n_in:
        np.testing.assert_array_equal(w, np.eye(n_out, n_in))
    else:
        m = int(np.ceil(np.log2(n_out)))
        c = 2.0 ** (-(m - 1) / 2)
        assert set(np.unique(np.abs(w))) == {c}  # zeros and ones up to the normalisation c
        assert np.all(w[:, 0] == c)  # first Hadamard column is all ones


@pytest.mark.parametrize("n_out,n_in", [(8, 3), (16, 16), (32, 5)])
def test_zero_expanding_layer_power_of_two_is_scaled_isometry(n_out, n_in):
    w = zero_weights(n_out, n_in)
    # c^2 * 2^m = 2: the sqrt(2) gain that compensates one ReLU
    np.testing.assert_allclose(w.T @ w, (2.0 if n_out > n_in else 1.0) * np.eye(n_in), atol=1e-14)


def test_zero_star_only_first_layer_random():
    a = zero_star_network([64, 10, 10, 20], rng=1)
    b = zero_star_network([64, 10, 10, 20], rng=2)
    z = zero_network([64, 10, 10, 20])
    assert not np.allclose(a[0], b[0])
    w2 = a[0].ravel() ** 2  # 640 i.i.d. entries of variance 1 / w_0 = 1 / 64 (Sec. A of part 3)
    assert abs(w2.mean() - 1 / 64) <= Z * w2.std(ddof=1) / np.sqrt(w2.size)
    for k in (1, 2):
        np.testing.assert_array_equal(a[k], z[k])


@pytest.mark.parametrize("init", ["zero", "zero_star"])
def test_zero_keeps_empirical_variance_after_first_layer(init):
    x = load_digits(n_samples=200, standardized=True).x
    v = empirical_variances(x, init, depth=60, width=10, n_networks=5, rng=0, dtype="float64")
    np.testing.assert_allclose(v[:, 2:], np.repeat(v[:, 2:3], 59, axis=1), rtol=ZERO_RTOL)
    if init == "zero":  # deterministic: every network identical
        np.testing.assert_array_equal(v, np.repeat(v[:1], 5, axis=0))


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: zero_weights(0, 3), "n_out"),
        (lambda: zero_weights(3, 0), "n_in"),
        (lambda: hadamard(-1), "m must"),
        (lambda: zero_network([5]), "widths"),
        (lambda: zero_network([5, 0]), "widths"),
        (lambda: zero_star_network([4, 4], law="orthogonal"), "law"),
    ],
)
def test_bad_input_names_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize("init", ["he", "gsm", "zero_star"])
def test_numba_kernel_matches_blas_path(init):
    """The fused Numba kernel and the stacked-matmul path draw the same weights (same chunks) and
    agree to float64 rounding accumulated over 60 layers (measured <= 1e-12 relative)."""
    x = load_digits(n_samples=100, standardized=True).x
    a = empirical_variances(x, init, depth=60, width=10, n_networks=6, rng=4, chunk=3, engine="numba")
    c = empirical_variances(x, init, depth=60, width=10, n_networks=6, rng=4, chunk=3, engine="blas", dtype="float64")
    alive = c > 1e-250
    np.testing.assert_allclose(a[alive], c[alive], rtol=1e-10)
    assert np.all(a[~alive] < 1e-250)
