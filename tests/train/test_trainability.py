"""Trainability experiments (meanfield.train.experiment) and their validation rows (meanfield.validation.trainability), smoke size."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("sklearn")

from meanfield.validation import trainability as T
from meanfield.validation.report import Comparison

from meanfield import dense
from meanfield.train import experiment as X


def test_depth_scale_agreement_counts_cells_by_hand():
    """3 depths x 2 sigma_w2 with 6 xi_c = 10 and 100: hand-counted agreement and exclusions."""
    res = {
        "depths": np.array([2, 10, 400]),
        "xi_c": np.array([10.0, 100.0]) / 6.0,
        # trainable?   sw0: L=2 yes, L=10 (ambiguous), L=400 no;  sw1: L=2 yes, L=10 NO (disagrees), L=400 no
        "train_accuracy": np.array([[[0.9, 0.9], [0.9, 0.9]], [[0.2, 0.2], [0.1, 0.1]], [[0.1, 0.1], [0.1, 0.1]]]),
    }
    frac, n = T.depth_scale_agreement(res)
    # scored: (2, sw0) agree, (400, sw0) agree, (2, sw1) agree, (10, sw1) ratio 0.1 -> scored, predicted
    # trainable but 0.1 observed -> disagree, (400, sw1) ratio 4 -> agree; (10, sw0) ratio 1 -> not scored
    assert n == 5
    assert frac == pytest.approx(4 / 5)


def test_experiments_are_cached_and_shaped():
    res = T.experiment("depth_scale", "smoke", 0)
    assert T.experiment("depth_scale", "smoke", 0) is res
    nd, ns = len(res["depths"]), len(res["sigma_w2"])
    assert res["train_accuracy"].shape[:2] == (nd, ns)
    assert np.all((res["train_accuracy"] >= 0) & (res["train_accuracy"] <= 1))
    # xi_c is the mean-field one (the theory layer), not something fitted to the runs
    np.testing.assert_allclose(
        res["xi_c"], [dense.fixed_point("tanh", s, X.SIGMA_B2_FIG2).xi_c for s in res["sigma_w2"]]
    )
    cnn = T.experiment("deep_cnn", "smoke", 0)
    assert set(cnn["runs"]) == {"delta_orthogonal", "orthogonal", "gaussian"}
    with pytest.raises(ValueError):
        T.experiment("nope")
    with pytest.raises(ValueError):
        T.experiment("zero", size="huge")
    with pytest.raises(TypeError):
        T.experiment("zero", rng=1.5)
    with pytest.raises(ValueError):
        T.experiment("zero", rng=-1)


def test_rows_are_comparisons_with_fixed_tolerances():
    rows = T.rows("smoke", 0)
    assert len(rows) == 9 and all(isinstance(r, Comparison) for r in rows)
    assert rows[0].theory == T.MIN_AGREEMENT and rows[0].side == "above"
    assert rows[1].theory == T.DELTA_ORTHOGONAL_TARGET
    for r in rows[2:6]:
        assert r.theory == T.Z_ONE_SIDED and r.stderr == 0.0
    assert rows[6].theory == -T.Z_ONE_SIDED
    for r in rows[7:]:
        assert r.theory == T.RANK_LEVEL and r.side == "below" and 0 < r.estimate <= 1 and r.stderr == 0.0
    assert all(np.isfinite(r.estimate) for r in rows)


def test_z_statistic_of_a_one_sided_claim():
    """The z-rows can fail: equal samples give z = 0 < 1.645, a clear gap gives a large z."""
    rng = np.random.default_rng(0)
    a = 0.8 + 0.01 * rng.standard_normal(20)
    assert T.z_score(a, a) == 0.0
    assert T.z_score(a, a - 0.1) > 10
    assert T.z_score(a - 0.1, a) < -10


def test_kurtosis_experiment_grows_with_depth_and_falls_with_width():
    """Grzejdziak 2023 Lemma 4.4 / Thm. 4.7: the output kurtosis grows with depth and shrinks with width."""
    res = T.experiment("kurtosis_accuracy", "smoke", 0)
    logk = res["log10_output_kurtosis"]  # (width, depth, law)
    assert np.all(np.diff(logk, axis=1) > 0)
    assert np.all(np.diff(logk, axis=0) < 0)
    assert np.all(logk[..., 0] < logk[..., 2])  # Rademacher (kappa_w = 1) below Gaussian (3)
    assert res["test_accuracy"].shape == logk.shape + (1,)


# --- regressions found by the public-API fuzzer (tests/fuzz/) ------------------------------------


@pytest.mark.parametrize("bad", [[1.0, np.nan], [1.0, np.inf], [1 + 1j, 2.0], [[1.0], [1.0, 2.0]], None, "a", []])
def test_z_score_rejects_bad_samples_naming_them(bad):
    with pytest.raises((TypeError, ValueError), match=r"\ba\b"):
        T.z_score(bad, [1.0, 2.0])
    with pytest.raises((TypeError, ValueError), match=r"\bb\b"):
        T.z_score([1.0, 2.0], bad)


# --- rank-correlation rows (Grzejdziak 2023 supp. Fig. 1, Xiao et al. 2018 Fig. 4a) --------------------------


def test_rank_correlation_exact_p_values_by_counting():
    """n = 5 in increasing order: rho = 1, reached by 1 of the 5! = 120 pairings; rho >= 0.9 by 5."""
    t = T.rank_correlation([1, 2, 3, 4, 5], [10, 20, 30, 40, 50], "greater")
    assert t.rho == pytest.approx(1.0) and t.method == "exact"
    assert t.p_value == pytest.approx(1 / 120)
    # one adjacent swap: rho = 1 - 6 * 2 / (5 * 24) = 0.9; pairings with rho >= 0.9: identity + 4 swaps
    t = T.rank_correlation([1, 2, 3, 4, 5], [10, 20, 40, 30, 50], "greater")
    assert t.rho == pytest.approx(0.9) and t.p_value == pytest.approx(5 / 120)
    # the other side: every pairing but the identity (rho = 1) has rho <= 0.9
    assert T.rank_correlation([1, 2, 3, 4, 5], [10, 20, 40, 30, 50], "less").p_value == pytest.approx(119 / 120)
    assert T.rank_correlation([1, 2, 3], [3, 2, 1], "less").p_value == pytest.approx(1 / 6)


def test_rank_correlation_matches_scipy_and_the_normal_null():
    """rho (ties included) equals scipy's spearmanr; the large-n p-value is the z = rho sqrt(n-1) tail."""
    from scipy.stats import norm, spearmanr

    rng = np.random.default_rng(3)
    x = rng.integers(0, 6, 40).astype(float)  # many ties
    y = -0.3 * x + rng.standard_normal(40)
    t = T.rank_correlation(x, y, "less")
    assert t.method == "normal" and t.n == 40
    assert t.rho == pytest.approx(spearmanr(x, y).statistic, abs=1e-12)
    assert t.p_value == pytest.approx(norm.cdf(t.rho * np.sqrt(39)), rel=1e-12)
    # the null: rho of independent samples has variance 1 / (n - 1) (Monte-Carlo, 2,000 pairs of n = 40)
    rhos = [T.rank_correlation(rng.standard_normal(40), rng.standard_normal(40)).rho for _ in range(2000)]
    se_var = np.sqrt(2.0 / 1999) / 39  # standard error of a variance estimate, Gaussian approximation
    assert abs(np.var(rhos) - 1 / 39) < 4 * se_var
    assert T.rank_correlation([1.0, 1.0, 1.0, 1.0], [1, 2, 3, 4]).rho == 0.0  # constant side: no ordering


