"""GitHub's REST endpoints rivet-ci calls, over the forge-neutral wire (`rivet_ci.adapters.http`).

Responsible for what is GitHub's (github.com or a GitHub Enterprise Server base URL such as
``https://ghe.example/api/v3``): its authentication and API-version headers, how it signals a
rate limit, what its errors mean, and its endpoints. Retries, deadlines, redirects and
pagination are the wire's. What to post is decided elsewhere: the sticky comment in
`rivet_ci.review.sticky` over `rivet_ci.adapters.github.forge.GitHubForge`, finding a run's
pull request in `rivet_ci.adapters.github.pulls`; the API's data in
`rivet_ci.adapters.github.models`.

Exception tree (each also the forge-neutral class of `rivet_ci.adapters.forge`)::

    GitHubError              any failed call; .method .path .status .documentation_url
    ├── GitHubUnauthorized   401: the token is missing, expired or wrong
    ├── GitHubForbidden      403 that is not a rate limit, e.g. a read-only token on a fork PR
    ├── GitHubNotFound       404: unknown repository, pull request or comment
    ├── GitHubBodyTooLong    422: comment body over GitHub's 65,536-character limit
    ├── GitHubRateLimited    rate limited for longer than the client is willing to wait
    └── GitHubUnavailable    5xx or network errors on every attempt

Rate limits: 429 and rate-limit 403s wait for ``Retry-After``, else until
``x-ratelimit-reset`` when ``x-ratelimit-remaining`` is 0, else a minute, as GitHub's
rate-limit guide asks. A POST that fails ambiguously (5xx or a network error: the comment may
have been created) is retried only after listing the comments and finding no comment with
exactly that body, so a 502 after a successful create never leaves a duplicate.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar
from urllib.parse import quote, urlsplit

from pydantic import ValidationError

from rivet_ci.adapters import forge
from rivet_ci.adapters.github.models import Comment, PullRequest
from rivet_ci.adapters.http import (
    REDIRECTS,
    HttpTransport,
    Response,
    WireOptions,
    WireRules,
    origin,
    retry_after,
)
from rivet_ci.core.common.patterns import COMMIT_SHA, COMMIT_SHA_PREFIX, REPOSITORY
from rivet_ci.errors import UsageError

if TYPE_CHECKING:
    from typing_extensions import Unpack

API_VERSION = "2022-11-28"
# What `GET /repos/{repo}/compare/{base}...{head}` answers in `status`.
COMPARE_STATUSES = frozenset({"identical", "ahead", "behind", "diverged"})

_T = TypeVar("_T")


# --- errors -------------------------------------------------------------------------------


class GitHubError(forge.ForgeError):
    """A GitHub call failed; see the module docstring for the subclasses."""

    forge = "GitHub"


class GitHubUnauthorized(GitHubError, forge.Unauthorized):  # noqa: N818 (names the callers use)
    hint = "Check that the token is set and has not expired"


class GitHubForbidden(GitHubError, forge.Forbidden):  # noqa: N818 (names the callers use)
    hint = (
        "The token may not write here: pull requests from forks get a read-only token, so "
        "save the comment to a file and post it from a workflow_run workflow"
    )


class GitHubNotFound(GitHubError, forge.NotFound):  # noqa: N818 (names the callers use)
    pass


class GitHubBodyTooLong(GitHubError, forge.BodyTooLong):  # noqa: N818 (names the callers use)
    pass


class GitHubRateLimited(GitHubError, forge.RateLimited):  # noqa: N818 (names the callers use)
    hint = "Retry later, or spread the jobs that share this token"


class GitHubUnavailable(GitHubError, forge.Unavailable):  # noqa: N818 (names the callers use)
    hint = "GitHub may be having an outage; rerun the job later"


# --- GitHub on the wire ---------------------------------------------------------------------


def _error_for(status: int, message: str) -> type[GitHubError]:
    if status == 422 and "is too long" in message.lower():
        return GitHubBodyTooLong
    return {401: GitHubUnauthorized, 403: GitHubForbidden,
            404: GitHubNotFound}.get(status, GitHubError)


def _rate_limit_wait(response: Response, attempt: int, now: float) -> float | None:
    """How long GitHub's rate-limit guide says to wait, or None when it is no rate limit."""
    status, headers = response.status, response.headers
    if not (status == 429 or (status == 403 and _is_rate_limit(response))):
        return None
    waited = retry_after(headers, now)
    if waited is not None:
        return waited
    if headers.get("x-ratelimit-remaining") == "0" and "x-ratelimit-reset" in headers:
        # +1 s: the reset is whole epoch seconds and runner clocks drift a little.
        return max(float(headers["x-ratelimit-reset"]) - now, 0.0) + 1
    # GitHub: wait at least a minute, then exponentially longer.
    return 60.0 * 2.0 ** (attempt - 1)


