"""Binary toy networks and their exhaustive loss landscapes (Orhan 2017, Sec. 2.2, eqs. 1-4, Fig. 4 / S1).

Private submodule of :mod:`meanfield.landscape` (import the names from there):
:func:`regression_task`, :func:`n_binary_parameters`, :func:`decode_configuration`,
:func:`forward_binary`, :func:`binary_landscape` and their results :class:`RegressionTask`,
:class:`LandscapeResult`.

The conventions of the toy networks (layout, normalisation, configuration encoding, ties) are
stated in the docstring of :mod:`meanfield.landscape`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numba
import numpy as np
from numpy.typing import ArrayLike

from .._checks import as_float_array, check_bool, check_rng, check_scalar
from .._results import Result
from ._common import _check_architecture, _int, _sample_rows, _square_matrices

__all__ = [
    "ARCHITECTURES",
    "LandscapeResult",
    "RegressionTask",
    "binary_landscape",
    "decode_configuration",
    "forward_binary",
    "n_binary_parameters",
    "regression_task",
]

#: Architectures of eqs. 1-4 and their integer codes inside the kernels.
ARCHITECTURES = {"plain": 0, "residual": 1, "hyper_residual": 2, "path_residual": 3}

#: Largest number of binary parameters enumerated (2^30 losses = 8 GiB): a guard, not a paper value.
MAX_BINARY_PARAMETERS = 30

#: Largest enumeration work ``P * 2^n`` (inputs times configurations) of :func:`binary_landscape`:
#: 20 times the paper's full run (2^23 configurations on a 10 x 10 grid). A time guard.
MAX_LANDSCAPE_WORK = 2**34

#: Largest number of binary parameters :func:`decode_configuration` decodes (a size guard).
MAX_DECODE_PARAMETERS = 2**24


# --------------------------------------------------------------------------------------------
# regression task
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RegressionTask(Result):
    """Inputs on a square grid and a random smooth target (Sec. 2.2's regression problem).

    Attributes
    ----------
    inputs : ndarray, shape (P, 2)
    targets : ndarray, shape (P,)
    frequencies, phases, amplitudes : ndarray
        The random target ``t(x) = sum_k amplitudes[k] cos(frequencies[k] . x + phases[k])``.
    seed : int or None
        The int passed as ``rng`` (the task is ``regression_task(..., rng=seed)`` again); ``None``
        when ``rng`` was ``None`` or a Generator, whose draw cannot be replayed from a number.
    """

    inputs: np.ndarray
    targets: np.ndarray
    frequencies: np.ndarray
    phases: np.ndarray
    amplitudes: np.ndarray
    seed: int | None


def regression_task(
    grid_size: int = 5, extent: float = 1.0, n_components: int = 8, rng: int | np.random.Generator | None = None
) -> RegressionTask:
    """Grid inputs in ``[-extent, extent]^2`` and a random target function (Orhan 2017, Sec. 2.2).

    The paper gives no details beyond "a two-dimensional regression problem with a random target
    function"; we use ``grid_size^2`` points of the square grid and the random Fourier series
    ``t(x) = sum_{k=1}^{K} alpha_k cos(omega_k . x + phi_k)`` with ``omega_k ~ N(0, (pi/extent)^2 I)``,
    ``phi_k ~ U[0, 2 pi)`` and ``alpha_k ~ N(0, 2/K)`` (so ``E t(x)^2 = 1``).

    Parameters
    ----------
    grid_size : int
        Points per axis, in [2, 1000] (``P = grid_size^2`` inputs).
    extent : float
        Half-width of the square, finite and > 0.
    n_components : int
        ``K``, in [1, 10000].
    rng : None, int or numpy.random.Generator
        Random source (``meanfield._checks.check_rng``): ``None`` draws fresh OS entropy, an int
        ``n`` gives exactly the task drawn from ``numpy.random.default_rng(n)``. Draw order:
        ``omega`` (K x 2 normals), ``phi`` (K uniforms), ``alpha`` (K normals).

    Returns
    -------
    RegressionTask

    Raises
    ------
    ValueError
        A size outside its range or not an integer (a bool, a string or a non-integral float),
        ``extent <= 0`` or non-finite, a negative ``rng`` seed.
    TypeError
        A complex, boolean or non-numeric ``extent``; an ``rng`` that is not None, an int or a
        Generator.
    """
    grid_size = _int(grid_size, "grid_size", minimum=2, maximum=1000)
    n_components = _int(n_components, "n_components", minimum=1, maximum=10_000)
    extent = check_scalar(extent, "extent")
    if extent <= 0 or not math.isfinite(math.pi / extent):
        raise ValueError(f"extent must be a finite number > 0 (and pi / extent finite), got {extent!r}")
    seed = int(rng) if isinstance(rng, (int, np.integer)) and not isinstance(rng, (bool, np.bool_)) else None
    gen = check_rng(rng)
    omega = gen.normal(0.0, math.pi / extent, size=(n_components, 2))
    phi = gen.uniform(0.0, 2 * math.pi, size=n_components)
    alpha = gen.normal(0.0, math.sqrt(2.0 / n_components), size=n_components)
    with np.errstate(over="ignore", invalid="ignore"):
        g = np.linspace(-extent, extent, grid_size)
        xx, yy = np.meshgrid(g, g, indexing="ij")
        inputs = np.ascontiguousarray(np.stack([xx.ravel(), yy.ravel()], axis=1))
        targets = np.cos(inputs @ omega.T + phi) @ alpha
    if not (np.all(np.isfinite(inputs)) and np.all(np.isfinite(targets))):  # only for absurd extents
        raise ValueError(
            f"extent = {extent!r} makes the grid or the target overflow; use an extent within [1e-150, 1e150]"
        )
    return RegressionTask(inputs, np.ascontiguousarray(targets), omega, phi, alpha, seed)


# --------------------------------------------------------------------------------------------
# binary toy networks
# --------------------------------------------------------------------------------------------


def n_binary_parameters(n_layers: int = 7, width: int = 2, output_bias_bit: bool = False) -> int:
    """Number of binary parameters of the toy net: ``(n_layers - 2) width^2 + width (+ 1)``.

    ``n_binary_parameters(7, 2) == 22`` (eqs. 1-4 of Orhan 2017); ``23`` with
    ``output_bias_bit=True`` (the paper's count). An exact integer for any size.

    Parameters
    ----------
    n_layers : int
        Layers counting input and output, >= 3.
    width : int
        Units per layer, >= 1.
    output_bias_bit : bool
        Count a trainable ``+-1`` output bias.

    Returns
    -------
    int

    Raises
    ------
    ValueError
        ``n_layers < 3`` or ``width < 1`` (or not integers: bools, strings and non-integral
        floats included).
    TypeError
        ``output_bias_bit`` not a bool; a complex ``n_layers`` or ``width``.
    """
    n_layers = _int(n_layers, "n_layers", minimum=3)
    width = _int(width, "width", minimum=1)
    output_bias_bit = check_bool(output_bias_bit, "output_bias_bit")
    return (n_layers - 2) * width * width + width + int(output_bias_bit)


def _arch_code(architecture: object) -> int:
    return ARCHITECTURES[_check_architecture(architecture, ARCHITECTURES)]


def decode_configuration(
    c: int, n_layers: int = 7, width: int = 2, output_bias_bit: bool = False
) -> tuple[list[np.ndarray], np.ndarray, float]:
    """The ``+-1`` weights of configuration ``c``: ``(list of (width, width) matrices, w_out, bias)``.

    Parameter ``j`` is ``+1`` iff bit ``n-1-j`` of ``c`` is set (order: ``W_1`` row-major, ...,
    ``W_{n_layers-2}``, ``w_out``, output bias), the encoding of :func:`binary_landscape` for the
    toy nets of eqs. 1-4 of Orhan 2017.

    Parameters
    ----------
    c : int
        Configuration, ``0 <= c < 2^n``.
    n_layers, width, output_bias_bit
        As in :func:`n_binary_parameters`; the net may have at most
        :data:`MAX_DECODE_PARAMETERS` binary parameters.

    Returns
    -------
    (mats, w_out, bias)
        ``n_layers - 2`` matrices of shape ``(width, width)``, the output row ``(width,)`` and the
        output bias (``0.0`` unless ``output_bias_bit``).

    Raises
    ------
    ValueError
        ``c`` out of range, bad sizes, or more than :data:`MAX_DECODE_PARAMETERS` parameters.
    TypeError
        ``output_bias_bit`` not a bool.
    """
    n = n_binary_parameters(n_layers, width, output_bias_bit)
    if n > MAX_DECODE_PARAMETERS:
        raise ValueError(
            f"n_layers = {n_layers} and width = {width} give {n} binary parameters; at most "
            f"{MAX_DECODE_PARAMETERS} (MAX_DECODE_PARAMETERS) are decoded"
        )
    n_layers, width = int(n_layers), int(width)
    c = _int(c, "c", minimum=0)
    if c.bit_length() > n:
        raise ValueError(f"c must be < 2^{n} (the net has {n} binary parameters), got {c}")
    raw = np.frombuffer(c.to_bytes((n + 7) // 8, "big"), dtype=np.uint8)
    bits = np.unpackbits(raw)[(-n) % 8 :] if n else np.zeros(0, dtype=np.uint8)
    params = 2.0 * bits - 1.0
    k = 0
    mats = []
    for _ in range(n_layers - 2):
        mats.append(params[k : k + width * width].reshape(width, width).copy())
        k += width * width
    w_out = params[k : k + width].copy()
    k += width
    bias = float(params[k]) if output_bias_bit else 0.0
    return mats, w_out, bias


def _check_binary_net(inputs, mats, w_out, output_bias, biases):
    """Validate :func:`forward_binary`'s arguments; returns float64 copies."""
    x = _sample_rows(inputs, "inputs", "width")
    width = x.shape[1]
    if isinstance(mats, np.ndarray) and mats.ndim == 3:
        mats = list(mats)
    if not isinstance(mats, (list, tuple)):
        raise TypeError(f"mats must be a list of (width, width) arrays, got {type(mats).__name__}")
    ws = _square_matrices(mats, "mats", width, "width")
    w_out = as_float_array(w_out, "w_out")
    if w_out.shape != (width,):
        raise ValueError(f"w_out must have shape (width,) = ({width},), got {w_out.shape}")
    output_bias = check_scalar(output_bias, "output_bias")
    if biases is None:
        b = np.zeros((len(ws) + 1, width))
    else:
        b = as_float_array(biases, "biases")
        if b.shape != (len(ws) + 1, width):
            raise ValueError(f"biases must have shape (len(mats) + 1, width) = {(len(ws) + 1, width)}, got {b.shape}")
    return x, ws, w_out, output_bias, b


def forward_binary(
    architecture: str,
    inputs: ArrayLike,
    mats: Sequence[ArrayLike] | np.ndarray,
    w_out: ArrayLike,
    output_bias: float = 0.0,
    biases: ArrayLike | None = None,
) -> np.ndarray:
    """Outputs of one toy network (eqs. 1-4 of Orhan 2017) on ``inputs``; plain NumPy reference of the kernel.

    Parameters
    ----------
    architecture : {"plain", "residual", "hyper_residual", "path_residual"}
    inputs : array_like, shape (P, width)
        Finite real inputs, ``P, width >= 1``.
    mats : list of (width, width) arrays
        Hidden weight matrices ``W_1 ...`` (finite; ``+-1`` for the binary nets, any real works).
    w_out : array_like, shape (width,)
        Output row.
    output_bias : float
        Trainable output bias (the 23rd bit), a finite real scalar.
    biases : array_like, shape (len(mats) + 1, width), optional
        Row ``g`` is added inside the ReLU of hidden layer ``g + 2``; the last row's first entry
        is a fixed output bias (Fig. S1).

    Returns
    -------
    ndarray, shape (P,)
        Finite.

    Raises
    ------
    ValueError
        Unknown architecture; arrays of the wrong shape or with NaN or infinity, or that do not
        convert to real numbers (e.g. non-numeric strings); outputs that overflow double
        precision (scale the inputs or weights down).
    TypeError
        A complex argument, a bool or string as ``output_bias``, ``architecture`` not a str,
        ``mats`` not a list.
    """
    code = _arch_code(architecture)
    x, ws, w_out, output_bias, b = _check_binary_net(inputs, mats, w_out, output_bias, biases)
    width = x.shape[1]
    n_h = len(ws)
    cum = x.copy()
    with np.errstate(over="ignore", invalid="ignore"):
        for g, w in enumerate(ws):
            pre = x @ w.T + b[g]
            act = np.maximum(pre, 0.0)
            l = g + 1
            if code == 0:
                new = act
            elif code == 1:
                new = width / (width + 1.0) * (act + x)
            elif code == 2:
                new = width / (width + float(l)) * (act + cum)
            else:
                new = 0.5 * (act + x.sum(axis=1, keepdims=True))
            x = new
            cum = cum + x
        y = x @ w_out + b[n_h, 0] + output_bias
    if not np.all(np.isfinite(y)):
        raise ValueError("inputs, mats and biases give outputs that overflow double precision (scale them down)")
    return y


@numba.njit(cache=True)
def _recompute(c, start, arch, n_bits, width, n_h, has_bias, xs, cums, biases, inputs, targets, out):
    """Forward pass from hidden layer ``start`` on for configuration ``c``; returns the loss."""
    n_p = inputs.shape[0]
    for g in range(start, n_h):
        off = g * width * width
        scale = 1.0
        if arch == 1:
            scale = width / (width + 1.0)
        elif arch == 2:
            scale = width / (width + g + 1.0)
        elif arch == 3:
            scale = 0.5
        for p in range(n_p):
            tot = 0.0
            for k in range(width):
                tot += xs[g, p, k]
            for i in range(width):
                pre = biases[g, i]
                for k in range(width):
                    bit = (c >> (n_bits - 1 - (off + i * width + k))) & 1
                    if bit == 1:
                        pre += xs[g, p, k]
                    else:
                        pre -= xs[g, p, k]
                act = pre if pre > 0.0 else 0.0
                if arch == 0:
                    v = act
                elif arch == 1:
                    v = scale * (act + xs[g, p, i])
                elif arch == 2:
                    v = scale * (act + cums[g, p, i])
                else:
                    v = scale * (act + tot)
                xs[g + 1, p, i] = v
                cums[g + 1, p, i] = cums[g, p, i] + v
    off = n_h * width * width
    ob = biases[n_h, 0]
    if has_bias:
        if (c & 1) == 1:
            ob += 1.0
        else:
            ob -= 1.0
    loss = 0.0
    zero = True
    for p in range(n_p):
        y = ob
        for k in range(width):
            bit = (c >> (n_bits - 1 - (off + k))) & 1
            if bit == 1:
                y += xs[n_h, p, k]
            else:
                y -= xs[n_h, p, k]
        if y != 0.0:
            zero = False
        d = y - targets[p]
        loss += d * d
    out[0] = 1.0 if zero else 0.0
    return loss / n_p


@numba.njit(cache=True)
def _scratch(inputs, n_h, width):
    """Buffers of :func:`_recompute` (activations, cumulative sums, the zero flag), layer 0 the inputs."""
    n_p = inputs.shape[0]
    xs = np.empty((n_h + 1, n_p, width))
    cums = np.empty((n_h + 1, n_p, width))
    out = np.empty(1)
    for p in range(n_p):
        for k in range(width):
            xs[0, p, k] = inputs[p, k]
            cums[0, p, k] = inputs[p, k]
    return xs, cums, out


@numba.njit(cache=True)
def _chunk_losses(c0, m, arch, n_bits, width, n_h, has_bias, group_of_bit, biases, inputs, targets, losses, zero_out):
    """Losses of configurations ``c0 .. c0 + m - 1``; layers recomputed from the highest changed bit."""
    xs, cums, out = _scratch(inputs, n_h, width)
    for i in range(m):
        c = c0 + i
        if i == 0:
            start = 0
        else:
            diff = c ^ (c - 1)
            hb = 0
            while (diff >> (hb + 1)) != 0:
                hb += 1
            start = group_of_bit[hb]
        losses[i] = _recompute(c, start, arch, n_bits, width, n_h, has_bias, xs, cums, biases, inputs, targets, out)
        zero_out[i] = out[0] != 0.0


@numba.njit(cache=True, parallel=True)
def _all_losses(arch, n_bits, width, n_h, has_bias, group_of_bit, top_bits, biases, inputs, targets, losses, zero_out):
    """Loss of every configuration; chunks of consecutive ``c`` share the leading layers' bits."""
    n_chunks = 1 << top_bits
    chunk = 1 << (n_bits - top_bits)
    for ch in numba.prange(n_chunks):
        c0 = ch * chunk
        _chunk_losses(
            c0,
            chunk,
            arch,
            n_bits,
            width,
            n_h,
            has_bias,
            group_of_bit,
            biases,
            inputs,
            targets,
            losses[c0 : c0 + chunk],
            zero_out[c0 : c0 + chunk],
        )


@numba.njit(cache=True, parallel=True)
def _neighbours(losses, n_bits, rtol, n_better, n_equal, nxt):
    """Better / tied neighbour counts and the best-improvement successor of every configuration."""
    n_conf = losses.shape[0]
    for c in numba.prange(n_conf):
        lc = losses[c]
        nb = 0
        ne = 0
        best = -1
        best_loss = lc
        for k in range(n_bits):
            d = c ^ (1 << k)
            ld = losses[d]
            tol = rtol * max(abs(lc), abs(ld))
            if ld < lc - tol:
                nb += 1
                # a neighbour replaces the best so far only if better beyond the tie tolerance,
                # so tied best neighbours resolve to the lowest bit index
                if ld < best_loss - rtol * max(abs(best_loss), abs(ld)):
                    best_loss = ld
                    best = d
            elif abs(ld - lc) <= tol:
                ne += 1
        n_better[c] = nb
        n_equal[c] = ne
        if best < 0:
            nxt[c] = c
        else:
            nxt[c] = best


@numba.njit(cache=True)
def _walk_from(nxt, start, length, end):
    """Follow best-improvement successors from ``start`` (a plain function: parfors must not
    reassign a copy of the loop index, which Numba 0.68 mis-lowers into an endless loop)."""
    x = nxt[start]
    n = 0
    prev = start
    while x != prev:
        prev = x
        x = nxt[x]
        n += 1
    length[start] = n
    end[start] = prev


@numba.njit(cache=True, parallel=True)
def _walks(nxt, length, end):
    for c in numba.prange(nxt.shape[0]):
        _walk_from(nxt, c, length, end)


@dataclass(frozen=True)
class LandscapeResult(Result):
    """Exhaustive landscape of one toy architecture (Sec. 2.2, Fig. 4).

    Attributes
    ----------
    architecture : str
    n_params : int
        Binary parameters ``n``; ``2^n`` configurations.
    losses : ndarray, shape (2^n,)
        Mean squared error of every configuration.
    n_better : ndarray of uint8, shape (2^n,)
        Better single-flip neighbours of every configuration (Fig. 4 left).
    n_equal : ndarray of uint8
        Tied neighbours (loss equal within ``rtol``).
    successor : ndarray of int64
        Best-improvement successor (itself at a local minimum).
    walk_length : ndarray of int16
        Steps of the adaptive walk from every configuration (Fig. 4 middle).
    walk_end : ndarray of int64
        The local minimum each walk ends in.
    local_minima : ndarray of int64
        Configurations with no better neighbour (non-strict local minima).
    basin_sizes : ndarray of int64
        Basin size of each entry of ``local_minima`` (Fig. 4 right); sums to ``2^n``.
    n_strict_local_minima : int
        Local minima with no tied neighbour either.
    n_zero_output : int
        Configurations whose output is exactly zero on every input.
    n_tied_configurations : int
        Configurations whose loss (exactly, bit for bit) equals another configuration's.
    n_distinct_losses : int
        Distinct exact loss values.
    rtol : float
    """

    architecture: str
    n_params: int
    losses: np.ndarray
    n_better: np.ndarray
    n_equal: np.ndarray
    successor: np.ndarray
    walk_length: np.ndarray
    walk_end: np.ndarray
    local_minima: np.ndarray
    basin_sizes: np.ndarray
    n_strict_local_minima: int
    n_zero_output: int
    n_tied_configurations: int
    n_distinct_losses: int
    rtol: float

    @property
    def n_configurations(self) -> int:
        return int(self.losses.shape[0])

    @property
    def n_local_minima(self) -> int:
        return int(self.local_minima.shape[0])

    def better_histogram(self) -> np.ndarray:
        """Counts of configurations with 0, 1, ..., n better neighbours."""
        return np.bincount(self.n_better, minlength=self.n_params + 1)

    def walk_histogram(self) -> np.ndarray:
        """Counts of adaptive-walk lengths 0, 1, ..."""
        return np.bincount(self.walk_length.astype(np.int64))


def _task_arguments(architecture, inputs, targets, n_layers, output_bias_bit, rtol, biases, max_parameters, limit_name):
    """The checked arguments of an exhaustive binary landscape (:func:`binary_landscape` and the chunked
    census): ``(arch, x, t, n_layers, output_bias_bit, width, n_h, n, rtol, b)``, ``n`` the number of
    binary parameters (at most ``max_parameters``, named ``limit_name`` in the message)."""
    arch = _arch_code(architecture)
    x = _sample_rows(inputs, "inputs", "width")
    t = as_float_array(targets, "targets")
    if t.shape != (x.shape[0],):
        raise ValueError(f"targets must have shape ({x.shape[0]},) to match inputs, got {t.shape}")
    n_layers = _int(n_layers, "n_layers", minimum=3, maximum=64)
    output_bias_bit = check_bool(output_bias_bit, "output_bias_bit")
    width = x.shape[1]
    n_h = n_layers - 2
    n = n_binary_parameters(n_layers, width, output_bias_bit)
    if n > max_parameters:
        raise ValueError(
            f"the network has {n} binary parameters (n_layers = {n_layers}, width = {width}); "
            f"at most {max_parameters} ({limit_name}) are enumerated"
        )
    rtol = check_scalar(rtol, "rtol")
    if not 0.0 <= rtol < 1.0:
        raise ValueError(f"rtol must lie in [0, 1), got {rtol!r}")
    if biases is None:
        b = np.zeros((n_h + 1, width))
    else:
        b = as_float_array(biases, "biases")
        if b.shape != (n_h + 1, width):
            raise ValueError(f"biases must have shape (n_layers - 1, width) = {(n_h + 1, width)}, got {b.shape}")
    return arch, x, t, n_layers, output_bias_bit, width, n_h, n, rtol, b


def binary_landscape(
    architecture: str,
    inputs: ArrayLike,
    targets: ArrayLike,
    biases: ArrayLike | None = None,
    n_layers: int = 7,
    output_bias_bit: bool = False,
    rtol: float = 1e-12,
    top_bits: int = 8,
) -> LandscapeResult:
    """Evaluate every ``+-1`` configuration of a toy net and characterise the landscape (Fig. 4).

    Parameters
    ----------
    architecture : {"plain", "residual", "hyper_residual", "path_residual"}
        Eq. 1, 2, 3 or 4 of Orhan 2017.
    inputs : array_like, shape (P, width)
        Inputs; ``width`` (2 in the paper) is the width of every hidden layer.
    targets : array_like, shape (P,)
    biases : array_like, shape (n_layers - 1, width), optional
        Fixed (untrained) biases: row ``g`` inside the ReLU of hidden layer ``g + 2``, the last
        row's first entry added to the output (Fig. S1 draws them from N(0, 1)). Default zero.
    n_layers : int
        Layers counting input and output, >= 3 (7 in the paper).
    output_bias_bit : bool
        Add a trainable ``+-1`` output bias as the last parameter (23 bits, the paper's count).
    rtol : float
        Relative tolerance below which two losses tie (see the module notes), in [0, 1).
    top_bits : int
        Leading bits enumerated in parallel chunks (a tuning knob, not a result).

    Returns
    -------
    LandscapeResult

    Raises
    ------
    ValueError
        Unknown architecture; inputs not (P, width) or targets not (P,); NaN or infinity; biases
        of the wrong shape; more than :data:`MAX_BINARY_PARAMETERS` bits or more than
        :data:`MAX_LANDSCAPE_WORK` inputs x configurations; ``rtol`` outside [0, 1); losses that
        overflow double precision; arrays that do not convert to real numbers (e.g. non-numeric
        strings); ``n_layers`` or ``top_bits`` not an integer (a bool, a string or a non-integral
        float).
    TypeError
        Complex arrays, ``output_bias_bit`` not a bool, ``architecture`` not a str.

    Examples
    --------
    A four-layer net (10 binary weights) enumerates in milliseconds; the paper's seven-layer net
    (22 bits, ``n_layers=7``, the default) takes a few seconds per architecture.

    >>> task = regression_task(grid_size=5, rng=0)
    >>> plain = binary_landscape("plain", task.inputs, task.targets, n_layers=4)
    >>> skip = binary_landscape("residual", task.inputs, task.targets, n_layers=4)
    >>> plain.n_params, plain.n_local_minima, skip.n_local_minima
    (10, 272, 35)

    Notes
    -----
    The Numba kernel runs over chunks of consecutive configurations in parallel; inside a chunk
    only the layers whose bits changed since the previous configuration are recomputed, so most
    configurations cost one output layer (the bits of the first matrix are the most significant).
    """
    arch, x, t, n_layers, output_bias_bit, width, n_h, n, rtol, b = _task_arguments(
        architecture,
        inputs,
        targets,
        n_layers,
        output_bias_bit,
        rtol,
        biases,
        MAX_BINARY_PARAMETERS,
        "MAX_BINARY_PARAMETERS",
    )
    if x.shape[0] << n > MAX_LANDSCAPE_WORK:
        raise ValueError(
            f"inputs: {x.shape[0]} inputs x 2^{n} configurations exceeds MAX_LANDSCAPE_WORK = 2^34; "
            "use fewer inputs or parameters"
        )
    top_bits = _int(top_bits, "top_bits", minimum=0)
    top_bits = min(top_bits, n)
    group_of_bit = np.empty(n, dtype=np.int64)
    for j in range(n):
        group_of_bit[n - 1 - j] = min(j // (width * width), n_h)
    n_conf = 1 << n
    losses = np.empty(n_conf)
    zero_out = np.empty(n_conf, dtype=np.bool_)
    _all_losses(arch, n, width, n_h, output_bias_bit, group_of_bit, top_bits, b, x, t, losses, zero_out)
    if not np.all(np.isfinite(losses)):
        raise ValueError(
            "inputs, targets and biases give squared errors that overflow double precision; scale them "
            "down (without biases, scaling inputs and targets by k scales every loss by k^2 and leaves "
            "the landscape's structure unchanged)"
        )
    n_better = np.empty(n_conf, dtype=np.uint8)
    n_equal = np.empty(n_conf, dtype=np.uint8)
    nxt = np.empty(n_conf, dtype=np.int64)
    _neighbours(losses, n, rtol, n_better, n_equal, nxt)
    length = np.empty(n_conf, dtype=np.int16)
    end = np.empty(n_conf, dtype=np.int64)
    _walks(nxt, length, end)
    minima = np.flatnonzero(n_better == 0)
    basin = np.bincount(end, minlength=n_conf)[minima]
    strict = int(np.count_nonzero((n_better == 0) & (n_equal == 0)))
    srt = np.sort(losses)
    same = np.zeros(n_conf, dtype=np.bool_)
    eq = srt[1:] == srt[:-1]
    same[1:] |= eq
    same[:-1] |= eq
    n_distinct = int(n_conf - np.count_nonzero(eq))
    return LandscapeResult(
        architecture=architecture,
        n_params=n,
        losses=losses,
        n_better=n_better,
        n_equal=n_equal,
        successor=nxt,
        walk_length=length,
        walk_end=end,
        local_minima=minima,
        basin_sizes=basin,
        n_strict_local_minima=strict,
        n_zero_output=int(np.count_nonzero(zero_out)),
        n_tied_configurations=int(np.count_nonzero(same)),
        n_distinct_losses=n_distinct,
        rtol=rtol,
    )
