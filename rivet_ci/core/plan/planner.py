"""Plan loaded configs against facts: signals → score → campaign, per config file (pure).

One facts source serves every config (and both sides of a PR), so a difference between two plans
is always caused by the configs themselves.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from rivet_ci.core.common.fast_model import maker
from rivet_ci.core.common.problems import Problem
from rivet_ci.core.config.loader import LoadedConfig
from rivet_ci.core.config.models import ExportConfig, SourceConfig, Strategy
from rivet_ci.core.facts.catalog import FactsProvenance, derive_from_catalog, provenance_of
from rivet_ci.core.facts.history import HistorySummary, summarize_history
from rivet_ci.core.facts.models import FactsFile
from rivet_ci.core.plan.campaign import build_campaign
from rivet_ci.core.plan.recommendation import Campaign, ExportRecommendation
from rivet_ci.core.plan.resolve import PlanRefusedError
from rivet_ci.core.plan.scoring import recommend_export
from rivet_ci.core.plan.signals import Signals, derive_signals

FactsOriginKind = Literal["file", "live", "none", "artifact"]


class PlannedExport(BaseModel):
    """One export's plan: where it is written, what was derived, and the recommendation."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    config_path: str
    line: int | None
    export_name: str
    mode: str
    strategy: Strategy
    signals: Signals | None  # None when read back from a rivet artifact without them
    history: HistorySummary | None
    recommendation: ExportRecommendation
    preflight_error: str | None = None
    notes: tuple[str, ...] = ()
    config: ExportConfig | None = None  # the export as configured (None when read from JSON)
    # Where the export's facts came from, input by input (None: read back from JSON without it)
    facts_provenance: FactsProvenance | None = None

    @property
    def verdict(self) -> str | None:
        return self.signals.verdict if self.signals else None


class ConfigPlan(BaseModel):
    """The plan of one config file: its exports, its campaign, its problems."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    path: str
    source_type: str | None
    source_environment: str | None = None
    source: SourceConfig | None = None  # as configured (None when read from JSON)
    exports: tuple[PlannedExport, ...]
    campaign: Campaign | None
    problems: tuple[Problem, ...] = ()


class FactsOrigin(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    kind: FactsOriginKind
    path: str | None = None
    captured_at: datetime | None = None


class Plan(BaseModel):
    """Everything planned in one run, plus every problem met on the way."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    configs: tuple[ConfigPlan, ...]
    facts: FactsOrigin
    problems: tuple[Problem, ...] = ()  # problems not tied to one config (e.g. the facts file)

    @property
    def all_problems(self) -> tuple[Problem, ...]:
        return (*self.problems, *(p for c in self.configs for p in c.problems))

    @property
    def exports(self) -> tuple[PlannedExport, ...]:
        return tuple(e for c in self.configs for e in c.exports)


_PLANNED_EXPORT = maker(PlannedExport)
NO_ENTRY = "the facts file has no entry for it"
NO_FACTS_FILE = provenance_of(None, "none", range_column=None, why_unknown="no facts file given")
_CONFIG_PLAN = maker(ConfigPlan)


def plan_config(loaded: LoadedConfig, facts: FactsFile | None) -> ConfigPlan:
    """Plan every valid export of one config file against the facts.

    An export rivet refuses to plan becomes a `plan-refused` problem of the file (rivet's text)
    and takes no part in the campaign; the other exports are planned as usual. The measured-rows
    overlay judges staleness against the facts' `captured_at` (unknown: never stale).
    """
    # Each planned export's parts; built once the campaign has said whether it isolates it.
    planned: list[tuple[ExportConfig, Signals, HistorySummary | None, str | None,
                        tuple[str, ...], FactsProvenance]] = []
    recommendations: list[ExportRecommendation] = []
    refusals: list[Problem] = []
    path, lines, source = loaded.path, loaded.export_lines, loaded.source
    source_type = source.type if source else None
    now = facts.captured_at if facts is not None else None
    mongo = source.mongo if source is not None else None
    page_size = mongo.page_size if mongo is not None and source_type == "mongo" else None
    no_facts = "no facts for this export" if facts is not None else None
    for export in loaded.exports:
        name = export.name
        entry = facts.for_export(path, name) if facts is not None else None
        derived = False
        if facts is None:
            provenance = NO_FACTS_FILE
        elif entry is None and facts.catalog:
            # No entry of its own (an export the base never had): from the catalog.
            entry, provenance = derive_from_catalog(export, source, facts.catalog)
            derived = True
        else:
            provenance = provenance_of(entry, "export", range_column=export.range_column,
                                       why_unknown=None if entry else NO_ENTRY)
        try:
            signals = derive_signals(export, entry, source_type=source_type, now=now,
                                     mongo_page_size=page_size)
        except PlanRefusedError as refused:
            refusals.append(Problem(
                file=path, line=lines.get(name),
                field=refused.field, message=refused.message, finding="plan-refused"))
            continue
        notes = signals.notes
        if entry is None:
            history, preflight_error = None, no_facts
            if derived and provenance.why_unknown:
                preflight_error = f"{no_facts}: {provenance.why_unknown}"
        else:
            runs = entry.history
            history = summarize_history(runs) if runs else None
            preflight_error = entry.preflight_error
            if entry.notes:
                notes = (*notes, *entry.notes)
        recommendation = recommend_export(name, signals, history, export.source_group)
        recommendations.append(recommendation)
        planned.append((export, signals, history, preflight_error, notes, provenance))
    campaign: Campaign | None = None
    if recommendations:
        # The campaign may flag isolation, so exports are built from its recommendations.
        recommendations, campaign = build_campaign(recommendations)
    exports = tuple(
        _PLANNED_EXPORT.make_full({
            "config_path": path, "line": lines.get(export.name), "export_name": export.name,
            "mode": export.mode, "strategy": signals.strategy, "signals": signals,
            "history": history, "recommendation": recommendation,
            "preflight_error": preflight_error, "notes": notes, "config": export,
            "facts_provenance": provenance,
        })
        for (export, signals, history, preflight_error, notes, provenance), recommendation
        in zip(planned, recommendations, strict=True))
    return _CONFIG_PLAN.make_full({
        "path": path, "source_type": source_type,
        "source_environment": source.environment if source else None,
        "source": source, "exports": exports, "campaign": campaign,
        "problems": (*loaded.problems, *refusals),
    })


def plan_configs(
    configs: Sequence[LoadedConfig], facts: FactsFile | None, origin: FactsOrigin,
    problems: Sequence[Problem] = (), *, only_exports: frozenset[str] | None = None,
) -> Plan:
    """Plan several config files; `only_exports` keeps only the named exports in the result.

    The whole campaign is planned first, so a chosen export keeps what its siblings decide for
    it (`isolate_on_source` and its reason); each file keeps its full campaign view. A file
    without a chosen export is left out."""
    plans = [plan_config(loaded, facts) for loaded in configs]
    if only_exports is not None:
        plans = [c for c in (chosen_exports(p, only_exports) for p in plans) if c is not None]
    return Plan(configs=tuple(plans), facts=origin, problems=tuple(problems))


def chosen_exports(plan: ConfigPlan, only_exports: frozenset[str]) -> ConfigPlan | None:
    """`plan` with only the chosen exports (its campaign kept whole); None when it has no
    chosen export and no problem."""
    kept = tuple(e for e in plan.exports if e.export_name in only_exports)
    if not kept and not plan.problems:
        return None
    return plan.model_copy(update={"exports": kept})
