"""Orhan 2017's skip networks on the ensemble trainer: the networks, their training and their Hessians.

The networks of Orhan (2017), eqs. 24-26 (:func:`meanfield.landscape.skip_network` is the NumPy
reference of the hidden stack, and a test checks the two agree):

``x_1 = relu(W_0 x + b_0)`` (input layer), then ``depth`` hidden layers

- plain (eq. 24): ``x_{l+1} = relu(W_l x_l + b_l + c_l)``,
- residual (eq. 25): ``... + Q_l x_l``,
- hyper-residual (eq. 26): ``... + Q_l x_l + [P_{l-1} x_{l-1} + ... + P_1 x_1] / (l - 1)``,
- path-residual (Sec. 2.2, Fig. 3d): ``... + 1 1^T x_l / width``,

with ``c_l = a l + b`` an optional untrained constant bias profile (Sec. 2.4.3, Fig. 12), and a
linear read-out ``W_out x_{depth+1} + b_out`` trained with softmax cross-entropy and Adam. The
Sec. 2.4.1 variants: ``bias_reg=(sigma, strength)`` adds ``strength sum_l ||b_l - b*_l||^2`` with
fixed targets ``b*_l ~ N(0, sigma^2)`` (BiasSymmBreak; ``sigma = 0`` is BiasL2Reg) and
``bias_init_sigma`` initialises the biases to such targets without the penalty (BiasInit);
``batchnorm_layer`` normalises one hidden layer's pre-activations (BiasSymmBreak+BN, Fig. 8).

One training engine: the networks are :class:`SkipNet` nets of the project's ensemble trainer
:func:`meanfield.train.train_ensemble` (a network family registered by :mod:`meanfield.train`);
:func:`train_skip_ensemble` only translates the arguments, and measures the trained parameters at the trainer's
recorded steps through the net's ``monitor`` hook: the singularity measures of Supp. Note 1 and the
exact Hessian spectrum of the hidden parameters (float64, from the Hessian's closed structure;
PyTorch autodiff with ``batchnorm_layer``). There is no second training loop.

Randomness: ``rng`` (None, int, SeedSequence or NumPy Generator) is split with ``spawn`` into the
trainer's stream (which spawns one child per network: its initial weights, skip matrices, bias
targets and mini-batch order, see :mod:`meanfield.train`) and the stream of the
Hessian subset and the gradient-norm batch. Network ``k`` of two calls with the same ``rng`` and
different architectures starts from the same weights and sees the same mini-batches (common random
numbers); the same ``rng`` on the same device gives identical curves.
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
from meanfield.checks import as_float_array, check_int, check_rng, check_scalar, renamed_kwargs

from ._checks import _torch
from ._data import TrainingData
from ._engine import train_ensemble
from ._skip import ARCHITECTURES, SkipModel, SkipNet, pack
from ._skip_hessians import hessian_one, hessians_exact

__all__ = [
    "ARCHITECTURES",
    "SkipNet",
    "SkipTrainingResult",
    "rescaled_accuracy_ratio",
    "skip_ensemble_hessians",
    "train_skip_ensemble",
]

#: Largest Adam learning rate (Adam's steps are ~lr per parameter; far above it nothing trains and
#: float32 overflows).
MAX_LR = 10.0
#: Largest ``n_members * steps * batch * width * (width * depth + d)``: a bound on the work of one call.
MAX_WORK = 5e13


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


def _labels(y, n, name, n_classes):
    y = np.asarray(y)
    if y.shape != (n,) or y.dtype.kind not in "iu" or (n and (y.min() < 0 or y.max() >= n_classes)):
        raise ValueError(f"{name} must be {n} integer labels in [0, {n_classes}), got dtype {y.dtype}, shape {y.shape}")
    return y.astype(np.int64)


def _accuracy(torch, model, theta, x, y, chunk=2048):
    """Accuracy of every network (rows of ``theta``) on ``(x, y)``; batch norm uses each chunk's statistics."""
    correct = None
    e = theta.shape[0]
    with torch.no_grad():
        for s in range(0, x.shape[0], chunk):
            xb = x[s : s + chunk]
            logits = model.forward(theta, xb.unsqueeze(0).expand(e, *xb.shape))
            c = (logits.argmax(-1) == y[s : s + chunk]).sum(-1)
            correct = c if correct is None else correct + c
    return (correct.double() / x.shape[0]).cpu().numpy()


