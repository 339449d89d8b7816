"""meanfield.conv: the covariance over inputs x positions (Xiao et al. 2018, footnote 3) and the eigenbases
of the C-map's Jacobian (eq. 2.8, Lemma B.2, Thm. B.1), against an independent finite-difference
Jacobian of the dense C-map."""

from __future__ import annotations

import numpy as np
import pytest

from meanfield import conv, dense

V = [0.2, 0.5, 0.3]
P = 6
#: Central-difference step and the resulting error bound: h^2 times a third derivative of order 1
#: (tanh at q ~ 1), plus rounding eps / h.
FD_STEP = 1e-5
FD_TOL = 1e-8


def _fd_jacobian(sigma, u, act, sw, sb):
    plus = dense.covariance_map(sigma + FD_STEP * u, act, sw, sb)
    minus = dense.covariance_map(sigma - FD_STEP * u, act, sw, sb)
    return (plus - minus) / (2 * FD_STEP)


@pytest.fixture(scope="module")
def inputs():
    return np.random.default_rng(0).standard_normal((3, P, 5))


def test_multi_input_map_reduces_to_single_input_blocks(inputs):
    cov = conv.multi_input_covariance(inputs, 1.5, 0.05, V)
    assert cov.shape == (3, P, 3, P)
    out = conv.multi_input_covariance_map(cov, "tanh", 1.5, 0.05, V)
    for a in range(3):
        assert np.allclose(out[a, :, a, :], conv.covariance_map(cov[a, :, a, :], "tanh", 1.5, 0.05, V), rtol=1e-13)
    flat = out.reshape(3 * P, 3 * P)
    assert np.allclose(flat, flat.T) and np.linalg.eigvalsh(flat).min() > -1e-10
    # D = 1 is the single-input map
    one = cov[:1, :, :1, :]
    assert np.allclose(
        conv.multi_input_covariance_map(one, "relu", 2.0, 0.0, V)[0, :, 0, :],
        conv.covariance_map(one[0, :, 0, :], "relu", 2.0, 0.0, V),
    )


def test_multi_input_cross_block_by_hand(inputs):
    # the (a, b) block is sum_beta v_beta C_ab(alpha + beta, alpha' + beta), with C from the dense
    # C-map of the full (D P) x (D P) matrix
    cov = conv.multi_input_covariance(inputs, 1.2, 0.1, V)
    c = dense.covariance_map(cov.reshape(3 * P, 3 * P), "erf", 1.2, 0.1).reshape(3, P, 3, P)
    out = conv.multi_input_covariance_map(cov, "erf", 1.2, 0.1, V)
    expect = np.zeros((P, P))
    for j, w in enumerate(V):
        beta = j - 1
        idx = (np.arange(P) + beta) % P
        expect += w * c[0][:, 1][np.ix_(idx, idx)]
    assert np.allclose(out[0, :, 1, :], expect, rtol=1e-13)


def test_multi_input_propagate_and_input_covariance(inputs):
    cov0 = conv.multi_input_covariance(inputs, 1.5, 0.05, V)
    x = inputs[0]
    by_hand = (
        1.5 * sum(w * np.roll(x, -(j - 1), axis=0) @ np.roll(x, -(j - 1), axis=0).T for j, w in enumerate(V)) / 5 + 0.05
    )
    assert np.allclose(cov0[0, :, 0, :], by_hand)
    out = conv.multi_input_propagate(cov0, "tanh", 1.5, 0.05, V, 3)
    assert out.shape == (4, 3, P, 3, P)
    assert np.allclose(out[3, 1, :, 1, :], conv.propagate(cov0[1, :, 1, :], "tanh", 1.5, 0.05, V, 3)[3], rtol=1e-12)


def test_eigenbases_of_the_cmap_jacobian():
    sw, sb = 1.8, 0.05
    fp = dense.fixed_point("tanh", sw, sb)
    sigma = conv.fixed_point_covariance(fp.q_star, fp.c_star, P)
    eb = conv.cmap_jacobian_eigenbasis("tanh", sw, sb, P)
    assert eb.chi_q == pytest.approx(fp.chi_q) and eb.chi_c == pytest.approx(fp.chi_c)
    for m in eb.diagonal:
        assert np.allclose(_fd_jacobian(sigma, m, "tanh", sw, sb), eb.chi_q * m, atol=FD_TOL)
    for m in eb.off_diagonal:
        assert np.allclose(_fd_jacobian(sigma, m, "tanh", sw, sb), eb.chi_c * m, atol=FD_TOL)
    # together a basis of the P (P + 1) / 2 symmetric matrices
    basis = np.concatenate([eb.diagonal, eb.off_diagonal]).reshape(-1, P * P)
    assert np.linalg.matrix_rank(basis) == P * (P + 1) // 2
    # the Fourier basis diagonalises the averaging operator on V_d (Thm. B.1's proof)
    lam = conv.fourier_eigenvalues(V, P)
    for m in range(P):
        u = eb.fourier[m]
        avg = conv.average(u.real, V) + 1j * conv.average(u.imag, V)
        assert np.allclose(avg, np.conj(lam[m]) * u, atol=1e-12) or np.allclose(avg, lam[m] * u, atol=1e-12)


