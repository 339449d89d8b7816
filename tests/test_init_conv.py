"""Tests of the orthogonal (Algorithm 1) and delta-orthogonal (Algorithm 2) convolution kernels of
seed 003 and of conv_matrix, the dense block-circulant form of a periodic convolution."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meanfield.init import (
    conv_matrix,
    delta_orthogonal_kernel,
    delta_orthogonal_kernel_1d,
    orthogonal_conv_kernel,
    orthogonal_conv_kernel_1d,
    symmetric_projection,
)
from meanfield.validation.networks import periodic_conv

#: Isometry is exact; float64 rounding over O(k^2) products of c x c orthogonal factors stays
#: below 1e-13 at these sizes (measured <= 1e-15).
ISOMETRY_ATOL = 1e-10


def _channels(draw_in, draw_out):
    return min(draw_in, draw_out), max(draw_in, draw_out)


@given(st.integers(1, 4), st.integers(1, 5), st.integers(1, 5), st.integers(1, 5), st.integers(1, 5), st.integers(0, 10_000))
@settings(max_examples=25)
def test_orthogonal_kernel_2d_is_an_isometry(k, a, b, n1, n2, seed):
    c_in, c_out = _channels(a, b)
    kernel = orthogonal_conv_kernel(k, c_in, c_out, rng=seed)
    assert kernel.shape == (k, k, c_in, c_out)
    sv = np.linalg.svd(conv_matrix(kernel, (n1, n2)), compute_uv=False)
    assert np.max(np.abs(sv - 1.0)) <= ISOMETRY_ATOL
    # polynomial identity behind it: sum_beta K(beta) K(beta)^T = I_{c_in}
    gram = np.einsum("xyij,xykj->ik", kernel, kernel)
    assert np.allclose(gram, np.eye(c_in), atol=ISOMETRY_ATOL)


@given(st.integers(1, 5), st.integers(1, 6), st.integers(1, 6), st.integers(1, 8), st.integers(0, 10_000))
@settings(max_examples=25)
def test_orthogonal_kernel_1d_is_an_isometry(k, a, b, n, seed):
    c_in, c_out = _channels(a, b)
    kernel = orthogonal_conv_kernel_1d(k, c_in, c_out, rng=seed)
    assert kernel.shape == (k, c_in, c_out)
    sv = np.linalg.svd(conv_matrix(kernel, n), compute_uv=False)
    assert np.max(np.abs(sv - 1.0)) <= ISOMETRY_ATOL


@given(st.sampled_from([1, 3, 5]), st.integers(1, 4), st.integers(0, 3), st.integers(0, 10_000))
@settings(max_examples=15)
def test_norm_preserved_by_periodic_conv(k, c_in, extra, seed):
    """Definition 2.1 with the simulators' convolution: ||K * x|| = ||x||."""
    rng = np.random.default_rng(seed)
    kernel = orthogonal_conv_kernel(k, c_in, c_in + extra, rng=rng)
    x = rng.standard_normal((4, 5, 6, c_in))
    y = periodic_conv(x, kernel[None], 2)
    assert np.allclose(np.linalg.norm(y.reshape(4, -1), axis=1), np.linalg.norm(x.reshape(4, -1), axis=1), rtol=ISOMETRY_ATOL)


def test_delta_orthogonal_kernels():
    kernel = delta_orthogonal_kernel(5, 3, 4, rng=1)
    support = np.argwhere(np.any(kernel != 0, axis=(2, 3)))
    assert support.tolist() == [[2, 2]]
    h = kernel[2, 2]
    assert np.allclose(h @ h.T, np.eye(3), atol=ISOMETRY_ATOL)
    assert np.max(np.abs(np.linalg.svd(conv_matrix(kernel, (3, 5)), compute_uv=False) - 1)) <= ISOMETRY_ATOL
    k1 = delta_orthogonal_kernel_1d(3, 2, 2, rng=1)
    assert np.all(k1[[0, 2]] == 0) and np.allclose(k1[1] @ k1[1].T, np.eye(2))


