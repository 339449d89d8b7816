"""Simulators of Blumenfeld et al. 2020 (meanfield.simulate), validation.symmetry and figures.blumenfeld2020 at reduced size."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meanfield import symmetry
from meanfield.simulate import ConstNet, LeakyNet, softmax_xent

#: Central finite differences with step 1e-6 on O(1) losses: truncation O(h^2) ~ 1e-12, rounding
#: ~ 1e-16 / 1e-6 = 1e-10; 1e-6 relative leaves a wide margin and still catches any wrong term.
FD_RTOL = 1e-6


@pytest.mark.parametrize(
    "make",
    [
        lambda: ConstNet.initial((3, 5), 1, 2, 4, batchnorm=True),
        lambda: ConstNet.initial((3, 5), [2, 0], 2, 4, kernel_shape=(3,)),
        lambda: LeakyNet.initial(list("I1I"), 3, 2, 4, slope=0.1),
    ],
)
def test_hand_written_gradients_match_finite_differences(make):
    rng = np.random.default_rng(1)
    net = make()
    sd = net.spatial_dims
    x = rng.standard_normal((5,) + (6,) * sd + (2,))
    y = rng.integers(0, 4, 5)
    for k in net.params:  # move off the symmetric point so that every gradient is non-zero
        net.params[k] = net.params[k] + 0.3 * rng.standard_normal(net.params[k].shape)
    _, dlog = softmax_xent(net.forward(x), y)
    grads = net.backward(dlog)
    for k, v in net.params.items():
        for _ in range(2):
            idx = tuple(int(rng.integers(0, s)) for s in v.shape)
            old = v[idx]
            v[idx] = old + 1e-6
            lp = softmax_xent(net.forward(x), y)[0]
            v[idx] = old - 1e-6
            lm = softmax_xent(net.forward(x), y)[0]
            v[idx] = old
            assert grads[k][idx] == pytest.approx((lp - lm) / 2e-6, rel=FD_RTOL, abs=1e-9), k


@settings(max_examples=15)
@given(
    widths=st.lists(st.integers(1, 6), min_size=1, max_size=3),
    blocks=st.integers(0, 4),
    stride=st.sampled_from([1, 2]),
    n_input=st.integers(1, 4),
    seed=st.integers(0, 1000),
)
def test_constnet_is_the_identity_on_symmetric_features_at_initialisation(widths, blocks, stride, n_input, seed):
    rng = np.random.default_rng(seed)
    net = ConstNet.initial(widths, blocks, n_input, 5, stride=stride)
    x = rng.standard_normal((2, 8, 8, n_input))
    logits, feats = net.forward(x, keep=True)
    assert np.all(logits == 0)  # zero head
    a0 = x.mean(axis=-1, keepdims=True)  # averaging first conv (delta kernel)
    assert np.allclose(feats[0], np.broadcast_to(a0, feats[0].shape), atol=1e-14)
    s = stride ** (len(widths) - 1)
    assert np.allclose(feats[-1], np.broadcast_to(a0[:, ::s, ::s], feats[-1].shape), atol=1e-14)


def test_leakynet_one_layers_remove_a_forward_perturbation_and_identity_layers_keep_it():
    """App. G in the simulator: perturb the first conv; '1' layers re-symmetrise, 'I' layers propagate."""
    rng = np.random.default_rng(4)
    net = LeakyNet.initial(list("II1I"), 6, 2, 3, slope=0.01)
    x = rng.standard_normal((4, 5, 5, 2))
    _, feats = net.forward(x, keep=True)
    assert all(symmetry.perturbation_ratio(f) < 1e-15 for f in feats)  # symmetric at initialisation
    net.params["first"] = net.params["first"] + 1e-4 * rng.standard_normal(net.params["first"].shape)
    _, feats = net.forward(x, keep=True)
    r = [symmetry.perturbation_ratio(f) for f in feats]
    assert r[0] > 1e-6 and r[1] > 1e-6 and r[2] > 1e-6  # 'I' layers carry it on
    assert r[3] < 1e-14 and r[4] < 1e-14  # after the '1' layer the features are symmetric again


@pytest.mark.slow
def test_validation_symmetry_passes():
    from meanfield.validation import symmetry as vs

    rows = vs.run()
    assert len(rows) >= 25
    assert all(r.passed for r in rows), [r.name for r in rows if not r.passed]


def test_table_of_correlations(tmp_path):
    from meanfield.figures import load
    from meanfield.figures.blumenfeld2020 import table_correlations

    paths = table_correlations(tmp_path)
    fd = load(paths[1])
    rows = list(fd["tensor"])
    constant = next(i for i, r in enumerate(rows) if r.startswith("constant"))
    replicated = next(i for i, r in enumerate(rows) if r.startswith("identity replicated 4 times"))
    assert fd["c_f_measured"][constant] == 1.0
    assert abs(fd["c_f_measured"][replicated] - 3 / 63) < 1e-12
    assert all(p.exists() for p in paths)


def test_subnetwork_count_of_symmetric_widths_is_depth_times_log_width():
    c = symmetry.subnetwork_counts(16, 12)
    assert c.log2()["all_to_all"] == pytest.approx(12 * math.log2(17))


#: Fig. 9: a '1' layer at an odd position must cut the forward ratio by at least this factor (measured
#: 150-600x); Fig. 10: the last '1' layer cuts the backward ratio by at least this much (measured 4e4x).
FORWARD_DROP = 10.0
BACKWARD_DROP = 1e3
#: 'I' layers pass the backward ratio unchanged up to the per-step gradient noise (measured 2.4 %).
IDENTITY_BACKWARD_RTOL = 0.1


@pytest.mark.slow
def test_fig_9_and_10_claims(tmp_path):
    """Figs. 9-10: ratios exactly 0 at initialisation; '1' layers remove the perturbation, 'I' keep it."""
    from meanfield.figures import load
    from meanfield.figures.blumenfeld2020 import LEAKY_CONFIGS, fig_9, fig_10

    fwd = load(next(p for p in fig_9(tmp_path) if p.suffix == ".json"))
    bwd = load(next(p for p in fig_10(tmp_path) if p.suffix == ".json"))
    assert fwd.axes["ratio"] == ["configuration", "step", "layer"]
    configs = list(fwd["configuration"])
    assert list(fwd["layer_kinds"]) == list(LEAKY_CONFIGS.values())
    f, b = fwd["ratio"], bwd["ratio"]  # (configuration, step, layer)
    assert np.max(f[:, 0]) == 0.0 and np.max(b[:, 0]) == 0.0
    f_last = f[configs.index("averaging in all 12 layers"), -1]
    for layer in range(1, 12, 2):
        assert f_last[layer] * FORWARD_DROP <= f_last[layer - 1]
    b_identity = b[configs.index("identity in all 12 layers"), -1]
    assert b_identity.max() / b_identity.min() <= 1 + IDENTITY_BACKWARD_RTOL
    for k, kinds in enumerate(LEAKY_CONFIGS.values()):
        if "1" in kinds:
            last_one = kinds.rindex("1") + 1  # index 0 is the first conv, layer k at index k
            assert b[k, -1, last_one - 1] * BACKWARD_DROP <= b[k, -1, -1]


@pytest.mark.parametrize(
    "kwargs,error",
    [
        ({"backend": "gpu"}, ValueError),
        ({"full": "yes"}, TypeError),
        ({"rng": -1}, ValueError),
        ({"rng": True}, TypeError),
    ],
)
def test_validation_run_checks_its_arguments_before_any_work(kwargs, error):
    """A direct call of meanfield.validation.symmetry.run took any truthy ``full`` and a bool ``seed``;
    the runner's checks now apply there too, before any network is simulated."""
    import time

    from meanfield.validation import symmetry as V

    start = time.perf_counter()
    with pytest.raises(error, match=next(iter(kwargs))):
        V.run(**kwargs)
    assert time.perf_counter() - start < 5.0


