"""Grzejdziak 2023 (Grzejdziak et al. 2023): kurtosis recursion, P(output != 0), Fig. 1, S_n^2 variance.

``python -m meanfield.validation.kurtosis [--full] [--backend cupy]`` compares:

(a) ``meanfield.kurtosis.propagate`` with the Monte-Carlo kurtosis ``E y^4 / sigma^4`` and
    squared-output covariance ``E y_i^2 y_j^2 - sigma^4`` per layer, widths 2, 10, 50, slopes 0
    and 0.1, Gaussian / uniform / Rademacher weights, depths up to 20, three He input laws and
    one network of varying widths. Each network gets one independent input; per-network
    averages over units (and unit pairs) are independent across networks, so the standard error is
    the sample standard deviation over networks / sqrt(networks).

    Heavy tails: the estimator of a fourth moment has variance ~ E y^8, which grows much faster
    with depth than (E y^4)^2; once the predicted kurtosis is large the sample standard deviation
    is itself a gross under-estimate (most runs fall far below the mean, the mean being carried by
    rare networks). Rows are therefore kept only where the predicted kurtosis is at most
    :data:`KAPPA_MAX`; measured: at width 10 (ReLU, Gaussian) 20,000 networks reproduce
    ``kappa = 34`` (z = -0.6) but give 51 for ``kappa = 77`` (z = -3.6) and 420 for 9,976.
(b) ``nonzero_probability`` (Prop. B.2) against the fraction of ReLU networks with a non-zero
    output, for Gaussian, uniform, orthogonal (and width-1 Rademacher) weights, plus two cases that break its assumptions (looks-linear / GSM
    weights and inputs with one shared sign), compared with the values derived for them.
(c) Fig. 1: empirical output variances of >= 1,000 networks (10,000 with ``--full``) of width 10 and
    depth 100 on the standardised digits data; the paper's claim "90 % of networks have empirical
    variance below 1e-3 after 80 layers" for He, Glorot, orthogonal and GSM, the constancy of
    ZerO / ZerO* after the first ReLU, and "for MetaInit, empirical variances explode" (4 MetaInit
    networks by default, 200 with ``--full``; the paper used 1,000: MetaInit costs ~3 s of CPU per
    network).
(d) ``empirical_variance_distribution``: ``Var S_n^2`` against i.i.d. samples of known kurtosis.
"""

from __future__ import annotations

import math

import numpy as np
from meanfield.validation.backend import substream
from meanfield.validation.report import Comparison, mean_and_stderr
from meanfield.validation.runner import _RUN_RAISES, check_run_arguments, main_for, progress
from scipy import stats

from meanfield import kurtosis
from meanfield.checks import doc_sections, renamed_kwargs
from meanfield.simulate import (
    FIG1_DEPTH,
    FIG1_FRACTION,
    FIG1_STREAM,
    FIG1_THRESHOLD,
    INPUT_MOMENTS,
    KAPPA_MAX,
    fig1_variances,
    layer_moments,
    nonzero_fraction,
)

__all__ = [
    "FIG1_DEPTH",
    "FIG1_STREAM",
    "FIG1_THRESHOLD",
    "KAPPA_MAX",
    "fig1_rows",
    "fig1_variances",
    "run",
    "variance_rows",
]

#: Backends every simulator of this module honours (:func:`meanfield.validation.runner.module_backend`);
#: MetaInit's optimisation of the Fig. 1 start runs on the host (NumPy), its forward passes on the backend.
BACKENDS = ("numpy", "cupy", "torch", "array_api_strict")

#: Depths at which the kurtosis recursion is compared.
DEPTHS = (1, 2, 3, 5, 10, 15, 20)
#: "Explode": the mean over MetaInit networks of log10(S^2_80 / S^2_0) is at least one decade.
FIG1_EXPLOSION_LOG10 = 1.0
#: Networks needed before a binomial fraction row can fail (standard-error floor 1/n, z = 4.5).
FIG1_MIN_FRACTION_NETWORKS = 50
#: ZerO / ZerO* keep the empirical variance to rounding: identity layers copy relu(y) exactly.
ZERO_RTOL = 1e-12


