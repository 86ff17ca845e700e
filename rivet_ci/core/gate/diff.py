"""Base plan vs head plan → what the pull request changes (pure).

Exports are matched by (config path, name), following config renames. Every finding is
classified `new` (the PR introduces it), `pre-existing` (already on the base) or `resolved` (the
PR removes it), so the gate can block only what the PR introduces; `unknown` when the head
cannot say (the file it depends on does not load at head) — never `resolved`, never blocking.

What is the same is matched as the same: a source group renamed (the same members under a new
name, warning of the same kind) is one warning `renamed_from` the old name, not one new and one
resolved; an export missing at head from a file that does not load is `not-planned`, not
`removed`. Each changed export carries what changed in its config (`config_changes`, values
from the configs the plans carry, never parsed back out of a reason's text).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from operator import attrgetter
from typing import Literal

from pydantic import BaseModel, ConfigDict

from rivet_ci.core.common.fast_model import construct
from rivet_ci.core.common.problems import Problem, ProblemFinding
from rivet_ci.core.config.rules import rule_tag
from rivet_ci.core.plan.campaign import (
    GroupPressure,
    group_members,
    group_pressure,
    pressure_message,
)
from rivet_ci.core.plan.planner import ConfigPlan, Plan, PlannedExport
from rivet_ci.core.plan.recommendation import HEAVY_COST, ExportRecommendation, ReasonValues
from rivet_ci.core.plan.reuse import unchanged_files

ChangeStatus = Literal["added", "removed", "changed", "unchanged", "not-planned"]
FindingStatus = Literal["new", "pre-existing", "resolved", "unknown"]
FindingKind = Literal["config-error", "plan-refused", "no-configs", "new-isolation",
                      "new-warning", "score-drop", "wave-later", "low-confidence",
                      # An export planned without any facts: its cost is not known.
                      "unplanned-cost",
                      # A PR changing a file that grades it (rivet_ci.review.trust,
                      # docs/security.md).
                      "facts-changed-in-pr", "url-file-changed-in-pr", "state-changed-in-pr",
                      "template-changed-in-pr"]
REPO_SCOPE = "(all configs)"


ConfigValue = str | int | bool | None


class ConfigChange(BaseModel):
    """One key of an export's config that differs between base and head (`mode`, `strategy`,
    `chunk_size`, ...; `strategy` is the one the plan resolved). Values as configured."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    key: str
    before: ConfigValue = None
    after: ConfigValue = None


# The config keys a reviewer reads as "what changed", in the order they are shown. `strategy`
# (the plan's resolved strategy) is shown only when `mode` did not change: a new mode already
# says it.

CONFIG_KEYS = ("mode", "strategy", "chunk_column", "chunk_size", "chunk_count", "chunk_by_days",
               "cursor_column", "cursor_fallback_column", "time_column", "days_window",
               "source_group", "reconcile_required")


class BrokenAt(BaseModel):
    """Where the config error is that kept an export from being planned at head."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    file: str
    line: int | None = None
    kind: ProblemFinding = "config-error"


class ExportChange(BaseModel):
    """One export, base vs head."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    export_name: str
    config_path: str
    renamed_from: str | None = None
    line: int | None = None
    status: ChangeStatus
    base: ExportRecommendation | None = None
    head: ExportRecommendation | None = None
    reasons_added: tuple[str, ...] = ()
    reasons_removed: tuple[str, ...] = ()
    config_changes: tuple[ConfigChange, ...] = ()
    # `not-planned`: the export is on the base, and its file at head has a config error.
    broken_at: BrokenAt | None = None
    # Planned without any facts (none of its own, none from the catalog): cost unknown, and why.
    cost_unknown_base: bool = False
    cost_unknown_head: bool = False
    cost_unknown_why: str | None = None
    # The head was planned from the source catalog (no facts of its own): that relation.
    catalog_relation: str | None = None

    @property
    def score_delta(self) -> int | None:
        if self.base is None or self.head is None:
            return None
        return self.head.priority_score - self.base.priority_score

    @property
    def isolation(self) -> FindingStatus | None:
        before = bool(self.base and self.base.isolate_on_source)
        after = bool(self.head and self.head.isolate_on_source)
        return _status(before, after)

    @property
    def low_confidence(self) -> FindingStatus | None:
        return _status(bool(self.base and self.base.low_confidence),
                       bool(self.head and self.head.low_confidence))

    @property
    def unplanned_cost(self) -> FindingStatus | None:
        return _status(self.cost_unknown_base, self.cost_unknown_head)


