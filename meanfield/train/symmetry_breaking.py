r"""Blumenfeld et al. 2020's training tables on the one training engine: ConstNets with and without each
symmetry-breaking noise source (Tables 1, 3, 4) and LeakyNets with a growing number of averaging
layers (Table 2), at reduced size on the embedded digits (PyTorch, ``torch`` extra).

Every run is :func:`meanfield.train.train_ensemble` on the specs of :mod:`meanfield.train.symmetric`,
with :func:`~meanfield.train.symmetric.correlation_probe` recording ``1 - C_f`` of every convolution;
each table is run once per process, size and seed (an in-process cache). The figure module
``meanfield.figures.blumenfeld2020`` draws the tables and Figs. 7, 8, 11 from these runs, and
``meanfield validate symmetry_breaking`` turns them into comparison rows (the claims and their
statistics are listed there). Before the deterministic ConstNet runs, :func:`platform_probe`
measures whether this machine's kernels round identical units identically; where they do not, the
runs use unit-exact arithmetic (``SymmetryBreaking(kernels="unit_exact")``).
"""

from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from meanfield import Result
from meanfield._docstrings import doc_sections
from meanfield.cli import DATA_DIR_ENV, progress
from meanfield.train import load_training_data, train_ensemble
from meanfield.train.symmetric import (
    FLOAT32_ROUNDOFF,
    ConstNetSpec,
    LeakyNetSpec,
    SymmetryBreaking,
    correlation_probe,
    platform_symmetry,
)

from ._checks import DOC_SIZED_RUN_RAISES
from ._checks import _cache_seed as _seed
from ._symmetric import _constnet_names

__all__ = [
    "BFLOAT16_ROUNDOFF",
    "CONSTNET_BLOCKS",
    "CONSTNET_VARIANTS",
    "CONSTNET_WIDTHS",
    "EXACT_VARIANTS",
    "LEAKYNET_CONFIGS",
    "LEAKY_LR",
    "LEAKY_STEP_DIVISOR",
    "LEAKY_WIDTH",
    "OPTIMISER",
    "SIZES",
    "TrainingTable",
    "clear_cache",
    "constnet_noise_table",
    "leakynet_averaging_table",
    "platform_probe",
    "table_2_metrics",
    "table_data",
]

#: Unit roundoff of bfloat16 (8 significant bits): the reduction model of a bfloat16 pass.
BFLOAT16_ROUNDOFF = 2.0**-8

#: Table 3 (and 1, 4) variants: label -> (ConstNet init, SymmetryBreaking options).
CONSTNET_VARIANTS: dict[str, tuple[str, dict]] = {
    "He init": ("he", {}),
    "'0' init, deterministic": ("zero", {}),
    "'0' init, 1% dropout": ("zero", {"dropout": 0.01}),
    "'0' init, computation noise": ("zero", {"reduction_noise": FLOAT32_ROUNDOFF}),
    "'0' init, gradient noise": ("zero", {"grad_noise": 1e-4}),
    "'0' init, bfloat16, deterministic": ("zero", {"compute_dtype": "bfloat16"}),
    "'0' init, bfloat16 + computation noise": (
        "zero",
        {"compute_dtype": "bfloat16", "reduction_noise": BFLOAT16_ROUNDOFF},
    ),
    "'0' init, 1% dropout + computation noise": ("zero", {"dropout": 0.01, "reduction_noise": FLOAT32_ROUNDOFF}),
}

#: Table 2 configurations: label -> (LeakyNet init, channel matrices of the 12 layers after the
#: averaging first convolution); the label counts the averaging ('1') layers among all 13.
LEAKYNET_CONFIGS: dict[str, tuple[str, str]] = {
    "13 He": ("he", "IIIIIIIIIIII"),
    "13 I, 0 '1'": ("leaky", "IIIIIIIIIIII"),
    "12 I, 1 '1'": ("leaky", "IIIIII1IIIII"),
    "10 I, 3 '1'": ("leaky", "II1III1III1I"),
    "8 I, 5 '1'": ("leaky", "I1II1II1II1I"),
    "6 I, 7 '1'": ("leaky", "1I1I1I1I1I1I"),
    "0 I, 13 '1'": ("leaky", "111111111111"),
}

