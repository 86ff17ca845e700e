"""Pydantic models of rivet's whole config schema (rivet-cli 0.32.2: `rivet schema config`).

18 structs, 174 keys — every struct is strict, frozen and refuses unknown keys, as rivet's
`deny_unknown_fields`; `tests/test_config_schema_parity.py` checks them key by key and value by
value against the real binary's schema. The YAML typing (what text is a `u32`, a `bool`, ...)
is rivet's and is done before these models see the data (`rivet_ci.core.config.node_typing`);
the models then only hold already-typed values. Cross-field rules live in
`rivet_ci.core.config.rules`.

Attribute names are the YAML keys, except `MongoConfig.json_format` (`json` would shadow
pydantic's own method) and `LoadSection.schema_` (`schema` would shadow pydantic's own), which
are aliased back to `json` and `schema`.
"""

# No `from __future__ import annotations` here: pydantic would then evaluate each of the 129
# field annotations from its text (a `compile` per field) when the classes are created, on
# every run; written as objects they cost nothing more (import: 538M -> 529M instructions).
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from rivet_ci.core.common.limits import I64_MAX, I64_MIN, U64_MAX

Mode = Literal["full", "incremental", "chunked", "time_window", "cdc"]
Strategy = Literal["snapshot", "incremental", "chunked", "time_window"]

SourceType = Literal["postgres", "mysql", "mssql", "oracle", "mongo"]
Environment = Literal["local", "replica", "production"]
TlsMode = Literal["disable", "require", "verify-ca", "verify-full"]
MongoJson = Literal["relaxed", "canonical"]
ReadConcern = Literal["server", "snapshot"]
TuningProfile = Literal["fast", "balanced", "safe"]
OnBatchMemoryExceeded = Literal["warn", "fail", "auto_shrink"]
CdcInitial = Literal["snapshot"]
IncrementalCursorMode = Literal["single_column", "coalesce"]
TimeColumnType = Literal["timestamp", "unix"]
PartitionGranularity = Literal["day", "month", "year"]
Format = Literal["parquet", "csv"]
Compression = Literal["zstd", "snappy", "gzip", "lz4", "none"]
CompressionProfile = Literal["none", "fast", "balanced", "compact"]
DestinationType = Literal["local", "s3", "gcs", "azure", "stdout"]
Verify = Literal["size", "content"]
OnSchemaDrift = Literal["warn", "continue", "fail"]
RowGroupStrategy = Literal["auto", "fixed_rows", "fixed_memory"]
SlackEvent = Literal["failure", "schema_change", "degraded"]
CdcBackfillWord = Literal["auto"]
LoadTarget = Literal["bigquery", "snowflake", "clickhouse"]
KeyColumnsWord = Literal["auto", "none"]
LoadLayout = Literal["log_view", "base_buffer"]
LoadGranularity = Literal["hour", "day", "month", "year"]
NoneWord = Literal["none"]

# rivet's unsigned integer types (usize is 64-bit on every platform rivet ships for).
U16 = Annotated[int, Field(ge=0, le=2**16 - 1)]
U32 = Annotated[int, Field(ge=0, le=2**32 - 1)]
U64 = Annotated[int, Field(ge=0, le=U64_MAX)]
I64 = Annotated[int, Field(ge=I64_MIN, le=I64_MAX)]

DEFAULT_CHUNK_SIZE = 100_000
TUNING_KEYS = (
    "profile", "batch_size", "batch_size_memory_mb", "throttle_ms", "statement_timeout_s",
    "max_retries", "retry_backoff_ms", "lock_timeout_s", "memory_threshold_mb",
    "max_batch_memory_mb", "on_batch_memory_exceeded", "adaptive", "min_parallel", "max_value_mb",
)

_STRICT = ConfigDict(frozen=True, extra="forbid", strict=True, populate_by_name=True,
                     defer_build=True)


class TlsConfig(BaseModel):
    """`source.tls`."""

    model_config = _STRICT

    mode: TlsMode = "verify-full"
    ca_file: str | None = None
    accept_invalid_certs: bool = False
    accept_invalid_hostnames: bool = False


class MongoConfig(BaseModel):
    """`source.mongo` (honoured only for `type: mongo`)."""

    model_config = _STRICT

    json_format: MongoJson = Field(default="relaxed", alias="json")
    read_concern: ReadConcern = "server"
    no_cursor_timeout: bool = True
    page_size: U64 | None = None
    resume: bool = False


class TuningConfig(BaseModel):
    """`tuning:` at source and export level; every key optional (unset = not given)."""

    model_config = _STRICT

    profile: TuningProfile | None = None
    batch_size: U64 | None = None
    batch_size_memory_mb: U64 | None = None
    throttle_ms: U64 | None = None
    statement_timeout_s: U64 | None = None
    max_retries: U32 | None = None
    retry_backoff_ms: U64 | None = None
    lock_timeout_s: U64 | None = None
    memory_threshold_mb: U64 | None = None
    max_batch_memory_mb: U64 | None = None
    on_batch_memory_exceeded: OnBatchMemoryExceeded | None = None
    adaptive: bool | None = None
    min_parallel: U64 | None = None
    max_value_mb: U64 | None = None


