"""THE TABLE: one small, fast, valid baseline call per public function of meanfield.

Update this file when the public API changes:

- a new public function: add an ``E(...)`` line with every parameter (``test_fuzz_api`` fails
  until every public callable is either here or in :data:`NOT_FUZZED`, and until every parameter
  of its signature is given or listed in ``skip=`` with a reason);
- a renamed parameter: rename the keyword here. ``rng=R(...)`` is passed as ``seed=`` to a
  function that still calls its random source ``seed`` (main before the rng rename), so the table
  works on both sides of that rename;
- an infinity that a docstring documents as a value: add an :class:`Allow` rule to
  :data:`ALLOW_NONFINITE`, with the documented condition as its predicate.

Argument kinds (the mutation catalogue of each is in :mod:`fuzz.catalogue`):
``F`` real scalar, ``I`` integer, ``A`` array, ``B`` bool flag, ``R`` random source,
``ACT`` activation, ``CH`` string choice, ``BK`` array backend, ``SH`` shape (int or tuple),
``IS`` sequence of ints, ``P`` path of a fixture file, ``TXT`` free text, ``FN`` callable,
``MATS`` list of matrices, ``LAY`` finite-width layers, ``DIST`` distribution, ``FP`` pair of
floats, ``IP`` pair of ints, ``TS`` sequence of strings, ``DT`` dtype, ``X`` not mutated.

Baseline values are plain values (copied for every call), ``Lazy(fn)`` (built in the worker for
every call, e.g. from another library function) or ``Fixture(name)`` (a file written once per run
by :func:`fuzz.harness.make_fixtures`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

# ---------------------------------------------------------------------------------------------
# table machinery


@dataclass(frozen=True)
class Lazy:
    fn: Callable[[], Any]


@dataclass(frozen=True)
class Fixture:
    name: str


@dataclass(frozen=True)
class Arg:
    kind: str
    value: Any


@dataclass(frozen=True)
class Entry:
    name: str  # dotted path below ``meanfield``: "dense.fixed_point", "activations.Activation.from_functions"
    args: dict
    skip: dict = field(default_factory=dict)  # parameter -> why it is not given / fuzzed
    #: parameter -> the documentation that lets NaN through it (its "nan" mutations then need no
    #: error; the non-finite results still need an Allow rule)
    nan_ok: dict = field(default_factory=dict)
    #: parameters documented to take None although their default is not None
    none_ok: tuple = ()

    @property
    def module(self) -> str:
        parts = self.name.split(".")
        # a classmethod constructor ("activations.Activation.from_functions") belongs to the class's module
        return ".".join(parts[:-2] if len(parts) > 2 and parts[-2][:1].isupper() else parts[:-1])


def E(function, /, *, skip=None, nan_ok=None, none_ok=(), **args) -> Entry:
    """A table row: the function's registry name, then its baseline arguments by keyword
    (``skip``, ``nan_ok``, ``none_ok``: see :class:`Entry`)."""
    return Entry(function, args, dict(skip or {}), dict(nan_ok or {}), tuple(none_ok))


_REQUIRED = object()


def _kind(kind: str, default: Any = _REQUIRED) -> Callable[..., Arg]:
    """The constructor of the baseline arguments of one kind: ``make(value)`` -> ``Arg(kind, value)``
    (``make()`` gives ``default`` where the kind has one)."""

    def make(v: Any = default) -> Arg:
        if v is _REQUIRED:
            raise TypeError(f"a {kind!r} argument needs its baseline value")
        return Arg(kind, v)

    make.__name__ = make.__qualname__ = kind
    return make


F = _kind("float")
I = _kind("int")
A = _kind("array")
B = _kind("flag")
R = _kind("rng", 0)
ACT = _kind("activation", "tanh")
CH = _kind("choice")
BK = _kind("backend", "numpy")
SH = _kind("shape")
IS = _kind("intseq")
TXT = _kind("text")
FN = _kind("callable")
MATS = _kind("matrices")
LAY = _kind("layers")
DIST = _kind("distribution")
FP = _kind("float_pair")
IP = _kind("int_pair")
TS = _kind("textseq")
DT = _kind("dtype")
X = _kind("fixed")


def P(name):
    return Arg("path", Fixture(name))


# ---------------------------------------------------------------------------------------------
# baseline values (deterministic; tiny sizes so that a baseline call takes milliseconds)

_rng = np.random.default_rng(20240601)
COV2 = np.array([[1.0, 0.3], [0.3, 0.8]])
COV4 = 0.6 * np.eye(4) + 0.2  # a 4-position spatial covariance, PSD
EPS4 = 1e-3 * np.array([[1.0, 0.5, 0.0, 0.5], [0.5, 1.0, 0.5, 0.0], [0.0, 0.5, 1.0, 0.5], [0.5, 0.0, 0.5, 1.0]])
V3 = np.array([0.25, 0.5, 0.25])
X25 = _rng.standard_normal((2, 5))
X53 = _rng.standard_normal((5, 3))
X64 = _rng.standard_normal((6, 4))
W43 = _rng.standard_normal((4, 3))
W23 = _rng.standard_normal((2, 3))
W33 = [_rng.standard_normal((3, 3)) / math.sqrt(3) for _ in range(3)]
GQ_WEIGHTS = [_rng.standard_normal((4, 3)) * math.sqrt(2 / 3), _rng.standard_normal((2, 4)) * math.sqrt(2 / 4)]
MI_WEIGHTS = [
    _rng.standard_normal((4, 3)) * math.sqrt(2 / 3),
    _rng.standard_normal((4, 4)) * math.sqrt(2 / 4),
    _rng.standard_normal((2, 4)) * math.sqrt(2 / 4),
]
KERNEL_1D = _rng.standard_normal((3, 2, 2)) / 3
CONV_X = _rng.standard_normal((2, 5, 2))
CONV_G = _rng.standard_normal((2, 5, 2))
AB32 = 0.1 * np.array([[1.0, 0.5], [0.5, 1.0], [0.2, -0.3]])  # three-layer nets: 3 hidden, 2 modes
UV32 = np.eye(3)[:, :2]  # orthonormal skip vectors
GRID13 = np.linspace(0.0, 6.0, 13)
GRID9 = np.linspace(0.0, 4.0, 9)


def _fw_p0():
    """Masses on GRID13's states of a few squared norms near 1."""
    from meanfield.finite_width import grid_masses

    return grid_masses([0.8, 0.9, 1.0, 1.1, 1.2], GRID13)


def _task_inputs():
    from meanfield.landscape import regression_task

    return regression_task(3, 1.0, 2).inputs


def _task_targets():
    from meanfield.landscape import regression_task

    return regression_task(3, 1.0, 2).targets


def _binary_config():
    from meanfield.landscape import decode_configuration

    return decode_configuration(5, 4, 2)  # (mats, w_out, bias) of a 4-layer width-2 net


#: optional skip-network extras (Orhan 2017 training experiments) left at their None defaults
_SKIP_OPTS = {
    "skips": "optional skip-connection matrices (None: the architecture's identity skips); checked in tests/theory/test_landscape.py",
    "long_skips": "optional long skip matrices (None: none); checked in tests/theory/test_landscape.py",
    "constant_bias": "optional constant-bias pair (None: none); checked in tests/theory/test_landscape.py",
}


def _dense_net():
    from meanfield.train import DenseNet

    return DenseNet(depth=2, width=4)


def _dense_params():
    """Parameters of two width-4 DenseNets on (1, 5) inputs, 3 classes."""
    from meanfield.train import init_parameters

    return [init_parameters(_dense_net(), (1, 5), n_classes=3, rng=i) for i in range(2)]


def _constnet_spec():
    from meanfield.train.symmetric import ConstNetSpec

    return ConstNetSpec(widths=(2, 4), blocks_per_stage=1)


def _constnet_groups():
    from meanfield.train.symmetric import constnet_groups

    return constnet_groups(_constnet_spec())


def _constnet_spec_params():
    """Initial parameters of _constnet_spec on (1, 4, 4) inputs, 3 classes."""
    from meanfield.train import init_parameters

    return init_parameters(_constnet_spec(), (1, 4, 4), n_classes=3, rng=0)


def _mi_cov():
    """A (D=2, P=5, D, P) covariance over inputs x positions: conv.multi_input_covariance of CONV_X."""
    from meanfield.conv import multi_input_covariance

    return multi_input_covariance(CONV_X, 1.5, 0.05, V3, 5)


def _generator():
    return np.random.default_rng(0)


def _cube():
    return (lambda x: x**3), (lambda x: 3 * x**2), (lambda x: 6 * x)


#: validation.report: "NaN/inf in theory, estimate or stderr is allowed: the row then FAILs (a visible verdict)"
_ROW_NAN = (
    "a non-finite theory / estimate / stderr makes the validation row FAIL visibly (validation.report docstrings)"
)


def _comparisons():
    from meanfield.validation.report import Comparison

    return [Comparison("a", 1.0, 1.01, 0.01), Comparison("b", 0.5, 0.6, 0.01, note="off")]


def _tmp_dir():
    import tempfile

    return tempfile.mkdtemp(prefix="meanfield-fuzz-out-")


def _tmp_json():
    return _tmp_dir() + "/table.json"


# ---------------------------------------------------------------------------------------------
# THE TABLE

