r"""The trainability experiments: ensembles of the papers' networks trained on the digits (PyTorch, ``torch`` extra).

Every experiment trains ensembles with :func:`meanfield.train.train_ensemble` on the embedded 8 x 8
digits (4 x 4 after 2 x 2 average pooling for the CNNs), at three sizes: ``"smoke"`` (seconds, for
tests), ``"default"`` (the reduced size of ``meanfield reproduce`` on 2 CPU cores) and ``"full"``
(closer to the papers; MNIST from ``$MEANFIELD_DATA_DIR`` when that folder holds the IDX files
(optionally gzipped), else CIFAR-10 when it holds the python batches ``data_batch_1`` ... and
``test_batch``, else the digits; both average-pooled by 4). The networks train on
``$MEANFIELD_TORCH_DEVICE`` (default ``cpu``; e.g. ``cuda`` for the ``--full`` runs). Each
experiment is run once per process and size and seed (an in-process cache), so the figures that
draw an experiment and the validation rows that test it (:mod:`meanfield.validation.trainability`)
share one run.

Experiments (name -> paper claim)
---------------------------------
``depth_scale``
    Xiao et al. 2018 Fig. 2: tanh networks train only while ``L < 6 xi_c`` (:func:`meanfield.dense.fixed_point`
    at ``sigma_b2 = 2e-5``). Fully-connected tanh networks on a (sigma_w2, depth) grid: the
    mean-field depth scale of the zero Fourier mode of a CNN is the dense one, and dense networks
    are what a CPU affords at these depths.
``deep_cnn``
    Xiao et al. 2018 Figs. 1, 3 and 5: critical (chi_1 = 1) tanh CNNs with delta-orthogonal (Algorithm 2),
    orthogonal (Algorithm 1) and Gaussian kernels, all of the same (largest affordable) depth.
``looks_linear``
    Burkholz & Dubatovka 2019 Figs. 3-4: deep ReLU networks with He (Gaussian, sigma_w2 = 2), GSM (sigma_w2 = 2) and
    orthogonal looks-linear (sigma_w2 = 1) weights, depths 1 to 10, SGD with the paper's
    learning-rate schedule ``(1e-4 + 3e-3 exp(-step / 1e4)) / L`` scaled up (see ``LL_LR_SCALE``).
``zero``
    Grzejdziak 2023 Fig. 2 and supplement Figs. 1-3: constant-width ReLU networks over depth, He
    initialisation with Gaussian, uniform and Rademacher weights against ZerO and ZerO*, Adam.
``kurtosis_accuracy``
    Grzejdziak 2023 supplement Fig. 1: He-initialised ReLU networks (Rademacher, uniform and Gaussian
    weights) over widths and depths, test accuracy after 500 Adam steps against the output kurtosis
    at initialisation from Prop. 4.3 (:func:`meanfield.kurtosis.propagate`, started from
    :func:`meanfield.kurtosis.input_statistics` of the training inputs, "projected" reading).
``nonuniform_v``
    Xiao et al. 2018 Fig. 4a: critical Gaussian tanh CNNs with the variance vectors GS0 (delta) ... GS4
    (uniform) of Fig. 4b, test accuracy over depth.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np

from meanfield import conv, dense
from meanfield.backend import substream
from meanfield.checks import renamed_kwargs
from meanfield.compare import RankTest, rank_correlation

from ._checks import _progress
from ._data import load_training_data
from ._engine import train_ensemble
from ._specs import ConvNet, DenseNet

__all__ = [
    "BOUNDARY_BAND",
    "CNN_LR",
    "CNN_LR_TIMES_DEPTH",
    "DEEP_CNN_DEPTH",
    "EXPERIMENTS",
    "LL_LR_SCALE",
    "SIGMA_B2_CNN",
    "SIGMA_B2_FIG2",
    "TRAINABLE_ACCURACY",
    "clear_cache",
    "cnn_learning_rate",
    "depth_scale_agreement",
    "experiment",
    "kurtosis_rank_test",
    "mode_energy_fraction",
    "nonuniform_v_rank_test",
    "training_data",
]

#: Burkholz & Dubatovka's schedule ``(1e-4 + 3e-3 exp(-step / 1e4)) / L`` is for 10^4 steps; at the reduced
#: step counts it is multiplied by this factor (recorded in the JSON).
LL_LR_SCALE = {"smoke": 10.0, "default": 10.0, "full": 1.0}

#: Learning rate of the CNN runs (SGD with momentum 0.9). 0.01 was tried first at depth 128: the
#: delta-orthogonal networks reached 0.7 training accuracy and then collapsed (too large a step for
#: 128 layers); 0.002 trains them steadily. Chosen once, before the validation rows were run.
CNN_LR = 0.002

#: Deeper than 250 layers the CNN learning rate falls like ``CNN_LR_TIMES_DEPTH / depth`` (the
#: per-layer step of the 250-layer runs): at 1,000 layers, 0.002 (4 channels, tried once) took the
#: delta-orthogonal networks to 0.28 test accuracy and back to 0.19; 5e-4 (8 channels) to 0.79.
CNN_LR_TIMES_DEPTH = 0.5
#: Depth of the critical CNNs of Figs. 1, 3, 5 at the default size: the largest round depth for which
#: every new training figure together stays within 6 CPU minutes (measured: docs/training.md).
DEEP_CNN_DEPTH = 1000

#: Bias variance of the tanh networks of Xiao et al. 2018 Fig. 2 (``depth_scale``).
SIGMA_B2_FIG2 = 2e-5
#: Bias variance of the critical tanh CNNs (``deep_cnn``, ``nonuniform_v``).
SIGMA_B2_CNN = 1e-5

_CACHE: dict = {}


def clear_cache() -> None:
    """Forget the experiments run in this process."""
    _CACHE.clear()


def _by_size(size, smoke, default, full):
    return {"smoke": smoke, "default": default, "full": full}[size]


def training_data(size: str = "default", downsample: int = 1):
    """The data set of the experiments at ``size`` (module notes): the digits, or at ``"full"`` the
    MNIST / CIFAR-10 files in ``$MEANFIELD_DATA_DIR``.

    Parameters
    ----------
    size : {"smoke", "default", "full"}
    downsample : int
        Extra average pooling (2 for the deep CNNs), ``1 <= downsample <= 8``.

    Returns
    -------
    meanfield.train.TrainingData

    Raises
    ------
    ValueError, TypeError
        An unknown size, ``downsample`` out of range, unreadable files.
    ImportError
        The digits without scikit-learn (the ``data`` extra).
    """
    if not isinstance(size, str) or size not in ("smoke", "default", "full"):
        raise ValueError(f"size must be 'smoke', 'default' or 'full', got {size!r}")
    if isinstance(downsample, (bool, np.bool_)) or not isinstance(downsample, (int, np.integer)):
        raise TypeError(f"downsample must be an int, got {downsample!r}")
    if not 1 <= downsample <= 8:
        raise ValueError(f"downsample must be in [1, 8], got {downsample}")
    return _data(size, int(downsample))


def _data(size: str, downsample: int = 1):
    data_dir = os.environ.get("MEANFIELD_DATA_DIR")
    if size == "full" and data_dir:
        root = Path(data_dir)
        if any((root / f"train-images{sep}idx3-ubyte{gz}").is_file() for sep in "-." for gz in ("", ".gz")):
            return load_training_data("mnist", data_dir=root, downsample=4 * downsample)
        if (root / "data_batch_1").is_file() and (root / "test_batch").is_file():
            # CIFAR-10 32 x 32 -> 8 x 8 (4 x 4 with downsample=2), the size of Xiao et al.'s 8 x 8 stage
            return load_training_data("cifar10", data_dir=root, downsample=4 * downsample)
    n_train = 400 if size == "smoke" else None
    return load_training_data(n_train=n_train, downsample=downsample)


def _device() -> str:
    """The torch device of the experiments: ``$MEANFIELD_TORCH_DEVICE`` (e.g. ``cuda``), default ``cpu``."""
    return os.environ.get("MEANFIELD_TORCH_DEVICE", "cpu") or "cpu"


def _summary(curves) -> dict:
    return {
        "steps": curves.steps,
        "train_accuracy": curves.train_accuracy,
        "test_accuracy": curves.test_accuracy,
        "train_loss": curves.train_loss,
        "test_loss": curves.test_loss,
        "diverged_at": curves.diverged_at,
        "seconds": curves.seconds,
    }


def _depth_sweep(depths, desc: str, train_at, n_specs: int, n_net: int):
    """Final accuracies of the ensembles trained at each depth: ``train_at(i, depth)`` trains one
    ensemble per spec and returns their curves. Returns the test and the training accuracies,
    arrays ``(len(depths), n_specs, n_net)``, and the training seconds summed over depths."""
    test = np.zeros((len(depths), n_specs, n_net))
    train = np.zeros_like(test)
    secs = 0.0
    for i, depth in enumerate(_progress(depths, desc=desc)):
        out = train_at(i, depth)
        for j, c in enumerate(out):
            test[i, j] = c.final_test_accuracy
            train[i, j] = c.final_train_accuracy
        secs += out[0].seconds
    return test, train, secs


def _depth_scale(size: str, seed: int) -> dict:
    sw = np.asarray(
        _by_size(size, [0.5, 1.0, 2.5], [0.3, 0.6, 0.9, 1.2, 1.6, 2.2, 3.0, 4.0], list(np.linspace(0.2, 4, 20)))
    )
    depths = _by_size(size, [2, 8], [2, 4, 8, 16, 32, 64], [10, 20, 40, 80, 160, 320, 600])
    width = _by_size(size, 16, 32, 128)
    steps = _by_size(size, 40, 300, 2500)
    n_net = _by_size(size, 1, 2, 4)
    data = _data(size)
    xi = np.array([float(dense.fixed_point("tanh", s, SIGMA_B2_FIG2).xi_c) for s in sw])
    if _distributed():  # grid cells as tasks (meanfield.parallel); the serial path trains one ensemble per depth
        acc, test, secs = _depth_scale_cells(sw, depths, width, steps, n_net, data, seed)
    else:

        def train_at(i, depth):
            return _fig2_train([_fig2_net(depth, width, s) for s in sw], n_net, data, steps, substream(seed, 1, i))

        test, acc, secs = _depth_sweep(depths, "trainability: depth scale", train_at, len(sw), n_net)
    return {
        "sigma_w2": sw,
        "depths": np.asarray(depths),
        "xi_c": xi,
        "train_accuracy": acc,
        "test_accuracy": test,
        "seconds": secs,
        "params": {
            "width": width,
            "steps": steps,
            "n_networks": n_net,
            "batch_size": 32,
            "lr": 0.01,
            "optimizer": "momentum 0.9",
            "sigma_b2": SIGMA_B2_FIG2,
            "activation": "tanh",
            "dataset": data.name,
        },
    }


def cnn_learning_rate(depth: int) -> float:
    """Learning rate of the deep CNN runs: ``min(CNN_LR, CNN_LR_TIMES_DEPTH / depth)``.

    Parameters
    ----------
    depth : int
        Convolution layers, ``1 <= depth <= 10^6``.

    Returns
    -------
    float
        :data:`CNN_LR` up to 250 layers, then the same step per layer (``0.5 / depth``): 5e-4 at
        the default 1,000 layers, 5e-5 at the full 10,000.

    Raises
    ------
    ValueError, TypeError
        ``depth`` not an int in range.
    """
    if isinstance(depth, (bool, np.bool_)) or not isinstance(depth, (int, np.integer)):
        raise TypeError(f"depth must be an int, got {depth!r}")
    if not 1 <= depth <= 10**6:
        raise ValueError(f"depth must be in [1, 10**6], got {depth}")
    return min(CNN_LR, CNN_LR_TIMES_DEPTH / int(depth))


def _deep_cnn(size: str, seed: int) -> dict:
    depth = _by_size(size, 8, DEEP_CNN_DEPTH, 10_000)
    channels = _by_size(size, 4, 8, 64)
    steps = _by_size(size, 20, 100, 10_000)
    lr = cnn_learning_rate(depth)
    n_net = _by_size(size, 1, 2, 2)
    data = _data(size, downsample=2)
    sw = float(dense.critical_sigma_w2("tanh", SIGMA_B2_CNN))
    inits = ("delta_orthogonal", "orthogonal", "gaussian")
    nets = [
        ConvNet(depth=depth, channels=channels, init=i, sigma_w2=sw, sigma_b2=SIGMA_B2_CNN, readout="flatten")
        for i in inits
    ]
    out = train_ensemble(
        nets,
        n_net,
        data=data,
        steps=steps,
        batch_size=32,
        lr=lr,
        optimizer="momentum",
        record_every=max(1, steps // 6),
        n_eval=200,
        rng=substream(seed, 2),
        device=_device(),
        show_progress=True,
    )
    return {
        "inits": list(inits),
        "runs": {i: _summary(c) for i, c in zip(inits, out)},
        "seconds": out[0].seconds,
        "params": {
            "depth": depth,
            "channels": channels,
            "steps": steps,
            "n_networks": n_net,
            "sigma_w2": sw,
            "sigma_b2": SIGMA_B2_CNN,
            "kernel": "3x3, periodic",
            "readout": "flatten",
            "batch_size": 32,
            "lr": lr,
            "lr_rule": f"min({CNN_LR}, {CNN_LR_TIMES_DEPTH} / depth)",
            "optimizer": "momentum 0.9",
            "dataset": data.name,
        },
    }


def _looks_linear(size: str, seed: int) -> dict:
    depths = _by_size(size, [2, 4], [1, 4, 10], list(range(1, 11)))
    width = _by_size(size, 16, 32, 100)
    steps = _by_size(size, 40, 400, 10_000)
    n_net = _by_size(size, 2, 8, 100)
    data = _data(size)
    scale = LL_LR_SCALE[size]
    specs = (("He", "gaussian", 2.0), ("GSM", "gsm", 2.0), ("looks-linear orthogonal", "looks_linear", 1.0))

    def train_at(i, depth):
        nets = [DenseNet(depth=depth, width=width, activation="relu", init=init, sigma_w2=s) for _, init, s in specs]

        def schedule(step):
            return scale * (1e-4 + 3e-3 * math.exp(-step / 1e4)) / depth

        batch_size = 100 if data.x_train.shape[0] >= 100 else 32
        rng = substream(seed, 3, i)
        return _train_to_end(nets, n_net, data, steps, rng, batch_size=batch_size, lr=schedule, n_eval=None)

    acc, train, secs = _depth_sweep(depths, "trainability: looks-linear", train_at, len(specs), n_net)
    lr = f"{scale:g} * (1e-4 + 3e-3 exp(-step/1e4)) / L"
    params = _dense_sweep_params(
        width, steps, n_net, batch_size=100, optimizer="sgd", lr=lr, data=data, sigma_w2={s[0]: s[2] for s in specs}
    )
    return _dense_sweep_result(specs, depths, acc, train, secs, params)


def _zero(size: str, seed: int) -> dict:
    depths = _by_size(size, [1, 4], [1, 10, 25, 50], list(range(0, 101, 10)))
    width = _by_size(size, 10, 10, 10)
    steps = _by_size(size, 40, 500, 500)
    lr = _by_size(size, 1e-3, 1e-3, 1e-4)
    n_net = _by_size(size, 1, 3, 5)
    data = _data(size)
    specs = (
        ("He Gaussian", "gaussian"),
        ("He uniform", "uniform"),
        ("He Rademacher", "rademacher"),
        ("ZerO", "zero"),
        ("ZerO*", "zero_star"),
    )

    def train_at(i, depth):
        nets = [DenseNet(depth=depth, width=width, activation="relu", init=init, sigma_w2=2.0) for _, init in specs]
        return _adam_train(nets, n_net, data, steps, lr, substream(seed, 4, i))

    acc, _, secs = _depth_sweep(depths, "trainability: ZerO", train_at, len(specs), n_net)
    params = _dense_sweep_params(width, steps, n_net, batch_size=64, optimizer="adam", lr=lr, data=data, sigma_w2=2.0)
    return _dense_sweep_result(specs, depths, acc, None, secs, params)


def _dense_sweep_params(width, steps, n_net, *, batch_size, optimizer, lr, data, sigma_w2) -> dict:
    """The ``params`` block of the dense depth sweeps (:func:`_looks_linear`, :func:`_zero`), keys in their order."""
    return {
        "width": width,
        "steps": steps,
        "n_networks": n_net,
        "batch_size": batch_size,
        "optimizer": optimizer,
        "lr": lr,
        "dataset": data.name,
        "sigma_w2": sigma_w2,
    }


def _dense_sweep_result(specs, depths, test, train, secs, params) -> dict:
    """The result of a dense depth sweep over initialisation ``specs`` (their first entries the labels).

    Parameters
    ----------
    specs : sequence of tuple
        One per initialisation, ``specs[j][0]`` its label.
    depths : sequence of int
    test, train : ndarray, shape (len(depths), len(specs), n_networks)
        Final test and training accuracies (:func:`_depth_sweep`); ``train=None`` leaves the
        training accuracies out of the result.
    secs : float
        Training seconds.
    params : dict

    Returns
    -------
    dict
        ``labels``, ``depths``, ``test_accuracy``, (``train_accuracy``), ``seconds``, ``params``.
    """
    out = {"labels": [s[0] for s in specs], "depths": np.asarray(depths), "test_accuracy": test}
    if train is not None:
        out["train_accuracy"] = train
    return {**out, "seconds": secs, "params": params}


def _nonuniform_v(size: str, seed: int) -> dict:
    # 8 x 8 images (64 Fourier modes) and depths 4-16, where the depth scales of A_v's modes
    # (-1 / log sigma, sigma a singular value) separate GS0 (every mode kept) from GS1 (5 modes with
    # sigma^L > 1/e at L = 16) and GS2-GS4 (the zero mode only): see mode_energy_fraction. On the
    # 4 x 4 images of the first version every non-uniform v had lost all but the zero mode by L = 8
    # (GS1's largest non-trivial singular value is 0.83 there), so depths 16-64 could not show it.
    depths = _by_size(size, [2, 4], [4, 8, 16], [4, 8, 16, 32, 64, 128])
    channels = _by_size(size, 4, 8, 64)
    steps = _by_size(size, 20, 200, 5_000)
    n_net = _by_size(size, 2, 3, 4)
    data = _data(size, downsample=_by_size(size, 2, 1, 1))
    sw = float(dense.critical_sigma_w2("tanh", SIGMA_B2_CNN))
    vs = np.array(conv.gs_family((3, 3), 5))  # the GS0 ... GS4 of fig_4b

    def train_at(i, depth):
        nets = [
            ConvNet(
                depth=depth,
                channels=channels,
                init="gaussian",
                v=tuple(v.ravel()),
                sigma_w2=sw,
                sigma_b2=SIGMA_B2_CNN,
                readout="flatten",
            )
            for v in vs
        ]
        rng = substream(seed, 5, i)
        return _train_to_end(nets, n_net, data, steps, rng, batch_size=32, lr=CNN_LR, optimizer="momentum", n_eval=200)

    acc, _, secs = _depth_sweep(depths, "trainability: non-uniform v", train_at, len(vs), n_net)
    image = data.image_shape[1:]
    return {
        "labels": [f"GS{j}" for j in range(len(vs))],
        "v": vs,
        "depths": np.asarray(depths),
        "test_accuracy": acc,
        "mode_energy_fraction": np.array([[mode_energy_fraction(v, image, d) for v in vs] for d in depths]),
        "seconds": secs,
        "params": {
            "image_shape": list(image),
            "channels": channels,
            "steps": steps,
            "n_networks": n_net,
            "sigma_w2": sw,
            "sigma_b2": SIGMA_B2_CNN,
            "batch_size": 32,
            "lr": CNN_LR,
            "optimizer": "momentum 0.9",
            "readout": "flatten",
            "dataset": data.name,
        },
    }


def _kurtosis_accuracy(size: str, seed: int) -> dict:
    from meanfield import kurtosis

    widths = _by_size(size, [5, 10], [5, 10, 20], list(range(5, 51, 5)))
    depths = _by_size(size, [2, 6], [5, 10, 20, 40], list(range(5, 51, 5)))
    steps = _by_size(size, 40, 500, 500)
    lr = _by_size(size, 1e-3, 1e-3, 1e-4)
    n_net = _by_size(size, 1, 2, 2)
    data = _data(size)
    laws = (("Rademacher", "rademacher", 1.0), ("uniform", "uniform", 1.8), ("Gaussian", "gaussian", 3.0))
    flat = data.x_train.reshape(data.x_train.shape[0], -1)
    log_kappa = np.zeros((len(widths), len(depths), len(laws)))
    acc = np.zeros((len(widths), len(depths), len(laws), n_net))
    secs = 0.0
    cases = [(i, w, k, d) for i, w in enumerate(widths) for k, d in enumerate(depths)]
    for i, width, k, depth in _progress(cases, desc="trainability: kurtosis"):
        for j, (_, _, kw) in enumerate(laws):
            # the first layer's pre-activation h1 = W1 x is the "He random vector" of Prop. 3.3 (y^(0));
            # Prop. 4.3 then runs over the depth - 1 hidden maps and the read-out, all of fan-in width
            st = kurtosis.input_statistics(flat, "projected", weight_kurtosis=kw)
            res = kurtosis.propagate(st.kappa0, st.c0, [width] * depth, weight_kurtosis=kw, sigma_x2=st.sigma_x2)
            log_kappa[i, k, j] = res.log_kappa[-1]
        nets = [DenseNet(depth=depth, width=width, activation="relu", init=law, sigma_w2=2.0) for _, law, _ in laws]
        out = _adam_train(nets, n_net, data, steps, lr, substream(seed, 6, i, k))
        for j, c in enumerate(out):
            acc[i, k, j] = c.final_test_accuracy
        secs += out[0].seconds
    return {
        "labels": [name for name, _, _ in laws],
        "widths": np.asarray(widths),
        "depths": np.asarray(depths),
        "log10_output_kurtosis": log_kappa / math.log(10.0),
        "test_accuracy": acc,
        "seconds": secs,
        "params": {
            "steps": steps,
            "lr": lr,
            "optimizer": "adam",
            "batch_size": 64,
            "n_networks": n_net,
            "sigma_w2": 2.0,
            "activation": "relu",
            "dataset": data.name,
            "input_statistics": "kurtosis.input_statistics(x_train, 'projected', weight_kurtosis)",
        },
    }


#: Experiment name -> function ``(size, seed) -> dict`` (see the module notes).
EXPERIMENTS = {
    "depth_scale": _depth_scale,
    "deep_cnn": _deep_cnn,
    "looks_linear": _looks_linear,
    "zero": _zero,
    "nonuniform_v": _nonuniform_v,
    "kurtosis_accuracy": _kurtosis_accuracy,
}


@renamed_kwargs(seed="rng")
def experiment(name: str, size: str = "default", seed: int = 0) -> dict:
    """Run (or fetch from this process's cache) one trainability experiment.

    Parameters
    ----------
    name : {"depth_scale", "deep_cnn", "looks_linear", "zero", "nonuniform_v", "kurtosis_accuracy"}
    size : {"smoke", "default", "full"}
    rng : int
        Non-negative; every ensemble gets its own spawned stream ``substream(seed, ...)``.

    Returns
    -------
    dict
        Arrays (accuracies with axes documented by the figures that draw them), ``seconds`` (wall
        time of the training) and ``params`` (every size and hyper-parameter used).

    Raises
    ------
    ValueError
        An unknown name or size, a negative seed.
    TypeError
        A seed that is not an int.
    ImportError
        PyTorch is missing (the ``torch`` extra).
    """
    if not isinstance(name, str) or name not in EXPERIMENTS:
        raise ValueError(f"name must be one of {tuple(EXPERIMENTS)}, got {name!r}")
    if not isinstance(size, str) or size not in ("smoke", "default", "full"):
        raise ValueError(f"size must be 'smoke', 'default' or 'full', got {size!r}")
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be a non-negative int, got {seed!r}")
    if seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed}")
    key = (name, size, int(seed))
    if key not in _CACHE:
        _CACHE[key] = EXPERIMENTS[name](size, int(seed))
    return _CACHE[key]


def mode_energy_fraction(v, shape, depth: int) -> float:
    """Fraction of a white signal's Fourier-mode energy that survives ``depth`` critical layers of A_v.

    Parameters
    ----------
    v : array_like
        Variance vector of the kernel (non-negative, summing to 1; :func:`meanfield.conv.gs_family`).
    shape : int or tuple of int
        Periodic image size on which A_v acts (e.g. ``(8, 8)``).
    depth : int
        Layers, ``0 <= depth <= 10^6``.

    Returns
    -------
    float
        ``mean(sigma ** (2 * depth))`` over the singular values ``sigma`` of A_v
        (:func:`meanfield.conv.averaging_singular_values`), in ``(0, 1]``: 1 for the delta vector
        (every mode kept), ``1 / n_modes`` in the deep limit of a vector that keeps only the
        zero mode.

    Raises
    ------
    ValueError, TypeError
        As :func:`meanfield.conv.averaging_singular_values`; ``depth`` not an int in range.

    Notes
    -----
    Xiao et al. 2018 eq. 2.12 (Sec. 2.1.6): near the critical point (``chi_c* = 1``) the deviation of the
    covariance along Fourier mode ``alpha`` decays like ``lambda_alpha^l``, so mode ``alpha`` has the
    depth scale ``-1 / log |lambda_alpha|``; Sec. 3.3 reads Fig. 4a as "the more poorly conditioned
    the singular values, the worse the model generalises" with depth. This score is the prediction
    of validation row 9 of :mod:`meanfield.validation.trainability` (the ordering of the v's at a given depth).
    """
    if isinstance(depth, (bool, np.bool_)) or not isinstance(depth, (int, np.integer)):
        raise TypeError(f"depth must be an int, got {depth!r}")
    if not 0 <= depth <= 10**6:
        raise ValueError(f"depth must be in [0, 10**6], got {depth}")
    sv = np.clip(np.asarray(conv.averaging_singular_values(v, shape), dtype=np.float64), 0.0, 1.0)
    return float(np.mean(sv ** (2 * int(depth))))


def _distributed() -> bool:
    """True inside ``meanfield.parallel.using(...)`` with an executor other than the serial one."""
    from meanfield import parallel

    return not isinstance(parallel.current(), parallel.SerialExecutor)


def _depth_scale_cells(sw, depths, width, steps, n_net, data, seed):
    """The Fig. 2 heat map of :func:`_depth_scale` with one task per (depth, sigma_w2) cell.

    Cell ``(i, j)`` trains ``n_net`` networks from the ``j``-th child spawned off
    ``substream(seed, 1, i)`` -- the stream :func:`meanfield.train.train_ensemble`
    gives net ``j`` of the per-depth list the serial path trains -- so each network starts from
    the same weights and sees the same batches wherever its cell runs.
    """
    from meanfield import parallel
    from meanfield.checks import check_rng

    tasks = []
    for i, depth in enumerate(depths):
        children = check_rng(substream(seed, 1, i)).spawn(len(sw))
        tasks += [(depth, float(s), width, steps, n_net, data, child) for s, child in zip(sw, children)]
    cells = parallel.map_chunks(_depth_scale_cell, tasks)
    acc = np.array([c[0] for c in cells]).reshape(len(depths), len(sw), n_net)
    test = np.array([c[1] for c in cells]).reshape(len(depths), len(sw), n_net)
    # the serial path adds one ensemble's wall time per depth; here each depth's longest cell
    secs = float(sum(max(c[2] for c in cells[i * len(sw) : (i + 1) * len(sw)]) for i in range(len(depths))))
    return acc, test, secs


def _adam_train(nets, n_net, data, steps, lr, rng):
    """Train the Grzejdziak 2023 ReLU networks (ZerO and kurtosis experiments) with their shared Adam settings."""
    return _train_to_end(nets, n_net, data, steps, rng, batch_size=64, lr=lr, optimizer="adam", n_eval=None)


def _fig2_net(depth, width, sigma_w2):
    """The tanh network of one Fig. 2 cell."""
    return DenseNet(depth=depth, width=width, activation="tanh", sigma_w2=sigma_w2, sigma_b2=SIGMA_B2_FIG2)


def _fig2_train(nets, n_net, data, steps, rng):
    """Train Fig. 2's networks (one spec or a list) with the figure's fixed optimiser settings."""
    return _train_to_end(nets, n_net, data, steps, rng, batch_size=32, lr=0.01, optimizer="momentum", n_eval=500)


def _train_to_end(nets, n_net, data, steps, rng, **settings):
    """Train ensembles with :func:`train_ensemble` on :func:`_device`, recording only the last step.

    Parameters
    ----------
    nets : spec or list of specs
        The networks (one ensemble of ``n_net`` per spec).
    n_net : int
    data : TrainingData
    steps : int
    rng : int, SeedSequence or numpy.random.Generator
    **settings
        The experiment's other :func:`train_ensemble` arguments (``batch_size``, ``lr``,
        ``optimizer``, ``n_eval``).

    Returns
    -------
    TrainingCurves or list of TrainingCurves
        As :func:`train_ensemble`.
    """
    return train_ensemble(
        nets, n_net, data=data, steps=steps, record_every=steps, rng=rng, device=_device(), **settings
    )


def _depth_scale_cell(depth, sigma_w2, width, steps, n_net, data, rng):
    """One cell of :func:`_depth_scale_cells`: (final train accuracies, final test accuracies, seconds)."""
    out = _fig2_train(_fig2_net(depth, width, sigma_w2), n_net, data, steps, rng)
    return out.final_train_accuracy, out.final_test_accuracy, out.seconds


# --- the statistics of the experiments' claims ---------------------------------------------------------

#: Mean training accuracy at or above which a (sigma_w2, depth) cell counts as trainable (chance
#: is 0.1 on ten digits; trained shallow networks reach > 0.9).
TRAINABLE_ACCURACY = 0.5
#: Cells with ``L / (6 xi_c)`` in ``[1 / BOUNDARY_BAND, BOUNDARY_BAND]`` are not scored.
BOUNDARY_BAND = 2.0


def depth_scale_agreement(res: dict) -> tuple[float, int]:
    """Fraction of scored cells where ``L < 6 xi_c`` agrees with trainability, and the number scored.

    Parameters
    ----------
    res : dict
        ``depths`` (n_depths,), ``xi_c`` (n_sigma,), ``train_accuracy`` (n_depths, n_sigma, n_networks),
        as :func:`experiment` ("depth_scale") returns them.

    Returns
    -------
    fraction, n_scored : float, int
        Cells with ``L / (6 xi_c)`` within a factor :data:`BOUNDARY_BAND` of 1 are not scored; a
        cell is trainable when its mean training accuracy is ``>= TRAINABLE_ACCURACY``. NaN
        fraction when no cell is scored.
    """
    six_xi = 6.0 * res["xi_c"][None, :]
    depth = res["depths"][:, None].astype(float)
    ratio = depth / six_xi
    scored = (ratio < 1.0 / BOUNDARY_BAND) | (ratio > BOUNDARY_BAND)
    predicted = depth < six_xi
    observed = res["train_accuracy"].mean(axis=2) >= TRAINABLE_ACCURACY
    n = int(scored.sum())
    return (float((predicted == observed)[scored].mean()) if n else float("nan")), n


def kurtosis_rank_test(res: dict) -> RankTest:
    """Grzejdziak 2023 supp. Fig. 1: rank correlation of output kurtosis and test accuracy, one-sided (< 0).

    Parameters
    ----------
    res : dict
        ``log10_output_kurtosis`` (width, depth, law) and ``test_accuracy`` (width, depth, law,
        network), as :func:`experiment` ("kurtosis_accuracy") returns them.

    Returns
    -------
    RankTest
        Over the (width, depth, law) cells: log10 kurtosis at initialisation against the mean test
        accuracy over the cell's networks, ``alternative="less"``.

    Raises
    ------
    ValueError, TypeError
        As :func:`meanfield.compare.rank_correlation`.
    """
    logk = np.asarray(res["log10_output_kurtosis"])
    acc = np.asarray(res["test_accuracy"]).mean(axis=-1)
    return rank_correlation(logk.ravel(), acc.ravel(), "less")


def nonuniform_v_rank_test(res: dict) -> RankTest:
    """Xiao et al. 2018 Fig. 4a: rank correlation of the mode-energy score and test accuracy at the deepest depth.

    Parameters
    ----------
    res : dict
        ``mode_energy_fraction`` (depth, v) and ``test_accuracy`` (depth, v, network), as
        :func:`experiment` ("nonuniform_v") returns them.

    Returns
    -------
    RankTest
        Over every (v, network) pair at the deepest depth, ``alternative="greater"``.

    Raises
    ------
    ValueError, TypeError
        As :func:`meanfield.compare.rank_correlation`.
    """
    score = np.asarray(res["mode_energy_fraction"])[-1]
    acc = np.asarray(res["test_accuracy"])[-1]
    return rank_correlation(np.repeat(score, acc.shape[-1]), acc.ravel(), "greater")
