"""Plan both sides of a pull request from git and compare them.

Both sides are planned in full (every config matching the globs, so the repo-wide source_group
view sees exports in unchanged files too) against ONE facts source, from the merge base of base
and head — the same three-dot comparison as GitHub's "Files changed" tab. A config whose blob is
identical on both sides is parsed once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rivet_ci.adapters.git import ChangedFile, GitRepo
from rivet_ci.core.config_loader import LoadedConfig, load_config_text
from rivet_ci.core.diff import PlanDiff, diff_plans
from rivet_ci.core.facts import FactsFile
from rivet_ci.core.planner import FactsOrigin, Plan, plan_configs
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
    for path in repo.list_files(rev, globs):
        text = repo.show(rev, path)
        if text is None:  # pragma: no cover - listed files exist
            continue
        key = (path, text)
        if key not in cache:
            cache[key] = load_config_text(path, text, environ)
        out.append(cache[key])
    return out


def plan_pull_request(
    repo: GitRepo, *, base: str, head: str, globs: Sequence[str], facts: FactsFile | None,
    origin: FactsOrigin, environ: Mapping[str, str], facts_problems: Sequence[Problem] = (),
) -> PullRequestPlan:
    head_sha = repo.resolve(head)
    fork_point = repo.merge_base(repo.resolve(base), head_sha) or repo.resolve(base)
    changed = tuple(repo.changed_files(fork_point, head_sha, globs))
    cache: dict[tuple[str, str], LoadedConfig] = {}
    base_configs = load_revision(repo, fork_point, globs, environ, cache)
    head_configs = load_revision(repo, head_sha, globs, environ, cache)
    base_plan = plan_configs(base_configs, facts, origin, facts_problems)
    head_plan = plan_configs(head_configs, facts, origin, facts_problems)
    renames = {c.old_path: c.path for c in changed if c.status == "renamed" and c.old_path}
    return PullRequestPlan(
        base_sha=fork_point, head_sha=head_sha, changed=changed, base=base_plan,
        head=head_plan, diff=diff_plans(base_plan, head_plan, renames=renames),
    )
