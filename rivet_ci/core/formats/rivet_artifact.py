"""rivet's own plan artifact (`rivet plan --format json`, rivet-plan.md §10), written from a plan.

`plan --format rivet-json` writes exactly rivet 0.24.5's shape — key order, nulls, strategy
encodings, `integrity`, `plan_fingerprint`, the campaign embedded in every artifact — so tools
written for rivet (its Airflow recipe reads `plan[0]["prioritization"]["campaign"]
["ordered_exports"]`) read it unchanged. What rivet-ci cannot know without running rivet is
documented in `docs/plan-json.md` (e.g. `cursor_snapshot` is null, `plan_id` is derived).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, cast

import xxhash

from rivet_ci.core.config.models import Compression, DestinationConfig, ExportConfig, SourceConfig
from rivet_ci.core.config.rules import max_file_size_bytes
from rivet_ci.core.plan.diagnostics import (
    PREFLIGHT_FAILED_VERDICT,
    config_value,
    peak_memory_mb,
)
from rivet_ci.core.plan.planner import ConfigPlan, PlannedExport
from rivet_ci.core.plan.recommendation import Campaign, ExportRecommendation
from rivet_ci.core.plan.resolve import generate_chunks
from rivet_ci.core.plan.signals import Signals

if TYPE_CHECKING:  # the format's types only (see `rivet_ci.core.formats.document`)
    from rivet_ci.core.formats.plan_format import (
        ColumnTypeJSON,
        DestinationJSON,
        ParquetJSON,
        PlainColumnType,
        ResolvedPlanJSON,
        ResolvedTuningJSON,
        SourceBlockJSON,
    )

RIVET_VERSION = "0.24.5"
_TUNING_KEYS = ("batch_size", "batch_size_memory_mb", "throttle_ms", "statement_timeout_s",
                "max_retries", "retry_backoff_ms", "lock_timeout_s", "memory_threshold_mb",
                "max_batch_memory_mb", "on_batch_memory_exceeded", "adaptive", "min_parallel",
                "max_value_mb")
_PROFILES: dict[str, dict[str, Any]] = {
    "fast": {"batch_size": 50000, "batch_size_memory_mb": 64, "throttle_ms": 0,
             "statement_timeout_s": 0, "max_retries": 1, "retry_backoff_ms": 1000,
             "lock_timeout_s": 0, "memory_threshold_mb": 0},
    "balanced": {"batch_size": 10000, "batch_size_memory_mb": 32, "throttle_ms": 50,
                 "statement_timeout_s": 300, "max_retries": 3, "retry_backoff_ms": 2000,
                 "lock_timeout_s": 30, "memory_threshold_mb": 4096},
    "safe": {"batch_size": 2000, "batch_size_memory_mb": None, "throttle_ms": 500,
             "statement_timeout_s": 120, "max_retries": 10, "retry_backoff_ms": 5000,
             "lock_timeout_s": 10, "memory_threshold_mb": 2048},
}
_DESTINATION_KEYS = ("type", "bucket", "prefix", "path", "region", "endpoint", "credentials_file",
                     "access_key_env", "secret_key_env", "session_token_env", "aws_profile",
                     "account_name", "account_key_env", "sas_token_env")
_SOURCE_KEYS = ("type", "url", "url_env", "url_file", "host", "port", "user", "password",
                "password_env", "database", "environment")
_COMPRESSION_PROFILES: dict[str, tuple[Compression, int | None]] = {
    "none": ("none", None), "fast": ("snappy", None), "balanced": ("zstd", 3),
    "compact": ("zstd", 9)}
_USERINFO = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*://)[^@/]*@")


_SCALARS = (str, int, float, bool, type(None))


# Whether a type is a Mapping, per type: `isinstance` against the ABC is slow on the hot path
# (tens of field reads per export).
_IS_MAPPING: dict[type, bool] = {}


def _get(obj: Any, key: str) -> Any:
    if obj is None:
        return None
    kind = type(obj)
    is_mapping = _IS_MAPPING.get(kind)
    if is_mapping is None:
        is_mapping = _IS_MAPPING[kind] = isinstance(obj, Mapping)
    return obj.get(key) if is_mapping else getattr(obj, key, None)


def _plain(value: Any) -> Any:
    """A config value as JSON data (models, tuples and enums to dicts, lists, strings)."""
    if type(value) in _SCALARS:
        return value
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


# --- resolved_plan (§10.3) ------------------------------------------------------------------------

def resolved_tuning(export: ExportConfig, source: SourceConfig | None,
                    ) -> tuple[ResolvedTuningJSON, str]:
    """rivet's resolved tuning (rivet-config.md §2.16) and its `tuning_profile_label`."""
    merged: dict[str, Any] = {}
    for level in (_get(source, "tuning"), config_value(export, "tuning")):
        for key in ("profile", *_TUNING_KEYS):
            value = _get(level, key)
            if value is not None:
                merged[key] = value
    environment = _get(source, "environment")
    if merged.get("profile"):
        profile = str(merged["profile"])
        label = profile
    elif environment is not None:
        profile = "fast" if environment == "local" else "balanced"
        label = f"{profile} (default for environment: {environment})"
    else:
        profile, label = "balanced", "balanced (default)"
    tuning: dict[str, Any] = {**_PROFILES[profile], "max_batch_memory_mb": None,
                              "on_batch_memory_exceeded": "warn", "adaptive": False,
                              "min_parallel": None, "max_value_mb": 256}
    for key in _TUNING_KEYS:
        if key in merged:
            tuning[key] = merged[key]
    if "batch_size_memory_mb" not in merged and "batch_size" in merged:
        tuning["batch_size_memory_mb"] = None
    tuning["max_batch_memory_mb"] = merged.get("max_batch_memory_mb")
    ordered = {key: tuning[key] for key in _TUNING_KEYS}
    ordered["configured_profile"] = profile
    return cast("ResolvedTuningJSON", ordered), label


