"""Which pull request a `workflow_run` belongs to (the fork-safe second workflow's question).

A lookup that can only find *this* pull request: the triggering run's payload names its head
repository, branch and commit (GitHub's own account of the run, never an artifact the run
uploaded: a fork controls its artifacts), and a pull request counts only when it is open, on
this repository, and its head is exactly that repository, branch and commit. Nothing is found
by commit alone — a commit can be the head of pull requests from other forks or branches — and
when more than one pull request fits, nothing is posted (`AmbiguousPullError`).
"""

from __future__ import annotations

from rivet_ci.adapters.github.client import GitHubClient, GitHubError
from rivet_ci.adapters.github.models import PullRequest, WorkflowRun


class AmbiguousPullError(ValueError):
    """More than one open pull request has exactly the run's head."""

    def __init__(self, numbers: list[int]) -> None:
        self.numbers = numbers
        listed = ", ".join(f"#{n}" for n in numbers)
        super().__init__(f"{len(numbers)} open pull requests ({listed}) have exactly the "
                         "triggering run's head; refusing to guess which one to comment on")


def _is_head(pull: PullRequest, *, repo: str, head_repo: str, head_branch: str,
             head_sha: str) -> bool:
    return (pull.state == "open" and pull.base_repo.lower() == repo.lower()
            and (pull.head_repo or "").lower() == head_repo.lower()
            and pull.head_ref == head_branch and pull.head_sha.lower() == head_sha.lower())


def find_pull_for_head(
    client: GitHubClient, *, repo: str, head_repo: str, head_branch: str, head_sha: str,
    numbers: tuple[int, ...] = (),
) -> list[PullRequest]:
    """Every open pull request of `repo` whose head is exactly `head_repo`:`head_branch` at
    `head_sha`: searched by `owner:branch` (what finds a fork's pull request) and among
    `numbers` (the payload's own list), never by commit alone."""
    found: dict[int, PullRequest] = {}
    for number in numbers:
        try:
            found[number] = client.get_pull(repo, number)
        except GitHubError as exc:
            if exc.status != 404:
                raise
    owner = head_repo.partition("/")[0]
    for pull in client.pulls_for_head(repo, head_owner=owner, head_branch=head_branch):
        found.setdefault(pull.number, pull)
    return sorted((p for p in found.values() if _is_head(
        p, repo=repo, head_repo=head_repo, head_branch=head_branch, head_sha=head_sha)),
        key=lambda p: p.number)


def find_pull_for_run(client: GitHubClient, *, repo: str, run: WorkflowRun) -> PullRequest | None:
    """The one open pull request whose `pull_request` workflow produced `run`; None when no
    open pull request has exactly its head (closed, merged, or pushed to since);
    `AmbiguousPullError` when several do."""
    if run.head_repo is None or run.head_branch is None:
        return None
    pulls = find_pull_for_head(client, repo=repo, head_repo=run.head_repo,
                               head_branch=run.head_branch, head_sha=run.head_sha,
                               numbers=run.pull_numbers)
    if len(pulls) > 1:
        raise AmbiguousPullError([p.number for p in pulls])
    return pulls[0] if pulls else None