def _hessians(torch, model, theta, x, y, method="exact"):
    """Hidden-parameter Hessians (E, p, p) of every network (rows of ``theta``), float64.

    ``"exact"``: all members at once from the Hessian's closed structure
    (``meanfield/train/_skip_hessians.py``); ``"autodiff"`` (and always with batch
    normalisation): forward-over-reverse autodiff one network at a time.
    """
    if method == "exact" and model.net.batchnorm_layer is None:
        return hessians_exact(torch, model, theta, x, y)
    return torch.stack([hessian_one(torch, model, theta[m], x, y) for m in range(theta.shape[0])])


def _hessian_eigs(torch, model, theta, x, y, method="exact"):
    """Eigenvalues (E, p) of the hidden-parameter Hessian of every network (rows of ``theta``)."""
    h = _hessians(torch, model, theta, x, y, method)
    # eigenvalues by torch under the one-thread setting: NumPy's threaded LAPACK took 0.74 s for
    # a 288 x 288 matrix on the shared machine, torch's single thread a few milliseconds
    return torch.linalg.eigvalsh(0.5 * (h + h.transpose(1, 2))).cpu().numpy()


class _Monitor:
    """The measurements of the trained parameters at the trainer's recorded steps (``SkipNet.monitor``)."""

    def __init__(self, torch, keep_steps, hessian_every, xh, yh):
        self.torch = torch
        self.keep = set(keep_steps)
        self.hessian_every = hessian_every
        self.xh, self.yh = xh, yh
        self.sing, self.hess_steps, self.hess = [], [], []
        self.model = self.theta = None

    def __call__(self, model, step, theta):
        self.model, self.theta = model, theta
        if step not in self.keep:
            return
        p = model.unpack(theta)
        w, wout = p["W"], p["Wout"]
        depth = w.shape[1]
        e = w.shape[0]
        meas = np.zeros((3, e))
        for m in range(e):
            if not np.all(np.abs(w[m]).max(axis=(1, 2)) > 0):
                continue  # a zero matrix: an exact elimination singularity (all three measures 0)
            s = L.singularity_measures(list(w[m]) + [wout[m]])
            meas[:, m] = s.overlap_min[:depth].min(), s.incoming_min[:depth].min(), s.outgoing_min[:depth].min()
        self.sing.append(meas)
        if self.hessian_every is not None and step % self.hessian_every == 0:
            self.hess_steps.append(step)
            self.hess.append(_hessian_eigs(self.torch, model, theta, self.xh, self.yh))


