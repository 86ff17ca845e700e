"""Fuzzing the inputs users write: whatever the text, planning reports Problems, never a traceback.

Random text, and random structures dumped to YAML (built from rivet's own keys and tricky values:
huge and negative integers, placeholders, dates, nesting), go through `load_config_text` +
`plan_configs` + the JSON document; random facts files through `load_facts_text`; random JSON
through `read_plan`. Derandomized, so CI sees the same inputs every run.
"""

from __future__ import annotations

import contextlib
import json
from datetime import date
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError
from support.models import same

from rivet_ci.core.common.plain_schema import plain_validator
from rivet_ci.core.common.problems import Problem
from rivet_ci.core.config.loader import load_config_text
from rivet_ci.core.config.models import ExportConfig, SourceConfig
from rivet_ci.core.facts import loader as facts_loader
from rivet_ci.core.facts.history import RunRecord
from rivet_ci.core.facts.loader import load_facts_text
from rivet_ci.core.facts.models import (
    ColumnFacts,
    ExportFacts,
    FactsFile,
    MeasuredRun,
    TableFacts,
)
from rivet_ci.core.formats.document import PlanReadError, dump_json, plan_document, read_plan
from rivet_ci.core.plan.planner import FactsOrigin, Plan, plan_configs
from rivet_ci.core.plan.resolve import PlanRefusedError
from rivet_ci.core.plan.signals import derive_signals

validated_whole = facts_loader._validated_whole  # the fast paths, before a test replaces them
validated_json = facts_loader._validated_json

FUZZ = settings(derandomize=True, database=None, deadline=None, max_examples=250,
                suppress_health_check=[HealthCheck.too_slow])

CONFIG_KEYS = sorted({"source", "exports", *SourceConfig.model_fields, *ExportConfig.model_fields,
                      "format", "destination", "quality"})
FACTS_KEYS = sorted({"format", "captured_at", "exports", "configs", *ExportFacts.model_fields,
                     *ColumnFacts.model_fields, *RunRecord.model_fields})
YAML_CHARS = "abcdemnostx_019:-[]{}\n #&*!|>'\",?$%@`~.\t"

scalars = st.one_of(
    st.none(), st.booleans(),
    st.integers(-(2**70), 2**70), st.sampled_from([0, 1, -1, 2**63 - 1, 2**63, 10**400]),
    st.floats(allow_nan=True), st.text(max_size=12),
    st.sampled_from(["full", "incremental", "chunked", "time_window", "cdc", "coalesce",
                     "postgres", "replica", "${UNSET}", "public.t", "1", "2026-01-01",
                     "rivet-ci-facts/1", "failed", "running", "9" * 5000]),
    st.dates(min_value=date(1, 1, 1)),
)


def structures(keys: list[str]) -> st.SearchStrategy[Any]:
    key = st.sampled_from(keys) | st.text(max_size=6) | st.integers(-3, 3)
    return st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                        | st.dictionaries(key, inner, max_size=6), max_leaves=30)


def plan_text(text: str) -> Plan:
    loaded = load_config_text("fuzz.yaml", text, {"SET": "value"})
    assert all(isinstance(p, Problem) and p.file == "fuzz.yaml" for p in loaded.problems)
    plan = plan_configs([loaded], None, FactsOrigin(kind="none"))
    json.loads(dump_json(plan_document(plan, generated_at="x", version="fuzz")))
    for p in plan.all_problems:
        p.render()
    return plan


@FUZZ
@given(st.text(max_size=300) | st.text(alphabet=YAML_CHARS, max_size=300))
def test_random_text_never_raises(text: str) -> None:
    plan_text(text)


@FUZZ
@given(st.fixed_dictionaries({"source": structures(CONFIG_KEYS),
                              "exports": st.lists(structures(CONFIG_KEYS), max_size=4)})
       | structures(CONFIG_KEYS))
def test_random_structures_never_raise(data: Any) -> None:
    plan_text(yaml.safe_dump(data, allow_unicode=True))


valid_export = st.fixed_dictionaries({
    "name": st.sampled_from(["a", "b", "c"]),
    "table": st.just("public.t"),
    "mode": st.sampled_from(["full", "incremental", "chunked", "time_window"]),
}, optional={k: scalars for k in ("cursor_column", "chunk_column", "chunk_size", "chunk_count",
                                  "chunk_dense", "chunk_by_days", "chunk_by_key", "parallel",
                                  "time_column", "days_window", "source_group",
                                  "reconcile_required", "incremental_cursor_mode")})


