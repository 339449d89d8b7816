"""The fast paths of the paper-size Grzejdziak Fig. 1: the width-10 fused kernel
of ``empirical_variances(engine="numba")`` against the generic kernel and the NumPy engine."""

from __future__ import annotations

import numpy as np
import pytest

from meanfield.data import load_digits
from meanfield.simulate import empirical_variances

#: The agreement bound of the kernel against the generic path. Float64 rounding of the per-layer sums (different blocking and FMA
#: contraction): ~1e-15 relative, measured. A variance ``(s2 - s1^2 / N) / (N - 1)`` amplifies it by
#: ``1 + mean^2 / variance`` (cancellation, the same in every engine): measured <= 2e-14 for these
#: depth-40 networks, up to 4e-12 at depth 100 for Glorot where the pooled mean dominates (the
#: default-size Fig. 1 with either engine: the same verdicts).
KERNEL_RTOL = 1e-12
#: A network whose signal died (the ReLU killed every unit) has an exactly zero variance in every
#: engine; variances below this are compared as "dead" (the blas engine rescales, so a dying
#: signal's last non-zero layers are not float64-comparable to the unscaled Numba sums).
DEAD = 1e-250


@pytest.mark.parametrize("init", ["he", "glorot", "orthogonal", "gsm"])
@pytest.mark.parametrize("n_inputs", [50, 300])
def test_width10_kernel_matches_generic_kernel_and_numpy(init, n_inputs):
    """Width 10 takes the specialised kernel (blocks of 128 data points: 50 is one partial block,
    300 two full blocks and a tail); same weights in all three engines (same rng and chunks)."""
    x = load_digits(n_samples=n_inputs, standardized=True).x
    kw = dict(depth=40, width=10, n_networks=5, rng=11, chunk=3)
    fast = empirical_variances(x, init, engine="numba", **kw)
    generic = empirical_variances(x, init, engine="numba_generic", **kw)
    ref = empirical_variances(x, init, engine="blas", dtype="float64", **kw)
    alive = ref > DEAD
    assert alive[:, 1].all()  # the first layers are alive: the comparison is not vacuous
    np.testing.assert_allclose(fast[alive], generic[alive], rtol=KERNEL_RTOL)
    np.testing.assert_allclose(fast[alive], ref[alive], rtol=KERNEL_RTOL)
    assert np.all(fast[~alive] < DEAD) and np.all(generic[~alive] < DEAD)


def test_numba_generic_engine_arguments():
    x = load_digits(n_samples=20, standardized=True).x
    with pytest.raises(ValueError, match="protocol='unit' needs engine='blas'"):
        empirical_variances(x, "he", 3, 10, 2, engine="numba_generic", protocol="unit")
    with pytest.raises(ValueError, match="numba_generic"):
        empirical_variances(x, "he", 3, 10, 2, engine="numba_fast")


@pytest.mark.parametrize("init", ["zero", "zero_star"])
@pytest.mark.parametrize("depth", [1, 2, 3, 30])
def test_identity_layers_computed_once_are_exact(init, depth):
    """ZerO / ZerO*: layers 3 .. depth repeat layer 2's sums (relu is idempotent), bit for bit the
    generic kernel's layer-by-layer sums; depth 1 has no hidden layer (the width-10 kernel, rounding)."""
    x = load_digits(n_samples=300, standardized=True).x
    kw = dict(depth=depth, width=10, n_networks=4, rng=2)
    fast = empirical_variances(x, init, engine="numba", **kw)
    generic = empirical_variances(x, init, engine="numba_generic", **kw)
    if depth == 1:
        np.testing.assert_allclose(fast, generic, rtol=KERNEL_RTOL)
    else:
        np.testing.assert_array_equal(fast, generic)


#: Batched MetaInit against per-network runs: each network's products are the same (K, n, n) @
#: (K, n, B) slices as in a run on its own, so the two agree to float64 rounding (measured: bit for
#: bit). A rounding-level difference could still flip the sign of a near-zero meta-gradient and
#: change the signSGD path, so the bound is rounding, not a statistical one.
METAINIT_RTOL = 1e-12


