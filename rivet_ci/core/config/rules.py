"""Every load-time rule of rivet's config (spec rivet-config.md §3), in rivet's order.

Each rule has an id (the spec's), a class and our message: *static* rules depend only on the
files in the repository and are always checked; *environment* rules depend on the machine (an
environment variable being set, a file existing) and are checked only with
`--check-environment` — otherwise they are reported as a note that never blocks. rivet stops at
the first failure; we report every rule that fires, in rivet's order, so one run shows them all.
`RULES` is the one definition: docs/configs.md's table is checked against it by a test.
"""

from __future__ import annotations

import ipaddress
import math
import re
import string
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from rivet_ci.core.common.limits import U64_MAX
from rivet_ci.core.config.models import (
    DEFAULT_CHUNK_SIZE,
    TUNING_KEYS,
    ExportConfig,
    LoadPartition,
    LoadSection,
    SourceConfig,
    TuningConfig,
)

RuleClass = Literal["static", "environment"]
Loc = tuple[str | int, ...]


@dataclass(frozen=True)
class Rule:
    id: str
    klass: RuleClass
    field: str
    message: str
    severity: Literal["error", "warning"] = "error"


def _r(id: str, field: str, message: str, klass: RuleClass = "static",
       severity: Literal["error", "warning"] = "error") -> Rule:
    return Rule(id, klass, field, message, severity)


