"""The plan document `rivet-ci-plan/1`, defined once: every object, key, type and token.

The writer (`rivet_ci.core.formats.document`, `rivet_ci.core.formats.diff_document`) builds
these TypedDicts —
plain dicts, so building and serialising 100,000 exports constructs no model object — and mypy
checks every key it writes against them. The reader (`read_document`) validates a document with
the same definition through a pydantic `TypeAdapter`; `plan_schema()` is its JSON Schema
(`rivet-ci schema`, shipped as `schemas/plan.schema.json`). Every object refuses keys it does not
define, so a key added to the writer without being added here fails the schema tests.
`docs/plan-json.md` describes each field for people.

The pull-request keys (`pull_request`, `base`, `diff`) hold the diff's and the gate's own models
(`rivet_ci.core.gate.diff`, `rivet_ci.core.gate.policy`, `rivet_ci.core.gate.waivers`) as they
dump themselves:
those models are their one definition.
"""

from __future__ import annotations

import json
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any, Literal, NotRequired, TypeAlias

from pydantic import (
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    TypeAdapter,
    ValidationError,
    with_config,
)
from typing_extensions import TypedDict

from rivet_ci.core.common.problems import ProblemFinding, Severity
from rivet_ci.core.config.models import (
    Compression,
    DestinationType,
    Environment,
    Format,
    MongoJson,
    OnBatchMemoryExceeded,
    OnSchemaDrift,
    ReadConcern,
    RowGroupStrategy,
    SourceType,
    TlsMode,
    TuningProfile,
    Verify,
)
from rivet_ci.core.formats.document import PLAN_FORMAT  # the name every document is written with
from rivet_ci.core.plan.recommendation import (
    CostClass,
    ExportRecommendation,
    PriorityClass,
    RiskClass,
)
from rivet_ci.core.plan.resolve import ResolvedStrategy
from rivet_ci.core.plan.signals import CursorQuality
from rivet_ci.core.plan.strategy_json import ResolvedTuningJSON, RivetStrategyJSON

if TYPE_CHECKING:  # the pull-request keys' models: imported by `_adapter`, see there
    from rivet_ci.core.gate.diff import (
        BrokenAt,
        ChangeStatus,
        ConfigChange,
        Finding,
        FindingStatus,
        GroupRename,
        OrderMove,
        WarningChange,
    )
    from rivet_ci.core.gate.waivers import WaivedFinding, WaiverNote

# Versioned with the format, not with the branch: every release that writes `rivet-ci-plan/1`
# ships a schema with this id, and a breaking change gets `rivet-ci-plan/2` and a new id
# (docs/plan-json.md, "Versions").
SCHEMA_ID = "urn:rivet-ci:schema:rivet-ci-plan/1"

_CLOSED = ConfigDict(extra="forbid")

# --- the header -------------------------------------------------------------------------------


@with_config(_CLOSED)
class GeneratorJSON(TypedDict):
    name: Literal["rivet-ci"]
    version: str
    # The rivet release modelled (absent in documents written before rivet-ci modelled 0.32.2).
    models_rivet: NotRequired[str]


@with_config(_CLOSED)
class FactsJSON(TypedDict):
    origin: Literal["file", "live", "none", "artifact"]
    path: str | None
    captured_at: str | None


@with_config(_CLOSED)
class SummaryJSON(TypedDict):
    configs: int
    exports: int
    errors: int
    low_confidence: int
    isolate_on_source: int


@with_config(_CLOSED)
class ProblemJSON(TypedDict):
    file: str
    line: int | None
    field: str | None
    message: str
    severity: Severity
    finding: ProblemFinding


# --- rivet's recommendation and campaign (names and tokens are rivet's) -------------------------


@with_config(_CLOSED)
class ReasonJSON(TypedDict):
    kind: str
    message: str


@with_config(_CLOSED)
class RecommendationJSON(TypedDict):
    export_name: str
    source_group: NotRequired[str]  # absent when the export has none (as rivet writes it)
    priority_score: int
    priority_class: PriorityClass
    cost_class: CostClass
    risk_class: RiskClass
    recommended_wave: int
    isolate_on_source: bool
    reasons: list[ReasonJSON]


@with_config(_CLOSED)
class WaveJSON(TypedDict):
    wave: int
    exports: list[str]


@with_config(_CLOSED)
class CampaignJSON(TypedDict):
    ordered_exports: list[str]
    waves: list[WaveJSON]
    source_group_warnings: list[str]


@with_config(_CLOSED)
class PrioritizationJSON(TypedDict):
    export_recommendation: RecommendationJSON
    campaign: NotRequired[CampaignJSON]  # in the first export of each config only


