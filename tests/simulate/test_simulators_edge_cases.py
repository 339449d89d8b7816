"""Edge cases of the Monte-Carlo simulators: one rng rule for every simulator, errors of the right kind
(the ``networks.*`` lines of shared/audit/fuzz-findings.txt), and no silent inf / NaN / underflow at
large variances, input scales and depths."""

import math
import types

import numpy as np
import pytest

from meanfield import simulate as N
from meanfield.activations import Activation
from meanfield.backend import Backend, spawn_sequences, substream
from meanfield.init import dense_weights, periodic_conv, periodic_conv_transpose

V3 = np.full(3, 1 / 3)
FRESH_DRAWS = 6  # draws with rng=None of which at least two must differ (see the rng-rule test)
X2 = np.random.default_rng(2).standard_normal((2, 6))


def _sqrt_nan():
    """A user activation that is NaN for x < 0 (refused by ``from_functions`` or by the simulator)."""
    return Activation.from_functions("sqrt", np.sqrt, lambda x: 0.5 / np.sqrt(x))


# --- one rng rule --------------------------------------------------------------------------------


def _digits(n=40):
    from meanfield.data import load_digits

    return load_digits(n_samples=n, standardized=True).x


def _simulators():
    """(name, f(rng) -> arrays) for every stochastic function of meanfield.validation, small sizes."""
    from meanfield.validation import conv as vconv

    from meanfield import simulate as S

    FW = K = S

    xs = np.random.default_rng(5).standard_normal((3, 4, 1))

    return [
        ("dense_weights batched", lambda r: dense_weights(3, 4, 1.5, "gaussian", rng=r, batch_shape=2)),
        ("dense_weights batched orthogonal", lambda r: dense_weights(3, 4, 1.5, "orthogonal", rng=r, batch_shape=2)),
        ("conv_kernels", lambda r: N.conv_kernels(2, (3,), 4, 1.5, V3, "gaussian", rng=r)),
        ("conv_kernels orthogonal", lambda r: N.conv_kernels(2, (3,), 4, 1.5, V3, "orthogonal", rng=r)),
        (
            "simulate_dense",
            lambda r: (lambda s: (s.cov, s.grad_sq))(
                N.simulate_dense(X2, "tanh", 1.5, 0.1, 2, 8, 3, gradients=True, rng=r)
            ),
        ),
        (
            "simulate_conv",
            lambda r: (lambda s: (s.cov, s.grad_sq, s.weight_grad_sq))(
                N.simulate_conv(np.eye(5), "relu", 1.5, 0.1, V3, 2, 4, 3, gradients=True, rng=r)
            ),
        ),
        (
            "simulate_conv delta_orthogonal",
            lambda r: N.simulate_conv(np.eye(5), "tanh", 1.5, 0.1, V3, 2, 4, 3, init="delta_orthogonal", rng=r).cov,
        ),
        ("simulate_fig_s4", lambda r: vconv.simulate_fig_s4(2, 4, 3, rng=r)),
        ("simulate_squared_norms", lambda r: FW.simulate_squared_norms(X2, [(5, 0.4), (4, 0.5, 0.1)], 3, 2, rng=r)),
        ("simulate_pair", lambda r: tuple(FW.simulate_pair(X2[0], X2[1], 5, 0.4, 0.1, 4, rng=r))),
        (
            "layer_moments",
            lambda r: (lambda m: (m.m4, m.m22))(K.layer_moments([3, 3, 3], 0.1, "uniform", 5, "mixture", rng=r)),
        ),
        ("nonzero_fraction", lambda r: K.nonzero_fraction([3, 3, 3], "gaussian", 2000, rng=r)),
        ("nonzero_fraction gsm", lambda r: K.nonzero_fraction([2, 2, 2], "gsm", 2000, rng=r)),
        ("empirical_variances numba", lambda r: K.empirical_variances(_digits(), "he", 4, 4, 3, rng=r, engine="numba")),
        (
            "empirical_variances blas",
            lambda r: K.empirical_variances(_digits(), "gsm", 4, 4, 3, rng=r, engine="blas", dtype="float64"),
        ),
        ("metainit_weights", lambda r: K.metainit_weights(2, 3, 4, 5, rng=r, steps=1)),
        (
            "looks_linear_delta_orthogonal_forward",
            lambda r: S.looks_linear_delta_orthogonal_forward(xs[..., :1].repeat(2, -1), 2, 4, (3,), rng=r).pre,
        ),
    ]


