"""meanfield: signal propagation in randomly initialised deep networks.

Submodules (imported lazily; ``import meanfield`` compiles nothing, and a kernel cached on disk is
reused only while every source file of the package is unchanged):

``gaussian``      Gaussian expectations by Gauss-Hermite quadrature (Numba kernels).
``activations``   ``Activation`` objects and closed-form Gaussian moments.
``dense``         Fully-connected mean field: q-map, c-map, C-map, fixed points, depth scales.
``conv``          CNN mean field (Xiao et al. 2018).
``init``          Initialisers (He, Glorot, orthogonal, orthogonal conv kernels, GSM, ZerO, ...).
``finite_width``  Exact finite-width signal distributions (Burkholz & Dubatovka 2019).
``kurtosis``      Kurtosis recursion and vanishing empirical variance (Grzejdziak et al. 2023).
``symmetry``      Feature-symmetry measures, ConstNet, LeakyNet (Blumenfeld et al. 2020).
``landscape``     Binary-weight landscapes and skip connections (Orhan 2017).
``data``          Input sets: synthetic Gaussian inputs, embedded digits, MNIST / CIFAR-10 readers.
``checks``        The argument checks every layer validates its inputs with.
``cli``           The ``meanfield`` command and the command-line plumbing every command shares.
``compare``       Comparison rows (checks and claims), the one verdict rule, the printed table.
``io``            Results as JSON with a metadata block: written, and read back with bounded readers.
``backend``       Array backends (NumPy, CuPy) of the weight samplers and the simulators.
``numerics``      Numerical helpers: the one Richardson extrapolation.
``parallel``      One execution layer: chunks in-process, on local processes or on a Dask cluster.
``ntk``           The neural tangent kernel recursion, fixed points, depth scales.
``mehler``        NNGP / NTK of many inputs for any activation by Mehler's formula (certified).
``spectra``       Jacobian singular-value spectra by free probability (Pennington et al.; Xiao et al. 2018).
``simulate``      Monte-Carlo simulators of finite random networks, one module per theory they check.
``train``         The ensemble trainer (PyTorch): many small networks trained at once, their curves.

:class:`Result` is the base class of every result dataclass (frozen, with ``.replace()``).
"""

from __future__ import annotations

import importlib

from . import _numba_cache
from ._results import Result
from ._version import __version__

_numba_cache.install()  # before any kernel is defined: cached kernels are stamped with the package's source

_SUBMODULES = {
    "activations",
    "backend",
    "checks",
    "cli",
    "compare",
    "conv",
    "data",
    "dense",
    "finite_width",
    "gaussian",
    "init",
    "io",
    "kurtosis",
    "landscape",
    "numerics",
    "symmetry",
    "parallel",
    "spectra",
    "simulate",
    "ntk",
    "mehler",
    "train",
}

__all__ = sorted(_SUBMODULES) + ["Result", "__version__"]


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module(f"meanfield.{name}")
    raise AttributeError(f"module 'meanfield' has no attribute {name!r}")


def __dir__():
    return __all__