def cost_unknown(export: PlannedExport | None) -> bool:
    """Planned without any facts: no entry, none from the catalog, or a failed preflight (its
    provenance says so; a plan read back without one: its verdict)."""
    if export is None:
        return False
    provenance = export.facts_provenance
    if provenance is not None:
        return provenance.facts == "none"
    return export.signals is not None and export.signals.preflight_failed


def cost_unknown_why(export: PlannedExport) -> str:
    """Why an export's cost is unknown (`no facts: table ... is not in the catalog captured
    2026-11-28`)."""
    provenance = export.facts_provenance
    why = (provenance.why_unknown if provenance is not None else None) or export.preflight_error
    if not why:
        return "no facts"
    why = why.removeprefix("no facts for this export: ")
    return why if why.startswith("no facts") else f"no facts: {why}"


def catalog_relation(export: PlannedExport | None) -> str | None:
    """The catalogued relation an export's facts were derived from (None: not the catalog)."""
    provenance = export.facts_provenance if export is not None else None
    return provenance.relation if provenance is not None and provenance.facts == "catalog" \
        else None


WarningKind = Literal["heavy", "shared"]


class WarningChange(BaseModel):
    """One source group's campaign warning, base vs head, matched by (scope, group).

    `kind` is what the group warns about on each side: `heavy` (two or more heavy-cost members
    — `members` are those) or `shared` (three or more members share the source — `members` are
    all of them). A group gets one entry, so it is never both "new" and "resolved".
    """

    model_config = ConfigDict(frozen=True, defer_build=True)

    scope: str  # a config path, or REPO_SCOPE for the repo-wide source_group view
    message: str  # the head's warning text (the base's when resolved)
    status: FindingStatus
    group: str = ""
    kind_base: WarningKind | None = None
    kind_head: WarningKind | None = None
    members_base: tuple[str, ...] = ()
    members_head: tuple[str, ...] = ()
    # The group's name on the base when the PR renamed it (same members, same kind).
    renamed_from: str | None = None
    # `unknown`: the config file at head that would say (it does not load).
    broken_file: str | None = None

    @property
    def changed(self) -> bool:
        """Whether the PR changes this warning at all (a pre-existing one may gain members)."""
        return (self.status != "pre-existing" or self.kind_base != self.kind_head
                or self.members_base != self.members_head)


