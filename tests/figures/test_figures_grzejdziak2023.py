"""figures.grzejdziak2023 and validation.kurtosis at reduced size (fast)."""

import numpy as np
import pytest
from meanfield.figures import grzejdziak2023 as G
from meanfield.figures import load
from meanfield.validation import kurtosis as VK


@pytest.mark.slow
def test_fig_1_small(tmp_path):
    paths = G.fig_1(tmp_path, n_networks=30, n_inputs=60, n_metainit=2, metainit_steps=5)
    assert [p.suffix for p in paths] == [".png", ".json"] and all(p.exists() for p in paths)
    fd = load(paths[1])
    inits = list(fd["initialisers"])
    q = fd["quantiles"]  # (initialiser, quantile level, layer)
    assert fd.axes["quantiles"] == ["initialiser", "quantile_level", "layer"]
    assert q.shape == (7, 3, 101)
    zero = q[inits.index("zero")]
    assert np.allclose(zero[:, 2:], zero[:, 2:3], rtol=1e-12)  # ZerO: deterministic and constant after layer 1
    # He networks of width 10: the 0.9 quantile at layer 100 is far below the input's variance ~1
    assert q[inits.index("he"), 0, -1] < 1e-2
    meta = fd.metadata
    assert meta["paper"] == "Grzejdziak et al. 2023" and meta["figure"].startswith("Fig. 1")
    assert meta["params"]["n_networks"] == 30 and meta["params"]["n_inputs"] == 60 and meta["params"]["width"] == 10
    assert meta["seed"] == 0 and meta["size"] == "default" and "quantiles" in meta["units"]


@pytest.mark.slow
def test_fig_kurtosis_and_spectral_radius_small(tmp_path):
    p = G.fig_kurtosis(tmp_path, scale=0.02)
    fd = load(p[1])
    assert fd.axes["theory"] == ["width", "weight_law", "layer"]
    i, j = list(fd["width"]).index(10), list(fd["weight_law"]).index("gaussian")
    assert np.all(np.diff(fd["theory"][i, j]) > 0)
    p = G.fig_spectral_radius(tmp_path)
    fd = load(p[1])
    assert fd["gap"].shape == (3, 3, fd["width"].size)
    assert np.all(fd["gap"] > 0)  # Lemma 4.5 at every width up to 1e5


@pytest.mark.parametrize(
    "kwargs, error",
    [
        ({"n_networks": True}, TypeError),
        ({"n_networks": 2.0}, TypeError),
        ({"n_networks": 0}, ValueError),
        ({"n_inputs": 10**6}, ValueError),
        ({"metainit_steps": -1}, ValueError),
        ({"n_metainit": "4"}, TypeError),
    ],
)
def test_fig_1_size_overrides_are_checked_before_any_work(tmp_path, kwargs, error):
    """Overrides were passed on unchecked (``n_networks=True`` meant one network)."""
    with pytest.raises(error, match=next(iter(kwargs))):
        G.fig_1(tmp_path, **kwargs)


@pytest.mark.parametrize(
    "scale, error",
    [(float("nan"), ValueError), (0.0, ValueError), (1e9, ValueError), (1j, TypeError), (True, TypeError)],
)
def test_fig_kurtosis_scale_is_checked(tmp_path, scale, error):
    with pytest.raises(error, match="scale"):
        G.fig_kurtosis(tmp_path, scale=scale)


def test_validation_pieces_small():
    rows = VK.variance_rows("numpy", False, 0)
    assert len(rows) == 6 and all(r.passed for r in rows)
    var = VK.fig1_variances(n_networks=20, n_inputs=50, depth=30, n_metainit=2, metainit_steps=5, rng=0)
    assert set(var) == {"he", "glorot", "orthogonal", "gsm", "zero", "zero_star", "metainit"}
    assert all(v.shape == ((2, 31) if k == "metainit" else (20, 31)) for k, v in var.items())


def test_metainit_claim_row_fails_rather_than_vanishing_when_networks_die(monkeypatch):
    import numpy as np
    from meanfield.validation import kurtosis as vk

    var = {k: np.full((20, 101), 1e-6) for k in ("he", "glorot", "orthogonal", "gsm", "zero", "zero_star")}
    var["metainit"] = np.zeros((4, 101))
    var["metainit"][:, 0] = 1.0  # every output exactly zero by layer 80
    monkeypatch.setattr(vk, "fig1_variances", lambda *a, **k: var)
    rows = [r for r in vk.fig1_rows("numpy", False, 0) if "metainit" in r.name]
    assert len(rows) == 1 and not rows[0].passed


def test_fig1_variances_takes_rng_not_seed():
    """fig1_variances follows the rng rule (it took an int ``seed``): an int n is default_rng(n),
    a Generator or SeedSequence is accepted, bools and the old keyword are refused."""
    import numpy as np

    kw = dict(n_networks=3, n_inputs=20, depth=5, n_metainit=1, metainit_steps=2)
    a = VK.fig1_variances(rng=3, **kw)
    b = VK.fig1_variances(rng=np.random.default_rng(3), **kw)
    c = VK.fig1_variances(rng=np.random.SeedSequence(3), **kw)
    assert all(np.array_equal(a[k], b[k]) and np.array_equal(a[k], c[k]) for k in a)
    assert not np.array_equal(a["he"], VK.fig1_variances(rng=4, **kw)["he"])
    with pytest.raises(TypeError, match="rng"):
        VK.fig1_variances(rng=True, **kw)
    with pytest.raises(TypeError):
        VK.fig1_variances(seed=3, **kw)
