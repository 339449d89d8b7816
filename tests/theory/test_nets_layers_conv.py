"""meanfield.nets.Conv with zero or circular padding, stride, dilation and groups.

The torch module against the sampler (float64 rounding); the general rule on circular
configurations against the periodic rule of Xiao et al. 2018 (the same moments, NTK and derivative
map to rounding: one group per channel set changes the fan-in, not the per-unit moments); the
position-dependent rule of zero padding against a direct Monte-Carlo of the layers; the derivative
map (the adjoint scatter) against back-propagation through finite networks.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from meanfield.nets import Act, AvgPool, Conv, MaxPool, Network

#: Float64 rounding of a few hundred products summed in another order.
ROUNDING = 1e-13
#: Family-wise false-alarm rate of a theory-vs-simulation test (Bonferroni over its K entries).
ALPHA = 1e-3


def _z_limit(k: int) -> float:
    return float(norm.isf(ALPHA / (2 * k)))


def _agree(theory, mean, se):
    iu = np.triu_indices(theory.shape[0])
    z = (mean - theory)[iu] / se[iu]
    assert np.max(np.abs(z)) < _z_limit(iu[0].size), np.max(np.abs(z))


X = np.random.default_rng(0).standard_normal((2, 6, 5, 4))

GENERAL = [
    Conv(6, (3, 2), 1.5, 0.1, padding=(1, 0), stride=(2, 1), dilation=(1, 2)),
    Conv(6, (3, 3), 1.5, 0.1, groups=2),
    Conv(6, (3, 3), 1.5, 0.1, padding=(2, 1), padding_mode="circular", stride=2),
    Conv(4, (1, 1), 2.0, 0.0, padding=0, stride=2),
    Conv(8, (2, 2), 2.0, 0.05, padding=1, groups=4),
]


@pytest.mark.parametrize("layer", GENERAL, ids=repr)
def test_module_equals_the_sampler(layer):
    torch = pytest.importorskip("torch")
    net = Network([Conv(4, (3, 3), 1.0), Act("relu"), layer])
    w = net.weights(X.shape[1:], rng=1, n_networks=2)
    y = net.forward(w, X)
    yt = net.to_torch(w, 1)(torch.tensor(X)).detach().numpy()
    assert y.shape[2:4] == net.shapes(X.shape[1:])[-1][:2]
    assert np.max(np.abs(y[1] - yt)) <= ROUNDING * np.max(np.abs(yt))


def test_module_equals_torch_conv_with_the_same_weights():
    torch = pytest.importorskip("torch")
    layer = Conv(6, (3, 2), 1.5, 0.1, padding=(1, 2), stride=(2, 1), dilation=(1, 2), groups=2)
    w = Network([layer]).weights(X.shape[1:], rng=2, n_networks=1)
    ref = torch.nn.Conv2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2).double()
    with torch.no_grad():
        ref.weight.copy_(torch.tensor(np.transpose(w.params[0]["kernel"][0], (2, 3, 0, 1))))
        ref.bias.copy_(torch.tensor(w.params[0]["bias"][0]))
    want = ref(torch.tensor(X).permute(0, 3, 1, 2)).permute(0, 2, 3, 1).detach().numpy()
    got = Network([layer]).forward(w, X)[0]
    assert got.shape == want.shape
    assert np.max(np.abs(got - want)) <= ROUNDING * np.max(np.abs(want))


def test_circular_general_path_is_the_periodic_rule():
    periodic = Network([Conv(8, (3, 3), 1.5, 0.1), Act("tanh"), Conv(8, (3, 3), 1.7, 0.1)])
    grouped = Network([Conv(8, (3, 3), 1.5, 0.1, groups=2), Act("tanh"), Conv(8, (3, 3), 1.7, 0.1, groups=4)])
    explicit = Network(
        [
            Conv(8, (3, 3), 1.5, 0.1, padding=1, padding_mode="circular"),
            Act("tanh"),
            Conv(8, (3, 3), 1.7, 0.1, groups=2),
        ]
    )
    ref = periodic.theory(X, ntk=True, backward=True)
    for net in (grouped, explicit):
        th = net.theory(X, ntk=True, backward=True)
        for layer in (1, 3):
            assert np.max(np.abs(th.second[layer] - ref.second[layer])) <= ROUNDING * np.max(ref.second[layer])
        for layer in range(4):
            assert np.max(np.abs(th.grad[layer] - ref.grad[layer])) <= ROUNDING * np.max(ref.grad[layer])
        assert np.max(np.abs(th.ntk - ref.ntk)) <= ROUNDING * np.max(ref.ntk)


def test_zero_padding_reads_zeros_not_phi_of_zero():
    # a single input position, kernel 3, padding 1: the outer taps read padded zeros
    x = np.ones((1, 1, 2))
    net = Network([Conv(4, (1,), 1.0), Act("relu"), Conv(4, (3,), 3.0, 0.0, padding=1)])
    th = net.theory(x)
    q_relu = 0.5 * 1.0  # E relu(h)^2 with h ~ N(0, 1)
    assert math.isclose(th.second[3][0, 0], 3.0 * q_relu / 3.0, rel_tol=1e-12)
    shifted = Network([Conv(4, (1,), 1.0, 1.0), Act("cos"), Conv(4, (3,), 3.0, 0.0, padding=1)])
    want = (1.0 + math.exp(-4.0)) / 2.0  # E cos(h)^2, h ~ N(0, 2); the two padded taps add nothing
    assert math.isclose(shifted.theory(x).second[3][0, 0], want, rel_tol=1e-9)


@pytest.mark.parametrize(
    "layers",
    [
        [
            Conv(48, (3, 2), 1.5, 0.1, padding=(1, 1), stride=(2, 1)),
            Act("relu"),
            Conv(48, (3, 3), 2.0, 0.05, padding=1, dilation=(2, 1)),
        ],
        [
            Conv(48, (3, 3), 1.5, 0.1, padding=2, padding_mode="circular", stride=2),
            Act("tanh"),
            Conv(48, (2, 2), 2.0, 0.05, groups=4, padding=0),
        ],
    ],
    ids=["zeros-stride-dilation", "circular-stride-groups"],
)
def test_theory_matches_monte_carlo(layers):
    net = Network(layers)
    th = net.theory(X)
    sim = net.simulate(X, n_networks=200, rng=3)
    for layer in (1, 3):
        _agree(th.second[layer], sim.mean(layer), sim.standard_error(layer))


def test_derivative_map_matches_backpropagation():
    torch = pytest.importorskip("torch")
    x = X[:, :, :3, :]
    net = Network(
        [
            Conv(32, (3, 3), 1.5, 0.1, padding=1, stride=(2, 1)),
            Act("tanh"),
            Conv(32, (2, 3), 2.0, 0.0, padding=(0, 2), dilation=(1, 2)),
        ]
    )
    th = net.theory(x, backward=True)
    n_networks = 80
    w = net.weights(x.shape[1:], rng=5, n_networks=n_networks)
    out_shape = net.shapes(x.shape[1:])[-1]
    xi = np.random.default_rng(6).standard_normal((n_networks, x.shape[0], *out_shape))
    grads = [[] for _ in range(len(net.layers))]
    for k in range(n_networks):
        module = net.to_torch(w, k)
        h = torch.tensor(x).requires_grad_(True)
        outs = [h]
        for mod in module:
            h = mod(h)
            h.retain_grad()
            outs.append(h)
        (h * torch.tensor(xi[k])).sum().backward()
        for layer in range(len(net.layers)):
            g = outs[layer].grad.numpy().reshape(x.shape[0] * math.prod(outs[layer].shape[1:-1]), -1)
            grads[layer].append(g @ g.T / g.shape[-1])
    # output gradients with identity moments per unit: th.grad[-1] is the identity
    assert np.array_equal(th.grad[-1], np.eye(th.grad[-1].shape[0]))
    for layer in (0, 2):
        vals = np.array(grads[layer])
        _agree(th.grad[layer], vals.mean(axis=0), vals.std(axis=0, ddof=1) / math.sqrt(n_networks))


def test_bad_parameters_raise():
    with pytest.raises(ValueError, match="odd"):
        Conv(4, (2,))
    Conv(4, (2,), padding=0)  # an even kernel with explicit padding
    with pytest.raises(ValueError, match="groups"):
        Conv(6, (3,), groups=4)
    with pytest.raises(ValueError, match="stride"):
        Conv(4, (3, 3), stride=(1, 2, 3))
    with pytest.raises(ValueError, match="padding_mode"):
        Conv(4, (3,), padding=1, padding_mode="reflect")
    with pytest.raises(ValueError, match="padding"):
        Conv(4, (3,), padding="same")
    with pytest.raises(ValueError, match="fit"):
        Network([Conv(4, (5,), padding=0)]).theory(np.ones((1, 3, 2)))
    with pytest.raises(ValueError, match="multiple of groups"):
        Network([Conv(4, (3,), groups=2)]).theory(np.ones((1, 3, 3)))


@pytest.mark.parametrize(
    "make, name",
    [
        (lambda: Conv(4, (3,), padding=1, stride=2.5), "stride"),
        (lambda: Conv(4, (3,), padding=1, dilation="x"), "dilation"),
        (lambda: Conv(4, (3,), padding=1.0), "padding"),
        (lambda: AvgPool(window=2.5), "window"),
        (lambda: MaxPool(window=(2, 2), stride=1.5), "stride"),
        (lambda: AvgPool(window="ab"), "window"),
    ],
)
def test_non_integer_sizes_raise_type_error_naming_the_argument(make, name):
    with pytest.raises(TypeError, match=f"^{name} must be an int"):
        make()
