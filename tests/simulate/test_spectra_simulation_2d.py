"""2-D periodic-CNN Jacobian spectra: the simulator behind validation.spectra's
2-D rows."""

from __future__ import annotations

import numpy as np
import pytest

from meanfield.simulate import conv2d_jacobian_singular_values, conv_jacobian_singular_values


@pytest.mark.parametrize("kernel", ["delta_orthogonal", "orthogonal"])
def test_orthogonal_2d_kernels_give_an_isometry_for_linear_networks(kernel):
    # J = prod of sqrt(sigma_w2) x orthogonal block-circulant matrices: every eigenvalue of J J^T is sigma_w2^L
    ev = conv2d_jacobian_singular_values("linear", 1.3, 0.0, 3, 2, (3, 3), 2, kernel, q=1.0, rng=0)
    assert ev.shape == (2, 18)
    assert np.allclose(ev, 1.3**3, rtol=1e-12)


def test_gaussian_2d_mean_is_chi_1_to_the_depth_for_linear_networks():
    # E tr(J J^T) / n = sigma_w2^L for i.i.d. kernels; 200 networks of n = 36: a 5-sigma bound
    ev = conv2d_jacobian_singular_values("linear", 1.0, 0.0, 2, 4, (3, 3), 200, "gaussian", q=1.0, rng=1)
    per_net = ev.mean(axis=1)
    assert abs(per_net.mean() - 1.0) < 5 * per_net.std(ddof=1) / np.sqrt(per_net.size)


def test_shape_checks_and_1d_agreement_in_distribution_of_a_delta_kernel():
    with pytest.raises(TypeError):
        conv2d_jacobian_singular_values("tanh", 1.0, 0.0, 1, 2, 3, 1)
    with pytest.raises(ValueError):
        conv2d_jacobian_singular_values("tanh", 1.0, 0.0, 1, 2, (3, 3), 1, kernel_size=2)
    with pytest.raises(ValueError):
        conv2d_jacobian_singular_values("tanh", 1.0, 0.0, 1, 64, (9, 9), 1)
    # kernel size 1: the 2-D and 1-D CNNs are both h w (resp. n) copies of one dense layer
    a = conv2d_jacobian_singular_values(
        "linear", 2.0, 0.0, 2, 3, (2, 2), 1, "delta_orthogonal", kernel_size=1, q=1.0, rng=5
    )
    b = conv_jacobian_singular_values("linear", 2.0, 0.0, 2, 3, 4, 1, "delta_orthogonal", kernel_size=1, q=1.0, rng=5)
    assert np.allclose(a, 4.0) and np.allclose(b, 4.0)
