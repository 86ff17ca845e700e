"""A local fake of the GitHub REST API endpoints rivet-ci calls, for integration tests.

It serves real HTTP on 127.0.0.1 (an ephemeral port, in a background thread) so the client
under test runs unmodified, and follows GitHub's documented behaviour where rivet-ci depends
on it:

* auth: ``Authorization: Bearer <token>`` (or ``token <token>``); 401 ``Requires
  authentication`` / ``Bad credentials``; per-token users, some of which cannot read
  ``GET /user`` (Actions' GITHUB_TOKEN) or cannot write (a fork PR's read-only token: 403
  ``Resource not accessible by integration``).
* pagination: ``per_page`` (default 30, max 100) and ``page``, with a ``Link`` header carrying
  ``prev``/``next``/``last``/``first``. Like GitHub, the links use ``/repositories/{id}/...``
  rather than the path that was requested, so a client must follow them verbatim.
* errors in GitHub's JSON shape: 404 ``Not Found``, 422 ``Validation Failed`` for comment bodies
  over 65,536 characters, 422 ``No commit found for SHA`` for unknown commits.
* ``x-ratelimit-*`` headers on every response, and injectable faults: 5xx bursts, 429 with
  ``Retry-After``, 403 with ``x-ratelimit-remaining: 0`` and ``x-ratelimit-reset``.
* ``GET /repos/{r}/commits/{sha}/pulls`` finds nothing for a commit that only exists in a
  fork, as observed on github.com; ``GET /repos/{r}/pulls?head=owner:branch`` finds it.
* a repository's commits, from a real git repository the test registers
  (``add_repository``): ``GET /repos/{r}/branches/{branch}`` (a branch only, 404 ``Branch not
  found``) and ``GET /repos/{r}/compare/{base}...{head}``, computed by git as GitHub documents
  it (``git log base..head``): ``status`` ``identical``/``ahead``/``behind``/``diverged``,
  ``ahead_by``, ``behind_by``, ``total_commits``, ``merge_base_commit``, ``commits`` oldest first
  (without paging parameters the last 250; with ``per_page``/``page`` paged, ``Link`` header),
  ``files`` on the first page only; a name resolves as git resolves it (so a tag named like a
  branch wins, as in ``git rev-parse``); 404 for an unknown commit or repository and for two
  commits without a common ancestor.
* Actions artifacts as GitHub's REST docs describe them: ``GET /repos/{r}/actions/artifacts``
  (``name`` filter, newest first, ``{"total_count", "artifacts"}`` pages with ``workflow_run``),
  ``GET /repos/{r}/actions/runs/{id}`` and ``GET /repos/{r}/actions/artifacts/{id}/zip``, which
  answers ``302`` with a short-lived URL on another host (here ``localhost`` instead of
  ``127.0.0.1``) that refuses a request carrying an ``Authorization`` header, as blob storage
  does; ``silence_storage()`` points that URL at a host that accepts connections and never
  answers (counted in ``storage_connections``).

Every request is recorded in ``fake.requests`` for assertions. Use as a context manager::

    with FakeGitHub(prefix="/api/v3") as gh:
        gh.add_token("t0k", login="octocat")
        client = GitHubClient(github_wire(api_url=gh.url, token="t0k"))
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit

MAX_BODY = 65536
API_VERSIONS = {"2022-11-28"}
DOCS = "https://docs.github.com/rest"
SECONDARY_MESSAGE = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try "
    "again. If you reach out to GitHub Support for help, please include the request ID."
)


@dataclass
class TokenSpec:
    login: str
    can_read_user: bool = True  # False: GET /user is 403, as for Actions' GITHUB_TOKEN
    can_write: bool = True  # False: writes are 403, as for a fork PR's read-only token


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str  # without the base-URL prefix and query
    query: dict[str, str]
    headers: dict[str, str]  # lower-cased names
    json: Any


@dataclass
class _Fault:
    status: int
    headers: dict[str, str]
    body: dict[str, Any]
    method: str | None
    times: int
    after: bool = False  # the request takes effect, then this status is answered


@dataclass
class _Pull:
    repo: str
    number: int
    head_sha: str
    head_ref: str
    head_repo: str
    state: str
    base_ref: str
    author: str


@dataclass
class _Run:
    id: int
    repo: str
    event: str
    head_branch: str
    head_sha: str
    head_repo: str
    path: str
    conclusion: str


@dataclass
class _Artifact:
    id: int
    repo: str
    name: str
    run_id: int
    data: bytes
    created_at: str
    expired: bool


@dataclass
class _Call:
    params: dict[str, str]
    query: dict[str, str]
    body: Any
    token: TokenSpec


_Reply = tuple[int, dict[str, str], Any]


class FakeGitHub:
    def __init__(
        self,
        *,
        prefix: str = "",
        clock: Callable[[], float] = time.time,
        too_long_style: str = "custom",
        web_url: str = "https://github.com",
    ) -> None:
        """``prefix`` mimics GHES (``/api/v3``); ``too_long_style`` picks which of the two
        422 shapes GitHub has been seen to send ("custom" or "unprocessable")."""
        self.prefix = prefix.rstrip("/")
        self.clock = clock
        self.too_long_style = too_long_style
        self.web_url = web_url
        self.requests: list[Recorded] = []
        self.crashes: list[Exception] = []
        self._tokens: dict[str, TokenSpec] = {}
        self._repo_ids: dict[str, int] = {}
        self._user_ids: dict[str, int] = {}
        self._pulls: dict[tuple[str, int], _Pull] = {}
        self._comments: dict[int, dict[str, Any]] = {}
        self._faults: list[_Fault] = []
        self._runs: dict[int, _Run] = {}
        self._artifacts: dict[int, _Artifact] = {}
        self._blobs: dict[str, bytes] = {}
        self._silent: SilentHost | None = None
        self._git_repos: dict[str, Path] = {}
        self._next_id = 1_000_000
        self._remaining: dict[str, int] = {}
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------

    def __enter__(self) -> FakeGitHub:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        server.daemon_threads = True
        server.fake = self  # type: ignore[attr-defined]
        self._server = server
        # A short poll interval keeps shutdown (and so every test teardown) fast.
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None and self._thread is not None
        if self._silent is not None:
            self._silent.close()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    @property
    def root(self) -> str:
        assert self._server is not None, "use FakeGitHub as a context manager"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def url(self) -> str:
        """The API base URL to give the client (includes the GHES-style prefix)."""
        return self.root + self.prefix

    # -- arranging -------------------------------------------------------------------

    def add_token(
        self, token: str, *, login: str, can_read_user: bool = True, can_write: bool = True
    ) -> TokenSpec:
        spec = TokenSpec(login, can_read_user, can_write)
        with self._lock:
            self._tokens[token] = spec
        return spec

    def add_pull(
        self,
        repo: str,
        number: int,
        *,
        head_sha: str,
        head_ref: str = "feature",
        head_repo: str | None = None,
        state: str = "open",
        base_ref: str = "main",
        author: str = "contributor",
    ) -> None:
        """A pull request (GitHub: also an issue); ``head_repo`` other than ``repo`` is a fork."""
        pull = _Pull(repo, number, head_sha, head_ref, head_repo or repo, state, base_ref, author)
        with self._lock:
            self._repo_id(repo)
            self._pulls[(repo, number)] = pull

    def add_repository(self, repo: str, path: Path) -> None:
        """GitHub's copy of `repo` is the git repository at `path`: its branches, tags and
        commits answer the branches and compare endpoints."""
        with self._lock:
            self._repo_id(repo)
            self._git_repos[repo] = path

    def add_workflow_run(self, repo: str, *, event: str, head_branch: str, head_sha: str,
                         head_repo: str | None = None, path: str = ".github/workflows/x.yml",
                         conclusion: str = "success") -> int:
        with self._lock:
            self._next_id += 1
            self._runs[self._next_id] = _Run(self._next_id, repo, event, head_branch, head_sha,
                                             head_repo or repo, path, conclusion)
            return self._next_id

    def add_artifact(self, repo: str, *, name: str, run_id: int,
                     files: dict[str, str] | None = None, archive: bytes | None = None,
                     created_at: str | None = None, expired: bool = False) -> int:
        """An artifact of a workflow run: `files` zipped, as upload-artifact stores them (or
        the `archive` bytes as given)."""
        import io
        import zipfile

        if archive is None:
            buffer = io.BytesIO()
            with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
                for member, text in (files or {}).items():
                    zf.writestr(member, text)
            archive = buffer.getvalue()
        with self._lock:
            self._next_id += 1
            self._artifacts[self._next_id] = _Artifact(
                self._next_id, repo, name, run_id, archive, created_at or self._now(), expired)
            return self._next_id

    def silence_storage(self) -> None:
        """From now on an archive's download URL names a host that accepts connections and
        never answers (a storage outage that holds the socket open)."""
        with self._lock:
            if self._silent is None:
                self._silent = SilentHost()

    @property
    def storage_connections(self) -> int:
        """Connections the silent storage host accepted."""
        return 0 if self._silent is None else self._silent.accepted

    def blob_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.path.startswith("/_blobs/")]

    def set_head(self, repo: str, number: int, head_sha: str) -> None:
        """Simulate a push to the pull request's branch."""
        with self._lock:
            self._pulls[(repo, number)].head_sha = head_sha

    def add_comment(self, repo: str, number: int, body: str, *, login: str) -> int:
        with self._lock:
            return int(self._create_comment(repo, number, body, login)["id"])

    def comments(self, repo: str, number: int) -> list[dict[str, Any]]:
        """Stored comments, oldest first: id, body, login, created_at, updated_at."""
        with self._lock:
            return [dict(c) for c in self._comments.values() if c["_on"] == (repo, number)]

    def inject(
        self,
        status: int,
        *,
        times: int = 1,
        method: str | None = None,
        headers: dict[str, str] | None = None,
        message: str = "Server Error",
    ) -> None:
        """Answer the next ``times`` requests (of ``method``, if given) with ``status``."""
        body = {"message": message, "documentation_url": DOCS}
        with self._lock:
            self._faults.append(_Fault(status, dict(headers or {}), body, method, times))

    def inject_after_success(self, status: int, *, method: str, times: int = 1) -> None:
        """Carry out the next ``times`` ``method`` requests, then answer ``status`` anyway
        (a gateway timing out after the API created the comment: an ambiguous failure)."""
        body = {"message": "Bad Gateway", "documentation_url": DOCS}
        with self._lock:
            self._faults.append(_Fault(status, {}, body, method, times, after=True))

    def inject_retry_after(self, seconds: int, *, status: int = 429) -> None:
        self.inject(status, headers={"retry-after": str(seconds)}, message=SECONDARY_MESSAGE)

    def inject_primary_rate_limit(self, *, reset_in: int) -> None:
        reset = str(int(self.clock()) + reset_in)
        self.inject(
            403,
            headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": reset},
            message="API rate limit exceeded for user ID 100.",
        )

    def requests_for(self, method: str) -> list[Recorded]:
        return [r for r in self.requests if r.method == method]

    # -- serving ---------------------------------------------------------------------

    def handle(self, handler: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(handler.path)
        query = dict(parse_qsl(parts.query))
        headers = {k.lower(): v for k, v in handler.headers.items()}
        raw = handler.rfile.read(int(headers.get("content-length") or 0))
        with self._lock:
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = _BAD_JSON
            route = parts.path[len(self.prefix) :]
            if self.prefix and not parts.path.startswith(self.prefix + "/"):
                route = "\0"  # outside the API root: nothing matches
            if parts.path.startswith("/_blobs/"):  # the storage host the archive URL points to
                self.requests.append(Recorded(handler.command, parts.path, query, headers, body))
                blob = self._blobs.pop(parts.path, None)  # a URL works once, like a SAS URL
                if "authorization" in headers:
                    status, blob_body = 400, b"Authentication information is not given in the "
                    blob_body += b"correct format."
                elif blob is None or handler.command != "GET":
                    status, blob_body = 404, b"The specified blob does not exist."
                else:
                    status, blob_body = 200, blob
                handler.send_response(status)
                handler.send_header("content-type", "application/zip")
                handler.send_header("content-length", str(len(blob_body)))
                handler.end_headers()
                handler.wfile.write(blob_body)
                return
            self.requests.append(Recorded(handler.command, route, query, headers, body))
            token_key = _token_of(headers.get("authorization", ""))
            try:
                status, extra, payload = self._respond(handler.command, route, query, headers, body)
            except Exception as exc:  # a bug in the fake: make it loud, not a hung socket
                self.crashes.append(exc)
                status, extra, payload = 500, {}, {"message": f"fake GitHub crashed: {exc!r}"}
            extra = {**self._rate_headers(token_key), **extra}
        data = b"" if payload is None else json.dumps(payload).encode()
        handler.send_response(status)
        for name, value in {
            "content-type": "application/json; charset=utf-8",
            "content-length": str(len(data)),
            "x-github-api-version-selected": "2022-11-28",
            "x-github-request-id": f"FAKE:{len(self.requests)}",
            **extra,
        }.items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(data)

    def _respond(
        self, method: str, route: str, query: dict[str, str], headers: dict[str, str], body: Any
    ) -> _Reply:
        for fault in self._faults:
            if fault.times > 0 and fault.method in (None, method):
                fault.times -= 1
                if fault.after:
                    self._respond(method, route, query, headers, body)
                return fault.status, fault.headers, fault.body
        version = headers.get("x-github-api-version")
        if version is not None and version not in API_VERSIONS:
            return _error(400, f"Unsupported 'X-GitHub-Api-Version' header: {version}.")
        if body is _BAD_JSON:
            return _error(400, "Problems parsing JSON")
        authorization = headers.get("authorization")
        if not authorization:
            return _error(401, "Requires authentication")
        token = self._tokens.get(_token_of(authorization))
        if token is None:
            return _error(401, "Bad credentials")
        for verb, pattern, action in self._routes():
            match = re.fullmatch(pattern, route)
            if match and verb == method:
                params = match.groupdict()
                repo_id = params.pop("repo_id", None)
                if repo_id is not None:
                    params["repo"] = self._repo_by_id(int(repo_id))
                return action(_Call(params, query, body, token))
        return _error(404, "Not Found")

    def _routes(self) -> list[tuple[str, str, Callable[[_Call], _Reply]]]:
        repo = r"/(?:repos/(?P<repo>[^/]+/[^/]+)|repositories/(?P<repo_id>\d+))"
        return [
            ("GET", r"/user", self._get_user),
            ("GET", repo + r"/issues/(?P<number>\d+)/comments", self._list_comments),
            ("POST", repo + r"/issues/(?P<number>\d+)/comments", self._post_comment),
            ("GET", repo + r"/issues/comments/(?P<id>\d+)", self._get_comment),
            ("PATCH", repo + r"/issues/comments/(?P<id>\d+)", self._patch_comment),
            ("DELETE", repo + r"/issues/comments/(?P<id>\d+)", self._delete_comment),
            ("GET", repo + r"/pulls/(?P<number>\d+)", self._get_pull),
            ("GET", repo + r"/pulls", self._list_pulls),
            ("GET", repo + r"/commits/(?P<sha>[0-9a-fA-F]+)/pulls", self._commit_pulls),
            ("GET", repo + r"/actions/artifacts", self._list_artifacts),
            ("GET", repo + r"/actions/artifacts/(?P<id>\d+)/zip", self._download_artifact),
            ("GET", repo + r"/actions/runs/(?P<id>\d+)", self._get_run),
            ("GET", repo + r"/branches/(?P<branch>.+)", self._get_branch),
            ("GET", repo + r"/compare/(?P<basehead>.+)", self._compare),
        ]

    # -- endpoints -------------------------------------------------------------------

    def _artifact_json(self, artifact: _Artifact) -> dict[str, Any]:
        run = self._runs[artifact.run_id]
        base = f"{self.url}/repos/{artifact.repo}/actions/artifacts/{artifact.id}"
        return {
            "id": artifact.id, "node_id": f"MDg6QXJ0aWZhY3Q{artifact.id}", "name": artifact.name,
            "size_in_bytes": len(artifact.data), "url": base,
            "archive_download_url": f"{base}/zip", "expired": artifact.expired,
            "created_at": artifact.created_at, "updated_at": artifact.created_at,
            "expires_at": artifact.created_at.replace(artifact.created_at[:4],
                                                      str(int(artifact.created_at[:4]) + 1), 1),
            "workflow_run": {"id": run.id, "repository_id": self._repo_id(run.repo),
                             "head_repository_id": self._repo_id(run.head_repo),
                             "head_branch": run.head_branch, "head_sha": run.head_sha},
        }

    def _list_artifacts(self, call: _Call) -> _Reply:
        repo = call.params["repo"]
        name = call.query.get("name")
        items = sorted((a for a in self._artifacts.values()
                        if a.repo == repo and (name is None or a.name == name)),
                       key=lambda a: (a.created_at, a.id), reverse=True)
        status, headers, chunk = self._paginate(
            [self._artifact_json(a) for a in items], call.query,
            f"/repositories/{self._repo_id(repo)}/actions/artifacts")
        return status, headers, {"total_count": len(items), "artifacts": chunk}

    def _download_artifact(self, call: _Call) -> _Reply:
        artifact = self._artifacts.get(int(call.params["id"]))
        if artifact is None or artifact.repo != call.params["repo"]:
            return _error(404, "Not Found", "actions/artifacts#download-an-artifact")
        if artifact.expired:
            return _error(410, "Artifact has expired", "actions/artifacts#download-an-artifact")
        key = f"/_blobs/{artifact.id}-{len(self._blobs)}-{self._next_id}"
        self._blobs[key] = artifact.data
        port = self.root.rsplit(":", 1)[1] if self._silent is None else self._silent.port
        return 302, {"location": f"http://localhost:{port}{key}?sv=2024&sig=FakeSas"}, None

    def _get_run(self, call: _Call) -> _Reply:
        run = self._runs.get(int(call.params["id"]))
        if run is None or run.repo != call.params["repo"]:
            return _error(404, "Not Found", "actions/workflow-runs#get-a-workflow-run")
        return 200, {}, {
            "id": run.id, "name": run.path.rsplit("/", 1)[-1], "head_branch": run.head_branch,
            "head_sha": run.head_sha, "path": run.path, "event": run.event,
            "status": "completed", "conclusion": run.conclusion,
            "head_repository": {"full_name": run.head_repo, "fork": run.head_repo != run.repo},
            "repository": {"full_name": run.repo}, "pull_requests": [],
        }

    def _git(self, repo: str, *args: str) -> str | None:
        """`git args` in GitHub's copy of `repo`: its output, or None when git refuses."""
        path = self._git_repos.get(repo)
        if path is None:
            return None
        environ = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        done = subprocess.run(["git", "-C", str(path), *args], capture_output=True, text=True,
                              env={**environ, "GIT_CONFIG_NOSYSTEM": "1", "LC_ALL": "C"},
                              check=False)
        return done.stdout.strip() if done.returncode == 0 else None

    def _commit(self, repo: str, ref: str) -> str | None:
        """A name or sha as git resolves it (`git rev-parse`: tags before branches)."""
        if not ref or ref.startswith("-"):
            return None
        return self._git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")

    def _get_branch(self, call: _Call) -> _Reply:
        repo, branch = call.params["repo"], unquote(call.params["branch"])
        sha = None if branch.startswith("-") else self._git(
            repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}^{{commit}}")
        if sha is None:
            return _error(404, "Branch not found", "branches/branches#get-a-branch")
        return 200, {}, {
            "name": branch, "protected": False,
            "commit": {"sha": sha, "url": f"{self.url}/repos/{repo}/commits/{sha}"},
            "_links": {"self": f"{self.url}/repos/{repo}/branches/{branch}",
                       "html": f"{self.web_url}/{repo}/tree/{branch}"},
        }

    def _compare(self, call: _Call) -> _Reply:
        doc = "commits/commits#compare-two-commits"
        repo = call.params["repo"]
        base_ref, sep, head_ref = unquote(call.params["basehead"]).partition("...")
        base, head = self._commit(repo, base_ref), self._commit(repo, head_ref)
        if not sep or base is None or head is None:
            return _error(404, "Not Found", doc)
        merge_base = self._git(repo, "merge-base", base, head)
        if merge_base is None:
            return _error(404, f"No common ancestor between {base_ref} and {head_ref}.", doc)
        ahead = int(self._git(repo, "rev-list", "--count", f"{base}..{head}") or 0)
        behind = int(self._git(repo, "rev-list", "--count", f"{head}..{base}") or 0)
        status = ("identical" if ahead == behind == 0 else "ahead" if behind == 0
                  else "behind" if ahead == 0 else "diverged")
        listed = (self._git(repo, "rev-list", "--reverse", f"{base}..{head}") or "").split()
        commits = [{"sha": sha, "url": f"{self.url}/repos/{repo}/commits/{sha}"}
                   for sha in listed]
        names = (self._git(repo, "diff", "--name-status", "--no-renames", merge_base, head)
                 or "").splitlines()
        kinds = {"A": "added", "D": "removed"}
        files = [{"filename": line.split("\t", 1)[1],
                  "status": kinds.get(line[:1], "modified")} for line in names][:300]
        headers: dict[str, str] = {}
        if "per_page" in call.query or "page" in call.query:
            _, headers, commits = self._paginate(
                commits, call.query,
                f"/repositories/{self._repo_id(repo)}/compare/{base_ref}...{head_ref}")
            if max(_int(call.query.get("page"), 1), 1) > 1:
                files = []
        else:
            commits = commits[-250:]
        return 200, headers, {
            "url": f"{self.url}/repos/{repo}/compare/{base_ref}...{head_ref}",
            "html_url": f"{self.web_url}/{repo}/compare/{base_ref}...{head_ref}",
            "base_commit": {"sha": base}, "merge_base_commit": {"sha": merge_base},
            "status": status, "ahead_by": ahead, "behind_by": behind,
            "total_commits": ahead, "commits": commits, "files": files,
        }

    def _get_user(self, call: _Call) -> _Reply:
        if not call.token.can_read_user:
            return _error(403, "Resource not accessible by integration", "users/users")
        return 200, {}, _user(call.token.login, self._user_id(call.token.login))

    def _list_comments(self, call: _Call) -> _Reply:
        number = int(call.params["number"])
        if not self._has_issue(call.params["repo"], number):
            return _error(404, "Not Found", "issues/comments#list-issue-comments")
        on = (call.params["repo"], number)
        items = [self._public(c) for c in self._comments.values() if c["_on"] == on]
        repo_id = self._repo_id(call.params["repo"])
        return self._paginate(
            items, call.query, f"/repositories/{repo_id}/issues/{number}/comments"
        )

    def _post_comment(self, call: _Call) -> _Reply:
        repo, number = call.params["repo"], int(call.params["number"])
        if not self._has_issue(repo, number):
            return _error(404, "Not Found", "issues/comments#create-an-issue-comment")
        refusal = self._refuse_write(call, "issues/comments#create-an-issue-comment")
        if refusal is not None:
            return refusal
        comment = self._create_comment(repo, number, call.body["body"], call.token.login)
        return 201, {}, self._public(comment)

    def _get_comment(self, call: _Call) -> _Reply:
        comment = self._comment(call)
        if comment is None:
            return _error(404, "Not Found", "issues/comments#get-an-issue-comment")
        return 200, {}, self._public(comment)

    def _patch_comment(self, call: _Call) -> _Reply:
        comment = self._comment(call)
        if comment is None:
            return _error(404, "Not Found", "issues/comments#update-an-issue-comment")
        refusal = self._refuse_write(call, "issues/comments#update-an-issue-comment")
        if refusal is not None:
            return refusal
        comment["body"] = call.body["body"]
        comment["updated_at"] = self._now()
        return 200, {}, self._public(comment)

    def _delete_comment(self, call: _Call) -> _Reply:
        doc = "issues/comments#delete-an-issue-comment"
        comment = self._comment(call)
        if comment is None:
            return _error(404, "Not Found", doc)
        if not call.token.can_write:
            return _error(403, "Resource not accessible by integration", doc)
        del self._comments[comment["id"]]
        return 204, {}, None

    def _get_pull(self, call: _Call) -> _Reply:
        pull = self._pulls.get((call.params["repo"], int(call.params["number"])))
        if pull is None:
            return _error(404, "Not Found", "pulls/pulls#get-a-pull-request")
        return 200, {}, self._pull_json(pull)

    def _list_pulls(self, call: _Call) -> _Reply:
        repo = call.params["repo"]
        state = call.query.get("state", "open")
        owner, _, ref = call.query.get("head", "").partition(":")
        items = [
            self._pull_json(p)
            for p in self._pulls.values()
            if p.repo == repo
            and state in ("all", p.state)
            and ("head" not in call.query or (_owner(p.head_repo) == owner and p.head_ref == ref))
        ]
        return self._paginate(items, call.query, f"/repositories/{self._repo_id(repo)}/pulls")

    def _commit_pulls(self, call: _Call) -> _Reply:
        repo, sha = call.params["repo"], call.params["sha"].lower()
        pulls = [p for p in self._pulls.values() if p.repo == repo and p.head_sha == sha]
        if not pulls:
            return _error(422, f"No commit found for SHA: {sha}", "commits/commits")
        # Fork-only commits are known (via refs/pull/N/head) but not associated with the PR.
        items = [self._pull_json(p) for p in pulls if p.head_repo == repo]
        return self._paginate(
            items, call.query, f"/repositories/{self._repo_id(repo)}/commits/{sha}/pulls"
        )

    def _refuse_write(self, call: _Call, doc: str) -> _Reply | None:
        if not call.token.can_write:
            return _error(403, "Resource not accessible by integration", doc)
        body = call.body.get("body") if isinstance(call.body, dict) else None
        if not isinstance(body, str):
            return _error(422, 'Invalid request.\n\n"body" wasn\'t supplied.', doc)
        if len(body) > MAX_BODY:
            # GitHub has answered in both of these shapes over the years.
            code, name, text = ("custom", "body", "body")
            if self.too_long_style == "unprocessable":
                code, name, text = ("unprocessable", "data", "Body")
            message = f"{text} is too long (maximum is {MAX_BODY} characters)"
            error = {"resource": "IssueComment", "code": code, "field": name, "message": message}
            return (
                422,
                {},
                {
                    "message": "Validation Failed",
                    "errors": [error],
                    "documentation_url": f"{DOCS}/{doc}",
                    "status": "422",
                },
            )
        return None

    def _paginate(self, items: list[Any], query: dict[str, str], link_path: str) -> _Reply:
        per_page = _int(query.get("per_page"), 30)
        per_page = 30 if per_page < 1 else min(per_page, 100)
        page = max(_int(query.get("page"), 1), 1)
        last = max(math.ceil(len(items) / per_page), 1)
        rels: list[tuple[str, int]] = []
        if page > 1:
            rels.append(("prev", min(page - 1, last)))
        if page < last:
            rels += [("next", page + 1), ("last", last)]
        if page > 1:
            rels.append(("first", 1))
        kept = {k: v for k, v in query.items() if k not in ("page", "per_page")}
        links = ", ".join(
            f"<{self.url}{link_path}?{urlencode({**kept, 'per_page': per_page, 'page': n})}>; "
            f'rel="{rel}"'
            for rel, n in rels
        )
        chunk = items[(page - 1) * per_page : page * per_page]
        return 200, ({"link": links} if links else {}), chunk

    def _create_comment(self, repo: str, number: int, body: str, login: str) -> dict[str, Any]:
        self._next_id += 1
        now = self._now()
        comment = {
            "id": self._next_id,
            "body": body,
            "login": login,
            "created_at": now,
            "updated_at": now,
            "_on": (repo, number),
        }
        self._comments[self._next_id] = comment
        return comment

    def _public(self, comment: dict[str, Any]) -> dict[str, Any]:
        repo, number = comment["_on"]
        cid = comment["id"]
        return {
            "id": cid,
            "node_id": f"IC_fake{cid}",
            "url": f"{self.url}/repos/{repo}/issues/comments/{cid}",
            "html_url": f"{self.web_url}/{repo}/pull/{number}#issuecomment-{cid}",
            "issue_url": f"{self.url}/repos/{repo}/issues/{number}",
            "body": comment["body"],
            "user": _user(comment["login"], self._user_id(comment["login"])),
            "created_at": comment["created_at"],
            "updated_at": comment["updated_at"],
            "author_association": "NONE",
        }

    def _pull_json(self, pull: _Pull) -> dict[str, Any]:
        head_repo = {
            "full_name": pull.head_repo,
            "owner": {"login": _owner(pull.head_repo)},
            "fork": pull.head_repo != pull.repo,
        }
        return {
            "url": f"{self.url}/repos/{pull.repo}/pulls/{pull.number}",
            "number": pull.number,
            "state": pull.state,
            "title": f"Pull request {pull.number}",
            "html_url": f"{self.web_url}/{pull.repo}/pull/{pull.number}",
            "user": _user(pull.author, self._user_id(pull.author)),
            "draft": False,
            "head": {
                "label": f"{_owner(pull.head_repo)}:{pull.head_ref}",
                "ref": pull.head_ref,
                "sha": pull.head_sha,
                "repo": head_repo,
            },
            "base": {
                "label": f"{_owner(pull.repo)}:{pull.base_ref}",
                "ref": pull.base_ref,
                "sha": "0" * 40,
                "repo": {"full_name": pull.repo, "owner": {"login": _owner(pull.repo)}},
            },
        }

    def _comment(self, call: _Call) -> dict[str, Any] | None:
        comment = self._comments.get(int(call.params["id"]))
        if comment is None or comment["_on"][0] != call.params["repo"]:
            return None
        return comment

    def _has_issue(self, repo: str, number: int) -> bool:
        return (repo, number) in self._pulls

    def _user_id(self, login: str) -> int:
        return self._user_ids.setdefault(login, 100 + len(self._user_ids))

    def _repo_id(self, repo: str) -> int:
        return self._repo_ids.setdefault(repo, 500 + len(self._repo_ids))

    def _repo_by_id(self, repo_id: int) -> str:
        return next((r for r, i in self._repo_ids.items() if i == repo_id), "\0/\0")

    def _rate_headers(self, token: str) -> dict[str, str]:
        remaining = self._remaining.get(token, 5000) - 1
        self._remaining[token] = max(remaining, 0)
        return {
            "x-ratelimit-limit": "5000",
            "x-ratelimit-remaining": str(max(remaining, 0)),
            "x-ratelimit-used": str(5000 - max(remaining, 0)),
            "x-ratelimit-reset": str(int(self.clock()) + 3600),
            "x-ratelimit-resource": "core",
        }

    def _now(self) -> str:
        return datetime.fromtimestamp(self.clock(), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class SilentHost:
    """A host on 127.0.0.1 (a port the kernel picks) that accepts every connection, reads
    nothing and answers nothing until it is closed (also a context manager)."""

    def __init__(self) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)
        self.port = int(self._listener.getsockname()[1])
        self.accepted = 0
        self._held: list[socket.socket] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._held.append(connection)
            self.accepted += 1

    def __enter__(self) -> SilentHost:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        for connection in [*self._held, self._listener]:
            with contextlib.suppress(OSError):
                connection.close()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _dispatch(self) -> None:
        self.server.fake.handle(self)  # type: ignore[attr-defined]

    do_GET = do_POST = do_PATCH = do_DELETE = _dispatch  # noqa: N815 (http.server naming)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep pytest output clean


_BAD_JSON = object()


def _error(status: int, message: str, doc: str = "") -> _Reply:
    body = {
        "message": message,
        "documentation_url": f"{DOCS}/{doc}".rstrip("/"),
        "status": str(status),
    }
    return status, {}, body


def _user(login: str, user_id: int) -> dict[str, Any]:
    kind = "Bot" if login.endswith("[bot]") else "User"
    return {"login": login, "id": user_id, "type": kind}


def _owner(full_name: str) -> str:
    return full_name.partition("/")[0]


def _token_of(authorization: str) -> str:
    scheme, _, value = authorization.partition(" ")
    return value.strip() if scheme.lower() in ("bearer", "token") else ""


def _int(value: str | None, default: int) -> int:
    try:
        return int(value) if value is not None else default
    except ValueError:
        return default
