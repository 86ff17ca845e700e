"""Plan both sides of a pull request from git and compare them.

Both sides are planned in full (every config matching the globs, so the repo-wide source_group
view sees exports in unchanged files too) against ONE facts source, from the merge base of base
and head — the same three-dot comparison as GitHub's "Files changed" tab. A config whose blob is
identical on both sides is parsed once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from rivet_ci.adapters.git import ChangedFile, GitRepo
from rivet_ci.core.config_loader import LoadedConfig, load_config_text
from rivet_ci.core.diff import PlanDiff, diff_plans
from rivet_ci.core.facts import ConfigFacts, ExportFacts, FactsFile
from rivet_ci.core.planner import ConfigPlan, FactsOrigin, Plan, plan_config
from rivet_ci.core.problems import Problem


@dataclass(frozen=True)
class PullRequestPlan:
    base_sha: str
    head_sha: str
    changed: tuple[ChangedFile, ...]
    base: Plan
    head: Plan
    diff: PlanDiff

    @property
    def changed_files_json(self) -> list[dict[str, str | None]]:
        return [{"status": c.status, "path": c.path, "old_path": c.old_path}
                for c in self.changed]


def load_revision(
    repo: GitRepo, rev: str, globs: Sequence[str], environ: Mapping[str, str],
    cache: dict[tuple[str, str], LoadedConfig],
) -> list[LoadedConfig]:
    out = []
    for path, text in repo.read_files(rev, globs):
        if text is None:
            out.append(LoadedConfig(
                path=path, source=None, exports=(), export_lines={},
                problems=(Problem(file=path, message=f"not valid UTF-8 at {rev[:12]}"),)))
            continue
        key = (path, text)
        if key not in cache:  # a config unchanged by the PR is parsed once for both sides
            cache[key] = load_config_text(path, text, environ)
        out.append(cache[key])
    return out


FactsCollector = Callable[[Sequence[LoadedConfig]], FactsFile]
HistoryReader = Callable[[FactsFile | None, Sequence[LoadedConfig]], FactsFile]


def merge_facts(first: FactsFile, second: FactsFile) -> FactsFile:
    """Per-config sections of both; for an export in both, `first` wins."""
    sections = dict(second.configs)
    for path, section in first.configs.items():
        merged = {**(sections[path].exports if path in sections else {}), **section.exports}
        sections[path] = section.model_copy(update={"exports": merged})
    return first.model_copy(update={"configs": sections,
                                    "exports": {**second.exports, **first.exports}})


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
    """Live facts for the head configs, plus the exports only the base still has.

    One facts source for both sides: an export present on both sides is observed once (as the
    head configures it, on the source the base configures), so its plan can only differ by what
    the PR changed in its config. Configs new in the PR get no live facts.
    """
    trusted, new = with_base_sources(head, base)
    facts = collect(trusted)
    if new:
        sections = dict(facts.configs)
        for config in new:
            sections[config.path] = ConfigFacts(exports={
                e.name: ExportFacts(preflight_error=UNTRUSTED_SOURCE) for e in config.exports})
        facts = facts.model_copy(update={"configs": sections})
    in_head = {(c.path, e.name) for c in head for e in c.exports}
    # (base configs are on the base branch: their sources are trusted as they are)
    base_only = [c.model_copy(update={"exports": kept}) for c in base
                 if (kept := tuple(e for e in c.exports if (c.path, e.name) not in in_head))]
    return merge_facts(facts, collect(base_only)) if base_only else facts


def plan_pull_request(
    repo: GitRepo, *, base: str, head: str, globs: Sequence[str], facts: FactsFile | None,
    origin: FactsOrigin, environ: Mapping[str, str], facts_problems: Sequence[Problem] = (),
    collect: FactsCollector | None = None, add_history: HistoryReader | None = None,
) -> PullRequestPlan:
    """Plan base and head against one facts source.

    With `collect`, facts are gathered live for both sides first; with `add_history`, run
    history from rivet's state database is folded into the facts of both sides' exports.
    """
    head_sha = repo.resolve(head)
    fork_point = repo.merge_base(repo.resolve(base), head_sha) or repo.resolve(base)
    changed = tuple(repo.changed_files(fork_point, head_sha, globs))
    cache: dict[tuple[str, str], LoadedConfig] = {}
    base_configs = load_revision(repo, fork_point, globs, environ, cache)
    head_configs = load_revision(repo, head_sha, globs, environ, cache)
    if collect is not None:
        facts = collect_for_both_sides(collect, base_configs, head_configs)
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
    renames = {c.old_path: c.path for c in changed if c.status == "renamed" and c.old_path}
    return PullRequestPlan(
        base_sha=fork_point, head_sha=head_sha, changed=changed, base=base_plan,
        head=head_plan, diff=diff_plans(base_plan, head_plan, renames=renames),
    )
