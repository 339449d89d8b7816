"""The ensemble trainer's loop: batched training of ``n_networks`` networks, one optimiser step for all."""

from __future__ import annotations

import dataclasses
import math
import numbers
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from meanfield import Result
from meanfield._docstrings import doc_sections
from meanfield.checks import check_bool, check_rng, check_scalar

from ._checks import DOC_TRAINER_RAISES, _choice, _int, _progress, _torch
from ._data import TrainingData, _as_data
from ._forward import _Ensemble, _scores
from ._probes import _check_noise_probes, _noisy_gradient, _run_probes
from ._specs import (
    _FAMILIES,
    _NETWORK_TYPES,
    MAX_STEPS,
    MAX_TOTAL_PARAMS,
    MAX_WIDTH,
    OPTIMIZERS,
    ConvNet,
    DenseNet,
    _check_conv_input,
    _is_net,
    _param_count,
    init_parameters,
)

#: Rows of an evaluation chunk times networks: bounds the memory of the no-grad evaluation pass.
_EVAL_ROWS = 2**14


@dataclass(frozen=True)
class TrainingCurves(Result):
    """Train and test loss / accuracy of every network of an ensemble, recorded during training.

    Attributes
    ----------
    steps : ndarray of int, shape (n_records,)
        Optimiser steps at which the curves were recorded (0 = initialisation; the last is ``steps``).
    train_loss, train_accuracy, test_loss, test_accuracy : ndarray, shape (n_networks, n_records)
        Mean cross-entropy (nats) and accuracy (fraction in [0, 1]) on the evaluation subset of
        the training set and on the test set; always finite (see :data:`MAX_LOSS`).
    diverged_at : ndarray of int, shape (n_networks,)
        Step at which a network's loss or parameters became non-finite (it was frozen there);
        -1 when it never did.
    net : DenseNet or ConvNet
        The architecture and initialiser.
    dataset : str
        The data's name (:attr:`TrainingData.name`).
    optimizer : str
    lr : float
        Learning rate at step 0 (a schedule's later values are in ``params``).
    batch_size : int
    seconds : float
        Wall time of the training and evaluation (s).
    device : str
    params : dict
        Everything else the run used (sizes, schedule, dtype, evaluation subset).
    probes : dict
        ``name -> ndarray of shape (n_networks, n_records, ...)``: what each probe of
        :func:`train_ensemble` returned at the recorded steps (empty without probes).
    """

    steps: np.ndarray
    train_loss: np.ndarray
    train_accuracy: np.ndarray
    test_loss: np.ndarray
    test_accuracy: np.ndarray
    diverged_at: np.ndarray
    net: DenseNet | ConvNet
    dataset: str
    optimizer: str
    lr: float
    batch_size: int
    seconds: float
    device: str
    params: dict = field(default_factory=dict, compare=False)
    probes: dict = field(default_factory=dict, compare=False)

    @property
    def n_networks(self) -> int:
        """Networks in the ensemble."""
        return int(self.train_loss.shape[0])

    @property
    def final_test_accuracy(self) -> np.ndarray:
        """Test accuracy of each network at the last recorded step, shape ``(n_networks,)``."""
        return self.test_accuracy[:, -1]

    @property
    def final_train_accuracy(self) -> np.ndarray:
        """Training accuracy of each network at the last recorded step, shape ``(n_networks,)``."""
        return self.train_accuracy[:, -1]


def _check_lr(lr) -> Callable[[int], float]:
    if callable(lr):

        def schedule(step: int) -> float:
            v = lr(step)
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (numbers.Real, np.floating, np.integer)):
                raise TypeError(f"lr(step) must return a real number, got {v!r} at step {step}")
            v = float(v)
            if not (math.isfinite(v) and 0 <= v <= 1e6):
                raise ValueError(f"lr(step) must return a finite number in [0, 1e6], got {v!r} at step {step}")
            return v

        return schedule
    v = check_scalar(lr, "lr")
    if not 0 <= v <= 1e6:
        raise ValueError(f"lr must be in [0, 1e6], got {v!r}")
    return lambda step: v


