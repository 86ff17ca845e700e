"""How rivet turns a config into a plan (rivet-plan.md §2–§4), from facts instead of a connection.

- `resolve_strategy`: rivet's `build_plan` strategy resolution — the chunked checks in rivet's
  order, the small-table escape to snapshot, the auto-resolved integer primary key, keyset;
- `detect_chunks`: rivet's chunk detection — NULL key, whole-integer bounds, dates for
  `chunk_by_days`, the 50,000,000-window ceiling and the sparse-plan refusal;
- `measured_rows` / `overlay`: the measured-rows overlay from `export_metrics`;
- `chunked_row_estimate`: span vs catalog for chunked exports.

A refusal is raised as `PlanRefusedError` with rivet's own text; the planner turns it into that
export's `plan-refused` problem (rivet aborts the whole plan — a gate reports it and plans the
rest). What the facts do not say is never a refusal: an unknown fact plans as rivet would if the
probe had passed.
"""

from __future__ import annotations

import functools
import re
from datetime import UTC, date, datetime
from typing import Literal, NamedTuple

from rivet_ci.core.common.limits import I64_MAX, I64_MIN
from rivet_ci.core.common.patterns import INTEGER
from rivet_ci.core.config.models import ExportConfig
from rivet_ci.core.facts.models import ColumnFacts, ExportFacts, MeasuredRun

ResolvedStrategy = Literal["full", "incremental", "chunked", "keyset", "timewindow"]
MAX_CHUNK_WINDOWS = 50_000_000
CATALOG_OVERRIDE_MIN_SPAN = 10_000
SPARSE_MIN_WINDOWS = 64
SPARSE_WARN_WINDOWS = 1000
OVERLAY_SAMPLE = 25
STALE_DAYS = 14
# rivet's `strip_simple_projection_from`: `SELECT * FROM t` or `SELECT a, b FROM t`, no WHERE.
_PLAIN_PROJECTION = re.compile(
    r"\s*select\s+(\*|[\w\"`\[\]]+(\s*,\s*[\w\"`\[\]]+)*)\s+from\s+[\w\"`\[\].]+\s*;?\s*",
    re.IGNORECASE)


class PlanRefusedError(Exception):
    """rivet refuses to plan this export; `message` is rivet's text, `field` the config key."""

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class Resolution(NamedTuple):
    """The resolved strategy of one export."""

    strategy: ResolvedStrategy
    column: str | None = None  # chunk column (explicit or auto-resolved) or keyset key
    chunk_size: int = 0
    downgraded: bool = False  # a chunked export planned as snapshot (small-table escape)
    notes: tuple[str, ...] = ()  # rivet's log warnings (not part of the warning list)


class Detection(NamedTuple):
    """What rivet's chunk detection found: window count and key span (None: unknown)."""

    windows: int | None = None
    span: int | None = None
    notes: tuple[str, ...] = ()
    # (first low, last high, width) of `generate_chunks`: the windows themselves, on demand
    geometry: tuple[int, int, int] | None = None


# Built once (frozen): a full export's resolution, no detection, a column the facts do not know.
_FULL = Resolution(strategy="full")
NOTHING_DETECTED = Detection()
_UNKNOWN_COLUMN = ColumnFacts.model_construct()


def rust_debug(text: str) -> str:
    """A Rust `{:?}` string: double quotes, escapes for `"`, `\\` and control characters."""
    out = ['"']
    for ch in text:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\0":
            out.append("\\0")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{{{ord(ch):x}}}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


# --- strategy resolution (§4.2 step 3, §4.5) ----------------------------------------------------

