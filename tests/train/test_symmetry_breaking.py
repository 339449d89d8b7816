"""Blumenfeld et al.'s training tables on the engine (meanfield/train/symmetry_breaking.py and the rows of validation/symmetry_breaking.py), at the smoke size."""

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
    assert len(names) == len(set(names)) == 2 * 2 + 1 + 2 * 5 + 3 + 1
    exact = [r for r in rows if "exact symmetry" in r.name]
    assert len(exact) == 2 and all(r.passed and r.kind == "check" for r in exact)
    platform = [r for r in rows if r.name.startswith("platform:")]
    assert len(platform) == 2 and all(r.kind == "claim" for r in platform)
    leaky = next(r for r in rows if r.name.startswith("LeakyNet: accuracy"))
    assert leaky.kind == "claim" and not leaky.failed  # a claim of the paper: reported, never a failure
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

    from meanfield.train import train_ensemble
    from meanfield.train.symmetric import ConstNetSpec

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


# --- exact symmetry and the platform -----------------------------------------------------------------

#: A subprocess that forces oneDNN's AVX2 kernels (whose sgemm computes the last output channels of
#: an 8-channel convolution's weight gradient in an edge tile, rounding them differently), then MKL's
#: AVX2 GEMM with oneDNN off, and reports the probe and a short deterministic '0' ConstNet run.
_FORCED = r"""
import json
import numpy as np, torch
from meanfield.train.symmetric import ConstNetSpec, SymmetryBreaking, correlation_probe, platform_symmetry
from meanfield.train import load_training_data, train_ensemble
spec = ConstNetSpec(widths=(8, 16), blocks_per_stage=2)
data = load_training_data(n_train=64, n_test=16, downsample=2)
out = {}
for path in ("onednn", "mkl"):
    torch.backends.mkldnn.enabled = path == "onednn"
    for kernels in ("platform", "unit_exact"):
        probe = platform_symmetry(spec, 2, 64, data.image_shape, 10, kernels=kernels)
        c = train_ensemble(spec, 2, data=data, steps=2, batch_size=64, lr=0.03, optimizer="momentum",
                           record_every=1, n_eval=None, rng=0, noise=SymmetryBreaking(kernels=kernels),
                           probes={"cf": correlation_probe("forward")})
        out[f"{path} {kernels}"] = [probe.exact, probe.max_relative_difference, float(c.probes["cf"].max())]
print(json.dumps(out))
"""


def test_probe_sees_the_platform_asymmetry_and_unit_exact_arithmetic_removes_it():
    """The kernel paths of an AVX2-only CPU (forced here): the probe and a training run agree, and
    unit-exact arithmetic keeps identical units identical on every path."""
    import json
    import os
    import platform
    import subprocess
    import sys

    if platform.machine().lower() not in ("x86_64", "amd64"):
        pytest.skip("the forced AVX2 kernel paths exist on x86-64 only")
    env = dict(os.environ, OMP_NUM_THREADS="1", ONEDNN_MAX_CPU_ISA="AVX2", MKL_ENABLE_INSTRUCTIONS="AVX2")
    res = subprocess.run([sys.executable, "-c", _FORCED], env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout.strip().splitlines()[-1])
    for path in ("onednn", "mkl"):
        exact, rel, cf = out[f"{path} platform"]
        # asymmetric one-step gradients <=> 1 - C_f > 0 after 2 steps
        assert exact == (cf == 0.0), out
        if not exact:
            assert 0 < rel < 1e-5  # rounding-sized: a few units of float32 roundoff
        assert out[f"{path} unit_exact"] == [True, 0.0, 0.0], out


def test_unit_exact_arithmetic_equals_the_platform_convolution_up_to_rounding():
    import torch

    from meanfield.train.symmetric import unit_exact_conv

    g = torch.Generator().manual_seed(0)
    h = torch.randn(5, 6, 7, 7, generator=g, dtype=torch.float64)
    w = torch.randn(2, 4, 3, 3, 3, generator=g, dtype=torch.float64, requires_grad=True)
    for stride in (1, 2):
        ref = torch.nn.functional.conv2d(
            torch.nn.functional.pad(h, (1,) * 4, mode="circular"), w.reshape(-1, 3, 3, 3), stride=stride, groups=2
        )
        got = unit_exact_conv(torch, h, w, stride)
        assert got.shape == ref.shape
        # 27 products of N(0, 1) numbers: float64 rounding, far below one part in 1e12
        assert float((got - ref).detach().abs().max()) < 1e-12
        (g_ref,) = torch.autograd.grad(ref.sum(), w)
        (g_got,) = torch.autograd.grad(got.sum(), w)
        assert float((g_got - g_ref).abs().max()) < 1e-12


