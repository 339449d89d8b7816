"""The audit's rows, the verdict rule it shares with ``meanfield validate``, and the audit result."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from meanfield._deprecate import renamed_kwargs

from ..._checks import check_int
from ..._results import Result
from ...compare import Z_DEFAULT, passes, student_z
from .._torch import require_torch

torch = require_torch()
nn = torch.nn


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
#: Bounds of the default number of re-initialisations (``n_networks=None``).
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
    """Standard errors allowed with ``n_networks`` re-initialisations: the Student-t quantile of the two-sided
    level of :data:`Z` (``P = 2 Phi(-4.5) = 6.8e-6``) with ``n_networks - 1`` degrees of freedom (the
    standard error is itself estimated from ``n_networks`` samples); :data:`Z` from 200 on."""
    return student_z(check_int(n_inits, "n_networks", 2), Z)


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
        Weight layers measured, counting the query, key, value and out-projections of each
        ``nn.MultiheadAttention`` (their ``q_layer`` rows only; ``layers`` and ``depth`` list the
        modules called).
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
            marks = [(~bad, "o", 3, "#1b3a9c", "measured ($\\pm z$ s.e.)")]
            marks += [(bad, "s", 4, "#d62828", "FAIL")] if bad.any() else []
            for sel, fmt, ms, color, label in marks:
                ax.errorbar(
                    col["index"][sel],
                    col["measured"][sel],
                    yerr=Z * col["stderr"][sel],
                    fmt=fmt,
                    ms=ms,
                    color=color,
                    label=label,
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