@pytest.mark.parametrize(
    "x, y",
    [([1.0, np.nan, 2.0], [1, 2, 3]), ([1, 2], [1, 2]), ([1, 2, 3], [1, 2]), ([1 + 1j, 2, 3], [1, 2, 3]), ([], [])],
)
def test_rank_correlation_rejects_bad_samples(x, y):
    with pytest.raises((TypeError, ValueError), match=r"\bx\b|\by\b"):
        T.rank_correlation(x, y)
    with pytest.raises(ValueError, match="alternative"):
        T.rank_correlation([1, 2, 3], [1, 2, 3], "two-sided")


def test_kurtosis_rank_test_reads_the_cells():
    """Perfectly anti-ordered cells give rho = -1; the row statistic is the figure's."""
    logk = np.arange(12.0).reshape(2, 3, 2)
    acc = (1.0 - logk / 20.0)[..., None] + np.array([0.0, 0.01])
    t = T.kurtosis_rank_test({"log10_output_kurtosis": logk, "test_accuracy": acc})
    assert t.rho == pytest.approx(-1.0) and t.n == 12 and t.p_value < 1e-3


def test_mode_energy_fraction_by_hand():
    """Hand-computed: uniform 3 x 3 v on 4 x 4 images has eigenvalues f(k1) f(k2) / 9 with
    f = (3, 1, -1, 1), so mean sigma^2 = (9 + 1 + 1 + 1)^2 / (81 * 16) = 1/9; uniform 3-tap v on a
    3-periodic signal has eigenvalues (1, 0, 0): 1/3 survives any depth >= 1; the delta keeps all."""
    from meanfield import conv

    uniform = np.full((3, 3), 1 / 9)
    assert T.mode_energy_fraction(uniform, (4, 4), 1) == pytest.approx(1 / 9, rel=1e-12)
    assert T.mode_energy_fraction(uniform, (4, 4), 0) == 1.0
    assert T.mode_energy_fraction(np.full(3, 1 / 3), 3, 5) == pytest.approx(1 / 3, rel=1e-12)
    gs = conv.gs_family((3, 3), 5)
    assert T.mode_energy_fraction(gs[0], (8, 8), 1000) == 1.0
    # the prediction of row 9: GS0 > GS1 > ... > GS4 at every trained depth, towards 1/64 (the zero mode)
    for depth in (4, 8, 16):
        f = [T.mode_energy_fraction(v, (8, 8), depth) for v in gs]
        assert np.all(np.diff(f) < 0) and f[-1] > 1 / 64
    with pytest.raises(ValueError, match="depth"):
        T.mode_energy_fraction(uniform, (4, 4), -1)
    with pytest.raises(TypeError, match="depth"):
        T.mode_energy_fraction(uniform, (4, 4), 2.5)