def _flat(result):
    if isinstance(result, (tuple, list)):
        return [a for r in result for a in _flat(r)]
    if result is None or isinstance(result, float):
        return [np.asarray(result, dtype=float)] if result is not None else []
    return [np.asarray(result)]


def _same(a, b):
    fa, fb = _flat(a), _flat(b)
    return len(fa) == len(fb) and all(np.array_equal(x, y, equal_nan=True) for x, y in zip(fa, fb))


@pytest.mark.parametrize("name, f", _simulators(), ids=[n for n, _ in _simulators()])
def test_int_rng_equals_the_generator_of_that_int_and_none_is_fresh(name, f):
    a = f(7)
    assert _same(a, f(np.random.default_rng(7))), name
    assert _same(a, f(np.random.SeedSequence(7))), name
    assert not _same(a, f(8)), name  # another seed, other numbers
    # None: fresh OS entropy, not a fixed default seed. Some outputs are discrete (``nonzero_fraction``
    # is a count out of 2,000 trials), so two fresh draws can coincide: there the count has a standard
    # deviation of about 20 and two draws agree with probability about 1/(2 sqrt(pi) 20) < 0.015. All of
    # FRESH_DRAWS draws agree with probability below 0.015 ** (FRESH_DRAWS - 1) < 1e-9.
    first = f(None)
    assert any(not _same(first, f(None)) for _ in range(FRESH_DRAWS - 1)), name


@pytest.mark.parametrize(
    "bad, exc",
    [
        ("abc", TypeError),
        (1.5, TypeError),
        (-1, ValueError),
        (object(), TypeError),
        (float("nan"), TypeError),
        (True, TypeError),
        (np.random.RandomState(0), TypeError),
    ],
)
def test_bad_rng_raises_a_type_or_value_error(bad, exc):
    with pytest.raises(exc, match="rng"):
        dense_weights(3, 4, 1.0, "gaussian", rng=bad, batch_shape=2)
    with pytest.raises(exc, match="rng"):
        N.conv_kernels(2, (3,), 4, 1.0, V3, "orthogonal", rng=bad)
    with pytest.raises(exc, match="rng"):
        N.simulate_dense(X2, "tanh", 1.0, 0.0, 1, 4, 2, rng=bad)
    with pytest.raises(exc, match="rng"):
        N.simulate_conv(np.eye(5), "tanh", 1.0, 0.0, V3, 1, 4, 2, rng=bad)


def test_batched_weights_with_an_int_seed_draw_default_rng_of_that_int():
    """Regression (of the former ``random_weights``, now ``dense_weights(..., batch=)``): an int seed raised
    AttributeError ('int' object has no attribute 'standard_normal'). An int n must give the numbers of
    numpy.random.default_rng(n)."""
    w = dense_weights(3, 4, 2.0, "gaussian", 0, batch_shape=5)
    z = np.random.default_rng(0).standard_normal((5, 3, 4))
    np.testing.assert_allclose(w, z * math.sqrt(2.0 / 4), rtol=1e-15)
    u = dense_weights(3, 4, 2.0, "uniform", 3, batch_shape=5)
    np.testing.assert_allclose(
        u, math.sqrt(3 * 2.0 / 4) * (2 * np.random.default_rng(3).random((5, 3, 4)) - 1), rtol=1e-14
    )


