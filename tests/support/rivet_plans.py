"""Plan artifacts as rivet itself writes them (no tests here): read by `read_plan` and
`rivet-ci show`."""

from __future__ import annotations

from typing import Any


def recommendation(name: str, score: int, **extra: Any) -> dict[str, Any]:
    return {"export_name": name, "priority_score": score, "priority_class": "medium",
            "cost_class": "medium", "risk_class": "low", "recommended_wave": 2,
            "isolate_on_source": False,
            "reasons": [{"kind": "large_table", "message": "Medium/large estimated row count "
                                                           "(~500000)."}], **extra}


CAMPAIGN: dict[str, Any] = {"ordered_exports": ["orders", "events"],
            "waves": [{"wave": 2, "exports": ["orders"]}, {"wave": 4, "exports": ["events"]}],
            "source_group_warnings": []}

# rivet 0.24's artifact for one export: integrity, strategy_rationale and an embedded campaign.
RIVET_OBJECT: dict[str, Any] = {
    "export_name": "orders",
    "strategy": "incremental",
    "strategy_rationale": "cursor_column set, mode incremental",
    "integrity": {"config_sha256": "0" * 64, "rivet_version": "0.24.3"},
    "computed": {"row_estimate": 500000, "chunk_count": None},
    "diagnostics": {"verdict": "EFFICIENT", "warnings": []},
    "prioritization": {"export_recommendation": recommendation("orders", 58,
                                                               source_group="replica_a"),
                       "campaign": CAMPAIGN},
}
RIVET_EVENTS: dict[str, Any] = {
    "export_name": "events",
    "strategy": {"kind": "chunked", "chunk_size": 100000},  # some rivet versions nest it
    "computed": {"row_estimate": 48000000, "chunk_count": 480},
    "diagnostics": {"verdict": "ACCEPTABLE", "warnings": ["..."]},
    "prioritization": {"export_recommendation": {
        **recommendation("events", 25), "priority_class": "low", "cost_class": "very_high",
        "recommended_wave": 4}},
}
# An older artifact: no integrity, no campaign, no strategy_rationale, no isolate_on_source.
OLD_OBJECT: dict[str, Any] = {
    "export_name": "customers",
    "strategy": "snapshot",
    "diagnostics": {"verdict": "ACCEPTABLE", "warnings": []},
    "prioritization": {"export_recommendation": {
        k: v for k, v in recommendation("customers", 67).items() if k != "isolate_on_source"}},
}
