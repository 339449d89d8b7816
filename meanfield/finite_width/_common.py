"""Argument checks, constants and numerics shared by the finite-width submodules (private).

Helpers here carry no leading underscore so that sibling submodules import them by public names of
this private module (as ``meanfield.init._args`` does). Everything raises ``ValueError`` or
``TypeError`` naming the argument and its allowed range.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import special, stats

from .. import _checks
from .._checks import check_int, check_nonnegative_scalar, check_scalar

#: Largest width ``N`` (and fan-in) accepted: the binomial weights ``C(N, k) 0.5^N`` of Prop. 4
#: (``N + 1`` numbers) are held in memory; 10^7 takes about a second.
MAX_WIDTH = 10**7
LOG2 = math.log(2.0)
#: Binomial terms with log-weight below the largest minus this are dropped (weight < 1e-30 each);
#: the dropped weight is returned to the last cell so that columns still sum to one.
LOG_PRUNE = 69.0
TINY = float(np.finfo(np.float64).tiny)
LOG_TINY = math.log(TINY)
LOG_MAX = math.log(float(np.finfo(np.float64).max))
#: Largest number of float64 entries a function here allocates for one result or work array
#: (2^29 = 4 GiB); larger requests raise ``ValueError`` instead of ``MemoryError``.
MAX_ELEMENTS = 2**29
#: Largest ``n_quantiles`` of the FFT path.
MAX_QUANTILES = 2**24


# --------------------------------------------------------------------------------------------------
# argument checks
# --------------------------------------------------------------------------------------------------


def int_arg(n: object, name: str, minimum: int, maximum: int | None = None) -> int:
    """An integer in range; complex input is a ``TypeError`` (never a dropped imaginary part)."""
    if isinstance(n, (complex, np.complexfloating)):
        raise TypeError(f"{name} must be an integer, got the complex {n!r}")
    return check_int(n, name, minimum, maximum)


def width_arg(width: object, name: str = "width") -> int:
    """``1 <= width <= MAX_WIDTH``."""
    return int_arg(width, name, 1, MAX_WIDTH)


def fan_in_arg(fan_in: object, width: int, name: str = "fan_in") -> int:
    """The fan-in ``1 <= fan_in <= MAX_WIDTH``; ``None`` means ``width`` (square weight matrices)."""
    return width if fan_in is None else int_arg(fan_in, name, 1, MAX_WIDTH)


def nonneg(x: object, name: str) -> float:
    """A finite real scalar ``>= 0``, bools, complex, strings and arrays rejected (``_checks.check_nonnegative_scalar``)."""
    return check_nonnegative_scalar(x, name)


def positive(x: object, name: str) -> float:
    v = check_scalar(x, name)
    if v <= 0:
        raise ValueError(f"{name} must be > 0, got {v!r}")
    return v


def unscaled(sigma_w2: float, fan_in: int, name: str = "sigma_w2") -> float:
    """Burkholz & Dubatovka's per-weight variance ``sigma_w2 / fan_in`` of validated arguments.

    ``ValueError`` when a positive ``sigma_w2`` underflows to 0 (below ``fan_in * 5e-324``).
    """
    v = sigma_w2 / fan_in
    if sigma_w2 > 0 and v == 0.0:
        raise ValueError(
            f"{name} / fan_in underflows float64 ({name}={sigma_w2!r}, fan_in={fan_in}); {name} must be 0 or >= fan_in * 5e-324"
        )
    return v


def real_array(x: object, name: str) -> np.ndarray:
    """A finite float64 array of real numbers; bools, complex numbers, strings and objects raise ``TypeError``."""
    return _checks.real_array(x, name, "a real number or array of real numbers")


def nonneg_array(x: object, name: str) -> np.ndarray:
    arr = real_array(x, name)
    if np.any(arr < 0):
        raise ValueError(f"{name} must be >= 0, got values down to {float(arr.min())!r}")
    return arr


def correlation(rho: object, name: str = "rho") -> float | np.ndarray:
    arr = real_array(rho, name)
    if np.any(np.abs(arr) > 1.0):
        raise ValueError(f"{name} must lie in [-1, 1], got {rho!r}")
    return float(arr) if arr.ndim == 0 else arr


def check_size(n_elements: int, what: str) -> None:
    if n_elements > MAX_ELEMENTS:
        raise ValueError(f"{what} would need {n_elements} float64 numbers (more than 2**29 = 4 GiB); reduce it")


def check_method(method: object) -> str:
    if not isinstance(method, str) or method not in ("auto", "closed", "fft"):
        raise ValueError(f"method must be 'auto', 'closed' or 'fft', got {method!r}")
    return method


def check_grid(grid: object) -> np.ndarray:
    g = real_array(grid, "grid")
    if g.ndim != 1 or g.size < 2:
        raise ValueError(f"grid must be a 1-d array of at least 2 cell edges, got shape {g.shape}")
    if g[0] != 0.0:
        raise ValueError(f"grid must start at 0 (the first cell edge), got {g[0]}")
    if np.any(np.diff(g) <= 0):
        raise ValueError("grid must be strictly increasing")
    return g


def is_equidistant(g: np.ndarray) -> bool:
    steps = np.diff(g)
    return bool(np.allclose(steps, steps[0], rtol=1e-9, atol=0.0))


def check_pair(v11: object, v22: object, v12: object) -> tuple[float, float, np.ndarray, np.ndarray, float]:
    """``v11, v22 > 0`` (scalars), ``v12`` (array), ``rho = v12 / sqrt(v11 v22)`` and ``sqrt(v11 v22)`` without overflow."""
    v11 = positive(v11, "v11")
    v22 = positive(v22, "v22")
    v12 = real_array(v12, "v12")
    if v12.size == 0:
        raise ValueError("v12 must be a number or a non-empty array of covariances")
    scale = math.sqrt(v11) * math.sqrt(v22)
    with np.errstate(over="ignore"):
        rho = v12 / scale
    if np.any(np.abs(rho) > 1 + 1e-12):
        raise ValueError("v12 must satisfy v12^2 <= v11 v22 (a covariance)")
    return v11, v22, v12, np.clip(rho, -1.0, 1.0), scale


def exp_or_raise(log_values: object, name: str, alternative: str) -> float | np.ndarray:
    """``exp`` of a finite log, or ``ValueError`` naming ``alternative`` when it leaves the normal float64 range."""
    lv = np.asarray(log_values, dtype=np.float64)
    if lv.size and (np.max(lv) > LOG_MAX or np.min(lv) < LOG_TINY):
        raise ValueError(
            f"{name} is beyond the float64 range here (log values in [{float(np.min(lv)):.6g}, {float(np.max(lv)):.6g}], "
            f"representable: [{LOG_TINY:.2f}, {LOG_MAX:.2f}]); use {alternative}"
        )
    out = np.exp(lv)
    return float(out) if out.ndim == 0 else out


# --------------------------------------------------------------------------------------------------
# numerics shared by the kernel, the operator and the inner-product law
# --------------------------------------------------------------------------------------------------


def log_binomial_half(n: int) -> tuple[np.ndarray, np.ndarray]:
    """``k = 1..n`` and ``log(C(n, k) 0.5^n)`` (accurate for n up to 10^5 and beyond)."""
    k = np.arange(0, n + 1, dtype=np.float64)
    logw = stats.binom.logpmf(k, n, 0.5)
    # logpmf is accurate to ~1e-10 at n = 1e5; the weights sum to 1 exactly, so renormalise
    logw = logw - special.logsumexp(logw)
    return k[1:], logw[1:]


def binomial_log_weights(n: int) -> tuple[np.ndarray, np.ndarray]:
    """``k = 1..n`` and ``log(C(n, k) 0.5^n)``, pruned to the terms that matter."""
    k, logw = log_binomial_half(n)
    keep = logw > logw.max() - LOG_PRUNE
    return k[keep], logw[keep]


def truncated_power(p: np.ndarray, n: int) -> np.ndarray:
    """First ``len(p)`` entries of the ``n``-fold self-convolution of the non-negative vector ``p``."""
    size = p.size
    nfft = 1 << math.ceil(math.log2(2 * size))

    def mul(a, b):
        out = np.fft.irfft(np.fft.rfft(a, nfft) * np.fft.rfft(b, nfft), nfft)[:size]
        return np.maximum(out, 0.0)

    result = np.zeros(size)
    result[0] = 1.0
    base = p.copy()
    while n:
        if n & 1:
            result = mul(result, base)
        n >>= 1
        if n:
            base = mul(base, base)
    return result


def lattice_law_to_cells(law: np.ndarray, atom: float) -> tuple[np.ndarray, float]:
    """Masses on the states {atom at 0} + cells from a law on the lattice ``j * dz`` (``law[0]`` includes ``atom``).

    Lattice point ``j * dz`` is split half/half between cells ``j`` and ``j + 1`` (the cell edges it
    sits on); lattice point 0 minus the atom (positive but tiny sums) goes to the first cell. Mass
    beyond the grid is added to the last cell (returned as ``tail``); the masses are renormalised to sum 1.
    """
    size = law.size
    law = law.copy()
    law[0] = max(law[0] - atom, 0.0)
    cells = np.zeros(size)
    cells[0] = atom
    cells[1:] += 0.5 * law[: size - 1]
    cells[1:] += 0.5 * law[1:size]
    cells[1] += 0.5 * law[0]
    tail = max(1.0 - cells.sum(), 0.0)
    cells[-1] += tail
    return cells / cells.sum(), tail