def test_simulator_results_are_frozen_results_and_tuples_still_unpack():
    """Frozen-dataclass results with .replace(); the former tuples still unpack."""
    from meanfield import Result
    from meanfield.simulate import (
        LooksLinearForward,
        looks_linear_delta_orthogonal_forward,
    )

    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 5, 2))
    out = looks_linear_delta_orthogonal_forward(x, 2, 4, (3,), rng=0, tangent=x)
    assert isinstance(out, LooksLinearForward) and isinstance(out, Result)
    pre, us, jvp = out
    assert len(pre) == len(us) == len(jvp) == 2 and out.replace(jvp=None).jvp is None


def test_leakynet_slope_is_the_leaky_relu_slope():
    """LeakyNet takes the leaky ReLU's ``slope`` (the paper's rho; ``rho=`` is still accepted)."""
    a = LeakyNet.initial(list("I1"), 4, 1, 3, slope=0.2)
    b = LeakyNet.initial(list("I1"), 4, 1, 3, rho=0.2)
    assert a.slope == b.slope == 0.2
    assert all(np.array_equal(a.params[k], b.params[k]) for k in a.params)
    with pytest.raises(TypeError, match="slope"):
        LeakyNet.initial(list("I1"), 4, 1, 3, slope=0.2, rho=0.2)


