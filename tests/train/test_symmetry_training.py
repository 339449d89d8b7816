"""The skip-network ensemble trainer of Orhan 2017 (meanfield.train.skip)."""

from __future__ import annotations

import numpy as np
import pytest

from meanfield import landscape as L

torch = pytest.importorskip("torch")
T = pytest.importorskip("meanfield.train.skip")

#: float32 training against the float64 NumPy reference: relative rounding ~1e-6 per layer.
F32_RTOL = 1e-4


def _data(n=120, d=6, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d))
    y = rng.integers(0, classes, n)
    return x, y


def _ensemble(arch, x, y, **kw):
    """``train_skip_ensemble`` of width-4 networks on the 3-class data of :func:`_data` (``kw`` adds or overrides)."""
    return T.train_skip_ensemble(arch, x, y, **{"width": 4, "n_classes": 3, **kw})


def _reference_logits(res, x, member):
    p = res.params
    x1 = np.maximum(x @ p["W0"][member].T + p["b0"][member], 0.0)
    kw = {}
    if "Q" in p:
        kw["skips"] = list(p["Q"][member])
    if "P" in p:
        kw["long_skips"] = list(p["P"][member])
    if "c" in p:
        c = p["c"]
        kw["constant_bias"] = (
            float(c[1] - c[0]) if c.size > 1 else 0.0,
            float(c[0] - (c[1] - c[0] if c.size > 1 else 0.0)),
        )
    h = L.skip_network(res.architecture, x1, list(p["W"][member]), list(p["b"][member]), **kw)
    return h @ p["Wout"][member].T + p["bout"][member]


@pytest.mark.parametrize(
    "arch,kw",
    [
        ("plain", {"constant_bias": (-0.01, 0.1)}),
        ("residual", {"skips": lambda r: L.folded_orthogonal(4, 4, r)}),
        ("hyper_residual", {"long_skips": lambda r: L.folded_orthogonal(4, 1, r), "bias_init_sigma": 0.1}),
    ],
)
def test_trained_network_is_skip_network(arch, kw):
    """After training, the NumPy reference (skip_network with the trained parameters) reproduces the
    recorded accuracy and loss."""
    x, y = _data()
    res = _ensemble(arch, x, y, n_networks=2, depth=3, steps=20, lr=1e-2, batch_size=40, record_every=10, rng=1, **kw)
    assert res.steps.tolist() == [0, 10, 20]
    for m in range(2):
        logits = _reference_logits(res, x, m)
        acc = np.mean(np.argmax(logits, 1) == y)
        z = logits - logits.max(1, keepdims=True)
        loss = np.mean(np.log(np.exp(z).sum(1)) - z[np.arange(len(y)), y])
        assert res.train_accuracy[-1, m] == pytest.approx(acc, abs=1.5 / len(y))  # one float32 argmax flip at most
        assert res.loss[-1, m] == pytest.approx(loss, rel=F32_RTOL)


def test_reproducible_and_members_independent():
    x, y = _data()
    a = _ensemble("residual", x, y, n_networks=2, depth=2, steps=5, rng=3)
    b = _ensemble("residual", x, y, n_networks=2, depth=2, steps=5, rng=3)
    np.testing.assert_array_equal(a.params["W"], b.params["W"])
    assert not np.allclose(a.params["W"][0], a.params["W"][1])


def test_plain_rescaling_symmetry_and_skips_break_it():
    """Fig. 2c: rescaling leaves a plain ReLU net's accuracy unchanged (positive homogeneity)."""
    x, y = _data(n=200)
    plain = T.train_skip_ensemble("plain", x, y, n_networks=3, width=6, depth=3, steps=30, lr=1e-2, n_classes=3, rng=0)
    ratio = T.rescaled_accuracy_ratio(plain, x, y, rng=1)
    np.testing.assert_allclose(ratio, 1.0, atol=2.0 / len(x))  # an argmax flip at a rounding tie at most


def test_bias_variants_and_hessian():
    x, y = _data()
    res = _ensemble("plain", x, y, n_networks=2, depth=2, steps=10, bias_reg=(0.5, 0.1), hessian_every=10, rng=0)
    assert res.hessian_steps.tolist() == [0, 10]
    assert res.hessian_eigenvalues.shape == (2, 2, 2 * (16 + 4))
    assert np.all((res.degenerate_fraction >= 0) & (res.degenerate_fraction <= 1))
    assert res.grad_norms.shape == (2, 3) and np.all(np.isfinite(res.grad_norms))
    bn = _ensemble("plain", x, y, n_networks=1, depth=2, steps=3, batchnorm_layer=1, rng=0)
    assert np.all(np.isfinite(bn.loss))


