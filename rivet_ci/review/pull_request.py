"""Plan both sides of a pull request from git and compare them.

Both sides are planned in full (every config matching the globs, so the repo-wide source_group
view sees exports in unchanged files too) against ONE facts source, from the merge base of base
and head — the same three-dot comparison as GitHub's "Files changed" tab. A config whose blob is
identical on both sides is parsed once.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import yaml

from rivet_ci.adapters.git import ChangedFile, GitError, GitRepo
from rivet_ci.core.config_loader import LoadedConfig, load_config_text
from rivet_ci.core.diff import Finding, PlanDiff, diff_plans
from rivet_ci.core.facts import ConfigFacts, ExportFacts, FactsFile
from rivet_ci.core.facts_loader import is_facts_document
from rivet_ci.core.plan_format import ChangedFileJSON
from rivet_ci.core.planner import ConfigPlan, FactsOrigin, Plan, plan_config
from rivet_ci.core.problems import Problem
from rivet_ci.core.waivers import (
    DEFAULT_WAIVERS_FILE,
    Waiver,
    file_waivers,
    inline_waivers,
    mark_added_in_pr,
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
    # The configs of both sides, as loaded (for the unused `--param` warning).
    loaded: tuple[LoadedConfig, ...] = ()

    def checked(self) -> dict[str, int]:
        """What the verdict is based on: config files and exports considered on each side."""
        return {"base-configs": len(self.base.configs), "base-exports": len(self.base.exports),
                "head-configs": len(self.head.configs), "head-exports": len(self.head.exports)}

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


def load_revision(
    repo: GitRepo, rev: str, globs: Sequence[str], environ: Mapping[str, str],
    cache: dict[tuple[str, str], LoadedConfig], *, skipped: list[str] | None = None,
    waivers: WaiverSink | None = None,
) -> list[LoadedConfig]:
    return load_texts(repo.read_files(rev, globs), rev[:12], environ, cache, skipped,
                      waivers=waivers)


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
    found, file_problems = file_waivers(path, data)
    return found, [*problems, *file_problems]


FactsCollector = Callable[[Sequence[LoadedConfig]], FactsFile]
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
    facts = collect([*trusted, *base_only])
    if new:
        sections = dict(facts.configs)
        for config in new:
            sections[config.path] = ConfigFacts(exports={
                e.name: ExportFacts(preflight_error=UNTRUSTED_SOURCE) for e in config.exports})
        facts = facts.model_copy(update={"configs": sections})
    return facts


def plan_pull_request(
    repo: GitRepo, *, base: str, head: str, globs: Sequence[str], facts: FactsFile | None,
    origin: FactsOrigin, environ: Mapping[str, str], facts_problems: Sequence[Problem] = (),
    collect: FactsCollector | None = None, add_history: HistoryReader | None = None,
    worktree: bool = False,
    source_environ: Mapping[str, str] | None = None,
    waivers_file: str | None = DEFAULT_WAIVERS_FILE,
) -> PullRequestPlan:
    """Plan base and head against one facts source.

    With `collect`, facts are gathered live for both sides first; with `add_history`, run
    history from rivet's state database is folded into the facts of both sides' exports.
    With `worktree`, the head side is the working tree (files on disk) on top of `head`.
    `environ` fills `${...}` in the configs of both sides; `source_environ` (default: the same)
    fills the base revision's `source:` sections live preflight connects to — a pull-request
    run passes the full environment there and only the `env-allow` names as `environ`.
    """
    head_sha = repo.resolve(head)
    fork_point = repo.merge_base(repo.resolve(base), head_sha) or repo.resolve(base)
    cache: dict[tuple[str, str], LoadedConfig] = {}
    skipped: list[str] = []
    base_inline, head_inline = WaiverSink([], []), WaiverSink([], [])
    base_configs = load_revision(repo, fork_point, globs, environ, cache, waivers=base_inline)
    if worktree:
        changed = tuple(repo.changed_files_worktree(fork_point, globs))
        head_configs = load_texts(repo.read_worktree_files(globs), "the working tree", environ,
                                  cache, skipped, waivers=head_inline)
    else:
        changed = tuple(repo.changed_files(fork_point, head_sha, globs))
        head_configs = load_revision(repo, head_sha, globs, environ, cache, skipped=skipped,
                                     waivers=head_inline)
    file_list, file_problems = base_waivers_file(
        repo, fork_point, None if worktree else head_sha, waivers_file,
        worktree_text=_read_worktree(repo, waivers_file) if worktree else None)
    if collect is not None:
        trusted_base = (base_configs if source_environ is None else
                        load_revision(repo, fork_point, globs, source_environ, {}))
        facts = collect_for_both_sides(collect, trusted_base, head_configs)
        origin = FactsOrigin(kind="live", captured_at=facts.captured_at)
    elif add_history is not None:
        facts = add_history(facts, [*head_configs, *base_configs])
    # A config identical on both sides is the same LoadedConfig object (see load_revision) and,
    # against the same facts, has the same plan: plan it once.
    planned: dict[int, ConfigPlan] = {}

    def plan_side(configs: list[LoadedConfig]) -> Plan:
        for loaded in configs:
            if id(loaded) not in planned:
                planned[id(loaded)] = plan_config(loaded, facts)
        return Plan(configs=tuple(planned[id(c)] for c in configs), facts=origin,
                    problems=tuple(facts_problems))

    base_plan = plan_side(base_configs)
    head_plan = plan_side(head_configs)
    renames = {shown_path(c.old_path): shown_path(c.path) for c in changed
               if c.status == "renamed" and c.old_path}
    diff = diff_plans(base_plan, head_plan, renames=renames)
    if not head_configs:
        diff = diff.model_copy(update={"findings": (
            no_configs_finding(repo, None if worktree else head_sha, globs), *diff.findings)})
    return PullRequestPlan(
        base_sha=fork_point, head_sha=head_sha, changed=changed, base=base_plan,
        head=head_plan, diff=diff, skipped_facts=tuple(skipped), worktree=worktree,
        waivers=(*mark_added_in_pr(head_inline.waivers, base_inline.waivers), *file_list),
        waiver_problems=(*head_inline.problems, *file_problems),
        loaded=(*base_configs, *head_configs),
    )


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