def _strategy(f: ExportConfig, s: Signals, tuning: Mapping[str, Any],
              source: SourceConfig | None = None) -> Any:
    """`resolved_plan.strategy` from the export and its signals."""
    kind = s.resolved_strategy
    if kind == "incremental":
        return {"Incremental": {
            "primary_column": f.cursor_column,
            "fallback_column": f.cursor_fallback_column,
            "mode": f.incremental_cursor_mode}}
    if kind == "timewindow":
        return {"TimeWindow": {"column": f.time_column,
                               "column_type": f.time_column_type,
                               "days_window": f.days_window}}
    if kind == "chunked":
        attempts = f.chunk_max_attempts
        if attempts is None:
            attempts = max(int(tuning.get("max_retries") or 0) + 1, 1)
        return {"Chunked": {
            "column": s.chunk_column, "chunk_size": s.chunk_size,
            "chunk_count": f.chunk_count, "parallel": f.parallel,
            "dense": bool(f.chunk_dense), "by_days": f.chunk_by_days,
            "checkpoint": bool(f.chunk_checkpoint), "max_attempts": attempts}}
    if kind == "keyset":
        if f.mode == "full":  # MongoDB `page_size`: checkpoint = incremental = resume
            resume = bool(_get(_get(source, "mongo"), "resume"))
            return {"Keyset": {"key_column": "_id", "chunk_size": s.chunk_size,
                               "checkpoint": resume, "incremental": resume,
                               "parallel": f.parallel}}
        incremental = bool(f.keyset_incremental)
        return {"Keyset": {
            "key_column": s.chunk_column, "chunk_size": s.chunk_size,
            "checkpoint": bool(f.chunk_checkpoint) or incremental,
            "incremental": incremental, "parallel": f.parallel}}
    return "Snapshot"


def resolved_plan_max_file_size(text: Any) -> int | None:
    """rivet's `max_file_size` in bytes (rivet-config.md B.4), None when unset or refused."""
    return None if text is None else max_file_size_bytes(str(text))


def _expand(text: Any, export: str, day: str) -> Any:
    if not isinstance(text, str):
        return text
    return text.replace("{date}", day).replace("{export}", export).replace("{table}", export)


