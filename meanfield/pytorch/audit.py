r"""Audit a PyTorch model's signal propagation against mean-field theory: ``audit(model, inputs)``.

The model is re-initialised ``n_inits`` times; forward (and backward) hooks on every ``Linear`` /
``Conv1d`` / ``Conv2d`` / ``Conv3d`` / ``Embedding`` layer record, for D inputs, the pre-activation second moment
:math:`q^l = \langle (h^l_i)^2\rangle` (mean over units and positions), the mean pairwise
correlation :math:`c^l` of the inputs, the kurtosis :math:`\langle h^4\rangle/\langle h^2\rangle^2`
and the gradient second moment :math:`\langle(\partial L/\partial h^l_i)^2\rangle` for a Gaussian
cotangent at the output (``L = <v, model(x)>``, ``v ~ N(0, 1)``). The same quantities are
predicted by the library in two ways.

**Layer-local check** (rows ``q_layer``, every weight layer of any architecture). Given the layer's
*measured* input ``x`` in that initialisation, its weights (zero mean, ``E W^2 = sigma_w2 v_beta /
c_in`` per tap ``beta``, independent of ``x``) and bias (``E b^2 = sigma_b2``) give exactly

.. math:: \mathbb{E}[h_i(p)^2 \mid x] = \frac{\sigma_w^2}{c_{in}} \sum_{c, \beta} v_\beta\, x_c(s p + d \beta - \text{pad})^2 + \sigma_b^2,

the sum running over the input channels of unit ``i``'s group and the taps that output position
``p`` sees (stride ``s``, dilation ``d``, groups; zero padding contributes nothing, so border
positions see fewer inputs; reflect / replicate / circular padding pad the squared input as the
layer pads its input); for ``Linear``, :math:`\sigma_w^2 \langle |x|^2\rangle / n_{in} +
\sigma_b^2`; for ``Embedding`` (rows ``W_t ~ sigma_w2``, PyTorch's default ``N(0, 1)``),
``sigma_w2`` times the fraction of looked-up tokens other than ``padding_idx``. No
approximation enters: the prediction holds whatever precedes the layer (norms, attention,
residual additions, a module used twice: its first call). The row compares
``<h^2>`` (mean over units, inputs and positions) with the mean prediction; the output units are
independent given the input, so the standard error comes from the unit-wise residuals
``u_i - E[u_i | x]`` over all units and re-initialisations. It checks that every layer's weights and
bias have the variance the initialiser declared (or PyTorch's default law); it does not check
how the signal propagates between layers (the end-to-end rows do, where a theory covers the path).
Orthogonal rows are uniform on the sphere, so the same prediction holds (their units are
negatively correlated: the standard error is conservative); ``orthogonal_conv_`` kernels correlate
their taps and get no layer-local row.

**End-to-end theory** (rows ``q``, ``c``, ``kurtosis``, ``grad``): the state is propagated from the
inputs through the model, layer by layer:

* ``Linear`` (``W_ij ~ sigma_w2 / fan_in``): :math:`\Sigma_{out} = \sigma_w^2 K_{in} + \sigma_b^2`
  with :math:`K` the second-moment matrix of the layer's input (exact for the data at layer 1);
* ``Conv1d``/``Conv2d`` with ``padding=k // 2, padding_mode="circular"``, stride 1: the CNN
  covariance map :math:`\Sigma_{out} = \sigma_w^2 \mathcal{A}_v\star K + \sigma_b^2` of Xiao et al. 2018
  (eqs. 2.3-2.5, :func:`meanfield.conv.average`), with the variance vector ``v`` that the kernel's
  initialiser realises; zero padding is computed as if circular and marked *approximate* (the
  borders differ);
* activation modules: :math:`K = \mathbb{E}\phi(u)\phi(u)^T`, :math:`u\sim N(0,\Sigma)`
  (:func:`meanfield.dense.covariance_map`);
* :class:`~meanfield.pytorch.modules.Residual` blocks (identity skips) and Orhan's residual /
  hyper-residual / path-residual nets: the residual mean-field recursion, in which the stream is a
  sum of unit-wise independent components (cross moments :math:`m_i m_j^T` from their means);
* ``Flatten``, ``Identity``, ``Dropout`` (the audit runs in ``eval()`` mode), ``AdaptiveAvgPool(1)``;
* gradients: the backward map under gradient independence (Xiao et al. 2018, eq. 2.16; Schoenholz et al.
  2017, eq. 14) through plain stacks of the layers above;
* kurtosis: the exact finite-width recursion of Grzejdziak 2023 (Prop. 4.3, :func:`meanfield.kurtosis.propagate`)
  where it applies: a ``Linear`` stack of i.i.d. Gaussian weights without biases and ReLU / leaky ReLU
  / identity activations. The sample kurtosis is heavy-tailed: once the predicted kurtosis is large
  (measured: above ~10 with 400 re-initialisations of a width-16 ReLU MLP) its jackknife standard
  error is optimistic and such rows can FAIL although the recursion holds (the validation module
  ``meanfield.validation.kurtosis`` keeps rows with kappa <= 30 and uses 20,000 networks for them).

Anything else (``BatchNorm``, attention, a module used twice, a user's ``forward`` that is not a
``Sequential``) stops the end-to-end theory: its rows from there on are measured and marked
``"no theory"`` (the layer-local rows still check every layer).

The default number of re-initialisations (``n_inits=None``) resolves a relative deviation
:data:`DETECTABLE_Q_DEVIATION` (10 %) of the first layer's ``q`` with power ``Phi(POWER_Z)`` (95 %):
after one initialisation the relative standard error ``se_1`` of the first layer's layer-local row is
estimated from its units, and ``K = ceil(((Z + POWER_Z) se_1 / 0.1)^2)`` re-initialisations are run,
clipped to [:data:`N_INITS_MIN`, :data:`N_INITS_MAX`].

Verdicts follow :class:`meanfield.validation.report.Comparison` (the same rule and constant, here
without importing the upper layer): ``ok`` when :math:`|measured - theory| \le z\,se + systematic`, else ``FAIL``, at the level of
:data:`Z` (4.5 standard errors, two-sided ``6.8e-6``): ``se`` is the standard error over the
``n_inits`` re-initialisations, itself estimated, so ``z`` is the Student-t quantile of that level
with ``n_inits - 1`` degrees of freedom (:func:`z_for`: 19.4 for 6, 9.3 for 10, 6.1 for 20, 4.5
from 200). ``systematic`` is the finite-width bias of mean-field theory, stated in advance
as :data:`FINITE_WIDTH_BIAS`: :math:`(l - 1)/N` of the quantity's scale at layer ``l`` with ``N``
the smallest fan-in width on the way (the O(depth / width) corrections of deep networks; Roberts,
Yaida & Hanin 2022, ch. 4-5); the first layer is exact given the inputs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from meanfield._deprecate import renamed_kwargs

from .. import conv as mf_conv
from .. import dense
from .._checks import check_bool, check_int, check_rng
from .._results import Result
from ..activations import Activation
from ..compare import Z_DEFAULT, passes
from ..gaussian import expectation, hermite_rule
from ._activations import is_activation_module, resolve_activation
from ._torch import require_torch
from .init import recorded_spec, reinitialise_

torch = require_torch()
nn = torch.nn

__all__ = [
    "DETECTABLE_Q_DEVIATION",
    "FINITE_WIDTH_BIAS",
    "MAX_INPUTS",
    "N_INITS_MAX",
    "N_INITS_MIN",
    "POWER_Z",
    "QUANTITIES",
    "VERDICTS",
    "Audit",
    "AuditRow",
    "Z",
    "audit",
    "prepare_inputs",
    "verdict",
    "z_for",
]

#: Standard errors allowed (:data:`meanfield.compare.Z_DEFAULT`, the one constant of the verdict rule).
Z = Z_DEFAULT
#: Inputs used by default (the theory's cost grows as (D P)^2 for D inputs of P positions).
MAX_INPUTS = 4
#: Measured quantities, in table order (``q_layer``: the layer-local check of ``q``).
QUANTITIES = ("q", "q_layer", "c", "kurtosis", "grad")
#: Relative deviation of a layer's ``q`` that the default number of re-initialisations resolves at
#: the first layer (with power ``Phi(POWER_Z)``, at the level of :data:`Z`).
DETECTABLE_Q_DEVIATION = 0.10
#: One-sided normal quantile of the power of that rule (1.645: 95 %).
POWER_Z = 1.645
#: Bounds of the default number of re-initialisations (``n_inits=None``).
N_INITS_MIN = 10
N_INITS_MAX = 200
#: Possible verdicts.
VERDICTS = ("ok", "FAIL", "no theory", "approximate")
#: Initialisers whose weights follow mean-field theory (i.i.d. Gaussian or orthogonal).
_MEAN_FIELD_METHODS = {"critical_normal_", "mean_field_normal_", "orthogonal", "delta_orthogonal_", "orthogonal_conv_"}


def FINITE_WIDTH_BIAS(scale: float, layer: int, width: float) -> float:
    """Bound on the finite-width bias of a mean-field prediction at (1-based) layer ``layer``:
    ``|scale| (layer - 1) / width`` (0 at the first layer, exact given the inputs)."""
    if not math.isfinite(width) or layer <= 1:
        return 0.0
    return abs(scale) * (layer - 1) / width


@dataclass(frozen=True)
class AuditRow(Result):
    """One row of an :class:`Audit`: a layer's measured quantity against theory.

    Attributes
    ----------
    layer : str
        The module's name in ``model.named_modules()``.
    index : int
        1-based position of the layer in the forward pass.
    quantity : {"q", "q_layer", "c", "kurtosis", "grad"}
        ``q_layer``: the layer-local check (theory from the layer's measured input).
    measured, stderr : float
        Mean over the re-initialisations and its standard error.
    theory : float or None
        The prediction; ``None`` where no theory covers the layer.
    systematic : float
        The finite-width bias allowed (:data:`FINITE_WIDTH_BIAS`).
    verdict : {"ok", "FAIL", "no theory", "approximate"}
    note : str
    """

    layer: str
    index: int
    quantity: str
    measured: float
    stderr: float
    theory: float | None
    systematic: float = 0.0
    verdict: str = "no theory"
    note: str = field(default="", compare=False)
    z: float = Z

    @property
    def tolerance(self) -> float:
        """``z * stderr + systematic``."""
        return self.z * self.stderr + self.systematic


@renamed_kwargs(n_inits="n_networks")
def z_for(n_inits: int) -> float:
    """Standard errors allowed with ``n_inits`` re-initialisations: the Student-t quantile of the two-sided
    level of :data:`Z` (``P = 2 Phi(-4.5) = 6.8e-6``) with ``n_inits - 1`` degrees of freedom (the
    standard error is itself estimated from ``n_inits`` samples); :data:`Z` from 200 on."""
    n_inits = check_int(n_inits, "n_networks", 2)
    if n_inits >= 200:
        return Z
    from scipy import special  # scipy.stats.t.isf(norm.sf(Z), n - 1), without importing scipy.stats

    return float(-special.stdtrit(n_inits - 1, special.ndtr(-Z)))


def verdict(
    measured: float,
    stderr: float,
    theory: float | None,
    systematic: float,
    approximate: bool = False,
    z: float = Z,
) -> str:
    """The verdict of a row: ``"no theory"`` without theory, ``"approximate"`` for an approximate theory,
    else ``"ok"`` when ``|measured - theory| <= z * stderr + systematic`` (all finite), ``"FAIL"`` otherwise
    (the rule of :func:`meanfield.compare.passes`)."""
    if theory is None:
        return "no theory"
    if approximate:
        return "approximate"
    return "ok" if passes(theory, measured, stderr, z, systematic) else "FAIL"


@dataclass(frozen=True)
class Audit(Result):
    """The result of :func:`audit`.

    Attributes
    ----------
    rows : tuple of AuditRow
        layer | quantity | measured | standard error | theory | verdict, in forward order.
    layers : tuple of str
        The audited layers in forward order.
    depth : int
        Number of audited layers.
    phase : str
        ``"ordered"``, ``"critical"``, ``"chaotic"`` (the dense mean-field phase of the hidden
        layers' activation, ``sigma_w2``, ``sigma_b2``), or ``"unknown"`` (mixed or unknown
        layers, user activations).
    chi_1, xi_q, xi_c : float or None
        chi_1 and the depth scales at the fixed point (``inf`` at criticality); ``None`` with an
        unknown phase.
    n_inits, n_inputs : int
    source : str
        Where the theory's ``sigma_w2`` / ``sigma_b2`` came from.
    n_checked : int
        Weight layers with at least one row compared with theory (verdict ``ok`` or ``FAIL``).
    n_weight_layers : int
        Weight layers measured.
    """

    rows: tuple
    layers: tuple
    depth: int
    phase: str
    chi_1: float | None
    xi_q: float | None
    xi_c: float | None
    n_inits: int
    n_inputs: int
    source: str
    n_checked: int = 0
    n_weight_layers: int = 0

    @property
    def failed(self) -> tuple:
        """Rows whose verdict is ``FAIL``."""
        return tuple(r for r in self.rows if r.verdict == "FAIL")

    @property
    def passed(self) -> bool:
        """True when no row failed and at least one weight layer was compared with theory
        (rows without theory are not passes)."""
        return not self.failed and self.n_checked > 0

    @property
    def checked_fraction(self) -> float:
        """``n_checked / n_weight_layers`` (0 without weight layers)."""
        return self.n_checked / self.n_weight_layers if self.n_weight_layers else 0.0

    @property
    def flagged_layers(self) -> tuple:
        """Names of the layers with a failing row, in forward order."""
        seen = []
        for r in self.failed:
            if r.layer not in seen:
                seen.append(r.layer)
        return tuple(seen)

    def column(self, quantity: str) -> dict:
        """``{"index", "measured", "stderr", "theory", "tolerance"}`` arrays of one quantity (theory NaN where none)."""
        if quantity not in QUANTITIES:
            raise ValueError(f"quantity must be one of {QUANTITIES}, got {quantity!r}")
        rows = [r for r in self.rows if r.quantity == quantity]
        return {
            "index": np.array([r.index for r in rows], dtype=int),
            "measured": np.array([r.measured for r in rows]),
            "stderr": np.array([r.stderr for r in rows]),
            "theory": np.array([np.nan if r.theory is None else r.theory for r in rows]),
            "tolerance": np.array([r.tolerance for r in rows]),
        }

    def summary(self) -> str:
        """One line: phase, chi_1, depth scales next to the depth, verdict counts."""
        counts = {v: sum(r.verdict == v for r in self.rows) for v in VERDICTS}
        scales = (
            f"chi_1 = {self.chi_1:.6g}, xi_q = {self.xi_q:.4g}, xi_c = {self.xi_c:.4g} vs depth {self.depth}"
            if self.chi_1 is not None
            else f"depth {self.depth}"
        )
        return (
            f"phase {self.phase} ({scales}); {counts['ok']} ok, {counts['FAIL']} FAIL, "
            f"{counts['no theory']} no theory, {counts['approximate']} approximate; "
            f"{self.n_checked}/{self.n_weight_layers} weight layers checked ({100 * self.checked_fraction:.0f}%) "
            f"({self.n_inits} initialisations, {self.n_inputs} inputs; theory from {self.source})"
        )

    def table(self) -> str:
        """The table ``layer | quantity | measured | std. error | theory | tolerance | verdict`` and the summary."""
        width = max([len(r.layer) for r in self.rows] + [5])
        head = f"{'#':>3} {'layer':<{width}} | {'quantity':<8} | {'measured':>11} | {'std. error':>10} | {'theory':>11} | {'tolerance':>9} | verdict"
        lines = [head, "-" * len(head)]
        for r in self.rows:
            th = "-" if r.theory is None else f"{r.theory:.6g}"
            tol = "-" if r.theory is None else f"{r.tolerance:.3g}"
            lines.append(
                f"{r.index:>3} {r.layer:<{width}} | {r.quantity:<8} | {r.measured:>11.6g} | {r.stderr:>10.3g} | "
                f"{th:>11} | {tol:>9} | {r.verdict}"
            )
        lines.append(self.summary())
        return "\n".join(lines)

    def to_dict(self) -> dict:
        """JSON-ready dict (rows as records; ``None`` for missing theory)."""
        return {
            "rows": [
                {
                    "layer": r.layer,
                    "index": r.index,
                    "quantity": r.quantity,
                    "measured": r.measured,
                    "stderr": r.stderr,
                    "theory": r.theory,
                    "systematic": r.systematic,
                    "tolerance": r.tolerance,
                    "verdict": r.verdict,
                    "note": r.note,
                }
                for r in self.rows
            ],
            "layers": list(self.layers),
            "depth": self.depth,
            "phase": self.phase,
            "chi_1": self.chi_1,
            "xi_q": self.xi_q,
            "xi_c": self.xi_c,
            "n_inits": self.n_inits,
            "n_inputs": self.n_inputs,
            "source": self.source,
            "n_checked": self.n_checked,
            "n_weight_layers": self.n_weight_layers,
            "z": Z,
        }

    def plot(self, path: Any = None, title: str | None = None):
        """The signal-propagation picture: q^l, c^l and gradient second moments per layer, measured
        (points with error bars, red where the verdict is FAIL) with the theory overlaid (line).

        Parameters
        ----------
        path : str or pathlib.Path, optional
            Also save the figure there (PNG).
        title : str, optional

        Returns
        -------
        matplotlib.figure.Figure
        """
        import matplotlib.pyplot as plt

        panels = [q for q in ("q", "q_layer", "c", "grad", "kurtosis") if any(r.quantity == q for r in self.rows)]
        fig, axes = plt.subplots(1, len(panels), figsize=(3.6 * len(panels), 3.2), squeeze=False)
        labels = {
            "q": "pre-activation second moment $q^l$",
            "q_layer": "$q^l$ given the layer's measured input",
            "c": "mean input correlation $c^l$",
            "grad": r"gradient second moment $\tilde q^l$",
            "kurtosis": r"kurtosis $\langle h^4\rangle/\langle h^2\rangle^2$",
        }
        for ax, quantity in zip(axes[0], panels):
            col = self.column(quantity)
            rows = [r for r in self.rows if r.quantity == quantity]
            bad = np.array([r.verdict == "FAIL" for r in rows], dtype=bool)
            good = ~bad
            ax.errorbar(
                col["index"][good],
                col["measured"][good],
                yerr=Z * col["stderr"][good],
                fmt="o",
                ms=3,
                color="#1b3a9c",
                label="measured ($\\pm z$ s.e.)",
            )
            if bad.any():
                ax.errorbar(
                    col["index"][bad],
                    col["measured"][bad],
                    yerr=Z * col["stderr"][bad],
                    fmt="s",
                    ms=4,
                    color="#d62828",
                    label="FAIL",
                )
            has = np.isfinite(col["theory"])
            if has.any():
                ax.plot(col["index"][has], col["theory"][has], "-", color="0.15", lw=1.2, label="mean-field theory")
            ax.set_xlabel("layer l")
            ax.set_ylabel(labels[quantity])
            if quantity in ("q", "q_layer", "grad") and np.all(col["measured"] > 0):
                ax.set_yscale("log")
            ax.legend(fontsize=7)
        fig.suptitle(title or f"meanfield audit: {self.summary()}", fontsize=8)
        fig.tight_layout()
        if path is not None:
            fig.savefig(path, dpi=120, bbox_inches="tight")
        return fig


# --- inputs ------------------------------------------------------------------------------------------


def _first_weight_layer(model):
    for m in model.modules():
        if isinstance(m, (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d)):
            return m
    raise ValueError("model has no Linear or Conv layer to audit")


def prepare_inputs(model: Any, inputs: Any = "digits", n_inputs: int = MAX_INPUTS) -> Any:
    """The first ``n_inputs`` inputs as a float tensor shaped for ``model``'s first layer.

    Parameters
    ----------
    model : torch.nn.Module
    inputs : "digits", torch.Tensor, numpy array, or a DataLoader batch ``(x, y)``
        ``"digits"``: the embedded 8 x 8 digits (:func:`meanfield.data.load_digits`, standardised per
        feature), shaped ``(D, 64)`` for a ``Linear`` first layer, ``(D, 1, 64)`` for ``Conv1d`` and
        ``(D, 1, 8, 8)`` for ``Conv2d`` (one input channel).
    n_inputs : int
        Inputs kept (2 to 64; the first ones).

    Returns
    -------
    torch.Tensor
        In the dtype and on the device of the model's first weight.

    Raises
    ------
    TypeError
        Inputs of an unsupported type, complex or non-numeric.
    ValueError
        Non-finite inputs, fewer than 2 inputs, shapes the first layer cannot take.
    """
    n_inputs = check_int(n_inputs, "n_inputs", 2, 64)
    first = _first_weight_layer(model)
    if isinstance(inputs, str):
        if inputs != "digits":
            raise ValueError(f"inputs must be 'digits', a tensor or a DataLoader batch, got the string {inputs!r}")
        from ..data import load_digits

        x = torch.from_numpy(load_digits(n_samples=n_inputs, standardized=True).x)
        leaves = [m for m in model.modules() if not list(m.children())]
        if leaves and isinstance(leaves[0], (nn.Unflatten, nn.Flatten)):
            pass  # the model reshapes the 64 features itself
        elif isinstance(first, nn.Conv2d):
            if first.in_channels != 1:
                raise ValueError(
                    f"the digits are one-channel 8 x 8 images; the model's first Conv2d takes {first.in_channels} channels"
                )
            x = x.reshape(-1, 1, 8, 8)
        elif isinstance(first, nn.Conv1d):
            if first.in_channels != 1:
                raise ValueError(
                    f"the digits are one-channel signals of length 64; the first Conv1d takes {first.in_channels} channels"
                )
            x = x.reshape(-1, 1, 64)
        elif isinstance(first, nn.Linear) and first.in_features != 64:
            raise ValueError(f"the digits have 64 features; the model's first Linear takes {first.in_features}")
    else:
        if isinstance(inputs, (list, tuple)) and inputs:  # a DataLoader batch (x, y, ...)
            inputs = inputs[0]
        if isinstance(inputs, np.ndarray):
            if inputs.dtype == np.bool_ or inputs.dtype.kind not in "iuf":
                raise TypeError(f"inputs must hold real numbers, got dtype {inputs.dtype}")
            inputs = torch.from_numpy(np.ascontiguousarray(inputs, dtype=np.float64))
        if not isinstance(inputs, torch.Tensor):
            raise TypeError(
                f"inputs must be 'digits', a torch.Tensor, a NumPy array or a DataLoader batch, got {type(inputs).__name__}"
            )
        if inputs.is_complex() or inputs.dtype == torch.bool:
            raise TypeError(f"inputs must hold real numbers, got dtype {inputs.dtype}")
        x = inputs.detach()[:n_inputs]
    if x.dim() < 2 or x.shape[0] < 2:
        raise ValueError(f"inputs must be a batch of at least 2 inputs (batch, ...), got shape {tuple(x.shape)}")
    if not bool(torch.isfinite(x).all()):
        raise ValueError("inputs must be finite (no NaN or infinity)")
    if not x.is_floating_point() and any(isinstance(m, nn.Embedding) for m in model.modules()):
        return x.to(device=first.weight.device)  # token indices for an embedding
    x = x.to(dtype=first.weight.dtype, device=first.weight.device)
    if not bool(torch.isfinite(x).all()):
        raise ValueError(f"inputs overflow the model's dtype {first.weight.dtype}: rescale them")
    return x


# --- theory ------------------------------------------------------------------------------------------


class _NoTheory(Exception):
    """Raised inside the theory walk where no theory covers a module."""


@dataclass
class _State:
    """Mean-field state of a tensor: second moments over units, per (input, position)."""

    cov: np.ndarray  # (D P, D P), index a * P + alpha
    mean: np.ndarray  # (D P,)
    shape: tuple  # spatial shape (() for dense)
    gaussian: bool  # zero-mean Gaussian units (pre-activations)
    flat: bool = False
    approximate: bool = False

    @property
    def positions(self) -> int:
        return int(math.prod(self.shape)) if self.shape else 1


def _mean_phi(act: Activation, q: np.ndarray) -> np.ndarray:
    """E phi(sqrt(q) z) (Gauss-Hermite, 200 nodes; 0 for odd activations)."""
    z, w = hermite_rule(200)
    s = np.sqrt(np.maximum(q, 0.0))[:, None] * z[None, :]
    with np.errstate(all="ignore"):
        vals = np.asarray(act.phi(s.ravel()), dtype=np.float64).reshape(s.shape)
    return vals @ w


def _diag_blocks(state: _State) -> np.ndarray:
    """``K_ab = mean_alpha cov[(a, alpha), (b, alpha)]``: the dense second moments (D, D)."""
    p = state.positions
    d = state.cov.shape[0] // p
    blocks = state.cov.reshape(d, p, d, p)
    return np.einsum("apbp->ab", blocks) / p


class _Theory:
    """Walks a model and predicts every audited layer's output state."""

    def __init__(self, params: dict, d: int):
        self.params = params  # module -> (sigma_w2, sigma_b2, v or None, note)
        self.d = d
        self.out: dict = {}  # module -> (_State of its output, stopped: bool)
        self.trace: list = []  # (module, kind, input state, extra) for the backward pass
        self.plain = True  # a plain stack (backward theory available)
        self.kurtosis_ok = True

    def linear(self, m, s: _State) -> _State:
        if m not in self.params:
            raise _NoTheory(f"{type(m).__name__} without a mean-field initialisation")
        sw, sb, _v, _note = self.params[m]
        if s.positions > 1 and not s.flat:
            raise _NoTheory("Linear on a spatial tensor without Flatten")
        k = _diag_blocks(s) if s.positions > 1 else s.cov
        out = _State(sw * k + sb, np.zeros(self.d), (), True, approximate=s.approximate)
        self.trace.append((m, "linear", s, sw))
        self.out[m] = out
        return out

    def convolution(self, m, s: _State) -> _State:
        if m not in self.params:
            raise _NoTheory(f"{type(m).__name__} without a mean-field initialisation")
        sw, sb, v, _note = self.params[m]
        k = m.kernel_size
        if m.stride != (1,) * len(k) or m.dilation != (1,) * len(k) or m.groups != 1:
            raise _NoTheory("convolution with stride, dilation or groups")
        if tuple(m.padding) != tuple(s_ // 2 for s_ in k) or any(s_ % 2 == 0 for s_ in k):
            raise _NoTheory("convolution that does not keep the spatial size (padding k // 2, odd k)")
        approximate = s.approximate or m.padding_mode != "circular"
        if s.flat or len(s.shape) != len(k):
            raise _NoTheory("convolution on a tensor of another spatial rank")
        p = s.positions
        va = np.asarray(v, dtype=np.float64) if v is not None else np.full(k, 1.0 / math.prod(k))
        blocks = s.cov.reshape(self.d, p, self.d, p).transpose(0, 2, 1, 3)
        avg = mf_conv.average(np.ascontiguousarray(blocks), va, s.shape)
        cov = sw * avg.transpose(0, 2, 1, 3).reshape(self.d * p, self.d * p) + sb
        out = _State(cov, np.zeros(self.d * p), s.shape, True, approximate=approximate)
        self.trace.append((m, "conv", s, (sw, va)))
        self.out[m] = out
        return out

    def activation(self, m, s: _State) -> _State:
        if not s.gaussian:
            raise _NoTheory("activation of a non-Gaussian signal")
        act = resolve_activation(m)
        cov = 0.5 * (s.cov + s.cov.T)
        k = dense.covariance_map(cov, act, 1.0, 0.0)
        mean = _mean_phi(act, np.diag(cov))
        self.trace.append((m, "activation", s, act))
        if not (act.is_builtin and (act.name in ("relu", "linear") or act.name.startswith("leaky_relu"))):
            self.kurtosis_ok = False
        return _State(k, mean, s.shape, False, s.flat, s.approximate)

    def pool(self, m, s: _State) -> _State:
        out_size = m.output_size
        sizes = (out_size,) if isinstance(out_size, int) else tuple(out_size)
        if any(o != 1 for o in sizes):
            raise _NoTheory("adaptive pooling to a size other than 1")
        p = s.positions
        blocks = s.cov.reshape(self.d, p, self.d, p)
        cov = blocks.mean(axis=(1, 3))
        mean = s.mean.reshape(self.d, p).mean(axis=1)
        self.trace.append((m, "pool", s, p))
        return _State(cov, mean, (), s.gaussian, False, s.approximate)

    def residual(self, m, s: _State) -> _State:
        self.plain = False
        f = self.walk(m.branch, s)
        cov = s.cov + f.cov + np.outer(s.mean, f.mean) + np.outer(f.mean, s.mean)
        gaussian = s.gaussian and f.gaussian
        return _State(cov, s.mean + f.mean, s.shape, gaussian, s.flat, s.approximate or f.approximate)

    def orhan(self, m, s: _State) -> _State:
        from .modules import OrhanNet

        assert isinstance(m, OrhanNet)
        self.plain = False
        x1 = self.linear(m.embed, s)
        comps = [(x1.cov, x1.mean)]  # unit-wise independent components
        coef = [np.array([1.0])]  # x_l = sum_j coef[l][j] comps[j]

        def moments(a):
            n = len(comps)
            a = np.pad(a, (0, n - a.size))
            means = np.array([c[1] for c in comps])  # (n, D)
            mean = a @ means
            cov = np.einsum("i,ij,k,kl->jl", a, means, a, means)  # cross terms m_i m_k^T ...
            for i in range(n):  # ... with the diagonal terms replaced by the components' own moments
                cov += a[i] ** 2 * (comps[i][0] - np.outer(means[i], means[i]))
            return cov, mean

        act_module = m.act
        for l, layer in enumerate(m.layers, start=1):
            cov, mean = moments(coef[-1])
            h = self.linear(layer, _State(cov, mean, (), False))
            phi = self.activation(act_module, h)
            comps.append((phi.cov, phi.mean))
            n = len(comps)
            new = np.zeros(n)
            new[-1] = 1.0
            if m.architecture in ("residual", "hyper_residual"):
                new[: coef[-1].size] += coef[-1]
            if m.architecture == "hyper_residual" and l >= 2:
                for a in coef[:-1]:
                    new[: a.size] += a / (l - 1)
            if m.architecture == "path_residual":
                _cov_x, mean_x = moments(coef[-1])
                comps.append((np.outer(mean_x, mean_x), mean_x))
                new = np.append(new, 1.0)
            coef.append(new)
        cov, mean = moments(coef[-1])
        return self.linear(m.head, _State(cov, mean, (), False))

    def walk(self, module, s: _State) -> _State:
        from .modules import OrhanNet, Residual

        if isinstance(module, nn.Sequential):
            for child in module:
                s = self.walk(child, s)
            return s
        if isinstance(module, Residual):
            return self.residual(module, s)
        if isinstance(module, OrhanNet):
            return self.orhan(module, s)
        if isinstance(module, nn.Linear):
            return self.linear(module, s)
        if isinstance(module, (nn.Conv1d, nn.Conv2d)):
            return self.convolution(module, s)
        if is_activation_module(module) and not isinstance(module, nn.Identity):
            return self.activation(module, s)
        if isinstance(module, (nn.Identity, nn.Dropout)):
            return s
        if isinstance(module, nn.Flatten):
            if module.start_dim != 1 or module.end_dim != -1:
                raise _NoTheory("Flatten over other dimensions")
            self.trace.append((module, "flatten", s, None))
            return _State(s.cov, s.mean, s.shape, s.gaussian, True, s.approximate)
        if isinstance(module, (nn.AdaptiveAvgPool1d, nn.AdaptiveAvgPool2d)):
            return self.pool(module, s)
        raise _NoTheory(f"{type(module).__name__} is outside the theory")

    def backward(self) -> dict:
        """Gradient second moments per (input, position) at every Linear / Conv output (plain stacks)."""
        grads = {}
        g = None
        for m, kind, s_in, extra in reversed(self.trace):
            if kind == "linear":
                if g is None:
                    g = np.ones(self.d)
                grads[m] = g.copy()
                sw = extra
                fan_out, fan_in = m.out_features, m.in_features
                p = s_in.positions
                g = np.repeat(sw * fan_out / fan_in * g, p)
            elif kind == "conv":
                sw, v = extra
                p = s_in.positions
                if g is None:
                    g = np.ones(self.d * p)
                grads[m] = g.copy()
                ga = g.reshape((self.d,) + s_in.shape)
                acc = np.zeros_like(ga)
                for index in zip(*np.nonzero(v)):
                    beta = tuple(int(j) - k // 2 for j, k in zip(index, v.shape))
                    acc += v[index] * np.roll(ga, beta, axis=tuple(range(1, 1 + len(beta))))
                g = (sw * m.out_channels / m.in_channels * acc).reshape(-1)
            elif kind == "activation":
                if g is None:
                    return grads
                g = g * expectation(extra, np.maximum(np.diag(s_in.cov), 0.0), (1, 1))  # E phi'(h)^2
            elif kind == "pool":
                if g is None:
                    return grads
                g = np.repeat(g, extra) / extra**2
            # flatten: unchanged
        return grads


#: Entries of the end-to-end theory's covariance (D P)^2 beyond which it is not computed (float64: 32 MB;
#: its covariance and activation maps cost seconds there, growing as (D P)^2 to (D P)^3).
_MAX_COVARIANCE_ENTRIES = 2**22


def _walk_obstacle(model, x) -> str:
    """Why the end-to-end walk of :class:`_Theory` cannot start on ``model`` (checked before building the
    (D P)^2 input covariance), or ``""``; a walk that starts stops where it meets an unknown module."""
    from .modules import OrhanNet, Residual

    known = (
        nn.Sequential,
        Residual,
        OrhanNet,
        nn.Linear,
        nn.Conv1d,
        nn.Conv2d,
        nn.Identity,
        nn.Dropout,
        nn.Flatten,
        nn.AdaptiveAvgPool1d,
        nn.AdaptiveAvgPool2d,
    )

    def blocker(module):
        if isinstance(module, (OrhanNet, Residual)):
            return None  # walked by their own rules, which raise where they stop
        if isinstance(module, nn.Sequential):  # the walk goes as far as it can: its first module decides
            return blocker(module[0]) if len(module) else None
        if isinstance(module, known) or (is_activation_module(module) and not isinstance(module, nn.Identity)):
            return None
        return module

    b = blocker(model)
    if b is not None:
        return f"{type(b).__name__} is outside the end-to-end theory (layer-local rows: q_layer)"
    positions = math.prod(int(s) for s in x.shape[2:]) if x.dim() > 2 else 1
    if (x.shape[0] * positions) ** 2 > _MAX_COVARIANCE_ENTRIES:
        return (
            f"end-to-end theory not computed: its covariance over {x.shape[0]} inputs x {positions} positions "
            "is too large (layer-local rows: q_layer)"
        )
    return ""


def _layer_params(module, source: dict) -> tuple | None:
    """(sigma_w2, sigma_b2, v, note) declared by the module's InitSpec, or None."""
    spec = recorded_spec(module)
    if spec is None or spec.method not in _MEAN_FIELD_METHODS:
        return None
    if getattr(module, "bias", None) is None:
        sb, note = 0.0, ""
    elif spec.sigma_b2 is not None:
        sb, note = spec.sigma_b2, ""
    else:  # a bias the initialiser left alone: fixed across re-initialisations, enters as its mean square
        sb, note = float(module.bias.detach().double().pow(2).mean()), "bias not re-drawn: its mean square"
    source["declared"] = source.get("declared", 0) + 1
    return (spec.sigma_w2, sb, spec.v, note)


# --- measurement ---------------------------------------------------------------------------------------


def _weight_layers(model) -> list:
    kinds = (nn.Linear, nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.Embedding)
    return [(name, m) for name, m in model.named_modules() if isinstance(m, kinds)]


def _reinit_mode(model, init) -> str:
    if init is not None:
        if not callable(init):
            raise TypeError(f"init must be a callable init(model, generator) or None, got {type(init).__name__}")
        return "callable"
    return "recorded"


def _has_spec(module) -> bool:
    return recorded_spec(module) is not None


def _reinitialise(model, mode, init, generator, seed):
    """``init(model, generator)``; or each layer's recorded initialiser, PyTorch's ``reset_parameters``
    (seeded from ``seed``) for the layers without a record."""
    if mode == "callable":
        with torch.no_grad():
            init(model, generator)
        return
    layers = [m for _, m in _weight_layers(model)]
    for m in layers:
        if _has_spec(m):
            reinitialise_(m, generator=generator)
    plain = [m for m in layers if not _has_spec(m)]
    if plain:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            for m in plain:
                m.reset_parameters()


def _torch_default_params(module) -> tuple:
    """PyTorch's default ``reset_parameters`` law: kaiming_uniform(a = sqrt(5)) -> sigma_w2 = 1/3; bias
    U(+-1/sqrt(fan_in)) -> sigma_b2 = 1 / (3 fan_in)."""
    if isinstance(module, nn.Embedding):  # normal_(0, 1): one row per token, fan-in 1
        return (1.0, 0.0, None, "PyTorch default init (normal)")
    fan_in = module.weight[0].numel()
    sb = 0.0 if module.bias is None else 1.0 / (3.0 * fan_in)
    return (1.0 / 3.0, sb, None, "PyTorch default init (uniform)")


def _jackknife_ratio(m4: np.ndarray, m2: np.ndarray) -> tuple[float, float]:
    """kurtosis mean(m4) / mean(m2)^2 over initialisations and its jackknife standard error."""
    n = m4.size
    full = m4.mean() / m2.mean() ** 2
    loo = np.array([(m4.sum() - m4[i]) / (n - 1) / ((m2.sum() - m2[i]) / (n - 1)) ** 2 for i in range(n)])
    se = math.sqrt((n - 1) / n * np.sum((loo - loo.mean()) ** 2))
    return float(full), float(se)


@renamed_kwargs(n_inits="n_networks")
def audit(
    model: Any,
    inputs: Any = "digits",
    n_inits: int | None = None,
    rng: Any = None,
    backward: bool = True,
    *,
    init: Any = None,
    n_inputs: int = MAX_INPUTS,
    inplace: bool = False,
) -> Audit:
    """Measure a model's signal propagation over re-initialisations and compare it with mean-field theory.

    Parameters
    ----------
    model : torch.nn.Module
        The model. The audit re-initialises a deep copy (``copy.deepcopy``) in ``eval()`` mode;
        the model itself is unchanged. The audit runs PyTorch with one intra-op thread (its
        batches are small), restoring the setting afterwards.
    inputs : "digits", torch.Tensor, numpy array or DataLoader batch
        See :func:`prepare_inputs`; the first ``n_inputs`` are used.
    n_networks : int or None
        Re-initialisations (2 to 10^4); the standard errors are over them. ``None`` (default): the
        power rule of the module docstring (10 to 200).
    rng : None, int, SeedSequence or numpy.random.Generator
        One independent stream per re-initialisation is spawned from it; each seeds a
        ``torch.Generator`` with ``int(stream.integers(2**63))``.
    backward : bool
        Also record gradient second moments (cotangent ``v ~ N(0, 1)`` at the output).
    init : callable, optional
        ``init(model, generator)`` re-initialises the model. Default: each layer's initialiser as
        recorded on its weight (``weight.meanfield_init``, set by :mod:`meanfield.pytorch.init`),
        and PyTorch's ``reset_parameters`` for a layer without a record (theory: its uniform law,
        ``sigma_w2 = 1/3``, ``sigma_b2 = 1 / (3 fan_in)``).
    n_inputs : int
        Inputs used (2 to 64).
    inplace : bool
        Re-initialise ``model`` itself instead of a copy (its parameters are then overwritten, its
        training mode restored); for models too large to copy.

    Returns
    -------
    Audit
        Per layer: ``q``, ``q_layer`` (layer-local), ``c``, ``kurtosis``, ``grad`` rows with verdicts;
        the phase and depth scales; ``table()``, ``plot()``.

    Raises
    ------
    TypeError
        ``model`` not an ``nn.Module``; bad ``inputs``, ``rng``, ``backward``, ``init``.
    ValueError
        ``n_inits`` out of range; inputs the model cannot take (wrong feature count, channels or
        shape: the forward pass's error is quoted); a model without weight layers or with
        parameters on the meta device; a forward pass that gives NaN or infinity.

    Notes
    -----
    The theory is that of the module docstring: Xiao et al. 2018 eqs. 2.2-2.7 and 2.16, Grzejdziak 2023 Prop. 4.3,
    and the residual recursion for identity skips (Orhan's architectures, eqs. 25-26).
    The theory's weight and bias variances are those the initialisers declared: a layer whose
    weights were changed after initialisation (mis-scaled) is flagged. With a custom ``init`` whose
    layers carry no declaration, the theory uses the measured ``fan_in * E W^2`` and ``E b^2``
    (averaged over the re-initialisations) and cannot flag a scale.

    Examples
    --------
    >>> import torch
    >>> from meanfield.pytorch import mlp, audit
    >>> net = mlp(128, 6, "tanh", init="critical", sigma_b2=0.05)
    >>> result = audit(net, "digits", n_networks=4, rng=0)
    >>> result.phase
    'critical'
    """
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    if n_inits is not None:
        n_inits = check_int(n_inits, "n_networks", 2, 10**4)
    backward = check_bool(backward, "backward")
    inplace = check_bool(inplace, "inplace")
    rng = check_rng(rng)
    mode = _reinit_mode(model, init)
    if any(t.is_meta for t in list(model.parameters()) + list(model.buffers())):
        raise ValueError(
            "model has parameters on the meta device (shapes without values): materialise them first, "
            "e.g. model.to_empty(device='cpu') and an initialiser"
        )
    if not inplace:
        import copy

        model = copy.deepcopy(model)
    x = prepare_inputs(model, inputs, n_inputs)
    d = int(x.shape[0])
    layers = _weight_layers(model)
    if not layers:
        raise ValueError("model has no Linear or Conv layer to audit")
    auto = n_inits is None
    was_training = model.training
    model.eval()
    records: dict = {m: {"q": [], "gram": [], "m4": [], "g": [], "u": [], "a": []} for _, m in layers}
    order: list = []
    calls: dict = {}
    measured_w: dict = {m: [] for _, m in layers}

    def forward_hook(module, inp, out):
        calls[module] = calls.get(module, 0) + 1
        if calls[module] > 1:
            return
        order.append(module)
        rec = records[module]
        h = out.detach().double().reshape(d, out.shape[1], -1).cpu().numpy()
        h2 = h**2
        rec["q"].append(np.mean(h2, axis=(1, 2)))
        rec["gram"].append(np.einsum("acp,bcp->ab", h, h) / (h.shape[1] * h.shape[2]))
        rec["m4"].append(np.mean(h**4, axis=(1, 2)))
        u, a = _local_statistics(module, inp[0], out)
        rec["u"].append(u)
        rec["a"].append(a)
        if backward and out.requires_grad:
            out.register_hook(
                lambda g, rec=rec: rec["g"].append(
                    float(
                        np.mean(np.mean(g.detach().double().reshape(d, g.shape[1], -1).cpu().numpy() ** 2, axis=(1, 2)))
                    )
                )
            )

    handles = [m.register_forward_hook(forward_hook) for _, m in layers]
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # batches of <= 64 inputs: thread start-up would dominate
    k, n_inits_target = 0, N_INITS_MIN
    try:
        while True:
            if not auto and k >= n_inits:
                break
            if auto and k >= 1 and k >= n_inits_target:
                break
            (stream,) = rng.spawn(1)  # the k-th child: the same streams as rng.spawn(n_inits)
            seed = int(stream.integers(2**63))
            generator = torch.Generator(device="cpu").manual_seed(seed)
            _reinitialise(model, mode, init, generator, seed)
            for _, m in layers:
                w = m.weight.detach().double()
                b = getattr(m, "bias", None)
                bias = 0.0 if b is None else float(b.detach().double().pow(2).mean())
                fan_in = 1 if isinstance(m, nn.Embedding) else w[0].numel()
                measured_w[m].append((float(w.pow(2).mean()) * fan_in, bias))
            calls.clear()
            if k > 0:
                order.clear()
            xin = x.clone()
            with torch.set_grad_enabled(backward):
                try:
                    out = model(xin)
                except (RuntimeError, IndexError) as exc:
                    raise ValueError(
                        f"inputs of shape {tuple(x.shape)} cannot be fed to the model: "
                        f"{(str(exc).splitlines() or [''])[0]}"
                    ) from exc
                if not isinstance(out, torch.Tensor):
                    raise ValueError(f"model must return a tensor, got {type(out).__name__}")
                if not bool(torch.isfinite(out).all()):
                    raise ValueError("the model's output is NaN or infinite for these inputs and this initialisation")
                if backward:
                    cot = torch.randn(out.shape, generator=generator, dtype=out.dtype)
                    out.backward(cot.to(out.device))
            model.zero_grad(set_to_none=True)
            if auto and k == 0:
                n_inits_target = _power_n_inits(records, order, measured_w)
            k += 1
    finally:
        for h in handles:
            h.remove()
        model.train(was_training)
        torch.set_num_threads(threads)
    n_inits = k
    shared = {m for m, n in calls.items() if n > 1}

    # theory parameters
    source: dict = {}
    params = {}
    for _, m in layers:
        if mode == "recorded" and not _has_spec(m):
            params[m] = _torch_default_params(m)
            source["PyTorch default init"] = 1
            continue
        p = _layer_params(m, source)
        if p is None and mode == "callable":
            sw = float(np.mean([a for a, _ in measured_w[m]]))
            sb = float(np.mean([b for _, b in measured_w[m]]))
            p = (sw, sb, None, "theory from the measured weight variance")
            source["measured weight variances"] = 1
        if p is not None:
            params[m] = p
    src = ", ".join(k if k != "declared" else "the initialisers' declarations" for k in source) or "nothing"

    theory = _Theory(params, d)
    x_np = x.detach().double().cpu().numpy().reshape(d, -1)
    first = layers[0][1]
    stopped_reason = _walk_obstacle(model, x)
    try:
        if stopped_reason:
            raise _NoTheory(stopped_reason)
        if isinstance(first, (nn.Conv1d, nn.Conv2d)):
            c_in = first.in_channels
            shape = tuple(int(s) for s in x.shape[2:])
            xs = x.detach().double().cpu().numpy().reshape(d, c_in, -1)  # (D, C, P)
            cov0 = np.einsum("acp,bcq->apbq", xs, xs).reshape(d * xs.shape[2], d * xs.shape[2]) / c_in
            s0 = _State(cov0, xs.mean(axis=1).reshape(-1), shape, False)
        else:
            s0 = _State(x_np @ x_np.T / x_np.shape[1], x_np.mean(axis=1), (), False)
        theory.walk(model, s0)
    except _NoTheory as exc:
        stopped_reason = str(exc)
    except ValueError as exc:  # e.g. a covariance beyond the float64 range: measured, not guessed
        stopped_reason = f"theory not computable: {(str(exc).splitlines() or [''])[0]}"
    grads = theory.backward() if (backward and theory.plain and not stopped_reason) else {}

    # kurtosis theory (Grzejdziak 2023 Prop. 4.3): Linear stack, Gaussian weights, no bias, relu-family
    kurt_theory = _kurtosis_theory(model, layers, params, theory, stopped_reason)

    name_of = {m: n for n, m in layers}
    widths = {m: getattr(m, "in_features", getattr(m, "in_channels", math.inf)) for _, m in layers}
    rows = []
    z = z_for(n_inits)
    n_eff = math.inf
    for index, m in enumerate(order, start=1):
        if index > 1:
            n_eff = min(n_eff, widths[m])
        rec = records[m]
        q_k = np.stack(rec["q"])  # (K, D)
        q_meas = q_k.mean(axis=1)
        name = name_of[m] or type(m).__name__
        state = theory.out.get(m)
        note = params.get(m, (None, None, None, ""))[3]
        if m in shared:
            state, note = None, "module called more than once: first call measured, no theory"
        elif state is None:
            note = stopped_reason or note or "no mean-field initialisation declared"
        approx = bool(state is not None and state.approximate)
        if approx:
            note = "zero padding: computed as circular, approximate at the borders"
        # q
        th_q = None
        if state is not None:
            p = state.positions
            diag = np.diag(state.cov).reshape(d, p).mean(axis=1)
            th_q = float(diag.mean())
        rows.append(_row(name, index, "q", q_meas, th_q, FINITE_WIDTH_BIAS(th_q or 0.0, index, n_eff), approx, note, z))
        rows.append(_local_row(name, index, m, rec, params.get(m), m in shared))
        # c
        g_ab = np.stack(rec["gram"])  # (K, D, D)
        iu = np.triu_indices(d, 1)
        gd = np.diagonal(g_ab, axis1=1, axis2=2)
        den = np.sqrt(gd[:, :, None] * gd[:, None, :])
        corr = np.divide(g_ab, den, out=np.zeros_like(g_ab), where=den > 0)  # a silent (all-zero) signal: 0
        c_k = corr[:, iu[0], iu[1]].mean(axis=1)
        th_c = None
        if state is not None:
            p = state.positions
            blocks = state.cov.reshape(d, p, d, p)
            kab = np.einsum("apbp->ab", blocks) / p
            if np.all(np.diag(kab) > 0):
                th_c = float((kab / np.sqrt(np.outer(np.diag(kab), np.diag(kab))))[iu].mean())
        silent = bool(np.any(q_k.mean(axis=0) == 0))
        cnote = "undefined for a zero signal (reported as 0)" if silent else note
        rows.append(
            _row(
                name, index, "c", c_k, None if silent else th_c, FINITE_WIDTH_BIAS(1.0, index, n_eff), approx, cnote, z
            )
        )
        # kurtosis
        m4 = np.stack(rec["m4"])  # (K, D)
        if silent:
            kval, kerr, th_k = 0.0, 0.0, None
        else:
            kur, kse = zip(*(_jackknife_ratio(m4[:, a], q_k[:, a]) for a in range(d)))
            kval, kerr = float(np.mean(kur)), float(math.sqrt(np.sum(np.square(kse))) / d)
            th_k = kurt_theory.get(m)
        rows.append(
            AuditRow(
                name,
                index,
                "kurtosis",
                kval,
                kerr,
                th_k,
                0.0,
                verdict(kval, kerr, th_k, 0.0, approx, z),
                "Grzejdziak 2023 Prop. 4.3 (exact at finite width); jackknife s.e., optimistic for large kurtosis"
                if th_k is not None
                else "undefined for a zero signal (reported as 0)"
                if silent
                else "kurtosis recursion applies to bias-free Gaussian ReLU-family Linear stacks only",
                z,
            )
        )
        # gradients
        if backward and rec["g"]:
            g_k = np.array(rec["g"])
            th_g = None
            gnote = note
            if m in grads and state is not None:
                th_g = float(grads[m].mean())
            elif state is not None:
                gnote = "backward theory for plain stacks only"
            depth_total = len(order)
            rows.append(
                _row(
                    name, index, "grad", g_k, th_g, FINITE_WIDTH_BIAS(th_g or 0.0, depth_total, n_eff), approx, gnote, z
                )
            )

    phase, chi_1, xi_q, xi_c = _phase(theory, params)
    n_dropped = len(layers) - len(order)
    if n_dropped:
        src += f"; {n_dropped} layer(s) never called"
    return Audit(
        rows=tuple(rows),
        layers=tuple(name_of[m] for m in order),
        depth=len(order),
        phase=phase,
        chi_1=chi_1,
        xi_q=xi_q,
        xi_c=xi_c,
        n_inits=n_inits,
        n_inputs=d,
        source=src,
        n_checked=len({r.layer for r in rows if r.verdict in ("ok", "FAIL")}),
        n_weight_layers=len(order),
    )


def _row(name, index, quantity, samples, theory, systematic, approx, note, z) -> AuditRow:
    samples = np.asarray(samples, dtype=np.float64)
    mean = float(samples.mean())
    se = float(samples.std(ddof=1) / math.sqrt(samples.size))
    return AuditRow(
        name,
        index,
        quantity,
        mean,
        se,
        theory,
        systematic if theory is not None else 0.0,
        verdict(mean, se, theory, systematic, approx, z),
        note,
        z,
    )


def _local_statistics(module, x, out) -> tuple:
    """Per output unit ``i``: the measured ``u_i = <h_i^2>`` (mean over inputs and positions) and the
    input statistic ``a_i`` of the layer-local prediction ``E[u_i | input] = sigma_w2 a_i + sigma_b2``.

    ``a_i = <sum_{c, beta} v_beta x_c(p + beta)^2> / c_in`` over the taps that the output position
    ``p`` sees (stride, dilation, groups, padding of the module: zero padding contributes nothing,
    the other modes pad the squared input as the layer pads its input), ``c_in`` the input
    channels of unit ``i``'s group; for ``Linear``, ``<|x|^2> / in_features``.
    """
    import torch.nn.functional as F

    h = out.detach().double()
    if isinstance(module, nn.Embedding):  # h = W[token]: E[h_i^2 | tokens] = sigma_w2 (0 for padding_idx)
        n_units = h.shape[-1]
        u = h.pow(2).reshape(-1, n_units).mean(dim=0)
        looked_up = 1.0 if module.padding_idx is None else float((x != module.padding_idx).double().mean())
        return u.cpu().numpy(), np.full(n_units, looked_up)
    x = x.detach().double()
    if isinstance(module, nn.Linear):
        n_units = h.shape[-1]
        u = h.pow(2).reshape(-1, n_units).mean(dim=0)
        a = torch.full((n_units,), float(x.pow(2).sum(dim=-1).mean()) / module.in_features, dtype=torch.float64)
        return u.cpu().numpy(), a.numpy()
    n_units = h.shape[1]
    dims = len(module.kernel_size)
    u = h.pow(2).transpose(0, 1).reshape(n_units, -1).mean(dim=1)
    g = module.groups
    c_g = module.in_channels // g
    x2 = x.pow(2)
    s = x2.reshape(x2.shape[0], g, c_g, *x2.shape[2:]).sum(dim=2)  # (N, groups, *spatial)
    spec = recorded_spec(module)
    if spec is not None and spec.v is not None and spec.method in _MEAN_FIELD_METHODS:
        v = torch.as_tensor(np.asarray(spec.v, dtype=np.float64))
    else:
        v = torch.full(tuple(module.kernel_size), 1.0 / math.prod(module.kernel_size), dtype=torch.float64)
    kernel = (v / c_g).to(s.device).expand(g, 1, *v.shape).contiguous()
    conv = (F.conv1d, F.conv2d, F.conv3d)[dims - 1]
    if module.padding_mode != "zeros":
        s = F.pad(s, module._reversed_padding_repeated_twice, mode=module.padding_mode)
        padding = 0
    else:
        padding = module.padding
    per_group = conv(s, kernel, None, module.stride, padding, module.dilation, g)  # (N, groups, *out)
    a_group = per_group.transpose(0, 1).reshape(g, -1).mean(dim=1)
    a = a_group.repeat_interleave(module.out_channels // g)
    return u.cpu().numpy(), a.cpu().numpy()


def _local_row(name, index, module, rec, param, shared) -> AuditRow:
    """The layer-local ``q`` row: the measured ``<h^2>`` against its prediction from the layer's
    measured input, the standard error from the unit-wise residuals (independent given the input)."""
    u = np.stack(rec["u"])  # (K, units)
    a = np.stack(rec["a"])
    measured = float(u.mean())
    note = "predicted from the layer's measured input (layer-local)"
    if shared:
        note += "; module called more than once: its first call"
    spec = recorded_spec(module)
    if param is None:
        reason = "no mean-field initialisation declared"
        return AuditRow(name, index, "q_layer", measured, 0.0, None, 0.0, "no theory", reason, Z)
    if isinstance(module, nn.Embedding) and module.max_norm is not None:
        reason = "embedding with max_norm: rows renormalised on lookup"
        return AuditRow(name, index, "q_layer", measured, 0.0, None, 0.0, "no theory", reason, Z)
    if spec is not None and spec.method == "orthogonal_conv_":
        reason = "orthogonal_conv_ kernels correlate their taps: no prediction given one input"
        return AuditRow(name, index, "q_layer", measured, 0.0, None, 0.0, "no theory", reason, Z)
    sw, sb = param[0], param[1]
    pred = sw * a + sb
    resid = (u - pred).ravel()
    n = resid.size
    se = float(resid.std(ddof=1) / math.sqrt(n)) if n > 1 else math.inf
    theory = float(pred.mean())
    z = z_for(n) if n > 1 else Z
    return AuditRow(
        name, index, "q_layer", measured, se, theory, 0.0, verdict(measured, se, theory, 0.0, False, z), note, z
    )


def _power_n_inits(records, order, measured_w) -> int:
    """Re-initialisations for which a relative deviation :data:`DETECTABLE_Q_DEVIATION` of the first
    layer's ``q`` is flagged with power ``Phi(POWER_Z)`` (95 %): the smallest ``K`` with
    ``(Z + POWER_Z) se_1 / sqrt(K) <= DETECTABLE_Q_DEVIATION`` for the relative standard error
    ``se_1`` of one initialisation (from the units' residuals of the first layer), clipped to
    ``[N_INITS_MIN, N_INITS_MAX]``."""
    if not order:
        return N_INITS_MIN
    m = order[0]
    u, a = records[m]["u"][0], records[m]["a"][0]
    sw, sb = measured_w[m][0]
    pred = sw * a + sb
    if u.size < 2:
        return N_INITS_MAX
    scale = float(pred.mean())
    if not scale > 0:
        return N_INITS_MIN
    rel = float((u - pred).std(ddof=1) / math.sqrt(u.size)) / scale
    k = math.ceil(((Z + POWER_Z) * rel / DETECTABLE_Q_DEVIATION) ** 2)
    return int(min(max(k, N_INITS_MIN), N_INITS_MAX))


def _kurtosis_theory(model, layers, params, theory, stopped) -> dict:
    """kappa of every layer's pre-activations by Grzejdziak's recursion where it applies, else {}."""
    if stopped or not theory.plain or not theory.kurtosis_ok:
        return {}
    mods = [m for _, m in layers]
    if not all(isinstance(m, nn.Linear) for m in mods):
        return {}
    slopes = set()
    for m in mods:
        spec = recorded_spec(m)
        if spec is None or not spec.gaussian or m not in params or params[m][1] != 0.0:
            return {}
    for _m, kind, _s, extra in theory.trace:
        if kind == "activation":
            slopes.add(1.0 if extra.name == "linear" else extra.param)
    if len(slopes) != 1:
        return {}
    slope = slopes.pop()
    from .. import kurtosis

    # conditional on the inputs the first layer is exactly Gaussian: start at k^(1) = (3, 0)
    widths = [m.out_features for m in mods[:-1]]
    if not widths:
        return {mods[0]: 3.0}
    res = kurtosis.propagate(3.0, 0.0, widths, slope=slope)
    kappa = res.kappa
    return {m: float(kappa[i]) for i, m in enumerate(mods)}


def _phase(theory: _Theory, params: dict):
    """The dense fixed point of the hidden layers when they share activation and variances."""
    triples = set()
    prev_act = None
    for m, kind, _s, extra in theory.trace:
        if kind == "activation":
            prev_act = extra
        elif kind in ("linear", "conv") and prev_act is not None and m in params:
            sw, sb = params[m][0], params[m][1]
            triples.add((prev_act.name, round(sw, 12), round(sb, 12), prev_act.is_builtin))
    if len(triples) != 1:
        return "unknown", None, None, None
    _name, sw, sb, builtin = triples.pop()
    if not builtin:
        return "unknown", None, None, None
    act = next(e for _m, k, _s, e in theory.trace if k == "activation")
    try:
        fp = dense.fixed_point(act, sw, sb)
    except ValueError:
        return "unknown", None, None, None
    return fp.phase, float(fp.chi_1), float(fp.xi_q), float(fp.xi_c)
