"""The bad-input corpus: `tests/bad_configs/*.yaml` (configs) and `tests/bad_configs/facts/*`.

`tests/bad_configs/expected.yml` says, per file, every problem it must report (file, line and
field exactly, and words of the message) and which exports are still planned, so one broken export
or entry never hides the rest.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from rivet_ci.adapters.files import load_config_file, load_facts_file
from rivet_ci.core.common.problems import Problem
from rivet_ci.core.config.loader import load_config_text
from rivet_ci.core.facts.loader import INVALID_ENTRY
from rivet_ci.core.facts.models import FactsFile
from rivet_ci.core.formats.document import plan_document
from rivet_ci.core.plan.planner import FactsOrigin, plan_configs

CORPUS = Path(__file__).parent / "bad_configs"
FACTS_CORPUS = CORPUS / "facts"
EXPECTED: dict[str, Any] = yaml.safe_load((CORPUS / "expected.yml").read_text(encoding="utf-8"))
_AT = re.compile(r"^(?P<file>[^:]+)(?::(?P<line>\d+))?(?:: (?P<field>.+))?$")

# The config the bad facts files are planned with (its path selects a `configs:` section).
PIPELINE_PATH = "pipelines/shop.yaml"
PIPELINE = """\
source: {type: postgres, url_env: SHOP_URL}
exports:
  - {format: csv, destination: {type: stdout},
     name: orders, table: public.orders, mode: incremental, cursor_column: updated_at}
  - {format: csv, destination: {type: local, path: out},
     name: events, table: public.events, mode: chunked, chunk_column: id, chunk_checkpoint: true}
  - {format: csv, destination: {type: stdout},
     name: customers, table: public.customers}
"""


def assert_problems(actual: list[Problem] | tuple[Problem, ...], expected: list[Any]) -> None:
    """Same problems, same order; each at exactly the expected file, line and field."""
    rendered = [p.render() for p in actual]
    assert len(actual) == len(expected), rendered
    for problem, want in zip(actual, expected, strict=True):
        match = _AT.match(want["at"])
        assert match, want["at"]
        line = int(match["line"]) if match["line"] else None
        assert (problem.file, problem.line, problem.field) == (
            match["file"], line, match["field"]), problem.render()
        assert problem.render().startswith(want["at"] + ": ")
        assert want["says"] in problem.message, problem.render()
        assert problem.rule == want.get("rule", problem.rule), problem.render()
        assert problem.severity == want.get("severity", "error")


@pytest.mark.parametrize("name", sorted(EXPECTED["configs"]))
def test_bad_config(name: str) -> None:
    want = EXPECTED["configs"][name]
    loaded = load_config_file(CORPUS / name, root=CORPUS, environ=want.get("environ", {}))
    assert_problems(loaded.problems, want["problems"])
    assert list(loaded.unresolved_source_variables) == want.get("unresolved_source_variables", [])

    facts = FactsFile.model_validate({"format": "rivet-ci-facts/1",
                                      "exports": want.get("facts", {})})
    plan = plan_configs([loaded], facts, FactsOrigin(kind="file", path="facts.yaml"))
    assert [e.export_name for e in plan.exports] == want["planned"]
    # The document carries both: what could be planned and every problem, located.
    document = plan_document(plan, generated_at="2026-11-29T12:00:00Z", version="test")
    (config,) = document["configs"]
    assert [e["export_name"] for e in config["exports"]] == want["planned"]
    assert [(p["file"], p["line"], p["field"]) for p in document["problems"]] == [
        (p.file, p.line, p.field) for p in loaded.problems]
    assert (config["campaign"] is not None) == bool(want["planned"])


def test_unset_source_variable_still_plans_from_facts() -> None:
    loaded = load_config_file(CORPUS / "unset_variable_in_source_url.yaml", root=CORPUS,
                              environ={})
    facts = FactsFile.model_validate({"format": "rivet-ci-facts/1", "exports": EXPECTED[
        "configs"]["unset_variable_in_source_url.yaml"]["facts"]})
    plan = plan_configs([loaded], facts, FactsOrigin(kind="file"))
    orders, customers = plan.exports
    assert orders.signals is not None and customers.signals is not None
    assert (orders.signals.row_estimate, orders.signals.cursor_quality) == (
        2_000_000, "strong_monotonic")
    assert orders.recommendation.reason_kinds == ("large_table", "strong_cursor")
    assert customers.signals.row_estimate == 40_000
    # Unset variables depend on the environment: a note, never blocking.
    assert [(p.rule, p.severity) for p in plan.all_problems] == [("R3", "note")]
    # The placeholder is left as written for live preflight to report, never half-substituted.
    assert loaded.source is not None and loaded.source.url is not None
    assert "${REPLICA_PASSWORD}" in loaded.source.url


def test_set_variables_are_substituted_everywhere() -> None:
    text = ("source: {type: postgres, url: 'postgresql://r:${PW}@h/db'}\n"
            "exports:\n  - {format: csv, destination: {type: stdout}, name: orders,\n"
            "     table: '${SCHEMA}.orders', parallel: ${PAR}}\n")
    loaded = load_config_text("c.yaml", text, {"PW": "s3cret", "SCHEMA": "shop", "PAR": "4"})
    assert not loaded.problems and not loaded.unresolved_source_variables
    (export,) = loaded.exports
    assert (export.table, export.parallel) == ("shop.orders", 4)


@pytest.mark.parametrize("name", sorted(EXPECTED["facts"]))
def test_bad_facts_file(name: str) -> None:
    want = EXPECTED["facts"][name]
    facts, problems = load_facts_file(FACTS_CORPUS / name, root=FACTS_CORPUS)
    assert_problems(problems, want["problems"])

    loaded = load_config_text(PIPELINE_PATH, PIPELINE, {})
    assert not loaded.problems
    plan = plan_configs([loaded], facts, FactsOrigin(kind="file", path=name), problems)
    # Nothing is refused: every export is planned, with or without facts.
    assert [e.export_name for e in plan.exports] == ["orders", "events", "customers"]
    with_facts = [e.export_name for e in plan.exports
                  if e.signals is not None and not e.signals.preflight_failed]
    assert with_facts == want["with_facts"]
    for export in plan.exports:
        if export.export_name not in with_facts:
            assert export.recommendation.low_confidence
            assert export.preflight_error in (
                None if facts is None else INVALID_ENTRY, "no facts for this export")
    # The facts file's problems travel with the plan.
    assert [p.render() for p in plan.all_problems] == [p.render() for p in problems]


def test_bad_per_config_entry_does_not_fall_back_to_the_top_level_entry() -> None:
    facts, _ = load_facts_file(FACTS_CORPUS / "bad_config_section.yaml", root=FACTS_CORPUS)
    assert facts is not None
    events = facts.for_export(PIPELINE_PATH, "events")
    assert events is not None and events.preflight_error == INVALID_ENTRY
    # Another config still sees the top-level entry.
    top = facts.for_export("pipelines/elsewhere.yaml", "events")
    assert top is not None and top.row_estimate == 2000


def test_every_corpus_file_has_an_expectation() -> None:
    assert sorted(p.name for p in CORPUS.glob("*.yaml")) == sorted(EXPECTED["configs"])
    assert sorted(p.name for p in FACTS_CORPUS.iterdir()) == sorted(EXPECTED["facts"])
    assert (CORPUS / "empty.yaml").read_bytes() == b""
