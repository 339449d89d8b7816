"""meanfield.pytorch.audit on real architectures: the layer-local check of ``q`` (each weight layer's
output second moment predicted from its measured input) covers every weight layer of torchvision's
ResNet-18, timm's ViT-tiny and ``nn.TransformerEncoder``; it passes after ``critical_init_``, flags a
layer scaled by hand (only that layer), resolves a 10 % deviation of ``q`` at the first layer with the
default number of re-initialisations, and is exact for strided, dilated, grouped, zero- or
reflect-padded convolutions."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from meanfield.pytorch import audit, critical_init_, mlp, reinitialise_  # noqa: E402
from meanfield.pytorch.audit import DETECTABLE_Q_DEVIATION, N_INITS_MIN  # noqa: E402

#: Fraction of the weight-layer nodes the audit must check (verdict ok or FAIL).
MIN_CHECKED = 0.9


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _local(result, layer=None):
    return [r for r in result.rows if r.quantity == "q_layer" and (layer is None or r.layer == layer)]


def _recorded_then(scale_layer, factor):
    """init(model, generator): every layer's recorded initialiser, then one layer's weight times ``factor``."""

    def init(model, generator):
        for m in model.modules():
            reinitialise_(m, generator=generator)
        model.get_submodule(scale_layer).weight.mul_(factor)

    return init


def _assert_all_checked_pass(result):
    assert result.checked_fraction >= MIN_CHECKED, result.summary()
    assert all(r.verdict == "ok" for r in _local(result)), "\n" + result.table()
    assert not result.failed, "\n" + result.table()


def _resnet18():
    tv = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    return tv.models.resnet18(num_classes=10)


def test_resnet18_every_layer_checked_passes_after_critical_init_and_flags_a_layer_scaled_by_3():
    model = _resnet18()
    x = torch.randn(4, 3, 16, 16, generator=_gen(1))
    critical_init_(model, kernel="gaussian", generator=_gen(0))  # orthogonal kernels: QR-bound re-draws
    result = audit(model, x, rng=0, backward=False)
    assert result.n_weight_layers == 21 and result.n_checked == 21
    _assert_all_checked_pass(result)
    bad = audit(model, x, n_networks=4, rng=0, backward=False, init=_recorded_then("layer2.0.conv1", 3.0))
    # the check is layer-local: the scaled layer fails, the layers after it (fed its output) do not
    assert bad.flagged_layers == ("layer2.0.conv1",), "\n" + bad.table()


def test_resnet18_with_pytorch_default_init_is_checked():
    model = _resnet18()
    result = audit(model, torch.randn(4, 3, 16, 16, generator=_gen(2)), rng=1, backward=False)
    _assert_all_checked_pass(result)


def test_vit_tiny_every_layer_checked_and_passes_after_critical_init():
    timm = pytest.importorskip("timm")
    torch.manual_seed(0)
    model = timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=32, num_classes=10)
    x = torch.randn(4, 3, 32, 32, generator=_gen(3))
    critical_init_(model, sigma_b2="auto", kernel="gaussian", generator=_gen(0), example_inputs=x)  # GELU needs a bias
    result = audit(model, x, rng=0, backward=False)
    assert result.n_weight_layers == 50  # patch embedding, 12 x (qkv, proj, fc1, fc2), head
    _assert_all_checked_pass(result)


def test_transformer_encoder_every_layer_checked_and_passes_after_critical_init():
    layer = torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.1, batch_first=True)
    model = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
    x = torch.randn(4, 6, 32, generator=_gen(4))
    critical_init_(model, generator=_gen(0), example_inputs=x)
    result = audit(model, x, rng=0)
    # every Linear module called, and per attention the q, k, v projections of its packed
    # in_proj_weight and its out-projection
    assert result.n_weight_layers == 4 + 2 * 4
    _assert_all_checked_pass(result)


def test_mlp_flags_a_layer_scaled_by_3_and_a_10_percent_deviation_at_layer_1():
    net = mlp(128, 6, "tanh", n_in=64, n_out=10, init="critical", sigma_b2=0.05, generator=_gen(0))
    clean = audit(net, "digits", rng=0, backward=False, init=_recorded_then("0", 1.0))
    assert clean.n_inits >= N_INITS_MIN
    _assert_all_checked_pass(clean)
    scaled = audit(net, "digits", rng=0, backward=False, init=_recorded_then("4", 3.0))
    assert [r.verdict for r in _local(scaled, "4")] == ["FAIL"]
    assert all(r.verdict == "ok" for r in _local(scaled) if r.layer != "4")
    # q of the first layer DETECTABLE_Q_DEVIATION too high: flagged with the default n_inits
    dev = audit(net, "digits", rng=0, backward=False, init=_recorded_then("0", math.sqrt(1 + DETECTABLE_Q_DEVIATION)))
    (row,) = _local(dev, "0")
    assert row.verdict == "FAIL" and row.measured > row.theory, row


class _Convs(torch.nn.Module):
    """Convolutions whose borders matter: stride, dilation, groups, zero and reflect padding, 1d/2d/3d."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.b = torch.nn.Conv2d(8, 8, 3, dilation=2, padding=2, groups=2)
        self.c = torch.nn.Conv2d(8, 6, (2, 3), padding=(1, 1), padding_mode="reflect")
        self.d = torch.nn.Conv1d(6, 6, 3, padding=1, padding_mode="circular")
        self.e = torch.nn.Conv3d(1, 4, 3, padding=1)

    def forward(self, x):
        h = torch.relu(self.c(torch.tanh(self.b(torch.tanh(self.a(x))))))
        g = torch.tanh(self.d(h.flatten(2)))
        return self.e(g[:, None, None]).mean(dim=(1, 2))