def test_simulate_conv_generator_and_int_agree_and_layers_use_spawned_streams():
    """Regression: simulate_conv(seed=7) and simulate_conv(seed=default_rng(7)) differed (the Generator
    was used both for the fields and to draw integer layer seeds)."""
    a = N.simulate_conv(np.eye(6), "tanh", 1.5, 0.1, V3, 3, 5, 4, gradients=True, rng=7)
    b = N.simulate_conv(np.eye(6), "tanh", 1.5, 0.1, V3, 3, 5, 4, gradients=True, rng=np.random.default_rng(7))
    assert np.array_equal(a.cov, b.cov) and np.array_equal(a.weight_grad_sq, b.weight_grad_sq)
    # layer 1's kernels are the first draw of the third child spawned off default_rng(7) (index 2)
    child = spawn_sequences(np.random.default_rng(7), 2 * 3 + 2)[2]
    k = N.conv_kernels(4, (3,), 5, 1.5, V3, "gaussian", rng=child)
    z = np.random.default_rng(spawn_sequences(np.random.default_rng(7), 1)[0]).standard_normal((4, 1, 6, 5))
    h1 = periodic_conv(np.tanh(z.reshape(4, 1, 6, 5)), k[:, None], 1)
    bias = np.random.default_rng(spawn_sequences(np.random.default_rng(7), 8)[5]).standard_normal((4, 1, 1, 5))
    h1 = h1 + math.sqrt(0.1) * bias
    cov1 = np.einsum("nap,nbp->nab", h1[:, 0], h1[:, 0]) / 5
    np.testing.assert_allclose(a.cov[:, 1, 0], cov1, rtol=1e-12, atol=1e-14)


def test_substream_is_a_spawned_child():
    seq = substream(3, 1, 4)
    assert np.array_equal(seq.generate_state(4), np.random.SeedSequence(3).spawn(2)[1].spawn(5)[4].generate_state(4))
    for bad in (-1, 1.5, True, "3"):
        with pytest.raises(ValueError, match="seed"):
            substream(bad)


def test_cupy_generators_are_seeded_from_a_spawned_child():
    """Without a GPU: a stand-in namespace records the seed a CuPy Generator would get."""
    fake = Backend("cupy", types.SimpleNamespace(random=types.SimpleNamespace(default_rng=lambda s: s)))
    g = np.random.default_rng(7)
    state = g.bit_generator.state
    seed = fake.rng(g)
    assert g.bit_generator.state == state  # spawning does not consume the parent's stream
    assert seed == fake.rng(7) == fake.rng(np.random.default_rng(7))
    child = np.random.default_rng(7).spawn(1)[0].bit_generator.seed_seq
    assert seed == int(child.generate_state(1, np.uint64)[0]) >> 1
    assert fake.rng(7) != fake.rng(8)


# --- errors of the right kind (fuzz findings, networks.*) --------------------------------------


def _raises(exc, f, *a, **k):
    with pytest.raises(exc):
        f(*a, **k)


K5 = np.random.default_rng(0).standard_normal((5, 2, 4))  # (k, c_out, c_in)
XC = np.random.default_rng(1).standard_normal((3, 9, 4))
G9 = np.random.default_rng(2).standard_normal((3, 9, 2))


@pytest.mark.parametrize("bad", [np.inf, -np.inf, -1e-3, 2.5])
def test_conv_kernels_channels_and_kernel_shape_are_validated(bad):
    _raises(ValueError, N.conv_kernels, 2, (3,), bad, 1.0)
    _raises(ValueError, N.conv_kernels, 2, (3,), bad, 1.0, V3, "orthogonal", rng=0)
    _raises(ValueError, N.conv_kernels, 2, (bad,), 4, 1.0)
    _raises(ValueError, N.conv_kernels, 2, (bad,), 4, 1.0, None, "orthogonal", rng=0)


@pytest.mark.parametrize(
    "bad, exc",
    [
        (np.nan, ValueError),
        (np.inf, ValueError),
        (-np.inf, ValueError),
        (-1, ValueError),
        (-1e-3, ValueError),
        (np.float64("nan"), ValueError),
        (1 + 1j, TypeError),
        (True, TypeError),
    ],
)
def test_variances_are_validated(bad, exc):
    _raises(exc, dense_weights, 3, 4, bad, "gaussian", 0, batch_shape=2)
    _raises(exc, N.conv_kernels, 2, (3,), 4, bad, V3, "gaussian", rng=0)
    _raises(exc, N.conv_kernels, 2, (3,), 4, bad, V3, "orthogonal", rng=0)
    _raises(exc, N.simulate_dense, X2, "tanh", bad, 0.1, 1, 4, 2, rng=0)
    _raises(exc, N.simulate_conv, np.eye(5), "tanh", 1.0, bad, V3, 1, 4, 2, rng=0)


