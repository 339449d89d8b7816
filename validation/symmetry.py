"""Feature symmetry (Blumenfeld, Gilboa & Soudry 2020) against simulation.

(a) The Claim of Sec. 3.1 / App. C on 2-D ConstNets (widths 4-8-16, two stride-2 widening blocks)
    of depth 30 (statistics over 300 input pairs) and 10 and 1,000 (exact identities on 4 pairs),
    translation-invariant inputs (i.i.d. Gaussian pixels, pairs with correlation ``c``):

    - every pre-activation equals a subsampled first-layer feature, ``a^l_{g i} = a^0_{s^p g, 1}``
      (exact; max deviation, tolerance :data:`EXACT_ABS`);
    - the normalised inner product ``<a^l(x), a^l(x')> / (|S^l| n_l)`` has the layer-0 *mean*
      ``c / n_d`` at every depth (Monte-Carlo over input pairs, ``z`` standard errors);
    - its *distribution* is not preserved: its variance grows as ``|S^0| / |S^l|`` (the stride
      subsamples positions), contradicting the Claim's "equal in distribution" (variance ratio
      against ``|S^0| / |S^l|``, delta-method standard error);
    - backward features: ``<b^l(x), b^l(x')> / n_l = (n_{L-1} / n_l)^2 <b^{L-1}(x), b^{L-1}(x')> / n_{L-1}``
      when the head depends on the channels only through their mean; the paper omits the factor
      ``(n_out / n_in)^2`` per widening block (exact ratio, relative tolerance :data:`EXACT_REL`);
    - gradients of block weights are the same at depth 10 and 1,000 (exact, relative);
    - with the optional batch-norm, the features are the batch-normalised subsampled first-layer
      features (batch-norm acts once; exact).
(b) App. B: looks-linear delta-orthogonal kernels (eq. 8) relate pre-activations by the rotation
    ``diag(U, U)`` surely, and every singular value of the input-output Jacobian on the non-trivial
    half equals 1, at widths 4 and 16 (exact).
(c) App. H: LeakyNet pre-activations follow the 4-periodic sequence over 1,000 layers for mixed
    ``'I'``/``'1'`` layers (exact, relative), and the all-``'I'`` Jacobian is exactly the identity
    after every 4 layers.
(d) Closed-form correlations after eq. 6: random and replicated-feature tensors by Monte-Carlo mean
    (exact expectations), identity replication, orthogonal, constant and zero tensors exactly.
(e) Symmetry breaking (on the training engine, :func:`meanfield.train.train_ensemble`):
    deterministic full-batch training of a zero-initialised ConstNet keeps
    ``C_f = C_b = 1`` exactly in every hidden convolution; 1 % dropout breaks it, and so does
    Gaussian gradient noise of :data:`GRAD_NOISE` (Blumenfeld et al. 2020, Sec. 4.2 / Table 1).

Exact identities are compared with ``stderr = 0`` and a documented rounding ``systematic``.
"""

from __future__ import annotations

import numpy as np

from meanfield import init as mf_init
from meanfield import symmetry
from meanfield.activations import get_activation
from meanfield.simulate import ConstNet, LeakyNet, looks_linear_delta_orthogonal_forward, softmax_xent

from .backend import get_backend, substream, to_numpy
from .report import Comparison, mean_and_stderr
from .runner import comparison_run, main_for, progress

#: Backends every simulator of this module honours (:func:`meanfield.validation.runner.module_backend`):
#: the ConstNet, LeakyNet and looks-linear rows (a)-(c) run on it; the closed forms (d) are NumPy
#: theory and the training rows (e) run on the training engine (PyTorch on the CPU) whatever the backend.
BACKENDS = ("numpy", "cupy", "torch", "array_api_strict")

__all__ = ["BACKENDS", "EXACT_ABS", "EXACT_REL", "GRAD_NOISE", "run"]

#: Absolute rounding bound for identities between O(1) float64 numbers through <= 1,000 exact
#: operations (each rounding <= 1.1e-16 relative; a random walk of 1,000 steps stays < 1e-13).
EXACT_ABS = 1e-10
#: Relative rounding bound for identities between quantities of arbitrary scale (LeakyNet values
#: reach 1 / slope = 100 times the input).
EXACT_REL = 1e-10
#: Standard deviation of the Gaussian noise added to every gradient entry in the symmetry-breaking
#: row (e): a model of non-deterministic rounding, far below the gradients' size.
GRAD_NOISE = 1e-8


