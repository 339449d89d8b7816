"""Neural tangent kernels: the infinite-width recursion against empirical NTKs of finite networks.

For tanh at an ordered, a critical and a chaotic point, and relu at its critical point, two inputs
(q = 1, c = 0.6) go through ``depth`` hidden layers and a scalar read-out; the theory is
:func:`meanfield.ntk.propagate_ntk` (``ntk[depth]``), the Monte-Carlo the empirical kernels of
:func:`meanfield.simulate.empirical_ntk` (NumPy back-propagation, checked against
PyTorch autograd in the tests). Rows: Theta(x1, x1), Theta(x2, x2), Theta(x1, x2). The same for
1-D periodic CNNs (tanh and relu, variance vector ``CONV_V``, P = 6 positions, two inputs with 3
channels, one-channel read-out at position 1): :func:`meanfield.ntk.propagate_conv_ntk` against
:func:`meanfield.simulate.empirical_conv_ntk`, extrapolated in the channel count.

ConstNet (Blumenfeld et al. 2020, App. D): :func:`meanfield.ntk.constnet_ntk` (a linear model's kernel) against
the empirical NTK over every parameter of :class:`meanfield.simulate.ConstNet` at its
deterministic initialisation (per-example back-propagation); no sampling, so the standard error is
0 and the tolerance the rounding bound :data:`CONSTNET_RTOL` times the kernel's scale.

Tolerance, stated in advance (as :mod:`meanfield.validation.dense`): the empirical NTK is biased by
O(1/N), so means at widths N and 2N are Richardson-extrapolated (``2 m_2N - m_N``) with their
standard error over independent networks; the verdict allows ``Z_DEFAULT`` standard errors plus
:func:`EXTRAPOLATION_BIAS` (the quantity's scale over N^2) for the O(1/N^2) remainder.
"""

from __future__ import annotations

import numpy as np

from meanfield import conv, dense, ntk
from meanfield.checks import renamed_kwargs
from meanfield.data import gaussian_inputs
from meanfield.simulate.ntk import empirical_conv_ntk, empirical_ntk, empirical_periodic_cnn_ntk

from ._extrapolation import EXTRAPOLATION_BIAS, extrapolate_samples
from .backend import substream
from .report import Comparison
from .runner import main_for, progress

__all__ = [
    "CONSTNET_RTOL",
    "CONV2D_SHAPE",
    "CONV2D_V",
    "CONV_POINTS",
    "CONV_V",
    "FIXED_POINT_CNN",
    "POINTS",
    "constnet_empirical_ntk",
    "conv_mode_rows",
    "run",
]

#: Backends every simulator of this module honours (:func:`meanfield.validation.runner.module_backend`).
BACKENDS = ("numpy", "cupy", "torch", "array_api_strict")

#: (activation, phase) -> (sigma_w2, sigma_b2); None: the critical sigma_w2 at that sigma_b2.
POINTS = {
    ("tanh", "ordered"): (0.8, 0.05),
    ("tanh", "critical"): (None, 0.05),
    ("tanh", "chaotic"): (2.5, 0.05),
    ("relu", "critical"): (2.0, 0.0),
}
#: CNN rows: (activation, sigma_w2, sigma_b2) and the variance vector.
CONV_POINTS = (("tanh", 1.5, 0.05), ("relu", 2.0, 0.0))
CONV_V = (0.25, 0.5, 0.25)
#: Rounding tolerance (relative) of the deterministic ConstNet rows: sums of ~1e3 products of
#: O(1) numbers in float64.
CONSTNET_RTOL = 1e-12


