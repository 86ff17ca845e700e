"""Facts → signals (spec §3): what the scoring rules read about one export.

rivet's preflight turns observations (row estimate, index use, min/max of the range column) into
derived signals: cursor quality, chunk geometry, a verdict and a list of warnings. This module
reproduces that derivation. With no facts (preflight failed or no entry in the facts file) the
export gets verdict `unknown (preflight failed)` and no hints, which the scoring rules turn into a
weaker, low-confidence recommendation.
"""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from rivet_ci.core.config import ExportConfig, Strategy
from rivet_ci.core.facts import ExportFacts

CursorQuality = Literal["strong_monotonic", "weak_time", "weak_multi_candidate", "fallback_only",
                        "none"]
PREFLIGHT_FAILED_VERDICT = "unknown (preflight failed)"
PREFLIGHT_FAILED_WARNING = "preflight diagnostics unavailable"
OVERSIZED_CHUNK_BYTES = 256 * 1024 * 1024
_INT = re.compile(r"^[+-]?\d+$")
_ROW_NUMBER = re.compile(r"\brow_number\s*\(", re.IGNORECASE)


class Signals(BaseModel):
    """Derived, explainable inputs of the score. Scoring reads nothing else."""

    model_config = ConfigDict(frozen=True)

    strategy: Strategy
    row_estimate: int | None = None
    avg_row_bytes: int | None = None
    uses_index: bool = False
    range_column: str | None = None
    cursor_range_observed: bool = False
    cursor_quality: CursorQuality = "none"
    chunk_count: int | None = None
    freshness: Literal["recent"] | None = None
    reconcile_required: bool = False
    verdict: str = PREFLIGHT_FAILED_VERDICT
    warnings: tuple[str, ...] = ()
    sparse_range_risk: bool = False
    preflight_failed: bool = False


def derive_signals(export: ExportConfig, facts: ExportFacts | None) -> Signals:
    """Derive the signals of one export from its config and (possibly missing) facts."""
    freshness: Literal["recent"] | None = (
        "recent" if export.mode == "time_window" and (export.days_window or 0) <= 7 else None
    )
    if facts is None or facts.preflight_error is not None:
        return Signals(
            strategy=export.strategy, range_column=export.range_column, freshness=freshness,
            reconcile_required=export.reconcile_required, verdict=PREFLIGHT_FAILED_VERDICT,
            warnings=(PREFLIGHT_FAILED_WARNING,), preflight_failed=True,
        )
    range_column = export.range_column
    column = facts.columns.get(range_column) if range_column else None
    indexed = bool(column and column.indexed)
    uses_index = indexed or bool(facts.plan_uses_index)
    observed = bool(column and column.range_skipped is None
                    and column.min is not None and column.max is not None)
    low = _as_int(column.min) if observed and column else None
    high = _as_int(column.max) if observed and column else None
    rows = facts.row_estimate
    chunk_count = _chunk_count(export, rows, column.min if observed and column else None,
                               column.max if observed and column else None)
    verdict = facts.verdict or compute_verdict(
        uses_index=uses_index, has_cursor=bool(export.cursor_column), rows=rows,
        avg_row_bytes=facts.avg_row_bytes, parallel=export.parallel,
    )
    if facts.warnings is not None:
        warnings = tuple(facts.warnings)
    else:
        warnings = tuple(preflight_warnings(
            export, rows=rows, avg_row_bytes=facts.avg_row_bytes,
            max_connections=facts.max_connections, low=low, high=high))
        if not warnings and verdict.upper() != "EFFICIENT":
            warnings = (f"Verdict {verdict}: no specific risk found; review the plan before a "
                        f"large run.",)
    return Signals(
        strategy=export.strategy, row_estimate=rows, avg_row_bytes=facts.avg_row_bytes,
        uses_index=uses_index, range_column=range_column, cursor_range_observed=observed,
        cursor_quality=cursor_quality(export, uses_index=uses_index, observed=observed),
        chunk_count=chunk_count, freshness=freshness,
        reconcile_required=export.reconcile_required, verdict=verdict, warnings=warnings,
        sparse_range_risk=any(is_sparse_warning(w) for w in warnings),
    )


def is_sparse_warning(warning: str) -> bool:
    lowered = warning.lower()
    return "sparse" in lowered and "range" in lowered


def cursor_quality(export: ExportConfig, *, uses_index: bool, observed: bool) -> CursorQuality:
    """ADR-0007's cursor quality from index use (I) and an observed range (R)."""
    if export.mode == "incremental":
        if export.incremental_cursor_mode == "coalesce":
            if observed:
                return "weak_multi_candidate"
            return "weak_time" if uses_index else "none"
        if uses_index and observed:
            return "strong_monotonic"
        if uses_index:
            return "weak_time"
        return "weak_multi_candidate" if observed else "none"
    if export.mode == "time_window":
        return "weak_time" if observed else "none"
    return "none"


