"""Shared helpers for figure modules: the figure declaration, sizes, saving a PNG with its numbers.

A figure module ``figures/PAPER.py`` defines one function per figure of the paper, declared with the
:func:`figure` decorator, which registers it (:func:`registered`), and lists it in its ``__all__``;
every figure is saved by :func:`save_figure`::

    @figure(paper="Xiao et al. 2018", figure="Fig. S4", honours_backend=True)
    def fig_s4(out_dir, *, size, backend, seed):
        channels = by_size(size, smoke=16, default=256, full=1024)
        ...
        return save_figure(fig, out_dir, "xiao2018_fig_s4", data, params={...}, axes={...}, units={...})

(``save_figure`` records the declared figure, its seed, size and backend from the call in progress.)

A paper whose figures are split over modules is a package ``figures/PAPER/`` whose ``__init__``
imports them and lists them in its ``__all__``; a figure defined in a module of that package is
registered under its paper. A figure defined in a helper module outside it is declared with
``module="PAPER"``. ``PAPER.FIGURES`` is the read-only
view of the paper's registered figures (:func:`registered`).

Callers see ``fig_s4(out_dir, *, size="default", full=None, backend="numpy", rng=0, **extra)``:

``size``
    ``"smoke"`` (a few seconds at most: for tests that render every figure), ``"default"`` (minutes
    for all figures together: ``meanfield reproduce``) or ``"full"`` (the paper's sizes).
``full``
    ``True`` is an alias of ``size="full"``, ``False`` of the default size (the older keyword).
``backend``
    ``"numpy"``, ``"cupy"``, ``"torch"`` (CUDA when visible, else the CPU) or ``"array_api_strict"``
    (tests). A figure declared ``honours_backend=False`` (it does not simulate, or
    its simulations run on the CPU only) accepts ``"numpy"`` alone and raises ``ValueError`` for
    the others; ``meanfield figures PAPER`` / ``--all`` / ``meanfield reproduce`` run such figures on
    the CPU and say so.
``rng``
    A non-negative int seed, recorded in the JSON (as ``seed``); the figure derives its independent
    random streams from it with ``numpy.random.SeedSequence(rng).spawn`` (:func:`streams`). ``seed=``
    is its deprecated spelling (a ``DeprecationWarning``, the same numbers).

Every argument is checked before any work (``out_dir`` is created and a file test-written in it);
bad values raise ``TypeError``/``ValueError`` naming the argument. The decorated function carries the
attributes ``paper``, ``figure``, ``honours_backend`` and ``sizes`` that the runner and the tests read.
"""

from __future__ import annotations

import contextvars
import dataclasses
import functools
import inspect
import numbers
import types
from collections.abc import Mapping
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.colors
import matplotlib.pyplot as plt
import numpy as np

from meanfield.backend import spawn_sequences
from meanfield.checks import renamed_kwargs
from meanfield.cli import check_backend_available, check_out_dir, progress

from ._io import figure_metadata, to_jsonable, write_json

__all__ = [
    "BLUE_RED",
    "SIZES",
    "by_size",
    "check_backend",
    "check_out_dir",
    "check_seed",
    "check_size",
    "colors",
    "figure",
    "mark_floor",
    "plot_log_floor",
    "plt",
    "progress",
    "registered",
    "rng_kwargs",
    "save_figure",
    "streams",
    "title",
    "to_jsonable",
]

#: The sizes every figure function accepts, smallest first.
SIZES = ("smoke", "default", "full")

#: Resolution of the PNGs; smoke-size figures (tests) are saved at a lower one, which halves their time.
DPI, SMOKE_DPI = 120, 60

#: The array backends a figure may be asked for (``array_api_strict``: the strict CPU test namespace).
BACKENDS = ("numpy", "cupy", "torch", "array_api_strict")


def check_size(size=None, full=None) -> str:
    """The figure size from ``size`` (``"smoke"``, ``"default"``, ``"full"``) and its alias ``full``.

    ``full=True`` means ``"full"``, ``full=False`` the default size; passing both is allowed only
    when they agree. Raises ``TypeError`` for a non-string ``size`` or a non-bool ``full``, and
    ``ValueError`` for an unknown size or a contradiction.
    """
    if full is not None and not isinstance(full, (bool, np.bool_)):
        raise TypeError(f"full must be True or False, got {full!r}")
    if size is not None and not isinstance(size, str):
        raise TypeError(f"size must be one of {SIZES}, got {size!r}")
    if size is not None and size not in SIZES:
        raise ValueError(f"size must be one of {SIZES}, got {size!r}")
    if full is None:
        return size or "default"
    implied = "full" if full else "default"
    if size is not None and size != implied and (full or size == "full"):
        raise ValueError(f"size={size!r} contradicts full={bool(full)}; pass size alone")
    return size or implied


