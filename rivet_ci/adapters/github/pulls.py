"""Which pull request a `workflow_run` belongs to (the fork-safe second workflow's question)."""

from __future__ import annotations

from rivet_ci.adapters.github.models import PullRequest, WorkflowRun
from rivet_ci.adapters.github.transport import GitHubClient


def find_pull_for_head(
    client: GitHubClient, *, repo: str, head_owner: str, head_branch: str, head_sha: str
) -> PullRequest | None:
    """The open pull request a ``workflow_run`` belongs to, when its payload does not say.

    ``workflow_run.pull_requests`` is empty for pull requests from forks, so search by
    ``head_repository.owner.login`` and ``head_branch``; the commit lookup catches
    same-repository branches. A PR whose head is exactly ``head_sha`` wins.
    """
    candidates = client.pulls_for_head(repo, head_owner=head_owner, head_branch=head_branch)
    if not candidates:
        candidates = [p for p in client.pulls_for_commit(repo, head_sha) if p.state == "open"]
    exact = [p for p in candidates if p.head_sha == head_sha.lower()]
    best = exact or candidates
    return best[0] if best else None


def find_pull_for_run(client: GitHubClient, *, repo: str, run: WorkflowRun) -> PullRequest | None:
    """The open pull request whose ``pull_request`` workflow produced ``run``.

    Uses only what GitHub reports about the run, never an artifact the run uploaded: a fork
    controls its artifacts. Same-repository runs list their pull requests; fork runs do not,
    so those are searched by the head repository's owner and branch.
    """
    for number in run.pull_numbers:
        pull = client.get_pull(repo, number)
        if pull.state == "open":
            return pull
    if run.head_repo is None or run.head_branch is None:
        return None
    head_owner = run.head_repo.partition("/")[0]
    return find_pull_for_head(
        client, repo=repo, head_owner=head_owner, head_branch=run.head_branch, head_sha=run.head_sha
    )
