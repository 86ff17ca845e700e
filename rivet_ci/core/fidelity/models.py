"""The type report: per export, per result column, what rivet's `check --type-report` says of
it and whether `--strict` refuses it — or that rivet-ci cannot know (`unknown`, never `safe`).

Frozen models, keyed by config, export and column, for every consumer (the `check` command now;
the gate, `plan.json`, the comment and the annotations later).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from rivet_ci.core.fidelity.rivet_types import Fidelity
from rivet_ci.core.fidelity.targets import Target, TargetStatus

# rivet's one code for a mapping `--strict` refuses (fidelity, format or target alike).
UNSAFE_MAPPING_CODE = "RIVET_TYPE_UNSAFE_MAPPING"
# What refuses a column under `--strict`: its fidelity (lossy, unsupported), the export's
# format (a CSV file cannot hold it) or the `--target` (the warehouse cannot take it).
RefusedBy = Literal["fidelity", "format", "target"]
ColumnStatus = Literal["safe", "warning", "unsafe", "unknown"]


class ColumnVerdict(BaseModel):
    """One result column of an export, as `rivet check --type-report [--target T]` reports it.

    `source_type`, `rivet_type`, `arrow_type` (None: rivet writes `-`) and `fidelity` as rivet
    writes them; `target_*` for `--target` (`target_type` None: `-`; `autoload_type` only where
    a bare Parquet autoload differs). `violation` / `format_violation`: the messages rivet lists
    in `violations` for the column's fidelity (lossy, unsupported) and for the export's format
    (a CSV file cannot hold its Arrow type) — a lossy column can have both, a target failure
    has none; `warnings`, rivet's warnings of the column. `refused_by`: every reason
    `--strict` refuses the column, in that order (then it exits 1 with `code`,
    `RIVET_TYPE_UNSAFE_MAPPING`). `unknown`: rivet-ci cannot tell what rivet makes of the
    column, and why (then nothing else is claimed)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    column: str
    source_type: str | None = None
    rivet_type: str | None = None
    arrow_type: str | None = None
    fidelity: Fidelity | None = None
    target_type: str | None = None
    target_status: TargetStatus | None = None
    target_note: str | None = None
    autoload_type: str | None = None
    violation: str | None = None
    format_violation: str | None = None
    warnings: tuple[str, ...] = ()  # rivet's warnings of the column (a narrowing override)
    refused_by: tuple[RefusedBy, ...] = ()
    code: str | None = None
    override: str | None = None  # the export's `columns:` override that typed it
    unknown: str | None = None

    @property
    def status(self) -> ColumnStatus:
        """unknown; unsafe (`--strict` refuses it); warning (a fidelity or target worth a
        look: compatible, logical_string, a target `warn`); safe."""
        if self.unknown is not None:
            return "unknown"
        if self.refused_by:
            return "unsafe"
        if self.fidelity != "exact" or self.target_status == "warn":
            return "warning"
        return "safe"


class ExportTypes(BaseModel):
    """The type report of one export. `unknown`: no column could be read (why); `relation`:
    the catalogued relation the columns came from, where there is one."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    config: str
    export: str
    format: Literal["parquet", "csv"]
    target: Target | None = None
    relation: str | None = None
    columns: tuple[ColumnVerdict, ...] = ()
    unknown: str | None = None

    @property
    def refused(self) -> tuple[ColumnVerdict, ...]:
        """The columns `--strict` refuses."""
        return tuple(c for c in self.columns if c.refused_by)

    @property
    def unknown_columns(self) -> tuple[ColumnVerdict, ...]:
        return tuple(c for c in self.columns if c.unknown is not None)


class TypeReport(BaseModel):
    """Every export's type report, for one `--target` (or none)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    target: Target | None = None
    exports: tuple[ExportTypes, ...] = ()

    def verdicts(self) -> dict[tuple[str, str, str], ColumnVerdict]:
        """Every column's verdict by (config, export, column); a name a query repeats keeps
        its first column."""
        out: dict[tuple[str, str, str], ColumnVerdict] = {}
        for e in self.exports:
            for c in e.columns:
                out.setdefault((e.config, e.export, c.column), c)
        return out

    @property
    def refused(self) -> tuple[tuple[ExportTypes, ColumnVerdict], ...]:
        """Every column `--strict` refuses, with its export."""
        return tuple((e, c) for e in self.exports for c in e.refused)
