"""Groups of Blumenfeld et al. 2020's Sec. 4.2 (meanfield.train.symmetric.constnet_groups) and the exact permutation
test of their behaviour (validation/symmetry_groups.py)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from meanfield.validation.symmetry_groups import (
    MAX_ASSIGNMENTS,
    MIN_STEPS,
    P_THRESHOLD,
    constnet_group_series,
    group_separation,
)

from meanfield.train.symmetric import ConstNetSpec, constnet_groups, conv_kernels

#: Monte-Carlo replicates of the null-calibration test, and the binomial allowance above the level
#: (an exact test has P(p <= alpha) <= alpha; 3 binomial standard errors at alpha = 0.05).
N_NULL = 400
NULL_Z = 3.0


def _kernels(spec, input_channels=1):
    """Kernels of a '0'-initialised ConstNet, library layout (*k, c_out, c_in), from meanfield.init."""
    from meanfield import init as mf_init

    c = mf_init.constnet(spec.widths, spec.blocks_per_stage, input_channels, 10, spec.kernel_size, spec.stride)
    tensors = [c.first]
    for s, stage in enumerate(c.blocks):
        tensors += list(stage)
        if s < len(c.widen_skip):
            tensors += [c.widen_skip[s], c.widen_branch[s]]
    return tensors


def test_three_stages_give_three_groups_and_the_papers_example():
    g = constnet_groups(ConstNetSpec(widths=(8, 16, 32), blocks_per_stage=1))
    assert g.n_groups == 3
    assert g.tensors == ("first", "block0_0", "skip0", "branch0", "block1_0", "skip1", "branch1", "block2_0")
    assert g.members(0) == ("first", "block0_0")
    assert g.members(1) == ("skip0", "branch0", "block1_0")
    assert g.members(2, kernel_size=3) == ("branch1", "block2_0")
    # Fig. 6's caption: 'Convolution 3-0' (the widening conv into the third stage) is forward group
    # 3 and backward group 2 (1-based): the stream its input comes from
    j = g.tensors.index("branch1")
    assert (g.forward[j], g.backward[j]) == (2, 1)
    assert g.members(1, "backward") == ("block1_0", "skip1", "branch1")
    assert g.backward[0] == -1 and g.members(-1, "backward") == ("first",)  # the data, no hidden stream
    assert g.kernel_size == (3, 3, 1, 3, 3, 1, 3, 3)


@pytest.mark.parametrize("widths,blocks", [((8, 16, 32), 2), ((4, 8), 3), ((6,), 2), ((8, 16, 32), 0)])
def test_groups_match_the_kernel_shapes(widths, blocks):
    """Independent of the walk: a tensor's output channels are its forward group's width and its
    input channels its backward group's width (the widths are distinct, so this pins the group)."""
    spec = ConstNetSpec(widths=widths, blocks_per_stage=blocks)
    g = constnet_groups(spec)
    assert g.n_groups == len(widths)
    kernels = _kernels(spec)
    assert len(kernels) == len(g.tensors)
    for name, w, f, b, k in zip(g.tensors, kernels, g.forward, g.backward, g.kernel_size):
        assert w.shape[-2] == widths[f], name
        assert w.shape[-1] == (1 if b == -1 else widths[b]), name
        assert w.shape[0] == k, name
    # every group is non-empty in the forward direction; blocks add members to their own stage
    for s in range(len(widths)):
        expected = (1 if s == 0 else 2) + blocks
        assert len(g.members(s)) == expected


def test_tensor_order_is_the_trainers():
    spec = ConstNetSpec(widths=(8, 16, 32), blocks_per_stage=2)
    from meanfield.train import init_parameters

    params = init_parameters(spec, (1, 8, 8), n_classes=10, rng=0)
    assert tuple(conv_kernels(spec, params)) == constnet_groups(spec).tensors


