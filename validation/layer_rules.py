"""The layer rules of :mod:`meanfield.nets` a traced PyTorch model needs, each against Monte-Carlo.

One small network per rule (layer normalisation, RMS normalisation, batch normalisation in training
and evaluation mode, dropout in training mode, average and max pooling, flattening, concatenation,
token and positional embeddings, self-attention with ``1/d`` and ``1/sqrt(d)`` logits; zero-padded
strided, dilated and grouped convolutions, padded pooling, a residual block with a projection skip,
post-activation residual blocks whose stream is not Gaussian): the theory of :meth:`meanfield.nets.Network.theory`
against the mean over independent finite networks of :meth:`meanfield.nets.Network.simulate`, entry
by entry of the per-unit second moments after the layer (or after the dense layer that follows it,
which sees exactly the moments the rule gives).

Two depth checks:

- batch normalisation's gradient explosion (Yang et al. 2019): in a linear network of dense and
  batch-normalisation layers at its fixed point the gradient's squared norm grows by
  ``(B - 2)/(B - 3)`` per layer (``B`` the batch size); the theory's derivative map (quadrature)
  against that closed form, and the theory's growth over ``BN_DEPTH`` layers from the data's
  covariance, for the linear and the BN-ReLU network, against back-propagation through finite
  networks (NumPy, the gradient of a read-out with identity moments);
- rank collapse (Dong et al. 2021; Noci et al. 2022): the token correlation of self-attention
  layers without skips is 1 at infinite width from the first layer on (uniform attention of the
  ``1/d`` scaling, Hron et al. 2020); with residual branches it stays below 1 at every depth, by the
  amount the theory predicts.

Tolerance, stated in advance (as :mod:`meanfield.validation.dense`): the finite networks are biased
by O(1/N), so every Monte-Carlo statistic is Richardson-extrapolated from widths N and 2N
(``2 m_2N - m_N``, standard error ``sqrt(4 se_2N^2 + se_N^2)``, :func:`meanfield.numerics.richardson`);
the verdict allows ``Z_DEFAULT`` standard errors plus :data:`EXTRAPOLATION_BIAS` (the quantity's
scale over N^2) for the O(1/N^2) remainder. The closed-form row allows :data:`QUADRATURE_TOL`.
"""

from __future__ import annotations

import numpy as np

from meanfield.nets import (
    Act,
    AvgPool,
    BatchNorm,
    Concat,
    Conv,
    Dense,
    Dropout,
    Embedding,
    Flatten,
    LayerNorm,
    MaxPool,
    Network,
    Residual,
    RMSNorm,
    SelfAttention,
)

from ._extrapolation import EXTRAPOLATION_BIAS, extrapolate_samples
from .report import Comparison
from .runner import comparison_run, main_for, progress

__all__ = ["BN_BATCH", "BN_DEPTH", "BN_NETWORKS", "BN_RELU_QMC", "QUADRATURE_TOL", "run"]

#: Backends the simulators of this module honour (:func:`meanfield.validation.runner.module_backend`).
BACKENDS = ("numpy",)
#: Batch size (inputs) of the batch-normalisation rows.
BN_BATCH = 6
#: Dense + batch-normalisation layers of the gradient-explosion row.
BN_DEPTH = 6
#: The gradient-explosion row draws this many times the other rows' networks (a ratio of two
#: gradient norms per network is noisier than one moment).
BN_NETWORKS = 4
#: Relative error per layer of the fused BN-ReLU derivative map (quasi-Monte-Carlo over the batch,
#: measured about 1e-2 against the exact linear map's quadrature; the growth over ``BN_DEPTH``
#: layers is allowed ``BN_DEPTH`` times it).
BN_RELU_QMC = 1.5e-2
#: Allowed error of the theory's batch-normalisation derivative map against Yang et al.'s closed
#: form: the quadrature's requested relative error (``meanfield.nets`` ``BN_RTOL`` = 1e-10) times the
#: ~10 integrals it combines, with a margin of 100.
QUADRATURE_TOL = 1e-7


