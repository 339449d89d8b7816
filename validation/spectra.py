"""Jacobian singular-value spectra (free probability) against SVDs of finite random networks.

:func:`meanfield.spectra.jacobian_spectrum` predicts the law of the squared singular values
lambda of the input-output Jacobian of a deep network at its fixed point (Xiao et al. 2018, Sec. 2.2.1;
Pennington et al. 2017). For tanh networks on the critical line (sigma_b2 = 1e-4, q* = 0.046) with
orthogonal and Gaussian weights, and for 1-D periodic CNNs with delta-orthogonal, orthogonal and
Gaussian kernels, each row compares, at the theory's quantiles ``lambda_p`` (p = 0.1, 0.5, 0.9),
the predicted CDF ``p`` with the Monte-Carlo fraction of eigenvalues of ``J J^T`` below
``lambda_p`` -- a Kolmogorov-type comparison of the two distributions at fixed points -- and the
mean of lambda with chi_1^L.

Tolerance, stated before looking at data. Finite width biases the empirical spectrum by O(1/N);
as in :mod:`meanfield.validation.dense`, every Monte-Carlo number is Richardson-extrapolated in the
width (``2 m_2N - m_N``) with its standard error from the spread over independent networks, and
the verdict allows ``Z_DEFAULT`` standard errors plus two named systematic terms: the remaining
O(1/N^2) (:func:`EXTRAPOLATION_BIAS`) and the theory's own discretisation error. The theory's CDF
carries an O(eta) error from the Cauchy broadening (eta = twice the grid step in log lambda); it is
Richardson-extrapolated from the same grid range at ``THEORY_POINTS`` and twice as many points
(eta and eta / 2), and the extrapolation's error estimate ``|F_eta/2 - F_eta|`` is the systematic
term. Quantile levels whose ``lambda_p`` lies below the theory grid (mass of the deep Gaussian
spectra piled up near 0) are skipped.
"""

from __future__ import annotations

import numpy as np

from meanfield import dense, spectra
from meanfield.checks import renamed_kwargs
from meanfield.numerics import richardson
from meanfield.simulate.spectra import (
    conv2d_jacobian_singular_values,
    conv_jacobian_singular_values,
    jacobian_singular_values,
)

from ._extrapolation import EXTRAPOLATION_BIAS, extrapolate_samples
from .backend import substream
from .report import Comparison
from .runner import main_for, progress

__all__ = ["CONV2D_CASES", "CONV2D_SHAPE", "CONV_CASES", "DENSE_CASES", "PROBABILITIES", "conv2d_rows", "run"]

#: Backends every simulator of this module honours (:func:`meanfield.validation.runner.module_backend`).
BACKENDS = ("numpy", "cupy", "torch", "array_api_strict")

#: Bias variance of the tanh networks (critical sigma_w2 computed at run time).
SIGMA_B2 = 1e-4
#: (weights, depth) of the dense rows.
DENSE_CASES = (("orthogonal", 4), ("orthogonal", 16), ("gaussian", 4), ("gaussian", 16))
#: (kernel, depth) of the CNN rows.
CONV_CASES = (("delta_orthogonal", 4), ("orthogonal", 4), ("gaussian", 4))
#: Quantile levels compared.
PROBABILITIES = (0.1, 0.25, 0.5, 0.75, 0.9)
#: Grid points of the theory (and twice as many for its error estimate).
THEORY_POINTS = 1000


def _theory(fn, *args):
    """The spectrum at THEORY_POINTS and at twice as many on the same range (eta and eta / 2)."""
    fine = fn(*args, n_points=2 * THEORY_POINTS, decades=12.0)
    lam = fine.squared_singular_values
    # the coarse solve serves only the eta-extrapolation of the CDF below (its own moments are not
    # used): its accuracy check would only repeat what the extrapolation's error term carries
    coarse = fn(*args, n_points=THEORY_POINTS, lam_range=(lam[0], lam[-1]), accuracy="ignore")
    return coarse, fine


