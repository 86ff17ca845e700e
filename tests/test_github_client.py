"""The GitHub client and sticky-comment upsert, end to end against the local fake GitHub.

No mocks: every call goes over HTTP to `fake_github.FakeGitHub`. Sleeps are recorded
instead of slept, and both sides share one fixed clock, so waits are asserted exactly.
"""

from __future__ import annotations

import json
import logging
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from support.fake_github import FakeGitHub
from support.isolation import free_port

from rivet_ci.adapters.github.client import (
    GitHubBodyTooLong,
    GitHubClient,
    GitHubError,
    GitHubForbidden,
    GitHubNotFound,
    GitHubRateLimited,
    GitHubUnauthorized,
    GitHubUnavailable,
    github_wire,
)
from rivet_ci.adapters.github.forge import ACTIONS_BOT_LOGIN, GitHubForge
from rivet_ci.adapters.github.models import WorkflowRun
from rivet_ci.adapters.github.pulls import find_pull_for_head, find_pull_for_run
from rivet_ci.core.comment.marker import make_marker, parse_marker
from rivet_ci.review.sticky import Behaviour, CommentAction, CommentOutcome, upsert_comment

REPO = "acme/warehouse"
PR = 7
TOKEN = "ghp_S3cretTokenValue0123456789abcdefABCD"
NOW = 1_800_000_000.0
SHA1 = "1" * 40
SHA2 = "2" * 40
T1 = "2026-11-29T12:00:00Z"
T2 = "2026-11-29T13:00:00Z"
BODY = "## rivet-ci plan\n\nAll 3 exports are ready.\n"
SHORT = "## rivet-ci plan\n\nThe full plan is too long for a comment; see the job summary.\n"


@pytest.fixture
def gh() -> Iterator[FakeGitHub]:
    with FakeGitHub(clock=lambda: NOW) as fake:
        fake.add_token(TOKEN, login="rivet-bot")
        fake.add_pull(REPO, PR, head_sha=SHA1)
        yield fake
        assert fake.crashes == []


@pytest.fixture
def sleeps() -> list[float]:
    return []


def client_for(gh: FakeGitHub, sleeps: list[float], **kwargs: Any) -> GitHubClient:
    options: dict[str, Any] = {"token": TOKEN, "sleep": sleeps.append, "clock": lambda: NOW}
    return GitHubClient(github_wire(api_url=gh.url, **{**options, **kwargs}))


@pytest.fixture
def client(gh: FakeGitHub, sleeps: list[float]) -> GitHubClient:
    return client_for(gh, sleeps)


def upsert(client: GitHubClient, **overrides: Any) -> CommentOutcome:
    args: dict[str, Any] = {
        "repo": REPO,
        "number": PR,
        "body": BODY,
        "short_body": SHORT,
        "gate_id": "default",
        "head_sha": SHA1,
        "timestamp": T1,
    }
    args.update(overrides)
    forge = GitHubForge(client, args.pop("repo"), args.pop("number"),
                        author=args.pop("author", None))
    return upsert_comment(forge, **args)


def ours(gh: FakeGitHub, login: str = "rivet-bot") -> list[dict[str, Any]]:
    return [c for c in gh.comments(REPO, PR) if c["login"] == login and parse_marker(c["body"])]


# --- the sticky comment -------------------------------------------------------------------


def test_first_run_creates_one_comment(gh: FakeGitHub, client: GitHubClient) -> None:
    outcome = upsert(client)

    [comment] = gh.comments(REPO, PR)
    assert outcome.action is CommentAction.CREATED
    assert outcome.comment_id == comment["id"]
    assert outcome.url == f"https://github.com/{REPO}/pull/{PR}#issuecomment-{comment['id']}"
    assert comment["body"] == f"{make_marker('default', SHA1, T1)}\n{BODY}"
    assert comment["login"] == "rivet-bot"


def test_a_marker_already_in_the_body_is_replaced_not_doubled(
    gh: FakeGitHub, client: GitHubClient
) -> None:
    rendered = f"{make_marker('default', SHA1, T2)}\n{BODY}"  # as a template renders it

    upsert(client, body=rendered, timestamp=None)

    [comment] = gh.comments(REPO, PR)
    assert comment["body"] == rendered
    assert comment["body"].count("rivet-ci:comment") == 1


