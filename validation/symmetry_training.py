"""Training ensembles of fully-connected skip networks (seed 004, Sec. 2.4) with PyTorch.

The networks of Orhan (2017), eqs. 24-26 (:func:`meanfield.landscape.skip_network` is the NumPy
reference of the hidden stack, and a test checks the two agree):

``x_1 = relu(W_0 x + b_0)`` (input layer), then ``depth`` hidden layers

- plain (eq. 24): ``x_{l+1} = relu(W_l x_l + b_l + c_l)``,
- residual (eq. 25): ``... + Q_l x_l``,
- hyper-residual (eq. 26): ``... + Q_l x_l + [P_{l-1} x_{l-1} + ... + P_1 x_1] / (l - 1)``,

with ``c_l = a l + b`` an optional untrained constant bias profile (Sec. 2.4.3, Fig. 12), and a
linear read-out ``W_out x_{depth+1} + b_out`` trained with softmax cross-entropy and Adam. The
Sec. 2.4.1 variants: ``bias_reg=(sigma, strength)`` adds ``strength sum_l ||b_l - b*_l||^2`` with
fixed targets ``b*_l ~ N(0, sigma^2)`` (BiasSymmBreak; ``sigma = 0`` is BiasL2Reg) and
``bias_init_sigma`` initialises the biases to such targets without the penalty (BiasInit);
``batchnorm_layer`` normalises one hidden layer's pre-activations (BiasSymmBreak+BN, Fig. 8).

An *ensemble* of ``n_members`` independent networks is trained at once (batched matrix products,
one parameter tensor per layer with a leading member axis); members share the minibatch sequence
(common random numbers) and differ in their initial weights, skip matrices and bias targets.

This is the project's training loop for seed 004 until the shared ensemble trainer
(``meanfield.validation.training``, another branch at the time of writing) lands; it is written so
that :func:`train_skip_ensemble` can delegate to it without changing its signature or result.

Randomness: ``rng`` (None, int, SeedSequence or NumPy Generator) is split with ``spawn`` into the
streams of the initial weights, the skip matrices, the bias targets, the minibatches and the
Hessian subsets; PyTorch's own generator is not used (every random number is drawn by NumPy), so
a run is reproducible on any machine up to floating-point reduction order.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from meanfield import Result
from meanfield import landscape as L
from meanfield.checks import as_float_array, check_int, check_rng, check_scalar

__all__ = ["SkipTrainingResult", "rescaled_accuracy_ratio", "train_skip_ensemble"]

ARCHITECTURES = ("plain", "residual", "hyper_residual")
#: Largest Adam learning rate (Adam's steps are ~lr per parameter; far above it nothing trains and
#: float32 overflows).
MAX_LR = 10.0
#: Largest ``n_members * steps * batch * width * (width * depth + d)``: a bound on the work of one call.
MAX_WORK = 5e13


def _torch():
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError('train_skip_ensemble needs PyTorch: pip install "meanfield-theory[torch]"') from exc
    return torch


class _one_thread:
    """Run PyTorch with one intra-op thread (restored afterwards): the matrices here are small, and
    on a shared, oversubscribed machine two spinning threads made a batched product 75 times
    slower than one (measured: 27 ms against 0.36 ms for 4 x (500 x 32) @ (32 x 32))."""

    def __init__(self, torch):
        self.torch = torch

    def __enter__(self):
        self.saved = self.torch.get_num_threads()
        self.torch.set_num_threads(1)

    def __exit__(self, *exc):
        self.torch.set_num_threads(self.saved)


@dataclass(frozen=True)
class SkipTrainingResult(Result):
    """Outcome of :func:`train_skip_ensemble` (arrays over records ``r`` and members ``e``).

    Attributes
    ----------
    steps : ndarray of int, shape (n_records,)
        Adam steps taken at each record (0 = initialisation).
    train_accuracy, test_accuracy, loss : ndarray, shape (n_records, n_members)
        Accuracy in [0, 1] on the whole training / test set, and the training cross-entropy
        (without the bias penalty). ``test_accuracy`` is NaN-free: it is empty (shape
        ``(n_records, 0)``) when no test set was given.
    overlap_min, incoming_min, outgoing_min : ndarray, shape (n_records, n_members)
        Minimum over the hidden matrices ``W_1 .. W_depth`` of
        :func:`meanfield.landscape.singularity_measures`' relative overlap distance and
        incoming / outgoing norms (0 = an exact overlap or elimination singularity).
    hessian_steps : ndarray of int, shape (n_hessian,)
        Steps at which the Hessian was computed (empty unless ``hessian_every`` was given).
    degenerate_fraction : ndarray, shape (n_hessian, n_members)
        :func:`meanfield.landscape.degenerate_fraction` of the Hessian of the training loss on a
        fixed subset, in the hidden parameters ``W_l, b_l`` (``l = 1 .. depth``).
    hessian_eigenvalues : ndarray, shape (n_hessian, n_members, n_hidden_parameters)
    grad_norms : ndarray, shape (n_members, depth + 1)
        Root-mean-square over a batch of ``||dL / dx_l||`` for the layers ``x_1 .. x_{depth+1}``
        at the end of training (Fig. 8a).
    params : dict of ndarray
        Final parameters with a leading member axis: ``W0 (E, n, d)``, ``b0``, ``W (E, depth, n, n)``,
        ``b (E, depth, n)``, ``Wout (E, c, n)``, ``bout``, and the fixed ``Q``, ``P``, ``c``.
    architecture : str
    """

    steps: np.ndarray
    train_accuracy: np.ndarray
    test_accuracy: np.ndarray
    loss: np.ndarray
    overlap_min: np.ndarray
    incoming_min: np.ndarray
    outgoing_min: np.ndarray
    hessian_steps: np.ndarray
    degenerate_fraction: np.ndarray
    hessian_eigenvalues: np.ndarray
    grad_norms: np.ndarray
    params: dict
    architecture: str


def _matrix_factory(factory, name, n, rng, count):
    if factory is None:
        return None
    if not callable(factory):
        raise TypeError(f"{name} must be None or a callable rng -> (n, n) array, got {type(factory).__name__}")
    out = []
    for i in range(count):
        q = as_float_array(factory(rng), f"{name}(rng) [call {i}]")
        if q.shape != (n, n):
            raise ValueError(f"{name}(rng) must return an (n, n) = {(n, n)} array, got {q.shape}")
        out.append(q)
    return np.stack(out)


def _labels(y, n, name, n_classes):
    y = np.asarray(y)
    if y.shape != (n,) or y.dtype.kind not in "iu" or (n and (y.min() < 0 or y.max() >= n_classes)):
        raise ValueError(f"{name} must be {n} integer labels in [0, {n_classes}), got dtype {y.dtype}, shape {y.shape}")
    return y.astype(np.int64)


def _forward(torch, p, x, arch, bn_layer, keep=False):
    """Logits of every member for inputs ``x`` (B, d); with ``keep`` also the layers ``x_1..``."""
    h = torch.relu(torch.matmul(x, p["W0"].transpose(1, 2)) + p["b0"][:, None, :])
    hist = [h]
    depth = p["W"].shape[1]
    for idx in range(depth):
        l = idx + 1
        pre = torch.bmm(h, p["W"][:, idx].transpose(1, 2)) + p["b"][:, idx][:, None, :]
        if p["c"] is not None:
            pre = pre + p["c"][idx]
        if bn_layer is not None and idx == bn_layer:
            mu = pre.mean(dim=1, keepdim=True)
            var = pre.var(dim=1, unbiased=False, keepdim=True)
            pre = (pre - mu) / torch.sqrt(var + 1e-5)
        new = torch.relu(pre)
        if arch != "plain":
            new = new + (h if p["Q"] is None else torch.bmm(h, p["Q"][:, idx].transpose(1, 2)))
        if arch == "hyper_residual" and l >= 2:
            longs = p["P"] if p["P"] is not None else p["Q"]
            if longs is None:
                far = sum(hist[:-1])
            else:
                far = sum(torch.bmm(xk, longs[:, k].transpose(1, 2)) for k, xk in enumerate(hist[:-1]))
            new = new + far / (l - 1)
        if keep:
            new.retain_grad()
        h = new
        hist.append(h)
    logits = torch.bmm(h, p["Wout"].transpose(1, 2)) + p["bout"][:, None, :]
    return (logits, hist) if keep else logits


def _accuracy(torch, p, x, y, arch, bn_layer, chunk=2048):
    correct = None
    with torch.no_grad():
        for s in range(0, x.shape[0], chunk):
            logits = _forward(torch, p, x[s : s + chunk], arch, bn_layer)
            c = (logits.argmax(-1) == y[s : s + chunk]).sum(-1)
            correct = c if correct is None else correct + c
    return (correct.double() / x.shape[0]).numpy()


def _xent(torch, logits, y):
    e = logits.shape[0]
    return (
        torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.repeat(e), reduction="none")
        .view(e, -1)
        .mean(-1)
    )


def _hessian_eigs(torch, p, member, x, y, arch, bn_layer):
    """Eigenvalues of the Hessian of member ``member``'s loss on ``(x, y)`` in its hidden W_l, b_l (float64)."""
    q = {k: (None if v is None else v[member : member + 1].detach().double()) for k, v in p.items() if k != "c"}
    q["c"] = None if p["c"] is None else p["c"].double()
    depth, n = q["W"].shape[1], q["W"].shape[2]
    xd = x.double()
    flat0 = torch.cat([q["W"].reshape(-1), q["b"].reshape(-1)])

    def loss(flat):
        r = dict(q)
        r["W"] = flat[: depth * n * n].view(1, depth, n, n)
        r["b"] = flat[depth * n * n :].view(1, depth, n)
        return _xent(torch, _forward(torch, r, xd, arch, bn_layer), y)[0]

    # forward-over-reverse (torch.func); as fast as autograd.functional.hessian in steady state and
    # without its first-call overhead (benchmarks/symmetry_training.py)
    h = torch.func.jacfwd(torch.func.jacrev(loss))(flat0).detach()
    # eigenvalues by torch under the one-thread setting: NumPy's threaded LAPACK took 0.74 s for
    # a 288 x 288 matrix on the shared machine, torch's single thread a few milliseconds
    return torch.linalg.eigvalsh(0.5 * (h + h.T)).numpy()


