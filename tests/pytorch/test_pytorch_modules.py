"""meanfield.pytorch.modules (the papers' networks as nn.Modules) and ``meanfield audit`` (the CLI)."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from meanfield.cli import main  # noqa: E402
from meanfield.pytorch import (  # noqa: E402
    ConstNet,
    InitSpec,
    LeakyNet,
    OrhanNet,
    audit,
    constnet,
    gsm_mlp,
    hyper_residual_mlp,
    leakynet,
    looks_linear_mlp,
    mlp,
    path_residual_mlp,
    periodic_cnn,
    recorded_spec,
    residual_mlp,
)

pytestmark = pytest.mark.usefixtures("torch_one_thread")


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def _specs(model):
    return [
        m.weight.meanfield_init
        for m in model.modules()
        if isinstance(m, (torch.nn.Linear, torch.nn.Conv1d, torch.nn.Conv2d))
    ]


@pytest.mark.parametrize(
    "build,x",
    [
        (lambda: mlp(32, 3, "relu", n_in=8, n_out=2, init="delta_orthogonal", generator=_gen()), torch.randn(5, 8)),
        (
            lambda: periodic_cnn(8, 3, "tanh", n_in=2, n_out=3, ndim=2, init="orthogonal", generator=_gen()),
            torch.randn(5, 2, 6, 6),
        ),
        (lambda: looks_linear_mlp(16, 3, n_in=8, n_out=4, generator=_gen()), torch.randn(5, 8)),
        (lambda: gsm_mlp(16, 3, n_in=8, n_out=4, generator=_gen()), torch.randn(5, 8)),
        (lambda: residual_mlp(16, 3, "relu", n_in=8, n_out=2, generator=_gen()), torch.randn(5, 8)),
        (lambda: hyper_residual_mlp(16, 3, "relu", n_in=8, n_out=2, generator=_gen()), torch.randn(5, 8)),
        (lambda: path_residual_mlp(16, 3, "relu", n_in=8, n_out=2, generator=_gen()), torch.randn(5, 8)),
        (lambda: constnet(8, 2, n_in=1, n_out=3), torch.randn(5, 1, 6, 6)),
        (lambda: leakynet(8, 3, n_in=1, n_out=3, slope=0.5), torch.randn(5, 1, 6, 6)),
    ],
)
def test_builders_make_initialised_working_modules(build, x):
    model = build()
    with torch.no_grad():
        y = model(x)
    assert y.shape[0] == 5 and bool(torch.isfinite(y).all())
    assert all(isinstance(s, InitSpec) for s in _specs(model))


def test_the_initialisation_record_survives_deepcopy():
    import copy

    net = mlp(64, 3, "tanh", n_in=64, n_out=4, init="critical", sigma_b2=0.05, generator=_gen(0))
    clone = copy.deepcopy(net)  # drops tensor attributes; the modules keep the record
    assert all(recorded_spec(m) == recorded_spec(n) for m, n in zip(net, clone))
    assert "PyTorch default" not in audit(clone, "digits", n_networks=2, rng=0).source


def test_builders_are_the_paper_constructions():
    net = looks_linear_mlp(8, 2, n_in=8, n_out=8, generator=_gen())
    w = net[2].weight.detach()
    assert torch.equal(w[:4, :4], -w[4:, :4]) and torch.equal(w[:4, :4], w[4:, 4:])
    u = w[:4, :4].double()
    assert torch.allclose(u @ u.T, torch.eye(4, dtype=torch.float64), atol=1e-6)  # orthogonal U, sigma_w2 = 1
    cn = constnet(4, 2, n_in=2, n_out=3)
    assert isinstance(cn, ConstNet)
    x = torch.randn(3, 2, 5, 5)
    with torch.no_grad():
        assert not cn(x).any()  # zero head
        first = cn[0](x)
    assert torch.allclose(first, first[:, :1].expand_as(first))  # averaging layer: identical channels
    ln = leakynet(4, 4, n_in=1, n_out=2, slope=0.5)
    assert isinstance(ln, LeakyNet)
    # LeakyNet (Blumenfeld et al. 2020, App. H): on symmetric features the pre-activations repeat with period 4
    h = torch.randn(2, 1, 5, 5).expand(2, 4, 5, 5)
    seq = [h]
    with torch.no_grad():
        for i in range(1, 9, 2):
            seq.append(ln[i + 1](ln[i](seq[-1])))
    assert torch.allclose(seq[2], -seq[0], atol=1e-5) and torch.allclose(seq[4], seq[0], atol=1e-5)
    orhan = residual_mlp(8, 2, n_in=4, n_out=2)
    assert isinstance(orhan, OrhanNet) and orhan.architecture == "residual"
    with pytest.raises(ValueError, match="init"):
        mlp(8, 2, init="he")
    with pytest.raises(ValueError, match="sigma_w2"):
        mlp(8, 2, init="gaussian")
    with pytest.raises(ValueError, match="width"):
        mlp(0, 2)
    with pytest.raises(ValueError, match="even"):
        looks_linear_mlp(7, 2)


@pytest.mark.slow
def test_path_residual_audit_follows_the_recursion():
    net = path_residual_mlp(256, 5, "relu", n_in=64, n_out=4, sigma_w2=1.0, sigma_b2=0.05, generator=_gen(1))
    result = audit(net, "digits", n_networks=10, rng=0)
    assert all(r.theory is not None for r in result.rows if r.quantity == "q")
    assert not result.failed, "\n" + result.table()


MODEL_FILE = """
import torch
from meanfield.pytorch import critical_init_

def build_model():
    net = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Tanh(), torch.nn.Linear(64, 4))
    critical_init_(net, sigma_b2=0.05, generator=torch.Generator().manual_seed(0))
    return net

def not_a_model():
    return 3

def broken():
    raise RuntimeError("boom")
"""


def test_cli_audit_writes_the_table_plot_and_json(tmp_path, capsys):
    model = tmp_path / "model.py"
    model.write_text(MODEL_FILE)
    out = tmp_path / "out"
    assert main(["audit", f"{model}:build_model", "--n-inits", "3", "--out", str(out)]) == 0
    assert "phase critical" in capsys.readouterr().out
    data = json.loads((out / "audit_build_model.json").read_text())
    assert data["metadata"]["n_inits"] == 3 and data["data"]["rows"]
    assert (out / "audit_build_model.png").stat().st_size > 0
    np.save(tmp_path / "x.npy", np.random.default_rng(0).standard_normal((3, 64)))
    assert (
        main(
            ["audit", f"{model}:build_model", "--inputs", str(tmp_path / "x.npy"), "--n-inits", "2", "--out", str(out)]
        )
        == 0
    )


@pytest.mark.parametrize(
    "spec,message",
    [
        ("{model}", "PATH.py:FUNCTION"),
        ("{model}:nope", "defines no 'nope'"),
        ("{model}:not_a_model", "not a torch.nn.Module"),
        ("{model}:broken", "RuntimeError: boom"),
        ("{tmp}/missing.py:f", "no such file"),
    ],
)
def test_cli_audit_bad_models_give_one_line_and_exit_2(tmp_path, capsys, spec, message):
    model = tmp_path / "model.py"
    model.write_text(MODEL_FILE)
    assert main(["audit", spec.format(model=model, tmp=tmp_path), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
