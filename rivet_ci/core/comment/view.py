"""The PR comment's view model: everything the template shows, decided here (pure).

The template only lays out what this model says. Decided here, and tested without rendering:
which rows count as changed and *why* (reason kinds added/removed, or the number inside a
reason that moved), ordering (blocking first, then the largest score changes), the summary of a
large PR (counts by direction and by class/wave move, changes grouped by identical cause), each
finding listed once, warnings matched per source group, waivers, "since your last push", and the
wording of the verdict with correct singular/plural.

Rows are built once; the renderer chooses how many fit from their rendered lengths.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Literal

from pydantic import BaseModel, ConfigDict

from rivet_ci import RIVET_VERSION
from rivet_ci.core.comment.picture import CampaignPicture, build_picture
from rivet_ci.core.comment.shown import Masker, shown
from rivet_ci.core.comment.since import SinceLastPush
from rivet_ci.core.common.fast_model import construct
from rivet_ci.core.common.text import people_numbers, plural, reason_anchor
from rivet_ci.core.gate.diff import (
    REPO_SCOPE,
    ConfigChange,
    ConfigValue,
    ExportChange,
    Finding,
    GroupRename,
    PlanDiff,
    WarningChange,
    reason_values,
)
from rivet_ci.core.gate.policy import GateResult
from rivet_ci.core.gate.waivers import (
    DEFAULT_WAIVERS_FILE,
    WAIVABLE_KINDS,
    WaiverNote,
    waiver_file_entry,
)
from rivet_ci.core.plan.planner import FactsOrigin, Plan
from rivet_ci.core.plan.reasons import ISOLATION_KIND, REASON_KINDS, ValueLabel
from rivet_ci.core.plan.recommendation import ExportRecommendation, Reason

# A PR with more changed rows than this gets the summary and the grouped causes first, and its
# table is cut to the largest movers (every row stays in the full report).
LARGE_PR_ROWS = 20
TOP_ROWS_LARGE = 10
MAX_CAUSE_GROUPS = 8
MAX_LISTED = 50  # findings, warnings, problems: each list is cut here and says how many more
BIGGEST_MOVERS = 3

# Findings listed with the configuration errors: what rivet refuses to load or to plan.
PROBLEM_KINDS = ("config-error", "plan-refused")

WhyKind = Literal["config", "added", "removed", "detail", "isolation", "cleared", "text",
                  "broken", "unknown"]

# -- the words about isolation (`isolate_on_source`) ----------------------------------------------
#
# Defined once: how the comment says that an export now runs alone on its source group, no longer
# does, or cannot be told while its file is broken. The row's why, the blocking finding, "since
# your last push" and the legend all say it in these words (`output/render.py`'s `isolation`
# filter fills `{}` with the group's or the file's name as a code span).
ISOLATION_WORDS: dict[str, str] = {
    "isolation": "🔒 runs alone on {}",
    "cleared": "🔓 no longer runs alone on {}",
    "unknown": "❔ still runs alone? unknown while {} is broken",
}
ITS_GROUP = "its source group"  # in place of a group's name: the legend, an unnamed group


def _same(text: str) -> str:
    return text


def isolation_words(kind: str, name: str | None, *, name_as: Callable[[str], str] = _same,
                    text_as: Callable[[str], str] = _same) -> str:
    """`🔒 runs alone on replica_a`: the words of `kind` around `name` (`ITS_GROUP` for None);
    `name_as` writes the name (a code span), `text_as` the words (escaped text)."""
    before, _, after = ISOLATION_WORDS[kind].partition("{}")
    shown = text_as(ITS_GROUP) if name is None else name_as(name)
    return f"{text_as(before)}{shown}{text_as(after)}"


class WhyPart(BaseModel):
    """One piece of a row's *why*: what changed in the config (`config`, shown first), a reason
    kind added/removed, a detail that moved, or text."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    kind: WhyKind
    text: str  # a reason kind, a group name, a config key's label, or plain text
    before: str | None = None  # for `detail`/`config`: the label is `text`, values before/after
    after: str | None = None
    name: bool = False  # `config`: the values are names from the config (shown as code)
    url: str | None = None  # `broken`: the config error's line


def _part(kind: WhyKind, text: str, *, before: str | None = None, after: str | None = None,
          url: str | None = None) -> WhyPart:
    """A why part from values the view computed (of the field types: not validated again,
    thousands of rows)."""
    return construct(WhyPart, {"kind": kind, "text": text, "before": before, "after": after,
                               "name": False, "url": url})


# How a config key of `diff.CONFIG_KEYS` is named in a row, and whether its values are names.
CONFIG_LABELS: dict[str, tuple[str, bool]] = {
    "mode": ("mode", False), "strategy": ("strategy", False),
    "chunk_column": ("chunk column", True), "chunk_size": ("chunk size", False),
    "chunk_count": ("chunk count", False), "chunk_by_days": ("chunk days", False),
    "cursor_column": ("cursor", True), "cursor_fallback_column": ("cursor fallback", True),
    "time_column": ("time column", True), "days_window": ("time window", False),
    "source_group": ("source group", True), "reconcile_required": ("reconcile", False),
}