def _networks(width, full):
    base = {2: 40_000, 10: 20_000, 50: 4_000}.get(width, 10_000)
    return base * (4 if full else 1)


def _kurtosis_rows(backend, full, seed):
    rows = []
    configs = [
        (w, a, law, "gaussian")
        for w in (2, 10, 50)
        for a in (0.0, 0.1)
        for law in ("gaussian", "uniform", "rademacher")
    ]
    configs += [(10, 0.0, "gaussian", "rademacher"), (10, 0.0, "gaussian", "mixture")]
    configs += [((10, 3, 7, 2, 5, 12, 8), 0.0, "gaussian", "gaussian")]
    for k, (w, a, law, inp) in enumerate(progress(configs, desc="kurtosis recursion")):
        kappa0, c0 = INPUT_MOMENTS[inp]
        if isinstance(w, tuple):
            widths = list(w)
            depth = len(widths) - 1
        else:
            depth = max(DEPTHS)
            widths = [w] * (depth + 1)
        th = kurtosis.propagate(kappa0, c0, widths[:-1], a, kurtosis.weight_kurtosis(law))
        keep = [d for d in range(1, depth + 1) if (d in DEPTHS or isinstance(w, tuple)) and th.kappa[d] <= KAPPA_MAX]
        if not keep:
            continue
        last = max(keep)
        n_net = _networks(w if not isinstance(w, tuple) else 0, full)
        sim = layer_moments(widths[: last + 1], a, law, n_net, inp, backend=backend, rng=substream(seed, 0, k))
        label = f"w={w if not isinstance(w, tuple) else 'x'.join(map(str, w))} a={a} {law} in={inp}"
        for d in keep:
            m, se = mean_and_stderr(sim.m4[:, d])
            rows.append(Comparison(f"kappa {label} l={d}", th.kappa[d], m, se, note=f"{n_net} networks"))
            if widths[d] > 1:
                m, se = mean_and_stderr(sim.m22[:, d])
                rows.append(Comparison(f"c {label} l={d}", th.c[d], m - 1.0, se))
    return rows


