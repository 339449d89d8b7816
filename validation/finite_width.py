"""Exact finite-width theory (Burkholz & Dubatovka 2019) against simulations of finite random ReLU networks.

Rows:

1. **Squared-norm laws** (Fig. 1a setting): inputs from the embedded digits data set (pixels / 16),
   9 ReLU layers of width N = 200 with He parameters (``sigma_w2 = 2`` with ``fan_in = N``, i.e.
   the paper's per-weight variance ``2 / N`` also in the first layer; ``sigma_b = 0``). The law of ``|x^(l)|^2`` from
   :func:`meanfield.finite_width.propagate_distribution` against the histogram over random networks:
   ``P(|x^(l)|^2 <= t)`` at the theory's 10/50/90 % quantiles (standard error from the spread over
   independent networks) and the Kolmogorov-Smirnov distance (tolerance 1.95 / sqrt(networks), the
   Kolmogorov 0.999 quantile; conservative, since inputs sharing a network are positively
   correlated, so the effective sample size is at least the number of networks). The grid error
   (difference between the grid and a twice finer one) is added as the systematic term.
2. **Expected squared norm with biases** (Cor. 3, eq. 6) for layers of different widths and
   variances (``fan_in`` = the previous layer's width, the input dimension for the first).
3. **Two inputs** (Thm. 5, Fig. 2): mean inner product (eq. 9), the law of ``<x1, x2>`` (the K0 /
   FFT law) and the cosine-similarity law from :func:`cosine_similarity_samples` (iid components)
   against actual random one-layer networks.
4. **Laws across layers** (:mod:`meanfield.finite_width` ``_laws``): the mean
   cosine similarity at layers 1, 3, 6 from :func:`gram_chain_samples` (Prop. 2 iterated, no
   weight matrices) against networks with Gaussian weight matrices (two-sample standard error);
   ``E |x^(6)|^2`` of those networks against Cor. 3; the component CDF of eq. 2 (right-continuous
   inverse) at layer 3 with ``p_2`` sampled from the chain, against the networks' units (per-network
   means: units of one network share its norm); the exact finite-n second moment of the GSM
   product spectrum against products of Gaussian matrices.
5. **Eigenvalues** (Prop. 4, eq. 8 as derived): the discretised operator applied to ``y^m`` on a log
   grid, Richardson-extrapolated in the grid step; these rows are deterministic, so the tolerance
   is the extrapolation's own error estimate ``|fine - coarse| / 3`` (the estimated error of the
   finer, un-extrapolated value, which bounds that of the extrapolate; ``z = 1``, not a number of
   standard errors) plus the part of the integral beyond the grid (:func:`domain_truncation`). Also
   ``lambda_{-1} = 1 - 0.5^N`` as the operator's second eigenvalue (to :data:`EIG_ATOL`), and the
   power ``m`` of its eigenvector (:func:`quasi_stationary_exponent`).

Parametrisation. The theory and the simulators (``simulate_squared_norms``, ``simulate_pair``)
take the library's ``sigma_w2`` (``W_ij ~ N(0, sigma_w2 / fan_in)``, He = 2): the same ``layers``
go to both. Burkholz & Dubatovka 2019 writes He as the per-weight variance ``2 / N`` with ``N`` the layer's width;
the pair rows reproduce that with ``sigma_w2 = 2`` at ``fan_in = N`` (the conversion is
:func:`meanfield.finite_width.unscaled_sigma_w2`). Every row has the same numbers as with the
paper's parametrisation: it is a reparametrisation.
"""

from __future__ import annotations

import math

import numpy as np

from meanfield import finite_width as fw
from meanfield.backend import get_backend, matrix_transpose, to_numpy
from meanfield.checks import check_scalar, renamed_kwargs
from meanfield.data import load_digits
from meanfield.numerics import richardson
from meanfield.simulate import simulate_pair, simulate_squared_norms

from .backend import substream
from .ensembles import ensemble_moments, ensemble_samples
from .report import Comparison, mean_and_stderr
from .runner import main_for, progress

__all__ = [
    "CHUNK_NETWORKS",
    "CHUNK_PAIRS",
    "EIG_ATOL",
    "KS_Z",
    "LOG_GRID_TOP",
    "domain_truncation",
    "eigen_rows",
    "run",
]