def source_block(source: SourceConfig | None) -> SourceBlockJSON:
    """`resolved_plan.source`: the `source` section with the password removed and the URL's
    userinfo redacted. The same for every export of a config: build it once per config."""
    out: dict[str, Any] = {key: _plain(_get(source, key)) for key in _SOURCE_KEYS}
    out["password"] = None
    if isinstance(out["url"], str):
        out["url"] = _USERINFO.sub(r"\1REDACTED@", out["url"])
    tuning = _get(source, "tuning")
    out["tuning"] = ({key: _plain(_get(tuning, key)) for key in ("profile", *_TUNING_KEYS)}
                     if tuning is not None else None)
    tls = _get(source, "tls")
    out["tls"] = ({"mode": _get(tls, "mode"), "ca_file": _get(tls, "ca_file"),
                   "accept_invalid_certs": bool(_get(tls, "accept_invalid_certs")),
                   "accept_invalid_hostnames": bool(_get(tls, "accept_invalid_hostnames"))}
                  if isinstance(tls, Mapping) or hasattr(tls, "model_dump") else None)
    mongo = _get(source, "mongo")
    if mongo is not None and hasattr(mongo, "model_dump"):
        mongo = mongo.model_dump(mode="json", by_alias=True)  # `json` is an alias
    out["mongo"] = ({key: _plain(_get(mongo, key)) for key in
                     ("json", "read_concern", "no_cursor_timeout", "page_size", "resume")}
                    if mongo is not None else None)
    return cast("SourceBlockJSON", out)


def _fields(obj: Any) -> Mapping[str, Any]:
    """A config section's keys and values: a model's fields (its `__dict__`, in declaration
    order), or the mapping itself; `{}` for an absent section."""
    if obj is None:
        return _NO_FIELDS
    if type(obj) is dict:
        return obj
    fields = getattr(obj, "__dict__", None)
    return fields if fields is not None else obj  # type: ignore[no-any-return]


_NO_FIELDS: Mapping[str, Any] = {}
_PARQUET_KEYS = ("row_group_strategy", "row_group_rows", "target_row_group_mb", "max_row_group_mb")


class ResolvedPlanMemo:
    """What `resolved_plan` builds once and shares between exports of one document: the
    resolved tuning per (source, export tuning) pair, and the `destination` block per distinct
    destination section that names no `{date}`/`{export}`/`{table}` placeholder (keyed by its
    field values: most exports of a repository write to one of a few destinations). The same
    object then stands for every export that resolves to it (the JSON text repeats it; nothing
    mutates it).

    `place` gives what stands for such a shared block in the plans returned (by default the
    block itself): the streamed document (`document.streamed_memo`) gives the block's JSON text,
    serialised once for its place in the document instead of once per export."""

    def __init__(self, place: Callable[[Any], Any] | None = None) -> None:
        self.place = place
        # (id(source), id(export tuning)) -> (source, export tuning), tuning, placed, label
        self.tuning: dict[tuple[int, int],
                          tuple[tuple[Any, Any], ResolvedTuningJSON, Any, str]] = {}
        # A destination section's field values -> its block, placed (None: it names a
        # placeholder, so its block is the export's own).
        self.destination: dict[tuple[Any, ...], Any] = {}
        # id(section) -> (section, the same): exports of a config often share one section
        # object, found without building and hashing its values (the section is kept, so
        # its id is not reused meanwhile).
        self.destination_of: dict[int, tuple[Any, Any]] = {}

    def placed_destination(self, configured: Any, name: str, day: str) -> Any:
        """The shared `destination` block of a destination section, placed; None when the
        section is not a model or names a placeholder (the caller builds the export's own)."""
        known = self.destination_of.get(id(configured))
        if known is not None:
            return known[1]
        if type(configured) is not DestinationConfig:
            return None
        # A destination model's field values, in declaration order, identify its block.
        key = tuple(configured.__dict__.values())
        dest = self.destination.get(key, _UNSEEN)
        if dest is _UNSEEN:
            dest = None
            if not _names_placeholder(key):
                dest = _destination(configured.__dict__, name, day)
                if self.place is not None:
                    dest = self.place(dest)
            self.destination[key] = dest
        self.destination_of[id(configured)] = (configured, dest)
        return dest


