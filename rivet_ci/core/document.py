"""The plan document (`rivet-ci-plan/1`, spec §7 and §10) and reading rivet's own artifacts.

Each planned export is a rivet-compatible object (`export_name`, `strategy`, `computed`,
`diagnostics`, `prioritization`), grouped per config file with that config's `campaign`. The
campaign is also embedded in the first export of each config as `prioritization.campaign`, where
rivet-reading tools (an Airflow DAG reading `plan[0].prioritization.campaign.waves`) look for it;
embedding it in every export would make large plans quadratic in size.
`docs/plan-json.md` documents every field.
"""

from __future__ import annotations

from typing import Any

import orjson
from pydantic import ValidationError

from rivet_ci.core.config import SourceConfig, Strategy
from rivet_ci.core.diagnostics import PREFLIGHT_FAILED_VERDICT
from rivet_ci.core.planner import ConfigPlan, FactsOrigin, Plan, PlannedExport
from rivet_ci.core.problems import Problem
from rivet_ci.core.recommendation import Campaign, ExportRecommendation
from rivet_ci.core.resolve import ResolvedStrategy
from rivet_ci.core.rivet_artifact import resolved_plan, source_block
from rivet_ci.core.signals import Signals

PLAN_FORMAT = "rivet-ci-plan/1"


def campaign_json(campaign: Campaign) -> dict[str, Any]:
    return {
        "ordered_exports": list(campaign.ordered_exports),
        "waves": [{"wave": w.wave, "exports": list(w.exports)} for w in campaign.waves],
        "source_group_warnings": list(campaign.source_group_warnings),
    }


def recommendation_json(rec: ExportRecommendation) -> dict[str, Any]:
    out: dict[str, Any] = {"export_name": rec.export_name}
    if rec.source_group is not None:
        out["source_group"] = rec.source_group
    out.update(
        priority_score=rec.priority_score, priority_class=rec.priority_class,
        cost_class=rec.cost_class, risk_class=rec.risk_class,
        recommended_wave=rec.recommended_wave, isolate_on_source=rec.isolate_on_source,
        reasons=[{"kind": r.kind, "message": r.message} for r in rec.reasons],
    )
    return out


def export_json(export: PlannedExport, campaign: Campaign | None, *,
                source: SourceConfig | None = None, source_json: dict[str, Any] | None = None,
                day: str = "") -> dict[str, Any]:
    """One planned export. `resolved_plan` is rivet's (the keys rivet carries verbatim into its
    artifact: format, compression, destination, tuning, redacted source, ...); `day` fills
    `{date}` in destination paths and is the document's own date."""
    s = export.signals
    computed: dict[str, Any] = {}
    diagnostics: dict[str, Any] = {}
    if s is not None:
        computed = {
            "row_estimate": s.row_estimate, "avg_row_bytes": s.avg_row_bytes,
            "chunk_count": s.chunk_count, "uses_index": s.uses_index,
            "range_column": s.range_column, "cursor_range_observed": s.cursor_range_observed,
            "cursor_quality": s.cursor_quality, "freshness": s.freshness,
            "sparse_range_risk": s.sparse_range_risk, "reconcile_required": s.reconcile_required,
            "resolved_strategy": s.resolved_strategy, "chunk_column": s.chunk_column,
            "preflight_estimate": s.preflight_estimate, "estimate_label": s.estimate_label,
        }
        diagnostics = {"verdict": s.verdict, "warnings": list(s.warnings),
                       "recommended_profile": s.recommended_profile}
    if export.preflight_error is not None:
        diagnostics["preflight_error"] = export.preflight_error
    if export.notes:
        diagnostics["notes"] = list(export.notes)
    prioritization: dict[str, Any] = {
        "export_recommendation": recommendation_json(export.recommendation)}
    if campaign is not None:
        prioritization["campaign"] = campaign_json(campaign)
    history = None
    if export.history is not None:
        h = export.history
        history = {"runs": h.runs, "last_failed": h.last_failed,
                   "retries_per_run": round(h.retries_per_run, 4),
                   "mean_duration_ms": h.mean_duration_ms}
    resolved = (resolved_plan(export.config, source, s, day=day, source_json=source_json)
                if s is not None and export.config is not None else None)
    return {
        "export_name": export.export_name, "config": export.config_path, "line": export.line,
        "mode": export.mode, "strategy": export.strategy, "computed": computed,
        "diagnostics": diagnostics, "history": history, "prioritization": prioritization,
        "resolved_plan": resolved,
    }


def problem_json(problem: Problem) -> dict[str, Any]:
    return {"file": problem.file, "line": problem.line, "field": problem.field,
            "message": problem.message, "severity": problem.severity}


