"""The fast path of ``dense.propagate`` / ``propagate_log`` / ``conv.propagate`` decides as the general path.

The fast path (a writeable C-contiguous float64 ``cov0``, Python-float variances, int depth and
degree, a built-in activation, for ``conv`` a 1-D float64 ``v``) certifies its arguments in one
compiled call and falls back to the general path for anything it cannot certify. The same
matrix passed as a nested list, a read-only array or a Fortran-ordered array takes the general
path, so comparing those calls checks, through the public API only, that both paths accept and
reject the same inputs with the same messages and return the same bits.

The battery: the fuzz catalogue's array mutations (NaN, inf, empty, stacked, scalar, complex,
x1e300, negated, bool, ragged), exactly and nearly singular matrices whose smallest eigenvalue
sits at fractions of the PSD tolerance ``1e-10 D`` (``meanfield._checks``: ``eigvalsh(cov / s)``
below ``-1e-10 D`` is rejected), matrices that are symmetric only to rounding, huge and
subnormal scales, and random covariances.
"""

from __future__ import annotations

import numpy as np
import pytest

from meanfield import conv, dense
from meanfield.activations import ACTIVATIONS, Activation, get_activation

#: The PSD tolerance of the general path, relative to max|cov|, per dimension (``_checks.PSD_RTOL``:
#: a documented rule restated here, so that the battery straddles it).
PSD_RTOL = 1e-10
#: Multiples of the tolerance at which the battery puts the smallest eigenvalue.
TOL_MULTIPLES = (0.0, 0.3, 0.49, 0.5, 0.51, 0.9, 0.99, 1.0, 1.01, 1.1, 2.0, 10.0, 1e3)


def _outcome(f):
    """('ok', result) or ('error', exception type, message)."""
    try:
        return ("ok", f())
    except (ValueError, TypeError) as exc:
        return ("error", type(exc), str(exc))


def _same(a, b):
    assert a[0] == b[0], (a, b)
    if a[0] == "error":
        assert a[1:] == b[1:]
        return
    x, y = a[1], b[1]
    if isinstance(x, dense.LogPropagation):
        x, y = np.concatenate([x.log_scale, x.normalized.ravel()]), np.concatenate([y.log_scale, y.normalized.ravel()])
    assert x.shape == y.shape and x.tobytes() == y.tobytes()  # bit-identical (NaN-safe)


def _general_forms(m):
    """The same values in argument types the fast path does not take."""
    forms = []
    if isinstance(m, np.ndarray) and m.dtype == np.float64 and m.ndim >= 1:
        if m.size:  # [] would lose the shape
            forms.append(m.tolist())
        ro = m.copy()
        ro.setflags(write=False)
        forms.append(ro)
        if m.ndim == 2:
            forms.append(np.asfortranarray(m))
    return forms


def _with_min_eigenvalue(rng, d, lam_min, scale=1.0):
    """An exactly symmetric d x d matrix whose smallest eigenvalue is ``lam_min`` (to rounding)."""
    q, _ = np.linalg.qr(rng.standard_normal((d, d)))
    lam = rng.uniform(0.2, 1.0, d)
    lam[0] = lam_min
    m = (q * lam) @ q.T
    return scale * 0.5 * (m + m.T)  # (a + b) / 2 == (b + a) / 2: exactly symmetric