#: Sizes of the experiments: seeds, steps, data (8 x 8 digits average-pooled by ``downsample``).
SIZES = {
    "smoke": {"seeds": 2, "steps": 4, "n_train": 128, "n_test": 64, "downsample": 2, "record_every": 2},
    "default": {"seeds": 3, "steps": 600, "n_train": None, "n_test": None, "downsample": 2, "record_every": 50},
    "full": {"seeds": 6, "steps": 6000, "n_train": None, "n_test": None, "downsample": 1, "record_every": 250},
}
#: Optimiser of every run (the paper: SGD with momentum 0.9, learning rate 0.03, batch 128 x 2).
OPTIMISER = {"optimizer": "momentum", "momentum": 0.9, "lr": 0.03, "batch_size": 64}
#: LeakyNets (slope 0.01: weights of -100 on odd layers) need a smaller step.
LEAKY_LR = 0.003
#: The LeakyNet runs take ``steps // LEAKY_STEP_DIVISOR`` steps (13 convolutions cost about three
#: times a ConstNet step; measured at default size: no LeakyNet trains beyond ~20 % in 600 steps
#: either, with SGD, momentum or Adam at 1e-3, so the halved run loses nothing but time).
LEAKY_STEP_DIVISOR = 2
CONSTNET_WIDTHS = (8, 16)
CONSTNET_BLOCKS = 2
LEAKY_WIDTH = 8


@dataclass(frozen=True)
class TrainingTable(Result):
    """Test accuracies and forward correlations of ensembles trained per variant (Blumenfeld et al. 2020, Tables 1-4).

    Attributes
    ----------
    labels : tuple of str
        The variants (rows).
    test_accuracy : ndarray, shape (n_variants, n_seeds)
        Final test accuracy (fraction) of every seed.
    one_minus_cf : ndarray, shape (n_variants, n_seeds, n_records, n_tensors)
        ``1 - C_f`` of every convolution at the recorded steps (exactly 0 for identical features).
    steps : ndarray of int, shape (n_records,)
    tensors : tuple of str
        Convolution names, network order.
    test_curve : ndarray, shape (n_variants, n_seeds, n_records)
        Test accuracy at the recorded steps.
    params : dict
        Sizes, optimiser, data, noise options per variant, wall time (s).
    """

    labels: tuple
    test_accuracy: np.ndarray
    one_minus_cf: np.ndarray
    steps: np.ndarray
    tensors: tuple
    test_curve: np.ndarray
    params: dict = field(default_factory=dict, compare=False)

    def mean_se(self) -> tuple[np.ndarray, np.ndarray]:
        """Mean test accuracy per variant and its standard error over seeds."""
        n = self.test_accuracy.shape[1]
        return self.test_accuracy.mean(axis=1), self.test_accuracy.std(axis=1, ddof=1) / math.sqrt(n)

    def final_cf(self) -> np.ndarray:
        """``C_f`` of every tensor at the end, shape (n_variants, n_seeds, n_tensors)."""
        return 1.0 - self.one_minus_cf[:, :, -1, :]


def _size(size: str) -> dict:
    if not isinstance(size, str) or size not in SIZES:
        raise ValueError(f"size must be one of {tuple(SIZES)}, got {size!r}")
    return SIZES[size]


def table_data(size: str = "default"):
    """The data set the tables train on at ``size``.

    Parameters
    ----------
    size : {"smoke", "default", "full"}
        :data:`SIZES`.

    Returns
    -------
    meanfield.train.TrainingData
        The embedded digits (average-pooled by the size's ``downsample``); at ``"full"`` size the
        paper's CIFAR-10 (32 x 32 x 3, python batches) or MNIST (IDX) when ``$MEANFIELD_DATA_DIR``
        (``--data-dir``) holds their files.

    Raises
    ------
    ValueError
        An unknown ``size``; unreadable data files.
    ImportError
        The digits without scikit-learn (the ``data`` extra), or without torch.
    """
    return _data(_size(size))


def _data(sz):
    """The digits; at ``"full"`` size the paper's CIFAR-10 (32 x 32, python batches) or MNIST (IDX)
    from ``$MEANFIELD_DATA_DIR`` (``--data-dir``) when the user has the files."""
    data_dir = os.environ.get(DATA_DIR_ENV)
    if sz is SIZES["full"] and data_dir:
        root = Path(data_dir)
        if (root / "data_batch_1").is_file() and (root / "test_batch").is_file():
            return load_training_data("cifar10", data_dir=root)
        if any((root / f"train-images{sep}idx3-ubyte{gz}").is_file() for sep in "-." for gz in ("", ".gz")):
            return load_training_data("mnist", data_dir=root)
    return load_training_data(n_train=sz["n_train"], n_test=sz["n_test"], downsample=sz["downsample"])


def _table_inputs(size: str, seed: int, index: int) -> tuple:
    """The settings, the data and the random stream of one table.

    Parameters
    ----------
    size : str
        A key of :data:`SIZES`.
    seed : int
    index : int
        The table: 0 for :func:`constnet_noise_table`, 1 for :func:`leakynet_averaging_table`.

    Returns
    -------
    (sz, data, streams)
        ``SIZES[size]``, its training data (:func:`_data`) and child ``index`` of
        ``SeedSequence(seed)``, so that the two tables draw independent streams.
    """
    sz = _size(size)
    return sz, _data(sz), np.random.SeedSequence(seed).spawn(index + 1)[index]