#: Networks per chunk of the squared-norm ensembles (1-2), and single-layer networks per chunk of
#: the pair ensembles (3) (:mod:`meanfield.parallel`): chunk ``k`` draws from the ``k``-th child of the
#: row's stream, so the numbers do not depend on where the chunks run (``--workers N``, ``--scheduler``).
CHUNK_NETWORKS = 100
CHUNK_PAIRS = 5000

#: Backends every simulator of this module honours (:func:`meanfield.validation.runner.module_backend`).
BACKENDS = ("numpy", "cupy", "torch", "array_api_strict")

#: Kolmogorov distribution 0.999 quantile: P(sqrt(n) D_n > 1.95) ~ 1e-3 for n iid samples.
KS_Z = 1.95
#: Rounding of numpy.linalg.eig on a G x G column-stochastic matrix (G <= 100): ~ G * eps.
EIG_ATOL = 1e-12
#: Layers whose law is compared quantile by quantile.
LAYERS_COMPARED = (1, 3, 6, 9)


def _cdf_at(law, grid, t):
    """CDF of a state-mass vector at ``t`` (linear within cells, atom at 0)."""
    cdf = np.cumsum(law)
    return float(np.interp(t, grid, cdf))


def _squared_norm_rows(backend, full, seed, rows):
    width, depth = 200, 9
    n_net, per_net = (2000, 32) if full else (400, 16)
    pool = load_digits().x / 16.0
    y0 = (pool * pool).sum(1)
    layers = [fw.Layer(width, 2.0)] * depth  # He; fan_in = width (the paper's 2 / N, first layer too)
    top = 3.0 * y0.max()
    theory = {}
    for g in (300, 600):
        grid = np.linspace(0.0, top, g + 1)
        p0 = fw.grid_masses(y0, grid)
        theory[g] = (grid, fw.propagate_distribution(p0, grid, layers, nodes_per_cell=2))
    sim = ensemble_samples(
        simulate_squared_norms,
        pool,
        layers,
        inputs_per_network=per_net,
        backend=backend,
        n_networks=n_net,
        chunk_size=CHUNK_NETWORKS,
        rng=substream(seed, 0),
    )
    grid, laws = theory[600]
    grid_c, laws_c = theory[300]
    for layer in LAYERS_COMPARED:
        z = sim[:, :, layer]
        cdf = np.cumsum(laws[layer])
        for q in (0.1, 0.5, 0.9):
            t = float(np.interp(q, cdf, grid))
            p_th = _cdf_at(laws[layer], grid, t)
            sys_ = abs(p_th - _cdf_at(laws_c[layer], grid_c, t))
            per_network = (z <= t).mean(1)
            m, se = mean_and_stderr(per_network)
            rows.append(
                Comparison(
                    f"|x^{layer}|^2 law: P(<= {t:.3g}) (q={q})",
                    p_th,
                    m,
                    se,
                    systematic=sys_,
                    note="N=200 He, digits inputs; se over networks; systematic = grid error",
                )
            )
        # Kolmogorov-Smirnov distance at the sample points (theory CDF interpolated in cells)
        zs = np.sort(z.reshape(-1))
        ecdf_hi = np.arange(1, zs.size + 1) / zs.size
        ecdf_lo = np.arange(0, zs.size) / zs.size
        th = np.interp(zs, grid, cdf)
        dist = float(max(np.max(np.abs(ecdf_hi - th)), np.max(np.abs(ecdf_lo - th))))
        th_c = np.interp(zs, grid_c, np.cumsum(laws_c[layer]))
        rows.append(
            Comparison(
                f"|x^{layer}|^2 law: KS distance",
                0.0,
                dist,
                1.0 / math.sqrt(n_net),
                z=KS_Z,
                systematic=float(np.max(np.abs(th - th_c))),
                note="tolerance: Kolmogorov 0.999 quantile with n = networks (conservative)",
            )
        )


def _per_network_mean(sim):
    """Per-network mean over its inputs of the squared norms, every layer: (n_networks, depth + 1)."""
    return sim.mean(axis=1)


