"""The periodic convolution primitive (meanfield.init), the one weight sampler with a batch and a
backend, and the dense Monte-Carlo simulator (meanfield.simulate)."""

import numpy as np
import pytest

from meanfield import dense
from meanfield.init import dense_weights, periodic_conv, periodic_conv_transpose
from meanfield.simulate import simulate_dense


def direct_conv_1d(x, k):
    """y_j(a) = sum_t sum_i K[t, j, i] x_i(a + t - k // 2): eq. 2.1 written out, kernels (k, c_out, c_in)."""
    n, size = x.shape[-2], k.shape[0]
    out = np.zeros(x.shape[:-1] + (k.shape[-2],))
    for a in range(n):
        for j in range(size):
            out[..., a, :] += x[..., (a + j - size // 2) % n, :] @ k[j].T
    return out


def test_periodic_conv_matches_the_definition_and_its_adjoint():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 9, 4))
    k = rng.standard_normal((5, 2, 4))
    h = periodic_conv(x, k, 1)
    assert np.allclose(h, direct_conv_1d(x, k), atol=1e-13)
    g = rng.standard_normal(h.shape)
    assert np.sum(g * h) == pytest.approx(np.sum(periodic_conv_transpose(g, k, 1) * x), rel=1e-12)
    x2 = rng.standard_normal((2, 5, 6, 3))
    k2 = rng.standard_normal((3, 3, 4, 3))
    h2 = periodic_conv(x2, k2, 2)
    g2 = rng.standard_normal(h2.shape)
    assert np.sum(g2 * h2) == pytest.approx(np.sum(periodic_conv_transpose(g2, k2, 2) * x2), rel=1e-12)
    with pytest.raises(ValueError):
        periodic_conv(x, rng.standard_normal((4, 4, 2)), 1)


@pytest.mark.parametrize("law", ["gaussian", "uniform", "rademacher", "orthogonal"])
def test_batched_weight_laws_have_the_mean_field_variance(law, backend):
    from meanfield.backend import get_backend, to_numpy

    b = get_backend(backend)
    w = to_numpy(dense_weights(64, 32, 2.0, law, rng=1, batch_shape=20, backend=b))
    # E W^2 = sigma_w2 / n_in; over 40,960 entries the standard error of the mean square is < 1 %
    assert np.mean(w**2) * 32 == pytest.approx(2.0, rel=0.05)
    if law == "orthogonal":
        assert np.allclose(np.swapaxes(w, 1, 2) @ w, 2.0 * 64 / 32 * np.eye(32), atol=1e-12)


def test_simulated_first_layer_matches_input_covariance_in_mean():
    x = np.random.default_rng(2).standard_normal((2, 30))
    sim = simulate_dense(x, "tanh", 1.5, 0.1, depth=2, width=200, n_networks=64, gradients=True, rng=3)
    assert sim.cov.shape == (64, 3, 2, 2) and sim.grad_sq.shape == (64, 3, 2)
    theory = dense.input_covariance(x, 1.5, 0.1)
    m = sim.cov[:, 0].mean(axis=0)
    se = sim.cov[:, 0].std(axis=0, ddof=1) / np.sqrt(64)
    assert np.all(np.abs(m - theory) <= 4.5 * se)
    assert np.all(np.abs(sim.grad_sq[:, -1].mean(axis=0) - 1.0) <= 4.5 * sim.grad_sq[:, -1].std(axis=0, ddof=1) / 8)


def test_cupy_backend_reports_what_to_install():
    from meanfield.validation.backend import available_backends, get_backend

    if "cupy" in available_backends():
        pytest.skip("CuPy is installed here")
    with pytest.raises(ImportError, match="pip install"):
        get_backend("cupy")


# --- the public simulators subpackage: one signature style, frozen-dataclass results -------------


