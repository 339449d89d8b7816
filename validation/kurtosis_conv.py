r"""Grzejdziak's kurtosis recursion and convolutions: which moment does not close.

Prop. 4.3's recursion for dense layers tracks :math:`(\mathbb{E}y^4, \mathbb{E}y_i^2y_j^2)` and closes
because of Lemma 4.2: flipping the sign of one unit's incoming weights is a symmetry, so
:math:`\mathbb{E}\,\phi_a(y_i)^2\phi_a(y_j)^2 = (\tfrac{1 + a^2}{2})^2\,\mathbb{E}\,y_i^2y_j^2` for
:math:`i \ne j`. In a periodic CNN the same holds for **different channels** (flipping channel i's
filter flips :math:`y_i` at every position, the other channels unchanged), but not for one channel at
two positions: :math:`y_i(\alpha), y_i(\alpha')` share the filter, only their *joint* sign flip is a
symmetry, and

.. math:: \mathbb{E}\,\phi_a(u)^2\phi_a(v)^2 = \tfrac{1 + a^4}{2}\,\mathbb{E}[u^2v^2 1\{uv > 0\}]
    + a^2\,\mathbb{E}[u^2v^2 1\{uv < 0\}]

needs the sign-split moment :math:`\mathbb{E}[u|u|\,v|v|]`. Given the previous layer,
:math:`(u, v)` is (for Gaussian kernels) a centred bivariate normal whose covariance is the empirical
covariance of the previous layer's features, and :math:`\mathbb{E}[u|u|v|v|]` is a non-polynomial
(arcsine) function of it, so the next layer's moments depend on the whole law of that empirical
covariance, not on finitely many moments: the recursion does not close at finite width. At leading
order in 1/width it becomes a four-point-vertex recursion over position quadruples (Roberts, Yaida,
Hanin 2022, ch. 4, with the CNN's spatial averaging), which is not implemented.

Rows (ReLU, 1-D periodic CNN, 4 channels, kernel size 3, 16 positions, He Gaussian kernels, Gaussian
inputs, layer ``DEPTH``; ratios of means over networks with delta-method standard errors):

1. different channels, same position: :math:`\mathbb{E}\,\mathrm{relu}(y_i)^2\mathrm{relu}(y_j)^2 /
   \mathbb{E}\,y_i^2y_j^2 = 1/4` (Lemma 4.2 holds: a check, expected to pass);
2. same channel, adjacent positions: the same ratio differs from the dense closure's 1/4 (the moment
   that does not close): a check with ``side="differs"``, passing when the ratio lies more than
   ``z * stderr`` away from 1/4 (measured 0.482 +- 0.016 at the default size);
3. the kurtosis at layer ``DEPTH`` differs from Prop. 4.3 for a dense network of the same fan-in 12
   (the dense recursion as a prediction for the CNN; measured 19.4 +- 0.5 against 12.08): a check
   with ``side="differs"``. Together, rows 2-3 demonstrate that the dense recursion does not close
   for CNNs; a failure of either would mean the simulation stopped showing it.
"""

from __future__ import annotations

import math

import numpy as np

from meanfield import kurtosis
from meanfield.backend import Backend, get_backend, matrix_transpose, spawn_sequences, to_numpy
from meanfield.checks import check_rng, renamed_kwargs

from .backend import substream
from .report import Comparison
from .runner import main_for

__all__ = ["BACKENDS", "CHANNELS", "DEPTH", "KERNEL_SIZE", "POSITIONS", "conv_pair_moments", "run"]

CHANNELS, KERNEL_SIZE, POSITIONS, DEPTH = 4, 3, 16, 4
#: Backends the comparison honours (:func:`meanfield.validation.runner.module_backend`).
BACKENDS = ("numpy", "cupy", "torch", "array_api_strict")