RULES: tuple[Rule, ...] = (
    # Stage R — reading and substituting the text.
    _r("R0", "--param", "--param {item!r} is not KEY=VALUE (the '=' is missing); "
       "e.g. --param table=orders"),
    _r("R1", "", "config file not found"),
    _r("R2", "", "cannot read the config file: {reason}"),
    _r("R3", "${NAME}", "${{{name}}} is not set: give --param {name}=VALUE (it wins over the "
       "environment) or set the environment variable {name} (rivet refuses to substitute an "
       "empty string for it)", "environment"),
    _r("R3-value", "<key>", "its value comes from ${{NAME}}, which is not set, so it cannot be "
       "checked or planned", "environment"),
    _r("R4", "${NAME}", "the value for ${{{name}}} contains a NUL byte; rivet refuses to "
       "substitute it", "environment"),
    # Stage P — the YAML itself and rivet's raw pre-scans.
    _r("P0-syntax", "", "invalid YAML: <parser message> (with a hint for TAB indentation and "
       "for unquoted {{...}} values)"),
    _r("P0-multi-document", "", "a config must be one YAML document"),
    _r("P0-bom", "", "the file starts with a byte-order mark directly followed by content, "
       "which rivet refuses (a BOM before a blank or comment line it skips); save it as UTF-8 "
       "without a BOM"),
    _r("P0-duplicate-key", "<key>", "duplicate key `<key>`: rivet refuses the file"),
    _r("P0-huge-int", "<key>", "an integer beyond 64 bits is refused anywhere in the file"),
    _r("P0-depth", "", "nested deeper than 128 levels (recursion limit exceeded)"),
    _r("P0-repetition", "", "aliases expand beyond rivet's bound (repetition limit exceeded)"),
    _r("P1a", "source.<key>", "{fields} belong under `source.tuning:`, not directly under "
       "`source:`"),
    _r("P1b", "exports[i].<key>", "{fields} belong under the export's `tuning:`, not directly "
       "in the export"),
    _r("P2a", "exports[i].compression", "CSV output cannot be compressed ({codec}): the codec "
       "would be silently dropped; use format: parquet or compression: none"),
    _r("P2b", "exports[i].compression_profile", "CSV output cannot use compression_profile "
       "{value} (it picks a codec CSV cannot apply); use format: parquet or "
       "compression_profile: none"),
    _r("P3", "source.tls.<knob>", "{knob}: true turns the explicit `mode: {mode}` into "
       "trust-anything TLS (open to man-in-the-middle); trust a private CA with ca_file, or "
       "drop the explicit mode for a loopback dev container"),
    # Stage T — typing against the schema.
    _r("T-unknown-key", "<key>", "unknown key `<key>` (did you mean `<candidate>`?)"),
    _r("T-missing", "<key>", "missing required key `<key>`"),
    _r("T-type", "<key>", "expected <type>, got <value>"),
    _r("T-enum", "<key>", "unknown value <value>, expected one of <values>"),
    _r("T-range", "<key>", "<n> is out of range: expected an integer from 0 to <max>"),
    _r("T-row-hash", "exports[i].meta_columns.row_hash", "row_hash must be true, false or a "
       "list of column names"),
    _r("T-key", "<key>", "a mapping or list cannot be a key"),
    # Stage V — the export list.
    _r("V-L1", "exports", "at least one export must be defined (the list is empty)"),
    _r("V-L2", "exports[i].name", "export name {name!r} is used twice (first at exports[{first}]); "
       "names must be unique, rivet keys its state by name"),
    # Stage V — the source connection.
    _r("V-S1", "source.tuning", "batch_size and batch_size_memory_mb cannot both be set; "
       "prefer batch_size_memory_mb, or set batch_size alone to pin a row count"),
    _r("V-S2", "source", "no way to connect: give url_env (recommended), url, url_file, or "
       "host/user/database"),
    _r("V-S3", "source.<url key>", "give exactly one of url, url_env, url_file ({count} are "
       "set); url_env keeps credentials out of the YAML"),
    _r("V-S4", "source.<key>", "give either a URL (url/url_env/url_file) or structured fields "
       "(host/user/database/password...), not both"),
    _r("V-S5", "source.host", "structured connection without `host`"),
    _r("V-S6", "source.user", "structured connection without `user`"),
    _r("V-S7", "source.database", "structured connection without `database`"),
    _r("V-S8", "source.password", "give password or password_env, not both (prefer "
       "password_env)"),
    # Stage V — each export.
    _r("V-E1", "exports[i].name", "export name '{name}' is not filename-safe: no '/', '\\', "
       "'..', NUL, no leading '.', not absolute (it names output paths and state keys)"),
    _r("V-E2", "exports[i].tables", "tables entry '{entry}' is not filename-safe: no '/', '\\', "
       "'..', NUL, no leading '.' (each table becomes a path segment)"),
    _r("V-E3a", "exports[i].meta_columns.row_hash", "row_hash is an empty list, which covers "
       "nothing: use true for every column or name the columns"),
    _r("V-E3b", "exports[i].meta_columns.row_hash", "row_hash lists {column!r} twice"),
    _r("V-E4", "exports[i].meta_columns.row_hash", "a row_hash column list names one table's "
       "columns and cannot apply to a multi-table `tables:` stream; use one export per table "
       "or row_hash: true"),
    _r("V-E5a", "exports[i].partition_by", "partition_by must name a column"),
    _r("V-E5b", "exports[i].partition_by", "partition_by column '{column}' is not "
       "filename-safe (it becomes a col=value path segment)"),
    _r("V-E5c", "exports[i].partition_by", "partition_by does not work with mode: {mode} (it "
       "lays out batch output; partition a full, chunked or incremental export)"),
    _r("V-E5d", "exports[i].partition_by", "partition_by does not work with a `load:` block "
       "(the loader would load one partition and cleanup_source would wipe the rest)"),
    _r("V-E5e", "exports[i].partition_by", "partition_by does not work with chunk_by_key "
       "(partitioning wraps the query, so the keyset index cannot be verified)"),
    _r("V-E5f", "exports[i].partition_by", "partition_by needs a '{{partition}}' token in "
       "destination.path or destination.prefix, or every partition overwrites the same place"),
    _r("V-E6", "exports[i].chunk_size_memory_mb", "chunk_size and chunk_size_memory_mb cannot "
       "both be set (the memory budget decides the window size; chunk_size would be ignored)"),
    _r("V-E7", "exports[i].tuning", "the effective tuning (export over source) sets both "
       "batch_size and batch_size_memory_mb, which exclude each other"),
    _r("V-E8", "exports[i].tuning", "tuning.batch_size and tuning.batch_size_memory_mb cannot "
       "both be set"),
    _r("V-E9", "exports[i].tables", "`table:` and `tables:` exclude each other; use tables: "
       "[a, b] for a multi-table stream"),
    _r("V-E10a", "exports[i]", "give one of query, query_file, table or tables (table: for a "
       "whole table, query: for inline SQL, query_file: for SQL kept in a file)"),
    _r("V-E10b", "exports[i].<second key>", "give exactly one of query, query_file, table, "
       "tables ({count} are set)"),
    _r("V-E11a", "exports[i].query_file", "query_file must be a relative path: '{path}'"),
    _r("V-E11b", "exports[i].query_file", "query_file must not contain '..': '{path}'"),
    _r("V-E12", "exports[i].destination.endpoint", "destination.endpoint '{endpoint}' is not a "
       "loopback host: a committed custom endpoint sends every upload elsewhere; drop it, point "
       "it at a loopback emulator, or set allow_anonymous: true for an anonymous emulator"),
    _r("V-E13", "exports[i].destination.<path|prefix>", "local destination {key} '{value}' "
       "must not contain a '..' component (it would write outside the output tree)"),
    _r("V-E14", "exports[i].destination", "S3 needs both access_key_env and secret_key_env, "
       "or neither (default AWS credential chain)"),
    _r("V-E15", "exports[i].destination.allow_anonymous", "GCS allow_anonymous and "
       "credentials_file exclude each other"),
    _r("V-E16a", "exports[i].destination.allow_anonymous", "Azure allow_anonymous excludes "
       "account_name, account_key_env and sas_token_env"),
    _r("V-E16b", "exports[i].destination.sas_token_env", "Azure account_key_env and "
       "sas_token_env exclude each other; pick one way to authenticate"),
    _r("V-E16c", "exports[i].destination", "Azure needs account_name (with account_key_env or "
       "sas_token_env), or allow_anonymous: true for Azurite"),
    _r("V-E16d", "exports[i].destination", "Azure needs account_key_env or sas_token_env (or "
       "allow_anonymous: true for Azurite)"),
    _r("V-E17", "exports[i].destination.credentials_file", "credentials_file '{path}' does not "
       "exist", "environment"),
    _r("V-E18", "exports[i].max_file_size", "max_file_size '{value}' is not a size (e.g. 256MB, "
       "1.5GB, 1048576)"),
    _r("V-E19a", "exports[i].compression_level", "zstd compression_level must be 1..22, got "
       "{level}"),
    _r("V-E19b", "exports[i].compression_level", "gzip compression_level must be 0..9, got "
       "{level}"),
    _r("V-E19c", "exports[i].compression_level", "compression_level applies only to zstd and "
       "gzip (compression is {compression})"),
    _r("V-E20a", "exports[i].cursor_column", "incremental mode needs cursor_column"),
    _r("V-E20b", "exports[i].cursor_fallback_column", "incremental_cursor_mode: coalesce needs "
       "cursor_fallback_column"),
    _r("V-E20c", "exports[i].cursor_fallback_column", "cursor_fallback_column is only valid "
       "with incremental_cursor_mode: coalesce"),
    _r("V-E20d", "exports[i].mode", "chunked mode needs a chunking strategy: chunk_column, "
       "chunk_by_key, chunk_count or chunk_by_days — or the `table:` shortcut, whose integer "
       "primary key rivet resolves"),
    _r("V-E20e", "exports[i].chunk_size", "chunked mode needs chunk_size >= 1 (got 0)"),
    _r("V-E20f", "exports[i].parallel", "chunked mode needs parallel >= 1 (got 0)"),
    _r("V-E20g", "exports[i].chunk_count", "chunk_count must be at least 1"),
    _r("V-E20i", "exports[i].chunk_by_days", "chunk_count and chunk_by_days exclude each other "
       "(N integer chunks, or D-day windows of a date column)"),
    _r("V-E20j", "exports[i].time_column", "time_window mode needs time_column"),
    _r("V-E20k", "exports[i].days_window", "time_window mode needs days_window"),
    _r("V-E20l", "exports[i].mode", "cdc mode needs `table:` (or `tables:` for a multi-table "
       "stream)"),
    _r("V-E20m", "exports[i].tables", "`tables:` must list at least one table"),
    _r("V-E20n", "exports[i].tables", "table {table!r} is listed twice in `tables:`"),
    _r("V-E20o", "exports[i].tables", "`tables:` is not supported for SQL Server cdc (capture "
       "instances are per table): use one cdc export per table"),
    _r("V-E20p", "exports[i].<query|query_file>", "cdc mode reads the transaction log, not a "
       "query: remove query/query_file and use `table:`"),
    _r("V-E21", "exports[i].tables", "`tables:` is only valid with mode: cdc (a batch export "
       "reads one query or table)"),
    _r("V-E23", "exports[i].<knob>", "{knob} needs mode: chunked — in mode: {mode} it is "
       "ignored and the whole table is read in one unbounded snapshot; add mode: chunked or "
       "remove {knob}"),
    _r("V-E24", "exports[i].keyset_incremental", "keyset_incremental: true needs chunk_by_key "
       "(it continues from the last exported key; a range chunk_column has no such key)"),
    _r("V-E25", "exports[i].cdc", "a `cdc:` block is only valid with mode: cdc"),
    _r("V-E26a", "exports[i].columns.<key>", "qualified column override '{key}' needs a "
       "table-shaped export (table:/tables:), not a query"),
    _r("V-E26b", "exports[i].columns.<key>", "column override '{key}' names table '{table}', "
       "which this export does not read; fix the table name or use a bare column key"),
    _r("V-E27", "exports[i].cdc.initial", "a table named 'snapshot' collides with the "
       "snapshot/ sub-prefix that cdc.initial: snapshot writes; rename it or use another "
       "export without initial"),
    _r("V-E28", "exports[i].cdc.checkpoint", "cdc.initial on {engine} needs cdc.checkpoint "
       "(the file is the only resume anchor; without it every run skips the changes since the "
       "last one)"),
    _r("V-E29", "exports[i].cdc.checkpoint", "{engine} mode: cdc needs cdc.checkpoint (no "
       "server-side resume anchor; without it every run loses the changes between runs)"),
    _r("V-E31a", "exports[i].chunk_by_days", "chunk_by_days needs mode: chunked"),
    _r("V-E31c", "exports[i].chunk_by_days", "chunk_by_days must be at least 1"),
    _r("V-E32", "exports[i].chunk_dense", "`chunk_dense` was removed in rivet 0.32 (it "
       "re-numbered rows per chunk and skipped or duplicated rows under concurrent writes); use "
       "`chunk_by_key: <unique key>` (keyset) or `chunk_column:` range chunking"),
    _r("V-E33a", "exports[i].<knob>", "chunk_by_key and {knob} are mutually exclusive"),
    _r("V-E33b", "exports[i].chunk_by_key", "`chunk_by_key:` needs the `table:` shortcut so the "
       "planner can verify the key is backed by a unique index; set `table:` instead of a "
       "query"),
    _r("V-E33c", "exports[i].chunk_size_memory_mb", "`chunk_size_memory_mb:` only applies with "
       "the `table:` shortcut — set `table:` or remove it and keep an explicit `chunk_size:`"),
    _r("V-E33d", "exports[i].chunk_column", "chunked mode requires 'chunk_column' (auto-resolve "
       "from the primary key is only supported with the `table:` shortcut)"),
    _r("V-E34a", "exports[i].max_file_size", "max_file_size cannot be used with a stdout "
       "destination (file splitting needs named output files)"),
    _r("V-E34b", "exports[i].destination", "chunked mode cannot be used with a stdout "
       "destination (each chunk is a separate binary stream; concatenated output is unusable)"),
    _r("V-E35a", "exports[i].settle", "`settle` requires mode: incremental (it bounds the "
       "incremental cursor query and would be ignored in mode: {mode})"),
    _r("V-E35b", "exports[i].settle.after", "settle.after {after!r} is not a duration: use a "
       "positive number with a unit, `90s`, `30m`, `1h` or `2d`"),
    _r("V-E35c", "exports[i].settle.after", "settle.after {after!r} exceeds 2147483647 seconds "
       "(~68 years), the largest age every source can compute"),
    _r("V-E36a", "exports[i].cdc.rollover", "cdc.rollover must be >= 1 (got 0): a zero rollover "
       "rolls a part on every event"),
    _r("V-E36b", "exports[i].cdc.rollover_memory_mb", "cdc.rollover_memory_mb must be >= 1 "
       "(got 0): a zero budget rolls a part on every event"),
    _r("V-E37a", "exports[i].cdc.backfill", "`cdc.backfill: auto` found no export reading table "
       "{table!r}; add the batch export that reads it, or name the exports: "
       "`backfill: [<name>, ...]`"),
    _r("V-E37b", "exports[i].cdc.backfill", "`cdc.backfill` names export {name!r}, which this "
       "config does not define"),
    _r("V-E37c", "exports[i].cdc.backfill", "`cdc.backfill` names the cdc export itself; the "
       "baseline is read by a batch export of the same table"),
    _r("V-E37d", "exports[i].cdc.backfill", "`cdc.backfill` names export {name!r}, which reads "
       "{table!r}, a table this stream does not capture"),
    _r("V-E37e", "exports[i].cdc.backfill", "`cdc.backfill` covers {covered} of {total} captured "
       "tables: no baseline for {missing}"),
    _r("V-E38a", "exports[i].table", "'table' is empty"),
    _r("V-E38b", "exports[i].table", "'table' must be `<name>` or `<schema>.<name>` (got "
       "{table!r})"),
    _r("V-E38c", "exports[i].table", "'table' has an empty segment in {table!r}"),
    _r("V-E38d", "exports[i].table", "'table' segment {segment!r} must start with a letter or "
       "underscore (use 'query:' for quoted identifiers)"),
    _r("V-E38e", "exports[i].table", "'table' segment {segment!r} contains non-identifier "
       "characters (use 'query:' for quoted identifiers)"),
    _r("V-E39", "exports[i].query_file", "query_file {path!r} does not exist (relative to the "
       "config's directory)"),
    _r("V-E40", "exports[i].columns.<key>", "column override for {key!r}: {reason}"),
    # Stage V — the `load:` blocks (rivet 0.32).
    _r("V-LD1", "load.<key>", "`load:` targets `{target}` but carries `{key}`, a `{owner}` "
       "field; remove it (it would be silently ignored)"),
    _r("V-LD2", "load", "`load:` targets `{target}` but has no `{key}`"),
    _r("V-LD3", "<load>.partition", "`partition` takes exactly one of `column`, `range` or "
       "`ingestion`"),
    _r("V-LD4", "<load>.partition.range.interval", "`range.interval` must be positive, got "
       "{interval}"),
    _r("V-LD5", "<load>.partition.range", "`range.start` ({start}) must be below `range.end` "
       "({end})"),
    _r("V-LD6", "exports[i].load", "export {name!r} has a `load:` override but the config has no "
       "top-level `load:` block (the warehouse is declared once, at the top level)"),
    _r("V-LD7", "exports[i].load.tables", "`load.tables:` is for a mode: cdc export with "
       "`tables:`; this export has one unit, so its `load:` block already is the table's"),
    _r("V-LD8", "exports[i].load.tables.<table>", "`load.tables.{table}` names a table this "
       "export does not capture"),
    _r("V-LD9", "exports[i].load.tables.<table>.tables", "`load.tables.{table}.tables`: a "
       "per-table block takes no `tables:` of its own"),
    _r("V-LD10", "exports[i].format", "`format: csv` cannot feed a `load:` block (the warehouse "
       "loaders read parquet parts only); use format: parquet"),
    # Stage V — CDC resource conflicts.
    _r("V-C1", "exports[i].cdc.slot", "same PostgreSQL replication slot {slot!r} as export "
       "{previous!r}: a slot has one consumer, sharing it loses data; set a distinct cdc.slot "
       "(default rivet_slot)"),
    _r("V-C2", "exports[i].cdc.server_id", "same MySQL server_id {server_id} as export "
       "{previous!r}: the server drops one of the two replica connections; set a distinct "
       "cdc.server_id (default 4271)"),
    _r("V-C3", "exports[i].cdc.checkpoint", "same checkpoint path {path!r} as export "
       "{previous!r}: each export must own its resume position"),
    # Stage V — MongoDB sources.
    _r("V-M1", "exports[i].mode", "a MongoDB source supports mode: full and mode: cdc only "
       "(got mode: {mode})"),
    _r("V-M2", "exports[i].parallel", "source.mongo.resume: true cannot be combined with "
       "parallel: {parallel} (the parallel _id fan-out keeps no checkpoint); drop one"),
    _r("V-M3", "source.mongo.page_size", "source.mongo.resume: true needs source.mongo.page_size "
       "(only keyset paging reads the checkpoint)"),
    # Warnings (the config is accepted).
    _r("W-param", "--param", "--param {key!r} is not used by any ${{{key}}} placeholder of the "
       "config (names are case-sensitive)", severity="warning"),
)
RULE_BY_ID = {rule.id: rule for rule in RULES}

