"""The PR comment's view model: everything the template shows, decided here (pure).

The template only lays out what this model says; ordering (blocking findings and the largest
score changes first), truncation to a row budget, and wording of the verdict live here, so they
are tested without rendering.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TypeVar

from pydantic import BaseModel, ConfigDict

from rivet_ci.core.diff import ExportChange, Finding, PlanDiff, WarningChange
from rivet_ci.core.planner import FactsOrigin
from rivet_ci.core.policy import GateResult
from rivet_ci.core.recommendation import Reason


class ChangedRow(BaseModel):
    model_config = ConfigDict(frozen=True)

    export_name: str
    file: str
    line: int | None
    status: str
    score_base: int | None
    score_head: int | None
    delta: int | None
    class_base: str | None
    class_head: str | None
    wave_base: int | None
    wave_head: int | None
    cost: str
    risk: str
    flags: tuple[str, ...]
    blocking: bool
    reasons: tuple[Reason, ...]
    reasons_added: tuple[str, ...]
    reasons_removed: tuple[str, ...]


class Isolation(BaseModel):
    model_config = ConfigDict(frozen=True)

    export_name: str
    source_group: str | None
    file: str
    line: int | None


class ProblemLine(BaseModel):
    model_config = ConfigDict(frozen=True)

    text: str
    status: str


class CommentView(BaseModel):
    """What one rendering of the comment shows."""

    model_config = ConfigDict(frozen=True)

    gate_id: str
    marker: str
    passed: bool
    headline: str
    policy: str
    counts: dict[str, int]
    rows: tuple[ChangedRow, ...]
    omitted_rows: int
    show_details: bool
    new_isolations: tuple[Isolation, ...]
    resolved_isolations: tuple[Isolation, ...]
    warnings_new: tuple[WarningChange, ...]
    warnings_resolved: tuple[WarningChange, ...]
    warnings_persisting: int
    low_confidence: tuple[str, ...]
    problems: tuple[ProblemLine, ...]
    blocking: tuple[Finding, ...]
    # Lists other than `rows` are cut to the row budget too (never below MIN_LISTED), so a PR
    # touching thousands of exports still gets a comment that says what it left out.
    omitted_blocking: int = 0
    omitted_isolations: int = 0
    omitted_warnings: int = 0
    omitted_low_confidence: int = 0
    omitted_problems: int = 0
    base_sha: str
    head_sha: str
    facts: str
    run_url: str | None
    full_report_hint: str


MIN_LISTED = 10
_T = TypeVar("_T")


def _cap(items: tuple[_T, ...], max_rows: int | None) -> tuple[tuple[_T, ...], int]:
    if max_rows is None:
        return items, 0
    kept = items[: max(max_rows, MIN_LISTED)]
    return kept, len(items) - len(kept)


def _flags(change: ExportChange) -> tuple[str, ...]:
    flags = []
    if change.isolation == "new":
        flags.append("🔒 new isolate_on_source")
    elif change.isolation == "pre-existing":
        flags.append("isolate_on_source")
    elif change.isolation == "resolved":
        flags.append("isolation cleared")
    if change.low_confidence in ("new", "pre-existing"):
        flags.append("low confidence")
    if change.renamed_from:
        flags.append(f"renamed from {change.renamed_from}")
    return tuple(flags)


def _row(change: ExportChange, blocking: set[tuple[str | None, str | None]]) -> ChangedRow:
    b, h = change.base, change.head
    latest = h or b
    assert latest is not None  # a change always has one side
    return ChangedRow(
        export_name=change.export_name, file=change.config_path, line=change.line,
        status=change.status,
        score_base=b.priority_score if b else None, score_head=h.priority_score if h else None,
        delta=change.score_delta,
        class_base=b.priority_class if b else None, class_head=h.priority_class if h else None,
        wave_base=b.recommended_wave if b else None, wave_head=h.recommended_wave if h else None,
        cost=latest.cost_class, risk=latest.risk_class, flags=_flags(change),
        blocking=(change.config_path, change.export_name) in blocking,
        reasons=latest.reasons, reasons_added=change.reasons_added,
        reasons_removed=change.reasons_removed,
    )


def _row_priority(row: ChangedRow) -> tuple[int, int, str, str]:
    # Blocking first, then the largest score movement (added/removed count as large), then name.
    magnitude = abs(row.delta) if row.delta is not None else 100
    return (0 if row.blocking else 1, -magnitude, row.file, row.export_name)


def facts_description(origin: FactsOrigin, now: datetime) -> str:
    if origin.kind == "none":
        return "no facts (every export planned with low confidence)"
    if origin.kind == "live":
        return "live preflight"
    where = f"`{origin.path}`" if origin.path else "facts file"
    if origin.captured_at is None:
        return f"{where} (capture time unknown)"
    age_h = max((now - origin.captured_at).total_seconds(), 0) / 3600
    age = f"{age_h:.0f} h" if age_h < 48 else f"{age_h / 24:.0f} days"
    return f"{where}, captured {age} ago"


def build_comment_view(
    diff: PlanDiff, gate: GateResult, *, gate_id: str, marker: str, base_sha: str,
    head_sha: str, facts: str, run_url: str | None, max_rows: int | None = None,
    show_details: bool = True, full_report_hint: str = "the job summary and `plan.json`",
    checked: Mapping[str, int] | None = None,
) -> CommentView:
    """Build the view; `max_rows` keeps the most important rows (blocking, largest changes)."""
    blocking_keys: set[tuple[str | None, str | None]] = {
        (f.file, f.export_name) for f in gate.blocking if f.export_name}
    rows = sorted((_row(c, blocking_keys) for c in diff.changed_exports), key=_row_priority)
    kept = rows if max_rows is None else rows[:max_rows]
    changes = diff.changed_exports
    isolations = [c for c in diff.exports if c.isolation in ("new", "resolved")]

    def isolation(c: ExportChange) -> Isolation:
        latest = c.head or c.base
        return Isolation(export_name=c.export_name, file=c.config_path, line=c.line,
                         source_group=latest.source_group if latest else None)

    counts = {
        "changed": sum(1 for c in changes if c.status == "changed"),
        "added": sum(1 for c in changes if c.status == "added"),
        "removed": sum(1 for c in changes if c.status == "removed"),
        "new_isolations": sum(1 for c in isolations if c.isolation == "new"),
        "new_warnings": sum(1 for w in diff.warnings if w.status == "new"),
        "resolved_warnings": sum(1 for w in diff.warnings if w.status == "resolved"),
        "errors": sum(1 for f in diff.findings if f.kind == "config-error" and f.status == "new"),
        "blocking": len(gate.blocking),
    }
    problem_lines, omitted_problems = _cap(tuple(
        ProblemLine(text=f.message, status=f.status)
        for f in diff.findings if f.kind == "config-error"), max_rows)
    blocking, omitted_blocking = _cap(gate.blocking, max_rows)
    new_isolations, omitted_new = _cap(
        tuple(isolation(c) for c in isolations if c.isolation == "new"), max_rows)
    resolved_isolations, omitted_resolved = _cap(
        tuple(isolation(c) for c in isolations if c.isolation == "resolved"), max_rows)
    warnings_new, omitted_warnings_new = _cap(
        tuple(w for w in diff.warnings if w.status == "new"), max_rows)
    warnings_resolved, omitted_warnings_resolved = _cap(
        tuple(w for w in diff.warnings if w.status == "resolved"), max_rows)
    low_confidence, omitted_low = _cap(tuple(sorted(
        c.export_name for c in changes if c.low_confidence in ("new", "pre-existing"))), max_rows)
    return CommentView(
        gate_id=gate_id, marker=marker, passed=gate.passed,
        headline=_headline(gate, counts, checked), policy=gate.policy, counts=counts,
        rows=tuple(kept), omitted_rows=len(rows) - len(kept), show_details=show_details,
        new_isolations=new_isolations, resolved_isolations=resolved_isolations,
        omitted_isolations=omitted_new + omitted_resolved,
        warnings_new=warnings_new, warnings_resolved=warnings_resolved,
        omitted_warnings=omitted_warnings_new + omitted_warnings_resolved,
        warnings_persisting=sum(1 for w in diff.warnings if w.status == "pre-existing"),
        low_confidence=low_confidence, omitted_low_confidence=omitted_low,
        problems=problem_lines, omitted_problems=omitted_problems,
        blocking=blocking, omitted_blocking=omitted_blocking, base_sha=base_sha,
        head_sha=head_sha, facts=facts, run_url=run_url, full_report_hint=full_report_hint,
    )


def checked_text(checked: Mapping[str, int]) -> str:
    """What the verdict is based on: `checked 2 config file(s) (7 exports) at head, 2 (6) at
    base`. Says it plainly when nothing matched, so a gate that checked nothing never looks
    like a pass over real configs."""
    head = (f"{checked['head-configs']} config file(s) ({checked['head-exports']} export(s)) "
            "at head")
    base = f"{checked['base-configs']} ({checked['base-exports']}) at base"
    return f"checked {head}, {base}"


def _headline(gate: GateResult, counts: dict[str, int],
              checked: Mapping[str, int] | None = None) -> str:
    touched = counts["changed"] + counts["added"] + counts["removed"]
    parts = [f"{touched} export(s) changed"]
    if counts["new_isolations"]:
        parts.append(f"{counts['new_isolations']} new isolate_on_source")
    if counts["new_warnings"]:
        parts.append(f"{counts['new_warnings']} new campaign warning(s)")
    if counts["resolved_warnings"]:
        parts.append(f"{counts['resolved_warnings']} resolved")
    if counts["errors"]:
        parts.append(f"{counts['errors']} new config error(s)")
    verdict = ("✅ gate passed" if gate.passed
               else f"❌ gate failed ({len(gate.blocking)} blocking finding(s))")
    tail = f" · {checked_text(checked)}" if checked is not None else ""
    return f"{verdict} — " + ", ".join(parts) + tail
