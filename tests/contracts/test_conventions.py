"""One spelling per concept in every public signature: ``rng``, ``n_networks``, ``batch_size``.

Randomness is ``rng`` (``None``, an int or a ``numpy.random.Generator``), ensemble sizes are
``n_networks``, batch sizes ``batch_size`` (leading axes of independent draws ``batch_shape``). The
older spellings (``seed``, ``n_inits``, ``n_members``, ``n_nets``, ``batch``) keep working for one
release as deprecated aliases (:func:`meanfield.checks.renamed_kwargs`): they warn and give the
identical numbers.

The public API itself is recorded in ``public_api.txt`` beside this file: one line per name of a
public module's ``__all__`` with its kind. A change of the API (a name added, removed or turned from a
class into a function) is then made on purpose and reviewed in one file. After such a change, write the
file anew with ``python tests/contracts/test_conventions.py --update-api``.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import sys
import types
import warnings
from pathlib import Path

import numpy as np
import pytest

import meanfield
from meanfield import Result
from meanfield.checks import doc_sections, renamed_kwargs

#: Parameter names the library no longer spells this way (the deprecated aliases).
OLD_NAMES = {"seed", "n_members", "n_nets", "n_inits", "batch"}
PACKAGES = ("meanfield", "meanfield.validation", "meanfield.figures")
#: Fields of result records (frozen dataclasses) still spelled the old way: attributes and JSON keys
#: that users read back, renamed with their readers. Listed so that the test fails once they are gone.
RECORD_FIELDS = {("RegressionTask", "seed"), ("Audit", "n_inits")}


def _public_modules():
    mods = {}

    def walk(name):
        mod = importlib.import_module(name)
        mods[name] = mod
        for info in pkgutil.iter_modules(getattr(mod, "__path__", [])):
            if not info.name.startswith("_"):
                walk(f"{name}.{info.name}")

    for pkg in PACKAGES:
        walk(pkg)
    return mods


#: The recorded public API (see the module docstring).
PUBLIC_API = Path(__file__).with_name("public_api.txt")


def _kind(obj) -> str:
    if inspect.isclass(obj):
        return "class"
    if isinstance(obj, types.ModuleType):
        return "module"
    if callable(obj):
        return "function"
    return type(obj).__name__


def _api_lines() -> list[str]:
    """``"module.name kind"`` for every name of every public module's ``__all__``, sorted."""
    return sorted(
        f"{mname}.{name} {_kind(getattr(mod, name))}"
        for mname, mod in _public_modules().items()
        for name in mod.__all__
    )


def _public_callables():
    """(label, callable) for every public function and public method defined in the library: names in
    a public module's ``__all__`` or defined there without a leading underscore."""
    out, seen = [], set()
    for mname, mod in _public_modules().items():
        names = set(getattr(mod, "__all__", ()))
        names |= {n for n, v in vars(mod).items() if not n.startswith("_") and getattr(v, "__module__", None) == mname}
        for name in sorted(names):
            obj = getattr(mod, name, None)
            if not (getattr(obj, "__module__", None) or "").startswith("meanfield"):
                continue
            if inspect.isclass(obj):
                members = [(f"{name}.{a}", v) for a, v in vars(obj).items() if not a.startswith("_") or a == "__init__"]
            elif callable(obj):
                members = [(name, obj)]
            else:
                continue
            for label, f in members:
                f = f.__func__ if isinstance(f, (staticmethod, classmethod)) else f
                f = f.fget if isinstance(f, property) else f
                if not callable(f) or id(f) in seen:
                    continue
                seen.add(id(f))
                out.append((f"{mname}.{label}", obj if label.endswith(".__init__") else f))
    return out


def _parameters(f):
    try:
        return inspect.signature(f).parameters
    except (TypeError, ValueError):
        return {}


def test_the_walk_sees_the_library():
    labels = {label for label, _ in _public_callables()}
    assert len(labels) > 300
    for expected in (".qmap", "validation.dense.run", "xiao2018.fig_s4", "init.dense_weights", "pytorch.audit"):
        assert any(label.endswith(expected) for label in labels), expected


def test_the_public_api_is_the_recorded_one():
    """Every public module's ``__all__`` (names and kinds) is the one ``public_api.txt`` records."""
    recorded = PUBLIC_API.read_text().splitlines()
    live = _api_lines()
    added, removed = sorted(set(live) - set(recorded)), sorted(set(recorded) - set(live))
    assert not (added or removed), (
        f"the public API changed: added {added}, removed {removed}; if on purpose, record it with "
        "`python tests/contracts/test_conventions.py --update-api`"
    )
    assert len(live) == len(set(live)), "a public module lists a name twice in __all__"


def test_every_public_module_declares_its_api():
    missing = [mname for mname, mod in _public_modules().items() if not isinstance(getattr(mod, "__all__", None), list)]
    assert not missing, f"public modules without an __all__ list: {missing}"