def constnet_empirical_ntk(x, widths, n_classes):
    """Empirical NTK of the initial ConstNet over every parameter (per-example back-propagation).

    Parameters
    ----------
    x : ndarray, shape ``(D, *spatial, n_input)``
    widths : sequence of int
    n_classes : int

    Returns
    -------
    ndarray, shape (D, D, n_classes, n_classes)

    Raises
    ------
    ValueError
        ``x`` not a non-empty finite ``(D, *spatial, n_input)`` array with 1 or 2 spatial axes;
        ``widths`` / ``n_classes`` out of range (as :meth:`ConstNet.initial`); a kernel beyond float64.
    TypeError
        Complex, boolean or non-numeric inputs.
    """
    from meanfield.checks import as_float_array
    from meanfield.simulate import ConstNet

    x = as_float_array(x, "x")
    if x.ndim not in (3, 4) or x.size == 0:
        raise ValueError(
            f"x must be a non-empty array of shape (D, *spatial, n_input) with 1 or 2 spatial axes, got {x.shape}"
        )

    net = ConstNet.initial(widths=widths, blocks_per_stage=2, n_input=x.shape[-1], n_classes=n_classes)
    grads = []
    for a in range(x.shape[0]):
        for k in range(n_classes):
            net.forward(x[a : a + 1])
            up = np.zeros((1, n_classes))
            up[0, k] = 1.0
            g = net.backward(up)
            grads.append(np.concatenate([np.ravel(g[key]) for key in sorted(g)]))
    jac = np.array(grads).reshape(x.shape[0], n_classes, -1)
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.einsum("aip,bjp->abij", jac, jac)
    if not np.all(np.isfinite(out)):
        raise ValueError("x is too large: the empirical NTK exceeds the float64 range")
    return out


def _rows(label, theory, sims, width):
    rows = []
    for a, b in ((0, 0), (1, 1), (0, 1)):
        est, se = extrapolate_samples(*(s[:, a, b] for s in sims))
        rows.append(
            Comparison(
                f"{label}: Theta(x{a + 1}, x{b + 1})",
                float(theory[a, b]),
                float(est),
                float(se),
                systematic=EXTRAPOLATION_BIAS(theory[a, b], width),
            )
        )
    return rows


@renamed_kwargs(seed="rng")
def run(backend: str = "numpy", full: bool = False, seed: int = 0) -> list[Comparison]:
    """Compare NTKs with the infinite-width recursion (see the module docstring)."""
    width = 512 if full else 128
    n_networks = 1000 if full else 200
    depth = 6 if full else 3
    x = gaussian_inputs(2, 32, q=1.0, c=0.6, rng=substream(seed, 0))
    rows: list[Comparison] = []
    for k, ((name, phase), (sw, sb)) in enumerate(progress(POINTS.items(), desc="validation.ntk", total=len(POINTS))):
        if sw is None:
            sw = float(dense.critical_sigma_w2(name, sb))
        theory = ntk.propagate_ntk(dense.input_covariance(x, sw, sb), name, sw, sb, depth).ntk[depth]
        sims = [
            empirical_ntk(x, name, sw, sb, depth, n, n_networks, rng=substream(seed, 1, k, j), backend=backend)
            for j, n in enumerate((width, 2 * width))
        ]
        label = f"{name} {phase} (sw2={sw:.4g}, sb2={sb:g}), L={depth}"
        rows += _rows(label, theory, sims, width)
    xc = np.random.default_rng(substream(seed, 2)).standard_normal((2, 6, 3))
    channels = 128 if full else 48
    for k, (name, sw, sb) in enumerate(CONV_POINTS):
        cov0 = conv.multi_input_covariance(xc, sw, sb, CONV_V)
        theory = ntk.propagate_conv_ntk(cov0, name, sw, sb, CONV_V, 2).ntk[2][:, 1, :, 1]
        sims = [
            empirical_conv_ntk(
                xc, name, sw, sb, CONV_V, 2, c, n_networks, position=1, rng=substream(seed, 3, k, j), backend=backend
            )
            for j, c in enumerate((channels, 2 * channels))
        ]
        rows += _rows(f"CNN {name} (sw2={sw:g}, sb2={sb:g}, v={CONV_V}), L=2", theory, sims, channels)
    widths, n_classes = (4, 8, 16), 3
    xs = np.random.default_rng(substream(seed, 4)).standard_normal((2, 8, 8, 3))
    th = ntk.constnet_ntk(xs, widths, 3, n_classes, 2)
    emp = constnet_empirical_ntk(xs, widths, n_classes)
    scale = float(np.max(np.abs(th)))
    for (a, b, i, j), what in (
        ((0, 0, 0, 0), "Theta_00(x1, x1)"),
        ((0, 1, 0, 0), "Theta_00(x1, x2)"),
        ((0, 1, 0, 1), "Theta_01(x1, x2) (other class: 0)"),
    ):
        rows.append(
            Comparison(
                f"ConstNet {widths} (Blumenfeld et al. 2020 App. D, linear-model kernel): {what}",
                float(th[a, b, i, j]),
                float(emp[a, b, i, j]),
                0.0,
                systematic=CONSTNET_RTOL * scale,
                note="deterministic initialisation: rounding tolerance only",
            )
        )
    rows += conv_mode_rows(seed, full, backend=backend)
    return rows