def test_new_head_edits_the_same_comment(gh: FakeGitHub, client: GitHubClient) -> None:
    first = upsert(client)
    gh.set_head(REPO, PR, SHA2)

    second = upsert(client, head_sha=SHA2, timestamp=T2, body=BODY + "One more export.\n")

    [comment] = gh.comments(REPO, PR)
    assert second.action is CommentAction.UPDATED
    assert second.comment_id == first.comment_id == comment["id"]
    assert parse_marker(comment["body"]) is not None
    assert parse_marker(comment["body"]).head_sha == SHA2  # type: ignore[union-attr]
    assert comment["body"].endswith("One more export.\n")
    assert len(gh.requests_for("PATCH")) == 1


def test_our_comment_is_found_behind_150_others(gh: FakeGitHub, client: GitHubClient) -> None:
    for i in range(150):
        gh.add_comment(REPO, PR, f"LGTM {i}", login=f"reviewer{i % 7}")
    created = upsert(client)
    gh.set_head(REPO, PR, SHA2)

    outcome = upsert(client, head_sha=SHA2, timestamp=T2)

    assert outcome.action is CommentAction.UPDATED
    assert outcome.comment_id == created.comment_id
    assert len(gh.comments(REPO, PR)) == 151
    assert len(ours(gh)) == 1
    listings = [r for r in gh.requests_for("GET") if r.path.endswith("/comments")]
    # Second run: page 1 via the repo path, page 2 via GitHub's /repositories/{id} link.
    assert [r.query.get("page") for r in listings[-2:]] == [None, "2"]
    assert listings[-2].path == f"/repos/{REPO}/issues/{PR}/comments"
    assert listings[-1].path.startswith("/repositories/")
    assert {r.query["per_page"] for r in listings} == {"100"}


def test_identical_rerun_sends_no_patch(gh: FakeGitHub, client: GitHubClient) -> None:
    first = upsert(client)

    rerun = upsert(client, timestamp=T2)

    assert rerun.action is CommentAction.UNCHANGED
    assert rerun.comment_id == first.comment_id
    assert gh.requests_for("PATCH") == []


def test_same_body_on_a_new_head_still_updates_the_marker(
    gh: FakeGitHub, client: GitHubClient
) -> None:
    upsert(client)
    gh.set_head(REPO, PR, SHA2)

    assert upsert(client, head_sha=SHA2).action is CommentAction.UPDATED


def test_comment_from_a_newer_head_is_not_overwritten(gh: FakeGitHub, client: GitHubClient) -> None:
    gh.set_head(REPO, PR, SHA2)
    newer = upsert(client, head_sha=SHA2, body="newer result\n")

    stale = upsert(client, head_sha=SHA1, body="stale result\n", timestamp=T2)

    assert stale.action is CommentAction.SKIPPED_NEWER
    assert stale.comment_id == newer.comment_id
    assert gh.requests_for("PATCH") == []
    assert gh.comments(REPO, PR)[0]["body"].endswith("newer result\n")


def test_comment_from_an_older_head_is_overwritten(gh: FakeGitHub, client: GitHubClient) -> None:
    upsert(client, head_sha=SHA1)
    gh.set_head(REPO, PR, SHA2)

    assert upsert(client, head_sha=SHA2, body="new\n").action is CommentAction.UPDATED


@pytest.mark.parametrize(("newer", "action"), [(True, "skipped_newer"), (False, "updated")])
def test_caller_can_decide_what_is_newer(
    gh: FakeGitHub, client: GitHubClient, newer: bool, action: str
) -> None:
    upsert(client, head_sha=SHA2)
    asked: list[str] = []

    def is_newer(sha: str) -> bool:
        asked.append(sha)
        return newer

    outcome = upsert(client, head_sha=SHA1, body="other\n", is_newer=is_newer)

    assert outcome.action == action
    assert asked == [SHA2]
    assert not [r for r in gh.requests if r.path == f"/repos/{REPO}/pulls/{PR}"]