def test_strided_dilated_grouped_and_padded_convolutions_are_exact():
    model = _Convs()
    x = 2.0 + torch.randn(4, 3, 7, 7, generator=_gen(5))  # a mean: the zero-padded borders see less
    result = audit(model, x, rng=0, backward=False)
    rows = _local(result)
    assert [r.layer for r in rows] == ["a", "b", "c", "d", "e"]
    assert all(r.verdict == "ok" for r in rows), "\n" + result.table()
    # control: the prediction that ignores the zero-padded borders of the first layer is rejected
    sw, sb = 1.0 / 3.0, 1.0 / (3.0 * 27)
    interior = sw * float(x.double().pow(2).sum(dim=1).mean()) / 3.0 + sb
    assert abs(rows[0].measured - interior) > rows[0].tolerance


def test_default_n_inits_follows_the_power_rule():
    # a single output unit gives no standard error from the units: the upper bound is used
    narrow = torch.nn.Sequential(torch.nn.Linear(64, 1))
    assert audit(narrow, "digits", rng=0, backward=False).n_inits == 200
    wide = torch.nn.Sequential(torch.nn.Linear(64, 512))
    assert audit(wide, "digits", rng=0, backward=False).n_inits == N_INITS_MIN
    assert np.isfinite([r.measured for r in audit(wide, "digits", n_networks=3, rng=0).rows]).all()


def test_embedding_rows_are_checked_with_their_padding_tokens():
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Embedding(50, 32, padding_idx=0), torch.nn.Linear(32, 8))
    tokens = torch.randint(1, 50, (4, 12), generator=_gen(6))
    tokens[:, 6:] = 0  # half the positions are padding: their rows are zero
    result = audit(net, tokens, rng=0)
    rows = _local(result)
    assert [r.layer for r in rows] == ["0", "1"] and all(r.verdict == "ok" for r in rows), result.table()
    assert rows[0].theory == 0.5  # N(0, 1) rows (PyTorch's default), looked up at half the positions
    # control: ignoring the padding (every position an N(0, 1) row) is rejected
    assert abs(rows[0].measured - 1.0) > rows[0].tolerance
