"""Orhan 2017's skip networks on the project's one training engine (meanfield/train/_skip.py + train_ensemble)."""

from __future__ import annotations

import numpy as np
import pytest

from meanfield import landscape as L

torch = pytest.importorskip("torch")
T = pytest.importorskip("meanfield.train.skip")
import meanfield.train as TR  # noqa: E402


def _data(n=90, d=5, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d))
    y = rng.integers(0, classes, n)
    return TR.TrainingData(x, y, x[:30], y[:30], classes, "gaussian test inputs")


class _Keep:
    """A monitor that keeps the model and the parameters of every record."""

    def __init__(self):
        self.steps, self.thetas, self.model = [], [], None

    def __call__(self, model, step, theta):
        self.model = model
        self.steps.append(step)
        self.thetas.append(theta.clone())


def test_train_ensemble_takes_skip_nets_and_keeps_fixed_arrays():
    """train_ensemble trains SkipNet ensembles; the skip matrices ride along unchanged (zero gradient);
    the recorded loss is the NumPy reference's (skip_network) at the recorded parameters."""
    data = _data()
    keep = _Keep()
    net = T.SkipNet("residual", 2, 4, skips=lambda r: L.folded_orthogonal(4, 2, r), monitor=keep)
    curves = TR.train_ensemble(
        net, 2, data=data, steps=12, batch_size=30, lr=1e-2, optimizer="adam", record_every=6, rng=5
    )
    assert curves.steps.tolist() == [0, 6, 12] == keep.steps
    first, last = (keep.model.unpack(t) for t in (keep.thetas[0], keep.thetas[-1]))
    np.testing.assert_array_equal(first["Q"], last["Q"])
    assert not np.allclose(first["W"], last["W"])
    for m in range(2):
        x1 = np.maximum(data.x_train @ last["W0"][m].T + last["b0"][m], 0.0)
        h = L.skip_network("residual", x1, list(last["W"][m]), list(last["b"][m]), skips=list(last["Q"][m]))
        z = h @ last["Wout"][m].T + last["bout"][m]
        z = z - z.max(1, keepdims=True)
        ref = np.mean(np.log(np.exp(z).sum(1)) - z[np.arange(len(z)), data.y_train])
        assert curves.train_loss[m, -1] == pytest.approx(ref, rel=1e-4)  # float32 training, float64 reference


def test_bias_penalty_enters_the_loss():
    """With a strong BiasSymmBreak penalty the hidden biases end near their targets; without it they do not."""
    data = _data()
    out = {}
    for strength in (0.0, 10.0):
        keep = _Keep()
        net = T.SkipNet("plain", 2, 4, bias_reg=(0.5, strength), monitor=keep)
        TR.train_ensemble(net, 2, data=data, steps=150, batch_size=30, lr=2e-2, optimizer="adam", rng=1)
        p = keep.model.unpack(keep.thetas[-1])
        out[strength] = np.abs(p["b"] - p["targets"]).max()
    assert out[10.0] < 0.05 < out[0.0]


def test_common_random_numbers_across_architectures():
    """Network k of a plain and a residual ensemble built from one stream start from the same weights
    (the draws of skips, biases and targets come from spawned sub-streams)."""
    shape = (5,)
    kw = {"depth": 3, "width": 4}
    a = TR.init_parameters(T.SkipNet("plain", **kw), shape, 3, rng=np.random.default_rng(7))
    b = TR.init_parameters(
        T.SkipNet("residual", skips=lambda r: L.controlled_skip_matrix(4, 0.1, r), bias_reg=(0.5, 1e-3), **kw),
        shape,
        3,
        rng=np.random.default_rng(7),
    )
    for x, y in zip(a, b):  # the trained blocks agree; b has the fixed arrays appended
        np.testing.assert_array_equal(x, y)
    assert len(b) == len(a) + 2


def test_same_seed_same_curves_and_hessians():
    x = _data().x_train
    y = _data().y_train
    kw = {"n_networks": 2, "width": 3, "depth": 2, "steps": 6, "record_every": 3, "hessian_every": 3, "n_classes": 3}
    a = T.train_skip_ensemble("hyper_residual", x, y, rng=11, **kw)
    b = T.train_skip_ensemble("hyper_residual", x, y, rng=11, **kw)
    for name in ("train_accuracy", "loss", "overlap_min", "hessian_eigenvalues", "grad_norms"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))


