"""Edge cases of meanfield.init (initialisers and MetaInit): overflow, absurd sizes, parameters, types, rng.

Each test names the finding it pins; each failed on the code before the fix.
"""

import math
import time

import numpy as np
import pytest
from scipy.linalg import hadamard as scipy_hadamard

from meanfield import init as I

#: Wall-clock bound for a call that must refuse an absurd size at once (it used to run > 20 s).
FAST_S = 2.0


def _he_stack(widths, k=1, seed=0):
    rng = np.random.default_rng(seed)
    return [np.stack([I.dense_weights(o, i, 2.0, rng=rng) for _ in range(k)]) for i, o in zip(widths[:-1], widths[1:])]


# ------------------------------------------------------------------ He / Glorot


@pytest.mark.parametrize("slope", [1e300, -1e300, 1e155])
def test_he_and_glorot_with_huge_slope_are_valueerrors(slope):
    """Issue: he_sigma_w2(1e300) and glorot_sigma_w2(..., slope=1e300) raised OverflowError (slope**2);
    the true gain 2 / (1 + slope^2) is below the smallest normal float there."""
    with pytest.raises(ValueError, match="slope"):
        I.he_sigma_w2(slope)
    with pytest.raises(ValueError, match="slope"):
        I.glorot_sigma_w2(10, 10, slope)


def test_he_gain_at_the_largest_slope_is_normal():
    assert I.he_sigma_w2(1e150) == pytest.approx(2e-300, rel=1e-15)
    assert I.glorot_sigma_w2(10, 10, -1e150) == pytest.approx(2e-300, rel=1e-15)


# ------------------------------------------------------------------ gradient quotient and MetaInit overflow


@pytest.mark.parametrize("what", ["x", "weights", "slope", "targets"])
def test_gradient_quotient_overflow_is_a_valueerror_not_nan(what):
    """Issue: gradient_quotient returned NaN for x, weights or mse targets times 1e300 and slope 1e300."""
    ws = [w[0] for w in _he_stack((4, 5, 3))]
    rng = np.random.default_rng(1)
    x, labels, targets = rng.standard_normal((6, 4)), np.array([0, 1, 2, 0, 1, 2]), rng.standard_normal((6, 3))
    kw = dict(weights=ws, x=x, targets=labels, slope=0.1)
    if what == "x":
        kw["x"] = x * 1e300
    elif what == "weights":
        kw["weights"] = [w * 1e300 for w in ws]
    elif what == "slope":
        kw["slope"] = 1e300
    else:
        kw.update(targets=targets * 1e300, loss="mse")
    with pytest.raises(ValueError, match="overflows float64"):
        I.gradient_quotient(**kw)


@pytest.mark.parametrize(
    "kw,match",
    [
        (dict(eps=1e-300), "eps must lie in"),
        (dict(eps=1e200), "eps must lie in"),
        (dict(lr=1e300), "at step 1"),
        (dict(slope=1e300), "overflows float64"),
    ],
)
def test_metainit_overflow_raises_instead_of_nan_weights(kw, match):
    """Issue: metainit with eps=1e-300, lr=1e300, slope=1e300 or weights * 1e300 returned NaN weights."""
    with pytest.raises(ValueError, match=match):
        I.metainit(_he_stack((4, 6, 6, 3)), steps=5, **kw)
    with pytest.raises(ValueError, match="overflows float64"):
        I.metainit([w * 1e300 for w in _he_stack((4, 6, 6, 3))], steps=5)


def test_metainit_at_the_eps_range_ends_is_finite():
    for eps in (1e-100, 1e100):
        res = I.metainit(_he_stack((4, 6, 6, 3), k=2), steps=5, eps=eps, rng=0)
        assert all(np.all(np.isfinite(w)) for w in res.weights)
        assert np.all(np.isfinite(res.gq_history)) and np.all(np.isfinite(res.gq_after))


def test_metainit_without_evaluation_reports_none_not_nan():
    """gq_before / gq_after were NaN when eval_batches = 0."""
    res = I.metainit([w[0] for w in _he_stack((4, 6, 3))], steps=2, eval_batches=0, rng=0)
    assert res.gq_before is None and res.gq_after is None


@pytest.mark.parametrize("bad", ["yes", None, float("nan"), [True], 1, 0.0])
def test_biases_flag_must_be_a_bool(bad):
    """Issue: biases='yes', None, nan, [True] were accepted as truthy objects."""
    ws = [w[0] for w in _he_stack((4, 5, 3))]
    with pytest.raises(TypeError, match="biases"):
        I.gradient_quotient(ws, np.ones((2, 4)), np.array([0, 1]), biases=bad)
    with pytest.raises(TypeError, match="biases"):
        I.metainit(ws, steps=1, biases=bad)


# ------------------------------------------------------------------ absurd sizes: no hang, no MemoryError