#: Public frozen dataclasses that describe an input rather than record a result: the layers of a
#: network (:mod:`meanfield.nets`), an activation, an array backend. Every other one is a ``Result``.
DESCRIPTIONS = ("meanfield.nets", "meanfield.activations", "meanfield.backend")


def test_every_public_result_is_a_result():
    """Every public frozen dataclass that records a result inherits ``Result`` (its ``.replace()``)."""
    bad = set()
    for mod in _public_modules().values():
        for name in mod.__all__:
            obj = getattr(mod, name)
            if not (inspect.isclass(obj) and dataclasses.is_dataclass(obj) and obj.__dataclass_params__.frozen):
                continue
            if "replace" in vars(obj):
                bad.add(f"{obj.__module__}.{obj.__qualname__} defines its own replace")
            elif not issubclass(obj, Result) and not obj.__module__.startswith(DESCRIPTIONS):
                bad.add(f"{obj.__module__}.{obj.__qualname__} is not a Result")
    assert not bad, sorted(bad)


def test_no_public_signature_uses_an_old_spelling():
    bad = []
    for label, f in _public_callables():
        old = OLD_NAMES & set(_parameters(f))
        if inspect.isclass(f) and issubclass(f, Result):
            old -= {field for cls, field in RECORD_FIELDS if cls == f.__name__}
        if old:
            bad.append(f"{label}: {sorted(old)}")
    assert not bad, "use rng / n_networks / batch_size (or batch_shape):\n" + "\n".join(bad)


def test_the_listed_record_fields_still_exist():
    """Delete an entry of RECORD_FIELDS once its field is renamed."""
    classes = {label.rsplit(".", 2)[-2]: f for label, f in _public_callables() if label.endswith(".__init__")}
    for cls, field in RECORD_FIELDS:
        assert field in _parameters(classes[cls]), (cls, field)


def test_no_signature_keeps_both_seed_and_rng():
    for label, f in _public_callables():
        params = _parameters(f)
        assert not ({"seed", "rng"} <= set(params)), label


def test_renamed_kwargs_mechanism():
    @renamed_kwargs(seed="rng", n_members="n_networks")
    def f(x, rng=None, *, n_networks=1):
        return x, rng, n_networks

    assert list(inspect.signature(f).parameters) == ["x", "rng", "n_networks"]
    assert f(1, 2, n_networks=3) == (1, 2, 3)
    with pytest.warns(DeprecationWarning, match=r"seed=.*rng="):
        assert f(1, seed=2) == (1, 2, 1)
    with pytest.warns(DeprecationWarning, match="n_members"):
        assert f(1, n_members=4) == (1, None, 4)
    with pytest.raises(TypeError, match="rng"):
        f(1, rng=1, seed=1)

    @renamed_kwargs(seed="rng")
    def g(seed=0):  # body not yet renamed: the public name is rng, the value reaches seed
        return seed

    assert list(inspect.signature(g).parameters) == ["rng"]
    assert g(rng=5) == 5 and g(5) == 5
    with pytest.warns(DeprecationWarning):
        assert g(seed=6) == 6
    with pytest.raises(ValueError, match="both"):
        renamed_kwargs(seed="rng")(lambda seed, rng: None)
    with pytest.raises(ValueError, match="no parameter"):
        renamed_kwargs(seed="rng")(lambda x: None)


def test_doc_sections_fills_placeholder_lines_with_their_indentation():
    @doc_sections(returns="Returns\n-------\nint\n    The answer.\n\n", raises="Raises\n------\nValueError")
    def f():
        """Summary.

        {returns}

        {raises}
        """

    assert inspect.getdoc(f) == "Summary.\n\nReturns\n-------\nint\n    The answer.\n\nRaises\n------\nValueError"
    assert "{" not in f.__doc__ and "\n        Returns\n        -------\n" in f.__doc__

    def g():
        """Summary.

        {returns} and more
        """

    with pytest.raises(ValueError, match="returns"):
        doc_sections(returns="Returns")(g)  # not a line of its own

    def h():
        """{x}

        {x}
        """

    with pytest.raises(ValueError, match="twice"):
        doc_sections(x="text")(h)

    def stripped():
        pass

    assert doc_sections(x="text")(stripped) is stripped and stripped.__doc__ is None  # python -OO


def test_comparison_run_checks_arguments_and_shares_its_sections():
    from meanfield.validation.runner import comparison_run

    @comparison_run
    def run(backend: str = "numpy", full: bool = False, seed: int = 0) -> list:
        """Rows.

        {run_returns}

        {run_raises}
        """
        return [backend, full, seed]

    assert list(inspect.signature(run).parameters) == ["backend", "full", "rng"]
    assert run() == ["numpy", False, 0] and run("numpy", True, np.int64(3)) == ["numpy", True, 3]
    assert type(run(rng=np.int64(3))[2]) is int
    with pytest.warns(DeprecationWarning, match="seed="):
        assert run(seed=2) == ["numpy", False, 2]
    for bad, error in (({"backend": "gpu"}, ValueError), ({"full": 1}, TypeError), ({"rng": -1}, ValueError)):
        with pytest.raises(error, match=next(iter(bad))):
            run(**bad)
    doc = inspect.getdoc(run)
    assert "Returns\n-------\nlist of Comparison" in doc and "Raises\n------\nValueError" in doc


