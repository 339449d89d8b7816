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

Limits and failure modes
------------------------
Every function validates its arguments (``ValueError`` naming the argument and the allowed range;
``TypeError`` for complex, boolean-where-numeric or non-numeric input and for flags that are not
``bool``) and returns finite values. Sizes that cannot be computed in bounded time or memory are
refused with the named limit: :data:`MAX_BINARY_PARAMETERS` and :data:`MAX_LANDSCAPE_WORK`
(enumeration), :data:`MAX_DECODE_PARAMETERS`, :data:`MAX_SKIP_SIZE` and :data:`MAX_TAU_SPREAD`
(skip matrices), :data:`MAX_MODE_LAYERS`, :data:`MAX_THREE_LAYER_ENTRIES`,
:data:`MAX_FLOW_DIMENSION` and :data:`MAX_FLOW_EVALUATIONS` (flows), :data:`MAX_FACTORIAL_ARGUMENT`.
Results that would overflow double precision raise ``ValueError`` saying so (energies and norms
are formed without intermediate overflow, so only a result beyond the float64 range does);
:func:`column_covariance_spectrum` has ``log=True`` for spectra that underflow.

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

from ._checks import as_float_array, check_bool, check_int, check_rng, check_scalar

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

#: Largest enumeration work ``P * 2^n`` (inputs times configurations) of :func:`binary_landscape`:
#: 20 times the paper's full run (2^23 configurations on a 10 x 10 grid). A time guard.
MAX_LANDSCAPE_WORK = 2**34

#: Largest number of binary parameters :func:`decode_configuration` decodes (a size guard).
MAX_DECODE_PARAMETERS = 2**24

#: Largest size ``n`` of the skip matrices (:func:`folded_orthogonal`, :func:`controlled_skip_matrix`,
#: :func:`supp4_skip_matrix`): their QR / eigen-decompositions cost O(n^3) (about 10 s at n = 1024
#: on two cores). The paper uses n = 128.
MAX_SKIP_SIZE = 1024

#: Largest ``tau (n - 1)`` of the skip matrices of controlled orthogonality: the column Gram matrix
#: (or, for Supp. Note 4, the covariance ``S``) has condition number ``exp(tau (n - 1))``, which
#: must stay well below ``1 / eps = 4.5e15`` for the stated spectrum to be resolved in double
#: precision (``exp(30) = 1.1e13``); beyond it the returned matrix would not have the properties
#: it is constructed for. ``tau = 0.05`` at ``n = 128`` gives 6.35.
MAX_TAU_SPREAD = 30.0

#: Largest number of mode strengths (layers) of the mode-strength functions (the Hessian is N x N).
MAX_MODE_LAYERS = 4096

#: Largest number of unknowns of an integrated flow (:func:`mode_flow`, :func:`three_layer_flow`):
#: LSODA's stiff steps factorise a dense Jacobian of this size.
MAX_FLOW_DIMENSION = 512

#: Largest number of entries ``n_hidden * n_modes`` of the three-layer functions (the Hessian has
#: ``(2 n_hidden n_modes)^2`` entries).
MAX_THREE_LAYER_ENTRIES = 2048

#: Right-hand-side evaluations after which a flow integration is abandoned: an integration that
#: needs more spans too many characteristic times of the flow (e.g. a time grid of spacing 1e-300,
#: or a target ``s = 1e300``) and would not finish in reasonable time (50 000 evaluations take
#: 1-5 s). The paper's flows need at most 625 (Figs. 5 and 6 at full size, measured).
MAX_FLOW_EVALUATIONS = 50_000

#: Largest ``n`` of :func:`permutation_counts` (``n!`` has 1.5 million bits at ``n = 10^5``).
MAX_FACTORIAL_ARGUMENT = 10**5


def _check_architecture(architecture, allowed) -> str:
    if not isinstance(architecture, str):
        raise TypeError(f"architecture must be a str, one of {list(allowed)}, got {type(architecture).__name__}")
    if architecture not in allowed:
        raise ValueError(f"architecture must be one of {list(allowed)}, got {architecture!r}")
    return architecture


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

    def replace(self, **changes):
        return replace(self, **changes)


def regression_task(grid_size: int = 5, extent: float = 1.0, n_components: int = 8, rng=None) -> RegressionTask:
    """Grid inputs in ``[-extent, extent]^2`` and a random target function (seed 004, Sec. 2.2).

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
        A size outside its range, ``extent <= 0`` or non-finite, a negative ``rng`` seed.
    TypeError
        A complex, boolean or non-numeric ``extent``; an ``rng`` that is not None, an int or a
        Generator.
    """
    grid_size = check_int(grid_size, "grid_size", minimum=2, maximum=1000)
    n_components = check_int(n_components, "n_components", minimum=1, maximum=10_000)
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
        raise ValueError(f"extent = {extent!r} makes the grid or the target overflow; use an extent within [1e-150, 1e150]")
    return RegressionTask(inputs, np.ascontiguousarray(targets), omega, phi, alpha, seed)


# --------------------------------------------------------------------------------------------
# binary toy networks
# --------------------------------------------------------------------------------------------


def n_binary_parameters(n_layers: int = 7, width: int = 2, output_bias_bit: bool = False) -> int:
    """Number of binary parameters of the toy net: ``(n_layers - 2) width^2 + width (+ 1)``.

    ``n_binary_parameters(7, 2) == 22`` (eqs. 1-4 of seed 004); ``23`` with
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
        ``n_layers < 3`` or ``width < 1`` (or not integers).
    TypeError
        ``output_bias_bit`` not a bool.
    """
    n_layers = check_int(n_layers, "n_layers", minimum=3)
    width = check_int(width, "width", minimum=1)
    output_bias_bit = check_bool(output_bias_bit, "output_bias_bit")
    return (n_layers - 2) * width * width + width + int(output_bias_bit)