def test_theorem_b1_averaging_commutes_with_the_jacobian():
    sw, sb = 2.2, 0.1  # chaotic: c* < 1, so Sigma* is positive definite and can be perturbed
    fp = dense.fixed_point("tanh", sw, sb)
    sigma = conv.fixed_point_covariance(fp.q_star, fp.c_star, P)
    u = np.random.default_rng(1).standard_normal((P, P))
    u = u + u.T
    j_u = conv.cmap_jacobian(u, "tanh", sw, sb)
    assert np.allclose(j_u, _fd_jacobian(sigma, u, "tanh", sw, sb), atol=FD_TOL * 10)
    assert np.allclose(conv.average(j_u, V), conv.cmap_jacobian(conv.average(u, V), "tanh", sw, sb), atol=1e-12)


def test_bad_arguments():
    with pytest.raises(ValueError):
        conv.multi_input_covariance_map(np.eye(4), "tanh", 1.0, 0.0, V)
    with pytest.raises(ValueError):
        conv.multi_input_covariance(np.ones((2, 4)), 1.0, 0.0, V)
    with pytest.raises(TypeError):
        conv.multi_input_covariance(np.ones((2, 4, 1)), 1j, 0.0, V)
    with pytest.raises(ValueError):
        conv.cmap_jacobian(np.arange(4.0).reshape(2, 2), "tanh", 1.0, 0.0)  # not symmetric
    with pytest.raises(ValueError):
        conv.cmap_jacobian_eigenbasis("relu", 3.0, 0.1, 4)  # q* infinite
    with pytest.raises(ValueError):
        conv.multi_input_propagate(np.ones((1, 2, 1, 2)), "tanh", 1.0, 0.0, [1.0], -1)


# --- regressions found by the public-API fuzzer (tests/fuzz/) ------------------------------------


def test_cmap_jacobian_errors_name_the_argument():
    with pytest.raises(ValueError, match=r"\bu\b"):
        conv.cmap_jacobian(np.zeros((0, 0)), "tanh", 1.5, 0.05)
    with pytest.raises(ValueError, match="activation"):
        conv.cmap_jacobian(np.eye(3), "linear", 1.5, 0.05)
    with pytest.raises(ValueError, match="activation"):
        conv.cmap_jacobian_eigenbasis("relu", 1.5, 0.05, 3)


def test_multi_input_propagate_checks_cov0():
    x = np.random.default_rng(0).standard_normal((2, 5, 2))
    v = np.array([0.25, 0.5, 0.25])
    cov0 = conv.multi_input_covariance(x, 1.5, 0.05, v, 5)
    with pytest.raises(ValueError, match="cov0"):
        conv.multi_input_propagate(-cov0, "tanh", 1.5, 0.05, v, 2, shape=5)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("x", None),
        ("x", np.zeros((2, 5))),
        ("x", 1e300 * np.ones((2, 5, 2))),
        ("sigma_b2", np.nan),
        ("sigma_b2", 1 + 1j),
        ("v", [0.5, 0.5]),
        ("v", [1 + 0j, 0, 0]),
        ("depth", 1.5),
        ("depth", 10**12),
        ("width", 0),
        ("n_networks", -1),
        ("n_networks", 10**12),
    ],
)
def test_simulate_multi_input_checks_arguments_by_name(name, value):
    from meanfield.validation.conv_inputs import simulate_multi_input

    kwargs = dict(
        x=np.random.default_rng(0).standard_normal((2, 5, 2)),
        activation="tanh",
        sigma_w2=1.5,
        sigma_b2=0.05,
        v=np.array([0.25, 0.5, 0.25]),
        depth=2,
        width=3,
        n_networks=2,
    )
    kwargs[name] = value
    with pytest.raises((TypeError, ValueError), match=name):
        simulate_multi_input(**kwargs, rng=0)
