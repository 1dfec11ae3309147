"""The Python step helpers are the ones `clients/steps.json` describes (the npm package's builders
are generated from it): same kinds, same signatures and defaults, and every described case gives
the same step or the same error. The npm test runs the same cases through the JavaScript builders,
so the two cannot drift."""

import inspect
import json
from pathlib import Path

import pytest

from codex_wire import steps

DESCRIPTION = json.loads((Path(__file__).parents[2] / "clients" / "steps.json").read_text())


def _normal(v):
    return list(v) if isinstance(v, tuple) else v


def test_kinds_are_the_described_ones():
    assert steps.MODEL_KINDS == set(DESCRIPTION["model_kinds"])
    assert steps.FAKE_ONLY_KINDS == set(DESCRIPTION["fake_only_kinds"])


@pytest.mark.parametrize("builder", DESCRIPTION["builders"], ids=lambda b: b["kind"])
def test_signature_is_the_described_one(builder):
    params = list(inspect.signature(getattr(steps, builder["kind"])).parameters.values())
    assert [p.name for p in params] == [a["name"] for a in builder["args"]]
    for p, a in zip(params, builder["args"]):
        positional = p.kind == p.POSITIONAL_OR_KEYWORD
        assert positional == a.get("positional", False), f"{p.name}: positional"
        if a.get("required"):
            assert p.default is p.empty, f"{p.name}: required"
        else:
            assert _normal(p.default) == a.get("default"), f"{p.name}: default"


@pytest.mark.parametrize("case", DESCRIPTION["cases"], ids=lambda c: json.dumps(c["call"]))
def test_case(case):
    kind, args, *rest = case["call"]
    options = rest[0] if rest else {}
    helper = getattr(steps, kind)
    if "error" in case:
        with pytest.raises((TypeError, ValueError)) as err:
            helper(*args, **options)
        assert case["error"] in str(err.value)
    else:
        assert helper(*args, **options) == case["step"]
        # A built step passes the scenario check unchanged.
        assert steps.check_step(case["step"]) == case["step"]
