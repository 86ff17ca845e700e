"""Workflow commands on the findings' YAML lines: `::error` / `::warning` / `::notice`."""

from __future__ import annotations

from collections.abc import Sequence

from rivet_ci.core.gate.diff import Finding
from rivet_ci.core.gate.policy import GateResult

MAX_ANNOTATIONS = 10  # GitHub shows no more per level and step


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    # Workflow-command properties also end at ',' and '::', as the runner parses them.
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


# Kinds whose non-blocking `new` findings still deserve a warning on their line; the rest
# (score movements, low confidence) are notices.
WARNING_KINDS = frozenset({"config-error", "no-configs", "plan-refused", "new-isolation",
                           "new-warning", "facts-changed-in-pr", "url-file-changed-in-pr",
                           "state-changed-in-pr", "template-changed-in-pr"})


def annotation(finding: Finding, level: str = "error") -> str:
    """A workflow command on the finding's YAML line: `::error` for a blocking finding,
    `::warning` / `::notice` for a new one the policy lets pass."""
    properties = []
    if finding.file:
        properties.append(f"file={_escape_property(finding.file)}")
        if finding.line:
            properties.append(f"line={finding.line}")
    properties.append(f"title={_escape_property(f'rivet-ci {finding.kind}')}")
    return f"::{level} {','.join(properties)}::{escape_data(finding.message)}"


def annotations_for(gate: GateResult, findings: Sequence[Finding]) -> list[str]:
    """Blocking findings as errors, other new ones as warnings or notices; at most
    `MAX_ANNOTATIONS` of each level (GitHub shows no more per step)."""
    blocking = set(gate.blocking)
    lines = [annotation(f, "error") for f in gate.blocking[:MAX_ANNOTATIONS]]
    passing = [f for f in findings if f.status == "new" and f not in blocking]
    warnings = [f for f in passing if f.kind in WARNING_KINDS]
    notices = [f for f in passing if f.kind not in WARNING_KINDS]
    lines += [annotation(f, "warning") for f in warnings[:MAX_ANNOTATIONS]]
    lines += [annotation(f, "notice") for f in notices[:MAX_ANNOTATIONS]]
    return lines