def _exact(name, theory, estimate, scale=1.0, note=""):
    return Comparison(
        name, float(theory), float(estimate), 0.0, systematic=EXACT_ABS * max(1.0, float(scale)), note=note
    )


def _pairs(n_pairs, size, n_d, c, rng, sd=2):
    shape = (n_pairs,) + (size,) * sd + (n_d,)
    x = rng.standard_normal(shape)
    xp = c * x + np.sqrt(1 - c * c) * rng.standard_normal(shape)
    return x, xp


def _variance_and_se(v):
    """Sample variance and its standard error sqrt((m4 - s^4) / N) (any distribution)."""
    v = np.asarray(v)
    d = v - v.mean()
    s2 = np.mean(d * d) * len(v) / (len(v) - 1)
    m4 = np.mean(d**4)
    return s2, np.sqrt(max(m4 - s2 * s2, 0.0) / len(v))


def _constnet_pass(widths, depth, x, head, labels, backend):
    per_stage = [depth // 3] * 3
    per_stage[0] += depth - sum(per_stage)
    net = ConstNet.initial(widths, per_stage, x.shape[-1], head.shape[0], (3, 3), 2, head=head, backend=backend)
    b = get_backend(backend)
    logits, feats = net.forward(x, keep=True)
    _, dlog = softmax_xent(logits, labels, b.xp)
    grads, betas = net.backward(dlog, keep=True)
    return to_numpy(feats[0]), to_numpy(feats[-1]), to_numpy(betas[0]), to_numpy(betas[-1]), to_numpy(grads["block0_0"])


def _claim_rows(backend, full, seed):
    rows = []
    rng = np.random.default_rng(substream(seed, 0))
    size, n_d, c = 16, 3, 0.5
    widths = (4, 8, 16)
    n_sp0, n_spl = size * size, (size // 4) ** 2
    head = np.outer(
        np.random.default_rng(substream(seed, 1)).standard_normal(10), np.ones(widths[-1])
    )  # channel-mean head
    back_theory = (widths[-1] / widths[0]) ** 2

    def exact_rows(label, f0, last, b0, bl, n_pairs):
        rows.append(
            _exact(
                f"ConstNet {label}: max|a^L_(g,i) - a^0_(4g,1)|",
                0.0,
                np.max(np.abs(last - f0[:, ::4, ::4, :1])),
                note="Claim: features are subsampled first-layer features",
            )
        )
        lhs = np.sum(b0[:n_pairs] * b0[n_pairs:], axis=(1, 2, 3)) / widths[0]
        rhs = np.sum(bl[:n_pairs] * bl[n_pairs:], axis=(1, 2, 3)) / widths[-1]
        k = int(np.argmax(np.abs(rhs)))
        rows.append(
            Comparison(
                f"ConstNet {label}: <b^0,b^0'>/n_0 / (<b^L,b^L'>/n_L) (paper: 1)",
                back_theory,
                lhs[k] / rhs[k],
                0.0,
                systematic=EXACT_REL * back_theory,
                note="factor (n_out/n_in)^2 per widening block",
            )
        )

    # statistics over input pairs (depth 30; the identities below show they are the same at any depth)
    n_pairs = 1000 if full else 300
    x, xq = _pairs(n_pairs, size, n_d, c, rng)
    labels = rng.integers(0, 10, 2 * n_pairs)
    f0, last, b0, bl, _ = _constnet_pass(widths, 30, np.concatenate([x, xq]), head, labels, backend)
    exact_rows("depth 30", f0, last, b0, bl, n_pairs)
    ip0 = np.sum(f0[:n_pairs] * f0[n_pairs:], axis=(1, 2, 3)) / (n_sp0 * widths[0])
    ipl = np.sum(last[:n_pairs] * last[n_pairs:], axis=(1, 2, 3)) / (n_spl * widths[-1])
    for name, ip in (("a^0", ip0), ("a^L", ipl)):
        m, se = mean_and_stderr(ip)
        rows.append(
            Comparison(
                f"ConstNet: E <{name}(x), {name}(x')> / (|S| n) = c / n_d", c / n_d, m, se, note="mean preserved"
            )
        )
    v0, se0 = _variance_and_se(ip0)
    vl, sel = _variance_and_se(ipl)
    ratio = vl / v0
    ratio_se = ratio * np.sqrt((se0 / v0) ** 2 + (sel / vl) ** 2)  # conservative (ignores positive correlation)
    rows.append(
        Comparison(
            "ConstNet: Var ip^L / Var ip^0 = |S^0|/|S^L| (paper: 1)",
            n_sp0 / n_spl,
            ratio,
            ratio_se,
            note="not equal in distribution: positions are subsampled",
        )
    )
    # depth 10 versus 1,000 on a few pairs: exact identities and depth-independent gradients
    x, xq = _pairs(4, size, n_d, c, rng)
    labels = rng.integers(0, 10, 8)
    grads = {}
    for depth in progress((10, 100, 1000) if full else (10, 1000), desc="symmetry: ConstNet depth"):
        f0, last, b0, bl, grads[depth] = _constnet_pass(widths, depth, np.concatenate([x, xq]), head, labels, backend)
        exact_rows(f"depth {depth}", f0, last, b0, bl, 4)
    # optional batch-norm at initialisation: it normalises a^0 once; every block then passes it on
    per = [4, 3, 3]
    bn = ConstNet.initial(widths, per, n_d, 10, (3, 3), 2, batchnorm=True, head=head, backend=backend)
    _, feats = bn.forward(np.concatenate([x, xq]), keep=True)
    f0, last = to_numpy(feats[0]), to_numpy(feats[-1])
    raw = np.concatenate([x, xq]).mean(axis=-1, keepdims=True)
    want = (raw - raw.mean()) / np.sqrt(raw.var() + 1e-5)
    rows.append(
        _exact(
            "ConstNet + batch-norm depth 10: max|a^L - BN(a^0) subsampled|",
            0.0,
            max(np.max(np.abs(f0 - want)), np.max(np.abs(last - want[:, ::4, ::4]))),
            note="batch-norm acts once, at the first layer",
        )
    )
    g0, g1 = grads[10], grads[1000]
    rel = np.max(np.abs(g0 - g1)) / max(np.max(np.abs(g0)), 1e-300)
    rows.append(
        Comparison(
            "ConstNet: max rel. diff. dL/dW (block 1) depth 10 vs 1000",
            0.0,
            rel,
            0.0,
            systematic=EXACT_REL,
            note="gradients independent of depth",
        )
    )
    return rows


def _looks_linear_rows(backend, full, seed):
    rows = []
    rng = np.random.default_rng(substream(seed, 2))
    depth = 200 if full else 50
    for n in (4, 16):
        x = rng.standard_normal((2, 5, 5, n // 2))
        pre, us, _ = looks_linear_delta_orthogonal_forward(x, depth, n, rng=substream(seed, 3, n), backend=backend)
        dev = 0.0
        for layer in range(1, depth):
            u = us[layer]
            top, bot = pre[layer - 1][..., : n // 2], pre[layer - 1][..., n // 2 :]
            want = np.concatenate([top @ u.T, bot @ u.T], axis=-1)
            dev = max(dev, float(np.max(np.abs(pre[layer] - want))))
        rows.append(
            _exact(f"App. B n={n}: max|a^(l+1) - diag(U,U) a^l| over {depth} layers", 0.0, dev, note="eq. 9, surely")
        )
        # Jacobian of the top half of a^depth w.r.t. x, column by column (forward mode)
        x1 = rng.standard_normal((1, 3, 3, n // 2))
        dim = x1.size
        cols = []
        for j in range(dim):
            t = np.zeros(dim)
            t[j] = 1.0
            _, _, jvp = looks_linear_delta_orthogonal_forward(
                x1, 12, n, rng=substream(seed, 4, n), tangent=t.reshape(x1.shape), backend=backend
            )
            cols.append(jvp[-1][..., : n // 2].ravel())
        sv = np.linalg.svd(np.array(cols).T, compute_uv=False)
        rows.append(
            _exact(
                f"App. B n={n}: max|singular value - 1| of J (12 layers, {dim} dims)",
                0.0,
                np.max(np.abs(sv - 1.0)),
                note="dynamical isometry at any width",
            )
        )
    return rows


def _leakynet_rows(backend, full, seed):
    rows = []
    rng = np.random.default_rng(substream(seed, 5))
    depth = 1000
    slope = 0.01  # the leaky ReLU's negative slope, the paper's rho
    kinds = list(rng.choice(["I", "1"], depth))
    net = LeakyNet.initial(kinds, n=4, n_input=3, n_classes=5, kernel_shape=(3, 3), rho=slope, backend=backend)
    x = rng.standard_normal((2, 6, 6, 3))
    _, feats = net.forward(x, keep=True)
    feats = [to_numpy(f) for f in feats]
    a0 = feats[0]
    leaky = get_activation("leaky_relu", slope=slope).phi
    cycle = [a0, -leaky(a0) / slope, -a0, -leaky(-a0) / slope]
    scale = float(np.max(np.abs(a0))) / slope
    dev = max(float(np.max(np.abs(f - cycle[i % 4]))) for i, f in enumerate(feats))
    rows.append(
        Comparison(
            f"App. H LeakyNet ({depth} mixed I/1 layers): max|a^l - 4-periodic|/(max|a^0|/slope)",
            0.0,
            dev / scale,
            0.0,
            systematic=EXACT_REL,
            note="symmetric features: 4-periodic",
        )
    )
    # all-'I' Jacobian = identity after 4k layers: push a random cotangent back (vector-Jacobian product)
    net_i = LeakyNet.initial(
        ["I"] * 400,
        n=4,
        n_input=3,
        n_classes=5,
        kernel_shape=(3, 3),
        rho=slope,
        head=rng.standard_normal((5, 4)),
        backend=backend,
    )
    logits, feats = net_i.forward(x, keep=True)
    _, betas = net_i.backward(get_backend(backend).asarray(rng.standard_normal(tuple(logits.shape))), keep=True)
    betas = [to_numpy(b) for b in betas]
    rel = float(np.max(np.abs(betas[0] - betas[-1])) / np.max(np.abs(betas[-1])))
    rows.append(
        Comparison(
            "App. H LeakyNet 400 'I' layers: max|b^0 - b^400| / max|b^400|",
            0.0,
            rel,
            0.0,
            systematic=EXACT_REL,
            note="backward features preserved",
        )
    )
    return rows


def _closed_form_rows(full, seed):
    rows = []
    rng = np.random.default_rng(substream(seed, 6))
    n_t = 2000 if full else 400
    d, r, n_in = 12, 3, 10
    samples = {"random C_f": [], "random C_b": [], "replicated C_f": [], "replicated C_b": []}
    for _ in range(n_t):
        w = rng.standard_normal((3, 3, d, n_in))
        samples["random C_f"].append(symmetry.forward_correlation(w))
        samples["random C_b"].append(symmetry.backward_correlation(w))
        rep = np.repeat(rng.standard_normal((d // r, n_in)), r, axis=0)
        samples["replicated C_f"].append(symmetry.forward_correlation(rep))
        samples["replicated C_b"].append(symmetry.backward_correlation(rep))
    rand = symmetry.closed_form_correlations("random")
    rep = symmetry.closed_form_correlations("replicated_features", d, replicas=r)
    th = {"random C_f": rand.c_f, "random C_b": rand.c_b, "replicated C_f": rep.c_f, "replicated C_b": rep.c_b}
    for k, v in samples.items():
        m, se = mean_and_stderr(v)
        rows.append(Comparison(f"closed form: {k} (d={d}, R={r})", th[k], m, se))
    p, n = 3, 8
    w = mf_init.delta_kernel((3, 3))[..., None, None] * np.tile(np.eye(n), (p, 1))
    ri = symmetry.closed_form_correlations("replicated_identity", p * n, n)
    rows.append(
        _exact(f"closed form: replicated identity C_f (P={p}, n_in={n})", ri.c_f, symmetry.forward_correlation(w))
    )
    rows.append(_exact("closed form: replicated identity C_b", ri.c_b, symmetry.backward_correlation(w)))
    u = mf_init.delta_kernel((3, 3))[..., None, None] * mf_init.haar_orthogonal(16, 16, rng=rng)
    rows.append(_exact("closed form: delta-orthogonal C_f", 0.0, symmetry.forward_correlation(u)))
    rows.append(_exact("closed form: delta-orthogonal C_b", 0.0, symmetry.backward_correlation(u)))
    rows.append(
        _exact(
            "closed form: constant C_f, C_b",
            2.0,
            symmetry.forward_correlation(np.full((3, 3, 8, 4), 0.7))
            + symmetry.backward_correlation(np.full((3, 3, 8, 4), 0.7)),
        )
    )
    rows.append(
        _exact(
            "closed form: zero C_f, C_b",
            2.0,
            symmetry.forward_correlation(np.zeros((3, 3, 8, 4)))
            + symmetry.backward_correlation(np.zeros((3, 3, 8, 4))),
        )
    )
    return rows


def _breaking_rows(backend, full, seed):
    """(e) on the one training engine (:func:`meanfield.train.train_ensemble`, float64, CPU)."""
    from meanfield.train import TrainingData, train_ensemble
    from meanfield.train.symmetric import ConstNetSpec, SymmetryBreaking, correlation_probe

    rows = []
    rng = np.random.default_rng(substream(seed, 7))
    x = rng.standard_normal((32, 3, 8, 8))
    y = rng.integers(0, 4, 32)
    data = TrainingData(x, y, x[:8], y[:8], 4, "32 Gaussian 3 x 8 x 8 inputs, 4 random classes")
    steps = 40 if full else 15
    probes = {"cf": correlation_probe("forward"), "cb": correlation_probe("backward")}

    def fit(noise, stream):
        return train_ensemble(
            ConstNetSpec(widths=(8, 16), blocks_per_stage=1),
            1,
            data=data,
            steps=steps,
            batch_size=32,  # full-batch gradient descent
            lr=0.2,
            optimizer="sgd",
            record_every=1,
            rng=stream,
            dtype="float64",
            noise=noise,
            probes=probes,
        ).probes

    det = fit(None, substream(seed, 10))
    hidden = slice(1, None)  # the first conv's C_b reflects the data's distinct input channels
    for key, what in (("cf", "C_f"), ("cb", "C_b")):
        rows.append(
            _exact(
                f"ConstNet '0' init, deterministic GD ({steps} steps): max 1 - {what} (hidden)",
                0.0,
                det[key][0, :, hidden].max(),
            )
        )
    drop = fit(SymmetryBreaking(dropout=0.01), substream(seed, 8))
    broken = float(drop["cf"][0, -1, hidden].max())
    rows.append(
        Comparison(
            f"ConstNet '0' init, 1% dropout: max 1 - C_f > 0 after {steps} steps (1 = broken)",
            1.0,
            float(broken > 0),
            0.0,
            note=f"measured max 1 - C_f = {broken:.3g}",
        )
    )
    noisy = fit(SymmetryBreaking(grad_noise=GRAD_NOISE), substream(seed, 9))
    broken = float(min(noisy["cf"][0, -1, hidden].max(), noisy["cb"][0, -1, hidden].max()))
    rows.append(
        Comparison(
            f"ConstNet '0' init, gradient noise {GRAD_NOISE:g}: 1 - C_f, 1 - C_b > 0 after {steps} steps (1 = broken)",
            1.0,
            float(broken > 0),
            0.0,
            note=f"measured min over C_f, C_b of max 1 - C = {broken:.3g}",
        )
    )
    return rows


@comparison_run
def run(backend: str = "numpy", full: bool = False, seed: int = 0) -> list[Comparison]:
    """All comparisons of the module docstring.

    Parameters
    ----------
    backend : str
        Array backend of the simulators (:data:`BACKENDS`): ConstNet, LeakyNet and the looks-linear
        networks run on it; the closed forms (d) and the training runs (e) run on the CPU.
    full : bool
        The paper's sizes (more input pairs, depths and draws) instead of the quick default.
    rng : int
        Base seed of the random streams.

    {run_returns}

    {run_raises}
    """
    rows = []
    for part in progress(range(5), desc="validation.symmetry"):
        if part == 0:
            rows += _claim_rows(backend, full, seed)
        elif part == 1:
            rows += _looks_linear_rows(backend, full, seed)
        elif part == 2:
            rows += _leakynet_rows(backend, full, seed)
        elif part == 3:
            rows += _closed_form_rows(full, seed)
        else:
            rows += _breaking_rows(backend, full, seed)
    return rows


if __name__ == "__main__":
    raise SystemExit(main_for(run, __name__))