# rivet's stable error code for each rule (`rivet schema errors`, rivet-cli 0.32.2), so a reviewer
# can look a finding up in rivet's own error reference. Read off the binary's verdicts on the
# differential corpus (`tests/test_config_differential.py` checks each against them); None where
# rivet prints no code (a missing query_file is an OS error) or the rule is ours (`--param`).
_YAML = "RIVET_CONFIG_YAML_INVALID"
_MODE = "RIVET_CONFIG_MODE_SETTING_INVALID"
_RANGE = "RIVET_CONFIG_VALUE_OUT_OF_RANGE"
_SOURCE = "RIVET_CONFIG_EXPORT_SOURCE_INVALID"
_CONNECTION = "RIVET_CONFIG_SOURCE_CONNECTION_INVALID"
_AUTH = "RIVET_CONFIG_DESTINATION_AUTH_INVALID"
_CDC = "RIVET_CONFIG_CDC_SHAPE_INVALID"
_LOAD = "RIVET_CONFIG_LOAD_BLOCK_INVALID"
_PATH = "RIVET_CONFIG_PATH_UNSAFE"
_SECRET = "RIVET_CONFIG_SECRET_UNSET"
RIVET_CODES: dict[str, str | None] = {
    "R0": None, "R1": "RIVET_CONFIG_FILE_UNREADABLE", "R2": "RIVET_CONFIG_FILE_UNREADABLE",
    "R3": _SECRET, "R3-value": _SECRET, "R4": _SECRET,
    **dict.fromkeys(("P0-syntax", "P0-multi-document", "P0-bom", "P0-duplicate-key",
                     "P0-huge-int", "P0-depth", "P0-repetition", "P1a", "P1b"), _YAML),
    "P2a": "RIVET_CONFIG_CSV_COMPRESSION_UNSUPPORTED",
    "P2b": "RIVET_CONFIG_CSV_COMPRESSION_UNSUPPORTED",
    "P3": "RIVET_CONFIG_TLS_VERIFICATION_DOWNGRADE",
    **dict.fromkeys(("T-unknown-key", "T-missing", "T-type", "T-enum", "T-range", "T-row-hash",
                     "T-key"), _YAML),
    "V-L1": "RIVET_CONFIG_NO_EXPORTS", "V-L2": "RIVET_CONFIG_DUPLICATE_EXPORT",
    "V-S1": _RANGE,
    **dict.fromkeys(("V-S2", "V-S3", "V-S4", "V-S5", "V-S6", "V-S7", "V-S8"), _CONNECTION),
    "V-E1": _PATH, "V-E2": _PATH,
    **dict.fromkeys(("V-E3a", "V-E3b", "V-E4"), "RIVET_CONFIG_ROW_HASH_INVALID"),
    "V-E5a": _MODE, "V-E5b": _PATH,
    **dict.fromkeys(("V-E5c", "V-E5d", "V-E5e", "V-E5f"), _MODE),
    "V-E6": _RANGE, "V-E7": _RANGE, "V-E8": _RANGE,
    **dict.fromkeys(("V-E9", "V-E10a", "V-E10b", "V-E11a", "V-E11b"), _SOURCE),
    "V-E12": "RIVET_CONFIG_DESTINATION_ENDPOINT_UNSAFE", "V-E13": _PATH,
    **dict.fromkeys(("V-E14", "V-E15", "V-E16a", "V-E16b", "V-E16c", "V-E16d"), _AUTH),
    "V-E17": _SECRET,
    **dict.fromkeys(("V-E18", "V-E19a", "V-E19b", "V-E19c"), _RANGE),
    **dict.fromkeys(("V-E20a", "V-E20b", "V-E20c", "V-E20d", "V-E20e", "V-E20f", "V-E20i",
                     "V-E20j", "V-E20k"), _MODE),
    "V-E20g": "RIVET_CONFIG_CHUNK_COUNT_INVALID",
    **dict.fromkeys(("V-E20l", "V-E20m", "V-E20n", "V-E20o", "V-E20p"), _CDC),
    **dict.fromkeys(("V-E21", "V-E23", "V-E24", "V-E25"), _MODE),
    "V-E26a": "RIVET_CONFIG_COLUMN_OVERRIDE_TABLE_UNKNOWN",
    "V-E26b": "RIVET_CONFIG_COLUMN_OVERRIDE_TABLE_UNKNOWN",
    "V-E27": _CDC, "V-E28": _MODE, "V-E29": _MODE, "V-E31a": _MODE,
    "V-E31c": "RIVET_CONFIG_CHUNK_BY_DAYS_INVALID",
    "V-E32": _MODE, "V-E33a": _RANGE, "V-E33b": _MODE, "V-E33c": _MODE, "V-E33d": _MODE,
    "V-E34a": "RIVET_PLAN_REJECTED", "V-E34b": "RIVET_PLAN_REJECTED",
    "V-E35a": _MODE, "V-E35b": _RANGE, "V-E35c": _RANGE,
    "V-E36a": "RIVET_CONFIG_CDC_ROLLOVER_INVALID", "V-E36b": "RIVET_CONFIG_CDC_ROLLOVER_INVALID",
    **dict.fromkeys(("V-E37a", "V-E37b", "V-E37c", "V-E37d", "V-E37e"), _CDC),
    **dict.fromkeys(("V-E38a", "V-E38b", "V-E38c", "V-E38d", "V-E38e"), _SOURCE),
    "V-E39": None, "V-E40": "RIVET_CONFIG_COLUMN_OVERRIDE_TYPE_INVALID",
    **dict.fromkeys(("V-LD1", "V-LD2", "V-LD3", "V-LD4", "V-LD5"), _YAML),
    **dict.fromkeys(("V-LD6", "V-LD7", "V-LD8", "V-LD9"), _LOAD),
    "V-LD10": "RIVET_CONFIG_CSV_LOAD_UNSUPPORTED",
    **dict.fromkeys(("V-C1", "V-C2", "V-C3"), "RIVET_CONFIG_CDC_RESOURCE_CONFLICT"),
    **dict.fromkeys(("V-M1", "V-M2", "V-M3"), "RIVET_CONFIG_SOURCE_MODE_UNSUPPORTED"),
    "W-param": None,
}