@pytest.mark.parametrize("args", [(10**12, (3,), 4), (2**64, (3,), 4), (2, (2**40 + 1,), 4), (1, (3,), 10**5)])
def test_absurd_sizes_raise_at_once(args):
    with pytest.raises(ValueError, match="MAX_ELEMENTS"):
        N.conv_kernels(*args, 1.0, None, "gaussian", rng=0)
    with pytest.raises(ValueError, match="width|MAX_ELEMENTS"):
        N.simulate_dense(X2, "relu", 2.0, 0.0, 1, 10**5, 1, rng=0)  # one layer: 10^10 weights


@pytest.mark.parametrize(
    "bad, exc",
    [
        (np.nan, ValueError),
        (np.inf, ValueError),
        ("abc", ValueError),
        (["a", "b"], ValueError),
        (1 + 1j, TypeError),
        (np.array([0.5, 0.5j, 0]), TypeError),
        ([0.5, 0.6, -0.1], ValueError),
    ],
)
def test_v_is_validated_on_the_orthogonal_path_too(bad, exc):
    _raises(exc, N.conv_kernels, 2, (3,), 4, 1.0, bad, "orthogonal", rng=0)
    _raises(exc, N.simulate_conv, np.eye(5), "tanh", 1.0, 0.0, bad, 1, 4, 2, init="orthogonal", rng=0)


def _entry(a, value):
    a = np.array(a, dtype=float)
    a.flat[3] = value
    return a


@pytest.mark.parametrize(
    "make, exc",
    [
        (lambda a: _entry(a, np.nan), ValueError),
        (lambda a: _entry(a, np.inf), ValueError),
        (lambda a: _entry(a, -np.inf), ValueError),
        (lambda a: "abc", ValueError),
        (lambda a: None, ValueError),
        (lambda a: ["a", "b"], ValueError),
        (lambda a: np.array([]), ValueError),
        (lambda a: 1.0, ValueError),
        (lambda a: np.array([1.0, "x"], dtype=object), ValueError),
        (lambda a: a + 1j, TypeError),
        (lambda a: a > 0, TypeError),
    ],
)
def test_periodic_conv_inputs_are_validated(make, exc):
    _raises(exc, periodic_conv, make(XC), K5, 1)
    _raises(exc, periodic_conv, XC, make(K5), 1)
    _raises(exc, periodic_conv_transpose, make(G9), K5, 1)
    _raises(exc, periodic_conv_transpose, G9, make(K5), 1)


def test_periodic_conv_spatial_dims_shapes_and_overflow():
    for bad in (2**64, 0, 3, 1.5, True):
        _raises(ValueError, periodic_conv, XC, K5, bad)
        _raises(ValueError, periodic_conv_transpose, G9, K5, bad)
    _raises(ValueError, periodic_conv, XC, K5[:, :, :3], 1)  # channel mismatch
    _raises(ValueError, periodic_conv_transpose, XC, K5, 1)  # g has c_out channels
    _raises(ValueError, periodic_conv, XC[None].repeat(2, 0), K5[None].repeat(3, 0)[:, None], 1)  # leading axes
    with pytest.raises(ValueError, match="overflow"):
        periodic_conv(XC * 1e200, K5 * 1e200, 1)
    with pytest.raises(TypeError, match="backend"):
        periodic_conv(XC, K5, 1, backend=3)


@pytest.mark.parametrize("sizes", [(0, 3), (3, -1), (2.5, 3), ("a", 3), (None, 3), (2**40, 2**40)])
def test_dense_weights_sizes_are_validated(sizes):
    with pytest.raises((ValueError, TypeError), match="n_out|n_in"):
        dense_weights(*sizes, 1.0, "gaussian", 0, batch_shape=2)


@pytest.mark.parametrize("flag", ["yes", None, np.nan, [True], 1])
def test_gradients_must_be_a_bool(flag):
    with pytest.raises(TypeError, match="gradients"):
        N.simulate_dense(X2, "tanh", 1.0, 0.0, 1, 4, 2, gradients=flag, rng=0)
    with pytest.raises(TypeError, match="gradients"):
        N.simulate_conv(np.eye(5), "tanh", 1.0, 0.0, V3, 1, 4, 2, gradients=flag, rng=0)


