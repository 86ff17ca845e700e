"""rivet's preflight diagnostics (rivet-plan.md §5): verdict, warnings, suggestion, profile.

Everything here is computed from the (possibly overlaid) preflight row estimate, the config and the
observed range of the range column, exactly as rivet 0.24.5 does, with rivet's texts. The texts
are module constants: `docs/scoring-rules.md` quotes them and a test checks that it does.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from rivet_ci.core.common.compiled import compiled_function
from rivet_ci.core.common.limits import I64_MAX, I64_MIN
from rivet_ci.core.common.patterns import INTEGER
from rivet_ci.core.config.models import ExportConfig

HEAVY_CHUNK_BYTES = 268_435_456  # 256 MiB
PREFLIGHT_FAILED_VERDICT = "unknown (preflight failed)"
PREFLIGHT_FAILED_WARNING = "preflight diagnostics unavailable"

# §5.5, in rivet's order. `⟨…⟩` of the spec are `{…}` fields here.
WARN_CONNECTIONS_UNKNOWN = (
    "Could not fetch DB max_connections — connection limit check skipped. Ask your DBA to verify "
    "your user has access to DB server variables, then verify your parallel setting manually.")
WARN_CONNECTIONS = (
    "parallel={parallel} meets or exceeds DB max_connections={max_connections} — workers will "
    "compete for connections and some may fail. Reduce parallel to at most {limit} (leave "
    "headroom for other connections).")
WARN_SPARSE = (
    "Sparse key range: ~{empty}% of chunk windows will be empty (range {min}..{max}, ~{rows} "
    "rows). Switch to keyset pagination (`chunk_by_key: <unique key>`) — it pages by ROWS and is "
    "immune to a sparse/gappy key — or use `chunk_count: N`, or incremental mode.")
WARN_HEAVY_CHUNK = (
    "Heavy chunk: chunk_size={chunk_size} makes each chunk query scan ~{mb} MB (~{rows_per_chunk} "
    "rows × ~{width} B/row), holding one statement — and its snapshot/locks — open that long "
    "(the source-harm a smaller chunk avoids). Consider chunk_size around {suggested} to keep "
    "each chunk under ~256 MB.")
WARN_DENSE_SURROGATE = (
    "Dense surrogate (ROW_NUMBER) requires a global sort -- this adds CPU and I/O cost "
    "proportional to the full result set. For very large or hot tables, consider incremental "
    "mode on an indexed cursor column, or a precomputed dense key.")
WARN_PARALLEL_MEMORY = (
    "Parallel={parallel} on ~{millions}M rows: each worker buffers batch_size rows in memory. "
    "With wide rows this can cause high RSS. Monitor with memory_threshold_mb or reduce "
    "parallel/batch_size.")
WARN_NO_CHECKPOINT = (
    "No chunk_checkpoint: a crashed or interrupted run re-reads the whole table from the start "
    "(no resume). Add `chunk_checkpoint: true` for crash-recovery — safe to enable on any table: "
    "it does NOT change your clean re-run semantics (a clean re-run still does a full pass and "
    "picks up updates). Recommended for large tables or unreliable links. (Keyset append-only "
    "incremental is the separate `keyset_incremental` opt-in.)")

# §5.7: validate_plan entries reachable in a plan (rule id, text).
VALIDATE_QUALITY_CHUNKED = (
    "quality-chunked-partial",
    "export '{name}': quality checks run per part file; row_count and unique_columns checks "
    "apply to each chunk independently, not the full dataset — results may be misleading")
VALIDATE_UNIQUE_NO_CAP = (
    "quality-unique-no-cap",
    "export '{name}': unique_columns is configured without unique_max_entries — uniqueness "
    "tracking can grow unbounded on high-cardinality columns. Set unique_max_entries to cap "
    "memory usage (e.g. unique_max_entries: 1000000).")
VALIDATE_STDOUT_PHANTOM = (
    "stdout-manifest-phantom",
    "export '{name}': manifest records a generated filename that does not correspond to a real "
    "file path when using stdout destination")

# §5.8: the line appended to an empty list when the verdict is not EFFICIENT and no suggestion.
FALLBACK_LINE = ("verdict {verdict} but preflight collected no specific warnings — review "
                 "`rivet check` output for context")

# §5.6: the suggestion's parts.
SUGGEST_LARGE = "Large dataset (~{millions}M rows)."
SUGGEST_FULL_TO_INCREMENTAL = ("Switch to incremental mode with an indexed cursor column to "
                               "avoid re-reading unchanged rows.")
SUGGEST_ADD_PARALLEL = "Add parallel > 1 to speed up chunked extraction."
SUGGEST_SAFE_PROFILE = "Use 'safe' tuning profile to limit database impact."
SUGGEST_NO_INDEX = "No index detected -- full table scan."
SUGGEST_ADD_CURSOR = "Add an indexed cursor column and switch to incremental mode."
SUGGEST_CHUNK_INDEX = "Create an index on '{column}' to speed up range scans."
SUGGEST_TIME_INDEX = "Create an index on '{column}' for efficient time-window filtering."
SUGGEST_CONSIDER_CURSOR = "Consider adding a cursor column for incremental mode."
SUGGEST_UNSAFE_SCAN = "~{millions}M row scan without index support."
SUGGEST_UNSAFE_FULL = ("Add an indexed cursor column and use incremental mode to avoid full "
                       "re-reads.")
SUGGEST_UNSAFE_KEYSET = ("Create an index on '{column}' (keyset needs a unique index), or use "
                         "mode: full for one snapshot scan.")
SUGGEST_UNSAFE_CHUNKED = ("Create an index on '{column}'. Consider reducing chunk_size or adding "
                          "parallel workers.")
SUGGEST_UNSAFE_TIME = "Create an index on '{column}'. Reduce days_window if possible."
SUGGEST_UNSAFE_INCREMENTAL = "Create an index on '{column}'."
SUGGEST_OFF_PEAK = "Use 'safe' tuning profile. Extract during off-peak hours."


# The tables of docs/scoring-rules.md (rendered by tests/support/generated/scoring_docs.py), in
# rivet's order; the warnings' own table, `WARNING_RULES`, is below `preflight_warnings`.
VALIDATE_RULES: tuple[tuple[tuple[str, str], str], ...] = (
    (VALIDATE_QUALITY_CHUNKED, "`quality:` set and the resolved strategy is chunked or keyset"),
    (VALIDATE_UNIQUE_NO_CAP, "`quality.unique_columns` non-empty and `unique_max_entries` unset"),
    (VALIDATE_STDOUT_PHANTOM, "`destination.type: stdout`"),
)
SUGGESTION_RULES: tuple[tuple[str, str, str], ...] = (
    ("EFFICIENT", "always", "(none)"),
    ("ACCEPTABLE", "rows ≤ 10,000,000", "(none)"),
    ("ACCEPTABLE", "rows > 10,000,000: first", SUGGEST_LARGE),
    ("ACCEPTABLE", "then, mode full", SUGGEST_FULL_TO_INCREMENTAL),
    ("ACCEPTABLE", "then, mode chunked and parallel ≤ 1", SUGGEST_ADD_PARALLEL),
    ("ACCEPTABLE", "then, otherwise", SUGGEST_SAFE_PROFILE),
    ("DEGRADED", "first, without an index", SUGGEST_NO_INDEX),
    ("DEGRADED", "then, mode full without `cursor_column`", SUGGEST_ADD_CURSOR),
    ("DEGRADED", "then, mode chunked without an index (column: chunk_column, else "
                 "chunk_by_key, else `chunk_column`)", SUGGEST_CHUNK_INDEX),
    ("DEGRADED", "then, mode time_window without an index", SUGGEST_TIME_INDEX),
    ("DEGRADED", "then, otherwise without `cursor_column` and not chunked",
     SUGGEST_CONSIDER_CURSOR),
    ("DEGRADED", "last, always", SUGGEST_SAFE_PROFILE),
    ("UNSAFE", "first (millions = rows div 1,000,000, unknown = 0)", SUGGEST_UNSAFE_SCAN),
    ("UNSAFE", "then, mode full", SUGGEST_UNSAFE_FULL),
    ("UNSAFE", "then, mode chunked with `chunk_by_key`", SUGGEST_UNSAFE_KEYSET),
    ("UNSAFE", "then, other mode chunked", SUGGEST_UNSAFE_CHUNKED),
    ("UNSAFE", "then, mode time_window", SUGGEST_UNSAFE_TIME),
    ("UNSAFE", "then, mode incremental", SUGGEST_UNSAFE_INCREMENTAL),
    ("UNSAFE", "last, always", SUGGEST_OFF_PEAK),
    ("any", "MongoDB source", "(none)"),
    ("not EFFICIENT", "empty list and no suggestion", FALLBACK_LINE),
)


class Range(NamedTuple):
    """The observed min/max of the range column, as the database rendered them."""

    min: str
    max: str


def parse_i64(text: str) -> int | None:
    """Rust `str::parse::<i64>` on the untrimmed text: sign and ASCII digits only."""
    # 20 characters hold every i64. Plain ASCII digits, nearly every observed bound, need no
    # regex (~1,800 instructions less a bound).
    plain = text.isdigit() and text.isascii()
    if len(text) > 20 or not (plain or INTEGER.fullmatch(text)):
        return None
    value = int(text)
    return value if I64_MIN <= value <= I64_MAX else None


def config_value(export: ExportConfig, name: str) -> Any:
    """A config key the planner reads (None when the model does not carry it)."""
    if name not in _EXPORT_FIELDS:
        return None
    return getattr(export, name)


_EXPORT_FIELDS = frozenset(ExportConfig.model_fields)


def _quality_value(export: ExportConfig, name: str) -> Any:
    quality = config_value(export, "quality")
    if quality is None:
        return None
    if isinstance(quality, dict):
        return quality.get(name)
    return getattr(quality, name, None)


def destination_type(export: ExportConfig) -> str | None:
    destination = config_value(export, "destination")
    if destination is None:
        return None
    if isinstance(destination, dict):
        value = destination.get("type")
    else:
        value = getattr(destination, "type", None)
    return str(value) if value is not None else None


def compute_verdict(
    *, uses_index: bool, has_cursor: bool, rows: int | None, avg_row_bytes: int | None,
    parallel: int,
) -> str:
    """rivet's preflight verdict (§5.2; first matching rule wins; unknown rows count as 0)."""
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
    if avg_row_bytes is not None and peak_memory_mb(parallel, avg_row_bytes) <= 2048:
        return "DEGRADED"
    return "UNSAFE"


