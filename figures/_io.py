"""Self-describing figure data: the JSON written beside every PNG, and its loader.

Every figure writes ``NAME.json`` with three blocks::

    {"metadata": {"library": "meanfield", "version": ..., "commit": ..., "created": ...,
                  "kind": "figure", "paper": "Xiao et al. 2018", "figure": "Fig. S4",
                  "name": "xiao2018_fig_s4", "seed": 0, "size": "default", "full": false,
                  "backend": "numpy",
                  "params": {...every parameter the figure used...},
                  "units": {"array name": "unit", ...}, "notes": "..."},
     "axes": {"array name": ["axis 0 name", "axis 1 name", ...], ...},
     "data": {"array name": [...], ...}}

Arrays of two or more dimensions must name their axes (``save_figure`` refuses otherwise).
Writing, reading and the metadata head are the library's (:mod:`meanfield.io`: :func:`write_json`,
:func:`load`, :func:`meanfield.io.run_metadata`); this module adds the figure's fields
(:func:`figure_metadata`). Validation tables (``meanfield validate --out``) use the same three
blocks with ``"kind": "validation"``; :func:`load` reads both.
"""

from __future__ import annotations

from meanfield.io import (
    JSON_CONTAINER_BYTES,
    MAX_JSON_BYTES,
    MAX_JSON_DEPTH,
    FigureData,
    load,
    run_metadata,
    to_jsonable,
    write_json,
)

__all__ = [
    "JSON_CONTAINER_BYTES",
    "MAX_JSON_BYTES",
    "MAX_JSON_DEPTH",
    "FigureData",
    "figure_metadata",
    "load",
    "to_jsonable",
    "write_json",
]


def figure_metadata(
    *,
    paper: str,
    figure: str,
    name: str,
    seed,
    full: bool,
    backend: str,
    params: dict | None = None,
    units: dict | None = None,
    notes: str = "",
    size: str | None = None,
) -> dict:
    """The metadata block of a figure's JSON (library version, commit, time, sizes, parameters).

    ``size`` is ``"smoke"``, ``"default"`` or ``"full"``; when omitted it is derived from ``full``.
    """
    return run_metadata(
        kind="figure",
        paper=paper,
        figure=figure,
        name=name,
        seed=seed,
        size=size if size is not None else ("full" if full else "default"),
        full=bool(full),
        backend=backend,
        params=dict(params or {}),
        units=dict(units or {}),
        notes=notes,
    )
