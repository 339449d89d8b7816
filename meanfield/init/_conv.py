r"""Convolution kernels: one layout, the periodic convolution they define, and Xiao et al.'s initialisers.

Layout
------
Every convolution kernel of the library -- the initialisers here and in :mod:`meanfield.init`'s
Blumenfeld et al. 2020 constructions (:func:`constnet`, :func:`leakynet`, :func:`looks_linear_delta_orthogonal`),
the correlation measures of :mod:`meanfield.symmetry` and the simulators of
:mod:`meanfield.simulate` -- has the shape

    ``(*kernel_spatial, c_out, c_in)``  (``(k, c_out, c_in)`` in 1-D, ``(k1, k2, c_out, c_in)`` in 2-D),

optionally with leading batch axes: one ``(c_out, c_in)`` matrix per kernel tap, acting on
channels-last signals ``x`` of shape ``(..., *spatial, c_in)`` as a dense weight matrix acts on a
column, ``h = W x`` (``W`` of shape ``(n_out, n_in)``). The operator is the periodic
cross-correlation of Xiao et al. 2018, eq. 2.1,

.. math:: y_j(a) = \sum_\beta \sum_i K_{ji}(\beta)\, x_i(a + \beta),

with kernel index ``t`` <-> offset ``beta = t - k // 2`` on each axis (odd sizes ``k = 2k' + 1``):
:func:`periodic_conv`, its adjoint :func:`periodic_conv_transpose`, the gradient with respect to
the kernel :func:`periodic_conv_weight_grad`, and the dense block-circulant matrix
:func:`conv_matrix`. PyTorch stores the same weights as ``(c_out, c_in, *kernel_spatial)`` and,
with ``padding=k // 2, padding_mode="circular"``, computes the same cross-correlation:
:func:`to_torch_layout` and :func:`from_torch_layout` convert.

Initialisers
------------
An *orthogonal kernel* (Definition 2.1) satisfies :math:`\|K * x\|_2 = \|x\|_2` for every input.
Algorithm 1 builds one from the paraunitary polynomial matrix
:math:`K(z) = H\prod_{t=1}^{k-1}(P_t + (1-P_t) z_1)(Q_t + (1-Q_t) z_2)` with random symmetric
projections :math:`P_t, Q_t` (the block products of eq. 2.17) and a ``c_in x c_out`` matrix ``H``
with orthonormal rows; on the unit torus :math:`K(z)K(z)^* = I_{c_in}`, so the periodic convolution
is an isometry for every spatial size. The projections are drawn as in TensorFlow's
``ConvolutionOrthogonal`` initializer: :math:`P = U D U^T` with Haar ``U`` and a diagonal ``D`` of
independent fair 0/1 entries (rank ~ Binomial(c, 1/2)). Algorithm 2 (delta-orthogonal) puts ``H``
at the centre tap. :func:`gaussian_conv_kernel` draws the i.i.d. kernels of eq. 2.2,
``omega_ji(beta) ~ N(0, sigma_w2 v_beta / c_in)``. Every initialiser takes ``sigma_w2`` (the
orthogonal ones are multiplied by ``sqrt(sigma_w2)``: ``sigma_w2 = gain^2``).

Cost: Algorithm 1 performs O(k^2) products of ``c x c`` matrices per step, O((k c)^3) in total
(supplement C.1); ``benchmarks/conv.py`` measures it. Requests beyond :data:`MAX_KERNEL_WORK`
(``k^3 c_out^3`` in 2-D, ``k^2 c_out^3`` in 1-D: hours of computation) or 2^29 output entries
raise ``ValueError``.

Randomness: every stochastic function takes ``rng`` (``None``, an ``int``, a ``SeedSequence`` or a
``numpy.random.Generator``; an int ``n`` draws exactly the stream of ``numpy.random.default_rng(n)``).
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._checks import as_float_array, check_bool, check_int, is_backend_array
from ..backend import Backend, get_backend, matrix_transpose
from ._args import check_batch_size, check_size, int_arg, real_array

__all__ = [
    "MAX_KERNEL_WORK",
    "conv_matrix",
    "conv_singular_values",
    "from_torch_layout",
    "kernel_offsets",
    "periodic_conv",
    "periodic_conv_transpose",
    "periodic_conv_weight_grad",
    "to_torch_layout",
]


#: Largest ``k^3 c_out^3`` (2-D) or ``k^2 c_out^3`` (1-D) accepted by Algorithm 1 (about 1e12
#: multiply-adds: minutes to an hour of NumPy).
MAX_KERNEL_WORK = 2**40


# --- the layout and the operator ------------------------------------------------------------------


def kernel_offsets(kernel_shape: Sequence[int]) -> Iterator[tuple[tuple[int, ...], tuple[int, ...]]]:
    """The taps of a kernel: ``(index, beta)`` with ``beta = index - k // 2`` per axis (Xiao et al. 2018, eq. 2.1).

    Parameters
    ----------
    kernel_shape : int or sequence of int
        Spatial sizes of the kernel, one or two axes (odd for a centred kernel).

    Yields
    ------
    (tuple of int, tuple of int)
        The kernel index ``t`` and its offset ``beta``, in row-major order of ``t``.

    Examples
    --------
    >>> list(kernel_offsets((3,)))
    [((0,), (-1,)), ((1,), (0,)), ((2,), (1,))]

    Raises
    ------
    TypeError
        A complex ``kernel_shape`` or a complex size in it.
    ValueError
        A ``kernel_shape`` that is neither an int nor a tuple or list (strings, None, floats,
        bools); sizes < 1 or not integers (bools, strings, non-integral floats); an empty shape or
        more than two axes; more than 2^29 taps (all checked at the call, not at the first
        iteration).
    """
    ks = _kernel_sizes(kernel_shape, odd=False)
    check_size(_elements(ks), "prod(kernel_shape)")
    return _offsets_of(ks)


def _offsets_of(ks: tuple[int, ...]) -> Iterator[tuple[tuple[int, ...], tuple[int, ...]]]:
    for index in itertools.product(*(range(s) for s in ks)):
        yield index, tuple(j - s // 2 for j, s in zip(index, ks))


def _kernel_sizes(kernel_shape: Any, odd: bool = True) -> tuple[int, ...]:
    """``kernel_shape`` (an int or a tuple / list of 1 or 2 ints, odd if ``odd``) as a tuple of ints
    ``>= 1``; complex numbers raise ``TypeError``, non-sequences (strings, None, floats, bools) and
    bad sizes ``ValueError``."""
    if isinstance(kernel_shape, numbers.Integral) and not isinstance(kernel_shape, (bool, np.bool_)):
        kernel_shape = (kernel_shape,)
    if isinstance(kernel_shape, (complex, np.complexfloating)):
        raise TypeError(
            f"kernel_shape must be an odd int or a tuple of 1 or 2 odd ints, got the complex {kernel_shape!r}"
        )
    if isinstance(kernel_shape, (str, bytes)) or not isinstance(kernel_shape, (tuple, list)):
        raise ValueError(f"kernel_shape must be an odd int or a tuple of 1 or 2 odd ints, got {kernel_shape!r}")
    ks = tuple(int_arg(s, "kernel_shape", 1) for s in kernel_shape)
    if len(ks) not in (1, 2) or (odd and any(s % 2 == 0 for s in ks)):
        raise ValueError(
            f"kernel_shape must be 1 or 2 {'odd ' if odd else ''}sizes{' (2k+1)' if odd else ''}, got {ks}"
        )
    return ks


def _elements(shape: Sequence[int]) -> int:
    return math.prod(int(s) for s in shape)


def _backend_array(x: Any, name: str, b: Backend, check_finite: bool = True) -> Any:
    """A finite float64 array on backend ``b`` (NumPy input is validated by ``as_float_array``);
    ``check_finite=False`` skips the pass over a float64 array that looks for NaN and infinity."""
    if isinstance(x, (bool, np.bool_)) or (isinstance(x, np.ndarray) and x.dtype == np.bool_):
        raise TypeError(f"{name} must be real numbers, got booleans")
    if b.name != "numpy" and is_backend_array(b, x):
        xp = b.xp
        if xp.isdtype(x.dtype, "complex floating"):
            raise TypeError(f"{name} must be real, got a complex array")
        if not xp.isdtype(x.dtype, ("real floating", "integral")):
            raise TypeError(f"{name} must be a real array, got dtype {x.dtype}")
        if x.dtype != xp.float64:
            x = xp.astype(x, xp.float64) if hasattr(xp, "astype") else x.astype(xp.float64)
        if check_finite and not bool(xp.all(xp.isfinite(x))):
            raise ValueError(f"{name} must be finite (no NaN or infinity)")
        return x
    if isinstance(x, np.ndarray) and x.dtype == np.float64:  # the common case: at most one pass, no copy
        if check_finite and not np.isfinite(x).all():
            raise ValueError(f"{name} must be finite (no NaN or infinity)")
        return b.asarray(x)
    return b.asarray(as_float_array(x, name))


def _taps(kernel: Any, sd: int) -> tuple[int, ...]:
    return tuple(kernel.shape[kernel.ndim - 2 - sd : kernel.ndim - 2])


def _tap_matrix(k: Any, sd: int, transpose: bool, xp: Any) -> Any:
    """Tap ``k = kernel[..., index, :, :]`` as the right operand of a channels-last product: ``K(beta)^T``
    (forward) or ``K(beta)`` (adjoint), with unit axes so that it broadcasts over the rows of a 2-D
    image (a stack of small products, not one flattened tall GEMM: see ``benchmarks/symmetry.py``)."""
    m = k if transpose else matrix_transpose(xp, k)
    if isinstance(m, np.ndarray) or hasattr(m, "get"):  # NumPy or CuPy
        if m.strides[-1] != m.itemsize or m.strides[-2] != m.shape[-1] * m.itemsize:
            # row-major matrices: NumPy's stacked matmul falls back to a slow loop for a transposed operand
            m = xp.ascontiguousarray(m)
    if m.ndim == 2:  # one kernel for every signal: a plain 2-D right operand
        return m
    return xp.reshape(m, tuple(m.shape[:-2]) + (1,) * (sd - 1) + tuple(m.shape[-2:]))


def _correlate(x: Any, kernel: Any, sd: int, xp: Any, transpose: bool, out_channels: int, lead: tuple[int, ...]) -> Any:
    """``sum_beta K(beta) x(a + beta)`` (``transpose``: ``sum_beta K(beta)^T g(a - beta)``); zero taps skipped."""
    axes = tuple(range(x.ndim - 1 - sd, x.ndim - 1))
    out = None
    for index, beta in kernel_offsets(_taps(kernel, sd)):
        k = kernel[(Ellipsis,) + index + (slice(None), slice(None))]
        if not bool(xp.any(k != 0)):
            continue  # delta kernels (ConstNet, LeakyNet, delta-orthogonal): most taps are zero
        m = _tap_matrix(k, sd, transpose, xp)
        if any(beta):
            shifted = xp.roll(x, beta if transpose else tuple(-s for s in beta), axis=axes)
        else:
            shifted = x
        term = shifted @ m
        out = term if out is None else out + term
    if out is None:
        shape = lead + tuple(x.shape[x.ndim - 1 - sd : x.ndim - 1]) + (out_channels,)
        on_device = {} if isinstance(x, np.ndarray) or hasattr(x, "get") else {"device": x.device}
        out = xp.zeros(shape, dtype=x.dtype, **on_device)
    return out


def _conv_arguments(
    x: Any, x_name: str, kernel: Any, spatial_dims: int, backend: Any, channel_axis: int, check_finite: bool
):
    """Validate :func:`periodic_conv` (``channel_axis=-1``: x has c_in channels) or its adjoint (-2)."""
    b = get_backend(backend)
    sd = check_int(spatial_dims, "spatial_dims", 1, 2)
    check_finite = check_bool(check_finite, "check_finite")
    x = _backend_array(x, x_name, b, check_finite)
    kernel = _backend_array(kernel, "kernel", b, check_finite)
    if x.ndim < sd + 1:
        raise ValueError(f"{x_name} must have shape (..., *spatial ({sd} axes), channels), got shape {x.shape}")
    if kernel.ndim < sd + 2:
        raise ValueError(
            f"kernel must have shape (..., *kernel_spatial ({sd} axes), c_out, c_in), got shape {kernel.shape}"
        )
    if x.size == 0 or kernel.size == 0:
        raise ValueError(f"{x_name} and kernel must not be empty, got shapes {x.shape} and {kernel.shape}")
    ks = _taps(kernel, sd)
    if any(s % 2 == 0 for s in ks):
        raise ValueError(f"kernel spatial sizes must be odd (2k+1), got {tuple(ks)}")
    if x.shape[-1] != kernel.shape[channel_axis]:
        side = "c_in (kernel.shape[-1])" if channel_axis == -1 else "c_out (kernel.shape[-2])"
        raise ValueError(f"{x_name} has {x.shape[-1]} channels but the kernel's {side} is {kernel.shape[channel_axis]}")
    stack_x = tuple(x.shape[: x.ndim - 2])
    stack_k = tuple(kernel.shape[: kernel.ndim - 2 - sd]) + (1,) * (sd - 1)
    try:
        lead = np.broadcast_shapes(stack_x, stack_k)
    except ValueError:
        raise ValueError(
            f"the leading axes of {x_name} {x.shape} and kernel {kernel.shape} do not broadcast "
            f"(after aligning the {sd} spatial axes)"
        ) from None
    out_channels = kernel.shape[-2] if channel_axis == -1 else kernel.shape[-1]
    check_batch_size(_elements(lead) * x.shape[-2] * out_channels, "the convolution's output")
    return b, sd, x, kernel, tuple(lead[: len(lead) - (sd - 1)]), out_channels, check_finite


def _finite_result(xp: Any, out: Any, what: str, hint: str, check_finite: bool = True) -> Any:
    if check_finite and not bool(xp.all(xp.isfinite(out))):
        raise ValueError(f"{what} is not finite: {hint}")
    return out


def _checked_correlation(x, name, kernel, spatial_dims, backend, transpose, check_finite, caller):
    """:func:`periodic_conv` (``transpose=False``) or its adjoint on checked arguments, the result checked finite."""
    b, sd, x, kernel, lead, channels, check = _conv_arguments(
        x, name, kernel, spatial_dims, backend, -2 if transpose else -1, check_finite
    )
    with np.errstate(over="ignore", invalid="ignore"):
        out = _correlate(x, kernel, sd, b.xp, transpose, channels, lead)
    return _finite_result(
        b.xp, out, f"{caller}'s result", f"|{name}| * |kernel| overflows float64; rescale {name} or kernel", check
    )


def periodic_conv(
    x: ArrayLike, kernel: ArrayLike, spatial_dims: int, backend: str | Backend = "numpy", *, check_finite: bool = True
) -> Any:
    """Periodic cross-correlation ``y_j(a) = sum_beta sum_i K_ji(beta) x_i(a + beta)`` (Xiao et al. 2018, eq. 2.1).

    The library's one periodic convolution: the CNN simulators of
    :mod:`meanfield.simulate` (Xiao et al.'s random CNNs, Blumenfeld et al.'s ConstNet / LeakyNet)
    run on it. Zero taps are skipped (delta kernels cost one product).

    Parameters
    ----------
    x : array, shape ``(..., *spatial, c_in)``
        Finite real signals with ``spatial_dims`` periodic spatial axes before the channel axis.
    kernel : array, shape ``(..., *kernel_spatial, c_out, c_in)``
        The library's kernel layout (module notes); odd sizes ``2k + 1``, index ``t`` is offset
        ``beta = t - k``. Leading axes broadcast against the leading axes of ``x`` after the
        spatial axes are aligned (e.g. one kernel per network: ``x`` (nets, batch, n, c),
        ``kernel`` (nets, 1, 2k+1, c, c)).
    spatial_dims : {1, 2}
    backend : str or Backend
        One of :data:`meanfield.backend.BACKENDS`, or a :class:`meanfield.backend.Backend`.
    check_finite : bool
        Check that ``x``, ``kernel`` and the result hold no NaN or infinity (default; as
        ``scipy.linalg``'s ``check_finite``). ``False`` skips those passes over the arrays, for
        callers that guarantee finite float64 input whose product cannot overflow (the simulators:
        their signals are normalised to ``max |u| = 1``); shapes and types are checked regardless.

    Returns
    -------
    array, shape ``(..., *spatial, c_out)``
        On ``backend``.

    Raises
    ------
    TypeError
        Complex or boolean ``x`` / ``kernel``; a ``backend`` that is not a string; a
        ``check_finite`` that is not a bool.
    ValueError
        Non-finite (with ``check_finite``) or non-numeric entries, empty arrays, wrong numbers of
        axes, even kernel sizes, mismatched channels, leading axes that do not broadcast, an output
        beyond 2^31 entries, or a result that overflows float64 (with ``check_finite``).

    Notes
    -----
    Eq. 2.1 of Xiao et al. (2018), with periodic boundaries.

    Examples
    --------
    >>> k = np.zeros((3, 1, 1)); k[2] = 1.0   # y(a) = x(a + 1)
    >>> periodic_conv(np.arange(4.0)[:, None], k, 1)[:, 0]
    array([1., 2., 3., 0.])
    """
    return _checked_correlation(x, "x", kernel, spatial_dims, backend, False, check_finite, "periodic_conv")


def periodic_conv_transpose(
    g: ArrayLike, kernel: ArrayLike, spatial_dims: int, backend: str | Backend = "numpy", *, check_finite: bool = True
) -> Any:
    """Adjoint of :func:`periodic_conv` in ``x``: ``dx_i(a) = sum_beta sum_j K_ji(beta) g_j(a - beta)``.

    Parameters
    ----------
    g : array, shape ``(..., *spatial, c_out)``
        Finite real upstream gradient.
    kernel : array, shape ``(..., *kernel_spatial, c_out, c_in)``
        As in :func:`periodic_conv`.
    spatial_dims : {1, 2}
    backend : str or Backend
    check_finite : bool
        As in :func:`periodic_conv`.

    Returns
    -------
    array, shape ``(..., *spatial, c_in)``

    Raises
    ------
    TypeError, ValueError
        As :func:`periodic_conv` (``g`` takes the place of ``x``; its channels must equal c_out).

    Notes
    -----
    The backward pass of eq. 2.1 (Xiao et al. 2018, eq. 2.15): ``<g, K * x> = <K^T * g, x>``.
    """
    return _checked_correlation(g, "g", kernel, spatial_dims, backend, True, check_finite, "periodic_conv_transpose")


def periodic_conv_weight_grad(
    x: ArrayLike,
    g: ArrayLike,
    kernel_shape: Sequence[int],
    *,
    sum_leading: int = 0,
    backend: str | Backend = "numpy",
    check_finite: bool = True,
) -> Any:
    """Gradient of ``<g, periodic_conv(x, K)>`` with respect to ``K``: ``sum_a g_j(a) x_i(a + beta)``.

    Parameters
    ----------
    x : array, shape ``(*lead, *spatial, c_in)``
        The layer's input.
    g : array, shape ``(*lead, *spatial, c_out)``
        The upstream gradient (same leading and spatial axes as ``x``).
    kernel_shape : sequence of 1 or 2 odd ints
        Spatial sizes of the kernel.
    sum_leading : int
        How many of the leading axes are summed over (0 <= sum_leading <= len(lead)): e.g. 1 for
        the gradient of a loss summed over a batch, 0 for one gradient per leading index.
    backend : str or Backend
    check_finite : bool
        As in :func:`periodic_conv`.

    Returns
    -------
    array, shape ``(*lead[sum_leading:], *kernel_shape, c_out, c_in)``
        In the library's kernel layout, on ``backend``.

    Raises
    ------
    TypeError, ValueError
        As :func:`periodic_conv`; ``x`` and ``g`` with different leading or spatial axes; a
        ``sum_leading`` out of range; a result beyond 2^31 entries.

    Notes
    -----
    Xiao et al. 2018, Fig. S2 (the weight-gradient norms ``|dE / d omega^l|^2``).
    """
    b = get_backend(backend)
    xp = b.xp
    ks = _kernel_sizes(kernel_shape)
    sd = len(ks)
    check_finite = check_bool(check_finite, "check_finite")
    x = _backend_array(x, "x", b, check_finite)
    g = _backend_array(g, "g", b, check_finite)
    if x.ndim < sd + 1 or g.ndim != x.ndim or x.shape[:-1] != g.shape[:-1] or x.size == 0 or g.size == 0:
        raise ValueError(
            f"x and g must be non-empty arrays (*lead, *spatial ({sd} axes), channels) with the same leading "
            f"and spatial axes, got shapes {x.shape} and {g.shape}"
        )
    n_lead = x.ndim - 1 - sd
    sum_leading = int_arg(sum_leading, "sum_leading", 0, n_lead)
    keep = tuple(x.shape[sum_leading:n_lead])
    c_in, c_out = x.shape[-1], g.shape[-1]
    summed = tuple(x.shape[:sum_leading])
    check_batch_size(_elements(keep) * _elements(summed) * c_in * c_out, "the weight gradient per summed index")
    check_batch_size(_elements(keep) * _elements(ks) * c_in * c_out, "the weight gradient")
    axes = tuple(range(n_lead, n_lead + sd))

    def rows(a: Any) -> Any:  # (*summed, *keep, positions, channels)
        return xp.reshape(a, summed + keep + (-1, a.shape[-1]))

    # stacks of small products summed afterwards, not one tall GEMM over all summed positions: its
    # multi-threaded BLAS spins on an oversubscribed machine (benchmarks/symmetry.py)
    gt = matrix_transpose(xp, rows(g))
    out = b.empty(keep + ks + (c_out, c_in))
    with np.errstate(over="ignore", invalid="ignore"):
        for index, beta in kernel_offsets(ks):
            shifted = xp.roll(x, tuple(-s for s in beta), axis=axes) if any(beta) else x
            prod = gt @ rows(shifted)
            out[(Ellipsis,) + index + (slice(None), slice(None))] = (
                xp.sum(prod, axis=tuple(range(sum_leading))) if sum_leading else prod
            )
    return _finite_result(
        xp, out, "periodic_conv_weight_grad's result", "|x| * |g| overflows float64; rescale x or g", check_finite
    )


def _kernel_array(kernel: ArrayLike, name: str = "kernel") -> np.ndarray:
    kernel = real_array(kernel, name)
    if kernel.ndim not in (3, 4) or min(kernel.shape) == 0:
        raise ValueError(f"{name} must have shape (k, c_out, c_in) or (k1, k2, c_out, c_in), got shape {kernel.shape}")
    return kernel


def to_torch_layout(kernel: ArrayLike) -> np.ndarray:
    """The library's kernel ``(*kernel_spatial, c_out, c_in)`` in PyTorch's layout ``(c_out, c_in, *kernel_spatial)``.

    ``torch.nn.Conv1d`` / ``Conv2d`` with ``padding=k // 2, padding_mode="circular"`` (and no
    bias) then computes :func:`periodic_conv` on channels-first signals: both are the
    cross-correlation ``y_j(a) = sum_t sum_i W[j, i, t] x_i(a + t - k // 2)``.

    Parameters
    ----------
    kernel : array_like, shape (k, c_out, c_in) or (k1, k2, c_out, c_in)
        Finite real entries.

    Returns
    -------
    ndarray, shape (c_out, c_in, k) or (c_out, c_in, k1, k2)
        A contiguous copy (``torch.from_numpy`` accepts it as it is).

    Raises
    ------
    TypeError
        Complex, boolean or non-numeric entries.
    ValueError
        Non-finite entries or a number of axes other than 3 or 4.

    Examples
    --------
    >>> from meanfield.init import orthogonal_conv_kernel
    >>> k = orthogonal_conv_kernel(3, 2, 4, rng=0)      # (3, 3, c_out=4, c_in=2)
    >>> to_torch_layout(k).shape
    (4, 2, 3, 3)
    >>> bool(np.array_equal(from_torch_layout(to_torch_layout(k)), k))
    True
    """
    kernel = _kernel_array(kernel)
    return np.ascontiguousarray(np.moveaxis(kernel, (-2, -1), (0, 1)))


def from_torch_layout(weight: ArrayLike) -> np.ndarray:
    """PyTorch's ``(c_out, c_in, *kernel_spatial)`` weight in the library's layout ``(*kernel_spatial, c_out, c_in)``.

    The inverse of :func:`to_torch_layout` (pass ``conv.weight.detach().cpu().numpy()``).

    Parameters
    ----------
    weight : array_like, shape (c_out, c_in, k) or (c_out, c_in, k1, k2)

    Returns
    -------
    ndarray, shape (k, c_out, c_in) or (k1, k2, c_out, c_in)

    Raises
    ------
    TypeError, ValueError
        As :func:`to_torch_layout`, for ``weight``.
    """
    weight = _kernel_array(weight, "weight")
    return np.ascontiguousarray(np.moveaxis(weight, (0, 1), (-2, -1)))


def conv_matrix(kernel: ArrayLike, spatial_shape: int | Sequence[int]) -> np.ndarray:
    """The dense block-circulant matrix of the periodic cross-correlation by ``kernel`` (Xiao et al. 2018, eq. 2.1).

    Parameters
    ----------
    kernel : array_like, shape (k, c_out, c_in) or (k1, k2, c_out, c_in)
        Index ``t`` <-> offset ``t - k // 2`` per axis.
    spatial_shape : int or (int, int)
        Signal size ``n`` (1-D) or ``(n1, n2)`` (2-D).

    Returns
    -------
    ndarray, shape ``(P * c_out, P * c_in)``
        ``M @ x.ravel() == periodic_conv(x, kernel).ravel()`` for ``x`` of shape ``(*spatial, c_in)``
        (positions row-major, channels last). For an orthogonal kernel with ``c_in = c_out`` the
        matrix is orthogonal.

    Raises
    ------
    ValueError
        A non-finite kernel, shapes that do not match, sizes < 1 or not integers (bools,
        strings, non-integral floats), or a matrix above 2^29 entries.
    TypeError
        A complex, boolean or non-numeric kernel; complex sizes.

    Examples
    --------
    >>> conv_matrix(np.array([[[1.0]], [[2.0]], [[3.0]]]), 3)
    array([[2., 3., 1.],
           [1., 2., 3.],
           [3., 1., 2.]])
    """
    kernel = real_array(kernel, "kernel")
    if isinstance(spatial_shape, (tuple, list)):
        shape = tuple(int_arg(s, "spatial_shape", 1) for s in spatial_shape)
    else:
        shape = (int_arg(spatial_shape, "spatial_shape", 1),)
    d = len(shape)
    if d not in (1, 2) or kernel.ndim != d + 2:
        raise ValueError(f"kernel of shape {kernel.shape} does not match a {len(shape)}-D spatial_shape {shape}")
    ks = kernel.shape[:d]
    c_out, c_in = kernel.shape[-2:]
    p = math.prod(shape)
    check_size(p * c_out * p * c_in, "(prod(spatial_shape) * c)^2")
    if min(kernel.shape) == 0:
        raise ValueError(f"kernel must have non-empty axes, got shape {kernel.shape}")
    m = np.zeros((p, c_out, p, c_in))
    positions = list(np.ndindex(*shape))
    for t, beta in kernel_offsets(ks):
        for ai, a in enumerate(positions):
            b = np.ravel_multi_index(tuple((x + y) % n for x, y, n in zip(a, beta, shape)), shape)
            m[ai, :, b, :] += kernel[t]
    return m.reshape(p * c_out, p * c_in)


def conv_singular_values(kernel: ArrayLike, spatial_shape: int | Sequence[int]) -> np.ndarray:
    r"""Singular values of the periodic convolution by ``kernel`` on ``spatial_shape``, ascending.

    The block-circulant matrix (:func:`conv_matrix`) is block-diagonalised by the DFT over
    positions: its singular values are those of the ``c_out x c_in`` symbols
    :math:`\hat K(\theta) = \sum_\beta K(\beta) e^{i\theta\cdot\beta}` at the ``P`` frequencies
    :math:`\theta = 2\pi m / n` (per axis): O(P c^3) instead of O((P c)^3).

    Parameters
    ----------
    kernel : array_like, shape (2k+1, c_out, c_in) or (2k1+1, 2k2+1, c_out, c_in)
        Real kernel in the library's layout (odd sizes; index ``t`` is offset ``t - k``).
    spatial_shape : int or (int, int)
        Number of positions ``n`` (1-D) or ``(n1, n2)`` (2-D), each >= 1.

    Returns
    -------
    ndarray, shape (P * min(c_out, c_in),)
        The singular values in ascending order (those of ``conv_matrix(kernel, spatial_shape)``).

    Raises
    ------
    TypeError
        Complex, boolean or non-numeric ``kernel``; complex sizes.
    ValueError
        ``kernel`` of even sizes or with a number of spatial axes other than ``spatial_shape``'s,
        non-finite entries, sizes < 1 or not integers (bools, strings, non-integral floats), or
        more than 2^29 numbers in the symbols.

    Notes
    -----
    Xiao et al. 2018, App. D and Fig. S3 (spectra of block-circulant weight matrices).

    Examples
    --------
    >>> conv_singular_values(np.array([[[1.0]], [[2.0]], [[3.0]]]), 3)
    array([1.73205081, 1.73205081, 6.        ])
    """
    kernel = _kernel_array(kernel)
    sd = kernel.ndim - 2
    if isinstance(spatial_shape, (tuple, list)):
        shape = tuple(int_arg(s, "spatial_shape", 1) for s in spatial_shape)
    else:
        shape = (int_arg(spatial_shape, "spatial_shape", 1),)
    if len(shape) != sd:
        raise ValueError(
            f"spatial_shape {shape} has {len(shape)} axes but the kernel {kernel.shape} has {sd} spatial axes"
        )
    ks = kernel.shape[:sd]
    if any(s % 2 == 0 for s in ks):
        raise ValueError(f"kernel spatial sizes must be odd (2k+1), got {ks}")
    c_out, c_in = kernel.shape[-2:]
    check_size(2 * math.prod(shape) * c_out * c_in, "2 * prod(spatial_shape) * c_out * c_in")
    khat = np.zeros(shape + (c_out, c_in), dtype=complex)
    grids = np.meshgrid(*(2 * np.pi * np.arange(n) / n for n in shape), indexing="ij")
    for t, beta in kernel_offsets(ks):
        phase = np.exp(1j * sum(g * b for g, b in zip(grids, beta)))
        khat += phase[..., None, None] * kernel[t]
    return np.sort(np.linalg.svd(khat, compute_uv=False).ravel())