def by_size(size: str, *, smoke, default, full):
    """The value for ``size``: ``by_size(size, smoke=16, default=256, full=1024)``."""
    return {"smoke": smoke, "default": default, "full": full}[check_size(size)]


def check_backend(backend, honours_backend: bool = True, what: str = "this figure") -> str:
    """One of :data:`meanfield.backend.BACKENDS`; a backend other than NumPy must be importable and honoured by ``what``.

    Raises ``TypeError`` for a non-string, ``ValueError`` for an unknown backend, for a backend
    whose package is not installed (the message says what to install), and for any backend but
    ``"numpy"`` when ``honours_backend`` is False (``what`` runs on the CPU only).
    """
    if not isinstance(backend, str):
        raise TypeError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend != "numpy" and not honours_backend:
        raise ValueError(f"{what} runs on the CPU only (backend must be 'numpy'), got backend={backend!r}")
    check_backend_available(backend)
    return backend


@renamed_kwargs(seed="rng")
def check_seed(rng) -> int:
    """A non-negative int seed ``rng`` (``bool`` and non-integers raise ``TypeError``, negatives ``ValueError``)."""
    if isinstance(rng, (bool, np.bool_)) or not isinstance(rng, (numbers.Integral, np.integer)):
        raise TypeError(f"rng must be a non-negative int seed, got {rng!r}")
    if int(rng) < 0:
        raise ValueError(f"rng must be a non-negative int seed, got {int(rng)}")
    return int(rng)


@renamed_kwargs(seed="rng")
def streams(rng: int, n: int) -> list[np.random.Generator]:
    """``n`` independent Generators spawned from ``numpy.random.SeedSequence(rng)`` (no seed arithmetic):
    the children :func:`meanfield.backend.spawn_sequences` gives ``numpy.random.default_rng(rng)``."""
    return [np.random.default_rng(s) for s in spawn_sequences(np.random.default_rng(check_seed(rng)), n)]


_BACKEND_NOTE = {
    True: "Simulations run on ``backend`` (``'numpy'``, ``'cupy'``, ``'torch'`` or ``'array_api_strict'``).",
    False: "Runs on the CPU only: ``backend`` must be ``'numpy'`` (any other raises ``ValueError``).",
}


def _figure_doc(func, paper, figure, honours_backend, extra_params) -> str:
    """The function's own docstring with numpydoc Parameters / Returns / Raises for the common
    arguments inserted before its first section (a figure documents only its extra keywords)."""
    lines = inspect.cleandoc(func.__doc__ or f"{paper}, {figure}.").splitlines()
    cut = next(
        (i for i in range(len(lines) - 1) if lines[i + 1].strip() and set(lines[i + 1].strip()) == {"-"}), len(lines)
    )
    head, tail = lines[:cut], lines[cut:]
    own = []
    if tail and tail[0].strip() == "Parameters":  # the figure's extra keywords: merged below
        end = next(
            (i for i in range(2, len(tail) - 1) if tail[i + 1].strip() and set(tail[i + 1].strip()) == {"-"}), len(tail)
        )
        own, tail = tail[2:end], tail[end:]
    common = f"""
Reproduces {paper}, {figure}. {_BACKEND_NOTE[honours_backend]}

Parameters
----------
out_dir : str or pathlib.Path
    Output folder, created if needed (a file is test-written before any work).
size : {{'smoke', 'default', 'full'}}, optional
    ``'smoke'``: seconds (tests), ``'default'``: the reduced size of ``meanfield reproduce``,
    ``'full'``: the paper's sizes. Default ``'default'``.
full : bool, optional
    Alias: ``True`` is ``size='full'``, ``False`` the default size.
backend : {{'numpy', 'cupy', 'torch', 'array_api_strict'}}, optional
    Array backend of the simulations{"" if honours_backend else "; only ``'numpy'`` is accepted"}.
rng : int, optional
    Non-negative seed of every random stream (spawned with ``numpy.random.SeedSequence``); recorded in
    the JSON. Default 0. ``seed=`` is its deprecated spelling.
""".strip("\n").splitlines()
    while head and not head[-1].strip():
        head.pop()
    while own and not own[-1].strip():
        own.pop()
    common += own
    common += """
Returns
-------
list of pathlib.Path
    The PNG and the JSON beside it (read it back with :func:`meanfield.figures.load`).

Raises
------
TypeError
    An argument of the wrong type (``full`` not a bool, ``rng`` not an int, ...).
ValueError
    An unknown ``size`` or ``backend``, a negative ``rng``, an ``out_dir`` that cannot be written,
    or a backend whose package is missing (CuPy, PyTorch) or that a CPU-only figure cannot use.
""".splitlines()
    return "\n".join(head + [""] + common + ([""] + tail if tail else []))


