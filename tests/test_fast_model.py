"""`fast_model.construct` gives what `model_validate` gives, for every model the planner builds.

The planner and the config typing build their frozen models without re-validation; here every
such construction (over the examples, the config corpus and a generated plan input with every
mode, cursor and chunking variant) is done both ways and compared field by field, including the
Python type of each value (`3` vs `3.0`, tuple vs list would change the JSON document).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from support.models import same

from rivet_ci.adapters.files import load_config_file, load_facts_file
from rivet_ci.core.common import fast_model
from rivet_ci.core.config.loader import load_config_text
from rivet_ci.core.plan.planner import FactsOrigin, plan_configs

ROOT = Path(__file__).parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import bench_planner  # noqa: E402  (the benchmark's input generator)


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    real, real_full = fast_model.Maker.make, fast_model.Maker.make_full
    counts: dict[str, int] = {}

    def make(self: fast_model.Maker[Any], data: dict[str, Any]) -> Any:
        built = real(self, data)
        same(built, self.model.model_validate(data))
        counts[self.model.__name__] = counts.get(self.model.__name__, 0) + 1
        return built

    def make_full(self: fast_model.Maker[Any], values: dict[str, Any]) -> Any:
        expected = self.model.model_validate(values)  # before `values` becomes the instance's
        built = real_full(self, values)
        same(built, expected)  # every field given, in declaration order
        assert built.model_fields_set == set(self.model.model_fields)
        counts[self.model.__name__] = counts.get(self.model.__name__, 0) + 1
        return built

    monkeypatch.setattr(fast_model.Maker, "make", make)
    monkeypatch.setattr(fast_model.Maker, "make_full", make_full)
    return counts


def test_planner_models_equal_model_validate(checked: dict[str, int], tmp_path: Path) -> None:
    configs, facts_path = bench_planner.generate(tmp_path, 240, 40)
    loaded = [load_config_file(p, root=tmp_path, environ={}) for p in configs]
    examples = sorted((ROOT / "examples" / "pipelines").glob("*.yaml"))
    loaded += [load_config_file(p, root=ROOT, environ={}) for p in examples]
    facts, problems = load_facts_file(facts_path, root=tmp_path)
    plan = plan_configs(loaded, facts, FactsOrigin(kind="file", path="facts.yaml"), problems)
    assert len(plan.exports) > 240
    assert {"Signals", "Reason", "ExportRecommendation", "PlannedExport", "HistorySummary",
            "Campaign", "Wave", "ConfigPlan", "ExportConfig", "DestinationConfig"} <= set(checked)


def test_config_corpus_models_equal_model_validate(checked: dict[str, int]) -> None:
    for path in sorted((ROOT / "tests" / "configs").glob("*/*.yaml")):
        load_config_text(path.name, path.read_text(encoding="utf-8"), {})
    assert checked["ExportConfig"] > 100


def test_models_with_validators_are_refused() -> None:
    from pydantic import field_validator

    class Checked(BaseModel):
        value: int

        @field_validator("value")
        @classmethod
        def positive(cls, value: int) -> int:
            return abs(value)

    with pytest.raises(TypeError, match="validators"):
        fast_model.construct(Checked, {"value": -1})


def test_frozen_instances_given_the_same_names_share_one_set_of_them() -> None:
    """A frozen model's instances share their `model_fields_set` while given the same field
    names (memory); copying one with an update never changes another's."""
    from rivet_ci.core.plan.recommendation import Reason

    make = fast_model.maker(Reason).make
    first, second = make({"kind": "a", "message": "m"}), make({"kind": "b", "message": "n"})
    assert first.__pydantic_fields_set__ is second.__pydantic_fields_set__
    assert first.model_fields_set == {"kind", "message"}
    only_kind = make({"kind": "c"})  # other names: a set of its own
    assert only_kind.model_fields_set == {"kind"}
    assert only_kind.__pydantic_fields_set__ is not first.__pydantic_fields_set__
    copied = only_kind.model_copy(update={"message": "x"})
    assert copied.model_fields_set == {"kind", "message"}
    assert only_kind.model_fields_set == {"kind"}
    assert fast_model.replace(only_kind, {"message": "y"}).model_fields_set == {"kind", "message"}
    assert only_kind.model_fields_set == {"kind"}
    with pytest.raises(ValueError):  # frozen: pydantic refuses before touching the set
        only_kind.message = "z"  # type: ignore[misc]
    assert only_kind.model_fields_set == {"kind"}