# --- regressions found by the public-API fuzzer (tests/fuzz/) ------------------------------------

_LOGITS = np.random.default_rng(0).standard_normal((5, 3))


@pytest.mark.parametrize(
    "logits, labels, name",
    [
        (None, [0, 1, 2, 0, 1], "logits"),  # AttributeError: 'NoneType' object has no attribute 'max'
        ("a", [0, 1, 2, 0, 1], "logits"),
        (np.float64(1.0), [0], "logits"),  # numpy AxisError
        (_LOGITS + 1j, [0, 1, 2, 0, 1], "logits"),  # accepted silently
        (np.where(np.eye(5, 3) > 0, np.nan, _LOGITS), [0, 1, 2, 0, 1], "logits"),
        (_LOGITS, np.array([0.0, 1.0, np.nan, 0.0, 1.0]), "labels"),  # IndexError
        (_LOGITS, [0, 1, 3, 0, 1], "labels"),  # IndexError (out of range)
        (_LOGITS, [0, 1], "labels"),
        (_LOGITS, None, "labels"),  # accepted silently
        (_LOGITS, np.ones(5) + 1j, "labels"),
    ],
)
def test_softmax_xent_checks_its_arguments(logits, labels, name):
    with pytest.raises((TypeError, ValueError), match=name):
        softmax_xent(logits, labels)


def test_constnet_and_leakynet_initial_check_their_arguments():
    with pytest.raises(TypeError, match="batchnorm"):
        ConstNet.initial((2, 4), 1, 1, 3, kernel_shape=(3,), stride=1, batchnorm=1)
    bad_head = np.zeros((3, 4))
    bad_head[0, 0] = np.nan
    with pytest.raises(ValueError, match="head"):
        ConstNet.initial((2, 4), 1, 1, 3, kernel_shape=(3,), stride=1, head=bad_head)
    with pytest.raises(ValueError, match="head"):
        LeakyNet.initial(["I", "1"], 4, 1, 3, kernel_shape=(3,), head=np.zeros((2, 4)))
    with pytest.raises(ValueError, match=r"\bn\b"):
        LeakyNet.initial(["I", "1"], 0, 1, 3, kernel_shape=(3,))  # named 'n_out' before
    with pytest.raises(ValueError, match="n_input"):
        LeakyNet.initial(["I", "1"], 4, 10**12, 3, kernel_shape=(3,))  # named 'n_in' before
    with pytest.raises(ValueError, match="n_classes"):
        LeakyNet.initial(["I", "1"], 4, 1, 10**12, kernel_shape=(3,))  # MemoryError before
