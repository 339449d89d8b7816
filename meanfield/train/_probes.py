"""The trainer's symmetry-breaking noise sources (Blumenfeld et al. 2020, Sec. 4) and its probes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from meanfield import Result
from meanfield._docstrings import doc_sections
from meanfield.checks import check_scalar

from ._checks import DOC_FIELD_RAISES, _fraction
from ._specs import _NETWORK_TYPES, _UNIT_EXACT_TYPES

#: Unit roundoff of IEEE float32 (``2^-24``): the relative size of one rounding error of a float32
#: sum, the natural scale of :attr:`SymmetryBreaking.reduction_noise` for a float32 GPU.
FLOAT32_ROUNDOFF = 2.0**-24
#: Dtypes of the forward/backward pass (:attr:`SymmetryBreaking.compute_dtype`).
COMPUTE_DTYPES = ("float64", "float32", "bfloat16", "float16")
#: Arithmetic of the forward/backward pass (:attr:`SymmetryBreaking.kernels`).
KERNELS = ("platform", "unit_exact")


@doc_sections(field_raises=DOC_FIELD_RAISES)
@dataclass(frozen=True)
class SymmetryBreaking(Result):
    """The symmetry-breaking noise sources of Blumenfeld et al. 2020 (Sec. 4, Tables 1 and 3) as trainer options.

    Attributes
    ----------
    dropout : float
        Dropout probability in [0, 1) on every activation of a :class:`ConstNetSpec` /
        :class:`LeakyNetSpec` / :class:`ReplicatedNetSpec` during training (inverted dropout:
        kept units are divided by ``1 - dropout``); evaluation runs without it.
    grad_noise : float
        Standard deviation (``0 <= grad_noise <= 1e6``) of Gaussian noise added to every gradient
        entry before the optimiser step.
    reduction_noise : float
        Relative standard deviation (``0 <= reduction_noise <= 1``) of a perturbation of every
        gradient entry, ``g <- g (1 + reduction_noise xi)`` with ``xi ~ N(0, 1)``: the explicit
        model of a non-deterministic reduction (a GPU summing the terms of a gradient in a varying
        order gets a result that differs by rounding errors of relative order the unit roundoff).
        :data:`FLOAT32_ROUNDOFF` (``2^-24``) models one float32 rounding of each entry.
    compute_dtype : {"float64", "float32", "bfloat16", "float16"}, optional
        Dtype of the forward and backward passes; the parameters (master weights) stay in the
        trainer's ``dtype`` and the gradient is cast back to it before the update. ``None``: the
        trainer's ``dtype``. Logits are cast to the master dtype before the cross-entropy.
    kernels : {"platform", "unit_exact"}
        Arithmetic of the convolutions, the pooling and the head of a :class:`ConstNetSpec` /
        :class:`LeakyNetSpec`. ``"platform"`` (default): PyTorch's kernels (oneDNN, MKL), fast, but
        a matrix product may compute identical units with different instruction sequences (an edge
        tile of a GEMM), so that their rounding differs: a deterministic noise source of the
        platform (:func:`platform_symmetry` measures it). ``"unit_exact"``: elementwise products and
        pairwise sums (``torch.roll`` for the shifts, a tree of additions for every reduction,
        forward and backward), so that identical units stay bitwise identical on any CPU; equal to
        the platform's result up to rounding, several times slower.

    {field_raises}

    Notes
    -----
    Blumenfeld et al. 2020, Sec. 4 ("One additional source of stochasticity ... is the computation process
    itself"), App. I and Table 3 (FP32 / FP16 training with and without computation noise and
    dropout). The hardware's non-determinism is not reproducible on a CPU, which is why it is modelled
    explicitly; a reduced-precision pass without it is deterministic and keeps exact symmetry (the
    FP16 rows without computation noise).
    """

    dropout: float = 0.0
    grad_noise: float = 0.0
    reduction_noise: float = 0.0
    compute_dtype: str | None = None
    kernels: str = "platform"

    def __post_init__(self):
        object.__setattr__(self, "dropout", _fraction(self.dropout, "dropout"))
        g = check_scalar(self.grad_noise, "grad_noise")
        if not 0 <= g <= 1e6:
            raise ValueError(f"grad_noise must lie in [0, 1e6], got {g!r}")
        object.__setattr__(self, "grad_noise", g)
        object.__setattr__(self, "reduction_noise", _fraction(self.reduction_noise, "reduction_noise", closed=True))
        c = self.compute_dtype
        if c is not None and (not isinstance(c, str) or c not in COMPUTE_DTYPES):
            raise ValueError(f"compute_dtype must be None or one of {COMPUTE_DTYPES}, got {c!r}")
        if not isinstance(self.kernels, str) or self.kernels not in KERNELS:
            raise ValueError(f"kernels must be one of {KERNELS}, got {self.kernels!r}")

    @property
    def random(self) -> bool:
        """Whether any source draws random numbers."""
        return self.dropout > 0 or self.grad_noise > 0 or self.reduction_noise > 0


def _check_noise_probes(noise, probes, nets):
    """Validate the ``noise`` and ``probes`` options of :func:`train_ensemble`."""
    if noise is not None:
        if not isinstance(noise, SymmetryBreaking):
            raise TypeError(f"noise must be a SymmetryBreaking or None, got {type(noise).__name__}")
        if noise.dropout > 0 and not all(type(n) in _NETWORK_TYPES for n in nets):
            raise ValueError(
                "noise.dropout is implemented for the Blumenfeld et al. 2020 specs (ConstNetSpec, LeakyNetSpec, ...)"
            )
        if noise.kernels != "platform" and not all(type(n) in _UNIT_EXACT_TYPES for n in nets):
            raise ValueError("noise.kernels='unit_exact' is implemented for ConstNetSpec and LeakyNetSpec only")
    if probes is None:
        return noise, {}
    if not isinstance(probes, dict):
        raise TypeError(f"probes must be a dict of name -> callable, got {type(probes).__name__}")
    for name, fn in probes.items():
        if not isinstance(name, str) or not callable(fn):
            raise TypeError(f"probes must map str names to callables, got {name!r}: {fn!r:.60}")
    return noise, dict(probes)


def _run_probes(probes, store, nets, theta, shapes, sizes) -> None:
    """Call every probe on every network's float64 parameters; append ``(n_networks, ...)`` arrays."""
    bounds = np.cumsum([0, *sizes])
    for name, fn in probes.items():
        vals = []
        for k, this in enumerate(nets):
            params = [theta[k, bounds[i] : bounds[i + 1]].reshape(s) for i, s in enumerate(shapes)]
            v = np.asarray(fn(this, params))
            if v.dtype.kind not in "iuf" or not np.all(np.isfinite(v)):
                raise ValueError(f"probe {name!r} must return finite real numbers, got {v!r:.80}")
            vals.append(v.astype(np.float64))
        if len({v.shape for v in vals}) != 1 or (store[name] and store[name][0].shape[1:] != vals[0].shape):
            raise ValueError(f"probe {name!r} must return arrays of one shape")
        store[name].append(np.stack(vals))


def _noisy_gradient(torch, grad, noise, generators):
    """Gradient noise and the explicit model of a non-deterministic reduction, one generator per network."""
    P = grad.shape[1]

    def normal():
        return torch.stack([torch.randn(P, generator=g, dtype=torch.float64) for g in generators]).to(grad)

    if noise.grad_noise > 0:
        grad = grad + noise.grad_noise * normal()
    if noise.reduction_noise > 0:
        grad = grad * (1.0 + noise.reduction_noise * normal())
    return grad
