"""meanfield.pytorch.init: every initialiser is its NumPy construction in PyTorch's layout, and the
constructions do on PyTorch's own operators what the papers say (isometry, edge of chaos)."""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from meanfield import dense  # noqa: E402
from meanfield import init as np_init  # noqa: E402
from meanfield.activations import get_activation  # noqa: E402
from meanfield.pytorch import (  # noqa: E402
    INSTALL_HINT,
    activation_from_module,
    constnet_,
    critical_init_,
    critical_normal_,
    critical_sigma_w2,
    delta_orthogonal_,
    gsm_,
    leakynet_,
    looks_linear_,
    mean_field_normal_,
    mlp,
    numpy_rng,
    orthogonal_conv_,
    zero_,
    zero_star_,
)

#: float32 relative precision of a norm over a few hundred terms (eps32 = 1.2e-7, times sqrt(n) ~ 30)
FLOAT32_NORM_RTOL = 1e-5


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def _same(tensor, expected):
    """The tensor holds exactly the float64 construction rounded to the tensor's dtype."""
    want = torch.from_numpy(np.ascontiguousarray(expected)).to(tensor.dtype)
    assert tuple(tensor.shape) == tuple(want.shape)
    assert torch.equal(tensor, want)


def test_numpy_rng_is_the_documented_stream():
    seed = int(torch.randint(0, 2**63 - 1, (1,), generator=_gen(3), dtype=torch.int64).item())
    a = numpy_rng(_gen(3)).standard_normal(5)
    assert np.array_equal(a, np.random.default_rng(seed).standard_normal(5))


@pytest.mark.parametrize("shape", [(32, 16), (8, 4, 3), (8, 4, 3, 3), (6, 2, 3, 3, 3)])
def test_critical_normal_is_the_numpy_gaussian(shape):
    w = torch.empty(shape, dtype=torch.float64)
    b = torch.empty(shape[0], dtype=torch.float64)
    critical_normal_(w, "tanh", 0.05, b, generator=_gen(1))
    sw = float(dense.critical_sigma_w2("tanh", 0.05))
    rng = numpy_rng(_gen(1))
    c_out, c_in, ks = shape[0], shape[1], shape[2:]
    if len(shape) == 2:
        expected = np_init.dense_weights(c_out, c_in, sw, "gaussian", rng)
    elif len(ks) in (1, 2):
        expected = np_init.to_torch_layout(np_init.gaussian_conv_kernel(ks, c_in, c_out, sigma_w2=sw, rng=rng))
    else:
        expected = np_init.dense_weights(c_out, c_in * 27, sw, "gaussian", rng).reshape(shape)
    _same(w, expected)
    _same(b, np.sqrt(0.05) * rng.standard_normal(shape[0]))
    assert w.meanfield_init.sigma_w2 == pytest.approx(sw, rel=1e-14)
    assert w.meanfield_init.sigma_b2 == 0.05


def test_mean_field_normal_and_float32_layout():
    w = torch.empty(16, 8, 3)
    mean_field_normal_(w, 2.5, generator=_gen(2))
    expected = np_init.to_torch_layout(np_init.gaussian_conv_kernel(3, 8, 16, sigma_w2=2.5, rng=numpy_rng(_gen(2))))
    _same(w, expected)


@pytest.mark.parametrize("ndim", [1, 2])
def test_orthogonal_and_delta_kernels_are_algorithms_1_and_2(ndim):
    shape = (8, 4) + (3,) * ndim
    for init_, build in (
        (orthogonal_conv_, np_init.orthogonal_conv_kernel_1d if ndim == 1 else np_init.orthogonal_conv_kernel),
        (delta_orthogonal_, np_init.delta_orthogonal_kernel_1d if ndim == 1 else np_init.delta_orthogonal_kernel),
    ):
        w = torch.empty(shape, dtype=torch.float64)
        init_(w, 1.7, generator=_gen(5))
        # the paper's isometry (gain^2 = 1.7 * c_out / c_in): fan_in * E W^2 = sigma_w2 for c_in < c_out
        _same(w, np_init.to_torch_layout(build(3, 4, 8, sigma_w2=1.7 * 8 / 4, rng=numpy_rng(_gen(5)))))


@pytest.mark.parametrize(
    "ndim,init_", [(1, orthogonal_conv_), (2, orthogonal_conv_), (1, delta_orthogonal_), (2, delta_orthogonal_)]
)
def test_orthogonal_kernels_are_isometries_of_the_circular_conv_operator(ndim, init_):
    conv_cls = torch.nn.Conv1d if ndim == 1 else torch.nn.Conv2d
    conv = conv_cls(4, 8, 5, padding=2, padding_mode="circular", bias=False)
    init_(conv.weight, generator=_gen(7))
    spatial = (23,) if ndim == 1 else (9, 11)
    x = torch.randn((16, 4) + spatial, generator=_gen(8))
    with torch.no_grad():
        y = conv(x)
    norms_in = x.double().flatten(1).norm(dim=1)
    norms_out = y.double().flatten(1).norm(dim=1)
    # an isometry times sqrt(sigma_w2 c_out / c_in) (sigma_w2 = 1): per unit, the input's second moment
    assert torch.allclose(norms_out, math.sqrt(8 / 4) * norms_in, rtol=FLOAT32_NORM_RTOL, atol=0)


