"""The PyTorch bridge in the main job: the audit of a PyTorch model against mean-field theory.

``fig_audit``: a tanh MLP built with :func:`meanfield.pytorch.mlp` and initialised at the edge of
chaos (:func:`meanfield.pytorch.critical_init_`, Gaussian weights, ``sigma_b2 = 0.05``), audited
over re-initialisations on the embedded digits (:func:`meanfield.pytorch.audit`): per layer the
measured pre-activation second moment q^l, the mean input correlation c^l and the gradient second
moment (points, +-z standard errors) against the dense mean-field prediction (line) of Xiao et al. 2018
(Xiao et al. 2018, Sec. 2.1; Poole et al. 2016; Schoenholz et al. 2017).

Without PyTorch the figure says that it needs the torch extra (a PNG with that sentence and a JSON
with ``skipped``), instead of failing the main job.
"""

from __future__ import annotations

import importlib.util

import numpy as np

from ._common import by_size, figure, plt, registered, save_figure, title

__all__ = ["FIGURES", "fig_audit"]

PAPER = "Xiao et al. 2018"
WHAT = "audit of a PyTorch tanh MLP at the edge of chaos against mean-field theory"

#: The figures of this module, ``{name: function}`` (read-only; filled by their ``@figure`` declarations).
FIGURES = registered(__name__)


def _torch_missing() -> str | None:
    """``"needs the torch extra (...)"`` when PyTorch cannot be imported, else None."""
    try:
        if importlib.util.find_spec("torch") is not None:
            import torch  # noqa: F401

            return None
    except (ImportError, ValueError):  # ValueError: sys.modules["torch"] is None
        pass
    return 'needs the torch extra (pip install "meanfield-theory[torch]")'


@figure(paper=PAPER, figure="not in the paper: the PyTorch bridge's audit", honours_backend=False)
def fig_audit(out_dir, *, size, backend, seed):
    """Measured q^l, c^l and gradient second moments of a PyTorch tanh MLP at chi_1 = 1 versus theory."""
    width = by_size(size, smoke=64, default=512, full=1024)
    depth = by_size(size, smoke=6, default=30, full=60)
    n_inits = by_size(size, smoke=4, default=16, full=64)
    params = {
        "width": width,
        "depth": depth,
        "n_inits": n_inits,
        "activation": "tanh",
        "sigma_b2": 0.05,
        "init": "critical_init_ (Gaussian)",
        "inputs": "4 embedded digits, standardised",
    }
    missing = _torch_missing()
    if missing:
        fig, ax = plt.subplots(figsize=(5, 1.6))
        ax.set_axis_off()
        ax.text(0.5, 0.5, f"fig_audit {missing}: skipped", ha="center", va="center")
        title(fig, PAPER, "not in the paper", WHAT)
        data, described = {"skipped": missing}, {}
    else:
        fig, data = _audit_figure(width, depth, n_inits, seed)
        described = {
            "units": {"q_measured": "pre-activation variance", "grad_measured": "squared gradient per unit"},
            "notes": "theory: meanfield.pytorch.audit (dense mean field; backward map under gradient independence)",
        }
    return save_figure(fig, out_dir, "pytorch_bridge_fig_audit", data, params=params, axes={}, **described)


def _audit_figure(width, depth, n_inits, seed):
    """The audit's figure and numbers for :func:`fig_audit` (needs PyTorch)."""
    import torch

    from meanfield.pytorch import audit, mlp

    rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])
    generator = torch.Generator().manual_seed(int(rng.integers(2**63)))
    net = mlp(width, depth, "tanh", n_in=64, n_out=10, init="critical", sigma_b2=0.05, generator=generator)
    result = audit(net, "digits", n_networks=n_inits, rng=rng)
    fig = result.plot()
    counts = {v: sum(r.verdict == v for r in result.rows) for v in ("ok", "FAIL")}
    title(
        fig,
        PAPER,
        "not in the paper",
        WHAT,
        f"width {width}, depth {depth + 1} Linear layers, {n_inits} initialisations; phase {result.phase}, "
        f"chi_1 = {result.chi_1:.4g}; {counts['ok']} rows ok, {counts['FAIL']} FAIL (z = {result.rows[0].z:.3g} s.e. "
        "+ finite-width bias (l - 1)/N)",
    )
    data = {}
    for quantity in ("q", "c", "grad"):
        col = result.column(quantity)
        for key, value in col.items():
            data[f"{quantity}_{key}"] = value
    data["verdicts"] = [f"{r.layer}:{r.quantity}:{r.verdict}" for r in result.rows]
    return fig, data