@pytest.mark.parametrize("size", [10**12, 2**64, 1e300])
@pytest.mark.parametrize(
    "call,name",
    [
        (lambda v: I.orthogonal_conv_kernel(v, 2, 3), "kernel_size"),
        (lambda v: I.orthogonal_conv_kernel_1d(v, 2, 3), "kernel_size"),
        (lambda v: I.constnet((4, 8), blocks_per_stage=v), "blocks_per_stage"),
        (lambda v: I.metainit([np.eye(3), np.ones((2, 3))], steps=1, eval_batches=v), "eval_batches"),
        (lambda v: I.metainit([np.eye(3), np.ones((2, 3))], steps=v), "steps"),
        (lambda v: I.dense_weights(v, 3), "n_out"),
        (lambda v: I.haar_orthogonal(3, v), "n_in"),
        (lambda v: I.delta_orthogonal_kernel(v, 2, 3), "kernel_size"),
        (lambda v: I.orthogonal_kernel_variance(v), "kernel_size"),
        (lambda v: I.zero_weights(v, 3), "n_out"),
        (lambda v: I.gsm(4, v if isinstance(v, float) else 2 * v), "n_in"),
        (lambda v: I.averaging_conv(v, 3), "n_out"),
        (lambda v: I.symmetric_projection(v), "n"),
    ],
)
def test_absurd_sizes_are_refused_at_once(call, name, size):
    """Issue: kernel_size, blocks_per_stage, eval_batches = 10^12 / 2^64 / 1e300 did not return
    within 20 s; sizes of 10^12 raised MemoryError. Now a ValueError naming the argument, at once."""
    t0 = time.perf_counter()
    with pytest.raises(ValueError, match=name):
        call(size)
    assert time.perf_counter() - t0 < FAST_S


def test_large_but_feasible_sizes_work():
    """The caps leave realistic sizes alone: wide layers, long kernels, big ZerO expansions."""
    w = I.dense_weights(10**5, 8, 2.0, "orthogonal", rng=0)
    assert w.shape == (10**5, 8) and np.allclose(w.T @ w, 2.0 * 10**5 / 8 * np.eye(8))
    v = I.orthogonal_kernel_variance(2000, ndim=1)  # 2.0 ** 1999 overflowed before
    assert np.all(np.isfinite(v)) and v.sum() == pytest.approx(1.0, abs=1e-12) and v[1000] == v.max()
    z = I.zero_weights(2**20 + 1, 1)  # used to build the 2^21 x 2^21 Hadamard matrix
    assert z.shape == (2**20 + 1, 1) and np.all(np.abs(z) == 2.0 ** (-10))


def test_zero_weights_is_the_scaled_hadamard_block():
    for n_out, n_in in ((300, 7), (6, 3), (64, 64 - 1), (5, 1)):
        m = math.ceil(math.log2(n_out))
        expected = 2.0 ** (-(m - 1) / 2.0) * scipy_hadamard(2**m)[:n_out, :n_in]
        np.testing.assert_array_equal(I.zero_weights(n_out, n_in), expected)
    for m in range(6):
        np.testing.assert_array_equal(I.hadamard(m), scipy_hadamard(2**m))
    with pytest.raises(ValueError, match="m must be <= 14"):
        I.hadamard(30)


# ------------------------------------------------------------------ parameters validated on every path


@pytest.mark.parametrize("kind", ["no_such", "", None, 3, ["x"], float("nan")])
def test_channel_matrix_validates_kind_when_gamma_is_given(kind):
    """Issue: kind was ignored (and never validated) when gamma was given."""
    with pytest.raises(ValueError, match="kind"):
        I.channel_matrix(4, kind, gamma=0.5)


def test_leakynet_and_kernel_shapes_are_validated_naming_them():
    with pytest.raises(TypeError, match="gamma"):
        I.leakynet(["I", "1"], 4, gamma=0.5)
    with pytest.raises(ValueError, match="kinds"):
        I.leakynet(["I", "x"], 4)
    with pytest.raises(ValueError, match="n must be"):
        I.leakynet([], 0)
    for bad in (2.5, float("nan"), None, 1 + 1j, "3"):
        with pytest.raises(TypeError, match="kernel_shape"):
            I.delta_kernel(bad)
    with pytest.raises(ValueError, match="blocks_per_stage"):
        I.constnet((4, 8), blocks_per_stage=2.5)
    with pytest.raises(TypeError, match="blocks_per_stage"):
        I.constnet((4, 8), blocks_per_stage="2")