@renamed_kwargs(n_members="n_networks", batch="batch_size")
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
    """Train ``n_networks`` independent skip networks (eqs. 24-26 of Orhan 2017) with Adam on a classification task.

    Parameters
    ----------
    architecture : {"plain", "residual", "hyper_residual", "path_residual"}
        ``"path_residual"``: Sec. 2.2's skip matrix of ones divided by the width (Fig. 3d).
    x_train : array_like, shape (n, d)
    y_train : array_like of int, shape (n,)
    x_test, y_test : array_like, optional
        A held-out set (test accuracy is recorded when given).
    n_networks : int
        Independent networks (1 to 256).
    width, depth : int
        Hidden units per layer (>= 2) and hidden skip layers (>= 1); the paper: 128 and 30.
    steps : int
        Adam steps (>= 0).
    lr : float
        Adam's learning rate, in (0, :data:`MAX_LR`] (the paper: 5e-4).
    batch_size : int
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
    Orhan 2017, Sec. 2.4 (eqs. 24-26), 2.4.1 (bias symmetry breaking), 2.4.2 (skip matrices),
    2.4.3 (constant bias profiles); Supp. Note 1 (singularities). Trained in float32; the Hessian
    is formed in float64 from its exact closed structure (``method="exact"`` of
    :func:`skip_ensemble_hessians`), by automatic differentiation with ``batchnorm_layer``.
    """
    if not isinstance(architecture, str) or architecture not in ARCHITECTURES:
        raise ValueError(f"architecture must be one of {list(ARCHITECTURES)}, got {architecture!r}")
    n_members = check_int(n_members, "n_networks", 1, 256)
    width = check_int(width, "width", 2, 4096)
    depth = check_int(depth, "depth", 1, 1000)
    steps = check_int(steps, "steps", 0, 10**7)
    batch = check_int(batch, "batch_size", 1)
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
    if architecture in ("plain", "path_residual") and (skips is not None or long_skips is not None):
        raise ValueError(
            f"skips and long_skips apply to the residual and hyper-residual architectures, not to {architecture!r}"
        )
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
        net_kw = dict(
            architecture=architecture,
            depth=depth,
            width=width,
            sigma_w2=sigma_w2,
            skips=skips,
            long_skips=long_skips,
            constant_bias=constant_bias,
            bias_reg=(reg_sigma, reg_strength) if bias_reg is not None else None,
            bias_init_sigma=bias_init_sigma,
            batchnorm_layer=batchnorm_layer,
        )
        has_test = x_test is not None
        test = (xte, yte) if has_test else (xtr[:1], ytr[:1])  # a stand-in the result leaves out
        data = TrainingData(xtr, ytr, *test, n_classes, "train_skip_ensemble arrays")
        rng = check_rng(rng)
        return _train(
            torch, net_kw, data, has_test, n_members, steps, lr, batch, record_every, hessian_every, hessian_inputs, rng
        )


