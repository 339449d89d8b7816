"""Reading a PyTorch model as the library's network description: exact layers, declared variances, no silent skips."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from meanfield import conv, dense, nets  # noqa: E402
from meanfield.pytorch import modules, to_network  # noqa: E402

nn = torch.nn

#: Two evaluations of the same Gaussian integrals in different orders (float64 rounding of a few
#: hundred products).
THEORY_ATOL = 1e-12

SW, SB = 1.7, 0.05


def _kinds(network):
    return [type(layer).__name__ for layer in network.layers]


def test_tanh_mlp_converts_exactly_and_its_theory_is_the_dense_recursion():
    model = modules.mlp(32, 3, "tanh", n_in=6, n_out=5, init="gaussian", sigma_w2=SW, sigma_b2=SB)
    res = to_network(model)
    assert res.complete and res.unconverted == ()
    assert _kinds(res.network) == ["Dense", "Act"] * 3 + ["Dense"]
    assert [layer.width for layer in res.network.layers[::2]] == [32, 32, 32, 5]
    assert all(layer.sigma_w2 == pytest.approx(SW) and layer.sigma_b2 == SB for layer in res.network.layers[::2])
    x = np.random.default_rng(1).standard_normal((3, 6))
    second = res.network.theory(x).second
    cov1 = SW * (x @ x.T) / 6 + SB  # the first layer on the data: sigma_w2 x x^T / n0 + sigma_b2
    expected = dense.propagate(cov1, "tanh", SW, SB, 3)
    np.testing.assert_allclose(second[1], cov1, rtol=0, atol=THEORY_ATOL)
    np.testing.assert_allclose(second[-1], expected[-1], rtol=0, atol=THEORY_ATOL)
    np.testing.assert_allclose(second[3], expected[1], rtol=0, atol=THEORY_ATOL)


def test_circular_tanh_cnn_converts_exactly_and_its_theory_is_the_conv_recursion():
    c, length = 3, 7
    model = modules.periodic_cnn(8, 2, "tanh", n_in=c, n_out=4, init="gaussian", sigma_w2=SW, sigma_b2=SB)
    res = to_network(model)
    assert res.complete, str(res)
    assert _kinds(res.network) == ["Conv", "Act", "Conv", "Act", "Pool", "Flatten", "Dense"]
    x = np.random.default_rng(2).standard_normal((2, length, c))  # channels-last
    second = res.network.theory(x).second
    # first layer on the data: sigma_w2 sum_delta v_delta x_a(alpha+delta).x_b(beta+delta) / c + sigma_b2
    d = x.shape[0]
    cov1 = np.zeros((d, length, d, length))
    for delta in (-1, 0, 1):
        xs = np.roll(x, -delta, axis=1)
        cov1 += np.einsum("aic,bjc->aibj", xs, xs) / (3 * c)
    cov1 = SW * cov1 + SB
    cov2 = conv.multi_input_covariance_map(cov1, "tanh", SW, SB, np.full(3, 1 / 3), shape=length)
    np.testing.assert_allclose(second[1], cov1.reshape(d * length, -1), rtol=0, atol=THEORY_ATOL)
    np.testing.assert_allclose(second[3], cov2.reshape(d * length, -1), rtol=0, atol=THEORY_ATOL)


def test_pytorch_default_law_gives_one_third_and_bias_over_three_fan_in():
    res = to_network(nn.Sequential(nn.Linear(12, 4), nn.ReLU(), nn.Linear(4, 2, bias=False)))
    first, _, last = res.network.layers
    assert (first.sigma_w2, first.sigma_b2, first.law) == (pytest.approx(1 / 3), pytest.approx(1 / 36), "uniform")
    assert last.sigma_b2 == 0.0


def test_residual_mlp_converts_to_identity_skip_blocks():
    res = to_network(modules.residual_mlp(16, 3, "relu", n_in=8, n_out=4))
    assert res.complete, str(res)
    assert _kinds(res.network) == ["Dense", "Residual", "Residual", "Residual", "Dense"]
    block = res.network.layers[1]
    assert block.skip == "identity" and _kinds(nets.Network(block.branch)) == ["Dense", "Act"]
    x = np.random.default_rng(3).standard_normal((2, 8))
    assert np.all(np.isfinite(res.network.theory(x).second[-1]))


def test_reflect_padding_and_unknown_module_are_listed_with_reasons():
    class Odd(nn.Module):
        def forward(self, x):
            return torch.fft.fft(x).real

    model = nn.Sequential(
        nn.Conv1d(2, 4, 3, padding=1, padding_mode="reflect"), nn.Tanh(), Odd(), nn.Flatten(), nn.Linear(4 * 5, 2)
    )
    res = to_network(model, torch.randn(2, 2, 5))
    assert not res.complete
    reasons = {n.op: n.reason for n in res.unconverted}
    assert "reflect" in reasons["Conv1d"]
    assert any("fft" in op or "fft" in r for op, r in reasons.items())
    assert "unconverted" in str(res)


@pytest.mark.parametrize(
    "make, want",
    [
        (lambda: nn.Conv1d(2, 4, 3, padding=1), dict(padding=(1,), padding_mode="zeros")),
        (
            lambda: nn.Conv2d(2, 4, (3, 2), stride=(2, 1), dilation=(1, 2), padding=(1, 0)),
            dict(stride=(2, 1), dilation=(1, 2)),
        ),
        (lambda: nn.Conv2d(4, 6, 3, groups=2, padding=1, padding_mode="circular"), dict(groups=2, padding="circular")),
        (lambda: nn.Conv2d(2, 4, 3, padding="same"), dict(padding=(1, 1))),
        (lambda: nn.Conv3d(2, 4, 1, stride=2), dict(stride=(2, 2, 2), padding=(0, 0, 0))),
    ],
)
def test_general_convolutions_convert_and_equal_the_module(make, want):
    conv_module = make().double()
    n_sp = conv_module.weight.ndim - 2
    x = torch.randn((2, conv_module.in_channels) + (6,) * n_sp, dtype=torch.float64)
    res = to_network(nn.Sequential(conv_module), x)
    assert res.complete, str(res)
    layer = res.network.layers[0]
    for key, value in want.items():
        assert getattr(layer, key) == value
    # the description's sampler with the model's weights is the model
    kernel = conv_module.weight.detach().numpy()
    kernel = np.moveaxis(np.moveaxis(kernel, 0, -1), 0, -1)[None]  # (1, *k, c_out, c_in / groups)
    params = {"kernel": kernel, "bias": conv_module.bias.detach().numpy()[None]}
    from meanfield.backend import get_backend

    xl = np.moveaxis(x.numpy(), 1, -1)
    got = layer.apply(params, xl[None], get_backend("numpy"))[0]
    want_y = np.moveaxis(conv_module(x).detach().numpy(), 1, -1)
    assert got.shape == want_y.shape and np.max(np.abs(got - want_y)) <= 1e-12


def test_padded_pooling_and_torch_flatten_convert():
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(2, 4, 3, padding=1)
            self.pool = nn.MaxPool2d(3, 2, padding=1)
            self.avg = nn.AvgPool2d(3, 1, padding=1, count_include_pad=False)
            self.fc = nn.Linear(4 * 9, 2)

        def forward(self, x):
            x = self.avg(self.pool(torch.relu(self.conv(x))))
            return self.fc(torch.flatten(x, 1))

    res = to_network(Net())
    assert res.complete, str(res)
    assert _kinds(res.network) == ["Conv", "MaxPool", "AvgPool", "Flatten", "Dense"]
    pool, avg = res.network.layers[1], res.network.layers[2]
    assert (pool.padding, pool.act) == ((1, 1), "relu")  # the activation before max pooling is fused
    assert (avg.padding, avg.count_include_pad) == ((1, 1), False)
    tr = to_network(nn.Sequential(nn.Flatten(0)), torch.randn(2, 3))
    assert not tr.complete


def test_hyper_residual_sums_are_listed_and_give_no_network():
    res = to_network(modules.hyper_residual_mlp(16, 3, "relu", n_in=8, n_out=4))
    assert not res.complete and res.network is None
    assert all(n.reason for n in res.unconverted)


def test_transformer_encoder_converts_to_attention_and_norm_blocks():
    layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
    res = to_network(nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval(), torch.randn(2, 5, 16))
    assert res.complete, str(res)
    assert _kinds(res.network) == ["Residual", "LayerNorm", "Residual", "LayerNorm"] * 2
    attn = res.network.layers[0].branch[0]
    # PyTorch's defaults: xavier_uniform_ on the packed (3e, e) projection, Linear's default out-projection
    assert isinstance(attn, nets.SelfAttention) and (attn.width, attn.heads) == (16, 2)
    assert attn.sigma_qk2 == pytest.approx(0.5) and attn.sigma_o2 == pytest.approx(1 / 3)


def test_resnet18_converts_completely_with_projection_skips():
    torchvision = pytest.importorskip("torchvision")
    res = to_network(torchvision.models.resnet18().eval())
    assert res.complete, str(res)
    blocks = [layer for layer in res.network.layers if isinstance(layer, nets.Residual)]
    assert len(blocks) == 8
    assert [isinstance(b.skip, tuple) for b in blocks] == [False, False, True, False, True, False, True, False]
    down = blocks[2].skip
    assert [type(x).__name__ for x in down] == ["Conv", "BatchNorm"] and down[0].stride == (2, 2)


#: Re-initialisations of the q test (each a Monte-Carlo sample of every compared q).
RESNET_DRAWS = 16
#: Family-wise false-alarm rate of the q test (Bonferroni over its comparisons).
RESNET_ALPHA = 1e-3


def test_resnet18_theory_q_per_block_matches_reinitialised_models():
    """The converted resnet18's q at every block's output (2 inputs of 3x8x8) against re-initialised models.

    Weights ``N(0, 2 / fan_in)`` (recorded by :func:`meanfield.pytorch.init.mean_field_normal_`,
    re-drawn with the same law per sample). The theory carries the non-Gaussian stream of the
    post-activation blocks by its law (max-pooled features plus fresh branches); finite widths
    (64 to 512 channels) bias q by O(1/64), below the Monte-Carlo standard error of 16 draws
    (about 4%): the tolerance is that standard error.
    """
    torchvision = pytest.importorskip("torchvision")
    from scipy.stats import norm

    from meanfield.pytorch.init import mean_field_normal_

    model = torchvision.models.resnet18().eval().double()
    x = torch.randn(2, 3, 8, 8, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    weights = [m.weight for m in model.modules() if isinstance(m, nn.Conv2d)]
    gen = torch.Generator().manual_seed(0)
    for m in model.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            mean_field_normal_(m.weight, 2.0, generator=gen)
    res = to_network(model)
    assert res.complete, str(res)
    th = res.network.theory(np.moveaxis(x.numpy(), 1, -1))
    ends = [i + 2 for i, layer in enumerate(res.network.layers) if isinstance(layer, nets.Residual)]  # the ReLU after
    want = np.array([np.diagonal(th.second[i]).reshape(2, -1).mean(axis=1) for i in ends])  # (8 blocks, 2 inputs)
    blocks = [b for stage in (model.layer1, model.layer2, model.layer3, model.layer4) for b in stage]
    outs: dict = {}
    hooks = [b.register_forward_hook(lambda m, a, o, k=k: outs.__setitem__(k, o)) for k, b in enumerate(blocks)]
    samples = []
    with torch.no_grad():
        for seed in range(1, RESNET_DRAWS + 1):
            gen = torch.Generator().manual_seed(seed)
            for w in weights:
                w.normal_(0.0, float(np.sqrt(2.0 / w[0].numel())), generator=gen)
            model(x)
            samples.append([(outs[k] ** 2).mean(dim=(1, 2, 3)).numpy() for k in range(len(blocks))])
    for h in hooks:
        h.remove()
    q = np.array(samples)  # (draws, blocks, inputs)
    mean, se = q.mean(axis=0), q.std(axis=0, ddof=1) / np.sqrt(RESNET_DRAWS)
    assert np.max(np.abs(mean - want) / se) < norm.isf(RESNET_ALPHA / (2 * want.size)), (mean, want, se)


def test_vit_tiny_lists_what_is_unconverted_with_reasons():
    timm = pytest.importorskip("timm")
    model = timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=32, patch_size=16)
    res = to_network(model.eval(), torch.randn(1, 3, 32, 32))
    assert not res.complete and res.unconverted
    assert all(n.reason for n in res.unconverted)


def test_norms_dropout_and_pooling_convert_with_the_modules_modes():
    model = nn.Sequential(
        nn.Linear(6, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Dropout(0.2), nn.LayerNorm(8), nn.Linear(8, 3)
    ).eval()
    res = to_network(model)
    assert res.complete, str(res)
    assert _kinds(res.network) == ["Dense", "BatchNorm", "Act", "Dropout", "LayerNorm", "Dense"]
    bn, drop = res.network.layers[1], res.network.layers[3]
    assert (bn.train, bn.running_mean, bn.running_var) == (False, 0.0, 1.0)
    assert (drop.p, drop.train) == (pytest.approx(0.2), False)
    cnn = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1, padding_mode="circular"), nn.Tanh(), nn.AvgPool2d(2))
    res = to_network(cnn)
    assert res.complete and _kinds(res.network) == ["Conv", "Act", "AvgPool"]
    assert res.network.layers[0].kernel_shape == (3, 3)


@pytest.mark.parametrize(
    "flat, converted",
    [
        (lambda x: torch.flatten(x, 1), True),
        (lambda x: x.flatten(1), True),
        (lambda x: x.flatten(start_dim=1), True),
        (lambda x: torch.flatten(x, 1, -1), True),
        (lambda x: torch.flatten(x, 2).sum(-1), False),
    ],
)
def test_trace_records_flatten_arguments(flat, converted):
    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv1d(2, 4, 3, padding=1)
            self.fc = nn.Linear(4 * 5 if converted else 4, 2)

        def forward(self, x):
            return self.fc(flat(torch.tanh(self.conv(x))))

    res = to_network(Net(), torch.randn(2, 2, 5))
    node = next(n for n in res.trace.nodes if n.op == "flatten")
    assert node.args and all(a != "<traced>" for a in node.args)
    assert res.complete == converted
    if converted:
        assert _kinds(res.network) == ["Conv", "Act", "Flatten", "Dense"]
    else:
        assert any("flatten(start_dim=2" in n.reason for n in res.unconverted)