def test_other_authors_and_other_gates_are_left_alone(gh: FakeGitHub, client: GitHubClient) -> None:
    quoted = f"> {make_marker('default', SHA1, T1)}\n> copied from the bot"
    gh.add_comment(REPO, PR, quoted, login="mallory")
    gh.add_comment(REPO, PR, make_marker("nightly", SHA1, T1) + "\nnightly", login="rivet-bot")

    outcome = upsert(client, body="fresh\n")

    assert outcome.action is CommentAction.CREATED
    bodies = [c["body"] for c in gh.comments(REPO, PR)]
    assert bodies[:2] == [quoted, make_marker("nightly", SHA1, T1) + "\nnightly"]
    assert len(bodies) == 3


def test_actions_token_finds_comments_by_the_actions_bot(
    gh: FakeGitHub, sleeps: list[float]
) -> None:
    gh.add_token("ghs_actions", login=ACTIONS_BOT_LOGIN, can_read_user=False)
    client = client_for(gh, sleeps, token="ghs_actions")
    assert client.authenticated_login() is None

    first = upsert(client)
    second = upsert(client, body="changed\n")

    assert (first.action, second.action) == (CommentAction.CREATED, CommentAction.UPDATED)
    assert len(ours(gh, ACTIONS_BOT_LOGIN)) == 1


def test_explicit_author_for_app_tokens(gh: FakeGitHub, sleeps: list[float]) -> None:
    gh.add_token("ghs_app", login="rivet-app[bot]", can_read_user=False)
    client = client_for(gh, sleeps, token="ghs_app")
    upsert(client, author="rivet-app[bot]")

    assert upsert(client, author="rivet-app[bot]").action is CommentAction.UNCHANGED


def test_recreate_deletes_ours_and_posts_anew(gh: FakeGitHub, client: GitHubClient) -> None:
    first = upsert(client, behaviour="recreate")
    gh.add_comment(REPO, PR, "a review in between", login="reviewer")

    second = upsert(client, behaviour=Behaviour.RECREATE, timestamp=T2)

    assert first.action is CommentAction.CREATED
    assert second.action is CommentAction.RECREATED
    assert second.comment_id != first.comment_id
    assert [c["id"] for c in ours(gh)] == [second.comment_id]
    assert gh.comments(REPO, PR)[-1]["id"] == second.comment_id  # now at the bottom
    assert len(gh.requests_for("DELETE")) == 1


def test_new_always_posts(gh: FakeGitHub, client: GitHubClient) -> None:
    outcomes = [upsert(client, behaviour="new") for _ in range(2)]

    assert [o.action for o in outcomes] == [CommentAction.CREATED] * 2
    assert len(ours(gh)) == 2
    assert not [r for r in gh.requests if r.path.endswith("/comments") and r.method == "GET"]


def test_off_makes_no_request(gh: FakeGitHub, client: GitHubClient) -> None:
    assert upsert(client, behaviour="off").action is CommentAction.OFF
    assert gh.requests == []


def test_unknown_behaviour_is_a_value_error(client: GitHubClient) -> None:
    with pytest.raises(ValueError, match="'sometimes'"):
        upsert(client, behaviour="sometimes")


# --- too long, forbidden, not found -------------------------------------------------------


@pytest.mark.parametrize("style", ["custom", "unprocessable"])
def test_too_long_body_falls_back_to_the_short_body(style: str, sleeps: list[float]) -> None:
    with FakeGitHub(clock=lambda: NOW, too_long_style=style) as gh:
        gh.add_token(TOKEN, login="rivet-bot")
        gh.add_pull(REPO, PR, head_sha=SHA1)
        client = client_for(gh, sleeps)

        outcome = upsert(client, body="x" * 70_000)

        assert outcome.action is CommentAction.CREATED
        assert outcome.used_short_body
        [comment] = gh.comments(REPO, PR)
        assert comment["body"] == f"{make_marker('default', SHA1, T1)}\n{SHORT}"
        assert [r.method for r in gh.requests if r.method != "GET"] == ["POST", "POST"]


def test_too_long_update_falls_back_and_reruns_stay_quiet(
    gh: FakeGitHub, client: GitHubClient
) -> None:
    upsert(client)
    updated = upsert(client, body="y" * 70_000)
    rerun = upsert(client, body="y" * 70_000, timestamp=T2)

    assert (updated.action, updated.used_short_body) == (CommentAction.UPDATED, True)
    assert ours(gh)[0]["body"].endswith(SHORT)
    assert rerun.action is CommentAction.UNCHANGED
    assert len(gh.requests_for("PATCH")) == 2  # the rejected full body, then the short one


