"""The plan document: reading rivet's own plan JSON, and our document round-tripping."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from support.rivet_plans import CAMPAIGN, OLD_OBJECT, RIVET_EVENTS, RIVET_OBJECT

from rivet_ci.adapters.files import expand_config_paths, load_config_file, load_facts_file
from rivet_ci.core.common.problems import Problem
from rivet_ci.core.formats.document import (
    PLAN_FORMAT,
    PlanReadError,
    dump_json,
    plan_document,
    read_plan,
)
from rivet_ci.core.plan.planner import FactsOrigin, Plan, plan_configs

REPO = Path(__file__).resolve().parent.parent


def test_reads_a_single_rivet_object() -> None:
    plan = read_plan(json.loads(json.dumps(RIVET_OBJECT)), path="plan.json")
    (config,) = plan.configs
    (export,) = config.exports
    assert (export.export_name, export.strategy) == ("orders", "incremental")
    # The diagnostics come back as far as `show` prints them (its Preflight lines).
    assert export.signals is not None
    assert (export.signals.verdict, export.signals.row_estimate) == ("EFFICIENT", 500_000)
    rec = export.recommendation
    assert (rec.priority_score, rec.source_group, rec.reason_kinds) == (
        58, "replica_a", ("large_table",))
    assert config.campaign is not None
    assert [(w.wave, w.exports) for w in config.campaign.waves] == [
        (2, ("orders",)), (4, ("events",))]
    assert plan.facts.kind == "artifact"


def test_reads_a_rivet_array_with_the_campaign_in_any_export() -> None:
    first_without = copy.deepcopy(RIVET_OBJECT)
    del first_without["prioritization"]["campaign"]
    events = copy.deepcopy(RIVET_EVENTS)
    events["prioritization"]["campaign"] = CAMPAIGN
    plan = read_plan([first_without, events], path="plan.json")
    assert [e.export_name for e in plan.exports] == ["orders", "events"]
    assert [e.strategy for e in plan.exports] == ["incremental", "chunked"]
    assert plan.configs[0].campaign is not None
    assert plan.configs[0].campaign.ordered_exports == ("orders", "events")
    assert plan.exports[1].recommendation.cost_class == "very_high"


def test_reads_an_old_artifact() -> None:
    plan = read_plan([OLD_OBJECT, RIVET_EVENTS], path="old.json")
    customers, events = plan.exports
    assert customers.recommendation.priority_score == 67
    assert customers.recommendation.isolate_on_source is False
    assert customers.strategy == "snapshot"
    assert plan.configs[0].campaign is None
    assert events.recommendation.recommended_wave == 4


@pytest.mark.parametrize("data", [
    {"foo": 1},
    [],
    [{"export_name": "x"}],
    [{"export_name": "x", "prioritization": {"export_recommendation": {"export_name": "x"}}}],
    "plan",
])
def test_rejects_what_is_not_a_plan(data: Any) -> None:
    with pytest.raises(PlanReadError):
        read_plan(data, path="plan.json")


def example_plan() -> Plan:
    configs = [load_config_file(p, root=REPO, environ={})
               for p in expand_config_paths([REPO / "examples" / "pipelines"])]
    facts, problems = load_facts_file(REPO / "examples" / "facts.yaml", root=REPO)
    assert not problems
    return plan_configs(configs, facts, FactsOrigin(kind="file", path="examples/facts.yaml"))


def test_our_document_round_trips_through_read_plan() -> None:
    plan = example_plan()
    document = json.loads(dump_json(plan_document(plan, generated_at="2026-11-29T12:00:00Z",
                                                  version="test")))
    assert document["format"] == PLAN_FORMAT
    again = read_plan(document, path="plan.json")
    assert [c.path for c in again.configs] == [c.path for c in plan.configs]
    assert [c.campaign for c in again.configs] == [c.campaign for c in plan.configs]
    assert [c.source_type for c in again.configs] == ["postgres", "postgres"]
    assert [(e.export_name, e.config_path, e.line, e.mode, e.strategy, e.recommendation,
             e.preflight_error) for e in again.exports] == [
        (e.export_name, e.config_path, e.line, e.mode, e.strategy, e.recommendation,
         e.preflight_error) for e in plan.exports]
    # Written again, everything read back is unchanged.
    rewritten = plan_document(again, generated_at="x", version="test")
    for before, after in zip(document["configs"], rewritten["configs"], strict=True):
        assert after["campaign"] == before["campaign"]
        assert [e["prioritization"] for e in after["exports"]] == [
            e["prioritization"] for e in before["exports"]]


def test_round_trip_keeps_problems_of_configs_and_of_the_run() -> None:
    plan = example_plan()
    config_problem = Problem(file=plan.configs[0].path, line=3, field="exports[9]", message="x")
    run_problem = Problem(file="facts.yaml", line=2, field="format", message="y")
    plan = plan.model_copy(update={
        "configs": (plan.configs[0].model_copy(update={"problems": (config_problem,)}),
                    *plan.configs[1:]),
        "problems": (run_problem,)})
    again = read_plan(json.loads(dump_json(plan_document(plan, generated_at="x", version="t"))),
                      path="plan.json")
    assert again.configs[0].problems == (config_problem,)
    assert again.problems == (run_problem,)
    assert again.all_problems == plan.all_problems


def test_same_input_gives_the_same_bytes_apart_from_generated_at() -> None:
    first = dump_json(plan_document(example_plan(), generated_at="2026-11-29T12:00:00Z",
                                    version="test"))
    second = dump_json(plan_document(example_plan(), generated_at="2027-01-01T00:00:00Z",
                                     version="test"))
    assert first != second
    assert first.replace("2026-11-29T12:00:00Z", "2027-01-01T00:00:00Z") == second
    assert first.count("2026-11-29T12:00:00Z") == 1
