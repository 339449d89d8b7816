"""Skip connections as symmetry breaking: binary-weight landscapes and linear dynamics (Orhan 2017).

Seed 004 (Orhan, *Skip Connections as Effective Symmetry-Breaking*, 2017). Map from code to paper:

=============================  ===============================================================
code                           paper
=============================  ===============================================================
``binary_landscape``           Sec. 2.2, Fig. 4 / Fig. S1: exhaustive landscape of the toy nets
``"plain"``                    eq. 1, ``x_{l+1} = f(W_l x_l)``
``"residual"``                 eq. 2, ``x_{l+1} = 2/3 [f(W_l x_l) + x_l]``
``"hyper_residual"``           eq. 3, ``x_{l+1} = 2/(l+2) [f(W_l x_l) + x_l + ... + x_1]``
``"path_residual"``            eq. 4, ``x_{l+1} = 2/4 [f(W_l x_l) + 1 x_l]``
``regression_task``            the "two-dimensional regression problem with a random target"
``three_layer_flow``           eqs. 8-9, 11-14 (plain) and 15-18 (residual)
``three_layer_energy``         eq. 10 (plain) and Supp. eq. 31 (residual)
``three_layer_hessian``        Supp. Note 2, eqs. 29-30 and 32-33
``mode_energy``                eqs. 21-23 (mode strengths ``a_l``; ``tau`` = 1)
``mode_hessian``               Supp. Note 3, eqs. 36-37
``folded_orthogonal``          Sec. 2.4.2, Fig. 9 ("128, 64, ..., 1 orthonormal vectors")
``controlled_skip_matrix``     Sec. 2.4.2, Fig. 10, Supp. Note 4 (eigenvalues on the unit circle)
``permutation_counts``         Discussion: ``n!`` versus ``K! (d!)^K``
=============================  ===============================================================

Conventions of the toy networks (Sec. 2.2)
-------------------------------------------
``n_layers`` layers: the input ``x_1`` (``width`` units), ``n_layers - 2`` hidden layers of
``width`` units produced by square matrices ``W_1 ... W_{n_layers-2}`` and one linear output
unit ``y = w_out . x_{n_layers-1}`` (no skip into the output, no nonlinearity). Every weight is
``+1`` or ``-1``. The paper's net has ``n_layers = 7`` and ``width = 2``: five 2x2 matrices
(20 weights) and a 1x2 output row (2 weights), **22** binary weights. The paper states 23
parameters (2^23 ~ 8.4M configurations); its equations imply 22. ``output_bias_bit=True`` adds a
trainable output bias in ``{-1, +1}`` as the 23rd bit, which reproduces the paper's count; we know
of no other reading of eqs. 1-4 that gives 23.

The activity normalisation "by the number of incoming connections" generalises to width ``w``
as ``w / (incoming)``: plain ``w`` (factor 1), residual ``w + 1``, hyper-residual ``w + l``,
path-residual ``2 w``; for ``w = 2`` these are the paper's 1, 2/3, 2/(l+2) and 2/4.

Configuration encoding: configuration ``c`` (an integer in ``[0, 2^n)``) sets parameter ``j``
(order: ``W_1`` row-major, ..., ``W_{L-2}``, ``w_out``, output bias) to ``+1`` when bit
``n - 1 - j`` of ``c`` is 1 and to ``-1`` otherwise; :func:`decode_configuration` does this.

Local minima and ties
---------------------
A neighbour (one flipped bit) is *better* when its loss is lower by more than
``rtol * max(|L_c|, |L_nb|)`` (``rtol = 1e-12`` by default, so that two configurations computing
the same function tie even if rounding differs; ``rtol = 0`` compares exactly). A configuration is
a *local minimum* when it has no better neighbour (the paper's definition: "zero [better
neighbours] corresponds to local minima"); plateaus of tied configurations therefore count every
member as a local minimum. ``n_strict_local_minima`` counts configurations whose neighbours are
all strictly worse. Ties are frequent in the plain net: every configuration whose output is
identically zero has loss ``mean(t^2)``.

Adaptive walks move from a configuration to its best neighbour (lowest loss; neighbours tied
within ``rtol`` resolve to the lowest bit index) while that neighbour is better, so each walk ends
at a local minimum; the basin of a local minimum is the set of configurations whose walk ends
there, and the basins partition the configurations.

References
----------
Orhan, A. E. (2017). Skip connections as effective symmetry-breaking. arXiv:1701.09175.
Saxe, McClelland, Ganguli (2013). Exact solutions to the nonlinear dynamics of learning in deep
linear neural networks. arXiv:1312.6120.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numba
import numpy as np

from ._checks import as_float_array, check_int, check_nonnegative

__all__ = [
    "ARCHITECTURES",
    "LandscapeResult",
    "ModeTrajectory",
    "PermutationCounts",
    "RegressionTask",
    "ThreeLayerHessian",
    "ThreeLayerTrajectory",
    "binary_landscape",
    "column_covariance_spectrum",
    "controlled_skip_matrix",
    "decode_configuration",
    "folded_orthogonal",
    "forward_binary",
    "mode_energy",
    "mode_flow",
    "mode_gradient",
    "mode_hessian",
    "mode_offsets",
    "mode_saddle",
    "n_binary_parameters",
    "permutation_counts",
    "regression_task",
    "rescaling_deviation",
    "skip_network",
    "supp4_skip_matrix",
    "three_layer_energy",
    "three_layer_flow",
    "three_layer_gradient_field",
    "three_layer_hessian",
]

#: Architectures of eqs. 1-4 and their integer codes inside the kernels.
ARCHITECTURES = {"plain": 0, "residual": 1, "hyper_residual": 2, "path_residual": 3}

#: Largest number of binary parameters enumerated (2^30 losses = 8 GiB): a guard, not a paper value.
MAX_BINARY_PARAMETERS = 30


# --------------------------------------------------------------------------------------------
# regression task
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RegressionTask:
    """Inputs on a square grid and a random smooth target (Sec. 2.2's regression problem).

    Attributes
    ----------
    inputs : ndarray, shape (P, 2)
    targets : ndarray, shape (P,)
    frequencies, phases, amplitudes : ndarray
        The random target ``t(x) = sum_k amplitudes[k] cos(frequencies[k] . x + phases[k])``.
    seed : int
    """

    inputs: np.ndarray
    targets: np.ndarray
    frequencies: np.ndarray
    phases: np.ndarray
    amplitudes: np.ndarray
    seed: int

    def replace(self, **changes):
        return replace(self, **changes)


def regression_task(grid_size: int = 5, extent: float = 1.0, n_components: int = 8, seed: int = 0) -> RegressionTask:
    """Grid inputs in ``[-extent, extent]^2`` and a seeded random target function.

    The paper gives no details beyond "a two-dimensional regression problem with a random target
    function"; we use ``grid_size^2`` points of the square grid and the random Fourier series
    ``t(x) = sum_{k=1}^{K} alpha_k cos(omega_k . x + phi_k)`` with ``omega_k ~ N(0, (pi/extent)^2 I)``,
    ``phi_k ~ U[0, 2 pi)`` and ``alpha_k ~ N(0, 2/K)`` (so ``E t(x)^2 = 1``).

    Parameters
    ----------
    grid_size : int
        Points per axis, >= 2 (``P = grid_size^2`` inputs).
    extent : float
        Half-width of the square, > 0.
    n_components : int
        ``K``, >= 1.
    seed : int
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    RegressionTask
    """
    grid_size = check_int(grid_size, "grid_size", minimum=2, maximum=1000)
    n_components = check_int(n_components, "n_components", minimum=1, maximum=10_000)
    extent = float(extent)
    if not (math.isfinite(extent) and extent > 0):
        raise ValueError(f"extent must be a finite number > 0, got {extent!r}")
    rng = np.random.default_rng(seed)
    omega = rng.normal(0.0, math.pi / extent, size=(n_components, 2))
    phi = rng.uniform(0.0, 2 * math.pi, size=n_components)
    alpha = rng.normal(0.0, math.sqrt(2.0 / n_components), size=n_components)
    g = np.linspace(-extent, extent, grid_size)
    xx, yy = np.meshgrid(g, g, indexing="ij")
    inputs = np.ascontiguousarray(np.stack([xx.ravel(), yy.ravel()], axis=1))
    targets = np.cos(inputs @ omega.T + phi) @ alpha
    return RegressionTask(inputs, np.ascontiguousarray(targets), omega, phi, alpha, int(seed))


# --------------------------------------------------------------------------------------------
# binary toy networks
# --------------------------------------------------------------------------------------------


def n_binary_parameters(n_layers: int = 7, width: int = 2, output_bias_bit: bool = False) -> int:
    """Number of binary parameters of the toy net: ``(n_layers - 2) width^2 + width (+ 1)``.

    ``n_binary_parameters(7, 2) == 22`` (eqs. 1-4); ``23`` with ``output_bias_bit=True`` (the paper's count).
    """
    n_layers = check_int(n_layers, "n_layers", minimum=3)
    width = check_int(width, "width", minimum=1)
    return (n_layers - 2) * width * width + width + int(bool(output_bias_bit))


def _arch_code(architecture) -> int:
    if architecture not in ARCHITECTURES:
        raise ValueError(f"architecture must be one of {sorted(ARCHITECTURES)}, got {architecture!r}")
    return ARCHITECTURES[architecture]


def decode_configuration(c: int, n_layers: int = 7, width: int = 2, output_bias_bit: bool = False):
    """The ``+-1`` weights of configuration ``c``: ``(list of (width, width) matrices, w_out, bias)``.

    Parameter ``j`` is ``+1`` iff bit ``n-1-j`` of ``c`` is set (order: ``W_1`` row-major, ...,
    ``W_{n_layers-2}``, ``w_out``, output bias), the encoding of :func:`binary_landscape` for the
    toy nets of eqs. 1-4 of seed 004.

    Parameters
    ----------
    c : int
        Configuration, ``0 <= c < 2^n``.
    n_layers, width, output_bias_bit
        As in :func:`n_binary_parameters`.

    Returns
    -------
    (mats, w_out, bias)
        ``n_layers - 2`` matrices of shape ``(width, width)``, the output row ``(width,)`` and the
        output bias (``0.0`` unless ``output_bias_bit``).

    Raises
    ------
    ValueError
        ``c`` out of range or bad sizes.
    """
    n = n_binary_parameters(n_layers, width, output_bias_bit)
    c = check_int(c, "c", minimum=0, maximum=2**n - 1)
    bits = np.array([(c >> (n - 1 - j)) & 1 for j in range(n)], dtype=np.int64)
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


def forward_binary(architecture: str, inputs, mats, w_out, output_bias: float = 0.0, biases=None) -> np.ndarray:
    """Outputs of one toy network (eqs. 1-4 of seed 004) on ``inputs``; plain NumPy reference of the kernel.

    Parameters
    ----------
    architecture : {"plain", "residual", "hyper_residual", "path_residual"}
    inputs : array_like, shape (P, width)
    mats : list of (width, width) arrays
        Hidden weight matrices ``W_1 ...``.
    w_out : array_like, shape (width,)
        Output row.
    output_bias : float
        Trainable output bias (the 23rd bit).
    biases : array_like, shape (len(mats) + 1, width), optional
        Row ``g`` is added inside the ReLU of hidden layer ``g + 2``; the last row's first entry
        is a fixed output bias (Fig. S1).

    Returns
    -------
    ndarray, shape (P,)

    Raises
    ------
    ValueError
        Unknown architecture.
    """
    code = _arch_code(architecture)
    x = np.asarray(inputs, dtype=np.float64)
    width = x.shape[1]
    n_h = len(mats)
    b = np.zeros((n_h + 1, width)) if biases is None else np.asarray(biases, dtype=np.float64)
    cum = x.copy()
    for g, w in enumerate(mats):
        pre = x @ np.asarray(w, dtype=np.float64).T + b[g]
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
    return x @ np.asarray(w_out, dtype=np.float64) + b[n_h, 0] + output_bias


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


@numba.njit(cache=True, parallel=True)
def _all_losses(arch, n_bits, width, n_h, has_bias, group_of_bit, top_bits, biases, inputs, targets, losses, zero_out):
    """Loss of every configuration; chunks of consecutive ``c`` share the leading layers' bits."""
    n_chunks = 1 << top_bits
    chunk = 1 << (n_bits - top_bits)
    n_p = inputs.shape[0]
    for ch in numba.prange(n_chunks):
        xs = np.empty((n_h + 1, n_p, width))
        cums = np.empty((n_h + 1, n_p, width))
        out = np.empty(1)
        for p in range(n_p):
            for k in range(width):
                xs[0, p, k] = inputs[p, k]
                cums[0, p, k] = inputs[p, k]
        c0 = ch * chunk
        for c in range(c0, c0 + chunk):
            if c == c0:
                start = 0
            else:
                diff = c ^ (c - 1)
                hb = 0
                while (diff >> (hb + 1)) != 0:
                    hb += 1
                start = group_of_bit[hb]
            losses[c] = _recompute(c, start, arch, n_bits, width, n_h, has_bias, xs, cums, biases, inputs, targets, out)
            zero_out[c] = out[0] != 0.0


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
class LandscapeResult:
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

    def replace(self, **changes):
        return replace(self, **changes)


def binary_landscape(
    architecture: str,
    inputs,
    targets,
    biases=None,
    n_layers: int = 7,
    output_bias_bit: bool = False,
    rtol: float = 1e-12,
    top_bits: int = 8,
) -> LandscapeResult:
    """Evaluate every ``+-1`` configuration of a toy net and characterise the landscape (Fig. 4).

    Parameters
    ----------
    architecture : {"plain", "residual", "hyper_residual", "path_residual"}
        Eq. 1, 2, 3 or 4 of seed 004.
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
        Relative tolerance below which two losses tie (see the module notes), >= 0.
    top_bits : int
        Leading bits enumerated in parallel chunks (a tuning knob, not a result).

    Returns
    -------
    LandscapeResult

    Raises
    ------
    ValueError
        Unknown architecture; inputs not (P, width) or targets not (P,); NaN; biases of the
        wrong shape; more than ``MAX_BINARY_PARAMETERS`` bits.

    Examples
    --------
    >>> task = regression_task(grid_size=5, seed=0)
    >>> r = binary_landscape("hyper_residual", task.inputs, task.targets)  # doctest: +SKIP
    >>> r.n_params, r.n_local_minima  # doctest: +SKIP
    (22, 337)

    Notes
    -----
    The Numba kernel runs over chunks of consecutive configurations in parallel; inside a chunk
    only the layers whose bits changed since the previous configuration are recomputed, so most
    configurations cost one output layer (the bits of the first matrix are the most significant).
    """
    arch = _arch_code(architecture)
    x = as_float_array(inputs, "inputs")
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(f"inputs must have shape (P, width) with P, width >= 1, got {x.shape}")
    t = as_float_array(targets, "targets")
    if t.shape != (x.shape[0],):
        raise ValueError(f"targets must have shape ({x.shape[0]},) to match inputs, got {t.shape}")
    n_layers = check_int(n_layers, "n_layers", minimum=3, maximum=64)
    width = x.shape[1]
    n_h = n_layers - 2
    n = n_binary_parameters(n_layers, width, output_bias_bit)
    if n > MAX_BINARY_PARAMETERS:
        raise ValueError(f"the network has {n} binary parameters; at most {MAX_BINARY_PARAMETERS} are enumerated")
    rtol = float(check_nonnegative(rtol, "rtol"))
    if biases is None:
        b = np.zeros((n_h + 1, width))
    else:
        b = as_float_array(biases, "biases")
        if b.shape != (n_h + 1, width):
            raise ValueError(f"biases must have shape (n_layers - 1, width) = {(n_h + 1, width)}, got {b.shape}")
    top_bits = check_int(top_bits, "top_bits", minimum=0)
    top_bits = min(top_bits, n)
    group_of_bit = np.empty(n, dtype=np.int64)
    for j in range(n):
        group_of_bit[n - 1 - j] = min(j // (width * width), n_h)
    n_conf = 1 << n
    losses = np.empty(n_conf)
    zero_out = np.empty(n_conf, dtype=np.bool_)
    _all_losses(arch, n, width, n_h, bool(output_bias_bit), group_of_bit, top_bits, b, x, t, losses, zero_out)
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


# --------------------------------------------------------------------------------------------
# linear three-layer dynamics (Sec. 2.3.1, eqs. 8-18, Supp. Note 2)
# --------------------------------------------------------------------------------------------


def _three_layer_args(a, b, s, u, v):
    a = as_float_array(a, "a")
    b = as_float_array(b, "b")
    s = as_float_array(s, "s")
    if a.ndim != 2 or b.shape != a.shape:
        raise ValueError(f"a and b must be (n_hidden, n_modes) arrays of equal shape, got {a.shape} and {b.shape}")
    if s.shape != (a.shape[1],):
        raise ValueError(f"s must have shape (n_modes,) = ({a.shape[1]},), got {s.shape}")
    u = np.zeros_like(b) if u is None else as_float_array(u, "u")
    v = np.zeros_like(a) if v is None else as_float_array(v, "v")
    if u.shape != a.shape or v.shape != a.shape:
        raise ValueError(f"u and v must have the shape of a, {a.shape}, got {u.shape} and {v.shape}")
    return a, b, s, u, v


def three_layer_energy(a, b, s, u=None, v=None) -> float:
    """Energy of a linear three-layer net in the mode basis: eq. 10 (plain) and Supp. eq. 31 (residual).

    .. math:: E = \\tfrac12 \\lVert \\mathrm{diag}(s) - (a + v)^\\top (b + u) \\rVert_F^2

    Parameters
    ----------
    a, b : array_like, shape (n_hidden, n_modes)
        Column ``alpha`` is the paper's ``a^alpha`` (input mode -> hidden) and ``b^alpha``
        (hidden -> output mode).
    s : array_like, shape (n_modes,)
        Singular values of the input-output correlation matrix.
    u, v : array_like, shape (n_hidden, n_modes), optional
        Skip vectors (columns ``u^alpha``, ``v^alpha`` of orthogonal matrices, eqs. 19-20); ``None``
        (zero) is the plain network. ``tau = 1``.
    """
    a, b, s, u, v = _three_layer_args(a, b, s, u, v)
    r = np.diag(s) - (a + v).T @ (b + u)
    return 0.5 * float(np.sum(r * r))


def three_layer_gradient_field(a, b, s, u=None, v=None, printed: bool = False):
    """Right-hand sides ``(da/dt, db/dt)`` of eqs. 8-9 / 11-18 (gradient flow of the energy).

    ``da/dt = (b + u) R^T`` and ``db/dt = (a + v) R`` with ``R = diag(s) - (a + v)^T (b + u)``.
    The paper's printed eqs. 13-14 and 17-18 use ``(a^1 . b^2) a^2`` where the gradient of eq. 10
    (and the paper's own eq. 9) gives ``(a^2 . b^1) a^2``; ``printed=True`` (two modes only)
    integrates the printed form instead, which is not a gradient flow.
    """
    a, b, s, u, v = _three_layer_args(a, b, s, u, v)
    A, B = a + v, b + u
    r = np.diag(s) - A.T @ B
    da = B @ r.T
    if not printed:
        db = A @ r
    else:
        if a.shape[1] != 2:
            raise ValueError("printed=True implements eqs. 13-14 / 17-18, which have n_modes = 2")
        m = A.T @ B
        db = np.empty_like(b)
        db[:, 0] = r[0, 0] * A[:, 0] - m[0, 1] * A[:, 1]
        db[:, 1] = r[1, 1] * A[:, 1] - m[1, 0] * A[:, 0]
    return da, db


@dataclass(frozen=True)
class ThreeLayerTrajectory:
    """Solution of the three-layer flow: ``a[k]``, ``b[k]`` at ``t[k]`` and the energy."""

    t: np.ndarray
    a: np.ndarray
    b: np.ndarray
    energy: np.ndarray

    def replace(self, **changes):
        return replace(self, **changes)


def three_layer_flow(a0, b0, s, t, u=None, v=None, printed: bool = False, rtol: float = 1e-9, atol: float = 1e-12):
    """Integrate eqs. 11-14 (plain, ``u = v = None``) or 15-18 (residual) with ``scipy.integrate.solve_ivp``.

    Parameters
    ----------
    a0, b0 : array_like, shape (n_hidden, n_modes)
    s : array_like, shape (n_modes,)
    t : array_like
        Increasing output times (``t[0]`` is the initial time). For gradient descent with
        learning rate ``eta``, step ``k`` corresponds to ``t = k eta``.
    u, v : array_like, optional
        Skip vectors (residual network).
    printed : bool
        Use the paper's printed eqs. 13-14/17-18 (see :func:`three_layer_gradient_field`).

    Returns
    -------
    ThreeLayerTrajectory
    """
    from scipy.integrate import solve_ivp

    a0, b0, s, u, v = _three_layer_args(a0, b0, s, u, v)
    t = as_float_array(t, "t")
    if t.ndim != 1 or t.size < 2 or np.any(np.diff(t) <= 0):
        raise ValueError("t must be a strictly increasing 1-D array of at least 2 times")
    shape = a0.shape
    size = a0.size

    def rhs(_, y):
        da, db = three_layer_gradient_field(y[:size].reshape(shape), y[size:].reshape(shape), s, u, v, printed)
        return np.concatenate([da.ravel(), db.ravel()])

    sol = solve_ivp(rhs, (t[0], t[-1]), np.concatenate([a0.ravel(), b0.ravel()]), t_eval=t, method="LSODA", rtol=rtol, atol=atol)
    if not sol.success:
        raise RuntimeError(f"solve_ivp failed: {sol.message}")
    a = sol.y[:size].T.reshape(-1, *shape)
    b = sol.y[size:].T.reshape(-1, *shape)
    e = np.array([three_layer_energy(a[k], b[k], s, u, v) for k in range(len(t))])
    return ThreeLayerTrajectory(t, a, b, e)


@dataclass(frozen=True)
class ThreeLayerHessian:
    """Hessian of eq. 10 / 31 in the parameter order ``(a^1, ..., a^m, b^1, ..., b^m)``.

    ``full`` is the whole Hessian, ``aa`` and ``bb`` its first-layer and second-layer blocks
    (Supp. eqs. 29-30 / 32-33 are entries of ``aa``): ``aa = I_m (x) (B B^T)`` with ``B = b + u``.
    """

    full: np.ndarray
    aa: np.ndarray
    bb: np.ndarray

    def replace(self, **changes):
        return replace(self, **changes)


def three_layer_hessian(a, b, s, u=None, v=None) -> ThreeLayerHessian:
    """Analytic Hessian of the three-layer energy (Supp. Note 2).

    With ``A = a + v``, ``B = b + u``, ``R = diag(s) - A^T B``:

    - ``d2E / da_i^alpha da_k^gamma = delta_{alpha gamma} sum_beta B_i^beta B_k^beta`` (eqs. 29-30, 32-33),
    - ``d2E / db_i^beta db_k^delta = delta_{beta delta} sum_alpha A_i^alpha A_k^alpha``,
    - ``d2E / da_i^alpha db_k^delta = -delta_{ik} R_{alpha delta} + B_i^delta A_k^alpha``.

    Notes
    -----
    Supp. Note 2 argues from the ``aa`` block: it is singular exactly when the rows of ``B`` are
    linearly dependent, which contains the hyperplanes ``b_i^beta = b_j^beta`` (all beta) and
    ``b_i^beta = 0``. The *full* Hessian's columns for ``a_i^alpha`` and ``a_j^alpha`` are equal
    on that hyperplane only where row ``alpha`` of ``R`` vanishes (the cross block carries
    ``-delta_{ik} R``), so the full Hessian is not singular there in general. With skips
    (``u`` rows distinct), ``b_i = b_j`` leaves ``B`` regular: the singular set moves to
    ``b_i + u_i = b_j + u_j`` rather than disappearing.
    """
    a, b, s, u, v = _three_layer_args(a, b, s, u, v)
    A, B = a + v, b + u
    n, m = a.shape
    r = np.diag(s) - A.T @ B
    bbt = B @ B.T
    aat = A @ A.T
    eye = np.eye(m)
    aa = np.kron(eye, bbt)
    bb = np.kron(eye, aat)
    ab = np.zeros((n * m, n * m))
    for al in range(m):
        for de in range(m):
            blk = -r[al, de] * np.eye(n) + np.outer(B[:, de], A[:, al])
            ab[al * n : (al + 1) * n, de * n : (de + 1) * n] = blk
    full = np.block([[aa, ab], [ab.T, bb]])
    return ThreeLayerHessian(full, aa, bb)


# --------------------------------------------------------------------------------------------
# decoupled mode strengths (Sec. 2.3.2, eqs. 21-23, Supp. Note 3)
# --------------------------------------------------------------------------------------------


def mode_offsets(architecture: str, n_weights: int) -> np.ndarray:
    """Constants added to the mode strengths: 0 (plain, eq. 21), 1 (residual), ``l`` (hyper-residual).

    The paper labels eq. 22 ``E_hyperres`` and eq. 23 ``E_res``; the text (and eqs. 6-7) make
    ``+1`` the residual and ``+l`` the hyper-residual energy, which is what this function returns.
    """
    n_weights = check_int(n_weights, "n_weights", minimum=1)
    if architecture == "plain":
        return np.zeros(n_weights)
    if architecture == "residual":
        return np.ones(n_weights)
    if architecture == "hyper_residual":
        return np.arange(1, n_weights + 1, dtype=np.float64)
    raise ValueError(f"architecture must be 'plain', 'residual' or 'hyper_residual', got {architecture!r}")


def _mode_args(a, s, architecture):
    a = as_float_array(a, "a")
    if a.ndim != 1 or a.size < 1:
        raise ValueError(f"a must be a 1-D array of mode strengths a_1..a_{{N_l-1}}, got shape {a.shape}")
    s = float(as_float_array(s, "s"))
    x = a + mode_offsets(architecture, a.size)
    with np.errstate(over="ignore"):
        finite = np.isfinite(np.prod(np.abs(x)))
    if not finite:
        raise ValueError(
            f"prod_l |a_l + c_l| overflows double precision for these {a.size} mode strengths; "
            "use fewer layers or smaller strengths"
        )
    return a, s, x


def mode_energy(a, s, architecture: str = "plain") -> float:
    """``E = (s - prod_l (a_l + c_l))^2 / 2`` (eqs. 21-23 of seed 004 with ``tau = 1``; ``c_l`` from :func:`mode_offsets`).

    Parameters
    ----------
    a : array_like, shape (N_l - 1,)
        Mode strengths ``a_l`` of one mode.
    s : float
        Its target singular value.
    architecture : {"plain", "residual", "hyper_residual"}

    Returns
    -------
    float

    Raises
    ------
    ValueError
        Bad shapes, non-finite values, unknown architecture, or a product that overflows.
    """
    _, s, x = _mode_args(a, s, architecture)
    return 0.5 * (s - float(np.prod(x))) ** 2


def _prod_except(x):
    """``prod_{l != i} x_l`` for every ``i`` without dividing (exact at zeros)."""
    n = x.size
    left = np.ones(n)
    right = np.ones(n)
    for i in range(1, n):
        left[i] = left[i - 1] * x[i - 1]
        right[n - 1 - i] = right[n - i] * x[n - i]
    return left * right


def mode_gradient(a, s, architecture: str = "plain") -> np.ndarray:
    """``dE/da_i = -(s - u) prod_{l != i}(a_l + c_l)`` (Supp. eq. 35)."""
    _, s, x = _mode_args(a, s, architecture)
    return -(s - float(np.prod(x))) * _prod_except(x)


def mode_hessian(a, s, architecture: str = "plain") -> np.ndarray:
    """Hessian of eqs. 21-23 (Supp. eqs. 36-37).

    ``H_ii = (prod_{l != i} x_l)^2`` and ``H_ik = (2 u - s) prod_{l != i,k} x_l`` with
    ``x_l = a_l + c_l`` and ``u = prod_l x_l``; equivalently ``H = g g^T - (s - u) K`` with
    ``g_i = prod_{l != i} x_l`` and ``K_ik = prod_{l != i,k} x_l`` (``K_ii = 0``).

    Notes
    -----
    Supp. Note 3 states that the columns for ``a_i`` and ``a_j`` become identical when
    ``a_i = a_j``. They do not: on ``x_i = x_j`` the vector ``e_i - e_j`` is an eigenvector with
    eigenvalue ``(s - u) prod_{l != i,j} x_l``, which vanishes only on the solution manifold
    ``u = s`` or where another factor vanishes. For two weight layers
    ``det H = (s - x_1 x_2)(3 x_1 x_2 - s)``: singular exactly on the hyperbolas ``u = s`` and
    ``u = s/3``, not on the diagonal. What ``a_i = a_j`` is, is an invariant manifold of the flow
    (the permutation symmetry) -- which the hyper-residual offsets move off the diagonal.
    """
    _, s, x = _mode_args(a, s, architecture)
    n = x.size
    u = float(np.prod(x))
    g = _prod_except(x)
    k = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            mask = np.ones(n, dtype=bool)
            mask[[i, j]] = False
            k[i, j] = k[j, i] = float(np.prod(x[mask]))
    return np.outer(g, g) - (s - u) * k


def mode_saddle(architecture: str, n_weights: int = 2) -> np.ndarray:
    """The critical point where every factor ``a_l + c_l`` vanishes: (0, 0), (-1, -1), (-1, -2) for two weight layers (Fig. 6a)."""
    return -mode_offsets(architecture, n_weights)


@dataclass(frozen=True)
class ModeTrajectory:
    """Mode-strength flow: ``a[k]`` (mode strength per layer) and ``u[k] = prod_l a_l`` at ``t[k]``.

    ``u`` is the product of the raw strengths as in Fig. 6b; ``product`` is ``prod_l (a_l + c_l)``,
    the quantity that converges to ``s``.
    """

    t: np.ndarray
    a: np.ndarray
    u: np.ndarray
    product: np.ndarray
    architecture: str

    def replace(self, **changes):
        return replace(self, **changes)


def mode_flow(a0, s, t, architecture: str = "plain", rtol: float = 1e-9, atol: float = 1e-12) -> ModeTrajectory:
    """Integrate the gradient flow ``da/dt = -dE/da`` of eqs. 21-23 (seed 004) with ``scipy.integrate.solve_ivp`` (LSODA).

    Parameters
    ----------
    a0 : array_like, shape (N_l - 1,)
        Initial mode strengths.
    s : float
        Target singular value.
    t : array_like
        Strictly increasing output times (``t = iteration x learning rate``).
    architecture : {"plain", "residual", "hyper_residual"}
    rtol, atol : float
        Tolerances of the integrator.

    Returns
    -------
    ModeTrajectory

    Raises
    ------
    ValueError
        Bad arguments. ``RuntimeError`` if the integrator fails.
    """
    from scipy.integrate import solve_ivp

    a0, s, _ = _mode_args(a0, s, architecture)
    t = as_float_array(t, "t")
    if t.ndim != 1 or t.size < 2 or np.any(np.diff(t) <= 0):
        raise ValueError("t must be a strictly increasing 1-D array of at least 2 times")
    c = mode_offsets(architecture, a0.size)

    def rhs(_, y):
        x = y + c
        return (s - float(np.prod(x))) * _prod_except(x)

    sol = solve_ivp(rhs, (t[0], t[-1]), a0, t_eval=t, method="LSODA", rtol=rtol, atol=atol)
    if not sol.success:
        raise RuntimeError(f"solve_ivp failed: {sol.message}")
    a = sol.y.T
    return ModeTrajectory(t, a, np.prod(a, axis=1), np.prod(a + c, axis=1), architecture)


# --------------------------------------------------------------------------------------------
# skip matrices of controlled orthogonality (Sec. 2.4.2, Supp. Note 4)
# --------------------------------------------------------------------------------------------


def folded_orthogonal(n: int, n_orthonormal: int, rng=None, seed=None) -> np.ndarray:
    """A Haar orthogonal matrix folded until ``n_orthonormal`` distinct orthonormal columns remain (Fig. 9).

    Folding copies the first half of the columns onto the second half; after ``f`` folds column
    ``j`` equals column ``j mod (n / 2^f)`` of the orthogonal matrix.

    Parameters
    ----------
    n : int
        Size, >= 1.
    n_orthonormal : int
        ``n / 2^f`` for an integer ``f >= 0`` (``n`` itself: no folding; 1: every column equal).
    rng, seed
        Random source.

    Returns
    -------
    ndarray, shape (n, n)
        Rank ``n_orthonormal``.

    Raises
    ------
    ValueError
        ``n < 1`` or ``n_orthonormal`` not of the form ``n / 2^f``.
    """
    from ._checks import check_rng
    from .init import haar_orthogonal

    n = check_int(n, "n", minimum=1)
    k = check_int(n_orthonormal, "n_orthonormal", minimum=1, maximum=n)
    f = n // k
    if n % k or f & (f - 1):
        raise ValueError(f"n_orthonormal must be n / 2^f for an integer f >= 0 (n = {n}), got {k}")
    q = haar_orthogonal(n, n, rng=check_rng(rng, seed))
    return np.ascontiguousarray(q[:, np.arange(n) % k])


def _check_n_tau(n, tau):
    n = check_int(n, "n", minimum=1)
    tau = float(check_nonnegative(tau, "tau"))
    return n, tau


def column_covariance_spectrum(n: int, tau: float) -> np.ndarray:
    """Target spectrum ``lambda_i = exp(-tau (i - 1))``, ``i = 1..n`` (Sec. 2.4.2, Fig. 10a)."""
    n, tau = _check_n_tau(n, tau)
    return np.exp(-tau * np.arange(n))


def controlled_skip_matrix(n: int, tau: float, rng=None, seed=None) -> np.ndarray:
    """A skip matrix whose eigenvalues are those of a Haar rotation and whose column Gram matrix
    ``Sigma^T Sigma`` has eigenvalues proportional to ``exp(-tau (i - 1))`` (our construction).

    Supplementary Note 4 is cut off in the seed, and its printed recipe ``Sigma = T O T^{-1}``
    fixes the eigenvector correlations rather than the column covariance. This construction
    satisfies both properties the main text asks for exactly:

    1. draw ``O`` Haar on SO(n) and take its eigen-angles ``theta_k`` (conjugate pairs, plus a
       real eigenvalue 1 when ``n`` is odd);
    2. the target Gram spectrum ``kappa exp(-tau (i - 1))`` with ``kappa = exp(tau (n - 1) / 2)``
       (so that its product is 1 = ``|det Sigma|^2``) comes in reciprocal pairs
       ``(sigma_k^2, sigma_k^{-2})``, ``i <-> n + 1 - i``;
    3. each pair becomes a real 2x2 block ``M_k = [[cos t, -r sin t], [sin t / r, cos t]]``:
       ``det M_k = 1`` and trace ``2 cos t`` give eigenvalues ``exp(+-i t)``, and
       ``r - 1/r = (sigma - 1/sigma) / |sin t|`` gives singular values
       ``(sigma, 1/sigma)``;
    4. ``Sigma = V (M_1 (+) M_2 (+) ...) V^T`` with ``V`` Haar orthogonal, which keeps both spectra.

    ``tau = 0`` returns an orthogonal matrix (every ``M_k`` a rotation).

    Parameters
    ----------
    n : int
        Size, >= 1.
    tau : float
        Non-orthogonality, >= 0.
    rng, seed
        Random source.

    Returns
    -------
    ndarray, shape (n, n)

    Raises
    ------
    ValueError
        ``n < 1`` or ``tau < 0`` (or non-finite).
    """
    from .init import haar_orthogonal
    from ._checks import check_rng

    n, tau = _check_n_tau(n, tau)
    rng = check_rng(rng, seed)
    o = haar_orthogonal(n, n, rng=rng)
    if np.linalg.det(o) < 0:
        o[:, 0] = -o[:, 0]
    ang = np.angle(np.linalg.eigvals(o))
    pos = np.sort(ang[ang > 1e-12])[: n // 2]
    if pos.size < n // 2:  # measure-zero event (eigenvalue pair at +-1); redraw angles uniformly
        pos = rng.uniform(0.1, math.pi - 0.1, size=n // 2)
    log_g = tau * ((n - 1) / 2.0 - np.arange(n))  # log of kappa * lambda_i
    sig2 = np.exp(log_g[: n // 2])  # sigma_k^2 >= 1, paired with index n + 1 - i
    blocks = np.zeros((n, n))
    for k, (th, s2) in enumerate(zip(rng.permutation(pos), sig2)):
        # r^2 + r^-2 = 2 + w^2 with w = (sigma - 1/sigma) / |sin t|, i.e. r - 1/r = w
        sg = math.sqrt(s2)
        w = (sg - 1.0 / sg) / abs(math.sin(th))
        r = 0.5 * (w + math.sqrt(w * w + 4.0))
        i = 2 * k
        blocks[i : i + 2, i : i + 2] = [[math.cos(th), -r * math.sin(th)], [math.sin(th) / r, math.cos(th)]]
    if n % 2:
        blocks[n - 1, n - 1] = 1.0
    v = haar_orthogonal(n, n, rng=rng)
    return v @ blocks @ v.T


def supp4_skip_matrix(n: int, tau: float, rng=None, seed=None) -> np.ndarray:
    """The printed recipe of Supp. Note 4: ``Sigma = T O T^{-1}``, ``R = T T^T`` the correlation of ``S = Q Lambda Q^T``.

    ``Sigma`` has the eigenvalues of the Haar orthogonal ``O`` (on the unit circle); its
    eigenvectors ``T u_k`` are correlated through ``R``. Kept for comparison with
    :func:`controlled_skip_matrix`, whose column Gram matrix has the stated spectrum exactly.
    """
    from .init import haar_orthogonal
    from ._checks import check_rng

    n, tau = _check_n_tau(n, tau)
    rng = check_rng(rng, seed)
    q = haar_orthogonal(n, n, rng=rng)
    s = (q * np.exp(-tau * np.arange(n))) @ q.T
    d = 1.0 / np.sqrt(np.diag(s))
    t = np.linalg.cholesky(s * d[:, None] * d[None, :])
    o = haar_orthogonal(n, n, rng=rng)
    return t @ o @ np.linalg.inv(t)


# --------------------------------------------------------------------------------------------
# rescaling symmetry and permutation counts (Sec. 2.1, Discussion)
# --------------------------------------------------------------------------------------------


def skip_network(architecture: str, x, weights, biases=None) -> np.ndarray:
    """Real-valued ReLU net with identity skips: eq. 24 (plain), 25 (residual, ``Q_l = I``), 26 (hyper-residual) of seed 004.

    Hyper-residual (eq. 26): ``x_{l+1} = f(W_l x_l + b) + x_l + [x_{l-1} + ... + x_1] / (l - 1)``.

    Parameters
    ----------
    architecture : {"plain", "residual", "hyper_residual"}
    x : array_like, shape (P, n)
        Inputs.
    weights : list of (n, n) arrays
        ``W_1 ... W_{L-1}``.
    biases : list of (n,) arrays, optional
        One per weight matrix (default zero).

    Returns
    -------
    ndarray, shape (P, n)
        The last layer.

    Raises
    ------
    ValueError
        Unknown architecture, non-finite arrays, or a bias list of the wrong length.
    """
    if architecture not in ("plain", "residual", "hyper_residual"):
        raise ValueError(f"architecture must be 'plain', 'residual' or 'hyper_residual', got {architecture!r}")
    h = as_float_array(x, "x")
    ws = [as_float_array(w, "weights") for w in weights]
    bs = [np.zeros(w.shape[0]) for w in ws] if biases is None else [as_float_array(b, "biases") for b in biases]
    if len(bs) != len(ws):
        raise ValueError("biases must have one vector per weight matrix")
    history = [h]
    for idx, (w, b) in enumerate(zip(ws, bs)):
        l = idx + 1
        new = np.maximum(h @ w.T + b, 0.0)
        if architecture != "plain":
            new = new + h
        if architecture == "hyper_residual" and l >= 2:
            new = new + sum(history[:-1]) / (l - 1)
        h = new
        history.append(h)
    return h


def rescaling_deviation(architecture: str, x, weights, k: int, l: int, g: float = 10.0, biases=None) -> float:
    """Relative change ``||F' - F|| / ||F||`` of the output when ``W_k -> g W_k``, ``W_l -> W_l / g``
    and the biases of layers ``k .. l - 1`` are multiplied by ``g`` (Sec. 2.1, Fig. 2c of seed 004).

    Zero (to rounding) for the plain ReLU net (positive homogeneity); non-zero with skips.

    Parameters
    ----------
    architecture : {"plain", "residual", "hyper_residual"}
        Eq. 24, 25 or 26 (see :func:`skip_network`).
    x : array_like, shape (P, n)
        Inputs.
    weights : list of (n, n) arrays
        ``W_1 ... W_{L-1}``.
    k, l : int
        0-based indices into ``weights``, ``0 <= k < l < len(weights)``.
    g : float
        Rescaling factor, finite and ``> 0``.
    biases : list of (n,) arrays, optional
        Default zero.

    Returns
    -------
    float
        ``||F' - F||_F / ||F||_F``.

    Raises
    ------
    ValueError
        Bad ``k``, ``l`` or ``g``; non-finite inputs; an identically zero output ``F`` (the
        relative change is undefined) or an output that overflows.
    """
    n = len(weights)
    k = check_int(k, "k", minimum=0, maximum=n - 2)
    l = check_int(l, "l", minimum=k + 1, maximum=n - 1)
    g = float(g)
    if not (math.isfinite(g) and g > 0):
        raise ValueError(f"g must be a finite number > 0, got {g!r}")
    bs = [np.zeros(np.shape(w)[0]) for w in weights] if biases is None else [np.asarray(b, float) for b in biases]
    w2 = [np.array(w, dtype=np.float64) for w in weights]
    b2 = [b.copy() for b in bs]
    w2[k] *= g
    w2[l] /= g
    for j in range(k, l):
        b2[j] *= g
    with np.errstate(over="ignore", invalid="ignore"):
        f0 = skip_network(architecture, x, weights, bs)
        f1 = skip_network(architecture, x, w2, b2)
        norm0 = float(np.linalg.norm(f0))
    if not (np.all(np.isfinite(f0)) and np.all(np.isfinite(f1))):
        raise ValueError("x and weights give an output that overflows double precision (scale them down)")
    if norm0 == 0.0:
        raise ValueError("x and weights give an identically zero output F: the relative change ||F' - F|| / ||F|| is undefined")
    return float(np.linalg.norm(f1 - f0) / norm0)


@dataclass(frozen=True)
class PermutationCounts:
    """``n!`` permutations of undifferentiated units versus ``K! (d!)^K`` class-respecting ones (exact integers)."""

    n: int
    n_classes: int
    undifferentiated: int
    class_respecting: int

    @property
    def log10_ratio(self) -> float:
        return math.log10(self.undifferentiated) - math.log10(self.class_respecting)


def permutation_counts(n: int, n_classes: int) -> PermutationCounts:
    """Permutation counts of the Discussion of seed 004: ``n!`` versus ``K! (d!)^K`` with ``d = n / K``.

    The paper counts permutations that permute whole classes (``K!``) and units within each class
    (``(d!)^K``), which is smaller than ``n!`` for ``1 < K < n``.

    Parameters
    ----------
    n : int
        Units in the layer (>= 1).
    n_classes : int
        ``K``, dividing ``n``.

    Returns
    -------
    PermutationCounts
        Exact integers and ``log10_ratio``.

    Raises
    ------
    ValueError
        ``n < 1``, ``n_classes`` outside ``[1, n]`` or not dividing ``n``.
    """
    n = check_int(n, "n", minimum=1)
    k = check_int(n_classes, "n_classes", minimum=1, maximum=n)
    if n % k:
        raise ValueError(f"n_classes must divide n = {n}, got {k}")
    d = n // k
    return PermutationCounts(n, k, math.factorial(n), math.factorial(k) * math.factorial(d) ** k)