def rivet_code(rule: str | None) -> str | None:
    """rivet's stable error code for one of our rules (None: rivet has none, or no rule)."""
    return RIVET_CODES.get(rule) if rule is not None else None


def rule_tag(rule: str | None) -> str:
    """` [V-E38b RIVET_CONFIG_EXPORT_SOURCE_INVALID]`: the rule id and rivet's code, as every
    output names a config problem (check, the gate's findings: annotations, the comment and
    plan.json); empty when no rule fired."""
    if rule is None:
        return ""
    code = rivet_code(rule)
    return f" [{rule} {code}]" if code else f" [{rule}]"
ENVIRONMENT_RULES = frozenset(r.id for r in RULES if r.klass == "environment")


@dataclass(frozen=True)
class Finding:
    """A rule that fired: where (a path from the root) and the values its message names."""

    loc: Loc
    rule: str
    values: tuple[tuple[str, Any], ...] = ()

    @property
    def message(self) -> str:
        return RULE_BY_ID[self.rule].message.format(**dict(self.values))


def _f(loc: Loc, rule: str, **values: Any) -> Finding:
    return Finding(loc, rule, tuple(values.items()))


# -- helper predicates (spec appendix B) ---------------------------------------------------------

def filename_safe(name: str) -> bool:
    return (bool(name) and not name.startswith(".") and "/" not in name and "\\" not in name
            and ".." not in name and "\0" not in name)