def resolved_plan(export: ExportConfig, source: SourceConfig | None, signals: Signals, *,
                  day: str, source_json: SourceBlockJSON | None = None,
                  memo: ResolvedPlanMemo | None = None) -> ResolvedPlanJSON:
    """rivet's `ResolvedRunPlan` (§10.3), keys in rivet's order. `source_json` is
    `source_block(source)` when the caller built it once for the whole config; `memo` shares
    the resolved tuning between the exports of one document."""
    f = export
    export_tuning = f.tuning
    if memo is None:
        tuning, label = resolved_tuning(export, source)
        placed_tuning: Any = tuning
    else:
        pair = (id(source), id(export_tuning))
        hit = memo.tuning.get(pair)
        if hit is None:  # the pair is kept in the memo, so neither id is reused meanwhile
            tuning, label = resolved_tuning(export, source)
            placed_tuning = tuning if memo.place is None else memo.place(tuning)
            memo.tuning[pair] = ((source, export_tuning), tuning, placed_tuning, label)
        else:
            _, tuning, placed_tuning, label = hit
    compression: Compression = f.compression or "zstd"
    level = f.compression_level
    profile = f.compression_profile
    if profile is not None:
        compression, level = _COMPRESSION_PROFILES[str(profile)]
    name = f.name
    dest = None if memo is None else memo.placed_destination(f.destination, name, day)
    if dest is None:
        dest = _destination(_fields(f.destination), name, day)
    meta = _fields(f.meta_columns)
    row_hash = meta.get("row_hash")
    quality = f.quality
    parquet = f.parquet
    columns = f.columns
    factor = f.shape_drift_warn_factor
    size = f.max_file_size
    return {
        "export_name": name,
        "source_table": f.table,
        "base_query": export.effective_query,
        "is_split_unit": False,
        "strategy": _strategy(f, signals, tuning, source),
        "format": f.format or "parquet",
        "compression": compression,
        "compression_level": level,
        "max_file_size_bytes": None if size is None else resolved_plan_max_file_size(size),
        "skip_empty": bool(f.skip_empty),
        "meta_columns": {"exported_at": bool(meta.get("exported_at")),
                         "row_hash": _plain(row_hash) if row_hash is not None else False},
        "destination": dest,
        "quality": None if quality is None else {
            "row_count_min": _get(quality, "row_count_min"),
            "row_count_max": _get(quality, "row_count_max"),
            "null_ratio_max": _plain(_get(quality, "null_ratio_max") or {}),
            "unique_columns": _plain(_get(quality, "unique_columns") or []),
            "unique_max_entries": _get(quality, "unique_max_entries")},
        "tuning": placed_tuning,
        "tuning_profile_label": label,
        "validate": False,
        "reconcile": False,
        "resume": False,
        "verify": f.verify or "size",
        "source": source_block(source) if source_json is None else source_json,
        "column_overrides": ({str(k): _column_type(v) for k, v in _plain(columns).items()}
                             if columns else {}),
        "schema_drift_policy": f.on_schema_drift or "warn",
        "shape_drift_warn_factor": float(factor) if factor is not None else 2.0,
        "parquet": None if parquet is None else cast("ParquetJSON", {
            key: _plain(_get(parquet, key)) for key in _PARQUET_KEYS}),
    }


_UNSEEN: Any = object()


def _destination(given: Mapping[str, Any], name: str, day: str) -> DestinationJSON:
    """`resolved_plan.destination`: every key rivet writes, placeholders filled in."""
    dest: dict[str, Any] = {key: given.get(key) for key in _DESTINATION_KEYS}
    for key, value in dest.items():
        if type(value) is str and "{" in value:
            dest[key] = _expand(value, name, day)
    dest["allow_anonymous"] = bool(given.get("allow_anonymous"))
    return cast("DestinationJSON", dest)


