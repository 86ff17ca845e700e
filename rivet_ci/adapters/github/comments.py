"""The sticky pull-request comment: exactly one rivet-ci comment per gate id, kept up to date.

The comment is recognised by its marker (`rivet_ci.core.comment.marker`) and its author; `Behaviour`
says whether it is edited in place, recreated at the bottom, always new, or not posted; a body
GitHub rejects as too long falls back to the short body; a token that may not write (a pull
request from a fork) is an outcome (`FORBIDDEN`), not an error, so the caller can save the
comment for a trusted `workflow_run` workflow (`rivet-ci post`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

from rivet_ci.adapters.github.models import Comment
from rivet_ci.adapters.github.transport import (
    GitHubBodyTooLong,
    GitHubClient,
    GitHubError,
    GitHubForbidden,
)
from rivet_ci.core.comment.marker import (
    attach_marker,
    format_timestamp,
    make_marker,
    parse_leading_marker,
    parse_marker,
    same_apart_from_timestamp,
)
from rivet_ci.core.common.limits import GITHUB_COMMENT_LIMIT

# Comments posted with Actions' GITHUB_TOKEN are authored by this bot; the token itself
# cannot read GET /user, so this is the author to look for when the login is unknown.
ACTIONS_BOT_LOGIN = "github-actions[bot]"

_log = logging.getLogger(__name__)


class Behaviour(StrEnum):
    UPDATE = "update"  # edit our comment in place (create it the first time)
    RECREATE = "recreate"  # delete ours and post a new one at the bottom of the thread
    NEW = "new"  # always post a new comment
    OFF = "off"  # do not comment


class CommentAction(StrEnum):
    CREATED = "created"
    UPDATED = "updated"
    UNCHANGED = "unchanged"
    RECREATED = "recreated"
    SKIPPED_NEWER = "skipped_newer"
    SKIPPED_QUIET = "skipped_quiet"  # nothing changed and there was no comment to update
    OFF = "off"
    FORBIDDEN = "forbidden"  # token may not write: save the comment for a trusted workflow


@dataclass(frozen=True)
class CommentOutcome:
    action: CommentAction
    url: str | None = None
    comment_id: int | None = None
    used_short_body: bool = False
    detail: str = ""  # the GitHub error for FORBIDDEN


def upsert_comment(
    client: GitHubClient,
    *,
    repo: str,
    number: int,
    body: str,
    short_body: str,
    gate_id: str,
    head_sha: str,
    behaviour: Behaviour | str = Behaviour.UPDATE,
    is_newer: Callable[[str], bool] | None = None,
    author: str | None = None,
    timestamp: str | None = None,
    create: bool = True,
) -> CommentOutcome:
    """Keep this gate's comment on pull request ``number`` up to date.

    The marker for ``gate_id``/``head_sha``/``timestamp`` is put on the first line of
    ``body`` and ``short_body``, replacing any marker a template already rendered into them.
    ``timestamp`` defaults to that rendered marker's, else to now. ``short_body`` is posted
    instead when GitHub rejects ``body`` as too long.

    Our comment is one whose marker has ``gate_id`` and whose author is ``author``
    (default: the token's login, or ``github-actions[bot]`` when the token cannot read
    ``GET /user``; pass ``"<app-slug>[bot]"`` for a GitHub App token).

    ``is_newer(sha)`` says whether a comment rendered for head ``sha`` is newer than ours;
    such a comment is left alone (``SKIPPED_NEWER``). The default treats a comment as newer
    when it was rendered for the pull request's current head and we were not, which needs
    no git history and is right after force-pushes too.

    With ``create=False`` (a run where nothing changed, `comment-when: changed`) an existing
    comment is edited in place whatever ``behaviour`` says, and none is created
    (``SKIPPED_QUIET``).

    A 403 on any call returns ``FORBIDDEN`` instead of raising; other failures raise.
    """
    behaviour = Behaviour(behaviour)
    if behaviour is Behaviour.OFF:
        return CommentOutcome(CommentAction.OFF)
    if not create:
        behaviour = Behaviour.UPDATE
    if timestamp is None:
        rendered = parse_marker(body)
        timestamp = rendered.timestamp if rendered else format_timestamp(datetime.now(UTC))
    marker = make_marker(gate_id, head_sha, timestamp)
    full, short = attach_marker(body, marker), attach_marker(short_body, marker)
    newer = is_newer or _pull_head_is_newer(client, repo, number, head_sha)
    try:
        return _upsert(
            client,
            repo=repo,
            number=number,
            full=full,
            short=short,
            gate_id=gate_id,
            head_sha=head_sha,
            behaviour=behaviour,
            is_newer=newer,
            author=author,
            create=create,
        )
    except GitHubForbidden as exc:
        return CommentOutcome(CommentAction.FORBIDDEN, detail=str(exc))


def _upsert(
    client: GitHubClient,
    *,
    repo: str,
    number: int,
    full: str,
    short: str,
    gate_id: str,
    head_sha: str,
    behaviour: Behaviour,
    is_newer: Callable[[str], bool],
    author: str | None,
    create: bool = True,
) -> CommentOutcome:
    known: list[str] = [author] if author else []

    def post(action: CommentAction) -> CommentOutcome:
        comment, was_short = _with_fallback(
            lambda text: client.create_issue_comment(repo, number, text,
                                                     author=known[0] if known else None),
            full, short,
        )
        return CommentOutcome(action, comment.html_url, comment.id, was_short)

    if behaviour is Behaviour.NEW:
        return post(CommentAction.CREATED)
    login = author or client.authenticated_login() or ACTIONS_BOT_LOGIN
    known[:] = [login]
    ours = [c for c in client.list_issue_comments(repo, number) if _is_ours(c, login, gate_id)]
    for comment in ours:
        theirs = _marker_head(comment)
        if theirs != head_sha.lower() and is_newer(theirs):
            return CommentOutcome(CommentAction.SKIPPED_NEWER, comment.html_url, comment.id)
    if behaviour is Behaviour.RECREATE:
        for comment in ours:
            _delete(client, repo, comment.id)
        return _settle(client, post(CommentAction.RECREATED if ours else CommentAction.CREATED),
                       repo=repo, number=number, login=login, gate_id=gate_id, full=full,
                       short=short)
    if not ours:
        if not create:
            return CommentOutcome(CommentAction.SKIPPED_QUIET)
        return _settle(client, post(CommentAction.CREATED), repo=repo, number=number,
                       login=login, gate_id=gate_id, full=full, short=short)
    # Duplicates can exist (another tool, a retried POST); keep editing the oldest.
    existing = ours[0]
    if _unchanged(existing.body, full, short):
        return CommentOutcome(CommentAction.UNCHANGED, existing.html_url, existing.id)
    updated, was_short = _with_fallback(
        lambda text: client.update_issue_comment(repo, existing.id, text), full, short
    )
    return CommentOutcome(CommentAction.UPDATED, updated.html_url, updated.id, was_short)


def _delete(client: GitHubClient, repo: str, comment_id: int) -> None:
    """Delete a comment; one already gone (a concurrent run deleted it) is fine."""
    try:
        client.delete_issue_comment(repo, comment_id)
    except GitHubError as exc:
        if exc.status != 404:
            raise


def _settle(client: GitHubClient, created: CommentOutcome, *, repo: str, number: int,
            login: str, gate_id: str, full: str, short: str) -> CommentOutcome:
    """After creating a comment: converge with runs of the same gate on the same pull request
    that created one at the same time, to exactly one rivet-ci comment — the oldest. Each run
    lists the comments again and deletes every newer one of ours; a run whose own comment is
    not the oldest then writes its body into the oldest (as an update would have)."""
    ours = sorted((c for c in client.list_issue_comments(repo, number)
                   if _is_ours(c, login, gate_id)), key=lambda c: c.id)
    if len(ours) <= 1 or created.comment_id is None:
        return created
    keep = ours[0]
    for comment in ours[1:]:
        _delete(client, repo, comment.id)
    if keep.id == created.comment_id:
        return created
    if _unchanged(keep.body, full, short):
        return CommentOutcome(CommentAction.UNCHANGED, keep.html_url, keep.id)
    updated, was_short = _with_fallback(
        lambda text: client.update_issue_comment(repo, keep.id, text), full, short)
    return CommentOutcome(CommentAction.UPDATED, updated.html_url, updated.id, was_short)


def _with_fallback(send: Callable[[str], Comment], full: str, short: str) -> tuple[Comment, bool]:
    try:
        return send(full), False
    except GitHubBodyTooLong:
        _log.warning("comment body is over GitHub's limit; posting the short version")
        return send(short), True


def _is_ours(comment: Comment, login: str, gate_id: str) -> bool:
    marker = parse_leading_marker(comment.body)
    # Matching the author too keeps a user's quote of our marker from being edited.
    return marker is not None and marker.gate_id == gate_id and comment.user_login == login


def _marker_head(comment: Comment) -> str:
    marker = parse_leading_marker(comment.body)
    return marker.head_sha if marker is not None else ""


def _unchanged(existing: str, full: str, short: str) -> bool:
    if same_apart_from_timestamp(existing, full):
        return True
    # A body longer than the limit in code points is over it in any unit GitHub counts,
    # so the short body is what would be posted again.
    return len(full) > GITHUB_COMMENT_LIMIT and same_apart_from_timestamp(existing, short)


def _pull_head_is_newer(
    client: GitHubClient, repo: str, number: int, head_sha: str
) -> Callable[[str], bool]:
    current: list[str] = []  # fetched lazily: only needed when heads differ

    def is_newer(theirs: str) -> bool:
        if not current:
            current.append(client.get_pull(repo, number).head_sha.lower())
        return theirs == current[0] != head_sha.lower()

    return is_newer


def find_own_comment(
    client: GitHubClient, *, repo: str, number: int, gate_id: str, author: str | None = None,
) -> Comment | None:
    """This gate's existing comment on the pull request (the one `upsert_comment` edits), or
    None. Recognised exactly as `upsert_comment` does: our marker and our author."""
    login = author or client.authenticated_login() or ACTIONS_BOT_LOGIN
    ours = [c for c in client.list_issue_comments(repo, number) if _is_ours(c, login, gate_id)]
    return ours[0] if ours else None