@doc_sections(trainer_raises=DOC_TRAINER_RAISES)
def train_ensemble(
    net: DenseNet | ConvNet,
    n_networks: int,
    *,
    data: TrainingData | None = None,
    steps: int = 500,
    batch_size: int = 64,
    lr: float | Callable[[int], float] = 0.01,
    optimizer: str = "sgd",
    momentum: float = 0.9,
    betas: tuple[float, float] = (0.9, 0.999),
    record_every: int | None = None,
    n_eval: int | None = 500,
    rng: Any = None,
    device: str = "cpu",
    dtype: str = "float32",
    show_progress: bool = False,
    num_threads: int | None = 1,
    noise: Any = None,
    probes: dict[str, Callable] | None = None,
) -> TrainingCurves:
    """Train ``n_networks`` independently initialised copies of ``net`` at once; record their curves.

    Parameters
    ----------
    net : DenseNet or ConvNet, or a list of them
        Architecture and initialiser (every network of the ensemble shares them and differs only
        in its random stream). A list trains ``n_networks`` networks of each in one ensemble (one
        set of batched kernels: cheaper than one call per net); its nets must share the
        architecture (depth, width / channels, activation, ...) and may differ in ``init``,
        ``sigma_w2``, ``sigma_b2`` and ``v``. Registered families are accepted too: Orhan's
        :class:`meanfield.train.skip.SkipNet` (Adam's or SGD's update of its
        fixed skip matrices is zero; a per-network bias penalty is added to the loss).
    n_networks : int
        Networks per net, ``1 <= n_networks <= 65,536`` (and ``n_networks * len(nets) * n_params
        <= 2^28``).
    data : TrainingData, optional
        Default: :func:`load_training_data` (the embedded digits).
    steps : int
        Optimiser steps, ``0 <= steps <= 10^7``.
    batch_size : int
        Mini-batch size, ``1 <= batch_size <= n_train``; each network draws its own batches
        (one fresh permutation of the training set per epoch).
    lr : float or callable
        Learning rate in ``[0, 1e6]``, or ``lr(step) -> float`` (a schedule, e.g. Burkholz & Dubatovka's
        ``(1e-4 + 3e-3 exp(-step / 1e4)) / L``).
    optimizer : {"sgd", "momentum", "adam"}
        Plain SGD, heavy-ball momentum (``v <- momentum v + g``, ``theta <- theta - lr v``, PyTorch's
        convention) or Adam (Kingma & Ba 2015, bias-corrected, eps = 1e-8; Grzejdziak's choice).
    momentum : float
        In ``[0, 1)``.
    betas : tuple of two floats
        Adam's ``(beta1, beta2)``, each in ``[0, 1)``.
    record_every : int, optional
        Record the curves every ``record_every`` steps (and at step 0 and at the end); default
        ``max(1, steps // 20)``.
    n_eval : int, optional
        Evaluate on the first ``n_eval`` training and test examples (``None``: all); ``>= 1``.
    rng : None, int, SeedSequence or numpy.random.Generator
        The one randomness rule (module notes): ``n_networks`` child streams are spawned.
    device : str
        A torch device (``"cpu"`` default, ``"cuda"``, ``"cuda:1"``, ...).
    dtype : {"float32", "float64"}
    show_progress : bool
        Show a progress bar over the steps.
    num_threads : int, optional
        CPU threads of PyTorch during the call (restored afterwards; ``1 <= num_threads <= 1024``);
        ``None`` keeps PyTorch's setting. Default 1: the ensemble is already batched, and more threads
        than free cores slow its small kernels (a grouped 8 x 8 convolution) down by up to 100x.
    noise : SymmetryBreaking, optional
        Symmetry-breaking noise sources (:class:`meanfield.train.SymmetryBreaking`):
        dropout (only for the registered Blumenfeld et al. 2020 specs), gradient noise, a model of
        non-deterministic reductions, a reduced-precision forward/backward pass, and the choice of
        the platform's kernels or unit-exact arithmetic (``kernels``). ``None``: none, and the
        training is deterministic (on the platform's kernels).
    probes : dict of str to callable, optional
        ``probe(net, parameters) -> array`` called at every recorded step for every network, on a
        float64 NumPy copy of its parameters (the layout of :func:`init_parameters`); the returned
        arrays (finite, of one shape) are stacked into ``TrainingCurves.probes[name]`` of shape
        ``(n_networks, n_records, ...)``. E.g.
        :func:`meanfield.train.symmetric.correlation_probe` records ``1 - C_f``.

    Returns
    -------
    TrainingCurves or list of TrainingCurves
        Finite curves of shape ``(n_networks, n_records)``; one per net when ``net`` is a list.

    Raises
    ------
    ValueError
        Sizes or hyper-parameters out of range, data that does not fit ``net``, an unknown
        optimiser or dtype, an unavailable device.
    {trainer_raises}

    Notes
    -----
    Xiao et al. 2018 Sec. 3 (trainability of deep CNNs, Figs. 1-5), Burkholz & Dubatovka 2019 Sec. 4 (Figs. 3-4), Grzejdziak 2023
    Sec. 6 (Fig. 2): each trains many networks of one architecture and compares accuracies across
    initialisers; this is that experiment, vectorised over networks. Cost per step: one forward and
    one backward pass of all networks (``benchmarks/bench_trainer.py`` measures the throughput).

    Examples
    --------
    >>> curves = train_ensemble(DenseNet(depth=2, width=16), 3, steps=20, rng=0)  # doctest: +SKIP
    >>> curves.test_accuracy.shape  # doctest: +SKIP
    (3, 21)
    """
    torch = _torch()
    single = _is_net(net)
    if single:
        nets = [net]
    elif isinstance(net, (list, tuple)) and net and all(_is_net(n) for n in net):
        nets = list(net)
    else:
        raise TypeError(f"net must be a DenseNet or a ConvNet, or a non-empty list of them, got {net!r:.80}")
    n_networks = _int(n_networks, "n_networks", 1, MAX_WIDTH)
    data = _as_data(data)
    shape = data.image_shape
    for n in nets:
        if isinstance(n, ConvNet):
            _check_conv_input(n, shape)
        elif type(n) in _NETWORK_TYPES:
            _NETWORK_TYPES[type(n)].check_input(n, shape)
    noise, probes = _check_noise_probes(noise, probes, nets)
    _check_compatible(nets, shape, int(data.n_classes))
    steps = _int(steps, "steps", 0, MAX_STEPS)
    n_train = data.x_train.shape[0]
    batch_size = _int(batch_size, "batch_size", 1, 2**20)
    if batch_size > n_train:
        raise ValueError(f"batch_size must be <= the {n_train} training examples, got {batch_size}")
    schedule = _check_lr(lr)
    optimizer = _choice(optimizer, "optimizer", OPTIMIZERS)
    momentum = check_scalar(momentum, "momentum")
    if not 0 <= momentum < 1:
        raise ValueError(f"momentum must be in [0, 1), got {momentum!r}")
    if isinstance(betas, (str, bytes)) or not isinstance(betas, (tuple, list)) or len(betas) != 2:
        raise TypeError(f"betas must be a tuple of two floats, got {betas!r}")
    beta1, beta2 = (check_scalar(b, "betas") for b in betas)
    if not (0 <= beta1 < 1 and 0 <= beta2 < 1):
        raise ValueError(f"betas must lie in [0, 1), got {betas!r}")
    record_every = max(1, steps // 20) if record_every is None else _int(record_every, "record_every", 1, MAX_STEPS)
    if n_eval is not None:
        n_eval = _int(n_eval, "n_eval", 1, 2**31)
    if not isinstance(device, str):
        raise TypeError(f"device must be a str such as 'cpu' or 'cuda', got {device!r}")
    try:
        dev = torch.device(device)
        torch.empty(1, device=dev)
    except (RuntimeError, AssertionError) as exc:
        raise ValueError(f"device {device!r} is not available to PyTorch ({exc})") from None
    dtype_name = _choice(dtype, "dtype", ("float32", "float64"))
    show_progress = check_bool(show_progress, "show_progress")
    if num_threads is not None:
        num_threads = _int(num_threads, "num_threads", 1, 1024)
    previous_threads = torch.get_num_threads()
    if num_threads is not None:
        torch.set_num_threads(num_threads)
    try:
        run = _Run(
            steps, batch_size, schedule, optimizer, momentum, beta1, beta2, record_every, n_eval, dev, dtype_name
        )
        curves = _train(torch, nets, single, n_networks, data, run, rng, show_progress, noise, probes)
    finally:
        torch.set_num_threads(previous_threads)
    return curves[0] if single else curves


def _check_compatible(nets, shape, n_classes) -> None:
    """Nets trained in one ensemble must share the architecture; they may differ in their initialisation."""
    first = nets[0]
    if type(first) in _FAMILIES:
        same = _FAMILIES[type(first)]["same"]
        for n in nets[1:]:
            if type(n) is not type(first) or not same(first, n):
                raise ValueError(f"the nets of one ensemble must share their architecture; got {first} and {n}")
        return
    if type(first) in _NETWORK_TYPES:
        keep = _NETWORK_TYPES[type(first)].compatible_keys(first)
    else:
        keep = (
            ("depth", "width", "activation", "slope")
            if isinstance(first, DenseNet)
            else ("depth", "channels", "ndim", "kernel_size", "activation", "slope", "readout")
        )
    for n in nets[1:]:
        if type(n) is not type(first) or any(getattr(n, k) != getattr(first, k) for k in keep):
            raise ValueError(
                f"the nets of one ensemble must share {keep} and differ only in init, sigma_w2, sigma_b2 or v; "
                f"got {first} and {n}"
            )


@dataclass(frozen=True)
class _Run:
    """The checked hyper-parameters of one :func:`train_ensemble` call."""

    steps: int
    batch_size: int
    schedule: Callable[[int], float]
    optimizer: str
    momentum: float
    beta1: float
    beta2: float
    record_every: int
    n_eval: int | None
    dev: Any
    dtype_name: str


def _update(torch, run: _Run, state: dict, grad, rate: float):
    """The optimiser's step ``theta_new = theta - update`` (elementwise: independent across networks)."""
    if run.optimizer == "sgd":
        return rate * grad
    if run.optimizer == "momentum":
        buf = state.get("v")
        buf = grad.clone() if buf is None else run.momentum * buf + grad
        state["v"] = buf
        return rate * buf
    beta1, beta2 = run.beta1, run.beta2
    t = state.get("t", 0) + 1
    m = state.get("m", torch.zeros_like(grad)) * beta1 + (1 - beta1) * grad
    s = state.get("s", torch.zeros_like(grad)) * beta2 + (1 - beta2) * grad * grad
    state.update(t=t, m=m, s=s)
    mhat = m / (1 - beta1**t)
    shat = s / (1 - beta2**t)
    return rate * mhat / (shat.sqrt() + 1e-8)


def _train(torch, nets, single, n_networks, data, run: _Run, rng, show_progress, noise=None, probes=None):
    steps, batch_size, schedule, optimizer = run.steps, run.batch_size, run.schedule, run.optimizer
    momentum, beta1, beta2 = run.momentum, run.beta1, run.beta2
    record_every, n_eval, dev, dtype_name = run.record_every, run.n_eval, run.dev, run.dtype_name
    n_train = data.x_train.shape[0]
    tdtype = getattr(torch, dtype_name)

    shape = data.image_shape
    n_classes = int(data.n_classes)
    net = nets[0]
    n_per_net = n_networks
    n_networks = n_per_net * len(nets)
    # size check before drawing anything: the parameter count of one network
    probe = _param_count(net, shape, n_classes)
    if probe * n_networks > MAX_TOTAL_PARAMS:
        raise ValueError(
            f"n_networks * n_params must be <= 2**28, got {n_networks} * {probe}: train fewer networks per call "
            "(independent calls with spawned rng streams give the same curves per network)"
        )
    root = check_rng(rng)
    if single:
        children = [root.spawn(n_per_net)]
    else:
        children = [g.spawn(n_per_net) for g in root.spawn(len(nets))]
    per_network, batch_seeds, noise_seeds = [], [], []
    for this, kids in zip(nets, children):
        for child in kids:
            per_network.append(init_parameters(this, shape, n_classes, child))
            batch_seeds.append(int(child.integers(2**63)))
            if noise is not None and noise.random:  # drawn last: the weights and batches never depend on it
                noise_seeds.append(int(child.integers(2**63)))
    family = _FAMILIES.get(type(net))
    build = _Ensemble if family is None else family["model"]
    model = build(torch, net, shape, n_classes, per_network, dev, tdtype)
    penalty = getattr(model, "penalty", None)
    observe = getattr(model, "observe", None)
    gens = [torch.Generator(device="cpu").manual_seed(s) for s in batch_seeds]
    model.noise_generators = [torch.Generator(device="cpu").manual_seed(s) for s in noise_seeds]
    model.dropout = 0.0 if noise is None else noise.dropout
    model.kernels = "platform" if noise is None else noise.kernels
    model.training = False
    cdtype = tdtype if noise is None or noise.compute_dtype is None else getattr(torch, noise.compute_dtype)
    probe_rec: dict[str, list] = {name: [] for name in probes}
    param_nets = [this for this in nets for _ in range(n_per_net)]

    xtr = torch.tensor(data.x_train, dtype=tdtype, device=dev)
    ytr = torch.tensor(data.y_train, dtype=torch.int64, device=dev)
    xte = torch.tensor(data.x_test, dtype=tdtype, device=dev)
    yte = torch.tensor(data.y_test, dtype=torch.int64, device=dev)
    n_tr_eval = n_train if n_eval is None else min(n_eval, n_train)
    n_te_eval = xte.shape[0] if n_eval is None else min(n_eval, xte.shape[0])

    def evaluate(theta, x, y, n):
        losses, accs = [], []
        chunk = max(1, _EVAL_ROWS // n_networks)
        with torch.no_grad():
            for start in range(0, n, chunk):
                xb = x[start : min(start + chunk, n)]
                yb = y[start : min(start + chunk, n)]
                xe = xb.unsqueeze(0).expand(n_networks, *xb.shape)
                loss, acc = _scores(torch, model.forward(theta, xe), yb.unsqueeze(0).expand(n_networks, -1))
                losses.append(loss * xb.shape[0])
                accs.append(acc * xb.shape[0])
        return (torch.stack(losses).sum(0) / n).cpu().numpy(), (torch.stack(accs).sum(0) / n).cpu().numpy()

    record_steps = sorted(set(range(0, steps + 1, record_every)) | {steps})
    rec = {k: np.zeros((n_networks, len(record_steps))) for k in ("trl", "tra", "tel", "tea")}
    diverged_at = np.full(n_networks, -1, dtype=np.int64)
    theta = model.theta
    alive = torch.ones(n_networks, dtype=torch.bool, device=dev)
    state: dict[str, Any] = {}
    perms = [np.empty(0, dtype=np.int64)] * n_networks
    cursor = np.zeros(n_networks, dtype=np.int64)
    lrs = []
    t0 = time.perf_counter()
    rec_i = 0

    def record(i, th):
        rec["trl"][:, i], rec["tra"][:, i] = evaluate(th, xtr, ytr, n_tr_eval)
        rec["tel"][:, i], rec["tea"][:, i] = evaluate(th, xte, yte, n_te_eval)
        if probes:
            _run_probes(probes, probe_rec, param_nets, th.detach().double().cpu().numpy(), model.shapes, model.sizes)
        if observe is not None:
            observe(record_steps[i], th.detach())

    if record_steps[0] == 0:
        record(0, theta)
        rec_i = 1
    loop = (
        _progress(range(steps), desc=f"training {n_networks} networks", total=steps) if show_progress else range(steps)
    )
    for step in loop:
        idx = np.empty((n_networks, batch_size), dtype=np.int64)
        for k in range(n_networks):  # index bookkeeping only: the networks are trained together below
            if cursor[k] + batch_size > perms[k].size:
                perms[k] = torch.randperm(n_train, generator=gens[k]).numpy()
                cursor[k] = 0
            idx[k] = perms[k][cursor[k] : cursor[k] + batch_size]
            cursor[k] += batch_size
        tidx = torch.from_numpy(idx).to(dev)
        xb, yb = xtr[tidx], ytr[tidx]
        th = theta.detach().requires_grad_(True)
        model.training = True
        if cdtype != tdtype:  # reduced precision: cast the master weights and the batch, cast the logits back
            logits = model.forward(th.to(cdtype), xb.to(cdtype)).to(tdtype)
        else:
            logits = model.forward(th, xb)
        model.training = False
        E, B, C = logits.shape
        ce = torch.nn.functional.cross_entropy(logits.reshape(E * B, C), yb.reshape(E * B), reduction="none")
        loss = ce.view(E, B).mean(dim=1)
        extra = None if penalty is None else penalty(th)
        if extra is not None:
            loss = loss + extra
        ok = torch.isfinite(loss) & alive
        total = torch.where(ok, loss, torch.zeros_like(loss)).sum()
        (grad,) = torch.autograd.grad(total, th)
        grad = torch.where(ok[:, None], grad, torch.zeros_like(grad))
        if noise is not None and (noise.grad_noise > 0 or noise.reduction_noise > 0):
            grad = _noisy_gradient(torch, grad, noise, model.noise_generators)
        rate = schedule(step)
        lrs.append(rate)
        with torch.no_grad():
            update = _update(torch, run, state, grad, rate)
            new = theta - update
            fine = ok & torch.isfinite(new).all(dim=1)
            newly_dead = alive & ~fine
            if bool(newly_dead.any()):
                diverged_at[newly_dead.cpu().numpy()] = step
                alive = alive & fine
            theta = torch.where(alive[:, None], new, theta)
        if rec_i < len(record_steps) and record_steps[rec_i] == step + 1:
            record(rec_i, theta)
            rec_i += 1
    seconds = time.perf_counter() - t0
    params = {
        "n_train": int(n_train),
        "n_test": int(xte.shape[0]),
        "n_eval_train": int(n_tr_eval),
        "n_eval_test": int(n_te_eval),
        "steps": int(steps),
        "record_every": int(record_every),
        "momentum": momentum if optimizer == "momentum" else None,
        "betas": [beta1, beta2] if optimizer == "adam" else None,
        "lr_first": lrs[0] if lrs else schedule(0),
        "lr_last": lrs[-1] if lrs else schedule(0),
        "dtype": dtype_name,
        "n_params_per_network": model.n_params,
        "input_shape": list(shape),
        "noise": None if noise is None else dataclasses.asdict(noise),
    }
    out = []
    for j, this in enumerate(nets):
        rows = slice(j * n_per_net, (j + 1) * n_per_net)
        out.append(
            TrainingCurves(
                steps=np.asarray(record_steps, dtype=np.int64),
                train_loss=rec["trl"][rows],
                train_accuracy=rec["tra"][rows],
                test_loss=rec["tel"][rows],
                test_accuracy=rec["tea"][rows],
                diverged_at=diverged_at[rows],
                net=this,
                dataset=data.name,
                optimizer=optimizer,
                lr=float(params["lr_first"]),
                batch_size=batch_size,
                seconds=seconds,
                device=str(dev),
                params={**params, "n_nets_trained_together": len(nets)},
                probes={k: np.stack(v, axis=1)[rows] for k, v in probe_rec.items()},
            )
        )
    return out
