"""The GitHub REST transport, on the standard library only.

Responsible for every call rivet-ci makes to GitHub (github.com or a GitHub Enterprise Server
base URL such as ``https://ghe.example/api/v3``): authentication headers, retries, rate
limits, deadlines, pagination and typed errors. What to post is decided elsewhere: the sticky
comment in `rivet_ci.adapters.github.comments`, finding a run's pull request in
`rivet_ci.adapters.github.pulls`; the API's data in `rivet_ci.adapters.github.models`.

Exception tree (every message carries method, URL path and status, never the token)::

    GitHubError              any failed call; .method .path .status .documentation_url
    ├── GitHubUnauthorized   401: the token is missing, expired or wrong
    ├── GitHubForbidden      403 that is not a rate limit, e.g. a read-only token on a fork PR
    ├── GitHubNotFound       404: unknown repository, pull request or comment
    ├── GitHubBodyTooLong    422: comment body over GitHub's 65,536-character limit
    ├── GitHubRateLimited    rate limited for longer than the client is willing to wait
    └── GitHubUnavailable    5xx or network errors on every attempt

Retries: 5xx and network errors back off exponentially (1 s, 2 s, 4 s ...); 429 and
rate-limit 403s wait for ``Retry-After``, else until ``x-ratelimit-reset`` when
``x-ratelimit-remaining`` is 0, else a minute, as GitHub's rate-limit guide asks. A wait
longer than ``max_wait`` fails at once with `GitHubRateLimited` rather than stalling CI.
A POST that fails ambiguously (5xx or a network error: the comment may have been created) is
retried only after listing the comments and finding no comment with exactly that body, so a
502 after a successful create never leaves a duplicate.

Deadlines: besides the socket's inactivity timeout, every request has an overall deadline
(``request_deadline``: a server dripping a byte at a time is cut off) and the client one for
all its calls, waits included (``run_deadline``), so GitHub can never hold a job until the
job's own timeout.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import re
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import Any, NoReturn, TypeVar
from urllib.parse import urlencode, urlsplit

from pydantic import ValidationError

from rivet_ci import __version__
from rivet_ci.adapters.github.models import Comment, PullRequest
from rivet_ci.core.common.patterns import COMMIT_SHA_PREFIX, REPOSITORY
from rivet_ci.errors import UsageError

API_VERSION = "2022-11-28"

_log = logging.getLogger(__name__)
_T = TypeVar("_T")
_LINK = re.compile(r'<([^>]*)>\s*;\s*rel="([^"]*)"')


# --- errors -------------------------------------------------------------------------------


class GitHubError(Exception):
    """A GitHub call failed; see the module docstring for the subclasses."""

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
        text = f"GitHub {where}: {message}"
        if self.hint:
            text += f". {self.hint}"
        if documentation_url:
            text += f" (see {documentation_url})"
        super().__init__(text)


class GitHubUnauthorized(GitHubError):  # noqa: N818 (names the callers use)
    hint = "Check that the token is set and has not expired"


class GitHubForbidden(GitHubError):  # noqa: N818 (names the callers use)
    hint = (
        "The token may not write here: pull requests from forks get a read-only token, so "
        "save the comment to a file and post it from a workflow_run workflow"
    )


class GitHubNotFound(GitHubError):  # noqa: N818 (names the callers use)
    pass


class GitHubBodyTooLong(GitHubError):  # noqa: N818 (names the callers use)
    pass


class GitHubRateLimited(GitHubError):  # noqa: N818 (names the callers use)
    hint = "Retry later, or spread the jobs that share this token"


class GitHubUnavailable(GitHubError):  # noqa: N818 (names the callers use)
    hint = "GitHub may be having an outage; rerun the job later"


# --- HTTP ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Response:
    status: int
    headers: Mapping[str, str]  # lower-cased names
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


class _SameOriginRedirects(urllib.request.HTTPRedirectHandler):
    """Follow redirects only within the API's origin.

    urllib copies every header, Authorization included, onto the redirected request; a
    redirect to another host must not receive the token.
    """

    def redirect_request(  # noqa: PLR0917 (urllib's signature)
        self,
        req: urllib.request.Request,
        fp: Any,
        code: int,
        msg: str,
        headers: Any,
        newurl: str,
    ) -> urllib.request.Request | None:
        if _origin(newurl) != _origin(req.full_url):
            return None
        return super().redirect_request(req, fp, code, msg, headers, newurl)


class _Watchdog:
    """Remembers the connections of the current request and can cut them all off."""

    def __init__(self) -> None:
        # The sockets themselves: urllib detaches them from their connection once the headers
        # are in, while the body is still being read from them.
        self.sockets: list[socket.socket] = []
        self.fired = False
        self._lock = threading.Lock()

    def factory(self, cls: type[http.client.HTTPConnection]) -> Any:
        watchdog = self

        class Watched(cls):  # type: ignore[valid-type,misc]
            def connect(self) -> None:
                super().connect()
                with watchdog._lock:
                    watchdog.sockets.append(self.sock)
                    fired = watchdog.fired
                if fired:
                    watchdog.fire()

        return Watched

    def fire(self) -> None:
        with self._lock:
            self.fired = True
            for sock in self.sockets:
                with contextlib.suppress(OSError):  # wakes a blocked recv at once
                    sock.shutdown(socket.SHUT_RDWR)

    def reset(self) -> None:
        with self._lock:
            self.sockets.clear()
            self.fired = False


def _handlers(watchdog: _Watchdog) -> list[urllib.request.BaseHandler]:
    class HTTP(urllib.request.HTTPHandler):
        def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
            return self.do_open(watchdog.factory(http.client.HTTPConnection), req)

    class HTTPS(urllib.request.HTTPSHandler):
        def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
            return self.do_open(watchdog.factory(http.client.HTTPSConnection), req)

    return [HTTP(), HTTPS()]


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.netloc.lower()


class GitHubSetupError(UsageError, ValueError):
    """The client cannot be built (bad API URL, unusable token): a setup error, exit code 2."""


class GitHubClient:
    """A small GitHub REST client; every method raises a `GitHubError` subclass on failure."""

    def __init__(
        self,
        *,
        api_url: str,
        token: str,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
        max_attempts: int = 5,
        timeout: float = 30,
        max_wait: float = 60,
        request_deadline: float = 60,
        run_deadline: float = 300,
    ) -> None:
        # A token read from a file often ends in a newline; anything else unprintable would
        # make http.client raise an error that quotes the header, token included.
        token = token.strip()
        if not token:
            raise GitHubSetupError("a GitHub token is required")
        if not token.isprintable() or any(c.isspace() for c in token):
            raise GitHubSetupError("the GitHub token contains whitespace or control characters")
        try:
            scheme, netloc = _origin(api_url)
            _ = urlsplit(api_url).port  # "http://host:x" or "http://[::1" raise here
        except ValueError as exc:
            raise GitHubSetupError(f"invalid GitHub API URL {api_url!r}: {exc}") from None
        if scheme not in ("http", "https") or not netloc:
            raise GitHubSetupError(
                f"invalid GitHub API URL {api_url!r}: expected an http(s) URL with a host")
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.api_url = api_url.rstrip("/")
        self._token = token
        self._sleep, self._clock = sleep, clock
        self._max_attempts, self._timeout, self._max_wait = max_attempts, timeout, max_wait
        self._request_deadline = request_deadline
        self._run_end = time.monotonic() + run_deadline
        self._watchdog = _Watchdog()
        self._opener = urllib.request.build_opener(_SameOriginRedirects(),
                                                   *_handlers(self._watchdog))

    def __repr__(self) -> str:
        return f"GitHubClient(api_url={self.api_url!r}, token='***')"

    # -- endpoints ---------------------------------------------------------------------

    def authenticated_login(self) -> str | None:
        """The token's login, or None when the token may not read ``GET /user``.

        Actions' GITHUB_TOKEN and GitHub App installation tokens get 403 there.
        """
        try:
            data = self._request("GET", "/user").json()
        except (GitHubForbidden, GitHubNotFound):
            return None
        login = data.get("login") if isinstance(data, dict) else None
        return str(login) if login else None

    def list_issue_comments(self, repo: str, number: int) -> list[Comment]:
        path = f"/repos/{_repo(repo)}/issues/{int(number)}/comments"
        return [self._parse(Comment.from_api, item, "GET", path) for item in self._paginate(path)]

    def create_issue_comment(self, repo: str, number: int, body: str, *,
                             author: str | None = None) -> Comment:
        """Create a comment; after an ambiguous failure, find it before creating it again.

        `author` (when known) must also match for a listed comment to count as ours.
        """
        path = f"/repos/{_repo(repo)}/issues/{int(number)}/comments"
        wanted = body.replace("\r\n", "\n")
        for attempt in range(1, self._max_attempts + 1):
            if attempt > 1:
                for comment in self.list_issue_comments(repo, number):
                    if (comment.body.replace("\r\n", "\n") == wanted
                            and (author is None or comment.user_login == author)):
                        return comment  # the failed attempt did create it
            try:
                data = self._request("POST", path, {"body": body}, ambiguous_retry=False).json()
            except GitHubUnavailable:
                if attempt == self._max_attempts:
                    raise
                self._pause(2.0 ** (attempt - 1), "POST", path)
                continue
            return self._parse(Comment.from_api, data, "POST", path)
        raise AssertionError("unreachable")  # pragma: no cover

    def update_issue_comment(self, repo: str, comment_id: int, body: str) -> Comment:
        path = f"/repos/{_repo(repo)}/issues/comments/{int(comment_id)}"
        data = self._request("PATCH", path, {"body": body}).json()
        return self._parse(Comment.from_api, data, "PATCH", path)

    def delete_issue_comment(self, repo: str, comment_id: int) -> None:
        self._request("DELETE", f"/repos/{_repo(repo)}/issues/comments/{int(comment_id)}")

    def get_pull(self, repo: str, number: int) -> PullRequest:
        path = f"/repos/{_repo(repo)}/pulls/{int(number)}"
        return self._parse(PullRequest.from_api, self._request("GET", path).json(), "GET", path)

    def pulls_for_head(
        self, repo: str, *, head_owner: str, head_branch: str, state: str = "open"
    ) -> list[PullRequest]:
        """Pull requests whose head is ``head_owner:head_branch`` (works for forks)."""
        path = f"/repos/{_repo(repo)}/pulls"
        query = {"head": f"{head_owner}:{head_branch}", "state": state}
        items = self._paginate(path, query)
        return [self._parse(PullRequest.from_api, item, "GET", path) for item in items]

    def pulls_for_commit(self, repo: str, sha: str) -> list[PullRequest]:
        """Pull requests associated with a commit; finds nothing for fork-only commits."""
        if not COMMIT_SHA_PREFIX.fullmatch(sha.lower()):
            raise ValueError(f"not a commit sha: {sha!r}")
        path = f"/repos/{_repo(repo)}/commits/{sha}/pulls"
        try:
            items = self._paginate(path)
        except GitHubError as exc:
            if exc.status == 422:  # "No commit found for SHA": nothing is associated with it
                return []
            raise
        return [self._parse(PullRequest.from_api, item, "GET", path) for item in items]

    # -- plumbing ----------------------------------------------------------------------

    def list_artifacts(self, repo: str, *, name: str, limit: int = 1000) -> list[dict[str, Any]]:
        """`GET /repos/{repo}/actions/artifacts?name=NAME`, every page (at most `limit`
        artifacts). GitHub wraps each page in `{"total_count": n, "artifacts": [...]}`."""
        path = f"/repos/{_repo(repo)}/actions/artifacts"
        url: str | None = f"{self.api_url}{path}?{urlencode({'name': name, 'per_page': 100})}"
        items: list[dict[str, Any]] = []
        seen: set[str] = set()
        while url is not None and url not in seen and len(items) < limit:
            seen.add(url)
            response = self._request("GET", url)
            page = response.json()
            if not isinstance(page, dict) or not isinstance(page.get("artifacts"), list):
                self._unexpected("GET", path, "expected an object with `artifacts`")
            items.extend(a for a in page["artifacts"] if isinstance(a, dict))
            url = _next_link(response.headers.get("link", ""))
        return items[:limit]

    def get_workflow_run_json(self, repo: str, run_id: int) -> dict[str, Any]:
        """`GET /repos/{repo}/actions/runs/{run_id}` as GitHub returns it."""
        path = f"/repos/{_repo(repo)}/actions/runs/{int(run_id)}"
        data = self._request("GET", path).json()
        if not isinstance(data, dict):
            self._unexpected("GET", path, "expected a JSON object")
        return data

    def download_artifact(self, repo: str, artifact_id: int, *, max_bytes: int) -> bytes:
        """The zip archive of an artifact: `GET .../actions/artifacts/{id}/zip` answers 302 with
        a short-lived URL on another host, which is fetched WITHOUT the token (a redirect
        within the API's origin is followed as any request). At most `max_bytes`."""
        path = f"/repos/{_repo(repo)}/actions/artifacts/{int(artifact_id)}/zip"
        response = self._send("GET", f"{self.api_url}{path}", None)
        if 200 <= response.status < 300:
            body = response.body
        elif response.status in (301, 302, 303, 307, 308) and response.headers.get("location"):
            body = self._fetch_unauthenticated(response.headers["location"], max_bytes, path)
        else:
            self._raise_for("GET", path, response)
        if len(body) > max_bytes:
            raise GitHubError(f"the artifact is larger than {max_bytes} bytes", method="GET",
                              path=path)
        return body

    def _fetch_unauthenticated(self, url: str, max_bytes: int, path: str) -> bytes:
        if urlsplit(url).scheme not in ("http", "https"):
            raise GitHubError("the artifact's download URL is not http(s)", method="GET",
                              path=path)
        request = urllib.request.Request(url, headers={"User-Agent": f"rivet-ci/{__version__}"})
        opener = urllib.request.build_opener(*_handlers(self._watchdog))
        try:
            with opener.open(request, timeout=self._timeout) as raw:
                data: bytes = raw.read(max_bytes + 1)
        except (OSError, http.client.HTTPException) as exc:
            raise GitHubUnavailable(f"cannot download the artifact ({exc})", method="GET",
                                    path=path) from None
        return data

    def _paginate(self, path: str, query: Mapping[str, str] | None = None) -> list[Any]:
        """GET every page by following ``Link: rel="next"`` as GitHub builds it.

        The links are followed verbatim rather than by counting pages: GitHub may rewrite
        them (for example to ``/repositories/{id}/...``) and that is its contract.
        """
        url: str | None = f"{self.api_url}{path}?{urlencode({**(query or {}), 'per_page': 100})}"
        items: list[Any] = []
        seen: set[str] = set()
        while url is not None and url not in seen:
            seen.add(url)
            response = self._request("GET", url)
            page = response.json()
            if not isinstance(page, list):
                self._unexpected("GET", path, "expected a JSON array")
            items.extend(page)
            url = _next_link(response.headers.get("link", ""))
        return items

    def _remaining(self) -> float:
        return self._run_end - time.monotonic()

    def _pause(self, wait: float, method: str, path: str) -> None:
        """Sleep before a retry, unless that would overrun the run's deadline."""
        if wait >= self._remaining():
            raise GitHubUnavailable("the deadline for GitHub calls would pass while waiting "
                                    "to retry", method=method, path=path)
        self._sleep(wait)

    def _request(self, method: str, target: str, payload: object = None, *,
                 ambiguous_retry: bool = True) -> _Response:
        """One call with retries. `ambiguous_retry=False`: a 5xx or network error is raised at
        once (the caller checks whether a non-idempotent call took effect)."""
        url = target if "://" in target else f"{self.api_url}{target}"
        if _origin(url) != _origin(self.api_url):
            # A pagination link pointing elsewhere must not receive the token.
            raise GitHubError("refusing to send the token to another host", method=method, path=url)
        parts = urlsplit(url)
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        data = None if payload is None else json.dumps(payload).encode()
        error: type[GitHubError] = GitHubUnavailable
        reason, status = "no attempt made", None
        for attempt in range(1, self._max_attempts + 1):
            wait: float | None = None
            try:
                response = self._send(method, url, data)
            except (OSError, http.client.HTTPException) as exc:
                error, reason, status = GitHubUnavailable, f"network error ({exc})", None
                if not ambiguous_retry:
                    break
            else:
                if 200 <= response.status < 300:
                    return response
                error, reason, wait = self._retry_plan(method, path, response, attempt)
                status = response.status
                if not ambiguous_retry and response.status >= 500:
                    break
            if attempt == self._max_attempts:
                break
            if wait is None:
                wait = 2.0 ** (attempt - 1)
            wait = min(wait, self._max_wait)
            _log.warning(
                "GitHub %s %s: %s; retrying in %.0f s (attempt %d of %d)",
                method, path, reason, wait, attempt, self._max_attempts,
            )  # fmt: skip
            self._pause(wait, method, path)
        raise error(
            f"{reason}; gave up after {attempt} attempt{'s' if attempt > 1 else ''}",
            method=method,
            path=path,
            status=status,
        )

    def _send(self, method: str, url: str, data: bytes | None) -> _Response:
        headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": API_VERSION,
            "Authorization": f"Bearer {self._token}",
            "User-Agent": f"rivet-ci/{__version__}",
        }
        if data is not None:
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(url, data=data, headers=headers, method=method)
        budget = min(self._request_deadline, self._remaining())
        if budget <= 0:
            raise TimeoutError("the deadline for GitHub calls has passed")
        self._watchdog.reset()
        timer = threading.Timer(budget, self._watchdog.fire)
        timer.daemon = True
        timer.start()
        try:
            try:
                with self._opener.open(request, timeout=min(self._timeout, budget)) as raw:
                    response = _Response(raw.status, _lower(raw.headers), raw.read())
            except urllib.error.HTTPError as exc:
                try:
                    response = _Response(exc.code, _lower(exc.headers), exc.read())
                finally:
                    exc.close()
        except (OSError, http.client.HTTPException):
            if self._watchdog.fired:
                raise TimeoutError(f"no complete answer within {budget:.0f} s") from None
            raise
        finally:
            timer.cancel()
        if self._watchdog.fired:  # cut off mid-body: what arrived is not the answer
            raise TimeoutError(f"no complete answer within {budget:.0f} s")
        return response

    def _retry_plan(
        self, method: str, path: str, response: _Response, attempt: int
    ) -> tuple[type[GitHubError], str, float | None]:
        """How to retry a failed response (error type, reason, wait or None for backoff).

        Raises the typed error at once for failures that retrying cannot fix.
        """
        status, headers = response.status, response.headers
        retry_after = self._retry_after(headers)
        if status == 429 or (status == 403 and _is_rate_limit(response)):
            if retry_after is not None:
                wait = retry_after
            elif headers.get("x-ratelimit-remaining") == "0" and "x-ratelimit-reset" in headers:
                # +1 s: the reset is whole epoch seconds and runner clocks drift a little.
                wait = max(float(headers["x-ratelimit-reset"]) - self._clock(), 0.0) + 1
            else:
                # GitHub: wait at least a minute, then exponentially longer.
                wait = 60.0 * 2 ** (attempt - 1)
            if wait > self._max_wait:
                raise GitHubRateLimited(
                    f"rate limited for {wait:.0f} s, longer than the {self._max_wait:.0f} s "
                    "this client waits",
                    method=method,
                    path=path,
                    status=status,
                )
            return GitHubRateLimited, "rate limited", wait
        if status >= 500:
            return GitHubUnavailable, f"server error {status}", retry_after
        self._raise_for(method, path, response)

    def _retry_after(self, headers: Mapping[str, str]) -> float | None:
        value = headers.get("retry-after")
        if value is None:
            return None
        try:
            return max(float(value), 0.0)
        except ValueError:
            pass
        try:  # the HTTP-date form
            return max(parsedate_to_datetime(value).timestamp() - self._clock(), 0.0)
        except (TypeError, ValueError):
            return None

    def _raise_for(self, method: str, path: str, response: _Response) -> NoReturn:
        try:
            payload = response.json()
        except ValueError:
            payload = None
        if not isinstance(payload, dict):
            payload = {"message": response.body[:200].decode("utf-8", "replace")}
        message = str(payload.get("message") or "no message")
        details = [
            str(e.get("message")) for e in payload.get("errors") or [] if isinstance(e, dict)
        ]
        if details:
            message += ": " + "; ".join(details)
        error: type[GitHubError] = {
            401: GitHubUnauthorized,
            403: GitHubForbidden,
            404: GitHubNotFound,
        }.get(response.status, GitHubError)
        if response.status == 422 and "is too long" in message.lower():
            error = GitHubBodyTooLong
        raise error(
            message,
            method=method,
            path=path,
            status=response.status,
            documentation_url=str(payload.get("documentation_url") or "") or None,
        )

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


def _lower(headers: Any) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in headers.items()} if headers else {}


def _is_rate_limit(response: _Response) -> bool:
    headers = response.headers
    if "retry-after" in headers or headers.get("x-ratelimit-remaining") == "0":
        return True
    # Secondary limits may come with neither header, only the message.
    return b"rate limit" in response.body.lower()


def _next_link(header: str) -> str | None:
    for url, rel in _LINK.findall(header):
        if "next" in rel.split():
            return str(url)
    return None
