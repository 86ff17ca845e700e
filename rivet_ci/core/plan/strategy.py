"""What rivet resolves for an export before it runs: tuning, strategy, parallelism, rationale,
fingerprint kind.

rivet's `ResolvedRunPlan` (rivet-plan.md §10.3) is decided here, from the export's config and
its signals: the tuning (export `tuning` over `source.tuning` over the environment's profile),
the run strategy with its parameters, the compression a `compression_profile` stands for,
`max_file_size` in bytes; and what rivet's artifact says about the plan: the fingerprint's kind
(§10.8), the recommended parallelism (§5.4), the recommended profile and the strategy rationale
(§10.9). The plan document and rivet's artifact (`rivet_ci.core.formats`) only write what these
return. A config key that changes what rivet resolves changes this module (and, for a new JSON
key, `strategy_json`), not the writers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from rivet_ci.core.config.models import Compression, ExportConfig, SourceConfig
from rivet_ci.core.config.rules import max_file_size_bytes
from rivet_ci.core.plan.diagnostics import PREFLIGHT_FAILED_VERDICT, config_value, peak_memory_mb
from rivet_ci.core.plan.signals import Signals

if TYPE_CHECKING:  # the JSON's types only (see `rivet_ci.core.plan.strategy_json`)
    from rivet_ci.core.plan.strategy_json import ResolvedTuningJSON, RivetStrategyJSON

TUNING_KEYS = ("batch_size", "batch_size_memory_mb", "throttle_ms", "statement_timeout_s",
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
_COMPRESSION_PROFILES: dict[str, tuple[Compression, int | None]] = {
    "none": ("none", None), "fast": ("snappy", None), "balanced": ("zstd", 3),
    "compact": ("zstd", 9)}


# Whether a type is a Mapping, per type: `isinstance` against the ABC is slow on the hot path
# (tens of field reads per export).
_IS_MAPPING: dict[type, bool] = {}


def section_value(section: Any, key: str) -> Any:
    """A key of a config section (a model or a mapping); None when the section is absent."""
    if section is None:
        return None
    kind = type(section)
    is_mapping = _IS_MAPPING.get(kind)
    if is_mapping is None:
        is_mapping = _IS_MAPPING[kind] = isinstance(section, Mapping)
    return section.get(key) if is_mapping else getattr(section, key, None)


# --- resolved_plan (§10.3) ------------------------------------------------------------------------

def resolved_tuning(export: ExportConfig, source: SourceConfig | None,
                    ) -> tuple[ResolvedTuningJSON, str]:
    """rivet's resolved tuning (rivet-config.md §2.16) and its `tuning_profile_label`."""
    merged: dict[str, Any] = {}
    for level in (section_value(source, "tuning"), config_value(export, "tuning")):
        for key in ("profile", *TUNING_KEYS):
            value = section_value(level, key)
            if value is not None:
                merged[key] = value
    environment = section_value(source, "environment")
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
    for key in TUNING_KEYS:
        if key in merged:
            tuning[key] = merged[key]
    if "batch_size_memory_mb" not in merged and "batch_size" in merged:
        tuning["batch_size_memory_mb"] = None
    tuning["max_batch_memory_mb"] = merged.get("max_batch_memory_mb")
    ordered = {key: tuning[key] for key in TUNING_KEYS}
    ordered["configured_profile"] = profile
    return cast("ResolvedTuningJSON", ordered), label


def run_strategy(f: ExportConfig, s: Signals, tuning: Mapping[str, Any],
                 source: SourceConfig | None = None) -> RivetStrategyJSON:
    """`resolved_plan.strategy` (serde's external tagging) from the export, its signals and its
    resolved tuning."""
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
        # `dense` is rivet 0.24.5's key, kept in the artifact's shape: always false, as no
        # config rivet 0.32 accepts sets `chunk_dense` (V-E32).
        return {"Chunked": {
            "column": s.chunk_column, "chunk_size": s.chunk_size,
            "chunk_count": f.chunk_count, "parallel": f.parallel,
            "dense": False, "by_days": f.chunk_by_days,
            "checkpoint": bool(f.chunk_checkpoint), "max_attempts": attempts}}
    if kind == "keyset":
        if f.mode == "full":  # MongoDB `page_size`: checkpoint = incremental = resume
            resume = bool(section_value(section_value(source, "mongo"), "resume"))
            return {"Keyset": {"key_column": "_id", "chunk_size": s.chunk_size,
                               "checkpoint": resume, "incremental": resume,
                               "parallel": f.parallel}}
        incremental = bool(f.keyset_incremental)
        return {"Keyset": {
            "key_column": s.chunk_column, "chunk_size": s.chunk_size,
            "checkpoint": bool(f.chunk_checkpoint) or incremental,
            "incremental": incremental, "parallel": f.parallel}}
    return "Snapshot"


def resolved_compression(export: ExportConfig) -> tuple[Compression, int | None]:
    """The codec and level rivet writes with: `compression_profile` over `compression` and
    `compression_level`."""
    profile = export.compression_profile
    if profile is not None:
        return _COMPRESSION_PROFILES[str(profile)]
    return export.compression or "zstd", export.compression_level


def resolved_max_file_size(text: Any) -> int | None:
    """rivet's `max_file_size` in bytes (rivet-config.md B.4), None when unset or refused."""
    return None if text is None else max_file_size_bytes(str(text))


# --- the artifact's plan: fingerprint (§10.8) and diagnostics (§10.9) ---------------------------

def fingerprint_kind(export: ExportConfig, chunk_size: int) -> str:
    """The kind of chunking a chunked plan's `plan_fingerprint` is taken over."""
    if export.chunk_by_days is not None:
        return f"date_{export.chunk_by_days}d"
    if export.chunk_count is not None:
        return f"count_{export.chunk_count}"
    return f"range_{chunk_size}"


def resolved_profile(signals: Signals) -> str:
    """`diagnostics.recommended_profile` of rivet's artifact: `balanced` when preflight failed
    (§5.3)."""
    if signals.verdict == PREFLIGHT_FAILED_VERDICT:
        return "balanced"
    return signals.recommended_profile


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
    """rivet's `diagnostics.strategy_rationale` (§10.9): the mode, the geometry, the
    parallelism against its recommendation and the memory budget, the risk."""
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
