"""The ensemble trainer (meanfield.train): layout, independence of networks, rng rule, data."""

from __future__ import annotations

import gzip
import pickle

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("sklearn")

from meanfield.init import from_torch_layout, periodic_conv  # noqa: E402
from meanfield.train import (  # noqa: E402
    MAX_LOSS,
    ConvNet,
    DenseNet,
    TrainingData,
    ensemble_forward,
    init_parameters,
    load_training_data,
    train_ensemble,
)

#: float32 forward passes of a few layers agree with float64 NumPy to about 1e-6 relative; 1e-4
#: leaves a factor 100 for the accumulation over 64 pixels and 3 taps.
FLOAT32_RTOL = 1e-4


@pytest.fixture(scope="module")
def small_data():
    d = load_training_data(n_train=256, n_test=128)
    return d


def _numpy_conv_forward(net, params, x):
    """Reference forward pass of one ConvNet in float64 NumPy with meanfield.init.periodic_conv."""
    h = np.moveaxis(x, 1, -1)  # (B, c, *S) -> (B, *S, c): the library's channels-last signals
    if net.ndim == 1:
        h = h.reshape(h.shape[0], -1, h.shape[-1])
    for i in range(net.depth):
        kernel = from_torch_layout(params[2 * i])
        h = np.tanh(periodic_conv(h, kernel, net.ndim) + params[2 * i + 1])
    h = h.reshape(h.shape[0], -1, h.shape[-1])
    feats = h.mean(axis=1) if net.readout == "pool" else np.swapaxes(h, 1, 2).reshape(h.shape[0], -1)
    return feats @ params[-2].T + params[-1]


@pytest.mark.parametrize("ndim", [1, 2])
@pytest.mark.parametrize("init", ["gaussian", "orthogonal", "delta_orthogonal"])
@pytest.mark.parametrize("readout", ["pool", "flatten"])
def test_conv_forward_matches_periodic_conv(small_data, ndim, init, readout):
    """Grouped circular torch convolutions on to_torch_layout kernels == the library's periodic_conv."""
    net = ConvNet(depth=3, channels=4, ndim=ndim, init=init, sigma_w2=1.5, sigma_b2=0.1, readout=readout)
    shape = small_data.image_shape
    per = [init_parameters(net, shape, 10, rng=s) for s in (1, 2)]
    x = small_data.x_test[:5]
    logits = ensemble_forward(net, per, np.stack([x, x[::-1]]))
    for k, xk in enumerate((x, x[::-1])):
        np.testing.assert_allclose(logits[k], _numpy_conv_forward(net, per[k], xk), rtol=1e-10, atol=1e-12)


def test_dense_forward_matches_numpy(small_data):
    net = DenseNet(depth=3, width=8, activation="tanh", sigma_w2=1.7, sigma_b2=0.05)
    params = init_parameters(net, small_data.image_shape, 10, rng=3)
    x = small_data.x_test[:7]
    got = ensemble_forward(net, [params], x[None])[0]
    h = x.reshape(7, -1)
    for i in range(4):
        h = h @ params[2 * i].T + params[2 * i + 1]
        if i < 3:
            h = np.tanh(h)
    np.testing.assert_allclose(got, h, rtol=1e-12, atol=1e-12)


def test_initial_weights_are_the_library_constructions(small_data):
    shape = small_data.image_shape
    p = init_parameters(ConvNet(depth=3, channels=6, init="delta_orthogonal", sigma_w2=2.0), shape, rng=0)
    k = p[2]  # second layer, torch layout (c_out, c_in, 3, 3)
    assert k.shape == (6, 6, 3, 3)
    centre = k[:, :, 1, 1]
    assert np.count_nonzero(k) == np.count_nonzero(centre)
    np.testing.assert_allclose(centre.T @ centre, 2.0 * np.eye(6), atol=1e-12)  # sqrt(sigma_w2) H, H orthogonal
    g = init_parameters(DenseNet(depth=2, width=8, init="gsm", activation="relu", sigma_w2=2.0), shape, rng=0)
    w = g[2]
    np.testing.assert_array_equal(w[:4, :4], -w[4:, :4])
    np.testing.assert_array_equal(w[:4, :4], w[4:, 4:])
    np.testing.assert_array_equal(g[0][:4], -g[0][4:])  # first layer [W0; -W0]
    z = init_parameters(DenseNet(depth=2, width=64, init="zero", activation="relu"), shape, rng=0)
    np.testing.assert_array_equal(z[2], np.eye(64))
    assert not np.any(z[1]) and not np.any(z[3])


