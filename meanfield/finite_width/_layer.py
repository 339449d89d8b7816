"""One layer's parameters, and the conversion to and from Burkholz & Dubatovka's unscaled weight variance."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .._results import Result
from ._common import MAX_WIDTH, fan_in_arg, int_arg, nonneg, unscaled, width_arg

__all__ = ["Layer", "sigma_w2_from_unscaled", "unscaled_sigma_w2"]


@dataclass(frozen=True)
class Layer(Result):
    """One ReLU layer: ``h = W x + b``, ``W_ij ~ N(0, sigma_w2 / fan_in)``, ``b_i ~ N(0, sigma_b2)``.

    Attributes
    ----------
    width : int
        ``N``, the number of neurons, ``1 <= N <= MAX_WIDTH``.
    sigma_w2 : float
        Weight variance times fan-in (>= 0); He is 2.
    sigma_b2 : float
        Bias variance (>= 0).
    fan_in : int or None
        The dimension of the layer's input; ``None`` (default) means ``width`` (square weight
        matrices). Burkholz & Dubatovka 2019 writes He as ``sigma_w,l^2 = 2 / N_l`` with ``N_l`` the layer's own
        width, which is ``sigma_w2 = 2`` with the default ``fan_in``; for layers whose input has
        another dimension pass ``fan_in`` explicitly (it is not inferred from the previous layer).
    unscaled_sigma_w2 : float
        Property: Burkholz & Dubatovka's per-weight variance ``sigma_w2 / fan_in`` (what a simulator written
        in the paper's parametrisation takes).

    Raises
    ------
    TypeError
        Bools, complex numbers or strings as variances; a complex ``width`` or ``fan_in``.
    ValueError
        ``width`` or ``fan_in`` not an integer in ``[1, MAX_WIDTH]`` (a bool, a string or a
        non-integral float included); a variance that is negative, NaN or infinite.

    Notes
    -----
    Fields are validated when the layer is built (the fields then hold a Python ``int`` and
    ``float``s), and again where layers are used (:func:`propagate_distribution`,
    :func:`expected_squared_norm`, ...), where plain tuples are accepted too and each error names
    ``layers[i]`` and the field.

    Examples
    --------
    >>> Layer(200, 2.0).unscaled_sigma_w2      # He at width 200: Burkholz & Dubatovka's 2 / N
    0.01
    >>> Layer(50, 2.0, fan_in=100).unscaled_sigma_w2
    0.02
    """

    width: int
    sigma_w2: float
    sigma_b2: float = 0.0
    fan_in: int | None = None

    def __post_init__(self) -> None:
        width = width_arg(self.width, "width")
        object.__setattr__(self, "width", width)
        object.__setattr__(self, "sigma_w2", nonneg(self.sigma_w2, "sigma_w2"))
        object.__setattr__(self, "sigma_b2", nonneg(self.sigma_b2, "sigma_b2"))
        if self.fan_in is not None:
            object.__setattr__(self, "fan_in", fan_in_arg(self.fan_in, width))

    @property
    def unscaled_sigma_w2(self) -> float:
        """``sigma_w2 / fan_in`` (``fan_in`` defaulting to ``width``), Burkholz & Dubatovka's ``sigma_w,l^2``."""
        n = width_arg(self.width, "width")
        return unscaled(nonneg(self.sigma_w2, "sigma_w2"), fan_in_arg(self.fan_in, n))


def unscaled_sigma_w2(sigma_w2: float, fan_in: int) -> float:
    """Burkholz & Dubatovka's per-weight variance ``sigma_w^2 = sigma_w2 / fan_in`` (``W_ij ~ N(0, sigma_w^2)``).

    Parameters
    ----------
    sigma_w2 : float
        The library's weight variance times fan-in, ``>= 0`` (He: 2).
    fan_in : int
        ``1 <= fan_in <= MAX_WIDTH``.

    Returns
    -------
    float
        ``sigma_w2 / fan_in``.

    Raises
    ------
    ValueError
        Negative or non-finite ``sigma_w2``, ``fan_in`` out of range or not an integer (a bool, a
        string or a non-integral float), or a positive ``sigma_w2`` whose quotient underflows to 0.
    TypeError
        A bool, complex number or string as ``sigma_w2``; a complex ``fan_in``.

    Examples
    --------
    >>> unscaled_sigma_w2(2.0, 200)
    0.01
    """
    fi = int_arg(fan_in, "fan_in", 1, MAX_WIDTH)
    return unscaled(nonneg(sigma_w2, "sigma_w2"), fi)


def sigma_w2_from_unscaled(variance: float, fan_in: int) -> float:
    """The library's ``sigma_w2 = variance * fan_in`` from Burkholz & Dubatovka's per-weight ``variance``.

    Burkholz & Dubatovka 2019 (Burkholz & Dubatovka) writes ``W_ij ~ N(0, sigma_w^2)`` with He ``sigma_w^2 = 2 / N``;
    the library writes ``W_ij ~ N(0, sigma_w2 / fan_in)`` with He ``sigma_w2 = 2``.

    Parameters
    ----------
    variance : float
        Burkholz & Dubatovka's ``sigma_w^2``, ``>= 0``.
    fan_in : int
        ``1 <= fan_in <= MAX_WIDTH``.

    Returns
    -------
    float
        ``variance * fan_in``.

    Raises
    ------
    ValueError
        Negative or non-finite ``variance``, ``fan_in`` out of range or not an integer (a bool, a
        string or a non-integral float), or a product beyond float64.
    TypeError
        A bool, complex number or string as ``variance``; a complex ``fan_in``.

    Examples
    --------
    >>> sigma_w2_from_unscaled(0.01, 200)
    2.0
    """
    fi = int_arg(fan_in, "fan_in", 1, MAX_WIDTH)
    v = nonneg(variance, "variance") * fi
    if v == float("inf"):
        raise ValueError(f"variance * fan_in overflows float64 (variance={variance!r}, fan_in={fi})")
    return v


def check_layers(layers: Sequence) -> list[Layer]:
    """``layers`` as a list of validated :class:`Layer` with ``fan_in`` resolved (entries: Layer or
    (width, sigma_w2[, sigma_b2[, fan_in]])); shared with the sibling submodules, not re-exported."""
    if isinstance(layers, (str, bytes)) or not isinstance(layers, (list, tuple)):
        raise TypeError(
            f"layers must be a list of Layer or (width, sigma_w2[, sigma_b2[, fan_in]]) tuples, got {type(layers).__name__}"
        )
    out = []
    for i, layer in enumerate(layers):
        if isinstance(layer, Layer):
            fields = (layer.width, layer.sigma_w2, layer.sigma_b2, layer.fan_in)
        elif isinstance(layer, (list, tuple)) and len(layer) in (2, 3, 4):
            fields = tuple(layer) + (0.0, None)[len(layer) - 2 :]
        else:
            raise TypeError(
                f"layers[{i}] must be a Layer or a (width, sigma_w2[, sigma_b2[, fan_in]]) tuple, got {layer!r}"
            )
        n = width_arg(fields[0], f"layers[{i}] width")
        fi = fan_in_arg(fields[3], n, f"layers[{i}] fan_in")
        sw = nonneg(fields[1], f"layers[{i}] sigma_w2")
        unscaled(sw, fi, f"layers[{i}] sigma_w2")
        out.append(Layer(n, sw, nonneg(fields[2], f"layers[{i}] sigma_b2"), fi))
    return out
