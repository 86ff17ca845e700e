"""The recommendation models shared by scoring, campaign, artifact and diff (spec §4, §6, §7).

Field names and class tokens are an interface shared with rivet and its users' tooling (an
Airflow DAG reads `prioritization.campaign.waves`): keep them exactly.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from rivet_ci.core.plan.reasons import LOW_CONFIDENCE_KIND

PriorityClass = Literal["low", "medium", "high"]
CostClass = Literal["low", "medium", "high", "very_high"]
RiskClass = Literal["low", "medium", "high"]
HEAVY_COST: frozenset[str] = frozenset({"high", "very_high"})
SHARED_SOURCE_MESSAGE = ("Shared source group '{group}' has multiple heavy exports — run this "
                         "export alone on that source.")


# A reason's values by name, in its message's order (`(("windows", 48),)`).
ReasonValues = tuple[tuple[str, int | float], ...]


class Reason(BaseModel):
    """One structured, explainable reason: a stable `kind` token, rivet's message, and the
    values the message is written from (`core/plan/reasons.py`; not in rivet's artifact)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    kind: str
    message: str
    values: ReasonValues = ()


class ExportRecommendation(BaseModel):
    """rivet's `prioritization.export_recommendation` object."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    export_name: str
    source_group: str | None = None
    priority_score: int
    priority_class: PriorityClass
    cost_class: CostClass
    risk_class: RiskClass
    recommended_wave: int
    isolate_on_source: bool = False
    reasons: tuple[Reason, ...] = ()

    @property
    def reason_kinds(self) -> tuple[str, ...]:
        return tuple(r.kind for r in self.reasons)

    @property
    def low_confidence(self) -> bool:
        # No tuple of kinds built: the plan's summary asks this of every export.
        return any(reason.kind == LOW_CONFIDENCE_KIND for reason in self.reasons)


class Wave(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    wave: int
    exports: tuple[str, ...]


class Campaign(BaseModel):
    """rivet's `prioritization.campaign` object for exports planned together."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    ordered_exports: tuple[str, ...]
    waves: tuple[Wave, ...]
    source_group_warnings: tuple[str, ...]