#: Every declared figure: ``{figure module: {function name: figure function}}``, filled by :func:`figure`.
_REGISTRY: dict[str, dict[str, callable]] = {}


@dataclasses.dataclass(frozen=True)
class _Call:
    """A figure call in progress: the declared function and its checked ``size``, ``backend`` and seed."""

    figure: object
    size: str
    backend: str
    seed: int


#: The figure call in progress (set by the wrapper :func:`figure` declares, per thread and task):
#: what :func:`save_figure` records when its caller does not say.
_CALL: contextvars.ContextVar = contextvars.ContextVar("meanfield_figure_call", default=None)


def _origin(func) -> tuple:
    """Where ``func`` is defined: its module, qualified name and first line."""
    return func.__module__, func.__qualname__, func.__code__.co_firstlineno


def _owner(module: str) -> str:
    """The figure module a dotted module name belongs to: ``"meanfield.figures.PAPER"`` and the modules
    of the package ``meanfield.figures.PAPER`` (``"meanfield.figures.PAPER._part"``) give ``"PAPER"``;
    any other name its last component."""
    parts = module.split(".")
    return parts[2] if parts[:2] == ["meanfield", "figures"] and len(parts) > 2 else parts[-1]


def registered(module: str) -> Mapping:
    """The figures registered under the figure module ``module``, ``{name: function}``, read-only and live.

    ``module`` is the module's name, e.g. ``"xiao2018"`` or ``"meanfield.figures.xiao2018"`` (a paper
    module or package writes ``FIGURES = registered(__name__)``; a module inside the package
    ``meanfield.figures.PAPER`` names ``PAPER``). Figures appear in the order they were declared.
    """
    if not isinstance(module, str) or not module:
        raise TypeError(f"module must be a figure module name such as 'xiao2018', got {module!r}")
    return types.MappingProxyType(_REGISTRY.setdefault(_owner(module), {}))