def test_nonuniform_v_rank_test_uses_the_deepest_depth_and_every_network():
    res = {
        "mode_energy_fraction": np.array([[1.0, 0.5, 0.2], [1.0, 0.1, 0.05]]),
        # shallow depth anti-ordered (must be ignored); deepest depth ordered like the score
        "test_accuracy": np.array([[[0.1, 0.1], [0.5, 0.5], [0.9, 0.9]], [[0.8, 0.7], [0.5, 0.6], [0.2, 0.3]]]),
    }
    t = T.nonuniform_v_rank_test(res)
    assert t.n == 6 and t.alternative == "greater" and t.rho > 0.9 and t.p_value < 0.05


def test_full_size_reads_mnist_or_cifar_files_from_meanfield_data_dir(tmp_path, monkeypatch):
    """$MEANFIELD_DATA_DIR with small files in the real formats (gzipped IDX, CIFAR-10 python pickles):
    the full-size experiments read them (pooled by 4) and the trainer trains on them."""
    import gzip
    import pickle

    from meanfield.train import ConvNet, train_ensemble

    rng = np.random.default_rng(0)

    def idx(path, arr):
        head = bytes([0, 0, 0x08, arr.ndim]) + b"".join(int(s).to_bytes(4, "big") for s in arr.shape)
        path.write_bytes(gzip.compress(head + arr.astype(np.uint8).tobytes()))

    m = tmp_path / "mnist"
    m.mkdir()
    idx(m / "train-images-idx3-ubyte.gz", rng.integers(0, 256, (64, 28, 28)))
    idx(m / "train-labels-idx1-ubyte.gz", rng.integers(0, 10, 64))
    idx(m / "t10k-images-idx3-ubyte.gz", rng.integers(0, 256, (16, 28, 28)))
    idx(m / "t10k-labels-idx1-ubyte.gz", rng.integers(0, 10, 16))
    monkeypatch.setenv("MEANFIELD_DATA_DIR", str(m))
    d = T.training_data("full", downsample=2)
    assert "MNIST" in d.name and d.x_train.shape == (64, 1, 3, 3)  # 28 -> 7 -> 3 (cropped)
    assert "digits" in T.training_data("default").name  # only the full size reads the user's files
    net = ConvNet(depth=3, channels=4, init="delta_orthogonal", readout="flatten")
    c = train_ensemble(net, 2, data=d, steps=3, batch_size=16, lr=0.01, rng=0)
    assert c.test_accuracy.shape == (2, 4) and np.all(np.isfinite(c.test_loss))

    cf = tmp_path / "cifar"
    cf.mkdir()
    for name, n in (("data_batch_1", 40), ("test_batch", 12)):
        batch = {b"data": rng.integers(0, 256, (n, 3072)).astype(np.uint8), b"labels": list(rng.integers(0, 10, n))}
        (cf / name).write_bytes(pickle.dumps(batch))
    monkeypatch.setenv("MEANFIELD_DATA_DIR", str(cf))
    d = T.training_data("full", downsample=2)
    assert "CIFAR-10" in d.name and d.x_train.shape == (40, 3, 4, 4)
    c = train_ensemble(net, 1, data=d, steps=3, batch_size=8, lr=0.01, rng=0)
    assert np.all(np.isfinite(c.train_loss))


def test_cnn_learning_rate_keeps_the_per_layer_step_beyond_250_layers():
    assert T.cnn_learning_rate(8) == X.CNN_LR == 0.002
    assert T.cnn_learning_rate(250) == pytest.approx(0.002)
    assert T.cnn_learning_rate(T.DEEP_CNN_DEPTH) == pytest.approx(0.5 / T.DEEP_CNN_DEPTH)
    assert T.cnn_learning_rate(10_000) == pytest.approx(5e-5)
    with pytest.raises(ValueError, match="depth"):
        T.cnn_learning_rate(0)
    with pytest.raises(TypeError, match="depth"):
        T.cnn_learning_rate(1000.0)


def test_experiments_train_on_meanfield_torch_device(monkeypatch):
    """$MEANFIELD_TORCH_DEVICE reaches the trainer (an unknown device is refused, naming it)."""
    monkeypatch.setenv("MEANFIELD_TORCH_DEVICE", "no-such-device")
    with pytest.raises(ValueError, match="no-such-device"):
        T.experiment("zero", "smoke", 12345)