def test_short_body_too_long_as_well_raises(client: GitHubClient) -> None:
    with pytest.raises(GitHubBodyTooLong, match="is too long"):
        upsert(client, body="x" * 70_000, short_body="y" * 70_000)


def test_read_only_token_gives_the_forbidden_outcome(gh: FakeGitHub, sleeps: list[float]) -> None:
    gh.add_token("ghs_fork", login=ACTIONS_BOT_LOGIN, can_read_user=False, can_write=False)
    client = client_for(gh, sleeps, token="ghs_fork")

    outcome = upsert(client)

    assert outcome.action is CommentAction.FORBIDDEN
    assert "Resource not accessible by integration" in outcome.detail
    assert "workflow_run" in outcome.detail
    assert gh.comments(REPO, PR) == []
    with pytest.raises(GitHubForbidden) as raised:
        client.create_issue_comment(REPO, PR, "hi")
    assert raised.value.status == 403
    assert sleeps == []  # a permission error is not retried


def test_unknown_pull_request_is_not_found(client: GitHubClient) -> None:
    with pytest.raises(GitHubNotFound) as raised:
        client.get_pull(REPO, 999)
    message = str(raised.value)
    assert f"GET /repos/{REPO}/pulls/999 returned 404: Not Found" in message
    assert "docs.github.com" in message
    with pytest.raises(GitHubNotFound):
        upsert(client, number=999)


def test_bad_token_is_unauthorized(gh: FakeGitHub, sleeps: list[float]) -> None:
    client = client_for(gh, sleeps, token="ghp_wrong")
    with pytest.raises(GitHubUnauthorized, match="Bad credentials"):
        client.list_issue_comments(REPO, PR)


def test_malformed_repository_is_rejected_before_any_request(
    gh: FakeGitHub, client: GitHubClient
) -> None:
    with pytest.raises(ValueError, match="owner/name"):
        client.list_issue_comments("acme/warehouse/../../user", PR)
    assert gh.requests == []


# --- retries and rate limits --------------------------------------------------------------


def test_5xx_burst_is_retried_with_backoff(
    gh: FakeGitHub, client: GitHubClient, sleeps: list[float]
) -> None:
    gh.inject(502, times=3)

    assert upsert(client).action is CommentAction.CREATED
    assert sleeps == [1, 2, 4]


def test_5xx_beyond_the_attempts_is_unavailable(gh: FakeGitHub, sleeps: list[float]) -> None:
    gh.inject(503, times=10)
    client = client_for(gh, sleeps, max_attempts=3)

    with pytest.raises(GitHubUnavailable) as raised:
        client.get_pull(REPO, PR)
    assert "GET /repos/acme/warehouse/pulls/7 returned 503" in str(raised.value)
    assert "gave up after 3 attempts" in str(raised.value)
    assert sleeps == [1, 2]


def test_network_errors_are_retried_then_unavailable(sleeps: list[float]) -> None:
    port = free_port()  # a port nobody listens on
    client = GitHubClient(github_wire(
        api_url=f"http://127.0.0.1:{port}", token=TOKEN, sleep=sleeps.append, max_attempts=3
    ))

    with pytest.raises(GitHubUnavailable, match="network error"):
        client.get_pull(REPO, PR)
    assert sleeps == [1, 2]


def test_429_retry_after_is_honoured(
    gh: FakeGitHub, client: GitHubClient, sleeps: list[float]
) -> None:
    gh.inject_retry_after(7)

    assert client.get_pull(REPO, PR).number == PR
    assert sleeps == [7]


def test_secondary_rate_limit_403_retry_after_is_honoured(
    gh: FakeGitHub, client: GitHubClient, sleeps: list[float]
) -> None:
    gh.inject_retry_after(5, status=403)

    assert upsert(client).action is CommentAction.CREATED
    assert sleeps == [5]


def test_primary_rate_limit_waits_until_reset(
    gh: FakeGitHub, client: GitHubClient, sleeps: list[float]
) -> None:
    gh.inject_primary_rate_limit(reset_in=30)

    assert upsert(client).action is CommentAction.CREATED
    assert sleeps == [31]  # the reset, plus a second for clock granularity