def peak_memory_mb(parallel: int, width: int) -> int:
    """rivet's memory model (`src/tuning/memory.rs`): 16 + p × clamp(18 + w × 87 div 4096)."""
    return 16 + max(parallel, 1) * min(max(18 + max(width, 0) * 87 // 4096, 18), 128)


def recommended_profile(*, uses_index: bool, rows: int | None, parallel: int,
                        preflight_failed: bool = False) -> str:
    """§5.3."""
    if preflight_failed:
        return "balanced"
    n = rows or 0
    if uses_index:
        if n <= 1_000_000:
            return "fast"
        return "balanced" if n <= 10_000_000 else "safe"
    if n <= 100_000:
        return "safe" if parallel > 1 else "balanced"
    return "balanced" if n <= 1_000_000 else "safe"


class PreflightWarning:
    """One preflight warning (§5.5): its name and condition as `docs/scoring-rules.md` prints
    them, rivet's text, and its condition (`when`) and the text's fields (`values`, keyword
    arguments of `str.format`) as expressions over the warning inputs (`_WARNING_INPUTS`)."""

    __slots__ = ("condition", "message", "name", "values", "when")

    def __init__(self, name: str, condition: str, message: str, *, when: str,
                 values: str | None = None) -> None:
        self.name, self.condition, self.message = name, condition, message
        self.when, self.values = when, values


# What the warnings read, each an expression over `preflight_warnings`' arguments and the inputs
# above it. The chunk inputs are computed only for a chunked export (rivet reads them there).
_WARNING_INPUTS = {
    "parallel": "export.parallel",
    "chunked": "export.mode == 'chunked' and not as_snapshot",
    "keyset": "export.chunk_by_key is not None and not as_snapshot",
    "chunk_size": "export.chunk_size",
    "by_days": "export.chunk_by_days is not None",
    "low": "parse_i64(observed.min) if chunked and observed else None",
    "high": "parse_i64(observed.max) if chunked and observed else None",
    # rows per id of the observed range (needs i64 bounds and a row count)
    "density": "(rows / max(high - low, 1) if low is not None and high is not None "
               "and rows is not None else None)",
    # rows one chunk query reads, clamped to 1..rows: the chunk size for a keyset chunking,
    # else the density's share of it (Rust's round: half away from zero)
    "per_chunk": "(min(max(chunk_size if keyset "
                 "else _round_half_away(density * chunk_size), 1), rows) "
                 "if chunked and not by_days and rows and rows > 0 and avg_row_bytes "
                 "and avg_row_bytes > 0 and (keyset or density is not None) "
                 "else None)",
    "chunk_bytes": "per_chunk * avg_row_bytes if per_chunk is not None else None",
}

WARNING_RULES: tuple[PreflightWarning, ...] = (
    PreflightWarning(
        "connection limit", "`parallel` > 1 and max_connections unknown",
        WARN_CONNECTIONS_UNKNOWN, when="parallel > 1 and max_connections is None"),
    PreflightWarning(
        "connection limit", "`parallel` > 1 and `parallel` ≥ max_connections M (limit = "
                            "max(M − 3, 1))", WARN_CONNECTIONS,
        when="parallel > 1 and max_connections is not None and parallel >= max_connections",
        values="parallel=parallel, max_connections=max_connections, "
               "limit=max(max_connections - 3, 0, 1)"),
    PreflightWarning(
        "sparse key range", "mode chunked, no `chunk_by_key`, no `chunk_by_days`; rows "
                            "known and > 0; min and max parse as plain i64; span = max(max − "
                            "min, 1), density = rows / span < 0.1 and ceil(span / chunk_size) > "
                            "10; empty = trunc(clamp(1 − density, 0, 1) × 100)", WARN_SPARSE,
        when="(chunked and not keyset and not by_days and rows "
             "and density is not None and rows > 0 and density < 0.1 "
             "and -(-max(high - low, 1) // chunk_size) > 10)",
        values="empty=int(min(max(1 - density, 0.0), 1.0) * 100), min=observed.min, "
               "max=observed.max, rows=rows"),
    PreflightWarning(
        "heavy chunk", "mode chunked, no `chunk_by_days`, rows > 0, avg_row_bytes > 0; rows "
                       "per chunk = chunk_size when keyset, else round(density × "
                       "chunk_size) (half away from zero; needs i64 min/max), clamped to "
                       "1..rows; fires when rows per chunk × width > 268,435,456",
        WARN_HEAVY_CHUNK, when="chunk_bytes is not None and chunk_bytes > HEAVY_CHUNK_BYTES",
        values="chunk_size=chunk_size, mb=chunk_bytes // 1_048_576, rows_per_chunk=per_chunk, "
               "width=avg_row_bytes, "
               "suggested=max(chunk_size * HEAVY_CHUNK_BYTES // chunk_bytes, 1)"),
    PreflightWarning(
        "dense surrogate", "mode chunked and the inline `query`, upper-cased, contains "
                           "`ROW_NUMBER`", WARN_DENSE_SURROGATE,
        when="chunked and 'ROW_NUMBER' in (export.query or '').upper()"),
    PreflightWarning(
        "parallel memory", "`parallel` > 1 and rows (unknown = 0) > 5,000,000; millions = "
                           "rows div 1,000,000", WARN_PARALLEL_MEMORY,
        when="parallel > 1 and (rows or 0) > 5_000_000",
        values="parallel=parallel, millions=(rows or 0) // 1_000_000"),
    PreflightWarning(
        "missing checkpoint", "(mode chunked or `chunk_by_key`), no `chunk_checkpoint`, no "
                              "`keyset_incremental`, and not (rows known and < 100,000)",
        WARN_NO_CHECKPOINT,
        when="((chunked or keyset) and not export.chunk_checkpoint "
             "and not export.keyset_incremental and not (rows is not None and rows < 100_000))"),
)


def _warnings_function() -> Callable[..., list[str]]:
    """`preflight_warnings`' body, written from the table: the inputs, then each warning's
    condition in order, its text formatted with its values."""
    body = [f"{name} = {source}" for name, source in _WARNING_INPUTS.items()]
    body.append("out = []")
    names: dict[str, Any] = {"parse_i64": parse_i64, "_round_half_away": _round_half_away,
                             "HEAVY_CHUNK_BYTES": HEAVY_CHUNK_BYTES}
    for n, rule in enumerate(WARNING_RULES):
        names[f"_text{n}"] = rule.message
        text = f"_text{n}.format({rule.values})" if rule.values else f"_text{n}"
        body += [f"if {rule.when}:", f"    out.append({text})"]
    body.append("return out")
    return compiled_function(
        "warnings", "export, rows, avg_row_bytes, max_connections, observed, as_snapshot",
        body, names)


def preflight_warnings(
    export: ExportConfig, *, rows: int | None, avg_row_bytes: int | None,
    max_connections: int | None, observed: Range | None, as_snapshot: bool = False,
) -> list[str]:
    """The preflight warnings of §5.5 (`WARNING_RULES`), in rivet's order. `as_snapshot`: a
    chunked export downgraded to a snapshot (the small-table escape) is checked as the single
    pass it runs as — rivet 0.32.2 drops its sparse-range, chunk and checkpoint warnings."""
    return _WARNINGS(export, rows, avg_row_bytes, max_connections, observed, as_snapshot)


def _round_half_away(value: float) -> int:
    """Rust `f64::round`: half away from zero."""
    whole = int(value)
    frac = value - whole
    if frac >= 0.5:
        return whole + 1
    if frac <= -0.5:
        return whole - 1
    return whole


VALIDATE_REJECTIONS = (
    ("stdout-no-split", "export '{name}': max_file_size cannot be used with stdout destination — "
                        "file splitting requires named output files"),
    ("stdout-no-chunked", "export '{name}': chunked mode cannot be used with stdout destination — "
                          "each chunk produces a separate binary stream; concatenated output is "
                          "unusable"),
    ("stdout-no-keyset", "export '{name}': keyset pagination cannot be used with stdout "
                         "destination — each page produces a separate binary stream; "
                         "concatenated output is unusable"),
)


def validate_rejection(export: ExportConfig, *, resolved: str) -> tuple[str, str] | None:
    """The first `validate_plan` rejection (§4.3) as (field, `[rule] text`), or None."""
    if destination_type(export) != "stdout":
        return None
    split, chunked, keyset = VALIDATE_REJECTIONS
    for (rule, text), field, applies in (
            (split, "max_file_size", config_value(export, "max_file_size") is not None),
            (chunked, "destination", resolved == "chunked"),
            (keyset, "destination", resolved == "keyset")):
        if applies:
            return field, f"[{rule}] {text.format(name=export.name)}"
    return None


def validate_plan(export: ExportConfig, *, resolved: str,
                  ) -> tuple[tuple[str, str] | None, list[str]]:
    """`validate_plan` (§4.3, §5.7): the first rejection (`validate_rejection`) and the warnings
    (`validate_entries`). Both hinge on a `quality:` section or a stdout destination; an export
    with neither — nearly every export — has no rejection and no entry, read once here."""
    if export.quality is None and export.destination.type != "stdout":
        return None, []
    return (validate_rejection(export, resolved=resolved),
            validate_entries(export, resolved=resolved))


def validate_entries(export: ExportConfig, *, resolved: str) -> list[str]:
    """`validate_plan` warnings of §5.7 that a plan can reach, as `[rule] text` entries.

    `resolved` is the resolved strategy token (`full`, `incremental`, `chunked`, `keyset`,
    `timewindow`).
    """
    out: list[str] = []
    name = export.name
    if config_value(export, "quality") is not None and resolved in ("chunked", "keyset"):
        rule, text = VALIDATE_QUALITY_CHUNKED
        out.append(f"[{rule}] {text.format(name=name)}")
    unique_columns = _quality_value(export, "unique_columns")
    if unique_columns and _quality_value(export, "unique_max_entries") is None:
        rule, text = VALIDATE_UNIQUE_NO_CAP
        out.append(f"[{rule}] {text.format(name=name)}")
    if destination_type(export) == "stdout":
        rule, text = VALIDATE_STDOUT_PHANTOM
        out.append(f"[{rule}] {text.format(name=name)}")
    return out


def suggestion(export: ExportConfig, *, verdict: str, rows: int | None,
               uses_index: bool) -> str | None:
    """rivet's `build_suggestion` (§5.6): one advisory line per verdict and mode, or None."""
    n = rows or 0
    millions = n // 1_000_000
    mode = export.mode
    chunk_col = export.chunk_column or export.chunk_by_key or "chunk_column"
    parts: list[str] = []
    if verdict == "EFFICIENT":
        return None
    if verdict == "ACCEPTABLE":
        if n <= 10_000_000:
            return None
        parts.append(SUGGEST_LARGE.format(millions=millions))
        if mode == "full":
            parts.append(SUGGEST_FULL_TO_INCREMENTAL)
        elif mode == "chunked" and export.parallel <= 1:
            parts.append(SUGGEST_ADD_PARALLEL)
        else:
            parts.append(SUGGEST_SAFE_PROFILE)
        return " ".join(parts)
    if verdict == "DEGRADED":
        if not uses_index:
            parts.append(SUGGEST_NO_INDEX)
        if mode == "full" and not export.cursor_column:
            parts.append(SUGGEST_ADD_CURSOR)
        elif mode == "chunked" and not uses_index:
            parts.append(SUGGEST_CHUNK_INDEX.format(column=chunk_col))
        elif mode == "time_window" and not uses_index:
            parts.append(SUGGEST_TIME_INDEX.format(column=export.time_column or "time_column"))
        elif not export.cursor_column and mode != "chunked":
            parts.append(SUGGEST_CONSIDER_CURSOR)
        parts.append(SUGGEST_SAFE_PROFILE)
        return " ".join(parts)
    if verdict == "UNSAFE":
        parts.append(SUGGEST_UNSAFE_SCAN.format(millions=millions))
        if mode == "full":
            parts.append(SUGGEST_UNSAFE_FULL)
        elif mode == "chunked" and export.chunk_by_key is not None:
            parts.append(SUGGEST_UNSAFE_KEYSET.format(column=chunk_col))
        elif mode == "chunked":
            parts.append(SUGGEST_UNSAFE_CHUNKED.format(column=chunk_col))
        elif mode == "time_window":
            parts.append(SUGGEST_UNSAFE_TIME.format(column=export.time_column or "time_column"))
        elif mode == "incremental":
            parts.append(SUGGEST_UNSAFE_INCREMENTAL.format(
                column=export.cursor_column or "cursor_column"))
        parts.append(SUGGEST_OFF_PEAK)
        return " ".join(parts)
    return None


def final_warnings(preflight: Sequence[str], validate: Sequence[str], *, verdict: str,
                   advice: str | None) -> list[str]:
    """§5.8: preflight warnings, then validate entries; an empty list gets one advisory line."""
    out = [*preflight, *validate]
    if not out and verdict != "EFFICIENT":
        out.append(advice if advice is not None else FALLBACK_LINE.format(verdict=verdict))
    return out


@functools.lru_cache(maxsize=4096)  # the same few warning texts recur across exports
def is_sparse_warning(warning: str) -> bool:
    """§5.9: any entry whose lower-cased text contains both `sparse` and `range`."""
    lowered = warning.lower()
    return "sparse" in lowered and "range" in lowered


_WARNINGS = _warnings_function()