def test_groups_reject_other_specs():
    from meanfield.train.symmetric import LeakyNetSpec

    with pytest.raises(TypeError, match="spec"):
        constnet_groups(LeakyNetSpec())
    g = constnet_groups(ConstNetSpec())
    with pytest.raises(ValueError, match="which"):
        g.members(0, "sideways")
    with pytest.raises(ValueError, match="group"):
        g.members(5)


def _naive_p(x, groups, strata):
    """p-value by brute force: every permutation of the labels within each stratum (duplicates
    included, which weights each distinct relabelling equally), ratio computed pair by pair."""
    n = len(groups)
    d = np.array([[np.sqrt(np.mean((x[i] - x[j]) ** 2)) for j in range(n)] for i in range(n)])

    def ratio(lab):
        w = [d[i, j] for i in range(n) for j in range(i + 1, n) if strata[i] == strata[j] and lab[i] == lab[j]]
        b = [d[i, j] for i in range(n) for j in range(i + 1, n) if strata[i] == strata[j] and lab[i] != lab[j]]
        return np.mean(w) / np.mean(b)

    obs = ratio(groups)
    idx = [np.flatnonzero(strata == s) for s in np.unique(strata)]
    count = total = 0
    for perms in itertools.product(*(itertools.permutations(groups[i]) for i in idx)):
        lab = groups.copy()
        for i, p in zip(idx, perms):
            lab[i] = p
        total += 1
        count += ratio(lab) <= obs * (1 + 1e-12)
    return obs, count / total


def test_permutation_test_matches_brute_force():
    rng = np.random.default_rng(3)
    groups = np.array([0, 0, 1, 1, 2, 0, 1, 1])
    strata = np.array([0, 0, 0, 0, 0, 1, 1, 1])
    x = rng.standard_normal((8, 7)) + 0.8 * groups[:, None]
    res = group_separation(x, groups, strata)
    obs, p = _naive_p(x, groups, strata)
    assert res.ratio == pytest.approx(obs, rel=1e-12)
    assert res.p_value == pytest.approx(p, rel=1e-12)
    assert res.n_assignments == (5 * 4 * 3 * 2 // (2 * 2)) * 3


def test_separated_groups_reach_the_smallest_p_and_identical_series_none():
    groups = np.array([0, 0, 1, 1, 2, 2])
    x = np.repeat(10.0 * np.arange(3), 2)[:, None] + np.array([0.0, 0.1] * 3)[:, None] * np.ones((1, 4))
    res = group_separation(x, groups)
    # 90 relabellings; the 3! that only rename the groups tie with the observed one
    assert res.n_assignments == 90 and res.p_value == pytest.approx(6 / 90) and res.ratio < 0.01
    same = group_separation(np.ones((6, 4)), groups)
    assert same.ratio == 1.0 and same.p_value == 1.0


def test_permutation_test_is_calibrated_under_the_null():
    rng = np.random.default_rng(11)
    groups = np.array([0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2])
    strata = np.array([0] * 6 + [1] * 5)
    ps = np.array([group_separation(rng.standard_normal((11, 6)), groups, strata).p_value for _ in range(N_NULL)])
    level = P_THRESHOLD
    assert np.mean(ps <= level) <= level + NULL_Z * math.sqrt(level * (1 - level) / N_NULL)
    assert np.all((ps > 0) & (ps <= 1))


def test_networks_axis_averages_distances():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 4, 6))
    groups = np.array([0, 0, 1, 1])
    res = group_separation(x, groups)
    each = [group_separation(x[k], groups).distances for k in range(3)]
    np.testing.assert_allclose(res.distances, np.mean(each, axis=0), rtol=1e-13)


