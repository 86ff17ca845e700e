"""The sticky-comment policy (`rivet_ci.review.sticky`) over the forge seam, run against two
forges: the in-memory one (`tests/support/memory_forge.py`) and GitHub through its client
against the local fake GitHub (`tests/support/fake_github.py`). Each test is the same policy
assertion on both: one rivet-ci comment per gate, edited in place, recreated, left alone when
newer, the short body past the forge's own limit, a read-only token as an outcome.
(GitHub's wire details — pagination links, headers, retries — are in test_github_client.py.)
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from support.fake_github import FakeGitHub
from support.memory_forge import MemoryForge, MemoryThread

from rivet_ci.adapters.forge import BodyTooLong, Forge, ForgeComment
from rivet_ci.adapters.github.client import GitHubClient, github_wire
from rivet_ci.adapters.github.forge import ACTIONS_BOT_LOGIN, GitHubForge
from rivet_ci.core.comment.marker import make_marker, parse_marker
from rivet_ci.review.sticky import (
    Behaviour,
    CommentAction,
    CommentOutcome,
    find_own_comment,
    upsert_comment,
)

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


@dataclass
class Stored:
    id: int
    body: str
    author: str | None


@dataclass
class Backend:
    """One forge as the tests arrange and inspect it."""

    kind: str
    forge: Forge
    gh: FakeGitHub | None = None
    thread: MemoryThread | None = None
    extra: list[Forge] = field(default_factory=list)

    def comments(self) -> list[Stored]:
        if self.gh is not None:
            return [Stored(c["id"], c["body"], c["login"]) for c in self.gh.comments(REPO, PR)]
        assert self.thread is not None
        return [Stored(c.id, c.body, c.author) for c in self.thread.comments]

    def ours(self, author: str = "rivet-bot") -> list[Stored]:
        return [c for c in self.comments() if c.author == author and parse_marker(c.body)]

    def add_comment(self, body: str, author: str) -> int:
        if self.gh is not None:
            return self.gh.add_comment(REPO, PR, body, login=author)
        assert self.thread is not None
        return self.thread.add(body, author).id

    def set_head(self, sha: str) -> None:
        if self.gh is not None:
            self.gh.set_head(REPO, PR, sha)
        else:
            assert self.thread is not None
            self.thread.head = sha

    def count(self, call: str) -> int:
        """Calls of one kind: create, update, delete, list, head."""
        if self.gh is not None:
            method = {"create": "POST", "update": "PATCH", "delete": "DELETE",
                      "list": "GET", "head": "GET"}[call]
            requests = self.gh.requests_for(method)
            if call == "list":
                return sum(1 for r in requests if r.path.endswith("/comments"))
            if call == "head":
                return sum(1 for r in requests if r.path == f"/repos/{REPO}/pulls/{PR}")
            return len(requests)
        assert isinstance(self.forge, MemoryForge)
        return self.forge.calls.count(call)

    def no_calls(self) -> bool:
        if self.gh is not None:
            return self.gh.requests == []
        assert isinstance(self.forge, MemoryForge)
        return self.forge.calls == []

    @property
    def limit(self) -> int:
        return self.forge.comment_limit

    def read_only(self) -> Forge:
        """The same pull request through a token that may not write (a fork's)."""
        if self.gh is not None:
            self.gh.add_token("ghs_fork", login=ACTIONS_BOT_LOGIN, can_read_user=False,
                              can_write=False)
            client = GitHubClient(github_wire(api_url=self.gh.url, token="ghs_fork",
                                              sleep=lambda _: None, clock=lambda: NOW))
            return GitHubForge(client, REPO, PR)
        assert self.thread is not None
        return MemoryForge(self.thread, login=ACTIONS_BOT_LOGIN, writable=False)


@pytest.fixture(params=["memory", "github"])
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    if request.param == "memory":
        thread = MemoryThread(head=SHA1)
        yield Backend("memory", MemoryForge(thread), thread=thread)
        return
    with FakeGitHub(clock=lambda: NOW) as gh:
        gh.add_token(TOKEN, login="rivet-bot")
        gh.add_pull(REPO, PR, head_sha=SHA1)
        client = GitHubClient(github_wire(api_url=gh.url, token=TOKEN, sleep=lambda _: None,
                                          clock=lambda: NOW))
        yield Backend("github", GitHubForge(client, REPO, PR), gh=gh)
        assert gh.crashes == []


def upsert(forge: Forge, **overrides: Any) -> CommentOutcome:
    args: dict[str, Any] = {"body": BODY, "short_body": SHORT, "gate_id": "default",
                            "head_sha": SHA1, "timestamp": T1}
    return upsert_comment(forge, **{**args, **overrides})


def test_first_run_creates_one_comment(backend: Backend) -> None:
    outcome = upsert(backend.forge)

    [comment] = backend.comments()
    assert outcome.action is CommentAction.CREATED
    assert outcome.shown
    assert outcome.comment_id == comment.id
    assert comment.body == f"{make_marker('default', SHA1, T1)}\n{BODY}"
    assert comment.author == "rivet-bot"


def test_a_marker_already_in_the_body_is_replaced_not_doubled(backend: Backend) -> None:
    rendered = f"{make_marker('default', SHA1, T2)}\n{BODY}"  # as a template renders it

    upsert(backend.forge, body=rendered, timestamp=None)

    [comment] = backend.comments()
    assert comment.body == rendered
    assert comment.body.count("rivet-ci:comment") == 1


def test_new_head_edits_the_same_comment(backend: Backend) -> None:
    first = upsert(backend.forge)
    backend.set_head(SHA2)

    second = upsert(backend.forge, head_sha=SHA2, timestamp=T2, body=BODY + "One more.\n")

    [comment] = backend.comments()
    assert second.action is CommentAction.UPDATED
    assert second.comment_id == first.comment_id == comment.id
    marker = parse_marker(comment.body)
    assert marker is not None and marker.head_sha == SHA2
    assert comment.body.endswith("One more.\n")
    assert backend.count("update") == 1


def test_identical_rerun_sends_no_update(backend: Backend) -> None:
    first = upsert(backend.forge)

    rerun = upsert(backend.forge, timestamp=T2)

    assert rerun.action is CommentAction.UNCHANGED
    assert rerun.comment_id == first.comment_id
    assert backend.count("update") == 0


def test_same_body_on_a_new_head_still_updates_the_marker(backend: Backend) -> None:
    upsert(backend.forge)
    backend.set_head(SHA2)

    assert upsert(backend.forge, head_sha=SHA2).action is CommentAction.UPDATED


def test_comment_from_a_newer_head_is_not_overwritten(backend: Backend) -> None:
    backend.set_head(SHA2)
    newer = upsert(backend.forge, head_sha=SHA2, body="newer result\n")

    stale = upsert(backend.forge, head_sha=SHA1, body="stale result\n", timestamp=T2)

    assert stale.action is CommentAction.SKIPPED_NEWER
    assert not stale.shown
    assert stale.comment_id == newer.comment_id
    assert backend.count("update") == 0
    assert backend.comments()[0].body.endswith("newer result\n")


def test_comment_from_an_older_head_is_overwritten(backend: Backend) -> None:
    upsert(backend.forge, head_sha=SHA1)
    backend.set_head(SHA2)

    assert upsert(backend.forge, head_sha=SHA2, body="new\n").action is CommentAction.UPDATED


@pytest.mark.parametrize(("newer", "action"), [(True, "skipped_newer"), (False, "updated")])
def test_caller_can_decide_what_is_newer(backend: Backend, newer: bool, action: str) -> None:
    upsert(backend.forge, head_sha=SHA2)
    asked: list[str] = []

    def is_newer(sha: str) -> bool:
        asked.append(sha)
        return newer

    outcome = upsert(backend.forge, head_sha=SHA1, body="other\n", is_newer=is_newer)

    assert outcome.action == action
    assert asked == [SHA2]
    assert backend.count("head") == 0  # the forge was not asked for the head


def test_other_authors_and_other_gates_are_left_alone(backend: Backend) -> None:
    quoted = f"> {make_marker('default', SHA1, T1)}\n> copied from the bot"
    backend.add_comment(quoted, "mallory")
    nightly = make_marker("nightly", SHA1, T1) + "\nnightly"
    backend.add_comment(nightly, "rivet-bot")

    outcome = upsert(backend.forge, body="fresh\n")

    assert outcome.action is CommentAction.CREATED
    bodies = [c.body for c in backend.comments()]
    assert bodies[:2] == [quoted, nightly]
    assert len(bodies) == 3


def test_recreate_deletes_ours_and_posts_anew(backend: Backend) -> None:
    first = upsert(backend.forge, behaviour="recreate")
    backend.add_comment("a review in between", "reviewer")

    second = upsert(backend.forge, behaviour=Behaviour.RECREATE, timestamp=T2)

    assert first.action is CommentAction.CREATED
    assert second.action is CommentAction.RECREATED
    assert second.comment_id != first.comment_id
    assert [c.id for c in backend.ours()] == [second.comment_id]
    assert backend.comments()[-1].id == second.comment_id  # now at the bottom
    assert backend.count("delete") == 1


def test_new_always_posts_without_listing(backend: Backend) -> None:
    outcomes = [upsert(backend.forge, behaviour="new") for _ in range(2)]

    assert [o.action for o in outcomes] == [CommentAction.CREATED] * 2
    assert len(backend.ours()) == 2
    assert backend.count("list") == 0


def test_off_makes_no_call(backend: Backend) -> None:
    assert upsert(backend.forge, behaviour="off").action is CommentAction.OFF
    assert backend.no_calls()


def test_unknown_behaviour_is_a_value_error(backend: Backend) -> None:
    with pytest.raises(ValueError, match="'sometimes'"):
        upsert(backend.forge, behaviour="sometimes")


def test_quiet_run_creates_nothing_and_edits_what_is_there(backend: Backend) -> None:
    quiet = upsert(backend.forge, create=False)
    assert quiet.action is CommentAction.SKIPPED_QUIET
    assert backend.comments() == []

    upsert(backend.forge)
    edited = upsert(backend.forge, body="edited\n", behaviour="recreate", create=False)
    assert edited.action is CommentAction.UPDATED  # in place, whatever `behaviour` says
    assert backend.count("delete") == 0


def test_a_body_over_the_forges_limit_falls_back_to_the_short_body(backend: Backend) -> None:
    too_long = "x" * (backend.limit + 1)  # the forge's own limit (not GitHub's on memory)

    outcome = upsert(backend.forge, body=too_long)

    assert outcome.action is CommentAction.CREATED
    assert outcome.used_short_body
    [comment] = backend.comments()
    assert comment.body == f"{make_marker('default', SHA1, T1)}\n{SHORT}"
    assert backend.count("create") == 2


def test_too_long_update_falls_back_and_reruns_stay_quiet(backend: Backend) -> None:
    upsert(backend.forge)
    too_long = "y" * (backend.limit + 1)
    updated = upsert(backend.forge, body=too_long)
    rerun = upsert(backend.forge, body=too_long, timestamp=T2)

    assert (updated.action, updated.used_short_body) == (CommentAction.UPDATED, True)
    assert backend.ours()[0].body.endswith(SHORT)
    assert rerun.action is CommentAction.UNCHANGED
    assert backend.count("update") == 2  # the rejected full body, then the short one


def test_short_body_too_long_as_well_raises(backend: Backend) -> None:
    with pytest.raises(BodyTooLong):
        upsert(backend.forge, body="x" * (backend.limit + 1),
               short_body="y" * (backend.limit + 1))


def test_read_only_token_gives_the_forbidden_outcome(backend: Backend) -> None:
    outcome = upsert(backend.read_only())

    assert outcome.action is CommentAction.FORBIDDEN
    assert not outcome.shown
    assert outcome.detail
    assert backend.comments() == []


def test_find_own_comment_is_the_one_upsert_edits(backend: Backend) -> None:
    backend.add_comment(make_marker("default", SHA1, T1) + "\nquoted", "mallory")
    assert find_own_comment(backend.forge, gate_id="default") is None

    created = upsert(backend.forge)

    found = find_own_comment(backend.forge, gate_id="default")
    assert isinstance(found, ForgeComment)
    assert found.id == created.comment_id
    assert find_own_comment(backend.forge, gate_id="nightly") is None


def test_runs_creating_at_once_converge_on_the_oldest() -> None:
    # A concurrent run of the same gate creates its comment right after ours (memory only:
    # the fake GitHub cannot interleave two clients inside one upsert).
    thread = MemoryThread(head=SHA1)
    other = MemoryForge(thread)
    forge = MemoryForge(thread)

    def concurrent_run(_ours: ForgeComment) -> None:
        forge.after_create = None
        other.create_comment(make_marker("default", SHA1, T2) + "\nthe other run\n")

    forge.after_create = concurrent_run

    outcome = upsert(forge)

    assert outcome.action is CommentAction.CREATED
    [kept] = [c for c in thread.comments if parse_marker(c.body)]
    assert kept.id == outcome.comment_id  # ours is the oldest: the other run's is deleted
