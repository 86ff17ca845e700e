"""The config typing's fast paths give exactly what the slow, general paths give.

- Models are built from typed data without `model_validate` (`fast_model.construct`): every
  model built while loading the whole corpus equals `model_validate` of the same data, with the
  same fields set and the same field order.
- A struct's keys are typed as they come, without a duplicate-key pass first; a repeated, unknown
  or non-scalar key sends the mapping to the general pass. Both give the same configs and
  problems, and count alike against the alias budget. The typing of integers on the fast path
  accepts only ASCII digits (rivet's `[0-9]`).
- Each field's rivet type, read off the annotation pydantic evaluated, is the one its annotation
  as written (`typing.get_type_hints`) gives.
"""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from rivet_ci.core.common import fast_model
from rivet_ci.core.common.limits import U64_MAX
from rivet_ci.core.config import loader as config_loader
from rivet_ci.core.config import node_typing as config_typing
from rivet_ci.core.config.loader import load_config_text
from rivet_ci.core.config.models import (
    ANY_VALUE_STRUCTS,
    NULL_REFUSED,
    STRUCTS,
    Config,
    ExportConfig,
    SourceConfig,
)
from rivet_ci.core.config.rivet_yaml import MAP, PLAIN, QUOTED, SEQ, compose

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
            if model in ANY_VALUE_STRUCTS and kind.name == "str":
                kind = config_typing.Kind("name")
            spec = specs[info.alias or attr]
            assert spec.kind == kind, (model.__name__, attr)
            assert (spec.presence == "optional") == (
                not info.is_required() and (optional or info.default is None)
                and (model, info.alias or attr) not in NULL_REFUSED), attr
            checked += 1
    assert checked == 174  # every key of the schema (`rivet_ci.core.config.models`)
    # `chunk_size: U64 = ...` (pydantic keeps the bound among the field's own constraints) and
    # `port: U16 | None` (the bound stays inside the annotation) both keep their bounds.
    assert config_typing.specs(ExportConfig)["chunk_size"].kind == config_typing.Kind(
        "uint", max=U64_MAX, bits=64)
    assert config_typing.specs(SourceConfig)["port"].kind == config_typing.Kind(
        "uint", max=2**16 - 1, bits=16)


def test_fast_build_equals_model_validate(monkeypatch: pytest.MonkeyPatch) -> None:
    real = config_typing.build_model
    built_models: list[str] = []

    def checked(model: type[BaseModel], data: dict[str, Any]) -> Any:
        built = real(model, data)
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


# Anchors expanding to ~4,700 nodes (`*d`: `load.tables` nests overrides in overrides); a file
# this size may expand to ~18,000.
def _tables(alias: str, count: int = 8) -> str:
    return "{tables: {" + ", ".join(f"t{i}: *{alias}" for i in range(count)) + "}}"


BOMB = ("a: &a {pk: [x, x, x, x, x, x]}\n"
        f"b: &b {_tables('a')}\nc: &c {_tables('b')}\nd: &d {_tables('c')}\n" + HEAD)
BOMB_REPEATED = BOMB + f"    load: {_tables('d', 3)}\n    load: {_tables('d', 3)}\n"  # once
BOMB_OVER = BOMB + f"    load: {_tables('d', 5)}\n"

# Mappings the typing cannot take as they come: keys repeated (after a null, a failed value, a
# section; as the last key; twice over), unknown and misplaced keys, a mapping or list as a
# key, a repeated `source`, an alias bomb behind a repeated key, and unset placeholders.
TRICKY = [
    HEAD + "    parallel: ~\n    parallel: 3\n",
    HEAD + "    parallel: 3\n    parallel: ~\n    chunk_size: x\n",
    HEAD + "    parallel: x\n    parallel: 3\n    destination: {type: s3}\n",
    HEAD + "    destination: {type: local}\n    mode: full\n",
    HEAD + "    mode: full\n    mode: chunked\n    mode: nope\n",
    HEAD + "    batch_size: 5\n    parallel: 2\n    throttle_ms: 1\n    bogus: 1\n",
    HEAD + "    ? [a]\n    : 1\n    ? {b: c}\n    : 2\n    parallel: 2\n",
    HEAD + "    name: orders\n    tables: [a, b]\n",
    HEAD + "  - name: b\n    table: t\n    destination: {type: local, type: s3}\n",
    HEAD.replace("  url_env: DATABASE_URL\n", "  url_env: A\n  url_env: B\n  port: 5432\n"),
    HEAD + "source:\n  type: mysql\n",
    "exports: []\nexports: []\nsource: {type: postgres, url: x}\n",
    HEAD + "    parallel: 2\n    query: ${Q}\n    parallel: 3\n",
    HEAD.replace("url_env: DATABASE_URL", "url: ${URL}\n  port: ${PORT}\n  port: 1"),
    HEAD + "    load: &a [1, 2, {x: *a}]\n    load: 1\n",
    BOMB_REPEATED,
    BOMB_OVER,
    HEAD + "    parallel: 2\n    \"parallel\": 3\n",
    HEAD + "    meta_columns: {row_hash: true, row_hash: [a]}\n    meta_columns: {}\n",
]