@FUZZ
@given(st.lists(valid_export, min_size=1, max_size=4))
def test_nearly_valid_exports_never_raise(exports: list[dict[str, Any]]) -> None:
    plan_text(yaml.safe_dump({"source": {"type": "postgres", "url": "x"}, "exports": exports}))


PIPELINE = load_config_text("p.yaml", """\
source: {type: postgres, url_env: X}
exports:
  - {format: csv, destination: {type: stdout},
     name: a, table: t, mode: chunked, chunk_column: k}
  - {format: csv, destination: {type: stdout},
     name: b, table: t, mode: chunked, chunk_by_key: k, chunk_size: 7}
  - {format: csv, destination: {type: stdout},
     name: c, table: t, mode: chunked, chunk_column: k, chunk_by_days: 2}
  - {format: csv, destination: {type: stdout},
     name: d, table: t, mode: chunked, chunk_column: k, parallel: 3}
  - {format: csv, destination: {type: stdout},
     name: e, table: t, mode: incremental, cursor_column: k}
  - {format: csv, destination: {type: stdout},
     name: f, table: t, mode: time_window, time_column: k, days_window: 1}
""", {})

entry_st = st.fixed_dictionaries({}, optional={
    "row_estimate": scalars, "avg_row_bytes": scalars, "plan_uses_index": scalars,
    "max_connections": scalars, "verdict": scalars, "warnings": st.lists(scalars, max_size=3),
    "columns": st.dictionaries(st.just("k") | st.text(max_size=3), st.fixed_dictionaries(
        {}, optional={"indexed": scalars, "min": scalars, "max": scalars}), max_size=2),
    "history": st.lists(st.fixed_dictionaries({"status": scalars}, optional={
        "duration_ms": scalars, "retries": scalars}), max_size=4),
})


@FUZZ
@given(st.dictionaries(st.sampled_from(["a", "b", "c", "d", "e", "f"]), entry_st, max_size=6),
       st.booleans())
def test_random_facts_never_raise(entries: dict[str, Any], as_json: bool) -> None:
    data = {"format": "rivet-ci-facts/1", "exports": entries}
    text = json.dumps(data, default=str) if as_json else yaml.safe_dump(data)
    facts, problems = load_facts_text("facts.yaml", text)
    assert all(p.file == "facts.yaml" for p in problems)
    plan = plan_configs([PIPELINE], facts, FactsOrigin(kind="file"), problems)
    dump_json(plan_document(plan, generated_at="x", version="fuzz"))


@FUZZ
@given(st.dictionaries(st.sampled_from(["a", "b", "c"]), entry_st, max_size=4),
       st.none() | st.dictionaries(st.sampled_from(["p.yaml", "q.yaml"]), st.fixed_dictionaries(
           {}, optional={"exports": st.dictionaries(st.sampled_from(["a", "d"]), entry_st,
                                                    max_size=2)}), max_size=2),
       st.booleans())
def test_whole_file_validation_is_the_entry_by_entry_result(
        entries: dict[str, Any], configs: dict[str, Any] | None, as_json: bool) -> None:
    """A facts file is first validated whole, in one call (the fast path); whatever it
    accepts, the entry-by-entry path gives the same facts and no problem, and whatever it
    refuses is judged by that path alone."""
    data: dict[str, Any] = {"format": "rivet-ci-facts/1", "exports": entries}
    if configs is not None:
        data["configs"] = configs
    text = json.dumps(data, default=str) if as_json else yaml.safe_dump(data)
    taken: list[bool] = []

    def whole(raw: dict[str, Any]) -> FactsFile | None:
        result = validated_whole(raw)
        taken.append(result is not None)
        return result

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(facts_loader, "_validated_json", lambda raw: None)  # JSON: its own test
        patch.setattr(facts_loader, "_validated_whole", whole)
        facts, problems = load_facts_text("facts.yaml", text)
        patch.setattr(facts_loader, "_validated_whole", lambda raw: None)
        by_entry, entry_problems = load_facts_text("facts.yaml", text)
    assert taken == [True] or (taken == [False] and facts == by_entry
                               and problems == entry_problems)
    if taken == [True]:
        assert facts is not None and by_entry is not None and entry_problems == problems == []
        assert facts == by_entry and facts.model_dump() == by_entry.model_dump()


@FUZZ
@given(st.dictionaries(st.sampled_from(["a", "b", "c"]), entry_st, max_size=4),
       st.none() | st.dictionaries(st.sampled_from(["p.yaml", "q.yaml"]), st.fixed_dictionaries(
           {}, optional={"exports": st.dictionaries(st.sampled_from(["a", "d"]), entry_st,
                                                    max_size=2)}), max_size=2),
       st.sampled_from(["2026-11-29T06:00:00Z", "2026-11-29", "x", None]))