#: 2-D rows: a 3 x 4 periodic signal, a 3 x 3 variance vector (not symmetric), two inputs, 3 channels.
CONV2D_SHAPE = (3, 4)
CONV2D_V = ((0.05, 0.1, 0.0), (0.1, 0.4, 0.15), (0.05, 0.1, 0.05))
#: Fixed-point rows: tanh in the ordered phase, deep enough that the recursion is near Theta^*.
FIXED_POINT_CNN = ("tanh", 0.8, 0.05, 16)


@renamed_kwargs(seed="rng")
def conv_mode_rows(seed: int = 0, full: bool = False, backend: str = "numpy") -> list[Comparison]:
    """Rows for 2-D periodic CNNs and for the CNN NTK's fixed point.

    2-D: :func:`meanfield.ntk.propagate_conv_ntk` with ``shape = CONV2D_SHAPE`` against
    :func:`meanfield.simulate.empirical_periodic_cnn_ntk`, extrapolated in the channel
    count as the 1-D rows. Fixed point: the empirical NTK of a ``depth``-layer 1-D CNN in the
    ordered phase against :func:`meanfield.ntk.conv_ntk_fixed_point`'s ``theta_diag`` /
    ``theta_offdiag``; the tolerance adds, stated in advance, the theory's own distance
    ``|Theta^L - Theta^*|`` of the recursion at that depth (it relaxes by ``growth`` per layer).
    Both simulators run on ``backend`` (:data:`BACKENDS`).
    """
    channels = 96 if full else 48
    n_networks = 600 if full else 200
    rows: list[Comparison] = []
    v2 = np.asarray(CONV2D_V)
    x2 = np.random.default_rng(substream(seed, 5)).standard_normal((2, *CONV2D_SHAPE, 3))
    pos = (1, 2)
    flat = pos[0] * CONV2D_SHAPE[1] + pos[1]
    for k, (name, sw, sb) in enumerate(CONV_POINTS):
        cov0 = conv.multi_input_covariance(x2.reshape(2, -1, 3), sw, sb, v2, CONV2D_SHAPE)
        theory = ntk.propagate_conv_ntk(cov0, name, sw, sb, v2, 2, CONV2D_SHAPE).ntk[2][:, flat, :, flat]
        sims = [
            empirical_periodic_cnn_ntk(
                x2, name, sw, sb, v2, 2, c, n_networks, position=pos, rng=substream(seed, 6, k, j), backend=backend
            )
            for j, c in enumerate((channels, 2 * channels))
        ]
        rows += _rows(f"2-D CNN {name} (sw2={sw:g}, sb2={sb:g}, {CONV2D_SHAPE}), L=2", theory, sims, channels)
    name, sw, sb, depth = FIXED_POINT_CNN
    xc = np.random.default_rng(substream(seed, 7)).standard_normal((2, 6, 3))
    fp = ntk.conv_ntk_fixed_point(name, sw, sb, CONV_V, 6)
    cov0 = conv.multi_input_covariance(xc, sw, sb, CONV_V)
    rec = ntk.propagate_conv_ntk(cov0, name, sw, sb, CONV_V, depth).ntk[depth][:, 1, :, 1]
    sims = [
        empirical_conv_ntk(
            xc, name, sw, sb, CONV_V, depth, c, n_networks, position=1, rng=substream(seed, 8, j), backend=backend
        )
        for j, c in enumerate((channels, 2 * channels))
    ]
    for a, b, star in ((0, 0, fp.theta_diag), (0, 1, fp.theta_offdiag)):
        est, se = extrapolate_samples(*(s[:, a, b] for s in sims))
        rows.append(
            Comparison(
                f"CNN NTK fixed point {name} (sw2={sw:g}, sb2={sb:g}), L={depth}: Theta(x{a + 1}, x{b + 1}) -> Theta*",
                float(star),
                float(est),
                float(se),
                systematic=abs(float(rec[a, b]) - star) + EXTRAPOLATION_BIAS(star, channels),
                note=f"xi_diag(m=0) = {fp.xi_diag[0]:.3g} layers",
            )
        )
    return rows


if __name__ == "__main__":
    raise SystemExit(main_for(run, __name__))
