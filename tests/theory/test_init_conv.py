"""Tests of the one kernel layout (*k, c_out, c_in) and the periodic convolution it defines
(periodic_conv, its adjoint and kernel gradient, conv_matrix, conv_singular_values, PyTorch's layout),
and of Xiao et al. 2018's Gaussian, orthogonal (Algorithm 1) and delta-orthogonal (Algorithm 2) kernels."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from meanfield.init import (
    conv_matrix,
    conv_singular_values,
    delta_orthogonal_kernel,
    delta_orthogonal_kernel_1d,
    from_torch_layout,
    gaussian_conv_kernel,
    orthogonal_conv_kernel,
    orthogonal_conv_kernel_1d,
    periodic_conv,
    periodic_conv_transpose,
    periodic_conv_weight_grad,
    symmetric_projection,
    to_torch_layout,
)

#: Isometry is exact; float64 rounding over O(k^2) products of c x c orthogonal factors stays
#: below 1e-13 at these sizes (measured <= 1e-15).
ISOMETRY_ATOL = 1e-10


def _channels(draw_in, draw_out):
    return min(draw_in, draw_out), max(draw_in, draw_out)


@given(
    st.integers(1, 4),
    st.integers(1, 5),
    st.integers(1, 5),
    st.integers(1, 5),
    st.integers(1, 5),
    st.integers(0, 10_000),
)
@settings(max_examples=25)
def test_orthogonal_kernel_2d_is_an_isometry(k, a, b, n1, n2, seed):
    c_in, c_out = _channels(a, b)
    kernel = orthogonal_conv_kernel(k, c_in, c_out, rng=seed)
    assert kernel.shape == (k, k, c_out, c_in)
    sv = np.linalg.svd(conv_matrix(kernel, (n1, n2)), compute_uv=False)
    assert np.max(np.abs(sv - 1.0)) <= ISOMETRY_ATOL
    # polynomial identity behind it: sum_beta K(beta)^T K(beta) = I_{c_in}
    gram = np.einsum("xyji,xyjk->ik", kernel, kernel)
    assert np.allclose(gram, np.eye(c_in), atol=ISOMETRY_ATOL)


@given(st.integers(1, 5), st.integers(1, 6), st.integers(1, 6), st.integers(1, 8), st.integers(0, 10_000))
@settings(max_examples=25)
def test_orthogonal_kernel_1d_is_an_isometry(k, a, b, n, seed):
    c_in, c_out = _channels(a, b)
    kernel = orthogonal_conv_kernel_1d(k, c_in, c_out, rng=seed)
    assert kernel.shape == (k, c_out, c_in)
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
    assert np.allclose(
        np.linalg.norm(y.reshape(4, -1), axis=1), np.linalg.norm(x.reshape(4, -1), axis=1), rtol=ISOMETRY_ATOL
    )


def test_delta_orthogonal_kernels():
    kernel = delta_orthogonal_kernel(5, 3, 4, rng=1)
    assert kernel.shape == (5, 5, 4, 3)
    support = np.argwhere(np.any(kernel != 0, axis=(2, 3)))
    assert support.tolist() == [[2, 2]]
    h = kernel[2, 2]  # c_out x c_in with orthonormal columns
    assert np.allclose(h.T @ h, np.eye(3), atol=ISOMETRY_ATOL)
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
    kernel = rng.standard_normal(kshape + (3, 2))  # c_out = 3, c_in = 2
    x = rng.standard_normal(spatial + (2,))
    y = periodic_conv(x, kernel, len(spatial))
    assert y.shape == spatial + (3,)
    m = conv_matrix(kernel, spatial if len(spatial) > 1 else spatial[0])
    assert np.allclose(m @ x.ravel(), y.ravel(), atol=1e-12)


def test_gaussian_conv_matrix_is_not_isometric():
    """Xiao et al. 2018 Sec. 2.2.1: i.i.d. weights give a Marchenko-Pastur-like spread, not isometry."""
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


# --- the one layout: PyTorch conversion, the operator's adjoint and kernel gradient ---------------


def torch_conv_circular(x_cf, weight):
    """PyTorch's Conv1d / Conv2d with ``padding=k // 2, padding_mode="circular"`` and no bias, written
    out from its documented formula: ``out[co, a] = sum_ci sum_t W[co, ci, t] x[ci, (a + t - k // 2) mod n]``
    on channels-first signals ``x_cf`` (c_in, *spatial), weights (c_out, c_in, *k)."""
    c_out, _, *ks = weight.shape
    spatial = x_cf.shape[1:]
    out = np.zeros((c_out,) + spatial)
    for a in np.ndindex(*spatial):
        for t in np.ndindex(*ks):
            src = tuple((ai + ti - k // 2) % n for ai, ti, k, n in zip(a, t, ks, spatial))
            out[(slice(None),) + a] += weight[(slice(None), slice(None)) + t] @ x_cf[(slice(None),) + src]
    return out


@pytest.mark.parametrize("spatial, kshape", [((7,), (3,)), ((4, 5), (3, 3)), ((5, 4), (5, 1))])
def test_torch_layout_round_trip_and_the_same_convolution(spatial, kshape):
    """to_torch_layout gives PyTorch's (c_out, c_in, *k) weight of the same periodic cross-correlation."""
    rng = np.random.default_rng(3)
    kernel = rng.standard_normal(kshape + (4, 3))  # c_out = 4, c_in = 3
    w = to_torch_layout(kernel)
    assert w.shape == (4, 3) + kshape and w.flags.c_contiguous
    assert np.array_equal(from_torch_layout(w), kernel)
    x = rng.standard_normal(spatial + (3,))
    y = periodic_conv(x, kernel, len(spatial))
    y_torch = torch_conv_circular(np.moveaxis(x, -1, 0), w)
    assert np.allclose(np.moveaxis(y_torch, 0, -1), y, atol=1e-12)


def test_torch_layout_against_torch_itself():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    kernel = orthogonal_conv_kernel(3, 2, 5, rng=rng)
    x = rng.standard_normal((6, 7, 2))
    layer = torch.nn.Conv2d(2, 5, 3, padding=1, padding_mode="circular", bias=False, dtype=torch.float64)
    with torch.no_grad():
        layer.weight.copy_(torch.from_numpy(to_torch_layout(kernel)))
        y = layer(torch.from_numpy(np.moveaxis(x, -1, 0))[None])[0].numpy()
    assert np.allclose(np.moveaxis(y, 0, -1), periodic_conv(x, kernel, 2), atol=1e-12)


@pytest.mark.parametrize(
    "bad, exc",
    [
        (np.ones((3, 2)), ValueError),
        (np.ones((3, 2, 2)) + 1j, TypeError),
        (np.full((3, 2, 2), np.nan), ValueError),
        ("abc", TypeError),
        (np.ones((3, 2, 2)) > 0, TypeError),
    ],
)
def test_torch_layout_rejects_bad_kernels(bad, exc):
    with pytest.raises(exc):
        to_torch_layout(bad)
    with pytest.raises(exc):
        from_torch_layout(bad)


@pytest.mark.parametrize("sd, sum_leading", [(1, 0), (1, 1), (2, 1), (2, 2)])
def test_adjoint_and_kernel_gradient_are_exact(sd, sum_leading):
    """<g, K * x> = <K^T * g, x> = <dK, K> (the product is bilinear), with the kernel gradient summed
    over the first ``sum_leading`` leading axes."""
    rng = np.random.default_rng(5)
    spatial, ks = ((9,), (3,)) if sd == 1 else ((4, 5), (3, 3))
    lead = (3, 2)
    x = rng.standard_normal(lead + spatial + (2,))
    g = rng.standard_normal(lead + spatial + (4,))
    # one kernel per index of the kept leading axes (right-aligned), shared over the summed ones
    kernel = rng.standard_normal(lead[sum_leading:] + ks + (4, 2))
    y = periodic_conv(x, kernel, sd)
    assert np.sum(g * y) == pytest.approx(np.sum(periodic_conv_transpose(g, kernel, sd) * x), rel=1e-12)
    grad = periodic_conv_weight_grad(x, g, ks, sum_leading=sum_leading)
    assert grad.shape == lead[sum_leading:] + ks + (4, 2)
    assert np.sum(g * y) == pytest.approx(np.sum(grad * kernel), rel=1e-12)


def test_zero_taps_are_skipped_without_changing_the_result():
    """Delta kernels (all taps but the centre zero) give exactly the conv_matrix product."""
    rng = np.random.default_rng(6)
    kernel = np.zeros((3, 3, 3, 2))
    kernel[1, 1] = rng.standard_normal((3, 2))
    x = rng.standard_normal((4, 5, 2))
    assert np.allclose(periodic_conv(x, kernel, 2).ravel(), conv_matrix(kernel, (4, 5)) @ x.ravel(), atol=1e-13)
    assert np.array_equal(periodic_conv(x, np.zeros((3, 3, 3, 2)), 2), np.zeros((4, 5, 3)))


@pytest.mark.parametrize(
    "kernel_shape, spatial, c_out, c_in",
    [((3,), 7, 4, 4), ((5,), 6, 2, 3), ((3, 3), (4, 5), 3, 2), ((1, 3), (3, 4), 2, 2)],
)
def test_conv_singular_values_match_the_dense_matrix(kernel_shape, spatial, c_out, c_in):
    """The DFT block-diagonalisation (O(P c^3)) against the SVD of the dense block-circulant matrix."""
    kernel = np.random.default_rng(7).standard_normal(kernel_shape + (c_out, c_in))
    direct = np.sort(np.linalg.svd(conv_matrix(kernel, spatial), compute_uv=False))
    fast = conv_singular_values(kernel, spatial)
    assert fast.shape == direct.shape and np.allclose(fast, direct, atol=1e-10)


def test_conv_singular_values_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match="spatial_shape"):
        conv_singular_values(np.ones((3, 2, 2)), (4, 4))
    with pytest.raises(ValueError, match="odd"):
        conv_singular_values(np.ones((2, 2, 2)), 4)
    with pytest.raises(TypeError):
        conv_singular_values(np.ones((3, 2, 2)) * 1j, 4)


def test_kernel_initialisers_take_sigma_w2_and_keyword_rng():
    """sigma_w2 scales every kernel initialiser (orthogonal ones by sqrt(sigma_w2), sigma_w2 = gain^2);
    rng is keyword-only, so an old positional seed fails loudly instead of becoming sigma_w2."""
    for make in (
        orthogonal_conv_kernel,
        orthogonal_conv_kernel_1d,
        delta_orthogonal_kernel,
        delta_orthogonal_kernel_1d,
    ):
        unit = make(3, 2, 3, rng=11)
        assert np.allclose(make(3, 2, 3, sigma_w2=4.0, rng=11), 2.0 * unit, rtol=1e-15)
        with pytest.raises(TypeError):
            make(3, 2, 3, 11)
        with pytest.raises(ValueError, match="sigma_w2"):
            make(3, 2, 3, sigma_w2=-1.0, rng=0)


#: Standard errors allowed (two-sided 7e-6 per check).
Z = 4.5


def test_gaussian_kernels_follow_eq_2_2():
    """omega_ji(beta) ~ N(0, sigma_w2 v_beta / c_in): per-offset mean square and zero taps where v = 0."""
    v = np.array([0.1, 0.0, 0.6, 0.3, 0.0])
    k = gaussian_conv_kernel(5, 6, 4, sigma_w2=2.0, v=v, rng=0, batch_shape=300)
    assert k.shape == (300, 5, 4, 6)
    assert np.all(k[:, [1, 4]] == 0)
    ms = (k[:, [0, 2, 3]] ** 2).mean(axis=(0, 2, 3)) * 6  # sigma_w2 v_beta
    rel_se = np.sqrt(2.0 / (300 * 4 * 6))  # omega^2 c_in / (sigma_w2 v) ~ chi^2_1 (variance 2)
    assert np.all(np.abs(ms / (2.0 * v[[0, 2, 3]]) - 1.0) <= Z * rel_se)
    for bad, exc in ((np.array([0.5, 0.6, -0.1, 0, 0]), ValueError), (np.ones(3) / 3, ValueError), (v + 0j, TypeError)):
        with pytest.raises(exc, match="v"):
            gaussian_conv_kernel(5, 6, 4, v=bad, rng=0)


def test_check_finite_is_a_bool_and_only_skips_the_finite_checks():
    """check_finite=False (the simulators, whose signals are normalised) skips the NaN / infinity passes;
    shapes and types are still checked, and the flag itself must be a bool."""
    x = np.ones((4, 3, 2))
    k = np.ones((3, 5, 2))
    x_nan = x.copy()
    x_nan[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="finite"):
        periodic_conv(x_nan, k, 1)
    assert np.isnan(periodic_conv(x_nan, k, 1, check_finite=False)).any()
    with pytest.raises(ValueError, match="channels"):
        periodic_conv(x, np.ones((3, 5, 4)), 1, check_finite=False)
    for f in (
        lambda c: periodic_conv(x, k, 1, check_finite=c),
        lambda c: periodic_conv_transpose(np.ones((4, 3, 5)), k, 1, check_finite=c),
        lambda c: periodic_conv_weight_grad(x, np.ones((4, 3, 5)), (3,), check_finite=c),
    ):
        with pytest.raises(TypeError, match="check_finite"):
            f(1)


# --- regressions found by the public-API fuzzer (tests/fuzz/) ------------------------------------


@pytest.mark.parametrize("kernel_shape", [3.5, (3.5,), "a", None, 3 + 1j, 0, (), (3, 3, 3)])
def test_kernel_offsets_checks_at_the_call(kernel_shape):
    """kernel_offsets returned a generator for any argument; the error (if any) came at iteration."""
    from meanfield.init import kernel_offsets

    with pytest.raises((TypeError, ValueError), match="kernel_shape"):
        kernel_offsets(kernel_shape)
    assert list(kernel_offsets((2,))) == [((0,), (-1,)), ((1,), (0,))]  # even sizes stay allowed


def test_complex_kernel_shape_is_a_type_error():
    """A complex kernel_shape raised ValueError (the standards: complex input is a TypeError)."""
    with pytest.raises(TypeError, match="kernel_shape"):
        gaussian_conv_kernel(3 + 1j, 2, 2, rng=0)
    with pytest.raises(TypeError, match="kernel_shape"):
        periodic_conv_weight_grad(np.ones((2, 5, 2)), np.ones((2, 5, 2)), 3 + 1j)
    from meanfield.simulate import conv_kernels, looks_linear_delta_orthogonal_forward

    with pytest.raises(TypeError, match="kernel_shape"):
        conv_kernels(2, 3 + 1j, 3, 2.0, rng=0)
    with pytest.raises(TypeError, match="kernel_shape"):
        looks_linear_delta_orthogonal_forward(np.ones((2, 5, 2)), 2, 4, 3 + 1j, rng=0)


def test_ragged_kernel_names_the_argument():
    with pytest.raises(ValueError, match="kernel"):
        to_torch_layout([[1.0, 2.0], [3.0]])
    with pytest.raises(ValueError, match="weight"):
        from_torch_layout([[1.0, 2.0], [3.0]])
