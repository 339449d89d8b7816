"""The ``honours_backend`` flags of the figures are true.

Every figure declared ``honours_backend=True`` is run at smoke size on ``array_api_strict`` (the
strict CPU namespace: a NumPy-only call in its simulation fails) while the arrays that namespace
creates are counted: a figure that claims the backend but simulated on NumPy would create none. The
PNG is not written (the defining module's ``save_figure`` stubbed): the rendering is tested by test_figures_render.py.
"""

from __future__ import annotations

import importlib

import pytest
from meanfield.figures.runner import all_figures

strict = pytest.importorskip("array_api_strict")

HONOURING = sorted(k for k, f in all_figures().items() if f.honours_backend)

#: Fewest array_api_strict arrays a simulating figure creates at smoke size (one per network layer
#: at least: every simulator creates several per layer).
MIN_ARRAYS = 10


def test_the_expected_figures_honour_the_backend():
    assert HONOURING == [
        "burkholz2019.fig_1a",
        "grzejdziak2023.fig_1",
        "grzejdziak2023.fig_kurtosis",
        "xiao2018.fig_qc_maps",
        "xiao2018.fig_s2",
        "xiao2018.fig_s4",
        "xiao2018.fig_spectra",
    ]


@pytest.mark.parametrize("key", HONOURING)
def test_figure_claiming_the_backend_simulates_on_it(key, tmp_path, monkeypatch):
    from array_api_strict._array_object import Array

    created = []
    new = Array._new.__func__

    def counting(cls, *args, **kwargs):
        created.append(1)
        return new(cls, *args, **kwargs)

    monkeypatch.setattr(Array, "_new", classmethod(counting))
    func = all_figures()[key]
    module = importlib.import_module(func.__module__)  # where it is defined: a paper's package holds modules
    monkeypatch.setattr(module, "save_figure", lambda *a, **k: [])
    monkeypatch.setenv("MEANFIELD_NO_PROGRESS", "1")
    func(tmp_path, size="smoke", backend="array_api_strict", rng=0)
    assert len(created) >= MIN_ARRAYS, f"{key} created {len(created)} array_api_strict arrays"


def test_cpu_only_figures_refuse_other_backends(tmp_path):
    cpu_only = sorted(k for k, f in all_figures().items() if not f.honours_backend)
    assert cpu_only
    with pytest.raises(ValueError, match="CPU only"):
        all_figures()[cpu_only[0]](tmp_path, size="smoke", backend="array_api_strict", rng=0)
