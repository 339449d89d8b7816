"""The fast paths of the paper-size Grzejdziak Fig. 1 (issue 18 item 2): the width-10 fused kernel
of ``empirical_variances(engine="numba")`` against the generic kernel and the NumPy engine."""

from __future__ import annotations

import numpy as np
import pytest
from meanfield.validation.simulators import empirical_variances

from meanfield.data import load_digits

#: The issue's agreement bound on the recorded moments. Float64 rounding of the sums: each of the
#: ``width * n`` terms of a layer's sum carries ~``depth * width`` roundings of 1.1e-16 (the
#: products of earlier layers), i.e. ~1e-13 at depth 40; measured 4e-15 .. 2e-14 at depth 100.
KERNEL_RTOL = 1e-12
#: A network whose signal died (the ReLU killed every unit) has an exactly zero variance in every
#: engine; variances below this are compared as "dead" (the blas engine rescales, so a dying
#: signal's last non-zero layers are not float64-comparable to the unscaled Numba sums).
DEAD = 1e-250


@pytest.mark.parametrize("init", ["he", "glorot", "orthogonal", "gsm"])
@pytest.mark.parametrize("n_inputs", [50, 300])
def test_width10_kernel_matches_generic_kernel_and_numpy(init, n_inputs):
    """Width 10 takes the specialised kernel (blocks of 128 data points: 50 is one partial block,
    300 two full blocks and a tail); same weights in all three engines (same rng and chunks)."""
    x = load_digits(n_samples=n_inputs, standardized=True).x
    kw = dict(depth=40, width=10, n_networks=5, rng=11, chunk=3)
    fast = empirical_variances(x, init, engine="numba", **kw)
    generic = empirical_variances(x, init, engine="numba_generic", **kw)
    ref = empirical_variances(x, init, engine="blas", dtype="float64", **kw)
    alive = ref > DEAD
    assert alive[:, 1].all()  # the first layers are alive: the comparison is not vacuous
    np.testing.assert_allclose(fast[alive], generic[alive], rtol=KERNEL_RTOL)
    np.testing.assert_allclose(fast[alive], ref[alive], rtol=KERNEL_RTOL)
    assert np.all(fast[~alive] < DEAD) and np.all(generic[~alive] < DEAD)


def test_numba_generic_engine_arguments():
    x = load_digits(n_samples=20, standardized=True).x
    with pytest.raises(ValueError, match="protocol='unit' needs engine='blas'"):
        empirical_variances(x, "he", 3, 10, 2, engine="numba_generic", protocol="unit")
    with pytest.raises(ValueError, match="numba_generic"):
        empirical_variances(x, "he", 3, 10, 2, engine="numba_fast")


@pytest.mark.parametrize("init", ["zero", "zero_star"])
@pytest.mark.parametrize("depth", [1, 2, 3, 30])
def test_identity_layers_computed_once_are_exact(init, depth):
    """ZerO / ZerO*: layers 3 .. depth repeat layer 2's sums (relu is idempotent), bit for bit the
    generic kernel's layer-by-layer sums; depth 1 has no hidden layer (the width-10 kernel, rounding)."""
    x = load_digits(n_samples=300, standardized=True).x
    kw = dict(depth=depth, width=10, n_networks=4, rng=2)
    fast = empirical_variances(x, init, engine="numba", **kw)
    generic = empirical_variances(x, init, engine="numba_generic", **kw)
    if depth == 1:
        np.testing.assert_allclose(fast, generic, rtol=KERNEL_RTOL)
    else:
        np.testing.assert_array_equal(fast, generic)
