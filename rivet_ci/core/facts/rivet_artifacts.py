"""Facts from rivet's own plan artifacts (`rivet plan --format json`), pure: the caller reads
the files.

Teams archive rivet's plan artifacts from their orchestrator; `--facts DIR` plans against them.
Two shapes are read: rivet 0.32's one file per export (`out.<export>.json`: one object with
`export_name`, `computed`, `diagnostics`, `resolved_plan`, `created_at`), and an array of such
objects (the multi-export shape `rivet-ci show` reads, as `plan --format rivet-json` writes it).
Each artifact becomes its export's entry:

* `computed.row_estimate` → `row_estimate`; `computed.uses_index` (older rivets) →
  `plan_uses_index`; `computed.avg_row_bytes` when present;
* `diagnostics.verdict` and `diagnostics.warnings` → `verdict` and `warnings` (rivet's own,
  which then replace the computed ones);
* `computed.chunk_ranges` with the chunk column of `resolved_plan.strategy` → that column's
  `min`/`max` (the first window's low end, the last one's high end) and `key_span`;
* a note naming the file, rivet's version and the artifact's `created_at`; the oldest
  `created_at` is the facts' `captured_at` (so staleness is judged by the oldest artifact).

An export is keyed by name (top-level `exports`); a second artifact of the same name is reported
and left out. Anything that is not such an artifact is reported, never guessed at.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from rivet_ci.core.common.limits import I64_MAX
from rivet_ci.core.common.problems import Problem
from rivet_ci.core.facts.models import FACTS_FORMAT, ColumnFacts, ExportFacts, FactsFile


def _count(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = int(value)
    return number if 0 <= number <= I64_MAX and number == value else None


def _when(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    text = value.replace("Z", "+00:00")
    # rivet writes nanoseconds; datetime takes microseconds.
    head, dot, rest = text.partition(".")
    if dot:
        digits = rest[:len(rest) - len(rest.lstrip("0123456789"))]
        text = f"{head}.{digits[:6]}{rest[len(digits):]}"
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def _chunk_column(item: dict[str, Any]) -> str | None:
    plan = item.get("resolved_plan")
    strategy = plan.get("strategy") if isinstance(plan, dict) else None
    if not isinstance(strategy, dict):
        return None
    for body in strategy.values():
        if isinstance(body, dict) and isinstance(body.get("column"), str):
            return str(body["column"])
    return None


def is_rivet_artifact(data: Any) -> bool:
    """Whether decoded JSON is a rivet plan artifact (one object, or an array of them)."""
    items = data if isinstance(data, list) else [data]
    return bool(items) and all(isinstance(i, dict) and "export_name" in i
                               and isinstance(i.get("computed"), dict) for i in items)


def artifact_facts(item: dict[str, Any], shown: str) -> ExportFacts:
    """One artifact's facts (raises `ValidationError` for values out of the facts' bounds)."""
    computed = item["computed"]
    raw = item.get("diagnostics")
    diagnostics: dict[str, Any] = raw if isinstance(raw, dict) else {}
    fields: dict[str, Any] = {}
    if (rows := _count(computed.get("row_estimate"))) is not None:
        fields["row_estimate"] = rows
    if (width := _count(computed.get("avg_row_bytes"))) is not None:
        fields["avg_row_bytes"] = width
    if isinstance(computed.get("uses_index"), bool):
        fields["plan_uses_index"] = computed["uses_index"]
    if isinstance(diagnostics.get("verdict"), str):
        fields["verdict"] = diagnostics["verdict"]
    warnings = diagnostics.get("warnings")
    if isinstance(warnings, list) and all(isinstance(w, str) for w in warnings):
        fields["warnings"] = warnings
    ranges = computed.get("chunk_ranges")
    column = _chunk_column(item)
    if (isinstance(ranges, list) and ranges and column is not None
            and all(isinstance(r, list) and len(r) == 2 for r in ranges)
            and all(isinstance(v, int) and not isinstance(v, bool) and abs(v) <= I64_MAX
                    for r in ranges for v in r)):
        low, high = int(ranges[0][0]), int(ranges[-1][1])
        fields["columns"] = {column: ColumnFacts(min=str(low), max=str(high))}
        if high >= low:
            fields["key_span"] = high - low + 1
    version = item.get("rivet_version")
    created = item.get("created_at")
    fields["notes"] = [f"facts from the rivet {version or '?'} plan artifact {shown}"
                       + (f" created {created}" if isinstance(created, str) else "")]
    return ExportFacts.model_validate(fields)


def facts_from_artifacts(documents: list[tuple[str, Any]]) -> tuple[FactsFile, list[Problem]]:
    """A facts file from decoded rivet plan artifacts, `(shown path, JSON)` each, in order."""
    exports: dict[str, ExportFacts] = {}
    problems: list[Problem] = []
    created: list[datetime] = []
    for shown, data in documents:
        if not is_rivet_artifact(data):
            problems.append(Problem(file=shown, message="not a rivet plan artifact (an object "
                                                        "or array of objects with export_name "
                                                        "and computed); not used"))
            continue
        for item in data if isinstance(data, list) else [data]:
            name = str(item["export_name"])
            if name in exports:
                problems.append(Problem(file=shown, field="export_name",
                                        message=f"a second artifact of export {name!r}; the "
                                                f"first one is used", severity="warning"))
                continue
            try:
                exports[name] = artifact_facts(item, shown)
            except ValidationError as exc:
                first = exc.errors(include_url=False)[0]
                problems.append(Problem(file=shown, field=name,
                                        message=f"{first['msg']}; export {name!r} is planned "
                                                f"without facts"))
                continue
            if (when := _when(item.get("created_at"))) is not None:
                created.append(when)
    return FactsFile(format=FACTS_FORMAT, captured_at=min(created) if created else None,
                     exports=exports), problems