def compute_verdict(
    *, uses_index: bool, has_cursor: bool, rows: int | None, avg_row_bytes: int | None,
    parallel: int,
) -> str:
    """rivet's preflight verdict (first matching rule wins; unknown rows count as 0)."""
    n = rows or 0
    if uses_index:
        if has_cursor and n <= 10_000_000:
            return "EFFICIENT"
        return "ACCEPTABLE"
    if rows is not None and rows < 100_000:
        return "ACCEPTABLE"
    if n <= 1_000_000:
        return "DEGRADED"
    if has_cursor and n <= 50_000_000:
        return "DEGRADED"
    if avg_row_bytes is not None:
        per_row = min(max(18 + avg_row_bytes * 87 // 4096, 18), 128)
        if 16 + max(parallel, 1) * per_row <= 2048:
            return "DEGRADED"
    return "UNSAFE"


def preflight_warnings(
    export: ExportConfig, *, rows: int | None, avg_row_bytes: int | None,
    max_connections: int | None, low: int | None, high: int | None,
) -> list[str]:
    """rivet's preflight warnings, in rivet's order."""
    out: list[str] = []
    n = rows or 0
    chunked = export.mode == "chunked"
    keyset = chunked and export.chunk_by_key is not None
    dense = bool(export.chunk_dense)
    range_sliced = chunked and not keyset and not dense
    if export.parallel > 1 and (max_connections is None or export.parallel >= max_connections):
        limit = "unknown" if max_connections is None else str(max_connections)
        out.append(f"parallel={export.parallel} may exhaust the source's connection limit "
                   f"(max_connections {limit}).")
    density: float | None = None
    if low is not None and high is not None:
        width = max(high - low, 1)
        density = n / width
        if (range_sliced and export.chunk_by_days is None and n > 0 and density < 0.1
                and _ceil_div(width, export.effective_chunk_size) > 10):
            out.append(f"Sparse key range: ~{n} rows over a range of {width} (density "
                       f"{density:.4f}) — most chunk windows will be empty.")
    if chunked and export.chunk_by_days is None and n > 0 and avg_row_bytes:
        per_chunk: int | None
        if dense or keyset:
            per_chunk = export.effective_chunk_size
        elif density is not None:
            per_chunk = round(density * export.effective_chunk_size)
        else:
            per_chunk = None
        if per_chunk is not None:
            per_chunk = min(max(per_chunk, 1), n)
            if per_chunk * avg_row_bytes > OVERSIZED_CHUNK_BYTES:
                mib = per_chunk * avg_row_bytes // (1024 * 1024)
                out.append(f"Oversized chunk: ~{per_chunk} rows × {avg_row_bytes} B ≈ {mib} MiB "
                           f"per chunk — lower chunk_size.")
    if dense or _ROW_NUMBER.search(export.query or ""):
        out.append("Dense surrogate (ROW_NUMBER) chunking — every chunk query numbers the "
                   "whole result on the source.")
    if export.parallel > 1 and n > 5_000_000:
        out.append(f"parallel={export.parallel} over ~{n} rows — high memory use on the source "
                   f"and the runner.")
    if chunked and not export.chunk_checkpoint and not (rows is not None and rows < 100_000):
        out.append("Chunked export without chunk_checkpoint — a failed run restarts from the "
                   "first chunk.")
    return out


def _ceil_div(a: int, b: int) -> int:
    """Exact ceil(a / b) for integers (float division loses precision on 64-bit key ranges)."""
    return -(-a // b)


def _as_int(value: str | None) -> int | None:
    if value is None:
        return None
    text = value.strip()
    if not _INT.match(text):
        return None
    try:
        return int(text)
    except ValueError:  # more digits than Python converts (sys.get_int_max_str_digits)
        return None


def _day_number(value: str) -> int | None:
    text = value.strip()
    seconds = _as_int(text)
    if seconds is not None:  # unix seconds
        return seconds // 86_400
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).date().toordinal()
    except ValueError:
        try:
            return date.fromisoformat(text[:10]).toordinal()
        except ValueError:
            return None


def _chunk_count(
    export: ExportConfig, rows: int | None, low_text: str | None, high_text: str | None
) -> int | None:
    if export.mode != "chunked" or export.chunk_by_key is not None:
        return None  # keyset pagination has no window count
    if export.chunk_dense:
        return _ceil_div(rows, export.effective_chunk_size) if rows is not None else None
    if low_text is None or high_text is None:
        return None
    if export.chunk_by_days is not None:
        low, high, size = _day_number(low_text), _day_number(high_text), export.chunk_by_days
    else:
        low, high, size = _as_int(low_text), _as_int(high_text), export.effective_chunk_size
    if low is None or high is None or high < low:
        return None
    span = high - low + 1
    if export.chunk_count is not None:
        size = _ceil_div(span, export.chunk_count)
    return _ceil_div(span, size)