def _moment_rows(label, make, x, layer, entries, width, n_nets, seqs):
    """Rows ``label: S[i, j]`` of layer ``layer``: theory of ``make(width)`` vs extrapolated Monte-Carlo."""
    theory = make(width).theory(x).second[layer]
    sims = [make(w).simulate(x, n_networks=n_nets, rng=s).second[layer] for w, s in zip((width, 2 * width), seqs)]
    est, se = extrapolate_samples(*sims)
    scale = float(np.max(np.abs(np.diagonal(theory))))
    return [
        Comparison(
            f"{label}: S[{i},{j}]",
            float(theory[i, j]),
            float(est[i, j]),
            float(se[i, j]),
            systematic=EXTRAPOLATION_BIAS(scale, width),
            note=f"widths {width}, {2 * width}; {n_nets} networks each",
        )
        for i, j in entries
    ]


def _inputs(rng, d, shape):
    x = rng.standard_normal((d, *shape))
    return x / np.sqrt(np.mean(x * x, axis=tuple(range(1, x.ndim)), keepdims=True))


def _rule_cases(rng):
    """(label, make(width), x, layer, entries) of every single-layer rule."""
    x = _inputs(rng, 3, (12,))
    xb = _inputs(rng, BN_BATCH, (12,))
    xs = _inputs(rng, 2, (8, 3))
    x2 = _inputs(rng, 2, (4, 4, 2))
    xt = _inputs(rng, 2, (5, 6))
    xc = _inputs(rng, 2, (6, 5, 2))  # drawn after the others: their data is unchanged
    ids = np.array([[0, 1, 2, 1], [3, 1, 0, 0]], dtype=float)[..., None]
    e3 = [(0, 0), (0, 1), (1, 2)]
    shifted = BatchNorm(train=False, running_var=2.0, bias=0.3)
    return [
        (
            "LayerNorm after relu (mean subtracted), gain 1.3, bias 0.2",
            lambda n: Network([Dense(n, 2.0, 0.1), Act("relu"), LayerNorm(gain=1.3, bias=0.2), Dense(n)]),
            x,
            4,
            e3,
        ),
        (
            "LayerNorm then tanh",
            lambda n: Network([Dense(n, 1.0, 0.1), LayerNorm(), Act("tanh"), Dense(n)]),
            x,
            4,
            e3,
        ),
        (
            "RMSNorm after relu, gain 0.7",
            lambda n: Network([Dense(n, 2.0, 0.1), Act("relu"), RMSNorm(gain=0.7), Dense(n)]),
            x,
            4,
            e3,
        ),
        (
            f"BatchNorm train (batch {BN_BATCH})",
            lambda n: Network([Dense(n, 1.0), BatchNorm(), Dense(n)]),
            xb,
            3,
            [(0, 0), (0, 1), (2, 5)],
        ),
        (
            "BatchNorm eval, running var 2, gain 1.2",
            lambda n: Network(
                [Dense(n, 1.0), BatchNorm(train=False, running_var=2.0, gain=1.2), Act("tanh"), Dense(n)]
            ),
            xb,
            4,
            [(0, 0), (0, 1)],
        ),
        (
            "Dropout train p=0.3 after tanh",
            lambda n: Network([Dense(n, 1.5, 0.05), Act("tanh"), Dropout(0.3, train=True)]),
            x,
            3,
            e3,
        ),
        (
            "AvgPool window 2 after conv-relu",
            lambda n: Network([Conv(n, (3,), 2.0), Act("relu"), AvgPool(2)]),
            xs,
            3,
            [(0, 0), (0, 1), (0, 5)],
        ),
        (
            "MaxPool window 2 after conv",
            lambda n: Network([Conv(n, (3,), 2.0, 0.1), MaxPool(2)]),
            xs,
            2,
            [(0, 0), (0, 1), (0, 5)],
        ),
        (
            "MaxPool 2x2 after 2-D conv (Gaussian integration)",
            lambda n: Network([Conv(n, (3, 3), 2.0, 0.1), MaxPool((2, 2))]),
            x2,
            2,
            [(0, 0), (0, 1), (0, 5)],
        ),
        (
            "Flatten after conv-relu",
            lambda n: Network([Conv(n, (3,), 2.0), Act("relu"), Flatten(), Dense(n)]),
            xs,
            4,
            [(0, 0), (0, 1)],
        ),
        (
            "Concat [z, relu branch]",
            lambda n: Network([Dense(n, 1.0), Concat(((), (Act("relu"), Dense(n // 2, 2.0)))), Dense(n)]),
            x,
            3,
            e3,
        ),
        (
            "Embedding, positional variance 0.5",
            lambda n: Network([Embedding(5, n, 1.0, 0.5), Act("tanh"), Dense(n)]),
            ids,
            2,
            [(0, 0), (0, 1), (1, 3), (0, 4)],
        ),
        (
            "SelfAttention 1/sqrt(d), 8 heads, sigma_qk2 2 (Gaussian logits)",
            lambda n: Network([Dense(n, 1.0), SelfAttention(n, heads=8, sigma_qk2=2.0, scaling="1/sqrt(d)")]),
            xt,
            2,
            [(0, 0), (0, 1), (0, 7)],
        ),
        (
            "SelfAttention 1/d, 2 heads",
            lambda n: Network([Dense(n, 1.0), SelfAttention(n, heads=2), Dense(n)]),
            xt,
            2,
            [(0, 0), (0, 1), (0, 7)],
        ),
        # general convolutions (3x3 outputs of a 6x5 signal: corner 0, edge 1, centre 4; input 1 from 9)
        (
            "Conv zero padding 1, stride 2, after conv-relu",
            lambda n: Network(
                [Conv(n, (3, 3), 2.0, 0.1, padding=1), Act("relu"), Conv(n, (3, 3), 1.5, 0.05, padding=1, stride=2)]
            ),
            xc,
            3,
            [(0, 0), (1, 1), (4, 4), (0, 4), (0, 9)],
        ),
        (
            "Conv dilation 2, zero padding 2, after conv-tanh",
            lambda n: Network(
                [Conv(n, (3, 3), 1.5, 0.1, padding=1), Act("tanh"), Conv(n, (3, 3), 1.5, 0.0, padding=2, dilation=2)]
            ),
            xc,
            3,
            [(0, 0), (7, 7), (0, 7), (0, 30)],
        ),
        (
            "Conv 4 groups, even kernel 2x2, zero padding 1, after conv-relu",
            lambda n: Network(
                [Conv(n, (3, 3), 2.0, padding=1), Act("relu"), Conv(n, (2, 2), 2.0, 0.1, padding=1, groups=4)]
            ),
            xc,
            3,
            [(0, 0), (8, 8), (0, 8), (8, 50)],
        ),
        (
            "MaxPool 3 stride 2 padding 1, fused relu, after zero-padded conv",
            lambda n: Network([Conv(n, (3,), 2.0, 0.1, padding=1), MaxPool(3, 2, padding=1, act="relu")]),
            xs,
            2,
            [(0, 0), (1, 1), (0, 1), (0, 4)],
        ),
        (
            "AvgPool 3 stride 2 zero padding 1 after conv-relu",
            lambda n: Network([Conv(n, (3,), 2.0, padding=1), Act("relu"), AvgPool(3, 2, padding=1)]),
            xs,
            3,
            [(0, 0), (1, 1), (0, 1), (0, 4)],
        ),
        (
            "Residual with a projection skip (1x1 stride-2 conv, BatchNorm eval shifted 0.3)",
            lambda n: Network(
                [
                    Conv(n, (3, 3), 2.0, 0.1, padding=1),
                    Act("relu"),
                    Residual(
                        (
                            Conv(n, (3, 3), 2.0, stride=2, padding=1),
                            BatchNorm(train=False),
                            Act("relu"),
                            Conv(n, (3, 3), 2.0, padding=1),
                            shifted,
                        ),
                        skip=(Conv(n, (1, 1), 1.0, stride=2, padding=0), shifted),
                    ),
                ]
            ),
            xc,
            3,
            [(0, 0), (4, 4), (0, 4), (0, 9)],
        ),
        (
            "Post-activation residual blocks after padded max pooling (ResNet's stem and first stage)",
            lambda n: Network(
                [
                    Conv(n, (3,), 2.0, 0.1, padding=1),
                    MaxPool(3, 2, padding=1, act="relu"),
                    Residual((Conv(n, (3,), 2.0, padding=1), Act("relu"), Conv(n, (3,), 1.0, padding=1))),
                    Act("relu"),
                    Residual((Conv(n, (3,), 2.0, padding=1), Act("relu"), Conv(n, (3,), 1.0, padding=1))),
                    Act("relu"),
                    Conv(n, (3,), 1.0, padding=1),
                ]
            ),
            xs,
            7,
            [(0, 0), (1, 1), (0, 1), (0, 4)],
        ),
    ]


# ----------------------------------------------------------------------------------------------
# Batch normalisation's gradient explosion (Yang et al. 2019).


def _bn_net(width, depth, act=None):
    layers = []
    for _ in range(depth):
        layers += [Dense(width, 1.0 if act is None else 2.0), BatchNorm(eps=0.0, act=act)]
    return Network(layers)


def _bn_gradient_traces(net, x, n_nets, seq):
    """Per network: the squared gradient norm per unit at the first BN layer's input over that at the output.

    NumPy back-propagation through ``Dense`` and training-mode ``BatchNorm`` (eps = 0, gain 1,
    optionally a fused ReLU) of an output gradient with identity moments.
    """
    w = net.weights(x.shape[1:], seq, n_networks=n_nets)
    _, feats = net.forward(w, x, keep=True)
    delta = np.random.default_rng(seq.spawn(1)[0]).standard_normal(feats[-1].shape)
    out_norm = np.mean(delta * delta, axis=-1).sum(axis=1)
    first = None
    for idx in range(len(net.layers) - 1, -1, -1):
        layer, h = net.layers[idx], feats[idx]
        if isinstance(layer, BatchNorm):
            mu = h.mean(axis=1, keepdims=True)
            sd = np.sqrt(((h - mu) ** 2).mean(axis=1, keepdims=True))
            y = (h - mu) / sd
            if layer.act is not None:  # relu after the normalisation: its mask
                delta = delta * (y > 0)
            delta = (delta - delta.mean(axis=1, keepdims=True) - y * (delta * y).mean(axis=1, keepdims=True)) / sd
            first = np.mean(delta * delta, axis=-1).sum(axis=1)  # at the input of this BN layer
        else:
            delta = delta @ w.params[idx]["weight"]
    return first / out_norm


def _bn_growth(act, width, n_nets, seqs, x):
    """Gradient growth over ``BN_DEPTH`` dense-BN layers: theory and extrapolated Monte-Carlo.

    Parameters
    ----------
    act : str or None
        The activation fused into every ``BatchNorm`` (None: the linear network).
    width, n_nets : int
        Narrower width of the extrapolation (the other is ``2 width``) and networks per width.
    seqs : sequence of numpy.random.SeedSequence
        One stream per width.
    x : ndarray
        The batch.

    Returns
    -------
    growth : float
        The theory's ratio of the gradient's second moment at the first BN layer's input to that
        at the output.
    est, se : float
        The Monte-Carlo ratio (:func:`_bn_gradient_traces`), Richardson-extrapolated from widths
        ``width`` and ``2 width``, and its standard error.
    """
    th = _bn_net(width, BN_DEPTH, act).theory(x, backward=True)
    growth = float(np.trace(th.grad[1]) / np.trace(th.grad[-1]))
    stats = [_bn_gradient_traces(_bn_net(w, BN_DEPTH, act), x, n_nets, s) for w, s in zip((width, 2 * width), seqs)]
    est, se = extrapolate_samples(*stats)
    return growth, est, se


def _bn_rows(width, n_nets, seqs, x, relu_seqs):
    b = BN_BATCH
    closed = (b - 2) / (b - 3)
    # the fixed point of the linear BN network: E y y^T = B / (B - 1) G
    cen = np.eye(b) - 1.0 / b
    fp = Network([Dense(width, 1.0), BatchNorm(eps=0.0), Dense(width, 1.0), BatchNorm(eps=0.0)])
    th = fp.theory(cov0=b / (b - 1) * cen, in_shape=(width,), backward=True)
    rate = float(np.trace(th.grad[0]) / np.trace(th.grad[2]))
    rows = [
        Comparison(
            f"BatchNorm gradient growth per layer at the fixed point (batch {b}) = (B-2)/(B-3)",
            closed,
            rate,
            0.0,
            systematic=QUADRATURE_TOL,
            note="Yang et al. 2019 (linear BN network); the theory's derivative map by quadrature",
        )
    ]
    growth, est, se = _bn_growth(None, width, n_nets, seqs, x)
    rows.append(
        Comparison(
            f"BatchNorm gradient growth over {BN_DEPTH} dense-BN layers (batch {b})",
            growth,
            float(est),
            float(se),
            systematic=EXTRAPOLATION_BIAS(growth, width),
            note=f"fixed-point rate {closed:.4f}^{BN_DEPTH} = {closed**BN_DEPTH:.3f}; widths {width}, {2 * width}",
        )
    )
    rows.append(
        Comparison(
            f"BatchNorm gradient explodes over {BN_DEPTH} layers (growth differs from 1)",
            1.0,
            float(est),
            float(se),
            systematic=EXTRAPOLATION_BIAS(growth, width),
            side="differs",
            note="gradient explosion is unavoidable with batch normalisation (Yang et al. 2019)",
        )
    )
    growth, est, se = _bn_growth("relu", width, n_nets, relu_seqs, x)
    rows.append(
        Comparison(
            f"BatchNorm-ReLU gradient growth over {BN_DEPTH} layers (batch {b})",
            growth,
            float(est),
            float(se),
            systematic=EXTRAPOLATION_BIAS(growth, width) + BN_RELU_QMC * BN_DEPTH * growth,
            note="Yang et al. 2019's BN-ReLU network; theory by quasi-Monte-Carlo over the batch",
        )
    )
    return rows


# ----------------------------------------------------------------------------------------------
# Rank collapse of self-attention.


def _token_correlation(s, tokens):
    """Mean correlation of distinct tokens of input 0 from (..., D L, D L) second moments."""
    block = s[..., :tokens, :tokens]
    d = np.sqrt(np.diagonal(block, axis1=-2, axis2=-1))
    corr = block / (d[..., :, None] * d[..., None, :])
    off = ~np.eye(tokens, dtype=bool)
    return corr[..., off].mean(axis=-1)


def _collapse_rows(width, n_nets, seqs, x, depth):
    tokens = x.shape[1]
    plain = lambda n: Network([Dense(n, 1.0)] + [SelfAttention(n) for _ in range(depth)])  # noqa: E731
    resid = lambda n: Network([Dense(n, 1.0)] + [Residual((SelfAttention(n), Dense(n, 1.0))) for _ in range(depth)])  # noqa: E731
    rows = []
    for label, make, kids in (("no skips", plain, seqs[:2]), ("residual", resid, seqs[2:])):
        th = make(width).theory(x).second
        sims = [make(w).simulate(x, n_networks=n_nets, rng=s).second for w, s in zip((width, 2 * width), kids)]
        for layer in (2, depth + 1):
            rho = float(_token_correlation(th[layer], tokens))
            est, se = extrapolate_samples(*(_token_correlation(s[layer], tokens) for s in sims))
            rows.append(
                Comparison(
                    f"SelfAttention {label}: token correlation after {layer - 1} layer(s)",
                    rho,
                    float(est),
                    float(se),
                    systematic=EXTRAPOLATION_BIAS(1.0, width),
                    note=f"widths {width}, {2 * width}; {n_nets} networks each",
                )
            )
        if label == "residual":
            rows.append(
                Comparison(
                    f"SelfAttention residual: token correlation after {depth} layers stays below 1",
                    1.0,
                    float(est),
                    float(se),
                    systematic=EXTRAPOLATION_BIAS(1.0, width),
                    side="differs",
                    note="residual branches prevent rank collapse (Dong et al. 2021; Noci et al. 2022)",
                )
            )
    return rows


@comparison_run
def run(backend: str = "numpy", full: bool = False, seed: int = 0) -> list[Comparison]:
    """All comparisons of the module docstring.

    Parameters
    ----------
    backend : str
        Array backend (:data:`meanfield.backend.BACKENDS`); the simulations of this module run on
        NumPy (:data:`BACKENDS`).
    full : bool
        Wider networks and more of them instead of the quick default.
    rng : int
        Base seed of the random streams (each row spawns its own children).

    {run_returns}

    {run_raises}
    """
    width, n_nets = (256, 200) if full else (96, 80)
    bn_data, bn_seq, att_data, att_seq, data_seq, bn_relu_seq, *row_seqs = np.random.SeedSequence(seed).spawn(32)
    cases = _rule_cases(np.random.default_rng(data_seq))
    rows = []
    for (label, make, x, layer, entries), seq in progress(list(zip(cases, row_seqs)), desc="validation.layer_rules"):
        rows += _moment_rows(label, make, x, layer, entries, width, n_nets, seq.spawn(2))
    xb = _inputs(np.random.default_rng(bn_data), BN_BATCH, (12,))
    rows += _bn_rows(width, BN_NETWORKS * n_nets, bn_seq.spawn(2), xb, bn_relu_seq.spawn(2))
    xt = _inputs(np.random.default_rng(att_data), 2, (5, 6))
    rows += _collapse_rows(width, n_nets, att_seq.spawn(4), xt, 4 if not full else 8)
    return rows


if __name__ == "__main__":
    raise SystemExit(main_for(run, __name__))