def test_make_full_takes_every_field_in_declaration_order() -> None:
    """`make_full`: the given dict becomes the instance's values, every field counted as set;
    frozen instances share that set, a mutable model's instances each have their own."""
    from rivet_ci.core.plan.recommendation import Reason

    make_full = fast_model.maker(Reason).make_full
    values = {"kind": "a", "message": "m", "values": ()}
    first, second = make_full(values), make_full({"kind": "b", "message": "n", "values": ()})
    assert first == Reason(kind="a", message="m") and first.__dict__ is values
    assert first.model_fields_set == {"kind", "message", "values"}
    assert first.__pydantic_fields_set__ is second.__pydantic_fields_set__

    class Mutable(BaseModel):
        a: int = 0

    mutable = fast_model.maker(Mutable).make_full
    one, two = mutable({"a": 1}), mutable({"a": 2})
    assert one.__pydantic_fields_set__ is not two.__pydantic_fields_set__


def test_instances_of_a_mutable_model_never_share_their_set() -> None:
    class Mutable(BaseModel):
        a: int = 0
        b: int = 0

    make = fast_model.maker(Mutable).make
    first, second = make({"a": 1}), make({"a": 2})
    assert first.__pydantic_fields_set__ is not second.__pydantic_fields_set__
    first.b = 3  # pydantic adds `b` to this instance's set in place
    assert first.model_fields_set == {"a", "b"} and second.model_fields_set == {"a"}


def test_the_shared_sets_are_bounded_per_model() -> None:
    """Past `SHARED_NAME_SETS` combinations of names an instance gets a set of its own."""
    class Wide(BaseModel):
        model_config = {"frozen": True}
        a: int = 0
        b: int = 0
        c: int = 0

    maker = fast_model.maker(Wide)
    combinations: list[Any] = [{"a": 1}, {"b": 1}, {"c": 1}, {"a": 1, "b": 1}]
    for data in combinations:
        maker.make(data)
    assert len(maker.names) == len(combinations)
    maker.names.clear()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fast_model, "SHARED_NAME_SETS", 1)
        given: list[Any] = [{"a": 1}, {"b": 1}, {"b": 2}]
        first, second, third = (maker.make(d) for d in given)
    assert list(maker.names) == [("a",)]
    assert second.__pydantic_fields_set__ is not third.__pydantic_fields_set__
    assert third.model_fields_set == {"b"} and first.model_fields_set == {"a"}


def test_the_facts_origin_equals_model_validate(checked: dict[str, int], tmp_path: Path) -> None:
    """`plan` records where its facts come from without validating the origin (which would
    build its validator): with a facts file, with one that is unusable, and without."""
    from io import StringIO

    from rivet_ci.commands.context import Context
    from rivet_ci.commands.plan import load_facts_arg

    (tmp_path / "facts.json").write_text('{"format": "rivet-ci-facts/1", "captured_at": '
                                         '"2026-11-29T06:00:00+02:00"}', encoding="utf-8")
    (tmp_path / "bad.json").write_text("{", encoding="utf-8")
    ctx = Context(stdout=StringIO(), stderr=StringIO(), environ={}, cwd=tmp_path)
    origins = [load_facts_arg(path, ctx)[2]
               for path in (Path("facts.json"), tmp_path / "bad.json", None)]
    assert [(o.kind, o.path) for o in origins] == [
        ("file", "facts.json"), ("file", (tmp_path / "bad.json").as_posix()), ("none", None)]
    assert origins[0].captured_at is not None and origins[1].captured_at is None
    assert checked["FactsOrigin"] == 3