def _rows(label, spec, spec_fine, samples, width):
    """CDF rows at the theory's quantiles and the mean row, from eigenvalue samples at widths N, 2N."""
    rows = []
    levels = np.array(PROBABILITIES)
    lam_p = spec_fine.quantile(levels)
    ok = lam_p > spec_fine.squared_singular_values[0]
    f1, f2 = spec.cdf(lam_p), spec_fine.cdf(lam_p)
    ext = richardson(f1, f2, order=1, ratio=spec.eta / spec_fine.eta)
    for p, lp, th, err, use in zip(levels, lam_p, ext.value, ext.error, ok):
        if not use:
            continue
        frac = [(ev <= lp).mean(axis=1) for ev in samples]
        est, se = extrapolate_samples(*frac)
        rows.append(
            Comparison(
                f"{label}: P(lambda <= {lp:.4g})",
                float(th),
                float(est),
                float(se),
                systematic=float(err) + EXTRAPOLATION_BIAS(1.0, width),
                note=f"CDF at the theory's {p:g}-quantile (eta-extrapolated); systematic = its error + O(1/N^2)",
            )
        )
    est, se = extrapolate_samples(*(ev.mean(axis=1) for ev in samples))
    rows.append(
        Comparison(
            f"{label}: mean lambda = chi_1^L",
            spec.expected_mean,
            float(est),
            float(se),
            systematic=EXTRAPOLATION_BIAS(spec.expected_mean, width),
        )
    )
    return rows


@renamed_kwargs(seed="rng")
def run(backend: str = "numpy", full: bool = False, seed: int = 0) -> list[Comparison]:
    """Compare Jacobian spectra with free probability (see the module docstring)."""
    width = 256 if full else 96
    n_networks = 400 if full else 60
    channels, size = (32, 16) if full else (12, 8)
    sw = float(dense.critical_sigma_w2("tanh", SIGMA_B2))
    rows: list[Comparison] = []
    cases = [("dense", *c) for c in DENSE_CASES] + [("conv", *c) for c in CONV_CASES]
    for k, (kind, law, depth) in enumerate(progress(cases, desc="validation.spectra", total=len(cases))):
        if kind == "dense":
            spec, fine = _theory(spectra.jacobian_spectrum, "tanh", sw, SIGMA_B2, depth, law)
            samples = [
                jacobian_singular_values(
                    "tanh", sw, SIGMA_B2, depth, n, n_networks, law, rng=substream(seed, 0, k, j), backend=backend
                )
                for j, n in enumerate((width, 2 * width))
            ]
            label = f"tanh dense {law} L={depth} (sw2={sw:.5g}, sb2={SIGMA_B2:g})"
            rows += _rows(label, spec, fine, samples, width)
        else:
            spec, fine = _theory(spectra.conv_jacobian_spectrum, "tanh", sw, SIGMA_B2, depth, law)
            samples = [
                conv_jacobian_singular_values(
                    "tanh", sw, SIGMA_B2, depth, c, size, n_networks, law, rng=substream(seed, 1, k, j), backend=backend
                )
                for j, c in enumerate((channels, 2 * channels))
            ]
            label = f"tanh CNN {law} kernel L={depth} (n={size}, k=3)"
            rows += _rows(label, spec, fine, samples, channels)
    rows += conv2d_rows(seed, full, backend=backend)
    return rows


#: (kernel, depth) of the 2-D CNN rows and their spatial shape.
CONV2D_CASES = (("delta_orthogonal", 4), ("gaussian", 4))
CONV2D_SHAPE = (3, 3)


@renamed_kwargs(seed="rng")
def conv2d_rows(seed: int = 0, full: bool = False, backend: str = "numpy") -> list[Comparison]:
    """The CNN rows of :func:`run` for 2-D periodic CNNs (``CONV2D_SHAPE``, 3 x 3 kernels).

    Theory :func:`meanfield.spectra.conv_jacobian_spectrum` (the law does not depend on the number
    of spatial axes), simulation
    :func:`meanfield.simulate.conv2d_jacobian_singular_values` on ``backend``; tolerances as
    the 1-D rows.
    """
    channels = 24 if full else 8
    n_networks = 200 if full else 40
    sw = float(dense.critical_sigma_w2("tanh", SIGMA_B2))
    rows: list[Comparison] = []
    for k, (law, depth) in enumerate(CONV2D_CASES):
        spec, fine = _theory(spectra.conv_jacobian_spectrum, "tanh", sw, SIGMA_B2, depth, law)
        samples = [
            conv2d_jacobian_singular_values(
                "tanh",
                sw,
                SIGMA_B2,
                depth,
                c,
                CONV2D_SHAPE,
                n_networks,
                law,
                rng=substream(seed, 2, k, j),
                backend=backend,
            )
            for j, c in enumerate((channels, 2 * channels))
        ]
        label = f"tanh 2-D CNN {law} kernel L={depth} ({CONV2D_SHAPE[0]}x{CONV2D_SHAPE[1]}, k=3x3)"
        rows += _rows(label, spec, fine, samples, channels)
    return rows


if __name__ == "__main__":
    raise SystemExit(main_for(run, __name__))