class SourceConfig(BaseModel):
    """`source:` — where rivet connects."""

    model_config = _STRICT

    type: SourceType
    url: str | None = None
    url_env: str | None = None
    url_file: str | None = None
    host: str | None = None
    port: U16 | None = None
    user: str | None = None
    password: str | None = Field(default=None, repr=False)
    password_env: str | None = None
    database: str | None = None
    environment: Environment | None = None
    tuning: TuningConfig | None = None
    tls: TlsConfig | None = None
    mongo: MongoConfig | None = None


class CdcConfig(BaseModel):
    """`exports[].cdc`."""

    model_config = _STRICT

    initial: CdcInitial | None = None
    checkpoint: str | None = None
    until_current: bool = True
    max_events: U64 | None = None
    rollover: U64 | None = None
    rollover_memory_mb: U64 | None = None
    server_id: U32 | None = None
    slot: str | None = None
    capture_instance: str | None = None
    # `auto` or a list of export names; null is refused (see `NULL_REFUSED`).
    backfill: CdcBackfillWord | tuple[str, ...] | None = None


class SettleConfig(BaseModel):
    """`exports[].settle` (rivet 0.32): hold incremental rows back until they are `after` old."""

    model_config = _STRICT

    column: str | None = None
    after: str


class DestinationConfig(BaseModel):
    """`exports[].destination`."""

    model_config = _STRICT

    type: DestinationType
    bucket: str | None = None
    prefix: str | None = None
    path: str | None = None
    region: str | None = None
    endpoint: str | None = None
    credentials_file: str | None = None
    access_key_env: str | None = None
    secret_key_env: str | None = None
    session_token_env: str | None = None
    aws_profile: str | None = None
    account_name: str | None = None
    account_key_env: str | None = None
    sas_token_env: str | None = None
    allow_anonymous: bool = False
    oneshot_budget_mb: U64 | None = None


class MetaColumns(BaseModel):
    """`exports[].meta_columns`; `row_hash` is a bool or a list of column names."""

    model_config = _STRICT

    exported_at: bool = False
    row_hash: bool | tuple[str, ...] = False


class QualityConfig(BaseModel):
    """`exports[].quality` (no cross-field rule at config-load)."""

    model_config = _STRICT

    row_count_min: U64 | None = None
    row_count_max: U64 | None = None
    null_ratio_max: dict[str, float] = Field(default_factory=dict)
    unique_columns: tuple[str, ...] = ()
    unique_max_entries: U64 | None = None


class ParquetConfig(BaseModel):
    """`exports[].parquet`."""

    model_config = _STRICT

    row_group_strategy: RowGroupStrategy | None = None
    row_group_rows: U64 | None = None
    target_row_group_mb: U64 | None = None
    max_row_group_mb: U64 | None = None


class LoadRange(BaseModel):
    """`load.partition.range`: integer-range partitioning of an INT64 column."""

    model_config = _STRICT

    column: str
    start: I64
    end: I64
    interval: I64


class LoadPartition(BaseModel):
    """A `load.partition:` block (rivet's `RawPartition`)."""

    model_config = _STRICT

    column: str | None = None
    granularity: LoadGranularity | None = None
    range: LoadRange | None = None
    ingestion: LoadGranularity | None = None
    expiration_days: U32 | None = None
    require_filter: bool = False


class LoadOverride(BaseModel):
    """`exports[].load`: per-export overrides of the top-level `load:` (`None` inherits);
    `tables` holds one override per captured table of a multi-table cdc export."""

    model_config = _STRICT

    pk: KeyColumnsWord | tuple[str, ...] | None = None
    cleanup_source: bool | None = None
    gc_orphans: bool | None = None
    cluster_by: KeyColumnsWord | tuple[str, ...] | None = None
    allow_source_drift: bool | None = None
    layout: LoadLayout | None = None
    deleted_flag: bool | None = None
    partition: NoneWord | LoadPartition | None = None
    tables: "dict[str, LoadOverride]" = Field(default_factory=dict)


class LoadSection(BaseModel):
    """The top-level `load:` (rivet 0.32): the warehouse target `rivet load` loads into. The
    extraction commands validate it and otherwise ignore it."""

    model_config = _STRICT

    target: LoadTarget
    project: str | None = None
    dataset: str | None = None
    connection: str | None = None
    warehouse: str | None = None
    database: str | None = None
    schema_: str | None = Field(default=None, alias="schema")
    storage_integration: str | None = None
    url: str | None = None
    user: str | None = None
    password_env: str | None = None
    named_collection: str | None = None
    ca_file: str | None = None
    cleanup_source: bool = False
    pk: KeyColumnsWord | tuple[str, ...] | None = None
    layout: LoadLayout | None = None
    deleted_flag: bool | None = None
    allow_source_drift: bool = False
    gc_orphans: bool = False
    cluster_by: KeyColumnsWord | tuple[str, ...] | None = None
    partition: NoneWord | LoadPartition | None = None