def test_json_validation_is_the_decoded_result(
        entries: dict[str, Any], configs: dict[str, Any] | None, captured_at: str | None) -> None:
    """A JSON facts file is first parsed and validated in one pydantic-core call (the fast
    path); whatever it accepts, decoding with `json` first gives the same facts and no
    problem, and whatever it refuses is judged by that path alone."""
    data: dict[str, Any] = {"format": "rivet-ci-facts/1", "exports": entries}
    if configs is not None:
        data["configs"] = configs
    if captured_at is not None:
        data["captured_at"] = captured_at
    text = json.dumps(data, default=str)
    fast = validated_json(text)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(facts_loader, "_validated_json", lambda raw: None)
        decoded, problems = load_facts_text("facts.json", text)
    if fast is not None:
        assert decoded is not None and problems == []
        assert fast == decoded and fast.model_dump() == decoded.model_dump()
    assert load_facts_text("facts.json", text) == (decoded, problems)


# Each field of the facts models given values of its JSON type and of others, within and beyond
# its bounds (and an unknown key), for the plain facts validator.
plain_scalars = (st.none() | st.booleans() | st.integers(-2, 2) | st.text(max_size=3)
                 | st.sampled_from([2**63 - 1, 2**63, -(2**63) - 1, 10**30, 1.0, 2.5]))


def plain_fields(model: type[BaseModel], **nested: st.SearchStrategy[Any]) -> Any:
    return st.fixed_dictionaries({}, optional={
        **{name: plain_scalars for name in model.model_fields}, **nested,
        "unknown": plain_scalars})


plain_entry_st = plain_fields(
    ExportFacts,
    warnings=st.none() | st.lists(plain_scalars, max_size=2),
    notes=plain_scalars | st.lists(plain_scalars, max_size=2),
    columns=plain_scalars | st.dictionaries(st.sampled_from(["k", "", "é"]),
                                            plain_fields(ColumnFacts), max_size=2),
    history=st.none() | st.lists(plain_fields(RunRecord), max_size=2),
    last_success=st.none() | plain_fields(MeasuredRun),
    table=st.none() | plain_fields(TableFacts))


# Built at collection, before any test validates facts with the models: pydantic-core reuses a
# model's own validator, once built, for any schema naming it
# (rivet_ci.core.common.plain_schema), and
# the comparisons below would then hold trivially. The first test checks it did not happen.
PLAIN_FACTS = plain_validator(FactsFile)


def test_the_plain_facts_validator_under_test_is_its_own() -> None:
    text = json.dumps({"format": "rivet-ci-facts/1", "exports": {"a": {"row_estimate": "3"}}})
    assert FactsFile.model_validate_json(text).exports["a"].row_estimate == 3
    with pytest.raises(ValidationError):
        PLAIN_FACTS.validate_json(text)


@FUZZ
@given(st.dictionaries(st.sampled_from(["a", "b"]), plain_entry_st, max_size=3),
       st.none() | st.dictionaries(st.sampled_from(["p.yaml", "q.yaml"]), st.fixed_dictionaries(
           {}, optional={"exports": st.dictionaries(st.sampled_from(["a", "d"]), plain_entry_st,
                                                    max_size=2)}), max_size=2),
       st.sampled_from(["2026-11-29T06:00:00Z", "2026-11-29T06:00:00.5+02:00", "2026-11-29",
                        "1700000000", "x", 1700000000, None]),
       st.sampled_from(["rivet-ci-facts/1", "rivet-ci-facts/2", None]))
def test_the_plain_facts_validator_gives_what_the_models_give(
        entries: dict[str, Any], configs: dict[str, Any] | None, captured_at: Any,
        fmt: str | None) -> None:
    """The plain facts validator (which spares a run building the models' validator) accepts
    only files the models accept, and gives for them exactly what the models give: the same
    values of the same types, the same fields set."""
    data: dict[str, Any] = {"exports": entries}
    for key, value in (("format", fmt), ("configs", configs), ("captured_at", captured_at)):
        if value is not None:
            data[key] = value
    text = json.dumps(data)
    try:
        plain = PLAIN_FACTS.validate_json(text)
    except ValidationError:
        return
    same(plain, FactsFile.model_validate_json(text))