def test_hessian_matches_finite_differences():
    """The exact Hessian of the hidden parameters (forward-over-reverse autodiff through the trainer's
    model) against central differences of the gradient of an independent float64 forward pass of
    the residual net (difference error ~ eps^2 * third derivative, rounding ~ 1e-16 / eps)."""
    data = _data(n=40)
    x, y = data.x_train, data.y_train
    res = T.train_skip_ensemble(
        "residual",
        x,
        y,
        n_networks=1,
        width=3,
        depth=1,
        steps=0,
        hessian_every=1,
        hessian_inputs=40,
        n_classes=3,
        rng=2,
        bias_init_sigma=0.3,  # an input with all 3 first-layer units off would sit on a kink at b = 0
    )
    p = {k: torch.tensor(v[0]) for k, v in res.params.items()}
    xt, yt = torch.tensor(x), torch.tensor(y)

    def grad(flat):
        flat = flat.clone().requires_grad_(True)
        w, b = flat[:9].view(3, 3), flat[9:]
        x1 = torch.relu(xt @ p["W0"].T + p["b0"])
        x2 = torch.relu(x1 @ w.T + b) + x1
        loss = torch.nn.functional.cross_entropy(x2 @ p["Wout"].T + p["bout"], yt)
        return torch.autograd.grad(loss, flat)[0]

    flat0, eps = torch.cat([p["W"][0].reshape(-1), p["b"][0]]), 1e-5
    cols = []
    for i in range(flat0.numel()):
        e = torch.zeros_like(flat0)
        e[i] = eps
        cols.append((grad(flat0 + e) - grad(flat0 - e)) / (2 * eps))
    h = torch.stack(cols, 1).numpy()
    ref = np.linalg.eigvalsh(0.5 * (h + h.T))
    np.testing.assert_allclose(res.hessian_eigenvalues[0, 0], ref, atol=1e-7)


def test_skip_net_argument_errors():
    with pytest.raises(ValueError, match="architecture"):
        T.SkipNet("dense", 2, 4)
    with pytest.raises(ValueError, match="skips"):
        T.SkipNet("plain", 2, 4, skips=lambda r: np.eye(4))
    with pytest.raises(TypeError, match="skips"):
        T.SkipNet("residual", 2, 4, skips=np.eye(4))
    with pytest.raises(ValueError, match="bias_reg"):
        T.SkipNet("plain", 2, 4, bias_reg=(0.5, -1.0))
    with pytest.raises(ValueError, match="batchnorm_layer"):
        T.SkipNet("plain", 2, 4, batchnorm_layer=2)
    with pytest.raises(ValueError, match="share"):
        TR.train_ensemble(
            [T.SkipNet("plain", 2, 4), T.SkipNet("residual", 2, 4)], 1, data=_data(), steps=1, batch_size=4
        )
    with pytest.raises(ValueError, match="skips"):
        TR.init_parameters(T.SkipNet("residual", 2, 4, skips=lambda r: np.eye(3)), (5,), 3, rng=0)


def test_path_residual_is_residual_with_a_matrix_of_ones():
    """Sec. 2.2's path-residual net = residual with Q_l = 1 1^T / width (same stream: same weights and
    batches); the two forward passes differ only in summation order (float32)."""
    data = _data()
    kw = {"data": data, "steps": 10, "batch_size": 30, "lr": 1e-2, "optimizer": "adam", "rng": 4}
    a = TR.train_ensemble(T.SkipNet("path_residual", 3, 4), 2, **kw)
    b = TR.train_ensemble(T.SkipNet("residual", 3, 4, skips=lambda r: np.full((4, 4), 0.25)), 2, **kw)
    np.testing.assert_allclose(a.train_loss, b.train_loss, rtol=1e-4)
    assert not np.allclose(a.train_loss, TR.train_ensemble(T.SkipNet("plain", 3, 4), 2, **kw).train_loss)