def github_rules(token: str) -> WireRules:
    return WireRules(
        name="GitHub",
        headers={"Accept": "application/vnd.github+json",
                 "X-GitHub-Api-Version": API_VERSION,
                 "Authorization": f"Bearer {token}"},
        unavailable=GitHubUnavailable, rate_limited=GitHubRateLimited, error_for=_error_for,
        rate_limit_wait=_rate_limit_wait, base_error=GitHubError)


class GitHubSetupError(UsageError, ValueError):
    """The client cannot be built (bad API URL, unusable token): a setup error, exit code 2."""


def github_wire(*, api_url: str, token: str, **options: Unpack[WireOptions]) -> HttpTransport:
    """The wire to GitHub's REST API at `api_url` with `token`: GitHub's rules
    (`github_rules`) over the one transport (`rivet_ci.adapters.http`, which `options` tune:
    the run's `deadline`, ...). Raises `GitHubSetupError` for an unusable URL or token."""
    # A token read from a file often ends in a newline; anything else unprintable would
    # make http.client raise an error that quotes the header, token included.
    token = token.strip()
    if not token:
        raise GitHubSetupError("a GitHub token is required")
    if not token.isprintable() or any(c.isspace() for c in token):
        raise GitHubSetupError("the GitHub token contains whitespace or control characters")
    try:
        scheme, netloc = origin(api_url)
        _ = urlsplit(api_url).port  # "http://host:x" or "http://[::1" raise here
    except ValueError as exc:
        raise GitHubSetupError(f"invalid GitHub API URL {api_url!r}: {exc}") from None
    if scheme not in ("http", "https") or not netloc:
        raise GitHubSetupError(
            f"invalid GitHub API URL {api_url!r}: expected an http(s) URL with a host")
    return HttpTransport(api_url, github_rules(token), **options)