# --- one planned export -------------------------------------------------------------------------


@with_config(_CLOSED)
class ComputedJSON(TypedDict):
    row_estimate: int | None
    avg_row_bytes: int | None
    chunk_count: int | None
    uses_index: bool
    range_column: str | None
    cursor_range_observed: bool
    cursor_quality: CursorQuality
    freshness: Literal["recent"] | None
    sparse_range_risk: bool
    reconcile_required: bool
    resolved_strategy: ResolvedStrategy | None
    chunk_column: str | None
    preflight_estimate: int | None
    estimate_label: str | None


@with_config(_CLOSED)
class EmptyJSON(TypedDict):
    """`{}`: `computed` of a plan read back from a JSON file."""


@with_config(_CLOSED)
class DiagnosticsJSON(TypedDict):
    # The first three are present whenever the export's signals are known (always, for a plan
    # rivet-ci planned); a plan read back without a verdict has none of them.
    verdict: NotRequired[str]
    warnings: NotRequired[list[str]]
    recommended_profile: NotRequired[str]
    preflight_error: NotRequired[str]
    notes: NotRequired[list[str]]
    facts: NotRequired[FactsProvenanceJSON]  # absent in a plan read back without it


FactsFromJSON = Literal["export", "catalog", "none"]
InputFromJSON = Literal["export", "catalog", "catalog-table-count", "unknown"]


@with_config(_CLOSED)
class FactsInputsJSON(TypedDict):
    row_estimate: InputFromJSON
    avg_row_bytes: InputFromJSON
    plan_uses_index: InputFromJSON
    range: InputFromJSON
    max_connections: InputFromJSON
    table_keys: InputFromJSON
    history: InputFromJSON


@with_config(_CLOSED)
class FactsProvenanceJSON(TypedDict):
    """Where the export's facts came from (docs/facts.md#provenance)."""

    # `export`: its own entry of the facts file (or live preflight); `catalog`: derived from
    # the source catalog; `none`: no facts (unknown cost). Per input, `catalog-table-count`: the
    # row estimate is the table's catalog count, where rivet would have EXPLAINed a filtered
    # query; `unknown`: not known.
    origin: FactsFromJSON
    inputs: FactsInputsJSON
    relation: NotRequired[str]  # the catalogued relation (`schema.name`) derived from
    captured_at: NotRequired[str]  # when that catalog was captured (RFC 3339)
    why_unknown: NotRequired[str]  # no facts: why


@with_config(_CLOSED)
class HistoryJSON(TypedDict):
    runs: int
    last_failed: bool
    retries_per_run: float
    mean_duration_ms: int | None


# rivet's `ResolvedRunPlan` (rivet-plan.md §10.3), keys in rivet's order; its `strategy` and
# `tuning` are the plan layer's (`rivet_ci.core.plan.strategy_json`).


@with_config(_CLOSED)
class MetaColumnsJSON(TypedDict):
    exported_at: bool
    row_hash: bool | list[str]


@with_config(_CLOSED)
class DestinationJSON(TypedDict):
    type: DestinationType | None
    bucket: str | None
    prefix: str | None
    path: str | None
    region: str | None
    endpoint: str | None
    credentials_file: str | None
    access_key_env: str | None
    secret_key_env: str | None
    session_token_env: str | None
    aws_profile: str | None
    account_name: str | None
    account_key_env: str | None
    sas_token_env: str | None
    allow_anonymous: bool


@with_config(_CLOSED)
class QualityJSON(TypedDict):
    row_count_min: int | None
    row_count_max: int | None
    null_ratio_max: dict[str, float]
    unique_columns: list[str]
    unique_max_entries: int | None


@with_config(_CLOSED)
class SourceTuningJSON(TypedDict):
    profile: TuningProfile | None
    batch_size: int | None
    batch_size_memory_mb: int | None
    throttle_ms: int | None
    statement_timeout_s: int | None
    max_retries: int | None
    retry_backoff_ms: int | None
    lock_timeout_s: int | None
    memory_threshold_mb: int | None
    max_batch_memory_mb: int | None
    on_batch_memory_exceeded: OnBatchMemoryExceeded | None
    adaptive: bool | None
    min_parallel: int | None
    max_value_mb: int | None


@with_config(_CLOSED)
class TlsJSON(TypedDict):
    mode: TlsMode | None
    ca_file: str | None
    accept_invalid_certs: bool
    accept_invalid_hostnames: bool


