"""The plan document (`rivet-ci-plan/1`, spec §7 and §10) and reading rivet's own artifacts.

Each planned export is a rivet-compatible object (`export_name`, `strategy`, `computed`,
`diagnostics`, `prioritization`), grouped per config file with that config's `campaign`. The
campaign is also embedded in the first export of each config as `prioritization.campaign`, where
rivet-reading tools (an Airflow DAG reading `plan[0].prioritization.campaign.waves`) look for it;
embedding it in every export would make large plans quadratic in size.
`docs/plan-json.md` documents every field.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, cast

import orjson
from pydantic import BaseModel, ValidationError

from rivet_ci import RIVET_VERSION
from rivet_ci.core.common.problems import Problem
from rivet_ci.core.config.models import Environment, SourceConfig, SourceType, Strategy
from rivet_ci.core.facts.catalog import FactsProvenance
from rivet_ci.core.facts.history import HistorySummary
from rivet_ci.core.formats.rivet_artifact import ResolvedPlanMemo, resolved_plan, source_block
from rivet_ci.core.plan.diagnostics import PREFLIGHT_FAILED_VERDICT
from rivet_ci.core.plan.planner import ConfigPlan, FactsOrigin, Plan, PlannedExport
from rivet_ci.core.plan.recommendation import Campaign, ExportRecommendation
from rivet_ci.core.plan.resolve import ResolvedStrategy
from rivet_ci.core.plan.scoring import reason_values
from rivet_ci.core.plan.signals import Signals

if TYPE_CHECKING:  # the format's types only: `plan_format` is imported when a plan is read
    from rivet_ci.core.formats.plan_format import (
        CampaignJSON,
        ComputedJSON,
        ConfigJSON,
        DiagnosticsJSON,
        EmptyJSON,
        ExportJSON,
        FactsInputsJSON,
        FactsProvenanceJSON,
        HistoryJSON,
        PlanDocumentJSON,
        PlannedMode,
        PrioritizationJSON,
        ProblemJSON,
        ReasonJSON,
        RecommendationJSON,
        SourceBlockJSON,
        SummaryJSON,
    )

# The format's name, written as every document's `format`; `plan_format` (the format's one
# definition, which the writer does not import: 45 TypedDicts, ~10 ms) reads it from here.
PLAN_FORMAT: Final = "rivet-ci-plan/1"

__all__ = ["COMPACT", "INDENTED", "PLAN_FORMAT", "Layout", "PlanReadError", "dump_json",
           "plan_document", "read_plan", "read_plan_text"]


@dataclass(frozen=True)
class Layout:
    """How a document's text is laid out. `INDENTED` (what `rivet-ci plan` and `diff` write):
    two-space indentation and every field. `COMPACT` (the action's `plan.json` by default): no
    whitespace, and `resolved_plan` null — the block rivet carries into its own artifact, more
    than half of an export's text, written by `rivet-compatible-artifact` instead."""

    compact: bool = False
    resolved_plans: bool = True


INDENTED: Final = Layout()
COMPACT: Final = Layout(compact=True, resolved_plans=False)


def campaign_json(campaign: Campaign) -> CampaignJSON:
    return {
        "ordered_exports": list(campaign.ordered_exports),
        "waves": [{"wave": w.wave, "exports": list(w.exports)} for w in campaign.waves],
        "source_group_warnings": list(campaign.source_group_warnings),
    }


def recommendation_json(rec: ExportRecommendation) -> RecommendationJSON:
    r = rec
    reasons: list[ReasonJSON] = [{"kind": reason.kind, "message": reason.message}
                                 for reason in r.reasons]
    if r.source_group is None:  # absent, as rivet writes it
        return {"export_name": r.export_name, "priority_score": r.priority_score,
                "priority_class": r.priority_class, "cost_class": r.cost_class,
                "risk_class": r.risk_class, "recommended_wave": r.recommended_wave,
                "isolate_on_source": r.isolate_on_source, "reasons": reasons}
    return {"export_name": r.export_name, "source_group": r.source_group,
            "priority_score": r.priority_score, "priority_class": r.priority_class,
            "cost_class": r.cost_class, "risk_class": r.risk_class,
            "recommended_wave": r.recommended_wave,
            "isolate_on_source": r.isolate_on_source, "reasons": reasons}


def provenance_json(provenance: FactsProvenance) -> FactsProvenanceJSON:
    """Where an export's facts came from (`diagnostics.facts`)."""
    p = provenance
    # `inputs` holds every one of PROVENANCE_INPUTS (core/facts/catalog.py), as the JSON has.
    out: FactsProvenanceJSON = {"origin": p.facts, "inputs": cast("FactsInputsJSON", p.inputs)}
    if p.relation is not None:
        out["relation"] = p.relation
    if p.captured_at is not None:
        out["captured_at"] = p.captured_at.isoformat().replace("+00:00", "Z")
    if p.why_unknown is not None:
        out["why_unknown"] = p.why_unknown
    return out


def export_json(export: PlannedExport, campaign: Campaign | None, *,
                source: SourceConfig | None = None, source_json: SourceBlockJSON | None = None,
                day: str = "", memo: ResolvedPlanMemo | None = None,
                resolved: bool = True) -> ExportJSON:
    """One planned export. `resolved_plan` is rivet's (the keys rivet carries verbatim into its
    artifact: format, compression, destination, tuning, redacted source, ...); `day` fills
    `{date}` in destination paths and is the document's own date; without `resolved`,
    `resolved_plan` is null (`Layout.resolved_plans`)."""
    e = export
    signals = e.signals
    computed: ComputedJSON | EmptyJSON = {}
    diagnostics: DiagnosticsJSON = {}
    if signals is not None:
        s = signals
        computed = {
            "row_estimate": s.row_estimate, "avg_row_bytes": s.avg_row_bytes,
            "chunk_count": s.chunk_count, "uses_index": s.uses_index,
            "range_column": s.range_column,
            "cursor_range_observed": s.cursor_range_observed,
            "cursor_quality": s.cursor_quality, "freshness": s.freshness,
            "sparse_range_risk": s.sparse_range_risk,
            "reconcile_required": s.reconcile_required,
            "resolved_strategy": s.resolved_strategy, "chunk_column": s.chunk_column,
            "preflight_estimate": s.preflight_estimate, "estimate_label": s.estimate_label,
        }
        diagnostics = {"verdict": s.verdict, "warnings": list(s.warnings),
                       "recommended_profile": s.recommended_profile}
    if e.preflight_error is not None:
        diagnostics["preflight_error"] = e.preflight_error
    if e.notes:
        diagnostics["notes"] = list(e.notes)
    provenance = e.facts_provenance
    if provenance is not None:
        diagnostics["facts"] = provenance_json(provenance)
    prioritization: PrioritizationJSON = {
        "export_recommendation": recommendation_json(e.recommendation)}
    if campaign is not None:
        prioritization["campaign"] = campaign_json(campaign)
    history: HistoryJSON | None = None
    if e.history is not None:
        h = e.history
        history = {"runs": h.runs, "last_failed": h.last_failed,
                   "retries_per_run": round(h.retries_per_run, 4),
                   "mean_duration_ms": h.mean_duration_ms}
    config = e.config
    rivet_plan = (resolved_plan(config, source, signals, day=day, source_json=source_json,
                                memo=memo)
                  if resolved and signals is not None and config is not None else None)
    return {
        "export_name": e.export_name, "config": e.config_path, "line": e.line,
        # A planned export's mode is one rivet plans (a `cdc` export is never planned).
        "mode": cast("PlannedMode", e.mode), "strategy": e.strategy, "computed": computed,
        "diagnostics": diagnostics, "history": history, "prioritization": prioritization,
        "resolved_plan": rivet_plan,
    }


def problem_json(problem: Problem) -> ProblemJSON:
    return {"file": problem.file, "line": problem.line, "field": problem.field,
            "message": problem.message, "severity": problem.severity,
            "finding": problem.finding}


def config_json(config: ConfigPlan, *, day: str = "",
                memo: ResolvedPlanMemo | None = None) -> ConfigJSON:
    if memo is not None and memo.place is not None:
        raise ValueError("a streamed document's memo gives blocks as text for their place")
    document = _config_parts(config, day=day, memo=memo or ResolvedPlanMemo())
    document["exports"] = list(document["exports"])
    return document


def _config_parts(config: ConfigPlan, *, day: str, memo: ResolvedPlanMemo,
                  resolved: bool = True) -> ConfigJSON:
    """`config_json` with `exports` still a generator (the caller lists or streams it)."""
    shared_source = source_block(config.source) if resolved else None
    if memo.place is not None and resolved:
        shared_source = memo.place(shared_source)
    exports = (export_json(e, config.campaign if i == 0 else None, source=config.source,
                           source_json=shared_source, day=day, memo=memo, resolved=resolved)
               for i, e in enumerate(config.exports))
    return {
        "path": config.path,
        # Both come from the validated `source` section (null when it is missing or invalid).
        "source": {"type": cast(SourceType | None, config.source_type),
                   "environment": cast(Environment | None, config.source_environment)},
        "exports": cast("list[ExportJSON]", exports),
        "campaign": campaign_json(config.campaign) if config.campaign else None,
        "problems": [problem_json(p) for p in config.problems],
    }


def empty_summary() -> SummaryJSON:
    return {"configs": 0, "exports": 0, "errors": 0, "low_confidence": 0,
            "isolate_on_source": 0}


def add_to_summary(summary: SummaryJSON, config: ConfigPlan) -> None:
    """Count one config's exports into `summary` (`errors` is counted over all problems)."""
    summary["configs"] += 1
    summary["exports"] += len(config.exports)
    summary["low_confidence"] += sum(1 for e in config.exports
                                     if e.recommendation.low_confidence)
    summary["isolate_on_source"] += sum(1 for e in config.exports
                                        if e.recommendation.isolate_on_source)


def plan_summary(plan: Plan) -> SummaryJSON:
    summary = empty_summary()
    for config in plan.configs:
        add_to_summary(summary, config)
    summary["errors"] = sum(1 for p in plan.all_problems if p.severity == "error")
    return summary


def plan_document(plan: Plan, *, generated_at: str, version: str) -> PlanDocumentJSON:
    """The whole `rivet-ci-plan/1` document (key order is part of the format's readability)."""
    memo = ResolvedPlanMemo()
    document = _document_head(plan, generated_at=generated_at, version=version)
    document["configs"] = [config_json(c, day=generated_at[:10], memo=memo)
                           for c in plan.configs]
    return document


def _document_head(plan: Plan, *, generated_at: str, version: str) -> PlanDocumentJSON:
    return document_head(facts=plan.facts, summary=plan_summary(plan),
                         problems=plan.all_problems, generated_at=generated_at,
                         version=version)


def document_head(*, facts: FactsOrigin, summary: SummaryJSON, problems: Sequence[Problem],
                  generated_at: str, version: str) -> PlanDocumentJSON:
    """The document without its configs (`configs` is `[]`): what is known once every config
    has been planned, whether or not the plans themselves are still held."""
    return {
        "format": PLAN_FORMAT,
        "generator": {"name": "rivet-ci", "version": version, "models_rivet": RIVET_VERSION},
        "generated_at": generated_at,
        "facts": {
            "origin": facts.kind, "path": facts.path,
            "captured_at": facts.captured_at.isoformat() if facts.captured_at else None,
        },
        "summary": summary,
        "configs": [],
        "problems": [problem_json(p) for p in problems],
    }


def plan_document_chunks(plan: Plan, *, generated_at: str, version: str,
                         extra: Mapping[str, Any] | None = None,
                         layout: Layout = INDENTED) -> Iterator[bytes]:
    """The text of `plan_document` (plus `extra` keys at the end), UTF-8, in pieces of about
    `CHUNK_BYTES` that each end with a line break: byte for byte what `dump_json` writes for the
    whole document, but each export's dict is built, serialised and dropped in turn, so
    memory does not grow with the plan. With `COMPACT`, the same document without whitespace
    and with `resolved_plan` null (pieces cut between JSON values, the last with the final
    line break)."""
    memo = streamed_memo(layout)
    day = generated_at[:10]
    head = _document_head(plan, generated_at=generated_at, version=version)
    return document_chunks(head, (config_chunks(c, day=day, memo=memo, layout=layout)
                                  for c in plan.configs), extra=extra, layout=layout)


def config_chunks(config: ConfigPlan, *, day: str, memo: ResolvedPlanMemo,
                  layout: Layout = INDENTED) -> Iterator[bytes]:
    """One entry of `configs`, serialised as it appears in the document (indented for its
    place), export by export, in blocks that end with a line break but the last — so each
    block can be redacted on its own before it is kept anywhere. `memo`: the document's
    `streamed_memo()` (a plain memo gives the same text, more slowly). With a compact
    `layout`, blocks are cut between JSON values (a string is never split)."""
    if layout.compact:
        return _compact_blocks(_emit_compact(_streamed_config(
            config, day=day, memo=memo, resolved=layout.resolved_plans)))
    return _line_blocks(_emit(_streamed_config(config, day=day, memo=memo), _CONFIG_DEPTH))


# `config_chunks` writes a config 2 levels deep (document, `configs`); an export's
# `resolved_plan` values sit 4 levels further (`exports`, the export, `resolved_plan`, the key).
_CONFIG_DEPTH = 2
_RESOLVED_PLAN_VALUE_DEPTH = _CONFIG_DEPTH + 4


def streamed_memo(layout: Layout = INDENTED) -> ResolvedPlanMemo:
    """The `ResolvedPlanMemo` of a document written by `config_chunks`: the blocks every export
    of a config, or of a repository, shares (`source`, the resolved `tuning`, most
    `destination`s: ~45 of an export's ~130 values) are serialised once, for their place in
    the document, and orjson copies their text into each export (`orjson.Fragment`) instead of
    serialising them again — measured on the document of 1,000 exports, ~10 M of its ~112 M
    instructions."""
    return ResolvedPlanMemo(place=_compact_block if layout.compact else _placed_block)


def _compact_block(block: Any) -> orjson.Fragment:
    return orjson.Fragment(orjson.dumps(block, default=_model_json))


def _placed_block(block: Any) -> orjson.Fragment:
    return orjson.Fragment(bytes(_indented(block, _RESOLVED_PLAN_VALUE_DEPTH)))


def document_chunks(head: PlanDocumentJSON, configs: Iterable[Iterable[bytes]], *,
                    extra: Mapping[str, Any] | None = None,
                    layout: Layout = INDENTED) -> Iterator[bytes]:
    """The document text from its head and its configs already serialised by
    `config_chunks` (e.g. spooled while each config was planned), in line-ending chunks."""
    streamed = _Object(head)
    streamed["configs"] = _Array(_Raw(c) for c in configs)
    for key, value in (extra or {}).items():
        streamed[key] = value
    if layout.compact:
        return _final_line(_compact_blocks(_emit_compact(streamed)))
    return _lines(_emit(streamed, 0))


def streamed_configs(configs: Iterable[ConfigPlan], *, day: str,
                     layout: Layout = INDENTED) -> Any:
    """A `configs` array for `plan_document_chunks`' `extra` (the base plan of a pull request),
    written config by config, export by export."""
    memo = ResolvedPlanMemo(place=_compact_block) if layout.compact else ResolvedPlanMemo()
    return _Array(_streamed_config(c, day=day, memo=memo, resolved=layout.resolved_plans)
                  for c in configs)


def streamed_object(value: Mapping[str, Any]) -> Any:
    """An object for `plan_document_chunks`' `extra` holding a streamed value."""
    return _Object(value)


def _streamed_config(config: ConfigPlan, *, day: str, memo: ResolvedPlanMemo,
                     resolved: bool = True) -> _Object:
    parts = _Object(_config_parts(config, day=day, memo=memo, resolved=resolved))
    parts["exports"] = _Array(parts["exports"])
    return parts


# --- writing ----------------------------------------------------------------------------------

CHUNK_BYTES = 1 << 20
_INDENT = orjson.OPT_INDENT_2


class _Object(dict[str, Any]):
    """An object some of whose values are streamed (`_Array`, nested `_Object`)."""


class _Array:
    """An array whose items are produced one at a time."""

    def __init__(self, items: Iterable[Any]) -> None:
        self.items = items


class _Raw:
    """An item already serialised for its place (`config_chunks`)."""

    def __init__(self, pieces: Iterable[bytes]) -> None:
        self.pieces = pieces


# Plain items of a streamed array (the exports' dicts) are serialised `_BATCH` at a time, in one
# orjson call: one call, one cut and two pieces per batch instead of per item — measured on the
# document of 1,000 exports, 122 M -> 116.6 M instructions. Larger batches gain nothing more
# (orjson's buffer for 32 exports is past malloc's mmap threshold) and coarsen the cuts.
_BATCH = 8
_STREAMED = (_Object, _Array, _Raw)


def _emit(value: Any, depth: int) -> Iterator[bytes | memoryview]:
    """`orjson.dumps(value, OPT_INDENT_2)` as it would appear `depth` levels deep."""
    if isinstance(value, _Object):
        yield b"{"
        pad = b"\n" + b"  " * (depth + 1)
        first = True
        for key, item in value.items():
            key_text = orjson.dumps(key)
            if type(item) is dict:  # one piece: key and value together
                yield (b"" if first else b",") + pad + key_text + b": " + _indented(item, depth + 1)
            else:
                yield (b"" if first else b",") + pad + key_text + b": "
                if isinstance(item, _Object | _Array):
                    yield from _emit(item, depth + 1)
                    value[key] = None  # drop what was written
                else:
                    yield _indented(item, depth + 1)
            first = False
        yield b"}" if first else b"\n" + b"  " * depth + b"}"
    elif isinstance(value, _Array):
        pad = b"\n" + b"  " * (depth + 1)
        separator = opening = b"[" + pad  # before the first item, then `comma`
        comma = b"," + pad
        batch: list[Any] = []  # plain items (an export's dict) not written yet
        for item in value.items:
            if not isinstance(item, _STREAMED):
                batch.append(item)
                if len(batch) == _BATCH:
                    yield separator
                    yield _batch_text(batch, depth)
                    separator, batch = comma, []
                continue
            if batch:
                yield separator
                yield _batch_text(batch, depth)
                separator, batch = comma, []
            yield separator
            separator = comma
            if isinstance(item, _Raw):
                yield from item.pieces
            else:
                yield from _emit(item, depth + 1)
        if batch:
            yield separator
            yield _batch_text(batch, depth)
            separator = comma
        yield b"[]" if separator is opening else b"\n" + b"  " * depth + b"]"
    else:
        yield _indented(value, depth)


def _batch_text(items: list[Any], depth: int) -> bytes | memoryview:
    """The text of `items` as consecutive items of an array `depth` levels deep: each item
    indented for its place, separated by a comma, a line break and the items' indentation —
    without the array's opening "[", line break and indentation before the first item, nor its
    closing line break, indentation and "]"."""
    text = _indented(items, depth)
    return text[2 * depth + 4:len(text) - 2 * depth - 2]


def _emit_compact(value: Any) -> Iterator[bytes]:
    """`orjson.dumps(value)` (no whitespace) in pieces, each a whole JSON value, key or
    separator: a cut between two pieces never falls inside a string."""
    if isinstance(value, _Object):
        separator = b"{"
        for key, item in value.items():
            yield separator + orjson.dumps(key) + b":"
            separator = b","
            if isinstance(item, _Object | _Array):
                yield from _emit_compact(item)
                value[key] = None  # drop what was written
            else:
                yield orjson.dumps(item, default=_model_json)
        yield b"{}" if separator == b"{" else b"}"
    elif isinstance(value, _Array):
        separator = b"["
        batch: list[Any] = []
        for item in value.items:
            if not isinstance(item, _STREAMED):
                batch.append(item)
                if len(batch) == _BATCH:
                    yield separator + orjson.dumps(batch, default=_model_json)[1:-1]
                    separator, batch = b",", []
                continue
            if batch:
                yield separator + orjson.dumps(batch, default=_model_json)[1:-1]
                separator, batch = b",", []
            yield separator
            separator = b","
            if isinstance(item, _Raw):
                yield from item.pieces
            else:
                yield from _emit_compact(item)
        if batch:
            yield separator + orjson.dumps(batch, default=_model_json)[1:-1]
            separator = b","
        yield b"[]" if separator == b"[" else b"]"
    else:
        yield orjson.dumps(value, default=_model_json)


def _compact_blocks(pieces: Iterator[bytes]) -> Iterator[bytes]:
    """Compact pieces joined into blocks of about CHUNK_BYTES, cut between pieces (whole JSON
    values and separators: a secret inside a string is never split between two blocks)."""
    buffer: list[bytes] = []
    size = 0
    for piece in pieces:
        buffer.append(piece)
        size += len(piece)
        if size >= CHUNK_BYTES:
            yield b"".join(buffer)
            buffer, size = [], 0
    if buffer:
        yield b"".join(buffer)


def _final_line(blocks: Iterator[bytes]) -> Iterator[bytes]:
    """The blocks, the last followed by the document's final line break."""
    last = b""
    for block in blocks:
        if last:
            yield last
        last = block
    yield last + b"\n"


def _indented(value: Any, depth: int) -> bytes | memoryview:
    """`orjson.dumps(value, OPT_INDENT_2)` as it appears `depth` levels deep: serialised inside
    `depth` one-item arrays (nested exactly as deep as in the whole document), so orjson writes
    the indentation itself, and cut out of them (a view of orjson's text, not a copy)."""
    for _ in range(depth):
        value = [value]
    text = orjson.dumps(value, option=_INDENT, default=_model_json)
    if not depth:
        return text
    # Level i opens with "[", a line break and 2·i spaces, and closes with a line break,
    # 2·(i - 1) spaces and "]".
    return memoryview(text)[depth * (depth + 3):len(text) - depth * (depth + 1)]


def _line_blocks(pieces: Iterator[bytes | memoryview]) -> Iterator[bytes]:
    """Pieces joined into blocks of about CHUNK_BYTES, each ending with a line break but the
    last (the rest of the text): blocks the output boundary can redact one by one."""
    buffer: list[bytes | memoryview] = []
    size = 0
    for piece in pieces:
        buffer.append(piece)
        size += len(piece)
        if size >= CHUNK_BYTES and type(piece) is bytes:
            # Cut after the last line break of this piece (most pieces end one; a value's text,
            # a view, does not, but the separator after it does), joining the text once: no
            # copy of the block is sliced out of a bigger join. Without a line break in it, the
            # block grows until a piece brings one.
            cut = piece.rfind(b"\n") + 1
            if cut:
                rest = piece[cut:]
                buffer[-1] = memoryview(piece)[:cut]
                yield b"".join(buffer)
                buffer, size = [rest], len(rest)
    rest = b"".join(buffer)
    if rest:
        yield rest


def _lines(pieces: Iterator[bytes | memoryview]) -> Iterator[bytes]:
    """The document's blocks, each ending with a line break (the output boundary redacts whole
    lines), the last with the document's final line break."""
    last = b""
    for block in _line_blocks(pieces):
        if last:
            yield last
        last = block
    yield last + b"\n"


def dump_json(document: Any) -> str:
    """Deterministic JSON text (same input, same bytes), indented for people reading diffs.

    orjson writes exactly what `json.dumps(indent=2, ensure_ascii=False)` writes, ~10× faster:
    the stdlib's C encoder is not used when indenting, and plans can hold 10,000s of exports.
    """
    return orjson.dumps(document, option=_INDENT, default=_model_json).decode("utf-8") + "\n"


def _model_json(value: Any) -> Any:
    """orjson's fallback: a pydantic model in a document (the pull-request keys) is written
    as it dumps itself."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


# --- reading ------------------------------------------------------------------------------------

class PlanReadError(ValueError):
    """The JSON is neither a rivet-ci plan document nor a rivet plan artifact."""


def read_plan(data: Any, *, path: str) -> Plan:
    """Read a decoded `rivet-ci-plan/1` document, or rivet's own plan JSON (one object or an
    array).

    Our document is validated against its one definition (`rivet_ci.core.formats.plan_format`): a
    mismatch raises `PlanReadError` naming the file and the field path. Older rivet artifacts
    lack `integrity`, `campaign` and `strategy_rationale`: all optional here. Signals are
    reconstructed only as far as `show` prints them (verdict, warnings, row estimate, chunk
    count); the recommendation, strategy and diagnostics are read. Anything malformed raises
    `PlanReadError`.
    """
    if isinstance(data, dict) and data.get("format") == PLAN_FORMAT:
        return read_plan_text(json.dumps(data, ensure_ascii=False), path=path, data=data)
    return _read_decoded(data, path)


def read_plan_text(text: str | bytes, *, path: str, data: Any = None) -> Plan:
    """`read_plan` on a file's text (`data`: the text already decoded, when the caller has it).
    Our document is validated straight from the text, as strictly as its JSON Schema."""
    if data is None:
        data = json.loads(text)
    if isinstance(data, dict) and data.get("format") == PLAN_FORMAT:
        from rivet_ci.core.formats.plan_format import DocumentError, read_document

        try:
            document = read_document(text, path=path)
        except DocumentError as exc:
            raise PlanReadError(str(exc)) from None
        return _read_document(document, path)
    return _read_decoded(data, path)


def _read_decoded(data: Any, path: str) -> Plan:
    fmt = data.get("format") if isinstance(data, dict) else None
    if isinstance(fmt, str) and fmt.startswith("rivet-ci-plan/"):
        raise PlanReadError(f"{path}: format {fmt!r} is not one this rivet-ci reads "
                            f"({PLAN_FORMAT}); use the rivet-ci that wrote it")
    try:
        return _read_artifacts(data, path)
    except PlanReadError:
        raise
    except (KeyError, TypeError, AttributeError, ValueError) as exc:  # ValidationError included
        raise PlanReadError(f"{path}: malformed plan JSON ({type(exc).__name__}: {exc})") from None


def read_configs(raw: Sequence[ConfigJSON]) -> tuple[ConfigPlan, ...]:
    """The config plans of a validated document's `configs` (or its `base.configs`)."""
    return tuple(_read_config(c) for c in raw)