def test_the_old_simulators_path_warns_and_gives_the_same_objects():
    """``meanfield.validation.simulators`` (the path before the simulators joined the library) is a
    deprecated alias of ``meanfield.simulate``: it warns once when imported, re-exports every public
    name as the same object, and its old submodule paths (``jacobian`` now ``spectra``) resolve."""
    import subprocess
    import sys

    code = (
        "import warnings\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    import meanfield.validation.simulators as old\n"
        "    from meanfield.validation.simulators.jacobian import jacobian_singular_values\n"
        "    from meanfield.validation.simulators.ntk import empirical_ntk\n"
        "import meanfield.simulate as new\n"
        "assert [w.category for w in caught] == [DeprecationWarning], [str(w.message) for w in caught]\n"
        "assert 'meanfield.simulate' in str(caught[0].message)\n"
        "assert old.__all__ == new.__all__ and all(getattr(old, n) is getattr(new, n) for n in new.__all__)\n"
        "assert jacobian_singular_values is new.jacobian_singular_values and empirical_ntk is new.empirical_ntk\n"
        "assert old.dense is new.dense and old.jacobian is new.spectra\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_simulate_pair_returns_a_frozen_dataclass_that_still_unpacks():
    """``simulate_pair`` returned a bare tuple; now a PairSimulation (a Result)."""
    from meanfield import Result
    from meanfield.simulate import PairSimulation, simulate_pair

    x = np.random.default_rng(0).standard_normal((2, 6))
    sim = simulate_pair(x[0], x[1], 8, 0.3, 0.1, 5, rng=1)
    assert isinstance(sim, PairSimulation) and isinstance(sim, Result)
    inner, cosine = sim
    assert inner is sim.inner and cosine is sim.cosine and inner.shape == cosine.shape == (5,)
    assert np.all(np.abs(sim.cosine) <= 1.0)
    assert sim.replace(cosine=None).cosine is None
    with pytest.raises(AttributeError):
        sim.inner = None


def test_every_result_dataclass_of_the_simulators_is_frozen_with_replace():
    import dataclasses

    from meanfield import Result
    from meanfield import simulate as simulators

    classes = [getattr(simulators, n) for n in simulators.__all__ if isinstance(getattr(simulators, n), type)]
    results = [c for c in classes if dataclasses.is_dataclass(c) and c.__name__ not in ("ConstNet", "LeakyNet")]
    assert {c.__name__ for c in results} >= {
        "DenseSimulation",
        "ConvSimulation",
        "PairSimulation",
        "LayerMoments",
        "LooksLinearForward",
    }
    for c in results:
        assert issubclass(c, Result) and c.__dataclass_params__.frozen, c.__name__


def test_one_signature_style_backend_and_rng_are_keywords():
    """Sizes are ``depth``, ``width``, ``n_networks``; ``backend`` and ``rng`` are keyword-only."""
    import inspect

    from meanfield import simulate as simulators

    for name in (
        "simulate_dense",
        "simulate_conv",
        "simulate_squared_norms",
        "simulate_pair",
        "layer_moments",
        "nonzero_fraction",
        "empirical_variances",
        "conv_kernels",
    ):
        params = inspect.signature(getattr(simulators, name)).parameters
        for kw in ("backend", "rng"):
            assert params[kw].kind is inspect.Parameter.KEYWORD_ONLY, (name, kw)
        assert not {"channels", "n", "n_net", "seed"} & set(params), name
    x = np.random.default_rng(0).standard_normal((2, 5))
    with pytest.raises(TypeError):
        simulate_dense(x, "tanh", 1.0, 0.0, 1, 4, 2, "gaussian", False, "numpy", 0)
    a = simulate_dense(x, "tanh", 1.0, 0.0, depth=1, width=4, n_networks=2, rng=0)
    assert np.array_equal(a.cov, simulate_dense(x, "tanh", 1.0, 0.0, 1, 4, 2, rng=np.random.default_rng(0)).cov)


def test_simulators_draw_their_weights_through_meanfield_init():
    """One weight sampler: layer l's weights of simulate_dense are dense_weights(width, fan_in, 1.0, law,
    its spawned stream, batch=n_networks) scaled by sqrt(sigma_w2); the first layer's covariance follows."""
    from meanfield.backend import spawn_sequences

    x = np.random.default_rng(1).standard_normal((2, 5))
    for law in ("gaussian", "orthogonal"):
        sim = simulate_dense(x, "tanh", 1.7, 0.0, 0, 6, 3, law=law, rng=4)
        seq = spawn_sequences(np.random.default_rng(4), 2)[0]
        w = np.sqrt(1.7) * dense_weights(6, 5, 1.0, law, np.random.default_rng(seq), batch_shape=3)
        h = w @ x.T
        np.testing.assert_allclose(sim.cov[:, 0], np.swapaxes(h, 1, 2) @ h / 6, rtol=1e-12)


def test_the_kurtosis_networks_use_the_activation_table_and_the_samplers():
    """layer_moments = He inputs, then W phi_a(x) with W from dense_weights and phi_a the leaky ReLU of
    slope a (checked against an independent NumPy evaluation of the same stream); GSM networks of
    nonzero_fraction never lose a live signal after the first layer (looks-linear: relu([u, -u]) = 0 only
    if u = 0, and then W maps [relu(u), relu(-u)] to [W0 u, -W0 u])."""
    from meanfield.init import he_sigma_w2
    from meanfield.simulate import layer_moments, nonzero_fraction

    a, n = 0.3, 7
    m = layer_moments([3, 5], a, "gaussian", n, rng=2)
    g = np.random.default_rng(2)
    x = g.standard_normal((n, 3))
    w = dense_weights(5, 3, he_sigma_w2(a), "gaussian", g, batch_shape=n)
    y = (w @ np.where(x > 0, x, a * x)[..., None])[..., 0]
    np.testing.assert_allclose(m.m4[:, 1], np.mean(y**4, axis=1), rtol=1e-12)
    np.testing.assert_allclose(m.m4[:, 0], np.mean(x**4, axis=1), rtol=1e-15)
    f = nonzero_fraction([4, 4, 4, 4], "gsm", 300, rng=1)
    assert f[0] == 1.0 and f[1] < 1.0 and f[3] == f[2] == f[1]


def test_zero_inputs_give_the_bias_only_statistics():
    """x = 0: the first layer is the bias alone (E h h^T = sigma_b2 11^T), and zero without bias."""
    sim = simulate_dense(np.zeros((2, 3)), "relu", 2.0, 0.0, 2, 4, 3, gradients=True, rng=0)
    assert np.all(sim.cov == 0) and np.all(np.isfinite(sim.log_scale))
    sim = simulate_dense(np.zeros((2, 3)), "tanh", 1.0, 0.5, 1, 256, 64, rng=0)
    c = sim.cov[:, 0]
    assert np.all(c[:, 0, 0] == c[:, 0, 1])  # the same bias for both inputs
    assert abs(c[:, 0, 0].mean() - 0.5) <= 4.5 * c[:, 0, 0].std(ddof=1) / 8


def test_symmetry_models_raise_instead_of_returning_overflowed_logits():
    """The convolutions inside ConstNet / LeakyNet run without per-call finite checks; the input, the
    logits and the gradients are checked instead, so an overflow raises ValueError (not NaN)."""
    from meanfield.simulate import LeakyNet

    net = LeakyNet.initial(list("I1I1I1"), 4, 1, 3, kernel_shape=(3,), slope=0.01)  # odd layers scale by -1/slope
    x = np.full((2, 5, 1), 1e307)  # the first odd layer multiplies by -1/slope = -100: beyond float64
    with pytest.raises(ValueError, match="not finite"):
        net.forward(x)
    with pytest.raises(ValueError, match="finite"):
        net.forward(np.full((2, 5, 1), np.nan))
    with pytest.raises(TypeError):
        net.forward(np.ones((2, 5, 1)) + 1j)
    logits = net.forward(np.ones((2, 5, 1)))
    assert np.all(np.isfinite(logits))


def test_symmetry_model_forward_follows_the_rng_rule_and_checks_its_flags():
    """ConstNet.forward(dropout, rng): an int rng is the stream of default_rng(int) (it raised
    AttributeError before), dropout must lie in [0, 1) and keep must be a bool."""
    from meanfield.simulate import ConstNet

    net = ConstNet.initial((2, 4), 1, 1, 3, kernel_shape=(3,), stride=1)
    net.params["head"] = net.params["head"] + 1.0  # non-zero logits
    x = np.random.default_rng(0).standard_normal((3, 5, 1))
    a = net.forward(x, dropout=0.5, rng=3)
    assert np.array_equal(a, net.forward(x, dropout=0.5, rng=np.random.default_rng(3)))
    for bad, exc in ((dict(dropout=1.5), ValueError), (dict(keep=1), TypeError), (dict(rng="3"), TypeError)):
        with pytest.raises(exc):
            net.forward(x, **bad)


# --- regressions found by the public-API fuzzer (tests/fuzz/) ------------------------------------


def test_simulator_argument_messages():
    from meanfield.simulate import empirical_variances, simulate_squared_norms

    x = np.random.default_rng(0).standard_normal((6, 4))
    with pytest.raises(ValueError, match="dtype"):
        empirical_variances(x, "he", 3, 4, 3, rng=0, engine="numba", dtype="no_such")  # ignored before
    with pytest.raises(ValueError, match=r"layers\[1\]"):
        simulate_squared_norms(x, [(8, 0.25), (4,)], 4, 2, rng=0)
    with pytest.raises(TypeError, match="width"):
        simulate_dense(x[:2], "tanh", 1.5, 0.05, 2, 2 + 1j, 2, rng=0)