def _battery():
    rng = np.random.default_rng(20260518)
    base = np.array([[1.0, 0.3, 0.1], [0.3, 0.8, 0.2], [0.1, 0.2, 1.2]])
    out = {
        "base": base,
        "nan entry": np.where(np.eye(3, dtype=bool), base, np.nan),
        "+inf entry": base + np.diag([np.inf, 0, 0]),
        "-inf entry": base - np.diag([np.inf, 0, 0]),
        "empty": np.empty((0, 0)),
        "ndim+1": base[None],
        "scalar": np.float64(1.0),
        "x1e300": base * 1e300,
        "x1e308": base * 1e308,
        "x1e-310 (subnormal)": base * 1e-310,
        "negated": -base,
        "zero": np.zeros((3, 3)),
        "zero 1x1": np.zeros((1, 1)),
        "1x1": np.array([[2.5]]),
        "1x1 tiny negative": np.array([[-1e-20]]),
        "non-square": np.ones((2, 3)),
        "rank one": np.outer([1.0, -2.0, 0.5], [1.0, -2.0, 0.5]),
        "signed zeros": np.array([[1.0, -0.0], [0.0, 1.0]]),
        "asymmetric by one ulp": base + np.triu(np.spacing(base), 1),
        "asymmetric": base + np.triu(np.full((3, 3), 1e-3), 1),
        "negative diagonal": np.diag([1.0, -1e-11, 1.0]),
        "indefinite": np.array([[1.0, 2.0], [2.0, 1.0]]),
    }
    for d in (2, 3, 5, 12, 40):
        tau = PSD_RTOL * d
        for k in TOL_MULTIPLES:
            for scale in (1.0, 3e-7, 4e150):
                out[f"d={d} lam_min=-{k}tau x{scale:g}"] = _with_min_eigenvalue(rng, d, -k * tau, scale)
    for i in range(60):  # random Gram matrices (PSD, sometimes rank-deficient)
        d = int(rng.integers(1, 9))
        x = rng.standard_normal((d, int(rng.integers(1, 2 * d + 1))))
        out[f"gram {i}"] = 0.5 * ((x @ x.T) + (x @ x.T).T) * 10.0 ** rng.uniform(-5, 5)
    return out


BATTERY = _battery()
#: The general path's verdicts are not all one way: the battery straddles the tolerance.
MIN_ACCEPTED, MIN_REJECTED = 100, 60


def test_dense_propagate_decides_like_the_general_path():
    verdicts = {"ok": 0, "error": 0}
    for label, m in BATTERY.items():
        fast = _outcome(lambda: dense.propagate(m, "erf", 1.5, 0.05, 3))
        for form in _general_forms(m):
            _same(fast, _outcome(lambda: dense.propagate(form, "erf", 1.5, 0.05, 3)))
        if isinstance(m, np.ndarray) and m.ndim == 2 and m.size:
            _same(
                _outcome(lambda: dense.propagate_log(m, "relu", 2.0, 0.1, 4)),
                _outcome(lambda: dense.propagate_log(m.tolist(), "relu", 2.0, 0.1, 4)),
            )
        verdicts[fast[0]] += 1
        del label
    assert verdicts["ok"] >= MIN_ACCEPTED and verdicts["error"] >= MIN_REJECTED, verdicts


def test_near_tolerance_verdicts_follow_eigvalsh():
    """Near the tolerance the decision is eigvalsh's (the documented rule), on both sides."""
    seen = set()
    for label, m in BATTERY.items():
        if "lam_min" not in label:
            continue
        d = m.shape[0]
        scale = max(float(np.max(np.abs(m))), 1e-300)
        accept = not (np.linalg.eigvalsh(m / scale) < -PSD_RTOL * d).any()
        got = _outcome(lambda: dense.propagate(m, "erf", 1.5, 0.05, 1))
        assert (got[0] == "ok") == accept, label
        if not accept:
            assert "positive semi-definite" in got[2]
        seen.add(accept)
    assert seen == {True, False}


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_every_activation_bit_identical(activation):
    cov = BATTERY["base"]
    depth = 3 if activation in ("tanh", "sigmoid", "softplus", "swish") else 20
    for sw, sb in ((1.5, 0.05), (0.5, 0.0), (4.0, 1e-3)):
        _same(
            _outcome(lambda: dense.propagate(cov, activation, sw, sb, depth)),
            _outcome(lambda: dense.propagate(cov.tolist(), activation, sw, sb, depth)),
        )