class OrderMove(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    config_path: str
    export_name: str
    base_position: int | None  # 1-based; None when not in the base campaign
    head_position: int | None


class Finding(BaseModel):
    """Something the gate may block on; `status` says whether the PR introduced it."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    kind: FindingKind
    status: FindingStatus
    message: str
    file: str | None = None
    line: int | None = None
    export_name: str | None = None
    score_delta: int | None = None
    # What a waiver's fingerprint binds to (see core/waivers.py).
    source_group: str | None = None
    score: int | None = None


class GroupRename(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    before: str
    after: str
    exports: int


class PlanDiff(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)

    # One per export of the files the change can affect; a file it cannot affect (the same
    # plan on both sides) is only named in `unchanged_files` (all its exports are unchanged).
    exports: tuple[ExportChange, ...]
    warnings: tuple[WarningChange, ...]
    order_moves: tuple[OrderMove, ...]
    findings: tuple[Finding, ...]
    head_problems: tuple[Problem, ...]
    unchanged_files: tuple[str, ...] = ()
    # Source groups the PR renamed: every member of `before` is a member of `after` at head
    # and nothing else is (matched by config file and export name).
    group_renames: tuple[GroupRename, ...] = ()

    @property
    def changed_exports(self) -> tuple[ExportChange, ...]:
        return tuple(e for e in self.exports if e.status != "unchanged")

    @property
    def nothing_new(self) -> bool:
        """No export changed, no warning changed, and every finding is one the base already
        had (with no config file changed: nothing to review, `comment-when: changed`)."""
        return (not self.changed_exports
                and all(f.status == "pre-existing" for f in self.findings)
                and not any(w.changed for w in self.warnings))

    @property
    def new_isolations(self) -> int:
        """Exports the change makes `isolate_on_source` (the comment's count, the action's
        `new-isolations` output)."""
        return sum(1 for c in self.exports if c.isolation == "new")

    @property
    def new_warnings(self) -> int:
        """Campaign warnings the change raises (the comment's count, `new-warnings`)."""
        return sum(1 for w in self.warnings if w.status == "new")


def _status(before: bool, after: bool) -> FindingStatus | None:
    if after:
        return "pre-existing" if before else "new"
    return "resolved" if before else None


ConfigPressures = dict[str, GroupPressure]


class _ConfigGroups:
    """A config file's source groups: its own warnings (its campaign's view) and, per group,
    its members' names and its heavy members' names in config order (its share of the
    repo-wide view). Built once per plan object: a plan both sides share is looked at once."""

    __slots__ = ("members", "own")

    def __init__(self, config: ConfigPlan) -> None:
        self.own: ConfigPressures = {}
        self.members: dict[str, tuple[list[str], list[str]]] = {}
        recs = [e.recommendation for e in config.exports]
        for rec in recs:
            if rec.source_group is not None:
                names, heavy = self.members.setdefault(rec.source_group, ([], []))
                names.append(rec.export_name)
                if rec.cost_class in HEAVY_COST:
                    heavy.append(rec.export_name)
        if config.campaign is not None:
            for group, members in group_members(recs).items():
                if (pressure := group_pressure(members)) is not None:
                    self.own[group] = pressure


def _group_pressures(
    plan: Plan, memo: dict[int, _ConfigGroups] | None = None,
) -> tuple[dict[tuple[str, str], GroupPressure], dict[str, set[str]]]:
    """Every warning group of a plan: per config file, and over every config for groups that
    span two or more files (a shared replica ignores file boundaries); and the number of files
    of each group. `memo` keeps a config's groups by plan object: a file both sides share
    (core/plan_reuse.py) is looked at once."""
    memo = {} if memo is None else memo
    out: dict[tuple[str, str], GroupPressure] = {}
    names_all: dict[str, list[str]] = {}
    heavy_all: dict[str, list[str]] = {}
    files: dict[str, set[str]] = {}
    for config in plan.configs:
        groups = memo.get(id(config))
        if groups is None:
            groups = memo[id(config)] = _ConfigGroups(config)
        for group, own_pressure in groups.own.items():
            out[(config.path, group)] = own_pressure
        for group, (names, heavy) in groups.members.items():
            names_all.setdefault(group, []).extend(names)
            heavy_all.setdefault(group, []).extend(heavy)
            files.setdefault(group, set()).add(config.path)
    for group, names in names_all.items():
        # What `campaign.group_pressure` gives for the group's members in config order.
        if len(files[group]) < 2 or len(names) < 2:
            continue
        if len(heavy := heavy_all[group]) >= 2:
            out[(REPO_SCOPE, group)] = ("heavy", tuple(heavy), tuple(names))
        elif len(names) >= 3:
            out[(REPO_SCOPE, group)] = ("shared", tuple(heavy), tuple(names))
    return out, files


_LIST_INDEX = re.compile(r"\[\d+\]")


def _problem_key(problem: Problem, renames: Mapping[str, str]) -> tuple[str, str | None, str]:
    # Lines and list positions move when a PR edits a file (an export added above a broken one
    # turns `exports[0].x` into `exports[1].x`), and a renamed file keeps its problems: the same
    # problem elsewhere is not new. Keys are counted, so a second identical problem still is.
    field = _LIST_INDEX.sub("[]", problem.field) if problem.field else None
    return (renames.get(problem.file, problem.file), field,
            _LIST_INDEX.sub("[]", problem.message))


def diff_plans(
    base: Plan, head: Plan, *, renames: Mapping[str, str] | None = None, top_moves: int = 10,
) -> PlanDiff:
    """Compare two plans of the same repository. `renames` maps old config path → new path.

    A file the change cannot affect — the same plan on both sides (the same object, or an equal
    one), at the same path, untouched by a rename — gets no `ExportChange` per export: its
    exports are all unchanged, and it is named in `unchanged_files`. Its findings (exports run
    alone or planned on low-confidence metadata, all pre-existing) and its share of the
    source-group warnings are the same as comparing its exports one by one gives."""
    renames = dict(renames or {})
    unchanged = unchanged_files(base, head, renames)
    base_by_key: dict[tuple[str, str], PlannedExport] = {
        (renames.get(c.path, c.path), e.export_name): e
        for c in base.configs if c.path not in unchanged for e in c.exports}
    head_by_key = {(c.path, e.export_name): e
                   for c in head.configs if c.path not in unchanged for e in c.exports}
    old_path = {new: old for old, new in renames.items()}

    broken = broken_files(head)
    changes: list[ExportChange] = []
    for key in sorted(head_by_key.keys() | base_by_key.keys()):
        before, after = base_by_key.get(key), head_by_key.get(key)
        change = _export_change(key, before, after, old_path.get(key[0]))
        if before is not None and key[0] in broken:
            if after is None:
                # The file does not load (or refuses this export) at head: not a deletion.
                change = change.model_copy(update={
                    "status": "not-planned",
                    "broken_at": _nearest(broken[key[0]], before.line)})
            elif change.status == "changed":
                # Planned, but beside exports that are not: what it shares with them (a heavy
                # peer, its isolation) is unknown at head.
                change = change.model_copy(update={
                    "broken_at": _nearest(broken[key[0]], before.line)})
        changes.append(change)

    memo: dict[int, _ConfigGroups] = {}
    warnings = _warning_changes(base, head, renames, broken, memo)
    findings = _findings(changes, warnings, base, head, renames, unchanged=unchanged)
    return PlanDiff(
        exports=tuple(changes), warnings=tuple(warnings),
        order_moves=tuple(_order_moves(base, head, renames, top_moves, unchanged)),
        findings=tuple(findings), head_problems=head.all_problems,
        unchanged_files=tuple(sorted(unchanged)),
        group_renames=tuple(_group_renames(base, head, renames, memo)),
    )


def broken_files(plan: Plan) -> dict[str, list[Problem]]:
    """Config files with an error that keeps exports from being planned (a file that does not
    parse or validate, an export rivet refuses), by path: the errors."""
    out: dict[str, list[Problem]] = {}
    for config in plan.configs:
        errors = [p for p in config.problems if p.severity == "error"]
        if errors:
            out[config.path] = errors
    return out


def _nearest(errors: list[Problem], line: int | None) -> BrokenAt:
    """The error nearest to where the export was (the file's first error without a line)."""
    def distance(problem: Problem) -> tuple[int, int]:
        if problem.line is None or line is None:
            return (1 << 30, 0)
        return (abs(problem.line - line), problem.line)
    best = min(errors, key=distance)
    return BrokenAt(file=best.file, line=best.line, kind=best.finding)


def _group_keys(plan: Plan, renames: Mapping[str, str],
                memo: dict[int, _ConfigGroups]) -> dict[str, set[tuple[str, str]]]:
    """Each source group's members as (config path, export name), paths renamed to head's."""
    out: dict[str, set[tuple[str, str]]] = {}
    for config in plan.configs:
        groups = memo.get(id(config))
        if groups is None:
            groups = memo[id(config)] = _ConfigGroups(config)
        path = renames.get(config.path, config.path)
        for group, (names, _heavy) in groups.members.items():
            out.setdefault(group, set()).update((path, name) for name in names)
    return out


def _group_names(plan: Plan, memo: dict[int, _ConfigGroups]) -> set[str]:
    out: set[str] = set()
    for config in plan.configs:
        groups = memo.get(id(config))
        if groups is None:
            groups = memo[id(config)] = _ConfigGroups(config)
        out.update(groups.members)
    return out


def _group_renames(base: Plan, head: Plan, renames: Mapping[str, str],
                   memo: dict[int, _ConfigGroups]) -> list[GroupRename]:
    base_names, head_names = _group_names(base, memo), _group_names(head, memo)
    if not (base_names - head_names and head_names - base_names):
        return []  # no group left and none came: nothing was renamed
    before, after = _group_keys(base, renames, memo), _group_keys(head, {}, memo)
    gone = {frozenset(members): group for group, members in before.items()
            if group not in after}
    out = []
    for group, members in sorted(after.items()):
        if group in before:
            continue
        old = gone.get(frozenset(members))
        if old is not None:
            out.append(GroupRename(before=old, after=group, exports=len(members)))
    return out


def _export_change(
    key: tuple[str, str], before: PlannedExport | None, after: PlannedExport | None,
    renamed_from: str | None,
) -> ExportChange:
    config_path, name = key
    if before is after and after is not None:
        # One plan shared by both sides (core/plan_reuse.py): nothing inside it can differ.
        unknown = cost_unknown(after)
        return _UNCHANGED.model_copy(update={
            "export_name": name, "config_path": config_path, "renamed_from": renamed_from,
            "line": after.line, "base": after.recommendation, "head": after.recommendation,
            "cost_unknown_base": unknown, "cost_unknown_head": unknown,
            "cost_unknown_why": cost_unknown_why(after) if unknown else None,
            "catalog_relation": catalog_relation(after)})
    b = before.recommendation if before else None
    h = after.recommendation if after else None
    status: ChangeStatus
    if b is None:
        status = "added"
    elif h is None:
        status = "removed"
    else:
        status = "changed" if material_change(b, h) else "unchanged"
    base_kinds = b.reason_kinds if b else ()
    head_kinds = h.reason_kinds if h else ()
    unknown_base, unknown_head = cost_unknown(before), cost_unknown(after)
    why = None
    if unknown_head and after is not None:
        why = cost_unknown_why(after)
    elif unknown_base and before is not None:
        why = cost_unknown_why(before)
    return ExportChange(
        export_name=name, config_path=config_path,
        renamed_from=renamed_from if before is not None else None,
        line=after.line if after else (before.line if before else None), status=status,
        base=b, head=h,
        reasons_added=tuple(k for k in head_kinds if k not in base_kinds),
        reasons_removed=tuple(k for k in base_kinds if k not in head_kinds),
        config_changes=config_changes(before, after) if before and after else (),
        cost_unknown_base=unknown_base, cost_unknown_head=unknown_head, cost_unknown_why=why,
        catalog_relation=catalog_relation(after),
    )


def _config_values(export: PlannedExport, full: bool) -> tuple[ConfigValue, ...]:
    """The values of CONFIG_KEYS for one export: from the config as written when both sides
    have it (`full`), else only what every plan carries (mode, strategy, source group)."""
    config = export.config
    group = export.recommendation.source_group
    if not full or config is None:
        return (export.mode, export.strategy, *_NO_CONFIG, group, None)
    chunk_column, *middle, reconcile = _CONFIG_VALUES(config)  # one C call for ten keys
    return (export.mode, export.strategy, chunk_column, *middle, group, reconcile)


# CONFIG_KEYS read from the config as written (mode, strategy and group come from the plan).
_CONFIG_VALUES = attrgetter("chunk_column", "chunk_size", "chunk_count", "chunk_by_days",
                            "cursor_column", "cursor_fallback_column", "time_column",
                            "days_window", "reconcile_required")
_NO_CONFIG = (None,) * 8


def config_changes(before: PlannedExport, after: PlannedExport) -> tuple[ConfigChange, ...]:
    """What the PR changed in one export's config, in CONFIG_KEYS order (`strategy` only when
    `mode` did not change)."""
    if before.config is after.config and before.mode == after.mode and (
            before.strategy == after.strategy) and (before.recommendation.source_group
                                                    == after.recommendation.source_group):
        return ()  # one config object on both sides (a plan both share)
    full = before.config is not None and after.config is not None
    old, new = _config_values(before, full), _config_values(after, full)
    if old == new:
        return ()
    out = []
    for key, b, h in zip(CONFIG_KEYS, old, new, strict=True):
        if b != h and not (key == "strategy" and old[0] != new[0]):
            # values of the field types, from validated configs: built without re-validating
            out.append(construct(ConfigChange, {"key": key, "before": b, "after": h}))
    return tuple(out)


# Every field set, so a copy equals an ExportChange built field by field.
_UNCHANGED = ExportChange.model_construct(
    export_name="", config_path="", renamed_from=None, line=None, status="unchanged", base=None,
    head=None, reasons_added=(), reasons_removed=(), cost_unknown_base=False,
    cost_unknown_head=False, cost_unknown_why=None, catalog_relation=None)

def reason_values(rec: ExportRecommendation) -> tuple[tuple[str, ReasonValues], ...]:
    """Each reason's values, by kind (the numbers a reviewer reads in its message)."""
    return tuple(sorted((r.kind, r.values) for r in rec.reasons))


def material_change(base: ExportRecommendation, head: ExportRecommendation) -> bool:
    """Whether anything a reviewer acts on differs: score, class, wave, cost, risk, isolation,
    source group, the reason kinds, or a value of a reason (`Reason.values`: the numbers its
    message is written from). Rewording alone does not."""
    def key(r: ExportRecommendation) -> tuple[object, ...]:
        return (r.priority_score, r.priority_class, r.recommended_wave, r.cost_class,
                r.risk_class, r.isolate_on_source, r.source_group, frozenset(r.reason_kinds))
    return key(base) != key(head) or reason_values(base) != reason_values(head)


_KIND_RANK = {None: 0, "shared": 1, "heavy": 2}


def _counted(pressure: GroupPressure | None) -> tuple[str, ...]:
    """The members a warning counts: the heavy ones of a heavy-cost warning, else all."""
    if pressure is None:
        return ()
    return pressure[1] if pressure[0] == "heavy" else pressure[2]


def _warning_changes(base: Plan, head: Plan, renames: Mapping[str, str],
                     broken: Mapping[str, object] | None = None,
                     memo: dict[int, _ConfigGroups] | None = None) -> list[WarningChange]:
    memo = {} if memo is None else memo
    broken = broken or {}
    base_pressures, base_files = _group_pressures(base, memo)
    after, head_files = _group_pressures(head, memo)
    before = {(renames.get(scope, scope), group): p
              for (scope, group), p in base_pressures.items()}
    base_files = {group: {renames.get(f, f) for f in files}
                  for group, files in base_files.items()}
    renamed = _renamed_warnings(before, after)
    replaced = set(renamed.values())
    out = []
    for scope, group in sorted(before.keys() | after.keys()):
        if (scope, group) in replaced:
            continue  # shown under its new name
        b, h = before.get((scope, group)), after.get((scope, group))
        old_group = None
        if b is None and (scope, group) in renamed:
            old_group = renamed[(scope, group)][1]
            b = before[(scope, old_group)]
        kind_b, kind_h = (b[0] if b else None), (h[0] if h else None)
        status: FindingStatus
        if _KIND_RANK[kind_h] > _KIND_RANK[kind_b]:
            status = "new"
        elif _KIND_RANK[kind_h] < _KIND_RANK[kind_b]:
            status = "resolved"
        else:
            status = "pre-existing"
        # A file of the group that does not load at head cannot say the warning went away.
        files = {scope} if scope != REPO_SCOPE else base_files.get(group, set())
        broken_file = next((f for f in sorted(files) if f in broken), None)
        weaker = status == "resolved" or (
            kind_b == kind_h and b is not None and h is not None
            and set(_counted(h)) < set(_counted(b)))
        if broken_file is None or not weaker:
            broken_file = None
        else:
            status = "unknown"
        shown = h or b
        assert shown is not None
        message = pressure_message(group, shown)
        if scope == REPO_SCOPE:
            count = len((head_files if h else base_files)[group])
            message += f" (across {count} config files)"
        out.append(WarningChange(
            scope=scope, group=group, status=status, message=message,
            kind_base=kind_b, kind_head=kind_h, members_base=_counted(b),
            members_head=_counted(h), renamed_from=old_group, broken_file=broken_file))
    order = {"new": 0, "resolved": 1, "unknown": 2, "pre-existing": 3}
    return sorted(out, key=lambda w: order[w.status])


def _renamed_warnings(
    before: Mapping[tuple[str, str], GroupPressure],
    after: Mapping[tuple[str, str], GroupPressure],
) -> dict[tuple[str, str], tuple[str, str]]:
    """Head warning key → base warning key, for a group renamed with the same members and the
    same kind of warning (and the old name gone from that scope at head)."""
    gone = {(scope, kind, frozenset(names)): (scope, group)
            for (scope, group), (kind, _, names) in before.items() if (scope, group) not in after}
    out = {}
    for (scope, group), (kind, _, names) in after.items():
        if (scope, group) in before:
            continue
        old = gone.pop((scope, kind, frozenset(names)), None)
        if old is not None:
            out[(scope, group)] = old
    return out


def _order_moves(base: Plan, head: Plan, renames: Mapping[str, str], top: int,
                 shared: frozenset[str]) -> list[OrderMove]:
    base_orders = {renames.get(c.path, c.path): c.campaign.ordered_exports
                   for c in base.configs if c.campaign and c.path not in shared}
    moves = []
    for config in head.configs:
        if config.campaign is None or config.path in shared:  # the same order on both sides
            continue
        head_order = config.campaign.ordered_exports
        base_order = base_orders.get(config.path, ())
        base_pos = {name: i + 1 for i, name in enumerate(base_order)}
        for i, name in enumerate(head_order[:top]):
            if base_pos.get(name) != i + 1:
                moves.append(OrderMove(config_path=config.path, export_name=name,
                                       base_position=base_pos.get(name), head_position=i + 1))
    return moves


def _findings(
    changes: list[ExportChange], warnings: list[WarningChange], base: Plan, head: Plan,
    renames: Mapping[str, str], *, unchanged: frozenset[str],
) -> list[Finding]:
    out: list[Finding] = []
    # Config problems only: a plan-level problem (the facts file's) is not a config error of
    # either side; the commands report it as a setup error (exit code 2) instead.
    base_errors = [p for c in base.configs for p in c.problems if p.severity == "error"]
    unmatched = Counter(_problem_key(p, renames) for p in base_errors)
    for p in (p for c in head.configs for p in c.problems if p.severity == "error"):
        key = _problem_key(p, {})
        status: FindingStatus = "pre-existing" if unmatched[key] > 0 else "new"
        unmatched[key] -= 1
        out.append(Finding(kind=p.finding, message=p.render() + rule_tag(p.rule), file=p.file,
                           line=p.line, status=status))
    for p in base_errors:
        key = _problem_key(p, renames)
        if unmatched[key] > 0:
            unmatched[key] -= 1
            out.append(Finding(kind=p.finding, status="resolved",
                               message=p.render() + rule_tag(p.rule), file=p.file))
    # Export findings in (file, export) order, as one `ExportChange` per export would give.
    by_export = [((c.config_path, c.export_name), found) for c in changes
                 if c.status != "not-planned" and (found := _export_findings(c))]
    for config in head.configs:
        if config.path in unchanged:
            by_export.extend(_unchanged_findings(config))
    by_export.sort(key=lambda item: item[0])
    heavy = _heavy_members(head)
    for _, found in by_export:
        out.extend(_with_group_note(f, heavy) for f in found)
    for w in warnings:
        out.append(Finding(kind="new-warning", status=w.status, message=w.message,
                           file=None if w.scope == REPO_SCOPE else w.scope,
                           source_group=w.group))
    return out


def _heavy_members(plan: Plan) -> dict[str, list[str]]:
    """Per source group, its heavy-cost members at head (every config file)."""
    out: dict[str, list[str]] = {}
    for config in plan.configs:
        for export in config.exports:
            rec = export.recommendation
            if rec.source_group is not None and rec.cost_class in HEAVY_COST:
                out.setdefault(rec.source_group, []).append(rec.export_name)
    return out


def _with_group_note(finding: Finding, heavy: Mapping[str, list[str]]) -> Finding:
    """A new export of unknown cost joining a group with heavy members says so: whether it
    collides with them is exactly what cannot be told."""
    if finding.kind != "unplanned-cost" or finding.status != "new" or not finding.source_group:
        return finding
    others = [m for m in heavy.get(finding.source_group, ()) if m != finding.export_name]
    if not others:
        return finding
    shown = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
    note = (f"; it joins source group '{finding.source_group}', which has "
            f"{len(others)} heavy export{'s' if len(others) != 1 else ''} ({shown}): a "
            f"collision cannot be ruled out")
    return finding.model_copy(update={"message": finding.message + note})


def _unchanged_findings(
    config: ConfigPlan,
) -> list[tuple[tuple[str, str], list[Finding]]]:
    """`_export_findings` of the exports of a file the change cannot affect (base is head)."""
    out = []
    latest = {e.export_name: e for e in config.exports}  # one change per (path, name)
    for name, export in latest.items():
        rec = export.recommendation
        unknown = cost_unknown(export)
        if not (rec.isolate_on_source or rec.low_confidence or unknown):
            continue
        def finding(kind: FindingKind, message: str, rec: ExportRecommendation = rec,
                    line: int | None = export.line, name: str = name) -> Finding:
            # Values of the field types: built as `Finding(...)` would build them (fast_model).
            return construct(Finding, {
                "kind": kind, "status": "pre-existing", "message": message, "file": config.path,
                "line": line, "export_name": name, "source_group": rec.source_group,
                "score": rec.priority_score})

        found = []
        if rec.isolate_on_source:
            found.append(finding("new-isolation",
                                 f"{name}: isolate_on_source on '{rec.source_group}'"))
        if rec.low_confidence:
            found.append(finding("low-confidence", f"{name}: planned on low-confidence metadata"))
        if unknown:
            found.append(finding("unplanned-cost",
                                 f"{name}: cost unknown — {cost_unknown_why(export)}"))
        out.append(((config.path, name), found))
    return out


def _export_findings(change: ExportChange) -> list[Finding]:
    name, base, head = change.export_name, change.base, change.head
    if base is head and head is not None and not (head.isolate_on_source
                                                  or head.low_confidence
                                                  or change.cost_unknown_head):
        return []  # one recommendation on both sides with nothing to report
    out: list[Finding] = []
    latest = head or base
    group = latest.source_group if latest else None
    score = latest.priority_score if latest else None

    def finding(kind: FindingKind, status: FindingStatus, message: str,
                score_delta: int | None = None) -> Finding:
        return construct(Finding, {
            "kind": kind, "status": status, "message": message, "file": change.config_path,
            "line": change.line, "export_name": name, "score_delta": score_delta,
            "source_group": group, "score": score})

    isolation = change.isolation
    if isolation == "resolved" and change.broken_at is not None:
        isolation = None  # unknown while its file is broken: never "resolved"
    if isolation is not None and latest is not None:
        out.append(finding("new-isolation", isolation,
                           f"{name}: isolate_on_source on '{latest.source_group}'"))
    low = change.low_confidence
    if low is not None:
        out.append(finding("low-confidence", low, f"{name}: planned on low-confidence metadata"))
    unplanned = change.unplanned_cost
    if unplanned is not None:
        why = change.cost_unknown_why or "no facts"
        out.append(finding("unplanned-cost", unplanned, f"{name}: cost unknown — {why}"))
    if base is None or head is None:
        return out
    delta = head.priority_score - base.priority_score
    if delta < 0:
        out.append(finding("score-drop", "new", f"{name}: score {base.priority_score} → "
                                                f"{head.priority_score} ({delta})",
                           score_delta=delta))
    if head.recommended_wave > base.recommended_wave:
        out.append(finding("wave-later", "new", f"{name}: wave {base.recommended_wave} → "
                                                f"{head.recommended_wave}"))
    return out
