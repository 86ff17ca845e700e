"""The gate policy (`fail-on`) and the findings the plan diff classifies, as named cases."""

from __future__ import annotations

from typing import Any

import pytest
from support.pr import chunked, config, export, heavy_facts, incremental

from rivet_ci.core.config.loader import load_config_text
from rivet_ci.core.facts.models import FactsFile
from rivet_ci.core.gate.diff import Finding, FindingKind, FindingStatus, PlanDiff, diff_plans
from rivet_ci.core.gate.policy import GatePolicy, PolicyError, evaluate_gate, parse_policy
from rivet_ci.core.plan.planner import FactsOrigin, Plan, plan_configs

FACTS = FactsFile.model_validate({
    "format": "rivet-ci-facts/1",
    "exports": {"events": heavy_facts(), "order_items": heavy_facts(12_000_000),
                "orders": {"row_estimate": 800_000, "columns": {"updated_at": {
                    "indexed": True, "min": "2021-01-01 00:00:00",
                    "max": "2026-11-29 00:00:00"}}}},
})


def finding(kind: FindingKind, status: FindingStatus = "new", **extra: Any) -> Finding:
    return Finding(kind=kind, status=status, message=f"{kind} {status}", **extra)


def diff_of(*findings: Finding) -> PlanDiff:
    return PlanDiff(exports=(), warnings=(), order_moves=(), findings=findings, head_problems=())


def plan_of(files: dict[str, str]) -> Plan:
    loaded = [load_config_text(path, text, {}) for path, text in files.items()]
    return plan_configs(loaded, FACTS, FactsOrigin(kind="file"))


# -- every rule, by name: (fail-on tokens, the finding, blocks?) --------------------------------

RULE_CASES = {
    "config-error blocks a new config error": (["config-error"], finding("config-error"), True),
    "new-isolation blocks a new isolation": (["new-isolation"], finding("new-isolation"), True),
    "new-warning blocks a new warning": (["new-warning"], finding("new-warning"), True),
    "wave-later blocks a later wave": (["wave-later"], finding("wave-later"), True),
    "low-confidence blocks new low confidence": (
        ["low-confidence"], finding("low-confidence"), True),
    "score-drop:10 blocks a drop of exactly 10": (
        ["score-drop:10"], finding("score-drop", score_delta=-10), True),
    "score-drop:10 blocks a drop of 11": (
        ["score-drop:10"], finding("score-drop", score_delta=-11), True),
    "score-drop:10 passes a drop of 9": (
        ["score-drop:10"], finding("score-drop", score_delta=-9), False),
    "score-drop:1 blocks any drop": (["score-drop:1"], finding("score-drop", score_delta=-1), True),
    "the default (config-error) ignores an isolation": (
        [], finding("new-isolation"), False),
    "the default blocks a config error": ([], finding("config-error"), True),
    "none never blocks": (["none"], finding("config-error"), False),
    "a rule blocks only its own kind": (["new-warning"], finding("new-isolation"), False),
    "score-drop needs its token": (["config-error"], finding("score-drop", score_delta=-50),
                                   False),
    "several tokens, one matching": (
        ["config-error", "wave-later"], finding("wave-later"), True),
    "the lowest score-drop threshold wins": (
        ["score-drop:20", "score-drop:5"], finding("score-drop", score_delta=-5), True),
}


@pytest.mark.parametrize(("tokens", "the_finding", "blocks"), list(RULE_CASES.values()),
                         ids=list(RULE_CASES))
def test_rule(tokens: list[str], the_finding: Finding, blocks: bool) -> None:
    gate = evaluate_gate(diff_of(the_finding), parse_policy(tokens))
    assert gate.passed is not blocks
    assert gate.blocking == ((the_finding,) if blocks else ())


ALL_RULES = ["config-error", "new-isolation", "new-warning", "wave-later", "low-confidence",
             "score-drop:1"]


@pytest.mark.parametrize("status", ["pre-existing", "resolved"])
@pytest.mark.parametrize("kind", ["config-error", "new-isolation", "new-warning", "wave-later",
                                  "low-confidence", "score-drop"])
def test_only_findings_the_pr_introduces_count(kind: FindingKind, status: FindingStatus) -> None:
    the_finding = finding(kind, status, score_delta=-30 if kind == "score-drop" else None)
    gate = evaluate_gate(diff_of(the_finding), parse_policy(ALL_RULES))
    assert gate.passed and gate.blocking == ()