def test_other_argument_types_and_orders():
    cov = BATTERY["base"]
    cases = [
        ("erf", np.float64(1.5), 0.05, 5, 64),  # numpy scalar: general path
        ("erf", 1, 0, 5, 64),  # ints
        ("erf", 2**63 - 1, 0, 5, 64),
        ("erf", 2**63, 0, 5, 64),
        ("erf", 2**64, 0, 5, 64),
        ("erf", -1, 0, 5, 64),
        ("erf", np.float64(-1.0), 0.05, 5, 64),
        ("erf", np.float64("nan"), 0.05, 5, 64),
        ("erf", np.float32(1.5), 0.05, 5, 64),
        ("erf", np.int64(2), 0.05, 5, 64),
        ("erf", 1.5, np.float64(0.05), 5, 64),
        ("erf", 1.5, False, 5, 64),
        ("erf", 1.5, 1 + 0j, 5, 64),
        ("erf", 1.5, 0.05, 5.0, 64),  # an integral float depth
        ("erf", float("nan"), 0.05, 5, 64),
        ("erf", -1.0, 0.05, 5, 64),
        ("erf", 1.5, float("inf"), 5, 64),
        ("erf", 1.5, 0.05, -1, 64),
        ("erf", 1.5, 0.05, True, 64),
        ("erf", 1.5, 0.05, 10**9, 64),
        ("erf", 1.5, 0.05, 5, 0),
        ("erf", 1.5, 0.05, 5, 2001),
        ("erf", 1.5, 0.05, 5, 3.0),
        ("no_such", 1.5, 0.05, 5, 64),
        (get_activation("leaky_relu", slope=0.2), 1.5, 0.05, 5, 64),  # Activation objects
        (get_activation("elu", alpha=0.5), 1.5, 0.05, 5, 64),
        (Activation.from_functions("user tanh", np.tanh, lambda x: 1 - np.tanh(x) ** 2), 1.5, 0.05, 5, 64),
        ("tanh", 1.5, 0.05, 2, 7),
        ("exp", 30.0, 0.0, 50, 64),  # overflows: propagate raises, propagate_log does not
        ("relu", 1.5, 0.0, 10_000, 64),  # underflows
        ("relu", 1e300, 1e300, 3, 64),
    ]
    for act, sw, sb, depth, degree in cases:
        fast = _outcome(lambda: dense.propagate(cov, act, sw, sb, depth, degree))
        ref = _outcome(lambda: dense.propagate(cov.tolist(), act, sw, sb, depth, degree))
        _same(fast, ref)
        _same(
            _outcome(lambda: dense.propagate_log(cov, act, sw, sb, depth, degree)),
            _outcome(lambda: dense.propagate_log(cov.tolist(), act, sw, sb, depth, degree)),
        )


V_CASES = {
    "uniform 3": np.full(3, 1.0 / 3.0),
    "delta": np.array([0.0, 1.0, 0.0]),
    "5 taps": np.array([0.1, 0.2, 0.4, 0.2, 0.1]),
    "sum 1 + 0.4e-10": np.array([0.25, 0.5, 0.25 + 0.4e-10]),
    "sum 1 + 0.6e-10": np.array([0.25, 0.5, 0.25 + 0.6e-10]),
    "sum 1 + 1.0e-10": np.array([0.25, 0.5, 0.25 + 1.0e-10]),
    "sum 1 + 1.2e-10": np.array([0.25, 0.5, 0.25 + 1.2e-10]),
    "sum 1 - 2e-10": np.array([0.25, 0.5, 0.25 - 2e-10]),
    "even length": np.array([0.5, 0.5]),
    "negative": np.array([-0.1, 0.6, 0.5]),
    "nan": np.array([np.nan, 0.5, 0.5]),
    "empty": np.empty(0),
    "2-D": np.full((3, 3), 1.0 / 9.0),
    "longer than P": np.full(13, 1.0 / 13.0),
}


def test_conv_propagate_decides_like_the_general_path():
    covs = {k: BATTERY[k] for k in ("base", "nan entry", "negated", "zero", "asymmetric", "d=5 lam_min=-1.01tau x1")}
    covs["P=10"] = 0.5 * np.eye(10) + 0.5
    for v, cov in ((a, b) for a in V_CASES.values() for b in covs.values()):
        fast = _outcome(lambda: conv.propagate(cov, "erf", 1.5, 0.05, v, 6))
        ref = _outcome(lambda: conv.propagate(cov.tolist(), "erf", 1.5, 0.05, v.tolist(), 6))
        _same(fast, ref)
        _same(
            _outcome(lambda: conv.propagate_log(cov, "relu", 2.0, 0.0, v, 6)),
            _outcome(lambda: conv.propagate_log(cov.tolist(), "relu", 2.0, 0.0, v.tolist(), 6)),
        )
    cov = covs["P=10"]
    v = V_CASES["uniform 3"]
    for args in ((1.5, 0.05, 20, None), (1.5, 0.05, 20, 10), (1.5, 0.05, 20, (10,)), (30.0, 0.0, 12, None)):
        sw, sb, depth, shape = args
        for act in ("erf", "tanh", "exp"):
            _same(
                _outcome(lambda: conv.propagate(cov, act, sw, sb, v, depth, shape)),
                _outcome(lambda: conv.propagate(cov.tolist(), act, sw, sb, v.tolist(), depth, shape)),
            )