class GitHubClient:
    """A small GitHub REST client over the wire it is given (`github_wire`: production and the
    tests build it the same way); every method raises a `GitHubError` subclass on failure."""

    def __init__(self, wire: HttpTransport) -> None:
        if not issubclass(wire.rules.base_error, GitHubError):
            raise TypeError(f"a GitHubClient needs GitHub's wire, not {wire.rules.name}'s")
        self._wire = wire
        self.api_url = wire.api_url

    def __repr__(self) -> str:
        return f"GitHubClient(api_url={self.api_url!r}, token='***')"

    # -- endpoints ---------------------------------------------------------------------

    def authenticated_login(self) -> str | None:
        """The token's login, or None when the token may not read ``GET /user``.

        Actions' GITHUB_TOKEN and GitHub App installation tokens get 403 there.
        """
        try:
            data = self._wire.request("GET", "/user").json()
        except (GitHubForbidden, GitHubNotFound):
            return None
        login = data.get("login") if isinstance(data, dict) else None
        return str(login) if login else None

    def list_issue_comments(self, repo: str, number: int) -> list[Comment]:
        path = f"/repos/{_repo(repo)}/issues/{int(number)}/comments"
        return [self._parse(Comment.from_api, item, "GET", path)
                for item in self._wire.paginate(path)]

    def create_issue_comment(self, repo: str, number: int, body: str, *,
                             author: str | None = None) -> Comment:
        """Create a comment; after an ambiguous failure, find it before creating it again.

        `author` (when known) must also match for a listed comment to count as ours.
        """
        path = f"/repos/{_repo(repo)}/issues/{int(number)}/comments"
        wanted = body.replace("\r\n", "\n")
        attempts = self._wire.max_attempts
        for attempt in range(1, attempts + 1):
            if attempt > 1:
                for comment in self.list_issue_comments(repo, number):
                    if (comment.body.replace("\r\n", "\n") == wanted
                            and (author is None or comment.user_login == author)):
                        return comment  # the failed attempt did create it
            try:
                data = self._wire.request("POST", path, {"body": body},
                                          ambiguous_retry=False).json()
            except GitHubUnavailable:
                if attempt == attempts:
                    raise
                self._wire.pause(2.0 ** (attempt - 1), "POST", path)
                continue
            return self._parse(Comment.from_api, data, "POST", path)
        raise AssertionError("unreachable")  # pragma: no cover

    def update_issue_comment(self, repo: str, comment_id: int, body: str) -> Comment:
        path = f"/repos/{_repo(repo)}/issues/comments/{int(comment_id)}"
        data = self._wire.request("PATCH", path, {"body": body}).json()
        return self._parse(Comment.from_api, data, "PATCH", path)

    def delete_issue_comment(self, repo: str, comment_id: int) -> None:
        self._wire.request("DELETE", f"/repos/{_repo(repo)}/issues/comments/{int(comment_id)}")

    def get_pull(self, repo: str, number: int) -> PullRequest:
        path = f"/repos/{_repo(repo)}/pulls/{int(number)}"
        return self._parse(PullRequest.from_api, self._wire.request("GET", path).json(), "GET",
                           path)

    def pulls_for_head(
        self, repo: str, *, head_owner: str, head_branch: str, state: str = "open"
    ) -> list[PullRequest]:
        """Pull requests whose head is ``head_owner:head_branch`` (works for forks)."""
        path = f"/repos/{_repo(repo)}/pulls"
        query = {"head": f"{head_owner}:{head_branch}", "state": state}
        items = self._wire.paginate(path, query)
        return [self._parse(PullRequest.from_api, item, "GET", path) for item in items]

    def pulls_for_commit(self, repo: str, sha: str) -> list[PullRequest]:
        """Pull requests associated with a commit; finds nothing for fork-only commits."""
        if not COMMIT_SHA_PREFIX.fullmatch(sha.lower()):
            raise ValueError(f"not a commit sha: {sha!r}")
        path = f"/repos/{_repo(repo)}/commits/{sha}/pulls"
        try:
            items = self._wire.paginate(path)
        except GitHubError as exc:
            if exc.status == 422:  # "No commit found for SHA": nothing is associated with it
                return []
            raise
        return [self._parse(PullRequest.from_api, item, "GET", path) for item in items]

    def list_artifacts(self, repo: str, *, name: str, limit: int = 1000) -> list[dict[str, Any]]:
        """`GET /repos/{repo}/actions/artifacts?name=NAME`, every page (at most `limit`
        artifacts). GitHub wraps each page in `{"total_count": n, "artifacts": [...]}`."""
        path = f"/repos/{_repo(repo)}/actions/artifacts"
        items: list[dict[str, Any]] = []
        for response in self._wire.pages(self._wire.url(path, {"name": name,
                                                               "per_page": 100})):
            page = response.json()
            if not isinstance(page, dict) or not isinstance(page.get("artifacts"), list):
                self._unexpected("GET", path, "expected an object with `artifacts`")
            items.extend(a for a in page["artifacts"] if isinstance(a, dict))
            if len(items) >= limit:
                break
        return items[:limit]

    def get_workflow_run_json(self, repo: str, run_id: int) -> dict[str, Any]:
        """`GET /repos/{repo}/actions/runs/{run_id}` as GitHub returns it."""
        path = f"/repos/{_repo(repo)}/actions/runs/{int(run_id)}"
        data = self._wire.request("GET", path).json()
        if not isinstance(data, dict):
            self._unexpected("GET", path, "expected a JSON object")
        return data

    def branch_head(self, repo: str, branch: str) -> str:
        """The commit branch `branch` points at: `GET /repos/{repo}/branches/{branch}` (a
        branch, never a tag of the same name)."""
        path = f"/repos/{_repo(repo)}/branches/{quote(branch, safe='/')}"
        data = self._wire.request("GET", path).json()
        sha = (data.get("commit") or {}).get("sha") if isinstance(data, dict) else None
        if not isinstance(sha, str) or not COMMIT_SHA.fullmatch(sha):
            self._unexpected("GET", path, "expected `commit.sha`, a full commit sha")
        return sha

    def compare_status(self, repo: str, base: str, head: str) -> str:
        """How commit `head` stands to commit `base`: `GET /repos/{repo}/compare/{base}...{head}`
        answers `identical`, `ahead` (`head` has commits `base` lacks, and lacks none of its:
        `base` is an ancestor of `head`), `behind` or `diverged`. One commit a page (the status
        is the comparison's, not the page's)."""
        for sha in (base, head):
            if not COMMIT_SHA.fullmatch(sha):
                raise ValueError(f"not a full commit sha: {sha!r:.80}")
        path = f"/repos/{_repo(repo)}/compare/{base}...{head}"
        data = self._wire.request("GET", self._wire.url(path, {"per_page": 1})).json()
        status = data.get("status") if isinstance(data, dict) else None
        if status not in COMPARE_STATUSES:
            self._unexpected("GET", path, f"unexpected comparison status {status!r:.40}")
        return str(status)

    def download_artifact(self, repo: str, artifact_id: int, *, max_bytes: int) -> bytes:
        """The zip archive of an artifact: `GET .../actions/artifacts/{id}/zip` answers 302 with
        a short-lived URL on another host, which is fetched WITHOUT the token (a redirect
        within the API's origin is followed as any request). At most `max_bytes`."""
        path = f"/repos/{_repo(repo)}/actions/artifacts/{int(artifact_id)}/zip"
        response = self._wire.send("GET", self._wire.url(path), None)
        if 200 <= response.status < 300:
            body = response.body
        elif response.status in REDIRECTS and response.headers.get("location"):
            body = self._wire.fetch_unauthenticated(response.headers["location"], max_bytes,
                                                    path=path, what="artifact")
        else:
            self._wire.raise_for("GET", path, response)
        if len(body) > max_bytes:
            raise GitHubError(f"the artifact is larger than {max_bytes} bytes", method="GET",
                              path=path)
        return body

    # -- plumbing ----------------------------------------------------------------------

    def _parse(self, parse: Callable[[Any], _T], data: Any, method: str, path: str) -> _T:
        try:
            return parse(data)
        except (KeyError, TypeError, ValidationError) as exc:
            self._unexpected(method, path, f"unexpected response shape ({type(exc).__name__})")

    @staticmethod
    def _unexpected(method: str, path: str, message: str) -> NoReturn:
        raise GitHubError(message, method=method, path=path)


def _repo(repo: str) -> str:
    if not REPOSITORY.fullmatch(repo):
        raise ValueError(f"repository must look like 'owner/name', got {repo!r}")
    return repo


def _is_rate_limit(response: Response) -> bool:
    headers = response.headers
    if "retry-after" in headers or headers.get("x-ratelimit-remaining") == "0":
        return True
    # Secondary limits may come with neither header, only the message.
    return b"rate limit" in response.body.lower()