def _table(runs, labels, sz, extra, seconds) -> TrainingTable:
    names = runs[0][1]
    return TrainingTable(
        labels=tuple(labels),
        test_accuracy=np.stack([c.final_test_accuracy for c, _ in runs]),
        one_minus_cf=np.stack([c.probes["cf"] for c, _ in runs]),
        steps=runs[0][0].steps,
        tensors=tuple(names),
        test_curve=np.stack([c.test_accuracy for c, _ in runs]),
        params={**sz, **OPTIMISER, **extra, "data": runs[0][0].dataset, "seconds": seconds},
    )


def _conv_names(spec) -> list[str]:
    if isinstance(spec, ConstNetSpec):
        return _constnet_names(spec)
    return ["first"] + [f"layer{i}" for i in range(1, len(spec.kinds) + 1)]


def _run(spec, sz: dict, data, streams, steps: int, noise, optimiser: dict) -> tuple:
    """One ensemble of a table and its convolutions' names: ``sz["seeds"]`` networks, float32 masters,
    the forward-correlation probe, and the table's common random numbers (every variant draws the
    same weights and batches from ``streams``)."""
    curves = train_ensemble(
        spec,
        sz["seeds"],
        data=data,
        steps=steps,
        record_every=sz["record_every"],
        n_eval=None,
        dtype="float32",
        rng=np.random.default_rng(streams),
        noise=noise,
        probes={"cf": correlation_probe("forward")},
        **optimiser,
    )
    return curves, _conv_names(spec)


@functools.lru_cache(maxsize=4)
def _constnet_cached(size: str, seed: int) -> TrainingTable:
    import time

    sz, data, streams = _table_inputs(size, seed, 0)
    t0 = time.perf_counter()
    runs = []
    platform = {}
    for label in progress(CONSTNET_VARIANTS, desc="ConstNet noise table"):
        init, opts = CONSTNET_VARIANTS[label]
        spec = ConstNetSpec(widths=CONSTNET_WIDTHS, blocks_per_stage=CONSTNET_BLOCKS, init=init)
        if label in EXACT_VARIANTS:  # the platform's kernels when they keep identical units identical
            platform[label] = probe = platform_probe(sz["seeds"], data.image_shape, int(data.n_classes), opts)
            opts = {**opts, "kernels": probe["kernels"]}
        runs.append(_run(spec, sz, data, streams, sz["steps"], SymmetryBreaking(**opts) if opts else None, OPTIMISER))
    extra = {
        "net": f"ConstNet widths {list(CONSTNET_WIDTHS)}, {CONSTNET_BLOCKS} blocks per stage, stride 2, no batchnorm",
        "variants": {k: {"init": v[0], **v[1]} for k, v in CONSTNET_VARIANTS.items()},
        "master_dtype": "float32",
        "platform": platform,
    }
    return _table(runs, CONSTNET_VARIANTS, sz, extra, time.perf_counter() - t0)


#: The variants without a noise source, whose identical units must stay identical to the last bit.
EXACT_VARIANTS = ("'0' init, deterministic", "'0' init, bfloat16, deterministic")


def platform_probe(n_networks: int, input_shape, n_classes: int, opts: dict) -> dict:
    """The arithmetic of an :data:`EXACT_VARIANTS` run on this machine, and the evidence.

    :func:`~meanfield.train.symmetric.platform_symmetry` probes one training step of the
    run's ConstNet (its shapes, dtypes, threads) on the platform's kernels. When they keep identical
    units bitwise identical the run uses them; when they do not (a GEMM computing some units with
    another instruction sequence), the run uses ``kernels="unit_exact"``, probed too, and the
    platform's asymmetry is reported as a measured noise source of this machine.

    Returns
    -------
    dict
        ``platform_exact`` (bool), ``platform_max_relative_difference``, ``platform_tensors`` (the
        tensors whose gradients differ), ``kernels`` (what the run uses), ``kernels_exact`` (the
        probe of that arithmetic), ``cpu_capability``, ``torch``, ``mkldnn_enabled``.
    """
    spec = ConstNetSpec(widths=CONSTNET_WIDTHS, blocks_per_stage=CONSTNET_BLOCKS, init="zero")
    args = (spec, n_networks, OPTIMISER["batch_size"], tuple(input_shape), n_classes)
    cd = opts.get("compute_dtype")
    native = platform_symmetry(*args, compute_dtype=cd, kernels="platform")
    used = native if native.exact else platform_symmetry(*args, compute_dtype=cd, kernels="unit_exact")
    return {
        "platform_exact": native.exact,
        "platform_max_relative_difference": native.max_relative_difference,
        "platform_tensors": [k for k, v in native.relative_difference.items() if v > 0],
        "kernels": used.kernels,
        "kernels_exact": used.exact,
        "cpu_capability": native.params["cpu_capability"],
        "torch": native.params["torch"],
        "mkldnn_enabled": native.params["mkldnn_enabled"],
    }