# fmt: off
# (one row per function: the table reads better unwrapped)
REGISTRY: list[Entry] = [
    # --- gaussian ---------------------------------------------------------------------------
    E("gaussian.expectation", activation=ACT("tanh"), q=F(1.0), derivatives=IP((1, 1)), degree=I(100)),
    E("gaussian.pair_expectation", activation=ACT("tanh"), q1=F(1.0), q2=F(0.5), c=F(0.3), derivatives=IP((0, 0)), degree=I(100)),
    E("gaussian.variance_derivative", activation=ACT("tanh"), q=F(1.0), degree=I(100)),
    E("gaussian.hermite_rule", degree=I(20)),
    E("gaussian.kernel_rule", degree=I(20)),
    # --- activations ------------------------------------------------------------------------
    E("activations.get_activation", activation=ACT("leaky_relu"), slope=F(0.1)),
    E("activations.Activation.from_functions", name=TXT("cube"), phi=FN(Lazy(lambda: _cube()[0])),
      dphi=FN(Lazy(lambda: _cube()[1])), d2phi=FN(Lazy(lambda: _cube()[2])), smooth=B(True),
      breakpoints=A([0.0])),
    # --- backend ----------------------------------------------------------------------------
    E("backend.available_backends"),
    E("backend.get_backend", name=BK()),
    E("backend.spawn_sequences", generator=R(Lazy(_generator)), n=I(3)),
    E("backend.substream", rng=I(0), skip={"key": "*key: integers appended to the SeedSequence's spawn key (rng is fuzzed)"}),
    E("backend.to_numpy", x=X(X25)),  # a copy to host memory, not a check: values pass through unchanged (docstring)
    E("backend.svdvals", backend=BK(), x=A(X25)),
    # --- checks (messages name the argument by the ``name`` given: here the parameter's own name) --
    E("checks.as_float_array", x=A(X25), name=X("x")),
    E("checks.check_bool", flag=B(True), name=X("flag")),
    E("checks.check_correlation", c=F(0.5), name=X("c")),
    E("checks.check_covariance", cov=A(COV2), name=X("cov")),
    E("checks.check_finite", x=A(X25), name=X("x")),
    E("checks.check_int", n=I(3), name=X("n"), minimum=I(1), maximum=I(10)),
    E("checks.check_nonnegative", x=F(1.0), name=X("x")),
    E("checks.check_positive", x=F(1.0), name=X("x")),
    E("checks.check_probability_vector", v=A(V3), name=X("v"), atol=F(1e-10)),
    E("checks.check_rng", rng=R(0)),
    E("checks.check_scalar", x=F(1.0), name=X("x")),
    E("checks.check_variance", x=F(1.0), name=X("x")),
    E("checks.check_variance_vector", v=A(V3), name=X("v"), ndim=I(1)),
    E("checks.resolve_spatial_shape", ndim=I(1), shape=SH((4,)), size=I(4), name=X("shape"), none_ok=("shape", "size")),
    # --- numerics ---------------------------------------------------------------------------
    E("numerics.richardson", coarse=A([1.0, 2.0]), fine=A([1.1, 2.05]), order=F(2.0), ratio=F(2.0), coarse_stderr=A([0.01, 0.01]),
      fine_stderr=A([0.01, 0.02])),
    # --- dense ------------------------------------------------------------------------------
    E("dense.qmap", q=F(1.0), activation=ACT("tanh"), sigma_w2=F(1.5), sigma_b2=F(0.05), degree=I(100)),
    E("dense.cmap", c=F(0.5), activation=ACT("tanh"), sigma_w2=F(1.5), sigma_b2=F(0.05), q=F(1.0), degree=I(100)),
    E("dense.covariance_map", cov=A(COV2), activation=ACT("tanh"), sigma_w2=F(1.5), sigma_b2=F(0.05), degree=I(100)),
    E("dense.derivative_covariance_map", cov=A(COV2), activation=ACT("tanh"), sigma_w2=F(1.5), degree=I(100)),
    E("dense.fixed_point", activation=ACT("tanh"), sigma_w2=F(1.5), sigma_b2=F(0.05), degree=I(100)),
    E("dense.critical_sigma_w2", activation=ACT("tanh"), sigma_b2=F(0.05), degree=I(100), bracket=FP((1e-6, 100.0))),
    E("dense.phase_diagram", activation=ACT("tanh"), sigma_w2=A([1.0, 2.0]), sigma_b2=A([0.0, 0.1]), degree=I(100)),
    E("dense.propagate", cov0=A(COV2), activation=ACT("tanh"), sigma_w2=F(1.5), sigma_b2=F(0.05), depth=I(3), degree=I(100)),
    E("dense.propagate_log", cov0=A(COV2), activation=ACT("tanh"), sigma_w2=F(1.5), sigma_b2=F(0.05), depth=I(3), degree=I(100)),
    E("dense.backward_variance", q0=F(1.0), activation=ACT("tanh"), sigma_w2=F(1.5), sigma_b2=F(0.05), depth=I(5), log=B(False), degree=I(100)),
    E("dense.input_covariance", x=A(X25), sigma_w2=F(1.5), sigma_b2=F(0.05)),
    # --- conv -------------------------------------------------------------------------------
    E("conv.average", cov=A(COV4), v=A(V3), shape=SH(4)),
    E("conv.average_transpose", cov=A(COV4), v=A(V3), shape=SH(4)),
    E("conv.averaging_singular_values", v=A(V3), shape=SH(4)),
    E("conv.cyclic_diagonal_modes", cov=A(COV4), shape=SH(4)),
    E("conv.fourier_eigenvalues", v=A(V3), shape=SH(4)),
    E("conv.spatial_shape", shape=SH((4,))),
    E("conv.fixed_point_covariance", q_star=F(0.5), c_star=F(0.3), size=I(4)),
    E("conv.gs_family", kernel_shape=SH((3, 3)), count=I(3)),
    E("conv.fig_s4_setup"),
    E("conv.fig_s4_theory", depth=I(3)),
    E("conv.covariance_map", cov=A(COV4), activation=ACT("tanh"), sigma_w2=F(1.5), sigma_b2=F(0.05), v=A(V3), shape=SH(4), degree=I(100)),
    E("conv.backward_covariance_map", cov_grad=A(np.eye(4)), cov=A(COV4), activation=ACT("tanh"), sigma_w2=F(1.5), v=A(V3), shape=SH(4), degree=I(100)),
    E("conv.depth_scales", activation=ACT("tanh"), sigma_w2=F(1.5), sigma_b2=F(0.05), v=A(V3), shape=SH(4), degree=I(100)),
    E("conv.propagate", cov0=A(COV4), activation=ACT("tanh"), sigma_w2=F(1.5), sigma_b2=F(0.05), v=A(V3), depth=I(3), shape=SH(4), degree=I(100)),
    E("conv.propagate_log", cov0=A(COV4), activation=ACT("tanh"), sigma_w2=F(1.5), sigma_b2=F(0.05), v=A(V3), depth=I(3), shape=SH(4), degree=I(100)),
    E("conv.gradient_variance_decay", cov0=A(COV4), activation=ACT("tanh"), sigma_w2=F(1.5), sigma_b2=F(0.05), v=A(V3), depth=I(3),
      cov_grad_out=A(np.eye(4)), shape=SH(4), degree=I(100)),
    E("conv.linearized_decay", eps0=A(EPS4), activation=ACT("tanh"), sigma_w2=F(1.5), sigma_b2=F(0.05), v=A(V3), depth=I(3), shape=SH(4), degree=I(100)),
    # --- init -------------------------------------------------------------------------------
    E("init.dense_weights", n_out=I(3), n_in=I(4), sigma_w2=F(1.0), law=CH("gaussian"), rng=R(0), batch_shape=SH(()), backend=BK()),
    E("init.glorot_sigma_w2", fan_in=I(4), fan_out=I(3), slope=F(0.1)),
    E("init.haar_orthogonal", n_out=I(3), n_in=I(4), rng=R(0), batch_shape=SH(()), backend=BK()),
    E("init.he_sigma_w2", slope=F(0.1)),
    E("init.gsm", n_out=I(4), n_in=I(6), sigma_w2=F(2.0), rng=R(0), batch_shape=SH(()), backend=BK()),
    E("init.looks_linear", w0=A(W23)),
    E("init.looks_linear_input", x=A(W23)),
    E("init.orthogonal_looks_linear", n_out=I(4), n_in=I(6), sigma_w2=F(1.0), rng=R(0), batch_shape=SH(()), backend=BK()),
    E("init.conv_matrix", kernel=A(KERNEL_1D), spatial_shape=SH(4)),
    E("init.delta_orthogonal_kernel", kernel_size=I(3), c_in=I(2), c_out=I(3), sigma_w2=F(1.0), rng=R(0)),
    E("init.delta_orthogonal_kernel_1d", kernel_size=I(3), c_in=I(2), c_out=I(3), sigma_w2=F(1.0), rng=R(0)),
    E("init.orthogonal_conv_kernel", kernel_size=I(3), c_in=I(2), c_out=I(2), sigma_w2=F(1.0), rng=R(0)),
    E("init.orthogonal_conv_kernel_1d", kernel_size=I(3), c_in=I(2), c_out=I(2), sigma_w2=F(1.0), rng=R(0)),
    E("init.orthogonal_kernel_variance", kernel_size=I(3), ndim=I(1)),
    E("init.symmetric_projection", n=I(4), rng=R(0)),
    E("init.hadamard", m=I(4)),
    E("init.zero_network", widths=IS([3, 4, 2])),
    E("init.zero_star_network", widths=IS([3, 4, 2]), law=CH("gaussian"), rng=R(0)),
    E("init.zero_weights", n_out=I(3), n_in=I(4)),
    E("init.averaging_conv", n_out=I(2), n_in=I(2), kernel_shape=SH((3, 3))),
    E("init.channel_matrix", n=I(3), kind=CH("I"), gamma=F(0.5)),
    E("init.constnet", widths=IS([2, 4]), blocks_per_stage=I(1), n_input=I(3), n_classes=I(2), kernel_shape=SH((3, 3)), stride=I(2)),
    E("init.delta_kernel", kernel_shape=SH((3, 3))),
    E("init.leakynet", kinds=TS(["I", "1"]), n=I(3), slope=F(0.01), kernel_shape=SH((3, 3)), gamma=A([0.5, 0.9])),
    E("init.looks_linear_delta_orthogonal", n=I(4), kernel_shape=SH((3, 3)), sigma_w2=F(1.0), rng=R(0), backend=BK()),
    E("init.gradient_quotient", weights=MATS(GQ_WEIGHTS), x=A(X53), targets=A(np.array([0, 1, 0, 1, 1])), slope=F(0.0), eps=F(1e-5),
      loss=CH("cross_entropy"), biases=B(False)),
    E("init.gradient_quotient_gradient", weights=MATS(GQ_WEIGHTS), x=A(X53), targets=A(np.array([0, 1, 0, 1, 1])), slope=F(0.0),
      eps=F(1e-5), loss=CH("cross_entropy"), biases=B(False)),
    E("init.metainit", weights=MATS(MI_WEIGHTS), slope=F(0.0), steps=I(2), lr=F(0.1), momentum=F(0.9), eps=F(1e-5), batch_size=I(4),
      loss=CH("cross_entropy"), biases=B(False), eval_batches=I(1), rng=R(0)),
    E("init.conv_singular_values", kernel=A(KERNEL_1D), spatial_shape=SH(4)),
    E("init.to_torch_layout", kernel=A(KERNEL_1D)),
    E("init.from_torch_layout", weight=A(np.moveaxis(KERNEL_1D, 0, -1).copy())),
    E("init.gaussian_conv_kernel", kernel_shape=SH((3,)), c_in=I(2), c_out=I(3), sigma_w2=F(2.0), v=A(V3), rng=R(0), batch_shape=SH(()), backend=BK()),
    E("init.kernel_offsets", kernel_shape=SH((3,))),
    E("init.periodic_conv", x=A(CONV_X), kernel=A(KERNEL_1D), spatial_dims=I(1), backend=BK(), check_finite=B(True)),
    E("init.periodic_conv_transpose", g=A(CONV_G), kernel=A(KERNEL_1D), spatial_dims=I(1), backend=BK(), check_finite=B(True)),
    E("init.periodic_conv_weight_grad", x=A(CONV_X), g=A(CONV_G), kernel_shape=SH((3,)), sum_leading=I(0), backend=BK(), check_finite=B(True)),
    # --- finite_width -----------------------------------------------------------------------
    E("finite_width.Layer", width=I(4), sigma_w2=F(0.5), sigma_b2=F(0.1), fan_in=I(4)),
    E("finite_width.sigma_w2_from_unscaled", variance=F(0.5), fan_in=I(4)),
    E("finite_width.unscaled_sigma_w2", sigma_w2=F(2.0), fan_in=I(4)),
    E("finite_width.cosine_similarity_samples", width=I(5), rho=F(0.5), n_samples=I(100), sigma_w2=F(1.0), rng=R(0), chunk=I(50),
      dtype=DT(np.float64)),
    E("finite_width.critical_exponents", fan_in=I(10), width=I(10), sigma_w2=F(1.5)),
    E("finite_width.quasi_stationary_exponent", fan_in=I(10), width=I(10), sigma_w2=F(1.5)),
    E("finite_width.discretize_operator", grid=A(GRID13), width=I(4), sigma_w2=F(0.5), sigma_b2=F(0.0), activation=ACT("relu"), fan_in=I(4),
      nodes_per_cell=I(2), n_quantiles=I(256), method=CH("auto")),
    E("finite_width.kernel_masses", y=F(1.0), grid=A(GRID13), width=I(4), sigma_w2=F(0.5), sigma_b2=F(0.0), activation=ACT("relu"), fan_in=I(4),
      method=CH("auto"), n_quantiles=I(256)),
    E("finite_width.expected_squared_norm", y0=F(1.0), layers=LAY([(4, 0.5, 0.1), (4, 0.5)])),
    E("finite_width.log_expected_squared_norm", y0=F(1.0), layers=LAY([(4, 0.5, 0.1), (4, 0.5)])),
    E("finite_width.grid_masses", samples=A([0.1, 0.5, 1.2, 3.0]), grid=A(np.linspace(0.0, 4.0, 5))),
    E("finite_width.inner_product_law", grid=A(GRID9), width=I(3), v11=F(1.0), v22=F(1.0), v12=F(0.3)),
    E("finite_width.mean_inner_product", width=I(3), v11=F(1.0), v22=F(1.0), v12=F(0.3)),
    E("finite_width.orthant_probability", rho=F(0.3)),
    E("finite_width.relu_correlation", rho=F(0.3)),
    E("finite_width.preactivation_covariance", gram=A(COV2), sigma_w2=F(0.5), sigma_b2=F(0.1), fan_in=I(2)),
    E("finite_width.propagate_distribution", p0=A(Lazy(_fw_p0)), grid=A(GRID13), layers=LAY([(4, 0.5), (4, 0.5, 0.05)]), activation=ACT("relu"),
      skip={"kwargs": "passed to discretize_operator (fuzzed there)"}),
    E("finite_width.relu_eigenvalue", fan_in=I(10), m=F(-1.5), width=I(10), sigma_w2=F(1.5)),
    E("finite_width.relu_eigenvalue_printed", fan_in=I(10), m=F(-1.5), width=I(10), sigma_w2=F(1.5)),
    E("finite_width.relu_log_eigenvalue", fan_in=I(10), m=F(-1.5), width=I(10), sigma_w2=F(1.5)),
    E("finite_width.relu_kernel", y=F(1.0), z=A([0.5, 1.0, 1.5]), width=I(4), sigma_w2=F(0.5), sigma_b2=F(0.1), fan_in=I(4)),
    E("finite_width.relu_product_density", t=A([0.2, 0.5]), v11=F(1.0), v22=F(1.0), v12=F(0.3), log=B(False)),
    # --- kurtosis ---------------------------------------------------------------------------
    E("kurtosis.transition_matrix", width=I(4), slope=F(0.1), weight_kurtosis=F(3.0), sigma_x2=F(1.0)),
    E("kurtosis.product", widths=IS([3, 3]), slope=F(0.1), weight_kurtosis=F(3.0), sigma_x2=F(1.0)),
    E("kurtosis.propagate", kappa0=F(3.0), c0=F(0.0), widths=IS([3, 3]), slope=F(0.1), weight_kurtosis=F(3.0), sigma_x2=F(1.0)),
    E("kurtosis.spectral_radius", width=I(4), slope=F(0.1), weight_kurtosis=F(3.0)),
    E("kurtosis.trace_determinant", width=I(4), slope=F(0.1), weight_kurtosis=F(3.0)),
    E("kurtosis.depth_to_kurtosis", threshold=F(10.0), kappa0=F(3.0), c0=F(0.0), width=I(4), slope=F(0.1), weight_kurtosis=F(3.0),
      sigma_x2=F(1.0), max_depth=I(1000)),
    E("kurtosis.empirical_variance_distribution", kappa=F(3.0), n=I(10), sigma2=F(1.0)),
    E("kurtosis.input_statistics", x=A(X64), method=CH("pairs"), weight_kurtosis=F(3.0)),
    E("kurtosis.nonzero_probability", widths=IS([3, 3]), log=B(False)),
    E("kurtosis.weight_kurtosis", distribution=DIST("uniform")),
    E("kurtosis.residual_moments", width=I(4), depth=I(3), slope=F(0.1), weight_kurtosis=F(3.0), s2=F(1.0), m4=F(3.0),
      m22=F(1.0), residual=B(True)),
    # --- symmetry ---------------------------------------------------------------------------
    E("symmetry.forward_correlation", w=A(W43), complement=B(False)),
    E("symmetry.backward_correlation", w=A(W43), complement=B(False)),
    E("symmetry.total_correlation", w=A(W43), complement=B(False)),
    E("symmetry.pairwise_mean_cosine", vectors=A(W43), complement=B(False)),
    E("symmetry.closed_form_correlations", kind=CH("replicated_identity"), n_out=I(6), n_in=I(3), replicas=I(1), gamma=F(0.5)),
    E("symmetry.effective_width", c_f=F(0.5), n=I(4)),
    E("symmetry.perturbation_ratio", a=A(X53), axis=I(-1)),
    E("symmetry.propagate_perturbation", alpha=A(np.abs(X53)), epsilon=A(1e-3 * X53), kinds=TS(["I", "1"]), slope=F(0.01), gamma=A([0.5, 0.9])),
    E("symmetry.subnetwork_counts", d=I(3), n_layers=I(2), include_empty=B(True)),
    # --- landscape --------------------------------------------------------------------------
    E("landscape.regression_task", grid_size=I(3), extent=F(1.0), n_components=I(2), rng=R(0)),
    E("landscape.n_binary_parameters", n_layers=I(4), width=I(2), output_bias_bit=B(False)),
    E("landscape.decode_configuration", c=I(5), n_layers=I(4), width=I(2), output_bias_bit=B(False)),
    E("landscape.forward_binary", architecture=CH("residual"), inputs=A(Lazy(_task_inputs)), mats=MATS(Lazy(lambda: _binary_config()[0])),
      w_out=A(Lazy(lambda: _binary_config()[1])), output_bias=F(0.0), biases=A(np.full((3, 2), 0.1))),
    E("landscape.binary_landscape", architecture=CH("plain"), inputs=A(Lazy(_task_inputs)), targets=A(Lazy(_task_targets)),
      biases=A(np.full((3, 2), 0.1)), n_layers=I(4), output_bias_bit=B(False), rtol=F(1e-12), top_bits=I(2)),
    E("landscape.skip_network", architecture=CH("residual"), x=A(X53), weights=MATS(W33), biases=MATS([np.zeros(3)] * 3), skip=_SKIP_OPTS),
    E("landscape.rescaling_deviation", architecture=CH("plain"), x=A(X53), weights=MATS(W33), k=I(0), l=I(1), g=F(10.0),
      biases=MATS([np.full(3, 0.1)] * 3), skip=_SKIP_OPTS),
    E("landscape.mode_energy", a=A([0.5, 0.5]), s=F(2.0), architecture=CH("plain")),
    E("landscape.mode_gradient", a=A([0.5, 0.5]), s=F(2.0), architecture=CH("residual")),
    E("landscape.mode_hessian", a=A([0.5, 0.5]), s=F(2.0), architecture=CH("residual")),
    E("landscape.mode_flow", a0=A([0.1, 0.1]), s=F(2.0), t=A([0.0, 1.0, 2.0]), architecture=CH("plain"), rtol=F(1e-9), atol=F(1e-12)),
    E("landscape.mode_offsets", architecture=CH("residual"), n_weights=I(2)),
    E("landscape.mode_saddle", architecture=CH("residual"), n_weights=I(2)),
    E("landscape.three_layer_energy", a=A(AB32), b=A(AB32), s=A([2.0, 1.0]), u=A(UV32), v=A(UV32)),
    E("landscape.three_layer_gradient_field", a=A(AB32), b=A(AB32), s=A([2.0, 1.0]), u=A(UV32), v=A(UV32), printed=B(False)),
    E("landscape.three_layer_hessian", a=A(AB32), b=A(AB32), s=A([2.0, 1.0]), u=A(UV32), v=A(UV32)),
    E("landscape.three_layer_flow", a0=A(AB32), b0=A(AB32), s=A([2.0, 1.0]), t=A([0.0, 0.5, 1.0]), u=A(UV32), v=A(UV32), printed=B(False),
      rtol=F(1e-9), atol=F(1e-12)),
    E("landscape.permutation_counts", widths=IS([6, 3]), n_classes=I(3)),
    E("landscape.column_covariance_spectrum", n=I(4), tau=F(0.5), log=B(False)),
    E("landscape.controlled_skip_matrix", n=I(4), tau=F(0.5), rng=R(0)),
    E("landscape.supp4_skip_matrix", n=I(4), tau=F(0.5), rng=R(0)),
    E("landscape.folded_orthogonal", n=I(4), n_orthonormal=I(2), rng=R(0)),
    # --- data -------------------------------------------------------------------------------
    E("data.gaussian_inputs", n_inputs=I(3), dim=I(4), q=F(1.0), c=F(0.2), rng=R(0)),
    E("data.load_digits", n_samples=I(10), standardized=B(False)),
    E("data.standardize", x=A(X53), eps=F(1e-12)),
    E("data.read_mnist_idx", path=P("mnist")),
    E("data.read_cifar10_batch", path=P("cifar")),
    # --- simulate (Monte-Carlo simulators) ---------------------------------------------------
    E("simulate.activation_fn", activation=ACT("tanh"), backend=BK()),
    E("simulate.conv_kernels", n_networks=I(2), kernel_shape=SH((3,)), width=I(3), sigma_w2=F(2.0), v=A(V3), init=CH("gaussian"),
      rng=R(Lazy(_generator)), backend=BK()),
    E("simulate.simulate_dense", x=A(X25), activation=ACT("tanh"), sigma_w2=F(1.5), sigma_b2=F(0.05), depth=I(2), width=I(8),
      n_networks=I(2), law=CH("gaussian"), gradients=B(False), backend=BK(), rng=R(0),
      method=CH("auto")),
    E("simulate.simulate_conv", cov0=A(COV4), activation=ACT("tanh"), sigma_w2=F(1.5), sigma_b2=F(0.05), v=A(V3), depth=I(2),
      width=I(3), n_networks=I(2), init=CH("gaussian"), spatial_shape=SH(4), gradients=B(False), backend=BK(), rng=R(0)),
    E("simulate.simulate_pair", x1=A(X25[0]), x2=A(X25[1]), width=I(8), sigma_w2=F(0.25), sigma_b2=F(0.1), n_networks=I(5),
      fan_in=I(5), backend=BK(), rng=R(0)),
    E("simulate.simulate_squared_norms", inputs=A(X25), layers=LAY([(8, 0.25), (8, 0.25, 0.1)]), n_networks=I(4),
      inputs_per_network=I(2), backend=BK(), rng=R(0)),
    E("simulate.layer_moments", widths=IS([3, 3]), slope=F(0.1), law=CH("gaussian"), n_networks=I(100), input_kind=CH("gaussian"),
      backend=BK(), rng=R(0), chunk=I(50)),
    E("simulate.nonzero_fraction", widths=IS([3, 3]), law=CH("gaussian"), n_networks=I(100), input_kind=CH("gaussian"),
      output_width=I(3), backend=BK(), rng=R(0)),
    E("simulate.empirical_variances", x=A(X64), init=CH("he"), depth=I(3), width=I(4), n_networks=I(3), backend=BK(), rng=R(0),
      chunk=I(2), desc=TXT("fuzz"), dtype=CH("float64"), engine=CH("numba"), metainit_steps=I(2), protocol=CH("pooled")),
    E("simulate.metainit_weights", n_networks=I(2), depth=I(3), width=I(4), w0=I(4), rng=R(0), steps=I(2)),
    E("simulate.looks_linear_delta_orthogonal_forward", x=A(CONV_X), depth=I(2), width=I(4), kernel_shape=SH(3), rng=R(0),
      tangent=A(CONV_G), backend=BK()),
    E("simulate.simulate_fig_s4", depth=I(2), width=I(4), n_networks=I(2), backend=BK(), rng=R(0)),
    E("simulate.softmax_xent", logits=A(X53), labels=A(np.array([0, 1, 2, 0, 1])), xp=X(np)),
    E("simulate.ConstNet.initial", widths=IS([2, 4]), blocks_per_stage=I(1), n_input=I(1), n_classes=I(3), kernel_shape=SH((3,)),
      stride=I(1), batchnorm=B(False), head=A(np.zeros((3, 4))), backend=BK()),
    E("simulate.LeakyNet.initial", kinds=TS(["I", "1"]), n=I(4), n_input=I(1), n_classes=I(3), kernel_shape=SH((3,)),
      slope=F(0.01), head=A(np.zeros((3, 4))), gamma=A([0.5, 0.9]), backend=BK(),
      skip={"rho": "deprecated alias of slope (giving both raises TypeError; tests/simulate/test_networks.py)"}),
    # --- validation comparison helpers, report, runner ----------------------------------------
    E("validation.finite_width.domain_truncation", m=F(-1.5), width=I(10), sigma_w2=F(0.2), top=F(1e6), fan_in=I(10)),
    E("simulate.fig1_variances", full=B(False), backend=BK(), rng=R(0), n_networks=I(2), n_inputs=I(4), depth=I(3), n_metainit=I(1),
      metainit_steps=I(2)),
    E("compare.Comparison", name=TXT("row"), theory=F(1.0), estimate=F(1.01), stderr=F(0.01), z=F(4.5), systematic=F(0.0),
      note=TXT(""), side=CH("both"), kind=CH("check"), nan_ok={f: _ROW_NAN for f in ("theory", "estimate", "stderr")}),
    E("compare.passes", theory=F(1.0), estimate=F(1.01), stderr=F(0.01), z=F(4.5), systematic=F(0.0), side=CH("both"),
      nan_ok={f: _ROW_NAN for f in ("theory", "estimate", "stderr")}),
    E("compare.not_reproduced", rows=X(Lazy(_comparisons))),
    E("compare.format_table", title=TXT("fuzz"), rows=X(Lazy(_comparisons))),
    E("compare.mean_and_stderr", samples=A(X53), axis=I(0), nan_ok={"samples": _ROW_NAN}),
    E("io.run_metadata", skip={"fields": "free-form metadata copied into the block"}),
    E("compare.table_records", rows=X(Lazy(_comparisons))),
    E("io.to_jsonable", obj=X({"a": np.arange(3.0), "b": [1.0, float("nan")]})),
    E("io.git_commit"),
    E("validation.report.write_table_json", path=X(Lazy(_tmp_json)), title=TXT("fuzz"), rows=X(Lazy(_comparisons)), rng=I(0), full=B(False),
      backend=BK(), seconds=F(1.0)),
    E("cli.check_backend_available", backend=BK()),
    E("cli.backend_description", backend=BK()),
    E("cli.check_out_dir", out_dir=X(Lazy(_tmp_dir))),
    E("cli.check_run_arguments", backend=BK(), full=B(False), rng=I(0)),
    E("validation.runner.comparison_modules"),
    # --- figures ----------------------------------------------------------------------------
    E("io.load", path=P("figure_json")),
    E("io.write_json", path=X(Lazy(_tmp_json)), metadata=X({"name": "fuzz"}), data=X({"a": np.arange(3.0)}),
      axes=X({"a": ["i"]}), check_axes=B(True)),
    E("compare.student_z", n_samples=I(10), z=F(4.5)),
    # --- conv, NTK, Mehler, finite width, spectra, landscape, simulators, training, validation -------
    E("conv.cmap_jacobian", u=A(EPS4), activation=ACT("tanh"), sigma_w2=F(1.5), sigma_b2=F(0.05), degree=I(50)),
    E("conv.cmap_jacobian_eigenbasis", activation=ACT("tanh"), sigma_w2=F(1.5), sigma_b2=F(0.05), size=I(3), degree=I(50)),
    E("conv.multi_input_covariance", x=A(CONV_X), sigma_w2=F(1.5), sigma_b2=F(0.05), v=A(V3), shape=SH(5)),
    E("conv.multi_input_covariance_map", cov=A(Lazy(_mi_cov)), activation=ACT("tanh"), sigma_w2=F(1.5), sigma_b2=F(0.05), v=A(V3), shape=SH(5),
      degree=I(50)),
    E("conv.multi_input_propagate", cov0=A(Lazy(_mi_cov)), activation=ACT("tanh"), sigma_w2=F(1.5), sigma_b2=F(0.05), v=A(V3), depth=I(2),
      shape=SH(5), degree=I(50)),
    E("finite_width.component_cdf", x=A([-0.5, 0.0, 0.7]), law=A(Lazy(_fw_p0)), states=A(GRID13), sigma_w2=F(2.0), sigma_b2=F(0.0), fan_in=I(5),
      activation=ACT("relu")),
    E("finite_width.joint_component_cdf", x=A([0.3, -0.2]), law=A(Lazy(_fw_p0)), states=A(GRID13), sigma_w2=F(2.0), sigma_b2=F(0.0), fan_in=I(5),
      activation=ACT("relu")),
    E("finite_width.cosine_law_over_depth", gram0=A(COV2), depth=I(2), width=I(4), sigma_w2=F(2.0), sigma_b2=F(0.0), fan_in=I(4),
      activation=ACT("relu"), n_samples=I(200), bins=I(10), rng=R(0)),
    E("finite_width.gram_chain_samples", gram0=A(COV2), depth=I(2), width=I(4), sigma_w2=F(2.0), sigma_b2=F(0.0), fan_in=I(4),
      activation=ACT("relu"), n_samples=I(200), rng=R(0)),
    E("finite_width.gsm_product_density", x=A([0.5, 1.0, 2.0]), depth=I(2)),
    E("finite_width.gsm_product_moments", depth=I(2), k=A([0, 1, 2])),
    E("finite_width.gsm_second_moment", depth=I(2), n=I(4)),
    E("landscape.bias_penalty", biases=MATS([np.full(3, 0.1), np.full(3, -0.2)]), targets=MATS([np.zeros(3), np.full(3, 0.1)]), strength=F(0.5)),
    E("landscape.bias_targets", widths=IS([3, 2]), sigma=F(0.5), rng=R(0)),
    E("landscape.degenerate_fraction", eigenvalues=A([1.0, 1e-9, -0.5, 0.0]), rtol=F(1e-6)),
    E("landscape.landscape_census", architecture=CH("plain"), inputs=A(Lazy(_task_inputs)), targets=A(Lazy(_task_targets)),
      biases=A(np.full((3, 2), 0.1)), n_layers=I(4), output_bias_bit=B(False), rtol=F(1e-12), chunk_bits=I(2), chunks=IS([0, 1]),
      cross_neighbours=CH("auto")),
    E("landscape.singularity_measures", weights=MATS(W33), tol=F(1e-3)),
    E("landscape.skip_network_hessian", architecture=CH("residual"), x=A(X53), y=A(X53[:, ::-1].copy()), weights=MATS(W33),
      biases=MATS([np.zeros(3)] * 3), skip=_SKIP_OPTS),
    E("ntk.constnet_ntk", x=A(_rng.standard_normal((2, 4, 4, 1))), widths=IS([2, 4]), n_input=I(1), n_classes=I(3), stride=I(2)),
    E("ntk.ntk_map", cov=A(COV2), ntk=A(COV2), activation=ACT("tanh"), sigma_w2=F(1.5), sigma_b2=F(0.05), degree=I(50)),
    E("ntk.ntk_fixed_point", activation=ACT("tanh"), sigma_w2=F(1.5), sigma_b2=F(0.05), degree=I(50)),
    E("mehler.propagate_mehler", cov0=A(COV2), activation=ACT("tanh"), sigma_w2=F(1.5), sigma_b2=F(0.05), depth=I(3), ntk=B(True),
      rtol=F(1e-10)),
    E("mehler.mehler_layer_maps", activation=ACT("tanh"), q1=A(np.array([1.0, 0.8])), q2=A(np.array([1.0, 0.8])),
      c=A(np.array([[1.0, 0.3], [0.3, 1.0]])), rtol=F(1e-10), derivative=B(True)),
    E("ntk.propagate_ntk", cov0=A(COV2), activation=ACT("tanh"), sigma_w2=F(1.5), sigma_b2=F(0.05), depth=I(3), degree=I(50)),
    E("ntk.conv_ntk_map", cov=A(Lazy(_mi_cov)), ntk=A(Lazy(_mi_cov)), activation=ACT("tanh"), sigma_w2=F(1.5), sigma_b2=F(0.05), v=A(V3),
      shape=SH(5), degree=I(50)),
    E("ntk.propagate_conv_ntk", cov0=A(Lazy(_mi_cov)), activation=ACT("tanh"), sigma_w2=F(1.5), sigma_b2=F(0.05), v=A(V3), depth=I(2),
      shape=SH(5), degree=I(50)),
    E("ntk.conv_ntk_fixed_point", activation=ACT("tanh"), sigma_w2=F(0.8), sigma_b2=F(0.05), v=A(V3), shape=SH(5), degree=I(50)),
    E("parallel.chunk_ranges", n=I(10), chunk_size=I(3)),
    E("parallel.chunk_streams", rng=R(0), n_chunks=I(3)),
    E("parallel.one_blas_thread"),
    E("spectra.derivative_law", activation=ACT("tanh"), q=F(0.5), n_atoms=I(200)),
    E("spectra.spectrum_moments", activation=ACT("tanh"), sigma_w2=F(1.05), sigma_b2=F(0.01), depth=I(3), weights=CH("orthogonal"), q=F(0.5)),
    E("spectra.jacobian_spectrum", activation=ACT("tanh"), sigma_w2=F(1.05), sigma_b2=F(0.01), depth=I(3), weights=CH("orthogonal"), q=F(0.5),
      n_points=I(50), decades=F(4.0), lam_range=FP((1e-3, 10.0)), eta=F(1e-3), n_atoms=I(200), accuracy=CH("ignore")),
    E("spectra.conv_jacobian_spectrum", activation=ACT("tanh"), sigma_w2=F(1.05), sigma_b2=F(0.01), depth=I(3), kernel=CH("delta_orthogonal"),
      q=F(0.5), n_points=I(50), n_atoms=I(200), none_ok=("q",)),
    E("validation.conv_inputs.simulate_multi_input", x=A(CONV_X), activation=ACT("tanh"), sigma_w2=F(1.5), sigma_b2=F(0.05), v=A(V3), depth=I(2),
      width=I(3), n_networks=I(2), rng=R(0), backend=BK()),
    E("validation.ntk.constnet_empirical_ntk", x=A(_rng.standard_normal((2, 4, 4, 1))), widths=IS([2, 4]), n_classes=I(3)),
    E("simulate.jacobian_singular_values", activation=ACT("tanh"), sigma_w2=F(1.05), sigma_b2=F(0.01), depth=I(2), width=I(4),
      n_networks=I(2), weights=CH("orthogonal"), q=F(0.5), rng=R(0), backend=BK()),
    E("simulate.conv_jacobian_singular_values", activation=ACT("tanh"), sigma_w2=F(1.05), sigma_b2=F(0.01), depth=I(2), width=I(2),
      size=I(4), n_networks=I(2), kernel=CH("delta_orthogonal"), kernel_size=I(3), q=F(0.5), rng=R(0), backend=BK()),
    E("simulate.conv2d_jacobian_singular_values", activation=ACT("tanh"), sigma_w2=F(1.05), sigma_b2=F(0.01), depth=I(2),
      width=I(2), shape=SH((3, 3)), n_networks=I(2), kernel=CH("delta_orthogonal"), kernel_size=I(3), q=F(0.5), rng=R(0),
      backend=BK()),
    E("simulate.empirical_ntk", x=A(X25), activation=ACT("tanh"), sigma_w2=F(1.5), sigma_b2=F(0.05), depth=I(2), width=I(4),
      n_networks=I(2), method=CH("numpy"), rng=R(0), backend=BK()),
    E("simulate.empirical_conv_ntk", x=A(CONV_X), activation=ACT("tanh"), sigma_w2=F(1.5), sigma_b2=F(0.05), v=A(V3), depth=I(2),
      width=I(2), n_networks=I(2), position=I(0), rng=R(0), backend=BK()),
    E("validation.kurtosis_conv.conv_pair_moments", n_networks=I(4), rng=R(0), chunk=I(3), backend=BK()),
    E("simulate.empirical_periodic_cnn_ntk", x=A(CONV_X), activation=ACT("tanh"), sigma_w2=F(1.5), sigma_b2=F(0.05), v=A(V3),
      depth=I(2), width=I(2), n_networks=I(2), position=I(0), rng=R(0), backend=BK()),
    E("simulate.simulate_conv_moments", channels=I(2), kernel_size=I(3), positions=I(4), depth=I(2), n_networks=I(4), slope=F(0.1),
      rng=R(0), backend=BK()),
    E("simulate.simulate_residual_moments", width=I(3), depth=I(2), n_networks=I(4), slope=F(0.1), residual=B(True), rng=R(0),
      backend=BK()),
    E("compare.z_score", a=A([1.0, 1.2, 0.9]), b=A([0.5, 0.6, 0.4, 0.7])),
    E("validation.trainability.clear_cache"),
    E("validation.trainability.mode_energy_fraction", v=A(np.full((3, 3), 1 / 9)), shape=SH((4, 4)), depth=I(3)),
    E("validation.trainability.cnn_learning_rate", depth=I(1000)),
    E("compare.rank_correlation", x=A([0.3, 1.2, 0.9, 2.0, 0.1]), y=A([0.5, 0.6, 0.4, 0.7, 0.2]), alternative=CH("less")),
    E("validation.audit.unavailable"),
    E("train.DenseNet", depth=I(2), width=I(4), activation=CH("tanh"), init=CH("gaussian"), sigma_w2=F(1.0), sigma_b2=F(0.0),
      slope=F(0.0)),
    E("train.ConvNet", depth=I(2), channels=I(2), ndim=I(1), kernel_size=I(3), activation=CH("tanh"), init=CH("gaussian"),
      sigma_w2=F(1.0), sigma_b2=F(0.0), v=A(V3), slope=F(0.0), readout=CH("pool")),
    E("train.init_parameters", net=X(Lazy(_dense_net)), input_shape=SH((1, 5)), n_classes=I(3), rng=R(0)),
    E("train.ensemble_forward", net=X(Lazy(_dense_net)), parameters=X(Lazy(_dense_params)),
      x=A(_rng.standard_normal((2, 3, 1, 5))), dtype=CH("float64")),
    E("train.ConstNetSpec", widths=IS((2, 4)), blocks_per_stage=I(1), kernel_size=I(3), stride=I(2),
      init=CH("zero")),
    E("train.LeakyNetSpec", kinds=TS(("I", "1")), width=I(2), slope=F(0.01), kernel_size=I(3),
      gamma=X(None), init=CH("leaky")),
    E("train.ReplicatedNetSpec", width=I(4), unique=I(2), noise=F(0.1)),
    E("train.SymmetryBreaking", dropout=F(0.01), grad_noise=F(0.0), reduction_noise=F(0.0),
      compute_dtype=CH("bfloat16"), kernels=CH("unit_exact")),
    E("train.conv_kernels", spec=X(Lazy(_constnet_spec)), parameters=X(Lazy(_constnet_spec_params))),
    E("train.correlation_probe", which=CH("forward"), complement=B(True)),
    E("train.constnet_groups", spec=X(Lazy(_constnet_spec))),
    E("validation.symmetry_groups.group_separation", series=A(_rng.standard_normal((4, 3))), groups=A(np.array([0, 0, 1, 1])),
      strata=A(np.array([0, 0, 0, 0]))),
    E("validation.symmetry_groups.constnet_group_series", groups=X(Lazy(_constnet_groups)),
      one_minus_cf=A(np.full((3, 5), 0.1)), one_minus_cb=A(np.full((3, 5), 0.2))),
    E("validation.symmetry_groups.clear_cache"),
    E("validation.symmetry_breaking.clear_cache"),
    E("train.SkipNet", architecture=CH("residual"), depth=I(2), width=I(4), sigma_w2=F(1.0),
      bias_init_sigma=F(0.1), batchnorm_layer=I(0),
      skip={"skips": "a callable rng -> (width, width) matrix factory (TypeError for non-callables, tested in test_skip_nets)",
            "long_skips": "as skips", "monitor": "a measurement callable (TypeError for non-callables)",
            "constant_bias": "a pair of floats, each checked by check_scalar (tested in test_skip_nets)",
            "bias_reg": "a pair of floats in [0, 1e6], each checked by check_scalar (tested in test_skip_nets)"},
      none_ok=("bias_init_sigma", "batchnorm_layer")),
]

