"""The wire (`rivet_ci.adapters.http`) knows no forge: a client for another forge passes its
own headers, rate-limit rule and error classes (`WireRules`), and gets retries, deadlines,
pagination and the token's origin check unchanged. Proven here against a small local HTTP
server that is not GitHub (a GitLab-style `PRIVATE-TOKEN` header, `RateLimit-Reset`, a
`Link` header for pagination), on 127.0.0.1 and a port the kernel picks.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from rivet_ci.adapters import forge
from rivet_ci.adapters.http import HttpTransport, Response, WireRules


class OtherError(forge.ForgeError):
    forge = "Other"


class OtherUnavailable(OtherError, forge.Unavailable):  # noqa: N818 (the forge's word)
    pass


class OtherRateLimited(OtherError, forge.RateLimited):  # noqa: N818 (the forge's word)
    pass


class OtherNotFound(OtherError, forge.NotFound):  # noqa: N818 (the forge's word)
    pass


def other_wait(response: Response, attempt: int, now: float) -> float | None:
    """This forge's rule: 429 waits until `RateLimit-Reset` (epoch seconds)."""
    _ = attempt
    if response.status != 429:
        return None
    return max(float(response.headers.get("ratelimit-reset", now)) - now, 0.0)


RULES = WireRules(
    name="Other", headers={"PRIVATE-TOKEN": "other-token-123456"},
    unavailable=OtherUnavailable, rate_limited=OtherRateLimited,
    error_for=lambda status, _m: OtherNotFound if status == 404 else OtherError,
    rate_limit_wait=other_wait, base_error=OtherError)


@dataclass
class Server:
    url: str = ""
    script: list[tuple[int, dict[str, str], Any]] = field(default_factory=list)
    seen: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)


@pytest.fixture
def server() -> Iterator[Server]:
    state = Server()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state.seen.append(("GET", self.path, {k.lower(): v for k, v in self.headers.items()}))
            status, headers, body = (state.script.pop(0) if state.script
                                     else (404, {}, {"message": "404 Not found"}))
            data = json.dumps(body).encode()
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value.replace("{url}", state.url))
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}/api/v4"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()


def wire(server: Server, sleeps: list[float]) -> HttpTransport:
    return HttpTransport(server.url, RULES, sleep=sleeps.append, clock=lambda: 1000.0)


def test_pages_are_followed_with_the_forges_headers_only(server: Server) -> None:
    server.script = [
        (200, {"Link": '<{url}/projects/1/notes?page=2&per_page=100>; rel="next"'}, [1, 2]),
        (200, {}, [3]),
    ]
    items = wire(server, []).paginate("/projects/1/notes")

    assert items == [1, 2, 3]
    assert [path for _, path, _ in server.seen] == [
        "/api/v4/projects/1/notes?per_page=100", "/api/v4/projects/1/notes?page=2&per_page=100"]
    headers = server.seen[0][2]
    assert headers["private-token"] == "other-token-123456"
    assert "authorization" not in headers and "x-github-api-version" not in headers


def test_outages_are_retried_then_raised_as_the_forges_error(server: Server) -> None:
    sleeps: list[float] = []
    server.script = [(503, {}, {"message": "down"})] * 2 + [(200, {}, {"ok": True})]
    assert wire(server, sleeps).request("GET", "/version").json() == {"ok": True}
    assert sleeps == [1.0, 2.0]

    server.script = [(503, {}, {"message": "down"})] * 5
    with pytest.raises(OtherUnavailable, match=r"^Other GET /api/v4/version returned 503"):
        wire(server, []).request("GET", "/version")


def test_the_forges_rate_limit_rule_decides_the_wait(server: Server) -> None:
    sleeps: list[float] = []
    server.script = [(429, {"RateLimit-Reset": "1030"}, {"message": "slow down"}),
                     (200, {}, [])]
    wire(server, sleeps).request("GET", "/projects")
    assert sleeps == [30.0]

    server.script = [(429, {"RateLimit-Reset": "2000"}, {"message": "slow down"})]
    with pytest.raises(OtherRateLimited, match="longer than the 60 s"):
        wire(server, []).request("GET", "/projects")


def test_errors_are_the_forges_and_the_token_stays_on_its_host(server: Server) -> None:
    with pytest.raises(OtherNotFound) as raised:
        wire(server, []).request("GET", "/projects/9")
    assert isinstance(raised.value, forge.NotFound)
    assert raised.value.status == 404

    server.script = [(200, {"Link": '<http://elsewhere.invalid/steal>; rel="next"'}, [1])]
    with pytest.raises(OtherError, match="refusing to send the token to another host"):
        wire(server, []).paginate("/projects")
    assert len(server.seen) == 2  # (the 404 above, then one page: never the other host)


def test_a_download_is_never_redirected_beyond_http(server: Server) -> None:
    """A download from another host (an artifact's storage) follows a redirect only to
    http(s): urllib would follow one to ftp, a connection no deadline covers."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.setblocking(False)
        ftp = f"ftp://127.0.0.1:{listener.getsockname()[1]}/facts.zip"
        server.script = [(302, {"Location": ftp}, {})]
        with pytest.raises(OtherUnavailable, match=r"cannot download the archive from "
                                                   r"127\.0\.0\.1 \(status 302\)"):
            wire(server, []).fetch_unauthenticated(server.url + "/blob", 1000, path="/blob",
                                                   what="archive")
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody connected
    assert "private-token" not in server.seen[0][2]  # the forge's headers stay on its host
