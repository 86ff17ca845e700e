"""Lookups that can only find this pull request (issue 23, item 4; docs/security.md).

`rivet-ci post` finds the pull request of a `workflow_run` only by the payload's head
repository, branch and commit, and posts only when exactly one open pull request has that head;
a comment is rivet-ci's only when its body *starts* with the marker and its author is the
expected account. Against the local fake GitHub: forks with the same branch name, closed pull
requests, commits shared between pull requests, forged payload lists, malformed numbers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.fake_github import FakeGitHub
from support.pr import Result, review_plan_text, run_cli

from rivet_ci.adapters.github.client import GitHubClient, github_wire
from rivet_ci.adapters.github.forge import GitHubForge
from rivet_ci.core.comment.marker import make_marker, parse_leading_marker
from rivet_ci.review.sticky import upsert_comment

REPO = "acme/warehouse"
TOKEN = "ghs_WorkflowRunToken0123456789abcdefABCD"
BOT = "github-actions[bot]"
SHA, OTHER_SHA = "a" * 40, "b" * 40
STAMP = "2026-11-29T12:00:00Z"


@pytest.fixture
def gh() -> Any:
    with FakeGitHub() as fake:
        fake.add_token(TOKEN, login=BOT, can_read_user=False)
        yield fake
        assert fake.crashes == []


def _event(tmp_path: Path, *, head_repo: str, head_branch: str, head_sha: str = SHA,
           pulls: list[Any] | None = None) -> Path:
    path = tmp_path / "event.json"
    path.write_text(json.dumps({"action": "completed", "workflow_run": {
        "id": 99, "event": "pull_request", "head_branch": head_branch, "head_sha": head_sha,
        "head_repository": {"full_name": head_repo},
        "pull_requests": [{"number": n, "head": {"sha": head_sha}, "base": {"ref": "main", "repo": {
            "url": f"https://api.github.com/repos/{REPO}"}}} for n in pulls or []]}}))
    return path


def _post(gh: FakeGitHub, tmp_path: Path, event: Path, head: str = SHA) -> Result:
    plan = tmp_path / "plan.json"
    plan.write_text(review_plan_text(head))
    return run_cli(["post", "--plan", str(plan), "--run-id", "99"], cwd=tmp_path,
                   environ={"GITHUB_API_URL": gh.url, "GITHUB_TOKEN": TOKEN,
                            "GITHUB_REPOSITORY": REPO, "GITHUB_EVENT_PATH": str(event)})


def _commented(gh: FakeGitHub, *numbers: int) -> dict[int, int]:
    return {n: len(gh.comments(REPO, n)) for n in numbers}


def test_a_closed_pull_request_never_falls_back_to_another_sharing_its_commit(
        gh: FakeGitHub, tmp_path: Path) -> None:
    """The attack of issue 23: the run's PR was closed; PR 8 (another branch) has the same
    commit as its head. Nothing is posted anywhere."""
    gh.add_pull(REPO, 7, head_sha=SHA, head_ref="feature", state="closed")
    gh.add_pull(REPO, 8, head_sha=SHA, head_ref="other")
    result = _post(gh, tmp_path, _event(tmp_path, head_repo=REPO, head_branch="feature",
                                        pulls=[7]))
    assert result.code == 0 and "nothing posted" in result.stdout
    assert _commented(gh, 7, 8) == {7: 0, 8: 0}
    assert not [r for r in gh.requests if "/commits/" in r.path]  # never looked up by commit


def test_forks_with_the_same_branch_name_and_commit_are_told_apart(
        gh: FakeGitHub, tmp_path: Path) -> None:
    gh.add_pull(REPO, 7, head_sha=SHA, head_ref="main", head_repo="alice/warehouse")
    gh.add_pull(REPO, 8, head_sha=SHA, head_ref="main", head_repo="bob/warehouse")
    gh.add_pull(REPO, 9, head_sha=SHA, head_ref="main", head_repo="alice/warehouse-copy")
    result = _post(gh, tmp_path, _event(tmp_path, head_repo="alice/warehouse",
                                        head_branch="main"))
    assert result.code == 0, result.stderr
    assert _commented(gh, 7, 8, 9) == {7: 1, 8: 0, 9: 0}


def test_a_pull_request_pushed_to_since_the_run_gets_no_comment(
        gh: FakeGitHub, tmp_path: Path) -> None:
    gh.add_pull(REPO, 7, head_sha=OTHER_SHA, head_ref="feature", head_repo="alice/warehouse")
    result = _post(gh, tmp_path, _event(tmp_path, head_repo="alice/warehouse",
                                        head_branch="feature"))
    assert result.code == 0 and "nothing posted" in result.stdout
    assert _commented(gh, 7) == {7: 0}


def test_two_open_pull_requests_with_the_same_head_are_refused(
        gh: FakeGitHub, tmp_path: Path) -> None:
    gh.add_pull(REPO, 7, head_sha=SHA, head_ref="feature", base_ref="main")
    gh.add_pull(REPO, 8, head_sha=SHA, head_ref="feature", base_ref="release")
    result = _post(gh, tmp_path, _event(tmp_path, head_repo=REPO, head_branch="feature"))
    assert result.code == 2
    assert "#7, #8" in result.stderr and "refusing to guess" in result.stderr
    assert _commented(gh, 7, 8) == {7: 0, 8: 0}


def test_a_payload_list_naming_another_pull_request_is_not_believed(
        gh: FakeGitHub, tmp_path: Path) -> None:
    gh.add_pull(REPO, 7, head_sha=SHA, head_ref="feature")
    gh.add_pull(REPO, 8, head_sha=OTHER_SHA, head_ref="unrelated")
    result = _post(gh, tmp_path, _event(tmp_path, head_repo=REPO, head_branch="feature",
                                        pulls=[8]))
    assert result.code == 0, result.stderr
    assert _commented(gh, 7, 8) == {7: 1, 8: 0}


@pytest.mark.parametrize("number", [10**30, "7", True, -1, 0, 2**31, 7.0, None, [7]])
def test_a_pull_request_number_that_is_not_a_small_integer_is_a_clear_error(
        gh: FakeGitHub, tmp_path: Path, number: object) -> None:
    gh.add_pull(REPO, 7, head_sha=SHA, head_ref="feature")
    event = _event(tmp_path, head_repo=REPO, head_branch="feature", pulls=[number])
    result = _post(gh, tmp_path, event)
    assert result.code == 2, result.stdout + result.stderr
    assert "malformed" in result.stderr and "Traceback" not in result.stderr
    assert _commented(gh, 7) == {7: 0}


@pytest.mark.parametrize("head_sha", ["A" * 39, "not-a-sha", "", 12, None])
def test_a_malformed_head_sha_is_a_clear_error(gh: FakeGitHub, tmp_path: Path,
                                               head_sha: Any) -> None:
    gh.add_pull(REPO, 7, head_sha=SHA, head_ref="feature")
    path = tmp_path / "event.json"
    path.write_text(json.dumps({"workflow_run": {
        "id": 99, "event": "pull_request", "head_branch": "feature", "head_sha": head_sha,
        "head_repository": {"full_name": REPO}, "pull_requests": []}}))
    result = _post(gh, tmp_path, path)
    assert result.code == 2 and "Traceback" not in result.stderr
    assert _commented(gh, 7) == {7: 0}


MARKER = make_marker("default", SHA, "2026-11-29T11:00:00Z")
NOT_OURS = {
    "quoted on the first line": f"> {MARKER}\nwelcome!\n",
    "after text on the first line": f"Welcome! {MARKER}\n",
    "after a space": f" {MARKER}\n",
    "after a blank line": f"\n{MARKER}\n",
    "further down": f"hello\n\n{MARKER}\n",
    "spread over lines": MARKER.replace(" head=", "\nhead=") + "\n",
    "in a code span": f"`{MARKER}`\n",
}


@pytest.mark.parametrize("where", sorted(NOT_OURS))
def test_a_comment_counts_as_ours_only_when_it_starts_with_the_marker(where: str) -> None:
    assert parse_leading_marker(NOT_OURS[where]) is None
    assert parse_leading_marker(MARKER + "\nbody\n") is not None


@pytest.mark.parametrize("where", sorted(NOT_OURS))
def test_comments_quoting_the_marker_are_never_edited_or_deleted(gh: FakeGitHub,
                                                                 where: str) -> None:
    gh.add_pull(REPO, 7, head_sha=SHA)
    theirs = gh.add_comment(REPO, 7, NOT_OURS[where], login=BOT)
    # our exact body, but from another account
    copied = gh.add_comment(REPO, 7, MARKER + "\nbody\n", login="someone-else")
    client = GitHubClient(github_wire(api_url=gh.url, token=TOKEN, sleep=lambda _: None))
    for behaviour in ("update", "recreate", "update"):
        upsert_comment(GitHubForge(client, REPO, 7), body="body\n", short_body="body\n",
                       gate_id="default", head_sha=SHA, behaviour=behaviour,
                       timestamp="2026-11-29T12:00:00Z")
    comments = {c["id"]: c for c in gh.comments(REPO, 7)}
    assert comments[theirs]["body"] == NOT_OURS[where]
    assert comments[copied]["body"] == MARKER + "\nbody\n"
    ours = [c for c in comments.values() if c["id"] not in (theirs, copied)]
    assert len(ours) == 1 and ours[0]["body"].startswith("<!-- rivet-ci:comment id=default")
