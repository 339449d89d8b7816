"""meanfield.pytorch.audit: the measured signal propagation of real PyTorch models agrees with mean-field
theory within the statistical tolerance stated in advance, in the three phases, and a mis-scaled
layer is flagged (the control that must fail)."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from meanfield.validation.report import Z_DEFAULT, Comparison  # noqa: E402

from meanfield import dense  # noqa: E402
from meanfield.pytorch import (  # noqa: E402
    Audit,
    audit,
    critical_init_,
    hyper_residual_mlp,
    mlp,
    periodic_cnn,
    residual_mlp,
)
from meanfield.pytorch.audit import FINITE_WIDTH_BIAS, Z, prepare_inputs, verdict  # noqa: E402

#: tanh phases (sigma_w2, sigma_b2): ordered and chaotic points of validation.dense; None = the edge.
PHASES = {"ordered": (0.8, 0.05), "critical": (None, 0.05), "chaotic": (2.5, 0.05)}


pytestmark = pytest.mark.usefixtures("torch_one_thread")


def _gen(seed):
    return torch.Generator().manual_seed(seed)


def _assert_agrees(result: Audit, phase: str):
    with_theory = [r for r in result.rows if r.theory is not None]
    assert with_theory, "no row has a theory"
    assert not result.failed, "\n" + result.table()
    assert result.phase == phase


def _init_kwargs(sw, sb):
    return {"init": "critical", "sigma_b2": sb} if sw is None else {"init": "gaussian", "sigma_w2": sw, "sigma_b2": sb}


@pytest.mark.slow
@pytest.mark.parametrize("phase", sorted(PHASES))
def test_audit_of_a_width_512_depth_30_tanh_mlp_agrees_with_theory(phase):
    sw, sb = PHASES[phase]
    net = mlp(512, 30, "tanh", n_in=64, n_out=10, generator=_gen(0), **_init_kwargs(sw, sb))
    result = audit(net, "digits", n_networks=10, rng=1)
    assert result.depth == 31 and len(result.rows) == 31 * 5
    _assert_agrees(result, phase)
    # the table covers q, c and gradients at every layer; kurtosis has no theory for tanh
    assert {r.quantity for r in result.rows if r.theory is not None} == {"q", "q_layer", "c", "grad"}
    fp = dense.fixed_point("tanh", *(net[2].weight.meanfield_init.sigma_w2, sb))
    assert result.chi_1 == pytest.approx(fp.chi_1)


@pytest.mark.slow
@pytest.mark.parametrize("phase", sorted(PHASES))
def test_audit_of_a_circular_padding_tanh_cnn_agrees_with_theory(phase):
    sw, sb = PHASES[phase]
    net = periodic_cnn(64, 8, "tanh", n_in=2, n_out=4, ndim=1, generator=_gen(2), **_init_kwargs(sw, sb))
    x = torch.randn(3, 2, 12, generator=_gen(3))
    result = audit(net, x, n_networks=6, rng=4)
    _assert_agrees(result, phase)
    assert all(r.verdict != "approximate" for r in result.rows)


@pytest.mark.slow
def test_a_mis_scaled_layer_is_flagged():
    net = mlp(512, 30, "tanh", n_in=64, n_out=10, init="critical", sigma_b2=0.05)

    def init(model, generator):
        critical_init_(model, sigma_b2=0.05, kernel="gaussian", generator=generator)
        model[20].weight.mul_(2.0)  # layer 11 of 31: four times the declared variance

    result = audit(net, "digits", n_networks=6, rng=5, init=init)
    assert "20" in result.flagged_layers
    assert any(r.layer == "20" and r.quantity == "q" and r.verdict == "FAIL" for r in result.rows)
    # the same model without the mis-scaling passes
    clean = audit(
        net,
        "digits",
        n_networks=6,
        rng=5,
        init=lambda m, g: critical_init_(m, sigma_b2=0.05, kernel="gaussian", generator=g),
    )
    assert clean.passed


def test_zero_padding_is_marked_approximate():
    net = periodic_cnn(32, 3, "tanh", n_in=1, n_out=2, ndim=1, init="critical", sigma_b2=0.05, generator=_gen(0))
    for m in net:
        if isinstance(m, torch.nn.Conv1d):
            m.padding_mode = "zeros"
    result = audit(net, torch.randn(2, 1, 10, generator=_gen(1)), n_networks=3, rng=0)
    assert any(r.verdict == "approximate" for r in result.rows)
    assert all(r.verdict != "FAIL" for r in result.rows)


@pytest.mark.slow
def test_kurtosis_recursion_of_grzejdziak2023_in_a_narrow_relu_mlp():
    # Gaussian weights, no bias, ReLU: the exact finite-width kurtosis recursion applies; width 16
    # makes kappa grow visibly with depth (3 -> 6.8 at layer 4). Deeper, kappa > 10 and the sample
    # kurtosis of 400 networks is too heavy-tailed for its jackknife standard error (not tested).
    net = mlp(16, 3, "relu", n_in=64, n_out=16, init="gaussian", sigma_w2=2.0, sigma_b2=0.0, generator=_gen(0))
    result = audit(net, "digits", n_networks=400, rng=3, backward=False)
    kurt = [r for r in result.rows if r.quantity == "kurtosis"]
    assert all(r.theory is not None for r in kurt)
    assert kurt[-1].theory > 6.0
    assert all(r.verdict == "ok" for r in kurt), "\n" + result.table()


@pytest.mark.slow
def test_residual_and_hyper_residual_recursions():
    for build in (residual_mlp, hyper_residual_mlp):
        net = build(256, 6, "tanh", n_in=64, n_out=8, sigma_w2=1.0, sigma_b2=0.05, generator=_gen(0))
        result = audit(net, "digits", n_networks=6, rng=2)
        q_rows = [r for r in result.rows if r.quantity == "q"]
        assert all(r.theory is not None for r in q_rows)
        assert not result.failed, "\n" + result.table()
        assert q_rows[-2].measured > 2 * q_rows[1].measured  # the residual stream grows with depth
        assert all(r.theory is None for r in result.rows if r.quantity == "grad")


def test_layers_outside_the_theory_are_measured_and_marked_no_theory():
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(64, 32)
            self.norm = torch.nn.LayerNorm(32)
            self.b = torch.nn.Linear(32, 4)

        def forward(self, x):
            return self.b(torch.tanh(self.norm(self.a(x))))

    result = audit(Net(), "digits", n_networks=3, rng=0)  # PyTorch's own reset_parameters
    assert {r.verdict for r in result.rows if r.quantity != "q_layer"} == {"no theory"}
    # the layer-local check needs only each layer's measured input
    assert [r.verdict for r in result.rows if r.quantity == "q_layer"] == ["ok", "ok"]
    assert all(math.isfinite(r.measured) for r in result.rows)
    assert result.phase == "unknown"
    seq = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.Tanh(), torch.nn.LayerNorm(32), torch.nn.Linear(32, 4))
    res = audit(seq, "digits", n_networks=3, rng=0)
    verdicts = [r.verdict for r in res.rows if r.quantity == "q"]
    assert verdicts[0] == "ok" and verdicts[1] == "no theory"  # PyTorch's default law is a theory too


def test_inputs_and_arguments():
    net = mlp(32, 2, "tanh", n_in=64, n_out=3, init="critical", generator=_gen(0))
    x = np.random.default_rng(0).standard_normal((5, 64))
    a = prepare_inputs(net, (torch.from_numpy(x), torch.zeros(5)))  # a DataLoader batch
    assert a.shape == (4, 64) and a.dtype == torch.float32
    assert prepare_inputs(net, x, n_inputs=5).shape == (5, 64)
    result = audit(net, x, n_networks=2, rng=0, backward=False)
    assert {r.quantity for r in result.rows} == {"q", "q_layer", "c", "kurtosis"}
    assert "phase" in result.table() and result.to_dict()["rows"]
    with pytest.raises(TypeError, match="model"):
        audit("net", x)
    with pytest.raises(ValueError, match="n_networks"):
        audit(net, x, n_networks=1)
    with pytest.raises(ValueError, match="n_networks"):
        audit(net, x, n_networks=2.5)
    with pytest.raises(ValueError, match="finite"):
        audit(net, np.full((3, 64), np.nan))
    with pytest.raises(TypeError, match="real"):
        audit(net, np.ones((3, 64), dtype=complex))
    with pytest.raises(ValueError, match="overflow"):
        audit(net, np.full((3, 64), 1e300))  # finite in float64, infinite in the model's float32
    silent = audit(net, np.zeros((3, 64)), n_networks=3, rng=0)  # zero signal: c and kurtosis undefined
    assert all(math.isfinite(r.measured) for r in silent.rows)
    assert all(r.verdict == "no theory" for r in silent.rows if r.quantity in ("c", "kurtosis"))
    with pytest.raises(ValueError, match="at least 2"):
        audit(net, np.ones((1, 64)))
    with pytest.raises(ValueError, match="digits"):
        audit(net, "mnist")
    with pytest.raises(TypeError, match="backward"):
        audit(net, x, backward="yes")
    with pytest.raises(TypeError, match="init"):
        audit(net, x, init=3)


def test_plot_draws_theory_and_measurement(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    net = mlp(64, 3, "tanh", n_in=64, n_out=4, init="critical", generator=_gen(0))
    result = audit(net, "digits", n_networks=3, rng=0)
    fig = result.plot(tmp_path / "audit.png")
    assert (tmp_path / "audit.png").stat().st_size > 0
    assert len(fig.axes) == 5 and all(ax.get_lines() for ax in fig.axes[:4])


def test_verdicts_are_those_of_the_validation_report():
    assert Z == Z_DEFAULT
    for measured, se, theory, systematic in [
        (1.0, 0.1, 1.44, 0.0),
        (1.0, 0.1, 1.46, 0.0),
        (0.5, 0.0, 0.5, 0.0),
        (1.0, 0.1, 1.6, 0.2),
    ]:
        c = Comparison("x", theory, measured, se, systematic=systematic)
        assert (verdict(measured, se, theory, systematic, False) == "ok") == c.passed
    assert FINITE_WIDTH_BIAS(2.0, 1, 512) == 0.0 and FINITE_WIDTH_BIAS(2.0, 3, 512) == pytest.approx(4.0 / 512)


def test_layers_without_a_record_follow_pytorchs_default_law():
    net = mlp(256, 4, "tanh", n_in=64, n_out=4, init="critical", sigma_b2=0.05, generator=_gen(0))
    net[4] = torch.nn.Linear(256, 256)  # PyTorch's own initialisation: sigma_w2 = 1/3, sigma_b2 = 1/(3 fan_in)
    result = audit(net, "digits", n_networks=10, rng=1)
    q = [r for r in result.rows if r.quantity == "q"]
    assert all(r.theory is not None for r in q) and not result.failed, "\n" + result.table()
    assert q[2].theory < 0.5 * q[1].theory  # the default law shrinks the signal (sigma_w2 = 1/3)
    assert "PyTorch default init" in result.source and result.phase == "unknown"


# --- nn.MultiheadAttention's packed in-projection ------------------------------------------------


def _encoder(seed=0):
    torch.manual_seed(seed)
    layer = torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
    return torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)


def _projection_rows(result):
    return [r for r in result.rows if r.quantity == "q_layer" and (".in_proj." in r.layer or "out_proj" in r.layer)]


def test_attention_projections_get_layer_local_rows_that_pass_under_pytorch_default_init():
    x = torch.randn(4, 6, 32, generator=torch.Generator().manual_seed(4))
    result = audit(_encoder(), x, rng=0, backward=False)
    rows = _projection_rows(result)
    names = [f"layers.{i}.self_attn.{p}" for i in (0, 1) for p in ("in_proj.q", "in_proj.k", "in_proj.v", "out_proj")]
    assert [r.layer for r in rows] == names
    assert all(r.verdict == "ok" for r in rows), "\n" + result.table()
    assert result.n_weight_layers == 4 + 8 and result.n_checked == 12


def test_attention_projections_scaled_by_hand_are_flagged_alone():
    model = _encoder()
    e = 32

    def scale_keys(module, inputs):  # runs after every re-draw: the key projection at 2x its declared scale
        with torch.no_grad():
            module.in_proj_weight[e : 2 * e].mul_(2.0)

    def scale_out(module, inputs):  # the out-projection at 2x PyTorch's default scale
        with torch.no_grad():
            module.out_proj.weight.mul_(2.0)

    model.layers[1].self_attn.register_forward_pre_hook(scale_keys)
    model.layers[0].self_attn.register_forward_pre_hook(scale_out)
    x = torch.randn(4, 6, 32, generator=torch.Generator().manual_seed(5))
    result = audit(model, x, n_networks=6, rng=0, backward=False)
    assert result.flagged_layers == ("layers.0.self_attn.out_proj", "layers.1.self_attn.in_proj.k"), (
        "\n" + result.table()
    )
