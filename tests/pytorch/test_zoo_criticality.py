"""After ``critical_init_``, real models sit at the edge of chaos.

The gradient norm at the first weight layer's output over its norm at the last weight layer's
output (a Gaussian cotangent at the model's output) lies within [0.5, 2] (no vanishing or
exploding gradients), and the output correlation of two nearby inputs (input correlation
``1 / sqrt(1 + EPS^2)``) is neither collapsed (> 0.5) nor 1. Random weights only; small inputs,
one seed (the measurement of ``benchmarks/model_zoo.py``).
"""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")
timm = pytest.importorskip("timm")

import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

from meanfield.pytorch import critical_init_  # noqa: E402

EPS = 0.1
#: The band of the criterion, [0.5, 2], narrowed by a margin of 10 %.
RATIO_LOW, RATIO_HIGH = 0.55, 1.8
#: Correlation bounds: above 0.5 (not collapsed) with a margin, below 1 (the outputs still differ).
CORR_LOW, CORR_HIGH = 0.6, 1.0


class Mixer(nn.Module):
    """Pre-LayerNorm residual MLP with a functional GELU."""

    def __init__(self, d=64, depth=8):
        super().__init__()
        self.norms = nn.ModuleList([nn.LayerNorm(d) for _ in range(depth)])
        self.fc1 = nn.ModuleList([nn.Linear(d, 4 * d) for _ in range(depth)])
        self.fc2 = nn.ModuleList([nn.Linear(4 * d, d) for _ in range(depth)])
        self.head = nn.Linear(d, 10)

    def forward(self, x):
        for norm, a, b in zip(self.norms, self.fc1, self.fc2):
            x = x + b(F.gelu(a(norm(x))))
        return self.head(x)


def _mlp(act, width=128, depth=20):
    layers = [nn.Linear(32, width), act()]
    for _ in range(depth - 2):
        layers += [nn.Linear(width, width), act()]
    return nn.Sequential(*layers, nn.Linear(width, 10))


def _cnn(depth=10):
    layers = [nn.Conv2d(3, 16, 3, padding=1), nn.ReLU()]
    for _ in range(depth - 2):
        layers += [nn.Conv2d(16, 16, 3, padding=1), nn.ReLU()]
    return nn.Sequential(*layers, nn.Flatten(), nn.Linear(16 * 8 * 8, 10))


ZOO = [
    ("resnet18", lambda: torchvision.models.resnet18(), (3, 32, 32)),
    ("vit_tiny", lambda: timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=64), (3, 64, 64)),
    ("mixer", Mixer, (64,)),
    ("mlp_gelu", lambda: _mlp(nn.GELU), (32,)),
    ("mlp_silu", lambda: _mlp(nn.SiLU), (32,)),
    ("cnn", _cnn, (3, 8, 8)),
]


def _weight_modules(model):
    return [m for m in model.modules() if isinstance(m, (nn.Linear, nn.Conv2d))]


def _measure(model, x, seed):
    model.eval()
    outs, order = {}, []

    def hook(module, _inp, out):
        if module in outs or not isinstance(out, torch.Tensor):
            return
        out.retain_grad()
        outs[module] = out
        order.append(module)

    handles = [m.register_forward_hook(hook) for m in _weight_modules(model)]
    try:
        y = model(x)
    finally:
        for h in handles:
            h.remove()
    g = torch.Generator().manual_seed(seed)
    y.backward(torch.randn(y.shape, generator=g))
    first, last = (float(outs[m].grad.detach().norm()) for m in (order[0], order[-1]))
    with torch.no_grad():
        noise = torch.randn(x.shape, generator=g)
        y1 = model(x).flatten(1).double()
        y2 = model(x + EPS * noise).flatten(1).double()
        corr = float(F.cosine_similarity(y1, y2, dim=1).mean())
    return first / last, corr


@pytest.mark.parametrize("name, build, shape", ZOO, ids=[z[0] for z in ZOO])
def test_critical_init_puts_the_zoo_in_the_gradient_band_without_collapse(name, build, shape):
    torch.manual_seed(1000)
    model = build()
    x = torch.randn((4,) + shape, generator=torch.Generator().manual_seed(0))
    critical_init_(model, sigma_b2="auto", generator=torch.Generator().manual_seed(0), example_inputs=x)
    ratio, corr = _measure(model, x, 0)
    assert math.isfinite(ratio) and RATIO_LOW <= ratio <= RATIO_HIGH, (name, ratio)
    assert CORR_LOW < corr < CORR_HIGH, (name, corr)


def test_pre_norm_branch_scaling_fixes_the_mixer_that_one_over_l_leaves_below_the_band():
    # the 1/L rule on a pre-norm branch leaves the first branch's gradient ~sqrt(2 / (L + 1)) of the output's
    torch.manual_seed(1000)
    model = Mixer()
    x = torch.randn(4, 64, generator=torch.Generator().manual_seed(0))
    report = critical_init_(model, sigma_b2="auto", generator=torch.Generator().manual_seed(0), example_inputs=x)
    fc2 = next(r for r in report.layers if r.name == "fc2.0")
    assert fc2.branch_factor == pytest.approx(1 / math.sqrt(report.residual_adds))
    with torch.no_grad():
        for m in model.fc2:
            m.weight.mul_(report.residual_adds**-0.25)
            m.bias.mul_(report.residual_adds**-0.25)
    ratio, _ = _measure(model, x, 0)
    assert ratio < RATIO_LOW  # theory: sqrt(2 / (L + 1)) = 0.47 at L = 8