# fmt: on

#: Entries of fuzz.selftest, for the harness's own tests (not public API; never in a campaign).
SELFTEST_REGISTRY: list[Entry] = [
    E("selftest.well_behaved", x=F(4.0), flag=B(False)),
    E("selftest.hangs", x=F(1.0)),
    E("selftest.crashes", x=F(1.0)),
    E("selftest.sloppy", x=F(1.0)),
]

#: Public callables that are not fuzzed, and why. Everything else public (see :mod:`fuzz.api`)
#: must be in REGISTRY; ``test_registry_covers_every_public_callable`` fails otherwise.
_RESULT = "result container: a frozen dataclass the library returns, not built from user input"
NOT_FUZZED: dict[str, str] = {
    name: _RESULT
    for name in [
        "conv.BackwardPropagation",
        "conv.ConvDepthScales",
        "conv.LinearizedDecay",
        "data.Dataset",
        "dense.FixedPoint",
        "mehler.MehlerMaps",
        "mehler.MehlerPropagation",
        "dense.LogPropagation",
        "dense.PhaseDiagram",
        "finite_width.DiscreteOperator",
        "finite_width.TransitionKernel",
        "finite_width.CriticalExponents",
        "init.ConstNetInit",
        "init.GradientQuotient",
        "init.MetaInitResult",
        "kurtosis.EmpiricalVarianceDistribution",
        "kurtosis.InputStatistics",
        "kurtosis.KurtosisPropagation",
        "kurtosis.LemmaProduct",
        "kurtosis.ResidualMoments",
        "kurtosis.TraceDeterminant",
        "landscape.LandscapeResult",
        "landscape.ModeTrajectory",
        "landscape.PermutationCounts",
        "landscape.RegressionTask",
        "landscape.ThreeLayerHessian",
        "landscape.ThreeLayerTrajectory",
        "numerics.RichardsonEstimate",
        "symmetry.ClosedFormCorrelations",
        "symmetry.SubnetworkCounts",
        "simulate.DenseSimulation",
        "simulate.ConvSimulation",
        "simulate.LayerMoments",
        "simulate.LooksLinearForward",
        "simulate.PairSimulation",
        "io.FigureData",
    ]
}
NOT_FUZZED["activations.Activation"] = (
    "built by get_activation (built-ins) and Activation.from_functions (user functions), both fuzzed; "
    "the raw dataclass constructor holds kernel codes and is not a user entry point"
)
NOT_FUZZED["spectra.SpectrumAccuracyWarning"] = "a warning class (raised by jacobian_spectrum, which is fuzzed)"
NOT_FUZZED["spectra.SpectrumAccuracyError"] = (
    "an exception class carrying a result (raised by jacobian_spectrum, which is fuzzed)"
)
NOT_FUZZED["backend.Backend"] = "built by get_backend (fuzzed); the raw dataclass holds an array module"
for _net in ("ConstNet", "LeakyNet"):
    NOT_FUZZED[f"simulate.{_net}"] = (
        f"built by {_net}.initial (fuzzed); the raw dataclass holds the backend's parameter arrays"
    )
