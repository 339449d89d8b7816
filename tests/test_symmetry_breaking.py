"""Seed 000's training tables on the engine (validation/symmetry_breaking.py), at the smoke size."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from meanfield.validation import symmetry_breaking as sb


@pytest.fixture(scope="module")
def tables():
    return sb.constnet_noise_table("smoke", rng=0), sb.leakynet_averaging_table("smoke", rng=0)


def test_tables_have_one_row_per_variant_and_exact_symmetry_without_noise(tables):
    t, lk = tables
    assert t.labels == tuple(sb.CONSTNET_VARIANTS) and lk.labels == tuple(sb.LEAKYNET_CONFIGS)
    seeds = sb.SIZES["smoke"]["seeds"]
    assert t.test_accuracy.shape == (len(t.labels), seeds)
    assert t.one_minus_cf.shape[:2] == (len(t.labels), seeds) and t.one_minus_cf.shape[3] == len(t.tensors)
    for label in ("'0' init, deterministic", "'0' init, bfloat16, deterministic"):
        assert np.all(t.one_minus_cf[t.labels.index(label)] == 0.0)
    he = t.labels.index("He init")
    assert np.all(t.one_minus_cf[he, :, 0, 1:].max(axis=1) > 0.1)  # random filters are diverse from the start
    assert np.all((t.test_accuracy >= 0) & (t.test_accuracy <= 1))


def test_table_2_metrics_follow_their_definitions(tables):
    _, lk = tables
    mx, dis = sb.table_2_metrics(lk)
    cf = np.clip(1.0 - lk.one_minus_cf[:, :, -1, :], -1, 1)
    np.testing.assert_array_equal(mx, cf.max(axis=2))
    np.testing.assert_allclose(dis, np.sqrt(1 - cf**2).mean(axis=2), rtol=0, atol=1e-15)
    # the all-'1' LeakyNet starts (and at 4 steps stays) with max C_f = 1: its averaging layers
    assert np.all(mx[lk.labels.index("0 I, 13 '1'")] > 1 - 1e-9)


def test_run_builds_every_row(monkeypatch):
    monkeypatch.setitem(sb.SIZES, "default", sb.SIZES["smoke"])
    sb.clear_cache()
    try:
        rows = sb.run()
    finally:
        sb.clear_cache()
    names = [r.name for r in rows]
    assert len(names) == len(set(names)) == 2 + 1 + 2 * 5 + 3
    exact = [r for r in rows if "exact symmetry" in r.name]
    assert all(r.passed for r in exact)
    # the one-sided accuracy rows: estimate = Welch z, passing only above Z_ONE_SIDED
    for r in rows:
        if r.name.endswith(", z"):
            assert r.theory == sb.Z_ONE_SIDED and r.side == "above" and r.passed == (r.estimate >= sb.Z_ONE_SIDED)


def test_bad_arguments():
    with pytest.raises(ValueError, match="size"):
        sb.constnet_noise_table("huge")
    with pytest.raises(ValueError, match="size"):
        sb.leakynet_averaging_table(3)
