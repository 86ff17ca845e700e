"""User-facing problems: what is wrong, in which file, on which line, in which field.

Every configuration, facts or planning problem becomes a `Problem`; nothing the user wrote should
ever surface as a traceback. Problems are data, so they travel into `plan.json` and the PR comment.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

# A note never blocks: e.g. an environment-dependent rule checked without --check-environment.
Severity = Literal["error", "warning", "note"]
# What a problem is, as a gate finding: a config rivet refuses to load, or a plan rivet refuses.
ProblemFinding = Literal["config-error", "plan-refused"]


class Problem(BaseModel):
    """One thing wrong with an input file, located as precisely as the input allows."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    file: str
    line: int | None = None
    field: str | None = None
    message: str
    severity: Severity = "error"
    finding: ProblemFinding = "config-error"
    rule: str | None = None  # the config rule's id (docs/configs.md), when a rule fired

    def render(self) -> str:
        """`path:line: field: message` — the form editors and CI annotations understand."""
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        if self.field:
            return f"{where}: {self.field}: {self.message}"
        return f"{where}: {self.message}"


def field_path(loc: tuple[str | int, ...]) -> str:
    """Render a location tuple as `exports[2].chunk_size`."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out