def config_json(config: ConfigPlan, *, day: str = "") -> dict[str, Any]:
    shared_source = source_block(config.source)
    exports = [export_json(e, config.campaign if i == 0 else None, source=config.source,
                           source_json=shared_source, day=day)
               for i, e in enumerate(config.exports)]
    return {
        "path": config.path,
        "source": {"type": config.source_type, "environment": config.source_environment},
        "exports": exports,
        "campaign": campaign_json(config.campaign) if config.campaign else None,
        "problems": [problem_json(p) for p in config.problems],
    }


def plan_summary(plan: Plan) -> dict[str, int]:
    exports = plan.exports
    return {
        "configs": len(plan.configs),
        "exports": len(exports),
        "errors": sum(1 for p in plan.all_problems if p.severity == "error"),
        "low_confidence": sum(1 for e in exports if e.recommendation.low_confidence),
        "isolate_on_source": sum(1 for e in exports if e.recommendation.isolate_on_source),
    }


def plan_document(plan: Plan, *, generated_at: str, version: str) -> dict[str, Any]:
    """The whole `rivet-ci-plan/1` document (key order is part of the format's readability)."""
    return {
        "format": PLAN_FORMAT,
        "generator": {"name": "rivet-ci", "version": version},
        "generated_at": generated_at,
        "facts": {
            "origin": plan.facts.kind, "path": plan.facts.path,
            "captured_at": plan.facts.captured_at.isoformat() if plan.facts.captured_at else None,
        },
        "summary": plan_summary(plan),
        "configs": [config_json(c, day=generated_at[:10]) for c in plan.configs],
        "problems": [problem_json(p) for p in plan.all_problems],
    }


def dump_json(document: Any) -> str:
    """Deterministic JSON text (same input, same bytes), indented for people reading diffs.

    orjson writes exactly what `json.dumps(indent=2, ensure_ascii=False)` writes, ~10× faster:
    the stdlib's C encoder is not used when indenting, and plans can hold 10,000s of exports.
    """
    return orjson.dumps(document, option=orjson.OPT_INDENT_2).decode("utf-8") + "\n"


# --- reading ------------------------------------------------------------------------------------

class PlanReadError(ValueError):
    """The JSON is neither a rivet-ci plan document nor a rivet plan artifact."""


def read_plan(data: Any, *, path: str) -> Plan:
    """Read a `rivet-ci-plan/1` document, or rivet's own plan JSON (one object or an array).

    Older rivet artifacts lack `integrity`, `campaign` and `strategy_rationale`: all optional here.
    Signals are reconstructed only as far as `show` prints them (verdict, warnings, row
    estimate, chunk count); the recommendation, strategy and diagnostics are read. Anything
    malformed raises `PlanReadError`.
    """
    try:
        return _read_plan(data, path)
    except PlanReadError:
        raise
    except (KeyError, TypeError, AttributeError, ValueError) as exc:  # ValidationError included
        raise PlanReadError(f"{path}: malformed plan JSON ({type(exc).__name__}: {exc})") from None


def _read_plan(data: Any, path: str) -> Plan:
    if isinstance(data, dict) and data.get("format") == PLAN_FORMAT:
        configs = tuple(_read_config(c) for c in data.get("configs", []))
        problems = tuple(Problem.model_validate(p) for p in data.get("problems", [])
                         if not any(p.get("file") == c.path for c in configs))
        return Plan(configs=configs, facts=FactsOrigin(kind="artifact", path=path),
                    problems=problems)
    items = data if isinstance(data, list) else [data]
    if not items or not all(isinstance(i, dict) and "export_name" in i for i in items):
        raise PlanReadError(f"{path}: not a rivet-ci plan ({PLAN_FORMAT}) nor a rivet plan "
                            f"artifact (objects with export_name and prioritization)")
    # rivet plans one config per run; `plan --format rivet-json` may hold several, each
    # artifact naming its `config_path`. Group them, config order kept.
    groups: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        groups.setdefault(str(item.get("config_path") or path), []).append(item)
    read: list[ConfigPlan] = []
    for config_path, members in groups.items():
        exports = tuple(_read_export(i, config_path) for i in members)
        campaign = next((_read_campaign(i["prioritization"]["campaign"]) for i in members
                         if isinstance(i.get("prioritization"), dict)
                         and i["prioritization"].get("campaign")), None)
        read.append(ConfigPlan(path=config_path, source_type=_source_type(members[0]),
                                  exports=exports, campaign=campaign))
    return Plan(configs=tuple(read), facts=FactsOrigin(kind="artifact", path=path))


def _source_type(item: dict[str, Any]) -> str | None:
    rp = item.get("resolved_plan")
    source = rp.get("source") if isinstance(rp, dict) else None
    kind = source.get("type") if isinstance(source, dict) else None
    return str(kind) if kind is not None else None


