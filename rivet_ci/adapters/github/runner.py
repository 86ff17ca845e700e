"""GitHub Actions as a forge's runner (`rivet_ci.adapters.runners`): its marker, its public
names, GitHub's comment limit, links to a config line, and `rivet-ci action`.

Light on purpose: every process imports it before any command (no client, no models here).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import quote

from rivet_ci.adapters.runners import EntryCommand, ForgeRunner

if TYPE_CHECKING:
    from rivet_ci.core.comment.view import LinkFor

# GitHub rejects an issue comment longer than this many characters.
GITHUB_COMMENT_LIMIT = 65_536
DEFAULT_SERVER_URL = "https://github.com"


def blob_linker(server_url: str, repository: str, sha: str) -> LinkFor:
    """Links to a config line at `sha`: `<server>/<owner>/<repo>/blob/<sha>/<path>#L<line>`."""
    base = f"{server_url.rstrip('/')}/{quote(repository, safe='/')}/blob/{sha}/"

    def link_for(path: str, line: int | None) -> str | None:
        # Every character of a path that could end or change the link is percent-encoded.
        target = base + quote(path, safe="/")
        return f"{target}#L{line}" if line else target

    return link_for


def linker_from_environ(environ: Mapping[str, str], sha: str) -> LinkFor | None:
    """Links for `rivet-ci diff` when run where GITHUB_REPOSITORY is set; else none."""
    repository = environ.get("GITHUB_REPOSITORY", "").strip()
    if not repository or repository.count("/") != 1:
        return None
    server = environ.get("GITHUB_SERVER_URL", "").strip() or DEFAULT_SERVER_URL
    return blob_linker(server, repository, sha)


RUNNER = ForgeRunner(
    forge="GitHub",
    marker="GITHUB_ACTIONS",
    public_names=frozenset({
        "GITHUB_API_URL", "GITHUB_SERVER_URL", "GITHUB_GRAPHQL_URL", "ACTIONS_RESULTS_URL",
        "ACTIONS_CACHE_URL", "ACTIONS_ID_TOKEN_REQUEST_URL", "RUNNER_TRACKING_ID",
        "GITHUB_EVENT_PATH", "GITHUB_PATH",
    }),
    comment_limit=GITHUB_COMMENT_LIMIT,
    links_from_environ=linker_from_environ,
    entry=EntryCommand(
        name="action", module="rivet_ci.github_action.command",
        examples=("INPUT_FACTS=facts.yaml GITHUB_EVENT_PATH=event.json ... rivet-ci action",
                  "docker run --rm -v \"$PWD:/github/workspace\" -e GITHUB_EVENT_PATH ... "
                  "rivet-ci")),
)
