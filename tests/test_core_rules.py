"""Named rule cases kept as data: `tests/cases/<rule>.yml`, one file per rule (sqlfluff's style).

Each case gives one kind of input and the behaviour it expects:

- `signals` (+ `history`, newest run first; + `source_group`): scored by `recommend_export`;
- `export` (+ `facts`, the export's facts-file entry; none means no entry; + `source_type`, the
  config's `source.type`; + `captured_at`, the facts file's capture time): planned end to end by
  `plan_config` on a one-export config, so signals are derived (`derive_signals`) from the facts;
  `expect.refused` is a fragment of rivet's refusal text (the export is then not planned);
- `score`: the score-to-class functions `priority_class` / `recommended_wave`;
- `verdict_inputs`: rivet's verdict table, `compute_verdict`;
- `campaign`: members `{name, score, cost, group}` in config order, given to `build_campaign`.

A file's `defaults` are merged into each case's input of the same key; a case that gives no input
takes the file's default input as it is. Test ids are
`<rule>:<case>`, so `pytest -k rows` runs the rows cases (use `-k "verdict:"` for the verdict rule
alone: `verdict_table` contains its name). Unknown keys are errors, so a typo never makes a case
vacuous.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from rivet_ci.core.common.problems import Problem
from rivet_ci.core.config.loader import LoadedConfig
from rivet_ci.core.config.models import ExportConfig, SourceConfig
from rivet_ci.core.config.rules import export_findings
from rivet_ci.core.facts.history import RunRecord, summarize_history
from rivet_ci.core.facts.models import FactsFile
from rivet_ci.core.plan.campaign import build_campaign
from rivet_ci.core.plan.planner import plan_config
from rivet_ci.core.plan.recommendation import ExportRecommendation
from rivet_ci.core.plan.scoring import priority_class, recommend_export, recommended_wave
from rivet_ci.core.plan.signals import Signals, compute_verdict

CASES_DIR = Path(__file__).parent / "cases"
RULES = (
    "rows", "risk", "strategy", "sparse", "reconcile", "freshness", "verdict", "history",
    "classes", "vectors", "verdict_table", "sparsity", "chunk_count", "cursor_quality",
    "campaign", "warnings", "refusals", "row_estimate", "suggestion", "messages", "validate",
)
INPUTS = ("signals", "export", "score", "verdict_inputs", "campaign")
COMPANIONS = {"signals": {"history", "source_group"},
              "export": {"facts", "source_type", "source", "captured_at"}}
RECOMMENDATION_EXPECT = {
    "score", "priority_class", "cost_class", "risk_class", "wave", "reasons", "messages",
    "isolate_on_source", "summary",
}
EXPECT_KEYS = {
    "signals": RECOMMENDATION_EXPECT,
    "export": RECOMMENDATION_EXPECT | {"signals", "warnings_match", "refused", "notes_match"},
    "score": {"priority_class", "wave"},
    "verdict_inputs": {"verdict"},
    "campaign": {"ordered", "waves", "warnings", "isolated"},
}
FILE_KEYS = {"about", "defaults", "cases"}
DEFAULT_EXPORT = {"name": "subject", "table": "public.subject", "format": "parquet",
                  "destination": {"type": "local", "path": "out"}}


@functools.cache
def load_rule_file(rule: str) -> dict[str, Any]:
    data = yaml.safe_load((CASES_DIR / f"{rule}.yml").read_text(encoding="utf-8"))
    assert isinstance(data, dict) and set(data) <= FILE_KEYS, f"{rule}.yml: keys {FILE_KEYS}"
    return data


def case_input(rule: str, case: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The case's input kind and its input mapping with the file's defaults applied."""
    defaults = load_rule_file(rule).get("defaults", {})
    kinds = [k for k in INPUTS if k in case]
    if not kinds:  # a case without input takes the file's default input, if there is just one
        kinds = [k for k in INPUTS if k in defaults]
        case = {**case, **{key: {} for key in kinds[:1]}}
    assert len(kinds) == 1, f"{rule}:{case.get('name')}: give exactly one of {INPUTS}"
    kind = kinds[0]
    allowed = {"name", "description", "expect", kind, *COMPANIONS.get(kind, ())}
    unknown = set(case) - allowed
    assert not unknown, f"{rule}:{case['name']}: unknown keys {sorted(unknown)}"
    expect = case.get("expect")
    assert isinstance(expect, dict) and expect, f"{rule}:{case['name']}: expect nothing?"
    bad = set(expect) - EXPECT_KEYS[kind]
    assert not bad, f"{rule}:{case['name']}: unknown expectations {sorted(bad)}"
    merged = dict(case)
    for key, value in defaults.items():
        if key in case and isinstance(value, dict):
            merged[key] = {**value, **case[key]}
        elif key not in case and key in COMPANIONS.get(kind, ()):
            merged[key] = value
    return kind, merged