class ExportConfig(BaseModel):
    """One entry of `exports:` (keys in rivet's declaration order)."""

    model_config = _STRICT

    name: str
    query: str | None = None
    query_file: str | None = None
    table: str | None = None
    tables: tuple[str, ...] | None = None
    mode: Mode = "full"
    cdc: CdcConfig | None = None
    cursor_column: str | None = None
    cursor_fallback_column: str | None = None
    incremental_cursor_mode: IncrementalCursorMode = "single_column"
    settle: SettleConfig | None = None
    chunk_column: str | None = None
    chunk_dense: bool = False  # refused at load (V-E32): rivet 0.32 removed it; never planned
    chunk_size: U64 = DEFAULT_CHUNK_SIZE
    chunk_size_memory_mb: U64 | None = None
    chunk_count: U64 | None = None
    chunk_by_days: U32 | None = None
    chunk_by_key: str | None = None
    parallel: U64 = 1
    wave: U32 | None = None
    parallel_safe: bool | None = None
    time_column: str | None = None
    time_column_type: TimeColumnType = "timestamp"
    days_window: U32 | None = None
    partition_by: str | None = None
    partition_granularity: PartitionGranularity = "day"
    format: Format
    compression: Compression = "zstd"
    compression_level: U32 | None = None
    compression_profile: CompressionProfile | None = None
    skip_empty: bool = False
    destination: DestinationConfig
    verify: Verify = "size"
    meta_columns: MetaColumns = Field(default_factory=MetaColumns)
    quality: QualityConfig | None = None
    max_file_size: str | None = None
    chunk_checkpoint: bool = False
    keyset_incremental: bool = False
    chunk_max_attempts: U32 | None = None
    tuning: TuningConfig | None = None
    source_group: str | None = None
    reconcile_required: bool = False
    columns: dict[str, str] = Field(default_factory=dict)
    target: str | None = None
    load: LoadOverride | None = None
    on_schema_drift: OnSchemaDrift = "warn"
    shape_drift_warn_factor: float | None = None
    parquet: ParquetConfig | None = None

    @property
    def strategy(self) -> Strategy:
        """The strategy this mode resolves to before any fact is known (`cdc` is not planned;
        a chunked export may still become a snapshot or keyset at plan time)."""
        if self.mode == "full":
            return "snapshot"
        if self.mode == "cdc":  # pragma: no cover - cdc exports are never planned
            raise ValueError("cdc exports are not plannable")
        return self.mode

    @property
    def effective_query(self) -> str:
        """The SQL rivet would run (a `table:` export is `SELECT * FROM schema.name`)."""
        if self.table is not None:
            return f"SELECT * FROM {self.table.strip()}"
        return self.query or ""

    @property
    def range_column(self) -> str | None:
        """First of chunk_column, chunk_by_key, cursor_column, time_column that is set."""
        for column in (self.chunk_column, self.chunk_by_key, self.cursor_column, self.time_column):
            if column:
                return column
        return None


class SlackConfig(BaseModel):
    """`notifications.slack`."""

    model_config = _STRICT

    webhook_url: str | None = Field(default=None, repr=False)
    webhook_url_env: str | None = None
    on: tuple[SlackEvent, ...] = ()


class NotificationsConfig(BaseModel):
    """`notifications:`."""

    model_config = _STRICT

    slack: SlackConfig | None = None


class Config(BaseModel):
    """A whole rivet config file."""

    model_config = _STRICT

    source: SourceConfig
    exports: tuple[ExportConfig, ...]
    notifications: NotificationsConfig | None = None
    parallel_exports: bool = False
    parallel_export_processes: bool = False
    load: LoadSection | None = None


STRUCTS: tuple[type[BaseModel], ...] = (
    Config, SourceConfig, TlsConfig, MongoConfig, TuningConfig, ExportConfig, CdcConfig,
    SettleConfig, DestinationConfig, MetaColumns, QualityConfig, ParquetConfig, LoadOverride,
    LoadPartition, LoadRange, NotificationsConfig, SlackConfig, LoadSection,
)

# Structs rivet reads as plain YAML values first (a `load.partition` block, behind an untagged
# "`none` or a block"): a string there must be a string as written (`5`, `true`, `~` are not),
# where elsewhere any scalar's text is one.
ANY_VALUE_STRUCTS: frozenset[type[BaseModel]] = frozenset({LoadPartition, LoadRange})

# Keys whose value may be left out but not written as null (rivet refuses `key: ~` and an empty
# value there, though unset is fine): (struct, key).
NULL_REFUSED: frozenset[tuple[type[BaseModel], str]] = frozenset({
    (CdcConfig, "backfill"), (LoadSection, "partition"), (LoadOverride, "partition"),
    (LoadSection, "pk"), (LoadSection, "cluster_by"),
})