@with_config(_CLOSED)
class MongoJSON(TypedDict):
    json: MongoJson | None
    read_concern: ReadConcern | None
    no_cursor_timeout: bool | None
    page_size: int | None
    resume: bool | None


@with_config(_CLOSED)
class SourceBlockJSON(TypedDict):
    type: SourceType | None
    url: str | None  # userinfo replaced by `REDACTED`
    url_env: str | None
    url_file: str | None
    host: str | None
    port: int | None
    user: str | None
    password: None  # always removed
    password_env: str | None
    database: str | None
    environment: Environment | None
    tuning: SourceTuningJSON | None
    tls: TlsJSON | None
    mongo: MongoJSON | None


@with_config(_CLOSED)
class PlainColumnType(TypedDict):
    kind: Literal["bool", "int16", "int32", "int64", "float32", "float64", "date", "string",
                  "binary", "json", "uuid"]


@with_config(_CLOSED)
class DecimalColumnType(TypedDict):
    kind: Literal["decimal"]
    precision: int
    scale: int


@with_config(_CLOSED)
class TimestampColumnType(TypedDict):
    kind: Literal["timestamp"]
    unit: Literal["microsecond", "nanosecond"]
    timezone: Literal["UTC"] | None


ColumnTypeJSON: TypeAlias = Annotated[
    PlainColumnType | DecimalColumnType | TimestampColumnType, Field(discriminator="kind")]


@with_config(_CLOSED)
class ParquetJSON(TypedDict):
    row_group_strategy: RowGroupStrategy | None
    row_group_rows: int | None
    target_row_group_mb: int | None
    max_row_group_mb: int | None


@with_config(_CLOSED)
class ResolvedPlanJSON(TypedDict):
    export_name: str
    source_table: str | None
    base_query: str
    is_split_unit: bool
    strategy: RivetStrategyJSON
    format: Format
    compression: Compression
    compression_level: int | None
    max_file_size_bytes: int | None
    skip_empty: bool
    meta_columns: MetaColumnsJSON
    destination: DestinationJSON
    quality: QualityJSON | None
    tuning: ResolvedTuningJSON
    tuning_profile_label: str
    validate: bool
    reconcile: bool
    resume: bool
    verify: Verify
    source: SourceBlockJSON
    column_overrides: dict[str, ColumnTypeJSON]
    schema_drift_policy: OnSchemaDrift
    shape_drift_warn_factor: float
    parquet: ParquetJSON | None


PlannedMode: TypeAlias = Literal["full", "incremental", "chunked", "time_window"]


@with_config(_CLOSED)
class ExportJSON(TypedDict):
    export_name: str
    config: str
    line: int | None
    mode: PlannedMode  # `cdc` exports are never planned
    strategy: Literal["snapshot", "incremental", "chunked", "time_window"]
    computed: Annotated[
        Annotated[ComputedJSON, Tag("signals")] | Annotated[EmptyJSON, Tag("empty")],
        Discriminator(lambda value: "empty" if value == {} else "signals")]
    diagnostics: DiagnosticsJSON
    history: HistoryJSON | None
    prioritization: PrioritizationJSON
    resolved_plan: ResolvedPlanJSON | None


# --- configs and the document -------------------------------------------------------------------


@with_config(_CLOSED)
class SourceJSON(TypedDict):
    type: SourceType | None
    environment: Environment | None


@with_config(_CLOSED)
class ConfigJSON(TypedDict):
    path: str
    source: SourceJSON
    exports: list[ExportJSON]
    campaign: CampaignJSON | None
    problems: list[ProblemJSON]


# The pull-request keys (docs/action.md#the-plan-document).


@with_config(_CLOSED)
class ChangedFileJSON(TypedDict):
    status: Literal["added", "modified", "removed", "renamed"]
    path: str
    old_path: str | None  # the path at base, for a rename


@with_config(_CLOSED)
class ReviewJSON(TypedDict):
    """What the document's plans cover: the config files in the review (`configs`,
    `base.configs`) out of the files matching the globs on each side."""

    base_files: int  # config files matching the globs at the base (facts documents not counted)
    head_files: int
    # True when the review left out a matching file or some exports of a file it holds.
    narrowed: bool


@with_config(_CLOSED)
class PullRequestJSON(TypedDict):
    base_sha: str
    head_sha: str
    changed_files: list[ChangedFileJSON]
    # Written by every version that plans only the review (absent in older documents).
    review: NotRequired[ReviewJSON]
    # Waiver lines or files that could not be used (absent in older documents).
    waiver_problems: NotRequired[list[ProblemJSON]]


@with_config(_CLOSED)
class BaseJSON(TypedDict):
    configs: list[ConfigJSON]
    problems: list[ProblemJSON]