for _mod in ("conv", "dense", "finite_width", "kurtosis", "landscape", "symmetry"):
    NOT_FUZZED[f"validation.{_mod}.run"] = (
        "a whole theory-vs-simulation comparison (seconds to minutes a call; full=True runs the paper's "
        "sizes); run by `meanfield validate` and its tests, its arguments checked by validation.runner"
    )
NOT_FUZZED["validation.kurtosis_conv.run"] = NOT_FUZZED["validation.conv.run"]
NOT_FUZZED["checks.open_regular_file"] = (
    "opens any regular file without judging its content (the readers built on it judge theirs and are fuzzed: "
    "data.read_mnist_idx, data.read_cifar10_batch, figures.load); FIFOs, devices and directories are "
    "refused, tested with the readers in tests/contracts/test_readers_bounded.py"
)
NOT_FUZZED["validation.spectra.conv2d_rows"] = (
    "rows of validation.spectra.run (simulates networks for seconds); run there"
)
NOT_FUZZED["validation.ntk.conv_mode_rows"] = "rows of validation.ntk.run (simulates networks for seconds); run there"
NOT_FUZZED["validation.conv.isometry_rows"] = "rows of validation.conv.run (simulates networks for seconds); run there"
NOT_FUZZED["validation.kurtosis.fig1_rows"] = (
    "rows of validation.kurtosis.run (simulates >= 1,000 networks and MetaInit, tens of seconds); its arguments "
    "are checked by validation.runner.check_run_arguments; run by tests/figures/test_figures_grzejdziak2023.py"
)
NOT_FUZZED["validation.kurtosis.variance_rows"] = (
    "rows of validation.kurtosis.run (draws 40,000 samples per row, seconds); its arguments are checked by "
    "validation.runner.check_run_arguments; run by tests/figures/test_figures_grzejdziak2023.py"
)
NOT_FUZZED["validation.landscape.untrained_rows"] = (
    "rows of validation.landscape.run (exhaustive binary landscapes, tens of seconds); its argument checks are "
    "tested in tests/theory/test_landscape.py (test_validation_untrained_rows_checks_its_arguments)"
)
NOT_FUZZED["validation.finite_width.eigen_rows"] = (
    "rows of validation.finite_width.run (seconds of quadrature); run there"
)
for _name in (
    "CliParser",
    "add_common_arguments",
    "check_argv",
    "exit_on_closed_pipe",
    "main",
    "progress",
    "run_modules",
    "size_from_args",
    "validate_arguments",
    "validate_main",
    "validate_module_main",
):
    NOT_FUZZED[f"cli.{_name}"] = (
        "command-line plumbing (argparse parsers, entry points, progress bar): tested through the CLI in "
        "tests/contracts/test_cli.py and tests/validation/test_runners.py"
    )