def train_skip_ensemble(
    architecture: str,
    x_train: ArrayLike,
    y_train: ArrayLike,
    x_test: ArrayLike | None = None,
    y_test: ArrayLike | None = None,
    *,
    n_members: int = 4,
    width: int = 32,
    depth: int = 10,
    steps: int = 500,
    lr: float = 5e-4,
    batch: int = 500,
    sigma_w2: float = 1.0,
    skips: Callable[[np.random.Generator], np.ndarray] | None = None,
    long_skips: Callable[[np.random.Generator], np.ndarray] | None = None,
    constant_bias: tuple[float, float] | None = None,
    bias_reg: tuple[float, float] | None = None,
    bias_init_sigma: float | None = None,
    batchnorm_layer: int | None = None,
    record_every: int = 50,
    hessian_every: int | None = None,
    hessian_inputs: int = 128,
    n_classes: int = 10,
    rng: Any = None,
) -> SkipTrainingResult:
    """Train ``n_members`` independent skip networks (eqs. 24-26 of seed 004) with Adam on a classification task.

    Parameters
    ----------
    architecture : {"plain", "residual", "hyper_residual"}
    x_train : array_like, shape (n, d)
    y_train : array_like of int, shape (n,)
    x_test, y_test : array_like, optional
        A held-out set (test accuracy is recorded when given).
    n_members : int
        Independent networks (1 to 256).
    width, depth : int
        Hidden units per layer (>= 2) and hidden skip layers (>= 1); the paper: 128 and 30.
    steps : int
        Adam steps (>= 0).
    lr : float
        Adam's learning rate, in (0, :data:`MAX_LR`] (the paper: 5e-4).
    batch : int
        Minibatch size (>= 1; the paper: 500; capped at ``n``).
    sigma_w2 : float
        Initial weights ``N(0, sigma_w2 / fan_in)`` (> 0); 1.0 is the variance of Glorot's
        initialisation of a square layer (the paper does not state its initialisation).
    skips, long_skips : callable, optional
        ``f(rng) -> (width, width)`` array, called once per hidden layer and member for ``Q_l``
        (residual, hyper-residual; default identity) and ``P_l`` (hyper-residual; default ``Q_l``),
        e.g. ``lambda r: meanfield.landscape.folded_orthogonal(n, n // 4, r)``.
    constant_bias : (float, float), optional
        Untrained bias ``a l + b`` of hidden layer ``l = 1 .. depth`` (Fig. 12).
    bias_reg : (float, float), optional
        ``(sigma, strength)`` of the BiasSymmBreak penalty on the hidden biases (Sec. 2.4.1).
    bias_init_sigma : float, optional
        Initialise the hidden biases to ``N(0, sigma^2)`` targets (BiasInit); default zero.
    batchnorm_layer : int, optional
        0-based hidden layer whose pre-activations are batch-normalised (batch statistics, no
        affine parameters; evaluation uses the statistics of the evaluated set).
    record_every : int
        Steps between records of accuracy, loss and singularity measures (>= 1).
    hessian_every : int, optional
        Steps between Hessian spectra (None: none). Costly: the Hessian has
        ``depth (width^2 + width)`` rows, at most :data:`meanfield.landscape.MAX_HESSIAN_PARAMETERS`.
    hessian_inputs : int
        Training inputs (a fixed random subset) in the Hessian's loss (>= 1).
    n_classes : int
        >= 2.
    rng : None, int, SeedSequence or numpy.random.Generator

    Returns
    -------
    SkipTrainingResult

    Raises
    ------
    TypeError, ValueError
        Arguments of the wrong type or out of range (each named); ``ValueError`` when training
        diverges (non-finite loss: lower ``lr``) or the work exceeds :data:`MAX_WORK`.
    ImportError
        Without PyTorch (the ``torch`` extra).

    Notes
    -----
    Seed 004, Sec. 2.4 (eqs. 24-26), 2.4.1 (bias symmetry breaking), 2.4.2 (skip matrices),
    2.4.3 (constant bias profiles); Supp. Note 1 (singularities). Trained in float32; the Hessian
    is formed in float64 by automatic differentiation.
    """
    if not isinstance(architecture, str) or architecture not in ARCHITECTURES:
        raise ValueError(f"architecture must be one of {list(ARCHITECTURES)}, got {architecture!r}")
    n_members = check_int(n_members, "n_members", 1, 256)
    width = check_int(width, "width", 2, 4096)
    depth = check_int(depth, "depth", 1, 1000)
    steps = check_int(steps, "steps", 0, 10**7)
    batch = check_int(batch, "batch", 1)
    record_every = check_int(record_every, "record_every", 1)
    hessian_inputs = check_int(hessian_inputs, "hessian_inputs", 1)
    n_classes = check_int(n_classes, "n_classes", 2, 10**5)
    if hessian_every is not None:
        hessian_every = check_int(hessian_every, "hessian_every", 1)
        if depth * (width * width + width) > L.MAX_HESSIAN_PARAMETERS:
            raise ValueError(
                f"hessian_every: the hidden layers have {depth * (width * width + width)} parameters, more than "
                f"MAX_HESSIAN_PARAMETERS = {L.MAX_HESSIAN_PARAMETERS}; use a smaller width or depth"
            )
    lr = check_scalar(lr, "lr")
    if not 0 < lr <= MAX_LR:
        raise ValueError(f"lr must lie in (0, {MAX_LR:g}] (MAX_LR), got {lr}")
    sigma_w2 = check_scalar(sigma_w2, "sigma_w2")
    if not sigma_w2 > 0:
        raise ValueError(f"sigma_w2 must be > 0, got {sigma_w2}")
    if architecture == "plain" and (skips is not None or long_skips is not None):
        raise ValueError("skips and long_skips apply to the residual and hyper-residual architectures, not to 'plain'")
    if architecture == "residual" and long_skips is not None:
        raise ValueError("long_skips applies to the hyper-residual architecture only (eq. 26)")
    if constant_bias is not None:
        if not isinstance(constant_bias, (tuple, list)) or len(constant_bias) != 2:
            raise TypeError(f"constant_bias must be None or a pair (a, b) of floats, got {constant_bias!r}")
        constant_bias = (
            check_scalar(constant_bias[0], "constant_bias[0]"),
            check_scalar(constant_bias[1], "constant_bias[1]"),
        )
    if bias_reg is not None:
        if not isinstance(bias_reg, (tuple, list)) or len(bias_reg) != 2:
            raise TypeError(f"bias_reg must be None or a pair (sigma, strength), got {bias_reg!r}")
        reg_sigma, reg_strength = (
            check_scalar(bias_reg[0], "bias_reg[0] (sigma)"),
            check_scalar(bias_reg[1], "bias_reg[1] (strength)"),
        )
        if reg_sigma < 0 or reg_strength < 0:
            raise ValueError(f"bias_reg (sigma, strength) must both be >= 0, got {bias_reg!r}")
    if bias_init_sigma is not None:
        bias_init_sigma = check_scalar(bias_init_sigma, "bias_init_sigma")
        if bias_init_sigma < 0:
            raise ValueError(f"bias_init_sigma must be >= 0, got {bias_init_sigma}")
    if batchnorm_layer is not None:
        batchnorm_layer = check_int(batchnorm_layer, "batchnorm_layer", 0, depth - 1)
    xtr = as_float_array(x_train, "x_train")
    if xtr.ndim != 2 or xtr.shape[0] < 1 or xtr.shape[1] < 1:
        raise ValueError(f"x_train must be a non-empty (n, d) array, got shape {xtr.shape}")
    ytr = _labels(y_train, xtr.shape[0], "y_train", n_classes)
    if (x_test is None) != (y_test is None):
        raise ValueError("give both x_test and y_test, or neither")
    if x_test is not None:
        xte = as_float_array(x_test, "x_test")
        if xte.ndim != 2 or xte.shape[1] != xtr.shape[1] or xte.shape[0] < 1:
            raise ValueError(f"x_test must be a non-empty (m, {xtr.shape[1]}) array, got shape {xte.shape}")
        yte = _labels(y_test, xte.shape[0], "y_test", n_classes)
    work = float(n_members) * steps * min(batch, xtr.shape[0]) * width * (width * depth + xtr.shape[1])
    if work > MAX_WORK:
        raise ValueError(
            f"n_members * steps * batch * width * (width * depth + d) = {work:.3g} exceeds MAX_WORK = {MAX_WORK:.3g}"
        )
    torch = _torch()
    with _one_thread(torch):
        return _train(
            torch,
            architecture,
            xtr,
            ytr,
            xte if x_test is not None else None,
            yte if x_test is not None else None,
            n_members,
            width,
            depth,
            steps,
            lr,
            batch,
            sigma_w2,
            skips,
            long_skips,
            constant_bias,
            (reg_sigma, reg_strength) if bias_reg is not None else None,
            bias_init_sigma,
            batchnorm_layer,
            record_every,
            hessian_every,
            hessian_inputs,
            n_classes,
            check_rng(rng),
        )