def conv_pair_moments(
    n_networks: int, rng=None, chunk: int = 2000, *, backend: str | Backend = "numpy"
) -> dict[str, np.ndarray]:
    """Per-network moments of layer ``DEPTH`` of random periodic ReLU CNNs (see the module notes).

    Parameters
    ----------
    n_networks : int
        Networks (>= 2, at most 10**6).
    rng : None, int, SeedSequence or numpy.random.Generator
        Chunk ``i`` of networks draws from the ``i``-th child spawned off it.
    chunk : int
        Networks simulated at once (1 to 10**5).
    backend : str or Backend
        Array backend (:data:`meanfield.backend.BACKENDS`): inputs and kernels drawn by its Generator
        on each chunk's child stream, the layers and moments computed on it (NumPy: ``numpy.einsum``,
        the reference order; elsewhere ``xp.matmul``). NumPy and ``array_api_strict`` draw the same
        numbers; the results are NumPy arrays.

    Returns
    -------
    dict of str to ndarray, each of shape (n_networks,)
        ``relu_diff``, ``sq_diff``: means over channel pairs i != j and positions of
        relu(y_i)^2 relu(y_j)^2 and y_i^2 y_j^2; ``relu_same``, ``sq_same``: the same for one channel at
        adjacent positions; ``m4``, ``s2``: means of y^4 and y^2 over channels and positions.

    Raises
    ------
    ValueError, TypeError
        Sizes out of range; a bad ``rng`` or ``backend``.
    ImportError
        A ``backend`` whose package is not installed.

    Notes
    -----
    Grzejdziak 2023, Lemma 4.2 and Prop. 4.3 applied to convolutions (the module notes).
    """
    if isinstance(n_networks, bool) or not isinstance(n_networks, (int, np.integer)):
        raise TypeError(f"n_networks must be an int, got {n_networks!r}")
    if isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer)):
        raise TypeError(f"chunk must be an int, got {chunk!r}")
    if not 2 <= n_networks <= 10**6:
        raise ValueError(f"n_networks must be in [2, 10**6], got {n_networks}")
    if not 1 <= chunk <= 10**5:
        raise ValueError(f"chunk must be in [1, 10**5], got {chunk}")
    be = get_backend(backend)
    xp = be.xp
    host = check_rng(rng)
    n_chunks = (n_networks + chunk - 1) // chunk
    gens = host.spawn(n_chunks) if be.name == "numpy" else [be.generator(s) for s in spawn_sequences(host, n_chunks)]
    c, k, p = CHANNELS, KERNEL_SIZE, POSITIONS
    sd = math.sqrt(2.0 / (c * k))  # He for fan-in c k (slope 0)
    keys = ("relu_diff", "sq_diff", "relu_same", "sq_same", "m4", "s2")
    out = {key: np.empty(n_networks) for key in keys}
    off = ~np.eye(c, dtype=bool)
    off_b = be.asarray(off.astype(np.float64))
    for b, g in enumerate(gens):
        lo, hi = b * chunk, min(n_networks, (b + 1) * chunk)
        n = hi - lo
        y = g.standard_normal((n, c, p))
        for _ in range(DEPTH):
            x = xp.maximum(y, 0.0)
            w = sd * g.standard_normal((n, c, c, k))
            if be.name == "numpy":  # the reference summation order (results of earlier releases)
                y = sum(np.einsum("nij,njp->nip", w[..., t], np.roll(x, -(t - k // 2), axis=2)) for t in range(k))
            else:
                y = w[..., 0] @ xp.roll(x, k // 2, axis=2)
                for t in range(1, k):
                    y = y + w[..., t] @ xp.roll(x, -(t - k // 2), axis=2)
        r2 = xp.maximum(y, 0.0) ** 2
        y2 = y * y
        if be.name == "numpy":
            cross_r = np.einsum("nip,njp->nij", r2, r2)[:, off].mean(axis=1) / p
            cross_y = np.einsum("nip,njp->nij", y2, y2)[:, off].mean(axis=1) / p
        else:  # the off-diagonal mean as a masked sum (boolean indexing beside a slice is not array API)
            pairs = c * (c - 1)
            cross_r = to_numpy(xp.sum((r2 @ matrix_transpose(xp, r2)) * off_b, axis=(1, 2))) / pairs / p
            cross_y = to_numpy(xp.sum((y2 @ matrix_transpose(xp, y2)) * off_b, axis=(1, 2))) / pairs / p
        out["relu_diff"][lo:hi], out["sq_diff"][lo:hi] = cross_r, cross_y
        out["relu_same"][lo:hi] = to_numpy(xp.mean(r2 * xp.roll(r2, -1, axis=2), axis=(1, 2)))
        out["sq_same"][lo:hi] = to_numpy(xp.mean(y2 * xp.roll(y2, -1, axis=2), axis=(1, 2)))
        out["m4"][lo:hi] = to_numpy(xp.mean(y2 * y2, axis=(1, 2)))
        out["s2"][lo:hi] = to_numpy(xp.mean(y2, axis=(1, 2)))
    return out


def _ratio(num, den, square=False):
    """mean(num) / mean(den) (or / mean(den)^2) and its delta-method standard error."""
    md = den.mean()
    if square:
        r = num.mean() / md**2
        infl = num / md**2 - 2.0 * r * den / md
    else:
        r = num.mean() / md
        infl = (num - r * den) / md
    return float(r), float(infl.std(ddof=1) / math.sqrt(num.size))


@renamed_kwargs(seed="rng")
def run(backend: str = "numpy", full: bool = False, seed: int = 0) -> list[Comparison]:
    """The rows of the module notes; the simulation runs on ``backend`` (:data:`BACKENDS`)."""
    n = 1_000_000 if full else 200_000
    m = conv_pair_moments(n, rng=substream(seed, 17), backend=backend)
    closure = 0.25  # ((1 + a^2) / 2)^2 at a = 0
    rows = []
    r, se = _ratio(m["relu_diff"], m["sq_diff"])
    rows.append(
        Comparison(
            f"CNN ReLU c={CHANNELS}, k={KERNEL_SIZE}, layer {DEPTH}: E relu^2 relu^2 / E y^2 y^2, different channels "
            "(Lemma 4.2 holds)",
            closure,
            r,
            se,
        )
    )
    r, se = _ratio(m["relu_same"], m["sq_same"])
    rows.append(
        Comparison(
            f"CNN ReLU c={CHANNELS}, k={KERNEL_SIZE}, layer {DEPTH}: same ratio, one channel, adjacent positions, "
            "differs from the dense closure's 1/4 (does not close)",
            closure,
            r,
            se,
            note="shared filter: only the joint sign flip is a symmetry; passes when the ratio is more than "
            "the tolerance away from 1/4",
            side="differs",
        )
    )
    dense = float(kurtosis.propagate(3.0, 0.0, [CHANNELS * KERNEL_SIZE] * DEPTH).kappa[-1])
    r, se = _ratio(m["m4"], m["s2"], square=True)
    rows.append(
        Comparison(
            f"CNN ReLU c={CHANNELS}, k={KERNEL_SIZE}: kurtosis at layer {DEPTH} differs from dense Prop. 4.3 at "
            f"fan-in {CHANNELS * KERNEL_SIZE} (the dense recursion does not close for CNNs)",
            dense,
            r,
            se,
            note="the dense recursion as a prediction for the CNN; passes when the kurtosis is more than the "
            "tolerance away from it",
            side="differs",
        )
    )
    return rows


if __name__ == "__main__":
    raise SystemExit(main_for(run, __name__))