def _nonzero_rows(backend, full, seed):
    rows = []
    n_net = 400_000 if full else 100_000
    cases = [([1] * 9, law) for law in ("gaussian", "uniform", "rademacher", "orthogonal")]
    cases += [([2] * 9, law) for law in ("gaussian", "uniform", "orthogonal")]
    cases += [([3, 1, 2, 4, 1, 2, 3], "gaussian"), ([3, 1, 2, 4, 1, 2, 3], "orthogonal")]
    # Rademacher weights at width >= 2 break B.2 (equal entries arise with positive probability and
    # then W v = 0 exactly): measured 0.042 instead of 0.100 at width 2, depth 8; see tests.
    for k, (widths, law) in enumerate(progress(cases, desc="P(output != 0)")):
        p = kurtosis.nonzero_probability(widths[:-1])
        f = nonzero_fraction(
            widths[:-1], law, n_net, output_width=widths[-1], backend=backend, rng=substream(seed, 1, k)
        )
        for d in (len(widths) // 2, len(widths) - 1):
            se = math.sqrt(p[d] * (1 - p[d]) / n_net)
            rows.append(Comparison(f"P(y!=0) widths={widths[:d]} {law} l={d}", p[d], f[d], se))
    # assumptions broken: derived values (not Prop. B.2's)
    widths = [2] * 9
    f = nonzero_fraction(widths[:-1], "gsm", n_net, output_width=widths[-1], backend=backend, rng=substream(seed, 2))
    p = 1.0 - 2.0 ** -widths[0]  # only the input can be all-negative: half of [h, -h] is > 0
    rows.append(
        Comparison("P(y!=0) GSM (B.2 breaks; derived: 1 - 2^-w0) l=8", p, f[-1], math.sqrt(p * (1 - p) / n_net))
    )
    f = nonzero_fraction(
        widths[:-1],
        "gaussian",
        n_net,
        input_kind="shared_sign",
        output_width=widths[-1],
        backend=backend,
        rng=substream(seed, 3),
    )
    p = 0.5 * kurtosis.nonzero_probability(widths[1:-1])[-1]
    rows.append(
        Comparison(
            "P(y!=0) shared input sign (B.2 breaks; derived: 1/2 prod_{l>=1}) l=8",
            p,
            f[-1],
            math.sqrt(p * (1 - p) / n_net),
            note=f"Prop. B.2 would give {kurtosis.nonzero_probability(widths[:-1])[-1]:.4f}",
        )
    )
    return rows


def _fraction_below_threshold(v):
    """Fraction of networks with ``S^2 < FIG1_THRESHOLD`` and its binomial standard error.

    The standard error has the floor ``1 / n`` (a fraction of exactly 0 or 1 still has an error).
    """
    n = v.size
    f = float(np.mean(v < FIG1_THRESHOLD))
    return f, math.sqrt(max(f * (1 - f), 1.0 / n) / n)


@renamed_kwargs(seed="rng")
@doc_sections(run_raises=_RUN_RAISES)
def fig1_rows(backend: str = "numpy", full: bool = False, seed: int = 0) -> list[Comparison]:
    """Rows (c) of the module notes: the claims of Grzejdziak's Fig. 1 on :func:`fig1_variances`.

    Parameters
    ----------
    backend : str
        One of :data:`meanfield.backend.BACKENDS` (the array backend of the simulated networks).
    full : bool
        The paper's sizes (10,000 networks, 200 MetaInit networks) instead of the quick default.
    rng : int
        Base seed (``>= 0``); the networks come from ``substream(seed, FIG1_STREAM)``.

    Returns
    -------
    list of Comparison
        For He, Glorot, orthogonal and GSM the fraction of networks with ``S^2 < FIG1_THRESHOLD``
        at layer ``FIG1_DEPTH`` (claim: at least 0.9); for ZerO and ZerO* the largest relative
        change of ``S^2`` after layer 2 (claim: 0); for MetaInit the mean
        ``log10(S^2_80 / S^2_0)`` over networks with a non-zero output (claim: at least 1, a row
        that fails rather than vanishing when fewer than two networks are alive) and, with
        enough networks, the 90 % rule failing.

    {run_raises}

    Notes
    -----
    Grzejdziak 2023 (Grzejdziak et al. 2023), Fig. 1 and its Sec. 3 discussion.
    """
    backend, full, seed = check_run_arguments(backend, full, seed)
    rows = []
    var = fig1_variances(full, backend, substream(seed, FIG1_STREAM))  # children substream(seed, 4, k), as before
    for init in ("he", "glorot", "orthogonal", "gsm"):
        f, se = _fraction_below_threshold(var[init][:, FIG1_DEPTH])
        rows.append(
            Comparison(f"Fig.1 {init}: frac(S^2 < 1e-3) at l=80 (claim >= 0.9)", FIG1_FRACTION, f, se, side="above")
        )
    for init in ("zero", "zero_star"):
        v = var[init][:, 2:]
        dev = float(np.max(np.abs(v / v[:, :1] - 1.0)))
        rows.append(Comparison(f"Fig.1 {init}: max_l>=2 |S^2_l / S^2_2 - 1|", 0.0, dev, 0.0, systematic=ZERO_RTOL))
    # MetaInit: "empirical variances explode" (the 90 % claim above fails for it). On the log scale
    # a few networks resolve the claim: mean log10(S^2_80 / S^2_0) over the networks whose output
    # is not exactly zero must be at least FIG1_EXPLOSION_LOG10; the binomial fraction rows need
    # FIG1_MIN_FRACTION_NETWORKS networks (their standard error has the floor 1 / n).
    # Fewer than 2 live networks give a NaN estimate, which fails: the row never silently drops out.
    v = var["metainit"]
    alive = v[:, FIG1_DEPTH] > 0
    logs = np.log10(v[alive, FIG1_DEPTH] / v[alive, 0])
    m, se = mean_and_stderr(logs) if logs.size >= 2 else (math.nan, math.nan)
    note = f"{int(alive.sum())} of {v.shape[0]} networks with a non-zero output"
    rows.append(
        Comparison(
            "Fig.1 metainit: mean log10(S^2_80 / S^2_0) (claim: explode, >= 1)",
            FIG1_EXPLOSION_LOG10,
            float(m),
            float(se),
            side="above",
            note=note,
        )
    )
    if v.shape[0] >= FIG1_MIN_FRACTION_NETWORKS:
        f, se = _fraction_below_threshold(v[:, FIG1_DEPTH])
        rows.append(
            Comparison(
                "Fig.1 metainit: frac(S^2 < 1e-3) at l=80 (claim: the 90 % rule fails)",
                FIG1_FRACTION,
                f,
                se,
                side="below",
            )
        )
    return rows


@renamed_kwargs(seed="rng")
@doc_sections(run_raises=_RUN_RAISES)
def variance_rows(backend: str = "numpy", full: bool = False, seed: int = 0) -> list[Comparison]:
    """Rows (d) of the module notes: ``Var S_n^2`` of :func:`meanfield.kurtosis.empirical_variance_distribution`
    against i.i.d. samples of known kurtosis.

    Parameters
    ----------
    backend : str
        One of :data:`meanfield.backend.BACKENDS`; validated but unused (the samples are drawn with NumPy).
    full : bool
        200,000 samples per row instead of 40,000.
    rng : int
        Base seed (``>= 0``); the samples come from ``substream(seed, 5)``.

    Returns
    -------
    list of Comparison
        Six rows: Laplace, uniform and logistic laws, ``n = 10`` and ``50``; theory ``Var S_n^2``,
        the sample mean of ``(S_n^2 - sigma^2)^2`` and its standard error.

    {run_raises}

    Notes
    -----
    Grzejdziak 2023 (Grzejdziak et al. 2023), the empirical variance of ``n`` outputs: its variance
    ``Var S_n^2 = (kappa - (n - 3) / (n - 1)) sigma^4 / n`` (exact for i.i.d. samples, O'Neill 2014),
    which fixes the paper's moment-matched Gamma law.
    """
    backend, full, seed = check_run_arguments(backend, full, seed)
    rows = []
    rng = np.random.default_rng(substream(seed, 5))
    reps = 200_000 if full else 40_000
    laws = {"laplace": stats.laplace(), "uniform": stats.uniform(-1, 2), "logistic": stats.logistic()}
    for name, dist in laws.items():
        kappa = kurtosis.weight_kurtosis(dist)
        sigma2 = float(dist.var())
        for n in (10, 50):
            s2 = dist.rvs(size=(reps, n), random_state=rng).var(axis=1, ddof=1)
            ev = kurtosis.empirical_variance_distribution(kappa, n, sigma2)
            centred = (s2 - sigma2) ** 2  # E = Var S^2 exactly (E S^2 = sigma^2)
            m, se = mean_and_stderr(centred)
            rows.append(Comparison(f"Var S_n^2 {name} (kappa={kappa:.2f}) n={n}", ev.var_s2, m, se))
    return rows


@renamed_kwargs(seed="rng")
def run(backend: str = "numpy", full: bool = False, seed: int = 0) -> list[Comparison]:
    """All comparisons of Grzejdziak 2023 (see the module docstring)."""
    rows = []
    rows += _kurtosis_rows(backend, full, seed)
    rows += _nonzero_rows(backend, full, seed)
    rows += fig1_rows(backend, full, seed)
    rows += variance_rows(backend, full, seed)
    rows += _residual_rows(backend, full, seed)
    rows += _conv_rows(backend, full, seed)
    return rows


def _conv_rows(backend, full, seed):
    """Grzejdziak 2023, Sec. 6: convolutions make the kurtosis grow "at even faster pace".

    1-D periodic ReLU convolutions (16 positions, He kernels), Gaussian inputs, kurtosis at layer 4:
    (1) kernel size 1 with 12 channels is 16 weight-sharing dense networks of width 12, whose
    kurtosis is Prop. 4.3's (both sides: a check of the simulator); (2) the conjecture for kernel
    size 3 with 4 channels: at least the kurtosis of a dense network of the same fan-in 12 (Prop. 4.3;
    side "above": a FAIL would mean parameter sharing slows the growth). No recursion is offered for
    the convolutional case: same-channel pairs at different positions share a filter, so Lemma 4.2's
    single-coordinate sign flip fails and the moment recursion does not close.
    """
    from meanfield.simulate import simulate_conv_moments

    depth, n_pos = 4, 16
    n = 100_000 if full else 20_000
    rows = []
    dense = float(kurtosis.propagate(3.0, 0.0, [12] * depth).kappa[-1])
    for channels, k, side, label in (
        (12, 1, "both", "= dense Prop. 4.3"),
        (4, 3, "above", ">= dense Prop. 4.3 (conjecture)"),
    ):
        sim = simulate_conv_moments(channels, k, n_pos, depth, n, rng=substream(seed, 42, k), backend=backend)
        kap, se = _kappa_and_stderr(sim, depth)
        rows.append(
            Comparison(
                f"conv ReLU c={channels}, k={k}: kurtosis at layer {depth} {label}, fan-in 12",
                dense,
                kap,
                se,
                side=side,
            )
        )
    return rows


def _kappa_and_stderr(sim, layer):
    """Kurtosis mean(m4) / mean(s2)^2 over networks and its delta-method standard error."""
    m4, s2 = sim.m4[layer], sim.s2[layer]
    k = m4.mean() / s2.mean() ** 2
    infl = m4 / s2.mean() ** 2 - 2.0 * k * s2 / s2.mean()  # influence function of the ratio
    return float(k), float(infl.std(ddof=1) / math.sqrt(m4.size))


def _residual_rows(backend, full, seed):
    """Grzejdziak 2023, Sec. 6: "skip connections cannot stop the growth of kurtosis".

    Residual layers ``y + W phi_a(y)`` (He Gaussian weights, width 8, Gaussian inputs):
    (1) the linear case (a = 1, the case the conjecture invokes) against the exact moment
    recursion of :func:`meanfield.kurtosis.residual_moments`; (2) the conjecture for ReLU: the kurtosis of
    ReLU residual networks at depth 6 is at least the linear residual network's exact value
    (side "above": a FAIL would mean the ReLU nonlinearity slows the growth below the linear case);
    (3) the sign-symmetric closure of the recursion for ReLU, which is not exact for residual
    layers (module notes), shown as a one-sided row (the simulation lies above it).
    """
    from meanfield.kurtosis import residual_moments
    from meanfield.simulate import simulate_residual_moments

    width, depth = 8, 6
    n = 200_000 if full else 40_000
    rows = []
    lin = simulate_residual_moments(width, depth, n, slope=1.0, rng=substream(seed, 40), backend=backend)
    th_lin = residual_moments(width, depth, slope=1.0)
    for l in (2, depth):
        m, se = mean_and_stderr(lin.m4[l])
        rows.append(
            Comparison(
                f"residual linear w={width}: E y^4 at layer {l} (exact recursion)",
                float(th_lin.m4[l]),
                float(m),
                float(se),
            )
        )
    relu = simulate_residual_moments(width, depth, n, slope=0.0, rng=substream(seed, 41), backend=backend)
    k, se = _kappa_and_stderr(relu, depth)
    th_relu = residual_moments(width, depth, slope=0.0)
    for what, theory, note in (
        (
            ">= linear residual's (conjecture, Sec. 6)",
            th_lin,
            "kurtosis grows through skip connections with ReLU at least as with no activation",
        ),
        (
            "vs sign-symmetric closure (not exact)",
            th_relu,
            "Lemma 4.2's sign-flip invariance fails for residual layers: the closure underestimates",
        ),
    ):
        name = f"residual ReLU w={width}: kurtosis at layer {depth} {what}"
        rows.append(Comparison(name, float(theory.kappa[depth]), k, se, side="above", note=note))
    return rows


if __name__ == "__main__":
    raise SystemExit(main_for(run, __name__))