def _train(
    torch,
    architecture,
    xtr,
    ytr,
    xte,
    yte,
    n_members,
    width,
    depth,
    steps,
    lr,
    batch,
    sigma_w2,
    skips,
    long_skips,
    constant_bias,
    bias_reg,
    bias_init_sigma,
    batchnorm_layer,
    record_every,
    hessian_every,
    hessian_inputs,
    n_classes,
    rng,
):
    n, d = xtr.shape
    batch = min(batch, n)
    x_test = xte
    if bias_reg is not None:
        reg_sigma, reg_strength = bias_reg
    r_init, r_skip, r_bias, r_batch, r_hess = rng.spawn(5)

    def normal(shape, fan_in):
        return r_init.standard_normal(shape) * math.sqrt(sigma_w2 / fan_in)

    e = n_members
    p_np = {
        "W0": normal((e, width, d), d),
        "b0": np.zeros((e, width)),
        "W": normal((e, depth, width, width), width),
        "b": np.zeros((e, depth, width)),
        "Wout": normal((e, n_classes, width), width),
        "bout": np.zeros((e, n_classes)),
    }
    fixed = {
        "Q": None
        if skips is None
        else np.stack([_matrix_factory(skips, "skips", width, r_skip, depth) for _ in range(e)]),
        "P": None
        if long_skips is None
        else np.stack([_matrix_factory(long_skips, "long_skips", width, r_skip, depth) for _ in range(e)]),
        "c": None if constant_bias is None else constant_bias[0] * np.arange(1, depth + 1) + constant_bias[1],
    }
    targets = None
    if bias_reg is not None:
        targets = reg_sigma * r_bias.standard_normal((e, depth, width))
    if bias_init_sigma is not None:
        p_np["b"] = bias_init_sigma * r_bias.standard_normal((e, depth, width))
    f32 = torch.float32
    p = {k: torch.tensor(v, dtype=f32, requires_grad=True) for k, v in p_np.items()}
    for k, v in fixed.items():
        p[k] = None if v is None else torch.tensor(v, dtype=f32)
    tgt = None if targets is None else torch.tensor(targets, dtype=f32)
    xt, yt = torch.tensor(xtr, dtype=f32), torch.tensor(ytr)
    if x_test is not None:
        xe, ye = torch.tensor(xte, dtype=f32), torch.tensor(yte)
    trainable = [p[k] for k in p_np]
    opt = torch.optim.Adam(trainable, lr=lr)
    hidx = r_hess.choice(n, size=min(hessian_inputs, n), replace=False)
    xh, yh = xt[hidx], yt[hidx]

    rec = {k: [] for k in ("steps", "train", "test", "loss", "ovl", "inc", "out")}
    hess_steps, hess_eigs = [], []

    def record(step):
        rec["steps"].append(step)
        rec["train"].append(_accuracy(torch, p, xt, yt, architecture, batchnorm_layer))
        if x_test is not None:
            rec["test"].append(_accuracy(torch, p, xe, ye, architecture, batchnorm_layer))
        with torch.no_grad():
            lv = torch.zeros(e, dtype=torch.float64)
            for s in range(0, n, 2048):
                lv += _xent(
                    torch, _forward(torch, p, xt[s : s + 2048], architecture, batchnorm_layer), yt[s : s + 2048]
                ).double() * min(2048, n - s)
        loss = (lv / n).numpy()
        if not np.all(np.isfinite(loss)):
            raise ValueError(f"training diverged (non-finite loss) by step {step}: lower lr (got {lr})")
        rec["loss"].append(loss)
        w = p["W"].detach().double().numpy()
        wout = p["Wout"].detach().double().numpy()
        ovl, inc, out = np.empty(e), np.empty(e), np.empty(e)
        for m in range(e):
            mats = list(w[m]) + [wout[m]]
            meas = L.singularity_measures(mats) if np.all(np.abs(w[m]).max(axis=(1, 2)) > 0) else None
            if meas is None:
                ovl[m] = inc[m] = out[m] = 0.0
                continue
            ovl[m] = meas.overlap_min[:depth].min()
            inc[m] = meas.incoming_min[:depth].min()
            out[m] = meas.outgoing_min[:depth].min()
        rec["ovl"].append(ovl)
        rec["inc"].append(inc)
        rec["out"].append(out)
        if hessian_every is not None and step % hessian_every == 0:
            hess_steps.append(step)
            hess_eigs.append([_hessian_eigs(torch, p, m, xh, yh, architecture, batchnorm_layer) for m in range(e)])

    for step in range(steps + 1):
        if step % record_every == 0 or step == steps or (hessian_every is not None and step % hessian_every == 0):
            record(step)
        if step == steps:
            break
        idx = torch.as_tensor(r_batch.choice(n, size=batch, replace=False))
        opt.zero_grad()
        loss = _xent(torch, _forward(torch, p, xt[idx], architecture, batchnorm_layer), yt[idx]).sum()
        if tgt is not None:
            loss = loss + reg_strength * ((p["b"] - tgt) ** 2).sum()
        loss.backward()
        opt.step()

    # gradient norms with respect to the layer activities (Fig. 8a), on one batch
    idx = torch.as_tensor(r_batch.choice(n, size=batch, replace=False))
    logits, hist = _forward(torch, p, xt[idx], architecture, batchnorm_layer, keep=True)
    hist[0].retain_grad()
    _xent(torch, logits, yt[idx]).sum().backward()
    grad_norms = np.stack(
        [np.sqrt((h.grad.double() ** 2).sum(-1).mean(-1).numpy()) if h.grad is not None else np.zeros(e) for h in hist],
        axis=1,
    )
    hess_ev = np.array(hess_eigs) if hess_eigs else np.zeros((0, e, depth * (width * width + width)))
    params = {k: v.detach().double().numpy() for k, v in p.items() if v is not None}
    return SkipTrainingResult(
        steps=np.array(rec["steps"]),
        train_accuracy=np.array(rec["train"]),
        test_accuracy=np.array(rec["test"]) if rec["test"] else np.zeros((len(rec["steps"]), 0)),
        loss=np.array(rec["loss"]),
        overlap_min=np.array(rec["ovl"]),
        incoming_min=np.array(rec["inc"]),
        outgoing_min=np.array(rec["out"]),
        hessian_steps=np.array(hess_steps, dtype=np.int64),
        degenerate_fraction=np.array([[L.degenerate_fraction(ev) for ev in row] for row in hess_ev])
        if hess_eigs
        else np.zeros((0, e)),
        hessian_eigenvalues=hess_ev,
        grad_norms=grad_norms,
        params=params,
        architecture=architecture,
    )


