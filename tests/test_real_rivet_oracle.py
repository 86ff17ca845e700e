"""The oracle itself: the real rivet binary is the version modelled, and its sandbox has no
network (a config can name any host; rivet would try it)."""

from __future__ import annotations

import socket
import subprocess
import threading
from pathlib import Path

from support.real_rivet import (
    RIVET_VERSION,
    config_schema,
    config_verdict,
    error_codes,
    network_sandbox,
    rivet_binary,
    run_rivet,
)

CONFIG = """\
source:
  type: postgres
  url_env: DATABASE_URL
exports:
  - name: orders
    table: public.orders
    mode: full
    format: parquet
    destination:
      type: local
      path: ./out
"""


def test_the_binary_is_the_modelled_version() -> None:
    out = subprocess.run([rivet_binary(), "--version"], capture_output=True, text=True,
                         check=True).stdout
    assert out.startswith(f"rivet {RIVET_VERSION} ")


def test_the_sandbox_reaches_no_listening_socket(tmp_path: Path) -> None:
    """A server listening on loopback outside the sandbox is unreachable from inside it."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    server.settimeout(5)
    accepted: list[bool] = []

    def accept() -> None:
        try:
            server.accept()[0].close()
            accepted.append(True)
        except OSError:
            pass

    thread = threading.Thread(target=accept)
    thread.start()
    port = server.getsockname()[1]
    probe = subprocess.run(
        [*network_sandbox(), "bash", "-c", f"exec 3<>/dev/tcp/127.0.0.1/{port}"],
        capture_output=True, text=True, check=False)
    thread.join()
    server.close()
    assert probe.returncode != 0
    assert accepted == []


def test_a_valid_config_is_accepted_and_never_connects(tmp_path: Path) -> None:
    config = tmp_path / "rivet.yaml"
    config.write_text(CONFIG)
    verdict = config_verdict(config, env={"DATABASE_URL": "postgresql://u@127.0.0.1:9/db"})
    assert verdict.verdict == "accept"
    assert verdict.code == "RIVET_PLAN_SOURCE_UNREADABLE"
    assert "unreachable" in verdict.message.lower()


def test_an_unknown_key_is_refused_with_its_code(tmp_path: Path) -> None:
    config = tmp_path / "rivet.yaml"
    config.write_text(CONFIG.replace("    mode: full\n", "    mode: full\n    modee: x\n"))
    verdict = config_verdict(config, env={"DATABASE_URL": "postgresql://u@127.0.0.1:9/db"})
    assert verdict.verdict == "refuse"
    assert verdict.code is not None and verdict.code.startswith("RIVET_CONFIG_")
    assert "modee" in verdict.message


def test_an_unset_placeholder_is_the_environment(tmp_path: Path) -> None:
    """An unset `${VAR}` is the environment's fault (an unset `url_env` is not: rivet reads that
    variable only when it connects)."""
    config = tmp_path / "rivet.yaml"
    config.write_text(CONFIG.replace("  url_env: DATABASE_URL", '  url: "postgresql://u:${DBPW}@h/db"'))
    verdict = config_verdict(config)
    assert (verdict.verdict, verdict.code) == ("environment", "RIVET_CONFIG_SECRET_UNSET")


def test_the_printed_contracts_are_there() -> None:
    schema = config_schema()
    assert "$defs" in schema
    assert "RIVET_CONFIG_NO_EXPORTS" in error_codes()
    assert run_rivet(["--help"]).returncode == 0
