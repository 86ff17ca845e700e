"""The forge seam: what rivet-ci needs from a code-review host, with no host's names in it.

The sticky-comment policy (`rivet_ci.review.sticky`) runs over `Forge`, one pull request's
(merge request's) conversation on one host; GitHub's implementation is
`rivet_ci.adapters.github.forge.GitHubForge`, and the tests also run the policy over an
in-memory forge (`tests/support/memory_forge.py`). A forge's client raises the errors below
(its own subclasses, which keep its name in their messages), so the policy can tell a
read-only token or a body over the limit from an outage without knowing the host.

Error tree (every message carries method, URL path and status, never a token)::

    ForgeError           any failed call; .method .path .status .documentation_url
    ├── Unauthorized     the token is missing, expired or wrong
    ├── Forbidden        the token may not do this (a fork's read-only token)
    ├── NotFound         unknown repository, pull request or comment
    ├── BodyTooLong      the comment body is over the forge's limit
    ├── RateLimited      rate limited for longer than the client is willing to wait
    └── Unavailable      5xx or network errors on every attempt
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from rivet_ci.core.comment.view import LinkFor


class ForgeError(Exception):
    """A call to the forge failed; see the module docstring for the subclasses."""

    forge = "forge"  # the host's name, first in every message ("GitHub")
    hint = ""

    def __init__(
        self,
        message: str,
        *,
        method: str,
        path: str,
        status: int | None = None,
        documentation_url: str | None = None,
    ) -> None:
        self.method, self.path, self.status = method, path, status
        self.documentation_url = documentation_url
        where = f"{method} {path}" + (f" returned {status}" if status is not None else "")
        text = f"{self.forge} {where}: {message}"
        if self.hint:
            text += f". {self.hint}"
        if documentation_url:
            text += f" (see {documentation_url})"
        super().__init__(text)


class Unauthorized(ForgeError):  # noqa: N818 (the forge's word)
    pass


class Forbidden(ForgeError):  # noqa: N818 (the forge's word)
    pass


class NotFound(ForgeError):  # noqa: N818 (the forge's word)
    pass


class BodyTooLong(ForgeError):  # noqa: N818 (the forge's word)
    pass


class RateLimited(ForgeError):  # noqa: N818 (the forge's word)
    pass


class Unavailable(ForgeError):  # noqa: N818 (the forge's word)
    pass


@dataclass(frozen=True)
class ForgeComment:
    """A comment in a pull request's conversation, as the policy reads it."""

    id: int
    body: str
    author: str | None  # None for comments of deleted accounts
    url: str


class Forge(Protocol):
    """One pull request's conversation on one forge (list, create, update, delete, author,
    limit, links). Every method raises a `ForgeError` subclass on failure."""

    @property
    def comment_limit(self) -> int:
        """The most characters a comment body may hold on this forge."""

    def author(self) -> str:
        """The account comments made with this token are by (may ask the forge once)."""

    def list_comments(self) -> list[ForgeComment]:
        """Every comment of the pull request, oldest first (every page)."""

    def create_comment(self, body: str) -> ForgeComment:
        """A new comment; a create that failed ambiguously is not repeated if it took effect."""

    def update_comment(self, comment_id: int, body: str) -> ForgeComment:
        """Replace a comment's body."""

    def delete_comment(self, comment_id: int) -> None:
        """Delete a comment (`NotFound` when it is already gone)."""

    def head_sha(self) -> str:
        """The pull request's current head commit, as the forge knows it."""

    def links(self, sha: str) -> LinkFor:
        """Links to the lines of config files at commit `sha` on this forge."""