def _read_document(document: PlanDocumentJSON, path: str) -> Plan:
    configs = read_configs(document["configs"])
    paths = {c.path for c in configs}
    problems = tuple(Problem.model_validate(p) for p in document["problems"]
                     if p["file"] not in paths)
    return Plan(configs=configs, facts=FactsOrigin(kind="artifact", path=path),
                problems=problems)


def _read_artifacts(data: Any, path: str) -> Plan:
    items = data if isinstance(data, list) else [data]
    if not items or not all(isinstance(i, dict) and "export_name" in i for i in items):
        raise PlanReadError(f"{path}: not a rivet-ci plan ({PLAN_FORMAT}) nor a rivet plan "
                            f"artifact (objects with export_name and prioritization)")
    # rivet plans one config per run; `plan --format rivet-json` may hold several, each
    # artifact naming its `config_path`. Group them, config order kept.
    groups: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        groups.setdefault(str(item.get("config_path") or path), []).append(item)
    read: list[ConfigPlan] = []
    for config_path, members in groups.items():
        exports = tuple(_read_export(i, config_path) for i in members)
        campaign = next((_read_campaign(i["prioritization"]["campaign"]) for i in members
                         if isinstance(i.get("prioritization"), dict)
                         and i["prioritization"].get("campaign")), None)
        read.append(ConfigPlan(path=config_path, source_type=_source_type(members[0]),
                                  exports=exports, campaign=campaign))
    return Plan(configs=tuple(read), facts=FactsOrigin(kind="artifact", path=path))