@with_config(_CLOSED)
class GateJSON(TypedDict):
    passed: bool
    policy: str
    blocking: list[Finding]
    waived: list[WaivedFinding]
    waivers: list[WaiverNote]


@with_config(_CLOSED)
class ChangedExportJSON(TypedDict):
    export_name: str
    config: str
    line: int | None
    status: ChangeStatus
    renamed_from: str | None
    score_base: int | None
    score_head: int | None
    score_delta: int | None
    isolation: FindingStatus | None
    low_confidence: FindingStatus | None
    reasons_added: list[str]
    reasons_removed: list[str]
    base: ExportRecommendation | None
    head: ExportRecommendation | None
    # What changed in the export's config (keys of `rivet_ci.core.gate.diff.CONFIG_KEYS`).
    config_changes: NotRequired[list[ConfigChange]]
    # `not-planned`: the config error at head that kept it from being planned.
    broken_at: NotRequired[BrokenAt | None]
    # Planned without any facts on each side (cost unknown), and why, at head; the catalogued
    # relation the head's facts were derived from (absent in older documents).
    cost_unknown_base: NotRequired[bool]
    cost_unknown_head: NotRequired[bool]
    cost_unknown_why: NotRequired[str | None]
    catalog_relation: NotRequired[str | None]


@with_config(_CLOSED)
class DiffJSON(TypedDict):
    gate: GateJSON
    exports: list[ChangedExportJSON]
    warnings: list[WarningChange]
    order_moves: list[OrderMove]
    findings: list[Finding]
    group_renames: NotRequired[list[GroupRename]]
    # Config files in the review the change cannot affect (the same plan on both sides): only
    # their exports in an affected source group are compared (absent in older documents).
    unchanged_files: NotRequired[list[str]]


@with_config(_CLOSED)
class CoverageJSON(TypedDict):
    """What the document covers, written by the action: the whole repository at a commit (a
    push, a schedule, a manual run: the plan of record) or a pull request's review."""

    scope: Literal["repository", "review"]
    commit: str  # the commit planned (the head of a pull request)
    # Config files matching the `configs` globs there (facts documents not counted); with
    # `repository`, every one of them is in `configs`.
    config_files: int
    # False: every export's `resolved_plan` is null (the compact layout; rivet's blocks are in
    # the `rivet-compatible-artifact`).
    resolved_plans: bool


@with_config(_CLOSED)
class PlanDocumentJSON(TypedDict):
    format: Literal["rivet-ci-plan/1"]
    generator: GeneratorJSON
    generated_at: str
    facts: FactsJSON
    summary: SummaryJSON
    configs: list[ConfigJSON]
    problems: list[ProblemJSON]
    # Pull-request runs only (the action, `rivet-ci diff`): all three or none.
    pull_request: NotRequired[PullRequestJSON]
    base: NotRequired[BaseJSON]
    diff: NotRequired[DiffJSON]
    # The action's documents (a pull request's and the plan of record).
    coverage: NotRequired[CoverageJSON]


# --- reading and the schema -----------------------------------------------------------------------

@cache
def _adapter() -> TypeAdapter[PlanDocumentJSON]:
    # The models of the pull-request keys are imported only here, where the document is read
    # or its schema made: writing a plan needs none of them, and importing the diff and the
    # waivers cost every `rivet-ci plan` ~5 ms. pydantic resolves the TypedDicts' names in
    # this module and then in the namespace of the frame that builds the adapter (this one).
    from rivet_ci.core.gate.diff import (  # noqa: F401
        BrokenAt,
        ChangeStatus,
        ConfigChange,
        Finding,
        FindingStatus,
        GroupRename,
        OrderMove,
        WarningChange,
    )
    from rivet_ci.core.gate.waivers import WaivedFinding, WaiverNote  # noqa: F401

    return TypeAdapter(PlanDocumentJSON)


class DocumentError(ValueError):
    """A `rivet-ci-plan/1` document that does not match the format; the message names the file
    and the field path of every mismatch (at most a few)."""


def _is_branch(part: int | str) -> bool:
    """Whether a location part names a union member (`ComputedJSON`, `literal['Snapshot']`,
    `list[str]`) rather than a key."""
    return isinstance(part, str) and (part[:1].isupper() or "[" in part
                                      or part in ("bool", "int", "str", "float"))


