"""The trusted facts of a repository: the newest facts artifact its default branch published.

The trusted facts job (`.github/workflows/example-facts-capture.yml`) runs on the default
branch, on a schedule or by hand, with the replicas' secrets, and uploads the facts file as a
workflow artifact. A pull-request job fetches it through the REST API with `actions: read` and
`contents: read`, and no database secret. A pull request can upload artifacts too (its own
workflow runs can), so an artifact is used only when GitHub says the run that made it

* ran on the repository's **default branch**, from the repository itself (not a fork — a fork's
  run may well have a branch called `main`),
* was started by `schedule`, `workflow_dispatch` or `push` (never `pull_request*`,
  `workflow_run` or anything a pull request triggers),
* finished with `conclusion: success`,
* (when `workflow` is given) is that workflow file, and
* ran a **commit on the default branch**: the run's `head_branch` is only a name, and GitHub
  gives the run of a pushed tag, or of a manual run dispatched on a tag, the tag's name there —
  git allows a tag named like the default branch, whose run executes the tag's own copy of the
  workflow. So the run's `head_sha` is compared with the branch's head (the branch read as a
  branch, never a name a tag could answer to): GitHub must answer `identical` or `ahead` (the
  branch has the commit); `behind` or `diverged` refuses the run, and says so as a warning.

and the artifact has not expired. The newest such artifact wins; every other one is skipped
and the reason is kept for the log. The archive is downloaded from the URL GitHub redirects to
(without the token: it is another host; within the run's deadline), bounded in size, and must
hold exactly one facts document (`format: rivet-ci-facts/...`), read within the bounds on a
facts archive (its members and the bytes they inflate to: `rivet_ci.adapters.facts_archive`).

Endpoints (GitHub REST, API version 2022-11-28): `GET /repos/{repo}/actions/artifacts?name=`,
`GET /repos/{repo}/actions/runs/{run_id}`, `GET /repos/{repo}/branches/{default_branch}`,
`GET /repos/{repo}/compare/{head_sha}...{branch_sha}`,
`GET /repos/{repo}/actions/artifacts/{id}/zip` (302 to the archive).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from rivet_ci.adapters.facts_archive import FactsArchiveError, facts_member
from rivet_ci.adapters.github.client import GitHubClient, GitHubError
from rivet_ci.core.common.limits import MAX_FACTS_ARCHIVE_BYTES
from rivet_ci.core.common.patterns import COMMIT_SHA

TRUSTED_EVENTS = frozenset({"schedule", "workflow_dispatch", "push"})
# The comparison of a run's commit with the default branch's head that puts it on the branch.
ON_BRANCH = frozenset({"identical", "ahead"})
MAX_CANDIDATES = 20  # artifacts looked at, newest first


class FactsArtifactError(Exception):
    """No usable facts artifact; the message says why (safe to print)."""


@dataclass(frozen=True)
class FactsArtifact:
    """The facts file of a trusted artifact, and where it came from."""

    name: str
    artifact_id: int
    run_id: int
    run_event: str
    head_sha: str
    created_at: datetime | None
    member: str  # the file inside the archive
    text: str
    skipped: tuple[str, ...] = field(default_factory=tuple)  # why newer artifacts were not used
    # Newer artifacts refused because their run's commit is not on the default branch (a run
    # of a tag named like it?): worth a warning, not a notice.
    refused: tuple[str, ...] = field(default_factory=tuple)

    @property
    def shown(self) -> str:
        return f"artifact {self.name} (run {self.run_id}, {self.member})"


def _when(value: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")) if value else None
    except ValueError:
        return None


def fetch_trusted_facts(client: GitHubClient, *, repo: str, name: str, default_branch: str,
                        workflow: str | None = None) -> FactsArtifact:
    """The newest trusted facts artifact called `name` (see the module); raises
    `FactsArtifactError` when there is none."""
    artifacts = client.list_artifacts(repo, name=name)
    # Newest first, by creation time then id (GitHub lists newest first; not relied on).
    artifacts.sort(key=lambda a: (str(a.get("created_at") or ""), int(a.get("id") or 0)),
                   reverse=True)
    branch = _Branch(client, repo, default_branch)
    skipped: list[str] = []
    refused: list[str] = []
    for artifact in artifacts[:MAX_CANDIDATES]:
        artifact_id = int(artifact.get("id") or 0)
        label = f"artifact {artifact_id}"
        if artifact.get("name") != name:
            continue
        if artifact.get("expired"):
            skipped.append(f"{label}: expired")
            continue
        run_ref = artifact.get("workflow_run") or {}
        run_id = run_ref.get("id")
        if not isinstance(run_id, int):
            skipped.append(f"{label}: no workflow run")
            continue
        try:
            run = client.get_workflow_run_json(repo, run_id)
        except GitHubError as exc:
            skipped.append(f"{label}: its run {run_id} cannot be read ({exc})")
            continue
        why = _untrusted(run, repo=repo, default_branch=default_branch, workflow=workflow)
        if why is not None:
            skipped.append(f"{label} of run {run_id}: {why}")
            continue
        why = branch.off_branch(run.get("head_sha"))
        if why is not None:
            refused.append(f"{label} of run {run_id}: {why}")
            skipped.append(refused[-1])
            continue
        archive = client.download_artifact(repo, artifact_id,
                                           max_bytes=MAX_FACTS_ARCHIVE_BYTES)
        member, text = _facts_member(archive, label)
        return FactsArtifact(name=name, artifact_id=artifact_id, run_id=run_id,
                             run_event=str(run.get("event")), head_sha=str(run.get("head_sha")),
                             created_at=_when(artifact.get("created_at")), member=member,
                             text=text, skipped=tuple(s for s in skipped if s not in refused),
                             refused=tuple(refused))
    detail = f" ({'; '.join(skipped[:5])})" if skipped else ""
    raise FactsArtifactError(f"no trusted facts artifact named {name!r} on {default_branch}"
                             f"{detail}")


class _Branch:
    """The default branch's head, read once (as a branch: a tag of the same name is not
    asked), and whether a run's commit is on it."""

    def __init__(self, client: GitHubClient, repo: str, name: str) -> None:
        self.client, self.repo, self.name = client, repo, name
        self._head: str | GitHubError | None = None

    def head(self) -> str:
        if self._head is None:
            try:
                self._head = self.client.branch_head(self.repo, self.name)
            except GitHubError as exc:
                self._head = exc
        if isinstance(self._head, GitHubError):
            raise self._head
        return self._head

    def off_branch(self, sha: object) -> str | None:
        """Why commit `sha` is not shown to be on the branch (None: it is)."""
        if not isinstance(sha, str) or not COMMIT_SHA.fullmatch(sha):
            return f"names no commit ({sha!r:.60})"
        try:
            head = self.head()
            status = self.client.compare_status(self.repo, sha, head)
        except GitHubError as exc:
            return f"cannot tell whether its commit {sha[:12]} is on {self.name} ({exc})"
        if status in ON_BRANCH:
            return None
        return (f"its commit {sha[:12]} is not on the default branch {self.name} (compared "
                f"with {self.name} at {head[:12]}: {status})")


def _untrusted(run: dict[str, Any], *, repo: str, default_branch: str,
               workflow: str | None) -> str | None:
    """Why the run that made an artifact cannot vouch for facts (None: it can)."""
    head_repo = (run.get("head_repository") or {}).get("full_name")
    if str(head_repo or "").lower() != repo.lower():
        return f"made from {head_repo or 'an unknown repository'}, not {repo}"
    if run.get("event") not in TRUSTED_EVENTS:
        return f"started by {run.get('event')!r}, not by a schedule, a manual run or a push"
    if run.get("head_branch") != default_branch:
        return f"ran on {run.get('head_branch')!r}, not on the default branch {default_branch}"
    if run.get("conclusion") != "success":
        return f"concluded {run.get('conclusion')!r}"
    if workflow is not None and run.get("path") != workflow:
        return f"made by {run.get('path')!r}, not by {workflow}"
    return None


def _facts_member(archive: bytes, label: str) -> tuple[str, str]:
    try:
        return facts_member(archive)
    except FactsArchiveError as exc:
        raise FactsArtifactError(f"{label} {exc}") from None