def config_value(key: str, value: ConfigValue) -> str | None:
    """A config value for people: `100,000`, `on`/`off`, `30 days`; None for unset."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "on" if value else "off"
    return f"{value:,} days" if key in ("days_window", "chunk_by_days") else f"{value:,}"


def config_part(change: ConfigChange) -> WhyPart:
    label, is_name = CONFIG_LABELS.get(change.key, (change.key, False))
    return WhyPart(kind="config", text=label, name=is_name,
                   before=config_value(change.key, change.before),
                   after=config_value(change.key, change.after))


class ChangedRow(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    export_name: str
    file: str
    line: int | None
    url: str | None
    status: str
    score_base: int | None
    score_head: int | None
    delta: int | None
    class_base: str | None
    class_head: str | None
    cost_base: str | None = None
    cost_head: str | None = None
    wave_base: int | None
    wave_head: int | None
    blocking: bool
    waived: bool
    why: tuple[WhyPart, ...]
    reasons: tuple[Reason, ...]
    rules_url: str | None = None  # the scoring rules, whose anchors the reason kinds link to

    @property
    def magnitude(self) -> int:
        return abs(self.delta) if self.delta is not None else 100


class CauseGroup(BaseModel):
    """Rows that changed in exactly the same way: one line instead of a wall of rows."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    count: int
    delta: int | None
    class_move: tuple[str, str] | None
    wave_move: tuple[int, int] | None
    status: str
    why: tuple[WhyPart, ...]
    examples: tuple[str, ...]
    cost_move: tuple[str, str] | None = None


