"""The trainer's old module paths under meanfield.validation warn and re-export the moved names."""

from __future__ import annotations

import importlib
import sys

import pytest

MOVED = [
    ("meanfield.validation.training", "meanfield.train"),
    ("meanfield.validation.symmetric_nets", "meanfield.train.symmetric"),
    ("meanfield.validation.symmetry_training", "meanfield.train.skip"),
]


@pytest.mark.parametrize(("old", "new"), MOVED)
def test_old_path_warns_and_reexports_the_same_objects(old, new):
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=new):
        shim = importlib.import_module(old)
    target = importlib.import_module(new)
    assert shim.__all__
    for name in shim.__all__:
        assert getattr(shim, name) is getattr(target, name), name


def test_the_package_registers_every_network_family():
    """Importing meanfield.train is enough: Blumenfeld et al.'s specs and Orhan's skip networks
    train on it (their parameter counts come from their own hooks)."""
    import meanfield.train as tr

    assert tr.init_parameters(tr.ReplicatedNetSpec(width=4, unique=2, noise=0.1), (1, 3, 3), 10, rng=0)[0].shape == (
        4,
        9,
    )
    assert tr.init_parameters(tr.SkipNet("plain", 2, 4), (5,), 3, rng=0)[0].shape == (4, 5)