def test_looks_linear_gsm_zero_constnet_leakynet_are_the_numpy_constructions():
    w = torch.empty(6, 4, dtype=torch.float64)
    looks_linear_(w, 2.0, generator=_gen(1))
    _same(w, np_init.orthogonal_looks_linear(6, 4, 2.0, numpy_rng(_gen(1))))
    k = torch.empty(4, 4, 3, 3, dtype=torch.float64)
    looks_linear_(k, 1.0, generator=_gen(2))
    _same(k, np_init.to_torch_layout(np_init.looks_linear_delta_orthogonal(4, (3, 3), 1.0, numpy_rng(_gen(2)))))
    w = torch.empty(6, 4, dtype=torch.float64)
    gsm_(w, generator=_gen(3))
    _same(w, np_init.gsm(6, 4, 2.0, numpy_rng(_gen(3))))
    w = torch.empty(8, 3, dtype=torch.float64)
    zero_(w)
    _same(w, np_init.zero_weights(8, 3))
    ws = [
        torch.empty(5, 3, dtype=torch.float64),
        torch.empty(5, 5, dtype=torch.float64),
        torch.empty(2, 5, dtype=torch.float64),
    ]
    zero_star_(ws, "rademacher", generator=_gen(4))
    for got, want in zip(ws, np_init.zero_star_network([3, 5, 5, 2], "rademacher", numpy_rng(_gen(4)))):
        _same(got, want)
    k = torch.empty(6, 2, 3, 3, dtype=torch.float64)
    constnet_(k, "average")
    _same(k, np_init.to_torch_layout(np_init.averaging_conv(6, 2, (3, 3))))
    constnet_(k, "zero")
    assert not k.any()
    for layer in (1, 2, 3):
        k = torch.empty(4, 4, 3, dtype=torch.float64)
        leakynet_(k, layer, slope=0.5, kind="1")
        kinds = ["1"] * layer
        _same(k, np_init.to_torch_layout(np_init.leakynet(kinds, 4, 0.5, (3,))[layer - 1]))


def test_critical_init_puts_a_tanh_mlp_at_chi_1_equal_1():
    for kernel in ("gaussian", "delta_orthogonal"):
        net = mlp(64, 4, "tanh", n_in=16, n_out=4, init="critical", sigma_b2=0.05).double()
        critical_init_(net, sigma_b2=0.05, kernel=kernel, generator=_gen(0))
        for layer in net:
            if isinstance(layer, torch.nn.Linear):
                spec = layer.weight.meanfield_init
                assert dense.fixed_point("tanh", spec.sigma_w2, spec.sigma_b2).chi_1 == pytest.approx(1.0, abs=1e-6)
                if kernel == "delta_orthogonal" and layer.in_features == layer.out_features:
                    realised = float(layer.weight.detach().pow(2).mean()) * layer.in_features  # orthogonal: exact
                    assert realised == pytest.approx(spec.sigma_w2, rel=1e-6)


def test_critical_init_detects_activations_and_needs_one():
    net = torch.nn.Sequential(
        torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2)
    )
    critical_init_(net, kernel="gaussian", generator=_gen(0))
    # each weight layer: the activation it consumes (the first layer: the one after it)
    assert net[0].weight.meanfield_init.sigma_w2 == pytest.approx(2.0)
    assert net[2].weight.meanfield_init.sigma_w2 == pytest.approx(2.0)
    assert net[4].weight.meanfield_init.sigma_w2 == pytest.approx(float(dense.critical_sigma_w2("tanh", 0.0)))
    bare = torch.nn.Sequential(torch.nn.Linear(4, 4))
    # no activation anywhere: a linear network, critical at sigma_w2 = 1
    critical_init_(bare, kernel="gaussian")
    assert bare[0].weight.meanfield_init.sigma_w2 == 1.0
    critical_init_(bare, activation="relu", kernel="gaussian")
    assert bare[0].weight.meanfield_init.sigma_w2 == pytest.approx(2.0)
    with pytest.raises(ValueError, match="kernel"):
        critical_init_(net, kernel="he")
    with pytest.raises(TypeError, match="model"):
        critical_init_(torch.zeros(3))