# result containers: records returned by fuzzed functions (their fields are checked there)
for _name in [
    "conv.CMapEigenbasis",
    "finite_width.CosineLaw",
    "finite_width.GramChain",
    "landscape.HessianSpectrum",
    "landscape.LandscapeCensus",
    "landscape.SingularityMeasures",
    "ntk.ConvNTKFixedPoint",
    "ntk.NTKFixedPoint",
    "ntk.NTKPropagation",
    "ntk.NTKStep",
    "parallel.Moments",
    "spectra.DerivativeLaw",
    "spectra.JacobianSpectrum",
    "spectra.SpectrumMoments",
    "simulate.MomentSimulation",
    "train.SkipTrainingResult",
    "train.TrainingCurves",
    "train.TrainingData",
]:
    NOT_FUZZED[_name] = _RESULT
for _mod in ("audit", "conv_inputs", "ntk", "spectra", "trainability"):
    NOT_FUZZED[f"validation.{_mod}.run"] = NOT_FUZZED["validation.dense.run"]
NOT_FUZZED["validation.layer_rules.run"] = NOT_FUZZED["validation.dense.run"]
for _name in ("astype", "concat", "diagonal", "matrix_transpose"):
    NOT_FUZZED[f"backend.{_name}"] = (
        "array-API shim over an array module `xp` (NumPy / CuPy / array-API namespaces) in the simulators' hot "
        "paths: like xp's own function it passes NaN / inf / complex through and leaves shape errors to xp "
        "(fuzzing them gives BAD verdicts by that design: 26 of 46 calls)"
    )