@pytest.mark.parametrize(
    "make", [orthogonal_conv_kernel, orthogonal_conv_kernel_1d, delta_orthogonal_kernel, delta_orthogonal_kernel_1d]
)
def test_c_in_greater_than_c_out_raises(make):
    with pytest.raises(ValueError, match="c_in must be <= c_out"):
        make(3, 5, 4, rng=0)


def test_seed_reproducibility():
    assert np.array_equal(orthogonal_conv_kernel(3, 2, 3, rng=7), orthogonal_conv_kernel(3, 2, 3, rng=7))
    assert not np.array_equal(orthogonal_conv_kernel(3, 2, 3, rng=7), orthogonal_conv_kernel(3, 2, 3, rng=8))


def test_symmetric_projection():
    p = symmetric_projection(7, rng=3)
    assert np.allclose(p, p.T, atol=1e-14)
    assert np.allclose(p @ p, p, atol=1e-12)
    assert np.allclose(np.linalg.eigvalsh(p), np.round(np.linalg.eigvalsh(p)), atol=1e-12)


@pytest.mark.parametrize("spatial, kshape", [((7,), (3,)), ((4, 5), (3, 3)), ((2, 3), (5, 3))])
def test_conv_matrix_matches_periodic_conv(spatial, kshape):
    """conv_matrix and periodic_conv are independent implementations of eq. 2.1's cross-correlation."""
    rng = np.random.default_rng(0)
    kernel = rng.standard_normal(kshape + (2, 3))
    x = rng.standard_normal(spatial + (2,))
    y = periodic_conv(x, kernel, len(spatial))
    m = conv_matrix(kernel, spatial if len(spatial) > 1 else spatial[0])
    assert np.allclose(m @ x.ravel(), y.ravel(), atol=1e-12)


def test_gaussian_conv_matrix_is_not_isometric():
    """Seed 003 Sec. 2.2.1: i.i.d. weights give a Marchenko-Pastur-like spread, not isometry."""
    rng = np.random.default_rng(0)
    c, n = 16, 8
    kernel = rng.standard_normal((3, c, c)) / np.sqrt(3 * c)
    sv = np.linalg.svd(conv_matrix(kernel, n), compute_uv=False)
    # mean sigma^2 = |M|_F^2 / (n c) = sum of the 3 c^2 kernel entries squared / c: mean 1, relative
    # standard deviation sqrt(2 / (3 c^2)) (chi-square with 3 c^2 degrees of freedom)
    assert abs(np.mean(sv**2) - 1.0) <= 4.5 * np.sqrt(2.0 / (3 * c * c))
    assert sv.max() / sv.min() > 10.0  # not an isometry (an orthogonal kernel gives exactly 1)


def test_algorithm_1_variance_vector_is_binomial_not_uniform():
    """Mean per-offset weight mass of Algorithm-1 kernels = orthogonal_kernel_variance (derived in its docstring)."""
    from meanfield.init import orthogonal_kernel_variance

    rng = np.random.default_rng(5)
    c, draws = 12, 300
    frob = np.stack([np.sum(orthogonal_conv_kernel_1d(3, c, c, rng=rng) ** 2, axis=(1, 2)) / c for _ in range(draws)])
    assert np.allclose(frob.sum(1), 1.0, atol=1e-12)  # exact: sum_beta ||K(beta)||^2 = c_in
    mean = frob.mean(0)
    se = frob.std(0, ddof=1) / np.sqrt(draws)
    assert np.all(np.abs(mean - orthogonal_kernel_variance(3, 1)) <= 4.5 * se)
    assert np.abs(mean[1] - 1 / 3) > 10 * se[1]  # the uniform vector is rejected
    assert np.allclose(orthogonal_kernel_variance(3, 2), np.outer([0.25, 0.5, 0.25], [0.25, 0.5, 0.25]))
    assert orthogonal_kernel_variance(5, 1) == pytest.approx(np.array([1, 4, 6, 4, 1]) / 16)
