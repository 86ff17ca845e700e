"""An in-memory forge: the second implementation of `rivet_ci.adapters.forge.Forge`.

It proves the seam: the sticky-comment policy (`rivet_ci.review.sticky`) runs over it exactly
as over GitHub (`tests/test_sticky_comment.py` runs the policy's tests against both). It
behaves as the protocol says a forge does: comments oldest first with increasing ids, a body
over `comment_limit` refused with `BodyTooLong`, a read-only token refused with `Forbidden`
on every write, `NotFound` for a comment that is gone. Every call is recorded in `calls`.
Its limit is deliberately not GitHub's, so a test passing on both shows the limit is the
forge's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from rivet_ci.adapters.forge import BodyTooLong, Forbidden, ForgeComment, ForgeError, NotFound
from rivet_ci.core.comment.view import LinkFor


class MemoryForgeError(ForgeError):  # the forge's own error classes, as GitHub's are
    forge = "Memory"


class MemoryForbidden(MemoryForgeError, Forbidden):  # noqa: N818 (the forge's word)
    pass


class MemoryNotFound(MemoryForgeError, NotFound):  # noqa: N818 (the forge's word)
    pass


class MemoryBodyTooLong(MemoryForgeError, BodyTooLong):  # noqa: N818 (the forge's word)
    pass


@dataclass
class MemoryThread:
    """One pull request's conversation: what the forge stores (shared by its tokens)."""

    head: str
    comments: list[ForgeComment] = field(default_factory=list)
    next_id: int = 1000

    def add(self, body: str, author: str | None) -> ForgeComment:
        self.next_id += 1
        comment = ForgeComment(id=self.next_id, body=body, author=author,
                               url=f"memory://pull/1#note-{self.next_id}")
        self.comments.append(comment)
        return comment


@dataclass
class MemoryForge:
    """The thread as one token sees it: `login` is whose comments it makes."""

    thread: MemoryThread
    login: str = "rivet-bot"
    writable: bool = True
    comment_limit: int = 1_000
    calls: list[str] = field(default_factory=list)
    # Called after each create (e.g. a concurrent run creating its own comment).
    after_create: Callable[[ForgeComment], None] | None = None

    def author(self) -> str:
        self.calls.append("author")
        return self.login

    def list_comments(self) -> list[ForgeComment]:
        self.calls.append("list")
        return list(self.thread.comments)

    def create_comment(self, body: str) -> ForgeComment:
        self.calls.append("create")
        self._check_write("POST", "/notes", body)
        created = self.thread.add(body, self.login)
        if self.after_create is not None:
            self.after_create(created)
        return created

    def update_comment(self, comment_id: int, body: str) -> ForgeComment:
        self.calls.append("update")
        self._check_write("PUT", f"/notes/{comment_id}", body)
        for i, comment in enumerate(self.thread.comments):
            if comment.id == comment_id:
                self.thread.comments[i] = updated = ForgeComment(
                    id=comment.id, body=body, author=comment.author, url=comment.url)
                return updated
        raise MemoryNotFound("Not Found", method="PUT", path=f"/notes/{comment_id}", status=404)

    def delete_comment(self, comment_id: int) -> None:
        self.calls.append("delete")
        self._check_write("DELETE", f"/notes/{comment_id}", "")
        kept = [c for c in self.thread.comments if c.id != comment_id]
        if len(kept) == len(self.thread.comments):
            raise MemoryNotFound("Not Found", method="DELETE", path=f"/notes/{comment_id}",
                                 status=404)
        self.thread.comments[:] = kept

    def head_sha(self) -> str:
        self.calls.append("head")
        return self.thread.head

    def links(self, sha: str) -> LinkFor:
        def link_for(path: str, line: int | None) -> str | None:
            return f"memory://blob/{sha}/{path}" + (f"#L{line}" if line else "")

        return link_for

    def _check_write(self, method: str, path: str, body: str) -> None:
        if not self.writable:
            raise MemoryForbidden("this token may not write", method=method, path=path,
                                  status=403)
        if len(body) > self.comment_limit:
            raise MemoryBodyTooLong("the body is too long", method=method, path=path,
                                    status=422)