@pytest.mark.parametrize(
    "net",
    [
        DenseNet(depth=2, width=16, activation="tanh", sigma_w2=1.5),
        ConvNet(depth=2, channels=4, ndim=1, init="gaussian"),
    ],
    ids=["dense", "conv1d"],
)
def test_curves_do_not_depend_on_ensemble_size_and_repeat(small_data, net):
    """Network k's curves are a function of rng's child k only (spawned streams), reproducibly."""
    kw = dict(data=small_data, steps=30, batch_size=16, lr=0.05, record_every=10, rng=7)
    big = train_ensemble(net, 3, **kw)
    one = train_ensemble(net, 1, **kw)
    again = train_ensemble(net, 3, **kw)
    for name in ("train_loss", "train_accuracy", "test_loss", "test_accuracy"):
        np.testing.assert_allclose(getattr(one, name)[0], getattr(big, name)[0], rtol=FLOAT32_RTOL, atol=1e-6)
        np.testing.assert_array_equal(getattr(again, name), getattr(big, name))
    assert not np.allclose(big.test_loss[0], big.test_loss[1])  # different networks differ
    np.testing.assert_array_equal(big.steps, [0, 10, 20, 30])


def test_list_of_nets_trains_each_as_its_own_ensemble(small_data):
    """Nets of one architecture in one call == one call per net with the rng child of that net."""
    nets = [DenseNet(depth=2, width=8, sigma_w2=s, init=i) for s, i in ((1.0, "gaussian"), (2.0, "orthogonal"))]
    kw = dict(data=small_data, steps=12, batch_size=8, lr=0.05, record_every=6)
    both = train_ensemble(nets, 2, rng=3, **kw)
    children = np.random.default_rng(3).spawn(2)
    for j, net in enumerate(nets):
        alone = train_ensemble(net, 2, rng=children[j], **kw)
        assert both[j].net == net
        np.testing.assert_allclose(both[j].test_loss, alone.test_loss, rtol=FLOAT32_RTOL, atol=1e-6)
    with pytest.raises(ValueError):
        train_ensemble([DenseNet(depth=2, width=8), DenseNet(depth=3, width=8)], 1, **kw)
    with pytest.raises(TypeError):
        train_ensemble([], 1, **kw)


@pytest.mark.parametrize("optimizer", ["sgd", "momentum", "adam"])
def test_training_lowers_the_loss(small_data, optimizer):
    lr = {"sgd": 0.1, "momentum": 0.02, "adam": 3e-3}[optimizer]
    c = train_ensemble(
        DenseNet(depth=1, width=32, activation="tanh"),
        2,
        data=small_data,
        steps=60,
        batch_size=32,
        lr=lr,
        optimizer=optimizer,
        rng=0,
    )
    # 10 classes: chance is 10 % and an untrained read-out scores about that; 60 steps on digits
    # reach > 60 % training accuracy with each of these optimisers (a broken update does not).
    assert np.all(c.train_loss[:, -1] < 0.7 * c.train_loss[:, 0])
    assert np.all(c.train_accuracy[:, -1] > 0.6)
    assert np.all(c.diverged_at == -1)


def test_diverging_networks_are_frozen_and_finite(small_data):
    c = train_ensemble(
        DenseNet(depth=4, width=16, activation="relu", sigma_w2=2.0),
        2,
        data=small_data,
        steps=20,
        batch_size=16,
        lr=1e6,
        rng=1,
    )
    assert np.all(c.diverged_at >= 0)
    for arr in (c.train_loss, c.test_loss, c.train_accuracy, c.test_accuracy):
        assert np.all(np.isfinite(arr))
    assert np.all(c.train_loss <= MAX_LOSS)


def test_evaluation_subset_is_scored_exactly(small_data):
    """n_eval < n_train: the curves are the scores of exactly the first n_eval examples."""
    net = DenseNet(depth=1, width=8)
    c = train_ensemble(net, 2, data=small_data, steps=0, n_eval=50, rng=4)
    params = [init_parameters(net, small_data.image_shape, 10, rng=g) for g in np.random.default_rng(4).spawn(2)]
    for name, x, y in (
        ("train", small_data.x_train[:50], small_data.y_train[:50]),
        ("test", small_data.x_test[:50], small_data.y_test[:50]),
    ):
        logits = ensemble_forward(net, params, np.stack([x, x]))
        acc = (logits.argmax(axis=2) == y).mean(axis=1)
        np.testing.assert_allclose(getattr(c, f"{name}_accuracy")[:, 0], acc, atol=1e-6)
        shifted = logits - logits.max(axis=2, keepdims=True)
        ce = -(shifted[np.arange(2)[:, None], np.arange(50), y] - np.log(np.exp(shifted).sum(axis=2))).mean(axis=1)
        np.testing.assert_allclose(getattr(c, f"{name}_loss")[:, 0], ce, rtol=FLOAT32_RTOL)


