"""What keeps two test runs on one machine apart: a directory of this process's own for the
servers it starts, and ports the kernel picks (never a fixed port or a fixed directory)."""

from __future__ import annotations

import atexit
import shutil
import socket
import tempfile
from pathlib import Path

# Servers started by a test run live in a directory of that run's own (created on first use), so
# two checkouts or two CI jobs on one host never share, reuse or stop each other's servers.
_run_root: Path | None = None


def run_root() -> Path:
    """This test process's own directory for throwaway servers (mode 755: the database users
    must traverse it)."""
    global _run_root  # noqa: PLW0603 - one directory per test process, created lazily
    if _run_root is None:
        _run_root = Path(tempfile.mkdtemp(prefix="rivet-ci-pytest-"))
        _run_root.chmod(0o755)
        atexit.register(shutil.rmtree, _run_root, True)
    return _run_root


def free_port() -> int:
    """A loopback TCP port nobody listens on right now (the kernel picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
