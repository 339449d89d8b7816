"""After ``critical_init_``, real models sit at the edge of chaos.

The gradient norm at the first weight layer's output over its norm at the last weight layer's
output (a Gaussian cotangent at the model's output) lies within [0.5, 2] (no vanishing or
exploding gradients), and the output correlation of two nearby inputs (input correlation
0.995) is neither collapsed (> 0.5) nor 1. Random weights only; small inputs,
one seed (the measurement of ``benchmarks/model_zoo.py``).
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
torchvision = pytest.importorskip("torchvision")
timm = pytest.importorskip("timm")

from torch import nn  # noqa: E402

from meanfield.pytorch import critical_init_  # noqa: E402

#: The band of the criterion, [0.5, 2], narrowed by a margin of 10 %.
RATIO_LOW, RATIO_HIGH = 0.55, 1.8
#: Correlation bounds: above 0.5 (not collapsed) with a margin, below 1 (the outputs still differ).
CORR_LOW, CORR_HIGH = 0.6, 1.0


def _benchmark():
    """The zoo's models and measurement, from ``benchmarks/model_zoo.py`` (one definition)."""
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "model_zoo.py"
    if not path.exists():
        pytest.skip("benchmarks/model_zoo.py not in this checkout")
    spec = importlib.util.spec_from_file_location("_model_zoo", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _encoder():
    layer = nn.TransformerEncoderLayer(64, 4, 128, batch_first=True)
    return nn.TransformerEncoder(layer, 6, enable_nested_tensor=False)


ZOO = [
    ("resnet18", lambda mz: torchvision.models.resnet18(), (3, 32, 32)),
    ("vit_tiny", lambda mz: timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=64), (3, 64, 64)),
    ("post_ln_encoder", lambda mz: _encoder(), (16, 64)),
    ("mixer", lambda mz: mz.Mixer(), (64,)),
    ("mlp_gelu", lambda mz: mz._mlp(nn.GELU, width=128), (64,)),
    ("mlp_silu", lambda mz: mz._mlp(nn.SiLU, width=128), (64,)),
    ("cnn", lambda mz: mz._cnn(), (3, 16, 16)),
]


@pytest.mark.parametrize("name, build, shape", ZOO, ids=[z[0] for z in ZOO])
def test_critical_init_puts_the_zoo_in_the_gradient_band_without_collapse(name, build, shape):
    mz = _benchmark()
    torch.manual_seed(1000)
    model = build(mz)
    x = torch.randn((4,) + shape, generator=torch.Generator().manual_seed(0))
    critical_init_(model, sigma_b2="auto", generator=torch.Generator().manual_seed(0), example_inputs=x)
    ratio, corr = mz.measure(model, x, 0)
    assert math.isfinite(ratio) and RATIO_LOW <= ratio <= RATIO_HIGH, (name, ratio)
    assert CORR_LOW < corr < CORR_HIGH, (name, corr)


def test_pre_norm_branch_scaling_fixes_the_mixer_that_one_over_l_leaves_below_the_band():
    # the 1/L rule on a pre-norm branch leaves the first branch's gradient ~sqrt(2 / (L + 1)) of the output's
    mz = _benchmark()
    torch.manual_seed(1000)
    model = mz.Mixer()
    x = torch.randn(4, 64, generator=torch.Generator().manual_seed(0))
    report = critical_init_(model, sigma_b2="auto", generator=torch.Generator().manual_seed(0), example_inputs=x)
    fc2 = next(r for r in report.layers if r.name == "fc2.0")
    assert fc2.branch_factor == pytest.approx(1 / math.sqrt(report.residual_adds))
    with torch.no_grad():
        for m in model.fc2:
            m.weight.mul_(report.residual_adds**-0.25)
            m.bias.mul_(report.residual_adds**-0.25)
    ratio, _ = mz.measure(model, x, 0)
    assert ratio < RATIO_LOW  # theory: sqrt(2 / (L + 1)) = 0.47 at L = 8