def _source_type(item: dict[str, Any]) -> str | None:
    rp = item.get("resolved_plan")
    source = rp.get("source") if isinstance(rp, dict) else None
    kind = source.get("type") if isinstance(source, dict) else None
    return str(kind) if kind is not None else None


def _read_campaign(raw: Any) -> Campaign:
    """A campaign; rivet's `ordered_exports` holds recommendation objects, ours names."""
    try:
        ordered = [o["export_name"] if isinstance(o, dict) else o
                   for o in raw.get("ordered_exports", [])]
        return Campaign.model_validate({**raw, "ordered_exports": ordered,
                                        "source_group_warnings":
                                        raw.get("source_group_warnings", [])})
    except (ValidationError, AttributeError, KeyError, TypeError) as exc:
        raise PlanReadError(f"invalid campaign: {exc}") from None


# rivet's artifact tokens (`strategy`) and ours, to the prioritization kind
_STRATEGY_TOKENS: dict[str, Strategy] = {
    "full": "snapshot", "snapshot": "snapshot", "incremental": "incremental",
    "chunked": "chunked", "keyset": "chunked", "timewindow": "time_window",
    "time_window": "time_window",
}
_RESOLVED_TOKENS: dict[str, ResolvedStrategy] = {
    "full": "full", "snapshot": "full", "incremental": "incremental", "chunked": "chunked",
    "keyset": "keyset", "timewindow": "timewindow", "time_window": "timewindow",
}
# `resolved_plan.strategy` encodings (serde external tagging) to rivet's token
_TAGS = {"Snapshot": "full", "Incremental": "incremental", "Chunked": "chunked",
         "Keyset": "keyset", "TimeWindow": "timewindow"}


