"""A loopback TCP proxy in front of MariaDB that lets the real rivet 0.32.2 plan against it
(no tests here; used for rivet only — rivet-ci talks to MariaDB directly).

rivet 0.32.2 sets MySQL's statement timeout, `max_execution_time` (milliseconds), which MariaDB
does not have (`ERROR 1193 Unknown system variable`), so every plan fails. MariaDB's equivalent is
`max_statement_time`, in **seconds** (a decimal). The proxy forwards bytes both ways unchanged
except one thing: a client command packet that is a `COM_QUERY` (payload byte 0x03, then the
statement text — MySQL client/server protocol, "Text Protocol") mentioning `max_execution_time`
has each `max_execution_time = N` rewritten to `max_statement_time = N/1000`, and the packet's
3-byte little-endian payload length is recomputed (the sequence id is kept). Nothing else is
touched: the handshake, authentication and every other statement pass through byte for byte.

Packets are parsed only in the client→server direction and only in the command phase (after
the server's first OK following the handshake, i.e. from the client's second packet on), so an
authentication packet is never mistaken for a query.
"""

from __future__ import annotations

import re
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress

COM_QUERY = 0x03
_SETTING = re.compile(rb"max_execution_time(\s*=\s*)(\d+)", re.IGNORECASE)
_MAX_PAYLOAD = 0xFFFFFF  # a longer payload is split into several packets: passed through as is


def rewrite_query(payload: bytes) -> bytes:
    """The COM_QUERY payload with MySQL's `max_execution_time = <ms>` turned into MariaDB's
    `max_statement_time = <seconds>`; any other payload unchanged."""
    if not payload or payload[0] != COM_QUERY or b"max_execution_time" not in payload.lower():
        return payload

    def seconds(match: re.Match[bytes]) -> bytes:
        ms = int(match.group(2))
        return b"max_statement_time" + match.group(1) + f"{ms / 1000:g}".encode()

    return payload[:1] + _SETTING.sub(seconds, payload[1:])


def _read_exact(sock: socket.socket, n: int) -> bytes | None:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _client_to_server(client: socket.socket, server: socket.socket) -> None:
    packets = 0
    while True:
        header = _read_exact(client, 4)
        if header is None:
            return
        length = int.from_bytes(header[:3], "little")
        payload = _read_exact(client, length)
        if payload is None:
            return
        packets += 1
        if packets > 1 and length < _MAX_PAYLOAD:  # command phase: the first is the login
            payload = rewrite_query(payload)
            header = len(payload).to_bytes(3, "little") + header[3:]
        server.sendall(header + payload)


def _server_to_client(server: socket.socket, client: socket.socket) -> None:
    while True:
        data = server.recv(65536)
        if not data:
            return
        client.sendall(data)


class MariaDBProxy:
    """Listens on 127.0.0.1 (a free port) and relays each connection to `upstream`."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self.port: int = self._listener.getsockname()[1]
        self._closed = False
        self._thread = threading.Thread(target=self._serve, daemon=True,
                                        name="mariadb-proxy")
        self._thread.start()

    def _serve(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._relay, args=(client,), daemon=True).start()

    def _relay(self, client: socket.socket) -> None:
        try:
            server = socket.create_connection(self.upstream, timeout=30)
        except OSError:
            client.close()
            return
        server.settimeout(None)
        back = threading.Thread(target=self._pump, args=(_server_to_client, server, client),
                                daemon=True)
        back.start()
        self._pump(_client_to_server, client, server)
        back.join(timeout=5)

    @staticmethod
    def _pump(direction: object, src: socket.socket, dst: socket.socket) -> None:
        try:
            assert callable(direction)
            direction(src, dst)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                with suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                with suppress(OSError):
                    sock.close()

    def close(self) -> None:
        self._closed = True
        with suppress(OSError):
            self._listener.close()


@contextmanager
def mariadb_proxy(host: str, port: int) -> Iterator[MariaDBProxy]:
    proxy = MariaDBProxy((host, port))
    try:
        yield proxy
    finally:
        proxy.close()