def test_rate_limit_reset_beyond_the_cap_fails_fast(
    gh: FakeGitHub, client: GitHubClient, sleeps: list[float]
) -> None:
    gh.inject_primary_rate_limit(reset_in=3600)

    with pytest.raises(GitHubRateLimited) as raised:
        client.get_pull(REPO, PR)
    assert "longer than the 60 s" in str(raised.value)
    assert raised.value.status == 403
    assert sleeps == []


def test_secondary_rate_limit_without_headers_waits_a_minute(
    gh: FakeGitHub, client: GitHubClient, sleeps: list[float]
) -> None:
    gh.inject(403, message="You have exceeded a secondary rate limit.")

    assert client.get_pull(REPO, PR).number == PR
    assert sleeps == [60]


# --- secrets, headers, GHES ---------------------------------------------------------------


def test_token_never_leaks(
    gh: FakeGitHub, sleeps: list[float], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    client = client_for(gh, sleeps, max_attempts=2)
    gh.inject(500, times=2)
    errors: list[GitHubError] = []
    for call in (
        lambda: client.get_pull(REPO, PR),  # unavailable, after a logged retry
        lambda: client.get_pull(REPO, 404),  # not found
        lambda: client.update_issue_comment(REPO, 1, "x"),  # not found
    ):
        with pytest.raises(GitHubError) as raised:
            call()
        errors.append(raised.value)
    gh.inject_primary_rate_limit(reset_in=3600)
    with pytest.raises(GitHubRateLimited) as limited:
        client.get_pull(REPO, PR)
    errors.append(limited.value)

    texts = [repr(client), str(client), caplog.text]
    texts += [f"{e!s} {e!r} {e.args!r} {vars(e)!r}" for e in errors]
    assert caplog.text  # the retry was logged ...
    assert not [t for t in texts if TOKEN in t]  # ... and nothing shows the token
    assert {r.headers["authorization"] for r in gh.requests} == {f"Bearer {TOKEN}"}


def test_token_is_trimmed_and_rejected_when_malformed(gh: FakeGitHub, sleeps: list[float]) -> None:
    assert client_for(gh, sleeps, token=f"{TOKEN}\n").authenticated_login() == "rivet-bot"
    with pytest.raises(ValueError, match="whitespace") as raised:
        client_for(gh, sleeps, token=f"{TOKEN[:10]} {TOKEN[10:]}")
    assert TOKEN[:10] not in str(raised.value)


def test_pagination_links_to_another_host_are_not_followed(
    gh: FakeGitHub, sleeps: list[float]
) -> None:
    for i in range(120):
        gh.add_comment(REPO, PR, f"comment {i}", login="reviewer")
    # The fake builds its links on 127.0.0.1; to a client of "localhost" that is elsewhere.
    client = GitHubClient(github_wire(api_url=gh.url.replace("127.0.0.1", "localhost"),
                                      token=TOKEN))

    with pytest.raises(GitHubError, match="refusing to send the token to another host"):
        client.list_issue_comments(REPO, PR)
    assert len(gh.requests) == 1


def test_requests_carry_the_documented_headers(gh: FakeGitHub, client: GitHubClient) -> None:
    client.create_issue_comment(REPO, PR, "hello")

    [request] = gh.requests
    assert request.headers["accept"] == "application/vnd.github+json"
    assert request.headers["x-github-api-version"] == "2022-11-28"
    assert request.headers["user-agent"].startswith("rivet-ci/")
    assert request.headers["content-type"] == "application/json"
    assert request.json == {"body": "hello"}


def test_ghes_base_url_with_a_path_prefix(sleeps: list[float]) -> None:
    with FakeGitHub(prefix="/api/v3", clock=lambda: NOW) as gh:
        gh.add_token(TOKEN, login="rivet-bot")
        gh.add_pull(REPO, PR, head_sha=SHA1)
        for i in range(120):
            gh.add_comment(REPO, PR, f"comment {i}", login="reviewer")
        client = client_for(gh, sleeps)
        assert client.api_url.endswith("/api/v3")

        created = upsert(client)
        again = upsert(client, timestamp=T2)

        assert (created.action, again.action) == (CommentAction.CREATED, CommentAction.UNCHANGED)
        assert client.authenticated_login() == "rivet-bot"
        assert "\0" not in {r.path for r in gh.requests}  # every request stayed under /api/v3
        assert any(r.path.startswith("/repositories/") for r in gh.requests)


# --- pull request resolution for workflow_run ----------------------------------------------


def test_find_pull_for_a_fork_head(gh: FakeGitHub, client: GitHubClient) -> None:
    gh.add_pull(REPO, 8, head_sha=SHA2, head_ref="fix-typo", head_repo="forker/warehouse")

    (pull,) = find_pull_for_head(
        client, repo=REPO, head_repo="forker/warehouse", head_branch="fix-typo", head_sha=SHA2
    )

    assert (pull.number, pull.head_repo, pull.head_sha) == (8, "forker/warehouse", SHA2)
    assert client.pulls_for_commit(REPO, SHA2) == []  # why the head search is needed


def test_find_pull_for_a_same_repo_branch(gh: FakeGitHub, client: GitHubClient) -> None:
    (pull,) = find_pull_for_head(
        client, repo=REPO, head_repo=REPO, head_branch="feature", head_sha=SHA1
    )
    assert pull.number == PR
    assert [p.number for p in client.pulls_for_commit(REPO, SHA1)] == [PR]


def test_find_pull_returns_none_when_there_is_no_pr(client: GitHubClient) -> None:
    found = find_pull_for_head(
        client, repo=REPO, head_repo=REPO, head_branch="nope", head_sha="9" * 40
    )
    assert found == []


def workflow_run(run_id: int, head_sha: str, head_branch: str, head_repo: str, *,
                 pulls: list[tuple[int, str]]) -> dict[str, Any]:
    """The `workflow_run` object of a workflow_run event, as GitHub sends it: `pull_requests`
    may list pull requests of other repositories, and is empty for a fork."""
    return {"id": run_id, "event": "pull_request", "head_sha": head_sha,
            "head_branch": head_branch, "head_repository": {"full_name": head_repo},
            "pull_requests": [{"number": n, "base": {"repo": {
                "url": f"https://api.github.com/repos/{base}"}}} for n, base in pulls]}


def test_workflow_run_of_a_same_repo_branch_lists_its_pull(
    gh: FakeGitHub, client: GitHubClient
) -> None:
    run = WorkflowRun.from_api(workflow_run(31, SHA1, "feature", REPO, pulls=[
        (3, "upstream/warehouse"), (PR, REPO)]), repo=REPO)
    pull = find_pull_for_run(client, repo=REPO, run=run)

    assert run.pull_numbers == (PR,)
    assert pull is not None
    assert pull.number == PR


def test_workflow_run_of_a_fork_is_resolved_by_its_head(
    gh: FakeGitHub, client: GitHubClient
) -> None:
    gh.add_pull(REPO, 8, head_sha=SHA2, head_ref="main", head_repo="forker/warehouse")
    run = WorkflowRun.from_api(workflow_run(32, SHA2, "main", "forker/warehouse", pulls=[]),
                               repo=REPO)
    pull = find_pull_for_run(client, repo=REPO, run=run)

    assert run.pull_numbers == ()
    assert (run.head_repo, run.head_branch, run.head_sha) == ("forker/warehouse", "main", SHA2)
    assert pull is not None
    assert pull.number == 8


# --- the fake itself follows GitHub's pagination contract ---------------------------------


def test_fake_paginates_like_github(gh: FakeGitHub) -> None:
    for i in range(75):
        gh.add_comment(REPO, PR, f"c{i}", login="reviewer")

    def get(query: str) -> tuple[list[Any], str]:
        request = urllib.request.Request(
            f"{gh.url}/repos/{REPO}/issues/{PR}/comments{query}",
            headers={"Authorization": f"Bearer {TOKEN}"},
        )
        with urllib.request.urlopen(request) as response:
            assert response.headers["x-ratelimit-limit"] == "5000"
            return json.loads(response.read()), response.headers.get("link", "")

    page1, link1 = get("")
    page2, link2 = get("?page=2")
    everything, link_all = get("?per_page=500")
    assert len(page1) == 30 and len(page2) == 30 and len(everything) == 75
    assert 'rel="next"' in link1 and 'rel="last"' in link1 and 'rel="prev"' not in link1
    assert all(f'rel="{rel}"' in link2 for rel in ("prev", "next", "last", "first"))
    assert link_all == ""  # one page: GitHub omits the header