def resolve_strategy(
    export: ExportConfig, facts: ExportFacts | None, *, source_type: str | None,
    mongo_page_size: int | None = None,
) -> Resolution:
    """rivet's strategy resolution; raises `PlanRefusedError` where rivet refuses."""
    mode = export.mode
    if mode == "full":
        if source_type == "mongo" and mongo_page_size is not None:
            return Resolution(strategy="keyset", column="_id", chunk_size=max(mongo_page_size, 1))
        return _FULL
    if mode == "incremental":
        return Resolution(strategy="incremental", column=export.cursor_column)
    if mode == "time_window":
        return Resolution(strategy="timewindow", column=export.time_column)
    if mode != "chunked":  # cdc never reaches planning
        raise PlanRefusedError(
            f"export '{export.name}': cdc mode has no batch plan — CDC exports stream changes "
            f"continuously and are run with `rivet run` (or the `rivet cdc` subcommand), not "
            f"`rivet plan` / `rivet apply`. Plan the batch exports separately, or run this one "
            f"with `rivet run`.", "mode")
    return _resolve_chunked(export, facts, source_type=source_type)


def _resolve_chunked(export: ExportConfig, facts: ExportFacts | None, *,
                     source_type: str | None) -> Resolution:
    name = export.name
    memory_mb = export.chunk_size_memory_mb
    count, by_days = export.chunk_count, export.chunk_by_days
    by_key, chunk_column, table = export.chunk_by_key, export.chunk_column, export.table
    if count is not None and by_days is not None:
        raise PlanRefusedError(f"export '{name}': chunk_count and chunk_by_days are mutually "
                          f"exclusive", "chunk_count")
    if by_key is not None:
        for knob, present in (("chunk_column", chunk_column is not None),
                              ("chunk_by_days", by_days is not None),
                              ("chunk_count", count is not None)):
            if present:
                raise PlanRefusedError(f"export '{name}': chunk_by_key and {knob} are mutually "
                                  f"exclusive", knob)
    range_sliced = by_days is None
    chunk_size = export.chunk_size
    notes: list[str] = []
    if chunk_column is not None and memory_mb is None and not (range_sliced and table is not None):
        if range_sliced:
            notes.append(
                f"export '{name}': chunk_column '{chunk_column}' is range-sliced by "
                f"integer BETWEEN, but with `query:` (no `table:`) the planner cannot verify it "
                f"is integer-family — a numeric/decimal/float key silently drops rows between "
                f"windows. Use `table:` (so the type is checked), `chunk_by_key:` (keyset — any "
                f"orderable indexed key), or ensure the column is integer.")
        return Resolution(strategy="chunked", column=chunk_column, chunk_size=chunk_size,
                          notes=tuple(notes))
    if table is None:
        if by_key is not None:
            raise PlanRefusedError(
                f"export '{name}': `chunk_by_key:` needs the `table:` shortcut so the planner "
                f"can verify the key is backed by a unique index (an unindexed ORDER BY key "
                f"would filesort the whole table). Set `table:` instead of `query:`.",
                "chunk_by_key")
        if memory_mb is not None:
            raise PlanRefusedError(
                f"export '{name}': `chunk_size_memory_mb:` only applies with the `table:` "
                f"shortcut — set `table:` (preferred) or remove `chunk_size_memory_mb:` and keep "
                f"an explicit `chunk_size:`", "chunk_size_memory_mb")
        raise PlanRefusedError(
            f"export '{name}': chunked mode requires 'chunk_column' (auto-resolve from PK is "
            f"only supported with the `table:` shortcut)", "chunk_column")
    introspected = facts.table if facts is not None and facts.preflight_error is None else None
    if introspected is None:
        # rivet would probe the catalog here. Without that fact: plan on what is configured,
        # as rivet does when the probe fails on an explicit column (never a guessed refusal).
        if by_key is not None:
            return Resolution(strategy="keyset", column=by_key, chunk_size=chunk_size)
        return Resolution(strategy="chunked", column=chunk_column, chunk_size=chunk_size)
    width = facts.avg_row_bytes if facts is not None else None
    if memory_mb is not None:
        row_bytes = width if width else 512
        chunk_size = min(max(memory_mb * 1048576 // row_bytes, 1, 10000), 5_000_000)
    elif width and chunk_size * width >= 536_870_912:
        notes.append(
            f"export '{name}': chunk_size {chunk_size} × ~{width} B/row ≈ "
            f"{chunk_size * width // 1_048_576} MB per chunk on a wide table — a chunk this "
            f"large can exceed the statement timeout (e.g. MySQL ERROR 3024) or spike memory. "
            f"Prefer `chunk_size_memory_mb:` (width-aware — each chunk stays bounded by BYTES, "
            f"not row count), or lower `chunk_size`.")
    rows = introspected.rows
    if (count is None and by_days is None and not export.chunk_checkpoint and by_key is None
            and rows is not None and 0 < rows <= chunk_size):
        notes.append(f"export '{name}': {table} has ~{rows} rows ≤ chunk_size {chunk_size}; "
                     f"downgrading chunked → snapshot")
        return Resolution(strategy="full", downgraded=True, chunk_size=chunk_size,
                          notes=tuple(notes))
    columns = facts.columns if facts is not None else {}
    if by_key is not None:
        key = by_key
        if _column(columns, key).keyset_key is False:
            raise PlanRefusedError(
                f"export '{name}': chunk_by_key '{key}' is not a usable keyset key on {table} — "
                f"it must be a single-column, NOT NULL, UNIQUE or PRIMARY key WHOSE TYPE the "
                f"keyset cursor can read (integer / float / string / timestamp / date / uuid). "
                f"A `decimal`/`numeric` key is excluded: the cursor cannot advance past it (it "
                f"would fail mid-run after a partial write). Without a usable key, `ORDER BY "
                f"{key} LIMIT n` would also full-scan + filesort. Add a unique index of a "
                f"supported type, pick another key, use a range `chunk_column:` (integer), or "
                f"`mode: full`.", "chunk_by_key")
        return Resolution(strategy="keyset", column=key, chunk_size=chunk_size,
                          notes=tuple(notes))
    if chunk_column is not None:
        column = chunk_column
        if range_sliced and _column(columns, column).integer is False:
            raise PlanRefusedError(
                f"export '{name}': chunk_column '{column}' on {table} is not an integer-family "
                f"column — range chunking derives integer min/max boundaries and slices with "
                f"`BETWEEN`, so a numeric/decimal/float/text key silently drops every value "
                f"between two window boundaries. Use `chunk_by_key: {column}` (keyset — any "
                f"orderable indexed key), an integer column, or `mode: full`.", "chunk_column")
        return Resolution(strategy="chunked", column=column, chunk_size=chunk_size,
                          notes=tuple(notes))
    pk = introspected.integer_primary_key
    if pk is not None:
        notes.append(f"export '{name}': chunk_column not set — auto-resolved to '{pk}' from the "
                     f"single-integer primary key on {table}. Set `chunk_column:` explicitly to "
                     f"pin the choice and silence this warning.")
        return Resolution(strategy="chunked", column=pk, chunk_size=chunk_size,
                          notes=tuple(notes))
    if source_type == "mysql" and introspected.unique_key is not None:
        key = introspected.unique_key
        notes.append(f"export '{name}': {table} has no single-integer PK — auto-selected keyset "
                     f"(seek) pagination on unique key '{key}'. Set `chunk_by_key:` explicitly "
                     f"to pin the choice and silence this warning.")
        return Resolution(strategy="keyset", column=key, chunk_size=chunk_size,
                          notes=tuple(notes))
    raise PlanRefusedError(
        f"export '{name}': chunked mode found no safe shape on {table} — no single-integer PK to "
        f"range-chunk and no single-column UNIQUE/PRIMARY key to keyset-page. Set "
        f"`chunk_column:` (integer) or `chunk_by_key:` (unique key) explicitly, add a unique "
        f"index, or use `mode: full` to accept one long snapshot query.", "mode")


def _column(columns: dict[str, ColumnFacts], name: str) -> ColumnFacts:
    return columns.get(name) or _UNKNOWN_COLUMN


# --- chunk detection (§3) -----------------------------------------------------------------------

def strict_i64(text: str) -> int | None:
    """rivet's `strict_i64`: a plain integer, or `N.000…` (trailing zeros only); else None."""
    t = text.strip()
    head = t
    if len(t) > 64:  # far outside i64, whatever it says
        return None
    if not (t.isdigit() and t.isascii()) and not INTEGER.fullmatch(t):  # see `parse_i64`
        head, dot, tail = t.partition(".")
        if not dot or not INTEGER.fullmatch(head) or tail.strip("0"):
            return None
    value = int(head)
    return value if I64_MIN <= value <= I64_MAX else None


_EPOCH = date(1970, 1, 1).toordinal()


_DATE = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})")
_DATETIME = re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})[ T](\d{1,2}):(\d{1,2}):(\d{1,2})")