def all_cases() -> list[Any]:
    params = []
    for rule in RULES:
        for case in load_rule_file(rule)["cases"]:
            params.append(pytest.param(rule, case, id=f"{rule}:{case['name']}"))
    return params


# --- runners ------------------------------------------------------------------------------------

def run_signals(case: dict[str, Any]) -> tuple[ExportRecommendation, Any]:
    runs = [RunRecord.model_validate(r) for r in case.get("history", [])]
    history = summarize_history(runs) if runs else None
    rec = recommend_export("subject", Signals.model_validate(case["signals"]), history,
                           case.get("source_group"))
    return rec, history


def _as_loaded(value: Any) -> Any:
    """YAML sequences as the config loader gives them to the strict models (tuples)."""
    if isinstance(value, dict):
        return {k: _as_loaded(v) for k, v in value.items()}
    if isinstance(value, list):
        return tuple(_as_loaded(v) for v in value)
    return value


def run_export(case: dict[str, Any]) -> tuple[ExportRecommendation, Any, Signals] | Problem:
    """Plan the case's export; a refusal comes back as the `plan-refused` problem."""
    # `key: null` in a case removes a default of the file (the key is not given).
    given = {k: v for k, v in {**DEFAULT_EXPORT, **case["export"]}.items() if v is not None}
    export = ExportConfig.model_validate(_as_loaded(given))
    findings = export_findings(export, 0, None, top_level_load=False, path_exists=None)
    # rivet refuses a few knob conflicts at config-load (V-E20i, V-E33) and again when
    # planning; a refusal case may use those, every other case must be a config rivet loads —
    # except a chunked export on a chunk_column into stdout, which its plan refuses before
    # connecting (V-E34b): those cases pin the planner's path of 0.24.5 (the small-table
    # downgrade into stdout), which no config rivet 0.32 accepts reaches any more.
    findings = [f for f in findings if f.rule != "V-E34b"]
    assert not findings or "refused" in case["expect"], findings
    facts = FactsFile.model_validate({
        "format": "rivet-ci-facts/1", "captured_at": case.get("captured_at"),
        "exports": {export.name: case["facts"]} if case.get("facts") is not None else {}})
    source = None
    if case.get("source_type") or case.get("source"):
        source = SourceConfig.model_validate(_as_loaded({
            "type": case.get("source_type"), "url_env": "URL", **case.get("source", {})}))
    loaded = LoadedConfig(path="case.yaml", source=source, exports=(export,),
                          export_lines={export.name: 1}, problems=())
    plan = plan_config(loaded, facts)
    if not plan.exports:
        (refusal,) = plan.problems
        assert refusal.finding == "plan-refused"
        return refusal
    (planned,) = plan.exports
    assert planned.signals is not None
    assert not plan.problems
    return planned.recommendation, planned.history, planned.signals


def check_recommendation(rec: ExportRecommendation, history: Any, expect: dict[str, Any]) -> None:
    actual = {
        "score": rec.priority_score, "priority_class": rec.priority_class,
        "cost_class": rec.cost_class, "risk_class": rec.risk_class,
        "wave": rec.recommended_wave, "reasons": list(rec.reason_kinds),
        "isolate_on_source": rec.isolate_on_source,
    }
    for key, value in expect.items():
        if key in actual:
            assert actual[key] == value, f"{key}: {actual[key]!r} != {value!r}"
    # Class and wave always follow the score, whatever the case asserts.
    assert rec.priority_class == priority_class(rec.priority_score)
    assert rec.recommended_wave == recommended_wave(rec.priority_score)
    messages = {r.kind: r.message for r in rec.reasons}
    for kind, message in expect.get("messages", {}).items():
        assert messages.get(kind) == message, f"{kind}: {messages.get(kind)!r}"
    if "summary" in expect:
        assert history is not None, "expected a history summary"
        assert history.model_dump() == {**history.model_dump(), **expect["summary"]}


