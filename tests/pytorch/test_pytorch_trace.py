"""Tracing real models into graphs: detected activations, no silent skips, critical_init_ and a non-destructive audit."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from meanfield.pytorch import audit, critical_init_  # noqa: E402
from meanfield.pytorch.init import edge_of_chaos, stable_sigma_b2  # noqa: E402
from meanfield.pytorch.trace import trace  # noqa: E402

nn = torch.nn
F = nn.functional

#: Standard errors allowed in the statistical checks (the project's level).
Z = 4.5
#: Relative rounding of float32 sums of a few thousand squares.
FLOAT32_RTOL = 1e-5
#: Absolute error allowed on chi_1 and the q-map by independent adaptive quadrature (its own error ~1e-13;
#: the library's Gauss-Hermite rule for GELU at q* ~ 9 agrees to ~1e-10).
QUADRATURE_ATOL = 1e-8


def _gen(seed):
    return torch.Generator().manual_seed(seed)


class Mixer(nn.Module):
    """Pre-LayerNorm residual MLP mixer with a functional GELU."""

    def __init__(self, d=16, depth=3):
        super().__init__()
        self.norms = nn.ModuleList([nn.LayerNorm(d) for _ in range(depth)])
        self.fc1 = nn.ModuleList([nn.Linear(d, 4 * d) for _ in range(depth)])
        self.fc2 = nn.ModuleList([nn.Linear(4 * d, d) for _ in range(depth)])
        self.head = nn.Linear(d, 3)

    def forward(self, x):
        for norm, a, b in zip(self.norms, self.fc1, self.fc2):
            x = x + b(F.gelu(a(norm(x))))
        return self.head(x)


class Methods(nn.Module):
    """Activations written as tensor methods and torch functions."""

    def __init__(self):
        super().__init__()
        self.a, self.b, self.c, self.d = nn.Linear(8, 8), nn.Linear(8, 8), nn.Linear(8, 8), nn.Linear(8, 2)

    def forward(self, x):
        x = self.a(x).relu()
        x = torch.tanh(self.b(x))
        x = F.silu(self.c(x))
        return self.d(x)


def _cnn():
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 16, 3, padding=1), nn.ReLU(), nn.Flatten(),
        nn.Linear(16 * 8 * 8, 10),
    )  # fmt: skip


def _mlp(act):
    return nn.Sequential(nn.Linear(16, 32), act, nn.Linear(32, 32), act, nn.Linear(32, 4))


def _encoder():
    layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
    return nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)


def _weight_modules(model):
    return {n for n, m in model.named_modules() if isinstance(m, (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d))}


def _assert_no_silent_skip(model, tr):
    """Every weight module is traced as a weight layer or lies inside a module listed as unsupported."""
    traced = {w.name for w in tr.weight_layers}
    listed = [n.module for n in tr.unsupported if n.module]
    for name in _weight_modules(model) - traced:
        assert any(name.startswith(p + ".") for p in listed), f"{name} neither traced nor listed\n{tr.table()}"
    for n in tr.unsupported:
        assert n.reason and n.op


def test_resnet18_convolutions_consume_relu_and_branches_end_at_conv2():
    torchvision = pytest.importorskip("torchvision")
    model = torchvision.models.resnet18()
    tr = trace(model)
    assert tr.method == "fx"
    acts = tr.activations()
    assert set(acts) == _weight_modules(model)
    assert set(acts.values()) == {"relu"}  # every conv and the fc consume a ReLU (conv1: the one after it)
    assert tr.residual_adds == 8
    ends = {w.name for w in tr.weight_layers if w.branch_end}
    assert ends == {f"layer{i}.{j}.conv2" for i in range(1, 5) for j in range(2)}
    assert tr.layer("layer1.0.conv2").branch_norm == "layer1.0.bn2"
    _assert_no_silent_skip(model, tr)


def test_vit_fc2_consumes_gelu_and_attention_projections_are_linear():
    timm = pytest.importorskip("timm")
    model = timm.create_model("vit_tiny_patch16_224", pretrained=False)
    tr = trace(model)
    acts = tr.activations()
    assert len(acts) == 50
    for i in range(12):
        assert acts[f"blocks.{i}.mlp.fc2"] == "gelu"
        assert acts[f"blocks.{i}.attn.qkv"] == "linear"
        assert acts[f"blocks.{i}.mlp.fc1"] == "linear"
        assert acts[f"blocks.{i}.attn.proj"] == "linear"
    assert acts["patch_embed.proj"] == "linear" and acts["head"] == "linear"
    assert tr.residual_adds == 24
    assert sum(n.kind == "attention" for n in tr.unsupported) == 12
    _assert_no_silent_skip(model, tr)


def test_transformer_encoder_falls_back_to_hooks_and_sees_the_functional_relu():
    model = _encoder()
    with pytest.raises(ValueError, match="example_inputs"):
        trace(model)
    tr = trace(model, torch.randn(2, 5, 16, generator=_gen(0)))
    assert tr.method == "hooks" and tr.fx_error
    acts = tr.activations()
    assert acts == {"layers.0.linear1": "linear", "layers.0.linear2": "relu", "layers.1.linear1": "linear",
                    "layers.1.linear2": "relu"}  # fmt: skip
    assert tr.residual_adds == 4  # attention and feed-forward branches
    assert {n.module for n in tr.unsupported} == {"layers.0.self_attn", "layers.1.self_attn"}
    _assert_no_silent_skip(model, tr)


def test_functional_and_method_activations_and_sequential_gelu_silu():
    tr = trace(Mixer())
    acts = tr.activations()
    assert [acts[f"fc2.{i}"] for i in range(3)] == ["gelu"] * 3
    assert [acts[f"fc1.{i}"] for i in range(3)] == ["linear"] * 3
    assert tr.residual_adds == 3 and not tr.unsupported
    assert trace(Methods()).activations() == {"a": "relu", "b": "relu", "c": "tanh", "d": "swish"}
    assert set(trace(_mlp(nn.GELU())).activations().values()) == {"gelu"}
    assert set(trace(_mlp(nn.SiLU())).activations().values()) == {"swish"}
    # the same model traced on a real forward pass gives the same pairing
    assert trace(Methods(), torch.randn(2, 8), method="hooks").activations() == trace(Methods()).activations()


def test_identity_is_not_an_activation_and_dropout_is_walked_through():
    net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Dropout(0.1), nn.Identity(), nn.Linear(8, 2))
    assert trace(net).activations() == {"0": "tanh", "4": "tanh"}


def _gaussian_mean(f, q):
    """E f(sqrt(q) z), z ~ N(0, 1), by adaptive quadrature (scipy.integrate.quad) on |z| <= 40."""
    from scipy.integrate import quad

    g = lambda z: f(math.sqrt(q) * z) * math.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)  # noqa: E731
    return quad(g, -40, 40, limit=400, epsabs=1e-14, epsrel=1e-13, points=[0.0])[0]


def _gelu_chi_1(sigma_w2, q):
    """sigma_w2 E gelu'(sqrt(q) z)^2, gelu'(x) = Phi(x) + x phi(x)."""
    from scipy.special import ndtr

    return sigma_w2 * _gaussian_mean(lambda x: (ndtr(x) + x * math.exp(-0.5 * x * x) / math.sqrt(2 * math.pi)) ** 2, q)


def _gelu_qmap(sigma_w2, sigma_b2, q):
    from scipy.special import ndtr

    return sigma_w2 * _gaussian_mean(lambda x: (x * ndtr(x)) ** 2, q) + sigma_b2


def test_gelu_edge_of_chaos_is_a_stable_nontrivial_fixed_point_or_a_clear_error():
    for sb in (0.0, 0.05):  # q* = 0 (sb = 0) or a repelling q* ~ 0.7: ValueError naming a sigma_b2 that works
        with pytest.raises(ValueError, match="sigma_b2 >= 0.1"):
            edge_of_chaos("gelu", sb)
    point = edge_of_chaos("gelu", 0.3)
    assert point.q_star > 1
    assert _gelu_chi_1(point.sigma_w2, point.q_star) == pytest.approx(1.0, abs=QUADRATURE_ATOL)
    assert _gelu_qmap(point.sigma_w2, 0.3, point.q_star) == pytest.approx(point.q_star, abs=QUADRATURE_ATOL)
    # stable: the q-map (independent quadrature) moves q on either side towards q*
    for q0 in (0.7 * point.q_star, 1.5 * point.q_star):
        assert abs(_gelu_qmap(point.sigma_w2, 0.3, q0) - point.q_star) < abs(q0 - point.q_star)
    with pytest.raises(ValueError, match="layer '0'"):
        critical_init_(_mlp(nn.GELU()), sigma_b2=0.0)
    x = 2.0 * torch.randn(64, 16, generator=_gen(9))
    report = critical_init_(_mlp(nn.GELU()), sigma_b2="auto", generator=_gen(0), example_inputs=x)
    sb = stable_sigma_b2("gelu")
    assert {r.sigma_b2 for r in report.layers} == {sb}
    # the layer fed by the data starts the signal at q*: sigma_w2 q_in + sigma_b2 = q*
    first, point = report.layers[0], edge_of_chaos("gelu", sb)
    q_in = float(x.double().pow(2).mean())
    assert first.sigma_w2 * q_in + sb == pytest.approx(point.q_star, rel=1e-12)
    assert report.layers[1].sigma_w2 == pytest.approx(point.sigma_w2, rel=1e-12)


@pytest.mark.parametrize("kernel", ["delta_orthogonal", "orthogonal"])
@pytest.mark.parametrize("c_in,c_out", [(3, 16), (16, 4)])
def test_rectangular_orthogonal_convolutions_have_fan_in_mean_square_sigma_w2(kernel, c_in, c_out):
    conv = nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1), nn.ReLU(), nn.Conv2d(c_out, 2, 1))
    report = critical_init_(conv, kernel=kernel, generator=_gen(1))
    w = conv[0].weight.detach().double()
    sw = report.layers[0].sigma_w2
    assert sw == pytest.approx(2.0)  # ReLU after it
    fan_in = c_in * 9
    # orthonormal columns times sqrt(sw c_out / c_in), or orthonormal rows times sqrt(sw): exact
    assert fan_in * float(w.pow(2).mean()) == pytest.approx(sw, rel=FLOAT32_RTOL)
    if c_in > c_out:  # orthonormal rows: every output unit has fan_in * E W^2 = sw
        rows = w.reshape(c_out, -1).pow(2).sum(dim=1)
        assert torch.allclose(rows, torch.full_like(rows, sw), rtol=FLOAT32_RTOL)


def test_gaussian_first_conv_3_to_16_has_fan_in_mean_square_sigma_w2():
    conv = _cnn()
    critical_init_(conv, kernel="gaussian", generator=_gen(2))
    w = conv[0].weight.detach().double()
    n = w.numel()
    measured = w[0].numel() * float(w.pow(2).mean())
    # mean of n squared Gaussians: relative standard error sqrt(2 / n)
    assert abs(measured - 2.0) <= Z * 2.0 * math.sqrt(2.0 / n)


def test_critical_init_on_the_zoo_initialises_every_traced_layer_and_lists_the_rest():
    models = [(Mixer(), None), (_cnn(), None), (_encoder(), torch.randn(2, 5, 16, generator=_gen(3)))]
    for model, x in models:
        report = critical_init_(model, sigma_b2="auto", generator=_gen(4), example_inputs=x)
        traced = {w.name for w in trace(model, x).weight_layers}
        assert set(report.initialised) == traced
    enc_report = critical_init_(_encoder(), sigma_b2=0.05, example_inputs=torch.randn(2, 5, 16))
    assert {r.name for r in enc_report.layers if r.action == "left alone"} == {
        "layers.0.self_attn",
        "layers.1.self_attn",
    }
    mixer = Mixer()
    report = critical_init_(mixer, sigma_b2=0.3, generator=_gen(5))
    fc2 = next(r for r in report.layers if r.name == "fc2.0")
    # pre-norm branches (the stream enters through a LayerNorm): variance factor 1 / sqrt(L), L = 3,
    # on the weights and the bias alike
    assert trace(mixer).layer("fc2.0").branch_prenorm
    assert fc2.activation == "gelu" and fc2.branch_factor == pytest.approx(1 / math.sqrt(3))
    assert fc2.sigma_w2 == pytest.approx(edge_of_chaos("gelu", 0.3).sigma_w2 / math.sqrt(3))
    assert fc2.sigma_b2 == pytest.approx(0.3 / math.sqrt(3))


def test_resnet_branch_end_norms_are_scaled_and_frozen_layers_left_alone():
    torchvision = pytest.importorskip("torchvision")
    model = torchvision.models.resnet18()
    model.layer1[0].conv1.weight.requires_grad_(False)
    before = model.layer1[0].conv1.weight.detach().clone()
    report = critical_init_(model, generator=_gen(6))
    assert "layer1.0.conv1" in report.frozen
    assert torch.equal(model.layer1[0].conv1.weight, before)
    bn2 = model.layer1[0].bn2.weight.detach()
    assert torch.allclose(bn2, torch.full_like(bn2, 1 / math.sqrt(8)))
    assert torch.all(model.bn1.weight == 1)


def test_audit_leaves_the_users_model_unchanged_and_counts_checked_layers():
    net = nn.Sequential(nn.Linear(64, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 4))
    critical_init_(net, sigma_b2=0.05, generator=_gen(7))
    state = {k: v.clone() for k, v in net.state_dict().items()}
    result = audit(net, "digits", n_networks=3, rng=0)
    assert all(torch.equal(state[k], v) for k, v in net.state_dict().items())
    assert result.n_checked == result.n_weight_layers == 3
    plain = nn.Sequential(nn.Linear(64, 16), nn.BatchNorm1d(16), nn.Tanh(), nn.Linear(16, 4))
    state = {k: v.clone() for k, v in plain.state_dict().items()}
    result = audit(plain, "digits", n_networks=2, rng=0)
    assert all(torch.equal(state[k], v) for k, v in plain.state_dict().items())
    # the BatchNorm stops the end-to-end theory; the layer-local rows check both layers
    assert [r.verdict for r in result.rows if r.quantity == "q"] == ["ok", "no theory"]
    assert result.n_checked == 2 and result.n_weight_layers == 2
    assert "2/2 weight layers checked" in result.summary()


def test_audit_bad_inputs_raise_value_errors():
    net = nn.Sequential(nn.Linear(64, 8), nn.Tanh(), nn.Linear(8, 2))
    with pytest.raises(ValueError, match="inputs"):
        audit(net, torch.randn(4, 63), n_networks=2)
    with torch.device("meta"):
        meta = nn.Sequential(nn.Linear(64, 8), nn.Tanh(), nn.Linear(8, 2))
    with pytest.raises(ValueError, match="meta"):
        audit(meta, n_networks=2)
    unflat = nn.Sequential(nn.Unflatten(1, (1, 8, 8)), nn.Conv2d(1, 4, 3, padding=1), nn.Tanh(), nn.Flatten(),
                           nn.Linear(256, 2))  # fmt: skip
    result = audit(unflat, "digits", n_networks=2, rng=0)
    assert result.n_weight_layers == 2
    with pytest.raises(ValueError, match="inputs"):
        audit(unflat, torch.randn(4, 1, 8, 8), n_networks=2)


def test_audit_of_a_model_without_theory_does_not_pass():
    # a strided convolution stops the end-to-end theory; the layer-local rows still check it
    net = nn.Sequential(nn.Conv2d(1, 4, 3, stride=2, padding=1), nn.Tanh(), nn.Flatten(), nn.Linear(64, 2))
    report = critical_init_(net, generator=_gen(8))
    assert report.layers[0].construction == "orthogonal"  # dense orthogonal over the flattened fan-in
    result = audit(net, "digits", n_networks=2, rng=0)
    assert {r.verdict for r in result.rows if r.quantity == "q"} == {"no theory"}
    assert result.n_checked == 2 and result.n_weight_layers == 2 and result.passed
    # deterministic weights (ConstNet): no mean-field theory at all, nothing compared, so no pass
    from meanfield.pytorch import constnet_, tag_layers_

    const = nn.Sequential(nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 64))
    for m in (const[0], const[2]):
        constnet_(m.weight)
    result = audit(tag_layers_(const), "digits", n_networks=2, rng=0)
    assert result.n_checked == 0 and result.n_weight_layers == 2
    assert not result.failed and not result.passed


def test_pre_norm_branches_are_told_from_post_norm_and_plain_ones():
    mixer = trace(Mixer())
    assert all(w.branch_prenorm == w.name.startswith("fc2") for w in mixer.weight_layers)
    x = torch.randn(2, 5, 16, generator=_gen(7))
    post = trace(_encoder(), x)  # post-LN: the norm follows the addition
    assert any(w.branch_end for w in post.weight_layers)
    assert not any(w.branch_prenorm for w in post.weight_layers)
    assert all(w.branch_postnorm for w in post.weight_layers if w.branch_end)
    assert not any(w.branch_postnorm for w in mixer.weight_layers)
    torchvision = pytest.importorskip("torchvision")
    resnet = trace(torchvision.models.resnet18())
    assert any(w.branch_end for w in resnet.weight_layers)
    assert not any(w.branch_prenorm or w.branch_postnorm for w in resnet.weight_layers)