def _day(text: str, pattern: re.Pattern[str], separator: str) -> int | None:
    match = pattern.fullmatch(text)
    if match is None or (separator and separator not in text):
        return None
    parts = match.groups()
    if len(parts) == 6 and not (int(parts[3]) < 24 and int(parts[4]) < 60
                                and int(parts[5]) < 61):
        return None
    try:
        return date(int(parts[0]), int(parts[1]), int(parts[2])).toordinal() - _EPOCH
    except ValueError:
        return None


# A `chunk_by_days` export parses its column's min and max, ~20,000 instructions each for a
# timestamp (two regexes, six int conversions); exports of one capture often share bounds (the
# first day of data, the last load before the capture), and a look-up costs ~500.
@functools.lru_cache(maxsize=4096)
def parse_date_flexible(text: str) -> int | None:
    """rivet's `parse_date_flexible`: a day number since 1970-01-01, or None.

    Forms, first that parses (the whole text of each form): `%Y-%m-%d`; `%Y-%m-%d %H:%M:%S`;
    the text before the first `.` and then before the first `+` as `%Y-%m-%dT%H:%M:%S`; the first
    ten characters as `%Y-%m-%d`.
    """
    t = text.strip()
    day = _day(t, _DATE, "")
    if day is None:
        day = _day(t, _DATETIME, " ")
    if day is None:
        day = _day(t.split(".", 1)[0].split("+", 1)[0], _DATETIME, "T")
    if day is None:
        day = _day(t[:10], _DATE, "")
    return day


