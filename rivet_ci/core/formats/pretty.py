"""The human-readable plan (`--format pretty`), shaped like rivet's Priority / Campaign blocks."""

from __future__ import annotations

from rivet_ci.core.common.text import people_numbers, plural
from rivet_ci.core.plan.planner import ConfigPlan, Plan, PlannedExport
from rivet_ci.core.plan.signals import PREFLIGHT_FAILED_VERDICT, PREFLIGHT_FAILED_WARNING

NO_FACTS_NOTE = "no facts given — planned with low confidence; pass --facts FILE or --live"
NOT_ATTEMPTED = "not attempted (no facts given)"


def _export_block(export: PlannedExport, *, no_facts: bool = False) -> list[str]:
    rec = export.recommendation
    where = f"{export.config_path}:{export.line}" if export.line else export.config_path
    lines = [f"Export     : {export.export_name}  ({where})",
             f"  Strategy   : {export.strategy}"
             + (f"  · source_group {rec.source_group}" if rec.source_group else "")]
    if export.signals is not None:
        s = export.signals
        rows = "unknown" if s.row_estimate is None else f"~{s.row_estimate:,}"
        chunks = f"  · chunks {s.chunk_count}" if s.chunk_count is not None else ""
        # Without any facts source no preflight was attempted: rivet's "preflight failed"
        # wording would blame a preflight that never ran.
        verdict = NOT_ATTEMPTED if no_facts and s.verdict == PREFLIGHT_FAILED_VERDICT else s.verdict
        lines.append(f"  Preflight  : {verdict}  · rows {rows}{chunks}")
        lines.extend(f"    ! {w}" for w in s.warnings
                     if not (no_facts and w == PREFLIGHT_FAILED_WARNING))
    if export.preflight_error:
        lines.append(f"  Facts      : {export.preflight_error}")
    lines.append(f"  Priority   : score {rec.priority_score} — {rec.priority_class.capitalize()} "
                 f"(wave {rec.recommended_wave})  · cost {rec.cost_class} · risk {rec.risk_class}"
                 + ("  · ISOLATE ON SOURCE" if rec.isolate_on_source else ""))
    lines.append("  Prioritize :")
    lines.extend(f"    • [{r.kind}] {people_numbers(r.message)}" for r in rec.reasons)
    return lines


def _campaign_block(config: ConfigPlan) -> list[str]:
    campaign = config.campaign
    if campaign is None or len(config.exports) < 2:
        return []
    lines = [f"Campaign   : {config.path}",
             "  Order      : " + ", ".join(campaign.ordered_exports)]
    lines.extend(f"  Wave {w.wave}     : " + ", ".join(w.exports) for w in campaign.waves)
    lines.extend(f"    • {w}" for w in campaign.source_group_warnings)
    return lines


def render_pretty(plan: Plan) -> str:
    """Per export the Priority / Prioritize block; per multi-export config the Campaign block."""
    out: list[str] = []
    no_facts = plan.facts.kind == "none"
    if no_facts:
        out.extend([f"Note       : {NO_FACTS_NOTE}", ""])
    for config in plan.configs:
        for export in config.exports:
            out.extend(_export_block(export, no_facts=no_facts))
            out.append("")
        block = _campaign_block(config)
        if block:
            out.extend(block)
            out.append("")
    # Problems are printed once, on stderr (`problem_lines`); the plan only counts them.
    problems = plan.all_problems
    errors = sum(1 for p in problems if p.severity == "error")
    warnings = len(problems) - errors
    tail = "no errors" if not errors else f"{plural(errors, 'error')} (on stderr)"
    if warnings:
        tail += f", {plural(warnings, 'warning')}"
    out.append(f"Planned {plural(len(plan.exports), 'export')} in "
               f"{plural(len(plan.configs), 'config file')}; {tail}.")
    return "\n".join(out) + "\n"


def problem_lines(plan: Plan, limit: int = 50) -> list[str]:
    """Each problem once, for stderr: `rivet-ci: error: file:line: field: message` (then a
    count) — the one prefix every rivet-ci message on stderr has."""
    problems = sorted(plan.all_problems, key=lambda p: p.severity != "error")
    lines = [f"rivet-ci: {p.severity}: {p.render()}" for p in problems[:limit]]
    if len(problems) > limit:
        lines.append(f"... and {len(problems) - limit:,} more (see the plan document)")
    return lines