def test_an_asymmetric_platform_makes_the_row_a_platform_claim_and_the_run_unit_exact(monkeypatch):
    """Force the probe to report an asymmetric platform: the deterministic runs switch to unit-exact
    arithmetic (still exact), the exact row stays a passing check, the platform row a claim not
    reproduced; and with the platform exact the run keeps the platform's kernels."""
    from meanfield.train import symmetric as sn
    from meanfield.train import symmetry_breaking as tables  # where the runs are made

    real = sn.platform_symmetry
    seen = []

    def asymmetric(*args, kernels="platform", **kwargs):
        res = real(*args, kernels=kernels, **kwargs)
        seen.append(kernels)
        if kernels == "platform":
            return res.replace(exact=False, max_relative_difference=1.2e-7, relative_difference={"first": 1.2e-7})
        return res

    monkeypatch.setattr(tables, "platform_symmetry", asymmetric)
    sb.clear_cache()
    try:
        t = sb.constnet_noise_table("smoke", rng=0)
    finally:
        sb.clear_cache()
    assert seen == ["platform", "unit_exact"] * 2
    for label in sb.EXACT_VARIANTS:
        probe = t.params["platform"][label]
        assert probe["kernels"] == "unit_exact" and probe["kernels_exact"] and not probe["platform_exact"]
        assert np.all(t.one_minus_cf[t.labels.index(label)] == 0.0)
        exact, platform = sb.exact_symmetry_rows(label, float(t.one_minus_cf[t.labels.index(label)].max()), probe)
        assert exact.kind == "check" and exact.passed and "unit-exact" in exact.note
        assert platform.kind == "claim" and platform.verdict == "not reproduced" and not platform.failed
        assert "1.2e-07" in platform.note and "first" in platform.note
    # the exact platform: its kernels, a check and a reproduced claim
    probe = {**t.params["platform"][sb.EXACT_VARIANTS[0]], "platform_exact": True, "kernels": "platform"}
    exact, platform = sb.exact_symmetry_rows("x", 0.0, probe)
    assert exact.kind == "check" and exact.passed and platform.verdict == "reproduced"
    # unit-exact arithmetic itself asymmetric (never seen): the exact row becomes a claim about the platform
    exact, _ = sb.exact_symmetry_rows("x", 1e-23, {**probe, "kernels": "unit_exact", "kernels_exact": False})
    assert exact.kind == "claim" and exact.verdict == "not reproduced" and not exact.failed


def test_platform_probe_and_kernels_check_their_arguments():
    from meanfield.train import load_training_data, train_ensemble
    from meanfield.train.symmetric import (
        ConstNetSpec,
        ReplicatedNetSpec,
        SymmetryBreaking,
        platform_symmetry,
    )

    with pytest.raises(ValueError, match="kernels"):
        SymmetryBreaking(kernels="gpu")
    spec = ConstNetSpec(widths=(2, 4), blocks_per_stage=1)
    with pytest.raises(TypeError, match="spec"):
        platform_symmetry(ReplicatedNetSpec(), 1, 4, (1, 4, 4), 10)
    with pytest.raises(ValueError, match="input_shape"):
        platform_symmetry(spec, 1, 4, (4, 4), 10)
    with pytest.raises(ValueError, match="kernels"):
        platform_symmetry(spec, 1, 4, (1, 4, 4), 10, kernels="fast")
    with pytest.raises(ValueError, match="n_classes"):
        platform_symmetry(spec, 1, 4, (1, 4, 4), 1)
    res = platform_symmetry(spec, 2, 4, (1, 4, 4), 10, kernels="unit_exact", compute_dtype="bfloat16")
    assert res.exact and res.max_relative_difference == 0.0 and set(res.relative_difference) >= {"first", "head"}
    data = load_training_data(n_train=16, n_test=8, downsample=2)
    with pytest.raises(ValueError, match="unit_exact"):
        train_ensemble(
            ReplicatedNetSpec(width=4, unique=2),
            1,
            data=data,
            steps=1,
            batch_size=4,
            noise=SymmetryBreaking(kernels="unit_exact"),
        )
