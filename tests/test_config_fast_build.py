"""The config typing's fast paths give exactly what the slow, general paths give.

- Models are built from typed data without `model_validate` (`fast_model.construct`): every
  model built while loading the whole corpus equals `model_validate` of the same data, with the
  same fields set and the same field order.
- A struct whose keys are all known and distinct skips the duplicate-key pass; the typing of
  integers on the fast path accepts only ASCII digits (rivet's `[0-9]`).
- Each field's rivet type, read off the annotation pydantic evaluated, is the one its annotation
  as written (`typing.get_type_hints`) gives.
"""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from rivet_ci.core import config_typing, fast_model
from rivet_ci.core.config import STRUCTS, ExportConfig, SourceConfig
from rivet_ci.core.config_loader import load_config_text
from rivet_ci.core.limits import U64_MAX

ROOT = Path(__file__).parent.parent
CORPUS = sorted([*(ROOT / "tests" / "configs").glob("*/*.yaml"),
                 *(ROOT / "examples" / "pipelines").glob("*.yaml")])

HEAD = """source:
  type: postgres
  url_env: DATABASE_URL
exports:
  - name: orders
    table: public.orders
    format: parquet
    destination: {type: local, path: out}
"""


def test_every_config_model_takes_the_fast_build() -> None:
    for model in STRUCTS:
        assert fast_model.maker(model).fast, model.__name__


def test_field_kinds_read_off_pydantic_annotations_equal_the_type_hints() -> None:
    checked = 0
    for model in STRUCTS:
        hints = typing.get_type_hints(model, include_extras=True)
        specs = config_typing.specs(model)
        for attr, info in model.model_fields.items():
            kind, optional = config_typing._kind_of(hints[attr])
            spec = specs[info.alias or attr]
            assert spec.kind == kind, (model.__name__, attr)
            assert (spec.presence == "optional") == (
                not info.is_required() and (optional or info.default is None)), attr
            checked += 1
    assert checked == 129  # every key of the schema (`rivet_ci.core.config`)
    # `chunk_size: U64 = ...` (pydantic keeps the bound among the field's own constraints) and
    # `port: U16 | None` (the bound stays inside the annotation) both keep their bounds.
    assert config_typing.specs(ExportConfig)["chunk_size"].kind == config_typing.Kind(
        "uint", max=U64_MAX, bits=64)
    assert config_typing.specs(SourceConfig)["port"].kind == config_typing.Kind(
        "uint", max=2**16 - 1, bits=16)


def test_fast_build_equals_model_validate(monkeypatch: pytest.MonkeyPatch) -> None:
    real = config_typing.build_model
    built_models: list[str] = []

    def checked(model: type[BaseModel], data: dict[str, Any], loc: config_typing.Loc,
                line: int, typer: config_typing.Typer) -> Any:
        built = real(model, data, loc, line, typer)
        expected = model.model_validate(data)
        assert type(built) is model
        assert built == expected
        assert built.model_fields_set == expected.model_fields_set
        assert list(built.__dict__) == list(expected.__dict__)
        assert repr(built) == repr(expected)
        assert built.model_dump() == expected.model_dump()
        built_models.append(model.__name__)
        return built

    monkeypatch.setattr(config_typing, "build_model", checked)
    assert len(CORPUS) > 100
    for path in CORPUS:
        load_config_text(path.name, path.read_text(encoding="utf-8"), {})
    # Every struct of the schema was built at least once (the corpus uses every key).
    assert {m.__name__ for m in STRUCTS} - {"Config"} <= set(built_models)


@pytest.mark.parametrize("value", ["\u00b2", "\u0661\u0662", "\uff11", "1\u0660"])
def test_non_ascii_digits_are_not_integers(value: str) -> None:
    # str.isdigit() accepts them (and int() some of them); rivet's integers are [0-9] only.
    loaded = load_config_text("c.yaml", HEAD + f"    parallel: {value}\n", {})
    problems = [(p.line, p.field, p.rule) for p in loaded.problems]
    assert problems == [(9, "exports[0].parallel", "T-type")]
    assert "expected an unsigned integer" in loaded.problems[0].message


def test_known_keys_and_duplicates_still_reported_in_order() -> None:
    text = HEAD + "    parallel: 2\n    parallel: 3\n    bogus: 1\n    chunk_size: 5\n"
    loaded = load_config_text("c.yaml", text, {})
    assert [(p.line, p.field, p.rule) for p in loaded.problems] == [
        (10, "exports[0].parallel", "P0-duplicate-key"),
        (11, "exports[0].bogus", "T-unknown-key"),
    ]