def rescaled_accuracy_ratio(
    result: SkipTrainingResult,
    x: ArrayLike,
    y: ArrayLike,
    g: float = 10.0,
    *,
    batchnorm_layer: int | None = None,
    rng: Any = None,
) -> np.ndarray:
    """Accuracy of each trained member after ``W_k -> g W_k``, ``W_l -> W_l / g`` over its accuracy before (Fig. 2c of seed 004).

    For each member two different weight matrices ``k < l`` are drawn uniformly among the
    ``depth + 2`` layers (input, hidden, read-out); the trained biases of layers ``k .. l - 1``
    are multiplied by ``g`` (the constant biases of Fig. 12 are not).

    Parameters
    ----------
    result : SkipTrainingResult
    x, y : array_like
        The set on which accuracy is measured (the paper: the training set).
    g : float
        Rescaling factor (finite, > 0).
    batchnorm_layer : int, optional
        As given to :func:`train_skip_ensemble`.
    rng : None, int, SeedSequence or numpy.random.Generator
        Draws the pairs ``(k, l)``.

    Returns
    -------
    ndarray, shape (n_members,)
        Ratios (>= 0; 1 = the rescaling symmetry holds). A member whose accuracy before is 0
        gets ratio 1 if its accuracy after is 0 too, else the accuracy after divided by 1/len(x).

    Raises
    ------
    TypeError, ValueError
        Bad arguments.
    """
    if not isinstance(result, SkipTrainingResult):
        raise TypeError(f"result must be a SkipTrainingResult, got {type(result).__name__}")
    g = check_scalar(g, "g")
    if not g > 0:
        raise ValueError(f"g must be > 0, got {g}")
    rng = check_rng(rng)
    torch = _torch()
    xs = as_float_array(x, "x")
    if xs.ndim != 2 or xs.shape[1] != result.params["W0"].shape[2]:
        raise ValueError(f"x must be (n, {result.params['W0'].shape[2]}), got {xs.shape}")
    ys = _labels(y, xs.shape[0], "y", result.params["Wout"].shape[1])
    p = {k: torch.tensor(v) for k, v in result.params.items()}
    for k in ("Q", "P", "c"):
        p.setdefault(k, None)
    xt, yt = torch.tensor(xs), torch.tensor(ys)
    with _one_thread(torch):
        return _rescaled(torch, p, xt, yt, result, g, batchnorm_layer, rng, len(xs))


def _rescaled(torch, p, xt, yt, result, g, batchnorm_layer, rng, n_x):
    before = _accuracy(torch, p, xt, yt, result.architecture, batchnorm_layer)
    depth = p["W"].shape[1]
    ratios = np.empty(p["W0"].shape[0])
    for m in range(len(ratios)):
        k, l = sorted(rng.choice(depth + 2, size=2, replace=False))
        q = {key: (None if v is None else v.clone()) for key, v in p.items()}
        # layer index 0 = input layer, 1..depth = hidden, depth + 1 = read-out
        names = [("W0", "b0", None)] + [("W", "b", i) for i in range(depth)] + [("Wout", "bout", None)]
        for j, factor in ((k, g), (l, 1.0 / g)):
            wn, _, i = names[j]
            if i is None:
                q[wn][m] *= factor
            else:
                q[wn][m, i] *= factor
        for j in range(k, l):
            _, bn, i = names[j]
            if i is None:
                q[bn][m] *= g
            else:
                q[bn][m, i] *= g
        after = _accuracy(torch, q, xt, yt, result.architecture, batchnorm_layer)[m]
        ratios[m] = after / before[m] if before[m] > 0 else (1.0 if after == 0 else after * n_x)
    return ratios