def generate_chunks(low: int, high: int, width: int) -> list[list[int]]:
    """rivet's `generate_chunks`: inclusive `[lo, hi]` windows, the last one ending at `high`."""
    if high < low or width <= 0:
        return []
    return [[lo, min(lo + width - 1, high)] for lo in range(low, high + 1, width)]


def window_count(low: int, high: int, width: int) -> int:
    """Number of windows of `generate_chunks(low, high, width)`."""
    if high < low or width <= 0:
        return 0
    return (high - low) // width + 1


def plain_projection(query: str) -> bool:
    return _PLAIN_PROJECTION.fullmatch(query) is not None


def detect_chunks(
    export: ExportConfig, resolution: Resolution, facts: ExportFacts | None, *,
    source_type: str | None,
) -> Detection:
    """rivet's chunk detection over the facts (§3); raises `PlanRefusedError` where rivet aborts."""
    if resolution.strategy != "chunked" or facts is None or facts.preflight_error is not None:
        return NOTHING_DETECTED
    name = export.name
    column = resolution.column
    col = _column(facts.columns, column) if column else _UNKNOWN_COLUMN
    low_text, high_text = col.min, col.max
    observed = col.range_skipped is None and low_text is not None and high_text is not None
    by_days = export.chunk_by_days
    if by_days is not None:
        _null_probe(name, column, col)
        if not observed or low_text is None or high_text is None:
            return NOTHING_DETECTED
        days: list[int] = []
        for which, raw in (("min", low_text), ("max", high_text)):
            day = parse_date_flexible(raw)
            if day is None:
                raise PlanRefusedError(
                    f"export '{name}': could not parse {which}({column}) = {rust_debug(raw)} as "
                    f"a date (expected YYYY-MM-DD or YYYY-MM-DD HH:MM:SS)", "chunk_by_days")
            days.append(day)
        windows = window_count(days[0], days[1], by_days)
        return Detection(windows=windows, span=_span(days[0], days[1], windows),
                         geometry=(days[0], days[1], by_days))
    key_span = facts.key_span
    _null_probe(name, column, col)
    if key_span is not None and not observed:
        width = _width(export, resolution, key_span - 1)
        windows = window_count(0, key_span - 1, width)
        return Detection(windows=windows, span=key_span if windows else None,
                         geometry=(0, key_span - 1, width) if windows else None)
    if not observed or low_text is None or high_text is None:
        return NOTHING_DETECTED
    bounds: list[int] = []
    for which, raw in (("min", low_text), ("max", high_text)):
        value = strict_i64(raw)
        if value is None:
            raise PlanRefusedError(
                f"export '{name}': {which}({column}) = {rust_debug(raw)} is not a whole integer "
                f"— range chunking slices with an integer BETWEEN, so a fractional key silently "
                f"drops rows between windows. Use `chunk_by_key:` (keyset — any orderable "
                f"unique indexed key) or an integer column.", "chunk_column")
        bounds.append(value)
    low, high = bounds
    width = _width(export, resolution, max(high - low, 0))
    expected = window_count(low, high, width)
    if expected > MAX_CHUNK_WINDOWS:
        raise PlanRefusedError(
            f"export '{name}': chunk plan would generate {expected} windows (key span "
            f"{low}..={high} ÷ chunk_size {width}), past the 50000000-window ceiling — the key "
            f"is extremely sparse. Raise chunk_size:, set an explicit chunk_count:, or use "
            f"mode: full.", "chunk_size")
    note = None
    if export.chunk_count is None:
        note = sparse_check(name, expected, _scan_free_estimate(export, facts, source_type),
                            resolution.chunk_size)
    return Detection(windows=expected, span=_span(low, high, expected),
                     notes=(note,) if note is not None else (),
                     geometry=(low, high, width) if expected else None)