def test_the_plain_facts_validator_knows_every_field() -> None:
    """A file giving every field of every facts model a plain value is accepted as it is."""
    column = {"indexed": True, "min": "1", "max": "9", "range_skipped": None, "integer": True,
              "keyset_key": False, "has_nulls": False}
    entry = {"row_estimate": 9, "avg_row_bytes": 0, "plan_uses_index": True,
             "max_connections": 1, "columns": {"id": column}, "verdict": "EFFICIENT",
             "warnings": ["w"], "history": [{"status": "success", "duration_ms": 5,
                                             "retries": 0, "run_at": "r", "total_rows": -1,
                                             "error_message": None}],
             "last_success": {"total_rows": 9, "run_at": "r"}, "key_span": 9,
             "table": {"rows": 9, "integer_primary_key": "id", "unique_key": None},
             "preflight_error": None, "notes": ["n"]}
    assert set(column) == set(ColumnFacts.model_fields)
    assert set(entry) == set(ExportFacts.model_fields)
    text = json.dumps({"format": "rivet-ci-facts/1", "captured_at": "2026-11-29T06:00:00Z",
                       "exports": {"a": entry}, "configs": {"p.yaml": {"exports": {"a": {}}}}})
    plain = PLAIN_FACTS.validate_json(text)
    same(plain, FactsFile.model_validate_json(text))
    assert load_facts_text("facts.json", text) == (plain, [])


@FUZZ
@given(structures(FACTS_KEYS))
def test_random_facts_structures_never_raise(data: Any) -> None:
    facts, _ = load_facts_text("facts.yaml", yaml.safe_dump(data))
    plan_configs([PIPELINE], facts, FactsOrigin(kind="file"))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["format", "configs", "path", "exports", "export_name", "prioritization",
                         "export_recommendation", "campaign", "waves", "problems", "line",
                         "strategy", "diagnostics", "priority_score"]) | st.text(max_size=4),
        inner, max_size=5),
    max_leaves=25)


@FUZZ
@given(json_values | json_values.map(lambda v: {"format": "rivet-ci-plan/1", "configs": v}))
def test_read_plan_raises_only_plan_read_errors(data: Any) -> None:
    with contextlib.suppress(PlanReadError):
        read_plan(data, path="plan.json")


def test_huge_values_are_problems_not_tracebacks() -> None:
    huge = "9" * 5000
    loaded = load_config_text("c.yaml", "source: {type: postgres, url: x}\nexports:\n"
                              f"  - {{name: a, table: t, parallel: {huge}, format: csv, "
                              "destination: {type: local}}\n", {})
    (problem,) = loaded.problems
    assert (problem.rule, problem.field) == ("T-range", "exports[0].parallel")
    assert "is out of range: expected an integer from 0 to 18446744073709551615" in \
        problem.message
    facts, problems = load_facts_text("f.json", '{"format": "rivet-ci-facts/1", "exports": '
                                      f'{{"a": {{"row_estimate": {huge}}}}}}}')
    assert facts is None and problems[0].message.startswith("invalid JSON: ")
    export = ExportConfig.model_validate({"name": "a", "table": "t", "mode": "chunked",
                                          "chunk_column": "k", "format": "csv",
                                          "destination": {"type": "local"}})
    # A key beyond 64 bits: rivet's range chunking refuses it (not a whole i64), no overflow.
    with pytest.raises(PlanRefusedError, match=r"max\(k\) = \"9{5000}\" is not a whole integer"):
        derive_signals(export, ExportFacts(row_estimate=10, columns={
            "k": ColumnFacts(min="1", max=huge)}))


def test_values_beyond_64_bits_are_problems_not_overflows() -> None:
    huge = 10**400
    loaded = load_config_text("c.yaml", "source: {type: postgres, url: x}\nexports:\n"
                              f"  - {{name: a, table: t, mode: chunked, chunk_column: k, "
                              f"chunk_size: {huge}, format: csv, destination: {{type: local}}}}\n"
                              "  - {name: b, table: t, format: csv, destination: {type: local}}\n",
                              {})
    (problem,) = loaded.problems
    assert (problem.line, problem.field) == (3, "exports[0].chunk_size")
    assert "expected an integer from 0 to 18446744073709551615" in problem.message
    # One beyond u64 but within 128 bits is refused anywhere, even where a string is wanted.
    loaded = load_config_text("c.yaml", "source: {type: postgres, url: x}\nexports:\n"
                              f"  - {{name: a, table: t, target: {2**100}, format: csv, "
                              "destination: {type: local}}\n", {})
    assert [(p.rule, p.field) for p in loaded.problems] == [("P0-huge-int", "exports[0].target")]
    facts, problems = load_facts_text("f.yaml", "format: rivet-ci-facts/1\nexports:\n"
                                      f"  a: {{row_estimate: {huge}, columns: {{k: "
                                      "{min: '1', max: '2'}}}\n")
    assert facts is not None
    assert [(p.line, p.field) for p in problems] == [(3, "exports.a.row_estimate")]
    plan_configs([PIPELINE], facts, FactsOrigin(kind="file"))
