"""meanfield.validation.kurtosis_conv: the conv moment simulator behind the "does not close" rows
(Grzejdziak 2023)."""

from __future__ import annotations

import numpy as np
import pytest
from meanfield.validation import kurtosis_conv

#: Standard errors allowed for the Lemma 4.2 check (5 sigma, fixed seed: deterministic).
Z = 5.0


def _ratio(num, den):
    """mean(num) / mean(den) and its delta-method standard error."""
    r = num.mean() / den.mean()
    return r, ((num - r * den) / den.mean()).std(ddof=1) / np.sqrt(num.size)


def test_moments_shapes_determinism_and_chunking():
    a = kurtosis_conv.conv_pair_moments(50, rng=3, chunk=50)
    b = kurtosis_conv.conv_pair_moments(50, rng=3, chunk=50)
    assert set(a) == {"relu_diff", "sq_diff", "relu_same", "sq_same", "m4", "s2"}
    for key in a:
        assert a[key].shape == (50,) and np.array_equal(a[key], b[key])
    # relu^2 relu^2 <= y^2 y^2 pointwise, so per network too
    assert np.all(a["relu_same"] <= a["sq_same"]) and np.all(a["relu_diff"] <= a["sq_diff"])
    assert np.all(a["m4"] >= a["s2"] ** 2 * (1 - 1e-12))  # Jensen over coordinates


def test_lemma_4_2_holds_across_channels_but_not_within_one():
    m = kurtosis_conv.conv_pair_moments(20_000, rng=11)
    r, se = _ratio(m["relu_diff"], m["sq_diff"])
    assert abs(r - 0.25) < Z * se
    r_same, se_same = _ratio(m["relu_same"], m["sq_same"])
    assert r_same - 0.25 > Z * se_same  # the shared filter: positive sign correlation


def test_arguments_are_checked():
    with pytest.raises(ValueError):
        kurtosis_conv.conv_pair_moments(1)
    with pytest.raises(TypeError):
        kurtosis_conv.conv_pair_moments(2.0)
    with pytest.raises(ValueError):
        kurtosis_conv.conv_pair_moments(4, chunk=0)
