"""The I/O a command receives: streams, environment, working directory and clock.

Only `rivet_ci.cli.main` builds a real one; tests pass their own, so no command reaches for
`sys`, `os.environ` or the clock by itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

from rivet_ci.output.redaction import Redactor


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Context:
    stdout: TextIO
    stderr: TextIO
    environ: Mapping[str, str]
    cwd: Path
    now: Callable[[], datetime] = field(default=_utc_now)
    # The output boundary's redactor (see rivet_ci.output.sink): `cli.run` builds it from `environ`
    # and wraps `stdout`/`stderr` with it; commands add the secrets they learn.
    redact: Redactor = field(default_factory=Redactor)

    def timestamp(self) -> str:
        return self.now().astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    @property
    def interactive(self) -> bool:
        return self.stderr.isatty()