def _names_placeholder(values: tuple[Any, ...]) -> bool:
    """Whether a destination section's block depends on the export or the day: `_expand`
    fills a value that holds a `{`."""
    return any(type(value) is str and "{" in value for value in values)


_DECIMAL = re.compile(r"^decimal\((\d+)\s*,\s*(\d+)\)$", re.IGNORECASE)


def _column_type(text: Any) -> ColumnTypeJSON:
    """A `columns:` override as rivet's internally tagged type object."""
    value = str(text).strip()
    lowered = value.lower()
    if match := _DECIMAL.match(value):
        return {"kind": "decimal", "precision": int(match.group(1)), "scale": int(match.group(2))}
    if lowered.startswith("timestamp"):
        unit: Literal["microsecond", "nanosecond"] = (
            "nanosecond" if "ns" in lowered or "nano" in lowered else "microsecond")
        return {"kind": "timestamp", "unit": unit,
                "timezone": "UTC" if "utc" in lowered or "tz" in lowered else None}
    # config typing admits only rivet's type names here (rivet-config.md)
    return cast("PlainColumnType", {"kind": lowered})


# --- integrity and fingerprint (§10.8) ------------------------------------------------------------

def integrity(plan: Mapping[str, object]) -> str:
    text = json.dumps(plan, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "xxh3:" + format(xxhash.xxh3_64_intdigest(text.encode("utf-8")), "016x")


def plan_fingerprint(base_query: str, column: str, kind: str) -> str:
    buf = bytearray()
    for part in (base_query, column, kind):
        data = part.encode("utf-8")
        buf += len(data).to_bytes(8, "little") + data
    return format(xxhash.xxh3_64_intdigest(bytes(buf)), "016x")


def _fingerprint_kind(export: ExportConfig, chunk_size: int) -> str:
    if export.chunk_by_days is not None:
        return f"date_{export.chunk_by_days}d"
    if export.chunk_dense:
        return "dense_rn"
    if export.chunk_count is not None:
        return f"count_{export.chunk_count}"
    return f"range_{chunk_size}"


# --- strategy_rationale (§10.9) -------------------------------------------------------------------

def _fmt(rows: int | None) -> str:
    if rows is None or rows < 0:
        return "row estimate unavailable"
    if rows >= 1_000_000:
        return f"~{rows / 1e6:.1f}M"
    if rows >= 10_000:
        return f"~{rows / 1e3:.0f}K"
    return f"~{rows}"


def recommended_parallelism(export: ExportConfig, rows: int | None,
                            uses_index: bool) -> tuple[int, str]:
    """rivet's `recommend_parallelism` (§5.4)."""
    n = rows or 0
    if export.chunk_by_key is not None:
        if export.parallel > 1:
            return export.parallel, ("keyset fans row-percentile-range workers — each seeks a "
                                     "disjoint slice")
        return 1, ("keyset is sequential by default — set `parallel: N` to fan out N seek "
                   "workers")
    if export.mode != "chunked":
        return 1, "only chunked mode benefits from parallelism"
    if n < 50_000:
        return 1, "dataset too small to benefit from parallelism"
    if not uses_index and n > 5_000_000:
        return 1, "no index — parallel scans would multiply source load"
    if not uses_index:
        return 2, "no index — conservative parallelism to limit source impact"
    if n < 500_000:
        return 2, "moderate dataset — 2 workers sufficient"
    if n < 5_000_000:
        return 4, "large dataset with index support"
    return 4, ("very large dataset — cap at 4 to control memory; increase with "
               "memory_threshold_mb monitoring")


def strategy_rationale(export: ExportConfig, signals: Signals) -> str:
    if signals.preflight_failed:
        return ("Strategy rationale unavailable — preflight diagnostics could not be collected "
                "for this export.")
    rows = signals.preflight_estimate
    width = signals.avg_row_bytes
    token = ("keyset" if export.chunk_by_key is not None else
             {"full": "full", "incremental": "incremental", "chunked": "chunked",
              "time_window": "time_window", "cdc": "cdc"}[export.mode])
    sentences: list[str] = []
    if token == "chunked":
        col = export.chunk_column or signals.range_column or "key"
        note = (f"chunk column `{col}` is indexed" if signals.uses_index else
                f"chunk column `{col}` is NOT indexed (each chunk is a full scan)")
        if rows is not None and rows >= 100_000:
            sentences.append(f"Mode chunked: {_fmt(rows)} rows ≥ the ~100K threshold and {note}, "
                             f"so the table is split into key-range windows.")
        else:
            sentences.append(f"Mode chunked: configured explicitly ({_fmt(rows)}); {note}.")
    elif token == "incremental":
        cursor = signals.range_column or export.cursor_column or "cursor"
        inote = ("the cursor is indexed, so the watermark predicate is an index range scan"
                 if signals.uses_index else
                 "the cursor is NOT indexed, so the watermark predicate scans the table")
        sentences.append(f"Mode incremental on `{cursor}`: resumes from the last stored "
                         f"watermark and pulls only newer rows ({inote}).")
    elif token == "full":
        if rows is not None and rows < 100_000:
            sentences.append(f"Mode full: {_fmt(rows)} rows, below the ~100K chunked threshold, "
                             f"so a single-pass copy is cheapest.")
        else:
            sentences.append(f"Mode full: a single-pass copy of the whole result set "
                             f"({_fmt(rows)}).")
    elif token == "keyset":
        sentences.append(f"Mode keyset: seek-paginates by the indexed key "
                         f"`{export.chunk_by_key or 'key'}` ({_fmt(rows)}), bounding peak memory "
                         f"and query hold-time without a single-integer PK.")
    else:
        sentences.append(f"Mode {token}: {_fmt(rows)}.")
    if token == "chunked":
        chunk_size = export.chunk_size
        if export.chunk_count is not None:
            n = export.chunk_count
            sentences.append(f"Geometry: {n} equal key-range windows (chunk_count={n}); "
                             f"chunk_size is derived from the observed min/max.")
        elif rows is not None and chunk_size > 0:
            parts = max(-(-rows // chunk_size), 1)
            sentences.append(f"Geometry: chunk_size {_fmt(chunk_size)} over {_fmt(rows)} rows "
                             f"yields ~{parts} part file(s).")
        else:
            sentences.append(f"Geometry: chunk_size {_fmt(chunk_size)}; part count unknown (row "
                             f"estimate unavailable).")
    p = max(export.parallel, 1) if token == "chunked" else 1
    level, why = recommended_parallelism(export, rows, signals.uses_index)
    peak = peak_memory_mb(p, width) if width is not None else None
    if peak is None:
        mem = f"parallel={p} (row width unavailable, so peak RSS cannot be bounded here)"
    elif peak <= 2048:
        mem = f"parallel={p} fits the 2048 MB budget at ~{peak} MB peak"
    else:
        mem = f"parallel={p} EXCEEDS the 2048 MB budget at ~{peak} MB peak"
    if p == 1:
        sentences.append(f"Parallelism: single worker — {why}; {mem}.")
    elif level == p:
        sentences.append(f"Parallelism: {mem}; this matches the recommendation ({why}).")
    else:
        sentences.append(f"Parallelism: {mem}; preflight recommends {level} ({why}).")
    resumable = {
        "incremental": "resumable: yes — re-runs continue from the stored watermark",
        "chunked": ("resumable: per-chunk when checkpointing is on; otherwise a failed/re-run "
                    "re-reads the whole table"),
        "keyset": ("resumable: pages forward by key within a run, but a re-run restarts from "
                   "the first page"),
    }.get(token, "resumable: no — a failed run restarts from the beginning")
    memory = (f"memory: bounded to ~{peak} MB peak" if peak is not None else
              "memory: peak unavailable (no row-width estimate)")
    sentences.append(f"Risk — {resumable}; {memory}.")
    return " ".join(sentences)


# --- the artifact (§10.2) -------------------------------------------------------------------------

def recommendation_object(rec: ExportRecommendation) -> dict[str, Any]:
    out: dict[str, Any] = {"export_name": rec.export_name}
    if rec.source_group is not None:
        out["source_group"] = rec.source_group
    out.update(priority_score=rec.priority_score, priority_class=rec.priority_class,
               cost_class=rec.cost_class, risk_class=rec.risk_class,
               recommended_wave=rec.recommended_wave, isolate_on_source=rec.isolate_on_source,
               reasons=[{"kind": r.kind, "message": r.message} for r in rec.reasons])
    return out


def campaign_object(campaign: Campaign, by_name: Mapping[str, ExportRecommendation],
                    ) -> dict[str, Any]:
    return {
        "ordered_exports": [recommendation_object(by_name[name])
                            for name in campaign.ordered_exports],
        "waves": [{"wave": w.wave, "exports": list(w.exports)} for w in campaign.waves],
        "source_group_warnings": list(campaign.source_group_warnings),
    }


def _rfc3339(moment: datetime) -> str:
    text = moment.astimezone(UTC).isoformat().replace("+00:00", "Z")
    return text


def artifact(export: PlannedExport, config: ConfigPlan, *, created_at: datetime,
             campaign: dict[str, Any] | None) -> dict[str, Any]:
    """One export's rivet plan artifact, keys in rivet's order."""
    signals = export.signals
    cfg = export.config
    if signals is None or cfg is None:
        raise ValueError(f"export {export.export_name!r} has no configuration to write "
                         f"rivet's artifact from")
    day = created_at.astimezone(UTC).date().isoformat()
    rp = resolved_plan(cfg, config.source, signals, day=day)
    kind = signals.resolved_strategy or "full"
    fingerprint = ""
    if kind == "chunked":
        fingerprint = plan_fingerprint(rp["base_query"], signals.chunk_column or "",
                                       _fingerprint_kind(cfg, signals.chunk_size or 0))
    geometry = signals.chunk_geometry if kind == "chunked" else None
    ranges = generate_chunks(*geometry) if geometry else []
    warnings = list(signals.warnings)
    prioritization: dict[str, Any] = {
        "export_recommendation": recommendation_object(export.recommendation)}
    if campaign is not None:
        prioritization["campaign"] = campaign
    seed = f"{config.path}\0{export.export_name}\0{created_at.isoformat()}".encode()
    return {
        "rivet_version": RIVET_VERSION,
        "plan_id": xxhash.xxh3_128_hexdigest(seed),
        "created_at": _rfc3339(created_at),
        "expires_at": _rfc3339(created_at + timedelta(hours=24)),
        "export_name": export.export_name,
        "strategy": kind,
        "plan_fingerprint": fingerprint,
        "integrity": integrity(rp),
        "resolved_plan": rp,
        "computed": {
            "chunk_ranges": ranges,
            "chunk_count": len(ranges),
            "cursor_snapshot": None,
            "row_estimate": signals.row_estimate,
        },
        "diagnostics": {
            "verdict": signals.verdict,
            "warnings": warnings,
            "recommended_profile": ("balanced" if signals.verdict == PREFLIGHT_FAILED_VERDICT
                                    else signals.recommended_profile),
            "strategy_rationale": strategy_rationale(cfg, signals),
        },
        "prioritization": prioritization,
        "config_path": config.path,
    }


def config_artifacts(config: ConfigPlan, *, created_at: datetime) -> list[dict[str, Any]]:
    """Every export of one config, in config order, each embedding the campaign (> 1 export)."""
    campaign = None
    if config.campaign is not None and len(config.exports) > 1:
        by_name = {e.export_name: e.recommendation for e in config.exports}
        campaign = campaign_object(config.campaign, by_name)
    return [artifact(e, config, created_at=created_at, campaign=campaign)
            for e in config.exports]


def rivet_document(configs: tuple[ConfigPlan, ...], *, created_at: datetime) -> Any:
    """rivet's stdout framing: one object for a single export, else an array (config order)."""
    items = [a for c in configs for a in config_artifacts(c, created_at=created_at)]
    return items[0] if len(items) == 1 else items