def test_complex_and_empty_inputs_are_refused():
    _raises(TypeError, N.simulate_dense, X2 + 1j, "tanh", 1.0, 0.0, 1, 4, 2, rng=0)
    _raises(TypeError, N.simulate_conv, np.eye(5) * (1 + 1j), "tanh", 1.0, 0.0, V3, 1, 4, 2, rng=0)
    _raises(TypeError, N.simulate_conv, np.eye(5), "tanh", 1.0, 0.0, V3 + 0j, 1, 4, 2, rng=0)
    for empty in (np.zeros((0, 6)), np.zeros((2, 0)), np.zeros((0, 0))):
        with pytest.raises(ValueError, match="x must have shape"):
            N.simulate_dense(empty, "tanh", 1.0, 0.0, 1, 4, 2, rng=0)
    _raises(ValueError, N.simulate_conv, np.zeros((0, 0)), "tanh", 1.0, 0.0, V3, 1, 4, 2, rng=0)
    _raises(ValueError, N.simulate_conv, -np.eye(5), "tanh", 1.0, 0.0, V3, 1, 4, 2, rng=0)  # not PSD


@pytest.mark.parametrize("gradients", [False, True])
def test_nan_activation_raises_naming_activation_and_layer(gradients):
    # ``Activation.from_functions`` now checks phi on the real line and refuses it first; either way the
    # error is a ValueError naming the activation, never NaN statistics.
    with pytest.raises(ValueError, match=r"activation 'sqrt'"):
        N.simulate_dense(X2, _sqrt_nan(), 1.0, 0.1, 2, 8, 2, gradients=gradients, rng=0)
    with pytest.raises(ValueError, match=r"activation 'sqrt'"):
        N.simulate_conv(np.eye(5), _sqrt_nan(), 1.0, 0.1, V3, 2, 4, 2, gradients=gradients, rng=0)


# --- no overflow / underflow: log-scaled statistics ------------------------------------------------


def _close(actual, desired, **kw):
    np.testing.assert_allclose(actual, np.broadcast_to(desired, actual.shape), **kw)


def test_relu_statistics_are_exactly_scale_equivariant_at_any_scale():
    """ReLU networks without biases are positively homogeneous: scaling x by s scales every
    covariance by s^2 and sigma_w2 by r scales layer l by r^(l+1) -- exactly, for the same rng. The
    old simulator returned inf / 0 / NaN at s = 1e300 and r = 1e300 (fuzz: x1e300, sigma_w2=1e300)."""
    base = N.simulate_dense(X2, "relu", 2.0, 0.0, 3, 16, 4, gradients=True, rng=5)
    for s in (1e300, 1e-300):
        sim = N.simulate_dense(X2 * s, "relu", 2.0, 0.0, 3, 16, 4, gradients=True, rng=5)
        np.testing.assert_allclose(sim.cov_normalized, base.cov_normalized, rtol=1e-12, atol=1e-15)
        _close(sim.log_scale - base.log_scale, 2 * math.log(s), rtol=1e-12)
        np.testing.assert_allclose(sim.grad_sq, base.grad_sq, rtol=1e-12)  # gradients do not depend on the input scale
        with pytest.raises(ValueError, match="log_scale"):
            sim.cov  # noqa: B018 -- the property raises
    big = N.simulate_dense(X2, "relu", 2e300, 0.0, 3, 16, 4, gradients=True, rng=5)
    np.testing.assert_allclose(big.cov_normalized, base.cov_normalized, rtol=1e-12, atol=1e-15)
    _close(big.log_scale - base.log_scale, np.arange(1, 5) * math.log(1e300), rtol=1e-12)
    _close(big.grad_log_scale - base.grad_log_scale, (3 - np.arange(4)) * math.log(1e300), rtol=1e-12, atol=1e-9)
    conv0 = N.simulate_conv(np.eye(6), "relu", 2.0, 0.0, V3, 3, 4, 3, gradients=True, rng=5)
    conv1 = N.simulate_conv(np.eye(6) * 1e290, "relu", 2e300, 0.0, V3, 3, 4, 3, gradients=True, rng=5)
    np.testing.assert_allclose(conv1.cov_normalized, conv0.cov_normalized, rtol=1e-12, atol=1e-15)
    _close(conv1.log_scale - conv0.log_scale, math.log(1e290) + np.arange(4) * math.log(1e300), rtol=1e-12)
    # |dE/d omega^l|^2 ~ |phi(h^{l-1})|^2 |delta^l|^2 ~ s^2 r^{l-1} r^{depth-l} = s^2 r^{depth-1} for every l
    _close(conv1.weight_grad_log_scale - conv0.weight_grad_log_scale, math.log(1e290) + 2 * math.log(1e300), rtol=1e-12)