def _where(loc: tuple[int | str, ...], data: Any) -> str:
    """The field path of an error in the input: union member and tag names pydantic puts in
    the location (`computed.signals.row_estimate`) are not keys of the input and are left out."""
    out = ""
    last = len(loc) - 1
    for index, part in enumerate(loc):
        inside = (isinstance(part, int) and 0 <= part < len(data) if isinstance(data, list)
                  else isinstance(data, dict) and part in data)
        if inside:
            data = data[part]
        elif index < last or _is_branch(part):
            continue
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(the document)"


def _closest_branches(errors: list[Any]) -> list[Any]:
    """Of a union that matched no member, keep the errors of the member that came closest
    (fewest errors): `computed` that is neither an object of signals nor `{}` is reported as a
    bad signal, not as every key `{}` does not allow."""
    groups: dict[tuple[int | str, ...], dict[str, list[Any]]] = {}
    plain: list[Any] = []
    for error in errors:
        loc = tuple(error["loc"])
        at = next((i for i, part in enumerate(loc) if _is_branch(part)), None)
        if at is None:
            plain.append(error)
        else:
            groups.setdefault(loc[:at], {}).setdefault(str(loc[at]), []).append(error)
    for branches in groups.values():
        plain.extend(sorted(branches.values(), key=lambda errors: len(list(errors)))[0])
    return plain


def read_document(text: str | bytes, *, path: str) -> PlanDocumentJSON:
    """Validate a `rivet-ci-plan/1` document's JSON text, as strictly as its JSON Schema (no
    `"12"` for 12); raises `DocumentError` naming `path` and the field path of each problem
    (`configs[0].exports[3].computed.row_estimate`).

    Keys this version does not know are ignored, as the schema allows: a later release may add
    keys under `rivet-ci-plan/1` (docs/plan-json.md, "Versions"). The definition itself is
    closed, so a key the writer adds without defining it fails the tests (`closed_schema`)."""
    try:
        return _adapter().validate_json(text, strict=True)
    except ValidationError as exc:
        try:
            data = json.loads(text)
        except ValueError:
            data = None
        errors = exc.errors(include_url=False)
        if data is not None and all(e["type"] == "extra_forbidden" for e in errors):
            for error in errors:
                _drop(data, tuple(error["loc"]))
            try:
                return _adapter().validate_python(data, strict=True)
            except ValidationError as again:
                exc = again
        raise DocumentError(describe(exc, data, path)) from None


def _drop(data: Any, loc: tuple[int | str, ...]) -> None:
    """Remove the unknown key at `loc` (the input's keys and indexes; union member names that
    pydantic puts in the location are skipped)."""
    for part in loc[:-1]:
        inside = (isinstance(part, int) and 0 <= part < len(data) if isinstance(data, list)
                  else isinstance(data, dict) and part in data)
        if inside:
            data = data[part]
    if isinstance(data, dict):
        data.pop(loc[-1], None)


def describe(exc: ValidationError, data: Any, path: str, *, limit: int = 5) -> str:
    """`path: not a valid rivet-ci-plan/1 document:` and one line per field (`where: what`)."""
    seen: dict[str, str] = {}
    for error in _closest_branches(exc.errors(include_url=False)):
        seen.setdefault(_where(tuple(error["loc"]), data), error["msg"])
    lines = [f"  {where}: {message}" for where, message in list(seen.items())[:limit]]
    if len(seen) > limit:
        lines.append(f"  ... and {len(seen) - limit} more")
    return f"{path}: not a valid {PLAN_FORMAT} document:\n" + "\n".join(lines)


def plan_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the plan document, as published: every object
    accepts keys it does not define (a consumer must tolerate additive changes within
    `rivet-ci-plan/1`); `closed_schema()` is the same with every object closed."""
    opened: dict[str, Any] = _open(closed_schema())
    return opened


def _open(value: Any) -> Any:
    """Every object that defines keys opened to others; `{}` (an object with no keys, e.g. the
    `computed` of a plan read back) stays exactly empty."""
    if isinstance(value, dict):
        return {k: _open(v) for k, v in value.items()
                if not (k == "additionalProperties" and v is False and value.get("properties"))}
    if isinstance(value, list):
        return [_open(v) for v in value]
    return value


def closed_schema() -> dict[str, Any]:
    """The plan document's JSON Schema with every object closed (`additionalProperties:
    false`): what the tests hold rivet-ci's own documents to, so that a key the writer adds is
    defined here in the same change."""
    schema = _adapter().json_schema(mode="serialization")
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "rivet-ci plan document (rivet-ci-plan/1)",
        "description": ("The document `rivet-ci plan --format json`, `rivet-ci diff --format "
                        "json` and the rivet-ci GitHub Action write (docs/plan-json.md)."),
        **{k: v for k, v in schema.items() if k not in ("title", "description")},
    }
