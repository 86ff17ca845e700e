"""The sticky pull-request comment: exactly one rivet-ci comment per gate id, kept up to date —
on any forge (`rivet_ci.adapters.forge.Forge`; GitHub's is `adapters/github/forge.py`).

The comment is recognised by its marker (`rivet_ci.core.comment.marker`) and its author;
`Behaviour` says whether it is edited in place, recreated at the bottom, always new, or not
posted; a body the forge rejects as too long falls back to the short body; a token that may
not write (a pull request from a fork) is an outcome (`FORBIDDEN`), not an error: a trusted
workflow renders the comment from the run's plan.json and posts it (`rivet-ci post`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

from rivet_ci.adapters.forge import BodyTooLong, Forbidden, Forge, ForgeComment, NotFound
from rivet_ci.core.comment.marker import (
    attach_marker,
    format_timestamp,
    make_marker,
    parse_leading_marker,
    parse_marker,
    same_apart_from_timestamp,
)

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


# Outcomes after which the pull request shows this run's comment.
SHOWN = frozenset({CommentAction.CREATED, CommentAction.UPDATED, CommentAction.UNCHANGED,
                   CommentAction.RECREATED})


@dataclass(frozen=True)
class CommentOutcome:
    action: CommentAction
    url: str | None = None
    comment_id: int | None = None
    used_short_body: bool = False
    detail: str = ""  # the forge's error for FORBIDDEN

    @property
    def shown(self) -> bool:
        """Whether the pull request now shows this run's comment."""
        return self.action in SHOWN