@pytest.mark.parametrize(
    "call,name",
    [
        (lambda v: I.he_sigma_w2(v), "slope"),
        (lambda v: I.dense_weights(3, 3, v), "sigma_w2"),
        (lambda v: I.gsm(4, 4, v), "sigma_w2"),
        (lambda v: I.orthogonal_looks_linear(4, 4, v), "sigma_w2"),
        (lambda v: I.channel_matrix(3, gamma=v), "gamma"),
        (lambda v: I.leakynet(["I"], 3, slope=v), "slope"),
        (lambda v: I.looks_linear_delta_orthogonal(4, sigma_w2=v), "sigma_w2"),
        (lambda v: I.metainit([np.eye(3), np.ones((2, 3))], steps=1, lr=v), "lr"),
        (lambda v: I.gradient_quotient([np.eye(3), np.ones((2, 3))], np.ones((2, 3)), [0, 1], eps=v), "eps"),
        (lambda v: I.looks_linear(np.full((2, 2), v)), "w0"),
        (lambda v: I.looks_linear_input(np.full(3, v)), "x"),
        (lambda v: I.conv_matrix(np.full((3, 2, 2), v), 4), "kernel"),
        (lambda v: I.gradient_quotient([np.eye(3), np.ones((2, 3))], np.full((2, 3), v), [0, 1]), "x"),
        (
            lambda v: I.gradient_quotient(
                [np.eye(3), np.ones((2, 3))], np.ones((2, 3)), np.full((2, 2), v), loss="mse"
            ),
            "targets",
        ),
    ],
)
@pytest.mark.parametrize("value", [True, 1 + 1j])
def test_bools_and_complex_numbers_are_typeerrors(call, name, value):
    """Issue: complex arrays lost their imaginary part silently; bools were taken as numbers."""
    with pytest.raises(TypeError, match=name):
        call(value)


# ------------------------------------------------------------------ randomness: one rule


STOCHASTIC = {
    "haar_orthogonal": lambda rng: I.haar_orthogonal(5, 3, rng=rng),
    "dense_weights gaussian": lambda rng: I.dense_weights(5, 3, 2.0, "gaussian", rng=rng),
    "dense_weights uniform": lambda rng: I.dense_weights(5, 3, 2.0, "uniform", rng=rng),
    "dense_weights rademacher": lambda rng: I.dense_weights(5, 3, 2.0, "rademacher", rng=rng),
    "dense_weights orthogonal": lambda rng: I.dense_weights(5, 3, 2.0, "orthogonal", rng=rng),
    "gsm": lambda rng: I.gsm(4, 6, rng=rng),
    "orthogonal_looks_linear": lambda rng: I.orthogonal_looks_linear(4, 6, rng=rng),
    "symmetric_projection": lambda rng: I.symmetric_projection(5, rng=rng),
    "orthogonal_conv_kernel": lambda rng: I.orthogonal_conv_kernel(3, 2, 3, rng=rng),
    "orthogonal_conv_kernel_1d": lambda rng: I.orthogonal_conv_kernel_1d(3, 2, 3, rng=rng),
    "delta_orthogonal_kernel": lambda rng: I.delta_orthogonal_kernel(3, 2, 3, rng=rng),
    "delta_orthogonal_kernel_1d": lambda rng: I.delta_orthogonal_kernel_1d(3, 2, 3, rng=rng),
    "zero_star_network": lambda rng: I.zero_star_network([6, 4, 8], rng=rng),
    "looks_linear_delta_orthogonal": lambda rng: I.looks_linear_delta_orthogonal(4, rng=rng),
    "metainit": lambda rng: I.metainit([w[0] for w in _he_stack((4, 5, 3))], steps=3, eval_batches=1, rng=rng).weights,
}


def _flat(x):
    return np.concatenate([np.ravel(a) for a in x]) if isinstance(x, list) else np.ravel(x)


@pytest.mark.parametrize("name", sorted(STOCHASTIC))
def test_int_rng_gives_the_default_rng_stream(name):
    """f(rng=7) equals f(rng=numpy.random.default_rng(7)); other seeds differ; bad rng values raise."""
    f = STOCHASTIC[name]
    a, b = _flat(f(7)), _flat(f(np.random.default_rng(7)))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, _flat(f(8)))
    for bad in (True, 1.5, "7", -1, [7]):
        with pytest.raises((TypeError, ValueError), match="rng"):
            f(bad)


@pytest.mark.parametrize(
    "call",
    [
        lambda: I.haar_orthogonal(3, 3, seed=1),
        lambda: I.dense_weights(3, 3, seed=1),
        lambda: I.gsm(4, 4, seed=1),
        lambda: I.orthogonal_looks_linear(4, 4, seed=1),
        lambda: I.symmetric_projection(3, seed=1),
        lambda: I.orthogonal_conv_kernel(3, 2, 2, seed=1),
        lambda: I.orthogonal_conv_kernel_1d(3, 2, 2, seed=1),
        lambda: I.delta_orthogonal_kernel(3, 2, 2, seed=1),
        lambda: I.delta_orthogonal_kernel_1d(3, 2, 2, seed=1),
        lambda: I.zero_star_network([3, 3], seed=1),
        lambda: I.looks_linear_delta_orthogonal(4, seed=1),
        lambda: I.metainit([np.eye(3), np.ones((2, 3))], seed=1),
    ],
)
def test_seed_keyword_is_gone(call):
    """Every stochastic function takes rng only (the library's one rule)."""
    with pytest.raises(TypeError, match="seed"):
        call()