def escape_default(text: str) -> str:
    """Rust's `str::escape_default` (how rivet shows an unsafe name)."""
    out = []
    for char in text:
        code = ord(char)
        if char in "\t\r\n":
            out.append({"\t": "\\t", "\r": "\\r", "\n": "\\n"}[char])
        elif char in "'\"\\":
            out.append("\\" + char)
        elif 0x20 <= code <= 0x7E:
            out.append(char)
        else:
            out.append(f"\\u{{{code:x}}}")
    return "".join(out)


def _has_parent_component(path: str) -> bool:
    return any(part == ".." for part in path.split("/") if part)


def endpoint_host(endpoint: str) -> str | None:
    scheme, sep, rest = endpoint.partition("://")
    if not sep or not scheme:
        return None
    authority = re.split(r"[/?#]", rest, maxsplit=1)[0]
    authority = authority.rsplit("@", 1)[-1]
    if authority.startswith("["):
        host = authority[1:].split("]", 1)[0]
        host = "[" + host + "]"
    else:
        host = authority.split(":", 1)[0]
    return host.lower() or None


def is_loopback(host: str | None) -> bool:
    if host is None:
        return False
    if host == "localhost":
        return True
    text = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return False
    return bool(address.is_loopback) and not (
        isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None)


_SIZE_NUMBER = re.compile(
    r"[+-]?(inf|infinity|nan|([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?)\Z", re.IGNORECASE)


def max_file_size_bytes(text: str) -> int | None:
    """rivet's size parser (spec B.4): bytes, or None when it refuses the text."""
    s = text.strip().upper()
    multiplier = 1
    for suffix, factor in (("GB", 1024**3), ("MB", 1024**2), ("KB", 1024), ("B", 1)):
        if s.endswith(suffix):
            s, multiplier = s[: -len(suffix)].strip(), factor
            break
    if not _SIZE_NUMBER.match(s):
        return None
    value = float(s) * multiplier
    if math.isnan(value) or value <= 0:
        return None
    size = U64_MAX if value > U64_MAX else int(value)
    return size or None


def merged_tuning(export: ExportConfig, source: SourceConfig | None) -> dict[str, Any]:
    """Per key: the export's `tuning` value if set, else the source's (unset keys omitted)."""
    out: dict[str, Any] = {}
    layers = [t for t in ((source.tuning if source else None), export.tuning) if t is not None]
    for layer in layers:
        for key in TUNING_KEYS:
            value = getattr(layer, key)
            if value is not None:
                out[key] = value
    return out


_ENGINE_NAMES = {"postgres": "PostgreSQL", "mysql": "MySQL", "mssql": "SQL Server",
                 "oracle": "Oracle", "mongo": "MongoDB"}


# -- the rules -------------------------------------------------------------------------------

def source_findings(source: SourceConfig) -> list[Finding]:
    """V-S1..V-S8, in rivet's order."""
    out: list[Finding] = []
    tuning = source.tuning
    if tuning is not None and tuning.batch_size is not None and \
            tuning.batch_size_memory_mb is not None:
        out.append(_f(("source", "tuning"), "V-S1"))
    urls = [k for k in ("url", "url_env", "url_file") if getattr(source, k) is not None]
    structured = [k for k in ("host", "user", "database", "password", "password_env")
                  if getattr(source, k) is not None]
    if not urls and not structured:
        out.append(_f(("source",), "V-S2"))
        return out
    if urls:
        if len(urls) > 1:
            out.append(_f(("source", urls[1]), "V-S3", count=len(urls)))
        if structured:
            out.append(_f(("source", structured[0]), "V-S4"))
        return out
    for key, rule in (("host", "V-S5"), ("user", "V-S6"), ("database", "V-S7")):
        if getattr(source, key) is None:
            out.append(_f(("source", key), rule))
    if source.password is not None and source.password_env is not None:
        out.append(_f(("source", "password"), "V-S8"))
    return out


def list_findings(exports: list[tuple[int, ExportConfig]], count: int) -> list[Finding]:
    """V-L1, V-L2 (over the exports that typed)."""
    if count == 0:
        return [_f(("exports",), "V-L1")]
    out = []
    first: dict[str, int] = {}
    for index, export in exports:
        name = export.name
        if name in first:
            out.append(_f(("exports", index, "name"), "V-L2", name=name, first=first[name]))
        else:
            first[name] = index
    return out


def export_findings(
    export: ExportConfig, index: int, source: SourceConfig | None, *, top_level_load: bool,
    path_exists: Callable[[str], bool] | None,
    query_file_exists: Callable[[str], bool] | None = None,
) -> list[Finding]:
    """V-E1..V-E31 for one export, in rivet's order. `path_exists` checks credentials_file
    (environment-dependent); None = not checked here (the caller notes it)."""
    at: Loc = ("exports", index)
    out: list[Finding] = []
    add = out.append
    e = export
    mode, tables = e.mode, e.tables  # (each field read once: pydantic attribute reads are slow)
    if not filename_safe(e.name):
        add(_f((*at, "name"), "V-E1", name=escape_default(e.name)))
    if tables is not None:
        for entry in tables:
            if not filename_safe(entry):
                add(_f((*at, "tables"), "V-E2", entry=escape_default(entry)))
                break
    row_hash = e.meta_columns.row_hash
    if isinstance(row_hash, tuple):
        rh_at = (*at, "meta_columns", "row_hash")
        if not row_hash:
            add(_f(rh_at, "V-E3a"))
        else:
            seen: set[str] = set()
            for column in row_hash:
                if column in seen:
                    add(_f(rh_at, "V-E3b", column=column))
                    break
                seen.add(column)
        if tables is not None:
            add(_f(rh_at, "V-E4"))
    if e.partition_by is not None:
        pb_at = (*at, "partition_by")
        if not e.partition_by.strip():
            add(_f(pb_at, "V-E5a"))
        elif not filename_safe(e.partition_by):
            add(_f(pb_at, "V-E5b", column=escape_default(e.partition_by)))
        if mode in ("time_window", "cdc"):
            add(_f(pb_at, "V-E5c", mode=mode))
        if e.load is not None or top_level_load:
            add(_f(pb_at, "V-E5d"))
        if e.chunk_by_key is not None:
            add(_f(pb_at, "V-E5e"))
        if "{partition}" not in (e.destination.path or "") and \
                "{partition}" not in (e.destination.prefix or ""):
            add(_f(pb_at, "V-E5f"))
    if e.chunk_size_memory_mb is not None and e.chunk_size != DEFAULT_CHUNK_SIZE:
        add(_f((*at, "chunk_size_memory_mb"), "V-E6"))
    own: TuningConfig | None = e.tuning
    if own is not None or (source is not None and source.tuning is not None):
        merged = merged_tuning(e, source)
        if "batch_size" in merged and "batch_size_memory_mb" in merged:
            add(_f((*at, "tuning"), "V-E7"))
            if own is not None and own.batch_size is not None and \
                    own.batch_size_memory_mb is not None:
                add(_f((*at, "tuning"), "V-E8"))
    _reading(e, at, add)
    _destination(e, at, add, path_exists)
    if e.max_file_size is not None and max_file_size_bytes(e.max_file_size) is None:
        add(_f((*at, "max_file_size"), "V-E18", value=e.max_file_size))
    if e.compression_level is not None:
        level = e.compression_level
        cl_at = (*at, "compression_level")
        if e.compression == "zstd" and not 1 <= level <= 22:
            add(_f(cl_at, "V-E19a", level=level))
        elif e.compression == "gzip" and level > 9:
            add(_f(cl_at, "V-E19b", level=level))
        elif e.compression in ("snappy", "lz4", "none"):
            add(_f(cl_at, "V-E19c", compression=e.compression))
    _mode_rules(e, mode, at, add, source)
    if e.columns:  # nearly every export has no column overrides
        _column_overrides(e, at, add)
        if mode != "cdc":  # rivet's plan reads the types before it connects
            out += column_type_findings(e, index)
    if e.cdc is not None or mode == "cdc":  # every cdc rule needs a `cdc:` section or mode
        _cdc(e, at, add, source)
    if e.chunk_by_days is not None:
        cd_at = (*at, "chunk_by_days")
        if mode != "chunked":
            add(_f(cd_at, "V-E31a"))
        if e.chunk_by_days == 0:
            add(_f(cd_at, "V-E31c"))
    if e.chunk_dense:
        add(_f((*at, "chunk_dense"), "V-E32"))
    if mode == "chunked":
        _chunked_shape(e, at, add)
    if e.destination.type == "stdout":  # rivet's plan checks these before it connects
        if e.max_file_size is not None:
            add(_f((*at, "max_file_size"), "V-E34a"))
        if mode == "chunked" and e.chunk_column is not None and e.chunk_by_key is None:
            add(_f((*at, "destination"), "V-E34b"))
    if e.settle is not None:
        _settle(e, mode, at, add)
    if mode != "cdc" and e.table is not None and "${" not in e.table:  # (unset: R3)
        _table_identifier(e.table, at, add)
    if e.query_file is not None and query_file_exists is not None and \
            not e.query_file.startswith("/") and not _has_parent_component(e.query_file) and \
            not query_file_exists(e.query_file):
        add(_f((*at, "query_file"), "V-E39", path=e.query_file))
    return out


