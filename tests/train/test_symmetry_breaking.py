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
    from meanfield.validation import symmetry_groups as sg

    monkeypatch.setitem(sb.SIZES, "default", sb.SIZES["smoke"])
    monkeypatch.setitem(sg.SIZES, "default", sg.SIZES["smoke"])
    sb.clear_cache()
    sg.clear_cache()
    try:
        rows = sb.run()
    finally:
        sb.clear_cache()
        sg.clear_cache()
    names = [r.name for r in rows]
    assert len(names) == len(set(names)) == 2 + 1 + 2 * 5 + 3 + 1
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


def test_full_size_reads_cifar10_from_the_data_dir_and_trains_a_constnet(tmp_path, monkeypatch):
    """At ``"full"`` size the tables read the paper's CIFAR-10 (python batches, 32 x 32 x 3) from
    ``$MEANFIELD_DATA_DIR`` (``--data-dir``); the digits otherwise. Small files in the real format."""
    import pickle

    from meanfield.validation.symmetric_nets import ConstNetSpec
    from meanfield.validation.training import train_ensemble

    rng = np.random.default_rng(0)
    for name, n in (("data_batch_1", 24), ("test_batch", 8)):
        batch = {b"data": rng.integers(0, 256, (n, 3072)).astype(np.uint8), b"labels": list(rng.integers(0, 10, n))}
        (tmp_path / name).write_bytes(pickle.dumps(batch))
    monkeypatch.setenv("MEANFIELD_DATA_DIR", str(tmp_path))
    d = sb.table_data("full")
    assert "CIFAR-10" in d.name and d.x_train.shape == (24, 3, 32, 32)
    assert "digits" in sb.table_data("default").name  # only the full size reads the user's files
    spec = ConstNetSpec(widths=(4, 8), blocks_per_stage=1, init="he")
    c = train_ensemble(spec, 1, data=d, steps=2, batch_size=8, lr=0.01, rng=0)
    assert np.all(np.isfinite(c.train_loss))
    with pytest.raises(ValueError, match="size"):
        sb.table_data("huge")