def check_signals(signals: Signals, expect: dict[str, Any]) -> None:
    dumped = signals.model_dump()
    for key, value in expect.get("signals", {}).items():
        assert key in dumped, f"Signals has no field {key}"
        actual = list(dumped[key]) if isinstance(dumped[key], tuple) else dumped[key]
        assert actual == value, f"signals.{key}: {actual!r} != {value!r}"
    for pattern in expect.get("notes_match", []):
        assert any(pattern in note for note in signals.notes), (pattern, signals.notes)
    if "warnings_match" in expect:
        patterns = expect["warnings_match"]
        assert len(signals.warnings) == len(patterns), signals.warnings
        for warning, pattern in zip(signals.warnings, patterns, strict=True):
            assert pattern in warning, f"{pattern!r} not in {warning!r}"


def check_campaign(members: list[dict[str, Any]], expect: dict[str, Any]) -> None:
    recs = [ExportRecommendation(
        export_name=m["name"], source_group=m.get("group"), priority_score=m["score"],
        priority_class=priority_class(m["score"]), cost_class=m["cost"], risk_class="low",
        recommended_wave=recommended_wave(m["score"])) for m in members]
    updated, campaign = build_campaign(recs)
    if "ordered" in expect:
        assert list(campaign.ordered_exports) == expect["ordered"]
    if "waves" in expect:
        assert {w.wave: list(w.exports) for w in campaign.waves} == expect["waves"]
        assert [w.wave for w in campaign.waves] == sorted(expect["waves"])
    if "warnings" in expect:
        assert list(campaign.source_group_warnings) == expect["warnings"]
    if "isolated" in expect:
        assert [r.export_name for r in updated if r.isolate_on_source] == expect["isolated"]
    # Every campaign: config order kept, no empty wave, isolation changes nothing but the flag
    # and one reason.
    assert [r.export_name for r in updated] == [m["name"] for m in members]
    assert all(w.exports for w in campaign.waves)
    for before, after in zip(recs, updated, strict=True):
        assert after.model_dump(exclude={"isolate_on_source", "reasons"}) == before.model_dump(
            exclude={"isolate_on_source", "reasons"})
        extra = after.reason_kinds[len(before.reasons):]
        assert extra == (("shared_source_heavy_conflict",) if after.isolate_on_source else ())


@pytest.mark.parametrize(("rule", "case"), all_cases())
def test_rule_case(rule: str, case: dict[str, Any]) -> None:
    kind, data = case_input(rule, case)
    expect = data["expect"]
    if kind == "signals":
        rec, history = run_signals(data)
        check_recommendation(rec, history, expect)
    elif kind == "export":
        result = run_export(data)
        if isinstance(result, Problem):
            assert "refused" in expect, f"refused: {result.message}"
            assert expect["refused"] in result.message, result.message
            return
        assert "refused" not in expect, "expected a refusal"
        rec, history, signals = result
        check_signals(signals, expect)
        check_recommendation(rec, history, expect)
    elif kind == "score":
        if "priority_class" in expect:
            assert priority_class(data["score"]) == expect["priority_class"]
        if "wave" in expect:
            assert recommended_wave(data["score"]) == expect["wave"]
    elif kind == "verdict_inputs":
        assert compute_verdict(**data["verdict_inputs"]) == expect["verdict"]
    else:
        check_campaign(data["campaign"], expect)


# --- the case files themselves ------------------------------------------------------------------

def test_every_case_file_is_a_known_rule() -> None:
    assert sorted(p.stem for p in CASES_DIR.glob("*.yml")) == sorted(RULES)
    for rule in RULES:
        names = [c["name"] for c in load_rule_file(rule)["cases"]]
        assert names, f"{rule}.yml has no case"
        assert len(names) == len(set(names)), f"{rule}.yml repeats a case name"
        assert all(re.fullmatch(r"[a-z0-9_]+", n) for n in names), names


def test_selecting_a_rule_by_name_selects_only_its_cases() -> None:
    """`pytest -k <rule>` must not pick up another rule's case by accident of naming."""
    ids = [p.id for p in all_cases()]
    for rule in RULES:
        strays = [i for i in ids if rule in i and not i.split(":")[0].startswith(rule)]
        assert not strays, f"-k {rule} would also select {strays}"