def _expected_norm_rows(backend, full, seed, rows):
    # fan_in = the previous width (30 = input dimension): per-weight variances 0.015, 0.04, 0.01, 0.03
    layers = [
        fw.Layer(100, 0.45, 0.05, fan_in=30),
        fw.Layer(60, 4.0, 0.0, fan_in=100),
        fw.Layer(150, 0.6, 0.2, fan_in=60),
        fw.Layer(80, 4.5, 0.1, fan_in=150),
    ]
    x0 = np.random.default_rng(substream(seed, 1)).standard_normal((8, 30)) * 0.25
    n_net = 6000 if full else 1500
    mom = ensemble_moments(
        simulate_squared_norms,
        x0,
        layers,
        inputs_per_network=8,
        backend=backend,
        statistic=_per_network_mean,
        n_networks=n_net,
        chunk_size=CHUNK_NETWORKS,
        rng=substream(seed, 2),
    )
    # each network's inputs are drawn from the pool of 8: theory averaged over the pool
    y0 = (x0 * x0).sum(1)
    theory = fw.expected_squared_norm(y0, layers).mean(1)
    for layer in range(1, len(layers) + 1):
        m, se = float(mom.mean[layer]), float(mom.stderr[layer])
        rows.append(Comparison(f"Cor. 3 with biases: E|x^{layer}|^2", float(theory[layer]), m, se))


def _pair_rows(backend, full, seed, rows):
    n_net = 100_000 if full else 20_000
    d = 32
    rng = np.random.default_rng(substream(seed, 3))
    for width, c in ((100, 0.25), (200, 0.75)):
        # two unit inputs with <x1, x2> = c
        a, b = rng.standard_normal((2, d))
        a /= np.linalg.norm(a)
        b -= (b @ a) * a
        b /= np.linalg.norm(b)
        x1, x2 = a, c * a + math.sqrt(1 - c * c) * b
        # He as Burkholz & Dubatovka 2019 writes it, per-weight 2 / N with N the layer's width: sigma_w2 = 2 at fan_in = width
        inner, cosine = ensemble_samples(
            simulate_pair,
            x1,
            x2,
            width,
            2.0,
            0.0,
            fan_in=width,
            backend=backend,
            n_networks=n_net,
            chunk_size=CHUNK_PAIRS,
            rng=substream(seed, 4, width),
        )
        sw = fw.unscaled_sigma_w2(2.0, width)  # the per-weight 2 / N, as the theory of one layer of d inputs
        v = fw.preactivation_covariance(np.array([[1.0, c], [c, 1.0]]), fw.sigma_w2_from_unscaled(sw, d), fan_in=d)
        m, se = mean_and_stderr(inner)
        rows.append(
            Comparison(
                f"N={width}, <x1,x2>={c}: E<x1',x2'> (eq. 9)",
                float(fw.mean_inner_product(width, v[0, 0], v[1, 1], v[0, 1])),
                m,
                se,
            )
        )
        grid = np.linspace(0.0, 3.0, 1501)
        law = fw.inner_product_law(grid, width, v[0, 0], v[1, 1], v[0, 1])
        law_c = fw.inner_product_law(np.linspace(0.0, 3.0, 751), width, v[0, 0], v[1, 1], v[0, 1])
        cdf = np.cumsum(law)
        for q in (0.1, 0.5, 0.9):
            t = float(np.interp(q, cdf, grid))
            p_th = _cdf_at(law, grid, t)
            sys_ = abs(p_th - _cdf_at(law_c, np.linspace(0.0, 3.0, 751), t))
            ind = (inner <= t).astype(float)
            m, se = mean_and_stderr(ind)
            rows.append(
                Comparison(f"N={width}, <x1,x2>={c}: P(<x1',x2'> <= {t:.3g}) (K0 law)", p_th, m, se, systematic=sys_)
            )
        # cosine-similarity law: iid-component sampler (meanfield) vs actual networks
        samples = fw.cosine_similarity_samples(width, c, n_samples=4 * n_net, rng=substream(seed, 5, width))
        ms, ses = mean_and_stderr(samples)
        mn, sen = mean_and_stderr(cosine)
        rows.append(Comparison(f"N={width}, <x1,x2>={c}: E cos (sampler vs networks)", ms, mn, math.hypot(ses, sen)))
        for q in (0.1, 0.5, 0.9):
            t = float(np.quantile(samples, q))
            ps = (samples <= t).mean()
            pn, sen = mean_and_stderr((cosine <= t).astype(float))
            se_s = math.sqrt(ps * (1 - ps) / samples.size)
            rows.append(Comparison(f"N={width}, <x1,x2>={c}: P(cos <= {t:.4f})", ps, pn, math.hypot(se_s, sen)))


#: The log grid of the eigenvalue rows spans [1 / LOG_GRID_TOP, LOG_GRID_TOP].
LOG_GRID_TOP = 1e6