def _chunked_shape(e: ExportConfig, at: Loc, add: Add) -> None:
    """V-E33 (a chunked export's knobs, checked before rivet connects)."""
    by_key, chunk_column, memory_mb = e.chunk_by_key, e.chunk_column, e.chunk_size_memory_mb
    if by_key is not None:
        for knob, present in (("chunk_column", chunk_column is not None),
                              ("chunk_by_days", e.chunk_by_days is not None),
                              ("chunk_count", e.chunk_count is not None)):
            if present:
                add(_f((*at, knob), "V-E33a", knob=knob))
                return
    if e.table is not None or (chunk_column is not None and memory_mb is None):
        return
    if by_key is not None:
        add(_f((*at, "chunk_by_key"), "V-E33b"))
    elif memory_mb is not None:
        add(_f((*at, "chunk_size_memory_mb"), "V-E33c"))
    elif e.chunk_count is not None or e.chunk_by_days is not None:  # (else V-E20d)
        add(_f((*at, "chunk_column"), "V-E33d"))


_DURATION = re.compile(r"([0-9]+)([smhd])\Z")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
SETTLE_MAX_SECONDS = 2**31 - 1


def _settle(e: ExportConfig, mode: str, at: Loc, add: Add) -> None:
    """V-E35 (an export with `settle:`)."""
    assert e.settle is not None
    if mode != "incremental":
        add(_f((*at, "settle"), "V-E35a", mode=mode))
    after = e.settle.after
    match = _DURATION.match(after)
    if match is None or int(match.group(1)) == 0:
        add(_f((*at, "settle", "after"), "V-E35b", after=after))
    elif int(match.group(1)) * _SECONDS[match.group(2)] > SETTLE_MAX_SECONDS:
        add(_f((*at, "settle", "after"), "V-E35c", after=after))


_IDENTIFIER_CHARS = frozenset(string.ascii_letters + string.digits + "_")


def _table_identifier(table: str, at: Loc, add: Add) -> None:
    """V-E38: rivet's plan checks a `table:` before it connects — `<name>` or
    `<schema>.<name>`, each an unquoted identifier."""
    t_at = (*at, "table")
    text = table.strip()
    if not text:
        add(_f(t_at, "V-E38a"))
        return
    segments = text.split(".")
    if len(segments) > 2:
        add(_f(t_at, "V-E38b", table=text))
        return
    if any(not segment for segment in segments):
        add(_f(t_at, "V-E38c", table=text))
        return
    for segment in segments:
        first = segment[0]
        if not (first == "_" or (first.isascii() and first.isalpha())):
            add(_f(t_at, "V-E38d", segment=segment))
            return
        if not set(segment) <= _IDENTIFIER_CHARS:
            add(_f(t_at, "V-E38e", segment=segment))
            return


Add = Callable[[Finding], None]


def _reading(e: ExportConfig, at: Loc, add: Add) -> None:
    query, query_file, table, tables = e.query, e.query_file, e.table, e.tables
    both = table is not None and tables is not None
    if both:
        add(_f((*at, "tables"), "V-E9"))
    count = ((query is not None) + (query_file is not None) + (table is not None)
             + (tables is not None))
    if count == 0:
        add(_f(at, "V-E10a"))
    elif count > 1 and not (both and count == 2):
        given = [k for k, v in (("query", query), ("query_file", query_file), ("table", table),
                                ("tables", tables)) if v is not None]
        add(_f((*at, given[1]), "V-E10b", count=count))
    if query_file is not None:
        if query_file.startswith("/"):
            add(_f((*at, "query_file"), "V-E11a", path=query_file))
        elif _has_parent_component(query_file):
            add(_f((*at, "query_file"), "V-E11b", path=query_file))


def _destination(e: ExportConfig, at: Loc, add: Add,
                 path_exists: Callable[[str], bool] | None) -> None:
    d = e.destination
    d_at = (*at, "destination")
    kind = d.type
    if kind == "local":
        for key, value in (("path", d.path), ("prefix", d.prefix)):
            if value is not None and _has_parent_component(value):
                add(_f((*d_at, key), "V-E13", key=key, value=value))
                break
    elif kind in ("s3", "gcs", "azure") and d.endpoint is not None and \
            not d.allow_anonymous and not is_loopback(endpoint_host(d.endpoint)):
        add(_f((*d_at, "endpoint"), "V-E12", endpoint=d.endpoint))
    if kind == "s3" and (d.access_key_env is None) != (d.secret_key_env is None):
        add(_f(d_at, "V-E14"))
    if kind == "gcs" and d.allow_anonymous and d.credentials_file is not None:
        add(_f((*d_at, "allow_anonymous"), "V-E15"))
    if kind == "azure":
        if d.allow_anonymous:
            if any(v is not None for v in (d.account_name, d.account_key_env, d.sas_token_env)):
                add(_f((*d_at, "allow_anonymous"), "V-E16a"))
        elif d.account_key_env is not None and d.sas_token_env is not None:
            add(_f((*d_at, "sas_token_env"), "V-E16b"))
        elif d.account_name is None:
            add(_f(d_at, "V-E16c"))
        elif d.account_key_env is None and d.sas_token_env is None:
            add(_f(d_at, "V-E16d"))
    if d.credentials_file is not None and (path_exists is None
                                           or not path_exists(d.credentials_file)):
        add(_f((*d_at, "credentials_file"), "V-E17", path=d.credentials_file))


