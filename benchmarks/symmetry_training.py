"""Speed of the Orhan 2017 trainer and its Hessians (meanfield.train.skip).

Prints, in one run, the ratios behind three choices of the trainer:

1. one PyTorch intra-op thread against the process default for a training step of a 4-member
   ensemble (width 32, 10 hidden layers, batch 500): on a shared, oversubscribed machine spinning
   threads made small batched products many times slower;
2. forward-over-reverse Hessians (``torch.func.jacfwd(jacrev(f))``, what the trainer uses) against
   ``torch.autograd.functional.hessian`` (reverse-over-reverse) for the 288 hidden parameters of
   a width-8, 4-layer net on 128 inputs (measured: about equal after warm-up, ratio 0.9);
3. ``torch.linalg.eigvalsh`` on one thread against ``numpy.linalg.eigvalsh`` for that Hessian;

4. the Hessians of a whole trained ensemble at once (``skip_ensemble_hessians(method="exact")``,
   the closed structure the trainer uses) against per-network forward-over-reverse
   autodiff (``method="autodiff"``, the previous path), per Hessian, CPU and wall time, interleaved
   (A B A B ...) in one run, with the largest difference of the two (float64 rounding) and of the
   degenerate fractions they give;

and the wall time of one default-size training run (the unit of the Orhan figures' cost), and of the
validation row's unit with and without its exact Hessians (the cost behind the row's power decision).
Both runs go through the project's one training engine (``train_ensemble`` with ``SkipNet``).

    python benchmarks/symmetry_training.py [--repeats 20] [--members 32]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import torch

from meanfield.data import load_digits
from meanfield.train import skip as T

#: The networks and optimiser of the validation row of degenerate Hessians during training
#: (``meanfield.validation.landscape``): width 8, 4 hidden layers (288 hidden parameters).
VALIDATION_NETWORKS = {"width": 8, "depth": 4, "lr": 5e-3, "batch_size": 256, "record_every": 100}


def _time(f, repeats):
    f()  # warm-up
    t = time.perf_counter()
    for _ in range(repeats):
        f()
    return (time.perf_counter() - t) / repeats


def _mlp_loss(p, x, y):
    """Cross-entropy of an ensemble of residual ReLU MLPs (batched products, the trainer's shapes)."""
    h = torch.relu(torch.matmul(x, p["W0"].transpose(1, 2)))
    for i in range(p["W"].shape[1]):
        h = torch.relu(torch.bmm(h, p["W"][:, i].transpose(1, 2)) + p["b"][:, i][:, None, :]) + h
    logits = torch.bmm(h, p["Wout"].transpose(1, 2))
    e = logits.shape[0]
    return torch.nn.functional.cross_entropy(logits.reshape(-1, 10), y.repeat(e))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--members", type=int, default=32, help="ensemble size of the batched-Hessian comparison")
    args = p.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs")
    batched_hessians(args.members, max(2, args.repeats // 10))
    rng = np.random.default_rng(0)
    x = torch.tensor(rng.standard_normal((500, 64)), dtype=torch.float32)
    y = torch.tensor(rng.integers(0, 10, 500))

    def params(dtype, e, n, depth):
        g = lambda *s: torch.tensor(rng.standard_normal(s) / np.sqrt(s[-1]), dtype=dtype)  # noqa: E731
        return {
            "W0": g(e, n, 64).requires_grad_(),
            "W": g(e, depth, n, n).requires_grad_(),
            "b": torch.zeros(e, depth, n, dtype=dtype, requires_grad=True),
            "Wout": g(e, 10, n).requires_grad_(),
        }

    p32 = params(torch.float32, 4, 32, 10)

    def step():
        _mlp_loss(p32, x, y).backward()

    default_threads = torch.get_num_threads()
    t_default = _time(step, args.repeats)
    torch.set_num_threads(1)
    t_one = _time(step, args.repeats)
    print(
        f"training step (4 networks, width 32, 10 layers, batch 500), {default_threads} threads: "
        f"{1e3 * t_default:.2f} ms; 1 thread: {1e3 * t_one:.2f} ms; ratio {t_default / t_one:.1f}"
    )

    p64 = params(torch.float64, 1, 8, 4)
    xh, yh = x[:128].double(), y[:128]
    flat0 = torch.cat([p64["W"].detach().reshape(-1), p64["b"].detach().reshape(-1)])

    def loss(flat):
        r = dict(p64)
        r["W"] = flat[: 4 * 64].view(1, 4, 8, 8)
        r["b"] = flat[4 * 64 :].view(1, 4, 8)
        return _mlp_loss(r, xh, yh)

    reps = max(2, args.repeats // 5)
    t_rr = _time(lambda: torch.autograd.functional.hessian(loss, flat0, vectorize=True), reps)
    t_fr = _time(lambda: torch.func.jacfwd(torch.func.jacrev(loss))(flat0), reps)
    print(
        f"Hessian (288 parameters, 128 inputs): reverse-over-reverse {1e3 * t_rr:.1f} ms; "
        f"forward-over-reverse {1e3 * t_fr:.1f} ms; ratio {t_rr / t_fr:.1f}"
    )
    h = torch.func.jacfwd(torch.func.jacrev(loss))(flat0).detach()
    hn = h.numpy()
    t_np = _time(lambda: np.linalg.eigvalsh(hn), args.repeats)
    t_th = _time(lambda: torch.linalg.eigvalsh(h), args.repeats)
    print(
        f"eigvalsh 288 x 288: numpy {1e3 * t_np:.1f} ms; torch (1 thread) {1e3 * t_th:.1f} ms; ratio {t_np / t_th:.1f}"
    )
    torch.set_num_threads(default_threads)

    d = load_digits(standardized=True)
    t = time.perf_counter()
    T.train_skip_ensemble(
        "residual", d.x[:1297], d.y[:1297], n_networks=4, width=32, depth=10, steps=150, record_every=15, rng=0
    )
    print(
        "one default-size Orhan training run (4 networks, width 32, 10 layers, 150 steps): "
        f"{time.perf_counter() - t:.1f} s"
    )
    # the validation row's unit (width 8, 4 layers, 300 steps, 8 networks): training alone vs with the
    # exact Hessians at steps 0, 100, 200, 300 -- what a larger ensemble for the power of the
    # degenerate-Hessian row would cost (docs/papers/orhan2017.md)
    kw = {"n_networks": 8, "steps": 300, "rng": 0, **VALIDATION_NETWORKS}
    t = time.perf_counter()
    T.train_skip_ensemble("plain", d.x[:1297], d.y[:1297], **kw)
    t_train = time.perf_counter() - t
    t = time.perf_counter()
    T.train_skip_ensemble("plain", d.x[:1297], d.y[:1297], hessian_every=100, hessian_inputs=128, **kw)
    t_hess = time.perf_counter() - t
    print(
        f"validation unit (8 networks, width 8, 4 layers, 300 steps): training {t_train:.1f} s, with 4 Hessians per "
        f"network {t_hess:.1f} s; ratio {t_hess / t_train:.1f}; {1e3 * (t_hess - t_train) / 32:.0f} ms per Hessian"
    )


def batched_hessians(members: int, rounds: int) -> None:
    """Per-Hessian time of the all-members closed-structure Hessian vs per-network autodiff (item 4)."""
    from meanfield.landscape import degenerate_fraction

    d = load_digits(standardized=True)
    x, y = d.x[:1297], d.y[:1297]
    res = {}
    for arch in ("plain", "hyper_residual"):
        # the validation row's networks, part-trained
        res[arch] = T.train_skip_ensemble(arch, x, y, n_networks=members, steps=100, rng=0, **VALIDATION_NETWORKS)
    xh, yh = x[:128], y[:128]
    for arch, r in res.items():
        T.skip_ensemble_hessians(r, xh[:8], yh[:8], method="exact")  # warm-up of both paths
        T.skip_ensemble_hessians(r, xh[:8], yh[:8], method="autodiff")
        cpu = {"exact": 0.0, "autodiff": 0.0}
        wall = dict(cpu)
        h = {}
        for _ in range(rounds):
            for method in ("exact", "autodiff"):
                c, w = time.process_time(), time.perf_counter()
                h[method] = T.skip_ensemble_hessians(r, xh, yh, method=method)
                cpu[method] += time.process_time() - c
                wall[method] += time.perf_counter() - w
        n = rounds * members
        diff = np.abs(h["exact"] - h["autodiff"]).max() / np.abs(h["autodiff"]).max()
        frac = {m: [degenerate_fraction(ev) for ev in np.linalg.eigvalsh(v)] for m, v in h.items()}
        same = np.array_equal(frac["exact"], frac["autodiff"])
        print(
            f"Hessian of {arch} nets (288 parameters, 128 inputs, {members} members, {rounds} interleaved rounds): "
            f"per Hessian, exact all-members {1e3 * cpu['exact'] / n:.1f} ms CPU ({1e3 * wall['exact'] / n:.1f} ms "
            f"wall); per-network autodiff {1e3 * cpu['autodiff'] / n:.1f} ms CPU ({1e3 * wall['autodiff'] / n:.1f} ms "
            f"wall); CPU ratio {cpu['autodiff'] / cpu['exact']:.1f}, wall ratio {wall['autodiff'] / wall['exact']:.1f}; "
            f"max |difference| / max |H| = {diff:.1e}; degenerate fractions identical: {same}"
        )


if __name__ == "__main__":
    main()