def figure(*, paper: str, figure: str, honours_backend: bool, module: str | None = None):
    """Declare a figure function: its paper, the paper's figure it reproduces, and its backend use.

    Declaring registers the function under its figure module (:func:`registered`), by its name.

    Parameters
    ----------
    paper : str
        Authors and year as the title shows them, e.g. ``"Xiao et al. 2018"``.
    figure : str
        The paper's figure, e.g. ``"Fig. S4"``, or ``"not in the paper: ..."``.
    honours_backend : bool
        True when the figure's simulations run on ``backend``; False when it does not simulate or
        simulates on the CPU only (then ``backend="cupy"`` raises ``ValueError``).
    module : str, optional
        The figure module (``"xiao2018"``) that lists the figure: its ``meanfield figures`` name is
        ``module.function``. Default: the module defining the function, or the paper's package when
        that module lies inside the package ``meanfield.figures.PAPER``; a helper module of a paper
        outside its package passes the paper's module (which imports the helper at its top).

    The decorated function is written as ``def f(out_dir, *, size, backend, seed, **extra)`` and
    receives validated arguments (see the module docstring); callers may pass ``size`` or ``full``.
    """
    if not isinstance(honours_backend, bool):
        raise TypeError(f"honours_backend must be True or False, got {honours_backend!r}")
    if module is not None and (not isinstance(module, str) or not module):
        raise TypeError(f"module must be a figure module name such as 'xiao2018', got {module!r}")

    def decorate(func):
        owner = _owner(module or func.__module__)
        extra_params = [
            p
            for name, p in inspect.signature(func).parameters.items()
            if name not in {"out_dir", "size", "backend", "seed", "full"}
        ]

        def checked(out_dir, *, size=None, full=None, backend="numpy", rng=0, **extra):
            size = check_size(size, full)
            backend = check_backend(backend, honours_backend, f"{owner}.{func.__name__}")
            seed = check_seed(rng)
            out_dir = check_out_dir(out_dir)
            token = _CALL.set(_Call(wrapper, size, backend, seed))
            try:
                return func(out_dir, size=size, backend=backend, seed=seed, **extra)
            finally:
                _CALL.reset(token)

        checked.__signature__ = inspect.Signature(
            [inspect.Parameter("out_dir", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
            + [
                inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=d)
                for n, d in (("size", None), ("full", None), ("backend", "numpy"), ("rng", 0))
            ]
            + [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in extra_params]
        )
        wrapper = functools.update_wrapper(renamed_kwargs(seed="rng")(checked), func)
        wrapper.__signature__ = checked.__signature__
        wrapper.paper = paper
        wrapper.figure = figure
        wrapper.honours_backend = honours_backend
        wrapper.sizes = SIZES
        wrapper.__doc__ = _figure_doc(func, paper, figure, honours_backend, extra_params)
        figures = _REGISTRY.setdefault(owner, {})
        earlier = figures.get(func.__name__)
        if earlier is not None and _origin(earlier.__wrapped__) != _origin(func):  # a reloaded module may redeclare
            raise ValueError(f"figure {owner}.{func.__name__} is declared twice")
        figures[func.__name__] = wrapper
        return wrapper

    return decorate


def rng_kwargs(func, generator: np.random.Generator) -> dict:
    """The keyword that gives ``generator``'s stream to ``func``: ``{"rng": generator}`` when ``func``
    takes ``rng``, else ``{"seed": int}`` drawn from ``generator`` (simulators that still take an
    integer ``seed``)."""
    if "rng" in inspect.signature(func).parameters:
        return {"rng": generator}
    return {"seed": int(generator.integers(2**63 - 1))}


#: Blue (ordered / small) to red (chaotic / large) through purple: no near-white colour, unlike
#: ``coolwarm`` whose middle is invisible on a white background.
BLUE_RED = matplotlib.colors.LinearSegmentedColormap.from_list(
    "meanfield_blue_red", ["#1b3a9c", "#6a3d9a", "#b5179e", "#d62828"]
)


def colors(n: int, cmap=BLUE_RED, lo: float = 0.0, hi: float = 1.0) -> list:
    """``n`` colours spread over ``cmap`` from ``lo`` to ``hi`` (one colour when ``n == 1``)."""
    return [cmap(t) for t in (np.linspace(lo, hi, n) if n > 1 else [lo])]


def plot_log_floor(ax, x, y, floor: float, *, yerr=None, marker="o", color=None, label=None, **kwargs):
    """Points ``(x, y)`` on a log axis where values at or below ``floor`` (zeros included) are shown.

    Points above ``floor`` are drawn normally (with error bars ``yerr`` whose lower ends are clipped
    at ``floor``); points at or below it are drawn *on* ``floor`` with a downward triangle, so that a
    zero or a value consistent with zero is visible instead of silently dropped. Returns the number
    of points drawn on the floor. Call :func:`mark_floor` once per axes to explain the triangles.
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    low = ~(y > floor)
    if yerr is not None:
        yerr = np.asarray(yerr, dtype=float)
        lower = np.clip(np.minimum(yerr, y - floor), 0, None)
        ax.errorbar(
            x[~low],
            y[~low],
            yerr=[lower[~low], yerr[~low]],
            fmt=marker,
            color=color,
            label=label,
            elinewidth=0.8,
            capsize=1.5,
            **kwargs,
        )
    else:
        ax.plot(x[~low], y[~low], marker, color=color, label=label, ls="none", **kwargs)
    if low.any():
        ax.plot(x[low], np.full(low.sum(), floor), "v", color=color, ms=kwargs.get("ms", 4))
    return int(low.sum())


def mark_floor(ax, floor: float, what: str = "value") -> None:
    """Draw the floor of :func:`plot_log_floor` and a legend entry explaining its triangles."""
    ax.axhline(floor, color="0.6", lw=0.6, ls=":")
    ax.plot([], [], "v", color="0.4", label=f"{what} $\\leq$ {floor:.0e} (incl. 0), drawn on the floor")
    ax.set_ylim(bottom=floor / 1.5)


def title(fig, paper: str, figure: str, what: str, details: str = "") -> None:
    """Suptitle ``"paper, figure: what"`` and, on a second line, ``details`` (sizes and parameters)."""
    head = f"{paper}, {figure}: {what}"
    fig.suptitle(head + (f"\n{details}" if details else ""), fontsize=9)


def _has_text(fig, needle: str) -> bool:
    texts = [fig._suptitle.get_text() if fig._suptitle is not None else ""]
    texts += [ax.get_title(loc) for ax in fig.axes for loc in ("center", "left", "right")]
    return any(needle in t for t in texts)


@renamed_kwargs(seed="rng")
def save_figure(
    fig,
    out_dir,
    name: str,
    data: dict,
    *,
    paper: str | None = None,
    figure=None,
    rng=None,
    full: bool = False,
    backend: str | None = None,
    params: dict | None = None,
    axes: dict | None = None,
    units: dict | None = None,
    notes: str = "",
    size: str | None = None,
) -> list[Path]:
    """Save ``fig`` as ``out_dir/name.png`` and its numbers as ``out_dir/name.json``; close the figure.

    The one way every figure is saved. ``figure`` is the declared figure function being saved
    (:func:`figure`; its ``paper`` and ``figure`` are recorded) or the paper's figure as a string
    ("Fig. S4", then ``paper``, e.g. "Xiao et al. 2018", is required); when no title of the figure
    names the paper, a suptitle "paper, figure" is added. ``params`` holds every
    parameter the figure used (sizes, variances, activation, ...), ``units`` the unit of each array
    whose unit is not obvious, ``axes`` the axis names of every array of two or more dimensions
    (required; see :mod:`meanfield.figures._io`). ``size`` (``"smoke"``, ``"default"``, ``"full"``)
    is recorded with ``full`` derived from it; without ``size``, ``full`` is recorded as given. The
    JSON carries the metadata block of :func:`figure_metadata`. The PNG has :data:`DPI` dots per
    inch (:data:`SMOKE_DPI` at the smoke size).

    Called while a declared figure function runs (directly or through a helper it calls), the
    arguments not given are that call's: ``figure`` (the declared function, hence ``paper``),
    ``rng`` (its seed), ``size`` and ``backend``; so a figure saves with
    ``save_figure(fig, out_dir, name, data, params=..., axes=..., units=...)``. Outside a figure
    call ``backend`` defaults to ``"numpy"`` and ``paper`` (or a declared ``figure``) is required.
    """
    call = _CALL.get()
    if call is not None:
        figure = call.figure if figure is None and paper is None else figure
        rng = call.seed if rng is None else rng
        size = call.size if size is None else size
        backend = call.backend if backend is None else backend
    backend = "numpy" if backend is None else backend
    if not isinstance(name, str) or not name or any(c in name for c in "/\\"):
        raise ValueError(f"name must be a non-empty file name without a folder, got {name!r}")
    if not isinstance(data, dict):
        raise TypeError(f"data must be a dict of arrays and scalars, got {type(data).__name__}")
    if callable(figure) and hasattr(figure, "sizes"):  # a declared figure function
        paper = figure.paper if paper is None else paper
        figure = figure.figure
    elif figure is not None and not isinstance(figure, str):
        raise TypeError(f"figure must be a declared figure function or a str such as 'Fig. S4', got {figure!r}")
    if not isinstance(paper, str) or not paper:
        raise TypeError(f"paper must be a str such as 'Xiao et al. 2018', got {paper!r}")
    out_dir = check_out_dir(out_dir)
    png = out_dir / f"{name}.png"
    js = out_dir / f"{name}.json"
    if size is not None:
        size = check_size(size)
        full = size == "full"
    meta = figure_metadata(
        paper=paper,
        figure=figure or "",
        name=name,
        seed=rng,
        full=full,
        backend=backend,
        params=params,
        units=units,
        notes=notes,
        size=size,
    )
    if not _has_text(fig, paper):
        fig.suptitle(f"{paper}, {figure}" if figure else paper, fontsize=10)
    write_json(js, meta, data, axes)  # validates the axes before anything is written
    fig.savefig(png, dpi=SMOKE_DPI if size == "smoke" else DPI, bbox_inches="tight")
    plt.close(fig)
    return [png, js]