def _mode_rules(e: ExportConfig, mode: str, at: Loc, add: Add,
                source: SourceConfig | None) -> None:
    """V-E20 (what the export's mode needs), then V-E21..V-E25 (knobs outside their mode)."""
    if mode == "incremental":
        if e.cursor_column is None:
            add(_f((*at, "cursor_column"), "V-E20a"))
        if e.incremental_cursor_mode == "coalesce" and e.cursor_fallback_column is None:
            add(_f((*at, "cursor_fallback_column"), "V-E20b"))
        if e.incremental_cursor_mode == "single_column" and e.cursor_fallback_column is not None:
            add(_f((*at, "cursor_fallback_column"), "V-E20c"))
    elif mode == "chunked":
        if e.chunk_column is None and e.chunk_by_key is None and e.chunk_count is None and \
                e.chunk_by_days is None and e.table is None:
            add(_f((*at, "mode"), "V-E20d"))
        if e.chunk_size == 0:
            add(_f((*at, "chunk_size"), "V-E20e"))
        if e.parallel == 0:
            add(_f((*at, "parallel"), "V-E20f"))
        if e.chunk_count == 0:
            add(_f((*at, "chunk_count"), "V-E20g"))
        if e.chunk_count is not None and e.chunk_by_days is not None:
            add(_f((*at, "chunk_by_days"), "V-E20i"))
    elif mode == "time_window":
        if e.time_column is None:
            add(_f((*at, "time_column"), "V-E20j"))
        if e.days_window is None:
            add(_f((*at, "days_window"), "V-E20k"))
    elif mode == "cdc":
        if e.table is None and e.tables is None:
            add(_f((*at, "mode"), "V-E20l"))
        if e.tables is not None:
            if not e.tables:
                add(_f((*at, "tables"), "V-E20m"))
            seen: set[str] = set()
            for table in e.tables:
                if table in seen:
                    add(_f((*at, "tables"), "V-E20n", table=table))
                    break
                seen.add(table)
            if source is not None and source.type == "mssql":
                add(_f((*at, "tables"), "V-E20o"))
        if e.query is not None or e.query_file is not None:
            add(_f((*at, "query" if e.query is not None else "query_file"), "V-E20p"))
    # Knobs written outside the mode that reads them.
    if e.tables is not None and mode != "cdc":
        add(_f((*at, "tables"), "V-E21"))
    if mode != "chunked":  # the first knob only `mode: chunked` reads that the export sets
        knob = ("chunk_column" if e.chunk_column is not None
                else "chunk_by_key" if e.chunk_by_key is not None
                else "chunk_count" if e.chunk_count is not None
                else "chunk_size_memory_mb" if e.chunk_size_memory_mb is not None
                else "chunk_max_attempts" if e.chunk_max_attempts is not None
                else "chunk_checkpoint" if e.chunk_checkpoint
                else "keyset_incremental" if e.keyset_incremental
                else "chunk_size" if e.chunk_size != DEFAULT_CHUNK_SIZE
                else None)
        if knob is not None:
            add(_f((*at, knob), "V-E23", knob=knob, mode=mode))
    if e.keyset_incremental and e.chunk_by_key is None:
        add(_f((*at, "keyset_incremental"), "V-E24"))
    if e.cdc is not None and mode != "cdc":
        add(_f((*at, "cdc"), "V-E25"))


