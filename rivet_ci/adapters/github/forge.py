"""GitHub as a forge (`rivet_ci.adapters.forge.Forge`): one pull request's conversation.

A pull request's conversation comments are GitHub's issue comments; a body may hold 65,536
characters, and a line of a config links to `<server>/<owner>/<repo>/blob/<sha>/<path>#L<line>`
(GHES-aware through the server URL; both defined in `runner.py`). Comments posted with
Actions' `GITHUB_TOKEN` are by `github-actions[bot]`, which that token cannot learn from
`GET /user`.
"""

from __future__ import annotations

from rivet_ci.adapters.forge import ForgeComment
from rivet_ci.adapters.github.client import GitHubClient
from rivet_ci.adapters.github.models import Comment
from rivet_ci.adapters.github.runner import DEFAULT_SERVER_URL, RUNNER, blob_linker
from rivet_ci.core.comment.view import LinkFor

# Comments posted with Actions' GITHUB_TOKEN are authored by this bot; the token itself
# cannot read GET /user, so this is the author to look for when the login is unknown.
ACTIONS_BOT_LOGIN = "github-actions[bot]"


def _comment(comment: Comment) -> ForgeComment:
    return ForgeComment(id=comment.id, body=comment.body, author=comment.user_login,
                        url=comment.html_url)


class GitHubForge:
    """Pull request `number` of `repo` on GitHub, through `client`.

    `author`: whose comments are ours (default: the token's login, or `github-actions[bot]`
    when the token cannot read `GET /user`; pass `"<app-slug>[bot]"` for a GitHub App token).
    It is asked of GitHub only when the policy needs it, once.
    """

    comment_limit = RUNNER.comment_limit

    def __init__(self, client: GitHubClient, repo: str, number: int, *,
                 author: str | None = None, server_url: str = DEFAULT_SERVER_URL) -> None:
        self.client, self.repo, self.number = client, repo, number
        self.server_url = server_url
        self._author = author

    def author(self) -> str:
        if self._author is None:
            self._author = self.client.authenticated_login() or ACTIONS_BOT_LOGIN
        return self._author

    def list_comments(self) -> list[ForgeComment]:
        return [_comment(c) for c in self.client.list_issue_comments(self.repo, self.number)]

    def create_comment(self, body: str) -> ForgeComment:
        # (the author, when known, must match too for a comment found after a failed POST)
        return _comment(self.client.create_issue_comment(self.repo, self.number, body,
                                                         author=self._author))

    def update_comment(self, comment_id: int, body: str) -> ForgeComment:
        return _comment(self.client.update_issue_comment(self.repo, comment_id, body))

    def delete_comment(self, comment_id: int) -> None:
        self.client.delete_issue_comment(self.repo, comment_id)

    def head_sha(self) -> str:
        return self.client.get_pull(self.repo, self.number).head_sha

    def links(self, sha: str) -> LinkFor:
        return blob_linker(self.server_url, self.repo, sha)
