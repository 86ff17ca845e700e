"""The gate policy (`fail-on`): which findings the PR introduces fail the check (pure).

Only `new` findings count: a pull request is never blocked for what was already on its base.
Tokens: `config-error` (default), `new-isolation`, `new-warning`, `score-drop:N` (a drop of at
least N points), `wave-later`, `low-confidence`, `none` (never fail).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict

from rivet_ci.core.diff import Finding, PlanDiff

SIMPLE_RULES = ("config-error", "new-isolation", "new-warning", "wave-later", "low-confidence")
DEFAULT_FAIL_ON = ("config-error",)
_SCORE_DROP = re.compile(r"^score-drop:(\d{1,3})$")


class PolicyError(ValueError):
    """A `fail-on` token that is not understood."""


class GatePolicy(BaseModel):
    model_config = ConfigDict(frozen=True)

    rules: frozenset[str] = frozenset(DEFAULT_FAIL_ON)
    score_drop: int | None = None  # fail when a score drops by at least this many points

    def describe(self) -> str:
        parts = sorted(self.rules)
        if self.score_drop is not None:
            parts.append(f"score-drop:{self.score_drop}")
        return ", ".join(parts) if parts else "none"


class GateResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    passed: bool
    blocking: tuple[Finding, ...]
    policy: str


def parse_policy(tokens: Iterable[str]) -> GatePolicy:
    """Parse `fail-on` tokens; every unknown token is reported at once."""
    rules: set[str] = set()
    score_drop: int | None = None
    unknown: list[str] = []
    given = [t.strip() for t in tokens if t.strip()]
    if not given:
        return GatePolicy()
    for token in given:
        if token == "none":
            continue
        if token in SIMPLE_RULES:
            rules.add(token)
        elif match := _SCORE_DROP.match(token):
            value = int(match.group(1))
            score_drop = value if score_drop is None else min(score_drop, value)
        else:
            unknown.append(token)
    if unknown:
        raise PolicyError(
            f"unknown fail-on value(s): {', '.join(unknown)}; use any of "
            f"{', '.join(SIMPLE_RULES)}, score-drop:N, none")
    if "none" in given and (rules or score_drop is not None):
        raise PolicyError("fail-on: `none` cannot be combined with other values")
    return GatePolicy(rules=frozenset(rules), score_drop=score_drop)


def is_blocking(finding: Finding, policy: GatePolicy) -> bool:
    if finding.status != "new":
        return False
    if finding.kind == "score-drop":
        return (policy.score_drop is not None and finding.score_delta is not None
                and -finding.score_delta >= policy.score_drop)
    return finding.kind in policy.rules


def evaluate_gate(diff: PlanDiff, policy: GatePolicy) -> GateResult:
    blocking = tuple(f for f in diff.findings if is_blocking(f, policy))
    return GateResult(passed=not blocking, blocking=blocking, policy=policy.describe())