def _last_segment(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def _column_overrides(e: ExportConfig, at: Loc, add: Add) -> None:
    """V-E26 (an export with column overrides)."""
    by_query = e.query is not None or e.query_file is not None
    captured = {_last_segment(t) for t in ((e.table,) if e.table is not None else ())
                + (e.tables or ())}
    for key in e.columns:
        if "." not in key:
            continue
        if by_query:
            add(_f((*at, "columns", key), "V-E26a", key=key))
            return
        table = key.split(".", 1)[0]
        if table not in captured:
            add(_f((*at, "columns", key), "V-E26b", key=key, table=table))
            return


def _cdc(e: ExportConfig, at: Loc, add: Add, source: SourceConfig | None) -> None:
    """V-E27..V-E30 (an export with a `cdc:` section or `mode: cdc`)."""
    tables = ((e.table,) if e.table is not None else ()) + (e.tables or ())
    if e.cdc is not None and e.cdc.initial == "snapshot" and \
            any(_last_segment(t) == "snapshot" for t in tables):
        add(_f((*at, "cdc", "initial"), "V-E27"))
    if source is None:
        return
    engine = _ENGINE_NAMES[source.type]
    if e.cdc is not None and e.cdc.initial is not None and source.type != "postgres" and \
            e.cdc.checkpoint is None:
        add(_f((*at, "cdc", "checkpoint"), "V-E28", engine=engine))
    if e.mode == "cdc" and source.type in ("mongo", "mysql", "oracle") and \
            (e.cdc is None or e.cdc.checkpoint is None):
        add(_f((*at, "cdc"), "V-E29", engine=engine))
    cdc = e.cdc
    if cdc is not None and cdc.rollover == 0:
        add(_f((*at, "cdc", "rollover"), "V-E36a"))
    if cdc is not None and cdc.rollover_memory_mb == 0:
        add(_f((*at, "cdc", "rollover_memory_mb"), "V-E36b"))


def cdc_conflict_findings(exports: list[tuple[int, ExportConfig]],
                          source: SourceConfig | None) -> list[Finding]:
    """V-C1..V-C3 over the `mode: cdc` exports, in list order."""
    out: list[Finding] = []
    slots: dict[str, str] = {}
    server_ids: dict[int, str] = {}
    checkpoints: dict[str, str] = {}
    kind = source.type if source is not None else None
    for index, e in exports:
        if e.mode != "cdc":
            continue
        at: Loc = ("exports", index, "cdc")
        if kind == "postgres":
            slot = (e.cdc.slot if e.cdc else None) or "rivet_slot"
            if slot in slots:
                out.append(_f((*at, "slot"), "V-C1", slot=slot, previous=slots[slot]))
            else:
                slots[slot] = e.name
        elif kind == "mysql":
            server_id = e.cdc.server_id if e.cdc and e.cdc.server_id is not None else 4271
            if server_id in server_ids:
                out.append(_f((*at, "server_id"), "V-C2", server_id=server_id,
                              previous=server_ids[server_id]))
            else:
                server_ids[server_id] = e.name
        checkpoint = e.cdc.checkpoint if e.cdc else None
        if checkpoint is not None:
            if checkpoint in checkpoints:
                out.append(_f((*at, "checkpoint"), "V-C3", path=checkpoint,
                              previous=checkpoints[checkpoint]))
            else:
                checkpoints[checkpoint] = e.name
    return out


def mongo_findings(exports: list[tuple[int, ExportConfig]],
                   source: SourceConfig | None) -> list[Finding]:
    """V-M1..V-M3 (a `type: mongo` source only)."""
    if source is None or source.type != "mongo":
        return []
    out: list[Finding] = []
    resume = source.mongo is not None and source.mongo.resume
    for index, e in exports:
        if e.mode not in ("full", "cdc"):
            out.append(_f(("exports", index, "mode"), "V-M1", mode=e.mode))
        if e.parallel > 1 and resume:
            out.append(_f(("exports", index, "parallel"), "V-M2", parallel=e.parallel))
    if resume and source.mongo is not None and source.mongo.page_size is None:
        out.append(_f(("source", "mongo", "page_size"), "V-M3"))
    return out


# -- rivet 0.32: cdc backfills, column override types, `load:` blocks --------------------------

def backfill_findings(exports: list[tuple[int, ExportConfig]]) -> list[Finding]:
    """V-E37 (a cdc export with `cdc.backfill`): the batch exports that take its baseline."""
    out: list[Finding] = []
    by_name = {e.name: e for _, e in exports}
    for index, e in exports:
        if e.mode != "cdc" or e.cdc is None or e.cdc.backfill is None:
            continue
        at: Loc = ("exports", index, "cdc", "backfill")
        captured = [t.strip() for t in ((e.table,) if e.table is not None else ())
                    + (e.tables or ())]
        backfill = e.cdc.backfill
        if backfill == "auto":
            readers = {(b.table or "").strip() for b in by_name.values()
                       if b.mode != "cdc" and b.table is not None}
            missing = [t for t in captured if t not in readers]
            if missing:
                out.append(_f(at, "V-E37a", table=missing[0]))
            continue
        covered: set[str] = set()
        failed = False
        for name in backfill:
            named = by_name.get(name)
            if named is None:
                out.append(_f(at, "V-E37b", name=name))
            elif named is e:
                out.append(_f(at, "V-E37c"))
            elif (named.table or "").strip() not in captured:
                out.append(_f(at, "V-E37d", name=name, table=(named.table or named.query or
                                                               named.query_file or "").strip()))
            else:
                covered.add((named.table or "").strip())
                continue
            failed = True
            break
        missing = [t for t in captured if t not in covered]
        if not failed and missing:
            out.append(_f(at, "V-E37e", covered=len(captured) - len(missing),
                          total=len(captured), missing=", ".join(missing)))
    return out


_PLAIN_TYPES = frozenset({
    "bool", "boolean", "int", "int2", "int4", "int8", "int16", "int32", "int64", "integer",
    "bigint", "smallint", "float4", "float8", "float32", "float64", "real", "double",
    "double precision", "date", "timestamp", "timestamptz", "timestamp with time zone",
    "timestamp without time zone", "timestamp_ns", "timestamp_tz", "timestamp_tz_ns", "text",
    "string", "varchar", "char", "bpchar", "binary", "bytea", "varbinary", "blob", "json",
    "jsonb", "uuid"})
_DECIMAL = re.compile(r"(?:decimal|numeric)\(\s*(-?[0-9]+)\s*,\s*(-?[0-9]+)\s*\)\Z")
DECIMAL_MAX_PRECISION = 76  # Arrow's decimal256
_SUPPORTED_TYPES = ("bool, int2/int4/int8, float4/float8, decimal(p,s), date, timestamp, "
                    "timestamp_ns, timestamp_tz, timestamp_tz_ns, text, binary, json, uuid")


def column_type_problem(text: str) -> str | None:
    """Why rivet refuses a column override type (before it connects), or None."""
    name = text.strip().lower()
    if name in _PLAIN_TYPES:
        return None
    match = _DECIMAL.match(name)
    if match is None:
        return f"unrecognised type {text!r}; supported: {_SUPPORTED_TYPES}"
    precision, scale = int(match.group(1)), int(match.group(2))
    if not 1 <= precision <= DECIMAL_MAX_PRECISION:
        return f"precision {precision} is outside 1..{DECIMAL_MAX_PRECISION}"
    if scale > precision:
        return f"scale {scale} is larger than the precision {precision}"
    return None


def column_type_findings(export: ExportConfig, index: int) -> list[Finding]:
    """V-E40 (an export with column overrides)."""
    for key, value in export.columns.items():
        reason = column_type_problem(value)
        if reason is not None:
            return [_f(("exports", index, "columns", key), "V-E40", key=key, reason=reason)]
    return []


_TARGET_KEYS = {"bigquery": ("project", "dataset"),
                "snowflake": ("connection", "warehouse", "database", "schema",
                              "storage_integration"),
                "clickhouse": ("database", "url", "user", "password_env")}
_KEY_OWNERS = {"project": "bigquery", "dataset": "bigquery", "connection": "snowflake",
               "warehouse": "snowflake", "database": "snowflake`/`clickhouse",
               "schema": "snowflake", "storage_integration": "snowflake", "url": "clickhouse",
               "user": "clickhouse", "password_env": "clickhouse",
               "named_collection": "clickhouse", "ca_file": "clickhouse"}


def load_findings(load: LoadSection | None, exports: list[tuple[int, ExportConfig]], *,
                  written: bool) -> list[Finding]:
    """V-LD1..V-LD10: the top-level `load:` section (`written`: present, `load` None when it
    failed to type) and each export's override."""
    out: list[Finding] = []
    if load is not None:
        target = load.target
        for key, owner in _KEY_OWNERS.items():
            value = getattr(load, "schema_" if key == "schema" else key)
            if value is not None and target not in owner.split("`/`"):
                out.append(_f(("load", key), "V-LD1", target=target, key=key, owner=owner))
                break
        else:
            for key in _TARGET_KEYS[target]:
                if getattr(load, "schema_" if key == "schema" else key) is None:
                    out.append(_f(("load",), "V-LD2", target=target, key=key))
                    break
        out += _partition(load.partition, ("load", "partition"))
    for index, e in exports:
        at: Loc = ("exports", index)
        if written and e.format == "csv":
            out.append(_f((*at, "format"), "V-LD10"))
        override = e.load
        if override is None:
            continue
        if not written:
            out.append(_f((*at, "load"), "V-LD6", name=e.name))
        out += _partition(override.partition, (*at, "load", "partition"))
        if not override.tables:
            continue
        if e.mode != "cdc" or e.tables is None:
            out.append(_f((*at, "load", "tables"), "V-LD7"))
            continue
        for table, inner in override.tables.items():
            t_at = (*at, "load", "tables", table)
            if table not in e.tables:
                out.append(_f(t_at, "V-LD8", table=table))
            elif inner.tables:
                out.append(_f((*t_at, "tables"), "V-LD9", table=table))
            out += _partition(inner.partition, (*t_at, "partition"))
    return out


def _partition(partition: str | LoadPartition | None, at: Loc) -> list[Finding]:
    if partition is None or isinstance(partition, str):
        return []
    given = sum(v is not None for v in (partition.column, partition.range, partition.ingestion))
    if given != 1:
        return [_f(at, "V-LD3")]
    span = partition.range
    if span is not None:
        if span.interval <= 0:
            return [_f((*at, "range", "interval"), "V-LD4", interval=span.interval)]
        if span.start >= span.end:
            return [_f((*at, "range"), "V-LD5", start=span.start, end=span.end)]
    return []
