"""meanfield.nets: one description per network -> theory, sampler, weights, module, training.

Each paper's architecture is checked against the library's existing functions: the theory
bit-identically where the same maps run in the same order (the C-map iterated by
:func:`meanfield.ntk.propagate_ntk`, :func:`meanfield.conv.multi_input_propagate`), to float64
rounding where an existing function rounds differently (the compiled log-scale loops of
:func:`meanfield.dense.propagate` / :func:`meanfield.conv.propagate`), and the sampler against the
existing simulators given the same weights or ``rng``. The acceptance test: a new architecture (a
residual net with a partly orthogonal skip matrix, LeakyNet averaging and tanh) gets theory,
simulation, weights, a module and training from its description alone, and its theory agrees with
its Monte-Carlo simulation within standard-error tolerances.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from meanfield import conv, dense, ntk
from meanfield.landscape import folded_orthogonal, skip_network
from meanfield.nets import (
    Act,
    ChannelMix,
    Conv,
    Dense,
    Network,
    Pool,
    Replicate,
    Residual,
    Subsample,
    papers,
    train,
)
from meanfield.symmetry import propagate_perturbation

#: Relative tolerance for "the same numbers to float64 rounding": a few ulps of the largest entry
#: per layer (measured <= 8e-16 for the maps here; products summed in another order or on a log
#: scale differ by a few ulps each, and the errors add over <= 10 layers).
ROUNDING = 64 * np.finfo(float).eps
#: Family-wise false-alarm rate of a theory-vs-simulation test: the threshold on max |z| over its K
#: entries is the Bonferroni bound norm.isf(ALPHA / (2 K)).
ALPHA = 1e-3


def _z_limit(k: int) -> float:
    return float(norm.isf(ALPHA / (2 * k)))


def _agree(theory: np.ndarray, sim, layer: int) -> None:
    """Theory within the Bonferroni SE bound of the simulated mean (distinct entries of a symmetric matrix)."""
    iu = np.triu_indices(theory.shape[0])
    z = (sim.mean(layer) - theory)[iu] / sim.standard_error(layer)[iu]
    assert np.max(np.abs(z)) < _z_limit(iu[0].size), (layer, np.max(np.abs(z)))


def _close(a, b) -> None:
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape
    assert np.max(np.abs(a - b)) <= ROUNDING * max(np.max(np.abs(b)), 1e-300)


X_DENSE = np.random.default_rng(0).standard_normal((3, 20))


# ------------------------------------------------------------------------------------------------
# The dense tanh MLP (Poole et al. 2016; Xiao et al. 2018 Sec. 2.1).


def test_dense_mlp_theory_is_the_dense_and_ntk_maps():
    net = papers.dense_mlp(64, 4, "tanh", 1.7, 0.1)
    th = net.theory(X_DENSE, ntk=True, backward=True)
    cov0 = dense.input_covariance(X_DENSE, 1.7, 0.1)
    ref = ntk.propagate_ntk(cov0, "tanh", 1.7, 0.1, 4)
    for layer in range(5):  # bit-identical: the same C-map calls in the same order
        assert np.array_equal(th.second[2 * layer + 1], ref.cov[layer])
    assert np.array_equal(th.ntk, ref.ntk[4])
    traj = dense.propagate(cov0, "tanh", 1.7, 0.1, 4)  # its compiled loop rounds on a log scale
    for layer in range(5):
        _close(th.second[2 * layer + 1], traj[layer])
    # backward: sigma_w2 E phi'^2 per layer (Schoenholz et al. 2017 eq. 14), the ratios of dense.backward_variance
    ratios = dense.backward_variance(th.second[1][0, 0], "tanh", 1.7, 0.1, 5)
    mine = np.array([th.grad[2 * layer + 1][0, 0] for layer in range(5)])
    _close(mine / mine[-1], ratios)


def test_dense_mlp_sampler_is_the_dense_simulator():
    from meanfield.simulate import simulate_dense

    net = papers.dense_mlp(48, 3, "tanh", 1.7, 0.1)
    sim = net.simulate(X_DENSE, n_networks=4, rng=5)
    ref = simulate_dense(X_DENSE, "tanh", 1.7, 0.1, depth=3, width=48, n_networks=4, rng=5, method="weights").cov
    for layer in range(4):  # same weights (same streams), the simulator's log-scaled products
        _close(sim.second[2 * layer + 1], ref[:, layer])


def test_dense_mlp_theory_matches_simulation_and_torch():
    torch = pytest.importorskip("torch")
    net = papers.dense_mlp(128, 3, "tanh", 1.5, 0.05, n_out=2)
    th = net.theory(X_DENSE)
    sim = net.simulate(X_DENSE, n_networks=200, rng=2)
    for layer in (1, 3, 5, 7):
        _agree(th.second[layer], sim, layer)
    w = net.weights((20,), rng=3, n_networks=2)
    out = net.forward(w, X_DENSE)
    _close(net.to_torch(w, 1)(torch.tensor(X_DENSE)).detach().numpy(), out[1])


# ------------------------------------------------------------------------------------------------
# The periodic CNN (Xiao et al. 2018), 1-D, 2-D and 3-D.


@pytest.mark.parametrize(
    "shape, v", [((8,), np.array([0.25, 0.5, 0.25])), ((3, 4), np.arange(1, 10.0).reshape(3, 3) / 45)]
)
def test_cnn_theory_is_the_conv_maps(shape, v):
    x = np.random.default_rng(1).standard_normal((2, *shape, 3))
    net = papers.periodic_cnn(16, 3, "tanh", 1.7, 0.1, v=v)
    th = net.theory(x, ntk=True, backward=True)
    d, p = 2, math.prod(shape)
    c0 = conv.multi_input_covariance(x.reshape(d, p, 3), 1.7, 0.1, v, shape)
    traj = conv.multi_input_propagate(c0, "tanh", 1.7, 0.1, v, 3, shape)
    for layer in range(4):
        assert np.array_equal(th.second[2 * layer + 1].reshape(d, p, d, p), traj[layer])
    assert np.array_equal(th.ntk.reshape(d, p, d, p), ntk.propagate_conv_ntk(c0, "tanh", 1.7, 0.1, v, 3, shape).ntk[3])
    single = conv.propagate(c0[0, :, 0, :], "tanh", 1.7, 0.1, v, 3, shape)  # compiled loop: to rounding
    for layer in range(4):
        _close(th.second[2 * layer + 1].reshape(d, p, d, p)[0, :, 0, :], single[layer])
    # backward (eq. 2.15) from identity gradient moments at the last layer of input 0 and 1
    g = np.eye(p)  # the blocks of input 0: the map acts on every input pair's block alike
    for layer in range(3, 0, -1):
        block = th.second[2 * layer - 1].reshape(d, p, d, p)[0, :, 0, :]
        g = conv.backward_covariance_map(g, block, "tanh", 1.7, v, shape)
        _close(th.grad[2 * layer - 1].reshape(d, p, d, p)[0, :, 0, :], g)


def test_cnn_in_three_dimensions_matches_simulation():
    x = np.random.default_rng(2).standard_normal((1, 3, 3, 4, 2))
    v = np.full((3, 3, 3), 1.0 / 27)
    net = Network([Conv(32, (3, 3, 3), 1.5, 0.1, v), Act("tanh"), Conv(32, (3, 3, 3), 1.5, 0.1, v)])
    th = net.theory(x)
    sim = net.simulate(x, n_networks=60, rng=3)
    _agree(th.second[1], sim, 1)
    _agree(th.second[3], sim, 3)


def test_cnn_module_matches_sampler():
    torch = pytest.importorskip("torch")
    x = np.random.default_rng(4).standard_normal((2, 5, 6, 2))
    net = papers.periodic_cnn(4, 2, "relu", 2.0, 0.1, kernel_shape=(3, 3), n_out=3)
    w = net.weights(x.shape[1:], rng=5, n_networks=2)
    _close(net.to_torch(w, 0)(torch.tensor(x)).detach().numpy(), net.forward(w, x)[0])


def test_cnn_with_pooling_readout_matches_simulation():
    x = np.random.default_rng(1).standard_normal((2, 7, 2))
    net = papers.periodic_cnn(32, 2, "tanh", 1.5, 0.1, kernel_shape=(3,), n_out=16)
    th = net.theory(x)
    sim = net.simulate(x, n_networks=100, rng=3)
    for layer in (5, 7, 8):  # the last convolution, the pooled features, the read-out
        _agree(th.second[layer], sim, layer)


def test_theory_from_a_gaussian_cov0_continues_the_c_map():
    k = np.array([[1.0, 0.3], [0.3, 0.8]])
    net = Network([Act("erf"), Dense(16, 1.5, 0.05), Act("erf"), Dense(16, 1.5, 0.05)])
    th = net.theory(cov0=k, gaussian=True)
    assert np.array_equal(th.second[2], dense.covariance_map(k, "erf", 1.5, 0.05))
    assert np.array_equal(th.second[4], dense.covariance_map(th.second[2], "erf", 1.5, 0.05))
    with pytest.raises(ValueError, match="Act"):  # the same moments of an arbitrary (non-Gaussian) input
        net.theory(cov0=k)


# ------------------------------------------------------------------------------------------------
# ConstNet and LeakyNet (Blumenfeld et al. 2020): deterministic initialisations.


def test_constnet_is_the_constnet_simulator_and_its_theory_exact():
    from meanfield.simulate import ConstNet

    x = np.random.default_rng(0).standard_normal((2, 8, 8, 3))
    net = papers.constnet((4, 8, 16), 2, 10, (3, 3), 2)
    out, feats = net.forward(net.weights(x.shape[1:], rng=0), x, keep=True)
    logits, ref = ConstNet.initial((4, 8, 16), 2, 3, 10, (3, 3), 2).forward(x, keep=True)
    layers = net.layers
    mine = [
        feats[i + 1][0]
        for i in range(len(layers))
        if not isinstance(layers[i], (Pool, Dense))
        and not (i + 1 < len(layers) and isinstance(layers[i + 1], Subsample))
    ]
    assert len(mine) == len(ref)
    for a, b in zip(mine, ref):
        assert np.array_equal(a, b)
    assert np.array_equal(out[0], logits)
    th = net.theory(x)  # deterministic features: the per-unit moments are exact
    sim = net.simulate(x, 1, rng=0)
    for layer in range(len(layers) + 1):
        _close(th.second[layer], sim.second[layer][0])


def test_leakynet_is_the_leakynet_simulator_and_the_perturbation_law():
    from meanfield.simulate import LeakyNet

    kinds = ["I", "1", "I", "I", "1"]
    x = np.random.default_rng(1).standard_normal((2, 6, 6, 3))
    net = papers.leakynet(kinds, 8, 0.1, 10)
    _, feats = net.forward(net.weights(x.shape[1:]), x, keep=True)
    _, ref = LeakyNet.initial(kinds, 8, 3, 10, (3, 3), slope=0.1).forward(x, keep=True)
    mine = [feats[1][0]] + [feats[3 + 2 * layer][0] for layer in range(len(kinds))]
    for a, b in zip(mine, ref):
        assert np.array_equal(a, b)
    # a symmetric input plus a perturbation: App. G's ratio through the stack
    alpha = np.ones((1, 1, 1, 8))
    eps = 0.1 * np.random.default_rng(2).standard_normal((1, 1, 1, 8))
    stack = Network(net.layers[1:-2])
    _, f = stack.forward(stack.weights((1, 1, 8)), alpha + eps, keep=True)
    from meanfield.symmetry import perturbation_ratio

    ratios = [perturbation_ratio(f[2 * layer][0]) for layer in range(len(kinds) + 1)]
    _close(ratios, propagate_perturbation(alpha[0, 0], eps[0, 0], kinds, slope=0.1))
    with pytest.raises(ValueError, match="Act\\('leaky_relu"):
        net.theory(x)  # an activation of deterministic features: reported by name


# ------------------------------------------------------------------------------------------------
# Orhan (2017): plain, residual, hyper-residual and path-residual skip nets.


def _orhan_reference(arch, params, k):
    if arch == "plain":
        ws = [params[2 + 2 * i]["weight"][k] for i in range(4)]
        return ws, [params[2 + 2 * i]["bias"][k] for i in range(4)], None, None
    if arch == "hyper_residual":
        p = params[2]
        return (
            [a[k] for a in p["weight"]],
            [a[k] for a in p["bias"]],
            [a[k] for a in p["skips"]],
            [a[k] for a in p["long_skips"]],
        )
    blocks = params[2:6]
    ws = [b["branch"][0]["weight"][k] for b in blocks]
    bs = [b["branch"][0]["bias"][k] for b in blocks]
    skips = [b["skip"][k] if b["skip"].ndim == 3 else b["skip"] for b in blocks]
    return ws, bs, skips, None


@pytest.mark.parametrize("arch", ["plain", "residual", "hyper_residual", "path_residual"])
def test_orhan_nets_are_skip_network(arch):
    torch = pytest.importorskip("torch")
    kw = {}
    if arch in ("residual", "hyper_residual"):
        kw["skips"] = lambda g: folded_orthogonal(16, 8, rng=g)
    if arch == "hyper_residual":
        kw["long_skips"] = lambda g: folded_orthogonal(16, 4, rng=g)
    net = papers.orhan_skip_net(arch, 16, 4, 2.0, **kw)
    x = np.random.default_rng(0).standard_normal((5, 6))
    w = net.weights((6,), rng=1, n_networks=3)
    out, feats = net.forward(w, x, keep=True)
    for k in range(3):
        ws, bs, skips, longs = _orhan_reference(arch, w.params, k)
        ref = skip_network(
            "residual" if arch == "path_residual" else arch, feats[2][k], ws, bs, skips=skips, long_skips=longs
        )
        assert np.array_equal(out[k], ref)
    # PyTorch's matrix products sum in their own order (its own BLAS): equal to float64 rounding, not bit for bit
    _close(net.to_torch(w, 2)(torch.tensor(x)).detach().numpy(), out[2])
    if arch == "plain":
        th = net.theory(x)
        _close(th.second[3], dense.covariance_map(dense.input_covariance(x, 2.0, 0.0), "relu", 2.0, 0.0))
    elif arch == "path_residual":  # a fixed skip matrix: the theory applies (next test)
        assert net.theory(x).second[-1].shape == (5, 5)
    else:  # skip matrices drawn per network, and eq. 26's long skips: reported by name
        with pytest.raises(ValueError, match="fixed skip|identity skips"):
            net.theory(x)


@pytest.mark.parametrize("arch", ["residual", "path_residual", "hyper_residual"])
def test_orhan_residual_theory_matches_simulation(arch):
    """ReLU branches over a stream of non-zero mean: the cross term E[(Q x)_i relu(h_i)] = (Q 1)_i E x E relu(h);
    eq. 26's long skips through the moments between layers."""
    net = papers.orhan_skip_net(arch, 128, 4, 1.0)
    x = np.random.default_rng(0).standard_normal((3, 10))
    th = net.theory(x)
    sim = net.simulate(x, n_networks=200, rng=1)
    for layer in range(1, len(net.layers) + 1):
        _agree(th.second[layer], sim, layer)