def _strategy_token(raw: dict[str, Any], path: str) -> str:
    token = raw.get("strategy")
    if isinstance(token, dict):  # some rivet-ci documents nested {kind: ...}
        token = token.get("kind")
    if token is None:
        rp = raw.get("resolved_plan")
        tagged = rp.get("strategy") if isinstance(rp, dict) else None
        tag = next(iter(tagged), None) if isinstance(tagged, dict) else tagged
        token = _TAGS.get(str(tag), "full") if tag is not None else "full"
    token = str(token)
    if token not in _STRATEGY_TOKENS:
        raise PlanReadError(f"{path}: export {raw.get('export_name')!r} has an unknown strategy "
                            f"{token!r} (expected one of {', '.join(sorted(_STRATEGY_TOKENS))})")
    return token


def _read_export(raw: dict[str, Any], path: str) -> PlannedExport:
    prioritization = raw.get("prioritization") or {}
    try:
        rec = ExportRecommendation.model_validate(prioritization["export_recommendation"])
    except (KeyError, TypeError, ValidationError) as exc:
        raise PlanReadError(f"{path}: export {raw.get('export_name')!r} has no valid "
                            f"prioritization.export_recommendation ({exc})") from None
    token = _strategy_token(raw, path)
    computed_raw = raw.get("computed") or {}
    if isinstance(computed_raw.get("resolved_strategy"), str):
        token = computed_raw["resolved_strategy"]
    strategy = _STRATEGY_TOKENS[token]
    diagnostics = raw.get("diagnostics") or {}
    computed = raw.get("computed") or {}
    signals = None
    if isinstance(diagnostics.get("verdict"), str):
        warnings = diagnostics.get("warnings") or []
        rows = computed.get("row_estimate")
        chunks = computed.get("chunk_count")
        signals = Signals(
            strategy=strategy, resolved_strategy=_RESOLVED_TOKENS[token],
            row_estimate=rows if isinstance(rows, int) else None,
            chunk_count=chunks if isinstance(chunks, int) and chunks > 0 else None,
            verdict=diagnostics["verdict"], warnings=tuple(str(w) for w in warnings),
            recommended_profile=str(diagnostics.get("recommended_profile") or "balanced"),
            preflight_failed=diagnostics["verdict"] == PREFLIGHT_FAILED_VERDICT,
        )
        rec = _with_values(rec, signals, _read_history(raw.get("history")))
    return PlannedExport(
        config_path=str(raw.get("config", path)), line=raw.get("line"),
        export_name=str(raw["export_name"]),
        # rivet's artifact has no `mode`: the mode its strategy comes from
        mode=str(raw.get("mode") or ("full" if strategy == "snapshot" else strategy)),
        strategy=strategy, signals=signals, history=None, recommendation=rec,
        preflight_error=diagnostics.get("preflight_error"),
    )


def _read_history(raw: Any) -> HistorySummary | None:
    """The history summary a document records (`history`), or None."""
    if not isinstance(raw, dict):
        return None
    try:
        return HistorySummary.model_validate(raw)
    except ValidationError:
        return None


def _with_values(rec: ExportRecommendation, signals: Signals,
                 history: HistorySummary | None) -> ExportRecommendation:
    """`rec` with each reason's values, which a document does not hold: given again by the rule
    that wrote the reason, from the inputs the document records (`computed`, `history`)."""
    reasons = tuple(
        reason.model_copy(update={"values": values})
        if (values := reason_values(reason.kind, signals, history)) else reason
        for reason in rec.reasons)
    return rec.model_copy(update={"reasons": reasons})


def _read_config(raw: ConfigJSON) -> ConfigPlan:
    path = str(raw["path"])
    source = raw.get("source") or {}
    return ConfigPlan(
        path=path, source_type=source.get("type"), source_environment=source.get("environment"),
        exports=tuple(_read_export(cast(dict[str, Any], e), path) for e in raw["exports"]),
        campaign=_read_campaign(raw["campaign"]) if raw.get("campaign") else None,
        problems=tuple(Problem.model_validate(p) for p in raw.get("problems", [])),
    )