_EXECUTOR = (
    "parallel executor / scheduler plumbing (worker processes, a Dask client, a context manager): "
    "starting pools hundreds of times is not a unit call; tested in tests/simulate/test_parallel.py"
)
for _name in (
    "DaskExecutor",
    "Executor",
    "ProcessExecutor",
    "SerialExecutor",
    "current",
    "executor_from_options",
    "using",
    "map_chunks",
    "ensemble",
    "sweep",
):
    NOT_FUZZED[f"parallel.{_name}"] = _EXECUTOR
for _name in ("add_parallel_arguments", "open_executor"):
    NOT_FUZZED[f"cli.{_name}"] = NOT_FUZZED["cli.main"]
NOT_FUZZED["validation.runner.main_for"] = NOT_FUZZED["cli.main"]
_TRAINING = (
    "trains an ensemble of networks with PyTorch (seconds even at the smallest size); tested in its own test module"
)
for _name in (
    "train.train_skip_ensemble",
    "train.rescaled_accuracy_ratio",
    "train.train_ensemble",
    "validation.trainability.experiment",
    "validation.trainability.rows",
):
    NOT_FUZZED[_name] = _TRAINING
NOT_FUZZED["validation.trainability.depth_scale_agreement"] = (
    "reads the result dict of validation.trainability.experiment (a training sweep, seconds); tested in "
    "tests/train/test_trainability.py"
)
for _name in (
    "validation.symmetry_breaking.constnet_noise_table",
    "validation.symmetry_breaking.leakynet_averaging_table",
    "validation.symmetry_breaking.run",
):
    NOT_FUZZED[_name] = _TRAINING + " (tests/train/test_symmetry_breaking.py, smoke size)"