def _read_campaign(raw: Any) -> Campaign:
    """A campaign; rivet's `ordered_exports` holds recommendation objects, ours names."""
    try:
        ordered = [o["export_name"] if isinstance(o, dict) else o
                   for o in raw.get("ordered_exports", [])]
        return Campaign.model_validate({**raw, "ordered_exports": ordered,
                                        "source_group_warnings":
                                        raw.get("source_group_warnings", [])})
    except (ValidationError, AttributeError, KeyError, TypeError) as exc:
        raise PlanReadError(f"invalid campaign: {exc}") from None


# rivet's artifact tokens (`strategy`) and ours, to the prioritization kind
_STRATEGY_TOKENS: dict[str, Strategy] = {
    "full": "snapshot", "snapshot": "snapshot", "incremental": "incremental",
    "chunked": "chunked", "keyset": "chunked", "timewindow": "time_window",
    "time_window": "time_window",
}
_RESOLVED_TOKENS: dict[str, ResolvedStrategy] = {
    "full": "full", "snapshot": "full", "incremental": "incremental", "chunked": "chunked",
    "keyset": "keyset", "timewindow": "timewindow", "time_window": "timewindow",
}
# `resolved_plan.strategy` encodings (serde external tagging) to rivet's token
_TAGS = {"Snapshot": "full", "Incremental": "incremental", "Chunked": "chunked",
         "Keyset": "keyset", "TimeWindow": "timewindow"}


def _strategy_token(raw: dict[str, Any], path: str) -> str:
    token = raw.get("strategy")
    if isinstance(token, dict):  # some rivet-ci documents nested {kind: ...}
        token = token.get("kind")
    if token is None:
        rp = raw.get("resolved_plan")
        tagged = rp.get("strategy") if isinstance(rp, dict) else None
        tag = next(iter(tagged), None) if isinstance(tagged, dict) else tagged
        token = _TAGS.get(str(tag), "full") if tag is not None else "full"
    token = str(token)
    if token not in _STRATEGY_TOKENS:
        raise PlanReadError(f"{path}: export {raw.get('export_name')!r} has an unknown strategy "
                            f"{token!r} (expected one of {', '.join(sorted(_STRATEGY_TOKENS))})")
    return token


def _read_export(raw: dict[str, Any], path: str) -> PlannedExport:
    prioritization = raw.get("prioritization") or {}
    try:
        rec = ExportRecommendation.model_validate(prioritization["export_recommendation"])
    except (KeyError, TypeError, ValidationError) as exc:
        raise PlanReadError(f"{path}: export {raw.get('export_name')!r} has no valid "
                            f"prioritization.export_recommendation ({exc})") from None
    token = _strategy_token(raw, path)
    computed_raw = raw.get("computed") or {}
    if isinstance(computed_raw.get("resolved_strategy"), str):
        token = computed_raw["resolved_strategy"]
    strategy = _STRATEGY_TOKENS[token]
    diagnostics = raw.get("diagnostics") or {}
    computed = raw.get("computed") or {}
    signals = None
    if isinstance(diagnostics.get("verdict"), str):
        warnings = diagnostics.get("warnings") or []
        rows = computed.get("row_estimate")
        chunks = computed.get("chunk_count")
        signals = Signals(
            strategy=strategy, resolved_strategy=_RESOLVED_TOKENS[token],
            row_estimate=rows if isinstance(rows, int) else None,
            chunk_count=chunks if isinstance(chunks, int) and chunks > 0 else None,
            verdict=diagnostics["verdict"], warnings=tuple(str(w) for w in warnings),
            recommended_profile=str(diagnostics.get("recommended_profile") or "balanced"),
            preflight_failed=diagnostics["verdict"] == PREFLIGHT_FAILED_VERDICT,
        )
    return PlannedExport(
        config_path=str(raw.get("config", path)), line=raw.get("line"),
        export_name=str(raw["export_name"]), mode=str(raw.get("mode", strategy)),
        strategy=strategy, signals=signals, history=None, recommendation=rec,
        preflight_error=diagnostics.get("preflight_error"),
    )


def _read_config(raw: dict[str, Any]) -> ConfigPlan:
    path = str(raw["path"])
    source = raw.get("source") or {}
    return ConfigPlan(
        path=path, source_type=source.get("type"), source_environment=source.get("environment"),
        exports=tuple(_read_export(e, path) for e in raw.get("exports", [])),
        campaign=_read_campaign(raw["campaign"]) if raw.get("campaign") else None,
        problems=tuple(Problem.model_validate(p) for p in raw.get("problems", [])),
    )