def domain_truncation(m: float, width: int, sigma_w2: float, top: float, *, fan_in: int | None = None) -> float:
    """Bound on the part of ``T[y^m](1)`` from sources ``y > top`` that a grid ending at ``top`` leaves out.

    For ``z = 1`` and large ``s = sw * y`` (``sw = sigma_w2 / fan_in``, Burkholz & Dubatovka's per-weight
    variance) the ReLU kernel (Burkholz & Dubatovka 2019, Prop. 4 eq. 7) is dominated by its ``k = 1`` term,
    ``N 0.5^N s^{-1/2} / sqrt(2 pi)``; integrating ``y^m`` times it over ``(top, inf)`` gives
    ``N 0.5^N top^{m + 1/2} / (|m + 1/2| sqrt(2 pi sw))``; doubled for the ``k >= 2`` terms.
    Sources below ``1 / top`` contribute ``exp(-top / (2 sw))``: nothing.

    Parameters
    ----------
    m : float
        Exponent of the eigenfunction ``y^m``, ``-1e300 <= m < -1/2``.
    width : int
        ``1 <= N <= meanfield.finite_width.MAX_WIDTH``.
    sigma_w2 : float
        ``> 0``, the weight variance times fan-in (``W_ij ~ N(0, sigma_w2 / fan_in)``).
    top : float
        ``> 0``, the grid's last edge.
    fan_in : int, optional
        Default ``width`` (square layers).

    Returns
    -------
    float
        The bound (``>= 0``; 0 when it underflows).

    Raises
    ------
    ValueError
        Arguments out of range, or a bound beyond float64 (``top`` tiny with ``m + 1/2`` negative).
    TypeError
        Bools, complex numbers or strings.

    Examples
    --------
    >>> f"{domain_truncation(-2.0, 20, 2.0, 1e6):.3g}"   # 2 N 0.5^N top^-1.5 / (1.5 sqrt(2 pi 0.1))
    '3.21e-14'
    """
    m = check_scalar(m, "m")  # one exponent (relu_log_eigenvalue also takes arrays)
    fw.relu_log_eigenvalue(
        m, width, sigma_w2, fan_in=fan_in
    )  # validates m, width, sigma_w2 and fan_in (ValueError / TypeError)
    m, n = float(m), int(width)
    sw = fw.unscaled_sigma_w2(sigma_w2, n if fan_in is None else fan_in)
    if isinstance(top, (bool, np.bool_)) or not isinstance(top, (int, float, np.integer, np.floating)):
        raise TypeError(f"top must be a real number, got {type(top).__name__}")
    top = float(top)
    if not (math.isfinite(top) and top > 0):
        raise ValueError(f"top must be finite and > 0 (the grid's last edge), got {top!r}")
    try:
        power = top ** (m + 0.5)
    except OverflowError:
        power = math.inf
    with np.errstate(over="ignore", invalid="ignore"):
        out = 2 * n * 0.5**n * power / (abs(m + 0.5) * math.sqrt(2 * math.pi * sw))
    if not math.isfinite(out):
        raise ValueError(
            "the truncation bound is beyond float64 (top too small for this m, or sigma_w2 / fan_in tiny); use a larger top"
        )
    return float(out)


def eigen_rows() -> list[Comparison]:
    """The deterministic eigenvalue rows of :func:`run` (part 4 of the module docstring), without simulation."""
    rows: list[Comparison] = []
    _eigen_rows(rows)
    return rows


