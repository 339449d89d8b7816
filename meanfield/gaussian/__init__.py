r"""Gaussian expectations of activations: closed forms first, bounded-cost quadrature otherwise.

The quantities every mean-field map is built from:

.. math::

    E_1^{(d_1, d_2)}(q) = \mathbb{E}_{u \sim N(0, q)}\, \phi^{(d_1)}(u)\, \phi^{(d_2)}(u),

    E_2^{(d_1, d_2)}(q_1, q_2, c) = \mathbb{E}\, \phi^{(d_1)}(u_1)\, \phi^{(d_2)}(u_2), \quad
    (u_1, u_2) \sim N\!\left(0, \begin{pmatrix} q_1 & c\sqrt{q_1 q_2} \\ c\sqrt{q_1 q_2} & q_2 \end{pmatrix}\right),

with derivative orders :math:`d_i \in \{0, 1, 2\}`, and
:math:`\partial_q \mathbb{E}\,\phi(\sqrt{q} z)^2 = \mathbb{E}[u \phi(u) \phi'(u)] / q` (Stein's lemma;
it needs only first derivatives, so it is exact for kinked activations too).

Closed forms (never quadrature): ``linear``; ``relu`` and ``leaky_relu`` through the arc-cosine
kernel of Cho & Saul (2009); ``erf`` through the arcsine kernel of Williams (1997); ``hard_tanh``
(derivative orders <= 1) as moments of a clipped Gaussian: single-variable moments in terms of
erf, and the bivariate ones through the rectangle probability ``P(|u1| < 1, |u2| < 1)`` (Plackett's
identity at the four corners) and its integral over c (Price's theorem), both smooth
one-dimensional integrals over theta = arcsin(t) (:func:`_hard_tanh_pair`); the extended built-ins
(sin, cos, abs, sign, exp, rbf, relu_power, gelu at every order, elu and selu) as documented in
:mod:`meanfield.closed_forms`. Everything else uses
quadrature in Numba kernels, :math:`u_1 = \sqrt{q_1} z_1`,
:math:`u_2 = \sqrt{q_2}(c z_1 + \sqrt{1 - c^2} z_2)`, with one of three rules per dimension chosen
by the scale of the integrand in z (:func:`_fill_rule`):

* Gauss-Hermite of degree :data:`DEFAULT_DEGREE` (= 100) while every scale is at most
  ``GH_MAX_SCALE`` (0.5);
* a trapezoid rule whose step resolves unit-width features in u (spectrally convergent for
  analytic integrands) up to ``TRAPEZOID_MAX_SCALE`` (3): beyond GH_MAX_SCALE, tanh(sqrt(q) z)
  and its relatives vary on the scale 1/sqrt(q) in z and Gauss-Hermite (whose node spacing near 0
  is fixed by the degree) converges slowly;
* Gauss-Legendre panels graded geometrically towards the point where u = 0 beyond, whose node
  count grows only logarithmically with q: every built-in is integrated at any q up to the float64
  range with at most ~400 nodes per dimension (~2-10 ms for a bivariate expectation at q = 1e4 to
  1e300), so nothing hangs at large variances.

User-defined activations (:meth:`meanfield.activations.Activation.from_functions`) are integrated
on the nodes of the same rule builder, evaluated with NumPy.

Accuracy: largest absolute error of E_2 (d = (0, 0)) against an independent fine trapezoid rule
(``benchmarks/gaussian_accuracy.py`` regenerates the table; ``tests/theory/test_gaussian.py`` and
``tests/theory/test_dense_edge_cases.py`` pin it against scipy's adaptive quadrature, up to q = 1e6, and against
the asymptotic forms at q = 1e300) over a grid of q1, q2 in [0.01, q_max] and
c in {-0.9, -0.3, 0.5, 0.95}:

activation   q_max = 1    q_max = 10    q_max = 100
tanh         4e-16        7e-14         4e-13
sigmoid      1e-16        4e-14         2e-13
softplus     3e-16        5e-13         2e-11
swish        6e-17        4e-13         2e-11
gelu         6e-17        4e-13         2e-11
hard_tanh    8e-6 (*)     8e-7 (*)      8e-6 (*)

(*) hard_tanh has a closed form: the row measures the reference's own O(h^2) error at the
kinks; against scipy's adaptive quadrature and the bivariate normal CDF it agrees to ~1e-15
(``tests/theory/test_dense_edge_cases.py``). The softplus/swish/gelu entries at q_max = 100 are rounding of
moments of size ~q.

At small variances the elu and selu pair moments take the negative part of the activation without
the cancellation of :math:`E[e^Y; Y < 0]` against :math:`P(Y < 0)` (which would cost
0.1 eps / sqrt(q) relative): elu's follows its small-q series
:math:`c q - 2 c q^{3/2} / \sqrt{2\pi}` to 1e-13 relative from q = 1e-14 down to 1e-28
(``tests/theory/test_dense_edge_cases.py``).

References
----------
Poole et al. (2016), "Exponential expressivity in deep neural networks through transient chaos".
Cho & Saul (2009), "Kernel methods for deep learning". Williams (1997), "Computing with infinite
networks".
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from .._checks import check_int, check_nonnegative, check_pair
from ..activations import (
    LINEAR,
    Activation,
    get_activation,
)
from ..activations._closed import (  # noqa: F401  (the constants and aliases are re-exported: kernels elsewhere import them from here)
    CLOSED_ALL,
    CLOSED_CORE,
    CLOSED_EXTENDED,
    CORE_CLOSED,
    acos_terms,
    closed_pair_by,
    closed_pair_value,
    closed_single_by,
    closed_single_value,
    closed_variance_derivative_by,
    closed_variance_derivative_value,
)
from ..activations._quadrature import (  # noqa: F401  (re-exported, as above)
    DEFAULT_DEGREE,
    PRUNE_WEIGHT,
    QUADRATURE_ONLY,
    closed_flag,
    family_rule,
    first_tier,
    hermite_rule,
    kernel_rule,
    needs_full_tree,
    require_full_tree,
    run_by_family,
)
from ._kernels import (  # noqa: F401  (re-exported: the kernels and rules other modules compile against)
    _pair_kernel,
    _single_kernel,
    _variance_derivative_kernel,
    excess_value,
    graded_status,
    pair_by_family,
    pair_quadrature,
    pair_value,
    run_time_orders,
    single_by_family,
    single_quadrature,
    single_value,
    variance_derivative_by_family,
    variance_derivative_quadrature,
    variance_derivative_value,
)
from ._rules import (  # noqa: F401  (re-exported: the kernels and rules other modules compile against)
    BUILTIN_TAIL_U,
    GH_MAX_SCALE,
    GRADED_PANEL_NODES,
    TRAPEZOID_MAX_SCALE,
    TRAPEZOID_STEP,
    TRAPEZOID_ZMAX,
    _rule_nodes,
)
from ._user import (  # noqa: F401  (re-exported: the kernels and rules other modules compile against)
    _ONE_SIDED,
    _custom_pair,
    _piecewise_pair,
    _piecewise_single,
    _user_values,
    piecewise_panel_nodes,
)

__all__ = [
    "DEFAULT_DEGREE",
    "expectation",
    "hermite_rule",
    "kernel_rule",
    "pair_expectation",
    "variance_derivative",
]


# ----------------------------------------------------------------------------------------------
# The Gauss-Hermite rules, the closed forms and each built-in's family live in
# meanfield.activations (_quadrature, _closed and its modules by family); re-exported here.


# ----------------------------------------------------------------------------------------------
# Public wrappers.


def _check_order(d):
    if isinstance(d, (bool, np.bool_)) or not isinstance(d, (int, np.integer)):
        raise TypeError(f"derivatives must be a pair of integer orders in {{0, 1, 2}}, got an element {d!r}")
    d = int(d)
    if d not in (0, 1, 2):
        raise ValueError(f"derivatives must be a pair of orders in {{0, 1, 2}}, got an element {d}")
    return d


def _check_derivatives(act: Activation, derivatives):
    if isinstance(derivatives, (str, bytes)) or not hasattr(derivatives, "__len__") or len(derivatives) != 2:
        raise TypeError(f"derivatives must be a pair (d1, d2) of orders in {{0, 1, 2}}, got {derivatives!r}")
    d1, d2 = (_check_order(d) for d in derivatives)
    if 2 in (d1, d2) and not act.smooth and act.code not in (LINEAR,):
        raise ValueError(
            f"phi'' of {act.name} has a Dirac part: expectations with derivative order 2 are not "
            "defined pointwise (use variance_derivative for chi_q)"
        )
    return d1, d2


def _finish(out, shape, what, act):
    if not np.all(np.isfinite(out)):
        raise ValueError(
            f"{what} of activation {act.name!r} is not finite for some inputs: the result exceeds the float64 "
            "range at these variances"
        )
    return out.reshape(shape) if shape else float(out[0])


def expectation(
    activation: str | Activation,
    q: float | ArrayLike,
    derivatives: tuple[int, int] = (0, 0),
    degree: int = DEFAULT_DEGREE,
) -> float | np.ndarray:
    r"""Single-variable Gaussian expectation :math:`\mathbb{E}\,\phi^{(d_1)}(u)\phi^{(d_2)}(u)`, :math:`u \sim N(0, q)`.

    Parameters
    ----------
    activation : str or Activation
    q : float or array_like
        Variances (>= 0, finite).
    derivatives : (int, int)
        Derivative orders (d1, d2) in {0, 1, 2}; ``(0, 0)`` is the second moment.
    degree : int
        Gauss-Hermite degree when no closed form exists (1 to 2000).

    Returns
    -------
    float or ndarray shaped like ``q``.

    Raises
    ------
    ValueError
        ``q`` negative or not finite; an order outside {0, 1, 2}; order 2 of a kinked activation;
        a user-defined activation returning NaN/inf; a result beyond the float64 range.
    TypeError
        Complex ``q``; non-integer orders.

    Notes
    -----
    Closed forms for linear, relu, leaky_relu, erf and hard_tanh (clipped Gaussian:
    :math:`E\min(u^2, 1) = q\,E[z^2 1\{|z| < 1/\sqrt q\}] + P(|z| \ge 1/\sqrt q)`,
    :math:`E\phi'^2 = \mathrm{erf}(1/\sqrt{2q})`); the rules of :func:`pair_value` otherwise.

    Examples
    --------
    >>> round(expectation("relu", 2.0), 12)   # E relu(u)^2 = q / 2
    1.0
    """
    act = get_activation(activation)
    d1, d2 = _check_derivatives(act, derivatives)
    q = check_nonnegative(q, "q", strict=True)
    qa = np.atleast_1d(np.asarray(q, dtype=np.float64))
    shape = np.shape(q)
    flat = np.ascontiguousarray(qa.reshape(-1))
    z, w = kernel_rule(degree)
    if act.is_builtin:
        out = run_by_family(_single_kernel, act, degree, (d1, d2, flat), np.empty_like(flat))
    elif act.breakpoints:
        out = _piecewise_single(act, d1, d2, flat, check_int(degree, "degree", minimum=1, maximum=2000))
    else:
        out = np.empty_like(flat)
        for k, qk in enumerate(flat):
            s = math.sqrt(qk)
            zo, wo = _rule_nodes(s, 0.0, True, 0.0, 0.0, 0.0, z, w)
            u = s * zo
            with np.errstate(over="ignore", invalid="ignore"):
                out[k] = wo @ (_user_values(act, d1, u) * _user_values(act, d2, u))
    return _finish(out, shape, "expectation", act)


def pair_expectation(
    activation: str | Activation,
    q1: float | ArrayLike,
    q2: float | ArrayLike,
    c: float | ArrayLike,
    derivatives: tuple[int, int] = (0, 0),
    degree: int = DEFAULT_DEGREE,
) -> float | np.ndarray:
    r"""Bivariate Gaussian expectation :math:`\mathbb{E}\,\phi^{(d_1)}(u_1)\phi^{(d_2)}(u_2)`.

    :math:`(u_1, u_2) \sim N(0, [[q_1, c\sqrt{q_1 q_2}], [c\sqrt{q_1 q_2}, q_2]])`. With
    ``derivatives=(0, 0)`` this is the integrand of the C-map (Poole et al. 2016, eq. 5; Xiao et al. 2018,
    eq. 2.5); with ``(1, 1)`` it gives chi_c (Xiao et al. 2018, eq. 2.7).

    Parameters
    ----------
    activation : str or Activation
    q1, q2 : float or array_like
        Variances (>= 0, finite); broadcast together with ``c``.
    c : float or array_like
        Correlations in [-1, 1].
    derivatives : (int, int)
        Derivative orders in {0, 1, 2}.
    degree : int
        Gauss-Hermite degree per dimension when no closed form exists (1 to 2000).

    Returns
    -------
    float or ndarray of the broadcast shape.

    Raises
    ------
    ValueError
        Negative or non-finite variances, ``|c| > 1``, bad orders, a user-defined activation
        returning NaN/inf, a result beyond the float64 range, shapes that do not broadcast.
    TypeError
        Complex arguments; non-integer orders.

    Notes
    -----
    hard_tanh has a closed form (:func:`_hard_tanh_pair`): the rectangle probability
    ``P(|u1| < 1, |u2| < 1)`` and, by Price's theorem, its integral over c, both as smooth
    one-dimensional integrals over theta = arcsin(t).

    Examples
    --------
    >>> import numpy as np
    >>> v = pair_expectation("relu", 1.0, 1.0, 0.0)       # arc-cosine kernel at c = 0: 1 / (2 pi)
    >>> bool(np.isclose(v, 1 / (2 * np.pi)))
    True
    """
    act = get_activation(activation)
    d1, d2 = _check_derivatives(act, derivatives)
    b1, b2, bc = check_pair(q1, q2, c)
    shape = b1.shape
    f1, f2, fc = (np.ascontiguousarray(x.reshape(-1)) for x in (b1, b2, bc))
    z, w = kernel_rule(degree)
    if act.is_builtin:
        out = run_by_family(_pair_kernel, act, degree, (d1, d2, f1, f2, fc), np.empty_like(f1))
    elif act.breakpoints:
        out = _piecewise_pair(act, d1, d2, f1, f2, fc, check_int(degree, "degree", minimum=1, maximum=2000))
    else:
        with np.errstate(over="ignore", invalid="ignore"):
            out = _custom_pair(act, d1, d2, f1, f2, fc, z, w)
    return _finish(out, shape, "pair_expectation", act)


def variance_derivative(
    activation: str | Activation, q: float | ArrayLike, degree: int = DEFAULT_DEGREE
) -> float | np.ndarray:
    r"""The slope of the single-input variance integrand, :math:`\partial_q \mathbb{E}\,\phi(\sqrt{q} z)^2`.

    Computed as :math:`\mathbb{E}[z \phi(\sqrt q z)\phi'(\sqrt q z)] / \sqrt q`, which equals
    :math:`\mathbb{E}[\phi'(u)^2 + \phi(u)\phi''(u)]` (Stein's lemma; the printed form of chi_q
    in Xiao et al. 2018, eq. 2.7) but needs no second derivative, so it is also right for kinked
    activations. ``sigma_w2 * variance_derivative(act, q*)`` is chi_q*.

    Parameters
    ----------
    activation : str or Activation
    q : float or array_like
        Variances (>= 0, finite).
    degree : int
        Gauss-Hermite degree when no closed form exists (1 to 2000).

    Returns
    -------
    float or ndarray shaped like ``q``; at q = 0 the limit :math:`\phi'(0)^2 + \phi(0)\phi''(0)`.

    Raises
    ------
    ValueError
        ``q`` negative or not finite; a user-defined activation returning NaN/inf, or without
        ``d2phi`` at q = 0 when phi(0) != 0.
    TypeError
        Complex ``q``.
    """
    act = get_activation(activation)
    q = check_nonnegative(q, "q", strict=True)
    shape = np.shape(q)
    flat = np.ascontiguousarray(np.atleast_1d(np.asarray(q, dtype=np.float64)).reshape(-1))
    z, w = kernel_rule(degree)
    out = np.empty_like(flat)
    if act.is_builtin:
        run_by_family(_variance_derivative_kernel, act, degree, (flat,), out)
    else:
        for k, qk in enumerate(flat):
            if qk == 0.0:
                zero = np.zeros(1)
                phi0 = float(_user_values(act, 0, zero)[0])
                d1 = float(_user_values(act, 1, zero)[0])
                if phi0 == 0.0:
                    out[k] = d1 * d1
                elif act.d2phi is None:
                    raise ValueError(
                        f"variance_derivative at q = 0 of {act.name!r} needs phi''(0) (phi(0) != 0): "
                        "pass d2phi to Activation.from_functions"
                    )
                else:
                    out[k] = d1 * d1 + phi0 * float(_user_values(act, 2, zero)[0])
                if phi0 == 0.0 and 0.0 in act.breakpoints:  # kink at 0: the limit of both one-sided slopes
                    side = np.array([-_ONE_SIDED, _ONE_SIDED])
                    out[k] = float(np.mean(_user_values(act, 1, side) ** 2))
            elif act.breakpoints:
                out[k] = _piecewise_single(act, 0, 1, np.array([qk]), check_int(degree, "degree", 1, 2000), True)[0]
            else:
                s = math.sqrt(qk)
                zo, wo = _rule_nodes(s, 0.0, True, 0.0, 0.0, 0.0, z, w)
                with np.errstate(over="ignore", invalid="ignore"):
                    out[k] = np.sum(wo * zo * _user_values(act, 0, s * zo) * _user_values(act, 1, s * zo)) / s
    return _finish(out, shape, "variance_derivative", act)
