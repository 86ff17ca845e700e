"""The wire to a forge's REST API, on the standard library only, with no forge knowledge.

Every call rivet-ci makes to a forge goes through one `HttpTransport`: retries, deadlines,
redirects and pagination live here; what the forge's endpoints are, how it authenticates, how
it signals a rate limit and what its errors mean is the forge's client (`adapters/github/`),
which passes them in as `WireRules`.

Retries: 5xx and network errors back off exponentially (1 s, 2 s, 4 s ...); a response the
forge calls a rate limit waits as long as it says (`WireRules.rate_limit_wait`). A wait longer
than ``max_wait`` fails at once with the forge's rate-limit error rather than stalling CI.

Deadlines: besides the socket's inactivity timeout, every request has an overall deadline
(``request_deadline``: a server dripping a byte at a time is cut off) and every call, waits
included, ends by the run's `Deadline`, which every transport of a run shares — so neither the
forge nor a host it redirects to (an artifact's storage) can hold a job until the job's own
timeout.

Redirects are followed only within the API's origin (urllib would copy the Authorization
header to any host), and a pagination link to another origin is refused: the token never
leaves the API's host. Pagination follows ``Link: rel="next"`` verbatim.
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
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any, NoReturn, TypedDict
from urllib.parse import urlencode, urlsplit

from rivet_ci import __version__
from rivet_ci.adapters.forge import ForgeError

if TYPE_CHECKING:
    from typing_extensions import Unpack

_log = logging.getLogger(__name__)
_LINK = re.compile(r'<([^>]*)>\s*;\s*rel="([^"]*)"')
REDIRECTS = (301, 302, 303, 307, 308)


@dataclass(frozen=True)
class Response:
    status: int
    headers: Mapping[str, str]  # lower-cased names
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


@dataclass(frozen=True)
class WireRules:
    """What the wire needs to know about one forge.

    `name`: the forge as messages name it. `headers`: sent with every request
    (authentication, media type, API version).
    `unavailable` / `rate_limited`: its error classes for an outage and a long rate limit.
    `error_for(status, message)`: its error class for a failed response that retrying cannot
    fix. `rate_limit_wait(response, attempt, now)`: seconds to wait when the response is a
    rate limit, else None.
    """

    name: str  # the forge, as messages name it ("GitHub")
    headers: Mapping[str, str]
    unavailable: type[ForgeError]
    rate_limited: type[ForgeError]
    error_for: Callable[[int, str], type[ForgeError]]
    rate_limit_wait: Callable[[Response, int, float], float | None]
    base_error: type[ForgeError] = ForgeError


class Deadline:
    """The end of a run's calls to a forge and the hosts it sends them to, counted from when it
    is made: one per run, shared by every transport (and so every client) the run builds."""

    def __init__(self, seconds: float) -> None:
        self._end = time.monotonic() + seconds

    def remaining(self) -> float:
        return self._end - time.monotonic()


class _Redirects(urllib.request.HTTPRedirectHandler):
    """Follow a redirect only where `allowed(from_url, to_url)` says (`_same_origin` for the
    forge's API: urllib copies every header, Authorization included, onto the redirected
    request, so a redirect to another host must not receive the token; `_web` for a download
    from another host: urllib would also follow one to ftp, whose connection no watchdog, and
    so no deadline, covers)."""

    def __init__(self, allowed: Callable[[str, str], bool]) -> None:
        super().__init__()
        self.allowed = allowed

    def redirect_request(  # noqa: PLR0917 (urllib's signature)
        self,
        req: urllib.request.Request,
        fp: Any,
        code: int,
        msg: str,
        headers: Any,
        newurl: str,
    ) -> urllib.request.Request | None:
        if not self.allowed(req.full_url, newurl):
            return None
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def _same_origin(from_url: str, to_url: str) -> bool:
    return origin(to_url) == origin(from_url)


def _web(from_url: str, to_url: str) -> bool:
    _ = from_url
    return urlsplit(to_url).scheme.lower() in ("http", "https")


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


class WireOptions(TypedDict, total=False):
    """How a wire behaves (every one optional; the default in brackets): `sleep` and `clock`
    (the real ones), `max_attempts` per call (5), the socket's inactivity `timeout` (30 s),
    the longest rate-limit `max_wait` (60 s), each request's `request_deadline` (60 s), and the
    run's `deadline`, shared with its other wires (else one of `run_deadline`, 300 s, from
    now)."""

    sleep: Callable[[float], None]
    clock: Callable[[], float]
    max_attempts: int
    timeout: float
    max_wait: float
    request_deadline: float
    run_deadline: float
    deadline: Deadline | None


def origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.netloc.lower()


class HttpTransport:
    """Requests to one API origin with retries, deadlines and pagination (module docstring).

    Every failure is raised as one of the forge's own error classes (`WireRules`)."""

    def __init__(self, api_url: str, rules: WireRules, **options: Unpack[WireOptions]) -> None:
        max_attempts = options.get("max_attempts", 5)
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.api_url = api_url.rstrip("/")
        self.rules = rules
        self.sleep = options.get("sleep", time.sleep)
        self.clock = options.get("clock", time.time)
        self.max_attempts = max_attempts
        self._timeout = options.get("timeout", 30)
        self._max_wait = options.get("max_wait", 60)
        self._request_deadline = options.get("request_deadline", 60)
        deadline = options.get("deadline")
        self.deadline = (deadline if deadline is not None
                         else Deadline(options.get("run_deadline", 300)))
        self._watchdog = _Watchdog()
        self._opener = urllib.request.build_opener(_Redirects(_same_origin),
                                                   *_handlers(self._watchdog))

    def url(self, path: str, query: Mapping[str, str | int] | None = None) -> str:
        return f"{self.api_url}{path}" + (f"?{urlencode(query)}" if query else "")

    def remaining(self) -> float:
        return self.deadline.remaining()

    def pause(self, wait: float, method: str, path: str) -> None:
        """Sleep before a retry, unless that would overrun the run's deadline."""
        if wait >= self.remaining():
            raise self.rules.unavailable(f"the deadline for {self.rules.name} calls would pass "
                                         "while waiting to retry", method=method, path=path)
        self.sleep(wait)

    def pages(self, first: str) -> Iterator[Response]:
        """Every page from `first` on, following ``Link: rel="next"`` verbatim (a forge may
        rewrite the links, e.g. to ``/repositories/{id}/...``, and that is its contract); a
        link seen before ends the walk."""
        url: str | None = first
        seen: set[str] = set()
        while url is not None and url not in seen:
            seen.add(url)
            response = self.request("GET", url)
            yield response
            url = next_link(response.headers.get("link", ""))

    def paginate(self, path: str, query: Mapping[str, str] | None = None, *,
                 per_page: int = 100) -> list[Any]:
        """GET every page of a JSON array."""
        items: list[Any] = []
        for response in self.pages(self.url(path, {**(query or {}), "per_page": per_page})):
            page = response.json()
            if not isinstance(page, list):
                self.unexpected("GET", path, "expected a JSON array")
            items.extend(page)
        return items

    def request(self, method: str, target: str, payload: object = None, *,
                ambiguous_retry: bool = True) -> Response:
        """One call with retries. `ambiguous_retry=False`: a 5xx or network error is raised at
        once (the caller checks whether a non-idempotent call took effect)."""
        url = target if "://" in target else f"{self.api_url}{target}"
        if origin(url) != origin(self.api_url):
            # A pagination link pointing elsewhere must not receive the token.
            raise self.rules.base_error("refusing to send the token to another host",
                                        method=method, path=url)
        parts = urlsplit(url)
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        data = None if payload is None else json.dumps(payload).encode()
        error: type[ForgeError] = self.rules.unavailable
        reason, status = "no attempt made", None
        for attempt in range(1, self.max_attempts + 1):
            wait: float | None = None
            try:
                response = self.send(method, url, data)
            except (OSError, http.client.HTTPException) as exc:
                error, reason, status = self.rules.unavailable, f"network error ({exc})", None
                if not ambiguous_retry:
                    break
            else:
                if 200 <= response.status < 300:
                    return response
                error, reason, wait = self._retry_plan(method, path, response, attempt)
                status = response.status
                if not ambiguous_retry and response.status >= 500:
                    break
            if attempt == self.max_attempts:
                break
            if wait is None:
                wait = 2.0 ** (attempt - 1)
            wait = min(wait, self._max_wait)
            _log.warning(
                "%s %s %s: %s; retrying in %.0f s (attempt %d of %d)",
                self.rules.name, method, path, reason, wait, attempt, self.max_attempts,
            )  # fmt: skip
            self.pause(wait, method, path)
        raise error(
            f"{reason}; gave up after {attempt} attempt{'s' if attempt > 1 else ''}",
            method=method,
            path=path,
            status=status,
        )

    def send(self, method: str, url: str, data: bytes | None) -> Response:
        """One attempt, within the request's deadline; any status is returned."""
        headers = {**self.rules.headers, "User-Agent": f"rivet-ci/{__version__}"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(url, data=data, headers=headers, method=method)

        def read(raw: Any) -> Response:
            return Response(raw.status, _lower(raw.headers), raw.read())

        return self._within_deadline(self._opener, request, read)

    def fetch_unauthenticated(self, url: str, max_bytes: int, *, path: str,
                              what: str) -> bytes:
        """GET `url` (another host, e.g. blob storage) WITHOUT the forge's headers, within the
        same deadlines as every call (the request's and the run's), following redirects only
        to http(s): at most `max_bytes` + 1 bytes."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https"):
            raise self.rules.base_error(f"the {what}'s download URL is not http(s)",
                                        method="GET", path=path)
        request = urllib.request.Request(url, headers={"User-Agent": f"rivet-ci/{__version__}"})
        opener = urllib.request.build_opener(_Redirects(_web), *_handlers(self._watchdog))

        def read(raw: Any) -> Response:
            return Response(raw.status, _lower(raw.headers), raw.read(max_bytes + 1))

        try:
            response = self._within_deadline(opener, request, read)
        except (OSError, http.client.HTTPException) as exc:
            raise self.rules.unavailable(
                f"cannot download the {what} from {parts.hostname or 'its host'}: {exc}",
                method="GET", path=path) from None
        if not 200 <= response.status < 300:
            raise self.rules.unavailable(
                f"cannot download the {what} from {parts.hostname or 'its host'} (status "
                f"{response.status})", method="GET", path=path, status=response.status)
        return response.body

    def _within_deadline(self, opener: urllib.request.OpenerDirector,
                         request: urllib.request.Request,
                         read: Callable[[Any], Response]) -> Response:
        """Open `request` and `read` its answer (any status) before the request's deadline and
        the run's: a watchdog cuts the connection off at the earlier one."""
        budget = min(self._request_deadline, self.remaining())
        if budget <= 0:
            raise TimeoutError(f"the deadline for {self.rules.name} calls has passed")
        self._watchdog.reset()
        timer = threading.Timer(budget, self._watchdog.fire)
        timer.daemon = True
        timer.start()
        try:
            try:
                with opener.open(request, timeout=min(self._timeout, budget)) as raw:
                    response = read(raw)
            except urllib.error.HTTPError as exc:
                try:
                    response = read(exc)
                finally:
                    exc.close()
        except (OSError, http.client.HTTPException):
            if self._watchdog.fired:
                raise TimeoutError(_late(budget, self._request_deadline)) from None
            raise
        finally:
            timer.cancel()
        if self._watchdog.fired:  # cut off mid-body: what arrived is not the answer
            raise TimeoutError(_late(budget, self._request_deadline))
        return response

    def _retry_plan(
        self, method: str, path: str, response: Response, attempt: int
    ) -> tuple[type[ForgeError], str, float | None]:
        """How to retry a failed response (error type, reason, wait or None for backoff).

        Raises the typed error at once for failures that retrying cannot fix.
        """
        wait = self.rules.rate_limit_wait(response, attempt, self.clock())
        if wait is not None:
            if wait > self._max_wait:
                raise self.rules.rate_limited(
                    f"rate limited for {wait:.0f} s, longer than the {self._max_wait:.0f} s "
                    "this client waits",
                    method=method,
                    path=path,
                    status=response.status,
                )
            return self.rules.rate_limited, "rate limited", wait
        if response.status >= 500:
            return (self.rules.unavailable, f"server error {response.status}",
                    retry_after(response.headers, self.clock()))
        self.raise_for(method, path, response)

    def raise_for(self, method: str, path: str, response: Response) -> NoReturn:
        """The forge's error for a failed response: its JSON ``message`` (with the messages
        of its ``errors``) and ``documentation_url``, else the start of the body."""
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
        raise self.rules.error_for(response.status, message)(
            message,
            method=method,
            path=path,
            status=response.status,
            documentation_url=str(payload.get("documentation_url") or "") or None,
        )

    def unexpected(self, method: str, path: str, message: str) -> NoReturn:
        raise self.rules.base_error(message, method=method, path=path)


def _late(budget: float, request_deadline: float) -> str:
    which = "the request's deadline" if budget >= request_deadline else "the run's deadline"
    return f"no complete answer within {budget:.0f} s ({which})"


def retry_after(headers: Mapping[str, str], now: float) -> float | None:
    """`Retry-After` in seconds (either form), or None."""
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:  # the HTTP-date form
        return max(parsedate_to_datetime(value).timestamp() - now, 0.0)
    except (TypeError, ValueError):
        return None


def _lower(headers: Any) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in headers.items()} if headers else {}


def next_link(header: str) -> str | None:
    for url, rel in _LINK.findall(header):
        if "next" in rel.split():
            return str(url)
    return None