def _eigen_rows(rows):
    n, sigma_w2 = 20, 2.0  # He (Burkholz & Dubatovka's per-weight variance 2 / N = 0.1)
    est = {}
    for pts in (121, 241):
        edges = np.concatenate([[0.0], np.logspace(-math.log10(LOG_GRID_TOP), math.log10(LOG_GRID_TOP), pts)])
        op = fw.discretize_operator(edges, n, sigma_w2, nodes_per_cell=2)
        e = edges[1:]
        i = int(np.searchsorted(edges, 1.0))
        for m in (-3.0, -2.0, -1.5, -1.0, -0.8):
            if m == -1.0:
                v = np.log(e[1:] / e[:-1])
            else:
                v = (e[1:] ** (m + 1) - e[:-1] ** (m + 1)) / (m + 1)
            v = np.concatenate([[0.0, 0.0], v])  # y^m not integrable at 0 for m <= -1: drop (0, 1e-6]
            est.setdefault(m, []).append((op.matrix @ v)[i] / v[i])
    for m, (coarse, fine) in est.items():
        rich = richardson(coarse, fine, order=2)  # cell averaging of a power law: O(h^2), h -> h / 2
        rows.append(
            Comparison(
                f"lambda_m, N={n}, sigma_w2={sigma_w2:g}, m={m}: eq. 8 vs operator",
                fw.relu_eigenvalue(m, n, sigma_w2),
                rich.value,
                rich.error,
                z=1.0,
                systematic=domain_truncation(m, n, sigma_w2, LOG_GRID_TOP),
                note="deterministic; stderr = Richardson error estimate; systematic = sources beyond the grid",
            )
        )
    for factor in (2.0, 1.5):
        n = 10
        slopes = []
        for g in (201, 401):
            op = fw.discretize_operator(np.linspace(0, 8, g), n, factor, nodes_per_cell=2)
            w, v = op.eig()
            dens = np.abs(np.real(v[1:, 1])) / np.diff(op.grid)
            c = op.centers[1:]
            sel = (c > 0.2) & (c < 2.0)
            slopes.append(np.polyfit(np.log(c[sel]), np.log(dens[sel]), 1)[0])
        rich = richardson(slopes[0], slopes[1], order=2)
        rows.append(
            Comparison(
                f"positive eigenvector ~ y^m, N={n}, sigma_w2={factor:g}: m",
                fw.quasi_stationary_exponent(n, factor),
                rich.value,
                rich.error,
                z=1.0,
                note="deterministic; Richardson over grids 201/401",
            )
        )
    for n in (5, 12):
        w, _ = fw.discretize_operator(np.linspace(0, 8, 81), n, 2.0).eig()
        rows.append(
            Comparison(
                f"lambda_-1 = 1 - 0.5^N, N={n}: operator's 2nd eigenvalue",
                1 - 0.5**n,
                float(w[1].real),
                0.0,
                systematic=EIG_ATOL,
                note="exact identity; tolerance = eig rounding",
            )
        )


@renamed_kwargs(seed="rng")
def run(backend: str = "numpy", full: bool = False, seed: int = 0) -> list[Comparison]:
    """All comparisons (see the module docstring)."""
    rows: list[Comparison] = []
    steps = [
        lambda: _squared_norm_rows(backend, full, seed, rows),
        lambda: _expected_norm_rows(backend, full, seed, rows),
        lambda: _pair_rows(backend, full, seed, rows),
        lambda: _eigen_rows(rows),
        lambda: _laws_rows(backend, full, seed, rows),
    ]
    for step in progress(steps, desc="validation.finite_width"):
        step()
    return rows


def _network_grams(x1, x2, width, depth, sigma_w2, n_net, rng, backend="numpy"):
    """Gram entries of two inputs through ``depth`` ReLU layers of networks with Gaussian weight
    matrices (``W ~ N(0, sigma_w2 / fan_in)``, no bias): arrays (depth + 1, n_net) each, and the
    last layer's first signal (n_net, width). Simulated on ``backend`` (its Generator seeded from
    ``rng``; NumPy: ``default_rng(rng)``), one transfer of the statistics per chunk."""
    be = get_backend(backend)
    xp = be.xp
    gen = be.rng(np.random.default_rng(rng))
    d = x1.size
    n1 = np.empty((depth + 1, n_net))
    n2 = np.empty((depth + 1, n_net))
    ip = np.empty((depth + 1, n_net))
    n1[0], n2[0], ip[0] = x1 @ x1, x2 @ x2, x1 @ x2
    last = np.empty((n_net, width))
    pair = be.asarray(np.stack([x1, x2]))
    chunk = 500
    for s in range(0, n_net, chunk):
        b = min(chunk, n_net - s)
        x = xp.broadcast_to(pair, (b, 2, d))
        stats = []
        for _ in range(1, depth + 1):
            fan_in = x.shape[-1]
            w = gen.standard_normal((b, fan_in, width)) * math.sqrt(sigma_w2 / fan_in)
            x = xp.maximum(xp.matmul(x, w), 0.0)
            a0, a1 = x[:, 0, :], x[:, 1, :]
            stats.append(xp.stack([xp.sum(a0 * a0, axis=-1), xp.sum(a1 * a1, axis=-1), xp.sum(a0 * a1, axis=-1)]))
        host = to_numpy(xp.stack(stats))  # (depth, 3, b)
        n1[1:, s : s + b], n2[1:, s : s + b], ip[1:, s : s + b] = host[:, 0], host[:, 1], host[:, 2]
        last[s : s + b] = to_numpy(x[:, 0, :])
    return n1, n2, ip, last


