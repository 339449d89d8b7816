"""meanfield.validation.layer_rules: registered with `meanfield validate`, every check passes at its default size."""

from __future__ import annotations

import pytest
from meanfield.validation import layer_rules
from meanfield.validation.runner import comparison_modules


def test_layer_rules_is_a_comparison_module():
    assert "layer_rules" in comparison_modules()


@pytest.mark.slow
def test_every_layer_rule_check_passes():
    rows = layer_rules.run(rng=0)
    failed = [r.name for r in rows if r.failed]
    assert not failed, failed
    names = " | ".join(r.name for r in rows)
    for kind in ("LayerNorm", "RMSNorm", "BatchNorm train", "BatchNorm eval", "Dropout", "AvgPool", "MaxPool"):
        assert kind in names, kind
    for kind in ("Flatten", "Concat", "Embedding", "SelfAttention", "gradient explodes", "stays below 1"):
        assert kind in names, kind
    assert all(r.kind == "check" for r in rows)


def test_run_checks_its_arguments():
    with pytest.raises(TypeError):
        layer_rules.run(full="yes")
    with pytest.raises(ValueError):
        layer_rules.run(backend="nope")
