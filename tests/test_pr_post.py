"""`rivet-ci post`, the fork-safe workflow_run half, against the local fake GitHub.

The command gets its environment only from the Context (these tests never set os.environ), reads
the comment file as data, and finds the pull request from the triggering run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.fake_github import FakeGitHub
from support.pr import Result, run_cli

from rivet_ci.core.comment.marker import make_marker, parse_marker

REPO = "acme/warehouse"
PR = 7
TOKEN = "ghs_WorkflowRunToken0123456789abcdefABCD"
READ_ONLY = "ghs_ReadOnlyToken0123456789abcdefABCDEF"
BOT = "github-actions[bot]"
HEAD = "a" * 40
STAMP = "2026-11-29T12:00:00Z"
BODY = "### rivet-ci · extraction priority\n\n**✅ gate passed — 2 export(s) changed**\n"


@pytest.fixture
def gh() -> Iterator[FakeGitHub]:
    with FakeGitHub() as fake:
        fake.add_token(TOKEN, login=BOT, can_read_user=False)
        fake.add_token(READ_ONLY, login=BOT, can_read_user=False, can_write=False)
        fake.add_pull(REPO, PR, head_sha=HEAD, head_ref="add-orders",
                      head_repo="contributor/warehouse")
        fake.add_pull(REPO, 8, head_sha="b" * 40, head_ref="other")
        yield fake
        assert fake.crashes == []


def comment_file(tmp_path: Path, *, gate_id: str = "default", head: str = HEAD,
                 body: str = BODY) -> Path:
    path = tmp_path / "rivet-ci-comment" / "comment.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{make_marker(gate_id, head, STAMP)}\n{body}", encoding="utf-8")
    return path


def workflow_run_event(tmp_path: Path, *, run_id: int = 99,
                       pulls: list[tuple[int, str]] | None = None, head_sha: str = HEAD,
                       head_repo: str = "contributor/warehouse",
                       head_branch: str = "add-orders") -> Path:
    """A `workflow_run` (completed) payload; `pull_requests` is empty for fork PRs."""
    payload: dict[str, Any] = {
        "action": "completed",
        "workflow_run": {
            "id": run_id, "name": "rivet-ci plan (fork-safe example)", "event": "pull_request",
            "status": "completed", "conclusion": "failure",
            "head_branch": head_branch, "head_sha": head_sha,
            "head_repository": {"full_name": head_repo,
                                "owner": {"login": head_repo.partition("/")[0]}},
            "repository": {"full_name": REPO, "owner": {"login": "acme"}},
            "pull_requests": [
                {"number": n, "head": {"sha": head_sha},
                 "base": {"ref": "main", "repo": {"url": f"https://api.github.com/repos/{base}"}}}
                for n, base in pulls or []],
        },
        "repository": {"full_name": REPO},
    }
    path = tmp_path / "event.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    return path


def post(gh: FakeGitHub, tmp_path: Path, *args: str, token: str | None = TOKEN,
         event: Path | None = None, repo: str | None = REPO) -> Result:
    environ = {"GITHUB_API_URL": gh.url, "GITHUB_EVENT_NAME": "workflow_run"}
    if token is not None:
        environ["GITHUB_TOKEN"] = token
    if repo is not None:
        environ["GITHUB_REPOSITORY"] = repo
    if event is not None:
        environ["GITHUB_EVENT_PATH"] = str(event)
    return run_cli(["post", *args], cwd=tmp_path, environ=environ)


def test_posts_to_the_given_pull_request_and_a_repost_changes_nothing(
        gh: FakeGitHub, tmp_path: Path) -> None:
    path = comment_file(tmp_path)
    # Relative to the Context's working directory, as in a workflow step.
    result = post(gh, tmp_path, "--comment-file", "rivet-ci-comment/comment.md", "--pr", "7")
    assert result.code == 0, result.stderr
    (comment,) = gh.comments(REPO, PR)
    assert comment["body"] == path.read_text(encoding="utf-8")
    assert comment["login"] == BOT
    assert "pull request #7: comment created" in result.stdout
    assert f"#issuecomment-{comment['id']}" in result.stdout

    again = post(gh, tmp_path, "--comment-file", str(path), "--pr", "7")
    assert again.code == 0 and "already up to date" in again.stdout
    assert gh.requests_for("PATCH") == [] and len(gh.requests_for("POST")) == 1


def test_a_later_run_updates_the_same_comment(gh: FakeGitHub, tmp_path: Path) -> None:
    post(gh, tmp_path, "--comment-file", str(comment_file(tmp_path)), "--pr", "7")
    newer = "c" * 40
    gh.set_head(REPO, PR, newer)
    result = post(gh, tmp_path, "--comment-file",
                  str(comment_file(tmp_path, head=newer, body="updated\n")), "--pr", "7")
    assert result.code == 0, result.stderr
    (comment,) = gh.comments(REPO, PR)
    assert comment["body"].endswith("updated\n")
    marker = parse_marker(comment["body"])
    assert marker is not None and marker.head_sha == newer


def test_the_pull_request_comes_from_the_workflow_run_payload(gh: FakeGitHub,
                                                              tmp_path: Path) -> None:
    # Same-repository PRs are listed in workflow_run.pull_requests.
    # Listed first: a pull request of another repository from the same branch.
    event = workflow_run_event(tmp_path, pulls=[(3, "upstream/warehouse"), (8, REPO)],
                               head_sha="b" * 40, head_repo=REPO, head_branch="other")
    path = comment_file(tmp_path, head="b" * 40)
    result = post(gh, tmp_path, "--comment-file", str(path), "--run-id", "99", event=event)
    assert result.code == 0, result.stderr
    assert len(gh.comments(REPO, 8)) == 1 and gh.comments(REPO, PR) == []


def test_a_fork_pull_request_is_found_by_its_head_branch(gh: FakeGitHub, tmp_path: Path) -> None:
    event = workflow_run_event(tmp_path, pulls=[])  # empty for forks
    result = post(gh, tmp_path, "--comment-file", str(comment_file(tmp_path)), "--run-id", "99",
                  event=event)
    assert result.code == 0, result.stderr
    assert len(gh.comments(REPO, PR)) == 1
    lookups = [r for r in gh.requests if r.path == f"/repos/{REPO}/pulls"]
    assert lookups and lookups[0].query["head"] == "contributor:add-orders"


def test_no_open_pull_request_is_not_an_error(gh: FakeGitHub, tmp_path: Path) -> None:
    event = workflow_run_event(tmp_path, pulls=[], head_sha="d" * 40)
    gh.add_pull(REPO, PR, head_sha=HEAD, head_ref="add-orders",
                head_repo="contributor/warehouse", state="closed")
    result = post(gh, tmp_path, "--comment-file", str(comment_file(tmp_path, head="d" * 40)),
                  event=event)
    assert result.code == 0, result.stderr
    assert "nothing posted" in result.stdout
    assert gh.requests_for("POST") == []


def test_a_listed_pull_request_closed_meanwhile_gets_no_comment(gh: FakeGitHub,
                                                                tmp_path: Path) -> None:
    # workflow_run.pull_requests is what GitHub knew when the run started; the PR is looked up.
    gh.add_pull(REPO, 8, head_sha="b" * 40, head_ref="add-orders", state="closed")
    gh.add_pull(REPO, PR, head_sha=HEAD, head_ref="add-orders",
                head_repo="contributor/warehouse", state="closed")
    event = workflow_run_event(tmp_path, pulls=[(8, REPO)], head_sha="b" * 40)
    path = comment_file(tmp_path, head="b" * 40)
    result = post(gh, tmp_path, "--comment-file", str(path), "--run-id", "99", event=event)
    assert result.code == 0, result.stderr
    assert "nothing posted" in result.stdout
    assert gh.requests_for("POST") == [] and gh.comments(REPO, 8) == []


def test_a_malformed_workflow_run_event_is_a_usage_error(gh: FakeGitHub,
                                                         tmp_path: Path) -> None:
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"workflow_run": {"id": 99, "pull_requests": "x"}}),
                     encoding="utf-8")
    result = post(gh, tmp_path, "--comment-file", str(comment_file(tmp_path)), "--run-id", "99",
                  event=event)
    assert result.code == 2
    assert "workflow_run event is malformed" in result.stderr and "--pr" in result.stderr


def test_recreate_moves_the_comment_to_the_bottom(gh: FakeGitHub, tmp_path: Path) -> None:
    path = comment_file(tmp_path)
    post(gh, tmp_path, "--comment-file", str(path), "--pr", "7")
    first = gh.comments(REPO, PR)[0]["id"]
    gh.add_comment(REPO, PR, "LGTM", login="reviewer")
    result = post(gh, tmp_path, "--comment-file", str(path), "--pr", "7", "--comment",
                  "recreate")
    assert result.code == 0, result.stderr
    comments = gh.comments(REPO, PR)
    assert [c["login"] for c in comments] == ["reviewer", BOT]
    assert comments[1]["id"] != first


# -- refusals: exit 2, nothing posted ------------------------------------------------------------


def refused(gh: FakeGitHub, result: Result, *needles: str) -> None:
    assert result.code == 2, (result.stdout, result.stderr)
    assert result.stderr.startswith("rivet-ci: error: ")
    for needle in needles:
        assert needle in result.stderr
    assert [r.method for r in gh.requests if r.method != "GET"] == []
    assert TOKEN not in result.stderr


def test_a_file_over_githubs_limit_is_refused(gh: FakeGitHub, tmp_path: Path) -> None:
    marker_line = len(make_marker("default", HEAD, STAMP)) + 1
    over = comment_file(tmp_path, body="x" * (65_537 - marker_line))
    refused(gh, post(gh, tmp_path, "--comment-file", str(over), "--pr", "7"),
            "has 65,537 characters, over GitHub's limit of 65,536")
    at_limit = comment_file(tmp_path, body="x" * (65_536 - marker_line))
    assert len(at_limit.read_text(encoding="utf-8")) == 65_536
    assert post(gh, tmp_path, "--comment-file", str(at_limit), "--pr", "7").code == 0


def test_a_file_without_a_marker_is_refused(gh: FakeGitHub, tmp_path: Path) -> None:
    path = tmp_path / "comment.md"
    path.write_text("Looks good to me! <!-- rivet-ci:comment id=default -->\n", encoding="utf-8")
    refused(gh, post(gh, tmp_path, "--comment-file", str(path), "--pr", "7"),
            "no rivet-ci marker")


def test_a_file_for_another_gate_is_refused(gh: FakeGitHub, tmp_path: Path) -> None:
    path = comment_file(tmp_path, gate_id="warehouse")
    refused(gh, post(gh, tmp_path, "--comment-file", str(path), "--pr", "7"),
            "gate id 'warehouse', not 'default'", "--id warehouse")
    assert post(gh, tmp_path, "--comment-file", str(path), "--pr", "7", "--id",
                "warehouse").code == 0


def test_a_missing_or_undecodable_file_is_refused(gh: FakeGitHub, tmp_path: Path) -> None:
    refused(gh, post(gh, tmp_path, "--comment-file", "nope.md", "--pr", "7"),
            "cannot read the comment file nope.md")
    binary = tmp_path / "binary.md"
    binary.write_bytes(b"\xff\xfe\x00rivet")
    refused(gh, post(gh, tmp_path, "--comment-file", str(binary), "--pr", "7"),
            "cannot read the comment file")


def test_a_comment_for_another_commit_than_the_run_built_is_refused(
        gh: FakeGitHub, tmp_path: Path) -> None:
    event = workflow_run_event(tmp_path, pulls=[])
    forged = comment_file(tmp_path, head="e" * 40)  # a fork may upload anything
    refused(gh, post(gh, tmp_path, "--comment-file", str(forged), "--run-id", "99",
                     event=event), "rendered for commit eeeeeeeeeeee", "aaaaaaaaaaaa")


def test_a_run_id_that_is_not_the_triggering_run_is_refused(gh: FakeGitHub,
                                                             tmp_path: Path) -> None:
    event = workflow_run_event(tmp_path, run_id=99)
    refused(gh, post(gh, tmp_path, "--comment-file", str(comment_file(tmp_path)), "--run-id",
                     "100", event=event), "--run-id 100 is not the run")


def test_without_pr_or_workflow_run_event_it_says_what_to_pass(gh: FakeGitHub,
                                                              tmp_path: Path) -> None:
    refused(gh, post(gh, tmp_path, "--comment-file", str(comment_file(tmp_path))),
            "pass --pr N")


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [({"token": None}, "GITHUB_TOKEN is not set"),
     ({"repo": None}, "--repo OWNER/NAME"),
     ({"repo": "not a repo"}, "owner/name")],
)
def test_missing_setup_is_a_usage_error(gh: FakeGitHub, tmp_path: Path, kwargs: dict[str, Any],
                                        needle: str) -> None:
    path = comment_file(tmp_path)
    refused(gh, post(gh, tmp_path, "--comment-file", str(path), "--pr", "7", **kwargs), needle)


def test_repo_flag_overrides_the_environment(gh: FakeGitHub, tmp_path: Path) -> None:
    path = comment_file(tmp_path)
    result = post(gh, tmp_path, "--comment-file", str(path), "--pr", "7", "--repo", REPO,
                  repo="someone/else")
    assert result.code == 0, result.stderr
    assert len(gh.comments(REPO, PR)) == 1


def test_a_read_only_token_is_a_setup_error(gh: FakeGitHub, tmp_path: Path) -> None:
    result = post(gh, tmp_path, "--comment-file", str(comment_file(tmp_path)), "--pr", "7",
                  token=READ_ONLY)
    assert result.code == 2
    assert "may not comment" in result.stderr and "pull-requests: write" in result.stderr
    assert gh.comments(REPO, PR) == []


def test_pr_and_run_id_are_exclusive(gh: FakeGitHub, tmp_path: Path) -> None:
    result = post(gh, tmp_path, "--comment-file", "x", "--pr", "7", "--run-id", "1")
    assert result.code == 2  # argparse prints the usage itself
    assert gh.requests == []