def test_lr_schedule_and_zero_steps(small_data):
    seen = []

    def schedule(step):
        seen.append(step)
        return 0.01 / (1 + step)

    c = train_ensemble(DenseNet(depth=1, width=8), 1, data=small_data, steps=5, lr=schedule, rng=0)
    assert seen[:5] == [0, 1, 2, 3, 4]
    assert c.params["lr_last"] == pytest.approx(0.01 / 5)
    z = train_ensemble(DenseNet(depth=1, width=8), 2, data=small_data, steps=0, rng=0)
    assert z.test_accuracy.shape == (2, 1)


def test_bad_arguments(small_data):
    net = DenseNet(depth=1, width=8)
    kw = dict(data=small_data, steps=1)
    for bad, exc in [
        (dict(n_networks=0), ValueError),
        (dict(n_networks=True), TypeError),
        (dict(n_networks=2.5), TypeError),
        (dict(steps=1.0), TypeError),
        (dict(lr=float("nan")), ValueError),
        (dict(lr=-1.0), ValueError),
        (dict(lr=1j), TypeError),
        (dict(lr=lambda s: float("inf")), ValueError),
        (dict(optimizer="lbfgs"), ValueError),
        (dict(batch_size=10**6), ValueError),
        (dict(steps=-1), ValueError),
        (dict(momentum=1.0), ValueError),
        (dict(dtype="float16"), ValueError),
        (dict(device="nonsense"), ValueError),
        (dict(rng=-1), ValueError),
        (dict(rng=1.5), TypeError),
        (dict(data=np.zeros((3, 4))), TypeError),
    ]:
        args = {"n_networks": 1, **kw, **bad}
        n = args.pop("n_networks")
        with pytest.raises(exc):
            train_ensemble(net, n, **args)
    with pytest.raises(TypeError):
        train_ensemble("mlp", 1, **kw)
    for bad in [
        dict(depth=-1, width=4),
        dict(depth=1, width=0),
        dict(depth=1, width=4, sigma_w2=float("inf")),
        dict(depth=1, width=4, sigma_w2=-1),
        dict(depth=1, width=4, init="he"),
        dict(depth=1, width=5, init="gsm"),
    ]:
        with pytest.raises(ValueError):
            DenseNet(**bad)
    with pytest.raises(TypeError):
        DenseNet(depth=1, width=4, sigma_w2=True)
    for bad in [
        dict(depth=1, channels=4, kernel_size=2),
        dict(depth=1, channels=4, v=(1.0,)),
        dict(depth=0, channels=4),
    ]:
        with pytest.raises(ValueError):
            ConvNet(**bad)
    with pytest.raises(ValueError):
        ConvNet(depth=1, channels=4, init="gaussian", v=(0.5,) * 9)
    with pytest.raises(ValueError):  # orthogonal kernels need channels >= input channels
        init_parameters(ConvNet(depth=1, channels=2), (3, 4, 4))
    with pytest.raises(ValueError):  # n_networks * n_params bound
        train_ensemble(DenseNet(depth=4, width=8192), 1000, **kw)


def _write_idx(path, arr, code=0x08, compress=False):
    head = bytes([0, 0, code, arr.ndim]) + b"".join(int(s).to_bytes(4, "big") for s in arr.shape)
    raw = head + arr.astype(np.uint8).tobytes()
    if compress:
        raw = gzip.compress(raw)
        path = path.with_name(path.name + ".gz")
    path.write_bytes(raw)