class GeneralTyper(config_typing.Typer):
    """Types every mapping the general way: its keys checked first (`Typer._again`)."""

    def struct(self, node: Any, kind: config_typing.Kind, loc: config_typing.Loc, line: int,
               depth: int, *, pairs: Any = None) -> Any:
        if pairs is None and node is not None:
            return self._again(node, kind, loc, depth, None)
        return super().struct(node, kind, loc, line, depth, pairs=pairs)


def test_keys_typed_as_they_come_equal_the_general_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = [p.read_text(encoding="utf-8") for p in CORPUS] + TRICKY
    as_they_come = [load_config_text("c.yaml", text, {"Q": "1"}) for text in texts]
    monkeypatch.setattr(config_loader, "Typer", GeneralTyper)
    for text, loaded in zip(texts, as_they_come, strict=True):
        expected = load_config_text("c.yaml", text, {"Q": "1"})
        assert loaded == expected, text
        assert repr(loaded) == repr(expected)
    rules = [{p.rule for p in loaded.problems} for loaded in as_they_come[len(CORPUS):]]
    assert {"P0-duplicate-key", "T-key", "T-unknown-key", "P1b", "P0-repetition"} <= set().union(
        *rules)
    assert "P0-repetition" not in rules[TRICKY.index(BOMB_REPEATED)]
    assert "P0-repetition" in rules[TRICKY.index(BOMB_OVER)]


@pytest.mark.parametrize("text", TRICKY)
def test_keys_typed_as_they_come_count_against_the_alias_budget_as_the_general_pass(
        text: str) -> None:
    # A repeated key is not typed, so not counted: at every budget around what the whole walk
    # counts, both ways of typing refuse the file or type it alike.
    def typed(typer_class: type[config_typing.Typer], budget: int) -> Any:
        walk = config_typing.Walk(unset_names=(), budget=budget)
        root = compose(text)
        assert isinstance(root, yaml.MappingNode)
        try:
            result = typer_class(walk).struct(root, config_typing.Kind("struct", model=Config),
                                              (), 1, 0)
        except (config_typing.RepetitionLimitError, config_typing.TooDeepError) as exc:
            return type(exc)
        return result, walk

    unbounded = typed(GeneralTyper, 10**9)
    visits = unbounded[1].visits if isinstance(unbounded, tuple) else 0
    for budget in range(max(visits - 4, 0), visits + 2):
        assert typed(config_typing.Typer, budget) == typed(GeneralTyper, budget), budget




def test_a_tag_written_in_the_text_is_dropped_as_rivet_drops_it() -> None:
    # rivet (serde_yaml_ng) ignores YAML tags: a tagged node is read as it is written without
    # one — a plain scalar as plain, a quoted one as quoted, a mapping as a mapping — even a tag
    # spelled like the composer's own (which hold a NUL no tag in a file can: `!%00x` reads as
    # the non-specific tag `!`).
    root = compose("a: !rivet-ci/plain x\nb: !rivet-ci/quoted 'x'\nc: !rivet-ci/map {d: e}\n"
                   "f: x\ng: 'x'\nh: {d: e}\ni: !%00x x\nj: !!str 5\n")
    assert isinstance(root, yaml.MappingNode)
    tags = [value.tag for _, value in root.value]
    assert [tag is own for tag, own in zip(
        tags, [PLAIN, QUOTED, MAP, PLAIN, QUOTED, MAP, PLAIN, PLAIN], strict=True)] == [True] * 8
    assert SEQ not in tags


@pytest.mark.parametrize(("tagged", "parallel"), [
    ("!rivet-ci/plain 3", 3), ("!rivet-ci/quoted 3", 3), ("!rivet-ci/seq 3", 3),
    ("!!str 3", 3), ("!env 3", 3), ("!!int '3'", None)])
def test_a_tagged_value_is_typed_as_written_without_its_tag(tagged: str,
                                                            parallel: int | None) -> None:
    text = ("source: {type: postgres, url_env: DB}\nexports:\n  - name: a\n    table: t\n"
            f"    format: parquet\n    destination: {{type: local, path: out}}\n"
            f"    parallel: {tagged}\n")
    loaded = load_config_text("c.yaml", text, {"DB": "postgres://h/d"})
    if parallel is None:  # a quoted '3' is no integer, whatever its tag says
        assert [(p.line, p.rule) for p in loaded.problems] == [(7, "T-type")]
    else:
        assert loaded.problems == () and loaded.exports[0].parallel == parallel