class Mover(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    export_name: str
    url: str | None
    delta: int


class Summary(BaseModel):
    """The first screen of a large PR."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    score_up: int
    score_down: int
    score_same: int
    added: int
    removed: int
    not_planned: int = 0
    class_moves: tuple[tuple[str, str, int], ...]
    wave_moves: tuple[tuple[int, int, int], ...]
    movers: tuple[Mover, ...]
    causes: tuple[CauseGroup, ...]
    grouped_rows: int  # rows covered by the listed cause groups


class FindingLine(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    kind: str
    message: str
    text: str  # the message without the export's name (shown after a link to the export)
    file: str | None
    line: int | None
    url: str | None
    export_name: str | None
    waiver_hint: str | None = None  # the waiver line that would accept it
    # The waivers-file entry that would accept it (an export the base does not have, or a
    # finding without an export: no line on the base branch to comment on).
    waiver_yaml: str | None = None
    source_group: str | None = None
    where: str | None = None  # config errors: `path:line` (linked), then `detail`
    detail: str | None = None


class WarningLine(BaseModel):
    """A source group's warning, base vs head, in one line."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    scope: str | None  # the config file; None for groups spanning several files
    group: str
    status: str
    kind_base: str | None
    kind_head: str | None
    count_base: int
    count_head: int
    members: tuple[str, ...]  # the head's members the warning names
    joined: tuple[str, ...]
    left: tuple[str, ...]
    renamed_from: str | None = None
    broken_file: str | None = None  # `unknown`: the file at head that does not load


class RenameLine(BaseModel):
    """A source group renamed: `renamed dwh_legacy → dwh_primary (200 exports, no change to
    priority)`; `changed` members also changed otherwise (and keep their rows)."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    before: str
    after: str
    exports: int
    changed: int
    warning: bool  # the group's campaign warning carried over under the new name


class ProblemLine(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    text: str
    status: str
    where: str | None = None  # `path:line`, linked to `url`; `detail` is the rest of `text`
    detail: str | None = None
    url: str | None = None
    kind: str = "config-error"


class CommentView(BaseModel):
    """What one rendering of the comment shows."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    gate_id: str
    marker: str
    digest: str  # hidden payload for "since your last push" ("" for none)
    passed: bool
    headline: str
    checked_line: str | None = None  # what the verdict is based on (config files, exports)
    policy: str
    counts: dict[str, int]
    since: SinceLastPush | None
    blocking: tuple[FindingLine, ...]
    omitted_blocking: int
    waivers: tuple[WaiverNote, ...]
    summary: Summary | None
    rows: tuple[ChangedRow, ...]
    total_rows: int  # every changed row, before any cut
    omitted_rows: int
    show_details: bool
    details_cut: bool  # the "Reasons per export" section was left out to fit
    warnings: tuple[WarningLine, ...]
    omitted_warnings: int
    warnings_persisting: int
    low_confidence: tuple[str, ...]
    omitted_low_confidence: int
    problems: tuple[ProblemLine, ...]
    omitted_problems: int
    base_sha: str
    head_sha: str
    facts: str
    run_url: str | None
    rules_url: str | None
    full_report_hint: str  # a Markdown fragment the shell built (paths as code spans)
    waiver_in_pr: str = "block"
    waiver_problems: tuple[str, ...] = ()  # waiver lines or files that could not be used
    # New exports of unknown cost (no facts) not already listed as blocking.
    unplanned_cost: tuple[FindingLine, ...] = ()
    rivet_version: str = RIVET_VERSION  # the rivet release modelled, in the footer
    renames: tuple[RenameLine, ...] = ()
    waivers_file: str = ".rivet-ci/waivers.yaml"
    picture: CampaignPicture | None = None  # the head campaign (Mermaid), when anything changed
    quiet: bool = False  # the PR changes no config file and no finding
    # What was left out to fit a size limit (`trimmed`), as the comment names it: `the campaign
    # picture`, `3 campaign warnings`.
    left_out: tuple[str, ...] = ()

    @property
    def large(self) -> bool:
        return self.summary is not None

    def with_budget(self, rows: int, details: bool) -> CommentView:
        """The same view with its first `rows` rows and (or without) the details section."""
        kept = self.rows[:rows]
        return self.model_copy(update={
            "rows": kept, "omitted_rows": self.total_rows - len(kept),
            "show_details": details and bool(kept), "details_cut": not details and bool(kept)})

    def size(self, part: FitPart) -> int:
        """How many items `part` holds (a section of one item: 0 or 1)."""
        value = getattr(self, part.field)
        return len(value) if isinstance(value, tuple) else int(value is not None)

    def trimmed(self, part: FitPart, keep: int) -> CommentView:
        """The same view with only the first `keep` items of `part`, saying what went."""
        value = getattr(self, part.field)
        gone = self.size(part) - keep
        if gone <= 0:
            return self
        kept = value[:keep] if isinstance(value, tuple) else None
        what = part.label if not isinstance(value, tuple) else plural(gone, part.label,
                                                                      part.plural)
        return self.model_copy(update={part.field: kept, "left_out": (*self.left_out, what)})


@dataclass(frozen=True)
class FitPart:
    """A part of the comment the renderer may leave out to fit a size limit: a field of
    `CommentView` (a tuple, whose items go from the end, or one object), and what the comment
    calls it when it says what was left out."""

    field: str
    label: str
    plural: str | None = None


# What goes, first to last, when the comment without any changed row is still over its limit
# (`output.render.render_within_limit`: before that, the folded reasons go, then rows from the
# end). Whole items, never part of a text: the comment then says what it left out and where
# everything is. Every section of the view is listed here or is one of `FIXED_PARTS`
# (tests/test_comment_fit.py).
FIT_ORDER: tuple[FitPart, ...] = (
    FitPart("picture", "the campaign picture"),
    FitPart("low_confidence", "low-confidence export"),
    FitPart("renames", "renamed source group"),
    FitPart("waiver_problems", "waiver line that could not be used",
            "waiver lines that could not be used"),
    FitPart("waivers", "waiver note"),
    FitPart("unplanned_cost", "export of unknown cost", "exports of unknown cost"),
    FitPart("problems", "configuration error"),
    FitPart("warnings", "campaign warning"),
    FitPart("since", "what changed since your last push"),
    FitPart("summary", "the summary of changes"),
    FitPart("blocking", "blocking finding"),
)
# The parts that always stay: the marker and digest, the headline and what was checked, the
# counts, the footer's facts and commits (bounded by themselves: rivet-ci's words, names
# bounded by `shown`); `rows` (and the reasons per export) are cut by the renderer first.
FIXED_PARTS = frozenset({"rows", "counts", "left_out"})


def facts_description(origin: FactsOrigin, now: datetime,
                      max_age: timedelta | None = None) -> str:
    if origin.kind == "none":
        return "no facts (every export planned with low confidence)"
    if origin.kind == "live":
        return "live preflight"
    where = f"{origin.path}" if origin.path else "facts file"
    if origin.captured_at is None:
        return f"{where} (capture time unknown)"
    age_h = max((now - origin.captured_at).total_seconds(), 0) / 3600
    age = f"{age_h:.0f} h" if age_h < 48 else f"{age_h / 24:.0f} days"
    if max_age is not None and now - origin.captured_at > max_age:
        limit = max_age.total_seconds() / 3600
        shown = f"{limit:.0f} h" if limit < 48 else f"{limit / 24:.0f} days"
        return f"{where}, captured {age} ago — ⚠️ stale (older than {shown}): recapture the facts"
    return f"{where}, captured {age} ago"


# -- why a row changed ----------------------------------------------------------------------------

def detail_changes(base: Reason, head: Reason) -> list[WhyPart]:
    """The values that moved inside one reason kind (`chunk windows 48 → 192`), labelled as its
    kind defines them (`core/plan/reasons.py`)."""
    kind = REASON_KINDS.get(head.kind)
    labels = {v.name: v for v in kind.values} if kind is not None else {}
    before = dict(base.values)
    parts = []
    for name, value in head.values:
        old = before.get(name)
        if old is None or old == value:
            continue
        label = labels.get(name) or ValueLabel(name, name.replace("_", " "))
        suffix = f" {label.unit}" if label.unit else ""
        parts.append(_part("detail", label.label,
                           before=people_numbers(f"{label.prefix}{old}") + suffix,
                           after=people_numbers(f"{label.prefix}{value}") + suffix))
    if not parts and len(base.values) != len(head.values):
        parts.append(_part("text", f"{head.kind} reworded"))
    return parts


def reason_url(rules_url: str | None, kind: str) -> str | None:
    """The row of a reason kind in the scoring rules: one anchor per kind (`reason_anchor`), in
    the reason-kinds table `scripts/regenerate.py` writes."""
    return f"{rules_url}#{reason_anchor(kind)}" if rules_url else None


class ViewMemo:
    """What one view's construction computes once for rows changed alike: a mass change
    repeats the same why thousands of times. Owned by one `build_comment_view` call (its
    objects are shared by the rows it builds; the renderer keys its own work by them)."""

    __slots__ = ("config_why", "same_why", "why")

    def __init__(self) -> None:
        self.why: dict[tuple[object, ...], tuple[WhyPart, ...]] = {}
        # Rows whose reasons differ only in wording share one why object.
        self.same_why: dict[tuple[object, ...], tuple[WhyPart, ...]] = {}
        self.config_why: dict[tuple[object, ...],
                              tuple[tuple[WhyPart, ...], tuple[WhyPart, ...]]] = {}


def why_parts(change: ExportChange, link: LinkFor | None = None,
              rules_url: str | None = None, memo: ViewMemo | None = None,
              ) -> tuple[WhyPart, ...]:
    memo = memo or ViewMemo()
    if change.status == "not-planned" and change.broken_at is not None:
        at = change.broken_at
        where = f"{at.file}:{at.line}" if at.line else at.file
        what = "plan refused" if at.kind == "plan-refused" else "config error"
        return (WhyPart(kind="broken", text=what, before=where,
                        url=link(at.file, at.line) if link else None),)
    effect = _why_parts(change.base, change.head, change.renamed_from, change.reasons_added,
                        change.reasons_removed, rules_url=rules_url, memo=memo)
    if change.broken_at is not None and any(p.kind == "cleared" for p in effect):
        # Beside exports its file's error kept from being planned: isolation is unknown.
        effect = tuple(WhyPart(kind="unknown", text=change.broken_at.file)
                       if p.kind == "cleared" else p for p in effect)
    if not change.config_changes:
        return effect
    # The same config change on thousands of rows: one tuple (and one rendering) for all.
    key = (tuple((c.key, c.before, c.after) for c in change.config_changes), id(effect))
    hit = memo.config_why.get(key)
    if hit is None or hit[0] is not effect:  # (the entry keeps `effect` alive: no reused id)
        parts = tuple(config_part(c) for c in change.config_changes)
        hit = memo.config_why[key] = (effect, parts + effect)
    return hit[1]


def _why_parts(b: ExportRecommendation | None, h: ExportRecommendation | None,
               renamed_from: str | None, reasons_added: tuple[str, ...],
               reasons_removed: tuple[str, ...], *, rules_url: str | None,
               memo: ViewMemo) -> tuple[WhyPart, ...]:
    # A mass change repeats the same why thousands of times: compute each distinct one once,
    # keyed by exactly what `_compute_why` reads (a reason both sides have matters only when
    # its values moved: `detail_changes`).
    moved: tuple[object, ...] = ()
    if b is not None and h is not None:
        before = {r.kind: r.values for r in b.reasons}
        moved = tuple((r.kind, before[r.kind], r.values) for r in h.reasons
                      if r.kind in before and before[r.kind] != r.values)
    key = (renamed_from, reasons_added, reasons_removed, rules_url,
           None if b is None else (b.risk_class, b.source_group, b.isolate_on_source),
           None if h is None else (h.risk_class, h.source_group, h.isolate_on_source), moved)
    hit = memo.why.get(key)
    if hit is None:
        parts = _compute_why(b, h, renamed_from, reasons_added, reasons_removed,
                             rules_url=rules_url)
        hit = memo.why[key] = memo.same_why.setdefault(
            tuple((p.kind, p.text, p.before, p.after, p.name, p.url) for p in parts), parts)
    return hit


def _compute_why(b: ExportRecommendation | None, h: ExportRecommendation | None,
                 renamed_from: str | None, reasons_added: tuple[str, ...],
                 reasons_removed: tuple[str, ...], *,
                 rules_url: str | None = None) -> tuple[WhyPart, ...]:
    parts: list[WhyPart] = []
    if renamed_from:
        parts.append(_part(kind="text", text=f"renamed from {renamed_from}"))
    if h is None:
        return (*parts, _part(kind="text", text="export removed"))
    if b is None:
        parts.append(_part(kind="text", text="new export"))
    if h.isolate_on_source and not (b and b.isolate_on_source):
        parts.append(_part(kind="isolation", text=h.source_group or "?"))
    elif b is not None and b.isolate_on_source and not h.isolate_on_source:
        parts.append(_part(kind="cleared", text=b.source_group or "?"))
    parts += [_part(kind="added", text=k, url=reason_url(rules_url, k))
              for k in reasons_added if k != ISOLATION_KIND]
    parts += [_part(kind="removed", text=k, url=reason_url(rules_url, k))
              for k in reasons_removed if k != ISOLATION_KIND]
    if b is None:
        return tuple(parts)
    if b.risk_class != h.risk_class:
        parts.append(_part(kind="detail", text="risk", before=b.risk_class, after=h.risk_class))
    base_reasons = {r.kind: r for r in b.reasons}
    for reason in h.reasons:
        old = base_reasons.get(reason.kind)
        if old is not None and (old.values != reason.values or old.message != reason.message):
            parts += detail_changes(old, reason)
    return tuple(parts)


def _cause_key(row: ChangedRow, memo: dict[int, tuple[object, ...]] | None = None,
               ) -> tuple[object, ...]:
    """What a "same change" line shows, and nothing else: two groups never read the same.
    `memo` keeps each why's part of the key by the why object (rows changed alike share it)."""
    why = memo.get(id(row.why)) if memo is not None else None
    if why is None:
        why = tuple((p.kind, p.text, p.before, p.after) for p in row.why
                    if p.kind != "isolation")
        if memo is not None:
            memo[id(row.why)] = why
    moved = row.status == "changed"
    return (row.status, row.delta,
            (row.class_base, row.class_head) if moved and row.class_base != row.class_head
            else None,
            (row.cost_base, row.cost_head) if moved and row.cost_base != row.cost_head else None,
            (row.wave_base, row.wave_head) if moved and row.wave_base != row.wave_head else None,
            why)


# -- building -------------------------------------------------------------------------------------

LinkFor = Callable[[str, int | None], str | None]


def _no_links(_path: str, _line: int | None) -> str | None:
    return None


def _row(change: ExportChange, blocking: set[tuple[str | None, str]],
         waived: set[tuple[str | None, str]], link: LinkFor, *,
         rules_url: str | None, memo: ViewMemo) -> ChangedRow:
    b, h = change.base, change.head
    latest: ExportRecommendation | None = h or b
    assert latest is not None  # a change always has one side
    key = (change.config_path, change.export_name)
    why = why_parts(change, link, rules_url, memo)
    if change.cost_unknown_head:
        why = (*why, WhyPart(kind="text",
                             text=f"cost unknown: {change.cost_unknown_why or 'no facts'}"))
    elif change.catalog_relation is not None and change.status != "unchanged":
        why = (*why, WhyPart(kind="text", text=f"costed from the catalog of "
                                               f"{change.catalog_relation}"))
    # Every field comes from validated models: construct without re-validating (3,000 rows).
    return construct(ChangedRow, {
        "export_name": change.export_name, "file": change.config_path, "line": change.line,
        "url": link(change.config_path, change.line), "status": change.status,
        "score_base": b.priority_score if b else None,
        "score_head": h.priority_score if h else None, "delta": change.score_delta,
        "class_base": b.priority_class if b else None,
        "class_head": h.priority_class if h else None,
        "cost_base": b.cost_class if b else None, "cost_head": h.cost_class if h else None,
        "wave_base": b.recommended_wave if b else None,
        "wave_head": h.recommended_wave if h else None,
        "blocking": key in blocking, "waived": key in waived and key not in blocking,
        "why": why, "reasons": latest.reasons,
        "rules_url": rules_url})


def _row_priority(row: ChangedRow) -> tuple[int, int, str, str]:
    # Blocking first, then the largest score movement (added/removed count as large), then name.
    return (0 if row.blocking else 1, -row.magnitude, row.file, row.export_name)


def _summary(rows: Sequence[ChangedRow]) -> Summary:
    changed = [r for r in rows if r.status == "changed"]
    class_moves = Counter((r.class_base, r.class_head) for r in changed
                          if r.class_base != r.class_head)
    wave_moves = Counter((r.wave_base, r.wave_head) for r in changed
                         if r.wave_base != r.wave_head)
    groups: dict[tuple[object, ...], list[ChangedRow]] = {}
    memo: dict[int, tuple[object, ...]] = {}  # the rows (and their whys) outlive it
    for row in rows:
        groups.setdefault(_cause_key(row, memo), []).append(row)
    causes = sorted((g for g in groups.values() if len(g) >= 2),
                    key=lambda g: (-len(g), g[0].export_name))[:MAX_CAUSE_GROUPS]
    movers = sorted((r for r in changed if r.delta), key=lambda r: (-abs(r.delta or 0),
                                                                     r.export_name))
    return Summary(
        score_up=sum(1 for r in changed if (r.delta or 0) > 0),
        score_down=sum(1 for r in changed if (r.delta or 0) < 0),
        score_same=sum(1 for r in changed if r.delta == 0),
        added=sum(1 for r in rows if r.status == "added"),
        removed=sum(1 for r in rows if r.status == "removed"),
        not_planned=sum(1 for r in rows if r.status == "not-planned"),
        class_moves=tuple((str(a), str(b), n) for (a, b), n in class_moves.most_common()),
        wave_moves=tuple((int(a or 0), int(b or 0), n) for (a, b), n in wave_moves.most_common()),
        movers=tuple(Mover(export_name=r.export_name, url=r.url, delta=r.delta or 0)
                     for r in movers[:BIGGEST_MOVERS]),
        causes=tuple(CauseGroup(
            count=len(g), delta=g[0].delta, status=g[0].status,
            class_move=(str(g[0].class_base), str(g[0].class_head))
            if g[0].class_base != g[0].class_head and g[0].status == "changed" else None,
            wave_move=(int(g[0].wave_base or 0), int(g[0].wave_head or 0))
            if g[0].wave_base != g[0].wave_head and g[0].status == "changed" else None,
            cost_move=(str(g[0].cost_base), str(g[0].cost_head))
            if g[0].cost_base != g[0].cost_head and g[0].status == "changed" else None,
            why=tuple(p for p in g[0].why if p.kind != "isolation"),
            examples=tuple(r.export_name for r in g[:3])) for g in causes),
        grouped_rows=sum(len(g) for g in causes),
    )


def _warning_line(w: WarningChange) -> WarningLine:
    head, base = set(w.members_head), set(w.members_base)
    return WarningLine(
        scope=None if w.scope == REPO_SCOPE else w.scope, group=w.group, status=w.status,
        kind_base=w.kind_base, kind_head=w.kind_head, count_base=len(w.members_base),
        count_head=len(w.members_head), members=w.members_head,
        joined=tuple(m for m in w.members_head if m not in base),
        left=tuple(m for m in w.members_base if m not in head), renamed_from=w.renamed_from,
        broken_file=w.broken_file)


def _finding_text(f: Finding, warnings: Mapping[tuple[str, str], WarningChange]) -> str:
    if f.kind == "new-isolation":  # the template writes the group as code (`isolation`)
        return isolation_words("isolation", f.source_group)
    if f.kind == "new-warning" and f.source_group is not None:
        w = warnings.get((f.file or REPO_SCOPE, f.source_group))
        if w is not None and w.kind_head is not None:
            what = ("heavy exports" if w.kind_head == "heavy" else "exports sharing the source")
            return f"new campaign warning: {len(w.members_head):,} {what} (see below)"
    if f.export_name and f.message.startswith(f"{f.export_name}: "):
        return f.message[len(f.export_name) + 2:]
    return f.message


def split_location(message: str, file: str | None, line: int | None) -> tuple[str | None, str]:
    """A problem's `path:line` and the rest of its text (`field: message`), from the location
    the finding carries (the text is not parsed for it)."""
    if file is None:
        return None, message
    where = f"{file}:{line}" if line else file
    if message.startswith(where + ": "):
        rest = message[len(where) + 2:]
        # `exports[0].chunk_colum: unknown key ...`: the field shown as code
        if field := _FIELD.match(rest):
            rest = f"`{field.group(1)}`: {rest[field.end():]}" if "`" not in field.group(1) \
                else rest
        return where, rest
    return None, message


_FIELD = re.compile(r"([A-Za-z_][\w-]*(?:\[\d+\]|\.[A-Za-z_][\w-]*)*): ")


def _finding_line(f: Finding, link: LinkFor, hints: Mapping[int, str],
                  warnings: Mapping[tuple[str, str], WarningChange],
                  new_exports: set[tuple[str, str]]) -> FindingLine:
    where, detail = split_location(f.message, f.file, f.line)
    hint = hints.get(id(f))
    yaml_hint = None
    if f.kind in WAIVABLE_KINDS and (f.export_name is None
                                     or (f.file or "", f.export_name) in new_exports):
        yaml_hint, hint = waiver_file_entry(f), None
    return FindingLine(kind=f.kind, message=f.message, text=_finding_text(f, warnings),
                       file=f.file, line=f.line,
                       url=link(f.file, f.line) if f.file else None, export_name=f.export_name,
                       waiver_hint=hint, waiver_yaml=yaml_hint, source_group=f.source_group,
                       where=where, detail=detail)


def _problem_line(f: Finding, link: LinkFor) -> ProblemLine:
    where, detail = split_location(f.message, f.file, f.line)
    # A fixed error's line is on the base: no link into the head commit.
    url = link(f.file, f.line) if f.file and where and f.status != "resolved" else None
    return ProblemLine(text=f.message, status=f.status, where=where, detail=detail, url=url,
                       kind=f.kind)


def _cap(items: Sequence[object], limit: int) -> int:
    return max(len(items) - limit, 0)


@dataclass(frozen=True)
class ViewOptions:
    """Everything the comment view is built from besides the diff and the gate: the marker and
    the commits, the facts line, links, hints and what was checked (one object, so a caller
    names each value once and the view's inputs are read in one place)."""

    gate_id: str
    marker: str
    base_sha: str
    head_sha: str
    facts: str
    # The output boundary's redactor: the view's every value passes it (then its bound) when
    # the view is built, before anything is escaped (`shown`). No default: a caller cannot
    # forget it (`NoMasker` where no secret can reach the view).
    mask: Masker
    run_url: str | None = None
    digest: str = ""
    since: SinceLastPush | None = None
    link: LinkFor | None = None
    rules_url: str | None = None
    waiver_hints: Mapping[int, str] = field(default_factory=dict)
    full_report_hint: str = "the job summary and `plan.json`"
    waiver_in_pr: str = "block"
    checked: Mapping[str, int] | None = None
    waiver_problems: tuple[str, ...] = ()
    waivers_file: str = DEFAULT_WAIVERS_FILE
    head: Plan | None = None
    quiet: bool = False


def build_comment_view(diff: PlanDiff, gate: GateResult, options: ViewOptions) -> CommentView:
    """Build the view with every row, every value redacted and bounded (`shown`);
    `CommentView.with_budget` and `trimmed` cut it to a size."""
    o = options
    link, rules_url, checked, quiet, head = (o.link or _no_links, o.rules_url, o.checked,
                                             o.quiet, o.head)
    blocking_keys = {(f.file, f.export_name) for f in gate.blocking if f.export_name}
    waived_keys = {(w.finding.file, w.finding.export_name) for w in gate.waived
                   if w.finding.export_name}
    renamed = {r.before: r for r in diff.group_renames}
    pure = [c for c in diff.changed_exports if _only_group_renamed(c, renamed)] if renamed else []
    pure_ids = {id(c) for c in pure}
    memo = ViewMemo()
    rows = sorted((_row(c, blocking_keys, waived_keys, link, rules_url=rules_url, memo=memo)
                   for c in diff.changed_exports
                   if id(c) not in pure_ids), key=_row_priority)
    renames = _rename_lines(diff, pure)
    large = len(rows) > LARGE_PR_ROWS
    hints = o.waiver_hints
    by_group = {(w.scope, w.group): w for w in diff.warnings}
    new_exports = {(c.config_path, c.export_name) for c in diff.changed_exports
                   if c.status == "added"}
    blocking = [_finding_line(f, link, hints, by_group, new_exports) for f in gate.blocking]
    blocking_ids = {id(f) for f in gate.blocking} | {id(w.finding) for w in gate.waived}
    # Config errors not already listed as blocking (each finding once).
    problems = [_problem_line(f, link) for f in diff.findings
                if f.kind in PROBLEM_KINDS and id(f) not in blocking_ids]
    warnings = [_warning_line(w) for w in diff.warnings if w.changed]
    unplanned = [_finding_line(f, link, hints, by_group, new_exports) for f in diff.findings
                 if f.kind == "unplanned-cost" and f.status == "new" and id(f) not in blocking_ids]
    low = sorted({c.export_name for c in diff.changed_exports
                  if c.low_confidence in ("new", "pre-existing")})
    counts = {
        "changed": sum(1 for r in rows if r.status == "changed"),
        "added": sum(1 for r in rows if r.status == "added"),
        "removed": sum(1 for r in rows if r.status == "removed"),
        "not_planned": sum(1 for r in rows if r.status == "not-planned"),
        "renamed_groups": len(renames),
        "unknown_warnings": sum(1 for w in diff.warnings if w.status == "unknown"),
        "new_isolations": diff.new_isolations,
        "new_warnings": diff.new_warnings,
        "resolved_warnings": sum(1 for w in diff.warnings if w.status == "resolved"),
        "errors": sum(1 for f in diff.findings if f.kind in PROBLEM_KINDS and f.status == "new"),
        "blocking": len(gate.blocking),
        "waived": len(gate.waived),
        "unplanned_cost": sum(1 for f in diff.findings
                              if f.kind == "unplanned-cost" and f.status == "new"),
    }
    return shown(CommentView(
        gate_id=o.gate_id, marker=o.marker, digest=o.digest, passed=gate.passed,
        headline=QUIET_HEADLINE if quiet and gate.passed else headline(gate.passed, counts),
        policy=gate.policy, counts=counts, quiet=quiet,
        checked_line=checked_text(checked) if checked is not None else None, since=o.since,
        blocking=tuple(blocking[:MAX_LISTED]), omitted_blocking=_cap(blocking, MAX_LISTED),
        waivers=gate.notes, summary=_summary(rows) if large else None,
        rows=tuple(rows), total_rows=len(rows), omitted_rows=0, show_details=True,
        details_cut=False,
        warnings=tuple(warnings[:MAX_LISTED]), omitted_warnings=_cap(warnings, MAX_LISTED),
        warnings_persisting=sum(1 for w in diff.warnings if not w.changed),
        low_confidence=tuple(low[:MAX_LISTED]), omitted_low_confidence=_cap(low, MAX_LISTED),
        problems=tuple(problems[:MAX_LISTED]), omitted_problems=_cap(problems, MAX_LISTED),
        base_sha=o.base_sha, head_sha=o.head_sha, facts=o.facts, run_url=o.run_url,
        rules_url=rules_url, full_report_hint=o.full_report_hint, waiver_in_pr=o.waiver_in_pr,
        waiver_problems=o.waiver_problems[:MAX_LISTED], renames=tuple(renames[:MAX_LISTED]),
        unplanned_cost=tuple(unplanned[:MAX_LISTED]),
        waivers_file=o.waivers_file,
        picture=build_picture(head, diff) if head is not None and (rows or warnings) else None,
    ), o.mask)


def _only_group_renamed(change: ExportChange, renamed: Mapping[str, GroupRename]) -> bool:
    """Whether the export's only change is its source group's recognised rename."""
    b, h = change.base, change.head
    if change.status != "changed" or b is None or h is None or b.source_group is None:
        return False
    rename = renamed.get(b.source_group)
    if rename is None or rename.after != h.source_group:
        return False
    if any(c.key != "source_group" for c in change.config_changes):
        return False
    def key(r: ExportRecommendation) -> tuple[object, ...]:
        return (r.priority_score, r.priority_class, r.recommended_wave, r.cost_class,
                r.risk_class, r.isolate_on_source, frozenset(r.reason_kinds))
    return key(b) == key(h) and reason_values(b) == reason_values(h)


def _rename_lines(diff: PlanDiff, pure: Sequence[ExportChange]) -> list[RenameLine]:
    quiet = Counter(c.head.source_group for c in pure if c.head is not None)
    carried = {w.group for w in diff.warnings if w.renamed_from}
    return [RenameLine(before=r.before, after=r.after, exports=r.exports,
                       changed=r.exports - quiet[r.after], warning=r.after in carried)
            for r in diff.group_renames]


QUIET_HEADLINE = "✅ gate passed — nothing to review (no rivet config or finding changed)"


def checked_text(checked: Mapping[str, int]) -> str:
    """What the verdict is based on: `checked 2 config files (7 exports) at head, 2 (6) at
    base`. Says it plainly when nothing matched, so a gate that checked nothing never looks
    like a pass over real configs. When the review covers only what the change can affect
    (`head-files` given): `checked 3 of 400 config files (90 exports) at head, 3 of 400 (88)
    at base — the changed files and the source groups they touch`."""
    if "head-files" in checked:
        head = (f"{checked['head-configs']:,} of {plural(checked['head-files'], 'config file')}"
                f" ({plural(checked['head-exports'], 'export')}) at head")
        base = (f"{checked['base-configs']:,} of {checked['base-files']:,} "
                f"({checked['base-exports']:,}) at base")
        return f"checked {head}, {base} — the changed files and the source groups they touch"
    head = (f"{plural(checked['head-configs'], 'config file')} "
            f"({plural(checked['head-exports'], 'export')}) at head")
    base = f"{checked['base-configs']:,} ({checked['base-exports']:,}) at base"
    return f"checked {head}, {base}"


def headline(passed: bool, counts: dict[str, int],
             checked: Mapping[str, int] | None = None) -> str:
    touched = counts["changed"] + counts["added"] + counts["removed"]
    parts = []
    if touched or not (counts.get("renamed_groups") or counts.get("not_planned")):
        parts.append(f"{plural(touched, 'export')} changed")
    if counts.get("renamed_groups"):
        parts.append(f"{plural(counts['renamed_groups'], 'source group')} renamed")
    if counts.get("not_planned"):
        parts.append(f"{plural(counts['not_planned'], 'export')} not planned (config error)")
    if counts["new_isolations"]:
        parts.append(plural(counts["new_isolations"], "new isolation"))
    if counts["new_warnings"]:
        parts.append(plural(counts["new_warnings"], "new campaign warning"))
    if counts["resolved_warnings"]:
        parts.append(f"{plural(counts['resolved_warnings'], 'campaign warning')} resolved")
    if counts.get("unknown_warnings"):
        parts.append(f"{plural(counts['unknown_warnings'], 'campaign warning')} unknown")
    if counts["errors"]:
        parts.append(plural(counts["errors"], "new config error"))
    if counts.get("unplanned_cost"):
        parts.append(f"{plural(counts['unplanned_cost'], 'export')} of unknown cost (no facts)")
    if counts.get("waived"):
        parts.append(f"{plural(counts['waived'], 'finding')} waived")
    verdict = ("✅ gate passed" if passed
               else f"❌ gate failed ({plural(counts['blocking'], 'blocking finding')})")
    tail = f" · {checked_text(checked)}" if checked is not None else ""
    return f"{verdict} — " + ", ".join(parts) + tail