def upsert_comment(
    forge: Forge,
    *,
    body: str,
    short_body: str,
    gate_id: str,
    head_sha: str,
    behaviour: Behaviour | str = Behaviour.UPDATE,
    is_newer: Callable[[str], bool] | None = None,
    timestamp: str | None = None,
    create: bool = True,
) -> CommentOutcome:
    """Keep this gate's comment on the forge's pull request up to date.

    The marker for ``gate_id``/``head_sha``/``timestamp`` is put on the first line of
    ``body`` and ``short_body``, replacing any marker a template already rendered into them.
    ``timestamp`` defaults to that rendered marker's, else to now. ``short_body`` is posted
    instead when the forge rejects ``body`` as too long.

    Our comment is one whose marker has ``gate_id`` and whose author is the forge's
    ``author()``.

    ``is_newer(sha)`` says whether a comment rendered for head ``sha`` is newer than ours;
    such a comment is left alone (``SKIPPED_NEWER``). The default treats a comment as newer
    when it was rendered for the pull request's current head and we were not, which needs
    no git history and is right after force-pushes too.

    With ``create=False`` (a run where nothing changed, `comment-when: changed`) an existing
    comment is edited in place whatever ``behaviour`` says, and none is created
    (``SKIPPED_QUIET``).

    A `Forbidden` on any call returns ``FORBIDDEN`` instead of raising; other failures raise.
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
    thread = _Thread(forge, gate_id, attach_marker(body, marker),
                     attach_marker(short_body, marker))
    newer = is_newer or _head_is_newer(forge, head_sha)
    try:
        return thread.upsert(head_sha=head_sha, behaviour=behaviour, is_newer=newer,
                             create=create)
    except Forbidden as exc:
        return CommentOutcome(CommentAction.FORBIDDEN, detail=str(exc))


@dataclass(frozen=True)
class _Thread:
    """The policy's view of one pull request: our comments, and the two bodies to post."""

    forge: Forge
    gate_id: str
    full: str
    short: str

    def upsert(self, *, head_sha: str, behaviour: Behaviour, is_newer: Callable[[str], bool],
               create: bool) -> CommentOutcome:
        if behaviour is Behaviour.NEW:
            return self._post(CommentAction.CREATED)
        ours = self._ours()
        for comment in ours:
            theirs = _marker_head(comment)
            if theirs != head_sha.lower() and is_newer(theirs):
                return CommentOutcome(CommentAction.SKIPPED_NEWER, comment.url, comment.id)
        if behaviour is Behaviour.RECREATE:
            for comment in ours:
                self._delete(comment.id)
            return self._settle(self._post(CommentAction.RECREATED if ours
                                           else CommentAction.CREATED))
        if not ours:
            if not create:
                return CommentOutcome(CommentAction.SKIPPED_QUIET)
            return self._settle(self._post(CommentAction.CREATED))
        # Duplicates can exist (another tool, a retried POST); keep editing the oldest.
        return self._edit(ours[0])

    def _ours(self) -> list[ForgeComment]:
        login = self.forge.author()
        return [c for c in self.forge.list_comments() if _is_ours(c, login, self.gate_id)]

    def _post(self, action: CommentAction) -> CommentOutcome:
        comment, was_short = self._with_fallback(self.forge.create_comment)
        return CommentOutcome(action, comment.url, comment.id, was_short)

    def _edit(self, existing: ForgeComment) -> CommentOutcome:
        if self._unchanged(existing.body):
            return CommentOutcome(CommentAction.UNCHANGED, existing.url, existing.id)
        updated, was_short = self._with_fallback(
            lambda text: self.forge.update_comment(existing.id, text))
        return CommentOutcome(CommentAction.UPDATED, updated.url, updated.id, was_short)

    def _delete(self, comment_id: int) -> None:
        """Delete a comment; one already gone (a concurrent run deleted it) is fine."""
        with contextlib.suppress(NotFound):
            self.forge.delete_comment(comment_id)

    def _settle(self, created: CommentOutcome) -> CommentOutcome:
        """After creating a comment: converge with runs of the same gate on the same pull
        request that created one at the same time, to exactly one rivet-ci comment — the
        oldest. Each run lists the comments again and deletes every newer one of ours; a run
        whose own comment is not the oldest then writes its body into the oldest (as an update
        would have)."""
        ours = sorted(self._ours(), key=lambda c: c.id)
        if len(ours) <= 1 or created.comment_id is None:
            return created
        keep = ours[0]
        for comment in ours[1:]:
            self._delete(comment.id)
        if keep.id == created.comment_id:
            return created
        return self._edit(keep)

    def _with_fallback(self, send: Callable[[str], ForgeComment]) -> tuple[ForgeComment, bool]:
        try:
            return send(self.full), False
        except BodyTooLong:
            _log.warning("comment body is over the forge's limit; posting the short version")
            return send(self.short), True

    def _unchanged(self, existing: str) -> bool:
        if same_apart_from_timestamp(existing, self.full):
            return True
        # A body longer than the limit in code points is over it in any unit the forge
        # counts, so the short body is what would be posted again.
        return (len(self.full) > self.forge.comment_limit
                and same_apart_from_timestamp(existing, self.short))


def _is_ours(comment: ForgeComment, login: str, gate_id: str) -> bool:
    marker = parse_leading_marker(comment.body)
    # Matching the author too keeps a user's quote of our marker from being edited.
    return marker is not None and marker.gate_id == gate_id and comment.author == login


def _marker_head(comment: ForgeComment) -> str:
    marker = parse_leading_marker(comment.body)
    return marker.head_sha if marker is not None else ""


def _head_is_newer(forge: Forge, head_sha: str) -> Callable[[str], bool]:
    current: list[str] = []  # fetched lazily: only needed when heads differ

    def is_newer(theirs: str) -> bool:
        if not current:
            current.append(forge.head_sha().lower())
        return theirs == current[0] != head_sha.lower()

    return is_newer


def find_own_comment(forge: Forge, *, gate_id: str) -> ForgeComment | None:
    """This gate's existing comment on the pull request (the one `upsert_comment` edits), or
    None. Recognised exactly as `upsert_comment` does: our marker and our author."""
    login = forge.author()
    ours = [c for c in forge.list_comments() if _is_ours(c, login, gate_id)]
    return ours[0] if ours else None