@pytest.mark.parametrize(
    ("tokens", "problem"),
    [
        (["score-drop"], "score-drop"),
        (["score_drop:5"], "score_drop:5"),
        (["new-isolations"], "new-isolations"),
        (["score-drop:-3"], "score-drop:-3"),
        (["score-drop:1000"], "score-drop:1000"),
        (["none", "config-error"], "cannot be combined"),
    ],
)
def test_unknown_or_conflicting_tokens_are_errors(tokens: list[str], problem: str) -> None:
    with pytest.raises(PolicyError, match=problem):
        parse_policy(tokens)


def test_every_unknown_token_is_reported_at_once() -> None:
    with pytest.raises(PolicyError) as info:
        parse_policy(["bogus", "config-error", "also-bogus"])
    assert "bogus, also-bogus" in str(info.value)
    assert "score-drop:N" in str(info.value)  # says what is accepted


def test_policy_description() -> None:
    assert parse_policy([]).describe() == "config-error, no-configs"
    assert parse_policy(["none"]).describe() == "none"
    assert parse_policy([" new-warning ", "score-drop:5", ""]).describe() == (
        "config-error, no-configs, new-warning, score-drop:5")
    assert parse_policy(["none"]) == GatePolicy(rules=frozenset())


ALWAYS_ON_KINDS: tuple[FindingKind, ...] = ("config-error", "no-configs")


@pytest.mark.parametrize("tokens", [["score-drop:10"], ["new-isolation"], ["wave-later"],
                                    ["new-warning", "low-confidence"]])
def test_any_fail_on_adds_to_the_always_on_rules(tokens: list[str]) -> None:
    """`fail-on: score-drop:10` used to replace the default and let a new config error pass."""
    for kind in ALWAYS_ON_KINDS:
        gate = evaluate_gate(diff_of(finding(kind)), parse_policy(tokens))
        assert not gate.passed, (tokens, kind)
        assert gate.policy.startswith("config-error, no-configs")


def test_only_none_turns_the_always_on_rules_off() -> None:
    for kind in ALWAYS_ON_KINDS:
        assert evaluate_gate(diff_of(finding(kind)), parse_policy(["none"])).passed
    with pytest.raises(PolicyError, match="none"):
        parse_policy(["none", "config-error"])


# -- findings the diff classifies, from real plans ------------------------------------------------

BROKEN = config(export("orders", mode="incremental"))  # incremental without cursor_column


def test_a_config_error_already_on_the_base_does_not_block() -> None:
    base = plan_of({"rivet/a.yaml": BROKEN})
    # The PR edits the file (the error moves down a line) without fixing it.
    head = plan_of({"rivet/a.yaml": "# a comment moves every line\n" + BROKEN})
    diff = diff_plans(base, head)
    errors = [f for f in diff.findings if f.kind == "config-error"]
    assert [f.status for f in errors] == ["pre-existing"]
    assert evaluate_gate(diff, parse_policy(["config-error"])).passed


def test_a_config_error_the_pr_introduces_blocks_and_a_fixed_one_is_resolved() -> None:
    good = config(incremental("orders"))
    introduced = diff_plans(plan_of({"rivet/a.yaml": good}), plan_of({"rivet/a.yaml": BROKEN}))
    gate = evaluate_gate(introduced, parse_policy(["config-error"]))
    assert not gate.passed
    assert [(f.kind, f.status, f.file) for f in gate.blocking] == [
        ("config-error", "new", "rivet/a.yaml")]
    assert "cursor_column" in gate.blocking[0].message
    fixed = diff_plans(plan_of({"rivet/a.yaml": BROKEN}), plan_of({"rivet/a.yaml": good}))
    assert [f.status for f in fixed.findings if f.kind == "config-error"] == ["resolved"]
    assert evaluate_gate(fixed, parse_policy(["config-error"])).passed


def test_a_second_heavy_export_creates_isolations_and_a_warning() -> None:
    base = plan_of({"rivet/a.yaml": config(chunked("events"))})
    head = plan_of({"rivet/a.yaml": config(chunked("events"), chunked("order_items"))})
    diff = diff_plans(base, head)
    new = {(f.kind, f.export_name) for f in diff.findings if f.status == "new"}
    assert ("new-isolation", "events") in new and ("new-isolation", "order_items") in new
    assert ("new-warning", None) in new
    assert not evaluate_gate(diff, parse_policy(["new-isolation"])).passed
    assert not evaluate_gate(diff, parse_policy(["new-warning"])).passed
    assert evaluate_gate(diff, parse_policy(["config-error", "wave-later"])).passed
    # Reverting the PR resolves them: nothing new, nothing blocks.
    back = diff_plans(head, base)
    assert [f for f in back.findings if f.status == "new"] == []
    assert {f.kind for f in back.findings if f.status == "resolved"} == {"new-isolation",
                                                                      "new-warning"}


