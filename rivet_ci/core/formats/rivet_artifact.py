"""rivet's own plan artifact (`rivet plan --format json`, rivet-plan.md §10), written from a plan.

`plan --format rivet-json` writes exactly rivet 0.24.5's shape — key order, nulls, strategy
encodings, `integrity`, `plan_fingerprint`, the campaign embedded in every artifact — so tools
written for rivet (its Airflow recipe reads `plan[0]["prioritization"]["campaign"]
["ordered_exports"]`) read it unchanged. What rivet-ci cannot know without running rivet is
documented in `docs/plan-json.md` (e.g. `cursor_snapshot` is null, `plan_id` is derived).

This module writes; what rivet resolves for an export (tuning, strategy, compression,
`max_file_size`, the fingerprint's kind, the recommended profile and parallelism, the strategy
rationale) is decided in `rivet_ci.core.plan.strategy`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, cast

import xxhash

from rivet_ci.core.config.models import DestinationConfig, ExportConfig, SourceConfig
from rivet_ci.core.plan.planner import ConfigPlan, PlannedExport
from rivet_ci.core.plan.recommendation import Campaign, ExportRecommendation
from rivet_ci.core.plan.resolve import generate_chunks
from rivet_ci.core.plan.signals import Signals
from rivet_ci.core.plan.strategy import (
    TUNING_KEYS,
    fingerprint_kind,
    resolved_compression,
    resolved_max_file_size,
    resolved_profile,
    resolved_tuning,
    run_strategy,
    section_value,
    strategy_rationale,
)

if TYPE_CHECKING:  # the format's types only (see `rivet_ci.core.formats.document`)
    from rivet_ci.core.formats.plan_format import (
        ColumnTypeJSON,
        DestinationJSON,
        ParquetJSON,
        PlainColumnType,
        ResolvedPlanJSON,
        SourceBlockJSON,
    )
    from rivet_ci.core.plan.strategy_json import ResolvedTuningJSON

RIVET_VERSION = "0.24.5"
_DESTINATION_KEYS = ("type", "bucket", "prefix", "path", "region", "endpoint", "credentials_file",
                     "access_key_env", "secret_key_env", "session_token_env", "aws_profile",
                     "account_name", "account_key_env", "sas_token_env")
_SOURCE_KEYS = ("type", "url", "url_env", "url_file", "host", "port", "user", "password",
                "password_env", "database", "environment")
_USERINFO = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*://)[^@/]*@")


_SCALARS = (str, int, float, bool, type(None))


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

def _expand(text: Any, export: str, day: str) -> Any:
    if not isinstance(text, str):
        return text
    return text.replace("{date}", day).replace("{export}", export).replace("{table}", export)


def source_block(source: SourceConfig | None) -> SourceBlockJSON:
    """`resolved_plan.source`: the `source` section with the password removed and the URL's
    userinfo redacted. The same for every export of a config: build it once per config."""
    out: dict[str, Any] = {key: _plain(section_value(source, key)) for key in _SOURCE_KEYS}
    out["password"] = None
    if isinstance(out["url"], str):
        out["url"] = _USERINFO.sub(r"\1REDACTED@", out["url"])
    tuning = section_value(source, "tuning")
    out["tuning"] = ({key: _plain(section_value(tuning, key))
                      for key in ("profile", *TUNING_KEYS)}
                     if tuning is not None else None)
    tls = section_value(source, "tls")
    out["tls"] = ({"mode": section_value(tls, "mode"), "ca_file": section_value(tls, "ca_file"),
                   "accept_invalid_certs": bool(section_value(tls, "accept_invalid_certs")),
                   "accept_invalid_hostnames": bool(section_value(tls, "accept_invalid_hostnames"))}
                  if isinstance(tls, Mapping) or hasattr(tls, "model_dump") else None)
    mongo = section_value(source, "mongo")
    if mongo is not None and hasattr(mongo, "model_dump"):
        mongo = mongo.model_dump(mode="json", by_alias=True)  # `json` is an alias
    out["mongo"] = ({key: _plain(section_value(mongo, key)) for key in
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
    compression, level = resolved_compression(f)
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
        "strategy": run_strategy(f, signals, tuning, source),
        "format": f.format or "parquet",
        "compression": compression,
        "compression_level": level,
        "max_file_size_bytes": None if size is None else resolved_max_file_size(size),
        "skip_empty": bool(f.skip_empty),
        "meta_columns": {"exported_at": bool(meta.get("exported_at")),
                         "row_hash": _plain(row_hash) if row_hash is not None else False},
        "destination": dest,
        "quality": None if quality is None else {
            "row_count_min": section_value(quality, "row_count_min"),
            "row_count_max": section_value(quality, "row_count_max"),
            "null_ratio_max": _plain(section_value(quality, "null_ratio_max") or {}),
            "unique_columns": _plain(section_value(quality, "unique_columns") or []),
            "unique_max_entries": section_value(quality, "unique_max_entries")},
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
            key: _plain(section_value(parquet, key)) for key in _PARQUET_KEYS}),
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
                                       fingerprint_kind(cfg, signals.chunk_size or 0))
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
            "recommended_profile": resolved_profile(signals),
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
