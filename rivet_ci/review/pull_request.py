"""Plan both sides of a pull request from git and compare them.

Both sides are planned for what the change can affect (core/plan_reuse.review_scope: the files
it touches and every file with an export in a source group they touch, so the repo-wide
source_group view sees those groups' members in unchanged files too) against ONE facts source,
from the merge base of base and head — the same three-dot comparison as GitHub's "Files changed"
tab. Each blob is read once; a config whose blob is identical on both sides is loaded and planned
once, and its plan shared (and, with a plan cache, not even loaded when an earlier run stored it).
Live facts and run history are gathered for the files in that scope only.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import yaml

from rivet_ci.adapters.git import ChangedFile, GitError, GitRepo, decode_text
from rivet_ci.adapters.plan_cache import PlanCache, planning_fingerprint
from rivet_ci.core.common.fast_model import replace
from rivet_ci.core.common.problems import Problem
from rivet_ci.core.config.loader import LoadedConfig, load_config_text, placeholder_names
from rivet_ci.core.facts.loader import is_facts_document
from rivet_ci.core.facts.models import ConfigFacts, ExportFacts, FactsFile
from rivet_ci.core.formats.plan_format import ChangedFileJSON, ReviewJSON
from rivet_ci.core.gate.diff import Finding, PlanDiff, diff_plans
from rivet_ci.core.gate.waivers import (
    DEFAULT_WAIVERS_FILE,
    Waiver,
    file_waivers,
    inline_waivers,
    mark_added_in_pr,
)
from rivet_ci.core.plan.planner import ConfigPlan, FactsOrigin, Plan, plan_config
from rivet_ci.core.plan.reuse import (
    facts_digest,
    may_hold_group,
    plan_key,
    review_counts,
    review_scope,
    summary_plan,
)

# `rivet/**/*.yaml` is the conventional directory, `**/*.rivet.yaml` lets a config live beside
# the service it extracts for. `**/*.yaml` would sweep in every workflow and compose file.
DEFAULT_CONFIG_GLOBS: tuple[str, ...] = ("rivet/**/*.yaml", "**/*.rivet.yaml")


@dataclass(frozen=True)
class PullRequestPlan:
    base_sha: str
    head_sha: str
    changed: tuple[ChangedFile, ...]
    base: Plan
    head: Plan
    diff: PlanDiff
    # Files matching the globs that are facts documents, so not planned (head side).
    skipped_facts: tuple[str, ...] = ()
    # True when the head is the working tree (uncommitted changes), not a commit.
    worktree: bool = False
    # Waivers (core/waivers.py): inline ones of the head (flagged when the PR adds them) and
    # the base branch's waivers file; problems with them are reported in the comment.
    waivers: tuple[Waiver, ...] = ()
    waiver_problems: tuple[Problem, ...] = ()
    # Every `${NAME}` the configs of both sides use (for the unused `--param` warning).
    placeholders: frozenset[str] = frozenset()
    # `base` and `head` are what the review covers (core/plan_reuse.review_scope): the files
    # the change touches and the exports in a source group they touch. `planned_base` and
    # `planned_head` hold the whole plans of the files in the review (what the plan document
    # holds: in full when one is written; None: the same as `base`/`head`).
    planned_base: Plan | None = None
    planned_head: Plan | None = None
    # Config files matching the globs on each side (base, head; facts documents not counted),
    # and whether the review left any of them, or any of their exports, out.
    matched: tuple[int, int] | None = None
    narrowed: bool = False

    @property
    def quiet(self) -> bool:
        """Nothing to review: the PR changes no config file, and every finding is one the base
        already had (`comment-when: changed` creates no comment then)."""
        return not self.changed and self.diff.nothing_new

    def checked(self) -> dict[str, int]:
        """What the verdict is based on: config files and exports the review covers on each
        side; with `narrowed`, also how many config files matched (`base-files`,
        `head-files`)."""
        return review_counts(self.base, self.head, self.matched, self.narrowed)

    def planned_counts(self) -> dict[str, int]:
        """Config files and exports planned on each side: every export of the files in the
        review, as the plan document holds them (the action's outputs `head-configs`, ...)."""
        base, head = self.document_base, self.document_head
        return {"base-configs": len(base.configs),
                "base-exports": sum(len(c.exports) for c in base.configs),
                "head-configs": len(head.configs),
                "head-exports": sum(len(c.exports) for c in head.configs)}

    @property
    def document_base(self) -> Plan:
        return self.base if self.planned_base is None else self.planned_base

    @property
    def document_head(self) -> Plan:
        return self.head if self.planned_head is None else self.planned_head

    @property
    def review_json(self) -> ReviewJSON:
        """What the plan document's plans cover (`pull_request.review`)."""
        base_files, head_files = (self.matched if self.matched is not None else
                                  (len(self.document_base.configs),
                                   len(self.document_head.configs)))
        return {"base_files": base_files, "head_files": head_files, "narrowed": self.narrowed}

    @property
    def changed_files_json(self) -> list[ChangedFileJSON]:
        return [{"status": c.status, "path": shown_path(c.path),
                 "old_path": None if c.old_path is None else shown_path(c.old_path)}
                for c in self.changed]


def shown_path(path: str) -> str:
    """A git path for output: a name that is not UTF-8 (held as surrogate escapes) shows its
    undecodable bytes as `\\xNN`, so it can be written anywhere and still be recognised."""
    try:
        path.encode("utf-8")
        return path
    except UnicodeEncodeError:
        pass
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


@dataclass
class WaiverSink:
    """Inline waivers (`# rivet-ci: allow ...`) found while loading one side's configs."""

    waivers: list[Waiver]
    problems: list[Problem]


def load_texts(
    files: Sequence[tuple[str, str | None]], where: str, environ: Mapping[str, str],
    cache: dict[tuple[str, str], LoadedConfig], skipped: list[str] | None = None, *,
    waivers: WaiverSink | None = None,
) -> list[LoadedConfig]:
    """Load config texts; a facts document (`format: rivet-ci-facts/1`) is never a config."""
    out = []
    for path, text in files:
        shown = shown_path(path)
        if shown != path:  # a file name that is not UTF-8: a finding, never a crash
            out.append(LoadedConfig(
                path=shown, source=None, exports=(), export_lines={},
                problems=(Problem(file=shown, message="the file name is not valid UTF-8; "
                                                      "rename the file"),)))
            continue
        if text is None:
            out.append(LoadedConfig(
                path=path, source=None, exports=(), export_lines={},
                problems=(Problem(file=path, message=f"not valid UTF-8 at {where}"),)))
            continue
        if is_facts_document(text):
            if skipped is not None:
                skipped.append(path)
            continue
        key = (path, text)
        if key not in cache:  # a config unchanged by the PR is parsed once for both sides
            cache[key] = load_config_text(path, text, environ)
        out.append(cache[key])
        if waivers is not None and "rivet-ci:" in text:
            found, problems = inline_waivers(path, text, cache[key].export_lines)
            waivers.waivers += found
            waivers.problems += problems
    return out


def base_waivers_file(repo: GitRepo, base: str, head: str | None, path: str | None,
                      worktree_text: str | None = None) -> tuple[list[Waiver], list[Problem]]:
    """The waivers file as the BASE revision has it; a PR changing it is told it is not used."""
    if not path:
        return [], []
    try:
        text = repo.show(base, path)
        head_text = worktree_text if head is None else repo.show(head, path)
    except GitError as exc:
        return [], [Problem(file=path, message=f"cannot read the waivers file: {exc}")]
    problems: list[Problem] = []
    if head_text != text:
        problems.append(Problem(file=path, severity="warning", message=(
            "this pull request changes the waivers file; the base branch's version is used "
            "(a PR cannot accept its own findings)")))
    if text is None:
        return [], problems
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        return [], [*problems, Problem(file=path, line=mark.line + 1 if mark else None,
                                       message=f"invalid YAML: {exc}")]
    except RecursionError:  # bounded: PyYAML nests by recursion
        return [], [*problems, Problem(file=path, message="invalid YAML: nested too deeply")]
    except ValueError as exc:  # an integer of more than 4,300 digits
        return [], [*problems, Problem(file=path, message=f"invalid YAML: {exc}")]
    found, file_problems = file_waivers(path, data)
    return found, [*problems, *file_problems]


# (configs to observe, the base side's configs: what may run inside a range statement)
FactsCollector = Callable[[Sequence[LoadedConfig], Sequence[LoadedConfig]], FactsFile]
HistoryReader = Callable[[FactsFile | None, Sequence[LoadedConfig]], FactsFile]


UNTRUSTED_SOURCE = ("a config file new in this pull request: live preflight connects only to "
                    "sources already on the base branch; plan it from a facts file")


def with_base_sources(
    head: Sequence[LoadedConfig], base: Sequence[LoadedConfig],
) -> tuple[list[LoadedConfig], list[LoadedConfig]]:
    """Head configs with the `source:` of their base version, and the configs new in the PR.

    A pull request must not choose where CI connects (nor send CI secrets there through
    `${...}` placeholders), so live preflight uses the source the base branch trusts.
    """
    base_by_path = {c.path: c for c in base}
    trusted, new = [], []
    for config in head:
        before = base_by_path.get(config.path)
        if before is None:
            new.append(config)
        else:
            trusted.append(config.model_copy(update={
                "source": before.source,
                "unresolved_source_variables": before.unresolved_source_variables}))
    return trusted, new


def collect_for_both_sides(
    collect: FactsCollector, base: Sequence[LoadedConfig], head: Sequence[LoadedConfig],
) -> FactsFile:
    """Live facts for the head configs, plus the exports only the base still has — in ONE
    collection (one connection per source, each distinct probe once).

    One facts source for both sides: an export present on both sides is observed once (as the
    head configures it, on the source the base configures), so its plan can only differ by what
    the PR changed in its config. Configs new in the PR get no live facts.
    """
    trusted, new = with_base_sources(head, base)
    in_head = {(c.path, e.name) for c in head for e in c.exports}
    # (base configs are on the base branch: their sources are trusted as they are)
    base_only = [c.model_copy(update={"exports": kept}) for c in base
                 if (kept := tuple(e for e in c.exports if (c.path, e.name) not in in_head))]
    # Only the base side's queries may run inside a min/max (docs/security.md); what the PR
    # added or changed is only EXPLAINed.
    facts = collect([*trusted, *base_only], base)
    if new:
        sections = dict(facts.configs)
        for config in new:
            sections[config.path] = ConfigFacts(exports={
                e.name: ExportFacts(preflight_error=UNTRUSTED_SOURCE) for e in config.exports})
        facts = facts.model_copy(update={"configs": sections})
    return facts


# Every facts document names its format (`core.facts_loader.is_facts_document`).
_FACTS_FORMAT = "rivet-ci-facts/"


@dataclass
class _Unit:
    """One (path, blob): loaded and planned once, shared by both sides when both have it."""

    path: str
    oid: str
    text: str
    loaded: LoadedConfig | None = None
    plan: ConfigPlan | None = None
    export_lines: Mapping[str, int] | None = None
    key: str | None = None  # its plan-cache key, when a cache is used


@dataclass
class _Side:
    """One revision's configs in path order: a unit, or a config that could not be read."""

    entries: list[_Unit | LoadedConfig]
    waivers: WaiverSink


def _side(files: Sequence[tuple[str, str]], texts: Mapping[str, str | None], where: str,
          units: dict[tuple[str, str], _Unit], skipped: list[str] | None) -> _Side:
    entries: list[_Unit | LoadedConfig] = []
    for path, oid in files:
        shown = shown_path(path)
        text = texts[oid]
        if shown != path:  # a file name that is not UTF-8: a finding, never a crash
            entries.append(LoadedConfig(
                path=shown, source=None, exports=(), export_lines={},
                problems=(Problem(file=shown, message="the file name is not valid UTF-8; "
                                                      "rename the file"),)))
        elif text is None:
            entries.append(LoadedConfig(
                path=path, source=None, exports=(), export_lines={},
                problems=(Problem(file=path, message=f"not valid UTF-8 at {where}"),)))
        elif _FACTS_FORMAT in text and is_facts_document(text):  # (a cheap test first)
            if skipped is not None:
                skipped.append(path)
        else:
            entries.append(units.setdefault((path, oid), _Unit(path=path, oid=oid, text=text)))
    return _Side(entries=entries, waivers=WaiverSink([], []))


def withheld_problems(path: str, text: str, names: frozenset[str]) -> list[Problem]:
    """An error for each withheld `${NAME}` a config the pull request changes uses, at its
    first line: the value is the workflow's, never substituted into pull-request text."""
    problems = []
    for name in sorted(names):
        at = text.find("${" + name)
        line = text.count("\n", 0, at) + 1 if at >= 0 else None
        problems.append(Problem(file=path, line=line, message=(
            f"${{{name}}} is a value of the workflow's `params` input; a config this pull "
            f"request changes is never filled from it unless `env-allow` lists {name} "
            "(docs/security.md)")))
    return problems


def plan_pull_request(
    repo: GitRepo, *, base: str, head: str, globs: Sequence[str], facts: FactsFile | None,
    origin: FactsOrigin, environ: Mapping[str, str], facts_problems: Sequence[Problem] = (),
    collect: FactsCollector | None = None, add_history: HistoryReader | None = None,
    worktree: bool = False,
    source_environ: Mapping[str, str] | None = None,
    waivers_file: str | None = DEFAULT_WAIVERS_FILE,
    cache: PlanCache | None = None,
    full_plans: bool = True,
    withheld: frozenset[str] = frozenset(),
) -> PullRequestPlan:
    """Plan base and head against one facts source.

    With `collect`, facts are gathered live for both sides first; with `add_history`, run
    history from rivet's state database is folded into the facts of both sides' exports.
    With `worktree`, the head side is the working tree (files on disk) on top of `head`.
    `environ` fills `${...}` in the configs of both sides; `source_environ` (default: the same)
    fills the base revision's `source:` sections live preflight connects to — a pull-request
    run passes the full environment there and only the `env-allow` names as `environ`.

    Each blob is read once (one `cat-file` for both sides) and each (path, blob) loaded and
    planned once: a file the PR leaves alone has one plan, shared by both sides, which the diff
    does not look inside (core/plan_reuse.py). Only the files in the review are planned (and,
    with `collect` / `add_history`, given to them: the scope comes from the configs' source
    groups, known before any fact). With `cache` (facts from a file or none; not with live
    facts or run history), a plan stored under the same key is reused and not loaded at all;
    new plans are stored. Without `full_plans` (no plan document will be written), the plans of
    files the change cannot affect are kept as summaries (`summary_plan`: what the diff and the
    comment read), which is what keeps a large repository's memory small. `withheld`: names
    of `environ` that fill only the configs the base has unchanged; in a config the pull
    request changes they stay unfilled and their `${NAME}` is an error (`withheld_problems`).
    """
    sides = _read_revisions(repo, base, head, globs, worktree=worktree)
    gathers = collect is not None or add_history is not None
    planning = _Planning(sides, facts, environ=environ, withheld=withheld, full_plans=full_plans,
                         cache=_usable_cache(cache, gathers), plan_at_once=not gathers)
    planning.load_review_scope()
    if gathers:
        facts, origin = _gather_facts(planning, facts, origin, collect=collect,
                                      add_history=add_history, source_environ=source_environ)
    planning.plan_the_rest(facts)
    base_plan = _side_plan(sides.base, facts, origin, facts_problems)
    head_plan = _side_plan(sides.head, facts, origin, facts_problems)
    scope = review_scope(base_plan, head_plan, sides.renames)
    diff = diff_plans(scope.base, scope.head, renames=sides.renames)
    if not sides.head.entries:
        diff = diff.model_copy(update={"findings": (
            no_configs_finding(repo, sides.head_commit, globs), *diff.findings)})
    file_list, file_problems = base_waivers_file(
        repo, sides.fork_point, sides.head_commit, waivers_file,
        worktree_text=_read_worktree(repo, waivers_file) if worktree else None)
    _collect_inline_waivers(sides, scope.base, scope.head)
    return PullRequestPlan(
        base_sha=sides.fork_point, head_sha=sides.head_sha, changed=sides.changed,
        base=scope.base, head=scope.head, diff=diff, skipped_facts=tuple(sides.skipped),
        worktree=worktree,
        waivers=(*mark_added_in_pr(sides.head.waivers.waivers, sides.base.waivers.waivers),
                 *file_list),
        waiver_problems=(*sides.head.waivers.problems, *file_problems),
        placeholders=frozenset().union(*(
            placeholder_names(u.text) for u in sides.units.values() if "${" in u.text)),
        planned_base=_in_review(base_plan, scope.base),
        planned_head=_in_review(head_plan, scope.head),
        matched=(len(sides.base.entries), len(sides.head.entries)),
        # (a file not planned is outside the review: counted by `matched`, not by the scope)
        narrowed=scope.narrowed or (len(scope.base.configs), len(scope.head.configs)) != (
            len(sides.base.entries), len(sides.head.entries)),
    )


@dataclass
class _Revisions:
    """Both sides of the pull request as read from git: each (path, blob) one `_Unit`, shared
    by both sides when both have it."""

    head_sha: str
    fork_point: str
    worktree: bool
    changed: tuple[ChangedFile, ...]
    base: _Side
    head: _Side
    units: dict[tuple[str, str], _Unit]
    skipped: list[str]  # facts documents matching the globs (head side)
    renames: dict[str, str]  # old path -> new path

    @property
    def head_commit(self) -> str | None:
        """The head commit, or None when the head is the working tree."""
        return None if self.worktree else self.head_sha

    def unaffected(self) -> set[int]:
        """Units both sides have unchanged (same path, same blob, not renamed): the change
        cannot affect them."""
        renamed = set(self.renames) | set(self.renames.values())
        in_base = {id(e) for e in self.base.entries}
        return {id(e) for e in self.head.entries
                if isinstance(e, _Unit) and id(e) in in_base and e.path not in renamed}


def _read_revisions(repo: GitRepo, base: str, head: str, globs: Sequence[str], *,
                    worktree: bool) -> _Revisions:
    """The merge base's and the head's (or the working tree's) config files, each blob read
    once, and the files the pull request changes."""
    head_sha = repo.resolve(head)
    fork_point = repo.merge_base(repo.resolve(base), head_sha) or repo.resolve(base)
    base_files = repo.tree_blobs(fork_point, globs)
    if worktree:
        on_disk = repo.worktree_blobs(globs)
        head_files = [(path, oid) for path, oid, _ in on_disk]
        contents = repo.read_blobs(oid for _, oid in base_files)
        contents.update((oid, data) for _, oid, data in on_disk)
        changed = tuple(repo.changed_files_worktree(fork_point, globs))
    else:
        head_files = repo.tree_blobs(head_sha, globs)
        contents = repo.read_blobs(oid for _, oid in (*base_files, *head_files))
        changed = tuple(repo.changed_files(fork_point, head_sha, globs))
    texts = {oid: decode_text(data) for oid, data in contents.items()}
    del contents
    units: dict[tuple[str, str], _Unit] = {}
    skipped: list[str] = []
    base_side = _side(base_files, texts, fork_point[:12], units, None)
    head_side = _side(head_files, texts, "the working tree" if worktree else head_sha[:12],
                      units, skipped)
    renames = {shown_path(c.old_path): shown_path(c.path) for c in changed
               if c.status == "renamed" and c.old_path}
    return _Revisions(head_sha=head_sha, fork_point=fork_point, worktree=worktree,
                      changed=changed, base=base_side, head=head_side, units=units,
                      skipped=skipped, renames=renames)


def _usable_cache(cache: PlanCache | None, gathers: bool) -> PlanCache | None:
    """The plan cache, unless the facts are made for this run (live, or with run history):
    then nothing stored can be reused."""
    if cache is not None and gathers:
        cache.stats.unused = "the facts are collected for this run"
        return None
    return cache


class _Planning:
    """Loads and plans the units of the review, each once.

    With the facts known up front (`plan_at_once`), each file is loaded and planned in one go
    (only one file's loaded config is alive at a time); live facts and run history need every
    config in the review loaded first (`plan_the_rest` plans them once the facts are in).
    """

    def __init__(self, sides: _Revisions, facts: FactsFile | None, *,
                 environ: Mapping[str, str], withheld: frozenset[str], full_plans: bool,
                 cache: PlanCache | None, plan_at_once: bool) -> None:
        self.sides, self.facts, self.cache = sides, facts, cache
        self.environ, self.withheld = environ, withheld
        self.pr_environ = ({k: v for k, v in environ.items() if k not in withheld}
                           if withheld else environ)
        self.in_base = {id(e) for e in sides.base.entries}
        # Without full plans, files the change cannot affect are kept as summaries, and those
        # with no export in a source group the change touches are not planned at all
        # (core/plan_reuse.review_scope).
        self.unaffected = sides.unaffected()
        self.summarized = set() if full_plans else self.unaffected
        self.plan_at_once = plan_at_once
        self.fingerprint, self.digest = ((planning_fingerprint(), facts_digest(facts))
                                         if cache is not None else ("", ""))

    def load_review_scope(self) -> None:
        """The files the change touches first; then, of the others, only those whose text may
        hold a source group one of those files' exports is in (`may_hold_group`: a file it
        rules out has no export in the review), and of those only the ones that do hold such
        an export. Source groups are config values, so with live facts or run history the
        scope is known from the loaded configs before any fact is collected: only the files
        in it are probed."""
        units = self.sides.units.values()
        touched = [u for u in units if id(u) not in self.unaffected]
        self._load(touched)
        groups = frozenset(group for u in touched for group in _groups(u) if group is not None)
        rest = [u for u in units if id(u) in self.unaffected and may_hold_group(u.text, groups)]
        self._load(rest)
        for unit in rest:  # (a superset of the review's groups: `review_scope` cuts it exactly)
            if not any(group in groups for group in _groups(unit)):
                unit.plan = unit.loaded = None

    def loaded(self, side: _Side) -> list[LoadedConfig]:
        """The loaded configs of one side's units in the review (not planned yet)."""
        return [e.loaded for e in side.entries if isinstance(e, _Unit) and e.loaded is not None]

    def plan_the_rest(self, facts: FactsFile | None) -> None:
        for unit in self.sides.units.values():
            if unit.plan is None and unit.loaded is not None:
                self._plan(unit, facts)

    def _load(self, chosen: Sequence[_Unit]) -> None:
        """From the cache, or loaded (and, with the facts known, planned)."""
        cache, withheld = self.cache, self.withheld
        for unit in chosen:
            # A config the pull request changed (no base version of this path and blob) is
            # filled without the withheld names (docs/security.md).
            changed_by_pr = bool(withheld) and id(unit) not in self.in_base
            unit_environ = self.pr_environ if changed_by_pr else self.environ
            if cache is not None:
                unit.key = plan_key(fingerprint=self.fingerprint, path=unit.path,
                                    blob=unit.oid, text=unit.text, environ=unit_environ,
                                    facts_digest=self.digest)
                hit = cache.get(unit.key, summary=id(unit) in self.summarized)
                if hit is not None:
                    unit.plan, unit.export_lines = hit.plan, hit.export_lines
                    continue
            unit.loaded = load_config_text(unit.path, unit.text, unit_environ)
            if changed_by_pr and unit.loaded.placeholders & withheld:
                unit.loaded = unit.loaded.model_copy(update={"problems": (
                    *unit.loaded.problems,
                    *withheld_problems(unit.path, unit.text, unit.loaded.placeholders & withheld))})
            unit.export_lines = unit.loaded.export_lines
            if self.plan_at_once:
                self._plan(unit, self.facts)

    def _plan(self, unit: _Unit, facts: FactsFile | None) -> None:
        assert unit.loaded is not None
        unit.plan = plan_config(unit.loaded, facts)
        if self.cache is not None and unit.key is not None:
            self.cache.put(unit.key, unit.plan, dict(unit.export_lines or {}))
        if id(unit) in self.summarized:
            unit.plan = summary_plan(unit.plan)
        unit.loaded = None  # planned: the loaded config is not needed any more


def _groups(unit: _Unit) -> Iterator[str | None]:
    """The source groups of a unit's exports, from its plan or its loaded config."""
    if unit.plan is not None:
        return (e.recommendation.source_group for e in unit.plan.exports)
    if unit.loaded is not None:
        return (e.source_group for e in unit.loaded.exports)
    return iter(())


def _gather_facts(
    planning: _Planning, facts: FactsFile | None, origin: FactsOrigin, *,
    collect: FactsCollector | None, add_history: HistoryReader | None,
    source_environ: Mapping[str, str] | None,
) -> tuple[FactsFile, FactsOrigin]:
    """Live facts (`collect`) or run history (`add_history`) for the configs in the review."""
    sides = planning.sides
    base_loaded, head_loaded = planning.loaded(sides.base), planning.loaded(sides.head)
    if collect is None:
        assert add_history is not None
        return add_history(facts, [*head_loaded, *base_loaded]), origin
    # The base's `source:` sections filled from `source_environ` (the files in the scope
    # only: a file outside it is never probed).
    trusted_base = (base_loaded if source_environ is None else load_texts(
        [(e.path, e.text) for e in sides.base.entries
         if isinstance(e, _Unit) and e.loaded is not None],
        sides.fork_point[:12], source_environ, {}))
    live = collect_for_both_sides(collect, trusted_base, head_loaded)
    return live, FactsOrigin(kind="live", captured_at=live.captured_at)


def _side_plan(side: _Side, facts: FactsFile | None, origin: FactsOrigin,
               facts_problems: Sequence[Problem]) -> Plan:
    """One side's plan: its units' plans in path order (a unit outside the review is left
    out); a config that could not be read is planned here (the message names the side)."""
    plans = []
    for entry in side.entries:
        if isinstance(entry, _Unit):
            if entry.plan is not None:  # (None: not planned, outside the review)
                plans.append(entry.plan)
        else:
            plans.append(plan_config(entry, facts))
    return Plan(configs=tuple(plans), facts=origin, problems=tuple(facts_problems))


def _collect_inline_waivers(sides: _Revisions, base: Plan, head: Plan) -> None:
    """Inline waivers of the files in the review, and of their exports in it (one elsewhere
    can only be unused: a finding outside the review is never new), into each side's sink."""
    reviewed = {(c.path, e.export_name) for plan in (base, head)
                for c in plan.configs for e in c.exports}
    for side, plan in ((sides.base, base), (sides.head, head)):
        in_review = {c.path for c in plan.configs}
        for entry in side.entries:
            if isinstance(entry, _Unit) and entry.path in in_review and "rivet-ci:" in entry.text:
                assert entry.export_lines is not None
                found, problems = inline_waivers(entry.path, entry.text, entry.export_lines)
                side.waivers.waivers += [w for w in found
                                         if (entry.path, w.export_name) in reviewed]
                side.waivers.problems += problems


def _in_review(planned: Plan, reviewed: Plan) -> Plan:
    """The whole plans of the config files in the review (`reviewed` may hold only some of a
    file's exports: those in a source group the change affects)."""
    paths = {c.path for c in reviewed.configs}
    if len(paths) == len(planned.configs):
        return planned
    return replace(planned, {"configs": tuple(c for c in planned.configs if c.path in paths)})


def _read_worktree(repo: GitRepo, path: str | None) -> str | None:
    if not path:
        return None
    try:
        return (repo.root / path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


_LOOKS_LIKE_CONFIG = (re.compile(r"^source[ \t]*:", re.MULTILINE),
                      re.compile(r"^exports[ \t]*:", re.MULTILINE))
YAML_GLOBS = ("**/*.yaml", "**/*.yml")
MAX_SUGGESTIONS = 5


def config_lookalikes(files: Sequence[tuple[str, str | None]]) -> list[str]:
    """YAML files with top-level `source:` and `exports:` keys, shallowest paths first."""
    found = [path for path, text in files
             if text is not None and not is_facts_document(text)
             and all(p.search(text) for p in _LOOKS_LIKE_CONFIG)]
    return sorted(found, key=lambda path: (path.count("/"), path))


def no_configs_finding(repo: GitRepo, head_sha: str | None, globs: Sequence[str]) -> Finding:
    """Zero matched files is a finding: a gate that checked nothing must not pass silently.

    `head_sha` None: the working tree. The message names the globs and the YAML files nearest
    to the repository root that look like rivet configs, so the fix is one edit away.
    """
    files = (repo.read_worktree_files(YAML_GLOBS) if head_sha is None
             else repo.read_files(head_sha, YAML_GLOBS))
    candidates = config_lookalikes(files)
    shown = ", ".join(f"`{g}`" for g in globs)
    if candidates:
        listed = ", ".join(candidates[:MAX_SUGGESTIONS])
        more = (f" (and {len(candidates) - MAX_SUGGESTIONS} more)"
                if len(candidates) > MAX_SUGGESTIONS else "")
        hint = (f"files that look like rivet configs: {listed}{more}; "
                "set `configs` to globs that match them")
    else:
        hint = ("no YAML file in the repository looks like a rivet config (top-level `source:` "
                "and `exports:`)")
    return Finding(kind="no-configs", status="new",
                   message=f"no config file matches {shown}: nothing was checked; {hint}")
