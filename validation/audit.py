"""The PyTorch bridge's audit against mean-field theory (needs the ``torch`` extra).

Rows: :func:`meanfield.pytorch.audit` of real PyTorch models -- a tanh MLP and a circular-padding
tanh CNN, each in the ordered, critical and chaotic phase -- at the first, a middle and the last
hidden layer (q^l and c^l) and the first layer's gradient second moment, each a
:class:`~meanfield.validation.report.Comparison` with the audit's own tolerance
(``z``: the Student-t quantile, for the number of re-initialisations, of the level of ``Z_DEFAULT``
standard errors (:func:`meanfield.pytorch.audit.z_for`), plus the finite-width bias
:data:`meanfield.pytorch.audit.FINITE_WIDTH_BIAS`, stated in advance); and the control: the same
critical MLP with one layer's weights doubled after initialisation, whose audit must flag that
layer. The control's row is "detected" (theory 1, estimate 1 when the audit flags the mis-scaled
layer and no other, 0 otherwise, so a control that is not detected FAILs the table).

Without PyTorch the module reports that it needs the torch extra and is skipped (``meanfield
validate`` does not fail on it).
"""

from __future__ import annotations

import importlib.util

from meanfield.checks import renamed_kwargs

from .report import Comparison
from .runner import check_run_arguments, main_for, progress

__all__ = ["POINTS", "run", "unavailable"]

#: tanh (sigma_w2, sigma_b2) per phase, as in validation.dense; None: the edge of chaos.
POINTS = {"ordered": (0.8, 0.05), "critical": (None, 0.05), "chaotic": (2.5, 0.05)}


def unavailable() -> str | None:
    """``"needs the torch extra (...)"`` when PyTorch is not installed, else None."""
    try:
        found = importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):
        found = False
    if found:
        try:
            import torch  # noqa: F401
        except ImportError:
            found = False
    if not found:
        return 'needs the torch extra (pip install "meanfield-theory[torch]"): skipped'
    return None


def _kwargs(sw, sb):
    return {"init": "critical", "sigma_b2": sb} if sw is None else {"init": "gaussian", "sigma_w2": sw, "sigma_b2": sb}


def _rows_of(result, label, layers):
    rows = []
    for r in result.rows:
        if r.theory is None or r.index not in layers or r.quantity not in ("q", "c", "grad"):
            continue
        if r.quantity == "grad" and r.index != 1:
            continue
        rows.append(
            Comparison(
                f"{label}: {r.quantity}^{r.index}",
                r.theory,
                r.measured,
                r.stderr,
                z=r.z,
                systematic=r.systematic,
                note="audit of a PyTorch model; z = Student-t quantile of Z_DEFAULT's level for the number of "
                "initialisations; systematic = finite-width bias (l - 1) / N",
            )
        )
    return rows


@renamed_kwargs(seed="rng")
def run(backend: str = "numpy", full: bool = False, seed: int = 0) -> list[Comparison]:
    """Audit rows of a tanh MLP and CNN at three phases, and the mis-scaled control (see the module docstring).

    The audit runs on the CPU with PyTorch (``backend`` is checked and otherwise ignored). Returns
    no rows when PyTorch is missing (:func:`unavailable` says so; ``meanfield validate`` skips the
    module). Raises ``TypeError``/``ValueError`` for bad arguments, before any work.
    """
    backend, full, seed = check_run_arguments(backend, full, seed)
    if unavailable():
        return []
    import numpy as np
    import torch

    from meanfield.pytorch import audit, critical_init_, mlp, periodic_cnn

    width, depth = (512, 30) if full else (256, 20)
    channels, conv_depth = (128, 20) if full else (48, 8)
    n_inits = 40 if full else 16
    streams = np.random.SeedSequence(seed).spawn(8)
    rows: list[Comparison] = []
    for k, (phase, (sw, sb)) in enumerate(progress(POINTS.items(), desc="validation.audit", total=len(POINTS))):
        g = torch.Generator().manual_seed(int(streams[k].generate_state(1)[0]))
        net = mlp(width, depth, "tanh", n_in=64, n_out=10, generator=g, **_kwargs(sw, sb))
        res = audit(net, "digits", n_networks=n_inits, rng=np.random.default_rng(streams[k]))
        rows += _rows_of(res, f"tanh MLP {width}x{depth} {phase}", {1, depth // 2, depth})
        cnn = periodic_cnn(channels, conv_depth, "tanh", n_in=1, n_out=10, ndim=2, generator=g, **_kwargs(sw, sb))
        res = audit(cnn, "digits", n_networks=n_inits, rng=np.random.default_rng(streams[3 + k]), n_inputs=2)
        rows += _rows_of(res, f"tanh CNN {channels}ch x{conv_depth} circular {phase}", {1, conv_depth // 2, conv_depth})
    net = mlp(width, depth, "tanh", n_in=64, n_out=10, init="critical", sigma_b2=0.05)
    bad = 2 * (depth // 3)  # index of a hidden Linear in the Sequential

    def init(model, generator):
        critical_init_(model, sigma_b2=0.05, kernel="gaussian", generator=generator)
        model[bad].weight.mul_(2.0)

    res = audit(net, "digits", n_networks=n_inits, rng=np.random.default_rng(streams[6]), init=init)
    detected = res.flagged_layers[:1] == (str(bad),)
    rows.append(
        Comparison(
            f"control: module {bad} (a hidden Linear) of a critical tanh MLP with doubled weights is detected",
            1.0,
            1.0 if detected else 0.0,
            0.0,
            note=f"flagged layers: {', '.join(res.flagged_layers) or 'none'}",
        )
    )
    return rows


if __name__ == "__main__":
    raise SystemExit(main_for(run, __name__))
