"""The facts file (`rivet-ci-facts/1`, spec §9): what preflight observed on the source.

Absent means unknown — never false or zero. An export with no entry is planned as if preflight
failed (weaker recommendation), never refused. The same file plans base and head of a PR, so both
sides see identical facts and every difference comes from the change itself.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from rivet_ci.core.common.limits import I64_MAX
from rivet_ci.core.facts.catalog_models import CatalogSource
from rivet_ci.core.facts.history import RunRecord

FactsFormat = Literal["rivet-ci-facts/1"]
FACTS_FORMAT: FactsFormat = "rivet-ci-facts/1"


class ColumnFacts(BaseModel):
    """Facts about one column of the export's query."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    indexed: bool | None = None
    min: str | None = None
    max: str | None = None
    # Why min/max were not probed (e.g. too large to scan without an index); then the range
    # counts as unobserved.
    range_skipped: str | None = None
    # What rivet's chunk planning checks about the column (rivet-plan.md §3, §4.2):
    integer: bool | None = None  # integer-family type (range chunking slices with BETWEEN)
    keyset_key: bool | None = None  # single-column NOT NULL unique/primary key of a readable type
    has_nulls: bool | None = None  # a row with NULL in this column exists

    @field_validator("min", "max", mode="before")
    @classmethod
    def _render_scalars(cls, value: Any) -> Any:
        # The contract says strings, as the database renders them; a hand-written YAML file may
        # say `min: 1` — accept numbers and dates by rendering them, reject anything else. A
        # string is returned unchanged, as `rivet_ci.core.common.plain_schema` requires of a
        # validator.
        if type(value) is str:  # what `rivet-ci facts` writes, returned before the checks
            return value  # below: half the time of validating a column (~10 ms at 10k exports)
        if isinstance(value, bool | list | dict):
            return value
        if isinstance(value, int | float | datetime):
            return str(value)
        if value is not None and hasattr(value, "isoformat"):
            return str(value)
        return value


class TableFacts(BaseModel):
    """The introspection of a `table:` relation (present = the catalog was read)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    rows: int | None = Field(default=None, ge=0, le=I64_MAX)  # catalog count (reltuples, ...)
    integer_primary_key: str | None = None  # the single-integer primary key column; null: none
    unique_key: str | None = None  # MySQL: the first usable single-column unique key; null: none


class MeasuredRun(BaseModel):
    """The newest successful run of rivet's `export_metrics` (its `total_rows` and `run_at`)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    total_rows: int = Field(ge=0, le=I64_MAX)
    run_at: str


class ExportFacts(BaseModel):
    """Everything preflight knows about one export (§3)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    row_estimate: int | None = Field(default=None, ge=0, le=I64_MAX)
    avg_row_bytes: int | None = Field(default=None, ge=0, le=I64_MAX)
    plan_uses_index: bool | None = None
    max_connections: int | None = Field(default=None, ge=1, le=I64_MAX)
    columns: dict[str, ColumnFacts] = Field(default_factory=dict)
    verdict: str | None = None
    warnings: list[str] | None = None
    history: list[RunRecord] | None = None
    # The newest `success` row among the 25 newest runs (rivet's measured-rows overlay); when
    # absent it is looked up in `history`.
    last_success: MeasuredRun | None = None
    # last_hi − first_lo + 1 of rivet's chunk windows.
    key_span: int | None = Field(default=None, ge=0, le=I64_MAX)
    table: TableFacts | None = None
    # Set when live preflight failed for this export: the cause, with secrets redacted.
    preflight_error: str | None = None
    notes: list[str] = Field(default_factory=list)


class ConfigFacts(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    exports: dict[str, ExportFacts] = Field(default_factory=dict)


class FactsFile(BaseModel):
    """A whole facts file: top-level exports plus optional per-config overrides."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    format: FactsFormat
    captured_at: datetime | None = None
    exports: dict[str, ExportFacts] = Field(default_factory=dict)
    configs: dict[str, ConfigFacts] = Field(default_factory=dict)
    # The catalog of every source the configs name (docs/facts.md#the-source-catalog): exports
    # without an entry of their own are planned from it.
    catalog: list[CatalogSource] = Field(default_factory=list)

    def for_export(self, config_path: str, export_name: str) -> ExportFacts | None:
        """The entry for an export: the config's own section wins over the top level."""
        section = self.configs.get(config_path)
        if section is not None and export_name in section.exports:
            return section.exports[export_name]
        return self.exports.get(export_name)