def test_score_drop_and_wave_later_from_a_real_change() -> None:
    # A strong-cursor incremental export turned into a full snapshot of a big table.
    base = plan_of({"rivet/a.yaml": config(incremental("orders", group=None))})
    head = plan_of({"rivet/a.yaml": config(export("orders"))})
    diff = diff_plans(base, head)
    (change,) = diff.changed_exports
    assert change.score_delta is not None and change.score_delta < 0
    drop = -change.score_delta
    score = next(f for f in diff.findings if f.kind == "score-drop")
    assert score.status == "new" and score.score_delta == -drop
    assert not evaluate_gate(diff, parse_policy([f"score-drop:{drop}"])).passed
    assert evaluate_gate(diff, parse_policy([f"score-drop:{drop + 1}"])).passed
    wave_later = [f for f in diff.findings if f.kind == "wave-later"]
    assert change.base is not None and change.head is not None
    assert bool(wave_later) == (change.head.recommended_wave > change.base.recommended_wave)


def test_low_confidence_is_new_only_when_the_pr_introduces_it() -> None:
    base = plan_of({"rivet/a.yaml": config(chunked("events"))})
    head = plan_of({"rivet/a.yaml": config(chunked("events"), export("unknown_table"))})
    diff = diff_plans(base, head)
    low = [f for f in diff.findings if f.kind == "low-confidence"]
    assert [(f.status, f.export_name) for f in low] == [("new", "unknown_table")]
    assert not evaluate_gate(diff, parse_policy(["low-confidence"])).passed
    again = diff_plans(head, plan_of({"rivet/a.yaml": config(chunked("events"),
                                                             export("unknown_table"),
                                                             export("other"))}))
    statuses = {f.export_name: f.status for f in again.findings if f.kind == "low-confidence"}
    assert statuses == {"unknown_table": "pre-existing", "other": "new"}


def test_a_pre_existing_error_whose_export_index_moved_does_not_block() -> None:
    base = plan_of({"rivet/a.yaml": BROKEN})
    # The PR adds an export above the broken one: its field becomes exports[1].cursor_column.
    head = plan_of({"rivet/a.yaml": config(incremental("customers"),
                                           export("orders", mode="incremental"))})
    diff = diff_plans(base, head)
    errors = [(f.status, f.message) for f in diff.findings if f.kind == "config-error"]
    assert [status for status, _ in errors] == ["pre-existing"]
    assert ("exports[1].cursor_column: export 'orders': incremental mode needs cursor_column"
            in errors[0][1])
    assert evaluate_gate(diff, parse_policy(["config-error"])).passed


def test_a_second_error_of_the_same_kind_is_new() -> None:
    base = plan_of({"rivet/a.yaml": BROKEN})
    head = plan_of({"rivet/a.yaml": config(export("orders", mode="incremental"),
                                           export("refunds", mode="incremental"))})
    diff = diff_plans(base, head)
    statuses = sorted(f.status for f in diff.findings if f.kind == "config-error")
    assert statuses == ["new", "pre-existing"]
    assert not evaluate_gate(diff, parse_policy(["config-error"])).passed
    # And the other way round: fixing one of two leaves one resolved.
    back = diff_plans(head, base)
    assert sorted(f.status for f in back.findings if f.kind == "config-error") == [
        "pre-existing", "resolved"]


def test_a_pre_existing_error_in_a_renamed_file_does_not_block() -> None:
    base = plan_of({"rivet/a.yaml": BROKEN})
    head = plan_of({"rivet/orders/a.yaml": BROKEN})
    diff = diff_plans(base, head, renames={"rivet/a.yaml": "rivet/orders/a.yaml"})
    errors = [(f.status, f.file) for f in diff.findings if f.kind == "config-error"]
    assert errors == [("pre-existing", "rivet/orders/a.yaml")]
    assert evaluate_gate(diff, parse_policy(["config-error"])).passed
