"""The quadrature's two compiled tiers give the numbers of the full rule, bit for bit.

A quadrature-only built-in (tanh, sigmoid, softplus, swish) is first run by kernels compiled
without the graded Gauss-Legendre rule (scales sqrt(q) > ``TRAPEZOID_MAX_SCALE``): with ``cf`` a
status array (``gaussian.first_tier``), a kernel that would need that rule sets the status and
returns NaN, and the caller redoes the call with every rule (``gaussian.needs_full_tree``). This
only changes what is compiled, never the operations, so every number must *equal* the full
kernel's (no tolerance): below the graded scale the first tier computes them itself, above it the
redo does. The whole-process behaviour (the first call of a fresh process, which is the one the
tier exists for) is checked in a subprocess, whose state no other test has touched.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from meanfield import conv, dense, gaussian
from meanfield.activations import ACTIVATIONS, get_activation

#: The built-ins whose kernels are quadrature only (the tiered ones).
TIERED = tuple(name for name in ACTIVATIONS if get_activation(name).code in gaussian.QUADRATURE_ONLY)
#: Variances below the graded scale (q <= TRAPEZOID_MAX_SCALE^2 = 9: Gauss-Hermite and trapezoid)
#: and above it.
Q_FIRST_TIER = (0.0, 0.04, 2.0, 8.9)
Q_GRADED = (9.5, 40.0, 1e8)
C = (-0.9, 0.0, 0.6, 1.0)


def test_the_variances_straddle_the_graded_scale():
    edge = gaussian.TRAPEZOID_MAX_SCALE**2
    assert max(Q_FIRST_TIER) <= edge < min(Q_GRADED)


@pytest.mark.parametrize("name", TIERED)
def test_a_first_tier_kernel_equals_the_full_one_or_asks_for_it(name):
    act = get_activation(name)
    z, w = gaussian.kernel_rule(gaussian.DEFAULT_DEGREE)
    orders = [(0, 0), (0, 1), (1, 1)]
    for q1 in Q_FIRST_TIER + Q_GRADED:
        for q2 in Q_FIRST_TIER + Q_GRADED:
            for c in C:
                for d1, d2 in orders:
                    st = np.zeros(1, np.int64)
                    v = gaussian.pair_by_family(act.code, act.param, d1, d2, q1, q2, c, z, w, st)
                    full = gaussian.pair_value(act.code, act.param, d1, d2, q1, q2, c, z, w)
                    if max(q1, q2) <= max(Q_FIRST_TIER):
                        assert st[0] == 0 and (v == full or (math.isnan(v) and math.isnan(full)))
                    elif st[0] == 1:
                        assert math.isnan(v)
                    else:  # a graded scale that the parity shortcut or c = 0 never integrates
                        assert v == full
        for d1, d2 in orders:
            st = np.zeros(1, np.int64)
            v = gaussian.single_by_family(act.code, act.param, d1, d2, q1, z, w, st)
            full = gaussian.single_value(act.code, act.param, d1, d2, q1, z, w)
            assert (st[0] == 1 and math.isnan(v)) if q1 > max(Q_FIRST_TIER) else (st[0] == 0 and v == full)
        st = np.zeros(1, np.int64)
        v = gaussian.variance_derivative_by_family(act.code, act.param, q1, z, w, st)
        full = gaussian.variance_derivative_value(act.code, act.param, q1, z, w)
        assert (st[0] == 1 and math.isnan(v)) if q1 > max(Q_FIRST_TIER) else (st[0] == 0 and v == full)


def test_needs_full_tree_reads_the_status():
    assert not gaussian.needs_full_tree(None) and not gaussian.needs_full_tree(0.0)
    assert not gaussian.needs_full_tree(np.zeros(1, np.int64))
    assert gaussian.needs_full_tree(np.ones(1, np.int64))
    assert gaussian.first_tier() is None  # the process is marked from then on


#: Run in a fresh process: each call twice, the first from the first tier (redone where it needs
#: the graded rule), the second after the process is marked (every rule from the start).
_FRESH = r"""
import json, sys
import numpy as np
from meanfield import conv, dense, gaussian
out = {"first_tier_at_start": gaussian.first_tier() is not None}
cov = np.array([[1.0, 0.3], [0.3, 0.8]])
big = 30.0 * cov
calls = [
    ("cmap", lambda: dense.cmap(0.3, "tanh", 1.5, 0.05)),
    ("propagate", lambda: dense.propagate(cov, "sigmoid", 1.5, 0.05, 4)),
    ("expectation", lambda: gaussian.expectation("swish", np.array([0.5, 2.0]), (1, 1))),
    ("covariance_map", lambda: dense.covariance_map(cov, "softplus", 1.5, 0.05)),
    ("conv", lambda: conv.propagate(0.5 * np.eye(3) + 0.5, "tanh", 1.5, 0.05, np.full(3, 1 / 3), 3)),
    ("still_first_tier", lambda: gaussian.first_tier() is not None),
    ("fixed_point_large", lambda: dense.fixed_point("tanh", 60.0, 0.05).q_star),
    ("propagate_large", lambda: dense.propagate(big, "softplus", 3.0, 0.05, 4)),
    ("pair_large", lambda: gaussian.pair_expectation("sigmoid", 40.0, 20.0, 0.5)),
]
first = {name: np.asarray(f(), dtype=float).tolist() for name, f in calls}
out["marked"] = gaussian.first_tier() is None
second = {name: np.asarray(f(), dtype=float).tolist() for name, f in calls if name != "still_first_tier"}
out["first"], out["second"] = first, second
json.dump(out, sys.stdout)
"""


def test_a_fresh_process_gets_the_same_numbers_from_either_tier():
    res = subprocess.run([sys.executable, "-c", _FRESH], capture_output=True, text=True, timeout=600, check=True)
    out = json.loads(res.stdout)
    assert out["first_tier_at_start"]
    assert out["first"]["still_first_tier"] == 1.0  # nothing before it reached the graded rule
    assert out["marked"]  # the large-variance calls did
    for name, values in out["second"].items():
        assert values == out["first"][name], name
    # and the same as this process, whatever its state
    assert out["first"]["fixed_point_large"] == dense.fixed_point("tanh", 60.0, 0.05).q_star
    assert out["first"]["cmap"] == dense.cmap(0.3, "tanh", 1.5, 0.05)


#: sigma_w2 = 1e300 drives tanh's variance past the first tier at once: the first call of a fresh
#: process meets the NaN redo mark inside the log-scale step (it once divided by zero there).
_HUGE = [
    ("conv.propagate", "conv.propagate(0.5 + 0.5 * np.eye(4), 'tanh', 1e300, 0.05, [0.25, 0.5, 0.25], 5)"),
    ("dense.propagate", "dense.propagate(np.eye(2), 'tanh', 1e300, 0.05, 5)"),
]


@pytest.mark.parametrize("name, call", _HUGE, ids=[name for name, _ in _HUGE])
def test_a_fresh_process_first_call_at_a_huge_scale_is_the_redone_result(name, call):
    code = f"import json, sys\nimport numpy as np\nfrom meanfield import conv, dense\njson.dump(np.asarray({call}).tolist(), sys.stdout)"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    here = np.asarray(eval(call, {"np": np, "conv": conv, "dense": dense}))
    assert np.array_equal(np.asarray(json.loads(res.stdout)), here)