def _null_probe(name: str, column: str | None, col: ColumnFacts) -> None:
    if col.has_nulls:
        raise PlanRefusedError(
            f"export '{name}': found NULL in chunk_column '{column}'. Range/date chunking "
            f"filters with `BETWEEN min AND max` (or `>= .. < ..`), which excludes NULL — those "
            f"rows would be silently dropped from the export. Fix one of: use a NOT NULL column "
            f"for chunk_column; add `WHERE {column} IS NOT NULL` to the query to drop them "
            f"explicitly; or use `mode: full`.", "chunk_column")


_U64 = 1 << 64
_I64_MIN = -(1 << 63)


def _wrap_i64(value: int) -> int:
    """rivet's 64-bit integer arithmetic (a release build wraps on overflow)."""
    return (value - _I64_MIN) % _U64 + _I64_MIN


def _width(export: ExportConfig, resolution: Resolution, extent: int) -> int:
    if export.chunk_count is not None:
        # rivet: (extent + 1) in u64 — the whole i64 range wraps to 0 — then at least 1, so a
        # chunk_count over the whole range plans 2^64 windows and is refused at the ceiling.
        total = (extent + 1) % _U64
        return max(-(-total // export.chunk_count), 1)
    return resolution.chunk_size


def _span(low: int, high: int, windows: int) -> int | None:
    # rivet: `last_hi - first_lo + 1` in i64 (the whole range wraps to 0), never below 0.
    return max(_wrap_i64(high - low + 1), 0) if windows > 0 else None


def _scan_free_estimate(export: ExportConfig, facts: ExportFacts,
                        source_type: str | None) -> int | None:
    """Detect's scan-free estimate (§2.1): PostgreSQL / SQL Server, plain projections only."""
    if source_type not in ("postgres", "mssql"):
        return None
    if not plain_projection(export.effective_query):
        return None
    rows = facts.table.rows if facts.table is not None else None
    if rows is None and export.table is not None:
        rows = facts.row_estimate  # EXPLAIN of `SELECT * FROM t` reads the same catalog figure
    return rows if rows is not None and rows > 0 else None


def sparse_check(name: str, windows: int, rows: int | None, chunk_size: int) -> str | None:
    """rivet's `sparse_chunk_action` (§3.4): refuse, warn (returned), or nothing (None)."""
    cs = max(chunk_size, 1)
    if windows < SPARSE_MIN_WINDOWS:
        return None
    if rows is not None and rows > 0:
        dense = max(-(-rows // cs), 1)
        if windows < dense * 4:
            return None
        raise PlanRefusedError(
            f"export '{name}': refusing to run a sparse range plan — {windows} chunk windows for "
            f"~{rows} rows (~{rows // windows} rows/window vs chunk_size {cs}). `chunk_size` "
            f"divides the KEY RANGE, not the row count, so most windows are near-empty and each "
            f"is a separate source query: {windows} round-trips, very slow over a tunnel/VPN. "
            f"Set one of: `chunk_by_key: <unique key>` (keyset paging — windows track rows and "
            f"stay correct under concurrent writes), `chunk_count: N`, or `mode: full`.",
            "chunk_size")
    if windows >= SPARSE_WARN_WINDOWS:
        return (f"export '{name}': {windows} chunk windows on a range key (no scan-free row "
                f"estimate to confirm density). If the key is sparse (large / gappy ids), most "
                f"windows are near-empty and this is {windows} source round-trips — very slow "
                f"over a tunnel/VPN. If so: `chunk_by_key: <unique key>` pages by keyset, "
                f"tracking ROWS not the id span; or `chunk_count: 64` → 64 windows "
                f"(~{windows // 64}× fewer round-trips); or `mode: full`.")
    return None


# --- row estimates (§2.3, §2.4) -----------------------------------------------------------------

def measured_run(facts: ExportFacts) -> MeasuredRun | None:
    """The newest `success` run among the 25 newest (`last_success`, else from `history`)."""
    if facts.last_success is not None:
        return facts.last_success
    for run in (facts.history or [])[:OVERLAY_SAMPLE]:
        if run.status == "success":
            if run.total_rows is None or run.run_at is None:
                return None
            return MeasuredRun(total_rows=run.total_rows, run_at=run.run_at)
    return None


def parse_rfc3339(text: str) -> datetime | None:
    try:
        parsed = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None or "T" not in text.upper():
        return None
    return parsed


def whole_table_mode(export: ExportConfig) -> bool:
    """Modes the overlay applies to: `full`, and `chunked` without `chunk_by_key`."""
    return export.mode == "full" or (export.mode == "chunked" and export.chunk_by_key is None)


class Overlay(NamedTuple):
    """The estimate after the overlay, whether it is measured, and rivet's label."""

    estimate: int | None
    measured: bool  # the label starts with `measured`
    label: str


def overlay(estimate: int | None, run: MeasuredRun | None, now: datetime | None) -> Overlay:
    """`choose_row_estimate`: a fresh or agreeing measurement replaces the catalog estimate."""
    if run is None:
        return Overlay(estimate=estimate, measured=False, label="catalog estimate")
    at = parse_rfc3339(run.run_at)
    if at is None:
        return Overlay(estimate=estimate, measured=False, label="catalog estimate")
    day = at.astimezone(UTC).date().isoformat()
    stale = False
    if now is not None:
        delta = now - at
        days = int(delta.total_seconds() // 86_400) if delta.total_seconds() >= 0 else \
            -int(-delta.total_seconds() // 86_400)
        stale = days > STALE_DAYS
    rows = run.total_rows
    divergent = False
    if estimate is not None:
        lo, hi = min(rows, estimate), max(rows, estimate)
        divergent = (lo > 0 and hi // lo >= 2) or (lo == 0 and hi > 0)
    if stale and divergent:
        return Overlay(estimate=estimate, measured=False, label=(
            f"catalog estimate — a measured figure from {day} was set aside as stale (>14d old) "
            f"and >2× divergent"))
    return Overlay(estimate=rows, measured=True, label=f"measured {day}")


def chunked_row_estimate(*, span: int | None, catalog: int | None, measured: bool,
                         days: bool) -> int | None:
    """`chunked_row_estimate` (§2.4), first matching rule."""
    if days:
        return catalog
    if measured:
        return catalog if catalog is not None else span
    if span is not None and catalog is not None:
        if span >= CATALOG_OVERRIDE_MIN_SPAN:
            return max(span, catalog)
        return span
    return span if span is not None else catalog
