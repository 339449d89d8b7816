"""figures.grzejdziak2023 and validation.kurtosis at reduced size (fast)."""

import json

import numpy as np

from meanfield.figures import grzejdziak2023 as G
from meanfield.validation import kurtosis as VK


def test_fig_1_small(tmp_path):
    paths = G.fig_1(tmp_path, n_networks=30, n_inputs=60, n_metainit=2, metainit_steps=5)
    assert [p.suffix for p in paths] == [".png", ".json"] and all(p.exists() for p in paths)
    data = json.loads(paths[1].read_text())
    q = np.array(data["zero"]["quantiles"], dtype=float)
    assert np.allclose(q[:, 2:], q[:, 2:3], rtol=1e-12)  # ZerO: deterministic and constant after layer 1
    # He networks of width 10: the 0.9 quantile at layer 100 is far below the input's variance ~1
    assert float(data["he"]["quantiles"][0][-1]) < 1e-2


def test_fig_kurtosis_and_spectral_radius_small(tmp_path):
    p = G.fig_kurtosis(tmp_path, scale=0.02)
    data = json.loads(p[1].read_text())
    assert np.all(np.diff(np.array(data["w10_gaussian"]["theory"], dtype=float)) > 0)
    p = G.fig_spectral_radius(tmp_path)
    data = json.loads(p[1].read_text())
    gaps = np.array([data[k] for k in data if k != "width"], dtype=float)
    assert np.all(gaps > 0)  # Lemma 4.5 at every width up to 1e5


def test_validation_pieces_small():
    rows = VK._variance_rows("numpy", False, 0)
    assert len(rows) == 6 and all(r.passed for r in rows)
    var = VK.fig1_variances(n_networks=20, n_inputs=50, depth=30, n_metainit=2, metainit_steps=5)
    assert set(var) == {"he", "glorot", "orthogonal", "gsm", "zero", "zero_star", "metainit"}
    assert all(v.shape == ((2, 31) if k == "metainit" else (20, 31)) for k, v in var.items())


def test_metainit_claim_row_fails_rather_than_vanishing_when_networks_die(monkeypatch):
    import numpy as np

    from meanfield.validation import kurtosis as vk

    var = {k: np.full((20, 101), 1e-6) for k in ("he", "glorot", "orthogonal", "gsm", "zero", "zero_star")}
    var["metainit"] = np.zeros((4, 101))
    var["metainit"][:, 0] = 1.0  # every output exactly zero by layer 80
    monkeypatch.setattr(vk, "fig1_variances", lambda *a, **k: var)
    rows = [r for r in vk._fig1_rows("numpy", False, 0) if "metainit" in r.name]
    assert len(rows) == 1 and not rows[0].passed