#: Standard errors allowed between a Monte-Carlo mean and its expectation (two-sided, ~1e-5 chance).
Z = 4.5


def test_tanh_with_overflowing_first_layer_gets_the_saturated_limit():
    """x * 1e300 with sigma_w2 = 1e300: h^1 overflows, tanh(h^1) = sign(h^1) exactly, so
    E q^2 = sigma_w2 * E phi^2 + sigma_b2 = 1e300 + 0.1 (old simulator: inf / NaN covariances)."""
    n_net, width = 200, 32
    sim = N.simulate_dense(X2 * 1e300, "tanh", 1e300, 0.1, 1, width, n_net, rng=11)
    assert np.all(np.isfinite(sim.cov_normalized)) and np.all(np.isfinite(sim.log_scale))
    q2 = sim.cov_normalized[:, 1, 0, 0] * np.exp(sim.log_scale[:, 1] - math.log(1e300))  # q^2 / 1e300
    assert abs(q2.mean() - (1.0 + 0.1 / 1e300)) <= Z * q2.std(ddof=1) / math.sqrt(n_net)
    with pytest.raises(ValueError, match="overflows"):
        sim.cov  # noqa: B018 -- layer 0 is ~1e900


@pytest.mark.slow
def test_deep_relu_network_carries_its_scale_and_deep_tanh_raises_on_underflow():
    """Depth 10^4: leaky ReLU at sigma_w2 = 4 vs 2 differ by exactly (l + 1) log 2 in log-variance; tanh in
    the ordered phase without bias underflows (max |h| < 2e-292 after ~2000 layers): ValueError."""
    depth = 10_000
    a = N.simulate_dense(X2, "leaky_relu", 2.0, 0.0, depth, 8, 1, gradients=True, rng=3)  # leaky: never dies
    b = N.simulate_dense(X2, "leaky_relu", 4.0, 0.0, depth, 8, 1, gradients=True, rng=3)
    assert np.all(np.isfinite(b.log_scale)) and b.log_scale[0, -1] > 2 * 709  # var beyond 1e600
    _close(b.log_scale - a.log_scale, np.arange(1, depth + 2) * math.log(2.0), rtol=1e-9)
    np.testing.assert_allclose(b.cov_normalized, a.cov_normalized, rtol=1e-9, atol=1e-12)
    with pytest.raises(ValueError, match="log_scale"):
        b.cov  # noqa: B018
    with pytest.raises(ValueError, match="underflows at layer"):
        N.simulate_dense(X2, "tanh", 0.5, 0.0, depth, 4, 1, rng=3)


def test_wide_first_layer_matches_the_input_covariance():
    """Width 10^5 is simulated where it fits (first layer: 10^5 x n0 weights); E cov^1 = sigma_w2 x x^T / n0 + sigma_b2."""
    n_net = 8
    sim = N.simulate_dense(X2, "relu", 1.5, 0.2, 0, 100_000, n_net, rng=4)
    theory = 1.5 * X2 @ X2.T / X2.shape[1] + 0.2
    c = sim.cov[:, 0]
    assert np.all(np.abs(c.mean(0) - theory) <= Z * c.std(0, ddof=1) / math.sqrt(n_net))


