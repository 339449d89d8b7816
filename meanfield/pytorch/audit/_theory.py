"""The end-to-end mean-field theory of a model the audit can describe: covariance, correlation, kurtosis and gradients layer by layer."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ... import conv as mf_conv
from ... import dense
from ...activations import Activation
from ...gaussian import expectation, hermite_rule
from .._activations import is_activation_module, resolve_activation
from .._torch import require_torch
from ..init import recorded_spec
from ._rows import _MEAN_FIELD_METHODS

torch = require_torch()
nn = torch.nn


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
        from ..modules import OrhanNet

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
        from ..modules import OrhanNet, Residual

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
    from ..modules import OrhanNet, Residual

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
    from ... import kurtosis

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