def _laws_rows(backend, full, seed, rows):
    """Rows of item 5 of the module docstring."""
    d, width, depth = 20, 64, 6
    n_net, n_chain = (20_000, 80_000) if full else (3_000, 12_000)
    rng = np.random.default_rng(substream(seed, 30))
    a, b = rng.standard_normal((2, d))
    a /= np.linalg.norm(a)
    b -= (b @ a) * a
    b /= np.linalg.norm(b)
    c0 = 0.2
    x1, x2 = a, c0 * a + math.sqrt(1 - c0 * c0) * b
    g0 = np.array([[1.0, c0], [c0, 1.0]])
    n1, n2, ip, last = _network_grams(x1, x2, width, depth, 2.0, n_net, substream(seed, 31), backend)
    net_cos = ip / np.sqrt(n1 * n2)
    chain = fw.gram_chain_samples(g0, depth, width, 2.0, fan_in=d, n_samples=n_chain, rng=substream(seed, 32))
    ch_cos = chain.cosine
    for l in (1, 3, 6):
        ms, ses = mean_and_stderr(ch_cos[l])
        mn, sen = mean_and_stderr(net_cos[l])
        rows.append(
            Comparison(
                f"N={width}, cos0={c0}: E cos at layer {l} (Gram chain vs networks)",
                float(ms),
                float(mn),
                math.hypot(ses, sen),
                note="Prop. 2 iterated: exact in law; two-sample standard error",
            )
        )
    layers = [fw.Layer(width, 2.0, fan_in=d)] + [fw.Layer(width, 2.0)] * (depth - 1)
    m, se = mean_and_stderr(n1[depth])
    rows.append(
        Comparison(
            f"N={width}: E|x^({depth})|^2 of networks (Cor. 3)",
            float(fw.expected_squared_norm(1.0, layers)[-1]),
            float(m),
            float(se),
        )
    )
    # eq. 2 at layer `depth` for the first signal: p_{depth-1} sampled from the chain
    states = np.sort(chain.norms1[depth - 1])
    p = np.full(states.size, 1.0 / states.size)
    for t in (0.0, 0.1, 0.3):
        th = fw.component_cdf(t, p, states, 2.0, fan_in=width)
        # Monte-Carlo error of the chain-sampled mixture: the spread of Phi(t / sigma_s) over states
        sig = np.sqrt(2.0 / width * states)
        per_state = (
            0.5 * (1.0 + np.vectorize(math.erf)(t / (sig * math.sqrt(2.0)))) if t > 0 else np.full(states.size, 0.5)
        )
        se_th = float(per_state.std(ddof=1) / math.sqrt(states.size))
        mn, sen = mean_and_stderr((last <= t).mean(axis=1))
        rows.append(
            Comparison(
                f"N={width}: P(x_i^({depth}) <= {t}) (eq. 2, right-continuous inverse)",
                float(th),
                float(mn),
                math.hypot(se_th, sen),
                note="printed eq. 2 gives P(x_i < t): 0 instead of 1/2 at t = 0",
            )
        )
    # GSM product spectrum: exact finite-n second moment
    n_gsm, reps = 32, (8_000 if full else 1_500)
    be = get_backend(backend)
    xp = be.xp
    gen = be.rng(np.random.default_rng(substream(seed, 33)))  # NumPy: this Generator itself
    for L in (2, 5):
        prod = be.asarray(np.eye(n_gsm))
        for _ in range(L):
            prod = (gen.standard_normal((reps, n_gsm, n_gsm)) / math.sqrt(n_gsm)) @ prod
        aa = prod @ matrix_transpose(xp, prod)
        m2 = to_numpy(xp.sum(aa * matrix_transpose(xp, aa), axis=(-2, -1))) / n_gsm
        m, se = mean_and_stderr(m2)
        rows.append(
            Comparison(
                f"GSM n={n_gsm}, L={L}: E (1/n) tr (P P^T)^2 (exact; Fuss-Catalan limit {L + 1})",
                fw.gsm_second_moment(L, n_gsm),
                float(m),
                float(se),
            )
        )


if __name__ == "__main__":
    raise SystemExit(main_for(run, __name__))