def test_saturated_tanh_gradients_raise_instead_of_returning_underflowed_zeros():
    """sigma_w2 = 1e300 (fuzz: simulate_conv [1]): tanh saturates at |h| ~ 1e150, phi'(h) = sech^2(h)
    ~ e^(-1e150) is not a float64; the old simulators returned inf, now the forward statistics are
    finite and the backward pass raises."""
    sim = N.simulate_conv(np.eye(6), "tanh", 1e300, 0.1, V3, 2, 8, 4, rng=1)
    assert np.all(np.isfinite(sim.cov)) and sim.cov[:, 1:].max() > 1e299
    with pytest.raises(ValueError, match="gradient underflows"):
        N.simulate_conv(np.eye(6), "tanh", 1e300, 0.1, V3, 2, 8, 4, gradients=True, rng=1)
    with pytest.raises(ValueError, match="gradient underflows"):
        N.simulate_dense(X2, "tanh", 1e300, 0.1, 2, 8, 4, gradients=True, rng=1)


def test_tanh_and_sigmoid_derivatives_keep_relative_precision_in_the_tails():
    """phi' as sech^2: 1 - tanh^2 cancelled to exactly 0 beyond |x| ~ 19 (closed form 4 e^-2x / (1 + e^-2x)^2)."""
    x = np.array([0.3, 5.0, 20.0, 300.0])
    exact = 4 * np.exp(-2 * x) / (1 + np.exp(-2 * x)) ** 2
    np.testing.assert_allclose(N.activation_fn("tanh")[1](x), exact, rtol=1e-13)
    np.testing.assert_allclose(N.activation_fn("sigmoid")[1](2 * x), exact / 4, rtol=1e-13)


def _private_simulator_calls():
    from meanfield import simulate as S

    FW = K = S

    xd = np.random.default_rng(0).standard_normal((20, 5))
    return [
        (N.conv_kernels, dict(n_networks=2, kernel_shape=(3,), width=4, sigma_w2=1.5, v=V3, init="gaussian", rng=0)),
        (
            N.simulate_dense,
            dict(x=X2, activation="tanh", sigma_w2=1.5, sigma_b2=0.1, depth=2, width=6, n_networks=3, rng=0),
        ),
        (FW.simulate_squared_norms, dict(inputs=X2, layers=[(5, 0.4)], n_networks=3, inputs_per_network=2, rng=0)),
        (FW.simulate_pair, dict(x1=X2[0], x2=X2[1], width=5, sigma_w2=0.4, sigma_b2=0.1, n_networks=4, rng=0)),
        (K.layer_moments, dict(widths=[3, 3], slope=0.1, n_networks=5, rng=0)),
        (K.nonzero_fraction, dict(widths=[3, 3], n_networks=50, rng=0)),
        (K.empirical_variances, dict(x=xd, init="he", depth=3, width=4, n_networks=3, rng=0)),
        (K.metainit_weights, dict(n_networks=2, depth=2, width=4, w0=5, rng=0, steps=1)),
        (
            S.looks_linear_delta_orthogonal_forward,
            dict(x=np.ones((2, 4, 2)), depth=2, width=4, kernel_shape=(3,), rng=0),
        ),
    ]


@pytest.mark.parametrize("bad", [1e300, 2**64, 10**12, np.nan, -1, True, "abc", 1 + 1j])
def test_every_simulator_argument_gets_a_value_or_type_error_at_once(bad):
    """Sizes like 1e300 (OverflowError in the error message), 10**12 networks (hang / MemoryError),
    labels and progress labels of the wrong type (IndexError) now raise ValueError / TypeError
    before any work: sizes are bounded by MAX_ELEMENTS (memory) and MAX_WORK (time)."""
    import time

    for f, base in _private_simulator_calls():
        result = f(**base)
        result = tuple(result) if hasattr(result, "replace") and hasattr(result, "__iter__") else result
        assert all(np.all(np.isfinite(a)) for a in _flat(result) if a.dtype.kind == "f"), (
            f.__name__
        )  # the valid call works
        for arg in base:
            if arg == "rng" and bad in (2**64, 10**12):
                continue  # valid seeds
            kw = dict(base, **{arg: bad})
            start = time.perf_counter()
            try:
                f(**kw)
            except (ValueError, TypeError):
                pass
            assert time.perf_counter() - start < 5.0, (f.__name__, arg, bad)
    K = N

    with pytest.raises(TypeError, match="desc"):
        K.empirical_variances(np.ones((4, 3)), "he", 2, 4, 2, rng=0, desc=3)