for _name in ("train.platform_symmetry", "validation.symmetry_breaking.platform_probe"):
    NOT_FUZZED[_name] = "one training step in PyTorch (seconds); tested in tests/train/test_symmetry_breaking.py"
NOT_FUZZED["validation.symmetry_breaking.exact_symmetry_rows"] = (
    "reads platform_probe's dict (a training step); tested in tests/train/test_symmetry_breaking.py"
)
NOT_FUZZED["train.PlatformSymmetry"] = _RESULT
NOT_FUZZED["checks.renamed_kwargs"] = (
    "a decorator for the library's own functions; tested in tests/contracts/test_conventions.py"
)
NOT_FUZZED["validation.runner.comparison_run"] = (
    "a decorator for the comparison modules' run; tested in tests/contracts/test_conventions.py"
)
NOT_FUZZED["checks.doc_sections"] = (
    "a decorator for the library's own docstrings; tested in tests/contracts/test_conventions.py"
)
NOT_FUZZED["train.unit_exact_conv"] = (
    "takes the torch module and tensors; checked against conv2d in tests/train/test_symmetry_breaking.py"
)
for _name in ("validation.symmetry_groups.group_behaviour", "validation.symmetry_groups.group_behaviour_row"):
    NOT_FUZZED[_name] = _TRAINING + " (tests/train/test_symmetry_groups.py, smoke size)"
for _name in (
    "train.ConstNetGroups",
    "validation.symmetry_groups.GroupBehaviour",
    "validation.symmetry_groups.GroupSeparation",
    "validation.symmetry_groups.GroupSeries",
):
    NOT_FUZZED[_name] = _RESULT
NOT_FUZZED["validation.symmetry_breaking.TrainingTable"] = (
    "result of constnet_noise_table / leakynet_averaging_table (training runs); tested in tests/train/test_symmetry_breaking.py"
)
NOT_FUZZED["validation.symmetry_breaking.table_data"] = (
    "loads a data set (digits, or the user's CIFAR-10 / MNIST files); tested in tests/train/test_symmetry_breaking.py"
)
NOT_FUZZED["validation.symmetry_breaking.table_2_metrics"] = (
    "reads a TrainingTable (training runs, seconds); tested in tests/train/test_symmetry_breaking.py"
)
NOT_FUZZED["validation.trainability.kurtosis_rank_test"] = NOT_FUZZED["validation.trainability.depth_scale_agreement"]
NOT_FUZZED["compare.RankTest"] = _RESULT
NOT_FUZZED["validation.trainability.nonuniform_v_rank_test"] = NOT_FUZZED[
    "validation.trainability.depth_scale_agreement"
]
NOT_FUZZED["train.load_training_data"] = (
    "loads and downsamples scikit-learn's digits or the user's MNIST / CIFAR-10 files (seconds a call); "
    "tested in tests/train/test_training.py"
)
NOT_FUZZED["validation.runner.module_backend"] = (
    "CLI plumbing: reads a comparison module's BACKENDS tuple (a module object, not user data); tested in "
    "tests/contracts/test_backends_cli.py"
)
NOT_FUZZED["validation.runner.unavailable"] = (
    "CLI plumbing: calls a comparison module's unavailable() (a module object, not user data); tested in "
    "tests/validation/test_runners.py"
)
NOT_FUZZED["validation.trainability.training_data"] = NOT_FUZZED["train.load_training_data"]
NOT_FUZZED["train.skip_ensemble_hessians"] = (
    "needs a SkipTrainingResult (a PyTorch training run, seconds); its argument checks and both methods are "
    "tested in tests/train/test_symmetry_training.py"
)

# ---------------------------------------------------------------------------------------------
# documented non-finite values


@dataclass(frozen=True)
class Allow:
    """Non-finite values that ``function``'s documentation states, at ``field`` of its result.

    ``field`` is the attribute path below the result ("" for the result itself, "q_star",
    "fixed_point.xi_c"; list and array indices are dropped). ``where(result, kwargs)`` returns
    True (or a boolean mask broadcastable to the field) where the documented condition holds;
    a non-finite value elsewhere, an infinity of the other sign than ``sign``, or a NaN unless
    ``nan`` is set, is still BAD.
    """

    function: str
    field: str
    where: Callable[[Any, dict], Any]
    doc: str
    nan: bool = False
    sign: int = 0  # +1: only +inf is documented, -1: only -inf, 0: either


#: |chi - 1| below which the library calls a map critical (dense.CRITICAL_ATOL = 1e-9)
_CRIT = 1e-9


def _chi_at_least_one(chi_field):
    return lambda r, kw: getattr(r, chi_field) >= 1.0 - _CRIT


def _fp_chi(chi_field):
    return lambda r, kw: getattr(r.fixed_point, chi_field) >= 1.0 - _CRIT


def _zero_expectation(kw):
    """Rows x y0 where E|x^(l)|^2 = 0 exactly: y0 = 0 and no bias so far, or after a layer with
    sigma_w2 = sigma_b2 = 0 (and no bias since)."""
    y0 = np.asarray(kw["y0"], dtype=float)
    zero = np.broadcast_to(y0 == 0.0, y0.shape).copy()
    rows = [zero.copy()]
    for layer in kw["layers"]:
        if hasattr(layer, "width"):
            sw, sb = float(layer.sigma_w2), float(layer.sigma_b2)
        else:
            sw, sb = float(layer[1]), float(layer[2]) if len(layer) > 2 else 0.0
        if sb > 0.0:
            zero[...] = False
        elif sw == 0.0:
            zero[...] = True
        rows.append(zero.copy())
    return np.array(rows)


def _sign_or_q_inf(r, kw, prefix):
    """Where FixedPoint's chis are documented as inf: activation sign, or q* = inf."""
    act = kw.get("activation")
    if getattr(act, "name", act) == "sign":
        return True
    obj = r.fixed_point if prefix else r
    return np.isinf(np.asarray(obj.q_star))


