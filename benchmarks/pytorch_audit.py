"""Speed of the PyTorch bridge: the audit's cost against the forward/backward passes it measures,
the cost of one intra-op thread against PyTorch's default, and the initialisers against
``torch.nn.init``.

Run: ``python benchmarks/pytorch_audit.py`` (needs the torch extra; prints ratios measured in this
run; not a test).
"""

from __future__ import annotations

import torch
from timing import best_of

from meanfield.pytorch import audit, critical_normal_, mlp, periodic_cnn


def audit_versus_passes():
    print("== audit of a width-512 depth-30 tanh MLP, 10 initialisations, 4 digits ==")
    net = mlp(512, 30, "tanh", init="critical", sigma_b2=0.05, generator=torch.Generator().manual_seed(0))
    audit(net, "digits", n_networks=2, rng=0)  # compile / warm up
    t_audit = best_of(lambda: audit(net, "digits", n_networks=10, rng=0), repeat=2)
    x = torch.randn(4, 64)

    def passes():
        for _ in range(10):
            out = net(x)
            out.backward(torch.randn_like(out))
            net.zero_grad(set_to_none=True)

    default = torch.get_num_threads()
    torch.set_num_threads(1)
    t_pass = best_of(passes)
    torch.set_num_threads(default)
    print(f"audit {t_audit:.3f} s; 10 bare forward+backward passes {t_pass:.4f} s; ratio {t_audit / t_pass:.1f}")


def cnn_audit():
    print("== audit of a circular tanh CNN, 32 channels x 6, 8 x 8 digits, 2 inputs (theory on 128 x 128) ==")
    net = periodic_cnn(32, 6, "tanh", n_in=1, ndim=2, init="delta_orthogonal", sigma_b2=0.05)
    audit(net, "digits", n_networks=2, rng=0, n_inputs=2)
    t = best_of(lambda: audit(net, "digits", n_networks=6, rng=0, n_inputs=2), repeat=2)
    print(f"audit {t:.3f} s")


def threads():
    print("== one intra-op thread (what audit uses) against PyTorch's default, 512 x 512 x 30 passes ==")
    net = mlp(512, 30, "tanh", init="critical", generator=torch.Generator().manual_seed(0))
    x = torch.randn(4, 64)

    def passes():
        out = net(x)
        out.backward(torch.randn_like(out))
        net.zero_grad(set_to_none=True)

    default = torch.get_num_threads()
    t_default = best_of(passes, repeat=5)
    torch.set_num_threads(1)
    t_one = best_of(passes, repeat=5)
    torch.set_num_threads(default)
    print(f"{default} threads {t_default * 1e3:.2f} ms, 1 thread {t_one * 1e3:.2f} ms; ratio {t_default / t_one:.2f}")


def initialisers():
    print("== critical_normal_ (NumPy construction + copy) against torch.nn.init.normal_, 512 x 512 ==")
    w = torch.empty(512, 512)
    g = torch.Generator().manual_seed(0)
    critical_normal_(w, "tanh", 0.05, generator=g)
    t_ours = best_of(lambda: critical_normal_(w, "tanh", 0.05, generator=g), repeat=5)
    t_torch = best_of(lambda: torch.nn.init.normal_(w, 0.0, 0.06, generator=g), repeat=5)
    print(f"critical_normal_ {t_ours * 1e3:.2f} ms, torch normal_ {t_torch * 1e3:.2f} ms; ratio {t_ours / t_torch:.1f}")


if __name__ == "__main__":
    audit_versus_passes()
    cnn_audit()
    threads()
    initialisers()
