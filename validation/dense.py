"""Dense mean-field theory against Monte-Carlo simulation of finite random networks.

For tanh, erf and relu networks at an ordered, a critical and a chaotic point, the pre-activation
variances q^l and correlation c^l of two inputs, and the back-propagated gradient variance, are
compared with :func:`meanfield.dense.propagate` and :func:`meanfield.dense.backward_variance`.

Tolerance. Mean-field theory is the infinite-width limit; a width-N network is biased by O(1/N).
Rather than allowing a guessed bias, every Monte-Carlo number is Richardson-extrapolated in the
width: with means m_N and m_2N over independent networks, ``2 m_2N - m_N`` estimates the
infinite-width value up to O(1/N^2), and its standard error is ``sqrt(4 se_2N^2 + se_N^2)``. The
verdict then uses standard errors only (``z = Z_DEFAULT``), plus the named constant
:data:`EXTRAPOLATION_BIAS` for the remaining O(1/N^2) term, measured at the default widths as
below 1/N^2 of the quantity's scale.
"""

from __future__ import annotations

import functools

import numpy as np

from meanfield import dense
from meanfield.checks import renamed_kwargs
from meanfield.data import gaussian_inputs
from meanfield.simulate import simulate_dense

from ._extrapolation import EXTRAPOLATION_BIAS, extrapolate_moments  # the bias: <= 6e-5 of the scale at N >= 128
from .backend import substream
from .ensembles import ensemble_moments
from .report import Comparison
from .runner import main_for, progress

__all__ = ["CHUNK_NETWORKS", "POINTS", "run"]

#: Networks per chunk of every Monte-Carlo ensemble of this table (:mod:`meanfield.parallel`): chunk
#: ``k`` draws from the ``k``-th child of the row's stream and only its sums travel, so the numbers do
#: not depend on where the chunks run (serially, ``--workers N``, ``--scheduler ADDRESS``).
CHUNK_NETWORKS = 100

#: Backends every simulator of this module honours (:func:`meanfield.validation.runner.module_backend`).
BACKENDS = ("numpy", "cupy", "torch", "array_api_strict")

#: (activation, phase) -> (sigma_w2, sigma_b2). Critical points: relu's exact edge (2, 0); for
#: tanh and erf the sigma_w2 solving chi_1 = 1 at the given sigma_b2 (computed at run time).
POINTS = {
    ("tanh", "ordered"): (0.8, 0.05),
    ("tanh", "critical"): (None, 0.05),
    ("tanh", "chaotic"): (2.5, 0.05),
    ("erf", "ordered"): (0.5, 0.05),
    ("erf", "critical"): (None, 0.05),
    ("erf", "chaotic"): (3.0, 0.05),
    ("relu", "ordered"): (1.5, 0.1),
    ("relu", "critical"): (2.0, 0.0),
    ("relu", "chaotic"): (2.5, 0.1),
}


def _statistics(sim, layers, grad_layers):
    """Per-network ``[q^l for l in layers] + [c^l for l in layers] + [grad var at grad_layers]`` (n, K)."""
    cov = sim.cov
    q = cov[:, layers, 0, 0]
    c = cov[:, layers, 0, 1] / np.sqrt(cov[:, layers, 0, 0] * cov[:, layers, 1, 1])
    g = sim.grad_sq[:, grad_layers, 0]
    return np.concatenate([q, c, g], axis=1)


@renamed_kwargs(seed="rng")
def run(backend: str = "numpy", full: bool = False, seed: int = 0) -> list[Comparison]:
    """Compare q^l, c^l and gradient variances with mean-field theory (see module docstring)."""
    width = 512 if full else 128
    n_networks = 1000 if full else 400
    depth = 20 if full else 12
    layers = [1, 3, 6, depth]
    rows: list[Comparison] = []
    x = gaussian_inputs(2, 64, q=1.0, c=0.6, rng=substream(seed, 0))
    for k, ((name, phase), (sw, sb)) in enumerate(progress(POINTS.items(), desc="validation.dense", total=len(POINTS))):
        if sw is None:
            sw = float(dense.critical_sigma_w2(name, sb))
        cov0 = dense.input_covariance(x, sw, sb)
        theory = dense.propagate(cov0, name, sw, sb, depth)
        grad_theory = dense.backward_variance(float(np.mean(np.diag(cov0))), name, sw, sb, depth + 1)
        grad_layers = [0, depth // 2]
        statistic = functools.partial(_statistics, layers=layers, grad_layers=grad_layers)
        sims = [
            ensemble_moments(
                simulate_dense,
                x,
                name,
                sw,
                sb,
                depth,
                n,
                gradients=True,
                backend=backend,
                statistic=statistic,
                n_networks=n_networks,
                chunk_size=CHUNK_NETWORKS,
                rng=substream(seed, 1, k, j),
            )
            for j, n in enumerate((width, 2 * width))
        ]
        label = f"{name} {phase} (sw2={sw:.4g}, sb2={sb:g})"
        n_l = len(layers)
        for i, layer in enumerate(layers):
            q_th = theory[layer, 0, 0]
            q_mc, q_se = extrapolate_moments(*sims, i)
            rows.append(Comparison(f"{label}: q^{layer}", q_th, q_mc, q_se, systematic=EXTRAPOLATION_BIAS(q_th, width)))
            c_th = theory[layer, 0, 1] / np.sqrt(theory[layer, 0, 0] * theory[layer, 1, 1])
            c_mc, c_se = extrapolate_moments(*sims, n_l + i)
            rows.append(Comparison(f"{label}: c^{layer}", c_th, c_mc, c_se, systematic=EXTRAPOLATION_BIAS(1.0, width)))
        for i, layer in enumerate(grad_layers):
            g_th = grad_theory[layer]
            g_mc, g_se = extrapolate_moments(*sims, 2 * n_l + i)
            rows.append(
                Comparison(
                    f"{label}: grad var l={layer + 1}/{depth + 1}",
                    g_th,
                    g_mc,
                    g_se,
                    systematic=EXTRAPOLATION_BIAS(g_th, width),
                )
            )
    return rows


if __name__ == "__main__":
    raise SystemExit(main_for(run, __name__))