def _arch_code(architecture) -> int:
    return ARCHITECTURES[_check_architecture(architecture, ARCHITECTURES)]


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
    c = check_int(c, "c", minimum=0)
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
    x = as_float_array(inputs, "inputs")
    if x.ndim != 2 or x.shape[0] < 1 or x.shape[1] < 1:
        raise ValueError(f"inputs must have shape (P, width) with P, width >= 1, got shape {x.shape}")
    width = x.shape[1]
    if isinstance(mats, np.ndarray) and mats.ndim == 3:
        mats = list(mats)
    if not isinstance(mats, (list, tuple)):
        raise TypeError(f"mats must be a list of (width, width) arrays, got {type(mats).__name__}")
    ws = []
    for g, w in enumerate(mats):
        w = as_float_array(w, f"mats[{g}]")
        if w.shape != (width, width):
            raise ValueError(f"mats[{g}] must have shape (width, width) = {(width, width)}, got {w.shape}")
        ws.append(w)
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


def forward_binary(architecture: str, inputs, mats, w_out, output_bias: float = 0.0, biases=None) -> np.ndarray:
    """Outputs of one toy network (eqs. 1-4 of seed 004) on ``inputs``; plain NumPy reference of the kernel.

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
        Unknown architecture; arrays of the wrong shape or with NaN or infinity; outputs that
        overflow double precision (scale the inputs or weights down).
    TypeError
        A complex or non-numeric argument, ``architecture`` not a str, ``mats`` not a list.
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
        overflow double precision.
    TypeError
        Complex or non-numeric arrays, ``output_bias_bit`` not a bool, ``architecture`` not a str.

    Examples
    --------
    >>> task = regression_task(grid_size=5, rng=0)
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
    output_bias_bit = check_bool(output_bias_bit, "output_bias_bit")
    width = x.shape[1]
    n_h = n_layers - 2
    n = n_binary_parameters(n_layers, width, output_bias_bit)
    if n > MAX_BINARY_PARAMETERS:
        raise ValueError(
            f"the network has {n} binary parameters (n_layers = {n_layers}, width = {width}); "
            f"at most {MAX_BINARY_PARAMETERS} (MAX_BINARY_PARAMETERS) are enumerated"
        )
    if x.shape[0] << n > MAX_LANDSCAPE_WORK:
        raise ValueError(
            f"inputs: {x.shape[0]} inputs x 2^{n} configurations exceeds MAX_LANDSCAPE_WORK = 2^34; "
            "use fewer inputs or parameters"
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
    top_bits = check_int(top_bits, "top_bits", minimum=0)
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


# --------------------------------------------------------------------------------------------
# linear three-layer dynamics (Sec. 2.3.1, eqs. 8-18, Supp. Note 2)
# --------------------------------------------------------------------------------------------


class _FlowBudgetExceeded(Exception):
    """Raised inside a right-hand side when :data:`MAX_FLOW_EVALUATIONS` is exhausted."""


def _check_tolerances(rtol, atol):
    rtol = check_scalar(rtol, "rtol")
    if not 0.0 < rtol < 1.0:
        raise ValueError(f"rtol must lie in (0, 1), got {rtol!r}")
    atol = check_scalar(atol, "atol")
    if not atol > 0.0:
        raise ValueError(f"atol must be a finite number > 0, got {atol!r}")
    return rtol, atol


def _check_times(t) -> np.ndarray:
    t = as_float_array(t, "t")
    if t.ndim != 1 or t.size < 2 or np.any(np.diff(t) <= 0):
        raise ValueError("t must be a strictly increasing 1-D array of at least 2 finite times")
    if t.size > 10**6:
        raise ValueError(f"t must hold at most 10^6 output times, got {t.size}")
    with np.errstate(over="ignore"):
        span = t[-1] - t[0]
    if not math.isfinite(span):
        raise ValueError(f"t must span a finite interval, got [{t[0]!r}, {t[-1]!r}]")
    return t


def _integrate(rhs, y0, t, rtol, atol, scales: str) -> np.ndarray:
    """Integrate ``dy/dt = rhs(y)`` with LSODA on the grid ``t``; returns ``y`` of shape (len(t), dim).

    Raises ``ValueError`` (naming ``t`` and the scales) when the integration needs more than
    :data:`MAX_FLOW_EVALUATIONS` right-hand sides, fails, or leaves the float64 range.
    """
    from scipy.integrate import solve_ivp

    count = 0

    def counted(_, y):
        nonlocal count
        count += 1
        if count > MAX_FLOW_EVALUATIONS:
            raise _FlowBudgetExceeded
        with np.errstate(over="ignore", invalid="ignore"):
            return rhs(y)

    try:
        sol = solve_ivp(counted, (t[0], t[-1]), y0, t_eval=t, method="LSODA", rtol=rtol, atol=atol)
    except _FlowBudgetExceeded:
        raise ValueError(
            f"t: integrating from {t[0]!r} to {t[-1]!r} needed more than {MAX_FLOW_EVALUATIONS} "
            f"(MAX_FLOW_EVALUATIONS) right-hand-side evaluations: the span covers too many "
            f"characteristic times of the flow at these scales ({scales}); use a shorter or coarser "
            "time span, or values of moderate size"
        ) from None
    if not sol.success or sol.y.shape != (y0.size, t.size) or not np.all(np.isfinite(sol.y)):
        raise ValueError(
            f"t: the flow could not be integrated from {t[0]!r} to {t[-1]!r} at these scales ({scales}): "
            f"{sol.message if not sol.success else 'the solution left the float64 range'}; use a "
            "shorter time span or values of moderate size"
        )
    return sol.y.T


def _sum_of_squares(r: np.ndarray) -> float:
    """``sum(r^2)`` without intermediate overflow; ``inf`` only when the result itself overflows."""
    m = float(np.max(np.abs(r))) if r.size else 0.0
    if m == 0.0 or not math.isfinite(m):
        return 0.0 if m == 0.0 else math.inf
    with np.errstate(over="ignore"):
        return m * m * float(np.sum((r / m) ** 2))


def _three_layer_args(a, b, s, u, v, names=("a", "b")):
    na, nb = names
    a = as_float_array(a, na)
    b = as_float_array(b, nb)
    s = as_float_array(s, "s")
    if a.ndim != 2 or b.shape != a.shape or a.size == 0:
        raise ValueError(
            f"{na} and {nb} must be non-empty (n_hidden, n_modes) arrays of equal shape, got {a.shape} and {b.shape}"
        )
    if a.size > MAX_THREE_LAYER_ENTRIES:
        raise ValueError(
            f"{na} must have n_hidden * n_modes <= {MAX_THREE_LAYER_ENTRIES} (MAX_THREE_LAYER_ENTRIES), got shape {a.shape}"
        )
    if s.shape != (a.shape[1],):
        raise ValueError(f"s must have shape (n_modes,) = ({a.shape[1]},), got {s.shape}")
    u = np.zeros_like(b) if u is None else as_float_array(u, "u")
    v = np.zeros_like(a) if v is None else as_float_array(v, "v")
    if u.shape != a.shape or v.shape != a.shape:
        raise ValueError(f"u and v must have the shape of a, {a.shape}, got {u.shape} and {v.shape}")
    with np.errstate(over="ignore"):
        A, B = a + v, b + u
    if not (np.all(np.isfinite(A)) and np.all(np.isfinite(B))):
        raise ValueError("a + v or b + u overflows double precision (scale them down)")
    return a, b, s, A, B


def _residual(A, B, s) -> np.ndarray:
    """``R = diag(s) - A^T B``; raises when it overflows."""
    with np.errstate(over="ignore", invalid="ignore"):
        r = np.diag(s) - A.T @ B
    if not np.all(np.isfinite(r)):
        raise ValueError("diag(s) - (a + v)^T (b + u) overflows double precision (scale a, b and s down)")
    return r


_OVERFLOW_HINT = "overflows double precision (scale a, b and s down: the energy scales as the fourth power of a common factor of a and b)"


def three_layer_energy(a, b, s, u=None, v=None) -> float:
    """Energy of a linear three-layer net in the mode basis: eq. 10 (plain) and Supp. eq. 31 (residual).

    .. math:: E = \\tfrac12 \\lVert \\mathrm{diag}(s) - (a + v)^\\top (b + u) \\rVert_F^2

    Parameters
    ----------
    a, b : array_like, shape (n_hidden, n_modes)
        Column ``alpha`` is the paper's ``a^alpha`` (input mode -> hidden) and ``b^alpha``
        (hidden -> output mode); ``n_hidden * n_modes <=`` :data:`MAX_THREE_LAYER_ENTRIES`.
    s : array_like, shape (n_modes,)
        Singular values of the input-output correlation matrix.
    u, v : array_like, shape (n_hidden, n_modes), optional
        Skip vectors (columns ``u^alpha``, ``v^alpha`` of orthogonal matrices, eqs. 19-20); ``None``
        (zero) is the plain network. ``tau = 1``.

    Returns
    -------
    float
        Finite and >= 0 (the sum of squares is formed without intermediate overflow).

    Raises
    ------
    ValueError
        Shapes that do not match, NaN or infinity, too many entries, or an energy that overflows
        double precision.
    TypeError
        Complex or non-numeric arrays.
    """
    _, _, s, A, B = _three_layer_args(a, b, s, u, v)
    e = 0.5 * _sum_of_squares(_residual(A, B, s))
    if not math.isfinite(e):
        raise ValueError(f"the energy {_OVERFLOW_HINT}")
    return e


def _three_layer_field(A, B, s, printed):
    r = _residual(A, B, s)
    with np.errstate(over="ignore", invalid="ignore"):
        da = B @ r.T
        if not printed:
            db = A @ r
        else:
            m = A.T @ B
            db = np.empty_like(B)
            db[:, 0] = r[0, 0] * A[:, 0] - m[0, 1] * A[:, 1]
            db[:, 1] = r[1, 1] * A[:, 1] - m[1, 0] * A[:, 0]
    return da, db


def three_layer_gradient_field(a, b, s, u=None, v=None, printed: bool = False):
    """Right-hand sides ``(da/dt, db/dt)`` of eqs. 8-9 / 11-18 of seed 004 (gradient flow of the energy).

    ``da/dt = (b + u) R^T`` and ``db/dt = (a + v) R`` with ``R = diag(s) - (a + v)^T (b + u)``.
    The paper's printed eqs. 13-14 and 17-18 use ``(a^1 . b^2) a^2`` where the gradient of eq. 10
    (and the paper's own eq. 9) gives ``(a^2 . b^1) a^2``; ``printed=True`` (two modes only)
    integrates the printed form instead, which is not a gradient flow.

    Parameters
    ----------
    a, b, s, u, v
        As in :func:`three_layer_energy`.
    printed : bool
        Use the printed eqs. 13-14 / 17-18 (requires ``n_modes = 2``).

    Returns
    -------
    (da, db) : tuple of ndarray, shape (n_hidden, n_modes)
        Finite.

    Raises
    ------
    ValueError
        As :func:`three_layer_energy`; ``printed=True`` with ``n_modes != 2``; a field that
        overflows double precision.
    TypeError
        ``printed`` not a bool; complex or non-numeric arrays.
    """
    printed = check_bool(printed, "printed")
    a, _, s, A, B = _three_layer_args(a, b, s, u, v)
    if printed and a.shape[1] != 2:
        raise ValueError("printed=True implements eqs. 13-14 / 17-18, which have n_modes = 2")
    da, db = _three_layer_field(A, B, s, printed)
    if not (np.all(np.isfinite(da)) and np.all(np.isfinite(db))):
        raise ValueError(f"the gradient field {_OVERFLOW_HINT}")
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
    """Integrate eqs. 11-14 (plain, ``u = v = None``) or 15-18 (residual) of seed 004 with LSODA.

    Parameters
    ----------
    a0, b0 : array_like, shape (n_hidden, n_modes)
        Initial values; ``2 n_hidden n_modes <=`` :data:`MAX_FLOW_DIMENSION`.
    s : array_like, shape (n_modes,)
    t : array_like
        Strictly increasing, finite output times (``t[0]`` is the initial time; at most 10^6).
        For gradient descent with learning rate ``eta``, step ``k`` corresponds to ``t = k eta``.
    u, v : array_like, optional
        Skip vectors (residual network).
    printed : bool
        Use the paper's printed eqs. 13-14/17-18 (see :func:`three_layer_gradient_field`).
    rtol : float
        Relative tolerance of the integrator, in (0, 1).
    atol : float
        Absolute tolerance, finite and > 0.

    Returns
    -------
    ThreeLayerTrajectory
        Finite ``a``, ``b`` of shape (len(t), n_hidden, n_modes) and the energy at every time.

    Raises
    ------
    ValueError
        Bad shapes or values (as :func:`three_layer_energy`), a bad ``t``, ``rtol`` or ``atol``,
        or an integration that cannot be carried out in bounded time and range: more than
        :data:`MAX_FLOW_EVALUATIONS` right-hand sides (e.g. a time grid of spacing 1e-300 or
        ``s = 1e300``), solver failure, or a solution that leaves the float64 range.
    TypeError
        ``printed`` not a bool; complex or non-numeric arguments.
    """
    printed = check_bool(printed, "printed")
    rtol, atol = _check_tolerances(rtol, atol)
    a0, b0, s, _, _ = _three_layer_args(a0, b0, s, u, v, names=("a0", "b0"))
    if 2 * a0.size > MAX_FLOW_DIMENSION:
        raise ValueError(f"a0 must have 2 n_hidden n_modes <= {MAX_FLOW_DIMENSION} (MAX_FLOW_DIMENSION), got shape {a0.shape}")
    if printed and a0.shape[1] != 2:
        raise ValueError("printed=True implements eqs. 13-14 / 17-18, which have n_modes = 2")
    t = _check_times(t)
    three_layer_energy(a0, b0, s, u, v)  # the initial energy must be representable
    u = np.zeros_like(b0) if u is None else as_float_array(u, "u")
    v = np.zeros_like(a0) if v is None else as_float_array(v, "v")
    shape = a0.shape
    size = a0.size

    def rhs(y):
        A = y[:size].reshape(shape) + v
        B = y[size:].reshape(shape) + u
        r = np.diag(s) - A.T @ B
        da = B @ r.T
        if not printed:
            db = A @ r
        else:
            m = A.T @ B
            db = np.empty_like(B)
            db[:, 0] = r[0, 0] * A[:, 0] - m[0, 1] * A[:, 1]
            db[:, 1] = r[1, 1] * A[:, 1] - m[1, 0] * A[:, 0]
        return np.concatenate([da.ravel(), db.ravel()])

    scales = f"max |s| = {float(np.max(np.abs(s))):.3g}, max |a0|, |b0| = {float(max(np.max(np.abs(a0)), np.max(np.abs(b0)))):.3g}"
    y = _integrate(rhs, np.concatenate([a0.ravel(), b0.ravel()]), t, rtol, atol, scales)
    a = y[:, :size].reshape(-1, *shape)
    b = y[:, size:].reshape(-1, *shape)
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
    """Analytic Hessian of the three-layer energy (Supp. Note 2 of seed 004).

    With ``A = a + v``, ``B = b + u``, ``R = diag(s) - A^T B``:

    - ``d2E / da_i^alpha da_k^gamma = delta_{alpha gamma} sum_beta B_i^beta B_k^beta`` (eqs. 29-30, 32-33),
    - ``d2E / db_i^beta db_k^delta = delta_{beta delta} sum_alpha A_i^alpha A_k^alpha``,
    - ``d2E / da_i^alpha db_k^delta = -delta_{ik} R_{alpha delta} + B_i^delta A_k^alpha``.

    Parameters
    ----------
    a, b, s, u, v
        As in :func:`three_layer_energy`.

    Returns
    -------
    ThreeLayerHessian
        Finite blocks.

    Raises
    ------
    ValueError
        As :func:`three_layer_energy`; a Hessian that overflows double precision.
    TypeError
        Complex or non-numeric arrays.

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
    a, _, s, A, B = _three_layer_args(a, b, s, u, v)
    n, m = a.shape
    r = _residual(A, B, s)
    with np.errstate(over="ignore", invalid="ignore"):
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
    if not np.all(np.isfinite(full)):
        raise ValueError(f"the Hessian {_OVERFLOW_HINT}")
    return ThreeLayerHessian(full, aa, bb)


# --------------------------------------------------------------------------------------------
# decoupled mode strengths (Sec. 2.3.2, eqs. 21-23, Supp. Note 3)
# --------------------------------------------------------------------------------------------

_MODE_ARCHITECTURES = ("plain", "residual", "hyper_residual")


def mode_offsets(architecture: str, n_weights: int) -> np.ndarray:
    """Constants added to the mode strengths: 0 (plain, eq. 21), 1 (residual), ``l`` (hyper-residual).

    The paper labels eq. 22 ``E_hyperres`` and eq. 23 ``E_res``; the text (and eqs. 6-7) make
    ``+1`` the residual and ``+l`` the hyper-residual energy, which is what this function returns.

    Parameters
    ----------
    architecture : {"plain", "residual", "hyper_residual"}
    n_weights : int
        Number of weight layers ``N_l - 1``, in [1, :data:`MAX_MODE_LAYERS`].

    Returns
    -------
    ndarray, shape (n_weights,)

    Raises
    ------
    ValueError
        Unknown architecture or ``n_weights`` out of range.
    TypeError
        ``architecture`` not a str.
    """
    _check_architecture(architecture, _MODE_ARCHITECTURES)
    n_weights = check_int(n_weights, "n_weights", minimum=1, maximum=MAX_MODE_LAYERS)
    if architecture == "plain":
        return np.zeros(n_weights)
    if architecture == "residual":
        return np.ones(n_weights)
    return np.arange(1, n_weights + 1, dtype=np.float64)


def _mode_args(a, s, architecture):
    _check_architecture(architecture, _MODE_ARCHITECTURES)
    a = as_float_array(a, "a")
    if a.ndim != 1 or not 1 <= a.size <= MAX_MODE_LAYERS:
        raise ValueError(
            f"a must be a 1-D array of 1 to {MAX_MODE_LAYERS} (MAX_MODE_LAYERS) mode strengths "
            f"a_1..a_{{N_l-1}}, got shape {a.shape}"
        )
    s = check_scalar(s, "s")
    with np.errstate(over="ignore"):
        x = a + mode_offsets(architecture, a.size)
        finite = np.all(np.isfinite(x)) and np.isfinite(np.prod(np.abs(x)))
    if not finite:
        raise ValueError(
            f"prod_l |a_l + c_l| overflows double precision for these {a.size} mode strengths; "
            "use fewer layers or smaller strengths"
        )
    return a, s, x


def _mode_overflow(what):
    return ValueError(
        f"{what} overflows double precision for these mode strengths and s (|s - prod_l (a_l + c_l)| "
        "too large); use a smaller s or smaller strengths"
    )


def mode_energy(a, s, architecture: str = "plain") -> float:
    """``E = (s - prod_l (a_l + c_l))^2 / 2`` (eqs. 21-23 of seed 004 with ``tau = 1``; ``c_l`` from :func:`mode_offsets`).

    Parameters
    ----------
    a : array_like, shape (N_l - 1,)
        Mode strengths ``a_l`` of one mode (1 to :data:`MAX_MODE_LAYERS` of them).
    s : float
        Its target singular value (a finite real number).
    architecture : {"plain", "residual", "hyper_residual"}

    Returns
    -------
    float
        Finite and >= 0.

    Raises
    ------
    ValueError
        Bad shapes, non-finite values, unknown architecture, or a product or energy that
        overflows double precision (e.g. ``s = 1e300``: ``E = 5e599``).
    TypeError
        Complex or non-numeric ``a`` or ``s``; ``architecture`` not a str.
    """
    _, s, x = _mode_args(a, s, architecture)
    with np.errstate(over="ignore"):
        d = np.float64(s) - np.prod(x)
        e = 0.5 * d * d
    if not np.isfinite(e):
        raise _mode_overflow("the energy")
    return float(e)


def _prod_except(x):
    """``prod_{l != i} x_l`` for every ``i`` without dividing (exact at zeros)."""
    ones = np.ones(1)
    left = np.concatenate([ones, np.cumprod(x[:-1])])
    right = np.concatenate([np.cumprod(x[::-1][:-1])[::-1], ones])
    return left * right


def mode_gradient(a, s, architecture: str = "plain") -> np.ndarray:
    """``dE/da_i = -(s - u) prod_{l != i}(a_l + c_l)`` (Supp. eq. 35 of seed 004).

    Parameters and errors as :func:`mode_energy`; returns a finite array of shape (N_l - 1,).
    """
    _, s, x = _mode_args(a, s, architecture)
    with np.errstate(over="ignore", invalid="ignore"):
        g = -(np.float64(s) - np.prod(x)) * _prod_except(x)
    if not np.all(np.isfinite(g)):
        raise _mode_overflow("the gradient")
    return g


def mode_hessian(a, s, architecture: str = "plain") -> np.ndarray:
    """Hessian of eqs. 21-23 (Supp. eqs. 36-37 of seed 004).

    ``H_ii = (prod_{l != i} x_l)^2`` and ``H_ik = (2 u - s) prod_{l != i,k} x_l`` with
    ``x_l = a_l + c_l`` and ``u = prod_l x_l``; equivalently ``H = g g^T - (s - u) K`` with
    ``g_i = prod_{l != i} x_l`` and ``K_ik = prod_{l != i,k} x_l`` (``K_ii = 0``).

    Parameters and errors as :func:`mode_energy`; returns a finite symmetric array of shape
    (N_l - 1, N_l - 1), computed in O(N^2) without division (exact at zeros).

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
    with np.errstate(over="ignore", invalid="ignore"):
        u = np.prod(x)
        g = _prod_except(x)
        # row i of K: prod_except of x with x_i replaced by 1 (prefix times suffix products)
        xs = np.tile(x, (n, 1))
        np.fill_diagonal(xs, 1.0)
        ones = np.ones((n, 1))
        left = np.concatenate([ones, np.cumprod(xs[:, :-1], axis=1)], axis=1)
        right = np.concatenate([np.cumprod(xs[:, ::-1][:, :-1], axis=1)[:, ::-1], ones], axis=1)
        k = left * right
        np.fill_diagonal(k, 0.0)
        k = 0.5 * (k + k.T)  # the two rounding orders of K_ik and K_ki agree to a few ulps
        h = np.outer(g, g) - (np.float64(s) - u) * k
    if not np.all(np.isfinite(h)):
        raise _mode_overflow("the Hessian")
    return h


def mode_saddle(architecture: str, n_weights: int = 2) -> np.ndarray:
    """The critical point where every factor ``a_l + c_l`` vanishes: (0, 0), (-1, -1), (-1, -2) for two weight layers (Fig. 6a).

    Parameters and errors as :func:`mode_offsets`.
    """
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
        Initial mode strengths (1 to :data:`MAX_FLOW_DIMENSION` of them).
    s : float
        Target singular value.
    t : array_like
        Strictly increasing, finite output times (``t = iteration x learning rate``; at most 10^6).
    architecture : {"plain", "residual", "hyper_residual"}
    rtol : float
        Relative tolerance of the integrator, in (0, 1).
    atol : float
        Absolute tolerance, finite and > 0.

    Returns
    -------
    ModeTrajectory
        Finite arrays.

    Raises
    ------
    ValueError
        Bad arguments (as :func:`mode_energy`; ``t``, ``rtol``, ``atol``), an initial energy that
        overflows, or an integration that cannot be carried out in bounded time and range: more
        than :data:`MAX_FLOW_EVALUATIONS` right-hand sides (e.g. ``s = 1e300`` or a time grid of
        spacing 1e-300), solver failure, or a solution that leaves the float64 range.
    TypeError
        Complex or non-numeric arguments; ``architecture`` not a str.
    """
    rtol, atol = _check_tolerances(rtol, atol)
    a0, s, _ = _mode_args(a0, s, architecture)
    if a0.size > MAX_FLOW_DIMENSION:
        raise ValueError(f"a0 must hold at most {MAX_FLOW_DIMENSION} (MAX_FLOW_DIMENSION) mode strengths, got {a0.size}")
    t = _check_times(t)
    mode_energy(a0, s, architecture)  # the initial energy must be representable
    c = mode_offsets(architecture, a0.size)

    def rhs(y):
        x = y + c
        return (s - np.prod(x)) * _prod_except(x)

    scales = f"s = {s:.3g}, max |a0| = {float(np.max(np.abs(a0))):.3g}"
    a = _integrate(rhs, a0, t, rtol, atol, scales)
    with np.errstate(over="ignore", invalid="ignore"):
        u = np.prod(a, axis=1)
        product = np.prod(a + c, axis=1)
    if not (np.all(np.isfinite(u)) and np.all(np.isfinite(product))):
        raise ValueError(f"t: the products of the mode strengths overflow double precision along the flow ({scales})")
    return ModeTrajectory(t, a, u, product, architecture)


# --------------------------------------------------------------------------------------------
# skip matrices of controlled orthogonality (Sec. 2.4.2, Supp. Note 4)
# --------------------------------------------------------------------------------------------


def _haar(n, rng):
    from .init import haar_orthogonal

    return haar_orthogonal(n, n, rng=rng)


def folded_orthogonal(n: int, n_orthonormal: int, rng=None) -> np.ndarray:
    """A Haar orthogonal matrix folded until ``n_orthonormal`` distinct orthonormal columns remain (Fig. 9 of seed 004).

    Folding copies the first half of the columns onto the second half; after ``f`` folds column
    ``j`` equals column ``j mod (n / 2^f)`` of the orthogonal matrix.

    Parameters
    ----------
    n : int
        Size, in [1, :data:`MAX_SKIP_SIZE`].
    n_orthonormal : int
        ``n / 2^f`` for an integer ``f >= 0`` (``n`` itself: no folding; 1: every column equal).
    rng : None, int or numpy.random.Generator
        Random source (``meanfield._checks.check_rng``; an int ``k`` gives the matrix drawn from
        ``numpy.random.default_rng(k)``).

    Returns
    -------
    ndarray, shape (n, n)
        Rank ``n_orthonormal``.

    Raises
    ------
    ValueError
        ``n`` out of range or ``n_orthonormal`` not of the form ``n / 2^f``.
    TypeError
        An ``rng`` that is not None, an int or a Generator.
    """
    n = check_int(n, "n", minimum=1, maximum=MAX_SKIP_SIZE)
    k = check_int(n_orthonormal, "n_orthonormal", minimum=1, maximum=n)
    f = n // k
    if n % k or f & (f - 1):
        raise ValueError(f"n_orthonormal must be n / 2^f for an integer f >= 0 (n = {n}), got {k}")
    q = _haar(n, check_rng(rng))
    return np.ascontiguousarray(q[:, np.arange(n) % k])


def _check_n_tau(n, tau, limit=True):
    n = check_int(n, "n", minimum=1, maximum=MAX_SKIP_SIZE if limit else None)
    tau = check_scalar(tau, "tau")
    if tau < 0:
        raise ValueError(f"tau must be >= 0 (0: orthogonal), got {tau!r}")
    if limit and tau * (n - 1) > MAX_TAU_SPREAD:
        raise ValueError(
            f"tau (n - 1) must be <= {MAX_TAU_SPREAD} (MAX_TAU_SPREAD), got tau = {tau!r} with n = {n}: the "
            f"spectrum exp(-tau (i - 1)) spans a condition number exp(tau (n - 1)) that double precision "
            "cannot resolve in a computed matrix (column_covariance_spectrum(n, tau, log=True) gives the "
            "target spectrum itself at any tau)"
        )
    return n, tau


#: ``-log`` of the smallest positive normal double: ``exp(-x)`` underflows for larger ``x``.
_LOG_TINY = -math.log(np.finfo(np.float64).tiny)


def column_covariance_spectrum(n: int, tau: float, log: bool = False) -> np.ndarray:
    """Target spectrum ``lambda_i = exp(-tau (i - 1))``, ``i = 1..n`` (Sec. 2.4.2, Fig. 10a of seed 004).

    Parameters
    ----------
    n : int
        Number of eigenvalues, in [1, 10^7].
    tau : float
        Non-orthogonality, finite and >= 0.
    log : bool
        Return ``log lambda_i = -tau (i - 1)`` instead (representable at any ``tau``).

    Returns
    -------
    ndarray, shape (n,)
        Decreasing from 1 (or from 0 on the log scale).

    Raises
    ------
    ValueError
        ``n`` out of range, ``tau`` negative or non-finite, or (with ``log=False``) eigenvalues
        that underflow double precision (``tau (n - 1) > 708.4``): use ``log=True``.
    TypeError
        ``log`` not a bool; complex or non-numeric ``tau``.
    """
    log = check_bool(log, "log")
    n, tau = _check_n_tau(n, tau, limit=False)
    if n > 10**7:
        raise ValueError(f"n must be <= 10^7, got {n}")
    exponent = -tau * np.arange(n)
    if log:
        return exponent
    if tau * (n - 1) > _LOG_TINY:
        raise ValueError(
            f"tau (n - 1) = {tau * (n - 1):.6g} > {_LOG_TINY:.1f}: the smallest eigenvalues underflow "
            "double precision; use log=True for log lambda_i = -tau (i - 1)"
        )
    return np.exp(exponent)


def controlled_skip_matrix(n: int, tau: float, rng=None) -> np.ndarray:
    """A skip matrix whose eigenvalues are those of a Haar rotation and whose column Gram matrix
    ``Sigma^T Sigma`` has eigenvalues proportional to ``exp(-tau (i - 1))`` (our construction for
    Sec. 2.4.2 / Fig. 10 of seed 004).

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
        Size, in [1, :data:`MAX_SKIP_SIZE`].
    tau : float
        Non-orthogonality, >= 0, with ``tau (n - 1) <=`` :data:`MAX_TAU_SPREAD` (the Gram
        matrix's condition number ``exp(tau (n - 1))`` must be resolvable in double precision).
    rng : None, int or numpy.random.Generator
        Random source (``meanfield._checks.check_rng``). Draw order: ``O`` (Haar), the block
        permutation, ``V`` (Haar).

    Returns
    -------
    ndarray, shape (n, n)
        Finite.

    Raises
    ------
    ValueError
        ``n`` out of range, ``tau < 0`` or non-finite, or ``tau (n - 1) > MAX_TAU_SPREAD``.
    TypeError
        Complex or non-numeric ``tau``; an ``rng`` of the wrong type.
    """
    n, tau = _check_n_tau(n, tau)
    rng = check_rng(rng)
    o = _haar(n, rng)
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
    v = _haar(n, rng)
    out = v @ blocks @ v.T
    if not np.all(np.isfinite(out)):  # cannot happen within MAX_TAU_SPREAD; never return inf silently
        raise ValueError(f"tau = {tau!r} gives a matrix that overflows double precision; use a smaller tau")
    return out


def supp4_skip_matrix(n: int, tau: float, rng=None) -> np.ndarray:
    """The printed recipe of Supp. Note 4 of seed 004: ``Sigma = T O T^{-1}``, ``R = T T^T`` the correlation of ``S = Q Lambda Q^T``.

    ``Sigma`` has the eigenvalues of the Haar orthogonal ``O`` (on the unit circle); its
    eigenvectors ``T u_k`` are correlated through ``R``. Kept for comparison with
    :func:`controlled_skip_matrix`, whose column Gram matrix has the stated spectrum exactly.

    Parameters
    ----------
    n : int
        Size, in [1, :data:`MAX_SKIP_SIZE`].
    tau : float
        >= 0 with ``tau (n - 1) <=`` :data:`MAX_TAU_SPREAD` (``S`` has condition number
        ``exp(tau (n - 1))`` and must be numerically positive definite for its Cholesky factor).
    rng : None, int or numpy.random.Generator
        Random source (``meanfield._checks.check_rng``). Draw order: ``Q``, then ``O``.

    Returns
    -------
    ndarray, shape (n, n)
        Finite.

    Raises
    ------
    ValueError
        ``n`` out of range, ``tau < 0`` or non-finite, ``tau (n - 1) > MAX_TAU_SPREAD``, or a
        correlation matrix that is numerically singular.
    TypeError
        Complex or non-numeric ``tau``; an ``rng`` of the wrong type.
    """
    n, tau = _check_n_tau(n, tau)
    rng = check_rng(rng)
    q = _haar(n, rng)
    s = (q * np.exp(-tau * np.arange(n))) @ q.T
    d = 1.0 / np.sqrt(np.diag(s))
    try:
        t = np.linalg.cholesky(s * d[:, None] * d[None, :])
    except np.linalg.LinAlgError:
        raise ValueError(
            f"tau = {tau!r} makes the correlation matrix R numerically singular (condition number "
            f"exp(tau (n - 1)) = {math.exp(tau * (n - 1)):.3g}); use a smaller tau"
        ) from None
    o = _haar(n, rng)
    out = t @ o @ np.linalg.inv(t)
    if not np.all(np.isfinite(out)):
        raise ValueError(f"tau = {tau!r} gives a matrix that overflows double precision; use a smaller tau")
    return out


# --------------------------------------------------------------------------------------------
# rescaling symmetry and permutation counts (Sec. 2.1, Discussion)
# --------------------------------------------------------------------------------------------

_SKIP_ARCHITECTURES = ("plain", "residual", "hyper_residual")


def _check_skip_net(x, weights, biases):
    h = as_float_array(x, "x")
    if h.ndim != 2 or h.shape[0] < 1 or h.shape[1] < 1:
        raise ValueError(f"x must have shape (P, n) with P, n >= 1, got shape {h.shape}")
    n = h.shape[1]
    if isinstance(weights, np.ndarray) and weights.ndim == 3:
        weights = list(weights)
    if not isinstance(weights, (list, tuple)) or len(weights) < 1:
        raise TypeError(f"weights must be a non-empty list of (n, n) arrays, got {type(weights).__name__}")
    ws = []
    for i, w in enumerate(weights):
        w = as_float_array(w, f"weights[{i}]")
        if w.shape != (n, n):
            raise ValueError(f"weights[{i}] must have shape (n, n) = {(n, n)} to match x, got {w.shape}")
        ws.append(w)
    if biases is None:
        bs = [np.zeros(n) for _ in ws]
    else:
        if isinstance(biases, np.ndarray) and biases.ndim == 2:
            biases = list(biases)
        if not isinstance(biases, (list, tuple)):
            raise TypeError(f"biases must be a list of (n,) arrays (one per weight matrix), got {type(biases).__name__}")
        if len(biases) != len(ws):
            raise ValueError(f"biases must have one vector per weight matrix ({len(ws)}), got {len(biases)}")
        bs = []
        for i, b in enumerate(biases):
            b = as_float_array(b, f"biases[{i}]")
            if b.shape != (n,):
                raise ValueError(f"biases[{i}] must have shape (n,) = ({n},), got {b.shape}")
            bs.append(b)
    return h, ws, bs


def _skip_forward(architecture, h, ws, bs):
    history = [h]
    with np.errstate(over="ignore", invalid="ignore"):
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


def skip_network(architecture: str, x, weights, biases=None) -> np.ndarray:
    """Real-valued ReLU net with identity skips: eq. 24 (plain), 25 (residual, ``Q_l = I``), 26 (hyper-residual) of seed 004.

    Hyper-residual (eq. 26): ``x_{l+1} = f(W_l x_l + b) + x_l + [x_{l-1} + ... + x_1] / (l - 1)``.

    Parameters
    ----------
    architecture : {"plain", "residual", "hyper_residual"}
    x : array_like, shape (P, n)
        Inputs, finite, ``P, n >= 1``.
    weights : list of (n, n) arrays
        ``W_1 ... W_{L-1}`` (at least one), finite.
    biases : list of (n,) arrays, optional
        One per weight matrix (default zero), finite.

    Returns
    -------
    ndarray, shape (P, n)
        The last layer; finite.

    Raises
    ------
    ValueError
        Unknown architecture, arrays of the wrong shape or with NaN or infinity, a bias list of
        the wrong length, or activations that overflow double precision (scale x or the weights down).
    TypeError
        ``architecture`` not a str; ``weights`` or ``biases`` not lists; complex or non-numeric entries.
    """
    _check_architecture(architecture, _SKIP_ARCHITECTURES)
    h, ws, bs = _check_skip_net(x, weights, biases)
    out = _skip_forward(architecture, h, ws, bs)
    if not np.all(np.isfinite(out)):
        raise ValueError("x, weights and biases give activations that overflow double precision (scale them down)")
    return out


def _scaled_norm(v: np.ndarray):
    """``(m, r)`` with ``||v||_F = m * r``, ``m = max |v|``, ``r`` in [1, sqrt(size)]: no overflow."""
    m = float(np.max(np.abs(v)))
    if m == 0.0:
        return 0.0, 0.0
    return m, float(np.sqrt(np.sum((v / m) ** 2)))


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
        ``W_1 ... W_{L-1}`` (at least two).
    k, l : int
        0-based indices into ``weights``, ``0 <= k < l < len(weights)``.
    g : float
        Rescaling factor, finite and ``> 0``.
    biases : list of (n,) arrays, optional
        Default zero.

    Returns
    -------
    float
        ``||F' - F||_F / ||F||_F``, finite (norms are formed without intermediate overflow).

    Raises
    ------
    ValueError
        Bad ``k``, ``l`` or ``g``; arrays of the wrong shape or non-finite; an identically zero
        output ``F`` (the relative change is undefined); an output ``F`` or ``F'`` that overflows
        (scale ``x`` or the weights down, or use a ``g`` nearer 1), or a ratio beyond the float64
        range.
    TypeError
        ``architecture`` not a str; complex or non-numeric arguments.
    """
    _check_architecture(architecture, _SKIP_ARCHITECTURES)
    h, ws, bs = _check_skip_net(x, weights, biases)
    n = len(ws)
    if n < 2:
        raise ValueError(f"weights must hold at least 2 matrices to rescale a pair, got {n}")
    k = check_int(k, "k", minimum=0, maximum=n - 2)
    l = check_int(l, "l", minimum=k + 1, maximum=n - 1)
    g = check_scalar(g, "g")
    if not g > 0:
        raise ValueError(f"g must be a finite number > 0, got {g!r}")
    w2 = [w.copy() for w in ws]
    b2 = [b.copy() for b in bs]
    with np.errstate(over="ignore", under="ignore"):
        w2[k] *= g
        w2[l] /= g
        for j in range(k, l):
            b2[j] *= g
    f0 = _skip_forward(architecture, h, ws, bs)
    f1 = _skip_forward(architecture, h, w2, b2)
    if not (np.all(np.isfinite(f0)) and np.all(np.isfinite(f1)) and all(np.all(np.isfinite(w)) for w in w2 + b2)):
        raise ValueError(
            f"x, weights and g = {g!r} give an output that overflows double precision (scale x or the "
            "weights down, or use a g nearer 1)"
        )
    m0, r0 = _scaled_norm(f0)
    if m0 == 0.0:
        raise ValueError("x and weights give an identically zero output F: the relative change ||F' - F|| / ||F|| is undefined")
    # F' - F without overflow: both are finite, so their halves' difference is finite
    md, rd = _scaled_norm(0.5 * f1 - 0.5 * f0)
    with np.errstate(over="ignore", under="ignore"):
        ratio = 2.0 * (md / m0) * (rd / r0)
    if not math.isfinite(ratio):
        raise ValueError(f"g = {g!r}: the relative change of the output exceeds the float64 range; use a g nearer 1")
    return float(ratio)


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
        Units in the layer, in [1, :data:`MAX_FACTORIAL_ARGUMENT`] (``n!`` is computed exactly).
    n_classes : int
        ``K``, dividing ``n``.

    Returns
    -------
    PermutationCounts
        Exact integers and ``log10_ratio``.

    Raises
    ------
    ValueError
        ``n`` outside [1, MAX_FACTORIAL_ARGUMENT], ``n_classes`` outside ``[1, n]`` or not dividing ``n``.
    """
    n = check_int(n, "n", minimum=1, maximum=MAX_FACTORIAL_ARGUMENT)
    k = check_int(n_classes, "n_classes", minimum=1, maximum=n)
    if n % k:
        raise ValueError(f"n_classes must divide n = {n}, got {k}")
    d = n // k
    return PermutationCounts(n, k, math.factorial(n), math.factorial(k) * math.factorial(d) ** k)
