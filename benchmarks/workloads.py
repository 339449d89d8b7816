"""Workloads more than one benchmark times (each benchmark run as a script: ``python benchmarks/NAME.py``)."""

from __future__ import annotations

from meanfield.simulate import softmax_xent


def gd_steps(net, x, y, steps, lr=0.1):
    """``steps`` full-batch gradient-descent steps of a NumPy ``ConstNet`` (forward, softmax
    cross-entropy, hand-written backward, update): the work of the removed ``simulators.train``'s
    step, without its symmetry measures (the library trains on ``train_ensemble``)."""
    for _ in range(steps):
        _, dlog = softmax_xent(net.forward(x), y)
        for k, g in net.backward(dlog).items():
            net.params[k] = net.params[k] - lr * g