ALLOW_NONFINITE: list[Allow] = [
    # dense.FixedPoint: "q_star: inf when q grows without bound, e.g. ReLU with sigma_w2 > 2";
    # q can only run away when the q-map's slope is >= 1 there (chi_q >= 1).
    Allow(
        "dense.fixed_point", "q_star", _chi_at_least_one("chi_q"), "FixedPoint.q_star: inf when q grows without bound"
    ),
    # "xi_q, xi_c: -1/log(chi); inf where the chi is >= 1" (and within CRITICAL_ATOL of 1).
    Allow("dense.fixed_point", "xi_q", _chi_at_least_one("chi_q"), "FixedPoint.xi_q: inf where chi_q >= 1"),
    Allow("dense.fixed_point", "xi_c", _chi_at_least_one("chi_c"), "FixedPoint.xi_c: inf where chi_c >= 1"),
    # PhaseDiagram: the same quantities on a grid (no chi_q field: q* can diverge only where the
    # activation's slope at infinity makes chi_1 >= 1).
    Allow(
        "dense.phase_diagram",
        "q_star",
        lambda r, kw: np.asarray(r.chi_1) >= 1.0 - _CRIT,
        "PhaseDiagram.q_star (as FixedPoint)",
    ),
    Allow(
        "dense.phase_diagram",
        "xi_c",
        lambda r, kw: np.asarray(r.chi_c) >= 1.0 - _CRIT,
        "PhaseDiagram.xi_c (as FixedPoint)",
    ),
    # conv.ConvDepthScales: "xi_c, xi_q: inf where chi |lambda| >= 1 or within CRITICAL_ATOL";
    # its fixed_point field is a dense FixedPoint.
    Allow(
        "conv.depth_scales",
        "xi_c",
        lambda r, kw: r.fixed_point.chi_c * np.abs(r.lambda_) >= 1.0 - _CRIT,
        "ConvDepthScales.xi_c",
    ),
    Allow(
        "conv.depth_scales",
        "xi_q",
        lambda r, kw: np.abs(r.fixed_point.chi_q * r.lambda_) >= 1.0 - _CRIT,
        "ConvDepthScales.xi_q",
    ),
    Allow("conv.depth_scales", "fixed_point.q_star", _fp_chi("chi_q"), "FixedPoint.q_star"),
    Allow("conv.depth_scales", "fixed_point.xi_q", _fp_chi("chi_q"), "FixedPoint.xi_q"),
    Allow("conv.depth_scales", "fixed_point.xi_c", _fp_chi("chi_c"), "FixedPoint.xi_c"),
    # finite_width.TransitionKernel: "log_density: finite wherever the density is positive, -inf
    # exactly where it is 0 (z <= 0, or sigma_y^2 = 0)".
    Allow(
        "finite_width.relu_kernel",
        "log_density",
        lambda r, kw: np.asarray(r.density) == 0.0,
        "TransitionKernel.log_density: -inf exactly where the density is 0",
        sign=-1,
    ),
    # finite_width.log_expected_squared_norm: "-inf exactly where the expectation is 0 (y0 = 0 and
    # no bias so far, or a layer with sigma_w2 = sigma_b2 = 0); finite everywhere else".
    Allow(
        "finite_width.log_expected_squared_norm",
        "",
        lambda r, kw: _zero_expectation(kw),
        "log_expected_squared_norm: -inf exactly where the expectation is 0",
        sign=-1,
    ),
    # init.MetaInitResult: "gq_before, gq_after: ... NaN when eval_batches = 0".
    *[
        Allow(
            "init.metainit",
            f,
            lambda r, kw: kw.get("eval_batches") == 0,
            f"MetaInitResult.{f}: NaN when eval_batches = 0",
            nan=True,
        )
        for f in ("gq_before", "gq_after")
    ],
    # validation.report: a non-finite theory / estimate / stderr is kept and FAILs its row visibly;
    # mean_and_stderr: "non-finite samples give a non-finite mean or standard error on purpose".
    *[
        Allow(
            "compare.Comparison",
            f,
            lambda r, kw: not r.passed,
            f"Comparison.{f}: non-finite -> the row FAILs",
            nan=True,
        )
        for f in ("theory", "estimate", "stderr")
    ],
    Allow(
        "compare.mean_and_stderr",
        "",
        lambda r, kw: not np.all(np.isfinite(np.asarray(kw["samples"], dtype=float))),
        "mean_and_stderr: non-finite samples give a non-finite mean / stderr",
        nan=True,
    ),
    # ntk.NTKFixedPoint: "theta_diag: inf when chi_1 >= 1"; "theta_offdiag: inf when chi_c* >= 1";
    # "inf where the kernel grows without bound (chi >= 1 or q* = inf)"; "xi_diag, xi_offdiag: inf
    # where the chi is >= 1"; "growth: inf for sign" (as dense's chi_1).
    *[
        rule
        for part, chi in (("diag", "chi_1"), ("offdiag", "chi_c"))
        for rule in (
            Allow(
                "ntk.ntk_fixed_point",
                f"theta_{part}",
                lambda r, kw, chi=chi: getattr(r, chi) >= 1.0 - _CRIT or math.isinf(r.q_star),
                f"NTKFixedPoint.theta_{part}: inf when {chi} >= 1 or q* = inf",
                sign=1,
            ),
            Allow(
                "ntk.ntk_fixed_point",
                f"xi_{part}",
                _chi_at_least_one(chi),
                f"NTKFixedPoint.xi_{part}: inf where {chi} >= 1",
                sign=1,
            ),
        )
    ],
    # q_star, c_star, chi_1, chi_c: "the forward fixed point (dense.fixed_point)": q* = inf only
    # where chi_1 >= 1; at q* = inf the chis are the asymptote's values (inf for exp).
    Allow("ntk.ntk_fixed_point", "q_star", _chi_at_least_one("chi_1"), "FixedPoint.q_star: inf when q grows", sign=1),
    *[
        Allow(
            "ntk.ntk_fixed_point",
            f,
            lambda r, kw: getattr(kw.get("activation"), "name", kw.get("activation")) == "sign" or math.isinf(r.q_star),
            f"NTKFixedPoint.{f}: inf for sign (phi' a Dirac delta) or at q* = inf (the asymptote's value)",
            sign=1,
        )
        for f in ("growth", "chi_1", "chi_c")
    ],
    # dense.FixedPoint.chi_1 (and chi_c, chi_q): "inf for sign (phi' is a Dirac delta) and at
    # q* = inf for activations growing faster than linearly (exp, relu_power with n > 1)".
    *[
        Allow(
            fn,
            f"{prefix}{f}",
            lambda r, kw, prefix=prefix: _sign_or_q_inf(r, kw, prefix),
            f"FixedPoint.{f}: inf for sign or at q* = inf (superlinear activations)",
            sign=1,
        )
        for fn, prefix in (
            ("dense.fixed_point", ""),
            ("dense.phase_diagram", ""),
            ("conv.depth_scales", "fixed_point."),
            ("ntk.conv_ntk_fixed_point", "fixed_point."),
        )
        for f in ("chi_1", "chi_c", "chi_q")
    ],
    # ntk.ConvNTKFixedPoint: theta_* "inf where that mode grows (chi >= 1, q* = inf)"; growth_* the
    # factors |chi lambda_m| (inf where chi is: sign, exp at q* = inf); xi_* "inf where the factor is
    # >= 1"; its fixed_point field is a dense FixedPoint (as conv.depth_scales).
    *[
        Allow(
            "ntk.conv_ntk_fixed_point",
            f"theta_{part}",
            lambda r, kw, chi=chi: getattr(r.fixed_point, chi) >= 1.0 - _CRIT or math.isinf(r.fixed_point.q_star),
            f"ConvNTKFixedPoint.theta_{part}: inf when {chi} >= 1 or q* = inf",
            sign=1,
        )
        for part, chi in (("diag", "chi_1"), ("offdiag", "chi_c"))
    ],
    *[
        Allow(
            "ntk.conv_ntk_fixed_point",
            f"{kind}_{part}",
            lambda r, kw, part=part, kind=kind: (
                np.isinf(getattr(r.fixed_point, "chi_1" if part == "diag" else "chi_c"))
                if kind == "growth"
                else getattr(r, f"growth_{part}") >= 1.0 - _CRIT
            ),
            f"ConvNTKFixedPoint.{kind}_{part}: inf where the growth factor is inf / >= 1",
            sign=1,
        )
        for kind in ("growth", "xi")
        for part in ("diag", "offdiag")
    ],
    Allow("ntk.conv_ntk_fixed_point", "fixed_point.q_star", _fp_chi("chi_q"), "FixedPoint.q_star"),
    Allow("ntk.conv_ntk_fixed_point", "fixed_point.xi_q", _fp_chi("chi_q"), "FixedPoint.xi_q"),
    Allow("ntk.conv_ntk_fixed_point", "fixed_point.xi_c", _fp_chi("chi_c"), "FixedPoint.xi_c"),
    # io.load: "the strings 'inf', '-inf', 'nan' restored to floats" (a figure may hold them).
    Allow("io.load", "data", lambda r, kw: True, "FigureData.data: non-finite values written by a figure", nan=True),
]
# sweeps: chunked Monte-Carlo ensembles of the comparison tables
for _name in ("ensemble_moments", "ensemble_samples"):
    NOT_FUZZED[f"validation.ensembles.{_name}"] = (
        "takes a simulator callable and a statistic callable (like parallel.ensemble, whose argument checks it "
        "uses); sizes, statistic and executors tested in tests/simulate/test_parallel_wiring.py"
    )

#: Public callables removed from the API, with what replaces them. They have no row above and no
#: NOT_FUZZED entry; the audit replay (:func:`fuzz.findings.replay_jobs`) leaves their audit lines
#: out explicitly (not as "unmapped"), and ``tests/contracts/test_fuzz_api.py`` checks that each is gone from
#: the package and that the number of such audit lines is the one stated there.
REMOVED: dict[str, str] = {
    "validation.simulators.train": (
        "removed (one training engine): meanfield.train.train_ensemble with "
        "meanfield.train.symmetric.ConstNetSpec / LeakyNetSpec, SymmetryBreaking and correlation_probe"
    ),
    "validation.simulators.TrainingRecord": (
        "removed with simulators.train: train_ensemble returns TrainingCurves (correlations via its probes)"
    ),
    "validation.simulators.replicated_feature_experiment": (
        "removed (one training engine): meanfield.train.train_ensemble with meanfield.train.symmetric.ReplicatedNetSpec"
    ),
    "validation.simulators.ReplicatedFeatureResult": (
        "removed with replicated_feature_experiment: train_ensemble returns TrainingCurves (test_accuracy)"
    ),
}