def _train(
    torch, net_kw, data, has_test, n_members, steps, lr, batch, record_every, hessian_every, hessian_inputs, rng
):
    """Train the :class:`SkipNet` of ``net_kw`` (its keyword arguments) on ``data`` with the recording monitor.

    The arguments are those of :func:`train_skip_ensemble`, checked; ``data`` holds the training
    set and the test set, a one-example stand-in for the test set when ``has_test`` is false.
    """
    architecture, depth, width = net_kw["architecture"], net_kw["depth"], net_kw["width"]
    xtr, ytr = data.x_train, data.y_train
    n = xtr.shape[0]
    batch = min(batch, n)
    r_train, r_aux = rng.spawn(2)
    every = record_every if hessian_every is None else math.gcd(record_every, hessian_every)
    keep = sorted(
        {s for s in range(0, steps + 1, every) if s % record_every == 0 or (hessian_every and s % hessian_every == 0)}
        | {steps}
    )
    hidx = r_aux.choice(n, size=min(hessian_inputs, n), replace=False)
    xt, yt = torch.tensor(xtr, dtype=torch.float32), torch.tensor(ytr)
    monitor = _Monitor(torch, keep, hessian_every, xt[hidx], yt[hidx])
    net = SkipNet(**net_kw, monitor=monitor)
    curves = train_ensemble(
        net,
        n_members,
        data=data,
        steps=steps,
        batch_size=batch,
        lr=lr,
        optimizer="adam",
        record_every=every,
        n_eval=None,
        rng=r_train,
        num_threads=1,
    )
    if np.any(curves.diverged_at >= 0):
        raise ValueError(
            f"training diverged (non-finite loss) by step {int(curves.diverged_at.max())}: lower lr (got {lr})"
        )
    sel = np.isin(curves.steps, keep)
    model, theta = monitor.model, monitor.theta
    # gradient norms with respect to the layer activities (Fig. 8a), on one batch
    idx = torch.as_tensor(r_aux.choice(n, size=batch, replace=False))
    th = theta.clone().requires_grad_(True)
    logits, hist = model.forward(th, xt[idx].unsqueeze(0).expand(n_members, batch, -1), keep=True)
    hist[0].retain_grad()
    e, b, c = logits.shape
    torch.nn.functional.cross_entropy(logits.reshape(e * b, c), yt[idx].repeat(e), reduction="sum").div(b).backward()
    grad_norms = np.stack(
        [np.sqrt((h.grad.double() ** 2).sum(-1).mean(-1).numpy()) if h.grad is not None else np.zeros(e) for h in hist],
        axis=1,
    )
    n_hidden = depth * (width * width + width)
    hess_ev = np.array(monitor.hess) if monitor.hess else np.zeros((0, n_members, n_hidden))
    params = model.unpack(theta)
    params.pop("targets", None)
    if net_kw["constant_bias"] is not None:
        params["c"] = np.asarray(model.c, dtype=np.float64)
    sing = np.array(monitor.sing)
    return SkipTrainingResult(
        steps=curves.steps[sel],
        train_accuracy=curves.train_accuracy[:, sel].T.copy(),
        test_accuracy=curves.test_accuracy[:, sel].T.copy() if has_test else np.zeros((int(sel.sum()), 0)),
        loss=curves.train_loss[:, sel].T.copy(),
        overlap_min=sing[:, 0],
        incoming_min=sing[:, 1],
        outgoing_min=sing[:, 2],
        hessian_steps=np.array(monitor.hess_steps, dtype=np.int64),
        degenerate_fraction=np.array([[L.degenerate_fraction(ev) for ev in row] for row in hess_ev])
        if monitor.hess
        else np.zeros((0, n_members)),
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
    """Accuracy of each trained member after ``W_k -> g W_k``, ``W_l -> W_l / g`` over its accuracy before (Fig. 2c of Orhan 2017).

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
    xt, yt = torch.tensor(xs), torch.tensor(ys)
    with _one_thread(torch):
        return _rescaled(torch, result, xt, yt, g, batchnorm_layer, rng, len(xs))


#: Methods of :func:`skip_ensemble_hessians`.
HESSIAN_METHODS = ("exact", "autodiff")


def skip_ensemble_hessians(
    result: SkipTrainingResult,
    x: ArrayLike,
    y: ArrayLike,
    *,
    method: str = "exact",
    batchnorm_layer: int | None = None,
) -> np.ndarray:
    """Hessians of every trained member's mean cross-entropy on ``(x, y)`` in its hidden ``W_l, b_l`` (float64).

    The matrices whose spectra :func:`train_skip_ensemble` records (``hessian_every``): the
    parameters are the hidden block ``W_1, b_1, ..., W_depth, b_depth`` (row-major ``W_l``), the
    input and read-out layers held fixed; the bias penalty of ``bias_reg`` is not included.

    Parameters
    ----------
    result : SkipTrainingResult
        Its final parameters ``result.params`` are used.
    x : array_like, shape (B, d)
        Inputs of the loss (the trainer uses a fixed random subset of ``hessian_inputs`` rows).
    y : array_like of int, shape (B,)
        Labels in ``[0, n_classes)``.
    method : {"exact", "autodiff"}
        ``"exact"`` (default): all members at once from the Hessian's closed structure
        (Gauss-Newton term plus the bilinear terms of ``W_l x_l``, exact forward Jacobians;
        ``meanfield/train/_skip_hessians.py``), what the trainer uses; ``"autodiff"``:
        ``torch.func.jacfwd(jacrev(loss))`` one network at a time, the reference. The two agree
        to float64 rounding. With ``batchnorm_layer`` both use autodiff.
    batchnorm_layer : int, optional
        As given to :func:`train_skip_ensemble`.

    Returns
    -------
    ndarray, shape (n_members, p, p)
        ``p = depth (width^2 + width)`` (at most :data:`meanfield.landscape.MAX_HESSIAN_PARAMETERS`);
        symmetric up to rounding.

    Raises
    ------
    TypeError
        ``result`` not a :class:`SkipTrainingResult`, or ``method`` not a string.
    ValueError
        ``x`` not ``(B, d)`` with ``B >= 1`` and finite entries, ``y`` not ``B`` labels in
        range, ``method`` unknown, ``batchnorm_layer`` outside ``[0, depth)``, or ``p`` above
        :data:`meanfield.landscape.MAX_HESSIAN_PARAMETERS`.
    ImportError
        Without PyTorch (the ``torch`` extra).

    Notes
    -----
    Orhan 2017 (Orhan 2017), Sec. 2.4 and Figs. 7-12 (degenerate Hessian eigenvalues during
    training); Supp. Note 1 (why plain networks have degenerate directions). The ``"exact"``
    method is ``H = (1/B) sum_b J_b^T (diag s_b - s_b s_b^T) J_b + sum_l (e_{W_l[i,j]} g_{l,i}^T
    d x_{l,j} + transpose)``: ReLUs and skips are piecewise linear, so only the softmax
    cross-entropy and the products ``W_l x_l`` have second derivatives.
    """
    if not isinstance(result, SkipTrainingResult):
        raise TypeError(f"result must be a SkipTrainingResult, got {type(result).__name__}")
    if not isinstance(method, str):
        raise TypeError(f"method must be one of {list(HESSIAN_METHODS)}, got {method!r}")
    if method not in HESSIAN_METHODS:
        raise ValueError(f"method must be one of {list(HESSIAN_METHODS)}, got {method!r}")
    depth, width = result.params["W"].shape[1:3]
    if depth * (width * width + width) > L.MAX_HESSIAN_PARAMETERS:
        raise ValueError(
            f"result: the hidden layers have {depth * (width * width + width)} parameters, more than "
            f"MAX_HESSIAN_PARAMETERS = {L.MAX_HESSIAN_PARAMETERS}"
        )
    if batchnorm_layer is not None:
        batchnorm_layer = check_int(batchnorm_layer, "batchnorm_layer", 0, depth - 1)
    xs = as_float_array(x, "x")
    if xs.ndim != 2 or xs.shape[0] < 1 or xs.shape[1] != result.params["W0"].shape[2]:
        raise ValueError(f"x must be a non-empty (B, {result.params['W0'].shape[2]}) array, got shape {xs.shape}")
    ys = _labels(y, xs.shape[0], "y", result.params["Wout"].shape[1])
    torch = _torch()
    with _one_thread(torch):
        p = {k: np.array(v, dtype=np.float64) for k, v in result.params.items()}
        model, theta = _model_from_params(torch, result, p, batchnorm_layer)
        h = _hessians(torch, model, theta, torch.tensor(xs), torch.tensor(ys), method)
    return h.cpu().numpy()


def _model_from_params(torch, result, params, batchnorm_layer):
    """The trainer's model (float64, CPU) holding the given parameter dict of a :class:`SkipTrainingResult`."""
    depth, n = params["W"].shape[1:3]

    def layout_only(r):  # the fixed matrices come from params; only their presence matters here
        raise AssertionError("not called")

    net = SkipNet(
        result.architecture,
        depth,
        n,
        skips=layout_only if "Q" in params else None,
        long_skips=layout_only if "P" in params else None,
        batchnorm_layer=batchnorm_layer,
    )
    d, n_classes = params["W0"].shape[2], params["Wout"].shape[1]
    model = SkipModel(torch, net, (d,), n_classes, pack(net, params), torch.device("cpu"), torch.float64)
    if "c" in params:
        model.c = [float(v) for v in params["c"]]
    return model, model.theta


def _rescaled(torch, result, xt, yt, g, batchnorm_layer, rng, n_x):
    p = {k: np.array(v, dtype=np.float64) for k, v in result.params.items()}
    model, theta = _model_from_params(torch, result, p, batchnorm_layer)
    before = _accuracy(torch, model, theta, xt, yt)
    depth = p["W"].shape[1]
    ratios = np.empty(p["W0"].shape[0])
    for m in range(len(ratios)):
        k, l = sorted(rng.choice(depth + 2, size=2, replace=False))
        q = {key: v.copy() for key, v in p.items()}
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
        model_q, theta_q = _model_from_params(torch, result, q, batchnorm_layer)
        after = _accuracy(torch, model_q, theta_q, xt, yt)[m]
        ratios[m] = after / before[m] if before[m] > 0 else (1.0 if after == 0 else after * n_x)
    return ratios
