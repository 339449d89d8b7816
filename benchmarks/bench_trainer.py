"""Throughput of the ensemble trainer (meanfield.train) for the ensembles the
trainability figures use, and the fraction of the machine's matrix-product peak it reaches.

Run: ``python benchmarks/bench_trainer.py [--threads N] [--steps S]``. Prints, for each ensemble,
network-steps per second (one network, one optimiser step on a mini-batch of 32) and the achieved
rate of the forward and backward matrix products (3 x the forward multiply-adds x 2 flops),
divided by the peak of one large float32 ``torch.matmul`` measured in the same run with the same
thread count. Evaluation passes are excluded (``n_eval=1``, one record at the end).
"""

from __future__ import annotations

import argparse
import math
import time

import torch

from meanfield import dense
from meanfield.train import ConvNet, DenseNet, load_training_data, train_ensemble


def matmul_peak(n: int = 1024, repeats: int = 10) -> float:
    """Best float32 GFLOP/s of an n x n matmul."""
    a = torch.randn(n, n)
    b = torch.randn(n, n)
    a @ b
    best = math.inf
    for _ in range(repeats):
        t = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t)
    return 2 * n**3 / best / 1e9


def forward_flops(net, shape, n_classes=10) -> int:
    """Multiply-add flops (x 2) of one forward pass of one example."""
    if isinstance(net, DenseNet):
        sizes = [math.prod(shape)] + [net.width] * net.depth + [n_classes]
        return 2 * sum(i * o for i, o in zip(sizes[:-1], sizes[1:]))
    positions = math.prod(shape[1:])
    taps = net.kernel_size**net.ndim
    c = net.channels
    conv = positions * taps * (shape[0] * c + (net.depth - 1) * c * c)
    feats = c * (positions if net.readout == "flatten" else 1)
    return 2 * (conv + feats * n_classes)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--steps", type=int, default=20)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    peak = matmul_peak()
    print(f"torch {torch.__version__}, {args.threads} thread(s): float32 matmul peak {peak:.1f} GFLOP/s (1024^3)")
    digits = load_training_data()
    small = load_training_data(downsample=2)
    sw_c = float(dense.critical_sigma_w2("tanh", 1e-5))
    cases = [
        (
            "depth_scale: 16 tanh nets, width 32, depth 16",
            [DenseNet(16, 32, sigma_w2=s) for s in (1.0, 2.0) * 4],
            2,
            digits,
        ),
        ("looks_linear: 24 ReLU nets, width 32, depth 10", [DenseNet(10, 32, "relu", "gsm", 2.0)] * 3, 8, digits),
        ("zero: 15 ReLU nets, width 10, depth 50", [DenseNet(50, 10, "relu", "zero")] * 5, 3, digits),
        (
            "deep_cnn: 6 tanh CNNs, 8 ch, 4x4, depth 128",
            [ConvNet(128, 8, init="delta_orthogonal", sigma_w2=sw_c, readout="flatten")] * 3,
            2,
            small,
        ),
        ("deep_cnn, 1 network", [ConvNet(128, 8, init="delta_orthogonal", sigma_w2=sw_c, readout="flatten")], 1, small),
    ]
    print(f"{'ensemble':52s} {'net-steps/s':>12s} {'GFLOP/s':>9s} {'of peak':>8s}")
    for label, nets, n_per, data in cases:
        kw = dict(data=data, steps=args.steps, batch_size=32, lr=1e-3, record_every=args.steps, n_eval=1, rng=0)
        train_ensemble(nets, n_per, **{**kw, "steps": 2, "record_every": 2}, num_threads=args.threads)  # warm-up
        t = time.perf_counter()
        train_ensemble(nets, n_per, **kw, num_threads=args.threads)
        secs = time.perf_counter() - t
        n_net = len(nets) * n_per
        rate = n_net * args.steps / secs
        gflops = 3 * forward_flops(nets[0], data.image_shape) * 32 * rate / 1e9
        print(f"{label:52s} {rate:12.1f} {gflops:9.2f} {gflops / peak:8.1%}")

    # the two convolution paths of the trainer on the deep narrow CNN, measured in this run
    import meanfield.train as tr

    print("\ndeep narrow CNN (6 tanh CNNs, 4x4 digits, depth 128): grouped convolution vs gather + bmm")
    print(f"{'channels':>8s} {'grouped conv s/step':>20s} {'gather s/step':>14s} {'speed-up':>9s}")
    limit = tr.GATHER_MAX_SAVED
    for ch in (4, 8):
        nets = [ConvNet(128, ch, init="delta_orthogonal", sigma_w2=sw_c, readout="flatten")] * 3
        kw = dict(data=small, steps=args.steps, batch_size=32, lr=1e-3, record_every=args.steps, n_eval=1, rng=0)
        secs = []
        for path_limit in (0, limit):
            tr.GATHER_MAX_SAVED = path_limit
            try:
                train_ensemble(nets, 2, **{**kw, "steps": 2, "record_every": 2}, num_threads=args.threads)
                t = time.process_time()
                train_ensemble(nets, 2, **kw, num_threads=args.threads)
                secs.append((time.process_time() - t) / args.steps)
            finally:
                tr.GATHER_MAX_SAVED = limit
        print(f"{ch:8d} {secs[0]:20.4f} {secs[1]:14.4f} {secs[0] / secs[1]:8.2f}x")


if __name__ == "__main__":
    main()