def test_check_rng_takes_rng_only():
    assert list(inspect.signature(meanfield.checks.check_rng).parameters) == ["rng"]
    a = meanfield.checks.check_rng(5).standard_normal(4)
    np.testing.assert_array_equal(a, np.random.default_rng(5).standard_normal(4))


def _same(a, b):
    if isinstance(a, np.random.SeedSequence):
        return np.array_equal(a.generate_state(4), b.generate_state(4))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.random.Generator):
        return np.array_equal(a.standard_normal(4), b.standard_normal(4))
    if hasattr(a, "to_dict"):
        return _same(a.to_dict(), b.to_dict())
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return np.array_equal(np.asarray(a), np.asarray(b))


def _cheap_calls():
    from meanfield.figures import harness
    from meanfield.validation import runner

    from meanfield import backend, init

    return [
        (backend.substream, (), {"rng": 7}, "seed"),
        (harness.streams, (), {"rng": 3, "n": 2}, "seed"),
        (harness.check_seed, (), {"rng": 4}, "seed"),
        (init.dense_weights, (3, 4, 1.0, "gaussian", 0), {"batch_shape": (2,)}, "batch"),
        (init.haar_orthogonal, (3, 4, 0), {"batch_shape": 2}, "batch"),
        (init.gsm, (4, 6, 2.0, 0), {"batch_shape": 2}, "batch"),
        (init.orthogonal_looks_linear, (4, 6, 1.0, 0), {"batch_shape": 2}, "batch"),
        (init.gaussian_conv_kernel, ((3,), 2, 3), {"v": [0.25, 0.5, 0.25], "rng": 0, "batch_shape": 2}, "batch"),
        (runner.check_run_arguments, ("numpy", False), {"rng": 3}, "seed"),
    ]


@pytest.mark.parametrize("func, args, kwargs, old", _cheap_calls(), ids=lambda v: getattr(v, "__name__", None))
def test_old_spelling_warns_and_gives_the_identical_result(func, args, kwargs, old):
    renames = {new: o for o, new in func.__renamed_kwargs__.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        new = func(*args, **kwargs)
    olds = {renames.get(k, k): v for k, v in kwargs.items()}
    assert olds != kwargs and (old is None or old in olds)
    with pytest.warns(DeprecationWarning, match="deprecated") as record:
        again = func(*args, **olds)
    assert len(record) == len(set(olds) - set(kwargs))
    assert _same(new, again)


def test_figure_seed_is_rng_with_the_same_numbers(tmp_path):
    import json

    from meanfield.figures import xiao2018

    params = inspect.signature(xiao2018.fig_depth_scales).parameters
    assert "rng" in params and "seed" not in params
    a = xiao2018.fig_depth_scales(tmp_path / "a", size="smoke", rng=2)
    with pytest.warns(DeprecationWarning, match="seed="):
        b = xiao2018.fig_depth_scales(tmp_path / "b", size="smoke", seed=2)
    ja, jb = (json.loads(p[-1].read_text()) for p in (a, b))
    assert ja["data"] == jb["data"] and ja["metadata"]["seed"] == jb["metadata"]["seed"] == 2


def test_the_stream_helpers_spawn_the_same_children():
    """``figures.harness.streams``, ``parallel.chunk_streams`` and ``backend.substream`` are views of one
    rule: child ``k`` of ``SeedSequence(seed)`` (``backend.spawn_sequences`` of ``default_rng(seed)``)."""
    from meanfield.figures import harness

    from meanfield import backend, parallel

    seed, n = 11, 5
    reference = [np.random.default_rng(s).integers(0, 2**63, 4) for s in np.random.SeedSequence(seed).spawn(n)]
    views = {
        "streams": [g.integers(0, 2**63, 4) for g in harness.streams(seed, n)],
        "chunk_streams": [np.random.default_rng(s).integers(0, 2**63, 4) for s in parallel.chunk_streams(seed, n)],
        "substream": [np.random.default_rng(backend.substream(seed, k)).integers(0, 2**63, 4) for k in range(n)],
        "spawn_sequences": [
            np.random.default_rng(s).integers(0, 2**63, 4)
            for s in backend.spawn_sequences(np.random.default_rng(seed), n)
        ],
    }
    for name, got in views.items():
        np.testing.assert_array_equal(np.array(got), np.array(reference), err_msg=name)


if __name__ == "__main__":
    if sys.argv[1:] != ["--update-api"]:
        sys.exit("usage: python tests/contracts/test_conventions.py --update-api")
    PUBLIC_API.write_text("\n".join(_api_lines()) + "\n")
    print(f"wrote {PUBLIC_API} ({len(_api_lines())} names)")