def test_permutation_test_rejects_bad_input():
    x = np.zeros((4, 3))
    with pytest.raises(ValueError, match="series"):
        group_separation(np.full((4, 3), np.nan), [0, 0, 1, 1])
    with pytest.raises(TypeError, match="groups"):
        group_separation(x, [0.0, 0.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="groups"):
        group_separation(x, [0, 0, 1])
    with pytest.raises(ValueError, match="same group"):
        group_separation(x, [0, 1, 2, 3])
    with pytest.raises(ValueError, match="different groups"):
        group_separation(x, [0, 0, 0, 0])
    with pytest.raises(ValueError, match="MAX_ASSIGNMENTS"):
        group_separation(np.zeros((24, 2)), np.repeat(np.arange(8), 3))
    assert math.factorial(24) // 6**8 > MAX_ASSIGNMENTS
    with pytest.raises(TypeError, match="series"):
        group_separation(x + 1j, [0, 0, 1, 1])


def test_series_keep_3x3_convolutions_and_drop_zero_steps():
    g = constnet_groups(ConstNetSpec(widths=(8, 16, 32), blocks_per_stage=1))
    n_steps = 9
    cf = np.full((n_steps, 8), 1e-3)
    cb = np.full((n_steps, 8), 1e-2)
    cf[:3] = 0.0  # symmetric at the start
    cf[5, 1] = 0.0  # one exact zero later: that step is dropped
    cb[:, 0] = 0.0  # the input conv's C_b: undefined, recorded as 0, never used
    s = constnet_group_series(g, cf, cb)
    assert s.kinds == ("forward",) * 6 + ("backward",) * 5
    assert s.tensors[:6] == ("first", "block0_0", "branch0", "block1_0", "branch1", "block2_0")
    assert s.tensors[6:] == ("block0_0", "branch0", "block1_0", "branch1", "block2_0")
    assert s.groups == (0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2)
    np.testing.assert_array_equal(s.steps, [3, 4, 6, 7, 8])
    assert s.log10.shape == (1, 11, 5) and np.allclose(s.log10[0, :6], -3) and np.allclose(s.log10[0, 6:], -2)
    assert s.steps.size >= MIN_STEPS and s.separation() is not None
    short = constnet_group_series(g, cf[:5], cb[:5])
    assert short.separation() is None
    with pytest.raises(ValueError, match="one_minus_cb"):
        constnet_group_series(g, cf, -cb)
    with pytest.raises(ValueError, match="same shape"):
        constnet_group_series(g, cf, cb[:4])
    with pytest.raises(TypeError, match="groups"):
        constnet_group_series("groups", cf, cb)


def test_group_behaviour_runs_at_smoke_size():
    pytest.importorskip("torch")
    from meanfield.validation import symmetry_groups as sg

    sg.clear_cache()
    try:
        res = sg.group_behaviour("smoke", rng=0)
        row = sg.group_behaviour_row("smoke", rng=0)
    finally:
        sg.clear_cache()
    sz = sg.SIZES["smoke"]
    assert res.one_minus_cf.shape == (sz["networks"], sz["steps"] + 1, len(res.groups.tensors))
    assert res.one_minus_cb.shape == res.one_minus_cf.shape
    assert np.all(res.one_minus_cf[:, 0] == 0.0)  # '0' init: exactly symmetric at the start
    # 3 steps: too few usable steps for the test; the row says so and fails (NaN estimate)
    assert res.separation is None and not row.passed and "usable steps" in row.note
    with pytest.raises(ValueError, match="size"):
        sg.group_behaviour("huge")


@pytest.mark.parametrize("seed", range(3))
def test_separation_is_invariant_to_label_names_shifts_and_scale(seed):
    """R and p depend on the partition only, and are unchanged by x -> a x + b (a > 0): a shift of
    every log10(1 - C) series is a common factor on 1 - C."""
    rng = np.random.default_rng(seed)
    groups = np.array([0, 0, 1, 1, 2, 2, 0, 0, 1, 1, 2])
    strata = np.array([0] * 6 + [1] * 5)
    x = rng.standard_normal((2, 11, 5)) + 0.5 * groups[:, None]
    base = group_separation(x, groups, strata)
    renamed = group_separation(x, np.array([7, 3, 5])[groups], strata + 4)
    moved = group_separation(2.5 * x - 40.0, groups, strata)
    for other in (renamed, moved):
        assert other.ratio == pytest.approx(base.ratio, rel=1e-12)
        assert other.p_value == base.p_value and other.n_assignments == base.n_assignments == 2700
