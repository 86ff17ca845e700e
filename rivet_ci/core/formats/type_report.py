"""The type report as `rivet-ci check` writes it: the `types` section of its JSON document and
its text lines (docs/compatibility.md#type-fidelity documents both)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rivet_ci.core.fidelity.models import (
    UNSAFE_MAPPING_CODE,
    ColumnVerdict,
    ExportTypes,
    TypeReport,
)


def _violations(export: ExportTypes, strict: bool) -> list[dict[str, Any]]:
    """rivet's own `violations` list: the fidelity ones, then the format (CSV) ones, each in
    column order; a target failure has none."""
    listed = [(c.column, c.fidelity, c.violation) for c in export.columns if c.violation] + [
        (c.column, "unsupported", c.format_violation) for c in export.columns
        if c.format_violation]
    return [{"column_name": column, "fidelity": fidelity, "message": message, "fatal": strict}
            for column, fidelity, message in listed]


def _column(c: ColumnVerdict) -> dict[str, Any]:
    return {**c.model_dump(mode="json"), "status": c.status}


def types_document(report: TypeReport, *, origin: str, strict: bool,
                   lines: Mapping[tuple[str, str], int]) -> dict[str, Any]:
    """The `types` section of `rivet-ci check --format json` (`lines`: each export's YAML line
    by (config, export))."""
    exports = []
    for e in report.exports:
        exports.append({
            "config": e.config, "line": lines.get((e.config, e.export)), "export": e.export,
            "format": e.format, "relation": e.relation, "unknown": e.unknown,
            "refused": len(e.refused), "target_failures": any(
                c.target_status == "fail" for c in e.columns),
            "columns": [_column(c) for c in e.columns],
            "violations": _violations(e, strict)})
    refused = len(report.refused)
    return {
        "from": origin, "target": report.target, "strict": strict,
        "exports": exports, "refused": refused,
        "unknown": sum(1 for e in report.exports if e.unknown is not None) + sum(
            len(e.unknown_columns) for e in report.exports),
        "code": UNSAFE_MAPPING_CODE if refused else None,
    }


def _why(c: ColumnVerdict, target: str | None) -> list[str]:
    """Each reason `--strict` refuses the column: rivet's violations, else the target's."""
    listed = [v for v in (c.violation, c.format_violation) if v is not None]
    return listed or [f"column '{c.column}' ({c.rivet_type}) on {target}: "
                      f"{c.target_note or 'does not map'}"]


def types_text(report: TypeReport, *, origin: str, strict: bool,
               lines: Mapping[tuple[str, str], int], every_column: bool) -> list[str]:
    """Text lines: each column `--strict` refuses and each unknown (with `every_column`, a
    table of every column first), then a summary line."""
    out: list[str] = []
    for e in report.exports:
        line = lines.get((e.config, e.export))
        where = f"{e.config}:{line}" if line is not None else e.config
        if every_column and e.columns:
            out.append(f"{where}: {e.export}"
                       + (f"  [target: {report.target}]" if report.target else ""))
            out.extend(_table(e, report.target is not None))
        if e.unknown is not None:
            out.append(f"unknown: {where}: {e.export}: {e.unknown}")
        for c in e.columns:
            if c.refused_by:
                out.extend(f"unsafe: {where}: {e.export}: {why} [{c.code}]"
                           for why in _why(c, report.target))
            elif c.unknown is not None:
                out.append(f"unknown: {where}: {e.export}.{c.column}: {c.unknown}")
    columns = sum(len(e.columns) for e in report.exports)
    warnings = sum(1 for e in report.exports for c in e.columns if c.status == "warning")
    unknown = (sum(1 for e in report.exports if e.unknown is not None)
               + sum(len(e.unknown_columns) for e in report.exports))
    refused = len(report.refused)
    mode = ", ".join(x for x in (origin, f"target {report.target}" if report.target else "",
                                 "strict" if strict else "") if x)
    out.append(f"Type fidelity ({mode}): {len(report.exports)} export(s), {columns} column(s): "
               f"{refused} unsafe, {warnings} warning(s), {unknown} unknown.")
    if refused and not strict:
        out.append("  `rivet check --strict` refuses the unsafe ones (exit 1), and `rivet run` "
                   "fails on an unsupported column; add --strict to gate on them.")
    return out


def _table(e: ExportTypes, with_target: bool) -> list[str]:
    head = ["Column", "Source type", "Rivet type", "Arrow type", "Fidelity"]
    if with_target:
        head += ["Target type", "Status"]
    rows = [head]
    for c in e.columns:
        if c.unknown is not None:
            rows.append([c.column, "?", "?", "?", "unknown"] + (["?", "?"] if with_target
                                                                  else []))
            continue
        row = [c.column, c.source_type or "?", c.rivet_type or "?", c.arrow_type or "-",
               c.fidelity or "?"]
        if with_target:
            row += [c.target_type or "-", c.target_status or "?"]
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    return ["  " + "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(r)).rstrip()
            for r in rows]