def test_mnist_and_cifar_files(tmp_path):
    rng = np.random.default_rng(0)
    m = tmp_path / "mnist"
    m.mkdir()
    _write_idx(m / "train-images-idx3-ubyte", rng.integers(0, 256, (40, 28, 28)), compress=True)
    _write_idx(m / "train-labels-idx1-ubyte", rng.integers(0, 10, 40))
    _write_idx(m / "t10k-images-idx3-ubyte", rng.integers(0, 256, (12, 28, 28)))
    _write_idx(m / "t10k-labels-idx1-ubyte", rng.integers(0, 10, 12), compress=True)
    d = load_training_data("mnist", data_dir=m, downsample=4)
    assert d.x_train.shape == (40, 1, 7, 7) and d.x_test.shape == (12, 1, 7, 7)
    np.testing.assert_allclose(d.x_train.mean(axis=0), 0.0, atol=1e-12)
    c = train_ensemble(ConvNet(depth=2, channels=4), 2, data=d, steps=3, batch_size=8, rng=0)
    assert c.test_accuracy.shape[0] == 2 and "MNIST" in c.dataset

    cf = tmp_path / "cifar"
    cf.mkdir()
    for name, n in (("data_batch_1", 20), ("data_batch_2", 10), ("test_batch", 6)):
        batch = {b"data": rng.integers(0, 256, (n, 3072)).astype(np.uint8), b"labels": list(rng.integers(0, 10, n))}
        (cf / name).write_bytes(pickle.dumps(batch))
    d = load_training_data("cifar10", data_dir=cf, n_train=25, downsample=8)
    assert d.x_train.shape == (25, 3, 4, 4) and d.x_test.shape == (6, 3, 4, 4)
    c = train_ensemble(DenseNet(depth=1, width=8), 1, data=d, steps=2, batch_size=5, rng=0)
    assert np.all(np.isfinite(c.test_loss))

    with pytest.raises(ValueError, match="t10k"):
        (m / "t10k-images-idx3-ubyte").unlink()
        load_training_data("mnist", data_dir=m)
    with pytest.raises(ValueError):
        load_training_data("mnist")
    with pytest.raises(ValueError):
        load_training_data("digits", data_dir=tmp_path)
    with pytest.raises(ValueError):
        load_training_data("svhn")


def test_training_data_is_checked(small_data):
    bad = small_data.replace(y_train=small_data.y_train + 10)
    with pytest.raises(ValueError):
        train_ensemble(DenseNet(depth=1, width=4), 1, data=bad, steps=1)
    nan = small_data.replace(x_train=np.full_like(small_data.x_train, np.nan))
    with pytest.raises(ValueError):
        train_ensemble(DenseNet(depth=1, width=4), 1, data=nan, steps=1)
    assert isinstance(small_data, TrainingData) and small_data.image_shape == (1, 8, 8)


# --- regressions found by the public-API fuzzer (tests/fuzz/, full catalogue) -------------------


def test_ragged_v_and_x_are_named():
    with pytest.raises(ValueError, match=r"\bv\b"):
        ConvNet(depth=2, channels=2, ndim=1, kernel_size=3, v=[[0.25, 0.5], [0.25]])
    net = DenseNet(depth=2, width=4)
    params = [init_parameters(net, (1, 5), n_classes=3, rng=i) for i in range(2)]
    with pytest.raises(ValueError, match=r"\bx\b"):
        ensemble_forward(net, params, [[[[1.0] * 5]], [[[1.0] * 4]]])


# --- the gather + batched-matmul convolution path (train-rest: faster deep narrow CNNs) ----------


@pytest.mark.parametrize("ndim", [1, 2])
@pytest.mark.parametrize("readout", ["pool", "flatten"])
def test_gather_path_equals_grouped_convolutions_in_training(small_data, ndim, readout, monkeypatch):
    """Training through the gather path (small ensembles) and through the grouped convolutions
    (forced by GATHER_MAX_SAVED = 0) gives the same curves: same logits and same gradients, or the
    losses after the first SGD steps would differ. The no-grad forward of both equals periodic_conv
    (test_conv_forward_matches_periodic_conv)."""
    import meanfield.train as tr

    net = ConvNet(depth=3, channels=4, ndim=ndim, init="gaussian", sigma_w2=1.5, sigma_b2=0.1, readout=readout)
    kw = dict(data=small_data, steps=4, batch_size=16, lr=0.05, record_every=1, n_eval=64, rng=3, dtype="float64")
    curves = []
    for limit in (tr.GATHER_MAX_SAVED, 0):
        monkeypatch.setattr(tr, "GATHER_MAX_SAVED", limit)
        curves.append(train_ensemble(net, 2, **kw))
    assert np.abs(curves[0].train_loss[:, -1] - curves[0].train_loss[:, 0]).max() > 1e-3  # the weights moved
    # float64 networks of 3 layers and 4 steps: the two paths differ by rounding only (~1e-15)
    np.testing.assert_allclose(curves[0].train_loss, curves[1].train_loss, rtol=1e-9)
    np.testing.assert_allclose(curves[0].test_loss, curves[1].test_loss, rtol=1e-9)
