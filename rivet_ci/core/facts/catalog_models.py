"""The source catalog section of a facts file (`catalog:`): what `rivet-ci facts` snapshots of
each source a config names. Deriving an export's facts from it: :mod:`.catalog`."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from rivet_ci.core.common.limits import I64_MAX

RelationKind = Literal["table", "partitioned_table", "partition", "view", "materialized_view"]
Engine = Literal["postgres", "mysql", "sqlite"]
# Kinds with rows of their own (never a view, whose reading runs other SQL).
STORED_KINDS = frozenset({"table", "partitioned_table", "partition", "materialized_view"})


class CatalogColumn(BaseModel):
    """One column of a catalogued relation."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    type: str  # as the database names it (`bigint`, `timestamp with time zone`, `datetime`)
    nullable: bool | None = None
    integer: bool | None = None  # integer family (rivet's range chunking slices it)
    keyset_key: bool | None = None  # single-column NOT NULL unique key rivet's keyset reads
    # The two ends of the column's leading index (integer and temporal columns only).
    min: str | None = None
    max: str | None = None
    range_skipped: str | None = None  # why the ends were not read
    # The type rivet's driver receives (type fidelity, `rivet_ci.core.fidelity`). PostgreSQL only
    # (MySQL's `type` says it all): the `pg_type` name of the type, a domain resolved to its base
    # (`int4`, `numeric`, `_int4` for an array, an enum by its own name); whether that type (an
    # array: its element) is an enum; an array's element type by its `pg_type` name, as it is (a
    # domain is not resolved there); and a numeric column's `numeric_precision`/`numeric_scale`
    # as `information_schema.columns` reports them (a domain's own, which rivet reads).
    base_type: str | None = None
    enum: bool | None = None
    array_of: str | None = None
    numeric_precision: int | None = None
    numeric_scale: int | None = None


class CatalogIndex(BaseModel):
    """A valid, non-partial btree index: its key columns in order (the first leads)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    columns: list[str]
    unique: bool = False


class CatalogRelation(BaseModel):
    """One table, partitioned table, partition, view or materialized view."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    kind: RelationKind
    rows: int | None = Field(default=None, ge=0, le=I64_MAX)  # reltuples / TABLE_ROWS
    avg_row_bytes: int | None = Field(default=None, ge=0, le=I64_MAX)
    partition_of: str | None = None  # a partition: its parent (`schema.name`)
    columns: dict[str, CatalogColumn] = Field(default_factory=dict)
    indexes: list[CatalogIndex] = Field(default_factory=list)
    integer_primary_key: str | None = None
    unique_key: str | None = None  # the first usable single-column unique key (PRIMARY first)


class CatalogSource(BaseModel):
    """The catalog of one source, named without secrets."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    engine: Engine
    host: str | None = None
    port: int | None = Field(default=None, ge=0, le=65535)
    database: str | None = None
    # How configs spell this source (`source_spelling`), so configs planned without the
    # secrets find it.
    spellings: list[str] = Field(default_factory=list)
    captured_at: datetime | None = None
    max_connections: int | None = Field(default=None, ge=1, le=I64_MAX)
    default_schema: str | None = None  # where an unqualified table name is looked up
    schemas: list[str] = Field(default_factory=list)  # the schemas captured, in full
    relations: dict[str, CatalogRelation] = Field(default_factory=dict)  # `schema.name` → ...
    notes: list[str] = Field(default_factory=list)

    def relation(self, schema: str | None, name: str) -> tuple[str, CatalogRelation] | None:
        """The catalogued relation `schema.name` (unqualified: in the default schema)."""
        schema = schema or self.default_schema
        if schema is None:
            return None
        key = f"{schema}.{name}"
        found = self.relations.get(key)
        if found is None and self.engine != "postgres":  # the others ignore case
            lowered = key.lower()
            key, found = next(((k, r) for k, r in self.relations.items()
                               if k.lower() == lowered), (key, None))
        if found is None and self.engine == "postgres":
            key = f"{schema}.{name}".lower()  # rivet writes names unquoted: folded
            found = self.relations.get(key)
        return (key, found) if found is not None else None