@doc_sections(sized_run_raises=DOC_SIZED_RUN_RAISES)
def constnet_noise_table(size: str = "default", *, rng: Any = 0) -> TrainingTable:
    """ConstNet ('0' and He initialised) trained with each symmetry-breaking noise source (Tables 1, 3, 4).

    Parameters
    ----------
    size : {"smoke", "default", "full"}
        :data:`SIZES` (seeds, steps, data).
    rng : int or numpy.random.Generator
        Seed of the runs (a Generator is reduced to one int drawn from it); every variant uses the
        same spawned stream, so the variants share their mini-batch orders (common random numbers).

    Returns
    -------
    TrainingTable
        One row per :data:`CONSTNET_VARIANTS` entry. Cached per ``(size, seed)``.

    {sized_run_raises}

    Notes
    -----
    Blumenfeld et al. 2020, Sec. 4, Table 1 (what breaks the symmetry), Table 3 (FP32 / FP16, computation noise,
    dropout; App. I), Table 4 ('0' against i.i.d. initialisation with noise and dropout). The
    paper's ConstNet has 12 skip-able layers, batch normalisation and trains 200-300 epochs on
    CIFAR-10; here widths (8, 16), two blocks per stage, no batch normalisation, the 4 x 4
    average-pooled digits at default size.
    """
    return _constnet_cached(_size(size) and size, _seed(rng))


@functools.lru_cache(maxsize=4)
def _leaky_cached(size: str, seed: int) -> TrainingTable:
    import time

    sz, data, streams = _table_inputs(size, seed, 1)
    t0 = time.perf_counter()
    runs = []
    opts = {**OPTIMISER, "lr": LEAKY_LR}
    for label in progress(LEAKYNET_CONFIGS, desc="LeakyNet averaging table"):
        init, kinds = LEAKYNET_CONFIGS[label]
        spec = LeakyNetSpec(kinds=tuple(kinds), width=LEAKY_WIDTH, init=init)
        steps = max(1, sz["steps"] // LEAKY_STEP_DIVISOR)
        runs.append(_run(spec, sz, data, streams, steps, SymmetryBreaking(reduction_noise=FLOAT32_ROUNDOFF), opts))
    extra = {
        "net": f"LeakyNet width {LEAKY_WIDTH}, 12 layers after the averaging first convolution, slope 0.01",
        "configs": {k: {"init": v[0], "kinds": v[1]} for k, v in LEAKYNET_CONFIGS.items()},
        "noise": {"reduction_noise": FLOAT32_ROUNDOFF},
        "lr": LEAKY_LR,
        "steps": max(1, sz["steps"] // LEAKY_STEP_DIVISOR),
        "master_dtype": "float32",
    }
    return _table(runs, LEAKYNET_CONFIGS, sz, extra, time.perf_counter() - t0)


@doc_sections(sized_run_raises=DOC_SIZED_RUN_RAISES)
def leakynet_averaging_table(size: str = "default", *, rng: Any = 0) -> TrainingTable:
    """LeakyNets with 0 to 13 averaging ('1') layers and a He-initialised one (Table 2, Fig. 8).

    Parameters
    ----------
    size : {"smoke", "default", "full"}
    rng : int or numpy.random.Generator
        Seed of the runs (as :func:`constnet_noise_table`).

    Returns
    -------
    TrainingTable
        One row per :data:`LEAKYNET_CONFIGS` entry; every run has the computation-noise model
        (``reduction_noise = 2^-24``, the paper's non-deterministic GPU). Cached per ``(size, seed)``.

    {sized_run_raises}

    Notes
    -----
    Blumenfeld et al. 2020, Sec. 5.1, Table 2 (test accuracy, ``max_l C_f(l)`` and
    ``(1 / L) sum_l sqrt(1 - C_f(l)^2)``) and Fig. 8 (final ``C_f`` per layer). With one input
    channel (the digits) every first convolution of the LeakyNet family gives identical features:
    unlike CIFAR-10's three channels, the 'I' networks start symmetric too.
    """
    return _leaky_cached(_size(size) and size, _seed(rng))


def clear_cache() -> None:
    """Forget the cached runs of :func:`constnet_noise_table` and :func:`leakynet_averaging_table`."""
    _constnet_cached.cache_clear()
    _leaky_cached.cache_clear()


def table_2_metrics(table: TrainingTable) -> tuple[np.ndarray, np.ndarray]:
    """Table 2's metrics per variant and seed: ``max_l C_f(l)`` and ``mean_l sqrt(1 - C_f(l)^2)``."""
    cf = np.clip(table.final_cf(), -1.0, 1.0)
    return cf.max(axis=2), np.sqrt(1.0 - cf**2).mean(axis=2)
