"""The human-readable plan (`--format pretty`), shaped like rivet's Priority / Campaign blocks."""

from __future__ import annotations

from rivet_ci.core.planner import ConfigPlan, Plan, PlannedExport


def _export_block(export: PlannedExport) -> list[str]:
    rec = export.recommendation
    where = f"{export.config_path}:{export.line}" if export.line else export.config_path
    lines = [f"Export     : {export.export_name}  ({where})",
             f"  Strategy   : {export.strategy}"
             + (f"  · source_group {rec.source_group}" if rec.source_group else "")]
    if export.signals is not None:
        s = export.signals
        rows = "unknown" if s.row_estimate is None else f"~{s.row_estimate}"
        chunks = f"  · chunks {s.chunk_count}" if s.chunk_count is not None else ""
        lines.append(f"  Preflight  : {s.verdict}  · rows {rows}{chunks}")
        lines.extend(f"    ! {w}" for w in s.warnings)
    if export.preflight_error:
        lines.append(f"  Facts      : {export.preflight_error}")
    lines.append(f"  Priority   : score {rec.priority_score} — {rec.priority_class.capitalize()} "
                 f"(wave {rec.recommended_wave})  · cost {rec.cost_class} · risk {rec.risk_class}"
                 + ("  · ISOLATE ON SOURCE" if rec.isolate_on_source else ""))
    lines.append("  Prioritize :")
    lines.extend(f"    • [{r.kind}] {r.message}" for r in rec.reasons)
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
    for config in plan.configs:
        for export in config.exports:
            out.extend(_export_block(export))
            out.append("")
        block = _campaign_block(config)
        if block:
            out.extend(block)
            out.append("")
    problems = plan.all_problems
    if problems:
        out.append(f"Problems   : {len(problems)}")
        out.extend(f"  {p.severity}: {p.render()}" for p in problems)
        out.append("")
    exports = plan.exports
    out.append(f"Planned {len(exports)} export(s) in {len(plan.configs)} config file(s); "
               f"{sum(1 for p in problems if p.severity == 'error')} error(s).")
    return "\n".join(out) + "\n"