def test_metainit_per_network_streams_equal_runs_one_by_one():
    from meanfield.init import dense_weights, metainit

    rng = np.random.default_rng(8)
    shapes = [(6, 5), (6, 6), (6, 6), (4, 6)]
    ws = [dense_weights(o, i, 2.0, "gaussian", rng, batch_shape=3) for o, i in shapes]
    seeds = np.random.SeedSequence(21).spawn(3)
    both = metainit(ws, 0.1, steps=25, biases=True, eval_batches=2, rng=list(seeds))
    for k, seed in enumerate(seeds):
        one = metainit([w[k] for w in ws], 0.1, steps=25, biases=True, eval_batches=2, rng=seed)
        np.testing.assert_allclose(both.gq_history[k], one.gq_history, rtol=METAINIT_RTOL)
        np.testing.assert_allclose(both.norms[k], one.norms, rtol=METAINIT_RTOL)
        np.testing.assert_array_equal(both.sign_flips[k], one.sign_flips)
        assert both.gq_before[k] == pytest.approx(one.gq_before, rel=METAINIT_RTOL)
        assert both.gq_after[k] == pytest.approx(one.gq_after, rel=METAINIT_RTOL)
        for a, b in zip(both.weights, one.weights):
            np.testing.assert_allclose(a[k], b, rtol=METAINIT_RTOL, atol=0)


def test_fig1_metainit_batched_equals_per_network_tasks():
    """fig1_variances optimises its MetaInit networks together, each from its own stream: the
    numbers of the former one-task-per-network layout (empirical_variances on each stream)."""
    from meanfield.validation.kurtosis import fig1_variances

    from meanfield.backend import spawn_sequences
    from meanfield.parallel import chunk_streams
    from meanfield.simulate import FIG1_INITS, metainit_weights

    x = load_digits(standardized=True).x[:40]  # fig1_variances' inputs: the first 40 standardised digits
    kw = dict(depth=6, metainit_steps=6)
    got = fig1_variances(rng=3, n_networks=1, n_inputs=40, n_metainit=3, **kw)["metainit"]
    children = spawn_sequences(np.random.default_rng(3), len(FIG1_INITS))
    streams = chunk_streams(children[FIG1_INITS.index("metainit")], 3)
    one = [empirical_variances(x, "metainit", 6, 10, 1, rng=s, metainit_steps=6, dtype="float64") for s in streams]
    np.testing.assert_allclose(got, np.concatenate(one), rtol=METAINIT_RTOL)
    # and the weights: batched metainit_weights on the streams = one network at a time
    batched = metainit_weights(3, 6, 10, 64, rng=list(streams), steps=6)
    for k, s in enumerate(streams):
        for a, b in zip(batched, metainit_weights(1, 6, 10, 64, rng=s, steps=6)):
            np.testing.assert_allclose(a[k], b[0], rtol=METAINIT_RTOL, atol=0)


def test_empirical_variances_metainit_streams_do_not_depend_on_chunks():
    x = load_digits(n_samples=30, standardized=True).x
    seeds = np.random.SeedSequence(4).spawn(3)
    kw = dict(depth=5, width=10, n_networks=3, metainit_steps=4)
    a = empirical_variances(x, "metainit", rng=list(seeds), chunk=1, **kw)
    b = empirical_variances(x, "metainit", rng=list(seeds), chunk=3, **kw)
    c = empirical_variances(x, "metainit", rng=list(seeds), chunk=2, engine="blas", dtype="float64", **kw)
    np.testing.assert_allclose(a, b, rtol=METAINIT_RTOL)
    np.testing.assert_allclose(a, c, rtol=KERNEL_RTOL)


def test_stream_sequences_are_checked():
    from meanfield.init import metainit
    from meanfield.simulate import metainit_weights

    x = load_digits(n_samples=20, standardized=True).x
    g = np.random.default_rng(0)
    with pytest.raises(ValueError, match="only with init='metainit'"):
        empirical_variances(x, "he", 3, 10, 2, rng=[1, 2])
    with pytest.raises(ValueError, match="n_networks = 2"):
        empirical_variances(x, "metainit", 3, 10, 2, rng=[1], metainit_steps=1)
    with pytest.raises(ValueError, match="repeat a Generator"):
        empirical_variances(x, "metainit", 3, 10, 2, rng=[g, g], metainit_steps=1)
    with pytest.raises(TypeError, match="rng"):
        empirical_variances(x, "metainit", 3, 10, 2, rng=[1, "a"], metainit_steps=1)
    with pytest.raises(ValueError, match="n_networks = 2"):
        metainit_weights(2, 3, 4, 4, rng=[1, 2, 3], steps=1)
    with pytest.raises(ValueError, match="repeat a Generator"):
        metainit_weights(2, 3, 4, 4, rng=(g, g), steps=1)
    w = [np.eye(3), np.ones((2, 3))]
    with pytest.raises(ValueError, match="stacked"):
        metainit(w, steps=1, rng=[1])
    with pytest.raises(ValueError, match="one per network"):
        metainit([m[None] for m in w], steps=1, rng=[1, 2])
    with pytest.raises(ValueError, match="repeat a Generator"):
        metainit([np.stack([m, m]) for m in w], steps=1, rng=[g, g])
    with pytest.raises(TypeError, match="rng"):
        metainit([m[None] for m in w], steps=1, rng=[-1.5])
