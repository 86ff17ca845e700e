"""The GitHub API data rivet-ci reads: comments, pull requests, workflow runs (frozen models)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from rivet_ci.core.common.patterns import COMMIT_SHA


class Comment(BaseModel):
    """An issue (pull request conversation) comment."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    id: int
    body: str
    user_login: str | None  # None for comments of deleted accounts
    html_url: str
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> Comment:
        return cls(
            id=data["id"],
            body=data.get("body") or "",
            user_login=(data.get("user") or {}).get("login"),
            html_url=data["html_url"],
            created_at=data["created_at"],
            updated_at=data["updated_at"],
        )


class PullRequest(BaseModel):
    """The fields of a pull request that rivet-ci needs."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    number: int
    state: str
    html_url: str
    head_sha: str
    head_ref: str
    head_repo: str | None  # "owner/name"; None when the fork has been deleted
    base_repo: str
    base_ref: str

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> PullRequest:
        head, base = data["head"], data["base"]
        return cls(
            number=data["number"],
            state=data["state"],
            html_url=data["html_url"],
            head_sha=head["sha"],
            head_ref=head["ref"],
            head_repo=(head.get("repo") or {}).get("full_name"),
            base_repo=base["repo"]["full_name"],
            base_ref=base["ref"],
        )


def _pull_number(value: object) -> int:
    """A pull request number from a payload: a positive integer GitHub could have issued."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 2**31:
        raise ValueError(f"pull request number {value!r:.40} is not a positive 32-bit integer")
    return value


class WorkflowRun(BaseModel):
    """The fields of an Actions workflow run that locate its pull request."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    id: int
    event: str
    head_sha: str
    head_branch: str | None
    head_repo: str | None  # "owner/name" the run's commit came from (a fork, perhaps)
    # Pull requests of this repository as GitHub lists them; always empty for forks.
    pull_numbers: tuple[int, ...]

    @classmethod
    def from_api(cls, data: Mapping[str, Any], *, repo: str) -> WorkflowRun:
        # GitHub may list pull requests of other repositories whose base is this branch.
        own = f"/repos/{repo}".lower()
        numbers = tuple(
            _pull_number(pr["number"])
            for pr in data.get("pull_requests") or []
            if str(pr["base"]["repo"]["url"]).lower().endswith(own)
        )
        head_sha = data["head_sha"]
        if not isinstance(head_sha, str) or not COMMIT_SHA.fullmatch(head_sha.lower()):
            raise ValueError(f"head_sha {head_sha!r:.80} is not a full commit sha")
        return cls(
            id=data["id"],
            event=data["event"],
            head_sha=head_sha.lower(),
            head_branch=data.get("head_branch"),
            head_repo=(data.get("head_repository") or {}).get("full_name"),
            pull_numbers=numbers,
        )
