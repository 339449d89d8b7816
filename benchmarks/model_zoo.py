"""Signal propagation of real models after three initialisations: PyTorch's default, ``critical_init_``, AnyInit.

For each model of the zoo (random weights; nothing is downloaded) and each initialisation, over
``SEEDS`` draws:

* ``grad ratio``: norm of the gradient at the first weight layer's output over its norm at the
  last weight layer's output (per input, all units and positions), for a Gaussian cotangent at
  the model's output: the product of the chi_1 of the layers in between, 1 at the edge of chaos
  (no vanishing or exploding gradients; measured with forward hooks and ``retain_grad``);
* ``corr``: correlation (cosine) of the outputs for two nearby inputs ``x`` and
  ``x + EPS * noise`` (input correlation ``1 / sqrt(1 + EPS^2)`` = 0.995): near 1 in the ordered
  phase and at criticality, lower in the chaotic phase.

Run (needs torchvision, timm and anyinit)::

    python benchmarks/model_zoo.py [--seeds 3]

Models run in ``eval()`` mode (dropout off, batch norm with its running statistics).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from meanfield.pytorch import critical_init_

EPS = 0.1
SEEDS = 3
BATCH = 4
#: ``critical_init_`` bias variance: each layer gets the smallest one with a stable edge of chaos
#: for the activation it consumes (0 for ReLU / linear, 0.186 GELU, 0.591 SiLU).
SIGMA_B2 = "auto"


class Mixer(nn.Module):
    """Pre-LayerNorm residual MLP with a functional GELU (8 blocks of width 64)."""

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


def _mlp(act, width=256, depth=20):
    layers = [nn.Linear(64, width), act()]
    for _ in range(depth - 2):
        layers += [nn.Linear(width, width), act()]
    return nn.Sequential(*layers, nn.Linear(width, 10))


def _cnn(depth=10):
    layers = [nn.Conv2d(3, 16, 3, padding=1), nn.ReLU()]
    for _ in range(depth - 2):
        layers += [nn.Conv2d(16, 16, 3, padding=1), nn.ReLU()]
    return nn.Sequential(*layers, nn.Flatten(), nn.Linear(16 * 16 * 16, 10))


def zoo():
    """``(name, build, input shape)``."""
    import timm
    import torchvision

    def encoder():
        layer = nn.TransformerEncoderLayer(64, 4, 128, batch_first=True)
        return nn.TransformerEncoder(layer, 6, enable_nested_tensor=False)

    return [
        ("resnet18", torchvision.models.resnet18, (3, 64, 64)),
        ("vit_tiny_patch16_224", lambda: timm.create_model("vit_tiny_patch16_224", pretrained=False), (3, 224, 224)),
        ("TransformerEncoder(6)", encoder, (16, 64)),
        ("mixer F.gelu (8)", Mixer, (64,)),
        ("MLP GELU (20)", lambda: _mlp(nn.GELU), (64,)),
        ("MLP SiLU (20)", lambda: _mlp(nn.SiLU), (64,)),
        ("CNN 3->16 ReLU (10)", _cnn, (3, 16, 16)),
    ]


def _weight_modules(model):
    return [m for m in model.modules() if isinstance(m, (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d))]


def measure(model, x, seed):
    """(grad ratio first/last weight layer, output correlation of nearby inputs)."""
    model.eval()
    outs = {}
    order = []

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
    first, last = outs[order[0]], outs[order[-1]]
    norms = [float(t.grad.pow(2).sum().sqrt()) for t in (first, last)]
    ratio = norms[0] / norms[1] if norms[1] > 0 else math.inf
    with torch.no_grad():
        noise = torch.randn(x.shape, generator=g)
        y1 = model(x).flatten(1).double()
        y2 = model(x + EPS * noise).flatten(1).double()
        corr = float(F.cosine_similarity(y1, y2, dim=1).mean())
    return ratio, corr


def _init_default(model, x, seed):
    torch.manual_seed(seed)
    for m in model.modules():
        if hasattr(m, "reset_parameters") and m is not model:
            m.reset_parameters()


def _init_critical(model, x, seed):
    critical_init_(model, sigma_b2=SIGMA_B2, generator=torch.Generator().manual_seed(seed), example_inputs=x)


def _init_anyinit(model, x, seed):
    import anyinit

    anyinit.initialize(model, "analytic", x, seed=seed)


INITS = [("pytorch default", _init_default), ("critical_init_", _init_critical), ("anyinit", _init_anyinit)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=SEEDS)
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    head = f"{'model':<24} | {'init':<16} | {'grad ratio first/last':>22} | {'corr (in 0.995)':>16} | note"
    print(head)
    print("-" * len(head))
    for name, build, shape in zoo():
        for init_name, init in INITS:
            ratios, corrs, note = [], [], ""
            t0 = time.perf_counter()
            for seed in range(args.seeds):
                torch.manual_seed(1000 + seed)
                model = build()
                x = torch.randn((BATCH,) + shape, generator=torch.Generator().manual_seed(seed))
                try:
                    init(model, x, seed)
                    r, c = measure(model, x, seed)
                except Exception as exc:
                    note = f"{type(exc).__name__}: {str(exc).splitlines()[0][:70]}"
                    break
                ratios.append(r)
                corrs.append(c)
            if ratios:
                gr = np.exp(np.mean(np.log(ratios)))  # geometric mean
                note = note or f"{time.perf_counter() - t0:.1f} s"
                print(f"{name:<24} | {init_name:<16} | {gr:>22.4g} | {np.mean(corrs):>16.4f} | {note}")
            else:
                print(f"{name:<24} | {init_name:<16} | {'-':>22} | {'-':>16} | {note}")


if __name__ == "__main__":
    main()