@pytest.mark.parametrize(
    "module,name",
    [
        (torch.nn.Tanh(), "tanh"),
        (torch.nn.ReLU(), "relu"),
        (torch.nn.LeakyReLU(0.2), "leaky_relu(slope=0.2)"),
        (torch.nn.GELU(), "gelu"),
        (torch.nn.SiLU(), "swish"),
        (torch.nn.Sigmoid(), "sigmoid"),
        (torch.nn.Softplus(), "softplus"),
        (torch.nn.Hardtanh(), "hard_tanh"),
        (torch.nn.Identity(), "linear"),
    ],
)
def test_activation_modules_map_to_builtins_with_the_same_function(module, name):
    act = activation_from_module(module)
    assert act.name == name and act.is_builtin
    u = np.linspace(-5, 5, 101)
    with torch.no_grad():
        want = module(torch.from_numpy(u)).numpy()
    assert np.allclose(act.phi(u), want, rtol=0, atol=3e-9)  # softplus: PyTorch is linear above 20


def test_other_modules_go_through_from_functions_with_autograd_derivatives():
    assert activation_from_module(torch.nn.ELU(alpha=0.7)) == get_activation("elu", alpha=0.7)
    act = activation_from_module(torch.nn.CELU(alpha=0.7))  # celu: alpha (e^{x / alpha} - 1) for x < 0
    assert not act.is_builtin
    u = np.linspace(-3, 3, 13)
    assert np.allclose(act.phi(u), np.where(u > 0, u, 0.7 * np.expm1(u / 0.7)), atol=1e-14)
    assert np.allclose(act.dphi(u), np.where(u > 0, 1.0, np.exp(u / 0.7)), atol=1e-14)
    tanh_gelu = activation_from_module(torch.nn.GELU(approximate="tanh"))
    assert not tanh_gelu.is_builtin
    sw = critical_sigma_w2(torch.nn.ELU(alpha=1.0), 0.1)
    assert 0.5 < sw < 5.0


def test_bad_arguments_raise_named_errors():
    with pytest.raises(TypeError, match="tensor"):
        critical_normal_(np.zeros((3, 3)), "tanh")
    with pytest.raises(ValueError, match="dimensions"):
        critical_normal_(torch.zeros(3), "tanh")
    with pytest.raises(ValueError, match="empty"):
        critical_normal_(torch.zeros(0, 3), "tanh")
    with pytest.raises(TypeError, match="floating"):
        critical_normal_(torch.zeros(3, 3, dtype=torch.int64), "tanh")
    with pytest.raises(ValueError, match="sigma_b2"):
        critical_normal_(torch.zeros(3, 3), "tanh", -1.0)
    with pytest.raises(ValueError, match="sigma_b2"):
        critical_normal_(torch.zeros(3, 3), "tanh", float("nan"))
    with pytest.raises(TypeError, match="sigma_b2"):
        critical_normal_(torch.zeros(3, 3), "tanh", True)
    with pytest.raises(TypeError, match="generator"):
        critical_normal_(torch.zeros(3, 3), "tanh", generator=0)
    with pytest.raises(ValueError, match="activation"):
        critical_normal_(torch.zeros(3, 3), "nope")
    with pytest.raises(ValueError, match="sigma_w2"):
        delta_orthogonal_(torch.zeros(2, 4, 3), -1.0)
    with pytest.raises(ValueError, match="square"):
        orthogonal_conv_(torch.zeros(4, 4, 3, 5))
    with pytest.raises(ValueError, match="even"):
        gsm_(torch.zeros(3, 4))
    with pytest.raises(ValueError, match="kind"):
        constnet_(torch.zeros(3, 4), "ones")
    with pytest.raises(ValueError, match="slope"):
        leakynet_(torch.zeros(3, 3), 1, slope=2.0)


def test_core_works_without_torch_and_the_bridge_names_the_extra():
    code = textwrap.dedent(
        """
        import sys
        sys.modules["torch"] = None  # import torch now fails
        import meanfield
        from meanfield import dense, init
        assert dense.fixed_point("tanh", 1.5, 0.05).phase == "ordered"
        assert init.orthogonal_conv_kernel(3, 2, 4, rng=0).shape == (3, 3, 4, 2)
        try:
            import meanfield.pytorch
        except ImportError as exc:
            print("IMPORT-ERROR:", exc)
        from meanfield.validation import audit as val
        print("SKIP:", val.unavailable())
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "IMPORT-ERROR:" in out.stdout and INSTALL_HINT in out.stdout
    assert "SKIP: needs the torch extra" in out.stdout


def test_main_job_says_the_extra_is_missing_instead_of_failing(tmp_path):
    # an import hook refusing torch (sys.modules["torch"] = None confuses SciPy's array-API probe)
    code = textwrap.dedent(
        f"""
        import sys
        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "torch" or name.startswith("torch."):
                    raise ImportError("No module named 'torch'")
        sys.meta_path.insert(0, Block())
        from meanfield.figures import load, pytorch_bridge
        from meanfield.cli import run_modules
        paths = pytorch_bridge.fig_audit({str(tmp_path)!r}, size="smoke")
        print("FIGURE:", load(paths[1]).data["skipped"])
        print("OK:", run_modules(["audit"]))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "FIGURE: needs the torch extra" in out.stdout and "OK: True" in out.stdout
    assert "validation.audit: needs the torch extra" in out.stdout + out.stderr