def test_argument_errors():
    x, y = _data()
    with pytest.raises(ValueError, match="architecture"):
        T.train_skip_ensemble("dense", x, y, n_classes=3)
    with pytest.raises(ValueError, match="lr"):
        T.train_skip_ensemble("plain", x, y, lr=0.0, n_classes=3)
    with pytest.raises(ValueError, match="skips"):
        T.train_skip_ensemble("plain", x, y, skips=lambda r: np.eye(32), n_classes=3)
    with pytest.raises(ValueError, match="y_train"):
        T.train_skip_ensemble("plain", x, y + 5, n_classes=3)
    with pytest.raises(ValueError, match="bias_reg"):
        T.train_skip_ensemble("plain", x, y, bias_reg=(-1.0, 1.0), n_classes=3)
    with pytest.raises(ValueError, match="x_test"):
        T.train_skip_ensemble("plain", x, y, x_test=x, n_classes=3)
    with pytest.raises(ValueError, match="MAX_HESSIAN"):
        T.train_skip_ensemble("plain", x, y, width=64, depth=2, hessian_every=1, n_classes=3)
    with pytest.raises(ValueError):
        T.train_skip_ensemble("plain", np.full_like(x, np.nan), y, n_classes=3)
    with pytest.raises(TypeError):
        T.rescaled_accuracy_ratio("r", x, y)


#: float64 rounding bound of two Hessians formed by different sums of the same products (the
#: closed-structure and the autodiff Hessian), relative to max |H|: each entry sums O(B n depth)
#: ~ 10^3 products each rounded to 1.1e-16, so ~1e-13; 1e-12 leaves a factor 10. Eigenvalues move
#: by at most ||dH||_2 <= p max |dH| (Weyl), p <= 60 here.
HESSIAN_RTOL = 1e-12


@pytest.mark.parametrize(
    "arch,kw",
    [
        ("plain", {"constant_bias": (-0.05, 0.1)}),
        ("residual", {}),
        ("residual", {"skips": lambda r: L.controlled_skip_matrix(4, 0.5, r)}),
        ("hyper_residual", {}),
        ("hyper_residual", {"skips": lambda r: L.controlled_skip_matrix(4, 0.5, r)}),
        ("hyper_residual", {"long_skips": lambda r: L.folded_orthogonal(4, 1, r)}),
        ("path_residual", {}),
    ],
)
def test_batched_hessian_equals_per_network_autodiff(arch, kw):
    """The all-members-at-once Hessian (closed structure) equals torch.func's jacfwd(jacrev) per network."""
    x, y = _data(n=40)
    res = _ensemble(arch, x, y, n_networks=3, depth=3, steps=15, lr=3e-2, batch_size=40, record_every=15, rng=2, **kw)
    exact = T.skip_ensemble_hessians(res, x, y)
    auto = T.skip_ensemble_hessians(res, x, y, method="autodiff")
    assert exact.shape == auto.shape == (3, 3 * (16 + 4), 3 * (16 + 4))
    scale = np.abs(auto).max()
    assert scale > 0.01  # a real curvature, not a vanishing matrix
    np.testing.assert_allclose(exact, auto, rtol=0, atol=HESSIAN_RTOL * scale)
    # the members differ (each its own Hessian, not one broadcast)
    assert np.abs(exact[0] - exact[1]).max() > 1e-3 * scale


def test_recorded_spectrum_is_the_hessian_of_the_trained_net():
    """train_skip_ensemble's last recorded spectrum (all inputs in the Hessian's loss) equals the
    eigenvalues of the autodiff Hessian of the final parameters (the trainer holds its inputs in
    float32, so the reference gets the float32-rounded inputs)."""
    x, y = _data(n=40)
    kw = {"lr": 3e-2, "batch_size": 40, "record_every": 10, "hessian_every": 10, "hessian_inputs": 40}
    res = _ensemble("hyper_residual", x, y, n_networks=2, depth=2, steps=10, rng=4, **kw)
    x32 = x.astype(np.float32).astype(np.float64)
    ev = np.linalg.eigvalsh(T.skip_ensemble_hessians(res, x32, y, method="autodiff"))
    scale = np.abs(ev).max()
    np.testing.assert_allclose(res.hessian_eigenvalues[-1], ev, rtol=0, atol=ev.shape[1] * HESSIAN_RTOL * scale)


def test_skip_ensemble_hessians_arguments():
    x, y = _data(n=20)
    res = T.train_skip_ensemble("plain", x, y, n_networks=1, width=3, depth=1, steps=1, n_classes=3, rng=0)
    with pytest.raises(TypeError, match="result"):
        T.skip_ensemble_hessians("res", x, y)
    with pytest.raises(ValueError, match="method"):
        T.skip_ensemble_hessians(res, x, y, method="fd")
    with pytest.raises(TypeError, match="method"):
        T.skip_ensemble_hessians(res, x, y, method=1)
    with pytest.raises(ValueError, match="x"):
        T.skip_ensemble_hessians(res, x[:, :2], y)
    with pytest.raises(ValueError, match="x"):
        T.skip_ensemble_hessians(res, np.full_like(x, np.nan), y)
    with pytest.raises(ValueError, match="y"):
        T.skip_ensemble_hessians(res, x, y + 3)
    with pytest.raises(ValueError, match="batchnorm_layer"):
        T.skip_ensemble_hessians(res, x, y, batchnorm_layer=1)
    bn = T.skip_ensemble_hessians(res, x, y, batchnorm_layer=0)
    assert bn.shape == (1, 12, 12) and np.all(np.isfinite(bn))