# ------------------------------------------------------------------------------------------------
# Replicated features.


def test_replicated_features_theory_matches_simulation():
    net = Network([Dense(32, 1.0, 0.0), Replicate(4), Act("tanh"), Dense(64, 1.5, 0.0)])
    th = net.theory(X_DENSE)
    assert np.array_equal(th.second[2], th.second[1])
    sim = net.simulate(X_DENSE, n_networks=200, rng=6)
    _agree(th.second[4], sim, 4)


# ------------------------------------------------------------------------------------------------
# The acceptance test: a new architecture, written in the language and nothing else.


def _new_architecture(n=128, depth=3):
    q = folded_orthogonal(n, n // 2, rng=7)  # partly orthogonal: n / 2 orthonormal columns, each twice
    layers = [Dense(n, 1.0, 0.0)]
    for _ in range(depth):
        layers += [ChannelMix(0.5), Residual((Act("tanh"), Dense(n, 1.5, 0.05)), skip=q, scale=0.7)]
    return Network(layers + [Act("tanh"), Dense(1, 1.0, 0.0)])


def test_new_architecture_theory_agrees_with_simulation():
    net = _new_architecture()
    th = net.theory(X_DENSE, ntk=True, backward=True)
    sim = net.simulate(X_DENSE, n_networks=400, rng=1)
    for layer in range(1, len(net.layers) + 1):
        _agree(th.second[layer], sim, layer)
    assert th.ntk.shape == (3, 3) and np.all(np.linalg.eigvalsh(th.ntk) > 0)
    assert len(th.grad) == len(net.layers) + 1 and np.all(np.diag(th.grad[0]) > 0)


def _dense_jacobian(net, module, x):
    """Rows ``d f(x_a) / d theta`` in the NTK parametrisation (``W = sqrt(sigma_w2 / fan_in) omega``, ``b = sigma_b beta``)."""
    rows = []
    for a in range(x.shape[0]):
        module.zero_grad()
        module(x)[a, 0].backward()
        row = []
        for layer, mod in zip(net.layers, module):
            pairs = [(layer, mod)] if isinstance(layer, Dense) else []
            if isinstance(layer, Residual):
                pairs = [(lb, mb) for lb, mb in zip(layer.branch, mod.branch) if isinstance(lb, Dense)]
            for lb, mb in pairs:
                row.append(math.sqrt(lb.sigma_w2 / mb.weight.shape[1]) * mb.weight.grad.numpy().ravel())
                row.append(math.sqrt(lb.sigma_b2) * mb.bias.grad.numpy().ravel())
        rows.append(np.concatenate(row))
    return np.array(rows)


def test_new_architecture_gradients_and_ntk_match_autograd():
    """The derivative maps and the NTK against PyTorch autograd on finite networks of the description."""
    torch = pytest.importorskip("torch")
    net = _new_architecture()
    th = net.theory(X_DENSE, ntk=True, backward=True)
    n_networks = 80
    w = net.weights((20,), rng=5, n_networks=n_networks)
    xi = np.random.default_rng(6).standard_normal((n_networks, 3))  # output gradients with identity moments
    grads = [[] for _ in range(len(net.layers) + 1)]
    kernels = []
    xt = torch.tensor(X_DENSE)
    for k in range(n_networks):
        module = net.to_torch(w, k)
        h = xt.clone().requires_grad_(True)
        outs = [h]
        for mod in module:
            h = mod(h)
            h.retain_grad()
            outs.append(h)
        (h[:, 0] * torch.tensor(xi[k])).sum().backward()
        for layer, o in enumerate(outs):
            g = o.grad.numpy()
            grads[layer].append(g @ g.T / g.shape[-1])
        j = _dense_jacobian(net, module, xt)
        kernels.append(j @ j.T)

    class Sample:  # the NetSimulation interface of _agree
        def __init__(self, values):
            self.values = np.array(values)

        def mean(self, layer):
            return self.values.mean(axis=0)

        def standard_error(self, layer):
            return self.values.std(axis=0, ddof=1) / math.sqrt(self.values.shape[0])

    for layer in range(len(net.layers)):
        _agree(th.grad[layer], Sample(grads[layer]), layer)
    _agree(th.ntk, Sample(kernels), -1)


def test_new_architecture_weights_module_and_training():
    torch = pytest.importorskip("torch")
    net = _new_architecture(n=16, depth=2)
    w = net.weights((20,), rng=3, n_networks=2)
    assert w.params[0]["weight"].shape == (2, 16, 20)
    assert w.params[2]["skip"].shape == (16, 16)
    _close(net.to_torch(w, 1)(torch.tensor(X_DENSE)).detach().numpy(), net.forward(w, X_DENSE)[1])
    rng = np.random.default_rng(8)
    x = rng.standard_normal((32, 20))
    y = np.tanh(x[:, :1])
    result = train(net, x, y, n_networks=2, rng=9, steps=40, lr=0.05)
    assert result.loss.shape == (2, 41)
    assert np.all(result.loss[:, -1] < 0.7 * result.loss[:, 0])


# ------------------------------------------------------------------------------------------------
# Backends.


def test_sampler_runs_on_every_backend():
    pytest.importorskip("array_api_strict")
    x = np.random.default_rng(1).standard_normal((2, 6, 5, 2))
    net = Network(
        [Conv(8, (3, 3), 1.5, 0.1), ChannelMix(0.5), Residual((Act("tanh"), Conv(8, (3, 3), 1.5))), Replicate(2)]
        + [Act("tanh"), Pool(), Dense(2)]
    )
    ref = net.simulate(x, 3, rng=2)
    strict = net.simulate(x, 3, rng=2, backend="array_api_strict")  # NumPy's numbers for the same rng
    for a, b in zip(strict.second, ref.second):
        assert np.array_equal(a, b)
    pytest.importorskip("torch")
    on_torch = net.simulate(x, 3, rng=2, backend="torch")  # its own numbers from the same children
    assert all(a.shape == b.shape and np.all(np.isfinite(a)) for a, b in zip(on_torch.second, ref.second))


# ------------------------------------------------------------------------------------------------
# Arguments.


def test_bad_descriptions_raise():
    with pytest.raises(TypeError):
        Network([])
    with pytest.raises(TypeError):
        Network([Dense(4), "tanh"])
    with pytest.raises(ValueError, match="sigma_w2"):
        Dense(4, -1.0)
    with pytest.raises(ValueError, match="kernel_shape"):
        Conv(4, (2,))
    with pytest.raises(ValueError, match="gamma"):
        ChannelMix(1.5)
    net = papers.dense_mlp(8, 1)
    with pytest.raises(ValueError, match="exactly one"):
        net.theory()
    with pytest.raises(ValueError, match="spatial"):
        Network([Conv(4, (3, 3))]).theory(np.ones((1, 5, 2)))
    with pytest.raises(ValueError, match="fixed skip"):
        Network([Dense(4), Residual((Dense(4),), skip=lambda g: np.eye(4))]).theory(X_DENSE)
